/* SPDX-License-Identifier: MIT */
/*
 * symbolize_priv.h - the inside of the symbolizer (symbolize.h), shared by
 * its files:
 *
 *   symbolize.c         the symbolizer and the stream's modules: images
 *                       made, shared and retired, kernel and JIT symbols
 *   symbolize_find.c    finding the file behind an image: the archive, the
 *                       image directories, the sysroot, the vDSO; each
 *                       candidate opened and checked against the build-id
 *   symbolize_debug.c   separate debug files (by build-id, .gnu_debuglink,
 *                       else from debuginfod servers: debuginfod.h) and
 *                       libdw's handle on the DWARF
 *   symbolize_load.c    loading an image on its first lookup: its symbol
 *                       table and DWARF index (from the cache, or opened
 *                       lazily), saving and unloading it; loading the
 *                       images of a batch of frames at once, their missing
 *                       debug files fetched together
 *   symbolize_lookup.c  resolving a frame, and the per-file results cache
 *   symbolize_stats.c   the statistics and their printing
 *
 * An image is one file identity (a build-id, else path and inode) that
 * the modules mapping it share; it is loaded on its first lookup and
 * retired with its last module.
 */
#ifndef STACKPULSE_SYMBOLIZE_PRIV_H
#define STACKPULSE_SYMBOLIZE_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <libelf.h>

#include "buildid.h"
#include "debuginfod.h"
#include "dwarfidx.h"
#include "hashmap.h"
#include "symbolize.h"
#include "symcache.h"
#include "elf/symtab.h"

#define NSTATUS		(SP_SYM_BAD_FILE + 1)
#define MAX_FILE_SIZE	(4ull << 30)	/* larger "ELF files" are not read */

struct file_stats {
	uint64_t frames;
	uint64_t by_status[NSTATUS];
	uint64_t named;		/* frames given a function name */
	uint64_t with_line;	/* frames given a file:line */
};

/* A cached result: levels[first .. first + n) of the image. */
struct cached {
	uint32_t first, n;
	uint32_t status;
};

/* One file identity (build-id, else path + inode), shared by its modules. */
struct image {
	struct image *next;		/* all images */
	char *path;			/* recorded path */
	uint8_t build_id[SP_BUILD_ID_MAX];
	unsigned int build_id_len;
	uint64_t dev, ino, size, mtime_ns;
	uint64_t pid;			/* for JIT/anon and identity without build-id */
	bool vdso, kernel, anon;
	unsigned int refs;		/* live modules */
	bool shared;			/* has had several modules: worth caching results */

	/* Loaded on the first lookup. */
	bool loaded;
	unsigned int status;		/* SP_SYM_OK, or why nothing resolves */
	bool stripped;			/* only .dynsym */
	bool from_archive;
	char *loaded_from;		/* the file actually read */
	int root_fd;			/* -1, or the file found in a process's root
					 * (loaded_from is /proc/self/fd/root_fd) */
	struct sp_symtab *symtab;	/* the file's own: .symtab, else .dynsym */
	struct sp_symtab *dbgsyms;	/* a separate debug file's .symtab, if the file has none */
	struct sp_dwarfidx *dwarf;	/* lazy: reads dw_elf at lookups */
	Elf *dw_elf;			/* the file of the DWARF, held open for it */
	int dw_fd;
	uint64_t text_lo, text_hi;	/* what the index covers: the cache key */
	bool dwarf_cached;		/* dwarf came from the cache: no debug file yet */
	bool debug_tried;		/* ... and it has been looked for since */
	size_t saved_built;		/* clusters built when last saved to the cache */
	int nsyms;			/* its own symbols, -1: a bad table (for a load finished late) */
	struct sp_symbolizer *sym;

	struct sp_u64map cache;		/* (lookup address << 1 | leaf) -> index + 1 */
	struct cached *results;
	size_t nresults, capresults;
	struct sp_sym_level *levels;
	size_t nlevels, caplevels;

	struct file_stats st;
};

/* Statistics kept after an image is freed. */
struct retired {
	struct retired *next;
	char *path;
	struct file_stats st;
};

struct module_ent {
	struct image *img;
	uint64_t pid;
	uint64_t start;
	uint64_t next_in_pid;		/* module id, 0 = end */
	uint64_t flags;
	uint64_t time;			/* when it was mapped, 0 unknown */
	bool live;
};

struct sp_symbolizer {
	struct sp_symbolize_opts o;
	struct image *images;
	struct retired *retired;
	struct sp_u64map retired_by_path;	/* hash of path -> struct retired * */
	struct module_ent *mods;	/* by module id */
	size_t nmods, capmods;
	struct sp_u64map pid_mods;	/* pid -> first module id */
	struct sp_u64map jit;		/* pid -> struct sp_symtab * */
	struct sp_symtab *ksyms;
	char kernel_release[128];
	bool same_kernel;
	struct sp_sym_result res;
	struct file_stats kernel_st, jit_st, none_st;
	uint64_t files_loaded, files_live;
	uint64_t generation;
	struct sp_symcache *cache;	/* NULL: --no-cache */
	struct sp_dbgd *dbgd;		/* NULL: debuginfod not used */
	bool dbgd_batch;		/* loading a batch: queue fetches, do not wait */
	struct image **waiting;		/* loaded but for the debug file being fetched */
	size_t nwaiting, capwaiting;
};

/* A candidate file for an image, open. */
struct image_file {
	int fd;
	Elf *elf;
	char *path;		/* as opened; "[vdso]" for this process's vDSO */
};

/* symbolize_find.c */
/*
 * Open path as an ELF file into f: 0, or -1 with *why (a static message;
 * NULL for a plain "not there", which is not worth a warning).
 */
int sp_image_file_open(struct image_file *f, const char *path, const char **why);
void sp_image_file_close(struct image_file *f);
/* Open path for img into f and check its identity (the build-id, else size
 * and mtime when check_stat): 1 it is the file, 0 not there, -1 there but
 * not it (*why). */
int sp_image_file_try(struct image *img, const char *path, bool check_stat,
		      struct image_file *f, const char **why);
/* Find and open the file behind img into f: true, or false with
 * img->status set and the reason said (once: images load once). */
bool sp_image_find(struct sp_symbolizer *s, struct image *img, struct image_file *f);
/* "'FILE': WHAT; its frames stay unresolved" (file NULL: the image's path). */
void sp_image_warn(struct image *img, const char *file, const char *what);

/* symbolize_debug.c */
/*
 * The file holding img's DWARF: f itself, else its separate debug file,
 * opened into dbg. A stripped file gets the debug file's .symtab too.
 * NULL only while a batch is loaded (s->dbgd_batch): the debug file is to
 * be fetched from debuginfod first.
 */
struct image_file *sp_image_debug_find(struct sp_symbolizer *s, struct image *img,
				       struct image_file *f, struct image_file *dbg);
/* libdw's handle on f's DWARF, NULL (warned) if it has none that is usable. */
Dwarf *sp_image_dwarf_open(const struct sp_symbolizer *s, struct image_file *f);
/*
 * For an index from the cache: find the debug file after all (a lookup
 * needs a cluster the cache lacks, or the debug file's symbols), and give
 * its DWARF when want_dwarf, holding the file open for the index.
 */
Dwarf *sp_image_debug_late(struct image *img, bool want_dwarf);

/* symbolize_load.c */
/* On img's first lookup: find its file, read its symbol table, take its
 * DWARF index from the cache or open it lazily; img->status says why
 * nothing resolves when that is so. */
void sp_image_load(struct sp_symbolizer *s, struct image *img);
/* Keep what was indexed for the next run (symcache.h). */
void sp_image_save(struct image *img);
/* Free what loading made: the image is as before its first lookup. */
void sp_image_unload(struct image *img);


/* symbolize_stats.c: add from's counts into to; the retired entry of
 * path (one per file), or NULL. */
void sp_sym_stats_add(struct file_stats *to, const struct file_stats *from);
struct retired *sp_sym_retired_of(const struct sp_symbolizer *s, const char *path);

#endif
