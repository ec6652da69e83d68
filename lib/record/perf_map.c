// SPDX-License-Identifier: MIT
/*
 * The perf source's map of (a, b) pairs to values (perf_sourceP.h):
 * processes by pid, modules by file identity and by id, frames by (module,
 * address), files by path. Open addressing with linear probing and
 * backward-shift deletion, so that the slot order, which the end of a
 * recording walks, depends only on the keys and the order of operations.
 */
#include <stdlib.h>
#include <string.h>

#include "perf_sourceP.h"
#include "sp.h"

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6));

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

uint64_t *sp_perf_map_get(const struct perf_map *m, uint64_t a, uint64_t b)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = mix(a, b) & (m->cap - 1); m->t[i].used; i = (i + 1) & (m->cap - 1))
		if (m->t[i].a == a && m->t[i].b == b)
			return &m->t[i].v;
	return NULL;
}

void sp_perf_map_put(struct perf_map *m, uint64_t a, uint64_t b, uint64_t v)
{
	struct perf_kv *old;
	size_t i, oldcap;
	uint64_t *p = sp_perf_map_get(m, a, b);

	if (p) {
		*p = v;
		return;
	}
	if (2 * (m->n + 1) > m->cap) {
		old = m->t;
		oldcap = m->cap;
		m->cap = m->cap ? 2 * m->cap : 256;
		m->t = sp_xcalloc(m->cap, sizeof(*m->t));
		m->n = 0;
		for (i = 0; i < oldcap; i++)
			if (old[i].used)
				sp_perf_map_put(m, old[i].a, old[i].b, old[i].v);
		free(old);
	}
	for (i = mix(a, b) & (m->cap - 1); m->t[i].used; i = (i + 1) & (m->cap - 1))
		;
	m->t[i] = (struct perf_kv){ a, b, v, true };
	m->n++;
}

void sp_perf_map_del(struct perf_map *m, uint64_t a, uint64_t b)
{
	size_t i, j, k;

	if (!m->cap)
		return;
	for (i = mix(a, b) & (m->cap - 1); m->t[i].used; i = (i + 1) & (m->cap - 1))
		if (m->t[i].a == a && m->t[i].b == b)
			break;
	if (!m->t[i].used)
		return;
	/* Backward-shift deletion keeps every probe chain unbroken. */
	j = i;
	for (;;) {
		m->t[i].used = false;
		for (;;) {
			j = (j + 1) & (m->cap - 1);
			if (!m->t[j].used) {
				m->n--;
				return;
			}
			k = mix(m->t[j].a, m->t[j].b) & (m->cap - 1);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		m->t[i] = m->t[j];
		i = j;
	}
}

void sp_perf_map_free(struct perf_map *m)
{
	free(m->t);
	memset(m, 0, sizeof(*m));
}

bool sp_perf_map_next(const struct perf_map *m, size_t *iter, uint64_t *v)
{
	while (*iter < m->cap) {
		const struct perf_kv *kv = &m->t[(*iter)++];

		if (kv->used) {
			*v = kv->v;
			return true;
		}
	}
	return false;
}
