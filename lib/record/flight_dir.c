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
#include "spool_lock.h"
#include "stream/segdir.h"

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
 * A name's age. Segments and dumps carry a sequence number that goes on
 * from the highest one in the directory: their order, whatever the clock
 * did (set back, or jumping between two runs). The time in a dump's name
 * is for people. A dump named before dumps had a number
 * (dump-YYYYmmddTHHMMSSZ-TRIGGER[-N].sp) is older than every numbered one
 * (an earlier sp-record wrote it); among themselves such dumps go by the
 * time in their names, then, within one second (dump-…-signal-2 sorts
 * before dump-…-signal, dump-…-exit before dump-…-signal whichever came
 * first), by when each file was last written.
 */
struct aged {
	char *name;
	uint64_t seq;		/* 0: a dump named by its time alone */
	char stamp[17];
	int64_t mtime;
};

/* SEQ of a name: at least six digits, zero-padded to six, no leading zero
 * past that (one spelling per number: segdir.h), nonzero, then end. */
static const char *parse_seq(const char *p, uint64_t *seq)
{
	const char *q;
	uint64_t v = 0;
	size_t nd;

	for (q = p; *q >= '0' && *q <= '9'; q++)
		if (q - p < SP_NAME_SEQ_DIGITS_MAX)
			v = v * 10 + (uint64_t)(*q - '0');
	nd = (size_t)(q - p);
	if (nd < 6 || nd > SP_NAME_SEQ_DIGITS_MAX || (nd > 6 && *p == '0') || !v)
		return NULL;
	*seq = v;
	return q;
}

/* YYYYmmddTHHMMSSZ (the digits only: a name, not a date to trust) */
static bool is_stamp(const char *p)
{
	int i;

	for (i = 0; i < 16; i++) {
		char c = p[i];

		if (i == 8 ? c != 'T' : i == 15 ? c != 'Z' : (c < '0' || c > '9'))
			return false;
	}
	return true;
}

int sp_dump_name_parse(const char *name, uint64_t *seq, char *stamp)
{
	const char *p = name, *q;
	size_t len = strlen(name);

	if (strncmp(p, "dump-", 5) || len < 3 || strcmp(name + len - 3, ".sp"))
		return -1;
	p += 5;
	*seq = 0;
	q = parse_seq(p, seq);
	if (q && *q == '-')
		p = q + 1;
	else
		*seq = 0;	/* named by its time alone */
	/* the stamp, '-', a trigger's name of at least one character */
	if (!is_stamp(p) || p[16] != '-' || p + 17 >= name + len - 3)
		return -1;
	memcpy(stamp, p, 16);
	stamp[16] = 0;
	return 0;
}

/* Whether name is one of ours (prefix "dump-" or "segment-"), and its age. */
static bool age_of(struct aged *a, int dirfd, const char *prefix)
{
	struct stat st;

	a->stamp[0] = 0;
	a->mtime = 0;
	if (!strcmp(prefix, "segment-"))
		return !sp_segdir_parse_name(a->name, &a->seq);
	if (sp_dump_name_parse(a->name, &a->seq, a->stamp))
		return false;
	if (!a->seq && !fstatat(dirfd, a->name, &st, AT_SYMLINK_NOFOLLOW))
		a->mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return true;
}

static int cmp_aged(const void *x, const void *y)
{
	const struct aged *a = x, *b = y;
	int c;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	if ((c = strcmp(a->stamp, b->stamp)))
		return c;
	if (a->mtime != b->mtime)
		return a->mtime < b->mtime ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Keep our names only, oldest first; l->top: the highest number. */
static void sort_by_age(struct sp_names *l, int dirfd, const char *prefix)
{
	struct aged *v = sp_xcalloc(l->n, sizeof(*v));
	size_t i, n = 0;

	for (i = 0; i < l->n; i++) {
		v[n].name = l->v[i];
		if (age_of(&v[n], dirfd, prefix))
			n++;
		else
			free(l->v[i]);	/* not a name we write: left alone */
	}
	qsort(v, n, sizeof(*v), cmp_aged);
	for (i = 0; i < n; i++) {
		l->v[i] = v[i].name;
		if (v[i].seq > l->top)
			l->top = v[i].seq;
	}
	l->n = n;
	free(v);
}

void sp_names_add(struct sp_names *l, const char *name)
{
	sp_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = sp_xstrdup(name);
}

int sp_names_scan(struct sp_names *l, int dirfd, const char *prefix)
{
	return sp_names_scan_max(l, dirfd, prefix, SP_NAMES_SCAN_MAX);
}

int sp_names_scan_max(struct sp_names *l, int dirfd, const char *prefix, size_t max)
{
	size_t plen = strlen(prefix), len, seen = 0;
	struct dirent *de;
	DIR *d;
	int fd = dup(dirfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return sp_error_errno("cannot list the output directory");
	}
	rewinddir(d);	/* the offset is dirfd's too: an earlier scan may have moved it */
	while ((de = readdir(d))) {
		if (seen++ >= max) {
			l->cut = true;
			break;
		}
		len = strlen(de->d_name);
		if (len > plen + 3 && !strncmp(de->d_name, prefix, plen) &&
		    !strcmp(de->d_name + len - 3, ".sp") && de->d_type != DT_DIR)
			sp_names_add(l, de->d_name);
	}
	closedir(d);
	if (l->n)
		sort_by_age(l, dirfd, prefix);
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
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	/* held until it is closed: a follower tells when its writer is gone
	 * (spool_lock.h); a file system without locks only loses that */
	if (fd >= 0)
		sp_spool_lock(fd);
	return fd;
}
