/* SPDX-License-Identifier: MIT */
/*
 * cgnew.h - what bpf/cgnew.bpf.c tells lib/record/bpf_cgnew.c of each
 * cgroup v2 directory made while recording (-a --cgroup/--container,
 * docs/containers.md): its id, so that a container started later is
 * followed from its cgroup's making, before its first program runs; and
 * each process moved into a cgroup (runtimes move their first processes
 * in rather than fork them there), so that one moved into a followed
 * cgroup is read from /proc while it lives; and each one removed, so
 * that a stopped container's events are closed.
 */
#ifndef SP_BPF_CGNEW_SHARED_H
#define SP_BPF_CGNEW_SHARED_H

#define SP_BPF_CGNEW_RING	(64 * 1024)	/* bytes: 4096 mkdirs between two reads */

struct sp_bpf_cgnew {
	__u64 id;	/* the cgroup id: the directory's inode, what
			 * bpf_get_current_cgroup_id() gives its tasks */
	__u32 level;	/* its depth below the root */
	__u32 pid;	/* 0: the cgroup was made; else the process (host tgid)
			 * moved into it, */
	__u32 ppid;	/* its parent, */
	__u32 gone;	/* 1: the cgroup was removed (pid 0) */
	char comm[16];	/* and its name: it may be gone when this is read */
};

#endif
