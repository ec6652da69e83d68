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

/* What a compact str's header says: its length in code points, the bytes
 * of one, and where its characters start. -1 for what no name is. */
struct str_head {
	uint64_t len;
	uint32_t kind;
	size_t off;
};

static int str_head(const struct sp_interp_layout *l, const uint8_t *hdr, struct str_head *h)
{
	uint32_t state = sp_interp_u32(hdr, l->str_state);

	h->len = sp_interp_u64(hdr, l->str_length);
	h->kind = (state >> 2) & 7;
	if (!(state & (1u << 5)))	/* not compact: names never are */
		return -1;
	if (state & (1u << 6)) {
		h->kind = 1;
		h->off = l->str_ascii_data;
	} else {
		h->off = l->str_compact_data;
	}
	if (h->kind != 1 && h->kind != 2 && h->kind != 4)
		return -1;
	return h->len > (1ull << 40) ? -1 : 0;
}

/* The first n of h's code points, at data, as UTF-8 into out (cap >= 8),
 * cut at cap - 4 bytes; "..." ends it when it holds fewer than all. */
static void str_utf8(const struct str_head *h, const uint8_t *data, uint64_t n, char *out,
		     size_t cap)
{
	size_t len = 0, room = cap - 4;
	bool cut = n < h->len;
	uint64_t i;
	uint32_t c;

	for (i = 0; i < n; i++) {
		if (h->kind == 1)
			c = data[i];
		else if (h->kind == 2)
			c = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		else
			c = sp_interp_u32(data, 4 * i);
		/* escaping happens where the name is printed; a NUL would cut it here */
		if (!c)
			c = 0xfffd;
		if (!put_utf8(out, room, &len, c)) {
			cut = true;
			break;
		}
	}
	if (cut) {
		memcpy(out + len, "...", 3);
		len += 3;
	}
	out[len] = 0;
}

int sp_py_str(const struct sp_interp_layout *l, const struct sp_interp_mem *m, uint64_t addr,
	      char *out, size_t cap)
{
	uint8_t hdr[128], data[SP_PY_NAME_MAX * 4];
	struct str_head h;
	uint64_t want;

	if (cap > SP_PY_NAME_MAX)
		cap = SP_PY_NAME_MAX;
	out[0] = 0;
	if (!addr || cap < 8 || l->str_compact_data > sizeof(hdr) ||
	    m->read(m->ctx, addr, hdr, l->str_compact_data) || str_head(l, hdr, &h))
		return -1;
	/* each code point is >= 1 byte of UTF-8 */
	want = h.len < cap - 4 ? h.len : cap - 4;
	if (want && m->read(m->ctx, addr + h.off, data, want * h.kind))
		return -1;
	str_utf8(&h, data, want, out, cap);
	return 0;
}

int sp_py_str_copy(const struct sp_interp_layout *l, const uint8_t *b, size_t len, char *out,
		   size_t cap)
{
	struct str_head h;
	uint64_t want;

	if (cap > SP_PY_NAME_MAX)
		cap = SP_PY_NAME_MAX;
	if (cap)
		out[0] = 0;
	if (cap < 8 || len < l->str_compact_data || str_head(l, b, &h) || h.off > len)
		return -1;
	want = h.len < cap - 4 ? h.len : cap - 4;
	if (want <= (len - h.off) / h.kind) {
		str_utf8(&h, b + h.off, want, out, cap);
		return 0;
	}
	str_utf8(&h, b + h.off, (len - h.off) / h.kind, out, cap);	/* the characters copied */
	return 1;
}

/*
 * Whether s can be a code object's co_qualname as compile() makes them:
 * identifiers (non-ASCII ones too), dots, and <module>, <lambda>,
 * <locals>, <genexpr> and the like (3.12's "<generic parameters of T>":
 * inside angle brackets, any printable character but '/'). Only printable
 * ASCII is judged: control characters and what is no character are a
 * forged name's, shown escaped, not a freed one's. A frame sampled just as its code was
 * freed (a module run once at start-up, such as getpath) can point to a
 * name whose memory holds another string by then ("/usr"): better no name
 * than that one.
 */
static bool qualname_plausible(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned int angle = 0;	/* inside <...>: "<generic parameters of T>" */

	if (!*p)
		return false;
	for (; *p; p++) {
		if (*p == '<')
			angle++;
		else if (*p == '>' && angle)
			angle--;
		else if (*p < 0x20 || *p >= 0x7f)
			continue;	/* no name's, but a forged one's: escaped when shown */
		else if (angle ? *p == '/' :
			 !(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
			 !(*p >= '0' && *p <= '9') && *p != '_' && *p != '.')
			return false;
	}
	return true;
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
	c->file_addr = sp_interp_u64(code, l->bpf.co_file);
	if (sp_py_str(l, m, c->name_addr, c->qualname, sizeof(c->qualname)) ||
	    !qualname_plausible(c->qualname)) {
		*why = "bad name";
		return -1;
	}
	if (sp_py_str(l, m, c->file_addr, c->file, sizeof(c->file)))
		snprintf(c->file, sizeof(c->file), "?");
	tab = sp_interp_u64(code, l->bpf.co_lines);
	if (tab && l->bpf.bytes_data <= sizeof(hdr) &&
	    !m->read(m->ctx, tab, hdr, l->bpf.bytes_data)) {
		size = sp_interp_u64(hdr, l->bpf.var_size);
		c->whole = !size;
		if (size && size <= SP_PY_LINETABLE_MAX) {
			c->linetable = sp_xmalloc(size);
			if (m->read(m->ctx, tab + l->bpf.bytes_data, c->linetable, size)) {
				free(c->linetable);
				c->linetable = NULL;
			} else {
				c->len = size;
				c->whole = true;
			}
		}
	}
	return 0;
}

int sp_py_code_copy(const struct sp_interp_layout *l, const struct sp_bpf_icode *r, size_t len,
		    uint64_t code_type, struct sp_py_code *c, const char **why)
{
	const size_t fixed = offsetof(struct sp_bpf_icode, lines);
	const struct sp_bpf_ilayout *b = &l->bpf;
	size_t n;
	int rc;

	memset(c, 0, sizeof(*c));
	*why = "unreadable";
	if (len < fixed || r->head_len < sizeof(r->head))
		return -1;
	if (sp_interp_u64(r->head, l->ob_type) != code_type) {
		*why = "not a code object";
		return -1;
	}
	c->firstline = (int)sp_interp_u32(r->head, b->co_firstline);
	c->name_addr = sp_interp_u64(r->head, b->co_name);
	c->file_addr = sp_interp_u64(r->head, b->co_file);
	if ((uint32_t)c->firstline != r->firstline ||
	    ((uint32_t)c->name_addr ^ (uint32_t)c->file_addr) != r->name) {
		*why = "not the code of its frames";
		return -1;
	}
	rc = sp_py_str_copy(l, r->qual, r->qual_len < sizeof(r->qual) ? r->qual_len :
			    sizeof(r->qual), c->qualname, sizeof(c->qualname));
	if (rc < 0 || !qualname_plausible(c->qualname)) {
		*why = "bad name";
		return -1;
	}
	c->cut = rc > 0;
	rc = sp_py_str_copy(l, r->file, r->file_len < sizeof(r->file) ? r->file_len :
			    sizeof(r->file), c->file, sizeof(c->file));
	if (rc < 0)
		snprintf(c->file, sizeof(c->file), "?");
	c->cut |= rc != 0;	/* an unreadable file: the live object may say */
	n = r->lines_len < sizeof(r->lines) ? r->lines_len : sizeof(r->lines);
	if (n > len - fixed)
		n = len - fixed;	/* the record was cut short */
	c->whole = r->lines_size == n && sp_interp_u64(r->head, b->co_lines);
	if (n) {
		c->linetable = sp_xmalloc(n);
		memcpy(c->linetable, r->lines, n);
		c->len = n;
	}
	return 0;
}

void sp_py_code_release(struct sp_py_code *c)
{
	free(c->linetable);
	c->linetable = NULL;
	c->len = 0;
}

/* A varint of the location table at tab[*i] (6 bits a byte, bit 6 = more);
 * one cut by the table's end leaves *i past it. */
static uint32_t varint(const uint8_t *tab, size_t len, size_t *i)
{
	uint32_t v = 0, shift = 0, b;

	do {
		if (*i >= len) {
			*i = len + 1;
			return v;
		}
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

bool sp_py_line_at(const uint8_t *tab, size_t len, int firstline, int instr, int *out)
{
	return sp_py_line_from(tab, len, firstline, instr, NULL, out);
}

bool sp_py_line_from(const uint8_t *tab, size_t len, int firstline, int instr,
		     struct sp_py_linepos *pos, int *out)
{
	long line = firstline, addr = 0;
	size_t i = 0;
	unsigned int code, n;

	*out = firstline;
	if (instr < 0)
		return true;
	if (!tab)
		return false;
	if (pos && pos->set && instr >= pos->addr && pos->i < len) {
		i = pos->i;
		addr = pos->addr;
		line = pos->line;
	}
	while (i < len) {
		size_t at = i;
		long before = line;
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
		/* an entry cut by the table's end (a table copied in part) says
		 * nothing */
		if (i > len || line < 0 || line > (1l << 30))
			return false;
		if (instr < addr + n) {
			*out = (int)line;
			if (pos)
				*pos = (struct sp_py_linepos){ at, addr, before, true };
			return true;
		}
		addr += n;
	}
	return false;
}

int sp_py_line(const uint8_t *tab, size_t len, int firstline, int instr)
{
	int line;

	return sp_py_line_at(tab, len, firstline, instr, &line) ? line : firstline;
}
