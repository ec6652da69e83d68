// SPDX-License-Identifier: MIT
/*
 * The aggregate as paths, what every renderer draws from: each counted
 * (context, node) as its prefix names and frame names, merged into one tree
 * and written depth first with every node's children sorted by name (a
 * flame graph), or the runs of samples in time order (a flame chart).
 */
#include <stdlib.h>
#include <string.h>

#include "foldedP.h"
#include "sp.h"

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
	if (c->cname && n < max)
		buf[n++] = c->cname;
	if (c->pname && n < max)
		buf[n++] = c->pname;
	if (c->tname && n < max)
		buf[n++] = c->tname;
	if (c->span) {
		for (s = sp_folded_span_find(f, c->gen, c->span); s && ns < SPAN_DEPTH_MAX;
		     s = s->parent ? sp_folded_span_find(f, c->gen, s->parent) : NULL)
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
