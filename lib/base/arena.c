// SPDX-License-Identifier: MIT
/* Copies that never move, in blocks freed all at once (arena.h). */
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "sp.h"

#define DEFAULT_BLOCK	(64u << 10)

struct sp_arena_block {
	struct sp_arena_block *next;
	size_t used, size;
	char data[];
};

static size_t block_size(const struct sp_arena *a)
{
	return a->block_size ? a->block_size : DEFAULT_BLOCK;
}

char *sp_arena_copy(struct sp_arena *a, const void *p, size_t len)
{
	struct sp_arena_block *b = a->blocks;
	size_t usual = block_size(a);
	char *c;

	if (!b || b->size - b->used <= len) {
		size_t size = len >= usual ? len + 1 : usual;

		if (len == SIZE_MAX || size > SIZE_MAX - sizeof(*b))
			sp_die("out of memory (%zu bytes)", len);
		b = sp_xmalloc(sizeof(*b) + size);
		b->size = size;
		b->used = 0;
		a->memory += sizeof(*b) + size;
		/* A big one goes behind the newest block, which has room left. */
		if (size > usual && a->blocks) {
			b->next = a->blocks->next;
			a->blocks->next = b;
		} else {
			b->next = a->blocks;
			a->blocks = b;
		}
	}
	c = b->data + b->used;
	if (len)
		memcpy(c, p, len);
	c[len] = 0;
	b->used += len + 1;
	return c;
}

static void free_blocks(struct sp_arena_block *b)
{
	struct sp_arena_block *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
}

void sp_arena_reset(struct sp_arena *a)
{
	struct sp_arena_block *keep = a->blocks;

	if (!keep)
		return;
	free_blocks(keep->next);
	keep->next = NULL;
	keep->used = 0;
	if (keep->size != block_size(a)) {
		free(keep);
		keep = NULL;
	}
	a->blocks = keep;
	a->memory = keep ? sizeof(*keep) + keep->size : 0;
}

void sp_arena_release(struct sp_arena *a)
{
	free_blocks(a->blocks);
	a->blocks = NULL;
	a->memory = 0;
}
