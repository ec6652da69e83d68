/* SPDX-License-Identifier: MIT */
/*
 * hashmap.h - the library's hash tables and its hash functions:
 *
 * sp_u64map: uint64 key -> uint64 value (pids, ids, addresses, pointers
 *	cast to uintptr_t). Any key.
 * sp_idset: an index over objects the caller stores itself (an array, ids
 *	1..2^32-1, e.g. position + 1), found by the caller's hash and equality
 *	callback: interning strings, frames, stacks, anything with a key of
 *	its own shape.
 * sp_hash_bytes(), sp_hash_u64(), sp_hash_mix(): the hashes for them.
 *
 * Both tables start empty when zero-initialised (SP_U64MAP_INIT,
 * SP_IDSET_INIT) and die on out-of-memory like the sp_x* allocators. Both
 * use linear probing and delete without tombstones (the later members of a
 * run move back), so a table's layout follows from its sequence of puts and
 * deletes alone: sp_u64map_next() walks the same keys in the same order for
 * the same sequence, on every run and machine. sp-correlate closes the
 * threads still open at the end of a stream in that order, so its output
 * depends on these rules (the first 64 slots, doubling past 3/4 full, the
 * probe start sp_hash_u64(key)): tests/unit/test-hashmap.c pins them.
 */
#ifndef STACKPULSE_HASHMAP_H
#define STACKPULSE_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_u64map {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t *used;		/* 0 empty, 1 used */
	size_t cap, n;
};
#define SP_U64MAP_INIT { 0 }

/* Pointer to the value of key, or NULL. Valid until the next insertion. */
uint64_t *sp_u64map_get(const struct sp_u64map *m, uint64_t key);
/* Insert or replace; returns a pointer to the stored value. */
uint64_t *sp_u64map_put(struct sp_u64map *m, uint64_t key, uint64_t val);
/* Remove key; true if it was there. Moves other keys: pointers from get()
 * and put() are invalid after it, and so is an iteration in progress. */
bool sp_u64map_del(struct sp_u64map *m, uint64_t key);
void sp_u64map_release(struct sp_u64map *m);
/* Iterate: for (i = 0; sp_u64map_next(m, &i, &k, &v); ) */
bool sp_u64map_next(const struct sp_u64map *m, size_t *iter, uint64_t *key, uint64_t *val);

typedef bool (*sp_idset_eq_fn)(void *ctx, uint32_t id, const void *key);

struct sp_idslot {
	uint32_t hash;		/* the low bits of the id's hash */
	uint32_t id;		/* 0 = empty */
};

struct sp_idset {
	struct sp_idslot *slots;
	size_t cap, n;
};
#define SP_IDSET_INIT { 0 }

/* The id whose object equals key (hash is the key's hash), or 0. */
uint32_t sp_idset_find(const struct sp_idset *s, uint64_t hash, const void *key,
		       sp_idset_eq_fn eq, void *ctx);
/* Add id with its hash (not checked for duplicates). */
void sp_idset_add(struct sp_idset *s, uint64_t hash, uint32_t id);
/* Remove id, added with hash; true if it was there. The caller may then
 * reuse the id (and its object) for another key. */
bool sp_idset_del(struct sp_idset *s, uint64_t hash, uint32_t id);
void sp_idset_release(struct sp_idset *s);

/*
 * Hashes for the tables: strings and byte keys (sp_hash_bytes), one number
 * (sp_hash_u64), a key of several numbers folded one by one (sp_hash_mix).
 * Their values are for tables only: no output shows one or is ordered by
 * one, so they may change.
 */
uint64_t sp_hash_bytes(const void *p, size_t n);
static inline uint64_t sp_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}
static inline uint64_t sp_hash_mix(uint64_t h, uint64_t v)
{
	return sp_hash_u64(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

#endif
