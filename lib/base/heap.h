/* SPDX-License-Identifier: MIT */
/*
 * heap.h - the reorder heap: a binary min-heap of pointers, each with the
 * time it is ordered by (key) and a sequence number (seq) that breaks ties.
 *
 * Private to the library ("base/heap.h"): sp-record's merge holds the
 * records no sorted run takes there, sp-correlate's window the records that
 * came out of order. Both give every item a seq of its own, counted up as
 * items arrive, so (key, seq) orders all the items there are: the order in
 * which they come out is that one, whatever the heap's shape, and items of
 * equal key come out in the order they went in.
 *
 * The key and seq are kept in the heap beside the pointer, so that ordering
 * never reads the items. Zero-initialised (SP_HEAP_INIT) is empty; memory
 * runs out as with the sp_x* allocators (fatal).
 */
#ifndef STACKPULSE_BASE_HEAP_H
#define STACKPULSE_BASE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_heap_item {
	uint64_t key, seq;
	void *p;
};

struct sp_heap {
	struct sp_heap_item *v;
	size_t n, cap;
};
#define SP_HEAP_INIT { 0 }

/* Whether item a comes out before item b. */
static inline bool sp_heap_before(uint64_t akey, uint64_t aseq, uint64_t bkey, uint64_t bseq)
{
	return akey < bkey || (akey == bkey && aseq < bseq);
}

/* The item that comes out next, or NULL when empty; valid until the next
 * push or pop. */
static inline const struct sp_heap_item *sp_heap_top(const struct sp_heap *h)
{
	return h->n ? &h->v[0] : NULL;
}

void sp_heap_push(struct sp_heap *h, uint64_t key, uint64_t seq, void *p);
/* Take out the top item and return its pointer; the heap must not be empty. */
void *sp_heap_pop(struct sp_heap *h);
/* Free the heap's array (not the items: pop them first to free them). */
void sp_heap_release(struct sp_heap *h);

#endif
