/* SPDX-License-Identifier: MIT */
/*
 * annotate.h - the cost of one function by source line, as `perf annotate`
 * gives it by instruction: the samples whose leaf frame is in the function,
 * counted by the line of the function that the leaf address belongs to
 * (from the DWARF line table, as sp-symbolize wrote it into the stream's
 * symbol records). Code of another function inlined into it counts on the
 * line of the call. Printed with the source text when the file is readable
 * (lib/render/annotate.c).
 *
 * Memory: one entry per distinct (file, line) of the function and one per
 * distinct leaf function (for the suggestions when nothing matched).
 */
#ifndef STACKPULSE_ANNOTATE_H
#define STACKPULSE_ANNOTATE_H

#include <stdint.h>
#include <stdio.h>

#include "defs.h"
#include "record.h"

struct sp_annotate;

/* For the function named func (the symbol records' name, demangled). */
struct sp_annotate *sp_annotate_new(const char *func);
void sp_annotate_free(struct sp_annotate *a);
/* Count one sample the caller has chosen (filters and kind are the caller's). */
void sp_annotate_add(struct sp_annotate *a, const struct sp_defs *d, const struct sp_sample *s);
/* Samples whose leaf was in the function, of all samples added. */
uint64_t sp_annotate_matched(const struct sp_annotate *a, uint64_t *total);
/*
 * Write the table (a header, then share, samples, line and source text per
 * line); when no sample matched, warn instead and name the hottest leaf
 * functions. 0, or -1 if out has an error.
 */
int sp_annotate_print(struct sp_annotate *a, FILE *out);

#endif
