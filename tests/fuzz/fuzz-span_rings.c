// SPDX-License-Identifier: MIT
/*
 * Fuzz sp-record's reader of the runtime hooks' span rings
 * (lib/record/span_rings.c): the rings are memory of the traced processes, which
 * may scribble on them, and the chunks BPF copies of them. The input is a
 * program of operations on a ring in this process, written by the hooks'
 * own writer (runtime/hook/ring.c): marks, reads, chunks as BPF copies
 * them at a thread's end (any range), a thread starting its ring again,
 * and writes of any bytes over the ring's head. Nothing may crash, hang or
 * grow without bound; until the head is scribbled on, every mark is
 * delivered at most once and in order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/hook/ring.c"
#include "record/span_rings.h"

static int64_t last_line;
static bool scribbled;
static uint64_t delivered;

static int put(void *ctx, uint32_t pid, uint32_t tid, const struct sp_ring_entry *e)
{
	(void)ctx;
	(void)pid;
	(void)tid;
	if (!scribbled && e->line <= last_line)
		abort();	/* twice, or out of order */
	last_line = e->line;
	delivered++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_span_rings rs;
	struct sp_ring *r;
	uint64_t t = 1000000000ull, from, to;
	int line = 0;
	size_t i = 0;

	if (!sp_rt_ring_on) {
		setenv("STACKPULSE_SPAN_RING", "1", 1);
		sp_rt_ring_init();
	}
	sp_rt_ring_cur = NULL;
	r = sp_rt_ring_start();
	if (!r)
		return 0;
	r->h.reader = SP_RING_LEFT;	/* the writer never waits here */
	last_line = 0;
	scribbled = false;
	delivered = 0;
	sp_span_rings_init(&rs);
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t, false);
	while (i < size) {
		uint8_t op = data[i++], arg = i < size ? data[i++] : 0;
		unsigned int k;

		switch (op % 7) {
		case 0:		/* marks */
			for (k = 0; k < 64u * arg + 1; k++)
				sp_rt_ring_put(SP_PR_RB_HOOK_CALL, "C", "m", "f", ++line);
			r->h.reader = r->h.reader == SP_RING_READING ? SP_RING_LEFT : r->h.reader;
			break;
		case 1:		/* a read */
			t += 2000000;
			if (sp_span_rings_poll(&rs, t, put, NULL))
				abort();
			r->h.reader = SP_RING_LEFT;
			break;
		case 2:		/* chunks of [from, to), as BPF sends them */
			to = r->h.head - (arg % 8) * 37;
			from = to - (uint64_t)arg * 41;
			if (to > r->h.head || from > to || to - from > SP_RING_CAP)
				break;
			if (r->h.head > SP_RING_CAP && from < r->h.head - SP_RING_CAP)
				from = r->h.head - SP_RING_CAP;	/* BPF copies what the ring holds */
			while (from < to) {
				uint64_t end = (from / SP_RING_CHUNK + 1) * SP_RING_CHUNK;

				if (end > to)
					end = to;
				if (sp_span_rings_chunk(&rs, r->h.pid, r->h.tid, (uintptr_t)r, from,
							(uint32_t)(end - from), end == to && (arg & 1) ?
							SP_BSF_LAST : 0, t, &r->e[from % SP_RING_CAP],
							put, NULL))
					abort();
				from = end;
			}
			if (arg & 1)
				scribbled = true;	/* a ring known again after its end */
			break;
		case 3:		/* the thread's ring announced: anew, or again */
			sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t, arg & 1);
			if (r->h.head && !(arg & 1))
				scribbled = true;	/* numbers start over, as after a fork */
			break;
		case 4:		/* bytes over the head */
			if (i + 8 <= size) {
				memcpy((char *)&r->h + arg % (sizeof(r->h) - 7), data + i, 8);
				i += 8;
				scribbled = true;
			}
			break;
		case 5:
			if (arg & 1)	/* found again by a wake */
				sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t);
			else
				sp_span_rings_wake(&rs, 0, 0, 0, 0);
			break;
		case 6:		/* a chunk of any numbers, any count */
			if (i + 8 <= size) {
				memcpy(&from, data + i, 8);
				i += 8;
				scribbled = true;
				if (sp_span_rings_chunk(&rs, r->h.pid, (arg & 2) ? r->h.tid + 1 : r->h.tid,
							(uintptr_t)r, from, arg, 0, t, r->e, put, NULL))
					abort();
			}
			break;
		}
		if (rs.n > i)
			abort();	/* a ring at most per operation (each names one) */
		if (r->h.head > 1u << 22)
			break;		/* enough marks */
	}
	sp_span_rings_leave(&rs);
	sp_span_rings_release(&rs);
	pthread_setspecific(key, NULL);
	sp_rt_ring_cur = NULL;
	free(r);
	return 0;
}
