// SPDX-License-Identifier: MIT
/*
 * CPython's structures as sp-record reads them out of a process
 * (interpP.h): a code object's qualified name, file and first line, its
 * 3.11 location table, and the line of one of its instructions.
 *
 * What is read belongs to the process recorded, which may be hostile:
 * every read goes through the caller's reader (bounded, may fail), every
 * size read is checked before use, strings are cut at SP_PY_NAME_MAX, and
 * the line table walk reads no byte past what was copied.
 */
#include <stdlib.h>
#include <string.h>

#include "interpP.h"
#include "sp.h"

/* One code point as UTF-8 at out[*n], if it fits below cap. */
static bool put_utf8(char *out, size_t cap, size_t *n, uint32_t c)
{
	uint8_t b[4];
	size_t k;

	if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
		c = 0xfffd;
	if (c < 0x80) {
		b[0] = (uint8_t)c;
		k = 1;
	} else if (c < 0x800) {
		b[0] = 0xc0 | (uint8_t)(c >> 6);
		b[1] = 0x80 | (c & 0x3f);
		k = 2;
	} else if (c < 0x10000) {
		b[0] = 0xe0 | (uint8_t)(c >> 12);
		b[1] = 0x80 | ((c >> 6) & 0x3f);
		b[2] = 0x80 | (c & 0x3f);
		k = 3;
	} else {
		b[0] = 0xf0 | (uint8_t)(c >> 18);
		b[1] = 0x80 | ((c >> 12) & 0x3f);
		b[2] = 0x80 | ((c >> 6) & 0x3f);
		b[3] = 0x80 | (c & 0x3f);
		k = 4;
	}
	if (*n + k > cap)
		return false;
	memcpy(out + *n, b, k);
	*n += k;
	return true;
}

int sp_py_str(const struct sp_interp_layout *l, const struct sp_interp_mem *m, uint64_t addr,
	      char *out, size_t cap)
{
	uint8_t hdr[128], data[SP_PY_NAME_MAX * 4];
	uint64_t len, want, i;
	uint32_t state, kind, c;
	size_t n = 0, room, off;
	bool cut;

	if (cap > SP_PY_NAME_MAX)
		cap = SP_PY_NAME_MAX;
	room = cap - 4;
	out[0] = 0;
	if (!addr || cap < 8 || l->str_compact_data > sizeof(hdr) ||
	    m->read(m->ctx, addr, hdr, l->str_compact_data))
		return -1;
	len = sp_interp_u64(hdr, l->str_length);
	state = sp_interp_u32(hdr, l->str_state);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)))	/* not compact: names never are */
		return -1;
	if (state & (1u << 6)) {
		kind = 1;
		off = l->str_ascii_data;
	} else {
		off = l->str_compact_data;
	}
	if (kind != 1 && kind != 2 && kind != 4)
		return -1;
	if (len > (1ull << 40))
		return -1;
	want = len < room ? len : room;	/* each code point is >= 1 byte of UTF-8 */
	if (want && m->read(m->ctx, addr + off, data, want * kind))
		return -1;
	cut = want < len;
	for (i = 0; i < want; i++) {
		if (kind == 1)
			c = data[i];
		else if (kind == 2)
			c = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		else
			c = sp_interp_u32(data, 4 * i);
		/* escaping happens where the name is printed; a NUL would cut it here */
		if (!c)
			c = 0xfffd;
		if (!put_utf8(out, room, &n, c)) {
			cut = true;
			break;
		}
	}
	if (cut) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = 0;
	return 0;
}

int sp_py_code_read(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		    uint64_t addr, uint64_t code_type, struct sp_py_code *c, const char **why)
{
	uint8_t code[256], hdr[64];
	uint64_t tab, size;

	memset(c, 0, sizeof(*c));
	*why = "unreadable";
	if (l->code_size > sizeof(code) || m->read(m->ctx, addr, code, l->code_size))
		return -1;
	if (sp_interp_u64(code, l->ob_type) != code_type) {
		*why = "not a code object";
		return -1;
	}
	c->firstline = (int)sp_interp_u32(code, l->bpf.co_firstline);
	c->name_addr = sp_interp_u64(code, l->bpf.co_name);
	if (sp_py_str(l, m, c->name_addr, c->qualname, sizeof(c->qualname)) ||
	    !c->qualname[0]) {
		*why = "bad name";
		return -1;
	}
	if (sp_py_str(l, m, sp_interp_u64(code, l->co_filename), c->file, sizeof(c->file)))
		snprintf(c->file, sizeof(c->file), "?");
	tab = sp_interp_u64(code, l->co_linetable);
	if (tab && l->bytes_data <= sizeof(hdr) && !m->read(m->ctx, tab, hdr, l->bytes_data)) {
		size = sp_interp_u64(hdr, l->var_size);
		if (size && size <= SP_PY_LINETABLE_MAX) {
			c->linetable = sp_xmalloc(size);
			if (m->read(m->ctx, tab + l->bytes_data, c->linetable, size)) {
				free(c->linetable);
				c->linetable = NULL;
			} else {
				c->len = size;
			}
		}
	}
	return 0;
}

void sp_py_code_release(struct sp_py_code *c)
{
	free(c->linetable);
	c->linetable = NULL;
	c->len = 0;
}

/* A varint of the location table at tab[*i] (6 bits a byte, bit 6 = more). */
static uint32_t varint(const uint8_t *tab, size_t len, size_t *i)
{
	uint32_t v = 0, shift = 0, b;

	do {
		if (*i >= len)
			return v;
		b = tab[(*i)++];
		if (shift < 32)
			v |= (b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int svarint(const uint8_t *tab, size_t len, size_t *i)
{
	uint32_t u = varint(tab, len, i);

	return u & 1 ? -(int)(u >> 1 & 0x3fffffff) : (int)(u >> 1 & 0x3fffffff);
}

int sp_py_line(const uint8_t *tab, size_t len, int firstline, int instr)
{
	long line = firstline, addr = 0;
	size_t i = 0;
	unsigned int code, n;

	if (instr < 0 || !tab)
		return firstline;
	while (i < len) {
		uint8_t b = tab[i++];

		if (!(b & 0x80))
			break;	/* not the start of an entry: a table we cannot read */
		code = (b >> 3) & 15;
		n = (b & 7) + 1;
		switch (code) {
		case 15:	/* no location */
			break;
		case 14:	/* long form: line delta, end line, columns */
			line += svarint(tab, len, &i);
			varint(tab, len, &i);
			varint(tab, len, &i);
			varint(tab, len, &i);
			break;
		case 13:	/* no columns */
			line += svarint(tab, len, &i);
			break;
		case 10: case 11: case 12:	/* one line, delta 0..2, two column bytes */
			line += code - 10;
			i += 2;
			break;
		default:	/* short form: same line, one column byte */
			i += 1;
			break;
		}
		if (line < 0 || line > (1l << 30))
			return firstline;
		if (instr < addr + n)
			return (int)line;
		addr += n;
	}
	return firstline;
}
