// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/bpf_events.c: the --events list parser, and (as root)
 * the source itself driven like sp-record drives it, on build/examples/evtest:
 * the exact events of its child, nothing from a process outside the tree,
 * and a flood whose delivered plus lost events add up.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "tap.h"
#include "bpf_events.h"
#include "defs.h"
#include "events.h"
#include "sp.h"
#include "writer.h"

static uint64_t K(unsigned int kind)
{
	return SP_EV_BIT(kind);
}

static void test_bpf_events_parse(void)
{
	uint64_t kinds, named, def = sp_events_default_kinds();
	char err[256];
	char buf[1024];

	CHECK(def & K(SP_EV_PROC_EXEC));
	CHECK(def & K(SP_EV_PATH_OPEN));
	CHECK(def & K(SP_EV_SOCK_CONNECT));
	CHECK(def & K(SP_EV_DNS_REQ));
	CHECK(!(def & K(SP_EV_TASK_KILL)));
	CHECK(!(def & K(SP_EV_AUDIT)));

	CHECK(sp_events_parse("all", &kinds, &named, err, sizeof(err)) == 0);
	CHECK(kinds & K(SP_EV_SETID_CHANGE));
	CHECK(kinds & K(SP_EV_KERNEL_READ_FILE));
	CHECK(!(kinds & K(SP_EV_AUDIT)));	/* a runtime event, not a kernel one */
	CHECK_EQ_U(named, 0);

	CHECK(sp_events_parse("none", &kinds, &named, err, sizeof(err)) == 0);
	CHECK_EQ_U(kinds, 0);

	CHECK(sp_events_parse("proc,path_open", &kinds, &named, err, sizeof(err)) == 0);
	CHECK_EQ_U(kinds, K(SP_EV_PROC_FORK) | K(SP_EV_PROC_EXEC) | K(SP_EV_PROC_EXIT) |
		   K(SP_EV_PATH_OPEN));
	CHECK_EQ_U(named, K(SP_EV_PATH_OPEN));

	CHECK(sp_events_parse("-dns", &kinds, &named, err, sizeof(err)) == 0);
	CHECK_EQ_U(kinds, def & ~K(SP_EV_DNS_REQ));

	CHECK(sp_events_parse("all,-priv,task_kill", &kinds, &named, err, sizeof(err)) == 0);
	CHECK(kinds & K(SP_EV_TASK_KILL));
	CHECK(!(kinds & K(SP_EV_SB_MOUNT)));
	CHECK_EQ_U(named, K(SP_EV_TASK_KILL));

	CHECK(sp_events_parse("file,-path_open", &kinds, &named, err, sizeof(err)) == 0);
	CHECK(!(kinds & K(SP_EV_PATH_OPEN)));
	CHECK(kinds & K(SP_EV_FILE_RENAME));

	CHECK(sp_events_parse("path_open,bogus", &kinds, &named, err, sizeof(err)) == -1);
	CHECK(strstr(err, "'bogus'") != NULL);
	CHECK(sp_events_parse("", &kinds, &named, err, sizeof(err)) == -1);
	CHECK(sp_events_parse("proc,,file", &kinds, &named, err, sizeof(err)) == -1);
	CHECK(sp_events_parse("-", &kinds, &named, err, sizeof(err)) == -1);

	sp_events_parse("proc,dns_req", &kinds, &named, err, sizeof(err));
	sp_events_format(kinds, buf, sizeof(buf));
	CHECK_STR(buf, "proc_fork,proc_exec,proc_exit,dns_req");
	CHECK_EQ_U(sp_events_format(kinds, buf, 4), strlen("proc_fork,proc_exec,proc_exit,dns_req"));
	CHECK_STR(buf, "pro");
}

static struct sp_events_opts *argp_in;

static error_t argp_parent(int key, char *arg, struct argp_state *state)
{
	if (key == ARGP_KEY_INIT)
		state->child_inputs[0] = argp_in;
	return ARGP_ERR_UNKNOWN;
}

static void test_bpf_events_argp(void)
{
	struct sp_events_opts o = { 0 };
	static const struct argp_child children[] = { { .argp = &sp_events_argp }, { 0 } };
	struct argp argp = { .children = children, .parser = argp_parent };
	char *argv1[] = { "t", "--events=net", "--no-samples", "--event-buffer=64", NULL };
	char *argv2[] = { "t", NULL };

	argp_in = &o;
	CHECK(argp_parse(&argp, 4, argv1, ARGP_NO_EXIT | ARGP_NO_ERRS, NULL, NULL) == 0);
	CHECK(o.given);
	CHECK(o.no_samples);
	CHECK_EQ_U(o.buffer_kib, 64);
	CHECK_EQ_U(o.kinds, K(SP_EV_SOCK_CONNECT) | K(SP_EV_SOCK_BIND) | K(SP_EV_SOCK_LISTEN) |
		   K(SP_EV_SOCK_ACCEPT));
	memset(&o, 0, sizeof(o));
	CHECK(argp_parse(&argp, 1, argv2, ARGP_NO_EXIT | ARGP_NO_ERRS, NULL, NULL) == 0);
	CHECK(!o.given);
	CHECK_EQ_U(o.kinds, sp_events_default_kinds());
}

/* ---- live: record a command with the source, as sp-record would ---- */

struct got {
	unsigned int kind;
	uint64_t pid, tid, time;
	uint64_t u[SP_EVENT_MAX_FIELDS];
	char *s[SP_EVENT_MAX_FIELDS];
	uint8_t addr[16];
	unsigned int addr_len;
};

struct rec_state {
	struct sp_writer *w;
	struct got *ev;
	size_t n, cap;
	uint64_t lost, lost_records;
	uint64_t last_time;
	int out_of_order;
};

static int collect(void *ctx, const struct sp_record *rec)
{
	struct rec_state *st = ctx;
	const struct sp_event_schema *sc;
	struct got *g;
	unsigned int i;

	if (rec->kind == SP_REC_LOST) {
		st->lost += rec->lost.count;
		st->lost_records++;
		if (rec->lost.what != SP_LOST_EVENTS || !rec->lost.cpu ||
		    rec->lost.start > rec->lost.time)
			st->out_of_order += 1000;
		return 0;
	}
	if (rec->kind != SP_REC_EVENT)
		return 0;
	sc = sp_event_schema(rec->event.kind);
	/* the interpreted stack, last, only when there is one */
	if (!sc || (rec->event.nfields != sc->nfields &&
		    !(rec->event.nfields + 1 == sc->nfields &&
		      sc->fields[sc->nfields - 1].type == SP_FT_STACK)))
		return -1;
	sp_grow(&st->ev, &st->cap, st->n + 1, sizeof(*st->ev));
	g = &st->ev[st->n++];
	memset(g, 0, sizeof(*g));
	g->kind = rec->event.kind;
	g->pid = rec->event.pid;
	g->tid = rec->event.tid;
	g->time = rec->event.time;
	if (g->time + 2000000 < st->last_time)
		st->out_of_order++;
	if (g->time > st->last_time)
		st->last_time = g->time;
	for (i = 0; i < sc->nfields; i++) {
		g->u[i] = rec->event.field[i].u;
		if (sc->fields[i].type == SP_FT_STR && g->u[i])
			g->s[i] = strdup(sp_defs_strz(sp_writer_defs(st->w), g->u[i]));
		if (sc->fields[i].type == SP_FT_ADDR) {
			g->addr_len = rec->event.field[i].b.len;
			if (g->addr_len <= 16)
				memcpy(g->addr, rec->event.field[i].b.p, g->addr_len);
		}
	}
	return 0;
}

static char examples[4096];

/* Run argv under the source with opts; the child is started stopped on a
 * pipe, as sp-record does. Returns the child's exit status. */
static int record(struct sp_events_opts *o, char *const argv[], struct rec_state *st,
		  char *features, size_t fsize)
{
	struct sp_source *s = sp_events_source_new(o);
	struct sp_emit out;
	struct sp_target t = { 0 };
	char unavail[512] = "";
	int pfd[2], status = -1;
	uint32_t pid32;
	pid_t pid;
	char c = 0;

	memset(st, 0, sizeof(*st));
	st->w = sp_writer_new(open("/dev/null", O_WRONLY), "/dev/null", SP_FORMAT_SPOOL);
	out.w = st->w;
	out.emit = collect;
	out.ctx = st;
	if (sp_events_prepare(s) != 0 && sp_events_prepare(s) < 0)
		goto done;
	if (pipe(pfd))
		goto done;
	pid = fork();
	if (pid == 0) {
		close(pfd[1]);
		if (read(pfd[0], &c, 1) != 1)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[0]);
	pid32 = pid;
	t.pids = &pid32;
	t.npids = 1;
	if (s->start(s, &t, &out) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto done;
	}
	if (write(pfd[1], &c, 1) != 1)
		goto done;
	close(pfd[1]);
	for (;;) {
		struct pollfd pf = { .fd = s->fd, .events = POLLIN };
		pid_t r = waitpid(pid, &status, WNOHANG);

		poll(&pf, 1, 20);
		if (s->poll(s, &out) < 0)
			break;
		if (r == pid)
			break;
	}
	s->finish(s, &out);
	if (features)
		s->describe(s, features, fsize, unavail, sizeof(unavail));
done:
	s->free(s);
	return status;
}

static void free_state(struct rec_state *st)
{
	size_t i;
	int j;

	for (i = 0; i < st->n; i++)
		for (j = 0; j < SP_EVENT_MAX_FIELDS; j++)
			free(st->ev[i].s[j]);
	free(st->ev);
	sp_writer_close(st->w);
}

static const char *kname(unsigned int kind)
{
	return sp_event_schema(kind)->name;
}

/* Next event of pid after *i with this kind; NULL if the next one of pid is another. */

/* Whether s is dir "/" name. */
static bool in_dir(const char *s, const char *dir, const char *name)
{
	size_t n = strlen(dir);

	return s && !strncmp(s, dir, n) && s[n] == '/' && !strcmp(s + n + 1, name);
}
static struct got *next_of(struct rec_state *st, size_t *i, uint64_t pid, unsigned int kind)
{
	while (*i < st->n) {
		struct got *g = &st->ev[(*i)++];

		if (g->pid != pid || (g->kind == SP_EV_CAPABLE_CHECK && kind != g->kind))
			continue;	/* capability checks come between, checked apart */
		if (g->kind != kind) {
			printf("#   expected %s, got %s (pid %llu)\n", kname(kind), kname(g->kind),
			       (unsigned long long)pid);
			return NULL;
		}
		return g;
	}
	printf("#   expected %s, got the end\n", kname(kind));
	return NULL;
}

static void run_evtest(const char *how)
{
	char dir[] = "/tmp/sp-evtest.XXXXXX", evtest[4200], cdir[4200], path[4300];
	char features[512] = "", line[256];
	struct sp_events_opts o = { .attach = how };
	struct rec_state st;
	unsigned int child, port, uid, gid;
	uint64_t parent;
	struct got *g;
	size_t i = 0;
	FILE *f;
	char want[64];

	snprintf(evtest, sizeof(evtest), "%s/evtest", examples);
	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	char *argv[] = { evtest, "run", dir, NULL };
	sp_events_parse("all", &o.kinds, &o.named, line, sizeof(line));
	o.given = true;
	CHECK_EQ_U(record(&o, argv, &st, features, sizeof(features)), 0);
	snprintf(want, sizeof(want), "bpf-events=%s", how);
	CHECK(strstr(features, want) != NULL);
	snprintf(path, sizeof(path), "%s/info", dir);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f || fscanf(f, "child=%u thread=%*u port=%u uid=%u gid=%u", &child, &port, &uid,
			 &gid) != 4) {
		CHECK(0);
		goto out;
	}
	fclose(f);
	CHECK_EQ_U(st.out_of_order, 0);
	CHECK_EQ_U(st.lost, 0);

	/* the parent: exec of evtest, fork of the child */
	g = NULL;
	for (i = 0; i < st.n; i++)
		if (st.ev[i].kind == SP_EV_PROC_FORK && st.ev[i].u[0] == child) {
			g = &st.ev[i];
			break;
		}
	CHECK(g != NULL);
	if (!g)
		goto out;
	parent = g->pid;
	CHECK_EQ_U(g->u[1], child);
	CHECK_EQ_U(g->u[2], 0);
	i = 0;
	g = next_of(&st, &i, parent, SP_EV_PROC_EXEC);
	CHECK(g != NULL);
	CHECK_STR(g ? g->s[0] : NULL, evtest);
	snprintf(path, sizeof(path), "%s run %s", evtest, dir);
	CHECK_STR(g ? g->s[1] : NULL, path);
	/* mount(2) checks CAP_SYS_ADMIN (21) */
	for (g = NULL, i = 0; i < st.n; i++)
		if (st.ev[i].kind == SP_EV_CAPABLE_CHECK && st.ev[i].pid == child &&
		    st.ev[i].u[0] == 21)
			g = &st.ev[i];
	CHECK(g != NULL || !strcmp(how, "tracepoint"));	/* no cap_capable there */

	i = 0;
	/* realpath of dir, as the kernel resolves it */
	if (!realpath(dir, cdir))
		snprintf(cdir, sizeof(cdir), "%s", dir);
	g = next_of(&st, &i, child, SP_EV_PROC_FORK);
	/* classic tracepoints only give pids: the thread flag is unknown there */
	CHECK(g && g->u[1] != child);
	CHECK(g && (!strcmp(how, "tracepoint") ?
		    g->u[2] == 0 : g->u[2] == SP_FORK_THREAD && g->u[0] == child));
	g = next_of(&st, &i, child, SP_EV_PROC_EXIT);
	CHECK(g && g->u[2] == 1 && g->tid != child && g->u[0] == 0);
	g = next_of(&st, &i, child, SP_EV_PATH_OPEN);
	snprintf(path, sizeof(path), "%s/a", dir);
	CHECK(g && g->s[0] && !strcmp(g->s[0], path));
	CHECK(g && g->u[1] == (O_CREAT | O_WRONLY) && g->u[2] == 0640 && (int64_t)g->u[3] >= 0);
	CHECK(g && g->s[4] == NULL && g->u[5] == 0);
	g = next_of(&st, &i, child, SP_EV_PATH_OPEN);
	CHECK(g && g->s[0] && !strcmp(g->s[0], "b"));
	CHECK(g && g->s[4] && !strcmp(g->s[4], cdir));
	CHECK(g && g->u[1] == (O_CREAT | O_RDWR) && g->u[2] == 0600);
	g = next_of(&st, &i, child, SP_EV_PATH_OPEN);
	CHECK(g && g->s[0] && !strcmp(g->s[0], dir) && (g->u[1] & O_DIRECTORY) && g->u[2] == 0);
	g = next_of(&st, &i, child, SP_EV_FILE_GETDENTS);
	CHECK(g && g->s[0] && !strcmp(g->s[0], cdir) && (int64_t)g->u[2] > 0);
	/* relative paths joined with the current directory */
	g = next_of(&st, &i, child, SP_EV_FILE_RENAME);
	CHECK(g && in_dir(g->s[0], cdir, "a") && in_dir(g->s[1], cdir, "c") && g->u[3] == 0);
	g = next_of(&st, &i, child, SP_EV_FILE_HARDLINK);
	CHECK(g && in_dir(g->s[0], cdir, "c") && in_dir(g->s[1], cdir, "d") && g->u[2] == 0);
	g = next_of(&st, &i, child, SP_EV_FILE_SYMLINK);
	CHECK(g && !strcmp(g->s[0], "c") && in_dir(g->s[1], cdir, "e") && g->u[2] == 0);
	g = next_of(&st, &i, child, SP_EV_FILE_CHMOD);
	CHECK(g && in_dir(g->s[0], cdir, "c") && g->u[1] == 0604 && g->u[2] == 0);
	g = next_of(&st, &i, child, SP_EV_FILE_CHOWN);
	CHECK(g && in_dir(g->s[0], cdir, "c") && g->u[1] == uid && g->u[2] == gid &&
	      g->u[3] == 0);
	g = next_of(&st, &i, child, SP_EV_FILE_UNLINK);
	CHECK(g && in_dir(g->s[0], cdir, "d") && g->u[1] == 0 && g->u[2] == 0);
	g = next_of(&st, &i, child, SP_EV_SOCK_BIND);
	CHECK(g && g->u[0] == AF_INET && g->u[2] == 0 && g->u[3] == 0 && g->addr_len == 4 &&
	      !memcmp(g->addr, "\x7f\0\0\x01", 4));
	g = next_of(&st, &i, child, SP_EV_SOCK_LISTEN);
	CHECK(g && g->u[1] == 5 && g->u[2] == 0);
	g = next_of(&st, &i, child, SP_EV_SOCK_CONNECT);
	CHECK(g && g->u[0] == AF_INET && g->u[2] == port && g->u[3] == 0 && g->addr_len == 4);
	g = next_of(&st, &i, child, SP_EV_SOCK_ACCEPT);
	CHECK(g && g->u[0] == AF_INET && (int64_t)g->u[3] >= 0 && g->addr_len == 4 &&
	      g->u[2] != 0 && g->u[2] != port);
	/* info file */
	g = next_of(&st, &i, child, SP_EV_PATH_OPEN);
	CHECK(g && g->s[0] && !strcmp(g->s[0], "info") && g->s[4] && !strcmp(g->s[4], cdir));
	g = next_of(&st, &i, child, SP_EV_DNS_REQ);
	CHECK(g && g->s[0] && !strcmp(g->s[0], "evtest.example.com") && g->u[1] == 1 &&
	      g->u[3] == 53 && g->u[4] == 0x1234 && g->addr_len == 4);
	g = next_of(&st, &i, child, SP_EV_SOCK_CONNECT);
	CHECK(g && g->u[2] == 53 && g->u[3] == 0);
	g = next_of(&st, &i, child, SP_EV_DNS_REQ);
	CHECK(g && g->s[0] && !strcmp(g->s[0], "second.example.org") && g->u[1] == 28 &&
	      g->u[3] == 53 && g->u[4] == 0x1235 && g->addr_len == 4 &&
	      !memcmp(g->addr, "\x7f\0\0\x01", 4));
	g = next_of(&st, &i, child, SP_EV_TASK_KILL);
	CHECK(g && g->u[0] == child && g->u[1] == 0 && g->u[2] == 0);
	g = next_of(&st, &i, child, SP_EV_PTRACE_CHECK);
	CHECK(g && g->u[0] == 2 && g->u[1] == parent && (int64_t)g->u[2] == -ESRCH);
	g = next_of(&st, &i, child, SP_EV_SB_MOUNT);
	CHECK(g && g->s[0] && !strcmp(g->s[0], "evsrc") && !strcmp(g->s[1], dir) &&
	      !strcmp(g->s[2], "spnofs") && g->u[3] == 2 && (int64_t)g->u[4] == -ENODEV);
	g = next_of(&st, &i, child, SP_EV_SETID_CHANGE);
	CHECK(g && g->s[0] && !strcmp(g->s[0], "setgid") && g->u[3] == gid && g->u[4] == gid &&
	      g->u[5] == 0);
	g = next_of(&st, &i, child, SP_EV_PROC_EXEC);
	CHECK(g && g->s[0] && !strcmp(g->s[0], "/proc/self/exe"));
	CHECK(g && g->s[1] && !strcmp(g->s[1], "/proc/self/exe done 'two words' x"));
	CHECK(g && g->u[2] == 0 && g->u[3] == child);
	/* the loader's opens, then the exit */
	while (i < st.n && (st.ev[i].pid != child || st.ev[i].kind == SP_EV_PATH_OPEN ||
			    st.ev[i].kind == SP_EV_CAPABLE_CHECK))
		i++;
	g = next_of(&st, &i, child, SP_EV_PROC_EXIT);
	CHECK(g && g->u[0] == 7 && g->u[1] == 0 && g->u[2] == 0);
	for (; i < st.n; i++)
		CHECK(st.ev[i].pid != child || st.ev[i].kind == SP_EV_CAPABLE_CHECK);
	/* nothing from anyone else */
	for (i = 0; i < st.n; i++)
		CHECK(st.ev[i].pid == parent || st.ev[i].pid == child);
out:
	free_state(&st);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path))
		CHECK(0);
}

static void test_bpf_events_tp_btf(void)
{
	run_evtest("tp_btf");
}

static void test_bpf_events_raw_tp(void)
{
	run_evtest("raw_tp");
}

/* Mounts tracefs for the time of the test when it is missing. */
static void test_bpf_events_tracepoint(void)
{
	run_evtest("tracepoint");
}

/* A process outside the tree that opens a file all along is not recorded. */
static void test_bpf_events_outside(void)
{
	char dir[] = "/tmp/sp-evtest.XXXXXX", evtest[4200], cmd[8600];
	struct sp_events_opts o = { .kinds = sp_events_default_kinds() };
	struct rec_state st;
	pid_t noise;
	size_t i, mine = 0;

	snprintf(evtest, sizeof(evtest), "%s/evtest", examples);
	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	char *nargv[] = { evtest, "noise", dir, "3", NULL };
	char *argv[] = { evtest, "run", dir, NULL };
	noise = fork();
	if (noise == 0) {
		execv(evtest, nargv);
		_exit(127);
	}
	usleep(100000);
	CHECK_EQ_U(record(&o, argv, &st, NULL, 0), 0);
	kill(noise, SIGTERM);
	waitpid(noise, NULL, 0);
	for (i = 0; i < st.n; i++) {
		CHECK(st.ev[i].pid != (uint64_t)noise);
		if (st.ev[i].kind == SP_EV_PATH_OPEN && st.ev[i].s[0] && strstr(st.ev[i].s[0], "noise"))
			CHECK(0);
		if (st.ev[i].kind == SP_EV_FILE_RENAME)
			mine++;
	}
	CHECK_EQ_U(mine, 1);
	free_state(&st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		CHECK(0);
}

/* Delivered plus lost events of a flood beyond the ring buffer add up. */
static void test_bpf_events_flood(void)
{
	char evtest[4200];
	struct sp_events_opts o = { .buffer_kib = 16 };
	struct rec_state st;
	uint64_t base, n = 200000;
	char err[64];

	snprintf(evtest, sizeof(evtest), "%s/evtest", examples);
	sp_events_parse("all", &o.kinds, &o.named, err, sizeof(err));
	char *argv0[] = { evtest, "flood", "0", NULL };
	char *argv[] = { evtest, "flood", "200000", NULL };
	/* the same program without the flood: its baseline of events */
	CHECK_EQ_U(record(&o, argv0, &st, NULL, 0), 0);
	CHECK_EQ_U(st.lost, 0);
	base = st.n;
	free_state(&st);
	CHECK_EQ_U(record(&o, argv, &st, NULL, 0), 0);
	printf("# flood: %llu delivered, %llu lost in %llu records, baseline %llu\n",
	       (unsigned long long)st.n, (unsigned long long)st.lost,
	       (unsigned long long)st.lost_records, (unsigned long long)base);
	CHECK(st.lost > 0);
	CHECK(st.lost_records > 0);
	CHECK_EQ_U(st.n + st.lost, base + n);
	CHECK_EQ_U(st.out_of_order, 0);
	free_state(&st);
}

int main(int argc, char **argv)
{
	const char *slash = strrchr(argv[0], '/');
	struct stat sb;

	(void)argc;
	/* build/unit/test-x or build/asan/test-x: examples are in build/examples */
	snprintf(examples, sizeof(examples), "%.*s/../examples",
		 slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
	TAP_RUN(test_bpf_events_parse);
	TAP_RUN(test_bpf_events_argp);
	if (geteuid() != 0) {
		TAP_SKIP(test_bpf_events_tp_btf, "needs root: BPF");
		TAP_SKIP(test_bpf_events_raw_tp, "needs root: BPF");
		TAP_SKIP(test_bpf_events_tracepoint, "needs root: BPF");
		TAP_SKIP(test_bpf_events_outside, "needs root: BPF");
		TAP_SKIP(test_bpf_events_flood, "needs root: BPF");
	} else if (stat(strcat(strcpy((char[4300]){ 0 }, examples), "/evtest"), &sb)) {
		TAP_SKIP(test_bpf_events_tp_btf, "build/examples/evtest missing: run make");
		TAP_SKIP(test_bpf_events_raw_tp, "build/examples/evtest missing");
		TAP_SKIP(test_bpf_events_tracepoint, "build/examples/evtest missing");
		TAP_SKIP(test_bpf_events_outside, "build/examples/evtest missing");
		TAP_SKIP(test_bpf_events_flood, "build/examples/evtest missing");
	} else {
		TAP_RUN(test_bpf_events_tp_btf);
		TAP_RUN(test_bpf_events_raw_tp);
		TAP_RUN(test_bpf_events_tracepoint);
		TAP_RUN(test_bpf_events_outside);
		TAP_RUN(test_bpf_events_flood);
	}
	return TAP_DONE();
}
