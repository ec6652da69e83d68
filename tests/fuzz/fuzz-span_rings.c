// SPDX-License-Identifier: MIT
/*
 * Fuzz sp-record's reader of the runtime hooks' span rings
 * (lib/record/span_rings.c): the rings are memory of the traced processes, which
 * may scribble on them, and the chunks BPF copies of them. The input is a
 * program of operations on a ring in this process, written by the hooks'
 * own writer (runtime/hook/ring.c): marks, reads, chunks as BPF copies
 * them at a thread's end (any range), a thread starting its ring again,
 * and, as a hostile process would: writes of any bytes over the ring's
 * head, heads and 'consumed' set to any number, marks stamped at any time,
 * claims of other readers, entries made unreadable (mprotect) during a
 * read. Nothing may crash, hang or grow without bound; until the head is
 * scribbled on, every mark is delivered at most once and in order; the
 * marks counted lost stay within what a thread can write in the time the
 * input spans (no wrapped numbers); and no ring holds the watermark back
 * for more than one poll after it stops making sense.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "../../runtime/hook/ring.c"
#include "sp.h"
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

/* The ring's pages past the one of its head (entries the hostile side
 * makes unreadable). */
static void protect(struct sp_ring *r, int prot)
{
	size_t len = (sizeof(*r) + 4095) / 4096 * 4096 - 4096;

	if (mprotect((char *)r + 4096, len, prot))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_span_rings rs;
	struct sp_ring *r;
	uint64_t t = 1000000000ull, t0 = t, from, to, v, polled = 0;
	unsigned int in_row = 0;
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
	if ((uintptr_t)r % 4096)
		abort();	/* the hook's rings are page-aligned */
	r->h.reader = SP_RING_LEFT;	/* the writer never waits here */
	last_line = 0;
	scribbled = false;
	delivered = 0;
	sp_span_rings_init(&rs);
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t, false, 0, 0);
	while (i < size) {
		uint8_t op = data[i++], arg = i < size ? data[i++] : 0;
		unsigned int k;

		if (op % 10 != 1)
			in_row = 0;
		switch (op % 10) {
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
			/* two reads in a row: no ring holds the output back
			 * from before the first (one that stopped making
			 * sense is dropped or given up by the second) */
			if (++in_row >= 2 && sp_span_rings_watermark(&rs) < polled)
				abort();
			polled = t;
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
							SP_BSF_LAST : 0, t, 0, &r->e[from % SP_RING_CAP],
							put, NULL))
					abort();
				from = end;
			}
			if (arg & 1)
				scribbled = true;	/* a ring known again after its end */
			break;
		case 3:		/* the thread's ring announced: anew, or again; on the
				 * clock of a time namespace (up to 31 ms either way) */
			sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t, arg & 1, 0,
					  (arg & 2) ? ((int64_t)(arg >> 2) - 32) * 1000000 : 0);
			if ((r->h.head && !(arg & 1)) || (arg & 2))
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
				sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t, 0);
			else
				sp_span_rings_wake(&rs, 0, 0, 0, 0, 0);
			break;
		case 6:		/* a chunk of any numbers, any count */
			if (i + 8 <= size) {
				memcpy(&from, data + i, 8);
				i += 8;
				scribbled = true;
				if (sp_span_rings_chunk(&rs, r->h.pid, (arg & 2) ? r->h.tid + 1 : r->h.tid,
							(uintptr_t)r, from, arg,
							(arg & 4) ? SP_BSF_FAULT : 0, t,
							(arg & 8) ? -1000000000ll : 0, r->e, put, NULL))
					abort();
			}
			break;
		case 7:		/* a number in the head: head, consumed, claim */
			if (i + 8 <= size) {
				memcpy(&v, data + i, 8);
				i += 8;
				scribbled = true;
				if (arg % 3 == 0)
					r->h.head = (arg & 4) ? r->h.head + (v & 0xffff) : v;
				else if (arg % 3 == 1)
					r->h.consumed = v;
				else
					r->h.claim = (arg & 8) ? rs.claim + 1 : v;
			}
			break;
		case 8:		/* a mark stamped at any time */
			if (i + 8 <= size && r->h.head) {
				memcpy(&v, data + i, 8);
				i += 8;
				scribbled = true;
				r->e[(r->h.head - 1 - arg % 64) % SP_RING_CAP].time =
					(arg & 64) ? sp_now_mono_ns() + v % 100000000000ull : v;
			}
			break;
		case 9:		/* a read while the entries cannot be read */
			scribbled = true;
			protect(r, PROT_NONE);
			t += 2000000;
			k = (unsigned int)sp_span_rings_poll(&rs, t, put, NULL);
			protect(r, PROT_READ | PROT_WRITE);
			r->h.reader = SP_RING_LEFT;
			if (k)
				abort();
			break;
		}
		if (rs.n > i)
			abort();	/* a ring at most per operation (each names one) */
		/* what is counted lost: at most a mark per SP_SPAN_RINGS_MARK_NS
		 * of the input's time and a ring per operation, never a
		 * wrapped number */
		if (rs.lost > (t - t0 + 2000000) / SP_SPAN_RINGS_MARK_NS * 2 +
			      (uint64_t)(i + 1) * 2 * SP_RING_CAP + r->h.head)
			abort();
		if (line > 1 << 22)
			break;		/* enough marks */
	}
	sp_span_rings_leave(&rs);
	sp_span_rings_release(&rs);
	pthread_setspecific(key, NULL);
	sp_rt_ring_cur = NULL;
	free(r);
	return 0;
}
