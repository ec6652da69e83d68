// SPDX-License-Identifier: MIT
/*
 * The hash tables (hashmap.h): open addressing, linear probing, deletion by
 * moving the later members of a run back (no tombstones), so a table's
 * layout, and the order sp_u64map_next() walks it in, follow from the
 * sequence of puts and deletes alone.
 */
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "sp.h"

uint64_t sp_hash_bytes(const void *p, size_t n)
{
	/* FNV-1a over 8-byte words, finished with a strong mix. */
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	uint64_t w;

	while (n >= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0x100000001b3ull;
		s += 8;
		n -= 8;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0x100000001b3ull;
	return sp_hash_u64(h);
}

/* The slot of key, or the empty slot where it would go (*found false). */
static size_t u64map_slot(const struct sp_u64map *m, uint64_t key, bool *found)
{
	size_t mask = m->cap - 1, i;

	for (i = sp_hash_u64(key) & mask; m->used[i]; i = (i + 1) & mask) {
		if (m->keys[i] == key) {
			*found = true;
			return i;
		}
	}
	*found = false;
	return i;
}

/* Twice the slots (64 at first), the keys put again in slot order. */
static void u64map_grow(struct sp_u64map *m)
{
	struct sp_u64map old = *m;
	size_t i;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->n = 0;
	m->keys = sp_xmalloc(m->cap * sizeof(*m->keys));
	m->vals = sp_xmalloc(m->cap * sizeof(*m->vals));
	m->used = sp_xcalloc(m->cap, 1);
	for (i = 0; i < old.cap; i++)
		if (old.used[i])
			sp_u64map_put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
	free(old.used);
}

uint64_t *sp_u64map_get(const struct sp_u64map *m, uint64_t key)
{
	bool found;
	size_t i;

	if (!m->cap)
		return NULL;
	i = u64map_slot(m, key, &found);
	return found ? &m->vals[i] : NULL;
}

uint64_t *sp_u64map_put(struct sp_u64map *m, uint64_t key, uint64_t val)
{
	bool found;
	size_t i;

	if ((m->n + 1) * 4 > m->cap * 3)
		u64map_grow(m);
	i = u64map_slot(m, key, &found);
	if (!found) {
		m->used[i] = 1;
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
	return &m->vals[i];
}

/* Whether the key in slot j, whose probe starts at home, may move back to
 * the hole at i: its probe passes i before it reaches j. */
static bool may_fill(size_t i, size_t j, size_t home)
{
	return j > i ? home <= i || home > j : home <= i && home > j;
}

bool sp_u64map_del(struct sp_u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i, j;
	bool found;

	if (!m->cap)
		return false;
	i = u64map_slot(m, key, &found);
	if (!found)
		return false;
	m->used[i] = 0;
	m->n--;
	/* later members of the run move back into the hole */
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		if (may_fill(i, j, sp_hash_u64(m->keys[j]) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			m->used[i] = 1;
			m->used[j] = 0;
			i = j;
		}
	}
	return true;
}

bool sp_u64map_next(const struct sp_u64map *m, size_t *iter, uint64_t *key, uint64_t *val)
{
	size_t i;

	for (i = *iter; i < m->cap; i++) {
		if (m->used[i]) {
			if (key)
				*key = m->keys[i];
			if (val)
				*val = m->vals[i];
			*iter = i + 1;
			return true;
		}
	}
	*iter = m->cap;
	return false;
}

void sp_u64map_release(struct sp_u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

uint32_t sp_idset_find(const struct sp_idset *s, uint64_t hash, const void *key,
		       sp_idset_eq_fn eq, void *ctx)
{
	size_t mask, i;

	if (!s->cap)
		return 0;
	mask = s->cap - 1;
	for (i = hash & mask; s->slots[i].id; i = (i + 1) & mask)
		if (s->slots[i].hash == (uint32_t)hash && eq(ctx, s->slots[i].id, key))
			return s->slots[i].id;
	return 0;
}

static void idset_insert(struct sp_idset *s, uint32_t hash, uint32_t id)
{
	size_t mask = s->cap - 1, i;

	for (i = hash & mask; s->slots[i].id; i = (i + 1) & mask)
		;
	s->slots[i].hash = hash;
	s->slots[i].id = id;
}

void sp_idset_add(struct sp_idset *s, uint64_t hash, uint32_t id)
{
	if ((s->n + 1) * 4 >= s->cap * 3) {
		/* Rehash needs only the stored low hash bits: keep 32 bits and
		 * never grow past 2^32 slots. */
		struct sp_idset old = *s;
		size_t i;

		s->cap = s->cap ? s->cap * 2 : 64;
		s->slots = sp_xcalloc(s->cap, sizeof(*s->slots));
		for (i = 0; i < old.cap; i++)
			if (old.slots[i].id)
				idset_insert(s, old.slots[i].hash, old.slots[i].id);
		free(old.slots);
	}
	idset_insert(s, (uint32_t)hash, id);
	s->n++;
}

bool sp_idset_del(struct sp_idset *s, uint64_t hash, uint32_t id)
{
	size_t mask = s->cap - 1, i, j;

	if (!s->cap || !id)
		return false;
	for (i = hash & mask; s->slots[i].id != id; i = (i + 1) & mask)
		if (!s->slots[i].id)
			return false;
	s->slots[i].id = 0;
	s->n--;
	for (j = (i + 1) & mask; s->slots[j].id; j = (j + 1) & mask) {
		if (may_fill(i, j, s->slots[j].hash & mask)) {
			s->slots[i] = s->slots[j];
			s->slots[j].id = 0;
			i = j;
		}
	}
	return true;
}

void sp_idset_release(struct sp_idset *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
