/* SPDX-License-Identifier: MIT */
/*
 * symtab.h - a sorted table of function symbols for address lookups: from an
 * ELF file's .symtab or .dynsym, or added one by one (kernel symbols, JIT
 * perf maps).
 *
 * Sizes are honoured: an address past the end of a sized symbol is not given
 * its name, even when no other symbol follows. An unsized symbol (size 0:
 * assembler labels, kernel symbols without a size) covers the addresses up to
 * the next symbol, and no further than the end of its section when known.
 */
#ifndef STACKPULSE_SYMTAB_H
#define STACKPULSE_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

#define SP_SYMTAB_DYNSYM	(1u << 0)	/* from .dynsym */
#define SP_SYMTAB_UNSIZED	(1u << 1)	/* size was 0; extended to the next symbol */
#define SP_SYMTAB_LOCAL		(1u << 2)	/* STB_LOCAL */
#define SP_SYMTAB_ADDED		(1u << 3)	/* by sp_symtab_add(): the latest wins */

struct sp_symtab_entry {
	uint64_t addr, size;	/* size after sp_symtab_finish(), never 0 for a hit */
	uint64_t limit;		/* end of the symbol's section, 0 = unknown */
	const char *name;	/* owned by the table */
	char *demangled;	/* sp_demangle_cached() slot */
	uint32_t flags;		/* SP_SYMTAB_* */
	uint32_t rank;		/* preference among symbols at one address */
};

struct sp_symtab;

/* Out of memory is fatal here as everywhere (sp.h): nothing returns NULL or -1 for it. */
struct sp_symtab *sp_symtab_new(void);
void sp_symtab_free(struct sp_symtab *st);

/*
 * Add the function symbols of elf: its .symtab, or its .dynsym when it has
 * no .symtab or when dynsym is true. Returns the number of symbols added (0
 * when the file has no such table), or -1 on a malformed file with *why set
 * to a static message.
 */
int sp_symtab_add_elf(struct sp_symtab *st, Elf *elf, bool dynsym, const char **why);
/* True if elf has a SHT_SYMTAB section with at least one symbol. */
bool sp_symtab_elf_has_symtab(Elf *elf);

/* Add one symbol (name copied, len bytes, need not be NUL-terminated). 0, or -1 if name is NULL. */
int sp_symtab_add(struct sp_symtab *st, uint64_t addr, uint64_t size, const char *name,
		  size_t len, uint32_t flags);

/* Sort and settle sizes; called by sp_symtab_lookup() after additions. */
void sp_symtab_finish(struct sp_symtab *st);

/* The symbol covering addr, or NULL. Valid until the next addition. */
const struct sp_symtab_entry *sp_symtab_lookup(struct sp_symtab *st, uint64_t addr);

/* Number of symbols (after dropping duplicates, once finished). */
size_t sp_symtab_count(const struct sp_symtab *st);
/* Bytes held. */
size_t sp_symtab_memory(const struct sp_symtab *st);

#endif
