// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/hold_guard.c: the guardian continues the processes a
 * BPF map holds once its pipe ends, and only those; a sweep does the same
 * at once, for a full map too; a recorder killed (-9) leaves none stopped,
 * not even those held after its death while the programs that stop them
 * are still attached, and the guardian ends once they are gone. Real
 * processes, a real BPF map and link (root). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "record/hold_guard.h"
#include "spans.h"
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

/* As bpf/spans.bpf.c's: tgid -> when it was stopped, SP_BS_MAX_PIDS of them */
static int held_map(void)
{
	return bpf_map_create(BPF_MAP_TYPE_HASH, "held", 4, 8, SP_BS_MAX_PIDS, NULL);
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

/* The held count once the sweep in flight is done: the guardian continues a
 * process before it deletes its entry, so a continued process may be seen
 * while its entry is still there. */
static int held_count_settled(int map)
{
	struct timespec ms = { 0, 10000000 };
	int i, n = held_count(map);

	for (i = 0; i < 100 && n; i++) {
		nanosleep(&ms, NULL);
		n = held_count(map);
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

/* A key that is no process: above any pid_max (2^22), below INT_MAX */
#define NO_PID(i)	((uint32_t)(1u << 30) + (uint32_t)(i))

/*
 * The bound: the map holds SP_BS_MAX_PIDS processes and refuses one more
 * (BPF then does not stop it); one sweep continues every one of them
 * (the keys are read before any is deleted: a deletion restarts a hash's
 * walk) and leaves the map empty.
 */
static void test_hold_guard_full_map(void)
{
	int map = held_map();
	pid_t held = stopped_child();
	uint32_t k;
	uint64_t v = 1;
	unsigned int i, refused;

	hold(map, held);
	for (i = 1; i < SP_BS_MAX_PIDS; i++) {
		k = NO_PID(i);
		if (bpf_map_update_elem(map, &k, &v, BPF_NOEXIST))
			break;
	}
	CHECK_EQ_U(i, SP_BS_MAX_PIDS);
	k = NO_PID(0);
	refused = bpf_map_update_elem(map, &k, &v, BPF_NOEXIST) != 0;
	CHECK(refused);
	CHECK_EQ_U(held_count(map), SP_BS_MAX_PIDS);
	CHECK_EQ_U(sp_hold_guard_sweep(map), SP_BS_MAX_PIDS);
	CHECK(continued(held));
	CHECK_EQ_U(held_count(map), 0);
	reap(held);
	close(map);
}

/* A link whose program does nothing, as the programs that stop processes:
 * its id in *id. -1 when BPF says no. */
static int some_link(uint32_t *id)
{
	static const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	int prog, link;

	prog = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "hold_test", "GPL", ret0, 2, NULL);
	if (prog < 0)
		return -1;
	link = bpf_raw_tracepoint_open("sched_process_free", prog);
	close(prog);
	if (link < 0)
		return -1;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(link, &info, &len)) {
		close(link);
		return -1;
	}
	*id = info.id;
	return link;
}

/* The child named sp-record-guard of parent (it says so at its start). */
static pid_t guardian_of(pid_t parent)
{
	char path[300], line[256];
	struct dirent *de;
	int tries;

	for (tries = 0; tries < 500; tries++) {
		DIR *d = opendir("/proc");

		while (d && (de = readdir(d))) {
			char comm[32] = "";
			int ppid = 0;
			FILE *f;

			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
			if (!(f = fopen(path, "r")))
				continue;
			if (fgets(line, sizeof(line), f) &&
			    sscanf(line, "%*d (%31[^)]) %*c %d", comm, &ppid) == 2 &&
			    ppid == parent && !strcmp(comm, "sp-record-guard")) {
				pid_t pid = (pid_t)atoi(de->d_name);	/* before closedir frees it */

				fclose(f);
				closedir(d);
				return pid;
			}
			fclose(f);
		}
		if (d)
			closedir(d);
		usleep(10000);
	}
	return -1;
}

/* Whether pid (our child) ended within about 8 s. */
static int ended(pid_t pid)
{
	int i;

	for (i = 0; i < 800; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return 1;
		usleep(10000);
	}
	return 0;
}

/*
 * The recorder killed (-9): whoever it held is continued; so is a process
 * held after its death, while a program that stops processes is still
 * attached (its links go asynchronously), later than the guardian's
 * shortest watch (200 ms); and the guardian ends once the link is gone.
 */
static void test_hold_guard_recorder_killed(void)
{
	int map = held_map(), link, p[2], st;
	uint32_t ids[2] = { 0, 0 };
	pid_t held = stopped_child(), mine = stopped_child(), late, rec, guard;
	char c;

	link = some_link(&ids[0]);
	if (link < 0) {
		printf("# cannot attach a BPF program: %s\n", strerror(errno));
		CHECK(link >= 0);
		goto out;
	}
	hold(map, held);
	CHECK(!prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	CHECK(!pipe(p));
	rec = fork();
	if (rec == 0) {
		/* the recorder: its guardian, then killed while it holds */
		close(p[0]);
		sp_hold_guard_prepare();
		if (sp_hold_guard_start(map, ids) < 0)
			_exit(1);
		if (write(p[1], "g", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	CHECK(read(p[0], &c, 1) == 1);
	close(p[0]);
	guard = guardian_of(rec);	/* ours once rec is gone (a subreaper) */
	CHECK(guard > 0);
	CHECK_EQ_U(waitpid(held, &st, WCONTINUED | WNOHANG), 0);
	kill(rec, SIGKILL);
	waitpid(rec, NULL, 0);
	CHECK(continued(held));
	/* held after the death, while the link stays */
	usleep(300000);
	late = stopped_child();
	hold(map, late);
	CHECK(continued(late));
	CHECK_EQ_U(held_count_settled(map), 0);
	CHECK_EQ_U(waitpid(mine, &st, WCONTINUED | WNOHANG), 0);
	/* the link gone (late had a copy of its fd), the guardian goes too,
	 * before its longest watch (10 s) */
	reap(late);
	close(link);
	if (guard > 0)
		CHECK(ended(guard));
out:
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
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
		TAP_SKIP(test_hold_guard_full_map, "cannot create a BPF map (needs root)");
		TAP_SKIP(test_hold_guard_recorder_killed, "cannot create a BPF map (needs root)");
		return TAP_DONE();
	}
	close(map);
	TAP_RUN(test_hold_guard_sweep);
	TAP_RUN(test_hold_guard_guardian);
	TAP_RUN(test_hold_guard_full_map);
	TAP_RUN(test_hold_guard_recorder_killed);
	return TAP_DONE();
}
