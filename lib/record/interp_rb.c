// SPDX-License-Identifier: MIT
/*
 * Ruby's structures as sp-record reads them out of a process (interpP.h):
 * an instruction sequence's label, file and first line, its line table
 * (insns_info: the line of each entry, and where each entry starts, as a
 * positions array or as the succinct index table release builds keep),
 * and the line of one of its instructions.
 *
 * What is read belongs to the process recorded, which may be hostile:
 * every read goes through the caller's reader (bounded, may fail), every
 * length and count read is checked before use, strings are cut at
 * SP_PY_NAME_MAX, and a line lookup reads nothing past what was copied.
 */
#include <stdlib.h>
#include <string.h>

#include "interpP.h"
#include "sp.h"

#define T_MASK		0x1fu
#define T_STRING	0x05u
#define T_ARRAY		0x07u
#define T_IMEMO		0x1au
#define IMEMO_ISEQ	7u
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

/* pathobj: the path, or an Array [path, realpath]. */
static int rb_path(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		   uint64_t addr, char *out, size_t cap)
{
	uint64_t hdr[2], elt = 0;

	if (!addr || (addr & 7) || m->read(m->ctx, addr, hdr, sizeof(hdr)))
		return -1;
	if ((hdr[0] & T_MASK) != T_ARRAY)
		return sp_rb_str(l, m, addr, out, cap);
	if (hdr[0] & FL_USER1) {
		if (!((hdr[0] >> 15) & 3) ||
		    m->read(m->ctx, addr + l->rb.rary_embed, &elt, sizeof(elt)))
			return -1;
	} else {
		uint64_t len = 0, ptr = 0;

		if (m->read(m->ctx, addr + l->rb.rary_embed, &len, sizeof(len)) || !len ||
		    m->read(m->ctx, addr + l->rb.rary_heap_ptr, &ptr, sizeof(ptr)) ||
		    m->read(m->ctx, ptr, &elt, sizeof(elt)))
			return -1;
	}
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
