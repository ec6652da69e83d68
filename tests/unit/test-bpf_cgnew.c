// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/bpf_cgnew.c and of bpf/ident.bpf.c's following
 * of moves, on real cgroups: a cgroup v2 directory made while the watch
 * is on is told with its id (its inode), before anything is in it; a
 * process moved into it is told with its pid, parent and name; and the process identity
 * map then has the cgroup it was moved into, not the one it was forked in.
 */
#include <errno.h>
#include <mntent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/bpf_cgnew.h"
#include "ident.h"
#include "record/proc_identity.h"
#include "sp.h"
#include "tap.h"

static char mnt[128], dir[256];

static void test_cgnew_mkdir_and_move(void)
{
	struct sp_cgwatch *w = sp_cgwatch_open();
	struct sp_ident_bpf *b = sp_ident_bpf_open();
	const struct sp_cgwatch_ev *ev;
	struct sp_bpf_ident id;
	char procs[300], pid_s[32];
	bool made = false, moved = false;
	unsigned int gone = 0;
	struct stat st;
	size_t n, i;
	pid_t kid;
	FILE *f;

	CHECK(w != NULL);
	CHECK(b != NULL);
	if (!w || !b)
		goto out;
	/* forked before the directory is made: the map has its fork's cgroup */
	kid = fork();
	if (kid == 0) {
		pause();
		_exit(0);
	}
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(stat(dir, &st) == 0);
	n = sp_cgwatch_read(w, &ev);
	for (i = 0; i < n; i++)
		made |= ev[i].id == st.st_ino && !ev[i].pid && !ev[i].gone;
	CHECK(made);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(pid_s, sizeof(pid_s), "%d\n", (int)kid);
	f = fopen(procs, "w");
	CHECK(f && fputs(pid_s, f) >= 0 && fclose(f) == 0);
	n = sp_cgwatch_read(w, &ev);
	for (i = 0; i < n; i++)
		moved |= ev[i].id == st.st_ino && ev[i].pid == (uint32_t)kid &&
			 ev[i].ppid == (uint32_t)getpid() && !strcmp(ev[i].comm, "test-bpf_cgnew");
	CHECK(moved);
	CHECK(sp_ident_bpf_lookup(b, (uint32_t)kid, &id) == 0);
	CHECK_EQ_U(id.cgroup_id, st.st_ino);
	/* and its name, as its fork gave it (a process gone unseen is
	 * named by it) */
	id.comm[sizeof(id.comm) - 1] = 0;
	CHECK(!strcmp(id.comm, "test-bpf_cgnew"));
	/* nothing more was told of either */
	n = sp_cgwatch_read(w, &ev);
	for (i = 0; i < n; i++)
		CHECK(ev[i].id != st.st_ino);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	/* removed: told with its id, once (a stopped container's events are
	 * closed on this) */
	CHECK(rmdir(dir) == 0);
	n = sp_cgwatch_read(w, &ev);
	for (i = 0; i < n; i++)
		gone += ev[i].id == st.st_ino && ev[i].gone && !ev[i].pid;
	CHECK_EQ_U(gone, 1);
out:
	sp_cgwatch_free(w);
	sp_ident_bpf_free(b);
}

int main(void)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	struct mntent *m;

	while (f && (m = getmntent(f)))
		if (!strcmp(m->mnt_type, "cgroup2") && strlen(m->mnt_dir) < sizeof(mnt)) {
			snprintf(mnt, sizeof(mnt), "%s", m->mnt_dir);
			break;
		}
	if (f)
		endmntent(f);
	if (geteuid() != 0 || !mnt[0]) {
		TAP_SKIP(test_cgnew_mkdir_and_move, "needs root and a cgroup v2 hierarchy");
		return TAP_DONE();
	}
	snprintf(dir, sizeof(dir), "%s/sp-unit-cgnew-%d", mnt, (int)getpid());
	TAP_RUN(test_cgnew_mkdir_and_move);
	rmdir(dir);
	return TAP_DONE();
}
