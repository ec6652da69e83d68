// SPDX-License-Identifier: MIT
/* The guardian of the processes sp-record holds stopped (hold_guard.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "close_apart.h"
#include "hold_guard.h"
#include "sp.h"
#include "spans.h"

#define GUARD_LINKS		4
#define SWEEP_EVERY_NS		20000000L	/* 20 ms */
#define SWEEPS_MIN		10		/* 200 ms: links go asynchronously */
#define SWEEPS_MAX		500		/* 10 s */

/* Only raw system calls from here on: the guardian runs them in a child
 * forked from a process with threads. */
static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

int sp_hold_guard_sweep(int map_fd)
{
	static uint32_t pids[SP_BS_MAX_PIDS];
	union bpf_attr attr;
	uint32_t key = 0, next;
	int n = 0, i, first = 1;

	/* the keys first: deleting while walking a hash restarts the walk */
	while (n < SP_BS_MAX_PIDS) {
		memset(&attr, 0, sizeof(attr));
		attr.map_fd = map_fd;
		attr.key = first ? 0 : (uint64_t)(uintptr_t)&key;
		attr.next_key = (uint64_t)(uintptr_t)&next;
		if (sys_bpf(BPF_MAP_GET_NEXT_KEY, &attr))
			break;
		pids[n++] = next;
		key = next;
		first = 0;
	}
	for (i = 0; i < n; i++) {
		/* continued first: gone from the map, it is nobody's any more */
		if (pids[i] > 1)
			kill((pid_t)pids[i], SIGCONT);
		memset(&attr, 0, sizeof(attr));
		attr.map_fd = map_fd;
		attr.key = (uint64_t)(uintptr_t)&pids[i];
		sys_bpf(BPF_MAP_DELETE_ELEM, &attr);
	}
	return n;
}

/* Whether any of the links that stop processes still exists. */
static int links_alive(const uint32_t *ids)
{
	union bpf_attr attr;
	int i, fd;

	for (i = 0; i < GUARD_LINKS && ids[i]; i++) {
		memset(&attr, 0, sizeof(attr));
		attr.link_id = ids[i];
		fd = (int)sys_bpf(BPF_LINK_GET_FD_BY_ID, &attr);
		if (fd >= 0) {
			close(fd);
			return 1;
		}
		if (errno != ENOENT)
			return 1;	/* cannot tell: as if it were */
	}
	return 0;
}

static noreturn void guard_main(int rfd, int map_fd, const uint32_t *ids)
{
	int keep[2] = { rfd, map_fd };
	struct timespec every = { 0, SWEEP_EVERY_NS };
	int sweeps;

	/* Nothing but the pipe and the map: no output a reader waits on, no
	 * BPF link or program that would keep the probes attached. */
	sp_keeper_become(keep, 2, "sp-record-guard");
	/* sp-record writes nothing: EOF when the last copy of its end is gone */
	sp_keeper_wait_end(rfd);
	for (sweeps = 0; sweeps < SWEEPS_MAX; sweeps++) {
		sp_hold_guard_sweep(map_fd);
		if (sweeps >= SWEEPS_MIN && !links_alive(ids))
			break;
		nanosleep(&every, NULL);
	}
	sp_hold_guard_sweep(map_fd);
	_exit(0);
}

static int early[2] = { -1, -1 };

void sp_hold_guard_prepare(void)
{
	if (early[0] < 0 && pipe2(early, O_CLOEXEC))
		early[0] = early[1] = -1;
}

int sp_hold_guard_start(int map_fd, const uint32_t *link_ids)
{
	uint32_t ids[GUARD_LINKS] = { 0 };
	int p[2], i;
	pid_t pid;

	for (i = 0; link_ids && i < GUARD_LINKS && link_ids[i]; i++)
		ids[i] = link_ids[i];
	if (early[0] >= 0) {
		p[0] = early[0];
		p[1] = early[1];
		early[0] = early[1] = -1;
	} else if (pipe2(p, O_CLOEXEC)) {
		return sp_error_errno("cannot start the guardian of held processes: pipe");
	}
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return sp_error_errno("cannot start the guardian of held processes: fork");
	}
	if (pid == 0)
		guard_main(p[0], map_fd, ids);
	close(p[0]);
	return p[1];
}
