// SPDX-License-Identifier: MIT
/* Unit tests of sp-tree's tree (lib/render/tree.c, tree_*.c): renderings and tree shape. */
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "tap.h"
#include "tree.h"

static struct sp_buf buf = SP_BUF_INIT;

static const char *text(uint64_t kind, const uint64_t *v, unsigned int n, bool stable)
{
	sp_event_text(&buf, kind, v, n, stable);
	return sp_buf_str(&buf);
}

static const char *open_flags(uint64_t flags)
{
	sp_buf_reset(&buf);
	sp_open_flags_text(&buf, flags);
	return sp_buf_str(&buf);
}

#define S(x) ((uint64_t)(uintptr_t)(x))

static void test_tree_open_flags(void)
{
	CHECK_STR(open_flags(O_RDONLY | O_CLOEXEC), "O_RDONLY|O_CLOEXEC");
	CHECK_STR(open_flags(O_WRONLY | O_CREAT | O_TRUNC), "O_WRONLY|O_CREAT|O_TRUNC");
	CHECK_STR(open_flags(O_RDWR | O_APPEND | O_NOFOLLOW | O_DIRECTORY),
		  "O_RDWR|O_APPEND|O_DIRECTORY|O_NOFOLLOW");
	CHECK_STR(open_flags(O_SYNC), "O_RDONLY|O_SYNC|O_DSYNC");	/* two bits, one name each */
	CHECK_STR(open_flags(O_PATH | O_CLOEXEC), "O_CLOEXEC|O_PATH");
	CHECK_STR(open_flags(0x40000000 | O_WRONLY), "O_WRONLY|0x40000000");
}

static void test_tree_event_texts(void)
{
	static const uint8_t v4[] = { 4, 127, 0, 0, 1 };
	static const uint8_t v6[] = { 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	uint64_t v[SP_EVENT_MAX_FIELDS];

	v[0] = S("/etc/app.conf"), v[1] = O_RDONLY | O_CLOEXEC, v[2] = 0, v[3] = 3;
	CHECK_STR(text(SP_EV_PATH_OPEN, v, 4, false), "/etc/app.conf (O_RDONLY|O_CLOEXEC) = 3");
	CHECK_STR(text(SP_EV_PATH_OPEN, v, 4, true), "/etc/app.conf (O_RDONLY|O_CLOEXEC) = fd");
	v[3] = (uint64_t)-2;
	CHECK_STR(text(SP_EV_PATH_OPEN, v, 4, true), "/etc/app.conf (O_RDONLY|O_CLOEXEC) = -ENOENT");
	v[0] = S("my file"), v[1] = O_WRONLY | O_CREAT, v[2] = 0640, v[3] = 4, v[4] = S("/tmp");
	CHECK_STR(text(SP_EV_PATH_OPEN, v, 5, false), "/tmp/\"my file\" (O_WRONLY|O_CREAT, 0640) = 4");

	v[0] = 2, v[1] = S(v4), v[2] = 8080, v[3] = 0, v[4] = 5;
	CHECK_STR(text(SP_EV_SOCK_CONNECT, v, 5, false), "127.0.0.1:8080 = 0");
	v[0] = 10, v[1] = S(v6), v[2] = 53, v[3] = (uint64_t)-111;
	CHECK_STR(text(SP_EV_SOCK_CONNECT, v, 5, false), "[::1]:53 = -ECONNREFUSED");
	v[0] = 2, v[1] = S(v4), v[2] = 40123, v[3] = 7;
	CHECK_STR(text(SP_EV_SOCK_ACCEPT, v, 5, false), "from 127.0.0.1:40123 = 7");
	CHECK_STR(text(SP_EV_SOCK_ACCEPT, v, 5, true), "from 127.0.0.1 = fd");

	v[0] = S("localhost"), v[1] = 1, v[2] = S(v4), v[3] = 53, v[4] = 99;
	CHECK_STR(text(SP_EV_DNS_REQ, v, 5, false), "localhost A via 127.0.0.1:53");
	v[1] = 28, v[2] = 0;
	CHECK_STR(text(SP_EV_DNS_REQ, v, 5, false), "localhost AAAA");

	v[0] = 4712, v[1] = 4712, v[2] = 0;
	CHECK_STR(text(SP_EV_PROC_FORK, v, 3, false), "4712");
	CHECK_STR(text(SP_EV_PROC_FORK, v, 3, true), "child");
	v[2] = SP_FORK_THREAD, v[1] = 4713;
	CHECK_STR(text(SP_EV_PROC_FORK, v, 3, false), "thread 4713");

	v[0] = S("/bin/sh"), v[1] = S("sh -c 'cat /etc/hostname'"), v[2] = 0;
	CHECK_STR(text(SP_EV_PROC_EXEC, v, 4, false), "/bin/sh -c 'cat /etc/hostname'");
	v[1] = S("/bin/sh -c true");
	CHECK_STR(text(SP_EV_PROC_EXEC, v, 4, false), "/bin/sh -c true");
	v[1] = S("busybox sh"), v[2] = 1;
	CHECK_STR(text(SP_EV_PROC_EXEC, v, 4, false), "/bin/sh [busybox sh] …");

	v[0] = 0, v[1] = 9, v[2] = 0;
	CHECK_STR(text(SP_EV_PROC_EXIT, v, 3, false), "killed by SIGKILL");
	v[0] = (uint64_t)-1 & 0xff, v[1] = 0, v[2] = 1;
	CHECK_STR(text(SP_EV_PROC_EXIT, v, 3, false), "thread exit 255");

	v[0] = (uint64_t)4712, v[1] = 15, v[2] = 0;
	CHECK_STR(text(SP_EV_TASK_KILL, v, 3, false), "SIGTERM to 4712 = 0");
	CHECK_STR(text(SP_EV_TASK_KILL, v, 3, true), "SIGTERM = 0");
	v[0] = 12, v[1] = (uint64_t)-1;
	CHECK_STR(text(SP_EV_CAPABLE_CHECK, v, 2, false), "CAP_NET_ADMIN = -EPERM");
	v[0] = S("setuid"), v[1] = 0, v[2] = 1000, v[3] = 5, v[4] = 5, v[5] = 0;
	CHECK_STR(text(SP_EV_SETID_CHANGE, v, 6, false), "setuid uid 0→1000 = 0");
	v[0] = S("/a"), v[1] = S("/b"), v[2] = 0, v[3] = 0;
	CHECK_STR(text(SP_EV_FILE_RENAME, v, 4, false), "/a → /b = 0");
	v[0] = S("/x"), v[1] = 0755, v[2] = 0;
	CHECK_STR(text(SP_EV_FILE_CHMOD, v, 3, false), "/x mode 0755 = 0");
	v[0] = S("open"), v[1] = S("('/etc/passwd', 'r')"), v[2] = 2;
	CHECK_STR(text(SP_EV_AUDIT, v, 3, false), "open ('/etc/passwd', 'r')");
	CHECK_STR(text(999, v, 0, false), "kind 999");
}

/* A text longer than SP_EVENT_TEXT_MAX is cut at a whole character. */
static void test_tree_event_text_cut(void)
{
	uint64_t v[SP_EVENT_MAX_FIELDS] = { 0 };
	char path[2 + 2 * 1500 + 1] = "/a";
	const char *t;
	size_t i;

	for (i = 0; i < 1000; i++)	/* "é" is 2 bytes */
		memcpy(path + 2 + 2 * i, "\xc3\xa9", 2);
	v[0] = S(path), v[1] = O_RDONLY, v[3] = 3;
	t = text(SP_EV_PATH_OPEN, v, 4, false);
	CHECK_EQ_U(strlen(t), 2002 + strlen(" (O_RDONLY) = 3"));
	for (; i < 1500; i++)
		memcpy(path + 2 + 2 * i, "\xc3\xa9", 2);
	t = text(SP_EV_PATH_OPEN, v, 4, false);
	CHECK(strlen(t) <= SP_EVENT_TEXT_MAX);
	CHECK(!memcmp(t, path, 2046));	/* byte 2047 would split an "é": it goes */
	CHECK((unsigned char)t[2046] != 0xc3);
}

/* The groups of --events= lists, by name, as sp-record and sp-tree read them. */
static void test_event_groups(void)
{
	uint64_t file = sp_event_group_kinds(SP_EVG_FILE);

	CHECK_EQ_U(sp_event_group_by_name("file"), SP_EVG_FILE);
	CHECK_EQ_U(sp_event_group_by_name("runtime"), SP_EVG_RUNTIME);
	CHECK_EQ_U(sp_event_group_by_name("path_open"), 0);
	CHECK_EQ_U(sp_event_group_by_name("all"), 0);
	CHECK(file & (1ull << SP_EV_PATH_OPEN));
	CHECK(file & (1ull << SP_EV_FILE_UNLINK));
	CHECK(!(file & (1ull << SP_EV_PROC_EXEC)));
	CHECK_EQ_U(sp_event_group_kinds(SP_EVG_PROC | SP_EVG_DNS),
		   (1ull << SP_EV_PROC_FORK) | (1ull << SP_EV_PROC_EXEC) |
		   (1ull << SP_EV_PROC_EXIT) | (1ull << SP_EV_DNS_REQ));
	CHECK_EQ_U(sp_event_group_kinds(0), 0);
}

/* Every kind of lib/stream/events.c renders without "?" when its fields are set. */
static void test_tree_every_kind(void)
{
	static const uint8_t v4[] = { 4, 10, 0, 0, 1 };
	uint64_t v[SP_EVENT_MAX_FIELDS];
	unsigned int k, i;
	const char *t;

	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		const struct sp_event_schema *es = sp_event_schema(k);

		CHECK(es != NULL);
		if (!es)
			continue;
		for (i = 0; i < es->nfields; i++)
			v[i] = es->fields[i].type == SP_FT_STR ? S("s") :
			       es->fields[i].type == SP_FT_ADDR ? S(v4) : 1;
		t = text(k, v, es->nfields, false);
		if (!*t || strstr(t, "?") || !strncmp(t, "kind", 4))
			printf("#   %s: \"%s\"\n", es->name, t);
		CHECK(*t && !strstr(t, "?") && strncmp(t, "kind", 4));
	}
}

/* ---- tree shape ------------------------------------------------------- */

static struct sp_tree *tree;
static uint64_t nstr;

static uint64_t str(const char *s)
{
	struct sp_record r = { .kind = SP_REC_STRING };

	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = (uint32_t)strlen(s);
	sp_tree_add(tree, &r);
	return ++nstr;
}

static void header(void)
{
	struct sp_record r = { .kind = SP_REC_HEADER };

	r.header.start_mono_ns = 1000;
	r.header.sample_period = 1000000;
	r.header.event.p = (const uint8_t *)"cpu-clock";
	r.header.event.len = 9;
	nstr = 0;
	sp_tree_add(tree, &r);
}

static void proc(uint64_t pid, uint64_t ppid, const char *comm)
{
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.pid = pid;
	r.process.ppid = ppid;
	r.process.comm = str(comm);
	sp_tree_add(tree, &r);
}

static void span(uint64_t parent, uint64_t fork, uint64_t pid, uint64_t tid, uint64_t method,
		 uint64_t start, uint64_t stop, uint64_t end, uint64_t samples, uint64_t total)
{
	struct sp_record r = { .kind = SP_REC_SPAN };

	r.span.parent = parent;
	r.span.fork_span = fork;
	r.span.pid = pid;
	r.span.tid = tid;
	r.span.method = method;
	r.span.start = start;
	r.span.stop = stop;
	r.span.end = end;
	r.span.samples = samples;
	r.span.total_samples = total;
	sp_tree_add(tree, &r);
}

static void ev(uint64_t t, uint64_t pid, uint64_t tid, uint64_t span, uint64_t rule,
	       uint64_t kind, uint64_t f0, uint64_t f1, uint64_t f2, uint64_t f3)
{
	struct sp_record r = { .kind = SP_REC_EVENT };

	r.event.time = t;
	r.event.pid = pid;
	r.event.tid = tid;
	r.event.span = span;
	r.event.rule = rule;
	r.event.kind = kind;
	r.event.nfields = sp_event_schema(kind)->nfields;
	r.event.field[0].u = f0;
	r.event.field[1].u = f1;
	r.event.field[2].u = f2;
	r.event.field[3].u = f3;
	sp_tree_add(tree, &r);
}

static char *print(void)
{
	char *p = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&p, &n);

	CHECK(sp_tree_print(tree, f) == 0);
	fclose(f);
	return p;
}

/* A small recording: main span with a child, a fork whose child opens a file. */
static void build(const struct sp_tree_opts *o)
{
	uint64_t m_main, m_child, path;

	tree = sp_tree_new(o);
	header();
	proc(10, 1, "app");
	m_main = str("main");
	m_child = str("child");
	path = str("/etc/x");
	span(0, 0, 10, 10, m_main, 1000, 5001000, SP_END_STOPPED, 2, 5);	/* id 1 */
	ev(2000, 10, 10, 1, SP_RULE_THREAD, SP_EV_PROC_FORK, 20, 20, 0, 0);
	ev(3000, 20, 20, 1, SP_RULE_FORK, SP_EV_PATH_OPEN, path, 0, 0, 3);
	span(1, 0, 10, 10, m_child, 4000, 1004000, SP_END_STOPPED, 3, 3);	/* id 2 */
	span(1, 0, 10, 10, m_child, 1005000, 2005000, SP_END_STOPPED, 0, 0);	/* id 3 */
	span(0, 0, 10, 10, 0, 6000000, 6000000, SP_END_SYNTHETIC, 0, 0);	/* gap, id 4 */
	ev(6000000, 10, 10, 4, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, (uint64_t)-13);
}

static void test_tree_shape(void)
{
	struct sp_tree_opts o = { .stable = false };
	char *p;

	/* two identical child spans collapse; dur and cpu are their sums */
	build(&o);
	p = print();
	CHECK_STR(p,
		/* no end record: from the first record (1000) to the last (6000000) */
		"# stackpulse recording  started ?  duration 6.0ms "
		"(no end record: first to last record)  lost 0\n"
		"# processes 2  spans 4  events 3\n"
		"[PROC pid=10 comm=app parent=1]\n"
		"├─ [SPAN tid=10 main dur=5.0ms cpu=5.0ms self-cpu=2.0ms]\n"
		"│  ├─ PROC proc_fork → 20  @+1.0us\n"
		"│  │  └─ [PROC pid=20 comm=? parent=10]\n"
		"│  │     └─ FILE path_open → /etc/x (O_RDONLY) = 3  @+2.0us\n"
		"│  └─ ×2 [SPAN tid=10 child dur=2.0ms cpu=3.0ms]\n"
		"└─ [SPAN tid=10 <no-span> dur=0ns]\n"
		"   └─ FILE path_open → /etc/x (O_RDONLY) = -EACCES  @+0ns\n");
	free(p);
	sp_tree_free(tree);
}

/* A sock_accept from 127.0.0.1:port with result res. */
static void ev_accept(uint64_t t, uint64_t pid, uint64_t span, uint64_t port, uint64_t res)
{
	static const uint8_t lo[] = { 127, 0, 0, 1 };
	struct sp_record r = { .kind = SP_REC_EVENT };

	r.event.time = t;
	r.event.pid = pid;
	r.event.tid = pid;
	r.event.span = span;
	r.event.rule = SP_RULE_THREAD;
	r.event.kind = SP_EV_SOCK_ACCEPT;
	r.event.nfields = sp_event_schema(SP_EV_SOCK_ACCEPT)->nfields;
	r.event.field[0].u = 2;		/* AF_INET */
	r.event.field[1].b.p = lo;
	r.event.field[1].b.len = sizeof(lo);
	r.event.field[2].u = port;
	r.event.field[3].u = res;
	r.event.field[4].u = 3;
	sp_tree_add(tree, &r);
}

/*
 * Siblings that differ only in what --stable leaves out (a peer's port, an
 * fd) collapse into one line that shows "*" for it, not the first one's:
 * the line holds for every member. So do the lines under a collapsed run,
 * whose members' children are folded into the first's.
 */
static void test_tree_collapse_differing(void)
{
	struct sp_tree_opts o = { .stable = false };
	uint64_t m, path;
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "srv");
	m = str("handle");
	path = str("/etc/x");
	span(0, 0, 10, 10, m, 1000, 2000, SP_END_STOPPED, 0, 0);		/* id 1 */
	ev_accept(1100, 10, 1, 56314, 4);
	ev_accept(1200, 10, 1, 56320, 4);
	ev_accept(1300, 10, 1, 56330, 4);
	ev(1400, 10, 10, 1, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 5);
	ev(1500, 10, 10, 1, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 6);
	ev(1600, 10, 10, 1, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 6);
	span(0, 0, 10, 10, m, 3000, 4000, SP_END_STOPPED, 0, 0);		/* id 2 */
	ev_accept(3100, 10, 2, 56340, 4);
	ev_accept(3200, 10, 2, 56340, 4);
	ev(3400, 10, 10, 2, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 5);
	ev(3500, 10, 10, 2, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 6);
	ev(3600, 10, 10, 2, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 6);
	p = print();
	CHECK(strstr(p, "\n│  ├─ ×3 NET  sock_accept → from 127.0.0.1:* = 4\n") != NULL);
	CHECK(strstr(p, "\n│  └─ ×3 FILE path_open → /etc/x (O_RDONLY) = *\n") != NULL);
	CHECK(!strstr(p, "56314"));
	CHECK(strstr(p, "×2 NET  sock_accept → from 127.0.0.1:56340 = 4\n") != NULL);
	free(p);
	sp_tree_free(tree);

	/* two runs of two identical calls; then a port of one member differs */
	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "srv");
	m = str("handle");
	span(0, 0, 10, 10, m, 1000, 2000, SP_END_STOPPED, 0, 0);
	ev_accept(1100, 10, 1, 56314, 4);
	span(0, 0, 10, 10, m, 3000, 4000, SP_END_STOPPED, 0, 0);
	ev_accept(3100, 10, 2, 56314, 4);
	span(0, 0, 10, 10, m, 5000, 6000, SP_END_STOPPED, 0, 0);
	ev_accept(5100, 10, 3, 56999, 4);
	p = print();
	CHECK_STR(p,
		"# stackpulse recording  started ?  duration 5.0us "
		"(no end record: first to last record)  lost 0\n"
		"# processes 1  spans 3  events 3\n"
		"[PROC pid=10 comm=srv parent=1]\n"
		"└─ ×3 [SPAN tid=10 handle dur=3.0us]\n"
		"   └─ ×3 NET  sock_accept → from 127.0.0.1:* = 4\n");
	free(p);
	sp_tree_free(tree);

	/* the same port each time: said */
	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "srv");
	ev_accept(1100, 10, 0, 56314, 4);
	ev_accept(1200, 10, 0, 56314, 4);
	p = print();
	CHECK(strstr(p, "\n└─ ×2 NET  sock_accept → from 127.0.0.1:56314 = 4\n") != NULL);
	free(p);
	sp_tree_free(tree);
}

/* The header of a recording of command: the recorded command line. */
static void header_command(const char *command)
{
	struct sp_record r = { .kind = SP_REC_HEADER };

	r.header.start_mono_ns = 1000;
	r.header.command.p = (const uint8_t *)command;
	r.header.command.len = (uint32_t)strlen(command);
	nstr = 0;
	sp_tree_add(tree, &r);
}

/*
 * A command sp-record could not start (sp-record -- /nonexistent/cmd): no
 * process record, only its proc_exit. Its line says how it ended and names
 * the program it was to run; a process that no record names in a recording
 * of processes attached (-p) stays "?".
 */
static void test_tree_command_not_started(void)
{
	struct sp_tree_opts o = { .stable = false };
	char *p;

	tree = sp_tree_new(&o);
	header_command("'/no such/cmd' -x");
	ev(2000, 30, 30, 0, SP_RULE_GAP, SP_EV_PROC_EXIT, 127, 0, 0, 0);
	p = print();
	CHECK(strstr(p, "\n[PROC pid=30 comm=cmd exit=127]\n") != NULL);
	free(p);
	sp_tree_free(tree);

	tree = sp_tree_new(&o);
	header_command("-p 30: sleep 9");
	ev(2000, 30, 30, 0, SP_RULE_GAP, SP_EV_PROC_EXIT, 0, 9, 0, 0);
	p = print();
	CHECK(strstr(p, "\n[PROC pid=30 comm=? killed=SIGKILL]\n") != NULL);
	free(p);
	sp_tree_free(tree);

	/* a process record names it */
	tree = sp_tree_new(&o);
	header_command("/bin/true");
	proc(30, 1, "true");
	ev(2000, 30, 30, 0, SP_RULE_GAP, SP_EV_PROC_EXIT, 1, 0, 0, 0);
	p = print();
	CHECK(strstr(p, "\n[PROC pid=30 comm=true parent=1 exit=1]\n") != NULL);
	free(p);
	sp_tree_free(tree);
}

/*
 * The counts line tells spans (method and gap spans, what --summary counts)
 * from frames (an interpreted frame's synthetic span, [FRAME]).
 */
static void test_tree_frame_counts(void)
{
	struct sp_tree_opts o = { .stable = false };
	uint64_t f;
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "ruby");
	f = str("load");
	span(0, 0, 10, 10, 0, 1000, 9000, SP_END_SYNTHETIC, 0, 0);	/* gap, id 1 */
	span(1, 0, 10, 10, f, 2000, 3000, SP_END_SYNTHETIC, 1, 1);	/* frame, id 2 */
	ev(2000, 10, 10, 2, SP_RULE_GAP, SP_EV_PROC_EXIT, 0, 0, 1, 0);
	span(1, 0, 10, 10, f, 4000, 5000, SP_END_SYNTHETIC, 0, 0);	/* frame, id 3 */
	p = print();
	CHECK(strstr(p, "\n# processes 1  spans 1  frames 2  events 1\n") != NULL);
	CHECK(strstr(p, "[FRAME tid=10 load dur=1.0us cpu=1.0ms]") != NULL);
	free(p);
	sp_tree_free(tree);

	o.summary = true;
	tree = sp_tree_new(&o);
	header();
	span(0, 0, 10, 10, 0, 1000, 9000, SP_END_SYNTHETIC, 0, 0);
	span(1, 0, 10, 10, str("load"), 2000, 3000, SP_END_SYNTHETIC, 1, 1);
	p = print();
	CHECK(strstr(p, "# stackpulse summary  spans 1  methods 1") == p);
	CHECK(strstr(p, "\n# 1 frames ([FRAME] in the tree") != NULL);
	free(p);
	sp_tree_free(tree);
}

/* Fork events that make a cycle (20 forks 10, which forked 20: a forged or
 * garbled stream): 10 stays a root, the second fork gets a process of its
 * own; nothing is lost or leaked (ASan) and printing ends. */
static void test_tree_fork_cycle(void)
{
	struct sp_tree_opts o = { .stable = true };
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	ev(2000, 10, 10, 0, SP_RULE_GAP, SP_EV_PROC_FORK, 20, 20, 0, 0);
	ev(3000, 20, 20, 0, SP_RULE_GAP, SP_EV_PROC_FORK, 10, 10, 0, 0);
	p = print();
	CHECK_STR(p, "# stackpulse recording\n"
		  "[PROC comm=app]\n"
		  "└─ PROC proc_fork → child\n"
		  "   └─ [PROC comm=?]\n"
		  "      └─ PROC proc_fork → child\n"
		  "         └─ [PROC comm=?]\n");
	free(p);
	sp_tree_free(tree);
}

static void test_tree_stable_collapse(void)
{
	struct sp_tree_opts o = { .stable = true };
	char *p;

	build(&o);
	p = print();
	/* the two child spans differ only in samples and times: one line */
	CHECK_STR(p,
		"# stackpulse recording\n"
		"[PROC comm=app]\n"
		"├─ [SPAN main]\n"
		"│  ├─ PROC proc_fork → child\n"
		"│  │  └─ [PROC comm=?]\n"
		"│  │     └─ FILE path_open → /etc/x (O_RDONLY) = fd\n"
		"│  └─ ×2 [SPAN child]\n"
		"└─ [SPAN <no-span>]\n"
		"   └─ FILE path_open → /etc/x (O_RDONLY) = -EACCES\n");
	free(p);
	sp_tree_free(tree);
}

/*
 * --stable orders the threads under a node by what they did: the text of
 * their first item, then a hash of all of it. Four threads that start the
 * same span and then open different files: their order is the hash's, not
 * their tids' nor their times', and it is pinned here, because it is part
 * of sp-tree's output (tree_order.c: text_fingerprint()).
 */
static void test_tree_stable_thread_order(void)
{
	struct sp_tree_opts o = { .stable = true };
	static const char *const files[] = { "/a", "/b", "/c", "/d" };
	uint64_t work, path;
	unsigned int i;
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	work = str("work");
	for (i = 0; i < 4; i++) {
		path = str(files[i]);
		span(0, 0, 10, 11 + i, work, 2000 + 1000 * i, 2500 + 1000 * i, SP_END_STOPPED,
		     0, 0);	/* id i + 1 */
		ev(2100 + 1000 * i, 10, 11 + i, i + 1, SP_RULE_THREAD, SP_EV_PATH_OPEN, path,
		   0, 0, 3);
	}
	p = print();
	CHECK_STR(p, "# stackpulse recording\n"
		  "[PROC comm=app]\n"
		  "├─ [SPAN work]\n"
		  "│  └─ FILE path_open → /b (O_RDONLY) = fd\n"
		  "├─ [SPAN work]\n"
		  "│  └─ FILE path_open → /a (O_RDONLY) = fd\n"
		  "├─ [SPAN work]\n"
		  "│  └─ FILE path_open → /d (O_RDONLY) = fd\n"
		  "└─ [SPAN work]\n"
		  "   └─ FILE path_open → /c (O_RDONLY) = fd\n");
	free(p);
	sp_tree_free(tree);
}

static void test_tree_filters(void)
{
	struct sp_tree_opts o = { .stable = true, .min_dur_ns = 2000000 };
	static const char *const pat[] = { "chi*" };
	char *p;

	build(&o);
	p = print();
	CHECK(strstr(p, "[SPAN main]") != NULL);
	CHECK(strstr(p, "child]") == NULL);	/* 1ms < 2ms */
	CHECK(strstr(p, "<no-span>") != NULL);	/* gaps are never hidden */
	free(p);
	sp_tree_free(tree);

	memset(&o, 0, sizeof(o));
	o.stable = true;
	o.spans = pat;
	o.nspans = 1;
	build(&o);
	p = print();
	CHECK_STR(p,
		"# stackpulse recording\n"
		"[PROC comm=app]\n"
		"└─ [SPAN main]\n"
		"   └─ ×2 [SPAN child]\n");
	free(p);
	sp_tree_free(tree);

	memset(&o, 0, sizeof(o));
	o.stable = true;
	o.event_kinds = 1ull << SP_EV_PATH_OPEN;
	o.max_depth = 2;
	build(&o);
	p = print();
	CHECK_STR(p,
		"# stackpulse recording\n"
		"[PROC comm=app]\n"
		"├─ [SPAN main]\n"
		"│  └─ PROC proc_fork → child\n"
		"│     └─ … 1 more\n"
		"└─ [SPAN <no-span>]\n"
		"   └─ FILE path_open → /etc/x (O_RDONLY) = -EACCES\n");
	free(p);
	sp_tree_free(tree);
}

/* Ruby: a fiber switch, and a span of a method. */
static void fiber(uint64_t t, uint64_t pid, uint64_t from, uint64_t to, bool fresh)
{
	struct sp_record r = { .kind = SP_REC_FIBER_SWITCH };

	r.fiber_switch = (struct sp_fiber_switch){ .time = t, .pid = pid, .tid = pid,
		.from = from, .to = to, .flags = fresh ? SP_FIBER_NEW : 0 };
	sp_tree_add(tree, &r);
}

static void ruby_span(uint64_t pid, uint64_t method, uint64_t start, uint64_t stop)
{
	struct sp_record r = { .kind = SP_REC_SPAN };

	r.span = (struct sp_span){ .pid = pid, .tid = pid, .method = method, .start = start,
		.stop = stop, .end = SP_END_STOPPED, .runtime = SP_RT_RUBY };
	sp_tree_add(tree, &r);
}

/* How many fiber lanes the output lists, -1 when it has no lanes line. */
static int fiber_lanes(const char *p)
{
	const char *l = strstr(p, "# lanes: ");
	int n = 0;

	if (!l)
		return -1;
	for (; (l = strstr(l, "\nfiber ")); l++)
		n++;
	return n;
}

/*
 * Process 10 forks 20; each runs a fiber, 20's calls chunk() in it. The
 * fork record comes after 20's first switch (as sp-correlate can write
 * it): the lanes follow the tree's filters all the same.
 */
static void build_fibers(const struct sp_tree_opts *o)
{
	uint64_t chunk, other;

	tree = sp_tree_new(o);
	header();
	proc(10, 1, "app");
	chunk = str("chunk");
	other = str("other");
	fiber(2000, 10, 0, 0xa0, true);
	ruby_span(10, other, 2100, 2200);
	fiber(2500, 10, 0xa0, 0, false);
	fiber(3000, 20, 0, 0xb0, true);
	ruby_span(20, chunk, 3100, 3200);
	fiber(3500, 20, 0xb0, 0, false);
	ruby_span(20, other, 3600, 3700);	/* outside the fiber */
	ev(4000, 10, 10, 0, SP_RULE_THREAD, SP_EV_PROC_FORK, 20, 20, 0, 0);
}

static void test_tree_lanes_filters(void)
{
	static const char *const chunk[] = { "chunk" }, *const none[] = { "nothing" };
	static const uint64_t p20[] = { 20 }, p10[] = { 10 }, p99[] = { 99 };
	struct {
		const uint64_t *pids, *tids;
		const char *const *spans;
		int lanes;
		const char *has, *not;
	} c[] = {
		{ NULL, NULL, NULL, 2, "pid 10 ", NULL },
		{ p20, NULL, NULL, 1, "pid 20 ", "pid 10 " },
		{ p10, NULL, NULL, 2, "pid 20 ", NULL },	/* 20 is under 10's fork */
		{ p99, NULL, NULL, -1, NULL, NULL },
		{ NULL, p10, NULL, 1, "pid 10 ", "pid 20 " },
		{ NULL, NULL, chunk, 1, "pid 20 ", "pid 10 " },
		{ NULL, NULL, none, -1, NULL, NULL },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct sp_tree_opts o = { .pids = c[i].pids, .npids = c[i].pids ? 1 : 0,
					  .tids = c[i].tids, .ntids = c[i].tids ? 1 : 0,
					  .spans = c[i].spans, .nspans = c[i].spans ? 1 : 0 };
		char *p;

		build_fibers(&o);
		p = print();
		CHECK(fiber_lanes(p) == c[i].lanes);
		CHECK(!c[i].has || strstr(p, c[i].has));
		CHECK(!c[i].not || !strstr(strstr(p, "# lanes") ? strstr(p, "# lanes") : p, c[i].not));
		if (fiber_lanes(p) != c[i].lanes)
			printf("# case %zu:\n%s", i, p);
		free(p);
		sp_tree_free(tree);
	}
}

static void test_tree_json(void)
{
	struct sp_tree_opts o = { .json = true, .no_collapse = true };
	json_error_t err;
	json_t *j, *main_span, *fork;
	char *p;

	build(&o);
	p = print();
	j = json_loads(p, 0, &err);
	CHECK(j != NULL);
	if (!j) {
		printf("#   %s: %s\n", err.text, p);
		goto out;
	}
	main_span = json_array_get(json_object_get(json_array_get(json_object_get(j, "processes"), 0),
						   "children"), 0);
	CHECK_STR(json_string_value(json_object_get(main_span, "name")), "main");
	CHECK_EQ_U(json_integer_value(json_object_get(main_span, "dur_ns")), 5000000);
	CHECK_EQ_U(json_integer_value(json_object_get(main_span, "cpu_ns")), 5000000);
	CHECK_EQ_U(json_array_size(json_object_get(main_span, "children")), 3);
	fork = json_array_get(json_object_get(main_span, "children"), 0);
	CHECK_STR(json_string_value(json_object_get(fork, "kind")), "proc_fork");
	CHECK_EQ_U(json_integer_value(json_object_get(json_array_get(json_object_get(fork, "children"),
								      0), "pid")), 20);
	json_decref(j);
out:
	free(p);
	sp_tree_free(tree);
}

static void thread(uint64_t pid, uint64_t tid, uint64_t nstid)
{
	struct sp_record r = { .kind = SP_REC_THREAD };

	r.thread.pid = pid;
	r.thread.tid = tid;
	r.thread.nstid = nstid;
	sp_tree_add(tree, &r);
}

/* A thread shows its tid in its namespace whether its record comes before
 * or after its fork; one of another process with that tid lends it none. */
static void test_tree_thread_nstid(void)
{
	struct sp_tree_opts o = { .no_collapse = true };
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	thread(10, 11, 2);
	thread(99, 12, 7);
	ev(2000, 10, 10, 0, 0, SP_EV_PROC_FORK, 10, 11, SP_FORK_THREAD, 0);
	ev(3000, 10, 10, 0, 0, SP_EV_PROC_FORK, 10, 12, SP_FORK_THREAD, 0);
	ev(4000, 10, 10, 0, 0, SP_EV_PROC_FORK, 10, 13, SP_FORK_THREAD, 0);
	thread(10, 13, 4);
	ev(5000, 10, 10, 0, 0, SP_EV_PROC_FORK, 10, 14, SP_FORK_THREAD, 0);
	thread(10, 14, 14);	/* the same: not shown twice */
	p = print();
	CHECK(strstr(p, "[THREAD tid=11 nstid=2]\n") != NULL);
	CHECK(strstr(p, "[THREAD tid=12]\n") != NULL);
	CHECK(strstr(p, "[THREAD tid=13 nstid=4]\n") != NULL);
	CHECK(strstr(p, "[THREAD tid=14]\n") != NULL);
	free(p);
	sp_tree_free(tree);

	o.json = true;
	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	thread(10, 11, 2);
	ev(2000, 10, 10, 0, 0, SP_EV_PROC_FORK, 10, 11, SP_FORK_THREAD, 0);
	p = print();
	CHECK(strstr(p, "{\"type\":\"thread\",\"tid\":11,\"nstid\":2,") != NULL);
	free(p);
	sp_tree_free(tree);
}

/*
 * The gap span is the process's: another thread's events and interpreted
 * frames of the gap go under that thread's node, those that came before
 * the node was made (sp-correlate writes a frame's span, and the fork in
 * it, when the frame ends) included; a thread whose fork is not in the
 * input gets a node of its own in the gap.
 */
static void test_tree_gap_threads(void)
{
	struct sp_tree_opts o = { .no_collapse = true };
	uint64_t path, m_start, m_handle;
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	path = str("/etc/x");
	m_start = str("Thread.start");
	m_handle = str("handle");
	span(0, 0, 10, 10, 0, 1000, 10000, SP_END_SYNTHETIC, 0, 0);		/* gap, id 1 */
	ev(1500, 10, 11, 1, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 3);	/* before its node */
	ev(1600, 10, 10, 1, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 4);
	ev(1700, 10, 12, 1, SP_RULE_GAP, SP_EV_PROC_EXIT, 0, 0, 1, 0);	/* no fork: its own node */
	span(1, 0, 10, 10, m_start, 1100, 9000, SP_END_SYNTHETIC, 0, 0);	/* frame, id 2 */
	ev(1200, 10, 10, 2, SP_RULE_GAP, SP_EV_PROC_FORK, 10, 11, SP_FORK_THREAD, 0);
	span(1, 0, 10, 11, m_handle, 1300, 1400, SP_END_SYNTHETIC, 0, 0);	/* its frame, id 3 */
	ev(1300, 10, 11, 3, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 5);
	ev(2000, 10, 11, 1, SP_RULE_GAP, SP_EV_PROC_EXIT, 0, 0, 1, 0);	/* after its node */
	p = print();
	CHECK_STR(p,
		"# stackpulse recording  started ?  duration 9.0us "
		"(no end record: first to last record)  lost 0\n"
		"# processes 1  spans 1  frames 2  events 6\n"
		"[PROC pid=10 comm=app parent=1]\n"
		"└─ [SPAN tid=10 <no-span> dur=9.0us]\n"
		"   ├─ [FRAME tid=10 Thread.start dur=7.9us]\n"
		"   │  └─ PROC proc_fork → thread 11  @+100ns\n"
		"   │     └─ [THREAD tid=11]\n"
		"   │        ├─ [FRAME tid=11 handle dur=100ns]\n"
		"   │        │  └─ FILE path_open → /etc/x (O_RDONLY) = 5  @+0ns\n"
		/* (times from the start of the span they are in) */
		"   │        ├─ FILE path_open → /etc/x (O_RDONLY) = 3  @+400ns\n"
		"   │        └─ PROC proc_exit → thread exit 0  @+900ns\n"
		"   ├─ FILE path_open → /etc/x (O_RDONLY) = 4  @+600ns\n"
		"   └─ [THREAD tid=12]\n"
		"      └─ PROC proc_exit → thread exit 0  @+700ns\n");
	free(p);
	sp_tree_free(tree);
}

/* Python's audit events in a recording whose header says the kernel's
 * opens were recorded: n imports, an exec, a marshal.loads, an open, a
 * subprocess.Popen, in the gap span of process 10. */
static void audit_tree(const struct sp_tree_opts *o, const char *features)
{
	struct sp_record r = { .kind = SP_REC_HEADER };
	static const char *const mods[] = { "json", "json.decoder", "re", "enum" };
	uint64_t imp, ex, ml, op, po, path, t = 2000;
	size_t i;

	tree = sp_tree_new(o);
	r.header.start_mono_ns = 1000;
	r.header.features.p = (const uint8_t *)features;
	r.header.features.len = (uint32_t)strlen(features);
	nstr = 0;
	sp_tree_add(tree, &r);
	proc(10, 1, "python3");
	imp = str("import");
	ex = str("exec");
	ml = str("marshal.loads");
	op = str("open");
	po = str("subprocess.Popen");
	path = str("/etc/x");
	span(0, 0, 10, 10, 0, 1000, 20000, SP_END_SYNTHETIC, 0, 0);	/* gap, id 1 */
	for (i = 0; i < 4; i++) {
		ev(t++, 10, 10, 1, SP_RULE_GAP, SP_EV_AUDIT, imp, str(mods[i]), 2, 0);
		ev(t++, 10, 10, 1, SP_RULE_GAP, SP_EV_AUDIT, op, path, 2, 0);
		ev(t++, 10, 10, 1, SP_RULE_GAP, SP_EV_AUDIT, ml, 0, 2, 0);
		ev(t++, 10, 10, 1, SP_RULE_GAP, SP_EV_AUDIT, ex, 0, 2, 0);
	}
	ev(t++, 10, 10, 1, SP_RULE_GAP, SP_EV_AUDIT, po, str("true"), 2, 0);
}

/*
 * The interpreter's own audit events are left out (each import's exec and
 * marshal.loads; an open, when the kernel's opens are recorded beside it),
 * counted on the header's counts line; the imports between them, now
 * neighbours, print as one line. --all-audit, or --events naming audit,
 * shows them all; --no-collapse prints the imports one by one.
 */
static void test_tree_audit_own(void)
{
	static const char kernel[] = "perf=cpu-clock events=proc_fork,path_open spans=python-audit";
	struct sp_tree_opts o = { .stable = false };
	char *p;

	audit_tree(&o, kernel);
	p = print();
	CHECK_STR(p,
		"# stackpulse recording  started ?  duration 19.0us "
		"(no end record: first to last record)  lost 0\n"
		"# processes 1  spans 1  events 17 (12 audit events of Python's own not "
		"shown: --all-audit)\n"
		"[PROC pid=10 comm=python3 parent=1]\n"
		"└─ [SPAN tid=10 <no-span> dur=19.0us]\n"
		"   ├─ RT   audit → import ×4: json, json.decoder, re, enum  @+1.0us\n"
		"   └─ RT   audit → subprocess.Popen true  @+1.0us\n");
	free(p);
	sp_tree_free(tree);

	/* no kernel opens in the recording: the open is the only one shown */
	audit_tree(&o, "perf=cpu-clock events=proc_fork spans=python-audit");
	p = print();
	CHECK(strstr(p, "events 17 (8 audit events of Python's own") != NULL);
	CHECK(strstr(p, "RT   audit → open /etc/x") != NULL);
	CHECK(strstr(p, "×4") == NULL);		/* the opens part the imports */
	free(p);
	sp_tree_free(tree);

	o.all_audit = true;
	audit_tree(&o, kernel);
	p = print();
	CHECK(strstr(p, "not shown") == NULL);
	CHECK(strstr(p, "RT   audit → exec") != NULL);
	CHECK(strstr(p, "RT   audit → marshal.loads") != NULL);
	free(p);
	sp_tree_free(tree);

	o.all_audit = false;
	o.event_kinds = 1ull << SP_EV_AUDIT;
	audit_tree(&o, kernel);
	p = print();
	CHECK(strstr(p, "not shown") == NULL);
	CHECK(strstr(p, "RT   audit → exec") != NULL);
	free(p);
	sp_tree_free(tree);

	o.event_kinds = 0;
	o.no_collapse = true;
	audit_tree(&o, kernel);
	p = print();
	CHECK(strstr(p, "RT   audit → import json  @+1.0us\n") != NULL);
	CHECK(strstr(p, "RT   audit → import enum  @+1.0us\n") != NULL);	/* 12 ns later */
	CHECK(strstr(p, "×") == NULL);
	free(p);
	sp_tree_free(tree);
}

/*
 * A thread whose fork is not in the input (started before -p) gets a node
 * of its own in the gap span at its first record; when a fork of its tid
 * comes after all (sp-correlate writes a frame's span, and the fork in it,
 * when the frame ends), its records since that fork move to the fork's
 * node, and an older thread's of the same tid stay. --tid shows a thread's
 * records of the gap.
 */
static void test_tree_forkless_threads(void)
{
	struct sp_tree_opts o = { .no_collapse = true };
	uint64_t path, m_start;
	static const uint64_t tids[] = { 12 };
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	path = str("/etc/x");
	m_start = str("Thread.start");
	span(0, 0, 10, 10, 0, 1000, 20000, SP_END_SYNTHETIC, 0, 0);		/* gap, id 1 */
	ev(1100, 10, 12, 1, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 3);	/* started before */
	ev(1200, 10, 11, 1, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 4);	/* thread 11, then */
	ev(3000, 10, 11, 1, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 5);	/* 11 again, made anew */
	span(1, 0, 10, 10, m_start, 2000, 9000, SP_END_SYNTHETIC, 0, 0);	/* frame, id 2 */
	ev(2500, 10, 10, 2, SP_RULE_GAP, SP_EV_PROC_FORK, 10, 11, SP_FORK_THREAD, 0);
	p = print();
	CHECK_STR(p,
		"# stackpulse recording  started ?  duration 19.0us "
		"(no end record: first to last record)  lost 0\n"
		"# processes 1  spans 1  frames 1  events 4\n"
		"[PROC pid=10 comm=app parent=1]\n"
		"└─ [SPAN tid=10 <no-span> dur=19.0us]\n"
		"   ├─ [THREAD tid=12]\n"
		"   │  └─ FILE path_open → /etc/x (O_RDONLY) = 3  @+100ns\n"
		"   ├─ [THREAD tid=11]\n"
		"   │  └─ FILE path_open → /etc/x (O_RDONLY) = 4  @+200ns\n"
		"   └─ [FRAME tid=10 Thread.start dur=7.0us]\n"
		"      └─ PROC proc_fork → thread 11  @+500ns\n"
		"         └─ [THREAD tid=11]\n"
		"            └─ FILE path_open → /etc/x (O_RDONLY) = 5  @+1.0us\n");
	free(p);
	sp_tree_free(tree);

	o.tids = tids;
	o.ntids = 1;
	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	path = str("/etc/x");
	span(0, 0, 10, 10, 0, 1000, 20000, SP_END_SYNTHETIC, 0, 0);
	ev(1100, 10, 12, 1, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 3);
	ev(1200, 10, 11, 1, SP_RULE_GAP, SP_EV_PATH_OPEN, path, 0, 0, 4);
	p = print();
	CHECK(strstr(p, "[THREAD tid=12]\n") != NULL);
	CHECK(strstr(p, "= 3  @+100ns\n") != NULL);
	CHECK(strstr(p, "tid=11") == NULL);
	free(p);
	sp_tree_free(tree);
}

/* A raise mark names the error and message of the span just before it. */
static void test_tree_raise(void)
{
	struct sp_tree_opts o = { .stable = true };
	struct sp_record r = { .kind = SP_REC_SPAN_RAISE };
	uint64_t m;
	char *p;

	tree = sp_tree_new(&o);
	header();
	proc(10, 1, "app");
	m = str("boom");
	span(0, 0, 10, 10, m, 1000, 2000, SP_END_RAISED, 0, 0);
	r.mark.tid = 10;
	r.mark.klass = str("KeyError");
	r.mark.method = str("key not found: :x");
	sp_tree_add(tree, &r);
	p = print();
	CHECK(strstr(p, "[SPAN boom] (raise KeyError: \"key not found: :x\")\n") != NULL);
	free(p);
	sp_tree_free(tree);
}

static void proc_end(uint64_t pid, uint64_t status)
{
	struct sp_record r = { .kind = SP_REC_PROCESS_END };

	r.process_end.pid = pid;
	r.process_end.status = status;
	sp_tree_add(tree, &r);
}

/* Records with a forked child that outlives its span; names a, b, c. */
static void build_stream(const struct sp_tree_opts *o, FILE *out)
{
	uint64_t a, b, c, path;

	tree = sp_tree_new(o);
	if (out)
		sp_tree_set_output(tree, out);
	header();
	proc(10, 1, "app");
	a = str("a");
	b = str("b");
	c = str("c");
	path = str("/etc/x");
	span(0, 0, 10, 10, a, 1000, 2000, SP_END_STOPPED, 0, 0);	/* id 1 */
	ev(1500, 10, 10, 1, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 3);
	span(0, 0, 10, 10, b, 3000, 4000, SP_END_STOPPED, 0, 0);	/* id 2 */
	ev(3500, 10, 10, 2, SP_RULE_THREAD, SP_EV_PROC_FORK, 20, 20, 0, 0);
	span(0, 0, 10, 10, a, 5000, 6000, SP_END_STOPPED, 0, 0);	/* id 3 */
	/* the child of span 2 opens a file after span 2 ended, then exits */
	ev(6500, 20, 20, 2, SP_RULE_FORK, SP_EV_PATH_OPEN, path, 0, 0, 4);
	proc_end(20, 7);
	span(0, 0, 10, 10, c, 7000, 8000, SP_END_STOPPED, 0, 0);	/* id 4 */
	span(0, 0, 10, 10, a, 9000, 10000, SP_END_STOPPED, 0, 0);	/* id 5 */
	ev(9500, 10, 10, 5, SP_RULE_THREAD, SP_EV_PATH_OPEN, path, 0, 0, 3);
}

/*
 * With a buffer of one node, finished top-level spans are printed while
 * records come in, the forked child's subtree waits until the child ended,
 * and the result is the tree printed at the end, plus the process's end line.
 */
static void test_tree_streaming(void)
{
	struct sp_tree_opts o = { .stable = true };
	char *whole, *streamed = NULL, *early;
	size_t n = 0, k;
	FILE *f;

	build_stream(&o, NULL);
	whole = print();
	sp_tree_free(tree);

	o.buffer_nodes = 1;
	f = open_memstream(&streamed, &n);
	build_stream(&o, f);
	fflush(f);
	early = strndup(streamed, n);
	/* spans a (1) and b (2, its child has ended) are out before the end */
	CHECK(strstr(early, "[PROC comm=app]\n├─ [SPAN a]\n") != NULL);
	CHECK(strstr(early, "exit=7]\n") != NULL);
	CHECK(sp_tree_nodes_held(tree) <= 6);
	CHECK(sp_tree_print(tree, f) == 0);
	fclose(f);
	k = strlen(whole);
	CHECK(n == k + strlen("# end of [PROC comm=app]\n"));
	CHECK(!strncmp(streamed, whole, k));
	CHECK_STR(streamed + k, "# end of [PROC comm=app]\n");
	/* the child's late open is under the child, not a process of its own */
	CHECK(strstr(streamed, "exit=7]\n│        └─ FILE path_open → /etc/x (O_RDONLY) = fd\n") != NULL);
	free(early);
	free(streamed);
	free(whole);
	sp_tree_free(tree);
}

/* Many distinct top-level spans: what is held stays near the buffer size. */
static void test_tree_streaming_memory(void)
{
	struct sp_tree_opts o = { .buffer_nodes = 16 };
	uint64_t names[7], i, max = 0;
	char name[8], *p = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&p, &n);

	tree = sp_tree_new(&o);
	sp_tree_set_output(tree, f);
	header();
	proc(10, 1, "app");
	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "m%llu", (unsigned long long)i);
		names[i] = str(name);
	}
	for (i = 0; i < 5000; i++) {
		span(0, 0, 10, 10, names[i % 7], 1000 + i * 10, 1005 + i * 10, SP_END_STOPPED,
		     0, 0);
		ev(1001 + i * 10, 10, 10, i + 1, SP_RULE_THREAD, SP_EV_PATH_OPEN, names[0], 0, 0, 3);
		if (sp_tree_nodes_held(tree) > max)
			max = sp_tree_nodes_held(tree);
	}
	CHECK(max <= 16 + 4);
	CHECK(sp_tree_print(tree, f) == 0);
	fclose(f);
	/* every span is printed once, the last one closes the process */
	{
		size_t spans = 0;
		char *s;

		for (s = p; (s = strstr(s, "[SPAN ")); s++)
			spans++;
		CHECK_EQ_U(spans, 5000);
	}
	CHECK(strstr(p, "└─ [SPAN tid=10 m1 ") != NULL);
	CHECK(strstr(p, "# processes 1  spans 5000  events 5000\n") != NULL);
	free(p);
	sp_tree_free(tree);
}

int main(void)
{
	TAP_RUN(test_tree_open_flags);
	TAP_RUN(test_tree_event_texts);
	TAP_RUN(test_tree_event_text_cut);
	TAP_RUN(test_event_groups);
	TAP_RUN(test_tree_every_kind);
	TAP_RUN(test_tree_shape);
	TAP_RUN(test_tree_stable_collapse);
	TAP_RUN(test_tree_collapse_differing);
	TAP_RUN(test_tree_command_not_started);
	TAP_RUN(test_tree_frame_counts);
	TAP_RUN(test_tree_fork_cycle);
	TAP_RUN(test_tree_stable_thread_order);
	TAP_RUN(test_tree_filters);
	TAP_RUN(test_tree_lanes_filters);
	TAP_RUN(test_tree_json);
	TAP_RUN(test_tree_raise);
	TAP_RUN(test_tree_thread_nstid);
	TAP_RUN(test_tree_gap_threads);
	TAP_RUN(test_tree_audit_own);
	TAP_RUN(test_tree_forkless_threads);
	TAP_RUN(test_tree_streaming);
	TAP_RUN(test_tree_streaming_memory);
	return TAP_DONE();
}
