// SPDX-License-Identifier: MIT
/*
 * Fuzz the escapers of lib/base/escape.c with any bytes, checking the rule of
 * docs/escaping.md rather than only the absence of crashes: the text form
 * has no control byte and no unsafe character, is valid UTF-8 and leads back
 * to the input; cut to a buffer it is a prefix of the whole form ending on a
 * whole character and escape; shown JSON is valid UTF-8 that jansson reads
 * as the text form, exact JSON of valid UTF-8 reads as the input itself; the
 * XML has no character XML 1.0 forbids and no markup but its entities; a
 * FILE gets the same bytes as a buffer. The first input byte picks the
 * buffer size for the cut. Seeds: tests/fuzz/corpus/fuzz-escape/.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

#define MUST(c)	do { if (!(c)) __builtin_trap(); } while (0)

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Every character of t[0..n) valid, safe, and none of the bytes in bad. */
static void check_shown(const char *t, size_t n, const char *bad)
{
	size_t i, k;
	uint32_t cp;

	for (i = 0; i < n; i += k) {
		k = sp_utf8_next(t + i, n - i, &cp);
		MUST(k && !sp_esc_unsafe(cp) && cp != 0);
		MUST(cp >= 0x80 || !strchr(bad, (int)cp));
	}
}

/* The text form's escapes undone equals s (and every "\x" is an escape). */
static void check_leads_back(const char *t, size_t n, const uint8_t *s, size_t len)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++, k++) {
		MUST(k < len);
		if (t[i] == '\\' && i + 1 < n && t[i + 1] == 'x') {
			MUST(i + 3 < n && hexval(t[i + 2]) >= 0 && hexval(t[i + 3]) >= 0);
			MUST(s[k] == hexval(t[i + 2]) * 16 + hexval(t[i + 3]));
			i += 3;
		} else {
			MUST((uint8_t)t[i] == s[k]);
		}
	}
	MUST(k == len);
}

/* Valid UTF-8, NUL bytes allowed. */
static bool valid_utf8(const char *s, size_t n)
{
	size_t i, k;
	uint32_t cp;

	for (i = 0; i < n; i += k)
		if (!(k = sp_utf8_next(s + i, n - i, &cp)))
			return false;
	return true;
}

static char *file_form(const char *s, size_t n, int lang, unsigned int flags, size_t *len)
{
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);

	MUST(m);
	if (lang == 0)
		MUST(sp_esc_text_put(m, s, n, flags) == 0);
	else if (lang == 1)
		MUST(sp_esc_json_put(m, s, n, flags) == 0);
	else
		MUST(sp_esc_xml_put(m, s, n, flags) == 0);
	fclose(m);
	return buf;
}

static void check_json(const char *j, size_t n, const char *want, size_t wlen)
{
	char *lit = malloc(n + 5);
	json_error_t err;
	json_t *v;
	size_t got;

	MUST(lit);
	lit[0] = '[', lit[1] = '"';
	memcpy(lit + 2, j, n);
	memcpy(lit + 2 + n, "\"]", 3);
	v = json_loads(lit, JSON_ALLOW_NUL, &err);
	MUST(v);
	got = json_string_length(json_array_get(v, 0));
	MUST(got == wlen && !memcmp(json_string_value(json_array_get(v, 0)), want, wlen));
	json_decref(v);
	free(lit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + (size ? 1 : 0);
	size_t n = size ? size - 1 : 0, cut = size ? data[0] : 0;
	size_t tlen, len, flen, i;
	char *t, *b, *f;

	/* text, and text for folded stacks */
	tlen = sp_esc_text(NULL, 0, s, n, 0);
	MUST(tlen >= n && tlen <= 4 * n);
	t = malloc(tlen + 1);
	MUST(t);
	MUST(sp_esc_text(t, tlen + 1, s, n, 0) == tlen && strlen(t) == tlen);
	check_shown(t, tlen, "");
	check_leads_back(t, tlen, data + (size ? 1 : 0), n);
	MUST(sp_esc_text_same(s, n, 0) == (tlen == n && !memcmp(t, s, n)));
	f = file_form(s, n, 0, 0, &flen);
	MUST(flen == tlen && !memcmp(f, t, tlen));
	free(f);
	b = malloc(cut + 1);
	MUST(b);
	len = sp_esc_text(b, cut, s, n, 0);
	MUST(len == tlen);
	if (cut) {
		/* a prefix, of whole characters and escapes */
		len = strlen(b);
		MUST(len < cut && !memcmp(b, t, len));
		MUST(sp_esc_text_trim(b, len) == len || (len && b[len - 1] == '\\'));
		check_shown(b, len, "");
		/* vsnprintf() would have cut here: trimming gives whole units
		 * (perhaps less a literal backslash) */
		i = sp_esc_text_trim(t, cut - 1 < tlen ? cut - 1 : tlen);
		check_shown(t, i, "");
		MUST(i <= len && i + 1 >= len);
	}
	free(b);
	len = sp_esc_text(NULL, 0, s, n, SP_ESC_SEMI | SP_ESC_DQUOTE);
	b = malloc(len + 1);
	MUST(b);
	sp_esc_text(b, len + 1, s, n, SP_ESC_SEMI | SP_ESC_DQUOTE);
	check_shown(b, len, ";\"");
	check_leads_back(b, len, data + (size ? 1 : 0), n);
	free(b);

	/* JSON: shown (the text form), exact (valid UTF-8 only) */
	len = sp_esc_json(NULL, 0, s, n, 0);
	b = malloc(len + 1);
	MUST(b);
	sp_esc_json(b, len + 1, s, n, 0);
	check_shown(b, len, "");
	check_json(b, len, t, tlen);
	f = file_form(s, n, 1, 0, &flen);
	MUST(flen == len + 2 && !memcmp(f + 1, b, len));
	free(f);
	free(b);
	len = sp_esc_json(NULL, 0, s, n, SP_ESC_EXACT);
	b = malloc(len + 1);
	MUST(b);
	sp_esc_json(b, len + 1, s, n, SP_ESC_EXACT);
	check_shown(b, len, "");
	if (valid_utf8(s, n))
		check_json(b, len, s, n);
	free(b);

	/* XML: no forbidden character, no markup but the entities */
	len = sp_esc_xml(NULL, 0, s, n, 0);
	b = malloc(len + 1);
	MUST(b);
	sp_esc_xml(b, len + 1, s, n, 0);
	check_shown(b, len, "<>\"");
	for (i = 0; i < len; i++)
		if (b[i] == '&')
			MUST(!strncmp(b + i, "&amp;", 5) || !strncmp(b + i, "&lt;", 4) ||
			     !strncmp(b + i, "&gt;", 4) || !strncmp(b + i, "&quot;", 6));
	f = file_form(s, n, 2, 0, &flen);
	MUST(flen == len && !memcmp(f, b, len));
	free(f);
	free(b);

	/* cutting the input: never inside a valid character, and no shorter */
	i = sp_utf8_cut(s, n, cut);
	MUST(i == n || (i <= cut && i + 3 >= cut));
	for (len = i > 3 ? i - 3 : 0; len < i && i < n; len++) {
		uint32_t cp;

		MUST(len + sp_utf8_next(s + len, n - len, &cp) <= i);
	}
	free(t);
	return 0;
}
