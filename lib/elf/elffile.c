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

/* Whether the file's own header keeps its section and program header
 * counts within SP_ELF_MAX_HEADERS: libelf allocates a table for each at
 * elf_begin(), as large as the count (the extended counts of section 0
 * included). Read before libelf sees the file. */
static bool headers_bounded(int fd)
{
	union { Elf64_Ehdr e64; Elf32_Ehdr e32; } eh;
	union { Elf64_Shdr s64; Elf32_Shdr s32; } s0;
	uint64_t shnum, phnum, shoff;
	bool is64;

	if (pread(fd, &eh, sizeof(eh), 0) < (ssize_t)sizeof(eh.e32) ||
	    memcmp(eh.e32.e_ident, ELFMAG, SELFMAG))
		return true;	/* not ELF, or short: libelf says */
	/* libelf takes the extended counts of either class */
	is64 = eh.e32.e_ident[EI_CLASS] == ELFCLASS64;
	shnum = is64 ? eh.e64.e_shnum : eh.e32.e_shnum;
	phnum = is64 ? eh.e64.e_phnum : eh.e32.e_phnum;
	shoff = is64 ? eh.e64.e_shoff : eh.e32.e_shoff;
	if ((!shnum || phnum == PN_XNUM) && shoff) {
		if (pread(fd, &s0, is64 ? sizeof(s0.s64) : sizeof(s0.s32), (off_t)shoff) !=
		    (ssize_t)(is64 ? sizeof(s0.s64) : sizeof(s0.s32)))
			return false;
		if (!shnum)
			shnum = is64 ? s0.s64.sh_size : s0.s32.sh_size;
		if (phnum == PN_XNUM)
			phnum = is64 ? s0.s64.sh_info : s0.s32.sh_info;
	}
	return shnum <= SP_ELF_MAX_HEADERS && phnum <= SP_ELF_MAX_HEADERS;
}

Elf *sp_elf_begin(int fd, enum sp_elf_access how)
{
	Elf *elf;

	if (!headers_bounded(fd)) {
		errno = ENOEXEC;
		return NULL;
	}
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

Elf_Data *sp_elf_data_max(Elf_Scn *scn, const GElf_Shdr *sh, uint64_t max)
{
	if (sh->sh_type != SHT_NOBITS && sh->sh_size > max)
		return NULL;
	return elf_getdata(scn, NULL);
}

bool sp_elf_strtab_ok(Elf *elf, size_t ndx, uint64_t max)
{
	Elf_Scn *scn = elf_getscn(elf, ndx);
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && sh.sh_size <= max;
}

static bool scn_too_big(Elf_Scn *scn, const GElf_Shdr *sh)
{
	GElf_Chdr ch;

	if (sh->sh_type == SHT_NOBITS)
		return false;
	if (sh->sh_size > SP_ELF_CFI_MAX)
		return true;
	return (sh->sh_flags & SHF_COMPRESSED) &&
	       (!gelf_getchdr(scn, &ch) || ch.ch_size > SP_ELF_CFI_MAX);
}

const char *sp_elf_dwarf_too_big(Elf *elf, bool debug)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, shnum = 0, phnum = 0, i;
	const char *name;
	GElf_Shdr sh;
	GElf_Phdr ph;

	if (elf_getshdrnum(elf, &shnum) || !shnum) {
		/* libdw finds .eh_frame through the segments then */
		if (debug || elf_getphdrnum(elf, &phnum))
			return NULL;
		for (i = 0; i < phnum; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    ph.p_filesz > 4ull * SP_ELF_CFI_MAX)
				return "a loadable segment";
		return NULL;
	}
	if (sp_elf_shstrndx(elf, &shstrndx))
		return ".shstrtab";
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (debug ? !strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8) :
			    !strcmp(name, ".eh_frame") || !strcmp(name, ".eh_frame_hdr"))
			if (scn_too_big(scn, &sh))
				return name;
	}
	return NULL;
}

int sp_elf_shstrndx(Elf *elf, size_t *ndx)
{
	if (elf_getshdrstrndx(elf, ndx) != 0 || !sp_elf_strtab_ok(elf, *ndx, SP_ELF_NAMES_MAX))
		return -1;
	return 0;
}

Elf_Scn *sp_elf_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (sp_elf_shstrndx(elf, &shstrndx) != 0)
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
	unsigned int notes = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	size_t i, nph;
	unsigned int n;

	while ((scn = elf_nextscn(elf, scn)) && notes < 16) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		notes++;	/* a few: libelf keeps each it reads */
		d = sp_elf_data_max(scn, &sh, SP_ELF_NAMES_MAX);
		if (d && d->d_buf &&
		    (n = sp_buildid_from_notes(d->d_buf, d->d_size, id, SP_BUILD_ID_MAX)))
			return n;
	}
	if (elf_getphdrnum(elf, &nph) != 0)
		return 0;
	for (i = 0; i < nph && i < 256; i++) {
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
		    ph.p_filesz > SP_ELF_NAMES_MAX)
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
