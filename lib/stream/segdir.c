// SPDX-License-Identifier: MIT
/* The segments of a rotated recording's directory (segdir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safefile.h"
#include "segdir.h"
#include "sp.h"

#define PREFIX "segment-"
#define SUFFIX ".sp"
#define MIN_DIGITS 6
#define MAX_DIGITS 18	/* below 10^18: no overflow, no two spellings */

struct sp_segdir {
	int fd;
	uint64_t *seqs;
	size_t n, cap;
	bool others;		/* the last scan saw names that are no segment's */
};

int sp_segdir_parse_name(const char *name, uint64_t *seq)
{
	const char *p = name + strlen(PREFIX), *q;
	uint64_t v = 0;
	size_t nd;

	if (strncmp(name, PREFIX, strlen(PREFIX)))
		return -1;
	for (q = p; *q >= '0' && *q <= '9'; q++)
		if (q - p < MAX_DIGITS)
			v = v * 10 + (uint64_t)(*q - '0');
	nd = q - p;
	if (nd < MIN_DIGITS || nd > MAX_DIGITS || strcmp(q, SUFFIX) || !v)
		return -1;
	/* One spelling per number: six digits zero-padded, or no leading zero. */
	if (nd > MIN_DIGITS && *p == '0')
		return -1;
	*seq = v;
	return 0;
}

void sp_segdir_name(uint64_t seq, char *buf)
{
	snprintf(buf, SP_SEGDIR_NAME_MAX, PREFIX "%06" PRIu64 SUFFIX, seq);
}

struct sp_segdir *sp_segdir_open(const char *path)
{
	struct sp_segdir *d;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	d = sp_xcalloc(1, sizeof(*d));
	d->fd = fd;
	return d;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int sp_segdir_scan(struct sp_segdir *d, bool *cut)
{
	struct dirent *de;
	unsigned int names = 0;
	DIR *dir;
	int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (cut)
		*cut = false;
	if (fd < 0)
		return -1;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -1;
	}
	d->n = 0;
	d->others = false;
	errno = 0;
	while ((de = readdir(dir))) {
		uint64_t seq;

		if (++names > SP_SEGDIR_MAX_NAMES) {
			if (cut)
				*cut = true;
			break;
		}
		if (sp_segdir_parse_name(de->d_name, &seq)) {
			d->others |= strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
			continue;
		}
		sp_grow(&d->seqs, &d->cap, d->n + 1, sizeof(*d->seqs));
		d->seqs[d->n++] = seq;
	}
	closedir(dir);
	if (d->n > 1)
		qsort(d->seqs, d->n, sizeof(*d->seqs), cmp_u64);
	return 0;
}

bool sp_segdir_others(const struct sp_segdir *d)
{
	return d->others;
}

const uint64_t *sp_segdir_list(const struct sp_segdir *d, size_t *n)
{
	*n = d->n;
	return d->seqs;
}

bool sp_segdir_next(const struct sp_segdir *d, uint64_t after, uint64_t *seq)
{
	size_t lo = 0, hi = d->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->seqs[mid] <= after)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == d->n)
		return false;
	*seq = d->seqs[lo];
	return true;
}

int sp_segdir_open_segment(struct sp_segdir *d, uint64_t seq, const char **why)
{
	static const struct sp_safe_want want = { .flags = SP_SAFE_NOFOLLOW };
	char name[SP_SEGDIR_NAME_MAX];
	int fd, fl;

	*why = NULL;
	sp_segdir_name(seq, name);
	fd = sp_safe_open(d->fd, name, &want, NULL, why);
	if (fd < 0) {
		if (errno == ELOOP) {
			*why = "a symbolic link";
			errno = EPERM;
		}
		return -1;
	}
	/* A regular file: reads at its end return 0, never EAGAIN. Blocking
	 * reads all the same, as for any other input. */
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

void sp_segdir_free(struct sp_segdir *d)
{
	if (!d)
		return;
	close(d->fd);
	free(d->seqs);
	free(d);
}
