// SPDX-License-Identifier: MIT
/*
 * The records of several perf rings in time order (perf_queue.h): the drain
 * and sort loop that the perf source (perf_source.c) and the off-CPU source
 * (perf_offcpu.c) share.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "perf_queue.h"
#include "sp.h"

void sp_perf_queue_init(struct sp_perf_queue *q, size_t item_size, sp_perf_read_fn read,
			sp_perf_item_fn handle, void *ctx)
{
	memset(q, 0, sizeof(*q));
	q->item_size = item_size;
	q->read = read;
	q->handle = handle;
	q->ctx = ctx;
}

static void *item(const struct sp_perf_queue *q, size_t i)
{
	return q->items + i * q->item_size;
}

void sp_perf_queue_release(struct sp_perf_queue *q, sp_perf_item_fn drop)
{
	size_t i;

	for (i = 0; drop && i < q->n; i++)
		drop(q->ctx, item(q, i));
	free(q->items);
	q->items = NULL;
	q->n = q->cap = 0;
}

void *sp_perf_queue_push(struct sp_perf_queue *q, uint64_t time)
{
	struct sp_perf_qitem *it;

	sp_grow(&q->items, &q->cap, q->n + 1, q->item_size);
	it = item(q, q->n++);
	memset(it, 0, q->item_size);
	it->time = time;
	it->seq = q->seq++;
	return it;
}

/* Every record out of the rings, so that the kernel can reuse the space. */
static void drain(struct sp_perf_queue *q, struct sp_perf_ring *rings, size_t n)
{
	const struct perf_event_header *h;
	size_t i;

	for (i = 0; i < n; i++) {
		struct sp_perf_ring *r = &rings[i];

		if (!sp_perf_ring_begin(r))
			continue;
		while ((h = sp_perf_ring_next(r)))
			q->read(q->ctx, h);
		sp_perf_ring_end(r);
		q->bad += r->bad;
		r->bad = 0;
	}
}

static int cmp_items(const void *a, const void *b)
{
	const struct sp_perf_qitem *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Handle the items stamped up to 'upto', in time order. */
static size_t handle_upto(struct sp_perf_queue *q, uint64_t upto)
{
	size_t i, n = 0;

	if (q->n > 1)
		qsort(q->items, q->n, q->item_size, cmp_items);
	while (n < q->n && ((struct sp_perf_qitem *)item(q, n))->time <= upto)
		n++;
	for (i = 0; i < n; i++)
		q->handle(q->ctx, item(q, i));
	memmove(q->items, item(q, n), (q->n - n) * q->item_size);
	q->n -= n;
	return n;
}

size_t sp_perf_queue_poll(struct sp_perf_queue *q, int epfd, struct sp_perf_ring *rings,
			  size_t n)
{
	struct epoll_event evs[64];
	uint64_t now = sp_now_mono_ns(), upto = q->last_pass;

	while (epoll_wait(epfd, evs, 64, 0) == 64)
		;
	drain(q, rings, n);
	q->last_pass = now;
	if (upto > q->bound)
		q->bound = upto;
	return handle_upto(q, q->bound);
}

size_t sp_perf_queue_finish(struct sp_perf_queue *q, struct sp_perf_ring *rings, size_t n)
{
	drain(q, rings, n);
	return handle_upto(q, UINT64_MAX);
}
