/* SPDX-License-Identifier: MIT */
/*
 * proc_ended.h - the processes whose record was written and that ended,
 * by pid (docs/containers.md, "When it is read"). The perf source forgets
 * a process at its end; a sample of it that comes after (another CPU's
 * ring, read later) would define it again: a second record of one process,
 * by its pid alone when nothing else knows it (flag 0x4). A sample is the
 * ended process's when it was taken no later than its end, within
 * SP_PROC_ENDED_TAIL_NS after it while the kernel knows nothing of the
 * pid, or when what the kernel says of the pid has the ended one's start:
 * no new record then.
 */
#ifndef SP_PROC_ENDED_H
#define SP_PROC_ENDED_H

#include <stdbool.h>
#include <stdint.h>

#include "hashmap.h"

/* Ended processes kept: the oldest half forgotten when more end (a sample
 * rarely comes more than a batch after its process's end). */
#define SP_PROC_ENDED_MAX	65536u
/* A sample this soon after the end, of a pid the kernel no longer knows:
 * the ended process's own exit path (the kernel's exit record comes before
 * the task's last instructions run), not a new process of the pid. */
#define SP_PROC_ENDED_TAIL_NS	(10ull * 1000 * 1000)

struct sp_proc_ended {
	struct sp_u64map end;	/* pid -> end time (CLOCK_MONOTONIC ns) */
	struct sp_u64map start;	/* pid -> start_boot_ns of its record (0 unknown) */
	unsigned int max;	/* 0: SP_PROC_ENDED_MAX */
};

/* pid's process, whose record said it started at start_boot_ns (0: not
 * known), ended at end. */
void sp_proc_ended_note(struct sp_proc_ended *e, uint32_t pid, uint64_t end,
			uint64_t start_boot_ns);
/* A new process of pid is defined (a fork, an exec after the end): the
 * ended one's entry goes. */
void sp_proc_ended_forget(struct sp_proc_ended *e, uint32_t pid);
/* Whether something of pid seen at time, whose start the kernel says is
 * start_boot_ns (0: it says nothing), is the ended process's. */
bool sp_proc_ended_is(const struct sp_proc_ended *e, uint32_t pid, uint64_t time,
		      uint64_t start_boot_ns);
void sp_proc_ended_release(struct sp_proc_ended *e);

#endif
