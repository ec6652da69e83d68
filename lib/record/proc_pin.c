// SPDX-License-Identifier: MIT
/* A process held by its pidfd and its /proc/PID directory (proc_pin.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "launch.h"
#include "proc_pin.h"
#include "procfs.h"

int sp_proc_pin_open(struct sp_proc_pin *pin, uint32_t pid)
{
	char path[64];

	*pin = (struct sp_proc_pin)SP_PROC_PIN_INIT;
	pin->pid = pid;
	pin->pidfd = sp_pidfd_open((pid_t)pid);
	if (pin->pidfd < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%u", sp_procfs_root, pid);
	pin->dir = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* The directory is of whatever pid named at its open: the pidfd's
	 * process if that has not exited since (its pid is not free before
	 * it has), checked after. */
	if (pin->dir < 0 || sp_proc_pin_exited(pin)) {
		sp_proc_pin_close(pin);
		errno = ESRCH;
		return -1;
	}
	return 0;
}

bool sp_proc_pin_has_thread(const struct sp_proc_pin *pin, uint32_t tid)
{
	char name[32];
	struct stat st;

	/* task/TID in the process's own directory: the kernel looks tid up
	 * among the threads of the process the directory was opened for
	 * (ENOENT for another process's, ESRCH once that one is gone) */
	snprintf(name, sizeof(name), "task/%u", tid);
	return pin->dir >= 0 && fstatat(pin->dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int sp_proc_pin_tasks(const struct sp_proc_pin *pin, uint32_t **tids, size_t *n)
{
	return sp_procfs_tasks_at(pin->dir, tids, n);
}

bool sp_proc_pin_exited(const struct sp_proc_pin *pin)
{
	struct pollfd pfd = { .fd = pin->pidfd, .events = POLLIN };
	int r;

	do
		r = poll(&pfd, 1, 0);
	while (r < 0 && errno == EINTR);
	/* one that cannot be asked about is taken as gone: nothing is
	 * attached to what might be another process */
	return r != 0;
}

bool sp_proc_pin_reused(const struct sp_proc_pin *pin)
{
	char path[64];
	struct stat st;

	/* its own directory answers while it lives, a zombie included */
	if (pin->dir >= 0 && fstatat(pin->dir, "stat", &st, 0) == 0)
		return false;
	snprintf(path, sizeof(path), "%s/%u", sp_procfs_root, pin->pid);
	return stat(path, &st) == 0;
}

void sp_proc_pin_close(struct sp_proc_pin *pin)
{
	if (pin->pidfd >= 0)
		close(pin->pidfd);
	if (pin->dir >= 0)
		close(pin->dir);
	pin->pidfd = pin->dir = -1;
}

void sp_pidfd_failure(uint32_t pid, int err, char *why, size_t size)
{
	uint32_t tgid = 0, ppid;
	char comm[32], ecomm[128];

	/* a zombie is there (in ps, in /proc) but has exited: no such
	 * process would contradict what the user sees */
	if (err == ESRCH && sp_procfs_zombie(pid, &ppid)) {
		if (ppid && !sp_procfs_comm(ppid, ppid, comm, sizeof(comm))) {
			/* any user names its process: escaped (escaping.md) */
			sp_esc_text(ecomm, sizeof(ecomm), comm, strlen(comm), 0);
			snprintf(why, size, "has exited: a zombie its parent, pid %u (%s), "
				 "has not reaped yet", ppid, ecomm);
		} else
			snprintf(why, size, "has exited: a zombie not reaped yet");
	} else if (err == ESRCH)
		snprintf(why, size, "no such process");
	/* a thread id: EINVAL, or ENOENT since Linux 6.9 */
	else if ((err == EINVAL || err == ENOENT) && !sp_procfs_status(pid, &tgid, &ppid) &&
		 tgid != pid)
		snprintf(why, size, "a thread of process %u, not a process: give -p %u", tgid,
			 tgid);
	else if (err == ENOSYS)
		snprintf(why, size, "pidfd_open: %s (needs Linux 5.3 or later)", strerror(err));
	else
		snprintf(why, size, "pidfd_open: %s", strerror(err));
}
