// SPDX-License-Identifier: MIT
/*
 * gen-decode - write a synthetic recording through the spool writer, the
 * way sp-record does: SAMPLES samples (default 1M) over STACKS distinct
 * stacks (default 5000) of depth 10 to 60, on 4 threads of one process.
 * Stacks are paths in a random call tree (so callers are shared: most
 * stacks differ only in their last frames), over ~2500 functions in four
 * modules (the program, libc, a shared library and the kernel, whose frames
 * end about a quarter of the stacks). Which stack a sample hits follows a
 * Zipf-like law, as on a real profile, and a frame and its stack prefix are
 * interned when a sample first needs them.
 *
 * Usage: gen-decode OUT.sp [SAMPLES [STACKS [SEED]]]
 * Prints the CPU nanoseconds spent writing (interning and sp_writer_put, not
 * the random draws) on stdout.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "writer.h"

#define NFUNCS 2500
#define NMODS 4
#define MAXDEPTH 60
#define NTHREADS 4

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct node {
	uint32_t func;		/* index into funcs */
	uint32_t parent;	/* node index, 0 = root */
	uint32_t child;		/* first child */
	uint32_t sibling;
	uint32_t nchild;
	uint8_t depth;
};

static struct node *nodes;
static uint32_t nnodes = 1;	/* node 0 is the root (no frame) */

static const struct {
	const char *path;
	uint64_t start, size;
	bool kernel;
} mods[NMODS] = {
	{ "/usr/bin/app", 0x55d0c0000000, 0x400000, false },
	{ "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f3a10000000, 0x1c0000, false },
	{ "/usr/lib/x86_64-linux-gnu/libssl.so.3", 0x7f3a20000000, 0x90000, false },
	{ "[kernel.kallsyms]", 0xffffffff81000000, 0x2000000, true },
};

static struct {
	int mod;
	uint64_t rel;
} funcs[NFUNCS];

/* A function for a new call at this depth: kernel ones only at the leaf end. */
static uint32_t pick_func(bool kernel_tail)
{
	uint64_t r = rnd();

	if (kernel_tail)
		return NFUNCS - 1 - (uint32_t)(r % 300);	/* the kernel's 300 */
	return (uint32_t)(r % (NFUNCS - 300));
}

static uint32_t child_of(uint32_t n, uint32_t func, unsigned int depth)
{
	uint32_t c;

	for (c = nodes[n].child; c; c = nodes[c].sibling)
		if (nodes[c].func == func)
			return c;
	c = nnodes++;
	nodes[c].func = func;
	nodes[c].parent = n;
	nodes[c].sibling = nodes[n].child;
	nodes[c].depth = (uint8_t)depth;
	nodes[n].child = c;
	nodes[n].nchild++;
	return c;
}

/* The k-th child of n (in list order). */
static uint32_t nth_child(uint32_t n, uint32_t k)
{
	uint32_t c = nodes[n].child;

	while (k-- && c)
		c = nodes[c].sibling;
	return c;
}

/* One new path from the root: follow existing calls most of the time. */
static uint32_t new_leaf(void)
{
	unsigned int depth = 10 + rnd() % (MAXDEPTH - 10 + 1), d;
	unsigned int kernel_from = rnd() % 4 == 0 ? depth - 3 - rnd() % 6 : depth + 1;
	uint32_t n = 0;

	for (d = 1; d <= depth; d++) {
		bool kernel = d >= kernel_from;

		/* Few callers at the top, more variety deeper down. */
		if (!kernel && nodes[n].nchild && rnd() % 100 < (d < 8 ? 97u : 85u)) {
			uint32_t c = nth_child(n, (uint32_t)(rnd() % nodes[n].nchild));

			if (funcs[nodes[c].func].mod != 3) {
				n = c;
				continue;
			}
		}
		n = child_of(n, pick_func(kernel), d);
	}
	return n;
}

int main(int argc, char **argv)
{
	uint64_t nsamples = argc > 2 ? strtoull(argv[2], NULL, 0) : 1000000;
	uint32_t nstacks = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : 5000;
	uint32_t *leaves, *pick, i, j;
	uint64_t *stack_of, mod_id[NMODS], *frame_of, s, t, start_ns = 1000000000000ull;
	uint64_t path[MAXDEPTH + 1];
	struct sp_writer *w;
	struct sp_record r;
	struct timespec t0, t1;
	double *cdf, sum = 0;
	int fd;

	rng = argc > 4 ? strtoull(argv[4], NULL, 0) : 0x9e3779b97f4a7c15ull;
	if (argc < 2 || !nsamples || !nstacks) {
		fprintf(stderr, "usage: gen-decode OUT.sp [SAMPLES [STACKS [SEED]]]\n");
		return 64;
	}
	for (i = 0; i < NFUNCS; i++) {
		funcs[i].mod = i >= NFUNCS - 300 ? 3 : (int)(i % 3);
		funcs[i].rel = 0x1000 + (rnd() % (mods[funcs[i].mod].size - 0x2000)) / 16 * 16;
	}
	nodes = calloc((size_t)nstacks * (MAXDEPTH + 1) + 1, sizeof(*nodes));
	leaves = calloc(nstacks, sizeof(*leaves));
	stack_of = calloc((size_t)nstacks * (MAXDEPTH + 1) + 1, sizeof(*stack_of));
	frame_of = calloc(NFUNCS, sizeof(*frame_of));
	/* Distinct leaves: a path that ends where another did is drawn again. */
	for (i = 0; i < nstacks; i++) {
		uint32_t n;

		do {
			n = new_leaf();
		} while (stack_of[n]);
		stack_of[n] = 1;
		leaves[i] = n;
	}
	memset(stack_of, 0, ((size_t)nstacks * (MAXDEPTH + 1) + 1) * sizeof(*stack_of));
	/* Zipf-like popularity (s = 1.1), and the sample sequence drawn ahead. */
	cdf = malloc(nstacks * sizeof(*cdf));
	for (i = 0; i < nstacks; i++)
		cdf[i] = sum += 1.0 / pow(i + 1, 1.1);
	pick = malloc(nsamples * sizeof(*pick));
	for (s = 0; s < nsamples; s++) {
		double u = (double)(rnd() >> 11) / 9007199254740992.0 * sum;
		uint32_t lo = 0, hi = nstacks - 1;

		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		pick[s] = leaves[lo];
	}

	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	w = sp_writer_new(fd, argv[1], SP_FORMAT_SPOOL);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_HEADER;
	r.header.version = 1;
	r.header.clock = SP_CLOCK_MONOTONIC;
	r.header.start_mono_ns = start_ns;
	r.header.start_wall_ns = 1764669000000000000ull;
	r.header.sample_freq = 999;
	r.header.call_graph = SP_CG_FP;
	r.header.event.p = (const uint8_t *)"cpu-clock";
	r.header.event.len = 9;
	sp_writer_put(w, &r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_PROCESS;
	r.process.time = start_ns;
	r.process.pid = 4242;
	r.process.ppid = 1;
	r.process.comm = sp_writer_strz(w, "app");
	r.process.exe = sp_writer_strz(w, mods[0].path);
	sp_writer_put(w, &r);
	for (i = 0; i < NTHREADS; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_THREAD;
		r.thread.time = start_ns;
		r.thread.tid = 4242 + i;
		r.thread.pid = 4242;
		r.thread.name = sp_writer_strz(w, i ? "worker" : "app");
		sp_writer_put(w, &r);
	}
	for (i = 0; i < NMODS; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_MODULE;
		r.module.time = start_ns;
		r.module.pid = mods[i].kernel ? 0 : 4242;
		r.module.start = mods[i].start;
		r.module.end = mods[i].start + mods[i].size;
		r.module.path = sp_writer_strz(w, mods[i].path);
		r.module.build_id.p = (const uint8_t *)"0123456789abcdefghij";
		r.module.build_id.len = mods[i].kernel ? 0 : 20;
		r.module.flags = mods[i].kernel ? SP_MOD_KERNEL : 0;
		sp_writer_put(w, &r);
		mod_id[i] = sp_defs_nmodules(sp_writer_defs(w));
	}
	t = start_ns;
	for (s = 0; s < nsamples; s++) {
		uint32_t leaf = pick[s], n;
		unsigned int depth = 0;

		t += 250000 + rnd() % 1000;	/* 4 threads at ~999 Hz */
		if (!stack_of[leaf]) {
			for (n = leaf; n; n = nodes[n].parent)
				depth++;
			for (n = leaf, j = depth; n; n = nodes[n].parent) {
				uint32_t f = nodes[n].func;

				if (!frame_of[f]) {
					struct sp_frame fr = { 0 };

					fr.module = mod_id[funcs[f].mod];
					fr.rel = funcs[f].rel;
					fr.addr = mods[funcs[f].mod].start + funcs[f].rel;
					fr.mode = funcs[f].mod == 3 ? SP_FRAME_KERNEL : SP_FRAME_USER;
					frame_of[f] = sp_writer_frame(w, &fr);
				}
				path[--j] = frame_of[f];
			}
			stack_of[leaf] = sp_writer_stack_path(w, path, depth);
		}
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_SAMPLE;
		r.sample.time = t;
		r.sample.pid = 4242;
		r.sample.tid = 4242 + s % NTHREADS;
		r.sample.cpu = (s % NTHREADS) % 2;
		r.sample.stack = stack_of[leaf];
		r.sample.weight = 1;
		sp_writer_put(w, &r);
	}
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_END;
	r.end.time = t + 1;
	r.end.samples = nsamples;
	sp_writer_put(w, &r);
	if (sp_writer_close(w))
		return 2;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	close(fd);
	printf("%llu\n", (unsigned long long)((t1.tv_sec - t0.tv_sec) * 1000000000ull +
					     t1.tv_nsec - t0.tv_nsec));
	return 0;
}
