// SPDX-License-Identifier: MIT
/*
 * The reorder heap (heap.h): a binary min-heap in an array, ordered by
 * (key, seq), items moved up on a push and down on a pop.
 */
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "sp.h"

static bool item_before(const struct sp_heap_item *a, const struct sp_heap_item *b)
{
	return sp_heap_before(a->key, a->seq, b->key, b->seq);
}

void sp_heap_push(struct sp_heap *h, uint64_t key, uint64_t seq, void *p)
{
	struct sp_heap_item it = { key, seq, p };
	size_t i, up;

	if (h->n == h->cap)
		sp_grow(&h->v, &h->cap, h->n + 1, sizeof(*h->v));
	for (i = h->n++; i; i = up) {
		up = (i - 1) / 2;
		if (!item_before(&it, &h->v[up]))
			break;
		h->v[i] = h->v[up];
	}
	h->v[i] = it;
}

void *sp_heap_pop(struct sp_heap *h)
{
	void *top = h->v[0].p;
	struct sp_heap_item last = h->v[--h->n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < h->n) {
		if (c + 1 < h->n && item_before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!item_before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}

void sp_heap_release(struct sp_heap *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}
