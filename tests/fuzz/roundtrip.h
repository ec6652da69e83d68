/* SPDX-License-Identifier: MIT */
/*
 * roundtrip.h - what the record-stream fuzz targets check, whatever the
 * input: it is read (through a pipe, as sp-decode reads stdin) and every
 * record the reader hands out is written as a spool A. Then:
 *   A read back and written again is A, byte for byte, and reads cleanly;
 *   A as JSON lines read back and written as a spool is A again.
 * Any difference, a failed write, or a fatal error on A traps.
 */
#ifndef STACKPULSE_FUZZ_ROUNDTRIP_H
#define STACKPULSE_FUZZ_ROUNDTRIP_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "reader.h"
#include "writer.h"

static int rt_memfd(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		abort();
	return fd;
}

/* The whole content of fd, malloc'ed; *n its length. */
static uint8_t *rt_slurp(int fd, size_t *n)
{
	off_t len = lseek(fd, 0, SEEK_END);
	uint8_t *p = malloc(len + 1);
	size_t done = 0;

	if (!p || len < 0)
		abort();
	while (done < (size_t)len) {
		ssize_t k = pread(fd, p + done, len - done, done);

		if (k <= 0)
			abort();
		done += k;
	}
	*n = done;
	return p;
}

/* Read every record of in_fd (from its current offset) into a new memfd in
 * the given format; returns the memfd, *status the reader's status. */
static int rt_transcode(int in_fd, const char *name, enum sp_format fmt, int *status)
{
	int out = rt_memfd("out");
	struct sp_reader *r = sp_reader_open_fd(in_fd, name);
	struct sp_writer *w = sp_writer_new(out, "out", fmt);
	struct sp_record rec;

	while (sp_reader_next(r, &rec) > 0)
		if (sp_writer_put(w, &rec))
			__builtin_trap();	/* a record the reader accepted must be writable */
	if (sp_writer_close(w))
		__builtin_trap();
	*status = sp_reader_close(r);
	return out;
}

static void rt_same(int a_fd, int b_fd, const char *what)
{
	size_t na, nb, i;
	uint8_t *a = rt_slurp(a_fd, &na), *b = rt_slurp(b_fd, &nb);

	if (na != nb || memcmp(a, b, na)) {
		for (i = 0; i < na && i < nb && a[i] == b[i]; i++)
			;
		fprintf(stderr, "roundtrip: %s differs at byte %zu (%zu vs %zu bytes)\n", what, i,
			na, nb);
		__builtin_trap();
	}
	free(a);
	free(b);
}

/* Feed data through a pipe when it fits in one, else through a memfd. */
static int rt_input(const uint8_t *data, size_t size, const uint8_t *prefix, size_t plen)
{
	int p[2], fd;

	if (pipe2(p, O_CLOEXEC) == 0) {
		if (fcntl(p[1], F_SETPIPE_SZ, 1 << 20) >= (int)(size + plen) &&
		    write(p[1], prefix, plen) == (ssize_t)plen &&
		    write(p[1], data, size) == (ssize_t)size) {
			close(p[1]);
			return p[0];
		}
		close(p[0]);
		close(p[1]);
	}
	fd = rt_memfd("in");
	if (write(fd, prefix, plen) != (ssize_t)plen || write(fd, data, size) != (ssize_t)size)
		abort();
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static void rt_check(const uint8_t *data, size_t size, const uint8_t *prefix, size_t plen)
{
	int in, a, a2, j, d, st;

	in = rt_input(data, size, prefix, plen);
	a = rt_transcode(in, "input", SP_FORMAT_SPOOL, &st);
	close(in);

	lseek(a, 0, SEEK_SET);
	a2 = rt_transcode(a, "A", SP_FORMAT_SPOOL, &st);
	if (st == SP_EXIT_FATAL)
		__builtin_trap();	/* the writer wrote a spool its reader rejects */
	rt_same(a, a2, "spool -> spool");

	lseek(a, 0, SEEK_SET);
	j = rt_transcode(a, "A", SP_FORMAT_JSON, &st);
	lseek(j, 0, SEEK_SET);
	d = rt_transcode(j, "J", SP_FORMAT_SPOOL, &st);
	if (st == SP_EXIT_FATAL)
		__builtin_trap();
	rt_same(a, d, "spool -> JSON -> spool");

	close(a);
	close(a2);
	close(j);
	close(d);
}

#endif
