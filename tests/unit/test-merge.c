// SPDX-License-Identifier: MIT
/* Unit tests of lib/merge.c: records come out in time order (ties in the
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

int main(void)
{
	TAP_RUN(test_merge_order);
	TAP_RUN(test_merge_copies_bytes);
	TAP_RUN(test_merge_put_fails);
	return TAP_DONE();
}
