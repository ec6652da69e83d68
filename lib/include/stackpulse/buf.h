/* SPDX-License-Identifier: MIT */
/*
 * buf.h - the growable buffer of bytes and text: JSON lines and spool
 * frames on their way out, paths and messages being put together.
 *
 * Invariants (after git's strbuf.h), true between any two calls:
 *
 *  - A zeroed struct (SP_BUF_INIT) is an empty buffer that has allocated
 *    nothing: p NULL, len 0, cap 0. sp_buf_str() gives "" for it.
 *  - Once anything has been added, p holds cap bytes, len < cap, and
 *    p[len] is NUL: p is a C string of what was added (when that holds no
 *    NUL of its own; len, not strlen(), says how many bytes there are).
 *  - The functions below keep both. Writing straight into p is allowed
 *    after sp_buf_reserve(b, n) (then p[len .. len + n] is free), and ends
 *    with sp_buf_setlen(), which puts the NUL back, before the buffer is
 *    handed on (a writer of many small pieces may move len on by itself
 *    and call it once at the end, as the JSON renderer does).
 *  - p moves when the buffer grows: keep offsets, not pointers into it,
 *    across additions.
 *  - Out of memory is fatal (sp.h): nothing here fails or returns NULL.
 *
 * The owner frees p with sp_buf_release(), or takes it with
 * sp_buf_detach().
 */
#ifndef STACKPULSE_BUF_H
#define STACKPULSE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sp.h"

struct sp_buf {
	char *p;		/* NULL until the first addition */
	size_t len;		/* bytes held, p[len] == 0 */
	size_t cap;		/* bytes allocated at p, 0 or more than len */
};
#define SP_BUF_INIT { 0 }

/* sp_buf_reserve()'s slow path: call that. */
void sp_buf_grow(struct sp_buf *b, size_t more);

/* Room for more bytes after len (and the NUL): p[len .. len + more] is free. */
static inline void sp_buf_reserve(struct sp_buf *b, size_t more)
{
	if (more >= b->cap - b->len)	/* the common case is a compare, not a call */
		sp_buf_grow(b, more);
}

/* Set the length after writing into p, and the NUL: len < cap (reserved). */
static inline void sp_buf_setlen(struct sp_buf *b, size_t len)
{
	b->len = len;
	b->p[len] = 0;
}

/* Empty it, keeping the allocation. */
static inline void sp_buf_reset(struct sp_buf *b)
{
	if (b->cap)
		sp_buf_setlen(b, 0);
}

/* Append s[0..n) (any bytes). */
static inline void sp_buf_add(struct sp_buf *b, const void *s, size_t n)
{
	sp_buf_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	sp_buf_setlen(b, b->len + n);
}

static inline void sp_buf_addch(struct sp_buf *b, char c)
{
	sp_buf_reserve(b, 1);
	b->p[b->len] = c;
	sp_buf_setlen(b, b->len + 1);
}

static inline void sp_buf_puts(struct sp_buf *b, const char *s)
{
	sp_buf_add(b, s, strlen(s));
}

void sp_buf_printf(struct sp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sp_buf_vprintf(struct sp_buf *b, const char *fmt, va_list ap);
/* Append the lowercase hex digits of p[0..n). */
void sp_buf_hex(struct sp_buf *b, const uint8_t *p, size_t n);

/* The contents as a C string: p, or "" before the first addition. */
static inline const char *sp_buf_str(const struct sp_buf *b)
{
	return b->cap ? b->p : "";
}

/* Free p; the buffer is empty (SP_BUF_INIT) again. */
void sp_buf_release(struct sp_buf *b);
/* Take p (malloc()ed, NUL-terminated, never NULL; caller free()s it), its
 * length in *len (may be NULL); the buffer is empty again. */
char *sp_buf_detach(struct sp_buf *b, size_t *len);

/* A new string formatted as printf() does (caller free()s it): asprintf()
 * where out of memory is fatal. */
char *sp_xstrfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
