/* SPDX-License-Identifier: MIT */
/*
 * arena.h - copies of strings (and other bytes) that never move, freed all
 * at once: the strings and build-ids of a stream's definitions, the names
 * of a symbol table.
 *
 * A copy goes into the newest block while it has room, else into a new
 * block of the arena's block size; a copy larger than that gets a block of
 * its own, put behind the newest so that the room left there is still
 * used. A pointer sp_arena_copy() gives stays valid until
 * sp_arena_reset() or sp_arena_release(). Out of memory is fatal (sp.h).
 */
#ifndef STACKPULSE_ARENA_H
#define STACKPULSE_ARENA_H

#include <stddef.h>

struct sp_arena_block;

struct sp_arena {
	struct sp_arena_block *blocks;	/* newest first */
	size_t block_size;		/* 0: 64 KiB */
	size_t memory;			/* bytes allocated, blocks included */
};
#define SP_ARENA_INIT(size) { .block_size = (size) }

/* A copy of p[0..len) followed by a NUL (p may be NULL when len is 0). */
char *sp_arena_copy(struct sp_arena *a, const void *p, size_t len);
/* Forget every copy, keeping one block of the usual size for the next ones. */
void sp_arena_reset(struct sp_arena *a);
void sp_arena_release(struct sp_arena *a);

#endif
