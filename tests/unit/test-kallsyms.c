// SPDX-License-Identifier: MIT
/* Unit tests of lib/elf/kallsyms.c: line parsing, lookups in a kallsyms file
 * written here, hidden (zero) addresses, and the real /proc/kallsyms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "kallsyms.h"

static void test_kallsyms_parse_line(void)
{
	char l1[] = "ffffffff81000000 T _stext\n";
	char l2[] = "ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n";
	char l3[] = "ffffffff83b28748 R __start_runtime\n";
	char l4[] = "nothex T x\n";
	char l5[] = "ffffffff81000000 T\n";
	uint64_t a;
	char *n, *m;

	CHECK(sp_kallsyms_parse_line(l1, &a, &n, &m) == 1);
	CHECK_EQ_U(a, 0xffffffff81000000ull);
	CHECK_STR(n, "_stext");
	CHECK_STR(m, "");
	CHECK(sp_kallsyms_parse_line(l2, &a, &n, &m) == 1);
	CHECK_STR(n, "ftrace_trampoline");
	CHECK_STR(m, "__builtin__ftrace");
	CHECK(sp_kallsyms_parse_line(l3, &a, &n, &m) == 0);	/* data: not code */
	CHECK(sp_kallsyms_parse_line(l4, &a, &n, &m) == -1);
	CHECK(sp_kallsyms_parse_line(l5, &a, &n, &m) == -1);
}

static char *write_tmp(const char *text)
{
	static char path[] = "/tmp/test-kallsyms-XXXXXX";
	int fd;

	strcpy(path, "/tmp/test-kallsyms-XXXXXX");
	fd = mkstemp(path);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_kallsyms_find(void)
{
	/* Out of order, a data symbol, an alias, a module symbol. */
	const char *text =
		"0000000000002000 T second\n"
		"0000000000001000 T first\n"
		"0000000000001800 D data_not_code\n"
		"0000000000002000 t second_alias\n"
		"0000000000003000 t in_module\t[mymod]\n";
	struct sp_kallsyms k;
	const struct sp_kallsym *s;
	uint64_t size;
	char *path = write_tmp(text);

	CHECK(sp_kallsyms_load(&k, path) == 0);
	unlink(path);
	CHECK_EQ_U(k.n, 4);
	CHECK(!k.zero);
	CHECK(sp_kallsyms_find(&k, 0xfff, NULL) == NULL);
	s = sp_kallsyms_find(&k, 0x1000, &size);
	CHECK(s && !strcmp(sp_kallsyms_str(&k, s->name), "first"));
	CHECK_EQ_U(size, 0x1000);
	s = sp_kallsyms_find(&k, 0x1fff, &size);	/* data symbols do not split code */
	CHECK(s && !strcmp(sp_kallsyms_str(&k, s->name), "first"));
	s = sp_kallsyms_find(&k, 0x2abc, &size);
	CHECK(s && s->addr == 0x2000);
	CHECK_EQ_U(size, 0x1000);
	s = sp_kallsyms_find(&k, 0x3010, &size);
	CHECK(s && !strcmp(sp_kallsyms_str(&k, s->name), "in_module"));
	CHECK_STR(sp_kallsyms_str(&k, s->kmod), "mymod");
	CHECK_EQ_U(size, 0);			/* the last one: size unknown */
	sp_kallsyms_release(&k);
}

static void test_kallsyms_hidden(void)
{
	struct sp_kallsyms k;
	char *path = write_tmp("0000000000000000 T a\n0000000000000000 T b\n");

	CHECK(sp_kallsyms_load(&k, path) == 0);
	unlink(path);
	CHECK(k.zero);
	CHECK(sp_kallsyms_find(&k, 0, NULL) == NULL);
	sp_kallsyms_release(&k);
	CHECK(sp_kallsyms_load(&k, "/nonexistent") == -1);
}

static void test_kallsyms_proc(void)
{
	struct sp_kallsyms k;
	const struct sp_kallsym *s;
	uint64_t addr = 0;
	char line[512], name[256], type;
	FILE *f;

	if (geteuid() != 0) {
		printf("# not root: /proc/kallsyms hides addresses\n");
		return;
	}
	/* schedule's address, read here without the code under test. */
	f = fopen("/proc/kallsyms", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx %c %255s", &addr, &type, name) == 3 && !strcmp(name, "schedule"))
			break;
	if (f)
		fclose(f);
	CHECK(sp_kallsyms_load(&k, NULL) == 0);
	CHECK(k.n > 1000);
	s = sp_kallsyms_find(&k, addr + 1, NULL);
	CHECK(s && s->addr == addr);
	sp_kallsyms_release(&k);
}

int main(void)
{
	TAP_RUN(test_kallsyms_parse_line);
	TAP_RUN(test_kallsyms_find);
	TAP_RUN(test_kallsyms_hidden);
	TAP_RUN(test_kallsyms_proc);
	return TAP_DONE();
}
