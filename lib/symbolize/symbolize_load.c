// SPDX-License-Identifier: MIT
/*
 * Loading an image on its first lookup (symbolize_priv.h): the file found,
 * its symbol table read, its DWARF index taken from the cache or opened
 * lazily on the file that has the DWARF (the file itself or its debug
 * file), which is then held open for the index; saving the index to the
 * cache and unloading it all when the image is retired. With debuginfod,
 * the images a batch of frames needs are loaded together first, so that
 * the debug files none has on the machine are fetched in parallel.
 */
#include <stdlib.h>
#include <string.h>

#include <gelf.h>

#include "elf/elffile.h"
#include "sp.h"
#include "symbolize_priv.h"

/* Bounds of the executable sections, for the DWARF index. */
static void text_bounds(Elf *elf, uint64_t *lo, uint64_t *hi)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	*lo = UINT64_MAX;
	*hi = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		if (sh.sh_addr < *lo)
			*lo = sh.sh_addr;
		if (sh.sh_addr + sh.sh_size > *hi)
			*hi = sh.sh_addr + sh.sh_size;
	}
	if (*hi == 0)
		*lo = 0;
}

static void cache_key(const struct image *img, struct sp_symcache_key *k)
{
	k->build_id = img->build_id;
	k->build_id_len = img->build_id_len;
	k->text_lo = img->text_lo;
	k->text_hi = img->text_hi;
}

void sp_image_save(struct image *img)
{
	struct sp_symcache_key k;
	size_t built;

	if (!img->dwarf || !img->sym || !img->sym->cache || !img->build_id_len || img->vdso)
		return;
	built = sp_dwarfidx_built(img->dwarf);
	if (built == img->saved_built)
		return;
	img->saved_built = built;
	cache_key(img, &k);
	sp_symcache_save(img->sym->cache, &k, img->dwarf);
}

void sp_symbolizer_save(struct sp_symbolizer *s)
{
	struct image *img;

	for (img = s->images; img; img = img->next)
		sp_image_save(img);
}

void sp_image_unload(struct image *img)
{
	sp_image_save(img);
	sp_symtab_free(img->symtab);
	sp_symtab_free(img->dbgsyms);
	if (img->dwarf && sp_verbose) {
		struct sp_dwarfidx_stats ds;

		sp_dwarfidx_stats(img->dwarf, &ds);
		sp_info("'%s': DWARF: %zu of %zu units indexed (%zu functions, %zu inlined, "
			"%zu line rows), %.1f ms in all",
			img->loaded_from ? img->loaded_from : "?", ds.units_indexed, ds.units,
			ds.functions, ds.inlined, ds.rows, ds.build_ns / 1e6);
	}
	sp_dwarfidx_free(img->dwarf);
	if (img->dw_elf)
		sp_elf_close(img->dw_elf, img->dw_fd);
	img->dw_elf = NULL;
	img->symtab = NULL;
	img->dbgsyms = NULL;
	img->dwarf = NULL;
	sp_u64map_release(&img->cache);
	free(img->results);
	free(img->levels);
	img->results = NULL;
	img->levels = NULL;
	img->nresults = img->capresults = img->nlevels = img->caplevels = 0;
}

/* The index's opener, for clusters the cache lacks. */
static Dwarf *image_dwarf(void *arg)
{
	return sp_image_debug_late(arg, true);
}

/*
 * The file's own symbol table: its .symtab, else its .dynsym. The number
 * of symbols, or -1 on a malformed table (warned).
 */
static int load_symtab(struct image *img, struct image_file *f)
{
	const char *why;
	int nsyms;

	free(img->loaded_from);
	img->loaded_from = f->path ? sp_xstrdup(f->path) : NULL;
	img->symtab = sp_symtab_new();
	/*
	 * The file's own table names the physical function (as llvm-symbolizer
	 * does: public names of exported functions); a debug file's .symtab
	 * names what DWARF does not cover when the file is stripped.
	 */
	nsyms = sp_symtab_add_elf(img->symtab, f->elf, false, &why);
	if (nsyms < 0)
		sp_image_warn(img, f->path, why);
	img->stripped = !sp_symtab_elf_has_symtab(f->elf);
	text_bounds(f->elf, &img->text_lo, &img->text_hi);
	return nsyms;
}

/* An index kept from an earlier run: no debug file is read until it lacks
 * a cluster. Whether there was one. */
static bool load_cached_index(struct sp_symbolizer *s, struct image *img)
{
	struct sp_symcache_key k;

	if (!s->cache || !img->build_id_len || img->vdso)
		return false;
	cache_key(img, &k);
	img->dwarf = sp_symcache_load(s->cache, &k);
	if (!img->dwarf)
		return false;
	img->dwarf_cached = true;
	sp_dwarfidx_set_opener(img->dwarf, image_dwarf, img);
	if (s->o.index_all && sp_dwarfidx_index_all(img->dwarf) < 0)
		sp_warn("'%s': DWARF: some units could not be indexed", img->path);
	if (sp_verbose) {
		struct sp_dwarfidx_stats ds;

		sp_dwarfidx_stats(img->dwarf, &ds);
		sp_info("'%s': %zu symbols%s; DWARF index from the cache (%zu of %zu "
			"units indexed)", img->path, sp_symtab_count(img->symtab),
			img->stripped ? " (.dynsym only)" : "", ds.units_indexed,
			ds.units);
	}
	return true;
}

/* The DWARF index over dwf's DWARF, opened lazily: a unit is indexed when
 * an address falls in it. */
static void open_index(struct sp_symbolizer *s, struct image *img, struct image_file *dwf)
{
	const char *why = NULL;
	size_t bad = 0;
	Dwarf *dw = sp_image_dwarf_open(s, dwf);

	if (!dw)
		return;
	img->dwarf = sp_dwarfidx_open(dw, img->text_lo, img->text_hi, &bad, &why);
	if (img->dwarf && s->o.index_all && sp_dwarfidx_index_all(img->dwarf) < 0)
		sp_warn("'%s': DWARF: some units could not be indexed", dwf->path);
	if (!img->dwarf && why && strcmp(why, "no DWARF compilation units"))
		sp_warn("'%s': DWARF not used: %s", dwf->path, why);
	else if (bad)
		sp_warn("'%s': %zu DWARF units could not be read", dwf->path, bad);
	if (img->dwarf) {
		/* The index reads the file at lookups: keep it open with it. */
		img->dw_elf = dwf->elf;
		img->dw_fd = dwf->fd;
		dwf->elf = NULL;
		dwf->fd = -1;
	}
}

/* Debug information: the file's own, else a separate debug file's. */
static void load_dwarf(struct sp_symbolizer *s, struct image *img, struct image_file *f,
		       int nsyms)
{
	struct image_file dbg = { .fd = -1 }, *symf = f, *dwf;
	const char *dwf_path;

	dwf = sp_image_debug_find(s, img, f, &dbg);
	if (!dwf) {
		/* Its debug file is fetched with the batch's: finished then. */
		img->nsyms = nsyms;
		sp_grow(&s->waiting, &s->capwaiting, s->nwaiting + 1, sizeof(*s->waiting));
		s->waiting[s->nwaiting++] = img;
		return;
	}
	if (dwf == &dbg && img->dbgsyms)
		symf = &dbg;
	open_index(s, img, dwf);
	if (sp_symtab_count(img->symtab) == 0 && !img->dwarf &&
	    (!img->dbgsyms || !sp_symtab_count(img->dbgsyms))) {
		img->status = nsyms < 0 ? SP_SYM_BAD_FILE : SP_SYM_NO_SYMBOLS;
		if (nsyms >= 0)
			sp_info("'%s': no symbols", f->path);
	}
	if (sp_verbose) {
		struct sp_dwarfidx_stats ds = { 0 };

		if (img->dwarf)
			sp_dwarfidx_stats(img->dwarf, &ds);
		dwf_path = img->dwarf ? dwf->path : "none";
		sp_info("'%s': %zu symbols%s from '%s'; DWARF %s (%zu units, their ranges read "
			"in %.1f ms)", img->path, sp_symtab_count(img->symtab),
			img->stripped ? " (.dynsym only)" : "", symf->path, dwf_path, ds.units,
			ds.build_ns / 1e6);
	}
	sp_image_file_close(&dbg);
}

void sp_image_load(struct sp_symbolizer *s, struct image *img)
{
	struct image_file f = { .fd = -1 };
	int nsyms;

	img->loaded = true;
	s->files_loaded++;
	s->files_live++;
	if (img->anon) {
		img->status = SP_SYM_JIT_NO_MAP;
		return;
	}
	if (!sp_image_find(s, img, &f))
		return;
	nsyms = load_symtab(img, &f);
	if (!load_cached_index(s, img))
		load_dwarf(s, img, &f, nsyms);
	sp_image_file_close(&f);
}

/* The rest of load_dwarf() for an image whose debug file was being fetched. */
static void load_fetched(struct sp_symbolizer *s, struct image *img)
{
	struct image_file f = { .fd = -1 };
	const char *why = NULL;

	if (!img->loaded_from || sp_image_file_try(img, img->loaded_from, false, &f, &why) <= 0) {
		if (why)
			sp_image_warn(img, img->loaded_from, why);
		return;
	}
	load_dwarf(s, img, &f, img->nsyms);
	sp_image_file_close(&f);
}

void sp_symbolizer_prepare(struct sp_symbolizer *s, const uint64_t *modules, size_t n)
{
	struct module_ent *me;
	size_t i;

	if (!s->dbgd)
		return;		/* nothing to do together: each loads at its first lookup */
	s->dbgd_batch = true;
	for (i = 0; i < n; i++) {
		if (!modules[i] || modules[i] >= s->nmods)
			continue;
		me = &s->mods[modules[i]];
		if (me->live && me->img && !me->img->loaded)
			sp_image_load(s, me->img);
	}
	s->dbgd_batch = false;
	if (!s->nwaiting)
		return;
	sp_dbgd_fetch(s->dbgd);
	for (i = 0; i < s->nwaiting; i++)
		load_fetched(s, s->waiting[i]);
	s->nwaiting = 0;
}
