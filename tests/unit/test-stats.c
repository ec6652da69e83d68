// SPDX-License-Identifier: MIT
/* Unit tests of the stream summary (lib/stream/stats.c). */
#include "records.h"
#include "stats.h"
#include "tap.h"

static void add(struct sp_stats *s, struct sp_defs *d, struct sp_record *r)
{
	const char *why;

	CHECK_EQ_U(sp_defs_add(d, r, &why), 0);
	sp_stats_add(s, d, r);
}

static void sample(struct sp_stats *s, struct sp_defs *d, uint64_t t, uint64_t pid, uint64_t tid,
		   uint64_t stack, uint64_t kind, uint64_t weight, uint64_t unwind, uint64_t flags)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };

	r.sample.time = t;
	r.sample.pid = pid;
	r.sample.tid = tid;
	r.sample.stack = stack;
	r.sample.kind = kind;
	r.sample.weight = weight;
	r.sample.unwind = unwind;
	r.sample.flags = flags;
	add(s, d, &r);
}

static void test_stats_counts(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_stats s;
	struct sp_record r;
	unsigned int i;

	sp_stats_init(&s);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_HEADER;
	add(&s, d, &r);
	for (i = 0; i < 3; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.addr = i;
		add(&s, d, &r);
	}
	/* Stacks 1 (depth 1), 2 (2), 3 (3), 4 (2, beside 2). */
	for (i = 0; i < 4; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_STACK;
		r.stack.parent = i == 3 ? 1 : i;
		r.stack.frame = 1 + i % 3;
		add(&s, d, &r);
	}
	sample(&s, d, 3000, 1, 1, 3, SP_SAMPLE_CPU, 1, SP_UNWIND_COMPLETE, SP_SAMPLE_FP_GUESS);
	sample(&s, d, 1000, 1, 2, 4, SP_SAMPLE_CPU, 2, SP_UNWIND_NO_CFI, 0);
	sample(&s, d, 2000, 2, 3, 0, SP_SAMPLE_OFFCPU, 5000000, 99, 0);	/* bad status */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_EVENT;
	r.event.time = 500;
	r.event.pid = 9;
	r.event.kind = SP_EV_PATH_OPEN;
	add(&s, d, &r);
	r.event.kind = 200;	/* no such event kind */
	r.event.time = 9000;
	add(&s, d, &r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_LOST;
	r.lost.what = SP_LOST_EVENTS;
	r.lost.count = 4;
	add(&s, d, &r);
	r.lost.what = SP_LOST_SPAN_STOPS;
	r.lost.count = 6;
	add(&s, d, &r);
	r.lost.what = SP_LOST_UNPROBED;
	r.lost.count = 2;
	add(&s, d, &r);
	r.lost.what = 7;	/* unknown: not counted anywhere */
	add(&s, d, &r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_KIND_MAX;
	r.unknown.kind = 77;
	sp_stats_add(&s, d, &r);

	CHECK_EQ_U(s.records, 1 + 3 + 4 + 3 + 2 + 4 + 1);
	CHECK_EQ_U(s.per_kind[SP_REC_STACK], 4);
	CHECK_EQ_U(s.per_kind[SP_REC_KIND_MAX], 1);
	CHECK_EQ_U(s.samples, 3);
	CHECK_EQ_U(s.sample_weight, 3);
	CHECK_EQ_U(s.offcpu_ns, 5000000);
	CHECK_EQ_U(s.depth_sum, 3 + 2 + 0);
	CHECK_EQ_U(s.max_depth, 3);
	CHECK_EQ_U(s.unwind[SP_UNWIND_COMPLETE], 1);
	CHECK_EQ_U(s.unwind[SP_UNWIND_NO_CFI], 1);
	CHECK_EQ_U(s.unwind[0], 1);	/* out of range counts as unassessed */
	CHECK_EQ_U(s.fp_guess, 1);	/* complete, through a frame pointer */
	CHECK_EQ_U(s.events_per_kind[SP_EV_PATH_OPEN], 1);
	CHECK_EQ_U(s.lost[SP_LOST_EVENTS], 4);
	CHECK_EQ_U(s.lost[SP_LOST_SPAN_STOPS], 6);
	CHECK_EQ_U(s.lost[SP_LOST_UNPROBED], 2);
	CHECK_EQ_U(s.pids.n, 3);	/* 1, 2, 9 */
	CHECK_EQ_U(s.tids.n, 3);
	CHECK_EQ_U(s.wall.first_time, 500);
	CHECK_EQ_U(s.wall.last_time, 9000);
	CHECK_EQ_U(s.streams, 1);
	sp_stats_release(&s);
	sp_defs_free(d);
}

static void test_stats_print(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_stats s;
	int fd = rec_memfd();
	FILE *f = fdopen(dup(fd), "w");
	size_t len;
	char *text;

	sp_stats_init(&s);
	sample(&s, d, 1000000000, 1, 1, 0, SP_SAMPLE_CPU, 1, 0, 0);
	sample(&s, d, 3500000000ull, 1, 1, 0, SP_SAMPLE_CPU, 1, SP_UNWIND_COMPLETE,
	       SP_SAMPLE_FP_GUESS);
	s.lost[SP_LOST_SPAN_STOPS] = 6;
	s.lost[SP_LOST_UNPROBED] = 2;
	sp_stats_print(&s, f, 40, false);
	sp_stats_print(&s, f, 40, true);
	fclose(f);
	text = rec_slurp(fd, &len);
	CHECK(strstr(text, "records         2\n") != NULL);
	/* no header nor end record: from the first sample to the last, said so */
	CHECK(strstr(text, "duration        2.500 s (no end record: first to last record)\n"));
	CHECK(strstr(text, "\"duration_ns\":2500000000,") != NULL);
	CHECK(strstr(text, "bytes/sample    20.00\n") != NULL);
	CHECK(strstr(text, "{\"records\":2,\"samples\":2,") != NULL);
	CHECK(strstr(text, "\"bytes_per_sample\":20.00") != NULL);
	CHECK(strstr(text, "\"duration_s\":2.500000") != NULL);
	CHECK(strstr(text, "span stops      6 dropped: their start came before the recording\n"));
	CHECK(strstr(text, "unprobed        2 processes left without some span probes\n"));
	CHECK(strstr(text, ",\"lost_span_stops\":6,\"unprobed\":2,") != NULL);
	CHECK(strstr(text, ",\"fp_guess\":1,") != NULL);
	free(text);
	close(fd);
	sp_stats_release(&s);
	sp_defs_free(d);
}

int main(void)
{
	TAP_RUN(test_stats_counts);
	TAP_RUN(test_stats_print);
	return TAP_DONE();
}
