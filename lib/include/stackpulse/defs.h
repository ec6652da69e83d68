/* SPDX-License-Identifier: MIT */
/*
 * defs.h - the definitions of one record stream (strings, modules, frames,
 * stacks, symbols), kept for the life of the stream, and interning of new
 * ones. A reader keeps one for what it has read, a writer one for what it
 * has written.
 *
 * All returned pointers are owned by the defs. The header, strings and
 * modules (with a module's build-id bytes) stay where they are until
 * sp_defs_reset() or sp_defs_free(); frames, stacks and symbols are kept in
 * arrays that grow: their pointers are valid until the next sp_defs_add().
 * A string is NUL-terminated.
 *
 * Every definition comes from input that nobody vouches for: the defs keep
 * the depth of every stack and at most SP_MAX_INLINE_DEPTH symbols per
 * frame, so that what is derived from a stack or a frame has a bound
 * (docs/spool.md, "Limits").
 */
#ifndef STACKPULSE_DEFS_H
#define STACKPULSE_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct sp_defs;

/*
 * The deepest stack whose frames are used: a deeper one keeps its
 * SP_MAX_STACK_DEPTH innermost frames wherever frames are walked (inline
 * frames of JSON lines, flame graphs, pprof), the way a stack cut by the
 * unwinder keeps its leaf. sp-record writes at most 1024 frames.
 */
#define SP_MAX_STACK_DEPTH	4096
/* Inline levels kept per frame: the innermost ones and the last (the
 * function the code belongs to). sp-symbolize writes at most 32. */
#define SP_MAX_INLINE_DEPTH	64

struct sp_defs *sp_defs_new(void);
void sp_defs_free(struct sp_defs *d);
/* Forget every definition (a new header starts a new stream). */
void sp_defs_reset(struct sp_defs *d);
/*
 * Move every definition of d into a new defs, returned (the caller frees
 * it); d keeps its header and its count of spans only, and gives ids from
 * 1 again. sp-record's flight recorder drops the ids nothing needs any
 * more this way (segments.h, sp_segments_compact_begin()).
 */
struct sp_defs *sp_defs_take(struct sp_defs *d);

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
/* The inline chain of a frame's symbols (innermost first), *n of them (at
 * most SP_MAX_INLINE_DEPTH); NULL if none. */
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
/* A span record's id as read: its own when the stream names it (JSON
 * lines), else implicit (spans are numbered in the order written), the
 * count of spans d has taken, this one the last: call it as the record
 * comes, after the reader added it to d. */
uint64_t sp_defs_span_id(const struct sp_defs *d, const struct sp_span *s);

/*
 * Frames of a stack, leaf first, at most max of them, into frames[] (frame
 * ids). Returns the stack's full depth (which may exceed max; INT_MAX at
 * most), or -1 for an undefined stack. Stack 0 has depth 0. Costs the
 * frames copied, not the depth.
 */
int sp_defs_stack_frames(const struct sp_defs *d, uint64_t stack, uint64_t *frames,
			 unsigned int max);
/* Frames from the root to stack (0 for stack 0 or an undefined stack). */
unsigned int sp_defs_stack_depth(const struct sp_defs *d, uint64_t stack);

/*
 * Limits the definitions added since the last call went past (and forget
 * them): a stack deeper than SP_MAX_STACK_DEPTH, a frame with more than
 * SP_MAX_INLINE_DEPTH symbols. The reader reports them once per input.
 */
#define SP_DEFS_LIMIT_STACK	(1u << 0)
#define SP_DEFS_LIMIT_INLINE	(1u << 1)
unsigned int sp_defs_limits_hit(struct sp_defs *d);

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
