// SPDX-License-Identifier: MIT
/*
 * Off-CPU time (perf_offcpu.h): context-switch samples paired with the
 * switch-in that ends each wait.
 *
 * The rings of all CPUs are drained into one queue of small records (a
 * sample's stack is unwound while it is still in the ring, so only its
 * addresses are kept), and the queue is processed in time order up to the
 * previous pass (perf_queue.c, as for the perf source): a thread's
 * switch-out and its switch-in are often on different CPUs.
 *
 * A thread of a process that runs a known interpreter (interpP.h) also
 * has its interpreted stack read as it is switched out (the perf source's
 * BPF program, on these events too); a recorded wait's stack has it
 * spliced in place of the eval loop's frames, as a CPU sample's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bpf_cgfilter.h"
#include "cgroup_filter.h"
#include "hashmap.h"
#include "interpP.h"
#include "ksym_writer.h"
#include "perf_offcpu.h"
#include "perf_queue.h"
#include "perf_ring.h"
#include "procfs.h"
#include "sp.h"
#include "stackquality.h"
#include "stream/schema.h"
#include "unwind.h"
#include "writer.h"

#define MAX_FRAMES	127
#define MAX_VERDICTS	4096	/* cgroups whose verdict is kept at once */
#define SYSTEM_WIDE_PAGES 512	/* ring pages per CPU with -a, unless -m */
#define KERNEL_START	0xffff800000000000ull
#define WHERE_FILES	16	/* files a wait's user frames are placed in */
#define NO_FILE		0xff
#define HOLD_POLLS	4	/* a wait waits this many polls for its modules */
#define HOLD_MAX	4096	/* and at most this many waits wait at once */

#ifndef PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
#define PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (1 << 14)
#endif

enum { OPT_OFFCPU = 0x2100, OPT_OFFCPU_MIN };

/*
 * Where a sample's user frames lie, taken as it is read from the ring (the
 * unwinder's view then; by the wait's end the process may have exec'd or
 * gone): per frame its file (an index into f[], NO_FILE: none) and its ELF
 * address there. The paths are the unwinder's, valid for its life.
 */
struct wheres {
	unsigned int nf;
	struct {
		const char *path;
		uint64_t pgoff;
	} f[WHERE_FILES];
	struct {
		uint64_t rel;
		uint8_t file;
	} fr[];
};

/* A record taken from a ring, waiting to be processed in time order. */
struct qrec {
	struct sp_perf_qitem head;	/* time */
	uint32_t type, misc;
	uint32_t pid, tid, cpu;
	uint8_t ust;		/* unwind status of a sample */
	uint8_t sflags;		/* its SP_SAMPLE_* */
	uint16_t nk, nu;	/* kernel and user addresses in ips, each leaf first */
	uint64_t *ips;
	struct wheres *wh;	/* of the nu user addresses; NULL: none */
};

/* A thread that switched out and has not run again yet. */
struct blocked {
	uint64_t out_time;
	uint32_t pid, cpu;
	bool preempt;
	uint8_t ust, sflags;
	uint16_t nk, nu;
	uint64_t *ips;
	struct wheres *wh;
	struct sp_interp_stack *istack;	/* its interpreted stack, NULL: none */
};

/* A wait that ended, held until the perf source has written the modules
 * its frames are in (or long enough). */
struct held {
	struct blocked b;	/* owns b's ips, wh and istack */
	uint64_t t_in;
	uint64_t poll;		/* the poll it was held at */
	uint32_t tid;
};

struct pidmods {
	uint64_t *ids;		/* module ids of this pid, in order of definition */
	size_t n, cap;
};

struct offcpu {
	struct sp_offcpu_opts o;
	struct perf_event_attr attr;
	unsigned int nregs;
	int epfd;
	int *fds;
	unsigned int *fd_cpu;		/* the CPU of each fd's ring */
	struct sp_perf_ring *rings;
	size_t nfds;
	struct sp_perf_lost lost;	/* what the rings said they lost, per CPU */
	struct sp_unwinder *unw;
	struct sp_emit *out;
	struct sp_perf_queue q;		/* struct qrec */
	bool finished, started;
	struct sp_u64map blocked;	/* tid -> struct blocked * */
	struct sp_u64map parent;	/* pid -> ppid (forks seen) */
	struct sp_u64map pidmods;	/* pid -> struct pidmods * */
	struct sp_u64map modpath;	/* hash of (path, pgoff) -> newest module id */
	uint64_t mods_scanned;
	struct held *held;		/* waits held for their modules, in time order */
	size_t held_at, nheld, held_cap;	/* first, end */
	uint64_t polls;
	uint64_t kmod;			/* kernel module id, 0 = none yet */
	struct sp_ksym_writer ksyms;	/* kernel frames' symbols (ksym_writer.h) */
	uint64_t kernel_astray;		/* user-half addresses in kernel chains, left out */
	struct sp_stackq *stackq;
	bool interp;			/* the interpreters' program is on the events */
	uint32_t self;			/* -a: our pid, whose switches are no one's waits */
	struct sp_u64map cg_verdict;	/* cgroup id -> 1 in the filter's, 2 not */
	unsigned int cg_known;		/* the filter's gen the verdicts saw */
	struct sp_cgfilter_bpf *cgk;	/* the other cgroups dropped in the kernel too */
	struct sp_offcpu_stats st;
	char why[160];			/* why start() failed */
};

/* ---- options ---- */

static const struct argp_option offcpu_options[] = {
	{ "off-cpu", OPT_OFFCPU, NULL, 0,
	  "Also record where threads block and for how long (off-CPU samples, weight in ns)", 0 },
	{ "off-cpu-min", OPT_OFFCPU_MIN, "DURATION", 0,
	  "Record only waits at least this long (default 1ms; shorter ones are counted)", 0 },
	{ 0 }
};

static error_t parse_offcpu(int key, char *arg, struct argp_state *state)
{
	struct sp_offcpu_opts *o = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		if (o) {
			memset(o, 0, sizeof(*o));
			o->min_ns = SP_OFFCPU_DEFAULT_MIN_NS;
			o->kernel_frames = true;
		}
		break;
	case OPT_OFFCPU:
		o->enabled = true;
		break;
	case OPT_OFFCPU_MIN:
		if (sp_parse_duration(arg, &o->min_ns)) {
			argp_error(state, "invalid --off-cpu-min '%s': use a duration like 200us, "
				   "1ms, 0.5s", arg);
			return EINVAL;
		}
		o->enabled = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_offcpu_argp = {
	.options = offcpu_options,
	.parser = parse_offcpu,
};

/* ---- helpers ---- */

static int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return sp_perf_event_open(attr, pid, cpu, -1);
}

static void blocked_drop(struct offcpu *c, uint64_t tid)
{
	uint64_t *v = sp_u64map_get(&c->blocked, tid);

	if (v) {
		struct blocked *b = (struct blocked *)(uintptr_t)*v;

		free(b->ips);
		free(b->wh);
		sp_interp_stack_free(b->istack);
		free(b);
		sp_u64map_del(&c->blocked, tid);
	}
}

/* ---- modules: the ones the perf source wrote, found by file or by pid and address ---- */

static uint64_t modpath_key(const char *path, size_t len, uint64_t pgoff)
{
	return sp_hash_mix(sp_hash_bytes(path, len), pgoff);
}

static void scan_modules(struct offcpu *c)
{
	struct sp_defs *d = sp_writer_defs(c->out->w);
	uint64_t n = sp_defs_nmodules(d), id;

	for (id = c->mods_scanned + 1; id <= n; id++) {
		const struct sp_module *m = sp_defs_module(d, id);
		struct pidmods *pm;
		uint64_t *v;

		if (!m)
			continue;
		if (m->flags & SP_MOD_KERNEL) {
			if (!c->kmod)
				c->kmod = id;
			continue;
		}
		/* A file's module is written once, with the first process that
		 * mapped it: every other process finds it by file. */
		if (!(m->flags & SP_MOD_ANON)) {
			size_t len = 0;
			const char *path = sp_defs_str(d, m->path, &len);

			if (path)
				sp_u64map_put(&c->modpath, modpath_key(path, len, m->pgoff), id);
		}
		v = sp_u64map_get(&c->pidmods, m->pid);
		if (v) {
			pm = (struct pidmods *)(uintptr_t)*v;
		} else {
			pm = sp_xcalloc(1, sizeof(*pm));
			sp_u64map_put(&c->pidmods, m->pid, (uint64_t)(uintptr_t)pm);
		}
		sp_grow(&pm->ids, &pm->cap, pm->n + 1, sizeof(*pm->ids));
		pm->ids[pm->n++] = id;
	}
	c->mods_scanned = n;
}

static void pidmods_release(struct offcpu *c)
{
	size_t it = 0;
	uint64_t k, v;

	while (sp_u64map_next(&c->pidmods, &it, &k, &v)) {
		struct pidmods *pm = (struct pidmods *)(uintptr_t)v;

		free(pm->ids);
		free(pm);
	}
	sp_u64map_release(&c->pidmods);
	sp_u64map_release(&c->modpath);
	c->mods_scanned = 0;
}

/* The module of the file at path mapped from pgoff, 0 if not written yet. */
static uint64_t modpath_find(struct offcpu *c, const char *path, uint64_t pgoff)
{
	struct sp_defs *d = sp_writer_defs(c->out->w);
	size_t len = strlen(path), mlen = 0;
	const struct sp_module *m;
	const char *mpath;
	uint64_t *v = sp_u64map_get(&c->modpath, modpath_key(path, len, pgoff));

	if (!v || !(m = sp_defs_module(d, *v)) || m->pgoff != pgoff)
		return 0;
	mpath = sp_defs_str(d, m->path, &mlen);
	return mpath && mlen == len && !memcmp(mpath, path, len) ? *v : 0;
}

/* Where ips[0..n) of pid lie now (struct wheres), NULL if n is 0. */
static struct wheres *wheres_take(struct offcpu *c, uint32_t pid, const uint64_t *ips,
				  unsigned int n)
{
	struct wheres *w;
	const char *path;
	uint64_t pgoff, rel;
	unsigned int i, k;

	if (!n)
		return NULL;
	w = sp_xmalloc(sizeof(*w) + n * sizeof(w->fr[0]));
	w->nf = 0;
	for (i = 0; i < n; i++) {
		w->fr[i].file = NO_FILE;
		w->fr[i].rel = 0;
		if (sp_unwinder_where(c->unw, pid, ips[i], &path, &pgoff, &rel))
			continue;
		for (k = 0; k < w->nf && (w->f[k].path != path || w->f[k].pgoff != pgoff); k++)
			;
		if (k == w->nf) {
			if (w->nf == WHERE_FILES)
				continue;
			w->f[k].path = path;
			w->f[k].pgoff = pgoff;
			w->nf++;
		}
		w->fr[i].file = k;
		w->fr[i].rel = rel;
	}
	return w;
}

/* Whether the modules of every file b's frames lie in are written. */
static bool wheres_ready(struct offcpu *c, const struct blocked *b)
{
	unsigned int k;

	for (k = 0; b->wh && k < b->wh->nf; k++)
		if (!modpath_find(c, b->wh->f[k].path, b->wh->f[k].pgoff))
			return false;
	return true;
}

/* The newest module of pid (or of the process it was forked from) holding addr. */
static const struct sp_module *find_module(struct offcpu *c, uint32_t pid, uint64_t addr)
{
	struct sp_defs *d = sp_writer_defs(c->out->w);
	unsigned int hops;
	uint64_t p = pid, *v;
	size_t i;

	for (hops = 0; hops < 16; hops++) {
		v = sp_u64map_get(&c->pidmods, p);
		if (v) {
			struct pidmods *pm = (struct pidmods *)(uintptr_t)*v;

			for (i = pm->n; i-- > 0;) {
				const struct sp_module *m = sp_defs_module(d, pm->ids[i]);

				if (m && addr >= m->start && addr < m->end)
					return m;
			}
		}
		v = sp_u64map_get(&c->parent, p);
		if (!v || *v == p)
			break;
		p = *v;
	}
	return NULL;
}

/* A frame of b: kernel frame i, or user frame i. */
static uint64_t intern_frame(struct offcpu *c, const struct blocked *b, unsigned int i,
			     bool kernel)
{
	uint64_t ip = b->ips[kernel ? i : b->nk + i];
	const struct wheres *w = kernel ? NULL : b->wh;
	uint32_t pid = b->pid;
	struct sp_frame f = { 0 };
	const struct sp_module *m;
	bool leaf = i == 0;

	f.addr = ip;
	f.rel = ip;
	f.flags = leaf ? SP_FRAME_LEAF : 0;
	if (kernel) {
		f.mode = SP_FRAME_KERNEL;
		f.module = c->kmod;
		if (!f.module)
			f.pid = 0;
		/* its symbol before it (docs/spool.md, "Rules"); a return
		 * address is named by the call before it, as looked up */
		sp_ksym_writer_put(&c->ksyms, c->out->w, leaf || !ip ? ip : ip - 1);
	} else if (w && w->fr[i].file != NO_FILE &&
		   (f.module = modpath_find(c, w->f[w->fr[i].file].path,
					    w->f[w->fr[i].file].pgoff))) {
		f.rel = w->fr[i].rel;
	} else if ((m = find_module(c, pid, ip))) {
		f.module = m->id;
		if (!(m->flags & SP_MOD_ANON) && sp_unwinder_rel(c->unw, pid, ip, &f.rel))
			f.rel = ip - m->start + m->pgoff;
	} else {
		f.pid = pid;
	}
	return sp_writer_frame(c->out->w, &f);
}

/* What sp_interp_splice() needs of a user frame: 1 eval loop, 2 unmapped. */
static uint8_t eval_mark(struct offcpu *c, const struct sp_interpreters *ip,
			 const struct blocked *b, unsigned int i)
{
	uint64_t addr = b->ips[b->nk + i];

	if (sp_interp_is_eval(ip, b->pid, addr))
		return 1;
	if (b->wh && b->wh->fr[i].file != NO_FILE)
		return 0;
	return find_module(c, b->pid, addr) ? 0 : 2;
}

/* b's frames into ids, leaf first (its kernel frames, then its user
 * ones), the interpreted ones spliced in; how many. */
static unsigned int wait_frames(struct offcpu *c, const struct blocked *b, uint64_t *ids,
				unsigned int max)
{
	struct sp_interpreters *ip = c->interp && b->istack ? sp_interp_current() : NULL;
	uint8_t eval[2 * MAX_FRAMES];
	uint64_t pcs[2 * MAX_FRAMES];
	struct sp_interp_frames inf;
	unsigned int n = 0, i;
	uint64_t id;

	for (i = 0; i < b->nk; i++) {
		id = intern_frame(c, b, i, true);
		if (id) {
			eval[n] = 0;
			pcs[n] = 0;
			ids[n++] = id;
		}
	}
	for (i = 0; i < b->nu; i++) {
		id = intern_frame(c, b, i, false);
		if (id) {
			eval[n] = ip ? eval_mark(c, ip, b, i) : 0;
			pcs[n] = b->ips[b->nk + i];
			ids[n++] = id;
		}
	}
	if (ip && sp_interp_offcpu_frames(ip, c->out, b->pid, b->istack, &inf))
		sp_interp_splice(&inf, ids, pcs, eval, &n, max);
	return n;
}

static void emit_wait(struct offcpu *c, uint32_t tid, const struct blocked *b, uint64_t t_in)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	uint64_t ids[2 * MAX_FRAMES + SP_BPF_IFRAMES + 2], tmp;
	unsigned int n, i;
	const char *mod;
	uint64_t rel;

	scan_modules(c);
	n = wait_frames(c, b, ids, sizeof(ids) / sizeof(ids[0]));
	/* Root first, as the trie wants it. */
	for (i = 0; i < n / 2; i++) {
		tmp = ids[i];
		ids[i] = ids[n - 1 - i];
		ids[n - 1 - i] = tmp;
	}
	r.sample.time = t_in;
	r.sample.pid = b->pid;
	r.sample.tid = tid;
	r.sample.cpu = b->cpu;
	r.sample.stack = n ? sp_writer_stack_path(c->out->w, ids, n) : 0;
	r.sample.weight = t_in - b->out_time;
	r.sample.unwind = b->ust;
	r.sample.kind = SP_SAMPLE_OFFCPU;
	r.sample.flags = b->sflags;
	if (c->stackq) {
		mod = NULL;
		rel = 0;
		if (b->ust != SP_UNWIND_COMPLETE && b->nu) {
			const struct sp_module *m = find_module(c, b->pid, b->ips[b->nk + b->nu - 1]);
			unsigned int k = b->wh ? b->wh->fr[b->nu - 1].file : NO_FILE;

			if (k != NO_FILE)
				mod = b->wh->f[k].path;
			else
				mod = m ? sp_defs_strz(sp_writer_defs(c->out->w), m->path) : NULL;
			rel = b->ips[b->nk + b->nu - 1];
		}
		sp_stackq_add(c->stackq, b->ust, SP_SAMPLE_OFFCPU, mod, rel, 1);
	}
	c->st.waits++;
	c->st.wait_ns += r.sample.weight;
	c->out->emit(c->out->ctx, &r);
}

/*
 * Waits are held until the perf source has written the modules of the
 * files their frames lie in: it handles an MMAP2 record on its own pass,
 * often after the wait that needs it ends here. At most HOLD_POLLS polls
 * and HOLD_MAX waits, released in time order (the watermark is the oldest
 * held wait); all of them with force.
 */
static void held_release(struct offcpu *c, bool force)
{
	while (c->held_at < c->nheld) {
		struct held *h = &c->held[c->held_at];

		if (!force && c->nheld - c->held_at < HOLD_MAX && c->polls - h->poll < HOLD_POLLS &&
		    !wheres_ready(c, &h->b))
			break;
		emit_wait(c, h->tid, &h->b, h->t_in);
		free(h->b.ips);
		free(h->b.wh);
		sp_interp_stack_free(h->b.istack);
		c->held_at++;
	}
	if (c->held_at == c->nheld)
		c->held_at = c->nheld = 0;
}

/* b's wait, which ended at t_in, to be written once its modules are:
 * its addresses and interpreted stack move to the hold. */
static void held_push(struct offcpu *c, uint32_t tid, struct blocked *b, uint64_t t_in)
{
	struct held *h;

	if (c->held_at && c->nheld == c->held_cap) {
		memmove(c->held, c->held + c->held_at, (c->nheld - c->held_at) * sizeof(*c->held));
		c->nheld -= c->held_at;
		c->held_at = 0;
	}
	sp_grow(&c->held, &c->held_cap, c->nheld + 1, sizeof(*c->held));
	h = &c->held[c->nheld++];
	h->b = *b;
	h->t_in = t_in;
	h->poll = c->polls;
	h->tid = tid;
	b->ips = NULL;
	b->wh = NULL;
	b->istack = NULL;
	held_release(c, false);
}

/* ---- records, as read from the rings ---- */

/* Queue r (stamped r->head.time) in its place in the time order. */
static void queue(struct offcpu *c, const struct qrec *r)
{
	struct qrec *it = sp_perf_queue_push(&c->q, r->head.time);
	struct sp_perf_qitem head = it->head;

	*it = *r;
	it->head = head;
}

/*
 * Whether cgroup id (a switch-out sample's) is one of --cgroup's
 * directories or below one: by its id, else by its path (by handle).
 * Verdicts are kept per id, and forgotten when a directory is added (a
 * container started later, found by the perf source's follow).
 */
static bool cgroup_wanted(struct offcpu *c, uint64_t id)
{
	const struct sp_cgroup_filter *f = c->o.cgroups;
	char path[SP_PROC_CGROUP_MAX + 1];
	bool in = false;
	unsigned int i;
	uint64_t *v;

	if (f->gen != c->cg_known || c->cg_verdict.n >= MAX_VERDICTS) {
		sp_u64map_release(&c->cg_verdict);
		c->cg_known = f->gen;
	}
	v = sp_u64map_get(&c->cg_verdict, id);
	if (v)
		return *v == 1;
	for (i = 0; i < f->n && !in; i++)
		in = id && f->id[i] == id;
	/* a cgroup removed since has no path: none of its threads runs */
	if (!in && id && sp_cgroup_path_by_id(id, path, sizeof(path)) == 0)
		in = sp_cgroup_filter_match(f, path);
	sp_u64map_put(&c->cg_verdict, id, in ? 1 : 2);
	return in;
}

static void read_sample(struct offcpu *c, const struct perf_event_header *h)
{
	struct sp_perf_sample s;
	uint64_t kips[MAX_FRAMES], uips[MAX_FRAMES], fp[MAX_FRAMES];
	unsigned int nk = 0, nu = 0, nfp = 0, i;
	enum sp_unwind_status ust = SP_UNWIND_UNKNOWN;
	struct qrec q = { .type = PERF_RECORD_SAMPLE };
	int ctx = -1;

	/* Tid 0 is a CPU's idle task (-a): switched out when the CPU gets
	 * work, in when it has none. That is no thread waiting, and the idle
	 * tasks of every CPU share the tid. (In a pid namespace of our own,
	 * perf gives 0 for every task outside it too: none is ours to tell
	 * apart.) */
	if (sp_perf_parse_sample(h, c->attr.sample_type, c->nregs, &s) || !s.tid)
		return;
	if (s.pid == c->self)
		return;	/* -a: our own (when the kernel could not leave it out) */
	if (c->o.cgroups && !cgroup_wanted(c, s.cgroup)) {
		c->st.other_cgroups++;	/* its switch-in finds no wait: ignored */
		return;
	}
	for (i = 0; s.ips && i < s.nr; i++) {
		uint64_t ip = s.ips[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
			      ip == (uint64_t)PERF_CONTEXT_USER ? 0 : -1;
			continue;
		}
		if (ctx == 1 && ip < SP_KERNEL_START)
			c->kernel_astray++;	/* the kernel's unwinder went astray */
		else if (ctx == 1 && nk < MAX_FRAMES && c->o.kernel_frames)
			kips[nk++] = ip;
		else if (ctx == 0 && nfp < MAX_FRAMES)
			fp[nfp++] = ip;
	}
	if (s.regs && s.nregs && s.regs_abi) {
		nu = sp_unwinder_unwind(c->unw, s.pid, s.tid, s.regs, s.nregs, s.stack,
					s.stack_dyn_size, uips, MAX_FRAMES, &ust);
		if (sp_unwinder_fp_frames(c->unw))
			q.sflags = SP_SAMPLE_FP_GUESS;
		if (c->o.call_graph == SP_CG_AUTO && nfp &&
		    (ust == SP_UNWIND_NO_CFI || ust == SP_UNWIND_JIT || ust == SP_UNWIND_UNKNOWN_MAP)) {
			i = nu;
			nu = sp_unwinder_splice_fp(c->unw, s.pid, uips, nu, MAX_FRAMES, fp, nfp,
						   &ust);
			if (nu > i)
				q.sflags = SP_SAMPLE_FP_GUESS;
		}
	} else {
		memcpy(uips, fp, nfp * sizeof(*fp));
		nu = nfp;
	}
	q.head.time = s.time;
	q.pid = s.pid;
	q.tid = s.tid;
	q.cpu = s.cpu;
	q.ust = ust;
	q.nk = nk;
	q.nu = nu;
	if (nk + nu) {
		q.ips = sp_xmalloc((nk + nu) * sizeof(*q.ips));
		memcpy(q.ips, kips, nk * sizeof(*q.ips));
		memcpy(q.ips + nk, uips, nu * sizeof(*q.ips));
	}
	q.wh = wheres_take(c, s.pid, uips, nu);
	queue(c, &q);
}

struct task_body {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

static void read_record(void *ctx, const struct perf_event_header *h)
{
	struct offcpu *c = ctx;
	struct sp_perf_id id;
	struct qrec q = { .type = h->type, .misc = h->misc };

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		read_sample(c, h);
		return;
	case PERF_RECORD_MMAP2: {
		const struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			uint8_t ids[24];
			uint32_t prot, flags;
			char filename[];
		} *m = (const void *)(h + 1);
		size_t max = h->size - sizeof(*h) - sizeof(*m);

		if (h->size < sizeof(*h) + sizeof(*m) || !(m->prot & PROT_EXEC) ||
		    !memchr(m->filename, 0, max) || sp_perf_parse_id(h, c->attr.sample_type, &id))
			return;
		sp_unwinder_map_at(c->unw, m->pid, m->addr, m->addr + m->len, m->pgoff,
				   m->filename, id.time);
		return;
	}
	case PERF_RECORD_MMAP: {
		const struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			char filename[];
		} *m = (const void *)(h + 1);
		size_t max = h->size - sizeof(*h) - sizeof(*m);

		if (h->size < sizeof(*h) + sizeof(*m) || !memchr(m->filename, 0, max) ||
		    sp_perf_parse_id(h, c->attr.sample_type, &id))
			return;
		sp_unwinder_map_at(c->unw, m->pid, m->addr, m->addr + m->len, m->pgoff,
				   m->filename, id.time);
		return;
	}
	case PERF_RECORD_COMM: {
		const uint32_t *pt = (const void *)(h + 1);

		if (h->size < sizeof(*h) + 8 || !(h->misc & PERF_RECORD_MISC_COMM_EXEC) ||
		    sp_perf_parse_id(h, c->attr.sample_type, &id))
			return;
		sp_unwinder_exec_at(c->unw, pt[0], id.time);
		return;
	}
	case PERF_RECORD_FORK: {
		const struct task_body *t = (const void *)(h + 1);

		if (h->size < sizeof(*h) + sizeof(*t) || t->pid == t->ppid)
			return;
		sp_u64map_put(&c->parent, t->pid, t->ppid);
		/* The rings are read one after the other: the child's exec
		 * and new mappings, from another CPU's, may have been read
		 * already (the unwinder orders them by their time stamps). */
		sp_unwinder_fork_at(c->unw, t->ppid, t->pid, t->time);
		return;
	}
	case PERF_RECORD_EXIT: {
		const struct task_body *t = (const void *)(h + 1);

		if (h->size < sizeof(*h) + sizeof(*t))
			return;
		q.pid = t->pid;
		q.tid = t->tid;
		q.head.time = t->time;
		queue(c, &q);
		return;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		/* A CPU's event (-a) says who comes in or goes out too; the
		 * sample id, as a task's, is the task switched in or out. */
		if (sp_perf_parse_id(h, c->attr.sample_type, &id) || !id.tid)
			return;	/* (tid 0: a CPU's idle task, see read_sample()) */
		q.type = PERF_RECORD_SWITCH;
		q.pid = id.pid;
		q.tid = id.tid;
		q.head.time = id.time;
		q.cpu = id.cpu;
		queue(c, &q);
		return;
	case PERF_RECORD_LOST: {
		struct sp_record lost;

		/* said at its time, naming its CPU: a flight recorder's dump
		 * of the window holds it */
		if (sp_perf_parse_id(h, c->attr.sample_type, &id) ||
		    !sp_perf_lost_said(&c->lost, h, &id, &lost))
			return;
		c->st.lost += lost.lost.count;
		c->out->emit(c->out->ctx, &lost);
		return;
	}
	default:
		return;
	}
}

static void process(void *ctx, void *item)
{
	struct offcpu *c = ctx;
	struct qrec *r = item;
	struct blocked *b;
	uint64_t *v = sp_u64map_get(&c->blocked, r->tid), d;

	b = v ? (struct blocked *)(uintptr_t)*v : NULL;
	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		if (!b) {
			b = sp_xcalloc(1, sizeof(*b));
			sp_u64map_put(&c->blocked, r->tid, (uint64_t)(uintptr_t)b);
		}
		free(b->ips);
		free(b->wh);
		b->out_time = r->head.time;
		b->pid = r->pid;
		b->cpu = r->cpu;
		b->preempt = false;
		b->ust = r->ust;
		b->sflags = r->sflags;
		b->nk = r->nk;
		b->nu = r->nu;
		b->ips = r->ips;
		b->wh = r->wh;
		r->ips = NULL;
		r->wh = NULL;
		sp_interp_stack_free(b->istack);
		b->istack = NULL;
		if (c->interp && sp_interp_current())
			b->istack = sp_interp_offcpu_take(sp_interp_current(), c->out, r->pid,
							  r->tid, r->head.time);
		break;
	case PERF_RECORD_SWITCH:
		if (!b || !b->out_time || r->head.time < b->out_time)
			break;
		if (r->misc & PERF_RECORD_MISC_SWITCH_OUT) {
			/* The record that follows the sample of the same switch. */
			if (r->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
				b->preempt = true;
			break;
		}
		d = r->head.time - b->out_time;
		c->st.switches++;
		if (b->preempt) {
			c->st.preempted++;
			c->st.preempted_ns += d;
		} else if (d < c->o.min_ns) {
			c->st.short_waits++;
			c->st.short_ns += d;
		} else {
			held_push(c, r->tid, b, r->head.time);
		}
		b->out_time = 0;
		sp_interp_stack_free(b->istack);
		b->istack = NULL;
		break;
	case PERF_RECORD_EXIT:
		blocked_drop(c, r->tid);
		if (r->pid == r->tid) {
			sp_u64map_del(&c->parent, r->pid);
		}
		break;
	}
	free(r->ips);
	free(r->wh);
	r->ips = NULL;
	r->wh = NULL;
}

static void drop(void *ctx, void *item)
{
	free(((struct qrec *)item)->ips);
	free(((struct qrec *)item)->wh);
}

/* ---- the source ---- */

static void setup_attr(struct offcpu *c)
{
	struct perf_event_attr *a = &c->attr;

	memset(a, 0, sizeof(*a));
	sp_perf_attr_records(a, c->o.enable_on_exec);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_CALLCHAIN;
	if (c->o.cgroups)
		a->sample_type |= PERF_SAMPLE_CGROUP;
	c->nregs = sp_perf_attr_user_stack(a, c->o.call_graph, c->o.stack_size ?
					   c->o.stack_size : SP_OFFCPU_STACK_COPY);
	if (!c->o.kernel_frames)
		a->exclude_callchain_kernel = 1;
	a->context_switch = 1;
	a->wakeup_watermark = 32 << 10;
	/* The switch happens in the kernel: excluding it would drop every sample. */
	a->exclude_kernel = 0;
}

static int open_rings(struct offcpu *c, pid_t pid, const int *cpus, int ncpus)
{
	unsigned int pages = c->o.pages ? c->o.pages : 64;
	/* edge-triggered: the ring of a -p process that ended says
	 * EPOLLHUP for good (perf_events.c); every pass drains them all */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	uint64_t ring = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t mark = ring / 4 > (32u << 10) ? ring / 4 : 32u << 10;
	int i, fd;

	/* Woken when a ring is a quarter full (32 KiB at least, half of a
	 * small ring at most), well before it overflows between two
	 * batches, which drain every ring anyway: at 32 KiB, four 8 KiB
	 * stack copies, -a's 2 MiB rings woke the loop at every fourth
	 * switch of the machine. */
	if (mark > ring / 2)
		mark = ring / 2;
	c->attr.wakeup_watermark = mark > UINT32_MAX ? UINT32_MAX : mark ? (uint32_t)mark : 1;

	for (i = 0; i < ncpus; i++) {
		fd = perf_open(&c->attr, pid, cpus[i]);
		if (fd < 0) {
			if (errno == ESRCH)
				return sp_error("pid %d exited during attach", (int)pid);
			return sp_error_errno("off-cpu: cannot open the context-switch event "
					      "for pid %d on cpu %d", (int)pid, cpus[i]);
		}
		c->fds = realloc(c->fds, (c->nfds + 1) * sizeof(*c->fds));
		c->fd_cpu = realloc(c->fd_cpu, (c->nfds + 1) * sizeof(*c->fd_cpu));
		c->rings = realloc(c->rings, (c->nfds + 1) * sizeof(*c->rings));
		if (!c->fds || !c->fd_cpu || !c->rings)
			sp_die("out of memory");
		c->fds[c->nfds] = fd;
		c->fd_cpu[c->nfds] = (unsigned int)cpus[i];
		if (sp_perf_ring_map(&c->rings[c->nfds], fd, pages)) {
			close(fd);
			return sp_error_errno("off-cpu: cannot map the ring of cpu %d", cpus[i]);
		}
		ev.data.u32 = c->nfds;
		epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev);
		c->nfds++;
	}
	return 0;
}

static int preload_map(void *ctx, const struct sp_proc_map *m)
{
	struct offcpu *c = ((void **)ctx)[0];
	uint32_t pid = (uint32_t)(uintptr_t)((void **)ctx)[1];

	if (m->prot & PROT_EXEC)
		sp_unwinder_map(c->unw, pid, m->start, m->end, m->pgoff, m->path);
	return 0;
}

static int offcpu_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct offcpu *c = s->priv;
	int *cpus = NULL, ncpus, rc = 0;
	unsigned int i;

	c->out = out;
	/* The per-boot cache, mapped (read on a thread, the first time): read
	 * on the loop at the first wait, /proc/kallsyms stalled every source
	 * for a few hundred ms. So would the fresh read that frames in
	 * kernel modules need: begun on a thread at once when there are
	 * modules (a wait in a file system or a driver is common), or for
	 * the whole machine. */
	if (c->o.kernel_frames)
		sp_ksym_writer_start(&c->ksyms, t->system_wide || sp_kernel_has_modules());
	ncpus = sp_online_cpus(&cpus);
	if (t->system_wide) {
		/* A CPU's event sees no exec of its own (-a with a command):
		 * enabled from the start, as for -a alone. (Opened disabled
		 * and enabled by ioctl, it sampled no switch at all here while
		 * the perf source's per-cgroup events were open: Linux 6.18.) */
		c->attr.inherit = 0;
		c->attr.enable_on_exec = 0;
		c->attr.disabled = 0;
		c->o.enable_on_exec = false;
		/* Every switch of the machine, each with its stacks: larger
		 * rings while they stay within 64 MiB together. */
		if (!c->o.pages && ncpus > 0 &&
		    (uint64_t)ncpus * SYSTEM_WIDE_PAGES * (uint64_t)sysconf(_SC_PAGESIZE) <= 64u << 20)
			c->o.pages = SYSTEM_WIDE_PAGES;
		rc = open_rings(c, -1, cpus, ncpus);
	} else if (!c->o.pages && geteuid() == 0 && ncpus > 0 &&
		   (uint64_t)ncpus * (t->npids ? t->npids : 1) * SYSTEM_WIDE_PAGES *
		   (uint64_t)sysconf(_SC_PAGESIZE) <= SP_PERF_RINGS_MOST) {
		/* A command's or -p's threads switch in bursts (a shell's forks
		 * and waits, a pool's hand-offs), each switch with its stack
		 * copy: 64 pages lost records under a loop of short commands
		 * on a loaded machine. As -a's while all of them (a ring per
		 * CPU and pid) stay within 64 MiB; root's only: a user's count
		 * against perf_event_mlock_kb. */
		c->o.pages = SYSTEM_WIDE_PAGES;
	}
	for (i = 0; !rc && !t->system_wide && i < t->npids; i++) {
		rc = open_rings(c, t->pids[i], cpus, ncpus);
		/* A running process: its mappings so far come from /proc. */
		if (!rc && !c->o.enable_on_exec) {
			void *ctx[2] = { c, (void *)(uintptr_t)t->pids[i] };

			/* a cut (EFBIG) is said by perf_procs.c, which reads
			 * the same maps for the samples */
			sp_procfs_maps(t->pids[i], SP_PROCFS_MAPS_BYTES, preload_map, ctx);
		}
	}
	free(cpus);
	if (rc) {
		snprintf(c->why, sizeof(c->why), "off-cpu");
		return -1;
	}
	/* NULL with --interp=none, or when it could not load (said once) */
	if (sp_interp_current())
		c->interp = !sp_interp_offcpu_attach(sp_interp_current(), c->fds, c->nfds);
	/* -a: our own switch-outs left out in the kernel (cgfilter.bpf.h) */
	if (t->system_wide)
		c->self = (uint32_t)getpid();
	if (t->system_wide && !c->o.cgroups)
		c->cgk = sp_cgfilter_bpf_self();
	if (c->cgk)	/* failed (said): cgroup_wanted() alone leaves them out */
		sp_cgfilter_bpf_start(c->cgk, c->o.cgroups, c->interp ? sp_interp_current() : NULL,
				      c->fds, c->nfds);
	if (!c->o.enable_on_exec)
		for (i = 0; i < c->nfds; i++)
			ioctl(c->fds[i], PERF_EVENT_IOC_ENABLE, 0);
	c->started = true;
	c->q.last_pass = sp_now_mono_ns();
	return 0;
}

static int offcpu_poll(struct sp_source *s, struct sp_emit *out)
{
	struct offcpu *c = s->priv;
	uint64_t before = c->st.waits;

	c->out = out;
	c->polls++;
	sp_cgfilter_bpf_sync(c->cgk, c->o.cgroups);
	sp_perf_queue_poll(&c->q, c->epfd, c->rings, c->nfds);
	scan_modules(c);
	held_release(c, false);
	return (int)(c->st.waits - before);
}

static uint64_t offcpu_watermark(struct sp_source *s)
{
	struct offcpu *c = s->priv;

	if (c->finished)
		return UINT64_MAX;
	if (c->held_at < c->nheld && c->held[c->held_at].t_in < c->q.bound)
		return c->held[c->held_at].t_in;
	return c->q.bound;
}

static int offcpu_finish(struct sp_source *s, struct sp_emit *out)
{
	struct offcpu *c = s->priv;
	size_t i;

	c->out = out;
	for (i = 0; i < c->nfds; i++)
		ioctl(c->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	sp_perf_queue_finish(&c->q, c->rings, c->nfds);
	c->st.lost += sp_perf_lost_unsaid(&c->lost, &c->attr, c->fds, c->fd_cpu, c->nfds,
					  c->q.last_pass, out->emit, out->ctx, "off-cpu: ");
	scan_modules(c);
	held_release(c, true);
	sp_ksym_writer_finish(&c->ksyms, "off-CPU waits");
	if (c->kernel_astray)
		sp_info("%" PRIu64 " addresses below the kernel's half in off-CPU kernel "
			"callchains left out (no kernel code: the kernel's unwinder went "
			"astray); their waits are kept", c->kernel_astray);
	/* Threads still blocked when the recording stopped are not recorded:
	 * their wait has no end. */
	c->finished = true;
	return 0;
}

static void offcpu_describe(struct sp_source *s, char *features, size_t fsize,
			    char *unavailable, size_t usize)
{
	struct offcpu *c = s->priv;
	char copy[40] = "";

	/* offcpu-stack-size=: the copy, for the hints (stackquality.h) */
	if (c->o.call_graph >= SP_CG_DWARF)
		snprintf(copy, sizeof(copy), " offcpu-stack-size=%u",
			 c->o.stack_size ? c->o.stack_size : SP_OFFCPU_STACK_COPY);
	/* Called before start(), since the header goes first: a source that has
	 * not failed yet is one that will record (sp-record stops if it fails). */
	if (c->started || !c->why[0])
		snprintf(features, fsize, "off-cpu=context-switch,min-ns=%" PRIu64 "%s%s",
			 c->o.min_ns, !c->o.cgroups ? "" : c->cgk ? ",cgroups=kernel" :
			 ",cgroups=sample", copy);
	else
		snprintf(unavailable, usize, "%s", c->why);
}

static void offcpu_free(struct sp_source *s)
{
	struct offcpu *c;
	size_t i, it = 0;
	uint64_t k, v;

	if (!s)
		return;
	c = s->priv;
	for (i = 0; i < c->nfds; i++) {
		sp_perf_ring_unmap(&c->rings[i]);
		close(c->fds[i]);
	}
	free(c->fd_cpu);
	sp_perf_lost_release(&c->lost);
	sp_perf_queue_release(&c->q, drop);
	while (sp_u64map_next(&c->blocked, &it, &k, &v)) {
		struct blocked *b = (struct blocked *)(uintptr_t)v;

		free(b->ips);
		free(b->wh);
		sp_interp_stack_free(b->istack);
		free(b);
	}
	for (i = c->held_at; i < c->nheld; i++) {
		free(c->held[i].b.ips);
		free(c->held[i].b.wh);
		sp_interp_stack_free(c->held[i].b.istack);
	}
	free(c->held);
	pidmods_release(c);
	sp_u64map_release(&c->blocked);
	sp_u64map_release(&c->parent);
	sp_ksym_writer_release(&c->ksyms);
	sp_u64map_release(&c->cg_verdict);
	sp_cgfilter_bpf_free(c->cgk);
	if (c->epfd >= 0)
		close(c->epfd);
	sp_unwinder_free(c->unw);
	free(c->fds);
	free(c->rings);
	free(c);
	free(s);
}

/*
 * The writer's ids renumbered (source.h). The modules by pid are scanned
 * again from the new id space, which holds only those something still
 * refers to (the modules of a process that ended went with it; kept, they
 * would be defined again in every compaction); the kernel's goes through
 * m. The rest holds no id of the writer: the waits' stacks are addresses
 * and files until they are written (held ones too), the interpreted ones
 * raw reads, the cgroups kernel ids.
 */
static void offcpu_remap(struct sp_source *s, const struct sp_remap *m)
{
	struct offcpu *c = s->priv;

	pidmods_release(c);
	c->kmod = m->id(m->ctx, SP_REF_MODULE, c->kmod);
	/* not ids, but every file ever unwound, mapped (the perf source's
	 * unwinder is trimmed at the same time) */
	sp_unwinder_trim(c->unw);
}

struct sp_source *sp_offcpu_source_new(const struct sp_offcpu_opts *o)
{
	struct sp_source *s = sp_xcalloc(1, sizeof(*s));
	struct offcpu *c = sp_xcalloc(1, sizeof(*c));
	int fd;

	c->o = *o;
	if (!c->o.min_ns && !o->enabled)
		c->o.min_ns = SP_OFFCPU_DEFAULT_MIN_NS;
	c->epfd = -1;
	sp_perf_queue_init(&c->q, sizeof(struct qrec), read_record, process, c);
	s->name = "offcpu";
	s->priv = c;
	s->fd = -1;
	s->start = offcpu_start;
	s->poll = offcpu_poll;
	s->watermark = offcpu_watermark;
	s->finish = offcpu_finish;
	s->describe = offcpu_describe;
	s->free = offcpu_free;
	s->remap = offcpu_remap;
	setup_attr(c);
	/* Can we? Try on ourselves. */
	c->attr.disabled = 1;
	fd = perf_open(&c->attr, 0, -1);
	c->attr.disabled = c->o.enable_on_exec;
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			sp_error("--off-cpu needs kernel samples of context switches: run as root "
				 "or set kernel.perf_event_paranoid to 1 or less");
		else if (errno == EINVAL && o->cgroups)
			sp_error("--off-cpu with --cgroup or --container needs the cgroup of each "
				 "sample (PERF_SAMPLE_CGROUP, Linux 5.7), which this kernel refuses");
		else
			sp_error_errno("--off-cpu: cannot open the context-switch event");
		offcpu_free(s);
		return NULL;
	}
	if (o->cgroups)
		c->cgk = sp_cgfilter_bpf_new(fd);	/* NULL: in user space only (said) */
	close(fd);
	c->unw = sp_unwinder_new();
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!c->unw || c->epfd < 0) {
		sp_error_errno("--off-cpu: cannot set up");
		offcpu_free(s);
		return NULL;
	}
	s->fd = c->epfd;
	return s;
}

void sp_offcpu_source_set_stackq(struct sp_source *s, struct sp_stackq *q)
{
	((struct offcpu *)s->priv)->stackq = q;
}

void sp_offcpu_source_stats(struct sp_source *s, struct sp_offcpu_stats *st)
{
	*st = ((struct offcpu *)s->priv)->st;
}

void sp_offcpu_print_summary(struct sp_source *s, FILE *out, const char *prefix)
{
	const struct offcpu *c = s->priv;
	const struct sp_offcpu_stats *st = &c->st;

	fprintf(out, "%soff-cpu: %" PRIu64 " waits recorded, %.3f s off the CPU; %" PRIu64
		" shorter than %.3f ms (%.3f s) counted only; %" PRIu64 " preemptions (%.3f s) "
		"not counted as waiting", prefix ? prefix : "", st->waits, st->wait_ns / 1e9,
		st->short_waits, c->o.min_ns / 1e6, st->short_ns / 1e9, st->preempted,
		st->preempted_ns / 1e9);
	if (c->o.cgroups)
		fprintf(out, "; %" PRIu64 " switch-outs of threads outside the cgroups left out "
			"(%" PRIu64 " by the kernel)", st->other_cgroups + sp_cgfilter_bpf_dropped(c->cgk),
			sp_cgfilter_bpf_dropped(c->cgk));
	if (st->lost)
		fprintf(out, "; %" PRIu64 " records lost", st->lost);
	fputc('\n', out);
}
