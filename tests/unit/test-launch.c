// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/launch.c: a command held before exec, its exec errors,
 * its exit status as a shell reports it, the signal mask it starts with, and
 * the standard output it is given. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "launch.h"

/* Whether the command run by sp_launch has descriptor fd open: it exits 0
 * when it has. */
static int command_has_fd(int fd)
{
	char script[64];
	char *argv[] = { "sh", "-c", script, NULL };
	struct sp_launch l;
	int code;

	snprintf(script, sizeof(script), "[ -e /proc/$$/fd/%d ]", fd);
	if (sp_launch_prepare(&l, argv, NULL, -1) || sp_launch_go(&l))
		return -1;
	while (sp_launch_reap(&l, true) == 0)
		;
	code = sp_launch_exit_code(l.wstatus);
	sp_launch_release(&l);
	return code == 0;
}

/* The command inherits the descriptors the process was started with (here:
 * those open when they were noted), none it opened after, close-on-exec
 * or not. */
static void test_launch_inherits_only_noted(void)
{
	int before = open("/dev/null", O_RDONLY), after, high;

	CHECK(before >= 0);
	sp_launch_note_inherited();
	after = open("/dev/null", O_RDONLY);	/* not close-on-exec */
	CHECK(after >= 0);
	high = dup2(after, 700);		/* above every noted one */
	CHECK(high == 700);
	CHECK(command_has_fd(before) == 1);
	CHECK(command_has_fd(after) == 0);
	CHECK(command_has_fd(high) == 0);
	/* a descriptor between two noted ones */
	close(before);
	CHECK(dup2(after, before) == before);
	CHECK(command_has_fd(before) == 1);	/* its number was noted: passed on */
	close(after);
	close(high);
	close(before);
}

/* Where close_range(CLOSE_RANGE_CLOEXEC) is refused (a kernel before 5.11,
 * a seccomp filter), each descriptor is marked: run in a child whose
 * seccomp filter makes close_range fail with ENOSYS. */
static void test_launch_inherits_only_noted_without_close_range(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 436 /* close_range */, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int after;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(3);
		if (syscall(436, 3, 3, 0) == 0 || errno != ENOSYS)
			_exit(4);	/* the filter is not in force */
		sp_launch_note_inherited();
		after = open("/dev/null", O_RDONLY);
		if (after < 0 || dup2(after, 600) != 600)
			_exit(5);
		_exit(command_has_fd(after) == 0 && command_has_fd(600) == 0 &&
		      command_has_fd(2) == 1 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_U(WEXITSTATUS(status), 0);
}

static void test_launch_status(void)
{
	char *argv[] = { "sh", "-c", "exit 3", NULL };
	struct sp_launch l;
	struct pollfd p;

	CHECK(sp_launch_prepare(&l, argv, NULL, -1) == 0);
	CHECK(l.pid > 0);
	/* Held: it has not run yet. */
	CHECK(sp_launch_reap(&l, false) == 0);
	CHECK(sp_launch_go(&l) == 0);
	/* The pidfd becomes readable when it exits. */
	p.fd = l.pidfd;
	p.events = POLLIN;
	CHECK(poll(&p, 1, 10000) == 1);
	CHECK(sp_launch_reap(&l, true) == 1);
	CHECK_EQ_U(sp_launch_exit_code(l.wstatus), 3);
	sp_launch_release(&l);
}

static void test_launch_not_found(void)
{
	char *argv[] = { "/nonexistent/command", NULL };
	char *argv2[] = { "/etc/passwd", NULL };
	struct sp_launch l;

	CHECK(sp_launch_prepare(&l, argv, NULL, -1) == 0);
	CHECK(sp_launch_go(&l) == -1 && errno == ENOENT);
	CHECK(l.reaped);
	sp_launch_release(&l);
	CHECK(sp_launch_prepare(&l, argv2, NULL, -1) == 0);
	CHECK(sp_launch_go(&l) == -1 && errno == EACCES);
	sp_launch_release(&l);
}

static void test_launch_abort(void)
{
	char *argv[] = { "sh", "-c", "echo ran > /dev/null; exit 0", NULL };
	struct sp_launch l;

	CHECK(sp_launch_prepare(&l, argv, NULL, -1) == 0);
	sp_launch_abort(&l);
	CHECK(l.reaped);
	/* It never ran the command: the child's own exit code. */
	CHECK_EQ_U(sp_launch_exit_code(l.wstatus), 127);
	sp_launch_release(&l);
}

static void test_launch_signals(void)
{
	/* Killed by a signal: 128 + its number. */
	char *argv[] = { "sh", "-c", "kill -TERM $$", NULL };
	/* The mask sp-record blocked for its signalfd is not inherited. The
	 * exec'd program reads its own mask: a shell's ($$) is not that of
	 * the exec, and dash blocks signals around its own forks. */
	char *argv2[] = { "grep", "-q", "^SigBlk:[[:space:]]*0*$", "/proc/self/status", NULL };
	sigset_t block, orig;
	struct sp_launch l;

	CHECK(sp_launch_prepare(&l, argv, NULL, -1) == 0);
	CHECK(sp_launch_go(&l) == 0);
	CHECK(sp_launch_reap(&l, true) == 1);
	CHECK_EQ_U(sp_launch_exit_code(l.wstatus), 128 + SIGTERM);
	sp_launch_release(&l);

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &orig);
	CHECK(sp_launch_prepare(&l, argv2, &orig, -1) == 0);
	CHECK(sp_launch_go(&l) == 0);
	CHECK(sp_launch_reap(&l, true) == 1);
	CHECK_EQ_U(sp_launch_exit_code(l.wstatus), 0);
	sp_launch_release(&l);
	sigprocmask(SIG_SETMASK, &orig, NULL);
}

/* stdout_fd becomes the command's standard output: what it prints lands
 * there, not on the standard output sp-record writes records to. */
static void test_launch_stdout(void)
{
	char *argv[] = { "echo", "printed", NULL };
	char path[] = "/tmp/sp-test-launch-XXXXXX", got[32] = "";
	struct sp_launch l;
	int fd = mkstemp(path);
	ssize_t n;

	CHECK(fd >= 0);
	CHECK(sp_launch_prepare(&l, argv, NULL, fd) == 0);
	CHECK(sp_launch_go(&l) == 0);
	CHECK(sp_launch_reap(&l, true) == 1);
	CHECK_EQ_U(sp_launch_exit_code(l.wstatus), 0);
	sp_launch_release(&l);
	n = pread(fd, got, sizeof(got) - 1, 0);
	CHECK(n == 8);
	CHECK(!strcmp(got, "printed\n"));
	close(fd);
	unlink(path);
}

int main(void)
{
	TAP_RUN(test_launch_status);
	TAP_RUN(test_launch_inherits_only_noted);
	TAP_RUN(test_launch_inherits_only_noted_without_close_range);
	TAP_RUN(test_launch_not_found);
	TAP_RUN(test_launch_abort);
	TAP_RUN(test_launch_signals);
	TAP_RUN(test_launch_stdout);
	return TAP_DONE();
}
