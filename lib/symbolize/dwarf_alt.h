/* SPDX-License-Identifier: MIT */
/*
 * dwarf_alt.h - a debug file's DWARF with the shared file its units refer
 * to (.gnu_debugaltlink: dwz's multifile), opened by us, never by libdw.
 */
#ifndef STACKPULSE_DWARF_ALT_H
#define STACKPULSE_DWARF_ALT_H
#include <elfutils/libdw.h>

/*
 * dwarf_begin_elf(elf) of the file at path, its shared file set when it
 * names one: looked for by its build-id in where's directories, else by
 * its name (an absolute one in the sysroot first, a relative one next to
 * path). NULL with *why when libdw refused the file (its message) or
 * the shared file it names was not found, not a regular file, or another
 * file than the link's build-id says: libdw would look for it itself, at
 * the first unit that refers to it, with a plain open() of a path the
 * binary chose (a FIFO there held sp-symbolize forever).
 */
struct sp_dwarf_where {
	const char *const *dirs;	/* debug directories: DIR/.build-id/xx/yyyy.debug */
	size_t ndirs;
	const char *sysroot;		/* put before an absolute name; NULL = "/" */
};
Dwarf *sp_dwarf_begin(Elf *elf, const char *path, const struct sp_dwarf_where *where,
		      const char **why);
/* dwarf_end() of a Dwarf of sp_dwarf_begin(), and of its shared file. */
void sp_dwarf_end(Dwarf *dw);
#endif
