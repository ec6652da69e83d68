// SPDX-License-Identifier: MIT
/*
 * Fuzz the perf ring reader and the record decoders: the input's first 8
 * bytes choose the ring's start offset and a sample_type, the rest is the
 * ring's content (as the kernel would have written it, or not). Every record
 * next() returns must lie inside the ring's bytes, and decoding it as a
 * sample or as a sample_id trailer must stay inside the record; a sample's
 * copy with its stack cut (sp_perf_record_dup) is never larger and decodes
 * to the same fields. Nothing may crash, hang or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perf_ring.h"

#define RING 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t types[] = {
		PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
		PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
			PERF_SAMPLE_STACK_USER,
		PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_ID | PERF_SAMPLE_CPU,
	};
	struct perf_event_mmap_page *meta;
	const struct perf_event_header *h;
	struct sp_perf_sample s, d;
	struct perf_event_header *c;
	struct sp_perf_id id;
	struct sp_perf_ring r;
	uint8_t *ring;
	uint64_t st, start, n, t;

	if (size < 8)
		return 0;
	start = data[0] | (uint64_t)data[1] << 8;
	st = types[data[2] % 3];
	data += 8;
	size -= 8;
	n = size < RING ? size : RING;
	meta = calloc(1, sizeof(*meta));
	ring = calloc(1, RING);
	/* The content written from 'start' on, wrapping around. */
	for (uint64_t i = 0; i < n; i++)
		ring[(start + i) % RING] = data[i];
	meta->data_tail = start;
	meta->data_head = start + n;
	sp_perf_ring_init(&r, meta, ring, RING);
	sp_perf_ring_begin(&r);
	while ((h = sp_perf_ring_next(&r))) {
		if (h->size < sizeof(*h) || h->size > n)
			abort();
		if (sp_perf_parse_sample(h, st, 17, &s) == 0) {
			if (s.nr && (const uint8_t *)(s.ips + s.nr) > (const uint8_t *)h + h->size)
				abort();
			if (s.stack && s.stack + s.stack_size > (const uint8_t *)h + h->size)
				abort();
		}
		c = sp_perf_record_dup(h, st, 17, &t);
		if (c->size > h->size || c->type != h->type)
			abort();
		if (h->type == PERF_RECORD_SAMPLE && sp_perf_parse_sample(h, st, 17, &s) == 0 &&
		    (sp_perf_parse_sample(c, st, 17, &d) || d.tid != s.tid || d.time != s.time ||
		     d.nr != s.nr || d.stack_dyn_size != s.stack_dyn_size ||
		     (s.stack_dyn_size && memcmp(d.stack, s.stack, s.stack_dyn_size)) ||
		     t != s.time))
			abort();
		free(c);
		sp_perf_parse_id(h, st, &id);
	}
	sp_perf_ring_end(&r);
	/* Never past what was written (a partial header stays unread). */
	if (meta->data_tail - start > n || meta->data_head - meta->data_tail >= 8)
		abort();
	free(r.copy);
	free(ring);
	free(meta);
	return 0;
}
