/* SPDX-License-Identifier: MIT */
/*
 * bpf_cgfilter.h - -a with --off-cpu: the recorder's own context-switch
 * samples, and with --cgroup/--container the other cgroups', dropped in
 * the kernel (bpf/cgfilter.bpf.h), by the program that holds the events'
 * BPF slot:
 * the interpreted-stack program's on_switch when it is on them, else
 * bpf/cgfilter.bpf.c's own. perf_offcpu.c keeps its test of each sample's
 * cgroup in user space: the fallback, and for what came before the
 * program was attached.
 */
#ifndef STACKPULSE_BPF_CGFILTER_H
#define STACKPULSE_BPF_CGFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_cgroup_filter;
struct sp_interpreters;

/* The maps of a program's cgroup test (bpf/cgfilter.bpf.h). */
struct sp_cgfilter_maps {
	int allowed;		/* cgroup array, filled from slot 0 without holes */
	int dropped;		/* per-CPU count of samples dropped */
	volatile uint32_t *on;	/* cg_on in the program's .bss */
	volatile uint32_t *self;	/* cg_self: the recorder's pid, its samples dropped */
};

struct sp_cgfilter_bpf;

/* Load our own program and attach it to probe_fd, a context-switch event
 * (the one sp_offcpu_source_new() opens on itself to see that it can,
 * closed next): whether the kernel can filter, known before the header
 * is written. NULL when it cannot (said with -v). */
struct sp_cgfilter_bpf *sp_cgfilter_bpf_new(int probe_fd);

/* A filter of the recorder's own samples only (-a without cgroups): its
 * program loaded by sp_cgfilter_bpf_start(), when the interpreted-stack
 * program is not on the events. */
struct sp_cgfilter_bpf *sp_cgfilter_bpf_self(void);

/* The filter on the context-switch events fds: through ip's on_switch
 * when ip (NULL: none) is attached to them, else our own program; the
 * recorder's own samples out, then f's directories (f NULL: no cgroup
 * test). 0, or -1 (said: the samples are tested in user space only). */
int sp_cgfilter_bpf_start(struct sp_cgfilter_bpf *k, const struct sp_cgroup_filter *f,
		      struct sp_interpreters *ip, const int *fds, size_t nfds);

/* f's directories found since (sp_cgroup_filter_follow()) into the filter
 * (k or f NULL: nothing to do). */
void sp_cgfilter_bpf_sync(struct sp_cgfilter_bpf *k, const struct sp_cgroup_filter *f);

/* Whether the filter is on the events (sp_cgfilter_bpf_start() succeeded). */
int sp_cgfilter_bpf_applied(const struct sp_cgfilter_bpf *k);

/* Samples of other cgroups the kernel dropped so far. */
uint64_t sp_cgfilter_bpf_dropped(const struct sp_cgfilter_bpf *k);

void sp_cgfilter_bpf_free(struct sp_cgfilter_bpf *k);

#endif
