// SPDX-License-Identifier: MIT
/* Function symbol tables from ELF files or from single additions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "sp.h"
#include "symtab.h"

/* Entries a lookup tries below the address: small symbols nest in larger ones. */
#define LOOKBACK 16

struct sp_symtab {
	struct sp_symtab_entry *e;
	size_t n, cap;
	size_t sorted;		/* e[0..sorted) is finished */
	/*
	 * reach[i]: the end of the furthest reaching entry that a lookup whose
	 * nearest symbol below is e[i] tries (see LOOKBACK), UINT64_MAX if it
	 * does not fit: an address at or past it has no symbol without a scan.
	 * NULL before the first sp_symtab_finish() of a table with entries.
	 */
	uint64_t *reach;
	size_t reach_cap;
	struct sp_arena names;
	size_t memory;		/* of the arrays (the names' is the arena's) */
};

struct sp_symtab *sp_symtab_new(void)
{
	return sp_xcalloc(1, sizeof(struct sp_symtab));
}

void sp_symtab_free(struct sp_symtab *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->n; i++)
		if (st->e[i].demangled && st->e[i].demangled != st->e[i].name)
			free(st->e[i].demangled);
	sp_arena_release(&st->names);
	free(st->e);
	free(st->reach);
	free(st);
}

static void add_entry(struct sp_symtab *st, uint64_t addr, uint64_t size, uint64_t limit,
		      const char *name, size_t len, uint32_t flags, uint32_t rank)
{
	struct sp_symtab_entry *e;
	size_t cap = st->cap;

	sp_grow(&st->e, &st->cap, st->n + 1, sizeof(*st->e));
	st->memory += (st->cap - cap) * sizeof(*st->e);
	e = &st->e[st->n];
	e->name = sp_arena_copy(&st->names, name, len);
	e->addr = addr;
	e->size = size;
	e->limit = limit;
	e->demangled = NULL;
	e->flags = flags | (size ? 0 : SP_SYMTAB_UNSIZED);
	e->rank = rank;
	st->n++;
}

int sp_symtab_add(struct sp_symtab *st, uint64_t addr, uint64_t size, const char *name,
		  size_t len, uint32_t flags)
{
	if (!name)
		return -1;
	/* Kernel and JIT tables: a later addition at the same address wins. */
	add_entry(st, addr, size, 0, name, len, flags | SP_SYMTAB_ADDED, (uint32_t)st->n + 1);
	return 0;
}

bool sp_symtab_elf_has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_entsize &&
		    sh.sh_size / sh.sh_entsize > 1)
			return true;
	return false;
}

static int add_table(struct sp_symtab *st, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		     size_t shnum, bool dyn, const char **why)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, nsyms, added = 0;

	if (!data || !sh->sh_entsize) {
		*why = "unreadable symbol table";
		return -1;
	}
	nsyms = data->d_size / sh->sh_entsize;
	for (i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Shdr ssh;
		Elf_Scn *sscn;
		const char *name, *at;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
		    sym.st_shndx >= shnum)
			continue;
		sscn = elf_getscn(elf, sym.st_shndx);
		if (!sscn || !gelf_getshdr(sscn, &ssh) || !(ssh.sh_flags & SHF_EXECINSTR))
			continue;
		if (sym.st_value < ssh.sh_addr || sym.st_value - ssh.sh_addr >= ssh.sh_size)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		/* Local labels and mapping symbols are not functions. */
		if (type == STT_NOTYPE && (name[0] == '.' || name[0] == '$'))
			continue;
		/* Versioned names ("memcpy@@GLIBC_2.14") read as the plain name. */
		at = strchr(name + 1, '@');
		add_entry(st, sym.st_value, sym.st_size, ssh.sh_addr + ssh.sh_size, name,
			  at ? (size_t)(at - name) : strlen(name),
			  (dyn ? SP_SYMTAB_DYNSYM : 0) |
			  (GELF_ST_BIND(sym.st_info) == STB_LOCAL ? SP_SYMTAB_LOCAL : 0),
			  (uint32_t)i);
		added++;
	}
	return (int)added;
}

int sp_symtab_add_elf(struct sp_symtab *st, Elf *elf, bool dynsym, const char **why)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shnum;
	int want = dynsym ? SHT_DYNSYM : SHT_SYMTAB;

	*why = NULL;
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrnum(elf, &shnum) < 0) {
		*why = "not an ELF file";
		return -1;
	}
	if (!dynsym && !sp_symtab_elf_has_symtab(elf))
		want = SHT_DYNSYM;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != (GElf_Word)want)
			continue;
		return add_table(st, elf, scn, &sh, shnum, want == SHT_DYNSYM, why);
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct sp_symtab_entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/*
	 * Preferred first, so that deduplication keeps it: a sized symbol,
	 * the larger, then the later in the table (as llvm-symbolizer picks
	 * among aliases; kernel and JIT reloads replace older entries).
	 */
	if ((x->flags & y->flags & SP_SYMTAB_ADDED) && x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	if ((x->flags & SP_SYMTAB_UNSIZED) != (y->flags & SP_SYMTAB_UNSIZED))
		return (x->flags & SP_SYMTAB_UNSIZED) ? 1 : -1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->rank > y->rank ? -1 : x->rank < y->rank;
}

static void set_reach(struct sp_symtab *st)
{
	size_t i, k;

	if (st->n > st->reach_cap) {
		st->reach = sp_xrealloc(st->reach, st->n * sizeof(*st->reach));
		st->memory += (st->n - st->reach_cap) * sizeof(*st->reach);
		st->reach_cap = st->n;
	}
	/* The entries sp_symtab_lookup() tries, in its order, for lo - 1 = i. */
	for (i = 0; i < st->n; i++) {
		uint64_t reach = 0;

		for (k = 0; k < LOOKBACK && i >= k; k++) {
			const struct sp_symtab_entry *e = &st->e[i - k];
			uint64_t end = e->addr + e->size;

			if (end < e->addr) {
				reach = UINT64_MAX;
				break;
			}
			if (end > reach)
				reach = end;
			if (e->flags & SP_SYMTAB_UNSIZED)
				break;
		}
		st->reach[i] = reach;
	}
}

void sp_symtab_finish(struct sp_symtab *st)
{
	size_t i, j;

	if (st->sorted == st->n)
		return;
	if (st->n > 1)
		qsort(st->e, st->n, sizeof(*st->e), cmp_entry);
	/* One symbol per address (aliases: memcpy and __memcpy_avx...). */
	for (i = 0, j = 0; i < st->n; i++) {
		if (j && st->e[j - 1].addr == st->e[i].addr) {
			if (st->e[i].demangled && st->e[i].demangled != st->e[i].name)
				free(st->e[i].demangled);
			continue;
		}
		st->e[j++] = st->e[i];
	}
	st->n = j;
	for (i = 0; i < st->n; i++) {
		struct sp_symtab_entry *e = &st->e[i];
		uint64_t end;

		if (!(e->flags & SP_SYMTAB_UNSIZED))
			continue;
		end = i + 1 < st->n ? st->e[i + 1].addr : UINT64_MAX;
		if (e->limit && e->limit < end)
			end = e->limit;
		e->size = end > e->addr ? end - e->addr : 1;
	}
	st->sorted = st->n;
	set_reach(st);
}

const struct sp_symtab_entry *sp_symtab_lookup(struct sp_symtab *st, uint64_t addr)
{
	size_t lo = 0, hi, k;

	sp_symtab_finish(st);
	hi = st->n;
	/* First entry with e->addr > addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->e[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* Most misses (static functions of a .dynsym-only file) end here. */
	if (st->reach && addr >= st->reach[lo - 1] && st->reach[lo - 1] != UINT64_MAX)
		return NULL;
	/* The nearest symbol below may be a small one nested in a larger one. */
	for (k = 0; k < LOOKBACK && lo > k; k++) {
		const struct sp_symtab_entry *e = &st->e[lo - 1 - k];

		if (addr - e->addr < e->size)
			return e;
		if (e->flags & SP_SYMTAB_UNSIZED)
			break;
	}
	return NULL;
}

size_t sp_symtab_count(const struct sp_symtab *st)
{
	return st->n;
}

size_t sp_symtab_memory(const struct sp_symtab *st)
{
	return sizeof(*st) + st->memory + st->names.memory;
}
