// SPDX-License-Identifier: MIT
/* Unit tests for lib/record/triggers*.c: the specs, and each trigger fed
 * records built in memory; the command trigger runs real commands. */
#include <poll.h>
#include <signal.h>
#include <string.h>

#include "defs.h"
#include "events.h"
#include "sp.h"
#include "tap.h"
#include "triggers.h"

static struct sp_defs *defs;

/* Define string s; its id. */
static uint64_t str(const char *s)
{
	struct sp_record r = { .kind = SP_REC_STRING };
	const char *why;

	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = (uint32_t)strlen(s);
	if (sp_defs_add(defs, &r, &why))
		return 0;
	return sp_defs_nstrings(defs);
}

static struct sp_trigger_opts opts(const char *spec1, const char *spec2)
{
	struct sp_trigger_opts o;
	char err[512];

	memset(&o, 0, sizeof(o));
	if (spec1 && sp_triggers_parse(&o, spec1, err, sizeof(err)))
		printf("# %s\n", err);
	if (spec2 && sp_triggers_parse(&o, spec2, err, sizeof(err)))
		printf("# %s\n", err);
	return o;
}

static const char *check(struct sp_triggers *t, const struct sp_record *r, char *detail)
{
	detail[0] = 0;
	return sp_triggers_check(t, r, defs, detail, SP_TRIGGERS_DETAIL_MAX);
}

static struct sp_record process(uint64_t pid, const char *comm, const char *exe)
{
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.pid = pid;
	r.process.comm = str(comm);
	r.process.exe = str(exe);
	return r;
}

static struct sp_record pend(uint64_t pid, uint64_t status, uint64_t flags)
{
	struct sp_record r = { .kind = SP_REC_PROCESS_END };

	r.process_end.pid = pid;
	r.process_end.status = status;
	r.process_end.flags = flags;
	return r;
}

static struct sp_record proc_exit(uint64_t pid, int64_t code, uint64_t sig, uint64_t thread)
{
	struct sp_record r = { .kind = SP_REC_EVENT };

	r.event.pid = r.event.tid = pid;
	r.event.kind = SP_EV_PROC_EXIT;
	r.event.nfields = 3;
	r.event.field[0].u = (uint64_t)code;
	r.event.field[1].u = sig;
	r.event.field[2].u = thread;
	return r;
}

/* Each bad spec: refused, with one message that names it. */
static void test_triggers_parse_errors(void)
{
	static const struct {
		const char *spec, *why;
	} cases[] = {
		{ "span>abc", "'abc' is not a duration" },
		{ "span>", "use span>DURATION" },
		{ "span>1s:", "GLOB after ':' is empty" },
		{ "exit=SIGFOO", "'SIGFOO' is neither nonzero, crash nor a signal" },
		{ "exit=", "use exit" },
		{ "exitnow", "use exit[=WHAT][:GLOB], span>" },
		{ "event=nosuch:x", "no event 'nosuch'" },
		{ "event=open.nofield:x", "event path_open has no field 'nofield'" },
		{ "event=capable_check:x", "has no field to match by default" },
		{ "cmd=", "the COMMAND after 'cmd=' is empty" },
		{ "frobnicate", "use exit[=WHAT][:GLOB]" },
	};
	struct sp_trigger_opts o;
	char err[512], want[600];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&o, 0, sizeof(o));
		err[0] = 0;
		CHECK(sp_triggers_parse(&o, cases[i].spec, err, sizeof(err)) == -1);
		snprintf(want, sizeof(want), "invalid trigger '%s': ", cases[i].spec);
		CHECK(!strncmp(err, want, strlen(want)));
		if (!strstr(err, cases[i].why))
			printf("#   '%s' gave: %s\n", cases[i].spec, err);
		CHECK(strstr(err, cases[i].why) != NULL);
		CHECK(!strchr(err, '\n'));
	}
	memset(&o, 0, sizeof(o));
	CHECK(sp_triggers_parse(&o, "cmd=true", err, sizeof(err)) == 0);
	CHECK(sp_triggers_parse(&o, "cmd=false", err, sizeof(err)) == -1);
	CHECK(strstr(err, "one trigger command per recording") != NULL);
}

static void test_triggers_parse_ok(void)
{
	struct sp_trigger_opts o;
	char err[512];

	memset(&o, 0, sizeof(o));
	CHECK(!sp_triggers_any(&o));
	CHECK(sp_triggers_parse(&o, "exit=SIGSEGV,abrt,9", err, sizeof(err)) == 0);
	CHECK(o.exit && !o.exit_nonzero);
	CHECK_EQ_U(o.exit_signals, (1ull << SIGSEGV) | (1ull << SIGABRT) | (1ull << SIGKILL));
	CHECK(sp_triggers_parse(&o, "span>1.5s:Shop#*", err, sizeof(err)) == 0);
	CHECK_EQ_U(o.spans[0].min_ns, 1500000000ull);
	CHECK_STR(o.spans[0].glob, "Shop#*");
	CHECK(sp_triggers_parse(&o, "event=connect:5432", err, sizeof(err)) == 0);
	CHECK_EQ_U(o.events[0].kind, SP_EV_SOCK_CONNECT);
	CHECK_EQ_U(o.events[0].field, sp_event_field_index(SP_EV_SOCK_CONNECT, "port"));
	CHECK(sp_triggers_parse(&o, "event=proc_exec.argv:*--force*", err, sizeof(err)) == 0);
	CHECK_EQ_U(o.events[1].field, 1);
	CHECK(sp_triggers_parse(&o, "event=proc_fork", err, sizeof(err)) == 0);
	CHECK_STR(o.events[2].glob, "");
	CHECK(sp_triggers_parse(&o, "signal", err, sizeof(err)) == 0);
	CHECK(sp_triggers_any(&o));
}

static void test_triggers_exit(void)
{
	struct sp_trigger_opts o = opts("exit", NULL);
	struct sp_triggers *t = sp_triggers_new(&o);
	struct sp_record r;
	char d[SP_TRIGGERS_DETAIL_MAX];

	r = process(100, "crash\x1b[2Jy", "/opt/crashy");
	CHECK(!check(t, &r, d));
	/* exec replacing the image is no exit; nor is a clean one */
	r = pend(100, 0, SP_PEND_EXEC);
	CHECK(!check(t, &r, d));
	r = pend(101, 0, 0);
	CHECK(!check(t, &r, d));
	r = pend(100, 128 + SIGSEGV, SP_PEND_SIGNALED | SP_PEND_CORE);
	CHECK_STR(check(t, &r, d), "exit");
	CHECK_STR(d, "pid 100 (crash\\x1b[2Jy) killed by SIGSEGV");
	r = pend(102, 3, 0);
	CHECK_STR(check(t, &r, d), "exit");
	CHECK_STR(d, "pid 102 exited with status 3");
	/* a broken pipe is not a failure by default */
	r = pend(103, 128 + SIGPIPE, SP_PEND_SIGNALED);
	CHECK(!check(t, &r, d));
	/* the kernel's event and the process end of one death fire once;
	 * a thread's exit is no process's */
	r = process(104, "worker", "/usr/bin/worker");
	check(t, &r, d);
	r = proc_exit(104, -1, SIGABRT, 1);
	CHECK(!check(t, &r, d));
	r = proc_exit(104, -1, SIGABRT, 0);
	CHECK_STR(check(t, &r, d), "exit");
	CHECK_STR(d, "pid 104 (worker) killed by SIGABRT");
	r = pend(104, 128 + SIGABRT, SP_PEND_SIGNALED);
	CHECK(!check(t, &r, d));
	r = proc_exit(105, 0, 0, 0);
	CHECK(!check(t, &r, d));
	r = proc_exit(105, 2, 0, 0);
	CHECK_STR(check(t, &r, d), "exit");
	sp_triggers_free(t);
}

static void test_triggers_exit_narrowed(void)
{
	struct sp_trigger_opts o = opts("exit=SIGSEGV,SIGKILL:*crashy", NULL);
	struct sp_triggers *t = sp_triggers_new(&o);
	struct sp_record r;
	char d[SP_TRIGGERS_DETAIL_MAX];

	r = process(200, "crashy", "/opt/crashy");
	check(t, &r, d);
	r = process(201, "other", "/usr/bin/other");
	check(t, &r, d);
	r = pend(200, 128 + SIGABRT, SP_PEND_SIGNALED);
	CHECK(!check(t, &r, d));
	r = pend(201, 128 + SIGSEGV, SP_PEND_SIGNALED);
	CHECK(!check(t, &r, d));	/* not the process asked for */
	r = pend(202, 1, 0);
	CHECK(!check(t, &r, d));
	r = process(200, "crashy", "/opt/crashy");
	check(t, &r, d);
	r = proc_exit(200, -1, SIGKILL, 0);
	CHECK_STR(check(t, &r, d), "exit");
	CHECK(!strncmp(d, "pid 200 (crashy) killed by SIGKILL (", 36));
	sp_triggers_free(t);

	o = opts("exit=nonzero", NULL);
	t = sp_triggers_new(&o);
	r = pend(300, 128 + SIGSEGV, SP_PEND_SIGNALED);
	CHECK(!check(t, &r, d));
	r = pend(301, 1, 0);
	CHECK_STR(check(t, &r, d), "exit");
	sp_triggers_free(t);
}

static struct sp_record mark(enum sp_rec_kind kind, uint64_t time, uint64_t tid, uint64_t depth,
			     uint64_t rt, const char *klass, const char *method)
{
	struct sp_record r = { .kind = kind };

	r.mark.time = time;
	r.mark.pid = 10;
	r.mark.tid = tid;
	r.mark.depth = depth;
	r.mark.runtime = rt;
	r.mark.klass = klass ? str(klass) : 0;
	r.mark.method = str(method);
	return r;
}

static void test_triggers_span(void)
{
	struct sp_trigger_opts o = opts("span>1s:Shop#*", "span>5s:handle");
	struct sp_triggers *t = sp_triggers_new(&o);
	struct sp_record r;
	char d[SP_TRIGGERS_DETAIL_MAX];
	const uint64_t s = 1000000000;

	/* a slow Shop#run at depth 1 with a quick one nested inside */
	r = mark(SP_REC_SPAN_START, 1 * s, 11, 1, SP_RT_RUBY, "Shop", "run");
	CHECK(!check(t, &r, d));
	r = mark(SP_REC_SPAN_START, 1 * s + 10, 11, 2, SP_RT_RUBY, "Shop", "pay");
	CHECK(!check(t, &r, d));
	r = mark(SP_REC_SPAN_STOP, 1 * s + 20, 11, 2, SP_RT_RUBY, "Shop", "pay");
	CHECK(!check(t, &r, d));
	r = mark(SP_REC_SPAN_STOP, 3 * s + 500000000, 11, 1, SP_RT_RUBY, "Shop", "run");
	CHECK_STR(check(t, &r, d), "span");
	CHECK_STR(d, "span Shop#run took 2.500 s (over 1.000 s) in pid 10 tid 11");
	/* the same depth on another thread, a stop whose start came before */
	r = mark(SP_REC_SPAN_STOP, 9 * s, 12, 1, SP_RT_RUBY, "Shop", "run");
	CHECK(!check(t, &r, d));
	/* matched on the method alone; a name that matches neither */
	r = mark(SP_REC_SPAN_START, 10 * s, 13, 1, SP_RT_PYTHON, "app", "handle");
	check(t, &r, d);
	r = mark(SP_REC_SPAN_START, 10 * s, 14, 1, SP_RT_PYTHON, "app", "other");
	check(t, &r, d);
	r = mark(SP_REC_SPAN_STOP, 14 * s, 13, 1, SP_RT_PYTHON, "app", "handle");
	CHECK(!check(t, &r, d));	/* 4 s: under 5 */
	r = mark(SP_REC_SPAN_STOP, 30 * s, 14, 1, SP_RT_PYTHON, "app", "other");
	CHECK(!check(t, &r, d));
	r = mark(SP_REC_SPAN_START, 40 * s, 13, 1, SP_RT_PYTHON, "app", "handle");
	check(t, &r, d);
	r = mark(SP_REC_SPAN_STOP, 46 * s, 13, 1, SP_RT_PYTHON, "app", "handle");
	CHECK_STR(check(t, &r, d), "span");
	CHECK_STR(d, "span app.handle took 6.000 s (over 5.000 s) in pid 10 tid 13");
	sp_triggers_free(t);
}

static struct sp_record sample(uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };

	r.sample.time = time;
	r.sample.pid = r.sample.tid = 99;
	return r;
}

/* A span that hangs fires once it is open past its threshold, once; a
 * full table of spans whose stops never come starts over. */
static void test_triggers_span_open(void)
{
	struct sp_trigger_opts o = opts("span>1s:work*", NULL);
	struct sp_triggers *t = sp_triggers_new(&o);
	struct sp_triggers_stats st;
	struct sp_record r;
	char d[SP_TRIGGERS_DETAIL_MAX];
	const uint64_t s = 1000000000;
	unsigned int i;

	r = mark(SP_REC_SPAN_START, 10 * s, 21, 1, SP_RT_USDT, NULL, "work_loop");
	check(t, &r, d);
	r = mark(SP_REC_SPAN_START, 10 * s, 22, 1, SP_RT_USDT, NULL, "idle_loop");
	check(t, &r, d);
	r = sample(10 * s + 500000000);
	CHECK(!check(t, &r, d));
	r = sample(11 * s + 200000000);
	CHECK_STR(check(t, &r, d), "span");
	CHECK_STR(d, "span work_loop open for 1.200 s (over 1.000 s) in pid 10 tid 21");
	r = sample(15 * s);
	CHECK(!check(t, &r, d));
	/* no records while a thread sleeps: the loop's tick */
	r = mark(SP_REC_SPAN_START, 15 * s, 24, 1, SP_RT_USDT, NULL, "worker");
	check(t, &r, d);
	CHECK(!sp_triggers_tick(t, 16 * s, defs, d, sizeof(d)));
	CHECK_STR(sp_triggers_tick(t, 16 * s + 100000001, defs, d, sizeof(d)), "span");
	CHECK_STR(d, "span worker open for 1.100 s (over 1.000 s) in pid 10 tid 24");
	r = mark(SP_REC_SPAN_STOP, 16 * s, 21, 1, SP_RT_USDT, NULL, "work_loop");
	CHECK(!check(t, &r, d));	/* it fired already */
	r = mark(SP_REC_SPAN_STOP, 16 * s, 22, 1, SP_RT_USDT, NULL, "idle_loop");
	CHECK(!check(t, &r, d));
	for (i = 0; i < 70000; i++) {
		r = mark(SP_REC_SPAN_START, 20 * s + i, 100000 + i, 1, SP_RT_USDT, NULL, "x");
		check(t, &r, d);
	}
	sp_triggers_stats(t, &st);
	CHECK(st.untracked >= 65536);
	r = mark(SP_REC_SPAN_START, 30 * s, 23, 1, SP_RT_USDT, NULL, "work_item");
	check(t, &r, d);
	r = mark(SP_REC_SPAN_STOP, 30 * s + 10, 23, 1, SP_RT_USDT, NULL, "work_item");
	CHECK(!check(t, &r, d));
	sp_triggers_free(t);
}

static struct sp_record event(unsigned int kind, uint64_t pid)
{
	struct sp_record r = { .kind = SP_REC_EVENT };

	r.event.pid = r.event.tid = pid;
	r.event.kind = kind;
	r.event.nfields = sp_event_schema(kind)->nfields;
	return r;
}

static void test_triggers_event(void)
{
	static const uint8_t lo[4] = { 127, 0, 0, 1 }, other[4] = { 10, 1, 2, 3 };
	struct sp_trigger_opts o = opts("event=exec:*/curl", "event=connect:5432");
	struct sp_triggers *t;
	struct sp_record r;
	char d[SP_TRIGGERS_DETAIL_MAX], err[256];
	int port = sp_event_field_index(SP_EV_SOCK_CONNECT, "port");
	int addr = sp_event_field_index(SP_EV_SOCK_CONNECT, "addr");

	CHECK(sp_triggers_parse(&o, "event=connect.addr:127.*", err, sizeof(err)) == 0);
	CHECK(sp_triggers_parse(&o, "event=open:/etc/shadow", err, sizeof(err)) == 0);
	t = sp_triggers_new(&o);
	r = process(7, "sh", "/bin/sh");
	check(t, &r, d);
	r = event(SP_EV_PROC_EXEC, 7);
	r.event.field[0].u = str("/usr/bin/wget");
	CHECK(!check(t, &r, d));
	r.event.field[0].u = str("/usr/bin/curl");
	CHECK_STR(check(t, &r, d), "event");
	CHECK_STR(d, "proc_exec filename=/usr/bin/curl by pid 7 (sh)");
	r = event(SP_EV_SOCK_CONNECT, 8);
	r.event.field[port].u = 80;
	r.event.field[addr].b = (struct sp_bytes){ other, 4 };
	CHECK(!check(t, &r, d));
	r.event.field[port].u = 5432;
	CHECK_STR(check(t, &r, d), "event");
	CHECK_STR(d, "sock_connect port=5432 by pid 8");
	r.event.field[port].u = 80;
	r.event.field[addr].b = (struct sp_bytes){ lo, 4 };
	CHECK_STR(check(t, &r, d), "event");
	CHECK_STR(d, "sock_connect addr=127.0.0.1 by pid 8");
	/* others' paths are escaped in the detail */
	r = event(SP_EV_PATH_OPEN, 9);
	r.event.field[0].u = str("/etc/shadow\n");
	CHECK(!check(t, &r, d));
	r.event.field[0].u = str("/etc/shadow");
	CHECK_STR(check(t, &r, d), "event");
	sp_triggers_free(t);

	/* a detail is cut to its buffer, never inside an escape */
	{
		char small[24], path[400];

		memset(path, '\x01', sizeof(path) - 1);
		path[0] = '/';
		path[sizeof(path) - 1] = 0;
		o = opts("event=open", NULL);
		t = sp_triggers_new(&o);
		r = event(SP_EV_PATH_OPEN, 9);
		r.event.field[0].u = str(path);
		CHECK_STR(sp_triggers_check(t, &r, defs, small, sizeof(small)), "event");
		CHECK_STR(small, "path_open path=/\\x01");	/* cut: no " by" after it */
		CHECK_STR(sp_triggers_check(t, &r, defs, small, 1), "event");
		CHECK_STR(small, "");
		sp_triggers_free(t);
	}

	o = opts("event=open:*\\**", NULL);
	t = sp_triggers_new(&o);
	r = event(SP_EV_PATH_OPEN, 9);
	r.event.field[0].u = str("/tmp/a*\x07\xff");
	CHECK_STR(check(t, &r, d), "event");
	CHECK_STR(d, "path_open path=/tmp/a*\\x07\\xff by pid 9");
	sp_triggers_free(t);
}

/* Poll the command until it fires or runs runs have ended (at most a
 * minute of waiting, which the tests never come near). */
static const char *run_cmd(struct sp_triggers *t, char *d, uint64_t runs)
{
	struct sp_triggers_stats st;
	const char *name;
	uint64_t now, wake, end = sp_now_mono_ns() + 60 * UINT64_C(1000000000);
	struct pollfd p;

	for (;;) {
		now = sp_now_mono_ns();
		name = sp_triggers_cmd_poll(t, now, d, SP_TRIGGERS_DETAIL_MAX);
		sp_triggers_stats(t, &st);
		/* runs are one after the other: the next has started */
		if (name || now > end || st.cmd_runs > runs)
			return name;
		wake = sp_triggers_cmd_deadline(t);
		p.fd = sp_triggers_cmd_fd(t);
		p.events = POLLIN;
		poll(&p, p.fd >= 0 ? 1 : 0, wake > now ? (int)((wake - now) / 1000000) + 1 : 0);
	}
}

static void test_triggers_cmd(void)
{
	struct sp_trigger_opts o = opts("cmd=printf 'disk\\tfull\\nsecond line\\n'; exit 0", NULL);
	struct sp_triggers_stats st;
	struct sp_triggers *t;
	char d[SP_TRIGGERS_DETAIL_MAX];

	o.every_ns = 100000000;
	/* a loaded machine may take longer than every_ns (the default
	 * timeout) to run a shell: a kill then would be the machine's, not
	 * the rule's */
	o.timeout_ns = 30 * UINT64_C(1000000000);
	t = sp_triggers_new(&o);
	CHECK(sp_triggers_cmd_fd(t) < 0);
	CHECK(sp_triggers_cmd_deadline(t) != UINT64_MAX);
	CHECK_STR(run_cmd(t, d, 1), "cmd");
	CHECK_STR(d, "disk\\x09full");
	sp_triggers_free(t);

	/* a command that exits 1 never fires */
	o = opts("cmd=echo no; exit 1", NULL);
	o.every_ns = 100000000;
	o.timeout_ns = 30 * UINT64_C(1000000000);
	t = sp_triggers_new(&o);
	CHECK(run_cmd(t, d, 2) == NULL);
	sp_triggers_stats(t, &st);
	CHECK_EQ_U(st.cmds, 0);
	CHECK(st.cmd_runs >= 2);
	sp_triggers_free(t);

	/* one that hangs (its child too, holding the pipe) is killed at its
	 * timeout and does not fire */
	o = opts("cmd=sleep 30 & echo started; exec sleep 30", NULL);
	o.every_ns = 100000000;
	o.timeout_ns = 200000000;
	t = sp_triggers_new(&o);
	CHECK(run_cmd(t, d, 2) == NULL);
	sp_triggers_stats(t, &st);
	CHECK(st.cmd_timeouts >= 1);
	CHECK_EQ_U(st.cmds, 0);
	sp_triggers_free(t);

	/* no command: nothing to poll, no deadline */
	o = opts("exit", NULL);
	t = sp_triggers_new(&o);
	CHECK(sp_triggers_cmd_deadline(t) == UINT64_MAX);
	CHECK(sp_triggers_cmd_poll(t, sp_now_mono_ns(), d, sizeof(d)) == NULL);
	sp_triggers_free(t);
}

int main(void)
{
	defs = sp_defs_new();
	TAP_RUN(test_triggers_parse_errors);
	TAP_RUN(test_triggers_parse_ok);
	TAP_RUN(test_triggers_exit);
	TAP_RUN(test_triggers_exit_narrowed);
	TAP_RUN(test_triggers_span);
	TAP_RUN(test_triggers_span_open);
	TAP_RUN(test_triggers_event);
	TAP_RUN(test_triggers_cmd);
	sp_defs_free(defs);
	return TAP_DONE();
}
