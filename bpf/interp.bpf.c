// SPDX-License-Identifier: MIT
/*
 * interp.bpf.c - the interpreted stack of the thread each perf sample
 * interrupts, read where it lies in the target's memory at that moment:
 * the program runs on the sampling events sp-record opens (it returns 1,
 * so perf's own sample still goes out), on_switch on --off-cpu's
 * context-switch events (the thread switched out) and, for a process user space
 * registered in "procs", finds the thread's state and walks its frames.
 *
 * Nothing is trusted: every read is a probe read that may fail, every loop
 * has a fixed bound, and a stack deeper than SP_BPF_IFRAMES is marked
 * truncated. The thread found for a tid is cached in "tstates" and checked
 * again on each use (its native thread id must still be the tid).
 *
 * Ruby (a layout of kind SP_BPF_IK_RUBY): the thread is found in the main
 * ractor's thread list by its pthread_t (rb_thread_t.thread_id), which is
 * the thread's TLS base (the task's fsbase on x86-64) and, unlike its tid,
 * stays right in a forked child; its execution context (the
 * running fiber's) gives the control frames, walked from cfp to the end
 * of the VM stack; dummy frames are left out. Each frame keeps its method
 * entry (ep[-2], or for a block that of the environments it was made in,
 * at most SP_BPF_RB_EP_HOPS out), and a C method's frame is kept with no
 * code, so user space names it by its method entry (its native frames
 * stay in the native stack too).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "cgfilter.bpf.h"
#include "interp.h"
#include "nspid.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_BPF_IPROCS);
	__type(key, __u32);
	__type(value, struct sp_bpf_iproc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_BPF_ILAYOUTS);
	__type(key, __u32);
	__type(value, struct sp_bpf_ilayout);
} layouts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} tstates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} stacks SEC(".maps");

/*
 * The code objects (Python) and iseqs (Ruby) a walk met before, by
 * process, address and identity (a frame's firstline and name, mixed: an
 * address reused by other code is other code). User space names a frame
 * by reading its code from the process when it drains the ring, and code
 * can be freed soon after it ran (an import's module body, a required
 * file's top-level iseq): a record with code not met before wakes user
 * space at once, others wait for its next pass; a Python code object met
 * first is copied too (struct sp_bpf_icode, before the stack's record),
 * for user space to name it from the copy if it is gone by then. Only a
 * hint: an entry evicted costs a wake-up and a copy more, never a wrong
 * frame.
 */
struct code_key {
	__u64 code;
	__u32 pid;
	__u32 ident;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, struct code_key);
	__type(value, __u8);
} known SEC(".maps");

/* Python: each budget of code-object copies (SP_BPF_ICOPY_*):
 * tokens, refilled at SP_BPF_ICOPY_RATE a second from 'at'. Updated by
 * any CPU without a lock (tracing programs may not take a bpf_spin_lock):
 * a token is taken with an atomic add, so walks on several CPUs at once
 * cannot take the same one, and a refill is the one CPU's whose
 * compare-and-exchange moved 'at' on. A budget evicted (more than
 * max_entries copying at once) starts with a burst. Keyed by
 * copy_budget_key(): a budget per process let a process fork to have a
 * fresh burst, any number of times. */
struct copy_budget {
	__u64 at;	/* ns the tokens were counted up to */
	__s64 tokens;	/* below 0 only while a take is undone */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct copy_budget);
} copy_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_bpf_icopy_refused);
} copies_refused SEC(".maps");

/* user namespaces below the initial one, at most (the kernel makes none
 * past level 33) */
#define SP_BPF_USERNS_DEPTH	33
/* a budget key that is a cgroup's, not a uid's */
#define SP_BPF_ICOPY_CGROUP	(1ull << 63)

/*
 * The budget of the current task, one per user, so that neither fork nor
 * exec nor a user namespace makes a new one:
 * - in the initial user namespace, its real uid;
 * - in another, the owner of the user namespace it is in below the
 *   initial one (the host uid that made the container): a user given
 *   subordinate uids (/etc/subuid) runs processes as thousands of host
 *   uids, which would each have had a budget;
 * - uid 0 there (root's services, a container of a rootful docker or
 *   podman, which runs as host root; a user namespace root made): its
 *   cgroup's, so that a container shares one budget and a fork does not
 *   have a fresh one, and the host's root services do not all share one.
 *   Root that may make cgroups (a privileged container) can have a budget
 *   per cgroup it makes.
 */
static __always_inline __u64 copy_budget_key(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct user_namespace *ns = BPF_CORE_READ(t, cred, user_ns), *parent, *top = NULL;
	__u32 uid = (__u32)bpf_get_current_uid_gid();
	int i;

	/* the initial user namespace is the one with no parent */
	for (i = 0; i < SP_BPF_USERNS_DEPTH + 1 && ns; i++) {
		parent = BPF_CORE_READ(ns, parent);
		if (!parent)
			break;
		top = ns;
		ns = parent;
	}
	if (top)
		uid = BPF_CORE_READ(top, owner.val);
	return uid ? (__u64)uid : SP_BPF_ICOPY_CGROUP | bpf_get_current_cgroup_id();
}

/* Whether process pid (the current task's) may have one copy more now (a
 * token taken). */
static __always_inline bool copy_allowed(__u32 pid)
{
	__u64 key = copy_budget_key();
	struct copy_budget *b = bpf_map_lookup_elem(&copy_budget, &key), nb;
	struct sp_bpf_icopy_refused *r;
	__u64 now = bpf_ktime_get_ns(), at, to, add;
	__s64 tokens;
	__u32 zero = 0;

	if (!b) {
		/* a full bucket; another CPU's made meanwhile stays */
		nb.at = now;
		nb.tokens = SP_BPF_ICOPY_BURST;
		bpf_map_update_elem(&copy_budget, &key, &nb, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&copy_budget, &key);
		if (!b)
			goto refused;
	}
	at = *(volatile __u64 *)&b->at;
	if (now > at) {
		tokens = *(volatile __s64 *)&b->tokens;
		if (tokens < 0)
			tokens = 0;
		add = now - at >= 10000000000ull ? SP_BPF_ICOPY_BURST :
		      (now - at) * SP_BPF_ICOPY_RATE / 1000000000ull;
		if (add) {
			/* full: the time past it is not counted; else the
			 * fraction of a token not counted yet stays */
			if (tokens + add >= SP_BPF_ICOPY_BURST) {
				add = SP_BPF_ICOPY_BURST - tokens;
				to = now;
			} else {
				to = at + add * 1000000000ull / SP_BPF_ICOPY_RATE;
			}
			/* only the CPU that moved 'at' on adds (a take on
			 * another CPU meanwhile only lowers the tokens) */
			if (__sync_val_compare_and_swap(&b->at, at, to) == at && add)
				__sync_fetch_and_add(&b->tokens, (__s64)add);
		}
	}
	if (__sync_fetch_and_add(&b->tokens, -1) > 0)
		return true;
	__sync_fetch_and_add(&b->tokens, 1);	/* none was left: undone */
refused:
	r = bpf_map_lookup_elem(&copies_refused, &zero);
	if (r) {
		r->n++;
		r->pid = pid;
	}
	return false;
}

/* Ruby: what a walk already read of an iseq, by its address (an iseq of
 * a recursion or a block's method is met again further out) */
struct rb_iseq_seen {
	__u64 iseq, body, enc;
	__u32 size;
};

struct scratch {
	struct sp_bpf_istack h;
	struct sp_bpf_iframe f[SP_BPF_IFRAMES];
	__u8 fr[SP_BPF_IFRAME_BLOCK];	/* a frame's fields, from fr_code on */
	__u8 co[SP_BPF_ICODE_BLOCK];	/* a code object's, from co_firstline on */
	/* Ruby: a block of control frames read at once, from rb_walk.blk on */
	__u8 cf[SP_BPF_RB_CFP_BLOCK];
	/* Ruby: the iseqs and method entries (found to be ones) this walk read */
	struct rb_iseq_seen seen[SP_BPF_RB_SEEN];
	__u64 me_seen[SP_BPF_RB_SEEN];
	__u8 wake;	/* the record names code no walk of its process met */
	__u8 copies;	/* Python: code objects this walk copied */
	/* Python: the copy of a code object met first, its own record */
	struct {
		struct sp_bpf_istack h;
		struct sp_bpf_icode c;
	} cr;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* Records that did not fit the ring buffer, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* A record that did not fit the ring buffer. */
static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *lp = bpf_map_lookup_elem(&lost, &zero);

	if (lp)
		*lp += 1;
}

static __always_inline struct code_key code_key(const struct scratch *s, __u64 code,
						 __u32 firstline, __u32 name)
{
	struct code_key k = { .code = code, .pid = s->h.pid,
			      .ident = firstline * 0x9e3779b1u ^ name };

	return k;
}

/* Whether code of the sampled process was not met yet (s->wake set then). */
static __always_inline bool code_new(struct scratch *s, const struct code_key *k)
{
	if (bpf_map_lookup_elem(&known, k))
		return false;
	s->wake = 1;
	return true;
}

static __always_inline void code_known(const struct code_key *k)
{
	__u8 one = 1;

	bpf_map_update_elem(&known, k, &one, BPF_ANY);
}

static __always_inline __u64 rd_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* The current thread's tid in its own pid namespace: what the process
 * itself knows it as (gettid() in a container), host_tid if unreadable. */
static __always_inline __u32 ns_tid(__u32 host_tid)
{
	__u32 nr;

	if (sp_task_nspid((struct task_struct *)bpf_get_current_task(), &nr, NULL))
		return host_tid;
	return nr;
}

/* A search of a runtime's list of threads, one node per bpf_loop()
 * callback: the verifier checks the callback once, not once per node of
 * the bound (it was most of the walkers' load time). */
struct thread_search {
	const struct sp_bpf_ilayout *l;
	__u64 node, head, self, found;
	__u32 own;
};

static long py_thread(__u32 i, void *ctx)
{
	struct thread_search *t = ctx;
	__u64 ts = t->node;

	if (!ts)
		return 1;
	if (rd_ptr(ts + t->l->ts_native_tid) == t->own) {
		t->found = ts;
		return 1;
	}
	t->node = rd_ptr(ts + t->l->ts_next);
	return 0;
}

/* The thread state of tid (the cache's key; the thread state holds the
 * tid in the process's namespace), 0 if none was found. */
static __always_inline __u64 find_tstate(const struct sp_bpf_ilayout *l, __u64 runtime,
					 __u32 tid)
{
	__u64 *cached = bpf_map_lookup_elem(&tstates, &tid);
	__u32 own = ns_tid(tid);
	struct thread_search t = {};
	__u64 interp;

	if (cached && *cached && rd_ptr(*cached + l->ts_native_tid) == own)
		return *cached;
	interp = rd_ptr(runtime + l->rt_interp_head);
	if (!interp)
		return 0;
	t.l = l;
	t.node = rd_ptr(interp + l->is_tstate_head);
	t.own = own;
	bpf_loop(SP_BPF_ITHREADS, py_thread, &t, 0);
	if (t.found)
		bpf_map_update_elem(&tstates, &tid, &t.found, BPF_ANY);
	return t.found;
}

static __always_inline __s32 rd_s32(__u64 addr)
{
	__s32 v = -1;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return -1;
	return v;
}

/* The current thread's pthread_t: its TLS base. */
static __always_inline __u64 thread_self(void)
{
#ifdef __TARGET_ARCH_x86
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, thread.fsbase);
#else
	return 0;
#endif
}

static __always_inline bool rb_killed(const struct sp_bpf_ilayout *l, __u64 th)
{
	__u8 st = SP_BPF_RB_KILLED;

	bpf_probe_read_user(&st, 1, (const void *)(th + l->rb_th_status));
	return (st & 3) == SP_BPF_RB_KILLED;
}

/* One node of Ruby's list of threads (rb_thread_t's node in it). */
static long rb_thread(__u32 i, void *ctx)
{
	struct thread_search *t = ctx;
	__u64 node = t->node, th;

	if (!node || node == t->head)
		return 1;
	th = node - t->l->rb_th_node;
	if (rd_ptr(th + t->l->rb_th_id) == t->self && !rb_killed(t->l, th)) {
		t->found = th;
		return 1;
	}
	t->node = rd_ptr(node);
	return 0;
}

/* Ruby: the rb_thread_t of tid in the main ractor, 0 if none. */
static __always_inline __u64 find_rb_thread(const struct sp_bpf_ilayout *l, __u64 vm_ptr,
					    __u32 tid)
{
	__u64 *cached = bpf_map_lookup_elem(&tstates, &tid);
	__u64 self = thread_self(), vm, head;
	struct thread_search t = {};

	if (!self)
		return 0;
	/* Ruby 3.1 runs a new Thread on a finished one's native thread (same
	 * pthread_t, same tid): a cached thread must still be alive */
	if (cached && *cached && rd_ptr(*cached + l->rb_th_id) == self &&
	    rd_s32(*cached + l->rb_th_tid) == (__s32)ns_tid(tid) && !rb_killed(l, *cached))
		return *cached;
	vm = rd_ptr(vm_ptr);
	if (!vm)
		return 0;
	head = rd_ptr(vm + l->rb_vm_ractor);
	if (!head)
		return 0;
	head += l->rb_ractor_threads;
	t.l = l;
	t.head = head;
	t.node = rd_ptr(head);
	t.self = self;
	bpf_loop(SP_BPF_ITHREADS, rb_thread, &t, 0);
	if (t.found)
		bpf_map_update_elem(&tstates, &tid, &t.found, BPF_ANY);
	return t.found;
}

/* 8 bytes at off of a block of size bytes (0 past its end). */
static __always_inline __u64 get64(const __u8 *b, __u32 off, __u32 size)
{
	__u64 v;

	if (off > size - 8)
		return 0;
	__builtin_memcpy(&v, b + off, 8);
	return v;
}

struct py_walk {
	struct scratch *s;
	const struct sp_bpf_ilayout *l;
	__u64 frame;
	__u32 n;
	__u8 status;
};

/* The str object at addr into b (its header and first characters): the
 * bytes read, 0 when none. A shorter block is tried when the whole one
 * does not read (a string at the end of its mapping). */
static __always_inline __u16 copy_str(__u8 *b, __u64 addr)
{
	if (!addr)
		return 0;
	if (!bpf_probe_read_user(b, SP_BPF_ISTR, (const void *)addr))
		return SP_BPF_ISTR;
	if (!bpf_probe_read_user(b, SP_BPF_ISTR_SHORT, (const void *)addr))
		return SP_BPF_ISTR_SHORT;
	return 0;
}

/*
 * The code object of a frame, s->cr.c's (its address and identity set),
 * met by the walk: when no walk of its process met it before (s->wake set
 * then), this walk copied fewer than SP_BPF_ICOPIES and its user's
 * budget (copy_allowed()) has a copy left, its copy goes out
 * as a record of its own, ahead of the stack's: its first bytes, its
 * name's and file's strings (at qual and file), the first SP_BPF_ILINES
 * bytes of its line table. It is noted as met once the copy went out (a
 * full ring: the next walk copies it); 1 then. A global function: the verifier
 * checks it once, alone, not again for each state of the walk that calls
 * it (inlined, it made the Python walkers' check 4 times longer).
 */
__noinline int py_code_met(struct scratch *s, const struct sp_bpf_ilayout *l, __u64 qual,
			   __u64 file)
{
	struct sp_bpf_icode *c;
	struct code_key k;
	__u64 code, tab, n, size;

	if (!s || !l)
		return 0;
	c = &s->cr.c;
	code = c->code;
	k = code_key(s, code, c->firstline, c->name);
	if (!code_new(s, &k) || s->copies >= SP_BPF_ICOPIES)
		return 0;
	/* past its user's budget: named from the process (if still there) */
	if (!copy_allowed(s->h.pid))
		return 0;
	s->copies++;

	s->cr.h = s->h;
	s->cr.h.nframes = 0;
	s->cr.h.flags = SP_BPF_IFL_CODE;
	c->head_len = bpf_probe_read_user(c->head, sizeof(c->head), (const void *)code) ?
		      0 : sizeof(c->head);
	c->qual_len = copy_str(c->qual, qual);
	c->file_len = copy_str(c->file, file);
	c->lines_len = 0;
	tab = c->head_len ? get64(c->head, l->co_lines & 255, sizeof(c->head)) : 0;
	n = tab ? rd_ptr(tab + l->var_size) : 0;
	c->lines_size = n > 0xffffffffull ? 0xffffffffu : (__u32)n;
	if (n > SP_BPF_ILINES)
		n = SP_BPF_ILINES;
	if (n && !bpf_probe_read_user(c->lines, n, (const void *)(tab + l->bytes_data)))
		c->lines_len = (__u16)n;
	size = sizeof(s->cr.h) + offsetof(struct sp_bpf_icode, lines) + c->lines_len;
	if (size > sizeof(s->cr))
		size = sizeof(s->cr);
	if (bpf_ringbuf_output(&stacks, &s->cr, size, 0)) {
		count_lost();
		return 0;
	}
	code_known(&k);
	return 1;
}

/* One frame of Python's walk (a bpf_loop() callback, checked once by the
 * verifier, not once per frame of the bound): 1 to stop. */
static long py_frame(__u32 i, void *ctx)
{
	struct py_walk *w = ctx;
	struct scratch *s = w->s;
	const struct sp_bpf_ilayout *l = w->l;
	struct sp_bpf_iframe *f = &s->f[w->n & (SP_BPF_IFRAMES - 1)];
	__u64 frame = w->frame, code, instr, qual, file;
	__u32 first, name;
	__u8 entry;

	if (!frame || w->n >= SP_BPF_IFRAMES)
		return 1;
	/* one read per structure: the fields are close together */
	if (bpf_probe_read_user(s->fr, sizeof(s->fr), (const void *)(frame + l->fr_code)))
		return w->status = SP_BPF_IST_FAULT, 1;
	code = get64(s->fr, 0, sizeof(s->fr));
	instr = get64(s->fr, (l->fr_instr - l->fr_code) & 63, sizeof(s->fr));
	entry = (__u8)get64(s->fr, (l->fr_entry - l->fr_code) & 63, sizeof(s->fr));
	if (!code || bpf_probe_read_user(s->co, sizeof(s->co),
					 (const void *)(code + l->co_firstline)))
		return w->status = SP_BPF_IST_FAULT, 1;
	first = (__u32)get64(s->co, 0, sizeof(s->co));
	qual = get64(s->co, (l->co_name - l->co_firstline) & 63, sizeof(s->co));
	file = get64(s->co, (l->co_file - l->co_firstline) & 63, sizeof(s->co));
	name = (__u32)qual ^ (__u32)file;
	s->cr.c.code = code;
	s->cr.c.firstline = first;
	s->cr.c.name = name;
	py_code_met(s, l, qual, file);
	f->code = code;
	f->firstline = first;
	f->name = name;
	f->flags = entry ? SP_BPF_IFR_ENTRY : 0;
	f->me = 0;
	if (instr >= code + l->co_code && instr - (code + l->co_code) < (1ull << 31))
		f->instr = (__s32)((instr - (code + l->co_code)) / 2);
	else
		f->instr = -1;
	w->n++;
	w->frame = get64(s->fr, (l->fr_previous - l->fr_code) & 63, sizeof(s->fr));
	return 0;
}

static __always_inline int walk(struct scratch *s, const struct sp_bpf_ilayout *l, __u64 ts)
{
	struct py_walk w = { .s = s, .l = l, .status = SP_BPF_IST_OK };
	__u64 cf;

	cf = rd_ptr(ts + l->ts_cframe);
	if (!cf)
		return SP_BPF_IST_FAULT;
	w.frame = rd_ptr(cf + l->cf_current);
	bpf_loop(SP_BPF_IFRAMES, py_frame, &w, 0);
	s->h.nframes = w.n;
	if (w.status == SP_BPF_IST_OK && w.frame)
		s->h.flags |= SP_BPF_IFL_TRUNCATED;
	return w.status;
}

struct rb_walk {
	struct scratch *s;
	const struct sp_bpf_ilayout *l;
	__u64 cfp, end;
	__u64 blk;		/* the address of s->cf's first byte */
	__u32 blk_len;		/* bytes of s->cf read (0: none) */
	__u32 n;
	__u8 status;
	__u8 next_seen, next_me;
};

/* Whether s->cf holds the control frame at cfp; else it reads the block
 * from there, as much of SP_BPF_RB_CFP_BLOCK as the VM stack has (one read
 * for that many frames), or that frame alone if the block does not read. */
static __always_inline bool rb_cfp_block(struct rb_walk *w, __u64 cfp)
{
	__u64 len, one = w->l->rb_cfp_size;

	if (w->blk_len && cfp >= w->blk && cfp + one <= w->blk + w->blk_len)
		return true;
	len = w->end - cfp;	/* >= one: the caller checked */
	if (len > SP_BPF_RB_CFP_BLOCK)
		len = SP_BPF_RB_CFP_BLOCK;
	if (one > SP_BPF_RB_CFP_BLOCK)
		one = SP_BPF_RB_CFP_BLOCK;
	w->blk = cfp;
	w->blk_len = 0;
	if (len && !bpf_probe_read_user(w->s->cf, len, (const void *)cfp)) {
		w->blk_len = (__u32)len;
		return true;
	}
	if (one && !bpf_probe_read_user(w->s->cf, one, (const void *)cfp)) {
		w->blk_len = (__u32)one;
		return true;
	}
	return false;
}

/* A look-up in a walk's small caches of what it read (scratch's seen and
 * me_seen), one entry per bpf_loop() callback: inlined loops there, within
 * each control frame's callback, were most of the Ruby walker's
 * verification. */
struct rb_seen_find {
	struct scratch *s;
	__u64 key;
	__u32 hit;	/* the entry's index, SP_BPF_RB_SEEN if none */
};

static long rb_me_hit(__u32 i, void *ctx)
{
	struct rb_seen_find *f = ctx;

	if (f->s->me_seen[i & (SP_BPF_RB_SEEN - 1)] != f->key)
		return 0;
	f->hit = i;
	return 1;
}

static long rb_iseq_hit(__u32 i, void *ctx)
{
	struct rb_seen_find *f = ctx;

	if (f->s->seen[i & (SP_BPF_RB_SEEN - 1)].iseq != f->key)
		return 0;
	f->hit = i;
	return 1;
}

/* Whether me was found to be a method entry earlier in this walk. */
static __always_inline bool rb_me_seen(const struct rb_walk *w, __u64 me)
{
	struct rb_seen_find f = { .s = w->s, .key = me, .hit = SP_BPF_RB_SEEN };

	bpf_loop(SP_BPF_RB_SEEN, rb_me_hit, &f, 0);
	return f.hit < SP_BPF_RB_SEEN;
}

struct rb_ep_search {
	struct rb_walk *w;
	__u64 ep, flags, me;
};

/* One hop of rb_frame_me() (a bpf_loop() callback, checked once by the
 * verifier, not once per hop within each control frame): 1 to stop. */
static long rb_ep_hop(__u32 k, void *ctx)
{
	struct rb_ep_search *e = ctx;
	struct rb_walk *w = e->w;
	struct scratch *s = w->s;
	__u64 me, fl, t;

	if (!e->ep)
		return 1;
	/* ep[-2] (me, cref or svar), ep[-1] (specval: previous ep), ep[0] */
	if (bpf_probe_read_user(s->co, 24, (const void *)(e->ep - 16)))
		return 1;
	me = get64(s->co, 0, sizeof(s->co));
	fl = get64(s->co, 16, sizeof(s->co));
	if (!k)
		e->flags = fl;
	e->ep = get64(s->co, 8, sizeof(s->co)) & ~3ull;
	if (me && rb_me_seen(w, me))
		return e->me = me, 1;
	if (me && !bpf_probe_read_user(s->co, 8, (const void *)me)) {
		t = get64(s->co, 0, sizeof(s->co));
		if ((t & SP_BPF_RB_T_MASK) == SP_BPF_RB_T_IMEMO &&
		    ((t >> SP_BPF_RB_IMEMO_SHIFT) & 15) == SP_BPF_RB_IMEMO_MENT) {
			s->me_seen[w->next_me++ & (SP_BPF_RB_SEEN - 1)] = me;
			return e->me = me, 1;
		}
		if ((t & SP_BPF_RB_T_MASK) == SP_BPF_RB_T_IMEMO &&
		    ((t >> SP_BPF_RB_IMEMO_SHIFT) & 15) == SP_BPF_RB_IMEMO_SVAR &&
		    (fl & SP_BPF_RB_ENV_LOCAL)) {
			e->me = rd_ptr(me + w->l->rb_svar_me);	/* checked in user space */
			return 1;
		}
	}
	return (fl & SP_BPF_RB_ENV_LOCAL) ? 1 : 0;
}

/* The method entry of the frame whose environment is at ep, as
 * rb_vm_frame_method_entry() finds it: ep[-2] when it is one (or an svar
 * holding one, in a local environment), else for a block's environment
 * the previous one's; the flags (ep[0]) into *flags. 0 when none was
 * found within the bound (a class body's cref, a top level's). */
static __always_inline __u64 rb_frame_me(struct rb_walk *w, __u64 ep, __u64 *flags)
{
	struct rb_ep_search e = { .w = w, .ep = ep, .flags = *flags };

	bpf_loop(SP_BPF_RB_EP_HOPS + 1, rb_ep_hop, &e, 0);
	*flags = e.flags;
	return e.me;
}

/* The body of iseq (its size, its encoded instructions): read once per
 * walk. 0 when unreadable. */
static __always_inline __u64 rb_iseq_body(struct rb_walk *w, __u64 iseq, __u32 *size, __u64 *enc)
{
	struct scratch *s = w->s;
	struct rb_seen_find f = { .s = s, .key = iseq, .hit = SP_BPF_RB_SEEN };
	struct rb_iseq_seen *e;
	struct code_key k;
	__u64 body;

	bpf_loop(SP_BPF_RB_SEEN, rb_iseq_hit, &f, 0);
	if (f.hit < SP_BPF_RB_SEEN) {
		e = &s->seen[f.hit & (SP_BPF_RB_SEEN - 1)];
		*size = e->size;
		*enc = e->enc;
		return e->body;
	}
	body = rd_ptr(iseq + w->l->rb_iseq_body);
	if (!body || bpf_probe_read_user(s->co, 16, (const void *)(body + w->l->rb_body_size)))
		return 0;
	*size = (__u32)get64(s->co, 0, sizeof(s->co));
	*enc = get64(s->co, 4, sizeof(s->co));
	k = code_key(s, iseq, *size, (__u32)body);
	if (code_new(s, &k))
		code_known(&k);
	e = &s->seen[w->next_seen++ & (SP_BPF_RB_SEEN - 1)];
	e->iseq = iseq;
	e->body = body;
	e->size = *size;
	e->enc = *enc;
	return body;
}

/* One control frame (bpf_loop's callback): 1 to stop. */
static long rb_frame(__u32 i, void *ctx)
{
	struct rb_walk *w = ctx;
	struct scratch *s = w->s;
	const struct sp_bpf_ilayout *l = w->l;
	__u64 cfp = w->cfp, pc, iseq, ep, body, enc = 0, flags = 0, me, off;
	struct sp_bpf_iframe *f;
	__u32 size = 0;

	if (cfp + l->rb_cfp_size > w->end || w->n >= SP_BPF_IFRAMES)
		return 1;
	w->cfp = cfp + l->rb_cfp_size;
	if (!rb_cfp_block(w, cfp))
		return w->status = SP_BPF_IST_FAULT, 1;
	off = cfp - w->blk;
	if (off >= SP_BPF_RB_CFP_BLOCK)
		return w->status = SP_BPF_IST_FAULT, 1;
	pc = get64(s->cf, (__u32)off + (l->rb_cfp_pc & 63), sizeof(s->cf));
	iseq = get64(s->cf, (__u32)off + (l->rb_cfp_iseq & 63), sizeof(s->cf));
	ep = get64(s->cf, (__u32)off + (l->rb_cfp_ep & 63), sizeof(s->cf));
	me = ep ? rb_frame_me(w, ep, &flags) : 0;
	if ((flags & SP_BPF_RB_MAGIC_MASK) == SP_BPF_RB_MAGIC_DUMMY)
		return 0;	/* the VM's own */
	f = &s->f[w->n & (SP_BPF_IFRAMES - 1)];
	if ((flags & SP_BPF_RB_MAGIC_MASK) == SP_BPF_RB_MAGIC_CFUNC) {	/* its me names it */
		if (!me)
			return 0;
		f->code = 0;
		f->firstline = 0;
		f->name = 0;
		f->instr = -1;
		f->flags = SP_BPF_IFR_CFUNC | (flags & SP_BPF_RB_FLAG_FINISH ? SP_BPF_IFR_ENTRY : 0);
		f->me = me;
		w->n++;
		return 0;
	}
	if (!iseq || !pc || (flags & SP_BPF_RB_FLAG_CFRAME))
		return 0;	/* an ifunc's frame (a C block): its C method is named */
	body = rb_iseq_body(w, iseq, &size, &enc);
	if (!body)
		return w->status = SP_BPF_IST_FAULT, 1;
	f->code = iseq;
	f->firstline = size;
	f->name = (__u32)body;
	f->flags = flags & SP_BPF_RB_FLAG_FINISH ? SP_BPF_IFR_ENTRY : 0;
	f->me = me;
	if (pc >= enc && (pc - enc) / 8 <= size)
		f->instr = (__s32)((pc - enc) / 8);
	else
		f->instr = -1;
	w->n++;
	return 0;
}

/* Ruby: the control frames of thread th, innermost first, from its
 * execution context's cfp to the end of its VM stack (the VM's dummy
 * frames count towards the bound, not the stack). */
static __always_inline int walk_rb(struct scratch *s, const struct sp_bpf_ilayout *l, __u64 th)
{
	struct rb_walk w = { .s = s, .l = l, .status = SP_BPF_IST_OK };
	__u64 ec, size;
	unsigned int i;

	for (i = 0; i < SP_BPF_RB_SEEN; i++) {	/* another walk's: perhaps another process's */
		s->seen[i].iseq = 0;
		s->me_seen[i] = 0;
	}

	ec = rd_ptr(th + l->rb_th_ec);
	if (!ec || l->rb_ec_cfp < 16 ||
	    bpf_probe_read_user(s->fr, 24, (const void *)(ec + l->rb_ec_cfp - 16)))
		return SP_BPF_IST_FAULT;
	size = get64(s->fr, 8, sizeof(s->fr));	/* vm_stack_size, in VALUEs */
	if (size > (1ull << 28) || !l->rb_cfp_size)
		return SP_BPF_IST_FAULT;
	w.end = get64(s->fr, 0, sizeof(s->fr)) + size * 8;
	w.cfp = get64(s->fr, 16, sizeof(s->fr));
	if (!w.cfp)
		return SP_BPF_IST_FAULT;
	bpf_loop(2 * SP_BPF_IFRAMES, rb_frame, &w, 0);
	s->h.nframes = w.n;
	if (w.status == SP_BPF_IST_OK && w.cfp + l->rb_cfp_size <= w.end)
		s->h.flags |= SP_BPF_IFL_TRUNCATED;
	return w.status;
}

/* The record of s goes out; counted when the ring buffer is full. */
static __always_inline void output(struct scratch *s)
{
	__u64 size;

	size = sizeof(s->h) + (__u64)(s->h.nframes & (2 * SP_BPF_IFRAMES - 1)) *
	       sizeof(struct sp_bpf_iframe);
	if (size > sizeof(*s))
		size = sizeof(*s);
	if (bpf_ringbuf_output(&stacks, s, size, s->wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		count_lost();
}

/* The scratch record (of map sc) for this sample, its header filled,
 * flagged fl with cpu in its cpu field; NULL when the process is not
 * followed. */
static __always_inline struct scratch *begin_in(void *sc, __u32 cpu, __u8 fl,
						struct sp_bpf_iproc **prp,
						const struct sp_bpf_ilayout **lp)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, zero = 0;
	struct sp_bpf_iproc *pr;
	struct scratch *s;

	pr = bpf_map_lookup_elem(&procs, &pid);
	if (!pr)
		return NULL;
	s = bpf_map_lookup_elem(sc, &zero);
	if (!s)
		return NULL;
	s->h.time_ns = bpf_ktime_get_ns();
	s->h.pid = pid;
	s->h.tid = (__u32)pid_tgid;
	s->h.cpu = cpu;
	s->h.nframes = 0;
	s->h.flags = fl;
	s->h.tstate = 0;
	s->h.status = SP_BPF_IST_NO_LAYOUT;
	s->wake = 0;
	s->copies = 0;
	*prp = pr;
	*lp = bpf_map_lookup_elem(&layouts, &pr->layout);
	return s;
}

static __always_inline struct scratch *begin(struct sp_bpf_iproc **prp,
					     const struct sp_bpf_ilayout **lp)
{
	return begin_in(&scratch, bpf_get_smp_processor_id(), 0, prp, lp);
}

/* Ruby's walk of s's thread, and its record out. */
static __always_inline void walk_rb_out(struct scratch *s, const struct sp_bpf_ilayout *l,
					const struct sp_bpf_iproc *pr)
{
	__u64 th;

	if (l && l->valid) {
		if (!(th = find_rb_thread(l, pr->runtime, s->h.tid))) {
			s->h.status = SP_BPF_IST_NO_THREAD;
		} else {
			s->h.tstate = th;
			s->h.status = walk_rb(s, l, th);
		}
	}
	output(s);
}

/* Python's, once the tail call to Ruby's (wk) was not taken or failed. */
static __always_inline void walk_out(void *ctx, void *wk, struct scratch *s,
				     const struct sp_bpf_ilayout *l,
				     const struct sp_bpf_iproc *pr)
{
	__u64 ts;

	if (l && l->valid && l->kind == SP_BPF_IK_RUBY) {
		bpf_tail_call(ctx, wk, 0);
		/* the tail call failed: the slot is empty (its walker is
		 * loaded on a thread once a Ruby is found: not in yet) */
		s->h.status = SP_BPF_IST_NO_WALKER;
	} else if (l && l->valid) {
		if (!(ts = find_tstate(l, pr->runtime, s->h.tid))) {
			s->h.status = SP_BPF_IST_NO_THREAD;
		} else {
			s->h.tstate = ts;
			s->h.status = walk(s, l, ts);
		}
	}
	output(s);
}

/* Ruby's walk is a program of its own, tail-called: each is verified
 * alone, within the verifier's bounds. */
SEC("perf_event")
int on_sample_rb(struct bpf_perf_event_data *ctx)
{
	const struct sp_bpf_ilayout *l;
	struct sp_bpf_iproc *pr;
	struct scratch *s = begin(&pr, &l);

	if (s)
		walk_rb_out(s, l, pr);
	return 1;
}

/* Slot 0: on_sample_rb, set by user space once loaded (a program left
 * unloaded, when its use was not asked for, cannot be a static slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} walkers SEC(".maps");

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	const struct sp_bpf_ilayout *l;
	struct sp_bpf_iproc *pr;
	struct scratch *s = begin(&pr, &l);

	if (s)
		walk_out(ctx, &walkers, s, l, pr);
	return 1;
}

/*
 * The interpreted stack of a thread as it is switched out (--off-cpu's
 * context-switch samples, whose overflow runs in the outgoing task: it is
 * still current, its memory mapped). Flagged SP_BPF_IFL_OFFCPU for user
 * space to pair it with the off-CPU sample, not a CPU one. The samples'
 * scratch serves: perf_event programs do not nest on a CPU. Every other
 * task pays the one lookup in "procs". With -a --cgroup/--container, a
 * task outside the cgroups is dropped first (cgfilter.bpf.h): its sample
 * is not written at all.
 */
SEC("perf_event")
int on_switch_rb(struct bpf_perf_event_data *ctx)
{
	const struct sp_bpf_ilayout *l;
	struct sp_bpf_iproc *pr;
	struct scratch *s = begin_in(&scratch, bpf_get_smp_processor_id(), SP_BPF_IFL_OFFCPU,
				     &pr, &l);

	if (s)
		walk_rb_out(s, l, pr);
	return 1;
}

/* Slot 0: on_switch_rb, set by user space once loaded (a program left
 * unloaded, when its use was not asked for, cannot be a static slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sw_walkers SEC(".maps");

SEC("perf_event")
int on_switch(struct bpf_perf_event_data *ctx)
{
	const struct sp_bpf_ilayout *l;
	struct sp_bpf_iproc *pr;
	struct scratch *s;

	/* -a --cgroup: another cgroup's task goes with neither stack */
	if (!sp_cg_keep())
		return 0;
	s = begin_in(&scratch, bpf_get_smp_processor_id(), SP_BPF_IFL_OFFCPU, &pr, &l);
	if (s)
		walk_out(ctx, &sw_walkers, s, l, pr);
	return 1;
}

/*
 * The interpreted stack at the entry of the system calls whose kernel
 * events sp-record decodes (open, connect, unlink ...): user space sets
 * their numbers in want_nr before loading, so the program stops at once
 * for every other call, and for every process not in "procs" after one
 * lookup. The record is a sample's, flagged SP_BPF_IFL_EVENT with the
 * call's number in cpu: user space links it to the event the call makes.
 * The walkers are the samples' ones, run from this program's type.
 */
const volatile __u64 want_nr[SP_BPF_INR_MAX / 64] = {};

/* The entry programs' own scratch: a sample's program may interrupt one
 * on its CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} ev_scratch SEC(".maps");

/* begin()'s, for a call's entry: the record flagged, its call number. */
static __always_inline struct scratch *begin_ev(__u64 nr, struct sp_bpf_iproc **prp,
						const struct sp_bpf_ilayout **lp)
{
	return begin_in(&ev_scratch, (__u32)nr, SP_BPF_IFL_EVENT, prp, lp);
}

static __always_inline bool wanted(__u64 nr)
{
	return nr < SP_BPF_INR_MAX && (want_nr[(nr / 64) & (SP_BPF_INR_MAX / 64 - 1)] >> (nr % 64) & 1);
}

/* The Ruby walk of call nr's entry (the tail-called programs' body). */
static __always_inline void event_rb(__u64 nr)
{
	const struct sp_bpf_ilayout *l;
	struct sp_bpf_iproc *pr;
	struct scratch *s = begin_ev(nr, &pr, &l);

	if (s)
		walk_rb_out(s, l, pr);
}

/* The walk of call nr's entry, Ruby's through wk's slot. */
static __always_inline void event_entry(void *ctx, void *wk, __u64 nr)
{
	const struct sp_bpf_ilayout *l;
	struct sp_bpf_iproc *pr;
	struct scratch *s;

	if (!wanted(nr) || !(s = begin_ev(nr, &pr, &l)))
		return;
	walk_out(ctx, wk, s, l, pr);
}

SEC("raw_tp")
int on_event_rb(struct bpf_raw_tracepoint_args *ctx)
{
	event_rb(ctx->args[1]);
	return 0;
}

/* Slot 0: on_event_rb, set by user space once loaded (a program left
 * unloaded, when its use was not asked for, cannot be a static slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ev_walkers SEC(".maps");

SEC("raw_tp/sys_enter")
int on_event(struct bpf_raw_tracepoint_args *ctx)
{
	event_entry(ctx, &ev_walkers, ctx->args[1]);
	return 0;
}

/*
 * on_event's twin on the classic per-call tracepoints (syscalls:sys_enter_
 * openat and the like, one link per call in want_nr; lib/record/
 * bpf_interp.c): the kernel tests a bit per call number before it runs a
 * program there, so every other system call of the machine runs none,
 * where the raw sys_enter program runs for each. on_event stays the
 * fallback where those tracepoints cannot be had. A tracepoint program
 * tail-calls only programs of its type: its own Ruby walker and slot.
 */
SEC("tracepoint")
int on_event_rb_tp(struct syscall_trace_enter *ctx)
{
	event_rb((__u32)ctx->nr);
	return 0;
}

/* Slot 0: on_event_rb_tp, set by user space as ev_walkers' is. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ev_walkers_tp SEC(".maps");

SEC("tracepoint")
int on_event_tp(struct syscall_trace_enter *ctx)
{
	event_entry(ctx, &ev_walkers_tp, (__u32)ctx->nr);
	return 0;
}

/*
 * A process's entry in "procs" follows it in the kernel, at once: a new
 * process (not a thread) of a followed one takes its parent's entry (a
 * fork runs what its parent ran, at the same addresses), so its first
 * calls and samples are walked before user space reads the fork from
 * perf's ring; an exec or the end of its last thread removes it (the new
 * image's interpreter, if any, is registered from its mappings). User
 * space still adds and removes entries as it learns of them: whichever
 * comes first, the result is the same.
 */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_task_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid), pid = BPF_CORE_READ(child, tgid);
	struct sp_bpf_iproc *pr;

	if (pid == ppid || !(pr = bpf_map_lookup_elem(&procs, &ppid)))
		return 0;
	bpf_map_update_elem(&procs, &pid, pr, BPF_ANY);	/* full: user space's turn */
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_task_exec, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	bpf_map_delete_elem(&procs, &pid);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_task_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	if (BPF_CORE_READ(p, signal, live.counter) <= 0)	/* its last thread */
		bpf_map_delete_elem(&procs, &pid);
	return 0;
}
