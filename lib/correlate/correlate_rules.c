// SPDX-License-Identifier: MIT
/*
 * The correlator's rules (docs/correlate.md), applied to each timed record
 * in time order: span marks open, close and raise spans; forks, execs and
 * exits make and end threads and processes; lost windows mark the spans
 * they overlap incomplete; and every sample and event gets its span by the
 * thread, fork or gap rule.
 */
#include <stdlib.h>
#include <string.h>

#include "correlateP.h"
#include "events.h"
#include "sp.h"

bool sp_corr_in_lost_window(struct sp_corr *c, uint64_t pid, uint64_t time)
{
	size_t i;

	for (i = 0; i < c->nlost; i++)
		if (time <= c->lost[i].end && (!c->lost[i].pid || c->lost[i].pid == pid))
			return true;
	return false;
}

void sp_corr_close_gap(struct sp_corr *c, struct proc *p)
{
	struct span *g = p->gap;

	if (!g)
		return;
	p->gap = NULL;
	g->gap_of = NULL;
	g->open = false;
	sp_corr_interp_close(g);
	g->s.total_samples = g->s.samples;
	sp_corr_emit_tree(c, g, false);
}

static struct span *gap_get(struct sp_corr *c, struct proc *p, uint64_t time)
{
	struct span *g = p->gap;

	if (g && g->nheld + g->sub_held >= c->o.gap_max)
		sp_corr_close_gap(c, p);
	if (!p->gap) {
		g = sp_corr_span_new(c, NULL, false);
		g->gap = true;
		g->gap_of = p;
		g->s.pid = p->pid;
		g->s.tid = p->pid;
		g->s.start = g->s.stop = time;
		g->s.end = SP_END_SYNTHETIC;
		sp_corr_span_link(c, g);
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
	s = sp_corr_fork_owner(t);
	if (s) {
		*rule = SP_RULE_FORK;
		return s;
	}
	*rule = SP_RULE_GAP;
	return gap_get(c, t->proc, time);
}

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
		sp_corr_close_top(c, t, t->raising ? SP_END_RAISED : SP_END_INCOMPLETE,
			  t->raising ? t->raise_time : m->time);
	}
	t->raising = false;
	up = t->depth ? t->stack[t->depth - 1] : t->base;
	if (!up) {
		up = sp_corr_fork_owner(t);
		fork = up != NULL;
		sp_corr_close_gap(c, t->proc);
	}
	s = sp_corr_span_new(c, up, fork);
	s->s.pid = t->pid;
	s->s.tid = t->tid;
	s->s.runtime = m->runtime;
	s->s.klass = m->klass;
	s->s.method = m->method;
	s->s.file = m->file;
	s->s.line = m->line;
	s->s.start = m->time;
	s->s.end = SP_END_STOPPED;
	s->s.coro = m->coro;	/* a coroutine's resume: lanes.h */
	if (m->flags & SP_MARK_SYNTHETIC)
		s->s.flags |= SP_SPAN_RECONSTRUCTED;	/* began before 'start' */
	s->depth = m->depth;
	if (sp_corr_in_lost_window(c, t->pid, m->time))
		s->incomplete = true;
	sp_corr_span_link(c, s);
	if (t->depth == t->cap)
		sp_grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack));
	t->stack[t->depth++] = s;
	sp_corr_count_open(c, t, s, true);
	sp_corr_span_get(s);
	sp_corr_hold(c, s, h, 0);
}

static void do_stop(struct sp_corr *c, struct thr *t, struct hrec *h)
{
	const struct sp_span_mark *m = &h->rec.mark;
	uint64_t rule, time = m->time;
	struct span *s;
	int k;

	/* A match closes every span above it: each one is passed over once. */
	k = -1;
	if (sp_corr_stop_may_match(c, t, m)) {
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
	if (k < 0)
		k = sp_corr_carry_match(c, t, m);
	if (k < 0) {
		c->st.stop_without_start++;
		sp_corr_hold(c, assign(c, t, time, &rule), h, 0);
		return;
	}
	while ((int)t->depth - 1 > k) {	/* frames above it were unwound */
		s = t->stack[t->depth - 1];
		c->st.unwound++;
		if (t->raising) {
			if (!s->s.error)
				s->s.error = t->raise_class;
			sp_corr_close_top(c, t, SP_END_RAISED,
				  t->raise_time > s->s.start ? t->raise_time : time);
		} else {
			sp_corr_close_top(c, t, SP_END_INCOMPLETE, time);
		}
	}
	s = t->stack[k];
	if (s->s.coro && (m->flags & SP_MARK_SUSPENDED))
		s->s.flags |= SP_SPAN_SUSPENDED;
	sp_corr_hold(c, s, h, 0);
	sp_corr_close_top(c, t, s->raised ? SP_END_RAISED : SP_END_STOPPED, time);
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
		/* outside the methods --spans-match asked for: expected */
		if (m->flags & SP_MARK_MATCH_ONLY)
			c->st.raise_unmatched++;
		else
			c->st.raise_without_span++;
		sp_corr_hold(c, assign(c, t, m->time, &rule), h, 0);
		return;
	}
	s = t->stack[t->depth - 1];
	s->raised = true;
	s->s.error = m->klass;
	sp_corr_hold(c, s, h, 0);
}

bool sp_corr_lost_spans(uint64_t what)
{
	return what != SP_LOST_SPAN_STOPS && what != SP_LOST_UNPROBED && what != SP_LOST_INTERP &&
	       what != SP_LOST_INTERP_COPIES && what != SP_LOST_INTERP_EVENTS &&
	       what != SP_LOST_LATE_PROBES;
}

/* Open spans of pid (0 = all) overlap a lost window. */
static void do_lost(struct sp_corr *c, const struct sp_lost *l)
{
	struct thr *t;
	size_t it;
	uint64_t v;

	/* no record of a span the spool holds is missing */
	if (!sp_corr_lost_spans(l->what))
		return;
	for (it = 0; sp_u64map_next(&c->threads, &it, NULL, &v);) {
		t = (struct thr *)(uintptr_t)v;
		if (!l->pid || t->pid == l->pid)
			sp_corr_mark_incomplete(t);
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
		sp_corr_thr_free(c, p->threads, time);
}

static bool thread_in(const struct proc *p, uint64_t tid)
{
	const struct thr *t;

	for (t = p->threads; t; t = t->next_in_proc)
		if (t->tid == tid)
			return true;
	return false;
}

/* A fork of t: the child (thread or process) comes from origin, the span
 * (or interpreted frame) that made it, NULL from none. */
static void do_fork(struct sp_corr *c, struct thr *t, const struct sp_event *e,
		    struct span *origin)
{
	uint64_t child_pid = e->field[0].u, child_tid = e->field[1].u;
	struct proc *p;
	struct thr *ct;

	/* a fork that names its own thread or process is nonsense: ignored */
	if (e->field[2].u & SP_FORK_THREAD) {
		if (!child_tid || child_tid == t->tid)
			return;
		ct = sp_corr_thr_find(c, child_tid);
		if (ct && !ct->forked && ct->pid == t->pid) {
			/* seen first: sp-record's thread record can carry an
			 * earlier time than the fork event */
			ct->forked = true;
			if (!ct->origin && origin) {
				ct->origin = origin;
				sp_corr_span_get(origin);
			}
			return;
		}
		if (ct) {
			c->st.pid_reuse++;
			sp_corr_thr_free(c, ct, e->time);
		}
		sp_corr_thr_new(c, t->proc, child_tid, origin)->forked = true;
		return;
	}
	if (!child_pid || child_pid == t->pid || (child_tid && child_tid == t->tid))
		return;
	p = sp_corr_proc_find(c, child_pid);
	if (p && p->exited) {
		sp_corr_proc_end(c, p, p->exited);	/* its pid is used again */
		p = NULL;
	}
	if (p && p->forked) {
		/* a live process already came from a fork with that pid: it ended unseen */
		c->st.pid_reuse++;
		sp_corr_proc_end(c, p, e->time);
		p = NULL;
	}
	if (!p)
		p = sp_corr_proc_new(c, child_pid);
	p->forked = true;
	p->ppid = t->pid;
	sp_corr_span_put(p->origin);
	p->origin = origin;
	if (origin)
		sp_corr_span_get(origin);
	/*
	 * The child may have been seen first (sp-record's process and thread
	 * records can carry an earlier time than the fork event): its threads
	 * without an origin get this one.
	 */
	for (ct = p->threads; ct; ct = ct->next_in_proc) {
		if (!ct->origin && origin) {
			ct->origin = origin;
			sp_corr_span_get(origin);
		}
	}
	if (child_tid && !thread_in(p, child_tid)) {
		ct = sp_corr_thr_find(c, child_tid);
		if (ct)
			sp_corr_thr_free(c, ct, e->time);
		sp_corr_thr_new(c, p, child_tid, origin);
	}
}

/* An event: held by its span; a fork, exec or exit also acts on its
 * thread or process. */
static void do_event(struct sp_corr *c, struct hrec *h)
{
	struct thr *t = sp_corr_thr_get(c, h->rec.event.pid, h->rec.event.tid,
					 h->rec.event.time);
	struct sp_event e = h->rec.event;	/* h may be emitted and freed by sp_corr_hold() */
	struct span *owner, *origin, *gap;
	uint64_t rule;

	owner = assign(c, t, e.time, &rule);
	if (rule == SP_RULE_FORK && owner->gap && e.kind != SP_EV_PROC_EXEC &&
	    sp_corr_interp_framed(c, &e)) {
		/* from a child started by an interpreted frame, not a span:
		 * its own frame says more (a child's exec is the frame's
		 * that started it: its stack is the fork's) */
		rule = SP_RULE_GAP;
		owner = gap_get(c, t->proc, e.time);
	}
	origin = rule == SP_RULE_GAP ? NULL : owner;
	if (rule == SP_RULE_GAP) {
		/* an event no span covers: its interpreted frame's, which is
		 * then a new process's origin as a span would be (the
		 * process's gap is none; a thread has frames of its own) */
		gap = owner;
		owner = sp_corr_interp_owner(c, gap, &e);
		if (owner != gap && e.kind == SP_EV_PROC_FORK &&
		    !(e.field[2].u & SP_FORK_THREAD))
			origin = owner;
	}
	sp_corr_span_get(owner);
	sp_corr_hold(c, owner, h, rule);
	switch (e.kind) {
	case SP_EV_PROC_FORK:
		do_fork(c, t, &e, origin);
		break;
	case SP_EV_PROC_EXEC:
		do_exec(c, t->proc, e.time);
		break;
	case SP_EV_PROC_EXIT:
		if (e.field[2].u)
			sp_corr_thr_free(c, t, e.time);
		else
			sp_corr_proc_exited(c, t->proc, e.time);
		break;
	}
	sp_corr_span_put(owner);
}

/* A process record: a process defined (a pid defined again was reused). */
static void do_process(struct sp_corr *c, const struct sp_process *r)
{
	struct proc *p = sp_corr_proc_find(c, r->pid);

	sp_u64map_del(&c->ended, r->pid);	/* the pid is another's now */
	if (p && p->exited && !(r->flags & SP_PROC_EXEC)) {
		/* its end record was lost, or the stream has none */
		sp_corr_proc_end(c, p, p->exited);
		p = NULL;
	} else if (p && (r->flags & SP_PROC_EXEC)) {
		do_exec(c, p, r->time);
	} else if (p && p->defined) {
		c->st.pid_reuse++;
		sp_corr_proc_end(c, p, r->time);
		p = NULL;
	}
	if (!p)
		p = sp_corr_proc_new(c, r->pid);
	p->defined = true;
	if (!p->ppid)
		p->ppid = r->ppid;
}

/* A thread record: a thread of a process (a tid of another one was reused). */
static void do_thread(struct sp_corr *c, const struct sp_thread *r)
{
	struct thr *t = sp_corr_thr_find(c, r->tid);
	struct proc *p;

	if (t && t->pid != r->pid) {
		c->st.pid_reuse++;
		sp_corr_thr_free(c, t, r->time);
		t = NULL;
	}
	if (!t) {
		p = sp_corr_proc_find(c, r->pid);
		if (!p)
			p = sp_corr_proc_new(c, r->pid);
		sp_corr_thr_new(c, p, r->tid, p->origin);
	}
}

void sp_corr_process(struct sp_corr *c, struct hrec *h)
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
		t = sp_corr_thr_get(c, r->sample.pid, r->sample.tid, r->sample.time);
		owner = assign(c, t, r->sample.time, &rule);
		sp_corr_hold(c, owner, h, rule);
		break;
	case SP_REC_EVENT:
		do_event(c, h);
		break;
	case SP_REC_SPAN_START:
		do_start(c, sp_corr_thr_get(c, r->mark.pid, r->mark.tid, r->mark.time), h);
		break;
	case SP_REC_SPAN_STOP:
		do_stop(c, sp_corr_thr_get(c, r->mark.pid, r->mark.tid, r->mark.time), h);
		break;
	case SP_REC_SPAN_RAISE:
		do_raise(c, sp_corr_thr_get(c, r->mark.pid, r->mark.tid, r->mark.time), h);
		break;
	case SP_REC_PROCESS:
		do_process(c, &r->process);
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
		break;
	case SP_REC_THREAD:
		do_thread(c, &r->thread);
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
		break;
	case SP_REC_THREAD_END:
		t = sp_corr_thr_find(c, r->thread_end.tid);
		if (t)
			sp_corr_thr_free(c, t, r->thread_end.time);
		sp_corr_defer(c, h);
		break;
	case SP_REC_PROCESS_END:
		p = sp_corr_proc_find(c, r->process_end.pid);
		if (p && (r->process_end.flags & SP_PEND_EXEC))
			do_exec(c, p, r->process_end.time);	/* the pid lives on */
		else if (p)
			sp_corr_proc_end(c, p, r->process_end.time);
		if (!(r->process_end.flags & SP_PEND_EXEC))
			sp_corr_note_ended(c, r->process_end.pid, r->process_end.time);
		sp_corr_defer(c, h);
		break;
	case SP_REC_MODULE_END:
		sp_corr_defer(c, h);
		break;
	case SP_REC_LOST:
		do_lost(c, &r->lost);
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
		break;
	case SP_REC_FIBER_SWITCH:
		t = sp_corr_thr_get(c, r->fiber_switch.pid, r->fiber_switch.tid,
				    r->fiber_switch.time);
		sp_corr_fiber_switch(c, t, &r->fiber_switch);
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
		break;
	default:
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
		break;
	}
	if (c->held > c->o.max_held)
		sp_corr_relieve(c);
}
