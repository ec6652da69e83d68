// SPDX-License-Identifier: MIT
/* Unit tests of the growing-spool reader (lib/stream/tail.c). */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tail.h"
#include "tap.h"
#include "writer.h"

static char path[64];

static struct sp_writer *new_file(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/sp-test-tail-XXXXXX");
	fd = mkstemp(path);
	return sp_writer_new(fd, path, SP_FORMAT_SPOOL);
}

static void put_header(struct sp_writer *w)
{
	struct sp_record h = { .kind = SP_REC_HEADER };

	h.header.version = 1;
	h.header.start_mono_ns = 1000;
	sp_writer_put(w, &h);
}

static void put_sample(struct sp_writer *w, uint64_t time, uint64_t pid, uint64_t stack)
{
	struct sp_record s = { .kind = SP_REC_SAMPLE };

	s.sample.time = time;
	s.sample.pid = s.sample.tid = pid;
	s.sample.stack = stack;
	s.sample.weight = 1;
	sp_writer_put(w, &s);
}

static uint64_t put_module(struct sp_writer *w, uint64_t pid)
{
	struct sp_record m = { .kind = SP_REC_MODULE };

	m.module.pid = pid;
	m.module.start = 0x1000;
	m.module.end = 0x2000;
	m.module.path = sp_writer_strz(w, "/tmp/test.so");
	sp_writer_put(w, &m);
	return sp_defs_nmodules(sp_writer_defs(w));
}

static void test_tail_polls_flushed_prefixes(void)
{
	struct sp_writer *w = new_file();
	struct sp_tail_batch b;
	struct sp_tail *t;
	struct sp_record pe = { .kind = SP_REC_PROCESS_END };
	struct sp_frame f = { .module = 0, .addr = 0x1010, .rel = 0x1010, .pid = 7 };
	uint64_t mod, stack;

	put_header(w);
	sp_writer_flush(w);
	t = sp_tail_open(path, false);
	CHECK(t != NULL);
	CHECK(sp_tail_poll(t, &b) == 0);
	CHECK_EQ_U(b.nsamples, 0);
	CHECK(!b.has_more);
	CHECK(!b.ended);

	mod = put_module(w, 7);
	stack = sp_writer_stack(w, 0, sp_writer_frame(w, &f));
	put_sample(w, 2000, 7, stack);
	sp_writer_flush(w);
	CHECK(sp_tail_poll(t, &b) == 0);
	CHECK_EQ_U(b.nsamples, 1);
	CHECK_EQ_U(b.samples[0].time, 2000);
	CHECK_EQ_U(b.nmodules, 1);
	CHECK_EQ_U(b.first_module, mod);
	CHECK_EQ_U(b.nframes, 1);
	CHECK_EQ_U(b.npids, 1);

	/* A retirement ends the batch; the next poll starts after it. */
	put_sample(w, 3000, 7, stack);
	pe.process_end.time = 3500;
	pe.process_end.pid = 7;
	sp_writer_put(w, &pe);
	put_sample(w, 4000, 8, stack);
	sp_writer_flush(w);
	CHECK(sp_tail_poll(t, &b) == 0);
	CHECK_EQ_U(b.nsamples, 1);
	CHECK_EQ_U(b.nretired_pids, 1);
	CHECK_EQ_U(b.nretired_modules, 1);
	CHECK(b.nretired_modules == 1 && b.retired_modules[0] == mod);
	CHECK(b.has_more);
	CHECK(sp_tail_poll(t, &b) == 0);
	CHECK_EQ_U(b.nsamples, 1);
	CHECK_EQ_U(b.samples[0].pid, 8);
	CHECK_EQ_U(b.samples[0].time, 4000);
	CHECK(sp_tail_close(t) == SP_EXIT_OK);
	sp_writer_close(w);
	unlink(path);
}

static void test_tail_retries_a_cut_record_without_double_delta(void)
{
	struct sp_writer *w = new_file();
	struct sp_tail_batch b;
	struct sp_tail *t;
	struct stat st;
	char *buf;
	int fd;

	put_header(w);
	put_sample(w, 5000, 7, 0);
	sp_writer_close(w);
	/* Keep all but the last byte, then append it later. */
	fd = open(path, O_RDWR);
	fstat(fd, &st);
	buf = malloc(st.st_size);
	CHECK(read(fd, buf, st.st_size) == st.st_size);
	CHECK(ftruncate(fd, st.st_size - 1) == 0);
	t = sp_tail_open(path, false);
	CHECK(sp_tail_poll(t, &b) == 0);
	CHECK_EQ_U(b.nsamples, 0);
	CHECK(!b.ended);
	CHECK(pwrite(fd, buf + st.st_size - 1, 1, st.st_size - 1) == 1);
	CHECK(sp_tail_poll(t, &b) == 0);
	CHECK_EQ_U(b.nsamples, 1);
	CHECK(b.nsamples == 1 && b.samples[0].time == 5000);

	/* Shrinking is an error. */
	CHECK(ftruncate(fd, 8) == 0);
	CHECK(sp_tail_poll(t, &b) == -1);
	CHECK(sp_tail_close(t) == SP_EXIT_FATAL);
	close(fd);
	free(buf);
	unlink(path);
}

static void test_tail_bounds_batches_and_discards(void)
{
	struct sp_writer *w = new_file();
	struct sp_tail_batch b;
	struct sp_tail *t;
	struct sp_record end = { .kind = SP_REC_END };
	struct stat before, after;
	uint64_t i, total = 0;
	unsigned int polls = 0;

	put_header(w);
	for (i = 0; i < 200000; i++)
		put_sample(w, 10000 + i, 7, 0);
	end.end.time = 10000 + i;
	sp_writer_put(w, &end);
	sp_writer_close(w);
	stat(path, &before);
	t = sp_tail_open(path, true);
	do {
		CHECK(sp_tail_poll(t, &b) == 0);
		CHECK(b.nsamples <= SP_TAIL_MAX_BATCH);
		if (b.nsamples)
			CHECK_EQ_U(b.samples[0].time, 10000 + total);
		total += b.nsamples;
		polls++;
	} while (!b.ended && polls < 1000);
	CHECK_EQ_U(total, 200000);
	CHECK(polls >= 200000 / SP_TAIL_MAX_BATCH);
	stat(path, &after);
	/* Hole punching works on ext4 and tmpfs; the file keeps its size. */
	CHECK_EQ_U(after.st_size, before.st_size);
	CHECK(after.st_blocks < before.st_blocks);
	sp_tail_close(t);
	unlink(path);
}

int main(void)
{
	TAP_RUN(test_tail_polls_flushed_prefixes);
	TAP_RUN(test_tail_retries_a_cut_record_without_double_delta);
	TAP_RUN(test_tail_bounds_batches_and_discards);
	return TAP_DONE();
}
