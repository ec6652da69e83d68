// SPDX-License-Identifier: MIT
/*
 * The binaries of a process in another mount namespace (a container), as
 * the host reaches them for the spans source (bpf_spansP.h).
 *
 * /proc/PID/exe and /proc/PID/maps name files as the process sees them;
 * on the host that path is another file (the host's own libruby) or none.
 * A uprobe is set on an inode, so any name that reaches the process's
 * file will do: the file is opened inside the process's root
 * (procroot.h: links resolved inside that tree, never the host's), kept
 * open for the whole recording, and named "/proc/self/fd/N", the name
 * libbpf, the kernel and the ELF readers are given. The same inode keeps
 * the same name, so a library is attached once per process as on the
 * host. What is opened is the container's to change: only a regular file
 * is kept, and what is read from it is bounded like any ELF file.
 *
 * A file is kept while a process sp-record still knows uses it, not for
 * the whole recording: each container run by podman or docker has its own
 * overlay mount, so its files are other inodes than the last one's, and
 * with containers coming and going a recording would otherwise hold a
 * descriptor for each of them, then refuse the next ones at
 * SP_BS_ROOT_FILES. An unused file is kept SP_BS_ROOT_IDLE_NS (10 s) in
 * case a process of the same container maps it again (a loop of short
 * processes), unless more than half of SP_BS_ROOT_FILES are open. Once
 * closed its number may name another file, so what was keyed by that name
 * goes with it: the hook file's shared link (destroyed by the reapers: a
 * uprobe's detach waits for the kernel, not to be done in the poll loop),
 * ld.so's offset, the marker locations' numbers (with their operand specs
 * and the name literals are read from) and the USDT locations read.
 *
 * The same holds, in sp-record's own mount namespace, for a file a process
 * mapped that is at its path no more (sp_bs_mapped_path()): a package
 * upgrade put a new libruby or python there under a running service (its
 * maps say "... (deleted)"), or the file's owner replaced it. Its probes
 * belong in the file the process maps, opened through
 * /proc/PID/map_files, not in whatever the path holds now.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf_spansP.h"
#include "procroot.h"
#include "safefile.h"
#include "sp.h"

static int keep(struct bs_ctx *c, int fd, const struct stat *st, const char *path)
{
	struct bs_root *r;
	size_t i;

	for (i = 0; i < c->nroots; i++)
		if (c->roots[i].dev == st->st_dev && c->roots[i].ino == st->st_ino) {
			close(fd);
			return c->roots[i].fd;
		}
	if (c->nroots >= SP_BS_ROOT_FILES) {
		/* (the printer escapes what it prints) */
		if (!c->roots_full)
			sp_warn("spans: more than %d files of containers' processes, or replaced "
				"since processes mapped them: '%s' and later ones get no probes",
				SP_BS_ROOT_FILES, path);
		c->roots_full = true;
		close(fd);
		return -1;
	}
	if (c->nroots == c->croots) {
		c->croots = c->croots ? 2 * c->croots : 16;
		c->roots = sp_xrealloc(c->roots, c->croots * sizeof(*c->roots));
	}
	r = &c->roots[c->nroots++];
	r->dev = st->st_dev;
	r->ino = st->st_ino;
	r->fd = fd;
	r->idle_ns = 0;
	snprintf(r->path, sizeof(r->path), "%s", path);
	return fd;
}

int sp_bs_host_path(struct bs_ctx *c, uint32_t pid, const char *path, char *out, size_t size)
{
	struct stat st;
	int root, fd;

	if (!sp_proc_other_mnt_ns(pid)) {
		snprintf(out, size, "%s", path);
		return 0;
	}
	root = sp_proc_root_dir(pid);
	if (root < 0)
		return -1;	/* gone */
	fd = sp_proc_root_open(root, path, false);
	close(root);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		sp_info("spans: '%s' of process %u cannot be reached in its root: no probes in it",
			path, pid);
		return -1;
	}
	fd = keep(c, fd, &st, path);
	if (fd < 0)
		return -1;
	snprintf(out, size, "/proc/self/fd/%d", fd);
	return 0;
}

/*
 * The file pid maps as path (inode ino), in our mount namespace: path when
 * the file there is that one (unless always), else src (its
 * /proc/PID/map_files entry, or /proc/PID/exe), opened and kept. By inode
 * alone: btrfs's stat() gives a subvolume's device where the maps give the
 * file system's.
 */
static int reach_mapped(struct bs_ctx *c, uint32_t pid, const char *path, uint64_t ino,
			const char *src, bool always, char *out, size_t size)
{
	char name[PATH_MAX];
	size_t n = strlen(path);
	const char *why = NULL;
	struct stat st;
	int fd;
	/* stat(), not open(): what is at a path another user owns may be a
	 * FIFO; the file itself is opened with the checks when attached */
	bool there = !stat(path, &st) && (uint64_t)st.st_ino == ino && S_ISREG(st.st_mode);

	if (!always && there) {
		snprintf(out, size, "%s", path);
		return 0;
	}
	/* the name shown: the path it was mapped from */
	if (n > 10 && !strcmp(path + n - 10, " (deleted)"))
		n -= 10;
	snprintf(name, sizeof(name), "%.*s", (int)n, path);
	fd = sp_safe_open(AT_FDCWD, src, NULL, &st, &why);
	if (fd >= 0 && (uint64_t)st.st_ino != ino) {
		close(fd);
		fd = -1;
		errno = ESTALE;	/* unmapped since its maps were read */
	}
	if (fd < 0 && errno == EPERM && !why && there) {
		/* map_files closed to us (CAP_BPF and CAP_PERFMON, no
		 * CAP_SYS_ADMIN): the path, the file its inode says */
		snprintf(out, size, "%s", path);
		return 0;
	}
	if (fd < 0) {
		if (errno == ENOENT || errno == ESTALE)
			return -1;	/* gone, or the mapping is */
		if (!why && errno == EPERM)
			why = "its /proc/PID/map_files is closed to sp-record (it has no "
			      "CAP_SYS_ADMIN)";
		if (!c->unmapped_warned || sp_verbose)
			(c->unmapped_warned ? sp_info : sp_warn)(
				"spans: pid %u maps '%s', which another file has replaced at its "
				"path, or none, and its mapping cannot be opened (%s): no probes "
				"in it%s", pid, name, why ? why : strerror(errno),
				c->unmapped_warned ? "" : " (later ones: with -v)");
		c->unmapped_warned = true;
		return -1;
	}
	fd = keep(c, fd, &st, name);
	if (fd < 0)
		return -1;
	snprintf(out, size, "/proc/self/fd/%d", fd);
	return 0;
}

int sp_bs_mapped_path(struct bs_ctx *c, uint32_t pid, const struct sp_proc_map *m, bool always,
		      char *out, size_t size)
{
	char src[96];

	if (sp_proc_other_mnt_ns(pid))
		return sp_bs_host_path(c, pid, m->path, out, size);
	snprintf(src, sizeof(src), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
	return reach_mapped(c, pid, m->path, m->ino, src, always, out, size);
}

int sp_bs_exe_path(struct bs_ctx *c, uint32_t pid, const char *exe, char *out, size_t size)
{
	char src[64];
	struct stat st;

	if (sp_proc_other_mnt_ns(pid))
		return sp_bs_host_path(c, pid, exe, out, size);
	snprintf(src, sizeof(src), "/proc/%u/exe", pid);
	if (stat(src, &st))
		return -1;	/* gone */
	return reach_mapped(c, pid, exe, (uint64_t)st.st_ino, src, false, out, size);
}

const char *sp_bs_root_name(const struct bs_ctx *c, const char *path)
{
	size_t i;
	int fd;

	if (sscanf(path, "/proc/self/fd/%d", &fd) != 1)
		return path;
	for (i = 0; i < c->nroots; i++)
		if (c->roots[i].fd == fd)
			return c->roots[i].path;
	return path;
}

/* The index in c->roots of the file a name given by sp_bs_host_path()
 * stands for, -1 for another name. */
static long root_of(const struct bs_ctx *c, const char *name)
{
	size_t i;
	int fd;

	if (strncmp(name, "/proc/self/fd/", 14) || sscanf(name + 14, "%d", &fd) != 1)
		return -1;
	for (i = 0; i < c->nroots; i++)
		if (c->roots[i].fd == fd)
			return (long)i;
	return -1;
}

static void mark_used(const struct bs_ctx *c, const struct bs_proc *p, bool *used)
{
	long r;
	size_t k;

	if ((r = root_of(c, p->exe)) >= 0)
		used[r] = true;
	for (k = 0; k < 2; k++)
		if ((r = root_of(c, p->rlib[k])) >= 0)
			used[r] = true;
	for (k = 0; k < p->natt; k++)
		if ((r = root_of(c, p->att[k]->bin)) >= 0)
			used[r] = true;
}

/* What was keyed by the name of a root closed now. */
static void forget_name(struct bs_ctx *c, const char *name)
{
	unsigned int i;

	for (i = 0; i < c->nshared;)
		if (!strcmp(c->shared[i].path, name)) {
			/* no process maps that file any more: its link goes */
			sp_bs_detach_link(c, (struct bs_link){ .fd = c->shared[i].fd }, false);
			c->shared[i] = c->shared[--c->nshared];
		} else {
			i++;
		}
	sp_bs_usdt_forget(c, name);
}

void sp_bs_roots_sweep(struct bs_ctx *c, uint64_t now)
{
	size_t i, k = 0, it;
	uint64_t pid, at;
	bool *used, crowded;
	char name[32];

	c->roots_idle = 0;
	if (!c->nroots)
		return;
	used = sp_xcalloc(c->nroots, sizeof(*used));
	/* the processes known: live, or gone and not forgotten yet */
	for (it = 0; sp_u64map_next(&c->by_pid, &it, &pid, &at);)
		mark_used(c, c->procs[at - 1], used);
	for (i = 0; i < c->ngone; i++)
		mark_used(c, c->gone[i], used);
	crowded = c->nroots > SP_BS_ROOT_FILES / 2;
	for (i = 0; i < c->nroots; i++) {
		struct bs_root *r = &c->roots[i];

		if (used[i] || (!crowded && (!r->idle_ns || now - r->idle_ns < SP_BS_ROOT_IDLE_NS))) {
			r->idle_ns = used[i] ? 0 : r->idle_ns ? r->idle_ns : now | 1;
			c->roots_idle += !used[i];
			c->roots[k++] = *r;
			continue;
		}
		snprintf(name, sizeof(name), "/proc/self/fd/%d", r->fd);
		forget_name(c, name);
		close(r->fd);
	}
	c->nroots = k;
	if (k < SP_BS_ROOT_FILES)
		c->roots_full = false;
	/* the idle ones looked at again once a second */
	c->roots_due = now + 1000000000;
	free(used);
}

void sp_bs_roots_release(struct bs_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nroots; i++)
		close(c->roots[i].fd);
	free(c->roots);
	c->roots = NULL;
	c->nroots = c->croots = 0;
}
