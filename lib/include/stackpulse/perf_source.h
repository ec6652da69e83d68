/* SPDX-License-Identifier: MIT */
/*
 * perf_source.h - the "perf" record source of sp-record: CPU stack samples
 * from perf_event_open (one event per CPU, inherited by every descendant of
 * the target, rings merged by time), plus the processes, threads and
 * executable mappings the kernel reports alongside them, kernel symbols for
 * the kernel frames seen, and JIT perf maps.
 */
#ifndef STACKPULSE_PERF_SOURCE_H
#define STACKPULSE_PERF_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cgroup_filter.h"
#include "record.h"
#include "source.h"

/* Which interpreters' frames samples carry (sp-record --interp). */
enum sp_interp_mode {
	SP_INTERP_AUTO = 0,	/* every runtime the layout table knows */
	SP_INTERP_PYTHON,
	SP_INTERP_RUBY,
	SP_INTERP_NONE,
};

/*
 * The user stack bytes copied with each CPU sample for --call-graph=dwarf
 * and auto, unless set: 8192 (perf's default) cut 70% of the native
 * stacks of `gem list` and 10% of those of a Ruby loop, 32768 none of
 * them (docs/unwinding.md, "The stack copy"). The whole machine (-a)
 * takes sp_perf_ring_copy_all(): as much, on machines whose rings can
 * hold enough such samples. Off-CPU samples keep 8192: a switch can come
 * far more often than a tick.
 */
#define SP_PERF_STACK_COPY	32768
/* The copy for -a on this machine's online CPUs (sp_perf_ring_copy_all()). */
uint32_t sp_perf_stack_copy_all(void);

struct sp_perf_opts {
	const char *event;		/* "cpu-clock" when NULL */
	uint64_t freq;			/* Hz; used when period is 0 */
	uint64_t period;		/* events per sample */
	bool user_only, kernel_only;
	enum sp_call_graph call_graph;	/* NONE, FP (default), DWARF, AUTO */
	uint32_t stack_size;		/* user stack bytes copied, 0: SP_PERF_STACK_COPY */
	uint32_t pages;			/* ring pages per CPU, power of two; 0 = default */
	bool enable_on_exec;		/* the target is a command stopped before exec */
	bool no_children;		/* -p: not the processes started before the attach */
	const char *args;		/* command line of the command, for its process record */
	const char *command;		/* its argv[0]: does it run Ruby (interpreted frames)? */
	const char *archive;		/* copy each sampled file here (lib/elf/archive.h), NULL = no */
	enum sp_interp_mode interp;	/* interpreted frames in samples (docs/interpreters.md) */
	/* no off-CPU source, no kernel events: their interpreted-stack
	 * programs are not loaded (each costs seconds of verifying at start) */
	bool interp_no_offcpu, interp_no_events;
	/* -a only in these cgroups (perf_event_open's cgroup mode), resolved;
	 * NULL or none: every process */
	struct sp_cgroup_filter *cgroups;	/* followed: what appears later is added */
};

/* An event name: its perf type and config. 0, or -1 for an unknown name. */
int sp_perf_event_lookup(const char *name, uint32_t *type, uint64_t *config, bool *hardware);
/* Names of the events sp_perf_event_lookup() knows, space-separated. */
const char *sp_perf_event_names(void);

/*
 * Create the source: checks that the event can be opened here (reported
 * otherwise, NULL), decides whether kernel stacks are allowed (without
 * permission it records user stacks only and says so once).
 */
struct sp_source *sp_perf_source_new(const struct sp_perf_opts *o);

/* What the header says about sampling, known after sp_perf_source_new(). */
struct sp_perf_info {
	const char *event;
	uint64_t freq, period;
	enum sp_call_graph call_graph;
	unsigned int flags;		/* SP_HDR_KERNEL_STACKS | SP_HDR_USER_STACKS */
};
void sp_perf_source_info(struct sp_source *s, struct sp_perf_info *info);

/* Counters for the end record and the summary line. */
struct sp_perf_stats {
	uint64_t samples, lost, bad, processes, modules;
};
void sp_perf_source_stats(struct sp_source *s, struct sp_perf_stats *st);

/* Print what this machine supports (sp-record --check). Returns the number
 * of facilities that are missing. */
int sp_perf_check(FILE *out);

#endif
