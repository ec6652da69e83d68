// SPDX-License-Identifier: MIT
/*
 * cgnew.bpf.c - each cgroup v2 directory as it is made (the cgroup_mkdir
 * tracepoint, which fires once the directory exists and before any task
 * is in it), for -a --cgroup/--container: a runtime makes its container's
 * cgroup before it moves the container's first process in, so user space
 * learns of it before that process runs (lib/record/bpf_cgnew.c); and each
 * process moved into a cgroup (cgroup_attach_task); and each one removed
 * (cgroup_rmdir), so that a stopped container's events are closed. The v1
 * hierarchies of a hybrid host are left out: their ids are another tree's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cgnew.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SP_BPF_CGNEW_RING);
} cgnew SEC(".maps");

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(cg_mkdir, struct cgroup *cgrp, const char *path)
{
	struct sp_bpf_cgnew *e;

	if (cgrp->root->hierarchy_id != 0)	/* 0: the default (v2) hierarchy */
		return 0;
	e = bpf_ringbuf_reserve(&cgnew, sizeof(*e), 0);
	if (!e)
		return 0;	/* full: user space reads the tree again (lost) */
	e->id = cgrp->kn->id;
	e->level = cgrp->level;
	e->pid = e->ppid = e->gone = 0;
	e->comm[0] = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* A directory removed (its last task gone: a container stopped): user
 * space closes its events, so a recording that sees many containers come
 * and go holds no more descriptors than those running. */
SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(cg_rmdir, struct cgroup *cgrp, const char *path)
{
	struct sp_bpf_cgnew *e;

	if (cgrp->root->hierarchy_id != 0)
		return 0;
	e = bpf_ringbuf_reserve(&cgnew, sizeof(*e), 0);
	if (!e)
		return 0;	/* full: its events stay open until the end */
	e->id = cgrp->kn->id;
	e->level = cgrp->level;
	e->pid = e->ppid = 0;
	e->gone = 1;
	e->comm[0] = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* A task moved into a cgroup by a write to cgroup.procs or cgroup.threads:
 * perf's cgroup events then see its samples, but not its fork or exec,
 * which were before, outside. */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(cg_attach, struct cgroup *dst, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	struct sp_bpf_cgnew *e;

	if (dst->root->hierarchy_id != 0)
		return 0;
	e = bpf_ringbuf_reserve(&cgnew, sizeof(*e), 0);
	if (!e)
		return 0;
	e->id = dst->kn->id;
	e->level = dst->level;
	e->pid = task->tgid;
	e->ppid = task->real_parent->tgid;
	e->gone = 0;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
