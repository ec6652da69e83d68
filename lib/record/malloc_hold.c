// SPDX-License-Identifier: MIT
/* Freed memory kept while sp-record starts (malloc_hold.h). */
#include <stdlib.h>	/* first: it says whether this is glibc */
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "malloc_hold.h"

/* While held: blocks below 32 MiB come from the heap, and a free heap top
 * is kept up to 512 MiB (a start peaks near 60 MB). */
#define HOLD_MMAP_MAX	(32 << 20)
#define HOLD_TRIM_MAX	(512 << 20)
/* After: where glibc's own adaptive sizes would be once a BTF block has
 * been freed (its threshold rises to the largest block freed, the trim
 * threshold to twice that), fixed, as mallopt leaves them. */
#define AFTER_MMAP_MAX	(8 << 20)
#define AFTER_TRIM_MAX	(16 << 20)

void sp_malloc_hold_begin(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, HOLD_MMAP_MAX);
	mallopt(M_TRIM_THRESHOLD, HOLD_TRIM_MAX);
#endif
}

void sp_malloc_hold_end(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, AFTER_MMAP_MAX);
	mallopt(M_TRIM_THRESHOLD, AFTER_TRIM_MAX);
	malloc_trim(0);
#endif
}
