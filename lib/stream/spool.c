// SPDX-License-Identifier: MIT
/*
 * The spool codec. A payload is the record's fields in schema order, each a
 * LEB128 varint (unsigned; zigzag for INT and for TIME, which is the delta to
 * the previous time in the stream), or a varint length and bytes. Trailing
 * fields that would encode as 0 are left out; a reader reads missing fields
 * as 0, and keeps unknown trailing bytes (a newer writer's fields) verbatim.
 */
#include <stdbool.h>
#include <string.h>

#include "schema.h"
#include "spool.h"

int sp_varint_get(const uint8_t *p, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	unsigned int i, shift = 0;

	for (i = 0; i < n && i < 10; i++, shift += 7) {
		uint64_t b = p[i] & 0x7f;

		if (i == 9 && p[i] > 1)
			return -1;	/* more than 64 bits */
		x |= b << shift;
		if (!(p[i] & 0x80)) {
			*v = x;
			return (int)i + 1;
		}
	}
	return i == 10 ? -1 : 0;
}

unsigned int sp_varint_put(uint8_t *p, uint64_t v)
{
	unsigned int n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

enum sp_frame_result sp_spool_frame(const uint8_t *p, size_t n, uint64_t *kind,
				    size_t *payload_off, uint64_t *len, const char **why)
{
	int a, b;

	a = sp_varint_get(p, n, kind);
	if (a < 0)
		return *why = "corrupt record kind", SP_FRAME_CORRUPT;
	if (a == 0)
		return SP_FRAME_SHORT;
	/* No writer uses kind 0 (JSON lines cannot carry it): zeroed bytes. */
	if (*kind == SP_REC_NONE)
		return *why = "record kind 0", SP_FRAME_CORRUPT;
	/* Nor one no version could get to (random bytes, most often): told
	 * from a newer writer's kind, which is passed on. */
	if (*kind > SP_SPOOL_MAX_KIND)
		return *why = "corrupt record kind (over 65535, more than any version uses)",
		       SP_FRAME_CORRUPT;
	b = sp_varint_get(p + a, n - a, len);
	if (b < 0)
		return *why = "corrupt record length", SP_FRAME_CORRUPT;
	if (b == 0)
		return SP_FRAME_SHORT;
	if (*len > SP_SPOOL_MAX_RECORD)
		return *why = "record longer than the 16 MiB limit", SP_FRAME_CORRUPT;
	*payload_off = a + b;
	if (n - *payload_off < *len)
		return SP_FRAME_SHORT;
	return SP_FRAME_OK;
}

/* A cursor over a payload; reading past the end yields zeros. */
struct cur {
	const uint8_t *p;
	size_t n, i;
	const char *err;
};

static uint64_t get_u_slow(struct cur *c)
{
	uint64_t v = 0;
	int k;

	k = sp_varint_get(c->p + c->i, c->n - c->i, &v);
	if (k <= 0) {
		c->err = "corrupt varint";
		c->i = c->n;
		return 0;
	}
	c->i += k;
	return v;
}

/* Inlined for varints of up to four bytes, the common ones. */
static inline __attribute__((always_inline)) uint64_t get_u(struct cur *c)
{
	const uint8_t *p = c->p + c->i;
	size_t left = c->n - c->i;
	uint64_t x;
	unsigned int k;

	if (c->i >= c->n)
		return 0;
	x = p[0] & 0x7f;
	for (k = 0; k < 4 && k < left; k++) {
		if (k)
			x |= (uint64_t)(p[k] & 0x7f) << (7 * k);
		if (!(p[k] & 0x80)) {
			c->i += k + 1;
			return x;
		}
	}
	return get_u_slow(c);
}

static struct sp_bytes get_b(struct cur *c)
{
	struct sp_bytes b = { NULL, 0 };
	uint64_t len = get_u(c);

	if (len > c->n - c->i) {
		c->err = "byte string longer than its record";
		c->i = c->n;
		return b;
	}
	b.p = c->p + c->i;
	b.len = (uint32_t)len;
	c->i += len;
	return b;
}

static inline __attribute__((always_inline)) void get_field(struct cur *c, struct sp_spool_state *st, enum sp_field_type t,
		      uint64_t *u, struct sp_bytes *b)
{
	switch (t) {
	case SP_FT_ID:
		break;
	case SP_FT_INT:
		*u = (uint64_t)unzigzag(get_u(c));
		break;
	case SP_FT_TIME:
		st->last_time += (uint64_t)unzigzag(get_u(c));
		*u = st->last_time;
		break;
	case SP_FT_ADDR:
	case SP_FT_BYTES:
	case SP_FT_STRVAL:
	case SP_FT_TEXT:
		*b = get_b(c);
		break;
	default:
		*u = get_u(c);
		break;
	}
}

int sp_spool_decode(struct sp_spool_state *st, uint64_t kind, const uint8_t *payload,
		    size_t len, struct sp_record *rec, const char **why)
{
	const struct sp_schema *s = sp_schema(kind);
	struct sp_spool_state tmp = *st;
	struct cur c = { payload, len, 0, NULL };
	void *body = &rec->header;
	unsigned int i;

	memset(rec, 0, sizeof(*rec));
	if (!s) {
		rec->kind = SP_REC_KIND_MAX;
		rec->unknown.kind = kind;
		rec->unknown.raw.p = payload;
		rec->unknown.raw.len = (uint32_t)len;
		return 0;
	}
	rec->kind = kind;
	for (i = 0; i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];

		get_field(&c, &tmp, f->type, sp_field_u64(body, f), sp_field_bytes(body, f));
	}
	if (kind == SP_REC_EVENT) {
		const struct sp_event_schema *es = sp_event_schema(rec->event.kind);

		if (!es) {
			rec->event.raw.p = c.p + c.i;
			rec->event.raw.len = (uint32_t)(c.n - c.i);
			c.i = c.n;
		}
		for (i = 0; es && i < es->nfields && c.i < c.n; i++) {
			get_field(&c, &tmp, es->fields[i].type, &rec->event.field[i].u,
				  &rec->event.field[i].b);
			rec->event.nfields = i + 1;
		}
	}
	if (c.err) {
		*why = c.err;
		return -1;
	}
	if (c.i < c.n) {
		rec->extra.p = c.p + c.i;
		rec->extra.len = (uint32_t)(c.n - c.i);
	}
	*st = tmp;
	return 0;
}

static size_t put_b(uint8_t *p, const struct sp_bytes *b)
{
	size_t n = sp_varint_put(p, b->len);

	if (b->len)
		memcpy(p + n, b->p, b->len);
	return n + b->len;
}

/* Encode one field at p; returns its length; *zero tells if it encodes as 0. */
static size_t put_field(uint8_t *p, struct sp_spool_state *st, enum sp_field_type t,
			uint64_t u, const struct sp_bytes *b, bool *zero)
{
	uint64_t v;

	switch (t) {
	case SP_FT_ID:
		*zero = true;
		return 0;
	case SP_FT_INT:
		v = zigzag((int64_t)u);
		break;
	case SP_FT_TIME:
		v = zigzag((int64_t)(u - st->last_time));
		st->last_time = u;
		break;
	case SP_FT_ADDR:
	case SP_FT_BYTES:
	case SP_FT_STRVAL:
	case SP_FT_TEXT:
		*zero = b->len == 0;
		return put_b(p, b);
	default:
		v = u;
		break;
	}
	*zero = v == 0;
	return sp_varint_put(p, v);
}

/* Per kind: 10 bytes per field, and whether any field has bytes (else the
 * bound is that constant plus the extra bytes and, for events, their values).
 * Filled on first use; every thread computes the same values. */
static struct {
	uint32_t fixed;
	uint8_t known, has_bytes;
} bound_of[SP_REC_KIND_MAX];

static void bound_init(unsigned int kind, const struct sp_schema *s)
{
	unsigned int i;
	uint8_t has = 0;

	for (i = 0; i < s->nfields; i++) {
		enum sp_field_type t = s->fields[i].type;

		has |= t == SP_FT_BYTES || t == SP_FT_ADDR || t == SP_FT_STRVAL || t == SP_FT_TEXT;
	}
	bound_of[kind].fixed = 10 + 10 * s->nfields;
	bound_of[kind].has_bytes = has;
	bound_of[kind].known = 1;
}

size_t sp_spool_bound(const struct sp_record *rec)
{
	const struct sp_schema *s;
	size_t n = rec->extra.len + 10;
	unsigned int i;

	if (rec->kind == SP_REC_KIND_MAX)
		return rec->unknown.raw.len;
	if ((unsigned int)rec->kind < SP_REC_KIND_MAX && bound_of[rec->kind].known &&
	    !bound_of[rec->kind].has_bytes) {
		n = rec->extra.len + bound_of[rec->kind].fixed;
		goto event;
	}
	s = sp_schema(rec->kind);
	if (!s)
		return 0;
	bound_init(rec->kind, s);
	for (i = 0; i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];

		n += 10;
		if (f->type == SP_FT_BYTES || f->type == SP_FT_ADDR || f->type == SP_FT_STRVAL ||
		    f->type == SP_FT_TEXT)
			n += sp_field_bytes((void *)&rec->header, f)->len;
	}
event:
	if (rec->kind == SP_REC_EVENT) {
		n += rec->event.raw.len;
		for (i = 0; i < rec->event.nfields && i < SP_EVENT_MAX_FIELDS; i++)
			n += 10 + rec->event.field[i].b.len;
	}
	return n;
}

size_t sp_spool_encode(struct sp_spool_state *st, const struct sp_record *rec, uint8_t *buf)
{
	const struct sp_schema *s = sp_schema(rec->kind);
	void *body = (void *)&rec->header;
	size_t n = 0, keep = 0;
	unsigned int i;
	bool zero;

	if (rec->kind == SP_REC_KIND_MAX) {
		if (rec->unknown.raw.len)
			memcpy(buf, rec->unknown.raw.p, rec->unknown.raw.len);
		return rec->unknown.raw.len;
	}
	if (!s)
		return 0;
	for (i = 0; i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];

		n += put_field(buf + n, st, f->type, *sp_field_u64(body, f),
			       sp_field_bytes(body, f), &zero);
		if (!zero)
			keep = n;
	}
	if (rec->kind == SP_REC_EVENT) {
		const struct sp_event_schema *es = sp_event_schema(rec->event.kind);

		/* An event's values follow its common part: no trimming before them. */
		keep = n;
		if (!es && rec->event.raw.len) {
			memcpy(buf + n, rec->event.raw.p, rec->event.raw.len);
			n += rec->event.raw.len;
		}
		for (i = 0; es && i < rec->event.nfields && i < es->nfields; i++)
			n += put_field(buf + n, st, es->fields[i].type, rec->event.field[i].u,
				       &rec->event.field[i].b, &zero);
		keep = n;
	}
	if (rec->extra.len) {
		memcpy(buf + n, rec->extra.p, rec->extra.len);
		n += rec->extra.len;
		keep = n;
	}
	return keep;
}
