// SPDX-License-Identifier: MIT
/*
 * Fuzz what sp-record reads out of a Python process to name interpreted
 * frames (lib/record/interp_py.c): the process's memory is the input,
 * mapped at a fixed address; the first bytes say where the code object is
 * and which instruction is current (as the BPF program copies them out).
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
	return 0;
}
