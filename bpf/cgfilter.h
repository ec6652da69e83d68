/* SPDX-License-Identifier: MIT */
/*
 * cgfilter.h - what bpf/cgfilter.bpf.h's cgroup test shares with
 * lib/record/bpf_cgfilter.c: how many cgroups it holds.
 */
#ifndef SP_BPF_CGFILTER_SHARED_H
#define SP_BPF_CGFILTER_SHARED_H

/* cgroups -a --cgroup/--container may name (SP_CGROUP_FILTER_DIRS) */
#define SP_BPF_CGFILTER_MAX	64

#endif
