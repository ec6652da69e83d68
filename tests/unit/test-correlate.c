// SPDX-License-Identifier: MIT
/* Unit tests of lib/correlate/ (correlate.h): each rule of docs/correlate.md on its own. */
#include <stdlib.h>
#include <string.h>

#include "correlate.h"
#include "events.h"
#include "tap.h"

/* ---- a record collector ----------------------------------------------- */

static struct sp_record outv[4096];
static uint8_t outb[4096][16];	/* an event's address field, copied */
static int nout;

static int collect(void *ctx, const struct sp_record *r)
{
	struct sp_bytes *b;

	if (nout >= (int)(sizeof(outv) / sizeof(outv[0])))
		return 0;
	outv[nout] = *r;
	b = &outv[nout].event.field[1].b;
	if (r->kind == SP_REC_EVENT && b->len && b->len <= 16) {
		memcpy(outb[nout], b->p, b->len);
		b->p = outb[nout];
	}
	nout++;
	return 0;
}

static struct sp_corr *corr(uint64_t window)
{
	struct sp_corr_opts o = { .window_ns = window };

	nout = 0;
	return sp_corr_new(&o, collect, NULL);
}

static void add(struct sp_corr *c, struct sp_record r)
{
	CHECK(sp_corr_add(c, &r) == 0);
}

static struct sp_record mark(unsigned int kind, uint64_t t, uint64_t pid, uint64_t tid,
			     uint64_t method)
{
	struct sp_record r = { .kind = kind };

	r.mark.time = t;
	r.mark.pid = pid;
	r.mark.tid = tid;
	r.mark.runtime = SP_RT_RUBY;
	r.mark.klass = 100;
	r.mark.method = method;
	r.mark.file = 101;
	r.mark.line = (unsigned int)method;
	return r;
}

#define START(t, pid, tid, m) mark(SP_REC_SPAN_START, t, pid, tid, m)
#define STOP(t, pid, tid, m) mark(SP_REC_SPAN_STOP, t, pid, tid, m)
static struct sp_record raise_mark(uint64_t t, uint64_t pid, uint64_t tid, uint64_t cls)
{
	struct sp_record r = mark(SP_REC_SPAN_RAISE, t, pid, tid, 0);

	r.mark.klass = cls;
	return r;
}
#define RAISE(t, pid, tid, cls) raise_mark(t, pid, tid, cls)

static struct sp_record sample(uint64_t t, uint64_t pid, uint64_t tid)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };

	r.sample.time = t;
	r.sample.pid = pid;
	r.sample.tid = tid;
	r.sample.weight = 1;
	return r;
}

static struct sp_record event(uint64_t t, uint64_t pid, uint64_t tid, uint64_t kind)
{
	struct sp_record r = { .kind = SP_REC_EVENT };

	r.event.time = t;
	r.event.pid = pid;
	r.event.tid = tid;
	r.event.kind = kind;
	r.event.nfields = 3;
	return r;
}

static struct sp_record fork_ev(uint64_t t, uint64_t pid, uint64_t tid, uint64_t child,
				uint64_t flags)
{
	struct sp_record r = event(t, pid, tid, SP_EV_PROC_FORK);

	r.event.field[0].u = child;
	r.event.field[1].u = child;
	r.event.field[2].u = flags;
	return r;
}

static struct sp_record process(uint64_t t, uint64_t pid, uint64_t ppid)
{
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.time = t;
	r.process.pid = pid;
	r.process.ppid = ppid;
	return r;
}

/* The n-th span record of the output (1-based id order), or NULL. */
static const struct sp_span *span_id(uint64_t id)
{
	int i;

	for (i = 0; i < nout; i++)
		if (outv[i].kind == SP_REC_SPAN && outv[i].span.id == id)
			return &outv[i].span;
	return NULL;
}

/* The span emitted for a method (first match). */
static const struct sp_span *span_of(uint64_t method)
{
	int i;

	for (i = 0; i < nout; i++)
		if (outv[i].kind == SP_REC_SPAN && outv[i].span.method == method &&
		    outv[i].span.end != SP_END_SYNTHETIC)
			return &outv[i].span;
	return NULL;
}

static int count_kind(unsigned int kind)
{
	int i, n = 0;

	for (i = 0; i < nout; i++)
		n += outv[i].kind == kind;
	return n;
}

/* The i-th event or sample of the output with this time. */
static const struct sp_record *at(unsigned int kind, uint64_t t)
{
	int i;

	for (i = 0; i < nout; i++) {
		if (outv[i].kind != kind)
			continue;
		if (kind == SP_REC_SAMPLE && outv[i].sample.time == t)
			return &outv[i];
		if (kind == SP_REC_EVENT && outv[i].event.time == t)
			return &outv[i];
	}
	return NULL;
}

#define EV_SPAN(t) (at(SP_REC_EVENT, t) ? at(SP_REC_EVENT, t)->event.span : 999)
#define EV_RULE(t) (at(SP_REC_EVENT, t) ? at(SP_REC_EVENT, t)->event.rule : 999)
#define SA_SPAN(t) (at(SP_REC_SAMPLE, t) ? at(SP_REC_SAMPLE, t)->sample.span : 999)
#define SA_RULE(t) (at(SP_REC_SAMPLE, t) ? at(SP_REC_SAMPLE, t)->sample.rule : 999)

/*
 * The stream's rules on every output: span ids dense from 1 in order; every
 * span, parent and fork span defined before it is used; every sample and
 * event carries a span.
 */
static void check_stream(void)
{
	uint64_t next = 1;
	int i;

	for (i = 0; i < nout; i++) {
		const struct sp_record *r = &outv[i];

		if (r->kind == SP_REC_HEADER) {
			next = 1;
		} else if (r->kind == SP_REC_SPAN) {
			CHECK_EQ_U(r->span.id, next);
			CHECK(r->span.parent < next);
			CHECK(r->span.fork_span < next);
			next++;
		} else if (r->kind == SP_REC_SAMPLE) {
			CHECK(r->sample.span && r->sample.span < next);
			CHECK(r->sample.rule >= SP_RULE_THREAD && r->sample.rule <= SP_RULE_GAP);
		} else if (r->kind == SP_REC_EVENT) {
			CHECK(r->event.span && r->event.span < next);
			CHECK(r->event.rule >= SP_RULE_THREAD && r->event.rule <= SP_RULE_GAP);
		}
	}
}

static void done(struct sp_corr *c)
{
	CHECK(sp_corr_finish(c) == 0);
	check_stream();
}

/* ---- the tests -------------------------------------------------------- */

/* Spans whose start marks were synthetic (frames open when the recording
 * found their thread) are flagged reconstructed, nest as the marks say, and
 * their stops close them; a span started as usual is not flagged. */
static void test_correlate_reconstructed(void)
{
	struct sp_record s1 = START(10, 10, 10, 1), s2 = START(10, 10, 10, 2);
	struct sp_corr *c = corr(0);
	const struct sp_span *a, *b, *k;

	s1.mark.flags = s2.mark.flags = SP_MARK_SYNTHETIC;
	add(c, process(1, 10, 1));
	add(c, s1);
	add(c, s2);
	add(c, START(20, 10, 10, 3));
	add(c, STOP(30, 10, 10, 3));
	add(c, STOP(40, 10, 10, 2));
	add(c, STOP(50, 10, 10, 1));
	done(c);
	a = span_of(1);
	b = span_of(2);
	k = span_of(3);
	CHECK(a && b && k);
	if (!a || !b || !k)
		goto out;
	CHECK_EQ_U(a->flags, SP_SPAN_RECONSTRUCTED);
	CHECK_EQ_U(b->flags, SP_SPAN_RECONSTRUCTED);
	CHECK_EQ_U(k->flags, 0);
	CHECK_EQ_U(b->parent, a->id);
	CHECK_EQ_U(k->parent, b->id);
	CHECK_EQ_U(a->end, SP_END_STOPPED);
	CHECK_EQ_U(b->stop, 40);
	CHECK_EQ_U(sp_corr_stats(c)->stop_without_start, 0);
out:
	sp_corr_free(c);
}

static void test_correlate_thread_rule(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *a, *b;

	add(c, process(1, 10, 1));
	add(c, START(10, 10, 10, 1));
	add(c, sample(11, 10, 10));
	add(c, START(20, 10, 10, 2));
	add(c, event(21, 10, 10, SP_EV_PATH_OPEN));
	add(c, sample(22, 10, 10));
	add(c, sample(23, 10, 10));
	add(c, STOP(30, 10, 10, 2));
	add(c, sample(31, 10, 10));
	add(c, STOP(40, 10, 10, 1));
	done(c);
	a = span_of(1);
	b = span_of(2);
	CHECK(a && b);
	if (!a || !b)
		goto out;
	CHECK_EQ_U(a->id, 1);
	CHECK_EQ_U(b->parent, a->id);
	CHECK_EQ_U(a->start, 10);
	CHECK_EQ_U(a->stop, 40);
	CHECK_EQ_U(a->end, SP_END_STOPPED);
	CHECK_EQ_U(a->samples, 2);
	CHECK_EQ_U(a->total_samples, 4);
	CHECK_EQ_U(b->samples, 2);
	CHECK_EQ_U(b->events, 1);
	CHECK_EQ_U(a->events, 0);
	CHECK_EQ_U(b->line, 2);
	CHECK_EQ_U(EV_SPAN(21), b->id);
	CHECK_EQ_U(EV_RULE(21), SP_RULE_THREAD);
	CHECK_EQ_U(SA_SPAN(11), a->id);
	CHECK_EQ_U(SA_SPAN(31), a->id);
	CHECK_EQ_U(SA_SPAN(22), b->id);
	CHECK_EQ_U(count_kind(SP_REC_SPAN_START), 2);	/* marks are kept */
	CHECK_EQ_U(count_kind(SP_REC_SPAN), 2);	/* no gap span: nothing fell outside */
	/* pre-order: A's record, A's own records, then B's */
	CHECK_EQ_U(outv[0].kind, SP_REC_PROCESS);
	CHECK_EQ_U(outv[1].kind, SP_REC_SPAN);
	CHECK_EQ_U(outv[2].kind, SP_REC_SPAN_START);
	CHECK_EQ_U(outv[3].kind, SP_REC_SAMPLE);
out:
	sp_corr_free(c);
}

static struct sp_record fiber(uint64_t t, uint64_t pid, uint64_t tid, uint64_t from, uint64_t to,
			       bool fresh)
{
	struct sp_record r = { .kind = SP_REC_FIBER_SWITCH };

	r.fiber_switch.time = t;
	r.fiber_switch.pid = pid;
	r.fiber_switch.tid = tid;
	r.fiber_switch.from = from;
	r.fiber_switch.to = to;
	r.fiber_switch.flags = fresh ? SP_FIBER_NEW : 0;
	return r;
}

/*
 * Fibers: each has its own stack. run (root fiber) starts fiber 7, whose
 * producer -> step yields back; consumer runs in run, not in step; the
 * second resume finishes step and producer. An event between spans of the
 * fiber goes to the span that started it. A fiber left with a span open
 * and its id then reused by a new fiber: the old span ends incomplete.
 */
static void test_correlate_fibers(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *run, *prod, *step, *cons, *old;

	add(c, process(1, 10, 1));
	add(c, START(10, 10, 10, 1));		/* run */
	add(c, fiber(11, 10, 10, 0, 7, true));
	add(c, event(12, 10, 10, SP_EV_PATH_OPEN));
	add(c, START(13, 10, 10, 2));		/* producer */
	add(c, START(14, 10, 10, 3));		/* step */
	add(c, fiber(15, 10, 10, 7, 0, false));
	add(c, START(16, 10, 10, 4));		/* consumer */
	add(c, event(17, 10, 10, SP_EV_PATH_OPEN));
	add(c, STOP(18, 10, 10, 4));
	add(c, fiber(19, 10, 10, 0, 7, false));
	add(c, STOP(20, 10, 10, 3));
	add(c, STOP(21, 10, 10, 2));
	add(c, fiber(22, 10, 10, 7, 0, false));
	add(c, fiber(23, 10, 10, 0, 8, true));
	add(c, START(24, 10, 10, 5));		/* old: left open in fiber 8 */
	add(c, fiber(25, 10, 10, 8, 0, false));
	add(c, fiber(26, 10, 10, 0, 8, true));	/* id 8 again: a new fiber */
	add(c, fiber(27, 10, 10, 8, 0, false));
	add(c, STOP(30, 10, 10, 1));
	done(c);
	run = span_of(1);
	prod = span_of(2);
	step = span_of(3);
	cons = span_of(4);
	old = span_of(5);
	CHECK(run && prod && step && cons && old);
	if (!run || !prod || !step || !cons || !old)
		goto out;
	CHECK_EQ_U(prod->parent, run->id);	/* the span that started the fiber */
	CHECK_EQ_U(step->parent, prod->id);
	CHECK_EQ_U(cons->parent, run->id);	/* not step: another fiber */
	CHECK_EQ_U(step->end, SP_END_STOPPED);
	CHECK_EQ_U(step->stop, 20);
	CHECK_EQ_U(prod->end, SP_END_STOPPED);
	CHECK_EQ_U(cons->stop, 18);
	CHECK_EQ_U(run->end, SP_END_STOPPED);
	CHECK_EQ_U(run->stop, 30);
	CHECK_EQ_U(old->parent, run->id);
	CHECK_EQ_U(old->end, SP_END_INCOMPLETE);
	CHECK_EQ_U(old->stop, 26);
	CHECK_EQ_U(EV_SPAN(12), run->id);	/* the new fiber before its first span */
	CHECK_EQ_U(EV_SPAN(17), cons->id);
	CHECK_EQ_U(count_kind(SP_REC_FIBER_SWITCH), 8);	/* kept */
	CHECK_EQ_U(sp_corr_stats(c)->fiber_switches, 8);
out:
	sp_corr_free(c);
}

/* A thread that ends with spans open in a parked fiber: closed as open. */
static void test_correlate_fiber_open_at_end(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *a, *b;

	add(c, process(1, 10, 1));
	add(c, START(10, 10, 10, 1));
	add(c, fiber(11, 10, 10, 0, 7, true));
	add(c, START(12, 10, 10, 2));
	add(c, fiber(13, 10, 10, 7, 0, false));
	add(c, STOP(14, 10, 10, 1));
	done(c);
	a = span_of(1);
	b = span_of(2);
	CHECK(a && b);
	if (a && b) {
		CHECK_EQ_U(a->end, SP_END_STOPPED);
		CHECK_EQ_U(b->end, SP_END_OPEN);
		CHECK_EQ_U(b->parent, a->id);
	}
	sp_corr_free(c);
}

static void test_correlate_fork_rule(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *a;

	add(c, START(10, 10, 10, 1));
	add(c, fork_ev(11, 10, 10, 20, 0));
	add(c, event(12, 20, 20, SP_EV_PROC_EXEC));
	add(c, fork_ev(13, 20, 20, 30, 0));	/* a grandchild, forked by the child */
	add(c, event(14, 30, 30, SP_EV_PATH_OPEN));
	add(c, sample(15, 30, 30));
	add(c, event(16, 10, 11, SP_EV_PATH_OPEN));	/* another thread of 10: no span */
	add(c, STOP(20, 10, 10, 1));
	add(c, event(21, 30, 30, SP_EV_SOCK_CONNECT));	/* after the span: the gap */
	done(c);
	a = span_of(1);
	CHECK(a != NULL);
	if (!a)
		goto out;
	CHECK_EQ_U(EV_SPAN(11), a->id);
	CHECK_EQ_U(EV_RULE(11), SP_RULE_THREAD);
	CHECK_EQ_U(EV_SPAN(12), a->id);
	CHECK_EQ_U(EV_RULE(12), SP_RULE_FORK);
	CHECK_EQ_U(EV_SPAN(14), a->id);
	CHECK_EQ_U(EV_RULE(14), SP_RULE_FORK);
	CHECK_EQ_U(SA_RULE(15), SP_RULE_FORK);
	CHECK_EQ_U(a->events, 4);
	CHECK_EQ_U(a->samples, 1);
	CHECK_EQ_U(EV_RULE(16), SP_RULE_GAP);
	CHECK_EQ_U(EV_RULE(21), SP_RULE_GAP);
	CHECK(span_id(EV_SPAN(21)) && span_id(EV_SPAN(21))->pid == 30);
	CHECK(span_id(EV_SPAN(16)) && span_id(EV_SPAN(16))->pid == 10);
	CHECK(span_id(EV_SPAN(16)) && span_id(EV_SPAN(16))->end == SP_END_SYNTHETIC);
out:
	sp_corr_free(c);
}

/* The fork rule falls back to the forking span's ancestors still open. */
static void test_correlate_fork_ancestor(void)
{
	struct sp_corr *c = corr(0);

	add(c, START(10, 10, 10, 1));
	add(c, START(11, 10, 10, 2));
	add(c, fork_ev(12, 10, 10, 20, 0));
	add(c, STOP(13, 10, 10, 2));
	add(c, START(14, 10, 10, 3));	/* a sibling: did not fork the child */
	add(c, event(15, 20, 20, SP_EV_PATH_OPEN));
	add(c, STOP(16, 10, 10, 3));
	add(c, STOP(17, 10, 10, 1));
	done(c);
	CHECK(span_of(1) && span_of(2));
	if (span_of(1) && span_of(2)) {
		CHECK_EQ_U(EV_SPAN(12), span_of(2)->id);
		CHECK_EQ_U(EV_SPAN(15), span_of(1)->id);
		CHECK_EQ_U(EV_RULE(15), SP_RULE_FORK);
	}
	sp_corr_free(c);
}

/* A forked process's own spans: children of the forking span, fork_span set. */
static void test_correlate_fork_spans(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *a, *x;

	add(c, START(10, 10, 10, 1));
	add(c, fork_ev(11, 10, 10, 20, 0));
	add(c, START(12, 20, 20, 5));
	add(c, sample(13, 20, 20));
	add(c, STOP(14, 20, 20, 5));
	add(c, sample(15, 10, 10));
	add(c, STOP(20, 10, 10, 1));
	done(c);
	a = span_of(1);
	x = span_of(5);
	CHECK(a && x);
	if (a && x) {
		CHECK_EQ_U(x->fork_span, a->id);
		CHECK_EQ_U(x->parent, 0);
		CHECK(x->id > a->id);
		CHECK_EQ_U(a->total_samples, 2);
		CHECK_EQ_U(SA_RULE(13), SP_RULE_THREAD);
	}
	sp_corr_free(c);
}

/* A thread's span that outlives the span that created it is emitted on its own. */
static void test_correlate_detached_child(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *a, *x;

	add(c, START(10, 10, 10, 1));
	add(c, fork_ev(11, 10, 10, 11, SP_FORK_THREAD));
	add(c, START(12, 10, 11, 5));
	add(c, sample(13, 10, 11));
	add(c, STOP(20, 10, 10, 1));
	CHECK(span_of(1) != NULL);	/* out as soon as it closed */
	CHECK(span_of(5) == NULL);
	add(c, sample(21, 10, 11));
	add(c, STOP(30, 10, 11, 5));
	done(c);
	a = span_of(1);
	x = span_of(5);
	CHECK(a && x);
	if (a && x) {
		CHECK_EQ_U(x->fork_span, a->id);
		CHECK_EQ_U(x->samples, 2);
		CHECK_EQ_U(a->total_samples, 0);
	}
	sp_corr_free(c);
}

static void test_correlate_gap(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *g;

	add(c, process(1, 10, 1));
	add(c, event(5, 10, 12, SP_EV_PATH_OPEN));
	add(c, sample(6, 10, 10));
	add(c, START(10, 10, 10, 1));	/* closes the gap */
	add(c, STOP(20, 10, 10, 1));
	add(c, sample(25, 10, 10));
	done(c);
	CHECK_EQ_U(EV_RULE(5), SP_RULE_GAP);
	CHECK_EQ_U(SA_RULE(6), SP_RULE_GAP);
	g = span_id(EV_SPAN(5));
	CHECK(g != NULL);
	if (g) {
		CHECK_EQ_U(g->end, SP_END_SYNTHETIC);
		CHECK_EQ_U(g->pid, 10);
		CHECK_EQ_U(g->tid, 10);
		CHECK_EQ_U(g->method, 0);
		CHECK_EQ_U(g->start, 5);
		CHECK_EQ_U(g->stop, 6);
		CHECK_EQ_U(g->events, 1);
		CHECK_EQ_U(g->samples, 1);
	}
	CHECK(SA_SPAN(25) != SA_SPAN(6));	/* a new gap after the span */
	CHECK_EQ_U(sp_corr_stats(c)->gap_spans, 2);
	CHECK_EQ_U(sp_corr_stats(c)->unknown_pids, 0);
	sp_corr_free(c);
}

static struct sp_record def_rec(unsigned int kind, uint64_t a, uint64_t b)
{
	struct sp_record r = { .kind = kind };

	if (kind == SP_REC_FRAME) {
		r.frame.mode = a;
		r.frame.addr = r.frame.rel = b;
	} else if (kind == SP_REC_STACK) {
		r.stack.parent = a;
		r.stack.frame = b;
	}
	return r;
}

static struct sp_record symbol(uint64_t frame, uint64_t func, uint64_t line)
{
	struct sp_record r = { .kind = SP_REC_SYMBOL };

	r.symbol.frame = frame;
	r.symbol.func = func;
	r.symbol.file = 51;
	r.symbol.line = line;
	return r;
}

static struct sp_record open_ev(uint64_t t, uint64_t tid, uint64_t stack)
{
	struct sp_record r = event(t, 10, tid, SP_EV_PATH_OPEN);

	r.event.nfields = sp_event_schema(SP_EV_PATH_OPEN)->nfields;
	r.event.field[r.event.nfields - 1].u = stack;
	return r;
}

/* Events outside every span go under their innermost interpreted frame. */
static void test_correlate_interp_frame(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *a, *b, *g;

	add(c, process(1, 10, 1));
	add(c, def_rec(SP_REC_FRAME, SP_FRAME_USER, 0x1000));	/* frame 1: native */
	add(c, def_rec(SP_REC_FRAME, SP_FRAME_INTERP, 1));	/* frame 2 */
	add(c, symbol(2, 50, 7));
	add(c, def_rec(SP_REC_FRAME, SP_FRAME_INTERP, 2));	/* frame 3 */
	add(c, symbol(3, 52, 9));
	add(c, def_rec(SP_REC_STACK, 0, 2));	/* stack 1: frame 2 */
	add(c, def_rec(SP_REC_STACK, 1, 3));	/* stack 2: frame 2, frame 3 */
	add(c, def_rec(SP_REC_STACK, 0, 1));	/* stack 3: native */
	add(c, open_ev(5, 10, 2));
	add(c, open_ev(6, 10, 2));
	add(c, open_ev(7, 10, 1));
	add(c, open_ev(8, 10, 3));
	add(c, open_ev(9, 11, 2));	/* another thread */
	add(c, START(20, 10, 10, 1));	/* closes the gap and its frames' spans */
	add(c, open_ev(21, 10, 2));
	add(c, STOP(30, 10, 10, 1));
	done(c);
	a = span_id(EV_SPAN(5));
	b = span_id(EV_SPAN(7));
	g = span_id(EV_SPAN(8));
	CHECK(a && b && g);
	if (!a || !b || !g)
		return;
	CHECK_EQ_U(EV_RULE(5), SP_RULE_GAP);
	CHECK_EQ_U(EV_SPAN(6), a->id);
	CHECK_EQ_U(a->method, 52);
	CHECK_EQ_U(a->file, 51);
	CHECK_EQ_U(a->line, 9);
	CHECK_EQ_U(a->tid, 10);
	CHECK_EQ_U(a->start, 5);
	CHECK_EQ_U(a->stop, 6);
	CHECK_EQ_U(a->events, 2);
	CHECK_EQ_U(a->end, SP_END_SYNTHETIC);
	CHECK_EQ_U(b->method, 50);
	CHECK_EQ_U(b->parent, g->id);
	CHECK_EQ_U(a->parent, g->id);
	CHECK_EQ_U(g->method, 0);	/* a native stack: the gap itself */
	CHECK_EQ_U(g->events, 1);
	CHECK(EV_SPAN(9) != a->id && span_id(EV_SPAN(9)) &&
	      span_id(EV_SPAN(9))->tid == 11 && span_id(EV_SPAN(9))->method == 52);
	/* inside a span, the span wins */
	CHECK_EQ_U(EV_RULE(21), SP_RULE_THREAD);
	CHECK_EQ_U(span_id(EV_SPAN(21))->method, 1);
	sp_corr_free(c);
}

static struct sp_record with_stack(struct sp_record r, uint64_t stack)
{
	r.event.nfields = sp_event_schema(r.event.kind)->nfields;
	r.event.field[r.event.nfields - 1].u = stack;
	return r;
}

/* A child process started outside every span comes from the interpreted
 * frame that started it: its fork is that frame's, and so are its own
 * records (the fork rule), as they would be a span's, but for those with
 * an interpreted frame of their own; a new thread has its own frames. */
static void test_correlate_interp_fork(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_span *a, *b;

	add(c, process(1, 10, 1));
	add(c, def_rec(SP_REC_FRAME, SP_FRAME_USER, 0x1000));	/* frame 1: native */
	add(c, def_rec(SP_REC_FRAME, SP_FRAME_INTERP, 1));	/* frame 2: <module> */
	add(c, symbol(2, 50, 7));
	add(c, def_rec(SP_REC_FRAME, SP_FRAME_INTERP, 2));	/* frame 3: run_child */
	add(c, symbol(3, 52, 9));
	add(c, def_rec(SP_REC_FRAME, SP_FRAME_INTERP, 3));	/* frame 4: other */
	add(c, symbol(4, 53, 12));
	add(c, def_rec(SP_REC_STACK, 0, 2));	/* stack 1: <module> */
	add(c, def_rec(SP_REC_STACK, 1, 3));	/* stack 2: <module>, run_child */
	add(c, def_rec(SP_REC_STACK, 1, 4));	/* stack 3: <module>, other */
	add(c, def_rec(SP_REC_STACK, 0, 1));	/* stack 4: native */
	add(c, with_stack(fork_ev(5, 10, 10, 20, 0), 2));
	add(c, with_stack(event(6, 20, 20, SP_EV_PROC_EXEC), 2));	/* the fork's stack */
	add(c, event(7, 20, 20, SP_EV_PATH_OPEN));
	add(c, with_stack(event(8, 10, 10, SP_EV_PATH_OPEN), 3));
	add(c, with_stack(fork_ev(9, 10, 10, 30, 0), 4));	/* from native code */
	add(c, event(10, 30, 30, SP_EV_PROC_EXEC));
	add(c, with_stack(fork_ev(11, 10, 10, 40, SP_FORK_THREAD), 2));
	add(c, event(12, 10, 40, SP_EV_PATH_OPEN));	/* the new thread's */
	add(c, with_stack(event(13, 20, 20, SP_EV_PATH_OPEN), 3));	/* the child's own frame */
	done(c);
	a = span_id(EV_SPAN(5));
	b = span_id(EV_SPAN(8));
	CHECK(a && b);
	if (!a || !b)
		return;
	CHECK_EQ_U(a->method, 52);
	CHECK_EQ_U(b->method, 53);
	CHECK_EQ_U(EV_RULE(6), SP_RULE_FORK);
	CHECK_EQ_U(EV_SPAN(6), a->id);
	CHECK_EQ_U(EV_SPAN(7), a->id);
	CHECK(EV_SPAN(9) != a->id && EV_SPAN(9) != b->id);	/* the gap */
	CHECK_EQ_U(EV_RULE(10), SP_RULE_GAP);	/* no frame: the child's own gap */
	CHECK(span_id(EV_SPAN(10)) && span_id(EV_SPAN(10))->pid == 30);
	/* a thread has frames of its own: not the frame's child */
	CHECK_EQ_U(EV_SPAN(11), a->id);
	CHECK_EQ_U(EV_RULE(12), SP_RULE_GAP);
	CHECK(span_id(EV_SPAN(12)) && span_id(EV_SPAN(12))->method == 0);
	/* nor is an event of the child made from an interpreted frame */
	CHECK_EQ_U(EV_RULE(13), SP_RULE_GAP);
	CHECK(span_id(EV_SPAN(13)) && span_id(EV_SPAN(13))->method == 53 &&
	      span_id(EV_SPAN(13))->pid == 20);
	check_stream();
	sp_corr_free(c);
}

static void test_correlate_gap_cap(void)
{
	struct sp_corr_opts o = { .gap_max = 3 };
	struct sp_corr *c;
	int i;

	nout = 0;
	c = sp_corr_new(&o, collect, NULL);
	for (i = 0; i < 7; i++)
		add(c, sample(10 + i, 10, 10));
	done(c);
	CHECK_EQ_U(sp_corr_stats(c)->gap_spans, 3);
	CHECK_EQ_U(SA_SPAN(12), 1);
	CHECK_EQ_U(SA_SPAN(13), 2);
	CHECK_EQ_U(SA_SPAN(16), 3);
	sp_corr_free(c);
}

static void test_correlate_stop_without_start(void)
{
	struct sp_corr *c = corr(0);

	add(c, STOP(10, 10, 10, 7));
	add(c, START(11, 10, 10, 1));
	add(c, STOP(12, 10, 10, 7));	/* not the open span's: leaves it open */
	add(c, event(13, 10, 10, SP_EV_PATH_OPEN));
	add(c, STOP(14, 10, 10, 1));
	done(c);
	CHECK_EQ_U(sp_corr_stats(c)->stop_without_start, 2);
	CHECK(span_of(7) == NULL);
	CHECK(span_of(1) && span_of(1)->end == SP_END_STOPPED);
	CHECK(span_of(1) && span_of(1)->stop == 14);
	CHECK(span_of(1) && EV_SPAN(13) == span_of(1)->id);
	CHECK_EQ_U(count_kind(SP_REC_SPAN_STOP), 3);	/* nothing dropped */
	sp_corr_free(c);
}

static struct sp_record klass(struct sp_record r, uint64_t k)
{
	r.mark.klass = k;
	return r;
}

/* A stop matches the innermost open span of its method whose class is its
 * own or none, or any class when it has none; on its own fiber only. */
static void test_correlate_stop_classes(void)
{
	struct sp_corr *c = corr(0);
	const struct sp_corr_stats *st;
	int i, stopped = 0, incomplete = 0;

	add(c, klass(START(10, 10, 10, 1), 100));	/* span 1: A.m1 */
	add(c, klass(START(11, 10, 10, 1), 200));	/* span 2: B.m1 */
	add(c, klass(START(12, 10, 10, 2), 0));	/* span 3: m2, no class */
	add(c, klass(START(13, 10, 10, 3), 100));	/* span 4: A.m3 */
	add(c, klass(STOP(14, 10, 10, 1), 300));	/* no m1 of class 300 or none */
	add(c, klass(STOP(15, 10, 10, 4), 0));		/* no m4 at all */
	add(c, klass(STOP(16, 10, 10, 2), 555));	/* m2 without class: stops, A.m3 unwound */
	add(c, fiber(17, 10, 10, 0, 9, true));
	add(c, klass(STOP(18, 10, 10, 1), 0));		/* fiber 9 has no m1 */
	add(c, fiber(19, 10, 10, 9, 0, false));
	add(c, klass(STOP(20, 10, 10, 1), 0));		/* any class: B.m1 */
	add(c, klass(STOP(21, 10, 10, 1), 100));	/* A.m1 */
	done(c);
	st = sp_corr_stats(c);
	CHECK_EQ_U(st->stop_without_start, 3);
	CHECK_EQ_U(st->unwound, 1);
	for (i = 0; i < nout; i++) {
		if (outv[i].kind != SP_REC_SPAN)
			continue;
		stopped += outv[i].span.end == SP_END_STOPPED;
		incomplete += outv[i].span.end == SP_END_INCOMPLETE;
		if (outv[i].span.method == 1 && outv[i].span.klass == 200)
			CHECK_EQ_U(outv[i].span.stop, 20);
		if (outv[i].span.method == 1 && outv[i].span.klass == 100)
			CHECK_EQ_U(outv[i].span.stop, 21);
		if (outv[i].span.method == 3)
			CHECK_EQ_U(outv[i].span.stop, 16);
	}
	CHECK_EQ_U(stopped, 3);
	CHECK_EQ_U(incomplete, 1);
	sp_corr_free(c);
}

/*
 * 100000 nested spans: stops that match none of them, lost records over
 * them, and the stop of the outermost, which closes them all. (Each of
 * these once looked at the whole stack.)
 */
static void test_correlate_deep_stack(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record l = { .kind = SP_REC_LOST };
	const struct sp_corr_stats *st;
	uint64_t t = 10, i;

	for (i = 0; i < 100000; i++)
		add(c, START(t++, 10, 10, 1));
	for (i = 0; i < 100000; i++)
		add(c, STOP(t++, 10, 10, 2));
	for (i = 0; i < 1000; i++) {
		l.lost.time = l.lost.start = t++;
		l.lost.count = 1;
		add(c, l);
	}
	add(c, START(t++, 10, 10, 3));
	add(c, STOP(t++, 10, 10, 3));	/* after the lost windows: complete */
	add(c, STOP(t++, 10, 10, 1));	/* the innermost m1 */
	done(c);
	st = sp_corr_stats(c);
	CHECK_EQ_U(st->spans, 100001);
	CHECK_EQ_U(st->stop_without_start, 100000);
	CHECK_EQ_U(st->unwound, 0);
	CHECK_EQ_U(st->open_at_end, 99999);
	CHECK_EQ_U(st->incomplete, 100000);
	sp_corr_free(c);
}

static void test_correlate_start_without_stop(void)
{
	struct sp_corr *c = corr(0);

	add(c, START(10, 10, 10, 1));
	add(c, START(11, 10, 10, 2));
	add(c, sample(50, 10, 10));
	CHECK_EQ_U(count_kind(SP_REC_SPAN), 0);	/* held while open */
	done(c);
	CHECK(span_of(1) && span_of(1)->end == SP_END_OPEN && span_of(1)->stop == 50);
	CHECK(span_of(2) && span_of(2)->end == SP_END_OPEN && span_of(2)->stop == 50);
	CHECK(span_of(2) && span_of(2)->parent == 1);
	CHECK_EQ_U(sp_corr_stats(c)->open_at_end, 2);
	sp_corr_free(c);
}

static void test_correlate_raise_unwinds(void)
{
	struct sp_corr *c = corr(0);

	add(c, START(10, 10, 10, 1));
	add(c, START(11, 10, 10, 2));
	add(c, START(12, 10, 10, 3));
	add(c, RAISE(13, 10, 10, 55));
	add(c, sample(14, 10, 10));
	add(c, STOP(20, 10, 10, 1));	/* 3 and 2 were unwound without stops */
	done(c);
	CHECK(span_of(1) && span_of(2) && span_of(3));
	if (!span_of(1) || !span_of(2) || !span_of(3))
		goto out;
	CHECK_EQ_U(span_of(3)->end, SP_END_RAISED);
	CHECK_EQ_U(span_of(3)->error, 55);
	CHECK_EQ_U(span_of(3)->stop, 13);
	CHECK_EQ_U(span_of(2)->end, SP_END_RAISED);
	CHECK_EQ_U(span_of(2)->error, 55);
	CHECK_EQ_U(span_of(2)->stop, 13);
	CHECK_EQ_U(span_of(1)->end, SP_END_STOPPED);
	CHECK_EQ_U(span_of(1)->error, 0);
	CHECK_EQ_U(span_of(1)->stop, 20);
	CHECK_EQ_U(sp_corr_stats(c)->unwound, 2);
	/* the sample after the raise is still in the innermost span */
	CHECK_EQ_U(SA_SPAN(14), span_of(3)->id);
out:
	sp_corr_free(c);
}

static void test_correlate_raise_then_stop(void)
{
	struct sp_corr *c = corr(0);

	add(c, START(10, 10, 10, 1));
	add(c, START(11, 10, 10, 2));
	add(c, RAISE(12, 10, 10, 55));
	add(c, STOP(13, 10, 10, 2));
	add(c, STOP(14, 10, 10, 1));
	add(c, RAISE(15, 10, 10, 56));	/* no span open */
	done(c);
	CHECK(span_of(2) && span_of(2)->end == SP_END_RAISED && span_of(2)->stop == 13);
	CHECK(span_of(1) && span_of(1)->end == SP_END_STOPPED);
	CHECK_EQ_U(sp_corr_stats(c)->raise_without_span, 1);
	CHECK_EQ_U(count_kind(SP_REC_SPAN_RAISE), 2);
	sp_corr_free(c);
}

/* --spans-match: a raise with no span open is outside the matching
 * methods, counted apart; inside one it raises the span as ever. */
static void test_correlate_raise_unmatched(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record r;

	r = RAISE(9, 10, 10, 54);
	r.mark.flags = SP_MARK_MATCH_ONLY;
	add(c, r);
	add(c, START(10, 10, 10, 1));
	r = RAISE(11, 10, 10, 55);
	r.mark.flags = SP_MARK_MATCH_ONLY;
	add(c, r);
	add(c, STOP(12, 10, 10, 1));
	done(c);
	CHECK(span_of(1) && span_of(1)->end == SP_END_RAISED);
	CHECK_EQ_U(sp_corr_stats(c)->raise_without_span, 0);
	CHECK_EQ_U(sp_corr_stats(c)->raise_unmatched, 1);
	CHECK_EQ_U(count_kind(SP_REC_SPAN_RAISE), 2);
	sp_corr_free(c);
}

/* A runtime that reports depths: a start at a depth closes deeper frames. */
static void test_correlate_depth_unwind(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record r;

	r = START(10, 10, 10, 1), r.mark.depth = 1, add(c, r);
	r = START(11, 10, 10, 2), r.mark.depth = 2, add(c, r);
	r = START(12, 10, 10, 3), r.mark.depth = 2, add(c, r);	/* 2's stop was lost */
	r = STOP(13, 10, 10, 3), add(c, r);
	r = STOP(14, 10, 10, 1), add(c, r);
	done(c);
	CHECK(span_of(2) && span_of(2)->end == SP_END_INCOMPLETE && span_of(2)->stop == 12);
	CHECK(span_of(3) && span_of(3)->parent == span_of(1)->id);
	sp_corr_free(c);
}

static void test_correlate_thread_exit(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record r = { .kind = SP_REC_THREAD_END };

	add(c, START(10, 10, 11, 1));
	r.thread_end.time = 15;
	r.thread_end.tid = 11;
	r.thread_end.pid = 10;
	add(c, r);
	add(c, sample(16, 10, 11));	/* tid seen again: a new thread, no span */
	done(c);
	CHECK(span_of(1) && span_of(1)->end == SP_END_OPEN && span_of(1)->stop == 15);
	CHECK_EQ_U(SA_RULE(16), SP_RULE_GAP);
	sp_corr_free(c);
}

/* proc_exit and exec end the spans of the image; the event itself still counts. */
static void test_correlate_exit_exec(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record r;

	add(c, START(10, 10, 10, 1));
	add(c, fork_ev(11, 10, 10, 20, 0));
	add(c, START(12, 20, 20, 2));
	add(c, event(13, 20, 20, SP_EV_PROC_EXEC));
	add(c, event(14, 20, 20, SP_EV_PATH_OPEN));	/* the new image: fork rule */
	r = event(15, 20, 20, SP_EV_PROC_EXIT);
	add(c, r);
	add(c, STOP(20, 10, 10, 1));
	done(c);
	CHECK(span_of(2) && span_of(2)->end == SP_END_OPEN && span_of(2)->stop == 13);
	CHECK(span_of(2) && EV_SPAN(13) == span_of(2)->id);
	CHECK_EQ_U(EV_RULE(14), SP_RULE_FORK);
	CHECK_EQ_U(EV_RULE(15), SP_RULE_FORK);
	sp_corr_free(c);
}

/*
 * A process's proc_exit comes before the last samples of its exit (the
 * kernel still runs it) and its process_end: they stay its own, in the
 * same gap, and the pid is not taken for an unknown one.
 */
static void test_correlate_exit_then_samples(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record pe = { .kind = SP_REC_PROCESS_END };
	const struct sp_span *g;

	add(c, process(1, 10, 1));
	add(c, event(5, 10, 10, SP_EV_PATH_OPEN));
	add(c, event(8, 10, 10, SP_EV_PROC_EXIT));
	add(c, sample(9, 10, 10));
	pe.process_end.time = 12;
	pe.process_end.pid = 10;
	add(c, pe);
	/* the pid again, from a stream without end records: a new process */
	add(c, process(20, 10, 1));
	add(c, event(21, 10, 10, SP_EV_PROC_EXIT));
	add(c, process(30, 10, 1));
	add(c, sample(31, 10, 10));
	done(c);
	CHECK_EQ_U(SA_SPAN(9), EV_SPAN(5));
	g = span_id(EV_SPAN(5));
	CHECK(g && g->start == 5 && g->stop == 9);
	CHECK(SA_SPAN(31) != EV_SPAN(21));
	CHECK_EQ_U(sp_corr_stats(c)->gap_spans, 3);
	CHECK_EQ_U(sp_corr_stats(c)->unknown_pids, 0);
	CHECK_EQ_U(sp_corr_stats(c)->pid_reuse, 0);
	sp_corr_free(c);
}

/*
 * A system-wide recording samples the kernel's exit path after the
 * process's end record: those samples are of its exit, not of an unknown
 * process, for a while (SP_CORR_EXIT_TAIL_NS). The idle task (pid 0) has
 * no process record anywhere.
 */
static void test_correlate_after_end(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record pe = { .kind = SP_REC_PROCESS_END };
	const uint64_t ms = 1000000;

	add(c, process(1 * ms, 10, 1));
	add(c, sample(2 * ms, 10, 10));
	pe.process_end.time = 3 * ms;
	pe.process_end.pid = 10;
	add(c, pe);
	add(c, sample(4 * ms, 10, 10));		/* its exit: counted as such */
	add(c, sample(5 * ms, 0, 0));		/* idle */
	pe.process_end.time = 6 * ms;
	add(c, pe);
	add(c, sample(6 * ms + SP_CORR_EXIT_TAIL_NS + 1, 10, 10));	/* too late: unknown */
	done(c);
	CHECK_EQ_U(sp_corr_stats(c)->after_end, 1);
	CHECK_EQ_U(sp_corr_stats(c)->unknown_pids, 1);
	CHECK_EQ_U(sp_corr_stats(c)->unknown_pid[0], 10);
	sp_corr_free(c);
}

/*
 * As sp-record writes a vfork+exec: the child's process and thread records
 * come before the fork event, and the exec is a process_end with the exec
 * flag followed by a new process record. The child stays the span's.
 */
static void test_correlate_child_seen_first(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record th = { .kind = SP_REC_THREAD }, pe = { .kind = SP_REC_PROCESS_END };
	struct sp_record px;

	add(c, process(1, 10, 1));
	add(c, START(10, 10, 10, 1));
	add(c, process(11, 20, 10));
	th.thread.time = 11;
	th.thread.tid = 20;
	th.thread.pid = 20;
	add(c, th);
	add(c, fork_ev(12, 10, 10, 20, 0));
	pe.process_end.time = 13;
	pe.process_end.pid = 20;
	pe.process_end.flags = SP_PEND_EXEC;
	add(c, pe);
	px = process(13, 20, 10);
	px.process.flags = SP_PROC_EXEC;
	add(c, px);
	add(c, event(14, 20, 20, SP_EV_PROC_EXEC));
	add(c, event(15, 20, 20, SP_EV_PATH_OPEN));
	add(c, STOP(20, 10, 10, 1));
	done(c);
	CHECK_EQ_U(EV_RULE(14), SP_RULE_FORK);
	CHECK_EQ_U(EV_RULE(15), SP_RULE_FORK);
	CHECK(span_of(1) && EV_SPAN(15) == span_of(1)->id);
	CHECK_EQ_U(sp_corr_stats(c)->pid_reuse, 0);
	sp_corr_free(c);
}

/* A thread's record before its fork event (a thread record carries the
 * time perf saw it): not a reuse, and its events get the fork rule. A
 * second fork event naming the live thread is a reuse. */
static void test_correlate_thread_seen_first(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record th = { .kind = SP_REC_THREAD };
	struct sp_record f = fork_ev(12, 10, 10, 10, SP_FORK_THREAD);

	add(c, process(1, 10, 1));
	add(c, START(10, 10, 10, 1));
	th.thread.time = 11;
	th.thread.tid = 11;
	th.thread.pid = 10;
	add(c, th);
	f.event.field[1].u = 11;	/* child tid */
	add(c, f);
	add(c, event(15, 10, 11, SP_EV_PATH_OPEN));
	CHECK_EQ_U(sp_corr_stats(c)->pid_reuse, 0);
	f.event.time = 16;
	add(c, f);
	add(c, STOP(20, 10, 10, 1));
	done(c);
	CHECK_EQ_U(EV_RULE(15), SP_RULE_FORK);
	CHECK(span_of(1) && EV_SPAN(15) == span_of(1)->id);
	CHECK_EQ_U(sp_corr_stats(c)->pid_reuse, 1);
	sp_corr_free(c);
}

/* A fork naming its own thread or process creates and ends nothing. */
static void test_correlate_self_fork(void)
{
	struct sp_corr *c = corr(0);

	add(c, START(10, 10, 10, 1));
	add(c, fork_ev(11, 10, 10, 10, SP_FORK_THREAD));
	add(c, fork_ev(12, 10, 10, 10, 0));
	add(c, sample(13, 10, 10));
	add(c, STOP(20, 10, 10, 1));
	done(c);
	CHECK(span_of(1) && span_of(1)->end == SP_END_STOPPED && span_of(1)->samples == 1);
	CHECK_EQ_U(SA_RULE(13), SP_RULE_THREAD);
	CHECK_EQ_U(sp_corr_stats(c)->pid_reuse, 0);
	sp_corr_free(c);
}

static void test_correlate_pid_reuse(void)
{
	struct sp_corr *c = corr(0);

	add(c, START(10, 10, 10, 1));
	add(c, fork_ev(11, 10, 10, 20, 0));
	add(c, STOP(12, 10, 10, 1));
	add(c, START(13, 20, 20, 2));	/* the child's span, never stopped */
	add(c, START(14, 10, 10, 3));
	add(c, fork_ev(15, 10, 10, 20, 0));	/* pid 20 again: the first one ended */
	add(c, event(16, 20, 20, SP_EV_PATH_OPEN));
	add(c, STOP(17, 10, 10, 3));
	add(c, process(18, 20, 10));
	add(c, process(19, 20, 10));	/* defined twice without an end */
	add(c, event(20, 20, 20, SP_EV_PATH_OPEN));
	done(c);
	CHECK(span_of(2) && span_of(2)->end == SP_END_OPEN && span_of(2)->stop == 15);
	CHECK(span_of(3) && EV_SPAN(16) == span_of(3)->id);
	CHECK_EQ_U(EV_RULE(16), SP_RULE_FORK);
	CHECK_EQ_U(EV_RULE(20), SP_RULE_GAP);
	CHECK_EQ_U(sp_corr_stats(c)->pid_reuse, 2);
	sp_corr_free(c);
}

static void test_correlate_lost(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record l = { .kind = SP_REC_LOST };

	add(c, START(10, 10, 10, 1));
	add(c, STOP(11, 10, 10, 1));
	add(c, START(12, 10, 10, 2));	/* open across the window */
	add(c, START(13, 10, 11, 3));	/* stops inside the window */
	add(c, START(14, 10, 12, 4));
	add(c, STOP(15, 10, 12, 4));	/* all before the window */
	l.lost.start = 16;
	l.lost.time = 30;
	l.lost.count = 5;
	add(c, l);
	add(c, STOP(20, 10, 11, 3));
	add(c, START(25, 10, 12, 5));	/* starts inside it */
	add(c, STOP(40, 10, 12, 5));
	add(c, START(41, 10, 12, 6));	/* after it */
	add(c, STOP(42, 10, 12, 6));
	add(c, STOP(50, 10, 10, 2));
	done(c);
	CHECK(span_of(1) && span_of(1)->end == SP_END_STOPPED);
	CHECK(span_of(2) && span_of(2)->end == SP_END_INCOMPLETE);
	CHECK(span_of(3) && span_of(3)->end == SP_END_INCOMPLETE);
	CHECK(span_of(4) && span_of(4)->end == SP_END_STOPPED);
	CHECK(span_of(5) && span_of(5)->end == SP_END_INCOMPLETE);
	CHECK(span_of(6) && span_of(6)->end == SP_END_STOPPED);
	CHECK_EQ_U(sp_corr_stats(c)->incomplete, 3);
	sp_corr_free(c);
}

static void test_correlate_lost_other_pid(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record l = { .kind = SP_REC_LOST };

	add(c, START(10, 10, 10, 1));
	l.lost.time = 12;
	l.lost.pid = 99;
	add(c, l);
	add(c, STOP(20, 10, 10, 1));
	done(c);
	CHECK(span_of(1) && span_of(1)->end == SP_END_STOPPED);
	sp_corr_free(c);
}

/* Stops dropped for want of a start, processes left without probes,
 * samples whose interpreted stacks could not be read: the spans the spool
 * holds lost nothing. */
static void test_correlate_lost_not_spans(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record l = { .kind = SP_REC_LOST };

	add(c, START(10, 10, 10, 1));
	l.lost.time = 12;
	l.lost.what = SP_LOST_SPAN_STOPS;
	l.lost.count = 30;
	add(c, l);
	l.lost.time = 13;
	l.lost.what = SP_LOST_UNPROBED;
	l.lost.count = 2;
	add(c, l);
	l.lost.time = 14;	/* samples without their interpreted stacks */
	l.lost.what = SP_LOST_INTERP;
	l.lost.count = 5;
	add(c, l);
	add(c, STOP(20, 10, 10, 1));
	done(c);
	CHECK(span_of(1) && span_of(1)->end == SP_END_STOPPED);
	sp_corr_free(c);
}

static void test_correlate_reorder(void)
{
	struct sp_corr *c = corr(100);

	add(c, START(10, 10, 10, 1));
	add(c, STOP(20, 10, 10, 1));
	add(c, sample(15, 10, 10));	/* arrives after the stop, inside the window */
	add(c, sample(300, 10, 10));
	add(c, sample(500, 10, 10));	/* lets 300 out */
	add(c, sample(250, 10, 10));	/* older than what went out: late */
	done(c);
	CHECK(span_of(1) && SA_SPAN(15) == span_of(1)->id);
	CHECK(span_of(1) && span_of(1)->samples == 1);
	CHECK_EQ_U(sp_corr_stats(c)->late, 1);
	CHECK_EQ_U(SA_RULE(250), SP_RULE_GAP);
	sp_corr_free(c);
}

/* Without a window, a record older than the last one processed is late. */
static void test_correlate_no_window(void)
{
	struct sp_corr *c = corr(0);

	add(c, START(10, 10, 10, 1));
	add(c, STOP(20, 10, 10, 1));
	add(c, sample(15, 10, 10));
	done(c);
	CHECK_EQ_U(sp_corr_stats(c)->late, 1);
	CHECK_EQ_U(SA_RULE(15), SP_RULE_GAP);
	sp_corr_free(c);
}

/* process_end waits until the records held before it are out. */
static void test_correlate_deferred_end(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record r = { .kind = SP_REC_PROCESS_END };
	int i, ispan = -1, iend = -1, isample = -1;

	add(c, START(10, 10, 10, 1));
	add(c, fork_ev(11, 10, 10, 20, 0));
	add(c, sample(12, 20, 20));
	r.process_end.time = 13;
	r.process_end.pid = 20;
	add(c, r);
	add(c, STOP(20, 10, 10, 1));
	done(c);
	for (i = 0; i < nout; i++) {
		if (outv[i].kind == SP_REC_SPAN && ispan < 0)
			ispan = i;
		if (outv[i].kind == SP_REC_SAMPLE)
			isample = i;
		if (outv[i].kind == SP_REC_PROCESS_END)
			iend = i;
	}
	CHECK(ispan >= 0 && isample > ispan && iend > isample);
	sp_corr_free(c);
}

static void test_correlate_early_flush(void)
{
	struct sp_corr_opts o = { .max_held = 8 };
	struct sp_corr *c;
	int i;

	nout = 0;
	c = sp_corr_new(&o, collect, NULL);
	add(c, START(10, 10, 10, 1));
	for (i = 0; i < 20; i++)
		add(c, sample(11 + i, 10, 10));
	CHECK(span_of(1) != NULL);
	CHECK(span_of(1) && span_of(1)->end == SP_END_OPEN && span_of(1)->stop == 0);
	add(c, STOP(40, 10, 10, 1));
	done(c);
	CHECK_EQ_U(count_kind(SP_REC_SPAN), 1);	/* not emitted twice */
	CHECK_EQ_U(count_kind(SP_REC_SAMPLE), 20);
	CHECK(sp_corr_stats(c)->early_flush >= 1);
	sp_corr_free(c);
}

static void test_correlate_headers(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record h = { .kind = SP_REC_HEADER };

	add(c, h);
	add(c, START(10, 10, 10, 1));
	add(c, h);	/* a second stream: the first ends, ids start again */
	add(c, START(10, 10, 10, 2));
	add(c, STOP(11, 10, 10, 2));
	done(c);
	CHECK_EQ_U(outv[0].kind, SP_REC_HEADER);
	CHECK(outv[0].header.flags & SP_HDR_CORRELATED);
	CHECK(span_of(1) && span_of(1)->id == 1 && span_of(1)->end == SP_END_OPEN);
	CHECK(span_of(2) && span_of(2)->id == 1 && span_of(2)->end == SP_END_STOPPED);
	sp_corr_free(c);
}

static void test_correlate_old_spans_dropped(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record s = { .kind = SP_REC_SPAN };
	struct sp_record e = sample(12, 10, 10);

	s.span.method = 9;
	add(c, s);
	add(c, START(10, 10, 10, 1));
	e.sample.span = 77;
	e.sample.rule = SP_RULE_GAP;
	add(c, e);
	add(c, STOP(20, 10, 10, 1));
	done(c);
	CHECK_EQ_U(count_kind(SP_REC_SPAN), 1);
	CHECK_EQ_U(SA_SPAN(12), 1);
	CHECK_EQ_U(SA_RULE(12), SP_RULE_THREAD);
	CHECK_EQ_U(sp_corr_stats(c)->old_spans, 1);
	sp_corr_free(c);
}

/* A correlated input passes through, but for references to spans not
 * defined before: parents cut, samples and events dropped, counted. */
static void test_correlate_passthrough_bad_refs(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record h = { .kind = SP_REC_HEADER }, s = { .kind = SP_REC_SPAN };
	struct sp_record ok = sample(12, 10, 10), bad = sample(13, 10, 10), ev;

	h.header.flags = SP_HDR_CORRELATED;
	add(c, h);
	s.span.method = 9;
	s.span.parent = 5;		/* forward: cut */
	add(c, s);
	ok.sample.span = 1;
	ok.sample.rule = SP_RULE_THREAD;
	add(c, ok);
	bad.sample.span = 2;		/* not defined yet: dropped */
	add(c, bad);
	ev = event(14, 10, 10, SP_EV_PATH_OPEN);	/* span 0: dropped */
	add(c, ev);
	done(c);
	CHECK_EQ_U(count_kind(SP_REC_SPAN), 1);
	CHECK(span_id(1) && span_id(1)->parent == 0);
	CHECK_EQ_U(count_kind(SP_REC_SAMPLE), 1);
	CHECK_EQ_U(SA_SPAN(12), 1);
	CHECK_EQ_U(count_kind(SP_REC_EVENT), 0);
	CHECK_EQ_U(sp_corr_stats(c)->bad_refs, 3);
	sp_corr_free(c);
}

/* Events keep their byte fields (addresses) when held. */
static void test_correlate_event_bytes(void)
{
	struct sp_corr *c = corr(0);
	struct sp_record e = event(11, 10, 10, SP_EV_SOCK_CONNECT);
	uint8_t addr[4] = { 127, 0, 0, 1 };
	const struct sp_record *o;

	e.event.field[1].b.p = addr;
	e.event.field[1].b.len = 4;
	add(c, START(10, 10, 10, 1));
	add(c, e);
	addr[0] = 0;
	CHECK_EQ_U(count_kind(SP_REC_EVENT), 0);
	add(c, STOP(20, 10, 10, 1));
	o = at(SP_REC_EVENT, 11);
	CHECK(o && o->event.field[1].b.len == 4 && o->event.field[1].b.p[0] == 127);
	sp_corr_free(c);
}

/* Many threads and spans: the stream rules hold, nothing is lost. */
static void test_correlate_many(void)
{
	struct sp_corr_opts o = { .window_ns = 50 };
	struct sp_corr *c;
	int i, n = 0;
	uint64_t t = 100;

	nout = 0;
	c = sp_corr_new(&o, collect, NULL);
	for (i = 0; i < 200; i++, t += 3) {
		uint64_t tid = 10 + i % 7;

		add(c, START(t, 10, tid, 1 + i % 5));
		add(c, sample(t + 1, 10, tid));
		add(c, STOP(t + 2, 10, tid, 1 + i % 5));
		n += 3;
	}
	done(c);
	CHECK_EQ_U(count_kind(SP_REC_SAMPLE), 200);
	CHECK_EQ_U(count_kind(SP_REC_SPAN), 200);
	CHECK_EQ_U(sp_corr_stats(c)->assigned[SP_RULE_THREAD], 200);
	CHECK_EQ_U(sp_corr_stats(c)->records, (uint64_t)n);
	sp_corr_free(c);
}

int main(void)
{
	TAP_RUN(test_correlate_thread_rule);
	TAP_RUN(test_correlate_reconstructed);
	TAP_RUN(test_correlate_fibers);
	TAP_RUN(test_correlate_fiber_open_at_end);
	TAP_RUN(test_correlate_fork_rule);
	TAP_RUN(test_correlate_fork_ancestor);
	TAP_RUN(test_correlate_fork_spans);
	TAP_RUN(test_correlate_detached_child);
	TAP_RUN(test_correlate_gap);
	TAP_RUN(test_correlate_gap_cap);
	TAP_RUN(test_correlate_interp_frame);
	TAP_RUN(test_correlate_interp_fork);
	TAP_RUN(test_correlate_stop_without_start);
	TAP_RUN(test_correlate_stop_classes);
	TAP_RUN(test_correlate_deep_stack);
	TAP_RUN(test_correlate_start_without_stop);
	TAP_RUN(test_correlate_raise_unwinds);
	TAP_RUN(test_correlate_raise_then_stop);
	TAP_RUN(test_correlate_raise_unmatched);
	TAP_RUN(test_correlate_depth_unwind);
	TAP_RUN(test_correlate_thread_exit);
	TAP_RUN(test_correlate_exit_exec);
	TAP_RUN(test_correlate_exit_then_samples);
	TAP_RUN(test_correlate_after_end);
	TAP_RUN(test_correlate_child_seen_first);
	TAP_RUN(test_correlate_thread_seen_first);
	TAP_RUN(test_correlate_self_fork);
	TAP_RUN(test_correlate_pid_reuse);
	TAP_RUN(test_correlate_lost);
	TAP_RUN(test_correlate_lost_other_pid);
	TAP_RUN(test_correlate_lost_not_spans);
	TAP_RUN(test_correlate_reorder);
	TAP_RUN(test_correlate_no_window);
	TAP_RUN(test_correlate_deferred_end);
	TAP_RUN(test_correlate_early_flush);
	TAP_RUN(test_correlate_headers);
	TAP_RUN(test_correlate_old_spans_dropped);
	TAP_RUN(test_correlate_passthrough_bad_refs);
	TAP_RUN(test_correlate_event_bytes);
	TAP_RUN(test_correlate_many);
	return TAP_DONE();
}
