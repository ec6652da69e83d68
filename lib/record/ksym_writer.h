/* SPDX-License-Identifier: MIT */
/*
 * ksym_writer.h - the ksym records of a source's kernel frames: for each
 * kernel function a frame lands in, one record, written straight to the
 * writer (a ksym has no time) before the frame that needs it, so that every
 * reader (a streaming sp-symbolize, another machine) can name the frame.
 * The CPU samples' source (perf_ksyms.c) and the off-CPU source each own
 * one; both read the same per-boot cache (kallsyms_cache.c), and share a
 * read of /proc/kallsyms (struct sp_ksym_read).
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

/*
 * A read of /proc/kallsyms on a thread, shared by the writers of a
 * recording (-a --off-cpu's two sources need the same table: one read,
 * some 80 ms of CPU, not two). The first read of a boot goes through the
 * cache (and writes it); a fresh one is for module and BPF symbols.
 */
struct sp_ksym_read {
	pthread_t thread;
	bool thread_run;	/* the thread is to be joined */
	bool first;		/* the first read of the boot, through the cache */
	unsigned int users;	/* writers holding it */
	int err;		/* errno of the read, 0 if it worked (once joined) */
	struct sp_kallsyms tab;
};

struct sp_ksym_writer {
	bool started;		/* sp_ksym_writer_start() was called */
	struct sp_kallsyms tab;	/* the cache, mapped */
	struct sp_ksym_read *first;	/* the table, when there was no cache */
	int err;		/* errno of the first read, 0 if it worked */
	struct sp_ksym_read *fresh;	/* the fresh read, begun */
	bool fresh_ok;		/* ... ended with addresses: it names every frame */
	int fresh_err;		/* ... or failed (EPERM: it showed no addresses) */
	uint64_t missing;	/* kernel frame addresses no table could name */
	struct sp_u64map written;	/* symbol address -> 1; a missing frame's -> 2 */
	bool warned;
};

/* The calls on writers (and so on their shared reads) come from one
 * thread: the recording's loop. */

/* Map the cache, or begin the first read on a thread; fresh_now: also
 * begin the fresh read of module and BPF symbols at once (-a). */
void sp_ksym_writer_start(struct sp_ksym_writer *k, bool fresh_now);
/* Begin the fresh read in the background (or share another writer's), if
 * the table is the cache's and the read is not done or under way. */
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
