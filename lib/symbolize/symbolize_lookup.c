// SPDX-License-Identifier: MIT
/*
 * Resolving a frame (symbolize_priv.h): kernel frames by the kernel's
 * symbols, JIT frames by their process's perf map, the others in their
 * image (loaded on its first lookup) by its DWARF index, inline levels
 * included, and its symbol tables; results of files several processes
 * map are cached per file, as the same address comes again through
 * another process's module.
 */
#include <string.h>

#include "demangle.h"
#include "sp.h"
#include "symbolize_priv.h"

static void count(struct file_stats *st, const struct sp_sym_result *r)
{
	st->frames++;
	st->by_status[r->status < NSTATUS ? r->status : SP_SYM_BAD_FILE]++;
	if (r->level[0].func)
		st->named++;
	if (r->level[0].file)
		st->with_line++;
}

/* Resolve in an image into s->res (strings owned by the image). */
static void image_lookup(struct sp_symbolizer *s, struct image *img, uint64_t rel, bool leaf)
{
	struct sp_sym_result *r = &s->res;
	struct sp_dwarf_loc loc[SP_SYMBOLIZE_MAX_LEVELS];
	const struct sp_symtab_entry *sym;
	uint64_t addr = leaf || !rel ? rel : rel - 1;
	bool demangle = !s->o.no_demangle;
	int n = 0, i;

	r->status = img->status;
	r->n = 1;
	memset(&r->level[0], 0, sizeof(r->level[0]));
	if (img->status != SP_SYM_OK)
		return;
	memset(&loc[0], 0, sizeof(loc[0]));
	if (img->dwarf)
		n = sp_dwarfidx_lookup(img->dwarf, addr, demangle, loc,
				       s->o.no_inline ? 1 : SP_SYMBOLIZE_MAX_LEVELS);
	if (s->o.no_inline && n > 0 && loc[0].inlined) {
		/* Only the physical function, at the line of the outermost call site. */
		n = sp_dwarfidx_lookup(img->dwarf, addr, demangle, loc, SP_SYMBOLIZE_MAX_LEVELS);
		loc[0] = loc[n - 1];
		n = 1;
	}
	sym = sp_symtab_lookup(img->symtab, addr);
	if (!sym && n == 0 && img->stripped && img->dwarf_cached && !img->debug_tried)
		sp_image_debug_late(img, false);
	if (!sym && n == 0 && img->dbgsyms)
		sym = sp_symtab_lookup(img->dbgsyms, addr);
	if (n > 0) {
		for (i = 0; i < n; i++) {
			struct sp_sym_level *l = &r->level[i];

			l->func = loc[i].func;
			l->file = loc[i].file;
			l->line = loc[i].line;
			l->column = loc[i].column;
			l->offset = rel >= loc[i].entry ? rel - loc[i].entry : 0;
			l->flags = SP_SYM_FROM_DWARF | (loc[i].inlined ? SP_SYM_INLINE : 0);
		}
		r->n = (unsigned int)n;
		/*
		 * The physical function is named as the file's own symbol table
		 * names it (as llvm-symbolizer does): glibc's public aliases, not
		 * its internal __GI_ names.
		 */
		if (sym && !(sym->flags & SP_SYMTAB_UNSIZED)) {
			struct sp_sym_level *l = &r->level[n - 1];

			l->func = demangle ? sp_demangle_cached(sym->name,
						&((struct sp_symtab_entry *)sym)->demangled) :
				  sym->name;
			l->offset = rel - sym->addr;
		}
	} else {
		r->level[0].file = loc[0].file;
		r->level[0].line = loc[0].line;
		r->level[0].column = loc[0].column;
		if (loc[0].file)
			r->level[0].flags |= SP_SYM_FROM_DWARF;
		if (sym) {
			r->level[0].func = demangle ?
				sp_demangle_cached(sym->name,
						   &((struct sp_symtab_entry *)sym)->demangled) :
				sym->name;
			r->level[0].offset = rel - sym->addr;
			if (sym->flags & SP_SYMTAB_DYNSYM)
				r->level[0].flags |= SP_SYM_FROM_DYNSYM;
		}
	}
	if (img->stripped && !img->dwarf)
		r->status = SP_SYM_STRIPPED;
	else if (!r->level[0].func && !r->level[0].file)
		r->status = SP_SYM_NO_SYMBOLS;
	if (img->from_archive)
		for (i = 0; i < (int)r->n; i++)
			r->level[i].flags |= SP_SYM_FROM_ARCHIVE;
}

static void cache_put(struct image *img, uint64_t key, const struct sp_sym_result *r)
{
	struct cached *c;

	if (img->nresults >= UINT32_MAX - 1 || img->nlevels + r->n >= UINT32_MAX)
		return;
	sp_grow(&img->results, &img->capresults, img->nresults + 1, sizeof(*img->results));
	sp_grow(&img->levels, &img->caplevels, img->nlevels + r->n, sizeof(*img->levels));
	c = &img->results[img->nresults];
	c->first = (uint32_t)img->nlevels;
	c->n = r->n;
	c->status = r->status;
	memcpy(img->levels + img->nlevels, r->level, r->n * sizeof(*r->level));
	img->nlevels += r->n;
	sp_u64map_put(&img->cache, key, ++img->nresults);
}

static void table_lookup(struct sp_symbolizer *s, struct sp_symtab *st, uint64_t addr, bool leaf,
			 unsigned int missing)
{
	struct sp_sym_result *r = &s->res;
	const struct sp_symtab_entry *e;
	uint64_t a = leaf || !addr ? addr : addr - 1;

	r->n = 1;
	memset(&r->level[0], 0, sizeof(r->level[0]));
	e = st ? sp_symtab_lookup(st, a) : NULL;
	if (!e) {
		r->status = missing;
		return;
	}
	r->status = SP_SYM_OK;
	r->level[0].func = s->o.no_demangle ? e->name :
			   sp_demangle_cached(e->name, &((struct sp_symtab_entry *)e)->demangled);
	r->level[0].offset = addr - e->addr;
}

static struct sp_symtab *jit_table(struct sp_symbolizer *s, uint64_t pid)
{
	uint64_t *v = sp_u64map_get(&s->jit, pid);

	return v ? (struct sp_symtab *)(uintptr_t)*v : NULL;
}

static struct module_ent *frame_module(struct sp_symbolizer *s, const struct sp_frame *f)
{
	if (f->module && f->module < s->nmods && s->mods[f->module].live)
		return &s->mods[f->module];
	return NULL;
}

bool sp_symbolizer_should_defer(struct sp_symbolizer *s, const struct sp_frame *f)
{
	struct module_ent *me = frame_module(s, f);
	uint64_t pid = me ? me->pid : f->pid;

	if (f->mode == SP_FRAME_KERNEL || (me && !me->img && me->live))
		return !s->ksyms;
	if (f->mode == SP_FRAME_JIT || !me || (me->img && me->img->anon))
		return !jit_table(s, pid);
	return false;
}

const struct sp_sym_result *sp_symbolizer_frame(struct sp_symbolizer *s,
						const struct sp_frame *f)
{
	struct sp_sym_result *r = &s->res;
	struct module_ent *me = frame_module(s, f);
	bool leaf = f->flags & SP_FRAME_LEAF;
	struct image *img;
	uint64_t key, *v;

	if (f->mode == SP_FRAME_KERNEL || (me && !me->img)) {
		table_lookup(s, s->ksyms, f->addr, leaf, SP_SYM_NO_SYMBOLS);
		count(&s->kernel_st, r);
		return r;
	}
	if (!me || f->mode == SP_FRAME_JIT || (me->img && me->img->anon)) {
		struct sp_symtab *jt = jit_table(s, me ? me->pid : f->pid);

		table_lookup(s, jt, f->addr, leaf,
			     me || f->mode == SP_FRAME_JIT ? SP_SYM_JIT_NO_MAP : SP_SYM_NO_MODULE);
		count(r->status == SP_SYM_NO_MODULE ? &s->none_st : &s->jit_st, r);
		return r;
	}
	img = me->img;
	if (!img->loaded)
		sp_image_load(s, img);
	/*
	 * The stream interns frames, so a frame is looked up once per module;
	 * the same address again comes only through another module of the
	 * same file (another process): cache results for shared files only.
	 */
	key = f->rel << 1 | leaf;
	v = img->shared ? sp_u64map_get(&img->cache, key) : NULL;
	if (v) {
		const struct cached *c = &img->results[*v - 1];

		r->status = c->status;
		r->n = c->n;
		memcpy(r->level, img->levels + c->first, c->n * sizeof(*r->level));
	} else {
		image_lookup(s, img, f->rel, leaf);
		if (img->shared)
			cache_put(img, key, r);
	}
	count(&img->st, r);
	return r;
}

uint64_t sp_symbolizer_generation(const struct sp_symbolizer *s)
{
	return s->generation;
}
