// SPDX-License-Identifier: MIT
/*
 * Unit tests of the span rings: the hooks' writer (runtime/hook/ring.c,
 * compiled into the hook extensions, not into the library: included here)
 * and sp-record's reader (lib/record/span_rings.c), which reads this process's own
 * rings with process_vm_readv (and writes back with process_vm_writev) as
 * it does a traced process's. What BPF would copy at a thread's end is
 * handed over as chunks by hand.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/hook/ring.c"
#include "record/span_rings.h"
#include "tap.h"

/* What the reader delivered: the entries' lines, in order. */
static struct {
	int line[4 * SP_RING_CAP];
	uint32_t tid[4 * SP_RING_CAP];
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
	return sp_span_rings_chunk(rs, r->h.pid, r->h.tid, (uintptr_t)r, first, n, flags, 1,
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
	sp_span_rings_add(rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false);
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
	sp_span_rings_wake(&rs, 0, 0, 0, 0);
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
 * next wake and read from what it still holds; that is not counted lost. */
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
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns);
	CHECK_EQ_U(rs.n, 1);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, SP_RING_CAP);
	CHECK_EQ_U(got.line[0], 501);
	CHECK_EQ_U(rs.lost, 0);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);
	/* the same ring woken, announced again: nothing starts over */
	sp_span_rings_wake(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns);
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, true);
	mark(++line);
	CHECK_EQ_U(poll_now(&rs), 0);
	CHECK_EQ_U(got.n, SP_RING_CAP + 1);
	CHECK_EQ_U(rs.dups, 0);
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
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false);
	sp_span_rings_leave(&rs);
	CHECK_EQ_U(r->h.reader, SP_RING_READING);
	r->h.magic = SP_RING_MAGIC;
	sp_span_rings_leave(&rs);
	CHECK_EQ_U(r->h.reader, SP_RING_LEFT);
	/* marks older than what the caller has written out already: kept,
	 * counted */
	r->h.reader = SP_RING_READING;
	sp_span_rings_add(&rs, r->h.pid, r->h.tid, (uintptr_t)r, t_ns, false);
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
	sp_span_rings_add(&rs, (uint32_t)dead, (uint32_t)dead, (uintptr_t)r, t_ns - 5, false);
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
			  (uintptr_t)sp_rt_ring_cur, t_ns, false);
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
	TAP_RUN(test_span_rings_ended);
	TAP_RUN(test_span_rings_overrun);
	TAP_RUN(test_span_rings_watermark);
	TAP_RUN(test_span_rings_fork_thread);
	return TAP_DONE();
}
