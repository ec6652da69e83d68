// SPDX-License-Identifier: MIT
/*
 * Separate debug files (symbolize_priv.h): found by build-id under the
 * debug directories and in the archive, else by .gnu_debuglink next to the
 * file, in its .debug/ and under the debug directories (checked by
 * build-id or by the link's CRC), else fetched by build-id from debuginfod
 * servers (debuginfod.h); and libdw's handle on the DWARF of the file that
 * has it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <zlib.h>

#include "buf.h"
#include "dwarf_alt.h"
#include "elf/archive.h"
#include "elf/elffile.h"
#include "sp.h"
#include "symbolize_priv.h"

static uint32_t crc_file(int fd)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	return (uint32_t)crc;
}

/* .gnu_debuglink: name and CRC. */
static const char *debuglink(Elf *elf, uint32_t *crc)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;
		Elf_Data *d;
		size_t len;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, ".gnu_debuglink"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 8)
			return NULL;
		len = strnlen(d->d_buf, d->d_size);
		if (!len || len >= d->d_size || strchr(d->d_buf, '/'))
			return NULL;
		len = (len + 4) & ~(size_t)3;
		if (len + 4 > d->d_size)
			return NULL;
		memcpy(crc, (char *)d->d_buf + len, 4);
		return d->d_buf;
	}
	return NULL;
}

/* Whether dbg, open, is img's debug file (closed if not). */
static bool check_debug(struct image *img, bool have_crc, uint32_t crc, struct image_file *dbg)
{
	uint8_t id[SP_BUILD_ID_MAX];
	unsigned int n;

	if (img->build_id_len) {
		n = sp_elf_build_id(dbg->elf, id);
		if (n != img->build_id_len || memcmp(id, img->build_id, n))
			goto no;
	} else if (!have_crc || crc_file(dbg->fd) != crc) {
		goto no;
	}
	if (!sp_elf_has_section(dbg->elf, ".debug_info", true) && !sp_symtab_elf_has_symtab(dbg->elf))
		goto no;
	return true;
no:
	sp_image_file_close(dbg);
	return false;
}

/* Try a debug file candidate. */
static bool try_debug(struct image *img, const char *path, bool have_crc, uint32_t crc,
		      struct image_file *dbg)
{
	const char *why;

	if (sp_image_file_open(dbg, path, &why) < 0)
		return false;
	return check_debug(img, have_crc, crc, dbg);
}

/*
 * The debug file from debuginfod servers (debuginfod.h), into dbg: 1, 0
 * none, -1 queued to be fetched with the rest of the batch.
 */
static int fetch_debug(struct sp_symbolizer *s, struct image *img, struct image_file *dbg)
{
	char *path;
	int fd;

	if (!s->dbgd || !img->build_id_len)
		return 0;
	if (s->dbgd_batch && !sp_dbgd_known(s->dbgd, img->build_id, img->build_id_len)) {
		sp_dbgd_want(s->dbgd, img->build_id, img->build_id_len, img->path);
		return -1;
	}
	fd = sp_dbgd_open(s->dbgd, img->build_id, img->build_id_len, img->path, &path);
	if (fd < 0)
		return 0;
	dbg->fd = fd;
	dbg->path = path;
	dbg->elf = sp_elf_begin(fd, SP_ELF_READ);
	if (dbg->elf && check_debug(img, false, 0, dbg))
		return 1;
	sp_warn("'%s': the debug file fetched from debuginfod, '%s', is not its own (another "
		"build-id, or neither DWARF nor symbols): not used", img->path, path);
	sp_image_file_close(dbg);
	return 0;
}

/* The directories debug files are looked for in, in order: --debug-dir,
 * then the sysroot's and the system's /usr/lib/debug (unless
 * --no-system-debug); *sysdbg (to free) holds the sysroot's. */
static unsigned int debug_dirs(const struct sp_symbolizer *s, const char **dirs, char **sysdbg)
{
	unsigned int nd = 0, i;

	*sysdbg = NULL;
	for (i = 0; i < SP_SYMBOLIZE_MAX_DIRS && s->o.debug_dirs[i]; i++)
		dirs[nd++] = s->o.debug_dirs[i];
	if (!s->o.no_system_debug) {
		if (s->o.sysroot && strcmp(s->o.sysroot, "/")) {
			*sysdbg = sp_xstrfmt("%s/usr/lib/debug", s->o.sysroot);
			dirs[nd++] = *sysdbg;
		}
		dirs[nd++] = "/usr/lib/debug";
	}
	return nd;
}

static bool find_debug(struct sp_symbolizer *s, struct image *img, struct image_file *f,
		       struct image_file *dbg)
{
	const char *dirs[SP_SYMBOLIZE_MAX_DIRS + 3];
	char hex[2 * SP_BUILD_ID_MAX + 1], *sysdbg, *p, *dir, *slash;
	const char *link;
	uint32_t crc = 0;
	unsigned int nd = debug_dirs(s, dirs, &sysdbg), i;
	bool found = false;

	if (img->build_id_len) {
		sp_buildid_hex(img->build_id, img->build_id_len, hex);
		for (i = 0; i < nd && !found; i++) {
			p = sp_xstrfmt("%s/.build-id/%.2s/%s.debug", dirs[i], hex, hex + 2);
			found = try_debug(img, p, false, 0, dbg);
			free(p);
		}
		if (!found && s->o.archive) {
			p = sp_archive_path(s->o.archive, img->build_id, img->build_id_len, ".debug");
			if (p)
				found = try_debug(img, p, false, 0, dbg);
			free(p);
		}
	}
	link = found ? NULL : debuglink(f->elf, &crc);
	if (link) {
		/* Next to the file read, in its .debug/, under each debug dir. */
		dir = sp_xstrdup(f->path);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			p = sp_xstrfmt("%s/%s", dir, link);
			if (strcmp(p, f->path))
				found = try_debug(img, p, true, crc, dbg);
			free(p);
			if (!found) {
				p = sp_xstrfmt("%s/.debug/%s", dir, link);
				found = try_debug(img, p, true, crc, dbg);
				free(p);
			}
		}
		free(dir);
		dir = sp_xstrdup(img->path);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			for (i = 0; i < nd && !found; i++) {
				p = sp_xstrfmt("%s%s/%s", dirs[i], dir, link);
				found = try_debug(img, p, true, crc, dbg);
				free(p);
			}
		}
		free(dir);
	}
	free(sysdbg);
	return found;
}

struct image_file *sp_image_debug_find(struct sp_symbolizer *s, struct image *img,
				       struct image_file *f, struct image_file *dbg)
{
	const char *why;
	int rc;

	img->debug_tried = true;
	if (sp_elf_has_section(f->elf, ".debug_info", true) || img->vdso)
		return f;
	if (!find_debug(s, img, f, dbg)) {
		rc = fetch_debug(s, img, dbg);
		if (rc < 0)
			return NULL;
		if (rc == 0)
			return f;
	}
	if (img->stripped && !img->dbgsyms && sp_symtab_elf_has_symtab(dbg->elf)) {
		img->dbgsyms = sp_symtab_new();
		if (sp_symtab_add_elf(img->dbgsyms, dbg->elf, false, &why) > 0)
			img->stripped = false;
	}
	return dbg;
}

Dwarf *sp_image_dwarf_open(const struct sp_symbolizer *s, struct image_file *f)
{
	const char *why, *dirs[SP_SYMBOLIZE_MAX_DIRS + 3];
	struct sp_dwarf_where where = { .dirs = dirs, .sysroot = s->o.sysroot };
	char *sysdbg;
	Dwarf *dw;

	if (!sp_dwarfidx_elf_sane(f->elf, &why)) {
		sp_warn("'%s': DWARF not used: %s", f->path, why);
		return NULL;
	}
	where.ndirs = debug_dirs(s, dirs, &sysdbg);
	dw = sp_dwarf_begin(f->elf, f->path, &where, &why);
	free(sysdbg);
	if (!dw && sp_elf_has_section(f->elf, ".debug_info", true))
		sp_warn("'%s': DWARF not used: %s", f->path, why);
	return dw;
}

Dwarf *sp_image_debug_late(struct image *img, bool want_dwarf)
{
	struct image_file f = { .fd = -1 }, dbg = { .fd = -1 }, *dwf;
	const char *why = NULL;
	Dwarf *dw = NULL;

	if (!img->loaded_from || sp_image_file_try(img, img->loaded_from, false, &f, &why) <= 0) {
		img->debug_tried = true;
		return NULL;
	}
	dwf = sp_image_debug_find(img->sym, img, &f, &dbg);
	if (!dwf)
		dwf = &f;	/* queued for debuginfod: a later lookup finds it */
	if (want_dwarf && !img->dw_elf) {
		dw = sp_image_dwarf_open(img->sym, dwf);
		if (dw) {
			img->dw_elf = dwf->elf;
			img->dw_fd = dwf->fd;
			dwf->elf = NULL;
			dwf->fd = -1;
			sp_info("'%s': DWARF from '%s' for units not in the cache", img->path,
				dwf->path);
		}
	}
	sp_image_file_close(&dbg);
	sp_image_file_close(&f);
	return dw;
}

