/* SPDX-License-Identifier: MIT */
/*
 * walltime.h - how long a recording lasted, one definition for every tool
 * (sp-tree's header, sp-decode --stats; docs/sp-tree.md): the wall time
 * from the first header's start to the end record; when the last end is a
 * segment's (reason "rotated": the recording goes on in the next segment),
 * to that end, and the tools say it is a segment's; without an end record
 * (a recording cut short, a stream still being written), from its first
 * timed record to its last, and the tools say so.
 */
#ifndef STACKPULSE_WALLTIME_H
#define STACKPULSE_WALLTIME_H

#include <stdint.h>

#include "record.h"

enum sp_walltime_basis {
	SP_WALLTIME_UNKNOWN,		/* nothing to measure: 0 */
	SP_WALLTIME_HEADER_TO_END,	/* the header's start to the end record */
	SP_WALLTIME_FIRST_TO_LAST,	/* no usable end record: first to last record */
	SP_WALLTIME_TO_ROTATION,	/* the header's start to a segment's end */
};

struct sp_walltime {
	uint64_t start_mono;		/* the first header's */
	uint64_t end_time;		/* the last end record's (not a segment's) */
	uint64_t rotated_time;		/* a segment's end, still the last end */
	uint64_t first_time, last_time;	/* of the timed records */
	uint64_t headers;
};

/* Take one record into account (any kind; those without a time are skipped). */
void sp_walltime_add(struct sp_walltime *w, const struct sp_record *rec);
/* The duration in ns, and on what it is based. */
enum sp_walltime_basis sp_walltime_get(const struct sp_walltime *w, uint64_t *ns);
/* What a basis other than HEADER_TO_END means, for a note beside the
 * duration ("" for HEADER_TO_END). */
const char *sp_walltime_note(enum sp_walltime_basis b);

#endif
