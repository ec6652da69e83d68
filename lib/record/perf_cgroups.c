// SPDX-License-Identifier: MIT
/*
 * -a --cgroup/--container following what appears while recording
 * (docs/containers.md): a cgroup directory found after the start, a
 * container's when its first process runs, gets its per-CPU events, the
 * interpreted-frames program on them, and its running processes read from
 * /proc, as the ones found at the start got. The BPF events source adds
 * its id to its own filter (bpf_events.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "cgroup_filter.h"
#include "perf_sourceP.h"
#include "procfs.h"
#include "sp.h"

/* Whether pid's cgroup is directory i of f or below it. */
static bool in_dir(const struct sp_cgroup_filter *f, unsigned int i, uint32_t pid,
		   struct sp_proc_identity *id)
{
	size_t n = strlen(f->path[i]);

	return sp_procfs_identity(pid, id) == 0 && id->cgroup[0] &&
	       !strncmp(id->cgroup, f->path[i], n) && (!id->cgroup[n] || id->cgroup[n] == '/');
}

static void scan_dir(struct perf *p, unsigned int i)
{
	struct sp_proc_identity *id = sp_xcalloc(1, sizeof(*id));
	uint32_t *pids = NULL;
	size_t npids = 0, k;

	if (sp_procfs_pids(&pids, &npids) == 0)
		for (k = 0; k < npids; k++)
			if (!sp_perf_proc_find(p, pids[k]) && in_dir(p->o.cgroups, i, pids[k], id))
				sp_perf_scan_process(p, pids[k]);
	free(pids);
	free(id);
}

/* Processes a runtime moved into a followed cgroup (rather than forked
 * there): read from /proc as they move, or, when gone already (a
 * runtime's helpers live milliseconds), defined by what the kernel told
 * of the move; else their samples would have no process. */
static void scan_moved(struct perf *p, struct sp_cgroup_filter *f)
{
	const struct sp_cgroup_moved *m;
	unsigned int i;

	/* one known only as a parent is not defined yet: scanning says */
	for (i = 0; i < f->nmoved; i++) {
		m = &f->moved[i];
		if (sp_perf_scan_process(p, m->pid))
			sp_perf_define_gone(p, m->pid, m->ppid, m->comm, sp_now_mono_ns());
	}
	f->nmoved = 0;
}

void sp_perf_cgroups_follow(struct perf *p)
{
	struct sp_cgroup_filter *f = p->o.cgroups;
	bool fresh[SP_CGROUP_FILTER_DIRS] = { false };
	size_t nfds;
	unsigned int i;

	if (!p->cgroup_mode || !sp_cgroup_filter_following(f))
		return;
	if (!p->cgroups_watched && sp_cgroup_filter_fd(f) >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		/* a new cgroup wakes the recording at once: its container's
		 * first program runs soon after */
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, sp_cgroup_filter_fd(f), &ev))
			sp_warn("epoll_ctl: new cgroups: %s", strerror(errno));
		p->cgroups_watched = true;
	}
	sp_cgroup_filter_follow(f, sp_now_mono_ns());
	if (f->gen == p->cg_gen) {
		scan_moved(p, f);
		return;
	}
	p->cg_gen = f->gen;
	/* Gone first: a slot freed may be taken again in the same pass. */
	for (i = 0; i < SP_CGROUP_FILTER_DIRS; i++)
		if (p->cg_open_id[i] && p->cg_open_id[i] != f->id[i]) {
			sp_perf_close_cgroup(p, i);
		}
	nfds = p->nfds;
	for (i = 0; i < f->n; i++)
		if (f->id[i] && p->cg_open_id[i] != f->id[i]) {
			sp_perf_open_cgroup(p, i);	/* said when it failed */
			fresh[i] = true;
		}
	if (p->interp && p->nfds > nfds &&
	    sp_interp_attach(p->interp, p->fds + nfds, p->nfds - nfds)) {
		sp_interp_free(p->interp);
		p->interp = NULL;
	}
	/* Its processes that run already: the events are open, so nothing they
	 * do from now on is missed. */
	for (i = 0; i < f->n; i++)
		if (fresh[i])
			scan_dir(p, i);
	scan_moved(p, f);
}

void sp_perf_cgroups_finish(struct perf *p)
{
	if (p->cgroup_mode && p->o.cgroups)
		sp_cgroup_filter_release(p->o.cgroups);
}
