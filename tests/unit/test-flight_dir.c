// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/flight_dir.c: the files of an output directory
 * listed oldest first, so that --keep deletes the oldest, also when
 * sp-record starts again over what an earlier run left. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include <stdint.h>
#include "record/flightP.h"

static char dir[] = "/tmp/sp-test-flight_dir-XXXXXX";

/* name, written at second t of some day */
static void make(int dfd, const char *name, time_t t)
{
	struct timespec ts[2] = { { 1796300000 + t, 0 }, { 1796300000 + t, 0 } };
	int fd = sp_create_in(dfd, name);

	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK(utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) == 0);
}

static int open_empty(void)
{
	int dfd;

	CHECK(mkdtemp(dir) != NULL);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	return dfd;
}

static void clean(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (d)
		rewinddir(d);	/* sp_names_scan read it through a dup */
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dfd, de->d_name, 0);
	if (d)
		closedir(d);
	CHECK(rmdir(dir) == 0);
	strcpy(dir + strlen(dir) - 6, "XXXXXX");
}

/* l is want[0..n), in that order */
static void check_names(const struct sp_names *l, const char *const *want, size_t n)
{
	size_t i;

	CHECK_EQ_U(l->n, n);
	for (i = 0; i < n && i < l->n; i++)
		CHECK_STR(l->v[i], want[i]);
}

/* Three dumps in one second (their names sort otherwise), one of another
 * trigger, an older day's and a later second's. */
static void test_flight_dir_dumps_by_age(void)
{
	int dfd = open_empty();
	struct sp_names l = { 0 };

	make(dfd, "dump-20261204T055812Z-signal-2.sp", 11);
	make(dfd, "dump-20261204T055812Z-signal.sp", 10);
	make(dfd, "dump-20261204T055812Z-exit.sp", 13);
	make(dfd, "dump-20261204T055812Z-signal-10.sp", 12);
	make(dfd, "dump-20261203T235959Z-cmd.sp", 50);	/* touched since */
	make(dfd, "dump-20261204T060000Z-signal.sp", 1);
	make(dfd, "segment-000001.sp", 0);		/* not a dump */
	CHECK(sp_names_scan(&l, dfd, "dump-") == 0);
	check_names(&l, (const char *const[]){ "dump-20261203T235959Z-cmd.sp",
		"dump-20261204T055812Z-signal.sp", "dump-20261204T055812Z-signal-2.sp",
		"dump-20261204T055812Z-signal-10.sp", "dump-20261204T055812Z-exit.sp",
		"dump-20261204T060000Z-signal.sp" }, 6);
	/* --keep=3: the three oldest go, from the directory too */
	sp_names_trim(&l, dfd, 3);
	CHECK_EQ_U(l.n, 3);
	CHECK(faccessat(dfd, "dump-20261204T055812Z-signal.sp", F_OK, 0) != 0);
	CHECK(faccessat(dfd, "dump-20261204T055812Z-signal-2.sp", F_OK, 0) != 0);
	CHECK(faccessat(dfd, "dump-20261204T055812Z-signal-10.sp", F_OK, 0) == 0);
	CHECK(faccessat(dfd, "dump-20261204T055812Z-exit.sp", F_OK, 0) == 0);
	sp_names_release(&l);
	clean(dfd);
}

/* A directory of more entries than a scan looks at: it stops at its
 * bound and says so; one within the bound is scanned whole. */
static void test_flight_dir_scan_bound(void)
{
	int dfd = open_empty();
	struct sp_names l = { 0 };
	char name[64];
	unsigned int i;

	for (i = 1; i <= 100; i++) {
		snprintf(name, sizeof(name), "segment-%06u.sp", i);
		make(dfd, name, i);
	}
	/* 102 entries with . and .. */
	CHECK(sp_names_scan_max(&l, dfd, "segment-", 102) == 0);
	CHECK(!l.cut);
	CHECK_EQ_U(l.n, 100);
	CHECK_EQ_U(l.top, 100);
	sp_names_release(&l);
	CHECK(sp_names_scan_max(&l, dfd, "segment-", 40) == 0);
	CHECK(l.cut);
	CHECK(l.n <= 40 && l.n >= 38);
	sp_names_release(&l);
	CHECK(sp_names_scan(&l, dfd, "segment-") == 0);	/* the default bound */
	CHECK(!l.cut);
	CHECK_EQ_U(l.n, 100);
	sp_names_release(&l);
	clean(dfd);
}

/* Segments by number, past six digits too (their mtimes say otherwise). */
static void test_flight_dir_segments_by_number(void)
{
	int dfd = open_empty();
	struct sp_names l = { 0 };

	make(dfd, "segment-1000000.sp", 1);
	make(dfd, "segment-999999.sp", 2);
	make(dfd, "segment-000041.sp", 3);
	make(dfd, "segment-notes.txt", 4);
	CHECK(sp_names_scan(&l, dfd, "segment-") == 0);
	check_names(&l, (const char *const[]){ "segment-000041.sp", "segment-999999.sp",
		"segment-1000000.sp" }, 3);
	CHECK_EQ_U(l.top, 1000000);
	sp_names_release(&l);
	clean(dfd);
}

/*
 * A clock set back between runs: dumps numbered in the order they were
 * written, their times out of order; an earlier sp-record's dumps, named
 * by a later time alone. The numbers decide; the time-named ones are
 * older than every numbered one; names that are not ours are left out
 * (and the cap never deletes them).
 */
static void test_flight_dir_dumps_by_number(void)
{
	int dfd = open_empty();
	struct sp_names l = { 0 };

	make(dfd, "dump-000003-20261204T060000Z-signal.sp", 1);
	make(dfd, "dump-000002-20991231T235959Z-exit.sp", 2);
	make(dfd, "dump-000010-20261204T050000Z-cmd.sp", 3);
	make(dfd, "dump-1000000-20261204T040000Z-signal.sp", 4);
	make(dfd, "dump-20991231T235959Z-signal.sp", 5);	/* an earlier sp-record's */
	make(dfd, "dump-20991231T235958Z-signal.sp", 6);
	make(dfd, "dump-notes.sp", 7);				/* not ours */
	make(dfd, "dump-0000001-20261204T060000Z-signal.sp", 8);	/* not a number's spelling */
	make(dfd, "dump-000004-2026120T060000Z-signal.sp", 9);	/* not a time */
	make(dfd, "dump-000005-20261204T060000Z-.sp", 10);	/* no trigger */
	CHECK(sp_names_scan(&l, dfd, "dump-") == 0);
	CHECK_EQ_U(l.top, 1000000);
	check_names(&l, (const char *const[]){ "dump-20991231T235958Z-signal.sp",
		"dump-20991231T235959Z-signal.sp", "dump-000002-20991231T235959Z-exit.sp",
		"dump-000003-20261204T060000Z-signal.sp", "dump-000010-20261204T050000Z-cmd.sp",
		"dump-1000000-20261204T040000Z-signal.sp" }, 6);
	sp_names_trim(&l, dfd, 2);
	CHECK(faccessat(dfd, "dump-000003-20261204T060000Z-signal.sp", F_OK, 0) != 0);
	CHECK(faccessat(dfd, "dump-20991231T235959Z-signal.sp", F_OK, 0) != 0);
	CHECK(faccessat(dfd, "dump-000010-20261204T050000Z-cmd.sp", F_OK, 0) == 0);
	CHECK(faccessat(dfd, "dump-notes.sp", F_OK, 0) == 0);
	CHECK(faccessat(dfd, "dump-000005-20261204T060000Z-.sp", F_OK, 0) == 0);
	sp_names_release(&l);
	clean(dfd);
}

static void test_flight_dir_dump_names(void)
{
	char stamp[17];
	uint64_t seq = 99;

	CHECK(sp_dump_name_parse("dump-000042-20261204T055812Z-signal.sp", &seq, stamp) == 0);
	CHECK_EQ_U(seq, 42);
	CHECK_STR(stamp, "20261204T055812Z");
	CHECK(sp_dump_name_parse("dump-20261204T055812Z-signal-2.sp", &seq, stamp) == 0);
	CHECK_EQ_U(seq, 0);
	CHECK_STR(stamp, "20261204T055812Z");
	CHECK(sp_dump_name_parse("dump-000000-20261204T055812Z-signal.sp", &seq, stamp) != 0);
	CHECK(sp_dump_name_parse("dump-9999999999999999999-20261204T055812Z-x.sp", &seq,
				 stamp) != 0);
	CHECK(sp_dump_name_parse("dump-000042-20261204T055812Z-signal", &seq, stamp) != 0);
	CHECK(sp_dump_name_parse("segment-000042.sp", &seq, stamp) != 0);
	CHECK(sp_dump_name_parse("dump-000042-20261204T055812Z.sp", &seq, stamp) != 0);
}

int main(void)
{
	TAP_RUN(test_flight_dir_dumps_by_age);
	TAP_RUN(test_flight_dir_segments_by_number);
	TAP_RUN(test_flight_dir_dumps_by_number);
	TAP_RUN(test_flight_dir_dump_names);
	TAP_RUN(test_flight_dir_scan_bound);
	return TAP_DONE();
}
