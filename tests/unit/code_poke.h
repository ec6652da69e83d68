/* SPDX-License-Identifier: MIT */
/*
 * code_poke.h - unit tests' stand-in for a uprobe: write b at a marker's
 * first byte (0xcc, as the kernel does while a uprobe is on it, or the
 * nop's own byte back). The marker must not run meanwhile, or only with a
 * SIGTRAP handler: no uprobe is behind the 0xcc.
 */
#ifndef SP_TEST_CODE_POKE_H
#define SP_TEST_CODE_POKE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static inline bool code_poke(const unsigned char *site, unsigned char b)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *page = (void *)((uintptr_t)site & ~(uintptr_t)(pg - 1));

	if (mprotect(page, pg, PROT_READ | PROT_WRITE | PROT_EXEC))
		return false;
	*(volatile unsigned char *)site = b;
	return !mprotect(page, pg, PROT_READ | PROT_EXEC);
}

#endif
