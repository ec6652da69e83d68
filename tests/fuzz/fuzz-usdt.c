// SPDX-License-Identifier: MIT
/*
 * Fuzz what sp-record reads from the ELF files of the processes it records
 * to find and attach span probes (lib/elf/usdt.c, lib/elf/dynamic.c): USDT
 * notes and their providers, the file offsets of a probe's locations and
 * semaphores, a runtime's version from its dynamic symbols, the libraries
 * it needs. The input is an ELF file (seeds in tests/fuzz/corpus/fuzz-usdt/:
 * small binaries and libraries with <stackpulse/span.h> markers). Nothing
 * may crash, hang or return a location outside the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/dynamic.h"
#include "elf/usdt.h"
#include "sp.h"

static void see_note(void *arg, const struct sp_usdt_note *n)
{
	size_t *len = arg;

	/* every string handed over ends inside the note */
	*len += strlen(n->provider) + (n->name ? strlen(n->name) : 0) +
		(n->args ? strlen(n->args) : 0);
}

static int see_loc(void *arg, const struct sp_usdt_loc *l)
{
	uint64_t size = *(uint64_t *)arg;

	if (l->off >= size || l->sem_off >= size || (l->sem_off && !l->sem))
		abort();
	return strlen(l->args) > 4096;	/* read it all */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const probes[][3] = {
		{ "stackpulse", "span__begin", "8@%rdi 8@%rsi -4@%edx" },
		{ "stackpulse", "span__end", NULL },
		{ "stackpulse", "rb__call", "8@%rdi 8@%rsi 8@%rdx -4@%ecx" },
		{ "ruby", "method__entry", NULL },
	};
	char path[64], ver[16], (*libs)[4096] = malloc(16 * sizeof(*libs));
	uint64_t offs[64], fsize = size;
	size_t len = 0;
	unsigned int i;
	uint32_t hex;
	int fd = memfd_create("elf", MFD_CLOEXEC), n, k;

	sp_verbose = -1;
	if (fd < 0 || !libs || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	(void)sp_usdt_notes(path, see_note, &len);
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		n = sp_usdt_offsets(path, probes[i][0], probes[i][1], probes[i][2], offs, 64);
		if (n > 64)
			abort();
		for (k = 0; k < n; k++)
			if (offs[k] >= size)
				abort();
		(void)sp_usdt_locations(path, probes[i][0], probes[i][1], see_loc, &fsize);
	}
	(void)sp_elf_read_dynsym(path, "ruby_version", ver, sizeof(ver) - 1);
	(void)sp_elf_read_dynsym(path, "Py_Version", &hex, 4);
	(void)sp_elf_func_offset(path, "_dl_debug_state");
	n = sp_elf_needed_libs(path, NULL, NULL, libs, 16);
	if (n < 0 || n > 16)
		abort();
	free(libs);
	close(fd);
	return 0;
}
