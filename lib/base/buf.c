// SPDX-License-Identifier: MIT
/*
 * The growable buffer (buf.h): everything that is not small enough to be
 * inline there, and sp_xstrfmt(), which builds its string in one.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "buf.h"

void sp_buf_grow(struct sp_buf *b, size_t more)
{
	if (more > SIZE_MAX - b->len - 1)
		sp_die("out of memory (%zu + %zu bytes)", b->len, more);
	sp_grow(&b->p, &b->cap, b->len + more + 1, 1);
	b->p[b->len] = 0;	/* the first allocation's NUL */
}

void sp_buf_vprintf(struct sp_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	sp_buf_reserve(b, 64);
	va_copy(again, ap);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	if (n < 0) {
		va_end(again);
		b->p[b->len] = 0;
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		sp_buf_reserve(b, n);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
	}
	va_end(again);
	sp_buf_setlen(b, b->len + n);
}

void sp_buf_printf(struct sp_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sp_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void sp_buf_hex(struct sp_buf *b, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	if (n > SIZE_MAX / 2)
		sp_die("out of memory (2 x %zu bytes)", n);
	sp_buf_reserve(b, 2 * n);
	for (i = 0; i < n; i++) {
		b->p[b->len + 2 * i] = digits[p[i] >> 4];
		b->p[b->len + 2 * i + 1] = digits[p[i] & 15];
	}
	sp_buf_setlen(b, b->len + 2 * n);
}

void sp_buf_release(struct sp_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

char *sp_buf_detach(struct sp_buf *b, size_t *len)
{
	char *p;

	sp_buf_reserve(b, 0);	/* an empty buffer gives "" too */
	p = b->p;
	if (len)
		*len = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

char *sp_xstrfmt(const char *fmt, ...)
{
	struct sp_buf b = SP_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sp_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	return sp_buf_detach(&b, NULL);
}
