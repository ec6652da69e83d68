// SPDX-License-Identifier: MIT
/* Unit tests of lib/render/pprof.c (decoded back with zlib and protobuf-c's
 * unpacker) and lib/render/chrometrace.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "defs.h"
#include "escape.h"
#include "export.h"
#include "proto/profile.pb-c.h"
#include "sp.h"
#include "tap.h"

static struct sp_defs *d;

static void def(struct sp_record *r)
{
	const char *why = NULL;

	CHECK(sp_defs_add(d, r, &why) == 0);
}

static uint64_t str(const char *s)
{
	struct sp_record r = { .kind = SP_REC_STRING };

	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = strlen(s);
	def(&r);
	return sp_defs_nstrings(d);
}

/* Module 1 "/bin/app" with a 2-byte build-id; frames 1 (main), 2 (inl inlined
 * into leaf, with lines), 3 unresolved; stacks 1 main, 2 main;2, 3 main;3. */
static void setup(void)
{
	static const uint8_t bid[] = { 0xab, 0x01 };
	struct sp_record r = { .kind = SP_REC_MODULE };
	uint64_t i;

	d = sp_defs_new();
	r.module.pid = 7;
	r.module.start = 0x400000;
	r.module.end = 0x401000;
	r.module.path = str("/bin/app");
	r.module.build_id.p = bid;
	r.module.build_id.len = 2;
	def(&r);
	for (i = 1; i <= 3; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = 1;
		r.frame.rel = 0x10 * i;
		r.frame.addr = 0x400000 + 0x10 * i;
		def(&r);
	}
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SYMBOL;
	r.symbol.frame = 1;
	r.symbol.func = str("main");
	def(&r);
	r.symbol.frame = 2;
	r.symbol.func = str("inl");
	r.symbol.file = str("a.c");
	r.symbol.line = 5;
	def(&r);
	r.symbol.index = 1;
	r.symbol.func = str("leaf");
	r.symbol.line = 9;
	def(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.frame = 1;
	def(&r);
	r.stack.parent = 1;
	r.stack.frame = 2;
	def(&r);
	r.stack.frame = 3;
	def(&r);
}

static Perftools__Profiles__Profile *decode(const char *buf, size_t len)
{
	uint8_t out[1 << 16];
	z_stream zs;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return NULL;
	zs.next_in = (uint8_t *)buf;
	zs.avail_in = len;
	zs.next_out = out;
	zs.avail_out = sizeof(out);
	if (inflate(&zs, Z_FINISH) != Z_STREAM_END) {
		inflateEnd(&zs);
		return NULL;
	}
	inflateEnd(&zs);
	return perftools__profiles__profile__unpack(NULL, sizeof(out) - zs.avail_out, out);
}

static void test_pprof_roundtrip(void)
{
	struct sp_pprof *p = sp_pprof_new(false);
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	Perftools__Profiles__Profile *pr;
	uint64_t n, ns;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *m;

	setup();
	r.sample.pid = 7;
	r.sample.tid = 8;
	r.sample.stack = 2;
	r.sample.time = 100;
	CHECK(sp_pprof_add(p, d, &r, 1000) == 0);
	r.sample.time = 300;
	CHECK(sp_pprof_add(p, d, &r, 1000) == 0);
	r.sample.stack = 3;
	CHECK(sp_pprof_add(p, d, &r, 1000) == 0);
	r.sample.stack = 42;
	CHECK(sp_pprof_add(p, d, &r, 1000) == -1);
	sp_pprof_totals(p, &n, &ns);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(ns, 3000);
	m = open_memstream(&buf, &len);
	CHECK(sp_pprof_write(p, m, 1000, "test") == 0);
	fclose(m);
	CHECK(len > 2 && (uint8_t)buf[0] == 0x1f && (uint8_t)buf[1] == 0x8b);	/* gzip */
	pr = decode(buf, len);
	CHECK(pr != NULL);
	if (pr) {
		CHECK_STR(pr->string_table[0], "");
		CHECK_EQ_U(pr->n_sample_type, 2);
		CHECK_STR(pr->string_table[pr->sample_type[0]->type], "samples");
		CHECK_STR(pr->string_table[pr->sample_type[0]->unit], "count");
		CHECK_STR(pr->string_table[pr->sample_type[1]->type], "cpu");
		CHECK_STR(pr->string_table[pr->sample_type[1]->unit], "nanoseconds");
		CHECK_EQ_U(pr->period, 1000);
		CHECK_EQ_U(pr->duration_nanos, 200);
		CHECK_EQ_U(pr->n_sample, 2);
		/* the first sample: main;leaf(inl), twice: leaf first */
		CHECK_EQ_U(pr->sample[0]->value[0], 2);
		CHECK_EQ_U(pr->sample[0]->value[1], 2000);
		CHECK_EQ_U(pr->sample[0]->n_location_id, 2);
		CHECK_EQ_U(pr->n_mapping, 1);
		CHECK_STR(pr->string_table[pr->mapping[0]->filename], "/bin/app");
		CHECK_STR(pr->string_table[pr->mapping[0]->build_id], "ab01");
		/* 0x400030 has no function: pprof may look the mapping up */
		CHECK(!pr->mapping[0]->has_functions && !pr->mapping[0]->has_inline_frames);
		CHECK(!pr->mapping[0]->has_line_numbers);
		CHECK_STR(pr->string_table[pr->default_sample_type], "cpu");
		CHECK_EQ_U(pr->n_location, 3);
		for (i = 0; i < pr->n_location; i++) {
			Perftools__Profiles__Location *l = pr->location[i];

			CHECK_EQ_U(l->id, i + 1);
			if (l->address == 0x400020) {
				/* innermost first: inl (a.c:5), then leaf (a.c:9) */
				CHECK_EQ_U(l->n_line, 2);
				CHECK_STR(pr->string_table[pr->function[l->line[0]->function_id - 1]->name],
					  "inl");
				CHECK_EQ_U(l->line[0]->line, 5);
				CHECK_STR(pr->string_table[pr->function[l->line[1]->function_id - 1]->name],
					  "leaf");
			}
			if (l->address == 0x400030)
				CHECK_EQ_U(l->n_line, 0);	/* unresolved: address only */
		}
		perftools__profiles__profile__free_unpacked(pr, NULL);
	}
	free(buf);
	sp_pprof_free(p);
	sp_defs_free(d);
}

/* Others' names in the string table: their text form (escape.h), valid
 * UTF-8 as protobuf wants, no control character for a terminal. */
static void test_pprof_strings_text_form(void)
{
	struct sp_pprof *p = sp_pprof_new(false);
	struct sp_record r = { .kind = SP_REC_MODULE };
	Perftools__Profiles__Profile *pr;
	char *buf = NULL;
	size_t len = 0, i, k;
	FILE *m;

	d = sp_defs_new();
	r.module.pid = 7;
	r.module.start = 0x400000;
	r.module.end = 0x401000;
	r.module.path = str("/tmp/\x1b[2J/\xff\xc2\x85lib.so");
	def(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_FRAME;
	r.frame.module = 1;
	r.frame.rel = 0x10;
	r.frame.addr = 0x400010;
	def(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SYMBOL;
	r.symbol.frame = 1;
	r.symbol.func = str("f\r\nFILE path_open \xe2\x86\x92 /etc/ok \xed\xa0\x80 \xe6\xbc\xa2");
	r.symbol.file = str("C:\\x41.c");
	def(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.frame = 1;
	def(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SAMPLE;
	r.sample.pid = 7;
	r.sample.tid = 7;
	r.sample.stack = 1;
	CHECK(sp_pprof_add(p, d, &r, 1000) == 0);
	m = open_memstream(&buf, &len);
	CHECK(sp_pprof_write(p, m, 1000, "sh -c '\x1b]0;x\x07'") == 0);
	fclose(m);
	pr = decode(buf, len);
	CHECK(pr != NULL);
	if (pr) {
		for (i = 0; i < pr->n_string_table; i++) {
			const char *t = pr->string_table[i];

			CHECK(sp_utf8_valid(t, strlen(t)));
			for (k = 0; t[k]; k++)
				CHECK((unsigned char)t[k] >= 0x20 && t[k] != 0x7f);
		}
		CHECK_STR(pr->string_table[pr->mapping[0]->filename],
			  "/tmp/\\x1b[2J/\\xff\\xc2\\x85lib.so");
		CHECK_STR(pr->string_table[pr->function[0]->name],
			  "f\\x0d\\x0aFILE path_open \xe2\x86\x92 /etc/ok \\xed\\xa0\\x80 \xe6\xbc\xa2");
		CHECK_STR(pr->string_table[pr->function[0]->filename], "C:\\x5cx41.c");
		CHECK_STR(pr->string_table[pr->comment[0]], "sh -c '\\x1b]0;x\\x07'");
		perftools__profiles__profile__free_unpacked(pr, NULL);
	}
	free(buf);
	sp_pprof_free(p);
	sp_defs_free(d);
}

/* 100 modules with build-ids, all defined before the first sample: every
 * mapping carries its own (the defs once moved them from the 17th on). */
static void test_pprof_many_modules(void)
{
	struct sp_pprof *p = sp_pprof_new(false);
	struct sp_record r;
	Perftools__Profiles__Profile *pr;
	uint8_t bid[20];
	char hex[41], path[32];
	char *buf = NULL;
	size_t len = 0, i, k, bad = 0;
	FILE *m;

	d = sp_defs_new();
	for (i = 1; i <= 100; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_MODULE;
		snprintf(path, sizeof(path), "/lib/m%zu.so", i);
		r.module.path = str(path);
		r.module.pid = 7;
		r.module.start = 0x1000000 * i;
		r.module.end = r.module.start + 0x10000;
		for (k = 0; k < sizeof(bid); k++)
			bid[k] = (uint8_t)(i + 3 * k);
		r.module.build_id.p = bid;
		r.module.build_id.len = sizeof(bid);
		def(&r);
	}
	for (i = 1; i <= 100; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = i;
		r.frame.rel = 0x10;
		r.frame.addr = 0x1000000 * i + 0x10;
		def(&r);
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_STACK;
		r.stack.frame = i;
		def(&r);
	}
	for (i = 1; i <= 100; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_SAMPLE;
		r.sample.pid = r.sample.tid = 7;
		r.sample.stack = i;
		CHECK(sp_pprof_add(p, d, &r, 1000) == 0);
	}
	m = open_memstream(&buf, &len);
	CHECK(sp_pprof_write(p, m, 1000, "test") == 0);
	fclose(m);
	pr = decode(buf, len);
	CHECK(pr != NULL);
	if (pr) {
		CHECK_EQ_U(pr->n_mapping, 100);
		for (i = 0; i < pr->n_mapping; i++) {
			size_t id;

			if (sscanf(pr->string_table[pr->mapping[i]->filename], "/lib/m%zu.so",
				   &id) != 1) {
				bad++;
				continue;
			}
			for (k = 0; k < sizeof(bid); k++)
				snprintf(hex + 2 * k, 3, "%02x", (uint8_t)(id + 3 * k));
			if (strcmp(pr->string_table[pr->mapping[i]->build_id], hex))
				bad++;
		}
		CHECK_EQ_U(bad, 0);
		perftools__profiles__profile__free_unpacked(pr, NULL);
	}
	free(buf);
	sp_pprof_free(p);
	sp_defs_free(d);
}

/*
 * A Python module's frames: "[python]" is recorded with no range and its
 * frames' addresses are ids. The mapping spans them, and an interpreted
 * function has no system name (pprof would strip "<module>" to nothing as
 * a C++ template's arguments); a native one keeps its name as system name,
 * for pprof to simplify as before.
 */
static void test_pprof_interpreted(void)
{
	struct sp_pprof *p = sp_pprof_new(false);
	struct sp_record r;
	Perftools__Profiles__Profile *pr;
	char *buf = NULL;
	size_t len = 0, i, k, seen = 0;
	FILE *m;

	setup();
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_MODULE;			/* module 2: [python] */
	r.module.pid = 7;
	r.module.path = str("[python]");
	def(&r);
	for (i = 0; i < 2; i++) {		/* frames 4 and 5, at 0x3 and 0x9 */
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = 2;
		r.frame.mode = SP_FRAME_INTERP;
		r.frame.addr = r.frame.rel = i ? 0x9 : 0x3;
		def(&r);
	}
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SYMBOL;
	r.symbol.frame = 4;
	r.symbol.func = str("<module>");
	r.symbol.file = str("app.py");
	r.symbol.line = 4;
	def(&r);
	r.symbol.frame = 5;
	r.symbol.func = str("<genexpr>");
	r.symbol.line = 2;
	def(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;			/* stack 4: main;<module>;<genexpr> */
	r.stack.parent = 1;
	r.stack.frame = 4;
	def(&r);
	r.stack.parent = 4;
	r.stack.frame = 5;
	def(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SAMPLE;
	r.sample.pid = r.sample.tid = 7;
	r.sample.stack = 5;
	CHECK(sp_pprof_add(p, d, &r, 1000) == 0);
	m = open_memstream(&buf, &len);
	CHECK(sp_pprof_write(p, m, 1000, "test") == 0);
	fclose(m);
	pr = decode(buf, len);
	CHECK(pr != NULL);
	if (pr) {
		CHECK_EQ_U(pr->n_mapping, 2);
		for (i = 0; i < pr->n_mapping; i++) {
			Perftools__Profiles__Mapping *x = pr->mapping[i];

			if (strcmp(pr->string_table[x->filename], "[python]"))
				continue;
			seen++;
			CHECK_EQ_U(x->memory_start, 0x3);
			CHECK_EQ_U(x->memory_limit, 0xa);
			for (k = 0; k < pr->n_location; k++)
				if (pr->location[k]->mapping_id == x->id)
					CHECK(pr->location[k]->address >= x->memory_start &&
					      pr->location[k]->address < x->memory_limit);
		}
		CHECK_EQ_U(seen, 1);
		for (i = 0; i < pr->n_function; i++) {
			const Perftools__Profiles__Function *fn = pr->function[i];
			const char *name = pr->string_table[fn->name];

			if (*name == '<')
				CHECK_STR(pr->string_table[fn->system_name], "");
			else
				CHECK_STR(pr->string_table[fn->system_name], name);
		}
		CHECK_EQ_U(pr->n_function, 3);	/* main, <module>, <genexpr> */
		perftools__profiles__profile__free_unpacked(pr, NULL);
	}
	free(buf);
	sp_pprof_free(p);
	sp_defs_free(d);
}

/* A stack deeper than SP_MAX_STACK_DEPTH keeps its innermost frames. */
static void test_pprof_deep_stack(void)
{
	struct sp_pprof *p = sp_pprof_new(false);
	struct sp_record r;
	Perftools__Profiles__Profile *pr;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *m;

	setup();
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.parent = 1;	/* main, then frame 3 100000 times */
	r.stack.frame = 3;
	for (i = 0; i < 100000; i++) {
		def(&r);
		r.stack.parent = sp_defs_nstacks(d);
	}
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SAMPLE;
	r.sample.pid = r.sample.tid = 7;
	r.sample.stack = sp_defs_nstacks(d);
	CHECK(sp_pprof_add(p, d, &r, 1000) == 0);
	m = open_memstream(&buf, &len);
	CHECK(sp_pprof_write(p, m, 1000, "test") == 0);
	fclose(m);
	pr = decode(buf, len);
	CHECK(pr != NULL);
	if (pr) {
		CHECK_EQ_U(pr->n_sample, 1);
		CHECK_EQ_U(pr->sample[0]->n_location_id, SP_MAX_STACK_DEPTH);
		CHECK_EQ_U(pr->n_location, 1);	/* frame 3 only: main is cut */
		perftools__profiles__profile__free_unpacked(pr, NULL);
	}
	free(buf);
	sp_pprof_free(p);
	sp_defs_free(d);
}

/* A Chrome trace into m of a correlated stream that started at 1 ms. */
static struct sp_chrome *chrome_start(FILE *m)
{
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct sp_chrome *c;

	d = sp_defs_new();
	r.header.start_mono_ns = 1000000;
	r.header.flags = SP_HDR_CORRELATED;
	def(&r);
	c = sp_chrome_new(m);
	sp_chrome_add(c, d, &r);
	return c;
}

static void test_chrometrace_spans_and_events(void)
{
	struct sp_record r = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	struct sp_chrome *c = chrome_start(m);

	r.kind = SP_REC_SPAN;
	r.span.id = 1;
	r.span.pid = 3;
	r.span.tid = 4;
	r.span.runtime = SP_RT_RUBY;
	r.span.klass = str("A\"B");
	r.span.method = str("m");
	r.span.start = 1001500;
	r.span.stop = 1003000;
	sp_chrome_add(c, d, &r);
	r.span.start = 1003000;	/* after it, still open */
	r.span.stop = 0;
	sp_chrome_add(c, d, &r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SPAN_START;	/* ignored: spans come as span records */
	sp_chrome_add(c, d, &r);
	CHECK(sp_chrome_finish(c) == 0);
	fclose(m);
	CHECK(strstr(buf, "{\"ph\":\"X\",\"cat\":\"span\",\"name\":\"A\\\"B#m\",\"pid\":3,\"tid\":4,"
			  "\"ts\":1.500,\"dur\":1.500,"));
	CHECK(strstr(buf, "{\"ph\":\"B\",\"cat\":\"span\",\"name\":\"A\\\"B#m\""));
	CHECK(!strstr(buf, "\"ph\":\"E\""));
	CHECK(len > 4 && !strcmp(buf + len - 4, "\n]}\n"));
	free(buf);
	sp_defs_free(d);
}

static void chrome_span(struct sp_chrome *c, uint64_t tid, uint64_t method, uint64_t start,
			uint64_t stop)
{
	struct sp_record r = { .kind = SP_REC_SPAN };

	r.span = (struct sp_span){ .pid = 3, .tid = tid, .method = method, .start = start,
		.stop = stop, .runtime = SP_RT_RUBY };
	sp_chrome_add(c, d, &r);
}

/*
 * A thread's slices nest: a span that starts inside another and ends after
 * it ends with it. A Ruby fiber's spans (begun while it ran) are on a track
 * of their own, named for it, and not cut by the thread's.
 */
static void test_chrometrace_nesting_and_fibers(void)
{
	struct sp_record r = { .kind = SP_REC_FIBER_SWITCH };
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	struct sp_chrome *c = chrome_start(m);
	uint64_t a = str("a"), b = str("b");

	chrome_span(c, 4, a, 1001000, 1004000);
	chrome_span(c, 4, b, 1002000, 1006000);	/* overlaps a: cut at its end */
	r.fiber_switch = (struct sp_fiber_switch){ .time = 1010000, .pid = 3, .tid = 4,
		.to = 0xf0, .flags = SP_FIBER_NEW };
	sp_chrome_add(c, d, &r);
	r.fiber_switch = (struct sp_fiber_switch){ .time = 1012000, .pid = 3, .tid = 4,
		.from = 0xf0 };
	sp_chrome_add(c, d, &r);
	chrome_span(c, 4, a, 1009000, 1013000);		/* the resumer, on the thread */
	chrome_span(c, 4, b, 1011000, 1020000);		/* the fiber's, open past it */
	CHECK(sp_chrome_finish(c) == 0);
	fclose(m);
	CHECK(strstr(buf, "\"name\":\"b\",\"pid\":3,\"tid\":4,\"ts\":2.000,\"dur\":2.000,"));
	CHECK(strstr(buf, "\"name\":\"a\",\"pid\":3,\"tid\":4,\"ts\":9.000,\"dur\":4.000,"));
	CHECK(strstr(buf, "\"name\":\"b\",\"pid\":3,\"tid\":1073741825,\"ts\":11.000,"
			  "\"dur\":9.000,"));
	CHECK(strstr(buf, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":3,\"tid\":1073741825,"
			  "\"args\":{\"name\":\"fiber 0xf0 of 4\"}}"));
	free(buf);
	sp_defs_free(d);
}

int main(void)
{
	TAP_RUN(test_pprof_roundtrip);
	TAP_RUN(test_pprof_many_modules);
	TAP_RUN(test_pprof_deep_stack);
	TAP_RUN(test_pprof_interpreted);
	TAP_RUN(test_pprof_strings_text_form);
	TAP_RUN(test_chrometrace_spans_and_events);
	TAP_RUN(test_chrometrace_nesting_and_fibers);
	return TAP_DONE();
}
