// SPDX-License-Identifier: MIT
/* Unit tests of the reorder heap (lib/base/heap.c): items come out by key,
 * items of equal key in the order they went in, through pushes and pops
 * interleaved, checked against a sorted copy. */
#include <stdint.h>
#include <stdlib.h>

#include "base/heap.h"
#include "tap.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct item {
	uint64_t key, seq;
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_heap_empty(void)
{
	struct sp_heap h = SP_HEAP_INIT;
	int a;

	CHECK(sp_heap_top(&h) == NULL);
	sp_heap_push(&h, 7, 0, &a);
	CHECK(sp_heap_top(&h) && sp_heap_top(&h)->key == 7 && sp_heap_top(&h)->p == &a);
	CHECK(sp_heap_pop(&h) == &a);
	CHECK(sp_heap_top(&h) == NULL);
	sp_heap_release(&h);
	CHECK(h.v == NULL && h.n == 0 && h.cap == 0);
}

/* Equal keys only: the heap is a queue. */
static void test_heap_ties_in_order(void)
{
	enum { N = 1000 };
	static struct item it[N];
	struct sp_heap h = SP_HEAP_INIT;
	bool ok = true;
	size_t i;

	for (i = 0; i < N; i++) {
		it[i] = (struct item){ 42, i };
		sp_heap_push(&h, 42, i, &it[i]);
	}
	for (i = 0; i < N; i++)
		if (sp_heap_pop(&h) != &it[i])
			ok = false;
	CHECK(ok);
	CHECK_EQ_U(h.n, 0);
	sp_heap_release(&h);
}

/* The least of held[0..n) by (key, seq), taken out of it. */
static struct item *take_least(struct item **held, size_t *n)
{
	struct item *x;
	size_t i, best = 0;

	for (i = 1; i < *n; i++)
		if (cmp_item(held[i], held[best]) < 0)
			best = i;
	x = held[best];
	held[best] = held[--*n];
	return x;
}

/*
 * Random keys from a small range (many ties), pushed and popped in random
 * turns: each pop gives the least item held, as a plain scan finds it, and
 * the top is that item before the pop.
 */
static void test_heap_interleaved(void)
{
	enum { N = 5000 };
	static struct item in[N];
	static struct item *held[N];
	struct sp_heap h = SP_HEAP_INIT;
	size_t nin = 0, nheld = 0, nout = 0;
	bool ok = true;
	uint64_t floor = 0;

	while (nout < N) {
		uint64_t r = next_rand();

		if (nin < N && (h.n == 0 || r % 3)) {
			/* keys never below what came out: a reorder window */
			in[nin] = (struct item){ floor + (r >> 8) % 64, nin };
			sp_heap_push(&h, in[nin].key, in[nin].seq, &in[nin]);
			held[nheld++] = &in[nin++];
		} else {
			struct item *want = take_least(held, &nheld);

			if (sp_heap_top(&h)->p != want || sp_heap_pop(&h) != want)
				ok = false;
			floor = want->key;
			nout++;
		}
		if (h.n != nheld)
			ok = false;
	}
	CHECK(ok);
	CHECK_EQ_U(h.n, 0);
	sp_heap_release(&h);
}

/* All pushed, then all popped: the sorted order, ties by seq. */
static void test_heap_against_sort(void)
{
	enum { N = 200000 };
	struct item *in = calloc(N, sizeof(*in)), *sorted = calloc(N, sizeof(*sorted));
	struct sp_heap h = SP_HEAP_INIT;
	bool ok = true;
	size_t i;

	for (i = 0; i < N; i++) {
		in[i] = (struct item){ next_rand() % 1000, i };
		sorted[i] = in[i];
		sp_heap_push(&h, in[i].key, in[i].seq, &in[i]);
	}
	qsort(sorted, N, sizeof(*sorted), cmp_item);
	for (i = 0; i < N; i++) {
		const struct item *x = sp_heap_pop(&h);

		if (x->key != sorted[i].key || x->seq != sorted[i].seq)
			ok = false;
	}
	CHECK(ok);
	sp_heap_release(&h);
	free(in);
	free(sorted);
}

int main(void)
{
	TAP_RUN(test_heap_empty);
	TAP_RUN(test_heap_ties_in_order);
	TAP_RUN(test_heap_interleaved);
	TAP_RUN(test_heap_against_sort);
	return TAP_DONE();
}
