/* SPDX-License-Identifier: MIT */
/*
 * source.h - how sp-record's event loop talks to the things that produce
 * records: the perf rings (stack samples, processes, mappings; off-CPU
 * waits), the BPF ring buffer of kernel events, the BPF ring buffer of
 * language spans.
 *
 * The loop (recorder.h) owns one writer and one time-ordered merge. A
 * source interns the strings, frames and stacks its records need directly
 * with the writer (definitions may come early, never late), then hands
 * each timed record to emit(), which copies it into the merge; the merge
 * writes records in time order once every source has moved past them.
 *
 * Lifecycle: created (options parsed, nothing attached) -> start() before the
 * command execs (the pid is stopped and known) -> poll() whenever fd is
 * readable or at least every batch interval -> finish() once after the
 * recording stops (final drain, lost and health records) -> free() detaches
 * everything, on every exit path.
 */
#ifndef STACKPULSE_SOURCE_H
#define STACKPULSE_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "record.h"
#include "writer.h"

/* The kinds of source, by which the recorder (recorder.h) finds one: the
 * header's sampling fields come from the perf source, the closing summary
 * from the perf and off-CPU sources. */
enum sp_source_kind {
	SP_SOURCE_PERF,		/* stack samples, processes, mappings: perf_source.h */
	SP_SOURCE_EVENTS,	/* kernel events: bpf_events.h */
	SP_SOURCE_OFFCPU,	/* off-CPU waits: perf_offcpu.h */
	SP_SOURCE_SPANS,	/* method and marker spans: bpf_spans.h */
	SP_SOURCE_KINDS
};

/* Copies *rec (and the bytes it points to) into the time-ordered merge. */
typedef int (*sp_emit_fn)(void *emit_ctx, const struct sp_record *rec);

struct sp_emit {
	struct sp_writer *w;	/* for sp_writer_str/_frame/_stack */
	sp_emit_fn emit;
	void *ctx;
};

/*
 * The new id of an old one (ref: SP_REF_STRING, _MODULE, _FRAME, _STACK),
 * while the recorder compacts its id space (segments.h): 0 when it had no
 * such id.
 */
struct sp_remap {
	uint64_t (*id)(void *ctx, unsigned int ref, uint64_t id);
	void *ctx;
};

/* What a source is told about the recording it joins. */
struct sp_proc_pin;

struct sp_target {
	const uint32_t *pids;	/* root processes (the command, or -p pids) */
	unsigned int npids;
	/* -p: pids[i] as held since sp-record's start (record/proc_pin.h), to
	 * be attached through, not by its number, which may name another
	 * process by then; NULL for a command (sp-record's own child) and -a */
	const struct sp_proc_pin *pins;
	bool system_wide;	/* -a */
};

struct sp_source {
	const char *name;	/* "perf", "events", "spans" */
	int fd;			/* epoll-able descriptor, -1 if none */
	void *priv;
	/* Attach for the target. 0, or -1 (reported) when the source cannot run. */
	int (*start)(struct sp_source *s, const struct sp_target *t, struct sp_emit *out);
	/* Drain what is ready. Returns records emitted, or -1 on a fatal error. */
	int (*poll)(struct sp_source *s, struct sp_emit *out);
	/* Oldest time this source may still emit (the merge holds later records
	 * back until every source has passed them); UINT64_MAX when it is idle. */
	uint64_t (*watermark)(struct sp_source *s);
	/* Final drain, then lost/probe/summary records. 0 or -1. */
	int (*finish)(struct sp_source *s, struct sp_emit *out);
	/* Words for the header's "features" and "unavailable" strings. Called
	 * once, before start(): the header is the first record of the stream and
	 * start() may already intern and emit, so probe what is available when
	 * the source is created. */
	void (*describe)(struct sp_source *s, char *features, size_t fsize,
			 char *unavailable, size_t usize);
	/* Detach and free; safe after a failed start. */
	void (*free)(struct sp_source *s);
	/* Optional (NULL: nothing to do). Adjust the environment of the command
	 * sp-record starts (setenv), once, before the command is forked; not
	 * called for -p or -a. The spans source puts its Ruby and Python
	 * activators in RUBYOPT and PYTHONPATH. 0, or -1 (reported) to stop. */
	int (*prepare_env)(struct sp_source *s);
	/* Optional. The writer's ids are renumbered (a flight recorder or
	 * rotation drops the definitions nothing needs any more, between two
	 * polls): every id the source keeps goes through m, or is forgotten
	 * (interned again when needed). A source without it keeps the id
	 * space from being compacted. */
	void (*remap)(struct sp_source *s, const struct sp_remap *m);
};

#endif
