/* SPDX-License-Identifier: MIT */
/*
 * proc_identity.h - the identity fields of a process record (its namespace
 * pid, start time, namespaces, cgroup and the container that derives from
 * it: docs/containers.md): what the kernel said at the process's fork or
 * exec (bpf/ident.bpf.c), else read from /proc when the record is written.
 */
#ifndef SP_RECORD_PROC_IDENTITY_H
#define SP_RECORD_PROC_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "arena.h"
#include "hashmap.h"
#include "record.h"
#include "writer.h"

#define SP_PROC_CGROUP_PATHS 512	/* cgroup paths kept for process records */

struct sp_bpf_ident;
struct sp_bpf_thread;
struct sp_ident_bpf;

/*
 * The kernel's record of every process forked or exec'd from now on: NULL
 * (said) where BPF cannot be loaded. A pid's entry is the newest process
 * with that pid. Lookup: 0, or -1 when there is none (or kb is NULL).
 */
struct sp_ident_bpf *sp_ident_bpf_open(void);
int sp_ident_bpf_lookup(struct sp_ident_bpf *kb, uint32_t pid, struct sp_bpf_ident *out);
/* The newest thread made with host tid (since kb was opened). 0 or -1. */
int sp_ident_bpf_thread(struct sp_ident_bpf *kb, uint32_t tid, struct sp_bpf_thread *out);
void sp_ident_bpf_free(struct sp_ident_bpf *kb);

/*
 * The cgroup v2 paths of cgroup ids, each read once (sp_cgroup_path_by_id():
 * three system calls) for all the processes that start in that cgroup: at
 * most max of them kept, all forgotten when one more comes. A cgroup id
 * names one cgroup for as long as the machine runs, so a path kept is the
 * one its cgroup had when read: one removed since keeps it, and so does
 * one renamed since (cgroup v2 allows it within the parent, which no
 * manager of containers or services does).
 */
struct sp_cgroup_paths {
	struct sp_u64map idx;	/* cgroup id -> its path (char *) in strs */
	struct sp_arena strs;
	unsigned int max;
};
#define SP_CGROUP_PATHS_INIT(n) { .strs = SP_ARENA_INIT(16 << 10), .max = (n) }
/* id's path into buf (size bytes). 0, or -1: no such cgroup now, no cgroup
 * v2 mount, or a path longer than size (as sp_cgroup_path_by_id()). */
int sp_cgroup_paths_get(struct sp_cgroup_paths *c, uint64_t id, char *buf, size_t size);
void sp_cgroup_paths_release(struct sp_cgroup_paths *c);

/*
 * Fill rec's identity for pid as of time (the record's time, CLOCK_MONOTONIC
 * ns): from kb's entry for pid when there is one (kb may be NULL), else
 * from /proc. A process that is gone with no entry, or whose pid already
 * names a process started after time (a reuse), gets none: rec->flags has
 * SP_PROC_NO_IDENTITY; a reuse is warned of once, a process gone only said
 * with -v. The kernel's cgroup ids are turned into paths through a cache
 * of SP_PROC_CGROUP_PATHS (sp_cgroup_paths). 0 or -1.
 */
int sp_proc_identity_fill(struct sp_writer *w, struct sp_ident_bpf *kb, uint32_t pid,
			  uint64_t time, struct sp_process *rec);

/*
 * The parent (host pid) and file-system user of process pid as of time
 * (the record of its exec or its end, CLOCK_MONOTONIC ns): what the kernel
 * said at its fork, exec or end (kb may be NULL; at_exec: only what it
 * said at an exec will do), else /proc/PID/status unless read_proc is
 * false. 0; -1 with errno ESRCH when its pid names a process started after
 * time (a reuse), ENOENT when neither knows (gone, or read_proc false).
 */
int sp_proc_owner(struct sp_ident_bpf *kb, uint32_t pid, uint64_t time, bool at_exec,
		  bool read_proc, uint32_t *ppid, uid_t *uid);

/*
 * The mount namespace (its inode number) of process pid as of time, as the
 * kernel said at its fork or exec (at_exec: only at an exec), into
 * *mnt_ns: 0, or -1 when it has no such record (kb NULL, a process from
 * before the recording, its pid reused since time).
 */
int sp_proc_mnt_ns(struct sp_ident_bpf *kb, uint32_t pid, uint64_t time, bool at_exec,
		   uint64_t *mnt_ns);

/*
 * The tid in its own pid namespace of thread tid of process pid, as of
 * time (its record's): what the kernel said when the thread was made (kb
 * may be NULL), else /proc/PID/task/TID/status unless read_proc is false
 * (the process is known gone). 0 when neither knows (the thread is gone,
 * or its tid names a thread made after time).
 */
uint32_t sp_thread_nstid(struct sp_ident_bpf *kb, uint32_t pid, uint32_t tid, uint64_t time,
			 bool read_proc);

#endif
