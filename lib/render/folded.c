// SPDX-License-Identifier: MIT
/*
 * Stack aggregation for flame graphs (flame.h): samples are counted by
 * (prefix context, stack trie node); a distinct stack's frames are named
 * once, the first time a sample uses it (folded_frames.c), and every name
 * is interned once. Nothing is kept per sample except, when asked, runs of
 * equal consecutive stacks for the time-ordered views. This file holds the
 * aggregate and takes the records in; foldedP.h says which file
 * does the rest.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "foldedP.h"
#include "stackquality.h"
#include "sp.h"

/* Stacks at least this deep, unwound by frame pointers, hit perf's default
 * limit (kernel.perf_event_max_stack). */
#define SP_FLAME_DEPTH_LIMIT	127

#define BR_TRUNC	(1u << 0)

#define BR_NOMAP	(1u << 1)

#define BR_SINGLE	(1u << 2)

#define BR_UNWIND	(1u << 3)

struct name_key {
	const char *s;
	size_t len;
	unsigned int kind;
	const char *file;	/* keep_source: "" for none */
	size_t file_len;
};

static bool name_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_folded *f = ctx;
	const struct name_key *k = key;
	const struct fname *n = &f->names[id - 1];

	return n->len == k->len && !memcmp(f->arena + n->off, k->s, k->len) &&
	       n->file_len == k->file_len && !memcmp(f->arena + n->file_off, k->file, k->file_len);
}

/* A name's identity is its spelling (and with keep_source its file); its
 * kind is that of its first use. */
static uint32_t intern(struct sp_folded *f, const char *s, size_t len, unsigned int kind,
		       const char *file)
{
	size_t flen = strlen(file);
	struct name_key k = { s, len, kind, file, flen };
	uint64_t h = sp_hash_bytes(s, len);
	uint32_t id;
	struct fname *n;

	if (flen)
		h = sp_hash_mix(h, sp_hash_bytes(file, flen));
	id = sp_idset_find(&f->name_idx, h, &k, name_eq, f);
	if (id)
		return id - 1;
	sp_grow(&f->arena, &f->arena_cap, f->arena_len + len + flen + 2, 1);
	memcpy(f->arena + f->arena_len, s, len);
	f->arena[f->arena_len + len] = '\0';
	sp_grow(&f->names, &f->names_cap, f->nnames + 1, sizeof(*f->names));
	n = &f->names[f->nnames];
	n->off = f->arena_len;
	n->len = len;
	n->kind = kind;
	n->file_off = n->file_len = n->line = n->col = 0;
	f->arena_len += len + 1;
	if (flen) {
		memcpy(f->arena + f->arena_len, file, flen + 1);
		n->file_off = f->arena_len;
		n->file_len = flen;
		f->arena_len += flen + 1;
	}
	sp_idset_add(&f->name_idx, h, f->nnames + 1);
	return f->nnames++;
}

uint32_t sp_folded_intern(struct sp_folded *f, const char *s, size_t len, unsigned int kind)
{
	return intern(f, s, len, kind, "");
}

uint32_t sp_folded_intern_src(struct sp_folded *f, const char *s, unsigned int kind,
			      const char *file)
{
	return intern(f, s, strlen(s), kind, f->o.keep_source ? file : "");
}

uint32_t sp_folded_internz(struct sp_folded *f, const char *s, unsigned int kind)
{
	return sp_folded_intern(f, s, strlen(s), kind);
}

const char *sp_folded_name(const struct sp_folded *f, uint32_t id, unsigned int *kind)
{
	if (id == 0 || id >= f->nnames) {
		if (kind)
			*kind = SP_FN_UNKNOWN;
		return "";
	}
	if (kind)
		*kind = f->names[id].kind;
	return f->arena + f->names[id].off;
}

uint32_t sp_folded_nnames(const struct sp_folded *f)
{
	return f->nnames;
}

void sp_folded_note_line(struct sp_folded *f, uint32_t id, uint64_t line, uint64_t col)
{
	struct fname *n;

	if (!id || id >= f->nnames || !line || line > UINT32_MAX)
		return;
	n = &f->names[id];
	if (!n->line || line < n->line) {
		n->line = line;
		n->col = col <= UINT32_MAX ? col : 0;
	}
}

const char *sp_folded_name_source(const struct sp_folded *f, uint32_t id, unsigned int *line,
				  unsigned int *col)
{
	const struct fname *n = id && id < f->nnames ? &f->names[id] : NULL;

	*line = n && n->file_len ? n->line : 0;
	*col = n && n->file_len ? n->col : 0;
	return n && n->file_len ? f->arena + n->file_off : "";
}

static bool node_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_folded *f = ctx;
	const struct node_key *k = key;

	return f->nodes[id - 1].parent == k->parent && f->nodes[id - 1].name == k->name;
}

uint32_t sp_folded_child(struct sp_folded *f, uint32_t parent, uint32_t name)
{
	struct node_key k = { parent, name };
	uint64_t h = sp_hash_mix(parent, name);
	uint32_t id = sp_idset_find(&f->node_idx, h, &k, node_eq, f);

	if (id)
		return id - 1;
	sp_grow(&f->nodes, &f->nodes_cap, f->nnodes + 1, sizeof(*f->nodes));
	f->nodes[f->nnodes].parent = parent;
	f->nodes[f->nnodes].name = name;
	sp_idset_add(&f->node_idx, h, f->nnodes + 1);
	return f->nnodes++;
}

unsigned int sp_folded_node_path(const struct sp_folded *f, uint32_t node, uint32_t *buf,
				 unsigned int max)
{
	unsigned int depth = 0, i;
	uint32_t n;

	for (n = node; n; n = f->nodes[n].parent)
		depth++;
	i = depth;
	for (n = node; n; n = f->nodes[n].parent) {
		i--;
		if (i < max)
			buf[i] = f->nodes[n].name;
	}
	return depth;
}

struct sp_folded *sp_folded_new(const struct sp_flame_opts *o)
{
	struct sp_folded *f = sp_xcalloc(1, sizeof(*f));

	f->o = *o;
	f->period_ns = 1;
	sp_folded_intern(f, "", 0, SP_FN_UNKNOWN);	/* name 0: none */
	f->nodes = sp_xcalloc(1, sizeof(*f->nodes));	/* node 0: the root */
	f->nodes_cap = 1;
	f->nnodes = 1;
	sp_grow(&f->ctxs, &f->ctxs_cap, 1, sizeof(*f->ctxs));	/* ctx 0: no prefix */
	memset(f->ctxs, 0, sizeof(*f->ctxs));
	f->nctxs = 1;
	f->nostack_name = sp_folded_internz(f, "[no stack]", SP_FN_NOSTACK);
	f->stackq = sp_stackq_new();
	return f;
}

static void free_who(struct who *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(w[i].name);
		free(w[i].container);
	}
	free(w);
}

void sp_folded_free(struct sp_folded *f)
{
	if (!f)
		return;
	sp_stackq_free(f->stackq);
	free(f->names);
	free(f->arena);
	sp_idset_release(&f->name_idx);
	free(f->nodes);
	sp_idset_release(&f->node_idx);
	free(f->fc);
	free(f->fpool);
	free(f->sc);
	free(f->fbuf);
	free(f->ctxs);
	sp_idset_release(&f->ctx_idx);
	free(f->aggs);
	sp_idset_release(&f->agg_idx);
	free(f->seq);
	free_who(f->procs, f->nprocs);
	free_who(f->threads, f->nthreads);
	sp_idset_release(&f->proc_idx);
	sp_idset_release(&f->thread_idx);
	free(f->spans);
	free(f->fibers);
	sp_idset_release(&f->span_idx);
	free(f);
}

void sp_folded_set_column(struct sp_folded *f, unsigned int col)
{
	f->col = col ? 1 : 0;
}

const struct sp_flame_stats *sp_folded_stats(const struct sp_folded *f)
{
	return &f->st;
}

const char *sp_folded_describe(const struct sp_folded *f)
{
	return f->describe;
}

uint64_t sp_folded_period_ns(const struct sp_folded *f)
{
	return f->period_ns;
}

enum sp_flame_weight sp_folded_weight(const struct sp_folded *f)
{
	return f->o.weight;
}

static bool who_eq(void *ctx, uint32_t id, const void *key)
{
	const struct who *w = ctx;

	return w[id - 1].id == *(const uint64_t *)key;
}

static struct who *who_find(struct who *w, const struct sp_idset *idx, uint64_t id)
{
	uint32_t i = sp_idset_find(idx, sp_hash_u64(id), &id, who_eq, w);

	return i ? &w[i - 1] : NULL;
}

static void who_set(struct who **w, size_t *n, size_t *cap, struct sp_idset *idx, uint64_t id,
		    uint64_t pid, const char *name)
{
	struct who *x = who_find(*w, idx, id);

	if (!x) {
		sp_grow(w, cap, *n + 1, sizeof(**w));
		x = &(*w)[*n];
		x->id = id;
		x->gen = 0;
		x->label = 0;
		x->name = NULL;
		x->container = NULL;
		sp_idset_add(idx, sp_hash_u64(id), *n + 1);
		(*n)++;
	}
	x->pid = pid;
	if (name && *name && (!x->name || strcmp(x->name, name))) {
		free(x->name);
		x->name = sp_xstrdup(name);
		x->gen++;	/* samples from now on are under the new name */
		x->label = 0;
	}
}

/* A process's container label for --by=container: what sp-tree shows
 * ("podman:3f1c2a9b0d4e"), "host" for a process the identity of which
 * names none, "?" for one without identity. */
static void set_container(struct sp_folded *f, const struct sp_defs *d,
			  const struct sp_process *p)
{
	struct who *x = who_find(f->procs, &f->proc_idx, p->pid);
	const char *rt = sp_defs_strz(d, p->runtime), *id = sp_defs_strz(d, p->container);
	char buf[300];

	if (!x)
		return;
	if (rt && *rt && id && *id)
		snprintf(buf, sizeof(buf), "%s:%.*s", rt, strlen(id) == 64 ? 12 : 255, id);
	else if (p->start_boot_ns)
		snprintf(buf, sizeof(buf), "host");
	else if (x->container)
		return;		/* an exec without identity: the last known */
	else
		snprintf(buf, sizeof(buf), "?");
	free(x->container);
	x->container = sp_xstrdup(buf);
}

const char *sp_folded_thread_name(const struct sp_folded *f, uint64_t tid)
{
	struct who *w = who_find(f->threads, &f->thread_idx, tid);

	return w && w->name ? w->name : "";
}

const char *sp_folded_comm(const struct sp_folded *f, uint64_t pid)
{
	struct who *w = who_find(f->procs, &f->proc_idx, pid);

	return w && w->name ? w->name : "";
}

struct span_key {
	uint32_t gen;
	uint64_t id;
};

static bool span_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_flame_span *s = ctx;
	const struct span_key *k = key;

	return s[id - 1].gen == k->gen && s[id - 1].id == k->id;
}

const struct sp_flame_span *sp_folded_span_find(const struct sp_folded *f, uint32_t gen, uint64_t id)
{
	struct span_key k = { gen, id };
	uint32_t i = sp_idset_find(&f->span_idx, sp_hash_mix(gen, id), &k, span_eq, f->spans);

	return i ? &f->spans[i - 1] : NULL;
}

static void add_span(struct sp_folded *f, const struct sp_defs *d, const struct sp_span *s)
{
	const char *klass = sp_defs_strz(d, s->klass), *method = sp_defs_strz(d, s->method);
	uint64_t id = sp_defs_span_id(d, s);
	const struct sp_flame_span *up;
	struct sp_flame_span *x;
	uint32_t depth = 1;
	char buf[512];

	if (*klass && *method)
		sp_span_name(buf, sizeof(buf), s->runtime, klass, method);
	else if (*method || *klass)
		snprintf(buf, sizeof(buf), "%s", *method ? method : klass);
	else if (s->end == SP_END_SYNTHETIC)
		snprintf(buf, sizeof(buf), "%s", SP_GAP_SPAN_NAME);	/* sp-correlate's gap, as in sp-tree */
	else
		snprintf(buf, sizeof(buf), "span-%" PRIu64, id);
	if (sp_folded_span_find(f, f->gen, id))
		return;
	/* parents come first (the stream's rule), so a depth is one lookup */
	if (s->parent && (up = sp_folded_span_find(f, f->gen, s->parent)))
		depth = up->depth < UINT32_MAX ? up->depth + 1 : UINT32_MAX;
	sp_grow(&f->spans, &f->spans_cap, f->nspans + 1, sizeof(*f->spans));
	x = &f->spans[f->nspans];
	x->gen = f->gen;
	x->name = sp_folded_internz(f, buf, SP_FN_SPAN);
	x->id = id;
	x->parent = s->parent;
	x->pid = s->pid;
	x->tid = s->tid;
	x->start = s->start;
	x->stop = s->stop;
	x->depth = depth;
	x->coro = s->coro;
	x->suspended = s->flags & SP_SPAN_SUSPENDED;
	sp_idset_add(&f->span_idx, sp_hash_mix(f->gen, id), f->nspans + 1);
	f->nspans++;
}

static void add_fiber(struct sp_folded *f, const struct sp_fiber_switch *fs)
{
	sp_grow(&f->fibers, &f->fibers_cap, f->nfibers + 1, sizeof(*f->fibers));
	f->fibers[f->nfibers++] = (struct sp_flame_fiber){ .gen = f->gen, .pid = fs->pid,
		.tid = fs->tid, .time = fs->time, .to = fs->to,
		.fresh = fs->flags & SP_FIBER_NEW };
}

size_t sp_folded_nfibers(const struct sp_folded *f)
{
	return f->nfibers;
}

const struct sp_flame_fiber *sp_folded_fiber(const struct sp_folded *f, size_t i)
{
	return i < f->nfibers ? &f->fibers[i] : NULL;
}

size_t sp_folded_nspans(const struct sp_folded *f)
{
	return f->nspans;
}

const struct sp_flame_span *sp_folded_span(const struct sp_folded *f, size_t i)
{
	return i < f->nspans ? &f->spans[i] : NULL;
}

/* An sp_bytes header field as a C string (at most len - 1 bytes). */
static const char *hdr_str(const struct sp_bytes *b, char *buf, size_t len)
{
	size_t n = b->len < len - 1 ? b->len : len - 1;

	if (n)
		memcpy(buf, b->p, n);
	buf[n] = '\0';
	return buf;
}

static void take_header(struct sp_folded *f, const struct sp_defs *d, const struct sp_header *h)
{
	char ev[64], cmd[200], host[80], kern[80];
	char when[64] = "", rate[64] = "";
	time_t t;
	struct tm tm;

	f->gen++;
	f->symbolized = h->flags & SP_HDR_SYMBOLIZED;
	/* Ids start again: the caches by frame and stack id are stale. */
	if (f->fc)
		memset(f->fc, 0, f->fc_cap * sizeof(*f->fc));
	if (f->sc)
		memset(f->sc, 0, f->sc_cap * sizeof(*f->sc));
	if (f->have_header)
		return;
	f->have_header = true;
	f->unwound = h->call_graph == SP_CG_DWARF || h->call_graph == SP_CG_AUTO;
	if (f->stackq)
		sp_stackq_set_header(f->stackq, h, d);
	hdr_str(&h->event, ev, sizeof(ev));
	hdr_str(&h->command, cmd, sizeof(cmd));
	hdr_str(&h->hostname, host, sizeof(host));
	hdr_str(&h->kernel, kern, sizeof(kern));
	if (h->start_mono_ns) {
		f->start_mono = h->start_mono_ns;
		f->have_start = true;
	}
	if (h->sample_freq)
		f->period_ns = 1000000000ull / h->sample_freq;
	else if (h->sample_period && (!strcmp(ev, "cpu-clock") || !strcmp(ev, "task-clock")))
		f->period_ns = h->sample_period;
	if (h->sample_freq)
		snprintf(rate, sizeof(rate), " at %" PRIu64 " Hz", h->sample_freq);
	else if (h->sample_period)
		snprintf(rate, sizeof(rate), " every %" PRIu64, h->sample_period);
	if (h->start_wall_ns) {
		t = h->start_wall_ns / 1000000000ull;
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), ", %Y-%m-%d %H:%M:%S UTC", &tm);
	}
	/* A long command line is cut: say so. */
	if (snprintf(f->describe, sizeof(f->describe), "%s%s%s%s%s%s%s%s%s%s",
		     *ev ? ev : "samples", rate, *cmd ? ": " : "", cmd, *host ? " on " : "", host,
		     *kern ? " (Linux " : "", kern, *kern ? ")" : "", when) >=
	    (int)sizeof(f->describe))
		memcpy(f->describe + sizeof(f->describe) - 4, "...", 4);
}

static bool ctx_eq(void *cx, uint32_t id, const void *key)
{
	const struct ctx *a = &((const struct ctx *)cx)[id - 1], *b = key;

	return a->gen == b->gen && a->pid == b->pid && a->tid == b->tid && a->span == b->span &&
	       a->cname == b->cname && a->pname == b->pname && a->tname == b->tname;
}

/* A process's label, "comm-pid", with the name it has now (cached). */
static uint32_t proc_label(struct sp_folded *f, uint64_t pid)
{
	struct who *w = who_find(f->procs, &f->proc_idx, pid);
	char buf[600];
	uint32_t id;

	if (w && w->label)
		return w->label;
	snprintf(buf, sizeof(buf), "%s-%" PRIu64, w && w->name ? w->name : "?", pid);
	id = sp_folded_internz(f, buf, SP_FN_PROCESS);
	if (w)
		w->label = id;
	return id;
}

/* A thread's label, "name-tid", its command's name when it has none. */
static uint32_t thread_label(struct sp_folded *f, uint64_t pid, uint64_t tid)
{
	struct who *t = who_find(f->threads, &f->thread_idx, tid);
	struct who *p = who_find(f->procs, &f->proc_idx, pid);
	uint32_t pgen = p ? p->gen : 0, id;
	const char *name = t && t->name ? t->name : p && p->name ? p->name : "?";
	char buf[600];

	if (t && t->label && (t->name || t->label_pgen == pgen))
		return t->label;
	snprintf(buf, sizeof(buf), "%s-%" PRIu64, name, tid);
	id = sp_folded_internz(f, buf, SP_FN_THREAD);
	if (t) {
		t->label = id;
		t->label_pgen = pgen;
	}
	return id;
}

/*
 * The context of a sample: its labels (--by), the names its process and
 * thread have at the sample, so that an exec or a rename starts another
 * (and a name had again is the same one).
 */
static uint32_t get_ctx(struct sp_folded *f, const struct sp_sample *s)
{
	struct ctx k = { 0 };
	uint32_t id;
	uint64_t h;
	struct ctx *c;

	if (!f->o.by)
		return 0;
	if (f->o.by & SP_FLAME_BY_PROCESS) {
		k.pid = s->pid + 1;
		k.pname = proc_label(f, s->pid);
	}
	if (f->o.by & SP_FLAME_BY_THREAD) {
		k.tid = s->tid + 1;
		k.tname = thread_label(f, s->pid, s->tid);
	}
	if ((f->o.by & SP_FLAME_BY_SPAN) && s->span) {
		k.span = s->span;
		k.gen = f->gen;
	}
	if (f->o.by & SP_FLAME_BY_CONTAINER) {
		struct who *w = who_find(f->procs, &f->proc_idx, s->pid);

		k.cname = sp_folded_internz(f, w && w->container ? w->container : "?",
					    SP_FN_PROCESS);
	}
	h = sp_hash_mix(sp_hash_mix(sp_hash_mix(sp_hash_u64(k.gen), k.pid), k.tid), k.span);
	h = sp_hash_mix(sp_hash_mix(h, k.cname), (uint64_t)k.pname << 32 | k.tname);
	id = sp_idset_find(&f->ctx_idx, h, &k, ctx_eq, f->ctxs);
	if (id)
		return id - 1;
	if (k.span) {
		const struct sp_flame_span *sp = sp_folded_span_find(f, k.gen, k.span);

		k.cut = sp && sp->depth > SPAN_DEPTH_MAX;
	}
	sp_grow(&f->ctxs, &f->ctxs_cap, f->nctxs + 1, sizeof(*f->ctxs));
	c = &f->ctxs[f->nctxs];
	*c = k;
	sp_idset_add(&f->ctx_idx, h, f->nctxs + 1);
	return f->nctxs++;
}

static bool agg_eq(void *cx, uint32_t id, const void *key)
{
	const struct agg *a = &((const struct agg *)cx)[id - 1], *b = key;

	return a->ctx == b->ctx && a->node == b->node;
}

void sp_folded_count(struct sp_folded *f, uint32_t ctx, uint32_t node, uint64_t w)
{
	struct agg k = { ctx, node, { 0, 0 } };
	uint64_t h = sp_hash_mix(ctx, node);
	uint32_t id = sp_idset_find(&f->agg_idx, h, &k, agg_eq, f->aggs);

	if (!id) {
		sp_grow(&f->aggs, &f->aggs_cap, f->naggs + 1, sizeof(*f->aggs));
		f->aggs[f->naggs] = k;
		id = ++f->naggs;
		sp_idset_add(&f->agg_idx, h, id);
	}
	f->aggs[id - 1].w[f->col] += w;
}

static bool in_list(const uint64_t *v, unsigned int n, uint64_t x)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static bool wanted(struct sp_folded *f, const struct sp_sample *s)
{
	uint64_t rel;
	unsigned int i;

	if (s->kind != (f->o.off_cpu ? SP_SAMPLE_OFFCPU : SP_SAMPLE_CPU))
		return false;
	if (f->o.npids && !in_list(f->o.pids, f->o.npids, s->pid))
		return false;
	if (f->o.ntids && !in_list(f->o.tids, f->o.ntids, s->tid))
		return false;
	if (f->o.ncomms) {
		const char *comm = sp_folded_comm(f, s->pid);

		for (i = 0; i < f->o.ncomms; i++)
			if (!strcmp(comm, f->o.comms[i]))
				break;
		if (i == f->o.ncomms)
			return false;
	}
	if (!f->have_start) {
		f->start_mono = s->time;
		f->have_start = true;
	}
	rel = s->time > f->start_mono ? s->time - f->start_mono : 0;
	if (rel < f->o.since || (f->o.until && rel >= f->o.until))
		return false;
	return true;
}

static int add_sample(struct sp_folded *f, const struct sp_defs *d, const struct sp_sample *s,
		      const char **why)
{
	const struct scache *sc;
	uint32_t node, broken = 0, ctx;
	struct sp_flame_run *r;
	uint64_t w;

	if (!wanted(f, s)) {
		f->st.filtered++;
		return SP_FOLDED_IGNORED;
	}
	if (s->stack) {
		if (sp_folded_resolve_stack(f, d, s->stack, &sc) < 0) {
			f->st.undefined++;
			if (why)
				*why = "sample refers to an undefined stack";
			return SP_FOLDED_BAD;
		}
		node = sp_folded_leaf_node(f, d, s->stack, sc->node1 - 1);
		if (!node)
			node = sp_folded_child(f, 0, f->nostack_name);
		if (sc->flags & SC_NOMAP)
			broken |= BR_NOMAP;
		if (sc->nuser == 1)
			broken |= BR_SINGLE;
		/* Stacks this deep, unwound by frame pointers, hit perf's limit,
		 * unless the unwinder says they were not cut. */
		if (sp_defs_stack_depth(d, s->stack) >= SP_FLAME_DEPTH_LIMIT &&
		    (s->unwind == SP_UNWIND_UNKNOWN || s->unwind == SP_UNWIND_DEPTH))
			broken |= BR_TRUNC;
		if (sc->flags & SC_CUT)
			broken |= BR_TRUNC;	/* cut here, whatever the unwinder says */
	} else {
		node = sp_folded_child(f, 0, f->nostack_name);
		f->st.no_stack++;
		f->st.broken++;
	}
	switch (s->unwind) {
	case SP_UNWIND_DEPTH:
		broken |= BR_TRUNC;
		break;
	case SP_UNWIND_UNKNOWN_MAP:
		broken |= BR_NOMAP;
		break;
	case SP_UNWIND_STACK_SIZE:
	case SP_UNWIND_NO_CFI:
	case SP_UNWIND_JIT:
	case SP_UNWIND_ERROR:
		broken |= BR_UNWIND;
		break;
	}
	if (f->stackq)
		sp_stackq_add_sample(f->stackq, d, s);
	/* Each broken sample is counted once, under its most telling cause. */
	if (s->stack && broken) {
		f->st.broken++;
		if (broken & BR_TRUNC)
			f->st.truncated++;
		else if (broken & BR_NOMAP)
			f->st.unknown_map++;
		else if (broken & BR_UNWIND)
			f->st.bad_unwind++;
		else
			f->st.single_user++;
	}
	if (f->o.weight == SP_FLAME_W_TIME)
		w = s->kind == SP_SAMPLE_OFFCPU ? s->weight : (s->weight ? s->weight : 1) * f->period_ns;
	else
		w = 1;
	ctx = get_ctx(f, s);
	sp_folded_count(f, ctx, node, w);
	if (f->ctxs[ctx].cut)
		f->st.span_cut++;
	if (!f->st.samples[0] && !f->st.samples[1])
		f->st.first_time = s->time;
	if (s->time > f->st.last_time)
		f->st.last_time = s->time;
	if (s->time < f->st.first_time)
		f->st.first_time = s->time;
	f->st.samples[f->col]++;
	f->st.weight[f->col] += w;
	if (f->o.keep_sequence && f->col == 0) {
		r = f->nseq ? &f->seq[f->nseq - 1] : NULL;
		if (r && r->node == node && r->ctx == ctx && r->tid == s->tid && r->pid == s->pid) {
			r->weight += w;
		} else {
			sp_grow(&f->seq, &f->seq_cap, f->nseq + 1, sizeof(*f->seq));
			r = &f->seq[f->nseq++];
			r->node = node;
			r->ctx = ctx;
			r->pid = s->pid;
			r->tid = s->tid;
			r->weight = w;
			r->time = s->time;
		}
	}
	return SP_FOLDED_TAKEN;
}

int sp_folded_add(struct sp_folded *f, const struct sp_defs *d, const struct sp_record *rec,
		  const char **why)
{
	switch (rec->kind) {
	case SP_REC_SAMPLE:
		return add_sample(f, d, &rec->sample, why);
	case SP_REC_HEADER:
		take_header(f, d, &rec->header);
		break;
	case SP_REC_PROCESS:
		who_set(&f->procs, &f->nprocs, &f->procs_cap, &f->proc_idx, rec->process.pid,
			rec->process.pid, sp_defs_strz(d, rec->process.comm));
		if (f->o.by & SP_FLAME_BY_CONTAINER)
			set_container(f, d, &rec->process);
		break;
	case SP_REC_THREAD:
		who_set(&f->threads, &f->nthreads, &f->threads_cap, &f->thread_idx,
			rec->thread.tid, rec->thread.pid, sp_defs_strz(d, rec->thread.name));
		break;
	case SP_REC_SPAN:
		if ((f->o.by & SP_FLAME_BY_SPAN) || f->o.keep_spans)
			add_span(f, d, &rec->span);
		break;
	case SP_REC_FIBER_SWITCH:
		if ((f->o.by & SP_FLAME_BY_SPAN) || f->o.keep_spans)
			add_fiber(f, &rec->fiber_switch);
		break;
	default:
		break;
	}
	return SP_FOLDED_IGNORED;
}

void sp_folded_footer(const struct sp_folded *f, char *buf, size_t len)
{
	const struct sp_flame_stats *s = &f->st;
	uint64_t total = s->samples[0] + s->samples[1];
	const struct {
		uint64_t n;
		const char *what;
	} cause[] = {
		{ s->truncated, "truncated at the depth limit" },
		{ s->unknown_map, "ending in an unknown mapping" },
		{ s->single_user, "with a single user frame" },
		{ s->bad_unwind, "where the unwinder gave up" },
		{ s->no_stack, "without a stack" },
	};
	struct sp_stackq_cause c;
	const char *hint;
	size_t o, i;
	bool first = true;

	if (!len)
		return;
	buf[0] = '\0';
	if (!total)
		return;
	if (s->samples[1])
		o = snprintf(buf, len, "%" PRIu64 " + %" PRIu64 " samples (base + new), %.1f%% with "
			     "a broken-looking stack", s->samples[0], s->samples[1],
			     100.0 * s->broken / total);
	else
		o = snprintf(buf, len, "%" PRIu64 " samples, %.1f%% with a broken-looking stack",
			     total, 100.0 * s->broken / total);
	for (i = 0; i < sizeof(cause) / sizeof(cause[0]) && o < len; i++) {
		if (!cause[i].n)
			continue;
		o += snprintf(buf + o, len - o, "%s%" PRIu64 " %s", first ? " (" : ", ", cause[i].n,
			      cause[i].what);
		first = false;
	}
	if (!first && o < len)
		o += snprintf(buf + o, len - o, ")");
	if (s->broken && o < len) {
		/* The words sp-record's own summary uses for the same stacks:
		 * stacks unwound by DWARF have their causes, and telling to
		 * record with --call-graph=auto what was so recorded is no hint */
		if (f->unwound && f->stackq && !sp_stackq_cause(f->stackq, 0, &c))
			hint = c.hint;
		else if (!f->unwound &&
			 s->single_user + s->unknown_map >= s->truncated + s->bad_unwind)
			hint = "record with sp-record's default --call-graph=auto (DWARF unwinding, "
			       "frame pointers where a binary has no CFI)";
		else if (s->truncated && s->truncated >= s->bad_unwind)
			hint = "raise the stack depth limit (sysctl kernel.perf_event_max_stack)";
		else if (f->stackq && !sp_stackq_cause(f->stackq, 0, &c))
			hint = c.hint;
		else
			hint = "see the causes sp-decode --stats gives";
		o += snprintf(buf + o, len - o, "; hint: %s", hint);
	}
	if (f->stackq && o < len) {
		struct sp_stackq_summary qs;

		/* Shown whole, complete or not: say which stacks are guesses. */
		sp_stackq_summary(f->stackq, &qs);
		if (qs.fp_guess)
			o += snprintf(buf + o, len - o, "; %" PRIu64 " stack%s left a frame "
				      "without CFI through its frame pointer (may skip frames)",
				      qs.fp_guess, qs.fp_guess == 1 ? "" : "s");
	}
	if (s->unresolved_frames && o < len)
		o += snprintf(buf + o, len - o, "; %" PRIu64 " frame%s unresolved (%s)",
			      s->unresolved_frames, s->unresolved_frames == 1 ? "" : "s",
			      f->symbolized ? "sp-symbolize found no symbol for them" :
			      "run sp-symbolize first");
	if (s->span_cut && o < len)
		snprintf(buf + o, len - o, "; %" PRIu64 " sample%s under more than %u spans: "
			 "the outermost left out", s->span_cut, s->span_cut == 1 ? "" : "s",
			 SPAN_DEPTH_MAX);
}
