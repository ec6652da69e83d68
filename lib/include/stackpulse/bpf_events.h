/* SPDX-License-Identifier: MIT */
/*
 * bpf_events.h - the "events" record source of sp-record: kernel events of
 * the recorded process tree (processes, files, sockets, DNS, privileges),
 * recorded by bpf/events.bpf.c and turned into SP_REC_EVENT and SP_REC_LOST
 * records. docs/events.md lists every event, its fields, hook and limits.
 *
 * Use: fill struct sp_events_opts (or let the argp child sp_events_argp
 * parse --events, --no-samples, --event-buffer), sp_events_source_new(),
 * optionally sp_events_prepare() before the command is started (so that an
 * event the user named but the kernel cannot give stops the recording before
 * it begins), then drive it as any struct sp_source.
 */
#ifndef STACKPULSE_BPF_EVENTS_H
#define STACKPULSE_BPF_EVENTS_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cgroup_filter.h"
#include "events.h"
#include "source.h"

/* Bit of an event kind in a kinds mask. */
#define SP_EV_BIT(kind)		(UINT64_C(1) << (kind))

/* Kinds recorded when --events is not given: proc, file, net, dns. */
uint64_t sp_events_default_kinds(void);

struct sp_events_opts {
	uint64_t kinds;		/* SP_EV_BIT() of each kind to record */
	uint64_t named;		/* kinds named one by one: unavailable is fatal */
	bool given;		/* --events was on the command line */
	bool no_samples;	/* --no-samples: sp-record skips stack sampling */
	uint64_t buffer_kib;	/* ring buffer size in KiB (power of 2), 0 = 8192 */
	const char *attach;	/* "tp_btf", "raw_tp", "tracepoint", NULL = best */
	bool raw_entry;		/* --event-attach=sys_enter: setid entries from the raw
				 * sys_enter tracepoint, not per-call tracepoints */
	/* with -a: only tasks in these cgroups or below, resolved; NULL or
	 * none: every task. Followed: what the kernel told of cgroups made
	 * while the programs loaded is taken once they are attached. */
	struct sp_cgroup_filter *cgroups;
};

/*
 * Parse an --events list: comma-separated "all", "none", "default", group
 * names (proc, file, net, dns, priv, runtime) and event names; "-x" removes
 * x; a list that starts with a removal starts from the default set.
 * Sets *kinds and *named (event names added explicitly). Returns 0, or -1
 * with a message in err ("unknown event or group 'x'").
 */
int sp_events_parse(const char *list, uint64_t *kinds, uint64_t *named, char *err,
		    size_t errsize);
/* "proc_fork,proc_exec" for a mask; returns the length it needed. */
size_t sp_events_format(uint64_t kinds, char *buf, size_t size);

/* argp child: --events=LIST, --no-samples, --event-buffer=KIB, --event-attach=HOW[,sys_enter].
 * Its input is a struct sp_events_opts *, zeroed by the caller; after
 * parsing, kinds holds the default set unless --events was given. */
extern const struct argp sp_events_argp;

/* A new, idle source (nothing loaded). Never NULL. */
struct sp_source *sp_events_source_new(const struct sp_events_opts *o);

/*
 * Load and attach the BPF programs (they record nothing until start() names
 * the processes). Returns 0 when every asked-for event can be recorded, 1
 * when some or all cannot but recording may go on without them (warned),
 * -1 when the user named one that cannot be had (reported; stop before
 * starting the command). start() calls it when the caller did not.
 */
int sp_events_prepare(struct sp_source *s);

/* Events delivered and lost so far (for the end record and the summary). */
void sp_events_counts(struct sp_source *s, uint64_t *events, uint64_t *lost);

/* Print each kernel event kind, its hook and whether it is available here
 * (loads the programs if needed). For sp-record --check. */
void sp_events_print_check(struct sp_source *s, FILE *f);

#endif
