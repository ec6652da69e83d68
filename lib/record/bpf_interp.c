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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>

#include "bpf_print.h"
#include "tracefs.h"
#include "bpf_cgfilter.h"
#include "interp.skel.h"
#include "interpP.h"
#include "close_apart.h"
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
	bool ev_early;			/* attach it at once (the command is an interpreter) */
	struct bpf_link *task_links[3];	/* on_task_*: "procs" follows tasks */
	unsigned int uses;		/* SP_INTERP_USE_*: which programs were loaded */
	/* the Ruby walkers (sp_interp_bpf_ruby()) */
	struct sp_interp *rb_skels[4];	/* the instances that hold them */
	unsigned int nrb_skels;
	unsigned int rb_in;		/* 1u << W_*: in their slots */
	bool rb_failed;			/* a load failed (said once) */
	bool tps_likely;		/* calls_tps_likely(), at the open */
	uint64_t rb_asked, rb_ready;	/* the first load's start, the last one's end */
	struct walkers_load {		/* a load on a thread */
		pthread_t th;
		bool on;
		int done;		/* atomic */
		uint64_t ready;		/* when it was done (set before done) */
		unsigned int want;
		int err;
		struct sp_interp *skel;
	} rl;
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

/*
 * The Ruby walkers (on_*_rb, tail-called from their slots): each is some
 * 48K instructions that the verifier takes 0.1-0.25 s of CPU to check, as
 * much as the rest of sp-record's start-up. They are loaded apart, in
 * another instance of the object whose maps are the first one's (their
 * fds reused: one procs map, one ring, the same slots), only the walkers
 * that serve this recording, when asked (sp_interp_bpf_ruby()): at once,
 * or on a thread while the recording goes on. Until a walker is in its
 * slot, the tail call fails and the record says so (SP_BPF_IST_NO_WALKER):
 * its sample is counted as such, never silently native.
 */
enum { W_SAMPLE, W_SWITCH, W_EVENT, W_EVENT_TP, W_N };

static struct bpf_program *walker_prog(struct sp_interp *sk, unsigned int w)
{
	struct bpf_program *p[W_N] = {
		sk->progs.on_sample_rb, sk->progs.on_switch_rb, sk->progs.on_event_rb,
		sk->progs.on_event_rb_tp,
	};

	return p[w];
}

static struct bpf_map *walker_slot(struct sp_interp *sk, unsigned int w)
{
	struct bpf_map *m[W_N] = {
		sk->maps.walkers, sk->maps.sw_walkers, sk->maps.ev_walkers, sk->maps.ev_walkers_tp,
	};

	return m[w];
}

/* Whether the system calls' own entry tracepoints can be had (then the
 * events' program is on_event_tp, ev_attach_calls(), and its walker the
 * _tp one): the first wanted call's stands for all of them. Looked at as
 * ev_attach_calls() will: with tracefs held, mounted if it is not, though
 * it is let go between the two (tracefs.h). */
static bool calls_tps_likely(void)
{
	bool yes;

	if (!sp_tracefs_hold(NULL))
		return false;
	yes = !access("/sys/kernel/tracing/events/syscalls/sys_enter_openat", F_OK) ||
	      !access("/sys/kernel/debug/tracing/events/syscalls/sys_enter_openat", F_OK);
	sp_tracefs_release();
	return yes;
}

/* The walkers that serve the recording's uses (1u << W_*): the sample
 * walk unless nothing samples, the switch walk with --off-cpu, both of
 * the events' with kernel events. */
static unsigned int walkers_served(const struct sp_interp_bpf *b)
{
	unsigned int m = 0;

	if (b->uses & SP_INTERP_NO_RUBY)
		return 0;
	if (!(b->uses & SP_INTERP_NO_SAMPLES))
		m |= 1u << W_SAMPLE;
	if (b->uses & SP_INTERP_USE_OFFCPU)
		m |= 1u << W_SWITCH;
	if (b->uses & SP_INTERP_USE_EVENTS)
		m |= 1u << W_EVENT | 1u << W_EVENT_TP;
	return m;
}

/* Those it needs: of the events' two, the one of the program attached
 * (ev_attach()), or of the one likely to be. */
static unsigned int walkers_needed(const struct sp_interp_bpf *b)
{
	unsigned int m = walkers_served(b);

	if (b->ev_link || (!b->ev_links && !b->tps_likely))
		m &= ~(1u << W_EVENT_TP);
	else
		m &= ~(1u << W_EVENT);
	return m;
}

/* A new instance of the object on b's maps with only the walkers of want
 * loaded, and put in their slots: 0, or -errno. Safe on a thread of its
 * own (b's maps are only read here; libbpf is safe per object). */
static int walkers_load(const struct sp_interp_bpf *b, unsigned int want, struct sp_interp **out)
{
	struct sp_interp *sk = sp_interp__open();
	struct bpf_program *prog;
	struct bpf_map *m, *mine;
	uint32_t zero = 0;
	unsigned int w;
	int err = 0, fd;

	*out = NULL;
	if (!sk)
		return -errno;
	/* the same object file: its maps come in the same order */
	mine = bpf_object__next_map(b->skel->obj, NULL);
	bpf_object__for_each_map(m, sk->obj) {
		if (!mine || strcmp(bpf_map__name(m), bpf_map__name(mine))) {
			err = -EINVAL;
			goto out;
		}
		if (bpf_map__fd(mine) >= 0)
			err = bpf_map__reuse_fd(m, bpf_map__fd(mine));
		else
			err = bpf_map__set_autocreate(m, false);
		if (err)
			goto out;
		mine = bpf_object__next_map(b->skel->obj, mine);
	}
	bpf_object__for_each_program(prog, sk->obj)
		bpf_program__set_autoload(prog, false);
	for (w = 0; w < W_N; w++)
		if (want & 1u << w)
			bpf_program__set_autoload(walker_prog(sk, w), true);
	if ((err = sp_interp__load(sk)))
		goto out;
	for (w = 0; w < W_N; w++) {
		if (!(want & 1u << w))
			continue;
		fd = bpf_program__fd(walker_prog(sk, w));
		if (bpf_map_update_elem(bpf_map__fd(walker_slot(sk, w)), &zero, &fd, BPF_ANY)) {
			err = -errno;
			goto out;
		}
	}
	*out = sk;
	return 0;
out:
	sp_interp__destroy(sk);
	return err;
}

static void *walkers_thread(void *arg)
{
	struct sp_interp_bpf *b = arg;

	b->rl.err = walkers_load(b, b->rl.want, &b->rl.skel);
	b->rl.ready = sp_now_mono_ns();
	__atomic_store_n(&b->rl.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The walkers of a load (b->rl) are in, or failed: said once. */
static void walkers_landed(struct sp_interp_bpf *b, int err, struct sp_interp *sk,
			   unsigned int want, uint64_t ready)
{
	if (err) {
		if (!b->rb_failed)
			sp_warn("interpreted frames: cannot load the Ruby walker: %s; Ruby's "
				"stacks are native only", strerror(-err));
		b->rb_failed = true;
		return;
	}
	b->rb_skels[b->nrb_skels++] = sk;
	b->rb_in |= want;
	b->rb_ready = ready;
}

/* A load on the thread that is done: joined, its walkers counted in. */
static void walkers_join(struct sp_interp_bpf *b)
{
	pthread_join(b->rl.th, NULL);
	b->rl.on = false;
	walkers_landed(b, b->rl.err, b->rl.skel, b->rl.want, b->rl.ready);
	b->rl.skel = NULL;
}

int sp_interp_bpf_ruby(struct sp_interp_bpf *b, bool wait)
{
	unsigned int want;
	struct sp_interp *sk;
	int err;

	if (b->rl.on && (wait || __atomic_load_n(&b->rl.done, __ATOMIC_ACQUIRE)))
		walkers_join(b);
	want = walkers_needed(b) & ~b->rb_in;
	if (b->rl.on || !want || b->rb_failed || b->nrb_skels == W_N)
		return b->rl.on ? 1 : b->rb_failed ? -1 : 0;
	if (!b->rb_asked)
		b->rb_asked = sp_now_mono_ns();
	b->rl = (struct walkers_load){ .want = want };
	if (!wait && !pthread_create(&b->rl.th, NULL, walkers_thread, b)) {
		b->rl.on = true;
		return 1;
	}
	err = walkers_load(b, want, &sk);	/* asked to wait, or no thread */
	walkers_landed(b, err, sk, want, sp_now_mono_ns());
	return err ? -1 : 0;
}

uint64_t sp_interp_bpf_ruby_times(const struct sp_interp_bpf *b, uint64_t *ready)
{
	/* a load on the thread done but not joined yet: its walkers are in */
	if (b->rl.on && __atomic_load_n(&b->rl.done, __ATOMIC_ACQUIRE) && !b->rl.err)
		*ready = b->rl.ready;
	else
		*ready = b->rb_ready;	/* 0: not in when the recording ended */
	return b->rb_asked;
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
	bool was = sp_bpf_print_quiet(true);
	unsigned int w;
	int err = 0;

	b->fn = fn;
	b->ctx = ctx;
	b->skel = sp_interp__open();
	if (b->skel) {
		sp_ev_stack_calls((uint64_t *)b->skel->rodata->want_nr,
				  sizeof(b->skel->rodata->want_nr) * 8);
		sp_interp_proc_calls((uint64_t *)b->skel->rodata->want_nr,
				     sizeof(b->skel->rodata->want_nr) * 8);
		/* the Ruby walkers: apart (walkers_load()) */
		for (w = 0; w < W_N; w++)
			bpf_program__set_autoload(walker_prog(b->skel, w), false);
		if (uses & SP_INTERP_NO_SAMPLES)
			bpf_program__set_autoload(b->skel->progs.on_sample, false);
		if (!(uses & SP_INTERP_USE_OFFCPU)) {
			bpf_program__set_autoload(b->skel->progs.on_switch, false);
			bpf_map__set_autocreate(b->skel->maps.sw_walkers, false);
			bpf_map__set_autocreate(b->skel->maps.cg_allowed, false);
			bpf_map__set_autocreate(b->skel->maps.cg_dropped, false);
		}
		if (!(uses & SP_INTERP_USE_EVENTS)) {
			bpf_program__set_autoload(b->skel->progs.on_event, false);
			bpf_program__set_autoload(b->skel->progs.on_event_tp, false);
			bpf_map__set_autocreate(b->skel->maps.ev_walkers, false);
			bpf_map__set_autocreate(b->skel->maps.ev_walkers_tp, false);
			bpf_map__set_autocreate(b->skel->maps.ev_scratch, false);
		}
		b->uses = uses;
		b->tps_likely = (uses & SP_INTERP_USE_EVENTS) && calls_tps_likely();
		if (sp_interp__load(b->skel)) {
			err = errno;
			sp_interp__destroy(b->skel);
			b->skel = NULL;
			errno = err;
		}
	}
	sp_bpf_print_quiet(was);
	if (!b->skel) {
		err = errno;
		sp_warn("interpreted frames: cannot load the BPF program: %s; native stacks only",
			strerror(err));
		goto fail;
	}
	/* Without SP_INTERP_RUBY_LATER (--check), every walker that serves
	 * the uses, both of the events' ones, at once. */
	if (!(uses & SP_INTERP_RUBY_LATER) && walkers_served(b)) {
		struct sp_interp *sk = NULL;

		walkers_landed(b, walkers_load(b, walkers_served(b), &sk), sk, walkers_served(b),
			       sp_now_mono_ns());
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
	m->self = &b->skel->bss->cg_self;
	return 0;
}

/* Each close waits for RCU grace periods: closed apart (close_apart.h). */
static void ev_detach_calls(struct sp_interp_bpf *b)
{
	sp_bpf_links_destroy(b->ev_links, b->nev_links);
	b->nev_links = 0;
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
	bool was, held;
	bool ok = true;

	for (nr = 0; nr < nbits; nr++)
		n += bits[nr / 64] >> (nr % 64) & 1;
	b->ev_links = sp_xcalloc(n ? n : 1, sizeof(*b->ev_links));
	/* libbpf reads each tracepoint's id from tracefs: held meanwhile */
	held = ok = sp_tracefs_hold(NULL);
	was = sp_bpf_print_quiet(true);	/* a missing tracepoint is no fault: said below */
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
	sp_bpf_print_quiet(was);
	if (held)
		sp_tracefs_release();
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
	if (b->ev_raw || !ev_attach_calls(b)) {
		b->ev_link = bpf_program__attach(b->skel->progs.on_event);
		if (!b->ev_link) {
			b->ev_failed = true;
			sp_warn("interpreted frames: cannot attach to system call entries: %s; "
				"kernel events carry no interpreted stack", strerror(errno));
			return -1;
		}
	}
	/* Ruby's walkers asked for already: the one of the program attached,
	 * if another was foreseen */
	if (b->rb_asked)
		sp_interp_bpf_ruby(b, false);
	return 0;
}

/* The entry program costs system calls of the machine (each wanted one,
 * or every one with the raw sys_enter fallback): it is attached once there
 * is an interpreter to walk (sp_interp_bpf_proc()), or at once for a
 * command that is one (sp_interp_bpf_events_early()). */
int sp_interp_bpf_events(struct sp_interp_bpf *b, bool raw_entry)
{
	if (!(b->uses & SP_INTERP_USE_EVENTS))
		return -1;	/* not loaded: the recording has no kernel events */
	b->ev_wanted = true;
	b->ev_raw = raw_entry;
	if (raw_entry)
		sp_info("interpreted frames: system call entries from the raw sys_enter "
			"tracepoint (--event-attach=sys_enter)");
	return b->have_procs || b->ev_early ? ev_attach(b) : 0;
}

void sp_interp_bpf_events_early(struct sp_interp_bpf *b)
{
	b->ev_early = true;
	if (b->ev_wanted)
		ev_attach(b);
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

uint64_t sp_interp_bpf_copies_refused(struct sp_interp_bpf *b, uint32_t *pid)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct sp_bpf_icopy_refused *v;
	uint64_t sum = 0;
	uint32_t zero = 0;

	*pid = 0;
	if (ncpu <= 0)
		return 0;
	v = sp_xcalloc((size_t)ncpu, sizeof(*v));
	if (!bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.copies_refused), &zero, v))
		for (i = 0; i < ncpu; i++) {
			sum += v[i].n;
			if (v[i].n && !*pid)
				*pid = v[i].pid;
		}
	free(v);
	return sum;
}

void sp_interp_bpf_close(struct sp_interp_bpf *b)
{
	size_t i;

	if (!b)
		return;
	if (b->rl.on) {	/* its walkers are no use now */
		pthread_join(b->rl.th, NULL);
		sp_interp__destroy(b->rl.skel);
	}
	bpf_link__destroy(b->ev_link);
	ev_detach_calls(b);
	for (i = 0; i < 3; i++)
		bpf_link__destroy(b->task_links[i]);
	ring_buffer__free(b->rb);
	for (i = 0; i < b->nrb_skels; i++)
		sp_interp__destroy(b->rb_skels[i]);
	sp_interp__destroy(b->skel);
	free(b);
}
