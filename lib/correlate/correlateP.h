/* SPDX-License-Identifier: MIT */
/*
 * correlateP.h - private to the correlator's files in
 * lib/correlate/: its state, spans, threads and processes, and the
 * functions its files call across each other.
 *
 *   correlate.c          the API (correlate.h): records in, streams begun
 *                        and ended, correlated input passed through
 *   correlate_window.c   the reorder window: timed records into time order
 *   correlate_rules.c    each record processed in time order: span marks,
 *                        forks, execs, exits, lost windows, the gap spans
 *                        and the rule that gives every sample and event its
 *                        span (docs/correlate.md)
 *   correlate_threads.c  threads and processes, the stacks of open spans of
 *                        each thread and fiber, and what closes them
 *   correlate_spans.c    held records, span trees and their emission
 *   correlate_carry.c    spans still open where one segment of a recording
 *                        ends, opened again in the next segment's stream
 *   correlate_interp.c   events no span covers, under a span of their
 *                        innermost interpreted frame
 *
 * Spans form emission trees: a span's children are the spans started under
 * it on its thread and the root spans of threads and processes it forked.
 * The records a span owns are held with it; when the root of a tree closes,
 * the tree is emitted in pre-order (span record, its own records, then its
 * children), so every reference points backwards. A child still open at that
 * moment (another thread's) is detached and becomes a root of its own.
 * Spans are reference counted: a child, a thread's stack and a thread's fork
 * origin keep a span's struct (not its records) alive after its emission.
 */
#ifndef STACKPULSE_CORRELATEP_H
#define STACKPULSE_CORRELATEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/heap.h"
#include "correlate.h"
#include "hashmap.h"

/* A record waiting in the window or held by a span. */
struct hrec {
	struct hrec *next;
	uint64_t key;		/* time it is ordered by */
	uint64_t seq;		/* input order, breaks ties */
	uint8_t big;		/* 0 small, 1 full, 3 full + HREC_BYTES (pooled); 2 malloc'd */
	struct sp_record rec;	/* small ones end after the largest small member */
};

/* Every held kind but events and processes fits in a small hrec. */
#define SMALL_REC (offsetof(struct sp_record, sample) + 96)
#define HREC_WHOLE(kind) ((kind) == SP_REC_EVENT || (kind) == SP_REC_PROCESS)
#define FITS_SMALL(m) _Static_assert(sizeof(((struct sp_record *)0)->m) <= 96, #m " fits a small hrec")
FITS_SMALL(sample);
FITS_SMALL(mark);
FITS_SMALL(thread);
FITS_SMALL(thread_end);
FITS_SMALL(process_end);
FITS_SMALL(fiber_switch);
FITS_SMALL(module_end);
FITS_SMALL(lost);
#define HREC_SMALL (offsetof(struct hrec, rec) + SMALL_REC)
#define HREC_FULL (offsetof(struct hrec, rec) + sizeof(struct sp_record))
#define HREC_BYTES 64		/* pooled room for an event's few bytes (addresses) */

struct proc;

struct span {
	struct span *up;	/* parent on the thread, or the fork span of a root */
	struct span *first_child, *last_child, *next_sibling;	/* not emitted yet */
	struct span *prev_root, *next_root;	/* in c->roots */
	struct hrec *held, *held_tail;
	struct proc *gap_of;	/* a gap span still open: its process */
	uint64_t child_total;	/* total samples of closed in-tree children */
	uint64_t depth;		/* the runtime's call depth, 0 = unknown */
	uint64_t nheld;		/* records held */
	uint64_t sub_held;	/* a gap span: records its interpreted frames' spans hold */
	unsigned int refs;
	bool open, emitted, up_is_fork, in_tree, is_root, raised, incomplete, gap;
	bool carried;		/* opened again from an earlier segment, not named yet */
	struct sp_span s;
};

/* The open spans of one fiber (coroutine) of a thread. */
struct fib {
	uint64_t id;		/* the runtime's, 0 = the thread's root fiber */
	struct span **stack;
	size_t depth, cap;
	struct span *base;	/* counted: parent of its outermost spans (the
				 * span that first resumed it), or NULL */
	size_t marked;		/* stack[0..marked) are marked incomplete */
};

struct thr {
	uint64_t tid, pid;
	/* The running fiber's stack (the root fiber's, without switches);
	 * the others are parked in fibs. */
	struct span **stack;
	size_t depth, cap;
	struct span *base;	/* struct fib's, for the running fiber */
	size_t marked;		/* struct fib's, for the running fiber */
	uint64_t fiber;
	struct fib *fibs;
	size_t nfibs, cfibs;
	struct span *origin;	/* span that created the thread, counted */
	struct proc *proc;
	struct thr *next_in_proc, *prev_in_proc;
	uint64_t raise_time, raise_class;
	bool raising;
	bool forked;		/* created by (or matched to) its fork event */
};

struct proc {
	uint64_t pid, ppid;
	struct span *origin;	/* span that forked the process, counted */
	struct span *gap;	/* open <no-span> gap span */
	struct thr *threads;
	bool defined, forked;
	/* When its proc_exit said it ended, 0 while it lives: it ends at its
	 * process_end (samples and events of its exit come between them). */
	uint64_t exited;
};

struct rslot {
	uint64_t key;		/* copied from the record: draining reads only the ring */
	struct hrec *h;
};

struct lostwin {
	uint64_t pid, end;
};

/*
 * Open spans per (thread, fiber, method, class), and per (thread, fiber,
 * method) under the class ANY_CLASS: whether a stop mark can match any
 * span of a stack, without looking at the stack.
 */
#define ANY_CLASS UINT64_MAX

struct mkey {
	uint64_t tid, fiber, method, klass;
};

struct mslot {
	struct mkey k;
	uint64_t n;		/* open spans; a free entry: the next free id */
};

/* The counts, in an array indexed by key; an entry whose count drops to 0
 * leaves the index and is chained for reuse. */
struct mcount {
	struct mslot *v;	/* v[id - 1] */
	size_t n, cap;
	uint32_t free;		/* first free id, 0 = none */
	struct sp_idset idx;
};

/* A span open where a segment ended (correlate_carry.c). */
struct carry {
	uint64_t pid, tid, start, depth;
	uint64_t runtime, line;	/* numbers: they stay right across streams */
};

/* The name of an interpreted frame (correlate_interp.c). */
struct corr_isym {
	uint64_t func, file, line;
};

struct sp_corr {
	struct sp_corr_opts o;
	sp_corr_emit_fn emit;
	void *ctx;
	int failed;
	bool passthrough;	/* the stream is correlated already */
	uint64_t pass_spans;	/* span records passed through in this stream */
	struct sp_corr_stats st;

	/* the reorder window: records in order queue in a ring, the others in a heap */
	struct sp_heap heap;
	struct rslot *ring;
	size_t rhead, rlen, rcap;
	uint64_t seq, released, max_time;
	bool any_released;

	struct sp_u64map threads, procs;	/* tid, pid -> struct thr, struct proc */
	/* pids of processes exited, waiting for their process_end (a stream
	 * of events alone has none): the oldest ends when it is full */
	uint64_t *exited;
	size_t exited_head, nexited;
	/* pid -> when its process ended, of the last few (a record of it
	 * just after its end is of its exit, not of an unknown process) */
	struct sp_u64map ended;
	struct mcount open;	/* open spans by method, for stop marks */
	struct span *roots, *roots_tail;	/* emission roots, by start time */
	struct hrec *deferred, *deferred_tail;	/* end records waiting for older held ones */
	uint64_t held;
	uint64_t next_id;
	struct lostwin *lost;
	size_t nlost, caplost;

	struct hrec *free_small, *free_full, *free_bytes;
	struct sp_record scratch;	/* tail stays zero */
	struct span **work;	/* emission stack */
	size_t capwork;

	uint64_t streams;	/* headers read */
	struct carry *carry;	/* open at the end of the last segment */
	size_t ncarry, capcarry;

	/* the stream's interpreted frames (correlate_interp.c) */
	struct sp_u64map iframes;	/* frame id -> isyms index + 1, 0 = not named yet */
	struct sp_u64map istacks;	/* stack id -> its innermost frame, an interpreted one */
	struct sp_u64map istack_up;	/* stack id -> its callers' stack id (of istacks) */
	struct corr_isym *isyms;
	size_t nisyms, capisyms;
	uint64_t nframes, nstacks;	/* frame and stack records so far: the last ids */
};

/* correlate_interp.c */
/* Note an interpreted frame, its name, or a stack ending in one. */
void sp_corr_interp_note(struct sp_corr *c, const struct sp_record *r);
/* Forget the stream's frames (a new stream, the end). */
void sp_corr_interp_reset(struct sp_corr *c);
/* The owner of event e that the gap rule gives to gap: the span of its
 * innermost interpreted frame under gap (made when needed), or gap. */
struct span *sp_corr_interp_owner(struct sp_corr *c, struct span *gap, const struct sp_event *e);
/* Whether e's stack has an interpreted frame sp_corr_interp_owner() would
 * file it under. */
bool sp_corr_interp_framed(const struct sp_corr *c, const struct sp_event *e);
/* A gap span closes: its interpreted frames' spans close with it. */
void sp_corr_interp_close(struct span *gap);

/* correlate_window.c */
/* Take a timed record (copied) into the window and process what leaves it;
 * false if rec is not a timed record (the caller emits it at once). */
bool sp_corr_window_add(struct sp_corr *c, const struct sp_record *rec);
/* Whether a lost record of this kind took span records away (samples,
 * events, spans, a window's), not only counted what spans never had
 * (span stops without a start, processes without probes, interpreted
 * stacks, code copies). */
bool sp_corr_lost_spans(uint64_t what);
/* Process the window's records that are due (all: every one). */
void sp_corr_drain(struct sp_corr *c, bool all);
/* The oldest record waiting; the window must not be empty. */
struct hrec *sp_corr_window_pop(struct sp_corr *c);

/* correlate_rules.c */
/* Take one timed record in time order; h is consumed. */
void sp_corr_process(struct sp_corr *c, struct hrec *h);
bool sp_corr_in_lost_window(struct sp_corr *c, uint64_t pid, uint64_t time);
/* Close and emit p's open gap span, if any. */
void sp_corr_close_gap(struct sp_corr *c, struct proc *p);

/* correlate_threads.c */
struct thr *sp_corr_thr_find(const struct sp_corr *c, uint64_t tid);
struct proc *sp_corr_proc_find(const struct sp_corr *c, uint64_t pid);
struct proc *sp_corr_proc_new(struct sp_corr *c, uint64_t pid);
/* Its proc_exit came: it ends at its process_end, or when newer exits
 * crowd it out, at that time. */
void sp_corr_proc_exited(struct sp_corr *c, struct proc *p, uint64_t time);
/* How many ended pids are remembered (SP_CORR_EXIT_TAIL_NS). */
#define SP_CORR_ENDED_MAX 4096
/* pid's process ended at time (not by an exec). */
void sp_corr_note_ended(struct sp_corr *c, uint64_t pid, uint64_t time);
/* Thread tid of process pid, made (and an older thread of that tid
 * ended) as needed. */
struct thr *sp_corr_thr_get(struct sp_corr *c, uint64_t pid, uint64_t tid, uint64_t time);
struct thr *sp_corr_thr_new(struct sp_corr *c, struct proc *p, uint64_t tid, struct span *origin);
/* End a thread (its spans closed as open at time) or a process and its
 * threads, and forget them. */
void sp_corr_thr_free(struct sp_corr *c, struct thr *t, uint64_t time);
void sp_corr_proc_end(struct sp_corr *c, struct proc *p, uint64_t time);
/* Count span s in or out of the open spans of t's running fiber. */
void sp_corr_count_open(struct sp_corr *c, const struct thr *t, const struct span *s, bool in);
/* Whether an open span of t's running fiber can match stop mark m. */
bool sp_corr_stop_may_match(struct sp_corr *c, const struct thr *t,
			    const struct sp_span_mark *m);
/* Close the top span of t's running fiber with end at time. */
void sp_corr_close_top(struct sp_corr *c, struct thr *t, uint64_t end, uint64_t time);
/* Close every span of t, in every fiber. */
void sp_corr_close_all(struct sp_corr *c, struct thr *t, uint64_t time);
/* The innermost open span on the chain of spans that created t. */
struct span *sp_corr_fork_owner(struct thr *t);
void sp_corr_fiber_switch(struct sp_corr *c, struct thr *t, const struct sp_fiber_switch *fs);
/* Mark the open spans of t, in every fiber, incomplete (a lost window). */
void sp_corr_mark_incomplete(struct thr *t);

/* correlate_carry.c */
/* At the end of a segment: note the open spans of every running fiber. */
void sp_corr_carry_out(struct sp_corr *c);
/* At the start of the next: open them again, unnamed, on their threads. */
void sp_corr_carry_in(struct sp_corr *c);
/* The innermost span opened again on t that stop mark m can close, named
 * from m: its index in t->stack, or -1. */
int sp_corr_carry_match(struct sp_corr *c, struct thr *t, const struct sp_span_mark *m);

/* correlate_spans.c */
/* A copy of r to hold, and its return to the pools. */
struct hrec *sp_corr_hrec_new(struct sp_corr *c, const struct sp_record *r);
void sp_corr_hrec_free(struct sp_corr *c, struct hrec *h);
/* Emit a record (nothing once emit has failed); a held one whole. */
void sp_corr_out(struct sp_corr *c, const struct sp_record *r);
void sp_corr_out_held(struct sp_corr *c, struct hrec *h);
void sp_corr_span_get(struct span *s);
void sp_corr_span_put(struct span *s);
/* A new span; up (its parent, or fork span when fork) is taken as a
 * counted reference. sp_corr_span_link() puts it in up's tree or, when up
 * was emitted, among the roots. */
struct span *sp_corr_span_new(struct sp_corr *c, struct span *up, bool fork);
void sp_corr_span_link(struct sp_corr *c, struct span *s);
/* Emit the tree under root in pre-order; open children become roots of
 * their own unless with_open (an early flush). */
void sp_corr_emit_tree(struct sp_corr *c, struct span *root, bool with_open);
/* Give h to span s under rule: counted, and held until s is emitted. */
void sp_corr_hold(struct sp_corr *c, struct span *s, struct hrec *h, uint64_t rule);
/* Too much held: emit the oldest trees as they are. */
void sp_corr_relieve(struct sp_corr *c);
/* An end record: out once no held record older than it is left. */
void sp_corr_defer(struct sp_corr *c, struct hrec *h);
void sp_corr_flush_deferred(struct sp_corr *c);

#endif
