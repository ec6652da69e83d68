// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/proc_identity.c: a live process's identity goes
 * into its record, with its cgroup as a string; a record older than the
 * process its pid names now (a reuse) and a process gone get none and the
 * flag.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

int main(void)
{
	TAP_RUN(test_proc_identity_live);
	TAP_RUN(test_proc_identity_reused);
	TAP_RUN(test_proc_identity_gone);
	return TAP_DONE();
}
