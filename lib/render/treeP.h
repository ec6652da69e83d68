/* SPDX-License-Identifier: MIT */
/*
 * treeP.h - private to sp-tree's files in lib/render/: the tree's
 * nodes, its state, and the functions its files call across each other.
 *
 *   tree.c        building: records in, nodes placed, memory
 *   tree_line.c   one node as one line of text (what text, JSON and the
 *                 stable order all start from)
 *   tree_order.c  ordering, filtering and collapsing the children of a node
 *   tree_text.c   the text form: lines with their tree drawing
 *   tree_json.c   the JSON form
 *   tree_print.c  the whole tree, its header and trailer, and streaming
 *   tree_events.c an event's fields as text (tree.h: sp_event_text())
 *   tree_summary.c --summary: a table of methods instead of the tree
 *   tree_lanes.c  asyncio tasks and Ruby fibers as lanes, after the tree
 *
 * The depth of the tree is the input's (a recursion a million calls deep is
 * a million nested spans): every walk over it keeps its own stack on the
 * heap, none recurses.
 */
#ifndef STACKPULSE_RENDER_TREEP_H
#define STACKPULSE_RENDER_TREEP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <stdarg.h>

#include "arena.h"
#include "buf.h"
#include "hashmap.h"
#include "tree.h"
#include "walltime.h"

enum { N_PROC = 1, N_THREAD, N_SPAN, N_EVENT };

struct tnode {
	struct tnode *first, *last, *next;
	uint64_t time, seq;	/* sort key */
	uint64_t sig;		/* subtree signature for collapsing, 0 = not yet */
	uint8_t type;
	bool keep, sorted;
	bool matched;		/* the outermost span on its path that --span matched */
	bool small;		/* a span hidden: under --min-share of its parent's time */
	bool elided;		/* some of its children are small */
	bool fold_elided;	/* t->fold_elided has small children folded into it */
	/*
	 * How many nodes it stands for, 0 meaning 1: more once the children of
	 * a collapsed run's other members are folded into it (sp_tree_fold_run())
	 */
	uint64_t mult;
};

/* Nodes are allocated one by one and freed once printed (streaming); the
 * strings they point to live in the arena until sp_tree_free(). */

struct tproc {
	struct tnode n;
	uint64_t pid, ppid, status, flags, nspid;
	uint64_t start_boot;	/* identity: ns since boot, 0 unknown */
	uint64_t stream;	/* the stream (t->streams) that last defined it */
	uint64_t exit_code, exit_signal;	/* of its proc_exit event, when exit_seen */
	uint64_t elided_n, elided_ns;	/* small children printed (streaming) before */
	uint64_t elided_telling;	/* how many of them had events or a raise */
	const char *comm, *exe, *runtime, *container;
	/* the recorded command's program, when this is the input's first
	 * process: its name if no record names it (sp_tree_proc_comm()) */
	const char *tried;
	bool defined, attached, exited, streamed, exit_seen;
	struct tproc *next_root, *prev_root;
	/* attached: the process whose fork event holds it (alive while it
	 * is: it is in that one's subtree) */
	struct tproc *holder;
};

struct tthread {
	struct tnode n;
	uint64_t tid, pid;
	uint64_t nstid;		/* its tid in its own pid namespace, 0 unknown */
	/* The gap span its node is in (its fork event under the gap span
	 * or one of its frames), NULL: none. The thread's own events and
	 * frames of that gap go under the thread, not beside the main
	 * thread's (add_span(), add_event()). */
	const struct tspan *gap;
	struct tproc *proc;	/* the process node it is in */
	/* made for a thread whose fork is not in the input (started before
	 * -p or the recording), under its gap span, at its first record
	 * there; into: the node its fork made since, which its records from
	 * then on move to (sp_tree_adopt()) */
	bool forkless;
	struct tthread *into;
};

struct tspan {
	struct tnode n;
	uint64_t id, tid, pid, start, stop, end, samples, total, offcpu, line, runtime, raises;
	const char *klass, *method, *file, *error, *message;
	uint64_t stream;	/* the stream (t->streams) of its record */
	bool written_open;	/* its record came before its end (below) */
	bool early;		/* it ended after its record: counts are partial */
	bool reconstructed;	/* SP_SPAN_RECONSTRUCTED: began before its start */
	/* a gap span (<no-span>) itself, or the gap span an interpreted
	 * frame's span is in; NULL for others */
	const struct tspan *gap;
	/* a gap span in which a thread's node was made since its children
	 * were last looked at: that thread's records that came before its
	 * node (sp-correlate writes a frame's span, and the thread's fork in
	 * it, when the frame ends) move under it (sp_tree_adopt()) */
	bool adopt;
	/* with n.mult > 1: the summed duration of the spans it stands for, and
	 * whether one of them is open (total and samples are summed in place) */
	uint64_t fold_dur;
	bool fold_open;
	/* --summary: the time its children took in its earlier parts (a span
	 * a rotated recording wrote in pieces) */
	uint64_t part_child;
	struct tproc *proc;	/* the process node it is in (not the pid's newest:
				 * a pid used again is a node of its own) */
};

struct tevent {
	struct tnode n;
	uint64_t pid, tid, kind, rule;
	uint32_t nvals;
	/* with n.mult > 1: the fields (bit i: field i, TEV_RULE_VARIES: the
	 * rule) not the same in every event it stands for (sp_event_text_run()) */
	uint32_t varies;
	uint64_t vals[];
};

#define TEV_RULE_VARIES	(1u << 31)

/* The small children of the members of a collapsed run folded into the
 * node that prints for them (sp_tree_fold_run()), by node seq. */
struct fold_elided {
	uint64_t n, ns, telling;
};

struct sp_tree {
	struct sp_tree_opts o;
	bool *pid_seen;			/* [o.npids]: a process of the input had it */
	struct tnode *dead;		/* nodes emptied and unlinked (by ->next), freed at the end */
	bool *container_seen;		/* [o.ncontainers]: a process of the input was in it */
	struct sp_u64map fold_elided;	/* node seq -> struct fold_elided * */
	struct sp_arena strings;	/* the input's strings, in their text form */
	uint64_t seq;

	/* per stream */
	char **strs;
	size_t nstrs, capstrs;
	uint64_t nspans;		/* span ids given so far */
	struct sp_u64map procs, threads, spans;	/* pid, tid, span id -> live node */
	struct sp_u64map nstids;	/* tid -> pid << 32 | its tid in its namespace */
	struct sp_u64map parts;	/* hash of tid, start -> span open at a segment's end */
	struct tspan *last_span;
	/*
	 * Spans whose record said open while the stream went on: sp-correlate
	 * writes a tree early when it holds too much (--max-held). Their stop
	 * marks follow; until then, they hold their subtree back.
	 */
	struct tspan **open;
	size_t nopen, capopen;

	/* whole recording */
	struct tproc *roots, *roots_tail;
	bool have_header;
	uint64_t streams;	/* headers read */
	uint64_t start_wall, start_mono, period_ns, end_time, max_time;
	struct sp_walltime wall;	/* the duration shown (walltime.h) */
	const char *trigger, *trigger_detail;	/* a flight dump's end: what fired */
	uint64_t trigger_time;
	uint64_t lost[SP_LOST_WHAT_MAX];	/* per enum sp_lost_what */
	char *command;
	/* spans: method and gap spans; frames: interpreted frames' synthetic
	 * spans ([FRAME]), no method calls (the counts line tells them apart) */
	uint64_t nprocs, nspans_total, nframes, nevents, orphans;
	uint64_t audit_hidden;		/* audit events of the interpreter's own, left out */
	bool kernel_opens, kernel_dirents;	/* the header: path_open, file_getdents recorded */

	/* streaming (docs/sp-tree.md): nodes held, the process being printed */
	uint64_t live, limit;
	struct tproc *streaming;
	bool head_done;		/* the opening lines are out */
	uint64_t emitted;	/* top-level items of streaming written (JSON commas) */
	uint64_t emitted_procs;

	/* printing */
	FILE *out;
	bool stable, color, json;
	struct tnode **sortbuf;
	size_t capsort;

	struct tsummary *sum;		/* --summary's table, or NULL */
	struct tree_lanes *lanes;	/* tree_lanes.c, NULL until a task or fiber */
	double share;			/* --min-share in effect (0: none) */
	bool share_decided;		/* share is set (when printing starts) */

	/* the nodes still to visit of has_live() and tree_nodes() */
	struct tnode **walk;
	size_t capwalk;
};

/* The longest line the tree writes, in bytes: what is longer is cut at a
 * whole character (sp_tree_addf()). */
#define SP_TREE_LINE_MAX	4095

/* Sums over a collapsed group of spans. */
struct agg {
	uint64_t count, dur, total, samples;
	bool open;
	uint32_t varies;	/* events: as tevent.varies, over the group */
};

/* The tree drawing in front of a line: one segment per level above it. */
struct prefix {
	char *txt;		/* the segments, "│  " or "   " */
	size_t *off;		/* off[i]: where level i's segment starts in txt */
	size_t len, cap;	/* levels */
};

/* tree.c */
void sp_tree_free_subtree(struct sp_tree *t, struct tnode *root);

/* tree_line.c */
/*
 * Append what fmt makes to b, keeping b to max bytes: what overflows is cut
 * at a whole character or escape (escape.h), and a full b takes no more.
 */
void sp_tree_vaddf(struct sp_buf *b, size_t max, const char *fmt, va_list ap);
/*
 * One line for node n into b (emptied first; without tree connector). base is the time
 * offsets count from; ag is set for a collapsed group; stable and color as
 * in sp_tree_opts.
 */
void sp_tree_render_line(struct sp_tree *t, struct sp_buf *b, const struct tnode *n,
			 uint64_t base, const struct agg *ag, bool stable, bool color);
/* "Foo#bar", "Foo.bar", "bar", or "<no-span>", appended to b. */
void sp_tree_span_name(struct sp_buf *b, const struct tspan *s);
void sp_tree_fmt_dur(char *buf, size_t size, uint64_t ns);
/* The event group of kind, as JSON names it ("file", "net", ...). */
const char *sp_tree_group_name(uint64_t kind);
const char *sp_tree_base_name(const char *path);
/*
 * How process p ended: false while it runs (or when exec replaced it);
 * else *sig is the signal that killed it (0: it exited with *code) and
 * *core whether it dumped core.
 */
bool sp_tree_proc_status(const struct tproc *p, uint64_t *code, uint64_t *sig, bool *core);
/*
 * The name of process p: its comm; for the recorded command that no record
 * names (it could not be started: sp-record -- /nonexistent/cmd), the base
 * name of the program the command line gives; else NULL.
 */
const char *sp_tree_proc_comm(const struct tproc *p);

/* tree_events.c */
/* "SIGTERM", or "signal 99", in buf. */
const char *sp_tree_signal_name(char buf[32], uint64_t sig);

/* tree_order.c */
int sp_tree_cmp_time(const void *a, const void *b);
/* x is one of v[0..n). */
bool sp_tree_in_list(const uint64_t *v, size_t n, uint64_t x);
/* Span s's name or method matches a --span pattern. */
bool sp_tree_name_matches(struct sp_tree *t, const struct tspan *s);
/* Sort n's children by time (--stable: threads ordered by what they did). */
void sp_tree_sort_children(struct sp_tree *t, struct tnode *n);
/* Mark what is shown under root (tnode.keep); whether root is. */
bool sp_tree_compute_keep(struct sp_tree *t, struct tnode *root, bool name_ok, bool tid_ok);
/* The run of identical kept siblings from kept node c, summed into ag; the
 * node after it. */
struct tnode *sp_tree_group_end(struct sp_tree *t, struct tnode *c, struct agg *ag);
void sp_tree_fold_run(struct sp_tree *t, struct tnode *c, struct tnode *end);
/* The records of gap span g that are a thread's of it with a node in it
 * (made after they came) moved under that node: one pass. */
void sp_tree_adopt(struct sp_tree *t, struct tspan *g);
/* The node of thread tid of process pid, or NULL. */
struct tthread *sp_tree_thread_of(struct sp_tree *t, uint64_t tid, uint64_t pid);
/* c, or the first kept sibling after it, or NULL. */
struct tnode *sp_tree_next_kept(struct tnode *c);
/*
 * A run of consecutive audit events of one name under one parent (Python's
 * imports at start-up, a loop's os.listdir): rendered into b as one line,
 * "audit → import ×67: _io, marshal, … (+60 more)", and *after set to the
 * kept node after it; false when c starts no run of two or more (or
 * --no-collapse).
 */
bool sp_tree_audit_run(struct sp_tree *t, struct tnode *c, struct tnode **after,
		       struct sp_buf *b, uint64_t base, bool stable, bool color);
/*
 * -d counts levels from the process, or with --span from the span that
 * matched: the depth of a process's children, and of n's children when n
 * is at depth (0: not counted, above a match).
 */
unsigned int sp_tree_top_depth(const struct sp_tree *t);
unsigned int sp_tree_depth_below(const struct tnode *n, unsigned int depth);
/* Whether a --container filter (an id prefix, or RUNTIME:ID-PREFIX) takes
 * a process of this runtime and container. */
bool sp_tree_container_matches(const char *want, const char *runtime, const char *container);
/* Whether p is printed at the top level (not under a fork; --pid). */
bool sp_tree_is_root(const struct sp_tree *t, const struct tproc *p);

/*
 * --min-share: decide it once printing starts (its default elides in a
 * large tree only), and the time a node's children are measured against.
 */
void sp_tree_decide_share(struct sp_tree *t);
/* The small children of n (hidden by --min-share): how many, their time. */
uint64_t sp_tree_elided(const struct sp_tree *t, const struct tnode *n, uint64_t *ns,
			uint64_t *telling);
/* Whether a span hidden as small held events or raised: worth saying. */
bool sp_tree_small_telling(const struct tnode *n);
uint64_t sp_tree_node_dur(const struct sp_tree *t, const struct tnode *n);

/* tree_text.c */
void sp_tree_print_text(struct sp_tree *t, struct tnode *n, struct prefix *pf, uint64_t base);
void sp_tree_print_range_text(struct sp_tree *t, struct tnode *parent, struct tnode *c,
			      struct tnode *stop,
			      bool final, struct prefix *pf, unsigned int depth, uint64_t base);
void sp_tree_prefix_release(struct prefix *pf);

/* tree_json.c */
/* A string of the tree (its text form) as a JSON string; NULL as "". */
void sp_tree_json_str(FILE *f, const char *s);
void sp_tree_print_root_json(struct sp_tree *t, struct tnode *n, uint64_t base);
void sp_tree_print_range_json(struct sp_tree *t, struct tnode *parent, struct tnode *c,
			      struct tnode *stop, bool final, unsigned int depth, uint64_t base,
			      uint64_t *count);
void sp_tree_json_proc_head(struct sp_tree *t, const struct tproc *p);
void sp_tree_json_proc_exit(struct sp_tree *t, const struct tproc *p);

/* tree_lanes.c */
/* Take a span, fiber switch or header for the lanes. */
void sp_tree_lanes_add(struct sp_tree *t, const struct sp_record *rec);
/* Whether each lane's process is shown, for those the tree knows now. */
void sp_tree_lanes_decide(struct sp_tree *t);
/* The lanes as text lines (none: nothing), or as the JSON member "lanes". */
void sp_tree_print_lanes(struct sp_tree *t);
void sp_tree_lanes_json(struct sp_tree *t);
void sp_tree_lanes_free(struct sp_tree *t);

/* tree_summary.c */
void sp_tree_summary_new(struct sp_tree *t);
/* Span s (not a node of the tree: its id, names and times) into the table;
 * parent: its parent span's id, 0 for none. */
/* hold: s is a part of a span going on in the next segment (tree.c,
 * summary_part()), kept by the caller: the parent of its children, not
 * counted; its children's time is left in s->part_child. */
void sp_tree_summary_add(struct sp_tree *t, struct tspan *s, uint64_t parent, bool hold);
/* A stream ends: sum what is still on the stacks (its span ids end). */
void sp_tree_summary_flush(struct sp_tree *t);
/* --summary: the spans held as parts of a rotated recording's (tree.c,
 * summary_part()) counted, as open, at the end of their input. */
void sp_tree_summary_parts_end(struct sp_tree *t);
/* A stop mark (m: its tid, pid, names, and its time as stop): it ends a
 * span written open, if one of its thread's is. */
void sp_tree_summary_stop(struct sp_tree *t, const struct tspan *m);
void sp_tree_print_summary(struct sp_tree *t);
void sp_tree_summary_free(struct sp_tree *t);

/* tree_print.c */
/* Print and free the finished top-level subtrees of root process p. */
void sp_tree_stream_proc(struct sp_tree *t, struct tproc *p);

#endif
