// SPDX-License-Identifier: MIT
/*
 * Tasks and fibers as lanes (lanes.h): asyncio tasks from the coroutine of
 * each span, Ruby fibers from the fiber switches.
 */
#include <stdlib.h>
#include <string.h>

#include "lanes.h"
#include "sp.h"

/* The spans above the last span of a thread, with their coroutines. */
struct lane_link {
	uint64_t span, coro;
	uint64_t lane;		/* index + 1 of its task's lane, 0 = none */
};

struct lane_chain {
	uint64_t tid;
	struct lane_link *link;
	size_t n, cap;
	uint64_t fiber;		/* Ruby: the running fiber */
	struct sp_lane *resumed;	/* Ruby: the lane of the running fiber */
};

static uint64_t live_key(uint64_t pid, uint64_t runtime, uint64_t id)
{
	return sp_hash_mix(sp_hash_mix(sp_hash_u64(pid), runtime), id);
}

static struct lane_chain *chain_of(struct sp_lanes *l, uint64_t tid)
{
	uint64_t *i = sp_u64map_get(&l->chains, tid);
	struct lane_chain *ch;

	if (i)
		return &l->chain[*i - 1];
	sp_grow(&l->chain, &l->capchain, l->nchain + 1, sizeof(*l->chain));
	ch = &l->chain[l->nchain++];
	memset(ch, 0, sizeof(*ch));
	ch->tid = tid;
	sp_u64map_put(&l->chains, tid, l->nchain);
	return ch;
}

/* The current lane of (pid, runtime, id), a new one when there is none or
 * it has ended (its id was reused); NULL beyond SP_LANES_MAX. */
static struct sp_lane *lane_get(struct sp_lanes *l, uint64_t pid, uint64_t tid, uint64_t runtime,
				uint64_t id, bool fresh)
{
	uint64_t k = live_key(pid, runtime, id), *i = sp_u64map_get(&l->live, k);
	struct sp_lane *ln;

	if (i && !fresh && !l->lane[*i - 1]->done)
		return l->lane[*i - 1];
	if (l->n >= SP_LANES_MAX) {
		l->dropped++;
		return NULL;
	}
	ln = sp_xcalloc(1, sizeof(*ln));
	ln->seq = l->n + 1;
	ln->pid = pid;
	ln->tid = tid;
	ln->runtime = runtime;
	ln->id = id;
	sp_grow(&l->lane, &l->cap, l->n + 1, sizeof(*l->lane));
	l->lane[l->n++] = ln;
	sp_u64map_put(&l->live, k, l->n);
	return ln;
}

static struct sp_lane_resume *resume_add(struct sp_lane *ln, uint64_t start)
{
	struct sp_lane_resume *r;

	sp_grow(&ln->res, &ln->capres, ln->nres + 1, sizeof(*ln->res));
	r = &ln->res[ln->nres++];
	memset(r, 0, sizeof(*r));
	r->start = start;
	if (ln->nres == 1 || start < ln->start)
		ln->start = start;
	return r;
}

static void resume_end(struct sp_lane *ln, struct sp_lane_resume *r, uint64_t stop,
		       bool suspended)
{
	r->stop = stop < r->start ? r->start : stop;
	r->suspended = suspended;
	ln->running_ns += r->stop - r->start;
	if (suspended)
		ln->awaits++;
	if (r->stop > ln->stop)
		ln->stop = r->stop;
}

/* A span: the coroutine of its parent from the thread's chain, and the
 * span itself as a task's resume when it has one and its parent has not. */
static struct sp_lane *on_span(struct sp_lanes *l, const struct sp_span *s)
{
	struct lane_chain *ch = chain_of(l, s->tid);
	uint64_t id = ++l->nspans, parent_coro = 0, lane = 0, k, *v;
	struct sp_lane_resume *r;
	struct sp_lane *ln;

	while (ch->n && ch->link[ch->n - 1].span != s->parent)
		ch->n--;
	if (ch->n) {
		parent_coro = ch->link[ch->n - 1].coro;
		lane = ch->link[ch->n - 1].lane;
	}
	sp_grow(&ch->link, &ch->cap, ch->n + 1, sizeof(*ch->link));
	ch->link[ch->n++] = (struct lane_link){ id, s->coro, lane };
	if (!s->coro || s->runtime != SP_RT_PYTHON)
		return NULL;
	/*
	 * A coroutine a task awaits is the task's. A throw into the task
	 * (cancel()) runs the innermost one first, with no coroutine above it:
	 * still the task's, not a task (nor a resume) of its own.
	 */
	k = live_key(s->pid, 0, s->coro);
	v = sp_u64map_get(&l->inner, k);
	if (!parent_coro && v && !l->lane[*v - 1]->done) {
		ch->link[ch->n - 1].lane = *v;
		parent_coro = s->coro;
	}
	if (parent_coro) {
		if (lane && !(s->flags & SP_SPAN_SUSPENDED))
			sp_u64map_del(&l->inner, k);
		else if (lane)
			sp_u64map_put(&l->inner, k, lane);
		return NULL;
	}
	ln = lane_get(l, s->pid, s->tid, SP_RT_PYTHON, s->coro, false);
	if (!ln)
		return NULL;
	ch->link[ch->n - 1].lane = ln->seq;
	if (!ln->nres) {
		ln->klass = s->klass;
		ln->method = s->method;
		ln->file = s->file;
		ln->line = s->line;
	}
	r = resume_add(ln, s->start);
	r->span = id;
	if (s->stop) {
		resume_end(ln, r, s->stop, s->flags & SP_SPAN_SUSPENDED);
		ln->done = !(s->flags & SP_SPAN_SUSPENDED);
	}
	return ln;
}

/* A Ruby fiber switch: the resume of 'from' ends, one of 'to' starts. */
static void on_fiber(struct sp_lanes *l, const struct sp_fiber_switch *fs)
{
	struct lane_chain *ch = chain_of(l, fs->tid);
	struct sp_lane *ln = ch->resumed;

	if (ln && ln->nres && !ln->res[ln->nres - 1].stop)
		resume_end(ln, &ln->res[ln->nres - 1], fs->time, true);
	ch->resumed = NULL;
	ch->fiber = fs->to;
	if (!fs->to)
		return;		/* the thread's root fiber is the thread */
	ln = lane_get(l, fs->pid, fs->tid, SP_RT_RUBY, fs->to, fs->flags & SP_FIBER_NEW);
	if (!ln)
		return;
	if (!ln->nres)
		ln->owner = fs->from;
	resume_add(ln, fs->time);
	ch->resumed = ln;
}

void sp_lanes_finish(struct sp_lanes *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		struct sp_lane *ln = l->lane[i];

		if (ln->runtime == SP_RT_RUBY && ln->nres && ln->res[ln->nres - 1].stop &&
		    ln->res[ln->nres - 1].suspended) {
			ln->res[ln->nres - 1].suspended = false;
			ln->awaits--;
		}
	}
}

struct sp_lane *sp_lanes_add(struct sp_lanes *l, const struct sp_record *rec)
{
	size_t i;

	switch (rec->kind) {
	case SP_REC_HEADER:	/* span ids start again */
		l->nspans = 0;
		for (i = 0; i < l->nchain; i++)
			l->chain[i].n = 0;
		break;
	case SP_REC_SPAN: {
		struct sp_lane *ln = on_span(l, &rec->span);
		struct lane_chain *ch = chain_of(l, rec->span.tid);

		l->last_lane = ch->n ? ch->link[ch->n - 1].lane : 0;
		return ln;
	}
	case SP_REC_FIBER_SWITCH:
		on_fiber(l, &rec->fiber_switch);
		break;
	default:
		break;
	}
	return NULL;
}

void sp_lanes_release(struct sp_lanes *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->lane[i]->res);
		free(l->lane[i]->name);
		free(l->lane[i]);
	}
	free(l->lane);
	for (i = 0; i < l->nchain; i++)
		free(l->chain[i].link);
	free(l->chain);
	sp_u64map_release(&l->live);
	sp_u64map_release(&l->inner);
	sp_u64map_release(&l->chains);
	memset(l, 0, sizeof(*l));
}
