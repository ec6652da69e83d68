// SPDX-License-Identifier: MIT
/*
 * Unit tests of the record stream end to end: the writer (lib/stream/writer.c) and
 * the reader (lib/stream/reader.c) over spools and JSON lines, in files and pipes.
 */
#include <signal.h>

#include "reader.h"
#include "records.h"
#include "spool.h"
#include "stderr_capture.h"
#include "tap.h"
#include "writer.h"

#define MAXREC 128

static struct sp_record want[MAXREC];
static unsigned int nwant;

static void put(struct sp_writer *w, const struct sp_record *r)
{
	CHECK_EQ_U(sp_writer_put(w, r), 0);
	if (nwant < MAXREC)
		want[nwant++] = *r;
}

/* A stream with one record of every kind, every field set, every event kind. */
static void write_every_kind(struct sp_writer *w)
{
	struct sp_record r;
	unsigned int k, ev;

	nwant = 0;
	rec_make(&r, SP_REC_HEADER, 0);
	put(w, &r);
	for (k = 0; k < 3; k++) {
		rec_make(&r, SP_REC_STRING, k);
		put(w, &r);
	}
	rec_make(&r, SP_REC_MODULE, 0);
	put(w, &r);
	rec_make(&r, SP_REC_FRAME, 0);
	put(w, &r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.frame = 1;
	put(w, &r);
	for (k = SP_REC_HEADER + 1; k < SP_REC_KIND_MAX; k++) {
		rec_make(&r, k, k);
		put(w, &r);
	}
	for (ev = 1; ev < SP_EV_KIND_MAX; ev++) {
		rec_make(&r, SP_REC_EVENT, 0);
		memset(r.event.field, 0, sizeof(r.event.field));
		rec_fill_event(&r, ev, ev);
		put(w, &r);
	}
	/* A kind from a newer writer, and a record with a newer writer's fields. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_KIND_MAX;
	r.unknown.kind = 147;	/* its varint starts with the magic's first byte */
	r.unknown.raw.p = rec_bytes;
	r.unknown.raw.len = 9;
	put(w, &r);
	rec_make(&r, SP_REC_THREAD_END, 1);
	r.extra.p = rec_bytes + 8;
	r.extra.len = 3;
	put(w, &r);
}

/* Write the every-kind stream in a format to a new memfd. */
static int every_kind_file(enum sp_format fmt)
{
	int fd = rec_memfd();
	struct sp_writer *w = sp_writer_new(fd, "mem", fmt);

	write_every_kind(w);
	CHECK_EQ_U(sp_writer_close(w), 0);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Read fd and compare with want[]; returns the reader's status. */
static int read_and_compare(int fd, const char *what, unsigned int expect)
{
	struct sp_reader *r = sp_reader_open_fd(fd, what);
	struct sp_record rec;
	unsigned int n = 0;
	const char *why;

	while (sp_reader_next(r, &rec) > 0) {
		if (n < nwant && !rec_same(&want[n], &rec, &why)) {
			printf("#   %s: record %u (%s): field '%s' differs\n", what, n,
			       sp_rec_kind_name(want[n].kind) ?: "unknown", why);
			tap_case_failed = 1;
		}
		n++;
	}
	CHECK_EQ_U(n, expect);
	return sp_reader_close(r);
}

/* Copy a stream through reader and writer into a new memfd. */
static int transcode(int in, enum sp_format fmt, int *status)
{
	int out = rec_memfd();
	struct sp_reader *r = sp_reader_open_fd(in, "in");
	struct sp_writer *w = sp_writer_new(out, "out", fmt);
	struct sp_record rec;

	while (sp_reader_next(r, &rec) > 0)
		CHECK_EQ_U(sp_writer_put(w, &rec), 0);
	CHECK_EQ_U(sp_writer_close(w), 0);
	*status = sp_reader_close(r);
	lseek(out, 0, SEEK_SET);
	return out;
}

static bool same_file(int a, int b)
{
	size_t na, nb;
	char *pa = rec_slurp(a, &na), *pb = rec_slurp(b, &nb);
	bool same = na == nb && !memcmp(pa, pb, na);

	free(pa);
	free(pb);
	return same;
}

static void test_stream_every_kind_spool(void)
{
	int fd = every_kind_file(SP_FORMAT_SPOOL), st;

	/* Unknown kinds are passed on, and reported (PARTIAL). */
	st = read_and_compare(fd, "spool", nwant);
	CHECK_EQ_U(st, SP_EXIT_PARTIAL);
	close(fd);
}

static void test_stream_every_kind_json(void)
{
	int fd = every_kind_file(SP_FORMAT_JSON);

	read_and_compare(fd, "json", nwant);
	close(fd);
}

static void test_stream_byte_identical(void)
{
	int a = every_kind_file(SP_FORMAT_SPOOL), b, j, c, st;

	b = transcode(a, SP_FORMAT_SPOOL, &st);
	CHECK(same_file(a, b));
	lseek(a, 0, SEEK_SET);
	j = transcode(a, SP_FORMAT_JSON, &st);
	c = transcode(j, SP_FORMAT_SPOOL, &st);
	CHECK(same_file(a, c));
	/* And JSON -> spool -> JSON is the same JSON. */
	{
		int j2, s2;

		lseek(c, 0, SEEK_SET);
		j2 = transcode(c, SP_FORMAT_JSON, &st);
		CHECK(same_file(j, j2));
		s2 = j2;
		close(s2);
	}
	close(a);
	close(b);
	close(j);
	close(c);
}

/* A spool cut at every byte: a prefix of the records, FATAL inside a record. */
static void test_stream_cut_everywhere(void)
{
	int full = every_kind_file(SP_FORMAT_SPOOL);
	size_t len, cut, i;
	char *bytes = rec_slurp(full, &len);
	uint64_t ends[MAXREC + 1];
	unsigned int nends = 0, bad = 0, nrec;
	struct sp_reader *r;
	struct sp_record rec;
	int fd, st, saved;

	/* Where each record ends: where the next begins, or the end. */
	lseek(full, 0, SEEK_SET);
	r = sp_reader_open_fd(full, "full");
	while (sp_reader_next(r, &rec) > 0)
		if (rec.pos > SP_SPOOL_MAGIC_LEN)
			ends[nends++] = rec.pos;
	sp_reader_close(r);
	ends[nends++] = len;
	CHECK_EQ_U(nends, nwant);
	/* Quiet: every cut is reported. */
	saved = dup(2);
	fd = open("/dev/null", O_WRONLY);
	dup2(fd, 2);
	close(fd);
	for (cut = 0; cut <= len; cut++) {
		const char *why;
		bool boundary = cut == 0 || cut == SP_SPOOL_MAGIC_LEN;
		unsigned int whole = 0;

		for (i = 0; i < nends; i++) {
			whole += ends[i] <= cut;
			boundary |= ends[i] == cut;
		}
		fd = rec_memfd();
		if (cut && write(fd, bytes, cut) != (ssize_t)cut)
			bad++;
		lseek(fd, 0, SEEK_SET);
		r = sp_reader_open_fd(fd, "cut");
		nrec = 0;
		while (sp_reader_next(r, &rec) > 0) {
			if (nrec >= nwant || !rec_same(&want[nrec], &rec, &why))
				bad++;
			nrec++;
		}
		st = sp_reader_close(r);
		close(fd);
		if (nrec != whole || (boundary ? st == SP_EXIT_FATAL : st != SP_EXIT_FATAL)) {
			if (bad < 5)
				printf("#   cut at %zu: %u records (want %u), status %d\n", cut, nrec,
				       whole, st);
			bad++;
		}
	}
	dup2(saved, 2);
	close(saved);
	CHECK_EQ_U(bad, 0);
	free(bytes);
	close(full);
}

static void test_stream_pipe(void)
{
	int a = every_kind_file(SP_FORMAT_SPOOL), p[2], st;
	size_t len;
	char *bytes = rec_slurp(a, &len);

	CHECK(len < 60000);
	CHECK_EQ_U(pipe(p), 0);
	CHECK_EQ_U(write(p[1], bytes, len), len);
	close(p[1]);
	st = read_and_compare(p[0], "pipe", nwant);
	CHECK(st != SP_EXIT_FATAL);
	close(p[0]);
	free(bytes);
	close(a);
}

static void write_small(int fd, const char *name)
{
	struct sp_writer *w = sp_writer_new(fd, "mem", SP_FORMAT_SPOOL);
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.time = 100;
	r.process.pid = 7;
	r.process.comm = sp_writer_strz(w, name);
	CHECK_EQ_U(r.process.comm, 1);
	sp_writer_put(w, &r);
	sp_writer_close(w);
}

static void test_stream_concatenated(void)
{
	int fd = rec_memfd();
	struct sp_reader *r;
	struct sp_record rec;
	unsigned int n = 0, headers = 0;
	const char *comm[2] = { NULL, NULL };

	write_small(fd, "first");
	write_small(fd, "second");
	lseek(fd, 0, SEEK_SET);
	r = sp_reader_open_fd(fd, "cat");
	while (sp_reader_next(r, &rec) > 0) {
		n++;
		headers += rec.kind == SP_REC_HEADER;
		if (rec.kind == SP_REC_PROCESS && headers <= 2) {
			comm[headers - 1] = sp_defs_strz(sp_reader_defs(r), rec.process.comm);
			CHECK_EQ_U(rec.process.time, 100);	/* times restart too */
			if (headers == 1)
				comm[0] = strdup(comm[0]);
		}
	}
	CHECK_EQ_U(n, 6);	/* header, string, process, twice */
	CHECK_EQ_U(headers, 2);
	CHECK_STR(comm[0], "first");
	CHECK_STR(comm[1], "second");
	CHECK_EQ_U(sp_reader_close(r), SP_EXIT_OK);
	free((char *)comm[0]);
	close(fd);
}

/* A hand-made spool with a record that refers to an undefined stack. */
static void test_stream_undefined_reference_skipped(void)
{
	static const uint8_t spool[] = {
		0x93, 'S', 'P', 'O', 'O', 'L', '1', '\n',
		SP_REC_HEADER, 0,
		SP_REC_SAMPLE, 5, 0, 1, 1, 0, 5,	/* stack 5: undefined */
		SP_REC_STRING, 2, 1, 'x',
		SP_REC_PROCESS, 4, 0, 7, 1, 1,		/* comm = string 1 */
	};
	int fd = rec_memfd(), saved, nul;
	struct sp_reader *r;
	struct sp_record rec;
	unsigned int kinds[8], n = 0;

	CHECK_EQ_U(write(fd, spool, sizeof(spool)), sizeof(spool));
	lseek(fd, 0, SEEK_SET);
	saved = dup(2);
	nul = open("/dev/null", O_WRONLY);
	dup2(nul, 2);
	r = sp_reader_open_fd(fd, "undef");
	while (sp_reader_next(r, &rec) > 0 && n < 8)
		kinds[n++] = rec.kind;
	dup2(saved, 2);
	close(saved);
	close(nul);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(kinds[0], SP_REC_HEADER);
	CHECK_EQ_U(kinds[1], SP_REC_STRING);
	CHECK_EQ_U(kinds[2], SP_REC_PROCESS);
	CHECK_EQ_U(sp_reader_close(r), SP_EXIT_PARTIAL);
	close(fd);
}

/* Lines of s, and its line i (0-based) into out[size]. */
static unsigned int line_count(const char *s)
{
	unsigned int n = 0;

	for (; (s = strchr(s, '\n')); s++)
		n++;
	return n;
}

static const char *line_at(const char *s, unsigned int i, char *out, size_t size)
{
	const char *e;

	while (i-- && (s = strchr(s, '\n')))
		s++;
	if (!s || !(e = strchr(s, '\n')))
		return "";
	snprintf(out, size, "%.*s", (int)(e - s), s);
	return out;
}

/* Read all of fd as `name` with stderr into err[size]; *nrec the records. */
static int read_quietly(int fd, const char *name, unsigned int *nrec, char *err, size_t size)
{
	struct stderr_capture cap;
	struct sp_reader *r;
	struct sp_record rec;
	int status;

	lseek(fd, 0, SEEK_SET);
	*nrec = 0;
	stderr_capture_begin(&cap);
	r = sp_reader_open_fd(fd, name);
	while (sp_reader_next(r, &rec) > 0)
		(*nrec)++;
	status = sp_reader_close(r);
	stderr_capture_end(&cap, err, size);
	return status;
}

/*
 * A spool where a definition was lost: 100000 samples on a stack never
 * defined. The first SP_READER_SAID are said with their offsets, the rest
 * in one line that counts them exactly and says where the first was.
 */
static void test_stream_skipped_said_bounded(void)
{
	static const uint8_t head[] = { 0x93, 'S', 'P', 'O', 'O', 'L', '1', '\n', SP_REC_HEADER, 0 };
	static const uint8_t sample[] = { SP_REC_SAMPLE, 5, 0, 1, 1, 0, 5 };	/* stack 5 */
	static const uint8_t tail[] = { SP_REC_STRING, 2, 1, 'x' };
	const unsigned int n = 100000;
	int fd = rec_memfd();
	unsigned int i, nrec;
	char err[8192], line[512], want[512];

	CHECK_EQ_U(write(fd, head, sizeof(head)), sizeof(head));
	for (i = 0; i < n; i++)
		CHECK_EQ_U(write(fd, sample, sizeof(sample)), sizeof(sample));
	CHECK_EQ_U(write(fd, tail, sizeof(tail)), sizeof(tail));
	CHECK_EQ_U(read_quietly(fd, "lost", &nrec, err, sizeof(err)), SP_EXIT_PARTIAL);
	CHECK_EQ_U(nrec, 2);	/* the header and the string: nothing else lost */
	CHECK_EQ_U(line_count(err), SP_READER_SAID + 1);
	for (i = 0; i < SP_READER_SAID; i++) {
		snprintf(want, sizeof(want), "%s: error: lost@%u: sample record refers to an "
			 "undefined stack; skipped", sp_progname, 10 + 7 * i);
		CHECK_STR(line_at(err, i, line, sizeof(line)), want);
	}
	snprintf(want, sizeof(want), "%s: error: lost: %u more records referring to undefined "
		 "definitions skipped (first at lost@%u)", sp_progname, n - SP_READER_SAID,
		 10 + 7 * SP_READER_SAID);
	CHECK_STR(line_at(err, SP_READER_SAID, line, sizeof(line)), want);
	close(fd);
}

/*
 * JSON lines: references to undefined definitions, other bad lines and the
 * lines of a stream without its definitions are three kinds, each bounded
 * and counted apart; a tool's own skips (sp_reader_skipped()) are counted
 * with the reader's.
 */
static void test_stream_skipped_said_bounded_json(void)
{
	const char *defs = "{\"type\":\"header\",\"version\":1}\n"
			   "{\"type\":\"string\",\"value\":\"app\"}\n"
			   "{\"type\":\"module\",\"pid\":1,\"start\":\"0x1000\",\"end\":\"0x2000\","
			   "\"path\":\"app\"}\n"
			   "{\"type\":\"frame\",\"module\":1,\"rel\":\"0x10\",\"addr\":\"0x1010\"}\n"
			   "{\"type\":\"stack\",\"frame\":1}\n";
	const char *undef = "{\"type\":\"sample\",\"time\":1,\"pid\":1,\"tid\":1,\"stack\":5}\n";
	const char *good = "{\"type\":\"sample\",\"time\":1,\"pid\":1,\"tid\":1,\"stack\":1}\n";
	int fd = rec_memfd();
	unsigned int i, nrec;
	char err[8192], line[512], want[512];

	/* lines 1-5 defs, 6-3005 undefined stack, 3006-3012 bad JSON, 3013 good */
	CHECK(dprintf(fd, "%s", defs) > 0);
	for (i = 0; i < 3000; i++)
		CHECK(dprintf(fd, "%s", undef) > 0);
	for (i = 0; i < 7; i++)
		CHECK(dprintf(fd, "{\"type\":\n") > 0);
	CHECK(dprintf(fd, "%s", good) > 0);
	CHECK_EQ_U(read_quietly(fd, "j", &nrec, err, sizeof(err)), SP_EXIT_PARTIAL);
	CHECK_EQ_U(nrec, 6);
	CHECK_EQ_U(line_count(err), 2 * SP_READER_SAID + 2);
	snprintf(want, sizeof(want), "%s: error: j:6: sample record refers to an undefined stack; "
		 "line skipped", sp_progname);
	CHECK_STR(line_at(err, 0, line, sizeof(line)), want);
	snprintf(want, sizeof(want), "%s: error: j:3006: invalid JSON: ", sp_progname);
	CHECK(!strncmp(line_at(err, SP_READER_SAID, line, sizeof(line)), want, strlen(want)));
	snprintf(want, sizeof(want), "%s: error: j: %u more lines referring to undefined "
		 "definitions skipped (first at j:%u)", sp_progname, 3000 - SP_READER_SAID,
		 6 + SP_READER_SAID);
	CHECK_STR(line_at(err, 2 * SP_READER_SAID, line, sizeof(line)), want);
	snprintf(want, sizeof(want), "%s: error: j: %u more lines skipped (first at j:%u)",
		 sp_progname, 7 - SP_READER_SAID, 3006 + SP_READER_SAID);
	CHECK_STR(line_at(err, 2 * SP_READER_SAID + 1, line, sizeof(line)), want);

	/* without definitions: said once, for what it is, then counted */
	CHECK_EQ_U(ftruncate(fd, 0), 0);
	lseek(fd, 0, SEEK_SET);
	CHECK(dprintf(fd, "{\"type\":\"header\",\"version\":1}\n") > 0);
	for (i = 0; i < 40; i++)
		CHECK(dprintf(fd, "%s", undef) > 0);
	CHECK_EQ_U(read_quietly(fd, "nd", &nrec, err, sizeof(err)), SP_EXIT_PARTIAL);
	CHECK_EQ_U(nrec, 1);
	CHECK_EQ_U(line_count(err), 2);
	CHECK(strstr(line_at(err, 0, line, sizeof(line)), "nd:2: sample record refers to an "
		     "undefined stack, and no stack or frame is defined before it") != NULL);
	snprintf(want, sizeof(want), "%s: error: nd: 39 more lines needing the definitions left "
		 "out skipped (first at nd:3)", sp_progname);
	CHECK_STR(line_at(err, 1, line, sizeof(line)), want);

	/* a tool's skips go the same way */
	{
		struct stderr_capture cap;
		struct sp_reader *r;
		struct sp_record rec;

		lseek(fd, 0, SEEK_SET);
		stderr_capture_begin(&cap);
		r = sp_reader_open_fd(fd, "t");
		CHECK_EQ_U(sp_reader_next(r, &rec), 1);
		for (i = 0; i < 1000; i++) {
			rec.pos = 100 + i;
			sp_reader_skipped(r, &rec, "sample refers to an undefined stack");
		}
		while (sp_reader_next(r, &rec) > 0)
			;
		CHECK_EQ_U(sp_reader_close(r), SP_EXIT_PARTIAL);
		stderr_capture_end(&cap, err, sizeof(err));
	}
	/* the tool's few and their count, and the stream's own two */
	CHECK_EQ_U(line_count(err), SP_READER_SAID + 1 + 2);
	snprintf(want, sizeof(want), "%s: error: t: %u more lines referring to undefined "
		 "definitions skipped (first at t:%u)", sp_progname, 1000 - SP_READER_SAID,
		 100 + SP_READER_SAID);
	CHECK(strstr(err, want) != NULL);
	close(fd);
}

/*
 * Unknown kinds: each said once, for the first few kinds, the rest counted;
 * one just past ours may be a newer writer's, one far past it in a stream
 * whose header is ours looks corrupt, unless the header is a newer one's.
 */
static void test_stream_unknown_kinds(void)
{
	static const uint8_t head[] = { 0x93, 'S', 'P', 'O', 'O', 'L', '1', '\n', SP_REC_HEADER, 0 };
	static const uint8_t newer[] = { 0x93, 'S', 'P', 'O', 'O', 'L', '1', '\n',
					 SP_REC_HEADER, 1, 2 };		/* version 2 */
	static const uint8_t body[] = {
		30, 0, 30, 0, 30, 0,			/* @10, 12, 14: kind 30, three times */
		0xf8, 0x03, 0,				/* @16: kind 504 */
		40, 0, 41, 0, 42, 0, 43, 0, 44, 0,	/* @19..27 */
	};
	int fd = rec_memfd();
	unsigned int nrec;
	char err[8192], line[512], want[512];

	CHECK_EQ_U(write(fd, head, sizeof(head)), sizeof(head));
	CHECK_EQ_U(write(fd, body, sizeof(body)), sizeof(body));
	CHECK_EQ_U(read_quietly(fd, "u", &nrec, err, sizeof(err)), SP_EXIT_PARTIAL);
	CHECK_EQ_U(nrec, 1 + 3 + 1 + 5);	/* all passed on */
	CHECK_EQ_U(line_count(err), SP_READER_SAID + 1);
	snprintf(want, sizeof(want), "%s: warning: u@10: unknown record kind 30 (from a newer "
		 "StackPulse?) passed on undecoded", sp_progname);
	CHECK_STR(line_at(err, 0, line, sizeof(line)), want);
	snprintf(want, sizeof(want), "%s: warning: u@16: unknown record kind 504, far past the %u "
		 "kinds of this version, which the stream's header says wrote it: the input "
		 "looks corrupt here; passed on undecoded", sp_progname,
		 (unsigned int)SP_REC_KIND_MAX - 1);
	CHECK_STR(line_at(err, 1, line, sizeof(line)), want);
	/* kinds 30 (twice more), 43 and 44 not said: counted, from the second 30 */
	snprintf(want, sizeof(want), "%s: warning: u: 4 more records of unknown kinds passed on "
		 "undecoded (first at u@12)", sp_progname);
	CHECK_STR(line_at(err, SP_READER_SAID, line, sizeof(line)), want);

	/* a newer writer's header: 504 may be one of its kinds */
	CHECK_EQ_U(ftruncate(fd, 0), 0);
	lseek(fd, 0, SEEK_SET);
	CHECK_EQ_U(write(fd, newer, sizeof(newer)), sizeof(newer));
	CHECK_EQ_U(write(fd, body + 6, 3), 3);
	CHECK_EQ_U(read_quietly(fd, "n", &nrec, err, sizeof(err)), SP_EXIT_PARTIAL);
	snprintf(want, sizeof(want), "%s: warning: n@11: unknown record kind 504 (from a newer "
		 "StackPulse?) passed on undecoded\n", sp_progname);
	CHECK_STR(err, want);
	close(fd);
}

static void test_stream_writer_interning(void)
{
	int fd = rec_memfd();
	struct sp_writer *w = sp_writer_new(fd, "mem", SP_FORMAT_SPOOL);
	struct sp_frame f = { .addr = 0x1000, .rel = 0x1000 };
	uint64_t fr[5], a, b, c;
	struct sp_reader *r;
	struct sp_record rec;
	unsigned int per_kind[SP_REC_KIND_MAX + 1] = { 0 }, i;

	CHECK_EQ_U(sp_writer_strz(w, "x"), 1);
	CHECK_EQ_U(sp_writer_strz(w, "y"), 2);
	CHECK_EQ_U(sp_writer_strz(w, "x"), 1);
	CHECK_EQ_U(sp_writer_strz(w, NULL), 0);
	CHECK_EQ_U(sp_writer_str(w, "xy", 1), 1);
	for (i = 0; i < 5; i++) {
		f.addr = f.rel = 0x1000 + i;
		fr[i] = sp_writer_frame(w, &f);
		CHECK_EQ_U(fr[i], i + 1);
	}
	f.addr = f.rel = 0x1002;
	CHECK_EQ_U(sp_writer_frame(w, &f), 3);
	a = sp_writer_stack_path(w, fr, 4);		/* 1 2 3 4 */
	b = sp_writer_stack_path(w, fr, 3);		/* a prefix: no new stack */
	fr[3] = fr[4];
	c = sp_writer_stack_path(w, fr, 4);		/* 1 2 3 5: one new stack */
	CHECK_EQ_U(a, 4);
	CHECK_EQ_U(b, 3);
	CHECK_EQ_U(c, 5);
	CHECK_EQ_U(sp_writer_stack_path(w, fr, 0), 0);
	CHECK_EQ_U(sp_writer_close(w), 0);
	lseek(fd, 0, SEEK_SET);
	r = sp_reader_open_fd(fd, "mem");
	while (sp_reader_next(r, &rec) > 0)
		per_kind[rec.kind]++;
	CHECK_EQ_U(sp_reader_close(r), SP_EXIT_OK);
	/* A header was written first, by itself; nothing twice. */
	CHECK_EQ_U(per_kind[SP_REC_HEADER], 1);
	CHECK_EQ_U(per_kind[SP_REC_STRING], 2);
	CHECK_EQ_U(per_kind[SP_REC_FRAME], 5);
	CHECK_EQ_U(per_kind[SP_REC_STACK], 5);
	close(fd);
}

static void test_stream_writer_refuses_undefined(void)
{
	int fd = rec_memfd(), saved = dup(2), nul = open("/dev/null", O_WRONLY);
	struct sp_writer *w = sp_writer_new(fd, "mem", SP_FORMAT_SPOOL);
	struct sp_record r = { .kind = SP_REC_SAMPLE };

	dup2(nul, 2);
	r.sample.stack = 3;
	CHECK(sp_writer_put(w, &r) < 0);
	r.sample.stack = 0;
	CHECK_EQ_U(sp_writer_put(w, &r), 0);	/* the writer still works */
	dup2(saved, 2);
	close(saved);
	close(nul);
	CHECK_EQ_U(sp_writer_close(w), 0);
	close(fd);
}

static void test_stream_write_error(void)
{
	int fd = open("/dev/full", O_WRONLY), saved = dup(2), nul = open("/dev/null", O_WRONLY);
	struct sp_writer *w;
	struct sp_record r = { .kind = SP_REC_SAMPLE };

	if (fd < 0) {
		close(saved);
		close(nul);
		return;
	}
	dup2(nul, 2);
	w = sp_writer_new(fd, "/dev/full", SP_FORMAT_SPOOL);
	CHECK_EQ_U(sp_writer_put(w, &r), 0);	/* buffered */
	CHECK(sp_writer_flush(w) < 0);
	CHECK(sp_writer_put(w, &r) < 0);	/* and every call after */
	CHECK(sp_writer_close(w) < 0);
	dup2(saved, 2);
	close(saved);
	close(nul);
	close(fd);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	TAP_RUN(test_stream_every_kind_spool);
	TAP_RUN(test_stream_every_kind_json);
	TAP_RUN(test_stream_byte_identical);
	TAP_RUN(test_stream_cut_everywhere);
	TAP_RUN(test_stream_pipe);
	TAP_RUN(test_stream_concatenated);
	TAP_RUN(test_stream_undefined_reference_skipped);
	TAP_RUN(test_stream_skipped_said_bounded);
	TAP_RUN(test_stream_skipped_said_bounded_json);
	TAP_RUN(test_stream_unknown_kinds);
	TAP_RUN(test_stream_writer_interning);
	TAP_RUN(test_stream_writer_refuses_undefined);
	TAP_RUN(test_stream_write_error);
	return TAP_DONE();
}
