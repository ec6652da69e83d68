/* SPDX-License-Identifier: MIT */
/*
 * flame_map.h - private to the flame graph modules: an open-addressing hash
 * index over an array the caller owns. The index stores (hash, position)
 * pairs; the caller compares keys with its own eq() callback, so one index
 * type serves keys of any shape. Memory: 8 bytes a slot, at most 4/3 slots
 * per element.
 */
#ifndef STACKPULSE_FLAME_MAP_H
#define STACKPULSE_FLAME_MAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp.h"

struct sp_hslot {
	uint32_t hash;
	uint32_t pos1;		/* position + 1; 0 = empty */
};

struct sp_hidx {
	struct sp_hslot *slot;
	size_t cap;		/* power of two, or 0 */
	size_t n;
};

typedef bool (*sp_hidx_eq)(const void *ctx, uint32_t pos, const void *key);

static inline uint64_t sp_hmix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static inline uint32_t sp_hash2(uint64_t a, uint64_t b)
{
	return (uint32_t)sp_hmix(a * 0x9e3779b97f4a7c15ULL ^ sp_hmix(b + 0x632be59bd9b4e019ULL));
}

static inline uint32_t sp_hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return (uint32_t)sp_hmix(h);
}

/* Position of the element equal to key, or UINT32_MAX. */
static inline uint32_t sp_hidx_find(const struct sp_hidx *h, uint32_t hash, sp_hidx_eq eq,
				    const void *ctx, const void *key)
{
	size_t mask, i;

	if (!h->cap)
		return UINT32_MAX;
	mask = h->cap - 1;
	for (i = hash & mask; h->slot[i].pos1; i = (i + 1) & mask)
		if (h->slot[i].hash == hash && eq(ctx, h->slot[i].pos1 - 1, key))
			return h->slot[i].pos1 - 1;
	return UINT32_MAX;
}

/* Add an element known to be absent. */
static inline void sp_hidx_insert(struct sp_hidx *h, uint32_t hash, uint32_t pos)
{
	size_t mask, i, j;

	if ((h->n + 1) * 4 >= h->cap * 3) {
		size_t ncap = h->cap ? h->cap * 2 : 256;
		struct sp_hslot *ns = sp_xcalloc(ncap, sizeof(*ns));

		for (j = 0; j < h->cap; j++) {
			if (!h->slot[j].pos1)
				continue;
			for (i = h->slot[j].hash & (ncap - 1); ns[i].pos1; i = (i + 1) & (ncap - 1))
				;
			ns[i] = h->slot[j];
		}
		free(h->slot);
		h->slot = ns;
		h->cap = ncap;
	}
	mask = h->cap - 1;
	for (i = hash & mask; h->slot[i].pos1; i = (i + 1) & mask)
		;
	h->slot[i].hash = hash;
	h->slot[i].pos1 = pos + 1;
	h->n++;
}

static inline void sp_hidx_release(struct sp_hidx *h)
{
	free(h->slot);
	memset(h, 0, sizeof(*h));
}

#endif
