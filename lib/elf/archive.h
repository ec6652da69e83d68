/* SPDX-License-Identifier: MIT */
/*
 * archive.h - a directory of the exact binaries a recording sampled, one
 * copy per build-id, so that sp-symbolize resolves frames of files that
 * were deleted, replaced or never present on the analysing machine.
 *
 * Layout: DIR/xx/yyyy... where xxyyyy... is the build-id in lowercase hex
 * (like /usr/lib/debug/.build-id, without the suffix); a separate debug
 * file may be put next to it as DIR/xx/yyyy....debug. The copy is taken
 * through /proc/PID/map_files/START-END while the process runs, so it is
 * the mapped image even when the path now names another file, and is
 * checked against the build-id before it is renamed into place.
 */
#ifndef STACKPULSE_ARCHIVE_H
#define STACKPULSE_ARCHIVE_H

#include <stdint.h>

/* DIR/xx/yyyy...suffix, malloc()ed (suffix may be NULL); NULL if dir is NULL or len
 * is not that of a build-id. */
char *sp_archive_path(const char *dir, const uint8_t *build_id, unsigned int len,
		      const char *suffix);

/*
 * Copy the file that process pid maps at [start, end) into dir, unless a
 * copy with this build-id is there already. path is the mapping's path,
 * used through /proc/PID/root when map_files cannot be opened, and as it is
 * when the process is gone (a short-lived one), unless it names no file
 * (a deleted file's, a memfd's: sp_elf_path_unlinked()); every copy is checked
 * against build_id, so a replaced file is never archived, and only a
 * regular file is opened (never a device or a FIFO). Returns 1 copied, 0
 * already archived, -1 on failure with errno set (EINVAL: not a regular
 * file, or its build-id is not build_id; nothing is reported: the caller
 * decides how loud to be), or SP_ARCHIVE_REFUSED.
 *
 * sp-record is root and dir may be shared: dir and every directory above
 * it must be owned by root or the caller and not writable by others unless
 * sticky (safefile.h); DIR/xx is made and checked the same way, and a copy
 * is written to a new temporary (O_EXCL, O_NOFOLLOW) and renamed into
 * place, so no link another user left there is ever followed. A dir, or a
 * DIR/xx, that fails the checks is named once (a warning) and
 * SP_ARCHIVE_REFUSED (errno EPERM) is returned for what goes there.
 */
#define SP_ARCHIVE_REFUSED	(-2)
int sp_archive_module(const char *dir, uint64_t pid, uint64_t start, uint64_t end,
		      const char *path, const uint8_t *build_id, unsigned int len);

#endif
