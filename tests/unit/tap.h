/* SPDX-License-Identifier: MIT */
/*
 * tap.h - a tiny TAP producer for the C unit tests. Each test_<module>_<case>()
 * is run by TAP_RUN(); CHECK() records a failure with file:line and goes on.
 */
#ifndef STACKPULSE_TAP_H
#define STACKPULSE_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed, tap_case_failed;

#define CHECK(cond) do { \
	if (!(cond)) { \
		printf("#   %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		tap_case_failed = 1; \
	} \
} while (0)

#define CHECK_EQ_U(a, b) do { \
	unsigned long long _a = (a), _b = (b); \
	if (_a != _b) { \
		printf("#   %s:%d: %s == %s: %llu != %llu\n", __FILE__, __LINE__, #a, #b, _a, _b); \
		tap_case_failed = 1; \
	} \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *_a = (a), *_b = (b); \
	if (!_a || !_b || strcmp(_a, _b)) { \
		printf("#   %s:%d: %s == %s: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, \
		       _a ? _a : "(null)", _b ? _b : "(null)"); \
		tap_case_failed = 1; \
	} \
} while (0)

#define TAP_RUN(fn) do { \
	tap_case_failed = 0; \
	fn(); \
	tap_n++; \
	if (tap_case_failed) \
		tap_failed++; \
	printf("%s %d - %s\n", tap_case_failed ? "not ok" : "ok", tap_n, #fn); \
	fflush(stdout); \
} while (0)

#define TAP_SKIP(fn, why) do { \
	tap_n++; \
	printf("ok %d - %s # SKIP %s\n", tap_n, #fn, why); \
} while (0)

#define TAP_DONE() (printf("1..%d\n", tap_n), tap_failed ? 1 : 0)

#endif
