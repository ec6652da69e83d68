/* SPDX-License-Identifier: MIT */
/*
 * ksym_writer.h - the ksym records of a source's kernel frames: for each
 * kernel function a frame lands in, one record, written straight to the
 * writer (a ksym has no time) before the frame that needs it, so that every
 * reader (a streaming sp-symbolize, another machine) can name the frame.
 * The CPU samples' source (perf_ksyms.c) and the off-CPU source each own
 * one; both read the same per-boot cache (kallsyms_cache.c).
 *
 * The table is this boot's cache, mapped at start, or /proc/kallsyms read
 * by a thread (which writes the cache) while the recording starts. A
 * cached table is exact for vmlinux only: the first frame outside its text
 * (a kernel module, a BPF program) waits for a fresh read, begun in the
 * background by sp_ksym_writer_fresh() when the caller knows one will be
 * needed (-a, an interpreter). A frame whose table is still being read
 * waits for it: a record never depends on a later one.
 */
#ifndef SP_KSYM_WRITER_H
#define SP_KSYM_WRITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hashmap.h"
#include "kallsyms.h"

struct sp_writer;

/* The kernel's half of the address space: an address below it in a
 * kernel callchain is no kernel code (the kernel's unwinder went astray),
 * to be left out, never looked up (it would cost a fresh read for
 * nothing). */
#define SP_KERNEL_START		0xffff800000000000ull

struct sp_ksym_writer {
	bool started;		/* sp_ksym_writer_start() was called */
	pthread_t thread;	/* the first read, when there was no cache */
	bool thread_run;	/* ... and is to be joined */
	struct sp_kallsyms tab;
	int err;		/* errno of the first read, 0 if it worked */
	pthread_t fresh_thread;
	bool fresh_run;		/* the fresh read's thread is to be joined */
	int fresh_done;		/* atomic: the fresh read ended (or none is needed) */
	struct sp_kallsyms fresh;
	int fresh_err;
	uint64_t missing;	/* kernel frame addresses no table could name */
	struct sp_u64map written;	/* symbol address -> 1; a missing frame's -> 2 */
	bool warned;
};

/* Map the cache, or begin the first read on a thread; fresh_now: also
 * begin the fresh read of module and BPF symbols at once (-a). */
void sp_ksym_writer_start(struct sp_ksym_writer *k, bool fresh_now);
/* Begin the fresh read in the background, if the table is the cache's and
 * the read is not done or under way. */
void sp_ksym_writer_fresh(struct sp_ksym_writer *k);
/* Whether the kernel has modules loaded (/proc/modules not empty): their
 * frames need the fresh read. */
bool sp_kernel_has_modules(void);
/* Write the ksym record of the function holding addr, if not yet written;
 * an address no table names is counted once (k->missing). */
void sp_ksym_writer_put(struct sp_ksym_writer *k, struct sp_writer *w, uint64_t addr);
/* At the end: one warning when kernel frames went without a symbol; what
 * names whose frames they are ("samples", "off-CPU waits"). */
void sp_ksym_writer_finish(struct sp_ksym_writer *k, const char *what);
void sp_ksym_writer_release(struct sp_ksym_writer *k);

#endif
