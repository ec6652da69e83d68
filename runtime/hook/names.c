// SPDX-License-Identifier: MIT
/*
 * names.c - interned names of a runtime hook (see names.h). Names are
 * allocated from chunks that are never returned: their addresses must stay
 * unique for the life of the process.
 */
#include <stdlib.h>
#include <string.h>

#include "marker.h"
#include "names.h"

unsigned int sp_rt_names_heard;
bool sp_rt_names_listened;

/* The rt__name marker, at one place (sp_rt_name_site): one body only. */
__attribute__((noinline, noclone))
void sp_rt_name_tell(struct sp_rt_name *n)
{
	n->told = sp_rt_names_heard;
	SP_RT_MARK_AT(sp_rt_name_site, rt__name, n->str[0], n->str[1], n->str[2], 0);
}

#define CHUNK	(64 * 1024)

static char *chunk;
static size_t chunk_left;

/* Bytes that live as long as the process. */
static void *forever(size_t size)
{
	void *p;

	size = (size + 7) & ~(size_t)7;
	if (size > CHUNK / 4)
		return malloc(size);
	if (size > chunk_left) {
		chunk = malloc(CHUNK);
		if (!chunk) {
			chunk_left = 0;
			return NULL;
		}
		chunk_left = CHUNK;
	}
	p = chunk;
	chunk += size;
	chunk_left -= size;
	return p;
}

static int grow(struct sp_rt_names *t)
{
	size_t cap = t->slot ? (t->mask + 1) * 2 : 256, i, j;
	struct sp_rt_name **slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -1;
	for (i = 0; t->slot && i <= t->mask; i++) {
		struct sp_rt_name *n = t->slot[i];

		if (!n)
			continue;
		for (j = sp_rt_names_hash(n->key[0], n->key[1], n->key[2]) & (cap - 1); slot[j];
		     j = (j + 1) & (cap - 1))
			;
		slot[j] = n;
	}
	free(t->slot);
	t->slot = slot;
	t->mask = cap - 1;
	return 0;
}

struct sp_rt_name *sp_rt_names_add(struct sp_rt_names *t, uintptr_t a, uintptr_t b,
				   uintptr_t c, const char *const s[3], const size_t len[3],
				   int line)
{
	struct sp_rt_name *n;
	size_t i, l;

	if ((!t->slot || (t->n + 1) * 4 > (t->mask + 1) * 3) && grow(t))
		return NULL;
	n = forever(sizeof(*n));
	if (!n)
		return NULL;
	n->key[0] = a;
	n->key[1] = b;
	n->key[2] = c;
	n->line = line;
	n->told = 0;	/* (sp_rt_names_heard counts from 1) */
	for (i = 0; i < 3; i++) {
		char *copy;

		n->str[i] = NULL;
		if (!s[i])
			continue;
		l = len[i] > SP_RT_NAME_MAX ? SP_RT_NAME_MAX : len[i];
		copy = forever(l + 1);
		if (!copy)
			return NULL;
		memcpy(copy, s[i], l);
		copy[l] = 0;
		n->str[i] = copy;
	}
	for (i = sp_rt_names_hash(a, b, c) & t->mask; t->slot[i]; i = (i + 1) & t->mask) {
		struct sp_rt_name *o = t->slot[i];

		if (o->key[0] == a && o->key[1] == b && o->key[2] == c) {
			t->slot[i] = n;		/* replaced: the old one stays valid */
			return n;
		}
	}
	t->slot[i] = n;
	t->n++;
	return n;
}
