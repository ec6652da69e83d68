// SPDX-License-Identifier: MIT
/*
 * Unit tests of CPython's structures as sp-record reads them
 * (lib/record/interp_py.c): the 3.11 location table against CPython's own
 * answer, whole and cut short (a copy's first bytes: a line it does not
 * hold is unknown, never wrong), compact strings of each kind, from the
 * process and from a copy cut short, and code objects that are not, from
 * the process and from the BPF program's copy.
 */
#include <string.h>

#include "record.h"
#include "record/interpP.h"
#include "tap.h"

/*
 * co_linetable of this function, and the line of each code unit from
 * co.co_positions() (-1: none), as Debian's python3.11 gives them:
 *
 *	def sample(a, b):
 *	    x = 0
 *	    for i in range(a):
 *	        if i % 3 == 0:
 *	            x += (i *
 *	                  b)
 *	        else:
 *	            x -= 1
 *
 *
 *	    try:
 *	        y = [j for j in range(b)]
 *	    except ValueError as e:
 *	        y = e
 *	    return (x,
 *	            y)
 */
static const uint8_t table[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x80, 0x41, 0xdd, 0x0d, 0x12, 0x90, 0x31, 0x89, 0x58,
	0x8c, 0x58, 0xf0, 0x00, 0x05, 0x05, 0x13, 0xf0, 0x00, 0x05, 0x05, 0x13, 0x88, 0x01,
	0xd8, 0x0b, 0x0c, 0x88, 0x71, 0x89, 0x35, 0x90, 0x41, 0x8a, 0x3a, 0x88, 0x3a, 0xd8,
	0x0c, 0x0d, 0x90, 0x21, 0xd8, 0x12, 0x13, 0xf1, 0x03, 0x01, 0x13, 0x14, 0xf1, 0x00,
	0x01, 0x0d, 0x15, 0x88, 0x41, 0x88, 0x41, 0xf0, 0x06, 0x00, 0x0d, 0x0e, 0x90, 0x11,
	0x89, 0x46, 0x88, 0x41, 0x88, 0x41, 0xf0, 0x06, 0x03, 0x05, 0x0e, 0xd8, 0x0c, 0x21,
	0xd0, 0x0c, 0x21, 0x9d, 0x05, 0x98, 0x61, 0x99, 0x08, 0x9c, 0x08, 0xd0, 0x0c, 0x21,
	0xd1, 0x0c, 0x21, 0xd4, 0x0c, 0x21, 0x88, 0x01, 0x88, 0x01, 0xf8, 0xdd, 0x0b, 0x15,
	0xf0, 0x00, 0x01, 0x05, 0x0e, 0xf0, 0x00, 0x01, 0x05, 0x0e, 0xf0, 0x00, 0x01, 0x05,
	0x0e, 0xd8, 0x0c, 0x0d, 0x88, 0x01, 0x88, 0x01, 0x88, 0x01, 0x88, 0x01, 0x88, 0x01,
	0x88, 0x01, 0xf8, 0xf8, 0xf8, 0xf8, 0xf0, 0x03, 0x01, 0x05, 0x0e, 0xf8, 0xf8, 0xf8,
	0xe0, 0x0c, 0x0d, 0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01,
	0x05, 0x0f
};
static const int first = 1;
static const int lines[] = {
	1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	5, 5, 6, 5, 5, 5, 5, 5, 5, 8, 8, 8, 8, 8, 8, 11, 12, 12, 12, 12, 12, 12, 12, 12, 12,
	12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, -1, 13, 13, 13,
	13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, -1, -1, -1, -1, 13, -1, -1, -1,
	15, 16, 15, 15
};

static void test_line_table(void)
{
	unsigned int i, n = sizeof(lines) / sizeof(lines[0]), same = 0;

	for (i = 0; i < n; i++) {
		if (lines[i] < 0)
			continue;
		CHECK_EQ_U(sp_py_line(table, sizeof(table), first, (int)i), lines[i]);
		same++;
	}
	CHECK(same > 80);
	/* before the first instruction, past the end, no table: the first line */
	CHECK_EQ_U(sp_py_line(table, sizeof(table), first, -1), first);
	CHECK_EQ_U(sp_py_line(table, sizeof(table), 7, 100000), 7);
	CHECK_EQ_U(sp_py_line(NULL, 0, 9, 3), 9);
	/* a table cut in the middle of a long entry reads nothing past its end */
	CHECK_EQ_U(sp_py_line(table, 1, first, 5), first);
}

/* The first k bytes of the table, for every k: a line they give is the
 * right one; the ones they do not reach are unknown, not the first line. */
static void test_line_table_cut(void)
{
	unsigned int i, n = sizeof(lines) / sizeof(lines[0]), k, found = 0, unknown = 0, bad = 0;
	int line;

	for (k = 0; k <= sizeof(table); k++) {
		for (i = 0; i < n; i++) {
			if (lines[i] < 0)
				continue;
			if (!sp_py_line_at(table, k, first, (int)i, &line))
				unknown++;
			else if (line != lines[i])
				bad++;
			else
				found++;
		}
	}
	CHECK_EQ_U(bad, 0);
	CHECK(found > 0 && unknown > 0);
	/* the whole table says every line */
	for (i = 0, unknown = 0; i < n; i++)
		if (lines[i] >= 0 && !sp_py_line_at(table, sizeof(table), first, (int)i, &line))
			unknown++;
	CHECK_EQ_U(unknown, 0);
	/* before the first instruction: the first line, known without a table */
	CHECK(sp_py_line_at(NULL, 0, 9, -1, &line) && line == 9);
	CHECK(!sp_py_line_at(NULL, 0, 9, 3, &line));
}

/*
 * A lookup that resumes where the one before it stopped says what a scan
 * from the start says, whatever the order of the instructions looked up
 * (forward as a frame runs, the same again, backward after a loop's jump,
 * past the end) and however much of the table is there.
 */
static void test_line_table_resumed(void)
{
	unsigned int n = sizeof(lines) / sizeof(lines[0]), k, step, bad = 0, lookups = 0;
	unsigned int seed = 12345;

	for (k = 0; k <= sizeof(table); k += k < 8 ? 1 : 7) {
		struct sp_py_linepos pos = SP_PY_LINEPOS_INIT;

		for (step = 0; step < 600; step++) {
			int instr, want, got;
			bool a, b;

			seed = seed * 1103515245u + 12345u;
			/* mostly forward by a little, at times back or far */
			switch (seed >> 28) {
			case 0: instr = -1; break;
			case 1: case 2: instr = (int)((seed >> 8) % (n + 4)); break;
			default: instr = (int)(pos.addr + (long)((seed >> 8) % 5)); break;
			}
			a = sp_py_line_at(table, k, first, instr, &want);
			b = sp_py_line_from(table, k, first, instr, &pos, &got);
			lookups++;
			if (a != b || want != got)
				bad++;
		}
	}
	CHECK_EQ_U(bad, 0);
	CHECK(lookups > 1000);
}

#define BASE 0x1000ull

struct mem {
	uint8_t b[4096];
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem *m = ctx;

	if (addr < BASE || addr - BASE + len > sizeof(m->b))
		return -1;
	memcpy(buf, m->b + (addr - BASE), len);
	return 0;
}

/* A compact str at off: kind 1, 2 or 4 (ascii when ascii), n code points. */
static void put_str(struct mem *m, size_t off, unsigned int kind, bool ascii, uint64_t n,
		    const void *data, size_t bytes)
{
	uint32_t state = kind << 2 | 1u << 5 | (ascii ? 1u << 6 : 0);

	memcpy(m->b + off + 16, &n, 8);
	memcpy(m->b + off + 32, &state, 4);
	memcpy(m->b + off + (ascii ? 48 : 72), data, bytes);
}

static void test_strings(void)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_PYTHON, 3, 11, NULL);
	static struct mem m;
	const struct sp_interp_mem mem = { rd, &m };
	const uint16_t ucs2[] = { 0x3b1, 0x3b2 };		/* αβ */
	const uint32_t ucs4[] = { 0x1f600, 'x' };
	const uint8_t latin1[] = { 'c', 0xe9 };			/* cé */
	char out[SP_PY_NAME_MAX], big[600];

	memset(big, 'a', sizeof(big));
	put_str(&m, 0, 1, true, 3, "f.g", 3);
	put_str(&m, 256, 2, false, 2, ucs2, sizeof(ucs2));
	put_str(&m, 512, 4, false, 2, ucs4, sizeof(ucs4));
	put_str(&m, 768, 1, false, 2, latin1, sizeof(latin1));
	put_str(&m, 1024, 1, true, 1ull << 39, big, sizeof(big));	/* no end */
	CHECK(sp_py_str(l, &mem, BASE, out, sizeof(out)) == 0);
	CHECK_STR(out, "f.g");
	CHECK(sp_py_str(l, &mem, BASE + 256, out, sizeof(out)) == 0);
	CHECK_STR(out, "\xce\xb1\xce\xb2");
	CHECK(sp_py_str(l, &mem, BASE + 512, out, sizeof(out)) == 0);
	CHECK_STR(out, "\xf0\x9f\x98\x80x");
	CHECK(sp_py_str(l, &mem, BASE + 768, out, sizeof(out)) == 0);
	CHECK_STR(out, "c\xc3\xa9");
	CHECK(sp_py_str(l, &mem, BASE + 1024, out, sizeof(out)) == 0);
	CHECK_EQ_U(strlen(out), SP_PY_NAME_MAX - 4 + 3);
	CHECK(!strcmp(out + strlen(out) - 3, "..."));
	CHECK(sp_py_str(l, &mem, BASE + 8192, out, sizeof(out)) == -1);	/* unmapped */
	/* copies of them, whole and cut short */
	CHECK(sp_py_str_copy(l, m.b, 256, out, sizeof(out)) == 0);
	CHECK_STR(out, "f.g");
	CHECK(sp_py_str_copy(l, m.b + 256, 256, out, sizeof(out)) == 0);
	CHECK_STR(out, "\xce\xb1\xce\xb2");
	CHECK(sp_py_str_copy(l, m.b + 256, 74, out, sizeof(out)) == 1);	/* one of two */
	CHECK_STR(out, "\xce\xb1...");
	CHECK(sp_py_str_copy(l, m.b + 512, 75, out, sizeof(out)) == 1);	/* none of two */
	CHECK_STR(out, "...");
	CHECK(sp_py_str_copy(l, m.b + 1024, 256, out, sizeof(out)) == 1);	/* no end */
	CHECK_EQ_U(strlen(out), 256 - 48 + 3);
	CHECK(!strcmp(out + strlen(out) - 3, "..."));
	CHECK(sp_py_str_copy(l, m.b + 1024, 256, out, 16) == 0);	/* out is full first */
	CHECK_STR(out, "aaaaaaaaaaaa...");
	CHECK(sp_py_str_copy(l, m.b, 40, out, sizeof(out)) == -1);	/* no whole header */
	CHECK(sp_py_str_copy(l, m.b + 2048, 256, out, sizeof(out)) == -1);	/* not a str */
}

/* A code object at BASE of type 0x4242, first line first, named qual in
 * file (ascii strings at BASE + 1024 and + 1280), its line table's bytes
 * object at BASE + 1536 (left to the caller). */
static void put_code(struct mem *m, int32_t first, const char *qual, const char *file)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_PYTHON, 3, 11, NULL);
	uint64_t type = 0x4242, q = BASE + 1024, f = BASE + 1280, tab = BASE + 1536;

	memcpy(m->b + l->ob_type, &type, 8);
	memcpy(m->b + l->bpf.co_firstline, &first, 4);
	memcpy(m->b + l->bpf.co_name, &q, 8);
	memcpy(m->b + l->bpf.co_file, &f, 8);
	memcpy(m->b + l->bpf.co_lines, &tab, 8);
	put_str(m, 1024, 1, true, strlen(qual), qual, strlen(qual));
	put_str(m, 1280, 1, true, strlen(file), file, strlen(file));
}

static void test_code(void)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_PYTHON, 3, 11, NULL);
	static struct mem m;
	const struct sp_interp_mem mem = { rd, &m };
	uint64_t type = 0x4242, name = BASE + 1024;
	uint64_t huge = 1ull << 40, bad = 0x4343;
	struct sp_py_code c;
	const char *why;

	put_code(&m, 12, "main", "/a.py");
	memcpy(m.b + 1536 + l->bpf.var_size, &(uint64_t){ sizeof(table) }, 8);
	memcpy(m.b + 1536 + l->bpf.bytes_data, table, sizeof(table));
	CHECK(sp_py_code_read(l, &mem, BASE, type, &c, &why) == 0);
	CHECK_STR(c.qualname, "main");
	CHECK_STR(c.file, "/a.py");
	CHECK_EQ_U(c.firstline, 12);
	CHECK_EQ_U(c.len, sizeof(table));
	CHECK_EQ_U(c.name_addr, name);
	sp_py_code_release(&c);
	/* a line table claiming a terabyte: none is read */
	memcpy(m.b + 1536 + l->bpf.var_size, &huge, 8);
	CHECK(sp_py_code_read(l, &mem, BASE, type, &c, &why) == 0);
	CHECK(c.linetable == NULL && c.len == 0);
	/* not a code object */
	CHECK(sp_py_code_read(l, &mem, BASE, bad, &c, &why) == -1);
	CHECK_STR(why, "not a code object");
	CHECK(sp_py_code_read(l, &mem, BASE + 8192, type, &c, &why) == -1);
	CHECK_STR(why, "unreadable");
}

/* The BPF program's copy of the code object test_code() lays out: the
 * object's first bytes, its strings' first bytes, n bytes of its table. */
static void copy_of(const struct mem *m, struct sp_bpf_icode *r, size_t n)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_PYTHON, 3, 11, NULL);

	memset(r, 0, sizeof(*r));
	r->code = BASE;
	r->firstline = sp_interp_u32(m->b, l->bpf.co_firstline);
	r->name = (uint32_t)sp_interp_u64(m->b, l->bpf.co_name) ^
		  (uint32_t)sp_interp_u64(m->b, l->bpf.co_file);
	memcpy(r->head, m->b, sizeof(r->head));
	r->head_len = sizeof(r->head);
	memcpy(r->qual, m->b + 1024, sizeof(r->qual));
	r->qual_len = sizeof(r->qual);
	memcpy(r->file, m->b + 1280, sizeof(r->file));
	r->file_len = sizeof(r->file);
	r->lines_size = sizeof(table);
	memcpy(r->lines, table, n);
	r->lines_len = (uint16_t)n;
}

static void test_code_copy(void)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_PYTHON, 3, 11, NULL);
	const size_t fixed = offsetof(struct sp_bpf_icode, lines);
	static struct mem m;
	static struct sp_bpf_icode r;
	uint64_t type = 0x4242, name = BASE + 1024, file = BASE + 1280;
	struct sp_py_code c;
	const char *why;
	char big[300];
	int line;

	put_code(&m, 1, "<module>", "/t/mod.py");
	copy_of(&m, &r, sizeof(table));
	CHECK(sp_py_code_copy(l, &r, fixed + sizeof(table), type, &c, &why) == 0);
	CHECK_STR(c.qualname, "<module>");
	CHECK_STR(c.file, "/t/mod.py");
	CHECK_EQ_U(c.firstline, 1);
	CHECK(c.whole && !c.cut && c.len == sizeof(table));
	CHECK_EQ_U(c.name_addr, name);
	CHECK_EQ_U(c.file_addr, file);
	sp_py_code_release(&c);
	/* the table's first 40 bytes: whole no more, a line past them unknown */
	copy_of(&m, &r, 40);
	CHECK(sp_py_code_copy(l, &r, fixed + 40, type, &c, &why) == 0);
	CHECK(!c.whole && c.len == 40);
	CHECK(sp_py_line_at(c.linetable, c.len, c.firstline, 1, &line) && line == lines[1]);
	CHECK(!sp_py_line_at(c.linetable, c.len, c.firstline, 95, &line));
	sp_py_code_release(&c);
	/* a record cut short holds no more of the table than it has */
	copy_of(&m, &r, sizeof(table));
	CHECK(sp_py_code_copy(l, &r, fixed + 10, type, &c, &why) == 0);
	CHECK(!c.whole && c.len == 10);
	sp_py_code_release(&c);
	CHECK(sp_py_code_copy(l, &r, fixed - 1, type, &c, &why) == -1);
	/* a name longer than its copy: cut, and said */
	memset(big, 'q', sizeof(big));
	put_str(&m, 1024, 1, true, sizeof(big), big, sizeof(big));
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == 0);
	CHECK(c.cut && !c.whole);
	CHECK(!strcmp(c.qualname + strlen(c.qualname) - 3, "..."));
	sp_py_code_release(&c);
	/* a name no compile() makes: the string of a name freed since */
	put_str(&m, 1024, 1, true, 4, "/usr", 4);
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == -1);
	CHECK_STR(why, "bad name");
	put_str(&m, 1024, 1, true, 10, "a b.<lambda>", 10);
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == -1);
	/* names compile() makes, non-ASCII identifiers too; 3.12's scopes */
	put_str(&m, 1024, 1, true, 27, "<generic parameters of Box>", 27);
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == 0);
	sp_py_code_release(&c);
	put_str(&m, 1024, 1, true, 9, "<a/b>.f x", 9);
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == -1);
	put_str(&m, 1024, 1, true, 25, "Foo.run.<locals>.<lambda>", 25);
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == 0);
	CHECK_STR(c.qualname, "Foo.run.<locals>.<lambda>");
	sp_py_code_release(&c);
	put_str(&m, 1024, 2, false, 2, (const uint16_t[]){ 0x3b1, 0x3b2 }, 4);	/* αβ */
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == 0);
	CHECK_STR(c.qualname, "αβ");
	sp_py_code_release(&c);
	/* a file not copied: "?", and said */
	put_str(&m, 1024, 1, true, 8, "<module>", 8);
	copy_of(&m, &r, 0);
	r.file_len = 0;
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == 0);
	CHECK_STR(c.file, "?");
	CHECK(c.cut);
	sp_py_code_release(&c);
	/* no name, not a code object, not its frames' code, no head */
	copy_of(&m, &r, 0);
	r.qual_len = 0;
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == -1);
	CHECK_STR(why, "bad name");
	copy_of(&m, &r, 0);
	CHECK(sp_py_code_copy(l, &r, fixed, 0x4343, &c, &why) == -1);
	CHECK_STR(why, "not a code object");
	r.name ^= 0x10;
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == -1);
	copy_of(&m, &r, 0);
	r.firstline = 2;
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == -1);
	copy_of(&m, &r, 0);
	r.head_len = 0;
	CHECK(sp_py_code_copy(l, &r, fixed, type, &c, &why) == -1);
	CHECK_STR(why, "unreadable");
	/* lengths past their blocks are held to them */
	copy_of(&m, &r, sizeof(table));
	r.qual_len = r.file_len = r.lines_len = 0xffff;
	r.lines_size = 0xffff;
	CHECK(sp_py_code_copy(l, &r, sizeof(r), type, &c, &why) == 0);
	CHECK(c.len == sizeof(r.lines) && !c.whole);
	sp_py_code_release(&c);
}

int main(void)
{
	TAP_RUN(test_line_table);
	TAP_RUN(test_line_table_cut);
	TAP_RUN(test_line_table_resumed);
	TAP_RUN(test_strings);
	TAP_RUN(test_code);
	TAP_RUN(test_code_copy);
	return TAP_DONE();
}
