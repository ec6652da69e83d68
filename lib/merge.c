// SPDX-License-Identifier: MIT
/* Time-ordered merge of the records of sp-record's sources: a binary heap. */
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "sp.h"

struct entry {
	uint64_t time, seq;
	struct sp_record rec;
	uint8_t bytes[];	/* copies of what rec's sp_bytes point to */
};

struct sp_merge {
	sp_merge_put_fn put;
	void *ctx;
	struct entry **heap;
	size_t n, cap;
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

void sp_merge_free(struct sp_merge *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->heap[i]);
	free(m->heap);
	free(m);
}

uint64_t sp_record_time(const struct sp_record *r)
{
	switch (r->kind) {
	case SP_REC_PROCESS:
		return r->process.time;
	case SP_REC_THREAD:
		return r->thread.time;
	case SP_REC_MODULE:
		return r->module.time;
	case SP_REC_SAMPLE:
		return r->sample.time;
	case SP_REC_EVENT:
		return r->event.time;
	case SP_REC_SPAN_START:
	case SP_REC_SPAN_STOP:
	case SP_REC_SPAN_RAISE:
		return r->mark.time;
	case SP_REC_PROCESS_END:
		return r->process_end.time;
	case SP_REC_THREAD_END:
		return r->thread_end.time;
	case SP_REC_MODULE_END:
		return r->module_end.time;
	case SP_REC_LOST:
		return r->lost.time;
	case SP_REC_END:
		return r->end.time;
	case SP_REC_PROBE:
		return r->probe.time;
	case SP_REC_RUNTIME:
		return r->runtime.time;
	default:
		return 0;
	}
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
	return n;
}

static int before(const struct entry *a, const struct entry *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

int sp_merge_add(void *merge, const struct sp_record *rec)
{
	struct sp_merge *m = merge;
	struct sp_bytes *b[SP_EVENT_MAX_FIELDS + 2];
	struct sp_record tmp = *rec;
	struct entry *e;
	size_t total = 0, off = 0, i;
	unsigned int nb;

	nb = bytes_of(&tmp, b);
	for (i = 0; i < nb; i++)
		total += b[i]->p ? b[i]->len : 0;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		struct entry **h = realloc(m->heap, cap * sizeof(*h));

		if (!h)
			return sp_error("out of memory holding %zu records", m->n);
		m->heap = h;
		m->cap = cap;
	}
	e = malloc(sizeof(*e) + total);
	if (!e)
		return sp_error("out of memory holding %zu records", m->n);
	e->rec = tmp;
	nb = bytes_of(&e->rec, b);
	for (i = 0; i < nb; i++) {
		if (!b[i]->p || !b[i]->len)
			continue;
		memcpy(e->bytes + off, b[i]->p, b[i]->len);
		b[i]->p = e->bytes + off;
		off += b[i]->len;
	}
	e->time = sp_record_time(rec);
	e->seq = m->seq++;

	/* Sift up. */
	i = m->n++;
	while (i > 0 && before(e, m->heap[(i - 1) / 2])) {
		m->heap[i] = m->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	m->heap[i] = e;
	return 0;
}

static struct entry *pop(struct sp_merge *m)
{
	struct entry *top = m->heap[0], *last = m->heap[--m->n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < m->n) {
		if (c + 1 < m->n && before(m->heap[c + 1], m->heap[c]))
			c++;
		if (!before(m->heap[c], last))
			break;
		m->heap[i] = m->heap[c];
		i = c;
	}
	if (m->n)
		m->heap[i] = last;
	return top;
}

long sp_merge_flush(struct sp_merge *m, uint64_t upto)
{
	struct entry *e;
	long n = 0;
	int err;

	while (m->n && m->heap[0]->time <= upto) {
		e = pop(m);
		err = m->put(m->ctx, &e->rec);
		free(e);
		if (err)
			return -1;
		n++;
	}
	return n;
}

size_t sp_merge_pending(const struct sp_merge *m)
{
	return m->n;
}

uint64_t sp_merge_oldest(const struct sp_merge *m)
{
	return m->n ? m->heap[0]->time : UINT64_MAX;
}
