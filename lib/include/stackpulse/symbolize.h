/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h - names, source files and lines for the frames of a record
 * stream, as sp-symbolize adds them.
 *
 * The symbolizer follows the stream's definitions: modules (mappings of ELF
 * files, the kernel, anonymous JIT memory), kernel symbols (SP_REC_KSYM) and
 * JIT symbols (SP_REC_JITSYM), and the records that retire them. The file
 * behind a module is found and loaded on the first lookup in it, once per
 * file identity (build-id, else path and inode), and is used only if its
 * build-id matches the recorded one. Its symbol table and DWARF index, and
 * the results of its lookups, are kept while a module that maps it is live
 * and freed when the stream retires the last one: SP_REC_MODULE_END (a
 * file's module may serve several processes, as sp-record shares them), or
 * SP_REC_PROCESS_END for the process's anonymous (JIT) modules and JIT
 * symbols.
 *
 * Where a file is looked for, first match wins:
 *   1. the archive directory: ARCHIVE/xx/yyyy... (build-id in hex), see archive.h
 *   2. IMAGE_DIR/<basename>, for each --image-dir
 *   3. SYSROOT/<recorded path> (SYSROOT defaults to "/")
 * and its debug information (when the file itself has no DWARF):
 *   DEBUG_DIR/.build-id/xx/yyyy....debug for each --debug-dir, then
 *   SYSROOT/usr/lib/debug and /usr/lib/debug; then .gnu_debuglink's name
 *   next to the file, in its .debug/ directory, and under each debug
 *   directory followed by the file's directory; ARCHIVE/xx/yyyy....debug.
 * A debug file is used only if its build-id (or, without one, the
 * debuglink's CRC) matches. When none is found and DEBUGINFOD_URLS names
 * servers (unless opts->no_debuginfod), it is fetched from them by
 * build-id (debuginfod.h) into CACHE_DIR/debuginfod, once per build-id and
 * run; sp_symbolizer_prepare() fetches those of a batch in parallel.
 *
 * DWARF indexes are kept in a cache (symcache.h) unless opts->no_cache: a
 * file with a build-id whose index is cached is not looked for debug
 * information at all until a lookup needs a cluster the cache lacks (or, in
 * a stripped file, the debug file's symbol table); what grew is saved when
 * the file is retired, or by sp_symbolizer_save().
 */
#ifndef STACKPULSE_SYMBOLIZE_H
#define STACKPULSE_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "record.h"

#define SP_SYMBOLIZE_MAX_DIRS	16
#define SP_SYMBOLIZE_MAX_LEVELS	32	/* inline levels kept per frame */

struct sp_symbolize_opts {
	const char *sysroot;		/* NULL = "/" */
	const char *archive;		/* NULL = none */
	const char *debug_dirs[SP_SYMBOLIZE_MAX_DIRS];	/* NULL-terminated */
	const char *image_dirs[SP_SYMBOLIZE_MAX_DIRS];	/* NULL-terminated */
	bool no_demangle;
	bool no_inline;			/* only the physical function */
	bool no_system_debug;		/* skip /usr/lib/debug (tests) */
	bool index_all;			/* index a file's whole DWARF at load */
	const char *cache_dir;		/* DWARF index cache (symcache.h); NULL = default */
	bool no_cache;			/* neither read nor write the cache */
	bool no_debuginfod;		/* do not ask DEBUGINFOD_URLS' servers */
	uint64_t debuginfod_timeout_ns;	/* per debug file; 0: $DEBUGINFOD_TIMEOUT or 90 s */
	bool progress;			/* say on stderr how slow fetches go (a terminal) */
};

/* One level of a frame's inline chain. Strings are owned by the symbolizer
 * and valid until the next sp_symbolizer_* call that retires or resets. */
struct sp_sym_level {
	const char *func;	/* NULL: unresolved */
	const char *file;	/* NULL: unknown */
	uint32_t line, column;
	uint64_t offset;	/* frame address minus the function's (or instance's) start */
	uint32_t flags;		/* SP_SYM_* of record.h */
};

struct sp_sym_result {
	unsigned int status;	/* enum sp_sym_status */
	unsigned int n;		/* levels, at least 1 (level 0 may be unresolved) */
	struct sp_sym_level level[SP_SYMBOLIZE_MAX_LEVELS];
};

struct sp_symbolizer;

/* opts is copied (not the strings it points to). */
struct sp_symbolizer *sp_symbolizer_new(const struct sp_symbolize_opts *opts);
void sp_symbolizer_free(struct sp_symbolizer *s);

/* A new stream starts (a header record): forget modules and symbols, keep
 * the statistics. kernel_release is the recording's ("" if unknown). */
void sp_symbolizer_reset(struct sp_symbolizer *s, const char *kernel_release);

/*
 * Take in a definition or a retirement: SP_REC_MODULE, SP_REC_MODULE_END,
 * SP_REC_PROCESS_END, SP_REC_KSYM, SP_REC_JITSYM (other kinds are ignored).
 * Strings are looked up by the caller and passed in: str1 is the module's
 * path or the symbol's name. Nothing is loaded yet.
 */
void sp_symbolizer_module(struct sp_symbolizer *s, const struct sp_module *m, const char *path);
void sp_symbolizer_module_end(struct sp_symbolizer *s, uint64_t module);
/* pid's process ended (or exec'd) at time: its anonymous modules mapped
 * before then go, with its JIT symbols. */
void sp_symbolizer_process_end(struct sp_symbolizer *s, uint64_t pid, uint64_t time);
void sp_symbolizer_ksym(struct sp_symbolizer *s, const struct sp_ksym *k, const char *name,
			size_t len);
void sp_symbolizer_jitsym(struct sp_symbolizer *s, const struct sp_jitsym *j, const char *name,
			  size_t len);

/* True if the frame's symbols may still arrive later in the stream (a
 * kernel frame before any kernel symbol, a JIT frame before its process's
 * perf map): the caller may resolve it later. */
bool sp_symbolizer_should_defer(struct sp_symbolizer *s, const struct sp_frame *f);

/*
 * Resolve a frame. A return address (no SP_FRAME_LEAF) is looked up at
 * address - 1, so that a call at the end of a function or of an inlined
 * block gets its caller's line. Never fails: an unresolved frame has a
 * status saying why. The result is valid until the next call.
 */
const struct sp_sym_result *sp_symbolizer_frame(struct sp_symbolizer *s,
						const struct sp_frame *f);

/*
 * Load now the files behind these modules (ids, repeats allowed), as their
 * first lookups would, fetching the debug files they lack from debuginfod
 * servers in parallel. Without debuginfod it does nothing: files load at
 * their first lookup.
 */
void sp_symbolizer_prepare(struct sp_symbolizer *s, const uint64_t *modules, size_t n);

/* Save the DWARF indexes that grew since they were loaded or last saved to
 * the cache (also done when a file is retired); failures are warnings. */
void sp_symbolizer_save(struct sp_symbolizer *s);

/* Changes whenever strings returned earlier may have been freed (a file or
 * JIT table retired, a reset): a caller caching by string pointer drops its
 * cache then. */
uint64_t sp_symbolizer_generation(const struct sp_symbolizer *s);

/* Statistics: resolved and unresolved frames by reason, in total and per
 * file; per file only when per_module. */
void sp_symbolizer_print_stats(struct sp_symbolizer *s, FILE *out, bool per_module);
/* Frames resolved (any level named) and looked up, in total. */
void sp_symbolizer_counts(const struct sp_symbolizer *s, uint64_t *resolved, uint64_t *total);
/* Files loaded so far and files live now. */
void sp_symbolizer_files(const struct sp_symbolizer *s, uint64_t *loaded, uint64_t *live);

/* Name of an enum sp_sym_status for messages ("build-id mismatch"). */
const char *sp_sym_status_text(unsigned int status);

#endif
