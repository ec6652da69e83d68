// SPDX-License-Identifier: MIT
/*
 * The "spans" record source (bpf_spans.h; the map of its files is
 * bpf_spansP.h): its sp_source vtable. Creating it starts loading the BPF
 * object; start() tracks the target (or, for --spans=auto and a command
 * that is no runtime, defers that until the object is loaded); poll()
 * reads the ring buffer and the span rings; finish() writes the probes'
 * health and the losses and says what was recorded; free() lets every
 * held process go and leaves the slow detaches to a helper process.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_spansP.h"
#include "hold_guard.h"
#include "sp.h"
#include "stream/schema.h"
#include "writer.h"

/* --spans=auto, a command that is no runtime: load BPF only if it still
 * runs this long after the start. */
#define SP_SPANS_DEFER_NS	50000000ull

/*
 * The guardian of the processes BPF will stop (hold_guard.h), before
 * anything is stopped: BPF stops none until it runs. Without it, nothing
 * is held: a process may run a little before its probes are there.
 */
static void start_guard(struct bs_ctx *c)
{
	uint32_t ids[3] = { 0 };
	struct bpf_link_info info;
	struct bpf_link *links[2] = { c->skel->links.on_fork, c->skel->links.on_exec };
	__u32 len;
	int i, k = 0;

	for (i = 0; i < 2; i++) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (links[i] && !bpf_obj_get_info_by_fd(bpf_link__fd(links[i]), &info, &len))
			ids[k++] = info.id;
	}
	c->guard_fd = sp_hold_guard_start(bpf_map__fd(c->skel->maps.held), ids);
	if (c->guard_fd < 0) {
		sp_warn("spans: processes are not held at fork and exec: their first "
			"spans may be missed");
		return;
	}
	c->skel->bss->stop_new = 1;
}

/* The BPF object is there: track the target and listen. */
static int start_tracking(struct sp_source *s, struct bs_ctx *c)
{
	char self[PATH_MAX];
	unsigned int i;
	ssize_t n;

	if (!(c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.spans), sp_bs_on_event, c, NULL)))
		return -1;
	start_guard(c);
	if (!c->no_multi && !sp_bs_probe_multi(c)) {
		c->no_multi = true;
		if (sp_verbose)
			sp_info("spans: this kernel has no uprobe_multi links: USDT links");
	}
	if (c->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(c->rb), &ev))
			return -1;
	} else {
		s->fd = ring_buffer__epoll_fd(c->rb);
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	/* -a: a process that runs the markers of a hook file already probed
	 * (another process's) is asked for at once (spans.bpf.c, ask_for()) */
	if (c->all) {
		c->skel->bss->find_on_hit = 1;
		sp_bs_share_installed(c);
	}
	/* before the probes go on: a hook that sees them come writes its open
	 * frames at once (span_rings.h), and that run is of this recording */
	c->rings.since = sp_now_mono_ns();
	/* every pid tracked before the probes of any go on: a hook's markers
	 * are its file's, shared, and a hook tells its names again once they
	 * are on (runtime/hook/names.h): a -p pid tracked after another's
	 * attach would have them dropped */
	for (i = 0; i < c->npids; i++)
		if (sp_bs_track(c, c->pids[i], c->pid_cmd[i]))
			return -1;
	for (i = 0; i < c->npids; i++)
		if (sp_bs_seed(c, c->pids[i], self, c->pid_cmd[i], c->epfd >= 0))
			return -1;
	/* the processes they started before the attach: a -p pid's (a
	 * shell's Ruby), a command's when the load came after its start
	 * (c->epfd: deferred); a command paused before its exec has none */
	for (i = 0; i < c->npids && c->pid_cmd[i] && c->epfd < 0; i++)
		;
	if (i < c->npids && !c->all && sp_bs_seed_descendants(c, self))
		return -1;
	if (sp_bs_all_scan(c, sp_now_mono_ns()))
		return -1;
	/* from here a hook that loads, a runtime that execs, is seen */
	if (c->npids && !c->pid_cmd[0])
		sp_info("spans: following %zu process%s (the -p ones and those they started)",
			c->nprocs, c->nprocs == 1 ? "" : "es");
	c->last_poll_ns = sp_now_mono_ns();
	c->lost_since = c->last_poll_ns;
	c->rings.lost_since = c->last_poll_ns;
	return 0;
}

static int spans_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct bs_ctx *c = s->priv;
	char self[PATH_MAX], exe[PATH_MAX], link[64], why[256] = "";
	unsigned int i;
	ssize_t n;

	c->out = out;
	/* -a: the processes that carry a runtime hook (bpf_spans_all.c); the
	 * other modes probe one process at a time, never the whole machine */
	if (t->system_wide && (c->o->nfuncs || !(c->o->modes & (SP_SPANS_RUBY | SP_SPANS_PYTHON))) &&
	    (c->o->modes || c->o->nfuncs)) {
		snprintf(c->unavailable, sizeof(c->unavailable), "spans(system-wide)");
		if (c->o->explicit_modes || c->o->nfuncs)
			sp_warn("-a records the method spans of processes started with an "
				"activator (--spans=ruby, python or auto); other spans are "
				"recorded for commands and -p pids");
		return 0;
	}
	c->all = t->system_wide;
	if (!c->o->modes && !c->o->nfuncs)
		return 0;
	if (sp_bs_resolve_funcs(c))
		return -1;
	for (i = 0; i < c->nfuncs; i++) {
		const char *base = strrchr(c->funcs[i].bin, '/');

		c->funcs[i].name_id = sp_writer_strz(out->w, c->funcs[i].name);
		c->funcs[i].bin_id = sp_writer_strz(out->w, c->funcs[i].bin);
		c->funcs[i].base_id = sp_writer_strz(out->w, base ? base + 1 : c->funcs[i].bin);
	}
	/* The target, and which of it is our command (not exec'd yet). */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	c->pids = sp_xcalloc(t->npids + 1, sizeof(*c->pids));
	c->pid_cmd = sp_xcalloc(t->npids + 1, sizeof(*c->pid_cmd));
	for (i = 0; i < t->npids; i++) {
		c->pids[i] = t->pids[i];
		snprintf(link, sizeof(link), "/proc/%u/exe", t->pids[i]);
		n = readlink(link, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		c->pid_cmd[i] = n > 0 && !strcmp(exe, self);
	}
	c->npids = t->npids;
	if (!sp_bs_may_bpf()) {
		snprintf(why, sizeof(why), "loading BPF programs needs root (CAP_BPF and "
			 "CAP_PERFMON)");
	} else if (!c->all && !c->o->explicit_modes && !c->o->nfuncs && c->npids == 1 &&
		   c->pid_cmd[0] &&
		   (!sp_bs_preload_running() || !sp_bs_preload_ready()) &&
		   !sp_bs_command_has_probes(c->o) && sp_bs_preload_fd() >= 0) {
		/*
		 * --spans=auto and a command that is no runtime: nobody asked
		 * for spans, so nobody waits for the BPF object. The recording
		 * starts now; the processes of the tree are tracked once it is
		 * loaded (those running by then are attached as found, their
		 * first spans missed). A command that ends before that costs
		 * no more than without spans. A runtime command waits.
		 */
		struct epoll_event ev = { .events = EPOLLIN };

		c->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (c->epfd < 0 || epoll_ctl(c->epfd, EPOLL_CTL_ADD, sp_bs_preload_fd(), &ev))
			return sp_error_errno("spans: epoll");
		s->fd = c->epfd;
		c->deferred = true;
		/* A command that is done in a few milliseconds (/bin/true)
		 * should not even share the CPU with the load: it starts at
		 * the first poll (an event, or the batch timer) after 50 ms. */
		c->defer_since = sp_now_mono_ns();
		return 0;
	} else if ((c->skel = sp_bs_preload_take(why, sizeof(why))) && !start_tracking(s, c)) {
		return 0;
	} else if (c->skel && !why[0]) {
		snprintf(why, sizeof(why), "cannot create the ring buffer: %s", strerror(errno));
	}
	ring_buffer__free(c->rb);
	c->rb = NULL;
	sp_spans__destroy(c->skel);
	c->skel = NULL;
	/* Only what the user named is worth stopping for. */
	if (c->o->explicit_modes || c->o->nfuncs)
		return sp_error("spans: %s", why);
	sp_warn("spans: %s: recording without method spans", why);
	snprintf(c->unavailable, sizeof(c->unavailable), "spans");
	return 0;
}

/* The command still runs (not a zombie). */
static bool tree_alive(struct bs_ctx *c)
{
	char path[64], buf[256], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", c->pids[0]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* --spans=auto: the BPF object loaded in the background is ready. */
static int finish_deferred(struct sp_source *s, struct bs_ctx *c)
{
	char why[256] = "";

	c->deferred = false;
	/* it stays readable: stop watching it */
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, sp_bs_preload_fd(), NULL);
	c->skel = sp_bs_preload_take(why, sizeof(why));
	if (c->skel && !start_tracking(s, c))
		return 0;
	if (c->skel && !why[0])
		snprintf(why, sizeof(why), "cannot create the ring buffer: %s", strerror(errno));
	ring_buffer__free(c->rb);
	c->rb = NULL;
	sp_spans__destroy(c->skel);
	c->skel = NULL;
	sp_warn("spans: %s: recording without method spans", why);
	return 0;
}

static int spans_poll(struct sp_source *s, struct sp_emit *out)
{
	struct bs_ctx *c = s->priv;
	uint64_t before = c->spans + c->raises + c->audits, now;
	int n;

	c->out = out;
	if (c->deferred && !sp_bs_preload_running() && !c->finishing &&
	    sp_now_mono_ns() - c->defer_since >= SP_SPANS_DEFER_NS && tree_alive(c)) {
		sp_bs_preload_start(c->o, true);
		if (!sp_bs_preload_running()) {	/* no thread: load here */
			char why[256] = "";

			c->deferred = false;
			if (!(c->skel = sp_bs_load_skel(why, sizeof(why))) || start_tracking(s, c))
				sp_warn("spans: %s: recording without method spans",
					why[0] ? why : "cannot start");
		}
	}
	if (c->deferred && sp_bs_preload_ready() && finish_deferred(s, c))
		return -1;
	if (!c->rb)
		return 0;
	now = sp_now_mono_ns();
	n = ring_buffer__consume(c->rb);
	if (c->err)
		return -1;
	if (n < 0 && n != -EINTR)
		return sp_error("spans: ring buffer: %s", strerror(-n));
	c->last_poll_ns = now;
	if ((!c->rings_unread && sp_span_rings_poll(&c->rings, now, sp_bs_ring_put, c)) || c->err)
		return -1;
	sp_bs_attach_dl_due(c, now);
	sp_bs_forget_gone(c, now);
	if (c->all) {
		int taken = sp_bs_all_asked(c);

		if (taken < 0 || sp_bs_all_scan(c, now))
			return -1;
		/* the marks of those taken since: read while the processes
		 * live, their names from their memory (a short program's) */
		if (taken > 0 && ring_buffer__consume(c->rb) < 0 && c->err)
			return -1;
	}
	if (sp_bs_emit_lost(c, now))
		return -1;
	return (int)(c->spans + c->raises + c->audits - before);
}

static uint64_t spans_watermark(struct sp_source *s)
{
	struct bs_ctx *c = s->priv;
	uint64_t w;

	if (!c->rb)
		return UINT64_MAX;	/* also while the object loads: nothing before */
	/* An event stamped just before the last drain may be committed after
	 * it: hold back a millisecond. */
	w = sp_span_rings_watermark(&c->rings);
	if (c->last_poll_ns < w)
		w = c->last_poll_ns;
	w = w > 1000000 ? w - 1000000 : 0;
	/* promised: no ring mark older than this may come out any more */
	if (w > c->rings.released)
		c->rings.released = w;
	return w;
}

static int spans_finish(struct sp_source *s, struct sp_emit *out)
{
	struct bs_ctx *c = s->priv;
	uint64_t now;
	size_t i;

	c->finishing = true;
	sp_span_rings_wake(&c->rings, 0, 0, 0, 0, 0);	/* read the rings now, whenever last */
	if (spans_poll(s, out) < 0)
		return -1;
	sp_span_rings_leave(&c->rings);	/* their threads wait for us no more */
	if (c->deferred) {
		sp_info("spans: the recording ended before the BPF program was loaded: "
			"no spans");
		return 0;
	}
	if (!c->rb)
		return 0;
	now = sp_now_mono_ns();
	for (i = 0; i < c->nprocs; i++) {
		struct bs_proc *p = c->procs[i];

		if (!p->exited && sp_bs_emit_health(c, p, now, false))
			return -1;
	}
	if (sp_bs_emit_lost(c, now))
		return -1;
	if (c->all && c->all_found)
		sp_info("-a --spans: %" PRIu64 " processes that carry a runtime hook taken, %" PRIu64
			" of them as they first ran a marker of a hook file probed already, the "
			"others at a look at /proc", c->all_found, c->all_asked_found);
	if (c->all && !c->all_found && !c->npids) {
		sp_warn("-a --spans: no process that carries a runtime hook (started with "
			"an activator in its environment) ran: no method spans");
		return 0;
	}
	if (c->o->explicit_modes && (c->o->modes & (SP_SPANS_RUBY | SP_SPANS_RUBY_C)) &&
	    !(c->found & SP_SPANS_RUBY))
		sp_warn("--spans=ruby: no Ruby with USDT probes ran in the recorded processes "
			"(a Ruby built without them has method spans only when started under "
			"sp-record, which loads its hook)");
	if (c->o->explicit_modes && (c->o->modes & (SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT)) &&
	    !(c->found & SP_SPANS_PYTHON))
		sp_warn("--spans=python: no Python with USDT probes ran in the recorded processes "
			"(a Python built without them, as pyenv's, has function spans only when "
			"started under sp-record, which loads its hook)");
	if (c->lost_seen)
		sp_warn("spans: %llu span events lost (ring buffer full)",
			(unsigned long long)c->lost_seen);
	sp_info("spans: %llu span marks, %llu raises, %llu audit events, %llu fiber switches; "
		"%llu stops without a start dropped (entered before the recording: %llu of "
		"frames beyond the innermost %u their hook rebuilt, %llu of Ruby fibers not "
		"running when it did); %llu idle probes (see the probe records)",
		(unsigned long long)c->spans, (unsigned long long)c->raises,
		(unsigned long long)c->audits, (unsigned long long)c->fiber_switches,
		(unsigned long long)c->orphans, (unsigned long long)c->orphans_deep,
		SP_RT_OPEN_MAX, (unsigned long long)c->orphans_fiber, (unsigned long long)c->idle);
	if (c->boot_raises)
		sp_info("spans: %llu Ruby raises before the activator's hook was in (Ruby's "
			"start-up: RubyGems rescues its own) not recorded: no span can be open then",
			(unsigned long long)c->boot_raises);
	if (c->cmethod_lag_ns)
		sp_info("spans: Ruby's C-method probes attached at most %.1f ms after the hook "
			"was in", (double)c->cmethod_lag_ns / 1e6);
	if (c->boot_frames)
		sp_info("spans: %llu Ruby frames open when the hook loaded (StackPulse's "
			"activator and the requires that load it) not recorded, nor their stops "
			"and the %llu calls they made since",
			(unsigned long long)c->boot_frames, (unsigned long long)c->boot_calls);
	if (c->rings.n || c->rings.reading || c->rings.shared || c->rings.given_up ||
	    c->rings.before_run)
		sp_info("spans: span rings: %llu read; %llu read beside another sp-record, "
			"%llu given up, %llu past the bounds; %llu not readable at their "
			"thread's end, %llu ended without their last copy, %llu chunks after "
			"lost ones, %llu bad entries, %llu entries read twice, %llu marks older "
			"than what was written (of rings found late: out of order), %llu marks "
			"before their hook's open frames (of rings found with marks from before "
			"the recording: skipped)",
			(unsigned long long)c->rings.reading, (unsigned long long)c->rings.shared,
			(unsigned long long)c->rings.given_up, (unsigned long long)c->rings.refused,
			(unsigned long long)c->rings.faults, (unsigned long long)c->rings.unended,
			(unsigned long long)c->rings.gaps, (unsigned long long)c->rings.bad,
			(unsigned long long)c->rings.dups, (unsigned long long)c->rings.late,
			(unsigned long long)c->rings.before_run);
	if (c->rings.by_number)
		sp_info("spans: span rings: %llu reads and writes by pid (no descriptor of "
			"their process's memory could be had)",
			(unsigned long long)c->rings.by_number);
	if (c->unprobed)
		sp_warn("spans: %u processes left without some span probes (USDT links waiting "
			"to be detached; counted in the spool)", c->unprobed);
	if (c->rings.lost)
		sp_warn("spans: %llu span marks lost from span rings (counted in the spool): "
			"%llu overwritten by threads that gave up waiting for sp-record (a loaded "
			"machine?), %llu missed beside another sp-record, %llu in rings given up, "
			"%llu not readable at their thread's end",
			(unsigned long long)c->rings.lost, (unsigned long long)c->rings.lost_waited,
			(unsigned long long)c->rings.lost_shared,
			(unsigned long long)c->rings.lost_given_up,
			(unsigned long long)c->rings.lost_at_end);
	sp_info("spans: execs: %llu held to look for runtimes, %llu released at once (file known "
		"without probes); %llu got probes; forks: %llu, %llu held for their parent's probes; "
		"ld.so changes: %llu, %llu libraries given probes then (dlopen); %llu runtime "
		"libraries ld.so took from where the search at exec did not look",
		(unsigned long long)c->stopped_execs, (unsigned long long)c->plain_execs,
		(unsigned long long)c->probed_images, (unsigned long long)c->forks,
		(unsigned long long)c->stopped_forks, (unsigned long long)c->dlopens,
		(unsigned long long)c->late_libs, (unsigned long long)c->other_libs);
	if (c->loc_collections)
		sp_info("spans: marker and USDT location numbers all given %llu times: those of "
			"files no process had probes in any more were given again",
			(unsigned long long)c->loc_collections);
	return 0;
}

static void spans_describe(struct sp_source *s, char *features, size_t fsize,
			   char *unavailable, size_t usize)
{
	struct bs_ctx *c = s->priv;
	unsigned int m = c->o->modes;
	size_t len;

	if (!m && !c->o->nfuncs)
		return;
	if (!sp_bs_may_bpf()) {
		/* start() will record without spans: do not claim them. */
		snprintf(unavailable, usize, "spans(needs CAP_BPF and CAP_PERFMON)");
		return;
	}
	snprintf(features, fsize, "spans=%s%s%s%s%s%s",
		 m & SP_SPANS_RUBY ? "ruby," : "", m & SP_SPANS_RUBY_C ? "ruby-c," : "",
		 m & SP_SPANS_PYTHON ? "python," : "", m & SP_SPANS_PY_AUDIT ? "python-audit," : "",
		 m & SP_SPANS_USDT ? "usdt," : "", c->o->nfuncs ? "uprobe," : "");
	len = strlen(features);
	if (len && features[len - 1] == ',')
		features[len - 1] = 0;
	if (c->unavailable[0])
		snprintf(unavailable, usize, "%s", c->unavailable);
}

static int spans_prepare_env(struct sp_source *s)
{
	struct bs_ctx *c = s->priv;

	/* No spans without BPF: spare Ruby and Python the activators' cost
	 * (start() says why). */
	if (!sp_bs_may_bpf() && !c->o->explicit_modes)
		return 0;

	return sp_spans_setup_env(c->o);
}

/*
 * Closing a uprobe's perf event waits for the kernel (about 75 ms each
 * here), and so would sp-record's exit with the descriptors still open:
 * a child inherits them and closes them after sp-record has exited; our
 * own copies then close at once. The child first closes everything that
 * is not a kernel object (the output, the terminal, pipes), so nobody
 * waits for it. Only async-signal-safe calls after fork().
 */
static void handoff_close(void)
{
	char path[32] = "/proc/self/fd/", target[32];
	int fd, pass, k, maxfd = 4096;
	pid_t pid = fork();

	if (pid != 0)
		return;		/* the parent, or no child: close them ourselves */
	for (pass = 0; pass < 2; pass++) {
		for (fd = 0; fd < maxfd; fd++) {
			char num[12];
			int n = 0, v = fd;
			ssize_t len;

			if (pass == 1) {
				close(fd);
				continue;
			}
			do {
				num[n++] = '0' + v % 10;
				v /= 10;
			} while (v);
			for (k = 0; k < n; k++)
				path[14 + k] = num[n - 1 - k];
			path[14 + n] = 0;
			len = readlink(path, target, sizeof(target));
			if (len < 0)
				continue;
			if (len < 11 || memcmp(target, "anon_inode:", 11))
				close(fd);
		}
	}
	_exit(0);
}

/* What c holds, its processes' probes and the BPF object: released (its
 * reapers stopped first). */
void sp_bs_ctx_release(struct bs_ctx *c)
{
	size_t i;

	free(c->rq);
	for (i = 0; i < c->nprocs; i++) {
		struct bs_proc *p = c->procs[i];

		sp_bs_detach_all_how(c, p, true);
		free(p->att);
		sp_u64map_release(&p->strs);
		sp_bs_spans_state_release(c, p);
		free(p);
	}
	for (i = 0; i < c->nshared; i++)
		close(c->shared[i].fd);
	sp_bs_roots_release(c);
	free(c->procs);
	free(c->gone);
	free(c->dlw);
	sp_span_rings_release(&c->rings);
	sp_u64map_release(&c->by_pid);
	sp_u64map_release(&c->all_seen);
	free(c->all_asked);
	for (i = 0; i < c->nlocs; i++)
		free(c->locs[i].bin);
	free(c->locs);
	free(c->loc_free);
	free(c->ucache);
	sp_u64map_release(&c->loc_ids);
	for (i = 0; i < c->nfuncs; i++) {
		free(c->funcs[i].bin);
		free(c->funcs[i].name);
		free(c->funcs[i].attach);
	}
	free(c->funcs);
	for (i = 0; i < c->nfunc_fds; i++)
		close(c->func_fds[i]);
	free(c->func_fds);
	ring_buffer__free(c->rb);
	sp_spans__destroy(c->skel);
}


static void spans_free(struct sp_source *s)
{
	struct bs_ctx *c;
	struct bs_link *queued = NULL;
	size_t i, nqueued = 0, left;

	if (!s)
		return;
	c = s->priv;
	if (c->rb) {
		/* Detach the process hooks first, then continue whoever they stopped. */
		bpf_link__destroy(c->skel->links.on_fork);
		bpf_link__destroy(c->skel->links.on_exec);
		c->skel->links.on_fork = c->skel->links.on_exec = NULL;
		c->releasing = true;
		ring_buffer__consume(c->rb);
		/* and whoever is held still (the map is the truth) */
		sp_hold_guard_sweep(bpf_map__fd(c->skel->maps.held));
		/* not finished (the output failed): threads wait for us no more */
		if (!c->finishing)
			sp_span_rings_leave(&c->rings);
	}
	/* The guardian sweeps a little longer: a program that was running
	 * as its link went may stop one more. */
	if (c->guard_fd >= 0)
		close(c->guard_fd);
	c->guard_fd = -1;
	if (c->reaper_on) {
		pthread_mutex_lock(&c->rq_lock);
		queued = c->rq;
		nqueued = c->nrq;
		c->rq = NULL;
		c->nrq = c->crq = 0;
		c->reaper_stop = true;
		pthread_cond_broadcast(&c->rq_cond);
		pthread_mutex_unlock(&c->rq_lock);
	}
	for (i = 0, left = nqueued + c->nshared; i < c->nprocs; i++)
		left += c->procs[i]->natt + (c->procs[i]->dl.link || c->procs[i]->dl.fd >= 0);
	/* What is left to detach is closed by a helper after we are gone. */
	if (left)
		handoff_close();
	for (i = 0; i < nqueued; i++)
		sp_bs_link_destroy(c, queued[i]);
	free(queued);
	for (i = 0; i < c->reapers; i++)
		pthread_join(c->reaper[i], NULL);
	sp_bs_ctx_release(c);
	if (sp_bs_preload_running() && !c->deferred) {	/* never started */
		char why[256];

		sp_spans__destroy(sp_bs_preload_take(why, sizeof(why)));
	}
	/* Still loading at the end (a short command under --spans=auto): do
	 * not wait for it, the exit closes whatever it made. */
	if (c->epfd >= 0)
		close(c->epfd);
	free(c->pids);
	free(c->pid_cmd);
	free(c);
	free(s);
}

/* The writer's ids renumbered (source.h): the functions' names and each
 * live process's strings read by address keep theirs under new numbers. */
static void spans_remap(struct sp_source *s, const struct sp_remap *m)
{
	struct bs_ctx *c = s->priv;
	uint64_t k, v;
	size_t i, j;

	for (i = 0; i < c->nfuncs; i++) {
		c->funcs[i].name_id = m->id(m->ctx, SP_REF_STRING, c->funcs[i].name_id);
		c->funcs[i].bin_id = m->id(m->ctx, SP_REF_STRING, c->funcs[i].bin_id);
		c->funcs[i].base_id = m->id(m->ctx, SP_REF_STRING, c->funcs[i].base_id);
	}
	for (i = 0; i < c->nprocs; i++) {
		struct bs_proc *p = c->procs[i];

		for (j = 0; sp_u64map_next(&p->strs, &j, &k, &v);)
			if (v)
				*sp_u64map_get(&p->strs, k) = m->id(m->ctx, SP_REF_STRING, v);
	}
}

struct sp_source *sp_spans_source_new(const struct sp_spans_opts *o)
{
	struct sp_source *s = sp_xcalloc(1, sizeof(*s));
	struct bs_ctx *c = sp_xcalloc(1, sizeof(*c));

	c->o = o;
	sp_span_rings_init(&c->rings);	/* our claim on the rings we read */
	c->rings_unread = getenv("SP_SPAN_RINGS_UNREAD") &&
			  !strcmp(getenv("SP_SPAN_RINGS_UNREAD"), "1");
	/* for the tests: libbpf's USDT links, as a kernel without
	 * uprobe_multi links gets (docs/spans.md) */
	c->no_multi = getenv("SP_USDT_LINKS") && !strcmp(getenv("SP_USDT_LINKS"), "1");
	pthread_mutex_init(&c->bpf_lock, NULL);
	pthread_mutex_init(&c->rq_lock, NULL);
	pthread_cond_init(&c->rq_cond, NULL);
	c->epfd = -1;
	c->guard_fd = -1;
	s->name = "spans";
	s->fd = -1;
	s->priv = c;
	s->start = spans_start;
	s->poll = spans_poll;
	s->watermark = spans_watermark;
	s->finish = spans_finish;
	s->describe = spans_describe;
	s->free = spans_free;
	s->prepare_env = spans_prepare_env;
	s->remap = spans_remap;
	/* The guardian's pipe among the first descriptors; then load the
	 * BPF object, while sp-record sets up the rest, unless it is
	 * --spans=auto for a command that is no runtime: then start()
	 * loads it in the background. */
	if ((o->modes || o->nfuncs) && sp_bs_may_bpf())
		sp_hold_guard_prepare();
	sp_bs_preload_start(o, false);
	return s;
}
