// SPDX-License-Identifier: MIT
/*
 * Files as a process in another mount namespace names them (procroot.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procroot.h"

/* Ours does not change (nothing here calls setns or unshare): read once,
 * not once per module a process maps. */
static struct stat self_ns;
static bool self_ns_ok;

static void read_self_ns(void)
{
	self_ns_ok = stat("/proc/self/ns/mnt", &self_ns) == 0;
}

static bool self_mnt_ns(struct stat *st)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, read_self_ns);
	*st = self_ns;
	return self_ns_ok;
}

bool sp_proc_other_mnt_ns(uint32_t pid)
{
	struct stat a, b;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pid);
	if (stat(path, &a) || !self_mnt_ns(&b))
		return false;
	return a.st_ino != b.st_ino || a.st_dev != b.st_dev;
}

int sp_proc_root_dir(uint32_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int sp_proc_root_open(int rootfd, const char *path, bool nofollow)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};

	if (path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
}
