/* SPDX-License-Identifier: MIT */
/*
 * usdt.h - the USDT probes an ELF file declares in its .note.stapsdt
 * section (SystemTap's SDT notes, which <sys/sdt.h>, Ruby's and CPython's
 * dtrace builds and <stackpulse/span.h> write): each note names a
 * provider, a probe and the probe's operands ("8@%rdi -4@%edx"), and gives
 * the address of one location of the probe and of its semaphore.
 *
 * The file is a traced process's binary (someone else's): it is opened
 * with sp_elf_open() (regular files only, read, never mapped), every
 * string is checked to end inside its note, and a location outside the
 * file's executable segments makes the probe unusable. Nothing here is
 * reported: the callers say what a failure means to them.
 */
#ifndef STACKPULSE_ELF_USDT_H
#define STACKPULSE_ELF_USDT_H

#include <stdbool.h>
#include <stdint.h>

/* One note, as sp_usdt_notes() hands it over: valid during the call. */
struct sp_usdt_note {
	const char *provider;
	const char *name;	/* NULL when it does not end inside the note */
	const char *args;	/* its operands; NULL likewise */
};

/*
 * Call fn for every SDT note of the ELF file at path (32- and 64-bit).
 * 0, or -1 with errno set when the file cannot be opened as ELF.
 */
int sp_usdt_notes(const char *path, void (*fn)(void *arg, const struct sp_usdt_note *n),
		  void *arg);

/* One location of a probe, as sp_usdt_locations() hands it over. */
struct sp_usdt_loc {
	uint64_t off;		/* file offset of the probe's instruction */
	bool sem;		/* it has a semaphore (a reference counter) */
	uint64_t sem_off;	/* its file offset; 0 without one */
	const char *args;	/* the operands, valid during the call */
};

/*
 * Call fn for every location of probe provider:name in the 64-bit ELF file
 * at path (prelinked addresses corrected by .stapsdt.base). How many, or
 * -1 when the file is no 64-bit ELF file, a location's note has no
 * operands, a location or semaphore lies outside the file's loaded
 * segments, or fn returns non-zero.
 */
int sp_usdt_locations(const char *path, const char *provider, const char *name,
		      int (*fn)(void *arg, const struct sp_usdt_loc *l), void *arg);

/*
 * File offsets of the locations of USDT probe provider:name in path, into
 * offs (at most max): how many, or -1 when one has a semaphore, operands
 * other than args (NULL: any), there are more than max, or
 * sp_usdt_locations() fails.
 */
int sp_usdt_offsets(const char *path, const char *provider, const char *name,
		    const char *args, uint64_t *offs, int max);

#endif
