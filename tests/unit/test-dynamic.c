// SPDX-License-Identifier: MIT
/* Unit tests of lib/elf/dynamic.c on real files: the libraries Debian's
 * ruby needs (against readelf -d and the loader's own answer, ldd), a
 * dynamic symbol's bytes (python3.11's Py_Version against the interpreter's
 * sys.hexversion), a function's file offset in ld.so (against readelf -s
 * and the segments), and the offset/address round trip. */
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/dynamic.h"
#include "elf/elffile.h"
#include "tap.h"

#define RUBY "/usr/bin/ruby3.1"
#define PYTHON "/usr/bin/python3.11"
#define LDSO "/lib64/ld-linux-x86-64.so.2"

/* The first line of a command's output, or "" */
static void run(const char *cmd, char *out, size_t size)
{
	FILE *f = popen(cmd, "r");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(out, (int)size, f))
		out[strcspn(out, "\n")] = 0;
	pclose(f);
}

static bool is_libruby(const char *name)
{
	return !strncmp(name, "libruby", 7);
}

static void test_dynamic_needed_libs(void)
{
	char (*libs)[4096] = malloc(16 * sizeof(*libs)), want[4096], cmd[512], real[PATH_MAX];
	int n, i, needed;

	if (access(RUBY, R_OK)) {
		printf("# skipped: no Debian ruby3.1\n");
		free(libs);
		return;
	}
	run("readelf -dW " RUBY " | grep -c NEEDED", want, sizeof(want));
	needed = atoi(want);
	CHECK(needed > 1);
	n = sp_elf_needed_libs(RUBY, NULL, libs, 16);
	CHECK_EQ_U(n, needed);
	/* each as the loader finds it (ldd), made absolute */
	for (i = 0; i < n; i++) {
		const char *base = strrchr(libs[i], '/') + 1;
		char soname[256];

		/* libruby-3.1.so.3.1 -> the ldd line of libruby-3.1.so.3.1 */
		snprintf(soname, sizeof(soname), "%.*s", (int)(strstr(base, ".so") - base + 3),
			 base);
		snprintf(cmd, sizeof(cmd), "ldd " RUBY " | awk '$1 ~ /^%s/ { print $3 }'", soname);
		run(cmd, want, sizeof(want));
		CHECK(want[0] && realpath(want, real) && !strcmp(real, libs[i]));
	}
	/* only those asked for, at most n */
	n = sp_elf_needed_libs(RUBY, is_libruby, libs, 16);
	CHECK_EQ_U(n, 1);
	CHECK(n == 1 && strstr(libs[0], "/libruby-3.1.so"));
	CHECK_EQ_U(sp_elf_needed_libs(RUBY, NULL, libs, 2), 2);
	CHECK_EQ_U(sp_elf_needed_libs("/nonexistent", NULL, libs, 16), 0);
	CHECK_EQ_U(sp_elf_needed_libs("/etc/hostname", NULL, libs, 16), 0);
	free(libs);
}

static void test_dynamic_read_dynsym(void)
{
	char want[64];
	uint32_t v = 0;

	CHECK(sp_elf_read_dynsym("/nonexistent", "Py_Version", &v, 4) == -1);
	if (access(PYTHON, X_OK)) {
		printf("# skipped: no Debian python3.11\n");
		return;
	}
	run(PYTHON " -c 'import sys; print(sys.hexversion)'", want, sizeof(want));
	CHECK(!sp_elf_read_dynsym(PYTHON, "Py_Version", &v, 4));
	CHECK_EQ_U(v, strtoul(want, NULL, 10));
	CHECK(sp_elf_read_dynsym(PYTHON, "no_such_symbol_here", &v, 4) == -1);
	/* more bytes than the symbol's section holds */
	CHECK(sp_elf_read_dynsym(PYTHON, "Py_Version", &v, (size_t)1 << 40) == -1);
}

static void test_dynamic_func_offset(void)
{
	char want[64];
	uint64_t off, va;
	Elf *e;
	int fd;

	if (access(LDSO, R_OK)) {
		printf("# skipped: no " LDSO "\n");
		return;
	}
	run("readelf -sW " LDSO " | awk '$8 ~ /^_dl_debug_state/ { print $2; exit }'", want,
	    sizeof(want));
	off = sp_elf_func_offset(LDSO, "_dl_debug_state");
	CHECK(want[0] && off > 0);
	e = sp_elf_open(LDSO, SP_ELF_READ, 0, &fd, NULL);
	CHECK(e != NULL);
	if (!e)
		return;
	/* the symbol's address, through the segments, is that offset */
	va = sp_elf_offset_to_va(e, off);
	CHECK_EQ_U(va, strtoull(want, NULL, 16));
	CHECK_EQ_U(sp_elf_va_to_offset(e, va, true), (int64_t)off);
	CHECK(sp_elf_va_to_offset(e, UINT64_MAX - 1, false) == -1);
	CHECK(sp_elf_offset_to_va(e, UINT64_MAX - 1) == UINT64_MAX);
	sp_elf_close(e, fd);
	CHECK_EQ_U(sp_elf_func_offset(LDSO, "no_such_function"), 0);
	CHECK_EQ_U(sp_elf_func_offset("/nonexistent", "_dl_debug_state"), 0);
}

int main(void)
{
	TAP_RUN(test_dynamic_needed_libs);
	TAP_RUN(test_dynamic_read_dynsym);
	TAP_RUN(test_dynamic_func_offset);
	return TAP_DONE();
}
