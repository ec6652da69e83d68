// SPDX-License-Identifier: MIT
/* Unit tests of the diagnostics (lib/base/error.c): a warning many
 * processes can earn is said in full once, short for a few, then once that
 * the rest go unnamed. */
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
	unsigned int said = 0, full = 0, shrt = 0, none = 0, i;
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
	/* the tally stops growing: no wrap after 2^32 calls */
	CHECK_EQ_U(said, SP_SAY_NAMED + 2);
}

/* Each warning has its own tally: one said in full does not quiet another. */
static void test_say_tallies_apart(void)
{
	unsigned int a = 0, b = 0;

	CHECK(sp_say_next(&a, "a") == SP_SAY_FULL);
	CHECK(sp_say_next(&a, "a") == SP_SAY_SHORT);
	CHECK(sp_say_next(&b, "b") == SP_SAY_FULL);
}

int main(void)
{
	sp_progname = "test-error";
	TAP_RUN(test_say_next);
	TAP_RUN(test_say_tallies_apart);
	return TAP_DONE();
}
