// SPDX-License-Identifier: MIT
/*
 * The perf source's JIT symbols (perf_sourceP.h): the perf map a JIT
 * writes to /tmp/perf-PID.map, read when the process ends (or when the
 * recording does) and written as jitsym records.
 */
#include <stdio.h>
#include <string.h>

#include "perf_sourceP.h"
#include "procfs.h"
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

/*
 * JIT perf maps outlive their process in /tmp but may be rewritten by the
 * next process with the same pid: take them when the process ends. The
 * process, or anyone, may have put anything there: a map not owned by the
 * process's user or root, a link, a FIFO is refused, and a map is read up
 * to a bound (sp_procfs_perfmap()); each such map is named once.
 */
void sp_perf_capture_jit(struct perf *p, struct proc *pr)
{
	struct sp_perfmap_result res;
	void *ctx[2] = { p, pr };
	char who[64] = "";

	if (sp_procfs_perfmap(pr->pid, pr->uid, jit_cb, ctx, &res) == 0 && !res.cut)
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
	sp_warn("pid %u: JIT perf map '%s/perf-%u.map' %s: %s%s", pr->pid, sp_procfs_perfmap_dir,
		pr->pid, res.cut ? "read in part" : "not read", res.why, who);
}
