/* SPDX-License-Identifier: MIT */
/*
 * fstarts.h - where the functions of an ELF file start, from the binary
 * search table of its .eh_frame_hdr (one entry per FDE, sorted by the
 * first address it covers): every function with CFI, symbols or not, as
 * Debian's stripped libraries have them. A function is taken to end where
 * the next one starts (its padding counts as its own).
 *
 * The file is someone else's: the table is read only when its encoding is
 * the one linkers write (version 1, entries of two 4-byte values relative
 * to the section), bounded by the section's size, and kept only when
 * sorted.
 */
#ifndef STACKPULSE_ELF_FSTARTS_H
#define STACKPULSE_ELF_FSTARTS_H

#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

#define SP_FSTARTS_MAX	(1u << 20)	/* FDEs of a file kept */

struct sp_fstarts {
	uint64_t *at;		/* ELF addresses, ascending; malloc'd */
	size_t n;
};

/* The table of elf into *f: 0, or -1 (no table, or one not read: f empty). */
int sp_fstarts_read(Elf *elf, struct sp_fstarts *f);
/* The .eh_frame_hdr section's bytes (len of them, at ELF address addr)
 * into *f, as sp_fstarts_read() reads them: 0 or -1. */
int sp_fstarts_parse(const uint8_t *b, size_t len, uint64_t addr, struct sp_fstarts *f);
/* Whether a function starts at addr: 1 with its end (the next start) in
 * *end, else 0 (also for the last one: its end is not in the table). */
int sp_fstarts_find(const struct sp_fstarts *f, uint64_t addr, uint64_t *end);
void sp_fstarts_release(struct sp_fstarts *f);

#endif
