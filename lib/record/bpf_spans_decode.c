// SPDX-License-Identifier: MIT
/*
 * The spans source's decoder (bpf_spansP.h): each event of the BPF ring
 * buffer, and each entry of a runtime hook's span ring, into a span start,
 * stop or raise, an audit event, a fiber switch or a hook's names; their
 * strings, sent by BPF or read from the process (or its files); the
 * open-span depth per thread and fiber; and lost records. Process events
 * go to bpf_spans_procs.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_spansP.h"
#include "elf/dynamic.h"
#include "elf/elffile.h"
#include "defs.h"
#include "events.h"
#include "record.h"
#include "safefile.h"
#include "sp.h"
#include "span_rings.h"
#include "writer.h"

static ssize_t read_remote(uint32_t pid, uint64_t addr, char *buf, size_t size)
{
	struct iovec local = { buf, size }, remote = { (void *)addr, size };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n <= 0) {
		/* up to the end of the page only */
		size_t room = 4096 - (addr & 4095);

		remote.iov_len = local.iov_len = room < size ? room : size;
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	}
	return n;
}

/*
 * A string literal at addr of the binary whose marker sent event e (by
 * its location's number and the marker's address), read from the file:
 * for a process gone before sp-record read its strings. -1 if unknown.
 */
static ssize_t read_literal(struct bs_ctx *c, const struct sp_bs_event *e, uint64_t addr,
			    char *buf, size_t size)
{
	uint32_t id = (uint32_t)(e->cookie >> 8) & 0xffffff;
	uint64_t ip = e->hash[0], va, base;
	const struct bs_loc *l;
	struct stat st;
	ssize_t n = -1;
	int64_t off;
	int fd;
	Elf *el;

	if ((e->probe != SP_PR_SP_BEGIN && e->probe != SP_PR_SP_END) || !id || id > c->nlocs ||
	    !ip)
		return -1;
	l = &c->locs[id - 1];
	if (!l->bin)
		return -1;	/* its file closed: the name may be another's */
	fd = sp_safe_open(AT_FDCWD, l->bin, NULL, &st, NULL);
	if (fd < 0)
		return -1;
	/* another file at its name since (its owner replaced it): not its
	 * literals, and not read at all */
	if (l->ino && ((uint64_t)st.st_dev != l->dev || (uint64_t)st.st_ino != l->ino)) {
		close(fd);
		return -1;
	}
	el = sp_elf_begin(fd, SP_ELF_READ);
	if (!el) {
		close(fd);
		return -1;
	}
	va = sp_elf_offset_to_va(el, l->off);
	/* the marker's address is its own (or one past a breakpoint): the
	 * binary is loaded at a page boundary */
	base = (ip - va) & ~(uint64_t)4095;
	off = va != UINT64_MAX ? sp_elf_va_to_offset(el, addr - base, false) : -1;
	if (off >= 0)
		n = pread(fd, buf, size, off);
	sp_elf_close(el, fd);
	return n;
}

/* A string BPF could not read (a page not resident yet): read it with
 * process_vm_readv(), which faults the page in, so BPF reads it next time.
 * Cached by address: such strings are literals of the binary (or names a
 * hook made before the recording), and so is an address that cannot be
 * read. Span ring marks carry any address their process writes: bounded. */
static uint64_t str_from_user(struct bs_ctx *c, struct bs_proc *p, uint64_t addr,
			      const struct sp_bs_event *e)
{
	uint64_t key = sp_hash_mix(addr, UINT64_MAX), *id, sid, before;
	char buf[SP_BS_STRLEN];
	struct stat st;
	unsigned int i;
	ssize_t n;

	id = sp_u64map_get(&p->strs, key);
	if (id)
		return *id;
	if (p->by_addr >= SP_SPANS_ADDR_STRS_PER_PROC || c->addr_live >= SP_SPANS_ADDR_STRS_LIVE ||
	    c->addr_strs >= SP_SPANS_ADDR_STRS_MAX) {
		sp_bs_proc_capped(p, "strings read by address", p->by_addr >= SP_SPANS_ADDR_STRS_PER_PROC ?
				  SP_SPANS_ADDR_STRS_PER_PROC : c->addr_live >= SP_SPANS_ADDR_STRS_LIVE ?
				  SP_SPANS_ADDR_STRS_LIVE : SP_SPANS_ADDR_STRS_MAX);
		return 0;
	}
	p->by_addr++;
	c->addr_live++;
	n = read_remote(p->pid, addr, buf, sizeof(buf) - 1);
	/* A forked child that is gone already: its parent has the same bytes. */
	if (n <= 0 && p->ppid)
		n = read_remote(p->ppid, addr, buf, sizeof(buf) - 1);
	/* Both gone (short-lived): a literal of the executable, read the file. */
	for (i = 0; n <= 0 && i < p->nmap; i++) {
		int fd;

		if (addr < p->map[i].start || addr >= p->map[i].end)
			continue;
		fd = sp_safe_open(AT_FDCWD, p->exe, NULL, &st, NULL);
		if (fd < 0)
			break;
		/* the file it ran, not another its owner put at that name since
		 * (a link to a file of root's) */
		if ((uint64_t)st.st_dev != p->exe_dev || (uint64_t)st.st_ino != p->exe_ino) {
			close(fd);
			break;
		}
		n = pread(fd, buf, sizeof(buf) - 1, addr - p->map[i].start + p->map[i].off);
		close(fd);
	}
	/* A literal of a library: its marker said where the library was. */
	if (n <= 0 && e)
		n = read_literal(c, e, addr, buf, sizeof(buf) - 1);
	if (n <= 0) {
		sp_u64map_put(&p->strs, key, 0);
		return 0;
	}
	buf[n] = 0;
	before = sp_defs_nstrings(sp_writer_defs(c->out->w));
	sid = sp_writer_str(c->out->w, buf, strlen(buf));
	if (sp_defs_nstrings(sp_writer_defs(c->out->w)) > before)
		c->addr_strs++;
	sp_u64map_put(&p->strs, key, sid);
	return sid;
}

/*
 * A fork child has its parent's memory as it was at the fork, which is
 * where its events stand in the ring: what the parent's strings were at
 * their addresses then, the child's are (runtime hooks' names are made
 * once and never freed; a child that exits before it is read leaves no
 * memory to read them from).
 */
void sp_bs_copy_strs(struct bs_ctx *c, struct bs_proc *child, const struct bs_proc *parent)
{
	uint64_t k, v;
	size_t i;

	child->by_addr = parent->by_addr;	/* counted in the bounds as its own */
	c->addr_live += parent->by_addr;
	for (i = 0; sp_u64map_next(&parent->strs, &i, &k, &v);)
		sp_u64map_put(&child->strs, k, v);
}

/* String id of string i of an event, 0 if none or unknown. */
static uint64_t str_id(struct bs_ctx *c, struct bs_proc *p, const struct sp_bs_event *e,
		       size_t size, int i)
{
	uint64_t key, *id, sid;

	if (!e->addr[i])
		return 0;
	if (e->flags & SP_BSF_UNREAD(i))
		return str_from_user(c, p, e->addr[i], e);
	key = sp_hash_mix(e->addr[i], e->hash[i]);
	if ((e->flags & SP_BSF_SENT(i)) && size >= sizeof(*e)) {
		size_t len = e->len[i];

		if (len >= SP_BS_STRLEN)
			len = SP_BS_STRLEN - 1;
		sid = sp_writer_str(c->out->w, e->str[i], strnlen(e->str[i], len));
		if (sid)
			sp_u64map_put(&p->strs, key, sid);
		return sid;
	}
	id = sp_u64map_get(&p->strs, key);
	return id ? *id : 0;
}

/* The key of a thread's open-span count: per fiber once p has fibers. */
static uint64_t depth_key(const struct bs_proc *p, uint32_t tid)
{
	uint64_t *f;

	if (!p->fibers)
		return tid;
	f = sp_u64map_get(&p->fib_cur, tid);
	return f && *f ? sp_hash_mix(tid, *f) : tid;
}

/*
 * stackpulse:rb__fiber (from, to, fresh): written as a fiber switch record
 * with the thread's root fiber as 0. The hook knows the root only as "the
 * first fiber left"; its id is the first fiber come back to that was not
 * seen starting.
 */
static int on_fiber(struct bs_ctx *c, struct bs_proc *p, const struct sp_bs_event *e)
{
	struct sp_record r = { .kind = SP_REC_FIBER_SWITCH };
	uint64_t from = e->addr[0], to = e->addr[1], *root, known;
	uint64_t kept = p->fib_known.n + p->depth.n;
	bool fresh = e->addr[2] != 0;

	p->fibers = true;
	/*
	 * The thread's first switch we see, from a fiber the hook knows
	 * (it says 0 only while the thread never switched): it switched
	 * before we came (a process attached, or a fork child of a fiber).
	 * Its marks so far are that fiber's, counted as the root's (the
	 * thread's own key); taking 'to' for the root, as below, would give
	 * the stops of 'to' the starts of 'from'.
	 */
	if (from && !sp_u64map_get(&p->fib_cur, e->tid) && !sp_u64map_get(&p->fib_root, e->tid))
		sp_u64map_put(&p->fib_root, e->tid, from);
	root = sp_u64map_get(&p->fib_root, e->tid);
	if (root && from == *root)
		from = 0;
	known = to ? sp_u64map_get(&p->fib_known, sp_hash_mix(e->tid, to)) != NULL : true;
	if (root && to == *root) {
		to = 0;
	} else if (fresh && (p->fib_known.n >= SP_SPANS_FIBERS_PER_PROC ||
			     c->fibers_live >= SP_SPANS_FIBERS_LIVE)) {
		sp_bs_proc_capped(p, "fibers", p->fib_known.n >= SP_SPANS_FIBERS_PER_PROC ?
				  SP_SPANS_FIBERS_PER_PROC : SP_SPANS_FIBERS_LIVE);
	} else if (fresh) {
		sp_u64map_put(&p->fib_known, sp_hash_mix(e->tid, to), 1);
	} else if (!root && !known) {
		sp_u64map_put(&p->fib_root, e->tid, to);
		to = 0;
	}
	sp_u64map_put(&p->fib_cur, e->tid, to);
	if (fresh) {	/* a fiber id reused: its old spans are gone */
		sp_u64map_del(&p->depth, sp_hash_mix(e->tid, to));
		sp_u64map_del(&p->rebuilt, sp_hash_mix(e->tid, to));
	}
	c->fibers_live += p->fib_known.n + p->depth.n - kept;
	r.fiber_switch.time = e->time_ns;
	r.fiber_switch.pid = e->pid;
	r.fiber_switch.tid = e->tid;
	r.fiber_switch.from = from;
	r.fiber_switch.to = to;
	r.fiber_switch.flags = fresh ? SP_FIBER_NEW : 0;
	c->fiber_switches++;
	if (c->out->emit(c->out->ctx, &r)) {
		c->err = -1;
		return -1;
	}
	return 0;
}

/* A runtime hook's new name: its strings, known by address from now on
 * (the hook never frees or changes them). */
static int on_name(struct bs_ctx *c, const struct sp_bs_event *e, size_t size)
{
	struct bs_proc *p = sp_bs_proc_get(c, e->pid);
	int i;

	if (!p)
		p = sp_bs_proc_new(c, e->pid);
	p->hits[SP_PR_RT_NAME]++;
	for (i = 0; i < SP_BS_NSTR && size >= sizeof(*e); i++) {
		size_t len = e->len[i];
		uint64_t sid;

		if (!e->addr[i] || !(e->flags & SP_BSF_SENT(i)))
			continue;
		if (len >= SP_BS_STRLEN)
			len = SP_BS_STRLEN - 1;
		sid = sp_writer_str(c->out->w, e->str[i], strnlen(e->str[i], len));
		if (sid)
			sp_u64map_put(&p->strs, sp_hash_mix(e->addr[i], UINT64_MAX), sid);
	}
	return 0;
}

static void on_dlopen(struct bs_ctx *c, const struct sp_bs_event *e)
{
	struct bs_proc *p = sp_bs_proc_get(c, e->pid);

	c->dlopens++;
	if (p && !p->exited && p->libs_unverified)
		sp_bs_verify_libs(c, p, false);
	if (p && !p->exited)
		sp_bs_scan_libs(c, p);
}

/* The kind of event a runtime hook's mark stands for; 0: not a hook's. */
static uint32_t hook_mark_kind(uint32_t probe)
{
	switch (probe) {
	case SP_PR_RB_HOOK_CALL:
	case SP_PR_PY_HOOK_CALL:
	case SP_PR_RUBY_CMETHOD_ENTRY:	/* the Ruby hook's own (c_call) */
		return SP_BS_START;
	case SP_PR_RB_HOOK_RETURN:
	case SP_PR_PY_HOOK_RETURN:
	case SP_PR_RUBY_CMETHOD_RETURN:
		return SP_BS_STOP;
	case SP_PR_PY_HOOK_RAISE:
		return SP_BS_RAISE;
	case SP_PR_RB_HOOK_FIBER:
		return SP_BS_FIBER;
	}
	return 0;
}

/*
 * A coroutine's word for the thread's next mark: its address, bit 0 set
 * when it suspends there (generator objects are aligned). Kept in the
 * thread's process until that mark comes (a chunk may end between them).
 */
static void on_coro(struct bs_ctx *c, uint32_t pid, uint32_t tid, const struct sp_ring_entry *re)
{
	struct bs_proc *p = sp_bs_proc_get(c, pid);

	if (!p)
		p = sp_bs_proc_new(c, pid);
	p->hits[SP_PR_PY_HOOK_CORO]++;
	if (re->arg[0] & 1) {
		c->rings.bad++;
		return;
	}
	sp_u64map_put(&p->coro_next, tid, re->arg[0] | (re->arg[1] ? 1 : 0));
}

/* The coroutine of a start or stop mark of p's thread (on_coro), taken. */
static void mark_coro(struct bs_proc *p, const struct sp_bs_event *e, struct sp_span_mark *m)
{
	uint64_t *w;

	if (!p->coro_next.n || e->kind == SP_BS_RAISE)
		return;
	w = sp_u64map_get(&p->coro_next, e->tid);
	if (!w)
		return;
	m->coro = *w & ~(uint64_t)1;
	if (e->kind == SP_BS_STOP && (*w & 1))
		m->flags |= SP_MARK_SUSPENDED;
	sp_u64map_del(&p->coro_next, e->tid);
}

/* One entry of a span ring: the event its marker would have sent. */
int sp_bs_ring_put(void *ctx, uint32_t pid, uint32_t tid, const struct sp_ring_entry *re)
{
	struct bs_ctx *c = ctx;
	struct sp_bs_event ev, *e = &ev;
	int i;

	if (re->probe == SP_PR_PY_HOOK_CORO) {
		on_coro(c, pid, tid, re);
		return 0;
	}
	/* the head only (strings by address): a whole event is 500 bytes */
	memset(e, 0, SP_BS_HEAD_SIZE);
	e->kind = hook_mark_kind(re->probe & ~SP_RING_BOOT);
	if (!e->kind || ((re->probe & SP_RING_BOOT) && e->kind != SP_BS_START)) {
		c->rings.bad++;
		return 0;
	}
	if (re->probe & SP_RING_BOOT)
		e->flags |= SP_BSF_BOOT;
	e->time_ns = re->time;
	e->probe = re->probe & ~SP_RING_BOOT;
	e->pid = pid;
	e->tid = tid;
	e->line = re->line;
	for (i = 0; i < SP_BS_NSTR; i++) {
		e->addr[i] = re->arg[i];
		if (e->kind != SP_BS_FIBER)
			e->flags |= SP_BSF_UNREAD(i);
	}
	return sp_bs_on_event(c, e, SP_BS_HEAD_SIZE);
}

/* A Python audit event (python:audit, the hook's py__audit) into r. */
static void decode_audit(struct bs_ctx *c, struct bs_proc *p, const struct sp_bs_event *e,
			 size_t size, struct sp_record *r)
{
	r->kind = SP_REC_EVENT;
	r->event.time = e->time_ns;
	r->event.pid = e->pid;
	r->event.tid = e->tid;
	r->event.kind = SP_EV_AUDIT;
	r->event.nfields = 3;
	r->event.field[0].u = str_id(c, p, e, size, 0);
	r->event.field[1].u = str_id(c, p, e, size, 1);
	r->event.field[2].u = SP_RT_PYTHON;
	c->audits++;
	if (!p->py_active && r->event.field[0].u &&
	    r->event.field[0].u == sp_writer_strz(c->out->w, "stackpulse.activated"))
		p->py_active = true;
	if (!p->py_replaced && r->event.field[0].u &&
	    r->event.field[0].u == sp_writer_strz(c->out->w, "stackpulse.profile_replaced")) {
		char name[80];

		/* the hook's audit event (runtime/python/stackpulse_hook.c):
		 * the event stays in the spool, the warning comes once */
		p->py_replaced = true;
		sp_span_rings_comm(p->pid, name, sizeof(name));
		sp_warn("spans: pid %u (%s): the program set a profile function of its own "
			"(sys.setprofile, as cProfile, profile and debuggers do) on thread %u: "
			"that thread's Python spans end there (later replacements: with the "
			"'stackpulse.profile_replaced' audit events in the recording)",
			p->pid, name, e->tid);
	}
}

/* The runtime a probe's marks come from (SP_RT_*); C methods flagged. */
static uint32_t mark_runtime(uint32_t probe, struct sp_span_mark *m)
{
	switch (probe) {
	case SP_PR_RUBY_CMETHOD_ENTRY:
	case SP_PR_RUBY_CMETHOD_RETURN:
		m->flags = SP_MARK_CMETHOD;
		/* fall through */
	case SP_PR_RUBY_METHOD_ENTRY:
	case SP_PR_RUBY_METHOD_RETURN:
	case SP_PR_RUBY_RAISE:
	case SP_PR_RB_HOOK_CALL:
	case SP_PR_RB_HOOK_RETURN:
		return SP_RT_RUBY;
	case SP_PR_PY_FUNCTION_ENTRY:
	case SP_PR_PY_FUNCTION_RETURN:
	case SP_PR_PY_HOOK_CALL:
	case SP_PR_PY_HOOK_RETURN:
	case SP_PR_PY_HOOK_RAISE:
		return SP_RT_PYTHON;
	case SP_PR_SP_BEGIN:
	case SP_PR_SP_END:
		return SP_RT_USDT;
	}
	return SP_RT_UPROBE;
}

/*
 * A reconstructed start (a frame its hook found open) at depth on key (a
 * thread or a fiber of it, depth_key()). A key leaves with its fiber's
 * reuse; the maps are capped besides, since the marks come from the
 * traced process: past the cap a stop is only counted without a reason.
 */
static void mark_rebuilt(struct bs_proc *p, uint64_t key, uint32_t tid, uint64_t depth)
{
	uint64_t *r = sp_u64map_get(&p->rebuilt, key);

	if (!r && p->rebuilt.n < SP_SPANS_FIBERS_PER_PROC)
		sp_u64map_put(&p->rebuilt, key, depth);
	else if (r && depth > *r)
		*r = depth;
	if (p->rebuilt_tid.n < SP_SPANS_FIBERS_PER_PROC)
		sp_u64map_put(&p->rebuilt_tid, tid, 1);
}

/*
 * A stop without a start, dropped: counted, and said what it is when it
 * is known. A hook rebuilds at most SP_RT_OPEN_MAX frames (the innermost);
 * a stop on a key whose run went that deep is of a frame beyond them. The
 * Ruby hook rebuilds the running fiber's methods: a stop on another fiber
 * of a thread that had a run is of a fiber not running then.
 */
static void orphan(struct bs_ctx *c, struct bs_proc *p, uint64_t key, uint32_t tid)
{
	uint64_t *r = sp_u64map_get(&p->rebuilt, key);

	c->orphans++;
	if (r && *r >= SP_RT_OPEN_MAX)
		c->orphans_deep++;
	else if (!r && key != tid && sp_u64map_get(&p->rebuilt_tid, tid))
		c->orphans_fiber++;
}

/*
 * Ruby's C-method probes attached now, for a hook that was in at time
 * hook_ns: the C methods the program called in between are not recorded.
 * Kept for -v; past SP_SPANS_CMETHOD_LAG_NS said, naming the process.
 */
static void cmethod_lag(struct bs_ctx *c, const struct bs_proc *p, uint64_t hook_ns)
{
	uint64_t now = sp_now_mono_ns(), lag = now > hook_ns ? now - hook_ns : 0;
	char name[80];

	if (lag > c->cmethod_lag_ns)
		c->cmethod_lag_ns = lag;
	if (lag <= SP_SPANS_CMETHOD_LAG_NS || c->cmethod_lag_said)
		return;
	c->cmethod_lag_said = true;
	sp_span_rings_comm(p->pid, name, sizeof(name));
	sp_warn("spans: pid %u (%s): Ruby's C-method probes were attached %.1f ms after its "
		"hook was in: the C methods it called in between are not recorded "
		"(sp-record was busy; its Ruby methods are all there)",
		p->pid, name, (double)lag / 1e6);
}

/*
 * The open-span depth of a start or stop mark of p's thread (and fiber):
 * 0, or 1 when the mark is to be dropped (a stop whose start came before
 * the recording or the activator; the Ruby hook's boot frames, counted
 * here and left out). The first Ruby method entry lets the C-method
 * probes that waited for it be attached.
 */
static int mark_depth(struct bs_ctx *c, struct bs_proc *p, const struct sp_bs_event *e,
		      struct sp_span_mark *m)
{
	uint64_t key = depth_key(p, e->tid), *d = sp_u64map_get(&p->depth, key);

	if (p->ret_pending && e->probe == SP_PR_PY_FUNCTION_ENTRY) {
		/* a profile function in an attached Python: returns count now */
		p->ret_pending = false;
		sp_bs_attach_any(c, p, c->skel->progs.on_py_function_multi,
				 c->skel->progs.on_py_function, p->rlib[1], "python",
				 "function__return", SP_PR_PY_FUNCTION_RETURN, NULL);
	}
	if (p->cm_pending && (e->probe == SP_PR_RUBY_METHOD_ENTRY ||
			      e->probe == SP_PR_RB_HOOK_CALL)) {
		p->cm_pending = false;
		sp_bs_attach_cmethod(c, p, p->rlib[0]);
		cmethod_lag(c, p, e->time_ns);
	}
	if (e->kind == SP_BS_START) {
		m->depth = (d ? *d : 0) + 1;
		/* a count per thread, and per fiber it ran (the
		 * fibers are the process's word: bounded) */
		if (d) {
			*d = m->depth;
		} else if (key == e->tid || (p->depth.n < SP_SPANS_FIBERS_PER_PROC &&
					    c->fibers_live < SP_SPANS_FIBERS_LIVE)) {
			sp_u64map_put(&p->depth, key, m->depth);
			c->fibers_live++;	/* a new key */
			d = sp_u64map_get(&p->depth, key);
		} else {
			sp_bs_proc_capped(p, "fibers", SP_SPANS_FIBERS_PER_PROC);
		}
		if (d && (e->flags & SP_BSF_BOOT) && e->probe == SP_PR_RB_HOOK_CALL &&
		    (!p->boot_open || p->boot_key == key)) {
			/* outermost first: boot_open is the deepest */
			p->boot_key = key;
			p->boot_open = (uint32_t)m->depth;
			c->boot_frames++;
			return 1;
		}
		if (d && p->boot_open && key == p->boot_key) {
			/* called by them: the rest of StackPulse's loading */
			c->boot_calls++;
			return 1;
		}
		if (d && (m->flags & SP_MARK_SYNTHETIC))
			mark_rebuilt(p, key, e->tid, m->depth);
	} else if (!d || !*d) {
		/* entered before the recording (or the activator) */
		orphan(c, p, key, e->tid);
		return 1;
	} else {
		m->depth = (*d)--;
		if (p->boot_open && key == p->boot_key) {
			/* a boot frame returns (the innermost left), or a call
			 * of theirs (not recorded either) */
			if (m->depth <= p->boot_open)
				p->boot_open = (uint32_t)m->depth - 1;
			return 1;
		}
	}
	return 0;
}

/*
 * A raise in a Ruby that sp-record started with its hook and span rings,
 * before the hook was in (its loading thread's ring announced, or a name
 * or a mark): Ruby's start-up, which RubyGems goes through with a rescued
 * NameError and LoadError in every run, before the activator (RUBYOPT -r)
 * is loaded. No span can be open then: counted, not a mark (a raise with
 * no span open is what tells of lost starts). A fork child has its
 * parent's hook; an attached process is left alone.
 */
static bool raise_before_hook(const struct bs_proc *p, const struct sp_bs_event *e)
{
	static int rings = -1;

	if (rings < 0)
		rings = getenv("STACKPULSE_SPAN_RING") && !strcmp(getenv("STACKPULSE_SPAN_RING"), "1");
	return rings && e->probe == SP_PR_RUBY_RAISE && !p->running && !p->ppid &&
	       sp_bs_has_probe(p, SP_PR_RB_HOOK_CALL) && !p->hits[SP_PR_RT_RING] &&
	       !p->hits[SP_PR_RT_NAME] && !p->hits[SP_PR_RB_HOOK_CALL] &&
	       !p->hits[SP_PR_RB_HOOK_RETURN];
}

/* A span start, stop or raise into r: 0, or 1 when it is to be dropped. */
static int decode_mark(struct bs_ctx *c, struct bs_proc *p, const struct sp_bs_event *e,
		       size_t size, struct sp_record *r)
{
	struct sp_span_mark *m = &r->mark;

	r->kind = e->kind == SP_BS_START ? SP_REC_SPAN_START :
		  e->kind == SP_BS_STOP ? SP_REC_SPAN_STOP : SP_REC_SPAN_RAISE;
	m->time = e->time_ns;
	m->pid = e->pid;
	m->tid = e->tid;
	m->line = e->line > 0 ? (uint64_t)e->line : 0;
	m->runtime = mark_runtime(e->probe, m);
	/* a frame the hook found open when it began: its start reconstructed */
	if (e->kind == SP_BS_START && e->line <= -2 &&
	    (e->probe == SP_PR_PY_HOOK_CALL || e->probe == SP_PR_RB_HOOK_CALL ||
	     e->probe == SP_PR_RUBY_CMETHOD_ENTRY)) {
		m->flags |= SP_MARK_SYNTHETIC;
		m->line = (uint64_t)SP_RT_LINE_SYNTHETIC(e->line);
	}
	if (m->runtime == SP_RT_UPROBE) {
		if (e->cookie < c->nfuncs) {
			struct bs_func *f = &c->funcs[e->cookie];

			m->klass = f->base_id;
			m->method = f->name_id;
			m->file = f->bin_id;
		}
	} else {
		m->klass = str_id(c, p, e, size, 0);
		m->method = str_id(c, p, e, size, 1);
		m->file = str_id(c, p, e, size, 2);
	}
	/* a frame unwound: its file and line, no class, no message */
	if (e->probe == SP_PR_PY_HOOK_RAISE)
		m->method = 0;
	if (e->kind == SP_BS_RAISE && raise_before_hook(p, e)) {
		c->boot_raises++;
		return 1;
	}
	if (e->kind == SP_BS_RAISE) {
		if (c->o->nglobs && m->runtime == SP_RT_RUBY)
			m->flags |= SP_MARK_MATCH_ONLY;
		c->raises++;
		return 0;
	}
	mark_coro(p, e, m);
	if (mark_depth(c, p, e, m))
		return 1;
	c->spans++;
	return 0;
}

/* Events of the span rings' bookkeeping: a ring announced, a wake-up, a
 * chunk BPF copied at a thread's end. */
static int on_ring_event(struct bs_ctx *c, const struct sp_bs_event *e, size_t size)
{
	if (e->kind == SP_BS_RING) {
		sp_span_rings_add(&c->rings, e->pid, e->tid, e->addr[0], e->time_ns, e->line != 0,
				  e->addr[1], (int64_t)e->addr[2]);
		return 0;
	}
	if (e->kind == SP_BS_RING_WAKE) {
		sp_span_rings_wake(&c->rings, e->pid, e->tid, e->addr[0], e->time_ns,
				   (int64_t)e->addr[2]);
		return 0;
	}
	if (size < SP_BS_CHUNK_SIZE)
		return 0;
	if (sp_span_rings_chunk(&c->rings, e->pid, e->tid, e->addr[0], e->cookie,
				(uint32_t)e->line, e->flags, e->time_ns, (int64_t)e->addr[1],
				(const void *)((const char *)e + SP_BS_HEAD_SIZE),
				sp_bs_ring_put, c))
		return -1;
	return 0;
}

/* One event of the ring buffer (or a span ring's entry as one). */
int sp_bs_on_event(void *ctx, void *data, size_t size)
{
	struct bs_ctx *c = ctx;
	const struct sp_bs_event *e = data;
	struct sp_record r = { 0 };
	int i;
	struct bs_proc *p;

	if (size < SP_BS_HEAD_SIZE)
		return 0;
	if (c->releasing) {
		if (e->flags & SP_BSF_STOPPED)
			sp_bs_cont(c, e->pid);
		return 0;
	}
	if (e->kind == SP_BS_FIND) {
		sp_bs_all_ask(c, e->pid);	/* judged at the end of this poll */
		return 0;
	}
	/* of a process tracked by mistake (sp_bs_untrack()): none of ours;
	 * a fork's pid is the child's (a later process's, or its own) */
	p = sp_bs_proc_get(c, e->pid);
	if (p && p->untracked && e->kind != SP_BS_FORK) {
		if (e->flags & SP_BSF_STOPPED)
			sp_bs_cont(c, e->pid);
		return 0;
	}
	if (e->kind == SP_BS_NAME)
		return on_name(c, e, size);
	if (e->kind >= SP_BS_FORK && e->kind <= SP_BS_EXIT)
		return sp_bs_on_proc_event(c, e);
	if (e->kind == SP_BS_DLOPEN) {
		on_dlopen(c, e);
		return 0;
	}
	if (!p)
		p = sp_bs_proc_new(c, e->pid);	/* raced with our own bookkeeping */
	if (e->probe < SP_PR_MAX)
		p->hits[e->probe]++;
	if (e->kind == SP_BS_FIBER)
		return on_fiber(c, p, e);
	if (e->kind == SP_BS_RING || e->kind == SP_BS_RING_WAKE || e->kind == SP_BS_CHUNK)
		return on_ring_event(c, e, size);
	/* a hook file's shared link made with py__audit for another process:
	 * not this one's (a Python with its own audit probe has it twice) */
	if (e->kind == SP_BS_AUDIT && e->probe == SP_PR_PY_HOOK_AUDIT && !p->hook_audit) {
		/* but the strings it carries: BPF sends a string once per
		 * process, and its own probe's event of the same one (the
		 * same str object) comes with its address only */
		for (i = 0; i < SP_BS_NSTR; i++)
			if (e->flags & SP_BSF_SENT(i))
				str_id(c, p, e, size, i);
		return 0;
	}
	if (e->kind == SP_BS_AUDIT)
		decode_audit(c, p, e, size, &r);
	else if (decode_mark(c, p, e, size, &r))
		return 0;
	if (c->out->emit(c->out->ctx, &r)) {
		c->err = -1;
		return -1;
	}
	return 0;
}

static uint64_t lost_total(struct bs_ctx *c)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	uint64_t *v, sum = 0;
	uint32_t zero = 0;

	if (ncpu <= 0)
		return 0;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return 0;
	if (!bpf_map__lookup_elem(c->skel->maps.lost, &zero, sizeof(zero), v,
				  sizeof(*v) * ncpu, 0))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

/* Span marks of process pid lost from its span rings since: a lost record
 * of its own. */
static int emit_ring_lost(void *ctx, uint32_t pid, uint64_t n, uint64_t since)
{
	struct bs_ctx *c = ctx;
	struct sp_record r = { .kind = SP_REC_LOST };

	r.lost.time = sp_now_mono_ns();
	r.lost.start = since;
	r.lost.what = SP_LOST_SPANS;
	r.lost.count = n;
	r.lost.pid = pid;
	return c->out->emit(c->out->ctx, &r);
}

/* A lost record of what for the count since the last one, if any. */
static int emit_lost_delta(struct bs_ctx *c, uint64_t now, uint64_t what, uint64_t count,
			   uint64_t *seen)
{
	struct sp_record r = { .kind = SP_REC_LOST };

	if (count <= *seen)
		return 0;
	r.lost.time = now;
	r.lost.what = what;
	r.lost.count = count - *seen;
	*seen = count;
	return c->out->emit(c->out->ctx, &r);
}

int sp_bs_emit_lost(struct bs_ctx *c, uint64_t now)
{
	uint64_t total = lost_total(c);
	struct sp_record r = { .kind = SP_REC_LOST };
	uint64_t unprobed = __atomic_load_n(&c->unprobed, __ATOMIC_RELAXED);
	uint64_t unprobed_seen = c->unprobed_seen;

	if (sp_span_rings_take_lost(&c->rings, now, emit_ring_lost, c))
		return -1;
	if (emit_lost_delta(c, now, SP_LOST_SPAN_STOPS, c->orphans, &c->orphans_seen) ||
	    emit_lost_delta(c, now, SP_LOST_UNPROBED, unprobed, &unprobed_seen))
		return -1;
	c->unprobed_seen = (unsigned int)unprobed_seen;
	if (total <= c->lost_seen)
		return 0;
	r.lost.time = now;
	r.lost.start = c->lost_since;
	r.lost.what = SP_LOST_SPANS;
	r.lost.count = total - c->lost_seen;
	c->lost_seen = total;
	c->lost_since = now;
	return c->out->emit(c->out->ctx, &r);
}
