// SPDX-License-Identifier: MIT
/* Strict parsing of command-line numbers and durations, and clocks. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sp.h"

int sp_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	/* Decimal, or hex after "0x"; never octal: "010" is ten. */
	v = strtoull(s, &end, s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int sp_parse_uint32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (sp_parse_uint(s, min, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int sp_parse_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 },
		{ "h", 3600e9 }, { "", 1e9 },
	};
	double v;
	char *end;
	size_t i;

	if (!s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].suffix)) {
			v *= units[i].mult;
			if (v > 1.8e19)
				return -1;
			*ns = (uint64_t)(v + 0.5);	/* "1.001s" is 1001000000, not ...999 */
			return 0;
		}
	}
	return -1;
}

int sp_parse_format(const char *s, enum sp_format *out)
{
	if (!strcmp(s, "spool"))
		*out = SP_FORMAT_SPOOL;
	else if (!strcmp(s, "json"))
		*out = SP_FORMAT_JSON;
	else
		return -1;
	return 0;
}

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sp_now_mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC) - (uint64_t)sp_timens_offset_ns(false);
}

uint64_t sp_now_wall_ns(void)
{
	return now_ns(CLOCK_REALTIME);
}

uint64_t sp_now_cpu_ns(void)
{
	return now_ns(CLOCK_PROCESS_CPUTIME_ID);
}
