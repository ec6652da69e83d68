// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/perf_source.c: event names, and (as root) the source
 * driven as sp-record drives it, on build/examples/workload started by
 * lib/record/launch.c: its samples, processes and threads, modules with build-ids,
 * frames at file-relative addresses that nm would show, time order; the
 * rings' wake-ups (lib/record/perf_events.c): a sampling ring's at a
 * quarter of it, the side-band ring's (--no-samples) every few records,
 * not at each; a process's JIT perf map (perf_jit.c): read for the
 * symbols its JIT frames are in, and not at all without such a frame.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "pid_reuse.h"
#include "record/proc_pin.h"
#include "launch.h"
#include "merge.h"
#include "perf_source.h"
#include "procfs.h"
#include "record/perf_sourceP.h"
#include "stream/schema.h"
#include "reader.h"
#include "writer.h"
#include "stderr_capture.h"

#define WORKLOAD "build/examples/workload"

static void test_perf_source_events(void)
{
	uint32_t type;
	uint64_t config;
	bool hw;

	CHECK(sp_perf_event_lookup("cpu-clock", &type, &config, &hw) == 0);
	CHECK(type == PERF_TYPE_SOFTWARE && config == PERF_COUNT_SW_CPU_CLOCK && !hw);
	CHECK(sp_perf_event_lookup("cycles", &type, &config, &hw) == 0);
	CHECK(type == PERF_TYPE_HARDWARE && hw);
	CHECK(sp_perf_event_lookup("dummy", &type, &config, &hw) == 0);
	CHECK(sp_perf_event_lookup("no-such-event", &type, &config, &hw) == -1);
	CHECK(strstr(sp_perf_event_names(), "task-clock") != NULL);
	CHECK(sp_perf_source_new(&(struct sp_perf_opts){ .event = "bogus" }) == NULL);
}

/* The address and size of a function in the workload, from nm (not from us). */
static uint64_t nm_addr(const char *fn, uint64_t *size)
{
	char cmd[256], line[256], *end;
	unsigned long long a = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S " WORKLOAD " | awk '$4 == \"%s\" { print $1, $2 }'", fn);
	p = popen(cmd, "r");
	if (p && fgets(line, sizeof(line), p)) {
		a = strtoull(line, &end, 16);
		*size = strtoull(end, NULL, 16);
	}
	if (p)
		pclose(p);
	return a;
}

static void test_perf_source_record(void)
{
	char *argv[] = { WORKLOAD, "0.4", NULL };
	struct sp_perf_opts o = { .freq = 999, .call_graph = SP_CG_FP, .enable_on_exec = true };
	struct sp_record h = { .kind = SP_REC_HEADER }, r;
	struct sp_source *s;
	struct sp_writer *w;
	struct sp_merge *m;
	struct sp_reader *rd;
	struct sp_launch l;
	struct sp_target t = { 0 };
	uint32_t pid;
	uint64_t last = 0, samples = 0, in_hash = 0, hash_lo, hash_size = 0, workload_mod = 0;
	unsigned int procs = 0, threads = 0, ordered = 1;
	int fd, ep;
	struct epoll_event ev;

	if (geteuid() != 0 || access(WORKLOAD, X_OK)) {
		printf("# needs root and " WORKLOAD ": skipped\n");
		return;
	}
	hash_lo = nm_addr("hash_token", &hash_size);
	CHECK(hash_lo != 0 && hash_size != 0);
	fd = memfd_create("spool", 0);
	w = sp_writer_new(fd, "memfd", SP_FORMAT_SPOOL);
	m = sp_merge_new((sp_merge_put_fn)sp_writer_put, w);
	s = sp_perf_source_new(&o);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK(sp_writer_put(w, &h) == 0);
	CHECK(sp_launch_prepare(&l, argv, NULL, -1) == 0);
	pid = (uint32_t)l.pid;
	t.pids = &pid;
	t.npids = 1;
	{
		struct sp_emit em = { w, sp_merge_add, m };

		CHECK(s->start(s, &t, &em) == 0);
		CHECK(s->fd >= 0);
		CHECK(sp_launch_go(&l) == 0);
		ep = epoll_create1(0);
		ev.events = EPOLLIN;
		epoll_ctl(ep, EPOLL_CTL_ADD, l.pidfd, &ev);
		/* The loop: until the command exits, every 50 ms. */
		while (epoll_wait(ep, &ev, 1, 50) == 0) {
			CHECK(s->poll(s, &em) >= 0);
			CHECK(sp_merge_flush(m, s->watermark(s)) >= 0);
		}
		CHECK(s->finish(s, &em) == 0);
		CHECK_EQ_U(s->watermark(s), UINT64_MAX);
		CHECK(sp_merge_flush(m, UINT64_MAX) >= 0);
		close(ep);
	}
	sp_launch_reap(&l, true);
	sp_launch_release(&l);
	CHECK(sp_writer_close(w) == 0);
	sp_merge_free(m);
	s->free(s);

	lseek(fd, 0, SEEK_SET);
	rd = sp_reader_open_fd(fd, "memfd");
	while (sp_reader_next(rd, &r) > 0) {
		uint64_t time = 0;

		if (r.kind == SP_REC_PROCESS)
			procs++;
		if (r.kind == SP_REC_THREAD)
			threads++;
		if (r.kind == SP_REC_MODULE && r.module.build_id.len == 20) {
			size_t len;
			const char *path = sp_defs_str(sp_reader_defs(rd), r.module.path, &len);

			if (path && strstr(path, "/workload"))
				workload_mod = sp_defs_nmodules(sp_reader_defs(rd));
		}
		if (r.kind == SP_REC_SAMPLE) {
			uint64_t frames[256];
			int n, i;

			time = r.sample.time;
			samples++;
			n = sp_defs_stack_frames(sp_reader_defs(rd), r.sample.stack, frames, 256);
			for (i = 0; i < n && i < 256; i++) {
				const struct sp_frame *f = sp_defs_frame(sp_reader_defs(rd), frames[i]);

				if (f && f->module == workload_mod && f->rel >= hash_lo &&
				    f->rel < hash_lo + hash_size)
					in_hash++;
			}
		}
		if (r.kind == SP_REC_PROCESS)
			time = r.process.time;
		if (time) {
			ordered &= time >= last;
			last = time;
		}
	}
	CHECK_EQ_U(sp_reader_close(rd), SP_EXIT_OK);
	close(fd);
	printf("# %llu samples, %llu in hash_token, %u processes, %u threads\n",
	       (unsigned long long)samples, (unsigned long long)in_hash, procs, threads);
	CHECK(samples > 20);
	CHECK(in_hash > 0);
	CHECK(workload_mod != 0);
	CHECK_EQ_U(procs, 2);		/* the workload and its child */
	CHECK(threads >= 3);
	CHECK(ordered);
}

/*
 * A kernel callchain with an address of the user half in it (the kernel's
 * unwinder gone astray: heap addresses seen at the top of a shell's
 * sample): that address is left out and counted, never looked up as a
 * kernel symbol; the sample is kept with its kernel frame.
 */
static void test_perf_source_kernel_astray(void)
{
	struct sp_perf_opts o = { .freq = 99, .call_graph = SP_CG_FP, .interp = SP_INTERP_NONE };
	struct sp_record h = { .kind = SP_REC_HEADER }, r;
	struct sp_source *s = sp_perf_source_new(&o);
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t time, nr, ips[5];
	} rec = {
		.h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(rec) },
		.pid = 4242, .tid = 4242, .time = 1000, .nr = 5,
		.ips = { (uint64_t)PERF_CONTEXT_KERNEL, 0x564aa59e3cc0ull, 0x564aa59e3cd8ull,
			 0xffffffff81000010ull, 0xffff800000000000ull },
	};
	struct sp_reader *rd;
	struct sp_writer *w;
	struct perf *p;
	unsigned int samples = 0;
	int fd;

	CHECK(s != NULL);
	if (!s)
		return;
	p = s->priv;
	fd = memfd_create("spool", 0);
	w = sp_writer_new(fd, "memfd", SP_FORMAT_SPOOL);
	CHECK(sp_writer_put(w, &h) == 0);
	{
		struct sp_emit em = { w, (int (*)(void *, const struct sp_record *))sp_writer_put, w };

		p->out = &em;
		p->attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
		p->ksyms.started = true;	/* with no table: each lookup is a miss */
		sp_perf_on_sample(p, &rec.h);
		p->out = NULL;
	}
	CHECK_EQ_U(p->kernel_astray, 2);
	CHECK_EQ_U(p->ksyms.missing, 2);	/* the two kernel frames only */
	CHECK_EQ_U(p->st.samples, 1);
	p->ksyms.started = false;
	s->free(s);
	CHECK(sp_writer_close(w) == 0);
	lseek(fd, 0, SEEK_SET);
	rd = sp_reader_open_fd(fd, "memfd");
	while (sp_reader_next(rd, &r) > 0) {
		uint64_t frames[8];
		const struct sp_frame *f;
		int n, i, found = 0;

		if (r.kind != SP_REC_SAMPLE)
			continue;
		samples++;
		n = sp_defs_stack_frames(sp_reader_defs(rd), r.sample.stack, frames, 8);
		CHECK_EQ_U(n, 2);
		for (i = 0; i < n && i < 8; i++) {
			f = sp_defs_frame(sp_reader_defs(rd), frames[i]);
			CHECK(f && f->mode == SP_FRAME_KERNEL && f->addr >= 0xffff800000000000ull);
			if (f && f->addr == 0xffffffff81000010ull) {
				found++;
				/* the leaf's place was the garbage's: a return address */
				CHECK(!(f->flags & SP_FRAME_LEAF));
			}
		}
		CHECK_EQ_U(found, 1);
	}
	CHECK_EQ_U(samples, 1);
	sp_reader_close(rd);
	close(fd);
}

/* Start a -p perf source on pid, held as pin: start()'s result; *nfds the
 * events it opened. */
static int start_held(uint32_t pid, const struct sp_proc_pin *pin, size_t *nfds)
{
	struct sp_perf_opts o = { .freq = 99, .call_graph = SP_CG_FP, .no_children = true,
				  .interp = SP_INTERP_NONE };
	struct sp_record h = { .kind = SP_REC_HEADER };
	struct sp_target t = { .pids = &pid, .npids = 1, .pins = pin };
	struct sp_source *s = sp_perf_source_new(&o);
	struct sp_writer *w;
	struct sp_merge *m;
	int fd, ret;

	if (!s)
		return -2;
	fd = memfd_create("spool", 0);
	w = sp_writer_new(fd, "memfd", SP_FORMAT_SPOOL);
	m = sp_merge_new((sp_merge_put_fn)sp_writer_put, w);
	sp_writer_put(w, &h);
	{
		struct sp_emit em = { w, sp_merge_add, m };

		ret = s->start(s, &t, &em);
	}
	*nfds = ((struct perf *)s->priv)->nfds;
	s->free(s);
	sp_writer_close(w);
	sp_merge_free(m);
	close(fd);
	return ret;
}

/*
 * -p: the process is attached through what the recorder held at
 * sp-record's start, not by its pid: one that ended meanwhile, its pid
 * taken by another process (any user's), is not sampled; one that lives is.
 */
static void test_perf_source_held(void)
{
	struct sp_proc_pin pin;
	size_t nfds = 0;
	pid_t old, reuse;
	int go, go2;

	if (!pid_reuse_possible()) {
		printf("# needs root (perf events, ns_last_pid): skipped\n");
		return;
	}
	old = child_waiting(&go);
	CHECK(old > 0);
	CHECK(sp_proc_pin_open(&pin, (uint32_t)old) == 0);
	CHECK_EQ_U(start_held((uint32_t)old, &pin, &nfds), 0);
	CHECK(nfds > 0);	/* living: its thread's events */
	reuse = end_and_reuse(old, go, &go2);
	if (reuse < 0) {
		sp_proc_pin_close(&pin);
		return;
	}
	nfds = 1;
	CHECK(start_held((uint32_t)old, &pin, &nfds) != 0);
	CHECK_EQ_U(nfds, 0);	/* nothing of the newcomer's */
	sp_proc_pin_close(&pin);
	close(go2);
	waitpid(reuse, NULL, 0);
}

static void test_perf_source_wakeup(void)
{
	struct perf p;

	memset(&p, 0, sizeof(p));
	p.type = PERF_TYPE_SOFTWARE;
	p.config = PERF_COUNT_SW_DUMMY;
	sp_perf_attr_setup(&p);
	CHECK(p.sideband);
	CHECK(p.attr.watermark);
	CHECK_EQ_U(p.attr.wakeup_watermark, SIDEBAND_WAKEUP);
	CHECK(SIDEBAND_WAKEUP >= 256);	/* a few records: not one */

	memset(&p, 0, sizeof(p));
	p.type = PERF_TYPE_SOFTWARE;
	p.config = PERF_COUNT_SW_CPU_CLOCK;
	p.o.freq = 49;
	sp_perf_attr_setup(&p);
	CHECK(!p.sideband);
	CHECK(p.attr.watermark);
	CHECK_EQ_U(p.attr.wakeup_watermark, 64 << 10);	/* a quarter of 512 KiB */
}

static uint64_t plus_1000(void *ctx, unsigned int ref, uint64_t id)
{
	(void)ctx;
	return id && ref == SP_REF_STACK ? id + 1000 : id;
}

/* A compaction renumbers the samples an exec holds back until its process
 * record: written later, they name stacks of the new id space. */
static void test_perf_source_remap_held(void)
{
	struct sp_remap m = { plus_1000, NULL };
	struct proc *pr = calloc(1, sizeof(*pr));
	struct perf p;

	memset(&p, 0, sizeof(p));
	CHECK(pr != NULL);
	if (!pr)
		return;
	pr->pid = 42;
	pr->pending_exec = true;
	pr->nheld = 2;
	pr->held[0].stack = 7;
	pr->held[1].stack = 0;	/* no stack */
	sp_perf_map_put(&p.procs, 42, 0, (uintptr_t)pr);
	sp_perf_procs_remap(&p, &m);
	CHECK_EQ_U(pr->held[0].stack, 1007);
	CHECK_EQ_U(pr->held[1].stack, 0);
	sp_perf_map_free(&p.procs);
	sp_perf_map_free(&p.mods_by_id);
	free(pr);
}

static char jit_names[8][32];
static int njit_names;

static int jit_collect(void *ctx, const struct sp_record *r)
{
	struct sp_writer *w = ctx;

	if (r->kind == SP_REC_JITSYM && njit_names < 8)
		snprintf(jit_names[njit_names++], sizeof(jit_names[0]), "%s",
			 sp_defs_strz(sp_writer_defs(w), r->jitsym.name));
	return 0;
}

static int jit_discard(void *ctx, const struct sp_record *r)
{
	(void)ctx;
	(void)r;
	return 0;
}

static void test_perf_jit_filter(void)
{
	struct sp_writer *w = sp_writer_new_tee("jit", jit_discard, NULL);
	struct sp_emit out = { w, jit_collect, w };
	struct perf *p = calloc(1, sizeof(*p));
	struct proc pr;
	char dir[] = "/tmp/sp-jit-XXXXXX", path[64];
	const char *map = "1000 10 a\n2000 10 b\n3000 10 c\n4000 10 d\n";
	FILE *f;
	uint64_t i;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/perf-4242.map", dir);
	f = fopen(path, "w");
	CHECK(f && fputs(map, f) >= 0 && fclose(f) == 0);
	sp_procfs_perfmap_dir = dir;
	p->out = &out;
	memset(&pr, 0, sizeof(pr));
	pr.pid = 4242;
	pr.uid = getuid();
	pr.nvmas = 1;

	/* no frame in anonymous code: nothing, not even a look */
	sp_perf_capture_jit(p, &pr, true);
	CHECK_EQ_U(njit_names, 0);

	/* a leaf inside a, a return address just past b's end (named by b,
	 * at address - 1), one in no symbol: a and b */
	sp_perf_jit_addr(p, &pr, 0x1008);
	sp_perf_jit_addr(p, &pr, 0x1008);
	sp_perf_jit_addr(p, &pr, 0x2010);
	sp_perf_jit_addr(p, &pr, 0x5000);
	sp_perf_capture_jit(p, &pr, true);
	CHECK_EQ_U(njit_names, 2);
	CHECK_STR(jit_names[0], "a");
	CHECK_STR(jit_names[1], "b");
	/* read once: what it kept went with it */
	njit_names = 0;
	sp_perf_capture_jit(p, &pr, true);
	CHECK_EQ_U(njit_names, 0);

	/* while it runs: read for its new frames at once, a symbol written
	 * once; for a frame a read did not name, again 100 ms later */
	njit_names = 0;
	p->procs = (struct perf_map){ 0 };
	sp_perf_map_put(&p->procs, pr.pid, 0, (uint64_t)(uintptr_t)&pr);
	sp_perf_jit_addr(p, &pr, 0x1004);
	sp_perf_jit_poll(p, 1000000000ull);
	CHECK_EQ_U(njit_names, 1);
	CHECK_STR(jit_names[0], "a");
	sp_perf_jit_addr(p, &pr, 0x1006);	/* in a, named already: not again */
	sp_perf_jit_poll(p, 1500000000ull);
	CHECK_EQ_U(njit_names, 1);
	sp_perf_jit_addr(p, &pr, 0x3004);
	sp_perf_jit_addr(p, &pr, 0x6004);	/* in no symbol of the map yet */
	sp_perf_jit_poll(p, 2000000000ull);
	CHECK_EQ_U(njit_names, 2);
	CHECK_STR(jit_names[1], "c");
	f = fopen(path, "a");
	CHECK(f && fputs("6000 10 late\n", f) >= 0 && fclose(f) == 0);
	sp_perf_jit_poll(p, 2050000000ull);	/* too soon for a retry */
	CHECK_EQ_U(njit_names, 2);
	sp_perf_jit_poll(p, 2150000000ull);
	CHECK_EQ_U(njit_names, 3);
	CHECK_STR(jit_names[2], "late");
	sp_perf_capture_jit(p, &pr, true);	/* its end: nothing left to name */
	CHECK_EQ_U(njit_names, 3);
	sp_perf_map_free(&p->procs);
	njit_names = 0;

	/* past the bound on addresses kept: every symbol, and none kept */
	pr.jit_queued = true;	/* (no poll below) */
	for (i = 0; i <= SP_PERF_JIT_ADDRS_MAX; i++)
		sp_perf_jit_addr(p, &pr, 0x100000 + i);
	CHECK(pr.jit_all);
	CHECK_EQ_U(pr.jit_addrs.n, 0);
	sp_perf_capture_jit(p, &pr, true);
	CHECK_EQ_U(njit_names, 5);	/* with the one appended */
	CHECK_STR(jit_names[3], "d");

	sp_perf_jit_forget(&pr);
	sp_perf_jit_release(p);
	sp_procfs_perfmap_dir = "/tmp";
	unlink(path);
	rmdir(dir);
	free(p);
	sp_writer_close(w);
}

int main(void)
{
	TAP_RUN(test_perf_source_remap_held);
	TAP_RUN(test_perf_source_wakeup);
	TAP_RUN(test_perf_jit_filter);
	TAP_RUN(test_perf_source_events);
	TAP_RUN(test_perf_source_kernel_astray);
	TAP_RUN(test_perf_source_record);
	TAP_RUN(test_perf_source_held);
	return TAP_DONE();
}
