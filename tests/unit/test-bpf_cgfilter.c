// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/bpf_cgfilter.c, with the real BPF program on
 * real context-switch events (as root; skipped otherwise, with the
 * reason): two children block in a loop of short sleeps, one in a cgroup
 * made for the test (in a directory below the one filtered: descendants
 * count), one in the test's own cgroup. Each has its own context-switch
 * event, so the samples of each are counted apart. While the filter holds
 * no cgroup yet, neither child's switch-out reaches its ring; once the
 * directory is synced in, the child inside gets its samples and the one
 * outside still none, and the kernel's count of what it dropped grows.
 * Without cgroups, the test's own switch-outs are left out, a child's not.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <mntent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/bpf_cgfilter.h"
#include "cgroup_filter.h"
#include "perf_ring.h"
#include "sp.h"
#include "tap.h"

#define ROUNDS 20

struct child {
	pid_t pid;
	int go;			/* a byte written here runs one round of sleeps */
	int done;		/* a byte comes back when it is over */
	int fd;			/* its context-switch event */
	struct sp_perf_ring ring;
};

static char top[200], sub[256];

static int switch_event(pid_t pid)
{
	struct perf_event_attr a = { 0 };

	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID;
	a.disabled = 1;	/* enabled once the filter is on */
	return (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* A child that, into cgroup (NULL: stays), runs ROUNDS sleeps of 1 ms for
 * each byte it reads. */
static int spawn(struct child *c, const char *cgroup)
{
	int go[2], done[2];
	char b;

	if (pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		struct timespec ms = { 0, 1000000 };
		int i;

		if (cgroup) {
			char procs[300];
			FILE *f;

			snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
			f = fopen(procs, "w");
			if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
				fprintf(stderr, "cannot join %s: %s\n", cgroup, strerror(errno));
				_exit(3);
			}
		}
		close(go[1]);
		close(done[0]);
		for (i = 3; i < 64; i++)	/* the other child's pipes: its EOF */
			if (i != go[0] && i != done[1])
				close(i);
		while (read(go[0], &b, 1) == 1) {
			for (i = 0; i < ROUNDS; i++)
				nanosleep(&ms, NULL);
			if (write(done[1], &b, 1) != 1)
				_exit(4);
		}
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	c->go = go[1];
	c->done = done[0];
	return 0;
}

/* One round of c's sleeps; 0, or -1 when it did not end within 10 s. */
static int round_trip(struct child *c)
{
	struct pollfd p = { .fd = c->done, .events = POLLIN };
	char b = 'x';

	if (write(c->go, &b, 1) != 1 || poll(&p, 1, 10000) != 1 || read(c->done, &b, 1) != 1) {
		printf("#   child %d did not run its round\n", (int)c->pid);
		return -1;
	}
	return 0;
}

static unsigned int samples(struct child *c)
{
	const struct perf_event_header *h;
	unsigned int n = 0;

	sp_perf_ring_begin(&c->ring);
	while ((h = sp_perf_ring_next(&c->ring)))
		n += h->type == PERF_RECORD_SAMPLE;
	sp_perf_ring_end(&c->ring);
	return n;
}

static void test_bpf_cgfilter_switches(void)
{
	struct sp_cgroup_filter f = { 0 };
	struct child kids[2] = { 0 };	/* inside (below the filtered dir), outside */
	struct stat st;
	unsigned int in2;
	struct sp_cgfilter_bpf *k = NULL;
	unsigned int in0, out0, in1, out1, i;
	uint64_t dropped0, dropped1;
	int probe, fds[2];

	probe = switch_event(0);
	CHECK(probe >= 0);
	if (probe < 0)
		return;
	k = sp_cgfilter_bpf_new(probe);
	close(probe);
	CHECK(k != NULL);
	if (!k)
		return;
	if (spawn(&kids[0], sub) || spawn(&kids[1], NULL)) {
		CHECK(!"fork");
		goto out;
	}
	for (i = 0; i < 2; i++) {
		kids[i].fd = fds[i] = switch_event(kids[i].pid);
		CHECK(fds[i] >= 0);
		if (fds[i] < 0 || sp_perf_ring_map(&kids[i].ring, fds[i], 64)) {
			CHECK(!"event");
			goto out;
		}
	}
	/* the filter on, its cgroup not known yet: nothing goes out */
	CHECK(sp_cgfilter_bpf_start(k, &f, NULL, fds, 2) == 0);
	CHECK(sp_cgfilter_bpf_applied(k));
	for (i = 0; i < 2; i++)
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < 2; i++)
		CHECK(round_trip(&kids[i]) == 0);
	in0 = samples(&kids[0]);
	out0 = samples(&kids[1]);
	dropped0 = sp_cgfilter_bpf_dropped(k);
	CHECK_EQ_U(in0, 0);
	CHECK_EQ_U(out0, 0);
	CHECK(dropped0 >= 2 * ROUNDS);	/* at least one switch-out per sleep */

	/* the directory above the inside child's appears */
	f.path[0] = top;
	f.fd[0] = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(f.fd[0] >= 0);
	f.id[0] = fstat(f.fd[0], &st) == 0 ? st.st_ino : 1;
	f.n = 1;
	f.gen++;
	sp_cgfilter_bpf_sync(k, &f);
	for (i = 0; i < 2; i++)
		CHECK(round_trip(&kids[i]) == 0);
	in1 = samples(&kids[0]);
	out1 = samples(&kids[1]);
	dropped1 = sp_cgfilter_bpf_dropped(k);
	printf("#   inside %u samples, outside %u, dropped %llu then %llu\n", in1, out1,
	       (unsigned long long)dropped0, (unsigned long long)dropped1);
	CHECK(in1 >= ROUNDS);
	CHECK_EQ_U(out1, 0);
	CHECK(dropped1 >= dropped0 + ROUNDS);

	/* the directory is removed from the filter (its cgroup gone): its
	 * slot is free, and the inside child's switch-outs are dropped again */
	close(f.fd[0]);
	f.fd[0] = -1;
	f.id[0] = 0;
	f.path[0] = NULL;
	f.gen++;
	sp_cgfilter_bpf_sync(k, &f);
	for (i = 0; i < 2; i++)
		CHECK(round_trip(&kids[i]) == 0);
	in2 = samples(&kids[0]);
	printf("#   after the removal: inside %u samples, dropped %llu\n", in2,
	       (unsigned long long)sp_cgfilter_bpf_dropped(k));
	CHECK_EQ_U(in2, 0);
	CHECK(sp_cgfilter_bpf_dropped(k) >= dropped1 + ROUNDS);
out:
	for (i = 0; i < 2; i++) {
		if (kids[i].pid <= 0)
			continue;
		close(kids[i].go);
		close(kids[i].done);
		waitpid(kids[i].pid, NULL, 0);
		sp_perf_ring_unmap(&kids[i].ring);
		if (kids[i].fd > 0)
			close(kids[i].fd);
	}
	sp_cgfilter_bpf_free(k);
}

/* Without cgroups (-a alone) the filter leaves out the recorder's own
 * switch-outs only: this process's, not a child's, none counted. */
static void test_bpf_cgfilter_self(void)
{
	struct timespec ms = { 0, 1000000 };
	struct child self = { 0 }, kid = { 0 };
	struct sp_cgfilter_bpf *k;
	unsigned int i;

	k = sp_cgfilter_bpf_self();
	CHECK(k != NULL);
	if (!k)
		return;
	if (spawn(&kid, NULL)) {
		CHECK(!"fork");
		goto out;
	}
	self.fd = switch_event(0);
	kid.fd = switch_event(kid.pid);
	CHECK(self.fd >= 0 && kid.fd >= 0);
	if (self.fd < 0 || kid.fd < 0 || sp_perf_ring_map(&self.ring, self.fd, 64) ||
	    sp_perf_ring_map(&kid.ring, kid.fd, 64))
		goto out;
	{
		int fds[2] = { self.fd, kid.fd };

		CHECK(sp_cgfilter_bpf_start(k, NULL, NULL, fds, 2) == 0);
	}
	ioctl(self.fd, PERF_EVENT_IOC_ENABLE, 0);
	ioctl(kid.fd, PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < ROUNDS; i++)
		nanosleep(&ms, NULL);
	CHECK(round_trip(&kid) == 0);	/* (we wait for it: more switches of ours) */
	ioctl(self.fd, PERF_EVENT_IOC_DISABLE, 0);
	{
		unsigned int mine = samples(&self), its = samples(&kid);

		printf("#   our own switch-outs %u samples, the child's %u\n", mine, its);
		CHECK_EQ_U(mine, 0);
		CHECK(its >= ROUNDS);
	}
	CHECK_EQ_U(sp_cgfilter_bpf_dropped(k), 0);	/* no cgroup's */
out:
	if (kid.pid > 0) {
		close(kid.go);
		close(kid.done);
		waitpid(kid.pid, NULL, 0);
	}
	sp_perf_ring_unmap(&self.ring);
	sp_perf_ring_unmap(&kid.ring);
	if (self.fd > 0)
		close(self.fd);
	if (kid.fd > 0)
		close(kid.fd);
	sp_cgfilter_bpf_free(k);
}

/* The test's own cgroup directories, below the first cgroup v2 mount
 * (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host); -1 when it
 * cannot make them (the reason in why). */
static int make_cgroups(char *why, size_t size)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	char mnt[128] = "";
	struct mntent *m;

	while (f && (m = getmntent(f)))
		if (!strcmp(m->mnt_type, "cgroup2") && strlen(m->mnt_dir) < sizeof(mnt)) {
			snprintf(mnt, sizeof(mnt), "%s", m->mnt_dir);
			break;
		}
	if (f)
		endmntent(f);
	if (!mnt[0]) {
		snprintf(why, size, "no cgroup v2 hierarchy is mounted");
		return -1;
	}
	snprintf(top, sizeof(top), "%s/sp-unit-cgfilter-%d", mnt, (int)getpid());
	snprintf(sub, sizeof(sub), "%s/inner", top);
	if (mkdir(top, 0755) || mkdir(sub, 0755)) {
		snprintf(why, size, "cannot make %s: %s", sub, strerror(errno));
		rmdir(top);
		return -1;
	}
	return 0;
}

int main(void)
{
	char why[400];

	if (geteuid() != 0) {
		TAP_SKIP(test_bpf_cgfilter_self, "needs root (BPF programs)");
		TAP_SKIP(test_bpf_cgfilter_switches, "needs root (BPF programs, cgroups)");
		return TAP_DONE();
	}
	TAP_RUN(test_bpf_cgfilter_self);
	if (make_cgroups(why, sizeof(why))) {
		TAP_SKIP(test_bpf_cgfilter_switches, why);
		return TAP_DONE();
	}
	TAP_RUN(test_bpf_cgfilter_switches);
	rmdir(sub);
	rmdir(top);
	return TAP_DONE();
}
