// SPDX-License-Identifier: MIT
/* Unit tests of a stream's definitions (lib/stream/defs.c). */
#include "defs.h"
#include "records.h"
#include "tap.h"

static int add(struct sp_defs *d, struct sp_record *r, const char **why)
{
	*why = NULL;
	return sp_defs_add(d, r, why);
}

static uint64_t add_str(struct sp_defs *d, const char *s)
{
	struct sp_record r = { .kind = SP_REC_STRING };
	const char *why;

	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = (uint32_t)strlen(s);
	CHECK_EQ_U(add(d, &r, &why), 0);
	return sp_defs_nstrings(d);
}

static uint64_t add_frame(struct sp_defs *d, uint64_t module, uint64_t addr)
{
	struct sp_record r = { .kind = SP_REC_FRAME };
	const char *why;

	r.frame.module = module;
	r.frame.addr = r.frame.rel = addr;
	CHECK_EQ_U(add(d, &r, &why), 0);
	return sp_defs_nframes(d);
}

static uint64_t add_stack(struct sp_defs *d, uint64_t parent, uint64_t frame)
{
	struct sp_record r = { .kind = SP_REC_STACK };
	const char *why;

	r.stack.parent = parent;
	r.stack.frame = frame;
	CHECK_EQ_U(add(d, &r, &why), 0);
	return sp_defs_nstacks(d);
}

static void test_defs_strings(void)
{
	struct sp_defs *d = sp_defs_new();
	size_t len = 99;

	CHECK(sp_defs_str(d, 0, NULL) == NULL);
	CHECK(sp_defs_str(d, 1, NULL) == NULL);
	CHECK_STR(sp_defs_strz(d, 1), "");
	CHECK_EQ_U(add_str(d, "libc.so.6"), 1);
	CHECK_EQ_U(add_str(d, ""), 2);
	CHECK_EQ_U(add_str(d, "main"), 3);
	CHECK_STR(sp_defs_str(d, 1, &len), "libc.so.6");
	CHECK_EQ_U(len, 9);
	CHECK_STR(sp_defs_str(d, 2, &len), "");
	CHECK_EQ_U(len, 0);
	CHECK(sp_defs_str(d, 4, NULL) == NULL);
	CHECK_EQ_U(sp_defs_find_str(d, "main", 4), 3);
	CHECK_EQ_U(sp_defs_find_str(d, "", 0), 2);
	CHECK_EQ_U(sp_defs_find_str(d, "mai", 3), 0);
	/* Added after the index exists: found too. */
	CHECK_EQ_U(add_str(d, "later"), 4);
	CHECK_EQ_U(sp_defs_find_str(d, "later", 5), 4);
	/* A string with a NUL inside is kept whole. */
	{
		struct sp_record r = { .kind = SP_REC_STRING };
		const char *why;

		r.string.value.p = (const uint8_t *)"a\0b";
		r.string.value.len = 3;
		CHECK_EQ_U(add(d, &r, &why), 0);
		CHECK(sp_defs_str(d, 5, &len) != NULL);
		CHECK_EQ_U(len, 3);
		CHECK_EQ_U(sp_defs_find_str(d, "a\0b", 3), 5);
		CHECK_EQ_U(sp_defs_find_str(d, "a", 1), 0);
	}
	sp_defs_free(d);
}

/* How a string may be written in JSON: as plain text, escaped text, or its id. */
static void test_defs_str_text(void)
{
	struct sp_defs *d = sp_defs_new();

	CHECK_EQ_U(add_str(d, "main"), 1);
	CHECK_EQ_U(add_str(d, "say \"hi\""), 2);
	CHECK_EQ_U(add_str(d, "caf\xc3\xa9"), 3);
	CHECK_EQ_U(add_str(d, "bad \xff"), 4);
	CHECK_EQ_U(add_str(d, "main"), 5);
	CHECK_EQ_U(add_str(d, "tab\there"), 6);
	CHECK_EQ_U(sp_defs_str_text(d, 1), SP_STR_PLAIN);
	CHECK_EQ_U(sp_defs_str_text(d, 2), SP_STR_TEXT);
	CHECK_EQ_U(sp_defs_str_text(d, 3), SP_STR_TEXT);
	CHECK_EQ_U(sp_defs_str_text(d, 4), SP_STR_ID);
	CHECK_EQ_U(sp_defs_str_text(d, 5), SP_STR_ID);	/* not the first "main" */
	CHECK_EQ_U(sp_defs_str_text(d, 6), SP_STR_TEXT);
	CHECK_EQ_U(sp_defs_str_text(d, 7), SP_STR_ID);
	CHECK(sp_defs_str_is_text(d, 1) && sp_defs_str_is_text(d, 2));
	CHECK(!sp_defs_str_is_text(d, 4) && !sp_defs_str_is_text(d, 5));
	sp_defs_free(d);
}

static void test_defs_undefined_references(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_record r;
	const char *why;

	/* A module naming string 1 before any string. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_MODULE;
	r.module.path = 1;
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an undefined string");
	CHECK_EQ_U(sp_defs_nmodules(d), 0);	/* nothing defined */
	add_str(d, "/bin/true");
	CHECK_EQ_U(add(d, &r, &why), 0);
	CHECK_EQ_U(sp_defs_nmodules(d), 1);
	/* A frame in module 2 of 1. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_FRAME;
	r.frame.module = 2;
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an undefined module");
	CHECK_EQ_U(sp_defs_nframes(d), 0);
	add_frame(d, 1, 0x1000);
	/* A stack of frame 2 of 1, of parent stack 1 of 0, of frame 0. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.frame = 2;
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an undefined frame");
	r.stack.frame = 1;
	r.stack.parent = 1;
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an undefined stack");
	r.stack.parent = 0;
	r.stack.frame = 0;
	CHECK(add(d, &r, &why) < 0);
	CHECK_EQ_U(sp_defs_nstacks(d), 0);
	add_stack(d, 0, 1);
	/* A sample of stack 2; a symbol of frame 0 or 9. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SAMPLE;
	r.sample.stack = 2;
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an undefined stack");
	r.sample.stack = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SYMBOL;
	CHECK(add(d, &r, &why) < 0);
	r.symbol.frame = 9;
	CHECK(add(d, &r, &why) < 0);
	r.symbol.frame = 1;
	r.symbol.func = 2;
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an undefined string");
	/* An event's string values are references too. */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_EVENT;
	r.event.kind = SP_EV_PATH_OPEN;
	r.event.nfields = 1;
	r.event.field[0].u = 5;
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an undefined string");
	r.event.field[0].u = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);
	/* sp_defs_check says the same without defining anything. */
	r.event.field[0].u = 5;
	CHECK(sp_defs_check(d, &r, &why) < 0);
	sp_defs_free(d);
}

/* Every reference field of every kind, set to one past the defined ids. */
static void test_defs_every_reference_checked(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_record r;
	const char *why;
	unsigned int k, i, refs = 0;

	add_str(d, "a");
	add_str(d, "b");
	add_str(d, "c");
	for (k = 1; k < SP_REC_KIND_MAX; k++) {
		const struct sp_schema *s = sp_schema(k);

		for (i = 0; s && i < s->nfields; i++) {
			const struct sp_schema_field *f = &s->fields[i];

			if (!f->ref)
				continue;
			memset(&r, 0, sizeof(r));
			r.kind = k;
			*sp_field_u64(&r.header, f) = f->ref == SP_REF_STRING ? 4 : 1;
			CHECK(sp_defs_check(d, &r, &why) < 0);
			refs++;
		}
	}
	CHECK(refs >= 10);
	sp_defs_free(d);
}

static void test_defs_ids_out_of_order(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_record r;
	const char *why;

	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STRING;
	r.string.id = 2;	/* the first string is 1 */
	CHECK(add(d, &r, &why) < 0);
	CHECK_STR(why, "an id out of order");
	r.string.id = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);
	r.string.id = 1;	/* again */
	CHECK(add(d, &r, &why) < 0);
	r.string.id = 0;	/* implicit: fine */
	CHECK_EQ_U(add(d, &r, &why), 0);
	CHECK_EQ_U(sp_defs_nstrings(d), 2);

	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_MODULE;
	r.module.id = 3;
	CHECK(add(d, &r, &why) < 0);
	r.module.id = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);

	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_FRAME;
	r.frame.id = 2;
	CHECK(add(d, &r, &why) < 0);
	r.frame.id = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);

	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.frame = 1;
	r.stack.id = 5;
	CHECK(add(d, &r, &why) < 0);
	r.stack.id = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);

	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SPAN;
	r.span.id = 2;
	CHECK(add(d, &r, &why) < 0);
	r.span.id = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);
	CHECK_EQ_U(sp_defs_nspans(d), 1);
	sp_defs_free(d);
}

static void test_defs_stack_frames(void)
{
	struct sp_defs *d = sp_defs_new();
	uint64_t f[8], s1, s2, s3, s4, out[8];
	unsigned int i;

	for (i = 0; i < 8; i++)
		f[i] = add_frame(d, 0, 0x1000 + i);
	s1 = add_stack(d, 0, f[0]);	/* main */
	s2 = add_stack(d, s1, f[1]);	/* main > a */
	s3 = add_stack(d, s2, f[2]);	/* main > a > b */
	s4 = add_stack(d, s2, f[3]);	/* main > a > c: shares main > a */
	CHECK_EQ_U(sp_defs_stack_frames(d, 0, out, 8), 0);
	CHECK_EQ_U(sp_defs_stack_frames(d, s3, out, 8), 3);
	CHECK_EQ_U(out[0], f[2]);	/* leaf first */
	CHECK_EQ_U(out[1], f[1]);
	CHECK_EQ_U(out[2], f[0]);
	CHECK_EQ_U(sp_defs_stack_frames(d, s4, out, 8), 3);
	CHECK_EQ_U(out[0], f[3]);
	CHECK_EQ_U(out[1], f[1]);
	/* At most max frames, but the full depth. */
	out[1] = 0xdead;
	CHECK_EQ_U(sp_defs_stack_frames(d, s3, out, 1), 3);
	CHECK_EQ_U(out[0], f[2]);
	CHECK_EQ_U(out[1], 0xdead);
	CHECK(sp_defs_stack_frames(d, 99, out, 8) < 0);
	/* Interning by value. */
	CHECK_EQ_U(sp_defs_find_stack(d, s2, f[3]), s4);
	CHECK_EQ_U(sp_defs_find_stack(d, s1, f[3]), 0);
	CHECK_EQ_U(sp_defs_find_stack(d, 0, f[0]), s1);
	{
		struct sp_frame fr = { .addr = 0x1003, .rel = 0x1003 };

		CHECK_EQ_U(sp_defs_find_frame(d, &fr), f[3]);
		fr.mode = SP_FRAME_KERNEL;
		CHECK_EQ_U(sp_defs_find_frame(d, &fr), 0);
	}
	CHECK(sp_defs_stack(d, s4) && sp_defs_stack(d, s4)->parent == s2);
	CHECK(sp_defs_frame(d, f[7]) && sp_defs_frame(d, f[7])->addr == 0x1007);
	CHECK(sp_defs_frame(d, 0) == NULL);
	CHECK(sp_defs_frame(d, 9) == NULL);
	sp_defs_free(d);
}

static void test_defs_many_interned(void)
{
	struct sp_defs *d = sp_defs_new();
	uint64_t i, parent = 0, frame;
	char s[32];
	bool ok = true;

	for (i = 0; i < 20000; i++) {
		snprintf(s, sizeof(s), "sym%llu", (unsigned long long)i);
		if (add_str(d, s) != i + 1)
			ok = false;
		frame = add_frame(d, 0, 0x400000 + 16 * i);
		parent = add_stack(d, i % 50 ? parent : 0, frame);
	}
	CHECK(ok);
	for (i = 0; i < 20000; i += 7) {
		struct sp_frame fr = { .addr = 0x400000 + 16 * i, .rel = 0x400000 + 16 * i };

		snprintf(s, sizeof(s), "sym%llu", (unsigned long long)i);
		if (sp_defs_find_str(d, s, strlen(s)) != i + 1 || sp_defs_find_frame(d, &fr) != i + 1 ||
		    sp_defs_find_stack(d, i % 50 ? i : 0, i + 1) != i + 1)
			ok = false;
	}
	CHECK(ok);
	CHECK_EQ_U(sp_defs_stack_frames(d, 49, NULL, 0), 49);
	sp_defs_free(d);
}

static void test_defs_header_resets(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_record h = { .kind = SP_REC_HEADER };
	const char *why;
	char host[] = "host-1";

	CHECK(sp_defs_header(d) == NULL);
	h.header.version = 1;
	h.header.hostname.p = (const uint8_t *)host;
	h.header.hostname.len = 6;
	CHECK_EQ_U(add(d, &h, &why), 0);
	host[0] = 'X';	/* the defs keep their own copy */
	CHECK(sp_defs_header(d) && sp_defs_header(d)->hostname.len == 6 &&
	      !memcmp(sp_defs_header(d)->hostname.p, "host-1", 6));
	add_str(d, "a");
	add_frame(d, 0, 1);
	add_stack(d, 0, 1);
	CHECK_EQ_U(add(d, &h, &why), 0);
	CHECK_EQ_U(sp_defs_nstrings(d), 0);
	CHECK_EQ_U(sp_defs_nframes(d), 0);
	CHECK_EQ_U(sp_defs_nstacks(d), 0);
	CHECK_EQ_U(sp_defs_find_str(d, "a", 1), 0);
	CHECK_EQ_U(add_str(d, "b"), 1);	/* ids start again */
	CHECK_EQ_U(sp_defs_find_str(d, "b", 1), 1);
	sp_defs_free(d);
}

static void test_defs_symbol_chains(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_record r = { .kind = SP_REC_SYMBOL };
	const struct sp_symbol *sym;
	const char *why;
	unsigned int n;

	add_str(d, "inner");
	add_str(d, "outer");
	add_str(d, "other");
	add_frame(d, 0, 0x10);
	add_frame(d, 0, 0x20);
	CHECK(sp_defs_symbols(d, 1, &n) == NULL && n == 0);
	r.symbol.frame = 1;
	r.symbol.func = 1;
	CHECK_EQ_U(add(d, &r, &why), 0);
	r.symbol.index = 1;
	r.symbol.func = 2;
	CHECK_EQ_U(add(d, &r, &why), 0);
	sym = sp_defs_symbols(d, 1, &n);
	CHECK_EQ_U(n, 2);
	CHECK(sym && sym[0].func == 1 && sym[1].func == 2);
	/* Another frame's symbol, then a new chain for frame 1 replaces it. */
	r.symbol.frame = 2;
	r.symbol.index = 0;
	r.symbol.func = 3;
	CHECK_EQ_U(add(d, &r, &why), 0);
	r.symbol.frame = 1;
	r.symbol.func = 3;
	CHECK_EQ_U(add(d, &r, &why), 0);
	sym = sp_defs_symbols(d, 1, &n);
	CHECK_EQ_U(n, 1);
	CHECK(sym && sym[0].func == 3);
	sym = sp_defs_symbols(d, 2, &n);
	CHECK_EQ_U(n, 1);
	CHECK(sp_defs_symbols(d, 1000, &n) == NULL);
	sp_defs_free(d);
}

/*
 * What sp_defs_module() and sp_defs_str() give stays where it is while the
 * stream grows: a module's build-id bytes were once kept in an array that
 * moved from the 17th module on, and pprof read them after the move.
 */
static void test_defs_stable_pointers(void)
{
	struct sp_defs *d = sp_defs_new();
	const struct sp_module *mods[101];
	const char *strs[101];
	uint8_t bid[101][20];
	struct sp_record r;
	const char *why;
	char s[32];
	unsigned int i, k, bad = 0;

	for (i = 1; i <= 100; i++) {
		snprintf(s, sizeof(s), "/lib/m%u.so", i);
		add_str(d, s);
		for (k = 0; k < sizeof(bid[i]); k++)
			bid[i][k] = (uint8_t)(i * 7 + k);
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_MODULE;
		r.module.pid = 7;
		r.module.start = 0x100000ull * i;
		r.module.end = r.module.start + 0x10000;
		r.module.path = i;
		r.module.build_id.p = bid[i];
		r.module.build_id.len = sizeof(bid[i]);
		CHECK_EQ_U(add(d, &r, &why), 0);
		bid[i][0] ^= 0xff;	/* the record's bytes are not the defs' */
		bid[i][0] ^= 0xff;
		mods[i] = sp_defs_module(d, i);
		strs[i] = sp_defs_str(d, i, NULL);
	}
	/* Many more strings and modules: the tables grow under the pointers. */
	for (i = 0; i < 100000; i++) {
		snprintf(s, sizeof(s), "s%u", i);
		add_str(d, s);
	}
	for (i = 1; i <= 100; i++) {
		const struct sp_module *m = sp_defs_module(d, i);

		snprintf(s, sizeof(s), "/lib/m%u.so", i);
		/* read as pprof reads it: the build-id of the module it looks up */
		if (!m || m->build_id.len != sizeof(bid[i]) ||
		    memcmp(m->build_id.p, bid[i], sizeof(bid[i])))
			bad++;
		else if (m != mods[i] || sp_defs_str(d, i, NULL) != strs[i] ||
			 strcmp(strs[i], s) || m->start != 0x100000ull * i || m->path != i)
			bad++;
	}
	CHECK_EQ_U(bad, 0);
	sp_defs_free(d);
}

/* Depths are kept per stack; walking costs the frames asked for only. */
static void test_defs_deep_stacks(void)
{
	struct sp_defs *d = sp_defs_new();
	uint64_t f, s = 0, out[4];
	unsigned int i;

	f = add_frame(d, 0, 0x1000);
	for (i = 0; i < SP_MAX_STACK_DEPTH; i++)
		s = add_stack(d, s, f);
	CHECK_EQ_U(sp_defs_stack_depth(d, s), SP_MAX_STACK_DEPTH);
	CHECK_EQ_U(sp_defs_limits_hit(d), 0);
	s = add_stack(d, s, f);
	CHECK_EQ_U(sp_defs_limits_hit(d), SP_DEFS_LIMIT_STACK);
	CHECK_EQ_U(sp_defs_limits_hit(d), 0);	/* reported once */
	for (i = 0; i < 100000; i++)
		s = add_stack(d, s, f);
	CHECK_EQ_U(sp_defs_limits_hit(d), 0);	/* only the first one past */
	CHECK_EQ_U(sp_defs_stack_depth(d, s), SP_MAX_STACK_DEPTH + 100001);
	CHECK_EQ_U(sp_defs_stack_frames(d, s, out, 4), SP_MAX_STACK_DEPTH + 100001);
	CHECK_EQ_U(out[3], f);
	CHECK_EQ_U(sp_defs_stack_depth(d, 0), 0);
	CHECK_EQ_U(sp_defs_stack_depth(d, s + 1), 0);
	sp_defs_free(d);
}

/* A frame keeps its innermost inline levels and the function the code is in. */
static void test_defs_inline_limit(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_record r = { .kind = SP_REC_SYMBOL };
	const struct sp_symbol *sym;
	const char *why;
	unsigned int i, n;

	add_frame(d, 0, 0x10);
	r.symbol.frame = 1;
	for (i = 0; i < 1000; i++) {
		r.symbol.index = i;
		r.symbol.line = i + 1;
		CHECK_EQ_U(add(d, &r, &why), 0);
	}
	sym = sp_defs_symbols(d, 1, &n);
	CHECK_EQ_U(n, SP_MAX_INLINE_DEPTH);
	CHECK(sym && sym[0].line == 1 && sym[n - 2].line == SP_MAX_INLINE_DEPTH - 1);
	CHECK(sym && sym[n - 1].line == 1000);
	CHECK_EQ_U(sp_defs_limits_hit(d), SP_DEFS_LIMIT_INLINE);
	sp_defs_free(d);
}

int main(void)
{
	TAP_RUN(test_defs_strings);
	TAP_RUN(test_defs_str_text);
	TAP_RUN(test_defs_undefined_references);
	TAP_RUN(test_defs_every_reference_checked);
	TAP_RUN(test_defs_ids_out_of_order);
	TAP_RUN(test_defs_stack_frames);
	TAP_RUN(test_defs_many_interned);
	TAP_RUN(test_defs_header_resets);
	TAP_RUN(test_defs_symbol_chains);
	TAP_RUN(test_defs_stable_pointers);
	TAP_RUN(test_defs_deep_stacks);
	TAP_RUN(test_defs_inline_limit);
	return TAP_DONE();
}
