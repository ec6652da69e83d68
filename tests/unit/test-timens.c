// SPDX-License-Identifier: MIT
/*
 * Unit tests of our time namespace's clock offsets (lib/base/timens.c),
 * in real time namespaces (root: unshare(CLONE_NEWTIME)).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sp.h"
#include "tap.h"
#include "timens_child.h"

#define HOUR_NS 3600000000000ll

static uint64_t raw_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What a child in the new namespace saw: its offsets and clock, and 0 for
 * the process that made the namespace (its own is still the old one). */
struct seen {
	int64_t maker_mono, maker_boot, mono, boot;
	uint64_t now;
};

/* Makes a time namespace with offsets of an hour (monotonic) and two
 * hours and 5 ns (boottime), then a child in it: what they saw, through
 * fd. Exits 2 when the kernel refuses (no privilege, no CONFIG_TIME_NS). */
static void in_namespace(int fd)
{
	static const char offsets[] = "monotonic 3600 0\nboottime 7200 5\n";
	struct seen s = { 0 };
	pid_t kid;
	int status;

	if (!timens_make(offsets, sizeof(offsets) - 1))
		_exit(2);
	kid = fork();
	if (kid < 0)
		_exit(1);
	if (kid == 0) {
		s.mono = sp_timens_offset_ns(false);
		s.boot = sp_timens_offset_ns(true);
		s.now = sp_now_mono_ns();
		_exit(write(fd, &s, sizeof(s)) == (ssize_t)sizeof(s) ? 0 : 1);
	}
	if (waitpid(kid, &status, 0) != kid || !WIFEXITED(status) || WEXITSTATUS(status))
		_exit(1);
	/* after the child's read: it must not inherit what we read */
	s.maker_mono = sp_timens_offset_ns(false);
	s.maker_boot = sp_timens_offset_ns(true);
	_exit(write(fd, &s, sizeof(s)) == (ssize_t)sizeof(s) ? 0 : 1);
}

/* The offsets of a time namespace we are in, and the kernel's clock from
 * sp_now_mono_ns() there; none for the process that made it (it is not in
 * it) nor in the host's. */
static void test_timens_offsets(void)
{
	struct seen s, maker;
	uint64_t before, after;
	int p[2], status;
	pid_t pid;

	CHECK_EQ_U(pipe(p), 0);
	before = raw_mono_ns();
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		in_namespace(p[1]);
	}
	close(p[1]);
	CHECK_EQ_U(waitpid(pid, &status, 0), (uint64_t)pid);
	CHECK_EQ_U(WEXITSTATUS(status), 0);
	CHECK_EQ_U(read(p[0], &s, sizeof(s)), sizeof(s));
	CHECK_EQ_U(read(p[0], &maker, sizeof(maker)), sizeof(maker));
	close(p[0]);
	after = raw_mono_ns();
	CHECK_EQ_U(maker.maker_mono, 0);
	CHECK_EQ_U(maker.maker_boot, 0);
	CHECK_EQ_U(s.mono, HOUR_NS);
	CHECK_EQ_U(s.boot, 2 * HOUR_NS + 5);
	/* the kernel's clock, not the namespace's an hour on */
	CHECK(s.now >= before && s.now <= after);
}

int main(void)
{
	if (timens_possible())
		TAP_RUN(test_timens_offsets);
	else
		TAP_SKIP(test_timens_offsets, "no time namespace here (needs root and CONFIG_TIME_NS)");
	return TAP_DONE();
}
