// SPDX-License-Identifier: MIT
/*
 * Folded text (docs/sp-flame.md), the format of FlameGraph's
 * stackcollapse scripts: one stack a line, frames separated by ';', then
 * the weight. Read in (sp-flame takes folded files as input, \xHH escapes
 * undone) and written out (names in their text form, ';' escaped).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "foldedP.h"
#include "sp.h"

static unsigned int guess_kind(const char *s, size_t len)
{
	if (len > 4 && s[len - 4] == '_' && s[len - 3] == '[' && s[len - 1] == ']') {
		switch (s[len - 2]) {
		case 'k':
			return SP_FN_KERNEL;
		case 'i':
			return SP_FN_INLINE;
		case 'j':
			return SP_FN_JIT;
		}
	}
	if ((len > 2 && s[0] == '0' && s[1] == 'x') || memchr(s, '+', len) ||
	    (len && s[0] == '['))
		return SP_FN_UNKNOWN;
	return SP_FN_USER;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* p[0..len) with its \xHH escapes undone (escape.h) into buf; the length. */
static size_t unescape(char *buf, const char *p, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		if (p[i] == '\\' && i + 3 < len && p[i + 1] == 'x' && hexval(p[i + 2]) >= 0 &&
		    hexval(p[i + 3]) >= 0) {
			buf[n++] = hexval(p[i + 2]) * 16 + hexval(p[i + 3]);
			i += 3;
		} else {
			buf[n++] = p[i];
		}
	}
	return n;
}

/* A frame of folded text, its escapes undone. */
static uint32_t intern_escaped(struct sp_folded *f, const char *p, size_t len)
{
	char small[1024], *buf;
	size_t n;
	uint32_t id;

	if (!memchr(p, '\\', len))
		return sp_folded_intern(f, p, len, guess_kind(p, len));
	if (len <= sizeof(small)) {
		n = unescape(small, p, len);
		return sp_folded_intern(f, small, n, guess_kind(small, n));
	}
	buf = sp_xmalloc(len);
	n = unescape(buf, p, len);
	id = sp_folded_intern(f, buf, n, guess_kind(buf, n));
	free(buf);
	return id;
}

int sp_folded_add_line(struct sp_folded *f, const char *line, size_t len)
{
	const char *sp, *p, *end, *semi;
	uint64_t w = 0;
	uint32_t node = 0;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	for (sp = line + len; sp > line && sp[-1] != ' '; sp--)
		;
	if (sp == line || sp == line + len)
		return -1;
	for (p = sp; p < line + len; p++) {
		if (*p < '0' || *p > '9' || w > UINT64_MAX / 10 - 10)
			return -1;
		w = w * 10 + (*p - '0');
	}
	end = sp - 1;
	while (end > line && end[-1] == ' ')
		end--;
	for (p = line; p < end; p = semi + 1) {
		semi = memchr(p, ';', end - p);
		if (!semi)
			semi = end;
		if (semi > p)
			node = sp_folded_child(f, node, intern_escaped(f, p, semi - p));
	}
	if (!node)
		return -1;
	sp_folded_count(f, 0, node, w);
	f->st.samples[f->col] += w;
	f->st.weight[f->col] += w;
	return 0;
}

int sp_folded_put_name(FILE *out, const char *name)
{
	return sp_esc_text_put(out, name, strlen(name), SP_ESC_SEMI);
}

int sp_folded_print(const struct sp_folded *f, const struct sp_flame_paths *p, FILE *out,
		    bool two_columns)
{
	size_t i;
	uint32_t d;

	for (i = 0; i < p->n; i++) {
		const struct sp_flame_path *x = &p->v[i];

		for (d = 0; d < x->depth; d++) {
			if (d)
				putc(';', out);
			sp_folded_put_name(out, sp_folded_name(f, x->names[d], NULL));
		}
		if (two_columns)
			fprintf(out, " %" PRIu64 " %" PRIu64 "\n", x->w[0], x->w[1]);
		else
			fprintf(out, " %" PRIu64 "\n", x->w[0]);
		if (ferror(out))
			return -1;
	}
	return 0;
}
