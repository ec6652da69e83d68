/* SPDX-License-Identifier: MIT */
/*
 * timens_child.h - for unit tests of what reads clocks across time
 * namespaces: whether one can be made here, and a child in a new one.
 */
#ifndef SP_TEST_TIMENS_CHILD_H
#define SP_TEST_TIMENS_CHILD_H

#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Whether this kernel makes us a time namespace (root, CONFIG_TIME_NS). */
static inline bool timens_possible(void)
{
	pid_t pid = fork();
	int status;

	if (pid == 0)
		_exit(unshare(CLONE_NEWTIME) ? 1 : 0);
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* In a child process: make a time namespace with offsets (the text of
 * /proc/self/timens_offsets, e.g. "boottime 3600 0\n") for the children it
 * makes from now on. False when the kernel refused. */
static inline bool timens_make(const char *offsets, size_t len)
{
	int f;

	if (unshare(CLONE_NEWTIME))
		return false;
	f = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	if (f < 0 || write(f, offsets, len) != (ssize_t)len)
		return false;
	close(f);
	return true;
}

#endif
