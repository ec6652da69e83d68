// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/stream/spill.c: a pipe named by /proc/self/fd/N (what a
 * shell's <(...) gives) is kept whole and read again from its start; a
 * regular file, a directory and "-" are left to be read as they are.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "spill.h"

static void test_spill_pipe(void)
{
	char name[64], got[200000];
	static char want[150000];
	int p[2], fd;
	size_t i, n = 0;
	ssize_t r;
	pid_t child;

	for (i = 0; i < sizeof(want); i++)
		want[i] = (char)('a' + i % 26);
	CHECK(pipe(p) == 0);
	child = fork();
	if (child == 0) {	/* more than a pipe holds: the copy must read on */
		close(p[0]);
		if (write(p[1], want, sizeof(want)) != (ssize_t)sizeof(want))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	snprintf(name, sizeof(name), "/proc/self/fd/%d", p[0]);
	fd = sp_spill_stream(name);
	CHECK(fd >= 0);
	while (fd >= 0 && (r = read(fd, got + n, sizeof(got) - n)) > 0)
		n += (size_t)r;
	CHECK_EQ_U(n, sizeof(want));
	CHECK(n == sizeof(want) && !memcmp(got, want, n));
	/* read again from the start, as a format's sniffing does */
	CHECK(fd >= 0 && pread(fd, got, 4, 0) == 4 && !memcmp(got, "abcd", 4));
	if (fd >= 0)
		close(fd);
	close(p[0]);
	waitpid(child, NULL, 0);
}

static void test_spill_not_streams(void)
{
	char dir[] = "/tmp/test-spill-XXXXXX", file[64];
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(file, sizeof(file), "%s/f", dir);
	fd = open(file, O_CREAT | O_WRONLY | O_EXCL, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK(sp_spill_stream(file) == -2);
	CHECK(sp_spill_stream(dir) == -2);
	CHECK(sp_spill_stream("-") == -2);
	/* missing: the reader says so */
	CHECK(sp_spill_stream("/nonexistent/x") == -2);
	unlink(file);
	rmdir(dir);
}

static void test_spill_empty_pipe(void)
{
	char name[64], c;
	int p[2], fd;

	CHECK(pipe(p) == 0);
	close(p[1]);
	snprintf(name, sizeof(name), "/proc/self/fd/%d", p[0]);
	fd = sp_spill_stream(name);
	CHECK(fd >= 0);
	CHECK(fd >= 0 && read(fd, &c, 1) == 0);
	if (fd >= 0)
		close(fd);
	close(p[0]);
}

int main(void)
{
	TAP_RUN(test_spill_pipe);
	TAP_RUN(test_spill_not_streams);
	TAP_RUN(test_spill_empty_pipe);
	return TAP_DONE();
}
