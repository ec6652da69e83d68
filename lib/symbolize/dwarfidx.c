// SPDX-License-Identifier: MIT
/*
 * The DWARF index of a module (dwarfidx.h): its compilation units grouped
 * into clusters of overlapping address ranges, each cluster's part built at
 * the first lookup in it (dwarfidx_part.c builds parts), lookups of inline
 * chains and lines, and the export and import of the whole for the cache.
 * Also the check of an ELF file before libdw reads it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dwarf.h>

#include "demangle.h"
#include "dwarf_alt.h"
#include "dwarfidx_part.h"

#define MAX_INFLATED	(2ull << 30)	/* largest decompressed debug section */

/* ---- before libdw reads an ELF file ---- */

/* Debug sections the index never reads: location lists, macros, CFI, name tables. */
static bool unread_section(const char *name)
{
	static const char *const unread[] = {
		".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo",
		".debug_frame", ".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames",
		".debug_gnu_pubtypes", ".debug_names", ".debug_cu_index", ".debug_tu_index",
	};
	size_t i;

	for (i = 0; i < sizeof(unread) / sizeof(unread[0]); i++)
		if (!strcmp(name, unread[i]))
			return true;
	return false;
}

bool sp_dwarfidx_elf_sane(Elf *elf, const char **why)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
		*why = "no section names";
		return false;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && unread_section(name)) {
			/*
			 * dwarf_begin_elf() inflates every compressed debug
			 * section up front; it skips NOBITS ones. The change is
			 * in memory only (the file is read, never written).
			 */
			sh.sh_type = SHT_NOBITS;
			if (gelf_update_shdr(scn, &sh))
				continue;
		}
		/* A compressed section claiming to inflate beyond reason is a bomb. */
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch) || ch.ch_size > MAX_INFLATED ||
			    ch.ch_size / 1024 > sh.sh_size) {
				*why = "a compressed section claims an absurd size";
				return false;
			}
		}
		if (!name || strncmp(name, ".debug_", 7) ||
		    (strcmp(name + 7, "str") && strcmp(name + 7, "line_str")))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
			*why = "cannot decompress a string section";
			return false;
		}
		d = elf_getdata(scn, NULL);
		if (!d || (d->d_size && (!d->d_buf || ((const char *)d->d_buf)[d->d_size - 1]))) {
			*why = "a DWARF string section does not end with a NUL";
			return false;
		}
	}
	return true;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the index: clusters of units with overlapping address ranges ---- */

/*
 * A cluster is a maximal address interval made of overlapping unit ranges;
 * its part indexes every unit with a range in it, and is built on the first
 * lookup that falls in the interval. Units' code lies within their ranges,
 * so a cluster's part answers exactly what an index of every unit would.
 */
struct cluster {
	uint64_t lo, hi;
	size_t first, n;	/* unit offsets: x->cu_off[first .. first + n) */
	struct part *part;
	bool failed;
};

struct sp_dwarfidx {
	Dwarf *dw;		/* owned; NULL once every part is built */
	uint64_t text_lo, text_hi;
	struct cluster *cl;
	size_t ncl;
	/* Over cl_lo: dense, for the first step of a lookup. */
	struct bucket_search cl_search;
	uint64_t *cl_lo;
	struct cluster *last;		/* the cluster of the previous lookup */
	Dwarf_Off *cu_off;
	size_t units, bad;
	uint64_t build_ns;
	size_t built;			/* clusters built here (not imported) */
	Dwarf *(*open)(void *);		/* gives dw when a cluster needs it */
	void *open_arg;
	bool open_tried;
	void (*release)(void *);	/* the memory behind imported parts */
	void *release_arg;
};

/* A code range of the cu-th compilation unit (whose DIE offset is offs[cu]). */
struct cu_range {
	uint64_t lo, hi;
	size_t cu;
};

static int cmp_cu_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->cu < y->cu ? -1 : x->cu > y->cu;
}

static int cmp_off(const void *a, const void *b)
{
	const Dwarf_Off *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* Build the part of cluster c; false if it cannot be. */
static bool cluster_build(struct sp_dwarfidx *x, struct cluster *c)
{
	uint64_t t0 = now_ns();

	if (c->part || c->failed)
		return c->part != NULL;
	c->part = sp_dwarfidx_part_build(x->dw, x->cu_off + c->first, c->n, x->text_lo,
					 x->text_hi, &x->bad);
	c->failed = !c->part;
	if (c->part)
		x->built++;
	x->build_ns += now_ns() - t0;
	return c->part != NULL;
}

/* The code ranges of a unit, from its DIE, else from its line sequences. */
static bool unit_ranges(const struct sp_dwarfidx *x, Dwarf_Die *cudie, size_t cu,
			struct cu_range **r, size_t *n, size_t *cap)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	size_t first = *n, nlines, i;
	Dwarf_Lines *lines;

	while ((off = dwarf_ranges(cudie, off, &base, &start, &end)) > 0) {
		if (!sp_dwarfidx_in_text(x->text_lo, x->text_hi, start, end))
			continue;
		*r = sp_dwarfidx_grow(*r, cap, *n, sizeof(**r), NULL);
		if (!*r)
			return false;
		(*r)[(*n)++] = (struct cu_range){ start, end, cu };
	}
	if (*n > first || dwarf_getsrclines(cudie, &lines, &nlines) != 0)
		return true;
	start = UINT64_MAX;
	for (i = 0; i < nlines; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		bool endseq = false;

		if (!l || dwarf_lineaddr(l, &addr) != 0)
			continue;
		if (start == UINT64_MAX)
			start = addr;
		dwarf_lineendsequence(l, &endseq);
		if (!endseq)
			continue;
		if (sp_dwarfidx_in_text(x->text_lo, x->text_hi, start, addr)) {
			*r = sp_dwarfidx_grow(*r, cap, *n, sizeof(**r), NULL);
			if (!*r)
				return false;
			(*r)[(*n)++] = (struct cu_range){ start, addr, cu };
		}
		start = UINT64_MAX;
	}
	return true;
}

/*
 * The Dwarf of an imported index, opened at the first cluster that needs it.
 * The cached unit offsets of the clusters still to build must be units of
 * this Dwarf: dwarf_offdie() trusts the offset it is given.
 */
static bool index_dwarf(struct sp_dwarfidx *x)
{
	Dwarf_Die cudie;
	Dwarf_Off *offs = NULL;
	size_t n = 0, cap = 0, i, j;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_CU *cu = NULL;

	if (x->dw || !x->open || x->open_tried)
		return x->dw != NULL;
	x->open_tried = true;
	x->dw = x->open(x->open_arg);
	if (!x->dw)
		return false;
	while (dwarf_get_units(x->dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0) {
		if (unit_type != DW_UT_compile || dwarf_tag(&cudie) != DW_TAG_compile_unit)
			continue;
		offs = sp_dwarfidx_grow(offs, &cap, n, sizeof(*offs), NULL);
		if (!offs)
			break;
		offs[n++] = dwarf_dieoffset(&cudie);
	}
	if (n > 1)
		qsort(offs, n, sizeof(*offs), cmp_off);
	for (i = 0; i < x->ncl; i++) {
		struct cluster *c = &x->cl[i];

		for (j = 0; !c->part && !c->failed && j < c->n; j++)
			if (!offs || !bsearch(&x->cu_off[c->first + j], offs, n, sizeof(*offs),
					      cmp_off))
				c->failed = true;
	}
	free(offs);
	return true;
}

/*
 * Group the nr unit ranges r (sorted here) into the clusters of x: each a
 * maximal run of overlapping ranges, with the DIE offsets of its units
 * (offs[r[i].cu] for range i), sorted and each once, in x->cu_off (room
 * for nr).
 */
static void group_clusters(struct sp_dwarfidx *x, struct cu_range *r, size_t nr,
			   const Dwarf_Off *offs)
{
	size_t i, j, k;

	qsort(r, nr, sizeof(*r), cmp_cu_range);
	for (i = 0, k = 0; i < nr; i = j) {
		struct cluster *c = &x->cl[x->ncl++];
		uint64_t hi = r[i].hi;
		size_t m;

		for (j = i + 1; j < nr && r[j].lo < hi; j++)
			if (r[j].hi > hi)
				hi = r[j].hi;
		c->lo = r[i].lo;
		c->hi = hi;
		c->first = k;
		for (m = i; m < j; m++)
			x->cu_off[k + m - i] = offs[r[m].cu];
		qsort(x->cu_off + k, j - i, sizeof(*x->cu_off), cmp_off);
		/* A unit with several ranges in one cluster is read once. */
		for (m = 0, c->n = 0; m < j - i; m++)
			if (!c->n || x->cu_off[k + c->n - 1] != x->cu_off[k + m])
				x->cu_off[k + c->n++] = x->cu_off[k + m];
		k += c->n;
	}
}

/*
 * The index of dw: lazy, clusters of units read from their ranges, each
 * built at its first lookup; else one cluster of every unit, built now.
 */
static struct sp_dwarfidx *index_new(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				     bool lazy, size_t *bad_units, const char **why)
{
	struct cu_range *r = NULL;
	size_t nr = 0, capr = 0, capoff = 0, i;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	Dwarf_Half version;
	uint8_t unit_type;
	uint64_t t0 = now_ns();
	struct sp_dwarfidx *x;
	Dwarf_Off *offs = NULL;
	bool oom = false;
	int rc;

	*why = NULL;
	if (!dw) {
		*why = "no DWARF";
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		*why = "out of memory";
		return NULL;
	}
	x->dw = dw;
	x->text_lo = text_lo;
	x->text_hi = text_hi;
	/* no split unit asked for (NULL): libdw would open the .dwo file a
	 * skeleton unit names, any path the binary's author chose, with a
	 * plain open() (a FIFO blocks); split DWARF is not read here */
	while ((rc = dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL)) == 0) {
		if (unit_type != DW_UT_compile || dwarf_tag(&cudie) != DW_TAG_compile_unit) {
			if (unit_type == DW_UT_skeleton || unit_type == DW_UT_split_compile)
				x->bad++;	/* split DWARF (.dwo) is not read */
			continue;
		}
		offs = sp_dwarfidx_grow(offs, &capoff, x->units, sizeof(*offs), NULL);
		if (!offs || (lazy && !unit_ranges(x, &cudie, x->units, &r, &nr, &capr))) {
			oom = true;
			break;
		}
		offs[x->units++] = dwarf_dieoffset(&cudie);
	}
	if (rc < 0 && !x->units)
		x->bad++;
	if (!oom && x->units) {
		if (!lazy) {
			/* One cluster covering everything, of every unit. */
			r = malloc(sizeof(*r));
			if (r) {
				r[0] = (struct cu_range){ 0, UINT64_MAX, 0 };
				nr = 1;
			}
		}
		x->cl = nr ? calloc(nr, sizeof(*x->cl)) : NULL;
		x->cu_off = malloc((lazy ? nr : x->units) * sizeof(*x->cu_off) + 1);
		oom = (nr && !x->cl) || !x->cu_off || (!lazy && !r);
	}
	if (!oom && x->units && !lazy) {
		memcpy(x->cu_off, offs, x->units * sizeof(*offs));
		x->cl[0] = (struct cluster){ 0, UINT64_MAX, 0, x->units, NULL, false };
		x->ncl = 1;
	} else if (!oom && x->units) {
		group_clusters(x, r, nr, offs);
	}
	free(r);
	free(offs);
	if (!oom && x->ncl) {
		x->cl_lo = malloc(x->ncl * sizeof(*x->cl_lo));
		for (i = 0; x->cl_lo && i < x->ncl; i++)
			x->cl_lo[i] = x->cl[i].lo;
		oom = !x->cl_lo || sp_bucket_search_init(&x->cl_search, x->cl_lo, x->ncl) < 0;
	}
	if (bad_units)
		*bad_units = x->bad;
	if (oom) {
		x->dw = NULL;
		sp_dwarfidx_free(x);
		*why = "out of memory";
		return NULL;
	}
	if (!x->units) {
		x->dw = NULL;
		sp_dwarfidx_free(x);
		*why = "no DWARF compilation units";
		return NULL;
	}
	x->build_ns = now_ns() - t0;
	if (!lazy) {
		if (!cluster_build(x, &x->cl[0])) {
			x->dw = NULL;
			sp_dwarfidx_free(x);
			*why = "out of memory";
			return NULL;
		}
		if (bad_units)
			*bad_units = x->bad;
		x->dw = NULL;
	}
	return x;
}

struct sp_dwarfidx *sp_dwarfidx_build(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				      size_t *bad_units, const char **why)
{
	return index_new(dw, text_lo, text_hi, false, bad_units, why);
}

int sp_dwarfidx_index_all(struct sp_dwarfidx *x)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < x->ncl; i++)
		if (!x->cl[i].part && (!index_dwarf(x) || !cluster_build(x, &x->cl[i])))
			rc = -1;
	return rc;
}

struct sp_dwarfidx *sp_dwarfidx_open(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				     size_t *bad_units, const char **why)
{
	struct sp_dwarfidx *x = index_new(dw, text_lo, text_hi, true, bad_units, why);

	if (!x)
		sp_dwarf_end(dw);
	return x;
}

void sp_dwarfidx_free(struct sp_dwarfidx *x)
{
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->ncl; i++)
		sp_dwarfidx_part_free(x->cl[i].part);
	free(x->cl);
	free(x->cl_lo);
	free(x->cl_search.top);
	free(x->cu_off);
	if (x->dw)
		sp_dwarf_end(x->dw);
	if (x->release)
		x->release(x->release_arg);
	free(x);
}

/* ---- lookups ---- */

/* The part covering addr, built if need be; NULL if none. */
static struct part *part_at(struct sp_dwarfidx *x, uint64_t addr)
{
	struct cluster *c = x->last;
	size_t lo;

	if (c && addr >= c->lo && addr < c->hi && c->part)
		return c->part;
	lo = sp_bucket_search_upper(&x->cl_search, addr);
	if (!lo)
		return NULL;
	c = &x->cl[lo - 1];
	x->last = c;
	if (addr >= c->hi)
		return NULL;
	if (!c->part && (!index_dwarf(x) || !cluster_build(x, c)))
		return NULL;
	return c->part;
}

static int part_line(const struct part *x, uint64_t addr, const char **file,
		     uint32_t *line, uint32_t *col)
{
	size_t lo = sp_bucket_search_upper(&x->row_search, addr);
	const struct sp_dwarfidx_row *r;

	if (!lo)
		return -1;
	r = &x->rows[lo - 1];
	if (r->col & ROW_END)
		return -1;
	*file = sp_strtab_get(&x->str, r->file);
	*line = r->line;
	*col = r->col & ~ROW_END;
	return 0;
}

int sp_dwarfidx_line(struct sp_dwarfidx *x, uint64_t addr, const char **file,
		     uint32_t *line, uint32_t *col)
{
	struct part *p = part_at(x, addr);

	return p ? part_line(p, addr, file, line, col) : -1;
}

static const char *node_name(struct part *x, const struct sp_dwarfidx_node *n, bool demangle)
{
	struct strtab *t = &x->str;

	if (n->linkage) {
		if (!demangle)
			return t->s[n->linkage];
		if (!t->dem) {
			t->dem = calloc(t->cap, sizeof(*t->dem));
			if (!t->dem)
				return t->s[n->linkage];
			t->memory += t->cap * sizeof(*t->dem);
		}
		return sp_demangle_cached(t->s[n->linkage], &t->dem[n->linkage]);
	}
	return sp_strtab_get(t, n->name);
}

int sp_dwarfidx_lookup(struct sp_dwarfidx *ix, uint64_t addr, bool demangle,
		       struct sp_dwarf_loc *out, int max)
{
	struct part *x;
	size_t lo;
	uint32_t id;
	int n = 0;

	if (max < 1)
		return 0;
	memset(&out[0], 0, sizeof(out[0]));
	x = part_at(ix, addr);
	if (!x)
		return 0;
	if (part_line(x, addr, &out[0].file, &out[0].line, &out[0].column) < 0)
		out[0].file = NULL;
	lo = sp_bucket_search_upper(&x->seg_search, addr);
	if (!lo)
		return 0;
	id = x->seg_node[lo - 1];
	while (id != NONE && id < x->nnodes && n < max) {
		const struct sp_dwarfidx_node *nd = &x->nodes[id];

		/* out[n]'s file and line are already set: the line table or a call site. */
		out[n].func = node_name(x, nd, demangle);
		out[n].entry = nd->entry;
		out[n].inlined = nd->parent != NONE;
		n++;
		if (nd->parent != NONE && n < max) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].file = sp_strtab_get(&x->str, nd->call_file);
			out[n].line = nd->call_line;
			out[n].column = nd->call_col;
		}
		id = nd->parent;
	}
	return n;
}

void sp_dwarfidx_stats(const struct sp_dwarfidx *ix, struct sp_dwarfidx_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->units = ix->units;
	st->memory = sizeof(*ix) + ix->ncl * sizeof(*ix->cl) + ix->units * sizeof(*ix->cu_off);
	for (i = 0; i < ix->ncl; i++) {
		const struct part *x = ix->cl[i].part;

		if (!x)
			continue;
		st->units_indexed += x->units;
		st->functions += x->nfuncs;
		st->inlined += x->ninlined;
		st->segments += x->nsegs;
		st->rows += x->nrows;
		st->memory += sizeof(*x) + x->str.memory + x->capnodes * sizeof(*x->nodes) +
			      x->nsegs * (sizeof(*x->seg_lo) + sizeof(*x->seg_node)) +
			      x->caprows * sizeof(*x->rows) + x->nrows * sizeof(*x->row_addr) +
			      (x->row_search.ntop + x->seg_search.ntop) * sizeof(uint32_t);
	}
	st->build_ns = ix->build_ns;
}

/* ---- persisting: export and import (lib/symbolize/symcache.c) ---- */

void sp_dwarfidx_counts(const struct sp_dwarfidx *x, size_t *nclusters, size_t *units,
			size_t *bad)
{
	*nclusters = x->ncl;
	*units = x->units;
	*bad = x->bad;
}

size_t sp_dwarfidx_built(const struct sp_dwarfidx *x)
{
	return x->built;
}

void sp_dwarfidx_cluster(const struct sp_dwarfidx *x, size_t i, struct sp_dwarfidx_cluster *c,
			 struct sp_dwarfidx_part *part)
{
	const struct cluster *cl = &x->cl[i];
	const struct part *p = cl->part;

	c->lo = cl->lo;
	c->hi = cl->hi;
	c->cu_off = x->cu_off + cl->first;
	c->ncu = cl->n;
	c->part = NULL;
	memset(part, 0, sizeof(*part));
	if (!p)
		return;
	part->nodes = p->nodes;
	part->nnodes = p->nnodes;
	part->seg_lo = p->seg_lo;
	part->seg_node = p->seg_node;
	part->nsegs = p->nsegs;
	part->rows = p->rows;
	part->row_addr = p->row_addr;
	part->nrows = p->nrows;
	part->strs = (const char *const *)p->str.s;
	part->nstrs = p->str.n;
	part->units = p->units;
	part->nfuncs = p->nfuncs;
	part->ninlined = p->ninlined;
	c->part = part;
}

void sp_dwarfidx_set_release(struct sp_dwarfidx *x, void (*release)(void *), void *arg)
{
	x->release = release;
	x->release_arg = arg;
}

void sp_dwarfidx_set_opener(struct sp_dwarfidx *x, Dwarf *(*open)(void *), void *arg)
{
	x->open = open;
	x->open_arg = arg;
}


struct sp_dwarfidx *sp_dwarfidx_import(uint64_t text_lo, uint64_t text_hi,
				       const struct sp_dwarfidx_cluster *cl, size_t ncl,
				       size_t units, size_t bad, const char **why)
{
	struct sp_dwarfidx *x;
	size_t i, ncu = 0;

	*why = "out of memory";
	for (i = 0; i < ncl; i++) {
		if (cl[i].lo >= cl[i].hi || (i && cl[i].lo < cl[i - 1].hi) ||
		    cl[i].ncu > units || (!cl[i].part && !cl[i].ncu)) {
			*why = "clusters out of order or range";
			return NULL;
		}
		ncu += cl[i].ncu;
	}
	if (!ncl || units < 1 || ncu / ncl > units) {
		*why = "clusters out of order or range";
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->text_lo = text_lo;
	x->text_hi = text_hi;
	x->units = units;
	x->bad = bad;
	x->cl = calloc(ncl, sizeof(*x->cl));
	x->cl_lo = malloc(ncl * sizeof(*x->cl_lo));
	x->cu_off = malloc(ncu * sizeof(*x->cu_off) + 1);
	if (!x->cl || !x->cl_lo || !x->cu_off)
		goto fail;
	x->ncl = ncl;
	for (i = 0, ncu = 0; i < ncl; i++) {
		struct cluster *c = &x->cl[i];

		c->lo = cl[i].lo;
		c->hi = cl[i].hi;
		c->first = ncu;
		c->n = cl[i].ncu;
		if (c->n)
			memcpy(x->cu_off + ncu, cl[i].cu_off, c->n * sizeof(*x->cu_off));
		ncu += c->n;
		x->cl_lo[i] = c->lo;
		if (cl[i].part) {
			c->part = sp_dwarfidx_part_import(cl[i].part, why);
			if (!c->part)
				goto fail;
		}
	}
	if (sp_bucket_search_init(&x->cl_search, x->cl_lo, x->ncl) < 0) {
		*why = "out of memory";
		goto fail;
	}
	*why = NULL;
	return x;
fail:
	sp_dwarfidx_free(x);
	return NULL;
}
