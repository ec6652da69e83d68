// SPDX-License-Identifier: MIT
/*
 * ident.bpf.c - the identity of every new process, read from its task in
 * the kernel: at fork (the child's own pid namespace, namespaces and
 * cgroup, as clone() set them up) and again at exec (a runtime moves its
 * process into the container's cgroup and namespaces before it execs); its
 * cgroup again when it is moved into another.
 * A thread's fork (clone with CLONE_THREAD) leaves its tid in its own pid
 * namespace, read from the new task itself. Its file-system user is read
 * once more when its first thread ends: the user whose JIT perf map
 * sp-record then trusts. User space looks a pid (a tid)
 * up when it writes the process's (the thread's) record, after it may be
 * gone (lib/record/bpf_ident.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "ident.h"
#include "nspid.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SP_BPF_IDENTS);
	__type(key, __u32);
	__type(value, struct sp_bpf_ident);
} idents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SP_BPF_THREADS);
	__type(key, __u32);
	__type(value, struct sp_bpf_thread);
} threads SEC(".maps");

/* A new thread t of process tgid: its tid as it knows it. */
static __always_inline void put_thread(struct task_struct *t, __u32 tgid)
{
	struct sp_bpf_thread v = { 0 };
	__u32 tid = BPF_CORE_READ(t, pid);

	if (sp_task_nspid(t, &v.nstid, NULL))
		return;
	v.tgid = tgid;
	v.start_boot_ns = BPF_CORE_READ(t, start_boottime);
	bpf_map_update_elem(&threads, &tid, &v, BPF_ANY);
}

static __always_inline void put(struct task_struct *t, __u32 from_exec)
{
	struct sp_bpf_ident v = { 0 };
	__u32 tgid = BPF_CORE_READ(t, tgid);

	if (tgid != BPF_CORE_READ(t, pid)) {	/* a thread: its process has one */
		if (!from_exec)
			put_thread(t, tgid);
		return;
	}
	sp_task_nspid(t, &v.nspid, &v.pid_ns);
	v.mnt_ns = BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum);
	v.net_ns = BPF_CORE_READ(t, nsproxy, net_ns, ns.inum);
	v.cgroup_ns = BPF_CORE_READ(t, nsproxy, cgroup_ns, ns.inum);
	v.cgroup_id = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
	v.start_boot_ns = BPF_CORE_READ(t, start_boottime);
	v.ppid = BPF_CORE_READ(t, real_parent, tgid);
	v.fsuid = BPF_CORE_READ(t, cred, fsuid.val);
	v.from_exec = from_exec;
	BPF_CORE_READ_STR_INTO(&v.comm, t, comm);
	bpf_map_update_elem(&idents, &tgid, &v, BPF_ANY);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(ident_fork, struct task_struct *parent, struct task_struct *child)
{
	put(child, 0);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(ident_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	put(p, 1);
	return 0;
}

/* Its user as it ends (a process that dropped root since its exec): only
 * the process's own entry, not a newer one with its pid. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(ident_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct sp_bpf_ident *v;

	if (tgid != BPF_CORE_READ(p, pid))
		return 0;
	v = bpf_map_lookup_elem(&idents, &tgid);
	if (v && v->start_boot_ns == BPF_CORE_READ(p, start_boottime))
		v->fsuid = BPF_CORE_READ(p, cred, fsuid.val);
	return 0;
}

/* A process moved into another cgroup (a runtime moves its helpers and a
 * `podman exec`'s process in rather than fork them there): its entry
 * follows, so a record written before its next exec has the cgroup it is
 * in. Only its own entry, and only the default (v2) hierarchy's ids. */
SEC("raw_tp/cgroup_attach_task")
int BPF_PROG(ident_attach, struct cgroup *dst, const char *path, struct task_struct *t,
	     bool threadgroup)
{
	__u32 tgid = BPF_CORE_READ(t, tgid);
	struct sp_bpf_ident *v;

	if (tgid != BPF_CORE_READ(t, pid) || BPF_CORE_READ(dst, root, hierarchy_id) != 0)
		return 0;
	v = bpf_map_lookup_elem(&idents, &tgid);
	if (v && v->start_boot_ns == BPF_CORE_READ(t, start_boottime))
		v->cgroup_id = BPF_CORE_READ(dst, kn, id);
	return 0;
}
