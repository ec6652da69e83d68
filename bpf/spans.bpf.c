// SPDX-License-Identifier: MIT
/*
 * spans.bpf.c - method spans from USDT probes (Ruby, Python,
 * <stackpulse/span.h>) and uprobes (--span-func), for the processes of the
 * recorded tree only. Loaded and attached by lib/record/bpf_spans.c.
 *
 * The tree is the map 'tgids': seeded by the loader, grown on fork, shrunk on
 * exit. A tracked process that forks or execs is stopped with SIGSTOP (when
 * stop_new is set) so that the loader can attach the per-process probes
 * before it runs a single instruction; the loader sends SIGCONT. Each
 * process stopped is in the map 'held' until the loader continues it, so
 * that sp-record's guardian (lib/record/hold_guard.c) continues whoever is left
 * when sp-record is gone, however it went.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
/* libbpf's USDT links (on kernels without uprobe_multi links): room for
 * the specs of many processes' links at once (libbpf's default is 256) */
#define BPF_USDT_MAX_SPEC_CNT	4096
#include <bpf/usdt.bpf.h>
#include "spans.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SP_SIGSTOP	19

/* Stop forked and exec'ing processes: set by the loader once the guardian
 * that continues them after sp-record runs (not before). */
__u32 stop_new;
const volatile __u32 audit_args = 1;	/* decode the first argument of audit events */
/* -a: a process not tracked that runs a runtime hook's marker through a
 * shared link is asked for (SP_BS_FIND), set by the loader */
__u32 find_on_hit;

extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym __weak;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} spans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_BS_MAX_PIDS);
	__type(key, __u32);
	__type(value, struct sp_bs_proc);
} tgids SEC(".maps");

/* The processes stopped here and not continued yet by the loader (key:
 * tgid, value: when it was stopped); an exit deletes its entry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_BS_MAX_PIDS);
	__type(key, __u32);
	__type(value, __u64);
} held SEC(".maps");

/* Operands of the USDT probes attached by uprobe_multi links. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_BS_MAX_SPECS);
	__type(key, __u32);
	__type(value, struct __bpf_usdt_spec);
} usdt_specs SEC(".maps");

_Static_assert(sizeof(struct sp_bs_usdt_spec) == sizeof(struct __bpf_usdt_spec),
	       "struct sp_bs_usdt_spec is libbpf's struct __bpf_usdt_spec");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct sp_bs_imgkey);
	__type(value, __u32);
} images SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sp_bs_strkey);
	__type(value, struct sp_bs_strval);
} strcache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_bs_event);
} scratch SEC(".maps");

/* The span ring of each thread that announced one (rt__ring), key: tid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct sp_bs_ring);
} rings SEC(".maps");

/* Events sent per CPU, to look at the ring's fill level only now and then. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sent SEC(".maps");

static __always_inline void count_lost_n(__u64 k)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&lost, &zero);

	if (n)
		*n += k;
}

static __always_inline void count_lost(void)
{
	count_lost_n(1);
}

/*
 * -a: the processes asked for (pid -> the start of the process asked for),
 * once each. A shared link is on a hook file a process the loader took
 * maps, root's: another process that runs its markers carries that hook,
 * and is taken at once, not at the loader's next look at /proc (200 ms
 * later at most, when a short program may be gone). The loader judges a
 * process once on an ask however often it asks (this map forgets); asks
 * beyond ASK_BURST a CPU in ASK_WINDOW_NS wait for a later marker, or for
 * the loader's look at /proc.
 */
#define ASK_BURST	16
#define ASK_WINDOW_NS	10000000ull

struct ask_budget {
	__u64 window;	/* its start */
	__u64 n;	/* asks sent in it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ask_budget);
} ask_budget SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} asked SEC(".maps");

static __always_inline void ask_for(__u32 pid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 start = BPF_CORE_READ(task, group_leader, start_time);
	__u64 *was = bpf_map_lookup_elem(&asked, &pid);
	struct sp_bs_event *e;

	__u64 now = bpf_ktime_get_ns();
	struct ask_budget *b;
	__u32 zero = 0;

	if (was && *was == start)
		return;
	b = bpf_map_lookup_elem(&ask_budget, &zero);
	if (!b)
		return;
	if (now - b->window >= ASK_WINDOW_NS) {
		b->window = now;
		b->n = 0;
	}
	if (b->n >= ASK_BURST)
		return;
	e = bpf_ringbuf_reserve(&spans, SP_BS_HEAD_SIZE, 0);
	if (!e)
		return;	/* asked again at its next marker */
	b->n++;
	bpf_map_update_elem(&asked, &pid, &start, BPF_ANY);
	__builtin_memset(e, 0, SP_BS_HEAD_SIZE);
	e->time_ns = now;
	e->kind = SP_BS_FIND;
	e->pid = pid;
	e->tid = pid;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/*
 * Whether the probe hit counts: the current process is tracked and the
 * probe belongs to the image it runs (not one it has left by exec: its
 * generation is stale). Generation 0: a runtime hook's link for every
 * process that maps the hook (the loader's shared links), which counts in
 * a process of the tree whose image the loader gave probes, fork children
 * included (they run the image of the parent). Hits are counted by the
 * loader, per event it reads (probe health): a hash update per hit here
 * cost more than the rest of a span event.
 */
static __always_inline bool tracked(__u32 pid, __u64 cookie)
{
	struct sp_bs_proc *t = bpf_map_lookup_elem(&tgids, &pid);
	__u32 gen = (__u32)(cookie >> 32);

	if (!t && !gen && find_on_hit)
		ask_for(pid);
	return t && (t->gen == gen || (!gen && t->probed));
}

static __always_inline void fill_head(struct sp_bs_event *e, __u64 id, __u32 kind,
				      __u32 probe, __u64 cookie)
{
	e->time_ns = bpf_ktime_get_ns();
	e->kind = kind;
	e->probe = probe;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ppid = 0;
	e->flags = 0;
	e->cookie = (__u32)cookie;
	e->line = 0;
	e->addr[0] = e->addr[1] = e->addr[2] = 0;
	e->hash[0] = e->hash[1] = e->hash[2] = 0;
	e->len[0] = e->len[1] = e->len[2] = e->pad = 0;
}

/* A tracked process's event buffer for strings read here (scratch, copied
 * into the ring by submit()), or NULL. */
static __always_inline struct sp_bs_event *begin(__u32 kind, __u32 probe, __u64 cookie)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_bs_event *e;
	__u32 zero = 0;

	if (!tracked(id >> 32, cookie))
		return NULL;
	e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return NULL;
	fill_head(e, id, kind, probe, cookie);
	return e;
}

/* Read string i from user memory and hash it; submit() decides whether
 * its bytes must travel. */
static __always_inline void get_str(struct sp_bs_event *e, int i, __u64 addr)
{
	__u64 h = 0xcbf29ce484222325ull, w;
	long n;
	int j;

	if (i < 0 || i >= SP_BS_NSTR)
		return;
	e->addr[i] = addr;
	if (!addr)
		return;
	n = bpf_probe_read_user_str(e->str[i], SP_BS_STRLEN, (void *)addr);
	if (n <= 0) {
		/* Typically a string literal in a page never touched yet: BPF
		 * cannot fault it in, the loader reads it. */
		e->flags |= SP_BSF_UNREAD(i);
		e->str[i][0] = 0;
		return;
	}
	n -= 1;		/* without the NUL */
	e->len[i] = n;
	for (j = 0; j < SP_BS_STRLEN / 8; j++) {
		if (j * 8 >= n)
			break;
		w = *(__u64 *)&e->str[i][j * 8];
		if (n - j * 8 < 8)
			w &= (1ull << ((n - j * 8) * 8)) - 1;
		h = (h ^ w) * 0x100000001b3ull;
	}
	h ^= n;
	e->hash[i] = h;
}

/*
 * Waking the reader per event costs more than the event itself: wake it
 * when a quarter of the ring is used (it also drains every batch interval).
 * Reading the fill level touches the consumer position, a cache line the
 * reader writes from another CPU (about 100 ns a miss here), so it is read
 * only every 64th event of a CPU; the ring has room for far more than that.
 */
static __always_inline __u64 wake_flags(void)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&sent, &zero);

	if (n && (++*n & 63))
		return BPF_RB_NO_WAKEUP;
	return bpf_ringbuf_query(&spans, BPF_RB_AVAIL_DATA) > (2 << 20) ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/*
 * An event without string bytes (strings known by address only), reserved
 * in the ring itself: no scratch buffer, no copy. Sent by submit_head().
 */
static __always_inline struct sp_bs_event *begin_head(__u32 kind, __u32 probe, __u64 cookie)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_bs_event *e;

	if (!tracked(id >> 32, cookie))
		return NULL;
	e = bpf_ringbuf_reserve(&spans, SP_BS_HEAD_SIZE, 0);
	if (!e) {
		count_lost();
		return NULL;
	}
	fill_head(e, id, kind, probe, cookie);
	return e;
}

static __always_inline int submit_head(struct sp_bs_event *e)
{
	bpf_ringbuf_submit(e, wake_flags());
	return 0;
}

/* Send the event read by get_str(), with the bytes of each string read
 * that this process has not sent from that address with these bytes in
 * the same combination of addresses (a new combination resends its
 * strings: the writer interns them by content, the spool does not grow). */
static __always_inline int submit(struct sp_bs_event *e)
{
	struct sp_bs_strkey k = {
		.addr = { e->addr[0], e->addr[1], e->addr[2] }, .pid = e->pid,
		/* two loads, no helper: this runs for every mark */
		.start = (__u32)bpf_get_current_task_btf()->group_leader->start_time,
	};
	struct sp_bs_strval *v = bpf_map_lookup_elem(&strcache, &k), nv;
	__u64 size = SP_BS_HEAD_SIZE;
	int i;

	for (i = 0; i < SP_BS_NSTR; i++) {
		nv.hash[i] = e->hash[i];
		if (e->addr[i] && !(e->flags & SP_BSF_UNREAD(i)) &&
		    (!v || v->hash[i] != e->hash[i]))
			e->flags |= SP_BSF_SENT(i);
	}
	if (e->flags & (SP_BSF_SENT(0) | SP_BSF_SENT(1) | SP_BSF_SENT(2)))
		size = sizeof(*e);
	if (bpf_ringbuf_output(&spans, e, size, wake_flags())) {
		count_lost();
		return 0;
	}
	/* Only now are the strings known to the reader. */
	if (size == sizeof(*e))
		bpf_map_update_elem(&strcache, &k, &nv, BPF_ANY);
	return 0;
}

static __always_inline __u32 cookie_probe(__u64 c)
{
	return c & 0xff;
}

static __always_inline __u32 probe_kind(__u32 probe)
{
	switch (probe) {
	case SP_PR_RUBY_METHOD_ENTRY:
	case SP_PR_RUBY_CMETHOD_ENTRY:
	case SP_PR_PY_FUNCTION_ENTRY:
	case SP_PR_SP_BEGIN:
	case SP_PR_UPROBE_ENTRY:
	case SP_PR_RB_HOOK_CALL:
	case SP_PR_PY_HOOK_CALL:
		return SP_BS_START;
	case SP_PR_RT_NAME:
		return SP_BS_NAME;
	case SP_PR_RB_HOOK_FIBER:
		return SP_BS_FIBER;
	case SP_PR_RUBY_RAISE:
	case SP_PR_PY_HOOK_RAISE:
		return SP_BS_RAISE;
	case SP_PR_RT_RING:
		return SP_BS_RING;
	case SP_PR_PY_AUDIT:
	case SP_PR_PY_HOOK_AUDIT:
		return SP_BS_AUDIT;
	}
	return SP_BS_STOP;
}

/*
 * A register of the probed thread by its offset in struct pt_regs, as
 * libbpf's USDT specs give it: a direct context load (the verifier wants a
 * constant offset, hence the switch) instead of a helper call.
 */
static __always_inline int reg_value(struct pt_regs *ctx, short off, __u64 *v)
{
#if defined(__TARGET_ARCH_x86)
	switch (off) {
	case __builtin_offsetof(struct pt_regs, ax): *v = ctx->ax; return 0;
	case __builtin_offsetof(struct pt_regs, bx): *v = ctx->bx; return 0;
	case __builtin_offsetof(struct pt_regs, cx): *v = ctx->cx; return 0;
	case __builtin_offsetof(struct pt_regs, dx): *v = ctx->dx; return 0;
	case __builtin_offsetof(struct pt_regs, si): *v = ctx->si; return 0;
	case __builtin_offsetof(struct pt_regs, di): *v = ctx->di; return 0;
	case __builtin_offsetof(struct pt_regs, bp): *v = ctx->bp; return 0;
	case __builtin_offsetof(struct pt_regs, sp): *v = ctx->sp; return 0;
	case __builtin_offsetof(struct pt_regs, r8): *v = ctx->r8; return 0;
	case __builtin_offsetof(struct pt_regs, r9): *v = ctx->r9; return 0;
	case __builtin_offsetof(struct pt_regs, r10): *v = ctx->r10; return 0;
	case __builtin_offsetof(struct pt_regs, r11): *v = ctx->r11; return 0;
	case __builtin_offsetof(struct pt_regs, r12): *v = ctx->r12; return 0;
	case __builtin_offsetof(struct pt_regs, r13): *v = ctx->r13; return 0;
	case __builtin_offsetof(struct pt_regs, r14): *v = ctx->r14; return 0;
	case __builtin_offsetof(struct pt_regs, r15): *v = ctx->r15; return 0;
	}
#endif
	return bpf_probe_read_kernel(v, sizeof(*v), (void *)ctx + off);
}

static __always_inline long arg_cast(const struct __bpf_usdt_arg_spec *s, __u64 v)
{
	v <<= s->arg_bitshift;
	return s->arg_signed ? (long)v >> s->arg_bitshift : (long)(v >> s->arg_bitshift);
}

#define SP_USDT_MAX_ARGS 4

/*
 * The first n (<= 4) arguments of the USDT probe that fired, and its
 * cookie: what libbpf's bpf_usdt_arg() gives, with one spec lookup for all
 * of them instead of one each, registers read from the context, and one
 * user read when they are consecutive words of memory at one register
 * (Ruby's: "8@(%rsp) 8@8(%rsp) 8@16(%rsp) -4@24(%rsp)"). Measured here:
 * libbpf's way took about 60 ns an argument, a stack argument more.
 * multi: attached by a uprobe_multi link, whose cookie is ours and names
 * the spec in 'usdt_specs'; else a libbpf USDT link (the spec has the
 * cookie). Returns 0, or -1 (args zeroed) when the spec is missing or short.
 */
static __always_inline int usdt_args(struct pt_regs *ctx, long *a, int n, __u64 *cookie,
				     bool multi)
{
	struct __bpf_usdt_spec *spec;
	__u64 w[SP_USDT_MAX_ARGS] = {}, base = 0, v;
	bool block = true;
	int i;

	for (i = 0; i < SP_USDT_MAX_ARGS; i++)
		a[i] = 0;
	*cookie = 0;
	if (n > SP_USDT_MAX_ARGS)
		return -1;
	if (multi) {
		__u64 c = bpf_get_attach_cookie(ctx);
		__u32 sid = (__u32)(c >> 8) & 0xffffff;

		spec = bpf_map_lookup_elem(&usdt_specs, &sid);
		if (!spec || spec->arg_cnt < n)
			return -1;
		*cookie = c;
	} else {
		int id = __bpf_usdt_spec_id(ctx);

		if (id < 0)
			return -1;
		spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &id);
		if (!spec || spec->arg_cnt < n)
			return -1;
		*cookie = spec->usdt_cookie;
	}
	for (i = 0; i < SP_USDT_MAX_ARGS; i++)
		if (i < n && (spec->args[i].arg_type != BPF_USDT_ARG_REG_DEREF ||
			      spec->args[i].reg_off != spec->args[0].reg_off ||
			      spec->args[i].val_off != spec->args[0].val_off + 8 * i))
			block = false;
	if (block) {
		if (reg_value(ctx, spec->args[0].reg_off, &base) ||
		    bpf_probe_read_user(w, n * 8, (void *)(base + spec->args[0].val_off)))
			return -1;
		for (i = 0; i < SP_USDT_MAX_ARGS; i++)
			if (i < n)
				a[i] = arg_cast(&spec->args[i], w[i]);
		return 0;
	}
	for (i = 0; i < SP_USDT_MAX_ARGS; i++) {
		const struct __bpf_usdt_arg_spec *s = &spec->args[i];

		if (i >= n)
			break;
		v = 0;
		if (s->arg_type == BPF_USDT_ARG_CONST) {
			v = s->val_off;
		} else if (reg_value(ctx, s->reg_off, &v)) {
			v = 0;
		} else if (s->arg_type == BPF_USDT_ARG_REG_DEREF &&
			   bpf_probe_read_user(&v, sizeof(v), (void *)(v + s->val_off))) {
			v = 0;
		}
		a[i] = arg_cast(s, v);
	}
	return 0;
}

/*
 * The event of the USDT probe that fired, its first n arguments in a[]:
 * the probe (and so the kind of event) is the one its attach cookie names.
 * head: strings known by address only, reserved in the ring (begin_head).
 */
static __always_inline struct sp_bs_event *usdt_begin(struct pt_regs *ctx, long *a, int n,
						      bool head, bool multi)
{
	__u64 cookie;
	__u32 probe;

	if (usdt_args(ctx, a, n, &cookie, multi))
		return NULL;
	probe = cookie_probe(cookie);
	return head ? begin_head(probe_kind(probe), probe, cookie) :
		      begin(probe_kind(probe), probe, cookie);
}

/*
 * Each USDT program comes twice: for libbpf's USDT links (SEC("usdt")) and
 * for uprobe_multi links (the _multi twin; the loader sets its attach type
 * before loading), which the loader prefers where the kernel has them
 * (Linux 6.6): they cost one link per probe and process, with no libbpf
 * state shared between threads.
 */

/* ruby:method__entry/return, ruby:cmethod__entry/return:
 * (classname, methodname, filename, lineno) */
static __always_inline int ruby_method(struct pt_regs *ctx, bool multi)
{
	long a[SP_USDT_MAX_ARGS];
	struct sp_bs_event *e;

	e = usdt_begin(ctx, a, 4, false, multi);
	if (!e)
		return 0;
	get_str(e, 0, a[0]);
	get_str(e, 1, a[1]);
	get_str(e, 2, a[2]);
	e->line = a[3];
	return submit(e);
}

SEC("usdt")
int on_ruby_method(struct pt_regs *ctx)
{
	return ruby_method(ctx, false);
}

SEC("uprobe")
int on_ruby_method_multi(struct pt_regs *ctx)
{
	return ruby_method(ctx, true);
}

/* ruby:raise (classname, filename, lineno) */
static __always_inline int ruby_raise(struct pt_regs *ctx, bool multi)
{
	long a[SP_USDT_MAX_ARGS];
	struct sp_bs_event *e;

	e = usdt_begin(ctx, a, 3, false, multi);
	if (!e)
		return 0;
	get_str(e, 0, a[0]);
	get_str(e, 2, a[1]);
	e->line = a[2];
	return submit(e);
}

SEC("usdt")
int on_ruby_raise(struct pt_regs *ctx)
{
	return ruby_raise(ctx, false);
}

SEC("uprobe")
int on_ruby_raise_multi(struct pt_regs *ctx)
{
	return ruby_raise(ctx, true);
}

/* python:function__entry/return (filename, funcname, lineno) */
static __always_inline int py_function(struct pt_regs *ctx, bool multi)
{
	long a[SP_USDT_MAX_ARGS];
	struct sp_bs_event *e;

	e = usdt_begin(ctx, a, 3, false, multi);
	if (!e)
		return 0;
	get_str(e, 1, a[1]);
	get_str(e, 2, a[0]);
	e->line = a[2];
	return submit(e);
}

SEC("usdt")
int on_py_function(struct pt_regs *ctx)
{
	return py_function(ctx, false);
}

SEC("uprobe")
int on_py_function_multi(struct pt_regs *ctx)
{
	return py_function(ctx, true);
}

/*
 * The first item of a CPython 3.11 tuple when it is a compact ASCII str:
 * PyTupleObject items start at 24; PyASCIIObject data at 48; the state
 * word at 32 has compact (bit 5) and ascii (bit 6) set.
 */
static __always_inline __u64 py_first_ascii(__u64 tuple)
{
	__u64 size = 0, item = 0, type = 0, tp_name = 0;
	__u32 state = 0;
	char name[4] = {};

	if (!tuple || bpf_probe_read_user(&size, 8, (void *)(tuple + 16)) || size < 1 ||
	    size > 1000000)
		return 0;
	if (bpf_probe_read_user(&item, 8, (void *)(tuple + 24)) || !item)
		return 0;
	if (bpf_probe_read_user(&type, 8, (void *)(item + 8)) || !type)
		return 0;
	if (bpf_probe_read_user(&tp_name, 8, (void *)(type + 24)) || !tp_name)
		return 0;
	if (bpf_probe_read_user(name, 4, (void *)tp_name))
		return 0;
	if (name[0] != 's' || name[1] != 't' || name[2] != 'r' || name[3] != 0)
		return 0;
	if (bpf_probe_read_user(&state, 4, (void *)(item + 32)))
		return 0;
	if ((state & 0x60) != 0x60)
		return 0;
	return item + 48;
}

/* python:audit (event, args tuple) */
static __always_inline int py_audit(struct pt_regs *ctx, bool multi)
{
	long a[SP_USDT_MAX_ARGS];
	struct sp_bs_event *e;

	e = usdt_begin(ctx, a, 2, false, multi);
	if (!e)
		return 0;
	get_str(e, 0, a[0]);
	if (audit_args)
		get_str(e, 1, py_first_ascii(a[1]));
	return submit(e);
}

SEC("usdt")
int on_py_audit(struct pt_regs *ctx)
{
	return py_audit(ctx, false);
}

SEC("uprobe")
int on_py_audit_multi(struct pt_regs *ctx)
{
	return py_audit(ctx, true);
}

/* stackpulse:span__begin/end (name, file, line) from <stackpulse/span.h> */
static __always_inline int sp_span(struct pt_regs *ctx, bool multi)
{
	long a[SP_USDT_MAX_ARGS];
	struct sp_bs_event *e;

	e = usdt_begin(ctx, a, 3, true, multi);
	if (!e)
		return 0;
	/* String literals of the binary: their bytes never change, so the
	 * loader reads each address once per process; nothing is read here. */
	e->addr[1] = a[0];
	e->addr[2] = a[1];
	e->flags = SP_BSF_UNREAD(1) | SP_BSF_UNREAD(2);
	e->line = a[2];
	return submit_head(e);
}

SEC("usdt")
int on_sp_span(struct pt_regs *ctx)
{
	return sp_span(ctx, false);
}

SEC("uprobe")
int on_sp_span_any_multi(struct pt_regs *ctx)
{
	return sp_span(ctx, true);
}

/* The attach cookie of the USDT probe that fired, 0 if unknown. */
static __always_inline __u64 usdt_cookie(struct pt_regs *ctx)
{
	int spec_id = __bpf_usdt_spec_id(ctx);
	struct __bpf_usdt_spec *spec;

	if (spec_id < 0)
		return 0;
	spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &spec_id);
	return spec ? spec->usdt_cookie : 0;
}

/* The cookie of a fixed-register marker: a uprobe_multi link's is ours
 * directly, a USDT link's is in its spec. */
static __always_inline __u64 marker_cookie(struct pt_regs *ctx, bool multi)
{
	return multi ? bpf_get_attach_cookie(ctx) : usdt_cookie(ctx);
}

/* The head-only event of a marker whose arguments are read from fixed
 * registers (the loader checked its note): no argument spec to decode. */
static __always_inline struct sp_bs_event *marker_begin(struct pt_regs *ctx, bool multi)
{
	__u64 cookie = marker_cookie(ctx, multi);
	__u32 probe = cookie_probe(cookie);

	if (!cookie)
		return NULL;
	return begin_head(probe_kind(probe), probe, cookie);
}

/*
 * The same markers from a <stackpulse/span.h> that passes its arguments in
 * fixed registers (x86-64: the note reads "8@%rdi 8@%rsi -4@%edx", checked
 * by the loader): read straight from pt_regs. libbpf's generic argument
 * fetch, a function call, a helper call and a spec lookup per argument,
 * cost more here than the rest of the event.
 */
static __always_inline int sp_span_regs(struct pt_regs *ctx, bool multi)
{
	struct sp_bs_event *e = marker_begin(ctx, multi);

	if (!e)
		return 0;
	e->addr[1] = PT_REGS_PARM1(ctx);
	e->addr[2] = PT_REGS_PARM2(ctx);
	e->flags = SP_BSF_UNREAD(1) | SP_BSF_UNREAD(2);
	e->line = (int)PT_REGS_PARM3(ctx);
	/* where the marker is: with its location's number in the cookie, the
	 * loader finds the binary's load address (its literals, from the file) */
	e->hash[0] = PT_REGS_IP(ctx);
	return submit_head(e);
}

SEC("usdt")
int on_sp_span_regs(struct pt_regs *ctx)
{
	return sp_span_regs(ctx, false);
}

/*
 * The runtime hooks' span markers (runtime/hook/marker.h): class,
 * method, file and line in %rdi, %rsi, %rdx and %ecx. The strings are the
 * hook's own, never freed or changed: the loader knows them by address
 * from the hook's rt__name marker, so nothing is read here.
 */
static __always_inline int rt_hook(struct pt_regs *ctx, bool multi)
{
	struct sp_bs_event *e = marker_begin(ctx, multi);

	if (!e)
		return 0;
	e->addr[0] = PT_REGS_PARM1(ctx);
	e->addr[1] = PT_REGS_PARM2(ctx);
	e->addr[2] = PT_REGS_PARM3(ctx);
	e->flags = SP_BSF_UNREAD(0) | SP_BSF_UNREAD(1) | SP_BSF_UNREAD(2);
	e->line = (int)PT_REGS_PARM4(ctx);
	return submit_head(e);
}

SEC("usdt")
int on_rt_hook(struct pt_regs *ctx)
{
	return rt_hook(ctx, false);
}

/* stackpulse:rt__name: a name the hook has just made, so its strings are
 * resident: read them all and send them, once per name. */
static __always_inline int rt_name(struct pt_regs *ctx, bool multi)
{
	__u64 cookie = marker_cookie(ctx, multi);
	struct sp_bs_event *e;
	int i;

	if (!cookie)
		return 0;
	e = begin(SP_BS_NAME, SP_PR_RT_NAME, cookie);
	if (!e)
		return 0;
	get_str(e, 0, PT_REGS_PARM1(ctx));
	get_str(e, 1, PT_REGS_PARM2(ctx));
	get_str(e, 2, PT_REGS_PARM3(ctx));
	for (i = 0; i < SP_BS_NSTR; i++)
		if (e->addr[i] && !(e->flags & SP_BSF_UNREAD(i)))
			e->flags |= SP_BSF_SENT(i);
	if (bpf_ringbuf_output(&spans, e, sizeof(*e), wake_flags()))
		count_lost();
	return 0;
}

SEC("usdt")
int on_rt_name(struct pt_regs *ctx)
{
	return rt_name(ctx, false);
}

/* stackpulse:py__audit (event, first argument when a str): the Python
 * hook's audit hook, for a CPython without the audit probe. Both strings
 * may be the interpreter's own, freed and reused: read like the probe's. */
static __always_inline int rt_audit(struct pt_regs *ctx, bool multi)
{
	__u64 cookie = marker_cookie(ctx, multi);
	struct sp_bs_event *e;

	if (!cookie)
		return 0;
	e = begin(SP_BS_AUDIT, SP_PR_PY_HOOK_AUDIT, cookie);
	if (!e)
		return 0;
	get_str(e, 0, PT_REGS_PARM1(ctx));
	get_str(e, 1, PT_REGS_PARM2(ctx));
	return submit(e);
}

SEC("usdt")
int on_rt_audit(struct pt_regs *ctx)
{
	return rt_audit(ctx, false);
}

/* What ring_piece() copies: entries [from, to) of the ring at addr. */
struct ring_copy_ctx {
	__u64 ring, base, from, to;
	__s64 clock;		/* mono_offset() of the ring's thread */
	__u32 pid, tid, flags;
};

/*
 * The CLOCK_MONOTONIC offset of the current task's time namespace, in ns:
 * a hook's ring stamps are read from the clock as that namespace shows it
 * (the kernel's, bpf_ktime_get_ns(), plus this). 0 without time namespaces.
 */
static __always_inline __s64 mono_offset(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct time_namespace *ns;

	if (!bpf_core_field_exists(((struct nsproxy *)0)->time_ns))
		return 0;
	ns = BPF_CORE_READ(t, nsproxy, time_ns);
	if (!ns)
		return 0;
	return BPF_CORE_READ(ns, offsets.monotonic.tv_sec) * 1000000000ll +
	       BPF_CORE_READ(ns, offsets.monotonic.tv_nsec);
}

/*
 * Piece i of a copy (a bpf_loop() callback, so that the verifier checks
 * it once): the entries of [from, to) in the i-th SP_RING_CHUNK-aligned
 * piece from base, which never wraps round the ring's end, as one
 * SP_BS_CHUNK record; the last says the ring is gone (SP_BSF_LAST), and is
 * sent even when there is nothing to copy. 1 stops the loop. A piece that
 * finds no room stops the copy: the marks not sent are counted lost (a
 * mark each, not an event per piece); one that cannot be read keeps its
 * count, with SP_BSF_FAULT, for the loader to count.
 */
static long ring_piece(__u32 i, void *arg)
{
	struct ring_copy_ctx *x = arg;
	__u64 lo = x->base + (__u64)i * SP_RING_CHUNK, hi = lo + SP_RING_CHUNK;
	struct sp_bs_event *e;
	__u32 n, size;

	if (lo < x->from)
		lo = x->from;
	if (hi > x->to)
		hi = x->to;
	if (lo >= hi && (i || x->from < x->to))
		return 1;
	n = lo < hi ? (__u32)(hi - lo) : 0;
	e = bpf_ringbuf_reserve(&spans, SP_BS_CHUNK_SIZE, 0);
	if (!e) {
		count_lost_n(x->to > lo ? x->to - lo : 0);
		return 1;
	}
	__builtin_memset(e, 0, SP_BS_HEAD_SIZE);
	e->time_ns = bpf_ktime_get_ns();
	e->kind = SP_BS_CHUNK;
	e->probe = SP_PR_RT_FLUSH;
	e->pid = x->pid;
	e->tid = x->tid;
	e->addr[0] = x->ring;
	e->addr[1] = (__u64)x->clock;
	e->cookie = lo;
	e->line = n;
	e->flags = x->flags | (hi >= x->to ? SP_BSF_LAST : 0);
	/* n entries only: the pages after them may never have been touched,
	 * and a read here cannot fault them in */
	size = n - 1;
	asm volatile("" : "+r"(size));	/* keep the mask for the verifier */
	size = ((size & (SP_RING_CHUNK - 1)) + 1) * sizeof(struct sp_ring_entry);
	if (n && bpf_probe_read_user((void *)e + SP_BS_HEAD_SIZE, size,
				     (void *)(x->ring + sizeof(struct sp_ring_head) +
					      (lo % SP_RING_CAP) * sizeof(struct sp_ring_entry))))
		e->flags |= SP_BSF_FAULT;
	bpf_ringbuf_submit(e, wake_flags());
	return hi >= x->to;
}

/* Copy entries [from, to) of the span ring at address ring into
 * SP_BS_CHUNK records, the last of them SP_BSF_LAST. */
static __always_inline void ring_copy(__u64 ring, __u32 pid, __u32 tid, __u64 from, __u64 to,
				      __u32 flags)
{
	struct ring_copy_ctx x = {
		.ring = ring, .from = from, .to = to, .pid = pid, .tid = tid, .flags = flags,
		.clock = mono_offset(),
	};

	if (to < from || to - from > SP_RING_CAP)
		x.from = to;
	x.base = x.from & ~(__u64)(SP_RING_CHUNK - 1);
	bpf_loop(SP_RING_CAP / SP_RING_CHUNK + 1, ring_piece, &x, 0);
}

/* The thread's ring at its end (exit, exec, or the hook's last rt__flush):
 * what sp-record has not read, and BPF forgets the ring. Its memory is
 * still there at sched_process_exit on Linux 6.18 (a kernel that runs it
 * after the address space goes fails the read: SP_BSF_FAULT). */
static __always_inline void ring_drain(__u32 pid, __u32 tid, __u64 addr)
{
	struct sp_bs_ring *r = bpf_map_lookup_elem(&rings, &tid);
	struct sp_ring_head h;
	__u64 from;

	if (r)
		addr = r->addr;
	if (!addr)
		return;
	bpf_map_delete_elem(&rings, &tid);
	if (bpf_probe_read_user(&h, sizeof(h), (void *)addr) || h.magic != SP_RING_MAGIC) {
		ring_copy(addr, pid, tid, 0, 0, SP_BSF_FAULT);
		return;
	}
	from = h.consumed;
	if (from > h.head || h.head - from > SP_RING_CAP)
		from = h.head > SP_RING_CAP ? h.head - SP_RING_CAP : 0;
	ring_copy(addr, pid, tid, from, h.head, 0);
}

/* stackpulse:rt__ring (ring, capacity, entry size, again): a thread made
 * its span ring, or says again that it has it (every second it is used).
 * Kept for its exit, and the loader reads it now and then. */
static __always_inline int rt_ring(struct pt_regs *ctx, bool multi)
{
	__u64 cookie = marker_cookie(ctx, multi), id = bpf_get_current_pid_tgid();
	struct sp_bs_ring r = { .addr = PT_REGS_PARM1(ctx), .pid = id >> 32 };
	__u32 tid = (__u32)id;
	struct sp_bs_event *e;

	if (!cookie || PT_REGS_PARM2(ctx) != SP_RING_CAP ||
	    PT_REGS_PARM3(ctx) != sizeof(struct sp_ring_entry) || !tracked(r.pid, cookie))
		return 0;
	/* known for the thread's end even when the record is lost */
	bpf_map_update_elem(&rings, &tid, &r, BPF_ANY);
	e = begin_head(SP_BS_RING, SP_PR_RT_RING, cookie);
	if (!e)
		return 0;
	e->addr[0] = r.addr;
	/* whose ring: the loader reads and writes it only through that
	 * process's memory, and its pid may be another's by then */
	e->addr[1] = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), group_leader,
				   start_boottime);
	/* the clock its stamps are in */
	e->addr[2] = (__u64)mono_offset();
	e->line = (__u32)PT_REGS_PARM4(ctx);	/* 1: announced again */
	return submit_head(e);
}

SEC("usdt")
int on_rt_ring(struct pt_regs *ctx)
{
	return rt_ring(ctx, false);
}

/* stackpulse:rt__flush (ring, 0, 0, last): half the ring is unread, so
 * wake the loader to read it; or the thread ends (last). */
static __always_inline int rt_flush(struct pt_regs *ctx, bool multi)
{
	__u64 cookie = marker_cookie(ctx, multi), id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	struct sp_bs_ring r = {};
	struct sp_bs_event *e;

	if (!cookie || !tracked(pid, cookie))
		return 0;
	if ((__u32)PT_REGS_PARM4(ctx)) {
		ring_drain(pid, tid, PT_REGS_PARM1(ctx));
		return 0;
	}
	/* a ring announced before the recording (an attached process) is
	 * known from its first wake on */
	r.addr = PT_REGS_PARM1(ctx);
	r.pid = pid;
	bpf_map_update_elem(&rings, &tid, &r, BPF_ANY);
	e = bpf_ringbuf_reserve(&spans, SP_BS_HEAD_SIZE, 0);
	if (!e) {
		count_lost();
		return 0;
	}
	fill_head(e, id, SP_BS_RING_WAKE, SP_PR_RT_FLUSH, cookie);
	e->addr[0] = PT_REGS_PARM1(ctx);
	e->addr[2] = (__u64)mono_offset();
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("usdt")
int on_rt_flush(struct pt_regs *ctx)
{
	return rt_flush(ctx, false);
}

/*
 * The same markers, attached by uprobe_multi links (Linux 6.6 and later;
 * the loader sets the attach type before loading): the kernel runs them
 * straight from the uprobe, without the perf event (and its per-hit
 * filter of the attached processes) that a libbpf USDT link goes through.
 * One link holds every marker of a binary (a process's fork child gets
 * one link per binary, not one per marker): the cookie tells them apart.
 */
SEC("uprobe")
int on_marker_multi(struct pt_regs *ctx)
{
	switch (cookie_probe(bpf_get_attach_cookie(ctx))) {
	case SP_PR_SP_BEGIN:
	case SP_PR_SP_END:
		return sp_span_regs(ctx, true);
	case SP_PR_RT_NAME:
		return rt_name(ctx, true);
	case SP_PR_RT_RING:
		return rt_ring(ctx, true);
	case SP_PR_RT_FLUSH:
		return rt_flush(ctx, true);
	case SP_PR_PY_HOOK_AUDIT:
		return rt_audit(ctx, true);
	}
	return rt_hook(ctx, true);
}

/* --span-func: the cookie is the function's index in the loader's table. */
SEC("uprobe")
int on_func_entry(struct pt_regs *ctx)
{
	struct sp_bs_event *e = begin_head(SP_BS_START, SP_PR_UPROBE_ENTRY,
					   bpf_get_attach_cookie(ctx));

	if (!e)
		return 0;
	return submit_head(e);
}

SEC("uretprobe")
int on_func_return(struct pt_regs *ctx)
{
	struct sp_bs_event *e = begin_head(SP_BS_STOP, SP_PR_UPROBE_RETURN,
					   bpf_get_attach_cookie(ctx));

	if (!e)
		return 0;
	return submit_head(e);
}

/* Note that pid is about to be stopped: false if the map is full (then it
 * is not stopped). */
static __always_inline bool hold(__u32 pid)
{
	__u64 now = bpf_ktime_get_ns();

	return !bpf_map_update_elem(&held, &pid, &now, BPF_ANY);
}

/* Reserve a process notification first: a process is stopped only when
 * the loader is sure to hear of it (else it would wait for ever). */
static __always_inline struct sp_bs_event *notify_reserve(__u32 kind, __u32 pid, __u32 ppid)
{
	struct sp_bs_event *e;

	e = bpf_ringbuf_reserve(&spans, SP_BS_HEAD_SIZE, 0);
	if (!e) {
		count_lost();
		return NULL;
	}
	__builtin_memset(e, 0, SP_BS_HEAD_SIZE);
	e->time_ns = bpf_ktime_get_ns();
	e->kind = kind;
	e->pid = pid;
	e->tid = pid;
	e->ppid = ppid;
	return e;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid, pid = child->tgid;
	struct sp_bs_proc *pp, np = { .gen = 1 };
	struct sp_bs_event *e;
	bool stop;

	if (child->pid != child->tgid)
		return 0;	/* a thread: same address space, same probes */
	pp = bpf_map_lookup_elem(&tgids, &ppid);
	if (!pp)
		return 0;
	/* the same image: the shared links count in it at once */
	np.probed = pp->probed;
	stop = pp->probed == SP_BS_PROBED;
	if (bpf_map_update_elem(&tgids, &pid, &np, BPF_ANY))
		return 0;
	e = notify_reserve(SP_BS_FORK, pid, ppid);
	if (!e)
		return 0;
	e->cookie = np.gen;
	if (child->mm == parent->mm) {
		/* vfork: it execs or exits, and runs no code of the image */
		e->flags |= SP_BSF_SHARED_MM;
		stop = false;
	}
	/* Only a child of an image with probes of its own (not only shared
	 * links) needs probes before it runs; held first, so that the
	 * guardian knows of it before it is stopped. */
	if (stop && stop_new && bpf_send_signal_task && hold(pid)) {
		if (!bpf_send_signal_task(child, SP_SIGSTOP, PIDTYPE_TGID, 0))
			e->flags |= SP_BSF_STOPPED;
		else
			bpf_map_delete_elem(&held, &pid);
	}
	/* A stopped process waits for the loader: wake it now. Else the
	 * notification waits for the next drain like span events. */
	bpf_ringbuf_submit(e, e->flags & SP_BSF_STOPPED ? BPF_RB_FORCE_WAKEUP : wake_flags());
	return 0;
}

/* An executable the loader already found without probes? */
static __always_inline bool image_plain(struct linux_binprm *bprm)
{
	struct sp_bs_imgkey k = {};
	struct inode *ino = bprm->file->f_inode;

	if (!bpf_core_field_exists(ino->i_mtime_sec))
		return false;
	k.ino = ino->i_ino;
	k.dev = ino->i_sb->s_dev;
	k.mtime = ino->i_mtime_sec;
	return bpf_map_lookup_elem(&images, &k) != NULL;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = p->tgid;
	struct sp_bs_proc *t;
	struct sp_bs_event *e;

	t = bpf_map_lookup_elem(&tgids, &pid);
	if (!t)
		return 0;
	/* The probes of the old image are stale from now on. */
	t->gen++;
	t->probed = 0;
	e = notify_reserve(SP_BS_EXEC, pid, 0);
	if (!e)
		return 0;
	e->cookie = t->gen;
	if (image_plain(bprm)) {
		e->flags |= SP_BSF_PLAIN;
	} else if (stop_new && hold(pid)) {
		if (!bpf_send_signal(SP_SIGSTOP))
			e->flags |= SP_BSF_STOPPED;
		else
			bpf_map_delete_elem(&held, &pid);
	}
	/* A stopped process waits for the loader: wake it now. Else the
	 * notification waits for the next drain like span events. */
	bpf_ringbuf_submit(e, e->flags & SP_BSF_STOPPED ? BPF_RB_FORCE_WAKEUP : wake_flags());
	return 0;
}

/*
 * ld.so's _dl_debug_state(), the debuggers' breakpoint: called before and
 * after it changes its list of libraries (start-up, dlopen, dlclose).
 * Attached to each process of the tree (never to others: a breakpoint in
 * ld.so of every process breaks debuggers and valgrind), by a uprobe_multi
 * link (the _multi twin) or a uprobe; the loader looks for new libraries
 * with probes (woken now: the sooner, the fewer marks missed).
 */
static __always_inline int dl_state(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	struct sp_bs_event *e;

	if (!bpf_map_lookup_elem(&tgids, &pid))
		return 0;
	e = notify_reserve(SP_BS_DLOPEN, pid, 0);
	if (!e)
		return 0;
	e->tid = (__u32)id;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("uprobe")
int on_dl_state(struct pt_regs *ctx)
{
	return dl_state();
}

SEC("uprobe")
int on_dl_state_multi(struct pt_regs *ctx)
{
	return dl_state();
}

/* Linux 6.10 and later: before the old image goes (the loader leaves it
 * out on older kernels, where the rest of an exec'ing thread's ring is
 * what sp-record read last). */
SEC("tp_btf/sched_prepare_exec")
int BPF_PROG(on_prepare_exec, struct task_struct *p, struct linux_binprm *bprm)
{
	__u32 pid = p->tgid;

	if (bpf_map_lookup_elem(&tgids, &pid))
		ring_drain(pid, p->pid, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid = p->tgid;
	struct sp_bs_event *e;

	/* a thread's ring even after its leader: it may exit first */
	ring_drain(pid, p->pid, 0);
	if (p->pid != p->tgid || !bpf_map_lookup_elem(&tgids, &pid))
		return 0;
	bpf_map_delete_elem(&tgids, &pid);
	bpf_map_delete_elem(&held, &pid);	/* killed while stopped */
	e = notify_reserve(SP_BS_EXIT, pid, 0);
	if (e) {
		e->line = BPF_CORE_READ(p, exit_code);	/* wait status: a signal's */
		bpf_ringbuf_submit(e, wake_flags());
	}
	return 0;
}
