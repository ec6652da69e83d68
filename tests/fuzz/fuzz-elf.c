// SPDX-License-Identifier: MIT
/*
 * Fuzz the module loader: the input is an ELF file (mutated from the seeds
 * in tests/fuzz/corpus/fuzz-elf/: small binaries with symbols and DWARF,
 * stripped ones, a separate debug file) put behind a module record and
 * symbolized at addresses taken from its own symbol table and from the
 * input's last bytes. Also indexes it directly with the symbol table and
 * DWARF index builders. Nothing may crash, hang or grow without bound;
 * every frame must come back with a status.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <gelf.h>

#include "symbolize/dwarfidx.h"
#include "sp.h"
#include "symbolize.h"
#include "elf/symtab.h"

static int memfd = -1;
static char path[64];

static void direct(const uint8_t *data, size_t size, uint64_t *addrs, unsigned int *naddrs)
{
	struct sp_dwarf_loc loc[8];
	struct sp_symtab *st = sp_symtab_new();
	struct sp_dwarfidx *x = NULL;
	const char *why;
	Elf *elf;
	Dwarf *dw;
	size_t i;

	elf = elf_memory((char *)data, size);
	if (!elf) {
		sp_symtab_free(st);
		return;
	}
	if (sp_symtab_add_elf(st, elf, false, &why) > 0) {
		sp_symtab_finish(st);
		/* Addresses inside its functions, for the symbolizer below. */
		for (i = 0; i < 64 && *naddrs < 16; i += 8) {
			const struct sp_symtab_entry *e = sp_symtab_lookup(st, 0x1000 + i * 0x40);

			if (e)
				addrs[(*naddrs)++] = e->addr + e->size / 2;
		}
	}
	sp_symtab_add_elf(st, elf, true, &why);
	dw = sp_dwarfidx_elf_sane(elf, &why) ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	if (dw) {
		x = sp_dwarfidx_build(dw, 0, 0, NULL, &why);
		if (x)
			for (i = 0; i < *naddrs; i++)
				sp_dwarfidx_lookup(x, addrs[i], true, loc, 8);
		sp_dwarfidx_free(x);
		dwarf_end(dw);
	}
	elf_end(elf);
	sp_symtab_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_symbolize_opts o = { .no_system_debug = true, .no_cache = true };
	struct sp_module m = { .id = 1, .pid = 1, .start = 0x400000, .end = 0x10000000 };
	uint64_t addrs[24];
	unsigned int naddrs = 0, i;
	struct sp_symbolizer *s;

	if (memfd < 0) {
		memfd = memfd_create("fuzz-elf", 0);
		if (memfd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
		elf_version(EV_CURRENT);
		sp_progname = "fuzz-elf";
	}
	direct(data, size, addrs, &naddrs);
	for (i = 0; i + 8 <= size && i < 64 && naddrs < 24; i += 8)
		memcpy(&addrs[naddrs++], data + size - 8 - i, 8);
	addrs[naddrs++] = 0x1139;
	if (ftruncate(memfd, 0) < 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	s = sp_symbolizer_new(&o);
	sp_symbolizer_module(s, &m, path);
	for (i = 0; i < naddrs; i++) {
		struct sp_frame f = { .module = 1, .rel = addrs[i], .addr = addrs[i],
				      .flags = i & 1 ? SP_FRAME_LEAF : 0 };
		const struct sp_sym_result *r = sp_symbolizer_frame(s, &f);

		if (r->n < 1 || r->n > SP_SYMBOLIZE_MAX_LEVELS)
			abort();
	}
	sp_symbolizer_module_end(s, 1);
	sp_symbolizer_free(s);
	return 0;
}
