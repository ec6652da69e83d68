// SPDX-License-Identifier: MIT
/*
 * Chrome's trace event format (the JSON object form), which Perfetto and
 * chrome://tracing open: written as records arrive, so memory stays
 * constant. Spans of correlated input are complete events ("X"); without
 * them the span_start/span_stop marks become begin/end pairs ("B"/"E").
 * Kernel and runtime events are thread-scoped instant events ("i").
 * Process and thread names are kept (the last one each, for a name that
 * changed at exec or by prctl) and written once per pid and tid at the end.
 * A span is cut to end inside the slice of its thread it starts in
 * (nest_stop()); a Ruby fiber's spans are on a track of their own
 * (track_of()).
 *
 * asyncio tasks and Ruby fibers (lanes.h) become nestable async slices
 * ("b"/"e", one id per lane, category "task" or "fiber"), written at the
 * end: the lane's whole life, with a "running" slice per resume and a
 * "suspended" one per await nested in it. Memory grows with the number of
 * threads, and of lanes and their resumes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "export.h"
#include "flame.h"
#include "hashmap.h"
#include "lanes.h"
#include "sp.h"

/* A process (tid1 0) or a thread (tid1 = tid + 1) and its last name. */
struct cname {
	uint64_t pid, tid1;
	char *name;
};

struct sp_chrome {
	FILE *out;
	bool first;
	bool correlated;	/* spans come as SP_REC_SPAN: ignore the marks */
	bool have_t0;
	uint64_t t0;
	struct cname *names;
	size_t nnames, names_cap;
	struct sp_idset name_idx;
	struct sp_lanes lanes;
	struct sp_u64map nests;	/* hash of pid, tid -> index + 1 of its nest */
	struct nest *nest;
	size_t nnest, capnest;
	struct sp_u64map fibers;	/* hash of pid, tid -> index + 1 of its switches */
	struct fiber_hist *fh;
	size_t nfh, capfh;
	struct sp_u64map tracks;	/* hash of pid, fiber id -> its track */
	uint64_t ntracks;
};

/* A Ruby fiber's spans are drawn on a track of their own, a thread id of
 * this and above (above any tid Linux gives). */
#define FIBER_TRACK_BASE	0x40000000u

/* The switches of a thread: from each time on, the track that ran (0: the
 * thread's root fiber). */
struct fiber_hist {
	struct fiber_at {
		uint64_t time, track;
	} *at;
	size_t n, cap;
};

/* The slices of a thread drawn so far that may hold the next one. */
struct nest {
	struct nest_slice *s;
	size_t n, cap;
};

struct nest_slice {
	uint64_t start, stop;	/* stop UINT64_MAX: open at the end */
};

struct sp_chrome *sp_chrome_new(FILE *out)
{
	struct sp_chrome *c = sp_xcalloc(1, sizeof(*c));

	c->out = out;
	c->first = true;
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"sp-flame\"},"
	      "\"traceEvents\":[", out);
	return c;
}

static void sep(struct sp_chrome *c)
{
	fputs(c->first ? "\n" : ",\n", c->out);
	c->first = false;
}

/* Microseconds since the start, with nanosecond digits. */
static void put_ts(struct sp_chrome *c, const char *key, uint64_t t)
{
	uint64_t rel;

	if (!c->have_t0) {
		c->t0 = t;
		c->have_t0 = true;
	}
	rel = t > c->t0 ? t - c->t0 : 0;
	fprintf(c->out, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, rel / 1000, rel % 1000);
}

static void put_dur(struct sp_chrome *c, uint64_t ns)
{
	fprintf(c->out, ",\"dur\":%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

static void set_name(struct sp_chrome *c, uint64_t pid, uint64_t tid1, const char *name);

static void *slot_of(struct sp_u64map *m, uint64_t k, void *arr, size_t *n, size_t *cap,
		     size_t size)
{
	uint64_t *v = sp_u64map_get(m, k);
	char **a = arr;

	if (!v) {
		sp_grow(a, cap, *n + 1, size);
		memset(*a + *n * size, 0, size);
		sp_u64map_put(m, k, ++*n);
		v = sp_u64map_get(m, k);
	}
	return *a + (*v - 1) * size;
}

/* A fiber switch: its thread runs another track from here. */
static void fiber_switch(struct sp_chrome *c, const struct sp_fiber_switch *fs)
{
	struct fiber_hist *h = slot_of(&c->fibers, sp_hash_mix(sp_hash_u64(fs->pid), fs->tid),
				       &c->fh, &c->nfh, &c->capfh, sizeof(*c->fh));
	uint64_t k = sp_hash_mix(sp_hash_u64(fs->pid), fs->to), *v, track = 0;
	char name[96];

	if (fs->to) {
		v = sp_u64map_get(&c->tracks, k);
		if (v && !(fs->flags & SP_FIBER_NEW)) {
			track = *v;
		} else {
			track = ++c->ntracks;
			sp_u64map_put(&c->tracks, k, track);
			snprintf(name, sizeof(name), "fiber 0x%" PRIx64 " of %" PRIu64, fs->to,
				 fs->tid);
			set_name(c, fs->pid, FIBER_TRACK_BASE + track + 1, name);
		}
	}
	sp_grow(&h->at, &h->cap, h->n + 1, sizeof(*h->at));
	h->at[h->n++] = (struct fiber_at){ fs->time, track };
}

/* The thread id span s is drawn on: its fiber's track when it began while
 * a fiber other than the root ran (switches come before the spans that
 * begin after them), else its thread. */
static uint64_t track_of(struct sp_chrome *c, const struct sp_span *s)
{
	uint64_t *v = sp_u64map_get(&c->fibers, sp_hash_mix(sp_hash_u64(s->pid), s->tid));
	const struct fiber_hist *h;
	size_t lo = 0, hi, mid;

	if (!v)
		return s->tid;
	h = &c->fh[*v - 1];
	for (hi = h->n; lo < hi;) {	/* the first switch after the start */
		mid = lo + (hi - lo) / 2;
		if (h->at[mid].time <= s->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && h->at[lo - 1].track ? FIBER_TRACK_BASE + h->at[lo - 1].track : s->tid;
}

/*
 * Where span s is drawn to (UINT64_MAX: open, a "B" with no end). Viewers
 * want a thread's slices nested, but the spans sp-correlate makes from
 * samples may overlap their siblings, and a Ruby fiber's span outlive the
 * span that resumed it: a span that starts inside a slice of its thread
 * ends with it at the latest (as speedscope's export does). Spans come
 * parents first; one that starts before the slices kept is not inside them.
 * Memory: per thread, the slices open at the last span's start.
 */
static uint64_t nest_stop(struct sp_chrome *c, const struct sp_span *s, uint64_t tid)
{
	struct nest *n = slot_of(&c->nests, sp_hash_mix(sp_hash_u64(s->pid), tid), &c->nest,
				 &c->nnest, &c->capnest, sizeof(*c->nest));
	uint64_t stop = s->stop >= s->start && s->stop ? s->stop : UINT64_MAX;

	while (n->n && (n->s[n->n - 1].stop <= s->start || n->s[n->n - 1].start > s->start))
		n->n--;
	if (n->n && stop > n->s[n->n - 1].stop)
		stop = n->s[n->n - 1].stop;
	sp_grow(&n->s, &n->cap, n->n + 1, sizeof(*n->s));
	n->s[n->n++] = (struct nest_slice){ s->start, stop };
	return stop;
}

static void meta(struct sp_chrome *c, const char *what, uint64_t pid, uint64_t tid,
		 const char *name)
{
	sep(c);
	fprintf(c->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64
		",\"args\":{\"name\":", what, pid, tid);
	sp_flame_json_str(c->out, name);
	fputs("}}", c->out);
}

static bool cname_eq(void *ctx, uint32_t id, const void *key)
{
	const struct cname *a = &((const struct cname *)ctx)[id - 1], *b = key;

	return a->pid == b->pid && a->tid1 == b->tid1;
}

/* Remember the name of a process (tid1 0) or a thread; the last one wins. */
static void set_name(struct sp_chrome *c, uint64_t pid, uint64_t tid1, const char *name)
{
	struct cname k = { pid, tid1, NULL };
	uint64_t h = sp_hash_mix(sp_hash_u64(pid), tid1);
	uint32_t id = sp_idset_find(&c->name_idx, h, &k, cname_eq, c->names);

	if (!id) {
		sp_grow(&c->names, &c->names_cap, c->nnames + 1, sizeof(*c->names));
		c->names[c->nnames] = k;
		id = ++c->nnames;
		sp_idset_add(&c->name_idx, h, id);
	} else if (!*name) {
		return;		/* an empty name does not hide a known one */
	}
	free(c->names[id - 1].name);
	c->names[id - 1].name = sp_xstrdup(name);
}

static void span_name(const struct sp_defs *d, uint64_t runtime, uint64_t klass,
		      uint64_t method, bool gap, char *buf, size_t len)
{
	const char *k = sp_defs_strz(d, klass), *m = sp_defs_strz(d, method);

	if (*k && *m)
		sp_span_name(buf, len, runtime, k, m);
	else
		snprintf(buf, len, "%s", *m ? m : *k ? k : gap ? SP_GAP_SPAN_NAME : "span");
}

static void hex(FILE *out, const struct sp_bytes *b)
{
	uint32_t i;

	putc('"', out);
	for (i = 0; i < b->len; i++)
		fprintf(out, "%02x", b->p[i]);
	putc('"', out);
}

static void event(struct sp_chrome *c, const struct sp_defs *d, const struct sp_event *e)
{
	const struct sp_event_schema *s = sp_event_schema(e->kind);
	char name[32];
	unsigned int i;

	if (!s)
		snprintf(name, sizeof(name), "event-%" PRIu64, e->kind);
	sep(c);
	fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"event\",\"name\":", c->out);
	sp_flame_json_str(c->out, s ? s->name : name);
	fprintf(c->out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, e->pid, e->tid);
	put_ts(c, "ts", e->time);
	fputs(",\"args\":{", c->out);
	for (i = 0; s && i < s->nfields && i < e->nfields; i++) {
		const struct sp_value *v = &e->field[i];

		fprintf(c->out, "%s\"%s\":", i ? "," : "", s->fields[i].name);
		switch (s->fields[i].type) {
		case SP_FT_STR:
			sp_flame_json_str(c->out, sp_defs_strz(d, v->u));
			break;
		case SP_FT_INT:
			fprintf(c->out, "%" PRId64, (int64_t)v->u);
			break;
		case SP_FT_HEX:
			fprintf(c->out, "\"0x%" PRIx64 "\"", v->u);
			break;
		case SP_FT_ADDR:
		case SP_FT_BYTES:
			hex(c->out, &v->b);
			break;
		default:
			fprintf(c->out, "%" PRIu64, v->u);
			break;
		}
	}
	if (e->span)
		fprintf(c->out, "%s\"span\":%" PRIu64, i ? "," : "", e->span);
	fputs("}}", c->out);
}

/* A lane's name, when its first resume comes: its coroutine's (a task). */
static void lane_add(struct sp_chrome *c, const struct sp_defs *d, const struct sp_record *rec)
{
	struct sp_lane *ln = sp_lanes_add(&c->lanes, rec);
	char buf[600], *name;

	if (!ln || ln->nres != 1)
		return;
	span_name(d, ln->runtime, ln->klass, ln->method, false, buf, sizeof(buf));
	if (ln->file && *sp_defs_strz(d, ln->file)) {
		name = sp_xmalloc(strlen(buf) + strlen(sp_defs_strz(d, ln->file)) + 32);
		sprintf(name, "%s (%s:%" PRIu64 ")", buf, sp_defs_strz(d, ln->file), ln->line);
	} else {
		name = sp_xstrdup(buf);
	}
	ln->name = name;
}

/* One nestable async event of lane ln. */
static void lane_event(struct sp_chrome *c, const struct sp_lane *ln, const char *ph,
		       const char *name, uint64_t ts)
{
	sep(c);
	fprintf(c->out, "{\"ph\":\"%s\",\"cat\":\"%s\",\"id\":\"0x%" PRIx64 "\",\"name\":", ph,
		ln->runtime == SP_RT_RUBY ? "fiber" : "task", ln->seq);
	sp_flame_json_str(c->out, name);
	fprintf(c->out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, ln->pid, ln->tid);
	put_ts(c, "ts", ts);
	fputs("}", c->out);
}

/* Every lane: its life, its resumes ("running") and awaits ("suspended"). */
static void write_lanes(struct sp_chrome *c)
{
	char buf[64];
	size_t i, j;

	sp_lanes_finish(&c->lanes);
	for (i = 0; i < c->lanes.n; i++) {
		const struct sp_lane *ln = c->lanes.lane[i];
		uint64_t end = ln->stop > ln->start ? ln->stop : ln->start;
		const char *name = ln->name ? ln->name : buf;

		snprintf(buf, sizeof(buf), "fiber 0x%" PRIx64, ln->id);
		lane_event(c, ln, "b", name, ln->start);
		for (j = 0; j < ln->nres; j++) {
			const struct sp_lane_resume *r = &ln->res[j];
			uint64_t stop = r->stop ? r->stop : end;

			lane_event(c, ln, "b", "running", r->start);
			lane_event(c, ln, "e", "running", stop);
			if (j + 1 < ln->nres && r->suspended) {
				lane_event(c, ln, "b", "suspended", stop);
				lane_event(c, ln, "e", "suspended", ln->res[j + 1].start);
			}
		}
		lane_event(c, ln, "e", name, end);
	}
	sp_lanes_release(&c->lanes);
}

int sp_chrome_add(struct sp_chrome *c, const struct sp_defs *d, const struct sp_record *rec)
{
	char buf[600];
	const struct sp_span *s;
	const struct sp_span_mark *m;
	uint64_t stop, tid;

	if (rec->kind == SP_REC_SPAN || rec->kind == SP_REC_FIBER_SWITCH ||
	    rec->kind == SP_REC_HEADER)
		lane_add(c, d, rec);
	switch (rec->kind) {
	case SP_REC_HEADER:
		c->correlated = rec->header.flags & SP_HDR_CORRELATED;
		if (!c->have_t0 && rec->header.start_mono_ns) {
			c->t0 = rec->header.start_mono_ns;
			c->have_t0 = true;
		}
		break;
	case SP_REC_PROCESS:
		set_name(c, rec->process.pid, 0, sp_defs_strz(d, rec->process.comm));
		break;
	case SP_REC_THREAD:
		set_name(c, rec->thread.pid, rec->thread.tid + 1, sp_defs_strz(d, rec->thread.name));
		break;
	case SP_REC_SPAN:
		c->correlated = true;
		s = &rec->span;
		span_name(d, s->runtime, s->klass, s->method, s->end == SP_END_SYNTHETIC, buf,
			  sizeof(buf));
		tid = track_of(c, s);
		stop = nest_stop(c, s, tid);
		sep(c);
		fprintf(c->out, "{\"ph\":\"%s\",\"cat\":\"span\",\"name\":",
			stop != UINT64_MAX ? "X" : "B");
		sp_flame_json_str(c->out, buf);
		fprintf(c->out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, s->pid, tid);
		put_ts(c, "ts", s->start);
		if (stop != UINT64_MAX)
			put_dur(c, stop - s->start);
		fputs(",\"args\":{\"file\":", c->out);
		sp_flame_json_str(c->out, sp_defs_strz(d, s->file));
		fprintf(c->out, ",\"line\":%" PRIu64 ",\"span\":%" PRIu64, s->line,
			sp_defs_span_id(d, s));
		if (s->error) {
			fputs(",\"error\":", c->out);
			sp_flame_json_str(c->out, sp_defs_strz(d, s->error));
		}
		fputs("}}", c->out);
		break;
	case SP_REC_SPAN_START:
	case SP_REC_SPAN_STOP:
		if (c->correlated)
			break;
		m = &rec->mark;
		span_name(d, m->runtime, m->klass, m->method, false, buf, sizeof(buf));
		sep(c);
		fprintf(c->out, "{\"ph\":\"%s\",\"cat\":\"span\",\"name\":",
			rec->kind == SP_REC_SPAN_START ? "B" : "E");
		sp_flame_json_str(c->out, buf);
		fprintf(c->out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, m->pid, m->tid);
		put_ts(c, "ts", m->time);
		fputs("}", c->out);
		break;
	case SP_REC_EVENT:
		event(c, d, &rec->event);
		break;
	case SP_REC_FIBER_SWITCH:
		fiber_switch(c, &rec->fiber_switch);
		break;
	default:
		break;
	}
	return ferror(c->out) ? -1 : 0;
}

int sp_chrome_finish(struct sp_chrome *c)
{
	size_t i;
	int rc;

	write_lanes(c);
	for (i = 0; i < c->nnames; i++) {
		const struct cname *n = &c->names[i];

		if (n->tid1)
			meta(c, "thread_name", n->pid, n->tid1 - 1, n->name);
		else
			meta(c, "process_name", n->pid, n->pid, n->name);
		free(n->name);
	}
	free(c->names);
	sp_idset_release(&c->name_idx);
	for (i = 0; i < c->nnest; i++)
		free(c->nest[i].s);
	free(c->nest);
	sp_u64map_release(&c->nests);
	for (i = 0; i < c->nfh; i++)
		free(c->fh[i].at);
	free(c->fh);
	sp_u64map_release(&c->fibers);
	sp_u64map_release(&c->tracks);
	fputs("\n]}\n", c->out);
	rc = ferror(c->out) ? -1 : 0;
	free(c);
	return rc;
}
