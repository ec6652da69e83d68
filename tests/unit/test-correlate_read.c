// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/correlate/correlate_read.c: a stream sp-correlate has
 * not seen comes out correlated (span records, every event with its span),
 * one it has seen passes as it is, and a stop from take ends the reading.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "correlate.h"
#include "reader.h"

/* A raw stream: a span holding one event; then one sp-correlate wrote. */
static const char raw[] =
	"{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1000,\"clock\":\"monotonic\"}\n"
	"{\"type\":\"process\",\"time\":1000,\"pid\":7,\"ppid\":1,\"comm\":\"ruby\"}\n"
	"{\"type\":\"span_start\",\"time\":2000,\"pid\":7,\"tid\":7,\"runtime\":\"ruby\","
	"\"klass\":\"A\",\"method\":\"f\",\"file\":\"/a.rb\",\"line\":1}\n"
	"{\"type\":\"event\",\"time\":3000,\"pid\":7,\"tid\":7,\"event\":\"path_open\","
	"\"path\":\"/x\",\"flags\":\"0x0\",\"mode\":\"0x0\",\"result\":3}\n"
	"{\"type\":\"span_stop\",\"time\":4000,\"pid\":7,\"tid\":7,\"runtime\":\"ruby\","
	"\"klass\":\"A\",\"method\":\"f\",\"file\":\"/a.rb\",\"line\":1}\n"
	"{\"type\":\"end\",\"time\":5000}\n";

static const char correlated[] =
	"{\"type\":\"header\",\"version\":1,\"flags\":\"0x8\",\"start_mono_ns\":1000,"
	"\"clock\":\"monotonic\"}\n"
	"{\"type\":\"process\",\"time\":1000,\"pid\":8,\"ppid\":1,\"comm\":\"sh\"}\n"
	"{\"type\":\"end\",\"time\":5000}\n";

struct seen {
	unsigned int spans, events, marks, in_span, defs_missing, calls, stop_at;
};

static int count(void *ctx, const struct sp_defs *defs, const struct sp_record *rec)
{
	struct seen *s = ctx;

	s->calls++;
	if (!defs)
		s->defs_missing++;
	if (rec->kind == SP_REC_SPAN)
		s->spans++;
	if (rec->kind == SP_REC_SPAN_START || rec->kind == SP_REC_SPAN_STOP)
		s->marks++;
	if (rec->kind == SP_REC_EVENT) {
		s->events++;
		if (rec->event.span)
			s->in_span++;
	}
	return s->stop_at && s->calls >= s->stop_at ? -1 : 0;
}

static int stream_fd(const char *a, const char *b)
{
	int fd = memfd_create("corr-read", 0);

	if (fd < 0 || write(fd, a, strlen(a)) != (ssize_t)strlen(a) ||
	    (b && write(fd, b, strlen(b)) != (ssize_t)strlen(b)))
		return -1;
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static void test_correlate_read_raw(void)
{
	struct seen s = { 0 };
	struct sp_reader *in = sp_reader_open_fd(stream_fd(raw, NULL), "raw");
	bool here = false;

	CHECK_EQ_U(sp_corr_read(in, NULL, count, &s, &here), 0);
	CHECK(here);
	CHECK(s.spans >= 1);	/* A#f (and maybe a gap span) */
	CHECK_EQ_U(s.events, 1);
	CHECK_EQ_U(s.in_span, 1);
	CHECK_EQ_U(s.defs_missing, 0);
	CHECK_EQ_U(sp_reader_close(in), 0);
}

static void test_correlate_read_correlated(void)
{
	struct seen s = { 0 };
	struct sp_reader *in = sp_reader_open_fd(stream_fd(correlated, NULL), "correlated");
	struct sp_record rec;
	unsigned int plain = 0;
	bool here = false;

	CHECK_EQ_U(sp_corr_read(in, NULL, count, &s, &here), 0);
	CHECK(!here);
	CHECK_EQ_U(s.spans, 0);	/* passed as it is: no gap span made */
	CHECK_EQ_U(sp_reader_close(in), 0);
	/* the records a reader alone gives, one by one */
	in = sp_reader_open_fd(stream_fd(correlated, NULL), "plain");
	while (sp_reader_next(in, &rec) > 0)
		plain++;
	sp_reader_close(in);
	CHECK_EQ_U(s.calls, plain);
}

/* A correlated stream after a raw one: the raw one's spans come out whole
 * before the next stream's records. */
static void test_correlate_read_both(void)
{
	struct seen s = { 0 };
	struct sp_reader *in = sp_reader_open_fd(stream_fd(raw, correlated), "both");

	CHECK_EQ_U(sp_corr_read(in, NULL, count, &s, NULL), 0);
	CHECK(s.spans >= 1);
	CHECK_EQ_U(s.in_span, 1);
	CHECK_EQ_U(s.defs_missing, 0);
	CHECK_EQ_U(sp_reader_close(in), 0);
}

static void test_correlate_read_stop(void)
{
	struct seen s = { .stop_at = 2 };
	struct sp_reader *in = sp_reader_open_fd(stream_fd(correlated, NULL), "stop");

	CHECK(sp_corr_read(in, NULL, count, &s, NULL) < 0);
	CHECK_EQ_U(s.calls, 2);
	sp_reader_close(in);
}

int main(void)
{
	TAP_RUN(test_correlate_read_raw);
	TAP_RUN(test_correlate_read_correlated);
	TAP_RUN(test_correlate_read_both);
	TAP_RUN(test_correlate_read_stop);
	return TAP_DONE();
}
