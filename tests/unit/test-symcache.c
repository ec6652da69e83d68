// SPDX-License-Identifier: MIT
/*
 * Unit tests for lib/symbolize/symcache.c: an index read back from a cache file must
 * answer every lookup as the index it was saved from, whether the file holds
 * every cluster or some (the others then built from DWARF); a damaged file
 * must be refused, never crash.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid.h"
#include "symbolize/dwarfidx.h"
#include "sp.h"
#include "symbolize/symcache.h"
#include "libc_debug.h"
#include "tap.h"

static char libc_debug[256];
static const uint8_t id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6 };
static const struct sp_symcache_key key = { id, sizeof(id), 0, 0 };

struct opened {
	int fd;
	Elf *elf;
};

static Dwarf *open_dwarf(const char *path, struct opened *o)
{
	const char *why;

	o->fd = open(path, O_RDONLY);
	o->elf = o->fd >= 0 ? elf_begin(o->fd, ELF_C_READ, NULL) : NULL;
	if (!o->elf || !sp_dwarfidx_elf_sane(o->elf, &why))
		return NULL;
	return dwarf_begin_elf(o->elf, DWARF_C_READ, NULL);
}

static void close_opened(struct opened *o)
{
	if (o->elf)
		elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
}

/* The opener of a decoded index: the same file's DWARF, afresh. */
static const char *opener_path;
static struct opened opener_file = { -1, NULL };
static int opener_calls;

static Dwarf *opener(void *arg)
{
	(void)arg;
	opener_calls++;
	return open_dwarf(opener_path, &opener_file);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Lookups at every step-th address of [lo, hi) agree; returns how many had a function. */
static unsigned int compare(struct sp_dwarfidx *x, struct sp_dwarfidx *y, uint64_t lo,
			    uint64_t hi, uint64_t step, bool demangle)
{
	struct sp_dwarf_loc a[32], b[32];
	unsigned int named = 0, bad = 0;
	uint64_t addr;
	int n, m, j;

	for (addr = lo; addr < hi; addr += step) {
		n = sp_dwarfidx_lookup(x, addr, demangle, a, 32);
		m = sp_dwarfidx_lookup(y, addr, demangle, b, 32);
		for (j = 0; j < n && m == n; j++)
			if (!same_str(a[j].func, b[j].func) || !same_str(a[j].file, b[j].file) ||
			    a[j].line != b[j].line || a[j].column != b[j].column ||
			    a[j].entry != b[j].entry || a[j].inlined != b[j].inlined)
				break;
		if (m != n || j != n || (n == 0 && (!same_str(a[0].file, b[0].file) ||
						    a[0].line != b[0].line))) {
			if (!bad++)
				printf("#   0x%llx: %d levels fresh, %d cached, differ at %d\n",
				       (unsigned long long)addr, n, m, j);
			continue;
		}
		named += n > 0;
	}
	CHECK_EQ_U(bad, 0);
	return named;
}

static void text_range(const char *path, uint64_t *lo, uint64_t *hi)
{
	struct opened o;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	*lo = UINT64_MAX;
	*hi = 0;
	o.fd = open(path, O_RDONLY);
	o.elf = o.fd >= 0 ? elf_begin(o.fd, ELF_C_READ, NULL) : NULL;
	while (o.elf && (scn = elf_nextscn(o.elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_size) {
			if (sh.sh_addr < *lo)
				*lo = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > *hi)
				*hi = sh.sh_addr + sh.sh_size;
		}
	close_opened(&o);
}

/*
 * Index part of path lazily (every step-th address of the first half of its
 * text), save, decode with an opener, and compare the two over the whole
 * text; then the same with everything indexed and no opener.
 */
static void roundtrip(const char *path, uint64_t step)
{
	struct sp_dwarfidx *x, *y;
	struct sp_dwarf_loc loc[32];
	struct sp_dwarfidx_stats xs, ys;
	struct opened o;
	const char *why = NULL;
	uint64_t lo, hi, a;
	unsigned int named;
	size_t size, ncl, units, nbad;
	bool some_missing;
	void *buf;

	text_range(path, &lo, &hi);
	CHECK(lo < hi);
	x = sp_dwarfidx_open(open_dwarf(path, &o), 0, 0, NULL, &why);
	CHECK(x != NULL);
	if (!x) {
		close_opened(&o);
		return;
	}
	for (a = lo; a < lo + (hi - lo) / 2; a += step * 64)
		sp_dwarfidx_lookup(x, a, true, loc, 32);
	CHECK(sp_dwarfidx_built(x) > 0);
	sp_dwarfidx_counts(x, &ncl, &units, &nbad);
	some_missing = sp_dwarfidx_built(x) < ncl;
	buf = sp_symcache_encode(&key, x, &size);
	CHECK(buf != NULL);
	y = buf ? sp_symcache_decode(buf, size, &key, &why) : NULL;
	CHECK(y != NULL);
	if (y) {
		opener_path = path;
		opener_calls = 0;
		sp_dwarfidx_set_opener(y, opener, NULL);
		sp_dwarfidx_stats(x, &xs);
		sp_dwarfidx_stats(y, &ys);
		CHECK_EQ_U(ys.units_indexed, xs.units_indexed);
		CHECK_EQ_U(sp_dwarfidx_built(y), 0);
		/* The cached half first: no DWARF opened for it. */
		named = compare(x, y, lo, lo + (hi - lo) / 2, step * 64, true);
		CHECK_EQ_U(opener_calls, 0);
		named += compare(x, y, lo, hi, step, true);
		named += compare(x, y, lo, hi, step * 7, false);
		printf("#   %s: partial cache, %u lookups with a function agree, DWARF opened %d "
		       "time(s)\n", path, named, opener_calls);
		CHECK(named > 100);
		CHECK_EQ_U(opener_calls, some_missing);
		sp_dwarfidx_free(y);
		close_opened(&opener_file);
		opener_file.elf = NULL;
		opener_file.fd = -1;
	}
	free(buf);
	/* Everything indexed: the cache alone answers. */
	CHECK(sp_dwarfidx_index_all(x) == 0);
	buf = sp_symcache_encode(&key, x, &size);
	y = buf ? sp_symcache_decode(buf, size, &key, &why) : NULL;
	CHECK(y != NULL);
	if (y) {
		named = compare(x, y, lo, hi, step, true);
		printf("#   %s: full cache (%zu bytes), %u lookups with a function agree\n", path,
		       size, named);
		CHECK(named > 100);
		sp_dwarfidx_free(y);
	}
	free(buf);
	sp_dwarfidx_free(x);
	close_opened(&o);
}

static void test_symcache_self_roundtrip(void)
{
	roundtrip("/proc/self/exe", 3);
}

static void test_symcache_libc_roundtrip(void)
{
	roundtrip(libc_debug, 37);
}

/* A small index's file image, all its clusters built. */
static void *small_image(size_t *size, struct opened *o, struct sp_dwarfidx **x)
{
	const char *why;
	void *buf;

	*x = sp_dwarfidx_open(open_dwarf("/proc/self/exe", o), 0, 0, NULL, &why);
	if (!*x)
		return NULL;
	sp_dwarfidx_index_all(*x);
	buf = sp_symcache_encode(&key, *x, size);
	return buf;
}

static void test_symcache_refuses_damage(void)
{
	struct sp_symcache_key other = key;
	struct sp_dwarf_loc loc[8];
	struct sp_dwarfidx *x, *y;
	unsigned char *buf, *bad;
	const char *why;
	struct opened o;
	size_t size, i, refused = 0, tried = 0;

	buf = small_image(&size, &o, &x);
	CHECK(buf != NULL);
	if (!buf)
		return;
	bad = malloc(size);
	/* Every truncation. */
	for (i = 0; i < size; i += i < 4096 ? 1 : 997) {
		memcpy(bad, buf, i);
		why = NULL;
		y = sp_symcache_decode(bad, i, &key, &why);
		CHECK(y == NULL && why != NULL);
		sp_dwarfidx_free(y);
	}
	/* Flipped bytes: refused, or (a flip the checks cannot see) still safe to use. */
	for (i = 0; i < size; i += 1 + i / 64) {
		memcpy(bad, buf, size);
		bad[i] ^= 0x5a;
		y = sp_symcache_decode(bad, size, &key, &why);
		tried++;
		if (!y) {
			refused++;
			continue;
		}
		sp_dwarfidx_lookup(y, 0x1000 + i, true, loc, 8);
		sp_dwarfidx_free(y);
	}
	printf("#   %zu of %zu damaged images refused\n", refused, tried);
	CHECK_EQ_U(refused, tried);
	/* Another build-id, another text range, another version. */
	other.build_id_len = 19;
	CHECK(sp_symcache_decode(buf, size, &other, &why) == NULL);
	CHECK_STR(why, "made for another file");
	other = key;
	other.text_hi = 1;
	CHECK(sp_symcache_decode(buf, size, &other, &why) == NULL);
	memcpy(bad, buf, size);
	bad[8]++;
	CHECK(sp_symcache_decode(bad, size, &key, &why) == NULL);
	CHECK_STR(why, "another format version");
	free(bad);
	free(buf);
	sp_dwarfidx_free(x);
	close_opened(&o);
}

static void test_symcache_files(void)
{
	char dir[] = "/tmp/test-symcache-XXXXXX", path[512], file[600];
	char hex[2 * sizeof(id) + 1];
	struct sp_dwarfidx *x, *y;
	struct sp_symcache *c;
	struct opened o;
	size_t size;
	void *buf;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/a/b", dir);
	buf = small_image(&size, &o, &x);
	CHECK(buf != NULL);
	c = sp_symcache_new(path);
	/* Nothing there yet: silently nothing. */
	CHECK(sp_symcache_load(c, &key) == NULL);
	CHECK(sp_symcache_save(c, &key, x) == 0);
	y = sp_symcache_load(c, &key);
	CHECK(y != NULL);
	sp_dwarfidx_free(y);
	/* The file is named by build-id and text range, and nothing else is left. */
	snprintf(file, sizeof(file), "%s/%s-0-0.idx", path,
		 sp_buildid_hex(id, sizeof(id), hex));
	CHECK(access(file, R_OK) == 0);
	/* Cut short: refused with a warning, then saved over. */
	CHECK(truncate(file, size / 2) == 0);
	CHECK(sp_symcache_load(c, &key) == NULL);
	CHECK(sp_symcache_save(c, &key, x) == 0);
	y = sp_symcache_load(c, &key);
	CHECK(y != NULL);
	sp_dwarfidx_free(y);
	sp_symcache_free(c);
	/* A directory that cannot be: a warning, -1, and silence after. */
	snprintf(file, sizeof(file), "%s/plain", dir);
	f = fopen(file, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/plain/sub", dir);
	c = sp_symcache_new(path);
	CHECK(sp_symcache_save(c, &key, x) == -1);
	CHECK(sp_symcache_save(c, &key, x) == -1);
	sp_symcache_free(c);
	free(buf);
	sp_dwarfidx_free(x);
	close_opened(&o);
	snprintf(file, sizeof(file), "rm -rf '%s'", dir);
	CHECK(system(file) == 0);
}

static void test_symcache_default_dir(void)
{
	char *d;

	setenv("SP_CACHE_DIR", "/x/y", 1);
	d = sp_symcache_default_dir();
	CHECK_STR(d, "/x/y/symbols");
	free(d);
	setenv("SP_CACHE_DIR", "", 1);
	CHECK(sp_symcache_default_dir() == NULL);
	unsetenv("SP_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/c", 1);
	d = sp_symcache_default_dir();
	CHECK_STR(d, "/c/stackpulse/symbols");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/h", 1);
	d = sp_symcache_default_dir();
	CHECK_STR(d, "/h/.cache/stackpulse/symbols");
	free(d);
}


int main(void)
{
	elf_version(EV_CURRENT);
	sp_progname = "test-symcache";
	TAP_RUN(test_symcache_self_roundtrip);
	if (find_libc_debug(libc_debug, sizeof(libc_debug)))
		TAP_RUN(test_symcache_libc_roundtrip);
	else
		TAP_SKIP(test_symcache_libc_roundtrip, "libc6-dbg is not installed");
	TAP_RUN(test_symcache_refuses_damage);
	TAP_RUN(test_symcache_files);
	TAP_RUN(test_symcache_default_dir);
	return TAP_DONE();
}
