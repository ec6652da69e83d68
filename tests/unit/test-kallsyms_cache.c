// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/kallsyms_cache.c: the per-boot cache of the
 * parsed /proc/kallsyms, and what is not trusted in it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "kallsyms.h"

static void test_kallsyms_cache(void)
{
	char dir[] = "/tmp/test-kallsyms-cache-XXXXXX", cmd[256], path[512] = "";
	struct sp_kallsyms a, b;
	const struct sp_kallsym *x, *y;
	FILE *p;

	if (geteuid() != 0) {
		printf("# not root: no addresses, nothing to cache\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	CHECK(sp_kallsyms_load_cached(&a, dir) == 0);
	CHECK(!a.from_cache);
	CHECK(a.text_lo && a.text_hi > a.text_lo);
	CHECK(sp_kallsyms_load_cached(&b, dir) == 0);
	CHECK(b.from_cache);
	CHECK_EQ_U(b.n, a.n);
	CHECK_EQ_U(b.text_lo, a.text_lo);
	x = sp_kallsyms_find(&a, a.text_lo + 0x1234, NULL);
	y = sp_kallsyms_find(&b, a.text_lo + 0x1234, NULL);
	CHECK(x && y && x->addr == y->addr &&
	      !strcmp(sp_kallsyms_str(&a, x->name), sp_kallsyms_str(&b, y->name)));
	CHECK(sp_kallsyms_in_text(&b, a.text_lo) && !sp_kallsyms_in_text(&b, a.text_hi));
	/* init text (start_kernel, in every idle task's stack) is vmlinux's:
	 * the cache names it too */
	CHECK(a.init_lo && a.init_hi > a.init_lo && a.init_lo >= a.text_hi);
	CHECK_EQ_U(b.init_lo, a.init_lo);
	CHECK_EQ_U(b.init_hi, a.init_hi);
	CHECK(sp_kallsyms_in_text(&b, a.init_lo) && !sp_kallsyms_in_text(&b, a.init_hi));
	sp_kallsyms_release(&b);

	/* A cache others may write is not trusted; a damaged one is rebuilt. */
	snprintf(cmd, sizeof(cmd), "ls %s/kallsyms-*", dir);
	p = popen(cmd, "r");
	CHECK(p && fgets(path, sizeof(path), p));
	if (p)
		pclose(p);
	path[strcspn(path, "\n")] = 0;
	chmod(path, 0666);
	CHECK(sp_kallsyms_load_cached(&b, dir) == 0);
	CHECK(!b.from_cache);		/* read afresh, and the cache rewritten */
	sp_kallsyms_release(&b);
	CHECK(truncate(path, 1000) == 0);
	CHECK(sp_kallsyms_load_cached(&b, dir) == 0);
	CHECK(!b.from_cache);
	CHECK(b.n > 1000);	/* BPF programs come and go: not exactly a.n */
	sp_kallsyms_release(&b);
	CHECK(sp_kallsyms_load_cached(&b, dir) == 0);
	CHECK(b.from_cache);
	sp_kallsyms_release(&b);
	sp_kallsyms_release(&a);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	TAP_RUN(test_kallsyms_cache);
	return TAP_DONE();
}
