// SPDX-License-Identifier: MIT
/*
 * Unit tests of what becomes of a sample's interpreted stack
 * (lib/record/interp_outcome.c): a stack read whole is complete; a thread
 * with no interpreter state has none and is no failure; a sample before
 * the BPF program knew of the process has none when the interpreter was
 * not set up then or its native stack ran no eval loop, and is a failure
 * otherwise; a stack not read for a sample after that, a failed read, a
 * truncated stack and a frame whose code was freed are failures, each
 * named; a stack named whole with a line unknown is none, and counted
 * apart.
 */
#include "record.h"
#include "record/interpP.h"
#include "tap.h"

#define FOLLOWED	1000000ull

static struct sp_interp_seen read_ok(void)
{
	struct sp_interp_seen s = {
		.taken = true, .status = SP_BPF_IST_OK, .all_named = true,
		.time = FOLLOWED + 5, .followed = FOLLOWED, .started = true,
	};
	return s;
}

static void test_read_whole(void)
{
	struct sp_interp_seen s = read_ok();

	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_COMPLETE);
	CHECK(!sp_interp_outcome_incomplete(SP_IO_COMPLETE));
}

static void test_no_thread_is_none(void)
{
	struct sp_interp_seen s = read_ok();

	s.status = SP_BPF_IST_NO_THREAD;
	s.all_named = false;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_NONE);
	CHECK(!sp_interp_outcome_incomplete(SP_IO_NONE));
}

static void test_before_followed(void)
{
	struct sp_interp_seen s = read_ok();

	s.taken = false;
	s.time = FOLLOWED - 1;
	/* the interpreter ran by the time it was followed, the native stack
	 * says nothing: its stack was missed */
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_NOT_FOLLOWED);
	CHECK(sp_interp_outcome_incomplete(SP_IO_NOT_FOLLOWED));
	s.started = false;	/* not set up even later: not at the sample */
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_NONE);
	s.started = true;
	s.no_eval = true;	/* a whole native stack in no eval loop */
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_NONE);
	/* the same after it was followed: a stack the walk should have read */
	s.time = FOLLOWED;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_UNPAIRED);
	s.followed = 0;	/* a fork's child: followed from its start */
	s.time = 1;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_UNPAIRED);
}

static void test_failures_named(void)
{
	struct sp_interp_seen s = read_ok();

	s.status = SP_BPF_IST_FAULT;
	s.all_named = false;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_FAULT);
	s.status = SP_BPF_IST_NO_LAYOUT;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_FAULT);
	s = read_ok();
	s.truncated = true;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_TRUNCATED);
	s.all_named = false;	/* truncated says more: the walk's bound */
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_TRUNCATED);
	s = read_ok();
	s.all_named = false;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_FREED);
	CHECK(sp_interp_outcome_incomplete(SP_IO_FAULT));
	CHECK(sp_interp_outcome_incomplete(SP_IO_TRUNCATED));
	CHECK(sp_interp_outcome_incomplete(SP_IO_FREED));
	CHECK(sp_interp_outcome_incomplete(SP_IO_UNPAIRED));
}

static void test_line_unknown(void)
{
	struct sp_interp_seen s = read_ok();

	s.no_line = true;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_NO_LINE);
	CHECK(!sp_interp_outcome_incomplete(SP_IO_NO_LINE));
	s.all_named = false;	/* a frame not named says more */
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_FREED);
	s = read_ok();
	s.no_line = true;
	s.truncated = true;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_TRUNCATED);
}

/* A Ruby's sample while its walker was loading: a failure of its own,
 * not an unreadable stack, and before the truncation or naming checks. */
static void test_no_walker(void)
{
	struct sp_interp_seen s = read_ok();

	s.status = SP_BPF_IST_NO_WALKER;
	s.all_named = false;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_NO_WALKER);
	s.truncated = true;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_NO_WALKER);
	CHECK(sp_interp_outcome_incomplete(SP_IO_NO_WALKER));
	CHECK_STR(sp_interp_outcome_name(SP_IO_NO_WALKER), "walker-loading");
	s.taken = false;	/* no record at all: unpaired, as before */
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_UNPAIRED);
}

/* One eval loop call more than entry frames: the innermost call's frame
 * is missing (a placeholder holds its place): incomplete, unless the
 * stack is already counted as something worse. */
static void test_unpushed(void)
{
	struct sp_interp_seen s = read_ok();

	s.unpushed = true;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_UNPUSHED);
	CHECK(sp_interp_outcome_incomplete(SP_IO_UNPUSHED));
	CHECK_STR(sp_interp_outcome_name(SP_IO_UNPUSHED), "frame-not-pushed");
	s.no_line = true;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_UNPUSHED);
	s.all_named = false;
	CHECK_EQ_U(sp_interp_outcome(&s), SP_IO_FREED);
}

static void test_names(void)
{
	unsigned int o;

	for (o = 0; o < SP_IO_N; o++)
		CHECK(strcmp(sp_interp_outcome_name(o), "?") != 0);
	CHECK_STR(sp_interp_outcome_name(SP_IO_FREED), "code-freed");
	CHECK_STR(sp_interp_outcome_name(SP_IO_NO_LINE), "line-unknown");
	CHECK_STR(sp_interp_outcome_name(SP_IO_N), "?");
}

int main(void)
{
	TAP_RUN(test_read_whole);
	TAP_RUN(test_no_thread_is_none);
	TAP_RUN(test_before_followed);
	TAP_RUN(test_failures_named);
	TAP_RUN(test_line_unknown);
	TAP_RUN(test_no_walker);
	TAP_RUN(test_unpushed);
	TAP_RUN(test_names);
	return TAP_DONE();
}
