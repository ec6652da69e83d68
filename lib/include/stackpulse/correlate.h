/* SPDX-License-Identifier: MIT */
/*
 * correlate.h - builds method spans from span marks and assigns every event
 * and sample of a record stream to the span that caused it, as a stream.
 *
 * Records go in one at a time (sp_corr_add()) and come out through the emit
 * callback, in an order that keeps the stream's rules: a span record comes
 * before every record that carries its id, a span's parent (and fork span)
 * before the span. docs/correlate.md states the rules and when each record
 * is emitted:
 * - definitions (header, string, module, frame, stack, symbol, ksym, jitsym,
 *   unknown kinds) at once, in input order;
 * - timed records go through a reorder window first (opts.window_ns) and are
 *   then processed in time order;
 * - samples, events and span marks are held by the span that owns them and
 *   emitted right after that span's record, when the outermost span of its
 *   tree closes (or at the end of the stream);
 * - process, thread, lost records when processed; process_end, thread_end
 *   and module_end once no held record older than them is left.
 *
 * A stream whose header says it is correlated already (SP_HDR_CORRELATED)
 * passes through unchanged.
 *
 * The emit callback's record (and its bytes) is valid only during the call.
 * A non-zero return from emit stops the correlator: every later call returns
 * -1. Memory grows with open spans, live threads and processes, the reorder
 * window and the records held by open span trees (bounded by opts.max_held).
 */
#ifndef STACKPULSE_CORRELATE_H
#define STACKPULSE_CORRELATE_H

#include <stdbool.h>
#include <stdint.h>

#include "record.h"

struct sp_corr;

typedef int (*sp_corr_emit_fn)(void *ctx, const struct sp_record *rec);

/* With opts NULL every default applies; else window_ns is taken as given
 * (0: no reordering) and the other fields default when 0. */
struct sp_corr_opts {
	uint64_t window_ns;	/* reorder window; records later than this are "late" */
	uint64_t max_window;	/* at most this many records wait in the window */
	uint64_t max_held;	/* held records before the oldest tree is flushed early */
	uint64_t gap_max;	/* records per <no-span> gap span before a new one starts */
};

#define SP_CORR_WINDOW_NS	(1000 * 1000ull)	/* sp-record already merges by time */
#define SP_CORR_MAX_WINDOW	(1u << 20)
#define SP_CORR_MAX_HELD	(1u << 20)
#define SP_CORR_GAP_MAX		4096u

/* What the correlator saw; each non-zero problem counter is worth a warning. */
/* How many of the pids without a process record the stats name. */
#define SP_CORR_PIDS_NAMED 8
/* How long after its process's end a record of its pid is of its exit: a
 * system-wide recording samples the kernel's exit path after the end
 * record (some milliseconds at most); later, the pid is an unknown one. */
#define SP_CORR_EXIT_TAIL_NS (100 * 1000 * 1000ull)

struct sp_corr_stats {
	uint64_t records;	/* records taken in */
	uint64_t spans;		/* span records emitted, gap spans included */
	uint64_t gap_spans;
	uint64_t assigned[4];	/* events and samples per enum sp_assign_rule */
	uint64_t stop_without_start;	/* stop marks that matched no open span */
	uint64_t carried;	/* spans open where a segment ended, opened again in the next */
	uint64_t raise_without_span;	/* raise marks on a thread with no open span */
	uint64_t raise_unmatched;	/* the same, outside --spans-match's methods */
	uint64_t unwound;	/* spans closed by an outer span's stop */
	uint64_t open_at_end;	/* spans closed by the end of a thread, process or stream */
	uint64_t incomplete;	/* spans that overlapped lost records */
	uint64_t late;		/* records older than the window allowed, taken as they came */
	uint64_t unknown_pids;	/* pids seen in records before any process/fork record */
	uint64_t unknown_pid[SP_CORR_PIDS_NAMED];	/* the first of them */
	uint64_t pid_reuse;	/* a process or thread started again while alive */
	uint64_t after_end;	/* records of a process just after its end (its exit) */
	uint64_t early_flush;	/* span trees emitted before they closed (max_held) */
	uint64_t old_spans;	/* span records in an uncorrelated input, dropped */
	uint64_t fiber_switches;	/* fiber switch records followed */
	uint64_t bad_refs;	/* correlated input: broken span references (dropped or cut) */
};

/* Defaults for every zero field of opts (opts may be NULL). */
struct sp_corr *sp_corr_new(const struct sp_corr_opts *opts, sp_corr_emit_fn emit, void *ctx);
/* Take in one record (copied as needed). 0, or -1 once emit has failed. */
int sp_corr_add(struct sp_corr *c, const struct sp_record *rec);
/*
 * End of input without an end record: process the window, close every open
 * span (SP_END_OPEN, stopped at the last time seen), emit everything held.
 */
int sp_corr_finish(struct sp_corr *c);
const struct sp_corr_stats *sp_corr_stats(const struct sp_corr *c);
void sp_corr_free(struct sp_corr *c);

/*
 * Every record of in, each with the definitions it refers to, to take: a
 * stream sp-correlate has seen (its header says) as it is, with the reader's
 * definitions; any other stream through a correlator (opts as for
 * sp_corr_new()), with the definitions of what the correlator emits. A
 * non-zero return from take stops the reading. *correlated (may be NULL)
 * is set when a stream was correlated here. Returns 0, or -1 once take or
 * the correlator failed; the reader stays open.
 */
struct sp_reader;
struct sp_defs;
typedef int (*sp_corr_take_fn)(void *ctx, const struct sp_defs *defs,
			       const struct sp_record *rec);
int sp_corr_read(struct sp_reader *in, const struct sp_corr_opts *opts, sp_corr_take_fn take,
		 void *ctx, bool *correlated);

/* Name of a rule ("thread", "fork", "gap") or of a span end ("stopped", ...). */
const char *sp_rule_name(uint64_t rule);
const char *sp_span_end_name(uint64_t end);

#endif
