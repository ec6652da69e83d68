/* SPDX-License-Identifier: MIT */
/*
 * symcache.h - a persistent cache of DWARF indexes (dwarfidx.h), one file
 * per build-id, so that a module indexed once is never inflated or walked
 * by libdw again.
 *
 * Key: the build-id of the file whose DWARF was read (a separate debug
 * file's is the binary's) and the text range [text_lo, text_hi) the index
 * was built for. A file without build-id is not cached: path, inode and
 * mtime say too little about a file on another machine or in a sysroot.
 * The file is DIR/<build-id hex>-<text_lo hex>-<text_hi hex>.idx.
 *
 * What a file holds: the index's cluster table (each cluster's address
 * interval and the DIE offsets of its units) and every cluster built so
 * far, in the records of dwarfidx.h, host byte order, 8-byte aligned:
 *   header    magic "SPDWIDX\0", format version (SP_SYMCACHE_VERSION), a
 *             byte-order mark, header size, build-id, text range, file size,
 *             counts of clusters, unit offsets, units and unreadable units,
 *             a checksum of the header, cluster table and unit offsets
 *   clusters  lo, hi, first unit offset, units, part offset and size, and a
 *             checksum of the part (0 size: not built)
 *   unit offsets, then the parts: counts, nodes, segment starts and owners,
 *             rows, row addresses, string offsets, strings
 * A file is mapped read-only and its parts used in place; every size,
 * offset and index in it is checked before use. A file that fails a check
 * is ignored with one warning naming it (and replaced when the index is
 * saved again); a file of another format version is ignored silently.
 *
 * Writing: a new file holding every cluster the index has (those it was
 * loaded with and those built since) goes to a temporary file in DIR and is
 * renamed over the old one: a reader sees the old file or the new one,
 * never a torn one; of two concurrent writers the last rename wins. Files
 * are never written in place, so a mapping never sees its file shrink.
 *
 * Trust: a cache file names functions, so it is used only from a
 * directory that is the caller's or root's and that others cannot change
 * (DIR and every directory above it, safefile.h), and only if it is a
 * regular file of the caller (or root) that others cannot write, reached
 * without a link. DIR's missing directories are made (0700) the same way,
 * and files are created anew (O_EXCL, O_NOFOLLOW), never through a name
 * another user chose. A directory that fails the checks is named once and
 * not used.
 *
 * Memory: the encoding of a whole index, and the tables that decoding
 * one builds, are as large as the index. Like the index's parts
 * (dwarfidx_part.h), they are given up when memory runs out: the index is
 * not saved (a warning), or not loaded from the cache (then built again),
 * and the run goes on. Every other allocation here is fatal when it fails,
 * as everywhere (sp.h).
 */
#ifndef STACKPULSE_SYMCACHE_H
#define STACKPULSE_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarfidx.h"

#define SP_SYMCACHE_VERSION	1

struct sp_symcache_key {
	const uint8_t *build_id;
	unsigned int build_id_len;	/* 0: nothing is cached */
	uint64_t text_lo, text_hi;
};

/*
 * The default directory: sp_cache_dir("symbols") (safefile.h):
 * $SP_CACHE_DIR/symbols (an empty SP_CACHE_DIR turns caching off), else
 * $XDG_CACHE_HOME/stackpulse/symbols, else ~/.cache/stackpulse/symbols. A
 * new string, caller free()s it; NULL when there is none.
 */
char *sp_symcache_default_dir(void);

struct sp_symcache;

/* A cache in dir (created on the first save). */
struct sp_symcache *sp_symcache_new(const char *dir);
void sp_symcache_free(struct sp_symcache *c);

/*
 * The cached index for key, or NULL: no file (silently), or a file that is
 * unusable or not trusted (one warning "cache '<path>': <what>"). The index keeps the file
 * mapped until sp_dwarfidx_free(); its clusters not in the file are built
 * from the Dwarf of sp_dwarfidx_set_opener(), if the caller sets one.
 */
struct sp_dwarfidx *sp_symcache_load(struct sp_symcache *c, const struct sp_symcache_key *k);

/*
 * Save x for key (every cluster x has built or was loaded with). 0, or -1
 * with a warning; after a failure to create files in the directory, later
 * saves fail silently.
 */
int sp_symcache_save(struct sp_symcache *c, const struct sp_symcache_key *k,
		     const struct sp_dwarfidx *x);

/*
 * The same in memory, for tests and fuzzing: sp_symcache_encode() gives a
 * malloc()ed file image (caller free()s it) and its size, NULL on ENOMEM
 * (or EOVERFLOW: a part's strings over 4 GiB);
 * sp_symcache_decode() an index using p in place (p must outlive it), or
 * NULL with *why (a static message) set.
 */
void *sp_symcache_encode(const struct sp_symcache_key *k, const struct sp_dwarfidx *x,
			 size_t *size);
struct sp_dwarfidx *sp_symcache_decode(const void *p, size_t size,
				       const struct sp_symcache_key *k, const char **why);

#endif
