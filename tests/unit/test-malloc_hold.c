// SPDX-License-Identifier: MIT
/*
 * Unit tests of the memory held while sp-record starts (lib/record/
 * malloc_hold.c): while held, a large block freed is there for the next
 * allocation, whose pages are not faulted in again; once let go, the
 * freed memory is back with the kernel and large blocks are mapped apart
 * again. Page faults are counted (getrusage), resident pages read from
 * /proc/self/statm: counts, not times.
 */
#include <stdlib.h>	/* first: it says whether this is glibc */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "malloc_hold.h"
#include "tap.h"

#define MIB	(1024 * 1024)

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static long resident_bytes(void)
{
	long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = 0;
	if (f)
		fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

/* A block touched whole, as a parse fills what it reads. */
static char *touched(size_t size)
{
	char *p = malloc(size);

	if (p)
		memset(p, 0x5a, size);
	__asm__ volatile("" : : "r"(p) : "memory");	/* kept: freed unread */
	return p;
}

/* Two 6 MiB blocks one after the other (a BTF parse's, freed between two
 * BPF objects' loads): the second faults in almost nothing (1,536 pages
 * without the hold). */
static void test_freed_block_reused(void)
{
	char *p;
	long before;

	sp_malloc_hold_begin();
	p = touched(6 * MIB);
	CHECK(p);
	free(p);
	before = minor_faults();
	p = touched(6 * MIB);
	CHECK(p);
	CHECK(minor_faults() - before < 64);
	free(p);
}

/* What the hold kept goes back to the kernel when it ends, and a block
 * above the threshold after it is mapped apart (given back at free). */
static void test_end_gives_back(void)
{
	long held, after;
	char *p;
#ifdef __GLIBC__
	struct mallinfo2 mi;
#endif

	p = touched(20 * MIB);	/* held: from the heap, kept when freed */
	CHECK(p);
	free(p);
	held = resident_bytes();
	sp_malloc_hold_end();
	after = resident_bytes();
	CHECK(held - after >= 16 * MIB);
#ifdef __GLIBC__
	p = touched(12 * MIB);
	mi = mallinfo2();
	CHECK(mi.hblkhd >= 12 * MIB);	/* mapped apart */
	free(p);
#endif
}

int main(void)
{
#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__)
	(void)test_freed_block_reused;
	(void)test_end_gives_back;
#endif
#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__)
	TAP_SKIP(test_freed_block_reused, "needs glibc's malloc (the sanitizers replace it)");
	TAP_SKIP(test_end_gives_back, "needs glibc's malloc (the sanitizers replace it)");
#else
	TAP_RUN(test_freed_block_reused);	/* first: malloc's sizes untouched */
	TAP_RUN(test_end_gives_back);
#endif
	return TAP_DONE();
}
