// SPDX-License-Identifier: MIT
/* GNU build-ids and loadable segments of ELF files, with libelf. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "elffile.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

unsigned int sp_buildid_from_notes(const uint8_t *p, size_t len, uint8_t *id, size_t max)
{
	uint32_t namesz, descsz, type;
	size_t off = 0, nameoff, descoff, next;

	while (off <= len && len - off >= 12) {
		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		nameoff = off + 12;
		descoff = nameoff + (((size_t)namesz + 3) & ~(size_t)3);
		next = descoff + (((size_t)descsz + 3) & ~(size_t)3);
		if (namesz > len || descsz > len || next > len || descoff > len)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + nameoff, "GNU", 4)) {
			if (descsz == 0)
				return 0;
			memcpy(id, p + descoff, descsz < max ? descsz : max);
			return descsz < max ? descsz : (unsigned int)max;
		}
		off = next;
	}
	return 0;
}

static int from_elf(Elf *elf, struct sp_elf_info *info)
{
	unsigned int notes = 0;
	size_t i, nph;
	GElf_Phdr ph;
	Elf_Data *d;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	memset(info, 0, sizeof(*info));
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && info->nloads < SP_ELF_MAX_LOADS) {
			info->load[info->nloads].vaddr = ph.p_vaddr;
			info->load[info->nloads].offset = ph.p_offset;
			info->load[info->nloads].filesz = ph.p_filesz;
			info->load[info->nloads].align = ph.p_align;
			info->nloads++;
		} else if (ph.p_type == PT_NOTE && !info->build_id_len &&
			   ph.p_filesz <= SP_ELF_NAMES_MAX) {
			d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_BYTE);
			if (d && d->d_buf)
				info->build_id_len = sp_buildid_from_notes(d->d_buf, d->d_size,
									   info->build_id,
									   SP_BUILD_ID_MAX);
		}
	}
	/* Files without program-header notes (rare): look at the sections. */
	while (!info->build_id_len && (scn = elf_nextscn(elf, scn)) && notes < 16) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || sh.sh_size > SP_ELF_NAMES_MAX)
			continue;
		notes++;	/* a few: libelf keeps each it reads */
		d = elf_rawdata(scn, NULL);
		if (d && d->d_buf)
			info->build_id_len = sp_buildid_from_notes(d->d_buf, d->d_size,
								   info->build_id, SP_BUILD_ID_MAX);
	}
	return 0;
}

int sp_elf_info_file(const char *path, struct sp_elf_info *info)
{
	Elf *elf;
	int fd, ret;

	/* The path is another process's: a regular file only, read rather
	 * than mapped, as its owner may truncate it meanwhile (elffile.h). */
	elf = sp_elf_open(path, SP_ELF_READ, 0, &fd, NULL);
	if (!elf) {
		if (errno == ENOEXEC) {
			memset(info, 0, sizeof(*info));
			errno = EINVAL;
		}
		return -1;
	}
	ret = from_elf(elf, info);
	sp_elf_close(elf, fd);
	return ret;
}

int sp_elf_info_mem(const void *image, size_t size, struct sp_elf_info *info)
{
	Elf *elf;
	int ret;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	ret = from_elf(elf, info);
	if (elf)
		elf_end(elf);
	return ret;
}

int64_t sp_elf_bias(const struct sp_elf_info *info, uint64_t pgoff)
{
	const struct sp_elf_load *l;
	uint64_t align, lo;
	unsigned int i;

	for (i = 0; i < info->nloads; i++) {
		l = &info->load[i];
		align = l->align > 1 ? l->align : 4096;
		if (align & (align - 1))
			align = 4096;
		lo = l->offset & ~(align - 1);
		if (pgoff >= lo && pgoff < l->offset + (l->filesz ? l->filesz : 1))
			return (int64_t)(l->vaddr - l->offset);
	}
	return 0;
}

unsigned int sp_buildid_kernel(uint8_t *id, size_t max)
{
	uint8_t buf[4096];
	ssize_t n;
	int fd;

	fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return 0;
	return sp_buildid_from_notes(buf, (size_t)n, id, max);
}

char *sp_buildid_hex(const uint8_t *id, unsigned int len, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	unsigned int i;

	for (i = 0; i < len; i++) {
		buf[2 * i] = hex[id[i] >> 4];
		buf[2 * i + 1] = hex[id[i] & 15];
	}
	buf[2 * len] = 0;
	return buf;
}
