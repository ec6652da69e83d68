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
 */
#ifndef STACKPULSE_CGROUP_FILTER_H
#define STACKPULSE_CGROUP_FILTER_H

#include <argp.h>
#include <stdbool.h>
#include <stdint.h>

#define SP_CGROUP_FILTER_MAX	16	/* cgroups (and names) a recording is limited to */
#define SP_CGROUP_FILTER_DEPTH	32	/* ancestor levels the BPF filter looks at */

struct sp_cgroup_filter {
	/* What the options named (argp). */
	const char *cgroups[SP_CGROUP_FILTER_MAX];	/* --cgroup */
	unsigned int ncgroups;
	const char *containers[SP_CGROUP_FILTER_MAX];	/* --container */
	unsigned int ncontainers;
	/* After sp_cgroup_filter_resolve(): the directories. */
	unsigned int n;
	char *path[SP_CGROUP_FILTER_MAX];	/* "/libpod_parent/libpod-<id>" (malloc'd) */
	int fd[SP_CGROUP_FILTER_MAX];		/* the directory, O_RDONLY */
	uint64_t id[SP_CGROUP_FILTER_MAX];	/* its cgroup id (inode) */
	/* Named but not found at the start: looked for again while recording
	 * (sp_cgroup_filter_follow()); the cgroup v2 root held open for it. */
	bool cgroup_waits[SP_CGROUP_FILTER_MAX];
	bool container_waits[SP_CGROUP_FILTER_MAX];
	unsigned int nwaiting;
	int mfd;		/* valid when nwaiting */
	uint64_t next_look_ns, next_inspect_ns;
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

/* Look again for what is waited for, at most every 200 ms (now: CLOCK_MONOTONIC
 * ns; a name through podman or docker inspect at most every second): its
 * directories are appended to f's. Returns how many were added (0 when
 * nothing waits or it is not time yet). */
unsigned int sp_cgroup_filter_follow(struct sp_cgroup_filter *f, uint64_t now);

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
