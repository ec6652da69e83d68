/* SPDX-License-Identifier: MIT */
/*
 * ring.h - a runtime hook's span ring (struct sp_ring, bpf/spans.h): the
 * span marks of a thread written to memory, for sp-record to collect,
 * instead of one marker (a system call into the uprobe trampoline, about
 * half a microsecond) per mark. A mark costs a clock read and a store.
 *
 * sp-record asks for it with STACKPULSE_SPAN_RING=1 in the environment of
 * the commands it starts, and always attaches the markers rt__ring and
 * rt__flush beside the span markers. Without it (a process attached with
 * -p, or Ruby C-method spans, which come from the interpreter's probes and
 * must interleave with the hook's), each mark is a marker as before.
 *
 * Each thread gets its ring at its first mark (rt__ring announces it, and
 * again every second it is used, for an sp-record attached later); the
 * thread alone writes entries, so no atomics but the release of 'head'.
 * sp-record reads them and writes back how far it has read (one sp-record
 * owns a ring: its claim in the head, which the thread zeroes when it
 * starts the ring; a second one reads without writing); when half the
 * ring is unread, rt__flush wakes it, and when the ring is full the thread
 * waits for it (nothing is lost; a reader gone quiet is waited for once,
 * for SP_RT_RING_WAIT_NS). At the end of a thread (its key's destructor)
 * rt__flush has BPF copy the rest and the ring is kept for the next
 * thread; at a process's exit, exec or death BPF copies what is unread. A
 * fork child starts its thread's ring afresh.
 */
#ifndef SP_RT_RING_H
#define SP_RT_RING_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "../../bpf/spans.h"

/* Set by sp_rt_ring_init() from the environment. */
extern bool sp_rt_ring_on;

/* The running thread's ring, NULL until its first mark (or after a fork,
 * for the child's other threads, which do not exist there). */
extern __thread struct sp_ring *sp_rt_ring_cur;

/* Read the environment, register the fork handler: once, at load. */
void sp_rt_ring_init(void);

/* The running thread's ring, made and announced now; NULL when out of
 * memory (the caller fires a marker instead). */
struct sp_ring *sp_rt_ring_start(void);

/* How long a full ring waits for sp-record before it stops waiting: one
 * sp-record reads, one it has not come to yet. The second is as long as
 * the first: fork and exec children of a recorded program are no longer
 * held until sp-record has seen them, so a child's first ring often fills
 * while sp-record is still busy with its first samples (a first DWARF
 * unwind of a large library takes a few hundred ms on a loaded machine);
 * a shorter wait lost the child's first marks. A recorder that never comes
 * costs each thread this wait once. */
#define SP_RT_RING_WAIT_NS	200000000ull
#define SP_RT_RING_ASKED_WAIT_NS	200000000ull

/* These bounds are for a reader not known to run. A ring whose owner (its
 * claim) runs waits for it longer, up to SP_RT_RING_OWNER_WAIT_NS without
 * progress: a loaded machine kept sp-record off a CPU longer than 200 ms,
 * and the first marks of a command recorded with --spans named were
 * overwritten; an owner that runs and reads nothing (blocked writing its
 * output) must still not stop the program for good. Until the first read, the
 * sp-record that started the process (STACKPULSE_SPAN_READER, set with
 * --spans named, which fails before the command runs when the spans cannot
 * be read) is waited for while it runs, up to this: a process of its
 * environment that it does not track would wait for it in vain. */
#define SP_RT_RING_STARTER_WAIT_NS	10000000000ull
#define SP_RT_RING_OWNER_WAIT_NS	2000000000ull

/* Half of r is unread: wake sp-record (rt__flush); and wait while r is
 * full and sp-record reads it. */
void sp_rt_ring_slow(struct sp_ring *r, uint64_t h);

/* A ring is announced again (rt__ring) every SP_RT_RING_ANNOUNCE_NS it is
 * written: an sp-record that attaches to the process later finds it; one
 * that no sp-record claims (none reads it: its process was found late, or
 * not yet) every SP_RT_RING_UNCLAIMED_NS, so that a recorder that comes
 * finds it at once (a marker hit each 10 ms, a nop when none listens). */
#define SP_RT_RING_ANNOUNCE_NS	1000000000ull
#define SP_RT_RING_UNCLAIMED_NS	10000000ull
void sp_rt_ring_announce(struct sp_ring *r, uint64_t now);

/*
 * Whether a uprobe is on the marker at site (a label of SP_RT_MARK_AT): its
 * nop is a breakpoint, 0xcc, while one is. sp-record attaches the hook's
 * markers (rt__ring among them) to every process that maps the hook, at
 * once: a recorder listens. One load.
 */
static inline bool sp_rt_probed(const void *site)
{
	return *(const volatile unsigned char *)site == 0xcc;
}
extern const unsigned char sp_rt_ring_site[];	/* the rt__ring marker's */

/*
 * Whether a recorder listened at the running thread's last mark (-1: no
 * mark yet; its first mark starts the count).
 */
extern __thread int sp_rt_ring_listened;

/*
 * Called at each mark of a hook, before the mark: true at the thread's
 * first mark after a recorder came (sp-record -p of this running program),
 * when the hook writes the frames open now as starts flagged reconstructed
 * (SP_RT_LINE_SYNTHETIC), outermost first, leaving out the frame whose
 * call is being marked (its own start follows). A thread's first mark
 * writes none: it started no frame unseen.
 *
 * With span rings the recorder is the rt__ring marker's (the run's entries
 * are flagged SP_RING_RESYNC too: sp-record keeps such a run only in a
 * ring it did not read from its start, lib/record/span_rings.h, and the
 * ring waits for it again, sp_rt_ring_came()). Without, each mark is a
 * marker, and the recorder is the one on the hook's call marker, at
 * call_site: the run's starts are markers it gets, before any call it
 * gets of this thread, so none repeats a start it has.
 */
void sp_rt_ring_came(void);
static inline bool sp_rt_resync_due(const void *call_site)
{
	int on = sp_rt_probed(sp_rt_ring_on ? (const void *)sp_rt_ring_site : call_site);
	int was = sp_rt_ring_listened;

	if (__builtin_expect(on == was, 1))
		return false;
	sp_rt_ring_listened = on;
	if (!on || was != 0)
		return false;
	if (sp_rt_ring_on)
		sp_rt_ring_came();
	return true;
}

/* The running thread's open frames were marked (at the hook's install): a
 * recorder that listens now has their starts. */
static inline void sp_rt_resync_known(const void *call_site)
{
	sp_rt_ring_listened = sp_rt_probed(sp_rt_ring_on ? (const void *)sp_rt_ring_site :
					    call_site);
}

/*
 * Put one mark of the probe (enum sp_bs_probe) with its marker's operands
 * into the running thread's ring. False when there is no ring (the caller
 * fires the marker itself).
 */
static inline bool sp_rt_ring_put(uint32_t probe, const void *a, const void *b,
				  const void *c, int line)
{
	struct sp_ring *r = sp_rt_ring_cur;
	struct sp_ring_entry *e;
	struct timespec ts;
	uint64_t h;

	if (__builtin_expect(!r, 0) && !(r = sp_rt_ring_start()))
		return false;
	h = r->h.head;
	/* sp-record writes 'consumed' (a plain load: it only grows) */
	if (__builtin_expect(h - r->h.notified >= SP_RING_HALF, 0))
		sp_rt_ring_slow(r, h);
	e = &r->e[h % SP_RING_CAP];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	e->time = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	e->arg[0] = (uintptr_t)a;
	e->arg[1] = (uintptr_t)b;
	e->arg[2] = (uintptr_t)c;
	e->line = line;
	e->probe = probe;
	/* the entry is whole before sp-record can see it counted */
	__atomic_store_n(&r->h.head, h + 1, __ATOMIC_RELEASE);
	if (__builtin_expect(e->time - r->h.announced > (r->h.claim ? SP_RT_RING_ANNOUNCE_NS :
							    SP_RT_RING_UNCLAIMED_NS), 0))
		sp_rt_ring_announce(r, e->time);
	return true;
}

#endif
