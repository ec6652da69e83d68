// SPDX-License-Identifier: MIT
/*
 * The perf source's JIT symbols (perf_sourceP.h): the perf map a JIT
 * writes to /tmp/perf-PID.map, read when the process ends (or when the
 * recording does) and written as jitsym records.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf_sourceP.h"
#include "procfs.h"
#include "procroot.h"
#include "sp.h"

static int jit_cb(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	void **a = ctx;
	struct perf *p = a[0];
	struct proc *pr = a[1];
	struct sp_record r = { .kind = SP_REC_JITSYM };

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
	void *ctx[2] = { p, pr };
	char who[64] = "", where[64];
	int dirfd = foreign_tmp(p, pr), rc;
	/* its user now (from /proc), unless known gone or pr->uid is the
	 * kernel's as it ended */
	uint32_t pid = pr->gone || uid_at_end ? 0 : pr->pid;

	/* no mapping at all (a kernel thread): no code of its own to name */
	if (!pr->nvmas) {
		if (dirfd >= 0)
			close(dirfd);
		return;
	}
	if (dirfd == -2) {
		sp_warn("pid %u: in another mount namespace whose /tmp cannot be reached: its JIT "
			"perf map is not read", pr->pid);
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
