// SPDX-License-Identifier: MIT
/* sp-flame - folded stacks, flame graphs, differences and viewer exports. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "annotate.h"
#include "correlate.h"
#include "export.h"
#include "flame.h"
#include "folded_text.h"
#include "reader.h"
#include "sp.h"
#include "spill.h"

/* A function's share grew by more than --fail-above. */
#define SP_FLAME_EXIT_REGRESSION 3
#define MAX_LIST 64

enum fmt { FMT_FOLDED, FMT_SVG, FMT_SPEEDSCOPE, FMT_PPROF, FMT_CHROME, FMT_LINES };

enum {
	OPT_FOLDED = 0x100, OPT_SVG, OPT_SPEEDSCOPE, OPT_PPROF, OPT_CHROME, OPT_DIFF, OPT_DIFF_ALL,
	OPT_FAIL_ABOVE, OPT_BY, OPT_NO_INLINE, OPT_NO_ADDRESSES, OPT_OFF_CPU, OPT_WEIGHT,
	OPT_COMM, OPT_SINCE, OPT_UNTIL, OPT_TITLE, OPT_SUBTITLE, OPT_WIDTH, OPT_FLAMECHART,
	OPT_INVERTED, OPT_QUIET, OPT_TOP, OPT_FOLD_RUNTIME, OPT_LINES,
};

static struct env {
	struct sp_common_opts common;
	enum fmt fmt;
	bool diff, diff_all, quiet, flamechart, inverted;
	bool has_fail_above;
	double fail_above;
	unsigned int top;
	struct sp_flame_opts fo;
	uint64_t pids[MAX_LIST], tids[MAX_LIST];
	char *comms[MAX_LIST];
	const char *title, *subtitle;
	const char *lines;	/* --lines: the function */
	uint64_t width;
} env = { .top = 10, .width = 1200 };

static const char doc[] =
	"Aggregate sampled stacks into folded stacks, an interactive SVG flame graph, a\n"
	"difference between two recordings, or files for speedscope, pprof and Perfetto.\v"
	"Reads spool or JSON lines from each FILE (a directory: its segments in order), or stdin if none or '-'; a named file of\n"
	"folded stacks (\"a;b;c 12\" lines) is read as such. Folded output is sorted and\n"
	"deterministic; a line on stderr says how many stacks look broken.\n\n"
	"Examples:\n"
	"  sp-symbolize run.sp | sp-flame > run.folded\n"
	"  sp-flame --svg --by=thread -o run.svg run.sym.sp\n"
	"  sp-flame --diff --fail-above=5 base.sp new.sp\n"
	"  sp-flame --pprof -o run.pb.gz run.sym.sp && pprof -top run.pb.gz\n"
	"  sp-flame -q --lines=hash_token run.sym.sp\n\n"
	"Exit status: 0 ok, 1 some records skipped (the first 5 of a kind each named, the rest counted), 2 fatal, 3 a function's "
	"share grew by more than --fail-above, 64 usage.";

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Output:", 1 },
	{ "folded", OPT_FOLDED, NULL, 0, "Folded stacks, one line per distinct stack (default)", 1 },
	{ "svg", OPT_SVG, NULL, 0, "A standalone interactive SVG flame graph", 1 },
	{ "speedscope", OPT_SPEEDSCOPE, NULL, 0,
	  "speedscope JSON: sampled profile per thread, spans as evented profiles", 1 },
	{ "pprof", OPT_PPROF, NULL, 0, "pprof: gzip-compressed profile.proto", 1 },
	{ "chrome", OPT_CHROME, NULL, 0,
	  "Chrome trace event JSON (Perfetto): spans and kernel events", 1 },
	{ "format", 'f', "FMT", 0, "folded, svg, speedscope, pprof or chrome", 1 },
	{ "lines", OPT_LINES, "FUNCTION", 0,
	  "FUNCTION's samples by source line, with the source text (as perf annotate)", 1 },
	{ NULL, 0, NULL, 0, "Differences:", 2 },
	{ "diff", OPT_DIFF, NULL, 0,
	  "Compare two inputs, BASE and NEW: folded differences (\"stack base new\", base "
	  "scaled to NEW's total) or, with --svg, a red/blue differential flame graph", 2 },
	{ "diff-all", OPT_DIFF_ALL, NULL, 0, "With --diff: list unchanged stacks too", 2 },
	{ "fail-above", OPT_FAIL_ABOVE, "PCT", 0,
	  "With --diff: exit 3 if a function's share grew by more than PCT points", 2 },
	{ "top", OPT_TOP, "N", 0, "With --diff: summarise the N largest changes (default 10)", 2 },
	{ NULL, 0, NULL, 0, "Stacks:", 3 },
	{ "by", OPT_BY, "WHAT", 0,
	  "Prefix stacks by container (runtime:id, or host), process (comm-pid), thread "
	  "(name-tid) and/or span, comma-separated",
	  3 },
	{ "annotate", 'a', NULL, 0, "Mark kernel frames _[k], inlined _[i], JIT _[j]", 3 },
	{ "no-inline", OPT_NO_INLINE, NULL, 0, "Leave out inlined functions", 3 },
	{ "fold-runtime", OPT_FOLD_RUNTIME, NULL, 0,
	  "Leave out the runtimes' glue: CPython's and Ruby's call paths, their tracing "
	  "and the span hooks, the C runtime's first frames (docs/sp-flame.md lists them)", 3 },
	{ "no-addresses", OPT_NO_ADDRESSES, NULL, 0,
	  "Unresolved frames as [module] instead of module+0xoffset", 3 },
	{ "off-cpu", OPT_OFF_CPU, NULL, 0, "Off-CPU samples instead of CPU samples", 3 },
	{ "weight", OPT_WEIGHT, "UNIT", 0, "samples (default) or time (nanoseconds)", 3 },
	{ NULL, 0, NULL, 0, "Filters (repeat or comma-separate a list):", 4 },
	{ "pid", 'p', "PID", 0, "Only these processes", 4 },
	{ "tid", 't', "TID", 0, "Only these threads", 4 },
	{ "comm", OPT_COMM, "NAME", 0, "Only processes with this command name", 4 },
	{ "since", OPT_SINCE, "TIME", 0, "Only samples at least TIME after the start (1.5s, 200ms)",
	  4 },
	{ "until", OPT_UNTIL, "TIME", 0, "Only samples less than TIME after the start", 4 },
	{ NULL, 0, NULL, 0, "SVG:", 5 },
	{ "title", OPT_TITLE, "TEXT", 0, "Title (default \"Flame Graph\")", 5 },
	{ "subtitle", OPT_SUBTITLE, "TEXT", 0, "Subtitle (default: what was recorded)", 5 },
	{ "width", OPT_WIDTH, "PX", 0, "Width in pixels (default 1200)", 5 },
	{ "flamechart", OPT_FLAMECHART, NULL, 0, "Order by time, not by name (a flame chart)", 5 },
	{ "inverted", OPT_INVERTED, NULL, 0, "Icicle graph: the root at the top", 5 },
	{ "quiet", 'q', NULL, 0, "No footer line on stderr", 5 },
	{ 0 }
};

static void parse_ids(struct argp_state *state, char *arg, uint64_t *v, unsigned int *n,
		      const char *what)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n >= MAX_LIST)
			argp_error(state, "at most %d values for --%s", MAX_LIST, what);
		if (sp_parse_uint(tok, 0, UINT32_MAX, &v[*n]))
			argp_error(state, "invalid --%s '%s'", what, tok);
		(*n)++;
	}
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	char *save = NULL, *tok, *end;
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		break;
	case OPT_FOLDED:
		env.fmt = FMT_FOLDED;
		break;
	case OPT_SVG:
		env.fmt = FMT_SVG;
		break;
	case OPT_SPEEDSCOPE:
		env.fmt = FMT_SPEEDSCOPE;
		break;
	case OPT_PPROF:
		env.fmt = FMT_PPROF;
		break;
	case OPT_CHROME:
		env.fmt = FMT_CHROME;
		break;
	case OPT_LINES:
		if (!*arg)
			argp_error(state, "--lines needs a function name");
		env.fmt = FMT_LINES;
		env.lines = arg;
		break;
	case 'f':
		if (!strcmp(arg, "folded"))
			env.fmt = FMT_FOLDED;
		else if (!strcmp(arg, "svg"))
			env.fmt = FMT_SVG;
		else if (!strcmp(arg, "speedscope"))
			env.fmt = FMT_SPEEDSCOPE;
		else if (!strcmp(arg, "pprof"))
			env.fmt = FMT_PPROF;
		else if (!strcmp(arg, "chrome"))
			env.fmt = FMT_CHROME;
		else
			argp_error(state, "invalid --format '%s': use folded, svg, speedscope, pprof "
				   "or chrome", arg);
		break;
	case OPT_DIFF:
		env.diff = true;
		env.fo.unknown_unnamed = true;	/* run-specific addresses never match */
		break;
	case OPT_DIFF_ALL:
		env.diff_all = true;
		break;
	case OPT_FAIL_ABOVE:
		errno = 0;
		env.fail_above = strtod(arg, &end);
		if (errno || end == arg || *end || !(env.fail_above >= 0) || env.fail_above > 100)
			argp_error(state, "invalid --fail-above '%s': a percentage from 0 to 100", arg);
		env.has_fail_above = true;
		break;
	case OPT_TOP:
		if (sp_parse_uint(arg, 0, 10000, &v))
			argp_error(state, "invalid --top '%s'", arg);
		env.top = v;
		break;
	case OPT_BY:
		for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "process") || !strcmp(tok, "pid"))
				env.fo.by |= SP_FLAME_BY_PROCESS;
			else if (!strcmp(tok, "thread") || !strcmp(tok, "tid"))
				env.fo.by |= SP_FLAME_BY_THREAD;
			else if (!strcmp(tok, "span"))
				env.fo.by |= SP_FLAME_BY_SPAN;
			else if (!strcmp(tok, "container"))
				env.fo.by |= SP_FLAME_BY_CONTAINER;
			else
				argp_error(state, "invalid --by '%s': use container, process, thread or "
					   "span", tok);
		}
		break;
	case 'a':
		env.fo.annotate = true;
		break;
	case OPT_NO_INLINE:
		env.fo.no_inline = true;
		break;
	case OPT_FOLD_RUNTIME:
		env.fo.fold_runtime = true;
		break;
	case OPT_NO_ADDRESSES:
		env.fo.no_addresses = true;
		break;
	case OPT_OFF_CPU:
		env.fo.off_cpu = true;
		break;
	case OPT_WEIGHT:
		if (!strcmp(arg, "samples"))
			env.fo.weight = SP_FLAME_W_SAMPLES;
		else if (!strcmp(arg, "time"))
			env.fo.weight = SP_FLAME_W_TIME;
		else
			argp_error(state, "invalid --weight '%s': use samples or time", arg);
		break;
	case 'p':
		parse_ids(state, arg, env.pids, &env.fo.npids, "pid");
		break;
	case 't':
		parse_ids(state, arg, env.tids, &env.fo.ntids, "tid");
		break;
	case OPT_COMM:
		for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (env.fo.ncomms >= MAX_LIST)
				argp_error(state, "at most %d values for --comm", MAX_LIST);
			env.comms[env.fo.ncomms++] = tok;
		}
		break;
	case OPT_SINCE:
		if (sp_parse_duration(arg, &env.fo.since))
			argp_error(state, "invalid --since '%s'", arg);
		break;
	case OPT_UNTIL:
		if (sp_parse_duration(arg, &env.fo.until) || !env.fo.until)
			argp_error(state, "invalid --until '%s'", arg);
		break;
	case OPT_TITLE:
		env.title = arg;
		break;
	case OPT_SUBTITLE:
		env.subtitle = arg;
		break;
	case OPT_WIDTH:
		if (sp_parse_uint(arg, 200, 100000, &env.width))
			argp_error(state, "invalid --width '%s': 200 to 100000", arg);
		break;
	case OPT_FLAMECHART:
		env.flamechart = true;
		break;
	case OPT_INVERTED:
		env.inverted = true;
		break;
	case 'q':
		env.quiet = true;
		break;
	case ARGP_KEY_SUCCESS:	/* ARGP_KEY_END is not seen when FILEs are given */
		if (env.diff && env.fmt != FMT_FOLDED && env.fmt != FMT_SVG)
			argp_error(state, "--diff writes folded differences or --svg");
		if (env.fmt != FMT_LINES)
			env.lines = NULL;	/* a later output option won */
		if (!env.diff && (env.has_fail_above || env.diff_all))
			argp_error(state, "--fail-above and --diff-all need --diff");
		if (env.diff && env.flamechart)
			argp_error(state, "--flamechart cannot be combined with --diff");
		if (env.fo.until && env.fo.until <= env.fo.since)
			argp_error(state, "--until must be later than --since");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* A file whose first line is "frames count" text, not records: read from
 * its start without moving its offset. */
static bool looks_folded_fd(int fd)
{
	unsigned char buf[4096];
	ssize_t r = pread(fd, buf, sizeof(buf), 0);

	return sp_looks_folded(buf, r > 0 ? (size_t)r : 0);
}

static bool looks_folded(const char *path)
{
	int fd;
	bool folded;

	if (!strcmp(path, "-"))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	folded = looks_folded_fd(fd);
	close(fd);
	return folded;
}

/* Folded stacks from in (named path), which is closed. */
static int read_folded_from(struct sp_folded *f, FILE *in, const char *path)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int status = SP_EXIT_OK;

	while ((len = getline(&line, &cap, in)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			len--;
		if (!len || line[0] == '#')
			continue;
		if (sp_folded_add_line(f, line, len) < 0) {
			sp_warn("%s:%zu: not a folded stack line (\"frame;frame count\"), skipped",
				path, lineno);
			status = SP_EXIT_PARTIAL;
		}
	}
	if (ferror(in)) {
		sp_error_errno("cannot read '%s'", path);
		status = SP_EXIT_FATAL;
	}
	free(line);
	fclose(in);
	return status;
}

static int read_folded(struct sp_folded *f, const char *path)
{
	FILE *in = fopen(path, "r");

	if (!in) {
		sp_error_errno("cannot open '%s'", path);
		return SP_EXIT_FATAL;
	}
	return read_folded_from(f, in, path);
}

struct sinks {
	struct sp_folded *fold;
	struct sp_pprof *pprof;
	struct sp_chrome *chrome;
	struct sp_annotate *ann;
	struct sp_reader *in;
};

/* One record to every output (k: struct sinks); -1 to stop (a failed write). */
static int take(void *ctx, const struct sp_defs *d, const struct sp_record *rec)
{
	struct sinks *k = ctx;
	const char *why = NULL;
	uint64_t ns;
	int r;

	r = sp_folded_add(k->fold, d, rec, &why);
	if (r == SP_FOLDED_BAD) {
		sp_reader_skipped(k->in, rec, "%s", why);
		return 0;
	}
	if (k->pprof && (r == SP_FOLDED_TAKEN || rec->kind != SP_REC_SAMPLE)) {
		ns = rec->kind != SP_REC_SAMPLE ? 0 :
		     rec->sample.kind == SP_SAMPLE_OFFCPU ? rec->sample.weight :
		     (rec->sample.weight ? rec->sample.weight : 1) * sp_folded_period_ns(k->fold);
		sp_pprof_add(k->pprof, d, rec, ns);
	}
	if (k->ann && r == SP_FOLDED_TAKEN)
		sp_annotate_add(k->ann, d, &rec->sample);
	if (k->chrome && sp_chrome_add(k->chrome, d, rec) < 0)
		return -1;
	return 0;
}

/* The records of k->in, closed at the end. */
static int read_records_in(struct sinks *k)
{
	struct sp_record rec;
	int rc = 0;

	/* Spans for --by=span: a stream sp-correlate has not seen is
	 * correlated on the fly, as sp-tree does. */
	if (env.fo.by & SP_FLAME_BY_SPAN)
		sp_corr_read(k->in, NULL, take, k, NULL);
	else
		while (rc == 0 && sp_reader_next(k->in, &rec) > 0)
			rc = take(k, sp_reader_defs(k->in), &rec);
	return sp_reader_close(k->in);
}

static int read_records(struct sinks *k, char **paths, int n)
{
	k->in = sp_reader_open(paths, n);
	return k->in ? read_records_in(k) : SP_EXIT_FATAL;
}

/* A stream (a FIFO, <(...)), kept whole in fd: folded stacks or records. */
static int read_stream(struct sinks *k, int fd, const char *path)
{
	FILE *in;
	int status;

	if (!looks_folded_fd(fd)) {
		k->in = sp_reader_open_fd(fd, path);
		status = read_records_in(k);
		close(fd);
		return status;
	}
	in = fdopen(fd, "r");
	if (!in) {
		sp_error_errno("cannot read '%s'", path);
		close(fd);
		return SP_EXIT_FATAL;
	}
	return read_folded_from(k->fold, in, path);
}

static int read_input(struct sinks *k, char **paths, int n)
{
	int status = SP_EXIT_OK, i, first = 0, fd = -2;

	/* Runs of record files go through one reader; folded files and
	 * streams (read once: kept in a temporary file to tell their format)
	 * on their own. */
	for (i = 0; i <= n; i++) {
		if (i < n) {
			fd = sp_spill_stream(paths[i]);
			if (fd == -2 && !looks_folded(paths[i]))
				continue;
		}
		if (i > first)
			status = sp_status_merge(status, read_records(k, paths + first, i - first));
		if (i < n && fd == -1)
			status = sp_status_merge(status, SP_EXIT_FATAL);
		else if (i < n && fd >= 0)
			status = sp_status_merge(status, read_stream(k, fd, paths[i]));
		else if (i < n)
			status = sp_status_merge(status, read_folded(k->fold, paths[i]));
		first = i + 1;
	}
	if (!n)
		status = read_records(k, NULL, 0);
	return status;
}

static int diff_summary(const struct sp_folded *f, const struct sp_flame_paths *p)
{
	size_t n, i;
	struct sp_flame_change *c = sp_flame_changes(f, p, &n);
	int status = SP_EXIT_OK;
	double worst = 0;
	size_t wi = 0;

	for (i = 0; i < n; i++) {
		double d = c[i].new_pct - c[i].base_pct;

		if (d > worst) {
			worst = d;
			wi = i;
		}
	}
	if (!env.quiet && env.top) {
		fprintf(stderr, "%s: largest changes of inclusive share (base %" PRIu64
			" -> new %" PRIu64 "):\n", sp_progname, p->total[0], p->total[1]);
		for (i = 0; i < n && i < env.top; i++) {
			if (fabs(c[i].new_pct - c[i].base_pct) < 0.005)
				break;
			fprintf(stderr, "  %+7.2f points  %6.2f%% -> %6.2f%%  ",
				c[i].new_pct - c[i].base_pct, c[i].base_pct, c[i].new_pct);
			sp_folded_put_name(stderr, sp_folded_name(f, c[i].name, NULL));
			putc('\n', stderr);
		}
		if (!i)
			fprintf(stderr, "  no change\n");
	}
	if (env.has_fail_above && n && worst > env.fail_above) {
		fprintf(stderr, "%s: error: '", sp_progname);
		sp_folded_put_name(stderr, sp_folded_name(f, c[wi].name, NULL));
		fprintf(stderr, "' grew by %.2f points (%.2f%% -> %.2f%%), above --fail-above=%g\n",
			worst, c[wi].base_pct, c[wi].new_pct, env.fail_above);
		status = SP_FLAME_EXIT_REGRESSION;
	}
	free(c);
	return status;
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]\n--diff BASE NEW", .doc = doc,
	};
	struct sinks k = { 0 };
	struct sp_flame_paths paths = { 0 };
	struct sp_svg_opts so = { 0 };
	char footer[512], subtitle[768];
	const struct sp_flame_stats *st;
	int first, status = SP_EXIT_OK, rc = 0, verdict = SP_EXIT_OK;
	FILE *out;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	if (env.diff && argc - first != 2) {
		sp_error("--diff takes two inputs, BASE and NEW (see --help)");
		return SP_EXIT_USAGE;
	}
	if (env.fmt == FMT_PPROF && env.common.out_is_tty) {
		sp_error("refusing to write a gzip-compressed pprof profile to a terminal: use -o "
			 "FILE or a pipe");
		return SP_EXIT_USAGE;
	}
	out = env.common.out;
	env.fo.pids = env.pids;
	env.fo.tids = env.tids;
	env.fo.comms = env.comms;
	if (env.fmt == FMT_SPEEDSCOPE) {
		env.fo.keep_sequence = true;
		env.fo.keep_spans = true;
		env.fo.keep_source = true;	/* frames with file and line */
		env.fo.by = 0;	/* one profile per thread instead */
	}
	if (env.flamechart)
		env.fo.keep_sequence = true;
	k.fold = sp_folded_new(&env.fo);
	if (env.fmt == FMT_PPROF) {
		k.pprof = sp_pprof_new(env.fo.no_inline);
		sp_pprof_set_off_cpu(k.pprof, env.fo.off_cpu);
	}
	if (env.fmt == FMT_CHROME)
		k.chrome = sp_chrome_new(out);
	if (env.fmt == FMT_LINES)
		k.ann = sp_annotate_new(env.lines);

	if (env.diff) {
		status = read_input(&k, argv + first, 1);
		sp_folded_set_column(k.fold, 1);
		status = sp_status_merge(status, read_input(&k, argv + first + 1, 1));
	} else {
		status = read_input(&k, argv + first, argc - first);
	}

	st = sp_folded_stats(k.fold);
	sp_folded_footer(k.fold, footer, sizeof(footer));
	if (!st->samples[0] && !st->samples[1] && status != SP_EXIT_FATAL)
		sp_warn("no samples in the input%s", st->filtered ? " (all filtered out)" : "");
	else if (env.diff && status != SP_EXIT_FATAL && (!st->samples[0] || !st->samples[1]))
		sp_warn("no samples in %s", !st->samples[0] ? "BASE" : "NEW");

	switch (env.fmt) {
	case FMT_FOLDED:
	case FMT_SVG:
		sp_folded_paths(k.fold, env.flamechart, &paths);
		if (env.diff)
			verdict = diff_summary(k.fold, &paths);
		if (env.fmt == FMT_FOLDED && env.diff) {
			rc = sp_flame_diff_print(k.fold, &paths, out, env.diff_all);
		} else if (env.fmt == FMT_FOLDED) {
			rc = sp_folded_print(k.fold, &paths, out, false);
		} else {
			const char *desc = sp_folded_describe(k.fold);

			if (env.diff)
				snprintf(subtitle, sizeof(subtitle), "%s -> %s: red grew, blue shrank "
					 "(widths: new, normalised by total)", argv[first],
					 argv[first + 1]);
			else
				snprintf(subtitle, sizeof(subtitle), "%s", desc);
			so.title = env.title;
			so.subtitle = env.subtitle ? env.subtitle : subtitle;
			so.footer = footer;
			so.width = env.width;
			so.inverted = env.inverted;
			so.flamechart = env.flamechart;
			so.diff = env.diff;
			so.unit = env.fo.weight == SP_FLAME_W_TIME ? "ns" : "samples";
			rc = sp_flame_svg(k.fold, &paths, &so, out);
		}
		sp_flame_paths_release(&paths);
		break;
	case FMT_SPEEDSCOPE:
		rc = sp_speedscope_write(k.fold, *sp_folded_describe(k.fold) ?
					 sp_folded_describe(k.fold) : "sp-flame", out);
		break;
	case FMT_PPROF:
		rc = sp_pprof_write(k.pprof, out, sp_folded_period_ns(k.fold),
				    sp_folded_describe(k.fold));
		break;
	case FMT_CHROME:
		rc = sp_chrome_finish(k.chrome);
		k.chrome = NULL;
		break;
	case FMT_LINES:
		rc = sp_annotate_print(k.ann, out);	/* warns when nothing matched */
		break;
	}
	if (rc < 0)
		status = SP_EXIT_FATAL;	/* sp_close_output() names the failed write */
	if (!env.quiet && *footer)
		fprintf(stderr, "%s: %s\n", sp_progname, footer);
	sp_pprof_free(k.pprof);
	sp_annotate_free(k.ann);
	sp_folded_free(k.fold);
	status = sp_close_output(&env.common, status);
	if (status == SP_EXIT_OK && verdict)
		status = verdict;
	return status;
}
