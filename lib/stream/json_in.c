// SPDX-License-Identifier: MIT
/* JSON lines to records (docs/json.md), with jansson. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_in.h"
#include "schema.h"
#include "spool.h"
#include "sp.h"

#define MAX_QUEUE 1024		/* records one line may yield */
#define MAX_FRAMES 512		/* frames of a hand-written sample */

struct sp_json_in {
	struct sp_record q[MAX_QUEUE];
	unsigned int nq, next;
	uint8_t **owned;	/* byte buffers of the records in q */
	size_t nowned, owned_cap;
	char msg[256];
};

struct sp_json_in *sp_json_in_new(void)
{
	return sp_xcalloc(1, sizeof(struct sp_json_in));
}

static void release_owned(struct sp_json_in *j)
{
	size_t i;

	for (i = 0; i < j->nowned; i++)
		free(j->owned[i]);
	j->nowned = 0;
}

void sp_json_in_free(struct sp_json_in *j)
{
	if (!j)
		return;
	release_owned(j);
	free(j->owned);
	free(j);
}

const struct sp_record *sp_json_in_next(struct sp_json_in *j)
{
	return j->next < j->nq ? &j->q[j->next++] : NULL;
}

static uint8_t *own(struct sp_json_in *j, const void *p, size_t n)
{
	uint8_t *c = sp_xmalloc(n + 1);

	memcpy(c, p, n);
	c[n] = 0;
	sp_grow(&j->owned, &j->owned_cap, j->nowned + 1, sizeof(*j->owned));
	j->owned[j->nowned++] = c;
	return c;
}

/* Parse context of one line: errors longjmp-free, by flag. */
struct ctx {
	struct sp_json_in *j;
	struct sp_defs *d;
	const char *err;
};

static int fail(struct ctx *c, const char *fmt, const char *name)
{
	if (!c->err) {
		snprintf(c->j->msg, sizeof(c->j->msg), fmt, name);
		c->err = c->j->msg;
	}
	return -1;
}

/* Queue a record and define it in d. */
static int yield(struct ctx *c, const struct sp_record *rec)
{
	const char *why = NULL;

	if (c->j->nq >= MAX_QUEUE)
		return fail(c, "%s", "line defines too many records");
	if (sp_defs_add(c->d, rec, &why)) {
		snprintf(c->j->msg, sizeof(c->j->msg), "%s record refers to %s",
			 sp_rec_kind_name(rec->kind) ?: "a", why);
		c->err = c->j->msg;
		return -1;
	}
	c->j->q[c->j->nq++] = *rec;
	return 0;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

static int parse_hex_bytes(struct ctx *c, const char *name, const char *s, struct sp_bytes *out)
{
	size_t n = strlen(s), i;
	uint8_t *b;

	if (n % 2)
		return fail(c, "field '%s' must be an even number of hex digits", name);
	b = own(c->j, s, n / 2);
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return fail(c, "field '%s' must be hex digits", name);
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	out->p = b;
	out->len = (uint32_t)(n / 2);
	return 0;
}

static uint64_t intern(struct ctx *c, const char *s, size_t len)
{
	struct sp_record r = { .kind = SP_REC_STRING };
	uint64_t id = sp_defs_find_str(c->d, s, len);

	if (id)
		return id;
	r.string.value.p = own(c->j, s, len);
	r.string.value.len = (uint32_t)len;
	if (yield(c, &r))
		return 0;
	return sp_defs_nstrings(c->d);
}

static int get_uint(struct ctx *c, const char *name, json_t *v, const struct sp_schema_field *sf,
		    bool hex, uint64_t *out)
{
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return fail(c, "field '%s' must not be negative", name);
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		int64_t e = sf ? sp_schema_enum_value(sf, s) : -1;
		char *end;

		if (e >= 0) {
			*out = (uint64_t)e;
			return 0;
		}
		if (hex || (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))) {
			errno = 0;
			*out = strtoull(s, &end, 16);
			if (*s && !errno && !*end && s[0] != '-')
				return 0;
		}
	}
	return fail(c, sf && sf->names ? "field '%s' must be a number or a known name" :
		    "field '%s' must be a non-negative integer", name);
}

static int get_field(struct ctx *c, json_t *obj, const char *name, enum sp_field_type t,
		     const struct sp_schema_field *sf, uint64_t *u, struct sp_bytes *b)
{
	json_t *v = json_object_get(obj, name);

	if ((!v || json_is_null(v)) && t == SP_FT_TEXT) {
		/* Text that is not valid UTF-8 comes as "<name>_hex". */
		char hname[64];

		snprintf(hname, sizeof(hname), "%s_hex", name);
		v = json_object_get(obj, hname);
		if (!v || json_is_null(v))
			return 0;
		if (!json_is_string(v))
			return fail(c, "field '%s' must be a hex string", hname);
		return parse_hex_bytes(c, hname, json_string_value(v), b);
	}
	if (!v || json_is_null(v))
		return 0;
	switch (t) {
	case SP_FT_ID:
		return get_uint(c, name, v, NULL, false, u);
	case SP_FT_INT:
		if (!json_is_integer(v))
			return fail(c, "field '%s' must be an integer", name);
		*u = (uint64_t)json_integer_value(v);
		return 0;
	case SP_FT_STR:
		if (json_is_integer(v) && json_integer_value(v) >= 0) {
			/* A string id: checked when the record is defined. */
			*u = (uint64_t)json_integer_value(v);
			return 0;
		}
		if (!json_is_string(v))
			return fail(c, "field '%s' must be a string or a string id", name);
		*u = intern(c, json_string_value(v), json_string_length(v));
		return c->err ? -1 : 0;
	case SP_FT_BYTES:
		if (!json_is_string(v))
			return fail(c, "field '%s' must be a hex string", name);
		return parse_hex_bytes(c, name, json_string_value(v), b);
	case SP_FT_ADDR: {
		uint8_t a[16];
		const char *s;

		if (!json_is_string(v))
			return fail(c, "field '%s' must be an address string", name);
		s = json_string_value(v);
		if (inet_pton(AF_INET, s, a) == 1) {
			b->p = own(c->j, a, 4);
			b->len = 4;
			return 0;
		}
		if (inet_pton(AF_INET6, s, a) == 1) {
			b->p = own(c->j, a, 16);
			b->len = 16;
			return 0;
		}
		return parse_hex_bytes(c, name, s, b);
	}
	case SP_FT_TEXT:
		if (!json_is_string(v))
			return fail(c, "field '%s' must be a string", name);
		b->p = own(c->j, json_string_value(v), json_string_length(v));
		b->len = (uint32_t)json_string_length(v);
		return 0;
	case SP_FT_STRVAL:
		return 0;	/* handled by the caller */
	default:
		return get_uint(c, name, v, sf, t == SP_FT_HEX, u);
	}
}

/* Frames of a hand-written sample (leaf first): intern them and their stack. */
static int sample_from_frames(struct ctx *c, json_t *frames, struct sp_sample *s)
{
	uint64_t ids[MAX_FRAMES], stack = 0;
	size_t i, n = 0;
	json_t *fo;

	if (!json_is_array(frames))
		return fail(c, "field '%s' must be an array", "frames");
	json_array_foreach(frames, i, fo) {
		struct sp_record r = { .kind = SP_REC_FRAME };
		uint64_t id = 0, line = 0;
		json_t *func;

		if (!json_is_object(fo))
			return fail(c, "field '%s' must hold objects", "frames");
		if (get_field(c, fo, "frame", SP_FT_UINT, NULL, &id, NULL))
			return -1;
		if (id && n && ids[n - 1] == id)
			continue;	/* an inline level of the same frame */
		if (id && !sp_defs_frame(c->d, id))
			return fail(c, "%s refers to an undefined frame", "frames");
		if (!id) {
			if (get_field(c, fo, "addr", SP_FT_HEX, NULL, &r.frame.addr, NULL) ||
			    get_field(c, fo, "rel", SP_FT_HEX, NULL, &r.frame.rel, NULL) ||
			    get_field(c, fo, "module_id", SP_FT_UINT, NULL, &r.frame.module, NULL))
				return -1;
			if (!r.frame.rel)
				r.frame.rel = r.frame.addr;
			if (json_is_string(json_object_get(fo, "mode")) &&
			    !strcmp(json_string_value(json_object_get(fo, "mode")), "kernel"))
				r.frame.mode = SP_FRAME_KERNEL;
			if (!r.frame.module)
				r.frame.pid = s->pid;
			id = sp_defs_find_frame(c->d, &r.frame);
			if (!id) {
				if (yield(c, &r))
					return -1;
				id = sp_defs_nframes(c->d);
				func = json_object_get(fo, "func");
				if (json_is_string(func)) {
					struct sp_record y = { .kind = SP_REC_SYMBOL };

					y.symbol.frame = id;
					y.symbol.func = intern(c, json_string_value(func),
							       json_string_length(func));
					if (get_field(c, fo, "file", SP_FT_STR, NULL, &y.symbol.file,
						      NULL) ||
					    get_field(c, fo, "line", SP_FT_UINT, NULL, &line, NULL))
						return -1;
					y.symbol.line = line;
					if (c->err || yield(c, &y))
						return -1;
				}
			}
		}
		if (n == MAX_FRAMES)
			return fail(c, "a sample has more than %s frames", "512");
		ids[n++] = id;
	}
	while (n--) {
		uint64_t id = sp_defs_find_stack(c->d, stack, ids[n]);

		if (!id) {
			struct sp_record r = { .kind = SP_REC_STACK };

			r.stack.parent = stack;
			r.stack.frame = ids[n];
			if (yield(c, &r))
				return -1;
			id = sp_defs_nstacks(c->d);
		}
		stack = id;
	}
	s->stack = stack;
	return 0;
}

static int parse_record(struct ctx *c, json_t *obj)
{
	struct sp_record rec;
	const struct sp_schema *s;
	const char *type;
	json_t *t = json_object_get(obj, "type");
	void *body = &rec.header;
	unsigned int i;

	memset(&rec, 0, sizeof(rec));
	if (!json_is_string(t))
		return fail(c, "%s", "no \"type\" member");
	type = json_string_value(t);
	if (!strcmp(type, "unknown")) {
		rec.kind = SP_REC_KIND_MAX;
		if (get_field(c, obj, "kind", SP_FT_UINT, NULL, &rec.unknown.kind, NULL) ||
		    get_field(c, obj, "raw", SP_FT_BYTES, NULL, NULL, &rec.unknown.raw))
			return -1;
		if (sp_schema(rec.unknown.kind) || !rec.unknown.kind)
			return fail(c, "%s", "an \"unknown\" record with a known kind");
		/* the spool's reader would take it for corrupt bytes */
		if (rec.unknown.kind > SP_SPOOL_MAX_KIND)
			return fail(c, "%s", "an \"unknown\" record of a kind over 65535, "
				    "more than any version uses");
		return yield(c, &rec);
	}
	rec.kind = sp_rec_kind_by_name(type);
	s = sp_schema(rec.kind);
	if (!s)
		return fail(c, "unknown record type '%.64s'", type);
	for (i = 0; i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];

		if (rec.kind == SP_REC_EVENT && !strcmp(f->name, "kind") &&
		    json_object_get(obj, "event")) {
			json_t *ev = json_object_get(obj, "event");

			if (!json_is_string(ev) ||
			    !(rec.event.kind = sp_event_kind_by_name(json_string_value(ev))))
				return fail(c, "%s", "field 'event' must name a known event");
			continue;
		}
		if (get_field(c, obj, f->name, f->type, f, sp_field_u64(body, f),
			      sp_field_bytes(body, f)))
			return -1;
	}
	if (rec.kind == SP_REC_STRING) {
		json_t *v = json_object_get(obj, "value"), *h = json_object_get(obj, "value_hex");

		if (json_is_string(v)) {
			rec.string.value.p = own(c->j, json_string_value(v), json_string_length(v));
			rec.string.value.len = (uint32_t)json_string_length(v);
		} else if (json_is_string(h)) {
			if (parse_hex_bytes(c, "value_hex", json_string_value(h), &rec.string.value))
				return -1;
		} else {
			return fail(c, "%s", "a string record needs \"value\" or \"value_hex\"");
		}
		if (rec.string.id && rec.string.id != sp_defs_nstrings(c->d) + 1)
			return fail(c, "%s", "string id out of order");
	}
	if (rec.kind == SP_REC_EVENT) {
		const struct sp_event_schema *es = sp_event_schema(rec.event.kind);

		for (i = 0; es && i < es->nfields; i++) {
			if (!json_object_get(obj, es->fields[i].name))
				continue;
			if (get_field(c, obj, es->fields[i].name, es->fields[i].type, NULL,
				      &rec.event.field[i].u, &rec.event.field[i].b))
				return -1;
			rec.event.nfields = i + 1;
		}
		if (!es && get_field(c, obj, "raw", SP_FT_BYTES, NULL, NULL, &rec.event.raw))
			return -1;
	}
	if (get_field(c, obj, "extra", SP_FT_BYTES, NULL, NULL, &rec.extra))
		return -1;
	if (rec.kind == SP_REC_SAMPLE && !rec.sample.stack && json_object_get(obj, "frames") &&
	    sample_from_frames(c, json_object_get(obj, "frames"), &rec.sample))
		return -1;
	if (rec.kind == SP_REC_SAMPLE && !json_object_get(obj, "weight"))
		rec.sample.weight = 1;
	return yield(c, &rec);
}

int sp_json_in_parse(struct sp_json_in *j, struct sp_defs *d, const char *line, size_t len,
		     const char **why)
{
	struct ctx c = { j, d, NULL };
	json_error_t jerr;
	json_t *obj;
	int err;

	release_owned(j);
	j->nq = j->next = 0;
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!obj) {
		snprintf(j->msg, sizeof(j->msg), "invalid JSON: %s", jerr.text);
		*why = j->msg;
		return -1;
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		*why = "not a JSON object";
		return -1;
	}
	err = parse_record(&c, obj);
	json_decref(obj);
	if (err) {
		/* Definitions already queued stay defined: they are valid records
		 * of their own and are passed on, only the faulty one is dropped. */
		*why = c.err ? c.err : "invalid record";
		return -1;
	}
	return 0;
}
