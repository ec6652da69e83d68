/* SPDX-License-Identifier: MIT */
/*
 * span_rings.h - sp-record's side of the runtime hooks' span rings
 * (struct sp_ring, bpf/spans.h): which rings there are, what of each has
 * been delivered, reading them from the processes' memory.
 *
 * A ring's entries reach sp-record two ways: sp_span_rings_poll() reads
 * them from the process's memory and writes back how far it has read (the
 * thread waits for room when its ring is full); at the thread's end, exec
 * or exit, BPF copies what is unread into SP_BS_CHUNK records. Entries are
 * numbered; each is delivered once, in order per ring, whichever way comes
 * first.
 */
#ifndef SP_SPAN_RINGS_H
#define SP_SPAN_RINGS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "spans.h"

/* One entry of thread tid of process pid, in order. Nonzero stops. */
typedef int (*sp_span_ring_put_fn)(void *ctx, uint32_t pid, uint32_t tid,
				   const struct sp_ring_entry *e);

struct sp_span_ring;

struct sp_span_rings {
	struct sp_span_ring **r;
	size_t n, cap;
	struct sp_u64map by_tid;	/* tid -> index + 1 */
	struct sp_ring_entry *buf;	/* SP_RING_CAP entries read by a poll */
	uint64_t polled_ns;		/* the last poll */
	uint64_t since;			/* marks before this time (before the recording,
					 * in an attached process's ring) are skipped */
	uint64_t released;		/* the caller's output is written up to here:
					 * older marks (of a ring found late) are
					 * counted in late */
	/* what went wrong, for the statistics */
	uint64_t dups;			/* entries delivered both ways: dropped once */
	uint64_t gaps;			/* chunks after a missing one (records lost) */
	uint64_t lost;			/* entries overwritten before they were read
					 * (the thread gave up waiting for us) */
	uint64_t reading;		/* rings told they are read */
	uint64_t late;			/* marks older than released (out of order) */
	uint64_t unended;		/* rings whose last chunk never came */
	uint64_t faults;		/* rings BPF could not read at an exit */
	uint64_t bad;			/* entries or rings that make no sense */
};

void sp_span_rings_init(struct sp_span_rings *rs);
void sp_span_rings_release(struct sp_span_rings *rs);

/* Thread tid of pid announced its ring at addr at time (its rt__ring):
 * a new ring, or one started again (a fork child's, a new thread's); or,
 * again, a ring it has had for a while (known from then on, if it was not:
 * an attached process's). */
void sp_span_rings_add(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
		       uint64_t time, bool again);

/*
 * An SP_BS_CHUNK record: n entries numbered from first of the ring at addr
 * of tid, copied at time; flags SP_BSF_LAST (the ring is gone after them)
 * or SP_BSF_FAULT (BPF could not read them).
 */
int sp_span_rings_chunk(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t first, uint32_t n, uint32_t flags, uint64_t time,
			const struct sp_ring_entry *e, sp_span_ring_put_fn put, void *ctx);

/*
 * Read each ring from its process's memory (process_vm_readv), tell the
 * thread how far (process_vm_writev) and deliver what is new; at most once
 * per millisecond unless woken. A ring whose process cannot be read any
 * more is dropped at the next poll: what BPF copied at its end has been
 * read by then.
 */
int sp_span_rings_poll(struct sp_span_rings *rs, uint64_t now, sp_span_ring_put_fn put,
		       void *ctx);

/* A thread's ring at addr is half unread (SP_BS_RING_WAKE): the next poll
 * reads. A ring not known yet (announced before the recording: an attached
 * process) is read from what it still holds on. */
void sp_span_rings_wake(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t time);

/* The recording ends: tell every ring's thread not to wait for us. */
void sp_span_rings_leave(struct sp_span_rings *rs);

/* Every entry stamped before this has been delivered, or will never be
 * (UINT64_MAX without rings). */
uint64_t sp_span_rings_watermark(const struct sp_span_rings *rs);

#endif
