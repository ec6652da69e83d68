// SPDX-License-Identifier: MIT
/*
 * The reorder window: timed records wait here until nothing older can
 * come (opts.window_ns, at most opts.max_window of them), then are
 * processed in time order. Records in order, the common case, queue in a
 * ring; those that come out of order go to the reorder heap (base/heap.h).
 * A record later than the window allows is taken where it stands.
 */
#include <stdlib.h>
#include <string.h>

#include "correlateP.h"
#include "sp.h"

static void ring_push(struct sp_corr *c, struct hrec *h)
{
	size_t i;

	if (c->rlen == c->rcap) {
		size_t cap = c->rcap ? c->rcap * 2 : 1024;
		struct rslot *v = sp_xmalloc(cap * sizeof(*v));

		for (i = 0; i < c->rlen; i++)
			v[i] = c->ring[(c->rhead + i) & (c->rcap - 1)];
		free(c->ring);
		c->ring = v;
		c->rcap = cap;
		c->rhead = 0;
	}
	i = (c->rhead + c->rlen++) & (c->rcap - 1);
	c->ring[i].key = h->key;
	c->ring[i].h = h;
}

/* Keys in the ring never decrease; the heap holds what came out of order.
 * Ties go to the ring when its record came first (seq). */
static bool heap_first(const struct sp_corr *c)
{
	const struct sp_heap_item *top = sp_heap_top(&c->heap);
	const struct rslot *r;

	if (!top)
		return false;
	if (!c->rlen)
		return true;
	r = &c->ring[c->rhead];
	return sp_heap_before(top->key, top->seq, r->key, r->h->seq);
}

/* The key of the oldest record waiting; false if none. */
static bool window_min(const struct sp_corr *c, uint64_t *key)
{
	if (heap_first(c))
		*key = sp_heap_top(&c->heap)->key;
	else if (c->rlen)
		*key = c->ring[c->rhead].key;
	else
		return false;
	return true;
}

struct hrec *sp_corr_window_pop(struct sp_corr *c)
{
	struct hrec *h;

	if (heap_first(c))
		return sp_heap_pop(&c->heap);
	h = c->ring[c->rhead].h;
	c->rhead = (c->rhead + 1) & (c->rcap - 1);
	c->rlen--;
	return h;
}

static void window_push(struct sp_corr *c, struct hrec *h)
{
	if (!c->rlen || h->key >= c->ring[(c->rhead + c->rlen - 1) & (c->rcap - 1)].key)
		ring_push(c, h);	/* in order: the common case */
	else
		sp_heap_push(&c->heap, h->key, h->seq, h);
}

static void release(struct sp_corr *c, struct hrec *h)
{
	c->released = h->key;
	c->any_released = true;
	sp_corr_process(c, h);
}

void sp_corr_drain(struct sp_corr *c, bool all)
{
	uint64_t key;

	while (window_min(c, &key) && !c->failed &&
	       (all || c->heap.n + c->rlen > c->o.max_window ||
		key + c->o.window_ns <= c->max_time))
		release(c, sp_corr_window_pop(c));
}

/* The key of a timed record (is_timed): its time (record.h), but a lost
 * window's is the start of the window, when known, so that it is ordered
 * among the records it lost (of spans: a count of what spans never had
 * goes by its time, written when it was counted). */
static uint64_t rec_time(const struct sp_record *r)
{
	if (r->kind == SP_REC_LOST)
		return r->lost.start && r->lost.start <= r->lost.time &&
		       sp_corr_lost_spans(r->lost.what) ? r->lost.start : r->lost.time;
	return sp_record_time(r);
}

static bool is_timed(unsigned int kind)
{
	switch (kind) {
	case SP_REC_SAMPLE:
	case SP_REC_EVENT:
	case SP_REC_SPAN_START:
	case SP_REC_SPAN_STOP:
	case SP_REC_SPAN_RAISE:
	case SP_REC_PROCESS:
	case SP_REC_THREAD:
	case SP_REC_PROCESS_END:
	case SP_REC_THREAD_END:
	case SP_REC_FIBER_SWITCH:
	case SP_REC_MODULE_END:
	case SP_REC_LOST:
		return true;
	default:
		return false;
	}
}

bool sp_corr_window_add(struct sp_corr *c, const struct sp_record *rec)
{
	struct hrec *h;
	uint64_t t;

	if (!is_timed(rec->kind))
		return false;
	t = rec_time(rec);
	h = sp_corr_hrec_new(c, rec);
	h->seq = c->seq++;
	if (!t)		/* no time: where it stands in the input */
		t = c->any_released ? c->released : 0;
	h->key = t;
	if (c->any_released && t < c->released) {
		/* later than the window allows: taken where it stands */
		c->st.late++;
		h->key = c->released;
		sp_corr_process(c, h);
		return true;
	}
	if (t > c->max_time)
		c->max_time = t;
	window_push(c, h);
	sp_corr_drain(c, false);
	return true;
}
