/* SPDX-License-Identifier: MIT */
/*
 * symstream.h - rewrite a record stream with a symbol record after each
 * frame, as sp-symbolize writes it.
 *
 * Each input record goes to sp_symstream_put(): it is passed on to the
 * writer (its string references rewritten, see strmap.h) and followed, for a
 * frame, by one SP_REC_SYMBOL per level of its inline chain, innermost
 * first. Consecutive frames are held back (up to a batch) and looked up in
 * address order, then written in their own order; a frame the symbolizer
 * cannot resolve yet (kernel, JIT: sp_symbolizer_should_defer()) waits
 * until its process ends, the stream ends or a new header comes. A stream
 * whose header says it is symbolized already is passed through unchanged,
 * unless opts.force (then its symbol records are dropped and ours written).
 *
 * The stream borrows the symbolizer and the writer; both must outlive it.
 */
#ifndef STACKPULSE_SYMSTREAM_H
#define STACKPULSE_SYMSTREAM_H

#include <stdbool.h>

#include "reader.h"
#include "record.h"
#include "symbolize.h"
#include "writer.h"

struct sp_symstream_opts {
	bool force;		/* symbolize a symbolized stream again */
};

struct sp_symstream;

/* Returns a new stream writing to w (never NULL: out of memory is fatal, as
 * for sp_xcalloc()); caller sp_symstream_free()s it. */
struct sp_symstream *sp_symstream_new(struct sp_symbolizer *sym, struct sp_writer *w,
				      const struct sp_symstream_opts *opts);

/*
 * Pass one record of in on (rec is rewritten in place). A record referring
 * to a string never defined is reported with sp_reader_skipped() and
 * dropped. Returns 0, or -1 on a write error (reported by the writer).
 */
int sp_symstream_put(struct sp_symstream *s, struct sp_reader *in, struct sp_record *rec);

/* Write the held-back batch of frames (at a batch boundary of the input).
 * 0, or -1 on a write error. */
int sp_symstream_flush(struct sp_symstream *s);

/* At the end of the input: write the batch, then the symbols of every frame
 * still waiting for its own. 0, or -1 on a write error. */
int sp_symstream_finish(struct sp_symstream *s);

/* NULL is a no-op. Does not write what is held back: call finish first. */
void sp_symstream_free(struct sp_symstream *s);

#endif
