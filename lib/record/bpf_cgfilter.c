// SPDX-License-Identifier: MIT
/*
 * The kernel side of --off-cpu's cgroup filter (bpf_cgfilter.h): our own
 * bpf/cgfilter.bpf.c, loaded when the recording filters cgroups, and the
 * maps of whichever program ends on the context-switch events, filled
 * with the directories' descriptors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "bpf_print.h"
#include "bpf_cgfilter.h"
#include "cgfilter.h"
#include "cgfilter.skel.h"
#include "cgroup_filter.h"
#include "interpP.h"
#include "procfs.h"
#include "sp.h"

_Static_assert(SP_BPF_CGFILTER_MAX == SP_CGROUP_FILTER_DIRS,
	       "the BPF cgroup array holds every directory of the filter");

struct sp_cgfilter_bpf {
	struct sp_cgfilter *skel;
	struct sp_cgfilter_maps m;	/* in use once started */
	bool applied;
	unsigned int gen;		/* f's gen m.allowed agrees with */
	bool synced;			/* m.allowed was filled once */
	unsigned int slots;		/* filled in m.allowed */
};

struct sp_cgfilter_bpf *sp_cgfilter_bpf_new(int probe_fd)
{
	bool was = sp_bpf_print_quiet(true);
	const char *env = getenv("SP_OFFCPU_CGROUPS");
	struct sp_cgfilter_bpf *k;
	int err = 0;

	/* the fallback on purpose, to compare (scripts/bench/offcpu-cgroup) */
	if (env && !strcmp(env, "sample")) {
		sp_bpf_print_quiet(was);
		sp_info("off-cpu: SP_OFFCPU_CGROUPS=sample: the other cgroups' switch-outs are "
			"left out in user space");
		return NULL;
	}
	k = sp_xcalloc(1, sizeof(*k));
	k->skel = sp_cgfilter__open_and_load();
	if (!k->skel)
		err = errno ? errno : EINVAL;
	sp_bpf_print_quiet(was);
	if (err) {
		sp_info("off-cpu: cannot load the cgroup filter's BPF program: %s; the other "
			"cgroups' switch-outs are left out in user space", strerror(err));
		goto fail;
	}
	if (ioctl(probe_fd, PERF_EVENT_IOC_SET_BPF, bpf_program__fd(k->skel->progs.cg_switch))) {
		sp_info("off-cpu: a BPF program cannot be attached to a context-switch event: %s; "
			"the other cgroups' switch-outs are left out in user space",
			strerror(errno));
		goto fail;
	}
	/* the probe's slot is freed with the probe, which is closed next */
	return k;
fail:
	sp_cgfilter_bpf_free(k);
	return NULL;
}

struct sp_cgfilter_bpf *sp_cgfilter_bpf_self(void)
{
	return sp_xcalloc(1, sizeof(struct sp_cgfilter_bpf));
}

/* Our own program, for a filter made by sp_cgfilter_bpf_self(): loaded
 * only when the interpreted-stack program is not on the events. */
static int own_load(struct sp_cgfilter_bpf *k)
{
	bool was = sp_bpf_print_quiet(true);
	int err = 0;

	if (!k->skel && !(k->skel = sp_cgfilter__open_and_load()))
		err = errno ? errno : EINVAL;
	sp_bpf_print_quiet(was);
	errno = err;
	return err ? -1 : 0;
}

/* Our own program's maps. */
static void own_maps(struct sp_cgfilter_bpf *k)
{
	k->m.allowed = bpf_map__fd(k->skel->maps.cg_allowed);
	k->m.dropped = bpf_map__fd(k->skel->maps.cg_dropped);
	k->m.on = &k->skel->bss->cg_on;
	k->m.self = &k->skel->bss->cg_self;
}

int sp_cgfilter_bpf_start(struct sp_cgfilter_bpf *k, const struct sp_cgroup_filter *f,
		      struct sp_interpreters *ip, const int *fds, size_t nfds)
{
	/* without cgroups the filter only spares the recorder its own
	 * samples: a failure is for -v */
	void (*say)(const char *, ...) = f ? sp_warn : sp_info;
	const char *lost = f ? "the other cgroups' switch-outs are left out in user space"
			     : "sp-record's own switch-outs are left out in user space";
	size_t i;

	if (!ip || sp_interp_offcpu_cgroups(ip, &k->m)) {
		if (ip) {
			say("off-cpu: the interpreted-stack program on the context-switch "
			    "events cannot test cgroups; %s", lost);
			return -1;
		}
		if (own_load(k)) {
			say("off-cpu: cannot load the switch filter's BPF program: %s; %s",
			    strerror(errno), lost);
			return -1;
		}
		for (i = 0; i < nfds; i++)
			if (ioctl(fds[i], PERF_EVENT_IOC_SET_BPF,
				  bpf_program__fd(k->skel->progs.cg_switch))) {
				say("off-cpu: cannot attach the switch filter to the "
				    "context-switch events: %s; %s", strerror(errno), lost);
				return -1;
			}
		own_maps(k);
	} else {
		/* the interpreted-stack program tests: ours is not needed */
		sp_cgfilter__destroy(k->skel);
		k->skel = NULL;
	}
	k->applied = true;
	/* the kernel compares the host's pids: in a pid namespace of our own
	 * getpid() is another process's there; perf_offcpu.c leaves ours
	 * out then (perf gives our namespace's pids) */
	*k->m.self = sp_procfs_host_pidns() ? (uint32_t)getpid() : 0;
	if (!f && !*k->m.self) {
		sp_info("off-cpu: not in the host's pid namespace: sp-record's own switch-outs "
			"are left out as they are read");
		return 0;
	}
	if (!f) {
		sp_info("off-cpu: sp-record's own switch-outs are left out in the kernel, by %s",
			k->skel ? "the switch filter's program" : "the interpreted-stack program");
		return 0;
	}
	sp_info("off-cpu: the other cgroups' switch-outs are left out in the kernel, by %s",
		k->skel ? "the cgroup filter's program" : "the interpreted-stack program");
	sp_cgfilter_bpf_sync(k, f);
	/* From here on an empty array drops everything: a --cgroup or
	 * --container not found yet records nothing until it is. */
	*k->m.on = 1;
	return 0;
}

void sp_cgfilter_bpf_sync(struct sp_cgfilter_bpf *k, const struct sp_cgroup_filter *f)
{
	unsigned int i, n = 0;
	uint32_t fd;

	if (!k || !f || !k->applied || (k->synced && k->gen == f->gen))
		return;
	k->synced = true;
	k->gen = f->gen;
	/* Written again from slot 0, the directories in f's order: a slot left
	 * empty would end the kernel's test early. A directory still followed
	 * only moves down (to where one before it was), so it is never
	 * missing while this runs. */
	for (i = 0; i < f->n; i++) {
		if (!f->id[i])
			continue;
		fd = (uint32_t)f->fd[i];
		if (bpf_map_update_elem(k->m.allowed, &n, &fd, BPF_ANY)) {
			sp_warn("off-cpu: cgroup '%s' cannot be added to the kernel's filter: %s; "
				"its switch-outs are left out", f->path[i], strerror(errno));
			continue;
		}
		n++;
	}
	for (i = n; i < k->slots; i++)
		bpf_map_delete_elem(k->m.allowed, &i);
	k->slots = n;
}

int sp_cgfilter_bpf_applied(const struct sp_cgfilter_bpf *k)
{
	return k && k->applied;
}

uint64_t sp_cgfilter_bpf_dropped(const struct sp_cgfilter_bpf *k)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	uint64_t sum = 0, *v;
	uint32_t zero = 0;

	if (!k || !k->applied || ncpu <= 0)
		return 0;
	v = sp_xcalloc((size_t)ncpu, sizeof(*v));
	if (!bpf_map_lookup_elem(k->m.dropped, &zero, v))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

void sp_cgfilter_bpf_free(struct sp_cgfilter_bpf *k)
{
	if (!k)
		return;
	sp_cgfilter__destroy(k->skel);
	free(k);
}
