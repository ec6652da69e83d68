// SPDX-License-Identifier: MIT
/*
 * The output directory of rotated segments and flight dumps (flight.h):
 * opened and checked, our files in it listed, created and capped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flight.h"
#include "flightP.h"
#include "sp.h"

/*
 * The directory's owner may delete and rename what we write, so it must be
 * us; another user who can write in it (group or world, with or without
 * the sticky bit) can plant the names we are about to use or fill it, so
 * we refuse that too and say why. The last component is opened without
 * following a symlink; a path ending in '/' is created (0700) when missing.
 */
int sp_outdir_open(const char *path)
{
	char *p = sp_xstrdup(path);
	size_t len = strlen(p);
	bool create = len && p[len - 1] == '/';
	struct stat st;
	int fd;

	while (len > 1 && p[len - 1] == '/')
		p[--len] = 0;
	if (create && mkdir(p, 0700) && errno != EEXIST) {
		sp_error_errno("cannot create the directory '%s'", path);
		goto fail;
	}
	fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			sp_error("'%s' is not a directory (a symlink is not followed)", path);
		else
			sp_error_errno("cannot open the directory '%s'", path);
		goto fail;
	}
	if (fstat(fd, &st)) {
		sp_error_errno("'%s'", path);
	} else if (st.st_uid != geteuid()) {
		sp_error("'%s' belongs to uid %u, not to us (uid %u): its owner could replace "
			 "what we write there; use a directory of our own", path,
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		sp_error("'%s' is writable by others (mode %04o): they could plant the names "
			 "we write (the sticky bit does not stop that); use a directory of our own",
			 path, (unsigned int)(st.st_mode & 07777));
	} else {
		free(p);
		return fd;
	}
	close(fd);
fail:
	free(p);
	return -1;
}

/*
 * A name's age. Its number compares as a number (segment-1000000 after
 * segment-999999; a dump's date), then the rest of its time (a dump's
 * THHMMSSZ). Dumps of one second (dump-…-signal-2 sorts before
 * dump-…-signal, dump-…-exit before dump-…-signal whichever came first)
 * go by when the file was last written: one dump is written whole before
 * the next begins. Sorted by name alone, a sp-record started again would
 * take a newer dump for an older one and --keep would delete it.
 */
struct aged {
	char *name;
	uint64_t num;
	char stamp[17];
	int64_t mtime;
};

static void age_of(struct aged *a, int dirfd, size_t plen)
{
	const char *p = a->name + plen;
	char *end;
	struct stat st;
	size_t n;

	a->num = strtoull(p, &end, 10);
	n = strcspn(end, "-.");
	if (n >= sizeof(a->stamp))
		n = sizeof(a->stamp) - 1;
	memcpy(a->stamp, end, n);
	a->stamp[n] = 0;
	a->mtime = fstatat(dirfd, a->name, &st, AT_SYMLINK_NOFOLLOW) ? 0 :
		   (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

static int cmp_aged(const void *x, const void *y)
{
	const struct aged *a = x, *b = y;
	int c;

	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if ((c = strcmp(a->stamp, b->stamp)))
		return c;
	if (a->mtime != b->mtime)
		return a->mtime < b->mtime ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void sort_by_age(struct sp_names *l, int dirfd, size_t plen)
{
	struct aged *v = sp_xcalloc(l->n, sizeof(*v));
	size_t i;

	for (i = 0; i < l->n; i++) {
		v[i].name = l->v[i];
		age_of(&v[i], dirfd, plen);
	}
	qsort(v, l->n, sizeof(*v), cmp_aged);
	for (i = 0; i < l->n; i++)
		l->v[i] = v[i].name;
	free(v);
}

void sp_names_add(struct sp_names *l, const char *name)
{
	sp_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = sp_xstrdup(name);
}

int sp_names_scan(struct sp_names *l, int dirfd, const char *prefix)
{
	size_t plen = strlen(prefix), len;
	struct dirent *de;
	DIR *d;
	int fd = dup(dirfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return sp_error_errno("cannot list the output directory");
	}
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (len > plen + 3 && !strncmp(de->d_name, prefix, plen) &&
		    !strcmp(de->d_name + len - 3, ".sp") && de->d_type != DT_DIR)
			sp_names_add(l, de->d_name);
	}
	closedir(d);
	if (l->n)
		sort_by_age(l, dirfd, plen);
	return 0;
}

void sp_names_trim(struct sp_names *l, int dirfd, unsigned int keep)
{
	size_t drop, i;

	if (!keep || l->n <= keep)
		return;
	drop = l->n - keep;
	for (i = 0; i < drop; i++) {
		if (unlinkat(dirfd, l->v[i], 0) && errno != ENOENT)
			sp_warn("cannot delete '%s' (--keep): %s", l->v[i], strerror(errno));
		free(l->v[i]);
	}
	memmove(l->v, l->v + drop, keep * sizeof(*l->v));
	l->n = keep;
}

void sp_names_release(struct sp_names *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int sp_create_in(int dirfd, const char *name)
{
	return openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}
