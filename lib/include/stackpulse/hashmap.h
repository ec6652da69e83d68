/* SPDX-License-Identifier: MIT */
/*
 * hashmap.h - two small open-addressing hash tables used across the tools:
 *
 * sp_u64map: uint64 key -> uint64 value (pids, ids, addresses). Any key.
 * sp_idset: a set of ids (1..2^32-1) of objects the caller stores itself,
 *	found by the caller's hash and equality callback (interning).
 *
 * Both start empty when zero-initialised (SP_U64MAP_INIT, SP_IDSET_INIT) and
 * die on out-of-memory like the sp_x* allocators.
 */
#ifndef STACKPULSE_HASHMAP_H
#define STACKPULSE_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_u64map {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t *used;		/* 0 empty, 1 used, 2 deleted */
	size_t cap, n, tomb;
};
#define SP_U64MAP_INIT { 0 }

/* Pointer to the value of key, or NULL. Valid until the next insertion. */
uint64_t *sp_u64map_get(const struct sp_u64map *m, uint64_t key);
/* Insert or replace; returns a pointer to the stored value. */
uint64_t *sp_u64map_put(struct sp_u64map *m, uint64_t key, uint64_t val);
/* Remove key; true if it was there. */
bool sp_u64map_del(struct sp_u64map *m, uint64_t key);
void sp_u64map_release(struct sp_u64map *m);
/* Iterate: for (i = 0; sp_u64map_next(m, &i, &k, &v); ) */
bool sp_u64map_next(const struct sp_u64map *m, size_t *iter, uint64_t *key, uint64_t *val);

typedef bool (*sp_idset_eq_fn)(void *ctx, uint32_t id, const void *key);
typedef uint64_t (*sp_idset_hash_fn)(void *ctx, uint32_t id);

struct sp_idset {
	uint32_t *slots;	/* 0 = empty */
	uint32_t *hashes;	/* low bits of each stored id's hash */
	size_t cap, n;
};
#define SP_IDSET_INIT { 0 }

/* The id whose object equals key (hash is the key's hash), or 0. */
uint32_t sp_idset_find(const struct sp_idset *s, uint64_t hash, const void *key,
		       sp_idset_eq_fn eq, void *ctx);
/* Add id with its hash (not checked for duplicates). */
void sp_idset_add(struct sp_idset *s, uint64_t hash, uint32_t id);
void sp_idset_release(struct sp_idset *s);

/* Hashes. */
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
