// SPDX-License-Identifier: MIT
/*
 * The processes of the recorded tree, for the spans source (bpf_spansP.h):
 * their bookkeeping at fork, exec and exit (as BPF reports them), the
 * health of their probes (SP_REC_PROBE records), detaching what an image
 * had (reaper threads: a uprobe's detach waits for the kernel), releasing
 * the processes BPF holds, and finding the target's processes at the start.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_spansP.h"
#include "escape.h"
#include "procfs.h"
#include "sp.h"
#include "writer.h"

const char *const sp_bs_probe_names[SP_PR_MAX] = {
	[SP_PR_RUBY_METHOD_ENTRY] = "ruby:method__entry",
	[SP_PR_RUBY_METHOD_RETURN] = "ruby:method__return",
	[SP_PR_RUBY_CMETHOD_ENTRY] = "ruby:cmethod__entry",
	[SP_PR_RUBY_CMETHOD_RETURN] = "ruby:cmethod__return",
	[SP_PR_RUBY_RAISE] = "ruby:raise",
	[SP_PR_PY_FUNCTION_ENTRY] = "python:function__entry",
	[SP_PR_PY_FUNCTION_RETURN] = "python:function__return",
	[SP_PR_PY_AUDIT] = "python:audit",
	[SP_PR_SP_BEGIN] = "stackpulse:span__begin",
	[SP_PR_SP_END] = "stackpulse:span__end",
	[SP_PR_UPROBE_ENTRY] = "uprobe",
	[SP_PR_UPROBE_RETURN] = "uretprobe",
	[SP_PR_RB_HOOK_CALL] = "stackpulse:rb__call",
	[SP_PR_RB_HOOK_RETURN] = "stackpulse:rb__return",
	[SP_PR_PY_HOOK_CALL] = "stackpulse:py__call",
	[SP_PR_PY_HOOK_RETURN] = "stackpulse:py__return",
	[SP_PR_RT_NAME] = "stackpulse:rt__name",
	[SP_PR_RB_HOOK_FIBER] = "stackpulse:rb__fiber",
	[SP_PR_PY_HOOK_AUDIT] = "stackpulse:py__audit",
	[SP_PR_PY_HOOK_RAISE] = "stackpulse:py__raise",
	[SP_PR_RT_RING] = "stackpulse:rt__ring",
	[SP_PR_RT_FLUSH] = "stackpulse:rt__flush",
	[SP_PR_PY_HOOK_CORO] = "stackpulse:py__coro",
};

struct bs_proc *sp_bs_proc_get(struct bs_ctx *c, uint32_t pid)
{
	uint64_t *i = sp_u64map_get(&c->by_pid, pid);

	return i ? c->procs[*i - 1] : NULL;
}

struct bs_proc *sp_bs_proc_new(struct bs_ctx *c, uint32_t pid)
{
	struct bs_proc *p = sp_xcalloc(1, sizeof(*p));

	p->pid = pid;
	p->dl.fd = -1;
	sp_grow(&c->procs, &c->cprocs, c->nprocs + 1, sizeof(*c->procs));
	c->procs[c->nprocs++] = p;
	sp_u64map_put(&c->by_pid, pid, c->nprocs);
	return p;
}

void sp_bs_att_add_link(struct bs_proc *p, uint32_t probe, uint32_t func, const char *bin,
			struct bpf_program *prog, struct bs_link link, bool multi,
			const char *args)
{
	struct bs_att *a = sp_xmalloc(sizeof(*a) + strlen(bin) + 1);

	a->probe = probe;
	a->func = func;
	a->prog = prog;
	a->link = link;
	a->multi = multi;
	a->group = 0;
	a->shared = false;
	a->args = args;
	a->dev = a->ino = 0;
	strcpy(a->bin, bin);
	sp_grow(&p->att, &p->catt, p->natt + 1, sizeof(*p->att));
	p->att[p->natt++] = a;
}

void sp_bs_att_add(struct bs_proc *p, uint32_t probe, uint32_t func, const char *bin,
		   struct bpf_program *prog, struct bpf_link *link)
{
	sp_bs_att_add_link(p, probe, func, bin, prog, (struct bs_link){ .link = link, .fd = -1 }, false,
			   NULL);
}

/*
 * Destroy an attachment: a uprobe's takes the kernel an RCU grace period
 * or two (tens of milliseconds), so only libbpf's USDT links, whose
 * manager the attaching thread shares, hold bpf_lock meanwhile.
 */
void sp_bs_link_destroy(struct bs_ctx *c, struct bs_link l)
{
	if (l.link && l.usdt) {
		pthread_mutex_lock(&c->bpf_lock);
		bpf_link__destroy(l.link);
		pthread_mutex_unlock(&c->bpf_lock);
		__atomic_sub_fetch(&c->usdt_live, 1, __ATOMIC_RELAXED);
	} else if (l.link) {
		bpf_link__destroy(l.link);
	} else if (l.fd >= 0) {
		close(l.fd);
	}
}

/* Hits of a probe in p: the events read from it (lost ones are counted
 * apart, in lost records). */
static uint64_t hits_of(struct bs_ctx *c, const struct bs_proc *p, uint32_t probe)
{
	return probe < SP_PR_MAX ? p->hits[probe] : 0;
}

/*
 * A Python that sp-record's command exec'd (not attached to, not a fork
 * child) and that ran to its end without the activator's audit event
 * ("stackpulse.activated"), with the audit marker there to see it: the
 * activator did not run, and the hook was never loaded (python -I or -S
 * skip sitecustomize; a PYTHONPATH set anew drops it).
 */
static bool py_without_activator(const struct bs_proc *p)
{
	return p->exited && !p->attached && !p->ppid && !p->py_active &&
	       (p->runtimes & SP_SPANS_PYTHON) && sp_bs_has_probe(p, SP_PR_PY_HOOK_AUDIT) &&
	       !p->hits[SP_PR_RT_NAME] && !p->hits[SP_PR_PY_HOOK_AUDIT];
}

/* A hook that named methods (rt__name) but whose call marks never came:
 * they went to a span ring sp-record did not find in time. */
static void hook_marks_missed(const struct bs_proc *p, char *buf, size_t size)
{
	snprintf(buf, size, "0 hits while stackpulse:rt__name %llu: the hook ran, but none of "
		 "its marks reached sp-record (its span ring was set up before sp-record found "
		 "the process): no method spans", (unsigned long long)p->hits[SP_PR_RT_NAME]);
}

/* A runtime that ran before the BPF object was loaded (--spans=auto for a
 * command that is no runtime) and whose hook's marks never came. */
static void late_found(char *buf, size_t size)
{
	snprintf(buf, size, "0 hits while its hook ran from before sp-record found the process "
		 "(--spans=auto loads the probes late for a command that is no runtime; name the "
		 "mode, --spans=python or ruby, to have them from the start): no method spans");
}

/* Why a probe looks dead, or "". */
static void verdict(struct bs_ctx *c, const struct bs_proc *p, uint32_t probe, uint64_t hits,
		    char *buf, size_t size)
{
	uint64_t other;

	buf[0] = 0;
	switch (probe) {
	case SP_PR_RUBY_METHOD_ENTRY:
	case SP_PR_RUBY_METHOD_RETURN:
		other = hits_of(c, p, SP_PR_RUBY_CMETHOD_ENTRY);
		if (!hits && other)
			snprintf(buf, size, "0 hits while ruby:cmethod__entry %llu: method spans "
				 "not active (no TracePoint in the process: the activator was not "
				 "loaded)", (unsigned long long)other);
		else if (!hits)
			snprintf(buf, size, "0 hits: no Ruby method ran, or method spans not active "
				 "(the activator was not loaded)");
		break;
	case SP_PR_PY_FUNCTION_ENTRY:
		other = hits_of(c, p, SP_PR_PY_FUNCTION_RETURN);
		if (!hits && p->ret_pending)
			snprintf(buf, size, "0 hits: no profile function in the process (no "
				 "activator): no function spans");
		else if (!p->py_active && other && !p->attached)
			snprintf(buf, size, "%llu hits while python:function__return %llu: function "
				 "entries not active (CPython 3.11 fires them only with a profile "
				 "function set: the activator was not loaded)",
				 (unsigned long long)hits, (unsigned long long)other);
		else if (!hits)
			snprintf(buf, size, "0 hits: no Python function ran");
		break;
	case SP_PR_RB_HOOK_CALL:
	case SP_PR_RB_HOOK_RETURN:
		if (!hits && p->hits[SP_PR_RUBY_CMETHOD_ENTRY] && !(c->o->modes & SP_SPANS_RUBY))
			break;	/* C methods alone (--spans=ruby-c): its marks are those */
		if (!hits && probe == SP_PR_RB_HOOK_CALL && p->late)
			late_found(buf, size);
		else if (!hits && probe == SP_PR_RB_HOOK_CALL && p->hits[SP_PR_RT_NAME])
			hook_marks_missed(p, buf, size);
		else if (!hits)
			snprintf(buf, size, "0 hits: no Ruby method ran, or the hook was not loaded "
				 "(the activator, RUBYOPT)");
		break;
	case SP_PR_PY_HOOK_CALL:
	case SP_PR_PY_HOOK_RETURN:
		if (!hits && probe == SP_PR_PY_HOOK_CALL && p->late)
			late_found(buf, size);
		else if (!hits && !p->py_active && hits_of(c, p, SP_PR_PY_AUDIT))
			snprintf(buf, size, "0 hits while python:audit %llu: the hook was not loaded "
				 "(the activator, PYTHONPATH)",
				 (unsigned long long)hits_of(c, p, SP_PR_PY_AUDIT));
		else if (!hits && probe == SP_PR_PY_HOOK_CALL && p->hits[SP_PR_RT_NAME])
			hook_marks_missed(p, buf, size);
		else if (!hits && probe == SP_PR_PY_HOOK_CALL && py_without_activator(p))
			snprintf(buf, size, "0 hits while Python ran to its end without the "
				 "activator: the hook was not loaded (python -I and -S skip it, and "
				 "so does a PYTHONPATH set anew): no function spans");
		else if (!hits)
			snprintf(buf, size, "0 hits: no Python function ran, or the hook was not "
				 "loaded (the activator, PYTHONPATH)");
		break;
	case SP_PR_RUBY_RAISE:
	case SP_PR_PY_AUDIT:
	case SP_PR_RT_NAME:
	case SP_PR_RB_HOOK_FIBER:
	case SP_PR_PY_HOOK_AUDIT:
	case SP_PR_PY_HOOK_RAISE:
	case SP_PR_RT_RING:
	case SP_PR_RT_FLUSH:
	case SP_PR_PY_HOOK_CORO:
		break;		/* silence is normal */
	default:
		if (!hits)
			snprintf(buf, size, "0 hits");
	}
}

/* A runtime found in p and none of its spans: a process without working
 * probes, in the spool (lost, what=unprobed, its pid), once. */
int sp_bs_emit_unprobed(struct bs_ctx *c, struct bs_proc *p, uint64_t time)
{
	struct sp_record l = { .kind = SP_REC_LOST };

	if (p->no_spans)
		return 0;
	p->no_spans = true;
	l.lost.time = time;
	l.lost.start = time;
	l.lost.what = SP_LOST_UNPROBED;
	l.lost.count = 1;
	l.lost.pid = p->pid;
	return c->out->emit(c->out->ctx, &l);
}

/* SP_REC_PROBE records (and a line on stderr) for what p has attached. */
int sp_bs_emit_health(struct bs_ctx *c, struct bs_proc *p, uint64_t time, bool only_if_hit)
{
	struct sp_record r = { .kind = SP_REC_PROBE };
	char why[256], line[1024], name[600], exe[4 * PATH_MAX];
	uint64_t total = 0;
	size_t i, j, len = 0;
	bool dup, dead = false;

	for (i = 0; i < p->natt; i++)
		total += hits_of(c, p, p->att[i]->probe);
	if (!p->natt || (only_if_hit && !total))
		return 0;
	len = snprintf(line, sizeof(line), "spans: pid %u:", p->pid);
	for (i = 0; i < p->natt; i++) {
		struct bs_att *a = p->att[i];
		uint64_t hits;

		/* one record per probe (a uprobe per function) */
		for (dup = false, j = 0; j < i; j++)
			if (p->att[j]->probe == a->probe && p->att[j]->func == a->func)
				dup = true;
		if (dup)
			continue;
		if (a->probe == SP_PR_UPROBE_ENTRY || a->probe == SP_PR_UPROBE_RETURN) {
			/* hits are per probe kind; name the functions */
			snprintf(name, sizeof(name), "%s:%s", sp_bs_probe_names[a->probe],
				 c->funcs[a->func].name);
			if (a->func != 0 && p->att[0]->probe == a->probe)
				continue;
		} else {
			snprintf(name, sizeof(name), "%s", sp_bs_probe_names[a->probe]);
		}
		hits = hits_of(c, p, a->probe);
		verdict(c, p, a->probe, hits, why, sizeof(why));
		r.probe.time = time;
		r.probe.pid = p->pid;
		r.probe.name = sp_writer_strz(c->out->w, name);
		r.probe.hits = hits;
		r.probe.verdict = sp_writer_strz(c->out->w, why);
		if (c->out->emit(c->out->ctx, &r))
			return -1;
		if (len < sizeof(line) - 1)
			len += snprintf(line + len, sizeof(line) - len, " %s %llu", name,
					(unsigned long long)hits);
		/* Evidence of a dead probe ("0 hits while ... N") is worth a
		 * warning; a short-lived process that ran no method is not,
		 * nor an attached Ruby's method probes: "Ruby without
		 * sp-record's activator" said so when they went on. */
		if (why[0] && strstr(why, " while ")) {
			bool said = p->attached && (a->probe == SP_PR_RUBY_METHOD_ENTRY ||
						    a->probe == SP_PR_RUBY_METHOD_RETURN);

			/* as it is: the message is escaped (error.c) */
			if (p->exe[0])
				snprintf(exe, sizeof(exe), "%s", sp_bs_root_name(c, p->exe));
			else
				sp_span_rings_comm(p->pid, exe, sizeof(exe));
			if (!said)
				sp_warn("pid %u (%s): %s: %s", p->pid, exe, name, why);
			else if (sp_verbose)
				sp_info("pid %u (%s): %s: %s", p->pid, exe, name, why);
			dead |= a->probe == SP_PR_PY_HOOK_CALL || a->probe == SP_PR_RB_HOOK_CALL ||
				a->probe == SP_PR_PY_FUNCTION_ENTRY ||
				a->probe == SP_PR_RUBY_METHOD_ENTRY;
		} else if (why[0]) {
			c->idle++;
		}
	}
	if (dead && sp_bs_emit_unprobed(c, p, time))
		return -1;
	if (sp_verbose)
		sp_info("%s", line);
	return 0;
}

/* A reaper thread: destroys the links queued for it until told to stop. */
static void *reaper_main(void *arg)
{
	struct bs_ctx *c = arg;
	struct bs_link l;

	for (;;) {
		pthread_mutex_lock(&c->rq_lock);
		while (!c->nrq && !c->reaper_stop)
			pthread_cond_wait(&c->rq_cond, &c->rq_lock);
		if (!c->nrq) {
			pthread_mutex_unlock(&c->rq_lock);
			return NULL;
		}
		l = c->rq[--c->nrq];
		pthread_mutex_unlock(&c->rq_lock);
		sp_bs_link_destroy(c, l);
	}
}

/* Destroy l now (sync) or by the reapers. */
void sp_bs_detach_link(struct bs_ctx *c, struct bs_link l, bool sync)
{
	while (!sync && c->reapers < SP_REAPERS &&
	       !pthread_create(&c->reaper[c->reapers], NULL, reaper_main, c))
		c->reaper_on = ++c->reapers > 0;
	if (sync || !c->reaper_on) {
		sp_bs_link_destroy(c, l);
		return;
	}
	pthread_mutex_lock(&c->rq_lock);
	sp_grow(&c->rq, &c->crq, c->nrq + 1, sizeof(*c->rq));
	c->rq[c->nrq++] = l;
	pthread_cond_signal(&c->rq_cond);
	pthread_mutex_unlock(&c->rq_lock);
}

/* Detach everything p has attached: now (sync) or by the reaper. */
void sp_bs_detach_all_how(struct bs_ctx *c, struct bs_proc *p, bool sync)
{
	size_t i;

	if (p->dl.link || p->dl.fd >= 0) {
		sp_bs_detach_link(c, p->dl, sync);
		p->dl = (struct bs_link){ .fd = -1 };
	}
	for (i = 0; i < p->natt; i++) {
		if (p->att[i]->link.link || p->att[i]->link.fd >= 0)
			sp_bs_detach_link(c, p->att[i]->link, sync);
		free(p->att[i]);
	}
	p->natt = 0;
}

static void detach_all(struct bs_ctx *c, struct bs_proc *p)
{
	sp_bs_detach_all_how(c, p, false);
}

/*
 * Tell BPF the generation of p's image and whether it has probes (p is
 * stopped, or not started yet: BPF changes the entry only at its fork and
 * exec): SP_BS_PROBED_SHARED when its fork children need nothing before
 * they run, its markers being the hook file's shared links (and Ruby's
 * raise or Python's audit probe, which a child gets once it has lived a
 * while: sp_bs_attach_late()), else SP_BS_PROBED (they are held for
 * their own). running: p was not held (a process found running, a fork
 * child BPF could not stop, the maps look of sp_bs_verify_libs()) and may
 * have exec'd since, its new image's entry then BPF's; the lookup that
 * tells is kept off the path of every held exec and fork.
 */
void sp_bs_set_tracked(struct bs_ctx *c, struct bs_proc *p, bool running)
{
	struct sp_bs_proc v = { .gen = p->gen, .probed = p->natt ? SP_BS_PROBED_SHARED : 0 }, now;
	size_t i;

	if (running &&
	    !bpf_map__lookup_elem(c->skel->maps.tgids, &p->pid, sizeof(p->pid), &now, sizeof(now),
				  0) && now.gen != p->gen)
		return;

	for (i = 0; i < p->natt; i++)
		if (!p->att[i]->shared && p->att[i]->probe != SP_PR_RUBY_RAISE &&
		    p->att[i]->probe != SP_PR_PY_AUDIT)
			v.probed = SP_BS_PROBED;

	bpf_map__update_elem(c->skel->maps.tgids, &p->pid, sizeof(p->pid), &v, sizeof(v),
			     BPF_EXIST);
}

/* p runs an image without probes for the modes asked: let BPF release
 * later execs of the same file (dev, inode, mtime) without stopping them. */
void sp_bs_mark_plain(struct bs_ctx *c, struct bs_proc *p)
{
	struct sp_bs_imgkey k = { 0 };
	uint32_t one = 1;
	char link[64];
	struct stat st;

	/* libs_unverified: what ld.so takes may have probes */
	if (p->runtimes || p->natt || c->nfuncs || p->env_probes || p->libs_unverified)
		return;
	snprintf(link, sizeof(link), "/proc/%u/exe", p->pid);
	if (stat(link, &st))
		return;
	k.ino = st.st_ino;
	k.dev = major(st.st_dev) << 20 | minor(st.st_dev);
	k.mtime = st.st_mtim.tv_sec;
	bpf_map__update_elem(c->skel->maps.images, &k, sizeof(k), &one, sizeof(one), BPF_ANY);
}

/* Let a process BPF stopped go: continued first, then no longer held (so
 * that the guardian continues it should sp-record die in between). */
void sp_bs_cont(struct bs_ctx *c, uint32_t pid)
{
	if (kill(pid, SIGCONT) && errno != ESRCH)
		sp_warn("pid %u: cannot continue: %s", pid, strerror(errno));
	bpf_map__delete_elem(c->skel->maps.held, &pid, sizeof(pid), 0);
}

/* p reached a bound: said once. */
void sp_bs_proc_capped(struct bs_proc *p, const char *what, unsigned int bound)
{
	char name[80];

	if (p->capped)
		return;
	p->capped = true;
	sp_span_rings_comm(p->pid, name, sizeof(name));
	sp_warn("spans: pid %u (%s): more than %u %s: later ones are not kept (its marks "
		"go on without them)", p->pid, name, bound, what);
}

static void fibers_release(struct bs_proc *p)
{
	p->fibers = false;
	sp_u64map_release(&p->fib_cur);
	sp_u64map_release(&p->coro_next);
	sp_u64map_release(&p->fib_root);
	sp_u64map_release(&p->fib_known);
}

/* p's open-span counts and fibers go (an exec, its end). */
void sp_bs_spans_state_release(struct bs_ctx *c, struct bs_proc *p)
{
	c->fibers_live -= p->depth.n + p->fib_known.n;
	sp_u64map_release(&p->depth);
	sp_u64map_release(&p->rebuilt);
	sp_u64map_release(&p->rebuilt_tid);
	fibers_release(p);
}

/* p is gone: its links go to the reapers, its bookkeeping at a later poll
 * (sp_bs_forget_gone()). */
static void drop(struct bs_ctx *c, struct bs_proc *p)
{
	detach_all(c, p);
	p->gone_ns = sp_now_mono_ns();
	sp_grow(&c->gone, &c->cgone, c->ngone + 1, sizeof(*c->gone));
	c->gone[c->ngone++] = p;
}

/*
 * Whether pid names now a fork child of a process BPF follows: BPF's fork
 * hook put it in tgids itself, and its entry and rings are its own. (The
 * process an untrack let go ended, and a tracked one's child took its
 * number; BPF deleted that one's entry at its exit.)
 */
static bool followed_child(struct bs_ctx *c, uint32_t pid)
{
	struct sp_bs_proc v;
	uint32_t tgid, ppid;

	if (sp_procfs_status(pid, &tgid, &ppid) || tgid != pid || !ppid)
		return false;
	return !bpf_map__lookup_elem(c->skel->maps.tgids, &ppid, sizeof(ppid), &v, sizeof(v), 0);
}

/* Delete the span rings BPF knows of pid's threads. */
static void drop_rings_of(struct bs_ctx *c, uint32_t pid)
{
	struct bpf_map *rings = c->skel->maps.rings;
	uint32_t tid, next, *prev = NULL;
	struct sp_bs_ring r;

	/* a key deleted is not found again: the walk starts over */
	while (!bpf_map__get_next_key(rings, prev, &next, sizeof(next))) {
		if (!bpf_map__lookup_elem(rings, &next, sizeof(next), &r, sizeof(r), 0) &&
		    r.pid == pid && !bpf_map__delete_elem(rings, &next, sizeof(next), 0)) {
			prev = NULL;
			continue;
		}
		tid = next;
		prev = &tid;
	}
}

/*
 * A Ruby that died of a fault while Ruby's own C-method probes were set in
 * it (SP_RUBY_CMETHOD_PROBES=1 in a Ruby 3.1, or another Ruby): said, for
 * the probes can be why (docs/spans.md). status: its wait status.
 */
static void died_with_cmethod_probes(const struct bs_proc *p, int status)
{
	int sig = status & 0x7f;
	char name[80];

	if ((sig != SIGSEGV && sig != SIGABRT && sig != SIGBUS && sig != SIGILL) ||
	    !sp_bs_has_probe(p, SP_PR_RUBY_CMETHOD_ENTRY))
		return;
	sp_span_rings_comm(p->pid, name, sizeof(name));
	sp_warn("spans: pid %u (%s) died of signal %d (%s) while Ruby's C-method probes were "
		"set in it: Ruby 3.1's rb_dtrace_setup() crashes with them (docs/spans.md); "
		"the Ruby hook gives C methods without them", p->pid, name, sig, strsignal(sig));
}

/*
 * p was tracked for a process it was not: -a seeded a pid that no longer
 * named the process judged (sp_bs_all_take()), or that process's pid
 * forked the child p meanwhile. BPF tracks its pid no more and forgets
 * its threads' span rings (else drained into the ring buffer at their
 * ends), what was attached for it goes, and it is dropped as a gone
 * process is. Until it is forgotten (at the next poll at the earliest:
 * the ring buffer is read by then) what BPF sent of it is dropped, not
 * recorded (sp_bs_on_event()). BPF's entry and rings are left alone when
 * the pid names a tracked process's fork child by then: they are that
 * child's (followed_child()).
 */
void sp_bs_untrack(struct bs_ctx *c, struct bs_proc *p)
{
	if (!followed_child(c, p->pid)) {
		bpf_map__delete_elem(c->skel->maps.tgids, &p->pid, sizeof(p->pid), 0);
		drop_rings_of(c, p->pid);
	}
	p->untracked = true;
	p->exited = true;
	drop(c, p);
}

int sp_bs_on_proc_event(struct bs_ctx *c, const struct sp_bs_event *e)
{
	struct bs_proc *p = sp_bs_proc_get(c, e->pid), *parent;

	switch (e->kind) {
	case SP_BS_FORK:
		if (p) {	/* pid reuse of an exited one */
			sp_u64map_del(&c->by_pid, e->pid);
		}
		p = sp_bs_proc_new(c, e->pid);
		p->ppid = e->ppid;
		p->gen = (uint32_t)e->cookie;
		p->image_ns = e->time_ns;
		parent = sp_bs_proc_get(c, e->ppid);
		if (parent && parent->untracked) {	/* none of ours either */
			sp_bs_untrack(c, p);
			break;
		}
		/* not held: its raise and audit probes wait (sp_bs_attach_late) */
		p->late_probes = !(e->flags & (SP_BSF_STOPPED | SP_BSF_SHARED_MM));
		/* BPF stops a child when its parent has probes (if the kernel
		 * can: bpf_send_signal_task), never a vfork child */
		if (parent) {
			sp_bs_attach_like(c, p, parent, parent->natt && !(e->flags & SP_BSF_SHARED_MM));
			/* its hook's audit marks: its parent asked for them */
			p->hook_audit = parent->hook_audit;
		}
		p->late_probes &= ~1u;
		if (p->late_probes)
			sp_bs_attach_late(c, p);
		if (parent && !(e->flags & SP_BSF_SHARED_MM))
			sp_bs_copy_strs(c, p, parent);
		if (p->natt)
			sp_bs_set_tracked(c, p, !(e->flags & SP_BSF_STOPPED));
		/* its own ld.so probe: a vfork child gets one when it execs */
		if (!(e->flags & SP_BSF_SHARED_MM))
			sp_bs_attach_dl_later(c, p);
		c->forks++;
		if (e->flags & SP_BSF_STOPPED)
			c->stopped_forks++;
		break;
	case SP_BS_EXEC:
		if (!p)
			p = sp_bs_proc_new(c, e->pid);
		sp_bs_emit_health(c, p, e->time_ns, true);
		memset(p->hits, 0, sizeof(p->hits));	/* a new image's probes */
		/* stale from now on (generation): the reaper detaches them */
		detach_all(c, p);
		p->gen = (uint32_t)e->cookie;
		p->image_ns = e->time_ns;
		p->runtimes = 0;
		p->announced = 0;
		p->py_active = false;
		p->hook_audit = false;	/* the new image's hook asks again */
		p->cm_pending = p->cm_refused = false;
		p->boot_open = 0;	/* the new image's hook marks its own */
		p->boot_key = 0;
		p->late = p->no_spans = false;
		p->ret_pending = p->py_none = p->env_probes = p->libs_unverified = false;
		p->unhooked = false;
		p->running = false;	/* stopped at this exec (attached stays: whose
					 * environment it has) */
		memset(p->found, 0, sizeof(p->found));
		p->rlib[0][0] = p->rlib[1][0] = 0;
		p->late_probes = 0;
		p->ppid = 0;
		sp_bs_spans_state_release(c, p);
		if (e->flags & SP_BSF_PLAIN) {
			/* known without probes: BPF did not stop it */
			c->plain_execs++;
			p->exe[0] = 0;
			p->nmap = 0;
			sp_bs_attach_dl_later(c, p);
			break;
		}
		c->stopped_execs++;
		sp_bs_attach_image(c, p, true);
		sp_bs_attach_dl(c, p, false);
		if (p->libs_unverified)
			sp_bs_verify_later(c, p);
		if (p->natt) {
			/* not held (no guard, the held map full): it may have
			 * exec'd again since */
			sp_bs_set_tracked(c, p, !(e->flags & SP_BSF_STOPPED));
			c->probed_images++;
		} else {
			sp_bs_mark_plain(c, p);
		}
		break;
	case SP_BS_EXIT:
		if (!p)
			return 0;
		died_with_cmethod_probes(p, (int)e->line);
		p->exited = true;	/* ran to its end: the health's verdicts */
		sp_bs_emit_health(c, p, e->time_ns, false);
		drop(c, p);
		return 0;
	}
	if (e->flags & SP_BSF_STOPPED)
		sp_bs_cont(c, e->pid);
	return 0;
}

/*
 * The processes whose exit was read before the last poll and at least
 * 200 ms ago: the last chunks of their other threads (which may exit
 * after the leader, under load well after) are in by then.
 */
void sp_bs_forget_gone(struct bs_ctx *c, uint64_t now)
{
	size_t i, k = 0;
	bool forgot = false;

	for (i = 0; i < c->ngone; i++) {
		struct bs_proc *p = c->gone[i];
		uint64_t *at = sp_u64map_get(&c->by_pid, p->pid);

		if (!p->gone_seen || now - p->gone_ns < 200000000 || c->finishing) {
			p->gone_seen = true;
			c->gone[k++] = p;
			continue;
		}
		sp_u64map_release(&p->strs);
		c->addr_live -= p->by_addr;
		sp_bs_spans_state_release(c, p);
		if (at && c->procs[*at - 1] == p)
			sp_u64map_del(&c->by_pid, p->pid);
		forgot = true;
	}
	c->ngone = k;
	/* a container's files that its last process used, or that wait */
	if (forgot || (c->roots_idle && now >= c->roots_due))
		sp_bs_roots_sweep(c, now);
}

/* Track pid in BPF (its descendants: sp_bs_seed_descendants()).
 * cmd: started by sp-record (the activators are in its environment);
 * walk: the recording follows forks (a command's, late). */
int sp_bs_track(struct bs_ctx *c, uint32_t pid, bool cmd)
{
	/* a running process (-p) counts the hits of a hook's markers from
	 * their attach on, not from sp_bs_set_tracked(): a hook without span rings
	 * marks the frames open then at once, as markers (runtime/hook/ring.h:
	 * sp_rt_resync_due()), and they would be lost */
	struct sp_bs_proc one = { .gen = 1, .probed = cmd ? 0 : SP_BS_PROBED_SHARED };

	if (bpf_map__update_elem(c->skel->maps.tgids, &pid, sizeof(pid), &one, sizeof(one),
				 BPF_ANY))
		return sp_error_errno("spans: cannot track pid %u", pid);
	return 0;
}

int sp_bs_seed(struct bs_ctx *c, uint32_t pid, const char *self, bool cmd, bool walk)
{
	char exe[PATH_MAX], link[64];
	struct bs_proc *p;
	ssize_t n;

	if (sp_bs_track(c, pid, cmd))
		return -1;
	if (sp_bs_proc_get(c, pid))
		return 0;
	p = sp_bs_proc_new(c, pid);
	p->gen = 1;
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	/* Our own child before exec: the exec hook attaches. */
	if (!strcmp(exe, self))
		return 0;
	p->attached = !cmd;
	p->running = true;
	p->late = cmd && walk;
	sp_bs_attach_image(c, p, false);
	sp_bs_attach_dl(c, p, false);
	if (p->natt)
		sp_bs_set_tracked(c, p, true);
	/* -a takes only processes that carry a hook */
	if (!cmd && !c->all && c->o->explicit_modes &&
	    (c->o->modes & (SP_SPANS_RUBY | SP_SPANS_PYTHON)))
		sp_info("pid %u was started without sp-record: %s (see docs/spans.md)", pid,
			p->runtimes & SP_SPANS_RUBY ? "its Ruby method spans need a TracePoint "
			"or sp-record's hook in it" : p->runtimes & SP_SPANS_PYTHON ? "its Python "
			"function spans need a profile function or sp-record's hook in it" :
			"a Ruby or Python it starts has no sp-record hook either (Ruby method spans "
			"need a TracePoint then, Python function spans a profile function)");
	return 0;
}

/*
 * The processes the -p roots started before the fork hook knew them (a
 * shell's, a supervisor's), found with their start times breadth first
 * (sp_procfs_descendants(): no recursion, however deep the tree its user
 * made), at most SP_BS_SEED_KIDS_MAX, each taken as -a takes a process
 * (sp_bs_all_take()): one that ended and whose pid another process took
 * by the end of its seed is let go with all it got. 0, or -1 (c->err).
 */
int sp_bs_seed_descendants(struct bs_ctx *c, const char *self)
{
	uint32_t *kids = NULL;
	uint64_t *starts = NULL;
	size_t n = 0, more = 0, i;

	if (sp_procfs_descendants(c->pids, c->npids, SP_BS_SEED_KIDS_MAX, &kids, &starts, &n,
				  &more))
		return 0;	/* none to be found: as with none */
	for (i = 0; i < n && !c->err; i++)
		if (starts[i] && kids[i] != (uint32_t)getpid())
			sp_bs_all_take(c, kids[i], starts[i], self);
	if (more)
		sp_warn("spans: %zu more processes started by the -p ones before the attach are "
			"not followed (at most %d are taken): name them with -p", more,
			SP_BS_SEED_KIDS_MAX);
	free(kids);
	free(starts);
	return c->err ? -1 : 0;
}
