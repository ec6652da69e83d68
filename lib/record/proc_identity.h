/* SPDX-License-Identifier: MIT */
/*
 * proc_identity.h - the identity fields of a process record (its namespace
 * pid, start time, namespaces, cgroup and the container that derives from
 * it: docs/containers.md): what the kernel said at the process's fork or
 * exec (bpf/ident.bpf.c), else read from /proc when the record is written.
 */
#ifndef SP_RECORD_PROC_IDENTITY_H
#define SP_RECORD_PROC_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>

#include "record.h"
#include "writer.h"

struct sp_bpf_ident;
struct sp_bpf_thread;
struct sp_ident_bpf;

/*
 * The kernel's record of every process forked or exec'd from now on: NULL
 * (said) where BPF cannot be loaded. A pid's entry is the newest process
 * with that pid. Lookup: 0, or -1 when there is none (or kb is NULL).
 */
struct sp_ident_bpf *sp_ident_bpf_open(void);
int sp_ident_bpf_lookup(struct sp_ident_bpf *kb, uint32_t pid, struct sp_bpf_ident *out);
/* The newest thread made with host tid (since kb was opened). 0 or -1. */
int sp_ident_bpf_thread(struct sp_ident_bpf *kb, uint32_t tid, struct sp_bpf_thread *out);
void sp_ident_bpf_free(struct sp_ident_bpf *kb);

/*
 * Fill rec's identity for pid as of time (the record's time, CLOCK_MONOTONIC
 * ns): from kb's entry for pid when there is one (kb may be NULL), else
 * from /proc. A process that is gone with no entry, or whose pid already
 * names a process started after time (a reuse), gets none: rec->flags has
 * SP_PROC_NO_IDENTITY; a reuse is warned of once, a process gone only said
 * with -v. 0 or -1.
 */
int sp_proc_identity_fill(struct sp_writer *w, struct sp_ident_bpf *kb, uint32_t pid,
			  uint64_t time, struct sp_process *rec);

/*
 * The tid in its own pid namespace of thread tid of process pid, as of
 * time (its record's): what the kernel said when the thread was made (kb
 * may be NULL), else /proc/PID/task/TID/status unless read_proc is false
 * (the process is known gone). 0 when neither knows (the thread is gone,
 * or its tid names a thread made after time).
 */
uint32_t sp_thread_nstid(struct sp_ident_bpf *kb, uint32_t pid, uint32_t tid, uint64_t time,
			 bool read_proc);

#endif
