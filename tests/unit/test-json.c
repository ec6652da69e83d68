// SPDX-License-Identifier: MIT
/* Unit tests of JSON lines in and out (lib/stream/json_in.c, lib/stream/json_out.c). */
#include <inttypes.h>

#include "stream/json_in.h"
#include "stream/json_out.h"
#include "records.h"
#include "reader.h"
#include "tap.h"
#include "writer.h"

/* Parse one line into d; returns the number of records it yields (-1 on error). */
static int parse(struct sp_json_in *j, struct sp_defs *d, const char *line,
		 const struct sp_record **last, const char **why)
{
	const struct sp_record *q;
	int n = 0;

	*why = NULL;
	if (sp_json_in_parse(j, d, line, strlen(line), why))
		return -1;
	while ((q = sp_json_in_next(j))) {
		*last = q;
		n++;
	}
	return n;
}

static void test_json_every_kind_render_parse(void)
{
	struct sp_defs *out = sp_defs_new(), *in = sp_defs_new();
	struct sp_json_in *j = sp_json_in_new();
	struct sp_buf b = SP_BUF_INIT;
	struct sp_record rec;
	const struct sp_record *got = NULL;
	const char *why;
	unsigned int k, ev;
	int n;

	/* Strings 1..3, module 1, frame 1, stack 1 defined on both sides. */
	static const char *const defs[] = {
		"{\"type\":\"string\",\"value\":\"a\"}",
		"{\"type\":\"string\",\"value\":\"b\"}",
		"{\"type\":\"string\",\"value\":\"c\"}",
		"{\"type\":\"module\",\"pid\":1,\"start\":\"0x1000\",\"end\":\"0x2000\",\"path\":\"a\"}",
		"{\"type\":\"frame\",\"module\":1,\"rel\":\"0x10\",\"addr\":\"0x1010\"}",
		"{\"type\":\"stack\",\"parent\":0,\"frame\":1}",
	};
	for (k = 0; k < sizeof(defs) / sizeof(defs[0]); k++) {
		CHECK_EQ_U(parse(j, in, defs[k], &got, &why), 1);
		CHECK_EQ_U(sp_defs_add(out, got, &why), 0);
	}
	for (k = SP_REC_STRING; k < SP_REC_KIND_MAX + SP_EV_KIND_MAX - 1; k++) {
		unsigned int kind = k < SP_REC_KIND_MAX ? k : SP_REC_EVENT;

		rec_make(&rec, kind, k);
		if (k >= SP_REC_KIND_MAX) {
			ev = k - SP_REC_KIND_MAX + 1;
			memset(rec.event.field, 0, sizeof(rec.event.field));
			rec_fill_event(&rec, ev, ev);
		}
		sp_buf_reset(&b);
		sp_json_render(&b, out, &rec, 0);
		CHECK(b.p[b.len] == 0);	/* buf.h: always NUL-terminated */
		CHECK(b.len > 0 && b.p[b.len - 1] == '\n');
		CHECK(memchr(b.p, '\n', b.len) == b.p + b.len - 1);	/* one line */
		CHECK_EQ_U(sp_defs_add(out, &rec, &why), 0);
		n = parse(j, in, b.p, &got, &why);
		if (n != 1) {
			printf("#   %.*s#   -> %d records: %s\n", (int)b.len, b.p, n, why ?: "");
			tap_case_failed = 1;
			continue;
		}
		if (!rec_same(&rec, got, &why)) {
			printf("#   %.*s#   field '%s' differs\n", (int)b.len, b.p, why);
			tap_case_failed = 1;
		}
	}
	sp_buf_release(&b);
	sp_json_in_free(j);
	sp_defs_free(in);
	sp_defs_free(out);
}

/* Render rec against d and compare with the expected line. */
static void expect_line(const struct sp_defs *d, const struct sp_record *rec, unsigned int flags,
			const char *want)
{
	struct sp_buf b = SP_BUF_INIT;

	sp_json_render(&b, d, rec, flags);
	CHECK_STR(sp_buf_str(&b), want);
	sp_buf_release(&b);
}

static void test_json_rendering(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_json_in *j = sp_json_in_new();
	const struct sp_record *got;
	struct sp_record r;
	const char *why;
	static const char *const lines[] = {
		"{\"type\":\"string\",\"value\":\"/bin/app\"}",
		"{\"type\":\"module\",\"pid\":42,\"start\":\"0x400000\",\"end\":\"0x500000\",\"path\":\"/bin/app\"}",
		"{\"type\":\"frame\",\"module\":1,\"rel\":\"0x1000\",\"addr\":\"0x401000\"}",
		"{\"type\":\"frame\",\"module\":0,\"rel\":\"0xffffffff81000010\",\"addr\":\"0xffffffff81000010\",\"mode\":\"kernel\"}",
		"{\"type\":\"stack\",\"frame\":1}",
		"{\"type\":\"stack\",\"parent\":1,\"frame\":2}",
		"{\"type\":\"string\",\"value\":\"main\"}",
		"{\"type\":\"symbol\",\"frame\":1,\"func\":\"main\"}",
	};
	unsigned int i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		CHECK_EQ_U(parse(j, d, lines[i], &got, &why), 1);
	/* A sample: enums by name, frames inline leaf first, symbols inline. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SAMPLE;
	r.sample.time = 5;
	r.sample.pid = r.sample.tid = 42;
	r.sample.stack = 2;
	r.sample.weight = 1;
	r.sample.unwind = SP_UNWIND_COMPLETE;
	expect_line(d, &r, 0, "{\"type\":\"sample\",\"time\":5,\"pid\":42,\"tid\":42,\"cpu\":0,"
		    "\"stack\":2,\"weight\":1,\"unwind\":\"complete\",\"frames\":["
		    "{\"frame\":2,\"addr\":\"0xffffffff81000010\",\"mode\":\"kernel\"},"
		    "{\"frame\":1,\"addr\":\"0x401000\",\"module\":\"/bin/app\",\"rel\":\"0x1000\","
		    "\"mode\":\"user\",\"func\":\"main\"}]}\n");
	expect_line(d, &r, SP_JSON_NO_INLINE_FRAMES,
		    "{\"type\":\"sample\",\"time\":5,\"pid\":42,\"tid\":42,\"cpu\":0,"
		    "\"stack\":2,\"weight\":1,\"unwind\":\"complete\"}\n");
	/* An enum value past its names is a number; so is a big value as hex. */
	r.sample.unwind = 99;
	r.sample.weight = UINT64_MAX;
	expect_line(d, &r, SP_JSON_NO_INLINE_FRAMES,
		    "{\"type\":\"sample\",\"time\":5,\"pid\":42,\"tid\":42,\"cpu\":0,"
		    "\"stack\":2,\"weight\":\"0xffffffffffffffff\",\"unwind\":99}\n");
	/* Escapes; invalid UTF-8 in a string record goes out as hex. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STRING;
	r.string.id = 9;
	r.string.value.p = (const uint8_t *)"a\"\\\n\x01\xc3\xa9";
	r.string.value.len = 7;
	expect_line(d, &r, 0, "{\"type\":\"string\",\"id\":9,\"value\":\"a\\\"\\\\\\n\\u0001\xc3\xa9\"}\n");
	r.string.value.p = (const uint8_t *)"\xff\x00z";
	r.string.value.len = 3;
	expect_line(d, &r, 0, "{\"type\":\"string\",\"id\":9,\"value_hex\":\"ff007a\"}\n");
	/* An event: its name, and its values whether 0 or not. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_EVENT;
	r.event.time = 1;
	r.event.kind = SP_EV_SOCK_CONNECT;
	r.event.nfields = 4;
	r.event.field[0].u = 2;
	r.event.field[1].b.p = (const uint8_t *)"\x7f\x00\x00\x01";
	r.event.field[1].b.len = 4;
	r.event.field[2].u = 80;
	r.event.field[3].u = (uint64_t)-111;
	expect_line(d, &r, 0, "{\"type\":\"event\",\"time\":1,\"pid\":0,\"tid\":0,\"event\":\"sock_connect\","
		    "\"family\":2,\"addr\":\"127.0.0.1\",\"port\":80,\"result\":-111}\n");
	/* Unknown kinds and a newer writer's bytes, as hex. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_KIND_MAX;
	r.unknown.kind = 300;
	r.unknown.raw.p = (const uint8_t *)"\x01\xab";
	r.unknown.raw.len = 2;
	expect_line(d, &r, 0, "{\"type\":\"unknown\",\"kind\":300,\"raw\":\"01ab\"}\n");
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_MODULE_END;
	r.module_end.time = 3;
	r.module_end.module = 1;
	r.extra.p = (const uint8_t *)"\x05";
	r.extra.len = 1;
	expect_line(d, &r, 0, "{\"type\":\"module_end\",\"time\":3,\"module\":1,\"extra\":\"05\"}\n");
	sp_json_in_free(j);
	sp_defs_free(d);
}

/* A number as JSON holds it: decimal up to INT64_MAX, else "0x...". */
static void json_u(char *buf, size_t size, uint64_t v)
{
	if (v > INT64_MAX)
		snprintf(buf, size, "\"0x%" PRIx64 "\"", v);
	else
		snprintf(buf, size, "%" PRIu64, v);
}

/* Decimal and hex numbers of every width, as printf writes them. */
static void test_json_numbers(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_record r;
	char want[256], u1[24], u2[24];
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < 70; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.id = r.frame.module = r.frame.rel = v;
		r.frame.addr = ~v;
		r.frame.pid = v | 1;
		json_u(u1, sizeof(u1), v);
		json_u(u2, sizeof(u2), v | 1);
		snprintf(want, sizeof(want), "{\"type\":\"frame\",\"id\":%s,\"module\":%s,"
			 "\"rel\":\"0x%" PRIx64 "\",\"addr\":\"0x%" PRIx64 "\",\"pid\":%s}\n",
			 u1, u1, v, ~v, u2);
		expect_line(d, &r, 0, want);
		expect_line(d, &r, SP_JSON_GENERIC, want);
		/* 9, 99, ... then 0xf, 0xff, ... then a mix */
		v = i < 20 ? v * 10 + 9 : i < 40 ? (v << 4) | 15 : v * 7 + 3;
		if (i == 19 || i == 39)
			v = 0;
	}
	sp_defs_free(d);
}

static void test_json_strings_that_json_cannot_name(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_json_in *j = sp_json_in_new();
	const struct sp_record *got = NULL;
	struct sp_record r;
	const char *why;

	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value\":\"sh\"}", &got, &why), 1);
	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value\":\"sh\"}", &got, &why), 1);
	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value_hex\":\"ff\"}", &got, &why), 1);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_PROCESS;
	r.process.pid = 1;
	r.process.comm = 2;	/* a second "sh": by id */
	r.process.exe = 3;	/* not UTF-8: by id */
	r.process.args = 1;	/* the first "sh": by text */
	expect_line(d, &r, 0, "{\"type\":\"process\",\"time\":0,\"pid\":1,\"ppid\":0,"
		    "\"comm\":2,\"exe\":3,\"args\":\"sh\"}\n");
	CHECK_EQ_U(parse(j, d, "{\"type\":\"process\",\"pid\":1,\"comm\":2,\"exe\":3,\"args\":\"sh\"}",
			 &got, &why), 1);
	CHECK(got && got->process.comm == 2 && got->process.exe == 3 && got->process.args == 1);
	/* A string id that is not defined is an error. */
	CHECK(parse(j, d, "{\"type\":\"process\",\"pid\":1,\"comm\":4}", &got, &why) < 0);
	CHECK(why && strstr(why, "undefined string"));
	/* Text with NUL inside (inline frames show module paths as text) is
	 * still a line the reader takes. */
	CHECK_EQ_U(parse(j, d, "{\"type\":\"process\",\"pid\":1,\"comm\":3,"
			 "\"note\":\"a\\u0000b\"}", &got, &why), 1);
	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value\":\"a\\u0000b\"}", &got, &why), 1);
	CHECK(got && got->string.value.len == 3 && !memcmp(got->string.value.p, "a\0b", 3));
	/* Header text that is not UTF-8 goes out as <name>_hex and comes back. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_HEADER;
	r.header.version = 1;
	r.header.command.p = (const uint8_t *)"ls \xff";
	r.header.command.len = 4;
	expect_line(d, &r, 0, "{\"type\":\"header\",\"version\":1,\"start_wall_ns\":0,"
		    "\"start_mono_ns\":0,\"command_hex\":\"6c7320ff\"}\n");
	CHECK_EQ_U(parse(j, d, "{\"type\":\"header\",\"command_hex\":\"6c7320ff\"}", &got, &why), 1);
	CHECK(got && got->header.command.len == 4 && !memcmp(got->header.command.p, "ls \xff", 4));
	sp_json_in_free(j);
	sp_defs_free(d);
}

static void test_json_bad_lines(void)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "{\"type\":\"sample\",\"pid\":", "invalid JSON" },
		{ "[1,2]", "not a JSON object" },
		{ "{\"pid\":1}", "no \"type\"" },
		{ "{\"type\":\"nonsense\"}", "unknown record type 'nonsense'" },
		{ "{\"type\":\"sample\",\"pid\":\"abc\"}", "field 'pid'" },
		{ "{\"type\":\"sample\",\"pid\":-1}", "field 'pid' must not be negative" },
		{ "{\"type\":\"sample\",\"pid\":1.5}", "field 'pid'" },
		{ "{\"type\":\"sample\",\"unwind\":\"sideways\"}", "field 'unwind'" },
		{ "{\"type\":\"sample\",\"stack\":7}", "undefined stack" },
		{ "{\"type\":\"process\",\"comm\":[]}", "field 'comm'" },
		{ "{\"type\":\"module\",\"build_id\":\"abc\"}", "field 'build_id'" },
		{ "{\"type\":\"module\",\"build_id\":\"zz\"}", "field 'build_id'" },
		{ "{\"type\":\"event\",\"event\":\"no_such_event\"}", "field 'event'" },
		{ "{\"type\":\"event\",\"event\":\"proc_exit\",\"code\":\"x\"}", "field 'code'" },
		{ "{\"type\":\"string\"}", "\"value\"" },
		{ "{\"type\":\"string\",\"id\":5,\"value\":\"x\"}", "out of order" },
		{ "{\"type\":\"frame\",\"id\":3}", "out of order" },
		{ "{\"type\":\"unknown\",\"kind\":8,\"raw\":\"\"}", "known kind" },
		{ "{\"type\":\"sample\",\"pid\":1,\"pid\":2}", "duplicate" },
		{ "{\"type\":\"sample\",\"frames\":{}}", "frames" },
	};
	struct sp_defs *d = sp_defs_new();
	struct sp_json_in *j = sp_json_in_new();
	const struct sp_record *got;
	const char *why;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = parse(j, d, bad[i].line, &got, &why);

		if (n >= 0 || !why || !strstr(why, bad[i].why)) {
			printf("#   %s -> %d, '%s' (want '%s')\n", bad[i].line, n, why ?: "",
			       bad[i].why);
			tap_case_failed = 1;
		}
	}
	/* Nothing was defined by the failed lines. */
	CHECK_EQ_U(sp_defs_nstrings(d), 0);
	CHECK_EQ_U(sp_defs_nframes(d), 0);
	sp_json_in_free(j);
	sp_defs_free(d);
}

static void test_json_missing_fields_and_defaults(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_json_in *j = sp_json_in_new();
	const struct sp_record *got = NULL;
	const char *why;

	CHECK_EQ_U(parse(j, d, "{\"type\":\"sample\",\"time\":9}", &got, &why), 1);
	CHECK(got && got->kind == SP_REC_SAMPLE && got->sample.time == 9 && got->sample.pid == 0 &&
	      got->sample.stack == 0 && got->sample.cpu == 0);
	CHECK(got && got->sample.weight == 1);	/* documented default */
	CHECK_EQ_U(parse(j, d, "{\"type\":\"sample\",\"weight\":0,\"pid\":null}", &got, &why), 1);
	CHECK(got && got->sample.weight == 0 && got->sample.pid == 0);
	/* Members the schema does not know are ignored. */
	CHECK_EQ_U(parse(j, d, "{\"type\":\"thread_end\",\"tid\":3,\"comment\":\"x\"}", &got, &why), 1);
	CHECK(got && got->thread_end.tid == 3);
	/* Numbers as "0x..." strings and enums as numbers are accepted too. */
	CHECK_EQ_U(parse(j, d, "{\"type\":\"lost\",\"count\":\"0x10\",\"what\":1}", &got, &why), 1);
	CHECK(got && got->lost.count == 16 && got->lost.what == SP_LOST_EVENTS);
	sp_json_in_free(j);
	sp_defs_free(d);
}

/* A sample written by hand with its frames: frames and stacks are defined. */
static void test_json_sample_from_frames(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_json_in *j = sp_json_in_new();
	const struct sp_record *got = NULL;
	const char *why;
	uint64_t frames[8];

	CHECK_EQ_U(parse(j, d, "{\"type\":\"sample\",\"pid\":5,\"frames\":["
			 "{\"addr\":\"0x30\",\"func\":\"leaf\",\"file\":\"a.c\",\"line\":3},"
			 "{\"addr\":\"0x20\",\"func\":\"mid\"},{\"addr\":\"0x10\",\"func\":\"main\"}]}",
			 &got, &why), 3 + 3 + 3 + 4 + 1);	/* frames, symbols, stacks, strings, sample */
	CHECK(got && got->kind == SP_REC_SAMPLE && got->sample.stack == 3);
	CHECK_EQ_U(sp_defs_stack_frames(d, 3, frames, 8), 3);
	CHECK(sp_defs_frame(d, frames[0]) && sp_defs_frame(d, frames[0])->addr == 0x30);
	CHECK(sp_defs_frame(d, frames[2]) && sp_defs_frame(d, frames[2])->addr == 0x10);
	/* The same caller chain with another leaf: one frame, symbol, string, stack more. */
	CHECK_EQ_U(parse(j, d, "{\"type\":\"sample\",\"pid\":5,\"frames\":["
			 "{\"addr\":\"0x31\",\"func\":\"other\"},"
			 "{\"addr\":\"0x20\",\"func\":\"mid\"},{\"addr\":\"0x10\",\"func\":\"main\"}]}",
			 &got, &why), 5);
	CHECK(got && got->sample.stack == 4);
	CHECK_EQ_U(sp_defs_nstacks(d), 4);
	CHECK(sp_defs_stack(d, 4) && sp_defs_stack(d, 4)->parent == 2);
	/* Frames by id must exist. */
	CHECK(parse(j, d, "{\"type\":\"sample\",\"frames\":[{\"frame\":99}]}", &got, &why) < 0);
	sp_json_in_free(j);
	sp_defs_free(d);
}

/* The reader skips bad lines, names their line numbers, and goes on. */
static void test_json_reader_skips_bad_lines(void)
{
	static const char input[] =
		"{\"type\":\"string\",\"value\":\"x\"}\n"
		"\n"
		"{\"type\":\"sample\",\"pid\":\"no\"}\n"
		"   \r\n"
		"not json\n"
		"{\"type\":\"process\",\"pid\":3,\"comm\":\"x\"}";	/* no final newline */
	int fd = rec_memfd(), saved = dup(2), err = rec_memfd();
	struct sp_reader *r;
	struct sp_record rec;
	unsigned int kinds[8], pos[8], n = 0;
	size_t len;
	char *msgs;

	CHECK_EQ_U(write(fd, input, sizeof(input) - 1), sizeof(input) - 1);
	lseek(fd, 0, SEEK_SET);
	dup2(err, 2);
	r = sp_reader_open_fd(fd, "in.jsonl");
	while (sp_reader_next(r, &rec) > 0 && n < 8) {
		pos[n] = rec.pos;
		kinds[n++] = rec.kind;
	}
	CHECK_EQ_U(sp_reader_close(r), SP_EXIT_PARTIAL);
	dup2(saved, 2);
	close(saved);
	CHECK_EQ_U(n, 2);	/* "x" is defined already: no second string */
	CHECK_EQ_U(kinds[0], SP_REC_STRING);
	CHECK_EQ_U(pos[0], 1);
	CHECK_EQ_U(kinds[1], SP_REC_PROCESS);
	CHECK_EQ_U(pos[1], 6);
	msgs = rec_slurp(err, &len);
	CHECK(strstr(msgs, "in.jsonl:3: field 'pid'") != NULL);
	CHECK(strstr(msgs, "in.jsonl:5: invalid JSON") != NULL);
	CHECK(!strstr(msgs, "in.jsonl:2:") && !strstr(msgs, "in.jsonl:4:"));
	free(msgs);
	close(err);
	close(fd);
}

/* The unrolled symbol and frame renderers write what the schema-driven one does. */
/* Whether r renders differently unrolled and through the schema walk
 * (shown when show); a and g are reused buffers. */
static int render_differs(struct sp_defs *d, const struct sp_record *r, struct sp_buf *a,
			  struct sp_buf *g, bool show)
{
	sp_buf_reset(a);
	sp_buf_reset(g);
	sp_json_render(a, d, r, 0);
	sp_json_render(g, d, r, SP_JSON_GENERIC);
	if (a->len == g->len && !memcmp(a->p, g->p, a->len))
		return 0;
	if (show)
		printf("#   %.*s#   generic: %.*s", (int)a->len, a->p, (int)g->len, g->p);
	return 1;
}

static void test_json_unrolled_renderers(void)
{
	static const uint64_t vals[] = { 0, 1, 9, 10, 12345, INT64_MAX, (uint64_t)INT64_MAX + 1,
					 UINT64_MAX };
	static const uint8_t extra[] = { 0xab, 0x01 };
	struct sp_defs *d = sp_defs_new();
	struct sp_json_in *j = sp_json_in_new();
	struct sp_buf a = SP_BUF_INIT, g = SP_BUF_INIT;
	const struct sp_record *got;
	struct sp_record r;
	unsigned int i, k, bad = 0;
	const char *why;
	uint64_t x = 88172645463325252ull;

	/* Strings 1-4: text, text, a second "a" (by id), not UTF-8 (by id). */
	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value\":\"a\"}", &got, &why), 1);
	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value\":\"q\\\"\\u0001\"}", &got, &why),
		   1);
	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value\":\"a\"}", &got, &why), 1);
	CHECK_EQ_U(parse(j, d, "{\"type\":\"string\",\"value_hex\":\"ff\"}", &got, &why), 1);
	for (i = 0; i < 20000; i++) {
		uint64_t *f;

		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_SYMBOL;
		f = &r.symbol.frame;
		for (k = 0; k < 9; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			f[k] = (k == 2 || k == 3) ? x % 5 : (k == 7 ? x % 12 : vals[x % 8]);
		}
		if (i % 7 == 0) {
			r.extra.p = extra;
			r.extra.len = sizeof(extra);
		}
		bad += render_differs(d, &r, &a, &g, !bad);
		/* The same numbers as a frame record. */
		r.kind = SP_REC_FRAME;
		r.frame.mode = r.symbol.status % 6;
		bad += render_differs(d, &r, &a, &g, !bad);
	}
	CHECK_EQ_U(bad, 0);
	sp_buf_release(&a);
	sp_buf_release(&g);
	sp_json_in_free(j);
	sp_defs_free(d);
}

int main(void)
{
	TAP_RUN(test_json_every_kind_render_parse);
	TAP_RUN(test_json_rendering);
	TAP_RUN(test_json_numbers);
	TAP_RUN(test_json_strings_that_json_cannot_name);
	TAP_RUN(test_json_bad_lines);
	TAP_RUN(test_json_missing_fields_and_defaults);
	TAP_RUN(test_json_sample_from_frames);
	TAP_RUN(test_json_reader_skips_bad_lines);
	TAP_RUN(test_json_unrolled_renderers);
	return TAP_DONE();
}
