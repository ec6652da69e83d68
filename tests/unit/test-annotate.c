// SPDX-License-Identifier: MIT
/* Unit tests of lib/render/annotate.c: one function's samples by source
 * line, from symbol records built in memory and a source file written
 * here; expectations computed by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "annotate.h"
#include "defs.h"
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

static void symbol(uint64_t frame, uint64_t index, const char *func, const char *file,
		   uint64_t line)
{
	struct sp_record r = { .kind = SP_REC_SYMBOL };

	r.symbol.frame = frame;
	r.symbol.index = index;
	r.symbol.func = str(func);
	r.symbol.file = str(file);
	r.symbol.line = line;
	def(&r);
}

/*
 * Frames 1-4 in one module, each its own stack: 1 hot at src:3, 2 hot at
 * src:5, 3 "inl" (inlined into hot at src:5), 4 "other". A frame-less
 * stack 5 has no symbol.
 */
static void setup(const char *src)
{
	struct sp_record r = { .kind = SP_REC_MODULE };
	uint64_t i;

	d = sp_defs_new();
	r.module.pid = 7;
	r.module.start = 0x400000;
	r.module.end = 0x401000;
	r.module.path = str("/bin/app");
	def(&r);
	for (i = 1; i <= 5; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = 1;
		r.frame.rel = 0x10 * i;
		r.frame.addr = 0x400000 + 0x10 * i;
		def(&r);
	}
	symbol(1, 0, "hot", src, 3);
	symbol(2, 0, "hot", src, 5);
	symbol(3, 0, "inl", "inl.h", 9);
	symbol(3, 1, "hot", src, 5);
	symbol(4, 0, "other", src, 1);
	for (i = 1; i <= 5; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_STACK;
		r.stack.frame = i;
		def(&r);
	}
}

static void add(struct sp_annotate *a, uint64_t stack, unsigned int times)
{
	struct sp_sample s = { .pid = 7, .tid = 7, .stack = stack };

	while (times--)
		sp_annotate_add(a, d, &s);
}

static void test_annotate_lines_and_source(void)
{
	char src[] = "/tmp/sp-annotate-XXXXXX";
	struct sp_annotate *a = sp_annotate_new("hot");
	char *buf = NULL, want[512];
	size_t len = 0;
	uint64_t total = 0;
	FILE *m, *f;
	int fd = mkstemp(src);

	CHECK(fd >= 0);
	f = fdopen(fd, "w");
	fputs("int hot(void)\n{\n\treturn loop();\n\t/* nothing */\n\treturn inl();\n}\n", f);
	fclose(f);
	setup(src);
	add(a, 1, 6);	/* line 3 */
	add(a, 2, 1);	/* line 5 */
	add(a, 3, 1);	/* inl, inlined at line 5 */
	add(a, 4, 2);	/* another function */
	add(a, 5, 1);	/* no symbol */
	CHECK_EQ_U(sp_annotate_matched(a, &total), 8);
	CHECK_EQ_U(total, 11);
	m = open_memstream(&buf, &len);
	CHECK(sp_annotate_print(a, m) == 0);
	fclose(m);
	CHECK(strstr(buf, "# hot: 8 of 11 samples (72.73%) at the leaf") == buf);
	/* "%8s %8s %6s": 24 columns before the text's two spaces */
	snprintf(want, sizeof(want), "\n\n## %s\n   share  samples   line  source\n"
		 "  75.00%%        6      3          return loop();\n"
		 "                       4          /* nothing */\n"
		 "  25.00%%        2      5          return inl();\n", src);
	CHECK_STR(strchr(buf, '\n'), want);
	free(buf);
	sp_annotate_free(a);
	/* the inlined function on its own line, its file unreadable */
	a = sp_annotate_new("inl");
	add(a, 3, 2);
	buf = NULL;
	m = open_memstream(&buf, &len);
	CHECK(sp_annotate_print(a, m) == 0);
	fclose(m);
	CHECK(strstr(buf, "\n## inl.h (source not shown: No such file or directory)\n"
		      "   share  samples   line\n 100.00%        2      9\n") != NULL);
	free(buf);
	sp_annotate_free(a);
	/* never at a leaf: nothing written (a warning on stderr) */
	a = sp_annotate_new("nowhere");
	add(a, 4, 1);
	buf = NULL;
	m = open_memstream(&buf, &len);
	CHECK(sp_annotate_print(a, m) == 0);
	fclose(m);
	CHECK_EQ_U(len, 0);
	free(buf);
	sp_annotate_free(a);
	sp_defs_free(d);
	unlink(src);
}

int main(void)
{
	TAP_RUN(test_annotate_lines_and_source);
	return TAP_DONE();
}
