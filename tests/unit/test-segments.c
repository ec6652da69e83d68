// SPDX-License-Identifier: MIT
/* Unit tests of lib/stream/segments.c: a recording cut into streams, each
 * of which reads alone: its own header and ids, the processes, threads and
 * modules still live replayed (the ended ones not), a kernel frame's ksym
 * before the frame, stacks rebuilt with the same frames. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "reader.h"
#include "stream/schema.h"
#include "segments.h"
#include "writer.h"

struct rig {
	struct sp_writer *master;
	struct sp_segments *segs;
	int fd;
};

static int tee(void *ctx, const struct sp_record *rec)
{
	struct rig *g = ctx;

	return sp_segments_put(g->segs, rec);
}

static void put(struct rig *g, struct sp_record *r)
{
	CHECK(sp_writer_put(g->master, r) == 0);
}

static void process(struct rig *g, uint64_t pid, const char *comm)
{
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.time = 100 + pid;
	r.process.pid = pid;
	r.process.comm = sp_writer_strz(g->master, comm);
	put(g, &r);
}

static uint64_t module(struct rig *g, uint64_t pid, const char *path)
{
	struct sp_record r = { .kind = SP_REC_MODULE };

	r.module.pid = pid;
	r.module.start = 0x1000;
	r.module.end = 0x9000;
	r.module.path = sp_writer_strz(g->master, path);
	put(g, &r);
	return sp_defs_nmodules(sp_writer_defs(g->master));
}

/* A sample of pid with a user frame in mod and a kernel frame under it. */
static void sample(struct rig *g, uint64_t pid, uint64_t mod, uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	struct sp_frame uf = { .module = mod, .rel = 0x10, .addr = 0x1010 };
	/* a return address just past do_work's end: do_work's (the call) */
	struct sp_frame kf = { .addr = 0xffff0100, .mode = SP_FRAME_KERNEL };
	uint64_t ids[2];

	ids[0] = sp_writer_frame(g->master, &uf);
	ids[1] = sp_writer_frame(g->master, &kf);
	r.sample.time = time;
	r.sample.pid = r.sample.tid = pid;
	r.sample.stack = sp_writer_stack_path(g->master, ids, 2);
	r.sample.weight = 1;
	put(g, &r);
}

struct seen {
	unsigned int streams, samples, ksym_before_kframe;
	uint64_t segment[4];
	char procs[4][64];	/* comms per stream, space separated */
	char mods[4][128];
	bool ksym;
};

static void read_all(int fd, struct seen *s)
{
	struct sp_reader *rd;
	struct sp_record rec;
	unsigned int i = 0;

	memset(s, 0, sizeof(*s));
	lseek(fd, 0, SEEK_SET);
	rd = sp_reader_open_fd(dup(fd), "segments");
	CHECK(rd != NULL);
	while (rd && sp_reader_next(rd, &rec) > 0) {
		struct sp_defs *d = sp_reader_defs(rd);

		switch (rec.kind) {
		case SP_REC_HEADER:
			i = s->streams++;
			if (i < 4)
				s->segment[i] = rec.header.segment;
			s->ksym = false;
			break;
		case SP_REC_PROCESS:
			strcat(s->procs[i], sp_defs_strz(d, rec.process.comm));
			strcat(s->procs[i], " ");
			break;
		case SP_REC_MODULE:
			strcat(s->mods[i], sp_defs_strz(d, rec.module.path));
			strcat(s->mods[i], " ");
			break;
		case SP_REC_KSYM:
			s->ksym = !strcmp(sp_defs_strz(d, rec.ksym.name), "do_work");
			break;
		case SP_REC_FRAME:
			if (rec.frame.mode == SP_FRAME_KERNEL && s->ksym)
				s->ksym_before_kframe++;
			break;
		case SP_REC_SAMPLE: {
			uint64_t fr[4];
			int n = sp_defs_stack_frames(d, rec.sample.stack, fr, 4);
			const struct sp_frame *leaf = n == 2 ? sp_defs_frame(d, fr[0]) : NULL;
			const struct sp_frame *root = n == 2 ? sp_defs_frame(d, fr[1]) : NULL;
			const struct sp_module *m = root ? sp_defs_module(d, root->module) : NULL;

			CHECK(leaf && leaf->mode == SP_FRAME_KERNEL && leaf->addr == 0xffff0100);
			CHECK(m && m->pid == rec.sample.pid);
			s->samples++;
			break;
		}
		default:
			break;
		}
	}
	sp_reader_close(rd);
}

static void test_segments_replay(void)
{
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct rig g;
	struct seen s;
	uint64_t m1, m2, mk;

	g.fd = memfd_create("segments", 0);
	g.master = sp_writer_new_tee("master", tee, &g);
	g.segs = sp_segments_new(sp_writer_defs(g.master));
	r.header.version = 1;
	r.header.clock = SP_CLOCK_MONOTONIC;
	r.header.command.p = (const uint8_t *)"-a";
	r.header.command.len = 2;
	put(&g, &r);
	CHECK(sp_segments_start(g.segs, g.fd, "segments", 1, 50) == 0);

	process(&g, 10, "old");		/* long before the second stream */
	process(&g, 20, "gone");
	m1 = module(&g, 10, "/usr/bin/old");
	m2 = module(&g, 20, "/usr/bin/gone");
	mk = module(&g, 10, "/usr/lib/unmapped.so");
	r = (struct sp_record){ .kind = SP_REC_KSYM };
	r.ksym.addr = 0xffff0000;
	r.ksym.size = 0x100;
	r.ksym.name = sp_writer_strz(g.master, "do_work");
	put(&g, &r);
	sample(&g, 10, m1, 1000);
	sample(&g, 20, m2, 1001);
	r = (struct sp_record){ .kind = SP_REC_PROCESS_END };
	r.process_end.time = 1002;
	r.process_end.pid = 20;
	put(&g, &r);
	r = (struct sp_record){ .kind = SP_REC_MODULE_END };
	r.module_end.time = 1003;
	r.module_end.module = mk;
	put(&g, &r);
	CHECK_EQ_U(sp_segments_records(g.segs), 4);

	/* The second stream: only what is live, and the old stack again. */
	CHECK(sp_segments_start(g.segs, g.fd, "segments", 2, 1500) == 0);
	CHECK_EQ_U(sp_segments_records(g.segs), 0);
	sample(&g, 10, m1, 2000);
	CHECK(sp_segments_close(g.segs) == 0);

	read_all(g.fd, &s);
	CHECK_EQ_U(s.streams, 2);
	CHECK_EQ_U(s.segment[0], 1);
	CHECK_EQ_U(s.segment[1], 2);
	CHECK_STR(s.procs[0], "old gone ");
	CHECK_STR(s.procs[1], "old ");
	CHECK_STR(s.mods[0], "/usr/bin/old /usr/bin/gone /usr/lib/unmapped.so ");
	CHECK_STR(s.mods[1], "/usr/bin/old ");
	CHECK_EQ_U(s.samples, 3);
	/* the kernel frame's symbol came before it in each stream */
	CHECK_EQ_U(s.ksym_before_kframe, 2);
	sp_writer_close(g.master);
	sp_segments_free(g.segs);
	close(g.fd);
}

/* Samples of pid in mod, each with a frame of its own (distinct stacks). */
static void flood(struct rig *g, uint64_t pid, uint64_t mod, unsigned int n, uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	char name[32];
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct sp_frame uf = { .module = mod, .rel = 0x100 + i, .addr = 0x1100 + i };
		struct sp_frame kf = { .addr = 0xffff0100, .mode = SP_FRAME_KERNEL };
		uint64_t ids[2];

		snprintf(name, sizeof(name), "never-again-%u", i);
		CHECK(sp_writer_strz(g->master, name) != 0);
		ids[0] = sp_writer_frame(g->master, &uf);
		ids[1] = sp_writer_frame(g->master, &kf);
		r.sample.time = time + i;
		r.sample.pid = r.sample.tid = pid;
		r.sample.stack = sp_writer_stack_path(g->master, ids, 2);
		r.sample.weight = 1;
		put(g, &r);
	}
}

/*
 * A compaction in the middle of a stream drops what nothing holds: a
 * record still waiting (a merge's) and an id a source cached are renumbered
 * and stay right; the stream goes on without defining again what it had
 * (the module); the next stream replays the live set under its new ids.
 */
static void test_segments_compact(void)
{
	struct sp_record r = { .kind = SP_REC_HEADER }, held = { .kind = SP_REC_SAMPLE };
	struct sp_frame uf = { .rel = 0x10, .addr = 0x1010 };
	struct sp_frame kf = { .addr = 0xffff0100, .mode = SP_FRAME_KERNEL };
	struct sp_segments_stats st;
	uint64_t kids[2];
	struct rig g;
	struct seen s;
	uint64_t m1, comm, before;

	g.fd = memfd_create("segments", 0);
	g.master = sp_writer_new_tee("master", tee, &g);
	g.segs = sp_segments_new(sp_writer_defs(g.master));
	r.header.version = 1;
	r.header.clock = SP_CLOCK_MONOTONIC;
	put(&g, &r);
	CHECK(sp_segments_start(g.segs, g.fd, "segments", 1, 50) == 0);
	process(&g, 10, "old");
	m1 = module(&g, 10, "/usr/bin/old");
	r = (struct sp_record){ .kind = SP_REC_KSYM };
	r.ksym.addr = 0xffff0000;
	r.ksym.size = 0x100;
	r.ksym.name = sp_writer_strz(g.master, "do_work");
	put(&g, &r);
	flood(&g, 10, m1, 3000, 1000);
	comm = sp_writer_strz(g.master, "cached");	/* a source keeps this id */
	uf.module = m1;
	held.sample.pid = held.sample.tid = 10;
	held.sample.time = 9000;
	held.sample.weight = 1;
	kids[0] = sp_writer_frame(g.master, &uf);
	kids[1] = sp_writer_frame(g.master, &kf);
	held.sample.stack = sp_writer_stack_path(g.master, kids, 2);
	before = sp_segments_master_size(g.segs);
	CHECK(before > 9000);
	CHECK(sp_segments_compact_due(g.segs));

	CHECK(sp_segments_compact_begin(g.segs, sp_writer_defs(g.master)) == 0);
	CHECK(sp_segments_remap_record(g.segs, &held) == 0);
	comm = sp_segments_remap(g.segs, SP_REF_STRING, comm);
	m1 = sp_segments_remap(g.segs, SP_REF_MODULE, m1);
	CHECK(comm && m1);
	CHECK_EQ_U(sp_segments_remap(g.segs, SP_REF_STACK, 1u << 30), 0);
	sp_segments_compact_end(g.segs);
	/* old, /usr/bin/old, do_work, cached; the module; 2 frames; 2 stacks */
	CHECK_EQ_U(sp_segments_master_size(g.segs), 9);
	CHECK(!sp_segments_compact_due(g.segs));
	CHECK_STR(sp_defs_strz(sp_writer_defs(g.master), comm), "cached");

	put(&g, &held);
	r = (struct sp_record){ .kind = SP_REC_PROCESS };
	r.process.time = 9001;
	r.process.pid = 30;
	r.process.comm = comm;
	put(&g, &r);
	sample(&g, 10, m1, 9002);
	CHECK(sp_segments_start(g.segs, g.fd, "segments", 2, 9500) == 0);
	sample(&g, 10, m1, 9600);
	CHECK(sp_segments_close(g.segs) == 0);
	sp_segments_stats(g.segs, &st);
	CHECK_EQ_U(st.compactions, 1);
	CHECK_EQ_U(st.kept, 9);
	CHECK_EQ_U(st.peak, before);
	CHECK_EQ_U(st.dropped, before - 9);

	read_all(g.fd, &s);
	CHECK_EQ_U(s.streams, 2);
	CHECK_STR(s.procs[0], "old cached ");
	CHECK_STR(s.procs[1], "old cached ");
	/* defined once in the first stream, though used after the compaction */
	CHECK_STR(s.mods[0], "/usr/bin/old ");
	CHECK_STR(s.mods[1], "/usr/bin/old ");
	CHECK_EQ_U(s.samples, 3000 + 1 + 1 + 1);
	CHECK_EQ_U(s.ksym_before_kframe, 2);
	sp_writer_close(g.master);
	sp_segments_free(g.segs);
	close(g.fd);
}

/* Count symbol records naming func in each stream of fd. */
static void count_symbols(int fd, const char *func, unsigned int *per, unsigned int max)
{
	struct sp_reader *rd;
	struct sp_record rec;
	unsigned int i = 0;

	memset(per, 0, max * sizeof(*per));
	lseek(fd, 0, SEEK_SET);
	rd = sp_reader_open_fd(dup(fd), "segments");
	while (rd && sp_reader_next(rd, &rec) > 0) {
		if (rec.kind == SP_REC_HEADER && rec.header.segment)
			i = (unsigned int)rec.header.segment - 1;
		if (rec.kind == SP_REC_SYMBOL && i < max &&
		    !strcmp(sp_defs_strz(sp_reader_defs(rd), rec.symbol.func), func))
			per[i]++;
	}
	sp_reader_close(rd);
}

/*
 * An interpreted frame is named by its symbol record, written once by the
 * source: every stream that uses the frame has the symbol after it, also
 * after a compaction.
 */
static void test_segments_symbols(void)
{
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct sp_frame f = { .rel = 7, .addr = 7, .mode = SP_FRAME_INTERP };
	struct rig g;
	unsigned int per[3];
	uint64_t mod, frame, stack;

	g.fd = memfd_create("segments", 0);
	g.master = sp_writer_new_tee("master", tee, &g);
	g.segs = sp_segments_new(sp_writer_defs(g.master));
	r.header.version = 1;
	r.header.clock = SP_CLOCK_MONOTONIC;
	put(&g, &r);
	CHECK(sp_segments_start(g.segs, g.fd, "segments", 1, 50) == 0);
	process(&g, 10, "py");
	mod = module(&g, 10, "[python]");
	f.module = mod;
	frame = sp_writer_frame(g.master, &f);
	r = (struct sp_record){ .kind = SP_REC_SYMBOL };
	r.symbol.frame = frame;
	r.symbol.func = sp_writer_strz(g.master, "handle");
	r.symbol.file = sp_writer_strz(g.master, "app.py");
	r.symbol.line = 12;
	put(&g, &r);
	stack = sp_writer_stack(g.master, 0, frame);
	r = (struct sp_record){ .kind = SP_REC_SAMPLE };
	r.sample.pid = r.sample.tid = 10;
	r.sample.time = 100;
	r.sample.stack = stack;
	r.sample.weight = 1;
	put(&g, &r);
	CHECK(sp_segments_start(g.segs, g.fd, "segments", 2, 200) == 0);
	r.sample.time = 300;
	put(&g, &r);
	flood(&g, 10, mod, 3000, 400);
	CHECK(sp_segments_compact_begin(g.segs, sp_writer_defs(g.master)) == 0);
	r.sample.stack = sp_segments_remap(g.segs, SP_REF_STACK, stack);
	sp_segments_compact_end(g.segs);
	CHECK(sp_segments_start(g.segs, g.fd, "segments", 3, 5000) == 0);
	r.sample.time = 5100;
	put(&g, &r);
	CHECK(sp_segments_close(g.segs) == 0);
	count_symbols(g.fd, "handle", per, 3);
	CHECK_EQ_U(per[0], 1);
	CHECK_EQ_U(per[1], 1);
	CHECK_EQ_U(per[2], 1);
	sp_writer_close(g.master);
	sp_segments_free(g.segs);
	close(g.fd);
}

int main(void)
{
	TAP_RUN(test_segments_replay);
	TAP_RUN(test_segments_compact);
	TAP_RUN(test_segments_symbols);
	return TAP_DONE();
}
