// SPDX-License-Identifier: MIT
/*
 * gen-correlate - write a synthetic recording for scripts/bench/correlate:
 * UNITS units of work spread over THREADS threads of one process, run
 * interleaved (one step of each thread in turn, 1us apart). A unit is an
 * outer span holding an inner span, with 15 samples and 5 events (three
 * path_open, two sock_connect) between them: 2 spans, 20 samples and
 * events, 4 span marks.
 *
 * Usage: gen-correlate OUT.sp [UNITS [THREADS]]   (default 500000 100)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "writer.h"

#define PID 4000

static struct sp_writer *w;
static uint64_t now = 1000000000ull;

static void put(struct sp_record *r)
{
	if (sp_writer_put(w, r))
		exit(2);
}

static void mark(unsigned int kind, uint64_t tid, uint64_t klass, uint64_t method,
		 uint64_t file, uint64_t line)
{
	struct sp_record r = { .kind = kind };

	r.mark.time = now;
	r.mark.pid = PID;
	r.mark.tid = tid;
	r.mark.runtime = SP_RT_RUBY;
	r.mark.klass = klass;
	r.mark.method = method;
	r.mark.file = file;
	r.mark.line = line;
	put(&r);
}

int main(int argc, char **argv)
{
	static const uint8_t lo[4] = { 127, 0, 0, 1 };
	uint64_t units = argc > 2 ? strtoull(argv[2], NULL, 10) : 500000;
	uint64_t threads = argc > 3 ? strtoull(argv[3], NULL, 10) : 100;
	uint64_t *step, *done, klass, outer, inner, file, paths[4], i, tid, left;
	struct sp_record r;
	int fd;

	if (argc < 2 || !units || !threads) {
		fprintf(stderr, "usage: gen-correlate OUT.sp [UNITS [THREADS]]\n");
		return 64;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !(w = sp_writer_new(fd, argv[1], SP_FORMAT_SPOOL)))
		return 2;
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_HEADER;
	r.header.version = 1;
	r.header.start_mono_ns = now;
	r.header.start_wall_ns = 1764669600000000000ull;
	r.header.clock = SP_CLOCK_MONOTONIC;
	r.header.sample_period = 1000000;
	r.header.event.p = (const uint8_t *)"cpu-clock";
	r.header.event.len = 9;
	put(&r);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_PROCESS;
	r.process.time = now;
	r.process.pid = PID;
	r.process.ppid = 1;
	r.process.comm = sp_writer_strz(w, "ruby");
	put(&r);
	klass = sp_writer_strz(w, "Bench");
	outer = sp_writer_strz(w, "outer");
	inner = sp_writer_strz(w, "inner");
	file = sp_writer_strz(w, "/srv/bench.rb");
	for (i = 0; i < 4; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/srv/data/%llu", (unsigned long long)i);
		paths[i] = sp_writer_strz(w, p);
	}
	step = calloc(threads, sizeof(*step));
	done = calloc(threads, sizeof(*done));
	left = units;
	/* 24 steps per unit: start outer, 8 records, start inner, 8, stop inner, 4, stop outer */
	while (left) {
		for (tid = 0; tid < threads && left; tid++) {
			uint64_t s = step[tid], t = PID + 1 + tid;

			if (done[tid] * threads + tid >= units)
				continue;
			now += 1000;
			if (s == 0) {
				mark(SP_REC_SPAN_START, t, klass, outer, file, 10);
			} else if (s == 9) {
				mark(SP_REC_SPAN_START, t, klass, inner, file, 20);
			} else if (s == 18) {
				mark(SP_REC_SPAN_STOP, t, klass, inner, file, 20);
			} else if (s == 23) {
				mark(SP_REC_SPAN_STOP, t, klass, outer, file, 10);
			} else if (s % 5 == 2) {
				memset(&r, 0, sizeof(r));
				r.kind = SP_REC_EVENT;
				r.event.time = now;
				r.event.pid = PID;
				r.event.tid = t;
				if (s % 2) {
					r.event.kind = SP_EV_SOCK_CONNECT;
					r.event.nfields = 5;
					r.event.field[0].u = 2;
					r.event.field[1].b.p = lo;
					r.event.field[1].b.len = 4;
					r.event.field[2].u = 8080;
					r.event.field[4].u = 5;
				} else {
					r.event.kind = SP_EV_PATH_OPEN;
					r.event.nfields = 4;
					r.event.field[0].u = paths[s % 4];
					r.event.field[1].u = 0x80000;
					r.event.field[3].u = 3;
				}
				put(&r);
			} else {
				memset(&r, 0, sizeof(r));
				r.kind = SP_REC_SAMPLE;
				r.sample.time = now;
				r.sample.pid = PID;
				r.sample.tid = t;
				r.sample.cpu = tid & 1;
				r.sample.weight = 1;
				put(&r);
			}
			if (++step[tid] == 24) {
				step[tid] = 0;
				done[tid]++;
				left--;
			}
		}
	}
	return sp_writer_close(w) ? 2 : 0;
}
