/* SPDX-License-Identifier: MIT */
/*
 * segments.h - one recording written as a series of self-contained streams
 * (rotated segment files, the chunks of a flight recorder's window).
 *
 * The sources intern their strings, frames, stacks and modules against one
 * writer for the whole recording (sp_writer_new_tee(): the "master" id
 * space, which never restarts, since sources keep the ids they were given).
 * Every record that writer takes is handed to sp_segments_put(), which
 * re-encodes it into the current stream with that stream's own ids:
 * strings, frames, stacks and modules are defined there when first used,
 * a kernel frame's ksym record just before the frame. A new stream
 * (sp_segments_start()) opens with the header again (its segment number
 * set) and then replays what is live: every process, thread and module
 * not yet ended, their runtime, probe and JIT symbol records; so that each
 * stream decodes, symbolizes and correlates alone.
 *
 * Memory: the replay set holds live things only (dropped on PROCESS_END,
 * THREAD_END, MODULE_END), plus one copy of each kernel symbol frames have
 * named (bounded by the kernel's symbol table); the id maps hold 8 bytes per
 * master definition. The master itself would grow with every distinct
 * string, frame and stack of the recording: a compaction (below) moves
 * into a fresh master only what something live still refers to, and every
 * holder of master ids renumbers what it keeps.
 */
#ifndef STACKPULSE_SEGMENTS_H
#define STACKPULSE_SEGMENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "defs.h"
#include "record.h"
#include "writer.h"

struct sp_segments;

/* master: the definitions of the writer the sources use; outlives this. */
struct sp_segments *sp_segments_new(const struct sp_defs *master);
void sp_segments_free(struct sp_segments *s);

/*
 * End the current stream, if any (flushed, its writer freed: the caller
 * writes an end record first when it wants one), and start one on fd
 * (named name in messages) with the header again, segment number n, its
 * start now (CLOCK_MONOTONIC ns: the replayed records' time when theirs
 * is older), then the replay. Nothing is written before the master header is known. 0 or
 * -1 (reported).
 */
int sp_segments_start(struct sp_segments *s, int fd, const char *name, uint64_t n,
		      uint64_t now);
/* The format of the streams started from now on (spool by default). */
void sp_segments_set_format(struct sp_segments *s, enum sp_format format);
/* A record of the master stream, written to the current one. 0 or -1. */
int sp_segments_put(struct sp_segments *s, const struct sp_record *rec);
/* The current stream's writer (flush, bytes, errno), NULL before a start. */
struct sp_writer *sp_segments_writer(struct sp_segments *s);
/* Timed records (not definitions, not replayed) in the current stream. */
uint64_t sp_segments_records(const struct sp_segments *s);
/* Where the current stream's header ends (bytes from its start), and the
 * time it gives (the spool codes the next record's time against it): a
 * record with that time fits in there without changing what follows. */
uint64_t sp_segments_header_end(const struct sp_segments *s, uint64_t *time);
/* Flush and free the current stream's writer. 0, or -1 if a write failed. */
int sp_segments_close(struct sp_segments *s);

/*
 * Compaction of the master id space, between two records (never inside a
 * put): sp_segments_compact_begin() takes every definition out of master
 * (the same defs as sp_segments_new()'s, writable) and defines again, ids
 * from 1, what the replay set refers to. Until sp_segments_compact_end(),
 * sp_segments_remap() gives the new id of any old one (defining it then),
 * for everything else that holds master ids: records waiting to be written
 * (sp_segments_remap_record()), the caches of the sources. Ids nobody asks
 * about are gone after the end. The current stream goes on: its own ids of
 * what was remapped are kept, the rest is found again by value.
 */
int sp_segments_compact_begin(struct sp_segments *s, struct sp_defs *master);
/* ref: SP_REF_STRING, _MODULE, _FRAME, _STACK (schema.h). 0 for 0, or for
 * an id the old master did not have. */
uint64_t sp_segments_remap(struct sp_segments *s, unsigned int ref, uint64_t id);
/* Every reference of rec (schema fields, events' string fields), in place.
 * 0, or -1 when one did not resolve (left 0). */
int sp_segments_remap_record(struct sp_segments *s, struct sp_record *rec);
void sp_segments_compact_end(struct sp_segments *s);

/* Definitions (strings, modules, frames, stacks) the master holds. */
uint64_t sp_segments_master_size(const struct sp_segments *s);
/*
 * Whether a compaction is worth it now: the master has grown past twice
 * what the last one kept, plus SP_SEGMENTS_COMPACT_MIN (the cost of one
 * is the live set's size, so it is paid at most once per that many new
 * definitions).
 */
#define SP_SEGMENTS_COMPACT_MIN 4096
bool sp_segments_compact_due(const struct sp_segments *s);

struct sp_segments_stats {
	uint64_t compactions;
	uint64_t dropped;	/* definitions no longer needed, over all compactions */
	uint64_t kept;		/* by the last compaction */
	uint64_t peak;		/* most definitions the master held */
	uint64_t procs, threads, modules;	/* live now: what a new stream replays */
};
void sp_segments_stats(const struct sp_segments *s, struct sp_segments_stats *st);

#endif
