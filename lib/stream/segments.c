// SPDX-License-Identifier: MIT
/*
 * One recording as a series of self-contained streams (segments.h): each
 * record of the master id space re-encoded with the current stream's ids,
 * and what is live replayed when a stream starts.
 */
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "hashmap.h"
#include "schema.h"
#include "segments.h"

/* Master id -> this stream's id, valid when its generation is the stream's:
 * starting a stream costs nothing however many ids the master has. */
#define GEN_SHIFT 40
#define ID_MASK ((1ull << GEN_SHIFT) - 1)

struct idmap {
	uint64_t *v;
	size_t cap;
};

/* Live records of one kind, found by a key (pid, tid, module id). */
struct live {
	struct sp_record *v;
	size_t n, cap;
	struct sp_u64map idx;	/* key -> position + 1 */
};

struct ksym {
	struct sp_ksym k;	/* master string ids */
	uint64_t gen;		/* the stream that has it */
};

struct sp_segments {
	const struct sp_defs *master;
	struct sp_writer *w;
	uint64_t gen;		/* of the current stream, from 1 */
	uint64_t start;		/* when it started */
	uint64_t last;		/* latest time of a timed record taken */
	uint64_t hdr_bytes, hdr_time;	/* the stream's header: its end, its time */
	uint64_t records;
	struct idmap map[SP_REF_STACK + 1];
	struct live procs, threads, mods, misc;
	struct ksym *ksyms;	/* sorted by address */
	size_t nksyms, ksyms_cap;
	uint64_t *chain;	/* stack walk */
	size_t chain_cap;
};

struct sp_segments *sp_segments_new(const struct sp_defs *master)
{
	struct sp_segments *s = sp_xcalloc(1, sizeof(*s));

	s->master = master;
	return s;
}

static void live_release(struct live *l)
{
	free(l->v);
	sp_u64map_release(&l->idx);
}

void sp_segments_free(struct sp_segments *s)
{
	unsigned int i;

	if (!s)
		return;
	sp_writer_close(s->w);
	for (i = 0; i <= SP_REF_STACK; i++)
		free(s->map[i].v);
	live_release(&s->procs);
	live_release(&s->threads);
	live_release(&s->mods);
	live_release(&s->misc);
	free(s->ksyms);
	free(s->chain);
	free(s);
}

/* ---- the id maps ---- */

static uint64_t map_get(struct sp_segments *s, enum sp_ref ref, uint64_t id)
{
	struct idmap *m = &s->map[ref];

	if (id >= m->cap || m->v[id] >> GEN_SHIFT != s->gen)
		return 0;
	return m->v[id] & ID_MASK;
}

static void map_set(struct sp_segments *s, enum sp_ref ref, uint64_t id, uint64_t to)
{
	struct idmap *m = &s->map[ref];
	size_t old = m->cap;

	if (id >= m->cap) {
		sp_grow(&m->v, &m->cap, id + 1, sizeof(*m->v));
		memset(m->v + old, 0, (m->cap - old) * sizeof(*m->v));
	}
	m->v[id] = s->gen << GEN_SHIFT | to;
}

/* ---- the live set ---- */

static void live_put(struct live *l, uint64_t key, const struct sp_record *rec)
{
	uint64_t *at = sp_u64map_get(&l->idx, key);

	if (at) {
		l->v[*at - 1] = *rec;
		return;
	}
	sp_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = *rec;
	sp_u64map_put(&l->idx, key, l->n);
}

static uint64_t rec_pid(const struct sp_record *r)
{
	switch (r->kind) {
	case SP_REC_PROCESS:
		return r->process.pid;
	case SP_REC_THREAD:
		return r->thread.pid;
	case SP_REC_MODULE:
		return r->module.pid;
	case SP_REC_RUNTIME:
		return r->runtime.pid;
	case SP_REC_PROBE:
		return r->probe.pid;
	case SP_REC_JITSYM:
		return r->jitsym.pid;
	default:
		return 0;
	}
}

static uint64_t rec_key(const struct sp_record *r)
{
	switch (r->kind) {
	case SP_REC_THREAD:
		return r->thread.tid;
	case SP_REC_MODULE:
		return r->module.id;
	default:
		return rec_pid(r);
	}
}

/* Remove position i: the last one takes its place. */
static void live_remove(struct live *l, size_t i)
{
	sp_u64map_del(&l->idx, rec_key(&l->v[i]));
	if (i + 1 < l->n) {
		l->v[i] = l->v[l->n - 1];
		sp_u64map_put(&l->idx, rec_key(&l->v[i]), i + 1);
	}
	l->n--;
}

static void live_del(struct live *l, uint64_t key)
{
	uint64_t *at = sp_u64map_get(&l->idx, key);

	if (at)
		live_remove(l, *at - 1);
}

/* Everything of a process that ended (its pid may come back as another). */
static void live_del_pid(struct live *l, uint64_t pid)
{
	size_t i = 0;

	while (i < l->n) {
		if (rec_pid(&l->v[i]) == pid)
			live_remove(l, i);
		else
			i++;
	}
}

/* The misc table has no key of its own: append, index by position. */
static void misc_add(struct live *l, const struct sp_record *rec)
{
	size_t i;

	/* A probe's later health record replaces the earlier one. */
	for (i = 0; rec->kind == SP_REC_PROBE && i < l->n; i++) {
		if (l->v[i].kind == SP_REC_PROBE && l->v[i].probe.pid == rec->probe.pid &&
		    l->v[i].probe.name == rec->probe.name) {
			l->v[i] = *rec;
			return;
		}
	}
	sp_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = *rec;
}

static void misc_del_pid(struct live *l, uint64_t pid)
{
	size_t i = 0;

	while (i < l->n) {
		if (rec_pid(&l->v[i]) == pid)
			l->v[i] = l->v[--l->n];
		else
			i++;
	}
}

/* ---- kernel symbols ---- */

/* Position of the first symbol above addr (the array is kept sorted:
 * insertion costs a move, lookups a binary search). */
static size_t ksym_upper(const struct sp_segments *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nksyms, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->ksyms[mid].k.addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ksym_add(struct sp_segments *s, const struct sp_ksym *k)
{
	size_t at = ksym_upper(s, k->addr);

	if (at && s->ksyms[at - 1].k.addr == k->addr)
		return;
	sp_grow(&s->ksyms, &s->ksyms_cap, s->nksyms + 1, sizeof(*s->ksyms));
	memmove(s->ksyms + at + 1, s->ksyms + at, (s->nksyms - at) * sizeof(*s->ksyms));
	s->ksyms[at].k = *k;
	s->ksyms[at].gen = 0;
	s->nksyms++;
}

/* The symbol holding addr: the last at or below it, within its size. */
static struct ksym *ksym_find(struct sp_segments *s, uint64_t addr)
{
	size_t at = ksym_upper(s, addr);
	struct ksym *k;

	if (!at)
		return NULL;
	k = &s->ksyms[at - 1];
	return !k->k.size || addr - k->k.addr < k->k.size ? k : NULL;
}

/* ---- translation ---- */

static uint64_t tr_str(struct sp_segments *s, uint64_t id)
{
	const char *p;
	size_t len;
	uint64_t to;

	if (!id)
		return 0;
	to = map_get(s, SP_REF_STRING, id);
	if (to)
		return to;
	p = sp_defs_str(s->master, id, &len);
	if (!p)
		return 0;
	to = sp_writer_str(s->w, p, len);
	if (to)
		map_set(s, SP_REF_STRING, id, to);
	return to;
}

static uint64_t tr_module(struct sp_segments *s, uint64_t id)
{
	const struct sp_module *m;
	struct sp_record r = { .kind = SP_REC_MODULE };
	uint64_t to;

	if (!id)
		return 0;
	to = map_get(s, SP_REF_MODULE, id);
	if (to || !(m = sp_defs_module(s->master, id)))
		return to;
	r.module = *m;
	r.module.id = 0;
	r.module.path = tr_str(s, m->path);
	if ((m->path && !r.module.path) || sp_writer_put(s->w, &r))
		return 0;
	to = sp_defs_nmodules(sp_writer_defs(s->w));
	map_set(s, SP_REF_MODULE, id, to);
	return to;
}

/* A kernel frame's symbol goes before the frame (docs/spool.md). */
static void ksym_before(struct sp_segments *s, uint64_t addr)
{
	struct sp_record r = { .kind = SP_REC_KSYM };
	struct ksym *k = ksym_find(s, addr);

	if (!k || k->gen == s->gen)
		return;
	k->gen = s->gen;
	r.ksym = k->k;
	r.ksym.name = tr_str(s, k->k.name);
	r.ksym.kmod = tr_str(s, k->k.kmod);
	sp_writer_put(s->w, &r);
}

static uint64_t tr_frame(struct sp_segments *s, uint64_t id)
{
	const struct sp_frame *mf;
	struct sp_frame f;
	uint64_t to;

	if (!id)
		return 0;
	to = map_get(s, SP_REF_FRAME, id);
	if (to || !(mf = sp_defs_frame(s->master, id)))
		return to;
	f = *mf;
	f.module = tr_module(s, mf->module);
	if (f.mode == SP_FRAME_KERNEL)
		ksym_before(s, f.addr);
	to = sp_writer_frame(s->w, &f);
	if (to)
		map_set(s, SP_REF_FRAME, id, to);
	return to;
}

/* Walk up to the first caller this stream has, then define down from it:
 * no recursion, the walk bounded by the master's stack depth limit. */
static uint64_t tr_stack(struct sp_segments *s, uint64_t id)
{
	const struct sp_stack *st;
	uint64_t cur = id, parent = 0, frame;
	size_t n = 0;

	while (cur && !(parent = map_get(s, SP_REF_STACK, cur))) {
		st = sp_defs_stack(s->master, cur);
		if (!st || n > SP_MAX_STACK_DEPTH)
			return 0;
		sp_grow(&s->chain, &s->chain_cap, n + 1, sizeof(*s->chain));
		s->chain[n++] = cur;
		cur = st->parent;
	}
	while (n--) {
		st = sp_defs_stack(s->master, s->chain[n]);
		frame = tr_frame(s, st->frame);
		if (!frame || !(parent = sp_writer_stack(s->w, parent, frame)))
			return 0;
		map_set(s, SP_REF_STACK, s->chain[n], parent);
	}
	return parent;
}

static uint64_t tr_ref(struct sp_segments *s, enum sp_ref ref, uint64_t id)
{
	switch (ref) {
	case SP_REF_STRING:
		return tr_str(s, id);
	case SP_REF_MODULE:
		return tr_module(s, id);
	case SP_REF_FRAME:
		return tr_frame(s, id);
	case SP_REF_STACK:
		return tr_stack(s, id);
	default:
		return id;
	}
}

/* rec with this stream's ids, and written; a replayed record says when
 * the stream started (readers take a stream's records in time order), its
 * own time when later. */
static int put_translated(struct sp_segments *s, const struct sp_record *rec, bool replayed)
{
	const struct sp_schema *sch = sp_schema(rec->kind);
	const struct sp_event_schema *es;
	struct sp_record out = *rec;
	uint64_t *u;
	unsigned int i;

	for (i = 0; sch && i < sch->nfields; i++) {
		const struct sp_schema_field *f = &sch->fields[i];

		if (!f->ref)
			continue;
		u = sp_field_u64(&out.header, f);
		if (*u && !(*u = tr_ref(s, f->ref, *u)))
			return -1;
	}
	if (rec->kind == SP_REC_EVENT && (es = sp_event_schema(rec->event.kind))) {
		for (i = 0; i < rec->event.nfields && i < es->nfields; i++)
			if (es->fields[i].type == SP_FT_STR && out.event.field[i].u &&
			    !(out.event.field[i].u = tr_str(s, out.event.field[i].u)))
				return -1;
			else if (es->fields[i].type == SP_FT_STACK && out.event.field[i].u &&
				 !(out.event.field[i].u = tr_ref(s, SP_REF_STACK,
								 out.event.field[i].u)))
				return -1;
	}
	if (replayed && out.process.time < s->start) {
		/* process, thread, runtime, probe: time is their first field */
		if (rec->kind == SP_REC_PROCESS || rec->kind == SP_REC_THREAD ||
		    rec->kind == SP_REC_RUNTIME || rec->kind == SP_REC_PROBE)
			out.process.time = s->start;
	}
	return sp_writer_put(s->w, &out);
}

/* ---- streams ---- */

static int replay(struct sp_segments *s)
{
	struct live *tables[] = { &s->procs, &s->threads, &s->misc };
	unsigned int t;
	size_t i;

	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (i = 0; i < tables[t]->n; i++)
			if (put_translated(s, &tables[t]->v[i], true))
				return -1;
	for (i = 0; i < s->mods.n; i++)
		if (!tr_module(s, s->mods.v[i].module.id))
			return -1;
	return 0;
}

int sp_segments_start(struct sp_segments *s, int fd, const char *name, uint64_t n,
		      uint64_t now)
{
	const struct sp_header *h = sp_defs_header(s->master);
	struct sp_record rec = { .kind = SP_REC_HEADER };

	if (sp_segments_close(s))
		return -1;
	s->w = sp_writer_new(fd, name, SP_FORMAT_SPOOL);
	s->gen++;
	s->records = 0;
	/* Records still held in the caller's time-ordered merge may be older
	 * than now: the stream starts after the last one written. */
	s->start = s->last && s->last < now ? s->last : now;
	now = s->start;
	if (!h)
		return 0;
	rec.header = *h;
	rec.header.segment = n;
	/* The stream starts now, which the header maps to the wall clock. */
	if (now > h->start_mono_ns) {
		rec.header.start_wall_ns += now - h->start_mono_ns;
		rec.header.start_mono_ns = now;
	}
	if (sp_writer_put(s->w, &rec))
		return -1;
	s->hdr_bytes = sp_writer_bytes(s->w);
	s->hdr_time = rec.header.start_mono_ns;
	return replay(s);
}

/* Keep what a later stream must replay; forget what ended. */
static void track(struct sp_segments *s, const struct sp_record *rec)
{
	switch (rec->kind) {
	case SP_REC_PROCESS:
		live_put(&s->procs, rec->process.pid, rec);
		break;
	case SP_REC_THREAD:
		live_put(&s->threads, rec->thread.tid, rec);
		break;
	case SP_REC_MODULE: {
		struct sp_record m = { .kind = SP_REC_MODULE };

		/* The definition itself is the master's: keep its id and pid. */
		m.module.id = sp_defs_nmodules(s->master);
		m.module.pid = rec->module.pid;
		live_put(&s->mods, m.module.id, &m);
		break;
	}
	case SP_REC_RUNTIME:
	case SP_REC_PROBE:
	case SP_REC_JITSYM:
		misc_add(&s->misc, rec);
		break;
	case SP_REC_KSYM:
		ksym_add(s, &rec->ksym);
		break;
	case SP_REC_PROCESS_END:
		/* An exec ends the image, not the process: its new definition
		 * comes next and replaces it; its threads stay until they end. */
		if (!(rec->process_end.flags & SP_PEND_EXEC)) {
			live_del(&s->procs, rec->process_end.pid);
			live_del_pid(&s->threads, rec->process_end.pid);
		}
		live_del_pid(&s->mods, rec->process_end.pid);
		misc_del_pid(&s->misc, rec->process_end.pid);
		break;
	case SP_REC_THREAD_END:
		live_del(&s->threads, rec->thread_end.tid);
		break;
	case SP_REC_MODULE_END:
		live_del(&s->mods, rec->module_end.module);
		break;
	default:
		break;
	}
}

int sp_segments_put(struct sp_segments *s, const struct sp_record *rec)
{
	if (rec->kind == SP_REC_HEADER)
		return 0;	/* each stream writes its own */
	track(s, rec);
	if (!s->w)
		return 0;
	switch (rec->kind) {
	case SP_REC_STRING:
	case SP_REC_FRAME:
	case SP_REC_STACK:
	case SP_REC_KSYM:
		return 0;	/* defined when a record of this stream uses them */
	case SP_REC_MODULE:
		return tr_module(s, sp_defs_nmodules(s->master)) ? 0 : -1;
	case SP_REC_PROCESS:
	case SP_REC_THREAD:
	case SP_REC_RUNTIME:
	case SP_REC_PROBE:
	case SP_REC_JITSYM:
	case SP_REC_SYMBOL:
	case SP_REC_SPAN:
		break;
	default:
		/* every timed kind has its time first */
		if (rec->process.time > s->last)
			s->last = rec->process.time;
		s->records++;
		break;
	}
	return put_translated(s, rec, false);
}

struct sp_writer *sp_segments_writer(struct sp_segments *s)
{
	return s->w;
}

uint64_t sp_segments_records(const struct sp_segments *s)
{
	return s->records;
}

uint64_t sp_segments_header_end(const struct sp_segments *s, uint64_t *time)
{
	*time = s->hdr_time;
	return s->hdr_bytes;
}

int sp_segments_close(struct sp_segments *s)
{
	int rc = sp_writer_close(s->w);

	s->w = NULL;
	return rc;
}
