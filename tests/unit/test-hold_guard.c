// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/hold_guard.c: the guardian continues the processes a
 * BPF map holds once its pipe ends, and only those; a sweep does the same
 * at once. Real processes, a real BPF map (root). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "record/hold_guard.h"
#include "tap.h"

/* A child that waits for ever, stopped. */
static pid_t stopped_child(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		for (;;)
			pause();
	}
	kill(pid, SIGSTOP);
	waitpid(pid, &st, WUNTRACED);
	return pid;
}

/* Whether pid was continued within about 5 s (WCONTINUED). */
static int continued(pid_t pid)
{
	struct timespec ms = { 0, 10000000 };
	int i, st;

	for (i = 0; i < 500; i++) {
		pid_t r = waitpid(pid, &st, WCONTINUED | WNOHANG);

		if (r == pid && WIFCONTINUED(st))
			return 1;
		nanosleep(&ms, NULL);
	}
	return 0;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int held_map(void)
{
	return bpf_map_create(BPF_MAP_TYPE_HASH, "held", 4, 8, 64, NULL);
}

static void hold(int map, pid_t pid)
{
	uint32_t k = (uint32_t)pid;
	uint64_t v = 1;

	CHECK(!bpf_map_update_elem(map, &k, &v, BPF_ANY));
}

static int held_count(int map)
{
	uint32_t k, next;
	int n = 0;

	while (!bpf_map_get_next_key(map, n ? &k : NULL, &next)) {
		k = next;
		n++;
	}
	return n;
}

static void test_hold_guard_sweep(void)
{
	int map = held_map();
	pid_t held = stopped_child(), mine = stopped_child();

	/* mine: stopped by its user, not in the map */
	hold(map, held);
	CHECK_EQ_U(sp_hold_guard_sweep(map), 1);
	CHECK(continued(held));
	CHECK_EQ_U(held_count(map), 0);
	/* the sweep is done: had it continued mine, waitpid would say so */
	CHECK_EQ_U(waitpid(mine, NULL, WCONTINUED | WNOHANG), 0);
	reap(held);
	reap(mine);
	close(map);
}

static void test_hold_guard_guardian(void)
{
	int map = held_map(), fd, st = 0;
	pid_t held = stopped_child(), mine = stopped_child();

	hold(map, held);
	sp_hold_guard_prepare();
	fd = sp_hold_guard_start(map, NULL);
	CHECK(fd >= 0);
	/* nothing before the pipe ends */
	usleep(100000);
	CHECK_EQ_U(waitpid(held, &st, WCONTINUED | WNOHANG), 0);
	CHECK_EQ_U(held_count(map), 1);
	/* sp-record's end goes: the guardian continues what the map holds */
	close(fd);
	CHECK(continued(held));
	CHECK_EQ_U(waitpid(mine, &st, WCONTINUED | WNOHANG), 0);
	reap(held);
	reap(mine);
	close(map);
}

int main(void)
{
	int map = held_map();

	if (map < 0) {
		TAP_SKIP(test_hold_guard_sweep, "cannot create a BPF map (needs root)");
		TAP_SKIP(test_hold_guard_guardian, "cannot create a BPF map (needs root)");
		return TAP_DONE();
	}
	close(map);
	TAP_RUN(test_hold_guard_sweep);
	TAP_RUN(test_hold_guard_guardian);
	return TAP_DONE();
}
