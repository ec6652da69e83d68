/* SPDX-License-Identifier: MIT */
/*
 * stderr_capture.h - for unit tests of what the code says: standard error
 * (fd 2) into a memfd between begin and end, then as a string.
 */
#ifndef SP_TEST_STDERR_CAPTURE_H
#define SP_TEST_STDERR_CAPTURE_H

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

struct stderr_capture {
	int fd, saved;
};

static inline void stderr_capture_begin(struct stderr_capture *c)
{
	fflush(stderr);
	c->saved = dup(2);
	c->fd = memfd_create("stderr", 0);
	dup2(c->fd, 2);
}

/* What went to stderr since begin, NUL-terminated, into out[size]. */
static inline void stderr_capture_end(struct stderr_capture *c, char *out, size_t size)
{
	ssize_t n;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	n = pread(c->fd, out, size - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(c->fd);
}

#endif
