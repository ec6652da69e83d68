// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/stream/span_name.c: the name every tool shows for a
 * method span, Ruby's singleton methods included.
 */
#include <string.h>

#include "tap.h"
#include "record.h"

static const char *name(uint64_t runtime, const char *klass, const char *method)
{
	static char out[64];

	sp_span_name(out, sizeof(out), runtime, klass, method);
	return out;
}

static void test_span_name(void)
{
	char small[8];

	CHECK_STR(name(SP_RT_RUBY, "Foo", "run"), "Foo#run");
	CHECK_STR(name(SP_RT_RUBY, "#<Class:Foo>", "build"), "Foo.build");
	CHECK_STR(name(SP_RT_RUBY, "#<Class:A::B>", "x"), "A::B.x");
	CHECK_STR(name(SP_RT_PYTHON, "json", "dumps"), "json.dumps");
	/* a Python class may not look like Ruby's: only Ruby's are singletons */
	CHECK_STR(name(SP_RT_PYTHON, "#<Class:Foo>", "x"), "#<Class:Foo>.x");
	/* not a singleton class: as it is */
	CHECK_STR(name(SP_RT_RUBY, "#<Class:Foo", "x"), "#<Class:Foo#x");
	CHECK_STR(name(SP_RT_RUBY, "#<Class:>", "x"), "#<Class:>#x");
	CHECK_STR(name(SP_RT_RUBY, "", "main"), "main");
	CHECK_STR(name(SP_RT_RUBY, NULL, NULL), "?");
	CHECK_STR(name(SP_RT_RUBY, "Foo", ""), "Foo#?");
	/* cut to the buffer; the whole length returned */
	CHECK_EQ_U(sp_span_name(small, sizeof(small), SP_RT_RUBY, "#<Class:Foobar>", "build"), 12);
	CHECK_STR(small, "Foobar.");
}

int main(void)
{
	TAP_RUN(test_span_name);
	return TAP_DONE();
}
