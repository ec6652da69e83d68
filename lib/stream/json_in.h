/* SPDX-License-Identifier: MIT */
/*
 * json_in.h - parses JSON lines into records (internal to the reader).
 * One line may yield several records: definitions a hand-written line implies
 * (a string given as text, a sample given by its frames) come first.
 */
#ifndef STACKPULSE_JSON_IN_H
#define STACKPULSE_JSON_IN_H

#include <stdbool.h>
#include <stddef.h>

#include "defs.h"
#include "record.h"

struct sp_json_in;

struct sp_json_in *sp_json_in_new(void);
void sp_json_in_free(struct sp_json_in *j);

/*
 * Parse one line. The records it yields are added to d and then returned by
 * sp_json_in_next() in order; their bytes stay valid until the next parse.
 * Returns 0, or -1 with a message in *why (a static or internal buffer);
 * nothing is yielded or defined then.
 */
int sp_json_in_parse(struct sp_json_in *j, struct sp_defs *d, const char *line, size_t len,
		     const char **why);
/* The next yielded record, or NULL. */
const struct sp_record *sp_json_in_next(struct sp_json_in *j);

#endif
