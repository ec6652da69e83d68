// SPDX-License-Identifier: MIT
/*
 * Building a part of the DWARF index: one pass over the DIEs and line
 * programs of a cluster's compilation units, whose functions, inlined
 * instances and lines become flat sorted arrays (see dwarfidx_part.h).
 * Importing a part from the cache checks those arrays instead of building
 * them. Which units make a part, and lookups, are dwarfidx.c's.
 */
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "dwarfidx_part.h"
#include "hashmap.h"

#define MAX_NESTING	256		/* DIE tree depth walked; deeper is hostile */
#define ARENA_CHUNK	(256 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char data[];
};

/* An address range of a node, at its inline depth (0: a physical function). */
struct range {
	uint64_t lo, hi;
	uint32_t node, depth;
};

/* Build-time state. */
struct builder {
	struct part *x;
	struct range *ranges;
	size_t nranges, capranges;
	uint64_t text_lo, text_hi;
	/* Per unit: file index -> strtab index (0 = not yet). */
	Dwarf_Files *files;
	size_t nfiles;
	uint32_t *file_str;
	/* Line sequences kept: rows[first .. first + n). */
	struct seq { uint64_t addr; size_t first, n; } *seqs;
	size_t nseqs, capseqs;
	bool oom;
};

/* ---- strings ---- */

static char *arena_copy(struct strtab *t, const char *s, size_t len)
{
	struct arena_chunk *c = t->chunks;
	char *p;

	if (!c || c->cap - c->used < len + 1) {
		/* Small first: a lazy index has a string table per cluster. */
		size_t cap = c ? (c->cap * 2 < ARENA_CHUNK ? c->cap * 2 : ARENA_CHUNK) : 4096;

		if (cap < len + 1)
			cap = len + 1;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = t->chunks;
		t->chunks = c;
		t->memory += sizeof(*c) + cap;
	}
	p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = 0;
	c->used += len + 1;
	return p;
}

static int strtab_rehash(struct strtab *t, uint32_t nslots)
{
	uint32_t *slot = calloc(nslots, sizeof(*slot));
	uint32_t i;

	if (!slot)
		return -1;
	for (i = 1; i < t->n; i++) {
		uint32_t h = sp_hash_bytes(t->s[i], strlen(t->s[i])) & (nslots - 1);

		while (slot[h])
			h = (h + 1) & (nslots - 1);
		slot[h] = i;
	}
	t->memory += (size_t)(nslots - t->nslots) * sizeof(*slot);
	free(t->slot);
	t->slot = slot;
	t->nslots = nslots;
	return 0;
}

/* The index of s, added if new; 0 for NULL or "", NONE when out of memory. */
static uint32_t strtab_intern(struct strtab *t, const char *s)
{
	size_t len, cap;
	uint32_t h;
	char *copy;

	if (!s || !*s)
		return 0;
	if (t->n == 0) {
		cap = t->cap;
		t->s = sp_dwarfidx_grow(t->s, &cap, 1, sizeof(*t->s), &t->memory);
		if (!t->s)
			return NONE;
		t->cap = (uint32_t)cap;
		t->s[0] = "";
		t->n = 1;
	}
	if ((t->n + 1) * 2 > t->nslots && strtab_rehash(t, t->nslots ? t->nslots * 2 : 1024) < 0)
		return NONE;
	len = strlen(s);
	h = sp_hash_bytes(s, len) & (t->nslots - 1);
	while (t->slot[h]) {
		if (!strcmp(t->s[t->slot[h]], s))
			return t->slot[h];
		h = (h + 1) & (t->nslots - 1);
	}
	if (t->n == NONE - 1)
		return NONE;
	cap = t->cap;
	t->s = sp_dwarfidx_grow(t->s, &cap, t->n, sizeof(*t->s), &t->memory);
	if (!t->s)
		return NONE;
	t->cap = (uint32_t)cap;
	copy = arena_copy(t, s, len);
	if (!copy)
		return NONE;
	t->s[t->n] = copy;
	t->slot[h] = t->n;
	return t->n++;
}

static void strtab_release(struct strtab *t)
{
	struct arena_chunk *c, *next;
	uint32_t i;

	if (t->dem) {
		for (i = 0; i < t->n; i++)
			if (t->dem[i] && t->dem[i] != t->s[i])
				free(t->dem[i]);
		free(t->dem);
	}
	for (c = t->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->s);
	free(t->slot);
}

/* ---- DIE walk ---- */

static uint32_t intern(struct builder *b, const char *s)
{
	uint32_t i = strtab_intern(&b->x->str, s);

	if (i == NONE) {
		b->oom = true;
		return 0;
	}
	return i;
}

static uint32_t unit_file(struct builder *b, Dwarf_Word idx)
{
	const char *name;

	if (!b->files || idx >= b->nfiles)
		return 0;
	if (!b->file_str[idx]) {
		name = dwarf_filesrc(b->files, idx, NULL, NULL);
		b->file_str[idx] = intern(b, name);
	}
	return b->file_str[idx];
}

static const char *attr_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;

	if (!dwarf_attr_integrate(die, name, &attr))
		return NULL;
	return dwarf_formstring(&attr);
}

static uint32_t attr_udata(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;
	Dwarf_Word w;

	if (!dwarf_attr(die, name, &attr) || dwarf_formudata(&attr, &w) != 0)
		return 0;
	return w > UINT32_MAX ? 0 : (uint32_t)w;
}

/* Add die as a node with its address ranges; NONE if it has no code here. */
static uint32_t add_node(struct builder *b, Dwarf_Die *die, uint32_t parent, uint32_t depth)
{
	struct part *x = b->x;
	Dwarf_Addr base, start, end, entry = UINT64_MAX;
	ptrdiff_t off = 0;
	size_t first = b->nranges;
	uint32_t id = (uint32_t)x->nnodes;
	const char *linkage;
	struct sp_dwarfidx_node *n;

	if (x->nnodes >= NONE - 1)
		return NONE;
	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		struct range *r;

		if (!sp_dwarfidx_in_text(b->text_lo, b->text_hi, start, end))
			continue;
		b->ranges = sp_dwarfidx_grow(b->ranges, &b->capranges, b->nranges,
					     sizeof(*b->ranges), NULL);
		if (!b->ranges) {
			b->oom = true;
			return NONE;
		}
		r = &b->ranges[b->nranges++];
		r->lo = start;
		r->hi = end;
		r->node = id;
		r->depth = depth;
		if (start < entry)
			entry = start;
	}
	if (b->nranges == first)
		return NONE;
	x->nodes = sp_dwarfidx_grow(x->nodes, &x->capnodes, x->nnodes, sizeof(*x->nodes), NULL);
	if (!x->nodes) {
		b->oom = true;
		return NONE;
	}
	n = &x->nodes[x->nnodes++];
	if (dwarf_entrypc(die, &start) == 0 && start >= entry)
		entry = start;
	n->entry = entry;
	linkage = attr_string(die, DW_AT_linkage_name);
	if (!linkage)
		linkage = attr_string(die, DW_AT_MIPS_linkage_name);
	n->linkage = intern(b, linkage);
	n->name = intern(b, attr_string(die, DW_AT_name));
	n->parent = parent;
	if (parent != NONE) {
		n->call_file = unit_file(b, attr_udata(die, DW_AT_call_file));
		n->call_line = attr_udata(die, DW_AT_call_line);
		n->call_col = attr_udata(die, DW_AT_call_column);
		x->ninlined++;
	} else {
		n->call_file = n->call_line = n->call_col = 0;
		x->nfuncs++;
	}
	return id;
}

static void walk(struct builder *b, Dwarf_Die *die, uint32_t node, uint32_t depth,
		 unsigned int nesting)
{
	Dwarf_Die child;
	uint32_t id;

	if (nesting > MAX_NESTING || b->oom || dwarf_child(die, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			/* A nested function is a physical function of its own. */
			id = add_node(b, &child, NONE, 0);
			if (id != NONE)
				walk(b, &child, id, 1, nesting + 1);
			break;
		case DW_TAG_inlined_subroutine:
			if (node == NONE)
				break;
			id = add_node(b, &child, node, depth);
			walk(b, &child, id == NONE ? node : id, id == NONE ? depth : depth + 1,
			     nesting + 1);
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (node != NONE)
				walk(b, &child, node, depth, nesting + 1);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_interface_type:
			if (node == NONE)
				walk(b, &child, NONE, 0, nesting + 1);
			break;
		default:
			break;
		}
	} while (!b->oom && dwarf_siblingof(&child, &child) == 0);
}

/* ---- line tables ---- */

static int add_lines(struct builder *b, Dwarf_Die *cudie)
{
	struct part *x = b->x;
	Dwarf_Lines *lines;
	size_t nlines, i, seq_start = x->nrows;
	const char *last_src = NULL;
	uint32_t last_file = 0;

	if (dwarf_getsrclines(cudie, &lines, &nlines) != 0)
		return -1;
	x->rows = sp_dwarfidx_grow(x->rows, &x->caprows, x->nrows + nlines, sizeof(*x->rows),
				   NULL);
	if (!x->rows) {
		b->oom = true;
		return -1;
	}
	for (i = 0; i < nlines; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		const char *src;
		bool end = false;
		int line = 0, col = 0;
		struct sp_dwarfidx_row *r;

		if (!l || dwarf_lineaddr(l, &addr) != 0)
			continue;
		dwarf_lineendsequence(l, &end);
		dwarf_lineno(l, &line);
		dwarf_linecol(l, &col);
		src = dwarf_linesrc(l, NULL, NULL);
		if (src != last_src) {
			last_src = src;
			last_file = intern(b, src);
		}
		r = &x->rows[x->nrows++];
		r->addr = addr;
		r->file = last_file;
		r->line = line > 0 ? (uint32_t)line : 0;
		r->col = (col > 0 ? (uint32_t)col & ~ROW_END : 0) | (end ? ROW_END : 0);
		r->ord = 0;
		if (end) {
			/* Drop a sequence of discarded code (relocated to 0). */
			if (!sp_dwarfidx_in_text(b->text_lo, b->text_hi, x->rows[seq_start].addr,
						 addr)) {
				x->nrows = seq_start;
			} else {
				b->seqs = sp_dwarfidx_grow(b->seqs, &b->capseqs, b->nseqs,
							   sizeof(*b->seqs), NULL);
				if (!b->seqs) {
					b->oom = true;
					return -1;
				}
				b->seqs[b->nseqs].addr = x->rows[seq_start].addr;
				b->seqs[b->nseqs].first = seq_start;
				b->seqs[b->nseqs].n = x->nrows - seq_start;
				b->nseqs++;
			}
			seq_start = x->nrows;
		}
	}
	/* A sequence without its end row is malformed: drop it. */
	x->nrows = seq_start;
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct sp_dwarfidx_row *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address, a sequence's end comes before the next one's start. */
	if ((x->col & ROW_END) != (y->col & ROW_END))
		return (x->col & ROW_END) ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct seq *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * Sort the rows: sequences are each sorted already (libdw sorts them), and
 * when they do not overlap (small programs) ordering whole sequences by
 * their start is enough; otherwise (libc's units interleave) sort the rows.
 */
static int sort_rows(struct builder *b)
{
	struct part *x = b->x;
	struct sp_dwarfidx_row *rows;
	size_t i, k = 0;
	bool sorted = true;

	if (b->nseqs > 1)
		qsort(b->seqs, b->nseqs, sizeof(*b->seqs), cmp_seq);
	rows = x->nrows ? malloc(x->nrows * sizeof(*rows)) : NULL;
	if (x->nrows && !rows)
		return -1;
	for (i = 0; i < b->nseqs; i++) {
		memcpy(rows + k, x->rows + b->seqs[i].first, b->seqs[i].n * sizeof(*rows));
		k += b->seqs[i].n;
	}
	for (i = 0; i < k; i++) {
		rows[i].ord = (uint32_t)i;
		/* Equal addresses keep the line program's order: the last row
		 * at an address is the one a lookup finds. */
		if (i && rows[i].addr < rows[i - 1].addr)
			sorted = false;
	}
	free(x->rows);
	x->rows = rows;
	x->nrows = x->caprows = k;
	if (!sorted && k > 1)
		qsort(x->rows, x->nrows, sizeof(*x->rows), cmp_row);
	return 0;
}

/* ---- address segments: the nested ranges flattened ---- */

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int emit(struct part *x, size_t *cap, uint64_t lo, uint32_t node)
{
	size_t capn;

	if (x->nsegs && x->seg_lo[x->nsegs - 1] == lo) {
		x->seg_node[x->nsegs - 1] = node;	/* an empty segment: replace */
	} else if (x->nsegs && x->seg_node[x->nsegs - 1] == node) {
		return 0;				/* same owner: merge */
	} else {
		capn = *cap;
		x->seg_lo = sp_dwarfidx_grow(x->seg_lo, cap, x->nsegs, sizeof(*x->seg_lo), NULL);
		if (!x->seg_lo)
			return -1;
		x->seg_node = sp_dwarfidx_grow(x->seg_node, &capn, x->nsegs, sizeof(*x->seg_node),
					       NULL);
		if (!x->seg_node)
			return -1;
		x->seg_lo[x->nsegs] = lo;
		x->seg_node[x->nsegs] = node;
		x->nsegs++;
	}
	/* Merging with the segment before (after a replacement). */
	if (x->nsegs >= 2 && x->seg_node[x->nsegs - 2] == x->seg_node[x->nsegs - 1])
		x->nsegs--;
	return 0;
}

/*
 * Sweep the ranges sorted by start (outermost first at equal starts) with a
 * stack of open ranges: every point belongs to the innermost open range.
 */
static int flatten(struct builder *b)
{
	struct part *x = b->x;
	struct range *stack;
	size_t sp = 0, i, cap = 0;

	if (b->nranges > 1)
		qsort(b->ranges, b->nranges, sizeof(*b->ranges), cmp_range);
	stack = malloc((MAX_NESTING + 2) * sizeof(*stack));
	if (!stack)
		return -1;
	for (i = 0; i < b->nranges; i++) {
		struct range r = b->ranges[i];

		while (sp && stack[sp - 1].hi <= r.lo) {
			sp--;
			if (emit(x, &cap, stack[sp].hi, sp ? stack[sp - 1].node : NONE) < 0)
				goto oom;
		}
		if (sp && r.hi > stack[sp - 1].hi)
			r.hi = stack[sp - 1].hi;	/* malformed nesting: clip */
		if (sp > MAX_NESTING)
			continue;
		if (emit(x, &cap, r.lo, r.node) < 0)
			goto oom;
		stack[sp++] = r;
	}
	while (sp) {
		sp--;
		if (emit(x, &cap, stack[sp].hi, sp ? stack[sp - 1].node : NONE) < 0)
			goto oom;
	}
	free(stack);
	return 0;
oom:
	free(stack);
	return -1;
}

/* ---- the bucketed search (dwarfidx_part.h) ---- */

int sp_bucket_search_init(struct bucket_search *sr, const uint64_t *v, size_t n)
{
	uint64_t range;
	size_t k, j;

	sr->v = v;
	sr->n = n;
	sr->top = NULL;
	sr->ntop = 0;
	sr->shift = 0;
	if (n < 16 || n >= UINT32_MAX)
		return 0;
	sr->first = v[0];
	sr->last = v[n - 1];
	range = v[n - 1] - v[0];
	while ((range >> sr->shift) >= n / 2)
		sr->shift++;
	sr->ntop = (range >> sr->shift) + 2;
	sr->top = malloc(sr->ntop * sizeof(*sr->top));
	if (!sr->top)
		return -1;
	for (k = 0, j = 0; k < sr->ntop; k++) {
		if (k > (range >> sr->shift)) {
			sr->top[k] = (uint32_t)n;
			continue;
		}
		while (j < n && v[j] < v[0] + ((uint64_t)k << sr->shift))
			j++;
		sr->top[k] = (uint32_t)j;
	}
	return 0;
}

/* ---- a part: the index of a set of compilation units ---- */

void sp_dwarfidx_part_free(struct part *x)
{
	if (!x)
		return;
	strtab_release(&x->str);
	free(x->row_search.top);
	free(x->seg_search.top);
	if (!x->borrowed) {
		free(x->nodes);
		free(x->seg_lo);
		free(x->row_addr);
		free(x->seg_node);
		free(x->rows);
	}
	free(x);
}

/* Index one compilation unit into b; false when out of memory. */
static bool index_unit(struct builder *b, Dwarf_Die *cudie, size_t *bad)
{
	b->x->units++;
	b->files = NULL;
	b->nfiles = 0;
	if (dwarf_getsrcfiles(cudie, &b->files, &b->nfiles) != 0) {
		b->files = NULL;
		b->nfiles = 0;
	}
	free(b->file_str);
	b->file_str = b->nfiles ? calloc(b->nfiles, sizeof(*b->file_str)) : NULL;
	if (b->nfiles && !b->file_str) {
		b->oom = true;
		return false;
	}
	walk(b, cudie, NONE, 0, 0);
	if (b->oom)
		return false;
	if (add_lines(b, cudie) < 0 && !b->oom && b->nfiles)
		(*bad)++;
	return !b->oom;
}

/* Sort, flatten and make searchable what b collected; NULL when out of memory. */
static struct part *part_finish(struct builder *b)
{
	struct part *x = b->x;
	size_t i;

	free(b->file_str);
	b->file_str = NULL;
	if (!b->oom) {
		if (sort_rows(b) < 0 || flatten(b) < 0)
			b->oom = true;
		x->row_addr = x->nrows ? malloc(x->nrows * sizeof(*x->row_addr)) : NULL;
		if (x->nrows && !x->row_addr)
			b->oom = true;
		for (i = 0; !b->oom && i < x->nrows; i++)
			x->row_addr[i] = x->rows[i].addr;
		if (!b->oom && (sp_bucket_search_init(&x->row_search, x->row_addr, x->nrows) < 0 ||
				sp_bucket_search_init(&x->seg_search, x->seg_lo, x->nsegs) < 0))
			b->oom = true;
	}
	free(b->ranges);
	free(b->seqs);
	b->ranges = NULL;
	b->seqs = NULL;
	if (b->oom) {
		sp_dwarfidx_part_free(x);
		return NULL;
	}
	return x;
}

struct part *sp_dwarfidx_part_build(Dwarf *dw, const Dwarf_Off *cu_off, size_t n,
				    uint64_t text_lo, uint64_t text_hi, size_t *bad)
{
	struct builder b = { .text_lo = text_lo, .text_hi = text_hi };
	Dwarf_Die cudie;
	size_t i;

	b.x = calloc(1, sizeof(*b.x));
	if (!b.x)
		return NULL;
	for (i = 0; i < n && !b.oom; i++) {
		if (!dwarf_offdie(dw, cu_off[i], &cudie)) {
			(*bad)++;
			continue;
		}
		index_unit(&b, &cudie, bad);
	}
	return part_finish(&b);
}

/* ---- importing a part from the cache ---- */

/* Whether i is a string of a part with nstrs strings (0: none). */
static bool str_ok(uint32_t i, uint64_t nstrs)
{
	return i == 0 || i < nstrs;
}

struct part *sp_dwarfidx_part_import(const struct sp_dwarfidx_part *d, const char **why)
{
	struct part *x;
	uint64_t i;

	*why = "out of memory";
	if (d->nnodes >= NONE || d->nstrs >= NONE || (d->nstrs && !d->blob_len)) {
		*why = "a count out of range";
		return NULL;
	}
	if (d->blob_len && d->blob[d->blob_len - 1]) {
		*why = "strings not ended by a NUL";
		return NULL;
	}
	for (i = 0; i < d->nstrs; i++)
		if (d->str_off[i] >= d->blob_len) {
			*why = "a string offset out of range";
			return NULL;
		}
	for (i = 0; i < d->nnodes; i++) {
		const struct sp_dwarfidx_node *n = &d->nodes[i];

		if (!str_ok(n->name, d->nstrs) || !str_ok(n->linkage, d->nstrs) ||
		    !str_ok(n->call_file, d->nstrs) || (n->parent != NONE && n->parent >= i)) {
			*why = "a function refers to what is not there";
			return NULL;
		}
	}
	for (i = 0; i < d->nsegs; i++)
		if ((d->seg_node[i] != NONE && d->seg_node[i] >= d->nnodes) ||
		    (i && d->seg_lo[i] < d->seg_lo[i - 1])) {
			*why = "an address segment out of order or range";
			return NULL;
		}
	for (i = 0; i < d->nrows; i++)
		if (!str_ok(d->rows[i].file, d->nstrs) ||
		    (i && d->row_addr[i] < d->row_addr[i - 1])) {
			*why = "a line row out of order or range";
			return NULL;
		}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->borrowed = true;
	x->nodes = (struct sp_dwarfidx_node *)d->nodes;
	x->nnodes = x->capnodes = d->nnodes;
	x->seg_lo = (uint64_t *)d->seg_lo;
	x->seg_node = (uint32_t *)d->seg_node;
	x->nsegs = d->nsegs;
	x->rows = (struct sp_dwarfidx_row *)d->rows;
	x->row_addr = (uint64_t *)d->row_addr;
	x->nrows = x->caprows = d->nrows;
	x->units = d->units;
	x->nfuncs = d->nfuncs;
	x->ninlined = d->ninlined;
	if (d->nstrs) {
		x->str.s = malloc(d->nstrs * sizeof(*x->str.s));
		if (!x->str.s)
			goto fail;
		for (i = 0; i < d->nstrs; i++)
			x->str.s[i] = (char *)d->blob + d->str_off[i];
		x->str.n = x->str.cap = (uint32_t)d->nstrs;
		x->str.memory = d->nstrs * sizeof(*x->str.s);
	}
	if (sp_bucket_search_init(&x->row_search, x->row_addr, x->nrows) < 0 ||
	    sp_bucket_search_init(&x->seg_search, x->seg_lo, x->nsegs) < 0)
		goto fail;
	return x;
fail:
	sp_dwarfidx_part_free(x);
	return NULL;
}
