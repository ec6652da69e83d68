/* SPDX-License-Identifier: MIT */
/*
 * span_rings.h - sp-record's side of the runtime hooks' span rings
 * (struct sp_ring, bpf/spans.h): which rings there are, what of each has
 * been delivered, reading them from the processes' memory.
 *
 * A ring's entries reach sp-record two ways: sp_span_rings_poll() reads
 * them from the process's memory and writes back how far it has read (the
 * thread waits for room when its ring is full); at the thread's end, exec
 * or exit, BPF copies what is unread into SP_BS_CHUNK records. Entries are
 * numbered; each is delivered once, in order per ring, whichever way comes
 * first.
 *
 * A ring is memory of the traced process, which may write anything there
 * at any moment: every number read from it is checked (docs/spans.md, "What
 * a ring may say"). A ring that cannot be read, or that says what its
 * thread cannot have written (a head that runs ahead faster than a thread
 * writes, marks stamped in the future or out of order), is given up: one
 * warning naming the process, no more reads, and it no longer holds the
 * output back. Memory and work are bounded whatever the rings say (the
 * SP_SPAN_RINGS_* bounds below).
 *
 * One sp-record owns a ring (its claim in the ring's head): it alone tells
 * the thread how far it has read. A second sp-record on the same process
 * reads beside it without writing and counts the marks the thread
 * overwrote before it could read them.
 */
#ifndef SP_SPAN_RINGS_H
#define SP_SPAN_RINGS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "spans.h"

/* Rings known at once, in all and per process: beyond, a thread's ring is
 * not read (one warning naming the process). */
#define SP_SPAN_RINGS_MAX		16384u
#define SP_SPAN_RINGS_PER_PROC		4096u
/* What one poll reads at most (entries, time): the rings it did not come
 * to are read first by the next. */
#define SP_SPAN_RINGS_POLL_ENTRIES	(16u * SP_RING_CAP)
#define SP_SPAN_RINGS_POLL_NS		20000000ull
/* A thread writes at most a mark per this many ns (a clock read and a few
 * stores take more): a ring whose head runs ahead faster lies. */
#define SP_SPAN_RINGS_MARK_NS		10u
/* Processes warned about by name: beyond, counted only. */
#define SP_SPAN_RINGS_WARNED_MAX	1024u

/* One entry of thread tid of process pid, in order. Nonzero stops. */
typedef int (*sp_span_ring_put_fn)(void *ctx, uint32_t pid, uint32_t tid,
				   const struct sp_ring_entry *e);

struct sp_span_ring;

struct sp_span_rings {
	struct sp_span_ring **r;
	size_t n, cap;
	size_t cursor;			/* the ring the next poll reads first */
	struct sp_u64map by_tid;	/* tid -> index + 1 */
	struct sp_u64map per_pid;	/* pid -> rings known */
	struct sp_u64map warned;	/* pids warned about */
	struct sp_u64map lost_by_pid;	/* pid -> marks lost, not reported yet */
	struct sp_u64map mem_fd;	/* pid -> its /proc/PID/mem descriptor + 1,
					 * opened when its first ring was announced */
	struct sp_u64map mem_start;	/* pid -> the start that descriptor was checked
					 * against */
	unsigned int mem_fds_most;	/* processes whose descriptor is kept */
	struct {
		uint64_t claim, at;	/* a foreign claim checked at 'at' */
		bool alive;
	} claims[8];
	struct sp_ring_entry *buf;	/* SP_RING_CAP entries read by a poll */
	uint64_t claim;			/* ours: SP_RING_CLAIM(pid, start) */
	uint64_t polled_ns;		/* the last poll */
	uint64_t lost_since;		/* the last sp_span_rings_take_lost() */
	uint64_t since;			/* marks before this time (before the recording,
					 * in an attached process's ring) are skipped */
	uint64_t released;		/* the caller's output is written up to here:
					 * older marks (of a ring found late) are
					 * counted in late */
	/* what went wrong, for the statistics */
	uint64_t dups;			/* entries delivered both ways: dropped once */
	uint64_t gaps;			/* chunks after a missing one */
	uint64_t lost;			/* marks lost, all of them in lost_by_pid: */
	uint64_t lost_waited;		/* overwritten before they were read (the
					 * thread gave up waiting for us) */
	uint64_t lost_shared;		/* overwritten or read by the owner before we
					 * read them, in rings another sp-record owns */
	uint64_t lost_given_up;		/* unread in rings given up */
	uint64_t lost_at_end;		/* not readable by BPF at their thread's end */
	uint64_t reading;		/* rings told they are read */
	uint64_t shared;		/* rings another sp-record owned */
	uint64_t given_up;		/* rings that lied or could not be read */
	uint64_t refused;		/* rings beyond SP_SPAN_RINGS_MAX/_PER_PROC */
	uint64_t late;			/* marks older than released (out of order) */
	uint64_t unended;		/* rings whose last chunk never came */
	uint64_t faults;		/* rings BPF could not read at an exit */
	uint64_t bad;			/* entries or rings that make no sense */
	uint64_t by_number;		/* reads and writes of rings whose image no
					 * descriptor could be had of (out of
					 * descriptors): read by pid, not written */
	uint64_t before_run;		/* marks skipped in rings found with marks from
					 * before the recording, until their hook's run
					 * of open frames (sp_span_rings_resync()) */
};

/*
 * A ring found with a hook's marks from before the recording: its thread's
 * outer frames started unseen, and their stops would come without a start.
 * The Python and Ruby hooks write, at the thread's first mark after a
 * recorder's probes came (runtime/hook/ring.h: sp_rt_resync_due()), a
 * run of starts of the frames open then, outermost first, flagged
 * SP_RING_RESYNC. Such a ring is delivered from that run on (the few marks
 * between the recording's start and the run are skipped, so that each open
 * frame has one start); a run that does not come is waited for this long
 * after our claim, then the ring is delivered as it is. A ring whose hook
 * writes no run (no SP_RING_F_RUNS in its head: an older hook) is
 * delivered whole at once: nothing is skipped, the stops of its open
 * frames find no start and are counted. In a ring read from its start
 * the run repeats starts already delivered: dropped. 'since' must come
 * before the probes go on.
 */
#define SP_SPAN_RINGS_RUN_WAIT_NS	20000000ull
enum sp_span_rings_resync {
	SP_RESYNC_DELIVER,	/* an ordinary mark: delivered */
	SP_RESYNC_SKIP,		/* before the awaited run: skipped, counted */
	SP_RESYNC_RUN,		/* of the run: delivered, without the flag */
	SP_RESYNC_DROP,		/* a run not awaited: dropped */
};
enum sp_span_rings_resync sp_span_rings_resync(bool want_run, bool in_run, uint64_t claimed_ns,
					       const struct sp_ring_entry *m);
/* Whether an entry's probe is a runtime hook's, Python's or Ruby's (whose
 * rings have runs). */
bool sp_span_rings_hook(uint32_t probe);

/* Our claim is this process's (pid and start time). */
void sp_span_rings_init(struct sp_span_rings *rs);
void sp_span_rings_release(struct sp_span_rings *rs);

/* The claim of process pid as a ring's owner (SP_RING_CLAIM), 0 if it
 * cannot be read. */
uint64_t sp_span_rings_claim_of(uint32_t pid);

/* Tell the thread tid of the ring at addr in process pid not to wait for
 * us, as we will not read it (its hook waits while we run otherwise:
 * runtime/hook/ring.h): only when the ring is still that thread's, and
 * nobody's or ours, and pid still names the process that started at
 * start_ticks (/proc/PID/stat field 22, as read when the ring was
 * announced; 0: nothing is written). The head is read and written through
 * one /proc/PID/mem descriptor (sp_procfs_mem_open), so a pid reused
 * between the two gets nothing. */
void sp_span_rings_tell_left(const struct sp_span_rings *rs, uint32_t pid, uint32_t tid,
			     uint64_t addr, uint64_t start_ticks);

/* The name of process pid for a message (its comm, which it chooses), as
 * it is: sp_warn() and sp_info() escape every message (error.c), so it is
 * not escaped here too (it came out \x5cx1b); "gone". */
void sp_span_rings_comm(uint32_t pid, char *out, size_t size);

/* Thread tid of pid announced its ring at addr at time (its rt__ring):
 * a new ring, or one started again (a fork child's, a new thread's); or,
 * again, a ring it has had for a while (known from then on, if it was not:
 * an attached process's). start_ns: the announcing process's start, ns
 * after boot (task start_boottime, read by BPF at the announcement), which
 * its ring's reads and writes are bound to; 0: unknown, read from /proc
 * now (its pid may name a later process by then). clock_ns: the
 * CLOCK_MONOTONIC offset of the announcing thread's time namespace (its
 * stamps are the kernel's clock plus it; 0 in the host's). */
void sp_span_rings_add(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
		       uint64_t time, bool again, uint64_t start_ns, int64_t clock_ns);

/*
 * An SP_BS_CHUNK record: n entries numbered from first of the ring at addr
 * of tid, copied at time; flags SP_BSF_LAST (the ring is gone after them)
 * or SP_BSF_FAULT (BPF could not read them); clock_ns as for
 * sp_span_rings_add(), of the thread then.
 */
int sp_span_rings_chunk(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t first, uint32_t n, uint32_t flags, uint64_t time, int64_t clock_ns,
			const struct sp_ring_entry *e, sp_span_ring_put_fn put, void *ctx);

/*
 * Read each ring from its process's memory (through the memory descriptor
 * of the image that announced it), tell the thread how far (the same way,
 * when the ring is ours) and deliver
 * what is new; at most once per millisecond unless woken, at most
 * SP_SPAN_RINGS_POLL_ENTRIES entries and about SP_SPAN_RINGS_POLL_NS. A
 * ring whose process cannot be read any more is dropped at the next poll:
 * what BPF copied at its end has been read by then.
 */
int sp_span_rings_poll(struct sp_span_rings *rs, uint64_t now, sp_span_ring_put_fn put,
		       void *ctx);

/* A thread's ring at addr is half unread (SP_BS_RING_WAKE): the next poll
 * reads. A ring not known yet (announced before the recording: an attached
 * process) is read from what it still holds on; clock_ns as for
 * sp_span_rings_add(). */
void sp_span_rings_wake(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t time, int64_t clock_ns);

/* The recording ends: tell every ring's thread not to wait any more for
 * us, and give up our claims. */
void sp_span_rings_leave(struct sp_span_rings *rs);

/* Every entry stamped before this has been delivered, or will never be
 * (UINT64_MAX without rings). Rings given up do not count. */
uint64_t sp_span_rings_watermark(const struct sp_span_rings *rs);

/* Hand the marks lost since the last call to fn, per process (for the
 * spool's lost records, which cover [lost_since, now]), and forget them.
 * Nonzero from fn stops and is returned. */
int sp_span_rings_take_lost(struct sp_span_rings *rs, uint64_t now,
			    int (*fn)(void *ctx, uint32_t pid, uint64_t n, uint64_t since),
			    void *ctx);

#endif
