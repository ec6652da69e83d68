// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/proc_pin.c with real threads and processes: a
 * thread is the held process's while it runs, not once it ended, nor is
 * another process's; an exited process is said to be, and its pid reused
 * by another process (root: /proc/sys/kernel/ns_last_pid) names nothing
 * of the one held. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "pid_reuse.h"
#include "procfs.h"
#include "record/proc_pin.h"

static int thread_go[2];
static volatile pid_t thread_tid;

static void *thread_main(void *arg)
{
	char c;

	(void)arg;
	thread_tid = (pid_t)syscall(SYS_gettid);
	while (read(thread_go[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static bool listed(const uint32_t *v, size_t n, uint32_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* A thread's tid is freed a little after pthread_join returns: waited for
 * (bounded, not timed: no assertion on how long it takes). */
static bool wait_thread_gone(const struct sp_proc_pin *pin, uint32_t tid)
{
	struct timespec ms = { 0, 1000000 };
	int i;

	for (i = 0; i < 10000 && sp_proc_pin_has_thread(pin, tid); i++)
		nanosleep(&ms, NULL);
	return !sp_proc_pin_has_thread(pin, tid);
}

static void test_threads_of_self(void)
{
	struct sp_proc_pin pin;
	pthread_t th;
	uint32_t *tids = NULL, tid;
	size_t n = 0;
	pid_t other;
	int go;

	CHECK(sp_proc_pin_open(&pin, (uint32_t)getpid()) == 0);
	CHECK(!sp_proc_pin_exited(&pin));
	CHECK(sp_proc_pin_has_thread(&pin, (uint32_t)getpid()));
	CHECK(pipe(thread_go) == 0);
	CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0);
	while (!thread_tid)
		sched_yield();
	tid = (uint32_t)thread_tid;
	CHECK(tid != (uint32_t)getpid());
	CHECK(sp_proc_pin_has_thread(&pin, tid));
	CHECK(sp_proc_pin_tasks(&pin, &tids, &n) == 0);
	CHECK(listed(tids, n, tid));
	CHECK(listed(tids, n, (uint32_t)getpid()));
	free(tids);
	/* a thread's id given where a process is wanted: told which process */
	{
		struct sp_proc_pin tpin;
		char why[128], want[128];

		if (sp_proc_pin_open(&tpin, tid) == 0) {
			sp_proc_pin_close(&tpin);	/* a kernel that pins threads */
		} else {
			sp_pidfd_failure(tid, errno, why, sizeof(why));
			snprintf(want, sizeof(want), "a thread of process %u, not a process: give -p %u",
				 (unsigned)getpid(), (unsigned)getpid());
			CHECK_STR(why, want);
		}
		sp_pidfd_failure(999999999, ESRCH, why, sizeof(why));
		CHECK_STR(why, "no such process");
	}
	/* another process, and its only thread, are not ours */
	other = child_waiting(&go);
	CHECK(other > 0);
	CHECK(!sp_proc_pin_has_thread(&pin, (uint32_t)other));
	CHECK(!sp_proc_pin_has_thread(&pin, 1));
	close(go);
	waitpid(other, NULL, 0);
	/* the thread ended: no longer ours, nor listed */
	close(thread_go[1]);
	pthread_join(th, NULL);
	close(thread_go[0]);
	CHECK(wait_thread_gone(&pin, tid));
	tids = NULL;
	CHECK(sp_proc_pin_tasks(&pin, &tids, &n) == 0);
	CHECK(!listed(tids, n, tid));
	free(tids);
	CHECK(!sp_proc_pin_exited(&pin));
	sp_proc_pin_close(&pin);
	sp_proc_pin_close(&pin);	/* twice: harmless */
}

static void test_exited_process(void)
{
	struct sp_proc_pin pin;
	uint32_t *tids = NULL;
	size_t n = 0;
	pid_t pid;
	int go;

	pid = child_waiting(&go);
	CHECK(pid > 0);
	CHECK(sp_proc_pin_open(&pin, (uint32_t)pid) == 0);
	CHECK(!sp_proc_pin_exited(&pin));
	CHECK(sp_proc_pin_has_thread(&pin, (uint32_t)pid));
	CHECK(!sp_proc_pin_has_thread(&pin, (uint32_t)getpid()));
	close(go);
	/* a zombie has exited (not reaped yet: WNOWAIT) */
	CHECK(waitid(P_PID, (id_t)pid, &(siginfo_t){ 0 }, WEXITED | WNOWAIT) == 0);
	CHECK(sp_proc_pin_exited(&pin));
	CHECK(!sp_proc_pin_reused(&pin));	/* its number is still its own */
	/* a zombie cannot be held, and is said to be one, with its parent */
	{
		struct sp_proc_pin zpin;
		char why[128], want[128], comm[32];

		errno = 0;
		CHECK(sp_proc_pin_open(&zpin, (uint32_t)pid) == -1 && errno == ESRCH);
		sp_pidfd_failure((uint32_t)pid, ESRCH, why, sizeof(why));
		CHECK(sp_procfs_comm((uint32_t)getpid(), (uint32_t)getpid(), comm, sizeof(comm)) == 0);
		snprintf(want, sizeof(want),
			 "has exited: a zombie its parent, pid %u (%s), has not reaped yet",
			 (unsigned)getpid(), comm);
		CHECK_STR(why, want);
	}
	waitpid(pid, NULL, 0);
	CHECK(sp_proc_pin_exited(&pin));
	CHECK(!sp_proc_pin_reused(&pin));	/* free, taken by none */
	CHECK(!sp_proc_pin_has_thread(&pin, (uint32_t)pid));
	CHECK(sp_proc_pin_tasks(&pin, &tids, &n) == -1);
	sp_proc_pin_close(&pin);
	/* gone: nothing to hold */
	errno = 0;
	CHECK(sp_proc_pin_open(&pin, (uint32_t)pid) == -1 && errno == ESRCH);
	CHECK(pin.pidfd == -1 && pin.dir == -1);
	{
		char why[128];

		sp_pidfd_failure((uint32_t)pid, ESRCH, why, sizeof(why));
		CHECK_STR(why, "no such process");	/* reaped: no zombie */
	}
}

static void test_pid_reused(void)
{
	struct sp_proc_pin pin;
	uint32_t *tids = NULL;
	size_t n = 0;
	pid_t old, reuse;
	int go, go2;

	old = child_waiting(&go);
	CHECK(old > 0);
	CHECK(sp_proc_pin_open(&pin, (uint32_t)old) == 0);
	reuse = end_and_reuse(old, go, &go2);
	if (reuse < 0) {
		sp_proc_pin_close(&pin);
		return;
	}
	/* by number, /proc names the newcomer: its thread is listed... */
	CHECK(sp_procfs_tasks((uint32_t)old, &tids, &n) == 0);
	CHECK(listed(tids, n, (uint32_t)old));
	free(tids);
	/* ...held, the process that was asked for is gone */
	CHECK(sp_proc_pin_exited(&pin));
	CHECK(sp_proc_pin_reused(&pin));
	CHECK(!sp_proc_pin_has_thread(&pin, (uint32_t)old));
	CHECK(sp_proc_pin_tasks(&pin, &tids, &n) == -1);
	sp_proc_pin_close(&pin);
	close(go2);
	waitpid(reuse, NULL, 0);
}

int main(void)
{
	TAP_RUN(test_threads_of_self);
	TAP_RUN(test_exited_process);
	if (pid_reuse_possible())
		TAP_RUN(test_pid_reused);
	else
		TAP_SKIP(test_pid_reused, "needs root (ns_last_pid)");
	return TAP_DONE();
}
