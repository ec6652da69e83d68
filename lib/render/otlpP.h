/* SPDX-License-Identifier: MIT */
/*
 * otlpP.h - the OTLP export's state, shared by its files:
 *
 *   otlp.c		ids, clock, attributes, resources (a recording's processes),
 *			the root of every span's trace
 *   otlp_traces.c	spans and events of a stream, in batches (export.h's API)
 *   otlp_pb.c		a batch as an ExportTraceServiceRequest, in protobuf or JSON
 *   otlp_json.c	any OTLP message as OTLP/JSON
 *   otlp_profiles.c	a pprof aggregate as an ExportProfilesServiceRequest
 *   otlp_pb.h		what the protobuf encoders share
 *
 * The records become a small model first (resources, spans, events and
 * their attributes, every string already in its text form, escape.h), which
 * each encoder walks; the encoders decide nothing.
 */
#ifndef STACKPULSE_OTLP_P_H
#define STACKPULSE_OTLP_P_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"
#include "defs.h"
#include "export.h"
#include "hashmap.h"

/* An attribute: a key (a literal or a schema's field name) and a value. */
enum otlp_vtype { OTLP_STR, OTLP_INT };

struct otlp_attr {
	const char *key;	/* never freed: literals and the event schema's names */
	enum otlp_vtype type;
	const char *s;		/* OTLP_STR: text form, NUL-terminated */
	int64_t i;		/* OTLP_INT */
};

struct otlp_attrs {
	struct otlp_attr *a;
	size_t n, cap;
};

/* A process as one definition of it saw it (exec makes a new one). */
struct otlp_resource {
	uint64_t pid;
	struct otlp_attrs attrs;
};

/* What every part keeps about the stream. */
struct otlp_stream {
	uint64_t key;		/* the recording's identity: seeds its ids */
	int64_t wall_off;	/* unix ns minus monotonic ns, 0 without a header */
	const struct sp_otlp_opts *opts;
	struct otlp_resource *res;
	size_t nres, res_cap;
	struct sp_u64map res_of_pid;	/* pid -> its newest resource's index + 1 */
	struct sp_u64map thread_name;	/* tid -> text (const char *) */
	struct sp_arena text;	/* resources' and threads' strings: the whole run */
	uint64_t *root;		/* span id - 1 -> the root span of its trace, 0 unknown */
	size_t nroot, root_cap;
	char host[256], arch[64], kernel[256];	/* text forms from the header */
};

enum otlp_status { OTLP_STATUS_UNSET = 0, OTLP_STATUS_ERROR = 2 };

struct otlp_span {
	uint8_t trace_id[16], span_id[8], parent_id[8];
	bool has_parent;
	const char *name;
	uint64_t start, end;		/* unix ns */
	uint32_t resource;
	enum otlp_status status;
	const char *status_msg;		/* "" when none */
	uint32_t attr_off, nattrs;	/* into the batch's attrs */
	uint32_t event_off, nevents;	/* into the view's event order */
};

struct otlp_event {
	uint32_t span;			/* batch index of its span */
	uint64_t time;			/* unix ns */
	const char *name;
	uint32_t attr_off, nattrs;
};

/* The spans of one batch and everything they carry. */
struct otlp_batch {
	struct otlp_span *span;
	size_t nspans, span_cap;
	struct otlp_event *ev;
	size_t nev, ev_cap;
	struct otlp_attrs attrs;
	struct sp_arena text;
	struct sp_u64map index;		/* recording span id -> batch index + 1 */
};

/* A batch in the order it is written: by resource, each resource's spans in
 * input order, each span's events in input order. */
struct otlp_group {
	uint32_t resource;
	uint32_t first, n;		/* into span_order */
};

struct otlp_view {
	struct otlp_group *group;
	size_t ngroups;
	uint32_t *span_order;		/* batch indices */
	uint32_t *ev_order;		/* batch indices; a span's are event_off.. */
};

/* ---- otlp.c ---- */
void otlp_stream_init(struct otlp_stream *s, const struct sp_otlp_opts *o);
void otlp_stream_release(struct otlp_stream *s);
/* A header starts a stream: its identity and clock. */
void otlp_stream_header(struct otlp_stream *s, const struct sp_header *h);
/* A process, thread or runtime record. */
void otlp_stream_define(struct otlp_stream *s, const struct sp_defs *d,
			const struct sp_record *rec);
/*
 * A span record of the stream: remembers the root of its trace (a span
 * takes its parent's, or its forking span's; a root is its own). Sets *id
 * (its number) and *parent (the span that is its OTLP parent, 0 for a
 * root); returns the root.
 */
uint64_t otlp_stream_span(struct otlp_stream *s, const struct sp_defs *d, const struct sp_span *sp,
			  uint64_t *id, uint64_t *parent);
/* The root of span id's trace; 0 when no span record defined it. */
uint64_t otlp_stream_root(const struct otlp_stream *s, uint64_t id);
/* The resource of pid (one with only its pid when no record defined it). */
uint32_t otlp_resource_of(struct otlp_stream *s, uint64_t pid);
uint64_t otlp_wall(const struct otlp_stream *s, uint64_t mono);
/* The ids of the trace whose root span is root, and of span id. Never 0. */
void otlp_trace_id(const struct otlp_stream *s, uint64_t root, uint8_t id[16]);
void otlp_span_id(const struct otlp_stream *s, uint64_t span, uint8_t id[8]);
/* The id of the profile of process pid. Never 0. */
void otlp_profile_id(const struct otlp_stream *s, uint64_t pid, uint8_t id[16]);
/* The text form of s[0..n) (of a string id), copied into a. */
const char *otlp_text(struct sp_arena *a, const char *s, size_t n);
const char *otlp_strid(struct sp_arena *a, const struct sp_defs *d, uint64_t id);
/* An event's network address (4 or 16 bytes) as text; false for others. */
bool otlp_addr_text(const struct sp_bytes *b, char *dst, size_t size);
void otlp_attr_str(struct otlp_attrs *v, const char *key, const char *s);
void otlp_attr_int(struct otlp_attrs *v, const char *key, int64_t i);

/*
 * ---- otlp_pb.c ----
 * A batch as a request: packed, or (json) its entries of "resourceSpans"
 * in OTLP/JSON, *first saying whether one was written before (a comma goes
 * first). 0, or -1 when out has an error.
 */
int otlp_pb_traces(FILE *out, const struct otlp_stream *s, const struct otlp_batch *b,
		   const struct otlp_view *v, bool json, bool *first);

#endif
