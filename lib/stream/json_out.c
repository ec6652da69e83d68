// SPDX-License-Identifier: MIT
/*
 * JSON-lines rendering of records (docs/json.md). Written by hand rather than
 * through jansson objects: decoding a spool to JSON is bounded by this code,
 * and formatting straight into a buffer is several times faster.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "json_out.h"
#include "schema.h"
#include "sp.h"
#include "writer.h"

/*
 * The renderers write straight into b->p after sp_buf_reserve() and move
 * b->len on; the functions other files call put the NUL back once, at
 * their end (buf.h), not after every number and key.
 */

/* Decimal digits of v (at least 1). */
static inline unsigned int dec_len(uint64_t v)
{
	unsigned int n = 1;

	while (v >= 100) {
		v /= 100;
		n += 2;
	}
	return n + (v >= 10);
}

/* v in decimal at p, two digits a division; returns the end. At most 20 bytes. */
static inline __attribute__((always_inline)) char *put_u(char *p, uint64_t v)
{
	static const char pairs[] =
		"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
		"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";
	char *end;

	if (v < 10) {
		*p = '0' + v;
		return p + 1;
	}
	end = p + dec_len(v);
	p = end;
	while (v >= 100) {
		unsigned int r = v % 100;

		v /= 100;
		p -= 2;
		p[0] = pairs[2 * r];
		p[1] = pairs[2 * r + 1];
	}
	if (v >= 10) {
		p -= 2;
		p[0] = pairs[2 * v];
		p[1] = pairs[2 * v + 1];
	} else {
		*--p = '0' + v;
	}
	return end;
}

/* v as a quoted "0x..." at p; returns the end. At most 20 bytes. */
static inline __attribute__((always_inline)) char *put_x(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	unsigned int n = v ? (64 - __builtin_clzll(v) + 3) / 4 : 1;
	char *end = p + n + 4;

	p[0] = '"';
	p[1] = '0';
	p[2] = 'x';
	p[n + 3] = '"';
	p += n + 3;
	do {
		*--p = digits[v & 15];
		v >>= 4;
	} while (v);
	return end;
}

static void buf_u(struct sp_buf *b, uint64_t v)
{
	sp_buf_reserve(b, 20);
	b->len = put_u(b->p + b->len, v) - b->p;
}

static void buf_i(struct sp_buf *b, int64_t v)
{
	if (v < 0) {
		sp_buf_add(b, "-", 1);
		buf_u(b, -(uint64_t)v);
	} else {
		buf_u(b, v);
	}
}

static void buf_x(struct sp_buf *b, uint64_t v)
{
	sp_buf_reserve(b, 20);
	b->len = put_x(b->p + b->len, v) - b->p;
}

/* Bytes JSON takes as they are: printable ASCII but the quote and backslash. */
static const bool plain[256] = {
	[0x20 ... '"' - 1] = true, ['"' + 1 ... '\\' - 1] = true, ['\\' + 1 ... 0x7e] = true,
};

bool sp_json_plain(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i;

	for (i = 0; i < n; i++)
		if (!plain[u[i]])
			return false;
	return true;
}

/* s[0..n) in quotes, as it is. */
static void buf_quoted(struct sp_buf *b, const char *s, size_t n)
{
	sp_buf_reserve(b, n + 2);
	b->p[b->len] = '"';
	memcpy(b->p + b->len + 1, s, n);
	b->p[b->len + n + 1] = '"';
	b->len += n + 2;
}

/*
 * s[0..n) as a JSON string literal: its plain start copied at once, the rest
 * by sp_esc_json() (at most 6 bytes a byte; measured first when long).
 */
static void buf_json(struct sp_buf *b, const char *s, size_t n, unsigned int flags)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n && plain[u[i]])
		i++;
	if (i == n) {
		buf_quoted(b, s, n);
		return;
	}
	n -= i;
	sp_buf_reserve(b, i + (n <= 4096 ? 6 * n : sp_esc_json(NULL, 0, s + i, n, flags)) + 2);
	b->p[b->len++] = '"';
	memcpy(b->p + b->len, s, i);
	b->len += i;
	b->len += sp_esc_json(b->p + b->len, b->cap - b->len, s + i, n, flags);
	b->p[b->len++] = '"';
}

void sp_buf_json_str(struct sp_buf *b, const char *s, size_t n)
{
	buf_json(b, s, n, SP_ESC_EXACT);
	sp_buf_setlen(b, b->len);
}

void sp_buf_json_text(struct sp_buf *b, const char *s, size_t n)
{
	buf_json(b, s, n, 0);
	sp_buf_setlen(b, b->len);
}

static inline __attribute__((always_inline)) void
key_n(struct sp_buf *b, const char *name, size_t n)
{
	char *p;

	sp_buf_reserve(b, n + 4);
	p = b->p + b->len;
	p[0] = ',';
	p[1] = '"';
	memcpy(p + 2, name, n);
	p[n + 2] = '"';
	p[n + 3] = ':';
	b->len += n + 4;
}

static void key(struct sp_buf *b, const char *name)
{
	key_n(b, name, strlen(name));
}

/* A literal key: its length known at compile time. */
#define KEY(b, lit)	key_n(b, lit, sizeof(lit) - 1)

/* A string shown, not carried (inline frames): its text form (escape.h). */
static void render_str(struct sp_buf *b, const struct sp_defs *d, uint64_t id)
{
	size_t len;
	const char *s = sp_defs_str(d, id, &len);

	if (!s)
		sp_buf_puts(b, "null");
	else if (sp_defs_str_text((struct sp_defs *)d, id) == SP_STR_PLAIN)
		buf_quoted(b, s, len);	/* known to need no escape */
	else
		sp_buf_json_text(b, s, len);
}

static void render_addr(struct sp_buf *b, const struct sp_bytes *v)
{
	char text[INET6_ADDRSTRLEN];

	if ((v->len == 4 && inet_ntop(AF_INET, v->p, text, sizeof(text))) ||
	    (v->len == 16 && inet_ntop(AF_INET6, v->p, text, sizeof(text)))) {
		sp_buf_json_str(b, text, strlen(text));
	} else {
		sp_buf_add(b, "\"", 1);
		sp_buf_hex(b, v->p, v->len);
		sp_buf_add(b, "\"", 1);
	}
}

/*
 * A string field: its text, or its id when the text would not lead a JSON
 * reader back to it (not valid UTF-8, or an equal string defined earlier).
 */
static void render_str_ref(struct sp_buf *b, const struct sp_defs *d, uint64_t id)
{
	size_t len;
	const char *s = sp_defs_str(d, id, &len);

	if (!s) {
		sp_buf_puts(b, "null");
		return;
	}
	switch (sp_defs_str_text((struct sp_defs *)d, id)) {
	case SP_STR_PLAIN:
		buf_quoted(b, s, len);	/* nothing to escape */
		break;
	case SP_STR_TEXT:
		sp_buf_json_str(b, s, len);
		break;
	default:
		buf_u(b, id);
		break;
	}
}

/* Render one field; returns false if it was left out. */
static void render_field(struct sp_buf *b, const struct sp_defs *d, const char *name,
			 enum sp_field_type t, const struct sp_schema_field *sf, uint64_t u,
			 const struct sp_bytes *bytes, bool always)
{
	const char *ename;

	switch (t) {
	case SP_FT_STR:
		if (!u && !always)
			return;
		key(b, name);
		if (u)
			render_str_ref(b, d, u);
		else
			sp_buf_puts(b, "null");
		return;
	case SP_FT_ADDR:
	case SP_FT_BYTES:
		if (!bytes->len && !always)
			return;
		key(b, name);
		if (t == SP_FT_ADDR) {
			render_addr(b, bytes);
		} else {
			sp_buf_add(b, "\"", 1);
			sp_buf_hex(b, bytes->p, bytes->len);
			sp_buf_add(b, "\"", 1);
		}
		return;
	case SP_FT_TEXT:
		if (!bytes->len && !always)
			return;
		if (sp_utf8_valid((const char *)bytes->p, bytes->len)) {
			key(b, name);
			sp_buf_json_str(b, (const char *)bytes->p, bytes->len);
		} else {
			/* Not text JSON can hold as it is: "<name>_hex", as for strings. */
			sp_buf_add(b, ",\"", 2);
			sp_buf_puts(b, name);
			sp_buf_puts(b, "_hex\":\"");
			sp_buf_hex(b, bytes->p, bytes->len);
			sp_buf_add(b, "\"", 1);
		}
		return;
	case SP_FT_STRVAL:
		if (sp_utf8_valid((const char *)bytes->p, bytes->len)) {
			key(b, "value");
			sp_buf_json_str(b, (const char *)bytes->p, bytes->len);
		} else {
			key(b, "value_hex");
			sp_buf_add(b, "\"", 1);
			sp_buf_hex(b, bytes->p, bytes->len);
			sp_buf_add(b, "\"", 1);
		}
		return;
	default:
		break;
	}
	if (!u && !always)
		return;
	key(b, name);
	if (sf && (ename = sp_schema_enum_name(sf, u)))
		sp_buf_json_str(b, ename, strlen(ename));
	else if (t == SP_FT_INT)
		buf_i(b, (int64_t)u);
	else if (t == SP_FT_HEX || u > INT64_MAX)
		buf_x(b, u);	/* JSON parsers stop at int64: big ones as "0x..." */
	else
		buf_u(b, u);
}

static const char *const mode_names[] = { "user", "kernel", "interp", "jit" };

/*
 * A sample's frames, leaf first: at most SP_MAX_STACK_DEPTH of them, so a
 * line stays within a bound whatever the stack (docs/json.md); the frames
 * left out, the outermost, are counted in "truncated".
 */
static void render_frames(struct sp_buf *b, const struct sp_defs *d, uint64_t stack)
{
	unsigned int n = 0;
	uint64_t id;
	bool first = true;

	key(b, "frames");
	sp_buf_add(b, "[", 1);
	for (id = stack; id && n < SP_MAX_STACK_DEPTH; n++) {
		const struct sp_stack *st = sp_defs_stack(d, id);
		const struct sp_frame *f = st ? sp_defs_frame(d, st->frame) : NULL;
		const struct sp_module *m;
		const struct sp_symbol *sym;
		unsigned int nsym, i;

		if (!f) {
			id = 0;
			break;
		}
		m = sp_defs_module(d, f->module);
		sym = sp_defs_symbols(d, f->id, &nsym);
		for (i = 0; i < (nsym ? nsym : 1); i++) {
			if (!first)
				sp_buf_add(b, ",", 1);
			first = false;
			sp_buf_puts(b, "{\"frame\":");
			buf_u(b, f->id);
			key(b, "addr");
			buf_x(b, f->addr);
			if (m) {
				key(b, "module");
				render_str(b, d, m->path);
				key(b, "rel");
				buf_x(b, f->rel);
			}
			key(b, "mode");
			sp_buf_json_str(b, f->mode < 4 ? mode_names[f->mode] : "user",
					strlen(f->mode < 4 ? mode_names[f->mode] : "user"));
			if (nsym && sym[i].func) {
				key(b, "func");
				render_str(b, d, sym[i].func);
			}
			if (nsym && sym[i].file) {
				key(b, "file");
				render_str(b, d, sym[i].file);
			}
			if (nsym && sym[i].line) {
				key(b, "line");
				buf_u(b, sym[i].line);
			}
			if (nsym && i + 1 < nsym)
				sp_buf_puts(b, ",\"inline\":true");
			sp_buf_add(b, "}", 1);
		}
		if (st->parent >= id) {
			id = 0;
			break;
		}
		id = st->parent;
	}
	sp_buf_add(b, "]", 1);
	if (id) {
		key(b, "truncated");
		buf_u(b, sp_defs_stack_depth(d, stack) - n);
	}
}

/*
 * A number field as render_field() writes it: nothing for 0 unless always.
 * Inlined: with a literal name, the key's copy is a few stores.
 */
static inline __attribute__((always_inline)) void
render_num(struct sp_buf *b, const char *name, size_t len, uint64_t u, bool hex, bool always)
{
	if (!u && !always)
		return;
	key_n(b, name, len);
	if (hex || u > INT64_MAX)
		buf_x(b, u);
	else
		buf_u(b, u);
}
#define NUM(b, lit, u, hex, always)	render_num(b, lit, sizeof(lit) - 1, u, hex, always)

/* An enum field (index in the schema's field list): its name, else its number. */
static void render_enum(struct sp_buf *b, enum sp_rec_kind kind, unsigned int field,
			const char *name, size_t len, uint64_t u)
{
	const char *ename;

	if (!u)
		return;
	ename = sp_schema_enum_name(&sp_schema(kind)->fields[field], u);
	if (ename) {
		key_n(b, name, len);
		sp_buf_json_str(b, ename, strlen(ename));
	} else {
		render_num(b, name, len, u, false, false);
	}
}

static void render_extra(struct sp_buf *b, const struct sp_record *rec)
{
	if (rec->extra.len) {
		KEY(b, "extra");
		sp_buf_add(b, "\"", 1);
		sp_buf_hex(b, rec->extra.p, rec->extra.len);
		sp_buf_add(b, "\"", 1);
	}
	sp_buf_add(b, "}\n", 2);
}

/*
 * render_num() at p, in room the caller reserved: at most 4 + len + 20 bytes.
 * Returns the end.
 */
static inline __attribute__((always_inline)) char *
put_num(char *p, const char *name, size_t len, uint64_t u, bool hex, bool always)
{
	if (!u && !always)
		return p;
	p[0] = ',';
	p[1] = '"';
	memcpy(p + 2, name, len);
	p[len + 2] = '"';
	p[len + 3] = ':';
	p += len + 4;
	return hex || u > INT64_MAX ? put_x(p, u) : put_u(p, u);
}
#define PUT_NUM(p, lit, u, hex, always)	put_num(p, lit, sizeof(lit) - 1, u, hex, always)

/* Room for a record's opening and up to four numbers of put_num(). */
#define NUMS_ROOM	160

/* A frame record, as the generic rendering writes it (frame_f[] of schema.c). */
static void render_frame(struct sp_buf *b, const struct sp_record *rec)
{
	const struct sp_frame *f = &rec->frame;
	char *p;

	sp_buf_reserve(b, NUMS_ROOM);
	p = b->p + b->len;
	memcpy(p, "{\"type\":\"frame\"", 15);
	p += 15;
	p = PUT_NUM(p, "id", f->id, false, true);
	p = PUT_NUM(p, "module", f->module, false, true);
	p = PUT_NUM(p, "rel", f->rel, true, true);
	p = PUT_NUM(p, "addr", f->addr, true, true);
	b->len = p - b->p;
	render_enum(b, SP_REC_FRAME, 4, "mode", 4, f->mode);
	sp_buf_reserve(b, NUMS_ROOM);
	p = b->p + b->len;
	p = PUT_NUM(p, "pid", f->pid, false, false);
	p = PUT_NUM(p, "flags", f->flags, true, false);
	b->len = p - b->p;
	render_extra(b, rec);
}

/*
 * A symbol record, the commonest of a symbolized stream, without the walk
 * over its schema: the same bytes as the generic rendering (test-json.c
 * compares them), in the order of the schema's symbol_f[].
 */
static void render_symbol(struct sp_buf *b, const struct sp_defs *d, const struct sp_record *rec)
{
	const struct sp_symbol *y = &rec->symbol;
	char *p;

	sp_buf_reserve(b, NUMS_ROOM);
	p = b->p + b->len;
	memcpy(p, "{\"type\":\"symbol\"", 16);
	p += 16;
	p = PUT_NUM(p, "frame", y->frame, false, true);
	p = PUT_NUM(p, "index", y->index, false, true);
	b->len = p - b->p;
	if (y->func) {
		KEY(b, "func");
		render_str_ref(b, d, y->func);
	}
	if (y->file) {
		KEY(b, "file");
		render_str_ref(b, d, y->file);
	}
	sp_buf_reserve(b, NUMS_ROOM);
	p = b->p + b->len;
	p = PUT_NUM(p, "line", y->line, false, false);
	p = PUT_NUM(p, "column", y->column, false, false);
	p = PUT_NUM(p, "offset", y->offset, true, false);
	b->len = p - b->p;
	render_enum(b, SP_REC_SYMBOL, 7, "status", 6, y->status);
	NUM(b, "flags", y->flags, true, false);
	render_extra(b, rec);
}

static void render(struct sp_buf *b, const struct sp_defs *d, const struct sp_record *rec,
		   unsigned int flags)
{
	const struct sp_schema *s;
	const void *body = &rec->header;
	unsigned int i;

	if (rec->kind == SP_REC_SYMBOL && !(flags & SP_JSON_GENERIC)) {
		render_symbol(b, d, rec);
		return;
	}
	if (rec->kind == SP_REC_FRAME && !(flags & SP_JSON_GENERIC)) {
		render_frame(b, rec);
		return;
	}
	s = sp_schema(rec->kind);

	if (!s) {
		sp_buf_puts(b, "{\"type\":\"unknown\",\"kind\":");
		if (rec->unknown.kind > INT64_MAX)
			buf_x(b, rec->unknown.kind);
		else
			buf_u(b, rec->unknown.kind);
		sp_buf_puts(b, ",\"raw\":\"");
		sp_buf_hex(b, rec->unknown.raw.p, rec->unknown.raw.len);
		sp_buf_puts(b, "\"}\n");
		return;
	}
	sp_buf_puts(b, "{\"type\":\"");
	sp_buf_puts(b, s->name);
	sp_buf_add(b, "\"", 1);
	for (i = 0; i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];
		uint64_t u = *sp_field_u64((void *)body, f);

		if (rec->kind == SP_REC_EVENT && !strcmp(f->name, "kind")) {
			const struct sp_event_schema *es = sp_event_schema(u);

			if (es) {
				key(b, "event");
				sp_buf_json_str(b, es->name, strlen(es->name));
				continue;
			}
		}
		render_field(b, d, f->name, f->type, f, u, sp_field_bytes((void *)body, f),
			     f->flags & SP_SF_ALWAYS);
	}
	if (rec->kind == SP_REC_EVENT) {
		const struct sp_event_schema *es = sp_event_schema(rec->event.kind);

		for (i = 0; es && i < rec->event.nfields && i < es->nfields; i++)
			render_field(b, d, es->fields[i].name, es->fields[i].type, NULL,
				     rec->event.field[i].u, &rec->event.field[i].b, true);
		if (!es && rec->event.raw.len) {
			key(b, "raw");
			sp_buf_add(b, "\"", 1);
			sp_buf_hex(b, rec->event.raw.p, rec->event.raw.len);
			sp_buf_add(b, "\"", 1);
		}
	}
	if (rec->kind == SP_REC_SAMPLE && rec->sample.stack && !(flags & SP_JSON_NO_INLINE_FRAMES))
		render_frames(b, d, rec->sample.stack);
	if (rec->extra.len) {
		key(b, "extra");
		sp_buf_add(b, "\"", 1);
		sp_buf_hex(b, rec->extra.p, rec->extra.len);
		sp_buf_add(b, "\"", 1);
	}
	sp_buf_puts(b, "}\n");
}

void sp_json_render(struct sp_buf *b, const struct sp_defs *d, const struct sp_record *rec,
		    unsigned int flags)
{
	render(b, d, rec, flags);
	sp_buf_setlen(b, b->len);	/* the NUL after the renderers' own writes */
}
