// SPDX-License-Identifier: MIT
/*
 * Time order for perf.data's records (perfdataP.h). perf writes each CPU's
 * ring buffer as it drains it, so a child's first sample can come before
 * the FORK that gives it its parent's mappings. As perf itself does, the
 * records that carry a time are held in a heap (base/heap.h) and given out
 * at each FINISHED_ROUND up to the newest time seen by the round before:
 * perf writes a round only once every ring was drained past that time.
 * Records without a time go out at once. What the heap holds is bounded
 * (PD_MAX_QUEUED bytes); past it the oldest go out early, said once.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "perfdataP.h"
#include "sp.h"

#define PD_MAX_QUEUED (256u << 20)

struct queued {
	uint64_t off;
	uint16_t size;
	uint8_t rec[];
};

/* The time of a record, 0 if it has none. */
static uint64_t rec_time(const struct pd *p, const uint8_t *rec, size_t size)
{
	const struct pd_attr *a;
	size_t at;

	if (pd_u32(rec) != PERF_RECORD_SAMPLE)
		return pd_other_time(p, rec, size);
	a = pd_attr_of_sample(p, rec, size);
	if (!a || !(a->sample_type & PERF_SAMPLE_TIME))
		return 0;
	at = 8 + 8 * (!!(a->sample_type & PERF_SAMPLE_IDENTIFIER) +
		      !!(a->sample_type & PERF_SAMPLE_IP) + !!(a->sample_type & PERF_SAMPLE_TID));
	return at + 8 <= size ? pd_u64(rec + at) : 0;
}

static int give(struct pd *p, struct queued *q)
{
	int r;

	p->rec_off = q->off;
	r = pd_dispatch_kernel(p, q->rec, q->size);
	p->queued_bytes -= q->size;
	free(q);
	return r;
}

/* Give out every held record up to time limit. 0, or -1 on a fatal error. */
int pd_flush(struct pd *p, uint64_t limit)
{
	const struct sp_heap_item *top;

	while ((top = sp_heap_top(&p->queue)) && top->key <= limit) {
		if (give(p, sp_heap_pop(&p->queue)))
			return -1;
	}
	return 0;
}

int pd_round(struct pd *p)
{
	int r = pd_flush(p, p->round_limit);

	p->round_limit = p->max_time;
	return r;
}

int pd_queue(struct pd *p, const uint8_t *rec, size_t size)
{
	uint64_t t = rec_time(p, rec, size);
	struct queued *q;

	if (!t)
		return pd_dispatch_kernel(p, rec, size);
	q = sp_xmalloc(sizeof(*q) + size);
	q->off = p->rec_off;
	q->size = (uint16_t)size;
	memcpy(q->rec, rec, size);
	sp_heap_push(&p->queue, t, p->seq++, q);
	p->queued_bytes += size;
	if (t > p->max_time)
		p->max_time = t;
	while (p->queued_bytes > PD_MAX_QUEUED) {
		if (!p->said_queue)
			sp_warn("%s: more than %u MiB of records between two rounds: "
				"the oldest are read before the rest arrived", p->name,
				PD_MAX_QUEUED >> 20);
		p->said_queue = true;
		if (give(p, sp_heap_pop(&p->queue)))
			return -1;
	}
	return 0;
}

void pd_queue_free(struct pd *p)
{
	while (sp_heap_top(&p->queue))
		free(sp_heap_pop(&p->queue));
	sp_heap_release(&p->queue);
}
