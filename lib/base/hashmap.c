// SPDX-License-Identifier: MIT
/* Open-addressing hash tables with linear probing (see hashmap.h). */
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

static size_t u64map_slot(const struct sp_u64map *m, uint64_t key, bool *found)
{
	size_t mask = m->cap - 1, i = sp_hash_u64(key) & mask, tomb = SIZE_MAX;

	for (;;) {
		if (m->used[i] == 0) {
			*found = false;
			return tomb != SIZE_MAX ? tomb : i;
		}
		if (m->used[i] == 1 && m->keys[i] == key) {
			*found = true;
			return i;
		}
		if (m->used[i] == 2 && tomb == SIZE_MAX)
			tomb = i;
		i = (i + 1) & mask;
	}
}

static void u64map_resize(struct sp_u64map *m, size_t cap)
{
	struct sp_u64map old = *m;
	size_t i;

	m->cap = cap;
	m->n = m->tomb = 0;
	m->keys = sp_xmalloc(cap * sizeof(*m->keys));
	m->vals = sp_xmalloc(cap * sizeof(*m->vals));
	m->used = sp_xcalloc(cap, 1);
	for (i = 0; i < old.cap; i++)
		if (old.used[i] == 1)
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

	if ((m->n + m->tomb + 1) * 4 >= m->cap * 3)
		u64map_resize(m, m->cap ? (m->n * 4 >= m->cap ? m->cap * 2 : m->cap) : 16);
	i = u64map_slot(m, key, &found);
	if (!found) {
		if (m->used[i] == 2)
			m->tomb--;
		m->used[i] = 1;
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
	return &m->vals[i];
}

bool sp_u64map_del(struct sp_u64map *m, uint64_t key)
{
	bool found;
	size_t i;

	if (!m->cap)
		return false;
	i = u64map_slot(m, key, &found);
	if (!found)
		return false;
	m->used[i] = 2;
	m->n--;
	m->tomb++;
	return true;
}

bool sp_u64map_next(const struct sp_u64map *m, size_t *iter, uint64_t *key, uint64_t *val)
{
	size_t i;

	for (i = *iter; i < m->cap; i++) {
		if (m->used[i] == 1) {
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
	for (i = hash & mask; s->slots[i]; i = (i + 1) & mask)
		if (s->hashes[i] == (uint32_t)hash && eq(ctx, s->slots[i], key))
			return s->slots[i];
	return 0;
}

static void idset_insert(struct sp_idset *s, uint64_t hash, uint32_t id)
{
	size_t mask = s->cap - 1, i;

	for (i = hash & mask; s->slots[i]; i = (i + 1) & mask)
		;
	s->slots[i] = id;
	s->hashes[i] = (uint32_t)hash;
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
		s->hashes = sp_xcalloc(s->cap, sizeof(*s->hashes));
		for (i = 0; i < old.cap; i++)
			if (old.slots[i])
				idset_insert(s, old.hashes[i], old.slots[i]);
		free(old.slots);
		free(old.hashes);
	}
	idset_insert(s, hash, id);
	s->n++;
}

void sp_idset_release(struct sp_idset *s)
{
	free(s->slots);
	free(s->hashes);
	memset(s, 0, sizeof(*s));
}
