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
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf_spansP.h"
#include "escape.h"
#include "procroot.h"
#include "sp.h"

/* Files of other mount namespaces kept open at once: beyond, said once. */
#define SP_BS_ROOT_FILES 256

static int keep(struct bs_ctx *c, int fd, const struct stat *st, const char *path)
{
	char e[PATH_MAX];
	struct bs_root *r;
	size_t i;

	for (i = 0; i < c->nroots; i++)
		if (c->roots[i].dev == st->st_dev && c->roots[i].ino == st->st_ino) {
			close(fd);
			return c->roots[i].fd;
		}
	if (c->nroots >= SP_BS_ROOT_FILES) {
		sp_esc_text(e, sizeof(e), path, strlen(path), 0);
		if (!c->roots_full)
			sp_warn("spans: more than %d files of containers' processes: '%s' and "
				"later ones get no probes", SP_BS_ROOT_FILES, e);
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
	snprintf(r->path, sizeof(r->path), "%s", path);
	return fd;
}

int sp_bs_host_path(struct bs_ctx *c, uint32_t pid, const char *path, char *out, size_t size)
{
	char e[PATH_MAX];
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
		sp_esc_text(e, sizeof(e), path, strlen(path), 0);
		sp_info("spans: '%s' of process %u cannot be reached in its root: no probes in it",
			e, pid);
		return -1;
	}
	fd = keep(c, fd, &st, path);
	if (fd < 0)
		return -1;
	snprintf(out, size, "/proc/self/fd/%d", fd);
	return 0;
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

void sp_bs_roots_release(struct bs_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nroots; i++)
		close(c->roots[i].fd);
	free(c->roots);
	c->roots = NULL;
	c->nroots = c->croots = 0;
}
