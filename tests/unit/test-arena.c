// SPDX-License-Identifier: MIT
/* Unit tests of lib/base/arena.c: copies that never move, whatever comes after them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "tap.h"

/* Many copies, small and larger than a block, each still intact at the end. */
static void test_arena_copies_stay(void)
{
	enum { N = 20000 };
	struct sp_arena a = SP_ARENA_INIT(4096);
	static char *copy[N];
	char want[10000];
	size_t i, len;
	int ok = 1;

	for (i = 0; i < N; i++) {
		len = i % 97 == 0 ? 4096 + i % 5000 : i % 40;	/* some over the block size */
		memset(want, 'a' + i % 26, len);
		copy[i] = sp_arena_copy(&a, want, len);
	}
	for (i = 0; i < N && ok; i++) {
		len = i % 97 == 0 ? 4096 + i % 5000 : i % 40;
		ok = strlen(copy[i]) == len && strspn(copy[i], (char[]){ 'a' + i % 26, 0 }) == len;
	}
	CHECK(ok);
	CHECK(a.memory >= N * 20);
	/* Bytes with NULs, and nothing at all. */
	CHECK(!memcmp(sp_arena_copy(&a, "a\0b", 3), "a\0b", 4));
	CHECK_STR(sp_arena_copy(&a, NULL, 0), "");
	sp_arena_release(&a);
	CHECK(!a.blocks && !a.memory);
}

/* A big copy goes behind the newest block: the room left there is used next. */
static void test_arena_big_behind(void)
{
	struct sp_arena a = SP_ARENA_INIT(64);
	char big[200], *small, *big_copy, *next;

	memset(big, 'x', sizeof(big));
	small = sp_arena_copy(&a, "ab", 2);
	big_copy = sp_arena_copy(&a, big, sizeof(big));
	next = sp_arena_copy(&a, "cd", 2);
	CHECK(next == small + 3);	/* right after "ab\0", in the same block */
	CHECK(big_copy[sizeof(big)] == 0 && big_copy[0] == 'x');
	sp_arena_release(&a);
}

/* Reset keeps one block of the usual size, and only that. */
static void test_arena_reset(void)
{
	struct sp_arena a = SP_ARENA_INIT(64);
	char big[200] = { 0 };
	size_t i;

	sp_arena_reset(&a);	/* nothing yet */
	CHECK(!a.blocks);
	for (i = 0; i < 100; i++)
		sp_arena_copy(&a, "0123456789", 10);
	sp_arena_reset(&a);
	CHECK(a.blocks != NULL);
	CHECK(a.memory < 64 + 64);
	CHECK_STR(sp_arena_copy(&a, "again", 5), "again");
	sp_arena_release(&a);
	/* The newest block is a big one: nothing is kept. */
	sp_arena_copy(&a, big, sizeof(big));
	sp_arena_reset(&a);
	CHECK(!a.blocks && !a.memory);
	sp_arena_release(&a);
}

int main(void)
{
	TAP_RUN(test_arena_copies_stay);
	TAP_RUN(test_arena_big_behind);
	TAP_RUN(test_arena_reset);
	return TAP_DONE();
}
