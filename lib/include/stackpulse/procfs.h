/* SPDX-License-Identifier: MIT */
/*
 * procfs.h - what sp-record reads from /proc about processes that already
 * exist when it attaches: threads, names, parents, executable mappings, and
 * JIT perf maps (/tmp/perf-PID.map).
 *
 * Functions return 0, or -1 with errno set and nothing reported (a process
 * may exit at any moment; the caller decides whether that is an error).
 * The root directory can be changed for tests (sp_procfs_root).
 */
#ifndef STACKPULSE_PROCFS_H
#define STACKPULSE_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "/proc" unless changed; "/tmp" for perf maps. */
extern const char *sp_procfs_root;
extern const char *sp_procfs_perfmap_dir;

struct sp_proc_map {
	uint64_t start, end, pgoff;
	uint32_t prot;		/* PROT_* */
	uint64_t dev;		/* makedev(major, minor) */
	uint64_t ino;
	const char *path;	/* "" for anonymous; "[vdso]"; may end in " (deleted)" */
};

/* Parse one line of /proc/PID/maps (without its newline). 0 or -1. */
int sp_procfs_parse_map(char *line, struct sp_proc_map *m);
/*
 * Call fn for each mapping of pid; stops early when fn returns non-zero
 * (returned). 0, or -1: errno ENOENT or ESRCH when pid is gone, EFBIG when
 * its maps are longer than max_bytes (fn was called for the mappings
 * before). The process's owner decides how long its maps are (65,530
 * mappings of long paths make 270 MB): SP_PROCFS_MAPS_BYTES holds some
 * 150,000 mappings of usual paths.
 */
#define SP_PROCFS_MAPS_BYTES	(16u << 20)
int sp_procfs_maps(uint32_t pid, size_t max_bytes,
		   int (*fn)(void *ctx, const struct sp_proc_map *m), void *ctx);

/* Thread ids of pid (a malloc'd array of *n, sorted). */
int sp_procfs_tasks(uint32_t pid, uint32_t **tids, size_t *n);
/* The same of the process whose /proc/PID directory procdir is (open, an
 * O_PATH descriptor will do): its threads even once its pid names another
 * process (then -1, errno ENOENT or ESRCH: it is gone). */
int sp_procfs_tasks_at(int procdir, uint32_t **tids, size_t *n);
/* Every process id (a malloc'd array of *n, sorted). */
int sp_procfs_pids(uint32_t **pids, size_t *n);
/*
 * The processes descended from roots[0..nroots) that exist now (not the
 * roots themselves, nor the caller and what it started, unless it is a
 * root), found by their parent pids: a malloc'd array of *n.
 * At most max are returned; *more says how many others there were. A
 * process that exits meanwhile is left out. With starts, each one's start
 * time (field 22 of its stat), read before its parent was: a malloc'd
 * array of *n too, for sp_procfs_same_process() once it is opened (its
 * pid may have been reused by then, by another user's process). 0, or -1.
 */
int sp_procfs_descendants(const uint32_t *roots, size_t nroots, size_t max, uint32_t **out,
			  uint64_t **starts, size_t *n, size_t *more);
/* Whether pid still names the process that started at start_ticks (not
 * 0): false once it is gone or its pid reused. */
bool sp_procfs_same_process(uint32_t pid, uint64_t start_ticks);
/* comm of a thread (NUL-terminated, newline removed). */
int sp_procfs_comm(uint32_t pid, uint32_t tid, char *buf, size_t size);
/* Parent pid and tgid from /proc/PID/status. */
int sp_procfs_status(uint32_t pid, uint32_t *tgid, uint32_t *ppid);
/* Whether pid is a zombie (exited, not reaped), and then its parent. */
bool sp_procfs_zombie(uint32_t pid, uint32_t *ppid);
/* Target of /proc/PID/exe. */
int sp_procfs_exe(uint32_t pid, char *buf, size_t size);
/* This boot's id (/proc/sys/kernel/random/boot_id, newline removed) into
 * buf[40], which keys caches valid for one boot. 0, or -1 (buf zeroed). */
int sp_procfs_boot_id(char *buf);
/* Whether we run in the host's (the first) pid namespace, whose pids BPF's
 * bpf_get_current_pid_tgid() gives: not in a container's. */
bool sp_procfs_host_pidns(void);
/* Command line, arguments joined by spaces (truncated to size). */
int sp_procfs_cmdline(uint32_t pid, char *buf, size_t size);
/*
 * Its arguments as the process left them, each ended by a NUL (the last by
 * buf's): read at most size - 1 bytes, *cut when that was not all of them.
 * Their length (0: none, a kernel thread), or -1. The bytes are the
 * process's choice: show them escaped (docs/escaping.md).
 */
int sp_procfs_argv(uint32_t pid, char *buf, size_t size, bool *cut);

/*
 * Who a process is, beyond its pid (docs/containers.md): its pid in its own
 * pid namespace, when it started (a pid reused later names another start),
 * its namespaces and its cgroup. Each part is read on its own and left 0
 * (or "") when it cannot be: the process may exit between two reads.
 */
enum sp_proc_ns { SP_NS_PID, SP_NS_MNT, SP_NS_NET, SP_NS_CGROUP, SP_NS_COUNT };
#define SP_PROC_CGROUP_MAX	4096	/* a longer cgroup path is not kept */
#define SP_PROC_CGROUP_FILE_MAX	(64u << 10)	/* read no further in /proc/PID/cgroup */

struct sp_proc_identity {
	uint32_t nspid;			/* NSpid's last field; 0 unknown */
	uint64_t start_ticks;		/* /proc/PID/stat field 22, clock ticks since boot */
	uint64_t ns[SP_NS_COUNT];	/* inode of /proc/PID/ns/{pid,mnt,net,cgroup}; 0 unknown */
	char cgroup[SP_PROC_CGROUP_MAX + 1];	/* the "0::" path, "" unknown or too long */
	bool cgroup_long;		/* longer than SP_PROC_CGROUP_MAX: not kept */
};

/* Read what can be read of pid's identity, all of one process: its start
 * time read before the rest and the same after. 0, or -1 when its start
 * time could not be read, or the pid named another process (or none) by
 * the end of the reads (errno ESRCH; *id zeroed). */
int sp_procfs_identity(uint32_t pid, struct sp_proc_identity *id);
/* Whether pid runs AT_SECURE (its auxiliary vector says so: a set-user-ID
 * or set-group-ID program, file capabilities, an LSM's transition), where
 * ld.so ignores LD_LIBRARY_PATH and the like. false when it cannot be
 * read (gone). */
bool sp_procfs_at_secure(uint32_t pid);
/* Thread tid of process pid: its tid in its own pid namespace (the last
 * field of NSpid in /proc/PID/task/TID/status). 0, or -1 (gone, no such
 * line: a kernel before 4.1). */
int sp_procfs_thread_nstid(uint32_t pid, uint32_t tid, uint32_t *nstid);
/* Field 22 (starttime) of a /proc/PID/stat line of n bytes, comm (field 2)
 * holding any bytes, ')' and spaces included. 0 or -1. */
int sp_procfs_parse_start(const char *stat, size_t n, uint64_t *ticks);
/* The start time of process pid (/proc/PID/stat field 22, clock ticks
 * since boot) into *ticks. 0, or -1 (errno ESRCH: gone or unreadable). */
int sp_procfs_start(uint32_t pid, uint64_t *ticks);
/*
 * /proc/PID/mem of process pid, open for reading and writing, only when
 * pid still names the process that started at start_ticks (0: unknown,
 * refused). The descriptor stays bound to that process's memory: should
 * the process end and its pid be reused, reads and writes through it fail
 * instead of reaching the newcomer. Note that writes through it, as a
 * debugger's, reach private mappings that are not writable (copied on
 * write, never their file). A descriptor, or -1 (errno ESRCH: another
 * process, or gone; another errno: neither could be told, out of
 * descriptors say).
 */
int sp_procfs_mem_open(uint32_t pid, uint64_t start_ticks);
/* The last pid of an "NSpid:" value ("\t4242\t7" -> 7). 0 or -1. */
int sp_procfs_parse_nspid(const char *value, uint32_t *pid);
/* The inode of a namespace link's target ("pid:[4026531836]"). 0 or -1. */
int sp_procfs_parse_ns(const char *link, const char *type, uint64_t *ino);

/* One line of a perf map: "START SIZE name" (hex numbers). 0 or -1. */
int sp_procfs_parse_perfmap(char *line, uint64_t *addr, uint64_t *size, const char **name);

/*
 * A perf map is written by the process it describes, which may be any
 * user's, in a directory every user can write: it is read only if it is a
 * regular file (not a link, a FIFO or a device) owned by the process's user
 * or root, and only so far.
 */
#define SP_PERFMAP_MAX_BYTES	(64u << 20)	/* read no further */
#define SP_PERFMAP_MAX_BYTES_TEXT "64 MiB"
#define SP_PERFMAP_MAX_LINE	4096		/* longer lines are skipped */
#define SP_PERFMAP_MAX_SYMS	(1u << 20)	/* symbols given per map */
#define SP_PERFMAP_MAX_SYMS_TEXT "1048576"

struct sp_perfmap_result {
	uint64_t syms;		/* given to fn */
	uint64_t skipped;	/* lines that are not a symbol, or too long */
	bool cut;		/* stopped at a bound (why says which) */
	const char *why;	/* refused or cut: a static reason */
	uid_t owner;		/* the file's owner, (uid_t)-1 if not seen */
	uid_t user;		/* the process's user it was checked against */
};

/*
 * Call fn for each symbol of /tmp/perf-PID.map. The file must belong to
 * the user the process runs as (from /proc/PID/status, else uid: how it was
 * last seen; (uid_t)-1: root only) or to root. Returns 0 (res->cut: only
 * its first part was read), fn's non-zero return value, or -1 with errno
 * set: ENOENT when there is none, EPERM when it is refused (res->why),
 * another on a read error. Nothing is reported.
 */
int sp_procfs_perfmap(uint32_t pid, uid_t uid, int (*fn)(void *ctx, uint64_t addr, uint64_t size,
							  const char *name), void *ctx,
		      struct sp_perfmap_result *res);
/* The same for a process in another pid and mount namespace (a
 * container): perf-NAME_PID.map (its pid as it sees it) in the directory
 * dirfd (its /tmp, found inside its root: procroot.h); AT_FDCWD for
 * sp_procfs_perfmap_dir. pid 0: the process is known gone, its user now is
 * not read (uid, as it was last seen, is the one). */
int sp_procfs_perfmap_at(int dirfd, uint32_t name_pid, uint32_t pid, uid_t uid,
			 int (*fn)(void *ctx, uint64_t addr, uint64_t size, const char *name),
			 void *ctx, struct sp_perfmap_result *res);
/* The reading alone, of a map opened already (bounded as above); the
 * same returns, and res->owner and res->user are left alone. */
int sp_procfs_perfmap_fd(int fd, int (*fn)(void *ctx, uint64_t addr, uint64_t size,
					    const char *name), void *ctx,
			 struct sp_perfmap_result *res);
/* The file-system user a process runs as (the Uid: line of /proc/PID/status). */
int sp_procfs_uid(uint32_t pid, uid_t *uid);
/* Its file-system user and group and its supplementary groups (at most
 * max; *ngroups how many were kept): the rights it opens files with.
 * gid NULL: the user alone (no Gid: line needed). */
int sp_procfs_creds(uint32_t pid, uint32_t *uid, uint32_t *gid, uint32_t *groups,
		    unsigned int max, unsigned int *ngroups);

/* CPUs of a list like "0-3,8,10-11" into a new array *out (caller frees);
 * returns how many. */
int sp_parse_cpu_list(const char *list, int **out);
/* The online CPUs (/sys/devices/system/cpu/online, else all configured). */
int sp_online_cpus(int **out);

#endif
