// SPDX-License-Identifier: MIT
/* Unit tests for lib/render/lanes.c: tasks from coroutine spans, fibers
 * from fiber switches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/lanes.h"
#include "tap.h"

/* Span number n of the stream (ids are implicit: the caller's count). */
static struct sp_lane *span(struct sp_lanes *l, uint64_t parent, uint64_t coro, uint64_t start,
			    uint64_t stop, bool suspended)
{
	struct sp_record r = { .kind = SP_REC_SPAN };

	r.span.parent = parent;
	r.span.pid = 10;
	r.span.tid = 10;
	r.span.runtime = SP_RT_PYTHON;
	r.span.method = 1;
	r.span.coro = coro;
	r.span.start = start;
	r.span.stop = stop;
	r.span.flags = suspended ? SP_SPAN_SUSPENDED : 0;
	return sp_lanes_add(l, &r);
}

static void fiber(struct sp_lanes *l, uint64_t time, uint64_t from, uint64_t to, bool fresh)
{
	struct sp_record r = { .kind = SP_REC_FIBER_SWITCH };

	r.fiber_switch.time = time;
	r.fiber_switch.pid = 20;
	r.fiber_switch.tid = 21;
	r.fiber_switch.from = from;
	r.fiber_switch.to = to;
	r.fiber_switch.flags = fresh ? SP_FIBER_NEW : 0;
	sp_lanes_add(l, &r);
}

/* A task's outermost coroutine under the loop's span (1), the coroutine it
 * awaits nested in it: one lane of two resumes; an address used again after
 * the task ended is a second task. */
static void test_lanes_tasks(void)
{
	struct sp_lanes l = SP_LANES_INIT;
	struct sp_lane *a;

	CHECK(!span(&l, 0, 0, 100, 900, false));		/* 1: the loop */
	a = span(&l, 1, 0xa0, 110, 150, true);			/* 2: task A resumes */
	CHECK(a && a->seq == 1);
	CHECK(!span(&l, 2, 0xb0, 120, 150, true));		/* 3: awaited, nested */
	CHECK(!span(&l, 3, 0, 125, 130, false));		/* 4: a call of it */
	CHECK(span(&l, 1, 0xa0, 300, 340, false) == a);	/* 5: A ends */
	a = span(&l, 1, 0xa0, 400, 420, true);			/* 6: a new task, same address */
	CHECK(a && a->seq == 2);
	CHECK_EQ_U(l.n, 2);
	a = l.lane[0];
	CHECK_EQ_U(a->nres, 2);
	CHECK_EQ_U(a->awaits, 1);
	CHECK(a->done);
	CHECK_EQ_U(a->start, 110);
	CHECK_EQ_U(a->stop, 340);
	CHECK_EQ_U(a->running_ns, 80);
	CHECK_EQ_U(a->res[0].span, 2);
	CHECK_EQ_U(a->res[1].span, 5);
	CHECK(!l.lane[1]->done);
	sp_lanes_release(&l);
}

/* A throw into a task (cancel()) runs the coroutine it awaits first, with
 * no coroutine above it: that span is the task's, not a task of its own. */
static void test_lanes_throw(void)
{
	struct sp_lanes l = SP_LANES_INIT;

	CHECK(!span(&l, 0, 0, 100, 900, false));		/* 1: the loop */
	CHECK(span(&l, 1, 0xa0, 110, 150, true));		/* 2: task A */
	CHECK(!span(&l, 2, 0xb0, 120, 150, true));		/* 3: A awaits B */
	CHECK(!span(&l, 1, 0xb0, 200, 210, false));		/* 4: thrown into B */
	CHECK(span(&l, 1, 0xa0, 211, 220, false));		/* 5: then A ends */
	CHECK_EQ_U(l.n, 1);
	CHECK_EQ_U(l.lane[0]->nres, 2);
	CHECK(!span(&l, 0, 0, 1000, 1900, false));		/* 6: the loop again */
	CHECK(span(&l, 6, 0xb0, 1100, 1150, false));		/* 7: B's address, a new task */
	CHECK_EQ_U(l.n, 2);
	sp_lanes_release(&l);
}

/* Fibers: each switch to one is a resume, ended by the next switch away;
 * the last one is its end; a fresh fiber with a known id is another. */
static void test_lanes_fibers(void)
{
	struct sp_lanes l = SP_LANES_INIT;

	fiber(&l, 10, 0, 0x1, true);
	fiber(&l, 20, 0x1, 0, false);
	fiber(&l, 30, 0, 0x2, true);
	fiber(&l, 35, 0x2, 0x3, true);		/* 2 resumes 3: its owner */
	fiber(&l, 40, 0x3, 0x2, false);
	fiber(&l, 50, 0x2, 0, false);
	fiber(&l, 60, 0, 0x1, false);
	fiber(&l, 70, 0x1, 0, false);
	fiber(&l, 80, 0, 0x1, true);		/* a new fiber with 1's id */
	fiber(&l, 90, 0x1, 0, false);
	sp_lanes_finish(&l);
	CHECK_EQ_U(l.n, 4);
	CHECK_EQ_U(l.lane[0]->id, 0x1);
	CHECK_EQ_U(l.lane[0]->nres, 2);
	CHECK_EQ_U(l.lane[0]->awaits, 1);
	CHECK_EQ_U(l.lane[0]->start, 10);
	CHECK_EQ_U(l.lane[0]->stop, 70);
	CHECK_EQ_U(l.lane[0]->running_ns, 20);
	CHECK_EQ_U(l.lane[1]->nres, 2);
	CHECK_EQ_U(l.lane[1]->running_ns, 15);
	CHECK_EQ_U(l.lane[2]->owner, 0x2);
	CHECK_EQ_U(l.lane[2]->nres, 1);
	CHECK_EQ_U(l.lane[2]->awaits, 0);
	CHECK_EQ_U(l.lane[3]->start, 80);
	CHECK_EQ_U(l.lane[3]->owner, 0);
	sp_lanes_release(&l);
}

int main(void)
{
	TAP_RUN(test_lanes_tasks);
	TAP_RUN(test_lanes_throw);
	TAP_RUN(test_lanes_fibers);
	return TAP_DONE();
}
