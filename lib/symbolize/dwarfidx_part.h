/* SPDX-License-Identifier: MIT */
/*
 * dwarfidx_part.h - the inside of the DWARF index (dwarfidx.h), private to
 * its two files.
 *
 * A part is the index of one cluster of compilation units: its interned
 * strings, its functions and inlined instances (nodes), the flattened
 * address segments pointing at them, and its sorted line rows.
 * dwarfidx_part.c builds a part from the units' DIEs, imports one from the
 * cache and frees it; dwarfidx.c groups the units of a module into clusters,
 * finds the part of an address, builds it on first use and answers lookups
 * from it. Both search sorted addresses with the bucketed search below.
 *
 * Out of memory here is not fatal: a part that cannot be built is left out
 * (its addresses get no DWARF answer, the symbol table still names them).
 * So these return NULL (or NONE) when memory runs out, and arrays grow with
 * sp_dwarfidx_grow(), not with sp_grow(), which would exit.
 */
#ifndef STACKPULSE_DWARFIDX_PART_H
#define STACKPULSE_DWARFIDX_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dwarfidx.h"

#define NONE		SP_DWARFIDX_NONE
#define ROW_END		SP_DWARFIDX_ROW_END

/*
 * Grow *cap (doubling, from 64) until index n fits; p itself if it does.
 * Adds the bytes gained to *memory (may be NULL), for the statistics.
 * NULL when out of memory, p still valid.
 */
static inline void *sp_dwarfidx_grow(void *p, size_t *cap, size_t n, size_t sz, size_t *memory)
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

/*
 * Whether [lo, hi) is code of the module's executable sections, [text_lo,
 * text_hi): code of discarded sections is relocated to 0. text_hi 0 keeps
 * everything but what starts at 0.
 */
static inline bool sp_dwarfidx_in_text(uint64_t text_lo, uint64_t text_hi, uint64_t lo,
				       uint64_t hi)
{
	if (hi <= lo)
		return false;
	if (!text_hi)
		return lo != 0;
	return lo >= text_lo && hi <= text_hi;
}

/*
 * Searching a large sorted array: a table of equal-width buckets over its
 * key range, each holding the index of its first key, narrows the search to
 * the two or so keys of one bucket: two cache misses per lookup instead of
 * one per halving. About one bucket per two keys.
 */
struct bucket_search {
	const uint64_t *v;
	size_t n;
	uint32_t *top;		/* top[k]: keys below first + (k << shift); NULL: small */
	size_t ntop;
	uint64_t first, last;	/* v[0], v[n - 1]: no cache miss to compare with them */
	unsigned int shift;
};

/* Search the n sorted keys v (kept by the caller); -1 when out of memory. */
int sp_bucket_search_init(struct bucket_search *sr, const uint64_t *v, size_t n);

/* The number of keys <= key. */
static inline size_t sp_bucket_search_upper(const struct bucket_search *sr, uint64_t key)
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

struct arena_chunk;

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

/* String i of t, NULL for 0 (no string) or out of range. */
static inline const char *sp_strtab_get(const struct strtab *t, uint32_t i)
{
	return i && i < t->n ? t->s[i] : NULL;
}

/* The index of one cluster of units (exported as struct sp_dwarfidx_part). */
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
	struct bucket_search seg_search, row_search;
	size_t units;
	bool borrowed;		/* imported: the arrays are someone else's memory */
};

/*
 * The part of the n units at DIE offsets cu_off of dw, only code in
 * [text_lo, text_hi) (see sp_dwarfidx_in_text()). A unit that cannot be
 * read is counted in *bad. NULL when out of memory.
 */
struct part *sp_dwarfidx_part_build(Dwarf *dw, const Dwarf_Off *cu_off, size_t n,
				    uint64_t text_lo, uint64_t text_hi, size_t *bad);

/*
 * A part using d's arrays in place (borrowed), once every index, offset and
 * order in them is checked; NULL and *why (a static message) if one is
 * wrong or memory ran out.
 */
struct part *sp_dwarfidx_part_import(const struct sp_dwarfidx_part *d, const char **why);

void sp_dwarfidx_part_free(struct part *x);

#endif
