// SPDX-License-Identifier: MIT
/*
 * A process record's identity, from /proc (procfs.h) and its cgroup path
 * (cgroup.h). The start time read is checked against the record's time so
 * that a pid reused before its record was written lends it nothing.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "proc_identity.h"
#include "procfs.h"
#include "sp.h"

#define NS_PER_S 1000000000ull
#define SLACK_NS 1000000ull	/* the two clocks are read one after the other */

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC now: the time suspended. */
static uint64_t suspended_ns(void)
{
	struct timespec b, m;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_BOOTTIME, &b);
	return ((uint64_t)b.tv_sec - (uint64_t)m.tv_sec) * NS_PER_S +
	       (uint64_t)b.tv_nsec - (uint64_t)m.tv_nsec;
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

int sp_proc_identity_fill(struct sp_writer *w, uint32_t pid, uint64_t time,
			  struct sp_process *rec)
{
	struct sp_proc_identity id;
	struct sp_cgroup_owner own;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t start;

	if (sp_procfs_identity(pid, &id) || !id.start_ticks || hz <= 0) {
		none(pid, rec, false);
		return -1;
	}
	/* Ticks are cut down, never up: a start after time is another process. */
	start = id.start_ticks * (NS_PER_S / (uint64_t)hz);
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
	if (!id.cgroup[0])
		return 0;
	rec->cgroup = sp_writer_strz(w, id.cgroup);
	if (sp_cgroup_owner(id.cgroup, strlen(id.cgroup), &own)) {
		rec->runtime = sp_writer_strz(w, own.runtime);
		rec->container = own.id[0] ? sp_writer_strz(w, own.id) : 0;
		rec->pod = own.pod[0] ? sp_writer_strz(w, own.pod) : 0;
	}
	return 0;
}
