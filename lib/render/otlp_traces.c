// SPDX-License-Identifier: MIT
/*
 * OTLP traces: the spans of a correlated stream (sp-correlate) and the
 * events they own, in batches of SP_OTLP_BATCH spans, each written as one
 * ExportTraceServiceRequest (otlp_pb.c) or as entries of OTLP/JSON's
 * "resourceSpans" (otlp_json.c).
 *
 * sp-correlate writes a span tree in pre-order, a span's record before the
 * records it owns and before its children, so a span's parent is known
 * when it arrives and its events follow it: a span takes the trace id of
 * its parent (or of the span whose thread forked its process), a root
 * starts a trace of its own. An event whose span went out in an earlier
 * batch (a tree sp-correlate wrote early, --max-held) is counted, not
 * written.
 *
 * A span open over several segments comes as parts (segments.md): the
 * first named and open at its segment's end, then parts sp-correlate
 * opened again unnamed (the names were the ended stream's strings), the
 * last named by its stop. A middle part, open at both ends, has no name
 * of its own: it takes the name its first part had (same pid, tid and
 * start), kept until the part that stops it comes.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "events.h"
#include "otlpP.h"
#include "sp.h"

/* The names of a span part open at its segment's end (carried_name()). */
struct carried {
	uint64_t pid, tid, start;
	char *klass, *method, *file;
};

/* At most this many parts' names, and this many bytes of them, are kept;
 * past them a middle part has the name "span carried over" */
#define SP_OTLP_CARRIED_MAX 65536
#define SP_OTLP_CARRIED_BYTES (16u << 20)
/* A batch's text past this is written out before the next span, however
 * few spans it holds: names a hostile input makes 16 MiB each, told again
 * by every span, must not add up to gigabytes */
#define SP_OTLP_BATCH_TEXT (64u << 20)

struct sp_otlp_traces {
	FILE *out;
	struct sp_u64map carried_at;	/* carried_key() -> carried index + 1 */
	struct carried *carried;
	size_t ncarried, capcarried, carried_bytes;
	bool segmented;			/* the stream's header has a segment number */
	struct sp_otlp_opts opts;
	struct otlp_stream s;
	struct otlp_batch b;
	uint64_t last_time;	/* the latest time seen: open spans end there */
	bool json_first;
	int err;
	struct sp_otlp_stats st;
};

static const char *const runtime_names[] = { "unknown", "ruby", "python", "usdt", "uprobe" };
static const char *const end_names[] = { "stopped", "raised", "open", "incomplete", "synthetic" };
static const char *const rule_names[] = { "none", "thread", "fork", "gap" };

#define NAME_OF(tab, v) ((v) < sizeof(tab) / sizeof(tab[0]) ? tab[v] : "unknown")

struct sp_otlp_traces *sp_otlp_traces_new(FILE *out, const struct sp_otlp_opts *o)
{
	struct sp_otlp_traces *t = sp_xcalloc(1, sizeof(*t));

	t->out = out;
	t->opts = *o;
	otlp_stream_init(&t->s, &t->opts);
	t->json_first = true;
	if (o->json)
		fputs("{\"resourceSpans\":[", out);
	return t;
}

static void batch_reset(struct otlp_batch *b)
{
	b->nspans = b->nev = b->attrs.n = 0;
	sp_arena_reset(&b->text);
	sp_u64map_release(&b->index);
}

/* The batch by resource (in order of their first span), then its events by span. */
static void view_build(struct sp_otlp_traces *t, struct otlp_view *v)
{
	struct otlp_batch *b = &t->b;
	struct sp_u64map gi = SP_U64MAP_INIT;
	size_t i, gcap = 0;
	uint32_t *fill, g, off = 0;
	uint64_t *p;

	memset(v, 0, sizeof(*v));
	for (i = 0; i < b->nspans; i++) {
		p = sp_u64map_get(&gi, b->span[i].resource);
		if (!p) {
			sp_grow(&v->group, &gcap, v->ngroups + 1, sizeof(*v->group));
			v->group[v->ngroups] = (struct otlp_group){ b->span[i].resource, 0, 0 };
			p = sp_u64map_put(&gi, b->span[i].resource, ++v->ngroups);
		}
		v->group[*p - 1].n++;
	}
	for (g = 0; g < v->ngroups; g++) {
		v->group[g].first = off;
		off += v->group[g].n;
		v->group[g].n = 0;
	}
	v->span_order = sp_xcalloc(b->nspans + 1, sizeof(*v->span_order));
	for (i = 0; i < b->nspans; i++) {
		struct otlp_group *gr = &v->group[*sp_u64map_get(&gi, b->span[i].resource) - 1];

		v->span_order[gr->first + gr->n++] = i;
	}
	sp_u64map_release(&gi);

	for (i = 0; i < b->nspans; i++)
		b->span[i].nevents = 0;
	for (i = 0; i < b->nev; i++)
		b->span[b->ev[i].span].nevents++;
	for (i = 0, off = 0; i < b->nspans; i++) {
		b->span[i].event_off = off;
		off += b->span[i].nevents;
	}
	v->ev_order = sp_xcalloc(b->nev + 1, sizeof(*v->ev_order));
	fill = sp_xcalloc(b->nspans + 1, sizeof(*fill));
	for (i = 0; i < b->nev; i++) {
		uint32_t s = b->ev[i].span;

		v->ev_order[b->span[s].event_off + fill[s]++] = i;
	}
	free(fill);
}

static int flush(struct sp_otlp_traces *t)
{
	struct otlp_view v;
	size_t i;
	int rc;

	if (!t->b.nspans)
		return 0;
	for (i = 0; i < t->b.nspans; i++) {
		struct otlp_span *s = &t->b.span[i];

		if (!s->end)	/* still open: until the last thing recorded */
			s->end = otlp_wall(&t->s, t->last_time) > s->start ?
				 otlp_wall(&t->s, t->last_time) : s->start;
	}
	view_build(t, &v);
	rc = otlp_pb_traces(t->out, &t->s, &t->b, &v, t->opts.json, &t->json_first);
	t->st.resources += v.ngroups;
	t->st.spans += t->b.nspans;
	t->st.events += t->b.nev;
	free(v.group);
	free(v.span_order);
	free(v.ev_order);
	batch_reset(&t->b);
	if (rc < 0 && !t->err) {
		t->err = -1;
		sp_error_errno("cannot write the OTLP traces");
	}
	return rc;
}

static uint64_t carried_key(uint64_t pid, uint64_t tid, uint64_t start)
{
	uint64_t h = start * 0x9e3779b97f4a7c15ull;

	h ^= (pid << 32 | (tid & 0xffffffffu)) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	return h;
}

/* The kept names of s's earlier part, or NULL. */
static struct carried *carried_find(struct sp_otlp_traces *t, const struct sp_span *s)
{
	uint64_t *i = sp_u64map_get(&t->carried_at, carried_key(s->pid, s->tid, s->start));
	struct carried *c = i ? &t->carried[*i - 1] : NULL;

	return c && c->pid == s->pid && c->tid == s->tid && c->start == s->start ? c : NULL;
}

static void carried_forget(struct sp_otlp_traces *t, struct carried *c)
{
	size_t i = (size_t)(c - t->carried), last = t->ncarried - 1;

	sp_u64map_del(&t->carried_at, carried_key(c->pid, c->tid, c->start));
	t->carried_bytes -= strlen(c->klass) + strlen(c->method) + strlen(c->file);
	free(c->klass);
	free(c->method);
	free(c->file);
	if (i != last) {
		*c = t->carried[last];
		*sp_u64map_get(&t->carried_at, carried_key(c->pid, c->tid, c->start)) = i + 1;
	}
	t->ncarried--;
}

/*
 * A part of a span that goes on in the next segment: its names are kept
 * (k, m, f) for the parts to come; a part that stops it forgets them; a
 * middle part (unnamed, open) takes them into *k, *m, *f.
 */
static void carried_name(struct sp_otlp_traces *t, const struct sp_span *s, const char **k,
			 const char **m, const char **f)
{
	struct carried *c = carried_find(t, s);
	uint64_t key;
	size_t bytes;

	if (!**k && !**m && c) {
		*k = sp_arena_copy(&t->b.text, c->klass, strlen(c->klass));
		*m = sp_arena_copy(&t->b.text, c->method, strlen(c->method));
		if (!**f)
			*f = sp_arena_copy(&t->b.text, c->file, strlen(c->file));
	}
	if (s->end != SP_END_OPEN) {
		if (c)
			carried_forget(t, c);
		return;
	}
	bytes = strlen(*k) + strlen(*m) + strlen(*f);
	/* kept by its key, which another part's (pid, tid, start) may share:
	 * then not kept (carried_find() checks the fields) */
	key = carried_key(s->pid, s->tid, s->start);
	if (c || (!**k && !**m) || t->ncarried >= SP_OTLP_CARRIED_MAX ||
	    t->carried_bytes + bytes > SP_OTLP_CARRIED_BYTES || sp_u64map_get(&t->carried_at, key))
		return;
	t->carried_bytes += bytes;
	sp_grow(&t->carried, &t->capcarried, t->ncarried + 1, sizeof(*t->carried));
	t->carried[t->ncarried] = (struct carried){ s->pid, s->tid, s->start, sp_xstrdup(*k),
						   sp_xstrdup(*m), sp_xstrdup(*f) };
	sp_u64map_put(&t->carried_at, key, ++t->ncarried);
}

static void carried_release(struct sp_otlp_traces *t)
{
	while (t->ncarried)
		carried_forget(t, &t->carried[t->ncarried - 1]);
	sp_u64map_release(&t->carried_at);
}

static void span_name(struct sp_otlp_traces *t, const struct sp_defs *d, const struct sp_span *s,
		      struct otlp_span *o, const char **file)
{
	const char *k = otlp_strid(&t->b.text, d, s->klass);
	const char *m = otlp_strid(&t->b.text, d, s->method);
	struct sp_buf name = SP_BUF_INIT;
	char whole[1024];

	*file = otlp_strid(&t->b.text, d, s->file);
	if (t->segmented && s->end != SP_END_SYNTHETIC)
		carried_name(t, s, &k, &m, file);
	if (*k && *m) {
		sp_span_name(whole, sizeof(whole), s->runtime, k, m);
		sp_buf_puts(&name, whole);
	} else
		sp_buf_puts(&name, *m ? m : *k ? k : s->end == SP_END_SYNTHETIC ? SP_GAP_SPAN_NAME :
			    t->segmented ? "span carried over" : "span");
	o->name = sp_arena_copy(&t->b.text, sp_buf_str(&name), name.len);
	sp_buf_release(&name);
	if (*m)
		otlp_attr_str(&t->b.attrs, "code.function", m);
	if (*k)
		otlp_attr_str(&t->b.attrs, "code.namespace", k);
}

static void span_attrs(struct sp_otlp_traces *t, const struct sp_defs *d, const struct sp_span *s,
		       uint64_t id, const char *file)
{
	struct otlp_attrs *a = &t->b.attrs;
	uint64_t *tn = sp_u64map_get(&t->s.thread_name, s->tid);

	(void)d;
	if (*file)
		otlp_attr_str(a, "code.filepath", file);
	if (s->line)
		otlp_attr_int(a, "code.lineno", (int64_t)s->line);
	otlp_attr_int(a, "thread.id", (int64_t)s->tid);
	if (tn && *(const char *)(uintptr_t)*tn)
		otlp_attr_str(a, "thread.name", (const char *)(uintptr_t)*tn);
	otlp_attr_str(a, "stackpulse.runtime", NAME_OF(runtime_names, s->runtime));
	otlp_attr_int(a, "stackpulse.span.id", (int64_t)id);
	otlp_attr_str(a, "stackpulse.span.end", NAME_OF(end_names, s->end));
	otlp_attr_int(a, "stackpulse.samples", (int64_t)s->samples);
	otlp_attr_int(a, "stackpulse.total_samples", (int64_t)s->total_samples);
	otlp_attr_int(a, "stackpulse.events", (int64_t)s->events);
	if (s->offcpu_ns)
		otlp_attr_int(a, "stackpulse.offcpu_ns", (int64_t)s->offcpu_ns);
}

static void add_span(struct sp_otlp_traces *t, const struct sp_defs *d, const struct sp_span *s)
{
	uint64_t id, parent, root = otlp_stream_span(&t->s, d, s, &id, &parent);
	struct otlp_span *o;
	const char *file;

	if (t->b.nspans >= SP_OTLP_BATCH || t->b.text.memory >= SP_OTLP_BATCH_TEXT)
		flush(t);
	sp_grow(&t->b.span, &t->b.span_cap, t->b.nspans + 1, sizeof(*t->b.span));
	o = &t->b.span[t->b.nspans];
	memset(o, 0, sizeof(*o));
	otlp_trace_id(&t->s, root, o->trace_id);
	otlp_span_id(&t->s, id, o->span_id);
	if (parent) {
		otlp_span_id(&t->s, parent, o->parent_id);
		o->has_parent = true;
	}
	o->start = otlp_wall(&t->s, s->start);
	o->end = s->stop >= s->start && s->stop ? otlp_wall(&t->s, s->stop) : 0;
	o->resource = otlp_resource_of(&t->s, s->pid);
	o->status_msg = "";
	if (s->end == SP_END_RAISED || s->error) {
		o->status = OTLP_STATUS_ERROR;
		o->status_msg = s->error ? otlp_strid(&t->b.text, d, s->error) : "raised";
	}
	o->attr_off = t->b.attrs.n;
	span_name(t, d, s, o, &file);
	span_attrs(t, d, s, id, file);
	o->nattrs = t->b.attrs.n - o->attr_off;
	sp_u64map_put(&t->b.index, id, ++t->b.nspans);
}

static void hex_text(struct sp_buf *b, const struct sp_bytes *v)
{
	sp_buf_hex(b, v->p, v->len);
}

/* An event field's value as the JSON lines show it: numbers, strings, "0x..". */
static void field_attr(struct sp_otlp_traces *t, const struct sp_defs *d,
		       const struct sp_event_field *f, const struct sp_value *v)
{
	struct sp_buf b = SP_BUF_INIT;
	char a[INET6_ADDRSTRLEN];

	switch (f->type) {
	case SP_FT_STR:
		if (!v->u)
			return;	/* none (JSON lines: null) */
		otlp_attr_str(&t->b.attrs, f->name, otlp_strid(&t->b.text, d, v->u));
		return;
	case SP_FT_INT:
		otlp_attr_int(&t->b.attrs, f->name, (int64_t)v->u);
		return;
	case SP_FT_HEX:
		sp_buf_printf(&b, "0x%" PRIx64, v->u);
		break;
	case SP_FT_ADDR:
		if (otlp_addr_text(&v->b, a, sizeof(a)))
			sp_buf_puts(&b, a);
		else
			hex_text(&b, &v->b);
		break;
	case SP_FT_BYTES:
		hex_text(&b, &v->b);
		break;
	default:
		if (v->u > INT64_MAX) {
			sp_buf_printf(&b, "%" PRIu64, v->u);
			break;
		}
		otlp_attr_int(&t->b.attrs, f->name, (int64_t)v->u);
		return;
	}
	otlp_attr_str(&t->b.attrs, f->name, sp_arena_copy(&t->b.text, sp_buf_str(&b), b.len));
	sp_buf_release(&b);
}

static void add_event(struct sp_otlp_traces *t, const struct sp_defs *d, const struct sp_event *e)
{
	const struct sp_event_schema *sch = sp_event_schema(e->kind);
	uint64_t *idx = e->span ? sp_u64map_get(&t->b.index, e->span) : NULL;
	struct otlp_event *o;
	unsigned int i;

	if (!e->span) {
		t->st.events_unowned++;
		return;
	}
	if (!idx) {
		if (otlp_stream_root(&t->s, e->span))
			t->st.events_late++;
		else
			t->st.events_no_span++;
		return;
	}
	sp_grow(&t->b.ev, &t->b.ev_cap, t->b.nev + 1, sizeof(*t->b.ev));
	o = &t->b.ev[t->b.nev++];
	o->span = *idx - 1;
	o->time = otlp_wall(&t->s, e->time);
	if (sch) {
		o->name = sch->name;
	} else {
		char name[32];

		snprintf(name, sizeof(name), "event-%" PRIu64, e->kind);
		o->name = sp_arena_copy(&t->b.text, name, strlen(name));
	}
	o->attr_off = t->b.attrs.n;
	otlp_attr_int(&t->b.attrs, "process.pid", (int64_t)e->pid);
	otlp_attr_int(&t->b.attrs, "thread.id", (int64_t)e->tid);
	for (i = 0; sch && i < sch->nfields && i < e->nfields; i++)
		field_attr(t, d, &sch->fields[i], &e->field[i]);
	otlp_attr_str(&t->b.attrs, "stackpulse.rule", NAME_OF(rule_names, e->rule));
	o->nattrs = t->b.attrs.n - o->attr_off;
}

static void saw_time(struct sp_otlp_traces *t, uint64_t time)
{
	if (time > t->last_time)
		t->last_time = time;
}

int sp_otlp_traces_add(struct sp_otlp_traces *t, const struct sp_defs *d,
		       const struct sp_record *rec)
{
	switch (rec->kind) {
	case SP_REC_HEADER:
		flush(t);
		otlp_stream_header(&t->s, &rec->header);
		/* a header without a segment number starts another recording:
		 * nothing goes on across it */
		t->segmented = rec->header.segment != 0;
		if (!t->segmented)
			carried_release(t);
		t->last_time = 0;
		break;
	case SP_REC_PROCESS:
	case SP_REC_THREAD:
	case SP_REC_RUNTIME:
		otlp_stream_define(&t->s, d, rec);
		break;
	case SP_REC_SPAN:
		/* a range, which sp_record_time() has no one time for: its
		 * later end (stop is 0 while the span is open) */
		saw_time(t, rec->span.stop > rec->span.start ? rec->span.stop : rec->span.start);
		add_span(t, d, &rec->span);
		break;
	case SP_REC_EVENT:
		saw_time(t, sp_record_time(rec));
		add_event(t, d, &rec->event);
		break;
	case SP_REC_SAMPLE:
	case SP_REC_END:
		saw_time(t, sp_record_time(rec));
		break;
	default:
		/* Open spans end at the last span, event, sample or end
		 * record. The other kinds with a time (definitions and their
		 * ends, marks, fiber switches, lost windows, probe counts) never
		 * moved that end, and do not: they are bookkeeping of what
		 * existed, not work recorded (test-otlp pins it). */
		break;
	}
	return t->err;
}

int sp_otlp_traces_finish(struct sp_otlp_traces *t, struct sp_otlp_stats *st)
{
	int rc;

	flush(t);
	if (t->opts.json)
		fputs("]}\n", t->out);
	if (ferror(t->out) && !t->err)
		t->err = sp_error_errno("cannot write the OTLP traces");
	rc = t->err;
	if (st)
		*st = t->st;
	otlp_stream_release(&t->s);
	carried_release(t);
	free(t->carried);
	batch_reset(&t->b);
	free(t->b.span);
	free(t->b.ev);
	free(t->b.attrs.a);
	sp_arena_release(&t->b.text);
	free(t);
	return rc;
}
