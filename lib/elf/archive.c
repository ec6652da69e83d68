// SPDX-License-Identifier: MIT
/* The binary archive: one copy of each sampled ELF file per build-id. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "buildid.h"

#define MAX_COPY (4ull << 30)

char *sp_archive_path(const char *dir, const uint8_t *build_id, unsigned int len,
		      const char *suffix)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];
	char *p;

	if (!dir || !len || len > SP_BUILD_ID_MAX || len < 2)
		return NULL;
	sp_buildid_hex(build_id, len, hex);
	if (asprintf(&p, "%s/%.2s/%s%s", dir, hex, hex + 2, suffix ? suffix : "") < 0)
		return NULL;
	return p;
}

static int mkdir_p(char *path)
{
	char *s;

	for (s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*s = '/';
			return -1;
		}
		*s = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	return 0;
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

int sp_archive_module(const char *dir, uint64_t pid, uint64_t start, uint64_t end,
		      const char *path, const uint8_t *build_id, unsigned int len)
{
	char src[4200], *dst, *tmp = NULL, *slash;
	struct stat st;
	int in = -1, out = -1, ret = -1, e;

	dst = sp_archive_path(dir, build_id, len, NULL);
	if (!dst) {
		errno = EINVAL;
		return -1;
	}
	if (stat(dst, &st) == 0 && S_ISREG(st.st_mode)) {
		free(dst);
		return 0;
	}
	snprintf(src, sizeof(src), "/proc/%llu/map_files/%llx-%llx", (unsigned long long)pid,
		 (unsigned long long)start, (unsigned long long)end);
	in = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in < 0 && path && path[0] == '/') {
		snprintf(src, sizeof(src), "/proc/%llu/root%s", (unsigned long long)pid, path);
		in = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	}
	/* The process is gone already (short-lived): the path as we see it,
	 * used only if its build-id still matches (checked below). */
	if (in < 0 && path && path[0] == '/')
		in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in < 0)
		goto out;
	if (fstat(in, &st) < 0)
		goto out;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto out;
	}
	if (!fd_has_build_id(in, build_id, len)) {
		errno = EINVAL;
		goto out;
	}
	slash = strrchr(dst, '/');
	*slash = 0;
	if (mkdir_p(dst) < 0) {
		*slash = '/';
		goto out;
	}
	*slash = '/';
	if (asprintf(&tmp, "%s.tmp.%d", dst, (int)getpid()) < 0) {
		tmp = NULL;
		goto out;
	}
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		goto out;
	if (copy_fd(in, out) < 0 || fsync(out) < 0)
		goto out;
	/* The file could have changed under us: check the copy, not the source. */
	if (!fd_has_build_id(out, build_id, len)) {
		errno = EINVAL;
		goto out;
	}
	if (rename(tmp, dst) < 0)
		goto out;
	ret = 1;
out:
	e = errno;
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	if (ret < 0 && tmp)
		unlink(tmp);
	free(tmp);
	free(dst);
	errno = e;
	return ret;
}
