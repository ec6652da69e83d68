// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/perf_queue.c: records of several rings (built in
 * memory) handled in time order, up to the start of the previous pass;
 * equal times in the order of arrival; the last pass; what is left dropped;
 * a torn ring counted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tap.h"
#include "record/perf_queue.h"

#define RING 256

static struct perf_event_mmap_page meta[2];
static uint8_t data[2][RING];

struct item {
	struct sp_perf_qitem head;
	uint64_t tag;
	uint64_t *owned;	/* freed by handle() or drop() */
};

struct log {
	struct sp_perf_queue *q;
	uint64_t tags[16];
	uint64_t times[16];
	unsigned int n, dropped;
};

/* A record whose payload is (time, tag), at ring i's head. */
static void put(int i, uint64_t time, uint64_t tag)
{
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = 24 };
	uint64_t head = meta[i].data_head, k;
	uint8_t buf[24];

	memcpy(buf, &h, 8);
	memcpy(buf + 8, &time, 8);
	memcpy(buf + 16, &tag, 8);
	for (k = 0; k < sizeof(buf); k++)
		data[i][(head + k) % RING] = buf[k];
	meta[i].data_head = head + sizeof(buf);
}

static void read_rec(void *ctx, const struct perf_event_header *h)
{
	struct log *l = ctx;
	const uint64_t *w = (const uint64_t *)(h + 1);
	struct item *it = sp_perf_queue_push(l->q, w[0]);

	it->tag = w[1];
	it->owned = malloc(8);
}

static void handle(void *ctx, void *item)
{
	struct log *l = ctx;
	struct item *it = item;

	if (l->n < 16) {
		l->tags[l->n] = it->tag;
		l->times[l->n] = it->head.time;
	}
	l->n++;
	free(it->owned);
}

static void drop(void *ctx, void *item)
{
	struct log *l = ctx;

	l->dropped++;
	free(((struct item *)item)->owned);
}

static void setup(struct sp_perf_ring *r, struct sp_perf_queue *q, struct log *l)
{
	int i;

	memset(meta, 0, sizeof(meta));
	memset(data, 0, sizeof(data));
	memset(l, 0, sizeof(*l));
	for (i = 0; i < 2; i++)
		sp_perf_ring_init(&r[i], &meta[i], data[i], RING);
	sp_perf_queue_init(q, sizeof(struct item), read_rec, handle, l);
	l->q = q;
}

static void test_perf_queue_order(void)
{
	struct sp_perf_ring r[2];
	struct sp_perf_queue q;
	struct log l;
	int ep = epoll_create1(0);

	setup(r, &q, &l);
	/* Each ring in order, the two interleaved; 30 is in both. */
	put(0, 10, 1);
	put(0, 30, 2);
	put(0, 50, 3);
	put(1, 20, 4);
	put(1, 30, 5);
	put(1, 60, 6);
	/* The previous pass began at 30: up to it, in time order, ring 0's
	 * 30 (read first) before ring 1's. */
	q.last_pass = 30;
	CHECK_EQ_U(sp_perf_queue_poll(&q, ep, r, 2), 4);
	CHECK_EQ_U(l.n, 4);
	CHECK_EQ_U(l.tags[0], 1);
	CHECK_EQ_U(l.tags[1], 4);
	CHECK_EQ_U(l.tags[2], 2);
	CHECK_EQ_U(l.tags[3], 5);
	CHECK_EQ_U(q.bound, 30);
	CHECK_EQ_U(q.n, 2);
	CHECK(q.last_pass > 30);	/* now: this pass's start */
	CHECK_EQ_U(meta[0].data_tail, meta[0].data_head);	/* space given back */
	/* A record older than the bound arrives late: next pass, first. */
	put(1, 40, 7);
	CHECK_EQ_U(sp_perf_queue_poll(&q, ep, r, 2), 3);
	CHECK_EQ_U(l.tags[4], 7);
	CHECK_EQ_U(l.tags[5], 3);
	CHECK_EQ_U(l.tags[6], 6);
	CHECK_EQ_U(q.n, 0);
	CHECK_EQ_U(q.bad, 0);
	sp_perf_queue_release(&q, drop);
	CHECK_EQ_U(l.dropped, 0);
	close(ep);
}

static void test_perf_queue_finish(void)
{
	struct sp_perf_ring r[2];
	struct sp_perf_queue q;
	struct log l;
	int ep = epoll_create1(0);

	setup(r, &q, &l);
	put(0, 100, 1);
	put(1, 5, 2);
	/* Nothing is older than the previous pass (0): all held. */
	CHECK_EQ_U(sp_perf_queue_poll(&q, ep, r, 2), 0);
	CHECK_EQ_U(q.n, 2);
	put(1, 7, 3);
	CHECK_EQ_U(sp_perf_queue_finish(&q, r, 2), 3);
	CHECK_EQ_U(l.tags[0], 2);
	CHECK_EQ_U(l.tags[1], 3);
	CHECK_EQ_U(l.tags[2], 1);
	sp_perf_queue_release(&q, drop);
	close(ep);
}

static void test_perf_queue_release(void)
{
	struct sp_perf_ring r[2];
	struct sp_perf_queue q;
	struct log l;
	int ep = epoll_create1(0);

	setup(r, &q, &l);
	put(0, 10, 1);
	put(0, 20, 2);
	put(1, 15, 3);
	q.last_pass = 12;
	CHECK_EQ_U(sp_perf_queue_poll(&q, ep, r, 2), 1);
	/* What was never handled is dropped (its memory freed: ASan). */
	sp_perf_queue_release(&q, drop);
	CHECK_EQ_U(l.dropped, 2);
	CHECK_EQ_U(q.n, 0);
	close(ep);
}

static void test_perf_queue_torn(void)
{
	struct sp_perf_ring r[2];
	struct sp_perf_queue q;
	struct log l;
	int ep = epoll_create1(0);

	setup(r, &q, &l);
	put(0, 10, 1);
	data[0][6] = 0xff;	/* a size past what the ring holds */
	put(1, 20, 2);
	CHECK_EQ_U(sp_perf_queue_finish(&q, r, 2), 1);
	CHECK_EQ_U(l.tags[0], 2);
	CHECK_EQ_U(q.bad, 1);
	CHECK_EQ_U(r[0].bad, 0);	/* moved to the queue's count */
	sp_perf_queue_release(&q, drop);
	free(r[0].copy);
	free(r[1].copy);
	close(ep);
}

int main(void)
{
	TAP_RUN(test_perf_queue_order);
	TAP_RUN(test_perf_queue_finish);
	TAP_RUN(test_perf_queue_release);
	TAP_RUN(test_perf_queue_torn);
	return TAP_DONE();
}
