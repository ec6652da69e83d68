// SPDX-License-Identifier: MIT
/*
 * USDT notes (usdt.h): the one reader of an ELF file's .note.stapsdt
 * section, for the spans source's look at a binary's providers and for
 * the locations its probes are attached at.
 */
#include <errno.h>
#include <gelf.h>
#include <string.h>
#include <sys/stat.h>

#include "elf/dynamic.h"
#include "elf/elffile.h"
#include "elf/usdt.h"
#include "sp.h"

/* NT_STAPSDT: the type of an SDT note. */
#define SP_NT_STAPSDT	3
/* The notes read (libelf reads the section whole): Debian's libruby has
 * 12 KB of them, a note is about 100 bytes. */
#define SP_USDT_NOTES_MAX	(16u << 20)

int sp_usdt_notes(const char *path, void (*fn)(void *arg, const struct sp_usdt_note *n),
		  void *arg)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	int fd;
	Elf *e = sp_elf_open(path, SP_ELF_READ, 0, &fd, NULL);

	if (!e)
		return -1;
	if (sp_elf_shstrndx(e, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		if (sh.sh_size > SP_USDT_NOTES_MAX) {
			/* its owner's to say; said, not read */
			sp_warn("'%s' says its USDT notes (.note.stapsdt) are %llu bytes, more "
				"than the %u read: its probes are not used", path,
				(unsigned long long)sh.sh_size, SP_USDT_NOTES_MAX);
			continue;
		}
		d = sp_elf_data_max(scn, &sh, SP_USDT_NOTES_MAX);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *desc = (const char *)d->d_buf + doff, *end, *pname, *z;
			size_t head = gelf_getclass(e) == ELFCLASS64 ? 24 : 12;
			struct sp_usdt_note n;

			if (nh.n_type != SP_NT_STAPSDT || nh.n_descsz <= head || nh.n_namesz != 8 ||
			    memcmp((const char *)d->d_buf + noff, "stapsdt", 8))
				continue;
			/* provider, name, operands: NUL-terminated in a row */
			n.provider = desc + head;
			end = desc + nh.n_descsz;
			if (!memchr(n.provider, 0, nh.n_descsz - head))
				continue;
			pname = n.provider + strlen(n.provider) + 1;
			z = pname < end ? memchr(pname, 0, end - pname) : NULL;
			n.name = z ? pname : NULL;
			n.args = z && z + 1 < end && memchr(z + 1, 0, end - (z + 1)) ? z + 1 : NULL;
			fn(arg, &n);
		}
		break;	/* one section of notes: libelf keeps each it reads */
	}
out:
	sp_elf_close(e, fd);
	return 0;
}

/* The address of .stapsdt.base as linked (0: none), which a prelinked
 * file's notes are relative to. */
static uint64_t stapsdt_base(Elf *e, size_t shstrndx)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t base = 0;
	const char *sn;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && (sn = elf_strptr(e, shstrndx, sh.sh_name)) &&
		    !strcmp(sn, ".stapsdt.base"))
			base = sh.sh_addr;
	return base;
}

/* The location a 64-bit note describes, checked against the file: 0, or -1. */
static int note_loc(Elf *e, const char *desc, uint64_t base_addr, uint64_t fsize,
		    struct sp_usdt_loc *l)
{
	uint64_t pc, base, sem;
	int64_t fo, so = 0;

	memcpy(&pc, desc, 8);
	memcpy(&base, desc + 8, 8);
	memcpy(&sem, desc + 16, 8);
	if (base_addr && base)
		pc += base_addr - base;	/* prelinked */
	fo = sp_elf_va_to_offset(e, pc, true);
	if (sem)
		so = sp_elf_va_to_offset(e, sem, false);
	if (fo < 0 || (uint64_t)fo >= fsize || so < 0 || (uint64_t)so >= fsize)
		return -1;
	l->off = (uint64_t)fo;
	l->sem = sem != 0;
	l->sem_off = (uint64_t)so;
	return 0;
}

int sp_usdt_locations(const char *path, const char *provider, const char *name,
		      int (*fn)(void *arg, const struct sp_usdt_loc *l), void *arg)
{
	uint64_t base_addr, fsize;
	Elf_Scn *scn = NULL;
	struct stat st;
	GElf_Shdr sh;
	size_t shstrndx;
	int fd, n = 0;
	Elf *e = sp_elf_open(path, SP_ELF_READ, 0, &fd, NULL);

	if (!e)
		return -1;
	if (sp_elf_shstrndx(e, &shstrndx) || gelf_getclass(e) != ELFCLASS64 || fstat(fd, &st))
		goto fail;
	fsize = (uint64_t)st.st_size;	/* a location must be in the file */
	base_addr = stapsdt_base(e, shstrndx);
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		const char *sn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(sn = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(sn, ".note.stapsdt"))
			continue;
		d = sp_elf_data_max(scn, &sh, SP_USDT_NOTES_MAX);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *desc = (const char *)d->d_buf + doff, *end = desc + nh.n_descsz;
			const char *prov = desc + 24, *pname;
			struct sp_usdt_loc l;

			if (nh.n_type != SP_NT_STAPSDT || nh.n_descsz <= 24 ||
			    !memchr(prov, 0, end - prov))
				continue;
			pname = prov + strlen(prov) + 1;
			if (pname >= end || !memchr(pname, 0, end - pname))
				continue;
			l.args = pname + strlen(pname) + 1;
			if (strcmp(prov, provider) || strcmp(pname, name))
				continue;
			if (l.args >= end || !memchr(l.args, 0, end - l.args) ||
			    note_loc(e, desc, base_addr, fsize, &l) || fn(arg, &l))
				goto fail;
			n++;
		}
		break;	/* one section of notes, as sp_usdt_notes() reads */
	}
	sp_elf_close(e, fd);
	return n;
fail:
	sp_elf_close(e, fd);
	return -1;
}

struct offsets {
	const char *args;
	uint64_t *offs;
	int n, max;
};

/* A semaphore needs a reference counter, other operands another BPF
 * program: neither is for the caller's attachment. */
static int offsets_add(void *arg, const struct sp_usdt_loc *l)
{
	struct offsets *o = arg;

	if (l->sem || (o->args && strcmp(l->args, o->args)) || o->n >= o->max)
		return -1;
	o->offs[o->n++] = l->off;
	return 0;
}

int sp_usdt_offsets(const char *path, const char *provider, const char *name,
		    const char *args, uint64_t *offs, int max)
{
	struct offsets o = { args, offs, 0, max };

	return sp_usdt_locations(path, provider, name, offsets_add, &o);
}
