// SPDX-License-Identifier: MIT
/* The binary archive: one copy of each sampled ELF file per build-id. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "buf.h"
#include "buildid.h"
#include "elffile.h"
#include "safefile.h"
#include "sp.h"

#define MAX_COPY (4ull << 30)

char *sp_archive_path(const char *dir, const uint8_t *build_id, unsigned int len,
		      const char *suffix)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];

	if (!dir || !len || len > SP_BUILD_ID_MAX || len < 2)
		return NULL;
	sp_buildid_hex(build_id, len, hex);
	return sp_xstrfmt("%s/%.2s/%s%s", dir, hex, hex + 2, suffix ? suffix : "");
}

static int copy_fd(int in, int out)
{
	char buf[1 << 16];
	uint64_t total = 0;
	ssize_t n, w, off;

	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		total += (uint64_t)n;
		if (total > MAX_COPY) {
			errno = EFBIG;
			return -1;
		}
		for (off = 0; off < n; off += w) {
			w = write(out, buf + off, n - off);
			if (w < 0) {
				if (errno == EINTR) {
					w = 0;
					continue;
				}
				return -1;
			}
		}
	}
	return 0;
}

static bool fd_has_build_id(int fd, const uint8_t *id, unsigned int len)
{
	struct sp_elf_info info;
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (sp_elf_info_file(path, &info) < 0)
		return false;
	return info.build_id_len == len && !memcmp(info.build_id, id, len);
}

/* DIR, checked (made if missing), once per directory and process: its
 * descriptor, or -1 when it is refused (said once). */
static int archive_dir(const char *dir)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char *last;
	static int last_fd = -1;
	char why[PATH_MAX + 128];
	int fd;

	pthread_mutex_lock(&lock);
	if (last && !strcmp(last, dir)) {
		fd = last_fd >= 0 ? fcntl(last_fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (last_fd < 0)
			errno = EPERM;
		pthread_mutex_unlock(&lock);
		return fd;
	}
	fd = sp_safe_dir(AT_FDCWD, dir, SP_SAFE_MKDIR, 0755, why, sizeof(why));
	if (fd < 0 && errno != EPERM) {
		pthread_mutex_unlock(&lock);
		return -1;	/* perhaps not for long (the caller says so) */
	}
	if (fd < 0)
		sp_warn("archive directory '%s' not used: %s", dir, why);
	free(last);
	if (last_fd >= 0)
		close(last_fd);
	last = sp_xstrdup(dir);
	last_fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	pthread_mutex_unlock(&lock);
	if (fd < 0)
		errno = EPERM;
	return fd;
}

/* DIR/xx was refused: true the first time (for one DIR at a time). */
static bool sub_refused(const char *dir, const char *sub)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t said[4];
	static char *last;
	unsigned int i = (unsigned int)strtoul(sub, NULL, 16) & 255;
	bool first;

	pthread_mutex_lock(&lock);
	if (!last || strcmp(last, dir)) {
		free(last);
		last = sp_xstrdup(dir);
		memset(said, 0, sizeof(said));
	}
	first = !(said[i / 64] & (1ull << (i % 64)));
	said[i / 64] |= 1ull << (i % 64);
	pthread_mutex_unlock(&lock);
	return first;
}

int sp_archive_module(const char *dir, uint64_t pid, uint64_t start, uint64_t end,
		      const char *path, const uint8_t *build_id, unsigned int len)
{
	char src[4200], hex[2 * SP_BUILD_ID_MAX + 1], sub[3], why[256];
	int in = -1, dfd = -1, sfd = -1, ret = -1, e;
	struct sp_safe_tmp t = { .fd = -1 };
	const char *name;
	struct stat st;
	bool named;

	if (!dir || len < 2 || len > SP_BUILD_ID_MAX) {
		errno = EINVAL;
		return -1;
	}
	sp_buildid_hex(build_id, len, hex);
	memcpy(sub, hex, 2);
	sub[2] = 0;
	name = hex + 2;
	dfd = archive_dir(dir);
	if (dfd < 0)
		return errno == EPERM ? SP_ARCHIVE_REFUSED : -1;
	/* DIR/xx, ours and checked as DIR is: nobody else can put a name in it. */
	sfd = sp_safe_dir(dfd, sub, SP_SAFE_MKDIR, 0755, why, sizeof(why));
	if (sfd < 0) {
		if (errno == EPERM) {
			if (sub_refused(dir, sub))
				sp_warn("archive directory '%s/%s' not used: %s", dir, sub, why);
			ret = SP_ARCHIVE_REFUSED;
		}
		goto out;
	}
	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		ret = 0;
		goto out;
	}
	/* The image, looked at before it is opened: a device or a FIFO is never
	 * opened (sp_safe_open()); map_files and /proc/PID/root are links. */
	snprintf(src, sizeof(src), "/proc/%llu/map_files/%llx-%llx", (unsigned long long)pid,
		 (unsigned long long)start, (unsigned long long)end);
	in = sp_safe_open(AT_FDCWD, src, NULL, &st, NULL);
	/* A deleted file's or a memfd's path names no file, or one anyone may
	 * have made since: map_files only. */
	named = path && path[0] == '/' && !sp_elf_path_unlinked(path);
	if (in < 0 && errno != EPERM && named) {
		snprintf(src, sizeof(src), "/proc/%llu/root%s", (unsigned long long)pid, path);
		in = sp_safe_open(AT_FDCWD, src, NULL, &st, NULL);
	}
	/* The process is gone already (short-lived): the path as we see it,
	 * used only if its build-id still matches (checked below). */
	if (in < 0 && errno != EPERM && named)
		in = sp_safe_open(AT_FDCWD, path, NULL, &st, NULL);
	if (in < 0) {
		if (errno == EPERM)
			errno = EINVAL;
		goto out;
	}
	if (!fd_has_build_id(in, build_id, len)) {
		errno = EINVAL;
		goto out;
	}
	/* Readable by others only if the original was (DIR is 0755). */
	if (sp_safe_tmp_open(&t, sfd, st.st_mode & S_IROTH ? 0644 : 0600) < 0)
		goto out;
	if (copy_fd(in, t.fd) < 0)
		goto out;
	/* The file could have changed under us: check the copy, not the source. */
	if (!fd_has_build_id(t.fd, build_id, len)) {
		errno = EINVAL;
		goto out;
	}
	if (sp_safe_tmp_commit(&t, name) < 0)
		goto out;
	ret = 1;
out:
	e = errno;
	if (ret < 0)
		sp_safe_tmp_abort(&t);
	if (in >= 0)
		close(in);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	errno = e;
	return ret;
}
