/* SPDX-License-Identifier: MIT */
/*
 * flame.h - stack aggregation for flame graphs (lib/render/folded.c) and what is
 * rendered from it: folded text, SVG flame graphs (lib/render/flamesvg.c),
 * differences (lib/render/flamediff.c), speedscope JSON (lib/render/speedscope.c).
 *
 * sp_folded takes a record stream (samples, and the processes, threads and
 * spans that name them) and aggregates samples by distinct stack. Memory is
 * proportional to distinct stacks (and, for the time-ordered views, to runs
 * of equal consecutive stacks), plus a few bytes per frame and stack id of
 * the stream for the caches: every distinct stack's names are resolved
 * once, through the definitions table, the first time a sample uses it.
 *
 * Frame names are interned once; a name id (1..) indexes them. A name is
 * identified by its spelling; its kind (colour) is that of its first use.
 * Node 0 is the root of the stack trie; every other node is (parent node,
 * name id).
 * Two weight columns exist so that a difference is one aggregation fed
 * twice: column 0 (the default) and column 1.
 */
#ifndef STACKPULSE_FLAME_H
#define STACKPULSE_FLAME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "defs.h"
#include "record.h"

/* What a frame name stands for: chooses its colour, never its spelling. */
enum sp_fname_kind {
	SP_FN_USER = 0,
	SP_FN_KERNEL = 1,
	SP_FN_INLINE = 2,	/* inlined into the frame below it */
	SP_FN_INTERP = 3,	/* interpreted (Ruby, Python) */
	SP_FN_JIT = 4,
	SP_FN_UNKNOWN = 5,	/* unresolved: module+0xoff or an address */
	SP_FN_PROCESS = 6,	/* prefix frames: comm-pid */
	SP_FN_THREAD = 7,	/* name-tid */
	SP_FN_SPAN = 8,		/* a method span (correlated input) */
	SP_FN_NOSTACK = 9,	/* a sample without a stack */
	SP_FN_KIND_MAX,
};

/* Prefix frames put at the root of every stack. */
#define SP_FLAME_BY_PROCESS	(1u << 0)	/* "comm-pid" */
#define SP_FLAME_BY_THREAD	(1u << 1)	/* "name-tid" */
#define SP_FLAME_BY_SPAN	(1u << 2)	/* the span path, outermost first */
#define SP_FLAME_BY_CONTAINER	(1u << 3)	/* "runtime:id" (12 digits of a hex id), or
						 * "host"; outermost of all */

enum sp_flame_weight {
	SP_FLAME_W_SAMPLES = 0,	/* each sample counts 1 */
	SP_FLAME_W_TIME = 1,	/* nanoseconds: periods x period, or off-CPU ns */
};

struct sp_flame_opts {
	unsigned int by;		/* SP_FLAME_BY_* */
	bool annotate;			/* suffix _[k] kernel, _[i] inline, _[j] JIT */
	bool no_inline;			/* only the function the code belongs to */
	bool no_addresses;		/* unresolved frames as [module], not module+0xoff */
	bool unknown_unnamed;		/* an address in no mapping as [unknown] (a diff:
					 * where a run loaded things is its own) */
	bool off_cpu;			/* off-CPU samples instead of CPU samples */
	bool keep_sequence;		/* keep the time order (flame chart, speedscope) */
	bool keep_spans;		/* keep spans (speedscope's evented profiles) */
	bool keep_source;		/* names by function and source file, with a
					 * line (speedscope's frames) */
	bool fold_runtime;		/* leave out the runtimes' glue (folded_runtime.c) */
	enum sp_flame_weight weight;
	/* Filters; a sample must match one of each list that is not empty. */
	const uint64_t *pids;
	unsigned int npids;
	const uint64_t *tids;
	unsigned int ntids;
	char *const *comms;
	unsigned int ncomms;
	uint64_t since, until;		/* ns from the recording's start; until 0 = no end */
};

/* Why stacks look broken: counted in samples (not weight). */
struct sp_flame_stats {
	uint64_t samples[2];		/* samples taken, per column */
	uint64_t weight[2];		/* their weight, per column */
	uint64_t filtered;		/* samples left out by the filters or kind */
	uint64_t undefined;		/* samples with an undefined stack (skipped) */
	uint64_t broken;		/* samples with any of the below */
	uint64_t truncated;		/* at the depth limit */
	uint64_t unknown_map;		/* outermost frame in no known mapping */
	uint64_t single_user;		/* a single user-space frame */
	uint64_t bad_unwind;		/* the unwinder gave up (no CFI, stack copy, garbage) */
	uint64_t no_stack;		/* a sample without any stack */
	uint64_t span_cut;		/* more spans above it than a prefix holds (--by=span) */
	uint64_t unresolved_frames;	/* frames printed as addresses (distinct stacks) */
	uint64_t first_time, last_time;	/* of the samples taken */
};

struct sp_folded;

/* Returns NULL never (out of memory is fatal); the options are copied but
 * the filter lists are borrowed and must outlive the sp_folded. */
struct sp_folded *sp_folded_new(const struct sp_flame_opts *o);
void sp_folded_free(struct sp_folded *f);
/* Column that the following samples count in (0 or 1). */
void sp_folded_set_column(struct sp_folded *f, unsigned int col);

enum {
	SP_FOLDED_BAD = -1,	/* a sample whose stack is undefined: counted, *why set */
	SP_FOLDED_IGNORED = 0,	/* not a sample, or filtered out */
	SP_FOLDED_TAKEN = 1,	/* a sample counted */
};
/* Take in one record of a stream whose definitions are d (already holding
 * rec's). Returns SP_FOLDED_*. */
int sp_folded_add(struct sp_folded *f, const struct sp_defs *d, const struct sp_record *rec,
		  const char **why);
/* Take in one line of folded text ("a;b;c 12", no newline), in the current
 * column. Frame kinds are guessed from _[k] _[i] _[j] suffixes.
 * 0, or -1 when the line has no count (nothing is taken). */
int sp_folded_add_line(struct sp_folded *f, const char *line, size_t len);

const struct sp_flame_stats *sp_folded_stats(const struct sp_folded *f);
/* What the recording says about itself (from its first header): a one-line
 * description ("cpu-clock at 999 Hz, 'cmd', host, kernel") or "". */
const char *sp_folded_describe(const struct sp_folded *f);
/* Nanoseconds one period stands for (1 when unknown). */
uint64_t sp_folded_period_ns(const struct sp_folded *f);
/* The weight unit in force. */
enum sp_flame_weight sp_folded_weight(const struct sp_folded *f);

/* A name by id: NUL-terminated, raw (not escaped); *kind may be NULL. */
const char *sp_folded_name(const struct sp_folded *f, uint32_t id, unsigned int *kind);
uint32_t sp_folded_nnames(const struct sp_folded *f);
/* keep_source: a function name's source file ("" when its symbols gave
 * none) and, in *line and *col, the lowest line of it they gave and that
 * line's column (0 when none). The string is owned by f. */
const char *sp_folded_name_source(const struct sp_folded *f, uint32_t id, unsigned int *line,
				  unsigned int *col);

/* A node's path of name ids, root first, into buf (at most max); returns
 * the depth (which may exceed max). */
unsigned int sp_folded_node_path(const struct sp_folded *f, uint32_t node, uint32_t *buf,
				 unsigned int max);

/* One stack with its weights, as the renderers consume it. */
struct sp_flame_path {
	const uint32_t *names;	/* name ids, root first */
	uint32_t depth;
	uint64_t w[2];		/* weight in column 0 and 1 */
};

struct sp_flame_paths {
	struct sp_flame_path *v;
	size_t n, cap;
	uint32_t *pool;		/* owns every path's names */
	size_t pool_len, pool_cap;
	uint64_t total[2];
};

/*
 * Every distinct stack (prefix frames first), either sorted (frame by frame,
 * names compared in byte order: deterministic) or, with time_order, in the
 * order the samples came with equal consecutive stacks merged (needs
 * keep_sequence; column 0 only). Release with sp_flame_paths_release().
 */
void sp_folded_paths(struct sp_folded *f, bool time_order, struct sp_flame_paths *out);
void sp_flame_paths_release(struct sp_flame_paths *p);

/* Write a name for folded text: its text form (escape.h) with ';' as \x3b
 * too. Returns -1 if the write failed. */
int sp_folded_put_name(FILE *out, const char *name);
/* Folded text: "a;b;c 12\n" a line; with both columns, "a;b;c 10 12\n". */
int sp_folded_print(const struct sp_folded *f, const struct sp_flame_paths *p, FILE *out,
		    bool two_columns);

/* The time-ordered runs (keep_sequence): i < sp_folded_nseq(). */
struct sp_flame_run {
	uint32_t node;		/* stack trie node, without prefix frames */
	uint32_t ctx;		/* prefix context (internal) */
	uint32_t pid, tid;
	uint64_t weight;
	uint64_t time;		/* of the run's first sample */
};
size_t sp_folded_nseq(const struct sp_folded *f);
const struct sp_flame_run *sp_folded_seq(const struct sp_folded *f, size_t i);
/* Name of a thread ("" if none recorded) and of a process. */
const char *sp_folded_thread_name(const struct sp_folded *f, uint64_t tid);
const char *sp_folded_comm(const struct sp_folded *f, uint64_t pid);

/* Spans kept with keep_spans (or --by=span), in id order. */
struct sp_flame_span {
	uint32_t gen;		/* stream number (a header starts a new one) */
	uint32_t name;		/* name id */
	uint64_t id, parent;
	uint64_t pid, tid;
	uint64_t start, stop;	/* stop 0: open at the end */
	uint32_t depth;		/* spans from the outermost known one, 1 for it */
	uint64_t coro;		/* sp_span.coro: a coroutine's resume, 0 = none */
	bool suspended;		/* with coro: it ended by suspending */
};
size_t sp_folded_nspans(const struct sp_folded *f);
const struct sp_flame_span *sp_folded_span(const struct sp_folded *f, size_t i);

/* Ruby fiber switches, kept with the spans (keep_spans or --by=span), in
 * input order. */
struct sp_flame_fiber {
	uint32_t gen;		/* stream number, as sp_flame_span's */
	bool fresh;		/* SP_FIBER_NEW: 'to' is a new fiber */
	uint64_t pid, tid, time;
	uint64_t to;		/* the fiber that runs from here, 0 = the thread's root */
};
size_t sp_folded_nfibers(const struct sp_folded *f);
const struct sp_flame_fiber *sp_folded_fiber(const struct sp_folded *f, size_t i);

/* The footer: share of broken-looking stacks and a hint, one line (no
 * newline) into buf; "" when there were no samples. */
void sp_folded_footer(const struct sp_folded *f, char *buf, size_t len);

/* ---- SVG (lib/render/flamesvg.c) ---- */

struct sp_svg_opts {
	const char *title;		/* default "Flame Graph" (or "Flame Chart", "Differential ...") */
	const char *subtitle;		/* NULL: none */
	const char *footer;		/* broken-stack line, shown under the subtitle */
	unsigned int width;		/* px, default 1200 */
	bool inverted;			/* icicle: root at the top */
	bool flamechart;		/* paths are in time order: do not say "sorted" */
	bool diff;			/* column 0 = base, 1 = new: red grew, blue shrank */
	const char *unit;		/* "samples" or "ns" */
};
/* A standalone SVG (inline CSS and script, no external references). */
int sp_flame_svg(const struct sp_folded *f, const struct sp_flame_paths *p,
		 const struct sp_svg_opts *o, FILE *out);
/* A name's colour, deterministic: "rgb(r,g,b)" into buf (>= 24 bytes). */
void sp_flame_color(const char *name, unsigned int kind, char *buf, size_t len);

/* ---- Differences (lib/render/flamediff.c) ---- */

struct sp_flame_change {
	uint32_t name;			/* name id */
	double base_pct, new_pct;	/* inclusive share of all samples, percent */
};

/* Function-level changes of inclusive share between column 0 and 1,
 * largest absolute change first; *n of them. Caller frees. */
struct sp_flame_change *sp_flame_changes(const struct sp_folded *f,
					 const struct sp_flame_paths *p, size_t *n);
/* Folded differences: "stack base new" for every stack whose share changed
 * (base scaled to new's total, rounded); with all, every stack. */
int sp_flame_diff_print(const struct sp_folded *f, const struct sp_flame_paths *p, FILE *out,
			bool all);

/* ---- speedscope (lib/render/speedscope.c) ---- */

/* A speedscope file: one sampled profile per thread (keep_sequence) and,
 * when spans were kept, one evented profile per thread. name: the file's. */
int sp_speedscope_write(const struct sp_folded *f, const char *name, FILE *out);
/* A JSON string literal of the text form of s (escape.h): what the exports
 * show of a name, as sp-tree and the folded stacks show it. */
void sp_flame_json_str(FILE *out, const char *s);

#endif
