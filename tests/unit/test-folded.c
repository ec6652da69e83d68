// SPDX-License-Identifier: MIT
/* Unit tests of the flame graph aggregate (lib/render/folded.c, folded_*.c),
 * flamediff.c and flamesvg.c: records built in memory, expectations computed
 * by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defs.h"
#include "flame.h"
#include "sp.h"
#include "tap.h"

static struct sp_defs *d;

static void put(struct sp_folded *f, struct sp_record *r)
{
	const char *why = NULL;

	CHECK(sp_defs_add(d, r, &why) == 0);
	sp_folded_add(f, d, r, &why);
}

static uint64_t str(struct sp_folded *f, const char *s)
{
	struct sp_record r = { .kind = SP_REC_STRING };

	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = strlen(s);
	put(f, &r);
	return sp_defs_nstrings(d);
}

static uint64_t frame(struct sp_folded *f, uint64_t module, uint64_t rel, uint64_t mode)
{
	struct sp_record r = { .kind = SP_REC_FRAME };

	r.frame.module = module;
	r.frame.rel = rel;
	r.frame.addr = 0x400000 + rel;
	r.frame.mode = mode;
	put(f, &r);
	return sp_defs_nframes(d);
}

static void symbol(struct sp_folded *f, uint64_t fr, uint64_t index, const char *name)
{
	struct sp_record r = { .kind = SP_REC_SYMBOL };

	r.symbol.frame = fr;
	r.symbol.index = index;
	r.symbol.func = str(f, name);
	put(f, &r);
}

static uint64_t stack(struct sp_folded *f, uint64_t parent, uint64_t fr)
{
	struct sp_record r = { .kind = SP_REC_STACK };

	r.stack.parent = parent;
	r.stack.frame = fr;
	put(f, &r);
	return sp_defs_nstacks(d);
}

static int sample(struct sp_folded *f, uint64_t tid, uint64_t st, uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	const char *why = NULL;

	r.sample.pid = 10;
	r.sample.tid = tid;
	r.sample.stack = st;
	r.sample.weight = 1;
	r.sample.time = time;
	return sp_folded_add(f, d, &r, &why);
}

/* Render folded text into a string the caller frees. */
static char *folded_text(struct sp_folded *f, bool time_order)
{
	struct sp_flame_paths p;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	sp_folded_paths(f, time_order, &p);
	sp_folded_print(f, &p, m, false);
	sp_flame_paths_release(&p);
	fclose(m);
	return buf;
}

/*
 * A module "/bin/app" (id 1); frames: 1 main, 2 work, 3 leaf with "inl"
 * inlined into "leaf", 4 unresolved at rel 0x40, 5 kernel "sys_x".
 * Stacks: 1 main, 2 main;work, 3 main;work;leaf(+inl), 4 main;4, 5 = 3;sys_x.
 */
static struct sp_folded *setup(const struct sp_flame_opts *o, uint64_t *s)
{
	struct sp_folded *f = sp_folded_new(o);
	struct sp_record r = { .kind = SP_REC_MODULE };
	uint64_t f1, f2, f3, f4, f5;

	d = sp_defs_new();
	r.module.pid = 10;
	r.module.start = 0x400000;
	r.module.end = 0x500000;
	r.module.path = str(f, "/bin/app");
	put(f, &r);
	f1 = frame(f, 1, 0x10, SP_FRAME_USER);
	f2 = frame(f, 1, 0x20, SP_FRAME_USER);
	f3 = frame(f, 1, 0x30, SP_FRAME_USER);
	f4 = frame(f, 1, 0x40, SP_FRAME_USER);
	f5 = frame(f, 1, 0x50, SP_FRAME_KERNEL);
	symbol(f, f1, 0, "main");
	symbol(f, f2, 0, "work");
	symbol(f, f3, 0, "inl");
	symbol(f, f3, 1, "leaf");
	symbol(f, f5, 0, "sys_x");
	s[1] = stack(f, 0, f1);
	s[2] = stack(f, s[1], f2);
	s[3] = stack(f, s[2], f3);
	s[4] = stack(f, s[1], f4);
	s[5] = stack(f, s[3], f5);
	return f;
}

static void teardown(struct sp_folded *f)
{
	sp_folded_free(f);
	sp_defs_free(d);
	d = NULL;
}

static void test_folded_aggregate(void)
{
	struct sp_flame_opts o = { 0 };
	uint64_t s[6];
	struct sp_folded *f = setup(&o, s);
	char *t;

	CHECK_EQ_U(sample(f, 10, s[3], 1), SP_FOLDED_TAKEN);
	sample(f, 10, s[3], 2);
	sample(f, 11, s[5], 3);
	sample(f, 10, s[2], 4);
	sample(f, 10, s[4], 5);
	sample(f, 10, s[1], 6);
	t = folded_text(f, false);
	CHECK_STR(t, "main 1\n"
		     "main;app+0x40 1\n"
		     "main;work 1\n"
		     "main;work;leaf;inl 2\n"
		     "main;work;leaf;inl;sys_x 1\n");
	free(t);
	/* one distinct stack, one trie path: no growth on repeats */
	CHECK_EQ_U(sp_folded_stats(f)->samples[0], 6);
	CHECK_EQ_U(sp_folded_stats(f)->unresolved_frames, 1);
	/* main alone and main;app+0x40 are single user frames... the latter has two */
	CHECK_EQ_U(sp_folded_stats(f)->single_user, 1);
	teardown(f);
}

static void test_folded_options(void)
{
	struct sp_flame_opts o = { .annotate = true, .no_inline = true, .no_addresses = true,
				   .by = SP_FLAME_BY_THREAD };
	uint64_t s[6];
	struct sp_folded *f = setup(&o, s);
	char *t;

	sample(f, 11, s[5], 1);
	sample(f, 10, s[4], 2);
	t = folded_text(f, false);
	/* no comm known: the thread is named "?" */
	CHECK_STR(t, "?-10;main;[app] 1\n"
		     "?-11;main;work;leaf;sys_x_[k] 1\n");
	free(t);
	teardown(f);
}

static void test_folded_undefined_stack(void)
{
	struct sp_flame_opts o = { 0 };
	uint64_t s[6];
	struct sp_folded *f = setup(&o, s);
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	const char *why = NULL;

	r.sample.stack = 999;
	CHECK_EQ_U(sp_folded_add(f, d, &r, &why), (unsigned long long)SP_FOLDED_BAD);
	CHECK(why && strstr(why, "undefined stack"));
	CHECK_EQ_U(sp_folded_stats(f)->undefined, 1);
	CHECK_EQ_U(sp_folded_stats(f)->samples[0], 0);
	teardown(f);
}

static void test_folded_time_order(void)
{
	struct sp_flame_opts o = { .keep_sequence = true };
	uint64_t s[6];
	struct sp_folded *f = setup(&o, s);
	char *t;

	sample(f, 10, s[3], 1);
	sample(f, 10, s[3], 2);
	sample(f, 10, s[1], 3);
	sample(f, 10, s[3], 4);
	t = folded_text(f, true);
	CHECK_STR(t, "main;work;leaf;inl 2\nmain 1\nmain;work;leaf;inl 1\n");
	free(t);
	CHECK_EQ_U(sp_folded_nseq(f), 3);
	teardown(f);
}

static void test_folded_header(void)
{
	struct sp_flame_opts o = { .weight = SP_FLAME_W_TIME };
	struct sp_folded *f = sp_folded_new(&o);
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct sp_flame_opts o2 = { 0 };
	uint64_t s[6], f1, st;
	char *t;

	/* a header before anything else: the caches do not exist yet */
	r.header.sample_freq = 1000;
	r.header.event.p = (const uint8_t *)"cpu-clock";
	r.header.event.len = 9;
	r.header.command.p = (const uint8_t *)"./x";
	r.header.command.len = 3;
	d = sp_defs_new();
	put(f, &r);
	CHECK_STR(sp_folded_describe(f), "cpu-clock at 1000 Hz: ./x");
	CHECK_EQ_U(sp_folded_period_ns(f), 1000000);
	sp_defs_free(d);
	sp_folded_free(f);

	/* a second stream reuses ids for other frames: names are looked up again */
	f = setup(&o2, s);
	sample(f, 10, s[1], 1);
	sp_defs_reset(d);
	put(f, &r);
	f1 = frame(f, 0, 0x99, SP_FRAME_USER);
	symbol(f, f1, 0, "other");
	st = stack(f, 0, f1);
	CHECK_EQ_U(st, s[1]);
	sample(f, 10, st, 2);
	t = folded_text(f, false);
	CHECK_STR(t, "main 1\nother 1\n");
	free(t);
	teardown(f);
}

static void test_folded_text_roundtrip(void)
{
	struct sp_flame_opts o = { 0 };
	struct sp_folded *f = sp_folded_new(&o);
	const char *in[] = { "b;a\\x3bx 3", "b 1", "b;c 2", "bad line", "" };
	char *t;
	unsigned int i;
	int bad = 0;

	for (i = 0; i < 5; i++)
		bad += sp_folded_add_line(f, in[i], strlen(in[i])) < 0;
	CHECK_EQ_U(bad, 2);
	t = folded_text(f, false);
	CHECK_STR(t, "b 1\nb;a\\x3bx 3\nb;c 2\n");
	free(t);
	CHECK_STR(sp_folded_name(f, 2, NULL), "b");
	sp_folded_free(f);
}

static void test_flamediff_changes(void)
{
	struct sp_flame_opts o = { 0 };
	struct sp_folded *f = sp_folded_new(&o);
	struct sp_flame_paths p;
	struct sp_flame_change *c;
	char *buf = NULL;
	size_t n, len = 0;
	FILE *m;

	/* base: a;b 1, a;c 3 (total 4); new: a;b 3, a;c 3 (total 6) */
	sp_folded_add_line(f, "a;b 1", 5);
	sp_folded_add_line(f, "a;c 3", 5);
	sp_folded_set_column(f, 1);
	sp_folded_add_line(f, "a;b 3", 5);
	sp_folded_add_line(f, "a;c 3", 5);
	sp_folded_paths(f, false, &p);
	c = sp_flame_changes(f, &p, &n);
	CHECK_EQ_U(n, 3);
	/* b: 25% -> 50%, c: 75% -> 50%, a: 100% -> 100% */
	CHECK_STR(sp_folded_name(f, c[0].name, NULL), "b");
	CHECK(c[0].base_pct == 25.0 && c[0].new_pct == 50.0);
	CHECK_STR(sp_folded_name(f, c[1].name, NULL), "c");
	CHECK_STR(sp_folded_name(f, c[2].name, NULL), "a");
	free(c);
	m = open_memstream(&buf, &len);
	sp_flame_diff_print(f, &p, m, false);
	fclose(m);
	/* base scaled by 6/4: 1 -> 2 (1.5 rounded up), 3 -> 5 (4.5 rounded up) */
	CHECK_STR(buf, "a;b 2 3\na;c 5 3\n");
	free(buf);
	sp_flame_paths_release(&p);
	sp_folded_free(f);
}

static void test_flamesvg_escapes(void)
{
	struct sp_flame_opts o = { 0 };
	struct sp_folded *f = sp_folded_new(&o);
	struct sp_flame_paths p;
	struct sp_svg_opts so = { .title = "t<&>" };
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	sp_folded_add_line(f, "x<y>&\"z\" 2", 10);
	sp_folded_add_line(f, "bad\\x01\\xff 1", 13);
	sp_folded_paths(f, false, &p);
	m = open_memstream(&buf, &len);
	CHECK(sp_flame_svg(f, &p, &so, m) == 0);
	fclose(m);
	CHECK(strstr(buf, "<title>x&lt;y&gt;&amp;&quot;z&quot; (2 samples, 66.67%)</title>"));
	/* a control byte and a byte that is not UTF-8: their text form */
	CHECK(strstr(buf, "<title>bad\\x01\\xff (1 samples, 33.33%)</title>"));
	CHECK(strstr(buf, ">t&lt;&amp;&gt;</text>"));
	CHECK(!strstr(buf, "href"));
	free(buf);
	sp_flame_paths_release(&p);
	sp_folded_free(f);
}

static void test_flamesvg_color_deterministic(void)
{
	char a[32], b[32], c[32];

	sp_flame_color("main", SP_FN_USER, a, sizeof(a));
	sp_flame_color("main", SP_FN_USER, b, sizeof(b));
	sp_flame_color("main", SP_FN_KERNEL, c, sizeof(c));
	CHECK_STR(a, b);
	CHECK(strcmp(a, c) != 0);
}

static void put_span(struct sp_folded *f, uint64_t parent, uint64_t method, uint64_t start,
		     uint64_t stop)
{
	struct sp_record r = { .kind = SP_REC_SPAN };

	r.span = (struct sp_span){ .parent = parent, .pid = 1, .tid = 1, .method = method,
		.start = start, .stop = stop, .end = SP_END_STOPPED, .runtime = SP_RT_RUBY };
	put(f, &r);
}

static void put_fiber(struct sp_folded *f, uint64_t t, uint64_t from, uint64_t to, bool fresh)
{
	struct sp_record r = { .kind = SP_REC_FIBER_SWITCH };

	r.fiber_switch = (struct sp_fiber_switch){ .time = t, .pid = 1, .tid = 1, .from = from,
		.to = to, .flags = fresh ? SP_FIBER_NEW : 0 };
	put(f, &r);
}

/*
 * speedscope: a Ruby fiber's spans are a profile of their own. drive()
 * resumes fiber 0xb0, whose loop() (its parent: drive, the resumer) stays
 * open across a yield until the second drive() resumes it: whole in the
 * fiber's profile, not cut at the first drive's end in the thread's.
 */
static void test_speedscope_fibers(void)
{
	struct sp_flame_opts o = { .keep_spans = true };
	struct sp_folded *f = sp_folded_new(&o);
	struct sp_record r = { .kind = SP_REC_HEADER };
	uint64_t drive, loop;
	char *p = NULL, *fib;
	size_t n = 0;
	FILE *m;

	d = sp_defs_new();
	put(f, &r);
	drive = str(f, "drive");
	loop = str(f, "loop");
	put_fiber(f, 105, 0, 0xb0, true);
	put_fiber(f, 150, 0xb0, 0, false);
	put_fiber(f, 300, 0, 0xb0, false);
	put_fiber(f, 410, 0xb0, 0, false);
	put_span(f, 0, drive, 100, 200);	/* id 1 */
	put_span(f, 0, drive, 290, 420);	/* id 2 */
	put_span(f, 1, loop, 110, 400);		/* id 3 */
	m = open_memstream(&p, &n);
	CHECK(sp_speedscope_write(f, "x", m) == 0);
	fclose(m);
	fib = strstr(p, "\"name\":\"fiber 0xb0 1/1\"");
	CHECK(fib != NULL);
	if (fib) {
		CHECK(strstr(fib, "\"at\":110},{\"type\":\"C\",\"frame\":") != NULL);
		CHECK(strstr(fib, "\"at\":400}]}") != NULL);
		*fib = '\0';	/* the thread's profile comes before: no loop() in it */
	}
	CHECK(strstr(p, "\"at\":100},{\"type\":\"C\"") != NULL);
	CHECK(strstr(p, "\"at\":110}") == NULL);
	CHECK(strstr(p, "\"at\":420}") != NULL);
	free(p);
	sp_defs_free(d);
	sp_folded_free(f);
}

int main(void)
{
	TAP_RUN(test_folded_aggregate);
	TAP_RUN(test_folded_options);
	TAP_RUN(test_folded_undefined_stack);
	TAP_RUN(test_folded_time_order);
	TAP_RUN(test_folded_header);
	TAP_RUN(test_folded_text_roundtrip);
	TAP_RUN(test_flamediff_changes);
	TAP_RUN(test_flamesvg_escapes);
	TAP_RUN(test_speedscope_fibers);
	TAP_RUN(test_flamesvg_color_deterministic);
	return TAP_DONE();
}
