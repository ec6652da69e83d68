// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/tracefs.c, as root, in a mount namespace of the
 * test's own with no tracefs in it: a hold mounts it, a second hold finds
 * it, it stays until the last hold is let go, and one mounted by someone
 * else is never unmounted. Two threads holding and letting go at once
 * (the sources load on threads of their own) never pull it from under a
 * hold.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <unistd.h>

#include "record/tracefs.h"
#include "tap.h"

#define ROUNDS 500

/* A namespace of its own, with neither tracefs path mounted. */
static bool private_without_tracefs(void)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return false;
	while (umount("/sys/kernel/debug/tracing") == 0 || umount("/sys/kernel/tracing") == 0)
		;
	umount2("/sys/kernel/debug", MNT_DETACH);
	return !sp_tracefs_ready();
}

static void test_tracefs_holds(void)
{
	bool mounted = false;

	CHECK(sp_tracefs_hold(&mounted));
	CHECK(mounted);
	CHECK(sp_tracefs_ready());
	CHECK(sp_tracefs_hold(&mounted));	/* the second finds it */
	sp_tracefs_release();
	CHECK(sp_tracefs_ready());		/* held still */
	sp_tracefs_release();
	CHECK(!sp_tracefs_ready());		/* the last let go: unmounted */
	sp_tracefs_release();			/* one too many: harmless */
	CHECK(!sp_tracefs_ready());
}

static void test_tracefs_someone_elses(void)
{
	bool mounted = true;

	CHECK(mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0);
	CHECK(sp_tracefs_hold(&mounted));
	CHECK(!mounted);
	sp_tracefs_release();
	CHECK(sp_tracefs_ready());		/* not ours: left */
	CHECK(umount("/sys/kernel/tracing") == 0);
}

/* One mounted over sp-record's while held is not unmounted for it. */
static void test_tracefs_mounted_over(void)
{
	CHECK(sp_tracefs_hold(NULL));
	CHECK(mount("nodev", "/sys/kernel/tracing", "tmpfs", 0, NULL) == 0);
	sp_tracefs_release();
	CHECK(umount("/sys/kernel/tracing") == 0);	/* the tmpfs was left */
	CHECK(sp_tracefs_ready());			/* and ours below it */
	CHECK(umount("/sys/kernel/tracing") == 0);
	CHECK(!sp_tracefs_ready());
}

static pthread_barrier_t both;
static volatile int lost;

/* Hold, look, let go, ROUNDS times: tracefs is there whenever held. */
static void *holder(void *arg)
{
	int i;

	(void)arg;
	pthread_barrier_wait(&both);
	for (i = 0; i < ROUNDS; i++) {
		if (!sp_tracefs_hold(NULL) || !sp_tracefs_ready())
			__atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
		sp_tracefs_release();
	}
	return NULL;
}

static void test_tracefs_two_threads(void)
{
	pthread_t t[2];
	int i;

	pthread_barrier_init(&both, NULL, 2);
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, holder, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&both);
	CHECK_EQ_U(lost, 0);
	CHECK(!sp_tracefs_ready());
}

int main(void)
{
	if (geteuid() != 0 || !private_without_tracefs()) {
		TAP_SKIP(test_tracefs_holds, "needs root (a mount namespace)");
		TAP_SKIP(test_tracefs_someone_elses, "needs root (a mount namespace)");
		TAP_SKIP(test_tracefs_mounted_over, "needs root (a mount namespace)");
		TAP_SKIP(test_tracefs_two_threads, "needs root (a mount namespace)");
		return TAP_DONE();
	}
	TAP_RUN(test_tracefs_holds);
	TAP_RUN(test_tracefs_someone_elses);
	TAP_RUN(test_tracefs_mounted_over);
	TAP_RUN(test_tracefs_two_threads);
	return TAP_DONE();
}
