/* SPDX-License-Identifier: MIT */
/*
 * segdir.h - a directory of a rotated recording's segments (docs/spool.md):
 * DIR/segment-NNNNNN.sp, the sequence number in decimal, at least six
 * digits, ordered by the number (never by time: clocks jump).
 *
 * The directory and its segments are opened without following links; only
 * names of that exact form count (one spelling per number), everything
 * else in the directory is left alone. A scan reads at most
 * SP_SEGDIR_MAX_NAMES names. A segment that is not a regular file (a link,
 * a FIFO, a directory) is refused without being opened. Nothing is reported
 * here: the reader (reader.c) says what it skips.
 */
#ifndef STACKPULSE_SEGDIR_H
#define STACKPULSE_SEGDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_SEGDIR_MAX_NAMES 100000u	/* names read per scan */
#define SP_SEGDIR_NAME_MAX 32		/* "segment-" 18 digits ".sp" NUL fits */

struct sp_segdir;

/* The sequence number (> 0) of a segment's file name; -1 for any other name. */
int sp_segdir_parse_name(const char *name, uint64_t *seq);
/* The file name of segment seq into buf[SP_SEGDIR_NAME_MAX]. */
void sp_segdir_name(uint64_t seq, char *buf);

/* Open path as a directory of segments; NULL with errno set (ENOTDIR: not
 * a directory, or a symbolic link to one; ELOOP: a symbolic link). */
struct sp_segdir *sp_segdir_open(const char *path);

/* Read the directory again. 0, or -1 with errno set. *cut (may be NULL) is
 * set when it held more than SP_SEGDIR_MAX_NAMES names. */
int sp_segdir_scan(struct sp_segdir *d, bool *cut);
/* Whether the last scan found names that are not segments' (a directory
 * of other files, when it found no segment). */
bool sp_segdir_others(const struct sp_segdir *d);
/* The segments the last scan found, ascending. */
const uint64_t *sp_segdir_list(const struct sp_segdir *d, size_t *n);
/* The smallest segment number of the last scan above after; false if none. */
bool sp_segdir_next(const struct sp_segdir *d, uint64_t after, uint64_t *seq);

/*
 * Open segment seq for reading (blocking reads). -1 with errno set:
 * ENOENT gone; EPERM refused, *why says why (a symbolic link, a FIFO, ...).
 */
int sp_segdir_open_segment(struct sp_segdir *d, uint64_t seq, const char **why);

void sp_segdir_free(struct sp_segdir *d);

#endif
