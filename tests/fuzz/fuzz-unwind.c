// SPDX-License-Identifier: MIT
/*
 * Fuzz the DWARF unwinder with random registers and stack bytes. The input
 * is 17 little-endian 64-bit registers (perf's order) followed by the stack
 * copy. The unwinder knows this fuzzer's own executable mappings (real CFI
 * of the fuzzer, libc, libdw...) under a made-up pid, and the pc and the
 * stack words the input names are folded into those mappings half of the
 * time, so that real unwind tables get exercised with hostile stacks.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unwind.h"

static struct sp_unwinder *u;
static struct {
	uint64_t start, end;
} ranges[256];
static unsigned int nranges;

static void setup(void)
{
	char line[4200];
	FILE *f = fopen("/proc/self/maps", "r");

	u = sp_unwinder_new();
	sp_unwinder_set_proc_fallback(u, false);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[4096] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms, &off,
			   path) < 4 || perms[2] != 'x')
			continue;
		sp_unwinder_map(u, 1, lo, hi, off, path);
		if (nranges < 256) {
			ranges[nranges].start = lo;
			ranges[nranges].end = hi;
			nranges++;
		}
	}
	if (f)
		fclose(f);
}

static uint64_t fold(uint64_t v)
{
	const unsigned int k = (v >> 56) % (nranges ? nranges : 1);

	if (!nranges)
		return v;
	return ranges[k].start + (v & 0xffffffffffULL) % (ranges[k].end - ranges[k].start);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t stack[65536];
	uint64_t regs[SP_UNWIND_NREGS], ips[128];
	enum sp_unwind_status st;
	size_t n, i;

	if (!u)
		setup();
	if (size < sizeof(regs))
		return 0;
	memcpy(regs, data, sizeof(regs));
	n = size - sizeof(regs);
	if (n > sizeof(stack))
		n = sizeof(stack);
	memcpy(stack, data + sizeof(regs), n);
	if (regs[9] & 1) {
		regs[8] = fold(regs[8]);
		/* make every fourth stack word a code address */
		for (i = 0; i + 8 <= n; i += 32) {
			uint64_t w;

			memcpy(&w, stack + i, 8);
			w = fold(w);
			memcpy(stack + i, &w, 8);
		}
	}
	if (regs[9] & 2)
		regs[7] = 0x7ff000000000ULL;	/* rbp-relative data near sp */
	if (regs[9] & 2)
		regs[6] = regs[7] + (regs[6] % (n + 64));
	sp_unwinder_unwind(u, 1, 1, regs, SP_UNWIND_NREGS, stack, n, ips, 128, &st);
	if (st > SP_UNWIND_ERROR)
		__builtin_trap();
	return 0;
}
