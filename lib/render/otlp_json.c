// SPDX-License-Identifier: MIT
/*
 * OTLP/JSON: any of the OTLP messages built for protobuf (otlp_pb.c,
 * otlp_profiles.c) written as JSON by OTLP's rules, by walking protobuf-c's
 * descriptors of the message, so the JSON file carries exactly what the
 * protobuf file carries:
 *
 *   - the proto3 JSON mapping: lowerCamelCase field names, fields at their
 *     default value left out, 64-bit integers as decimal strings, bytes in
 *     base64;
 *   - OTLP's exceptions: trace, span and profile ids in lowercase hex, and
 *     enums as numbers.
 *
 * Every string of these messages is already in its text form (escape.h).
 */
#include <inttypes.h>
#include <string.h>

#include "escape.h"
#include "otlp_pb.h"

/* Nesting of OTLP messages: a request, resource, scope, span, event,
 * attribute, value: the schema's, never the input's. */
#define MAX_DEPTH 16

static void put_name(FILE *out, const char *snake)
{
	bool up = false;

	putc('"', out);
	for (; *snake; snake++) {
		if (*snake == '_') {
			up = true;
			continue;
		}
		putc(up && *snake >= 'a' && *snake <= 'z' ? *snake - 'a' + 'A' : *snake, out);
		up = false;
	}
	fputs("\":", out);
}

static bool is_id(const char *name)
{
	return !strcmp(name, "trace_id") || !strcmp(name, "span_id") ||
	       !strcmp(name, "parent_span_id") || !strcmp(name, "profile_id");
}

static void put_bytes(FILE *out, const ProtobufCBinaryData *b, bool hex)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	putc('"', out);
	if (hex) {
		for (i = 0; i < b->len; i++)
			fprintf(out, "%02x", b->data[i]);
	} else {
		for (i = 0; i < b->len; i += 3) {
			uint32_t v = b->data[i] << 16 | (i + 1 < b->len ? b->data[i + 1] << 8 : 0) |
				     (i + 2 < b->len ? b->data[i + 2] : 0);

			putc(b64[v >> 18 & 63], out);
			putc(b64[v >> 12 & 63], out);
			putc(i + 1 < b->len ? b64[v >> 6 & 63] : '=', out);
			putc(i + 2 < b->len ? b64[v & 63] : '=', out);
		}
	}
	putc('"', out);
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	default:
		return 4;
	}
}

static int message(FILE *out, const ProtobufCMessage *m, int depth);

/* One value of field f at p. */
static int value(FILE *out, const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		fprintf(out, "%" PRId32, *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		fprintf(out, "%" PRIu32, *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		fprintf(out, "\"%" PRId64 "\"", *(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		fprintf(out, "\"%" PRIu64 "\"", *(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		fputs(*(const protobuf_c_boolean *)p ? "true" : "false", out);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		fprintf(out, "%.9g", *(const float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		fprintf(out, "%.17g", *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_STRING:
		sp_esc_json_put(out, *(char *const *)p, strlen(*(char *const *)p), SP_ESC_EXACT);
		break;
	case PROTOBUF_C_TYPE_BYTES:
		put_bytes(out, p, is_id(f->name));
		break;
	case PROTOBUF_C_TYPE_MESSAGE:
		return message(out, *(ProtobufCMessage *const *)p, depth + 1);
	}
	return 0;
}

/* Whether field f of m is written: set, and not at its default. */
static bool present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)m;
	const void *p = base + f->offset;

	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return *(const size_t *)(base + f->quantifier_offset) > 0;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)(base + f->quantifier_offset) == f->id;
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		return *(char *const *)p && **(char *const *)p;
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)p)->len > 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(ProtobufCMessage *const *)p != NULL;
	default:
		return elem_size(f->type) == 8 ? *(const uint64_t *)p != 0 :
		       elem_size(f->type) == 4 ? *(const uint32_t *)p != 0 :
		       *(const protobuf_c_boolean *)p != 0;
	}
}

static int message(FILE *out, const ProtobufCMessage *m, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *sep = "";
	unsigned int i;
	size_t j, n;

	if (depth > MAX_DEPTH)
		return -1;
	putc('{', out);
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *p = (const char *)m + f->offset;

		if (!present(m, f))
			continue;
		fputs(sep, out);
		sep = ",";
		put_name(out, f->name);
		if (f->label != PROTOBUF_C_LABEL_REPEATED) {
			if (value(out, f, p, depth) < 0)
				return -1;
			continue;
		}
		n = *(const size_t *)((const char *)m + f->quantifier_offset);
		putc('[', out);
		for (j = 0; j < n; j++) {
			if (j)
				putc(',', out);
			if (value(out, f, *(char *const *)p + j * elem_size(f->type), depth) < 0)
				return -1;
		}
		putc(']', out);
	}
	putc('}', out);
	return 0;
}

int otlp_json_message(FILE *out, const ProtobufCMessage *m)
{
	if (message(out, m, 0) < 0)
		return -1;
	return ferror(out) ? -1 : 0;
}
