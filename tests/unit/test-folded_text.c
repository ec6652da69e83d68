// SPDX-License-Identifier: MIT
/* Telling folded stacks from records and other text by their first bytes. */
#include <string.h>

#include "folded_text.h"
#include "tap.h"

static bool folded(const char *s)
{
	return sp_looks_folded((const unsigned char *)s, strlen(s));
}

static void test_looks_folded(void)
{
	CHECK(folded("main;work;square 12\nmain 3\n"));
	CHECK(folded("main 1"));				/* no newline yet */
	CHECK(folded("a;b 7\r\n"));				/* CRLF */
	CHECK(folded("python3;<module> (app.py);f 40 \n"));	/* a space in a frame */
	CHECK(!folded(""));
	CHECK(!folded("{\"type\":\"header\"}\n"));		/* JSON lines */
	CHECK(!folded("\x93SPOOL"));				/* a spool's magic */
	CHECK(!folded("main;work\n"));				/* no count */
	CHECK(!folded(" 12\n"));				/* a count and no frame */
	CHECK(!folded("12\n"));
	CHECK(!folded("hello world\n"));
	CHECK(!folded("a 1\n\001binary"));			/* control bytes: not text */
	CHECK(!folded("main;work 1x\n"));
}

int main(void)
{
	TAP_RUN(test_looks_folded);
	return TAP_DONE();
}
