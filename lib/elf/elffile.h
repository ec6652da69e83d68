/* SPDX-License-Identifier: MIT */
/*
 * elffile.h - opening an ELF file: the one way every stage does it, and two
 * questions asked of every file opened (a section, the build-id).
 *
 * The path is someone else's (a traced process's mapping, a module path
 * in a spool, a debug link), so it is opened only if it is a regular file
 * (sp_safe_open(), safefile.h): a FIFO would block the opener, a device may
 * act on being opened. libelf then gets it in one of two ways, chosen by
 * the caller:
 *
 *  SP_ELF_READ  libelf reads what it is asked for through the descriptor
 *               (ELF_C_READ), which stays open with the handle. A file cut
 *               short while it is read gives read errors, never a signal:
 *               the choice for files others can change under us.
 *  SP_ELF_MAP   the file is mapped (ELF_C_READ_MMAP) and the descriptor is
 *               not used again (ELF_C_FDDONE). Nothing is copied, but a file
 *               truncated while mapped raises SIGBUS at the next read past
 *               its new end.
 *
 * Nothing here is reported: the callers say what a failure means to them.
 */
#ifndef STACKPULSE_ELF_ELFFILE_H
#define STACKPULSE_ELF_ELFFILE_H

#include <stdbool.h>
#include <stdint.h>

#include <gelf.h>
#include <libelf.h>

enum sp_elf_access {
	SP_ELF_READ,
	SP_ELF_MAP,
};

/*
 * Open path as an ELF file if it is a regular file of at most max_size
 * bytes (0: any size). Returns libelf's handle and in *fd the descriptor
 * behind it (-1 with SP_ELF_MAP: closed already); sp_elf_close() releases
 * both. NULL on failure with errno set (ENOEXEC: not an ELF file; EPERM: a
 * refused file) and *why (may be NULL) a static reason: safefile.h's for a
 * refused file ("too large", "not a regular file: a FIFO", ...), "not an
 * ELF file", or NULL when a system call failed (ENOENT: not there).
 */
Elf *sp_elf_open(const char *path, enum sp_elf_access how, uint64_t max_size, int *fd,
		 const char **why);

/*
 * The same for a descriptor the caller opened (with sp_safe_open()) and
 * keeps: with SP_ELF_READ it must stay open until elf_end(); with
 * SP_ELF_MAP it may be closed as soon as this returns. NULL (errno
 * ENOEXEC) if it is not an ELF file.
 */
Elf *sp_elf_begin(int fd, enum sp_elf_access how);

/* elf_end() and close(); either may be NULL or -1. errno is kept. */
void sp_elf_close(Elf *elf, int fd);

/*
 * Bounds on what libelf reads whole and allocates for, which the file's
 * owner chooses: a section's sh_size (a sparse file of a few MB on disk
 * can say 3 GiB), its number of sections and program headers.
 * sp_elf_begin() refuses a file with more than SP_ELF_MAX_HEADERS of
 * either; sp_elf_data_max() gives a section's data only when it is at most
 * max bytes; sp_elf_strtab_ok(): whether string section ndx (elf_strptr()
 * reads it whole) is at most max bytes; sp_elf_shstrndx():
 * elf_getshdrstrndx(), -1 when the section names' table is larger than
 * SP_ELF_NAMES_MAX.
 */
#define SP_ELF_MAX_HEADERS	65536u
#define SP_ELF_NAMES_MAX	(1u << 20)
#define SP_ELF_STRTAB_MAX	(64u << 20)
#define SP_ELF_SYMTAB_MAX	(64u << 20)
Elf_Data *sp_elf_data_max(Elf_Scn *scn, const GElf_Shdr *sh, uint64_t max);
bool sp_elf_strtab_ok(Elf *elf, size_t ndx, uint64_t max);
int sp_elf_shstrndx(Elf *elf, size_t *ndx);
/*
 * libdw reads whole what it takes from a file opened for reading (not
 * mapped): .eh_frame and .eh_frame_hdr for dwarf_getcfi_elf(), every
 * .debug_* section for dwarf_begin_elf(), a compressed one at the size its
 * header says once inflated, and without section headers the loadable
 * segments. The name of the first of these above SP_ELF_CFI_MAX bytes
 * (only .debug_* ones when debug), or NULL when none is.
 */
#define SP_ELF_CFI_MAX	(64u << 20)
const char *sp_elf_dwarf_too_big(Elf *elf, bool debug);

/* Whether elf has a section of this name (with file contents, when with_bits). */
bool sp_elf_has_section(Elf *elf, const char *name, bool with_bits);
/* The first section of this name, its header in *sh; NULL if none. */
Elf_Scn *sp_elf_section(Elf *elf, const char *name, GElf_Shdr *sh);

/*
 * The GNU build-id of elf into id (SP_BUILD_ID_MAX bytes): its length, 0
 * if none. Note sections are looked at before program headers: a separate
 * debug file keeps the program headers of the file it was stripped from,
 * whose notes are not where they point.
 */
unsigned int sp_elf_build_id(Elf *elf, uint8_t *id);

/*
 * Whether a mapping's path (as /proc/PID/maps and MMAP2 records give it)
 * names no file that may be opened by that name: a file deleted since it
 * was mapped ("PATH (deleted)", a service's binary after an upgrade) or a
 * memfd ("/memfd:NAME (deleted)", which never had a name). Anyone may have
 * made a file of that name since: its image is read through
 * /proc/PID/map_files only, while the process lives.
 */
bool sp_elf_path_unlinked(const char *path);
/*
 * Whether it is a memfd's: the code of a program run from one (fexecve, as
 * runc and systemd do) is an ELF file's, a JIT's (.NET's double mapping)
 * is not. Only its contents tell them apart.
 */
bool sp_elf_path_memfd(const char *path);

#endif
