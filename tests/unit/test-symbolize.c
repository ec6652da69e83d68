// SPDX-License-Identifier: MIT
/*
 * Unit tests for lib/symbolize/symbolize.c and lib/elf/archive.c, on this test program's
 * own ELF file (built with -g): names and lines of its functions, build-id
 * checks, retirement, kernel and JIT tables, and the archive that keeps a
 * binary replaced on disk.
 */
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/archive.h"
#include "defs.h"
#include "buildid.h"
#include "symbolize.h"
#include "tap.h"

static const int helper_line = __LINE__ + 1;
static __attribute__((noinline)) int sym_helper(int x)
{
	return x * 7 + 3;
}

static int (*volatile helper_ptr)(int) = sym_helper;
static uintptr_t exe_bias;
static struct sp_elf_info self_info;
static char self_path[4096];
static char tmpdir[] = "/tmp/test-symbolize.XXXXXX";

static int find_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	exe_bias = info->dlpi_addr;
	return 1;
}

static uint64_t helper_vaddr(void)
{
	return (uintptr_t)helper_ptr - exe_bias;
}

static struct sp_module module(uint64_t id, uint64_t pid, const struct sp_elf_info *info)
{
	struct sp_module m = { .id = id, .pid = pid, .start = 0x400000, .end = 0x800000 };

	if (info) {
		m.build_id.p = info->build_id;
		m.build_id.len = info->build_id_len;
	}
	return m;
}

static struct sp_frame frame(uint64_t module, uint64_t rel, bool leaf)
{
	struct sp_frame f = { .module = module, .rel = rel, .addr = 0x400000 + rel,
			      .flags = leaf ? SP_FRAME_LEAF : 0 };

	return f;
}

static void test_symbolize_self(void)
{
	struct sp_symbolize_opts o = { .no_system_debug = true };
	struct sp_symbolizer *s = sp_symbolizer_new(&o);
	struct sp_module m = module(1, 10, &self_info);
	const struct sp_sym_result *r;
	struct sp_frame f;
	uint64_t loaded, live, resolved, total;

	sp_symbolizer_module(s, &m, self_path);
	f = frame(1, helper_vaddr(), true);
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_OK);
	CHECK_EQ_U(r->n, 1);
	CHECK_STR(r->level[0].func, "sym_helper");
	CHECK(r->level[0].file && strstr(r->level[0].file, "test-symbolize.c"));
	/* The entry's line is within the function's own three lines. */
	CHECK(r->level[0].line >= (uint32_t)helper_line && r->level[0].line <= (uint32_t)helper_line + 3);
	CHECK_EQ_U(r->level[0].offset, 0);
	CHECK(r->level[0].flags & SP_SYM_FROM_DWARF);
	/* A return address one past the entry is looked up at the entry. */
	f = frame(1, helper_vaddr() + 1, false);
	r = sp_symbolizer_frame(s, &f);
	CHECK_STR(r->level[0].func, "sym_helper");
	CHECK_EQ_U(r->level[0].offset, 1);
	/* The same again comes from the cache, the same answer. */
	r = sp_symbolizer_frame(s, &f);
	CHECK_STR(r->level[0].func, "sym_helper");
	sp_symbolizer_counts(s, &resolved, &total);
	CHECK_EQ_U(resolved, 3);
	CHECK_EQ_U(total, 3);
	sp_symbolizer_files(s, &loaded, &live);
	CHECK_EQ_U(loaded, 1);
	CHECK_EQ_U(live, 1);
	/* A second module of the same file (another process) shares the image. */
	m = module(2, 11, &self_info);
	sp_symbolizer_module(s, &m, self_path);
	f = frame(2, helper_vaddr(), true);
	r = sp_symbolizer_frame(s, &f);
	CHECK_STR(r->level[0].func, "sym_helper");
	sp_symbolizer_files(s, &loaded, &live);
	CHECK_EQ_U(loaded, 1);
	/* Retiring: a file module outlives the process it was first seen in
	 * (sp-record shares it); the file stays while one module maps it. */
	sp_symbolizer_process_end(s, 10, 0);
	sp_symbolizer_files(s, &loaded, &live);
	CHECK_EQ_U(live, 1);
	sp_symbolizer_module_end(s, 1);
	sp_symbolizer_files(s, &loaded, &live);
	CHECK_EQ_U(live, 1);
	sp_symbolizer_module_end(s, 2);
	sp_symbolizer_files(s, &loaded, &live);
	CHECK_EQ_U(live, 0);
	/* A frame of a retired module has no module. */
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_NO_MODULE);
	CHECK(helper_ptr(1) == 10);
	sp_symbolizer_free(s);
}

static void test_symbolize_mismatch_and_missing(void)
{
	struct sp_symbolize_opts o = { .no_system_debug = true };
	struct sp_symbolizer *s = sp_symbolizer_new(&o);
	struct sp_elf_info other = self_info;
	struct sp_module m;
	const struct sp_sym_result *r;
	struct sp_frame f;

	other.build_id[0] ^= 0xff;
	m = module(1, 10, &other);
	sp_symbolizer_module(s, &m, self_path);
	f = frame(1, helper_vaddr(), true);
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_BUILD_ID_MISMATCH);
	CHECK(r->level[0].func == NULL);
	m = module(2, 10, &self_info);
	sp_symbolizer_module(s, &m, "/nonexistent/prog");
	f = frame(2, helper_vaddr(), true);
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_FILE_MISSING);
	/* Without a build-id, the recorded size must match. */
	m = module(3, 10, NULL);
	m.size = 12345;
	sp_symbolizer_module(s, &m, self_path);
	f = frame(3, helper_vaddr(), true);
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_BUILD_ID_MISMATCH);
	sp_symbolizer_free(s);
}

static void test_symbolize_kernel_and_jit(void)
{
	struct sp_symbolizer *s = sp_symbolizer_new(NULL);
	struct sp_ksym k = { .addr = 0xffffffff81000000, .size = 0x100 };
	struct sp_jitsym j = { .pid = 5, .addr = 0x7000, .size = 0x10 };
	struct sp_module km = { .id = 1, .pid = 0, .flags = SP_MOD_KERNEL };
	struct sp_module anon = { .id = 2, .pid = 5, .start = 0x7000, .end = 0x8000,
				  .flags = SP_MOD_ANON };
	struct sp_frame f = { .module = 1, .addr = 0xffffffff81000010, .mode = SP_FRAME_KERNEL };
	const struct sp_sym_result *r;

	sp_symbolizer_module(s, &km, "[kernel.kallsyms]");
	sp_symbolizer_module(s, &anon, "//anon");
	CHECK(sp_symbolizer_should_defer(s, &f));
	sp_symbolizer_ksym(s, &k, "schedule", 8);
	CHECK(!sp_symbolizer_should_defer(s, &f));
	r = sp_symbolizer_frame(s, &f);
	CHECK_STR(r->level[0].func, "schedule");
	CHECK_EQ_U(r->level[0].offset, 0x10);
	f.addr = 0xffffffff81000100;	/* return address: looked up at pc - 1 */
	r = sp_symbolizer_frame(s, &f);
	CHECK_STR(r->level[0].func, "schedule");
	f.flags = SP_FRAME_LEAF;
	r = sp_symbolizer_frame(s, &f);
	CHECK(r->level[0].func == NULL);
	f = (struct sp_frame){ .module = 2, .addr = 0x7004, .flags = SP_FRAME_LEAF };
	CHECK(sp_symbolizer_should_defer(s, &f));
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_JIT_NO_MAP);
	sp_symbolizer_jitsym(s, &j, "Interpreted:foo", 15);
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_OK);
	CHECK_STR(r->level[0].func, "Interpreted:foo");
	/* An exec at time 100, whose end record comes after the definition
	 * of the new image's anonymous module (mapped at 200): that module
	 * stays, and the new image's symbols name its frames. */
	{
		struct sp_module m3 = { .id = 3, .pid = 5, .time = 200, .start = 0x9000,
					.end = 0xa000, .flags = SP_MOD_ANON };
		struct sp_jitsym j3 = { .pid = 5, .addr = 0x9000, .size = 0x10 };
		struct sp_frame f3 = { .module = 3, .addr = 0x9004, .flags = SP_FRAME_LEAF };

		sp_symbolizer_module(s, &m3, "//anon");
		sp_symbolizer_process_end(s, 5, 100);
		r = sp_symbolizer_frame(s, &f);	/* the old image's: gone with it */
		CHECK_EQ_U(r->status, SP_SYM_NO_MODULE);
		CHECK(sp_symbolizer_should_defer(s, &f3));
		sp_symbolizer_jitsym(s, &j3, "Compiled:bar", 12);
		r = sp_symbolizer_frame(s, &f3);
		CHECK_EQ_U(r->status, SP_SYM_OK);
		CHECK_STR(r->level[0].func, "Compiled:bar");
	}
	/* The process ends: its JIT symbols go. */
	sp_symbolizer_process_end(s, 5, 0);
	f = (struct sp_frame){ .module = 0, .pid = 5, .addr = 0x7004, .mode = SP_FRAME_JIT,
			       .flags = SP_FRAME_LEAF };
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_JIT_NO_MAP);
	sp_symbolizer_free(s);
}

/* Run a copy of this program that sleeps; return its pid and mapping. */
static pid_t run_copy(const char *copy, uint64_t *start, uint64_t *end)
{
	char maps[64], line[8192];
	pid_t pid;
	FILE *f;
	int tries;

	pid = fork();
	if (pid == 0) {
		execl(copy, copy, "--sleep", (char *)NULL);
		_exit(127);
	}
	*start = *end = 0;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	for (tries = 0; tries < 200 && !*start; tries++) {
		usleep(10000);
		f = fopen(maps, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned long lo, hi;
			char path[4096] = "";

			if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, path) == 3 &&
			    !strcmp(path, copy)) {
				*start = lo;
				*end = hi;
				break;
			}
		}
		fclose(f);
	}
	return pid;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	return close(out);
}

static void test_symbolize_archive_replaced(void)
{
	char copy[4200], archive[4200], repl[4200], *p;
	struct sp_symbolize_opts o = { .no_system_debug = true };
	struct sp_symbolizer *s;
	struct sp_module m;
	const struct sp_sym_result *r;
	struct sp_frame f;
	uint64_t start, end;
	struct stat st;
	pid_t pid;
	int rc;

	snprintf(copy, sizeof(copy), "%s/prog", tmpdir);
	snprintf(repl, sizeof(repl), "%s/prog.new", tmpdir);
	snprintf(archive, sizeof(archive), "%s/archive", tmpdir);
	CHECK(copy_file(self_path, copy) == 0);
	pid = run_copy(copy, &start, &end);
	CHECK(start != 0);
	/* Archived once per build-id. */
	rc = sp_archive_module(archive, pid, start, end, copy, self_info.build_id,
			       self_info.build_id_len);
	CHECK_EQ_U(rc, 1);
	rc = sp_archive_module(archive, pid, start, end, copy, self_info.build_id,
			       self_info.build_id_len);
	CHECK_EQ_U(rc, 0);
	p = sp_archive_path(archive, self_info.build_id, self_info.build_id_len, NULL);
	CHECK(p && stat(p, &st) == 0 && S_ISREG(st.st_mode));
	free(p);
	/* A wrong build-id is refused. */
	{
		uint8_t bad[20] = { 1, 2, 3 };

		rc = sp_archive_module(archive, pid, start, end, copy, bad, sizeof(bad));
		CHECK(rc == -1);
	}
	/* The binary is replaced on disk while it runs. */
	CHECK(copy_file("/bin/true", repl) == 0);
	CHECK(rename(repl, copy) == 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	/* Without the archive: the new file's build-id differs. */
	s = sp_symbolizer_new(&o);
	m = module(1, pid, &self_info);
	sp_symbolizer_module(s, &m, copy);
	f = frame(1, helper_vaddr(), true);
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_BUILD_ID_MISMATCH);
	CHECK(r->level[0].func == NULL);
	sp_symbolizer_free(s);

	/* With it: the exact image, never the new file. */
	o.archive = archive;
	s = sp_symbolizer_new(&o);
	sp_symbolizer_module(s, &m, copy);
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_OK);
	CHECK_STR(r->level[0].func, "sym_helper");
	CHECK(r->level[0].flags & SP_SYM_FROM_ARCHIVE);
	sp_symbolizer_free(s);

	/* Deleted altogether: still there. */
	unlink(copy);
	s = sp_symbolizer_new(&o);
	sp_symbolizer_module(s, &m, copy);
	r = sp_symbolizer_frame(s, &f);
	CHECK_STR(r->level[0].func, "sym_helper");
	sp_symbolizer_free(s);
}

static void test_symbolize_vdso(void)
{
	struct sp_symbolizer *s = sp_symbolizer_new(NULL);
	struct sp_module m = { .id = 1, .pid = 1, .start = 0x7fff0000, .end = 0x7fff2000 };
	struct sp_frame f = { .module = 1, .flags = SP_FRAME_LEAF };
	const struct sp_sym_result *r;
	uint64_t sym = 0;
	bool named = false;

	sp_symbolizer_reset(s, "");
	sp_symbolizer_module(s, &m, "[vdso]");
	/* Any address: the result must be named or say why, never crash. */
	for (sym = 0; sym < 0x2000; sym += 0x40) {
		f.rel = sym;
		r = sp_symbolizer_frame(s, &f);
		CHECK(r->status == SP_SYM_OK || r->status == SP_SYM_NO_SYMBOLS ||
		      r->status == SP_SYM_STRIPPED);
		if (r->level[0].func && strstr(r->level[0].func, "time"))
			named = true;
	}
	/* This machine's vDSO exports clock_gettime, gettimeofday, time. */
	CHECK(named);
	/* Recorded on another kernel: not this machine's vDSO. */
	sp_symbolizer_reset(s, "0.0.0-elsewhere");
	sp_symbolizer_module(s, &m, "[vdso]");
	f.rel = 0x800;
	r = sp_symbolizer_frame(s, &f);
	CHECK_EQ_U(r->status, SP_SYM_BUILD_ID_MISMATCH);
	sp_symbolizer_free(s);
}

/* What sp-symbolize asks of its spool writer's definitions: symbols checked, not kept. */
static void test_symbolize_defs_drop_symbols(void)
{
	struct sp_record mod = { .kind = SP_REC_MODULE }, fr = { .kind = SP_REC_FRAME };
	struct sp_record sym = { .kind = SP_REC_SYMBOL };
	const char *why = NULL;
	unsigned int n = 9;
	int keep;

	for (keep = 1; keep >= 0; keep--) {
		struct sp_defs *d = sp_defs_new();

		sp_defs_keep_symbols(d, keep);
		fr.frame.module = 1;
		fr.frame.rel = 0x1234;
		sym.symbol.frame = 1;
		sym.symbol.line = 42;
		CHECK(sp_defs_add(d, &mod, &why) == 0);
		CHECK(sp_defs_add(d, &fr, &why) == 0);
		CHECK(sp_defs_add(d, &sym, &why) == 0);
		if (keep)
			CHECK(sp_defs_symbols(d, 1, &n) != NULL && n == 1);
		else
			CHECK(sp_defs_symbols(d, 1, &n) == NULL);
		/* A symbol of an undefined frame is refused either way. */
		sym.symbol.frame = 7;
		CHECK(sp_defs_add(d, &sym, &why) == -1);
		sp_defs_free(d);
	}
}

int main(int argc, char **argv)
{
	char cmd[256];

	if (argc > 1 && !strcmp(argv[1], "--sleep")) {
		sleep(30);
		return 0;
	}
	/* No DWARF index cache in ~/.cache (tests/unit/test-symcache.c tests it). */
	setenv("SP_CACHE_DIR", "", 1);
	dl_iterate_phdr(find_bias, NULL);
	if (readlink("/proc/self/exe", self_path, sizeof(self_path) - 1) < 0 ||
	    sp_elf_info_file(self_path, &self_info) < 0 || !self_info.build_id_len) {
		printf("Bail out! cannot read this program's build-id\n");
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	TAP_RUN(test_symbolize_self);
	TAP_RUN(test_symbolize_mismatch_and_missing);
	TAP_RUN(test_symbolize_kernel_and_jit);
	TAP_RUN(test_symbolize_archive_replaced);
	TAP_RUN(test_symbolize_vdso);
	TAP_RUN(test_symbolize_defs_drop_symbols);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		printf("# could not remove %s\n", tmpdir);
	return TAP_DONE();
}
