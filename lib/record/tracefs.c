// SPDX-License-Identifier: MIT
/* tracefs held while the sources look at it and attach (tracefs.h). */
#include <errno.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracefs.h"

#define SP_TRACEFS_DIR	"/sys/kernel/tracing"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int holds;	/* under lock */
static bool ours;		/* mounted by sp_tracefs_hold(), under lock */
static dev_t ours_dev;		/* its device: the mount at the path is still it */

bool sp_tracefs_ready(void)
{
	return !access(SP_TRACEFS_DIR "/events/sched", F_OK) ||
	       !access("/sys/kernel/debug/tracing/events/sched", F_OK);
}

bool sp_tracefs_hold(bool *mounted)
{
	bool ok = true;
	int err = 0;

	pthread_mutex_lock(&lock);
	if (!ours && !sp_tracefs_ready()) {
		if (mount("nodev", SP_TRACEFS_DIR, "tracefs", 0, NULL) == 0) {
			struct stat st;

			ours = true;
			ours_dev = stat(SP_TRACEFS_DIR, &st) == 0 ? st.st_dev : 0;
		} else {
			ok = false;
			err = errno;
		}
	}
	if (ok)
		holds++;
	if (mounted)
		*mounted = ours;
	pthread_mutex_unlock(&lock);
	errno = err;
	return ok;
}

void sp_tracefs_release(void)
{
	pthread_mutex_lock(&lock);
	/* the last holder: one mounted here goes, so that it is not left
	 * behind however sp-record ends */
	if (holds && !--holds && ours) {
		struct stat st;

		/* by path: only while the mount there is still ours, not one
		 * someone else put over it meanwhile (ours then stays below) */
		if (stat(SP_TRACEFS_DIR, &st) == 0 && st.st_dev == ours_dev)
			umount(SP_TRACEFS_DIR);
		ours = false;
	}
	pthread_mutex_unlock(&lock);
}
