/* SPDX-License-Identifier: MIT */
/*
 * events.h - what bpf/events.bpf.c hands to lib/record/bpf_events.c through the
 * "events" ring buffer, and the maps they share. Kernel-side and user-side
 * code include it; vmlinux.h defines every kernel type, so ours are sp_bpf_*.
 *
 * A ring-buffer record is a struct sp_bpf_ev followed by its strings, back
 * to back, each NUL-terminated (str_len[] excludes the NUL). Which raw values
 * and strings a record carries depends on kind and, for system calls, on the
 * call number nr: lib/record/bpf_events.c turns them into typed event fields.
 */
#ifndef SP_BPF_EVENTS_SHARED_H
#define SP_BPF_EVENTS_SHARED_H

/* Limits (bytes, including the NUL) of what is copied per event. */
#define SP_BPF_PATH_MAX		4096	/* a path argument: PATH_MAX */
#define SP_BPF_ARGV_MAX		4096	/* exec: argv as laid out in the new stack */
#define SP_BPF_DIR_MAX		3840	/* a directory rebuilt from dentries */
#define SP_BPF_DIR_DEPTH	32	/* ... at most this many components */
#define SP_BPF_NAME_MAX		256	/* one dentry name */
#define SP_BPF_SOCKADDR_MAX	128	/* struct sockaddr_storage */
#define SP_BPF_DNS_MAX		512	/* a DNS query payload (classic UDP limit) */
#define SP_BPF_DNS_MSGS		4	/* DNS queries looked at per sendmmsg() */
#define SP_BPF_NSTR		3	/* strings per record */
#define SP_BPF_SCRATCH		32768	/* per-CPU record being built */
#define SP_BPF_DATA_MASK	16383	/* a string starts below this offset */
#define SP_BPF_NR_MAX		512	/* syscall numbers the filter table covers */
#define SP_BPF_CGROUPS		64	/* cgroups -a may be limited to (SP_CGROUP_FILTER_DIRS) */
#define SP_BPF_CGROUP_DEPTH	32	/* ancestor levels looked at for them */

/* What the programs do with a system call number: the "wanted" array map,
 * filled by user space. */
#define SP_WANT_PAIR	1	/* record it at exit */
#define SP_WANT_DNS	2	/* look at the payload: at exit, from the registers;
				 * with classic tracepoints at entry */
#define SP_WANT_ENTRY	4	/* keep something of the entry for the exit, in the
				 * "pending" map: the arguments (classic tracepoints,
				 * whose sys_exit has no registers), the ids before a
				 * setid call (on_setid_tp, or sys_enter) */

/* Record kinds that are not system calls (those use SP_BPF_SYSCALL). */
enum sp_bpf_kind {
	SP_BPF_FORK = 1,	/* arg0 child tgid, arg1 child tid, arg2 1 = thread */
	SP_BPF_EXEC = 2,	/* str0 filename, str1 argv (NUL-separated), arg0 old tid,
				 * arg1 nspid, arg2 pid ns, arg3 mount ns, arg4 cgroup
				 * id, arg5 start (boot ns) */
	SP_BPF_EXIT = 3,	/* arg0 task exit_code (wait status), arg1 1 = others live on */
	SP_BPF_SYSCALL = 4,	/* nr, arg0..5 raw arguments, result; strings per nr */
	SP_BPF_DNS = 5,		/* nr, arg0 fd, str0 payload bytes, str1 sockaddr bytes */
	SP_BPF_CAPABLE = 6,	/* arg0 capability, result */
};

/* flags of a record. */
#define SP_BPF_TRUNC(i)		(1u << (i))	/* string i was cut at its limit */
#define SP_BPF_REVPATH(i)	(1u << ((i) + 4))	/* string i: dentry names, leaf first */
#define SP_BPF_FAULT(i)		(1u << ((i) + 8))	/* string i could not be read */
#define SP_BPF_BYTES(i)		(1u << ((i) + 12))	/* string i: raw bytes, not text */

struct sp_bpf_ev {
	__u64 time_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 arg[6];		/* raw values, see enum sp_bpf_kind */
	__s64 result;		/* system call result (-errno) */
	__u32 kind;		/* enum sp_bpf_kind */
	__u32 pid, tid;		/* tgid and pid of the task, as the kernel sees them */
	__u32 nr;		/* system call number */
	__u16 str_len[SP_BPF_NSTR];	/* bytes of string i (no NUL) */
	__u16 flags;		/* SP_BPF_* */
	__u8 addr[16];		/* a peer address (accept), network order */
	__u32 family;		/* ... its address family, 0 = none */
	__u32 port;		/* ... its port, host order */
};

/* Per-CPU count of records that did not fit the ring buffer (or the map of
 * system calls in progress). */
struct sp_bpf_lost {
	__u64 count;
	__u64 first_ns;		/* time of the first loss ever on this CPU */
	__u64 last_ns;		/* time of the latest */
};

#endif
