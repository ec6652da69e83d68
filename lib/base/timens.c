// SPDX-License-Identifier: MIT
/*
 * The clocks of our time namespace (time_namespaces(7)) against the
 * kernel's. A recorder started in a time namespace (a container made with
 * one, "unshare --time") reads CLOCK_MONOTONIC and CLOCK_BOOTTIME shifted
 * by that namespace's offsets, while the kernel stamps perf samples and
 * BPF records, and a task's start, with its own clocks, never shifted.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sp.h"

#define TIMENS_SEC_MAX	(INT64_MAX / 1000000000 / 2)

static int64_t mono_off, boot_off;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The offsets file shows the namespace our children get, which is ours
 * unless we made another with unshare() and have not forked since
 * (nothing here does): otherwise ours cannot be read, and are taken as 0. */
static void read_offsets(void)
{
	struct stat ours, kids;
	long long sec, nsec;
	char name[32];
	FILE *f;

	if (stat("/proc/self/ns/time", &ours) || stat("/proc/self/ns/time_for_children", &kids) ||
	    ours.st_ino != kids.st_ino || ours.st_dev != kids.st_dev)
		return;
	f = fopen("/proc/self/timens_offsets", "re");
	if (!f)
		return;
	/* bounded as the kernel bounds them (half of KTIME_SEC_MAX) */
	while (fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3) {
		if (sec < -TIMENS_SEC_MAX || sec > TIMENS_SEC_MAX || nsec < 0 || nsec >= 1000000000)
			continue;
		if (!strcmp(name, "monotonic"))
			mono_off = (int64_t)sec * 1000000000 + nsec;
		else if (!strcmp(name, "boottime"))
			boot_off = (int64_t)sec * 1000000000 + nsec;
	}
	fclose(f);
}

int64_t sp_timens_offset_ns(bool boottime)
{
	pthread_once(&once, read_offsets);
	return boottime ? boot_off : mono_off;
}
