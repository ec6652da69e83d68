// SPDX-License-Identifier: MIT
/*
 * Opening ELF files (elffile.h): regular files only, read or mapped as the
 * caller chooses; and the section and build-id look-ups every opener needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "elffile.h"
#include "safefile.h"

Elf *sp_elf_begin(int fd, enum sp_elf_access how)
{
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, how == SP_ELF_MAP ? ELF_C_READ_MMAP : ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		errno = ENOEXEC;
		return NULL;
	}
	if (how == SP_ELF_MAP)
		elf_cntl(elf, ELF_C_FDDONE);	/* everything is mapped */
	return elf;
}

Elf *sp_elf_open(const char *path, enum sp_elf_access how, uint64_t max_size, int *fd,
		 const char **why)
{
	const struct sp_safe_want w = { 0, 0, max_size };
	const char *reason = NULL;
	Elf *elf;

	*fd = sp_safe_open(AT_FDCWD, path, &w, NULL, &reason);
	if (why)
		*why = reason;
	if (*fd < 0)
		return NULL;
	elf = sp_elf_begin(*fd, how);
	if (!elf) {
		close(*fd);
		*fd = -1;
		errno = ENOEXEC;
		if (why)
			*why = "not an ELF file";
		return NULL;
	}
	if (how == SP_ELF_MAP) {
		close(*fd);
		*fd = -1;
	}
	return elf;
}

void sp_elf_close(Elf *elf, int fd)
{
	int e = errno;

	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	errno = e;
}

Elf_Scn *sp_elf_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

bool sp_elf_has_section(Elf *elf, const char *name, bool with_bits)
{
	GElf_Shdr sh;

	return sp_elf_section(elf, name, &sh) &&
	       (!with_bits || (sh.sh_type != SHT_NOBITS && sh.sh_size));
}

unsigned int sp_elf_build_id(Elf *elf, uint8_t *id)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	size_t i, nph;
	unsigned int n;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf &&
		    (n = sp_buildid_from_notes(d->d_buf, d->d_size, id, SP_BUILD_ID_MAX)))
			return n;
	}
	if (elf_getphdrnum(elf, &nph) != 0)
		return 0;
	for (i = 0; i < nph && i < 256; i++) {
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (d && d->d_buf &&
		    (n = sp_buildid_from_notes(d->d_buf, d->d_size, id, SP_BUILD_ID_MAX)))
			return n;
	}
	return 0;
}

bool sp_elf_path_memfd(const char *path)
{
	return path && !strncmp(path, "/memfd:", 7);
}

bool sp_elf_path_unlinked(const char *path)
{
	return sp_elf_path_memfd(path) || (path && strstr(path, " (deleted)"));
}
