// SPDX-License-Identifier: MIT
/*
 * Unit tests of Ruby's structures as sp-record reads them
 * (lib/record/interp_rb.c): the line of every instruction from a
 * succinct index table (built here as Ruby 3.1's iseq.c lays it out,
 * across several 512-position blocks) agrees with the plain positions
 * array; RStrings embedded, on the heap, cut, with a NUL; a path as an
 * Array; an object that is no iseq; line tables claiming too much. A
 * frame's method entry, laid out as Ruby 3.1 does: its owner's class
 * path (__classpath__ in the class's iv_tbl), a singleton class's by its
 * attached class ("Foo."), a module copied into a class (iclass), an
 * anonymous class; the method's ID named through a forged
 * ruby_global_symbols; cycles of singleton classes and ivar tables that
 * claim too much stay bounded; rb_id2str's code gives the symbols' place.
 */
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "record/interpP.h"
#include "tap.h"

/* A check, with what it checks said beside it for the reader. */
#define CHECK_THAT(cond, ...) CHECK(cond)

#define BASE	0x100000ull
#define MEMSZ	65536

static uint8_t mem[MEMSZ];

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > MEMSZ || len > MEMSZ - (addr - BASE))
		return -1;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static const struct sp_interp_mem m = { rd, NULL };

static void put64(size_t off, uint64_t v)
{
	memcpy(mem + off, &v, 8);
}

static void put32(size_t off, uint32_t v)
{
	memcpy(mem + off, &v, 4);
}

/* The succinct index of positions pos[0..n) for an iseq of size slots,
 * as words at mem + off: 54 ranks of 7 bits, then blocks of 512. */
static size_t build_succ(size_t off, const uint32_t *pos, uint32_t n, uint32_t size)
{
	uint32_t x, i, b, nb = size > 54 ? (size - 54) / 512 + 1 : 0;
	uint64_t w[6] = { 0 };

	for (x = 0; x < 54; x++) {
		uint64_t r = 0;

		for (i = 0; i < n; i++)
			r += pos[i] <= x;
		w[x / 9] |= r << (x % 9 * 7);
	}
	for (i = 0; i < 6; i++)
		put64(off + 8 * i, w[i]);
	for (b = 0; b < nb; b++) {
		uint32_t lo = 54 + b * 512, rank = 0, k;
		uint64_t bits[8] = { 0 }, small = 0, acc = 0;
		size_t o = off + 48 + (size_t)b * 80;

		for (i = 0; i < n; i++) {
			rank += pos[i] < lo;
			if (pos[i] >= lo && pos[i] < lo + 512)
				bits[(pos[i] - lo) / 64] |= 1ull << ((pos[i] - lo) % 64);
		}
		for (k = 1; k < 8; k++) {
			acc += (uint64_t)__builtin_popcountll(bits[k - 1]);
			small |= acc << ((k - 1) * 9);
		}
		put64(o, rank);
		put64(o + 8, small);
		for (k = 0; k < 8; k++)
			put64(o + 16 + 8 * k, bits[k]);
	}
	return 48 + (size_t)nb * 80;
}

enum { ISEQ = 0x100, BODY = 0x200, LABEL = 0x400, PATH = 0x480, ARR = 0x500, HEAPSTR = 0x540,
       ENTS = 0x1000, POS = 0x3000, SUCC = 0x4000, TEXT = 0x8000 };

/* An iseq of size slots whose n entries start every step slots. */
static void build_iseq(uint32_t size, uint32_t n, uint32_t step, bool positions)
{
	uint32_t pos[1024], i;

	memset(mem, 0, sizeof(mem));
	put64(ISEQ, 0x1a | 7u << 12);
	put64(ISEQ + 16, BASE + BODY);
	put32(BODY + 4, size);
	put64(BODY + 64, BASE + PATH);
	put64(BODY + 80, BASE + LABEL);
	put64(BODY + 88, 5 << 1 | 1);
	put64(BODY + 120, BASE + ENTS);
	put32(BODY + 136, n);
	for (i = 0; i < n; i++) {
		pos[i] = i * step;
		put32(ENTS + 12 * i, 100 + i);	/* line_no, node_id, events */
		put32(POS + 4 * i, pos[i]);
	}
	if (positions)
		put64(BODY + 128, BASE + POS);
	else
		put64(BODY + 144, BASE + SUCC), build_succ(SUCC, pos, n, size);
	put64(LABEL, 0x05 | 3u << 14);	/* embedded, 3 bytes */
	memcpy(mem + LABEL + 16, "bar", 3);
	put64(PATH, 0x05 | 6u << 14);
	memcpy(mem + PATH + 16, "/a.rb!", 6);
}

static void test_lines(void)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_RUBY, 3, 1, NULL);
	struct sp_rb_iseq a, b;
	const char *why;
	int pc, bad = 0;

	CHECK_THAT(l != NULL, "the table has ruby3.1");
	if (!l)
		return;
	/* 1800 slots: the immediate part and 4 blocks of 512 */
	build_iseq(1800, 600, 3, true);
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &a, &why) == 0 && a.lines.positions,
	   "an iseq with positions");
	build_iseq(1800, 600, 3, false);
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &b, &why) == 0 && b.lines.succ && !b.lines.positions,
	   "the same with a succinct index");
	CHECK_STR(b.label, "bar");
	CHECK_STR(b.file, "/a.rb!");
	CHECK_THAT(b.lines.firstline == 5, "its first line");
	for (pc = 0; pc <= 1800; pc++) {
		int want = 100 + (pc ? pc - 1 : 0) / 3;

		bad += sp_rb_line(&a.lines, pc) != want || sp_rb_line(&b.lines, pc) != want;
	}
	CHECK_THAT(bad == 0, "every pc's line: the entry of the instruction before it (%d wrong)", bad);
	CHECK_THAT(sp_rb_line(&b.lines, -1) == 5, "no pc: the first line");
	CHECK_THAT(sp_rb_line(&b.lines, 100000) == 5 || sp_rb_line(&b.lines, 100000) == 699,
	   "a pc past the table reads nothing past it");
	sp_rb_lines_release(&a.lines);
	sp_rb_lines_release(&b.lines);
	/* a table claiming 2^32 entries is not read; the first line stays */
	build_iseq(1800, 600, 3, false);
	put32(BODY + 136, 0xffffffffu);
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &b, &why) == 0 && !b.lines.lines &&
	   sp_rb_line(&b.lines, 40) == 5, "a line table too large: the first line");
	sp_rb_lines_release(&b.lines);
	/* a succinct table cut short by unmapped memory */
	build_iseq(1800, 600, 3, false);
	put64(BODY + 144, BASE + MEMSZ - 100);	/* 368 bytes, 100 of them mapped */
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &b, &why) == 0 && !b.lines.succ,
	   "a succinct table past the readable memory is not used");
	sp_rb_lines_release(&b.lines);
}

static void test_strings(void)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_RUBY, 3, 1, NULL);
	struct sp_rb_iseq q;
	const char *why;
	char out[64];

	if (!l)
		return;
	build_iseq(10, 1, 1, true);
	/* heap string of 2^39 bytes: cut */
	put64(HEAPSTR, 0x05 | 1u << 13);
	put64(HEAPSTR + 16, 1ull << 39);
	put64(HEAPSTR + 24, BASE + TEXT);
	memset(mem + TEXT, 'x', 4096);
	mem[TEXT + 3] = 0;
	CHECK_THAT(sp_rb_str(l, &m, BASE + HEAPSTR, out, sizeof(out)) == 0 && strlen(out) == 63 &&
	   !strcmp(out + 60, "...") && out[3] == '?', "a huge heap string is cut, its NUL shown");
	put64(HEAPSTR, 0x07);
	CHECK_THAT(sp_rb_str(l, &m, BASE + HEAPSTR, out, sizeof(out)) == -1, "an Array is no string");
	CHECK_THAT(sp_rb_str(l, &m, BASE + 0x10, out, sizeof(out)) == -1, "unmapped: no string");
	/* the path as [path, realpath], embedded then on the heap */
	put64(ARR, 0x07 | 1u << 13 | 2u << 15);
	put64(ARR + 16, BASE + PATH);
	put64(BODY + 64, BASE + ARR);
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &q, &why) == 0 && !strcmp(q.file, "/a.rb!"),
	   "a path Array (embedded)");
	sp_rb_lines_release(&q.lines);
	put64(ARR, 0x07);
	put64(ARR + 16, 2);
	put64(ARR + 32, BASE + ARR + 40);
	put64(ARR + 40, BASE + PATH);
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &q, &why) == 0 && !strcmp(q.file, "/a.rb!"),
	   "a path Array (on the heap)");
	sp_rb_lines_release(&q.lines);
	put64(ISEQ, 0x1a | 3u << 12);
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &q, &why) == -1 && !strcmp(why, "not an iseq"),
	   "another imemo is not an iseq");
	put64(ISEQ, 0x1a | 7u << 12);
	put64(BODY + 80, BASE + 0x10);
	CHECK_THAT(sp_rb_iseq_read(l, &m, BASE + ISEQ, &q, &why) == -1 && !strcmp(why, "bad label"),
	   "an unreadable label: no name");
}

/* ---- method entries ---- */

enum { ME = 0x100, DEF = 0x140, FOO = 0x200, FOO_EXT = 0x240, FOO_IV = 0x280, FOO_ENT = 0x2c0,
       SING = 0x400, SING_EXT = 0x440, SING_IV = 0x480, SING_ENT = 0x4c0,
       ICLASS = 0x600, NAME = 0x700, SYMS = 0x800, IDS = 0x840, IDS0 = 0x880, IDS0_PTR = 0x900,
       MNAME = 0x2000 };

#define ID_CLASSPATH	0xf01u
#define ID_ATTACHED	0xc11u
#define ID_BAR		(300u << 4 | 1)	/* serial 300 */

/* A class at off: flags, its ext with an iv_tbl of one entry key = val. */
static void build_class(size_t off, uint64_t flags, size_t ext, size_t iv, size_t ent,
			uint64_t key, uint64_t val)
{
	put64(off, flags);
	put64(off + 24, BASE + ext);
	put64(ext + 8, BASE + iv);
	put64(iv + 32, 0);		/* entries_start */
	put64(iv + 40, 1);		/* entries_bound */
	put64(iv + 48, BASE + ent);
	put64(ent + 8, key);
	put64(ent + 16, val);
}

/* Foo#bar: a method entry owned by class Foo ("Foo::Bar" its path), its
 * def an iseq method whose original_id is "bar" in the symbols table. */
static void build_me(void)
{
	memset(mem, 0, sizeof(mem));
	put64(ME, 0x1a | 6u << 12);
	put64(ME + 16, BASE + DEF);
	put64(ME + 32, BASE + FOO);
	put64(DEF, 0);			/* VM_METHOD_TYPE_ISEQ */
	put64(DEF + 32, ID_BAR);
	build_class(FOO, 0x02, FOO_EXT, FOO_IV, FOO_ENT, ID_CLASSPATH, BASE + NAME);
	put64(NAME, 0x05 | 8u << 14);
	memcpy(mem + NAME + 16, "Foo::Bar", 8);
	/* ruby_global_symbols: last_id, str_sym, ids = [[..., "bar" at 600]] */
	put32(SYMS, 4000);
	put64(SYMS + 16, BASE + IDS);
	put64(IDS, 0x07 | 1u << 13 | 1u << 15);	/* embedded, 1 element */
	put64(IDS + 16, BASE + IDS0);
	put64(IDS0, 0x07);			/* on the heap */
	put64(IDS0 + 16, 1024);
	put64(IDS0 + 32, BASE + IDS0_PTR);
	put64(IDS0_PTR + 8 * 600, BASE + MNAME);
	put64(MNAME, 0x05 | 3u << 14);
	memcpy(mem + MNAME + 16, "bar", 3);
}

static void test_method_names(void)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_RUBY, 3, 1, NULL);
	struct sp_rb_method me;
	const char *why;
	char out[SP_PY_NAME_MAX];

	if (!l)
		return;
	build_me();
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strcmp(me.owner, "Foo::Bar#") && !strcmp(me.name, "bar") && me.iseq,
		   "an instance method: its class path and name");
	sp_rb_frame_name(&me, "bar", out, sizeof(out));
	CHECK_THAT(!strcmp(out, "Foo::Bar#bar"), "the method's frame");
	sp_rb_frame_name(&me, "block (2 levels) in bar", out, sizeof(out));
	CHECK_THAT(!strcmp(out, "block (2 levels) in Foo::Bar#bar"), "its block's frame");
	sp_rb_frame_name(&me, "block in <class:Foo>", out, sizeof(out));
	CHECK_THAT(!strcmp(out, "block in <class:Foo>"), "another method's label stays as is");
	sp_rb_frame_name(&me, NULL, out, sizeof(out));
	CHECK_THAT(!strcmp(out, "Foo::Bar#bar"), "a C method's frame: owner and name");
	CHECK_THAT(sp_rb_method_read(l, &m, 0, BASE + ME, &me, &why) == 0 && !me.name[0] &&
		   !strcmp(me.owner, "Foo::Bar#"), "no symbols table: the class still");
	sp_rb_frame_name(&me, "bar", out, sizeof(out));
	CHECK_THAT(!strcmp(out, "Foo::Bar#bar"), "an iseq method needs no name");
	sp_rb_frame_name(&me, NULL, out, sizeof(out));
	CHECK_THAT(!strcmp(out, "Foo::Bar#?"), "a C method without its name says so");

	/* a singleton method: owner is Foo's singleton class, attached to Foo */
	build_class(SING, 0x02 | 1u << 12, SING_EXT, SING_IV, SING_ENT, ID_ATTACHED, BASE + FOO);
	put64(ME + 32, BASE + SING);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strcmp(me.owner, "Foo::Bar."), "a singleton method: Foo::Bar.");
	/* a module's method run from a class: the iclass points at the module */
	put64(ICLASS, 0x1c);
	put64(ICLASS + 8, BASE + FOO);
	put64(FOO, 0x03);
	put64(ME + 32, BASE + ICLASS);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strcmp(me.owner, "Foo::Bar#"), "an iclass: its module's path");
	/* anonymous: no __classpath__ */
	put64(FOO_ENT + 8, 0x1234);
	put64(ME + 32, BASE + FOO);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strcmp(me.owner, "#<Module:0x0000000000100200>#"), "an anonymous module");
	put64(FOO, 0x02);
	put64(FOO_EXT + 8, 0);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strcmp(me.owner, "#<Class:0x0000000000100200>#"), "an anonymous class, no ivars");
	/* an object's own singleton class: attached to a String */
	put64(SING_ENT + 16, BASE + NAME);
	put64(ME + 32, BASE + SING);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strcmp(me.owner, "#<Class:0x0000000000100700>."), "an object's singleton");
	/* a singleton class attached to itself: bounded */
	put64(SING_ENT + 16, BASE + SING);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strncmp(me.owner, "#<Class:", 8), "a cycle of singleton classes ends");
	/* an ivar table claiming 2^40 entries: only the first ones looked at */
	build_me();
	put64(FOO_IV + 40, 1ull << 40);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == 0 &&
		   !strcmp(me.owner, "Foo::Bar#"), "a huge ivar table: bounded");
	/* not a method entry: a cref, or not an imemo */
	put64(ME, 0x1a | 1u << 12);
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, BASE + ME, &me, &why) == -1 &&
		   !strcmp(why, "not a method entry"), "a cref is no method entry");
	CHECK_THAT(sp_rb_method_read(l, &m, BASE + SYMS, 0x10, &me, &why) == -1 &&
		   !strcmp(why, "unreadable"), "unmapped: unreadable");
}

static void test_ids(void)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_RUBY, 3, 1, NULL);
	char out[64];

	if (!l)
		return;
	build_me();
	CHECK_THAT(sp_rb_id_name(l, &m, BASE + SYMS, ID_BAR, out, sizeof(out)) == 0 &&
		   !strcmp(out, "bar"), "an ID's name");
	CHECK_THAT(sp_rb_id_name(l, &m, BASE + SYMS, 4001u << 4, out, sizeof(out)) == -1,
		   "past last_id: none");
	CHECK_THAT(sp_rb_id_name(l, &m, BASE + SYMS, 301u << 4, out, sizeof(out)) == -1 && !out[0],
		   "an empty slot: none");
	put32(SYMS, 0xffffffffu);
	CHECK_THAT(sp_rb_id_name(l, &m, BASE + SYMS, 3000u << 4, out, sizeof(out)) == -1,
		   "past the ids Array: none");
	put64(IDS0 + 16, 1ull << 62);
	CHECK_THAT(sp_rb_id_name(l, &m, BASE + SYMS, 4000u << 4, out, sizeof(out)) == -1,
		   "an Array claiming 2^62 elements: its reads fail, no allocation");
}

static void test_find_symbols(void)
{
	/* Debian's 3.1.2: rb_id2str ends "xor %esi,%esi; jmp get_id_serial_entry" */
	static const uint8_t id2str[] = { 0x48, 0x89, 0xf8, 0x48, 0xc1, 0xe8, 0x04, 0x48, 0x81,
		0xff, 0xa9, 0, 0, 0, 0x0f, 0x47, 0xf8, 0x31, 0xf6, 0xe9, 0x78, 0xdd, 0xff, 0xff };
	/* there: cmp %edi,0x1a8571(%rip); jb; mov 0x1a8578(%rip),%rdi */
	static const uint8_t entry[] = { 0x39, 0x3d, 0x71, 0x85, 0x1a, 0x00, 0x72, 0x5f, 0x48, 0x8b,
		0x3d, 0x78, 0x85, 0x1a, 0x00 };
	uint64_t jump;

	CHECK_THAT(sp_rb_find_symbols(id2str, sizeof(id2str), 0x208e80, &jump) == 0 &&
		   jump == 0x206c10, "rb_id2str: its tail jump");
	CHECK_THAT(sp_rb_find_symbols(entry, sizeof(entry), 0x206c49, &jump) == 0x3af1c0,
		   "the serial check: ruby_global_symbols");
	CHECK_THAT(sp_rb_find_symbols(entry, 8, 0x206c49, &jump) == 0 && !jump,
		   "cut short: nothing");
}

int main(void)
{
	TAP_RUN(test_lines);
	TAP_RUN(test_strings);
	TAP_RUN(test_method_names);
	TAP_RUN(test_ids);
	TAP_RUN(test_find_symbols);
	return TAP_DONE();
}
