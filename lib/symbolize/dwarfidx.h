/* SPDX-License-Identifier: MIT */
/*
 * dwarfidx.h - an address index of one module's DWARF: functions, inlined
 * instances and line tables, built once by a single pass over the debug
 * information, then looked up in O(log n) per address.
 *
 * libdw's own per-address queries (dwarf_addrdie, dwarf_getscopes) walk the
 * DIE tree of the compilation unit on every call, which costs seconds per
 * address on large units; this index flattens the nesting of subprograms
 * and inlined subroutines into non-overlapping address segments, each
 * pointing at its innermost function, and the line programs of every unit
 * into one sorted row table.
 *
 * sp_dwarfidx_open() indexes lazily: it reads only the address ranges of
 * the compilation units up front, groups units whose ranges overlap into
 * clusters, and indexes a cluster's functions, inlines and lines on the first
 * lookup of an address in it. A program that touches a few functions of libc
 * reads a few of its units, not all of them.
 *
 * The index owns copies of every string it returns.
 */
#ifndef STACKPULSE_DWARFIDX_H
#define STACKPULSE_DWARFIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <gelf.h>

struct sp_dwarfidx;

/*
 * Check what libdw trusts blindly before handing elf to dwarf_begin_elf():
 * that its string sections (.debug_str, .debug_line_str) end with a NUL,
 * so that no string read from them runs past their end, and that no
 * compressed section claims to inflate to more than 2 GiB or 1024 times its
 * size. Decompresses those string sections in place, and hides from libdw
 * (in memory: marked SHT_NOBITS) the debug sections the index never reads,
 * location lists, macros, CFI and name tables, which dwarf_begin_elf() would
 * otherwise inflate up front (call it after reading what else the Elf is
 * for, e.g. its symbol table). false with *why set if elf must not be read
 * as DWARF.
 */
bool sp_dwarfidx_elf_sane(Elf *elf, const char **why);

/* One level of an inline chain. */
struct sp_dwarf_loc {
	const char *func;	/* readable name (see sp_dwarfidx_lookup()), NULL if nameless */
	const char *file;	/* source file, NULL if unknown */
	uint32_t line, column;	/* 0 if unknown */
	uint64_t entry;		/* first address of the function or inlined instance */
	bool inlined;		/* an inlined instance, not a physical function */
};

struct sp_dwarfidx_stats {
	size_t units;		/* compilation units */
	size_t units_indexed;	/* units indexed so far (lazy: those looked up; a
				 * unit with code in two clusters counts twice) */
	size_t functions;	/* subprograms with code */
	size_t inlined;		/* inlined instances */
	size_t segments;	/* address segments of the flattened index */
	size_t rows;		/* line table rows kept */
	size_t memory;		/* bytes held */
	uint64_t build_ns;	/* time spent indexing so far */
};

/*
 * Index the DWARF of dw. Only code in [text_lo, text_hi) is indexed (the
 * module's executable sections): line sequences and functions of discarded
 * sections, relocated to 0, are dropped. text_hi 0 keeps everything.
 * Returns NULL with *why set (a static message) when dw has no usable
 * DWARF or memory ran out; a unit that cannot be read is skipped and counted
 * in *bad_units (may be NULL). The Dwarf handle may be closed once
 * sp_dwarfidx_build() has returned.
 */
struct sp_dwarfidx *sp_dwarfidx_build(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				      size_t *bad_units, const char **why);

/*
 * The same index, built lazily: reads the units' ranges (DW_AT_ranges or
 * low/high pc, else their line sequences) now and a cluster of units at its
 * first lookup. Takes ownership of dw (dwarf_end() in sp_dwarfidx_free(), or
 * here on failure); the Elf behind it must outlive the index. Units that
 * cannot be read at lookup time are counted in stats, not reported.
 */
struct sp_dwarfidx *sp_dwarfidx_open(Dwarf *dw, uint64_t text_lo, uint64_t text_hi,
				     size_t *bad_units, const char **why);
void sp_dwarfidx_free(struct sp_dwarfidx *x);

/*
 * The inline chain at addr, innermost first, at most max levels into out[].
 * Level 0's file:line comes from the line table at addr; level k+1's is the
 * call site of level k. func is the demangled linkage name when demangle is
 * true and there is one, else the linkage name, else DW_AT_name. Returns the
 * number of levels; 0 when no function covers addr (out[0].file/line may
 * still be set from the line table, with func NULL).
 */
int sp_dwarfidx_lookup(struct sp_dwarfidx *x, uint64_t addr, bool demangle,
		       struct sp_dwarf_loc *out, int max);

/* Index every cluster of a lazy index now; -1 if one could not be. */
int sp_dwarfidx_index_all(struct sp_dwarfidx *x);

/* The line table row for addr: 0 and *file, *line, *col set, or -1. */
int sp_dwarfidx_line(struct sp_dwarfidx *x, uint64_t addr, const char **file,
		     uint32_t *line, uint32_t *col);

void sp_dwarfidx_stats(const struct sp_dwarfidx *x, struct sp_dwarfidx_stats *st);

/*
 * ---- Persisting the index (lib/symbolize/symcache.c writes and maps the files) ----
 *
 * A lazy index is a table of clusters, each with the offsets of its units'
 * DIEs and, once built, its part: the records below, fixed-width and in host
 * byte order, which a cache file holds as they are and an imported index
 * uses in place (zero-copy).
 */
#define SP_DWARFIDX_NONE	UINT32_MAX
#define SP_DWARFIDX_ROW_END	(1u << 31)

/* A subprogram or an inlined instance. */
struct sp_dwarfidx_node {
	uint64_t entry;
	uint32_t name, linkage;	/* string indexes, 0 = none */
	uint32_t parent;	/* node index (lower than this one's), NONE: physical */
	uint32_t call_file, call_line, call_col;
};

/* A line table row; rows are sorted by addr. */
struct sp_dwarfidx_row {
	uint64_t addr;
	uint32_t file, line;
	uint32_t col;		/* SP_DWARFIDX_ROW_END set on the end of a sequence */
	uint32_t ord;		/* order in the input, for a stable sort */
};

/*
 * A built cluster's part. Exported, strs[i] is string i (strs[0] is "");
 * imported, string i is blob + str_off[i], and blob ends with a NUL.
 * seg_node[i] (a node index or NONE) owns [seg_lo[i], seg_lo[i + 1]).
 */
struct sp_dwarfidx_part {
	const struct sp_dwarfidx_node *nodes;
	const uint64_t *seg_lo;
	const uint32_t *seg_node;
	const struct sp_dwarfidx_row *rows;
	const uint64_t *row_addr;	/* rows[i].addr */
	const char *const *strs;
	const uint32_t *str_off;
	const char *blob;
	uint64_t blob_len;
	uint64_t nnodes, nsegs, nrows, nstrs;
	uint64_t units, nfuncs, ninlined;	/* for statistics */
};

struct sp_dwarfidx_cluster {
	uint64_t lo, hi;		/* [lo, hi): sorted, disjoint */
	const uint64_t *cu_off;		/* DIE offsets of its units */
	uint64_t ncu;
	const struct sp_dwarfidx_part *part;	/* NULL: not built */
};

/* Clusters, units and unreadable units of x. */
void sp_dwarfidx_counts(const struct sp_dwarfidx *x, size_t *nclusters, size_t *units,
			size_t *bad);
/* Cluster i of x; its pointers are valid until x changes or is freed. */
void sp_dwarfidx_cluster(const struct sp_dwarfidx *x, size_t i, struct sp_dwarfidx_cluster *c,
			 struct sp_dwarfidx_part *part);
/* Clusters built since x was opened or imported (worth saving when not 0). */
size_t sp_dwarfidx_built(const struct sp_dwarfidx *x);

/*
 * An index made of ncl clusters, the parts given used in place: every index,
 * offset and order in them is checked first (NULL and *why, a static
 * message, if one is wrong). release(arg) is called by sp_dwarfidx_free(),
 * which is when the memory behind the parts may go. A cluster without part
 * is built on its first lookup from the Dwarf that open(open_arg) returns,
 * called at most once (NULL: such clusters stay empty); the index owns it.
 */
struct sp_dwarfidx *sp_dwarfidx_import(uint64_t text_lo, uint64_t text_hi,
				       const struct sp_dwarfidx_cluster *cl, size_t ncl,
				       size_t units, size_t bad, const char **why);
void sp_dwarfidx_set_release(struct sp_dwarfidx *x, void (*release)(void *), void *arg);
void sp_dwarfidx_set_opener(struct sp_dwarfidx *x, Dwarf *(*open)(void *), void *arg);

#endif
