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

void sp_perf_jit_addr(struct proc *pr, uint64_t ip)
{
	if (pr->jit_all || sp_u64map_get(&pr->jit_addrs, ip))
		return;
	if (pr->jit_addrs.n >= SP_PERF_JIT_ADDRS_MAX) {
		pr->jit_all = true;
		sp_u64map_release(&pr->jit_addrs);
		return;
	}
	sp_u64map_put(&pr->jit_addrs, ip, 1);
}

void sp_perf_jit_forget(struct proc *pr)
{
	sp_u64map_release(&pr->jit_addrs);
	pr->jit_all = false;
}

/* The addresses of a process's JIT frames, sorted. */
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
	uint64_t k;

	w->v = sp_xmalloc((pr->jit_addrs.n + 1) * sizeof(*w->v));
	w->n = 0;
	while (sp_u64map_next(&pr->jit_addrs, &it, &k, NULL))
		w->v[w->n++] = k;
	qsort(w->v, w->n, sizeof(*w->v), cmp_u64);
}

/* Whether a frame lies in [addr, addr + size]: a return address one past
 * the symbol's end is named by its call, at address - 1. */
static bool wanted(const struct jit_want *w, uint64_t addr, uint64_t size)
{
	size_t lo = 0, hi = w->n;
	uint64_t end = addr + size < addr ? UINT64_MAX : addr + size;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->v[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && w->v[lo] <= end;
}

static int jit_cb(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	void **a = ctx;
	struct perf *p = a[0];
	struct proc *pr = a[1];
	const struct jit_want *w = a[2];
	struct sp_record r = { .kind = SP_REC_JITSYM };

	if (w && !wanted(w, addr, size))
		return 0;
	r.jitsym.pid = pr->pid;
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
 * JIT perf maps outlive their process in /tmp but may be rewritten by the
 * next process with the same pid: take them when the process ends. The
 * process, or anyone, may have put anything there: a map not owned by the
 * process's user or root, a link, a FIFO is refused, and a map is read up
 * to a bound (sp_procfs_perfmap()); each such map is named once.
 */
void sp_perf_capture_jit(struct perf *p, struct proc *pr, bool uid_at_end)
{
	struct sp_perfmap_result res;
	struct jit_want w = { NULL, 0 };
	void *ctx[3] = { p, pr, NULL };
	char who[64] = "", where[64];
	int dirfd, rc;
	/* its user now (from /proc), unless known gone or pr->uid is the
	 * kernel's as it ended */
	uint32_t pid = pr->gone || uid_at_end ? 0 : pr->pid;

	/* no frame in code without a file (a kernel thread has no mapping at
	 * all): nothing its map could name */
	if (!pr->nvmas || (!pr->jit_all && !pr->jit_addrs.n))
		return;
	if (!pr->jit_all) {
		want_of(pr, &w);
		ctx[2] = &w;
	}
	sp_perf_jit_forget(pr);	/* read once */
	dirfd = foreign_tmp(p, pr);
	if (dirfd == -2) {
		sp_warn("pid %u: in another mount namespace whose /tmp cannot be reached: its JIT "
			"perf map is not read", pr->pid);
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
		return;		/* none (the usual case), or stopped by the output */
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
}
