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
	enum sp_format format;	/* of the streams' writers */
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
	/* Symbol records of master frames (interpreted frames carry their
	 * names this way): written after the frame in every stream. */
	struct sp_symbol *syms;
	size_t nsyms, syms_cap;
	struct sp_u64map sym_of;	/* master frame id -> first << 8 | count */

	/* a compaction under way (sp_segments_compact_begin()) */
	struct sp_defs *old;		/* the master's definitions before it */
	struct sp_defs *wmaster;	/* the master, writable */
	uint64_t *remap[SP_REF_STACK + 1];	/* old id -> new, 0 not yet */
	size_t remap_n[SP_REF_STACK + 1];
	struct idmap nmap[SP_REF_STACK + 1];	/* this stream's ids by new master id */
	struct sp_segments_stats stats;
};

struct sp_segments *sp_segments_new(const struct sp_defs *master)
{
	struct sp_segments *s = sp_xcalloc(1, sizeof(*s));

	s->master = master;
	s->format = SP_FORMAT_SPOOL;
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
	sp_segments_compact_end(s);
	for (i = 0; i <= SP_REF_STACK; i++)
		free(s->map[i].v);
	live_release(&s->procs);
	live_release(&s->threads);
	live_release(&s->mods);
	live_release(&s->misc);
	free(s->ksyms);
	free(s->chain);
	free(s->syms);
	sp_u64map_release(&s->sym_of);
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

static void idmap_put(struct idmap *m, uint64_t id, uint64_t v)
{
	size_t old = m->cap;

	if (id >= m->cap) {
		sp_grow(&m->v, &m->cap, id + 1, sizeof(*m->v));
		memset(m->v + old, 0, (m->cap - old) * sizeof(*m->v));
	}
	m->v[id] = v;
}

static void map_set(struct sp_segments *s, enum sp_ref ref, uint64_t id, uint64_t to)
{
	idmap_put(&s->map[ref], id, s->gen << GEN_SHIFT | to);
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

/* ---- symbols of frames ---- */

/* A chain is consecutive records of one frame; a new index 0 starts it again. */
static void sym_add(struct sp_segments *s, const struct sp_symbol *sym)
{
	uint64_t *at = sp_u64map_get(&s->sym_of, sym->frame);

	if (at && sym->index && (*at >> 8) + (*at & 0xff) == s->nsyms) {
		if ((*at & 0xff) < SP_MAX_INLINE_DEPTH) {
			sp_grow(&s->syms, &s->syms_cap, s->nsyms + 1, sizeof(*s->syms));
			s->syms[s->nsyms++] = *sym;
			(*at)++;
		}
		return;
	}
	sp_grow(&s->syms, &s->syms_cap, s->nsyms + 1, sizeof(*s->syms));
	s->syms[s->nsyms] = *sym;
	sp_u64map_put(&s->sym_of, sym->frame, (uint64_t)s->nsyms << 8 | 1);
	s->nsyms++;
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

/* The symbols of master frame id, after its definition to in this stream. */
static int tr_symbols(struct sp_segments *s, uint64_t id, uint64_t to)
{
	struct sp_record r = { .kind = SP_REC_SYMBOL };
	uint64_t *at = sp_u64map_get(&s->sym_of, id), i;

	for (i = 0; at && i < (*at & 0xff); i++) {
		r.symbol = s->syms[(*at >> 8) + i];
		r.symbol.frame = to;
		r.symbol.func = tr_str(s, r.symbol.func);
		r.symbol.file = tr_str(s, r.symbol.file);
		if (sp_writer_put(s->w, &r))
			return -1;
	}
	return 0;
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
	/* a return address is named by the call before it (as sp-record and
	 * sp-symbolize look it up): at the end of a function, the next one's */
	if (f.mode == SP_FRAME_KERNEL)
		ksym_before(s, (f.flags & SP_FRAME_LEAF) || !f.addr ? f.addr : f.addr - 1);
	to = sp_writer_frame(s->w, &f);
	if (to)
		map_set(s, SP_REF_FRAME, id, to);
	if (to && tr_symbols(s, id, to))
		return 0;
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

typedef uint64_t (*ref_fn)(struct sp_segments *s, enum sp_ref ref, uint64_t id);

/* Every reference of rec through fn, in place. 0, or -1 when one did not
 * resolve. */
static int map_refs(struct sp_segments *s, struct sp_record *rec, ref_fn fn)
{
	const struct sp_schema *sch = sp_schema(rec->kind);
	const struct sp_event_schema *es;
	uint64_t *u;
	unsigned int i;

	for (i = 0; sch && i < sch->nfields; i++) {
		const struct sp_schema_field *f = &sch->fields[i];

		if (!f->ref)
			continue;
		u = sp_field_u64(&rec->header, f);
		if (*u && !(*u = fn(s, f->ref, *u)))
			return -1;
	}
	if (rec->kind == SP_REC_EVENT && (es = sp_event_schema(rec->event.kind))) {
		for (i = 0; i < rec->event.nfields && i < es->nfields; i++)
			if (es->fields[i].type == SP_FT_STR && rec->event.field[i].u &&
			    !(rec->event.field[i].u = fn(s, SP_REF_STRING, rec->event.field[i].u)))
				return -1;
			else if (es->fields[i].type == SP_FT_STACK && rec->event.field[i].u &&
				 !(rec->event.field[i].u = fn(s, SP_REF_STACK, rec->event.field[i].u)))
				return -1;
	}
	return 0;
}

/* rec with this stream's ids, and written; a replayed record says when
 * the stream started (readers take a stream's records in time order), its
 * own time when later. */
static int put_translated(struct sp_segments *s, const struct sp_record *rec, bool replayed)
{
	struct sp_record out = *rec;

	if (map_refs(s, &out, tr_ref))
		return -1;
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

void sp_segments_set_format(struct sp_segments *s, enum sp_format format)
{
	s->format = format;
}

int sp_segments_start(struct sp_segments *s, int fd, const char *name, uint64_t n,
		      uint64_t now)
{
	const struct sp_header *h = sp_defs_header(s->master);
	struct sp_record rec = { .kind = SP_REC_HEADER };

	if (sp_segments_close(s))
		return -1;
	s->w = sp_writer_new(fd, name, s->format);
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
	case SP_REC_SYMBOL:
		sym_add(s, &rec->symbol);
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
	case SP_REC_SYMBOL:
		/* A frame not yet in this stream: defined now, with its symbols. */
		if (!map_get(s, SP_REF_FRAME, rec->symbol.frame))
			return tr_frame(s, rec->symbol.frame) ? 0 : -1;
		break;
	case SP_REC_PROCESS:
	case SP_REC_THREAD:
	case SP_REC_RUNTIME:
	case SP_REC_PROBE:
	case SP_REC_JITSYM:
	case SP_REC_SPAN:
		break;
	default:
		if (sp_record_time(rec) > s->last)
			s->last = sp_record_time(rec);
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

/* ---- compaction of the master ---- */

/*
 * An old master id defined again in the new master (once: remembered),
 * and this stream's id of it carried over, so that the stream does not
 * define it a second time.
 */
static uint64_t cp_defined(struct sp_segments *s, enum sp_ref ref, uint64_t old,
			   const struct sp_record *r)
{
	const char *why;
	uint64_t id, to;

	if (sp_defs_add(s->wmaster, r, &why))
		return 0;
	switch (ref) {
	case SP_REF_STRING:
		id = sp_defs_nstrings(s->wmaster);
		break;
	case SP_REF_MODULE:
		id = sp_defs_nmodules(s->wmaster);
		break;
	case SP_REF_FRAME:
		id = sp_defs_nframes(s->wmaster);
		break;
	default:
		id = sp_defs_nstacks(s->wmaster);
		break;
	}
	s->remap[ref][old] = id;
	to = map_get(s, ref, old);
	if (to)
		idmap_put(&s->nmap[ref], id, s->gen << GEN_SHIFT | to);
	return id;
}

static bool cp_known(const struct sp_segments *s, enum sp_ref ref, uint64_t old)
{
	return old && old < s->remap_n[ref];
}

static uint64_t cp_str(struct sp_segments *s, uint64_t old)
{
	struct sp_record r = { .kind = SP_REC_STRING };
	const char *p;
	size_t len;

	if (!cp_known(s, SP_REF_STRING, old))
		return 0;
	if (s->remap[SP_REF_STRING][old])
		return s->remap[SP_REF_STRING][old];
	p = sp_defs_str(s->old, old, &len);
	if (!p)
		return 0;
	r.string.value.p = (const uint8_t *)p;
	r.string.value.len = (uint32_t)len;
	return cp_defined(s, SP_REF_STRING, old, &r);
}

static uint64_t cp_module(struct sp_segments *s, uint64_t old)
{
	struct sp_record r = { .kind = SP_REC_MODULE };
	const struct sp_module *m;

	if (!cp_known(s, SP_REF_MODULE, old))
		return 0;
	if (s->remap[SP_REF_MODULE][old])
		return s->remap[SP_REF_MODULE][old];
	m = sp_defs_module(s->old, old);
	if (!m)
		return 0;
	r.module = *m;
	r.module.id = 0;
	r.module.path = cp_str(s, m->path);
	if (m->path && !r.module.path)
		return 0;
	return cp_defined(s, SP_REF_MODULE, old, &r);
}

static uint64_t cp_frame(struct sp_segments *s, uint64_t old)
{
	struct sp_record r = { .kind = SP_REC_FRAME };
	const struct sp_frame *f;

	if (!cp_known(s, SP_REF_FRAME, old))
		return 0;
	if (s->remap[SP_REF_FRAME][old])
		return s->remap[SP_REF_FRAME][old];
	f = sp_defs_frame(s->old, old);
	if (!f)
		return 0;
	r.frame = *f;
	r.frame.id = 0;
	r.frame.module = cp_module(s, f->module);
	if (f->module && !r.frame.module)
		return 0;
	return cp_defined(s, SP_REF_FRAME, old, &r);
}

/* As tr_stack(): up to the first caller already moved, then down. */
static uint64_t cp_stack(struct sp_segments *s, uint64_t old)
{
	struct sp_record r = { .kind = SP_REC_STACK };
	const struct sp_stack *st;
	uint64_t cur = old, parent = 0;
	size_t n = 0;

	while (cp_known(s, SP_REF_STACK, cur) && !(parent = s->remap[SP_REF_STACK][cur])) {
		st = sp_defs_stack(s->old, cur);
		if (!st || n > SP_MAX_STACK_DEPTH)
			return 0;
		sp_grow(&s->chain, &s->chain_cap, n + 1, sizeof(*s->chain));
		s->chain[n++] = cur;
		cur = st->parent;
	}
	if (cur && !parent)
		return 0;	/* not an id of the old master */
	while (n--) {
		st = sp_defs_stack(s->old, s->chain[n]);
		r.stack.parent = parent;
		r.stack.frame = cp_frame(s, st->frame);
		if (!r.stack.frame || !(parent = cp_defined(s, SP_REF_STACK, s->chain[n], &r)))
			return 0;
	}
	return parent;
}

uint64_t sp_segments_remap(struct sp_segments *s, unsigned int ref, uint64_t id)
{
	if (!s->old || !id)
		return 0;
	switch (ref) {
	case SP_REF_STRING:
		return cp_str(s, id);
	case SP_REF_MODULE:
		return cp_module(s, id);
	case SP_REF_FRAME:
		return cp_frame(s, id);
	case SP_REF_STACK:
		return cp_stack(s, id);
	default:
		return id;
	}
}

static uint64_t cp_ref(struct sp_segments *s, enum sp_ref ref, uint64_t id)
{
	return sp_segments_remap(s, ref, id);
}

int sp_segments_remap_record(struct sp_segments *s, struct sp_record *rec)
{
	return s->old ? map_refs(s, rec, cp_ref) : 0;
}

static uint64_t defs_size(const struct sp_defs *d)
{
	return sp_defs_nstrings(d) + sp_defs_nmodules(d) + sp_defs_nframes(d) +
	       sp_defs_nstacks(d);
}

uint64_t sp_segments_master_size(const struct sp_segments *s)
{
	return defs_size(s->master);
}

bool sp_segments_compact_due(const struct sp_segments *s)
{
	return sp_segments_master_size(s) > 2 * s->stats.kept + SP_SEGMENTS_COMPACT_MIN;
}

/* The live modules under their new ids (their key). */
static void remap_modules(struct sp_segments *s)
{
	struct live old = s->mods;
	size_t i;

	memset(&s->mods, 0, sizeof(s->mods));
	for (i = 0; i < old.n; i++) {
		struct sp_record m = old.v[i];

		m.module.id = cp_module(s, m.module.id);
		if (m.module.id)
			live_put(&s->mods, m.module.id, &m);
	}
	live_release(&old);
}

int sp_segments_compact_begin(struct sp_segments *s, struct sp_defs *master)
{
	struct live *tables[] = { &s->procs, &s->threads, &s->misc };
	uint64_t before = sp_segments_master_size(s);
	unsigned int t;
	size_t i;

	if (master != s->master || s->old)
		return sp_error("segments: compaction of another id space, or twice");
	if (before > s->stats.peak)
		s->stats.peak = before;
	s->wmaster = master;
	s->old = sp_defs_take(master);
	s->remap_n[SP_REF_STRING] = sp_defs_nstrings(s->old) + 1;
	s->remap_n[SP_REF_MODULE] = sp_defs_nmodules(s->old) + 1;
	s->remap_n[SP_REF_FRAME] = sp_defs_nframes(s->old) + 1;
	s->remap_n[SP_REF_STACK] = sp_defs_nstacks(s->old) + 1;
	for (t = SP_REF_STRING; t <= SP_REF_STACK; t++)
		s->remap[t] = sp_xcalloc(s->remap_n[t], sizeof(*s->remap[t]));
	/* What a later stream replays: processes, threads, runtime, probes
	 * and JIT symbols (the key of each is a pid or tid, not an id). */
	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (i = 0; i < tables[t]->n; i++)
			map_refs(s, &tables[t]->v[i], cp_ref);
	remap_modules(s);
	for (i = 0; i < s->nksyms; i++) {
		s->ksyms[i].k.name = cp_str(s, s->ksyms[i].k.name);
		s->ksyms[i].k.kmod = cp_str(s, s->ksyms[i].k.kmod);
	}
	s->stats.compactions++;
	return 0;
}

/* The symbols of the frames something still refers to, under their new
 * ids; the others go with their frames. */
static void remap_symbols(struct sp_segments *s)
{
	struct sp_symbol *old = s->syms;
	struct sp_u64map old_of = s->sym_of;
	uint64_t frame, v, nf, i;
	size_t it;

	s->syms = NULL;
	s->nsyms = s->syms_cap = 0;
	memset(&s->sym_of, 0, sizeof(s->sym_of));
	for (it = 0; sp_u64map_next(&old_of, &it, &frame, &v);) {
		nf = cp_known(s, SP_REF_FRAME, frame) ? s->remap[SP_REF_FRAME][frame] : 0;
		for (i = 0; nf && i < (v & 0xff); i++) {
			struct sp_symbol sym = old[(v >> 8) + i];

			sym.frame = nf;
			sym.func = cp_str(s, sym.func);
			sym.file = cp_str(s, sym.file);
			sym_add(s, &sym);
		}
	}
	free(old);
	sp_u64map_release(&old_of);
}

void sp_segments_compact_end(struct sp_segments *s)
{
	unsigned int t;

	if (!s->old)
		return;
	remap_symbols(s);
	for (t = 0; t <= SP_REF_STACK; t++) {
		free(s->remap[t]);
		s->remap[t] = NULL;
		s->remap_n[t] = 0;
		free(s->map[t].v);
		s->map[t] = s->nmap[t];
		memset(&s->nmap[t], 0, sizeof(s->nmap[t]));
	}
	s->stats.kept = sp_segments_master_size(s);
	s->stats.dropped += defs_size(s->old) - s->stats.kept;
	sp_defs_free(s->old);
	s->old = NULL;
	s->wmaster = NULL;
}

void sp_segments_stats(const struct sp_segments *s, struct sp_segments_stats *st)
{
	uint64_t now = sp_segments_master_size(s);

	*st = s->stats;
	if (now > st->peak)
		st->peak = now;
	st->procs = s->procs.n;
	st->threads = s->threads.n;
	st->modules = s->mods.n;
}
