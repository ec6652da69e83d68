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
#include <sys/stat.h>
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
	n = sp_elf_needed_libs(RUBY, NULL, NULL, libs, 16);
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
	n = sp_elf_needed_libs(RUBY, is_libruby, NULL, libs, 16);
	CHECK_EQ_U(n, 1);
	CHECK(n == 1 && strstr(libs[0], "/libruby-3.1.so"));
	CHECK_EQ_U(sp_elf_needed_libs(RUBY, NULL, NULL, libs, 2), 2);
	CHECK_EQ_U(sp_elf_needed_libs("/nonexistent", NULL, NULL, libs, 16), 0);
	CHECK_EQ_U(sp_elf_needed_libs("/etc/hostname", NULL, NULL, libs, 16), 0);
	free(libs);
}

/*
 * The loader's order with LD_LIBRARY_PATH: a program linked with a RUNPATH
 * to one directory and run with LD_LIBRARY_PATH naming another that has
 * the same library gets the latter (ldd says which, with that
 * environment); linked with an RPATH (no RUNPATH), the former. Entries are
 * split at ':' and ';'; a relative one is under the process's directory
 * (cwd); the results say whether LD_LIBRARY_PATH gave one, and whether
 * one was found nowhere.
 */
static void test_dynamic_needed_libs_ld_path(void)
{
	char dir[] = "/tmp/sp-test-ldpath-XXXXXX", cmd[2048], want[4096], real[PATH_MAX];
	char a[64], b[64], ld_path[160], prog[64], (*libs)[4096];
	const char *how[] = { "--enable-new-dtags", "--disable-new-dtags" };
	struct sp_elf_libsearch s = { 0 };
	int k;

	if (system("command -v cc > /dev/null 2>&1") || !mkdtemp(dir)) {
		printf("# skipped: needs a C compiler\n");
		return;
	}
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd), "mkdir %s %s && printf 'int f(void) { return 1; }' | "
		 "cc -shared -fPIC -x c -o %s/libspx.so - && cp %s/libspx.so %s/", a, b, a, a, b);
	libs = malloc(16 * sizeof(*libs));
	if (system(cmd)) {
		printf("# skipped: cannot build a library\n");
		goto out;
	}
	snprintf(ld_path, sizeof(ld_path), "/nonexistent;%s", b);
	for (k = 0; k < 2; k++) {
		snprintf(cmd, sizeof(cmd), "printf 'int f(void); int main(void) { return f(); }' | "
			 "cc -x c -o %s - -L%s -lspx -Wl,%s,-rpath,%s", prog, a, how[k], a);
		CHECK(!system(cmd));
		s.ld_path = ld_path;
		CHECK_EQ_U(sp_elf_needed_libs(dir, NULL, &s, libs, 16), 0);	/* no ELF */
		CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
		/* what ldd finds with that LD_LIBRARY_PATH */
		snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s' ldd %s | awk '$1 == \"libspx.so\" "
			 "{ print $3 }'", ld_path, prog);
		run(cmd, want, sizeof(want));
		if (!want[0]) {
			printf("# skipped: ldd cannot run %s\n", prog);
			goto out;
		}
		CHECK(realpath(want, real));
		CHECK_STR(libs[0], real);
		CHECK(strstr(libs[0], k == 0 ? "/b/libspx.so" : "/a/libspx.so"));
		CHECK(s.via_ld_path == (k == 0));
		CHECK(!s.missing);
	}
	/* a relative entry, under the process's directory (dir) */
	snprintf(cmd, sizeof(cmd), "printf 'int f(void); int main(void) { return f(); }' | "
		 "cc -x c -o %s - -L%s -lspx", prog, a);
	CHECK(!system(cmd));
	s.ld_path = "b";
	s.cwd = dir;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	CHECK(strstr(libs[0], "/b/libspx.so") && s.via_ld_path);
	s.cwd = NULL;	/* skipped: found nowhere (no RUNPATH) */
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 1);
	CHECK(s.missing && !s.via_ld_path);
	/* in the glibc-hwcaps subdirectories of an LD_LIBRARY_PATH entry,
	 * which ld.so looks in first, the highest level the CPU runs first:
	 * ldd says which */
	snprintf(cmd, sizeof(cmd), "for v in 2 3 4; do mkdir -p %s/glibc-hwcaps/x86-64-v$v && "
		 "cp %s/libspx.so %s/glibc-hwcaps/x86-64-v$v/ || exit 1; done", b, a, b);
	CHECK(!system(cmd));
	s.ld_path = b;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s' ldd %s | awk '$1 == \"libspx.so\" "
		 "{ print $3 }'", b, prog);
	run(cmd, want, sizeof(want));
	CHECK(want[0] && realpath(want, real));
	CHECK_STR(libs[0], real);
	printf("# ld.so took %s\n", real);
	/* the same in a RUNPATH's directory */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/glibc-hwcaps/x86-64-v2 && "
		 "cp %s/libspx.so %s/glibc-hwcaps/x86-64-v2/ && "
		 "printf 'int f(void); int main(void) { return f(); }' | "
		 "cc -x c -o %s - -L%s -lspx -Wl,--enable-new-dtags,-rpath,%s", a, a, a, prog, a, a);
	CHECK(!system(cmd));
	s.ld_path = NULL;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	snprintf(cmd, sizeof(cmd), "ldd %s | awk '$1 == \"libspx.so\" { print $3 }'", prog);
	run(cmd, want, sizeof(want));
	CHECK(want[0] && realpath(want, real));
	CHECK_STR(libs[0], real);
out:
	free(libs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(!system(cmd));
}

/* A library found through a user's LD_LIBRARY_PATH that is a link to a
 * file that user cannot read (root's, mode 0600, in a directory of mode
 * 0700): not taken for that user, as ld.so running as them could not open
 * it; taken for root, and for the user once the file is theirs to read. */
static void test_dynamic_needed_libs_unreadable(void)
{
	char dir[] = "/tmp/sp-test-unread-XXXXXX", cmd[2048], prog[64], (*libs)[4096];
	struct sp_elf_libsearch s = { 0 };

	if (geteuid() || system("command -v cc > /dev/null 2>&1") || !mkdtemp(dir)) {
		printf("# skipped: needs root and a C compiler\n");
		return;
	}
	libs = malloc(16 * sizeof(*libs));
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && chmod 0755 . && mkdir -m 0700 secret && mkdir -m 0755 user && "
		 "printf 'int f(void) { return 1; }' | cc -shared -fPIC -x c -o secret/libspx.so - && "
		 "chmod 0600 secret/libspx.so && ln -s %s/secret/libspx.so user/libspx.so && "
		 "printf 'int f(void); int main(void) { return f(); }' | "
		 "cc -x c -o prog - -Lsecret -lspx", dir, dir);
	if (system(cmd)) {
		printf("# skipped: cannot build a library\n");
		goto out;
	}
	snprintf(cmd, sizeof(cmd), "%s/user", dir);
	s.ld_path = cmd;
	s.uid = 65534;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 1);	/* libc only */
	CHECK(s.missing);
	s.uid = 0;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	CHECK(strstr(libs[0], "/secret/libspx.so") != NULL);
	/* readable by all, in a directory all may search: theirs too */
	snprintf(cmd, sizeof(cmd), "chmod 0755 %s/secret && chmod 0644 %s/secret/libspx.so", dir,
		 dir);
	CHECK(!system(cmd));
	snprintf(cmd, sizeof(cmd), "%s/user", dir);
	s.uid = 65534;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	/* a user not known (a process gone): what all may read is its */
	s.uid = SP_ELF_UID_UNKNOWN;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	/* readable by its group only (group 4242): its file-system group's,
	 * or one of its groups', not another's, not a user's not known */
	snprintf(cmd, sizeof(cmd), "chgrp 4242 %s/secret %s/secret/libspx.so && "
		 "chmod 0750 %s/secret && chmod 0640 %s/secret/libspx.so", dir, dir, dir, dir);
	CHECK(!system(cmd));
	snprintf(cmd, sizeof(cmd), "%s/user", dir);
	s.uid = 65534;
	s.gid = 4242;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	s.gid = 65534;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 1);
	s.groups[0] = 100;
	s.groups[1] = 4242;
	s.ngroups = 2;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 2);
	s.uid = SP_ELF_UID_UNKNOWN;
	CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 1);
	/* with an ACL the group's bits are its mask: not taken for the group */
	snprintf(cmd, sizeof(cmd), "command -v setfacl > /dev/null && "
		 "setfacl -m u:12345:r %s/secret/libspx.so", dir);
	if (!system(cmd)) {
		s.uid = 65534;
		CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 1);
		/* readable by others, but an ACL entry of its own says no */
		snprintf(cmd, sizeof(cmd), "chmod 0755 %s/secret && chmod 0644 %s/secret/libspx.so "
			 "&& setfacl -m u:65534:- %s/secret/libspx.so", dir, dir, dir);
		CHECK(!system(cmd));
		s.ngroups = 0;
		s.gid = 65534;
		CHECK_EQ_U(sp_elf_needed_libs(prog, NULL, &s, libs, 16), 1);
	} else {
		printf("# ACL case skipped: no setfacl\n");
	}
out:
	free(libs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(!system(cmd));
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
	TAP_RUN(test_dynamic_needed_libs_ld_path);
	TAP_RUN(test_dynamic_needed_libs_unreadable);
	TAP_RUN(test_dynamic_read_dynsym);
	TAP_RUN(test_dynamic_func_offset);
	return TAP_DONE();
}
