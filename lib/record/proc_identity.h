/* SPDX-License-Identifier: MIT */
/*
 * proc_identity.h - the identity fields of a process record (its namespace
 * pid, start time, namespaces, cgroup and the container that derives from
 * it: docs/containers.md), read from /proc when the record is written.
 */
#ifndef SP_RECORD_PROC_IDENTITY_H
#define SP_RECORD_PROC_IDENTITY_H

#include <stdint.h>

#include "record.h"
#include "writer.h"

/*
 * Fill rec's identity for pid as of time (the record's time, CLOCK_MONOTONIC
 * ns). A process that is gone, or whose pid already names a process started
 * after time (a reuse), gets none: rec->flags has SP_PROC_NO_IDENTITY; a
 * reuse is warned of once, a process gone only said with -v. 0 or -1.
 */
int sp_proc_identity_fill(struct sp_writer *w, uint32_t pid, uint64_t time,
			  struct sp_process *rec);

#endif
