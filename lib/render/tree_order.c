// SPDX-License-Identifier: MIT
/*
 * The children of a node, before they are printed: sorted by time (with
 * --stable, threads ordered by what they did), filtered (--span, --tid,
 * --events, --min-dur, --min-share, --pid), and runs of identical siblings
 * found by a signature of what they print, to be collapsed into one line.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "hashmap.h"
#include "sp.h"
#include "treeP.h"

static uint64_t node_tid(const struct tnode *n)
{
	switch (n->type) {
	case N_SPAN: return ((const struct tspan *)n)->tid;
	case N_EVENT: return ((const struct tevent *)n)->tid;
	case N_PROC: return ((const struct tproc *)n)->pid;
	case N_THREAD: return ((const struct tthread *)n)->tid;
	}
	return 0;
}

int sp_tree_cmp_time(const void *a, const void *b)
{
	const struct tnode *x = *(const struct tnode *const *)a;
	const struct tnode *y = *(const struct tnode *const *)b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A thread's run of siblings, for the stable order. */
struct sgroup {
	char *key;		/* stable text of its first item */
	uint64_t hash;		/* of the signatures of all its items */
	size_t first, rank;
};

struct sitem {
	struct tnode *n;
	size_t rank, idx;
};

/* Groups, by index into groups. */
static int cmp_group(const void *a, const void *b, void *groups)
{
	const struct sgroup *x = &((const struct sgroup *)groups)[*(const size_t *)a];
	const struct sgroup *y = &((const struct sgroup *)groups)[*(const size_t *)b];
	int c;

	if (!x->key || !y->key)		/* group 0: the node's own thread */
		return !x->key ? (!y->key ? 0 : -1) : 1;
	c = strcmp(x->key, y->key);
	if (c)
		return c;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_item(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint64_t signature(struct sp_tree *t, struct tnode *n);

/*
 * Reorder the time-sorted t->sortbuf[0..k) for --stable: the node's own
 * thread first in time order, then each other thread's items in time order,
 * the threads ordered by what they did (the text of their first item, then
 * a hash of all of it), not by tid or interleaving.
 */
static void stable_order(struct sp_tree *t, struct tnode *n, size_t k)
{
	struct sp_u64map groups_of = SP_U64MAP_INIT;
	struct sgroup *g = sp_xcalloc(k + 1, sizeof(*g));
	struct sitem *it = sp_xcalloc(k, sizeof(*it));
	size_t *order, ng = 1, i, gi;
	uint64_t own = node_tid(n), *v;
	struct sp_buf lb = SP_BUF_INIT;

	/* signature() sorts grandchildren with t->sortbuf: work on a copy */
	for (i = 0; i < k; i++)
		it[i].n = t->sortbuf[i];
	for (i = 0; i < k; i++) {
		uint64_t tid = node_tid(it[i].n);

		if (tid == own) {
			gi = 0;
		} else if ((v = sp_u64map_get(&groups_of, tid))) {
			gi = *v;
		} else {
			gi = ng++;
			sp_u64map_put(&groups_of, tid, gi);
			g[gi].first = i;
			sp_tree_render_line(t, &lb, it[i].n, 0, NULL, true, false);
			g[gi].key = sp_buf_detach(&lb, NULL);
		}
		g[gi].hash = sp_hash_mix(g[gi].hash, signature(t, it[i].n));
		it[i].idx = i;
		it[i].rank = gi;	/* group index for now */
	}
	order = sp_xmalloc(ng * sizeof(*order));
	for (i = 0; i < ng; i++)
		order[i] = i;
	qsort_r(order, ng, sizeof(*order), cmp_group, g);
	for (i = 0; i < ng; i++)
		g[order[i]].rank = i;
	for (i = 0; i < k; i++)
		it[i].rank = g[it[i].rank].rank;
	qsort(it, k, sizeof(*it), cmp_item);
	for (i = 0; i < k; i++)
		t->sortbuf[i] = it[i].n;
	for (i = 0; i < ng; i++)
		free(g[i].key);
	free(order);
	free(it);
	free(g);
	sp_u64map_release(&groups_of);
}

/* Sort n's children by time (--stable: see stable_order()). */
void sp_tree_sort_children(struct sp_tree *t, struct tnode *n)
{
	struct tnode *c;
	size_t k = 0, i;

	if (n->sorted)
		return;
	n->sorted = true;
	for (c = n->first; c; c = c->next)
		k++;
	if (k < 2)
		return;
	if (k > t->capsort)
		sp_grow(&t->sortbuf, &t->capsort, k, sizeof(*t->sortbuf));
	for (i = 0, c = n->first; c; c = c->next)
		t->sortbuf[i++] = c;
	qsort(t->sortbuf, k, sizeof(*t->sortbuf), sp_tree_cmp_time);
	if (t->stable && n->type != N_EVENT)
		stable_order(t, n, k);
	n->first = t->sortbuf[0];
	for (i = 0; i + 1 < k; i++)
		t->sortbuf[i]->next = t->sortbuf[i + 1];
	t->sortbuf[k - 1]->next = NULL;
	n->last = t->sortbuf[k - 1];
}

bool sp_tree_in_list(const uint64_t *v, size_t n, uint64_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

bool sp_tree_name_matches(struct sp_tree *t, const struct tspan *s)
{
	struct sp_buf b = SP_BUF_INIT;
	bool match = false;
	size_t i;

	sp_tree_span_name(&b, s);
	for (i = 0; i < t->o.nspans && !match; i++)
		match = !fnmatch(t->o.spans[i], sp_buf_str(&b), 0) ||
			(s->method && !fnmatch(t->o.spans[i], s->method, 0));
	sp_buf_release(&b);
	return match;
}

/* A node of sp_tree_compute_keep()'s walk: what holds for it and what is under it. */
struct kframe {
	struct tnode *n, *next;	/* next: the child to visit next */
	struct tnode *parent;	/* NULL for the root of the walk */
	uint64_t cmp;		/* --min-share: the time the node is measured against */
	uint64_t ref;		/* and its children: that of the top-level span above */
	bool name_ok, tid_ok, self, any;
};

uint64_t sp_tree_node_dur(const struct sp_tree *t, const struct tnode *n)
{
	const struct tspan *s = (const void *)n;
	uint64_t end = t->end_time > t->max_time ? t->end_time : t->max_time;

	if (n->type == N_SPAN && s->stop >= s->start && s->stop)
		return s->stop - s->start;
	if (n->type == N_SPAN)	/* open: until the last record */
		return end > s->start ? end - s->start : 0;
	return end > t->start_mono && t->start_mono ? end - t->start_mono : 0;
}

void sp_tree_decide_share(struct sp_tree *t)
{
	if (t->share_decided)
		return;
	t->share_decided = true;
	if (t->o.min_share >= 0)
		t->share = t->o.min_share;
	else if (t->o.nspans || t->o.ntids || t->o.event_kinds)
		t->share = 0;	/* what was asked for is shown, however short */
	else
		t->share = t->nspans_total + t->nframes > SP_TREE_LARGE ? SP_TREE_MIN_SHARE : 0;
}

bool sp_tree_small_telling(const struct tnode *n)
{
	const struct tspan *s = (const void *)n;
	const struct tnode *c;

	if (n->type != N_SPAN)
		return false;
	if (s->end == SP_END_RAISED || s->error)
		return true;
	for (c = n->first; c; c = c->next)	/* its own events (not deeper) */
		if (c->type == N_EVENT)
			return true;
	return false;
}

uint64_t sp_tree_elided(const struct sp_tree *t, const struct tnode *n, uint64_t *ns,
			uint64_t *telling)
{
	uint64_t count = 0, tell = 0;
	const struct tnode *c;

	*ns = 0;
	if (n->type == N_PROC) {
		count = ((const struct tproc *)n)->elided_n;
		*ns = ((const struct tproc *)n)->elided_ns;
		tell = ((const struct tproc *)n)->elided_telling;
	}
	if (n->elided)
		for (c = n->first; c; c = c->next) {
			if (!c->small)
				continue;
			count++;
			*ns += sp_tree_node_dur(t, c);
			tell += sp_tree_small_telling(c);
		}
	if (n->fold_elided) {	/* those of the other members of its run */
		const uint64_t *v = sp_u64map_get(&t->fold_elided, n->seq);
		const struct fold_elided *fe = v ? (const void *)(uintptr_t)*v : NULL;

		if (fe) {
			count += fe->n;
			*ns += fe->ns;
			tell += fe->telling;
		}
	}
	if (telling)
		*telling = tell;
	return count;
}

/* A closed span under --min-share of its parent's time. */
static bool is_small(const struct sp_tree *t, const struct kframe *f, const struct tspan *s)
{
	if (t->share <= 0 || !f->parent || s->end == SP_END_OPEN || s->end == SP_END_SYNTHETIC ||
	    !s->stop || s->stop < s->start)
		return false;
	return (double)(s->stop - s->start) < t->share * (double)f->cmp;
}

/* The kframe of child c of the node of frame up. */
static struct kframe child_frame(struct sp_tree *t, const struct kframe *up, struct tnode *c)
{
	struct kframe f = { .n = c, .parent = up->n, .cmp = up->ref, .ref = up->ref,
			    .name_ok = up->name_ok, .tid_ok = up->tid_ok };

	if (c->type == N_SPAN && up->n->type != N_SPAN)	/* a top-level span */
		f.ref = sp_tree_node_dur(t, c);
	return f;
}

/*
 * What node f->n decides by itself, before its children; false when it is
 * hidden with everything under it (shorter than --min-dur).
 */
static bool keep_enter(struct sp_tree *t, struct kframe *f)
{
	bool selective = t->o.nspans || t->o.ntids || t->o.event_kinds;
	struct tnode *n = f->n;

	f->self = !selective;
	f->any = false;
	if (n->type == N_SPAN && ((struct tspan *)n)->adopt)
		sp_tree_adopt(t, (struct tspan *)n);
	f->next = n->first;
	n->small = n->elided = false;
	switch (n->type) {
	case N_SPAN: {
		const struct tspan *s = (const void *)n;

		if (is_small(t, f, s)) {
			n->keep = false;
			n->small = f->parent->elided = true;
			return false;
		}

		if (t->o.min_dur_ns && s->stop && s->stop - s->start < t->o.min_dur_ns &&
		    s->end != SP_END_OPEN && s->end != SP_END_SYNTHETIC) {
			n->keep = false;
			return false;
		}
		n->matched = t->o.nspans && !f->name_ok && sp_tree_name_matches(t, s);
		f->name_ok = f->name_ok || !t->o.nspans || n->matched;
		f->tid_ok = !t->o.ntids || sp_tree_in_list(t->o.tids, t->o.ntids, s->tid);
		if (selective)
			f->self = f->name_ok && f->tid_ok && !t->o.event_kinds;
		break;
	}
	case N_THREAD:
		/* its records in the gap span are its own (--tid) */
		if (t->o.ntids && !f->tid_ok)
			f->tid_ok = sp_tree_in_list(t->o.tids, t->o.ntids,
						    ((const struct tthread *)n)->tid);
		break;
	case N_EVENT: {
		const struct tevent *e = (const void *)n;
		bool kind_ok = !t->o.event_kinds ||
			       (e->kind < 64 && (t->o.event_kinds & (1ull << e->kind)));

		f->self = !t->o.no_events && kind_ok && (f->name_ok || !t->o.nspans) &&
			  (f->tid_ok || !t->o.ntids);
		break;
	}
	default:
		break;
	}
	return true;
}

/*
 * Decide what is shown under root: a node is kept when it matches the
 * filters itself or something under it does. name_ok: a span above matched
 * --span; tid_ok: the span above is of a --tid thread.
 */
bool sp_tree_compute_keep(struct sp_tree *t, struct tnode *root, bool name_ok, bool tid_ok)
{
	struct kframe *st = sp_xmalloc(16 * sizeof(*st)), *f;
	size_t n = 1, cap = 16;
	struct tnode *c;
	bool keep;

	sp_tree_decide_share(t);
	st[0] = (struct kframe){ .n = root, .name_ok = name_ok, .tid_ok = tid_ok,
				 .ref = sp_tree_node_dur(t, root) };
	if (!keep_enter(t, &st[0])) {
		free(st);
		return false;
	}
	while (n) {
		f = &st[n - 1];
		if ((c = f->next)) {
			f->next = c->next;
			sp_grow(&st, &cap, n + 1, sizeof(*st));
			st[n] = child_frame(t, &st[n - 1], c);
			if (keep_enter(t, &st[n]))
				n++;
			continue;
		}
		keep = f->n->keep = f->self || f->any;
		if (--n)
			st[n - 1].any |= keep;
	}
	free(st);
	return root->keep;
}

/*
 * A node's fingerprint: 64-bit FNV-1a of its stable text, from seed h. Not a
 * table hash (those are hashmap.h's): through the signatures it goes into,
 * its values order --stable's thread groups whose first lines are the same
 * (cmp_group()), so they are part of sp-tree's output: never change it.
 */
static uint64_t text_fingerprint(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

/* n's signature, once its children's are known. */
static void sign(struct sp_tree *t, struct tnode *n)
{
	struct sp_buf b = SP_BUF_INIT;
	struct tnode *c;
	uint64_t h;

	sp_tree_sort_children(t, n);
	sp_tree_render_line(t, &b, n, 0, NULL, true, false);
	h = text_fingerprint(0xcbf29ce484222325ull ^ n->type, sp_buf_str(&b));
	sp_buf_release(&b);
	/* a process prints its pid but for --stable: runs holding two
	 * processes (forks) are not one, or the others' pids would not show */
	if (!t->stable && n->type == N_PROC)
		h = sp_hash_mix(h, ((const struct tproc *)n)->pid);
	else if (!t->stable && n->type == N_THREAD)	/* the same for threads */
		h = sp_hash_mix(h, ((const struct tthread *)n)->tid);
	for (c = n->first; c; c = c->next)
		if (c->keep)
			h = sp_hash_mix(h, c->sig);
	n->sig = h ? h : 1;
}

/*
 * A hash of what the node and its kept children print in stable form.
 * Children first (every child: sorting them for --stable needs theirs),
 * by a walk of its own; a node's signature is kept once computed.
 */
static uint64_t signature(struct sp_tree *t, struct tnode *root)
{
	struct tnode **st, *n, *c;
	size_t k = 1, cap = 16;

	if (root->sig)
		return root->sig;
	if (!root->first) {
		sign(t, root);
		return root->sig;
	}
	/* each entry: a node whose children are being signed, and the next */
	st = sp_xmalloc(2 * cap * sizeof(*st));
	st[0] = root;
	st[1] = root->first;
	while (k) {
		n = st[2 * (k - 1)];
		c = st[2 * (k - 1) + 1];
		while (c && c->sig)
			c = c->next;
		if (c) {
			st[2 * (k - 1) + 1] = c->next;
			if (!c->first) {
				sign(t, c);
				continue;
			}
			if (k == cap) {
				cap *= 2;
				st = sp_xrealloc(st, 2 * cap * sizeof(*st));
			}
			st[2 * k] = c;
			st[2 * k + 1] = c->first;
			k++;
			continue;
		}
		sign(t, n);
		k--;
	}
	free(st);
	return root->sig;
}

/*
 * What differs between two events that print the same line but for what
 * --stable leaves out (a pid, an fd, a port): the collapsed line shows "*"
 * for it rather than the first one's (sp_event_text_run()).
 */
static uint32_t event_differ(const struct tnode *x, const struct tnode *y)
{
	const struct tevent *a = (const void *)x, *b = (const void *)y;

	return sp_event_fields_differ(a->kind, a->vals, a->nvals, b->vals, b->nvals) |
	       (a->rule != b->rule ? TEV_RULE_VARIES : 0);
}

static uint64_t node_mult(const struct tnode *n)
{
	return n->mult ? n->mult : 1;
}

/* Add node n (and what was folded into it) to the sums of ag. */
static void agg_add(struct agg *ag, const struct tnode *n)
{
	const struct tspan *s = (const void *)n;

	ag->count += node_mult(n);
	if (n->type == N_EVENT)
		ag->varies |= ((const struct tevent *)n)->varies;
	if (n->type != N_SPAN)
		return;
	if (n->mult > 1) {
		ag->dur += s->fold_dur;
		ag->open |= s->fold_open;
	} else {
		ag->dur += s->stop > s->start ? s->stop - s->start : 0;
		ag->open |= !s->stop;
	}
	ag->total += s->total;
	ag->samples += s->samples;
}

/*
 * The kept sibling run that starts at kept node c: c and the identical kept
 * siblings that follow it (unless --no-collapse), summed into ag. Returns
 * the node after the run (maybe not kept).
 */
struct tnode *sp_tree_group_end(struct sp_tree *t, struct tnode *c, struct agg *ag)
{
	struct tnode *next;

	memset(ag, 0, sizeof(*ag));
	agg_add(ag, c);
	for (next = c->next; next; next = next->next) {
		if (!next->keep)
			continue;
		if (t->o.no_collapse || next->type != c->type || next->type == N_PROC ||
		    (!t->stable && node_tid(next) != node_tid(c)) ||
		    signature(t, next) != signature(t, c))
			break;
		agg_add(ag, next);
		if (c->type == N_EVENT)
			ag->varies |= event_differ(c, next);
	}
	return next;
}

/* Node x now also stands for node y, which prints the same. */
static void fold_node(struct tnode *x, const struct tnode *y)
{
	struct tspan *s = (void *)x;
	const struct tspan *o = (const void *)y;
	struct agg ag = { 0 };

	agg_add(&ag, x);
	agg_add(&ag, y);
	x->mult = ag.count;
	if (x->type == N_EVENT)
		((struct tevent *)x)->varies = ag.varies | event_differ(x, y);
	if (x->type != N_SPAN)
		return;
	s->fold_dur = ag.dur;
	s->fold_open = ag.open;
	s->total += o->total;
	s->samples += o->samples;
}

/* Node x now also stands for the small children of y (--min-share). */
static void fold_small(struct sp_tree *t, struct tnode *x, const struct tnode *y)
{
	struct fold_elided add = { 0 }, *fe;
	const struct tnode *c;
	uint64_t *v;

	if (y->elided)
		for (c = y->first; c; c = c->next)
			if (c->small) {
				add.n++;
				add.ns += sp_tree_node_dur(t, c);
				add.telling += sp_tree_small_telling(c);
			}
	if (y->fold_elided && (v = sp_u64map_get(&t->fold_elided, y->seq))) {
		fe = (struct fold_elided *)(uintptr_t)*v;
		add.n += fe->n;
		add.ns += fe->ns;
		add.telling += fe->telling;
	}
	if (!add.n)
		return;
	v = x->fold_elided ? sp_u64map_get(&t->fold_elided, x->seq) : NULL;
	if (!v) {
		fe = sp_xcalloc(1, sizeof(*fe));
		sp_u64map_put(&t->fold_elided, x->seq, (uint64_t)(uintptr_t)fe);
		x->fold_elided = true;
	} else {
		fe = (struct fold_elided *)(uintptr_t)*v;
	}
	fe->n += add.n;
	fe->ns += add.ns;
	fe->telling += add.telling;
}

static size_t kept_children(struct tnode *n)
{
	struct tnode *c;
	size_t k = 0;

	for (c = sp_tree_next_kept(n->first); c; c = sp_tree_next_kept(c->next))
		k++;
	return k;
}

/* One node of a kept subtree in preorder, and how many kept children it has. */
struct pre {
	struct tnode *n;
	size_t kids;
};

/* A walk of a kept subtree in preorder: the next kept child of each node
 * on the path (explicit: a tree is as deep as the recording). */
struct prewalk {
	struct tnode **next;
	size_t depth, cap;
};

static void prewalk_start(struct prewalk *w, struct tnode *root)
{
	w->depth = 0;
	sp_grow(&w->next, &w->cap, 1, sizeof(*w->next));
	w->next[w->depth++] = sp_tree_next_kept(root->first);
}

/* The next node of the walk, NULL at its end. */
static struct tnode *prewalk_next(struct prewalk *w)
{
	struct tnode *x;

	while (w->depth && !w->next[w->depth - 1])
		w->depth--;
	if (!w->depth)
		return NULL;
	x = w->next[w->depth - 1];
	w->next[w->depth - 1] = sp_tree_next_kept(x->next);
	sp_grow(&w->next, &w->cap, w->depth + 1, sizeof(*w->next));
	w->next[w->depth++] = sp_tree_next_kept(x->first);
	return x;
}

/*
 * Before the children of a collapsed run are printed under its first member
 * c: fold what is under every other member (the kept nodes after c, up to
 * end) into what is under c, node by node, so that a child line says how
 * many calls it stands for and their summed times, not the first call's,
 * and a line of hidden spans counts every member's. The members print the
 * same (their signatures are equal), so their kept subtrees pair up in
 * preorder, c's taken once: linear in the run's nodes, however many of c's
 * children are hidden. A member whose shape differs at a node (a hash
 * collision) is folded up to there.
 */
void sp_tree_fold_run(struct sp_tree *t, struct tnode *c, struct tnode *end)
{
	struct pre *pre = NULL;
	size_t npre = 0, cap = 0, i;
	struct prewalk w = { 0 };
	struct tnode *m, *x, *y;

	if (t->stable)	/* no times to sum; counts stay per member */
		return;
	for (m = c->next; m && m != end; m = m->next) {
		if (!m->keep)
			continue;
		if (!pre) {
			/* c's kept subtree, root first: pre[0] is c */
			sp_grow(&pre, &cap, 1, sizeof(*pre));
			pre[npre++] = (struct pre){ c, kept_children(c) };
			prewalk_start(&w, c);
			while ((x = prewalk_next(&w))) {
				sp_grow(&pre, &cap, npre + 1, sizeof(*pre));
				pre[npre++] = (struct pre){ x, kept_children(x) };
			}
		}
		fold_small(t, c, m);
		if (kept_children(m) != pre[0].kids)
			continue;
		prewalk_start(&w, m);
		for (i = 1; i < npre && (y = prewalk_next(&w)); i++) {
			x = pre[i].n;
			if (x->type != y->type || signature(t, x) != signature(t, y) ||
			    kept_children(y) != pre[i].kids)
				break;
			fold_node(x, y);
			fold_small(t, x, y);
		}
	}
	free(pre);
	free(w.next);
}

struct tnode *sp_tree_next_kept(struct tnode *c)
{
	while (c && !c->keep)
		c = c->next;
	return c;
}

unsigned int sp_tree_top_depth(const struct sp_tree *t)
{
	return t->o.nspans ? 0 : 1;
}

unsigned int sp_tree_depth_below(const struct tnode *n, unsigned int depth)
{
	if (n->matched)
		return 1;
	return depth ? depth + 1 : 0;
}

/* Whether p is in a container --container named. */
bool sp_tree_container_matches(const char *want, const char *runtime, const char *container)
{
	const char *colon = strchr(want, ':');
	size_t rl;

	if (!runtime || !container)
		return false;
	if (colon) {
		rl = (size_t)(colon - want);
		if (strlen(runtime) != rl || strncmp(runtime, want, rl))
			return false;
		want = colon + 1;
	}
	return !strncmp(container, want, strlen(want));
}

static bool in_containers(const struct sp_tree *t, const struct tproc *p)
{
	size_t i;

	if (!p)
		return false;
	for (i = 0; i < t->o.ncontainers; i++)
		if (sp_tree_container_matches(t->o.containers[i], p->runtime, p->container))
			return true;
	return false;
}

bool sp_tree_is_root(const struct sp_tree *t, const struct tproc *p)
{
	const struct tproc *parent;
	uint64_t *v;

	if (t->o.ncontainers) {
		/* the outermost processes of the container: their parent is not in it */
		if (!in_containers(t, p))
			return false;
		v = p->ppid ? sp_u64map_get(&t->procs, p->ppid) : NULL;
		parent = v ? (const struct tproc *)(uintptr_t)*v : NULL;
		return !parent || parent == p || !in_containers(t, parent);
	}
	return t->o.npids ? sp_tree_in_list(t->o.pids, t->o.npids, p->pid) : !p->attached;
}

