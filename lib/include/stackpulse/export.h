/* SPDX-License-Identifier: MIT */
/*
 * export.h - profiles and traces in formats other viewers open:
 * pprof (lib/render/pprof.c) and Chrome's trace event JSON for Perfetto
 * (lib/render/chrometrace.c). speedscope is in flame.h (it renders an sp_folded).
 */
#ifndef STACKPULSE_EXPORT_H
#define STACKPULSE_EXPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "defs.h"
#include "record.h"

/*
 * pprof: samples aggregated by (stack, pid, tid), each distinct stack's
 * frames turned into locations once (mappings with build-ids, functions
 * and lines, inline chains as several lines of one location). Memory is
 * proportional to distinct stacks, frames and functions.
 */
struct sp_pprof;

struct sp_pprof *sp_pprof_new(bool no_inline);
void sp_pprof_free(struct sp_pprof *p);
/* The samples are off-CPU waits: typed waits/count and off_cpu/nanoseconds
 * (instead of samples/count and cpu/nanoseconds), the period one wait. */
void sp_pprof_set_off_cpu(struct sp_pprof *p, bool off_cpu);
/* Take a header (a new stream: ids start again), a process (its exe names
 * the main mapping, written first) or a sample the caller has chosen
 * (filters are the caller's); ns is the sample's cpu or off-CPU time in
 * nanoseconds. Other records are ignored. Returns -1 for a sample with an
 * undefined stack (not counted), else 0. */
int sp_pprof_add(struct sp_pprof *p, const struct sp_defs *d, const struct sp_record *rec,
		 uint64_t ns);
/* Write the gzip-compressed profile.proto message. period_ns: one sample's
 * period. 0, or -1 (reported) on a write or compression error. */
int sp_pprof_write(struct sp_pprof *p, FILE *out, uint64_t period_ns, const char *comment);

/* Totals taken so far: samples and nanoseconds. */
void sp_pprof_totals(const struct sp_pprof *p, uint64_t *samples, uint64_t *ns);

/*
 * Chrome trace event format (JSON object with "traceEvents"), streamed:
 * spans become complete events ("X") on their thread, kernel and runtime
 * events instant events ("i", thread scope), processes and threads get
 * their names ("M"). Times are microseconds since the recording's start.
 */
struct sp_chrome;

struct sp_chrome *sp_chrome_new(FILE *out);
/* Take one record (definitions in d). -1 if a write failed. */
int sp_chrome_add(struct sp_chrome *c, const struct sp_defs *d, const struct sp_record *rec);
/* Close the JSON; frees c. 0 or -1 (write failed). */
int sp_chrome_finish(struct sp_chrome *c);

#endif
