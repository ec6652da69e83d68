// SPDX-License-Identifier: MIT
/*
 * events.bpf.c - kernel events of the recorded process tree: fork, exec and
 * exit from the scheduler's tracepoints, file, socket and privilege system
 * calls from sys_exit (the setid calls paired per thread with their entry),
 * DNS queries from the payload of outgoing UDP datagrams to port 53,
 * capability checks from cap_capable.
 *
 * Every hook exists three times, one per attach strategy (tp_btf, raw_tp,
 * classic tracepoint); lib/record/bpf_events.c loads one set and records which.
 * All of them read kernel memory with CO-RE probe reads so that they share
 * one body.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <asm/unistd.h>

#include "events.h"

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

#define AT_FDCWD_VAL	-100
#define AF_INET_VAL	2
#define AF_INET6_VAL	10
#define IPPROTO_UDP_VAL	17
#define S_IFMT_VAL	00170000
#define S_IFSOCK_VAL	0140000

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by user space at start(): 1 records every process, not a tree. */
__u32 trace_all = 0;

/* With trace_all, the recorder's own process id (as the kernel's first
 * pid namespace sees it), whose system calls are left out: its reads of
 * /proc and of the files it symbolizes are not the machine's work. Its
 * fork, exec and exit stay (the command it starts is forked by it).
 * 0: none (a recorder in another pid namespace cannot name itself here). */
__u32 self_tgid = 0;

/* Set before load. */
const volatile __u32 want_fork = 0;
const volatile __u32 want_exec = 0;
const volatile __u32 want_exit = 0;
const volatile __u32 want_capable = 0;
const volatile __u32 wake_bytes = 65536;	/* wake the reader at each multiple of
						 * this much data (a power of 2) */

/* Processes (tgids) of the recorded tree: seeded by user space, kept
 * current by fork and exit below. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

/* With cgroup_filter: the cgroup ids (inodes of cgroup v2 directories)
 * whose tasks and their descendants' are recorded (set by user space). */
const volatile __u32 cgroup_filter = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_BPF_CGROUPS);
	__type(key, __u64);
	__type(value, __u8);
} cgroups SEC(".maps");

/* Per system call number: SP_WANT_* (set by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_BPF_NR_MAX);
	__type(key, __u32);
	__type(value, __u32);
} wanted SEC(".maps");

struct sp_bpf_pending {
	__u64 arg[6];
	__u64 nr;
	__u32 old_uid, old_gid;
};

/* System calls in progress whose entry had to be kept (SP_WANT_ENTRY), by
 * thread id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct sp_bpf_pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);	/* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_bpf_lost);
} lost SEC(".maps");

/* The record being built; busy guards against a preempting program on
 * the same CPU (its record is counted as lost). */
struct sp_bpf_scratch {
	struct sp_bpf_ev ev;
	char data[SP_BPF_SCRATCH - sizeof(struct sp_bpf_ev) - 8];	/* per-CPU max is 32 KiB */
	__u32 off;
	__u32 busy;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_bpf_scratch);
} scratch SEC(".maps");

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	struct sp_bpf_lost *l = bpf_map_lookup_elem(&lost, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!l)
		return;
	if (!l->count)
		l->first_ns = now;
	l->count++;
	l->last_ns = now;
}

/* -a --cgroup/--container: the current task's cgroup, or one of its
 * ancestors, is in the "cgroups" map. */
static __always_inline int in_cgroups(void)
{
	__u64 id = bpf_get_current_cgroup_id();
	int level;

	if (bpf_map_lookup_elem(&cgroups, &id))
		return 1;
	for (level = 0; level < SP_BPF_CGROUP_DEPTH; level++) {
		id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			return 0;	/* above the task's own level */
		if (bpf_map_lookup_elem(&cgroups, &id))
			return 1;
	}
	return 0;
}

static __always_inline int in_tree(__u32 tgid)
{
	if (trace_all)
		return !cgroup_filter || in_cgroups();
	return bpf_map_lookup_elem(&tgids, &tgid) != NULL;
}

/* Whether the system calls of the process tgid are recorded. */
static __always_inline int calls_recorded(__u32 tgid)
{
	if (trace_all && self_tgid && tgid == self_tgid)
		return 0;
	return in_tree(tgid);
}

/* id: bpf_get_current_pid_tgid(), when the caller has it already */
static __always_inline struct sp_bpf_scratch *rec_begin_id(__u32 kind, __u64 id)
{
	__u32 zero = 0;
	struct sp_bpf_scratch *s = bpf_map_lookup_elem(&scratch, &zero);

	if (!s)
		return NULL;
	if (s->busy) {
		count_lost();
		return NULL;
	}
	s->busy = 1;
	__builtin_memset(&s->ev, 0, sizeof(s->ev));
	s->ev.kind = kind;
	s->ev.pid = id >> 32;
	s->ev.tid = (__u32)id;
	s->off = 0;
	return s;
}

static __always_inline struct sp_bpf_scratch *rec_begin(__u32 kind)
{
	return rec_begin_id(kind, bpf_get_current_pid_tgid());
}

/* The reader is woken when the data waiting crosses a multiple of
 * wake_bytes, not by every record past it: a wake-up is an interrupt
 * (irq_work) on this CPU, and until the reader has run, every record would
 * ask for one. */
static __always_inline void rec_emit(struct sp_bpf_scratch *s)
{
	__u64 size = (sizeof(s->ev) + s->off) & (SP_BPF_SCRATCH - 1);
	__u64 flags = BPF_RB_NO_WAKEUP;
	__u64 avail, mask = ~((__u64)wake_bytes - 1);

	s->ev.time_ns = bpf_ktime_get_ns();
	avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	if ((avail & mask) != ((avail + size + 8) & mask))
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, s, size, flags))
		count_lost();
	s->busy = 0;
}

static __always_inline void str_end(struct sp_bpf_scratch *s, int slot, __u32 off, long n)
{
	if (slot < 0 || slot >= SP_BPF_NSTR)
		return;
	s->ev.str_len[slot] = n - 1;
	s->off = off + n;
}

/* Returns the string's first byte, '/' when it could not be read. */
static __always_inline char put_user_str(struct sp_bpf_scratch *s, int slot, __u64 p)
{
	__u32 off = s->off & SP_BPF_DATA_MASK;
	long n = -1;
	char c;

	if (p)
		n = bpf_probe_read_user_str(&s->data[off], SP_BPF_PATH_MAX, (void *)p);
	if (n <= 0) {
		s->data[off] = 0;
		n = 1;
		c = '/';
		s->ev.flags |= SP_BPF_FAULT(slot);
	} else {
		c = s->data[off];
		if (n >= SP_BPF_PATH_MAX)
			s->ev.flags |= SP_BPF_TRUNC(slot);
	}
	str_end(s, slot, off, n);
	return c;
}

static __always_inline void put_kernel_str(struct sp_bpf_scratch *s, int slot, const void *p)
{
	__u32 off = s->off & SP_BPF_DATA_MASK;
	long n = bpf_probe_read_kernel_str(&s->data[off], SP_BPF_PATH_MAX, p);

	if (n <= 0) {
		s->data[off] = 0;
		n = 1;
		s->ev.flags |= SP_BPF_FAULT(slot);
	} else if (n >= SP_BPF_PATH_MAX) {
		s->ev.flags |= SP_BPF_TRUNC(slot);
	}
	str_end(s, slot, off, n);
}

/* Raw user bytes (a sockaddr, a DNS payload), at most max. */
static __always_inline void put_user_bytes(struct sp_bpf_scratch *s, int slot, __u64 p,
					   __u64 len, __u64 max)
{
	__u32 off = s->off & SP_BPF_DATA_MASK;

	if (len > max) {
		len = max;
		s->ev.flags |= SP_BPF_TRUNC(slot);
	}
	len &= 1023;
	s->ev.flags |= SP_BPF_BYTES(slot);
	if (!p || bpf_probe_read_user(&s->data[off], len, (void *)p)) {
		len = 0;
		s->ev.flags |= SP_BPF_FAULT(slot);
	}
	s->data[(off + len) & (SP_BPF_SCRATCH - 1)] = 0;
	str_end(s, slot, off, len + 1);
}

/*
 * The path of (mnt, dentry) as dentry names, leaf first, each NUL-terminated
 * (user space reverses them). Crosses mount points; stops at the root of the
 * mount namespace, or cuts the path (truncated flag) after SP_BPF_DIR_DEPTH
 * components or SP_BPF_DIR_MAX bytes.
 *
 * A global function: the verifier checks it once, not once per caller
 * (sys_exit has seven), which was most of its time at start-up. Its
 * kernel pointers come as integers, as global functions take them.
 */
__noinline int put_dentry_path(struct sp_bpf_scratch *s, int slot, __u64 mnt_addr, __u64 d_addr)
{
	struct vfsmount *vfsmnt = (struct vfsmount *)mnt_addr;
	struct dentry *d = (struct dentry *)d_addr;
	volatile __u32 *voff;
	struct mount *mnt;
	__u32 start, off;
	int i;

	/* bounded where the verifier sees it: a global function's argument is
	 * any int */
	slot &= 3;
	barrier_var(slot);
	if (!s || slot >= SP_BPF_NSTR)
		return 0;
	/* the offset lives in the map value, not in a register: the verifier
	 * then sees the same state at each turn of the loop and prunes */
	voff = &s->off;
	start = *voff & SP_BPF_DATA_MASK;
	*voff = start;
	s->ev.flags |= SP_BPF_REVPATH(slot);
	if (!d || !vfsmnt) {
		s->ev.flags |= SP_BPF_FAULT(slot);
		goto end;
	}
	mnt = container_of(vfsmnt, struct mount, mnt);
	for (i = 0; i < SP_BPF_DIR_DEPTH; i++) {
		struct dentry *root = BPF_CORE_READ(vfsmnt, mnt_root);
		struct dentry *parent = BPF_CORE_READ(d, d_parent);
		const unsigned char *name;
		long n;

		if (d == root || d == parent) {
			struct mount *mp = BPF_CORE_READ(mnt, mnt_parent);

			if (d != root || mp == mnt)
				goto end;
			d = BPF_CORE_READ(mnt, mnt_mountpoint);
			mnt = mp;
			vfsmnt = (struct vfsmount *)__builtin_preserve_access_index(&mp->mnt);
			continue;
		}
		off = *voff & SP_BPF_DATA_MASK;
		if (off - start > SP_BPF_DIR_MAX - SP_BPF_NAME_MAX)
			break;
		name = BPF_CORE_READ(d, d_name.name);
		n = bpf_probe_read_kernel_str(&s->data[off], SP_BPF_NAME_MAX, name);
		if (n <= 0) {
			s->ev.flags |= SP_BPF_FAULT(slot);
			goto end;
		}
		*voff = off + n;
		d = parent;
	}
	s->ev.flags |= SP_BPF_TRUNC(slot);
end:
	off = *voff & SP_BPF_DATA_MASK;
	if (off == start) {
		s->data[off] = 0;
		off++;
	}
	str_end(s, slot, start, off - start);
	return 0;
}

static __always_inline struct file *fd_file(__u64 fd)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **fds;
	struct file *f = NULL;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

static __always_inline void put_fd_path(struct sp_bpf_scratch *s, int slot, __u64 fd)
{
	struct file *f = fd_file(fd);

	put_dentry_path(s, slot, f ? (__u64)BPF_CORE_READ(f, f_path.mnt) : 0,
			f ? (__u64)BPF_CORE_READ(f, f_path.dentry) : 0);
}

/* The directory a relative path given with dirfd is looked up from; c is
 * the path's first byte, as put_user_str() returned it ('/': none needed). */
static __always_inline void put_dir_of(struct sp_bpf_scratch *s, int slot, __s64 dirfd, char c)
{
	struct task_struct *t;

	if (c == '/')
		return;
	if ((int)dirfd != AT_FDCWD_VAL) {
		put_fd_path(s, slot, (__u32)dirfd);
		return;
	}
	t = (struct task_struct *)bpf_get_current_task();
	put_dentry_path(s, slot, (__u64)BPF_CORE_READ(t, fs, pwd.mnt),
			(__u64)BPF_CORE_READ(t, fs, pwd.dentry));
}

/* The socket behind fd, or NULL. */
static __always_inline struct sock *fd_sock(__u64 fd)
{
	struct file *f = fd_file(fd);
	struct socket *sock;
	umode_t mode;

	if (!f)
		return NULL;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT_VAL) != S_IFSOCK_VAL)
		return NULL;
	sock = BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(sock, sk);
}

/* The peer of a socket into ev.family/addr/port. */
static __always_inline void put_peer(struct sp_bpf_scratch *s, struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	s->ev.family = family;
	s->ev.port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET_VAL)
		BPF_CORE_READ_INTO(&s->ev.addr, sk, __sk_common.skc_daddr);
	else if (family == AF_INET6_VAL)
		BPF_CORE_READ_INTO(&s->ev.addr, sk, __sk_common.skc_v6_daddr);
}

/* Makes a kernel pointer held as an integer a BTF pointer: the verifier
 * turns the call into a move, and loads through the result into faulting
 * loads, cheaper than a probe-read helper call each. Weak: without it
 * (before Linux 6.2) only the tp_btf programs fail to load. */
extern void *bpf_rdonly_cast(void *obj, __u32 btf_id) __ksym __weak;

/* put_peer(fd_sock(fd)) for tp_btf, where the task is a BTF pointer: the
 * same reads as plain loads but for the fd array's slot (a pointer to
 * pointers, which BTF loads cannot index). */
static __always_inline void put_fd_peer_btf(struct sp_bpf_scratch *s, __u64 fd)
{
	struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
	struct file *f = NULL;
	struct socket *sock;
	struct sock *sk;
	__u16 family;

	if (!fdt || fd >= fdt->max_fds)
		return;
	bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]);
	if (!f)
		return;
	f = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
	if ((f->f_inode->i_mode & S_IFMT_VAL) != S_IFSOCK_VAL)
		return;
	sock = bpf_rdonly_cast(f->private_data, bpf_core_type_id_kernel(struct socket));
	sk = sock->sk;
	if (!sk)
		return;
	family = sk->__sk_common.skc_family;
	s->ev.family = family;
	s->ev.port = bpf_ntohs(sk->__sk_common.skc_dport);
	if (family == AF_INET_VAL)
		__builtin_memcpy(s->ev.addr, &sk->__sk_common.skc_daddr, 4);
	else if (family == AF_INET6_VAL)
		__builtin_memcpy(s->ev.addr, &sk->__sk_common.skc_v6_daddr, 16);
}

static __always_inline void cred_ids(__u32 *uid, __u32 *gid)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	*uid = BPF_CORE_READ(t, cred, euid.val);
	*gid = BPF_CORE_READ(t, cred, egid.val);
}

/* ---- process events ---- */

static __always_inline void do_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u32 ctid = BPF_CORE_READ(child, pid);
	struct sp_bpf_scratch *s;
	__u8 one = 1;

	if (!in_tree(ptgid))
		return;
	if (ctgid != ptgid && !trace_all)
		bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
	if (!want_fork)
		return;
	s = rec_begin(SP_BPF_FORK);
	if (!s)
		return;
	s->ev.arg[0] = ctgid;
	s->ev.arg[1] = ctid;
	s->ev.arg[2] = ctgid == ptgid;
	rec_emit(s);
}

/* Who the exec'ing task is, read now: a short-lived process is gone when
 * user space would read /proc (docs/containers.md). arg[1] its pid in its
 * own pid namespace, arg[2] that namespace's inode, arg[3] its mount
 * namespace's, arg[4] its cgroup v2 id, arg[5] its start (ns since boot,
 * CLOCK_BOOTTIME). */
static __always_inline void put_identity(struct sp_bpf_scratch *s, struct task_struct *t)
{
	struct pid *tp = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(tp, level);
	struct upid up = { 0 };

	if (level < 32 && !bpf_probe_read_kernel(&up, sizeof(up), &tp->numbers[level])) {
		s->ev.arg[1] = up.nr;
		s->ev.arg[2] = BPF_CORE_READ(up.ns, ns.inum);
	}
	s->ev.arg[3] = BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum);
	s->ev.arg[4] = bpf_get_current_cgroup_id();
	s->ev.arg[5] = BPF_CORE_READ(t, start_boottime);
}

static __always_inline void do_exec(const void *filename, int kernel_str, __u32 old_pid)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct sp_bpf_scratch *s;
	__u64 start, end, len;
	__u32 off;

	if (!want_exec || !in_tree(bpf_get_current_pid_tgid() >> 32))
		return;
	s = rec_begin(SP_BPF_EXEC);
	if (!s)
		return;
	s->ev.arg[0] = old_pid;
	put_identity(s, t);
	put_kernel_str(s, 0, filename);
	start = BPF_CORE_READ(t, mm, arg_start);
	end = BPF_CORE_READ(t, mm, arg_end);
	len = end > start ? end - start : 0;
	if (len > SP_BPF_ARGV_MAX) {
		len = SP_BPF_ARGV_MAX;
		s->ev.flags |= SP_BPF_TRUNC(1);
	}
	len &= 8191;
	off = s->off & SP_BPF_DATA_MASK;
	s->ev.flags |= SP_BPF_BYTES(1);
	if (bpf_probe_read_user(&s->data[off], len, (void *)start)) {
		len = 0;
		s->ev.flags |= SP_BPF_FAULT(1);
	}
	s->data[(off + len) & (SP_BPF_SCRATCH - 1)] = 0;
	str_end(s, 1, off, len + 1);
	rec_emit(s);
}

static __always_inline void do_exit(struct task_struct *t)
{
	__u32 tgid = BPF_CORE_READ(t, tgid);
	__u32 tid = BPF_CORE_READ(t, pid);
	int live = BPF_CORE_READ(t, signal, live.counter);
	struct sp_bpf_scratch *s;

	if (!in_tree(tgid))
		return;
	bpf_map_delete_elem(&pending, &tid);
	if (want_exit) {
		s = rec_begin(SP_BPF_EXIT);
		if (s) {
			s->ev.arg[0] = BPF_CORE_READ(t, exit_code);
			s->ev.arg[1] = live > 0;
			rec_emit(s);
		}
	}
	if (live <= 0 && !trace_all)
		bpf_map_delete_elem(&tgids, &tgid);
}

static __always_inline void do_capable(int cap, int ret)
{
	struct sp_bpf_scratch *s;

	if (!want_capable || !calls_recorded(bpf_get_current_pid_tgid() >> 32))
		return;
	s = rec_begin(SP_BPF_CAPABLE);
	if (!s)
		return;
	s->ev.arg[0] = cap;
	s->ev.result = ret;
	rec_emit(s);
}

/* ---- DNS: outgoing UDP datagrams to port 53 ---- */

/* One datagram of fd: buf/len its payload, addr/alen its destination (0 if
 * the socket is connected). Global, as dns_msghdr(): verified once, not at
 * each of their call sites. */
__noinline int dns_send(__u64 fd, __u64 buf, __u64 len, __u64 addr, __u64 alen)
{
	struct sp_bpf_scratch *s;
	struct sock *sk;
	__u16 sa[2] = {};
	__u16 family, port;

	if (addr) {
		if (bpf_probe_read_user(sa, sizeof(sa), (void *)addr))
			return 0;
		if ((sa[0] != AF_INET_VAL && sa[0] != AF_INET6_VAL) || bpf_ntohs(sa[1]) != 53)
			return 0;
	}
	sk = fd_sock(fd);
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_UDP_VAL)
		return 0;
	if (!addr) {
		family = BPF_CORE_READ(sk, __sk_common.skc_family);
		port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
		if ((family != AF_INET_VAL && family != AF_INET6_VAL) || port != 53)
			return 0;
	}
	s = rec_begin(SP_BPF_DNS);
	if (!s)
		return 0;
	s->ev.arg[0] = fd;
	put_user_bytes(s, 0, buf, len, SP_BPF_DNS_MAX);
	if (addr)
		put_user_bytes(s, 1, addr, alen, SP_BPF_SOCKADDR_MAX);
	else
		put_peer(s, sk);
	rec_emit(s);
	return 0;
}

__noinline int dns_msghdr(__u64 fd, __u64 umsg)
{
	struct user_msghdr mh = {};
	struct iovec iov = {};

	if (bpf_probe_read_user(&mh, sizeof(mh), (void *)umsg) || !mh.msg_iovlen)
		return 0;
	if (bpf_probe_read_user(&iov, sizeof(iov), mh.msg_iov))
		return 0;
	return dns_send(fd, (__u64)iov.iov_base, iov.iov_len, (__u64)mh.msg_name, mh.msg_namelen);
}

static __always_inline void do_dns(__u64 nr, const __u64 *a)
{
	int i;

	switch (nr) {
	case __NR_sendto:
		dns_send(a[0], a[1], a[2], a[4], a[5]);
		break;
	case __NR_sendmsg:
		dns_msghdr(a[0], a[1]);
		break;
	case __NR_sendmmsg:
		for (i = 0; i < SP_BPF_DNS_MSGS && i < a[2]; i++)
			dns_msghdr(a[0], a[1] + i * sizeof(struct mmsghdr));
		break;
	}
}

/* ---- system calls ---- */

static __always_inline __u32 want_nr(__u64 nr)
{
	__u32 key = nr;
	__u32 *w;

	if (nr >= SP_BPF_NR_MAX)
		return 0;
	w = bpf_map_lookup_elem(&wanted, &key);
	return w ? *w : 0;
}

static __always_inline void sys_enter(__u64 nr, const __u64 *a, __u32 w)
{
	struct sp_bpf_pending p = {};
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	int i;

	if (w & SP_WANT_DNS)
		do_dns(nr, a);
	if (!(w & SP_WANT_ENTRY))
		return;
	for (i = 0; i < 6; i++)
		p.arg[i] = a[i];
	p.nr = nr;
	switch (nr) {
	case __NR_setuid: case __NR_setgid: case __NR_setreuid: case __NR_setregid:
	case __NR_setresuid: case __NR_setresgid: case __NR_setfsuid: case __NR_setfsgid:
		cred_ids(&p.old_uid, &p.old_gid);
		break;
	}
	if (bpf_map_update_elem(&pending, &tid, &p, BPF_ANY))
		count_lost();
}

/* regs: the arguments, still in the task's saved registers at exit (NULL:
 * from pending, with w & SP_WANT_ENTRY); id: bpf_get_current_pid_tgid();
 * direct: tp_btf, whose kernel pointers can be read with plain loads. */
static __always_inline void sys_exit(__u64 nr, __s64 ret, const __u64 *regs, __u32 w, __u64 id,
				     const int direct)
{
	__u32 tid = (__u32)id;
	struct sp_bpf_pending *p = NULL;
	struct sp_bpf_scratch *s;
	struct sock *sk;
	__u64 a[6];
	int i;

	if (w & SP_WANT_ENTRY) {
		p = bpf_map_lookup_elem(&pending, &tid);
		if (!p)
			return;
		if (p->nr != nr) {
			bpf_map_delete_elem(&pending, &tid);
			return;
		}
	}
	if (!regs && !p)
		return;
	for (i = 0; i < 6; i++)
		a[i] = regs ? regs[i] : p ? p->arg[i] : 0;
	s = rec_begin_id(SP_BPF_SYSCALL, id);
	if (!s) {
		if (p)
			bpf_map_delete_elem(&pending, &tid);
		return;
	}
	s->ev.nr = nr;
	s->ev.result = ret;
	for (i = 0; i < 6; i++)
		s->ev.arg[i] = a[i];

	switch (nr) {
	case __NR_open:
	case __NR_creat:
		put_dir_of(s, 1, AT_FDCWD_VAL, put_user_str(s, 0, a[0]));
		break;
	case __NR_openat:
		put_dir_of(s, 1, a[0], put_user_str(s, 0, a[1]));
		break;
	case __NR_openat2: {
		struct open_how how = {};

		put_dir_of(s, 1, a[0], put_user_str(s, 0, a[1]));
		bpf_probe_read_user(&how, sizeof(how), (void *)a[2]);
		s->ev.arg[2] = how.flags;
		s->ev.arg[3] = how.mode;
		break;
	}
	case __NR_getdents:
	case __NR_getdents64:
	case __NR_fchmod:
	case __NR_fchown:
		put_fd_path(s, 0, a[0]);
		break;
	/* two paths, one directory (string 2): the old path's when it is
	 * relative, else the new one's (user space joins them) */
	case __NR_rename:
	case __NR_link: {
		char c0 = put_user_str(s, 0, a[0]), c1 = put_user_str(s, 1, a[1]);

		put_dir_of(s, 2, AT_FDCWD_VAL, c0 != '/' ? c0 : c1);
		break;
	}
	case __NR_symlink:
		put_user_str(s, 0, a[0]);
		put_dir_of(s, 2, AT_FDCWD_VAL, put_user_str(s, 1, a[1]));
		break;
	case __NR_renameat:
	case __NR_renameat2:
	case __NR_linkat: {
		char c0 = put_user_str(s, 0, a[1]), c1 = put_user_str(s, 1, a[3]);

		if (c0 != '/')
			put_dir_of(s, 2, a[0], c0);
		else
			put_dir_of(s, 2, a[2], c1);
		break;
	}
	case __NR_symlinkat:
		put_user_str(s, 0, a[0]);
		put_dir_of(s, 2, a[1], put_user_str(s, 1, a[2]));
		break;
	case __NR_chmod:
	case __NR_chown:
	case __NR_lchown:
	case __NR_unlink:
	case __NR_rmdir:
		put_dir_of(s, 1, AT_FDCWD_VAL, put_user_str(s, 0, a[0]));
		break;
	case __NR_fchmodat:
	case __NR_fchmodat2:
	case __NR_fchownat:
	case __NR_unlinkat:
		put_dir_of(s, 1, a[0], put_user_str(s, 0, a[1]));
		break;
	case __NR_connect:
	case __NR_bind:
		put_user_bytes(s, 0, a[1], a[2], SP_BPF_SOCKADDR_MAX);
		break;
	case __NR_accept:
	case __NR_accept4:
		if (ret >= 0 && direct) {
			put_fd_peer_btf(s, ret);
		} else if (ret >= 0) {
			sk = fd_sock(ret);
			if (sk)
				put_peer(s, sk);
		}
		break;
	case __NR_mount:
		put_user_str(s, 0, a[0]);
		put_user_str(s, 1, a[1]);
		put_user_str(s, 2, a[2]);
		break;
	case __NR_setuid: case __NR_setgid: case __NR_setreuid: case __NR_setregid:
	case __NR_setresuid: case __NR_setresgid: case __NR_setfsuid: case __NR_setfsgid: {
		__u32 uid, gid;

		cred_ids(&uid, &gid);
		s->ev.arg[0] = p ? p->old_uid : uid;
		s->ev.arg[1] = uid;
		s->ev.arg[2] = p ? p->old_gid : gid;
		s->ev.arg[3] = gid;
		break;
	}
	}
	if (p)
		bpf_map_delete_elem(&pending, &tid);
	rec_emit(s);
}

static __always_inline void regs_args(struct pt_regs *regs, __u64 *a)
{
	a[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
	a[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
	a[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
	a[3] = PT_REGS_PARM4_CORE_SYSCALL(regs);
	a[4] = PT_REGS_PARM5_CORE_SYSCALL(regs);
#ifdef PT_REGS_PARM6_CORE_SYSCALL
	a[5] = PT_REGS_PARM6_CORE_SYSCALL(regs);
#else
	a[5] = BPF_CORE_READ(regs, r9);	/* x86-64: libbpf < 1.2 lacks PARM6 */
#endif
}

/* direct: regs is a BTF pointer (tp_btf), read it with plain loads rather
 * than probe-read helper calls. */
static __always_inline void read_args(struct pt_regs *regs, __u64 *a, const int direct)
{
#ifdef __TARGET_ARCH_x86
	if (direct) {
		a[0] = regs->di;
		a[1] = regs->si;
		a[2] = regs->dx;
		a[3] = regs->r10;
		a[4] = regs->r8;
		a[5] = regs->r9;
		return;
	}
#endif
	regs_args(regs, a);
}

/* Most wanted system calls need nothing at entry: their arguments are
 * read from the registers at exit, DNS payloads too. This program is only
 * attached when per-call tracepoints for the setid calls are not to be had
 * (on_setid_tp). */
static __always_inline int enter_regs(struct pt_regs *regs, long id, const int direct)
{
	__u32 w = want_nr(id);
	__u64 a[6];

	if (!(w & SP_WANT_ENTRY) || !calls_recorded(bpf_get_current_pid_tgid() >> 32))
		return 0;
	read_args(regs, a, direct);
	sys_enter(id, a, w & ~SP_WANT_DNS);
	return 0;
}

/* The registers a system call saw are still there at its exit: no system
 * call recorded here changes its caller's argument registers, and signal
 * delivery and ptrace's syscall-exit stop come after this tracepoint. */
static __always_inline int exit_call(struct pt_regs *regs, long id, long ret, const int direct)
{
	__u32 w = want_nr(id);
	__u64 a[6], pid_tgid;

	if (!(w & (SP_WANT_PAIR | SP_WANT_DNS)))
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if (!calls_recorded(pid_tgid >> 32))
		return 0;
	read_args(regs, a, direct);
	/* the payload is still in the caller's memory: sending does not
	 * change it */
	if (w & SP_WANT_DNS) {
		do_dns(id, a);
		return 0;
	}
	sys_exit(id, ret, a, w, pid_tgid, direct);
	return 0;
}

static __always_inline int exit_regs(struct pt_regs *regs, long ret, const int direct)
{
#ifdef __TARGET_ARCH_x86
	long id = direct ? regs->orig_ax : BPF_CORE_READ(regs, orig_ax);
#else
	long id = BPF_CORE_READ(regs, orig_ax);
#endif

	return exit_call(regs, id, ret, direct);
}

/*
 * The ids before a setid call, for tp_btf and raw_tp: attached by user
 * space to the classic per-call tracepoints syscalls:sys_enter_setuid and
 * the like, one program for all eight. The kernel runs it only for those
 * calls (a bit per call number, tested before anything else), where a raw
 * sys_enter program would run for every system call of the machine.
 */
SEC("tracepoint")
int on_setid_tp(struct syscall_trace_enter *ctx)
{
	struct sp_bpf_pending p = {};
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;

	if (!calls_recorded(id >> 32))
		return 0;
	p.nr = ctx->nr;
	cred_ids(&p.old_uid, &p.old_gid);
	if (bpf_map_update_elem(&pending, &tid, &p, BPF_ANY))
		count_lost();
	return 0;
}

/*
 * exit_regs() for tp_btf and raw_tp, attached by user space to the classic
 * per-call tracepoints syscalls:sys_exit_openat and the like, one link per
 * wanted call: the kernel tests a bit per call number before it runs a
 * program there, so the machine's other system calls run none, where the
 * raw sys_exit program runs for each. The arguments are the task's saved
 * registers, as exit_regs() reads them.
 */
SEC("tracepoint")
int on_sys_exit_call(struct syscall_trace_exit *ctx)
{
	return exit_call((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()),
			 ctx->nr, ctx->ret, 0);
}

/* ---- strategy 1: tp_btf ---- */

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter_btf, struct pt_regs *regs, long id)
{
	return enter_regs(regs, id, 1);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit_btf, struct pt_regs *regs, long ret)
{
	return exit_regs(regs, ret, 1);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	do_fork(parent, child);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	do_exec(BPF_CORE_READ(bprm, filename), 1, old_pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit_btf, struct task_struct *p)
{
	do_exit(p);
	return 0;
}

SEC("tp_btf/cap_capable")
int BPF_PROG(on_capable_btf, const struct cred *cred, struct user_namespace *target_ns,
	     const struct user_namespace *capable_ns, int cap, int ret)
{
	do_capable(cap, ret);
	return 0;
}

/* ---- strategy 2: raw_tp ---- */

SEC("raw_tp/sys_enter")
int BPF_PROG(on_sys_enter_raw, struct pt_regs *regs, long id)
{
	return enter_regs(regs, id, 0);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(on_sys_exit_raw, struct pt_regs *regs, long ret)
{
	return exit_regs(regs, ret, 0);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	do_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec_raw, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	do_exec(BPF_CORE_READ(bprm, filename), 1, old_pid);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_exit_raw, struct task_struct *p)
{
	do_exit(p);
	return 0;
}

SEC("raw_tp/cap_capable")
int BPF_PROG(on_capable_raw, const struct cred *cred, struct user_namespace *target_ns,
	     const struct user_namespace *capable_ns, int cap, int ret)
{
	do_capable(cap, ret);
	return 0;
}

/* ---- strategy 3: classic tracepoints (need tracefs) ---- */

SEC("tracepoint/raw_syscalls/sys_enter")
int on_sys_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	__u64 a[6];
	long id = ctx->id;
	__u32 w = want_nr(id);

	if (!(w & (SP_WANT_DNS | SP_WANT_ENTRY)) || !calls_recorded(bpf_get_current_pid_tgid() >> 32))
		return 0;
	a[0] = ctx->args[0];	/* ctx only takes constant offsets */
	a[1] = ctx->args[1];
	a[2] = ctx->args[2];
	a[3] = ctx->args[3];
	a[4] = ctx->args[4];
	a[5] = ctx->args[5];
	sys_enter(id, a, w);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int on_sys_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	long id = ctx->id;
	__u32 w = want_nr(id);
	__u64 pid_tgid;

	if (!(w & SP_WANT_PAIR))
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if (!calls_recorded(pid_tgid >> 32))
		return 0;
	sys_exit(id, ctx->ret, NULL, w, pid_tgid, 0);
	return 0;
}

/* The record only has pids: the parent is the current task; a thread's
 * tid lands in the tgid map too (harmless), and the thread flag is unknown. */
SEC("tracepoint/sched/sched_process_fork")
int on_fork_tp(struct trace_event_raw_sched_process_fork *ctx)
{
	__u32 ptgid = bpf_get_current_pid_tgid() >> 32;
	__u32 child = ctx->child_pid;
	struct sp_bpf_scratch *s;
	__u8 one = 1;

	if (!in_tree(ptgid))
		return 0;
	if (!trace_all)
		bpf_map_update_elem(&tgids, &child, &one, BPF_NOEXIST);
	if (!want_fork)
		return 0;
	s = rec_begin(SP_BPF_FORK);
	if (!s)
		return 0;
	s->ev.arg[0] = child;
	s->ev.arg[1] = child;
	s->ev.arg[2] = 2;	/* unknown */
	rec_emit(s);
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int on_exec_tp(struct trace_event_raw_sched_process_exec *ctx)
{
	unsigned int loc = ctx->__data_loc_filename;

	do_exec((void *)ctx + (loc & 0xffff), 1, ctx->old_pid);
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int on_exit_tp(void *ctx)
{
	do_exit((struct task_struct *)bpf_get_current_task());
	return 0;
}
