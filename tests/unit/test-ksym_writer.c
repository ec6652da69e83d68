// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/ksym_writer.c: one ksym record per kernel
 * function, named as /proc/kallsyms names it, from the first read and from
 * the per-boot cache; a fresh read for what the cache cannot name; what the
 * end says of frames without a symbol. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "record/ksym_writer.h"
#include "reader.h"
#include "stderr_capture.h"
#include "writer.h"

/* The address of name's code symbol in /proc/kallsyms, 0 if none. */
static uint64_t kallsyms_addr(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], sym[256], type;
	unsigned long long a;
	uint64_t found = 0;

	while (f && !found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && (type == 'T' || type == 't') &&
		    !strcmp(sym, name))
			found = a;
	if (f)
		fclose(f);
	return found;
}

/* Put addrs through k into a spool; the ksyms written, as "ADDR NAME\n"
 * lines, into out. Returns how many. */
static unsigned int put_and_read(struct sp_ksym_writer *k, const uint64_t *addrs, size_t n,
				 char *out, size_t size)
{
	struct sp_record h = { .kind = SP_REC_HEADER }, r;
	int fd = memfd_create("spool", 0);
	struct sp_writer *w = sp_writer_new(fd, "memfd", SP_FORMAT_SPOOL);
	struct sp_reader *rd;
	unsigned int got = 0;
	size_t i, len = 0;

	CHECK(sp_writer_put(w, &h) == 0);
	for (i = 0; i < n; i++)
		sp_ksym_writer_put(k, w, addrs[i]);
	CHECK(sp_writer_close(w) == 0);
	lseek(fd, 0, SEEK_SET);
	rd = sp_reader_open_fd(fd, "memfd");
	out[0] = 0;
	while (rd && sp_reader_next(rd, &r) > 0) {
		if (r.kind != SP_REC_KSYM)
			continue;
		got++;
		len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%" PRIx64 " %s\n",
					r.ksym.addr, sp_defs_strz(sp_reader_defs(rd), r.ksym.name));
	}
	sp_reader_close(rd);
	close(fd);
	return got;
}

static void test_ksym_writer_names(void)
{
	char dir[] = "/tmp/test-ksym-writer-XXXXXX", cmd[128], out[1024], want[256];
	uint64_t sched = kallsyms_addr("schedule"), exit_ = kallsyms_addr("do_exit");
	uint64_t start = kallsyms_addr("start_kernel");
	struct sp_ksym_writer a = { 0 }, b = { 0 };

	if (geteuid() != 0 || !sched || !exit_) {
		printf("# not root, or no schedule/do_exit in /proc/kallsyms: skipped\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	setenv("SP_CACHE_DIR", dir, 1);

	/* No cache yet: read on a thread, waited for at the first frame. */
	{
		const uint64_t addrs[] = { sched + 1, exit_ + 2, sched + 3, sched };

		sp_ksym_writer_start(&a, false);
		CHECK_EQ_U(put_and_read(&a, addrs, 4, out, sizeof(out)), 2);
		snprintf(want, sizeof(want), "%" PRIx64 " schedule\n%" PRIx64 " do_exit\n", sched,
			 exit_);
		CHECK_STR(out, want);
		CHECK(!a.tab.from_cache);
		CHECK_EQ_U(a.missing, 0);
	}
	/* The cache the first read wrote: the same names, mapped. */
	{
		const uint64_t addrs[] = { exit_ + 1 };

		sp_ksym_writer_start(&b, false);
		CHECK(b.tab.from_cache);
		CHECK_EQ_U(put_and_read(&b, addrs, 1, out, sizeof(out)), 1);
		snprintf(want, sizeof(want), "%" PRIx64 " do_exit\n", exit_);
		CHECK_STR(out, want);
		CHECK(b.tab.from_cache);	/* vmlinux text: no fresh read */
		CHECK(!b.fresh && !b.fresh_ok);
	}
	/* vmlinux's init text too: start_kernel, at the root of every idle
	 * task's stack (-a's CPU samples) */
	if (start) {
		const uint64_t addrs[] = { start + 4 };

		CHECK_EQ_U(put_and_read(&b, addrs, 1, out, sizeof(out)), 1);
		snprintf(want, sizeof(want), "%" PRIx64 " start_kernel\n", start);
		CHECK_STR(out, want);
		CHECK(b.tab.from_cache && !b.fresh);
	}
	/* Past vmlinux text (modules, BPF programs): the cache cannot say;
	 * the kernel's table is read again, once, and replaces it. */
	{
		const uint64_t addrs[] = { b.tab.text_hi + 16, sched + 1 };

		CHECK(b.tab.text_hi > sched);
		put_and_read(&b, addrs, 2, out, sizeof(out));
		CHECK(b.fresh && b.fresh_ok && !b.fresh->thread_run);
		snprintf(want, sizeof(want), "%" PRIx64 " schedule\n", sched);
		CHECK(strstr(out, want) != NULL);
	}
	sp_ksym_writer_release(&a);
	sp_ksym_writer_release(&b);
	unsetenv("SP_CACHE_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* fresh_now: the fresh read begins at start, and is what names a module. */
static void test_ksym_writer_fresh_now(void)
{
	char dir[] = "/tmp/test-ksym-writer-XXXXXX", cmd[128];
	struct sp_ksym_writer a = { 0 }, b = { 0 };

	if (geteuid() != 0) {
		printf("# not root: no addresses\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	setenv("SP_CACHE_DIR", dir, 1);
	sp_ksym_writer_start(&a, true);	/* no cache: the first read is fresh */
	CHECK(a.first && !a.fresh);
	sp_ksym_writer_release(&a);
	sp_ksym_writer_start(&b, true);
	CHECK(b.tab.from_cache);
	CHECK(b.fresh != NULL);
	{
		struct sp_ksym_read *was = b.fresh;

		sp_ksym_writer_fresh(&b);	/* under way: not a second one */
		CHECK(b.fresh == was && was->users == 1);
	}
	sp_ksym_writer_release(&b);
	CHECK(!b.fresh);
	unsetenv("SP_CACHE_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* A fresh read that stands in for the kernel's: its table has no
 * addresses (kernel.kptr_restrict raised since the cache was made). */
static struct sp_ksym_read *fresh_without_addresses(void)
{
	struct sp_ksym_read *r = calloc(1, sizeof(*r));

	r->users = 1;
	r->tab.zero = true;
	return r;
}

/*
 * No second read when the first was fresh; a fresh read without addresses
 * leaves the cache naming vmlinux's frames; an address no table names is
 * counted once however often it comes; a user-half address is no kernel
 * code (SP_KERNEL_START).
 */
static void test_ksym_writer_fresh_kept_apart(void)
{
	char dir[] = "/tmp/test-ksym-writer-XXXXXX", cmd[128], out[1024], want[256];
	uint64_t sched = kallsyms_addr("schedule");
	struct sp_ksym_writer a = { 0 }, b = { 0 };

	CHECK(0x00005555deadbeefull < SP_KERNEL_START);
	if (geteuid() != 0 || !sched) {
		printf("# not root, or no schedule in /proc/kallsyms: skipped\n");
		return;
	}
	CHECK(sched >= SP_KERNEL_START);
	CHECK(mkdtemp(dir) != NULL);
	setenv("SP_CACHE_DIR", dir, 1);
	sp_ksym_writer_start(&a, false);	/* no cache: the first read is fresh */
	sp_ksym_writer_fresh(&a);
	CHECK(!a.fresh);
	{
		const uint64_t addrs[] = { sched + 1 };

		CHECK_EQ_U(put_and_read(&a, addrs, 1, out, sizeof(out)), 1);
	}
	sp_ksym_writer_fresh(&a);		/* joined, not the cache's: still none */
	CHECK(!a.fresh);
	sp_ksym_writer_release(&a);

	sp_ksym_writer_start(&b, false);
	CHECK(b.tab.from_cache);
	b.fresh = fresh_without_addresses();
	{
		const uint64_t addrs[] = { b.tab.text_hi + 16, b.tab.text_hi + 16, sched + 1,
					   b.tab.text_hi + 16 };

		CHECK_EQ_U(put_and_read(&b, addrs, 4, out, sizeof(out)), 1);
		snprintf(want, sizeof(want), "%" PRIx64 " schedule\n", sched);
		CHECK_STR(out, want);
	}
	CHECK(b.tab.from_cache);		/* kept */
	CHECK_EQ_U(b.fresh_err, EPERM);
	CHECK_EQ_U(b.missing, 1);		/* one address, thrice */
	sp_ksym_writer_release(&b);
	unsetenv("SP_CACHE_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/*
 * The sources of a recording share their reads (-a --off-cpu: two
 * writers, one read of /proc/kallsyms): the first read of a boot, and the
 * fresh one, each held until the last writer lets it go.
 */
static void test_ksym_writer_shared(void)
{
	char dir[] = "/tmp/test-ksym-writer-XXXXXX", cmd[128], out[1024], want[256];
	uint64_t sched = kallsyms_addr("schedule");
	struct sp_ksym_writer a = { 0 }, b = { 0 }, c = { 0 };
	struct sp_ksym_read *r;

	if (geteuid() != 0 || !sched) {
		printf("# not root, or no schedule in /proc/kallsyms: skipped\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	setenv("SP_CACHE_DIR", dir, 1);
	/* no cache: one first read for both */
	sp_ksym_writer_start(&a, true);
	sp_ksym_writer_start(&b, true);
	CHECK(a.first && a.first == b.first && a.first->users == 2);
	{
		const uint64_t addrs[] = { sched + 1 };

		CHECK_EQ_U(put_and_read(&a, addrs, 1, out, sizeof(out)), 1);
		sp_ksym_writer_release(&a);	/* b's still */
		CHECK(b.first->users == 1);
		CHECK_EQ_U(put_and_read(&b, addrs, 1, out, sizeof(out)), 1);
		snprintf(want, sizeof(want), "%" PRIx64 " schedule\n", sched);
		CHECK_STR(out, want);
	}
	sp_ksym_writer_release(&b);

	/* the cache: one fresh read for both, and for a third begun later */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	sp_ksym_writer_start(&a, true);
	sp_ksym_writer_start(&b, true);
	CHECK(a.tab.from_cache && b.tab.from_cache);
	r = a.fresh;
	CHECK(r && b.fresh == r && r->users == 2);
	{
		const uint64_t addrs[] = { a.tab.text_hi + 16, sched + 1 };

		put_and_read(&a, addrs, 2, out, sizeof(out));
		CHECK(a.fresh_ok);
		sp_ksym_writer_start(&c, false);
		sp_ksym_writer_fresh(&c);
		CHECK(c.fresh == r && r->users == 3);
		sp_ksym_writer_release(&a);
		put_and_read(&b, addrs, 2, out, sizeof(out));
		CHECK(b.fresh_ok);
		snprintf(want, sizeof(want), "%" PRIx64 " schedule\n", sched);
		CHECK(strstr(out, want) != NULL);
	}
	sp_ksym_writer_release(&b);
	sp_ksym_writer_release(&c);
	/* all let go: the next recording reads afresh */
	memset(&a, 0, sizeof(a));
	sp_ksym_writer_start(&a, true);
	CHECK(a.fresh && a.fresh->users == 1);
	sp_ksym_writer_release(&a);
	unsetenv("SP_CACHE_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* What the end says of kernel frames without a symbol (stderr). */
static void finish_says(struct sp_ksym_writer *k, char *out, size_t size)
{
	struct stderr_capture cap;

	stderr_capture_begin(&cap);
	k->warned = false;
	sp_ksym_writer_finish(k, "samples");
	stderr_capture_end(&cap, out, size);
}

/*
 * Kernel frames a table was read for but lacks are said as such, not as a
 * read that failed ("Input/output error" was made up); a failed re-read
 * names its error; nothing is said when every frame was named, or twice.
 */
static void test_ksym_writer_missing(void)
{
	struct sp_ksym_writer k = { .started = true };
	char out[512];

	finish_says(&k, out, sizeof(out));
	CHECK_STR(out, "");
	k.missing = 5;
	k.tab.n = 1;		/* a table was read: only its count is looked at */
	finish_says(&k, out, sizeof(out));
	CHECK(strstr(out, "warning: 5 kernel frames of samples got no symbol: /proc/kallsyms has "
			  "none at their addresses (code unloaded before it was read, or not "
			  "kernel code)\n") != NULL);
	CHECK(strstr(out, "Input/output error") == NULL);
	k.fresh_err = EACCES;
	finish_says(&k, out, sizeof(out));
	CHECK(strstr(out, "5 kernel frames of samples outside the kernel's text got no symbol: "
			  "/proc/kallsyms could not be read again (Permission denied)") != NULL);
	k.tab.n = 0;
	k.tab.zero = true;
	finish_says(&k, out, sizeof(out));
	CHECK(strstr(out, "kernel symbols not recorded: /proc/kallsyms shows no "
			  "addresses") != NULL);
	{
		struct stderr_capture cap;

		stderr_capture_begin(&cap);
		sp_ksym_writer_finish(&k, "samples");	/* said once */
		stderr_capture_end(&cap, out, sizeof(out));
		CHECK_STR(out, "");
	}
	k.tab.zero = false;
}

int main(void)
{
	TAP_RUN(test_ksym_writer_names);
	TAP_RUN(test_ksym_writer_fresh_now);
	TAP_RUN(test_ksym_writer_fresh_kept_apart);
	TAP_RUN(test_ksym_writer_shared);
	TAP_RUN(test_ksym_writer_missing);
	return TAP_DONE();
}
