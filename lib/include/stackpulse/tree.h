/* SPDX-License-Identifier: MIT */
/*
 * tree.h - the recording as a tree a person can read and a CI job can diff:
 * processes, their method spans, the events each span caused, and the
 * processes it started, nested under the fork that started them.
 * docs/sp-tree.md fixes the text and JSON forms.
 *
 * The tree takes correlated records (sp-correlate's output, or the emit side
 * of an sp_corr) and keeps spans and events, not samples (a span record
 * carries its sample counts). Strings are copied: records may come from
 * several streams one after the other.
 */
#ifndef STACKPULSE_TREE_H
#define STACKPULSE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "record.h"

struct sp_tree;

/* What --summary sorts its rows by, largest first. */
enum sp_summary_sort {
	SP_SUMMARY_SELF,	/* time in the method itself */
	SP_SUMMARY_TOTAL,	/* time in it and what it called */
	SP_SUMMARY_CALLS,
	SP_SUMMARY_CPU,		/* CPU samples in the method itself */
	SP_SUMMARY_OFFCPU,	/* time it spent off the CPU */
};

struct sp_tree_opts {
	bool stable;		/* no times, durations, pids, tids; deterministic order */
	bool json;		/* the tree as one nested JSON document */
	bool color;		/* ANSI colours (text only) */
	bool no_collapse;	/* keep repeated identical siblings apart */
	unsigned int max_depth;	/* levels below a process, 0 = all */
	uint64_t min_dur_ns;	/* hide closed spans shorter than this */
	/*
	 * Hide closed spans shorter than this share (0..1) of the time of the
	 * top-level span they are under (a top-level span: of the recording),
	 * counted on a line after their siblings. Below 0: SP_TREE_MIN_SHARE in a tree of more than
	 * SP_TREE_LARGE spans when printing starts, else none.
	 */
	double min_share;
	const uint64_t *pids;	/* show only these processes (and what they started) */
	size_t npids;
	/* show only the processes of these containers ("3f1c2a9b", a prefix
	 * of the id or unit name; "podman:3f1c" with the runtime), with what
	 * they started */
	const char *const *containers;
	size_t ncontainers;
	const uint64_t *tids;	/* show only spans of these threads */
	size_t ntids;
	const char *const *spans;	/* fnmatch(3) patterns of span names to show */
	size_t nspans;
	uint64_t event_kinds;	/* bit per enum sp_event_kind to show; 0 = all */
	bool no_events;		/* spans and processes only */
	/* Python's own audit events too (sp_tree_audit_internal()): shown
	 * only with this, or when --events names them */
	bool all_audit;
	/*
	 * Streaming: once more than this many nodes are held, print the
	 * finished top-level subtrees of the process being printed and free
	 * them (needs sp_tree_set_output()). 0 = hold the whole tree.
	 */
	uint64_t buffer_nodes;
	/*
	 * A table of one row per method instead of the tree (spans only; the
	 * filters do not apply): sorted by summary_sort, the first summary_top
	 * rows (0 = all).
	 */
	bool summary;
	enum sp_summary_sort summary_sort;
	size_t summary_top;
};

#define SP_TREE_MIN_SHARE	0.005
#define SP_TREE_LARGE		20000

struct sp_tree *sp_tree_new(const struct sp_tree_opts *opts);
/* Take in a correlated record. */
void sp_tree_add(struct sp_tree *t, const struct sp_record *rec);
/* Where sp_tree_print() will write: lets the tree stream while records come in. */
void sp_tree_set_output(struct sp_tree *t, FILE *out);
/* Print the (rest of the) tree. 0, or -1 if writing failed. */
int sp_tree_print(struct sp_tree *t, FILE *out);
/* Tree nodes held now (processes, threads, spans, events not yet printed and freed). */
uint64_t sp_tree_nodes_held(const struct sp_tree *t);
/* Records the tree could not place (their count; each is shown under the process). */
uint64_t sp_tree_orphans(const struct sp_tree *t);
/* How many audit events of the interpreter's own machinery were left out
 * (opts.all_audit shows them). */
uint64_t sp_tree_audit_hidden(const struct sp_tree *t);
/* Whether the i-th of opts.pids was a process of the input. */
bool sp_tree_pid_seen(const struct sp_tree *t, size_t i);
/* Whether a process of the input was in the i-th of opts.containers. */
bool sp_tree_container_seen(const struct sp_tree *t, size_t i);
void sp_tree_free(struct sp_tree *t);

/*
 * Render an event's kind-specific fields as one line of text, e.g.
 * "/etc/app.conf (O_RDONLY|O_CLOEXEC) = 3" or "127.0.0.1:8080 = 0".
 * vals[i] holds field i of the kind (lib/stream/events.c): the number for
 * UINT/INT/HEX fields; for STR fields a (uintptr_t) pointer to a
 * NUL-terminated string in its text form (escape.h: no control character,
 * valid UTF-8; sp-tree keeps every string so) or 0; for ADDR and BYTES fields a (uintptr_t)
 * pointer to a length byte followed by the bytes, or 0. With stable, values
 * that change from run to run (pids, fds, ports of ephemeral sockets) are
 * left out. The text replaces b's contents; it is at most SP_EVENT_TEXT_MAX
 * bytes, cut at a whole character.
 */
void sp_event_text(struct sp_buf *b, uint64_t kind, const uint64_t *vals, unsigned int nvals,
		   bool stable);
/*
 * The same for a line that stands for several events of one kind (a
 * collapsed run, "×4 NET sock_accept → from 127.0.0.1:* = 4"): bit i of
 * varies set says field i is not the same in all of them, and what the text
 * would show of it is written "*", so that the line states nothing that is
 * false for one of them.
 */
void sp_event_text_run(struct sp_buf *b, uint64_t kind, const uint64_t *vals,
		       unsigned int nvals, bool stable, uint32_t varies);
/*
 * Which fields of two events of kind differ, as the bits of varies above
 * (strings and addresses by content); a field only one of them has differs.
 */
uint32_t sp_event_fields_differ(uint64_t kind, const uint64_t *a, unsigned int na,
				const uint64_t *b, unsigned int nb);
#define SP_EVENT_TEXT_MAX	2047

/* Open flags as "O_WRONLY|O_CREAT|O_TRUNC" (unknown bits in hex), appended to b. */
void sp_open_flags_text(struct sp_buf *b, uint64_t flags);

#endif
