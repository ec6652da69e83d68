// SPDX-License-Identifier: MIT
/* Unit tests of a record's time (lib/stream/record_time.c): the time field
 * of every kind that has one, 0 for every other kind. */
#include <stdint.h>
#include <string.h>

#include "records.h"
#include "tap.h"

#define N(a) (sizeof(a) / sizeof(a[0]))

/* Each timed kind by hand, its time 100 + its place here, its other fields
 * (a lost window's start, a dump's trigger time) set apart from it. */
static void test_record_time_by_kind(void)
{
	static const struct sp_record timed[] = {
		{ .kind = SP_REC_PROCESS, .process = { .time = 100, .pid = 7, .start_boot_ns = 3 } },
		{ .kind = SP_REC_THREAD, .thread = { .time = 101, .tid = 8, .pid = 7 } },
		{ .kind = SP_REC_MODULE, .module = { .id = 1, .time = 102, .start = 0x1000 } },
		{ .kind = SP_REC_SAMPLE, .sample = { .time = 103, .pid = 7, .weight = 1 } },
		{ .kind = SP_REC_EVENT, .event = { .time = 104, .kind = 1 } },
		{ .kind = SP_REC_SPAN_START, .mark = { .time = 105 } },
		{ .kind = SP_REC_SPAN_STOP, .mark = { .time = 106 } },
		{ .kind = SP_REC_SPAN_RAISE, .mark = { .time = 107 } },
		{ .kind = SP_REC_PROCESS_END, .process_end = { .time = 108, .pid = 7 } },
		{ .kind = SP_REC_THREAD_END, .thread_end = { .time = 109, .tid = 8 } },
		{ .kind = SP_REC_FIBER_SWITCH, .fiber_switch = { .time = 110, .to = 2 } },
		{ .kind = SP_REC_MODULE_END, .module_end = { .time = 111, .module = 1 } },
		/* the end of its window, not its start */
		{ .kind = SP_REC_LOST, .lost = { .time = 112, .start = 50, .count = 3 } },
		/* when the recording ended, not when a dump's trigger fired */
		{ .kind = SP_REC_END, .end = { .time = 113, .trigger_time = 60 } },
		{ .kind = SP_REC_PROBE, .probe = { .time = 114, .hits = 9 } },
		{ .kind = SP_REC_RUNTIME, .runtime = { .time = 115, .pid = 7 } },
	};
	unsigned int i;

	for (i = 0; i < N(timed); i++)
		CHECK_EQ_U(sp_record_time(&timed[i]), 100 + i);
}

/* Kinds without a time of their own are 0, whatever else they hold: they
 * go out of the merge first. A correlated span is a range: 0 too. */
static void test_record_time_untimed(void)
{
	static const struct sp_record untimed[] = {
		{ .kind = SP_REC_NONE },
		{ .kind = SP_REC_HEADER, .header = { .version = 1, .start_wall_ns = 9,
						     .start_mono_ns = 10 } },
		{ .kind = SP_REC_STRING, .string = { .id = 11 } },
		{ .kind = SP_REC_FRAME, .frame = { .id = 12, .module = 1, .addr = 13 } },
		{ .kind = SP_REC_STACK, .stack = { .id = 14, .frame = 12 } },
		{ .kind = SP_REC_SYMBOL, .symbol = { .frame = 15 } },
		{ .kind = SP_REC_SPAN, .span = { .id = 1, .start = 16, .stop = 17 } },
		{ .kind = SP_REC_KSYM, .ksym = { .addr = 18 } },
		{ .kind = SP_REC_JITSYM, .jitsym = { .pid = 19, .addr = 20 } },
		{ .kind = SP_REC_KIND_MAX, .unknown = { .kind = SP_REC_KIND_MAX } },
		{ .kind = SP_REC_KIND_MAX + 7, .unknown = { .kind = SP_REC_KIND_MAX + 7 } },
	};
	unsigned int i;

	for (i = 0; i < N(untimed); i++)
		CHECK_EQ_U(sp_record_time(&untimed[i]), 0);
}

/* Against the schema, with every field of each kind set: a kind with a
 * field named "time" gives that field, any other gives 0; so a kind added
 * to the schema with a time and not to sp_record_time() fails here. */
static void test_record_time_schema(void)
{
	unsigned int kind, timed = 0, i;

	for (kind = SP_REC_HEADER; kind < SP_REC_KIND_MAX; kind++) {
		const struct sp_schema *s = sp_schema(kind);
		const struct sp_schema_field *time = NULL;
		struct sp_record r;

		CHECK(s != NULL);
		if (!s)
			continue;
		rec_make(&r, kind, kind);
		for (i = 0; i < s->nfields; i++)
			if (!strcmp(s->fields[i].name, "time"))
				time = &s->fields[i];
		if (time) {
			uint64_t want = *sp_field_u64(&r.header, time);

			CHECK(want != 0);
			CHECK_EQ_U(sp_record_time(&r), want);
			timed++;
		} else {
			CHECK_EQ_U(sp_record_time(&r), 0);
		}
	}
	CHECK_EQ_U(timed, 16);	/* the kinds of test_record_time_by_kind */
}

int main(void)
{
	TAP_RUN(test_record_time_by_kind);
	TAP_RUN(test_record_time_untimed);
	TAP_RUN(test_record_time_schema);
	return TAP_DONE();
}
