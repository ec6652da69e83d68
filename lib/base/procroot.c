// SPDX-License-Identifier: MIT
/*
 * Files as a process in another mount namespace names them (procroot.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procroot.h"

bool sp_proc_other_mnt_ns(uint32_t pid)
{
	struct stat a, b;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pid);
	if (stat(path, &a) || stat("/proc/self/ns/mnt", &b))
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
