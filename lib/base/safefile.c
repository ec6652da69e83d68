// SPDX-License-Identifier: MIT
/* Opening and creating files where another user may have put something. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "safefile.h"
#include "sp.h"

#define MAX_LINKS	40

/* ---- files ---- */

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "not a regular file: a FIFO";
	case S_IFCHR:
		return "not a regular file: a character device";
	case S_IFBLK:
		return "not a regular file: a block device";
	case S_IFSOCK:
		return "not a regular file: a socket";
	case S_IFDIR:
		return "not a regular file: a directory";
	}
	return "not a regular file";
}

static const char *file_check(const struct stat *st, const struct sp_safe_want *w)
{
	if (!S_ISREG(st->st_mode))
		return type_name(st->st_mode);
	if (!w)
		return NULL;
	if (w->flags & SP_SAFE_OWNER) {
		if (st->st_uid != 0 && st->st_uid != w->owner)
			return "owned by another user";
		/* Root's file with a second name: a link another user made to it. */
		if (st->st_uid == 0 && w->owner != 0 && st->st_nlink != 1)
			return "a hard link to a file of root";
	}
	if ((w->flags & SP_SAFE_PRIVATE) && (st->st_mode & (S_IWGRP | S_IWOTH)))
		return "writable by group or others";
	if (w->max_size && (uint64_t)st->st_size > w->max_size)
		return "too large";
	return NULL;
}

static int refuse(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	errno = EPERM;
	return -1;
}

int sp_safe_open(int dirfd, const char *path, const struct sp_safe_want *w, struct stat *st,
		 const char **why)
{
	int nofollow = w && (w->flags & SP_SAFE_NOFOLLOW) ? O_NOFOLLOW : 0;
	const int rd = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	struct stat s1, s2;
	const char *bad;
	char proc[64];
	int pfd, fd;

	if (why)
		*why = NULL;
	/* O_PATH opens nothing: a FIFO or a device is only looked at. */
	pfd = openat(dirfd, path, O_PATH | O_CLOEXEC | nofollow);
	if (pfd < 0)
		return -1;
	if (fstat(pfd, &s1) < 0) {
		close(pfd);
		return -1;
	}
	if (st)
		*st = s1;
	bad = file_check(&s1, w);
	if (bad) {
		close(pfd);
		return refuse(why, bad);
	}
	/* The same inode, opened for reading. Without /proc, by name again
	 * (then compared below). */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, rd);
	if (fd < 0 && errno == ENOENT)
		fd = openat(dirfd, path, rd | nofollow);
	close(pfd);
	if (fd < 0)
		return -1;
	if (fstat(fd, &s2) < 0) {
		close(fd);
		return -1;
	}
	if (st)
		*st = s2;
	bad = s2.st_dev != s1.st_dev || s2.st_ino != s1.st_ino ? "changed while it was opened" :
	      file_check(&s2, w);
	if (bad) {
		close(fd);
		return refuse(why, bad);
	}
	return fd;
}

int sp_safe_read_lines(int fd, struct sp_safe_lines *l,
		       int (*fn)(void *ctx, char *line, size_t len), void *ctx)
{
	const size_t bufsize = 1 << 16;
	char *buf, *line, *p, *end, *nl;
	bool skipping = false;
	size_t len = 0, seg;
	ssize_t n;
	int ret = 0;

	l->bytes = l->lines = l->long_lines = 0;
	l->cut = false;
	buf = sp_xmalloc(bufsize + l->max_line + 1);
	line = buf + bufsize;
	for (;;) {
		size_t want = bufsize;

		if (l->max_bytes && l->bytes >= l->max_bytes) {
			char c;

			while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
				;
			l->cut = n > 0;
			if (l->cut)
				len = 0;	/* a line cut short is not given */
			break;
		}
		if (l->max_bytes && l->max_bytes - l->bytes < want)
			want = (size_t)(l->max_bytes - l->bytes);
		n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -1;
			break;
		}
		if (n == 0)
			break;
		l->bytes += (uint64_t)n;
		for (p = buf, end = buf + n; p < end; ) {
			nl = memchr(p, '\n', (size_t)(end - p));
			seg = (size_t)((nl ? nl : end) - p);
			if (!skipping && seg > l->max_line - len) {
				skipping = true;
				len = 0;
			}
			if (!skipping) {
				memcpy(line + len, p, seg);
				len += seg;
			}
			if (!nl)
				break;
			p = nl + 1;
			if (skipping) {
				l->long_lines++;
				skipping = false;
				continue;
			}
			line[len] = 0;
			l->lines++;
			ret = fn(ctx, line, len);
			len = 0;
			if (ret)
				goto out;
		}
	}
	if (!ret && skipping && !l->cut)
		l->long_lines++;
	else if (!ret && len) {
		line[len] = 0;
		l->lines++;
		ret = fn(ctx, line, len);
	}
out:
	free(buf);
	return ret;
}

/* ---- directories ---- */

const char *sp_safe_dir_check(const struct stat *st)
{
	if (!S_ISDIR(st->st_mode))
		return "not a directory";
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return "owned by another user";
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return "writable by group or others";
	return NULL;
}

static void say(char *why, size_t size, const char *where, const char *what,
		const struct stat *st)
{
	if (!why || !size)
		return;
	if (st)
		snprintf(why, size, "'%s' is %s (uid %u, mode %04o)", *where ? where : ".", what,
			 (unsigned int)st->st_uid, (unsigned int)(st->st_mode & 07777));
	else
		snprintf(why, size, "'%s': %s", *where ? where : ".", what);
}

/* "/", checked. */
static int open_root(char *why, size_t size)
{
	struct stat st;
	const char *bad;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		say(why, size, "/", strerror(errno), NULL);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	bad = sp_safe_dir_check(&st);
	if (bad) {
		say(why, size, "/", bad, &st);
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* where += "/" name */
static void append(struct sp_buf *where, const char *name)
{
	if (where->len && where->p[where->len - 1] != '/')
		sp_buf_addch(where, '/');
	sp_buf_puts(where, name);
}

/*
 * Where sp_safe_dir() starts: at "/", checked, for an absolute path or one
 * relative to the working directory (made absolute), else at dirfd. The
 * descriptor, with *rest the path to walk from there (a new string).
 */
static int walk_start(int dirfd, const char *path, char **rest, struct sp_buf *where,
		      char *why, size_t size)
{
	char cwd[PATH_MAX];

	if (path[0] != '/' && dirfd != AT_FDCWD) {
		*rest = sp_xstrdup(path);
		return fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	}
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		say(why, size, path, "cannot find the working directory", NULL);
		return -1;
	}
	*rest = sp_xstrfmt("%s/%s", path[0] == '/' ? "" : cwd, path);
	sp_buf_puts(where, "/");
	return open_root(why, size);
}

int sp_safe_dir(int dirfd, const char *path, unsigned int flags, mode_t mode, char *why,
		size_t size)
{
	struct sp_buf where = SP_BUF_INIT;	/* the path walked, for messages */
	char target[PATH_MAX], *rest = NULL, *p, *name;
	int cur, fd = -1, links = 0, e;
	size_t mark;
	struct stat st;
	const char *bad;
	ssize_t n;

	if (why && size)
		why[0] = 0;
	if (!path || !*path) {
		errno = ENOENT;
		return -1;
	}
	cur = walk_start(dirfd, path, &rest, &where, why, size);
	if (cur < 0)
		goto fail;
	p = rest;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		name = p;
		p += strcspn(p, "/");
		if (*p)
			*p++ = 0;
		if (!strcmp(name, "."))
			continue;
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && (flags & SP_SAFE_MKDIR)) {
			if (mkdirat(cur, name, mode) < 0 && errno != EEXIST) {
				e = errno;
				append(&where, name);
				say(why, size, sp_buf_str(&where), strerror(e), NULL);
				errno = e;
				goto fail;
			}
			fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		mark = where.len;
		append(&where, name);
		if (fd < 0 || fstat(fd, &st) < 0) {
			e = errno;
			say(why, size, sp_buf_str(&where), strerror(e), NULL);
			errno = e;
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			/* Its directory is trusted; the link must be as well. */
			if (st.st_uid != 0 && st.st_uid != geteuid()) {
				say(why, size, sp_buf_str(&where), "a symbolic link owned by another user",
				    &st);
				errno = EPERM;
				goto fail;
			}
			n = readlinkat(fd, "", target, sizeof(target) - 1);
			if (n <= 0 || ++links > MAX_LINKS) {
				e = n <= 0 ? errno : ELOOP;
				say(why, size, sp_buf_str(&where), strerror(e), NULL);
				errno = e;
				goto fail;
			}
			target[n] = 0;
			close(fd);
			fd = -1;
			/* The target takes the link's place in what is left. */
			p = sp_xstrfmt("%s/%s", target, p);
			free(rest);
			rest = p;
			sp_buf_setlen(&where, mark);
			if (target[0] == '/') {
				close(cur);
				cur = open_root(why, size);
				if (cur < 0)
					goto fail;
				sp_buf_reset(&where);
				sp_buf_puts(&where, "/");
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			say(why, size, sp_buf_str(&where), strerror(ENOTDIR), NULL);
			errno = ENOTDIR;
			goto fail;
		}
		bad = sp_safe_dir_check(&st);
		if (bad) {
			say(why, size, sp_buf_str(&where), bad, &st);
			errno = EPERM;
			goto fail;
		}
		close(cur);
		cur = fd;
		fd = -1;
	}
	free(rest);
	sp_buf_release(&where);
	return cur;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	if (cur >= 0)
		close(cur);
	free(rest);
	sp_buf_release(&where);
	errno = e;
	return -1;
}

/* ---- creating ---- */

static unsigned int rnd(void)
{
	static unsigned int seq;
	unsigned int r;
	struct timespec ts;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r))
		return r;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned int)ts.tv_nsec * 2654435761u + __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
}

int sp_safe_tmp_open(struct sp_safe_tmp *t, int dirfd, mode_t mode)
{
	int i;

	t->dirfd = dirfd;
	t->fd = -1;
	for (i = 0; i < 100; i++) {
		snprintf(t->name, sizeof(t->name), ".sp-tmp.%d.%08x", (int)getpid(), rnd());
		t->fd = openat(dirfd, t->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			       O_CLOEXEC | O_NOCTTY, mode);
		if (t->fd >= 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

void sp_safe_tmp_abort(struct sp_safe_tmp *t)
{
	int e = errno;

	if (t->fd >= 0) {
		close(t->fd);
		t->fd = -1;
		unlinkat(t->dirfd, t->name, 0);
	}
	errno = e;
}

int sp_safe_tmp_commit(struct sp_safe_tmp *t, const char *name)
{
	int fd = t->fd;

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	if (fsync(fd) < 0) {
		sp_safe_tmp_abort(t);
		return -1;
	}
	t->fd = -1;
	if (close(fd) < 0 || renameat(t->dirfd, t->name, t->dirfd, name) < 0) {
		int e = errno;

		unlinkat(t->dirfd, t->name, 0);
		errno = e;
		return -1;
	}
	return 0;
}

int sp_safe_write_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	ssize_t w;

	while (n) {
		w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			return -1;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int sp_safe_write_file(int dirfd, const char *name, const void *p, size_t n, mode_t mode)
{
	struct sp_safe_tmp t;

	if (sp_safe_tmp_open(&t, dirfd, mode) < 0)
		return -1;
	if (sp_safe_write_all(t.fd, p, n) < 0) {
		sp_safe_tmp_abort(&t);
		return -1;
	}
	return sp_safe_tmp_commit(&t, name);
}

/* ---- the cache directory ---- */

char *sp_cache_dir(const char *sub)
{
	const char *d = getenv("SP_CACHE_DIR"), *slash = sub ? "/" : "";
	if (!sub)
		sub = "";
	if (d && !*d) {
		errno = ENOENT;	/* the cache is off */
		return NULL;
	}
	if (d)
		return sp_xstrfmt("%s%s%s", d, slash, sub);
	if ((d = getenv("XDG_CACHE_HOME")) && *d == '/')
		return sp_xstrfmt("%s/stackpulse%s%s", d, slash, sub);
	if ((d = getenv("HOME")) && *d == '/')
		return sp_xstrfmt("%s/.cache/stackpulse%s%s", d, slash, sub);
	errno = ENOENT;
	return NULL;
}

/* Each refused directory is named once per process. */
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static char *warned[16];

static void warn_once(const char *dir, const char *why)
{
	unsigned int i;
	bool say_it = true;

	pthread_mutex_lock(&warned_lock);
	for (i = 0; i < sizeof(warned) / sizeof(*warned) && warned[i]; i++)
		if (!strcmp(warned[i], dir))
			say_it = false;
	if (say_it && i < sizeof(warned) / sizeof(*warned))
		warned[i] = sp_xstrdup(dir);
	pthread_mutex_unlock(&warned_lock);
	if (say_it)
		sp_warn("cache directory '%s' not used: %s", dir, why);
}

int sp_cache_dir_open(const char *dir, bool create)
{
	char why[PATH_MAX + 128];
	int fd;

	fd = sp_safe_dir(AT_FDCWD, dir, create ? SP_SAFE_MKDIR : 0, 0700, why, sizeof(why));
	if (fd < 0 && errno == EPERM) {
		warn_once(dir, why);
		errno = EPERM;
	}
	return fd;
}
