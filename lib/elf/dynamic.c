// SPDX-License-Identifier: MIT
/*
 * What the dynamic loader sees of an ELF file (dynamic.h): segment
 * offsets and addresses, the libraries it needs, its symbols' bytes; for
 * the spans source, which reads them from the binaries of the processes
 * it records.
 */
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "elf/dynamic.h"
#include "elf/elffile.h"

int64_t sp_elf_va_to_offset(Elf *e, uint64_t va, bool exec)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (!exec || (ph.p_flags & PF_X)) && va >= ph.p_vaddr &&
		    va < ph.p_vaddr + ph.p_filesz)
			return (int64_t)(va - ph.p_vaddr + ph.p_offset);
	return -1;
}

uint64_t sp_elf_offset_to_va(Elf *e, uint64_t off)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return UINT64_MAX;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    off >= ph.p_offset && off < ph.p_offset + ph.p_filesz)
			return off - ph.p_offset + ph.p_vaddr;
	return UINT64_MAX;
}

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* Whether user uid may read path (a resolved one: no links), by the owner's
 * group's (its file-system group or a supplementary one) and the others'
 * permission bits of the file and of each directory above it, as the
 * kernel picks them. An ACL's named users and groups are not looked at: a
 * file only they may read is taken as not readable, and ld.so's choice is
 * seen once the process runs: a file or directory with an ACL is its
 * owner's only (its named entries come first, its mask stands for the
 * group's bits). */
static bool in_groups(const struct sp_elf_libsearch *how, uint32_t gid)
{
	unsigned int i;

	if (how->uid == SP_ELF_UID_UNKNOWN)
		return false;
	if (gid == how->gid)
		return true;
	for (i = 0; i < how->ngroups && i < SP_ELF_GROUPS_MAX; i++)
		if (how->groups[i] == gid)
			return true;
	return false;
}

/* Whether the mode of st grants how's user the right of the owner's bit
 * own (S_IRUSR, S_IXUSR). */
static bool may(const struct sp_elf_libsearch *how, const char *path, const struct stat *st,
		mode_t own)
{
	if (how->uid != SP_ELF_UID_UNKNOWN && st->st_uid == how->uid)
		return st->st_mode & own;
	/* an ACL's named entries come before the group's and the others'
	 * bits, and its mask stands for the group's: not judged here */
	if (getxattr(path, "system.posix_acl_access", NULL, 0) > 0)
		return false;
	if (in_groups(how, st->st_gid))
		return st->st_mode & (own >> 3);
	return st->st_mode & (own >> 6);
}

static bool readable_by(const char *path, const struct sp_elf_libsearch *how)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	if (!how || !how->uid)
		return true;
	if (stat(path, &st) || !may(how, path, &st, S_IRUSR))
		return false;
	snprintf(dir, sizeof(dir), "%s", path);
	while ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = 0;
		if (stat(dir, &st) || !S_ISDIR(st.st_mode) || !may(how, dir, &st, S_IXUSR))
			return false;
	}
	return true;
}

/* The DT_NEEDED names want() takes (at most 16), the RUNPATH and the
 * RPATH of e. */
static int needed_names(Elf *e, bool (*want)(const char *name), const char **needed,
			const char **runpath, const char **rpath)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int nneeded = 0, seen = 0;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Dyn dyn;
		size_t j;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !sp_elf_strtab_ok(e, sh.sh_link, SP_ELF_STRTAB_MAX))
			continue;
		if (seen++)
			break;	/* one: libelf keeps each it reads */
		d = sp_elf_data_max(scn, &sh, SP_ELF_NAMES_MAX);
		for (j = 0; d && sh.sh_entsize && j < sh.sh_size / sh.sh_entsize; j++) {
			const char *s;

			if (!gelf_getdyn(d, j, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED) {
				if ((!want || want(s)) && nneeded < 16)
					needed[nneeded++] = s;
			} else if (dyn.d_tag == DT_RUNPATH) {
				*runpath = s;
			} else {
				*rpath = s;
			}
		}
	}
	return nneeded;
}

/* Whether dir starts with the token tok ("$ORIGIN", or "${ORIGIN}"),
 * whole: *rest gets what follows it. */
static bool origin_token(const char *dir, const char **rest)
{
	if (!strncmp(dir, "${ORIGIN}", 9)) {
		*rest = dir + 9;
		return true;
	}
	if (!strncmp(dir, "$ORIGIN", 7) && (dir[7] == 0 || dir[7] == '/')) {
		*rest = dir + 7;
		return true;
	}
	return false;
}

#if defined(__x86_64__)
/*
 * The x86-64 micro-architecture level this CPU and kernel run (2, 3, 4;
 * 1 for the baseline), as glibc's ld.so judges it for glibc-hwcaps: the
 * CPUID bits of each level, and for AVX and AVX-512 the registers' state
 * the kernel saves (XCR0). With <cpuid.h>, which both compilers have
 * (clang's __builtin_cpu_supports() does not know the levels' names).
 */
static int x86_level(void)
{
	unsigned int a, b, c, d, ext_c = 0, b7 = 0, xcr0 = 0;
	bool v2, v3, v4;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 1;
	if (__get_cpuid(0x80000001, &a, &b, &ext_c, &d) == 0)
		ext_c = 0;
	if (__get_cpuid_max(0, NULL) >= 7) {
		unsigned int c7, d7;

		__cpuid_count(7, 0, a, b7, c7, d7);
		(void)c7;
		(void)d7;
	}
	if (c & (1u << 27)) {	/* OSXSAVE: XGETBV may be used */
		unsigned int hi;

		__asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
		(void)hi;
	}
	/* SSE3 SSSE3 CMPXCHG16B SSE4.1 SSE4.2 POPCNT, LAHF-SAHF */
	v2 = (c & 0x00982201u) == 0x00982201u && (ext_c & 1u);
	/* AVX FMA MOVBE F16C XSAVE, AVX2 BMI1 BMI2, LZCNT; YMM state saved */
	v3 = v2 && (c & 0x34401000u) == 0x34401000u && (b7 & 0x128u) == 0x128u &&
	     (ext_c & (1u << 5)) && (xcr0 & 6u) == 6u;
	/* AVX512F DQ CD BW VL; opmask and ZMM state saved */
	v4 = v3 && (b7 & 0xd0030000u) == 0xd0030000u && (xcr0 & 0xe6u) == 0xe6u;
	return v4 ? 4 : v3 ? 3 : v2 ? 2 : 1;
}
#endif

/*
 * name in dir, as ld.so (glibc 2.33 and later) looks in each directory it
 * searches: first in the subdirectories glibc-hwcaps/x86-64-v4, -v3, -v2
 * that this CPU can run (a distribution's or a user's builds for newer
 * CPUs), then in dir itself; into cand. The legacy subdirectories (tls,
 * x86_64: searched by glibc 2.36, gone in 2.37) are not looked in.
 */
static bool in_dir(const char *dir, const char *name, char *cand, size_t size)
{
#if defined(__x86_64__)
	static int asked;	/* 0: not yet (any thread gets the same answer) */
	int level = __atomic_load_n(&asked, __ATOMIC_RELAXED);

	if (!level) {
		level = x86_level();
		__atomic_store_n(&asked, level, __ATOMIC_RELAXED);
	}
	for (int v = level; v >= 2; v--) {
		snprintf(cand, size, "%s/glibc-hwcaps/x86-64-v%d/%s", dir, v, name);
		if (is_file(cand))
			return true;
	}
#endif
	snprintf(cand, size, "%s/%s", dir, name);
	return is_file(cand);
}

/* name in the first directory of the list dirs (entries separated by
 * seps) that has it as a regular file, into cand: $ORIGIN is origin; an
 * empty or relative entry is under cwd (the process's working directory;
 * NULL: skipped). */
static bool in_dirs(const char *dirs, const char *seps, const char *origin, const char *cwd,
		    const char *name, char *cand, size_t size)
{
	char dir[PATH_MAX], full[PATH_MAX * 2];
	const char *p = dirs, *rest;

	while (p) {
		size_t len = strcspn(p, seps);

		if (len < sizeof(dir)) {
			memcpy(dir, p, len);
			dir[len] = 0;
			if (origin_token(dir, &rest))
				snprintf(full, sizeof(full), "%s%s", origin, rest);
			else if (dir[0] == '/')
				snprintf(full, sizeof(full), "%s", dir);
			else if (cwd)
				snprintf(full, sizeof(full), "%s%s%s", cwd, dir[0] ? "/" : "", dir);
			else
				full[0] = 0;
			if (full[0] && in_dir(full, name, cand, size))
				return true;
		}
		p = p[len] ? p + len + 1 : NULL;
	}
	return false;
}

int sp_elf_needed_libs(const char *exe, bool (*want)(const char *name),
		       struct sp_elf_libsearch *how, char paths[][4096], int n)
{
	static const char *const std_dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
		"/usr/local/lib", "/lib", "/usr/lib",
	};
	const char *needed[16], *runpath = NULL, *rpath = NULL;
	const char *ld_path = how ? how->ld_path : NULL, *cwd = how ? how->cwd : NULL;
	char origin[PATH_MAX], cand[PATH_MAX * 3], *slash;
	int fd, nneeded, found = 0, i;
	Elf *e = sp_elf_open(exe, SP_ELF_READ, 0, &fd, NULL);

	if (how)
		how->via_ld_path = how->missing = false;
	if (!e)
		return 0;
	nneeded = needed_names(e, want, needed, &runpath, &rpath);
	snprintf(origin, sizeof(origin), "%s", exe);
	slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	/* ld.so's order: DT_RPATH (only without DT_RUNPATH), LD_LIBRARY_PATH
	 * (':' or ';' between entries), DT_RUNPATH, then the system's
	 * directories; a name with a '/' is a path, searched nowhere */
	for (i = 0; i < nneeded && found < n; i++) {
		bool ok, via = false;

		if (strchr(needed[i], '/')) {
			snprintf(cand, sizeof(cand), "%s", needed[i]);
			ok = is_file(cand);
		} else {
			ok = !runpath && in_dirs(rpath, ":", origin, cwd, needed[i], cand, sizeof(cand));
			if (!ok)
				ok = via = in_dirs(ld_path, ":;", origin, cwd, needed[i], cand,
						   sizeof(cand));
			if (!ok)
				ok = in_dirs(runpath, ":", origin, cwd, needed[i], cand, sizeof(cand));
			for (size_t d = 0; !ok && d < sizeof(std_dirs) / sizeof(std_dirs[0]); d++)
				ok = in_dir(std_dirs[d], needed[i], cand, sizeof(cand));
		}
		if (ok && realpath(cand, paths[found]) && readable_by(paths[found], how)) {
			found++;
			if (how && via)
				how->via_ld_path = true;
		} else if (how) {
			how->missing = true;
		}
	}
	sp_elf_close(e, fd);
	return found;
}

int sp_elf_read_dynsym(const char *path, const char *sym, void *buf, size_t size)
{
	Elf_Scn *scn = NULL, *s2;
	GElf_Shdr sh, sh2;
	int fd, ret = -1, tables = 0;
	Elf *e = sp_elf_open(path, SP_ELF_READ, 0, &fd, NULL);

	if (!e)
		return -1;
	while ((scn = elf_nextscn(e, scn)) && ret < 0) {
		Elf_Data *d;
		GElf_Sym st;
		size_t j;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !sp_elf_strtab_ok(e, sh.sh_link, SP_ELF_STRTAB_MAX))
			continue;
		if (tables++)
			break;	/* one: libelf keeps each it reads */
		d = sp_elf_data_max(scn, &sh, SP_ELF_SYMTAB_MAX);
		for (j = 0; d && j < sh.sh_size / sh.sh_entsize; j++) {
			const char *name;
			Elf_Data *d2;

			if (!gelf_getsym(d, j, &st) || st.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, st.st_name);
			if (!name || strcmp(name, sym))
				continue;
			s2 = elf_getscn(e, st.st_shndx);
			if (!s2 || !gelf_getshdr(s2, &sh2) || sh2.sh_type == SHT_NOBITS ||
			    st.st_value < sh2.sh_addr || size > sh2.sh_size ||
			    st.st_value - sh2.sh_addr > sh2.sh_size - size)
				break;
			/* those bytes only, not the section (its size is the
			 * file's owner's to say) */
			d2 = elf_getdata_rawchunk(e, (int64_t)(sh2.sh_offset +
							       (st.st_value - sh2.sh_addr)),
						  size, ELF_T_BYTE);
			if (!d2 || !d2->d_buf || d2->d_size < size)
				break;
			memcpy(buf, d2->d_buf, size);
			ret = 0;
			break;
		}
	}
	sp_elf_close(e, fd);
	return ret;
}

uint64_t sp_elf_func_offset(const char *path, const char *sym)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	int64_t off = -1;
	int fd, pass;
	Elf *e = sp_elf_open(path, SP_ELF_READ, 0, &fd, NULL);

	if (!e)
		return 0;
	for (pass = 0; pass < 2 && off < 0; pass++) {
		scn = NULL;
		while (off < 0 && (scn = elf_nextscn(e, scn))) {
			Elf_Data *d;
			GElf_Sym st;
			size_t j;

			if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
			    sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM) ||
			    !sp_elf_strtab_ok(e, sh.sh_link, SP_ELF_STRTAB_MAX))
				continue;
			d = sp_elf_data_max(scn, &sh, SP_ELF_SYMTAB_MAX);
			for (j = 0; d && j < sh.sh_size / sh.sh_entsize; j++) {
				const char *name;

				if (!gelf_getsym(d, j, &st) || st.st_shndx == SHN_UNDEF ||
				    GELF_ST_TYPE(st.st_info) != STT_FUNC)
					continue;
				name = elf_strptr(e, sh.sh_link, st.st_name);
				if (name && !strcmp(name, sym)) {
					off = sp_elf_va_to_offset(e, st.st_value, true);
					break;
				}
			}
			break;	/* the first table of its kind only: libelf keeps each */
		}
	}
	sp_elf_close(e, fd);
	return off > 0 ? (uint64_t)off : 0;
}
