/* SPDX-License-Identifier: MIT */
/*
 * procroot.h - files as a process in another mount namespace (a container)
 * names them, reached from the host through /proc/PID/root while it lives.
 *
 * The process's root holds whatever the container put there: a path is
 * resolved inside that root (openat2's RESOLVE_IN_ROOT, so an absolute
 * link "/etc/shadow" left there stays in the container's tree, and
 * RESOLVE_NO_MAGICLINKS), never against the host's. What is opened is an
 * O_PATH descriptor: the caller checks its type and owner before reading
 * (safefile.h). Functions return -1 with errno set and report nothing.
 */
#ifndef STACKPULSE_PROCROOT_H
#define STACKPULSE_PROCROOT_H

#include <stdbool.h>
#include <stdint.h>

/* Whether pid's mount namespace is not ours (its paths are not the
 * host's); false when it cannot be told (the process is gone). */
bool sp_proc_other_mnt_ns(uint32_t pid);

/* The root directory of pid (O_PATH, O_DIRECTORY), or -1. */
int sp_proc_root_dir(uint32_t pid);

/* path (absolute, as the process names it) resolved inside the root
 * directory rootfd: an O_PATH descriptor, or -1. nofollow: the last
 * component is not followed if it is a link (ELOOP). */
int sp_proc_root_open(int rootfd, const char *path, bool nofollow);

#endif
