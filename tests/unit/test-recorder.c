// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/recorder.c: a recording driven step by step over
 * sources of its own (no BPF, no perf events, no root): the command line
 * as the header has it, sources found by kind, the header's words from
 * every source, records of two sources merged in time order, the end
 * record and its counts, how a recording ends (duration, the command's
 * exit, -p processes exiting, a signal, a source that cannot start, a
 * command that cannot run) and the exit status of each, and an output
 * that fails or whose reader goes away.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "pid_reuse.h"
#include "reader.h"
#include "procfs.h"
#include "recorder.h"

#define MS	1000000ull

/* A source that emits n lost records, per_poll at each poll, stamped
 * base, base + step, ...; its watermark is the time of the next one. */
struct fake {
	const char *feature, *missing;
	uint64_t base, step, what;
	uint64_t what_odd;	/* of every other record, when not 0 */
	unsigned int n, per_poll, emitted;
	bool fail_start;
	int prepared, started, finished, freed;
	struct sp_target target;
	uint32_t target_pid;
};

static int fake_emit(struct fake *f, struct sp_emit *out, unsigned int upto)
{
	int n = 0;

	for (; f->emitted < upto && f->emitted < f->n; f->emitted++, n++) {
		struct sp_record r = { .kind = SP_REC_LOST };

		r.lost.time = f->base + f->emitted * f->step;
		r.lost.what = f->what_odd && f->emitted % 2 ? f->what_odd : f->what;
		r.lost.count = 2;
		if (out->emit(out->ctx, &r))
			return -1;
	}
	return n;
}

static int fake_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct fake *f = s->priv;

	f->started++;
	f->target = *t;
	f->target_pid = t->npids ? t->pids[0] : 0;
	return f->fail_start ? sp_error("fake: cannot start") : 0;
}

static int fake_poll(struct sp_source *s, struct sp_emit *out)
{
	struct fake *f = s->priv;

	return fake_emit(f, out, f->emitted + f->per_poll);
}

static uint64_t fake_watermark(struct sp_source *s)
{
	struct fake *f = s->priv;

	return f->emitted < f->n ? f->base + f->emitted * f->step : UINT64_MAX;
}

static int fake_finish(struct sp_source *s, struct sp_emit *out)
{
	struct fake *f = s->priv;

	f->finished++;
	return fake_emit(f, out, f->n) < 0 ? -1 : 0;
}

static void fake_describe(struct sp_source *s, char *feat, size_t fsize, char *unav,
			  size_t usize)
{
	struct fake *f = s->priv;

	snprintf(feat, fsize, "%s", f->feature);
	snprintf(unav, usize, "%s", f->missing);
}

static void fake_free(struct sp_source *s)
{
	((struct fake *)s->priv)->freed++;
	free(s);
}

static int fake_prepare_env(struct sp_source *s)
{
	((struct fake *)s->priv)->prepared++;
	return 0;
}

static struct sp_source *fake_new(struct fake *f)
{
	struct sp_source *s = calloc(1, sizeof(*s));

	s->name = "fake";
	s->fd = -1;
	s->priv = f;
	s->start = fake_start;
	s->poll = fake_poll;
	s->watermark = fake_watermark;
	s->finish = fake_finish;
	s->describe = fake_describe;
	s->free = fake_free;
	s->prepare_env = fake_prepare_env;
	return s;
}

static char path[256];
static struct sp_common_opts common;

static void output_to(const char *name)
{
	snprintf(path, sizeof(path), "%s", name);
	memset(&common, 0, sizeof(common));
	common.out_path = path;
	common.out = fopen(path, "w");
}

static struct sp_recorder_opts opts(void)
{
	return (struct sp_recorder_opts){
		.common = &common, .format = SP_FORMAT_SPOOL, .batch_ns = 20 * MS,
		.call_graph = SP_CG_FP,
	};
}

/* What the test reads back of a recording. */
struct got {
	char features[256], unavailable[256], command[256];
	unsigned int nlost, unordered;
	uint64_t last_time, lost_samples, lost_events;
	bool end;
	struct sp_end e;
};

static int read_back(struct got *g)
{
	char *paths[1] = { path };
	struct sp_reader *in = sp_reader_open(paths, 1);
	struct sp_record rec;
	int status;

	memset(g, 0, sizeof(*g));
	if (!in)
		return -1;
	while (sp_reader_next(in, &rec) > 0) {
		if (rec.kind == SP_REC_HEADER) {
			snprintf(g->features, sizeof(g->features), "%.*s",
				 (int)rec.header.features.len, (const char *)rec.header.features.p);
			snprintf(g->unavailable, sizeof(g->unavailable), "%.*s",
				 (int)rec.header.unavailable.len,
				 (const char *)rec.header.unavailable.p);
			snprintf(g->command, sizeof(g->command), "%.*s",
				 (int)rec.header.command.len, (const char *)rec.header.command.p);
		} else if (rec.kind == SP_REC_LOST) {
			g->nlost++;
			g->unordered += rec.lost.time < g->last_time;
			g->last_time = rec.lost.time;
			if (rec.lost.what == SP_LOST_SAMPLES)
				g->lost_samples += rec.lost.count;
			else if (rec.lost.what == SP_LOST_EVENTS)
				g->lost_events += rec.lost.count;
		} else if (rec.kind == SP_REC_END) {
			g->end = true;
			g->e = rec.end;
		}
	}
	status = sp_reader_close(in);
	return status == SP_EXIT_OK ? 0 : -1;
}

static void test_recorder_describe(void)
{
	char *argv[] = { "make", "a b", "it's", "", "x=$HOME", "plain-1.0" };
	struct sp_recorder_opts o;
	struct sp_recorder *r;

	output_to("/dev/null");
	o = opts();
	r = sp_recorder_new(&o);
	CHECK(r != NULL);
	CHECK_STR(sp_recorder_describe(r, argv, 6),
		  "make 'a b' 'it'\\''s' '' 'x=$HOME' plain-1.0");
	sp_recorder_free(r);
	o.system_wide = true;
	r = sp_recorder_new(&o);
	CHECK_STR(sp_recorder_describe(r, NULL, 0), "-a");
	sp_recorder_free(r);
	fclose(common.out);
}

static void test_recorder_pids_described(void)
{
	uint32_t pids[2];
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	char want[256];

	output_to("/dev/null");
	pids[0] = (uint32_t)getpid();
	pids[1] = (uint32_t)getppid();
	o = opts();
	o.pids = pids;
	o.npids = 2;
	r = sp_recorder_new(&o);
	CHECK(r != NULL);
	/* each pid with its own command line, read from a procfs made here:
	 * its NUL-separated arguments quoted, a kernel thread's empty one
	 * left out */
	{
		char root[] = "/tmp/test-recorder-XXXXXX", path[256];
		const char *saved = sp_procfs_root;
		static const char argv0[] = "python3\0-c\0import time; time.sleep(30)\0"
			"marker-arg\0\0it's\x1b[2J\0";
		FILE *f;

		CHECK(mkdtemp(root) != NULL);
		snprintf(path, sizeof(path), "%s/%u", root, pids[0]);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/%u/cmdline", root, pids[0]);
		f = fopen(path, "w");
		fwrite(argv0, 1, sizeof(argv0) - 1, f);
		fclose(f);
		snprintf(path, sizeof(path), "%s/%u", root, pids[1]);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/%u/cmdline", root, pids[1]);
		fclose(fopen(path, "w"));
		sp_procfs_root = root;
		snprintf(want, sizeof(want), "-p %u: python3 -c 'import time; time.sleep(30)' "
			 "marker-arg '' 'it'\\''s\x1b[2J'; -p %u", pids[0], pids[1]);
		CHECK_STR(sp_recorder_describe(r, NULL, 0), want);
		/* a command line longer than the header keeps: its start, said cut */
		f = fopen(path, "w");
		for (int i = 0; i < 3000; i++)
			fputs("ab\0", f);
		fclose(f);
		{
			const char *d = sp_recorder_describe(r, NULL, 0);
			size_t n = strlen(d);

			CHECK(n > 4000 && n < 4400);
			CHECK(n > 6 && !strcmp(d + n - 6, " [cut]"));
		}
		sp_procfs_root = saved;
		unlink(path);
		snprintf(path, sizeof(path), "%s/%u/cmdline", root, pids[0]);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%u", root, pids[0]);
		rmdir(path);
		snprintf(path, sizeof(path), "%s/%u", root, pids[1]);
		rmdir(path);
		rmdir(root);
	}
	sp_recorder_free(r);
	/* a pid that does not exist: said, and no recorder */
	pids[0] = 0x3ffffff0;
	o.npids = 1;
	CHECK(sp_recorder_new(&o) == NULL);
	fclose(common.out);
}

static void test_recorder_kinds(void)
{
	struct fake a = { .feature = "", .missing = "" }, b = a;
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	struct sp_source *sa = fake_new(&a), *sb = fake_new(&b);

	output_to("/dev/null");
	o = opts();
	r = sp_recorder_new(&o);
	CHECK(sp_recorder_add(r, SP_SOURCE_EVENTS, sa) == 0);
	CHECK(sp_recorder_add(r, SP_SOURCE_OFFCPU, sb) == 0);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, NULL) == -1);	/* its constructor failed */
	CHECK(sp_recorder_source(r, SP_SOURCE_EVENTS) == sa);
	CHECK(sp_recorder_source(r, SP_SOURCE_OFFCPU) == sb);
	CHECK(sp_recorder_source(r, SP_SOURCE_PERF) == NULL);
	CHECK(sp_recorder_source(r, SP_SOURCE_SPANS) == NULL);
	sp_recorder_free(r);
	CHECK_EQ_U(a.freed, 1);
	CHECK_EQ_U(b.freed, 1);
	fclose(common.out);
}

/* Two sources whose records interleave in time, for a duration. */
static void test_recorder_merge(void)
{
	struct fake a = { .feature = "fake-a=1", .missing = "", .step = 10, .n = 40,
			  .per_poll = 3, .what = SP_LOST_SAMPLES };
	struct fake b = { .feature = "fake-b", .missing = "nothing-b", .step = 10, .n = 30,
			  .per_poll = 7, .what = SP_LOST_EVENTS,
			  /* samples without their interpreted stacks: no event lost */
			  .what_odd = SP_LOST_INTERP };
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	struct got g;

	output_to("build/unit/test-recorder-merge.sp");
	a.base = sp_now_mono_ns();
	b.base = a.base + 5;
	o = opts();
	o.duration_ns = 100 * MS;
	o.system_wide = true;
	r = sp_recorder_new(&o);
	CHECK(r != NULL);
	sp_recorder_describe(r, NULL, 0);
	CHECK(sp_recorder_add(r, SP_SOURCE_EVENTS, fake_new(&a)) == 0);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(&b)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), SP_EXIT_OK);
	CHECK_EQ_U(a.started, 1);
	CHECK_EQ_U(a.finished, 1);
	CHECK_EQ_U(a.freed, 1);	/* the report let the sources go */
	CHECK(a.target.system_wide);
	CHECK_EQ_U(a.prepared, 0);	/* no command */
	sp_recorder_free(r);
	CHECK_EQ_U(b.freed, 1);
	fclose(common.out);
	CHECK(read_back(&g) == 0);
	CHECK_STR(g.features, "fake-a=1 fake-b");
	CHECK_STR(g.unavailable, "nothing-b");
	CHECK_STR(g.command, "-a");
	CHECK_EQ_U(g.nlost, 70);
	CHECK_EQ_U(g.unordered, 0);
	CHECK(g.end);
	CHECK_EQ_U(g.e.reason, SP_ENDR_DURATION);
	CHECK_EQ_U(g.e.lost_samples, 80);
	CHECK_EQ_U(g.e.lost_events, 30);
	CHECK_EQ_U(g.lost_samples, 80);
	CHECK_EQ_U(g.lost_events, 30);
	unlink(path);
}

/* A command: started stopped, the sources attach to its pid, it runs, and
 * its exit ends the recording with its status. */
static void test_recorder_command(void)
{
	char *argv[] = { "sh", "-c", "exit 3", NULL };
	struct fake a = { .feature = "", .missing = "", .step = 1, .n = 5, .per_poll = 1 };
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	struct got g;

	output_to("build/unit/test-recorder-command.sp");
	a.base = sp_now_mono_ns();
	o = opts();
	r = sp_recorder_new(&o);
	sp_recorder_describe(r, argv, 3);
	CHECK(sp_recorder_add(r, SP_SOURCE_EVENTS, fake_new(&a)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	CHECK(sp_recorder_launch(r, argv) == 0);
	CHECK_EQ_U(a.prepared, 1);
	sp_recorder_start(r);
	CHECK(a.target_pid > 0);
	CHECK_EQ_U(a.target.npids, 1);
	sp_recorder_go(r);
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), 3);
	sp_recorder_free(r);
	fclose(common.out);
	CHECK(read_back(&g) == 0);
	CHECK_STR(g.command, "sh -c 'exit 3'");
	CHECK(g.end);
	CHECK_EQ_U(g.e.reason, SP_ENDR_EXITED);
	CHECK_EQ_U(g.e.status, 3);
	CHECK_EQ_U(g.nlost, 5);
	unlink(path);
}

/* A command that is not there: 127; one that is no program: 126. */
static void test_recorder_cannot_run(void)
{
	char *missing[] = { "/nonexistent/program", NULL };
	char *notexec[] = { "/tmp", NULL };	/* a directory */
	struct fake a = { .feature = "", .missing = "" };
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	struct got g;

	output_to("build/unit/test-recorder-norun.sp");
	o = opts();
	r = sp_recorder_new(&o);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(&a)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	CHECK(sp_recorder_launch(r, missing) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), 127);
	sp_recorder_free(r);
	fclose(common.out);
	CHECK(read_back(&g) == 0);
	CHECK_EQ_U(g.e.reason, SP_ENDR_ERROR);

	output_to("build/unit/test-recorder-norun.sp");
	r = sp_recorder_new(&o);
	CHECK(sp_recorder_open_output(r) == 0);
	CHECK(sp_recorder_launch(r, notexec) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), 126);
	sp_recorder_free(r);
	fclose(common.out);
	unlink(path);
}

/* A source that cannot start: the command never runs, the recording ends
 * with an error, and the spool is still whole. */
static void test_recorder_start_fails(void)
{
	char *argv[] = { "sh", "-c", "echo ran > build/unit/test-recorder-ran", NULL };
	struct fake a = { .feature = "", .missing = "" }, b = a;
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	struct got g;

	unlink("build/unit/test-recorder-ran");
	b.fail_start = true;
	output_to("build/unit/test-recorder-fail.sp");
	o = opts();
	r = sp_recorder_new(&o);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(&a)) == 0);
	CHECK(sp_recorder_add(r, SP_SOURCE_EVENTS, fake_new(&b)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	CHECK(sp_recorder_launch(r, argv) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), SP_EXIT_FATAL);
	CHECK_EQ_U(a.finished, 1);	/* what the others have is still written */
	sp_recorder_free(r);
	fclose(common.out);
	CHECK(access("build/unit/test-recorder-ran", F_OK) != 0);
	CHECK(read_back(&g) == 0);
	CHECK(g.end);
	CHECK_EQ_U(g.e.reason, SP_ENDR_ERROR);
	unlink(path);
}

/* A recorder of -p *pid, for 10 s at most (not what ends the tests). */
static struct sp_recorder *recorder_of(uint32_t *pid)
{
	struct sp_recorder_opts o = opts();

	o.pids = pid;
	o.npids = 1;
	o.duration_ns = 10000 * MS;
	return sp_recorder_new(&o);
}

/* r with the source a, from its start to its report: the exit status. */
static int record_whole(struct sp_recorder *r, struct fake *a)
{
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(a)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	sp_recorder_run(r);
	sp_recorder_end(r);
	return sp_recorder_report(r);
}

/* A child waiting to be told to exit (*go), and a recorder of -p it
 * (*pid), writing to out. */
static struct sp_recorder *recorder_of_child(const char *out, uint32_t *pid, int *go)
{
	pid_t child = child_waiting(go);

	CHECK(child > 0);
	*pid = (uint32_t)child;
	output_to(out);
	return recorder_of(pid);
}

/* -p: the recording ends when the processes it holds have exited. */
static void test_recorder_pids_exit(void)
{
	struct fake a = { .feature = "", .missing = "" };
	struct sp_recorder *r;
	uint32_t pid;
	struct got g;
	int go;

	r = recorder_of_child("build/unit/test-recorder-pids.sp", &pid, &go);
	CHECK(r != NULL);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(&a)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	sp_recorder_start(r);
	CHECK_EQ_U(a.target_pid, pid);
	/* the sources are given the process as held, to attach through */
	CHECK(a.target.pins != NULL);
	sp_recorder_go(r);
	close(go);	/* it exits once attached to */
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), SP_EXIT_OK);
	sp_recorder_free(r);
	waitpid((pid_t)pid, NULL, 0);
	fclose(common.out);
	CHECK(read_back(&g) == 0);
	CHECK_EQ_U(g.e.reason, SP_ENDR_EXITED);
	unlink(path);
}

/*
 * -p of a process that ends, its pid taken by another before the sources
 * attach (they take a second or two: the BPF programs load): what they did
 * by its number was done to the newcomer, so the recording fails as one of
 * a process that exited during the attach, whatever the sources said, and
 * writes none of what they read.
 */
static void test_recorder_pid_reused_before_start(void)
{
	struct fake a = { .feature = "", .missing = "", .base = 1, .step = 1, .n = 4 };
	struct got g;
	struct sp_recorder *r;
	uint32_t pid;
	pid_t old, reuse;
	int go, go2;

	old = child_waiting(&go);
	CHECK(old > 0);
	pid = (uint32_t)old;
	output_to("build/unit/test-recorder-reused.sp");
	r = recorder_of(&pid);	/* held from here */
	CHECK(r != NULL);
	reuse = end_and_reuse(old, go, &go2);
	if (reuse < 0) {
		sp_recorder_free(r);
		fclose(common.out);
		unlink(path);
		return;
	}
	CHECK_EQ_U(record_whole(r, &a), SP_EXIT_FATAL);
	CHECK_EQ_U(a.started, 1);
	sp_recorder_free(r);
	close(go2);
	waitpid(reuse, NULL, 0);
	fclose(common.out);
	/* a whole spool that says so, and none of what the source read */
	CHECK(read_back(&g) == 0);
	CHECK(g.end);
	CHECK_EQ_U(g.e.reason, SP_ENDR_ERROR);
	CHECK_EQ_U(g.nlost, 0);
	unlink(path);
}

/* -p of a process that ends (reaped, its number free) before the sources
 * attach: nothing was done to another process, the recording is one of a
 * process that ended. */
static void test_recorder_pid_ended_before_start(void)
{
	struct fake a = { .feature = "", .missing = "" };
	struct sp_recorder *r;
	uint32_t pid;
	int go;

	r = recorder_of_child("build/unit/test-recorder-ended.sp", &pid, &go);
	CHECK(r != NULL);
	close(go);
	waitpid((pid_t)pid, NULL, 0);
	CHECK_EQ_U(record_whole(r, &a), SP_EXIT_OK);
	sp_recorder_free(r);
	fclose(common.out);
	unlink(path);
}

/* SIGTERM to the recorder ends a recording of -a. */
static void test_recorder_signal(void)
{
	struct fake a = { .feature = "", .missing = "" };
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	struct got g;
	pid_t killer, self = getpid();

	output_to("build/unit/test-recorder-signal.sp");
	o = opts();
	o.system_wide = true;
	o.duration_ns = 10000 * MS;
	r = sp_recorder_new(&o);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(&a)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	killer = fork();
	if (killer == 0) {
		usleep(100 * 1000);
		kill(self, SIGTERM);
		_exit(0);
	}
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), SP_EXIT_OK);
	sp_recorder_free(r);
	waitpid(killer, NULL, 0);
	fclose(common.out);
	CHECK(read_back(&g) == 0);
	CHECK_EQ_U(g.e.reason, SP_ENDR_SIGNAL);
	unlink(path);
}

/* An output whose reader went away: 141; a full one: 2. */
static void test_recorder_output_fails(void)
{
	struct fake a = { .feature = "", .missing = "", .step = 1, .n = 3, .per_poll = 1 };
	struct sp_recorder_opts o;
	struct sp_recorder *r;
	int fds[2];

	CHECK(pipe(fds) == 0);
	close(fds[0]);
	memset(&common, 0, sizeof(common));
	common.out = fdopen(fds[1], "w");
	a.base = sp_now_mono_ns();
	o = opts();
	o.system_wide = true;
	o.duration_ns = 10000 * MS;
	r = sp_recorder_new(&o);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(&a)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	sp_recorder_run(r);	/* the first batch fails */
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), SP_RECORDER_EXIT_OUTPUT_CLOSED);
	sp_recorder_free(r);
	fclose(common.out);

	output_to("/dev/full");
	r = sp_recorder_new(&o);
	CHECK(sp_recorder_add(r, SP_SOURCE_SPANS, fake_new(&a)) == 0);
	CHECK(sp_recorder_open_output(r) == 0);
	sp_recorder_start(r);
	sp_recorder_go(r);
	sp_recorder_run(r);
	sp_recorder_end(r);
	CHECK_EQ_U(sp_recorder_report(r), SP_EXIT_FATAL);
	sp_recorder_free(r);
	fclose(common.out);
}

int main(void)
{
	sp_progname = "test-recorder";
	TAP_RUN(test_recorder_describe);
	TAP_RUN(test_recorder_pids_described);
	TAP_RUN(test_recorder_kinds);
	TAP_RUN(test_recorder_merge);
	TAP_RUN(test_recorder_command);
	TAP_RUN(test_recorder_cannot_run);
	TAP_RUN(test_recorder_start_fails);
	TAP_RUN(test_recorder_pids_exit);
	TAP_RUN(test_recorder_pid_ended_before_start);
	if (pid_reuse_possible())
		TAP_RUN(test_recorder_pid_reused_before_start);
	else
		TAP_SKIP(test_recorder_pid_reused_before_start, "needs root (ns_last_pid)");
	TAP_RUN(test_recorder_signal);
	TAP_RUN(test_recorder_output_fails);
	return TAP_DONE();
}
