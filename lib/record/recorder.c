// SPDX-License-Identifier: MIT
/*
 * A recording as sp-record makes it (recorder.h): the sources by kind, the
 * output and its batches, the header, the loop, the end record, and the
 * closing report with the exit status. sp-record itself only parses its
 * options, makes the sources they ask for, and takes these steps in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "close_apart.h"
#include "flight.h"
#include "launch.h"
#include "merge.h"
#include "perf_offcpu.h"
#include "perf_source.h"
#include "proc_pin.h"
#include "procfs.h"
#include "recorder.h"
#include "segments.h"
#include "spool.h"
#include "spool_lock.h"
#include "stackquality.h"
#include "writer.h"

/* What an epoll event is about: data.u64 is tag << 32 | index. */
enum tag { TAG_SIGNAL = 1, TAG_PIDFD = 2, TAG_SOURCE = 3, TAG_TRIGGER = 4 };

struct sp_recorder {
	struct sp_recorder_opts o;
	int status;			/* SP_EXIT_OK until a step fails */
	char *command;			/* sp_recorder_describe() */

	struct {
		enum sp_source_kind kind;
		struct sp_source *s;
	} src[SP_RECORDER_MAX_SOURCES];
	unsigned int nsrc;
	struct sp_stackq *stackq;	/* unwind statuses of every sample */

	/* the output */
	struct sp_writer *w;
	struct sp_merge *merge;
	struct sp_flight *fl;		/* the streams the records go to */
	struct sp_flight_opts one;	/* of one file or pipe's */
	uint64_t compact_at;		/* the stream of the last look at the id space */
	bool compact_warned;
	bool fire_warned;
	int fd;
	const char *name;
	bool regular;
	uint64_t good;			/* bytes of the output that end with a whole batch */
	uint64_t good0;			/* where this recording's bytes began in it */
	bool failed;
	bool closed;			/* failed: its reader went away (EPIPE) */
	bool discard;			/* the sources' records are of a process not asked for */
	uint64_t samples, events, lost_samples, lost_events;

	/* the loop */
	int ep, sigfd;
	sigset_t orig_mask;		/* before sp_recorder_new(): the command's */
	int pidfds[SP_RECORDER_MAX_PIDS];	/* the command's, or pins[i]'s */
	bool exited[SP_RECORDER_MAX_PIDS];
	unsigned int npidfds, nexited;
	struct sp_proc_pin pins[SP_RECORDER_MAX_PIDS];	/* -p, held from the start */
	unsigned int npins;
	int signals;			/* SIGINT/SIGTERM received */
	int last_signal;
	struct sp_launch cmd;
	bool has_command;		/* sp-record starts a command */
	bool launched;			/* cmd is forked */
	const char *argv0;		/* its name, for "cannot run" */
	int child_status;		/* its exit status once reaped, else -1 */
	enum sp_end_reason reason;
	bool stop;
	struct sp_triggers *triggers;	/* --trigger, NULL without */
};

/* ---- the loop's descriptors ---- */

static int watch(struct sp_recorder *r, int fd, enum tag tag, unsigned int idx)
{
	struct epoll_event ev = { .events = EPOLLIN };

	ev.data.u64 = (uint64_t)tag << 32 | idx;
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev))
		return sp_error("epoll_ctl: %s", strerror(errno));
	return 0;
}

/*
 * A -p process, held from sp-record's start by what cannot come to name
 * another (proc_pin.h): the sources attach to it through this, a second or
 * two later (the BPF programs load meanwhile), when its pid may have been
 * taken by another process, any user's. Its pidfd tells the loop its end.
 */
static int hold_pid(struct sp_recorder *r, uint32_t pid)
{
	struct sp_proc_pin *pin = &r->pins[r->npins];
	char why[128];

	if (sp_proc_pin_open(pin, pid)) {
		sp_pidfd_failure(pid, errno, why, sizeof(why));
		return sp_error("pid %u: %s", pid, why);
	}
	r->npins++;
	r->pidfds[r->npidfds++] = pin->pidfd;
	return watch(r, pin->pidfd, TAG_PIDFD, r->npidfds - 1);
}

static void ignore_signal(int sig)
{
	(void)sig;
}

/* SIGINT and SIGTERM are read from a signalfd in the loop, even when
 * sp-record was started with them ignored (a background job). A closed
 * output pipe is an EPIPE to handle (the command goes on), not a SIGPIPE
 * that kills sp-record with processes held stopped. */
static int catch_signals(struct sp_recorder *r)
{
	sigset_t block, mask;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	/* SIGUSR1 fires the flight recorder (a dump), only when there is one:
	 * without it, SIGUSR1 keeps its default meaning. A thread started
	 * before this mask (the spans source's loader) may still take it: a
	 * handler that does nothing keeps that from killing sp-record. */
	if (r->o.flight && r->o.flight->flight) {
		sigaddset(&block, SIGUSR1);
		sigaction(SIGUSR1, &(struct sigaction){ .sa_handler = ignore_signal }, NULL);
	}
	mask = block;
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, &r->orig_mask);
	r->sigfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	if (r->sigfd < 0 || r->ep < 0)
		return sp_error("signalfd/epoll: %s", strerror(errno));
	return watch(r, r->sigfd, TAG_SIGNAL, 0);
}

struct sp_recorder *sp_recorder_new(const struct sp_recorder_opts *o)
{
	struct sp_recorder *r = sp_xcalloc(1, sizeof(*r));
	unsigned int i;

	r->o = *o;
	r->fd = r->ep = r->sigfd = -1;
	r->cmd = (struct sp_launch){ .pid = 0, .go_fd = -1, .err_fd = -1, .pidfd = -1 };
	r->child_status = -1;
	r->reason = SP_ENDR_EXITED;
	if (catch_signals(r))
		goto fail;
	/* Hold the attached processes first: a pidfd cannot name another. */
	for (i = 0; i < o->npids; i++)
		if (hold_pid(r, o->pids[i]))
			goto fail;
	if (o->triggers && sp_triggers_any(o->triggers))
		r->triggers = sp_triggers_new(o->triggers);
	r->stackq = sp_stackq_new();
	if (r->stackq) {
		sp_stackq_set_config(r->stackq, o->call_graph,
				     o->stack_size ? o->stack_size : SP_PERF_STACK_COPY, 0);
		sp_stackq_set_offcpu_copy(r->stackq,
					  o->stack_size ? o->stack_size : SP_OFFCPU_STACK_COPY);
	}
	return r;
fail:
	sp_recorder_free(r);
	return NULL;
}

/* ---- the command line ---- */

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

/* A -p process's command line is the process's to choose, up to ARG_MAX:
 * the header keeps its first 4 KiB. */
#define SP_RECORDER_CMDLINE_MAX 4096

/* What -p PID attached to: "-p PID: its command line", quoted like ours. */
static void describe_pid(char **out, size_t *cap, size_t *len, uint32_t pid)
{
	char buf[SP_RECORDER_CMDLINE_MAX], head[32], *q, *p, **argv;
	bool cut;
	int n, argc = 0;

	n = snprintf(head, sizeof(head), "%s-p %u", *len ? "; " : "", pid);
	sp_grow(out, cap, *len + n + 1, 1);
	memcpy(*out + *len, head, n + 1);
	*len += n;
	n = sp_procfs_argv(pid, buf, sizeof(buf), &cut);
	if (n <= 0)
		return;	/* gone, or a kernel thread: the pid says it all */
	argv = sp_xmalloc(sizeof(*argv) * ((size_t)n + 1));
	for (p = buf; p <= buf + n; p += strlen(p) + 1)
		argv[argc++] = p;
	q = quote_args(argv, argc);
	free(argv);
	/* quote_args quotes "[" and ";": these cannot come from the process */
	sp_grow(out, cap, *len + strlen(q) + 16, 1);
	*len += (size_t)sprintf(*out + *len, ": %s%s", q, cut ? " [cut]" : "");
	free(q);
}

const char *sp_recorder_describe(struct sp_recorder *r, char **argv, int argc)
{
	size_t cap = 1, len = 0;
	unsigned int i;

	free(r->command);
	if (argc > 0) {
		r->command = quote_args(argv, argc);
		return r->command;
	}
	if (r->o.system_wide) {
		r->command = sp_xstrdup("-a");
		return r->command;
	}
	r->command = sp_xmalloc(cap);
	r->command[0] = 0;
	for (i = 0; i < r->o.npids; i++)
		describe_pid(&r->command, &cap, &len, r->o.pids[i]);
	return r->command;
}

/* ---- sources ---- */

int sp_recorder_add(struct sp_recorder *r, enum sp_source_kind kind, struct sp_source *s)
{
	if (!s)
		return -1;
	if (r->nsrc == SP_RECORDER_MAX_SOURCES) {
		s->free(s);
		return sp_error("more than %d record sources", SP_RECORDER_MAX_SOURCES);
	}
	r->src[r->nsrc].kind = kind;
	r->src[r->nsrc].s = s;
	r->nsrc++;
	return 0;
}

struct sp_source *sp_recorder_source(struct sp_recorder *r, enum sp_source_kind kind)
{
	unsigned int i;

	for (i = 0; i < r->nsrc; i++)
		if (r->src[i].kind == kind)
			return r->src[i].s;
	return NULL;
}

/* ---- the output ---- */

/* Each record on its way to the writer: counted for the end record. */
static int put_record(void *ctx, const struct sp_record *rec)
{
	struct sp_recorder *r = ctx;
	char detail[SP_TRIGGERS_DETAIL_MAX];
	const char *trigger;

	if (r->discard)
		return 0;
	/*
	 * Per-record triggers of the flight recorder (a process that crashed,
	 * a slow span, an event matching a pattern) look at each record here,
	 * in time order, before it is written.
	 */
	if (r->triggers) {
		trigger = sp_triggers_check(r->triggers, rec, sp_writer_defs(r->w), detail,
					    sizeof(detail));
		if (trigger)
			sp_recorder_fire(r, trigger, detail, sp_record_time(rec));
	}
	if (rec->kind == SP_REC_SAMPLE) {
		r->samples++;
		if (r->stackq)
			sp_stackq_add_sample(r->stackq, sp_writer_defs(r->w), &rec->sample);
	}
	else if (rec->kind == SP_REC_EVENT)
		r->events++;
	else if (rec->kind == SP_REC_LOST && rec->lost.what == SP_LOST_SAMPLES)
		r->lost_samples += rec->lost.count;
	else if (rec->kind == SP_REC_LOST && rec->lost.what == SP_LOST_EVENTS)
		r->lost_events += rec->lost.count;	/* the other kinds: their lost records */
	return sp_writer_put(r->w, rec);
}

/* The recording's counts so far, for the end records of segments and dumps. */
static void so_far(const struct sp_recorder *r, struct sp_end *e)
{
	*e = (struct sp_end){ .samples = r->samples, .events = r->events,
			      .lost_samples = r->lost_samples, .lost_events = r->lost_events };
}

/* ---- the id space of -o DIR ---- */

static uint64_t remap_id(void *ctx, unsigned int ref, uint64_t id)
{
	return sp_segments_remap(ctx, ref, id);
}

static int remap_held(void *ctx, struct sp_record *rec)
{
	sp_segments_remap_record(ctx, rec);
	return 0;
}

/*
 * Once per new stream (chunk of the window, segment), when the sources' id
 * space has grown past what the last compaction kept: every definition
 * nothing live refers to goes (segments.h), and every holder of ids takes
 * the new ones: the records the merge holds, each source, the triggers.
 * A recording that runs for days stays within its bound this way; a plain
 * one (no -o DIR) never gets here.
 */
static void compact_ids(struct sp_recorder *r)
{
	struct sp_segments *segs = sp_flight_segments(r->fl);
	struct sp_remap m = { remap_id, segs };
	unsigned int i;

	if (sp_flight_streams(r->fl) == r->compact_at || !sp_segments_compact_due(segs))
		return;
	r->compact_at = sp_flight_streams(r->fl);
	for (i = 0; i < r->nsrc; i++) {
		if (r->src[i].s->remap)
			continue;
		if (!r->compact_warned)
			sp_warn("the %s source cannot renumber the ids it keeps: memory grows "
				"with every new string, frame and stack recorded", r->src[i].s->name);
		r->compact_warned = true;
		return;
	}
	if (sp_segments_compact_begin(segs, sp_writer_defs(r->w)))
		return;
	sp_merge_each(r->merge, remap_held, segs);
	for (i = 0; i < r->nsrc; i++)
		r->src[i].s->remap(r->src[i].s, &m);
	if (r->triggers)
		sp_triggers_remap(r->triggers, &m);
	sp_segments_compact_end(segs);
#ifdef __GLIBC__
	/* What the old definitions and caches held is free but scattered
	 * between what lives on: glibc keeps such pages (measured: 147 -> 281
	 * MB over 75 s of process churn without this, 99 -> 131 MB with it). */
	malloc_trim(0);
#endif
}

/* A write of the output failed (the writer said why, unless its reader
 * went away): the recording stops. -1. */
static int output_failed(struct sp_recorder *r)
{
	int err = sp_flight_errno(r->fl);

	r->failed = true;
	if (err == EPIPE) {
		r->closed = true;
		sp_warn("output closed (broken pipe): recording stopped%s",
			r->has_command ? "; the command goes on running" : "");
		return -1;
	}
	/* Keep whole records only: cut the file back to the last batch. Said
	 * only when a batch of this recording is there to keep: of nothing
	 * written (a file of /proc refusing the first write), it would say
	 * records are there that never were. */
	if (r->regular && ftruncate(r->fd, (off_t)r->good) == 0 && r->good > r->good0)
		sp_warn("'%s' ends with the records written before the error", r->name);
	return -1;
}

/* The batch out: flushed, and for streams, rotated, a window's oldest
 * dropped, a dump written, a new stream begun when one is due. */
static int flush_output(struct sp_recorder *r)
{
	struct sp_end sofar;

	so_far(r, &sofar);
	return sp_flight_batch(r->fl, sp_now_mono_ns(), &sofar);
}

/* End of a batch: every record the sources have all moved past, then out. */
static int write_batch(struct sp_recorder *r, uint64_t upto, bool flush)
{
	if (r->failed)
		return -1;
	if (sp_merge_flush(r->merge, upto) < 0 || (flush && flush_output(r)))
		return output_failed(r);
	if (flush) {
		r->good = sp_flight_bytes(r->fl);
		compact_ids(r);
	}
	return 0;
}

static int to_streams(void *ctx, const struct sp_record *rec)
{
	struct sp_recorder *r = ctx;

	return sp_flight_put(r->fl, rec);
}

/* The records go through a writer with no output of its own (the sources'
 * id space) into streams: rotated segments or the flight window (-o DIR),
 * or streams one after the other in one file or pipe. */
static int open_streams(struct sp_recorder *r, const struct sp_flight_opts *fo)
{
	r->w = sp_writer_new_tee(r->name, to_streams, r);
	r->fl = sp_flight_new(fo, sp_writer_defs(r->w));
	if (!r->fl)
		return -1;
	r->merge = sp_merge_new(put_record, r);
	return r->w && r->merge ? 0 : -1;
}

int sp_recorder_open_output(struct sp_recorder *r)
{
	const struct sp_common_opts *c = r->o.common;
	struct stat st;

	if (r->o.flight && r->o.flight->dir) {
		r->name = r->o.flight->dir;
		return open_streams(r, r->o.flight);
	}
	r->fd = fileno(c->out);
	r->name = c->out_path && strcmp(c->out_path, "-") ? c->out_path : "<stdout>";
	if (sp_output_begin(c))
		return -1;
	if (c->out == stdout && c->out_is_tty && r->o.format == SP_FORMAT_SPOOL) {
		rename(SP_RECORDER_DEFAULT_OUTPUT, SP_RECORDER_DEFAULT_OUTPUT ".old");
		/* made anew: a name another user put there since (a link to
		 * a file of root's) is not written through */
		r->fd = open(SP_RECORDER_DEFAULT_OUTPUT,
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (r->fd < 0)
			return sp_error_errno("cannot open '%s' for writing",
					      SP_RECORDER_DEFAULT_OUTPUT);
		r->name = SP_RECORDER_DEFAULT_OUTPUT;
		fprintf(stderr, "%s: standard output is a terminal: writing '%s'\n", sp_progname,
			SP_RECORDER_DEFAULT_OUTPUT);
	}
	r->regular = fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode);
	/* a follower tells a writer that is gone by the lock (spool_lock.h) */
	if (r->regular && sp_spool_lock(r->fd) && (errno == EAGAIN || errno == EACCES))
		sp_warn("'%s': another program holds a lock on this file (another "
			"recording writing it?): a follower cannot tell when this one ends",
			r->name);
	r->good = r->regular ? (uint64_t)lseek(r->fd, 0, SEEK_CUR) : 0;
	r->good0 = r->good;
	r->one.out_fd = r->fd;
	r->one.out_name = r->name;
	r->one.out_format = r->o.format;
	/* its first stream is compacted at none of its batches: only a new
	 * stream frees the definitions the old one's writer holds */
	r->compact_at = 1;
	return open_streams(r, &r->one);
}

/* The sources' words for the header's "features" and "unavailable". */
static void describe_sources(struct sp_recorder *r, char *feat, size_t fsize, char *unav,
			     size_t usize)
{
	char f[512], u[512];
	unsigned int i;

	for (i = 0; i < r->nsrc; i++) {
		struct sp_source *s = r->src[i].s;

		f[0] = u[0] = 0;
		if (s->describe)
			s->describe(s, f, sizeof(f), u, sizeof(u));
		if (f[0])
			snprintf(feat + strlen(feat), fsize - strlen(feat), "%s%s",
				 feat[0] ? " " : "", f);
		if (u[0])
			snprintf(unav + strlen(unav), usize - strlen(unav), "%s%s",
				 unav[0] ? " " : "", u);
	}
}

static int write_header(struct sp_recorder *r, uint64_t wall, uint64_t mono)
{
	struct sp_record rec = { .kind = SP_REC_HEADER };
	struct sp_header *h = &rec.header;
	char feat[1024] = "", unav[1024] = "", host[256] = "";
	struct sp_source *perf = sp_recorder_source(r, SP_SOURCE_PERF);
	struct sp_perf_info pi = { .event = "" };
	struct utsname un;

	if (perf)
		sp_perf_source_info(perf, &pi);
	describe_sources(r, feat, sizeof(feat), unav, sizeof(unav));
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
	TEXT(command, r->command ? r->command : "");
	TEXT(producer, "sp-record 0.1");
	TEXT(features, feat);
	TEXT(unavailable, unav);
#undef TEXT
	return sp_writer_put(r->w, &rec);
}

/* ---- the steps ---- */

/*
 * Where the command writes its standard output: the file named, or, when
 * the records go to standard output, standard error (said once), so that
 * what it prints never lands in the spool's pipe. -1: its own (inherited).
 */
static int command_stdout(struct sp_recorder *r)
{
	int fd;

	if (r->o.command_stdout) {
		/* as -o FILE: no link of another user's, no file of theirs in
		 * /tmp, no FIFO without a reader (root's output is the command's) */
		fd = sp_output_open(r->o.command_stdout, false);
		if (fd == -1 && errno == ENXIO)
			sp_error("cannot open '%s' for the command's output: a FIFO no one "
				 "reads (start its reader first)", r->o.command_stdout);
		else if (fd == -1 && errno == ELOOP)
			sp_error("cannot open '%s' for the command's output: it is a symbolic "
				 "link (give the file it names)", r->o.command_stdout);
		else if (fd == -1)
			sp_error_errno("cannot open '%s' for the command's output",
				       r->o.command_stdout);
		return fd < 0 ? -2 : fd;
	}
	if (r->fd != STDOUT_FILENO)
		return -1;
	fprintf(stderr, "%s: the command's standard output goes to standard error: the "
		"records go to standard output (--command-stdout=FILE to choose)\n", sp_progname);
	return STDERR_FILENO;
}

int sp_recorder_launch(struct sp_recorder *r, char *const argv[])
{
	unsigned int i;
	int out, rc;

	r->has_command = true;
	for (i = 0; i < r->nsrc; i++) {
		struct sp_source *s = r->src[i].s;

		if (s->prepare_env && s->prepare_env(s))
			return -1;
	}
	out = command_stdout(r);
	if (out == -2)
		return -1;
	rc = sp_launch_prepare(&r->cmd, argv, &r->orig_mask, out);
	if (out > STDERR_FILENO)
		close(out);
	if (rc)
		return -1;
	r->launched = true;
	r->argv0 = argv[0];
	if (r->cmd.pidfd < 0)
		return sp_error("pidfd_open: %s", strerror(errno));
	r->pidfds[0] = r->cmd.pidfd;
	r->npidfds = 1;
	return watch(r, r->cmd.pidfd, TAG_PIDFD, 0);
}

void sp_recorder_start(struct sp_recorder *r)
{
	struct sp_emit em = { r->w, sp_merge_add, r->merge };
	struct sp_target target = { .system_wide = r->o.system_wide };
	uint64_t wall, mono;
	uint32_t root;
	unsigned int i;

	if (r->launched) {
		root = (uint32_t)r->cmd.pid;
		target.pids = &root;
		target.npids = 1;
	} else {
		target.pids = r->o.pids;
		target.npids = r->o.npids;
		target.pins = r->npins ? r->pins : NULL;
	}
	/* before the sources attach, earlier closers paused (close_apart.h;
	 * at once if the events' load did it) */
	sp_close_apart_wait_earlier(SP_CLOSERS_WAIT_NS);
	mono = sp_now_mono_ns();
	wall = sp_now_wall_ns();
	if (write_header(r, wall, mono) || (r->fl && sp_flight_begin(r->fl, mono)))
		r->status = SP_EXIT_FATAL;
	for (i = 0; i < r->nsrc && r->status == SP_EXIT_OK; i++) {
		struct sp_source *s = r->src[i].s;

		if (s->start(s, &target, &em) ||
		    (s->fd >= 0 && watch(r, s->fd, TAG_SOURCE, i)))
			r->status = SP_EXIT_FATAL;
	}
	sp_close_apart_resume();	/* all attached: earlier closers go on */
	/* What the sources did by a -p pid's number (a BPF map's key, probes,
	 * /proc/PID reads) was done to the process held unless its number
	 * names another now: until the one held is reaped it names no other,
	 * and once it is, only a process that took the number is a doubt. One
	 * that merely ended is recorded to its end, as before. */
	for (i = 0; i < r->npins && r->status == SP_EXIT_OK; i++)
		if (sp_proc_pin_exited(&r->pins[i]) && sp_proc_pin_reused(&r->pins[i])) {
			sp_error("pid %u: exited during attach, and its number was taken by "
				 "another process", r->pins[i].pid);
			r->status = SP_EXIT_FATAL;
			/* what the sources read by that number is the newcomer's,
			 * maybe another user's: none of it is written */
			r->discard = true;
		}
	if (r->status != SP_EXIT_OK) {
		if (r->launched)
			sp_launch_abort(&r->cmd);
		r->reason = SP_ENDR_ERROR;
	}
}

void sp_recorder_go(struct sp_recorder *r)
{
	int err;

	if (r->status != SP_EXIT_OK || !r->launched || !sp_launch_go(&r->cmd))
		return;
	err = errno;
	sp_error("cannot run '%s': %s", r->argv0, strerror(err));
	r->status = err == ENOENT ? 127 : 126;
	r->reason = SP_ENDR_ERROR;
}

/* ---- the loop ---- */

static void on_signal(struct sp_recorder *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			char detail[64];

			snprintf(detail, sizeof(detail), "SIGUSR1 from pid %u", si.ssi_pid);
			sp_recorder_fire(r, "signal", detail, sp_now_mono_ns());
			continue;
		}
		r->signals++;
		r->last_signal = (int)si.ssi_signo;
		if (r->launched && !r->cmd.reaped && r->signals == 1) {
			/* A terminal's ^C reaches the command by itself; pass on
			 * only what was sent to sp-record alone. */
			if (si.ssi_code != SI_KERNEL)
				kill(r->cmd.pid, (int)si.ssi_signo);
			r->reason = SP_ENDR_SIGNAL;
			continue;	/* record until the command ends */
		}
		r->reason = SP_ENDR_SIGNAL;
		r->stop = true;
	}
}

/* Wait for whatever woke us (a source, a signal, a process that exited)
 * until the next batch or the deadline. */
static void wait_events(struct sp_recorder *r, uint64_t wake)
{
	struct epoll_event evs[16];
	uint64_t now = sp_now_mono_ns();
	int n, k, timeout;

	timeout = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
	n = epoll_wait(r->ep, evs, 16, timeout);
	if (n < 0 && errno != EINTR) {
		sp_error("epoll_wait: %s", strerror(errno));
		r->reason = SP_ENDR_ERROR;
		r->stop = true;
		return;
	}
	for (k = 0; k < n; k++) {
		enum tag tag = (enum tag)(evs[k].data.u64 >> 32);
		unsigned int idx = (unsigned int)evs[k].data.u64;

		if (tag == TAG_SIGNAL) {
			on_signal(r);
		} else if (tag == TAG_PIDFD && !r->exited[idx]) {
			r->exited[idx] = true;
			r->nexited++;
			epoll_ctl(r->ep, EPOLL_CTL_DEL, r->pidfds[idx], NULL);
		}
	}
}

/* Drain every source, each time round: cheap, and their rings are what
 * woke us or the batch timer did. Returns the oldest time a source may
 * still emit. */
static uint64_t poll_sources(struct sp_recorder *r)
{
	struct sp_emit em = { r->w, sp_merge_add, r->merge };
	uint64_t watermark = UINT64_MAX, w;
	unsigned int i;

	for (i = 0; i < r->nsrc; i++) {
		struct sp_source *s = r->src[i].s;

		if (s->poll(s, &em) < 0) {
			r->reason = SP_ENDR_ERROR;
			r->stop = true;
		}
		w = s->watermark(s);
		if (w < watermark)
			watermark = w;
	}
	return watermark;
}

/* The triggers' part of the loop: spans open past their threshold up to
 * what the merge let out (upto), and the command: run when due, its output
 * watched (the pipe is a new one each run: adding it again is harmless),
 * its end noticed. */
static void poll_triggers(struct sp_recorder *r, uint64_t now, uint64_t upto)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)TAG_TRIGGER << 32 };
	char detail[SP_TRIGGERS_DETAIL_MAX];
	const char *trigger;
	int fd;

	if (!r->triggers || r->failed)
		return;
	if (upto > now)
		upto = now;
	trigger = sp_triggers_tick(r->triggers, upto, sp_writer_defs(r->w), detail, sizeof(detail));
	if (trigger)
		sp_recorder_fire(r, trigger, detail, upto);
	trigger = sp_triggers_cmd_poll(r->triggers, now, detail, sizeof(detail));
	if (trigger)
		sp_recorder_fire(r, trigger, detail, now);
	fd = sp_triggers_cmd_fd(r->triggers);
	if (fd >= 0 && epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST)
		sp_warn("epoll_ctl: the trigger command's output: %s", strerror(errno));
}

void sp_recorder_run(struct sp_recorder *r)
{
	uint64_t now, next_batch, deadline, watermark, wake;
	bool dump_due;

	if (r->status != SP_EXIT_OK)
		return;
	deadline = r->o.duration_ns ? sp_now_mono_ns() + r->o.duration_ns : UINT64_MAX;
	next_batch = sp_now_mono_ns() + r->o.batch_ns;
	while (!r->stop) {
		wake = next_batch < deadline ? next_batch : deadline;
		if (r->triggers && sp_triggers_cmd_deadline(r->triggers) < wake)
			wake = sp_triggers_cmd_deadline(r->triggers);
		if (r->fl && sp_flight_due(r->fl) < wake)
			wake = sp_flight_due(r->fl);
		wait_events(r, wake);
		watermark = poll_sources(r);
		now = sp_now_mono_ns();
		dump_due = r->fl && now >= sp_flight_due(r->fl);
		/* A source lets out only what it read a pass before (a ring's
		 * records are complete up to its previous pass): for a dump a
		 * second pass at once, or with a long --batch and quiet rings
		 * the dump had nothing since the last wake-up. */
		if (dump_due)
			watermark = poll_sources(r);
		/* A dump that is due is a batch of its own: the trigger's
		 * latency is not the rest of the batch interval. */
		if (write_batch(r, watermark, now >= next_batch || dump_due)) {
			r->reason = SP_ENDR_ERROR;
			r->stop = true;
		}
		poll_triggers(r, now, watermark);
		if (now >= next_batch)
			next_batch = now + r->o.batch_ns;
		if (r->npidfds && r->nexited == r->npidfds) {
			if (r->reason != SP_ENDR_SIGNAL)
				r->reason = SP_ENDR_EXITED;
			r->stop = true;
		}
		if (now >= deadline) {
			r->reason = SP_ENDR_DURATION;
			r->stop = true;
		}
	}
}

/* ---- the end ---- */

void sp_recorder_end(struct sp_recorder *r)
{
	struct sp_emit em = { r->w, sp_merge_add, r->merge };
	struct sp_record end = { .kind = SP_REC_END };
	unsigned int i;

	for (i = 0; i < r->nsrc; i++) {
		struct sp_source *s = r->src[i].s;

		if (!r->failed && s->finish(s, &em))
			r->reason = SP_ENDR_ERROR;
	}
	if (r->launched && r->status == SP_EXIT_OK && sp_launch_reap(&r->cmd, false))
		r->child_status = sp_launch_exit_code(r->cmd.wstatus);
	end.end.time = sp_now_mono_ns();
	end.end.reason = r->reason;
	end.end.status = r->child_status >= 0 ? (uint64_t)r->child_status : 0;
	if (!r->failed && write_batch(r, UINT64_MAX, false) == 0) {
		end.end.samples = r->samples;
		end.end.events = r->events;
		end.end.lost_samples = r->lost_samples;
		end.end.lost_events = r->lost_events;
		/* A flight window is written only by dumps: no end of its own. */
		if (r->fl && sp_flight_is_window(r->fl)) {
			if (sp_flight_finish(r->fl, end.end.time, &end.end))
				r->failed = true;
		} else if (sp_writer_put(r->w, &end) || write_batch(r, UINT64_MAX, false)) {
			r->failed = true;
		} else if (sp_flight_finish(r->fl, end.end.time, &end.end)) {
			output_failed(r);
		}
		if (r->fl)
			r->good = sp_flight_bytes(r->fl);
	}
}

void sp_recorder_fire(struct sp_recorder *r, const char *trigger, const char *detail,
		      uint64_t mono_ns)
{
	if (!r->fl || !sp_flight_is_window(r->fl)) {
		if (!r->fire_warned)
			sp_warn("trigger '%s' ignored: no --flight window to dump (said once)",
				trigger);
		r->fire_warned = true;
		return;
	}
	sp_flight_fire(r->fl, trigger, detail, mono_ns);
}

/* The summaries, before the sources go. */
static void print_summaries(struct sp_recorder *r)
{
	struct sp_source *offcpu = sp_recorder_source(r, SP_SOURCE_OFFCPU);

	struct sp_stackq_summary qs = { 0 };

	/* How complete the stacks are, with hints: with -v; for DWARF/auto
	 * when asked for, when more than 5% of the stacks are not, or when
	 * some are guesses (left through a frame pointer). */
	if (r->stackq)
		sp_stackq_summary(r->stackq, &qs);
	if (r->stackq && !r->failed &&
	    (sp_verbose || (r->o.call_graph >= SP_CG_DWARF &&
			    (r->o.stack_summary || qs.fp_guess ||
			     (qs.assessed && qs.complete_share < 0.95)))))
		sp_stackq_print(r->stackq, stderr, "sp-record: ", 3);
	if (offcpu && !r->failed)
		sp_offcpu_print_summary(offcpu, stderr, "sp-record: ");
	if (r->fl && sp_verbose) {
		struct sp_segments_stats st;

		sp_segments_stats(sp_flight_segments(r->fl), &st);
		fprintf(stderr, "sp-record: id space: %" PRIu64 " definitions now, at most %"
			PRIu64 "; %" PRIu64 " compactions dropped %" PRIu64 "\n",
			sp_segments_master_size(sp_flight_segments(r->fl)), st.peak,
			st.compactions, st.dropped);
		fprintf(stderr, "sp-record: live set: %" PRIu64 " processes, %" PRIu64
			" threads, %" PRIu64 " modules replayed by each new stream\n",
			st.procs, st.threads, st.modules);
	}
}

/* The output failed and the command goes on without us: wait for it,
 * passing signals on. */
static void wait_command(struct sp_recorder *r)
{
	struct epoll_event ev;

	r->stop = false;
	while (!sp_launch_reap(&r->cmd, false) && !r->stop)
		if (epoll_wait(r->ep, &ev, 1, -1) == 1 && ev.data.u64 >> 32 == TAG_SIGNAL)
			on_signal(r);
}

/* The command's exit status, once the recording is well over. */
static int command_status(struct sp_recorder *r)
{
	if (r->child_status < 0 &&
	    sp_launch_reap(&r->cmd, r->reason != SP_ENDR_DURATION && r->reason != SP_ENDR_SIGNAL))
		r->child_status = sp_launch_exit_code(r->cmd.wstatus);
	if (r->child_status >= 0)
		return r->child_status;
	if (r->reason == SP_ENDR_SIGNAL)
		return 128 + r->last_signal;
	return SP_EXIT_OK;
}

/*
 * Samples lost, said with what helps for the rings that lost them: the
 * sampling rings' fill with the rate (-F) and the ring size (-m); the
 * off-CPU rings' with the context switches, which -F does not change: a
 * larger ring, or a smaller stack copy per switch-out.
 */
static void warn_lost(const struct sp_recorder *r, uint64_t offcpu_lost)
{
	uint64_t off = offcpu_lost < r->lost_samples ? offcpu_lost : r->lost_samples;
	uint64_t cpu = r->lost_samples - off;

	if (cpu)
		sp_warn("%llu samples lost (the ring buffers overflowed: try -m or a lower -F)",
			(unsigned long long)cpu);
	if (off)
		sp_warn("%llu off-CPU switch records lost (the off-CPU ring buffers overflowed: "
			"try -m%s; -F does not change them)", (unsigned long long)off,
			r->o.call_graph >= SP_CG_DWARF ?
			", or --call-graph=fp to copy no user stack at a switch" : "");
}

int sp_recorder_report(struct sp_recorder *r)
{
	struct sp_source *perf = sp_recorder_source(r, SP_SOURCE_PERF);
	struct sp_source *offcpu = sp_recorder_source(r, SP_SOURCE_OFFCPU);
	struct sp_offcpu_stats ost = { 0 };
	struct sp_perf_stats pst = { 0 };
	int status = r->status;
	unsigned int i;

	if (perf)
		sp_perf_source_stats(perf, &pst);
	if (offcpu)
		sp_offcpu_source_stats(offcpu, &ost);
	print_summaries(r);
	sp_stackq_free(r->stackq);
	r->stackq = NULL;
	for (i = 0; i < r->nsrc; i++)
		r->src[i].s->free(r->src[i].s);
	r->nsrc = 0;
	sp_writer_close(r->w);
	r->w = NULL;
	sp_merge_free(r->merge);
	r->merge = NULL;

	if (r->closed) {
		/* Nobody reads what we record: the command goes on without us
		 * (its held processes were let go by the sources' free). */
		status = SP_RECORDER_EXIT_OUTPUT_CLOSED;
	} else if (r->failed) {
		status = SP_EXIT_FATAL;
		if (r->launched && !r->cmd.reaped)
			wait_command(r);
	} else if (status == SP_EXIT_OK && r->reason != SP_ENDR_ERROR) {
		sp_info("%llu samples, %llu lost, %llu processes, %llu bytes to '%s'; "
			"sp-record used %.3f s of CPU",
			(unsigned long long)r->samples, (unsigned long long)r->lost_samples,
			(unsigned long long)pst.processes, (unsigned long long)r->good, r->name,
			(double)sp_now_cpu_ns() / 1e9);
		warn_lost(r, ost.lost);
	} else if (status == SP_EXIT_OK) {
		status = SP_EXIT_FATAL;
	}
	if (r->launched && status == SP_EXIT_OK)
		status = command_status(r);
	r->status = status;
	return status;
}

void sp_recorder_free(struct sp_recorder *r)
{
	unsigned int i;

	if (!r)
		return;
	sp_stackq_free(r->stackq);
	sp_triggers_free(r->triggers);	/* kills a trigger command still running */
	for (i = 0; i < r->nsrc; i++)
		r->src[i].s->free(r->src[i].s);
	sp_writer_close(r->w);
	sp_flight_free(r->fl);
	sp_merge_free(r->merge);
	sp_launch_release(&r->cmd);
	for (i = 0; i < r->npins; i++)
		sp_proc_pin_close(&r->pins[i]);
	if (r->sigfd >= 0)
		close(r->sigfd);
	if (r->ep >= 0)
		close(r->ep);
	if (r->fd >= 0 && r->o.common && r->fd != fileno(r->o.common->out))
		close(r->fd);
	free(r->command);
	free(r);
}
