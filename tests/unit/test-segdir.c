// SPDX-License-Identifier: MIT
/*
 * Unit tests for lib/stream/segdir.c and a directory read through the
 * reader: names, order by number, links and FIFOs refused, a rotated
 * segment's end not handed on, a real one handed on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader.h"
#include "stream/segdir.h"
#include "tap.h"

static char dir[64];

static void put(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

static void test_segdir_names(void)
{
	char buf[SP_SEGDIR_NAME_MAX];
	uint64_t seq = 0;

	CHECK(sp_segdir_parse_name("segment-000001.sp", &seq) == 0);
	CHECK_EQ_U(seq, 1);
	CHECK(sp_segdir_parse_name("segment-1234567.sp", &seq) == 0);
	CHECK_EQ_U(seq, 1234567);
	CHECK(sp_segdir_parse_name("segment-999999999999999999.sp", &seq) == 0);
	CHECK_EQ_U(seq, 999999999999999999ull);
	/* one spelling per number; nothing else */
	CHECK(sp_segdir_parse_name("segment-0000001.sp", &seq) < 0);
	CHECK(sp_segdir_parse_name("segment-00001.sp", &seq) < 0);
	CHECK(sp_segdir_parse_name("segment-000000.sp", &seq) < 0);
	CHECK(sp_segdir_parse_name("segment-1000000000000000000.sp", &seq) < 0);
	CHECK(sp_segdir_parse_name("segment-000001.sp.tmp", &seq) < 0);
	CHECK(sp_segdir_parse_name("segment-00000a.sp", &seq) < 0);
	CHECK(sp_segdir_parse_name("segment-+00001.sp", &seq) < 0);
	CHECK(sp_segdir_parse_name("Segment-000001.sp", &seq) < 0);
	CHECK(sp_segdir_parse_name("segment-", &seq) < 0);
	sp_segdir_name(7, buf);
	CHECK_STR(buf, "segment-000007.sp");
	sp_segdir_name(12345678, buf);
	CHECK_STR(buf, "segment-12345678.sp");
}

static void test_segdir_order(void)
{
	struct sp_segdir *d = sp_segdir_open(dir);
	const uint64_t *l;
	uint64_t seq;
	size_t n;
	bool cut = true;

	put("segment-000010.sp", "");
	put("segment-000002.sp", "");
	put("segment-1000000.sp", "");
	put("segment-999999.sp", "");
	put("segment-2.sp", "");
	put("notes.txt", "");
	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(sp_segdir_scan(d, &cut) == 0);
	CHECK(!cut);
	l = sp_segdir_list(d, &n);
	CHECK_EQ_U(n, 4);
	if (n == 4) {
		/* by number, not by name or time */
		CHECK_EQ_U(l[0], 2);
		CHECK_EQ_U(l[1], 10);
		CHECK_EQ_U(l[2], 999999);
		CHECK_EQ_U(l[3], 1000000);
	}
	CHECK(sp_segdir_next(d, 0, &seq) && seq == 2);
	CHECK(sp_segdir_next(d, 2, &seq) && seq == 10);
	CHECK(sp_segdir_next(d, 11, &seq) && seq == 999999);
	CHECK(!sp_segdir_next(d, 1000000, &seq));
	CHECK(sp_segdir_others(d));		/* notes.txt, segment-2.sp */
	sp_segdir_free(d);
}

/* A directory of nothing but segments, or nothing at all, holds no others. */
static void test_segdir_others(void)
{
	char only[] = "/tmp/sp-segdir-only-XXXXXX";
	struct sp_segdir *d;
	char path[128];

	CHECK(mkdtemp(only) != NULL);
	d = sp_segdir_open(only);
	CHECK(d && sp_segdir_scan(d, NULL) == 0 && !sp_segdir_others(d));
	snprintf(path, sizeof(path), "%s/segment-000001.sp", only);
	close(open(path, O_WRONLY | O_CREAT | O_EXCL, 0600));
	CHECK(d && sp_segdir_scan(d, NULL) == 0 && !sp_segdir_others(d));
	unlink(path);
	rmdir(only);
	sp_segdir_free(d);
}

static void test_segdir_refused(void)
{
	struct sp_segdir *d = sp_segdir_open(dir);
	char path[128];
	const char *why;
	int fd;

	CHECK(d != NULL);
	if (!d)
		return;
	snprintf(path, sizeof(path), "%s/segment-000003.sp", dir);
	CHECK(symlink("/etc/passwd", path) == 0);
	fd = sp_segdir_open_segment(d, 3, &why);
	CHECK(fd < 0 && errno == EPERM && why);
	snprintf(path, sizeof(path), "%s/segment-000004.sp", dir);
	CHECK(mkfifo(path, 0600) == 0);
	fd = sp_segdir_open_segment(d, 4, &why);	/* must not block */
	CHECK(fd < 0 && errno == EPERM && why);
	fd = sp_segdir_open_segment(d, 5, &why);
	CHECK(fd < 0 && errno == ENOENT);
	fd = sp_segdir_open_segment(d, 2, &why);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
		close(fd);
	}
	sp_segdir_free(d);
	snprintf(path, sizeof(path), "%s/link", dir);
	CHECK(symlink(dir, path) == 0);
	CHECK(sp_segdir_open(path) == NULL);
}

#define HDR(n) "{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1,\"segment\":" #n "}\n"
#define PROC "{\"type\":\"process\",\"time\":1,\"pid\":7,\"comm\":\"a\"}\n"
#define EV(t) "{\"type\":\"lost\",\"time\":" #t ",\"count\":1}\n"

static void test_segdir_reader(void)
{
	static const char *const names[] = { "segment-000001.sp", "segment-000002.sp",
		"segment-000003.sp", "segment-000004.sp", "segment-000005.sp",
		"segment-000010.sp", "segment-000011.sp", "segment-000012.sp",
		"segment-999999.sp", "segment-1000000.sp", "segment-2.sp", "notes.txt",
		"link", NULL };
	char path[128], *paths[1] = { dir };
	struct sp_reader *r;
	struct sp_record rec;
	int n = 0, headers = 0, ends = 0, got;
	uint64_t times = 0;
	size_t i;

	for (i = 0; names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	/* 10 and 11 are gone (the cap), a gap that is said, not an error */
	put("segment-000012.sp", HDR(12) PROC EV(5) "{\"type\":\"end\",\"time\":6,\"reason\":\"exited\"}\n");
	put("segment-000009.sp", HDR(9) PROC EV(2) "{\"type\":\"end\",\"time\":3,\"reason\":\"rotated\"}\n");
	put("segment-000008.sp", HDR(8) PROC EV(1) "{\"type\":\"end\",\"time\":2,\"reason\":\"rotated\"}\n");
	r = sp_reader_open(paths, 1);
	CHECK(r != NULL);
	if (!r)
		return;
	while ((got = sp_reader_next(r, &rec)) > 0) {
		n++;
		if (rec.kind == SP_REC_HEADER) {
			headers++;
			times = times * 100 + rec.header.segment;
		}
		if (rec.kind == SP_REC_END) {
			ends++;
			CHECK_EQ_U(rec.end.reason, SP_ENDR_EXITED);
		}
	}
	CHECK(got == 0);
	CHECK_EQ_U(headers, 3);
	CHECK_EQ_U(times, 80912);	/* in order: 8, 9, 12 */
	CHECK_EQ_U(ends, 1);		/* the rotated ends are not handed on */
	CHECK_EQ_U(n, 3 * 4 + 1);	/* header, string, process, lost; the end */
	CHECK_EQ_U(sp_reader_close(r), SP_EXIT_OK);
	unlink("segment-000008.sp");
}

int main(void)
{
	char cmd[128];
	int status;

	snprintf(dir, sizeof(dir), "/tmp/test-segdir.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	TAP_RUN(test_segdir_names);
	TAP_RUN(test_segdir_order);
	TAP_RUN(test_segdir_others);
	TAP_RUN(test_segdir_refused);
	TAP_RUN(test_segdir_reader);
	status = TAP_DONE();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		status = 1;
	return status;
}
