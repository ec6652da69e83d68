// SPDX-License-Identifier: MIT
/*
 * Unit tests of the runtime hooks' interned names (runtime/hook/names.c,
 * compiled into the hook extensions, not into the library: included here).
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../runtime/hook/names.c"
#include "code_poke.h"
#include "tap.h"

/* Many names: each found again by its objects, with its own strings, at
 * an address no other name shares, none moved by the table's growth. */
static void test_rt_names_many(void)
{
	enum { N = 20000 };
	static struct sp_rt_name *made[N];
	struct sp_rt_names t = { 0 };
	char cls[32], meth[32];
	size_t i, len[3];
	bool ok = true;

	CHECK(sp_rt_names_find(&t, 1, 2, 3) == NULL);
	for (i = 0; i < N; i++) {
		const char *s[3] = { cls, meth, "file.rb" };

		len[0] = snprintf(cls, sizeof(cls), "C%zu", i);
		len[1] = snprintf(meth, sizeof(meth), "m%zu", i);
		len[2] = 7;
		/* keys that collide in the low bits */
		made[i] = sp_rt_names_add(&t, i << 12, 8, 0, s, len, (int)i);
		if (!made[i])
			ok = false;
	}
	CHECK(ok);
	CHECK_EQ_U(t.n, N);
	for (i = 0; ok && i < N; i++) {
		struct sp_rt_name *n = sp_rt_names_find(&t, i << 12, 8, 0);

		snprintf(cls, sizeof(cls), "C%zu", i);
		snprintf(meth, sizeof(meth), "m%zu", i);
		if (n != made[i] || strcmp(n->str[0], cls) || strcmp(n->str[1], meth) ||
		    strcmp(n->str[2], "file.rb") || n->line != (int)i)
			ok = false;
		if (i && (n->str[0] == made[i - 1]->str[0] || n->str[1] == made[i - 1]->str[1]))
			ok = false;
	}
	CHECK(ok);
	CHECK(sp_rt_names_find(&t, 1 << 12, 8, 1) == NULL);
	CHECK(sp_rt_names_find(&t, N << 12, 8, 0) == NULL);
	free(t.slot);	/* the names live as long as the process */
}

/* A missing string stays NULL; a long one is cut; the same objects made
 * again get a new name, and the old one keeps its bytes. */
static void test_rt_names_strings(void)
{
	struct sp_rt_names t = { 0 };
	char longs[300];
	const char *s[3] = { NULL, "f", longs };
	size_t len[3] = { 0, 1, sizeof(longs) };
	struct sp_rt_name *a, *b;

	memset(longs, 'x', sizeof(longs));
	a = sp_rt_names_add(&t, 1, 2, 3, s, len, 7);
	CHECK(a && a->str[0] == NULL);
	CHECK(a && !strcmp(a->str[1], "f"));
	CHECK(a && strlen(a->str[2]) == SP_RT_NAME_MAX);
	s[1] = "g";
	b = sp_rt_names_add(&t, 1, 2, 3, s, len, 8);
	CHECK(b && b != a && sp_rt_names_find(&t, 1, 2, 3) == b);
	CHECK(a && !strcmp(a->str[1], "f") && b && !strcmp(b->str[1], "g"));
	CHECK_EQ_U(t.n, 1);
	free(t.slot);
}

/* The rt__name marker's hits: with 0xcc at its site and no uprobe behind
 * it, each is a SIGTRAP that resumes after the 1-byte nop's place. */
static volatile sig_atomic_t told;

static void on_trap(int sig)
{
	(void)sig;
	told++;
}

/* The marker's first byte (code_poke.h). */
static bool poke_site(unsigned char b)
{
	return code_poke(sp_rt_name_site, b);
}

/*
 * A name is told (rt__name) at its first use while a recorder listens:
 * not while none does, once per name per recorder, again to the next one
 * that comes, a name made while one listens at once.
 */
static void test_rt_names_told_again(void)
{
	struct sp_rt_names t = { 0 };
	const char *s[3] = { "C", "f", "x.py" };
	size_t len[3] = { 1, 1, 4 };
	/* (read once: the site is const to the compiler, which may read it
	 * again where nop is used, after the poke) */
	unsigned char nop = *(const volatile unsigned char *)sp_rt_name_site;
	struct sigaction sa = { .sa_handler = on_trap }, old;
	struct sp_rt_name *a, *b;

	CHECK(nop != 0xcc);
	sigaction(SIGTRAP, &sa, &old);
	a = sp_rt_names_add(&t, 1, 2, 3, s, len, 0);
	CHECK(a != NULL);
	if (!a)
		goto out;
	sp_rt_name_use(a);		/* no one listens */
	sp_rt_name_use(a);
	CHECK_EQ_U(told, 0);
	if (!poke_site(0xcc)) {
		CHECK(!"mprotect of the marker's page");
		goto out;
	}
	sp_rt_name_use(a);		/* a recorder came: told */
	CHECK_EQ_U(told, 1);
	sp_rt_name_use(a);		/* once */
	CHECK_EQ_U(told, 1);
	b = sp_rt_names_add(&t, 4, 5, 6, s, len, 0);
	sp_rt_name_use(b);		/* made while it listens */
	sp_rt_name_use(b);
	CHECK_EQ_U(told, 2);
	poke_site(nop);
	sp_rt_name_use(a);		/* it went: nothing */
	sp_rt_name_use(b);
	CHECK_EQ_U(told, 2);
	poke_site(0xcc);
	sp_rt_name_use(b);		/* another came: each told again, once */
	sp_rt_name_use(a);
	sp_rt_name_use(a);
	CHECK_EQ_U(told, 4);
	poke_site(nop);
out:
	sigaction(SIGTRAP, &old, NULL);
	free(t.slot);
}

int main(void)
{
	TAP_RUN(test_rt_names_many);
	TAP_RUN(test_rt_names_strings);
	TAP_RUN(test_rt_names_told_again);
	return TAP_DONE();
}
