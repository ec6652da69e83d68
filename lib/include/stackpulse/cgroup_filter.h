/* SPDX-License-Identifier: MIT */
/*
 * cgroup_filter.h - sp-record -a --cgroup=PATH / --container=ID: the cgroup
 * v2 directories a whole-machine recording is limited to (docs/containers.md).
 *
 * The argp child collects what the user named; sp_cgroup_filter_resolve()
 * turns it into directories: a --cgroup PATH as given (relative to the
 * cgroup v2 mount), a --container ID as the cgroups of the running
 * processes whose cgroup path names a container (lib/base/cgroup.c) whose
 * id starts with ID, or, for a name, whose id `podman inspect` or
 * `docker inspect` gives. Each directory is held open (perf_event_open's
 * cgroup mode needs its descriptor) with its cgroup id (its inode, which is
 * what bpf_get_current_cgroup_id() returns). A cgroup's descendants belong
 * to it: perf counts them, the BPF programs look at the ancestors too.
 * While recording, the kernel tells each cgroup made (bpf_cgnew.h) and
 * every one that matches is appended (sp_cgroup_filter_consider()).
 */
#ifndef STACKPULSE_CGROUP_FILTER_H
#define STACKPULSE_CGROUP_FILTER_H

#include <argp.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_cgwatch;
struct sp_cgwatch_ev;

#define SP_CGROUP_FILTER_MAX	16	/* --cgroup and --container options, each */
#define SP_CGROUP_FILTER_DIRS	64	/* directories followed: one per container
					 * started (again) while recording */
#define SP_CGROUP_FILTER_MOVED	256	/* processes moved in, kept between two passes */
#define SP_CGROUP_FILTER_DEPTH	32	/* ancestor levels the BPF filter looks at */
#define SP_CGROUP_FILTER_UNREAD	32	/* cgroups told made, not readable yet */
#define SP_CGROUP_FILTER_UNREAD_NS	(2000 * 1000000ull)	/* asked again this long */

struct sp_cgroup_filter {
	/* What the options named (argp). */
	const char *cgroups[SP_CGROUP_FILTER_MAX];	/* --cgroup */
	unsigned int ncgroups;
	const char *containers[SP_CGROUP_FILTER_MAX];	/* --container */
	unsigned int ncontainers;
	/* After sp_cgroup_filter_resolve(): the directories, in slots [0, n).
	 * A slot whose cgroup was removed while recording is free (id 0, path
	 * NULL, fd -1) and taken by the next directory found; users compare
	 * each slot's id with what they made of it when gen moved. */
	unsigned int n;
	char *path[SP_CGROUP_FILTER_DIRS];	/* "/libpod_parent/libpod-<id>" (malloc'd) */
	int fd[SP_CGROUP_FILTER_DIRS];		/* the directory, O_RDONLY */
	uint64_t id[SP_CGROUP_FILTER_DIRS];	/* its cgroup id (inode) */
	unsigned int gen;			/* bumped at each slot taken or freed */
	unsigned int last;			/* the slot taken last */
	uint64_t nadded, nremoved;		/* directories taken, freed */
	/* Named but not found at the start: looked for again while recording
	 * (sp_cgroup_filter_follow()); the cgroup v2 root held open for it. */
	bool cgroup_waits[SP_CGROUP_FILTER_MAX];
	bool container_waits[SP_CGROUP_FILTER_MAX];
	bool cgroup_seen[SP_CGROUP_FILTER_MAX];	/* found once at least */
	bool container_seen[SP_CGROUP_FILTER_MAX];
	/* No watch (the BPF program could not be loaded, or SP_CGROUPS_POLL=1):
	 * every 200 ms the directories followed are looked at, a removed one
	 * (gone, or another inode at its path) freed and its name waited for
	 * again. */
	bool polling;
	unsigned int nwaiting;
	int mfd;		/* valid when nwaiting, watch or polling */
	uint64_t next_look_ns, next_inspect_ns;
	/* The kernel tells each cgroup made (bpf_cgnew.h): every one that
	 * matches what was named is followed, found at the start or not, a
	 * container started again included. NULL: looked for by polling,
	 * and only until found. */
	struct sp_cgwatch *watch;
	const char *names_root;	/* where the runtimes' files are: "/" (tests: another) */
	char seen[64][65];	/* containers of new cgroups that matched nothing */
	/* Processes moved into a followed cgroup (told with a watch) since the
	 * caller last emptied this: their fork and exec were outside it. */
	struct sp_cgroup_moved {
		uint32_t pid, ppid;
		char comm[16];	/* as it moved */
	} moved[SP_CGROUP_FILTER_MOVED];
	unsigned int nmoved;
	unsigned int nseen;
	bool full_said;
	/* Cgroups the kernel told were made whose path could not be read by
	 * their id yet: cgroup_mkdir() fires its tracepoint before it makes
	 * the directory visible (kernfs_activate()), so a reader that is
	 * quick, or a mkdir preempted between the two, finds nothing there.
	 * Asked again at each pass for SP_CGROUP_FILTER_UNREAD_NS. */
	struct sp_cgroup_unread {
		uint64_t id, until_ns;
	} unread[SP_CGROUP_FILTER_UNREAD];
	unsigned int nunread;
	uint64_t nunread_dropped;	/* never readable in time, or no room */
	/* How a cgroup id's path is read: NULL, sp_cgroup_path_by_id() (unit
	 * tests: their own). */
	int (*path_by_id)(uint64_t id, char *buf, size_t size);
};

/* Options --cgroup and --container; input: a zeroed struct sp_cgroup_filter. */
extern const struct argp sp_cgroup_filter_argp;

static inline bool sp_cgroup_filter_given(const struct sp_cgroup_filter *f)
{
	return f && (f->ncgroups || f->ncontainers);
}

/* Find and open the directories. A --cgroup that does not exist yet and a
 * --container with no running process are said once and waited for
 * (sp_cgroup_filter_follow()). 0, or -1 (reported: no cgroup v2 mount, a
 * path that cannot be opened, an ambiguous id prefix). */
int sp_cgroup_filter_resolve(struct sp_cgroup_filter *f);

/* What the kernel told (bpf_cgnew.h: n events in order, at now,
 * CLOCK_MONOTONIC ns): a cgroup made is followed if its path matches what
 * was named (sp_cgroup_filter_consider()), one whose path cannot be read
 * by its id yet is asked for again at the next calls (f->unread); a
 * removed one's slot is freed; a process moved into a followed one is
 * kept in f->moved. Returns how many directories were added. */
unsigned int sp_cgroup_filter_told(struct sp_cgroup_filter *f, const struct sp_cgwatch_ev *ev,
				   size_t n, uint64_t now);

/* Take the cgroups the kernel told were made, and the processes moved into
 * followed ones (f->moved), with a watch; else look
 * again for what is waited for, at most every 200 ms (now: CLOCK_MONOTONIC
 * ns; a name through podman or docker inspect at most every second): the
 * directories found are put in f's slots, and the slot of a directory the
 * kernel told was removed is freed (its users close what they opened for
 * it). Returns how many were added. */
unsigned int sp_cgroup_filter_follow(struct sp_cgroup_filter *f, uint64_t now);

/* Whether the recording follows cgroups made from now on: something is
 * waited for, or the kernel tells every new cgroup. */
static inline bool sp_cgroup_filter_following(const struct sp_cgroup_filter *f)
{
	return f && (f->nwaiting || f->watch || f->polling);
}

/* The descriptor that is readable when the kernel told of a new cgroup
 * (for epoll), or -1. */
int sp_cgroup_filter_fd(const struct sp_cgroup_filter *f);

/* A cgroup made while recording, by its path: its directory is appended
 * when it is a --cgroup's path, or names a container (lib/base/cgroup.c)
 * that a --container names by id prefix, unit or name (the runtime's files,
 * container_name.h, else podman or docker inspect); a directory already
 * followed (the same cgroup id) is not added again, one made again at the
 * same path is. Returns 1 when added, 0 when not (the cgroup of a
 * container that matched nothing is remembered and asked no more). */
int sp_cgroup_filter_consider(struct sp_cgroup_filter *f, const char *path);

/* Whether a cgroup path (the "0::" line's) is one of the directories or
 * below one. */
bool sp_cgroup_filter_match(const struct sp_cgroup_filter *f, const char *path);

/* The cgroup v2 path ("/libpod_parent/libpod-<id>") of a cgroup id (what
 * bpf_get_current_cgroup_id() gives), through open_by_handle_at() on the
 * cgroup v2 mount (as root). 0, or -1 (no such cgroup now, no mount, or a
 * path longer than size): nothing reported. */
int sp_cgroup_path_by_id(uint64_t id, char *buf, size_t size);

/* Close the directories; say what was waited for and never appeared. */
void sp_cgroup_filter_release(struct sp_cgroup_filter *f);

#endif
