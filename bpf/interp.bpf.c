// SPDX-License-Identifier: MIT
/*
 * interp.bpf.c - the interpreted stack of the thread each perf sample
 * interrupts, read where it lies in the target's memory at that moment:
 * the program runs on the sampling events sp-record opens (it returns 1,
 * so perf's own sample still goes out) and, for a process user space
 * registered in "procs", finds the thread's state and walks its frames.
 *
 * Nothing is trusted: every read is a probe read that may fail, every loop
 * has a fixed bound, and a stack deeper than SP_BPF_IFRAMES is marked
 * truncated. The thread found for a tid is cached in "tstates" and checked
 * again on each use (its native thread id must still be the tid).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "interp.h"

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

struct scratch {
	struct sp_bpf_istack h;
	struct sp_bpf_iframe f[SP_BPF_IFRAMES];
	__u8 fr[SP_BPF_IFRAME_BLOCK];	/* a frame's fields, from fr_code on */
	__u8 co[SP_BPF_ICODE_BLOCK];	/* a code object's, from co_firstline on */
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

static __always_inline __u64 rd_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* The thread state of tid, 0 if none was found. */
static __always_inline __u64 find_tstate(const struct sp_bpf_ilayout *l, __u64 runtime,
					 __u32 tid)
{
	__u64 *cached = bpf_map_lookup_elem(&tstates, &tid);
	__u64 interp, ts;
	unsigned int i;

	if (cached && *cached && rd_ptr(*cached + l->ts_native_tid) == tid)
		return *cached;
	interp = rd_ptr(runtime + l->rt_interp_head);
	if (!interp)
		return 0;
	ts = rd_ptr(interp + l->is_tstate_head);
	for (i = 0; i < SP_BPF_ITHREADS && ts; i++) {
		if (rd_ptr(ts + l->ts_native_tid) == tid) {
			bpf_map_update_elem(&tstates, &tid, &ts, BPF_ANY);
			return ts;
		}
		ts = rd_ptr(ts + l->ts_next);
	}
	return 0;
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

static __always_inline int walk(struct scratch *s, const struct sp_bpf_ilayout *l, __u64 ts)
{
	__u64 frame, code, instr, cf;
	__u32 first;
	__u8 entry;
	unsigned int i, n = 0;

	cf = rd_ptr(ts + l->ts_cframe);
	if (!cf)
		return SP_BPF_IST_FAULT;
	frame = rd_ptr(cf + l->cf_current);
	for (i = 0; i < SP_BPF_IFRAMES; i++) {
		struct sp_bpf_iframe *f = &s->f[i & (SP_BPF_IFRAMES - 1)];

		if (!frame)
			break;
		/* one read per structure: the fields are close together */
		if (bpf_probe_read_user(s->fr, sizeof(s->fr), (const void *)(frame + l->fr_code)))
			return s->h.nframes = n, SP_BPF_IST_FAULT;
		code = get64(s->fr, 0, sizeof(s->fr));
		instr = get64(s->fr, (l->fr_instr - l->fr_code) & 63, sizeof(s->fr));
		entry = (__u8)get64(s->fr, (l->fr_entry - l->fr_code) & 63, sizeof(s->fr));
		if (!code || bpf_probe_read_user(s->co, sizeof(s->co),
						 (const void *)(code + l->co_firstline)))
			return s->h.nframes = n, SP_BPF_IST_FAULT;
		first = (__u32)get64(s->co, 0, sizeof(s->co));
		f->code = code;
		f->firstline = first;
		f->name = (__u32)get64(s->co, (l->co_name - l->co_firstline) & 63, sizeof(s->co));
		f->flags = entry ? SP_BPF_IFR_ENTRY : 0;
		if (instr >= code + l->co_code && instr - (code + l->co_code) < (1ull << 31))
			f->instr = (__s32)((instr - (code + l->co_code)) / 2);
		else
			f->instr = -1;
		n++;
		frame = get64(s->fr, (l->fr_previous - l->fr_code) & 63, sizeof(s->fr));
	}
	s->h.nframes = n;
	if (frame)
		s->h.flags |= SP_BPF_IFL_TRUNCATED;
	return SP_BPF_IST_OK;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid, zero = 0;
	const struct sp_bpf_ilayout *l;
	struct sp_bpf_iproc *pr;
	struct scratch *s;
	__u64 ts, size, *lp;

	pr = bpf_map_lookup_elem(&procs, &pid);
	if (!pr)
		return 1;
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	s->h.time_ns = bpf_ktime_get_ns();
	s->h.pid = pid;
	s->h.tid = tid;
	s->h.cpu = bpf_get_smp_processor_id();
	s->h.nframes = 0;
	s->h.flags = 0;
	s->h.tstate = 0;
	l = bpf_map_lookup_elem(&layouts, &pr->layout);
	if (!l || !l->valid) {
		s->h.status = SP_BPF_IST_NO_LAYOUT;
	} else if (!(ts = find_tstate(l, pr->runtime, tid))) {
		s->h.status = SP_BPF_IST_NO_THREAD;
	} else {
		s->h.tstate = ts;
		s->h.status = walk(s, l, ts);
	}
	size = sizeof(s->h) + (__u64)(s->h.nframes & (2 * SP_BPF_IFRAMES - 1)) *
	       sizeof(struct sp_bpf_iframe);
	if (size > sizeof(*s))
		size = sizeof(*s);
	if (bpf_ringbuf_output(&stacks, s, size, 0)) {
		lp = bpf_map_lookup_elem(&lost, &zero);
		if (lp)
			*lp += 1;
	}
	return 1;
}
