/* SPDX-License-Identifier: MIT */
/*
 * strmap.h - pass a record stream from a reader to a writer while adding
 * strings of one's own.
 *
 * A filter that defines new strings (sp-symbolize's function names) shifts
 * the ids of every later string of its input, since ids are dense and
 * assigned in order of appearance. sp_strmap keeps input id -> output id
 * and rewrites the string references of each record passed on (every field
 * the schema marks as a string reference, and an event's string fields).
 */
#ifndef STACKPULSE_STRMAP_H
#define STACKPULSE_STRMAP_H

#include <stdint.h>

#include "record.h"
#include "writer.h"

struct sp_strmap {
	uint64_t *out;		/* out[input id] = output id */
	size_t n, cap;
};
#define SP_STRMAP_INIT { 0 }

/* Forget the mapping (a header starts a new stream). */
void sp_strmap_reset(struct sp_strmap *m);
void sp_strmap_release(struct sp_strmap *m);

/* Pass an input string record on to w (interned: an equal string already
 * written is reused). 0, or -1 on a write error. */
int sp_strmap_put_string(struct sp_strmap *m, struct sp_writer *w, const struct sp_record *rec);

/*
 * Rewrite the string ids of rec (not a string record) in place to output ids.
 * Returns 0, or -1 when rec refers to a string never passed on (*why set).
 */
int sp_strmap_apply(const struct sp_strmap *m, struct sp_record *rec, const char **why);

#endif
