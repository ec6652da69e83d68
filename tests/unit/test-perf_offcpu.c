// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/perf_offcpu.c: its options, and (as root) a real
 * recording of a forked child that blocks three times for 60 ms in a known
 * function, whose return address the child reports itself. Without
 * permission for kernel samples the recording is skipped.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_offcpu.h"
#include "sp.h"
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
	} else {
		TAP_SKIP(test_perf_offcpu_records_waits,
			 "no permission for kernel samples of context switches");
		TAP_SKIP(test_perf_offcpu_system_wide,
			 "no permission for kernel samples of context switches");
	}
	return TAP_DONE();
}
