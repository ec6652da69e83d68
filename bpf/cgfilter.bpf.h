/* SPDX-License-Identifier: MIT */
/*
 * cgfilter.bpf.h - the cgroup test of --off-cpu's context-switch events
 * with -a --cgroup/--container (docs/containers.md), for the program that
 * holds the events' one BPF slot: the interpreted-stack program's
 * on_switch (interp.bpf.c) or, without it, cgfilter.bpf.c's own.
 *
 * The switch-out sample's overflow runs in the task switched out, so the
 * current task is the one the sample is about. Returning 0 from a
 * perf_event program drops the sample before it is written to the ring:
 * the kernel stack and the 8 KiB of user stack of every other task of the
 * machine never reach user space.
 *
 * The cgroups are the directories' descriptors in a cgroup array, filled
 * from slot 0 on without holes (the first empty slot ends the test);
 * bpf_current_task_under_cgroup() takes the descendants too (it compares
 * the task's ancestor at the directory's level), so no level is walked.
 *
 * With -a the recorder's own switch-outs are dropped first, cgroups or
 * not: each carries 8 KiB of its stack, a few of them fill a ring to its
 * wake-up mark, and the wake-up makes more. That loop kept sp-record
 * busy on an idle machine.
 */
#ifndef SP_BPF_CGFILTER_BPF_H
#define SP_BPF_CGFILTER_BPF_H

#include "cgfilter.h"

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, SP_BPF_CGFILTER_MAX);
	__type(key, __u32);
	__type(value, __u32);
} cg_allowed SEC(".maps");

/* Switch-outs left out, per CPU (slot 0), for sp-record's summary. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cg_dropped SEC(".maps");

/* Set by user space once the test applies: the interpreted-stack program
 * is loaded before it is known whether the recording filters cgroups. */
__u32 cg_on = 0;

/* The recorder's process id (as the kernel's first pid namespace sees
 * it), set by user space when the filter starts (-a's); 0: none. */
__u32 cg_self = 0;

/* Whether the current task's sample goes out: 1, or 0 (counted). */
static __always_inline int sp_cg_keep(void)
{
	__u32 i, zero = 0;
	__u64 *n;
	long r;

	if (cg_self && (__u32)(bpf_get_current_pid_tgid() >> 32) == cg_self)
		return 0;	/* (not counted: no cgroup's) */
	if (!cg_on)
		return 1;
	for (i = 0; i < SP_BPF_CGFILTER_MAX; i++) {
		r = bpf_current_task_under_cgroup(&cg_allowed, i);
		if (r == 1)
			return 1;
		if (r < 0)
			break;	/* an empty slot: the last one was filled before */
	}
	n = bpf_map_lookup_elem(&cg_dropped, &zero);
	if (n)
		*n += 1;
	return 0;
}

#endif
