// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/perf_offcpu.c: its options, and (as root) a real
 * recording of a forked child that blocks three times for 60 ms in a known
 * function, whose return address the child reports itself, and of one
 * whose waits come before and after a compaction of the id space (the
 * modules its frames name, renumbered). Without permission for kernel
 * samples the recordings are skipped.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_offcpu.h"
#include "procfs.h"
#include "segments.h"
#include "sp.h"
#include "stream/schema.h"
#include "tap.h"
#include "writer.h"

static error_t parse_top(int key, char *arg, struct argp_state *state)
{
	if (key == ARGP_KEY_INIT)
		state->child_inputs[0] = state->input;
	return ARGP_ERR_UNKNOWN;
}

static int parse(struct sp_offcpu_opts *o, int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_offcpu_argp }, { 0 } };
	static const struct argp argp = { .parser = parse_top, .children = children };
	FILE *saved = stderr;
	int rc;

	stderr = fopen("/dev/null", "w");	/* argp's usage message */
	rc = argp_parse(&argp, argc, argv, ARGP_NO_EXIT | ARGP_NO_HELP | ARGP_SILENT, NULL, o);
	fclose(stderr);
	stderr = saved;
	return rc;
}

static void test_perf_offcpu_options(void)
{
	struct sp_offcpu_opts o;
	char *a1[] = { "t", NULL };
	char *a2[] = { "t", "--off-cpu", NULL };
	char *a3[] = { "t", "--off-cpu-min=250us", NULL };
	char *a4[] = { "t", "--off-cpu-min=soon", NULL };

	memset(&o, 0xff, sizeof(o));
	CHECK(!parse(&o, 1, a1));
	CHECK(!o.enabled);
	CHECK_EQ_U(o.min_ns, SP_OFFCPU_DEFAULT_MIN_NS);
	CHECK(o.kernel_frames);
	CHECK(!parse(&o, 2, a2));
	CHECK(o.enabled);
	CHECK(!parse(&o, 2, a3));
	CHECK(o.enabled);
	CHECK_EQ_U(o.min_ns, 250000);
	CHECK(parse(&o, 2, a4) != 0);
}

static volatile int sink;
static int ret_pipe = -1;

/* Sleeps, after telling the parent where it returns to in blocked_here. */
static __attribute__((noinline)) void do_sleep(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	uint64_t ret = (uint64_t)(uintptr_t)__builtin_return_address(0);

	if (ret_pipe >= 0 && write(ret_pipe, &ret, sizeof(ret)) != sizeof(ret))
		_exit(2);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	sink++;
}

/* The function the child blocks in. */
static __attribute__((noinline)) void blocked_here(long ms)
{
	do_sleep(ms);
	sink++;		/* not a tail call */
}

static int put(void *ctx, const struct sp_record *r)
{
	return sp_writer_put(ctx, r);
}

/* A child blocked three times 60 ms, recorded by its pid or system-wide
 * (the CPUs' switch records, not the tasks'). */
static void records_waits(bool system_wide)
{
	struct sp_offcpu_opts o = { .enabled = true, .min_ns = 20000000, .kernel_frames = true,
				    .call_graph = SP_CG_DWARF };
	struct sp_offcpu_stats st;
	struct sp_source *s;
	struct sp_writer *w;
	struct sp_emit em;
	struct sp_target t = { 0 };
	static char line[65536];
	char path[] = "/tmp/test-offcpu-XXXXXX", tag[64];
	int go[2], rp[2], fd, status, i, waits = 0, in_func = 0;
	uint64_t ret = 0;
	uint32_t pid;
	FILE *f;

	o.pages = system_wide ? 1024 : 0;	/* every CPU's switches: no ring overflows */
	s = sp_offcpu_source_new(&o);
	CHECK(s != NULL);
	if (!s)
		return;
	fd = mkstemp(path);
	w = sp_writer_new(fd, path, SP_FORMAT_JSON);
	em = (struct sp_emit){ w, put, w };
	CHECK(!pipe(go) && !pipe(rp));
	pid = fork();
	if (pid == 0) {
		char c;

		close(go[1]);
		close(rp[0]);
		ret_pipe = rp[1];
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		for (i = 0; i < 3; i++)
			blocked_here(60);
		_exit(0);
	}
	close(go[0]);
	close(rp[1]);
	t.pids = &pid;
	t.npids = 1;
	t.system_wide = system_wide;
	CHECK(!s->start(s, &t, &em));
	CHECK(write(go[1], "x", 1) == 1);
	close(go[1]);
	for (i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++) {
		usleep(20000);
		CHECK(s->poll(s, &em) >= 0);
	}
	CHECK(s->finish(s, &em) == 0);
	CHECK(read(rp[0], &ret, sizeof(ret)) == sizeof(ret));
	close(rp[0]);
	sp_offcpu_source_stats(s, &st);
	s->free(s);
	CHECK(!sp_writer_close(w));
	CHECK(system_wide ? st.waits >= 3 : st.waits == 3);
	if (st.lost)
		printf("# %llu records lost\n", (unsigned long long)st.lost);
	CHECK(st.wait_ns >= 3 * 57000000ULL);

	/* Each wait: kind offcpu, weight >= 57 ms, a frame inside blocked_here. */
	f = fopen(path, "r");
	snprintf(tag, sizeof(tag), "\"tid\":%u,", pid);
	while (f && fgets(line, sizeof(line), f)) {
		char *p;
		unsigned long long weight;

		if (!strstr(line, "\"kind\":\"offcpu\"") || !strstr(line, tag))
			continue;
		waits++;
		p = strstr(line, "\"weight\":");
		CHECK(p && sscanf(p, "\"weight\":%llu", &weight) == 1 && weight >= 57000000);
		/* the return address into blocked_here, as do_sleep saw it */
		for (p = line; (p = strstr(p, "\"addr\":\"0x")); p += 9) {
			if (strtoull(p + 10, NULL, 16) == ret) {
				in_func++;
				break;
			}
		}
	}
	if (f)
		fclose(f);
	CHECK_EQ_U(waits, 3);
	CHECK_EQ_U(in_func, 3);
	unlink(path);
	close(fd);
}

static void test_perf_offcpu_records_waits(void)
{
	records_waits(false);
}

static void test_perf_offcpu_system_wide(void)
{
	records_waits(true);
}

/* ---- a compaction between two waits ---- */

struct crig {
	struct sp_writer *w;
	struct sp_segments *segs;
	uint32_t pid;
	uint64_t ret;		/* the return address into blocked_here */
	const char *path;	/* of the module that holds it */
	unsigned int waits, resolved;
};

static int crig_tee(void *ctx, const struct sp_record *r)
{
	return sp_segments_put(((struct crig *)ctx)->segs, r);
}

/* A wait of the child, checked when it is emitted, in the ids of then:
 * its frame in blocked_here names the module of the test's executable. */
static int crig_emit(void *ctx, const struct sp_record *r)
{
	struct crig *g = ctx;
	const struct sp_defs *d = sp_writer_defs(g->w);
	uint64_t fr[512];
	int n, i;

	if (r->kind == SP_REC_SAMPLE && r->sample.kind == SP_SAMPLE_OFFCPU &&
	    r->sample.tid == g->pid) {
		/* the waits in blocked_here (its return address on the stack);
		 * under load the child also waits long in read() for the next
		 * round, which is not one of them */
		n = sp_defs_stack_frames(d, r->sample.stack, fr, 512);
		for (i = 0; i < n && i < 512; i++) {
			const struct sp_frame *f = sp_defs_frame(d, fr[i]);
			const struct sp_module *m = f ? sp_defs_module(d, f->module) : NULL;

			if (!f || f->addr != g->ret)
				continue;
			g->waits++;
			if (m && m->pid == g->pid && !strcmp(sp_defs_strz(d, m->path), g->path))
				g->resolved++;
			break;
		}
	}
	return sp_writer_put(g->w, r);
}

static uint64_t remap_id(void *ctx, unsigned int ref, uint64_t id)
{
	return sp_segments_remap(ctx, ref, id);
}

struct own_map {
	uint64_t addr;
	struct sp_proc_map m;
	char path[4096];
};

static int find_map(void *ctx, const struct sp_proc_map *m)
{
	struct own_map *o = ctx;

	if (o->addr >= m->start && o->addr < m->end && m->path) {
		o->m = *m;
		snprintf(o->path, sizeof(o->path), "%s", m->path);
	}
	return 0;
}

static void put_module(struct crig *g, uint32_t pid, const struct sp_proc_map *pm,
		       const char *path)
{
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.time = 1;
	r.process.pid = pid;
	r.process.comm = sp_writer_strz(g->w, "offcpu");
	CHECK(!sp_writer_put(g->w, &r));
	r = (struct sp_record){ .kind = SP_REC_MODULE };
	r.module.pid = pid;
	r.module.start = pm->start;
	r.module.end = pm->end;
	r.module.pgoff = pm->pgoff;
	r.module.path = sp_writer_strz(g->w, path);
	CHECK(!sp_writer_put(g->w, &r));
}

static void wait_for(struct sp_source *s, struct sp_emit *em, struct crig *g, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < 200 && g->waits < n; i++) {
		usleep(10000);
		CHECK(s->poll(s, em) >= 0);
	}
}

/*
 * The child's module is defined after one of a process that ended; a
 * compaction between its two waits drops that one and renumbers its own:
 * the second wait's frames name it under its new id, and the source does
 * not define the dropped one again.
 */
static void test_perf_offcpu_compaction(void)
{
	struct sp_offcpu_opts o = { .enabled = true, .min_ns = 20000000, .kernel_frames = true,
				    .call_graph = SP_CG_DWARF };
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct own_map own = { .addr = (uint64_t)(uintptr_t)blocked_here };
	struct crig g = { 0 };
	struct sp_remap m;
	struct sp_target t = { 0 };
	struct sp_source *s;
	struct sp_emit em;
	int go[2], rp[2], fd, status;
	uint32_t pid;

	CHECK(sp_procfs_maps(getpid(), SP_PROCFS_MAPS_BYTES, find_map, &own) == 0 && own.path[0]);
	s = sp_offcpu_source_new(&o);
	CHECK(s != NULL);
	if (!s)
		return;
	fd = memfd_create("offcpu", 0);
	g.w = sp_writer_new_tee("master", crig_tee, &g);
	g.segs = sp_segments_new(sp_writer_defs(g.w));
	g.path = own.path;
	r.header.version = 1;
	r.header.clock = SP_CLOCK_MONOTONIC;
	CHECK(!sp_writer_put(g.w, &r));
	CHECK(sp_segments_start(g.segs, fd, "offcpu", 1, 1) == 0);
	put_module(&g, 4000000, &own.m, "/usr/lib/ended-long-ago");
	r = (struct sp_record){ .kind = SP_REC_PROCESS_END };
	r.process_end.time = 2;
	r.process_end.pid = 4000000;
	CHECK(!sp_writer_put(g.w, &r));
	em = (struct sp_emit){ g.w, crig_emit, &g };
	CHECK(!pipe(go) && !pipe(rp));
	pid = fork();
	if (pid == 0) {
		char c;

		close(go[1]);
		close(rp[0]);
		ret_pipe = rp[1];
		while (read(go[0], &c, 1) == 1)
			blocked_here(60);
		_exit(0);
	}
	close(go[0]);
	close(rp[1]);
	g.pid = pid;
	put_module(&g, pid, &own.m, own.path);
	t.pids = &pid;
	t.npids = 1;
	CHECK(!s->start(s, &t, &em));
	CHECK(write(go[1], "x", 1) == 1);
	CHECK(read(rp[0], &g.ret, sizeof(g.ret)) == sizeof(g.ret));
	wait_for(s, &em, &g, 1);
	CHECK_EQ_U(g.resolved, 1);

	CHECK(sp_segments_compact_begin(g.segs, sp_writer_defs(g.w)) == 0);
	m = (struct sp_remap){ remap_id, g.segs };
	CHECK(s->remap != NULL);
	if (s->remap)
		s->remap(s, &m);
	sp_segments_compact_end(g.segs);
	/* the child's module only: the ended one is gone for good */
	CHECK_EQ_U(sp_defs_nmodules(sp_writer_defs(g.w)), 1);

	CHECK(write(go[1], "x", 1) == 1);
	wait_for(s, &em, &g, 2);
	close(go[1]);
	waitpid(pid, &status, 0);
	CHECK(s->finish(s, &em) == 0);
	CHECK_EQ_U(g.waits, 2);
	CHECK_EQ_U(g.resolved, 2);
	CHECK_EQ_U(sp_defs_nmodules(sp_writer_defs(g.w)), 1);
	s->free(s);
	sp_segments_free(g.segs);
	sp_writer_close(g.w);
	close(rp[0]);
	close(fd);
}

int main(void)
{
	struct sp_offcpu_opts o = { .enabled = true };
	struct sp_source *probe;

	TAP_RUN(test_perf_offcpu_options);
	probe = sp_offcpu_source_new(&o);	/* says why when it cannot */
	if (probe) {
		probe->free(probe);
		TAP_RUN(test_perf_offcpu_records_waits);
		TAP_RUN(test_perf_offcpu_system_wide);
		TAP_RUN(test_perf_offcpu_compaction);
	} else {
		TAP_SKIP(test_perf_offcpu_records_waits,
			 "no permission for kernel samples of context switches");
		TAP_SKIP(test_perf_offcpu_system_wide,
			 "no permission for kernel samples of context switches");
		TAP_SKIP(test_perf_offcpu_compaction,
			 "no permission for kernel samples of context switches");
	}
	return TAP_DONE();
}
