/* SPDX-License-Identifier: MIT */
/*
 * escape.h - others' strings in outputs (docs/escaping.md): one UTF-8
 * scanner, the one set of characters no output shows as they are, and one
 * escaper per output language over them.
 *
 * Names, paths, commands, messages come from processes and users StackPulse
 * does not trust. Every output shows such a string by its *text form*:
 *
 *   - valid UTF-8 (RFC 3629: shortest form, no surrogates, at most U+10FFFF)
 *     stands for itself, except the unsafe characters (sp_esc_unsafe());
 *   - each byte of an unsafe character, and each byte that does not begin a
 *     valid sequence (a stray continuation byte, an overlong form, an
 *     encoded surrogate, a sequence cut short), is written "\xHH", two
 *     lowercase hex digits;
 *   - a backslash followed by 'x' is written "\x5c", so that "\x" always
 *     begins an escape; any other backslash stands for itself.
 *
 * The text form has no control character and is valid UTF-8, and it leads
 * back to the bytes it shows. Text outputs write it as it is; JSON and XML
 * outputs write it in their own quoting (sp_esc_json(), sp_esc_xml()). Only
 * the record stream's JSON (sp-decode, lib/stream/json_out.c) carries strings
 * exactly instead: SP_ESC_EXACT, and hex for what is not valid UTF-8.
 *
 * Every sp_esc_*() that fills a buffer works like snprintf(): it writes at
 * most size - 1 bytes and a NUL (nothing if size is 0), never part of a
 * character or of an escape, and returns the length of the whole form (so
 * sp_esc_text(NULL, 0, ...) measures it). They never fail and never allocate.
 */
#ifndef STACKPULSE_ESCAPE_H
#define STACKPULSE_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Length (1 to 4) of the valid UTF-8 sequence at s[0..n), its code point in
 * *cp; 0 if s[0] does not begin one (or n is 0). A NUL byte is a valid
 * sequence (U+0000), if an unsafe one.
 */
size_t sp_utf8_next(const char *s, size_t n, uint32_t *cp);

/* True if s[0..n) is valid UTF-8 without NUL bytes. */
bool sp_utf8_valid(const char *s, size_t n);

/*
 * The longest prefix of s[0..n) of at most max bytes that does not end
 * inside a valid UTF-8 sequence: where to cut a string to a byte budget.
 */
size_t sp_utf8_cut(const char *s, size_t n, size_t max);

/*
 * The characters no output shows as they are: C0 controls (U+0000-U+001F),
 * DEL (U+007F), C1 controls (U+0080-U+009F), the line and paragraph
 * separators (U+2028, U+2029), the bidirectional formatting characters
 * (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which reorder what
 * a terminal or browser shows around them, and U+FFFE, U+FFFF (not allowed
 * in XML).
 */
bool sp_esc_unsafe(uint32_t cp);

/* Flags of the escapers. */
enum {
	SP_ESC_SEMI = 1 << 0,	/* text: ';' too, as "\x3b" (folded stacks' separator) */
	SP_ESC_DQUOTE = 1 << 1,	/* text: '"' too, as "\x22" (inside a quoted string) */
	SP_ESC_EXACT = 1 << 2,	/* JSON, XML: the string itself, not its text form (below) */
};

/* The text form of s[0..n) into dst (see the top). flags: SP_ESC_SEMI, SP_ESC_DQUOTE. */
size_t sp_esc_text(char *dst, size_t size, const char *s, size_t n, unsigned int flags);
/* True if the text form of s[0..n) is s itself (nothing to escape). */
bool sp_esc_text_same(const char *s, size_t n, unsigned int flags);
/* The text form of s[0..n) to out. 0, or -1 if out has an error. */
int sp_esc_text_put(FILE *out, const char *s, size_t n, unsigned int flags);

/*
 * The longest prefix of the text form t[0..n), cut short by a fixed buffer
 * (vsnprintf()), that ends with a whole character and not inside a "\xHH".
 */
size_t sp_esc_text_trim(const char *t, size_t n);

/*
 * JSON string contents (without the quotes): the text form of s[0..n) with
 * '"' and '\\' escaped, so that a JSON reader gets the text form. With
 * SP_ESC_EXACT, a JSON reader gets s itself: '"', '\\', and the unsafe
 * characters are JSON escapes ("\n", "\r", "\t", "\u001b", "\u2028"); use it
 * on valid UTF-8 (a byte that is not is still written "\\xHH"), or to quote
 * a string already in its text form.
 */
size_t sp_esc_json(char *dst, size_t size, const char *s, size_t n, unsigned int flags);
/* As sp_esc_json(), quotes included, to out. 0, or -1 if out has an error. */
int sp_esc_json_put(FILE *out, const char *s, size_t n, unsigned int flags);

/*
 * XML 1.0 character data or a double-quoted attribute value: the text form
 * of s[0..n) with '&', '<', '>' and '"' as entities. It has no character
 * XML forbids. (No attribute is single-quoted: '\'' stays as it is.) With
 * SP_ESC_EXACT, s itself with only the markup escaped: for a string already
 * in its text form (XML has no way to carry an unsafe character: one is
 * still written "\xHH").
 */
size_t sp_esc_xml(char *dst, size_t size, const char *s, size_t n, unsigned int flags);
/* As sp_esc_xml(), to out. 0, or -1 if out has an error. */
int sp_esc_xml_put(FILE *out, const char *s, size_t n, unsigned int flags);

#endif
