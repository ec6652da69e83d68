// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/merge.c: records come out in time order (ties in the
 * order they went in), only up to the bound asked for, with copies of the
 * bytes they point to; a failing put() stops the flush. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "merge.h"

struct got {
	uint64_t times[4096];
	uint64_t tags[4096];
	unsigned int n;
	unsigned int fail_at;	/* 1-based; 0 = never */
	char bytes[64];
};

static int put(void *ctx, const struct sp_record *r)
{
	struct got *g = ctx;

	if (g->fail_at && g->n + 1 == g->fail_at)
		return -1;
	g->times[g->n] = sp_record_time(r);
	g->tags[g->n] = r->kind == SP_REC_SAMPLE ? r->sample.cpu : 0;
	if (r->kind == SP_REC_EVENT && r->event.nfields)
		memcpy(g->bytes, r->event.field[0].b.p, r->event.field[0].b.len);
	g->n++;
	return 0;
}

static void sample(struct sp_merge *m, uint64_t time, uint64_t tag)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };

	r.sample.time = time;
	r.sample.cpu = tag;
	CHECK(sp_merge_add(m, &r) == 0);
}

static void test_merge_order(void)
{
	static struct got g;
	struct sp_merge *m = sp_merge_new(put, &g);
	unsigned int i;

	memset(&g, 0, sizeof(g));
	/* Two "rings", each in order, interleaved in time. */
	for (i = 0; i < 1000; i++) {
		sample(m, 2 * i + 1, 1);
		sample(m, 2 * i, 2);
	}
	sample(m, 500, 3);		/* a tie with ring 2's 500: after it */
	CHECK_EQ_U(sp_merge_pending(m), 2001);
	CHECK_EQ_U(sp_merge_oldest(m), 0);
	CHECK(sp_merge_flush(m, 999) == 1001);
	CHECK_EQ_U(g.n, 1001);
	for (i = 1; i < g.n; i++)
		CHECK(g.times[i - 1] <= g.times[i]);
	CHECK_EQ_U(g.times[500], 500);
	CHECK_EQ_U(g.tags[500], 2);
	CHECK_EQ_U(g.tags[501], 3);
	CHECK_EQ_U(sp_merge_oldest(m), 1000);
	CHECK(sp_merge_flush(m, UINT64_MAX) == 1000);
	CHECK_EQ_U(g.n, 2001);
	CHECK_EQ_U(g.times[2000], 1999);
	CHECK_EQ_U(sp_merge_pending(m), 0);
	CHECK_EQ_U(sp_merge_oldest(m), UINT64_MAX);
	sp_merge_free(m);
}

static void test_merge_copies_bytes(void)
{
	static struct got g;
	struct sp_merge *m = sp_merge_new(put, &g);
	struct sp_record r = { .kind = SP_REC_EVENT };
	char buf[16] = "hello";

	memset(&g, 0, sizeof(g));
	r.event.time = 5;
	r.event.nfields = 1;
	r.event.field[0].b.p = (const uint8_t *)buf;
	r.event.field[0].b.len = 6;
	CHECK(sp_merge_add(m, &r) == 0);
	strcpy(buf, "XXXXX");		/* the caller's buffer is reused */
	/* A definition (no time) goes out first. */
	r.kind = SP_REC_KSYM;
	memset(&r.ksym, 0, sizeof(r.ksym));
	CHECK(sp_merge_add(m, &r) == 0);
	CHECK(sp_merge_flush(m, 4) == 1);
	CHECK_EQ_U(g.times[0], 0);
	CHECK(sp_merge_flush(m, 5) == 1);
	CHECK_STR(g.bytes, "hello");
	sp_merge_free(m);
}

static void test_merge_put_fails(void)
{
	static struct got g;
	struct sp_merge *m = sp_merge_new(put, &g);
	unsigned int i;

	memset(&g, 0, sizeof(g));
	g.fail_at = 3;
	for (i = 0; i < 5; i++)
		sample(m, i, 0);
	CHECK(sp_merge_flush(m, UINT64_MAX) == -1);
	CHECK_EQ_U(g.n, 2);
	CHECK_EQ_U(sp_merge_pending(m), 2);	/* the failed one is dropped */
	sp_merge_free(m);		/* frees what is still held */
}


/* Many sources, each mostly in order, some records in no order at all (more
 * runs than the merge keeps: the heap), bytes of every size across chunk
 * ends, flushed in steps: out in (time, order added) order, bytes intact. */
struct big {
	unsigned int n, bad;
	uint64_t last_time, last_seq;
};

static int put_big(void *ctx, const struct sp_record *r)
{
	struct big *g = ctx;
	uint64_t seq = r->event.field[1].u;
	unsigned int i;

	if (g->n && (r->event.time < g->last_time ||
		     (r->event.time == g->last_time && seq < g->last_seq)))
		g->bad++;
	for (i = 0; i < r->event.field[0].b.len; i++)
		if (r->event.field[0].b.p[i] != (uint8_t)(seq + i))
			g->bad++;
	g->last_time = r->event.time;
	g->last_seq = seq;
	g->n++;
	return 0;
}

static void test_merge_many(void)
{
	static struct big g;
	static uint8_t buf[70000];
	struct sp_merge *m = sp_merge_new(put_big, &g);
	uint64_t clock[5] = { 0 }, seq = 0, now = 0;
	unsigned int i, j, total = 0;

	memset(&g, 0, sizeof(g));
	srand(7);
	for (i = 0; i < 200; i++) {
		for (j = 0; j < 300; j++) {
			struct sp_record r = { .kind = SP_REC_EVENT };
			unsigned int s = (unsigned int)rand() % 5, k;
			size_t len = j % 97 == 0 ? 60000 : (size_t)rand() % 300;

			if (s == 4)	/* no order at all, but not flushed yet */
				r.event.time = now + (uint64_t)(rand() % 5000);
			else
				r.event.time = clock[s] = (clock[s] > now ? clock[s] : now) +
							  (uint64_t)(rand() % 50);
			r.event.nfields = 2;
			for (k = 0; k < len; k++)
				buf[k] = (uint8_t)(seq + k);
			r.event.field[0].b.p = buf;
			r.event.field[0].b.len = (uint32_t)len;
			r.event.field[1].u = seq++;
			CHECK(sp_merge_add(m, &r) == 0);
			total++;
		}
		now += 1000;
		CHECK(sp_merge_flush(m, now) >= 0);
	}
	CHECK(sp_merge_flush(m, UINT64_MAX) >= 0);
	CHECK_EQ_U(g.n, total);
	CHECK_EQ_U(g.bad, 0);
	CHECK_EQ_U(sp_merge_pending(m), 0);
	sp_merge_free(m);
}

/* Times falling: every record needs a run of its own, past the runs kept. */
static void test_merge_falling(void)
{
	static struct got g;
	struct sp_merge *m = sp_merge_new(put, &g);
	unsigned int i;

	memset(&g, 0, sizeof(g));
	for (i = 0; i < 100; i++)
		sample(m, 1000 - i, i);
	sample(m, 950, 100);	/* a tie with an earlier one: after it */
	CHECK_EQ_U(sp_merge_oldest(m), 901);
	CHECK(sp_merge_flush(m, 950) == 51);
	CHECK(sp_merge_flush(m, UINT64_MAX) == 50);
	CHECK_EQ_U(g.n, 101);
	for (i = 0; i < 50; i++)
		CHECK_EQ_U(g.times[i], 901 + i);
	CHECK_EQ_U(g.tags[49], 50);
	CHECK_EQ_U(g.tags[50], 100);
	CHECK_EQ_U(g.times[100], 1000);
	sp_merge_free(m);
}

int main(void)
{
	TAP_RUN(test_merge_order);
	TAP_RUN(test_merge_copies_bytes);
	TAP_RUN(test_merge_put_fails);
	TAP_RUN(test_merge_many);
	TAP_RUN(test_merge_falling);
	return TAP_DONE();
}
