// SPDX-License-Identifier: MIT
/*
 * Fuzz what sp-record reads out of a Python or Ruby process to name
 * interpreted frames (lib/record/interp_py.c, interp_rb.c): the process's
 * memory is the input,
 * mapped at a fixed address; the first bytes say where the code object is
 * and which instruction is current (as the BPF program copies them out).
 * The same bytes are read as a Ruby iseq at the same place (its label and
 * path RStrings, its insns_info line table and succinct index), and as
 * a Ruby method entry (its owner's class path through iclasses, singleton
 * classes and ivar tables, its method's ID through the symbols table),
 * and as the BPF program's copy of a code object (struct sp_bpf_icode, its
 * strings and line table cut short anywhere).
 * A forged code object, string or line table must not crash, loop,
 * allocate without bound or read outside the input: every name must end
 * within its buffer, every line table be no larger than its bound.
 */
#include <stdlib.h>
#include <string.h>

#include "record/interpP.h"
#include "record.h"
#include "sp.h"

#define BASE		0x10000ull
#define CODE_TYPE	0x4242ull

struct mem {
	const uint8_t *data;
	size_t size;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = ctx;

	if (addr < BASE || addr - BASE > m->size || len > m->size - (addr - BASE))
		return -1;
	memcpy(buf, m->data + (addr - BASE), len);
	return 0;
}

static void fuzz_ruby(const struct sp_interp_mem *m, uint64_t addr, int32_t instr)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_RUBY, 3, 1, NULL);
	const struct mem *mm = m->ctx;
	struct sp_rb_iseq q;
	const char *why = NULL;
	int line;

	if (!l)
		return;
	if (sp_rb_iseq_read(l, m, addr, &q, &why)) {
		if (!why)
			abort();
		return;
	}
	if (strnlen(q.label, sizeof(q.label)) >= sizeof(q.label) ||
	    strnlen(q.file, sizeof(q.file)) >= sizeof(q.file) || q.lines.n > SP_RB_INSNS_MAX ||
	    (size_t)q.lines.n * 4 > mm->size || q.lines.nsucc * 8 > mm->size)
		abort();
	line = sp_rb_line(&q.lines, instr);
	if (q.lines.n && line != q.lines.firstline) {
		uint32_t i;	/* a line is the first line or one of the table's */

		for (i = 0; i < q.lines.n && q.lines.lines[i] != line; i++)
			;
		if (i == q.lines.n)
			abort();
	}
	sp_rb_line(&q.lines, (int32_t)q.lines.iseq_size);
	sp_rb_lines_release(&q.lines);
}

/* The same bytes as a method entry, with ruby_global_symbols at the
 * input's start: its name, its class path, a frame named with them. */
static void fuzz_ruby_me(const struct sp_interp_mem *m, uint64_t addr)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_RUBY, 3, 1, NULL);
	struct sp_rb_method me;
	const char *why = NULL;
	char out[SP_PY_NAME_MAX];

	if (!l)
		return;
	if (sp_rb_method_read(l, m, BASE, addr, &me, &why)) {
		if (!why)
			abort();
		return;
	}
	if (strnlen(me.owner, sizeof(me.owner)) >= sizeof(me.owner) ||
	    strnlen(me.name, sizeof(me.name)) >= sizeof(me.name))
		abort();
	sp_rb_frame_name(&me, NULL, out, sizeof(out));
	if (strnlen(out, sizeof(out)) >= sizeof(out))
		abort();
	sp_rb_frame_name(&me, "block (2 levels) in x", out, sizeof(out));
	if (strnlen(out, sizeof(out)) >= sizeof(out))
		abort();
}

/* The input as the copy of a code object (a record cut after its size). */
static void fuzz_copy(const struct sp_interp_layout *l, const uint8_t *data, size_t size,
		      int32_t instr)
{
	static struct sp_bpf_icode r;
	struct sp_py_code c;
	const char *why = NULL;
	int line;

	memset(&r, 0, sizeof(r));
	memcpy(&r, data, size < sizeof(r) ? size : sizeof(r));
	if (sp_py_code_copy(l, &r, size, CODE_TYPE, &c, &why)) {
		if (!why)
			abort();
		return;
	}
	if (strnlen(c.qualname, sizeof(c.qualname)) >= sizeof(c.qualname) ||
	    strnlen(c.file, sizeof(c.file)) >= sizeof(c.file) || c.len > sizeof(r.lines) ||
	    c.len > size)
		abort();
	sp_py_line_at(c.linetable, c.len, c.firstline, instr, &line);
	sp_py_code_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct sp_interp_layout *l = sp_interp_layout_find(SP_RT_PYTHON, 3, 11, NULL);
	struct mem mm = { data, size };
	const struct sp_interp_mem m = { fake_read, &mm };
	struct sp_py_code c;
	const char *why;
	uint16_t off;
	int32_t instr;

	if (!l || size < 6)
		return 0;
	memcpy(&off, data, 2);
	memcpy(&instr, data + 2, 4);
	/* the raw input as a line table, whatever it holds */
	sp_py_line(data, size, 1, instr);
	if (sp_py_code_read(l, &m, BASE + off, CODE_TYPE, &c, &why) == 0) {
		if (strnlen(c.qualname, sizeof(c.qualname)) >= sizeof(c.qualname) ||
		    strnlen(c.file, sizeof(c.file)) >= sizeof(c.file) ||
		    c.len > SP_PY_LINETABLE_MAX || c.len > size)
			abort();
		sp_py_line(c.linetable, c.len, c.firstline, instr);
		sp_py_code_release(&c);
	} else if (!why) {
		abort();
	}
	fuzz_copy(l, data, size, instr);
	fuzz_ruby(&m, BASE + off, instr);
	fuzz_ruby_me(&m, BASE + off);
	return 0;
}
