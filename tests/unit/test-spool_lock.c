// SPDX-License-Identifier: MIT
/* Unit tests for lib/stream/spool_lock.c: a follower tells a writer that is
 * gone, however it ended, from one that is quiet. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spool_lock.h"
#include "tap.h"

static char path[] = "/tmp/sp-spool-lock-XXXXXX";

static void test_lock_held_and_dropped(void)
{
	int w = open(path, O_WRONLY | O_CLOEXEC), r = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(w >= 0 && r >= 0);
	CHECK_EQ_U(sp_spool_locked(r), 0);	/* never locked */
	CHECK_EQ_U(sp_spool_lock(w), 0);
	CHECK_EQ_U(sp_spool_locked(r), 1);
	/* another writer of the file cannot take it */
	{
		int w2 = open(path, O_WRONLY | O_CLOEXEC);

		CHECK(sp_spool_lock(w2) == -1);
		close(w2);
	}
	/* closing another descriptor of the file, in the writer's own process,
	 * keeps it (a classic POSIX lock would be gone) */
	{
		int other = open(path, O_RDONLY | O_CLOEXEC);

		close(other);
		CHECK_EQ_U(sp_spool_locked(r), 1);
	}
	close(w);
	CHECK_EQ_U(sp_spool_locked(r), 0);
	/* a read lock, which any reader may take, is no writer */
	{
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		int other = open(path, O_RDONLY | O_CLOEXEC);

		CHECK(fcntl(other, F_OFD_SETLK, &fl) == 0);
		CHECK_EQ_U(sp_spool_locked(r), 0);
		close(other);
	}
	close(r);
}

/* A writer killed with SIGKILL: its lock is gone with it. */
static void test_lock_of_killed_writer(void)
{
	int r = open(path, O_RDONLY | O_CLOEXEC), go[2], status;
	char c;
	pid_t pid;

	CHECK(r >= 0 && pipe(go) == 0);
	pid = fork();
	if (pid == 0) {
		int w = open(path, O_WRONLY);

		if (w < 0 || sp_spool_lock(w))
			_exit(1);
		if (write(go[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(go[1]);
	CHECK(read(go[0], &c, 1) == 1);
	CHECK_EQ_U(sp_spool_locked(r), 1);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
	CHECK_EQ_U(sp_spool_locked(r), 0);
	close(go[0]);
	close(r);
}

/* A descriptor that cannot be asked: "cannot tell", not "gone". */
static void test_lock_cannot_tell(void)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	close(fd);
	CHECK(sp_spool_locked(fd) == -1);
}

int main(void)
{
	int fd = mkstemp(path);

	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	TAP_RUN(test_lock_held_and_dropped);
	TAP_RUN(test_lock_of_killed_writer);
	TAP_RUN(test_lock_cannot_tell);
	unlink(path);
	return TAP_DONE();
}
