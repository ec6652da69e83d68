/* SPDX-License-Identifier: MIT */
/*
 * recorder.h - a recording as sp-record makes it: its sources (source.h),
 * found by their kind; the output (one writer, one time-ordered merge,
 * written in batches); the header; the loop (epoll over the sources, a
 * signalfd for SIGINT and SIGTERM, pidfds of the recorded processes); the
 * end record; the closing report and the exit status.
 *
 * Its steps, in this order (each does nothing once a step before failed):
 *
 *	r = sp_recorder_new(&opts);		signals caught, -p processes held
 *	sp_recorder_describe(r, argv, argc);	the command line for the header
 *	sp_recorder_add(r, kind, source);	each source the options ask for
 *	sp_recorder_open_output(r);
 *	sp_recorder_launch(r, argv);		a command: forked, waiting before exec
 *	sp_recorder_start(r);			the header; every source attaches
 *	sp_recorder_go(r);			the command execs
 *	sp_recorder_run(r);			until it ends, -d, a signal or an error
 *	sp_recorder_end(r);			the sources' last records, the end record
 *	status = sp_recorder_report(r);		summaries, sources detached, exit status
 *	sp_recorder_free(r);
 *
 * Messages go to stderr as the library's do (sp.h); nothing here exits.
 */
#ifndef STACKPULSE_RECORDER_H
#define STACKPULSE_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "flight.h"
#include "record.h"
#include "source.h"
#include "sp.h"
#include "triggers.h"

/* Where a spool goes when standard output is a terminal. */
#define SP_RECORDER_DEFAULT_OUTPUT	"stackpulse.sp"
/* The reader of the output went away (a broken pipe): as a shell reports
 * a program that SIGPIPE killed, 128 + 13. */
#define SP_RECORDER_EXIT_OUTPUT_CLOSED	141
#define SP_RECORDER_MAX_PIDS		256
#define SP_RECORDER_MAX_SOURCES		8

struct sp_recorder_opts {
	struct sp_common_opts *common;	/* -o: the output; closed by the caller */
	enum sp_format format;		/* spool or JSON lines */
	uint64_t batch_ns;		/* write at least this often */
	uint64_t duration_ns;		/* stop after this long, 0 = no limit */
	const uint32_t *pids;		/* -p: running processes to record */
	unsigned int npids;		/* at most SP_RECORDER_MAX_PIDS */
	bool system_wide;		/* -a */
	enum sp_call_graph call_graph;	/* for the stack quality summary */
	bool stack_summary;		/* print it even when 95% of the stacks are complete */
	uint32_t stack_size;		/* bytes of user stack per sample, 0 = 8192 */
	const struct sp_trigger_opts *triggers;	/* --trigger: checked on every record */
	const char *command_stdout;	/* the command's standard output, NULL: standard
					 * output, or standard error when the spool is there */
	const struct sp_flight_opts *flight;	/* -o DIR: rotation or --flight; NULL */
};

struct sp_recorder;

/*
 * A recording, nothing started. Blocks SIGINT and SIGTERM (read from a
 * signalfd by the loop, even when sp-record was started with them
 * ignored) and SIGPIPE (a closed output is an EPIPE to handle, not a
 * death that leaves processes held stopped) for the whole process; a
 * command it launches gets the mask from before. Opens a pidfd for each
 * -p process first, since a pidfd cannot name another process once the
 * pid is reused. NULL (reported) when one is gone or the loop cannot be
 * set up. o->pids must outlive the recorder.
 */
struct sp_recorder *sp_recorder_new(const struct sp_recorder_opts *o);

/*
 * The command line the header records, owned by the recorder: argv
 * shell-quoted where needed ("make 'a b'"), or "-a", or "-p 12,34" when
 * argc is 0.
 */
const char *sp_recorder_describe(struct sp_recorder *r, char **argv, int argc);

/*
 * Drive source s as a source of this kind; the recorder frees it. Sources
 * are started, polled and finished in the order they are added. 0, or -1
 * when s is NULL (its constructor said why) or there are too many.
 */
int sp_recorder_add(struct sp_recorder *r, enum sp_source_kind kind, struct sp_source *s);
/* The source of that kind, or NULL. */
struct sp_source *sp_recorder_source(struct sp_recorder *r, enum sp_source_kind kind);

/*
 * The output: -o FILE, standard output, or ./stackpulse.sp (the old one
 * renamed .old) when standard output is a terminal and the format is the
 * spool (said on stderr). 0, or -1 (reported).
 */
int sp_recorder_open_output(struct sp_recorder *r);

/*
 * Let each source adjust the environment of the command (prepare_env),
 * then fork it, stopped before exec, so that the sources attach to its pid
 * first. 0, or -1 (reported).
 */
int sp_recorder_launch(struct sp_recorder *r, char *const argv[]);

/* The header (the first record), then each source's start(): a source
 * that cannot start ends the recording (and the command is let go
 * without running anything). */
void sp_recorder_start(struct sp_recorder *r);
/* The command execs; one that cannot says so, and the recording ends with
 * 127 (not found) or 126. */
void sp_recorder_go(struct sp_recorder *r);
/* Poll the sources and write a batch at least every batch_ns, until the
 * recorded processes have all exited, the duration is over, a signal came
 * (the first one, with a command, is passed on to it and the recording
 * goes on until it ends), a source failed or the output did. */
void sp_recorder_run(struct sp_recorder *r);
/* Each source's finish() (its last records, lost counts), then the end
 * record, written with everything held. */
void sp_recorder_end(struct sp_recorder *r);
/*
 * How complete the stacks are (always with DWARF or auto, else with -v),
 * the off-CPU summary; then the sources are freed (a process they hold is
 * let go) and the output closed; then the closing line, or waiting for a
 * command that goes on after the output failed. Returns the exit status:
 * the command's (128 + signal when killed, 128 + the signal sp-record got
 * when it did not exit), SP_EXIT_OK for -p and -a, SP_EXIT_FATAL when
 * anything failed, SP_RECORDER_EXIT_OUTPUT_CLOSED when the output's
 * reader went away, 126 or 127 when the command could not run.
 */
int sp_recorder_report(struct sp_recorder *r);
/*
 * Something worth a flight dump happened (SIGUSR1 to sp-record, a crash, a
 * slow span, a matching event, --trigger-cmd): trigger names it ("signal",
 * "exit", ...; a word, it goes in the dump's file name), detail says what
 * (copied), mono_ns is when (CLOCK_MONOTONIC). The dump is written
 * --flight-after later, at most one per --dump-interval (triggers meanwhile
 * are counted in it). Without --flight, said once and ignored.
 */
void sp_recorder_fire(struct sp_recorder *r, const char *trigger, const char *detail,
		      uint64_t mono_ns);

/* Close what is left (the output's file when the recorder opened it, the
 * command's descriptors, without killing or waiting for it) and free. */
void sp_recorder_free(struct sp_recorder *r);

#endif
