// SPDX-License-Identifier: MIT
/*
 * Unit tests of mixed mode (lib/record/interp.c, sp_interp_splice()), as
 * CPU and off-CPU samples both use it: each eval loop frame gives way to
 * the interpreted frames of its call, what is left goes at the root,
 * native "frames" in no mapping go, and the result stays within its bound.
 */
#include <string.h>

#include "record.h"
#include "record/interpP.h"
#include "tap.h"

/* Interpreted frames 101..100+n, innermost first; entry where entry has
 * a '1'. */
static void frames(struct sp_interp_frames *f, unsigned int n, const char *entry)
{
	size_t i, len = strlen(entry);

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++) {
		f->ids[i] = 101 + i;
		f->entry[i] = i < len && entry[i] == '1';
	}
	f->n = n;
}

static bool same(const uint64_t *a, unsigned int na, const uint64_t *b, unsigned int nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

static void test_two_calls(void)
{
	/* leaf first: kernel 1, libc 2, eval 3, C 4, eval 5, main 6 */
	uint64_t ids[8] = { 1, 2, 3, 4, 5, 6 };
	const uint8_t eval[] = { 0, 0, 1, 0, 1, 0 };
	const uint64_t want[] = { 1, 2, 101, 102, 4, 103, 6 };
	struct sp_interp_frames f;
	unsigned int n = 6;

	frames(&f, 3, "010");
	sp_interp_splice(&f, ids, eval, &n, 64);
	CHECK(same(ids, n, want, 7));
}

static void test_cut_short(void)
{
	/* no frame pointers: one eval frame reached, then an address in no
	 * mapping; the rest of the interpreted frames go at the root */
	uint64_t ids[8] = { 1, 2, 3, 4 };
	const uint8_t eval[] = { 0, 1, 2, 2 };
	const uint64_t want[] = { 1, 101, 102, 103, 104 };
	struct sp_interp_frames f;
	unsigned int n = 4;

	frames(&f, 4, "0100");
	sp_interp_splice(&f, ids, eval, &n, 8);
	CHECK(same(ids, n, want, 5));
}

static void test_leaf_unmapped_and_none(void)
{
	/* the leaf in no mapping stays (a JIT, an address of its own) */
	uint64_t ids[8] = { 7, 8 };
	const uint8_t eval[] = { 2, 0 };
	const uint64_t want[] = { 7, 8, 101 };
	struct sp_interp_frames f;
	unsigned int n = 2;

	frames(&f, 1, "1");
	sp_interp_splice(&f, ids, eval, &n, 8);
	CHECK(same(ids, n, want, 3));
}

static void test_bound(void)
{
	uint64_t ids[SP_INTERP_SPLICE_MAX] = { 1, 2, 3 };
	const uint8_t eval[] = { 0, 1, 0 };
	struct sp_interp_frames f;
	unsigned int n = 3;

	frames(&f, SP_BPF_IFRAMES + 1, "");
	sp_interp_splice(&f, ids, eval, &n, 10);
	CHECK_EQ_U(n, 10);
	CHECK(ids[0] == 1 && ids[1] == 101 && ids[9] == 109);
	n = 3;
	ids[0] = 1;
	ids[1] = 2;
	ids[2] = 3;
	sp_interp_splice(&f, ids, eval, &n, 2 * SP_INTERP_SPLICE_MAX);
	CHECK_EQ_U(n, 2 + SP_BPF_IFRAMES + 1);
}

int main(void)
{
	TAP_RUN(test_two_calls);
	TAP_RUN(test_cut_short);
	TAP_RUN(test_leaf_unmapped_and_none);
	TAP_RUN(test_bound);
	return TAP_DONE();
}
