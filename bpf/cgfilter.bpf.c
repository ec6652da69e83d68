// SPDX-License-Identifier: MIT
/*
 * cgfilter.bpf.c - --off-cpu's context-switch events with -a
 * --cgroup/--container when the interpreted-stack program is not on them
 * (--interp=none, or it could not load): the cgroup test alone
 * (cgfilter.bpf.h), so the other cgroups' switch-outs are dropped in the
 * kernel all the same.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "cgfilter.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("perf_event")
int cg_switch(struct bpf_perf_event_data *ctx)
{
	return sp_cg_keep();
}
