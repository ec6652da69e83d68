// SPDX-License-Identifier: MIT
/*
 * Unit tests of a function over items on a few threads
 * (lib/record/parallel.c): each item is handed over exactly once,
 * whatever the count of items and threads (none, fewer items than
 * threads, more threads than allowed); the calls do run at once (a call
 * that waits for another to start does not wait forever); and links are
 * destroyed, NULL ones too.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "record/parallel.h"
#include "tap.h"

#define N	1000

static int seen[N];

static void mark(void *item)
{
	__atomic_fetch_add(&seen[(uintptr_t)item], 1, __ATOMIC_RELAXED);
}

static void run(size_t n, unsigned int nthreads)
{
	void *items[N];
	size_t i;

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < n; i++)
		items[i] = (void *)(uintptr_t)i;
	sp_each_parallel(items, n, nthreads, mark);
	for (i = 0; i < N; i++)
		CHECK_EQ_U(seen[i], i < n ? 1 : 0);
}

static void test_each_once(void)
{
	run(0, 4);
	run(1, 4);
	run(3, 8);
	run(N, 1);
	run(N, 0);
	run(N, 8);
	run(N, 1000);	/* more than it allows */
}

/* Two calls that each wait (bounded) for the other to have started:
 * both finish only when they run at once. */
static int started, gave_up;

static void rendezvous(void *item)
{
	struct timespec ts = { 0, 1000000 };
	int i;

	(void)item;
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	/* 10 s at most: a loaded machine starts a thread well within it */
	for (i = 0; __atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2; i++) {
		if (i == 10000) {
			__atomic_fetch_add(&gave_up, 1, __ATOMIC_SEQ_CST);
			return;
		}
		nanosleep(&ts, NULL);
	}
}

static void test_at_once(void)
{
	void *items[2] = { NULL, NULL };

	started = gave_up = 0;
	sp_each_parallel(items, 2, 2, rendezvous);
	CHECK_EQ_U(started, 2);
	CHECK_EQ_U(gave_up, 0);
}

static void test_links(void)
{
	struct bpf_link *links[3] = { NULL, NULL, NULL };

	sp_bpf_links_destroy(links, 3);	/* NULL links: nothing to do */
	sp_bpf_links_destroy(links, 0);
	CHECK(1);
}

int main(void)
{
	TAP_RUN(test_each_once);
	TAP_RUN(test_at_once);
	TAP_RUN(test_links);
	return TAP_DONE();
}
