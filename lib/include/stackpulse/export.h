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

/*
 * OpenTelemetry (OTLP) traces, lib/render/otlp*.c: the request a collector
 * takes on POST /v1/traces (ExportTraceServiceRequest, opentelemetry-proto
 * v1.11.0), as protobuf or as OTLP/JSON. Every process is a resource, every
 * span of a correlated stream a span (its parent, thread and code
 * attributes), every kernel or runtime event an event of the span that owns
 * it. Trace and span ids follow from the recording (docs/otlp.md), so the
 * same input gives the same bytes.
 *
 * Spans are written in batches of SP_OTLP_BATCH spans: memory is bounded by
 * a batch (plus 8 bytes per span for the trace ids and what is kept per
 * process and thread). A protobuf file is the batches' requests one after
 * another, which protobuf reads as one request (repeated fields of
 * concatenated messages are concatenated).
 */
#define SP_OTLP_BATCH 4096

struct sp_otlp_opts {
	bool json;			/* OTLP/JSON instead of protobuf */
	const char *service_name;	/* service.name of every resource; NULL: the comm */
};

/* What an OTLP export wrote and what it could not place. */
struct sp_otlp_stats {
	uint64_t resources;	/* resource entries written (a process per batch) */
	uint64_t spans, events;
	uint64_t events_unowned;	/* events no span owns: not written */
	uint64_t events_late;	/* events after their span's batch was written */
	uint64_t events_no_span;	/* events naming a span the stream never defined */
};

struct sp_otlp_traces;

/* out: where the request goes (the caller opens and closes it). */
struct sp_otlp_traces *sp_otlp_traces_new(FILE *out, const struct sp_otlp_opts *o);
/* Take one record (definitions in d). -1 if a write failed (reported). */
int sp_otlp_traces_add(struct sp_otlp_traces *t, const struct sp_defs *d,
		       const struct sp_record *rec);
/* Write what is left; fills *st; frees t. 0 or -1 (a write failed, reported). */
int sp_otlp_traces_finish(struct sp_otlp_traces *t, struct sp_otlp_stats *st);

/*
 * OpenTelemetry profiles (lib/render/otlp_profiles.c): the request a
 * collector takes on POST /v1development/profiles
 * (ExportProfilesServiceRequest of opentelemetry-proto v1.11.0's profiles
 * signal, "v1development", which still changes between releases). The
 * samples are aggregated as sp_pprof aggregates them (the same mappings,
 * functions, locations and inline lines), then written with one dictionary
 * for the request and a resource per process, whose CPU profile has a
 * sample per distinct stack and thread. Protobuf only.
 */
struct sp_otlp_profiles;

struct sp_otlp_profiles *sp_otlp_profiles_new(const struct sp_otlp_opts *o);
void sp_otlp_profiles_free(struct sp_otlp_profiles *p);
/* Take a record: a header, process, thread or runtime record, or a sample
 * the caller has chosen (ns its cpu time, as for sp_pprof_add()). -1 for a
 * sample with an undefined stack, else 0. */
int sp_otlp_profiles_add(struct sp_otlp_profiles *p, const struct sp_defs *d,
			 const struct sp_record *rec, uint64_t ns);
/* Write the request. period_ns: one sample's period. 0, or -1 (reported). */
int sp_otlp_profiles_write(struct sp_otlp_profiles *p, FILE *out, uint64_t period_ns);

#endif
