// SPDX-License-Identifier: MIT
/* Unit tests of the diagnostics (lib/base/error.c): a warning many
 * processes can earn is said in full once, short for a few, then once that
 * the rest go unnamed; a tally counts every one, said or not. */
#include <string.h>

#include "sp.h"
#include "stderr_capture.h"
#include "tap.h"

static unsigned int count_of(const char *s, const char *what)
{
	unsigned int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

static void test_say_next(void)
{
	struct stderr_capture cap;
	struct sp_tally said = { 0 };
	unsigned int full = 0, shrt = 0, none = 0, i;
	char out[4096];

	stderr_capture_begin(&cap);
	for (i = 0; i < 100; i++) {
		switch (sp_say_next(&said, "things like these")) {
		case SP_SAY_FULL:
			full++;
			break;
		case SP_SAY_SHORT:
			shrt++;
			break;
		case SP_SAY_NOTHING:
			none++;
			break;
		}
	}
	stderr_capture_end(&cap, out, sizeof(out));
	CHECK_EQ_U(full, 1);
	CHECK_EQ_U(shrt, SP_SAY_NAMED);
	CHECK_EQ_U(none, 100 - 1 - SP_SAY_NAMED);
	/* the rest said once, as a warning naming what they are */
	CHECK_EQ_U(count_of(out, "\n"), 1);
	CHECK(strstr(out, "test-error: warning: more things like these are not named here") == out);
	/* every one counted, said or not */
	CHECK_EQ_U(said.n, 100);
	CHECK_EQ_U(sp_tally_unsaid(&said), 100 - 1 - SP_SAY_NAMED);
}

/* Each warning has its own tally: one said in full does not quiet another. */
static void test_say_tallies_apart(void)
{
	struct sp_tally a = { 0 }, b = { 0 };

	CHECK(sp_say_next(&a, "a") == SP_SAY_FULL);
	CHECK(sp_say_next(&a, "a") == SP_SAY_SHORT);
	CHECK(sp_say_next(&b, "b") == SP_SAY_FULL);
}

/*
 * A tally over a million, as a corrupt input's records earn: a few said,
 * the rest counted exactly, with where the first of them was; one not to
 * be said (its like was) is counted with the rest.
 */
static void test_tally_exact(void)
{
	struct sp_tally t = { 0 };
	unsigned int said = 0, i;

	for (i = 0; i < 1000000; i++)
		if (sp_tally_next(&t, 4, 1000 + i) != SP_SAY_NOTHING)
			said++;
	CHECK_EQ_U(said, 5);
	CHECK_EQ_U(t.n, 1000000);
	CHECK_EQ_U(sp_tally_unsaid(&t), 1000000 - 5);
	CHECK_EQ_U(t.first_unsaid, 1005);

	/* quiet first: it is the first not said, and the budget is untouched */
	memset(&t, 0, sizeof(t));
	sp_tally_quiet(&t, 7);
	CHECK(sp_tally_next(&t, 0, 8) == SP_SAY_FULL);
	CHECK(sp_tally_next(&t, 0, 9) == SP_SAY_NOTHING);
	CHECK_EQ_U(t.n, 3);
	CHECK_EQ_U(sp_tally_unsaid(&t), 2);
	CHECK_EQ_U(t.first_unsaid, 7);
}

int main(void)
{
	sp_progname = "test-error";
	TAP_RUN(test_say_next);
	TAP_RUN(test_say_tallies_apart);
	TAP_RUN(test_tally_exact);
	return TAP_DONE();
}
