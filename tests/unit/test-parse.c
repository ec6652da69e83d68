// SPDX-License-Identifier: MIT
/* Unit tests of command-line number and duration parsing (lib/base/parse.c). */
#include <stdint.h>
#include <unistd.h>

#include "sp.h"
#include "tap.h"

static void test_parse_uint(void)
{
	static const struct {
		const char *s;
		uint64_t min, max, want;
		int ret;
	} cases[] = {
		{ "0", 0, 10, 0, 0 },
		{ "10", 0, 10, 10, 0 },
		{ "11", 0, 10, 0, -1 },		/* over max */
		{ "4", 5, 10, 0, -1 },		/* under min */
		{ "010", 0, 100, 10, 0 },	/* decimal, not octal */
		{ "08", 0, 100, 8, 0 },
		{ "0x1f", 0, 100, 31, 0 },
		{ "0X1F", 0, 100, 31, 0 },
		{ "0x", 0, 100, 0, -1 },
		{ "18446744073709551615", 0, UINT64_MAX, UINT64_MAX, 0 },
		{ "18446744073709551616", 0, UINT64_MAX, 0, -1 },	/* ERANGE */
		{ "-1", 0, UINT64_MAX, 0, -1 },
		{ "+1", 0, 10, 0, -1 },
		{ " 1", 0, 10, 0, -1 },
		{ "1 ", 0, 10, 0, -1 },
		{ "1k", 0, 10000, 0, -1 },
		{ "", 0, 10, 0, -1 },
		{ "abc", 0, 10, 0, -1 },
	};
	unsigned int i;
	uint64_t v;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		if (sp_parse_uint(cases[i].s, cases[i].min, cases[i].max, &v) != cases[i].ret) {
			printf("#   sp_parse_uint(\"%s\") should %s\n", cases[i].s,
			       cases[i].ret ? "fail" : "succeed");
			tap_case_failed = 1;
		}
		if (!cases[i].ret)
			CHECK_EQ_U(v, cases[i].want);
		else
			CHECK_EQ_U(v, 12345);	/* untouched on failure */
	}
	CHECK(sp_parse_uint(NULL, 0, 1, &v) < 0);
}

static void test_parse_uint32(void)
{
	uint32_t v = 0;

	CHECK_EQ_U(sp_parse_uint32("4294967295", 0, UINT32_MAX, &v), 0);
	CHECK_EQ_U(v, UINT32_MAX);
	CHECK(sp_parse_uint32("4294967296", 0, UINT32_MAX, &v) < 0);
	CHECK(sp_parse_uint32("7", 8, 9, &v) < 0);
}

static void test_parse_duration(void)
{
	static const struct {
		const char *s;
		uint64_t ns;
		int ret;
	} cases[] = {
		{ "10", 10000000000ull, 0 },	/* seconds by default */
		{ "1.5s", 1500000000ull, 0 },
		{ "200ms", 200000000ull, 0 },
		{ "3m", 180000000000ull, 0 },
		{ "2h", 7200000000000ull, 0 },
		{ "250us", 250000ull, 0 },
		{ "7ns", 7, 0 },
		{ ".5", 500000000ull, 0 },
		{ "0", 0, 0 },
		{ "1.001s", 1001000000ull, 0 },		/* not 1000999999 */
		{ "0.3s", 300000000ull, 0 },
		{ "2.675ms", 2675000ull, 0 },
		{ "", 0, -1 },
		{ "s", 0, -1 },
		{ "-1s", 0, -1 },
		{ "1x", 0, -1 },
		{ "1 s", 0, -1 },
		{ "1S", 0, -1 },
		{ "inf", 0, -1 },
		{ "nan", 0, -1 },
		{ "1e30", 0, -1 },	/* beyond 64 bits of ns */
		{ "99999999999h", 0, -1 },
	};
	unsigned int i;
	uint64_t ns;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ns = 12345;
		if (sp_parse_duration(cases[i].s, &ns) != cases[i].ret) {
			printf("#   sp_parse_duration(\"%s\") should %s\n", cases[i].s,
			       cases[i].ret ? "fail" : "succeed");
			tap_case_failed = 1;
		} else if (!cases[i].ret && ns != cases[i].ns) {
			printf("#   sp_parse_duration(\"%s\") = %llu, want %llu\n", cases[i].s,
			       (unsigned long long)ns, (unsigned long long)cases[i].ns);
			tap_case_failed = 1;
		}
	}
	CHECK(sp_parse_duration(NULL, &ns) < 0);
}

/* Every millisecond value with three decimals gives the exact nanoseconds. */
static void test_parse_duration_exact(void)
{
	char s[32];
	unsigned int i, bad = 0;
	uint64_t ns;

	for (i = 0; i < 100000; i++) {
		snprintf(s, sizeof(s), "%u.%03us", i / 1000, i % 1000);
		if (sp_parse_duration(s, &ns) || ns != (uint64_t)i * 1000000)
			bad++;
		snprintf(s, sizeof(s), "%u.%03ums", i / 1000, i % 1000);
		if (sp_parse_duration(s, &ns) || ns != (uint64_t)i * 1000)
			bad++;
	}
	CHECK_EQ_U(bad, 0);
}

static void test_parse_format(void)
{
	enum sp_format f = SP_FORMAT_AUTO;

	CHECK(sp_parse_format("spool", &f) == 0 && f == SP_FORMAT_SPOOL);
	CHECK(sp_parse_format("json", &f) == 0 && f == SP_FORMAT_JSON);
	f = SP_FORMAT_AUTO;
	CHECK(sp_parse_format("JSON", &f) == -1);
	CHECK(sp_parse_format("", &f) == -1);
	CHECK(sp_parse_format("jsonl", &f) == -1);
	CHECK(f == SP_FORMAT_AUTO);
}

static void test_parse_clocks(void)
{
	uint64_t a = sp_now_mono_ns(), b = sp_now_mono_ns();

	CHECK(b >= a);
	CHECK(sp_now_wall_ns() > 1600000000ull * 1000000000ull);	/* after 2020 */
}

/* CPU time grows with work done, not with time slept. */
static void test_parse_cpu_clock(void)
{
	uint64_t a = sp_now_cpu_ns(), t = sp_now_mono_ns();
	volatile uint64_t x = 0;

	/* Spinning moves the CPU clock: 5 ms of it come, however loaded the
	 * machine (the wall-clock cap only ends a clock that never moves). */
	while (sp_now_cpu_ns() - a < 5000000 && sp_now_mono_ns() - t < 30000000000ull)
		x++;
	CHECK(sp_now_cpu_ns() - a >= 5000000);
	a = sp_now_cpu_ns();
	usleep(20000);
	CHECK(sp_now_cpu_ns() - a < 10000000);
}

int main(void)
{
	TAP_RUN(test_parse_uint);
	TAP_RUN(test_parse_uint32);
	TAP_RUN(test_parse_duration);
	TAP_RUN(test_parse_duration_exact);
	TAP_RUN(test_parse_format);
	TAP_RUN(test_parse_clocks);
	TAP_RUN(test_parse_cpu_clock);
	return TAP_DONE();
}
