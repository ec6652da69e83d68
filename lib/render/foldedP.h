/* SPDX-License-Identifier: MIT */
/*
 * foldedP.h - private to the flame graph aggregate's files in
 * lib/render/ (flame.h is its API): its state and the functions its files
 * call across each other.
 *
 *   folded.c        the aggregate: names, the stack trie, processes,
 *                   threads, spans and the header of the stream, samples
 *                   counted by (prefix context, trie node), the footer
 *   folded_frames.c a frame's names and a stack id's trie node, resolved
 *                   once each
 *   folded_text.c   folded text: lines read in, stacks written out
 *   folded_runtime.c the runtimes' glue frames, left out by --fold-runtime
 *   folded_paths.c  the aggregate as paths, sorted (a flame graph) or in
 *                   time order (a flame chart), for every renderer
 */
#ifndef STACKPULSE_RENDER_FOLDEDP_H
#define STACKPULSE_RENDER_FOLDEDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "flame.h"
#include "hashmap.h"

/* Spans of a --by=span prefix: the innermost ones of a deeper path. */
#define SPAN_DEPTH_MAX		4096

/* A name (of a frame, process, thread or span), interned: arena[off ..]. */
struct fname {
	uint32_t off, len;
	uint32_t kind;
	/* keep_source: its file, part of its identity (arena[file_off ..],
	 * file_len 0: none), and the lowest line its symbols gave there
	 * (0: none) with that line's column. */
	uint32_t file_off, file_len;
	uint32_t line, col;
};

/* A node of the stack trie: a name under its parent node (0: the root). */
struct trie_node {
	uint32_t parent;
	uint32_t name;
};

/* The names of a frame (more than one with inlines): fpool[off .. off + n). */
#define FC_VALID	(1u << 0)
#define FC_USER		(1u << 1)
#define FC_NOMAP	(1u << 2)
#define FC_HOOK		(1u << 3)	/* fold_runtime: a frame of a span hook */

struct fcache {
	uint32_t off;		/* in fpool */
	uint16_t n;
	uint16_t flags;
	uint32_t glue;		/* fold_runtime: the innermost name left out, 0 = none */
};

#define SC_NOMAP	(1u << 0)	/* the outermost frame is in no known mapping */
#define SC_CUT		(1u << 1)	/* deeper than SP_MAX_STACK_DEPTH: the outer frames left out */
#define SC_HOOK		(1u << 2)	/* fold_runtime: in a span hook, inner frames left out */

/* A stack id resolved: its node, and what its parent's resolution gives it. */
struct scache {
	uint32_t node1;		/* node + 1 (1: the root, no names); 0 = not resolved yet */
	uint8_t flags;		/* SC_* */
	uint8_t nuser;		/* user-space frames, 2 for two or more */
};

/* A prefix context: the process, thread or span path a sample is counted
 * under (--by); 0 is none. */
struct ctx {
	uint32_t gen;
	uint32_t cname, pname, tname;	/* name ids, 0 = none */
	uint64_t pid, tid, span;
	bool cut;		/* the span path is deeper than SPAN_DEPTH_MAX */
};

/* The weight counted for a (context, trie node), per column (diff: base
 * and new). */
struct agg {
	uint32_t ctx, node;
	uint64_t w[2];
};

/* A process or thread and its name. */
struct who {
	uint64_t id, pid;
	uint32_t gen;		/* bumped when its name changes (an exec, a rename) */
	uint32_t label;		/* its --by label's name id, 0: not made yet */
	uint32_t label_pgen;	/* a thread's: its process's gen then (a thread
				 * without a name is labelled with the command's) */
	char *name;
	char *container;	/* a process's "runtime:id" or "host" (--by=container) */
};

struct sp_folded {
	struct sp_flame_opts o;
	unsigned int col;
	uint32_t gen;

	struct fname *names;
	size_t nnames, names_cap;
	char *arena;
	size_t arena_len, arena_cap;
	struct sp_idset name_idx;

	struct trie_node *nodes;
	size_t nnodes, nodes_cap;
	struct sp_idset node_idx;

	struct fcache *fc;
	size_t fc_cap;
	uint32_t *fpool;
	size_t fpool_len, fpool_cap;
	struct scache *sc;
	size_t sc_cap;
	uint64_t *fbuf;
	size_t fbuf_cap;

	struct ctx *ctxs;
	size_t nctxs, ctxs_cap;
	struct sp_idset ctx_idx;

	struct agg *aggs;
	size_t naggs, aggs_cap;
	struct sp_idset agg_idx;

	struct sp_flame_run *seq;
	size_t nseq, seq_cap;

	struct who *procs, *threads;
	size_t nprocs, procs_cap, nthreads, threads_cap;
	struct sp_idset proc_idx, thread_idx;

	struct sp_flame_span *spans;
	size_t nspans, spans_cap;
	struct sp_idset span_idx;
	struct sp_flame_fiber *fibers;
	size_t nfibers, fibers_cap;

	struct sp_flame_stats st;
	struct sp_stackq *stackq;	/* unwind causes: the footer's hint, as sp-record words it */
	bool have_header, have_start;
	bool symbolized;		/* sp-symbolize has run on the stream */
	bool unwound;			/* recorded with DWARF (auto, dwarf): not frame pointers */
	uint64_t start_mono;
	uint64_t period_ns;
	char describe[512];
	uint32_t nostack_name;
};

/* The key of a trie node. */
struct node_key {
	uint32_t parent, name;
};

/* folded.c */
/* The id of a name, interned; kind is that of its first use. */
uint32_t sp_folded_intern(struct sp_folded *f, const char *s, size_t len, unsigned int kind);
uint32_t sp_folded_internz(struct sp_folded *f, const char *s, unsigned int kind);
/* A function's name from a symbol of source file file ("" for none): with
 * keep_source, the same spelling in two files is two names, each keeping
 * the lowest line (with its column) it is noted with; else sp_folded_internz(). */
uint32_t sp_folded_intern_src(struct sp_folded *f, const char *s, unsigned int kind,
			      const char *file);
/* Note a line (and column, 0: none) where name id was seen. */
void sp_folded_note_line(struct sp_folded *f, uint32_t id, uint64_t line, uint64_t col);
/* The trie node of name under parent, made if new. */
uint32_t sp_folded_child(struct sp_folded *f, uint32_t parent, uint32_t name);
/* Add weight w to (ctx, node) in the current column. */
void sp_folded_count(struct sp_folded *f, uint32_t ctx, uint32_t node, uint64_t w);
/* Span id of stream generation gen, or NULL. */
const struct sp_flame_span *sp_folded_span_find(const struct sp_folded *f, uint32_t gen,
						uint64_t id);

/* folded_frames.c */
/*
 * Resolve a stack id to its trie node and what it says of the stack
 * (*out); -1 if the stack is undefined.
 */
int sp_folded_resolve_stack(struct sp_folded *f, const struct sp_defs *d, uint64_t sid,
			    const struct scache **out);
/*
 * A sample's node from its stack's: with fold_runtime, a leaf frame whose
 * names are all glue keeps its innermost one (where the runtime itself
 * spent the time); frames above it lose theirs.
 */
uint32_t sp_folded_leaf_node(struct sp_folded *f, const struct sp_defs *d, uint64_t sid,
			     uint32_t node);

/* folded_runtime.c */
/* A function of a runtime's glue (the table there, in docs/sp-flame.md). */
bool sp_folded_is_glue(const char *name);
/* A module of the span hooks (by its file name). */
bool sp_folded_is_hook_module(const char *path);
/* A runtime's own file (libruby, libpython, the interpreters), by its name. */
bool sp_folded_is_runtime_module(const char *path);

#endif
