/* SPDX-License-Identifier: MIT */
/*
 * reader.h - reads record streams from files, pipes or stdin, spool or JSON
 * lines (told apart by the first bytes of each input).
 *
 * Errors are reported on stderr with the input's name and byte offset (spool)
 * or line number (JSON) and change the status that sp_reader_close() returns:
 * a corrupt or truncated spool ends that input (FATAL); a bad JSON line is
 * skipped (PARTIAL); an unknown record kind is passed on as SP_REC_KIND_MAX
 * (PARTIAL for tools that drop it, see sp_reader_skipped()).
 *
 * One corrupt record can leave thousands after it referring to what it
 * defined: of the records skipped or passed on undecoded, the first
 * SP_READER_SAID of each kind of diagnostic (a reference to an undefined
 * definition, any other, an unknown kind) are said one by one in each
 * input, the rest counted (sp_tally, sp.h), and their number said in one
 * line when the input ends: "<name>: N more ... (first at <name>@<pos>)".
 * The status is PARTIAL all the same.
 */
#ifndef STACKPULSE_READER_H
#define STACKPULSE_READER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "defs.h"
#include "record.h"
#include "sp.h"

struct sp_reader;

/* Diagnostics of one kind said one by one per input (see above). */
#define SP_READER_SAID 5

/* Open paths[0..n) in turn ("-" or n == 0: stdin). NULL (reported) on failure
 * to open the first input; later inputs that fail to open are reported and
 * skipped (FATAL status). */
struct sp_reader *sp_reader_open(char **paths, int n);
/* Read an already open descriptor (not closed by the reader). */
struct sp_reader *sp_reader_open_fd(int fd, const char *name);

/*
 * Follow growing regular files: at the end of the file, wait for the writer
 * to append (a record cut off at the end is retried, not an error) until an
 * SP_REC_END record is read, sp_reader_stop() is called, or the file shrinks
 * (an error). With discard, punch holes in the consumed prefix of the file.
 */
void sp_reader_follow(struct sp_reader *r, bool follow, bool discard);
/* Async-signal-safe: make a following reader return 0 at the next wait. */
void sp_reader_stop(struct sp_reader *r);
/*
 * Before following paths[0..n): wait while a named one does not exist yet
 * (its writer, started a moment before, has not created it), said once
 * after a second; false when *stop was set meanwhile (a signal).
 */
bool sp_reader_await(char **paths, int n, const volatile sig_atomic_t *stop);

/*
 * Next record into *rec (its sp_bytes point into the reader's buffer until
 * the next call). Definitions are taken into sp_reader_defs() before the
 * record is returned. Returns 1, 0 at the end of all inputs, -1 after a
 * fatal error in the last input (already reported).
 */
int sp_reader_next(struct sp_reader *r, struct sp_record *rec);

/*
 * As sp_reader_next() but never waits: returns 0 when no complete record is
 * visible now. *at_end tells whether the input is over (end of a pipe, an
 * end record, an error) or more may be appended to the file later. A record
 * cut off at the visible end of a regular file is retried on the next call.
 */
int sp_reader_poll(struct sp_reader *r, struct sp_record *rec, bool *at_end);

/* Definitions of the stream being read. */
struct sp_defs *sp_reader_defs(struct sp_reader *r);
/* Name of the input being read ("<stdin>" for stdin). */
const char *sp_reader_name(const struct sp_reader *r);
/* SP_FORMAT_SPOOL or SP_FORMAT_JSON for the input being read. */
enum sp_format sp_reader_format(const struct sp_reader *r);
/* Bytes of input consumed so far, over all inputs. */
uint64_t sp_reader_bytes(const struct sp_reader *r);
/* True if more input is already buffered or visible (a batch boundary hint). */
bool sp_reader_more_available(struct sp_reader *r);

/* Report a record the caller could not use ("<name>@<pos>: <msg>") and mark
 * the status PARTIAL. Said one by one for the first few, then counted (see
 * above): a msg with "an undefined " is of the references' kind. */
void sp_reader_skipped(struct sp_reader *r, const struct sp_record *rec, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Free; returns SP_EXIT_OK, SP_EXIT_PARTIAL or SP_EXIT_FATAL. */
int sp_reader_close(struct sp_reader *r);

#endif
