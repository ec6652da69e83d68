// SPDX-License-Identifier: MIT
/*
 * Unit tests for the DWARF index (lib/symbolize/dwarfidx.c, dwarfidx_part.c): the
 * flat index must give, for every address tried, the same inline chain and lines as
 * libdw's own (slow) scope walk.
 */
#include <dwarf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "symbolize/dwarfidx.h"
#include "elf/symtab.h"
#include "libc_debug.h"
#include "tap.h"

struct ref_level {
	const char *name;
	int line;		/* line of this level's position */
};

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s;

	if ((dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	     dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a)) &&
	    (s = dwarf_formstring(&a)))
		return s;
	if (dwarf_attr_integrate(die, DW_AT_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

/*
 * The naive answer: descend the DIE tree of the unit into every scope whose
 * ranges hold addr (dwarf_haspc), collecting subprograms and inlined
 * subroutines, outermost first. Slow, but no flattening involved.
 */
static int ref_descend(Dwarf_Die *die, uint64_t addr, Dwarf_Die *chain, int depth, int max)
{
	Dwarf_Die c;
	int n;

	if (depth >= max || dwarf_child(die, &c) != 0)
		return depth;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
			if (dwarf_haspc(&c, addr) == 1) {
				chain[depth] = c;
				return ref_descend(&c, addr, chain, depth + 1, max);
			}
			break;
		case DW_TAG_lexical_block:
			if (dwarf_haspc(&c, addr) == 1)
				return ref_descend(&c, addr, chain, depth, max);
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
			if (depth == 0) {
				n = ref_descend(&c, addr, chain, depth, max);
				if (n > depth)
					return n;
			}
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return depth;
}

/* libdw's answer, innermost first. */
static int ref_chain(Dwarf *dw, uint64_t addr, struct ref_level *out, int max)
{
	Dwarf_Die cudie, chain[64];
	Dwarf_Line *l;
	int n, i, line = 0;

	if (!dwarf_addrdie(dw, addr, &cudie))
		return -1;
	l = dwarf_getsrc_die(&cudie, addr);
	if (l)
		dwarf_lineno(l, &line);
	n = ref_descend(&cudie, addr, chain, 0, max < 64 ? max : 64);
	for (i = 0; i < n; i++) {
		Dwarf_Die *d = &chain[n - 1 - i];
		Dwarf_Attribute a;
		Dwarf_Word w;

		out[i].name = die_name(d);
		out[i].line = line;
		line = 0;
		if (dwarf_attr(d, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0)
			line = (int)w;
	}
	return n;
}

/* Compare on addresses of the functions of the file's symbol table. */
static void compare_file(const char *path, const char *symtab_path, unsigned int step,
			 unsigned int max_addrs)
{
	struct sp_dwarf_loc loc[64], lz[64];
	struct ref_level ref[64];
	struct sp_symtab *st = sp_symtab_new();
	struct sp_dwarfidx *x, *y;
	struct sp_dwarfidx_stats ys;
	const char *why = NULL;
	unsigned int tried = 0, agreed = 0, lazy_tried = 0, lazy_agreed = 0;
	int fd, sfd, n, k, j, m;
	Elf *elf, *selfelf, *lelf;
	Dwarf *dw;
	size_t bad = 0;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	sfd = open(symtab_path, O_RDONLY);
	CHECK(fd >= 0 && sfd >= 0);
	if (fd < 0 || sfd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	selfelf = elf_begin(sfd, ELF_C_READ, NULL);
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	CHECK(dw != NULL);
	x = sp_dwarfidx_build(dw, 0, 0, &bad, &why);
	CHECK(x != NULL);
	/*
	 * The lazy index, on an Elf of its own prepared as sp-symbolize does
	 * (unread sections hidden from libdw), must answer exactly the same.
	 */
	lelf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(sp_dwarfidx_elf_sane(lelf, &why));
	y = sp_dwarfidx_open(dwarf_begin_elf(lelf, DWARF_C_READ, NULL), 0, 0, &bad, &why);
	CHECK(y != NULL);
	if (!y)
		x = NULL;
	CHECK(sp_symtab_add_elf(st, selfelf, false, &why) > 0);
	sp_symtab_finish(st);
	/* Walk every function: entries are sorted; reach them through lookups. */
	{
		uint64_t a = 0, end;
		const struct sp_symtab_entry *s;

		/* Find the first symbol: binary search is internal, so step through. */
		while (x && tried < max_addrs) {
			s = NULL;
			/* The next symbol at or after a. */
			for (end = a; end < a + 0x100000 && !s; end += 16)
				s = sp_symtab_lookup(st, end);
			if (!s)
				break;
			for (a = s->addr; a < s->addr + s->size && tried < max_addrs; a += step) {
				n = sp_dwarfidx_lookup(x, a, false, loc, 64);
				m = sp_dwarfidx_lookup(y, a, false, lz, 64);
				lazy_tried++;
				for (j = 0; j < n && m == n; j++)
					if ((loc[j].func != lz[j].func &&
					     (!loc[j].func || !lz[j].func || strcmp(loc[j].func, lz[j].func))) ||
					    (loc[j].file != lz[j].file &&
					     (!loc[j].file || !lz[j].file || strcmp(loc[j].file, lz[j].file))) ||
					    loc[j].line != lz[j].line || loc[j].column != lz[j].column ||
					    loc[j].entry != lz[j].entry || loc[j].inlined != lz[j].inlined)
						break;
				if (m == n && j == n) {
					lazy_agreed++;
				} else if (lazy_tried - lazy_agreed == 1) {
					printf("#   %s 0x%lx: lazy %d levels, eager %d, differ at %d\n", path,
					       (unsigned long)a, m, n, j);
				}
				k = ref_chain(dw, a, ref, 64);
				if (k <= 0)
					continue;
				tried++;
				if (n != k) {
					if (tap_case_failed == 0)
						printf("#   %s 0x%lx: %d levels, libdw %d\n", path,
						       (unsigned long)a, n, k);
					tap_case_failed = 1;
					continue;
				}
				for (j = 0; j < n; j++) {
					if (!loc[j].func || !ref[j].name || strcmp(loc[j].func, ref[j].name) ||
					    (int)loc[j].line != ref[j].line) {
						if (tap_case_failed == 0)
							printf("#   %s 0x%lx level %d: %s:%u, libdw %s:%d\n",
							       path, (unsigned long)a, j,
							       loc[j].func ? loc[j].func : "?", loc[j].line,
							       ref[j].name ? ref[j].name : "?", ref[j].line);
						tap_case_failed = 1;
						break;
					}
				}
				if (j == n)
					agreed++;
			}
			a = s->addr + s->size;
		}
	}
	printf("#   %s: %u addresses compared with libdw, %u agree\n", path, tried, agreed);
	printf("#   %s: %u addresses compared lazy with eager, %u agree\n", path, lazy_tried,
	       lazy_agreed);
	CHECK(tried > 100);
	CHECK_EQ_U(agreed, tried);
	CHECK_EQ_U(lazy_agreed, lazy_tried);
	if (y) {
		sp_dwarfidx_stats(y, &ys);
		CHECK(ys.units > 0 && ys.units_indexed > 0);
	}
	sp_dwarfidx_free(y);
	elf_end(lelf);
	sp_dwarfidx_free(x);
	sp_symtab_free(st);
	dwarf_end(dw);
	elf_end(elf);
	elf_end(selfelf);
	close(fd);
	close(sfd);
}

static void test_dwarfidx_self_against_libdw(void)
{
	compare_file("/proc/self/exe", "/proc/self/exe", 3, 30000);
}

static char libc_debug[256];


static void test_dwarfidx_libc_against_libdw(void)
{
	compare_file(libc_debug, libc_debug, 7, 5000);
}

static void test_dwarfidx_lines(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	struct sp_dwarfidx_stats st;
	struct sp_dwarf_loc loc[4];
	struct sp_dwarfidx *x;
	const char *why, *file;
	uint32_t line, col;

	x = sp_dwarfidx_build(dw, 0, 0, NULL, &why);
	CHECK(x != NULL);
	if (!x)
		return;
	sp_dwarfidx_stats(x, &st);
	CHECK(st.units > 1 && st.functions > 10 && st.rows > 100 && st.memory > 0);
	/* Nothing at address 0 or at the top of the address space. */
	CHECK(sp_dwarfidx_lookup(x, 0, true, loc, 4) == 0);
	CHECK(sp_dwarfidx_lookup(x, UINT64_MAX, true, loc, 4) == 0);
	CHECK(sp_dwarfidx_line(x, UINT64_MAX, &file, &line, &col) == -1);
	/* max 0 and 1 are honoured. */
	CHECK(sp_dwarfidx_lookup(x, 0x1000, true, loc, 0) == 0);
	sp_dwarfidx_free(x);
	dwarf_end(dw);
	elf_end(elf);
	close(fd);
}

/* One lookup in libc's debug file indexes a few of its units, not all. */
static void test_dwarfidx_lazy_reads_little(void)
{
	struct sp_symtab *st = sp_symtab_new();
	const struct sp_symtab_entry *s;
	struct sp_dwarfidx_stats ds;
	struct sp_dwarf_loc loc[8];
	struct sp_dwarfidx *y;
	const char *why = NULL;
	int fd = open(libc_debug, O_RDONLY);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	uint64_t a;

	y = sp_dwarfidx_open(dwarf_begin_elf(elf, DWARF_C_READ, NULL), 0, 0, NULL, &why);
	CHECK(y != NULL);
	CHECK(sp_symtab_add_elf(st, elf, false, &why) > 0);
	sp_symtab_finish(st);
	if (y) {
		sp_dwarfidx_stats(y, &ds);
		CHECK(ds.units > 100);
		CHECK_EQ_U(ds.units_indexed, 0);
		/* malloc is in libc's symbol table and in its DWARF. */
		for (a = 0, s = NULL; a < 0x400000 && !s; a += 16) {
			s = sp_symtab_lookup(st, a);
			if (s && strcmp(s->name, "__libc_malloc") && strcmp(s->name, "malloc"))
				s = NULL;
		}
		CHECK(s != NULL);
		if (s)
			CHECK(sp_dwarfidx_lookup(y, s->addr, false, loc, 8) >= 1);
		sp_dwarfidx_stats(y, &ds);
		printf("#   one lookup indexed %zu of %zu units\n", ds.units_indexed, ds.units);
		CHECK(ds.units_indexed >= 1 && ds.units_indexed * 10 < ds.units);
	}
	sp_dwarfidx_free(y);
	sp_symtab_free(st);
	elf_end(elf);
	close(fd);
}

static void test_dwarfidx_no_dwarf(void)
{
	const char *why = NULL;

	CHECK(sp_dwarfidx_build(NULL, 0, 0, NULL, &why) == NULL);
	CHECK(why != NULL);
}

int main(void)
{
	elf_version(EV_CURRENT);
	TAP_RUN(test_dwarfidx_self_against_libdw);
	if (find_libc_debug(libc_debug, sizeof(libc_debug)))
		TAP_RUN(test_dwarfidx_libc_against_libdw);
	if (libc_debug[0] && access(libc_debug, R_OK) == 0)
		TAP_RUN(test_dwarfidx_lazy_reads_little);
	else
		TAP_SKIP(test_dwarfidx_libc_against_libdw, "libc6-dbg is not installed");
	TAP_RUN(test_dwarfidx_lines);
	TAP_RUN(test_dwarfidx_no_dwarf);
	return TAP_DONE();
}
