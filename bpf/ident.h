/* SPDX-License-Identifier: MIT */
/*
 * ident.h - what bpf/ident.bpf.c keeps for lib/record/bpf_ident.c: who a
 * process is (docs/containers.md), read from its task when it is forked
 * and again when it execs, so that a process gone before its record is
 * written still has an identity, with its parent and file-system user (so
 * that an exec or an end costs sp-record no read of /proc/PID/status); and
 * the tid of each thread made, in its own pid namespace.
 */
#ifndef SP_BPF_IDENT_SHARED_H
#define SP_BPF_IDENT_SHARED_H

#define SP_BPF_IDENTS	32768	/* processes remembered (LRU), key: host tgid */
#define SP_BPF_THREADS	32768	/* threads remembered (LRU), key: host tid */

struct sp_bpf_ident {
	__u64 start_boot_ns;	/* task->start_boottime, CLOCK_BOOTTIME ns */
	__u64 cgroup_id;	/* cgroup v2 id (kernfs node id) */
	__u32 nspid;		/* pid in its own (innermost) pid namespace */
	__u32 pid_ns, mnt_ns, net_ns, cgroup_ns;	/* namespace inode numbers */
	__u32 from_exec;	/* 1: read at exec, 0: at fork */
	__u32 ppid;		/* its parent (real_parent's tgid), host pid */
	__u32 fsuid;		/* its file-system user (host uid): at fork, at exec,
				 * and once more when its first thread ends (a
				 * daemon drops root after its exec) */
	__u32 pad;
	char comm[16];		/* its name at fork (its parent's) or exec: a
				 * process gone unseen is named by it */
};

/* A thread made by clone(CLONE_THREAD), read from the new task. */
struct sp_bpf_thread {
	__u64 start_boot_ns;	/* task->start_boottime, CLOCK_BOOTTIME ns */
	__u32 tgid;		/* its process, host pid */
	__u32 nstid;		/* tid in its own (innermost) pid namespace */
};

#endif
