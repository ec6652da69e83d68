// SPDX-License-Identifier: MIT
/* A per-module address index of DWARF functions, inline instances and lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dwarf.h>

#include "demangle.h"
#include "dwarfidx.h"

#define NONE		SP_DWARFIDX_NONE
#define MAX_NESTING	256		/* DIE tree depth walked; deeper is hostile */
#define ARENA_CHUNK	(256 * 1024)
#define MAX_INFLATED	(2ull << 30)	/* largest decompressed debug section */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char data[];
};

/* Interned strings: index 0 is "no string". */
struct strtab {
	char **s;
	char **dem;		/* sp_demangle_cached() slots, allocated lazily */
	uint32_t n, cap;
	uint32_t *slot;		/* open addressing: string index, 0 = empty */
	uint32_t nslots;
	struct arena_chunk *chunks;
	size_t memory;
};


struct range {
	uint64_t lo, hi;
	uint32_t node, depth;
};

#define ROW_END		SP_DWARFIDX_ROW_END

/*
 * Searching a large sorted array: a table of equal-width buckets over its
 * key range, each holding the index of its first key, narrows the search to
 * the two or so keys of one bucket: two cache misses per lookup instead of
 * one per halving. About one bucket per two keys.
 */
struct search {
	const uint64_t *v;
	size_t n;
	uint32_t *top;		/* top[k]: keys below first + (k << shift); NULL: small */
	size_t ntop;
	uint64_t first, last;	/* v[0], v[n - 1]: no cache miss to compare with them */
	unsigned int shift;
};

struct part {
	struct strtab str;
	struct sp_dwarfidx_node *nodes;
	size_t nnodes, capnodes;
	size_t nfuncs, ninlined;
	/* Flattened: seg_lo sorted, seg_node[i] owns [seg_lo[i], seg_lo[i + 1]). */
	uint64_t *seg_lo;
	uint32_t *seg_node;
	size_t nsegs;
	struct sp_dwarfidx_row *rows;
	size_t nrows, caprows;
	uint64_t *row_addr;	/* rows[i].addr, for searching */
	struct search seg_search, row_search;
	size_t units;
	bool borrowed;		/* imported: the arrays are someone else's memory */
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

static void *grow(void *p, size_t *cap, size_t n, size_t sz, size_t *memory)
{
	size_t ncap;
	void *q;

	if (n < *cap)
		return p;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap <= n)
		ncap *= 2;
	q = realloc(p, ncap * sz);
	if (!q)
		return NULL;
	if (memory)
		*memory += (ncap - *cap) * sz;
	*cap = ncap;
	return q;
}

/* ---- strings ---- */

static uint32_t hash_str(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

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
		uint32_t h = hash_str(t->s[i], strlen(t->s[i])) & (nslots - 1);

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
		t->s = grow(t->s, &cap, 1, sizeof(*t->s), &t->memory);
		if (!t->s)
			return NONE;
		t->cap = (uint32_t)cap;
		t->s[0] = "";
		t->n = 1;
	}
	if ((t->n + 1) * 2 > t->nslots && strtab_rehash(t, t->nslots ? t->nslots * 2 : 1024) < 0)
		return NONE;
	len = strlen(s);
	h = hash_str(s, len) & (t->nslots - 1);
	while (t->slot[h]) {
		if (!strcmp(t->s[t->slot[h]], s))
			return t->slot[h];
		h = (h + 1) & (t->nslots - 1);
	}
	if (t->n == NONE - 1)
		return NONE;
	cap = t->cap;
	t->s = grow(t->s, &cap, t->n, sizeof(*t->s), &t->memory);
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

static const char *strtab_get(const struct strtab *t, uint32_t i)
{
	return i && i < t->n ? t->s[i] : NULL;
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

static bool in_text(const struct builder *b, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return false;
	if (!b->text_hi)
		return lo != 0;
	return lo >= b->text_lo && hi <= b->text_hi;
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

		if (!in_text(b, start, end))
			continue;
		b->ranges = grow(b->ranges, &b->capranges, b->nranges, sizeof(*b->ranges), NULL);
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
	x->nodes = grow(x->nodes, &x->capnodes, x->nnodes, sizeof(*x->nodes), NULL);
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
	x->rows = grow(x->rows, &x->caprows, x->nrows + nlines, sizeof(*x->rows), NULL);
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
			if (!in_text(b, x->rows[seq_start].addr, addr)) {
				x->nrows = seq_start;
			} else {
				b->seqs = grow(b->seqs, &b->capseqs, b->nseqs, sizeof(*b->seqs), NULL);
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
		x->seg_lo = grow(x->seg_lo, cap, x->nsegs, sizeof(*x->seg_lo), NULL);
		if (!x->seg_lo)
			return -1;
		x->seg_node = grow(x->seg_node, &capn, x->nsegs, sizeof(*x->seg_node), NULL);
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

/* Debug sections the index never reads: location lists, macros, CFI, name tables. */
static bool unread_section(const char *name)
{
	static const char *const unread[] = {
		".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo",
		".debug_frame", ".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames",
		".debug_gnu_pubtypes", ".debug_names", ".debug_cu_index", ".debug_tu_index",
	};
	size_t i;

	for (i = 0; i < sizeof(unread) / sizeof(unread[0]); i++)
		if (!strcmp(name, unread[i]))
			return true;
	return false;
}

bool sp_dwarfidx_elf_sane(Elf *elf, const char **why)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
		*why = "no section names";
		return false;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && unread_section(name)) {
			/*
			 * dwarf_begin_elf() inflates every compressed debug
			 * section up front; it skips NOBITS ones. The change is
			 * in memory only (the file is read, never written).
			 */
			sh.sh_type = SHT_NOBITS;
			if (gelf_update_shdr(scn, &sh))
				continue;
		}
		/* A compressed section claiming to inflate beyond reason is a bomb. */
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch) || ch.ch_size > MAX_INFLATED ||
			    ch.ch_size / 1024 > sh.sh_size) {
				*why = "a compressed section claims an absurd size";
				return false;
			}
		}
		if (!name || strncmp(name, ".debug_", 7) ||
		    (strcmp(name + 7, "str") && strcmp(name + 7, "line_str")))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
			*why = "cannot decompress a string section";
			return false;
		}
		d = elf_getdata(scn, NULL);
		if (!d || (d->d_size && (!d->d_buf || ((const char *)d->d_buf)[d->d_size - 1]))) {
			*why = "a DWARF string section does not end with a NUL";
			return false;
		}
	}
	return true;
}

static int search_init(struct search *sr, const uint64_t *v, size_t n)
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

/* The number of keys <= key. */
static size_t search_upper(const struct search *sr, uint64_t key)
{
	size_t lo = 0, hi = sr->n, mid, k;

	if (sr->top) {
		if (key < sr->first)
			return 0;
		if (key >= sr->last)
			return sr->n;
		k = (key - sr->first) >> sr->shift;
		lo = sr->top[k];
		hi = sr->top[k + 1];
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (sr->v[mid] <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- parts: the index of a set of compilation units ---- */

static void part_free(struct part *x)
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
		if (!b->oom && (search_init(&x->row_search, x->row_addr, x->nrows) < 0 ||
				search_init(&x->seg_search, x->seg_lo, x->nsegs) < 0))
			b->oom = true;
	}
	free(b->ranges);
	free(b->seqs);
	b->ranges = NULL;
	b->seqs = NULL;
	if (b->oom) {
		part_free(x);
		return NULL;
	}
	return x;
}

/* ---- the index: clusters of units with overlapping address ranges ---- */

/*
 * A cluster is a maximal address interval made of overlapping unit ranges;
 * its part indexes every unit with a range in it, and is built on the first
 * lookup that falls in the interval. Units' code lies within their ranges,
 * so a cluster's part answers exactly what an index of every unit would.
 */
struct cluster {
	uint64_t lo, hi;
	size_t first, n;	/* unit offsets: x->cu_off[first .. first + n) */
	struct part *part;
	bool failed;
};

struct sp_dwarfidx {
	Dwarf *dw;		/* owned; NULL once every part is built */
	uint64_t text_lo, text_hi;
	struct cluster *cl;
	size_t ncl;
	struct search cl_search;	/* over cl_lo: dense, for the first step of a lookup */
	uint64_t *cl_lo;
	struct cluster *last;		/* the cluster of the previous lookup */
	Dwarf_Off *cu_off;
	size_t units, bad;
	uint64_t build_ns;
	size_t built;			/* clusters built here (not imported) */
	Dwarf *(*open)(void *);		/* gives dw when a cluster needs it */
	void *open_arg;
	bool open_tried;
	void (*release)(void *);	/* the memory behind imported parts */
	void *release_arg;
};

struct cu_range {
	uint64_t lo, hi;
	size_t cu;
};

static int cmp_cu_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->cu < y->cu ? -1 : x->cu > y->cu;
}

static int cmp_off(const void *a, const void *b)
{
	const Dwarf_Off *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* Build the part of cluster c; false if it cannot be. */
static bool cluster_build(struct sp_dwarfidx *x, struct cluster *c)
{
	struct builder b = { .text_lo = x->text_lo, .text_hi = x->text_hi };
	uint64_t t0 = now_ns();
	Dwarf_Die cudie;
	size_t i;

	if (c->part || c->failed)
		return c->part != NULL;
	b.x = calloc(1, sizeof(*b.x));
	if (!b.x) {
		c->failed = true;
		return false;
	}
	for (i = 0; i < c->n && !b.oom; i++) {
		if (!dwarf_offdie(x->dw, x->cu_off[c->first + i], &cudie)) {
			x->bad++;
			continue;
		}
		index_unit(&b, &cudie, &x->bad);
	}
	c->part = part_finish(&b);
	c->failed = !c->part;
	if (c->part)
		x->built++;
	x->build_ns += now_ns() - t0;
	return c->part != NULL;
}

/* The code ranges of a unit, from its DIE, else from its line sequences. */
static bool unit_ranges(struct builder *b, Dwarf_Die *cudie, size_t cu,
			struct cu_range **r, size_t *n, size_t *cap)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	size_t first = *n, nlines, i;
	Dwarf_Lines *lines;

	while ((off = dwarf_ranges(cudie, off, &base, &start, &end)) > 0) {
		if (!in_text(b, start, end))
			continue;
		*r = grow(*r, cap, *n, sizeof(**r), NULL);
		if (!*r)
			return false;
		(*r)[(*n)++] = (struct cu_range){ start, end, cu };
	}
	if (*n > first || dwarf_getsrclines(cudie, &lines, &nlines) != 0)
		return true;
	start = UINT64_MAX;
	for (i = 0; i < nlines; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		bool endseq = false;

		if (!l || dwarf_lineaddr(l, &addr) != 0)
			continue;
		if (start == UINT64_MAX)
			start = addr;
		dwarf_lineendsequence(l, &endseq);
		if (!endseq)
			continue;
		if (in_text(b, start, addr)) {
			*r = grow(*r, cap, *n, sizeof(**r), NULL);
			if (!*r)
				return false;
			(*r)[(*n)++] = (struct cu_range){ start, addr, cu };
		}
		start = UINT64_MAX;
	}
	return true;
}

/*
 * The Dwarf of an imported index, opened at the first cluster that needs it.
 * The cached unit offsets of the clusters still to build must be units of
 * this Dwarf: dwarf_offdie() trusts the offset it is given.
 */
static bool index_dwarf(struct sp_dwarfidx *x)
{
	Dwarf_Die cudie, subdie;
	Dwarf_Off *offs = NULL;
	size_t n = 0, cap = 0, i, j;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_CU *cu = NULL;

	if (x->dw || !x->open || x->open_tried)
		return x->dw != NULL;
	x->open_tried = true;
	x->dw = x->open(x->open_arg);
	if (!x->dw)
		return false;
	while (dwarf_get_units(x->dw, cu, &cu, &version, &unit_type, &cudie, &subdie) == 0) {
		if (unit_type != DW_UT_compile || dwarf_tag(&cudie) != DW_TAG_compile_unit)
			continue;
		offs = grow(offs, &cap, n, sizeof(*offs), NULL);
		if (!offs)
			break;
		offs[n++] = dwarf_dieoffset(&cudie);
	}
	if (n > 1)
		qsort(offs, n, sizeof(*offs), cmp_off);
	for (i = 0; i < x->ncl; i++) {
		struct cluster *c = &x->cl[i];

		for (j = 0; !c->part && !c->failed && j < c->n; j++)
			if (!offs || !bsearch(&x->cu_off[c->first + j], offs, n, sizeof(*offs),
					      cmp_off))
				c->failed = true;
	}
	free(offs);
	return true;
}

static struct sp_dwarfidx *index_new(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				     bool lazy, size_t *bad_units, const char **why)
{
	struct builder b = { .text_lo = text_lo, .text_hi = text_hi };
	struct cu_range *r = NULL;
	size_t nr = 0, capr = 0, capoff = 0, i, j, k;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	Dwarf_Half version;
	uint8_t unit_type;
	uint64_t t0 = now_ns();
	struct sp_dwarfidx *x;
	Dwarf_Off *offs = NULL;
	bool oom = false;
	int rc;

	*why = NULL;
	if (!dw) {
		*why = "no DWARF";
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		*why = "out of memory";
		return NULL;
	}
	x->dw = dw;
	x->text_lo = text_lo;
	x->text_hi = text_hi;
	while ((rc = dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, &subdie)) == 0) {
		if (unit_type != DW_UT_compile || dwarf_tag(&cudie) != DW_TAG_compile_unit) {
			if (unit_type == DW_UT_skeleton || unit_type == DW_UT_split_compile)
				x->bad++;	/* split DWARF (.dwo) is not read */
			continue;
		}
		offs = grow(offs, &capoff, x->units, sizeof(*offs), NULL);
		if (!offs || (lazy && !unit_ranges(&b, &cudie, x->units, &r, &nr, &capr))) {
			oom = true;
			break;
		}
		offs[x->units++] = dwarf_dieoffset(&cudie);
	}
	if (rc < 0 && !x->units)
		x->bad++;
	if (!oom && x->units) {
		if (!lazy) {
			/* One cluster covering everything, of every unit. */
			r = malloc(sizeof(*r));
			if (r) {
				r[0] = (struct cu_range){ 0, UINT64_MAX, 0 };
				nr = 1;
			}
		}
		x->cl = nr ? calloc(nr, sizeof(*x->cl)) : NULL;
		x->cu_off = malloc((lazy ? nr : x->units) * sizeof(*x->cu_off) + 1);
		oom = (nr && !x->cl) || !x->cu_off || (!lazy && !r);
	}
	if (!oom && x->units && !lazy) {
		memcpy(x->cu_off, offs, x->units * sizeof(*offs));
		x->cl[0] = (struct cluster){ 0, UINT64_MAX, 0, x->units, NULL, false };
		x->ncl = 1;
	} else if (!oom && x->units) {
		qsort(r, nr, sizeof(*r), cmp_cu_range);
		for (i = 0, k = 0; i < nr; i = j) {
			struct cluster *c = &x->cl[x->ncl++];
			uint64_t hi = r[i].hi;
			size_t m;

			for (j = i + 1; j < nr && r[j].lo < hi; j++)
				if (r[j].hi > hi)
					hi = r[j].hi;
			c->lo = r[i].lo;
			c->hi = hi;
			c->first = k;
			for (m = i; m < j; m++)
				x->cu_off[k + m - i] = offs[r[m].cu];
			qsort(x->cu_off + k, j - i, sizeof(*x->cu_off), cmp_off);
			/* A unit with several ranges in one cluster is read once. */
			for (m = 0, c->n = 0; m < j - i; m++)
				if (!c->n || x->cu_off[k + c->n - 1] != x->cu_off[k + m])
					x->cu_off[k + c->n++] = x->cu_off[k + m];
			k += c->n;
		}
	}
	free(r);
	free(offs);
	if (!oom && x->ncl) {
		x->cl_lo = malloc(x->ncl * sizeof(*x->cl_lo));
		for (i = 0; x->cl_lo && i < x->ncl; i++)
			x->cl_lo[i] = x->cl[i].lo;
		oom = !x->cl_lo || search_init(&x->cl_search, x->cl_lo, x->ncl) < 0;
	}
	if (bad_units)
		*bad_units = x->bad;
	if (oom) {
		x->dw = NULL;
		sp_dwarfidx_free(x);
		*why = "out of memory";
		return NULL;
	}
	if (!x->units) {
		x->dw = NULL;
		sp_dwarfidx_free(x);
		*why = "no DWARF compilation units";
		return NULL;
	}
	x->build_ns = now_ns() - t0;
	if (!lazy) {
		if (!cluster_build(x, &x->cl[0])) {
			x->dw = NULL;
			sp_dwarfidx_free(x);
			*why = "out of memory";
			return NULL;
		}
		if (bad_units)
			*bad_units = x->bad;
		x->dw = NULL;
	}
	return x;
}

struct sp_dwarfidx *sp_dwarfidx_build(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				      size_t *bad_units, const char **why)
{
	return index_new(dw, text_lo, text_hi, false, bad_units, why);
}

int sp_dwarfidx_index_all(struct sp_dwarfidx *x)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < x->ncl; i++)
		if (!x->cl[i].part && (!index_dwarf(x) || !cluster_build(x, &x->cl[i])))
			rc = -1;
	return rc;
}

struct sp_dwarfidx *sp_dwarfidx_open(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				     size_t *bad_units, const char **why)
{
	struct sp_dwarfidx *x = index_new(dw, text_lo, text_hi, true, bad_units, why);

	if (!x)
		dwarf_end(dw);
	return x;
}

void sp_dwarfidx_free(struct sp_dwarfidx *x)
{
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->ncl; i++)
		part_free(x->cl[i].part);
	free(x->cl);
	free(x->cl_lo);
	free(x->cl_search.top);
	free(x->cu_off);
	if (x->dw)
		dwarf_end(x->dw);
	if (x->release)
		x->release(x->release_arg);
	free(x);
}

/* ---- lookups ---- */

/* The part covering addr, built if need be; NULL if none. */
static struct part *part_at(struct sp_dwarfidx *x, uint64_t addr)
{
	struct cluster *c = x->last;
	size_t lo;

	if (c && addr >= c->lo && addr < c->hi && c->part)
		return c->part;
	lo = search_upper(&x->cl_search, addr);
	if (!lo)
		return NULL;
	c = &x->cl[lo - 1];
	x->last = c;
	if (addr >= c->hi)
		return NULL;
	if (!c->part && (!index_dwarf(x) || !cluster_build(x, c)))
		return NULL;
	return c->part;
}

static int part_line(const struct part *x, uint64_t addr, const char **file,
		     uint32_t *line, uint32_t *col)
{
	size_t lo = search_upper(&x->row_search, addr);
	const struct sp_dwarfidx_row *r;

	if (!lo)
		return -1;
	r = &x->rows[lo - 1];
	if (r->col & ROW_END)
		return -1;
	*file = strtab_get(&x->str, r->file);
	*line = r->line;
	*col = r->col & ~ROW_END;
	return 0;
}

int sp_dwarfidx_line(struct sp_dwarfidx *x, uint64_t addr, const char **file,
		     uint32_t *line, uint32_t *col)
{
	struct part *p = part_at(x, addr);

	return p ? part_line(p, addr, file, line, col) : -1;
}

static const char *node_name(struct part *x, const struct sp_dwarfidx_node *n, bool demangle)
{
	struct strtab *t = &x->str;

	if (n->linkage) {
		if (!demangle)
			return t->s[n->linkage];
		if (!t->dem) {
			t->dem = calloc(t->cap, sizeof(*t->dem));
			if (!t->dem)
				return t->s[n->linkage];
			t->memory += t->cap * sizeof(*t->dem);
		}
		return sp_demangle_cached(t->s[n->linkage], &t->dem[n->linkage]);
	}
	return strtab_get(t, n->name);
}

int sp_dwarfidx_lookup(struct sp_dwarfidx *ix, uint64_t addr, bool demangle,
		       struct sp_dwarf_loc *out, int max)
{
	struct part *x;
	size_t lo;
	uint32_t id;
	int n = 0;

	if (max < 1)
		return 0;
	memset(&out[0], 0, sizeof(out[0]));
	x = part_at(ix, addr);
	if (!x)
		return 0;
	if (part_line(x, addr, &out[0].file, &out[0].line, &out[0].column) < 0)
		out[0].file = NULL;
	lo = search_upper(&x->seg_search, addr);
	if (!lo)
		return 0;
	id = x->seg_node[lo - 1];
	while (id != NONE && id < x->nnodes && n < max) {
		const struct sp_dwarfidx_node *nd = &x->nodes[id];

		/* out[n]'s file and line are already set: the line table or a call site. */
		out[n].func = node_name(x, nd, demangle);
		out[n].entry = nd->entry;
		out[n].inlined = nd->parent != NONE;
		n++;
		if (nd->parent != NONE && n < max) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].file = strtab_get(&x->str, nd->call_file);
			out[n].line = nd->call_line;
			out[n].column = nd->call_col;
		}
		id = nd->parent;
	}
	return n;
}

void sp_dwarfidx_stats(const struct sp_dwarfidx *ix, struct sp_dwarfidx_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->units = ix->units;
	st->memory = sizeof(*ix) + ix->ncl * sizeof(*ix->cl) + ix->units * sizeof(*ix->cu_off);
	for (i = 0; i < ix->ncl; i++) {
		const struct part *x = ix->cl[i].part;

		if (!x)
			continue;
		st->units_indexed += x->units;
		st->functions += x->nfuncs;
		st->inlined += x->ninlined;
		st->segments += x->nsegs;
		st->rows += x->nrows;
		st->memory += sizeof(*x) + x->str.memory + x->capnodes * sizeof(*x->nodes) +
			      x->nsegs * (sizeof(*x->seg_lo) + sizeof(*x->seg_node)) +
			      x->caprows * sizeof(*x->rows) + x->nrows * sizeof(*x->row_addr) +
			      (x->row_search.ntop + x->seg_search.ntop) * sizeof(uint32_t);
	}
	st->build_ns = ix->build_ns;
}

/* ---- persisting: export and import (lib/symbolize/symcache.c) ---- */

void sp_dwarfidx_counts(const struct sp_dwarfidx *x, size_t *nclusters, size_t *units,
			size_t *bad)
{
	*nclusters = x->ncl;
	*units = x->units;
	*bad = x->bad;
}

size_t sp_dwarfidx_built(const struct sp_dwarfidx *x)
{
	return x->built;
}

void sp_dwarfidx_cluster(const struct sp_dwarfidx *x, size_t i, struct sp_dwarfidx_cluster *c,
			 struct sp_dwarfidx_part *part)
{
	const struct cluster *cl = &x->cl[i];
	const struct part *p = cl->part;

	c->lo = cl->lo;
	c->hi = cl->hi;
	c->cu_off = x->cu_off + cl->first;
	c->ncu = cl->n;
	c->part = NULL;
	memset(part, 0, sizeof(*part));
	if (!p)
		return;
	part->nodes = p->nodes;
	part->nnodes = p->nnodes;
	part->seg_lo = p->seg_lo;
	part->seg_node = p->seg_node;
	part->nsegs = p->nsegs;
	part->rows = p->rows;
	part->row_addr = p->row_addr;
	part->nrows = p->nrows;
	part->strs = (const char *const *)p->str.s;
	part->nstrs = p->str.n;
	part->units = p->units;
	part->nfuncs = p->nfuncs;
	part->ninlined = p->ninlined;
	c->part = part;
}

void sp_dwarfidx_set_release(struct sp_dwarfidx *x, void (*release)(void *), void *arg)
{
	x->release = release;
	x->release_arg = arg;
}

void sp_dwarfidx_set_opener(struct sp_dwarfidx *x, Dwarf *(*open)(void *), void *arg)
{
	x->open = open;
	x->open_arg = arg;
}

static bool str_ok(uint32_t i, uint64_t nstrs)
{
	return i == 0 || i < nstrs;
}

/* A part using d's arrays in place, once every index in them is checked. */
static struct part *part_import(const struct sp_dwarfidx_part *d, const char **why)
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
	if (search_init(&x->row_search, x->row_addr, x->nrows) < 0 ||
	    search_init(&x->seg_search, x->seg_lo, x->nsegs) < 0)
		goto fail;
	return x;
fail:
	part_free(x);
	return NULL;
}

struct sp_dwarfidx *sp_dwarfidx_import(uint64_t text_lo, uint64_t text_hi,
				       const struct sp_dwarfidx_cluster *cl, size_t ncl,
				       size_t units, size_t bad, const char **why)
{
	struct sp_dwarfidx *x;
	size_t i, ncu = 0;

	*why = "out of memory";
	for (i = 0; i < ncl; i++) {
		if (cl[i].lo >= cl[i].hi || (i && cl[i].lo < cl[i - 1].hi) ||
		    cl[i].ncu > units || (!cl[i].part && !cl[i].ncu)) {
			*why = "clusters out of order or range";
			return NULL;
		}
		ncu += cl[i].ncu;
	}
	if (!ncl || units < 1 || ncu / ncl > units) {
		*why = "clusters out of order or range";
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->text_lo = text_lo;
	x->text_hi = text_hi;
	x->units = units;
	x->bad = bad;
	x->cl = calloc(ncl, sizeof(*x->cl));
	x->cl_lo = malloc(ncl * sizeof(*x->cl_lo));
	x->cu_off = malloc(ncu * sizeof(*x->cu_off) + 1);
	if (!x->cl || !x->cl_lo || !x->cu_off)
		goto fail;
	x->ncl = ncl;
	for (i = 0, ncu = 0; i < ncl; i++) {
		struct cluster *c = &x->cl[i];

		c->lo = cl[i].lo;
		c->hi = cl[i].hi;
		c->first = ncu;
		c->n = cl[i].ncu;
		if (c->n)
			memcpy(x->cu_off + ncu, cl[i].cu_off, c->n * sizeof(*x->cu_off));
		ncu += c->n;
		x->cl_lo[i] = c->lo;
		if (cl[i].part) {
			c->part = part_import(cl[i].part, why);
			if (!c->part)
				goto fail;
		}
	}
	if (search_init(&x->cl_search, x->cl_lo, x->ncl) < 0) {
		*why = "out of memory";
		goto fail;
	}
	*why = NULL;
	return x;
fail:
	sp_dwarfidx_free(x);
	return NULL;
}
