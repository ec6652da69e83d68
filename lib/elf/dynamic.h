/* SPDX-License-Identifier: MIT */
/*
 * dynamic.h - what the dynamic loader sees of an ELF file: where its
 * loaded segments put a file offset in memory and back, the libraries it
 * needs (resolved as ld.so would: RUNPATH, then the standard directories),
 * and its symbols' bytes and offsets.
 *
 * The files are traced processes' binaries: opened with sp_elf_open()
 * (regular files only, read, never mapped); a symbol's bytes are copied
 * only from inside its section's data. Nothing here is reported.
 */
#ifndef STACKPULSE_ELF_DYNAMIC_H
#define STACKPULSE_ELF_DYNAMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

/* The file offset of virtual address va in e's loaded segments (only the
 * executable ones with exec), or -1. */
int64_t sp_elf_va_to_offset(Elf *e, uint64_t va, bool exec);

/* The virtual address of file offset off in e's executable segments, or
 * UINT64_MAX. */
uint64_t sp_elf_offset_to_va(Elf *e, uint64_t off);

/* How sp_elf_needed_libs() searches, as ld.so would for one process. */
#define SP_ELF_GROUPS_MAX	64
#define SP_ELF_UID_UNKNOWN	UINT32_MAX

struct sp_elf_libsearch {
	const char *ld_path;	/* its LD_LIBRARY_PATH (NULL: none; the caller
				 * leaves it out where ld.so would: AT_SECURE) */
	const char *cwd;	/* its working directory ("/proc/PID/cwd"), for
				 * empty and relative entries; NULL: skipped */
	uint32_t uid;		/* its user (0: root, any file): a file found
				 * that this user cannot read (by the modes
				 * for its owner, its groups and others), or
				 * whose directories it cannot search, is not
				 * its: a link to root's files in a directory
				 * of its own is not followed there. A user
				 * not known: SP_ELF_UID_UNKNOWN, others' bits */
	uint32_t gid;		/* its file-system group */
	uint32_t groups[SP_ELF_GROUPS_MAX];	/* its supplementary groups */
	unsigned int ngroups;
	/* results */
	bool via_ld_path;	/* a library was found through ld_path */
	bool missing;		/* a library asked for was found nowhere */
};

/*
 * The libraries the executable at exe needs (DT_NEEDED, at most 16 of
 * them; only those want() says yes to, all with want NULL), each found as
 * ld.so finds it: its DT_RPATH (without a DT_RUNPATH), LD_LIBRARY_PATH
 * (how, may be NULL), its DT_RUNPATH ($ORIGIN too), the standard
 * directories; in each directory first its glibc-hwcaps subdirectories
 * this CPU can run (x86-64-v4, -v3, -v2); made absolute, into paths[] (at
 * most n). How many; 0 when exe is no ELF file. Not searched: $LIB,
 * $PLATFORM, the legacy subdirectories (tls, x86_64), directories only
 * ld.so.cache lists.
 */
int sp_elf_needed_libs(const char *exe, bool (*want)(const char *name),
		       struct sp_elf_libsearch *how, char paths[][4096], int n);

/* The size bytes at dynamic symbol sym's address in the file at path into
 * buf. 0, or -1 when there is no such defined symbol or its bytes are not
 * all in the file. */
int sp_elf_read_dynsym(const char *path, const char *sym, void *buf, size_t size);

/* The file offset of function sym in the file at path (its .dynsym, else
 * .symtab), in an executable segment; 0 if none. */
uint64_t sp_elf_func_offset(const char *path, const char *sym);

#endif
