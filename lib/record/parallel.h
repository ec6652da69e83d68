/* SPDX-License-Identifier: MIT */
/*
 * parallel.c: a function over items, on a few threads at once. For the
 * calls that mostly wait in the kernel, not on a CPU: closing a
 * tracepoint's perf event waits for an RCU grace period (15-30 ms each on
 * a loaded VM), and N of them one after the other wait N periods, where N
 * at once share a few.
 */
#ifndef SP_RECORD_PARALLEL_H
#define SP_RECORD_PARALLEL_H

#include <stddef.h>

/* fn(items[i]) once for each i < n, on up to nthreads threads (the
 * caller's among them); in the caller alone when n < 2 or no thread can
 * be made. Returns when every call has. */
void sp_each_parallel(void **items, size_t n, unsigned int nthreads, void (*fn)(void *item));

/* bpf_link__destroy() of links[0..n), on up to 8 threads. */
struct bpf_link;
void sp_bpf_links_destroy(struct bpf_link **links, size_t n);

#endif
