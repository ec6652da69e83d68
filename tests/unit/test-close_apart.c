// SPDX-License-Identifier: MIT
/*
 * Unit tests of file descriptors closed apart (lib/record/close_apart.c):
 * a process keeps exactly the descriptors it names (in any order, with
 * repeats and negative ones); the closing child holds the descriptors it
 * was given until the caller has closed its own and no other (a reader of
 * any other pipe sees its end at once), then closes them and exits 0 (a
 * grandchild: the caller has no zombie meanwhile); and
 * links, NULL ones too, are destroyed. A recording that starts pauses the
 * closers of earlier ones between two closes until it has attached; with
 * no lock file to trust it waits for them to end instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/close_apart.h"
#include "tap.h"

#define NFDS	6

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* In a child: keep keep[0..n) of fds[0..NFDS), exit with a bit per fd
 * whose state is wrong (open where it should be closed, or the reverse). */
static void test_close_all_but(void)
{
	int fds[NFDS], keep[4], i, status = -1;
	pid_t pid;

	for (i = 0; i < NFDS; i++)
		fds[i] = open("/dev/null", O_RDONLY);
	/* out of order, a repeat, a negative one */
	keep[0] = fds[4];
	keep[1] = fds[1];
	keep[2] = -1;
	keep[3] = fds[4];
	pid = fork();
	if (!pid) {
		int bad = 0;

		sp_close_all_but(keep, 4);
		for (i = 0; i < NFDS; i++)
			if (is_open(fds[i]) != (i == 1 || i == 4))
				bad |= 1 << i;
		if (is_open(0) || is_open(1) || is_open(2))
			bad |= 1 << NFDS;
		_exit(bad);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_U(WEXITSTATUS(status), 0);
	for (i = 0; i < NFDS; i++)
		close(fds[i]);
}

/* 1 when fd reads its end (EOF) within ms, 0 if it does not, -1 if it
 * reads data or fails. */
static int ended(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) != 1)
		return 0;
	return read(fd, &c, 1) == 0 ? 1 : -1;
}

/* The pid of a child that ended within ms (its status in *status), or
 * -1: then the children are killed, so that a failing test ends. */
static pid_t reap_within(int ms, int *status)
{
	char path[64];
	pid_t pid;
	FILE *f;
	int i;

	for (i = 0; i < ms; i++) {
		pid = waitpid(-1, status, WNOHANG);
		if (pid)
			return pid;
		usleep(1000);
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	f = fopen(path, "r");
	while (f && fscanf(f, "%d", &i) == 1)
		kill((pid_t)i, SIGKILL);
	if (f)
		fclose(f);
	return -1;
}

static void test_close_apart(void)
{
	int given[2], other[2], fds[1], done, status = -1;
	pid_t pid;

	CHECK(!pipe2(given, O_CLOEXEC) && !pipe2(other, O_CLOEXEC));
	fds[0] = given[1];
	done = sp_fds_close_apart(fds, 1);
	CHECK(done >= 0);
	/* its parent is gone and reaped: only the closer is left */
	CHECK(waitpid(-1, NULL, WNOHANG) == 0);
	close(given[1]);
	close(other[1]);
	/* the child never had the other pipe's end; it still holds given's */
	CHECK_EQ_U(ended(other[0], 10000), 1);
	CHECK_EQ_U(ended(given[0], 200), 0);
	close(done);
	CHECK_EQ_U(ended(given[0], 10000), 1);
	pid = reap_within(10000, &status);
	CHECK(pid > 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(given[0]);
	close(other[0]);
}

static void test_links(void)
{
	struct bpf_link *links[3] = { NULL, NULL, NULL };

	sp_bpf_links_destroy(links, 3);	/* NULL links: nothing to do, no child */
	sp_bpf_links_destroy(links, 0);
	CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
}

/* A closer given the write ends of two new pipes, a and b (ours closed):
 * its end of the pipe to it, as sp_fds_close_apart() returns it. */
static int closer_of_two(int a[2], int b[2])
{
	int fds[2], done;

	CHECK(!pipe2(a, O_CLOEXEC) && !pipe2(b, O_CLOEXEC));
	fds[0] = a[1];
	fds[1] = b[1];
	done = sp_fds_close_apart(fds, 2);
	CHECK(done >= 0);
	close(a[1]);
	close(b[1]);
	return done;
}

static char lockfile[] = "/tmp/sp-test-closers-XXXXXX";

/* A closer given two descriptors, started closing while a recording
 * attaches: it closes nothing until the recording has attached (resumed),
 * then all. The recording did not wait for it. */
static void test_paused_while_attaching(void)
{
	int a[2], b[2], done, status = -1;

	done = closer_of_two(a, b);
	CHECK_EQ_U(sp_close_apart_wait_earlier(SP_CLOSERS_WAIT_NS), 0);	/* paused */
	close(done);	/* the closer goes on: to the lock */
	CHECK_EQ_U(ended(a[0], 500), 0);
	CHECK_EQ_U(ended(b[0], 10), 0);
	sp_close_apart_resume();
	CHECK_EQ_U(ended(a[0], 10000), 1);
	CHECK_EQ_U(ended(b[0], 10000), 1);
	CHECK(reap_within(10000, &status) > 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* only once a process: a closer of its own is not paused */
	CHECK_EQ_U(sp_close_apart_wait_earlier(SP_CLOSERS_WAIT_NS), 0);
	sp_close_apart_resume();
	close(a[0]);
	close(b[0]);
}

/* In a child whose first call it is: how many closers
 * sp_close_apart_wait_earlier() waited for, and in msg what it said. */
static int wait_earlier_in_child(char *msg, size_t size)
{
	int p[2], status = -1, n = -1;
	ssize_t got;
	pid_t rec;

	CHECK(!pipe(p));
	rec = fork();
	if (rec == 0) {
		dup2(p[1], 2);
		n = sp_close_apart_wait_earlier(SP_CLOSERS_WAIT_NS);
		_exit(n < 0 ? 255 : n > 254 ? 254 : n);
	}
	close(p[1]);
	got = read(p[0], msg, size - 1);
	msg[got > 0 ? got : 0] = '\0';
	close(p[0]);
	if (waitpid(rec, &status, 0) == rec && WIFEXITED(status))
		n = WEXITSTATUS(status);
	return n;
}

/* With a lock file that is not root's alone, a closer of an earlier
 * recording (root's, named sp-record-end) is waited for until it has
 * ended, and the recording says why, once. Closers of the tests run
 * before this one may still be at work: at least ours is counted. */
static void test_wait_without_lock(void)
{
	int p[2], status = -1, fd;
	char msg[512], link[sizeof(lockfile) + 8];
	pid_t kid;
	char c;

	fd = open(lockfile, O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && fchmod(fd, 0644) == 0);	/* others may read it: not trusted */
	close(fd);
	CHECK(!pipe(p));
	kid = fork();
	if (kid == 0) {
		prctl(PR_SET_NAME, (unsigned long)"sp-record-end", 0, 0, 0);
		close(p[0]);
		close(p[1]);	/* named: the test may look */
		usleep(300 * 1000);
		_exit(0);
	}
	close(p[1]);
	CHECK(read(p[0], &c, 1) == 0);
	close(p[0]);
	CHECK(wait_earlier_in_child(msg, sizeof(msg)) >= 1);
	CHECK(strstr(msg, lockfile) && strstr(msg, "open to others than root"));
	CHECK(strchr(msg, '\n') && strchr(msg, '\n') == strrchr(msg, '\n'));	/* once */
	CHECK(waitpid(kid, &status, WNOHANG) == kid);
	/* a link to root's own file is not followed */
	snprintf(link, sizeof(link), "%s.link", lockfile);
	CHECK(!chmod(lockfile, 0600) && !symlink(lockfile, link));
	sp_close_apart_lock_path(link);
	wait_earlier_in_child(msg, sizeof(msg));
	CHECK(strstr(msg, link) && strstr(msg, "a symbolic link"));
	sp_close_apart_lock_path(lockfile);
	unlink(link);
	/* a trusted one: nothing said */
	CHECK_EQ_U(wait_earlier_in_child(msg, sizeof(msg)), 0);
	CHECK(!strcmp(msg, ""));
	unlink(lockfile);
}

/* A recording that forked a child before it resumed the closers (its
 * command, not yet exec'd, holds the same open lock file): the closers go
 * on at its resume all the same, not when that child execs or after their
 * 10 s wait. */
static void test_resumed_with_child_forked(void)
{
	int a[2], b[2], told[2], go[2], done;
	pid_t rec, kid = -1;

	CHECK(!pipe(told) && !pipe(go));
	done = closer_of_two(a, b);
	rec = fork();
	if (rec == 0) {
		char c;

		close(a[0]);
		close(b[0]);
		close(done);
		if (sp_close_apart_wait_earlier(SP_CLOSERS_WAIT_NS) != 0)
			_exit(1);
		kid = fork();	/* holds the lock file's description, never execs */
		if (kid == 0) {
			sleep(60);
			_exit(0);
		}
		if (write(told[1], &kid, sizeof(kid)) != sizeof(kid) || read(go[0], &c, 1) != 1)
			_exit(1);
		sp_close_apart_resume();
		pause();
		_exit(0);
	}
	close(told[1]);
	close(go[0]);
	CHECK(read(told[0], &kid, sizeof(kid)) == sizeof(kid));
	close(done);	/* the closer goes on: to the lock */
	CHECK_EQ_U(ended(a[0], 300), 0);
	CHECK(write(go[1], "g", 1) == 1);
	CHECK_EQ_U(ended(a[0], 5000), 1);
	CHECK_EQ_U(ended(b[0], 5000), 1);
	if (kid > 0)
		kill(kid, SIGKILL);
	kill(rec, SIGKILL);
	close(told[0]);
	close(go[1]);
	close(a[0]);
	close(b[0]);
	/* rec, its kid (ours once rec is gone) and the closer */
	while (reap_within(10000, NULL) > 0)
		;
}

int main(void)
{
	/* the closer is a grandchild: ours to reap once its parent is gone */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	TAP_RUN(test_close_all_but);
	TAP_RUN(test_close_apart);
	TAP_RUN(test_links);
	if (geteuid() != 0) {
		TAP_SKIP(test_paused_while_attaching, "needs root (a closer is root's)");
		TAP_SKIP(test_wait_without_lock, "needs root (a closer is root's)");
		TAP_SKIP(test_resumed_with_child_forked, "needs root (a closer is root's)");
		return TAP_DONE();
	}
	/* a lock file of its own, as root makes it */
	close(mkstemp(lockfile));
	unlink(lockfile);
	sp_close_apart_lock_path(lockfile);
	/* first: their children's calls are their first */
	TAP_RUN(test_wait_without_lock);
	TAP_RUN(test_resumed_with_child_forked);
	TAP_RUN(test_paused_while_attaching);
	unlink(lockfile);
	return TAP_DONE();
}
