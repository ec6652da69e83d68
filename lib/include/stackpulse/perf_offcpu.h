/* SPDX-License-Identifier: MIT */
/*
 * perf_offcpu.h - the "offcpu" record source of sp-record (--off-cpu): for
 * each time a recorded thread blocks, the stack where it blocked and how
 * long it stayed off the CPU.
 *
 * How: one software event PERF_COUNT_SW_CONTEXT_SWITCHES per online CPU,
 * inherited by the target's descendants, sampling every switch-out with the
 * kernel callchain (and, for --call-graph=dwarf/auto, the user registers and
 * a copy of the user stack, unwound at once), plus PERF_RECORD_SWITCH
 * records (attr.context_switch) for the switch-in that ends the wait. A
 * switch-out the kernel flags as a preemption (the thread stayed runnable)
 * is not blocking and is not recorded. See docs/unwinding.md.
 *
 * Each wait of at least min_ns becomes an SP_REC_SAMPLE with kind
 * SP_SAMPLE_OFFCPU and weight = nanoseconds off the CPU; its time is the
 * moment the thread ran again (so the record can be written without holding
 * the stream back), i.e. the thread was off the CPU during
 * [time - weight, time).
 *
 * Frames name the modules the "perf" source has written (found by pid and
 * address in the writer's definitions), so this source must run alongside
 * it. Needs kernel samples: root, or perf_event_paranoid <= 1.
 *
 * Limited to cgroups (-a --cgroup/--container), the events are the whole
 * machine's, as for -a, and each switch-out sample carries its task's
 * cgroup id (PERF_SAMPLE_CGROUP, Linux 5.7): one of a thread outside the
 * cgroups is dropped as it leaves the ring, before its stack is unwound.
 */
#ifndef STACKPULSE_PERF_OFFCPU_H
#define STACKPULSE_PERF_OFFCPU_H

#include <argp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "record.h"
#include "source.h"

struct sp_cgroup_filter;
struct sp_stackq;

#define SP_OFFCPU_DEFAULT_MIN_NS 1000000ULL	/* 1 ms */
/* The user stack bytes copied at each switch-out, unless set: less than
 * CPU samples' (SP_PERF_STACK_COPY), as switches can come far more often. */
#define SP_OFFCPU_STACK_COPY 8192

struct sp_offcpu_opts {
	bool enabled;			/* --off-cpu */
	uint64_t min_ns;		/* --off-cpu-min: shorter waits are counted, not recorded */
	/* Set by sp-record from its own options: */
	enum sp_call_graph call_graph;	/* FP: kernel callchain only; DWARF/AUTO: unwind */
	uint32_t stack_size;		/* user stack bytes copied, 0: SP_OFFCPU_STACK_COPY */
	bool kernel_frames;		/* keep the kernel part of the stack */
	bool enable_on_exec;		/* the target is a command stopped before exec */
	uint32_t pages;			/* ring pages per CPU, power of two (0 = 64) */
	/* -a --cgroup/--container: only the waits of threads in these cgroups
	 * (NULL: all). Read as they are resolved and followed, not owned. */
	const struct sp_cgroup_filter *cgroups;
};

/*
 * The argp child for --off-cpu and --off-cpu-min=DURATION. Its input is a
 * struct sp_offcpu_opts, which it initialises (min_ns, kernel_frames) at
 * ARGP_KEY_INIT.
 */
extern const struct argp sp_offcpu_argp;

/* NULL (reported) when this kernel or our permissions do not allow it. */
struct sp_source *sp_offcpu_source_new(const struct sp_offcpu_opts *o);

/* Count each recorded wait's unwind status here too (may be NULL). */
void sp_offcpu_source_set_stackq(struct sp_source *s, struct sp_stackq *q);

struct sp_offcpu_stats {
	uint64_t switches;		/* switch-outs paired with their switch-in */
	uint64_t waits;			/* recorded (>= min_ns) */
	uint64_t wait_ns;		/* their total */
	uint64_t short_waits, short_ns;	/* below min_ns: counted only */
	uint64_t preempted, preempted_ns;	/* runnable, not blocked: not recorded */
	uint64_t lost;			/* records the kernel dropped */
	uint64_t other_cgroups;		/* switch-outs of threads outside --cgroup's, left out */
};
void sp_offcpu_source_stats(struct sp_source *s, struct sp_offcpu_stats *st);

/* "off-cpu: 12 waits, 1.234 s recorded (...)" for sp-record's summary. */
void sp_offcpu_print_summary(struct sp_source *s, FILE *out, const char *prefix);

#endif
