// SPDX-License-Identifier: MIT
/*
 * The perf source's JIT symbols (perf_sourceP.h): the perf map a JIT
 * writes to /tmp/perf-PID.map, read when the process ends (or when the
 * recording does) and written as jitsym records: the symbols that hold a
 * frame of it, only. A map is the process's to write, and one map may be
 * linked as every process's: written whole, twenty short processes of
 * one user made four million records of one 9 MB map. So a process with
 * no frame in code without a file has its map not even opened, and what
 * is written of it is bounded by its frames, which samples bound.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf_sourceP.h"
#include "procfs.h"
#include "procroot.h"
#include "sp.h"

/* An address's value in pr->jit_addrs: named by a symbol written, or not
 * yet (a map read looks for its symbol). */
#define JIT_UNNAMED	1
#define JIT_NAMED	2

/* Reads of a map while its process runs: for new frames at once, in the
 * batch of their first sample, while the reads of that map have taken at
 * most 50 ms plus a twentieth of the time since the first (each parses the
 * map anew, up to its bound: a JIT that writes a large map is read less
 * often); for frames a read did not name (their symbol not written yet),
 * again after 100 ms, 200 ms, ... up to a minute. */
#define JIT_CPU_SHARE		20
#define JIT_BURST_NS		50000000ull
#define JIT_RETRY_FIRST_NS	100000000ull
#define JIT_RETRY_MAX_NS	60000000000ull

/* The first symbol written that ends at or after a, or n. */
static size_t written_at(const struct proc *pr, uint64_t a)
{
	size_t lo = 0, hi = pr->njit_written;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pr->jit_written[mid].end < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool written(const struct proc *pr, uint64_t ip)
{
	size_t i = written_at(pr, ip);

	return i < pr->njit_written && pr->jit_written[i].addr <= ip;
}

/* Kept sorted by address (symbols of one map do not overlap; a later map
 * may: a frame is then named by both, as sp-symbolize picks). */
static void note_written(struct proc *pr, uint64_t addr, uint64_t end)
{
	size_t i = written_at(pr, addr);

	sp_grow(&pr->jit_written, &pr->capjit_written, pr->njit_written + 1,
		sizeof(*pr->jit_written));
	memmove(pr->jit_written + i + 1, pr->jit_written + i,
		(pr->njit_written - i) * sizeof(*pr->jit_written));
	pr->jit_written[i] = (struct sp_perf_jit_range){ addr, end };
	pr->njit_written++;
}

void sp_perf_jit_addr(struct perf *p, struct proc *pr, uint64_t ip)
{
	if (pr->jit_all || sp_u64map_get(&pr->jit_addrs, ip))
		return;
	if (pr->jit_addrs.n >= SP_PERF_JIT_ADDRS_MAX) {
		pr->jit_all = true;
		pr->jit_unnamed = 0;
		sp_u64map_release(&pr->jit_addrs);
		return;
	}
	/* in a symbol written already: named */
	if (written(pr, ip)) {
		sp_u64map_put(&pr->jit_addrs, ip, JIT_NAMED);
		return;
	}
	sp_u64map_put(&pr->jit_addrs, ip, JIT_UNNAMED);
	pr->jit_unnamed++;
	pr->jit_fresh = true;
	if (!pr->jit_since || p->sample_time < pr->jit_since)
		pr->jit_since = p->sample_time;
	if (!pr->jit_queued && !pr->jit_refused) {
		sp_grow(&p->jit_due, &p->cap_jit_due, p->njit_due + 1, sizeof(*p->jit_due));
		p->jit_due[p->njit_due++] = pr->pid;
		pr->jit_queued = true;
	}
}

void sp_perf_jit_forget(struct proc *pr)
{
	sp_u64map_release(&pr->jit_addrs);
	free(pr->jit_written);
	pr->jit_written = NULL;
	pr->njit_written = pr->capjit_written = 0;
	pr->jit_all = false;
	pr->jit_unnamed = 0;
}

/* The addresses of a process's JIT frames no symbol named yet, sorted. */
struct jit_want {
	uint64_t *v;
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void want_of(const struct proc *pr, struct jit_want *w)
{
	size_t it = 0;
	uint64_t k, v;

	w->v = sp_xmalloc((pr->jit_addrs.n + 1) * sizeof(*w->v));
	w->n = 0;
	while (sp_u64map_next(&pr->jit_addrs, &it, &k, &v))
		if (v == JIT_UNNAMED)
			w->v[w->n++] = k;
	qsort(w->v, w->n, sizeof(*w->v), cmp_u64);
}

/* The first frame in [addr, addr + size] (a return address one past the
 * symbol's end is named by its call, at address - 1), or w->n. */
static size_t wanted(const struct jit_want *w, uint64_t addr, uint64_t size, uint64_t *end)
{
	size_t lo = 0, hi = w->n;

	*end = addr + size < addr ? UINT64_MAX : addr + size;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->v[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && w->v[lo] <= *end ? lo : w->n;
}

static int jit_cb(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	void **a = ctx;
	struct perf *p = a[0];
	struct proc *pr = a[1];
	const struct jit_want *w = a[2];
	struct sp_record r = { .kind = SP_REC_JITSYM };
	uint64_t end;
	size_t i;

	if (w) {
		i = wanted(w, addr, size, &end);
		if (i == w->n)
			return 0;
		/* named: a frame new in it later is named already */
		note_written(pr, addr, end);
		for (; i < w->n && w->v[i] <= end; i++) {
			uint64_t *v = sp_u64map_get(&pr->jit_addrs, w->v[i]);

			if (v && *v == JIT_UNNAMED) {
				*v = JIT_NAMED;
				pr->jit_unnamed--;
			}
		}
	}
	r.jitsym.pid = pr->pid;
	r.jitsym.time = pr->jit_since > 1 ? pr->jit_since - 1 : pr->jit_since;
	r.jitsym.addr = addr;
	r.jitsym.size = size;
	r.jitsym.name = sp_writer_strz(p->out->w, name);
	return sp_perf_emit(p, &r);
}

/* The /tmp of pr's mount namespace when it is not ours (an O_PATH
 * descriptor, found inside its root: no link followed), -1 when pr is in
 * ours (or not known), -2 when it is not but its /tmp cannot be had. */
static int foreign_tmp(struct perf *p, struct proc *pr)
{
	struct stat st;
	uint64_t *v;
	int fd;

	if (!pr->mnt_ns || pr->mnt_ns == p->self_mnt_ns || !pr->nspid)
		return -1;
	v = sp_perf_map_get(&p->ns_roots, pr->mnt_ns, 0);
	if (!v)
		return -2;
	fd = sp_proc_root_open((int)(*v - 1), "/tmp", true);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISDIR(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd < 0 ? -2 : fd;
}

/*
 * Read pr's map for the symbols of its frames not named yet (all of them
 * when it had too many to keep). The process, or anyone, may have put
 * anything there: a map not owned by the process's user or root, a link, a
 * FIFO is refused (and not looked at again), a map is read up to a bound
 * (sp_procfs_perfmap()); each such map is named once. uid_at_end: pr->uid
 * is its user as it ended (the kernel's), not to be read from /proc.
 */
static void read_map(struct perf *p, struct proc *pr, bool uid_at_end)
{
	struct sp_perfmap_result res;
	struct jit_want w = { NULL, 0 };
	void *ctx[3] = { p, pr, NULL };
	char who[64] = "", where[64];
	int dirfd, rc;
	/* its user now (from /proc), unless known gone or pr->uid is the
	 * kernel's as it ended */
	uint32_t pid = pr->gone || uid_at_end ? 0 : pr->pid;

	if (!pr->jit_all) {
		want_of(pr, &w);
		ctx[2] = &w;
	}
	dirfd = foreign_tmp(p, pr);
	if (dirfd == -2) {
		if (!pr->jit_refused)
			sp_warn("pid %u: in another mount namespace whose /tmp cannot be reached: "
				"its JIT perf map is not read", pr->pid);
		pr->jit_refused = true;
		free(w.v);
		return;
	}
	if (dirfd >= 0) {
		rc = sp_procfs_perfmap_at(dirfd, pr->nspid, pid, pr->uid, jit_cb, ctx, &res);
		close(dirfd);
		snprintf(where, sizeof(where), "/proc/%u/root/tmp/perf-%u.map", pr->pid,
			 pr->nspid);
	} else {
		rc = sp_procfs_perfmap_at(AT_FDCWD, pr->pid, pid, pr->uid, jit_cb, ctx, &res);
		snprintf(where, sizeof(where), "%s/perf-%u.map", sp_procfs_perfmap_dir, pr->pid);
	}
	free(w.v);
	if (rc == 0 && !res.cut)
		return;
	if (!res.why)
		return;		/* none (yet, or the usual case), or stopped by the output */
	if (pr->jit_refused)
		return;		/* said */
	pr->jit_refused = true;
	if (res.owner != (uid_t)-1 && !strcmp(res.why, "owned by another user") &&
	    res.user != (uid_t)-1)
		snprintf(who, sizeof(who), " (uid %u; the process's user is %u)",
			 (unsigned int)res.owner, (unsigned int)res.user);
	else if (res.owner != (uid_t)-1 && !strcmp(res.why, "owned by another user"))
		snprintf(who, sizeof(who), " (uid %u; the process's user is not known)",
			 (unsigned int)res.owner);
	sp_warn("pid %u: JIT perf map '%s' %s: %s%s", pr->pid, where,
		res.cut ? "read in part" : "not read", res.why, who);
}

/*
 * JIT perf maps outlive their process in /tmp but may be rewritten by the
 * next process with the same pid: taken when the process ends, for what
 * the reads while it ran did not name.
 */
void sp_perf_capture_jit(struct perf *p, struct proc *pr, bool uid_at_end)
{
	/* no frame in code without a file (a kernel thread has no mapping at
	 * all): nothing its map could name */
	if (pr->nvmas && !pr->jit_refused && (pr->jit_all || pr->jit_unnamed))
		read_map(p, pr, uid_at_end);
	sp_perf_jit_forget(pr);	/* read for the last time */
}

/*
 * The processes with JIT frames no symbol named yet: their maps read now,
 * between two batches, so that the symbols come before the samples that
 * need them (untimed records go out first), and not only at the end (a
 * flame graph or a profile names a frame when its sample comes). Again
 * later, for frames still unnamed (a JIT writes a symbol after it runs
 * the code, or buffers its map), less and less often.
 */
void sp_perf_jit_poll(struct perf *p, uint64_t now)
{
	uint64_t t0;
	size_t i, j = 0;

	for (i = 0; i < p->njit_due; i++) {
		struct proc *pr = sp_perf_proc_find(p, p->jit_due[i]);

		if (!pr || !pr->jit_queued)
			continue;
		if (pr->gone || pr->jit_refused || pr->jit_all || !pr->jit_unnamed ||
		    !pr->nvmas) {
			pr->jit_queued = false;
			continue;
		}
		if (pr->jit_read_at &&
		    ((!pr->jit_fresh && now - pr->jit_read_at < pr->jit_retry) ||
		     pr->jit_read_ns > JIT_BURST_NS + (now - pr->jit_first_read) / JIT_CPU_SHARE)) {
			p->jit_due[j++] = p->jit_due[i];	/* not yet */
			continue;
		}
		if (!pr->jit_first_read)
			pr->jit_first_read = now;
		t0 = sp_now_mono_ns();
		read_map(p, pr, false);
		pr->jit_read_ns += sp_now_mono_ns() - t0;
		if (!pr->jit_unnamed)
			pr->jit_since = 0;
		pr->jit_read_at = now;
		pr->jit_retry = pr->jit_fresh || !pr->jit_retry ? JIT_RETRY_FIRST_NS :
				pr->jit_retry >= JIT_RETRY_MAX_NS / 2 ? JIT_RETRY_MAX_NS :
				2 * pr->jit_retry;
		pr->jit_fresh = false;
		if (pr->jit_unnamed && !pr->jit_refused)
			p->jit_due[j++] = p->jit_due[i];	/* frames still unnamed */
		else
			pr->jit_queued = false;
	}
	p->njit_due = j;
}

static uint64_t ns_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

uint64_t sp_perf_self_mnt_ns(struct perf *p)
{
	if (!p->self_mnt_ns)
		p->self_mnt_ns = ns_of("/proc/self/ns/mnt");
	return p->self_mnt_ns;
}

void sp_perf_jit_note(struct perf *p, struct proc *pr, const struct sp_process *rec)
{
	char path[64];
	int fd;

	if (!rec->mnt_ns)
		return;		/* no identity: the host's /tmp, as before */
	pr->nspid = rec->nspid;
	pr->mnt_ns = rec->mnt_ns;
	if (pr->gone)
		return;		/* its root cannot be had any more */
	if (pr->mnt_ns == sp_perf_self_mnt_ns(p) || sp_perf_map_get(&p->ns_roots, pr->mnt_ns, 0))
		return;
	/* Its root, then its namespace once more: the pid was not reused in
	 * between. */
	fd = sp_proc_root_dir(pr->pid);
	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pr->pid);
	if (fd >= 0 && ns_of(path) != pr->mnt_ns) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		sp_perf_map_put(&p->ns_roots, pr->mnt_ns, 0, (uint64_t)fd + 1);
}

void sp_perf_jit_release(struct perf *p)
{
	size_t i = 0;
	uint64_t v;

	while (sp_perf_map_next(&p->ns_roots, &i, &v))
		close((int)(v - 1));
	sp_perf_map_free(&p->ns_roots);
	free(p->jit_due);
	p->jit_due = NULL;
	p->njit_due = p->cap_jit_due = 0;
}
