// SPDX-License-Identifier: MIT
/*
 * The correlator's threads and processes: each thread's stack of open
 * spans (one per fiber, the running one in struct thr), counts of the open
 * spans by method for stop marks, closing spans (one, a fiber's, a
 * thread's), fiber switches, and the span each thread or process was
 * created under (its fork origin).
 *
 * Nothing here costs the depth of a thread's stack per record: stacks a
 * million spans deep come from real recursions and from forged input. A
 * stop mark looks down the stack only when an open span can match it (the
 * counts say so); a lost window marks only the spans opened since the last
 * one; a thread's fork origin moves up to the open span it finds.
 */
#include <stdlib.h>
#include <string.h>

#include "correlateP.h"
#include "sp.h"

struct thr *sp_corr_thr_find(const struct sp_corr *c, uint64_t tid)
{
	uint64_t *v = sp_u64map_get(&c->threads, tid);

	return v ? (struct thr *)(uintptr_t)*v : NULL;
}

struct proc *sp_corr_proc_find(const struct sp_corr *c, uint64_t pid)
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

/* Count span s in or out of the open spans of t's running fiber. */
void sp_corr_count_open(struct sp_corr *c, const struct thr *t, const struct span *s, bool in)
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
void sp_corr_close_top(struct sp_corr *c, struct thr *t, uint64_t end, uint64_t time)
{
	struct span *s = t->stack[--t->depth];

	if (t->marked > t->depth)
		t->marked = t->depth;
	sp_corr_count_open(c, t, s, false);
	s->open = false;
	s->s.stop = time < s->s.start ? s->s.start : time;
	s->s.end = end;
	if (sp_corr_in_lost_window(c, s->s.pid, time))
		s->incomplete = true;
	if (s->incomplete)
		c->st.incomplete++;
	s->s.total_samples = s->s.samples + s->child_total;
	if (s->in_tree && s->up && s->up->open)
		s->up->child_total += s->s.total_samples;
	if (s->is_root && !s->emitted)
		sp_corr_emit_tree(c, s, false);
	sp_corr_span_put(s);	/* the stack's reference */
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
void sp_corr_close_all(struct sp_corr *c, struct thr *t, uint64_t time)
{
	close_stack(c, t, time);
	while (t->nfibs) {
		struct fib *f = &t->fibs[--t->nfibs];

		fib_swap(t, f);
		close_stack(c, t, time);
		free(f->stack);		/* the stack that was running */
		sp_corr_span_put(f->base);
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
			sp_corr_close_top(c, t, SP_END_RAISED, t->raise_time > s->s.start ?
				  t->raise_time : time);
		} else {
			sp_corr_close_top(c, t, SP_END_OPEN, time);
		}
	}
}

struct proc *sp_corr_proc_new(struct sp_corr *c, uint64_t pid)
{
	struct proc *p = sp_xcalloc(1, sizeof(*p));

	p->pid = pid;
	sp_u64map_put(&c->procs, pid, (uintptr_t)p);
	return p;
}

void sp_corr_thr_free(struct sp_corr *c, struct thr *t, uint64_t time)
{
	sp_corr_close_all(c, t, time);
	if (t->prev_in_proc)
		t->prev_in_proc->next_in_proc = t->next_in_proc;
	else
		t->proc->threads = t->next_in_proc;
	if (t->next_in_proc)
		t->next_in_proc->prev_in_proc = t->prev_in_proc;
	sp_u64map_del(&c->threads, t->tid);
	sp_corr_span_put(t->origin);
	sp_corr_span_put(t->base);
	free(t->stack);
	free(t->fibs);
	free(t);
}

void sp_corr_proc_end(struct sp_corr *c, struct proc *p, uint64_t time)
{
	if (p->exited && p->exited < time)
		time = p->exited;	/* it ended there; its end record came later */
	while (p->threads)
		sp_corr_thr_free(c, p->threads, time);
	sp_corr_close_gap(c, p);
	sp_u64map_del(&c->procs, p->pid);
	sp_corr_span_put(p->origin);
	free(p);
}

/* At most this many exited processes wait for their end record. */
#define EXITED_MAX 4096

void sp_corr_proc_exited(struct sp_corr *c, struct proc *p, uint64_t time)
{
	struct proc *old;
	uint64_t pid;

	if (p->exited)
		return;
	p->exited = time ? time : 1;
	if (!c->exited)
		c->exited = sp_xcalloc(EXITED_MAX, sizeof(*c->exited));
	if (c->nexited == EXITED_MAX) {
		pid = c->exited[c->exited_head];
		c->exited_head = (c->exited_head + 1) % EXITED_MAX;
		c->nexited--;
		old = sp_corr_proc_find(c, pid);
		if (old && old->exited)
			sp_corr_proc_end(c, old, old->exited);
	}
	c->exited[(c->exited_head + c->nexited++) % EXITED_MAX] = p->pid;
}

/*
 * A record of a pid with no process: of the idle task, of one that ended
 * just before (the kernel's exit path goes on after the process's end
 * record: a system-wide recording samples it), else of a process nothing
 * defined.
 */
static struct proc *proc_get(struct sp_corr *c, uint64_t pid, uint64_t time)
{
	struct proc *p = sp_corr_proc_find(c, pid);
	uint64_t *end;

	if (p)
		return p;
	p = sp_corr_proc_new(c, pid);
	if (!pid)	/* the kernel's idle task (-a): no process record exists */
		return p;
	end = sp_u64map_get(&c->ended, pid);
	if (end && time >= *end && time - *end <= SP_CORR_EXIT_TAIL_NS) {
		c->st.after_end++;
		return p;
	}
	if (c->st.unknown_pids < SP_CORR_PIDS_NAMED)
		c->st.unknown_pid[c->st.unknown_pids] = pid;
	c->st.unknown_pids++;
	return p;
}

void sp_corr_note_ended(struct sp_corr *c, uint64_t pid, uint64_t time)
{
	size_t it = 0;
	uint64_t k, v;

	/* bounded: the old ones go, then (a storm of ends) all of them */
	if (c->ended.n >= SP_CORR_ENDED_MAX) {
		while (sp_u64map_next(&c->ended, &it, &k, &v))
			if (v + SP_CORR_EXIT_TAIL_NS < time) {
				sp_u64map_del(&c->ended, k);
				it = 0;
			}
		if (c->ended.n >= SP_CORR_ENDED_MAX)
			sp_u64map_release(&c->ended);
	}
	sp_u64map_put(&c->ended, pid, time);
}

static struct span *first_open(struct span **origin);

struct thr *sp_corr_thr_new(struct sp_corr *c, struct proc *p, uint64_t tid, struct span *origin)
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
		sp_corr_span_get(origin);
	t->next_in_proc = p->threads;
	if (p->threads)
		p->threads->prev_in_proc = t;
	p->threads = t;
	sp_u64map_put(&c->threads, tid, (uintptr_t)t);
	return t;
}

struct thr *sp_corr_thr_get(struct sp_corr *c, uint64_t pid, uint64_t tid, uint64_t time)
{
	struct thr *t = sp_corr_thr_find(c, tid);
	struct proc *p;

	if (t && t->pid == pid)
		return t;
	if (t) {		/* tid reused by another process: the old thread is gone */
		c->st.pid_reuse++;
		sp_corr_thr_free(c, t, time);
	}
	p = proc_get(c, pid, time);
	return sp_corr_thr_new(c, p, tid, p->origin);
}

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
		sp_corr_span_get(last);
		sp_corr_span_put(*origin);
		*origin = last;
	}
	return s;
}

/* The innermost open span on the chain of spans that created the thread. */
struct span *sp_corr_fork_owner(struct thr *t)
{
	return first_open(&t->origin);
}

/* Whether an open span of t's running fiber can match stop mark m. */
bool sp_corr_stop_may_match(struct sp_corr *c, const struct thr *t, const struct sp_span_mark *m)
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

/*
 * A fiber switch: park the running fiber's stack, take the other's. A new
 * fiber's outermost spans nest in the span that started it (the resumer's
 * innermost); a new fiber with the id of a parked one (the runtime reused
 * a dead fiber's id) ends the old one's spans as incomplete.
 */
void sp_corr_fiber_switch(struct sp_corr *c, struct thr *t, const struct sp_fiber_switch *fs)
{
	struct span *resumer = t->depth ? t->stack[t->depth - 1] : t->base;
	struct fib f = { 0 };
	size_t i;

	if (fs->to == t->fiber && !(fs->flags & SP_FIBER_NEW))
		return;
	if (resumer)
		sp_corr_span_get(resumer);
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
				sp_corr_close_top(c, t, SP_END_INCOMPLETE, fs->time);
			sp_corr_span_put(t->base);
			t->base = NULL;
		}
	}
	t->fiber = fs->to;
	if (!t->depth && !t->base && (fs->flags & SP_FIBER_NEW)) {
		t->base = resumer;
		resumer = NULL;
	}
	sp_corr_span_put(resumer);
	c->st.fiber_switches++;
}

/* Mark the spans of a stack opened since it was last marked: the others
 * are marked already (a span stays incomplete, and stays below them). */
static void mark_stack(struct span **stack, size_t depth, size_t *marked)
{
	size_t i;

	for (i = *marked; i < depth; i++)
		stack[i]->incomplete = true;
	*marked = depth;
}

void sp_corr_mark_incomplete(struct thr *t)
{
	size_t k;

	mark_stack(t->stack, t->depth, &t->marked);
	for (k = 0; k < t->nfibs; k++)
		mark_stack(t->fibs[k].stack, t->fibs[k].depth, &t->fibs[k].marked);
}
