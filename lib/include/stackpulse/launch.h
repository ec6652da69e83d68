/* SPDX-License-Identifier: MIT */
/*
 * launch.h - start a command stopped before exec, so that perf events can be
 * attached to its pid first; then let it exec, watch for its exit with a
 * pidfd, and turn its wait status into an exit status.
 */
#ifndef STACKPULSE_LAUNCH_H
#define STACKPULSE_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct sp_launch {
	pid_t pid;		/* the child, 0 before prepare */
	int go_fd;		/* write end: one byte lets the child exec */
	int err_fd;		/* read end: the child's errno if exec failed */
	int pidfd;		/* readable once the child exited, -1 if unsupported */
	bool reaped;
	int wstatus;		/* valid when reaped */
};

/*
 * Note the descriptors this process was started with: the command inherits
 * those (as from any launcher: a test harness's, a shell's), and none that
 * sp-record opened itself, even one a library left without close-on-exec
 * or opened in another thread as the command was forked. Called first
 * thing in main(); without it the command inherits whatever is not
 * close-on-exec. At most SP_LAUNCH_MAX_INHERITED are noted (the lowest).
 */
#define SP_LAUNCH_MAX_INHERITED 1024
void sp_launch_note_inherited(void);
/* In a child forked to exec a program (the command, a trigger command):
 * every descriptor above 2 not noted becomes close-on-exec. Async-signal-
 * safe (the parent has threads); nothing when none were noted. */
void sp_launch_own_fds_cloexec(void);

/*
 * Fork a child that waits (before exec) for sp_launch_go(). The child sets
 * its signal mask to *mask (NULL: nothing blocked), undoing what sp-record
 * blocked for its signalfd, and makes stdout_fd its standard output (-1:
 * the one it inherits). 0, or -1 (reported) when fork fails.
 */
int sp_launch_prepare(struct sp_launch *l, char *const argv[], const sigset_t *mask,
		      int stdout_fd);

/*
 * Let the child exec argv. Returns 0 once it has exec'd, or -1 with errno
 * set to the exec error (ENOENT: command not found; EACCES, ENOEXEC: not
 * executable) after reaping the child; nothing is reported.
 */
int sp_launch_go(struct sp_launch *l);

/* Give up before go: the child exits without running anything. */
void sp_launch_abort(struct sp_launch *l);

/* Reap the child if it has exited (block: wait for it). 1 reaped, 0 still running. */
int sp_launch_reap(struct sp_launch *l, bool block);

/* A wait status as a shell would report it: the exit code, or 128 + signal. */
int sp_launch_exit_code(int wstatus);

/* Close the descriptors (does not kill or wait for the child). */
void sp_launch_release(struct sp_launch *l);

/*
 * The file execvp() would run for cmd: cmd itself when it has a '/', else
 * the first executable regular file named cmd in a directory of $PATH.
 * true with full (size bytes) set, false when there is none.
 */
bool sp_launch_find(const char *cmd, char *full, size_t size);

/* An open pidfd for pid (pidfd_open), or -1 with errno set. */
int sp_pidfd_open(pid_t pid);

#endif
