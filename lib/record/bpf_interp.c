// SPDX-License-Identifier: MIT
/*
 * The BPF side of interpreted frames (interpP.h): bpf/interp.bpf.c loaded
 * and attached to every sampling event the perf source opened (events a
 * traced command's children inherit carry it too; with --no-samples there
 * is none, and the sample walk is not even loaded), to --off-cpu's
 * context-switch events and, while kernel events
 * are recorded, to the entry of the system calls that make them (from the
 * first Python or Ruby found on: until then no system call of the machine
 * pays for it), and to the scheduler's fork, exec and exit tracepoints (its
 * map of processes follows them); its maps of processes and layouts, and
 * its ring buffer of stacks handed to interp.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>

#include "bpf_cgfilter.h"
#include "interp.skel.h"
#include "interpP.h"
#include "sp.h"

struct sp_interp_bpf {
	struct sp_interp *skel;
	struct bpf_link *ev_link;	/* on_event, at the entry of system calls */
	struct bpf_link **ev_links;	/* or on_event_tp, on each wanted call's own */
	size_t nev_links;
	bool ev_wanted;			/* kernel events are recorded: attach it */
	bool ev_raw;			/* on_event on raw sys_enter, never the
					 * calls' own tracepoints (--event-attach=
					 * sys_enter) */
	bool ev_failed;			/* its attach failed (said once) */
	bool have_procs;		/* a process was put in the procs map */
	struct bpf_link *task_links[3];	/* on_task_*: "procs" follows tasks */
	unsigned int uses;		/* SP_INTERP_USE_*: which programs were loaded */
	struct ring_buffer *rb;
	sp_interp_stack_fn fn;
	void *ctx;
};

static int on_stack(void *ctx, void *data, size_t size)
{
	struct sp_interp_bpf *b = ctx;
	const struct sp_bpf_istack *h = data;

	if (size < sizeof(*h))
		return 0;
	b->fn(b->ctx, h, (const void *)(h + 1), size - sizeof(*h));
	return 0;
}

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* The tail-called Ruby walkers in their programs' slots. */
static int fill_walkers(struct sp_interp_bpf *b)
{
	const struct { struct bpf_map *map; struct bpf_program *prog; unsigned int use; } w[] = {
		{ b->skel->maps.walkers, b->skel->progs.on_sample_rb, SP_INTERP_NO_SAMPLES },
		{ b->skel->maps.sw_walkers, b->skel->progs.on_switch_rb, SP_INTERP_USE_OFFCPU },
		{ b->skel->maps.ev_walkers, b->skel->progs.on_event_rb, SP_INTERP_USE_EVENTS },
		{ b->skel->maps.ev_walkers_tp, b->skel->progs.on_event_rb_tp,
		  SP_INTERP_USE_EVENTS },
	};
	uint32_t zero = 0;
	size_t i;
	int fd;

	if (b->uses & SP_INTERP_NO_RUBY)
		return 0;	/* not loaded: the slots stay empty, no Ruby is walked */
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		if (w[i].use == SP_INTERP_NO_SAMPLES ? (b->uses & w[i].use) :
		    (w[i].use && !(b->uses & w[i].use)))
			continue;
		fd = bpf_program__fd(w[i].prog);
		if (bpf_map_update_elem(bpf_map__fd(w[i].map), &zero, &fd, BPF_ANY))
			return -1;
	}
	return 0;
}

/* "procs" follows forks, execs and ends in the kernel (interp.bpf.c):
 * without it, a forked child waits for user space to read its fork. */
static void follow_tasks(struct sp_interp_bpf *b)
{
	struct bpf_program *progs[3] = {
		b->skel->progs.on_task_fork, b->skel->progs.on_task_exec,
		b->skel->progs.on_task_exit,
	};
	size_t i;

	for (i = 0; i < 3; i++) {
		b->task_links[i] = bpf_program__attach(progs[i]);
		if (!b->task_links[i]) {
			sp_warn("interpreted frames: cannot follow forks in the kernel: %s; "
				"a forked child's first calls and samples have no interpreted "
				"stack", strerror(errno));
			return;
		}
	}
}

struct sp_interp_bpf *sp_interp_bpf_open(sp_interp_stack_fn fn, void *ctx, unsigned int uses)
{
	struct sp_interp_bpf *b = sp_xcalloc(1, sizeof(*b));
	libbpf_print_fn_t old = libbpf_set_print(quiet);
	int err = 0;

	b->fn = fn;
	b->ctx = ctx;
	b->skel = sp_interp__open();
	if (b->skel) {
		sp_ev_stack_calls((uint64_t *)b->skel->rodata->want_nr,
				  sizeof(b->skel->rodata->want_nr) * 8);
		sp_interp_proc_calls((uint64_t *)b->skel->rodata->want_nr,
				     sizeof(b->skel->rodata->want_nr) * 8);
		if (uses & SP_INTERP_NO_SAMPLES) {
			bpf_program__set_autoload(b->skel->progs.on_sample, false);
			bpf_program__set_autoload(b->skel->progs.on_sample_rb, false);
		}
		if (!(uses & SP_INTERP_USE_OFFCPU)) {
			bpf_program__set_autoload(b->skel->progs.on_switch, false);
			bpf_program__set_autoload(b->skel->progs.on_switch_rb, false);
			bpf_map__set_autocreate(b->skel->maps.sw_walkers, false);
			bpf_map__set_autocreate(b->skel->maps.cg_allowed, false);
			bpf_map__set_autocreate(b->skel->maps.cg_dropped, false);
		}
		if (!(uses & SP_INTERP_USE_EVENTS)) {
			bpf_program__set_autoload(b->skel->progs.on_event, false);
			bpf_program__set_autoload(b->skel->progs.on_event_rb, false);
			bpf_program__set_autoload(b->skel->progs.on_event_tp, false);
			bpf_program__set_autoload(b->skel->progs.on_event_rb_tp, false);
			bpf_map__set_autocreate(b->skel->maps.ev_walkers, false);
			bpf_map__set_autocreate(b->skel->maps.ev_walkers_tp, false);
			bpf_map__set_autocreate(b->skel->maps.ev_scratch, false);
		}
		if (uses & SP_INTERP_NO_RUBY) {
			bpf_program__set_autoload(b->skel->progs.on_sample_rb, false);
			bpf_program__set_autoload(b->skel->progs.on_switch_rb, false);
			bpf_program__set_autoload(b->skel->progs.on_event_rb, false);
		}
		b->uses = uses;
		if (sp_interp__load(b->skel)) {
			err = errno;
			sp_interp__destroy(b->skel);
			b->skel = NULL;
			errno = err;
		}
	}
	libbpf_set_print(old);
	if (b->skel && fill_walkers(b)) {
		sp_interp__destroy(b->skel);
		b->skel = NULL;
	}
	if (!b->skel) {
		err = errno;
		sp_warn("interpreted frames: cannot load the BPF program: %s; native stacks only",
			strerror(err));
		goto fail;
	}
	follow_tasks(b);
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.stacks), on_stack, b, NULL);
	if (!b->rb) {
		sp_warn("interpreted frames: ring_buffer__new: %s; native stacks only",
			strerror(errno));
		goto fail;
	}
	return b;
fail:
	sp_interp_bpf_close(b);
	return NULL;
}

int sp_interp_bpf_attach(struct sp_interp_bpf *b, const int *fds, size_t nfds, bool offcpu)
{
	int prog = bpf_program__fd(offcpu ? b->skel->progs.on_switch : b->skel->progs.on_sample);
	size_t i;

	if (offcpu && !(b->uses & SP_INTERP_USE_OFFCPU))
		return -1;	/* not loaded: the recording has no off-CPU source */
	if (!offcpu && (b->uses & SP_INTERP_NO_SAMPLES))
		return nfds ? -1 : 0;	/* not loaded: nothing samples */

	for (i = 0; i < nfds; i++) {
		if (ioctl(fds[i], PERF_EVENT_IOC_SET_BPF, prog)) {
			sp_warn("interpreted frames: cannot attach to the %s event: %s; "
				"native stacks only", offcpu ? "context-switch" : "sampling",
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

int sp_interp_bpf_cgroups(struct sp_interp_bpf *b, struct sp_cgfilter_maps *m)
{
	if (!(b->uses & SP_INTERP_USE_OFFCPU))
		return -1;
	m->allowed = bpf_map__fd(b->skel->maps.cg_allowed);
	m->dropped = bpf_map__fd(b->skel->maps.cg_dropped);
	m->on = &b->skel->bss->cg_on;
	return 0;
}

static void ev_detach_calls(struct sp_interp_bpf *b)
{
	while (b->nev_links > 0)
		bpf_link__destroy(b->ev_links[--b->nev_links]);
	free(b->ev_links);
	b->ev_links = NULL;
}

/* on_event_tp on the entry tracepoint of each call in want_nr: the kernel
 * then runs no program for the other calls of the machine. false, with
 * nothing attached, when one of them cannot be had (no tracefs, a kernel
 * without syscall events, a call without its tracepoint): on_event
 * then serves them all. */
static bool ev_attach_calls(struct sp_interp_bpf *b)
{
	const uint64_t *bits = (const uint64_t *)b->skel->rodata->want_nr;
	size_t nbits = sizeof(b->skel->rodata->want_nr) * 8, nr, n = 0;
	libbpf_print_fn_t old;
	bool ok = true;

	for (nr = 0; nr < nbits; nr++)
		n += bits[nr / 64] >> (nr % 64) & 1;
	b->ev_links = sp_xcalloc(n ? n : 1, sizeof(*b->ev_links));
	old = libbpf_set_print(quiet);	/* a missing tracepoint is no fault: said below */
	for (nr = 0; ok && nr < nbits; nr++) {
		const char *name;
		char tp[64];

		if (!(bits[nr / 64] >> (nr % 64) & 1))
			continue;
		name = sp_ev_call_name((uint32_t)nr);
		if (!name)
			name = sp_interp_proc_call_name((uint32_t)nr);
		ok = name && b->nev_links < n;
		if (!ok)
			break;
		snprintf(tp, sizeof(tp), "sys_enter_%s", name);
		b->ev_links[b->nev_links] = bpf_program__attach_tracepoint(b->skel->progs.on_event_tp,
									 "syscalls", tp);
		ok = b->ev_links[b->nev_links] != NULL;
		if (ok)
			b->nev_links++;
	}
	libbpf_set_print(old);
	if (!ok) {
		sp_info("interpreted frames: a system call's own tracepoint cannot be had; "
			 "the raw sys_enter one serves");
		ev_detach_calls(b);
	}
	return ok;
}

static int ev_attach(struct sp_interp_bpf *b)
{
	if (b->ev_link || b->ev_links)
		return 0;
	if (b->ev_failed)
		return -1;
	if (!b->ev_raw && ev_attach_calls(b))
		return 0;
	b->ev_link = bpf_program__attach(b->skel->progs.on_event);
	if (!b->ev_link) {
		b->ev_failed = true;
		sp_warn("interpreted frames: cannot attach to system call entries: %s; "
			"kernel events carry no interpreted stack", strerror(errno));
		return -1;
	}
	return 0;
}

/* The entry program costs system calls of the machine (each wanted one,
 * or every one with the raw sys_enter fallback): it is attached once there
 * is an interpreter to walk (sp_interp_bpf_proc()). */
int sp_interp_bpf_events(struct sp_interp_bpf *b, bool raw_entry)
{
	if (!(b->uses & SP_INTERP_USE_EVENTS))
		return -1;	/* not loaded: the recording has no kernel events */
	b->ev_wanted = true;
	b->ev_raw = raw_entry;
	if (raw_entry)
		sp_info("interpreted frames: system call entries from the raw sys_enter "
			"tracepoint (--event-attach=sys_enter)");
	return b->have_procs ? ev_attach(b) : 0;
}

int sp_interp_bpf_layout(struct sp_interp_bpf *b, unsigned int row,
			 const struct sp_bpf_ilayout *l)
{
	return bpf_map_update_elem(bpf_map__fd(b->skel->maps.layouts), &row, l, BPF_ANY);
}

int sp_interp_bpf_proc(struct sp_interp_bpf *b, uint32_t pid, const struct sp_bpf_iproc *v)
{
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.procs), &pid, v, BPF_ANY))
		return -1;
	b->have_procs = true;
	if (b->ev_wanted)
		ev_attach(b);	/* its calls from now on carry their stacks */
	return 0;
}

void sp_interp_bpf_proc_del(struct sp_interp_bpf *b, uint32_t pid)
{
	bpf_map_delete_elem(bpf_map__fd(b->skel->maps.procs), &pid);
}

void sp_interp_bpf_drain(struct sp_interp_bpf *b)
{
	ring_buffer__consume(b->rb);
}

int sp_interp_bpf_wake_fd(const struct sp_interp_bpf *b)
{
	return bpf_map__fd(b->skel->maps.stacks);
}

uint64_t sp_interp_bpf_lost(struct sp_interp_bpf *b)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	uint64_t sum = 0, *v;
	uint32_t zero = 0;

	if (ncpu <= 0)
		return 0;
	v = sp_xcalloc((size_t)ncpu, sizeof(*v));
	if (!bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.lost), &zero, v))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

void sp_interp_bpf_close(struct sp_interp_bpf *b)
{
	size_t i;

	if (!b)
		return;
	bpf_link__destroy(b->ev_link);
	ev_detach_calls(b);
	for (i = 0; i < 3; i++)
		bpf_link__destroy(b->task_links[i]);
	ring_buffer__free(b->rb);
	sp_interp__destroy(b->skel);
	free(b);
}
