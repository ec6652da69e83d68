// SPDX-License-Identifier: MIT
/*
 * span_rings.c - the runtime hooks' span rings, read and de-duplicated
 * for sp-record (span_rings.h). A ring is the traced process's memory:
 * every number in it is checked before it is used, and a ring that lies
 * is given up.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "procfs.h"
#include "sp.h"
#include "span_rings.h"

#define POLL_EVERY_NS		1000000ull
#define CLAIM_CHECK_NS		1000000000ull	/* a foreign claim believed this long */
#define CLAIM_CHECKS_PER_POLL	64		/* /proc reads for claims, at most */
#define GONE_CHECK_NS		1000000000ull	/* a given-up ring's process looked for */

/* What rs->warned holds per pid: what it was told about already. */
#define WARNED_LIED	1u
#define WARNED_SHARED	2u
#define WARNED_REFUSED	4u

struct sp_span_ring {
	uint32_t pid, tid;
	uint64_t addr;
	uint64_t next;		/* number of the next entry to deliver */
	uint64_t good_ns;	/* entries stamped before were delivered */
	uint64_t last_ns;	/* the stamp of the last entry delivered */
	uint64_t seen, seen_ns;	/* its head when we last looked, and when: it
				 * grows by a mark per SP_SPAN_RINGS_MARK_NS at most */
	uint64_t consumed;	/* its 'consumed' then (another owner's) */
	unsigned int fails;	/* looks in a row that could not read it */
	bool dead;		/* its process is gone: drop next time */
	bool ended;		/* its thread's end was seen in its head, but not
				 * its last chunk (lost): drop next time */
	bool late;		/* not read yet: start where its thread says */
	bool shared;		/* another sp-record owns it: read, never written */
	bool given_up;		/* it lied or cannot be read: left alone */
	bool delivered;		/* an entry of it was delivered */
	bool unseen;		/* first read past its start: marks we never saw */
	bool want_run;		/* found with hook marks from before the recording:
				 * its hook's run of open frames (SP_RING_RESYNC) is
				 * awaited, the marks before it skipped */
	bool in_run;		/* delivering that run */
	bool runs;		/* its hook writes runs (SP_RING_F_RUNS): an older
				 * one's ring has none to wait for */
	uint64_t claimed_ns;	/* when we claimed it, 0: never */
	uint64_t start_ticks;	/* its process's start when it was announced (0:
				 * gone already): what is written goes there only */
	int64_t clock_ns;	/* its stamps' clock less the kernel's: its time
				 * namespace's CLOCK_MONOTONIC offset */
};

static unsigned int claim_checks;	/* this poll's */

#define SP_SPAN_RINGS_MEM_FDS	65536u	/* processes whose descriptor is kept, at most */

void sp_span_rings_init(struct sp_span_rings *rs)
{
	struct rlimit rl;

	memset(rs, 0, sizeof(*rs));
	rs->claim = sp_span_rings_claim_of((uint32_t)getpid());
	/* a quarter of the descriptors sp-record may have: the rest are its
	 * perf events', BPF's and files' */
	rs->mem_fds_most = 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 > rs->mem_fds_most)
		rs->mem_fds_most = rl.rlim_cur / 4 < SP_SPAN_RINGS_MEM_FDS ?
				   (unsigned int)(rl.rlim_cur / 4) : SP_SPAN_RINGS_MEM_FDS;
	else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY)
		rs->mem_fds_most = SP_SPAN_RINGS_MEM_FDS;
}

static void close_mem_fds(struct sp_span_rings *rs)
{
	uint64_t pid, fd;
	size_t it;

	for (it = 0; sp_u64map_next(&rs->mem_fd, &it, &pid, &fd);)
		close((int)(fd - 1));
	sp_u64map_release(&rs->mem_fd);
	sp_u64map_release(&rs->mem_start);
}

static void mem_fd_drop(struct sp_span_rings *rs, uint32_t pid)
{
	uint64_t *fd = sp_u64map_get(&rs->mem_fd, pid);

	if (!fd)
		return;
	close((int)(*fd - 1));
	sp_u64map_del(&rs->mem_fd, pid);
	sp_u64map_del(&rs->mem_start, pid);
}

/*
 * The descriptor of pid's memory, opened when its first ring is announced
 * and kept while it has rings: bound to that process's image, so after an
 * exec (same pid, same start time) or an exit it reads and writes nothing.
 * Past rs->mem_fds_most processes, each read and write opens its own.
 */
static void mem_fd_keep(struct sp_span_rings *rs, uint32_t pid, uint64_t start_ticks,
			uint64_t addr)
{
	uint64_t *kept = sp_u64map_get(&rs->mem_fd, pid);
	uint8_t b;
	int fd;

	/* kept, and still the image that announces this ring (an exec
	 * leaves the old descriptor reading nothing): kept on */
	if (kept && pread((int)(*kept - 1), &b, 1, (off_t)(addr & INT64_MAX)) == 1)
		return;
	mem_fd_drop(rs, pid);
	if (rs->mem_fd.n >= rs->mem_fds_most)
		return;
	fd = sp_procfs_mem_open(pid, start_ticks);
	if (fd < 0)
		return;
	sp_u64map_put(&rs->mem_fd, pid, (uint64_t)fd + 1);
	sp_u64map_put(&rs->mem_start, pid, start_ticks);
}

void sp_span_rings_release(struct sp_span_rings *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		free(rs->r[i]);
	free(rs->r);
	free(rs->buf);
	sp_u64map_release(&rs->by_tid);
	sp_u64map_release(&rs->per_pid);
	sp_u64map_release(&rs->warned);
	sp_u64map_release(&rs->lost_by_pid);
	close_mem_fds(rs);
	memset(rs, 0, sizeof(*rs));
}

uint64_t sp_span_rings_claim_of(uint32_t pid)
{
	uint64_t start;

	long hz = sysconf(_SC_CLK_TCK);
	int64_t off = sp_timens_offset_ns(true), tick, q;

	if (!pid || pid >= 1u << SP_RING_CLAIM_PID_BITS || sp_procfs_start(pid, &start))
		return 0;
	/* on the kernel's boot clock, as the hook reads it in any time
	 * namespace (/proc shows starts on the reader's): the offset in
	 * ticks rounded down, as the hook rounds it */
	if (hz > 0) {
		tick = 1000000000 / hz;
		q = off / tick - (off % tick < 0);
		start -= (uint64_t)q;
	}
	start &= (1ull << (64 - SP_RING_CLAIM_PID_BITS)) - 1;
	return SP_RING_CLAIM(pid, start);
}

/* Whether claim names a process that runs (the pid and its start time):
 * another sp-record reading the ring. Believed for a second; at most
 * CLAIM_CHECKS_PER_POLL looks in /proc a poll, beyond which a claim is
 * taken to be good (we then only read, which harms nobody). */
static bool claim_alive(struct sp_span_rings *rs, uint64_t claim, uint64_t now)
{
	size_t i, slot = 0;
	uint64_t mine;

	for (i = 0; i < sizeof(rs->claims) / sizeof(rs->claims[0]); i++) {
		if (rs->claims[i].claim == claim && now - rs->claims[i].at < CLAIM_CHECK_NS)
			return rs->claims[i].alive;
		if (rs->claims[i].at < rs->claims[slot].at)
			slot = i;
	}
	if (claim_checks >= CLAIM_CHECKS_PER_POLL)
		return true;
	claim_checks++;
	rs->claims[slot].claim = claim;
	rs->claims[slot].at = now;
	mine = sp_span_rings_claim_of((uint32_t)(claim & ((1u << SP_RING_CLAIM_PID_BITS) - 1)));
	/* a tick either way: the start as another time namespace rounds it */
	rs->claims[slot].alive = mine && (mine == claim || mine + (1ull << SP_RING_CLAIM_PID_BITS) == claim ||
					  mine - (1ull << SP_RING_CLAIM_PID_BITS) == claim);
	return rs->claims[slot].alive;
}

void sp_span_rings_comm(uint32_t pid, char *out, size_t size)
{
	if (sp_procfs_comm(pid, pid, out, size))
		snprintf(out, size, "gone");
}

/* Whether pid is to be told about what (WARNED_*) now: once per process,
 * for SP_SPAN_RINGS_WARNED_MAX processes. */
static bool first_time(struct sp_span_rings *rs, uint32_t pid, unsigned int what)
{
	uint64_t *w = sp_u64map_get(&rs->warned, pid);

	if (w && (*w & what))
		return false;
	if (!w && rs->warned.n >= SP_SPAN_RINGS_WARNED_MAX)
		return false;
	sp_u64map_put(&rs->warned, pid, (w ? *w : 0) | what);
	return true;
}

static void count_lost(struct sp_span_rings *rs, uint32_t pid, uint64_t n, uint64_t *why)
{
	uint64_t *v;

	if (!n)
		return;
	*why += n;
	rs->lost += n;
	v = sp_u64map_get(&rs->lost_by_pid, pid);
	sp_u64map_put(&rs->lost_by_pid, pid, (v ? *v : 0) + n);
}

/*
 * A descriptor of the memory of the image that announced pid's rings
 * (start_ticks: its start), bound to that image: a pid reused, or an exec
 * since, reads and writes nothing through it. The kept one, or past
 * rs->mem_fds_most processes one opened now (*opened: the caller closes
 * it; checked against the start, which an exec keeps). -1 with errno:
 * ESRCH or ENOENT, that image is gone (or was never known: start 0);
 * another, no descriptor could be had (EMFILE, say).
 */
static int image_fd(const struct sp_span_rings *rs, uint32_t pid, uint64_t start_ticks,
		    bool *opened)
{
	const uint64_t *kept = sp_u64map_get(&rs->mem_fd, pid);
	const uint64_t *kept_start = sp_u64map_get(&rs->mem_start, pid);

	*opened = false;
	if (kept && kept_start) {
		if (*kept_start == start_ticks)
			return (int)(*kept - 1);
		errno = ESRCH;
		return -1;
	}
	*opened = true;
	return sp_procfs_mem_open(pid, start_ticks);
}

/* By pid (process_vm_readv), for a process no descriptor of whose image
 * could be had: 0, ESRCH or EFAULT. */
static int by_number_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	return n < 0 && errno == ESRCH ? ESRCH : EFAULT;
}

/*
 * len bytes at addr of pid's announcing image, through image_fd(): 0, or
 * ESRCH (that image is gone) or EFAULT (not there). When no descriptor can
 * be had but the image is not known to be gone (out of descriptors), read
 * by pid and never written: counted, said once.
 */
static int image_rw(struct sp_span_rings *rs, uint32_t pid, uint64_t start_ticks,
		    uint64_t addr, void *buf, size_t len, bool write)
{
	bool opened;
	ssize_t n;
	int fd, err;

	if (addr > (uint64_t)INT64_MAX - len)
		return EFAULT;
	fd = image_fd(rs, pid, start_ticks, &opened);
	if (fd < 0) {
		err = errno;
		if (err == ESRCH || err == ENOENT)
			return ESRCH;
		if (!rs->by_number++)
			sp_warn("spans: pid %u: its memory cannot be opened (%s): its span "
				"rings are read by pid, not written (their threads do not "
				"wait for sp-record: marks they overwrite are counted lost)",
				pid, strerror(err));
		/* nothing written to a process not known by its image */
		return write ? EFAULT : by_number_read(pid, addr, buf, len);
	}
	n = write ? pwrite(fd, buf, len, (off_t)addr) : pread(fd, buf, len, (off_t)addr);
	/* an image gone reads as the end of the file; an address not
	 * mapped fails with EIO */
	err = n == (ssize_t)len ? 0 : n == 0 ? ESRCH : EFAULT;
	if (opened)
		close(fd);
	return err;
}

void sp_span_rings_tell_left(const struct sp_span_rings *rs, uint32_t pid, uint32_t tid,
			     uint64_t addr, uint64_t start_ticks)
{
	uint32_t left = SP_RING_LEFT;
	struct sp_ring_head h;
	bool opened;
	int fd;

	/* read and written through the image that announced the ring, or
	 * not at all */
	if (addr > INT64_MAX - sizeof(h))
		return;
	fd = image_fd(rs, pid, start_ticks, &opened);
	if (fd < 0)
		return;
	if (pread(fd, &h, sizeof(h), (off_t)addr) == (ssize_t)sizeof(h) &&
	    h.magic == SP_RING_MAGIC && h.pid == pid && h.tid == tid &&
	    (!h.claim || h.claim == rs->claim))
		(void)!pwrite(fd, &left, sizeof(left),
			      (off_t)(addr + offsetof(struct sp_ring_head, reader)));
	if (opened)
		close(fd);
}

/* r lied, or cannot be read: no more reads, no more holding the output
 * back; lost marks it is known to have had; one warning per process. */
static void give_up(struct sp_span_rings *rs, struct sp_span_ring *r, uint64_t lost,
		    const char *fmt, ...)
{
	char why[256], comm[80];
	va_list ap;

	r->given_up = true;
	r->seen_ns = 0;
	if (!r->shared)
		sp_span_rings_tell_left(rs, r->pid, r->tid, r->addr, r->start_ticks);
	rs->given_up++;
	count_lost(rs, r->pid, lost, &rs->lost_given_up);
	if (!first_time(rs, r->pid, WARNED_LIED))
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	sp_span_rings_comm(r->pid, comm, sizeof(comm));
	sp_warn("spans: pid %u (%s): the span ring of thread %u at 0x%llx %s: given up, "
		"its later marks are not recorded", r->pid, comm, r->tid,
		(unsigned long long)r->addr, why);
}

static struct sp_span_ring *find(const struct sp_span_rings *rs, uint32_t tid)
{
	uint64_t *i = sp_u64map_get(&rs->by_tid, tid);

	return i ? rs->r[*i - 1] : NULL;
}

static void per_pid_add(struct sp_span_rings *rs, uint32_t pid, int d)
{
	uint64_t *v = sp_u64map_get(&rs->per_pid, pid);
	uint64_t n = (v ? *v : 0) + (uint64_t)(int64_t)d;

	if (n) {
		sp_u64map_put(&rs->per_pid, pid, n);
	} else {
		sp_u64map_del(&rs->per_pid, pid);
		mem_fd_drop(rs, pid);
	}
}

static void drop(struct sp_span_rings *rs, size_t i)
{
	struct sp_span_ring *r = rs->r[i];

	sp_u64map_del(&rs->by_tid, r->tid);
	per_pid_add(rs, r->pid, -1);
	free(r);
	rs->r[i] = rs->r[--rs->n];
	if (i < rs->n)
		sp_u64map_put(&rs->by_tid, rs->r[i]->tid, i + 1);
}

static void drop_ring(struct sp_span_rings *rs, struct sp_span_ring *r)
{
	drop(rs, (size_t)(*sp_u64map_get(&rs->by_tid, r->tid) - 1));
}

/* A ring past the bounds is not read; its process is told once. */
static void refuse(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
		   uint64_t start_ticks)
{
	char comm[80];

	rs->refused++;
	sp_span_rings_tell_left(rs, pid, tid, addr, start_ticks);
	if (!first_time(rs, pid, WARNED_REFUSED))
		return;
	sp_span_rings_comm(pid, comm, sizeof(comm));
	sp_warn("spans: pid %u (%s): the span ring of thread %u is not read: %zu rings are "
		"known (at most %u, %u per process): that thread's marks are not recorded",
		pid, comm, tid, rs->n, SP_SPAN_RINGS_MAX, SP_SPAN_RINGS_PER_PROC);
}

/* The ring of tid, new or started again; NULL when past the bounds. */
static struct sp_span_ring *ring_new(struct sp_span_rings *rs, uint32_t pid, uint32_t tid,
				     uint64_t addr, uint64_t time, uint64_t start_ns,
				     int64_t clock_ns)
{
	struct sp_span_ring *r = find(rs, tid);
	uint64_t *np = sp_u64map_get(&rs->per_pid, pid);
	uint64_t mine = np ? *np : 0, start_ticks = 0;
	long hz = sysconf(_SC_CLK_TCK);

	/* who announced it, as BPF saw it then (in /proc/PID/stat's clock
	 * ticks: the kernel's nsec_to_clock_t() is this division); else as
	 * soon as it is known here: its pid may be reused meanwhile */
	if (start_ns && hz > 0 && 1000000000 % hz == 0)
		start_ticks = (uint64_t)((int64_t)start_ns + sp_timens_offset_ns(true)) /
			      (1000000000 / (uint64_t)hz);
	else if (sp_procfs_start(pid, &start_ticks))
		start_ticks = 0;
	if (r && r->pid != pid) {	/* the tid of a process gone */
		drop_ring(rs, r);
		r = NULL;
	}
	if (!r) {
		if (rs->n >= SP_SPAN_RINGS_MAX || mine >= SP_SPAN_RINGS_PER_PROC) {
			refuse(rs, pid, tid, addr, start_ticks);
			return NULL;
		}
		r = sp_xcalloc(1, sizeof(*r));
		sp_grow(&rs->r, &rs->cap, rs->n + 1, sizeof(*rs->r));
		rs->r[rs->n++] = r;
		sp_u64map_put(&rs->by_tid, tid, rs->n);
		per_pid_add(rs, pid, 1);
	}
	mem_fd_keep(rs, pid, start_ticks, addr);
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->addr = addr;
	r->start_ticks = start_ticks;
	r->clock_ns = clock_ns;
	r->good_ns = time;
	r->seen_ns = time;
	return r;
}

/* r's thread stamps on another clock now: it joined another time
 * namespace (setns()). Which of its unread marks were stamped on which
 * clock is not known: r is given up, said. */
static bool clock_moved(struct sp_span_rings *rs, struct sp_span_ring *r, int64_t clock_ns)
{
	if (r->clock_ns == clock_ns || r->given_up)
		return false;
	give_up(rs, r, 0, "moved to another time namespace (its clock by %lld ns): which of "
		"its marks were stamped on which clock is not known", (long long)(clock_ns - r->clock_ns));
	return true;
}

/* A ring new to us starts where its thread says it was read up to (0 for
 * a new ring; an older one's: what an earlier reader left), or at what it
 * still holds: its past before we knew it is not counted lost. */
static void ring_seen(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
		      uint64_t time, uint64_t start_ns, int64_t clock_ns)
{
	struct sp_span_ring *r = find(rs, tid);

	if (!r || r->addr != addr || r->pid != pid) {
		r = ring_new(rs, pid, tid, addr, time, start_ns, clock_ns);
		if (r)
			r->late = true;
		return;
	}
	if (clock_moved(rs, r, clock_ns))
		return;
	if (!sp_u64map_get(&rs->mem_fd, pid)) {
		/* its descriptor, now that there may be room for it */
		mem_fd_keep(rs, pid, r->start_ticks, addr);
	}
}

/* A ring's address as its thread gave it: the whole ring in the address
 * space, aligned. */
static bool addr_ok(uint64_t addr)
{
	return addr && !(addr % 8) && addr + sizeof(struct sp_ring) > addr;
}

void sp_span_rings_add(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
		       uint64_t time, bool again, uint64_t start_ns, int64_t clock_ns)
{
	if (!addr_ok(addr)) {
		rs->bad++;
		return;
	}
	if (again)
		ring_seen(rs, pid, tid, addr, time, start_ns, clock_ns);
	else
		ring_new(rs, pid, tid, addr, time, start_ns, clock_ns);
}

/* Whether r's head may be at number n at time t: a thread writes a mark
 * per SP_SPAN_RINGS_MARK_NS at most since we last looked, and may have
 * overwritten a ring's worth we did not see. */
static bool plausible(const struct sp_span_ring *r, uint64_t n, uint64_t t)
{
	uint64_t most = t > r->seen_ns ? (t - r->seen_ns) / SP_SPAN_RINGS_MARK_NS : 0;

	return n <= r->seen || n - r->seen <= most + SP_RING_CAP;
}

bool sp_span_rings_hook(uint32_t probe)
{
	probe &= ~(SP_RING_RESYNC | SP_RING_BOOT);
	return probe == SP_PR_PY_HOOK_CALL || probe == SP_PR_PY_HOOK_RETURN ||
	       probe == SP_PR_PY_HOOK_RAISE || probe == SP_PR_PY_HOOK_CORO ||
	       probe == SP_PR_RB_HOOK_CALL || probe == SP_PR_RB_HOOK_RETURN ||
	       probe == SP_PR_RB_HOOK_FIBER || probe == SP_PR_RUBY_CMETHOD_ENTRY ||
	       probe == SP_PR_RUBY_CMETHOD_RETURN;
}

enum sp_span_rings_resync sp_span_rings_resync(bool want_run, bool in_run, uint64_t claimed_ns,
					       const struct sp_ring_entry *m)
{
	if (m->probe & SP_RING_RESYNC)
		return want_run || in_run ? SP_RESYNC_RUN : SP_RESYNC_DROP;
	if (!in_run && want_run && m->time < claimed_ns + SP_SPAN_RINGS_RUN_WAIT_NS)
		return SP_RESYNC_SKIP;
	return SP_RESYNC_DELIVER;
}

/* Deliver entries numbered [from, to) of r, e[0] being number base. Their
 * stamps only grow, and none is ahead of now: a ring that says otherwise
 * is given up. */
static int deliver(struct sp_span_rings *rs, struct sp_span_ring *r, uint64_t base,
		   uint64_t to, const struct sp_ring_entry *e, sp_span_ring_put_fn put, void *ctx)
{
	uint64_t k, now = sp_now_mono_ns();

	if (r->next > base)
		rs->dups += (r->next < to ? r->next : to) - base;
	for (k = r->next > base ? r->next : base; k < to; k++) {
		struct sp_ring_entry here = e[k - base], *m = &here;

		/* stamped on the clock of its thread's time namespace */
		here.time -= (uint64_t)r->clock_ns;

		if (m->time > now) {
			give_up(rs, r, to - k, "has mark %llu stamped %llu ns ahead of now",
				(unsigned long long)k, (unsigned long long)(m->time - now));
			return 0;
		}
		if (m->time < r->last_ns) {
			give_up(rs, r, to - k, "has mark %llu stamped %llu ns before the one it follows",
				(unsigned long long)k, (unsigned long long)(r->last_ns - m->time));
			return 0;
		}
		r->last_ns = m->time;
		r->next = k + 1;
		/* before the recording, or past marks we never saw (a busy
		 * thread overwrote them): frames may be open whose starts
		 * nobody will deliver */
		if (!r->delivered && r->claimed_ns && r->runs && sp_span_rings_hook(m->probe) &&
		    (m->time < rs->since || r->unseen))
			r->want_run = true;
		if (m->time < rs->since)
			continue;
		switch (sp_span_rings_resync(r->want_run, r->in_run, r->claimed_ns, m)) {
		case SP_RESYNC_SKIP:
			rs->before_run++;
			continue;
		case SP_RESYNC_DROP:
			continue;
		case SP_RESYNC_RUN:
			r->in_run = true;
			here.probe &= ~SP_RING_RESYNC;
			break;
		case SP_RESYNC_DELIVER:
			r->in_run = r->want_run = false;
			break;
		}
		r->delivered = true;
		/* after records it precedes (a ring found late): counted, and
		 * kept, for the merge and sp-correlate's window to place */
		if (m->time < rs->released)
			rs->late++;
		if (put(ctx, r->pid, r->tid, m))
			return -1;
	}
	return 0;
}

int sp_span_rings_chunk(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t first, uint32_t n, uint32_t flags, uint64_t time, int64_t clock_ns,
			const struct sp_ring_entry *e, sp_span_ring_put_fn put, void *ctx)
{
	struct sp_span_ring *r = find(rs, tid), alone;
	int ret = 0;

	if (n > SP_RING_CHUNK || first + n < first) {
		rs->bad++;
		n = 0;
	}
	if ((flags & SP_BSF_FAULT) && (flags & SP_BSF_LAST))
		rs->faults++;
	/* a ring not announced (its rt__ring record lost): known from now */
	if (!r || r->addr != addr || r->pid != pid) {
		r = (flags & SP_BSF_LAST) ? NULL : ring_new(rs, pid, tid, addr, time, 0, clock_ns);
		if (!r) {	/* its last, or past the bounds: deliver, forget */
			memset(&alone, 0, sizeof(alone));
			alone.pid = pid;
			alone.tid = tid;
			alone.addr = addr;
			r = &alone;
		}
		r->clock_ns = clock_ns;
		r->next = r->seen = first;
	} else {
		clock_moved(rs, r, clock_ns);
	}
	if (r->late) {		/* never read: it starts here */
		r->late = false;
		r->next = r->seen = first;
	}
	if (!r->given_up && first > r->next) {
		if (!plausible(r, first, time)) {
			give_up(rs, r, 0, "was copied at its thread's end from mark %llu, %llu "
				"after the last one read", (unsigned long long)first,
				(unsigned long long)(first - r->next));
		} else {
			rs->gaps++;
			count_lost(rs, pid, first - r->next,
				   r->shared ? &rs->lost_shared : &rs->lost_waited);
			r->next = first;
		}
	}
	if (!r->given_up && (flags & SP_BSF_FAULT)) {
		/* BPF could not read these n: lost */
		if (first + n > r->next) {
			count_lost(rs, pid, first + n - (first > r->next ? first : r->next),
				   &rs->lost_at_end);
			r->next = first + n;
		}
	} else if (!r->given_up && n) {
		ret = deliver(rs, r, first, first + n, e, put, ctx);
	}
	if (r != &alone && (flags & SP_BSF_LAST))
		drop_ring(rs, r);
	return ret;
}

/* r's head, read through its announcing image (image_rw()). */
static int read_head(struct sp_span_rings *rs, const struct sp_span_ring *r,
		     struct sp_ring_head *h)
{
	return image_rw(rs, r->pid, r->start_ticks, r->addr, h, sizeof(*h), false);
}

/* Entries [from, to) of r into buf (at most a ring), through its image
 * too: one read, or two where the range wraps. */
static int read_entries(struct sp_span_rings *rs, const struct sp_span_ring *r, uint64_t from,
			uint64_t to, struct sp_ring_entry *buf)
{
	uint64_t slot = from % SP_RING_CAP, n = to - from, first = SP_RING_CAP - slot;
	uint64_t base = r->addr + sizeof(struct sp_ring_head);
	int err;

	if (first > n)
		first = n;
	err = image_rw(rs, r->pid, r->start_ticks, base + slot * sizeof(*buf), buf,
		       first * sizeof(*buf), false);
	if (!err && n > first)
		err = image_rw(rs, r->pid, r->start_ticks, base, buf + first,
			       (n - first) * sizeof(*buf), false);
	return err;
}

/* Write v at offset off of r's head, through its announcing image: a
 * pid reused, or an exec since, gets nothing. */
static bool write_head(struct sp_span_rings *rs, const struct sp_span_ring *r, size_t off,
		       const void *v, size_t len)
{
	return !image_rw(rs, r->pid, r->start_ticks, r->addr + off, (void *)v, len, true);
}

/* Whether h is still the head of r's thread's ring. */
static bool same_ring(const struct sp_span_ring *r, const struct sp_ring_head *h)
{
	return h->magic == SP_RING_MAGIC && h->tid == r->tid && h->pid == r->pid;
}

/* Another sp-record owns r: said once per process. */
static void note_shared(struct sp_span_rings *rs, struct sp_span_ring *r, uint64_t claim)
{
	char comm[80];

	if (r->shared)
		return;
	r->shared = true;
	rs->shared++;
	if (!first_time(rs, r->pid, WARNED_SHARED))
		return;
	sp_span_rings_comm(r->pid, comm, sizeof(comm));
	sp_warn("spans: pid %u (%s): its span rings are read by another sp-record (pid %llu): "
		"read beside it, the marks its threads overwrite before they are read here are "
		"counted lost", r->pid, comm,
		(unsigned long long)(claim & ((1u << SP_RING_CLAIM_PID_BITS) - 1)));
}

/* A read of r that failed: another try at the next poll, then r is given
 * up (the output is held back a poll at most). */
static void failed(struct sp_span_rings *rs, struct sp_span_ring *r, int err, uint64_t lost,
		   const char *what)
{
	if (err == ESRCH) {
		r->dead = true;
		return;
	}
	if (++r->fails > 1) {
		if (err)
			give_up(rs, r, lost, "cannot be read (its %s: %s)", what, strerror(err));
		else
			give_up(rs, r, lost, "%s", what);
	}
}

/*
 * What is new in r: the head, the entries up to it, the head again (to be
 * sure none was overwritten meanwhile: the thread overwrites unread entries
 * only when it gave up waiting for us, or for the ring's owner when that is
 * another sp-record); then, when the ring is ours, tell the thread how far
 * we have read, before the entries are handled, so that it goes on at
 * once. 1: not read, the poll's budget is spent.
 */
static int poll_one(struct sp_span_rings *rs, struct sp_span_ring *r, uint64_t now,
		    uint64_t *budget, sp_span_ring_put_fn put, void *ctx)
{
	const uint32_t reading = SP_RING_READING;
	struct sp_ring_head h, again;
	uint64_t head, from, sure, last;
	bool own, claiming = false;
	int err;

	if ((err = read_head(rs, r, &h))) {
		failed(rs, r, err, 0, "head");
		return 0;
	}
	if (!same_ring(r, &h)) {
		/* ended, or another thread's now: its last chunk, committed
		 * before, ends it; without one (lost), it goes next time */
		if (!h.magic && h.tid == r->tid)
			r->consumed = h.consumed;	/* as its thread left it */
		r->ended = true;
		return 0;
	}
	r->ended = false;
	r->runs = h.features & SP_RING_F_RUNS;
	own = h.claim == rs->claim;
	if (!own && (!h.claim || !claim_alive(rs, h.claim, now))) {
		claiming = write_head(rs, r, offsetof(struct sp_ring_head, claim), &rs->claim,
				      sizeof(rs->claim));
		if (claiming && !r->claimed_ns)
			r->claimed_ns = sp_now_mono_ns();
	}
	head = h.head;
	if (head < r->next)	/* started again at the same address (exec) */
		r->late = true;
	if (r->late) {
		r->late = false;
		r->next = h.consumed <= head && head - h.consumed <= SP_RING_CAP ? h.consumed :
			  head > SP_RING_CAP ? head - SP_RING_CAP : 0;
		r->unseen = r->next > 0;
		r->seen = r->next;
		r->seen_ns = now;
	}
	if (!plausible(r, head, now)) {
		give_up(rs, r, 0, "said its head went from %llu to %llu in %llu ms, more than a "
			"thread can write", (unsigned long long)r->seen, (unsigned long long)head,
			(unsigned long long)((now > r->seen_ns ? now - r->seen_ns : 0) / 1000000));
		return 0;
	}
	from = head - r->next > SP_RING_CAP ? head - SP_RING_CAP : r->next;	/* overwritten: lost */
	if (head - from > *budget)
		return 1;
	if (head > from && (err = read_entries(rs, r, from, head, rs->buf))) {
		failed(rs, r, err, head - r->next, "entries");
		return 0;
	}
	*budget -= head - from;
	if ((head > from || claiming) && (err = read_head(rs, r, &again))) {
		failed(rs, r, err, head - r->next, "head");
		return 0;
	}
	if (head == from && !claiming)
		again = h;
	if (!same_ring(r, &again) || again.head < head) {
		/* ended or started again meanwhile: next time, once */
		failed(rs, r, 0, 0, "changed under every read");
		return 0;
	}
	r->fails = 0;
	if (claiming && again.claim == rs->claim) {
		own = true;
	} else if (!own && again.claim && again.claim != rs->claim) {
		note_shared(rs, r, again.claim);
	}
	if (own)
		r->shared = false;	/* ours now (the owner left) */
	/*
	 * Entries the thread overwrote while they were read: not delivered. A
	 * full ring (head a ring ahead of what was read) is whole when it is
	 * ours: its thread waits before it writes the next entry. (One that
	 * gave up could be writing that entry, unseen, just then; a thread
	 * that waits for another reader surely can.)
	 */
	last = own ? again.head : again.head + 1;
	sure = last - from > SP_RING_CAP ? last - SP_RING_CAP : from;
	if (sure > head)
		sure = head;
	if (sure > r->next)
		count_lost(rs, r->pid, sure - r->next, own ? &rs->lost_waited : &rs->lost_shared);
	if (sure > r->next)
		r->next = sure;
	if (own) {
		if (h.reader != SP_RING_READING &&
		    write_head(rs, r, offsetof(struct sp_ring_head, reader), &reading, sizeof(reading)))
			rs->reading++;
		if (head > from)
			write_head(rs, r, offsetof(struct sp_ring_head, consumed), &head, sizeof(head));
	}
	r->consumed = again.consumed;
	r->good_ns = now;
	r->seen = head;
	r->seen_ns = now;
	return head > r->next ? deliver(rs, r, from, head, rs->buf, put, ctx) : 0;
}

void sp_span_rings_wake(struct sp_span_rings *rs, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t time, int64_t clock_ns)
{
	rs->polled_ns = 0;
	if (addr_ok(addr))
		ring_seen(rs, pid, tid, addr, time, 0, clock_ns);
}

void sp_span_rings_leave(struct sp_span_rings *rs)
{
	const uint32_t left = SP_RING_LEFT;
	const uint64_t none = 0;
	size_t i;

	for (i = 0; i < rs->n; i++) {
		struct sp_span_ring *r = rs->r[i];
		struct sp_ring_head h;

		/* only where the ring still is this thread's, and ours (or
		 * nobody's) */
		if (r->dead || r->given_up || read_head(rs, r, &h) || !same_ring(r, &h) ||
		    (h.claim && h.claim != rs->claim))
			continue;
		write_head(rs, r, offsetof(struct sp_ring_head, reader), &left, sizeof(left));
		if (h.claim)
			write_head(rs, r, offsetof(struct sp_ring_head, claim), &none, sizeof(none));
	}
}

/* A ring gone for good: its process's, or its thread's end seen without
 * its last copy. What the other sp-record read of a ring it owned before
 * we did, and we never saw, is lost here. */
static void forget(struct sp_span_rings *rs, size_t i)
{
	struct sp_span_ring *r = rs->r[i];

	if (r->ended)
		rs->unended++;
	if (r->shared && r->consumed > r->next && r->consumed - r->next <= SP_RING_CAP)
		count_lost(rs, r->pid, r->consumed - r->next, &rs->lost_shared);
	drop(rs, i);
}

int sp_span_rings_poll(struct sp_span_rings *rs, uint64_t now, sp_span_ring_put_fn put,
		       void *ctx)
{
	uint64_t budget = SP_SPAN_RINGS_POLL_ENTRIES, start;
	size_t i, k, n;
	int ret;

	if (!rs->n || (rs->polled_ns && now - rs->polled_ns < POLL_EVERY_NS))
		return 0;
	rs->polled_ns = now;
	claim_checks = 0;
	if (!rs->buf)
		rs->buf = sp_xcalloc(SP_RING_CAP, sizeof(*rs->buf));
	for (i = rs->n; i-- > 0;) {
		struct sp_span_ring *r = rs->r[i];

		if (r->dead || r->ended) {
			forget(rs, i);
		} else if (r->given_up && now - r->seen_ns >= GONE_CHECK_NS) {
			/* left alone, until its process is gone */
			r->seen_ns = now;
			if (kill((pid_t)r->pid, 0) && errno == ESRCH)
				drop(rs, i);
		}
	}
	start = sp_now_mono_ns();
	n = rs->n;
	for (k = 0; k < n; k++) {
		i = (rs->cursor + k) % n;
		if (rs->r[i]->given_up)
			continue;
		ret = poll_one(rs, rs->r[i], now, &budget, put, ctx);
		if (ret < 0)
			return -1;
		if (ret > 0 || sp_now_mono_ns() - start > SP_SPAN_RINGS_POLL_NS) {
			/* enough for one poll: the rest first next time */
			rs->cursor = ret > 0 ? i : i + 1;
			return 0;
		}
	}
	return 0;
}

uint64_t sp_span_rings_watermark(const struct sp_span_rings *rs)
{
	uint64_t w = UINT64_MAX;
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (!rs->r[i]->given_up && rs->r[i]->good_ns < w)
			w = rs->r[i]->good_ns;
	return w;
}

int sp_span_rings_take_lost(struct sp_span_rings *rs, uint64_t now,
			    int (*fn)(void *ctx, uint32_t pid, uint64_t n, uint64_t since),
			    void *ctx)
{
	uint64_t pid, n;
	size_t i;
	int ret = 0;

	for (i = 0; !ret && sp_u64map_next(&rs->lost_by_pid, &i, &pid, &n);)
		ret = fn(ctx, (uint32_t)pid, n, rs->lost_since);
	sp_u64map_release(&rs->lost_by_pid);
	rs->lost_since = now;
	return ret;
}
