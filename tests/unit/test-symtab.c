// SPDX-License-Identifier: MIT
/* Unit tests for lib/elf/symtab.c: lookups by address with sizes, ELF tables. */
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/symtab.h"
#include "tap.h"

static __attribute__((noinline)) int local_helper(int x)
{
	return x * 3 + 1;
}

static int (*volatile helper_ptr)(int) = local_helper;

static uintptr_t exe_bias;

static int find_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	exe_bias = info->dlpi_addr;	/* the main program comes first */
	return 1;
}

static void test_symtab_sizes(void)
{
	struct sp_symtab *st = sp_symtab_new();
	const struct sp_symtab_entry *e;

	sp_symtab_add(st, 0x1000, 0x10, "a", 1, 0);
	sp_symtab_add(st, 0x1100, 0x100, "big", 3, 0);
	sp_symtab_add(st, 0x1120, 0x10, "nested", 6, 0);
	sp_symtab_add(st, 0x3000, 0, "unsized", 7, 0);
	sp_symtab_add(st, 0x3100, 0x8, "last", 4, 0);
	CHECK(sp_symtab_lookup(st, 0xfff) == NULL);
	e = sp_symtab_lookup(st, 0x1000);
	CHECK(e && !strcmp(e->name, "a"));
	CHECK(sp_symtab_lookup(st, 0x100f) && !strcmp(sp_symtab_lookup(st, 0x100f)->name, "a"));
	/* Past the end of a sized symbol: not its name, even with nothing in between. */
	CHECK(sp_symtab_lookup(st, 0x1010) == NULL);
	CHECK(sp_symtab_lookup(st, 0x10ff) == NULL);
	e = sp_symtab_lookup(st, 0x1125);
	CHECK(e && !strcmp(e->name, "nested"));
	/* After the nested symbol, the enclosing one again. */
	e = sp_symtab_lookup(st, 0x1180);
	CHECK(e && !strcmp(e->name, "big"));
	CHECK(sp_symtab_lookup(st, 0x1200) == NULL);
	/* An unsized symbol reaches the next one. */
	e = sp_symtab_lookup(st, 0x30ff);
	CHECK(e && !strcmp(e->name, "unsized"));
	e = sp_symtab_lookup(st, 0x3107);
	CHECK(e && !strcmp(e->name, "last"));
	CHECK(sp_symtab_lookup(st, 0x3108) == NULL);
	CHECK_EQ_U(sp_symtab_count(st), 5);
	sp_symtab_free(st);
}

/*
 * Random sized, unsized and nested symbols: every lookup gives what a scan
 * of up to 16 entries below the address gives (the reach filter only skips
 * scans that find nothing).
 */
static void test_symtab_lookup_matches_scan(void)
{
	enum { N = 2000 };
	static uint64_t addr[N], size[N];
	struct sp_symtab *st = sp_symtab_new();
	unsigned int seed = 12345, i, bad = 0;
	uint64_t a;

	for (i = 0; i < N; i++) {
		addr[i] = 0x1000 + 16 * (uint64_t)i + rand_r(&seed) % 16;
		size[i] = rand_r(&seed) % 8 == 0 ? 0 : 1 + rand_r(&seed) % (i % 50 == 0 ? 4000 : 40);
		CHECK_EQ_U(sp_symtab_add(st, addr[i], size[i], "f", 1, 0), 0);
	}
	for (a = 0xff0; a < 0x1000 + 16 * N + 64; a++) {
		const struct sp_symtab_entry *e = sp_symtab_lookup(st, a);
		uint64_t want = 0;
		int lo, k;

		for (lo = 0; lo < N && addr[lo] <= a; lo++)
			;
		for (k = 0; k < 16 && lo > k; k++) {
			unsigned int j = lo - 1 - k;
			uint64_t sz = size[j] ? size[j] : j + 1 < N ? addr[j + 1] - addr[j] :
				      UINT64_MAX - addr[j];

			if (a - addr[j] < sz) {
				want = addr[j];
				break;
			}
			if (!size[j])
				break;
		}
		if ((e ? e->addr : 0) != want)
			bad++;
		if (a >= 0x1000 + 64 && a % 4096 == 0)
			a += 1024;	/* a sample of the range is enough */
	}
	CHECK_EQ_U(bad, 0);
	sp_symtab_free(st);
}

static void test_symtab_duplicates(void)
{
	struct sp_symtab *st = sp_symtab_new();
	const struct sp_symtab_entry *e;

	/* A later addition at one address wins (kernel and JIT reloads). */
	sp_symtab_add(st, 0x2000, 0x10, "old", 3, 0);
	sp_symtab_add(st, 0x2000, 0x10, "new", 3, 0);
	e = sp_symtab_lookup(st, 0x2004);
	CHECK(e && !strcmp(e->name, "new"));
	CHECK_EQ_U(sp_symtab_count(st), 1);
	/* Adding after a lookup re-sorts. */
	sp_symtab_add(st, 0x1000, 0x10, "lower", 5, 0);
	e = sp_symtab_lookup(st, 0x1001);
	CHECK(e && !strcmp(e->name, "lower"));
	/* Names are copied with their length, not up to a NUL. */
	sp_symtab_add(st, 0x5000, 4, "abcdef", 3, 0);
	e = sp_symtab_lookup(st, 0x5000);
	CHECK(e && !strcmp(e->name, "abc"));
	sp_symtab_free(st);
}

static void test_symtab_elf_self(void)
{
	struct sp_symtab *st = sp_symtab_new(), *dyn = sp_symtab_new();
	const struct sp_symtab_entry *e;
	const char *why = NULL;
	uint64_t vaddr;
	Elf *elf;
	int fd, n;

	dl_iterate_phdr(find_bias, NULL);
	vaddr = (uintptr_t)helper_ptr - exe_bias;
	elf_version(EV_CURRENT);
	fd = open("/proc/self/exe", O_RDONLY);
	CHECK(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf != NULL);
	CHECK(sp_symtab_elf_has_symtab(elf));
	n = sp_symtab_add_elf(st, elf, false, &why);
	CHECK(n > 10);
	e = sp_symtab_lookup(st, vaddr);
	CHECK(e && !strcmp(e->name, "local_helper"));
	CHECK(e && e->addr == vaddr && e->size > 0);
	CHECK(e && (e->flags & SP_SYMTAB_LOCAL) && !(e->flags & SP_SYMTAB_DYNSYM));
	/* The end of the function is not the function. */
	if (e)
		CHECK(!sp_symtab_lookup(st, e->addr + e->size) ||
		      strcmp(sp_symtab_lookup(st, e->addr + e->size)->name, "local_helper"));
	/* .dynsym of a PIE without -rdynamic does not hold a static function. */
	n = sp_symtab_add_elf(dyn, elf, true, &why);
	CHECK(n >= 0);
	e = sp_symtab_lookup(dyn, vaddr);
	CHECK(!e || strcmp(e->name, "local_helper"));
	CHECK(helper_ptr(1) == 4);
	elf_end(elf);
	close(fd);
	sp_symtab_free(st);
	sp_symtab_free(dyn);
}

static void test_symtab_not_elf(void)
{
	struct sp_symtab *st = sp_symtab_new();
	char buf[256];
	const char *why = NULL;
	Elf *elf;

	memset(buf, 'x', sizeof(buf));
	elf = elf_memory(buf, sizeof(buf));
	CHECK(sp_symtab_add_elf(st, elf, false, &why) == -1);
	CHECK(why != NULL);
	if (elf)
		elf_end(elf);
	sp_symtab_free(st);
}

int main(void)
{
	TAP_RUN(test_symtab_sizes);
	TAP_RUN(test_symtab_lookup_matches_scan);
	TAP_RUN(test_symtab_duplicates);
	TAP_RUN(test_symtab_elf_self);
	TAP_RUN(test_symtab_not_elf);
	return TAP_DONE();
}
