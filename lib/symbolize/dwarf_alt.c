// SPDX-License-Identifier: MIT
/*
 * The shared DWARF file of a debug file (dwarf_alt.h). dwz moves what
 * several files' DWARF have in common into one file, and each names it in
 * its .gnu_debugaltlink section: a path (absolute, or relative to the
 * debug file's directory) and that file's build-id. libdw opens it lazily,
 * by the build-id under /usr/lib/debug/.build-id/, else by that path, with
 * a plain open() and no build-id check. The binary's author chooses the
 * path: a FIFO there held sp-symbolize forever. So it is looked for here,
 * by the build-id in the debug directories sp-symbolize uses (--debug-dir,
 * the sysroot's, the system's), then by the name, opened as any ELF file another user may control
 * (sp_elf_open(): a regular file, never waited on, at most 4 GiB), checked
 * against the build-id, and handed to libdw with dwarf_setalt(), which
 * then never looks for it. Without it the file gets no DWARF (its symbol
 * tables still name its functions).
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <elfutils/libdwelf.h>

#include "buildid.h"
#include "dwarf_alt.h"
#include "elf/elffile.h"
#include "dwarfidx.h"
#include "sp.h"

#define ALT_MAX_SIZE	(4ull << 30)

/* The shared files opened, by the Dwarf that refers to them. */
struct alt {
	Dwarf *main, *alt;
	Elf *elf;
	int fd;
};
static struct alt *alts;
static size_t nalts, calts;
static pthread_mutex_t alts_lock = PTHREAD_MUTEX_INITIALIZER;

/* The file at path opened as the shared file with build-id id (len bytes):
 * sane as a main file must be (dwarfidx.h), and with no shared file of its
 * own, which libdw would look for itself (dwz makes none). */
static Dwarf *alt_open(const char *path, const void *id, size_t len, Elf **elf, int *fd)
{
	const void *got, *id2;
	const char *name, *why;
	Dwarf *dw = NULL;
	ssize_t n;

	*elf = sp_elf_open(path, SP_ELF_READ, ALT_MAX_SIZE, fd, NULL);
	if (!*elf)
		return NULL;
	n = dwelf_elf_gnu_build_id(*elf, &got);
	if (n == (ssize_t)len && !memcmp(got, id, len) && sp_dwarfidx_elf_sane(*elf, &why))
		dw = dwarf_begin_elf(*elf, DWARF_C_READ, NULL);
	if (dw && dwelf_dwarf_gnu_debugaltlink(dw, &name, &id2) != 0) {
		dwarf_end(dw);
		dw = NULL;
	}
	if (!dw) {
		sp_elf_close(*elf, *fd);
		*elf = NULL;
		*fd = -1;
	}
	return dw;
}

Dwarf *sp_dwarf_begin(Elf *elf, const char *path, const struct sp_dwarf_where *where,
		      const char **why)
{
	static __thread char reason[2 * PATH_MAX + 160];
	char cand[PATH_MAX * 2 + 64], hex[2 * SP_BUILD_ID_MAX + 1];
	const char *name, *slash, *root = where->sysroot;
	const uint8_t *id;
	Dwarf *dw, *alt = NULL;
	Elf *aelf = NULL;
	int afd = -1;
	ssize_t len;
	size_t i;

	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw) {
		*why = dwarf_errmsg(-1);
		return NULL;
	}
	/* (parsed from the section, bounded by it; none: nothing to set) */
	len = dwelf_dwarf_gnu_debugaltlink(dw, &name, (const void **)&id);
	if (len <= 0)
		return dw;
	if (len >= 3 && len <= SP_BUILD_ID_MAX) {
		sp_buildid_hex(id, (unsigned int)len, hex);
		for (i = 0; i < where->ndirs && !alt; i++) {
			snprintf(cand, sizeof(cand), "%s/.build-id/%.2s/%s.debug", where->dirs[i],
				 hex, hex + 2);
			alt = alt_open(cand, id, (size_t)len, &aelf, &afd);
		}
	}
	if (root && !strcmp(root, "/"))
		root = NULL;
	if (!alt && name[0] == '/' && root) {
		snprintf(cand, sizeof(cand), "%s%s", root, name);
		alt = alt_open(cand, id, (size_t)len, &aelf, &afd);
	}
	if (!alt) {
		slash = strrchr(path, '/');
		if (name[0] == '/' || !slash)
			snprintf(cand, sizeof(cand), "%s", name);
		else
			snprintf(cand, sizeof(cand), "%.*s/%s", (int)(slash - path), path, name);
		alt = alt_open(cand, id, (size_t)len, &aelf, &afd);
	}
	if (!alt) {
		/* (sp_warn() escapes the binary's bytes) */
		snprintf(reason, sizeof(reason), "the shared DWARF file its units refer to "
			 "(.gnu_debugaltlink, dwz) is not found, not a regular file or not the "
			 "one its build-id names: '%.*s'", PATH_MAX, cand);
		*why = reason;
		dwarf_end(dw);
		return NULL;
	}
	dwarf_setalt(dw, alt);
	pthread_mutex_lock(&alts_lock);
	sp_grow(&alts, &calts, nalts + 1, sizeof(*alts));
	alts[nalts++] = (struct alt){ .main = dw, .alt = alt, .elf = aelf, .fd = afd };
	pthread_mutex_unlock(&alts_lock);
	return dw;
}

void sp_dwarf_end(Dwarf *dw)
{
	struct alt a = { 0 };
	size_t i;

	if (!dw)
		return;
	/* out of the table before dw is freed: its address may be reused */
	pthread_mutex_lock(&alts_lock);
	for (i = 0; i < nalts; i++)
		if (alts[i].main == dw) {
			a = alts[i];
			alts[i] = alts[--nalts];
			break;
		}
	pthread_mutex_unlock(&alts_lock);
	dwarf_end(dw);
	if (a.alt) {
		dwarf_end(a.alt);
		sp_elf_close(a.elf, a.fd);
	}
}
