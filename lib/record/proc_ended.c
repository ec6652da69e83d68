// SPDX-License-Identifier: MIT
/*
 * The processes whose record was written and that ended (proc_ended.h),
 * so that a late sample of one does not give it a second record.
 */
#include <stdlib.h>

#include "proc_ended.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Half of the entries, the earliest ends, go when the map is full. */
static void trim(struct sp_proc_ended *e)
{
	uint64_t k, v, *ends, mid;
	size_t it, n = 0, i;

	ends = malloc(e->end.n * sizeof(*ends));
	if (!ends) {
		sp_u64map_release(&e->end);
		sp_u64map_release(&e->start);
		return;
	}
	for (it = 0; sp_u64map_next(&e->end, &it, &k, &v);)
		ends[n++] = v;
	qsort(ends, n, sizeof(*ends), cmp_u64);
	mid = n ? ends[n / 2 ? n / 2 - 1 : 0] : 0;
	n = 0;
	for (it = 0; sp_u64map_next(&e->end, &it, &k, &v);)
		if (v <= mid)
			ends[n++] = k;
	for (i = 0; i < n; i++) {
		sp_u64map_del(&e->end, ends[i]);
		sp_u64map_del(&e->start, ends[i]);
	}
	free(ends);
}

void sp_proc_ended_note(struct sp_proc_ended *e, uint32_t pid, uint64_t end,
			uint64_t start_boot_ns)
{
	unsigned int max = e->max ? e->max : SP_PROC_ENDED_MAX;

	if (!sp_u64map_get(&e->end, pid) && e->end.n >= max)
		trim(e);
	sp_u64map_put(&e->end, pid, end);
	sp_u64map_put(&e->start, pid, start_boot_ns);
}

void sp_proc_ended_forget(struct sp_proc_ended *e, uint32_t pid)
{
	sp_u64map_del(&e->end, pid);
	sp_u64map_del(&e->start, pid);
}

bool sp_proc_ended_is(const struct sp_proc_ended *e, uint32_t pid, uint64_t time,
		      uint64_t start_boot_ns)
{
	const uint64_t *end = sp_u64map_get(&e->end, pid), *start;

	if (!end)
		return false;
	if (time <= *end)
		return true;
	if (!start_boot_ns)
		return time - *end <= SP_PROC_ENDED_TAIL_NS;
	start = sp_u64map_get(&e->start, pid);
	return start_boot_ns && start && *start == start_boot_ns;
}

void sp_proc_ended_release(struct sp_proc_ended *e)
{
	sp_u64map_release(&e->end);
	sp_u64map_release(&e->start);
}
