// SPDX-License-Identifier: MIT
/* Unit tests of lib/render/otlp*.c: ids, text forms, and requests written in
 * batches, unpacked again by protobuf-c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defs.h"
#include "events.h"
#include "export.h"
#include "hashmap.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#include "render/otlpP.h"
#include "sp.h"
#include "tap.h"

typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest Request;
typedef Opentelemetry__Proto__Trace__V1__Span Span;

static const struct sp_otlp_opts opts;

static struct sp_record header(uint64_t wall)
{
	struct sp_record r = { .kind = SP_REC_HEADER };

	r.header.start_wall_ns = wall;
	r.header.start_mono_ns = 1000;
	r.header.hostname.p = (const uint8_t *)"h";
	r.header.hostname.len = 1;
	r.header.flags = SP_HDR_CORRELATED;
	return r;
}

static void test_otlp_ids(void)
{
	struct otlp_stream a, b;
	struct sp_record h = header(5000);
	struct sp_u64map seen = SP_U64MAP_INIT;
	uint8_t id[8], id2[8], tid[16];
	uint64_t i, v, dup = 0, zero = 0;

	otlp_stream_init(&a, &opts);
	otlp_stream_init(&b, &opts);
	otlp_stream_header(&a, &h.header);
	otlp_stream_header(&b, &h.header);
	for (i = 1; i <= 20000; i++) {
		otlp_span_id(&a, i, id);
		otlp_span_id(&b, i, id2);
		if (memcmp(id, id2, 8))
			dup = ~0ull;
		memcpy(&v, id, 8);
		if (!v)
			zero++;
		if (sp_u64map_get(&seen, v))
			dup++;
		sp_u64map_put(&seen, v, i);
	}
	CHECK(dup == 0);
	CHECK(zero == 0);
	otlp_trace_id(&a, 1, tid);
	CHECK(memcmp(tid, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) != 0);
	/* another recording: other ids */
	h = header(6000);
	otlp_stream_header(&b, &h.header);
	otlp_span_id(&a, 1, id);
	otlp_span_id(&b, 1, id2);
	CHECK(memcmp(id, id2, 8) != 0);
	/* wall clock: start_wall + (t - start_mono) */
	CHECK(otlp_wall(&a, 1500) == 5500);
	sp_u64map_release(&seen);
	otlp_stream_release(&a);
	otlp_stream_release(&b);
}

static void test_otlp_text(void)
{
	struct sp_arena ar = SP_ARENA_INIT(0);

	CHECK(!strcmp(otlp_text(&ar, "plain", 5), "plain"));
	CHECK(!strcmp(otlp_text(&ar, "a\xff" "b", 3), "a\\xffb"));
	CHECK(!strcmp(otlp_text(&ar, "e\x1b", 2), "e\\x1b"));
	CHECK(!strcmp(otlp_text(&ar, "C:\\x", 4), "C:\\x5cx"));
	sp_arena_release(&ar);
}

static uint64_t add_str(struct sp_defs *d, const char *s)
{
	struct sp_record r = { .kind = SP_REC_STRING };
	const char *why;

	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = strlen(s);
	CHECK(sp_defs_add(d, &r, &why) == 0);
	return sp_defs_nstrings(d);
}

/* n spans, each the child of the one before, with an event on span ev. */
static char *export_chain(uint64_t n, uint64_t ev, bool json, size_t *len,
			  struct sp_otlp_stats *st)
{
	struct sp_otlp_opts o = { .json = json };
	struct sp_defs *d = sp_defs_new();
	struct sp_record r = header(1000000);
	struct sp_otlp_traces *t;
	uint64_t i, m;
	char *buf = NULL;
	FILE *out = open_memstream(&buf, len);
	const char *why;

	t = sp_otlp_traces_new(out, &o);
	CHECK(sp_defs_add(d, &r, &why) == 0);
	CHECK(sp_otlp_traces_add(t, d, &r) == 0);
	m = add_str(d, "m");
	for (i = 1; i <= n; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_SPAN;
		r.span.parent = i - 1;
		r.span.pid = r.span.tid = 7;
		r.span.method = m;
		r.span.start = 1000 + i;
		r.span.stop = 1000 + 2 * n - i;
		CHECK(sp_defs_add(d, &r, &why) == 0);
		CHECK(sp_otlp_traces_add(t, d, &r) == 0);
		if (i == ev) {
			memset(&r, 0, sizeof(r));
			r.kind = SP_REC_EVENT;
			r.event.time = 1000 + i;
			r.event.pid = r.event.tid = 7;
			r.event.kind = SP_EV_PROC_EXIT;
			r.event.span = i;
			r.event.nfields = 1;
			r.event.field[0].u = (uint64_t)-3;	/* code: an int */
			CHECK(sp_otlp_traces_add(t, d, &r) == 0);
		}
	}
	CHECK(sp_otlp_traces_finish(t, st) == 0);
	fclose(out);
	sp_defs_free(d);
	return buf;
}

static void test_otlp_batches(void)
{
	uint64_t n = SP_OTLP_BATCH + 100, spans = 0, events = 0;
	struct sp_otlp_stats st;
	const Span *prev = NULL;
	size_t len, i, j;
	char *buf = export_chain(n, SP_OTLP_BATCH + 1, false, &len, &st);
	Request *req;
	bool linked = true;

	CHECK(st.spans == n && st.events == 1 && st.resources == 2);
	/* the two batches' requests read as one request */
	req = opentelemetry__proto__collector__trace__v1__export_trace_service_request__unpack(
		NULL, len, (const uint8_t *)buf);
	CHECK(req != NULL);
	if (!req) {
		free(buf);
		return;
	}
	CHECK(req->n_resource_spans == 2);
	for (i = 0; i < req->n_resource_spans; i++) {
		const Opentelemetry__Proto__Trace__V1__ScopeSpans *ss = req->resource_spans[i]->scope_spans[0];

		for (j = 0; j < ss->n_spans; j++, spans++) {
			const Span *s = ss->spans[j];

			events += s->n_events;
			if (s->n_events) {
				const Opentelemetry__Proto__Common__V1__AnyValue *v =
					s->events[0]->attributes[2]->value;	/* process.pid, thread.id, code */

				CHECK(!strcmp(s->events[0]->name, "proc_exit"));
				CHECK(!strcmp(s->events[0]->attributes[2]->key, "code"));
				CHECK(v->int_value == -3);
			}
			if (prev && (s->parent_span_id.len != 8 ||
				     memcmp(s->parent_span_id.data, prev->span_id.data, 8) ||
				     memcmp(s->trace_id.data, prev->trace_id.data, 16)))
				linked = false;
			if (!prev && s->parent_span_id.len)
				linked = false;
			prev = s;
		}
	}
	CHECK(spans == n);
	CHECK(events == 1);
	CHECK(linked);
	CHECK(prev && prev->start_time_unix_nano == 1000000 + n &&
	      prev->end_time_unix_nano == 1000000 + n);
	opentelemetry__proto__collector__trace__v1__export_trace_service_request__free_unpacked(req, NULL);
	free(buf);
}

/* An open span ends at the last span, event, sample or end record, not at
 * a later bookkeeping record (a process's end, a lost window). */
static void test_otlp_open_span_end(void)
{
	static const unsigned int later[] = { SP_REC_PROCESS_END, SP_REC_LOST, SP_REC_PROBE };
	struct sp_defs *d = sp_defs_new();
	struct sp_record r = header(1000000);
	struct sp_otlp_traces *t;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);
	const char *why;
	Request *req;

	t = sp_otlp_traces_new(out, &opts);
	CHECK(sp_defs_add(d, &r, &why) == 0);
	CHECK(sp_otlp_traces_add(t, d, &r) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SPAN;
	r.span.pid = r.span.tid = 7;
	r.span.start = 2000;	/* stop 0: still open */
	CHECK(sp_defs_add(d, &r, &why) == 0);
	CHECK(sp_otlp_traces_add(t, d, &r) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SAMPLE;
	r.sample.pid = r.sample.tid = 7;
	r.sample.time = 3000;
	CHECK(sp_otlp_traces_add(t, d, &r) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_END;
	r.end.time = 4000;
	CHECK(sp_otlp_traces_add(t, d, &r) == 0);
	for (i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.kind = later[i];
		r.process_end.time = 9000 + i;	/* time is every kind's first field */
		CHECK(sp_otlp_traces_add(t, d, &r) == 0);
	}
	CHECK(sp_otlp_traces_finish(t, NULL) == 0);
	fclose(out);
	req = opentelemetry__proto__collector__trace__v1__export_trace_service_request__unpack(
		NULL, len, (const uint8_t *)buf);
	CHECK(req && req->n_resource_spans == 1 &&
	      req->resource_spans[0]->scope_spans[0]->n_spans == 1);
	if (req && req->n_resource_spans == 1 &&
	    req->resource_spans[0]->scope_spans[0]->n_spans == 1) {
		const Span *s = req->resource_spans[0]->scope_spans[0]->spans[0];

		CHECK_EQ_U(s->start_time_unix_nano, 1000000 + 2000 - 1000);
		CHECK_EQ_U(s->end_time_unix_nano, 1000000 + 4000 - 1000);
	}
	if (req)
		opentelemetry__proto__collector__trace__v1__export_trace_service_request__free_unpacked(req, NULL);
	free(buf);
	sp_defs_free(d);
}

static void test_otlp_json_empty(void)
{
	struct sp_otlp_stats st;
	size_t len;
	char *buf = export_chain(0, 0, true, &len, &st);

	CHECK(!strcmp(buf, "{\"resourceSpans\":[]}\n"));
	CHECK(st.spans == 0);
	free(buf);
	buf = export_chain(0, 0, false, &len, &st);
	CHECK(len == 0);	/* an empty request is no bytes */
	free(buf);
}

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	PRequest;

static void def(struct sp_defs *d, struct sp_record *r)
{
	const char *why;

	CHECK(sp_defs_add(d, r, &why) == 0);
}

/* Two frames of /bin/app, a stack of both, samples on two threads, one of
 * them in span 1: the dictionary has its empty entries 0, a stack of two
 * locations, a thread attribute per thread, a link to the span (the ids
 * the traces give it); one resource with a profile of two samples. */
static void test_otlp_profiles(void)
{
	struct sp_otlp_opts o = { 0 };
	struct sp_otlp_profiles *p = sp_otlp_profiles_new(&o);
	struct sp_defs *d = sp_defs_new();
	struct sp_record r = header(1000000);
	const Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary *dict;
	const Opentelemetry__Proto__Profiles__V1development__Profile *prof;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);
	PRequest *req;
	int64_t total = 0;

	def(d, &r);
	CHECK(sp_otlp_profiles_add(p, d, &r, 0) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_MODULE;
	r.module.pid = 7;
	r.module.start = 0x400000;
	r.module.end = 0x401000;
	r.module.path = add_str(d, "/bin/app");
	def(d, &r);
	for (i = 1; i <= 2; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = 1;
		r.frame.rel = 0x10 * i;
		r.frame.addr = 0x400000 + 0x10 * i;
		def(d, &r);
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_STACK;
		r.stack.parent = i - 1;
		r.stack.frame = i;
		def(d, &r);
	}
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SPAN;
	r.span.pid = r.span.tid = 8;
	r.span.start = 1000;
	def(d, &r);
	CHECK(sp_otlp_profiles_add(p, d, &r, 0) == 0);
	for (i = 0; i < 3; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_SAMPLE;
		r.sample.span = i ? 1 : 0;
		r.sample.pid = 7;
		r.sample.tid = i ? 8 : 7;
		r.sample.stack = 2;
		r.sample.weight = 1;
		CHECK(sp_otlp_profiles_add(p, d, &r, 1000) == 0);
	}
	CHECK(sp_otlp_profiles_write(p, out, 1000) == 0);
	fclose(out);
	req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, (const uint8_t *)buf);
	CHECK(req && req->dictionary && req->n_resource_profiles == 1);
	if (req && req->dictionary && req->n_resource_profiles == 1) {
		dict = req->dictionary;
		CHECK(!strcmp(dict->string_table[0], ""));
		CHECK(dict->n_stack_table == 2 && dict->stack_table[0]->n_location_indices == 0);
		CHECK(dict->stack_table[1]->n_location_indices == 2);
		CHECK(dict->n_location_table == 3 && dict->location_table[0]->address == 0);
		/* leaf first: frame 2, then frame 1 */
		CHECK(dict->location_table[dict->stack_table[1]->location_indices[0]]->address ==
		      0x400020);
		CHECK(dict->n_attribute_table == 3 && dict->attribute_table[0]->value == NULL);
		CHECK(dict->n_link_table == 2 && dict->link_table[0]->trace_id.len == 16);
		if (dict->n_link_table == 2) {
			struct otlp_stream s;
			struct sp_record h = header(1000000);
			uint8_t tid[16], sid[8];

			otlp_stream_init(&s, &o);
			otlp_stream_header(&s, &h.header);
			otlp_trace_id(&s, 1, tid);
			otlp_span_id(&s, 1, sid);
			CHECK(dict->link_table[1]->trace_id.len == 16 &&
			      !memcmp(dict->link_table[1]->trace_id.data, tid, 16));
			CHECK(dict->link_table[1]->span_id.len == 8 &&
			      !memcmp(dict->link_table[1]->span_id.data, sid, 8));
			otlp_stream_release(&s);
		}
		prof = req->resource_profiles[0]->scope_profiles[0]->profiles[0];
		CHECK(prof->n_samples == 2 && prof->period == 1000);
		CHECK(prof->samples[0]->link_index == 0 && prof->samples[1]->link_index == 1);
		CHECK(!strcmp(dict->string_table[prof->sample_type->type_strindex], "cpu"));
		for (i = 0; i < prof->n_samples; i++)
			total += prof->samples[i]->values[0];
		CHECK(total == 3000);
		CHECK(prof->profile_id.len == 16);
	}
	if (req)
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(req, NULL);
	free(buf);
	sp_otlp_profiles_free(p);
	sp_defs_free(d);
}

int main(void)
{
	TAP_RUN(test_otlp_ids);
	TAP_RUN(test_otlp_text);
	TAP_RUN(test_otlp_batches);
	TAP_RUN(test_otlp_open_span_end);
	TAP_RUN(test_otlp_json_empty);
	TAP_RUN(test_otlp_profiles);
	return TAP_DONE();
}
