/* SPDX-License-Identifier: MIT */
/* libc_debug.h - where the unit tests find libc's separate debug file. */
#ifndef STACKPULSE_TEST_LIBC_DEBUG_H
#define STACKPULSE_TEST_LIBC_DEBUG_H

#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "buildid.h"

/* libc's debug file (libc6-dbg) by the build-id of the libc we run, into
 * path; false when it is not installed. */
static inline bool find_libc_debug(char *path, size_t size)
{
	struct sp_elf_info info;
	char hex[2 * SP_BUILD_ID_MAX + 1];

	if (sp_elf_info_file("/lib/x86_64-linux-gnu/libc.so.6", &info) < 0 ||
	    info.build_id_len < 2)
		return false;
	sp_buildid_hex(info.build_id, info.build_id_len, hex);
	snprintf(path, size, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	return access(path, R_OK) == 0;
}

#endif
