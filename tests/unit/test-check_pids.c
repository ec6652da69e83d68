// SPDX-License-Identifier: MIT
/*
 * Unit tests of what --check says of -p pids (lib/record/check_pids.c): a
 * process gets a line with its comm and executable, escaped; a pid with no
 * process and a thread that is not its process's first are errors.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/stat.h>

#include "check_pids.h"
#include "defs.h"
#include "record.h"
#include "writer.h"
#include "tap.h"

static int said(const uint32_t *pids, size_t n, char *buf, size_t size)
{
	FILE *f;
	int rc;

	buf[0] = 0;
	f = fmemopen(buf, size, "w");
	if (!f)
		return -2;
	rc = sp_check_pids(pids, n, f);
	fclose(f);
	return rc;
}

static void test_check_pids_self(void)
{
	char buf[4096], want[64];
	uint32_t pid = (uint32_t)getpid();

	prctl(PR_SET_NAME, (unsigned long)"chk\x1b[31m", 0, 0, 0);
	CHECK(said(&pid, 1, buf, sizeof(buf)) == 0);
	snprintf(want, sizeof(want), "-p %u (chk\\x1b[31m, /", pid);
	CHECK(strstr(buf, want) == buf);
	CHECK(strstr(buf, "test-check_pids): can be attached to"));
	CHECK(!strchr(buf, '\x1b'));
}

static void *idle(void *arg)
{
	uint32_t *tid = arg;

	*tid = (uint32_t)gettid();
	pause();
	return NULL;
}

static void test_check_pids_refused(void)
{
	uint32_t pids[2] = { 0x3fffffff, 0 }, me = (uint32_t)getpid();
	char buf[4096];
	pthread_t t;

	CHECK(said(pids, 1, buf, sizeof(buf)) == -1);
	CHECK(!strcmp(buf, ""));
	CHECK(pthread_create(&t, NULL, idle, &pids[1]) == 0);
	while (!__atomic_load_n(&pids[1], __ATOMIC_ACQUIRE))
		usleep(1000);
	CHECK(said(&pids[1], 1, buf, sizeof(buf)) == -1);
	/* one bad among good ones: the good ones are said */
	pids[0] = me;
	CHECK(said(pids, 2, buf, sizeof(buf)) == -1);
	CHECK(strstr(buf, "can be attached to") && strchr(buf, '\n') == strrchr(buf, '\n'));
	pthread_cancel(t);
	pthread_join(t, NULL);
}

/*
 * A recording of pids 100 (given) and 200 (a child): 100 has two samples,
 * one through an interpreted frame, a runtime record of its stacks and one
 * of spans refused (mode none, an unprobed lost record); 200 a Python
 * without the hook (profile-when-set) and one span; 300 nothing.
 */
static void test_check_pids_scan(void)
{
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct sp_check_pid res[3] = { { .pid = 100 } };
	int fd = memfd_create("spool", 0);
	struct sp_writer *w = sp_writer_new(fd, "memfd", SP_FORMAT_SPOOL);
	uint64_t native, interp, s_native, s_interp;
	struct sp_reader *rd;
	size_t n = 1;

	CHECK(sp_writer_put(w, &r) == 0);
	native = sp_writer_frame(w, &(struct sp_frame){ .addr = 0x1000, .pid = 100 });
	interp = sp_writer_frame(w, &(struct sp_frame){ .addr = 0x10, .pid = 100,
							  .mode = SP_FRAME_INTERP });
	s_native = sp_writer_stack_path(w, &native, 1);
	s_interp = sp_writer_stack_path(w, (uint64_t[]){ native, interp, native }, 3);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_RUNTIME;
	r.runtime.pid = 100;
	r.runtime.runtime = SP_RT_RUBY;
	r.runtime.version = sp_writer_strz(w, "3.1.\x1b" "c");	/* its library's, read from it */
	r.runtime.library = sp_writer_strz(w, "/lib/libruby\x1b[31m.so");
	r.runtime.mode = sp_writer_strz(w, "stacks");
	CHECK(sp_writer_put(w, &r) == 0);
	r.runtime.mode = sp_writer_strz(w, "none");
	CHECK(sp_writer_put(w, &r) == 0);
	r.runtime.pid = 200;
	r.runtime.runtime = SP_RT_PYTHON;
	r.runtime.library = sp_writer_strz(w, "/tmp/ruby x/python3.11");
	r.runtime.mode = sp_writer_strz(w, "profile-when-set,audit");
	CHECK(sp_writer_put(w, &r) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_LOST;
	r.lost.what = SP_LOST_UNPROBED;
	r.lost.count = 1;
	r.lost.pid = 100;
	CHECK(sp_writer_put(w, &r) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SAMPLE;
	r.sample.pid = 100;
	r.sample.stack = s_native;
	CHECK(sp_writer_put(w, &r) == 0);
	r.sample.stack = s_interp;
	CHECK(sp_writer_put(w, &r) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_SPAN_START;
	r.mark.pid = 200;
	r.mark.method = sp_writer_strz(w, "f");
	CHECK(sp_writer_put(w, &r) == 0);
	CHECK(sp_writer_close(w) == 0);
	lseek(fd, 0, SEEK_SET);
	rd = sp_reader_open_fd(fd, "memfd");
	/* room for one child only: 300 is not added */
	CHECK(sp_check_pids_scan(rd, res, &n, 2) == 0);
	sp_reader_close(rd);
	close(fd);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(res[0].samples, 2);
	CHECK_EQ_U(res[0].interp_samples, 1);
	CHECK_EQ_U(res[0].unprobed, 1);
	CHECK_EQ_U(res[0].spans, 0);
	CHECK(!res[0].span_runtime);
	CHECK(!res[0].child);
	/* the library escaped: it is the process's to name */
	CHECK_STR(res[0].runtimes, "ruby 3.1.\\x1bc (/lib/libruby\\x1b[31m.so): interpreted frames; "
		  "ruby 3.1.\\x1bc (/lib/libruby\\x1b[31m.so): spans none");
	CHECK_EQ_U(res[0].kinds, SP_CHECK_RUBY);
	CHECK(res[0].interp);
	CHECK_EQ_U(res[1].pid, 200);
	CHECK(res[1].child);
	CHECK_EQ_U(res[1].spans, 1);
	CHECK(res[1].spans_partial);
	CHECK(!res[1].span_runtime);
	CHECK(!res[1].interp);
	/* the kind from the record, not from the text a path could hold */
	CHECK_EQ_U(res[1].kinds, SP_CHECK_PYTHON);
}

/* A recording that fails (its sp-record exits 2, saying why): every pid is
 * missing, said with what it said; none of it is taken for a recording. */
static void test_check_pids_record_failed(void)
{
	char dir[] = "/tmp/test-check-pids-XXXXXX", self[64], buf[4096];
	uint32_t pids[2] = { 1, 2 };
	FILE *f;
	int rc;

	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	snprintf(self, sizeof(self), "%s/sp-record", dir);
	f = fopen(self, "w");
	fputs("#!/bin/sh\necho 'sp-record: error: pid 1: exited during attach' >&2\nexit 2\n", f);
	fclose(f);
	chmod(self, 0755);
	f = fmemopen(buf, sizeof(buf), "w");
	rc = sp_check_pids_record(self, pids, 2, NULL, 0, f);
	fclose(f);
	CHECK_EQ_U(rc, 2);
	CHECK(strstr(buf, "-p: what a recording gets, recorded for 1 s with the default spans:\n"
		  "  failed: the recording of the -p processes ended with status 2 (see what "
		  "sp-record said): nothing is known of what one would get\n"
		  "  what sp-record said:\n"
		  "    sp-record: error: pid 1: exited during attach\n") == buf);
	unlink(self);
	rmdir(dir);
}

int main(void)
{
	TAP_RUN(test_check_pids_self);
	TAP_RUN(test_check_pids_refused);
	TAP_RUN(test_check_pids_scan);
	TAP_RUN(test_check_pids_record_failed);
	return TAP_DONE();
}
