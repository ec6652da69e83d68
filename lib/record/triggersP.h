/* SPDX-License-Identifier: MIT */
/*
 * triggersP.h - the triggers' state shared by their files (triggers.h):
 *
 *	triggers.c	sp_triggers_new/_free, checking records (exit, span, event)
 *	triggers_cmd.c	the command: run, read, reap, kill at its timeout
 *	triggers_opts.c	--trigger specs and the argp child
 */
#ifndef STACKPULSE_TRIGGERSP_H
#define STACKPULSE_TRIGGERSP_H

#include <sys/types.h>

#include "buf.h"
#include "hashmap.h"
#include "triggers.h"

/* Bounds of what the triggers track: processes (pid -> comm, exe) and
 * open spans (tid, depth -> start time). Past them, new ones are not
 * tracked (counted in stats.untracked); a full span table starts over. */
#define SP_TRIG_MAX_PROCS	65536
#define SP_TRIG_MAX_OPEN_SPANS	65536
#define SP_TRIG_MAX_DEPTH	((1u << 20) - 1)
/* How often (in record time) open spans are looked at for one that has
 * passed its threshold while still open. */
#define SP_TRIG_SCAN_NS		100000000

/* An open span: when it started, its name's string ids, and the
 * threshold of the first spec its name matches (0: not looked at yet,
 * UINT64_MAX: none matches, or it fired). */
struct sp_trig_span {
	uint64_t start, pid, tid, klass, method, runtime;
	uint64_t limit;
};

/* Exits already fired, so that the event and the process end of one death
 * fire once. */
#define SP_TRIG_RECENT_EXITS	16
/* Bytes of the command's output kept (the first line of it is the detail). */
#define SP_TRIG_CMD_OUT		512

struct sp_triggers {
	struct sp_trigger_opts o;
	struct sp_u64map procs;		/* pid -> comm id << 32 | exe id */
	struct sp_u64map open;		/* tid << 20 | depth -> index into spans + 1 */
	struct sp_trig_span *spans;	/* at most SP_TRIG_MAX_OPEN_SPANS */
	uint32_t *free_spans;		/* indexes of spans[] not in use */
	size_t nspans, nfree, spans_cap, free_cap;
	uint64_t min_limit;		/* the lowest threshold of the span specs */
	uint64_t last_scan;		/* record time of the last look at open spans */
	uint64_t recent[SP_TRIG_RECENT_EXITS];	/* pids that fired "exit" */
	unsigned int nrecent;
	uint64_t oom_kills;		/* /proc/vmstat oom_kill when last read */
	struct sp_triggers_stats st;
	struct sp_buf name;		/* a span's name, being matched */

	/* the command */
	pid_t pid;			/* running, 0 = none */
	int fd;				/* its output, -1 = closed */
	uint64_t started, next_run, last_poll;	/* monotonic ns */
	char out[SP_TRIG_CMD_OUT];
	size_t outlen;
	bool killed;			/* its timeout passed */
};

/* Kill the running command (its process group) and reap it. */
void sp_triggers_cmd_stop(struct sp_triggers *t);

#endif
