// SPDX-License-Identifier: MIT
/*
 * The streaming correlator: method spans per thread from span marks, fork
 * descendants, and the owner of every event and sample (docs/correlate.md).
 *
 * Spans form emission trees: a span's children are the spans started under
 * it on its thread and the root spans of threads and processes it forked.
 * The records a span owns are held with it; when the root of a tree closes,
 * the tree is emitted in pre-order (span record, its own records, then its
 * children), so every reference points backwards. A child still open at that
 * moment (another thread's) is detached and becomes a root of its own.
 * Spans are reference counted: a child, a thread's stack and a thread's fork
 * origin keep a span's struct (not its records) alive after its emission.
 *
 * Nothing here costs the depth of a thread's stack per record: stacks a
 * million spans deep come from real recursions and from forged input. A
 * stop mark looks down the stack only when an open span can match it (a
 * count per method, thread and fiber says so), and closes every span above
 * the one it matches; a lost window marks only the spans opened since the
 * last one; a thread's fork origin moves up to the open span it finds.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/heap.h"
#include "correlate.h"
#include "events.h"
#include "hashmap.h"
#include "sp.h"

/* A record waiting in the window or held by a span. */
struct hrec {
	struct hrec *next;
	uint64_t key;		/* time it is ordered by */
	uint64_t seq;		/* input order, breaks ties */
	uint8_t big;		/* 0 small, 1 full, 3 full + HREC_BYTES (pooled); 2 malloc'd */
	struct sp_record rec;	/* small ones end after the largest small member */
};

/* Every held kind but events fits in a small hrec. */
#define SMALL_REC (offsetof(struct sp_record, sample) + 96)
#define HREC_SMALL (offsetof(struct hrec, rec) + SMALL_REC)
#define HREC_FULL (offsetof(struct hrec, rec) + sizeof(struct sp_record))
#define HREC_BYTES 64		/* pooled room for an event's few bytes (addresses) */

struct span {
	struct span *up;	/* parent on the thread, or the fork span of a root */
	struct span *first_child, *last_child, *next_sibling;	/* not emitted yet */
	struct span *prev_root, *next_root;	/* in c->roots */
	struct hrec *held, *held_tail;
	struct proc *gap_of;	/* a gap span still open: its process */
	uint64_t child_total;	/* total samples of closed in-tree children */
	uint64_t depth;		/* the runtime's call depth, 0 = unknown */
	uint64_t nheld;		/* records held */
	unsigned int refs;
	bool open, emitted, up_is_fork, in_tree, is_root, raised, incomplete, gap;
	struct sp_span s;
};

struct proc;

/* The open spans of one fiber (coroutine) of a thread. */
struct fib {
	uint64_t id;		/* the runtime's, 0 = the thread's root fiber */
	struct span **stack;
	size_t depth, cap;
	struct span *base;	/* counted: parent of its outermost spans (the
				 * span that first resumed it), or NULL */
	size_t marked;		/* stack[0..marked) are marked incomplete */
};

struct thr {
	uint64_t tid, pid;
	/* The running fiber's stack (the root fiber's, without switches);
	 * the others are parked in fibs. */
	struct span **stack;
	size_t depth, cap;
	struct span *base;	/* struct fib's, for the running fiber */
	size_t marked;		/* struct fib's, for the running fiber */
	uint64_t fiber;
	struct fib *fibs;
	size_t nfibs, cfibs;
	struct span *origin;	/* span that created the thread, counted */
	struct proc *proc;
	struct thr *next_in_proc, *prev_in_proc;
	uint64_t raise_time, raise_class;
	bool raising;
	bool forked;		/* created by (or matched to) its fork event */
};

struct proc {
	uint64_t pid, ppid;
	struct span *origin;	/* span that forked the process, counted */
	struct span *gap;	/* open <no-span> gap span */
	struct thr *threads;
	bool defined, forked;
};

struct rslot {
	uint64_t key;		/* copied from the record: draining reads only the ring */
	struct hrec *h;
};

struct lostwin {
	uint64_t pid, end;
};

/*
 * Open spans per (thread, fiber, method, class), and per (thread, fiber,
 * method) under the class ANY_CLASS: whether a stop mark can match any
 * span of a stack, without looking at the stack.
 */
#define ANY_CLASS UINT64_MAX

struct mkey {
	uint64_t tid, fiber, method, klass;
};

struct mslot {
	struct mkey k;
	uint64_t n;		/* open spans; a free entry: the next free id */
};

/* The counts, in an array indexed by key; an entry whose count drops to 0
 * leaves the index and is chained for reuse. */
struct mcount {
	struct mslot *v;	/* v[id - 1] */
	size_t n, cap;
	uint32_t free;		/* first free id, 0 = none */
	struct sp_idset idx;
};

struct sp_corr {
	struct sp_corr_opts o;
	sp_corr_emit_fn emit;
	void *ctx;
	int failed;
	bool passthrough;	/* the stream is correlated already */
	uint64_t pass_spans;	/* span records passed through in this stream */
	struct sp_corr_stats st;

	/* the reorder window: records in order queue in a ring, the others in a heap */
	struct sp_heap heap;
	struct rslot *ring;
	size_t rhead, rlen, rcap;
	uint64_t seq, released, max_time;
	bool any_released;

	struct sp_u64map threads, procs;	/* tid, pid -> struct thr, struct proc */
	struct mcount open;	/* open spans by method, for stop marks */
	struct span *roots, *roots_tail;	/* emission roots, by start time */
	struct hrec *deferred, *deferred_tail;	/* end records waiting for older held ones */
	uint64_t held;
	uint64_t next_id;
	struct lostwin *lost;
	size_t nlost, caplost;

	struct hrec *free_small, *free_full, *free_bytes;
	struct sp_record scratch;	/* tail stays zero */
	struct span **work;	/* emission stack */
	size_t capwork;
};

/* ---- small helpers ---------------------------------------------------- */

static struct thr *thr_find(const struct sp_corr *c, uint64_t tid)
{
	uint64_t *v = sp_u64map_get(&c->threads, tid);

	return v ? (struct thr *)(uintptr_t)*v : NULL;
}

static struct proc *proc_find(const struct sp_corr *c, uint64_t pid)
{
	uint64_t *v = sp_u64map_get(&c->procs, pid);

	return v ? (struct proc *)(uintptr_t)*v : NULL;
}

static uint64_t mkey_hash(const struct mkey *k)
{
	return sp_hash_mix(sp_hash_mix(sp_hash_mix(sp_hash_u64(k->tid), k->fiber), k->method),
			   k->klass);
}

static bool mkey_eq(void *ctx, uint32_t id, const void *key)
{
	const struct mkey *a = &((const struct mcount *)ctx)->v[id - 1].k, *b = key;

	return a->tid == b->tid && a->fiber == b->fiber && a->method == b->method &&
	       a->klass == b->klass;
}

static uint64_t mcount_get(struct mcount *m, const struct mkey *k)
{
	uint32_t id = sp_idset_find(&m->idx, mkey_hash(k), k, mkey_eq, m);

	return id ? m->v[id - 1].n : 0;
}

static void mcount_add(struct mcount *m, const struct mkey *k)
{
	uint64_t h = mkey_hash(k);
	uint32_t id = sp_idset_find(&m->idx, h, k, mkey_eq, m);

	if (!id) {
		if (m->free) {
			id = m->free;
			m->free = (uint32_t)m->v[id - 1].n;
		} else {
			sp_grow(&m->v, &m->cap, m->n + 1, sizeof(*m->v));
			id = (uint32_t)++m->n;
		}
		m->v[id - 1].k = *k;
		m->v[id - 1].n = 0;
		sp_idset_add(&m->idx, h, id);
	}
	m->v[id - 1].n++;
}

static void mcount_sub(struct mcount *m, const struct mkey *k)
{
	uint64_t h = mkey_hash(k);
	uint32_t id = sp_idset_find(&m->idx, h, k, mkey_eq, m);

	if (!id || --m->v[id - 1].n)
		return;
	sp_idset_del(&m->idx, h, id);
	m->v[id - 1].n = m->free;
	m->free = id;
}

const char *sp_rule_name(uint64_t rule)
{
	static const char *const names[] = { "none", "thread", "fork", "gap" };

	return rule < 4 ? names[rule] : "?";
}

const char *sp_span_end_name(uint64_t end)
{
	static const char *const names[] = { "stopped", "raised", "open", "incomplete",
					     "synthetic" };

	return end < 5 ? names[end] : "?";
}

/* ---- held records ----------------------------------------------------- */

static size_t rec_bytes(const struct sp_record *r)
{
	size_t n = r->extra.len;
	unsigned int i;

	if (r->kind == SP_REC_EVENT) {
		n += r->event.raw.len;
		for (i = 0; i < r->event.nfields && i < SP_EVENT_MAX_FIELDS; i++)
			n += r->event.field[i].b.len;
	}
	return n;
}

static uint8_t *copy_bytes(struct sp_bytes *b, uint8_t *to)
{
	if (!b->len) {
		b->p = NULL;
		return to;
	}
	memcpy(to, b->p, b->len);
	b->p = to;
	return to + b->len;
}

static struct hrec *hrec_new(struct sp_corr *c, const struct sp_record *r)
{
	size_t nb = rec_bytes(r);
	struct hrec *h;
	uint8_t *p;
	unsigned int i;

	if (r->kind != SP_REC_EVENT && !nb) {
		if ((h = c->free_small))
			c->free_small = h->next;
		else
			h = sp_xmalloc(HREC_SMALL);
		h->big = 0;
		memcpy(&h->rec, r, SMALL_REC);
	} else if (!nb) {
		if ((h = c->free_full))
			c->free_full = h->next;
		else
			h = sp_xmalloc(HREC_FULL);
		h->big = 1;
		memcpy(&h->rec, r, sizeof(*r));
	} else {
		if (nb <= HREC_BYTES && (h = c->free_bytes)) {
			c->free_bytes = h->next;
		} else {
			h = sp_xmalloc(HREC_FULL + (nb <= HREC_BYTES ? HREC_BYTES : nb));
		}
		h->big = nb <= HREC_BYTES ? 3 : 2;
		memcpy(&h->rec, r, r->kind == SP_REC_EVENT ? sizeof(*r) : SMALL_REC);
		p = (uint8_t *)h + HREC_FULL;
		p = copy_bytes(&h->rec.extra, p);
		if (r->kind == SP_REC_EVENT) {
			p = copy_bytes(&h->rec.event.raw, p);
			for (i = 0; i < h->rec.event.nfields && i < SP_EVENT_MAX_FIELDS; i++)
				p = copy_bytes(&h->rec.event.field[i].b, p);
		}
	}
	h->next = NULL;
	return h;
}

static void hrec_free(struct sp_corr *c, struct hrec *h)
{
	if (h->big == 0) {
		h->next = c->free_small;
		c->free_small = h;
	} else if (h->big == 1) {
		h->next = c->free_full;
		c->free_full = h;
	} else if (h->big == 3) {
		h->next = c->free_bytes;
		c->free_bytes = h;
	} else {
		free(h);
	}
}

static void out(struct sp_corr *c, const struct sp_record *r)
{
	if (c->failed)
		return;
	if (c->emit(c->ctx, r))
		c->failed = 1;
}

/* A small hrec's record is copied out whole: consumers may copy a record. */
static void out_h(struct sp_corr *c, struct hrec *h)
{
	if (h->big) {
		out(c, &h->rec);
		return;
	}
	memcpy(&c->scratch, &h->rec, SMALL_REC);
	out(c, &c->scratch);
}

/* ---- spans ------------------------------------------------------------ */

static void span_get(struct span *s)
{
	s->refs++;
}

static void span_put(struct span *s)
{
	struct span *up;

	while (s && !--s->refs) {
		up = s->up;
		free(s);
		s = up;
	}
}

static void roots_insert(struct sp_corr *c, struct span *s)
{
	struct span *p = c->roots_tail;

	while (p && p->s.start > s->s.start)
		p = p->prev_root;
	s->prev_root = p;
	s->next_root = p ? p->next_root : c->roots;
	if (s->next_root)
		s->next_root->prev_root = s;
	else
		c->roots_tail = s;
	if (p)
		p->next_root = s;
	else
		c->roots = s;
	s->is_root = true;
}

static void roots_remove(struct sp_corr *c, struct span *s)
{
	if (s->prev_root)
		s->prev_root->next_root = s->next_root;
	else
		c->roots = s->next_root;
	if (s->next_root)
		s->next_root->prev_root = s->prev_root;
	else
		c->roots_tail = s->prev_root;
	s->prev_root = s->next_root = NULL;
	s->is_root = false;
}

static bool in_lost_window(struct sp_corr *c, uint64_t pid, uint64_t time)
{
	size_t i;

	for (i = 0; i < c->nlost; i++)
		if (time <= c->lost[i].end && (!c->lost[i].pid || c->lost[i].pid == pid))
			return true;
	return false;
}

/*
 * A new span; up (its parent, or fork span when fork) is taken as a counted
 * reference. It joins up's tree while up is not emitted, else it is a root.
 */
static struct span *span_new(struct sp_corr *c, struct span *up, bool fork)
{
	struct span *s = sp_xcalloc(1, sizeof(*s));

	s->refs = 1;		/* the tree's (or the roots list's) */
	s->open = true;
	s->up = up;
	s->up_is_fork = fork;
	if (up)
		span_get(up);
	return s;
}

static void span_link(struct sp_corr *c, struct span *s)
{
	struct span *up = s->up;

	if (up && !up->emitted) {
		if (up->last_child)
			up->last_child->next_sibling = s;
		else
			up->first_child = s;
		up->last_child = s;
		s->in_tree = true;
	} else {
		if (up && s->up_is_fork)
			s->s.fork_span = up->s.id;
		else if (up)
			s->s.parent = up->s.id;
		roots_insert(c, s);
	}
}

static void flush_deferred(struct sp_corr *c);

/* Emit a span record and its held records, then forget the records. */
static void emit_one(struct sp_corr *c, struct span *s)
{
	struct sp_record r = { .kind = SP_REC_SPAN };
	struct hrec *h, *next;

	s->s.id = ++c->next_id;
	if (s->up && s->up->emitted) {
		if (s->up_is_fork)
			s->s.fork_span = s->up->s.id;
		else
			s->s.parent = s->up->s.id;
	}
	if (s->open) {
		s->s.stop = 0;
		s->s.end = SP_END_OPEN;
		s->s.total_samples = s->s.samples + s->child_total;
	}
	if (s->incomplete && !s->gap)
		s->s.end = SP_END_INCOMPLETE;
	s->emitted = true;
	r.span = s->s;
	c->st.spans++;
	out(c, &r);
	for (h = s->held; h; h = next) {
		next = h->next;
		if (h->rec.kind == SP_REC_SAMPLE)
			h->rec.sample.span = s->s.id;
		else if (h->rec.kind == SP_REC_EVENT)
			h->rec.event.span = s->s.id;
		out_h(c, h);
		hrec_free(c, h);
	}
	c->held -= s->nheld;
	s->nheld = 0;
	s->held = s->held_tail = NULL;
}

static void work_push(struct sp_corr *c, size_t *n, struct span *s)
{
	if (*n == c->capwork)
		sp_grow(&c->work, &c->capwork, *n + 1, sizeof(*c->work));
	c->work[(*n)++] = s;
}

/*
 * Emit the tree under root (an emission root) in pre-order. Open children
 * are detached into roots of their own unless with_open (an early flush),
 * which emits them as they are.
 */
static void emit_tree(struct sp_corr *c, struct span *root, bool with_open)
{
	struct span *s, *ch, *next, *rev;
	size_t n = 0;

	if (root->is_root)
		roots_remove(c, root);
	work_push(c, &n, root);
	while (n) {
		s = c->work[--n];
		emit_one(c, s);
		/* push children in reverse so the first is emitted first */
		rev = NULL;
		for (ch = s->first_child; ch; ch = next) {
			next = ch->next_sibling;
			ch->next_sibling = rev;
			rev = ch;
		}
		s->first_child = s->last_child = NULL;
		for (ch = rev; ch; ch = next) {
			next = ch->next_sibling;
			ch->next_sibling = NULL;
			ch->in_tree = false;
			if (ch->open && !with_open) {
				if (ch->up_is_fork)
					ch->s.fork_span = s->s.id;
				else
					ch->s.parent = s->s.id;
				roots_insert(c, ch);
			} else {
				work_push(c, &n, ch);
			}
		}
		span_put(s);	/* the tree's reference */
	}
	flush_deferred(c);
}

/* Account a held record and take it out of the count of held records. */
static void hold(struct sp_corr *c, struct span *s, struct hrec *h, uint64_t rule);

static void close_gap(struct sp_corr *c, struct proc *p)
{
	struct span *g = p->gap;

	if (!g)
		return;
	p->gap = NULL;
	g->gap_of = NULL;
	g->open = false;
	g->s.total_samples = g->s.samples;
	emit_tree(c, g, false);
}

/* Count span s in or out of the open spans of t's running fiber. */
static void count_open(struct sp_corr *c, const struct thr *t, const struct span *s, bool in)
{
	struct mkey k = { t->tid, t->fiber, s->s.method, ANY_CLASS };

	if (!s->s.method)
		return;		/* only a stop without a method matches it: the top */
	if (in)
		mcount_add(&c->open, &k);
	else
		mcount_sub(&c->open, &k);
	k.klass = s->s.klass;
	if (in)
		mcount_add(&c->open, &k);
	else
		mcount_sub(&c->open, &k);
}

/* Close the top span of t's stack. */
static void close_top(struct sp_corr *c, struct thr *t, uint64_t end, uint64_t time)
{
	struct span *s = t->stack[--t->depth];

	if (t->marked > t->depth)
		t->marked = t->depth;
	count_open(c, t, s, false);
	s->open = false;
	s->s.stop = time < s->s.start ? s->s.start : time;
	s->s.end = end;
	if (in_lost_window(c, s->s.pid, time))
		s->incomplete = true;
	if (s->incomplete)
		c->st.incomplete++;
	s->s.total_samples = s->s.samples + s->child_total;
	if (s->in_tree && s->up && s->up->open)
		s->up->child_total += s->s.total_samples;
	if (s->is_root && !s->emitted)
		emit_tree(c, s, false);
	span_put(s);	/* the stack's reference */
}

static void close_stack(struct sp_corr *c, struct thr *t, uint64_t time);

/* Swap the running fiber's stack of t with f. */
static void fib_swap(struct thr *t, struct fib *f)
{
	struct fib cur = { t->fiber, t->stack, t->depth, t->cap, t->base, t->marked };

	t->fiber = f->id;
	t->stack = f->stack;
	t->depth = f->depth;
	t->cap = f->cap;
	t->base = f->base;
	t->marked = f->marked;
	*f = cur;
}

/* Close every span of a thread, in every fiber: its thread, process or the
 * recording ended. */
static void close_all(struct sp_corr *c, struct thr *t, uint64_t time)
{
	close_stack(c, t, time);
	while (t->nfibs) {
		struct fib *f = &t->fibs[--t->nfibs];

		fib_swap(t, f);
		close_stack(c, t, time);
		free(f->stack);		/* the stack that was running */
		span_put(f->base);
	}
}

/* Close the running fiber's spans as open at time. */
static void close_stack(struct sp_corr *c, struct thr *t, uint64_t time)
{
	while (t->depth) {
		c->st.open_at_end++;
		if (t->raising) {
			struct span *s = t->stack[t->depth - 1];

			if (!s->s.error)
				s->s.error = t->raise_class;
			close_top(c, t, SP_END_RAISED, t->raise_time > s->s.start ?
				  t->raise_time : time);
		} else {
			close_top(c, t, SP_END_OPEN, time);
		}
	}
}

/* ---- threads and processes -------------------------------------------- */

static struct proc *proc_new(struct sp_corr *c, uint64_t pid)
{
	struct proc *p = sp_xcalloc(1, sizeof(*p));

	p->pid = pid;
	sp_u64map_put(&c->procs, pid, (uintptr_t)p);
	return p;
}

static void thr_free(struct sp_corr *c, struct thr *t, uint64_t time)
{
	close_all(c, t, time);
	if (t->prev_in_proc)
		t->prev_in_proc->next_in_proc = t->next_in_proc;
	else
		t->proc->threads = t->next_in_proc;
	if (t->next_in_proc)
		t->next_in_proc->prev_in_proc = t->prev_in_proc;
	sp_u64map_del(&c->threads, t->tid);
	span_put(t->origin);
	span_put(t->base);
	free(t->stack);
	free(t->fibs);
	free(t);
}

static void proc_end(struct sp_corr *c, struct proc *p, uint64_t time)
{
	while (p->threads)
		thr_free(c, p->threads, time);
	close_gap(c, p);
	sp_u64map_del(&c->procs, p->pid);
	span_put(p->origin);
	free(p);
}

static struct proc *proc_get(struct sp_corr *c, uint64_t pid)
{
	struct proc *p = proc_find(c, pid);

	if (!p) {
		p = proc_new(c, pid);
		c->st.unknown_pids++;
	}
	return p;
}

static struct span *first_open(struct span **origin);

static struct thr *thr_new(struct sp_corr *c, struct proc *p, uint64_t tid, struct span *origin)
{
	struct thr *t = sp_xcalloc(1, sizeof(*t));

	if (origin && origin == p->origin) {	/* its threads start where it is now */
		first_open(&p->origin);
		origin = p->origin;
	}
	t->tid = tid;
	t->pid = p->pid;
	t->proc = p;
	t->origin = origin;
	if (origin)
		span_get(origin);
	t->next_in_proc = p->threads;
	if (p->threads)
		p->threads->prev_in_proc = t;
	p->threads = t;
	sp_u64map_put(&c->threads, tid, (uintptr_t)t);
	return t;
}

static struct thr *thr_get(struct sp_corr *c, uint64_t pid, uint64_t tid, uint64_t time)
{
	struct thr *t = thr_find(c, tid);
	struct proc *p;

	if (t && t->pid == pid)
		return t;
	if (t) {		/* tid reused by another process: the old thread is gone */
		c->st.pid_reuse++;
		thr_free(c, t, time);
	}
	p = proc_get(c, pid);
	return thr_new(c, p, tid, p->origin);
}

/* ---- the rules -------------------------------------------------------- */

/*
 * The innermost open span on the chain of spans from *origin up. A span
 * that closed never opens again: *origin (a counted reference) moves up to
 * the span found, or to the top of the chain, so that the next look starts
 * there and no closed span is passed over twice.
 */
static struct span *first_open(struct span **origin)
{
	struct span *s, *last = NULL;

	for (s = *origin; s; s = s->up) {
		last = s;
		if (s->open)
			break;
	}
	if (last && last != *origin) {
		span_get(last);
		span_put(*origin);
		*origin = last;
	}
	return s;
}

/* The innermost open span on the chain of spans that created the thread. */
static struct span *fork_owner(struct thr *t)
{
	return first_open(&t->origin);
}

static struct span *gap_get(struct sp_corr *c, struct proc *p, uint64_t time)
{
	struct span *g = p->gap;

	if (g && g->nheld >= c->o.gap_max)
		close_gap(c, p);
	if (!p->gap) {
		g = span_new(c, NULL, false);
		g->gap = true;
		g->gap_of = p;
		g->s.pid = p->pid;
		g->s.tid = p->pid;
		g->s.start = g->s.stop = time;
		g->s.end = SP_END_SYNTHETIC;
		span_link(c, g);
		p->gap = g;
		c->st.gap_spans++;
	}
	return p->gap;
}

static struct span *assign(struct sp_corr *c, struct thr *t, uint64_t time, uint64_t *rule)
{
	struct span *s;

	if (t->depth) {
		*rule = SP_RULE_THREAD;
		return t->stack[t->depth - 1];
	}
	if (t->base && t->base->open) {	/* a fiber between its spans */
		*rule = SP_RULE_THREAD;
		return t->base;
	}
	s = fork_owner(t);
	if (s) {
		*rule = SP_RULE_FORK;
		return s;
	}
	*rule = SP_RULE_GAP;
	return gap_get(c, t->proc, time);
}

static void hold(struct sp_corr *c, struct span *s, struct hrec *h, uint64_t rule)
{
	struct sp_record *r = &h->rec;

	if (r->kind == SP_REC_SAMPLE) {
		r->sample.rule = rule;
		if (r->sample.kind == SP_SAMPLE_OFFCPU)
			s->s.offcpu_ns += r->sample.weight;
		else
			s->s.samples += r->sample.weight ? r->sample.weight : 1;
		c->st.assigned[rule & 3]++;
	} else if (r->kind == SP_REC_EVENT) {
		r->event.rule = rule;
		s->s.events++;
		c->st.assigned[rule & 3]++;
	}
	if (s->gap && h->key > s->s.stop)
		s->s.stop = h->key;
	if (s->emitted) {	/* flushed early: the span's record is out already */
		if (r->kind == SP_REC_SAMPLE)
			r->sample.span = s->s.id;
		else if (r->kind == SP_REC_EVENT)
			r->event.span = s->s.id;
		out_h(c, h);
		hrec_free(c, h);
		return;
	}
	h->next = NULL;
	if (s->held_tail)
		s->held_tail->next = h;
	else
		s->held = h;
	s->held_tail = h;
	s->nheld++;
	c->held++;
}

/* Too much held: emit the oldest trees as they are (docs/correlate.md). */
static void relieve(struct sp_corr *c)
{
	struct span *r;

	while (c->held > c->o.max_held / 4 * 3 && (r = c->roots)) {
		c->st.early_flush++;
		if (r->gap_of)
			close_gap(c, r->gap_of);
		else
			emit_tree(c, r, true);
	}
}

/* ---- processing ------------------------------------------------------- */

static bool mark_matches(const struct span *s, const struct sp_span_mark *m)
{
	if (!m->method)
		return true;
	if (s->s.method != m->method)
		return false;
	return !m->klass || !s->s.klass || s->s.klass == m->klass;
}

static void do_start(struct sp_corr *c, struct thr *t, struct hrec *h)
{
	const struct sp_span_mark *m = &h->rec.mark;
	struct span *up, *s;
	bool fork = false;

	/* A runtime that reports depths tells us which frames were unwound. */
	while (m->depth && t->depth && t->stack[t->depth - 1]->depth >= m->depth) {
		c->st.unwound++;
		close_top(c, t, t->raising ? SP_END_RAISED : SP_END_INCOMPLETE,
			  t->raising ? t->raise_time : m->time);
	}
	t->raising = false;
	up = t->depth ? t->stack[t->depth - 1] : t->base;
	if (!up) {
		up = fork_owner(t);
		fork = up != NULL;
		close_gap(c, t->proc);
	}
	s = span_new(c, up, fork);
	s->s.pid = t->pid;
	s->s.tid = t->tid;
	s->s.runtime = m->runtime;
	s->s.klass = m->klass;
	s->s.method = m->method;
	s->s.file = m->file;
	s->s.line = m->line;
	s->s.start = m->time;
	s->s.end = SP_END_STOPPED;
	s->depth = m->depth;
	if (in_lost_window(c, t->pid, m->time))
		s->incomplete = true;
	span_link(c, s);
	if (t->depth == t->cap)
		sp_grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack));
	t->stack[t->depth++] = s;
	count_open(c, t, s, true);
	span_get(s);
	hold(c, s, h, 0);
}

/* Whether an open span of t's running fiber can match stop mark m. */
static bool stop_may_match(struct sp_corr *c, const struct thr *t, const struct sp_span_mark *m)
{
	struct mkey k = { t->tid, t->fiber, m->method, ANY_CLASS };

	if (!m->method || !t->depth)
		return t->depth > 0;
	if (!mcount_get(&c->open, &k))
		return false;
	if (!m->klass)
		return true;
	k.klass = m->klass;	/* its class, or a span without one */
	if (mcount_get(&c->open, &k))
		return true;
	k.klass = 0;
	return mcount_get(&c->open, &k) > 0;
}

static void do_stop(struct sp_corr *c, struct thr *t, struct hrec *h)
{
	const struct sp_span_mark *m = &h->rec.mark;
	uint64_t rule, time = m->time;
	struct span *s;
	int k;

	/* A match closes every span above it: each one is passed over once. */
	k = -1;
	if (stop_may_match(c, t, m)) {
		for (k = (int)t->depth - 1; k >= 0; k--)
			if (mark_matches(t->stack[k], m))
				break;
	}
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	else if (t->depth <= 256) {	/* what the fuzzer makes, not the deep seeds */
		for (k = (int)t->depth - 1; k >= 0; k--)
			if (mark_matches(t->stack[k], m))
				abort();	/* the counts of open spans are wrong */
	}
#endif
	if (k < 0) {
		c->st.stop_without_start++;
		hold(c, assign(c, t, time, &rule), h, 0);
		return;
	}
	while ((int)t->depth - 1 > k) {	/* frames above it were unwound */
		s = t->stack[t->depth - 1];
		c->st.unwound++;
		if (t->raising) {
			if (!s->s.error)
				s->s.error = t->raise_class;
			close_top(c, t, SP_END_RAISED,
				  t->raise_time > s->s.start ? t->raise_time : time);
		} else {
			close_top(c, t, SP_END_INCOMPLETE, time);
		}
	}
	s = t->stack[k];
	hold(c, s, h, 0);
	close_top(c, t, s->raised ? SP_END_RAISED : SP_END_STOPPED, time);
}

static void do_raise(struct sp_corr *c, struct thr *t, struct hrec *h)
{
	const struct sp_span_mark *m = &h->rec.mark;
	struct span *s;
	uint64_t rule;

	t->raising = true;
	t->raise_time = m->time;
	t->raise_class = m->klass;
	if (!t->depth) {
		c->st.raise_without_span++;
		hold(c, assign(c, t, m->time, &rule), h, 0);
		return;
	}
	s = t->stack[t->depth - 1];
	s->raised = true;
	s->s.error = m->klass;
	hold(c, s, h, 0);
}

/*
 * A fiber switch: park the running fiber's stack, take the other's. A new
 * fiber's outermost spans nest in the span that started it (the resumer's
 * innermost); a new fiber with the id of a parked one (the runtime reused
 * a dead fiber's id) ends the old one's spans as incomplete.
 */
static void do_fiber(struct sp_corr *c, struct thr *t, const struct sp_fiber_switch *fs)
{
	struct span *resumer = t->depth ? t->stack[t->depth - 1] : t->base;
	struct fib f = { 0 };
	size_t i;

	if (fs->to == t->fiber && !(fs->flags & SP_FIBER_NEW))
		return;
	if (resumer)
		span_get(resumer);
	/* park the running one (an empty root fiber parks too: it comes back) */
	if (t->depth || t->base || !t->fiber) {
		if (t->nfibs == t->cfibs)
			sp_grow(&t->fibs, &t->cfibs, t->nfibs + 1, sizeof(*t->fibs));
		t->fibs[t->nfibs++] = f;
		fib_swap(t, &t->fibs[t->nfibs - 1]);
	} else {
		free(t->stack);
		t->stack = NULL;
		t->depth = t->cap = t->marked = 0;
	}
	for (i = 0; i < t->nfibs; i++)
		if (t->fibs[i].id == fs->to)
			break;
	if (i < t->nfibs) {
		fib_swap(t, &t->fibs[i]);	/* t->fibs[i] is now the empty one */
		t->fibs[i] = t->fibs[--t->nfibs];
		if (fs->flags & SP_FIBER_NEW) {
			while (t->depth)
				close_top(c, t, SP_END_INCOMPLETE, fs->time);
			span_put(t->base);
			t->base = NULL;
		}
	}
	t->fiber = fs->to;
	if (!t->depth && !t->base && (fs->flags & SP_FIBER_NEW)) {
		t->base = resumer;
		resumer = NULL;
	}
	span_put(resumer);
	c->st.fiber_switches++;
}

/* Mark the spans of a stack opened since it was last marked: the others
 * are marked already (a span stays incomplete, and stays below them). */
static void mark_incomplete(struct span **stack, size_t depth, size_t *marked)
{
	size_t i;

	for (i = *marked; i < depth; i++)
		stack[i]->incomplete = true;
	*marked = depth;
}

/* Open spans of pid (0 = all) overlap a lost window. */
static void do_lost(struct sp_corr *c, const struct sp_lost *l)
{
	struct thr *t;
	size_t it, k;
	uint64_t v;

	for (it = 0; sp_u64map_next(&c->threads, &it, NULL, &v);) {
		t = (struct thr *)(uintptr_t)v;
		if (l->pid && t->pid != l->pid)
			continue;
		mark_incomplete(t->stack, t->depth, &t->marked);
		for (k = 0; k < t->nfibs; k++)
			mark_incomplete(t->fibs[k].stack, t->fibs[k].depth, &t->fibs[k].marked);
	}
	if (c->nlost == 0 || c->lost[c->nlost - 1].pid != l->pid ||
	    c->lost[c->nlost - 1].end < l->time) {
		if (c->nlost == c->caplost)
			sp_grow(&c->lost, &c->caplost, c->nlost + 1, sizeof(*c->lost));
		c->lost[c->nlost].pid = l->pid;
		c->lost[c->nlost].end = l->time;
		c->nlost++;
	}
}

static void prune_lost(struct sp_corr *c, uint64_t now)
{
	size_t i, j = 0;

	for (i = 0; i < c->nlost; i++)
		if (c->lost[i].end >= now)
			c->lost[j++] = c->lost[i];
	c->nlost = j;
}

/* The image of p was replaced: its threads and their spans are gone. */
static void do_exec(struct sp_corr *c, struct proc *p, uint64_t time)
{
	while (p->threads)
		thr_free(c, p->threads, time);
}

static bool thread_in(const struct proc *p, uint64_t tid)
{
	const struct thr *t;

	for (t = p->threads; t; t = t->next_in_proc)
		if (t->tid == tid)
			return true;
	return false;
}

static void do_fork(struct sp_corr *c, struct thr *t, const struct sp_event *e,
		    struct span *owner, uint64_t rule)
{
	uint64_t child_pid = e->field[0].u, child_tid = e->field[1].u;
	struct span *origin = rule == SP_RULE_GAP ? NULL : owner;
	struct proc *p;
	struct thr *ct;

	/* a fork that names its own thread or process is nonsense: ignored */
	if (e->field[2].u & SP_FORK_THREAD) {
		if (!child_tid || child_tid == t->tid)
			return;
		ct = thr_find(c, child_tid);
		if (ct && !ct->forked && ct->pid == t->pid) {
			/* seen first: sp-record's thread record can carry an
			 * earlier time than the fork event */
			ct->forked = true;
			if (!ct->origin && origin) {
				ct->origin = origin;
				span_get(origin);
			}
			return;
		}
		if (ct) {
			c->st.pid_reuse++;
			thr_free(c, ct, e->time);
		}
		thr_new(c, t->proc, child_tid, origin)->forked = true;
		return;
	}
	if (!child_pid || child_pid == t->pid || (child_tid && child_tid == t->tid))
		return;
	p = proc_find(c, child_pid);
	if (p && p->forked) {
		/* a live process already came from a fork with that pid: it ended unseen */
		c->st.pid_reuse++;
		proc_end(c, p, e->time);
		p = NULL;
	}
	if (!p)
		p = proc_new(c, child_pid);
	p->forked = true;
	p->ppid = t->pid;
	span_put(p->origin);
	p->origin = origin;
	if (origin)
		span_get(origin);
	/*
	 * The child may have been seen first (sp-record's process and thread
	 * records can carry an earlier time than the fork event): its threads
	 * without an origin get this one.
	 */
	for (ct = p->threads; ct; ct = ct->next_in_proc) {
		if (!ct->origin && origin) {
			ct->origin = origin;
			span_get(origin);
		}
	}
	if (child_tid && !thread_in(p, child_tid)) {
		ct = thr_find(c, child_tid);
		if (ct)
			thr_free(c, ct, e->time);
		thr_new(c, p, child_tid, origin);
	}
}

static void defer(struct sp_corr *c, struct hrec *h)
{
	h->next = NULL;
	if (c->deferred_tail)
		c->deferred_tail->next = h;
	else
		c->deferred = h;
	c->deferred_tail = h;
	flush_deferred(c);
}

static void flush_deferred(struct sp_corr *c)
{
	struct hrec *h;

	while ((h = c->deferred) && (!c->roots || h->key < c->roots->s.start || !c->held)) {
		c->deferred = h->next;
		if (!c->deferred)
			c->deferred_tail = NULL;
		out_h(c, h);
		hrec_free(c, h);
	}
}

/* Take one timed record in time order. h is consumed. */
static void process(struct sp_corr *c, struct hrec *h)
{
	struct sp_record *r = &h->rec;
	struct span *owner;
	struct proc *p;
	struct thr *t;
	uint64_t rule;

	if (c->nlost)
		prune_lost(c, h->key);
	switch (r->kind) {
	case SP_REC_SAMPLE:
		t = thr_get(c, r->sample.pid, r->sample.tid, r->sample.time);
		owner = assign(c, t, r->sample.time, &rule);
		hold(c, owner, h, rule);
		break;
	case SP_REC_EVENT: {
		struct sp_event e;

		t = thr_get(c, r->event.pid, r->event.tid, r->event.time);
		owner = assign(c, t, r->event.time, &rule);
		e = r->event;	/* h may be emitted and freed by hold() */
		span_get(owner);
		hold(c, owner, h, rule);
		switch (e.kind) {
		case SP_EV_PROC_FORK:
			do_fork(c, t, &e, owner, rule);
			break;
		case SP_EV_PROC_EXEC:
			do_exec(c, t->proc, e.time);
			break;
		case SP_EV_PROC_EXIT:
			if (e.field[2].u)
				thr_free(c, t, e.time);
			else
				proc_end(c, t->proc, e.time);
			break;
		}
		span_put(owner);
		break;
	}
	case SP_REC_SPAN_START:
		do_start(c, thr_get(c, r->mark.pid, r->mark.tid, r->mark.time), h);
		break;
	case SP_REC_SPAN_STOP:
		do_stop(c, thr_get(c, r->mark.pid, r->mark.tid, r->mark.time), h);
		break;
	case SP_REC_SPAN_RAISE:
		do_raise(c, thr_get(c, r->mark.pid, r->mark.tid, r->mark.time), h);
		break;
	case SP_REC_PROCESS:
		p = proc_find(c, r->process.pid);
		if (p && (r->process.flags & SP_PROC_EXEC)) {
			do_exec(c, p, r->process.time);
		} else if (p && p->defined) {
			c->st.pid_reuse++;
			proc_end(c, p, r->process.time);
			p = NULL;
		}
		if (!p)
			p = proc_new(c, r->process.pid);
		p->defined = true;
		if (!p->ppid)
			p->ppid = r->process.ppid;
		out_h(c, h);
		hrec_free(c, h);
		break;
	case SP_REC_THREAD:
		t = thr_find(c, r->thread.tid);
		if (t && t->pid != r->thread.pid) {
			c->st.pid_reuse++;
			thr_free(c, t, r->thread.time);
			t = NULL;
		}
		if (!t) {
			p = proc_find(c, r->thread.pid);
			if (!p)
				p = proc_new(c, r->thread.pid);
			thr_new(c, p, r->thread.tid, p->origin);
		}
		out_h(c, h);
		hrec_free(c, h);
		break;
	case SP_REC_THREAD_END:
		t = thr_find(c, r->thread_end.tid);
		if (t)
			thr_free(c, t, r->thread_end.time);
		defer(c, h);
		break;
	case SP_REC_PROCESS_END:
		p = proc_find(c, r->process_end.pid);
		if (p && (r->process_end.flags & SP_PEND_EXEC))
			do_exec(c, p, r->process_end.time);	/* the pid lives on */
		else if (p)
			proc_end(c, p, r->process_end.time);
		defer(c, h);
		break;
	case SP_REC_MODULE_END:
		defer(c, h);
		break;
	case SP_REC_LOST:
		do_lost(c, &r->lost);
		out_h(c, h);
		hrec_free(c, h);
		break;
	case SP_REC_FIBER_SWITCH:
		do_fiber(c, thr_get(c, r->fiber_switch.pid, r->fiber_switch.tid,
				    r->fiber_switch.time), &r->fiber_switch);
		out_h(c, h);
		hrec_free(c, h);
		break;
	default:
		out_h(c, h);
		hrec_free(c, h);
		break;
	}
	if (c->held > c->o.max_held)
		relieve(c);
}

/* ---- the reorder window ----------------------------------------------- */

static void ring_push(struct sp_corr *c, struct hrec *h)
{
	size_t i;

	if (c->rlen == c->rcap) {
		size_t cap = c->rcap ? c->rcap * 2 : 1024;
		struct rslot *v = sp_xmalloc(cap * sizeof(*v));

		for (i = 0; i < c->rlen; i++)
			v[i] = c->ring[(c->rhead + i) & (c->rcap - 1)];
		free(c->ring);
		c->ring = v;
		c->rcap = cap;
		c->rhead = 0;
	}
	i = (c->rhead + c->rlen++) & (c->rcap - 1);
	c->ring[i].key = h->key;
	c->ring[i].h = h;
}

/* Keys in the ring never decrease; the heap holds what came out of order.
 * Ties go to the ring when its record came first (seq). */
static bool heap_first(const struct sp_corr *c)
{
	const struct sp_heap_item *top = sp_heap_top(&c->heap);
	const struct rslot *r;

	if (!top)
		return false;
	if (!c->rlen)
		return true;
	r = &c->ring[c->rhead];
	return sp_heap_before(top->key, top->seq, r->key, r->h->seq);
}

/* The key of the oldest record waiting; false if none. */
static bool window_min(const struct sp_corr *c, uint64_t *key)
{
	if (heap_first(c))
		*key = sp_heap_top(&c->heap)->key;
	else if (c->rlen)
		*key = c->ring[c->rhead].key;
	else
		return false;
	return true;
}

static struct hrec *window_pop(struct sp_corr *c)
{
	struct hrec *h;

	if (heap_first(c))
		return sp_heap_pop(&c->heap);
	h = c->ring[c->rhead].h;
	c->rhead = (c->rhead + 1) & (c->rcap - 1);
	c->rlen--;
	return h;
}

static void window_push(struct sp_corr *c, struct hrec *h)
{
	if (!c->rlen || h->key >= c->ring[(c->rhead + c->rlen - 1) & (c->rcap - 1)].key)
		ring_push(c, h);	/* in order: the common case */
	else
		sp_heap_push(&c->heap, h->key, h->seq, h);
}

static void release(struct sp_corr *c, struct hrec *h)
{
	c->released = h->key;
	c->any_released = true;
	process(c, h);
}

static void drain(struct sp_corr *c, bool all)
{
	uint64_t key;

	while (window_min(c, &key) && !c->failed &&
	       (all || c->heap.n + c->rlen > c->o.max_window ||
		key + c->o.window_ns <= c->max_time))
		release(c, window_pop(c));
}

static uint64_t rec_time(const struct sp_record *r)
{
	switch (r->kind) {
	case SP_REC_SAMPLE:
		return r->sample.time;
	case SP_REC_EVENT:
		return r->event.time;
	case SP_REC_SPAN_START:
	case SP_REC_SPAN_STOP:
	case SP_REC_SPAN_RAISE:
		return r->mark.time;
	case SP_REC_PROCESS:
		return r->process.time;
	case SP_REC_THREAD:
		return r->thread.time;
	case SP_REC_PROCESS_END:
		return r->process_end.time;
	case SP_REC_THREAD_END:
		return r->thread_end.time;
	case SP_REC_FIBER_SWITCH:
		return r->fiber_switch.time;
	case SP_REC_MODULE_END:
		return r->module_end.time;
	case SP_REC_LOST:	/* ordered by the start of its window */
		return r->lost.start && r->lost.start <= r->lost.time ? r->lost.start :
									 r->lost.time;
	default:
		return 0;
	}
}

static bool is_timed(unsigned int kind)
{
	switch (kind) {
	case SP_REC_SAMPLE:
	case SP_REC_EVENT:
	case SP_REC_SPAN_START:
	case SP_REC_SPAN_STOP:
	case SP_REC_SPAN_RAISE:
	case SP_REC_PROCESS:
	case SP_REC_THREAD:
	case SP_REC_PROCESS_END:
	case SP_REC_THREAD_END:
	case SP_REC_FIBER_SWITCH:
	case SP_REC_MODULE_END:
	case SP_REC_LOST:
		return true;
	default:
		return false;
	}
}

/* ---- public ----------------------------------------------------------- */

struct sp_corr *sp_corr_new(const struct sp_corr_opts *opts, sp_corr_emit_fn emit, void *ctx)
{
	struct sp_corr *c = sp_xcalloc(1, sizeof(*c));

	if (opts)
		c->o = *opts;
	else
		c->o.window_ns = SP_CORR_WINDOW_NS;
	if (!c->o.max_window)
		c->o.max_window = SP_CORR_MAX_WINDOW;
	if (!c->o.max_held)
		c->o.max_held = SP_CORR_MAX_HELD;
	if (!c->o.gap_max)
		c->o.gap_max = SP_CORR_GAP_MAX;
	c->emit = emit;
	c->ctx = ctx;
	return c;
}

/* Close everything, emit everything held: the end of a stream. */
static void end_stream(struct sp_corr *c)
{
	size_t it;
	uint64_t v;

	drain(c, true);
	/* in the tables' order (hashmap.h): it decides which tree comes first */
	for (it = 0; sp_u64map_next(&c->threads, &it, NULL, &v);)
		close_all(c, (struct thr *)(uintptr_t)v, c->max_time);
	for (it = 0; sp_u64map_next(&c->procs, &it, NULL, &v);)
		close_gap(c, (struct proc *)(uintptr_t)v);
	while (c->roots)
		emit_tree(c, c->roots, true);
	flush_deferred(c);
}

/* Forget the stream: a new header starts new ids and new processes. */
static void reset_stream(struct sp_corr *c)
{
	size_t it = 0;
	uint64_t v;

	/* the table changes under us at each: rescan */
	while (sp_u64map_next(&c->procs, &it, NULL, &v)) {
		proc_end(c, (struct proc *)(uintptr_t)v, c->max_time);
		it = 0;
	}
	/* threads of processes never seen are in no process list: none exist,
	 * every thread belongs to a struct proc. */
	c->next_id = 0;
	c->nlost = 0;
	c->any_released = false;
	c->released = 0;
}

/*
 * A record of a stream correlated already, as it is, but for references to
 * spans not defined before it (a damaged or forged input): a span's parent
 * or fork span becomes none, a sample or event without a valid span is
 * dropped and counted, so that the output keeps the stream's rules.
 */
static void pass_through(struct sp_corr *c, const struct sp_record *rec)
{
	struct sp_record r;

	switch (rec->kind) {
	case SP_REC_SPAN:
		r = *rec;
		r.span.id = ++c->pass_spans;	/* ids are implicit: the n-th span */
		if (r.span.parent >= c->pass_spans || r.span.fork_span >= c->pass_spans) {
			if (r.span.parent >= c->pass_spans)
				r.span.parent = 0;
			if (r.span.fork_span >= c->pass_spans)
				r.span.fork_span = 0;
			c->st.bad_refs++;
		}
		out(c, &r);
		return;
	case SP_REC_SAMPLE:
		if (!rec->sample.span || rec->sample.span > c->pass_spans) {
			c->st.bad_refs++;
			return;
		}
		break;
	case SP_REC_EVENT:
		if (!rec->event.span || rec->event.span > c->pass_spans) {
			c->st.bad_refs++;
			return;
		}
		break;
	default:
		break;
	}
	out(c, rec);
}

int sp_corr_add(struct sp_corr *c, const struct sp_record *rec)
{
	struct sp_record hdr;
	struct hrec *h;
	uint64_t t;

	if (c->failed)
		return -1;
	c->st.records++;
	if (c->passthrough && rec->kind != SP_REC_HEADER) {
		pass_through(c, rec);
		return c->failed ? -1 : 0;
	}
	switch (rec->kind) {
	case SP_REC_HEADER:
		end_stream(c);
		reset_stream(c);
		/* correlated already: its spans stand, its order is theirs */
		c->passthrough = rec->header.flags & SP_HDR_CORRELATED;
		c->pass_spans = 0;
		hdr = *rec;
		hdr.header.flags |= SP_HDR_CORRELATED;
		out(c, &hdr);
		return c->failed ? -1 : 0;
	case SP_REC_END:
		if (rec->end.time > c->max_time)
			c->max_time = rec->end.time;
		end_stream(c);
		out(c, rec);
		return c->failed ? -1 : 0;
	case SP_REC_SPAN:
		c->st.old_spans++;
		return 0;
	default:
		break;
	}
	if (!is_timed(rec->kind)) {
		out(c, rec);
		return c->failed ? -1 : 0;
	}
	t = rec_time(rec);
	h = hrec_new(c, rec);
	h->seq = c->seq++;
	if (!t)		/* no time: where it stands in the input */
		t = c->any_released ? c->released : 0;
	h->key = t;
	if (c->any_released && t < c->released) {
		/* later than the window allows: taken where it stands */
		c->st.late++;
		h->key = c->released;
		process(c, h);
		return c->failed ? -1 : 0;
	}
	if (t > c->max_time)
		c->max_time = t;
	window_push(c, h);
	drain(c, false);
	return c->failed ? -1 : 0;
}

int sp_corr_finish(struct sp_corr *c)
{
	if (c->failed)
		return -1;
	end_stream(c);
	return c->failed ? -1 : 0;
}

const struct sp_corr_stats *sp_corr_stats(const struct sp_corr *c)
{
	return &c->st;
}

void sp_corr_free(struct sp_corr *c)
{
	struct hrec *h;
	size_t it;
	uint64_t v;

	if (!c)
		return;
	/* Whatever is left (after a failed emit) is dropped without output. */
	c->failed = 1;
	while (c->heap.n || c->rlen)
		hrec_free(c, window_pop(c));
	end_stream(c);
	reset_stream(c);
	while ((h = c->deferred)) {
		c->deferred = h->next;
		hrec_free(c, h);
	}
	while ((h = c->free_small)) {
		c->free_small = h->next;
		free(h);
	}
	while ((h = c->free_full)) {
		c->free_full = h->next;
		free(h);
	}
	while ((h = c->free_bytes)) {
		c->free_bytes = h->next;
		free(h);
	}
	for (it = 0; sp_u64map_next(&c->procs, &it, NULL, &v);)
		free((struct proc *)(uintptr_t)v);
	sp_u64map_release(&c->procs);
	sp_u64map_release(&c->threads);
	free(c->open.v);
	sp_idset_release(&c->open.idx);
	sp_heap_release(&c->heap);
	free(c->ring);
	free(c->work);
	free(c->lost);
	free(c);
}
