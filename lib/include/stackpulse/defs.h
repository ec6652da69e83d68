/* SPDX-License-Identifier: MIT */
/*
 * defs.h - the definitions of one record stream (strings, modules, frames,
 * stacks, symbols), kept for the life of the stream, and interning of new
 * ones. A reader keeps one for what it has read, a writer one for what it
 * has written.
 *
 * All returned pointers are owned by the defs and stay valid until
 * sp_defs_reset() or sp_defs_free(); a string is NUL-terminated.
 */
#ifndef STACKPULSE_DEFS_H
#define STACKPULSE_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct sp_defs;

struct sp_defs *sp_defs_new(void);
void sp_defs_free(struct sp_defs *d);
/* Forget every definition (a new header starts a new stream). */
void sp_defs_reset(struct sp_defs *d);

/*
 * Take in a record: definitions (header, string, module, frame, stack,
 * symbol, span) are copied and given the next id; other records are ignored.
 * A definition's id in rec, when not 0, must be the next one.
 * Returns 0, or -1 when the record refers to an undefined id (nothing is
 * reported: the caller names the position); *why says which reference.
 */
int sp_defs_add(struct sp_defs *d, const struct sp_record *rec, const char **why);

/* Check that every reference of rec (string, module, frame, stack ids) is
 * defined. 0 or -1 with *why set. */
int sp_defs_check(const struct sp_defs *d, const struct sp_record *rec, const char **why);

const struct sp_header *sp_defs_header(const struct sp_defs *d);	/* NULL before one */
/* String by id; NULL for 0 or an undefined id. *len may be NULL. */
const char *sp_defs_str(const struct sp_defs *d, uint64_t id, size_t *len);
/* As sp_defs_str() but "" instead of NULL. */
const char *sp_defs_strz(const struct sp_defs *d, uint64_t id);
const struct sp_module *sp_defs_module(const struct sp_defs *d, uint64_t id);
const struct sp_frame *sp_defs_frame(const struct sp_defs *d, uint64_t id);
const struct sp_stack *sp_defs_stack(const struct sp_defs *d, uint64_t id);
/* The inline chain of a frame's symbols (innermost first), *n of them; NULL if none. */
const struct sp_symbol *sp_defs_symbols(const struct sp_defs *d, uint64_t frame, unsigned int *n);
/*
 * Whether symbol records are kept for sp_defs_symbols() (default true); a
 * writer of a spool that nobody asks about symbols may turn it off: they are
 * then checked (their frame must exist) but not stored.
 */
void sp_defs_keep_symbols(struct sp_defs *d, bool keep);

uint64_t sp_defs_nstrings(const struct sp_defs *d);
uint64_t sp_defs_nmodules(const struct sp_defs *d);
uint64_t sp_defs_nframes(const struct sp_defs *d);
uint64_t sp_defs_nstacks(const struct sp_defs *d);
uint64_t sp_defs_nspans(const struct sp_defs *d);

/*
 * Frames of a stack, leaf first, at most max of them, into frames[] (frame
 * ids). Returns the stack's full depth (which may exceed max), or -1 for an
 * undefined stack. Stack 0 has depth 0.
 */
int sp_defs_stack_frames(const struct sp_defs *d, uint64_t stack, uint64_t *frames,
			 unsigned int max);

/* Lookups by value: the id of an equal definition, or 0. */
uint64_t sp_defs_find_str(struct sp_defs *d, const char *s, size_t len);
/* Whether string id can be written as its text: valid UTF-8 and the first
 * string with that text (sp_defs_find_str() gives id). Remembered per id. */
bool sp_defs_str_is_text(struct sp_defs *d, uint64_t id);
/* The same, and whether its text needs no JSON escapes (sp_json_plain()). */
enum sp_str_text { SP_STR_ID, SP_STR_TEXT, SP_STR_PLAIN };
enum sp_str_text sp_defs_str_text(struct sp_defs *d, uint64_t id);
uint64_t sp_defs_find_frame(struct sp_defs *d, const struct sp_frame *f);
uint64_t sp_defs_find_stack(struct sp_defs *d, uint64_t parent, uint64_t frame);

/* Drop the memory held for a module's frames' symbols (module retired). */
void sp_defs_retire_module(struct sp_defs *d, uint64_t module);

#endif
