/* SPDX-License-Identifier: MIT */
/*
 * tail.h - incremental reading of a spool that is still being written.
 *
 * Each complete record is decoded once; a record cut off at the visible end
 * is retried after the writer appends the rest; a file that shrinks is an
 * error. Definitions (sp_tail_defs()) are kept for the reader's life, while
 * the samples of a poll live in storage that the next poll reuses. A poll
 * returns at most SP_TAIL_MAX_BATCH samples and ends early after a process
 * or module retirement, so that a consumer can resolve the batch's samples
 * before it frees what the retirement names; has_more then says another
 * batch is already visible (poll again without waiting).
 */
#ifndef STACKPULSE_TAIL_H
#define STACKPULSE_TAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "record.h"

#define SP_TAIL_MAX_BATCH (16u * 1024)

struct sp_tail;

struct sp_tail_batch {
	const struct sp_sample *samples;	/* valid until the next poll */
	size_t nsamples;
	uint64_t first_module, nmodules;	/* modules defined by this poll */
	uint64_t first_frame, nframes;		/* frames defined by this poll */
	const uint64_t *pids;			/* processes seen in this poll, first-seen order */
	size_t npids;
	const uint64_t *retired_pids;		/* processes that ended */
	size_t nretired_pids;
	const uint64_t *retired_modules;	/* modules gone (their own end, or their process's) */
	size_t nretired_modules;
	bool has_more;				/* another batch is already visible */
	bool ended;				/* the end record was read, or the input is over */
};

/*
 * Open a spool being written at path. With discard, the blocks of records
 * already decoded are punched out of the file (it then cannot be read again
 * from the start). NULL (reported) on failure.
 */
struct sp_tail *sp_tail_open(const char *path, bool discard);
/* Decode what was appended since the last poll. 0, or -1 (reported) for a
 * corrupt or shrunk spool. */
int sp_tail_poll(struct sp_tail *t, struct sp_tail_batch *b);
struct sp_defs *sp_tail_defs(struct sp_tail *t);
/* Times of the header: wall clock and monotonic start, ns. */
const struct sp_header *sp_tail_header(struct sp_tail *t);
/* Free; returns SP_EXIT_OK or SP_EXIT_FATAL. */
int sp_tail_close(struct sp_tail *t);

#endif
