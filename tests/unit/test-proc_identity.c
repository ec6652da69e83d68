// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/proc_identity.c: a live process's identity goes
 * into its record, with its cgroup as a string; a record older than the
 * process its pid names now (a reuse) and a process gone get none and the
 * flag; (as root) the cache of cgroup paths by id keeps the path of a
 * cgroup removed since, and forgets all when full; a process's parent and
 * file-system user come from /proc, and (as root) from the kernel's record
 * of its exec or its end, with no /proc to read, and so does its mount
 * namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_filter.h"
#include "record/proc_identity.h"
#include "procfs.h"
#include "sp.h"
#include "tap.h"

static struct sp_writer *writer(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	return sp_writer_new(fd, "/dev/null", SP_FORMAT_SPOOL);
}

static void test_proc_identity_live(void)
{
	struct sp_writer *w = writer();
	struct sp_process rec = { 0 };
	struct sp_proc_identity id;

	CHECK(w != NULL);
	CHECK(sp_procfs_identity((uint32_t)getpid(), &id) == 0);
	CHECK(sp_proc_identity_fill(w, NULL, (uint32_t)getpid(), sp_now_mono_ns(), &rec) == 0);
	CHECK(!(rec.flags & SP_PROC_NO_IDENTITY));
	CHECK_EQ_U(rec.nspid, id.nspid);
	CHECK_EQ_U(rec.pid_ns, id.ns[SP_NS_PID]);
	CHECK_EQ_U(rec.cgroup_ns, id.ns[SP_NS_CGROUP]);
	CHECK(rec.start_boot_ns > 0);
	CHECK(!id.cgroup[0] || rec.cgroup != 0);
	sp_writer_close(w);
}

static void test_proc_identity_reused(void)
{
	struct sp_writer *w = writer();
	struct sp_process rec = { 0 };

	/* A record of time 1 ns: this process started long after it. */
	CHECK(sp_proc_identity_fill(w, NULL, (uint32_t)getpid(), 1, &rec) == -1);
	CHECK(rec.flags & SP_PROC_NO_IDENTITY);
	CHECK(rec.nspid == 0 && rec.start_boot_ns == 0 && rec.cgroup == 0);
	sp_writer_close(w);
}

static void test_proc_identity_gone(void)
{
	struct sp_writer *w = writer();
	struct sp_process rec = { 0 };
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	CHECK(sp_proc_identity_fill(w, NULL, (uint32_t)pid, sp_now_mono_ns(), &rec) == -1);
	CHECK(rec.flags & SP_PROC_NO_IDENTITY);
	sp_writer_close(w);
}

static void test_proc_owner_proc(void)
{
	uint32_t ppid = 0;
	uid_t uid = (uid_t)-2;

	CHECK(sp_proc_owner(NULL, (uint32_t)getpid(), sp_now_mono_ns(), true, true, &ppid, &uid) == 0);
	CHECK_EQ_U(ppid, (uint32_t)getppid());
	CHECK_EQ_U(uid, geteuid());
	/* no kernel record, and /proc not to be read */
	errno = 0;
	CHECK(sp_proc_owner(NULL, (uint32_t)getpid(), 0, false, false, &ppid, &uid) == -1);
	CHECK_EQ_U(errno, ENOENT);
}

/* A child that changes its file-system user and ends, or (exec) its
 * user and runs /bin/true (an exec sets the file-system user to the
 * effective one); reaped. Its pid. */
static pid_t child(uid_t uid, bool exec)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (!exec) {
			setfsuid(uid);
			_exit(0);
		}
		if (setresuid(uid, uid, uid) == 0)
			execl("/bin/true", "true", (char *)NULL);
		_exit(1);
	}
	waitpid(pid, NULL, 0);
	return pid;
}

static void test_proc_owner_kernel(void)
{
	struct sp_ident_bpf *kb = sp_ident_bpf_open();
	uint32_t ppid = 0;
	uint64_t ns = 0;
	struct stat st;
	uid_t uid = 0;
	pid_t pid;

	CHECK(kb != NULL);
	/* gone and reaped: only the kernel knows, its user as it ended */
	pid = child(4321, false);
	CHECK(sp_proc_owner(kb, (uint32_t)pid, sp_now_mono_ns(), false, false, &ppid, &uid) == 0);
	CHECK_EQ_U(ppid, (uint32_t)getpid());
	CHECK_EQ_U(uid, 4321);
	/* never exec'd: for an exec's record, its fork's entry will not do */
	errno = 0;
	CHECK(sp_proc_owner(kb, (uint32_t)pid, sp_now_mono_ns(), true, false, &ppid, &uid) == -1);
	CHECK_EQ_U(errno, ENOENT);
	/* a record of time 1 ns: the process started long after it */
	errno = 0;
	CHECK(sp_proc_owner(kb, (uint32_t)pid, 1, false, false, &ppid, &uid) == -1);
	CHECK_EQ_U(errno, ESRCH);
	/* its mount namespace: ours, as the kernel said at its fork; an
	 * exec's record wants what it said at an exec */
	CHECK(stat("/proc/self/ns/mnt", &st) == 0);
	CHECK(sp_proc_mnt_ns(kb, (uint32_t)pid, sp_now_mono_ns(), false, &ns) == 0);
	CHECK_EQ_U(ns, st.st_ino);
	CHECK(sp_proc_mnt_ns(kb, (uint32_t)pid, sp_now_mono_ns(), true, &ns) == -1);
	CHECK(sp_proc_mnt_ns(kb, (uint32_t)pid, 1, false, &ns) == -1);	/* a reuse */
	CHECK(sp_proc_mnt_ns(NULL, (uint32_t)pid, sp_now_mono_ns(), false, &ns) == -1);
	/* exec'd as another user */
	uid = 0;
	pid = child(4322, true);
	CHECK(sp_proc_owner(kb, (uint32_t)pid, sp_now_mono_ns(), true, false, &ppid, &uid) == 0);
	CHECK_EQ_U(ppid, (uint32_t)getpid());
	CHECK_EQ_U(uid, 4322);
	CHECK(sp_proc_mnt_ns(kb, (uint32_t)pid, sp_now_mono_ns(), true, &ns) == 0);
	CHECK_EQ_U(ns, st.st_ino);
	sp_ident_bpf_free(kb);
}

/* The cgroup v2 mount point, from /proc/mounts. 0 or -1. */
static int cgroup2_mount(char *buf, size_t size)
{
	char dir[4096], type[64];
	FILE *f = fopen("/proc/mounts", "r");
	int rc = -1;

	while (f && rc && fscanf(f, "%*s %4095s %63s %*[^\n]", dir, type) == 2)
		if (!strcmp(type, "cgroup2") && strlen(dir) < size) {
			snprintf(buf, size, "%s", dir);
			rc = 0;
		}
	if (f)
		fclose(f);
	return rc;
}

/* A cgroup directory's id: its kernfs file handle, as the kernel's
 * bpf_get_current_cgroup_id() gives it. 0 if none. */
static uint64_t cgroup_id(const char *dir)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh.handle_bytes = sizeof(uint64_t) };
	uint64_t id = 0;
	int mnt;

	if (!name_to_handle_at(AT_FDCWD, dir, &h.fh, &mnt, 0) && h.fh.handle_bytes == sizeof(id))
		memcpy(&id, h.fh.f_handle, sizeof(id));
	return id;
}

static void test_proc_identity_cgroup_paths(void)
{
	struct sp_cgroup_paths c = SP_CGROUP_PATHS_INIT(2);
	char mnt[4096], dir[3][4200], want[3][64], got[4200];
	uint64_t id[3];
	unsigned int i;

	CHECK(cgroup2_mount(mnt, sizeof(mnt)) == 0);
	for (i = 0; i < 3; i++) {
		snprintf(want[i], sizeof(want[i]), "/sp-test-paths-%d-%u", (int)getpid(), i);
		snprintf(dir[i], sizeof(dir[i]), "%s%s", mnt, want[i]);
		CHECK(mkdir(dir[i], 0755) == 0);
		id[i] = cgroup_id(dir[i]);
		CHECK(id[i] != 0);
	}
	for (i = 0; i < 2; i++) {
		CHECK(sp_cgroup_paths_get(&c, id[i], got, sizeof(got)) == 0);
		CHECK_STR(got, want[i]);
	}
	/* removed: the kernel has no path for them now, the cache has */
	for (i = 0; i < 2; i++) {
		CHECK(rmdir(dir[i]) == 0);
		CHECK(sp_cgroup_path_by_id(id[i], got, sizeof(got)) == -1);
		got[0] = 0;
		CHECK(sp_cgroup_paths_get(&c, id[i], got, sizeof(got)) == 0);
		CHECK_STR(got, want[i]);
	}
	CHECK(sp_cgroup_paths_get(&c, id[0], got, 4) == -1);	/* too long for buf */
	/* a third: the two kept are forgotten */
	CHECK(sp_cgroup_paths_get(&c, id[2], got, sizeof(got)) == 0);
	CHECK_STR(got, want[2]);
	CHECK_EQ_U(c.idx.n, 1);
	CHECK(sp_cgroup_paths_get(&c, id[0], got, sizeof(got)) == -1);
	CHECK(rmdir(dir[2]) == 0);
	CHECK(sp_cgroup_paths_get(&c, id[2], got, sizeof(got)) == 0);
	CHECK_STR(got, want[2]);
	CHECK(sp_cgroup_paths_get(&c, 0, got, sizeof(got)) == -1);
	sp_cgroup_paths_release(&c);
}

int main(void)
{
	char mnt[4096];

	TAP_RUN(test_proc_identity_live);
	TAP_RUN(test_proc_identity_reused);
	TAP_RUN(test_proc_identity_gone);
	TAP_RUN(test_proc_owner_proc);
	if (geteuid() == 0)
		TAP_RUN(test_proc_owner_kernel);
	else
		TAP_SKIP(test_proc_owner_kernel, "needs root (BPF)");
	if (geteuid() == 0 && cgroup2_mount(mnt, sizeof(mnt)) == 0)
		TAP_RUN(test_proc_identity_cgroup_paths);
	else
		TAP_SKIP(test_proc_identity_cgroup_paths, "needs root and a cgroup v2 mount");
	return TAP_DONE();
}
