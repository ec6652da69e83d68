// SPDX-License-Identifier: MIT
/*
 * A spool file's writer lock (spool_lock.h). Open file description locks,
 * not classic POSIX ones: those belong to the process and are dropped when
 * it closes any descriptor of the file; these go with the open file itself,
 * and a command sp-record runs never has that (its descriptors are
 * close-on-exec).
 */
#include <fcntl.h>
#include <string.h>

#include "spool_lock.h"

int sp_spool_lock(int fd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;	/* the whole file, however long it grows */
	return fcntl(fd, F_OFD_SETLK, &fl);
}

int sp_spool_locked(int fd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;	/* would a writer's lock be in the way? */
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_OFD_GETLK, &fl))
		return -1;
	/* a write lock only: anyone who may read the file may hold a read
	 * lock on it, and let it go to make a follower stop early */
	return fl.l_type == F_WRLCK;
}
