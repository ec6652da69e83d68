// SPDX-License-Identifier: MIT
/*
 * ring.c - the slow paths of a runtime hook's span ring (ring.h): making
 * and announcing a thread's ring, waking and waiting for sp-record, a
 * thread's end, a fork.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "marker.h"
#include "ring.h"

bool sp_rt_ring_on;
__thread struct sp_ring *sp_rt_ring_cur;
__thread int sp_rt_ring_listened = -1;

/* 'consumed' when a wait for sp-record last ran out: not waited for again
 * until it moves (a reader killed, or stopped, leaves READING behind). */
static __thread uint64_t stale_consumed = UINT64_MAX;

/* Naps taken waiting for sp-record, for the tests. */
static uint64_t naps;

/* A ring said sp-record is done with this process: new rings do not wait
 * for it (a reader that comes later marks the rings it reads). */
static bool reader_left;

/* The sp-record that started this process and reads its rings
 * (STACKPULSE_SPAN_READER, a claim: SP_RING_CLAIM()), 0: none named. */
static uint64_t env_reader;

static pthread_key_t key;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_ring **spare;	/* rings of ended threads, for new ones */
static size_t nspare, cspare;

/* A ring's entries have their own pages, touched only as they are used. */
static struct sp_ring *ring_alloc(void)
{
	struct sp_ring *r = NULL;

	pthread_mutex_lock(&spare_lock);
	if (nspare)
		r = spare[--nspare];
	pthread_mutex_unlock(&spare_lock);
	if (!r && posix_memalign((void **)&r, 4096, sizeof(*r)))
		return NULL;
	return r;
}

static uint64_t now_ns(void);

/* The rt__ring marker carries a label, sp_rt_ring_site, for
 * sp_rt_resync_due(): one body only (noinline, noclone), one label. */
__attribute__((noinline, noclone))
void sp_rt_ring_announce(struct sp_ring *r, uint64_t now)
{
	int again = r->h.announced != 0;

	r->h.announced = now;
	SP_RT_MARK_AT(sp_rt_ring_site, rt__ring, r, (uintptr_t)SP_RING_CAP,
		      (uintptr_t)sizeof(struct sp_ring_entry), again);
}

/*
 * A recorder came to a thread that marked without one (sp_rt_resync_due()):
 * it reads the thread's ring once it finds it (the next rt__ring). Until
 * then a full ring waits for it again, as for a reader asked for at start
 * (after one wait in vain a ring is overwritten freely, and an earlier
 * reader may have left): a busy thread would overwrite the open frames it
 * writes now before they are read.
 */
void sp_rt_ring_came(void)
{
	struct sp_ring *r = sp_rt_ring_cur;
	uint32_t left = SP_RING_LEFT;

	reader_left = false;
	stale_consumed = UINT64_MAX;
	if (r)
		__atomic_compare_exchange_n(&r->h.reader, &left, SP_RING_ASKED, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* r starts (again) as the running thread's ring. */
static void announce(struct sp_ring *r)
{
	r->h.head = r->h.notified = r->h.consumed = r->h.announced = 0;
	r->h.claim = 0;		/* no sp-record owns it yet (a spare's, a fork's) */
	r->h.reader = reader_left ? SP_RING_LEFT : SP_RING_ASKED;
	r->h.magic = SP_RING_MAGIC;
	r->h.features = SP_RING_F_RUNS;	/* both hooks write runs (sp_rt_resync_due()) */
	r->h.pid = (uint32_t)getpid();
	r->h.tid = (uint32_t)syscall(SYS_gettid);
	stale_consumed = UINT64_MAX;
	sp_rt_ring_announce(r, now_ns());
}

struct sp_ring *sp_rt_ring_start(void)
{
	struct sp_ring *r = ring_alloc();

	if (!r)
		return NULL;
	announce(r);
	sp_rt_ring_cur = r;
	pthread_setspecific(key, r);
	return r;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Entries of r not read yet, h written ('consumed' past h: a reader's
 * write meant for the ring's previous owner: all of them, until the
 * reader reads this one). */
static uint64_t unread(const struct sp_ring *r, uint64_t h)
{
	uint64_t c = __atomic_load_n(&r->h.consumed, __ATOMIC_ACQUIRE);

	return c > h ? h : h - c;
}

/* Our time namespace's boot-clock offset in clock ticks, rounded down
 * (as sp-record rounds its own): /proc shows a start on the reader's boot
 * clock, a claim holds it on the kernel's. Read once it could be (a race
 * reads it twice, alike); a fork child reads it again (after_fork_child:
 * it may be in the namespace its parent made). */
static long long boot_ticks;
static int boot_ticks_read;

static long long boot_offset_ticks(void)
{
	long long sec, nsec, hz = sysconf(_SC_CLK_TCK), t = 0;
	char name[32];
	FILE *f;

	if (__atomic_load_n(&boot_ticks_read, __ATOMIC_ACQUIRE))
		return boot_ticks;
	f = fopen("/proc/self/timens_offsets", "re");
	if (!f || hz <= 0) {
		if (f)
			fclose(f);
		return 0;	/* not known now (out of descriptors): asked again */
	}
	/* nsec is in [0, 1 s): sec's whole ticks plus nsec's, rounded down */
	while (fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3)
		if (!strcmp(name, "boottime") && sec > -(1ll << 40) && sec < (1ll << 40) &&
		    nsec >= 0 && nsec < 1000000000)
			t = sec * hz + nsec / (1000000000 / hz);
	fclose(f);
	boot_ticks = t;
	__atomic_store_n(&boot_ticks_read, 1, __ATOMIC_RELEASE);
	return boot_ticks;
}

/*
 * The reader's /proc/PID/stat, opened once per claim and read again with
 * pread() at each look: a program's thread waits for sp-record at every
 * stall, and an open() per look put the hook's own opens among the
 * program's file events (under its spans) as often. An open descriptor
 * also names the process it was opened for, not a pid reused since (its
 * reads fail then, and it is opened again: a reader of that pid now is
 * another). Checked to be still that file before each read: a program
 * may close descriptors it did not open (a daemon closing them all) and
 * have the number again for a file of its own. (A thread closing another
 * thread's descriptors between that check and a close here could lose a
 * file: no correct program does.) It stays open for the program's life,
 * close-on-exec; a fork child keeps it, as it keeps the reader.
 */
static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;
static int stat_fd = -1;
static uint64_t stat_pid;
static dev_t stat_dev;
static ino_t stat_ino;

/* The stat line of pid into buf (NUL-terminated): its length, or -1. */
static ssize_t read_stat(uint64_t pid, char *buf, size_t size)
{
	char path[64];
	struct stat st;
	ssize_t n = -1;
	bool reopened = false;

	pthread_mutex_lock(&stat_lock);
again:
	if (stat_fd >= 0) {
		if (fstat(stat_fd, &st) || st.st_dev != stat_dev || st.st_ino != stat_ino)
			stat_fd = -1;	/* ours no more: the number is the program's */
		else if (stat_pid != pid)
			close(stat_fd);	/* another reader's claim */
		if (stat_pid != pid)
			stat_fd = -1;
	}
	if (stat_fd < 0) {
		snprintf(path, sizeof(path), "/proc/%llu/stat", (unsigned long long)pid);
		stat_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (stat_fd >= 0 && !fstat(stat_fd, &st)) {
			stat_pid = pid;
			stat_dev = st.st_dev;
			stat_ino = st.st_ino;
		} else if (stat_fd >= 0) {
			close(stat_fd);
			stat_fd = -1;
		}
	}
	if (stat_fd >= 0)
		n = pread(stat_fd, buf, size - 1, 0);
	if (n <= 0 && stat_fd >= 0 && !reopened) {
		/* the process it was opened for is gone (its reads fail): a
		 * reader of that pid now is another, opened anew, once */
		close(stat_fd);
		stat_fd = -1;
		reopened = true;
		goto again;
	}
	pthread_mutex_unlock(&stat_lock);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return n;
}

/*
 * Whether the reader a claim names (SP_RING_CLAIM(): pid and start time)
 * runs: its /proc/PID/stat says that start time, and a state in which it
 * can read (a stopped, traced or zombie sp-record reads nothing: Ctrl-Z,
 * a debugger, killed and not reaped yet). A pid of another namespace, an
 * unreadable /proc: not running (the bounded wait).
 */
static bool claim_runs(uint64_t claim)
{
	uint64_t pid = claim & ((1u << SP_RING_CLAIM_PID_BITS) - 1);
	unsigned long long start;
	char buf[1024], *p;
	int i;

	if (!pid || read_stat(pid, buf, sizeof(buf)) < 0)
		return false;
	/* after the name, which may hold anything: starttime is field 22 */
	p = strrchr(buf, ')');
	if (!p || !p[1] || !p[2] || strchr("TtZXx", p[2]))	/* field 3, the state */
		return false;
	for (i = 3; p && i <= 22; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1)
		return false;
	start -= (unsigned long long)boot_offset_ticks();
	/* a tick either way: an offset that is no whole number of ticks (a
	 * checkpoint restored elsewhere) rounds the start either way */
	for (i = -1; i <= 1; i++)
		if (SP_RING_CLAIM(pid, (start + (unsigned long long)(long long)i) &
					  ((1ull << (64 - SP_RING_CLAIM_PID_BITS)) - 1)) == claim)
			return true;
	return false;
}

/*
 * How long r may wait for its reader now (0: not at all), counted from its
 * last progress: longest while the sp-record that owns it runs (it reads
 * the ring, or tells it LEFT when it stops: a loaded machine may keep it
 * off a CPU for a second or more, and marks overwritten then were lost
 * from a command recorded with --spans named), yet bounded: an owner that
 * runs and reads nothing (stuck writing to a pipe nobody reads) must not
 * stop the program for good; until it comes, a while, when it is the sp-record
 * that started this process (one it does not track, which inherited the
 * environment, is not waited for longer); else a little, once.
 */
static uint64_t wait_bound(const struct sp_ring *r, uint32_t reader)
{
	uint64_t claim = __atomic_load_n(&r->h.claim, __ATOMIC_RELAXED);

	if (claim && claim_runs(claim))
		return SP_RT_RING_OWNER_WAIT_NS;
	if (!claim && env_reader && claim_runs(env_reader))
		return SP_RT_RING_STARTER_WAIT_NS;
	return reader == SP_RING_READING ? SP_RT_RING_WAIT_NS : SP_RT_RING_ASKED_WAIT_NS;
}

/*
 * Every SP_RING_HALF entries: wake sp-record, then make room for the next
 * SP_RING_HALF (the fast path checks nothing until then): while more than
 * half the ring is unread and sp-record reads it, sleep a little, waking
 * it again now and then.
 */
void sp_rt_ring_slow(struct sp_ring *r, uint64_t h)
{
	const struct timespec nap = { 0, 50000 };
	uint64_t start = 0, woke = 0, bound = 0, last = 0, t, c;
	uint32_t reader;

	SP_RT_MARK(rt__flush, r, 0, 0, 0);
	r->h.notified = h;
	if (__atomic_load_n(&r->h.reader, __ATOMIC_RELAXED) == SP_RING_LEFT)
		reader_left = true;
	while (unread(r, h) > SP_RING_HALF &&
	       ((reader = __atomic_load_n(&r->h.reader, __ATOMIC_RELAXED)) == SP_RING_READING ||
		reader == SP_RING_ASKED)) {
		c = __atomic_load_n(&r->h.consumed, __ATOMIC_RELAXED);
		if (c == stale_consumed)
			return;
		t = now_ns();
		if (!start) {
			start = woke = t;
			last = c;
			bound = wait_bound(r, reader);
		} else if (c != last) {	/* the reader reads: counted from now */
			start = t;
			last = c;
		}
		if (t - start > bound) {
			stale_consumed = c;
			return;
		}
		if (t - woke > 10000000) {	/* a wake lost in a full buffer */
			SP_RT_MARK(rt__flush, r, 0, 0, 0);
			woke = t;
			/* the reader may have claimed the ring, or gone */
			bound = wait_bound(r, reader);
		}
		nanosleep(&nap, NULL);
		naps++;
	}
}

/* A thread ends: BPF copies what is unread and forgets the ring (last =
 * 1); the ring goes to the spares. */
static void thread_end(void *arg)
{
	struct sp_ring *r = arg;

	SP_RT_MARK(rt__flush, r, 0, 0, 1);
	r->h.magic = 0;
	sp_rt_ring_cur = NULL;
	pthread_mutex_lock(&spare_lock);
	if (nspare == cspare) {
		size_t n = cspare ? 2 * cspare : 16;
		struct sp_ring **s = realloc(spare, n * sizeof(*s));

		if (s) {
			spare = s;
			cspare = n;
		}
	}
	if (nspare < cspare)
		spare[nspare++] = r;
	else
		free(r);
	pthread_mutex_unlock(&spare_lock);
}

/* The spares' lock is held across a fork, so that the child does not
 * inherit it locked by a thread it does not have. */
static void before_fork(void)
{
	pthread_mutex_lock(&spare_lock);
	pthread_mutex_lock(&stat_lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&stat_lock);
	pthread_mutex_unlock(&spare_lock);
}

/* In a fork child the forking thread's ring holds its parent's marks:
 * start it again as the child's. */
static void after_fork_child(void)
{
	struct sp_ring *r = sp_rt_ring_cur;

	/* the reader's stat stays open: the same reader, its checks go on */
	pthread_mutex_unlock(&stat_lock);
	pthread_mutex_unlock(&spare_lock);
	__atomic_store_n(&boot_ticks_read, 0, __ATOMIC_RELEASE);
	if (r)
		announce(r);
}

void sp_rt_ring_init(void)
{
	const char *v = getenv("STACKPULSE_SPAN_RING");
	const char *who = getenv("STACKPULSE_SPAN_READER");
	char *end;

	if (!v || strcmp(v, "1") || pthread_key_create(&key, thread_end))
		return;
	if (who && *who) {
		env_reader = strtoull(who, &end, 10);
		if (*end)
			env_reader = 0;
	}
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	sp_rt_ring_on = true;
}
