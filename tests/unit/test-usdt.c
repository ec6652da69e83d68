// SPDX-License-Identifier: MIT
/* Unit tests of lib/elf/usdt.c: the SDT notes of real ELF files (the
 * fixtures' <stackpulse/span.h> programs, the Ruby hook, Debian's libruby
 * and python3.11), checked against what binutils' readelf -n reads from
 * the same files; the probes' file offsets, checked against the bytes
 * there; files that are no ELF or no regular file. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/usdt.h"
#include "tap.h"

#define LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"
#define PYTHON "/usr/bin/python3.11"
#define REGS_ARGS "8@%rdi 8@%rsi -4@%edx"	/* <stackpulse/span.h> in C */
#define HOOK_ARGS "8@%rdi 8@%rsi 8@%rdx -4@%ecx"	/* runtime/hook/marker.h */

#define MAX_NOTES 512

struct notes {
	int n;
	char line[MAX_NOTES][300];	/* "provider:name:args" */
};

static void collect(void *arg, const struct sp_usdt_note *n)
{
	struct notes *ns = arg;

	if (ns->n < MAX_NOTES)
		snprintf(ns->line[ns->n++], sizeof(ns->line[0]), "%s:%s:%s", n->provider,
			 n->name ? n->name : "?", n->args ? n->args : "?");
}

/* The SDT notes of path as readelf -n prints them; -1 without readelf. */
static int readelf_notes(const char *path, struct notes *ns)
{
	char cmd[512], line[512], prov[128] = "", name[128] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -nW '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	ns->n = 0;
	while (fgets(line, sizeof(line), f)) {
		char *v, *nl = strchr(line, '\n');

		if (nl)
			*nl = 0;
		if ((v = strstr(line, "Provider: ")))
			snprintf(prov, sizeof(prov), "%s", v + 10);
		else if ((v = strstr(line, "Name: ")))
			snprintf(name, sizeof(name), "%s", v + 6);
		else if ((v = strstr(line, "Arguments: ")) && ns->n < MAX_NOTES)
			snprintf(ns->line[ns->n++], sizeof(ns->line[0]), "%s:%s:%s", prov, name,
				 v + 11);
	}
	return pclose(f) == 0 ? 0 : -1;
}

static void check_notes(const char *path)
{
	static struct notes got, want;
	int i, same = 1;

	if (access(path, R_OK)) {
		printf("# skipped %s: not there\n", path);
		return;
	}
	if (readelf_notes(path, &want)) {
		printf("# skipped %s: no readelf\n", path);
		return;
	}
	got.n = 0;
	CHECK(sp_usdt_notes(path, collect, &got) == 0);
	CHECK(want.n > 0);
	CHECK_EQ_U(got.n, want.n);
	for (i = 0; i < got.n && i < want.n; i++)
		if (strcmp(got.line[i], want.line[i])) {
			printf("# %s: note %d: '%s', readelf '%s'\n", path, i, got.line[i],
			       want.line[i]);
			same = 0;
		}
	CHECK(same);
}

static void test_usdt_notes(void)
{
	static struct notes got;
	char exe[4096];
	ssize_t n;

	check_notes("build/examples/spans_c");
	check_notes("build/examples/spans_cxx");
	check_notes("build/examples/libspans_lib.so");
	check_notes("build/runtime/ruby/3.1/stackpulse_hook.so");
	check_notes(LIBRUBY);
	check_notes(PYTHON);
	/* this test binary has none */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = 0;
	got.n = 0;
	CHECK(sp_usdt_notes(exe, collect, &got) == 0);
	CHECK_EQ_U(got.n, 0);
	/* no file, no ELF file */
	errno = 0;
	CHECK(sp_usdt_notes("/nonexistent/file", collect, &got) == -1 && errno == ENOENT);
	errno = 0;
	CHECK(sp_usdt_notes("/etc/hostname", collect, &got) == -1 && errno == ENOEXEC);
}

/* Whether the 5 bytes at offset off of path are the markers' nop. */
static bool nop1_at(const char *path, uint64_t off)
{
	unsigned char b = 0;
	FILE *f = fopen(path, "rb");
	bool ok;

	if (!f)
		return false;
	ok = !fseek(f, (long)off, SEEK_SET) && fread(&b, 1, 1, f) == 1 && b == 0x90;
	fclose(f);
	return ok;
}

static bool nop5_at(const char *path, uint64_t off)
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	unsigned char b[5];
	FILE *f = fopen(path, "rb");
	bool ok;

	if (!f)
		return false;
	ok = !fseek(f, (long)off, SEEK_SET) && fread(b, 1, 5, f) == 5 && !memcmp(b, nop5, 5);
	fclose(f);
	return ok;
}

/* The file offsets of a probe's locations: each one is the marker's 5-byte
 * nop in the file (checked apart from the notes), as many as markers. */
static void test_usdt_offsets(void)
{
	const char *hook = "build/runtime/ruby/3.1/stackpulse_hook.so";
	uint64_t offs[64];
	int n, i, begins = 0;
	bool ok = true;

	if (access("build/examples/spans_c", R_OK)) {
		printf("# skipped: build/examples/spans_c not built\n");
		return;
	}
	n = sp_usdt_offsets("build/examples/spans_c", "stackpulse", "span__begin", REGS_ARGS,
			    offs, 64);
	/* tests/fixtures/src/spans_c.c: its SP_SPAN_BEGIN lines */
	begins = 0;
	{
		FILE *f = fopen("tests/fixtures/src/spans_c.c", "r");
		char line[512];

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "SP_SPAN_BEGIN(") && !strstr(line, "define"))
				begins++;
		if (f)
			fclose(f);
	}
	CHECK(begins > 2);
	CHECK_EQ_U(n, begins);
	for (i = 0; i < n; i++)
		if (!nop5_at("build/examples/spans_c", offs[i]))
			ok = false;
	CHECK(ok);
	/* other operands, a probe that is not there, too small a buffer */
	CHECK(sp_usdt_offsets("build/examples/spans_c", "stackpulse", "span__begin", "8@%rax",
			      offs, 64) == -1);
	CHECK_EQ_U(sp_usdt_offsets("build/examples/spans_c", "stackpulse", "nope", NULL, offs,
				   64), 0);
	CHECK(sp_usdt_offsets("build/examples/spans_c", "stackpulse", "span__begin", NULL, offs,
			      1) == -1);
	CHECK(sp_usdt_offsets("/etc/hostname", "stackpulse", "span__begin", NULL, offs, 64) ==
	      -1);
	/* the Ruby hook, a shared library: one location per marker */
	if (access(hook, R_OK)) {
		printf("# skipped the Ruby hook: not built\n");
		return;
	}
	n = sp_usdt_offsets(hook, "stackpulse", "rb__call", HOOK_ARGS, offs, 64);
	CHECK_EQ_U(n, 1);
	/* the hooks' markers are <sys/sdt.h>'s 1-byte nop (runtime/hook/marker.h) */
	CHECK(n == 1 && nop1_at(hook, offs[0]));
	/* a library with semaphores is refused (they need a reference counter) */
	if (!access(LIBRUBY, R_OK))
		CHECK(sp_usdt_offsets(LIBRUBY, "ruby", "method__entry", NULL, offs, 64) == -1);
}

struct locs {
	int n, sems;
	uint64_t size;
	bool inside;
};

static int count_loc(void *arg, const struct sp_usdt_loc *l)
{
	struct locs *ls = arg;

	ls->n++;
	ls->sems += l->sem;
	if (l->off >= ls->size || (l->sem && (!l->sem_off || l->sem_off >= ls->size)) ||
	    (!l->sem && l->sem_off) || !l->args || !*l->args)
		ls->inside = false;
	return 0;
}

static int refuse_loc(void *arg, const struct sp_usdt_loc *l)
{
	return -1;
}

/* Every location of a probe, with its semaphore: as many as readelf's notes
 * of it, each inside the file. */
static void test_usdt_locations(void)
{
	static struct notes want;
	struct locs ls = { 0 };
	struct stat st;
	int i, n, entries = 0;

	if (access(LIBRUBY, R_OK) || readelf_notes(LIBRUBY, &want)) {
		printf("# skipped: no Debian libruby or no readelf\n");
		return;
	}
	for (i = 0; i < want.n; i++)
		if (!strncmp(want.line[i], "ruby:method__entry:", 19))
			entries++;
	CHECK(entries > 0);
	CHECK(!stat(LIBRUBY, &st));
	ls.size = (uint64_t)st.st_size;
	ls.inside = true;
	n = sp_usdt_locations(LIBRUBY, "ruby", "method__entry", count_loc, &ls);
	CHECK_EQ_U(n, entries);
	CHECK_EQ_U(ls.n, entries);
	CHECK_EQ_U(ls.sems, entries);	/* Ruby's probes have semaphores */
	CHECK(ls.inside);
	/* the caller's refusal ends the walk */
	CHECK(sp_usdt_locations(LIBRUBY, "ruby", "method__entry", refuse_loc, NULL) == -1);
	CHECK_EQ_U(sp_usdt_locations(LIBRUBY, "ruby", "nope", refuse_loc, NULL), 0);
}

/* A FIFO is refused at once (not opened: the test would block), as a
 * directory is. */
static void test_usdt_not_regular(void)
{
	char dir[] = "/tmp/test-usdt.XXXXXX", path[64];
	static struct notes got;
	uint64_t offs[4];

	if (!mkdtemp(dir))
		return;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(!mkfifo(path, 0600));
	CHECK(sp_usdt_notes(path, collect, &got) == -1);
	CHECK(sp_usdt_offsets(path, "stackpulse", "span__begin", NULL, offs, 4) == -1);
	CHECK(sp_usdt_notes(dir, collect, &got) == -1);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	TAP_RUN(test_usdt_notes);
	TAP_RUN(test_usdt_offsets);
	TAP_RUN(test_usdt_locations);
	TAP_RUN(test_usdt_not_regular);
	return TAP_DONE();
}
