/* SPDX-License-Identifier: MIT */
/*
 * perf_sourceP.h - the state the files of the "perf" source share
 * (perf_source.h is its public face). Read it as the map of the source:
 *
 *   perf_source.c   the sp_source vtable: creating, starting, polling,
 *                   finishing, describing and freeing the source; records
 *                   out of the rings (perf_queue.c) to their handlers
 *   perf_events.c   the sampling event: names, its perf_event_attr, what
 *                   this kernel and our permissions allow, one event per
 *                   CPU (and per thread), sp-record --check
 *   perf_procs.c    processes, threads, mappings and the modules behind
 *                   them, from the kernel's records and from /proc
 *   perf_samples.c  samples: their stacks interned as frames and stacks
 *   perf_ksyms.c    kernel symbols for the kernel frames seen (when the
 *                   fresh read begins; the rest is ksym_writer.c)
 *   perf_jit.c      JIT perf maps (/tmp/perf-PID.map) of ended processes
 *   perf_map.c      the map of (a, b) pairs the files above keep state in
 *
 * Modules are interned by file identity (path, device, inode or build-id,
 * file offset), so the same library mapped at different addresses in many
 * processes is one module, and a frame is interned by (module,
 * file-relative address): stacks are shared across processes.
 */
#ifndef STACKPULSE_RECORD_PERF_SOURCEP_H
#define STACKPULSE_RECORD_PERF_SOURCEP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include "buildid.h"
#include "cgroup_filter.h"
#include "hashmap.h"
#include "interpP.h"
#include "ksym_writer.h"
#include "perf_queue.h"
#include "proc_ended.h"
#include "perf_ring.h"
#include "perf_source.h"
#include "source.h"

#define DEFAULT_PAGES		128	/* 512 KiB per CPU: ~2 s of 999 Hz samples */
#define DWARF_PAGES		512
#define SIDEBAND_WAKEUP		512	/* bytes: the side-band ring's wake-up (perf_events.c) */
#define MAX_FRAMES		1024
#define KERNEL_START		SP_KERNEL_START

/* ---- a small open-addressing map: (a, b) -> v (perf_map.c) ---- */

struct perf_kv {
	uint64_t a, b, v;
	bool used;
};

/* Iterated in slot order (t[0..cap)), which the end of a recording
 * follows: what it writes for each live process comes in that order. */
struct perf_map {
	struct perf_kv *t;
	size_t cap, n;		/* cap a power of two */
};

uint64_t *sp_perf_map_get(const struct perf_map *m, uint64_t a, uint64_t b);
void sp_perf_map_put(struct perf_map *m, uint64_t a, uint64_t b, uint64_t v);
void sp_perf_map_del(struct perf_map *m, uint64_t a, uint64_t b);
/* The values in slot order: for (i = 0; sp_perf_map_next(m, &i, &v); ) */
bool sp_perf_map_next(const struct perf_map *m, size_t *iter, uint64_t *v);
void sp_perf_map_free(struct perf_map *m);

/* ---- state ---- */

struct mod {
	uint64_t id;		/* module id in the stream */
	uint64_t ka, kb;	/* key in perf->mods_by_key */
	int64_t bias;		/* ELF vaddr - file offset */
	uint64_t flags;		/* SP_MOD_* */
	unsigned long refs;	/* vmas that use it */
};

struct vma {
	uint64_t start, end, pgoff;
	struct mod *mod;
};

/* How many samples a process in the middle of an exec holds back. */
#define SP_PERF_HELD_SAMPLES 4

/* A JIT symbol written: [addr, end], end one past its last byte (a return
 * address there is named by it). */
struct sp_perf_jit_range {
	uint64_t addr, end;
};

struct proc {
	uint32_t pid, ppid;
	bool defined;		/* a process record was emitted */
	bool pending_exec;	/* exec'd: the record waits for the executable's path */
	bool root;		/* the command sp-record started */
	bool execd;		/* its exec's record was written: the next is another program */
	bool ended;
	bool end_deferred;	/* the command's end waits for its exit status */
	bool leader_exited;	/* its first thread exited before threads it made */
	bool gone;		/* exited, or /proc said so: not read from /proc again */
	uint32_t live_threads;	/* threads seen made (not the first) and not ended */
	uid_t uid;		/* its user when last seen, (uid_t)-1 unknown: whose JIT map to trust */
	uint32_t nspid;		/* its pid in its own pid namespace, 0 unknown */
	uint64_t mnt_ns;	/* its mount namespace (inode), 0 unknown */
	/* The kernel's map's word on its mount namespace, kept until its next
	 * exec: asked at each new mapping, the map costs a system call per
	 * module of every process started (hundreds a second on a busy
	 * machine), and its entry changes only at a fork or an exec. */
	uint64_t kmnt_ns;
	uint64_t exec_time, end_time, leader_exit;
	uint64_t start_boot_ns;	/* its record's, 0 unknown */
	uint64_t gone_at;	/* when it was known gone: a later exec is another's */
	char comm[17];
	uint64_t exe;		/* string id */
	/* Samples taken between its exec's naming and its executable's
	 * mapping (in the kernel, inside execve): written after its process
	 * record, which they would otherwise precede or rob of its executable. */
	struct sp_sample held[SP_PERF_HELD_SAMPLES];
	unsigned int nheld;
	struct vma *vmas;	/* sorted by start, not overlapping */
	size_t nvmas, cap;
	/* Addresses of its frames in code without a file (a JIT's): its JIT
	 * perf map is read only when there are some, and only the symbols
	 * that hold one are written (perf_jit.c). */
	struct sp_u64map jit_addrs;	/* address -> named by a symbol written or not */
	uint32_t jit_unnamed;	/* addresses not named yet */
	struct sp_perf_jit_range *jit_written;	/* symbols written, by address */
	size_t njit_written, capjit_written;
	bool jit_all;		/* more than SP_PERF_JIT_ADDRS_MAX: every symbol */
	bool jit_queued;	/* in perf->jit_due */
	bool jit_refused;	/* its map was refused (said once): not read again */
	bool jit_fresh;		/* frames not named yet seen since its map's last read */
	uint64_t jit_read_at;	/* its map's last read */
	uint64_t jit_first_read, jit_read_ns;	/* its first; the time all took */
	uint64_t jit_retry;	/* the wait before a read for frames still unnamed */
	uint64_t jit_since;	/* the earliest sample with a frame not named yet */
};

/* JIT frame addresses kept per process, at most: past it, its map's
 * symbols are all written (each map is bounded, sp_procfs_perfmap()). */
#define SP_PERF_JIT_ADDRS_MAX 65536

struct elf_entry {
	char *path;
	bool ok;
	struct sp_elf_info info;
	struct stat st;
	bool have_st;
};

struct cpu_ring {
	int cpu;
	int fd;			/* the event that owns the ring (its ring: rings[i]) */
	bool own_fd;		/* fd is a ring owner of its own, not in fds
				 * (-a --cgroup: perf_events.c) */
};

/* The body of PERF_RECORD_FORK and PERF_RECORD_EXIT. */
struct perf_task_rec {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct perf {
	/* while perf_start reads the processes that exist already: the time
	 * their records carry (the recording's start, before any sample), 0 after */
	uint64_t scan_time;
	struct sp_perf_opts o;
	struct perf_event_attr attr;
	uint32_t type;
	uint64_t config;
	bool hardware;
	bool kernel_ok;		/* kernel samples and callchains allowed */
	bool build_id_ok;	/* attr.build_id works */
	bool sideband;		/* the "dummy" event: side-band records, no sample */
	unsigned int nregs;	/* registers in attr.sample_regs_user */
	int epfd;

	struct cpu_ring *cpus;
	struct sp_perf_ring *rings;	/* one per CPU */
	unsigned int ncpus;
	int *fds;		/* every event fd (ring owners too) */
	size_t nfds, fds_cap;
	unsigned int *fd_cpu;	/* the CPU of each (its ring's), fds' order */
	size_t fd_cpu_cap;
	struct sp_perf_lost lost;	/* what the rings said they lost, per CPU */

	struct sp_perf_queue q;	/* records copied out of the rings */
	bool finished;

	struct sp_emit *out;
	struct perf_map procs;	/* (pid, 0) -> struct proc * */
	struct perf_map mods_by_key;	/* key -> struct mod * */
	struct perf_map mods_by_id;	/* (id, 0) -> struct mod * */
	struct perf_map frames;	/* (module << 4 | flags, rel) -> frame id */
	struct perf_map frames_raw;	/* (pid << 4 | flags, addr) -> frame id (no module) */
	struct perf_map elfs;	/* (hash of path, 0) -> struct elf_entry *; a container's:
				 * (hash of dev, inode, mtime, 1), (n, 2) when gone */
	uint64_t elfs_gone;	/* entries of files no longer to be found */
	struct perf_map ns_roots;	/* (mount namespace, 0) -> 1 + O_PATH fd of its root */
	uint64_t self_mnt_ns;	/* ours; 0 not read yet */
	struct mod *kmod;	/* [kernel.kallsyms] */

	bool vdso_ok;
	struct sp_elf_info vdso;

	struct sp_unwinder *unw;
	struct sp_interpreters *interp;	/* interpreted frames (interpP.h) */
	struct sp_ident_bpf *ident;	/* processes' identity at fork/exec (proc_identity.h) */
	pthread_t bpf_thread;	/* loading ident and interp (perf_bpf.c) */
	bool bpf_started;	/* the thread is to be joined */
	bool bpf_loaded;	/* they are (or failed: NULL) */
	enum sp_interp_cmd cmd_kind;	/* what the command runs (looked up before the thread) */

	/* Kernel symbols (ksym_writer.h); the fresh read of module and BPF
	 * symbols begins at once with -a, or once an interpreter is followed
	 * (sp_perf_ksyms_poll()). */
	struct sp_ksym_writer ksyms;
	bool fresh_at_interp;	/* begin it once an interpreter is followed */
	uint64_t kernel_astray;	/* user-half addresses in kernel callchains, dropped */

	uint32_t *roots;
	unsigned int nroots;
	uint32_t *found_pids;	/* -p: the roots, then their existing children */
	uint64_t *found_starts;	/* the children's start times, as listed */
	bool system_wide;
	bool cgroup_mode;	/* -a limited to cgroups: o.cgroups */
	/* o.cgroups' slots with their events: the cgroup id each was opened
	 * for (0: none), and the events, ncpus a slot (-1: none) */
	uint64_t cg_open_id[SP_CGROUP_FILTER_DIRS];
	int *cg_fds;
	unsigned int cg_gen;		/* o.cgroups->gen they agree with */
	bool cgroups_watched;		/* the new cgroups' descriptor is in epfd */

	struct sp_perf_stats st;
	uint64_t unseen_unnamed;	/* sampled processes defined by pid alone */
	struct sp_proc_ended ended;	/* processes recorded and ended: a late
					 * sample of one defines it no more */
	uint64_t ended_late;		/* samples of those, after their end was read */
	bool maps_cut_said;		/* a process's maps longer than we read */
	uint32_t *jit_due;		/* pids with JIT frames not named yet (perf_jit.c) */
	uint64_t sample_time;		/* of the sample whose frames are being interned */
	size_t njit_due, cap_jit_due;
	const char *failed_call;	/* what open_on() failed at */
};

static inline int sp_perf_emit(struct perf *p, const struct sp_record *r)
{
	return p->out->emit(p->out->ctx, r);
}

/* ---- the sampling event (perf_events.c) ---- */

int sp_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group);
int sp_perf_paranoid_level(void);
/* p->attr from p->o and the event's type and config. */
void sp_perf_attr_setup(struct perf *p);
/* Open p->attr on ourselves, giving up build-ids and kernel stacks where
 * the kernel or our permissions refuse them. 0, or -1 (reported). */
int sp_perf_attr_probe(struct perf *p);
/* The online CPUs, each with its ring to be; p->epfd is made first. 0 or -1
 * (reported). */
int sp_perf_cpus(struct perf *p);
/* The events of the target, one per CPU (and per thread of a running
 * process), each CPU's first owning its ring. 0 or -1 (reported). */
int sp_perf_open_events(struct perf *p, const struct sp_target *t);
/* -a --cgroup/--container: the events of o.cgroups' directory i, one per
 * CPU (kept in p->cg_fds). 0 or -1 (reported). */
int sp_perf_open_cgroup(struct perf *p, unsigned int i);
/* Close the events of slot i, whose cgroup is gone: what they counted is in
 * their CPU's ring already (they write to it); a ring's owner stays open. */
void sp_perf_close_cgroup(struct perf *p, unsigned int i);

/* ---- cgroups that appear while recording (perf_cgroups.c) ---- */

/* What o.cgroups waited for and has now found: its events opened, the
 * interpreted-frames program on them, its processes read from /proc. */
void sp_perf_cgroups_follow(struct perf *p);
/* The end: say what never appeared, close the directories. */
void sp_perf_cgroups_finish(struct perf *p);

/* ---- processes, threads, mappings, modules (perf_procs.c) ---- */

struct proc *sp_perf_proc_find(struct perf *p, uint32_t pid);
const struct vma *sp_perf_vma_find(const struct proc *pr, uint64_t addr);
/* [kernel.kallsyms], written once; NULL when the output failed. */
struct mod *sp_perf_kernel_mod(struct perf *p);
/* An exec'd process's record, held for its executable's path, goes out. */
void sp_perf_flush_pending_exec(struct perf *p, struct proc *pr);
/* Holds back a sample of a process whose exec waits for its executable;
 * false when it must be written now (the exec then is written first). */
bool sp_perf_hold_sample(struct perf *p, struct proc *pr, const struct sp_sample *s);
/* The same for every process whose exec is no later than upto (the
 * executable of a script run by an interpreter already mapped never
 * shows up). */
void sp_perf_flush_pending_execs(struct perf *p, uint64_t upto);
/* Define a process that exists already (from /proc). 0, or -1 if gone. */
int sp_perf_scan_process(struct perf *p, uint32_t pid);
/* A process gone before it could be read from /proc, defined by what is
 * known of it: its parent and name (a process moved into a followed cgroup,
 * perf_cgroups.c). Nothing if it is defined already. */
void sp_perf_define_gone(struct perf *p, uint32_t pid, uint32_t ppid, const char *comm,
			 uint64_t time);
/* A process of a followed cgroup with a sample but no record: forked there
 * before the cgroup's events were open and gone before /proc was read.
 * Defined from /proc, else from the kernel's identity map as its fork
 * would have been, when its parent is known and not gone. Returns it, or
 * NULL. */
struct proc *sp_perf_define_unseen(struct perf *p, uint32_t pid, uint64_t time);
void sp_perf_on_fork(struct perf *p, const struct perf_event_header *h);
void sp_perf_on_exit(struct perf *p, const struct perf_event_header *h);
void sp_perf_on_comm(struct perf *p, const struct perf_event_header *h,
		     const struct sp_perf_id *id);
void sp_perf_on_mmap2(struct perf *p, const struct perf_event_header *h,
		      const struct sp_perf_id *id);
/* A MMAP2 record as it is copied out of its ring (interpreters). */
void sp_perf_peek_mmap2(struct perf *p, const struct perf_event_header *h, uint64_t time);
/* At the end: every live process's pending record, lost end, JIT map and
 * the command's deferred end. */
void sp_perf_procs_finish(struct perf *p);
/* Free the processes, modules and files known. */
void sp_perf_procs_free(struct perf *p);
/* The modules' and executables' ids, renumbered (source.h: remap). */
void sp_perf_procs_remap(struct perf *p, const struct sp_remap *m);

/* ---- samples (perf_samples.c) ---- */

void sp_perf_on_sample(struct perf *p, const struct perf_event_header *h);
void sp_perf_on_lost(struct perf *p, const struct perf_event_header *h,
		     const struct sp_perf_id *id);

/* ---- its BPF objects (perf_bpf.c) ---- */

/* Load ident and interp (here); start that on a thread (from the
 * source's creation); await it, or load them now if no thread did. */
void sp_perf_bpf_load(struct perf *p);
void sp_perf_bpf_start(struct perf *p);
void sp_perf_bpf_wait(struct perf *p);

/* ---- kernel symbols (perf_ksyms.c) ---- */

/* Start loading the kernel's symbols (as root, with kernel stacks). */
void sp_perf_ksyms_start(struct perf *p);
/* Each poll: once an interpreter is followed (a command, -p), start the
 * fresh read of module and BPF symbols that -a starts at once. */
void sp_perf_ksyms_poll(struct perf *p);
/* Write the ksym record of the function holding a new kernel frame's
 * address, before the frame (waits for a table still being read). */
void sp_perf_ksym(struct perf *p, uint64_t addr);
/* At the end: say once when kernel frames went without a symbol. */
void sp_perf_ksyms_finish(struct perf *p);
void sp_perf_ksyms_release(struct perf *p);

/* ---- JIT maps (perf_jit.c) ---- */

/* The JIT perf map of pr as SP_REC_JITSYM records (when it ends): the
 * symbols that hold one of its JIT frames' addresses, none when it has no
 * such frame. uid_at_end: pr->uid is its user as it ended (the kernel's),
 * not to be read from /proc. */
void sp_perf_capture_jit(struct perf *p, struct proc *pr, bool uid_at_end);
/* A frame of pr at ip, in code without a file: its map is read for it at
 * the next sp_perf_jit_poll(). */
void sp_perf_jit_addr(struct perf *p, struct proc *pr, uint64_t ip);
/* The maps of processes with frames not named yet, read between batches
 * (now: CLOCK_MONOTONIC ns), less and less often. */
void sp_perf_jit_poll(struct perf *p, uint64_t now);
/* What pr keeps of its JIT frames, freed. */
void sp_perf_jit_forget(struct proc *pr);
/* Our mount namespace's inode number (0: unknown), read once. */
uint64_t sp_perf_self_mnt_ns(struct perf *p);
/* Who pr is, from its process record: a process in another mount
 * namespace has its map in that namespace's /tmp, whose root is held open
 * from now on (the process may be gone when its map is read). */
void sp_perf_jit_note(struct perf *p, struct proc *pr, const struct sp_process *rec);
/* Close the roots held. */
void sp_perf_jit_release(struct perf *p);

#endif
