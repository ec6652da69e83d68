// SPDX-License-Identifier: MIT
/* Unit tests for lib/record/spans_canary.c: reading a canary recording. */
#include <string.h>
#include <unistd.h>

#include "records.h"
#include "spans_canary.h"
#include "tap.h"

/* Scan the JSON lines in input for want; the reader's status in *status. */
static int scan(const char *input, const char *want, bool audit, struct sp_canary_result *res)
{
	int fd = rec_memfd(), rc;
	struct sp_reader *r;

	CHECK_EQ_U(write(fd, input, strlen(input)), strlen(input));
	lseek(fd, 0, SEEK_SET);
	r = sp_reader_open_fd(fd, "canary.jsonl");
	CHECK(r != NULL);
	if (!r)
		return -1;
	rc = sp_canary_scan(r, want, audit, res);
	sp_reader_close(r);
	close(fd);
	return rc;
}

/* The Ruby canary as sp-record writes it: its method seen once among
 * Ruby's own start-up methods, the runtime, each probe's hits. */
static void test_spans_canary_scan_seen(void)
{
	static const char in[] =
		"{\"type\":\"header\",\"version\":1,\"clock\":\"monotonic\"}\n"
		"{\"type\":\"runtime\",\"time\":5,\"pid\":7,\"runtime\":\"ruby\",\"version\":\"3.1.2\","
		"\"library\":\"/usr/lib/libruby.so\",\"mode\":\"method\"}\n"
		"{\"type\":\"span_start\",\"time\":6,\"pid\":7,\"tid\":7,\"runtime\":\"ruby\","
		"\"klass\":\"Fiddle\",\"method\":\"last_error=\",\"file\":\"fiddle.rb\",\"line\":41}\n"
		"{\"type\":\"span_start\",\"time\":7,\"pid\":7,\"tid\":7,\"runtime\":\"ruby\","
		"\"klass\":\"Object\",\"method\":\"stackpulse_canary\",\"file\":\"-e\",\"line\":1}\n"
		"{\"type\":\"probe\",\"time\":9,\"pid\":7,\"name\":\"ruby:method__entry\",\"hits\":2,"
		"\"verdict\":\"\"}\n"
		"{\"type\":\"probe\",\"time\":9,\"pid\":7,\"name\":\"ruby:method__return\",\"hits\":18,"
		"\"verdict\":\"\"}\n";
	struct sp_canary_result res;

	CHECK(scan(in, SP_CANARY_METHOD, false, &res) == 0);
	CHECK_EQ_U(res.seen, 1);
	CHECK_STR(res.runtime, "ruby 3.1.2, /usr/lib/libruby.so");
	CHECK_STR(res.probes, "ruby:method__entry 2, ruby:method__return 18");
	CHECK_STR(res.verdict, "");
	/* another method is not the canary's */
	CHECK(scan(in, "run", false, &res) == 0);
	CHECK_EQ_U(res.seen, 0);
}

/* A dead probe: no span of the method, the first verdict kept. */
static void test_spans_canary_scan_dead(void)
{
	static const char in[] =
		"{\"type\":\"header\",\"version\":1,\"clock\":\"monotonic\"}\n"
		"{\"type\":\"probe\",\"time\":9,\"pid\":7,\"name\":\"python:function__entry\",\"hits\":5,"
		"\"verdict\":\"5 hits while python:function__return 2484: function entries not active\"}\n"
		"{\"type\":\"probe\",\"time\":9,\"pid\":7,\"name\":\"python:function__return\","
		"\"hits\":2484,\"verdict\":\"\"}\n"
		"{\"type\":\"span_stop\",\"time\":8,\"pid\":7,\"tid\":7,\"runtime\":\"python\","
		"\"method\":\"stackpulse_canary\",\"file\":\"<string>\",\"line\":1}\n";
	struct sp_canary_result res;

	CHECK(scan(in, SP_CANARY_METHOD, false, &res) == 0);
	CHECK_EQ_U(res.seen, 0);	/* a stop is no start */
	CHECK_STR(res.runtime, "");
	CHECK_STR(res.verdict, "python:function__entry: 5 hits while python:function__return 2484: "
		  "function entries not active");
	CHECK_STR(res.probes, "python:function__entry 5, python:function__return 2484");
}

/* python-audit: audit events by name, span starts do not count. */
static void test_spans_canary_scan_audit(void)
{
	static const char in[] =
		"{\"type\":\"header\",\"version\":1,\"clock\":\"monotonic\"}\n"
		"{\"type\":\"event\",\"time\":3,\"pid\":7,\"tid\":7,\"event\":\"audit\",\"name\":\"import\","
		"\"args\":\"os\",\"runtime\":2}\n"
		"{\"type\":\"event\",\"time\":4,\"pid\":7,\"tid\":7,\"event\":\"audit\",\"name\":\"open\","
		"\"args\":\"/dev/null\",\"runtime\":2}\n"
		"{\"type\":\"span_start\",\"time\":6,\"pid\":7,\"tid\":7,\"runtime\":\"python\","
		"\"method\":\"open\",\"file\":\"x.py\",\"line\":1}\n";
	struct sp_canary_result res;

	CHECK(scan(in, "open", true, &res) == 0);
	CHECK_EQ_U(res.seen, 1);
	CHECK(scan(in, "open", false, &res) == 0);
	CHECK_EQ_U(res.seen, 1);	/* the span start, not the event */
	CHECK(scan(in, "exec", true, &res) == 0);
	CHECK_EQ_U(res.seen, 0);
}

/* Many probes: the list is cut, never overflows. */
static void test_spans_canary_scan_long(void)
{
	char in[65536], *p = in;
	struct sp_canary_result res;
	int i;

	p += sprintf(p, "{\"type\":\"header\",\"version\":1,\"clock\":\"monotonic\"}\n");
	for (i = 0; i < 200; i++)
		p += sprintf(p, "{\"type\":\"probe\",\"time\":9,\"pid\":7,\"name\":\"uprobe:f%03d\","
			     "\"hits\":%d,\"verdict\":\"0 hits\"}\n", i, i);
	CHECK(scan(in, SP_CANARY_METHOD, false, &res) == 0);
	CHECK(strlen(res.probes) < sizeof(res.probes));
	CHECK(!strncmp(res.probes, "uprobe:f000 0, uprobe:f001 1, ", 30));
	CHECK_STR(res.verdict, "uprobe:f000: 0 hits");
}

int main(void)
{
	TAP_RUN(test_spans_canary_scan_seen);
	TAP_RUN(test_spans_canary_scan_dead);
	TAP_RUN(test_spans_canary_scan_audit);
	TAP_RUN(test_spans_canary_scan_long);
	return TAP_DONE();
}
