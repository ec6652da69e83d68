/* SPDX-License-Identifier: MIT */
/*
 * triggers.h - what makes a flight recorder write its window out
 * (docs/postmortem.md): conditions checked on each record on its way to
 * the output, and a command run now and then.
 *
 *	--trigger=exit[=WHAT][:GLOB]	a process exits non-zero or is killed by
 *					a signal; WHAT narrows it: "nonzero",
 *					signal names (SIGSEGV,SIGABRT,KILL, ...);
 *					GLOB: its comm or executable path
 *	--trigger=span>DURATION[:GLOB]	a span lasted longer than DURATION (or is
 *					open for longer); GLOB: its name
 *					("Shop#run", "handle") or method
 *	--trigger=event=KIND[.FIELD][:GLOB]
 *					an event of KIND (exec, connect, open,
 *					or any event name) whose FIELD (its main
 *					one by default: the path, the port)
 *					matches GLOB
 *	--trigger=cmd=COMMAND, or --trigger-cmd=COMMAND
 *					/bin/sh -c COMMAND every --trigger-every
 *					(default 10s), killed after
 *					--trigger-timeout (default the interval):
 *					it fires when the command exits 0; the
 *					first line of its output is the detail
 *
 * Use: the argp child sp_triggers_argp fills a zeroed struct
 * sp_trigger_opts (or sp_triggers_parse() does, spec by spec); then
 *
 *	t = sp_triggers_new(&opts);
 *	for each record: name = sp_triggers_check(t, rec, defs, detail, n);
 *	each batch:	 name = sp_triggers_tick(t, watermark, defs, detail, n);
 *	in the loop:	 watch sp_triggers_cmd_fd(t), wake by
 *			 sp_triggers_cmd_deadline(t), and then call
 *			 name = sp_triggers_cmd_poll(t, now, detail, n);
 *	sp_triggers_free(t);	kills a command still running
 *
 * A name is one of the static strings "exit", "span", "event", "cmd".
 * Details are text forms (escape.h) of at most n - 1 bytes: the strings of
 * others in them are escaped. Every table the triggers keep is bounded.
 */
#ifndef STACKPULSE_TRIGGERS_H
#define STACKPULSE_TRIGGERS_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "record.h"
#include "source.h"

#define SP_TRIGGERS_MAX_SPECS	16	/* span and event specs, each */
#define SP_TRIGGERS_GLOB_MAX	256	/* bytes of a glob */
#define SP_TRIGGERS_DETAIL_MAX	512	/* the longest detail worth writing */

struct sp_trigger_span {
	uint64_t min_ns;		/* fires when longer than this */
	char glob[SP_TRIGGERS_GLOB_MAX];	/* "" = any span */
};

struct sp_trigger_event {
	unsigned int kind;		/* enum sp_event_kind */
	int field;			/* index into its schema's fields, -1 = none */
	char glob[SP_TRIGGERS_GLOB_MAX];	/* "" = any event of the kind */
};

struct sp_trigger_opts {
	bool exit;			/* exit given */
	bool exit_nonzero;		/* non-zero exit codes fire */
	uint64_t exit_signals;		/* bit n: death by signal n fires */
	char exit_glob[SP_TRIGGERS_GLOB_MAX];	/* "" = any process */
	struct sp_trigger_span spans[SP_TRIGGERS_MAX_SPECS];
	unsigned int nspans;
	struct sp_trigger_event events[SP_TRIGGERS_MAX_SPECS];
	unsigned int nevents;
	const char *cmd;		/* borrowed: argv or a spec */
	uint64_t every_ns;		/* 0 = 10 s */
	uint64_t timeout_ns;		/* 0 = every_ns */
};

/* argp child: --trigger=SPEC (repeatable), --trigger-cmd=COMMAND,
 * --trigger-every=TIME, --trigger-timeout=TIME. Its input is a zeroed
 * struct sp_trigger_opts. A bad spec is a usage error naming it. */
extern const struct argp sp_triggers_argp;

/*
 * Add one --trigger SPEC to o. 0, or -1 with a message naming the spec
 * and what is wrong with it in err (nothing is printed). A "cmd=" spec
 * borrows spec: it must outlive o.
 */
int sp_triggers_parse(struct sp_trigger_opts *o, const char *spec, char *err, size_t errsize);
/* Whether o asks for any trigger. */
bool sp_triggers_any(const struct sp_trigger_opts *o);

struct sp_triggers;

/* Triggers as o says (copied); never NULL (out of memory is fatal). */
struct sp_triggers *sp_triggers_new(const struct sp_trigger_opts *o);
/* Kills the command still running (its process group) and reaps it. */
void sp_triggers_free(struct sp_triggers *t);
/* The string ids the triggers keep (processes' names, open spans'), renumbered. */
void sp_triggers_remap(struct sp_triggers *t, const struct sp_remap *m);

/*
 * Check one record in the order it is written (defs: the stream's
 * definitions, to read its strings). Returns the trigger's name and fills
 * detail[n], or NULL. Records that fire nothing still feed what the
 * triggers track (process names, open spans).
 */
const char *sp_triggers_check(struct sp_triggers *t, const struct sp_record *rec,
			      struct sp_defs *defs, char *detail, size_t n);

/*
 * Every record up to monotonic time upto has been checked: a span open
 * since more than its threshold before upto fires now (a request that
 * hangs), once, rather than at its stop. sp_triggers_check() does the
 * same on the records' own times; this covers the time when none come
 * (the process sleeps). Call it with what the merge has let out (its
 * watermark), not the clock: a stop still held there must not look like
 * a span still open. Looks at the open spans at most every 100 ms.
 */
const char *sp_triggers_tick(struct sp_triggers *t, uint64_t upto, struct sp_defs *defs,
			     char *detail, size_t n);

/*
 * The command: the descriptor to poll (its output, non-blocking) while one
 * runs, else -1; the monotonic time by which sp_triggers_cmd_poll() must
 * be called (the next run, or the running one's timeout), UINT64_MAX when
 * there is no command. The descriptor changes from run to run: watch the
 * one returned after each poll.
 */
int sp_triggers_cmd_fd(const struct sp_triggers *t);
uint64_t sp_triggers_cmd_deadline(const struct sp_triggers *t);
/*
 * Read what the command wrote, reap it when it is done, kill it past its
 * timeout, start the next run when due. Never blocks. "cmd" (with detail
 * filled) when a run exited 0, else NULL.
 */
const char *sp_triggers_cmd_poll(struct sp_triggers *t, uint64_t now, char *detail, size_t n);

/* How often each trigger fired and what its tables refused, for a summary. */
struct sp_triggers_stats {
	uint64_t exits, spans, events, cmds;	/* fired */
	uint64_t cmd_runs, cmd_timeouts, cmd_failed;	/* runs, killed, could not start */
	uint64_t untracked;	/* span starts or processes past the tables' bounds */
};
void sp_triggers_stats(const struct sp_triggers *t, struct sp_triggers_stats *st);

#endif
