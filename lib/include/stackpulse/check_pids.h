/* SPDX-License-Identifier: MIT */
/*
 * check_pids.h - what sp-record --check says of the processes given with
 * -p: whether each can be attached to (a process, not a thread of one, not
 * gone), named by its comm and executable, escaped; then what a recording
 * gets of each, found by recording them for a second with the same
 * options (sp_check_pids_record()): the runtimes found and how their spans
 * come, samples with interpreted frames, spans, what was refused. A pid
 * that cannot be attached to is an error, as it is for a recording.
 */
#ifndef STACKPULSE_CHECK_PIDS_H
#define STACKPULSE_CHECK_PIDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#include "reader.h"

/* A line per pid on out; 0, or -1 when any cannot be attached to (said). */
int sp_check_pids(const uint32_t *pids, size_t n, FILE *out);


#define SP_CHECK_RUBY	1u
#define SP_CHECK_PYTHON	2u

/* What a short recording got of one -p process, or of one it started. */
struct sp_check_pid {
	uint32_t pid;
	bool child;		/* not given: started by a -p one */
	uint64_t samples, interp_samples;	/* on-CPU and off-CPU samples */
	uint64_t spans;				/* span starts */
	uint64_t unprobed;			/* lost records: left without span probes */
	char runtimes[512];	/* "ruby 3.1.2 (/usr/lib/..libruby..): spans none; ..." */
	unsigned int kinds;	/* its runtimes: SP_CHECK_RUBY, SP_CHECK_PYTHON */
	bool interp;		/* a runtime record of its interpreted frames */
	bool span_runtime;	/* a runtime whose spans come: a mode other than
				 * "none", "stacks" or "...-when-..." */
	bool spans_partial;	/* a mode "...-when-...": only while tracing is on */
};

/*
 * Read a recording of the -p pids to its end into res[*n] (res[i].pid set
 * by the caller for the pids given): each one's samples, those holding
 * interpreted frames (SP_FRAME_INTERP), span starts, runtime
 * records and unprobed counts. Another process with a sample, a runtime or
 * a span (one a -p one started) is added as a child while *n < cap.
 * 0, or -1 when the reader failed (reported).
 */
int sp_check_pids_scan(struct sp_reader *r, struct sp_check_pid *res, size_t *n, size_t cap);

/*
 * Record the pids for a second with sp-record at self (args: its span
 * options, --spans=, --spans-match=, --span-func=, NULL-terminated, or
 * NULL for the default; method_spans: the runtimes they ask method or
 * function spans of, SP_CHECK_RUBY | SP_CHECK_PYTHON), then lines per pid on out (and per process they
 * started that has a runtime): what the recording got and what sp-record
 * said. Returns how many got less than was asked (a runtime without
 * interpreted frames in its samples; method spans asked and none came, or
 * only a partial view, or no runtime at all; every pid when the recording
 * failed), or -1 when it could not be run (said). The recording goes to
 * a memfd, not to a path in TMPDIR another user could put a FIFO at.
 */
int sp_check_pids_record(const char *self, const uint32_t *pids, size_t n,
			 const char *const *args, unsigned int method_spans, FILE *out);

#endif
