// SPDX-License-Identifier: MIT
/*
 * A spool file's writer lock (spool_lock.h). Open file description locks,
 * not classic POSIX ones: those belong to the process and are dropped when
 * it closes any descriptor of the file; these go with the open file itself,
 * and a command sp-record runs never has that (its descriptors are
 * close-on-exec).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/vfs.h>

#include "spool_lock.h"

/* SMB's byte-range locks are not advisory (unless mounted nobrl): a lock
 * of ours there would make others' reads of the file fail. */
#define CIFS_MAGIC 0xFF534D42u
#define SMB2_MAGIC 0xFE534D42u

int sp_spool_lock(int fd)
{
	struct statfs fs;
	struct flock fl;

	if (fstatfs(fd, &fs) == 0 &&
	    ((uint32_t)fs.f_type == CIFS_MAGIC || (uint32_t)fs.f_type == SMB2_MAGIC)) {
		errno = ENOTSUP;
		return -1;
	}

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
