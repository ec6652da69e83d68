/* SPDX-License-Identifier: MIT */
/*
 * writer.h - writes a record stream as a spool or as JSON lines.
 *
 * The writer keeps the definitions it has written (sp_writer_defs()) so it
 * can render JSON (strings inline, sample frames inline) and intern new
 * strings, frames and stacks without defining one twice. Records are
 * buffered and reach the output only whole, on sp_writer_flush() or when
 * the buffer fills; a follower therefore never sees half a record unless
 * the disk fills mid-write.
 */
#ifndef STACKPULSE_WRITER_H
#define STACKPULSE_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "defs.h"
#include "record.h"
#include "sp.h"

struct sp_writer;

/* JSON rendering options. */
#define SP_JSON_NO_INLINE_FRAMES	(1u << 0)	/* samples without "frames" */
#define SP_JSON_NO_DEFS			(1u << 1)	/* omit string/frame/stack/symbol lines */

/*
 * Write to the file descriptor fd (not closed by the writer); name is used in
 * messages ("<stdout>"). format is SP_FORMAT_SPOOL or SP_FORMAT_JSON.
 * Returns NULL (reported) on failure.
 */
struct sp_writer *sp_writer_new(int fd, const char *name, enum sp_format format);
void sp_writer_set_json_flags(struct sp_writer *w, unsigned int flags);

/*
 * A writer with no output of its own: it keeps the definitions (ids are
 * given as ever) and hands every record it takes, once checked and
 * defined, to fn, whose -1 fails the put. sp-record's segments and flight
 * window (segments.h) re-encode each record into streams of their own.
 */
typedef int (*sp_writer_tee_fn)(void *ctx, const struct sp_record *rec);
struct sp_writer *sp_writer_new_tee(const char *name, sp_writer_tee_fn fn, void *ctx);
/* Flush, then write to fd from now on (the ids go on). 0 or -1. */
int sp_writer_set_fd(struct sp_writer *w, int fd);

/*
 * Write one record. Definitions get the next id (rec's id field is ignored
 * when 0, must be the next id otherwise). Returns 0, or -1 on a write error
 * (reported once, but for EPIPE: sp_writer_errno(); every later call fails
 * too).
 */
int sp_writer_put(struct sp_writer *w, const struct sp_record *rec);

/* Interning: the id of an equal definition already written, or a new one
 * written now. 0 on a write error. */
uint64_t sp_writer_str(struct sp_writer *w, const char *s, size_t len);
uint64_t sp_writer_strz(struct sp_writer *w, const char *s);	/* NULL -> 0 */
uint64_t sp_writer_frame(struct sp_writer *w, const struct sp_frame *f);
uint64_t sp_writer_stack(struct sp_writer *w, uint64_t parent, uint64_t frame);
/* A whole stack from frame ids, root first: returns the leaf's stack id. */
uint64_t sp_writer_stack_path(struct sp_writer *w, const uint64_t *frames_root_first,
			      unsigned int n);

struct sp_defs *sp_writer_defs(struct sp_writer *w);

/* Hand buffered whole records to the output (end of a batch). 0 or -1. */
int sp_writer_flush(struct sp_writer *w);
/* The errno of the write that failed, 0 if none. A closed pipe (EPIPE,
 * with SIGPIPE blocked or ignored) is not reported by the writer: it is
 * the end of the output, which the caller words as it means it. */
int sp_writer_errno(const struct sp_writer *w);
/* Bytes written so far (including the buffered ones). */
uint64_t sp_writer_bytes(const struct sp_writer *w);
/* Flush and free. 0, or -1 if any write failed. */
int sp_writer_close(struct sp_writer *w);

#endif
