// SPDX-License-Identifier: MIT
/* Unit tests of the growable buffer (lib/base/buf.c): its invariants after every call. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tap.h"

/* buf.h's invariants: len < cap and p[len] NUL once allocated; nothing before. */
static int invariants_hold(const struct sp_buf *b)
{
	if (!b->cap)
		return !b->p && !b->len && !strcmp(sp_buf_str(b), "");
	return b->p && b->len < b->cap && b->p[b->len] == 0;
}

static void test_buf_empty(void)
{
	struct sp_buf b = SP_BUF_INIT;
	char *p;
	size_t len = 99;

	CHECK(invariants_hold(&b));
	CHECK_STR(sp_buf_str(&b), "");
	sp_buf_reset(&b);	/* nothing allocated, nothing to do */
	CHECK(invariants_hold(&b));
	sp_buf_reserve(&b, 0);
	CHECK(b.cap > 0 && invariants_hold(&b));
	CHECK_STR(sp_buf_str(&b), "");
	sp_buf_release(&b);
	CHECK(!b.p && !b.cap && invariants_hold(&b));
	/* Detaching an empty buffer gives an allocated "", not NULL. */
	p = sp_buf_detach(&b, &len);
	CHECK(p && !p[0] && len == 0);
	CHECK(invariants_hold(&b));
	free(p);
}

static void test_buf_appending(void)
{
	struct sp_buf b = SP_BUF_INIT;
	static const uint8_t bytes[] = { 0x00, 0x7f, 0xab, 0xff };
	char big[1000];
	size_t len;
	char *p;

	sp_buf_puts(&b, "ab");
	CHECK(invariants_hold(&b));
	sp_buf_addch(&b, 'c');
	CHECK(invariants_hold(&b));
	sp_buf_printf(&b, "-%d-%s", 42, "x");
	CHECK(invariants_hold(&b));
	CHECK_STR(b.p, "abc-42-x");
	CHECK_EQ_U(b.len, 8);
	sp_buf_hex(&b, bytes, sizeof(bytes));
	CHECK(invariants_hold(&b));
	CHECK_STR(b.p, "abc-42-x007fabff");
	/* Bytes with a NUL among them: len counts them, the NUL follows. */
	sp_buf_add(&b, "\0z", 2);
	CHECK(invariants_hold(&b));
	CHECK_EQ_U(b.len, 18);
	CHECK(!memcmp(b.p + 16, "\0z", 3));
	/* A printf longer than the room it tries first. */
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	sp_buf_reset(&b);
	CHECK(invariants_hold(&b) && b.len == 0 && b.cap > 0);
	sp_buf_printf(&b, "<%s>", big);
	CHECK(invariants_hold(&b));
	CHECK_EQ_U(b.len, sizeof(big) + 1);
	CHECK(b.p[0] == '<' && b.p[b.len - 1] == '>' && strspn(b.p + 1, "q") == sizeof(big) - 1);
	p = sp_buf_detach(&b, &len);
	CHECK(len == sizeof(big) + 1 && strlen(p) == len);
	CHECK(invariants_hold(&b) && !b.cap);
	free(p);
}

/* Writing straight into p after sp_buf_reserve(), ended by sp_buf_setlen(). */
static void test_buf_direct_writes(void)
{
	struct sp_buf b = SP_BUF_INIT;

	sp_buf_puts(&b, "key");
	sp_buf_reserve(&b, 3);
	CHECK(b.cap - b.len > 3);
	memcpy(b.p + b.len, "=v;", 3);
	sp_buf_setlen(&b, b.len + 3);
	CHECK(invariants_hold(&b));
	CHECK_STR(b.p, "key=v;");
	/* Cutting back, as a path is cut back to its directory. */
	sp_buf_setlen(&b, 3);
	CHECK(invariants_hold(&b));
	CHECK_STR(b.p, "key");
	sp_buf_release(&b);
}

/* Random additions of every kind against a plain array. */
static void test_buf_against_array(void)
{
	static char want[1 << 20];
	struct sp_buf b = SP_BUF_INIT;
	uint64_t x = 88172645463325252ull;
	size_t n = 0, i, k;
	int ok = 1;

	for (i = 0; i < 20000 && ok; i++) {
		char piece[300];
		size_t len;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = x % sizeof(piece);
		if (n + len + 32 >= sizeof(want)) {
			sp_buf_reset(&b);
			n = 0;
		}
		for (k = 0; k < len; k++)
			piece[k] = (char)(x >> (k % 56));
		switch ((x >> 60) % 4) {
		case 0:
			sp_buf_add(&b, piece, len);
			memcpy(want + n, piece, len);
			n += len;
			break;
		case 1:
			sp_buf_addch(&b, piece[0]);
			want[n++] = piece[0];
			break;
		case 2:
			sp_buf_printf(&b, "%zu:%.3s", len, "abcdef");
			n += sprintf(want + n, "%zu:%.3s", len, "abcdef");
			break;
		default:
			sp_buf_hex(&b, (const uint8_t *)piece, len % 8);
			for (k = 0; k < len % 8; k++)
				n += sprintf(want + n, "%02x", (uint8_t)piece[k]);
			break;
		}
		ok = invariants_hold(&b) && b.len == n && !memcmp(b.p, want, n);
	}
	CHECK(ok);
	sp_buf_release(&b);
}

static void test_buf_xstrfmt(void)
{
	char *p = sp_xstrfmt("%s/.build-id/%.2s/%s.debug", "/usr/lib/debug", "abcd", "cd");

	CHECK_STR(p, "/usr/lib/debug/.build-id/ab/cd.debug");
	free(p);
	p = sp_xstrfmt("%s", "");
	CHECK_STR(p, "");
	free(p);
}

int main(void)
{
	TAP_RUN(test_buf_empty);
	TAP_RUN(test_buf_appending);
	TAP_RUN(test_buf_direct_writes);
	TAP_RUN(test_buf_against_array);
	TAP_RUN(test_buf_xstrfmt);
	return TAP_DONE();
}
