// SPDX-License-Identifier: MIT
/*
 * The shared DWARF file of a debug file (dwarf_alt.h). dwz moves what
 * several files' DWARF have in common into one file, and each names it in
 * its .gnu_debugaltlink section: a path (absolute, or relative to the
 * debug file's directory) and that file's build-id. libdw opens it lazily,
 * by the build-id under /usr/lib/debug/.build-id/, else by that path, with
 * a plain open() and no build-id check. The binary's author chooses the
 * path: a FIFO there held sp-symbolize forever. So it is looked for in the
 * same places here, opened as any ELF file another user may control
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

#include "dwarf_alt.h"
#include "elf/elffile.h"
#include "escape.h"
#include "sp.h"

#define ALT_MAX_SIZE	(4ull << 30)
#define ALT_DEBUG_DIR	"/usr/lib/debug"

/* The shared files opened, by the Dwarf that refers to them. */
struct alt {
	Dwarf *main, *alt;
	Elf *elf;
	int fd;
};
static struct alt *alts;
static size_t nalts, calts;
static pthread_mutex_t alts_lock = PTHREAD_MUTEX_INITIALIZER;

/* The file at path opened as the shared file with build-id id (len bytes). */
static Dwarf *alt_open(const char *path, const void *id, size_t len, Elf **elf, int *fd)
{
	const void *got;
	ssize_t n;
	Dwarf *dw;

	*elf = sp_elf_open(path, SP_ELF_READ, ALT_MAX_SIZE, fd, NULL);
	if (!*elf)
		return NULL;
	n = dwelf_elf_gnu_build_id(*elf, &got);
	dw = n == (ssize_t)len && !memcmp(got, id, len) ?
		     dwarf_begin_elf(*elf, DWARF_C_READ, NULL) : NULL;
	if (!dw) {
		sp_elf_close(*elf, *fd);
		*elf = NULL;
		*fd = -1;
	}
	return dw;
}

Dwarf *sp_dwarf_begin(Elf *elf, const char *path, const char **why)
{
	static __thread char reason[4 * PATH_MAX + 160];
	char cand[PATH_MAX * 2 + 64], esc[4 * PATH_MAX];
	const char *name, *slash;
	const uint8_t *id;
	Dwarf *dw, *alt = NULL;
	Elf *aelf = NULL;
	int afd = -1, k;
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
	if (len >= 3 && len <= 64) {
		k = snprintf(cand, sizeof(cand), ALT_DEBUG_DIR "/.build-id/%02x/", id[0]);
		for (i = 1; i < (size_t)len; i++)
			k += snprintf(cand + k, sizeof(cand) - (size_t)k, "%02x", id[i]);
		snprintf(cand + k, sizeof(cand) - (size_t)k, ".debug");
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
		/* the binary's author chose the name: escaped */
		sp_esc_text(esc, sizeof(esc), cand, strlen(cand), 0);
		snprintf(reason, sizeof(reason), "the shared DWARF file its units refer to "
			 "(.gnu_debugaltlink, dwz) is not found, not a regular file or not the "
			 "one its build-id names: '%s'", esc);
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
	size_t i;

	if (!dw)
		return;
	dwarf_end(dw);
	pthread_mutex_lock(&alts_lock);
	for (i = 0; i < nalts; i++)
		if (alts[i].main == dw) {
			dwarf_end(alts[i].alt);
			sp_elf_close(alts[i].elf, alts[i].fd);
			alts[i] = alts[--nalts];
			break;
		}
	pthread_mutex_unlock(&alts_lock);
}
