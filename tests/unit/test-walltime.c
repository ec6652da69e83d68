// SPDX-License-Identifier: MIT
/* Unit tests of a recording's duration (lib/stream/walltime.c). */
#include <string.h>

#include "tap.h"
#include "walltime.h"

static void put(struct sp_walltime *w, enum sp_rec_kind kind, uint64_t t, uint64_t t2)
{
	struct sp_record r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	switch (kind) {
	case SP_REC_HEADER:
		r.header.start_mono_ns = t;
		break;
	case SP_REC_END:
		r.end.time = t;
		r.end.reason = t2;
		break;
	case SP_REC_SAMPLE:
		r.sample.time = t;
		break;
	case SP_REC_EVENT:
		r.event.time = t;
		break;
	case SP_REC_SPAN:
		r.span.start = t;
		r.span.stop = t2;
		break;
	default:
		r.mark.time = t;
		break;
	}
	sp_walltime_add(w, &r);
}

/* header at 1000, records from 1500 to 7000, end at 9000: 8000, not 5500 */
static void test_walltime_header_to_end(void)
{
	struct sp_walltime w = { 0 };
	uint64_t ns = 1;

	put(&w, SP_REC_HEADER, 1000, 0);
	put(&w, SP_REC_SAMPLE, 3000, 0);
	put(&w, SP_REC_EVENT, 1500, 0);
	put(&w, SP_REC_SPAN, 2000, 7000);
	put(&w, SP_REC_SPAN_STOP, 6000, 0);
	put(&w, SP_REC_HEADER, 4000, 0);	/* a second stream: the first's start counts */
	put(&w, SP_REC_END, 5000, SP_ENDR_ROTATED);	/* a segment's end: goes on */
	put(&w, SP_REC_HEADER, 5000, 0);		/* in the next segment */
	put(&w, SP_REC_END, 9000, SP_ENDR_EXITED);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_HEADER_TO_END);
	CHECK_EQ_U(ns, 8000);
	CHECK_STR(sp_walltime_note(SP_WALLTIME_HEADER_TO_END), "");
}

/*
 * A segment read alone, or segments joined whose last is not the last of the
 * recording: the last end is "rotated". The duration runs to it and is said
 * to be a segment's, not "no end record" (there is one).
 */
static void test_walltime_segment(void)
{
	struct sp_walltime w = { 0 };
	uint64_t ns = 1;

	put(&w, SP_REC_HEADER, 1000, 0);
	put(&w, SP_REC_SAMPLE, 3000, 0);
	put(&w, SP_REC_END, 5000, SP_ENDR_ROTATED);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_TO_ROTATION);
	CHECK_EQ_U(ns, 4000);
	CHECK_STR(sp_walltime_note(SP_WALLTIME_TO_ROTATION),
		  "a segment: the recording goes on in the next");
	/* a span sp-correlate ended open after the end's time bounds it */
	put(&w, SP_REC_SPAN, 2000, 5500);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_TO_ROTATION);
	CHECK_EQ_U(ns, 4500);
	/* the next segment, cut short: no end record after all */
	put(&w, SP_REC_HEADER, 6000, 0);
	put(&w, SP_REC_SAMPLE, 7000, 0);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_FIRST_TO_LAST);
	CHECK_EQ_U(ns, 5000);
	/* and one that ends it: the end */
	put(&w, SP_REC_END, 8000, SP_ENDR_ROTATED);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_TO_ROTATION);
	CHECK_EQ_U(ns, 7000);
	put(&w, SP_REC_HEADER, 8000, 0);
	put(&w, SP_REC_END, 9000, SP_ENDR_EXITED);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_HEADER_TO_END);
	CHECK_EQ_U(ns, 8000);
}

/* no end record, or one before the start (a forged stream): the records */
static void test_walltime_fallback(void)
{
	struct sp_walltime w = { 0 };
	uint64_t ns = 1;

	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_UNKNOWN);
	CHECK_EQ_U(ns, 0);
	put(&w, SP_REC_SAMPLE, 0, 0);	/* no time: not counted */
	put(&w, SP_REC_SPAN_START, 2500, 0);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_UNKNOWN);
	put(&w, SP_REC_SPAN, 2000, 0);	/* still open */
	put(&w, SP_REC_HEADER, 3000, 0);
	put(&w, SP_REC_END, 2900, SP_ENDR_EXITED);
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_FIRST_TO_LAST);
	CHECK_EQ_U(ns, 500);
	CHECK(strstr(sp_walltime_note(SP_WALLTIME_FIRST_TO_LAST), "no end record") != NULL);
}

/* the bookkeeping kinds with a time do not move the records' bounds */
static void test_walltime_records_of_work(void)
{
	static const enum sp_rec_kind others[] = {
		SP_REC_PROCESS, SP_REC_THREAD, SP_REC_MODULE, SP_REC_PROCESS_END,
		SP_REC_THREAD_END, SP_REC_FIBER_SWITCH, SP_REC_MODULE_END, SP_REC_LOST,
		SP_REC_PROBE, SP_REC_RUNTIME,
	};
	struct sp_walltime w = { 0 };
	uint64_t ns = 1;
	unsigned int i;

	put(&w, SP_REC_SAMPLE, 2000, 0);
	put(&w, SP_REC_EVENT, 3000, 0);
	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		put(&w, others[i], 1000, 0);	/* time is every kind's first field */
		put(&w, others[i], 9000, 0);
	}
	CHECK_EQ_U(sp_walltime_get(&w, &ns), SP_WALLTIME_FIRST_TO_LAST);
	CHECK_EQ_U(ns, 1000);
}

int main(void)
{
	TAP_RUN(test_walltime_header_to_end);
	TAP_RUN(test_walltime_segment);
	TAP_RUN(test_walltime_fallback);
	TAP_RUN(test_walltime_records_of_work);
	return TAP_DONE();
}
