// SPDX-License-Identifier: MIT
/*
 * Unit tests for lib/symbolize/symstream.c: JSON lines in, through the stream over a
 * symbolizer of this test program's own ELF file (built with -g), JSON lines
 * out, checked line by line: symbols after their frame, the order of the
 * records kept through batches, frames without a module, and kernel frames
 * that wait for the ksym records behind them.
 */
#include <inttypes.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "reader.h"
#include "records.h"
#include "symbolize.h"
#include "symstream.h"
#include "tap.h"
#include "writer.h"

static __attribute__((noinline)) int ss_one(int x)
{
	return x * 3 + 1;
}

static __attribute__((noinline)) int ss_two(int x)
{
	return x * 5 + 2;
}

static __attribute__((noinline)) int ss_three(int x)
{
	return x * 7 + 3;
}

static int (*volatile funcs[3])(int) = { ss_one, ss_two, ss_three };
static const char *const names[3] = { "ss_one", "ss_two", "ss_three" };
static uintptr_t exe_bias;
static char self_path[4096];
static char self_bid[2 * SP_BUILD_ID_MAX + 1];

static int find_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	exe_bias = info->dlpi_addr;
	return 1;
}

/* The ELF address of funcs[i], a few bytes in. */
static uint64_t func_rel(unsigned int i)
{
	return (uintptr_t)funcs[i] - exe_bias + 2;
}

static void header_and_module(FILE *t)
{
	fprintf(t, "{\"type\":\"header\",\"version\":1,\"clock\":\"monotonic\"}\n");
	fprintf(t, "{\"type\":\"module\",\"time\":1,\"pid\":10,\"start\":\"0x400000\","
		"\"end\":\"0x800000\",\"path\":\"%s\",\"build_id\":\"%s\"}\n", self_path, self_bid);
}

static void frame_of(FILE *t, unsigned int i)
{
	fprintf(t, "{\"type\":\"frame\",\"module\":1,\"rel\":\"0x%" PRIx64 "\",\"addr\":\"0x%"
		PRIx64 "\",\"flags\":\"0x1\"}\n", func_rel(i), 0x400000 + func_rel(i));
}

/*
 * Run in through a symstream (as sp-symbolize: a flush where the input has
 * no more at hand, finish at the end); the output's lines into *lines, NULL
 * terminated (caller frees lines[0] and lines). Returns the reader's status.
 */
static int run(const char *in, char ***lines, size_t *nlines)
{
	struct sp_symbolize_opts so = { .no_system_debug = true };
	struct sp_symstream_opts o = { 0 };
	int ifd = rec_memfd(), ofd = rec_memfd(), status;
	struct sp_symbolizer *sym = sp_symbolizer_new(&so);
	struct sp_writer *w = sp_writer_new(ofd, "out", SP_FORMAT_JSON);
	struct sp_symstream *s = sp_symstream_new(sym, w, &o);
	struct sp_reader *r;
	struct sp_record rec;
	size_t n = 0, cap = 0;
	off_t size;
	char *buf, *p, *nl;

	CHECK_EQ_U(write(ifd, in, strlen(in)), strlen(in));
	lseek(ifd, 0, SEEK_SET);
	r = sp_reader_open_fd(ifd, "in");
	while (sp_reader_next(r, &rec) > 0) {
		CHECK_EQ_U(sp_symstream_put(s, r, &rec), 0);
		if (!sp_reader_more_available(r))
			CHECK_EQ_U(sp_symstream_flush(s), 0);
	}
	CHECK_EQ_U(sp_symstream_finish(s), 0);
	CHECK_EQ_U(sp_writer_close(w), 0);
	sp_symstream_free(s);
	sp_symbolizer_free(sym);
	status = sp_reader_close(r);
	close(ifd);

	size = lseek(ofd, 0, SEEK_END);
	buf = sp_xmalloc(size + 1);
	CHECK_EQ_U(pread(ofd, buf, size, 0), size);
	buf[size] = 0;
	close(ofd);
	*lines = NULL;
	for (p = buf; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = 0;
		sp_grow(lines, &cap, n + 2, sizeof(**lines));
		(*lines)[n++] = p;
	}
	sp_grow(lines, &cap, n + 1, sizeof(**lines));
	(*lines)[n] = NULL;
	if (!n)
		free(buf);
	*nlines = n;
	return status;
}

static void free_lines(char **lines, size_t n)
{
	if (n)
		free(lines[0]);
	free(lines);
}

static bool is(const char *line, const char *type)
{
	char want[64];

	snprintf(want, sizeof(want), "{\"type\":\"%s\"", type);
	return !strncmp(line, want, strlen(want));
}

/* Does line contain "key":value (value as written, quotes included)? */
static bool has(const char *line, const char *key, const char *value)
{
	char want[256];

	snprintf(want, sizeof(want), "\"%s\":%s", key, value);
	return strstr(line, want) != NULL;
}

static bool has_u(const char *line, const char *key, uint64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	return has(line, key, s);
}

static bool has_func(const char *line, const char *func)
{
	char s[128];

	snprintf(s, sizeof(s), "\"%s\"", func);
	return has(line, "func", s);
}

/* The first line of a type (a symbol of frame, when frame), or 0 (the header's
 * line, never what is looked for) when there is none. */
static size_t find(char **l, size_t n, const char *type, uint64_t frame)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (is(l[i], type) && (!frame || has_u(l[i], "frame", frame)))
			return i;
	return 0;
}

static void test_symstream_symbols_after_frame(void)
{
	char *in;
	size_t inlen;
	FILE *t = open_memstream(&in, &inlen);
	char **l;
	size_t n, i;

	header_and_module(t);
	frame_of(t, 1);
	fprintf(t, "{\"type\":\"process_end\",\"time\":2,\"pid\":10}\n");
	fclose(t);
	CHECK_EQ_U(run(in, &l, &n), SP_EXIT_OK);
	CHECK(n >= 6);
	if (n < 6)
		goto out;
	CHECK(is(l[0], "header"));
	CHECK(has(l[0], "flags", "\"0x4\""));	/* SP_HDR_SYMBOLIZED */
	CHECK(is(l[1], "string"));		/* the module's path */
	CHECK(is(l[2], "module"));
	CHECK(is(l[3], "frame") && has_u(l[3], "id", 1));
	/* The strings its symbols need, then one symbol record per inline level. */
	for (i = 4; i < n && is(l[i], "string"); i++)
		;
	CHECK(i < n && is(l[i], "symbol") && has_u(l[i], "frame", 1) && has_u(l[i], "index", 0));
	CHECK(i < n && has_func(l[i], "ss_two") && strstr(l[i], "test-symstream.c"));
	for (; i < n && (is(l[i], "symbol") || is(l[i], "string")); i++)
		CHECK(!is(l[i], "symbol") || has_u(l[i], "frame", 1));
	CHECK(i == n - 1 && is(l[i], "process_end"));
out:
	free_lines(l, n);
	free(in);
}

/* More frames than one batch holds, in no address order, a stack record amid them. */
static void test_symstream_order_through_batch(void)
{
	enum { NFRAMES = 40000 };
	static unsigned char which[NFRAMES];
	char *in;
	size_t inlen;
	FILE *t = open_memstream(&in, &inlen);
	uint64_t frame = 0, seed = 12345;
	size_t n, i, k;
	char **l;

	header_and_module(t);
	for (k = 0; k < NFRAMES; k++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		which[k] = (seed >> 33) % 3;
		frame_of(t, which[k]);
		if (k == NFRAMES / 3)
			fprintf(t, "{\"type\":\"stack\",\"frame\":1}\n");
	}
	fclose(t);
	CHECK_EQ_U(run(in, &l, &n), SP_EXIT_OK);
	k = 0;
	for (i = 0; i < n; i++) {
		if (is(l[i], "stack")) {
			CHECK_EQ_U(k, NFRAMES / 3 + 1);
			continue;
		}
		if (!is(l[i], "frame"))
			continue;
		frame++;
		if (!has_u(l[i], "id", frame) || k >= NFRAMES) {
			CHECK(!"frame ids in input order");
			break;
		}
		/* The frame's first symbol names its function. */
		while (i + 1 < n && is(l[i + 1], "string"))
			i++;
		if (i + 1 >= n || !is(l[i + 1], "symbol") || !has_u(l[i + 1], "frame", frame) ||
		    !has_func(l[i + 1], names[which[k]])) {
			printf("#   frame %" PRIu64 ": want %s, got %s\n", frame, names[which[k]],
			       i + 1 < n ? l[i + 1] : "(end)");
			tap_case_failed = 1;
			break;
		}
		k++;
	}
	CHECK_EQ_U(k, NFRAMES);
	free_lines(l, n);
	free(in);
}

/* A frame with no module waits for its process's end (it may be JIT code), then
 * says no_module; a module whose file is gone says file_missing at once. */
static void test_symstream_unknown_module(void)
{
	static const char in[] =
		"{\"type\":\"header\",\"version\":1,\"clock\":\"monotonic\"}\n"
		"{\"type\":\"module\",\"time\":1,\"pid\":10,\"start\":\"0x400000\","
		"\"end\":\"0x800000\",\"path\":\"/nonexistent/sp-test\"}\n"
		"{\"type\":\"frame\",\"rel\":\"0x10\",\"addr\":\"0x10\",\"pid\":5,"
		"\"flags\":\"0x1\"}\n"
		"{\"type\":\"frame\",\"module\":1,\"rel\":\"0x10\",\"addr\":\"0x400010\","
		"\"flags\":\"0x1\"}\n"
		"{\"type\":\"process_end\",\"time\":2,\"pid\":5}\n";
	size_t n, missing, nomod, pend;
	char **l;

	CHECK_EQ_U(run(in, &l, &n), SP_EXIT_OK);
	nomod = find(l, n, "symbol", 1);
	missing = find(l, n, "symbol", 2);
	pend = find(l, n, "process_end", 0);
	CHECK(missing && nomod && pend);
	CHECK(missing < nomod && nomod < pend);
	CHECK(has(l[nomod], "status", "\"no_module\""));
	CHECK(has(l[missing], "status", "\"file_missing\""));
	free_lines(l, n);
}

/* Kernel frames before any ksym record wait for the end of the stream. */
static void test_symstream_kernel_pending(void)
{
	static const char in[] =
		"{\"type\":\"header\",\"version\":1,\"clock\":\"monotonic\"}\n"
		"{\"type\":\"frame\",\"rel\":\"0xffffffff81000010\","
		"\"addr\":\"0xffffffff81000010\",\"mode\":\"kernel\",\"flags\":\"0x1\"}\n"
		"{\"type\":\"ksym\",\"addr\":\"0xffffffff81000000\",\"size\":256,"
		"\"name\":\"k_func\"}\n"
		"{\"type\":\"frame\",\"rel\":\"0xffffffff81000020\","
		"\"addr\":\"0xffffffff81000020\",\"mode\":\"kernel\",\"flags\":\"0x1\"}\n"
		"{\"type\":\"end\"}\n";
	size_t n, ksym, late, early, end;
	char **l;

	CHECK_EQ_U(run(in, &l, &n), SP_EXIT_OK);
	ksym = find(l, n, "ksym", 0);
	early = find(l, n, "symbol", 1);
	late = find(l, n, "symbol", 2);
	end = find(l, n, "end", 0);
	/* The frame after the ksym record is resolved at once, the one before at the end. */
	CHECK(ksym && early && late && end);
	CHECK(ksym < late && late < early && early < end);
	if (!(ksym && early && late && end))
		goto out;
	CHECK(is(l[late - 1], "frame") && has_u(l[late - 1], "id", 2));
	CHECK(has_func(l[early], "k_func") && has(l[early], "offset", "\"0x10\""));
	CHECK(has_func(l[late], "k_func") && has(l[late], "offset", "\"0x20\""));
out:
	free_lines(l, n);
}

int main(void)
{
	struct sp_elf_info info;

	/* No DWARF index cache in ~/.cache (tests/unit/test-symcache.c tests it). */
	setenv("SP_CACHE_DIR", "", 1);
	dl_iterate_phdr(find_bias, NULL);
	if (readlink("/proc/self/exe", self_path, sizeof(self_path) - 1) < 0 ||
	    sp_elf_info_file(self_path, &info) < 0 || !info.build_id_len) {
		printf("Bail out! cannot read this program's build-id\n");
		return 1;
	}
	sp_buildid_hex(info.build_id, info.build_id_len, self_bid);
	TAP_RUN(test_symstream_symbols_after_frame);
	TAP_RUN(test_symstream_order_through_batch);
	TAP_RUN(test_symstream_unknown_module);
	TAP_RUN(test_symstream_kernel_pending);
	return TAP_DONE();
}
