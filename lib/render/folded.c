// SPDX-License-Identifier: MIT
/*
 * Stack aggregation for flame graphs: samples are counted by (prefix
 * context, stack trie node); a distinct stack's frames are named once, the
 * first time a sample uses it, and every name is interned once. Nothing is
 * kept per sample except, when asked, runs of equal consecutive stacks for
 * the time-ordered views.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escape.h"
#include "flame.h"
#include "hashmap.h"
#include "sp.h"

/* Stacks at least this deep, unwound by frame pointers, hit perf's default
 * limit (kernel.perf_event_max_stack). */
#define SP_FLAME_DEPTH_LIMIT	127
/* Spans of a --by=span prefix: the innermost ones of a deeper path. */
#define SPAN_DEPTH_MAX		4096

struct fname {
	uint32_t off, len;
	uint32_t kind;
};

struct tnode {
	uint32_t parent;
	uint32_t name;
};

#define FC_VALID	(1u << 0)
#define FC_USER		(1u << 1)
#define FC_NOMAP	(1u << 2)

struct fcache {
	uint32_t off;		/* in fpool */
	uint16_t n;
	uint16_t flags;
};

#define BR_TRUNC	(1u << 0)
#define BR_NOMAP	(1u << 1)
#define BR_SINGLE	(1u << 2)
#define BR_UNWIND	(1u << 3)

#define SC_NOMAP	(1u << 0)	/* the outermost frame is in no known mapping */
#define SC_CUT		(1u << 1)	/* deeper than SP_MAX_STACK_DEPTH: the outer frames left out */

/* A stack id resolved: its node, and what its parent's resolution gives it. */
struct scache {
	uint32_t node1;		/* node + 1 (1: the root, no names); 0 = not resolved yet */
	uint8_t flags;		/* SC_* */
	uint8_t nuser;		/* user-space frames, 2 for two or more */
};

struct ctx {
	uint32_t gen;
	uint32_t pname, tname;	/* name ids, 0 = none */
	uint64_t pid, tid, span;
	bool cut;		/* the span path is deeper than SPAN_DEPTH_MAX */
};

struct agg {
	uint32_t ctx, node;
	uint64_t w[2];
};

struct who {
	uint64_t id, pid;
	char *name;
};

struct sp_folded {
	struct sp_flame_opts o;
	unsigned int col;
	uint32_t gen;

	struct fname *names;
	size_t nnames, names_cap;
	char *arena;
	size_t arena_len, arena_cap;
	struct sp_idset name_idx;

	struct tnode *nodes;
	size_t nnodes, nodes_cap;
	struct sp_idset node_idx;

	struct fcache *fc;
	size_t fc_cap;
	uint32_t *fpool;
	size_t fpool_len, fpool_cap;
	struct scache *sc;
	size_t sc_cap;
	uint64_t *fbuf;
	size_t fbuf_cap;

	struct ctx *ctxs;
	size_t nctxs, ctxs_cap;
	struct sp_idset ctx_idx;

	struct agg *aggs;
	size_t naggs, aggs_cap;
	struct sp_idset agg_idx;

	struct sp_flame_run *seq;
	size_t nseq, seq_cap;

	struct who *procs, *threads;
	size_t nprocs, procs_cap, nthreads, threads_cap;
	struct sp_idset proc_idx, thread_idx;

	struct sp_flame_span *spans;
	size_t nspans, spans_cap;
	struct sp_idset span_idx;
	uint64_t next_span_id;

	struct sp_flame_stats st;
	bool have_header, have_start;
	bool symbolized;		/* sp-symbolize has run on the stream */
	uint64_t start_mono;
	uint64_t period_ns;
	char describe[512];
	uint32_t nostack_name;
};

/* ---- names ---- */

struct name_key {
	const char *s;
	size_t len;
	unsigned int kind;
};

static bool name_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_folded *f = ctx;
	const struct name_key *k = key;
	const struct fname *n = &f->names[id - 1];

	return n->len == k->len && !memcmp(f->arena + n->off, k->s, k->len);
}

/* A name's identity is its spelling; its kind is that of its first use. */
static uint32_t intern(struct sp_folded *f, const char *s, size_t len, unsigned int kind)
{
	struct name_key k = { s, len, kind };
	uint64_t h = sp_hash_bytes(s, len);
	uint32_t id = sp_idset_find(&f->name_idx, h, &k, name_eq, f);
	struct fname *n;

	if (id)
		return id - 1;
	sp_grow(&f->arena, &f->arena_cap, f->arena_len + len + 1, 1);
	memcpy(f->arena + f->arena_len, s, len);
	f->arena[f->arena_len + len] = '\0';
	sp_grow(&f->names, &f->names_cap, f->nnames + 1, sizeof(*f->names));
	n = &f->names[f->nnames];
	n->off = f->arena_len;
	n->len = len;
	n->kind = kind;
	f->arena_len += len + 1;
	sp_idset_add(&f->name_idx, h, f->nnames + 1);
	return f->nnames++;
}

static uint32_t internz(struct sp_folded *f, const char *s, unsigned int kind)
{
	return intern(f, s, strlen(s), kind);
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

/* ---- the stack trie ---- */

struct node_key {
	uint32_t parent, name;
};

static bool node_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_folded *f = ctx;
	const struct node_key *k = key;

	return f->nodes[id - 1].parent == k->parent && f->nodes[id - 1].name == k->name;
}

static uint32_t child(struct sp_folded *f, uint32_t parent, uint32_t name)
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

/* ---- lifetime ---- */

struct sp_folded *sp_folded_new(const struct sp_flame_opts *o)
{
	struct sp_folded *f = sp_xcalloc(1, sizeof(*f));

	f->o = *o;
	f->period_ns = 1;
	intern(f, "", 0, SP_FN_UNKNOWN);	/* name 0: none */
	f->nodes = sp_xcalloc(1, sizeof(*f->nodes));	/* node 0: the root */
	f->nodes_cap = 1;
	f->nnodes = 1;
	sp_grow(&f->ctxs, &f->ctxs_cap, 1, sizeof(*f->ctxs));	/* ctx 0: no prefix */
	memset(f->ctxs, 0, sizeof(*f->ctxs));
	f->nctxs = 1;
	f->nostack_name = internz(f, "[no stack]", SP_FN_NOSTACK);
	return f;
}

static void free_who(struct who *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(w[i].name);
	free(w);
}

void sp_folded_free(struct sp_folded *f)
{
	if (!f)
		return;
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

/* ---- processes and threads ---- */

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
		x->name = NULL;
		sp_idset_add(idx, sp_hash_u64(id), *n + 1);
		(*n)++;
	}
	x->pid = pid;
	if (name && *name) {
		free(x->name);
		x->name = sp_xstrdup(name);
	}
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

/* ---- spans ---- */

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

static const struct sp_flame_span *span_find(const struct sp_folded *f, uint32_t gen, uint64_t id)
{
	struct span_key k = { gen, id };
	uint32_t i = sp_idset_find(&f->span_idx, sp_hash_mix(gen, id), &k, span_eq, f->spans);

	return i ? &f->spans[i - 1] : NULL;
}

static void add_span(struct sp_folded *f, const struct sp_defs *d, const struct sp_span *s)
{
	const char *klass = sp_defs_strz(d, s->klass), *method = sp_defs_strz(d, s->method);
	uint64_t id = s->id ? s->id : f->next_span_id + 1;
	const struct sp_flame_span *up;
	struct sp_flame_span *x;
	uint32_t depth = 1;
	char buf[512];

	f->next_span_id = id;
	if (*klass && *method)
		snprintf(buf, sizeof(buf), "%s%s%s", klass,
			 s->runtime == SP_RT_RUBY ? "#" : ".", method);
	else if (*method || *klass)
		snprintf(buf, sizeof(buf), "%s", *method ? method : klass);
	else if (s->end == SP_END_SYNTHETIC)
		snprintf(buf, sizeof(buf), "[no span]");	/* sp-correlate's gap */
	else
		snprintf(buf, sizeof(buf), "span-%" PRIu64, id);
	if (span_find(f, f->gen, id))
		return;
	/* parents come first (the stream's rule), so a depth is one lookup */
	if (s->parent && (up = span_find(f, f->gen, s->parent)))
		depth = up->depth < UINT32_MAX ? up->depth + 1 : UINT32_MAX;
	sp_grow(&f->spans, &f->spans_cap, f->nspans + 1, sizeof(*f->spans));
	x = &f->spans[f->nspans];
	x->gen = f->gen;
	x->name = internz(f, buf, SP_FN_SPAN);
	x->id = id;
	x->parent = s->parent;
	x->pid = s->pid;
	x->tid = s->tid;
	x->start = s->start;
	x->stop = s->stop;
	x->depth = depth;
	sp_idset_add(&f->span_idx, sp_hash_mix(f->gen, id), f->nspans + 1);
	f->nspans++;
}

size_t sp_folded_nspans(const struct sp_folded *f)
{
	return f->nspans;
}

const struct sp_flame_span *sp_folded_span(const struct sp_folded *f, size_t i)
{
	return i < f->nspans ? &f->spans[i] : NULL;
}

/* ---- the header ---- */

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
	f->next_span_id = 0;
	if (f->have_header)
		return;
	f->have_header = true;
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

/* ---- naming frames ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

static uint32_t name_with_suffix(struct sp_folded *f, const char *s, unsigned int kind)
{
	static const char *const suffix[SP_FN_KIND_MAX] = {
		[SP_FN_KERNEL] = "_[k]", [SP_FN_INLINE] = "_[i]", [SP_FN_JIT] = "_[j]",
	};
	char buf[1024];

	if (!f->o.annotate || !suffix[kind])
		return internz(f, s, kind);
	snprintf(buf, sizeof(buf), "%s%s", s, suffix[kind]);
	return internz(f, buf, kind);
}

static const struct fcache *frame_names(struct sp_folded *f, const struct sp_defs *d,
					uint64_t fid)
{
	const struct sp_frame *fr = sp_defs_frame(d, fid);
	const struct sp_symbol *sym;
	const struct sp_module *m;
	unsigned int nsym = 0, kind, i;
	struct fcache *c;
	char buf[1024];
	uint32_t name;

	if (fid < f->fc_cap && (f->fc[fid].flags & FC_VALID))
		return &f->fc[fid];
	if (fid >= f->fc_cap) {
		size_t old = f->fc_cap;

		sp_grow(&f->fc, &f->fc_cap, fid + 1, sizeof(*f->fc));
		memset(f->fc + old, 0, (f->fc_cap - old) * sizeof(*f->fc));
	}
	c = &f->fc[fid];
	c->off = f->fpool_len;
	c->n = 0;
	c->flags = FC_VALID;
	if (!fr) {
		c->flags |= FC_NOMAP;
		name = internz(f, "[unknown]", SP_FN_UNKNOWN);
		goto one;
	}
	switch (fr->mode) {
	case SP_FRAME_KERNEL:
		kind = SP_FN_KERNEL;
		break;
	case SP_FRAME_INTERP:
		kind = SP_FN_INTERP;
		break;
	case SP_FRAME_JIT:
		kind = SP_FN_JIT;
		break;
	default:
		kind = SP_FN_USER;
		c->flags |= FC_USER;
		break;
	}
	sym = sp_defs_symbols(d, fid, &nsym);
	if (sym && nsym && sym[0].func) {
		sp_grow(&f->fpool, &f->fpool_cap, f->fpool_len + nsym, sizeof(*f->fpool));
		for (i = nsym; i-- > 0;) {
			const char *fn = sp_defs_strz(d, sym[i].func);

			if (!*fn || (f->o.no_inline && i != nsym - 1))
				continue;
			f->fpool[f->fpool_len++] = name_with_suffix(f, fn,
								    i != nsym - 1 ? SP_FN_INLINE : kind);
			c->n++;
		}
		return c;
	}
	m = fr->module ? sp_defs_module(d, fr->module) : NULL;
	if (!m)
		c->flags |= FC_NOMAP;
	f->st.unresolved_frames++;
	if (m && f->o.no_addresses)
		snprintf(buf, sizeof(buf), "[%s]", base_name(sp_defs_strz(d, m->path)));
	else if (m)
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(sp_defs_strz(d, m->path)),
			 fr->rel);
	else if (f->o.no_addresses)
		snprintf(buf, sizeof(buf), "[unknown]");
	else
		snprintf(buf, sizeof(buf), "0x%" PRIx64, fr->addr);
	if (f->o.annotate && kind == SP_FN_KERNEL)
		strncat(buf, "_[k]", sizeof(buf) - strlen(buf) - 1);
	name = internz(f, buf, SP_FN_UNKNOWN);
one:
	sp_grow(&f->fpool, &f->fpool_cap, f->fpool_len + 1, sizeof(*f->fpool));
	f->fpool[f->fpool_len++] = name;
	c->n = 1;
	return c;
}

static struct scache *scache_slot(struct sp_folded *f, uint64_t sid)
{
	if (sid >= f->sc_cap) {
		size_t old = f->sc_cap;

		sp_grow(&f->sc, &f->sc_cap, sid + 1, sizeof(*f->sc));
		memset(f->sc + old, 0, (f->sc_cap - old) * sizeof(*f->sc));
	}
	return &f->sc[sid];
}

/* The trie node of a frame's names under node; counts user frames. */
static uint32_t frame_under(struct sp_folded *f, const struct sp_defs *d, uint32_t node,
			    uint64_t fid, uint8_t *nuser, bool outermost, uint8_t *flags)
{
	const struct fcache *fc = frame_names(f, d, fid);
	unsigned int j;

	for (j = 0; j < fc->n; j++)
		node = child(f, node, f->fpool[fc->off + j]);
	if ((fc->flags & FC_USER) && *nuser < 2)
		(*nuser)++;
	if (outermost && (fc->flags & FC_NOMAP))
		*flags |= SC_NOMAP;
	return node;
}

/*
 * Resolve a stack id to a trie node (the root when no frame has a name);
 * -1 if undefined. A stack is its parent's node plus its own frame, so
 * each stack id is resolved once, from its nearest resolved ancestor: the
 * cost is the stack ids of the stream, not the depth of every stack. A
 * stack deeper than SP_MAX_STACK_DEPTH keeps its innermost frames
 * (defs.h), resolved on their own.
 */
static int resolve_stack(struct sp_folded *f, const struct sp_defs *d, uint64_t sid,
			 const struct scache **out)
{
	const struct sp_stack *st;
	uint8_t flags = 0, nuser = 0;
	uint32_t node = 0;
	unsigned int depth, k = 0, i;
	struct scache *c;
	uint64_t x;

	if (sid < f->sc_cap && f->sc[sid].node1) {
		*out = &f->sc[sid];
		return 0;
	}
	if (!sp_defs_stack(d, sid))
		return -1;
	if (!f->fbuf_cap)
		sp_grow(&f->fbuf, &f->fbuf_cap, SP_MAX_STACK_DEPTH, sizeof(*f->fbuf));
	depth = sp_defs_stack_depth(d, sid);
	if (depth > SP_MAX_STACK_DEPTH) {
		sp_defs_stack_frames(d, sid, f->fbuf, SP_MAX_STACK_DEPTH);
		flags = SC_CUT;
		for (i = SP_MAX_STACK_DEPTH; i-- > 0;)
			node = frame_under(f, d, node, f->fbuf[i], &nuser,
					   i == SP_MAX_STACK_DEPTH - 1, &flags);
	} else {
		/* the stack ids not resolved yet, leaf first, into fbuf */
		for (x = sid; x && !(x < f->sc_cap && f->sc[x].node1); x = st->parent) {
			st = sp_defs_stack(d, x);
			f->fbuf[k++] = x;
		}
		if (x) {
			node = f->sc[x].node1 - 1;
			flags = f->sc[x].flags & SC_NOMAP;
			nuser = f->sc[x].nuser;
		}
		while (k-- > 0) {
			st = sp_defs_stack(d, f->fbuf[k]);
			node = frame_under(f, d, node, st->frame, &nuser, !st->parent, &flags);
			c = scache_slot(f, f->fbuf[k]);
			c->node1 = node + 1;
			c->flags = flags;
			c->nuser = nuser;
		}
		*out = &f->sc[sid];
		return 0;
	}
	c = scache_slot(f, sid);
	c->node1 = node + 1;
	c->flags = flags;
	c->nuser = nuser;
	*out = c;
	return 0;
}

/* ---- prefix contexts and aggregation ---- */

static bool ctx_eq(void *cx, uint32_t id, const void *key)
{
	const struct ctx *a = &((const struct ctx *)cx)[id - 1], *b = key;

	return a->gen == b->gen && a->pid == b->pid && a->tid == b->tid && a->span == b->span;
}

static uint32_t get_ctx(struct sp_folded *f, const struct sp_sample *s)
{
	struct ctx k = { 0 };
	char buf[600];
	uint32_t id;
	uint64_t h;
	const char *comm;
	struct ctx *c;

	if (!f->o.by)
		return 0;
	if (f->o.by & SP_FLAME_BY_PROCESS)
		k.pid = s->pid + 1;
	if (f->o.by & SP_FLAME_BY_THREAD)
		k.tid = s->tid + 1;
	if ((f->o.by & SP_FLAME_BY_SPAN) && s->span) {
		k.span = s->span;
		k.gen = f->gen;
	}
	h = sp_hash_mix(sp_hash_mix(sp_hash_mix(sp_hash_u64(k.gen), k.pid), k.tid), k.span);
	id = sp_idset_find(&f->ctx_idx, h, &k, ctx_eq, f->ctxs);
	if (id)
		return id - 1;
	if (k.span) {
		const struct sp_flame_span *sp = span_find(f, k.gen, k.span);

		k.cut = sp && sp->depth > SPAN_DEPTH_MAX;
	}
	comm = sp_folded_comm(f, s->pid);
	if (k.pid) {
		snprintf(buf, sizeof(buf), "%s-%" PRIu64, *comm ? comm : "?", s->pid);
		k.pname = internz(f, buf, SP_FN_PROCESS);
	}
	if (k.tid) {
		const char *tn = sp_folded_thread_name(f, s->tid);

		snprintf(buf, sizeof(buf), "%s-%" PRIu64, *tn ? tn : *comm ? comm : "?", s->tid);
		k.tname = internz(f, buf, SP_FN_THREAD);
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

static void count(struct sp_folded *f, uint32_t ctx, uint32_t node, uint64_t w)
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
		if (resolve_stack(f, d, s->stack, &sc) < 0) {
			f->st.undefined++;
			if (why)
				*why = "sample refers to an undefined stack";
			return SP_FOLDED_BAD;
		}
		node = sc->node1 - 1;
		if (!node)
			node = child(f, 0, f->nostack_name);
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
		node = child(f, 0, f->nostack_name);
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
	count(f, ctx, node, w);
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
		break;
	case SP_REC_THREAD:
		who_set(&f->threads, &f->nthreads, &f->threads_cap, &f->thread_idx,
			rec->thread.tid, rec->thread.pid, sp_defs_strz(d, rec->thread.name));
		break;
	case SP_REC_SPAN:
		if ((f->o.by & SP_FLAME_BY_SPAN) || f->o.keep_spans)
			add_span(f, d, &rec->span);
		break;
	default:
		break;
	}
	return SP_FOLDED_IGNORED;
}

/* ---- folded text input ---- */

static unsigned int guess_kind(const char *s, size_t len)
{
	if (len > 4 && s[len - 4] == '_' && s[len - 3] == '[' && s[len - 1] == ']') {
		switch (s[len - 2]) {
		case 'k':
			return SP_FN_KERNEL;
		case 'i':
			return SP_FN_INLINE;
		case 'j':
			return SP_FN_JIT;
		}
	}
	if ((len > 2 && s[0] == '0' && s[1] == 'x') || memchr(s, '+', len) ||
	    (len && s[0] == '['))
		return SP_FN_UNKNOWN;
	return SP_FN_USER;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* p[0..len) with its \xHH escapes undone (escape.h) into buf; the length. */
static size_t unescape(char *buf, const char *p, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		if (p[i] == '\\' && i + 3 < len && p[i + 1] == 'x' && hexval(p[i + 2]) >= 0 &&
		    hexval(p[i + 3]) >= 0) {
			buf[n++] = hexval(p[i + 2]) * 16 + hexval(p[i + 3]);
			i += 3;
		} else {
			buf[n++] = p[i];
		}
	}
	return n;
}

/* A frame of folded text, its escapes undone. */
static uint32_t intern_escaped(struct sp_folded *f, const char *p, size_t len)
{
	char small[1024], *buf;
	size_t n;
	uint32_t id;

	if (!memchr(p, '\\', len))
		return intern(f, p, len, guess_kind(p, len));
	if (len <= sizeof(small)) {
		n = unescape(small, p, len);
		return intern(f, small, n, guess_kind(small, n));
	}
	buf = sp_xmalloc(len);
	n = unescape(buf, p, len);
	id = intern(f, buf, n, guess_kind(buf, n));
	free(buf);
	return id;
}

int sp_folded_add_line(struct sp_folded *f, const char *line, size_t len)
{
	const char *sp, *p, *end, *semi;
	uint64_t w = 0;
	uint32_t node = 0;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	for (sp = line + len; sp > line && sp[-1] != ' '; sp--)
		;
	if (sp == line || sp == line + len)
		return -1;
	for (p = sp; p < line + len; p++) {
		if (*p < '0' || *p > '9' || w > UINT64_MAX / 10 - 10)
			return -1;
		w = w * 10 + (*p - '0');
	}
	end = sp - 1;
	while (end > line && end[-1] == ' ')
		end--;
	for (p = line; p < end; p = semi + 1) {
		semi = memchr(p, ';', end - p);
		if (!semi)
			semi = end;
		if (semi > p)
			node = child(f, node, intern_escaped(f, p, semi - p));
	}
	if (!node)
		return -1;
	count(f, 0, node, w);
	f->st.samples[f->col] += w;
	f->st.weight[f->col] += w;
	return 0;
}

/* ---- output: the final tree, with prefix frames ---- */

struct fnode {
	uint32_t parent, name;
	uint64_t self[2];
	uint32_t first, nchild;	/* children in kids[first .. first + nchild) */
};

struct ftree {
	struct fnode *v;
	size_t n, cap;
	struct sp_idset idx;
	uint32_t *kids;
};

static bool fnode_eq(void *cx, uint32_t id, const void *key)
{
	const struct fnode *a = &((const struct fnode *)cx)[id - 1];
	const struct node_key *k = key;

	return a->parent == k->parent && a->name == k->name;
}

static uint32_t fchild(struct ftree *t, uint32_t parent, uint32_t name)
{
	struct node_key k = { parent, name };
	uint64_t h = sp_hash_mix(parent, name);
	uint32_t id = sp_idset_find(&t->idx, h, &k, fnode_eq, t->v);

	if (id)
		return id - 1;
	sp_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v));
	memset(&t->v[t->n], 0, sizeof(t->v[t->n]));
	t->v[t->n].parent = parent;
	t->v[t->n].name = name;
	sp_idset_add(&t->idx, h, t->n + 1);
	return t->n++;
}

/* Prefix names of a context into buf; returns how many. */
static unsigned int ctx_prefix(const struct sp_folded *f, uint32_t ctx, uint32_t *buf,
			       unsigned int max)
{
	const struct ctx *c = &f->ctxs[ctx];
	uint32_t spans[SPAN_DEPTH_MAX];
	unsigned int n = 0, ns = 0;
	const struct sp_flame_span *s;

	if (!ctx)
		return 0;
	if (c->pname && n < max)
		buf[n++] = c->pname;
	if (c->tname && n < max)
		buf[n++] = c->tname;
	if (c->span) {
		for (s = span_find(f, c->gen, c->span); s && ns < SPAN_DEPTH_MAX;
		     s = s->parent ? span_find(f, c->gen, s->parent) : NULL)
			spans[ns++] = s->name;
		while (ns && n < max)
			buf[n++] = spans[--ns];
	}
	return n;
}

static void path_begin(struct sp_flame_paths *p)
{
	memset(p, 0, sizeof(*p));
}

/* Append a path whose names are pool[off .. off + depth). */
static void path_add(struct sp_flame_paths *p, size_t off, uint32_t depth, const uint64_t *w)
{
	struct sp_flame_path *x;

	sp_grow(&p->v, &p->cap, p->n + 1, sizeof(*p->v));
	x = &p->v[p->n++];
	x->names = (const uint32_t *)(uintptr_t)off;	/* fixed up in path_end() */
	x->depth = depth;
	x->w[0] = w[0];
	x->w[1] = w[1];
	p->total[0] += w[0];
	p->total[1] += w[1];
}

static void path_end(struct sp_flame_paths *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		p->v[i].names = p->pool + (uintptr_t)p->v[i].names;
}

static uint32_t *pool_reserve(struct sp_flame_paths *p, size_t n)
{
	sp_grow(&p->pool, &p->pool_cap, p->pool_len + n, sizeof(*p->pool));
	return p->pool + p->pool_len;
}

static int cmp_kids(const void *a, const void *b, void *arg)
{
	const struct sp_folded *f = ((void **)arg)[0];
	const struct ftree *t = ((void **)arg)[1];
	uint32_t na = t->v[*(const uint32_t *)a].name, nb = t->v[*(const uint32_t *)b].name;
	int c;

	if (na == nb)
		return 0;
	c = strcmp(f->arena + f->names[na].off, f->arena + f->names[nb].off);
	if (c)
		return c;
	return f->names[na].kind < f->names[nb].kind ? -1 : 1;
}

static void sorted_paths(struct sp_folded *f, struct sp_flame_paths *out)
{
	struct ftree t = { 0 };
	uint32_t *pbuf = NULL, *fill = NULL, *stk = NULL, *pos = NULL;
	size_t pcap = 0, i, sp;
	void *arg[2] = { f, &t };
	unsigned int n, d;

	sp_grow(&t.v, &t.cap, 1, sizeof(*t.v));
	memset(t.v, 0, sizeof(*t.v));
	t.n = 1;
	for (i = 0; i < f->naggs; i++) {
		const struct agg *a = &f->aggs[i];
		unsigned int depth = sp_folded_node_path(f, a->node, NULL, 0);
		uint32_t nd = 0;

		sp_grow(&pbuf, &pcap, depth + SPAN_DEPTH_MAX + 2, sizeof(*pbuf));
		n = ctx_prefix(f, a->ctx, pbuf, SPAN_DEPTH_MAX + 2);
		n += sp_folded_node_path(f, a->node, pbuf + n, depth);
		for (d = 0; d < n; d++)
			nd = fchild(&t, nd, pbuf[d]);
		t.v[nd].self[0] += a->w[0];
		t.v[nd].self[1] += a->w[1];
	}
	/* Children of every node, contiguous and sorted by name. */
	t.kids = sp_xcalloc(t.n ? t.n : 1, sizeof(*t.kids));
	fill = sp_xcalloc(t.n, sizeof(*fill));
	for (i = 1; i < t.n; i++)
		t.v[t.v[i].parent].nchild++;
	for (i = 0, sp = 0; i < t.n; i++) {
		t.v[i].first = sp;
		sp += t.v[i].nchild;
	}
	for (i = 1; i < t.n; i++) {
		struct fnode *p = &t.v[t.v[i].parent];

		t.kids[p->first + fill[t.v[i].parent]++] = i;
	}
	for (i = 0; i < t.n; i++)
		if (t.v[i].nchild > 1)
			qsort_r(t.kids + t.v[i].first, t.v[i].nchild, sizeof(*t.kids), cmp_kids, arg);
	/* Depth-first, pre-order: a stack comes before those that extend it. */
	path_begin(out);
	stk = sp_xcalloc(t.n + 1, sizeof(*stk));
	pos = sp_xcalloc(t.n + 1, sizeof(*pos));
	sp_grow(&pbuf, &pcap, t.n + 1, sizeof(*pbuf));
	sp = 0;
	stk[0] = 0;
	pos[0] = 0;
	for (;;) {
		struct fnode *cur = &t.v[stk[sp]];
		uint32_t c;

		if (pos[sp] >= cur->nchild) {
			if (!sp)
				break;
			sp--;
			continue;
		}
		c = t.kids[cur->first + pos[sp]++];
		stk[++sp] = c;
		pos[sp] = 0;
		pbuf[sp - 1] = t.v[c].name;
		if (t.v[c].self[0] || t.v[c].self[1]) {
			memcpy(pool_reserve(out, sp), pbuf, sp * sizeof(*pbuf));
			path_add(out, out->pool_len, sp, t.v[c].self);
			out->pool_len += sp;
		}
	}
	path_end(out);
	free(stk);
	free(pos);
	free(fill);
	free(pbuf);
	free(t.kids);
	free(t.v);
	sp_idset_release(&t.idx);
}

static void time_paths(struct sp_folded *f, struct sp_flame_paths *out)
{
	uint32_t *pbuf = NULL;
	size_t pcap = 0, i;
	unsigned int n;

	path_begin(out);
	for (i = 0; i < f->nseq; i++) {
		const struct sp_flame_run *r = &f->seq[i];
		unsigned int depth = sp_folded_node_path(f, r->node, NULL, 0);
		uint64_t w[2] = { r->weight, 0 };

		sp_grow(&pbuf, &pcap, depth + SPAN_DEPTH_MAX + 2, sizeof(*pbuf));
		n = ctx_prefix(f, r->ctx, pbuf, SPAN_DEPTH_MAX + 2);
		n += sp_folded_node_path(f, r->node, pbuf + n, depth);
		/* Runs of other threads in between split nothing here. */
		if (out->n && out->v[out->n - 1].depth == n &&
		    !memcmp(out->pool + (uintptr_t)out->v[out->n - 1].names, pbuf,
			    n * sizeof(*pbuf))) {
			out->v[out->n - 1].w[0] += w[0];
			out->total[0] += w[0];
			continue;
		}
		memcpy(pool_reserve(out, n), pbuf, n * sizeof(*pbuf));
		path_add(out, out->pool_len, n, w);
		out->pool_len += n;
	}
	path_end(out);
	free(pbuf);
}

void sp_folded_paths(struct sp_folded *f, bool time_order, struct sp_flame_paths *out)
{
	if (time_order)
		time_paths(f, out);
	else
		sorted_paths(f, out);
}

void sp_flame_paths_release(struct sp_flame_paths *p)
{
	free(p->v);
	free(p->pool);
	memset(p, 0, sizeof(*p));
}

size_t sp_folded_nseq(const struct sp_folded *f)
{
	return f->nseq;
}

const struct sp_flame_run *sp_folded_seq(const struct sp_folded *f, size_t i)
{
	return i < f->nseq ? &f->seq[i] : NULL;
}

/* ---- folded text output ---- */

int sp_folded_put_name(FILE *out, const char *name)
{
	return sp_esc_text_put(out, name, strlen(name), SP_ESC_SEMI);
}

int sp_folded_print(const struct sp_folded *f, const struct sp_flame_paths *p, FILE *out,
		    bool two_columns)
{
	size_t i;
	uint32_t d;

	for (i = 0; i < p->n; i++) {
		const struct sp_flame_path *x = &p->v[i];

		for (d = 0; d < x->depth; d++) {
			if (d)
				putc(';', out);
			sp_folded_put_name(out, sp_folded_name(f, x->names[d], NULL));
		}
		if (two_columns)
			fprintf(out, " %" PRIu64 " %" PRIu64 "\n", x->w[0], x->w[1]);
		else
			fprintf(out, " %" PRIu64 "\n", x->w[0]);
		if (ferror(out))
			return -1;
	}
	return 0;
}

/* ---- the footer ---- */

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
		if (s->single_user + s->unknown_map >= s->truncated + s->bad_unwind)
			hint = "build with -fno-omit-frame-pointer or record with --call-graph=dwarf";
		else if (s->truncated >= s->bad_unwind)
			hint = "raise the stack depth limit (sysctl kernel.perf_event_max_stack)";
		else
			hint = "record with --call-graph=fp for code built with frame pointers";
		o += snprintf(buf + o, len - o, "; hint: %s", hint);
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
