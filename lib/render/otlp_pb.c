// SPDX-License-Identifier: MIT
/*
 * OTLP/protobuf: a batch of the model (otlpP.h) as an
 * ExportTraceServiceRequest, the message a collector takes on POST
 * /v1/traces with Content-Type application/x-protobuf (or, through
 * otlp_json.c, its entries in OTLP/JSON). The messages are
 * OpenTelemetry's own (third_party/opentelemetry-proto, v1.11.0), compiled
 * by protoc-c and packed by libprotobuf-c.
 */
#include <stdlib.h>
#include <string.h>

#include "otlpP.h"
#include "sp.h"

/*
 * The generated code is compiled here rather than as sources of their own,
 * as pprof.c does with profile.proto: every build of the library carries it
 * (otlp_profiles.c uses the profiles' part through otlp_pb.h).
 */
#include "opentelemetry/proto/common/v1/common.pb-c.c"
#include "opentelemetry/proto/resource/v1/resource.pb-c.c"
#include "opentelemetry/proto/trace/v1/trace.pb-c.c"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.c"
#include "opentelemetry/proto/profiles/v1development/profiles.pb-c.c"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.c"
#include "otlp_pb.h"

typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Trace__V1__ResourceSpans ResourceSpans;
typedef Opentelemetry__Proto__Trace__V1__ScopeSpans ScopeSpans;
typedef Opentelemetry__Proto__Trace__V1__Span Span;
typedef Opentelemetry__Proto__Trace__V1__Span__Event Event;
typedef Opentelemetry__Proto__Trace__V1__Status Status;
typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest Request;

KeyValue **otlp_pb_kvs(struct otlp_kv_pool *p, const struct otlp_attr *a, size_t n)
{
	KeyValue **first = p->ptr + p->n;
	size_t i;

	for (i = 0; i < n; i++, p->n++) {
		KeyValue *kv = &p->kv[p->n];
		AnyValue *av = &p->av[p->n];

		opentelemetry__proto__common__v1__key_value__init(kv);
		opentelemetry__proto__common__v1__any_value__init(av);
		kv->key = (char *)a[i].key;
		kv->value = av;
		if (a[i].type == OTLP_STR) {
			av->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			av->string_value = (char *)a[i].s;
		} else {
			av->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
			av->int_value = a[i].i;
		}
		p->ptr[p->n] = kv;
	}
	return first;
}

void otlp_pb_pool_init(struct otlp_kv_pool *p, size_t n)
{
	p->kv = sp_xcalloc(n + 1, sizeof(*p->kv));
	p->av = sp_xcalloc(n + 1, sizeof(*p->av));
	p->ptr = sp_xcalloc(n + 1, sizeof(*p->ptr));
	p->n = 0;
}

void otlp_pb_pool_release(struct otlp_kv_pool *p)
{
	free(p->kv);
	free(p->av);
	free(p->ptr);
}

static void span_msg(Span *m, Status *st, const struct otlp_span *s, const struct otlp_batch *b,
		     const struct otlp_view *v, struct otlp_kv_pool *p, Event *ev, Event **evp)
{
	uint32_t i;

	opentelemetry__proto__trace__v1__span__init(m);
	opentelemetry__proto__trace__v1__status__init(st);
	m->trace_id = (ProtobufCBinaryData){ 16, (uint8_t *)s->trace_id };
	m->span_id = (ProtobufCBinaryData){ 8, (uint8_t *)s->span_id };
	if (s->has_parent)
		m->parent_span_id = (ProtobufCBinaryData){ 8, (uint8_t *)s->parent_id };
	m->name = (char *)s->name;
	m->kind = OPENTELEMETRY__PROTO__TRACE__V1__SPAN__SPAN_KIND__SPAN_KIND_INTERNAL;
	m->start_time_unix_nano = s->start;
	m->end_time_unix_nano = s->end;
	m->n_attributes = s->nattrs;
	m->attributes = otlp_pb_kvs(p, b->attrs.a + s->attr_off, s->nattrs);
	if (s->status == OTLP_STATUS_ERROR) {
		st->code = OPENTELEMETRY__PROTO__TRACE__V1__STATUS__STATUS_CODE__STATUS_CODE_ERROR;
		st->message = (char *)s->status_msg;
		m->status = st;
	}
	m->n_events = s->nevents;
	m->events = evp;
	for (i = 0; i < s->nevents; i++) {
		const struct otlp_event *e = &b->ev[v->ev_order[s->event_off + i]];

		opentelemetry__proto__trace__v1__span__event__init(&ev[i]);
		ev[i].time_unix_nano = e->time;
		ev[i].name = (char *)e->name;
		ev[i].n_attributes = e->nattrs;
		ev[i].attributes = otlp_pb_kvs(p, b->attrs.a + e->attr_off, e->nattrs);
		evp[i] = &ev[i];
	}
}

static int pack(FILE *out, const Request *req)
{
	size_t len = opentelemetry__proto__collector__trace__v1__export_trace_service_request__get_packed_size(req);
	uint8_t *buf = sp_xmalloc(len + 1);
	int rc = 0;

	opentelemetry__proto__collector__trace__v1__export_trace_service_request__pack(req, buf);
	if (len && fwrite(buf, 1, len, out) != len)
		rc = -1;
	free(buf);
	return rc;
}

/* The request's resource_spans as entries of a JSON array. */
static int json_entries(FILE *out, const Request *req, bool *first)
{
	size_t i;

	for (i = 0; i < req->n_resource_spans; i++) {
		fputs(*first ? "\n" : ",\n", out);
		*first = false;
		if (otlp_json_message(out, &req->resource_spans[i]->base) < 0)
			return -1;
	}
	return 0;
}

int otlp_pb_traces(FILE *out, const struct otlp_stream *s, const struct otlp_batch *b,
		   const struct otlp_view *v, bool json, bool *first)
{
	Request req = OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_SERVICE_REQUEST__INIT;
	Scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	size_t g, i, nkv = b->attrs.n, k = 0;
	ResourceSpans *rs, **rsp;
	ScopeSpans *ss, **ssp;
	Resource *res;
	Span *sp, **spp;
	Status *st;
	Event *ev, **evp;
	struct otlp_kv_pool p;
	int rc;

	for (g = 0; g < v->ngroups; g++)
		nkv += s->res[v->group[g].resource].attrs.n;
	otlp_pb_pool_init(&p, nkv);
	rs = sp_xcalloc(v->ngroups + 1, sizeof(*rs));
	rsp = sp_xcalloc(v->ngroups + 1, sizeof(*rsp));
	ss = sp_xcalloc(v->ngroups + 1, sizeof(*ss));
	ssp = sp_xcalloc(v->ngroups + 1, sizeof(*ssp));
	res = sp_xcalloc(v->ngroups + 1, sizeof(*res));
	sp = sp_xcalloc(b->nspans + 1, sizeof(*sp));
	spp = sp_xcalloc(b->nspans + 1, sizeof(*spp));
	st = sp_xcalloc(b->nspans + 1, sizeof(*st));
	ev = sp_xcalloc(b->nev + 1, sizeof(*ev));
	evp = sp_xcalloc(b->nev + 1, sizeof(*evp));

	scope.name = "stackpulse";
	for (g = 0; g < v->ngroups; g++) {
		const struct otlp_group *gr = &v->group[g];
		const struct otlp_resource *r = &s->res[gr->resource];

		opentelemetry__proto__trace__v1__resource_spans__init(&rs[g]);
		opentelemetry__proto__resource__v1__resource__init(&res[g]);
		opentelemetry__proto__trace__v1__scope_spans__init(&ss[g]);
		res[g].n_attributes = r->attrs.n;
		res[g].attributes = otlp_pb_kvs(&p, r->attrs.a, r->attrs.n);
		rs[g].resource = &res[g];
		rs[g].n_scope_spans = 1;
		rs[g].scope_spans = &ssp[g];
		ssp[g] = &ss[g];
		ss[g].scope = &scope;
		ss[g].n_spans = gr->n;
		ss[g].spans = &spp[gr->first];
		for (i = 0; i < gr->n; i++, k++) {
			const struct otlp_span *o = &b->span[v->span_order[gr->first + i]];

			span_msg(&sp[k], &st[k], o, b, v, &p, ev + o->event_off, evp + o->event_off);
			spp[k] = &sp[k];
		}
		rsp[g] = &rs[g];
	}
	req.n_resource_spans = v->ngroups;
	req.resource_spans = rsp;
	rc = json ? json_entries(out, &req, first) : pack(out, &req);

	otlp_pb_pool_release(&p);
	free(rs);
	free(rsp);
	free(ss);
	free(ssp);
	free(res);
	free(sp);
	free(spp);
	free(st);
	free(ev);
	free(evp);
	return rc;
}
