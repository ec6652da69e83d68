// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/base/escape.c: every class of byte and sequence in each
 * output language, cutting to a buffer, and exhaustive checks that the text
 * form has no control character, is valid UTF-8 and leads back to the bytes.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "tap.h"

static char out[4096];

static const char *text_f(const char *s, size_t n, unsigned int flags)
{
	size_t len = sp_esc_text(out, sizeof(out), s, n, flags);

	CHECK_EQ_U(len, strlen(out));
	CHECK_EQ_U(len, sp_esc_text(NULL, 0, s, n, flags));
	CHECK(sp_esc_text_same(s, n, flags) == (len == n && !memcmp(out, s, n)));
	return out;
}

static const char *text(const char *s)
{
	return text_f(s, strlen(s), 0);
}

static const char *json_f(const char *s, size_t n, unsigned int flags)
{
	size_t len = sp_esc_json(out, sizeof(out), s, n, flags);

	CHECK_EQ_U(len, strlen(out));
	return out;
}

static const char *xml_f(const char *s, size_t n, unsigned int flags)
{
	size_t len = sp_esc_xml(out, sizeof(out), s, n, flags);

	CHECK_EQ_U(len, strlen(out));
	return out;
}

#define TEXT_N(lit)	text_f(lit, sizeof(lit) - 1, 0)
#define JSON(lit)	json_f(lit, sizeof(lit) - 1, 0)
#define JSON_EXACT(lit)	json_f(lit, sizeof(lit) - 1, SP_ESC_EXACT)
#define XML(lit)	xml_f(lit, sizeof(lit) - 1, 0)

/* "\xHH" escapes undone: the bytes a text form shows. */
static size_t unescape(const char *t, size_t n, char *dst)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (t[i] == '\\' && i + 3 < n && t[i + 1] == 'x') {
			dst[k++] = (char)strtol((char[]){ t[i + 2], t[i + 3], 0 }, NULL, 16);
			i += 3;
		} else {
			dst[k++] = t[i];
		}
	}
	return k;
}

static bool has_control(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			return true;
	return false;
}

/* UTF-8 of cp (no checks): its length. */
static size_t enc(uint32_t cp, char *b)
{
	if (cp < 0x80) {
		b[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = 0xc0 | cp >> 6, b[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = 0xe0 | cp >> 12, b[1] = 0x80 | ((cp >> 6) & 0x3f), b[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	b[0] = 0xf0 | cp >> 18, b[1] = 0x80 | ((cp >> 12) & 0x3f);
	b[2] = 0x80 | ((cp >> 6) & 0x3f), b[3] = 0x80 | (cp & 0x3f);
	return 4;
}

static void test_escape_printable_unchanged(void)
{
	static const char ascii[] = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		"[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

	CHECK_STR(text(ascii), ascii);
	CHECK_STR(text("café 漢字 😀 ñ ü Ω \xc2\xa0nbsp"), "café 漢字 😀 ñ ü Ω \xc2\xa0nbsp");
	CHECK_STR(text("/usr/lib/x86_64-linux-gnu/libc.so.6"), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_STR(text("std::vector<int>::push_back(int const&)"),
		  "std::vector<int>::push_back(int const&)");
	CHECK_STR(text(""), "");
	CHECK(sp_esc_text_same("Foo#bar é", 10, 0));
	/* JSON and XML only quote their own markup */
	CHECK_STR(JSON("café \"q\" a\\b"), "café \\\"q\\\" a\\\\b");
	CHECK_STR(JSON_EXACT("café \"q\" a\\b"), "café \\\"q\\\" a\\\\b");
	CHECK_STR(XML("a<b>&\"c\" 'd' é"), "a&lt;b&gt;&amp;&quot;c&quot; 'd' é");
}

static void test_escape_controls(void)
{
	char s[2] = { 0 }, want[8];
	unsigned int c;

	for (c = 0; c < 0x20; c++) {
		s[0] = c;
		snprintf(want, sizeof(want), "\\x%02x", c);
		CHECK_STR(text_f(s, 1, 0), want);
		CHECK_STR(xml_f(s, 1, 0), want);
		snprintf(want, sizeof(want), "\\\\x%02x", c);
		CHECK_STR(json_f(s, 1, 0), want);
	}
	CHECK_STR(TEXT_N("\x1b[2J\rforged\nFILE path_open"), "\\x1b[2J\\x0dforged\\x0aFILE path_open");
	CHECK_STR(TEXT_N("a\0b"), "a\\x00b");
	CHECK_STR(TEXT_N("\x7f"), "\\x7f");
	CHECK_STR(TEXT_N("\t"), "\\x09");
	/* exact JSON: the JSON escapes, so jq gets the bytes back */
	CHECK_STR(JSON_EXACT("\n\r\t\x1b\x7f\x01"), "\\n\\r\\t\\u001b\\u007f\\u0001");
	CHECK_STR(JSON_EXACT("a\0b"), "a\\u0000b");
}

static void test_escape_c1_and_format_characters(void)
{
	/* U+0080, U+0085 (NEL), U+009B (CSI), U+009F: each byte */
	CHECK_STR(TEXT_N("\xc2\x80|\xc2\x85|\xc2\x9b[2J|\xc2\x9f"),
		  "\\xc2\\x80|\\xc2\\x85|\\xc2\\x9b[2J|\\xc2\\x9f");
	CHECK_STR(JSON_EXACT("\xc2\x85\xc2\x9b"), "\\u0085\\u009b");
	CHECK_STR(JSON("\xc2\x85"), "\\\\xc2\\\\x85");
	CHECK_STR(XML("\xc2\x85"), "\\xc2\\x85");
	/* U+00A0 is printable */
	CHECK_STR(TEXT_N("\xc2\xa0"), "\xc2\xa0");
	/* line/paragraph separators, bidirectional controls, U+FFFE/U+FFFF */
	CHECK_STR(TEXT_N("\xe2\x80\xa8"), "\\xe2\\x80\\xa8");
	CHECK_STR(TEXT_N("\xe2\x80\xae" "exe.txt"), "\\xe2\\x80\\xae" "exe.txt");
	CHECK_STR(TEXT_N("\xe2\x81\xa6"), "\\xe2\\x81\\xa6");
	CHECK_STR(TEXT_N("\xef\xbf\xbe\xef\xbf\xbf"), "\\xef\\xbf\\xbe\\xef\\xbf\\xbf");
	CHECK_STR(JSON_EXACT("\xe2\x80\xa8\xe2\x80\xae\xd8\x9c\xef\xbf\xbf"),
		  "\\u2028\\u202e\\u061c\\uffff");
	/* their neighbours are not */
	CHECK_STR(TEXT_N("\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xaa\xef\xbf\xbd"),
		  "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xaa\xef\xbf\xbd");
}

static void test_escape_invalid_utf8(void)
{
	/* lone continuation bytes, bad leads */
	CHECK_STR(TEXT_N("a\x80z"), "a\\x80z");
	CHECK_STR(TEXT_N("\xbf\xff\xfe\xf5\xf8"), "\\xbf\\xff\\xfe\\xf5\\xf8");
	/* overlong forms: of '/', of NUL, 3 and 4 bytes */
	CHECK_STR(TEXT_N("\xc0\xaf"), "\\xc0\\xaf");
	CHECK_STR(TEXT_N("\xc1\xbf"), "\\xc1\\xbf");
	CHECK_STR(TEXT_N("\xe0\x80\x80"), "\\xe0\\x80\\x80");
	CHECK_STR(TEXT_N("\xe0\x9f\xbf"), "\\xe0\\x9f\\xbf");
	CHECK_STR(TEXT_N("\xf0\x8f\xbf\xbf"), "\\xf0\\x8f\\xbf\\xbf");
	/* encoded surrogates (CESU-8, a lone surrogate): each byte */
	CHECK_STR(TEXT_N("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	CHECK_STR(TEXT_N("\xed\xbf\xbf"), "\\xed\\xbf\\xbf");
	CHECK_STR(TEXT_N("\xed\xa0\xbd\xed\xb8\x80"), "\\xed\\xa0\\xbd\\xed\\xb8\\x80");
	/* beyond U+10FFFF */
	CHECK_STR(TEXT_N("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
	/* cut short: at the end, and before ASCII */
	CHECK_STR(TEXT_N("\xe6\xbc"), "\\xe6\\xbc");
	CHECK_STR(TEXT_N("\xe6\xbc" "a\xf0\x9f\x98"), "\\xe6\\xbc" "a\\xf0\\x9f\\x98");
	/* the valid edges */
	CHECK_STR(TEXT_N("\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf\xf0\x90\x80\x80"),
		  "\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf\xf0\x90\x80\x80");
	/* the same rule in every language */
	CHECK_STR(JSON("\xff" "a"), "\\\\xffa");
	CHECK_STR(JSON_EXACT("\xff"), "\\\\xff");
	CHECK_STR(XML("\xff<"), "\\xff&lt;");
	CHECK(!sp_utf8_valid("\xed\xa0\x80", 3));
	CHECK(!sp_utf8_valid("a\0b", 3));
	CHECK(sp_utf8_valid("漢\x7f", 4));
}

static void test_escape_backslash(void)
{
	/* "\x" always begins an escape: a backslash before 'x' is one */
	CHECK_STR(text("a\\b"), "a\\b");
	CHECK_STR(text("C:\\x1b"), "C:\\x5cx1b");
	CHECK_STR(text("\\\\x"), "\\\\x5cx");
	CHECK_STR(text("end\\"), "end\\");
	CHECK(!sp_esc_text_same("a\\x", 3, 0));
	CHECK(sp_esc_text_same("a\\y", 3, 0));
	/* JSON (shown) quotes the text form; exact JSON quotes the string */
	CHECK_STR(JSON("\\x41\\n"), "\\\\x5cx41\\\\n");
	CHECK_STR(JSON_EXACT("\\x41"), "\\\\x41");
	CHECK_STR(XML("\\x41"), "\\x5cx41");
	CHECK_STR(xml_f("\\x41", 4, SP_ESC_EXACT), "\\x41");
}

static void test_escape_flags(void)
{
	CHECK_STR(text_f("odd;name here", 13, SP_ESC_SEMI), "odd\\x3bname here");
	CHECK_STR(text_f("say \"hi\"", 8, SP_ESC_DQUOTE), "say \\x22hi\\x22");
	CHECK_STR(text_f("a;\"b\"", 5, SP_ESC_SEMI | SP_ESC_DQUOTE), "a\\x3b\\x22b\\x22");
	CHECK_STR(text_f("a;\"b\"", 5, 0), "a;\"b\"");
	CHECK(!sp_esc_text_same("a;b", 3, SP_ESC_SEMI));
	CHECK(sp_esc_text_same("a;b", 3, 0));
}

/* A buffer too small: whole characters and escapes, the full length returned. */
static void test_escape_cut_to_buffer(void)
{
	char b[8];
	size_t n;

	n = sp_esc_text(b, sizeof(b), "abcdefghij", 10, 0);
	CHECK_EQ_U(n, 10);
	CHECK_STR(b, "abcdefg");
	n = sp_esc_text(b, sizeof(b), "abcde\x1b" "f", 7, 0);
	CHECK_EQ_U(n, 10);
	CHECK_STR(b, "abcde");			/* not "abcde\x1" */
	n = sp_esc_text(b, sizeof(b), "abcde漢", 8, 0);
	CHECK_EQ_U(n, 8);
	CHECK_STR(b, "abcde");			/* not half of 漢 */
	n = sp_esc_text(b, 5, "\x01\x02", 2, 0);
	CHECK_EQ_U(n, 8);
	CHECK_STR(b, "\\x01");
	memset(b, 'z', sizeof(b));
	CHECK_EQ_U(sp_esc_text(b, 0, "abc", 3, 0), 3);
	CHECK(b[0] == 'z');
	CHECK_EQ_U(sp_esc_text(b, 1, "abc", 3, 0), 3);
	CHECK_STR(b, "");
	CHECK_EQ_U(sp_esc_json(b, sizeof(b), "abcdef\"", 7, 0), 8);
	CHECK_STR(b, "abcdef");
	CHECK_EQ_U(sp_esc_xml(b, sizeof(b), "abc&def", 7, 0), 11);
	CHECK_STR(b, "abc");
}

static void test_escape_cut_and_trim(void)
{
	/* sp_utf8_cut(): never inside a valid sequence */
	CHECK_EQ_U(sp_utf8_cut("ab漢", 5, 3), 2);
	CHECK_EQ_U(sp_utf8_cut("ab漢", 5, 4), 2);
	CHECK_EQ_U(sp_utf8_cut("ab漢", 5, 5), 5);
	CHECK_EQ_U(sp_utf8_cut("ab漢c", 6, 5), 5);
	CHECK_EQ_U(sp_utf8_cut("ab\x80\x80\x80\x80", 6, 4), 4);	/* not UTF-8: bytes */
	CHECK_EQ_U(sp_utf8_cut("😀x", 5, 2), 0);
	/* sp_esc_text_trim(): a text form cut short by vsnprintf() */
	CHECK_EQ_U(sp_esc_text_trim("abc\\x1", 6), 3);
	CHECK_EQ_U(sp_esc_text_trim("abc\\x", 5), 3);
	CHECK_EQ_U(sp_esc_text_trim("abc\\", 4), 3);
	CHECK_EQ_U(sp_esc_text_trim("abc\\x1b", 7), 7);
	CHECK_EQ_U(sp_esc_text_trim("abc\xe6\xbc", 5), 3);
	CHECK_EQ_U(sp_esc_text_trim("abc\xe6", 4), 3);
	CHECK_EQ_U(sp_esc_text_trim("abc漢", 6), 6);
	CHECK_EQ_U(sp_esc_text_trim("a\\b", 3), 3);
	CHECK_EQ_U(sp_esc_text_trim("", 0), 0);
}

/* Every code point: unsafe ones (exactly the documented set) as bytes, the
 * rest as they are; in XML never a character XML 1.0 forbids. */
static void test_escape_every_code_point(void)
{
	char s[4], t[64], back[64], want[32];
	unsigned long bad = 0, unsafe = 0;
	uint32_t cp, got;
	size_t n, m, i;

	for (cp = 0; cp <= 0x10ffff; cp++) {
		bool u;

		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		n = enc(cp, s);
		if (sp_utf8_next(s, n, &got) != n || got != cp)
			bad++;
		u = cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
		    cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
		    (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfffe || cp == 0xffff;
		if (u != sp_esc_unsafe(cp))
			bad++;
		unsafe += u;
		m = sp_esc_text(t, sizeof(t), s, n, 0);
		if (u) {
			for (i = 0; i < n; i++)
				snprintf(want + 4 * i, 5, "\\x%02x", (unsigned char)s[i]);
			if (m != 4 * n || memcmp(t, want, m))
				bad++;
		} else if (cp != '\\' && (m != n || memcmp(t, s, n))) {
			bad++;
		}
		if (has_control(t, m) || !sp_utf8_valid(t, m) || unescape(t, m, back) != n ||
		    memcmp(back, s, n))
			bad++;
		m = sp_esc_xml(t, sizeof(t), s, n, 0);
		for (i = 0; i < m; i += n ? n : 1) {
			n = sp_utf8_next(t + i, m - i, &got);
			if (!n || got == 0xfffe || got == 0xffff ||
			    (got < 0x20 && got != 9 && got != 10 && got != 13))
				bad++;
		}
	}
	CHECK_EQ_U(bad, 0);
	CHECK_EQ_U(unsafe, 32 + 33 + 1 + 2 + 7 + 4 + 2);
}

/* Every string of 1 and 2 bytes, and of 3 bytes after the leads that matter:
 * the text form has no control byte, is valid UTF-8 and leads back. */
static void test_escape_every_short_string(void)
{
	static const unsigned char leads[] = { 0x00, 0x5c, 0x78, 0x80, 0xc2, 0xe0, 0xe2, 0xed,
					       0xef, 0xf0, 0xf4, 0xff };
	char s[4], t[64], back[64];
	unsigned long bad = 0, i, j;
	size_t n, m;

	for (n = 1; n <= 3; n++) {
		unsigned long count = n == 1 ? 256 : n == 2 ? 65536 :
				      sizeof(leads) * 65536ul;

		for (i = 0; i < count; i++) {
			if (n == 3) {
				s[0] = leads[i >> 16];
				s[1] = (i >> 8) & 0xff;
				s[2] = i & 0xff;
			} else {
				for (j = 0; j < n; j++)
					s[j] = (i >> (8 * (n - 1 - j))) & 0xff;
			}
			m = sp_esc_text(t, sizeof(t), s, n, SP_ESC_SEMI);
			if (has_control(t, m) || !sp_utf8_valid(t, m) || memchr(t, ';', m) ||
			    unescape(t, m, back) != n || memcmp(back, s, n))
				bad++;
			m = sp_esc_json(t, sizeof(t), s, n, 0);
			if (has_control(t, m) || !sp_utf8_valid(t, m))
				bad++;
		}
	}
	CHECK_EQ_U(bad, 0);
}

/* JSON readers get the text form (shown) or the string (exact) back. */
static void test_escape_json_parses(void)
{
	static const char *const in[] = {
		"plain", "\x1b[2J\rforged\nFILE path_open \xe2\x86\x92 /etc/ok", "q\"b\\s",
		"\xc2\x85\xe2\x80\xae\x7f", "é漢😀", "C:\\x41", "",
	};
	char buf[512], lit[600];
	json_error_t err;
	unsigned int i;
	json_t *v;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		size_t n = strlen(in[i]);

		snprintf(lit, sizeof(lit), "[\"%s\"]", json_f(in[i], n, SP_ESC_EXACT));
		v = json_loads(lit, 0, &err);
		CHECK(v && !strcmp(json_string_value(json_array_get(v, 0)), in[i]));
		json_decref(v);
		sp_esc_text(buf, sizeof(buf), in[i], n, 0);
		snprintf(lit, sizeof(lit), "[\"%s\"]", json_f(in[i], n, 0));
		v = json_loads(lit, 0, &err);
		CHECK(v && !strcmp(json_string_value(json_array_get(v, 0)), buf));
		json_decref(v);
	}
	/* not UTF-8: the shown form is still valid JSON */
	snprintf(lit, sizeof(lit), "[\"%s\"]", JSON("\xff\xed\xa0\x80"));
	CHECK_STR(lit, "[\"\\\\xff\\\\xed\\\\xa0\\\\x80\"]");
	v = json_loads(lit, 0, &err);
	CHECK(v != NULL);
	json_decref(v);
}

static void test_escape_to_file(void)
{
	char *buf = NULL, big[3000];
	const char *want;
	size_t len = 0, i;
	FILE *m = open_memstream(&buf, &len);

	CHECK(sp_esc_text_put(m, "a\nb;c", 5, SP_ESC_SEMI) == 0);
	putc('|', m);
	CHECK(sp_esc_json_put(m, "\"\x1b", 2, 0) == 0);
	putc('|', m);
	CHECK(sp_esc_xml_put(m, "<\x01>", 3, 0) == 0);
	putc('|', m);
	/* longer than the escaper's own buffer */
	for (i = 0; i < sizeof(big); i++)
		big[i] = i % 3 ? 'a' : '\x01';
	CHECK(sp_esc_text_put(m, big, sizeof(big), 0) == 0);
	fclose(m);
	want = "a\\x0ab\\x3bc|\"\\\"\\\\x1b\"|&lt;\\x01&gt;|";
	CHECK(!strncmp(buf, want, strlen(want)));
	CHECK(!strncmp(buf + strlen(want), "\\x01aa\\x01aa", 12));
	CHECK_EQ_U(len, strlen(want) + 1000 * 4 + 2000);
	free(buf);
}

int main(void)
{
	TAP_RUN(test_escape_printable_unchanged);
	TAP_RUN(test_escape_controls);
	TAP_RUN(test_escape_c1_and_format_characters);
	TAP_RUN(test_escape_invalid_utf8);
	TAP_RUN(test_escape_backslash);
	TAP_RUN(test_escape_flags);
	TAP_RUN(test_escape_cut_to_buffer);
	TAP_RUN(test_escape_cut_and_trim);
	TAP_RUN(test_escape_every_code_point);
	TAP_RUN(test_escape_every_short_string);
	TAP_RUN(test_escape_json_parses);
	TAP_RUN(test_escape_to_file);
	return TAP_DONE();
}
