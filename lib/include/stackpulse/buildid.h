/* SPDX-License-Identifier: MIT */
/*
 * buildid.h - what sp-record needs from an ELF file it sees mapped: its GNU
 * build-id and its loadable segments, to turn a file offset into the ELF
 * virtual address that nm and the symbol tables use.
 */
#ifndef STACKPULSE_BUILDID_H
#define STACKPULSE_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define SP_BUILD_ID_MAX 64
#define SP_ELF_MAX_LOADS 16

struct sp_elf_load {
	uint64_t vaddr, offset, filesz, align;
};

struct sp_elf_info {
	uint8_t build_id[SP_BUILD_ID_MAX];
	unsigned int build_id_len;	/* 0: the file has none */
	unsigned int nloads;
	struct sp_elf_load load[SP_ELF_MAX_LOADS];
};

/* Read an ELF file, if it is a regular file (a FIFO or a device is never
 * opened, safefile.h). 0, or -1 with errno set (EINVAL: not ELF; EPERM: not
 * a regular file); nothing reported. */
int sp_elf_info_file(const char *path, struct sp_elf_info *info);
/* The same from an image in memory (the vDSO). */
int sp_elf_info_mem(const void *image, size_t size, struct sp_elf_info *info);

/*
 * The constant to add to a file offset inside the segment that a mapping at
 * file offset pgoff comes from, to get the ELF virtual address
 * (p_vaddr - p_offset of that PT_LOAD). 0 when no segment holds pgoff.
 */
int64_t sp_elf_bias(const struct sp_elf_info *info, uint64_t pgoff);

/* Find the GNU build-id note in a note area (native byte order). Returns its
 * length (at most max bytes copied), 0 if none. */
unsigned int sp_buildid_from_notes(const uint8_t *p, size_t len, uint8_t *id, size_t max);

/* The running kernel's build-id from /sys/kernel/notes. Length or 0. */
unsigned int sp_buildid_kernel(uint8_t *id, size_t max);

/* Lowercase hex of a build-id into buf (2 * len + 1 bytes). */
char *sp_buildid_hex(const uint8_t *id, unsigned int len, char *buf);

#endif
