/* SPDX-License-Identifier: MIT */
/*
 * records.h - records for the codec tests, built from the schema table so
 * that a field added to a kind is covered without touching the tests: every
 * field gets a value that is not 0 (ids aside, which are implicit), string
 * and definition references point at id 1..3, which the tests define first.
 */
#ifndef STACKPULSE_TEST_RECORDS_H
#define STACKPULSE_TEST_RECORDS_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "events.h"
#include "record.h"
#include "stream/schema.h"

static const uint8_t rec_bytes[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0xff, 0x7f,
				       0x80, 0x01, 0x93, 0x53, 0x0a, 0x00, 0x00, 0x01 };

/* A value for field i of a schema that is not 0 and differs between fields. */
static inline uint64_t rec_value(const struct sp_schema_field *f, enum sp_field_type t, unsigned int i,
			  unsigned int seed)
{
	if (f && f->ref == SP_REF_STRING)
		return 1 + (i + seed) % 3;
	if (f && f->ref)
		return 1;
	if (f && f->names)
		return f->nnames > 1 ? 1 + (i + seed) % (f->nnames - 1) : 0;
	switch (t) {
	case SP_FT_STR:
		return 1 + (i + seed) % 3;
	case SP_FT_STACK:	/* a reference, as the schema's: a stack defined first */
		return 1;
	case SP_FT_INT:
		return (uint64_t)-(int64_t)(1000 * (i + 1) + seed);
	case SP_FT_TIME:
		/* Not in order: the spool codes times as signed deltas. */
		return 5000000000ull + (seed % 2 ? 1000000 : 0) - 1000 * i;
	case SP_FT_HEX:
		return 0xffffffff81000000ull + 0x10 * i + seed;
	default:
		return 7 * (i + 1) + seed;
	}
}

static inline void rec_fill_bytes(struct sp_bytes *b, enum sp_field_type t, unsigned int i,
			   unsigned int seed)
{
	static const char *const texts[] = { "cpu-clock", "h\xc3\xa9llo \"q\" \\ \t",
					     "/usr/lib/x86_64-linux-gnu/libc.so.6", "x" };

	switch (t) {
	case SP_FT_ADDR:
		b->p = rec_bytes;
		b->len = seed % 2 ? 16 : 4;
		break;
	case SP_FT_BYTES:
		b->p = rec_bytes + i % 4;
		b->len = 12 - i % 4;
		break;
	default:	/* TEXT, STRVAL */
		b->p = (const uint8_t *)texts[(i + seed) % 4];
		b->len = (uint32_t)strlen(texts[(i + seed) % 4]);
		break;
	}
}

static inline bool rec_is_bytes(enum sp_field_type t)
{
	return t == SP_FT_ADDR || t == SP_FT_BYTES || t == SP_FT_TEXT || t == SP_FT_STRVAL;
}

/* An event of kind ev with all its values set. */
static inline void rec_fill_event(struct sp_record *r, unsigned int ev, unsigned int seed)
{
	const struct sp_event_schema *es = sp_event_schema(ev);
	unsigned int i;

	r->event.kind = ev;
	r->event.nfields = es->nfields;
	for (i = 0; i < es->nfields; i++) {
		if (rec_is_bytes(es->fields[i].type))
			rec_fill_bytes(&r->event.field[i].b, es->fields[i].type, i, seed);
		else
			r->event.field[i].u = rec_value(NULL, es->fields[i].type, i, seed);
	}
}

/* A record of a known kind with every schema field set (ids left 0). */
static inline void rec_make(struct sp_record *r, unsigned int kind, unsigned int seed)
{
	const struct sp_schema *s = sp_schema(kind);
	void *body = &r->header;
	unsigned int i;

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	for (i = 0; i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];

		if (f->type == SP_FT_ID)
			continue;
		if (rec_is_bytes(f->type))
			rec_fill_bytes(sp_field_bytes(body, f), f->type, i, seed);
		else
			*sp_field_u64(body, f) = rec_value(f, f->type, i, seed);
	}
	if (kind == SP_REC_EVENT)
		rec_fill_event(r, 1 + seed % (SP_EV_KIND_MAX - 1), seed);
}

static inline bool rec_bytes_eq(const struct sp_bytes *a, const struct sp_bytes *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->p, b->p, a->len));
}

/*
 * Whether two records carry the same information (implicit ids and the
 * position aside). On a difference, names the field in why.
 */
static inline bool rec_same(const struct sp_record *a, const struct sp_record *b, const char **why)
{
	const struct sp_schema *s = sp_schema(a->kind);
	const void *ba = &a->header, *bb = &b->header;
	unsigned int i;

	*why = "kind";
	if (a->kind != b->kind)
		return false;
	*why = "extra";
	if (!rec_bytes_eq(&a->extra, &b->extra))
		return false;
	if (a->kind == SP_REC_KIND_MAX) {
		*why = "unknown record";
		return a->unknown.kind == b->unknown.kind && rec_bytes_eq(&a->unknown.raw, &b->unknown.raw);
	}
	for (i = 0; s && i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];

		*why = f->name;
		if (f->type == SP_FT_ID)
			continue;
		if (rec_is_bytes(f->type)) {
			if (!rec_bytes_eq(sp_field_bytes((void *)ba, f), sp_field_bytes((void *)bb, f)))
				return false;
		} else if (*sp_field_u64((void *)ba, f) != *sp_field_u64((void *)bb, f)) {
			return false;
		}
	}
	if (a->kind == SP_REC_EVENT) {
		const struct sp_event_schema *es = sp_event_schema(a->event.kind);

		*why = "event nfields";
		if (a->event.nfields != b->event.nfields)
			return false;
		for (i = 0; es && i < a->event.nfields; i++) {
			*why = es->fields[i].name;
			if (rec_is_bytes(es->fields[i].type) ?
			    !rec_bytes_eq(&a->event.field[i].b, &b->event.field[i].b) :
			    a->event.field[i].u != b->event.field[i].u)
				return false;
		}
		*why = "event raw";
		if (!rec_bytes_eq(&a->event.raw, &b->event.raw))
			return false;
	}
	*why = NULL;
	return true;
}

/* An anonymous file for a stream. */
static inline int rec_memfd(void)
{
	int fd = memfd_create("sp-test", MFD_CLOEXEC);

	if (fd < 0) {
		perror("memfd_create");
		exit(2);
	}
	return fd;
}

/* The content of fd, malloc'ed, NUL-terminated; *n its length. */
static inline char *rec_slurp(int fd, size_t *n)
{
	off_t len = lseek(fd, 0, SEEK_END);
	char *p = malloc(len + 1);
	ssize_t k = pread(fd, p, len, 0);

	*n = k > 0 ? (size_t)k : 0;
	p[*n] = 0;
	return p;
}

#endif
