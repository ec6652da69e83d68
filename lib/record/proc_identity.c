// SPDX-License-Identifier: MIT
/*
 * A process record's identity, from what the kernel said at its fork or
 * exec (bpf_ident.c) or else /proc (procfs.h), and its cgroup path; a
 * thread record's tid in its namespace, from the same two sources
 * (cgroup.h). The cgroup paths of the kernel's ids are kept, bounded, for
 * the next process that starts in the same cgroup. The start time read is checked against the record's time so
 * that a pid reused before its record was written lends it nothing.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "cgroup.h"
#include "ident.h"
#include "cgroup_filter.h"
#include "proc_identity.h"
#include "procfs.h"
#include "sp.h"

#define NS_PER_S 1000000000ull
#define SLACK_NS 1000000ull	/* the two clocks are read one after the other */

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC now, the kernel's (not our time
 * namespace's): the time suspended. */
static uint64_t suspended_ns(void)
{
	struct timespec b, m;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_BOOTTIME, &b);
	return ((uint64_t)b.tv_sec - (uint64_t)m.tv_sec) * NS_PER_S +
	       (uint64_t)b.tv_nsec - (uint64_t)m.tv_nsec -
	       (uint64_t)(sp_timens_offset_ns(true) - sp_timens_offset_ns(false));
}

/*
 * A process gone before its record was written is common (a shell script's
 * short commands) and not a fault: said with -v only, and flagged in its
 * record. A pid already reused is said once.
 */
static void none(uint32_t pid, struct sp_process *rec, bool reused)
{
	static bool warned;

	rec->flags |= SP_PROC_NO_IDENTITY;
	if (!reused) {
		sp_info("pid %u: gone before its namespaces and cgroup were read", pid);
		return;
	}
	if (!warned)
		sp_warn("pid %u: reused before its namespaces and cgroup were read; its record "
			"has none (said once, docs/containers.md)", pid);
	warned = true;
}

int sp_cgroup_paths_get(struct sp_cgroup_paths *c, uint64_t id, char *buf, size_t size)
{
	uint64_t *v = sp_u64map_get(&c->idx, id);
	const char *p;
	size_t len;

	if (v) {
		p = (const char *)(uintptr_t)*v;
		len = strlen(p);
		if (len >= size)
			return -1;
		memcpy(buf, p, len + 1);
		return 0;
	}
	if (sp_cgroup_path_by_id(id, buf, size))
		return -1;	/* not kept: it may come (a container starting) */
	if (c->idx.n >= c->max) {
		sp_u64map_release(&c->idx);
		sp_arena_reset(&c->strs);
	}
	p = sp_arena_copy(&c->strs, buf, strlen(buf));
	sp_u64map_put(&c->idx, id, (uint64_t)(uintptr_t)p);
	return 0;
}

void sp_cgroup_paths_release(struct sp_cgroup_paths *c)
{
	sp_u64map_release(&c->idx);
	sp_arena_release(&c->strs);
}

/* The cgroup path and the container it names. */
static void put_cgroup(struct sp_writer *w, const char *cgroup, struct sp_process *rec)
{
	struct sp_cgroup_owner own;

	if (!cgroup[0])
		return;
	rec->cgroup = sp_writer_strz(w, cgroup);
	if (sp_cgroup_owner(cgroup, strlen(cgroup), &own)) {
		rec->runtime = sp_writer_strz(w, own.runtime);
		rec->container = own.id[0] ? sp_writer_strz(w, own.id) : 0;
		rec->pod = own.pod[0] ? sp_writer_strz(w, own.pod) : 0;
	}
}

/*
 * What the kernel said at pid's fork or exec: the newest process with that
 * pid, so one started after time is a reuse. Its start is cut to the clock
 * tick as /proc gives it, so both sources agree on a process. 1 filled, 0
 * no entry, -1 a reuse.
 */
static int from_kernel(struct sp_writer *w, struct sp_ident_bpf *kb, uint32_t pid,
		       uint64_t time, uint64_t tick, struct sp_process *rec)
{
	/* the perf source's thread only: one for the recording */
	static struct sp_cgroup_paths paths = SP_CGROUP_PATHS_INIT(SP_PROC_CGROUP_PATHS);
	char cgroup[SP_PROC_CGROUP_MAX + 1];
	struct sp_bpf_ident k;

	if (sp_ident_bpf_lookup(kb, pid, &k) || !k.start_boot_ns)
		return 0;
	if (time && k.start_boot_ns > time + suspended_ns() + SLACK_NS)
		return -1;
	rec->start_boot_ns = k.start_boot_ns - k.start_boot_ns % tick;
	rec->nspid = k.nspid;
	rec->pid_ns = k.pid_ns;
	rec->mnt_ns = k.mnt_ns;
	rec->net_ns = k.net_ns;
	rec->cgroup_ns = k.cgroup_ns;
	/* A cgroup removed since (a finished `podman exec`'s) has no path,
	 * unless a process before this one had it read. */
	if (sp_cgroup_paths_get(&paths, k.cgroup_id, cgroup, sizeof(cgroup)) == 0)
		put_cgroup(w, cgroup, rec);
	return 1;
}

int sp_proc_identity_fill(struct sp_writer *w, struct sp_ident_bpf *kb, uint32_t pid,
			  uint64_t time, struct sp_process *rec)
{
	struct sp_proc_identity id;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t start, tick = hz > 0 ? NS_PER_S / (uint64_t)hz : 1;
	int k = from_kernel(w, kb, pid, time, tick, rec);

	if (k > 0)
		return 0;
	if (k < 0) {
		none(pid, rec, true);
		return -1;
	}
	if (sp_procfs_identity(pid, &id) || !id.start_ticks || hz <= 0) {
		none(pid, rec, false);
		return -1;
	}
	/* Ticks are cut down, never up: a start after time is another process. */
	start = id.start_ticks * tick;
	/* /proc shows it on our time namespace's boot clock */
	start -= (uint64_t)sp_timens_offset_ns(true);
	if (time && start > time + suspended_ns() + SLACK_NS) {
		none(pid, rec, true);
		return -1;
	}
	rec->start_boot_ns = start;
	rec->nspid = id.nspid;
	rec->pid_ns = id.ns[SP_NS_PID];
	rec->mnt_ns = id.ns[SP_NS_MNT];
	rec->net_ns = id.ns[SP_NS_NET];
	rec->cgroup_ns = id.ns[SP_NS_CGROUP];
	put_cgroup(w, id.cgroup, rec);
	return 0;
}

/*
 * The kernel's entry for pid as of time: 1 found, 0 none (or, at_exec,
 * only its fork's: an exec's record read before the kernel's exec hook
 * ran, as the ring is read while the exec goes on), -1 of a process
 * started after time (a reuse).
 */
static int kernel_entry(struct sp_ident_bpf *kb, uint32_t pid, uint64_t time, bool at_exec,
			struct sp_bpf_ident *k)
{
	if (sp_ident_bpf_lookup(kb, pid, k) || !k->start_boot_ns || (at_exec && !k->from_exec))
		return 0;
	return time && k->start_boot_ns > time + suspended_ns() + SLACK_NS ? -1 : 1;
}

int sp_proc_mnt_ns(struct sp_ident_bpf *kb, uint32_t pid, uint64_t time, bool at_exec,
		   uint64_t *mnt_ns)
{
	struct sp_bpf_ident k;

	if (kernel_entry(kb, pid, time, at_exec, &k) <= 0 || !k.mnt_ns)
		return -1;
	*mnt_ns = k.mnt_ns;
	return 0;
}

int sp_proc_owner(struct sp_ident_bpf *kb, uint32_t pid, uint64_t time, bool at_exec,
		  bool read_proc, uint32_t *ppid, uid_t *uid)
{
	struct sp_bpf_ident k;
	uint32_t tgid;
	int found = kernel_entry(kb, pid, time, at_exec, &k);

	/* (a fork's entry at an exec: the user before a set-user-ID
	 * program; /proc has the new one) */
	if (found) {
		if (found < 0) {
			errno = ESRCH;
			return -1;
		}
		*ppid = k.ppid;
		*uid = (uid_t)k.fsuid;
		return 0;
	}
	if (!read_proc) {
		errno = ENOENT;
		return -1;
	}
	if (sp_procfs_status(pid, &tgid, ppid))
		return -1;
	return sp_procfs_uid(pid, uid);
}

uint32_t sp_thread_nstid(struct sp_ident_bpf *kb, uint32_t pid, uint32_t tid, uint64_t time,
			 bool read_proc)
{
	struct sp_bpf_thread k;
	uint32_t nr;

	/* An entry of another process, or of a thread made after time, is
	 * of a tid reused: /proc's thread (if any) is that one too. */
	if (sp_ident_bpf_thread(kb, tid, &k) == 0 && k.nstid) {
		if (k.tgid != pid || (time && k.start_boot_ns > time + suspended_ns() + SLACK_NS))
			return 0;
		return k.nstid;
	}
	return read_proc && sp_procfs_thread_nstid(pid, tid, &nr) == 0 ? nr : 0;
}
