/* SPDX-License-Identifier: MIT */
/*
 * flight.h - sp-record's output as a directory (-o DIR): rotated segment
 * files, or, with --flight, a window of the most recent records kept in
 * memory and written out as a dump when something fires
 * (docs/flight-recorder.md).
 *
 * Both cut the recording into self-contained streams (segments.h): a
 * segment file, or a chunk of the window (a memfd). The window is a ring of
 * chunks: the oldest goes whole when the window is over its size or its
 * time, and the records it held are counted. A dump is the chunks in order,
 * a lost record (what "window") when older records were dropped, and an end
 * record (reason "trigger") naming what fired; no end record between the
 * chunks.
 *
 * The directory is ours alone: opened without following a symlink, refused
 * when another user owns it or others may write in it; every file is
 * created exclusively (0600) and deleted relative to it.
 */
#ifndef STACKPULSE_FLIGHT_H
#define STACKPULSE_FLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "defs.h"
#include "record.h"
#include "sp.h"

struct sp_flight_opts {
	const char *dir;		/* -o DIR (NULL: not a directory output) */
	/* Without a directory: one output (a file or a pipe, the caller's)
	 * that gets a new stream when the id space has grown past
	 * SP_FLIGHT_RESTREAM_DEFS (below). */
	int out_fd;
	const char *out_name;
	enum sp_format out_format;
	uint64_t segment_bytes;		/* --segment: rotate past this size */
	uint64_t segment_ns;		/* ... or this long; 0 = no bound */
	unsigned int keep;		/* --keep: files kept, 0 = every one */
	bool flight;			/* --flight: keep a window, dump on triggers */
	uint64_t window_bytes;		/* its bounds (a size is always set) */
	uint64_t window_ns;		/* 0 = by size only */
	uint64_t after_ns;		/* --flight-after */
	uint64_t interval_ns;		/* --dump-interval */
};

#define SP_FLIGHT_DEFAULT_SEGMENT	(64ull << 20)
#define SP_FLIGHT_DEFAULT_KEEP		16
/* A window given by time alone still has a size bound. */
#define SP_FLIGHT_DEFAULT_WINDOW	(256ull << 20)
#define SP_FLIGHT_DEFAULT_AFTER		2000000000ull
#define SP_FLIGHT_DEFAULT_INTERVAL	10000000000ull

/*
 * One output: definitions (strings, modules, frames, stacks) the sources'
 * id space may hold before the recording goes on in a new stream of the
 * same output, which lets the old ones go (segments.h). Some 50 MB of
 * sp-record's memory at most (each definition is kept twice, by the id
 * space and by the stream's writer); a recording of a whole busy machine
 * for ten minutes defines about a tenth of it. Without this, a recorded
 * process that renames a thread or maps a file in a loop grows root's
 * sp-record without bound (docs/security.md).
 */
#define SP_FLIGHT_RESTREAM_DEFS		(1ull << 17)

/*
 * One LIMIT of --flight or --segment: a size ("64M", "512K", "1G", "4096B":
 * upper-case units) into *bytes, or a duration ("10m", "30s") into *ns.
 * 0, or -1 when it is neither (or 0).
 */
int sp_flight_parse_limit(const char *s, uint64_t *bytes, uint64_t *ns);

/* The directory: opened (created 0700 when the path ends in '/') and
 * checked. Its descriptor, or -1 (reported). */
int sp_outdir_open(const char *path);

struct sp_flight;

/* NULL (reported) when the directory will not do. master: the definitions
 * of the writer whose records sp_flight_put() takes. Without o->dir, the
 * streams go one after the other to o->out_fd (left open: the caller's). */
struct sp_flight *sp_flight_new(const struct sp_flight_opts *o, const struct sp_defs *master);
void sp_flight_free(struct sp_flight *f);
/* A record of the master stream (a tee writer's function, writer.h). */
int sp_flight_put(void *flight, const struct sp_record *rec);
/* The first stream, once the header is in the master. 0 or -1. */
int sp_flight_begin(struct sp_flight *f, uint64_t now);
/* End of a batch: flush; rotate, drop the window's oldest chunks, write a
 * dump that is due. sofar: the recording's counts, for end records. 0, or
 * -1 when the output failed (a dump that fails does not fail this). */
int sp_flight_batch(struct sp_flight *f, uint64_t now, const struct sp_end *sofar);
/* When the dump to come is due (CLOCK_MONOTONIC ns): the loop makes a
 * batch then, without waiting for the next one; UINT64_MAX when none is
 * (or the previous one is still being written). */
uint64_t sp_flight_due(const struct sp_flight *f);
/* Something fired: a dump after the aftermath time, rate-limited. */
void sp_flight_fire(struct sp_flight *f, const char *trigger, const char *detail, uint64_t mono);
/* The recording is over: a pending dump is written now; the last segment
 * (its end record already put) flushed and closed. 0 or -1. */
int sp_flight_finish(struct sp_flight *f, uint64_t now, const struct sp_end *sofar);
/* Bytes in files written (segments, dumps); with one output, its offset
 * past what was written and flushed (where it started included). */
uint64_t sp_flight_bytes(const struct sp_flight *f);
/* The errno of the output's last failed write (EPIPE: its reader went). */
int sp_flight_errno(const struct sp_flight *f);
bool sp_flight_is_window(const struct sp_flight *f);
/*
 * The boundary hook: streams (chunks, segments) started so far, and the
 * segments behind them. A new stream is where the recorder compacts the
 * sources' id space (segments.h), between two batches.
 */
uint64_t sp_flight_streams(const struct sp_flight *f);
struct sp_segments *sp_flight_segments(struct sp_flight *f);

#endif
