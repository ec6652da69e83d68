/* SPDX-License-Identifier: MIT */
/*
 * spool_lock.h - whether a spool file's writer is still there.
 *
 * sp-record holds a write lock (an open file description lock, F_OFD_SETLK)
 * on each spool file it writes, from its creation to its close. The kernel
 * drops it when the last descriptor of that open file goes, however the
 * writer ended (SIGKILL included), so a follower (sp-decode --follow) can
 * tell a writer that is gone from one that is only quiet. The lock is
 * advisory: it keeps nobody from reading or writing the file.
 */
#ifndef STACKPULSE_SPOOL_LOCK_H
#define STACKPULSE_SPOOL_LOCK_H

/* Writer: lock fd's file (open for writing). 0, or -1 with errno (the file
 * system has no such locks, or only ones that are not advisory, SMB's:
 * ENOTSUP; or another program holds one: EAGAIN). */
int sp_spool_lock(int fd);

/* Reader: 1 a writer holds a write lock on fd's file (one that may open it
 * for writing: a read lock, which any reader may take, does not count), 0
 * none, -1 cannot tell. */
int sp_spool_locked(int fd);

#endif
