// SPDX-License-Identifier: MIT
/*
 * span_rings.c - the runtime hooks' span rings, read and de-duplicated
 * for sp-record (span_rings.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sp.h"
#include "span_rings.h"

#define POLL_EVERY_NS	1000000ull

struct sp_span_ring {
	uint32_t pid, tid;
	uint64_t addr;
	uint64_t next;		/* number of the next entry to deliver */
	uint64_t good_ns;	/* entries stamped before were delivered */
	bool dead;		/* its process could not be read: drop next time */
	bool ended;		/* its thread's end was seen in its head, but not
				 * its last chunk (lost): drop next time */
	bool late;		/* not read yet: start where its thread says */
};

void sp_span_rings_init(struct sp_span_rings *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void sp_span_rings_release(struct sp_span_rings *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		free(rs->r[i]);
	free(rs->r);
	free(rs->buf);
	sp_u64map_release(&rs->by_tid);
	memset(rs, 0, sizeof(*rs));
}

static struct sp_span_ring *find(const struct sp_span_rings *rs, uint32_t tid)
{
	uint64_t *i = sp_u64map_get(&rs->by_tid, tid);

	return i ? rs->r[*i - 1] : NULL;
}

static void drop(struct sp_span_rings *rs, size_t i)
{
	struct sp_span_ring *r = rs->r[i];

	sp_u64map_del(&rs->by_tid, r->tid);
	free(r);
	rs->r[i] = rs->r[--rs->n];
	if (i < rs->n)
		sp_u64map_put(&rs->by_tid, rs->r[i]->tid, i + 1);
}

static struct sp_span_ring *ring_new(struct sp_span_rings *rs, uint32_t pid, uint32_t tid,
				     uint64_t addr, uint64_t time)
{
	struct sp_span_ring *r = find(rs, tid);

	if (!r) {
		r = sp_xcalloc(1, sizeof(*r));
		sp_grow(&rs->r, &rs->cap, rs->n + 1, sizeof(*rs->r));
		rs->r[rs->n++] = r;
		sp_u64map_put(&rs->by_tid, tid, rs->n);
	}
	r->pid = pid;
	r->tid = tid;
	r->addr = addr;
	r->next = 0;
	r->good_ns = time;
	r->dead = false;
	return r;
}

/* A ring new to us starts where its thread says it was read up to (0 for
 * a new ring; an older one's: what an earlier reader left), or at what it
 * still holds: its past before we knew it is not counted lost. */
static void ring_seen(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
		      uint64_t time)
{
	struct sp_span_ring *r = find(rs, tid);

	if (!r || r->addr != addr || r->pid != pid)
		ring_new(rs, pid, tid, addr, time)->late = true;
}

void sp_span_rings_add(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
		       uint64_t time, bool again)
{
	if (!addr) {
		rs->bad++;
		return;
	}
	if (again)
		ring_seen(rs, pid, tid, addr, time);
	else
		ring_new(rs, pid, tid, addr, time);
}

/* Deliver entries numbered [from, to) of r, e[0] being number base. */
static int deliver(struct sp_span_rings *rs, struct sp_span_ring *r, uint64_t base,
		   uint64_t to, const struct sp_ring_entry *e, sp_span_ring_put_fn put, void *ctx)
{
	uint64_t k;

	if (r->next > base)
		rs->dups += (r->next < to ? r->next : to) - base;
	for (k = r->next > base ? r->next : base; k < to; k++) {
		const struct sp_ring_entry *m = &e[k - base];

		r->next = k + 1;
		if (m->time < rs->since)
			continue;	/* before the recording */
		/* after records it precedes (a ring found late): counted, and
		 * kept, for the merge and sp-correlate's window to place */
		if (m->time < rs->released)
			rs->late++;
		if (put(ctx, r->pid, r->tid, m))
			return -1;
	}
	return 0;
}

int sp_span_rings_chunk(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t first, uint32_t n, uint32_t flags, uint64_t time,
			const struct sp_ring_entry *e, sp_span_ring_put_fn put, void *ctx)
{
	struct sp_span_ring *r = find(rs, tid);
	int ret = 0;


	if (n > SP_RING_CHUNK) {
		rs->bad++;
		n = 0;
	}
	/* a ring not announced (its rt__ring record lost): known from now */
	if (!r || r->addr != addr || r->pid != pid) {
		r = ring_new(rs, pid, tid, addr, time);
		r->next = first;
	}
	if (flags & SP_BSF_FAULT)
		rs->faults++;
	if (r->late) {		/* never read: it starts here */
		r->late = false;
		r->next = first;
	}
	if (first > r->next) {
		rs->gaps++;
		r->next = first;
	}
	if (n)
		ret = deliver(rs, r, first, first + n, e, put, ctx);
	if (flags & SP_BSF_LAST)
		drop(rs, (size_t)(*sp_u64map_get(&rs->by_tid, tid) - 1));
	return ret;
}

static bool read_head(uint32_t pid, uint64_t addr, struct sp_ring_head *h)
{
	struct iovec local = { h, sizeof(*h) }, remote = { (void *)(uintptr_t)addr, sizeof(*h) };

	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(*h);
}

/* Entries [from, to) of the ring at addr into buf (at most a ring). */
static bool read_entries(uint32_t pid, uint64_t addr, uint64_t from, uint64_t to,
			 struct sp_ring_entry *buf)
{
	uint64_t slot = from % SP_RING_CAP, n = to - from, first = SP_RING_CAP - slot;
	uint64_t base = addr + sizeof(struct sp_ring_head);
	struct iovec local = { buf, n * sizeof(*buf) }, remote[2];
	int nr = 1;

	if (first > n)
		first = n;
	remote[0].iov_base = (void *)(uintptr_t)(base + slot * sizeof(*buf));
	remote[0].iov_len = first * sizeof(*buf);
	if (n > first) {
		remote[1].iov_base = (void *)(uintptr_t)base;
		remote[1].iov_len = (n - first) * sizeof(*buf);
		nr = 2;
	}
	return process_vm_readv((pid_t)pid, &local, 1, remote, (unsigned long)nr, 0) ==
	       (ssize_t)local.iov_len;
}

/* Write v at offset off of the ring's head in its process. */
static bool write_head(const struct sp_span_ring *r, size_t off, const void *v, size_t len)
{
	struct iovec local = { (void *)v, len };
	struct iovec remote = { (void *)(uintptr_t)(r->addr + off), len };

	return process_vm_writev((pid_t)r->pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/*
 * What is new in r: the head, the entries up to it, the head again (to be
 * sure none was overwritten meanwhile: the thread overwrites unread entries
 * only when it gave up waiting for us); then tell the thread how far we
 * have read, before the entries are handled, so that it goes on at once.
 */
static int poll_one(struct sp_span_rings *rs, struct sp_span_ring *r, uint64_t now,
		    sp_span_ring_put_fn put, void *ctx)
{
	const uint32_t reading = SP_RING_READING;
	struct sp_ring_head h, again;
	uint64_t head, from, sure;

	if (!read_head(r->pid, r->addr, &h)) {
		r->dead = true;
		return 0;
	}
	if (h.magic != SP_RING_MAGIC || h.tid != r->tid) {
		/* ended, or another thread's now: its last chunk, committed
		 * before, ends it; without one (lost), it goes next time */
		r->ended = true;
		return 0;
	}
	r->ended = false;
	if (h.reader != SP_RING_READING &&
	    write_head(r, offsetof(struct sp_ring_head, reader), &reading, sizeof(reading)))
		rs->reading++;
	head = h.head;
	if (head < r->next)	/* started again at the same address (exec) */
		r->late = true;
	if (r->late) {
		r->late = false;
		r->next = h.consumed <= head && head - h.consumed <= SP_RING_CAP ? h.consumed :
			  head > SP_RING_CAP ? head - SP_RING_CAP : 0;
	}
	if (head <= r->next) {
		r->good_ns = now;
		return 0;
	}
	from = r->next;
	if (head - from > SP_RING_CAP)
		from = head - SP_RING_CAP;	/* overwritten: lost */
	if (!read_entries(r->pid, r->addr, from, head, rs->buf) ||
	    !read_head(r->pid, r->addr, &again))
		return 0;
	if (again.magic != SP_RING_MAGIC || again.tid != r->tid || again.head < head)
		return 0;	/* ended or started again meanwhile: next time */
	/*
	 * Entries the thread overwrote while they were read, when it gave up
	 * waiting: not delivered. A full ring (head a ring ahead of what was
	 * read) is whole: its thread waits before it writes the next entry.
	 * (One that gave up could be writing that entry, unseen, just then.)
	 */
	sure = again.head - from > SP_RING_CAP ? again.head - SP_RING_CAP : from;
	if (sure > head)
		sure = head;
	rs->lost += sure - r->next;
	r->next = sure;
	write_head(r, offsetof(struct sp_ring_head, consumed), &head, sizeof(head));
	r->good_ns = now;
	return deliver(rs, r, sure, head, rs->buf + (sure - from), put, ctx);
}

void sp_span_rings_wake(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t time)
{
	rs->polled_ns = 0;
	if (addr)
		ring_seen(rs, pid, tid, addr, time);
}

void sp_span_rings_leave(struct sp_span_rings *rs)
{
	const uint32_t left = SP_RING_LEFT;
	size_t i;

	for (i = 0; i < rs->n; i++) {
		struct sp_span_ring *r = rs->r[i];
		struct sp_ring_head h;

		/* only where the ring still is this thread's */
		if (!r->dead && read_head(r->pid, r->addr, &h) && h.magic == SP_RING_MAGIC &&
		    h.tid == r->tid && h.pid == r->pid)
			write_head(r, offsetof(struct sp_ring_head, reader), &left, sizeof(left));
	}
}

int sp_span_rings_poll(struct sp_span_rings *rs, uint64_t now, sp_span_ring_put_fn put,
		       void *ctx)
{
	size_t i;

	if (!rs->n || (rs->polled_ns && now - rs->polled_ns < POLL_EVERY_NS))
		return 0;
	rs->polled_ns = now;
	if (!rs->buf)
		rs->buf = sp_xcalloc(SP_RING_CAP, sizeof(*rs->buf));
	for (i = rs->n; i-- > 0;)
		if (rs->r[i]->dead || rs->r[i]->ended) {
			rs->unended += rs->r[i]->ended;
			drop(rs, i);
		}
	for (i = 0; i < rs->n; i++)
		if (poll_one(rs, rs->r[i], now, put, ctx))
			return -1;
	return 0;
}

uint64_t sp_span_rings_watermark(const struct sp_span_rings *rs)
{
	uint64_t w = UINT64_MAX;
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (rs->r[i]->good_ns < w)
			w = rs->r[i]->good_ns;
	return w;
}
