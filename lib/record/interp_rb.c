// SPDX-License-Identifier: MIT
/*
 * Ruby's structures as sp-record reads them out of a process (interpP.h):
 * an instruction sequence's label, file and first line, its line table
 * (insns_info: the line of each entry, and where each entry starts, as a
 * positions array or as the succinct index table release builds keep),
 * and the line of one of its instructions; a frame's method entry: its
 * owner's class path ("Foo::Bar", a singleton class's by its attached
 * object, "#<Class:0x...>" for an anonymous one) and its method's name
 * (an ID, looked up in ruby_global_symbols), found in rb_id2str's code
 * when the file has no full symbol table.
 *
 * What is read belongs to the process recorded, which may be hostile:
 * every read goes through the caller's reader (bounded, may fail), every
 * length and count read is checked before use, strings are cut at
 * SP_PY_NAME_MAX, and a line lookup reads nothing past what was copied.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "interpP.h"
#include "sp.h"

#define T_MASK		0x1fu
#define T_CLASS		0x02u
#define T_MODULE	0x03u
#define T_STRING	0x05u
#define T_ARRAY		0x07u
#define T_IMEMO		0x1au
#define T_ICLASS	0x1cu
#define IMEMO_MENT	6u
#define IMEMO_ISEQ	7u
#define FL_SINGLETON	(1ull << 12)	/* FL_USER0 on a class */
#define METHOD_ISEQ	0u		/* rb_method_type_t */
#define METHOD_CFUNC	1u
#define ID_ENTRY_UNIT	512u		/* symbols per ids entry, 2 VALUEs each */
#define FL_USER1	(1ull << 13)	/* RString: not embedded; RArray: embedded */
#define STR_EMBED_MAX	24u		/* bytes an embedded RString holds */
/* the succinct index table: 54 ranks of 7 bits in 6 words, then blocks of
 * 512 positions (rank, 7 small ranks of 9 bits, 8 words of bits) */
#define SUCC_IMM	54u
#define SUCC_IMM_WORDS	6u
#define SUCC_BLOCK_WORDS 10u

int sp_rb_str(const struct sp_interp_layout *l, const struct sp_interp_mem *m, uint64_t addr,
	      char *out, size_t cap)
{
	uint8_t hdr[64];
	uint64_t flags, len, ptr;
	size_t want, i;

	if (cap > SP_PY_NAME_MAX)
		cap = SP_PY_NAME_MAX;
	if (cap < 8)
		return -1;
	out[0] = 0;
	if (!addr || (addr & 7) || l->rb.rstr_embed + STR_EMBED_MAX > sizeof(hdr) ||
	    m->read(m->ctx, addr, hdr, l->rb.rstr_embed + STR_EMBED_MAX))
		return -1;
	flags = sp_interp_u64(hdr, 0);
	if ((flags & T_MASK) != T_STRING)
		return -1;
	if (flags & FL_USER1) {
		len = sp_interp_u64(hdr, l->rb.rstr_heap_len);
		ptr = sp_interp_u64(hdr, l->rb.rstr_heap_ptr);
	} else {
		len = (flags >> 14) & 0x1f;
		if (len > STR_EMBED_MAX)
			return -1;
		ptr = addr + l->rb.rstr_embed;
	}
	if (len > (1ull << 40))
		return -1;
	want = len < cap - 4 ? (size_t)len : cap - 4;
	if (want && m->read(m->ctx, ptr, out, want))
		return -1;
	for (i = 0; i < want; i++)	/* escaped where printed; a NUL would cut it */
		if (!out[i])
			out[i] = '?';
	if (want < len) {
		memcpy(out + want, "...", 3);
		want += 3;
	}
	out[want] = 0;
	return 0;
}

/* Element i of the Array at addr into *v: 0, or -1 (not an Array, i past
 * its end, unreadable). */
static int rb_ary_entry(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
			uint64_t addr, uint64_t i, uint64_t *v)
{
	uint64_t flags = 0, len = 0, ptr;

	if (!addr || (addr & 7) || m->read(m->ctx, addr, &flags, sizeof(flags)) ||
	    (flags & T_MASK) != T_ARRAY)
		return -1;
	if (flags & FL_USER1) {
		len = (flags >> 15) & 3;
		ptr = addr + l->rb.rary_embed;
	} else if (m->read(m->ctx, addr + l->rb.rary_embed, &len, sizeof(len)) ||
		   m->read(m->ctx, addr + l->rb.rary_heap_ptr, &ptr, sizeof(ptr))) {
		return -1;
	}
	if (i >= len || i > (1ull << 32))
		return -1;
	return m->read(m->ctx, ptr + i * 8, v, sizeof(*v));
}

/* pathobj: the path, or an Array [path, realpath]. */
static int rb_path(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		   uint64_t addr, char *out, size_t cap)
{
	uint64_t flags = 0, elt = 0;

	if (!addr || (addr & 7) || m->read(m->ctx, addr, &flags, sizeof(flags)))
		return -1;
	if ((flags & T_MASK) != T_ARRAY)
		return sp_rb_str(l, m, addr, out, cap);
	if (rb_ary_entry(l, m, addr, 0, &elt))
		return -1;
	return sp_rb_str(l, m, elt, out, cap);
}

/* n elements of size bytes at addr, malloc'd; NULL when unreadable. */
static void *read_array(const struct sp_interp_mem *m, uint64_t addr, size_t n, size_t size)
{
	void *p;

	if (!addr || !n)
		return NULL;
	p = sp_xmalloc(n * size);
	if (m->read(m->ctx, addr, p, n * size)) {
		free(p);
		return NULL;
	}
	return p;
}

/* The line table of a body: lines of each entry, and where entries start. */
static void read_lines(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		       const uint8_t *body, struct sp_rb_lines *t)
{
	uint32_t n = sp_interp_u32(body, l->rb.info_size), i;
	uint64_t pos = sp_interp_u64(body, l->rb.info_pos), succ = sp_interp_u64(body, l->rb.info_succ);
	uint8_t *ents;

	if (!n || n > SP_RB_INSNS_MAX || n > t->iseq_size + 1 || l->rb.entry_size < 4 ||
	    l->rb.entry_size > 64)
		return;
	ents = read_array(m, sp_interp_u64(body, l->rb.info_body), n, l->rb.entry_size);
	if (!ents)
		return;
	t->lines = sp_xmalloc(n * sizeof(*t->lines));
	for (i = 0; i < n; i++)
		t->lines[i] = (int32_t)sp_interp_u32(ents, (size_t)i * l->rb.entry_size);
	free(ents);
	t->n = n;
	if (n == 1)
		return;
	if (pos) {
		t->positions = read_array(m, pos, n, sizeof(uint32_t));
	} else if (succ) {
		size_t words = SUCC_IMM_WORDS;

		if (t->iseq_size > SUCC_IMM)
			words += ((t->iseq_size - SUCC_IMM) / 512 + 1) * SUCC_BLOCK_WORDS;
		t->succ = read_array(m, succ, words, sizeof(uint64_t));
		t->nsucc = t->succ ? words : 0;
	}
}

int sp_rb_iseq_read(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		    uint64_t addr, struct sp_rb_iseq *q, const char **why)
{
	uint8_t iseq[64], body[256];
	uint64_t flags, first;

	memset(q, 0, sizeof(*q));
	*why = "unreadable";
	if (l->rb.iseq_size > sizeof(iseq) || l->rb.body_size > sizeof(body) ||
	    l->bpf.rb_iseq_body + 8 > l->rb.iseq_size ||
	    m->read(m->ctx, addr, iseq, l->rb.iseq_size))
		return -1;
	flags = sp_interp_u64(iseq, 0);
	if ((flags & T_MASK) != T_IMEMO || ((flags >> 12) & 0xf) != IMEMO_ISEQ) {
		*why = "not an iseq";
		return -1;
	}
	q->body = sp_interp_u64(iseq, l->bpf.rb_iseq_body);
	if (!q->body || m->read(m->ctx, q->body, body, l->rb.body_size))
		return -1;
	q->lines.iseq_size = sp_interp_u32(body, l->bpf.rb_body_size);
	first = sp_interp_u64(body, l->rb.loc_first);
	q->lines.firstline = first & 1 ? (int)((first >> 1) & 0x3fffffff) : 0;
	if (sp_rb_str(l, m, sp_interp_u64(body, l->rb.loc_label), q->label, sizeof(q->label)) ||
	    !q->label[0]) {
		*why = "bad label";
		return -1;
	}
	if (rb_path(l, m, sp_interp_u64(body, l->rb.loc_path), q->file, sizeof(q->file)))
		snprintf(q->file, sizeof(q->file), "?");
	if (q->lines.iseq_size <= SP_RB_INSNS_MAX)
		read_lines(l, m, body, &q->lines);
	return 0;
}

void sp_rb_lines_release(struct sp_rb_lines *t)
{
	free(t->lines);
	free(t->positions);
	free(t->succ);
	t->lines = NULL;
	t->positions = NULL;
	t->succ = NULL;
	t->n = 0;
	t->nsucc = 0;
}

/* How many entries start at or before pos: the succinct table's rank. */
static uint32_t succ_rank(const struct sp_rb_lines *t, uint32_t pos, bool *ok)
{
	const uint64_t *b;
	uint32_t bi, sbi, r;
	size_t at;

	*ok = true;
	if (pos < SUCC_IMM)
		return (uint32_t)(t->succ[pos / 9] >> (pos % 9 * 7)) & 0x7f;
	at = SUCC_IMM_WORDS + (size_t)((pos - SUCC_IMM) / 512) * SUCC_BLOCK_WORDS;
	if (at + SUCC_BLOCK_WORDS > t->nsucc) {
		*ok = false;
		return 0;
	}
	b = t->succ + at;
	bi = (pos - SUCC_IMM) % 512;
	sbi = bi / 64;
	r = (uint32_t)b[0];	/* rank, then padding */
	if (sbi)
		r += (uint32_t)(b[1] >> ((sbi - 1) * 9)) & 0x1ff;
	return r + (uint32_t)__builtin_popcountll(b[2 + sbi] << (63 - bi % 64));
}

int sp_rb_line(const struct sp_rb_lines *t, int pc)
{
	uint32_t pos, idx = 0, i;
	bool ok = true;

	if (pc < 0 || !t->lines || !t->n)
		return t->firstline;
	pos = pc ? (uint32_t)pc - 1 : 0;	/* pc is past the current instruction */
	if (t->n == 1) {
		idx = 1;
	} else if (t->positions) {
		for (i = 0; i < t->n && t->positions[i] <= pos; i++)
			idx = i + 1;
	} else if (t->succ && t->nsucc >= SUCC_IMM_WORDS) {
		idx = succ_rank(t, pos, &ok);
	}
	if (!ok || !idx || idx > t->n || t->lines[idx - 1] < 0)
		return t->firstline;
	return t->lines[idx - 1];
}

/* ---- method entries and class paths ---- */

int sp_rb_id_name(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		  uint64_t symbols, uint64_t id, char *out, size_t cap)
{
	uint64_t serial, ids = 0, ary = 0, str = 0;
	uint32_t last = 0;

	out[0] = 0;
	if (!symbols)
		return -1;
	serial = id > l->rb.last_op_id ? id >> 4 : id;	/* rb_id_to_serial() */
	if (!serial || m->read(m->ctx, symbols + l->rb.sym_last_id, &last, sizeof(last)) ||
	    serial > last || m->read(m->ctx, symbols + l->rb.sym_ids, &ids, sizeof(ids)) ||
	    rb_ary_entry(l, m, ids, serial / ID_ENTRY_UNIT, &ary) ||
	    rb_ary_entry(l, m, ary, serial % ID_ENTRY_UNIT * 2, &str))
		return -1;
	return sp_rb_str(l, m, str, out, cap);
}

/* The value of the instance variable id of class addr (its iv_tbl, an
 * st_table: its entries looked at in order, at most SP_RB_IVARS_MAX of
 * them), 0 when it has none. */
static uint64_t class_ivar(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
			   uint64_t addr, uint32_t id)
{
	uint64_t ext = 0, tbl = 0, st[3], ent[SP_RB_IVARS_MAX * 3], n, i;

	if (m->read(m->ctx, addr + l->rb.class_ext, &ext, sizeof(ext)) || !ext ||
	    m->read(m->ctx, ext + l->rb.ext_iv_tbl, &tbl, sizeof(tbl)) || !tbl ||
	    l->rb.st_bound != l->rb.st_start + 8 || l->rb.st_entries != l->rb.st_start + 16 ||
	    m->read(m->ctx, tbl + l->rb.st_start, st, sizeof(st)))
		return 0;
	if (st[1] <= st[0] || st[0] > (1u << 30))
		return 0;
	n = st[1] - st[0];
	if (n > SP_RB_IVARS_MAX)
		n = SP_RB_IVARS_MAX;
	if (m->read(m->ctx, st[2] + st[0] * 24, ent, n * 24))
		return 0;
	for (i = 0; i < n; i++)	/* {hash, key, record}; a deleted one's key is 0 */
		if (ent[i * 3 + 1] == id)
			return ent[i * 3 + 2];
	return 0;
}

/* The flags of the heap object at addr (0: not one, or unreadable). */
static uint64_t obj_flags(const struct sp_interp_mem *m, uint64_t addr)
{
	uint64_t flags = 0;

	if (!addr || (addr & 7) || m->read(m->ctx, addr, &flags, sizeof(flags)))
		return 0;
	return flags;
}

/* The class path of class addr into out, then sep: its __classpath__, a
 * singleton class's attached class with '.', or an honest anonymous one. */
static void class_path(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		       uint64_t addr, char sep, char *out, size_t cap)
{
	uint64_t flags, att;
	const char *kind = "Class";
	unsigned int hop;
	size_t len;

	for (hop = 0; hop < SP_RB_CLASS_HOPS; hop++) {
		flags = obj_flags(m, addr);
		if ((flags & T_MASK) == T_ICLASS) {	/* a module's copy in a class's chain */
			if (m->read(m->ctx, addr + 8, &addr, sizeof(addr)))
				break;
			continue;
		}
		if ((flags & T_MASK) != T_CLASS && (flags & T_MASK) != T_MODULE)
			break;
		kind = (flags & T_MASK) == T_MODULE ? "Module" : "Class";
		if ((flags & T_MASK) == T_CLASS && (flags & FL_SINGLETON)) {
			att = class_ivar(l, m, addr, l->rb.id_attached);
			sep = '.';
			flags = obj_flags(m, att);
			if ((flags & T_MASK) != T_CLASS && (flags & T_MASK) != T_MODULE) {
				snprintf(out, cap, "#<Class:0x%016" PRIx64 ">%c", att, sep);
				return;	/* an object's own singleton class */
			}
			addr = att;
			continue;
		}
		if (!sp_rb_str(l, m, class_ivar(l, m, addr, l->rb.id_classpath), out, cap) &&
		    out[0]) {
			len = strlen(out);
			if (len + 1 < cap) {
				out[len] = sep;
				out[len + 1] = 0;
			}
			return;
		}
		break;
	}
	snprintf(out, cap, "#<%s:0x%016" PRIx64 ">%c", kind, addr, sep);
}

int sp_rb_method_read(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		      uint64_t symbols, uint64_t addr, struct sp_rb_method *me, const char **why)
{
	uint64_t flags = obj_flags(m, addr), def = 0, owner = 0, id = 0;
	uint8_t type = 0;

	memset(me, 0, sizeof(*me));
	*why = "unreadable";
	if (!flags)
		return -1;
	if ((flags & T_MASK) != T_IMEMO || ((flags >> 12) & 0xf) != IMEMO_MENT) {
		*why = "not a method entry";
		return -1;
	}
	if (m->read(m->ctx, addr + l->rb.me_def, &def, sizeof(def)) || !def ||
	    m->read(m->ctx, addr + l->rb.me_owner, &owner, sizeof(owner)) ||
	    m->read(m->ctx, def, &type, 1) ||
	    m->read(m->ctx, def + l->rb.def_original_id, &id, sizeof(id)))
		return -1;
	me->iseq = (type & 0xf) == METHOD_ISEQ;
	if ((type & 0xf) == METHOD_CFUNC && l->rb.def_cfunc &&
	    m->read(m->ctx, def + l->rb.def_cfunc, &me->cfunc, sizeof(me->cfunc)))
		me->cfunc = 0;
	class_path(l, m, owner, '#', me->owner, sizeof(me->owner));
	sp_rb_id_name(l, m, symbols, id, me->name, sizeof(me->name));
	return 0;
}

/* Append s to out (of cap, holding *len bytes), cut with "...". */
static void append(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > cap) {
		n = cap > *len + 4 ? cap - *len - 4 : 0;
		memcpy(out + *len, s, n);
		*len += n;
		if (*len + 4 <= cap) {
			memcpy(out + *len, "...", 3);
			*len += 3;
		}
		out[*len] = 0;
		*len = cap;	/* full */
		return;
	}
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = 0;
}

void sp_rb_frame_name(const struct sp_rb_method *me, const char *label, char *out, size_t cap)
{
	const char *base, *in;
	size_t len = 0;

	out[0] = 0;
	if (cap < 8)
		return;
	if (!label) {	/* a C method */
		append(out, cap, &len, me->owner, strlen(me->owner));
		append(out, cap, &len, me->name[0] ? me->name : "?", strlen(me->name[0] ?
									   me->name : "?"));
		return;
	}
	/* "block in bar", "block (2 levels) in bar", "rescue in bar": the
	 * method's name follows " in " */
	in = strncmp(label, "block ", 6) && strncmp(label, "rescue in ", 10) &&
	     strncmp(label, "ensure in ", 10) ? NULL : strstr(label, " in ");
	base = in ? in + 4 : label;
	if (!me->owner[0] || (me->name[0] ? strcmp(base, me->name) : !me->iseq) ||
	    base[0] == '<') {	/* not the method the entry names: the label alone */
		append(out, cap, &len, label, strlen(label));
		return;
	}
	append(out, cap, &len, label, (size_t)(base - label));
	append(out, cap, &len, me->owner, strlen(me->owner));
	append(out, cap, &len, base, strlen(base));
}

/* A disp32 RIP-relative operand: ModRM mod 00, r/m 101. */
static bool rip_rel(uint8_t modrm)
{
	return (modrm & 0xc7) == 0x05;
}

uint64_t sp_rb_find_symbols(const uint8_t *code, size_t len, uint64_t addr, uint64_t *jump)
{
	size_t i, j;
	int32_t d;

	*jump = 0;
	/* get_id_serial_entry(): cmp %reg, last_id(%rip); jb; mov ids(%rip), %reg
	 * (ids 16 bytes after last_id) */
	for (i = 0; i + 6 <= len; i++) {
		uint64_t last;

		if (code[i] != 0x39 || !rip_rel(code[i + 1]))
			continue;
		memcpy(&d, code + i + 2, 4);
		last = addr + i + 6 + (int64_t)d;
		for (j = i + 6; j + 7 <= len && j < i + 6 + 16; j++) {
			int32_t d2;

			if (code[j] != 0x48 || code[j + 1] != 0x8b || !rip_rel(code[j + 2]))
				continue;
			memcpy(&d2, code + j + 3, 4);
			if (addr + j + 7 + (int64_t)d2 == last + 16)
				return last;
		}
	}
	/* rb_id2str() computes the serial and jumps there */
	for (i = 0; i + 5 <= len && i < 64; i++)
		if (code[i] == 0xe9) {
			memcpy(&d, code + i + 1, 4);
			*jump = addr + i + 5 + (int64_t)d;
			break;
		}
	return 0;
}
