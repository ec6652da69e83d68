// SPDX-License-Identifier: MIT
/* A function over items on a few threads at once (parallel.h). */
#include <pthread.h>

#include <bpf/libbpf.h>

#include "parallel.h"

#define MAX_THREADS	16

struct work {
	void **items;
	size_t n;
	size_t next;		/* atomic: the next item to take */
	void (*fn)(void *item);
};

static void *worker(void *arg)
{
	struct work *w = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->n)
		w->fn(w->items[i]);
	return NULL;
}

void sp_each_parallel(void **items, size_t n, unsigned int nthreads, void (*fn)(void *item))
{
	struct work w = { .items = items, .n = n, .fn = fn };
	pthread_t th[MAX_THREADS];
	unsigned int k, made = 0;

	if (nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;
	if (nthreads > n)
		nthreads = (unsigned int)n;
	/* the caller is one of them */
	for (k = 1; k < nthreads; k++)
		if (!pthread_create(&th[made], NULL, worker, &w))
			made++;
	worker(&w);
	for (k = 0; k < made; k++)
		pthread_join(th[k], NULL);
}

static void destroy_link(void *item)
{
	bpf_link__destroy(item);
}

void sp_bpf_links_destroy(struct bpf_link **links, size_t n)
{
	sp_each_parallel((void **)links, n, 8, destroy_link);
}
