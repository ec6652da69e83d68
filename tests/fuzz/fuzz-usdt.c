// SPDX-License-Identifier: MIT
/*
 * Fuzz what sp-record reads from the ELF files of the processes it records
 * to find and attach span probes (lib/record/bpf_spans.c): USDT notes and their
 * providers, the file offsets of a probe's locations, a runtime's version
 * from its dynamic symbols, the libraries it needs. The input is an ELF
 * file (seeds in tests/fuzz/corpus/fuzz-usdt/: small binaries and
 * libraries with <stackpulse/span.h> markers). Nothing may crash, hang or
 * return a location outside the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bpf_spans.h"
#include "sp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const probes[][3] = {
		{ "stackpulse", "span__begin", SP_SPANS_USDT_REGS_ARGS },
		{ "stackpulse", "span__end", NULL },
		{ "stackpulse", "rb__call", SP_SPANS_HOOK_ARGS },
		{ "ruby", "method__entry", NULL },
	};
	char path[64], ver[32], (*libs)[4096] = malloc(16 * sizeof(*libs));
	uint64_t offs[64];
	unsigned int i;
	int fd = memfd_create("elf", MFD_CLOEXEC), n, k;

	sp_verbose = -1;
	if (fd < 0 || !libs || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	(void)sp_spans_elf_providers(path);
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		n = sp_spans_usdt_offsets(path, probes[i][0], probes[i][1], probes[i][2], offs, 64);
		if (n > 64)
			abort();
		for (k = 0; k < n; k++)
			if (offs[k] >= size)
				abort();
	}
	sp_spans_runtime_version(path, SP_RT_RUBY, ver, sizeof(ver));
	sp_spans_runtime_version(path, SP_RT_PYTHON, ver, sizeof(ver));
	n = sp_spans_needed_libs(path, true, libs, 16);
	if (n < 0 || n > 16)
		abort();
	free(libs);
	close(fd);
	return 0;
}
