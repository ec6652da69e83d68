/* SPDX-License-Identifier: MIT */
/*
 * kallsyms.h - the kernel's code symbols from /proc/kallsyms, read once and
 * kept sorted, to find the symbol holding a kernel address (sp-record writes
 * the symbols of the kernel frames it saw, so another machine can symbolize
 * them; sp-decode --from=perf, those of a perf.data recorded on this kernel).
 * The reader is lib/elf/kallsyms.c (no BPF needed); the per-boot cache,
 * sp_kallsyms_load_cached() and sp_kallsyms_open_cache(), is sp-record's
 * (lib/record/kallsyms_cache.c).
 */
#ifndef STACKPULSE_KALLSYMS_H
#define STACKPULSE_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_kallsym {
	uint64_t addr;
	uint32_t name;		/* offset in names */
	uint32_t kmod;		/* offset in names, 0 = vmlinux ("") */
};

struct sp_kallsyms {
	struct sp_kallsym *sym;	/* sorted by addr */
	size_t n, cap;
	char *names;		/* NUL-terminated names, back to back */
	size_t names_len;
	bool zero;		/* every address was 0: not allowed to see them */
	bool from_cache;	/* read from sp_kallsyms_load_cached()'s cache */
	void *map;		/* the cache file, mapped (sym and names point in) */
	size_t map_len;
	uint64_t text_lo, text_hi;	/* vmlinux text: _stext .. _etext, 0 if unknown */
	uint64_t init_lo, init_hi;	/* its init text: _sinittext .. _einittext (the
					 * idle tasks' stacks, start_kernel), 0 if unknown */
};

/* Parse one line ("ADDR TYPE NAME [MODULE]"). Returns 1 for a code symbol
 * (type t, T, w, W), 0 for another symbol, -1 for a malformed line. *name
 * and *kmod point into line (which is modified); *kmod is "" for vmlinux. */
int sp_kallsyms_parse_line(char *line, uint64_t *addr, char **name, char **kmod);

/* Read path (NULL: /proc/kallsyms). 0, or -1 with errno set (nothing reported). */
int sp_kallsyms_load(struct sp_kallsyms *k, const char *path);
void sp_kallsyms_release(struct sp_kallsyms *k);

/*
 * The same, through a cache of the parsed table in dir (created 0700, with
 * its missing parents), one file per boot (/proc/sys/kernel/random/boot_id):
 * reading /proc/kallsyms costs tens of milliseconds of kernel time, the cache a
 * read. vmlinux's symbols do not change during a boot; those of modules and
 * BPF programs do, so a cached table is only to be trusted for addresses in
 * [text_lo, text_hi) or [init_lo, init_hi) (sp_kallsyms_in_text()); for
 * others, load afresh.
 * The directory and the file are checked as safefile.h says: a directory
 * another user could change, or a cache file that is a link, not owned by
 * the caller (or root) or writable by others, is not used (one warning)
 * and the file is replaced. dir NULL: no cache. 0, or -1 with errno set.
 */
int sp_kallsyms_load_cached(struct sp_kallsyms *k, const char *dir);
/* Only the cache: 0, or -1 when there is none for this boot (or it is bad). */
int sp_kallsyms_open_cache(struct sp_kallsyms *k, const char *dir);

static inline int sp_kallsyms_in_text(const struct sp_kallsyms *k, uint64_t addr)
{
	return (addr >= k->text_lo && addr < k->text_hi) ||
	       (addr >= k->init_lo && addr < k->init_hi);
}

/* The symbol holding addr (the last one at or below it), NULL if none;
 * *size (may be NULL) gets the distance to the next symbol, 0 for the last. */
const struct sp_kallsym *sp_kallsyms_find(const struct sp_kallsyms *k, uint64_t addr,
					  uint64_t *size);

/* A name by offset; "" for an offset outside the table (a damaged cache). */
static inline const char *sp_kallsyms_str(const struct sp_kallsyms *k, uint32_t off)
{
	return off < k->names_len ? k->names + off : "";
}

#endif
