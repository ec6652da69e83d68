// SPDX-License-Identifier: MIT
/* Unit tests for lib/symbolize/demangle.c: C++ and Rust names, expected as c++filt prints them. */
#include <stdlib.h>

#include "symbolize/demangle.h"
#include "tap.h"

static void test_demangle_names(void)
{
	char *slot = NULL, *p;
	const char *plain = "main";

	p = sp_demangle("_ZN2fx5twiceIiEET_S1_");
	CHECK_STR(p, "int fx::twice<int>(int)");
	free(p);
	p = sp_demangle("_ZN4core3fmt5write17h0123456789abcdefE");
	CHECK_STR(p, "core::fmt::write");
	free(p);
	p = sp_demangle("_RNvCs1234_7mycrate3foo");
	CHECK_STR(p, "mycrate::foo");
	free(p);
	CHECK(sp_demangle("main") == NULL);
	CHECK(sp_demangle("_Z") == NULL);
	CHECK(sp_demangle("_ZZZZ%%%") == NULL);
	CHECK(sp_demangle(NULL) == NULL);
	/* Cached: a plain name is its own readable form. */
	CHECK(sp_demangle_cached(plain, &slot) == plain);
	CHECK(slot == plain);
	slot = NULL;
	CHECK_STR(sp_demangle_cached("_Z3fooi", &slot), "foo(int)");
	CHECK_STR(sp_demangle_cached("_Z3fooi", &slot), "foo(int)");
	free(slot);
}

int main(void)
{
	TAP_RUN(test_demangle_names);
	return TAP_DONE();
}
