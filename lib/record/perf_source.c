// SPDX-License-Identifier: MIT
/*
 * The "perf" source of sp-record (perf_source.h): stack samples from
 * perf_event_open and the processes, threads and executable mappings they
 * need. This file is the source itself, as sp-record drives it
 * (source.h); perf_sourceP.h maps the files that do the work.
 *
 * Records are copied out of the rings on every poll and processed in time
 * order once no ring can still hold an older one (perf_queue.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "perf_sourceP.h"
#include "proc_identity.h"
#include "procfs.h"
#include "sp.h"
#include "unwind.h"

/* A record copied out of its ring, waiting for its turn. */
struct pending {
	struct sp_perf_qitem head;
	struct perf_event_header *h;
};

/* The time of a record other than a sample (0: none). */
static uint64_t record_time(struct perf *p, const struct perf_event_header *h)
{
	struct sp_perf_id id;

	if (h->type == PERF_RECORD_FORK || h->type == PERF_RECORD_EXIT)
		return h->size >= sizeof(*h) + sizeof(struct perf_task_rec) ?
		       ((const struct perf_task_rec *)(h + 1))->time : 0;
	return sp_perf_parse_id(h, p->attr.sample_type, &id) ? 0 : id.time;
}

static void process_record(struct perf *p, const struct perf_event_header *h)
{
	struct sp_perf_id id;

	if (h->type == PERF_RECORD_SAMPLE) {
		sp_perf_on_sample(p, h);
		return;
	}
	if (sp_perf_parse_id(h, p->attr.sample_type, &id))
		return;
	switch (h->type) {
	case PERF_RECORD_MMAP2:
		sp_perf_on_mmap2(p, h, &id);
		break;
	case PERF_RECORD_COMM:
		sp_perf_on_comm(p, h, &id);
		break;
	case PERF_RECORD_FORK:
		sp_perf_on_fork(p, h);
		break;
	case PERF_RECORD_EXIT:
		sp_perf_on_exit(p, h);
		break;
	case PERF_RECORD_LOST:
		sp_perf_on_lost(p, h, &id);
		break;
	default:
		break;
	}
}

/* Each record is copied out of its ring (so the kernel can reuse the space),
 * a sample with only the stack bytes the kernel wrote: a 32 KiB copy of a
 * shallow stack is a few hundred bytes to move and hold. */
static void read_record(void *ctx, const struct perf_event_header *h)
{
	struct perf *p = ctx;
	uint64_t t;
	struct perf_event_header *c = sp_perf_record_dup(h, p->attr.sample_type, p->nregs, &t);
	struct pending *it;

	it = sp_perf_queue_push(&p->q, h->type == PERF_RECORD_SAMPLE ? t : record_time(p, c));
	if (h->type == PERF_RECORD_MMAP2)
		sp_perf_peek_mmap2(p, c, it->head.time);
	else if (h->type == PERF_RECORD_FORK && p->interp &&
		 h->size >= sizeof(*h) + sizeof(struct perf_task_rec)) {
		const struct perf_task_rec *t = (const void *)(c + 1);

		if (t->pid == t->tid)
			sp_interp_on_fork(p->interp, t->ppid, t->pid, t->time);
	}
	it->h = c;
}

static void handle_record(void *ctx, void *item)
{
	struct pending *it = item;

	process_record(ctx, it->h);
	free(it->h);
}

static void drop_record(void *ctx, void *item)
{
	free(((struct pending *)item)->h);
}

uint32_t sp_perf_stack_copy_all(void)
{
	int *cpus = NULL, n = sp_online_cpus(&cpus);

	free(cpus);
	return sp_perf_ring_copy_all(n > 0 ? (unsigned int)n : 1, SP_PERF_STACK_COPY);
}

/* A running process of the cgroups -a is limited to (docs/containers.md). */
static bool in_cgroups(struct perf *p, uint32_t pid)
{
	struct sp_proc_identity *id = sp_xcalloc(1, sizeof(*id));
	bool in = sp_procfs_identity(pid, id) == 0 && id->cgroup[0] &&
		  sp_cgroup_filter_match(p->o.cgroups, id->cgroup);

	free(id);
	return in;
}

#define SP_PERF_MAX_CHILDREN	4096	/* existing children of -p processes taken */

/*
 * The -p processes, then the processes they started before the attach
 * (sp-record -p of a shell, a supervisor or a pool): sampled and defined
 * as theirs, as the kernel events' filter already takes them. The array
 * is p->found_pids, freed with p.
 */
static const struct sp_target *with_descendants(struct perf *p, const struct sp_target *t,
						struct sp_target *all)
{
	uint32_t *kids = NULL, *v;
	uint64_t *starts = NULL;
	size_t n = 0, more = 0;

	if (sp_procfs_descendants(t->pids, t->npids, SP_PERF_MAX_CHILDREN, &kids, &starts, &n,
				  &more) || !n) {
		free(kids);
		free(starts);
		return t;
	}
	v = sp_xcalloc(t->npids + n, sizeof(*v));
	memcpy(v, t->pids, t->npids * sizeof(*v));
	memcpy(v + t->npids, kids, n * sizeof(*v));
	free(kids);
	sp_info("-p: also recording %zu process%s the given ones started before the "
		"attach (first: pid %u)", n, n == 1 ? "" : "es", v[t->npids]);
	if (more)
		sp_warn("-p: %zu more processes started by the given ones are not recorded "
			"(at most %d are taken): name them with -p", more, SP_PERF_MAX_CHILDREN);
	free(p->found_pids);
	p->found_pids = v;
	/* checked once their events are open (perf_events.c) */
	free(p->found_starts);
	p->found_starts = starts;
	*all = *t;
	all->pids = v;
	all->npids = (unsigned int)(t->npids + n);
	return all;
}

/* Whether the i-th -p pid is read from /proc: a found child only while
 * its pid names the process listed (0 once its events found it had not,
 * perf_events.c; checked again just before, its mappings being read
 * later than its events were opened). */
static bool found_still(const struct perf *p, const struct sp_target *t, size_t i)
{
	if (i < p->nroots || !p->found_starts || t->pids != p->found_pids)
		return true;
	return t->pids[i] && sp_procfs_same_process(t->pids[i], p->found_starts[i - p->nroots]);
}

static int perf_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct perf *p = s->priv;
	struct sp_target all;
	uint32_t *pids = NULL;
	size_t npids = 0, i;

	p->out = out;
	p->q.last_pass = p->q.bound = sp_now_mono_ns();
	p->roots = sp_xcalloc(t->npids + 1, sizeof(*p->roots));
	memcpy(p->roots, t->pids, t->npids * sizeof(*p->roots));
	p->nroots = t->npids;
	p->system_wide = t->system_wide;
	if (sp_perf_cpus(p))
		return -1;
	s->fd = p->epfd;
	if (p->o.call_graph >= SP_CG_DWARF) {
		p->unw = sp_unwinder_new();
		if (!p->unw)
			return sp_error("cannot set up DWARF unwinding");
	}
	/* kernel symbols are read while the BPF programs load (a second or
	 * so): a read still under way when the command's first kernel frame
	 * comes stalls the loop, and an interpreter's stacks with it */
	if (geteuid() == 0 && !p->o.user_only)
		sp_perf_ksyms_start(p);
	sp_perf_bpf_wait(p);	/* ident and interp: before the events, no fork missed */
	/* A target that runs Ruby: its walkers load meanwhile (a command's
	 * began with the object, perf_bpf.c), awaited before it runs. Any
	 * other Ruby found loads them when it is (its samples until then
	 * counted as without them). */
	/* a command that is an interpreter: its kernel events' stacks from
	 * its first call (the events source attaches with its start) */
	if (p->interp && (p->cmd_kind == SP_ICMD_PYTHON || p->cmd_kind == SP_ICMD_RUBY))
		sp_interp_events_early(p->interp);
	if (p->interp && sp_interp_ruby_first(p->o.interp, p->cmd_kind, t->system_wide, t->pids,
					      t->npids, sp_interp_pid_ruby))
		sp_interp_ruby(p->interp, false);
	/* -p: sampled from the events' opening on, with the walkers in */
	if (!t->system_wide && !p->o.enable_on_exec)
		sp_interp_ruby(p->interp, true);
	/* The cgroups made since they were resolved (the BPF programs loaded
	 * meanwhile): their events are opened with the others', and their
	 * processes read with the others', not at the first pass. */
	if (t->system_wide && sp_cgroup_filter_following(p->o.cgroups))
		sp_cgroup_filter_follow(p->o.cgroups, sp_now_mono_ns());
	/* -p: the processes they started before the attach are theirs too
	 * (the kernel events' filter follows the same tree). */
	if (!t->system_wide && !p->o.enable_on_exec && !p->o.no_children)
		t = with_descendants(p, t, &all);
	if (sp_perf_open_events(p, t))
		return -1;
	/* the dummy event never overflows: no sample walk, loaded or attached */
	if (p->interp && sp_interp_attach(p->interp, p->fds, p->sideband ? 0 : p->nfds)) {
		sp_interp_free(p->interp);
		p->interp = NULL;
	}
	/* a stack naming new code wakes the loop: that code is read from the
	 * process before it can be freed, not at the next batch */
	if (p->interp && sp_interp_wake_fd(p->interp) >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, sp_interp_wake_fd(p->interp), &ev))
			sp_warn("interpreted frames: epoll_ctl: %s", strerror(errno));
	}
	if (p->o.enable_on_exec && !t->system_wide) {
		sp_interp_ruby(p->interp, true);	/* in before the command runs */
		return 0;
	}
	/* Processes that exist already: their records come from /proc. The
	 * events are open, so nothing that happens from now on is missed. */
	/* Their records say the recording's start, so that they come before
	 * every sample taken while they are read (nothing is merged out yet). */
	p->scan_time = p->q.bound;
	if (t->system_wide) {
		if (sp_procfs_pids(&pids, &npids) == 0) {
			for (i = 0; i < npids; i++)
				if (!p->cgroup_mode || in_cgroups(p, pids[i]))
					sp_perf_scan_process(p, pids[i]);
			free(pids);
		}
	} else {
		for (i = 0; i < t->npids; i++)
			if (found_still(p, t, i) &&
			    sp_perf_scan_process(p, t->pids[i]) && i < p->nroots) {
				p->scan_time = 0;
				return sp_error("pid %u exited during attach", t->pids[i]);
			}
		/* -p of a Ruby its maps did not show (not mapped yet): its
		 * walkers, asked for by the scan, in before the recording
		 * starts (-a goes on while they load) */
		sp_interp_ruby(p->interp, true);
	}
	p->scan_time = 0;
	/* The cgroups made while the events opened and /proc was read (a
	 * whole machine's processes: tens of milliseconds or more on a loaded
	 * one): taken now, not once the other sources have started too. */
	if (p->cgroup_mode)
		sp_perf_cgroups_follow(p);
	return 0;
}

static int perf_poll(struct sp_source *s, struct sp_emit *out)
{
	struct perf *p = s->priv;
	int n;

	p->out = out;
	sp_perf_cgroups_follow(p);
	/* Interpreted stacks first: each was written before its perf sample. */
	if (p->interp)
		sp_interp_drain(p->interp, out);
	n = (int)sp_perf_queue_poll(&p->q, p->epfd, p->rings, p->ncpus);
	sp_perf_jit_poll(p, sp_now_mono_ns());	/* before the samples go out */
	sp_perf_ksyms_poll(p);	/* an interpreter found: module symbols meanwhile */
	sp_perf_flush_pending_execs(p, p->q.bound);
	return n;
}

static uint64_t perf_watermark(struct sp_source *s)
{
	struct perf *p = s->priv;

	return p->finished ? UINT64_MAX : p->q.bound;
}

static int perf_finish(struct sp_source *s, struct sp_emit *out)
{
	struct perf *p = s->priv;
	size_t i;
	int n;

	p->out = out;
	for (i = 0; i < p->nfds; i++)
		ioctl(p->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	if (p->interp)
		sp_interp_drain(p->interp, out);
	n = (int)sp_perf_queue_finish(&p->q, p->rings, p->ncpus);
	p->st.lost += sp_perf_lost_unsaid(&p->lost, &p->attr, p->fds, p->fd_cpu, p->nfds,
					  p->q.last_pass, p->out->emit, p->out->ctx, "");
	sp_perf_flush_pending_execs(p, UINT64_MAX);
	sp_perf_procs_finish(p);
	sp_perf_ksyms_finish(p);
	if (p->interp)
		sp_interp_finish(p->interp, out, p->q.bound);
	sp_perf_cgroups_finish(p);
	if (p->unseen_unnamed)
		sp_info("%" PRIu64 " sampled processes were gone and unknown to the kernel's map: "
			"recorded by their pid only", p->unseen_unnamed);
	if (p->ended_late)
		sp_info("%" PRIu64 " samples of processes read after their end: kept with "
			"their pid, no second process record", p->ended_late);
	if (p->kernel_astray)
		sp_info("%" PRIu64 " addresses below the kernel's half in kernel callchains "
			"left out (no kernel code: the kernel's unwinder went astray); their "
			"samples are kept", p->kernel_astray);
	if (p->st.bad + p->q.bad)
		sp_warn("%" PRIu64 " malformed perf records skipped", p->st.bad + p->q.bad);
	p->q.bound = UINT64_MAX;
	p->finished = true;
	return n < 0 ? -1 : 0;
}

/* The header's word for the interpreters followed (written before the
 * start: from the options, as perf_start() decides). */
static const char *interp_word(const struct perf *p)
{
	if (p->o.interp == SP_INTERP_NONE ||
	    (p->sideband && p->o.interp_no_events && p->o.interp_no_offcpu))
		return "";
	return p->o.interp == SP_INTERP_RUBY ? " interp=ruby3.1" :
	       p->o.interp == SP_INTERP_PYTHON ? " interp=python3.11" :
	       " interp=python3.11,ruby3.1";
}

static void perf_describe(struct sp_source *s, char *f, size_t fsize, char *u, size_t usize)
{
	struct perf *p = s->priv;
	static const char *const cg[] = { "none", "fp", "dwarf", "auto" };
	char copy[32] = "";

	if (p->sideband) {
		/* no samples, so no stacks: only what tracks processes and mappings */
		snprintf(f, fsize, "perf=dummy samples=none%s%s",
			 p->build_id_ok ? " mmap2-build-id" : "", interp_word(p));
		snprintf(u, usize, "%s", p->build_id_ok ? "" : "mmap2-build-id");
		return;
	}
	/* stack-size=: the copy, for readers that word hints (stackquality.h) */
	if (p->o.call_graph >= SP_CG_DWARF)
		snprintf(copy, sizeof(copy), " stack-size=%u", p->o.stack_size);
	snprintf(f, fsize, "perf=%s callchain=%s%s%s%s%s%s", p->o.event,
		 cg[p->o.call_graph & 3], copy,
		 p->kernel_ok && !p->o.user_only ? " kernel-stacks" : "",
		 p->o.kernel_only ? "" : " user-stacks",
		 p->build_id_ok ? " mmap2-build-id" : "", interp_word(p));
	snprintf(u, usize, "%s%s", p->kernel_ok || p->o.user_only ? "" : "kernel-stacks",
		 p->build_id_ok ? "" : (p->kernel_ok || p->o.user_only ? "mmap2-build-id" :
					" mmap2-build-id"));
}

static void perf_free(struct sp_source *s)
{
	struct perf *p;
	size_t i;

	if (!s)
		return;
	p = s->priv;
	if (p) {
		if (p->bpf_started)
			sp_perf_bpf_wait(p);	/* its objects are freed below */
		sp_perf_ksyms_release(p);
		for (i = 0; i < p->ncpus; i++)
			sp_perf_ring_unmap(&p->rings[i]);
		for (i = 0; i < p->nfds; i++)
			close(p->fds[i]);
		for (i = 0; i < p->ncpus; i++)
			if (p->cpus[i].own_fd)
				close(p->cpus[i].fd);
		if (p->epfd >= 0)
			close(p->epfd);
		sp_perf_queue_release(&p->q, drop_record);
		sp_perf_procs_free(p);
		if (p->unw)
			sp_unwinder_free(p->unw);
		sp_interp_free(p->interp);
		sp_ident_bpf_free(p->ident);
		sp_perf_map_free(&p->frames);
		sp_perf_map_free(&p->frames_raw);
		free(p->cpus);
		free(p->rings);
		free(p->fds);
		free(p->fd_cpu);
		sp_perf_lost_release(&p->lost);
		free(p->cg_fds);
		free(p->roots);
		free(p->found_pids);
		free(p->found_starts);
		free(p);
	}
	free(s);
}

static void read_vdso(struct perf *p)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	FILE *f;
	char line[512];
	unsigned long long a, b;

	if (!base)
		return;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2 &&
		    a == base) {
			p->vdso_ok = sp_elf_info_mem((void *)(uintptr_t)a, b - a, &p->vdso) == 0;
			break;
		}
	}
	fclose(f);
}

/* The writer's ids renumbered (source.h): what the processes and the
 * interpreters keep goes through m; the frame caches, keyed by module ids
 * and as large as every frame ever sampled, start over. */
static void perf_remap(struct sp_source *s, const struct sp_remap *m)
{
	struct perf *p = s->priv;

	sp_perf_procs_remap(p, m);
	sp_interp_remap(p->interp, m);
	sp_perf_map_free(&p->frames);
	sp_perf_map_free(&p->frames_raw);
	/* not ids, but as many as the files ever unwound (measured: the
	 * most of what a day of new binaries would keep) */
	if (p->unw)
		sp_unwinder_trim(p->unw);
}

struct sp_source *sp_perf_source_new(const struct sp_perf_opts *o)
{
	struct sp_source *s = sp_xcalloc(1, sizeof(*s));
	struct perf *p = sp_xcalloc(1, sizeof(*p));

	s->name = "perf";
	s->fd = -1;
	s->priv = p;
	s->start = perf_start;
	s->poll = perf_poll;
	s->watermark = perf_watermark;
	s->finish = perf_finish;
	s->describe = perf_describe;
	s->free = perf_free;
	s->remap = perf_remap;
	p->epfd = -1;
	sp_perf_queue_init(&p->q, sizeof(struct pending), read_record, handle_record, p);
	p->o = *o;
	if (!p->o.stack_size)
		p->o.stack_size = SP_PERF_STACK_COPY;
	if (!p->o.event)
		p->o.event = "cpu-clock";
	if (!p->o.period && !p->o.freq)
		p->o.freq = 999;
	if (sp_perf_event_lookup(p->o.event, &p->type, &p->config, &p->hardware)) {
		sp_error("unknown event '%s' (known: %s)", p->o.event, sp_perf_event_names());
		goto fail;
	}

	sp_perf_attr_setup(p);
	if (sp_perf_attr_probe(p))
		goto fail;
	if (!p->kernel_ok && !p->o.user_only && !p->sideband)
		sp_warn("kernel stacks need root or perf_event_paranoid <= 1 (it is %d): "
			"recording user stacks only", sp_perf_paranoid_level());
	read_vdso(p);
	sp_perf_bpf_start(p);	/* while the other sources load theirs */
	return s;
fail:
	perf_free(s);
	return NULL;
}

void sp_perf_source_info(struct sp_source *s, struct sp_perf_info *info)
{
	struct perf *p = s->priv;

	info->event = p->o.event;
	info->freq = p->o.period ? 0 : p->o.freq;
	info->period = p->o.period;
	info->call_graph = p->sideband ? SP_CG_NONE : p->o.call_graph;
	info->flags = p->sideband ? 0 :
		      (p->kernel_ok && !p->o.user_only ? SP_HDR_KERNEL_STACKS : 0) |
		      (p->o.kernel_only || p->o.call_graph == SP_CG_NONE ? 0 : SP_HDR_USER_STACKS);
}

void sp_perf_source_stats(struct sp_source *s, struct sp_perf_stats *st)
{
	const struct perf *p = s->priv;

	*st = p->st;
	st->bad += p->q.bad;	/* the rings' malformed records, with the samples' */
}
