// SPDX-License-Identifier: MIT
/* Start a command stopped before exec; let it go; reap it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"
#include "sp.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int sp_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Sorted; known once noted. */
static int inherited[SP_LAUNCH_MAX_INHERITED];
static unsigned int ninherited;
static bool inherited_known;

static int fd_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

void sp_launch_note_inherited(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;		/* no /proc: close-on-exec alone decides */
	ninherited = 0;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || fd < 0 || fd > INT32_MAX || fd == dirfd(d))
			continue;
		if (ninherited < SP_LAUNCH_MAX_INHERITED)
			inherited[ninherited++] = (int)fd;
	}
	closedir(d);
	qsort(inherited, ninherited, sizeof(*inherited), fd_cmp);
	inherited_known = true;
}

/*
 * [lo, hi] close-on-exec. Without close_range(CLOSE_RANGE_CLOEXEC) (a
 * kernel before 5.11, or a seccomp filter that refuses it) each one up to
 * RLIMIT_NOFILE (sp-record raises it: read now, not at the start), at most
 * 2^20: no descriptor can be above it.
 */
static void cloexec_range(unsigned int lo, unsigned int hi)
{
	unsigned int fd, limit = 1u << 20;
	struct rlimit rl;

	if (syscall(SYS_close_range, lo, hi, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < limit)
		limit = (unsigned int)rl.rlim_cur;
	for (fd = lo; fd <= hi && fd < limit; fd++)
		fcntl((int)fd, F_SETFD, FD_CLOEXEC);	/* EBADF for most: fine */
}

/* Ranges between the noted descriptors, so as not to walk every number up
 * to the limit; the child's own pipes are close-on-exec already. */
void sp_launch_own_fds_cloexec(void)
{
	unsigned int lo = 3, i;

	if (!inherited_known)
		return;
	for (i = 0; i < ninherited; i++) {
		unsigned int fd = (unsigned int)inherited[i];

		if (fd < lo)
			continue;
		if (fd > lo)
			cloexec_range(lo, fd - 1);
		lo = fd + 1;
	}
	cloexec_range(lo, ~0U);
}

static void child(int go, int err, char *const argv[], const sigset_t *mask, int out)
{
	sigset_t none;
	int e;
	char c = 0;

	/* sp-record blocks the signals it reads with a signalfd; the command
	 * starts with the mask sp-record itself was started with (exec resets
	 * handled signals; ignored ones stay ignored, as with any launcher). */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, mask ? mask : &none, NULL);
	while (read(go, &c, 1) < 0 && errno == EINTR)
		;
	if (c != 'g')		/* EOF: sp-record went away or aborted */
		_exit(127);
	close(go);
	/* Not the spool's pipe: the command's output elsewhere (dup2 clears
	 * close-on-exec on the copy). */
	if (out >= 0 && out != STDOUT_FILENO && dup2(out, STDOUT_FILENO) < 0) {
		e = errno;
		while (write(err, &e, sizeof(e)) < 0 && errno == EINTR)
			;
		_exit(126);
	}
	sp_launch_own_fds_cloexec();
	execvp(argv[0], argv);
	e = errno;
	while (write(err, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

int sp_launch_prepare(struct sp_launch *l, char *const argv[], const sigset_t *mask,
		      int stdout_fd)
{
	int go[2], err[2];
	pid_t pid;

	memset(l, 0, sizeof(*l));
	l->go_fd = l->err_fd = l->pidfd = -1;
	if (pipe2(go, O_CLOEXEC))
		return sp_error_errno("pipe");
	if (pipe2(err, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return sp_error_errno("pipe");
	}
	pid = fork();
	if (pid < 0) {
		sp_error_errno("cannot fork to run '%s'", argv[0]);
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return -1;
	}
	if (pid == 0) {
		close(go[1]);
		close(err[0]);
		child(go[0], err[1], argv, mask, stdout_fd);
	}
	close(go[0]);
	close(err[1]);
	l->pid = pid;
	l->go_fd = go[1];
	l->err_fd = err[0];
	l->pidfd = sp_pidfd_open(pid);
	return 0;
}

int sp_launch_go(struct sp_launch *l)
{
	ssize_t n;
	int e = 0;

	if (write(l->go_fd, "g", 1) != 1) {
		e = errno;
		sp_launch_reap(l, true);
		errno = e;
		return -1;
	}
	close(l->go_fd);
	l->go_fd = -1;
	/* EOF once exec succeeded (close-on-exec), else the child's errno. */
	do
		n = read(l->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	if (n == sizeof(e)) {
		sp_launch_reap(l, true);
		errno = e;
		return -1;
	}
	return 0;
}

void sp_launch_abort(struct sp_launch *l)
{
	if (l->go_fd >= 0) {
		close(l->go_fd);
		l->go_fd = -1;
	}
	if (l->pid > 0)
		sp_launch_reap(l, true);
}

int sp_launch_reap(struct sp_launch *l, bool block)
{
	pid_t r;

	if (l->reaped)
		return 1;
	if (l->pid <= 0)
		return 0;
	do
		r = waitpid(l->pid, &l->wstatus, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == l->pid) {
		l->reaped = true;
		return 1;
	}
	return 0;
}

int sp_launch_exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

void sp_launch_release(struct sp_launch *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	if (l->pidfd >= 0)
		close(l->pidfd);
	l->go_fd = l->err_fd = l->pidfd = -1;
}

bool sp_launch_find(const char *cmd, char *full, size_t size)
{
	const char *path = getenv("PATH"), *end;
	struct stat st;
	int len;

	if (strchr(cmd, '/')) {
		snprintf(full, size, "%s", cmd);
		return !stat(full, &st) && S_ISREG(st.st_mode);
	}
	for (; path && *path; path = end ? end + 1 : NULL) {
		end = strchr(path, ':');
		len = end ? (int)(end - path) : (int)strlen(path);
		/* an empty entry is the current directory, as for execvp() */
		if (snprintf(full, size, "%.*s%s%s", len, path, len ? "/" : "", cmd) >= (int)size)
			continue;
		if (!access(full, X_OK) && !stat(full, &st) && S_ISREG(st.st_mode))
			return true;
	}
	return false;
}
