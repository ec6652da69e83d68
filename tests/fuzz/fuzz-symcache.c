// SPDX-License-Identifier: MIT
/*
 * Fuzz the DWARF index cache reader: the input is a cache file (mutated
 * from the seeds in tests/fuzz/corpus/fuzz-symcache/: indexes of small -g
 * programs, every cluster built or some), decoded for the key its own header
 * names (so that mutations get past the key check; the fuzzing build of the
 * library skips the checksums for the same reason), then looked up at the
 * bounds of its clusters and at addresses from the input's last bytes. An
 * index that decodes must encode again, and that image must decode and
 * answer the same. Nothing may crash, hang or allocate without bound.
 */
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "symbolize/dwarfidx.h"
#include "sp.h"
#include "symbolize/symcache.h"

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_dwarf_loc a[8], b[8];
	struct sp_dwarfidx_cluster c;
	struct sp_dwarfidx_part part;
	struct sp_symcache_key k = { 0 };
	struct sp_dwarfidx *x, *y;
	uint8_t id[SP_BUILD_ID_MAX];
	uint64_t addrs[48], v;
	size_t n = 0, ncl, units, bad, i, size2;
	const char *why, *file;
	uint32_t line, col, idlen;
	void *buf, *copy;
	int na, nb, j;

	sp_progname = "fuzz-symcache";
	/* The key from the header: build-id length at 20, id at 24, text range at 88. */
	if (size >= 104) {
		memcpy(&idlen, data + 20, 4);
		k.build_id_len = idlen <= SP_BUILD_ID_MAX ? idlen : 0;
		memcpy(id, data + 24, SP_BUILD_ID_MAX);
		k.build_id = id;
		memcpy(&k.text_lo, data + 88, 8);
		memcpy(&k.text_hi, data + 96, 8);
	}
	/* An aligned copy, as a mapping would be. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	x = sp_symcache_decode(copy, size, &k, &why);
	if (!x) {
		free(copy);
		return 0;
	}
	sp_dwarfidx_counts(x, &ncl, &units, &bad);
	for (i = 0; i < ncl && n + 3 <= 32; i++) {
		sp_dwarfidx_cluster(x, i, &c, &part);
		addrs[n++] = c.lo;
		addrs[n++] = c.hi - 1;
		addrs[n++] = c.lo + (c.hi - c.lo) / 2;
	}
	for (i = 0; i + 8 <= size && i < 128 && n < 48; i += 8) {
		memcpy(&v, data + size - 8 - i, 8);
		addrs[n++] = v;
	}
	buf = sp_symcache_encode(&k, x, &size2);
	y = buf ? sp_symcache_decode(buf, size2, &k, &why) : NULL;
	if (buf && !y)
		abort();	/* what we accepted, we must write readably */
	for (i = 0; i < n; i++) {
		na = sp_dwarfidx_lookup(x, addrs[i], i & 1, a, 8);
		sp_dwarfidx_line(x, addrs[i], &file, &line, &col);
		if (!y)
			continue;
		nb = sp_dwarfidx_lookup(y, addrs[i], i & 1, b, 8);
		if (na != nb)
			abort();
		for (j = 0; j < na; j++)
			if (!same(a[j].func, b[j].func) || !same(a[j].file, b[j].file) ||
			    a[j].line != b[j].line || a[j].entry != b[j].entry)
				abort();
	}
	sp_dwarfidx_free(y);
	sp_dwarfidx_free(x);
	free(buf);
	free(copy);
	return 0;
}
