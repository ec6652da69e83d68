// SPDX-License-Identifier: MIT
/*
 * Others' strings in outputs (escape.h, docs/escaping.md): the UTF-8
 * scanner, and the text, JSON and XML escapers, all one loop over it. A run
 * of bytes that needs nothing is copied at once; everything else goes
 * through the scanner, so the three languages cannot disagree on what is
 * valid or unsafe.
 */
#include <string.h>

#include "escape.h"

size_t sp_utf8_next(const char *str, size_t n, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c;
	size_t len, i;
	uint32_t v;

	if (!n)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, v = c & 0x07;
	else
		return 0;	/* a continuation byte, an overlong 0xc0/0xc1, or 0xf5.. */
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
	    (len == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;	/* overlong, a surrogate, or beyond U+10FFFF */
	*cp = v;
	return len;
}

bool sp_utf8_valid(const char *s, size_t n)
{
	size_t i = 0, k;
	uint32_t cp;

	while (i < n) {
		if ((unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		k = sp_utf8_next(s + i, n - i, &cp);
		if (!k || !cp)
			return false;
		i += k;
	}
	return true;
}

size_t sp_utf8_cut(const char *s, size_t n, size_t max)
{
	size_t lead;
	uint32_t cp;

	if (n <= max)
		return n;
	/* s[max] continues a sequence begun at most 3 bytes before it? */
	for (lead = max; lead > 0 && max - lead < 3 && ((unsigned char)s[lead] & 0xc0) == 0x80;
	     lead--)
		;
	if (lead < max && sp_utf8_next(s + lead, n - lead, &cp) > max - lead)
		return lead;
	return max;
}

bool sp_esc_unsafe(uint32_t cp)
{
	if (cp < 0x2000)
		return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c;
	return cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfffe || cp == 0xffff;
}

/* ---- where the form goes: a buffer (snprintf-like) or a FILE ---- */

struct sink {
	char *p;		/* the buffer, size bytes */
	size_t size;
	size_t len;		/* the whole form's length so far */
	size_t kept;		/* bytes in p */
	bool cut;		/* something did not fit: nothing more goes to p */
	FILE *f;		/* or the file, through buf */
	char *buf;
	size_t blen;
};

#define SINK_BUF	512

static void sink_flush(struct sink *o)
{
	if (o->blen)
		fwrite(o->buf, 1, o->blen, o->f);
	o->blen = 0;
}

/* Bytes of one unit (a character, an escape): whole or not at all. */
static void put(struct sink *o, const void *s, size_t n)
{
	o->len += n;
	if (o->f) {
		if (o->blen + n > SINK_BUF) {
			sink_flush(o);
			if (n > SINK_BUF) {
				fwrite(s, 1, n, o->f);
				return;
			}
		}
		memcpy(o->buf + o->blen, s, n);
		o->blen += n;
		return;
	}
	if (o->cut)
		return;
	if (o->kept + n >= o->size) {
		o->cut = true;
		return;
	}
	memcpy(o->p + o->kept, s, n);
	o->kept += n;
}

/* A run of ASCII bytes, each a unit of its own: as many as fit. */
static void put_run(struct sink *o, const void *s, size_t n)
{
	size_t room;

	if (o->f || o->cut || o->kept + n < o->size) {
		put(o, s, n);
		return;
	}
	room = o->size ? o->size - 1 - o->kept : 0;
	if (room) {
		memcpy(o->p + o->kept, s, room);
		o->kept += room;
	}
	o->len += n;
	o->cut = true;
}

static size_t sink_end(struct sink *o)
{
	if (o->f)
		sink_flush(o);
	else if (o->size)
		o->p[o->kept] = '\0';
	return o->len;
}

/* ---- the one loop ---- */

enum lang { L_TEXT, L_JSON, L_XML };

static const char hexd[] = "0123456789abcdef";

/* Bytes copied as they are, by language (ASCII only: the rest is scanned). */
static const bool plain_text[256] = {
	[0x20 ... 0x5b] = true, [0x5d ... 0x7e] = true,			/* not '\\' */
};
static const bool plain_text_semi[256] = {
	[0x20 ... 0x3a] = true, [0x3c ... 0x5b] = true, [0x5d ... 0x7e] = true,	/* ';' */
};
static const bool plain_text_dq[256] = {	/* and JSON: not '"', '\\' */
	[0x20 ... 0x21] = true, [0x23 ... 0x5b] = true, [0x5d ... 0x7e] = true,
};
static const bool plain_text_semi_dq[256] = {
	[0x20 ... 0x21] = true, [0x23 ... 0x3a] = true, [0x3c ... 0x5b] = true,
	[0x5d ... 0x7e] = true,
};
static const bool plain_xml[256] = {	/* not '"', '&', '<', '>', '\\' */
	[0x20 ... 0x21] = true, [0x23 ... 0x25] = true, [0x27 ... 0x3b] = true,
	[0x3d] = true, [0x3f ... 0x5b] = true, [0x5d ... 0x7e] = true,
};

static const bool *plain_table(enum lang lang, unsigned int flags)
{
	switch (lang) {
	case L_JSON:
		return plain_text_dq;
	case L_XML:
		return plain_xml;
	default:
		switch (flags & (SP_ESC_SEMI | SP_ESC_DQUOTE)) {
		case SP_ESC_SEMI:
			return plain_text_semi;
		case SP_ESC_DQUOTE:
			return plain_text_dq;
		case SP_ESC_SEMI | SP_ESC_DQUOTE:
			return plain_text_semi_dq;
		default:
			return plain_text;
		}
	}
}

/* "\xHH" of byte c; in JSON (display) the backslash doubled: "\\xHH". */
static void put_xhh(struct sink *o, unsigned char c, enum lang lang)
{
	char e[5] = { '\\', '\\', 'x', hexd[c >> 4], hexd[c & 15] };

	if (lang == L_JSON)
		put(o, e, 5);
	else
		put(o, e + 1, 4);
}

/* A JSON escape of code point cp (all unsafe ones are in the BMP). */
static void put_json_u(struct sink *o, uint32_t cp)
{
	char e[6] = { '\\', 'u', hexd[(cp >> 12) & 15], hexd[(cp >> 8) & 15],
		      hexd[(cp >> 4) & 15], hexd[cp & 15] };

	switch (cp) {
	case '\n':
		put(o, "\\n", 2);
		break;
	case '\r':
		put(o, "\\r", 2);
		break;
	case '\t':
		put(o, "\\t", 2);
		break;
	default:
		put(o, e, 6);
		break;
	}
}

/* ASCII c at s[i] (n bytes in all) that is not plain in lang. */
static void put_special(struct sink *o, const unsigned char *s, size_t i, size_t n,
			enum lang lang, unsigned int flags)
{
	unsigned char c = s[i];
	bool exact = lang != L_TEXT && (flags & SP_ESC_EXACT);

	if (c == '\\') {
		if (exact)
			put(o, lang == L_JSON ? "\\\\" : "\\", lang == L_JSON ? 2 : 1);
		else if (i + 1 < n && s[i + 1] == 'x')
			put_xhh(o, c, lang);
		else if (lang == L_JSON)
			put(o, "\\\\", 2);
		else
			put(o, "\\", 1);
		return;
	}
	if (c < 0x20 || c == 0x7f) {
		if (exact && lang == L_JSON)
			put_json_u(o, c);
		else
			put_xhh(o, c, lang);
		return;
	}
	if (lang == L_JSON) {		/* '"' */
		put(o, "\\\"", 2);
		return;
	}
	if (lang == L_XML) {
		switch (c) {
		case '&': put(o, "&amp;", 5); return;
		case '<': put(o, "&lt;", 4); return;
		case '>': put(o, "&gt;", 4); return;
		default: put(o, "&quot;", 6); return;
		}
	}
	put_xhh(o, c, lang);		/* ';' or '"' asked for */
}

static size_t escape(struct sink *o, const char *str, size_t n, enum lang lang,
		     unsigned int flags)
{
	const unsigned char *s = (const unsigned char *)str;
	const bool *plain = plain_table(lang, flags);
	size_t i = 0, k, j;
	uint32_t cp;

	while (i < n) {
		if (plain[s[i]]) {
			for (k = i + 1; k < n && plain[s[k]]; k++)
				;
			put_run(o, s + i, k - i);
			i = k;
			continue;
		}
		if (s[i] < 0x80) {
			put_special(o, s, i, n, lang, flags);
			i++;
			continue;
		}
		k = sp_utf8_next(str + i, n - i, &cp);
		if (k && !sp_esc_unsafe(cp)) {
			put(o, s + i, k);
		} else if (k && lang == L_JSON && (flags & SP_ESC_EXACT)) {
			put_json_u(o, cp);
		} else {
			/* each byte: "\xc2\x85" leads back to the bytes */
			if (!k)
				k = 1;
			for (j = 0; j < k; j++)
				put_xhh(o, s[i + j], lang);
		}
		i += k;
	}
	return sink_end(o);
}

static size_t to_buf(char *dst, size_t size, const char *s, size_t n, enum lang lang,
		     unsigned int flags)
{
	struct sink o = { .p = dst, .size = dst ? size : 0 };

	return escape(&o, s, n, lang, flags);
}

static int to_file(FILE *out, const char *s, size_t n, enum lang lang, unsigned int flags)
{
	char buf[SINK_BUF];
	struct sink o = { .f = out, .buf = buf };

	escape(&o, s, n, lang, flags);
	return ferror(out) ? -1 : 0;
}

/* ---- the three languages ---- */

size_t sp_esc_text(char *dst, size_t size, const char *s, size_t n, unsigned int flags)
{
	return to_buf(dst, size, s, n, L_TEXT, flags & ~SP_ESC_EXACT);
}

bool sp_esc_text_same(const char *str, size_t n, unsigned int flags)
{
	const unsigned char *s = (const unsigned char *)str;
	const bool *plain = plain_table(L_TEXT, flags);
	size_t i = 0, k;
	uint32_t cp;

	while (i < n) {
		if (plain[s[i]]) {
			i++;
			continue;
		}
		if (s[i] == '\\' && !(i + 1 < n && s[i + 1] == 'x')) {
			i++;
			continue;
		}
		if (s[i] < 0x80)
			return false;
		k = sp_utf8_next(str + i, n - i, &cp);
		if (!k || sp_esc_unsafe(cp))
			return false;
		i += k;
	}
	return true;
}

int sp_esc_text_put(FILE *out, const char *s, size_t n, unsigned int flags)
{
	return to_file(out, s, n, L_TEXT, flags & ~SP_ESC_EXACT);
}

size_t sp_esc_text_trim(const char *t, size_t n)
{
	const unsigned char *s = (const unsigned char *)t;
	size_t lead, k;
	uint32_t cp;

	/* a character cut short: its lead byte and what follows go */
	for (lead = n; lead > 0 && n - lead < 3 && (s[lead - 1] & 0xc0) == 0x80; lead--)
		;
	if (lead > 0 && s[lead - 1] >= 0xc0) {
		k = sp_utf8_next(t + lead - 1, n - lead + 1, &cp);
		if (!k)
			n = lead - 1;
	}
	/* an escape cut short: "\", "\x", "\xH" */
	for (k = 1; k <= 3 && k <= n; k++) {
		if (s[n - k] != '\\')
			continue;
		if (k == 1 || s[n - k + 1] == 'x')
			return n - k;
		break;
	}
	return n;
}

size_t sp_esc_json(char *dst, size_t size, const char *s, size_t n, unsigned int flags)
{
	return to_buf(dst, size, s, n, L_JSON, flags & SP_ESC_EXACT);
}

int sp_esc_json_put(FILE *out, const char *s, size_t n, unsigned int flags)
{
	putc('"', out);
	to_file(out, s, n, L_JSON, flags & SP_ESC_EXACT);
	putc('"', out);
	return ferror(out) ? -1 : 0;
}

size_t sp_esc_xml(char *dst, size_t size, const char *s, size_t n, unsigned int flags)
{
	return to_buf(dst, size, s, n, L_XML, flags & SP_ESC_EXACT);
}

int sp_esc_xml_put(FILE *out, const char *s, size_t n, unsigned int flags)
{
	return to_file(out, s, n, L_XML, flags & SP_ESC_EXACT);
}
