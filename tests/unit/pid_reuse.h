/* SPDX-License-Identifier: MIT */
/*
 * pid_reuse.h - for unit tests of what holds a process (proc_pin.c and
 * its users): children that wait to be told to exit, and a pid given back
 * to another process (root: /proc/sys/kernel/ns_last_pid), as any user's
 * process may take a pid that was freed.
 */
#ifndef SP_TEST_PID_REUSE_H
#define SP_TEST_PID_REUSE_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child that waits for its pipe to close, then exits. */
static inline pid_t child_waiting(int *go)
{
	int fds[2];
	pid_t pid;
	char c;

	*go = -1;
	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

/* The next fork's pid is pid (root), or nothing: another process may take
 * it first on a busy machine. */
static inline pid_t fork_as(pid_t pid, int *go)
{
	char buf[32];
	int fd, len, tries;
	pid_t got;

	for (tries = 0; tries < 20; tries++) {
		fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		len = snprintf(buf, sizeof(buf), "%d", (int)pid - 1);
		if (write(fd, buf, (size_t)len) != len) {
			close(fd);
			return -1;
		}
		close(fd);
		got = child_waiting(go);
		if (got == pid)
			return got;
		close(*go);
		waitpid(got, NULL, 0);
	}
	return -1;
}

/* End the child old (told through go), reap it, and start another as old:
 * its pid, or -1 (said) when another process took it first. */
static inline pid_t end_and_reuse(pid_t old, int go, int *go2)
{
	pid_t reuse;

	close(go);
	waitpid(old, NULL, 0);
	reuse = fork_as(old, go2);
	if (reuse < 0)
		printf("# pid %d not reused (taken meanwhile): nothing checked\n", (int)old);
	return reuse;
}

/* Whether pids can be given back (fork_as): root, and the file there. */
static inline bool pid_reuse_possible(void)
{
	return geteuid() == 0 && access("/proc/sys/kernel/ns_last_pid", W_OK) == 0;
}

#endif
