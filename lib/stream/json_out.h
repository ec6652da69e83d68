/* SPDX-License-Identifier: MIT */
/* json_out.h - renders one record as a JSON line (internal to the writer). */
#ifndef STACKPULSE_JSON_OUT_H
#define STACKPULSE_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "defs.h"
#include "escape.h"
#include "record.h"

/* Append s[0..n), valid UTF-8, as a JSON string literal (quotes included)
 * that a reader gets back exactly: sp_esc_json(SP_ESC_EXACT) of escape.h. */
void sp_buf_json_str(struct sp_buf *b, const char *s, size_t n);
/* Append the text form of s[0..n) (escape.h) as a JSON string literal: for
 * strings shown rather than carried. */
void sp_buf_json_text(struct sp_buf *b, const char *s, size_t n);
/* True if s[0..n) goes into a JSON string as it is: printable ASCII (no DEL),
 * no '"' or '\\'. */
bool sp_json_plain(const char *s, size_t n);

/* Append rec as one JSON line (with its newline), using d for strings and
 * inline frames. flags: SP_JSON_* of writer.h, or SP_JSON_GENERIC: every
 * kind through the schema (tests compare the unrolled renderers with it). */
#define SP_JSON_GENERIC		(1u << 30)
void sp_json_render(struct sp_buf *b, const struct sp_defs *d, const struct sp_record *rec,
		    unsigned int flags);

#endif
