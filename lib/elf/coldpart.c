// SPDX-License-Identifier: MIT
/* coldpart.c - a split function's cold part, from its jumps (coldpart.h). */
#include <stdlib.h>
#include <string.h>

#include "elf/coldpart.h"

#define MAX_RANGES	64	/* distinct ranges counted; the rest ignored */

/* The index of the range of f that holds t strictly inside (not at its
 * start), or -1. */
static long range_of(const struct sp_fstarts *f, uint64_t t)
{
	size_t lo = 0, hi = f->n, mid;

	while (lo < hi) {	/* the first start above t */
		mid = lo + (hi - lo) / 2;
		if (f->at[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || lo == f->n || f->at[lo - 1] == t)
		return -1;	/* before the first, after the last, or a start */
	return (long)lo - 1;
}

int sp_cold_part(const uint8_t *code, size_t len, uint64_t addr, const struct sp_fstarts *f,
		 uint64_t *start, uint64_t *end)
{
	struct { long range; unsigned int hits; } r[MAX_RANGES];
	size_t i, nr = 0, k, best = 0;
	uint64_t t;
	int32_t rel;
	long at;

	if (!f->n || len < 6)
		return -1;
	for (i = 0; i + 5 <= len; i++) {
		if (code[i] == 0xe9) {
			memcpy(&rel, code + i + 1, 4);
			t = addr + i + 5 + (uint64_t)(int64_t)rel;
		} else if (code[i] == 0x0f && i + 6 <= len && (code[i + 1] & 0xf0) == 0x80) {
			memcpy(&rel, code + i + 2, 4);
			t = addr + i + 6 + (uint64_t)(int64_t)rel;
		} else {
			continue;
		}
		if (t >= addr && t < addr + len)
			continue;	/* within the hot part */
		at = range_of(f, t);
		if (at < 0)
			continue;
		for (k = 0; k < nr && r[k].range != at; k++)
			;
		if (k == nr) {
			if (nr == MAX_RANGES)
				continue;
			r[nr].range = at;
			r[nr++].hits = 0;
		}
		r[k].hits++;
	}
	for (k = 1; k < nr; k++)
		if (r[k].hits > r[best].hits)
			best = k;
	if (!nr || r[best].hits < SP_COLD_MIN_JUMPS)
		return -1;
	*start = f->at[r[best].range];
	*end = f->at[r[best].range + 1];
	return 0;
}
