// SPDX-License-Identifier: MIT
/* Unit tests of lib/stream/stackquality.c: shares, causes and their hints. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "defs.h"
#include "stackquality.h"
#include "tap.h"

static void test_stackquality_shares_and_order(void)
{
	struct sp_stackq *q = sp_stackq_new();
	struct sp_stackq_summary s;
	struct sp_stackq_cause c;

	sp_stackq_set_config(q, SP_CG_DWARF, 8192, 127);
	sp_stackq_add(q, SP_UNWIND_COMPLETE, SP_SAMPLE_CPU, "/usr/bin/x", 0x10, 60);
	sp_stackq_add(q, SP_UNWIND_STACK_SIZE, SP_SAMPLE_CPU, "/usr/bin/x", 0x20, 34);
	sp_stackq_add(q, SP_UNWIND_NO_CFI, SP_SAMPLE_CPU, "/opt/lib/libfoo.so", 0x1234, 4);
	sp_stackq_add(q, SP_UNWIND_NO_CFI, SP_SAMPLE_CPU, "/opt/lib/libbar.so", 0x99, 2);
	sp_stackq_add(q, SP_UNWIND_UNKNOWN, SP_SAMPLE_CPU, NULL, 0, 50);
	sp_stackq_summary(q, &s);
	CHECK_EQ_U(s.samples, 150);
	CHECK_EQ_U(s.assessed, 100);
	CHECK_EQ_U(s.complete, 60);
	CHECK(s.complete_share > 0.599 && s.complete_share < 0.601);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_STACK_SIZE);
	CHECK_EQ_U(c.count, 34);
	CHECK_STR(c.hint, "34.0% of stacks hit the 8192-byte stack copy: use --call-graph=dwarf,32768");
	CHECK(!sp_stackq_cause(q, 1, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_NO_CFI);
	CHECK_STR(c.module, "/opt/lib/libfoo.so");
	CHECK(strstr(c.hint, "4.0% of stacks stopped in libfoo.so at 0x1234") == c.hint);
	CHECK(!sp_stackq_cause(q, 2, &c));
	CHECK_STR(c.module, "/opt/lib/libbar.so");
	CHECK(sp_stackq_cause(q, 3, &c) == -1);
	sp_stackq_free(q);
}

static void test_stackquality_copy_size_limit(void)
{
	struct sp_stackq *q = sp_stackq_new();
	struct sp_stackq_cause c;

	sp_stackq_set_config(q, SP_CG_DWARF, 32768, 0);
	sp_stackq_add(q, SP_UNWIND_STACK_SIZE, SP_SAMPLE_CPU, NULL, 0, 1);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK(strstr(c.hint, "--call-graph=dwarf,65528") != NULL);
	sp_stackq_set_config(q, SP_CG_DWARF, 65528, 0);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK(strstr(c.hint, "-fno-omit-frame-pointer") != NULL);
	sp_stackq_free(q);
}

static void test_stackquality_bounded(void)
{
	struct sp_stackq *q = sp_stackq_new();
	struct sp_stackq_summary s;
	struct sp_stackq_cause c;
	char path[64];
	unsigned int i, n = 0;
	uint64_t total = 0;

	for (i = 0; i < 2 * SP_STACKQ_MAX_CAUSES; i++) {
		snprintf(path, sizeof(path), "/lib/l%u.so", i);
		sp_stackq_add(q, SP_UNWIND_NO_CFI, SP_SAMPLE_CPU, path, i, 1);
	}
	while (!sp_stackq_cause(q, n, &c)) {
		total += c.count;
		n++;
	}
	CHECK_EQ_U(n, SP_STACKQ_MAX_CAUSES + 1);	/* the rest merged into one */
	CHECK_EQ_U(total, 2 * SP_STACKQ_MAX_CAUSES);
	sp_stackq_summary(q, &s);
	CHECK_EQ_U(s.complete_share * 1000, 0);
	sp_stackq_free(q);
}

/* Strings 1..n of d. */
/* A header of this call graph and features, the rest empty. */
static void add_header(struct sp_defs *d, enum sp_call_graph cg, const char *features)
{
	struct sp_record r;
	const char *why = NULL;

	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_HEADER;
	r.header.call_graph = cg;
	r.header.event.p = r.header.hostname.p = r.header.kernel.p = r.header.machine.p =
		r.header.command.p = r.header.producer.p = r.header.unavailable.p =
		(const uint8_t *)"";
	r.header.features.p = (const uint8_t *)features;
	r.header.features.len = strlen(features);
	CHECK(!sp_defs_add(d, &r, &why));
}

static void add_strings(struct sp_defs *d, const char *const *strs, unsigned int n)
{
	struct sp_record r;
	const char *why = NULL;
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_STRING;
		r.string.value.p = (const uint8_t *)strs[i];
		r.string.value.len = strlen(strs[i]);
		CHECK(!sp_defs_add(d, &r, &why));
	}
}

/* Module 1 (libruby, 0x1000-0x2000, path string 1) and module 2 (path
 * string 2, at base 0x2000 when placed, or none) of pid 10. */
static void add_modules(struct sp_defs *d, bool placed)
{
	struct sp_record r;
	const char *why = NULL;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_MODULE;
		r.module.pid = 10;
		r.module.start = i && !placed ? 0 : 0x1000 * (i + 1);
		r.module.end = i && !placed ? 0 : r.module.start + 0x1000;
		r.module.path = i + 1;
		CHECK(!sp_defs_add(d, &r, &why));
	}
}

/* What sp_stackq_print() prints, into buf. */
static void print_to(const struct sp_stackq *q, char *buf, size_t len, const char *prefix,
		     unsigned int max)
{
	FILE *f = fmemopen(buf, len, "w");

	sp_stackq_print(q, f, prefix, max);
	fclose(f);
}

/* From records: the module of the outermost frame of a cut stack. */
static void test_stackquality_from_defs(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_stackq *q = sp_stackq_new();
	struct sp_record r;
	struct sp_stackq_summary s;
	struct sp_stackq_cause c;
	const char *why = NULL;
	static const char *strs[] = { "/usr/lib/libruby.so.3.1", "/usr/bin/ruby" };
	unsigned int i;
	char buf[4096];

	add_header(d, SP_CG_DWARF, "perf=cpu-clock call-graph=dwarf,16384 max-depth=127");
	add_strings(d, strs, 2);
	sp_stackq_set_header(q, sp_defs_header(d), d);
	add_modules(d, true);	/* module 1: libruby, 2: ruby */
	for (i = 0; i < 2; i++) {	/* frame 1 in ruby, frame 2 in libruby */
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = 2 - i;
		r.frame.rel = 0x100 + i;
		CHECK(!sp_defs_add(d, &r, &why));
	}
	/* stack 1 = [frame 2 (libruby, outermost)], stack 2 = stack 1 + frame 1 (leaf) */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.frame = 2;
	CHECK(!sp_defs_add(d, &r, &why));
	r.stack.parent = 1;
	r.stack.frame = 1;
	CHECK(!sp_defs_add(d, &r, &why));
	CHECK(why == NULL);

	memset(&r, 0, sizeof(r));
	r.sample.stack = 2;
	r.sample.unwind = SP_UNWIND_NO_CFI;
	sp_stackq_add_sample(q, d, &r.sample);
	sp_stackq_add_sample(q, d, &r.sample);
	r.sample.unwind = SP_UNWIND_COMPLETE;
	sp_stackq_add_sample(q, d, &r.sample);
	r.sample.flags = SP_SAMPLE_FP_GUESS;	/* complete, but a guess */
	sp_stackq_add_sample(q, d, &r.sample);
	r.sample.unwind = SP_UNWIND_UNKNOWN;	/* not assessed: not counted */
	sp_stackq_add_sample(q, d, &r.sample);
	r.sample.flags = 0;
	r.sample.unwind = SP_UNWIND_STACK_SIZE;
	sp_stackq_add_sample(q, d, &r.sample);
	sp_stackq_summary(q, &s);
	CHECK_EQ_U(s.complete, 2);
	CHECK_EQ_U(s.fp_guess, 1);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_NO_CFI);
	CHECK_STR(c.module, "/usr/lib/libruby.so.3.1");
	CHECK_EQ_U(c.rel, 0x101);
	CHECK(!sp_stackq_cause(q, 1, &c));
	CHECK_STR(c.hint, "20.0% of stacks hit the 16384-byte stack copy: use --call-graph=dwarf,65528");

	print_to(q, buf, sizeof(buf), "sp-record: ", 1);
	CHECK(strstr(buf, "sp-record: stacks: 40.0% complete (2 of 5 unwound samples") == buf);
	CHECK(strstr(buf, "\nsp-record:   no_cfi: 40.0% of stacks stopped in libruby.so.3.1 at 0x101") != NULL);
	CHECK(strstr(buf, "stack_size") == NULL);	/* only one cause asked for */
	CHECK(strstr(buf, "\nsp-record:   fp_guess: 1 stack (20.0%) left a frame without CFI "
		     "through its frame pointer (may skip frames)\n") != NULL);
	sp_stackq_free(q);

	/* a stack in no known mapping: its example names the process */
	q = sp_stackq_new();
	memset(&r, 0, sizeof(r));
	r.sample.stack = 2;
	r.sample.pid = 4242;
	r.sample.unwind = SP_UNWIND_UNKNOWN_MAP;
	sp_stackq_add_sample(q, d, &r.sample);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_UNKNOWN_MAP);
	CHECK(strstr(c.hint, "(e.g. 0x101 in pid 4242): a sample inside execve") != NULL);
	sp_stackq_free(q);
	sp_defs_free(d);
}

/* Off-CPU samples are cut by a copy of their own, and said to be. */
static void test_stackquality_offcpu_copy(void)
{
	struct sp_stackq *q = sp_stackq_new();
	struct sp_stackq_cause c;

	sp_stackq_set_config(q, SP_CG_AUTO, 32768, 0);
	sp_stackq_set_offcpu_copy(q, 8192);
	sp_stackq_add(q, SP_UNWIND_STACK_SIZE, SP_SAMPLE_OFFCPU, NULL, 0, 3);
	sp_stackq_add(q, SP_UNWIND_STACK_SIZE, SP_SAMPLE_CPU, NULL, 0, 1);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK_EQ_U(c.count, 3);
	CHECK_STR(c.hint, "75.0% of off-CPU stacks hit the 8192-byte stack copy: use "
		  "--call-graph=dwarf,32768");
	CHECK(!sp_stackq_cause(q, 1, &c));
	CHECK_STR(c.hint, "25.0% of stacks hit the 32768-byte stack copy: use "
		  "--call-graph=dwarf,65528");
	sp_stackq_free(q);
}

/* A cut native stack whose interpreted frames were read whole is told
 * apart from one whose interpreted stack ends in a placeholder. */
static void test_stackquality_interp_whole(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_stackq *q = sp_stackq_new();
	struct sp_stackq_summary s;
	struct sp_stackq_cause c;
	struct sp_record r;
	const char *why = NULL;
	static const char *strs[] = { "/usr/lib/libruby.so.3.1", "[ruby]", "each",
				      "[ruby: truncated]" };
	unsigned int i;
	char buf[4096];

	add_strings(d, strs, 4);
	add_modules(d, false);	/* module 1: libruby, 2: [ruby] */
	/* frame 1: libruby; 2: "each" (interpreted); 3: "[ruby: truncated]" */
	for (i = 0; i < 3; i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = i ? 2 : 1;
		r.frame.rel = r.frame.addr = 0x100 + i;
		r.frame.mode = i ? SP_FRAME_INTERP : SP_FRAME_USER;
		CHECK(!sp_defs_add(d, &r, &why));
		if (!i)
			continue;
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_SYMBOL;
		r.symbol.frame = i + 1;
		r.symbol.func = i + 2;
		CHECK(!sp_defs_add(d, &r, &why));
	}
	/* stack 1 = [each]; 2 = [each, libruby leaf]; 3 = [truncated];
	 * 4 = [truncated, each, libruby leaf]; 5 = [libruby] */
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_STACK;
	r.stack.frame = 2;
	CHECK(!sp_defs_add(d, &r, &why));
	r.stack.parent = 1;
	r.stack.frame = 1;
	CHECK(!sp_defs_add(d, &r, &why));
	r.stack.parent = 0;
	r.stack.frame = 3;
	CHECK(!sp_defs_add(d, &r, &why));
	r.stack.parent = 3;
	r.stack.frame = 2;
	CHECK(!sp_defs_add(d, &r, &why));
	r.stack.parent = 4;
	r.stack.frame = 1;
	CHECK(!sp_defs_add(d, &r, &why));
	CHECK(why == NULL);

	sp_stackq_set_config(q, SP_CG_AUTO, 8192, 0);
	memset(&r, 0, sizeof(r));
	r.sample.unwind = SP_UNWIND_STACK_SIZE;
	r.sample.stack = 2;		/* whole */
	sp_stackq_add_sample(q, d, &r.sample);
	sp_stackq_add_sample(q, d, &r.sample);
	sp_stackq_add_sample(q, d, &r.sample);
	r.sample.stack = 5;		/* truncated */
	sp_stackq_add_sample(q, d, &r.sample);
	r.sample.unwind = SP_UNWIND_COMPLETE;
	sp_stackq_add_sample(q, d, &r.sample);
	sp_stackq_summary(q, &s);
	CHECK_EQ_U(s.interp_whole, 3);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK_EQ_U(c.count, 4);
	CHECK_EQ_U(c.interp_whole, 3);
	CHECK_STR(c.hint, "80.0% of stacks hit the 8192-byte stack copy, of which 75% still have "
		  "their whole interpreted stack (only the native frames root-ward of the copy "
		  "are lost); for those, use --call-graph=dwarf,32768");
	print_to(q, buf, sizeof(buf), "", 0);
	CHECK_STR(buf, "stacks: 20.0% complete (1 of 5 unwound samples reached the thread's "
		  "first frame); 3 more (60.0%) have their whole interpreted stack, cut only in "
		  "native frames\n");
	/* the module of a cut is its outermost native frame's, not an
	 * interpreted frame's spliced root-ward of it */
	r.sample.unwind = SP_UNWIND_NO_CFI;
	r.sample.stack = 2;
	sp_stackq_add_sample(q, d, &r.sample);
	CHECK(!sp_stackq_cause(q, 1, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_NO_CFI);
	CHECK_STR(c.module, "/usr/lib/libruby.so.3.1");
	sp_stackq_free(q);
	sp_defs_free(d);
}

/* A stack that ends at an address no process can map ends in garbage (an
 * error), not in JIT code; JIT code is one cause, whatever its module; and
 * no status is named twice. */
static void test_stackquality_unmappable_is_garbage(void)
{
	struct sp_defs *d = sp_defs_new();
	struct sp_stackq *q = sp_stackq_new();
	struct sp_record r;
	struct sp_stackq_summary s;
	struct sp_stackq_cause c;
	const char *why = NULL, *at;
	static const char *strs[] = { "//anon", "/memfd:doublemapper (deleted)" };
	/* module 1, module 2, ASCII "hash256m" read as an address, vsyscall */
	static const struct { uint64_t module, addr; } frames[] = {
		{ 1, 0x1010 }, { 2, 0x2020 }, { 0, 0x6d75733635326168ULL },
		{ 0, 0xffffffffff600400ULL },
	};
	/* stacks 1-4: one frame each; 5: frame 1 called from frame 3 */
	static const uint64_t stacks[][2] = { { 0, 1 }, { 0, 2 }, { 0, 3 }, { 0, 4 }, { 3, 1 } };
	static const struct { uint64_t stack, unwind; } samples[] = {
		{ 1, SP_UNWIND_JIT }, { 1, SP_UNWIND_JIT }, { 1, SP_UNWIND_JIT },
		{ 2, SP_UNWIND_JIT }, { 2, SP_UNWIND_JIT },
		{ 5, SP_UNWIND_JIT }, { 5, SP_UNWIND_JIT },	/* went on into data */
		{ 4, SP_UNWIND_NO_CFI },	/* the vsyscall page is mapped */
	};
	unsigned int i;
	char buf[4096];

	add_header(d, SP_CG_AUTO, "");
	add_strings(d, strs, 2);
	sp_stackq_set_header(q, sp_defs_header(d), d);
	add_modules(d, true);
	for (i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_FRAME;
		r.frame.module = frames[i].module;
		r.frame.rel = frames[i].module ? frames[i].addr - 0x1000 * frames[i].module : 0;
		r.frame.addr = frames[i].addr;
		r.frame.pid = frames[i].module ? 0 : 10;
		CHECK(!sp_defs_add(d, &r, &why));
	}
	for (i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.kind = SP_REC_STACK;
		r.stack.parent = stacks[i][0];
		r.stack.frame = stacks[i][1];
		CHECK(!sp_defs_add(d, &r, &why));
	}
	CHECK(why == NULL);
	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		memset(&r, 0, sizeof(r));
		r.sample.stack = samples[i].stack;
		r.sample.unwind = samples[i].unwind;
		sp_stackq_add_sample(q, d, &r.sample);
	}
	sp_stackq_summary(q, &s);
	CHECK_EQ_U(s.status[SP_UNWIND_JIT], 5);
	CHECK_EQ_U(s.status[SP_UNWIND_ERROR], 2);
	CHECK_EQ_U(s.status[SP_UNWIND_NO_CFI], 1);
	CHECK(!sp_stackq_cause(q, 0, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_JIT);
	CHECK_EQ_U(c.count, 5);
	CHECK(!sp_stackq_cause(q, 1, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_ERROR);
	CHECK_EQ_U(c.rel, 0x6d75733635326168ULL);
	CHECK_STR(c.hint, "25.0% of stacks ended at an address no process can map "
		  "(e.g. 0x6d75733635326168): a frame-pointer guess that went into data, "
		  "or a corrupt stack");
	CHECK(!sp_stackq_cause(q, 2, &c));
	CHECK_EQ_U(c.status, SP_UNWIND_NO_CFI);
	CHECK(sp_stackq_cause(q, 3, &c) == -1);

	print_to(q, buf, sizeof(buf), "sp-record: ", 3);
	at = strstr(buf, "  jit: 62.5% of stacks stopped in JIT-compiled code");
	CHECK(at != NULL);
	CHECK(at && strstr(at + strlen("  jit:"), "jit:") == NULL);	/* once */
	CHECK(strstr(buf, "  error: 25.0% of stacks ended at an address no process") != NULL);
	sp_stackq_free(q);
	sp_defs_free(d);
}

/* Causes of one status (two modules without CFI) under one name. */
static void test_stackquality_status_named_once(void)
{
	struct sp_stackq *q = sp_stackq_new();
	char buf[4096];
	const char *at;

	sp_stackq_set_config(q, SP_CG_DWARF, 8192, 127);
	sp_stackq_add(q, SP_UNWIND_NO_CFI, SP_SAMPLE_CPU, "/opt/lib/libfoo.so", 0x1234, 4);
	sp_stackq_add(q, SP_UNWIND_STACK_SIZE, SP_SAMPLE_CPU, "/usr/bin/x", 0x20, 3);
	sp_stackq_add(q, SP_UNWIND_NO_CFI, SP_SAMPLE_CPU, "/opt/lib/libbar.so", 0x99, 2);
	sp_stackq_add(q, SP_UNWIND_COMPLETE, SP_SAMPLE_CPU, "/usr/bin/x", 0x10, 1);
	print_to(q, buf, sizeof(buf), "p: ", 3);
	at = strstr(buf, "\np:   no_cfi: 40.0% of stacks stopped in libfoo.so at 0x1234");
	CHECK(at != NULL);
	CHECK(at && strstr(at + strlen("\np:   no_cfi:"), "no_cfi:") == NULL);
	/* libbar's line follows libfoo's, under the one name, before stack_size */
	at = at ? strchr(at + 1, '\n') : NULL;
	CHECK(at && !strncmp(at, "\np:           20.0% of stacks stopped in libbar.so at 0x99",
			     strlen("\np:           20.0% of stacks stopped in libbar.so at 0x99")));
	CHECK(strstr(buf, "\np:   stack_size: 30.0% of stacks hit") != NULL);
	print_to(q, buf, sizeof(buf), "p: ", 2);	/* the top two causes only */
	CHECK(strstr(buf, "libbar") == NULL);
	sp_stackq_free(q);
}

int main(void)
{
	TAP_RUN(test_stackquality_shares_and_order);
	TAP_RUN(test_stackquality_copy_size_limit);
	TAP_RUN(test_stackquality_bounded);
	TAP_RUN(test_stackquality_from_defs);
	TAP_RUN(test_stackquality_offcpu_copy);
	TAP_RUN(test_stackquality_interp_whole);
	TAP_RUN(test_stackquality_unmappable_is_garbage);
	TAP_RUN(test_stackquality_status_named_once);
	return TAP_DONE();
}
