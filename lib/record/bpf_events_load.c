// SPDX-License-Identifier: MIT
/*
 * Loading and attaching the "events" source (bpf_eventsP.h): bpf/events.bpf.c
 * with the best attach strategy the kernel allows (tp_btf, else raw_tp,
 * else classic tracepoints, mounting tracefs for those when it is
 * missing), only the programs the asked-for kinds need, the setid calls'
 * entry from their own tracepoints where they can be had; then its map of
 * recorded processes seeded with the target's process tree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_print.h"
#include "bpf_eventsP.h"
#include "tracefs.h"
#include "close_apart.h"
#include "procfs.h"
#include "sp.h"
#include "events.skel.h"

/* An attach strategy: its name, and the suffix of its programs' names. */
struct prog_set {
	const char *how;
	const char *suffix;
};

static const struct prog_set strategies[] = {
	{ "tp_btf", "btf" }, { "raw_tp", "raw" }, { "tracepoint", "tp" },
};

/* Programs of a strategy, by role. */
enum { P_ENTER, P_EXIT, P_FORK, P_EXEC, P_PEXIT, P_CAP, P_NUM };

static const char *const prog_roles[P_NUM] = {
	"on_sys_enter_", "on_sys_exit_", "on_fork_", "on_exec_", "on_exit_", "on_capable_",
};

/* tracefs, which libbpf needs to attach classic tracepoints: held (mounted
 * when missing, tracefs.h) until the programs are attached. false, and why
 * in tried under what, when it cannot be had. */
static bool need_tracefs(struct ev_priv *p, const char *what)
{
	if (p->tracefs_held)
		return true;
	if (sp_tracefs_hold(&p->mounted_tracefs)) {
		p->tracefs_held = true;
		return true;
	}
	sp_buf_printf(&p->tried, " %s(cannot mount tracefs: %s)", what,
		strerror(errno));
	return false;
}

/* Can the setid calls' own entry tracepoints (syscalls:sys_enter_setuid
 * ...) be used? They need tracefs and a kernel with syscall events. */
static bool setid_tps_ready(struct ev_priv *p)
{
	if (!need_tracefs(p, "setid-tracepoints"))
		return false;
	if (!access("/sys/kernel/tracing/events/syscalls/sys_enter_setuid", F_OK) ||
	    !access("/sys/kernel/debug/tracing/events/syscalls/sys_enter_setuid", F_OK))
		return true;
	sp_buf_printf(&p->tried, " setid-tracepoints(no syscall events)");
	return false;
}

/* Can the system calls' own exit tracepoints be used (tracefs, a kernel
 * with syscall events)? */
static bool syscall_tps_ready(struct ev_priv *p)
{
	if (!need_tracefs(p, "sys-exit-tracepoints"))
		return false;
	if (!access("/sys/kernel/tracing/events/syscalls/sys_exit_openat", F_OK) ||
	    !access("/sys/kernel/debug/tracing/events/syscalls/sys_exit_openat", F_OK))
		return true;
	sp_buf_printf(&p->tried, " sys-exit-tracepoints(no syscall events)");
	return false;
}

static void detach_setid(struct ev_priv *p)
{
	while (p->nsetid_links > 0)
		bpf_link__destroy(p->setid_links[--p->nsetid_links]);
}

/* on_setid_tp on the entry tracepoint of each setid call. 0, or -errno
 * (and nothing attached). */
static int attach_setid(struct ev_priv *p, struct bpf_program *prog)
{
	unsigned int i;
	int err;

	for (i = 0; i < sp_ev_nsys_kinds; i++) {
		struct bpf_link *link;
		char name[64];

		if (sp_ev_sys_kinds[i].kind != SP_EV_SETID_CHANGE)
			continue;
		snprintf(name, sizeof(name), "sys_enter_%s", sp_ev_sys_kinds[i].name);
		link = bpf_program__attach_tracepoint(prog, "syscalls", name);
		if (!link || p->nsetid_links == (int)(sizeof(p->setid_links) /
						       sizeof(p->setid_links[0]))) {
			err = link ? -E2BIG : -errno;
			bpf_link__destroy(link);
			detach_setid(p);
			return err;
		}
		p->setid_links[p->nsetid_links++] = link;
	}
	return 0;
}

/* Each link's close waits for RCU grace periods (a perf event on a
 * tracepoint), one after the other: closed apart (close_apart.h). */
static void detach_exit(struct ev_priv *p)
{
	sp_bpf_links_destroy(p->exit_links, (size_t)p->nexit_links);
	p->nexit_links = 0;
}

/* on_sys_exit_call on the exit tracepoint of each system call asked for,
 * instead of one program on sys_exit for every call of the machine. 0, or
 * -errno (and nothing attached). */
static int attach_exit(struct ev_priv *p, struct bpf_program *prog)
{
	unsigned int i;
	int err;

	for (i = 0; i < sp_ev_nsys_kinds; i++) {
		struct bpf_link *link;
		char name[64];

		if (!(p->o.kinds & SP_EV_BIT(sp_ev_sys_kinds[i].kind)))
			continue;
		snprintf(name, sizeof(name), "sys_exit_%s", sp_ev_sys_kinds[i].name);
		link = bpf_program__attach_tracepoint(prog, "syscalls", name);
		if (!link || p->nexit_links == (int)(sizeof(p->exit_links) /
						      sizeof(p->exit_links[0]))) {
			err = link ? -E2BIG : -errno;
			bpf_link__destroy(link);
			detach_exit(p);
			return err;
		}
		p->exit_links[p->nexit_links++] = link;
	}
	return 0;
}

static struct bpf_program *role_prog(struct sp_events *skel, int role, const char *suffix)
{
	char name[64];

	snprintf(name, sizeof(name), "%s%s", prog_roles[role], suffix);
	return bpf_object__find_program_by_name(skel->obj, name);
}

/* Does system call i need anything at entry? With tp_btf and raw_tp only
 * the setid calls do (the ids before): the others' arguments, DNS payloads
 * included, are read from the registers at exit. */
static bool needs_entry(unsigned int i, bool tp)
{
	return tp || sp_ev_sys_kinds[i].kind == SP_EV_SETID_CHANGE;
}

/* Programs not needed for the kinds asked: every system call of the machine
 * passes sys_enter/sys_exit, so each is attached only when a system call
 * event asked for needs it. sys_exit: all of them, but with classic
 * tracepoints DNS (looked at on entry, where the arguments are); sys_enter:
 * with classic tracepoints, or for setid calls unless their own
 * tracepoints do (setid_tp). fork and exit always are: they keep the
 * process map. */
static bool skip_role(const struct ev_priv *p, int role, bool want_cap, bool tp, bool setid_tp)
{
	unsigned int i;

	switch (role) {
	case P_CAP:
		return !want_cap;
	case P_EXEC:
		return !(p->o.kinds & SP_EV_BIT(SP_EV_PROC_EXEC));
	case P_ENTER:
	case P_EXIT:
		for (i = 0; i < sp_ev_nsys_kinds; i++)
			if ((p->o.kinds & SP_EV_BIT(sp_ev_sys_kinds[i].kind)) &&
			    (role == P_EXIT ? !(tp && sp_ev_sys_kinds[i].dns) :
			     needs_entry(i, tp) && (tp || !setid_tp)))
				return false;
		return true;
	}
	return false;
}

/* Open, configure, load and attach one strategy; setid_tp: the setid
 * calls' entry from their own tracepoints (p->setid_err says when that
 * failed). 0, or -errno. */
static int try_strategy(struct ev_priv *p, const struct prog_set *ps, bool want_cap,
			bool setid_tp, bool exit_tp)
{
	struct sp_events *skel;
	struct bpf_program *prog;
	unsigned int i;
	int role, err;
	bool tp = !strcmp(ps->how, "tracepoint");

	skel = sp_events__open();
	if (!skel)
		return -errno;
	skel->rodata->want_fork = !!(p->o.kinds & SP_EV_BIT(SP_EV_PROC_FORK));
	skel->rodata->want_exec = !!(p->o.kinds & SP_EV_BIT(SP_EV_PROC_EXEC));
	skel->rodata->want_exit = !!(p->o.kinds & SP_EV_BIT(SP_EV_PROC_EXIT));
	skel->rodata->want_capable = want_cap;
	skel->rodata->cgroup_filter = sp_cgroup_filter_given(p->o.cgroups);
	/* Wake the reader every 256 KiB (or a quarter of a smaller buffer):
	 * what it holds for the merge between two passes then stays in cache. */
	skel->rodata->wake_bytes = (p->o.buffer_kib ? p->o.buffer_kib : 8192) * 1024 / 4;
	if (skel->rodata->wake_bytes > 256 * 1024)
		skel->rodata->wake_bytes = 256 * 1024;
	bpf_map__set_max_entries(skel->maps.events,
				 (p->o.buffer_kib ? p->o.buffer_kib : 8192) * 1024);
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	exit_tp = exit_tp && !tp && !skip_role(p, P_EXIT, want_cap, tp, setid_tp);
	for (role = 0; role < P_NUM; role++) {
		if (skip_role(p, role, want_cap, tp, setid_tp) || (role == P_EXIT && exit_tp))
			continue;
		prog = role_prog(skel, role, ps->suffix);
		if (prog)
			bpf_program__set_autoload(prog, true);
	}
	bpf_program__set_autoload(skel->progs.on_setid_tp, setid_tp);
	bpf_program__set_autoload(skel->progs.on_sys_exit_call, exit_tp);
	err = sp_events__load(skel);
	if (err)
		goto fail;
	for (i = 0; p->o.cgroups && i < p->o.cgroups->n && i < SP_BPF_CGROUPS; i++) {
		uint8_t one = 1;

		if (!p->o.cgroups->id[i])
			continue;
		err = bpf_map__update_elem(skel->maps.cgroups, &p->o.cgroups->id[i],
					   sizeof(uint64_t), &one, sizeof(one), BPF_ANY);
		if (err)
			goto fail;
		p->cg_ids[i] = p->o.cgroups->id[i];
	}
	for (role = 0; role < P_NUM; role++) {
		struct bpf_link *link;

		if (skip_role(p, role, want_cap, tp, setid_tp) || (role == P_EXIT && exit_tp))
			continue;
		prog = role_prog(skel, role, ps->suffix);
		if (!prog)
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			goto fail;
		}
		/* the skeleton destroys links it knows: keep it there */
		for (i = 0; i < (unsigned int)skel->skeleton->prog_cnt; i++)
			if (*skel->skeleton->progs[i].prog == prog)
				*skel->skeleton->progs[i].link = link;
	}
	if (setid_tp) {
		err = attach_setid(p, skel->progs.on_setid_tp);
		if (err) {
			p->setid_err = err;
			goto fail;
		}
	}
	if (exit_tp) {
		err = attach_exit(p, skel->progs.on_sys_exit_call);
		if (err) {
			p->exit_err = err;
			goto fail;
		}
	}
	p->exit_how = exit_tp ? "sys-exit-tracepoints" : NULL;
	/* tp_btf and raw_tp read a system call's arguments from the registers
	 * at exit; classic tracepoints must keep them from the entry. */
	for (i = 0; i < sp_ev_nsys_kinds; i++) {
		uint32_t nr = sp_ev_sys_kinds[i].nr, w = SP_WANT_PAIR;

		if (!(p->o.kinds & SP_EV_BIT(sp_ev_sys_kinds[i].kind)))
			continue;
		if (sp_ev_sys_kinds[i].dns)
			w = SP_WANT_DNS;
		else if (needs_entry(i, tp))
			w |= SP_WANT_ENTRY;
		err = bpf_map__update_elem(skel->maps.wanted, &nr, sizeof(nr), &w, sizeof(w), 0);
		if (err)
			goto fail;
	}
	p->skel = skel;
	p->entry = setid_tp ? "setid-tracepoints" :
		   !skip_role(p, P_ENTER, want_cap, tp, false) ? "sys_enter" : NULL;
	return 0;
fail:
	detach_setid(p);
	detach_exit(p);
	detach_exit(p);
	sp_events__destroy(skel);
	return err < 0 ? err : -EINVAL;
}

/* What the kernel offers above the strategies into kf, and its verdicts in
 * p->probes. 0, or -errno when loading tracing programs is not allowed at
 * all (said in p->tried). */
static int probe_features(struct ev_priv *p, struct kfeat *kf)
{
	int err;

	/* Not allowed to load tracing programs at all: say so at once, without
	 * parsing the kernel BTF for probes whose answer is EPERM too. */
	err = sp_ev_probe_tracing_allowed();
	if (err == -EPERM || err == -EACCES) {
		memset(kf, 0, sizeof(*kf));
		kf->fentry_err = kf->lsm_err = err;
		sp_buf_printf(&p->tried, " tracepoint(%s)", strerror(-err));
	} else {
		err = 0;
		sp_ev_kfeat_get(kf);
	}
	if (kf->fentry_err)
		sp_buf_printf(&p->probes, "%sbpf-fentry(%s)", p->probes.len ? " " : "",
			strerrorname_np(-kf->fentry_err) ? strerrorname_np(-kf->fentry_err) : "error");
	if (kf->lsm_err)
		sp_buf_printf(&p->probes, "%sbpf-lsm(%s)", p->probes.len ? " " : "",
			strerrorname_np(-kf->lsm_err) ? strerrorname_np(-kf->lsm_err) : "error");
	return err;
}

/* The first strategy that loads and attaches, from the best down (or the
 * one --event-attach names); each that fails is said in p->tried. 0 with
 * p->skel and p->how set, or -errno of the last failure. */
static int load_best(struct ev_priv *p, const struct kfeat *kf, uint64_t want, bool want_cap)
{
	bool setid_tps, exit_tps;
	unsigned int i;
	int err = -ENOENT;

	/* the setid calls' entry: from their own tracepoints when they can be
	 * had, else (and when attaching them fails) from sys_enter */
	setid_tps = !p->o.raw_entry && (want & SP_EV_BIT(SP_EV_SETID_CHANGE)) &&
		    (!p->o.attach || strcmp(p->o.attach, "tracepoint")) && setid_tps_ready(p);
	/* the system calls' exit: from each one's own tracepoint when they
	 * can be had (--raw-entry keeps the raw hooks for both ends) */
	exit_tps = !p->o.raw_entry && (!p->o.attach || strcmp(p->o.attach, "tracepoint")) &&
		   syscall_tps_ready(p);
	for (i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++) {
		const struct prog_set *ps = &strategies[i];
		bool cap = want_cap && strcmp(ps->how, "tracepoint");

		if (p->o.attach && strcmp(p->o.attach, ps->how))
			continue;
		if (!strcmp(ps->how, "tp_btf") && !kf->tp_exec) {
			sp_buf_printf(&p->tried, " tp_btf(no BTF)");
			continue;
		}
		if (!strcmp(ps->how, "tracepoint") && !need_tracefs(p, "tracepoint"))
			continue;
		p->setid_err = p->exit_err = 0;
		err = try_strategy(p, ps, cap, setid_tps && strcmp(ps->how, "tracepoint"), exit_tps);
		if (err && p->exit_err) {
			sp_buf_printf(&p->tried, " sys-exit-tracepoints(%s)",
				strerror(-p->exit_err));
			p->setid_err = p->exit_err = 0;
			err = try_strategy(p, ps, cap, setid_tps && strcmp(ps->how, "tracepoint"),
					   false);
		}
		if (err && p->setid_err) {
			sp_buf_printf(&p->tried, " setid-tracepoints(%s)",
				strerror(-p->setid_err));
			p->setid_err = p->exit_err = 0;
			err = try_strategy(p, ps, cap, false, exit_tps);
			if (err && p->exit_err) {
				sp_buf_printf(&p->tried, " sys-exit-tracepoints(%s)",
					strerror(-p->exit_err));
				err = try_strategy(p, ps, cap, false, false);
			}
		}
		if (!err) {
			p->how = ps->how;
			if (!cap)
				p->avail &= ~SP_EV_BIT(SP_EV_CAPABLE_CHECK);
			return 0;
		}
		sp_buf_printf(&p->tried, " %s(%s)", ps->how, strerror(-err));
		if (err == -EPERM || (err == -EACCES && geteuid()))
			break;	/* no rung below helps */
	}
	return err;
}

/* Events are off, p->why says why: fatal (-1) when the user asked for
 * them by --events, else warned (1). */
static int events_off(struct ev_priv *p)
{
	p->avail = 0;
	if (p->o.given) {
		sp_error("kernel events unavailable: %s", p->why);
		p->state = ST_FATAL;
		return -1;
	}
	sp_warn("kernel events unavailable: %s; recording without them", p->why);
	return 1;
}

/* The source records: its ring buffer read, what it records said. */
static int events_ready(struct sp_source *s, uint64_t want)
{
	struct ev_priv *p = s->priv;
	uint64_t missing;
	char names[512];

	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), sp_ev_on_record, p, NULL);
	if (!p->rb) {
		snprintf(p->why, sizeof(p->why), "ring_buffer__new: %s", strerror(errno));
		detach_setid(p);
		detach_exit(p);
		sp_events__destroy(p->skel);
		p->skel = NULL;
		p->entry = NULL;
		return events_off(p);
	}
	s->fd = ring_buffer__epoll_fd(p->rb);
	p->ncpu = libbpf_num_possible_cpus();
	if (p->ncpu < 1)
		p->ncpu = 1;
	p->lost_seen = sp_xcalloc(p->ncpu, sizeof(*p->lost_seen));
	p->active = want & p->avail;
	p->state = ST_READY;
	missing = want & ~p->avail;
	if (missing & p->o.named) {
		sp_events_format(missing & p->o.named, names, sizeof(names));
		sp_error("event %s not available on this kernel (see docs/events.md)", names);
		p->state = ST_FATAL;
		return -1;
	}
	if (missing) {
		sp_events_format(missing, names, sizeof(names));
		sp_info("kernel events not available here: %s", names);
		return 1;
	}
	/* A cgroup made while the programs loaded (a second or two on a busy
	 * machine) is in the filter from here on, not from the first pass:
	 * what its processes do next is kept. */
	if (sp_cgroup_filter_following(p->o.cgroups)) {
		sp_cgroup_filter_follow(p->o.cgroups, sp_now_mono_ns());
		sp_ev_sync_cgroups(p);
	}
	sp_info("kernel events attached with %s", p->how);
	return 0;
}

int sp_events_prepare(struct sp_source *s)
{
	struct ev_priv *p = s->priv;
	uint64_t kernel = sp_event_group_kinds(KERNEL_GROUPS);
	uint64_t want = p->o.kinds & kernel;
	bool want_cap;
	struct kfeat kf;
	int err;

	if (p->state != ST_NEW)
		return p->state == ST_READY ? 0 : p->state == ST_FATAL ? -1 : 1;
	sp_bpf_print_init();
	p->state = ST_OFF;
	if (!want)
		return 0;
	err = probe_features(p, &kf);
	sp_close_apart_wait_earlier(SP_CLOSERS_WAIT_NS);	/* before the first attach */
	/* what this kernel and object can give at all */
	p->avail = kernel & ~SP_EV_BIT(SP_EV_KERNEL_READ_FILE);
	/* without its BTF, the tracepoint is found in tracefs: held first */
	want_cap = (want & SP_EV_BIT(SP_EV_CAPABLE_CHECK)) &&
		   (kf.tp_cap || (need_tracefs(p, "capable-tracepoint") &&
				  !access("/sys/kernel/tracing/events/capability/cap_capable", F_OK)));
	if (!err)
		err = load_best(p, &kf, want, want_cap);
	/* attached tracepoints need tracefs no more: let go at once (one
	 * mounted here is unmounted with the last hold) */
	if (p->tracefs_held) {
		sp_tracefs_release();
		p->tracefs_held = false;
	}
	if (!p->skel) {
		if (err == -EPERM || (err == -EACCES && geteuid()))
			snprintf(p->why, sizeof(p->why), "loading BPF programs needs root "
				 "(CAP_BPF and CAP_PERFMON): %s", strerror(-err));
		else
			snprintf(p->why, sizeof(p->why), "no attach strategy worked:%s",
				 sp_buf_str(&p->tried));
		return events_off(p);
	}
	return events_ready(s, want);
}

#define SP_EV_SEED_KIDS_MAX	65536	/* processes the -p ones started, taken at the start */

/* Follow pid in BPF (its events and its children's). */
static void track(struct ev_priv *p, uint32_t pid)
{
	uint8_t one = 1;

	if (bpf_map__update_elem(p->skel->maps.tgids, &pid, sizeof(pid), &one, sizeof(one),
				 BPF_ANY))
		sp_warn("pid %u: cannot add to the BPF process map: %s", pid, strerror(errno));
}

/*
 * The roots (held by the recorder, which checks them once every source has
 * attached), then the processes they started before the attach, found with
 * their start times (sp_procfs_descendants(), breadth first). A descendant
 * whose pid names another process by the time it is in the map (it ended,
 * and another user's process took its number) is taken out again: a pid is
 * not reused while its process exists, so the same start after the insert
 * means the insert was of it. Twice, for the forks made during the walk.
 */
void sp_ev_seed_pids(struct ev_priv *p, const struct sp_target *t)
{
	uint32_t *kids;
	uint64_t *starts;
	size_t n, more, i;
	int pass;

	if (t->system_wide) {
		/* our own system calls (reads of /proc and of the files we
		 * name) are not the machine's work */
		p->skel->bss->self_tgid = sp_procfs_host_pidns() ? (uint32_t)getpid() : 0;
		p->skel->bss->trace_all = 1;
		return;	/* the cgroups were set at load, and at the start */
	}
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < t->npids; i++)
			track(p, t->pids[i]);
		if (sp_procfs_descendants(t->pids, t->npids, SP_EV_SEED_KIDS_MAX, &kids, &starts,
					  &n, &more))
			continue;
		for (i = 0; i < n; i++) {
			if (!starts[i])
				continue;
			track(p, kids[i]);
			if (!sp_procfs_same_process(kids[i], starts[i]))
				bpf_map__delete_elem(p->skel->maps.tgids, &kids[i], sizeof(kids[i]),
						     0);
		}
		free(kids);
		free(starts);
	}
}

void sp_ev_unload(struct ev_priv *p)
{
	ring_buffer__free(p->rb);
	p->rb = NULL;
	detach_setid(p);
	detach_exit(p);
	sp_events__destroy(p->skel);
	p->skel = NULL;
}
