// SPDX-License-Identifier: MIT
/* sp-record - record stack samples (and more) of a command, of running
 * processes, or of the whole machine, as a spool. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "launch.h"
#include "merge.h"
#include "perf_offcpu.h"
#include "bpf_events.h"
#include "bpf_spans.h"
#include "perf_source.h"
#include "source.h"
#include "sp.h"
#include "span.h"
#include "spans_canary.h"
#include "spool.h"
#include "stackquality.h"
#include "writer.h"

#define MAX_SOURCES	8
#define MAX_PIDS	256
#define DEFAULT_OUTPUT	"stackpulse.sp"
/* The reader of the output went away (a broken pipe): as a shell reports
 * a program that SIGPIPE killed, 128 + 13. */
#define EXIT_OUTPUT_CLOSED	141

static struct env {
	struct sp_common_opts common;	/* -o, -v: lib/base/opt.c */
	struct sp_perf_opts perf;
	struct sp_offcpu_opts offcpu;	/* --off-cpu: lib/record/perf_offcpu.c */
	struct sp_events_opts events;	/* --events: lib/record/bpf_events.c */
	uint32_t pids[MAX_PIDS];
	unsigned int npids;
	bool system_wide;
	bool check;
	uint64_t duration_ns;
	uint64_t batch_ns;
	enum sp_format format;
} env = {
	.perf = { .freq = 999, .call_graph = SP_CG_FP },
	.batch_ns = 100000000,
	.format = SP_FORMAT_SPOOL,
};

static const char doc[] =
	"Record stack samples of COMMAND (and every process it starts), of running "
	"processes (-p), or of the whole machine (-a).\v"
	"Samples CPU stacks with perf_event_open (kernel and user stacks by frame "
	"pointers, or DWARF with --call-graph=dwarf) and records the processes, "
	"threads and executable mappings (with build-ids) needed to make sense of them "
	"later, on this machine or another. Output goes to -o FILE, or to standard "
	"output when it is not a terminal, else to ./" DEFAULT_OUTPUT "; records are "
	"written in batches (--batch), so a reader sees them while the command runs.\n\n"
	"Example: sp-record -o run.sp -- make test\n"
	"         sp-record -F 99 -p 1234 -d 10s | sp-decode --stats\n\n"
	"With a COMMAND, sp-record exits with the command's status (128 + signal "
	"when it was killed), 126 when it cannot be run, 127 when it is not found. "
	"SIGINT and SIGTERM sent to sp-record are passed on to the command.\n\n"
	"When the reader of its output goes away (a broken pipe), sp-record says "
	"so, stops recording, leaves the command running and exits 141.\n\n"
	SP_EXIT_STATUS_DOC;

enum {
	OPT_BATCH = 0x2000,
	OPT_USER_ONLY,
	OPT_KERNEL_ONLY,
	OPT_STACK_SIZE,
	OPT_FORMAT,
	OPT_CHECK,
	OPT_ARCHIVE,
};

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Target:", 1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Record running processes (and their new children)", 1 },
	{ "all-cpus", 'a', NULL, 0, "Record the whole machine", 1 },
	{ "duration", 'd', "TIME", 0, "Stop after TIME (\"10s\", \"500ms\"; plain seconds)", 1 },
	{ NULL, 0, NULL, 0, "Sampling:", 2 },
	{ "freq", 'F', "HZ", 0, "Sample at HZ per CPU (default 999)", 2 },
	{ "count", 'c', "PERIOD", 0, "Sample every PERIOD events instead", 2 },
	{ "event", 'e', "EVENT", 0, "Sampling event: cpu-clock (default), task-clock, "
	  "page-faults, context-switches, ...; cycles, instructions where there is a PMU", 2 },
	{ "call-graph", 'g', "MODE", 0, "fp (frame pointers, default), dwarf[,SIZE] (unwind copies "
	  "of the user stack), auto (dwarf, then frame pointers where CFI is missing), none", 2 },
	{ "stack-size", OPT_STACK_SIZE, "BYTES", 0, "User stack bytes copied per sample for "
	  "dwarf (default 8192)", 2 },
	{ "user-only", OPT_USER_ONLY, NULL, 0, "Only samples and stacks in user space", 2 },
	{ "kernel-only", OPT_KERNEL_ONLY, NULL, 0, "Only samples and stacks in the kernel", 2 },
	{ "mmap-pages", 'm', "PAGES", 0, "Ring buffer pages per CPU, a power of 2 "
	  "(default 128, 512 for dwarf)", 2 },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "batch", OPT_BATCH, "TIME", 0, "Write records at least this often (default 100ms)", 3 },
	{ "format", OPT_FORMAT, "FORMAT", 0, "spool (default) or json (JSON lines)", 3 },
	{ "check", OPT_CHECK, NULL, 0, "Say what this machine supports and exit; with --spans, also record a canary "
	  "program per span mode", 3 },
	{ "archive", OPT_ARCHIVE, "DIR", 0, "Copy each sampled binary into DIR once per build-id "
	  "(for sp-symbolize --archive DIR; off by default)", 3 },
	{ 0 }
};

static int parse_pids(const char *arg)
{
	char *copy = sp_xstrdup(arg), *save = NULL, *tok;
	uint32_t pid;
	int ret = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (sp_parse_uint32(tok, 1, 0x3fffffff, &pid) || env.npids == MAX_PIDS) {
			ret = -1;
			break;
		}
		env.pids[env.npids++] = pid;
	}
	free(copy);
	return ret;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		state->child_inputs[1] = &env.offcpu;
		state->child_inputs[2] = &env.events;
		break;
	case 'p':
		if (parse_pids(arg))
			argp_error(state, "invalid pid list '%s'", arg);
		break;
	case 'a':
		env.system_wide = true;
		break;
	case 'd':
		if (sp_parse_duration(arg, &env.duration_ns) || !env.duration_ns)
			argp_error(state, "invalid duration '%s'", arg);
		break;
	case 'F':
		if (sp_parse_uint(arg, 1, 100000, &env.perf.freq))
			argp_error(state, "invalid frequency '%s' (1 to 100000)", arg);
		env.perf.period = 0;
		break;
	case 'c':
		if (sp_parse_uint(arg, 1, UINT64_MAX >> 1, &env.perf.period))
			argp_error(state, "invalid period '%s'", arg);
		break;
	case 'e':
		env.perf.event = arg;
		break;
	case 'g':
		if (!strcmp(arg, "fp"))
			env.perf.call_graph = SP_CG_FP;
		else if (!strcmp(arg, "dwarf"))
			env.perf.call_graph = SP_CG_DWARF;
		else if (!strcmp(arg, "auto"))
			env.perf.call_graph = SP_CG_AUTO;
		else if (!strcmp(arg, "none"))
			env.perf.call_graph = SP_CG_NONE;
		else if ((!strncmp(arg, "dwarf,", 6) || !strncmp(arg, "auto,", 5)) &&
			 !sp_parse_uint(strchr(arg, ',') + 1, 8, 65528, &v) && !(v & 7)) {
			/* dwarf,SIZE as perf spells it: the same as --stack-size=SIZE */
			env.perf.call_graph = arg[0] == 'd' ? SP_CG_DWARF : SP_CG_AUTO;
			env.perf.stack_size = (uint32_t)v;
		} else
			argp_error(state, "invalid call graph '%s': use fp, dwarf[,SIZE], auto[,SIZE] "
				   "or none (SIZE: 8 to 65528, a multiple of 8)", arg);
		break;
	case OPT_STACK_SIZE:
		if (sp_parse_uint(arg, 8, 65528, &v) || (v & 7))
			argp_error(state, "invalid stack size '%s' (8 to 65528, a multiple of 8)",
				   arg);
		env.perf.stack_size = (uint32_t)v;
		break;
	case OPT_USER_ONLY:
		env.perf.user_only = true;
		break;
	case OPT_KERNEL_ONLY:
		env.perf.kernel_only = true;
		break;
	case 'm':
		if (sp_parse_uint(arg, 1, 1 << 20, &v) || (v & (v - 1)))
			argp_error(state, "invalid page count '%s' (a power of 2)", arg);
		env.perf.pages = (uint32_t)v;
		break;
	case OPT_BATCH:
		if (sp_parse_duration(arg, &env.batch_ns) || env.batch_ns < 1000000 ||
		    env.batch_ns > 60000000000ull)
			argp_error(state, "invalid batch interval '%s' (1ms to 60s)", arg);
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "spool"))
			env.format = SP_FORMAT_SPOOL;
		else if (!strcmp(arg, "json"))
			env.format = SP_FORMAT_JSON;
		else
			argp_error(state, "invalid format '%s': use spool or json", arg);
		break;
	case OPT_CHECK:
		env.check = true;
		break;
	case OPT_ARCHIVE:
		env.perf.archive = arg;
		break;
	case ARGP_KEY_SUCCESS:	/* ARGP_KEY_END is not seen when a command is given */
		if (env.perf.user_only && env.perf.kernel_only)
			argp_error(state, "--user-only and --kernel-only exclude each other");
		if (env.check)
			break;
		if (env.npids && env.system_wide)
			argp_error(state, "-p and -a exclude each other");
		if (env.npids && state->next < state->argc)
			argp_error(state, "give either -p or a command, not both");
		if (!env.npids && !env.system_wide && state->next >= state->argc)
			argp_error(state, "nothing to record: give a command, -p PID or -a");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * Record sources. Each is a struct sp_source (source.h) that the loop below
 * drives; the records of all of them are merged by time into one stream.
 * Adding one is three lines: its argp child in children[] (its options), the
 * child's input in ARGP_KEY_INIT if it has one, and its constructor in
 * make_sources(). A source that the options did not ask for is simply not
 * added there.
 */
static struct sp_source *sources[MAX_SOURCES];
static unsigned int nsources;

static void add_source(struct sp_source *s)
{
	if (!s)
		exit(SP_EXIT_FATAL);	/* the constructor said why */
	sources[nsources++] = s;
}

static struct sp_stackq *stackq;

static void make_sources(void)
{
	struct sp_source *ev;
	uint32_t type;
	uint64_t config;
	bool hw;

	if (env.events.no_samples) {
		/* side-band records (processes, mappings) without any sample */
		if (!sp_perf_event_lookup("dummy", &type, &config, &hw))
			env.perf.event = "dummy";
		else
			env.perf.period = UINT64_C(1) << 62;
	}
	add_source(sp_perf_source_new(&env.perf));
	/* Kernel events: attached before the header, which describes them; an
	 * event the user named that cannot be had stops here. */
	ev = sp_events_source_new(&env.events);
	if (sp_events_prepare(ev) < 0)
		exit(SP_EXIT_USAGE);
	add_source(ev);
	if (env.offcpu.enabled) {
		env.offcpu.call_graph = env.perf.call_graph;
		env.offcpu.stack_size = env.perf.stack_size;
		env.offcpu.kernel_frames = !env.perf.user_only;
		env.offcpu.enable_on_exec = env.perf.enable_on_exec;
		add_source(sp_offcpu_source_new(&env.offcpu));
	}
	add_source(sp_spans_source_new(&sp_spans_opts));	/* --spans: lib/record/bpf_spans.c */
	/* Unwind statuses of every sample, for the summary (stackquality.h). */
	stackq = sp_stackq_new();
	if (stackq)
		sp_stackq_set_config(stackq, env.perf.call_graph,
				     env.perf.stack_size ? env.perf.stack_size : 8192, 0);
}

/* ---- output ---- */

struct out {
	struct sp_writer *w;
	struct sp_merge *merge;
	int fd;
	const char *name;
	bool regular;
	uint64_t good;		/* bytes of the output that end with a whole batch */
	bool failed;
	bool closed;		/* failed: its reader went away (EPIPE) */
	bool has_command;	/* sp-record started the command */
	uint64_t samples, events, lost_samples, lost_events;
};

static int put_record(void *ctx, const struct sp_record *rec)
{
	struct out *o = ctx;

	if (rec->kind == SP_REC_SAMPLE) {
		o->samples++;
		if (stackq)
			sp_stackq_add_sample(stackq, sp_writer_defs(o->w), &rec->sample);
	}
	else if (rec->kind == SP_REC_EVENT)
		o->events++;
	else if (rec->kind == SP_REC_LOST && rec->lost.what == SP_LOST_SAMPLES)
		o->lost_samples += rec->lost.count;
	else if (rec->kind == SP_REC_LOST)
		o->lost_events += rec->lost.count;
	return sp_writer_put(o->w, rec);
}

/* End of a batch: every record the sources have all moved past, then out. */
static int write_batch(struct out *o, uint64_t upto, bool flush)
{
	if (o->failed)
		return -1;
	if (sp_merge_flush(o->merge, upto) < 0 || (flush && sp_writer_flush(o->w))) {
		o->failed = true;
		if (sp_writer_errno(o->w) == EPIPE) {
			o->closed = true;
			sp_warn("output closed (broken pipe): recording stopped%s",
				o->has_command ? "; the command goes on running" : "");
			return -1;
		}
		/* Keep whole records only: cut the file back to the last batch. */
		if (o->regular && ftruncate(o->fd, (off_t)o->good) == 0)
			sp_warn("'%s' ends with the records written before the error", o->name);
		return -1;
	}
	if (flush)
		o->good = sp_writer_bytes(o->w);
	return 0;
}

/* The command line, shell-quoted where needed. */
static char *quote_args(char **argv, int argc)
{
	size_t cap = 1, len = 0, n;
	char *buf = sp_xmalloc(1), *p;
	const char *a;
	int i;

	buf[0] = 0;
	for (i = 0; i < argc; i++) {
		a = argv[i];
		n = strlen(a) * 4 + 4;
		sp_grow(&buf, &cap, len + n + 1, 1);
		p = buf + len;
		if (i)
			*p++ = ' ';
		if (*a && !a[strcspn(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~")]) {
			p = stpcpy(p, a);
		} else {
			*p++ = '\'';
			for (; *a; a++) {
				if (*a == '\'')
					p = stpcpy(p, "'\\''");
				else
					*p++ = *a;
			}
			*p++ = '\'';
			*p = 0;
		}
		len = p - buf;
	}
	return buf;
}

static int write_header(struct out *o, const char *command, uint64_t wall, uint64_t mono)
{
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct sp_header *h = &r.header;
	char feat[1024] = "", unav[1024] = "", f[512], u[512], host[256] = "";
	struct sp_perf_info pi;
	struct utsname un;
	unsigned int i;

	sp_perf_source_info(sources[0], &pi);
	for (i = 0; i < nsources; i++) {
		f[0] = u[0] = 0;
		if (sources[i]->describe)
			sources[i]->describe(sources[i], f, sizeof(f), u, sizeof(u));
		if (f[0])
			snprintf(feat + strlen(feat), sizeof(feat) - strlen(feat), "%s%s",
				 feat[0] ? " " : "", f);
		if (u[0])
			snprintf(unav + strlen(unav), sizeof(unav) - strlen(unav), "%s%s",
				 unav[0] ? " " : "", u);
	}
	uname(&un);
	gethostname(host, sizeof(host) - 1);
	h->version = SP_SPOOL_VERSION;
	h->start_wall_ns = wall;
	h->start_mono_ns = mono;
	h->clock = SP_CLOCK_MONOTONIC;
	h->sample_period = pi.period;
	h->sample_freq = pi.freq;
	h->call_graph = pi.call_graph;
	h->flags = pi.flags;
#define TEXT(field, str) (h->field.p = (const uint8_t *)(str), \
			 h->field.len = (uint32_t)strlen(str))
	TEXT(event, pi.event);
	TEXT(hostname, host);
	TEXT(kernel, un.release);
	TEXT(machine, un.machine);
	TEXT(command, command);
	TEXT(producer, "sp-record 0.1");
	TEXT(features, feat);
	TEXT(unavailable, unav);
#undef TEXT
	return sp_writer_put(o->w, &r);
	return 0;
}

/* Where the records go: -o FILE, stdout, or ./stackpulse.sp for a terminal. */
static int open_output(struct out *o)
{
	struct stat st;

	o->fd = fileno(env.common.out);
	o->name = env.common.out_path && strcmp(env.common.out_path, "-") ?
		  env.common.out_path : "<stdout>";
	if (env.common.out == stdout && env.common.out_is_tty && env.format == SP_FORMAT_SPOOL) {
		rename(DEFAULT_OUTPUT, DEFAULT_OUTPUT ".old");
		o->fd = open(DEFAULT_OUTPUT, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (o->fd < 0)
			return sp_error_errno("cannot open '%s' for writing", DEFAULT_OUTPUT);
		o->name = DEFAULT_OUTPUT;
		fprintf(stderr, "%s: standard output is a terminal: writing '%s'\n", sp_progname,
			DEFAULT_OUTPUT);
	}
	o->regular = fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode);
	o->good = o->regular ? (uint64_t)lseek(o->fd, 0, SEEK_CUR) : 0;
	o->w = sp_writer_new(o->fd, o->name, env.format);
	o->merge = sp_merge_new(put_record, o);
	return o->w && o->merge ? 0 : -1;
}

/* ---- the loop ---- */

enum tag { TAG_SIGNAL = 1, TAG_PIDFD = 2, TAG_SOURCE = 3 };

struct loop {
	int ep, sigfd;
	int pidfds[MAX_PIDS];
	bool exited[MAX_PIDS];
	unsigned int npidfds, nexited;
	int signals;		/* SIGINT/SIGTERM received */
	int last_signal;
	struct sp_launch *cmd;
	enum sp_end_reason reason;
	bool stop;
};

static void watch(struct loop *l, int fd, enum tag tag, unsigned int idx)
{
	struct epoll_event ev = { .events = EPOLLIN };

	ev.data.u64 = (uint64_t)tag << 32 | idx;
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev))
		sp_die("epoll_ctl: %s", strerror(errno));
}

static void on_signal(struct loop *l)
{
	struct signalfd_siginfo si;

	while (read(l->sigfd, &si, sizeof(si)) == sizeof(si)) {
		l->signals++;
		l->last_signal = (int)si.ssi_signo;
		if (l->cmd && !l->cmd->reaped && l->signals == 1) {
			/* A terminal's ^C reaches the command by itself; pass on
			 * only what was sent to sp-record alone. */
			if (si.ssi_code != SI_KERNEL)
				kill(l->cmd->pid, (int)si.ssi_signo);
			l->reason = SP_ENDR_SIGNAL;
			continue;	/* record until the command ends */
		}
		l->reason = SP_ENDR_SIGNAL;
		l->stop = true;
	}
}

static void run_loop(struct loop *l, struct out *o, uint64_t deadline)
{
	struct epoll_event evs[16];
	uint64_t now, next_batch, wake, watermark, w;
	unsigned int i;
	int n, k, timeout;

	next_batch = sp_now_mono_ns() + env.batch_ns;
	while (!l->stop) {
		now = sp_now_mono_ns();
		wake = next_batch < deadline ? next_batch : deadline;
		timeout = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
		n = epoll_wait(l->ep, evs, 16, timeout);
		if (n < 0 && errno != EINTR)
			sp_die("epoll_wait: %s", strerror(errno));
		for (k = 0; k < n; k++) {
			enum tag tag = (enum tag)(evs[k].data.u64 >> 32);
			unsigned int idx = (unsigned int)evs[k].data.u64;

			if (tag == TAG_SIGNAL) {
				on_signal(l);
			} else if (tag == TAG_PIDFD && !l->exited[idx]) {
				l->exited[idx] = true;
				l->nexited++;
				epoll_ctl(l->ep, EPOLL_CTL_DEL, l->pidfds[idx], NULL);
			}
		}
		/* Drain every source each time round: cheap, and their rings are
		 * what woke us or the batch timer did. */
		watermark = UINT64_MAX;
		for (i = 0; i < nsources; i++) {
			struct sp_emit em = { o->w, sp_merge_add, o->merge };

			if (sources[i]->poll(sources[i], &em) < 0) {
				l->reason = SP_ENDR_ERROR;
				l->stop = true;
			}
			w = sources[i]->watermark(sources[i]);
			if (w < watermark)
				watermark = w;
		}
		now = sp_now_mono_ns();
		if (write_batch(o, watermark, now >= next_batch)) {
			l->reason = SP_ENDR_ERROR;
			l->stop = true;
		}
		if (now >= next_batch)
			next_batch = now + env.batch_ns;
		if (l->npidfds && l->nexited == l->npidfds) {
			if (l->reason != SP_ENDR_SIGNAL)
				l->reason = SP_ENDR_EXITED;
			l->stop = true;
		}
		if (now >= deadline) {
			l->reason = SP_ENDR_DURATION;
			l->stop = true;
		}
	}
}

/* Without pidfds (old kernels), notice exits at each batch instead. */
static int open_pidfd(struct loop *l, pid_t pid)
{
	int fd = sp_pidfd_open(pid);

	if (fd < 0 && errno == ESRCH)
		return sp_error("pid %d: no such process", (int)pid);
	if (fd < 0)
		return sp_error_errno("pid %d: pidfd_open", (int)pid);
	l->pidfds[l->npidfds] = fd;
	watch(l, fd, TAG_PIDFD, l->npidfds);
	l->npidfds++;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = {
		{ .argp = &sp_common_argp },
		{ .argp = &sp_offcpu_argp, .group = 2 },
		{ .argp = &sp_events_argp, .group = 4 },
		{ .argp = &sp_spans_argp, .group = 5 },
		{ 0 }
	};
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[--] COMMAND [ARG...]", .doc = doc,
	};
	struct sp_launch cmd = { .pid = 0, .go_fd = -1, .err_fd = -1, .pidfd = -1 };
	struct sp_record end = { .kind = SP_REC_END };
	struct loop l = { .ep = -1, .sigfd = -1, .reason = SP_ENDR_EXITED };
	struct out o = { .fd = -1 };
	struct sp_target target = { 0 };
	struct sp_perf_stats pst;
	sigset_t block, mask, orig;
	uint64_t wall, mono, deadline;
	char *command;
	int first, status = SP_EXIT_OK, err, child_status = -1;
	unsigned int i;
	uint32_t root;

	/* The program of the usdt canary (--check --spans=usdt): one span. */
	if (argc == 2 && !strcmp(argv[1], SP_CANARY_USDT_OPTION)) {
		SP_SPAN_BEGIN(SP_CANARY_METHOD);
		SP_SPAN_END(SP_CANARY_METHOD);
		return SP_EXIT_OK;
	}
	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &first, NULL);
	if (env.check) {
		char self[4096];
		ssize_t n;

		sp_perf_check(stdout);
		{
			struct sp_source *ev = sp_events_source_new(&env.events);

			sp_events_print_check(ev, stdout);
			ev->free(ev);
		}
		if (!sp_spans_opts.given)
			return sp_close_output(&env.common, SP_EXIT_OK);
		fflush(stdout);
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			sp_die("cannot find sp-record's own binary: %s", strerror(errno));
		self[n] = 0;
		status = sp_spans_canary(self, sp_spans_opts.modes, stdout) ? SP_EXIT_PARTIAL :
			 SP_EXIT_OK;
		return sp_close_output(&env.common, status);
	}
	if (first < argc && !strcmp(argv[first], "--"))
		first++;
	env.perf.enable_on_exec = first < argc;

	/* SIGINT and SIGTERM are read from a signalfd in the loop, even when
	 * sp-record was started with them ignored (a background job). */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	/* A closed output pipe is an EPIPE to handle (the command goes on),
	 * not a SIGPIPE that kills sp-record with processes held stopped.
	 * The command starts with the mask sp-record was started with. */
	mask = block;
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	l.sigfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
	l.ep = epoll_create1(EPOLL_CLOEXEC);
	if (l.sigfd < 0 || l.ep < 0)
		sp_die("signalfd/epoll: %s", strerror(errno));
	watch(&l, l.sigfd, TAG_SIGNAL, 0);
	/* Hold the attached processes first: a pidfd cannot name another. */
	for (i = 0; i < env.npids; i++)
		if (open_pidfd(&l, (pid_t)env.pids[i]))
			return SP_EXIT_FATAL;

	if (first < argc) {
		command = quote_args(argv + first, argc - first);
		env.perf.args = command;
	} else {
		char buf[64];

		command = sp_xmalloc(32 + 12 * env.npids);
		strcpy(command, env.system_wide ? "-a" : "-p ");
		for (i = 0; i < env.npids; i++) {
			snprintf(buf, sizeof(buf), "%s%u", i ? "," : "", env.pids[i]);
			strcat(command, buf);
		}
	}

	make_sources();
	o.has_command = first < argc;
	if (open_output(&o))
		return SP_EXIT_FATAL;

	/* The command waits before exec while the sources attach to its pid. */
	if (first < argc) {
		for (i = 0; i < nsources; i++)
			if (sources[i]->prepare_env && sources[i]->prepare_env(sources[i]))
				return SP_EXIT_FATAL;
		if (sp_launch_prepare(&cmd, argv + first, &orig))
			return SP_EXIT_FATAL;
		l.cmd = &cmd;
		root = (uint32_t)cmd.pid;
		target.pids = &root;
		target.npids = 1;
		if (cmd.pidfd < 0)
			sp_die("pidfd_open: %s", strerror(errno));
		l.pidfds[0] = cmd.pidfd;
		watch(&l, cmd.pidfd, TAG_PIDFD, 0);
		l.npidfds = 1;
	} else {
		target.pids = env.pids;
		target.npids = env.npids;
	}
	target.system_wide = env.system_wide;

	mono = sp_now_mono_ns();
	wall = sp_now_wall_ns();
	if (write_header(&o, command, wall, mono))
		status = SP_EXIT_FATAL;
	for (i = 0; i < nsources && status == SP_EXIT_OK; i++) {
		struct sp_emit em = { o.w, sp_merge_add, o.merge };

		if (sources[i]->start(sources[i], &target, &em))
			status = SP_EXIT_FATAL;
		else if (sources[i]->fd >= 0)
			watch(&l, sources[i]->fd, TAG_SOURCE, i);
	}
	if (status != SP_EXIT_OK) {
		if (l.cmd)
			sp_launch_abort(&cmd);
		l.reason = SP_ENDR_ERROR;
	} else if (l.cmd && sp_launch_go(&cmd)) {
		err = errno;
		sp_error("cannot run '%s': %s", argv[first], strerror(err));
		status = err == ENOENT ? 127 : 126;
		l.reason = SP_ENDR_ERROR;
	} else {
		deadline = env.duration_ns ? sp_now_mono_ns() + env.duration_ns : UINT64_MAX;
		run_loop(&l, &o, deadline);
	}

	for (i = 0; i < nsources; i++) {
		struct sp_emit em = { o.w, sp_merge_add, o.merge };

		if (!o.failed && sources[i]->finish(sources[i], &em))
			l.reason = SP_ENDR_ERROR;
	}
	if (l.cmd && status == SP_EXIT_OK && sp_launch_reap(&cmd, false))
		child_status = sp_launch_exit_code(cmd.wstatus);
	end.end.time = sp_now_mono_ns();
	end.end.reason = l.reason;
	end.end.status = child_status >= 0 ? (uint64_t)child_status : 0;
	if (!o.failed && write_batch(&o, UINT64_MAX, false) == 0) {
		end.end.samples = o.samples;
		end.end.events = o.events;
		end.end.lost_samples = o.lost_samples;
		end.end.lost_events = o.lost_events;
		if (sp_writer_put(o.w, &end) || write_batch(&o, UINT64_MAX, true))
			o.failed = true;
	}
	sp_perf_source_stats(sources[0], &pst);
	/* How complete the stacks are, with hints (DWARF/auto: always; else -v). */
	if (stackq && !o.failed && (env.perf.call_graph >= SP_CG_DWARF || sp_verbose))
		sp_stackq_print(stackq, stderr, "sp-record: ", 3);
	for (i = 1; i < nsources; i++)
		if (env.offcpu.enabled && !strcmp(sources[i]->name, "offcpu") && !o.failed)
			sp_offcpu_print_summary(sources[i], stderr, "sp-record: ");
	sp_stackq_free(stackq);
	for (i = 0; i < nsources; i++)
		sources[i]->free(sources[i]);
	sp_writer_close(o.w);
	sp_merge_free(o.merge);

	if (o.closed) {
		/* Nobody reads what we record: the command goes on without us
		 * (its held processes were let go by the sources' free). */
		status = EXIT_OUTPUT_CLOSED;
	} else if (o.failed) {
		status = SP_EXIT_FATAL;
		/* The command goes on without us; wait for it, passing signals. */
		if (l.cmd && !cmd.reaped) {
			l.stop = false;
			while (!sp_launch_reap(&cmd, false) && !l.stop) {
				struct epoll_event ev;

				if (epoll_wait(l.ep, &ev, 1, -1) == 1 && ev.data.u64 >> 32 == TAG_SIGNAL)
					on_signal(&l);
			}
		}
	} else if (status == SP_EXIT_OK && l.reason != SP_ENDR_ERROR) {
		sp_info("%llu samples, %llu lost, %llu processes, %llu bytes to '%s'; "
			"sp-record used %.3f s of CPU",
			(unsigned long long)o.samples, (unsigned long long)o.lost_samples,
			(unsigned long long)pst.processes, (unsigned long long)o.good, o.name,
			(double)sp_now_cpu_ns() / 1e9);
		if (o.lost_samples)
			sp_warn("%llu samples lost (the ring buffers overflowed: try -m or a lower -F)",
				(unsigned long long)o.lost_samples);
	} else if (status == SP_EXIT_OK) {
		status = SP_EXIT_FATAL;
	}
	if (l.cmd && status == SP_EXIT_OK) {
		if (child_status < 0 && sp_launch_reap(&cmd, l.reason != SP_ENDR_DURATION &&
						      l.reason != SP_ENDR_SIGNAL))
			child_status = sp_launch_exit_code(cmd.wstatus);
		if (child_status >= 0)
			status = child_status;
		else if (l.reason == SP_ENDR_SIGNAL)
			status = 128 + l.last_signal;
	}
	sp_launch_release(&cmd);
	for (i = l.cmd ? 1 : 0; i < l.npidfds; i++)
		close(l.pidfds[i]);
	close(l.sigfd);
	close(l.ep);
	if (o.fd >= 0 && o.fd != fileno(env.common.out))
		close(o.fd);
	free(command);
	return sp_close_output(&env.common, status);
}
