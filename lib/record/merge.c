// SPDX-License-Identifier: MIT
/*
 * Time-ordered merge of the records of sp-record's sources.
 *
 * Each source hands its records over in batches that are almost always in
 * time order already (one perf ring, one BPF ring buffer), so the records are
 * kept in sorted runs: a record goes to the end of the run it was last added
 * to when it is not older than that run's last record, else to the run whose
 * last record is the latest one not newer than it, else it starts a run. A
 * flush repeatedly takes the oldest head of the few runs. Records and the
 * bytes they point to are copied into chunks that are reused once read out:
 * no allocation per record once the chunks exist. Past MAX_RUNS runs (input
 * in no order at all), records go to the reorder heap (base/heap.h) instead.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/heap.h"
#include "merge.h"
#include "sp.h"

#define CHUNK_SIZE	(256u << 10)
#define MAX_RUNS	32
#define MAX_FREE_CHUNKS	256	/* 64 MiB: what a burst held, kept for the next */

struct entry {
	uint64_t time, seq;
	uint32_t size;		/* of the whole entry, aligned */
	struct sp_record rec;
	uint8_t bytes[];	/* copies of what rec's sp_bytes point to */
};

struct chunk {
	struct chunk *next;
	size_t cap, used;	/* bytes of data[] */
	uint8_t data[];
};

/* A run: records in (time, seq) order, in a list of chunks. */
struct run {
	struct chunk *head, *tail;
	size_t read;		/* offset of the first held entry in head */
	size_t n;
	uint64_t last;		/* time of the last record added */
};

struct sp_merge {
	sp_merge_put_fn put;
	void *ctx;
	struct run runs[MAX_RUNS];
	unsigned int nruns;	/* runs[0..nruns) may hold records */
	unsigned int cur;	/* run last added to */
	struct chunk *free_chunks;
	unsigned int nfree;
	struct sp_heap heap;	/* overflow when every run is newer */
	size_t n;
	uint64_t seq;
};

struct sp_merge *sp_merge_new(sp_merge_put_fn put, void *ctx)
{
	struct sp_merge *m = calloc(1, sizeof(*m));

	if (!m) {
		sp_error("out of memory");
		return NULL;
	}
	m->put = put;
	m->ctx = ctx;
	return m;
}

static void free_list(struct chunk *c)
{
	struct chunk *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
}

void sp_merge_free(struct sp_merge *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < MAX_RUNS; i++)
		free_list(m->runs[i].head);
	free_list(m->free_chunks);
	for (i = 0; i < m->heap.n; i++)
		free(m->heap.v[i].p);
	sp_heap_release(&m->heap);
	free(m);
}

/* The sp_bytes members of a record, so they can be copied. */
static unsigned int bytes_of(struct sp_record *r, struct sp_bytes **out)
{
	unsigned int n = 0, i;

	switch (r->kind) {
	case SP_REC_STRING:
		out[n++] = &r->string.value;
		break;
	case SP_REC_MODULE:
		out[n++] = &r->module.build_id;
		break;
	case SP_REC_EVENT:
		for (i = 0; i < r->event.nfields && i < SP_EVENT_MAX_FIELDS; i++)
			out[n++] = &r->event.field[i].b;
		out[n++] = &r->event.raw;
		break;
	case SP_REC_KIND_MAX:
		out[n++] = &r->unknown.raw;
		break;
	default:
		break;
	}
	if (r->extra.len)
		out[n++] = &r->extra;
	return n;
}

/* *dst = *src; of an event only the values it has, the others zeroed: the
 * record is 344 bytes, a path_open event's values end at byte 232, and one
 * copy of all of it (rep movsq) was 40% of this file's time in a flood. */
static void copy_record(struct sp_record *dst, const struct sp_record *src)
{
	const size_t vals = offsetof(struct sp_record, event.field);
	unsigned int n;

	if (src->kind != SP_REC_EVENT) {
		*dst = *src;
		return;
	}
	n = src->event.nfields < SP_EVENT_MAX_FIELDS ? src->event.nfields : SP_EVENT_MAX_FIELDS;
	memcpy(dst, src, vals + n * sizeof(src->event.field[0]));
	memset(&dst->event.field[n], 0, (SP_EVENT_MAX_FIELDS - n) * sizeof(src->event.field[0]));
	dst->event.raw = src->event.raw;
}

static bool before(const struct entry *a, const struct entry *b)
{
	return sp_heap_before(a->time, a->seq, b->time, b->seq);
}

/* Room for size bytes at the end of run r, or NULL (reported). */
static struct entry *run_room(struct sp_merge *m, struct run *r, size_t size)
{
	struct chunk *c = r->tail;

	if (c && c->cap - c->used >= size)
		goto have;
	if (size <= CHUNK_SIZE && m->free_chunks) {
		c = m->free_chunks;
		m->free_chunks = c->next;
		m->nfree--;
	} else {
		size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;

		c = malloc(sizeof(*c) + cap);
		if (!c) {
			sp_error("out of memory holding %zu records", m->n);
			return NULL;
		}
		c->cap = cap;
	}
	c->next = NULL;
	c->used = 0;
	if (r->tail)
		r->tail->next = c;
	else
		r->head = c;
	r->tail = c;
	if (r->head == c)
		r->read = 0;
have:
	c->used += size;
	return (struct entry *)(c->data + c->used - size);
}

/* The run a record of time t goes to, or -1 (heap). */
static int pick_run(struct sp_merge *m, uint64_t t)
{
	unsigned int i;
	int best = -1;

	if (m->cur < m->nruns && m->runs[m->cur].n && m->runs[m->cur].last <= t)
		return (int)m->cur;
	for (i = 0; i < m->nruns; i++) {
		const struct run *r = &m->runs[i];

		if (r->n && r->last <= t && (best < 0 || r->last > m->runs[best].last))
			best = (int)i;
	}
	if (best >= 0)
		return best;
	for (i = 0; i < m->nruns; i++)
		if (!m->runs[i].n)
			return (int)i;
	return m->nruns < MAX_RUNS ? (int)m->nruns++ : -1;
}

int sp_merge_add(void *merge, const struct sp_record *rec)
{
	struct sp_merge *m = merge;
	struct sp_bytes *src[SP_EVENT_MAX_FIELDS + 3];
	uint64_t t = sp_record_time(rec);
	size_t total = 0, off = 0, size, i;
	unsigned int nb;
	struct entry *e;
	int ri;

	/* (read only: bytes_of() hands out pointers into the record) */
	nb = bytes_of((struct sp_record *)rec, src);
	for (i = 0; i < nb; i++)
		total += src[i]->p ? src[i]->len : 0;
	size = (sizeof(*e) + total + 7) & ~(size_t)7;
	ri = pick_run(m, t);
	if (ri < 0) {
		e = malloc(size);
		if (!e)
			return sp_error("out of memory holding %zu records", m->n);
	} else {
		e = run_room(m, &m->runs[ri], size);
		if (!e)
			return -1;
	}
	e->time = t;
	e->seq = m->seq++;
	e->size = (uint32_t)size;
	copy_record(&e->rec, rec);
	for (i = 0; i < nb; i++) {
		/* the copy's member at the same place as the record's */
		struct sp_bytes *b = (struct sp_bytes *)((uint8_t *)&e->rec +
							 ((const uint8_t *)src[i] - (const uint8_t *)rec));

		if (!b->p || !b->len)
			continue;
		memcpy(e->bytes + off, b->p, b->len);
		b->p = e->bytes + off;
		off += b->len;
	}
	m->n++;
	if (ri < 0) {
		sp_heap_push(&m->heap, e->time, e->seq, e);
		return 0;
	}
	m->runs[ri].n++;
	m->runs[ri].last = t;
	m->cur = (unsigned int)ri;
	return 0;
}

static struct entry *run_head(const struct run *r)
{
	return (struct entry *)(r->head->data + r->read);
}

/* Drop the head entry of run r (read out). */
static void run_pop(struct sp_merge *m, struct run *r)
{
	struct entry *e = run_head(r);
	struct chunk *c;

	r->read += e->size;
	r->n--;
	m->n--;
	if (r->read < r->head->used)
		return;
	/* head chunk read out: to the free list (or free it) */
	c = r->head;
	r->head = c->next;
	r->read = 0;
	if (!r->head)
		r->tail = NULL;
	if (c->cap == CHUNK_SIZE && m->nfree < MAX_FREE_CHUNKS) {
		c->next = m->free_chunks;
		m->free_chunks = c;
		m->nfree++;
	} else {
		free(c);
	}
}

/* The run holding the oldest record (-1: the heap; -2: none). */
static int oldest(const struct sp_merge *m, const struct entry **out)
{
	const struct sp_heap_item *top = sp_heap_top(&m->heap);
	const struct entry *best = top ? top->p : NULL;
	int which = top ? -1 : -2;
	unsigned int i;

	for (i = 0; i < m->nruns; i++) {
		const struct entry *e;

		if (!m->runs[i].n)
			continue;
		e = run_head(&m->runs[i]);
		if (!best || before(e, best)) {
			best = e;
			which = (int)i;
		}
	}
	*out = best;
	return which;
}

long sp_merge_flush(struct sp_merge *m, uint64_t upto)
{
	const struct entry *e;
	long n = 0;
	int which, err;

	while (m->n) {
		which = oldest(m, &e);
		if (e->time > upto)
			break;
		err = m->put(m->ctx, &e->rec);
		if (which == -1) {
			free(sp_heap_pop(&m->heap));
			m->n--;
		} else {
			run_pop(m, &m->runs[which]);
		}
		if (err)
			return -1;
		n++;
	}
	/* trailing empty runs are not scanned */
	while (m->nruns && !m->runs[m->nruns - 1].n)
		m->nruns--;
	return n;
}

size_t sp_merge_pending(const struct sp_merge *m)
{
	return m->n;
}

uint64_t sp_merge_oldest(const struct sp_merge *m)
{
	const struct entry *e;

	return oldest(m, &e) == -2 ? UINT64_MAX : e->time;
}

int sp_merge_each(struct sp_merge *m, int (*fn)(void *ctx, struct sp_record *rec), void *ctx)
{
	struct chunk *c;
	size_t off, i;
	unsigned int ri;

	for (ri = 0; ri < m->nruns; ri++) {
		off = m->runs[ri].read;
		for (c = m->runs[ri].n ? m->runs[ri].head : NULL; c; c = c->next, off = 0) {
			while (off < c->used) {
				struct entry *e = (struct entry *)(c->data + off);

				if (fn(ctx, &e->rec))
					return -1;
				off += e->size;
			}
		}
	}
	for (i = 0; i < m->heap.n; i++)
		if (fn(ctx, &((struct entry *)m->heap.v[i].p)->rec))
			return -1;
	return 0;
}
