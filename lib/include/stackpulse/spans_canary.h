/* SPDX-License-Identifier: MIT */
/*
 * spans_canary.h - `sp-record --check --spans=LIST`: a canary run per span
 * mode. Each records a tiny program that calls one known method (Ruby,
 * Python, a <stackpulse/span.h> marker in sp-record itself) under a real
 * recording, then says whether that method's span arrived, with the
 * runtime found, each probe's hits and the verdict of a dead one. It
 * answers "would my recording have spans?" before a long run.
 */
#ifndef STACKPULSE_SPANS_CANARY_H
#define STACKPULSE_SPANS_CANARY_H

#include <stdbool.h>
#include <stdio.h>

#include "reader.h"

/* The hidden sp-record option that runs the C canary: one marked span
 * named SP_CANARY_METHOD, then exit 0. */
#define SP_CANARY_USDT_OPTION	"--span-canary"
#define SP_CANARY_METHOD	"stackpulse_canary"

struct sp_canary_result {
	unsigned int seen;	/* span starts (audit events for python-audit) of the method */
	char runtime[160];	/* "ruby 3.1.2, /usr/lib/.../libruby-3.1.so.3.1.2", or "" */
	char probes[512];	/* "ruby:method__entry 2, ruby:method__return 18", or "" */
	char verdict[320];	/* the first dead probe's "name: verdict", or "" */
};

/*
 * Read a canary recording to its end: count the span starts of method
 * `want` (with audit, the audit events named `want`), and collect the
 * runtime and probe records. 0, or -1 when the reader failed (reported).
 */
int sp_canary_scan(struct sp_reader *r, const char *want, bool audit,
		   struct sp_canary_result *res);

/*
 * Run the canary of each span mode in modes (SP_SPANS_RUBY, _RUBY_C,
 * _PYTHON, _PY_AUDIT, _USDT) with the sp-record at self, print a line per
 * mode to out, and return how many recorded nothing (0: all seen). A mode
 * whose program is not installed is printed as skipped and not counted.
 * as_auto: record each canary as a default recording does (--spans=auto,
 * which decides before the command runs whether to wait for the probes),
 * not with the mode named, so that "ok" means what --spans=auto will do.
 */
int sp_spans_canary(const char *self, unsigned int modes, bool as_auto, FILE *out);

#endif
