// SPDX-License-Identifier: MIT
/*
 * OTLP/JSON: a batch of the model (otlpP.h) as entries of an
 * ExportTraceServiceRequest's "resourceSpans", by the protocol's JSON rules
 * (the proto3 JSON mapping with lowerCamelCase names, trace and span ids
 * in hex rather than base64, enums as numbers, 64-bit integers as decimal
 * strings). It carries what the protobuf form carries, field for field.
 */
#include <inttypes.h>
#include <string.h>

#include "escape.h"
#include "otlpP.h"

static void str(FILE *out, const char *s)
{
	sp_esc_json_put(out, s, strlen(s), SP_ESC_EXACT);	/* s is a text form */
}

/* sep: what comes before the member ("" for the first) */
static void hex(FILE *out, const char *sep, const char *key, const uint8_t *p, size_t n)
{
	size_t i;

	fprintf(out, "%s\"%s\":\"", sep, key);
	for (i = 0; i < n; i++)
		fprintf(out, "%02x", p[i]);
	putc('"', out);
}

static void attrs(FILE *out, const struct otlp_attr *a, size_t n)
{
	size_t i;

	fputs("\"attributes\":[", out);
	for (i = 0; i < n; i++) {
		fputs(i ? ",{\"key\":" : "{\"key\":", out);
		str(out, a[i].key);
		if (a[i].type == OTLP_STR) {
			fputs(",\"value\":{\"stringValue\":", out);
			str(out, a[i].s);
			fputs("}}", out);
		} else {
			fprintf(out, ",\"value\":{\"intValue\":\"%" PRId64 "\"}}", a[i].i);
		}
	}
	putc(']', out);
}

static void span(FILE *out, const struct otlp_span *s, const struct otlp_batch *b,
		 const struct otlp_view *v)
{
	uint32_t i;

	fputs("{", out);
	hex(out, "", "traceId", s->trace_id, 16);
	hex(out, ",", "spanId", s->span_id, 8);
	if (s->has_parent)
		hex(out, ",", "parentSpanId", s->parent_id, 8);
	fputs(",\"name\":", out);
	str(out, s->name);
	fprintf(out, ",\"kind\":1,\"startTimeUnixNano\":\"%" PRIu64 "\","
		"\"endTimeUnixNano\":\"%" PRIu64 "\",", s->start, s->end);
	attrs(out, b->attrs.a + s->attr_off, s->nattrs);
	fputs(",\"events\":[", out);
	for (i = 0; i < s->nevents; i++) {
		const struct otlp_event *e = &b->ev[v->ev_order[s->event_off + i]];

		fprintf(out, "%s{\"timeUnixNano\":\"%" PRIu64 "\",\"name\":", i ? "," : "", e->time);
		str(out, e->name);
		putc(',', out);
		attrs(out, b->attrs.a + e->attr_off, e->nattrs);
		putc('}', out);
	}
	putc(']', out);
	if (s->status == OTLP_STATUS_ERROR) {
		fputs(",\"status\":{\"code\":2,\"message\":", out);
		str(out, s->status_msg);
		putc('}', out);
	}
	putc('}', out);
}

int otlp_json_traces(FILE *out, const struct otlp_stream *s, const struct otlp_batch *b,
		     const struct otlp_view *v, bool *first)
{
	size_t g, i;

	for (g = 0; g < v->ngroups; g++) {
		const struct otlp_group *gr = &v->group[g];
		const struct otlp_resource *r = &s->res[gr->resource];

		fputs(*first ? "\n{\"resource\":{" : ",\n{\"resource\":{", out);
		*first = false;
		attrs(out, r->attrs.a, r->attrs.n);
		fputs("},\"scopeSpans\":[{\"scope\":{\"name\":\"stackpulse\"},\"spans\":[", out);
		for (i = 0; i < gr->n; i++) {
			if (i)
				fputs(",\n", out);
			else
				putc('\n', out);
			span(out, &b->span[v->span_order[gr->first + i]], b, v);
		}
		fputs("]}]}", out);
	}
	return ferror(out) ? -1 : 0;
}
