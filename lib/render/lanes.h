/* SPDX-License-Identifier: MIT */
/*
 * lanes.h - tasks and fibers as lanes, for the renderers (sp-tree, the
 * Chrome trace, speedscope): one per asyncio task or Ruby fiber, its whole
 * life from its first resume to its end, with each of its resumes.
 *
 * Python: a span with a coroutine (sp_span.coro, from the hook's py__coro
 * entries) whose parent span has none is a resume of a task: the task's
 * outermost coroutine, driven by the event loop; coroutines it awaits nest
 * in it and belong to its lane. A resume that ends without
 * SP_SPAN_SUSPENDED ends the task (it returned or raised); the next span of
 * the same coroutine address is another task.
 *
 * Ruby: fiber_switch records. Each switch to a fiber other than the
 * thread's root is a resume of that fiber, ended by the next switch away
 * from it; its owner is the fiber that first resumed it. The runtime does
 * not say when a fiber ends: its lane ends with its last resume, and a
 * fiber whose id comes again with SP_FIBER_NEW is another one.
 *
 * Spans must come as sp-correlate writes them: a parent before its
 * children. Memory: the lanes and their resumes (kept for the end), and
 * per thread the chain of spans above the last one.
 */
#ifndef STACKPULSE_RENDER_LANES_H
#define STACKPULSE_RENDER_LANES_H

#include <stdbool.h>
#include <stdint.h>

#include "hashmap.h"
#include "record.h"

struct sp_lane_resume {
	uint64_t start, stop;	/* stop 0: still running at the end */
	uint64_t span;		/* Python: the resume's span id */
	bool suspended;		/* it ended by suspending (await, yield, a switch away) */
};

struct sp_lane {
	uint64_t seq;		/* 1, 2, ...: in order of first resume */
	uint64_t pid, tid;	/* tid of its first resume */
	uint64_t runtime;	/* SP_RT_PYTHON (a task) or SP_RT_RUBY (a fiber) */
	uint64_t id;		/* the coroutine's address, the fiber's id */
	uint64_t owner;		/* Ruby: the fiber that first resumed it, 0 = root */
	uint64_t klass, method, file, line;	/* Python: its outermost coroutine (str ids) */
	uint64_t start, stop;	/* first resume's start, last resume's end */
	uint64_t running_ns;	/* the sum of its resumes */
	uint64_t awaits;	/* resumes that ended by suspending */
	bool done;		/* Python: it returned or raised */
	char *name;		/* the caller's text for it (malloc'd), freed with it */
	struct sp_lane_resume *res;
	size_t nres, capres;
};

/* More lanes than this are counted in sp_lanes.dropped, not kept. */
#define SP_LANES_MAX	(1u << 20)

struct sp_lanes {
	struct sp_lane **lane;
	size_t n, cap;
	uint64_t dropped;	/* lanes beyond SP_LANES_MAX */
	uint64_t nspans;	/* spans of the stream so far: the last one's id
				 * (ids are implicit, docs/spool.md) */
	uint64_t last_lane;	/* index + 1 of the task lane the last span ran in
				 * (its resume or a coroutine it awaits), 0 = none */
	struct sp_u64map live;	/* hash of pid, id -> index + 1 of its current lane */
	struct sp_u64map inner;	/* hash of pid, coroutine -> index + 1 of the lane
				 * of the task awaiting it (until it ends) */
	struct sp_u64map chains;	/* tid -> index + 1 of its chain */
	struct lane_chain *chain;
	size_t nchain, capchain;
};

#define SP_LANES_INIT { 0 }

/*
 * Take one record: a span (correlated streams), a fiber switch, a header (a
 * new stream: span ids start again). Returns the lane a span is a resume
 * of, else NULL.
 */
struct sp_lane *sp_lanes_add(struct sp_lanes *l, const struct sp_record *rec);
/* At the end of the input: a fiber's last resume is its end, not an
 * await (each one counts as an await until then). */
void sp_lanes_finish(struct sp_lanes *l);
/* Free what l holds. */
void sp_lanes_release(struct sp_lanes *l);

#endif
