/* SPDX-License-Identifier: MIT */
/*
 * nspid.bpf.h - a task's id in its own (innermost) pid namespace, as the
 * task itself knows it (getpid()/gettid() in a container), and that
 * namespace's inode: from its struct pid's number at its level.
 */
#ifndef SP_BPF_NSPID_H
#define SP_BPF_NSPID_H

/* t's pid (for a thread, its tid) and pid namespace: 0, or -1 unreadable. */
static __always_inline int sp_task_nspid(struct task_struct *t, __u32 *nr, __u32 *ns)
{
	struct pid *tp = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(tp, level);
	struct upid up = { 0 };

	if (level >= 32 || bpf_probe_read_kernel(&up, sizeof(up), &tp->numbers[level]) || !up.nr)
		return -1;
	*nr = up.nr;
	if (ns)
		*ns = BPF_CORE_READ(up.ns, ns.inum);
	return 0;
}

#endif
