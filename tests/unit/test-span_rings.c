// SPDX-License-Identifier: MIT
/*
 * Unit tests of the span rings: the hooks' writer (runtime/hook/ring.c,
 * compiled into the hook extensions, not into the library: included here)
 * and sp-record's reader (lib/record/span_rings.c), which reads this process's own
 * rings as it does a traced process's (heads through /proc/PID/mem, entries
 * with process_vm_readv), and writes back to their heads. What BPF would copy at a thread's end is
 * handed over as chunks by hand.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/hook/ring.c"
#include "procfs.h"
#include "record/span_rings.h"
#include "code_poke.h"
#include "pid_reuse.h"
#include "sp.h"
#include "stderr_capture.h"
#include "tap.h"
#include "timens_child.h"

/* What the reader delivered: the entries' lines, in order. */
static struct {
	int line[4 * SP_RING_CAP];
	uint32_t tid[4 * SP_RING_CAP];
	uint64_t time[4 * SP_RING_CAP];
	size_t n;
	size_t stop_at;		/* nonzero: fail the put of that many */
} got;

static int put(void *ctx, uint32_t pid, uint32_t tid, const struct sp_ring_entry *e)
{
	(void)ctx;
	(void)pid;
	if (got.stop_at && got.n + 1 == got.stop_at)
		return -1;
	if (got.n < sizeof(got.line) / sizeof(got.line[0])) {
		got.line[got.n] = e->line;
		got.tid[got.n] = tid;
		got.time[got.n] = e->time;
	}
	got.n++;
	return 0;
}

/* Whether lines 1..n arrived once each, in order. */
static bool got_in_order(size_t n)
{
	size_t i;

	if (got.n != n)
		return false;
	for (i = 0; i < n; i++)
		if (got.line[i] != (int)i + 1)
			return false;
	return true;
}

static void mark(int line)
{
	CHECK(sp_rt_ring_put(SP_PR_RB_HOOK_CALL, "Cls", "meth", "file.rb", line));
}

/* A chunk as BPF copies it: n entries of r from number first. */
static int chunk(struct sp_span_rings *rs, struct sp_ring *r, uint64_t first, uint32_t n,
		 uint32_t flags)
{
	return sp_span_rings_chunk(rs, r->h.pid, r->h.tid, (uintptr_t)r, first, n, flags, 1, 0,
				   &r->e[first % SP_RING_CAP], put, NULL);
}

static uint64_t t_ns = 1000000000ull;

/* A poll now: the reader waits a millisecond between polls. */
static int poll_now(struct sp_span_rings *rs)
{
	t_ns += 2000000;
	return sp_span_rings_poll(rs, t_ns, put, NULL);
}

/* A fresh ring for this thread, announced to a fresh reader. */
static struct sp_ring *start(struct sp_span_rings *rs)
{
	struct sp_ring *r;

	sp_span_rings_init(rs);
	memset(&got, 0, sizeof(got));
	sp_rt_ring_cur = NULL;
	r = sp_rt_ring_start();
	CHECK(r != NULL);
	CHECK_EQ_U(r->h.magic, SP_RING_MAGIC);
	CHECK_EQ_U(r->h.pid, (uint64_t)getpid());
	sp_span_rings_add(rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false, 0, 0);
	return r;
}

/* The end of a test: its ring and reader go. */
static void finish(struct sp_span_rings *rs, struct sp_ring *r)
{
	pthread_setspecific(key, NULL);
	sp_rt_ring_cur = NULL;
	free(r);
	sp_span_rings_release(rs);
}

/* Polls deliver what the thread wrote, once, in order, across the ring's
 * wrap, and tell the thread how far they read: it never waits on a reader
 * that keeps up. */
static void test_span_rings_poll(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	int i, line = 0;

	CHECK_EQ_U(r->h.reader, SP_RING_ASKED);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 0);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);
	CHECK_EQ_U(rs.reading, 1);
	for (i = 0; i < 10; i++)
		mark(++line);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got_in_order(10));
	CHECK_EQ_U(r->h.consumed, 10);
	CHECK_EQ_U(poll_now(&rs), 0);	/* nothing new */
	CHECK(got_in_order(10));
	/* across the end of the ring: read in two pieces */
	while (line < (int)SP_RING_CAP + 100) {
		mark(++line);
		if (line % 1500 == 0)
			CHECK_EQ_U(poll_now(&rs), 0);
	}
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got_in_order((size_t)line));
	CHECK_EQ_U(r->h.consumed, (uint64_t)line);
	CHECK_EQ_U(rs.dups, 0);
	CHECK_EQ_U(rs.lost, 0);
	/* within a millisecond of the last: not read again, unless woken */
	mark(++line);
	CHECK_EQ_U(sp_span_rings_poll(&rs, t_ns + 10, put, NULL), 0);
	CHECK(got_in_order((size_t)line - 1));
	sp_span_rings_wake(&rs, 0, 0, 0, 0, 0);
	CHECK_EQ_U(sp_span_rings_poll(&rs, t_ns + 20, put, NULL), 0);
	CHECK(got_in_order((size_t)line));
	/* the recording ends: the thread is told not to wait */
	sp_span_rings_leave(&rs);
	CHECK_EQ_U(r->h.reader, SP_RING_LEFT);
	finish(&rs, r);
}

/* A full ring read by a reader that does not come: the thread waits for
 * it (a little while ASKED, longer while READING), once, then overwrites
 * what is unread; the reader counts what it lost. */
static void test_span_rings_wait(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	uint64_t t0;
	int line = 0;

	while (line < (int)SP_RING_CAP)
		mark(++line);
	CHECK_EQ_U(naps, 0);
	t0 = now_ns();
	mark(++line);	/* more than half unread: waits for the reader */
	CHECK(now_ns() - t0 >= SP_RT_RING_ASKED_WAIT_NS);
	CHECK(naps > 0);
	CHECK_EQ_U(stale_consumed, 0);
	naps = 0;
	while (line < (int)SP_RING_CAP * 2)	/* the same reader: not again */
		mark(++line);
	CHECK_EQ_U(naps, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(rs.lost, SP_RING_CAP);
	CHECK_EQ_U(got.n, SP_RING_CAP);
	CHECK_EQ_U(got.line[0], SP_RING_CAP + 1);
	/* a reader there, keeping up: no wait, nothing lost */
	while (line < (int)SP_RING_CAP * 5) {
		mark(++line);
		if (line % 1000 == 0)
			CHECK_EQ_U(poll_now(&rs), 0);
	}
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(naps, 0);
	CHECK_EQ_U(rs.lost, SP_RING_CAP);
	CHECK_EQ_U(got.n, 4 * SP_RING_CAP);
	CHECK_EQ_U(got.line[got.n - 1], 5 * SP_RING_CAP);
	finish(&rs, r);
}

/* A ring made before the recording (an attached process) is found at its
 * next wake and read from what it still holds; that is not counted lost.
 * Its thread's earlier marks were never seen (overwritten, or an earlier
 * reader's): what it holds is skipped until its hook's run of open frames
 * (span_rings.h), though all of it is from the recording. */
static void test_span_rings_late(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	int line = 0;

	sp_span_rings_release(&rs);	/* a reader that missed rt__ring */
	sp_span_rings_init(&rs);
	r->h.reader = SP_RING_LEFT;	/* an earlier sp-record's */
	while (line < (int)SP_RING_CAP + 500)
		mark(++line);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 0);
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, 0);
	CHECK_EQ_U(rs.n, 1);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 0);
	CHECK_EQ_U(rs.before_run, SP_RING_CAP);
	CHECK_EQ_U(rs.lost, 0);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);
	CHECK(sp_rt_ring_put(SP_PR_RB_HOOK_CALL | SP_RING_RESYNC, "Cls", "meth", "file.rb",
			     ++line));
	/* the same ring woken, announced again: nothing starts over */
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, 0);
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, true, 0, 0);
	mark(++line);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 2);
	CHECK_EQ_U(got.line[0], SP_RING_CAP + 501);
	CHECK_EQ_U(got.line[1], SP_RING_CAP + 502);
	CHECK_EQ_U(rs.dups, 0);
	finish(&rs, r);
}

/* A Python hook's mark of line, flag SP_RING_RESYNC or 0. */
static void py_mark(int line, uint32_t flag)
{
	CHECK(sp_rt_ring_put(SP_PR_PY_HOOK_CALL | flag, "mod", "func", "file.py", line));
}

/* When a ring's run of open frames is delivered, and which marks around
 * it are, by the rule alone. */
static void test_span_rings_resync_rule(void)
{
	struct sp_ring_entry e = { .time = 1000, .probe = SP_PR_PY_HOOK_CALL };
	uint64_t claimed = 900;

	CHECK_EQ_U(sp_span_rings_resync(false, false, claimed, &e), SP_RESYNC_DELIVER);
	/* awaited: marks just after the claim wait for the run */
	CHECK_EQ_U(sp_span_rings_resync(true, false, claimed, &e), SP_RESYNC_SKIP);
	e.time = claimed + SP_SPAN_RINGS_RUN_WAIT_NS;	/* a hook with no run */
	CHECK_EQ_U(sp_span_rings_resync(true, false, claimed, &e), SP_RESYNC_DELIVER);
	e.probe |= SP_RING_RESYNC;
	CHECK_EQ_U(sp_span_rings_resync(true, false, claimed, &e), SP_RESYNC_RUN);
	CHECK_EQ_U(sp_span_rings_resync(false, true, claimed, &e), SP_RESYNC_RUN);
	CHECK_EQ_U(sp_span_rings_resync(false, false, claimed, &e), SP_RESYNC_DROP);
	e.probe = SP_PR_PY_HOOK_RETURN;	/* the run is over */
	e.time = 1000;
	CHECK_EQ_U(sp_span_rings_resync(true, true, claimed, &e), SP_RESYNC_DELIVER);
	CHECK(sp_span_rings_hook(SP_PR_PY_HOOK_RETURN | SP_RING_RESYNC));
	CHECK(sp_span_rings_hook(SP_PR_PY_HOOK_CORO));
	CHECK(sp_span_rings_hook(SP_PR_RB_HOOK_CALL));
	CHECK(sp_span_rings_hook(SP_PR_RB_HOOK_FIBER | SP_RING_RESYNC));
	CHECK(!sp_span_rings_hook(SP_PR_RUBY_RAISE));
	/* the Ruby hook's C methods (c_call) and its boot frames */
	CHECK(sp_span_rings_hook(SP_PR_RUBY_CMETHOD_ENTRY));
	CHECK(sp_span_rings_hook(SP_PR_RUBY_CMETHOD_RETURN | SP_RING_RESYNC));
	CHECK(sp_span_rings_hook(SP_PR_RB_HOOK_CALL | SP_RING_BOOT));
	e.probe = SP_PR_RB_HOOK_CALL | SP_RING_BOOT;	/* not a run of its own */
	CHECK_EQ_U(sp_span_rings_resync(false, false, claimed, &e), SP_RESYNC_DELIVER);
}

/* A Python ring found with marks from before the recording (-p of a
 * running program): what came after the recording's start but before the
 * claim is skipped, the hook's run of open frames is delivered (without
 * its flag) and so is all after it; a later run is dropped. */
static void test_span_rings_resync_late(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);

	sp_span_rings_release(&rs);	/* a reader that was not there */
	sp_span_rings_init(&rs);
	py_mark(1, 0);			/* before the recording */
	py_mark(2, 0);
	rs.since = now_ns();
	py_mark(3, 0);			/* in it, before the claim */
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 0);
	CHECK_EQ_U(rs.before_run, 1);
	CHECK(r->h.claim == rs.claim);
	py_mark(11, SP_RING_RESYNC);	/* the hook saw the claim */
	py_mark(12, SP_RING_RESYNC);
	py_mark(13, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 3);
	CHECK_EQ_U(got.line[0], 11);
	CHECK_EQ_U(got.line[2], 13);
	py_mark(21, SP_RING_RESYNC);	/* another claim's run: not ours to take */
	py_mark(22, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 4);
	CHECK_EQ_U(got.line[3], 22);
	CHECK_EQ_U(rs.before_run, 1);
	finish(&rs, r);
}

/* A Ruby ring found with marks from before the recording waits for its
 * hook's run of open methods as a Python one does: the return between the
 * recording's start and the run is skipped (its method is in the run). */
static void test_span_rings_resync_ruby(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);

	sp_span_rings_release(&rs);
	sp_span_rings_init(&rs);
	mark(1);			/* before the recording */
	rs.since = now_ns();
	CHECK(sp_rt_ring_put(SP_PR_RB_HOOK_RETURN, "Cls", "meth", "file.rb", 2));
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 0);
	CHECK_EQ_U(rs.before_run, 1);
	CHECK(sp_rt_ring_put(SP_PR_RB_HOOK_CALL | SP_RING_RESYNC, "Cls", "outer", "file.rb", 11));
	CHECK(sp_rt_ring_put(SP_PR_RB_HOOK_CALL | SP_RING_RESYNC, "Cls", "meth", "file.rb", 12));
	mark(13);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 3);
	CHECK_EQ_U(got.line[0], 11);
	CHECK_EQ_U(got.line[2], 13);
	finish(&rs, r);
}

/* An older hook's ring (no SP_RING_F_RUNS: it writes no run) found with
 * marks from before the recording: nothing is awaited, its marks from the
 * recording's start on are delivered at once, none skipped. */
static void test_span_rings_no_runs(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);

	sp_span_rings_release(&rs);
	sp_span_rings_init(&rs);
	r->h.features = 0;
	py_mark(1, 0);			/* before the recording */
	rs.since = now_ns();
	py_mark(2, 0);			/* in it, before the claim */
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	py_mark(3, 0);			/* just after the claim */
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 2);
	CHECK_EQ_U(got.line[0], 2);
	CHECK_EQ_U(got.line[1], 3);
	CHECK_EQ_U(rs.before_run, 0);
	finish(&rs, r);
}

/* The marker's first byte (code_poke.h). */
static bool poke_site(unsigned char b)
{
	return code_poke(sp_rt_ring_site, b);
}

/* The hooks' side: a thread writes its open frames at its first mark after
 * a recorder came, once; not at its first mark ever (it started no frame
 * unseen), nor when a recorder goes, nor after its frames were marked
 * (install) while one listened; again when another comes. With span rings
 * the recorder is the rt__ring marker's, and the ring waits for it again;
 * without, the hook's call marker's. */
static void test_span_rings_resync_due(void)
{
	/* (nop read once: the site is const to the compiler, which may read
	 * it again where nop is used, after the poke) */
	unsigned char nop = *(const volatile unsigned char *)sp_rt_ring_site, call[1] = { 0x90 };
	bool on = sp_rt_ring_on;

	sp_rt_ring_on = true;
	sp_rt_ring_listened = -1;
	CHECK(nop != 0xcc);
	CHECK(!sp_rt_resync_due(call));		/* the thread's first mark */
	CHECK(!sp_rt_resync_due(call));
	if (!poke_site(0xcc)) {
		CHECK(!"mprotect of the marker's page");
		goto out;
	}
	CHECK(sp_rt_probed(sp_rt_ring_site));
	sp_rt_ring_cur = calloc(1, sizeof(*sp_rt_ring_cur));
	if (sp_rt_ring_cur)
		sp_rt_ring_cur->h.reader = SP_RING_LEFT;	/* an earlier reader's */
	stale_consumed = 7;
	CHECK(sp_rt_resync_due(call));		/* a recorder came */
	CHECK(sp_rt_ring_cur && sp_rt_ring_cur->h.reader == SP_RING_ASKED);
	CHECK_EQ_U(stale_consumed, UINT64_MAX);	/* a full ring waits for it */
	free(sp_rt_ring_cur);
	sp_rt_ring_cur = NULL;
	CHECK(!sp_rt_resync_due(call));
	poke_site(nop);
	CHECK(!sp_rt_resync_due(call));		/* it went */
	poke_site(0xcc);
	CHECK(sp_rt_resync_due(call));		/* another came */
	sp_rt_ring_listened = -1;
	CHECK(!sp_rt_resync_due(call));		/* a first mark with one there */
	poke_site(nop);
	sp_rt_resync_known(call);
	poke_site(0xcc);
	CHECK(sp_rt_resync_due(call));
	sp_rt_resync_known(call);		/* marked at install */
	CHECK(!sp_rt_resync_due(call));
	/* no rings: the call marker tells; rt__ring's does not */
	sp_rt_ring_on = false;
	sp_rt_ring_listened = -1;
	CHECK(!sp_rt_resync_due(call));
	call[0] = 0xcc;
	CHECK(sp_rt_resync_due(call));
	CHECK(!sp_rt_resync_due(call));
	poke_site(nop);
	call[0] = 0x90;
	CHECK(!sp_rt_resync_due(call));
	poke_site(0xcc);
	CHECK(!sp_rt_resync_due(call));
	poke_site(nop);
out:
	sp_rt_ring_on = on;
	sp_rt_ring_listened = -1;
}

/* A ring read from its start (a program sp-record started) has every
 * start: its hook's run at the claim is dropped, nothing is skipped. A
 * late ring whose hook writes no run is delivered after the wait. */
static void test_span_rings_resync_whole(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);

	py_mark(1, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	py_mark(11, SP_RING_RESYNC);
	py_mark(2, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got_in_order(2));
	CHECK_EQ_U(rs.before_run, 0);
	finish(&rs, r);

	r = start(&rs);
	sp_span_rings_release(&rs);
	sp_span_rings_init(&rs);
	py_mark(1, 0);
	rs.since = now_ns();
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	usleep((SP_SPAN_RINGS_RUN_WAIT_NS + 5000000) / 1000);
	py_mark(2, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 1);
	CHECK_EQ_U(got.line[0], 2);
	finish(&rs, r);
}

/* A ring whose thread ended without its last chunk (lost) is dropped at
 * the poll after the one that saw it end, so the watermark moves on; marks
 * that come after what was written are counted. */
static void test_span_rings_ended(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);

	mark(1);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 1);
	r->h.magic = 0;		/* as thread_end leaves it */
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(rs.n, 1);
	CHECK(sp_span_rings_watermark(&rs) < UINT64_MAX);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(rs.n, 0);
	CHECK_EQ_U(rs.unended, 1);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), UINT64_MAX);
	/* leave() writes only to rings still their threads' */
	r->h.reader = SP_RING_READING;
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false, 0, 0);
	sp_span_rings_leave(&rs);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);
	r->h.magic = SP_RING_MAGIC;
	sp_span_rings_leave(&rs);
	CHECK_EQ_U(r->h.reader, SP_RING_LEFT);
	/* marks older than what the caller has written out already: kept,
	 * counted */
	r->h.reader = SP_RING_READING;
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false, 0, 0);
	mark(2);
	rs.released = UINT64_MAX - 1;
	got.n = 0;
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 2);
	CHECK_EQ_U(rs.late, 2);
	finish(&rs, r);
}

/* What came by a poll and by a chunk is delivered once; a chunk carries
 * on where a poll stopped; the last chunk forgets the ring. */
static void test_span_rings_chunks(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	int line = 0;

	while (line < 300)
		mark(++line);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got_in_order(300));
	while (line < 600)
		mark(++line);
	/* the thread ends: BPF copies from a chunk's start, 256..383 read twice */
	CHECK_EQ_U(chunk(&rs, r, 2 * SP_RING_CHUNK, SP_RING_CHUNK, 0), 0);
	CHECK_EQ_U(chunk(&rs, r, 3 * SP_RING_CHUNK, SP_RING_CHUNK, 0), 0);
	CHECK_EQ_U(chunk(&rs, r, 4 * SP_RING_CHUNK, 600 - 4 * SP_RING_CHUNK, SP_BSF_LAST), 0);
	CHECK(got_in_order(600));
	CHECK_EQ_U(rs.dups, 300 - 2 * SP_RING_CHUNK);
	CHECK_EQ_U(rs.n, 0);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), UINT64_MAX);
	finish(&rs, r);
}

/* Chunks from an unannounced ring are taken; one after a lost one is
 * counted and delivered; nonsense is counted, not delivered. */
static void test_span_rings_overrun(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	int line = 0;

	r->h.reader = SP_RING_LEFT;	/* nobody waits: a writer far ahead */
	while (line < (int)SP_RING_CAP + 10)
		mark(++line);
	sp_span_rings_release(&rs);
	sp_span_rings_init(&rs);
	CHECK_EQ_U(chunk(&rs, r, SP_RING_HALF, SP_RING_CHUNK, 0), 0);
	CHECK_EQ_U(rs.gaps, 0);
	CHECK_EQ_U(got.n, SP_RING_CHUNK);
	CHECK_EQ_U(got.line[0], SP_RING_HALF + 1);
	CHECK_EQ_U(chunk(&rs, r, SP_RING_HALF + 2 * SP_RING_CHUNK, SP_RING_CHUNK, 0), 0);
	CHECK_EQ_U(rs.gaps, 1);
	CHECK_EQ_U(got.n, 2 * SP_RING_CHUNK);
	CHECK_EQ_U(chunk(&rs, r, SP_RING_HALF + 3 * SP_RING_CHUNK, SP_RING_CHUNK + 1, 0), 0);
	CHECK_EQ_U(rs.bad, 1);
	CHECK_EQ_U(got.n, 2 * SP_RING_CHUNK);
	finish(&rs, r);
}

/* The watermark is the oldest ring's last good read; a ring whose process
 * is gone holds it until the poll after (its exit chunk came by then). */
static void test_span_rings_watermark(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	uint64_t before;
	pid_t dead = fork();

	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0);
	mark(1);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), t_ns);
	before = t_ns;
	sp_span_rings_add(&rs, (uint32_t)dead, (uint32_t)dead, (uintptr_t)r, t_ns - 5, false, 0, 0);
	CHECK_EQ_U(rs.n, 2);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), before - 5);
	CHECK_EQ_U(poll_now(&rs), 0);	/* cannot read it: dead */
	CHECK_EQ_U(rs.n, 2);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), before - 5);
	CHECK_EQ_U(poll_now(&rs), 0);	/* dropped */
	CHECK_EQ_U(rs.n, 1);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), t_ns);
	/* a put that fails stops the poll, and says so */
	mark(2);
	mark(3);
	got.stop_at = 3;
	CHECK(poll_now(&rs) < 0);
	CHECK_EQ_U(got.n, 2);
	finish(&rs, r);
}

/* A fork child starts its thread's ring again, as its own: the parent's
 * marks are not in it. Another thread gets a ring of its own. */
static void *other_thread(void *arg)
{
	struct sp_span_rings *rs = arg;

	mark(7);
	sp_span_rings_add(rs, sp_rt_ring_cur->h.pid, sp_rt_ring_cur->h.tid,
			  (uintptr_t)sp_rt_ring_cur, t_ns, false, 0, 0);
	return sp_rt_ring_cur;
}

static void test_span_rings_fork_thread(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs), *o;
	int fd[2], status = 0;
	uint64_t child[3] = { 0 };
	pthread_t th;
	pid_t pid;

	mark(1);
	CHECK(pipe(fd) == 0);
	pid = fork();
	if (!pid) {
		uint64_t v[3];

		mark(2);
		v[0] = r->h.head;
		v[1] = r->h.pid;
		v[2] = (uint64_t)r->e[0].line;
		_exit(write(fd[1], v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	CHECK(read(fd[0], child, sizeof(child)) == sizeof(child));
	waitpid(pid, &status, 0);
	CHECK_EQ_U(child[0], 1);
	CHECK_EQ_U(child[1], (uint64_t)pid);
	CHECK_EQ_U(child[2], 2);
	CHECK_EQ_U(r->h.head, 1);
	CHECK(pthread_create(&th, NULL, other_thread, &rs) == 0);
	CHECK(pthread_join(th, (void **)&o) == 0);
	CHECK(o != r);
	/* its end flushed it and gave it up: the next thread reuses it */
	CHECK_EQ_U(o->h.magic, 0);
	CHECK_EQ_U(nspare, 1);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 1);	/* this thread's mark 1; the other's ring has ended */
	CHECK_EQ_U(got.line[0], 1);
	close(fd[0]);
	close(fd[1]);
	finish(&rs, r);
}

/* A thread is told we left its ring only while its pid names the process
 * that announced the ring (its start time then), and through a descriptor
 * of that process's memory: one whose process ended writes to nobody,
 * whoever has its pid since. */
static void test_span_rings_tell_left_start(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	int go[2], ready[2], status = -1, mem;
	uint64_t st = 0, cst = 0;
	uint32_t ctid = 0;
	char c = 0;
	pid_t pid;

	CHECK_EQ_U(sp_procfs_start((uint32_t)getpid(), &st), 0);
	CHECK(st > 0);
	r->h.reader = SP_RING_READING;
	sp_span_rings_tell_left(&rs, r->h.pid, r->h.tid, (uintptr_t)r, st + 1);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);	/* another process's start */
	sp_span_rings_tell_left(&rs, r->h.pid, r->h.tid, (uintptr_t)r, 0);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);	/* unknown: nothing written */
	sp_span_rings_tell_left(&rs, r->h.pid, r->h.tid + 1, (uintptr_t)r, st);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);	/* not that thread's ring */
	sp_span_rings_tell_left(&rs, r->h.pid, r->h.tid, (uintptr_t)r, st);
	CHECK_EQ_U(r->h.reader, SP_RING_LEFT);

	/* another process: its ring (a fork's copy, made its own) is told */
	CHECK(pipe(go) == 0 && pipe(ready) == 0);
	pid = fork();
	if (!pid) {
		mark(2);
		r->h.reader = SP_RING_READING;
		if (write(ready[1], &r->h.tid, sizeof(r->h.tid)) != sizeof(r->h.tid) ||
		    read(go[0], &c, 1) != 1)
			_exit(2);
		_exit(r->h.reader == SP_RING_LEFT ? 0 : 1);
	}
	CHECK(read(ready[0], &ctid, sizeof(ctid)) == sizeof(ctid));
	CHECK_EQ_U(sp_procfs_start((uint32_t)pid, &cst), 0);
	sp_span_rings_tell_left(&rs, (uint32_t)pid, ctid, (uintptr_t)r, cst + 1);
	sp_span_rings_tell_left(&rs, (uint32_t)pid, ctid, (uintptr_t)r, cst);
	CHECK(write(go[1], &c, 1) == 1);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* a descriptor opened for a process that ended since reaches nobody */
	pid = fork();
	if (!pid) {
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	CHECK(sp_procfs_start((uint32_t)pid, &cst) == 0);
	mem = sp_procfs_mem_open((uint32_t)pid, cst + 1);
	CHECK(mem < 0 && errno == ESRCH);
	mem = sp_procfs_mem_open((uint32_t)pid, cst);
	CHECK(mem >= 0);
	CHECK(write(go[1], &c, 1) == 1);
	waitpid(pid, &status, 0);
	CHECK(pwrite(mem, &c, 1, (off_t)(uintptr_t)r) <= 0);
	CHECK(pread(mem, &c, 1, (off_t)(uintptr_t)r) <= 0);
	if (mem >= 0)
		close(mem);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
	finish(&rs, r);
}

/* A process that ended before its ring was read, and whose pid another
 * process took, with a head at the ring's address that names the first
 * one's thread (a fork's copy here; any user's process could write it):
 * nothing of it is read as the first one's, and nothing is written to it. */
static void test_span_rings_pid_reused(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = start(&rs);
	uint32_t my_pid = r->h.pid, my_tid = r->h.tid;
	struct sp_ring_head before, after;
	struct iovec local, remote;
	int go = -1, go2 = -1;
	pid_t a, b;
	size_t i;

	mark(1);
	mark(2);
	a = child_waiting(&go);
	CHECK(a > 0);
	sp_span_rings_add(&rs, (uint32_t)a, (uint32_t)a, (uintptr_t)r, t_ns, false, 0, 0);
	/* the next fork's copy of this ring names a's thread */
	r->h.pid = r->h.tid = (uint32_t)a;
	b = end_and_reuse(a, go, &go2);
	before = r->h;
	r->h.pid = my_pid;
	r->h.tid = my_tid;
	if (b < 0) {
		finish(&rs, r);
		return;
	}
	CHECK_EQ_U(before.claim, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 2);	/* this thread's two marks, not the copy's */
	for (i = 0; i < got.n && i < 2; i++)
		CHECK_EQ_U(got.tid[i], my_tid);
	local = (struct iovec){ &after, sizeof(after) };
	remote = (struct iovec){ r, sizeof(after) };
	CHECK(process_vm_readv(b, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(after));
	/* what a reader writes: its claim, that it reads, how far */
	CHECK_EQ_U(after.claim, before.claim);
	CHECK_EQ_U(after.reader, before.reader);
	CHECK_EQ_U(after.consumed, before.consumed);
	close(go2);
	waitpid(b, NULL, 0);
	finish(&rs, r);
}

/* ---- rings that lie: made by hand, as a hostile process would ---- */

/* Stderr of what runs between quiet() and said(), which returns it. */
static int saved_err = -1, err_fd = -1;
static char err_text[8192];

static void quiet(void)
{
	fflush(stderr);
	saved_err = dup(2);
	err_fd = memfd_create("stderr", 0);
	dup2(err_fd, 2);
}

static const char *said(void)
{
	ssize_t n;

	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	n = pread(err_fd, err_text, sizeof(err_text) - 1, 0);
	err_text[n > 0 ? n : 0] = 0;
	close(err_fd);
	return err_text;
}

static size_t count_of(const char *text, const char *what)
{
	size_t n = 0;

	for (; (text = strstr(text, what)); text++)
		n++;
	return n;
}

#define RING_MAP	((sizeof(struct sp_ring) + 4095) / 4096 * 4096)

/* No descriptor of the process's memory can be had (out of descriptors:
 * none left, or one, which /proc/PID/mem takes and its start's check
 * cannot then be read), though it is there: its ring is read by pid all
 * the same, never written, counted and said once, not dropped as a
 * process gone. */
static void no_descriptor(int spare)
{
	struct sp_span_rings rs;
	struct sp_ring *r;
	struct rlimit was, low;
	uint64_t st = 0;
	long hz = sysconf(_SC_CLK_TCK);
	const char *err;
	int fd;

	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	sp_rt_ring_cur = NULL;
	r = sp_rt_ring_start();
	CHECK(r != NULL);
	mark(1);
	mark(2);
	CHECK_EQ_U(sp_procfs_start((uint32_t)getpid(), &st), 0);
	CHECK(getrlimit(RLIMIT_NOFILE, &was) == 0);
	quiet();
	fd = dup(0);
	CHECK(fd >= 0);
	close(fd);
	low = was;
	low.rlim_cur = (rlim_t)(fd + spare);
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false,
			  st * (1000000000ull / (uint64_t)hz), 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	mark(3);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(setrlimit(RLIMIT_NOFILE, &was) == 0);
	err = said();
	CHECK(got_in_order(3));
	CHECK(rs.by_number > 0);
	CHECK_EQ_U(count_of(err, "its memory cannot be opened"), 1);
	CHECK_EQ_U(r->h.consumed, 0);	/* nothing written by pid */
	CHECK_EQ_U(r->h.claim, 0);
	finish(&rs, r);
}

static void test_span_rings_no_descriptor(void)
{
	no_descriptor(0);
	no_descriptor(1);
}

/* A ring of thread tid of this process with n marks stamped in the last
 * millisecond, lines 1..n, made the way the hook lays it out. */
static struct sp_ring *fake_ring(uint32_t tid, uint64_t n)
{
	struct sp_ring *r = mmap(NULL, RING_MAP, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t k, t = now_ns() - 1000000;

	if (r == MAP_FAILED)
		return NULL;
	r->h.magic = SP_RING_MAGIC;
	r->h.pid = (uint32_t)getpid();
	r->h.tid = tid;
	r->h.reader = SP_RING_LEFT;
	for (k = 0; k < n; k++) {
		r->e[k % SP_RING_CAP].time = t + k * 10;
		r->e[k % SP_RING_CAP].line = (int)k + 1;
		r->e[k % SP_RING_CAP].probe = SP_PR_RB_HOOK_CALL;
	}
	r->h.head = n;
	return r;
}

/* Known to rs from now (its rt__ring). */
static void announce_fake(struct sp_span_rings *rs, struct sp_ring *r)
{
	sp_span_rings_add(rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false, 0, 0);
}

static uint64_t lost_pid, lost_n;

static int take(void *ctx, uint32_t pid, uint64_t n, uint64_t since)
{
	(void)ctx;
	(void)since;
	lost_pid = pid;
	lost_n += n;
	return 0;
}

/* A head that runs ahead of what a thread can write (garbage, as a
 * process scribbling on its ring leaves it): the ring is given up with
 * one warning naming the process, holds the output back no more, and no
 * wrapped number is counted lost. Announcing it again does not bring it
 * back; a new ring of the thread is read. */
static void test_span_rings_lying_head(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = fake_ring(900001, 10);
	char want[64];
	const char *err;

	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	announce_fake(&rs, r);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got_in_order(10));
	CHECK(sp_span_rings_watermark(&rs) < UINT64_MAX);
	r->h.head = 0x7ffffffffffffff0ull;
	quiet();
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	r->h.head = 11;
	CHECK_EQ_U(poll_now(&rs), 0);
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, true, 0, 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	err = said();
	snprintf(want, sizeof(want), "pid %d (", getpid());
	CHECK_EQ_U(count_of(err, want), 1);
	CHECK(strstr(err, "thread 900001") && strstr(err, "more than a thread can write"));
	CHECK(strstr(err, "given up"));
	CHECK_EQ_U(rs.given_up, 1);
	CHECK_EQ_U(got.n, 10);
	CHECK_EQ_U(rs.lost, 0);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), UINT64_MAX);
	/* the thread starts a ring again (rt__ring, not again): read */
	r->h.head = 0;
	announce_fake(&rs, r);
	r->h.head = 10;
	got.n = 0;
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got_in_order(10));
	munmap(r, RING_MAP);
	sp_span_rings_release(&rs);
}

/* A head that says there is more where the process unmapped the entries
 * (a page made PROT_NONE is still read, as a debugger reads it: the ring is
 * read through /proc/PID/mem): one more try, then given up; the marks it
 * said it had are counted lost, in the spool's per-process counts. */
static void test_span_rings_unreadable(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = fake_ring(900002, 10);
	uint64_t held;
	const char *err;

	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	announce_fake(&rs, r);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got_in_order(10));
	held = sp_span_rings_watermark(&rs);
	r->h.head += 3000;
	CHECK(munmap((char *)r + 4096, RING_MAP - 4096) == 0);
	quiet();
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(rs.given_up, 0);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), held);	/* one poll more */
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(poll_now(&rs), 0);
	err = said();
	CHECK_EQ_U(count_of(err, "given up"), 1);
	CHECK(strstr(err, "cannot be read (its entries: Bad address)") != NULL);
	CHECK_EQ_U(rs.given_up, 1);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), UINT64_MAX);
	CHECK_EQ_U(rs.lost, 3000);
	CHECK_EQ_U(rs.lost_given_up, 3000);
	lost_n = 0;
	CHECK_EQ_U(sp_span_rings_take_lost(&rs, t_ns, take, NULL), 0);
	CHECK_EQ_U(lost_pid, (uint64_t)getpid());
	CHECK_EQ_U(lost_n, 3000);
	lost_n = 0;
	CHECK_EQ_U(sp_span_rings_take_lost(&rs, t_ns, take, NULL), 0);
	CHECK_EQ_U(lost_n, 0);		/* reported once */
	munmap(r, RING_MAP);
	sp_span_rings_release(&rs);
}

/* Marks stamped ahead of now (the merge would hold them, and everything
 * after them, to the end) or before the mark they follow: the ring is
 * given up at that mark, the rest of the read counted lost. */
static void test_span_rings_stamps(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = fake_ring(900003, 10), *o = fake_ring(900004, 10);

	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	r->e[5].time = now_ns() + 3600000000000ull;
	o->e[5].time = o->e[4].time - 1;
	announce_fake(&rs, r);
	announce_fake(&rs, o);
	quiet();
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(count_of(said(), "given up"), 1);	/* once per process */
	CHECK(strstr(err_text, "ahead of now") || strstr(err_text, "before the one it follows"));
	CHECK_EQ_U(got.n, 10);		/* five of each */
	CHECK_EQ_U(rs.given_up, 2);
	CHECK_EQ_U(rs.lost, 10);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), UINT64_MAX);
	munmap(r, RING_MAP);
	munmap(o, RING_MAP);
	sp_span_rings_release(&rs);
}

/* A thread in a time namespace stamps its marks on that namespace's clock:
 * they are delivered on the kernel's (its offset from BPF, at the ring's
 * announcement and in each chunk); one whose offset says its stamps are
 * an hour ahead of now is given up. */
static void test_span_rings_clock(void)
{
	const int64_t hour = 3600000000000ll;
	struct sp_span_rings rs;
	struct sp_ring *r = fake_ring(900010, 10), *o = fake_ring(900011, 10),
		       *c = fake_ring(900012, 10);
	uint64_t want[10];
	int k;

	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	for (k = 0; k < 10; k++) {
		want[k] = r->e[k].time;
		r->e[k].time += (uint64_t)hour;
		c->e[k].time = want[k] - 60000000000ull;
	}
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false, 0, hour);
	sp_span_rings_add(&rs, o->h.pid, o->h.tid, (uintptr_t)o, t_ns, false, 0, -hour);
	quiet();
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(count_of(said(), "ahead of now"), 1);
	CHECK_EQ_U(rs.given_up, 1);
	CHECK_EQ_U(got.n, 10);
	for (k = 0; k < 10; k++) {
		CHECK_EQ_U(got.tid[k], 900010);
		CHECK_EQ_U(got.time[k], want[k]);
	}
	/* a ring never announced, copied at its thread's end */
	CHECK_EQ_U(sp_span_rings_chunk(&rs, c->h.pid, c->h.tid, (uintptr_t)c, 0, 10, SP_BSF_LAST,
				       t_ns, -60000000000ll, c->e, put, NULL), 0);
	CHECK_EQ_U(got.n, 20);
	for (k = 0; k < 10; k++)
		CHECK_EQ_U(got.time[10 + k], want[k]);
	CHECK_EQ_U(rs.given_up, 1);
	/* its thread joined another time namespace (setns()): announced
	 * again, or copied at its end, on another clock: given up (said once
	 * per process) */
	sp_span_rings_release(&rs);
	sp_span_rings_init(&rs);
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false, 0, hour);
	quiet();
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, true, 0, hour + 7);
	CHECK_EQ_U(count_of(said(), "moved to another time namespace (its clock by 7 ns)"), 1);
	CHECK_EQ_U(rs.given_up, 1);
	munmap(c, RING_MAP);
	c = fake_ring(900013, 10);
	sp_span_rings_add(&rs, c->h.pid, c->h.tid, (uintptr_t)c, t_ns, false, 0, 0);
	CHECK_EQ_U(sp_span_rings_chunk(&rs, c->h.pid, c->h.tid, (uintptr_t)c, 0, 10, SP_BSF_LAST,
				       t_ns, -3, c->e, put, NULL), 0);
	CHECK_EQ_U(rs.given_up, 2);
	CHECK_EQ_U(got.n, 20);
	munmap(r, RING_MAP);
	munmap(o, RING_MAP);
	munmap(c, RING_MAP);
	sp_span_rings_release(&rs);
}

/* Chunks (BPF's copies at a thread's end) are the ring's numbers too: one
 * that starts implausibly far on gives the ring up, counting nothing; one
 * after a gap counts the gap lost; one BPF could not read counts its
 * marks lost. */
static void test_span_rings_chunk_numbers(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r = fake_ring(900005, 300);

	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	announce_fake(&rs, r);
	CHECK_EQ_U(chunk(&rs, r, 0, 100, 0), 0);
	CHECK_EQ_U(chunk(&rs, r, 150, 50, SP_BSF_FAULT), 0);	/* 100..149 missed */
	CHECK_EQ_U(got.n, 100);
	CHECK_EQ_U(rs.lost, 100);
	CHECK_EQ_U(rs.lost_waited, 50);
	CHECK_EQ_U(rs.lost_at_end, 50);
	CHECK_EQ_U(chunk(&rs, r, 200, 50, 0), 0);
	CHECK_EQ_U(got.n, 150);
	quiet();
	CHECK_EQ_U(sp_span_rings_chunk(&rs, r->h.pid, r->h.tid, (uintptr_t)r, 1ull << 62, 10, 0,
				       t_ns, 0, r->e, put, NULL), 0);
	CHECK(strstr(said(), "copied at its thread's end"));
	CHECK_EQ_U(rs.given_up, 1);
	CHECK_EQ_U(rs.lost, 100);
	CHECK_EQ_U(got.n, 150);
	CHECK_EQ_U(chunk(&rs, r, 250, 50, SP_BSF_LAST), 0);	/* given up: not delivered */
	CHECK_EQ_U(got.n, 150);
	CHECK_EQ_U(rs.n, 0);
	munmap(r, RING_MAP);
	sp_span_rings_release(&rs);
}

/* However many rings the processes announce, sp-record knows at most
 * SP_SPAN_RINGS_PER_PROC of one process and SP_SPAN_RINGS_MAX in all (one
 * warning per process; a refused ring's last copy is still delivered); a
 * poll reads at most SP_SPAN_RINGS_POLL_ENTRIES and the rest next time. */
static void test_span_rings_bounds(void)
{
	struct sp_span_rings rs;
	struct sp_ring *r[20];
	uint32_t pid, tid;
	size_t i, polls;
	const char *err;

	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	quiet();
	for (tid = 1; tid <= SP_SPAN_RINGS_PER_PROC + 10; tid++)
		sp_span_rings_add(&rs, 7, tid, 4096ull * tid, t_ns, false, 0, 0);
	CHECK_EQ_U(rs.n, SP_SPAN_RINGS_PER_PROC);
	CHECK_EQ_U(rs.refused, 10);
	for (pid = 8; rs.n < SP_SPAN_RINGS_MAX; pid++)
		for (i = 0; i < SP_SPAN_RINGS_PER_PROC && rs.n < SP_SPAN_RINGS_MAX; i++, tid++)
			sp_span_rings_add(&rs, pid, tid, 4096ull * tid, t_ns, false, 0, 0);
	sp_span_rings_add(&rs, pid, tid, 4096ull * tid, t_ns, false, 0, 0);
	CHECK_EQ_U(rs.n, SP_SPAN_RINGS_MAX);
	CHECK_EQ_U(rs.refused, 11);
	err = said();
	CHECK_EQ_U(count_of(err, "pid 7 ("), 1);
	CHECK_EQ_U(count_of(err, "is not read"), 2);
	sp_span_rings_release(&rs);

	/* a refused ring's copy at its thread's end */
	sp_span_rings_init(&rs);
	r[0] = fake_ring(900100, 5);
	for (tid = 1; tid <= SP_SPAN_RINGS_PER_PROC; tid++)
		sp_span_rings_add(&rs, r[0]->h.pid, tid, 4096ull * tid, t_ns, false, 0, 0);
	quiet();
	announce_fake(&rs, r[0]);
	said();
	CHECK_EQ_U(rs.refused, 1);
	CHECK_EQ_U(chunk(&rs, r[0], 0, 5, SP_BSF_LAST), 0);
	CHECK(got_in_order(5));
	munmap(r[0], RING_MAP);
	sp_span_rings_release(&rs);

	/* twenty full rings: more than a poll reads */
	sp_span_rings_init(&rs);
	memset(&got, 0, sizeof(got));
	for (i = 0; i < 20; i++) {
		r[i] = fake_ring(900200 + (uint32_t)i, SP_RING_CAP);
		announce_fake(&rs, r[i]);
	}
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK(got.n <= SP_SPAN_RINGS_POLL_ENTRIES);
	CHECK(sp_span_rings_watermark(&rs) < t_ns);	/* some wait for the next */
	for (polls = 1; got.n < 20 * SP_RING_CAP && polls < 20; polls++)
		CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, 20 * SP_RING_CAP);
	CHECK_EQ_U(sp_span_rings_watermark(&rs), t_ns);
	CHECK_EQ_U(rs.lost, 0);
	for (i = 0; i < 20; i++)
		munmap(r[i], RING_MAP);
	sp_span_rings_release(&rs);
}

static size_t got_a, got_b;

static int put_count(void *ctx, uint32_t pid, uint32_t tid, const struct sp_ring_entry *e)
{
	(void)pid;
	(void)tid;
	(void)e;
	++*(size_t *)ctx;
	return 0;
}

/* A process that waits on a pipe until it is closed: another reader. */
static pid_t other_reader(int *fd)
{
	char c;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (!pid) {
		close(fd[1]);
		_exit(read(fd[0], &c, 1) < 0);
	}
	close(fd[0]);
	return pid;
}

/*
 * Two sp-records on one process: the first to claim a ring owns it (it
 * tells the thread how far it read); the second reads beside it without a
 * word to the thread, says so once, and counts what the thread overwrote
 * before it read it, exactly; when the owner leaves, the second takes the
 * ring over. A claim of a reader that is gone is taken over at once.
 */
static void test_span_rings_two_readers(void)
{
	struct sp_span_rings a, b;
	struct sp_ring *r = start(&a);
	uint64_t consumed;
	int fd[2], line = 0;
	pid_t other = other_reader(fd);
	char want[64];

	CHECK(other > 0);
	sp_span_rings_init(&b);
	b.claim = sp_span_rings_claim_of((uint32_t)other);
	CHECK(b.claim != 0 && b.claim != a.claim);
	sp_span_rings_add(&b, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false, 0, 0);
	got_a = got_b = 0;
	while (line < 10)
		mark(++line);
	t_ns += 2000000;
	CHECK_EQ_U(sp_span_rings_poll(&a, t_ns, put_count, &got_a), 0);
	CHECK_EQ_U(r->h.claim, a.claim);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);
	CHECK_EQ_U(r->h.consumed, 10);
	mark(++line);
	quiet();
	CHECK_EQ_U(sp_span_rings_poll(&b, t_ns, put_count, &got_b), 0);
	CHECK_EQ_U(sp_span_rings_poll(&b, t_ns + 2000000, put_count, &got_b), 0);
	snprintf(want, sizeof(want), "pid %d (", getpid());
	CHECK_EQ_U(count_of(said(), want), 1);
	CHECK(strstr(err_text, "read by another sp-record"));
	CHECK_EQ_U(b.shared, 1);
	CHECK_EQ_U(got_b, 11);
	CHECK_EQ_U(r->h.consumed, 10);	/* b never writes */
	CHECK_EQ_U(r->h.claim, a.claim);
	/* the owner keeps up, b falls two rings behind */
	while (line < 11 + 2 * (int)SP_RING_CAP) {
		mark(++line);
		if (line % 1000 == 0) {
			t_ns += 2000000;
			CHECK_EQ_U(sp_span_rings_poll(&a, t_ns, put_count, &got_a), 0);
		}
	}
	t_ns += 2000000;
	CHECK_EQ_U(sp_span_rings_poll(&a, t_ns, put_count, &got_a), 0);
	CHECK_EQ_U(got_a, (size_t)line);
	CHECK_EQ_U(a.lost, 0);
	CHECK_EQ_U(naps, 0);	/* the thread never waited for b */
	CHECK_EQ_U(sp_span_rings_poll(&b, t_ns, put_count, &got_b), 0);
	CHECK_EQ_U(got_b + b.lost_shared, (size_t)line);
	CHECK_EQ_U(b.lost, b.lost_shared);
	CHECK(b.lost_shared > SP_RING_CAP);
	/* a leaves: b owns the ring from its next read */
	consumed = r->h.consumed;
	sp_span_rings_leave(&a);
	CHECK_EQ_U(r->h.reader, SP_RING_LEFT);
	CHECK_EQ_U(r->h.claim, 0);
	mark(++line);
	t_ns += 2000000;
	CHECK_EQ_U(sp_span_rings_poll(&b, t_ns, put_count, &got_b), 0);
	CHECK_EQ_U(r->h.claim, b.claim);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);
	CHECK_EQ_U(r->h.consumed, consumed + 1);
	CHECK_EQ_U(got_b + b.lost_shared, (size_t)line);
	/* b's claim holds while its process runs: a only reads */
	mark(++line);
	t_ns += 2000000;
	quiet();
	CHECK_EQ_U(sp_span_rings_poll(&a, t_ns, put_count, &got_a), 0);
	CHECK(strstr(said(), "read by another sp-record"));
	CHECK_EQ_U(r->h.claim, b.claim);
	CHECK_EQ_U(r->h.consumed, consumed + 1);
	/* b's process is gone: a takes the ring over */
	close(fd[1]);
	waitpid(other, NULL, 0);
	memset(a.claims, 0, sizeof(a.claims));	/* believed for a second: forget */
	mark(++line);
	t_ns += 2000000;
	CHECK_EQ_U(sp_span_rings_poll(&a, t_ns, put_count, &got_a), 0);
	CHECK_EQ_U(r->h.claim, a.claim);
	CHECK_EQ_U(r->h.consumed, (uint64_t)line);
	sp_span_rings_release(&b);
	sp_rt_ring_cur->h.reader = SP_RING_LEFT;
	finish(&a, r);
}

/* A process names itself: its name in a message has no control bytes,
 * escaped once, by the message (not \x5cx1b: escaped twice). */
static void test_span_rings_comm(void)
{
	char name[16] = "", out[80], said[256];
	struct stderr_capture cap;

	prctl(PR_GET_NAME, name);
	prctl(PR_SET_NAME, "a\x1b[2J\nb\\\xff");
	sp_span_rings_comm((uint32_t)getpid(), out, sizeof(out));
	CHECK_STR(out, "a\x1b[2J\nb\\\xff");
	stderr_capture_begin(&cap);
	sp_warn("pid 1 (%s): x", out);
	stderr_capture_end(&cap, said, sizeof(said));
	CHECK(strstr(said, "(a\\x1b[2J\\x0ab\\\\xff): x\n") != NULL);
	prctl(PR_SET_NAME, name);
	sp_span_rings_comm(0x3fffff, out, sizeof(out));
	CHECK_STR(out, "gone");
}

/*
 * A full ring waits longer for the sp-record that owns it while it runs,
 * but never without bound, and not at all for one that cannot read: a
 * stopped (Ctrl-Z, a debugger) or zombie owner is not running.
 */
static void test_span_rings_owner_wait(void)
{
	struct sp_ring r = { 0 };
	uint64_t claim;
	siginfo_t si;
	pid_t child;

	r.h.claim = sp_span_rings_claim_of((uint32_t)getpid());
	CHECK(claim_runs(r.h.claim));
	CHECK_EQ_U(wait_bound(&r, SP_RING_READING), SP_RT_RING_OWNER_WAIT_NS);
	CHECK(SP_RT_RING_OWNER_WAIT_NS < UINT64_MAX / 2);
	r.h.claim ^= 1ull << 40;	/* another start time: a reused pid */
	CHECK(!claim_runs(r.h.claim));
	CHECK_EQ_U(wait_bound(&r, SP_RING_READING), SP_RT_RING_WAIT_NS);

	child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	CHECK(child > 0);
	if (child <= 0)
		return;
	claim = sp_span_rings_claim_of((uint32_t)child);
	CHECK(claim_runs(claim));
	kill(child, SIGSTOP);
	CHECK(!waitid(P_PID, (id_t)child, &si, WSTOPPED));
	CHECK(!claim_runs(claim));	/* stopped: reads nothing */
	kill(child, SIGCONT);
	CHECK(!waitid(P_PID, (id_t)child, &si, WCONTINUED));
	CHECK(claim_runs(claim));
	kill(child, SIGKILL);
	CHECK(!waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT));
	CHECK(!claim_runs(claim));	/* a zombie, not reaped yet */
	waitpid(child, NULL, 0);
	CHECK(!claim_runs(claim));
}

/* In a child, a time namespace whose boot clock is shifted by offsets
 * (timens_offsets' text): 0 when the hook there takes the claim (of this
 * process, made here) for a running reader's, 1 when not, 2 when the
 * namespace could not be made. */
static int claim_in_timens(uint64_t claim, const char *offsets)
{
	pid_t pid = fork(), kid;
	int status;

	if (pid < 0)
		return 2;
	if (pid == 0) {
		if (!timens_make(offsets, strlen(offsets)))
			_exit(2);
		kid = fork();	/* it reads its offset anew (after_fork_child) */
		if (kid == 0)
			_exit(claim_runs(claim) ? 0 : 1);
		_exit(kid > 0 && waitpid(kid, &status, 0) == kid && WIFEXITED(status) ?
		      WEXITSTATUS(status) : 2);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 2;
	return WEXITSTATUS(status);
}

/* A hook in a time namespace whose boot clock is shifted reads the
 * reader's start from /proc on that clock: the claim (the kernel's
 * clock) is still the running reader's, also when the offset is no whole
 * number of clock ticks (it rounds the start either way); another start
 * is not. */
static void test_span_rings_claim_timens(void)
{
	uint64_t claim = sp_span_rings_claim_of((uint32_t)getpid());

	CHECK_EQ_U(claim_in_timens(claim, "boottime 3600 0\n"), 0);
	CHECK_EQ_U(claim_in_timens(claim, "boottime -1 995000000\n"), 0);
	CHECK_EQ_U(claim_in_timens(claim, "boottime 7 5000000\n"), 0);
	CHECK_EQ_U(claim_in_timens(claim ^ (1ull << 40), "boottime 3600 0\n"), 1);
}

int main(void)
{
	setenv("STACKPULSE_SPAN_RING", "1", 1);
	sp_rt_ring_init();
	if (!sp_rt_ring_on) {
		printf("not ok 1 - sp_rt_ring_init did not turn the rings on\n");
		return 1;
	}
	TAP_RUN(test_span_rings_poll);
	TAP_RUN(test_span_rings_wait);
	TAP_RUN(test_span_rings_chunks);
	TAP_RUN(test_span_rings_late);
	TAP_RUN(test_span_rings_resync_rule);
	TAP_RUN(test_span_rings_resync_late);
	TAP_RUN(test_span_rings_resync_whole);
	TAP_RUN(test_span_rings_resync_ruby);
	TAP_RUN(test_span_rings_no_runs);
	TAP_RUN(test_span_rings_resync_due);
	TAP_RUN(test_span_rings_ended);
	TAP_RUN(test_span_rings_overrun);
	TAP_RUN(test_span_rings_watermark);
	TAP_RUN(test_span_rings_fork_thread);
	TAP_RUN(test_span_rings_lying_head);
	TAP_RUN(test_span_rings_unreadable);
	TAP_RUN(test_span_rings_stamps);
	TAP_RUN(test_span_rings_clock);
	TAP_RUN(test_span_rings_chunk_numbers);
	TAP_RUN(test_span_rings_bounds);
	TAP_RUN(test_span_rings_two_readers);
	TAP_RUN(test_span_rings_comm);
	TAP_RUN(test_span_rings_owner_wait);
	TAP_RUN(test_span_rings_tell_left_start);
	if (timens_possible())
		TAP_RUN(test_span_rings_claim_timens);
	else
		TAP_SKIP(test_span_rings_claim_timens, "no time namespace here (needs root and CONFIG_TIME_NS)");
	if (pid_reuse_possible())
		TAP_RUN(test_span_rings_pid_reused);
	else
		TAP_SKIP(test_span_rings_pid_reused, "needs root (ns_last_pid)");
	TAP_RUN(test_span_rings_no_descriptor);
	return TAP_DONE();
}
