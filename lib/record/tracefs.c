// SPDX-License-Identifier: MIT
/* tracefs held while the sources look at it and attach (tracefs.h). */
#include <errno.h>
#include <pthread.h>
#include <sys/mount.h>
#include <unistd.h>

#include "tracefs.h"

#define SP_TRACEFS_DIR	"/sys/kernel/tracing"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int holds;	/* under lock */
static bool ours;		/* mounted by sp_tracefs_hold(), under lock */

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
			ours = true;
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
		umount(SP_TRACEFS_DIR);
		ours = false;
	}
	pthread_mutex_unlock(&lock);
}
