/* SPDX-License-Identifier: MIT */
/*
 * perf_queue.h - the records of a source's perf rings, handled in time
 * order: the one drain and sort loop of the perf and off-CPU sources.
 *
 * Each ring (one per CPU, or per event) is in time order, but the rings are
 * not in order among themselves: a thread's records may sit in several. On
 * each pass the source drains every ring into one queue (read() is called
 * for each record while it is still in the ring, and pushes what it keeps),
 * then handles the queued items in time order up to the moment its previous
 * pass began: after a pass that started at time T, every record stamped
 * before T has been seen (records are written at the moment they are
 * stamped, with interrupts off), so the next pass can handle everything up
 * to T. Items of equal time are handled in the order they were pushed.
 *
 * An item is a caller's struct that begins with struct sp_perf_qitem; the
 * queue copies it in and moves it around, the caller owns what it points to
 * (handle() and drop() free that).
 */
#ifndef STACKPULSE_RECORD_PERF_QUEUE_H
#define STACKPULSE_RECORD_PERF_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "perf_ring.h"

/* The head of every queued item. */
struct sp_perf_qitem {
	uint64_t time;		/* the record's time stamp */
	uint64_t seq;		/* set by sp_perf_queue_push(): order of arrival */
};

/* A record in a ring, valid for the call only (perf_ring.h). */
typedef void (*sp_perf_read_fn)(void *ctx, const struct perf_event_header *h);
/* An item, in time order; its turn has come (handle) or the queue is
 * released with it (drop). */
typedef void (*sp_perf_item_fn)(void *ctx, void *item);

struct sp_perf_queue {
	size_t item_size;
	uint8_t *items;
	size_t n, cap;
	uint64_t seq;
	uint64_t bound;		/* everything stamped up to here is handled */
	uint64_t last_pass;	/* when the previous pass over the rings began */
	uint64_t bad;		/* records the rings skipped as malformed */
	sp_perf_read_fn read;
	sp_perf_item_fn handle;
	void *ctx;
};

/* An empty queue of items of item_size bytes (at least a struct
 * sp_perf_qitem); bound and last_pass are 0 until the caller sets them. */
void sp_perf_queue_init(struct sp_perf_queue *q, size_t item_size, sp_perf_read_fn read,
			sp_perf_item_fn handle, void *ctx);
/* drop() on every item still queued (NULL: nothing to free), then free. */
void sp_perf_queue_release(struct sp_perf_queue *q, sp_perf_item_fn drop);

/* Room for one more item stamped time, to be filled by the caller past its
 * head. Valid until the next push or pass. */
void *sp_perf_queue_push(struct sp_perf_queue *q, uint64_t time);

/*
 * One pass: clear the readiness of epfd (the rings are read either way),
 * drain the n rings, then handle every item stamped up to the start of
 * the previous pass. Returns how many were handled.
 */
size_t sp_perf_queue_poll(struct sp_perf_queue *q, int epfd, struct sp_perf_ring *rings,
			  size_t n);
/* The last pass, once the events are disabled: drain the rings and handle
 * every item left. Returns how many were handled. */
size_t sp_perf_queue_finish(struct sp_perf_queue *q, struct sp_perf_ring *rings, size_t n);

#endif
