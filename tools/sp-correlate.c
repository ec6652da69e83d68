// SPDX-License-Identifier: MIT
/* sp-correlate - build method spans and assign every event and sample to one. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "correlate.h"
#include "reader.h"
#include "sp.h"
#include "writer.h"

enum { OPT_FORMAT = 0x100, OPT_WINDOW, OPT_MAX_HELD, OPT_GAP_MAX, OPT_STATS };

static struct env {
	struct sp_common_opts common;
	enum sp_format format;
	struct sp_corr_opts corr;
	bool stats;
} env = {
	.corr = { .window_ns = SP_CORR_WINDOW_NS },
};

static const char doc[] = "Build method spans from span marks and assign every event and "
	"sample to the span that caused it.\v"
	"Reads spool or JSON lines from each FILE (a directory: its segments in order), or stdin if none or '-', and writes the "
	"records back with span records, each sample and event carrying its span and the rule "
	"that chose it (docs/correlate.md). The output is a spool, or JSON lines on a "
	"terminal or with --format=json.\n\n"
	"Examples:\n"
	"  sp-record -- ruby app.rb | sp-correlate | sp-tree\n"
	"  sp-correlate --format=json run.sp | jq -c 'select(.type==\"span\")'\n\n"
	SP_EXIT_STATUS_DOC;

static const struct argp_option options[] = {
	{ "format", OPT_FORMAT, "FMT", 0, "Output format: spool (default unless a terminal) or json", 0 },
	{ "window", OPT_WINDOW, "DURATION", 0,
	  "Reorder records up to DURATION apart (default 1ms; 0: take them as they come)", 0 },
	{ "max-held", OPT_MAX_HELD, "N", 0,
	  "Hold at most about N records in open spans; beyond, the oldest span tree is "
	  "written early (default 1048576)", 0 },
	{ "gap-max", OPT_GAP_MAX, "N", 0,
	  "Records per <no-span> gap span before a new one starts (default 4096)", 0 },
	{ "stats", OPT_STATS, NULL, 0, "Print what was correlated on standard error", 0 },
	{ 0 }
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		break;
	case OPT_FORMAT:
		if (sp_parse_format(arg, &env.format))
			argp_error(state, "invalid format '%s': use spool or json", arg);
		break;
	case OPT_WINDOW:
		if (!strcmp(arg, "0"))
			env.corr.window_ns = 0;
		else if (sp_parse_duration(arg, &env.corr.window_ns))
			argp_error(state, "invalid window '%s'", arg);
		break;
	case OPT_MAX_HELD:
		if (sp_parse_uint(arg, 16, 1ull << 40, &env.corr.max_held))
			argp_error(state, "invalid --max-held '%s': a number from 16", arg);
		break;
	case OPT_GAP_MAX:
		if (sp_parse_uint(arg, 1, 1ull << 40, &env.corr.gap_max))
			argp_error(state, "invalid --gap-max '%s': a number from 1", arg);
		break;
	case OPT_STATS:
		env.stats = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int put(void *ctx, const struct sp_record *rec)
{
	return sp_writer_put(ctx, rec);
}

/* The pids without a process record, by number: the first few. */
static void warn_unknown_pids(const struct sp_corr_stats *st)
{
	struct sp_buf b = SP_BUF_INIT;
	uint64_t i, n = st->unknown_pids < SP_CORR_PIDS_NAMED ? st->unknown_pids :
			SP_CORR_PIDS_NAMED;

	for (i = 0; i < n; i++)
		sp_buf_printf(&b, "%s%llu", i ? ", " : "", (unsigned long long)st->unknown_pid[i]);
	if (st->unknown_pids > n)
		sp_buf_printf(&b, " and %llu more", (unsigned long long)(st->unknown_pids - n));
	sp_warn("%llu pids had records but no process record before them: %s",
		(unsigned long long)st->unknown_pids, sp_buf_str(&b));
	sp_buf_release(&b);
}

/* Say what was unusual in the input; only broken references of a
 * correlated input drop records. */
static void report(const struct sp_corr_stats *st)
{
	static const struct {
		size_t off;
		const char *what;
	} warn[] = {
		{ offsetof(struct sp_corr_stats, stop_without_start),
		  "span stops matched no open span" },
		{ offsetof(struct sp_corr_stats, raise_without_span),
		  "raises came with no span open" },
		{ offsetof(struct sp_corr_stats, late),
		  "records came later than the reorder window (--window) allows" },
		{ offsetof(struct sp_corr_stats, pid_reuse),
		  "pids or tids were reused before their end was seen" },
		{ offsetof(struct sp_corr_stats, incomplete),
		  "spans overlap lost records (end: incomplete)" },
		{ offsetof(struct sp_corr_stats, early_flush),
		  "span trees were written before they closed (--max-held)" },
		{ offsetof(struct sp_corr_stats, bad_refs),
		  "records of the correlated input referred to spans not defined before "
		  "them (samples and events dropped, parents cut)" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(warn) / sizeof(warn[0]); i++) {
		uint64_t n = *(const uint64_t *)((const char *)st + warn[i].off);

		if (n)
			sp_warn("%llu %s", (unsigned long long)n, warn[i].what);
	}
	if (st->unknown_pids)
		warn_unknown_pids(st);
	if (!env.stats)
		return;
	fprintf(stderr, "%s: %llu records, %llu spans (%llu gaps), assigned: %llu thread, "
		"%llu fork, %llu gap; %llu unwound, %llu open at the end; %llu records of "
		"processes just after their end (their exit); %llu raises outside the methods "
		"--spans-match named\n", sp_progname,
		(unsigned long long)st->records, (unsigned long long)st->spans,
		(unsigned long long)st->gap_spans,
		(unsigned long long)st->assigned[SP_RULE_THREAD],
		(unsigned long long)st->assigned[SP_RULE_FORK],
		(unsigned long long)st->assigned[SP_RULE_GAP],
		(unsigned long long)st->unwound, (unsigned long long)st->open_at_end,
		(unsigned long long)st->after_end, (unsigned long long)st->raise_unmatched);
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]", .doc = doc,
	};
	struct sp_reader *in;
	struct sp_writer *w;
	struct sp_corr *c;
	struct sp_record rec;
	enum sp_format fmt;
	int first, status, werr = 0;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	fmt = env.format;
	if (fmt == SP_FORMAT_AUTO)
		fmt = env.common.out_is_tty ? SP_FORMAT_JSON : SP_FORMAT_SPOOL;
	if (fmt == SP_FORMAT_SPOOL && env.common.out_is_tty) {
		sp_error("refusing to write a binary spool to a terminal: use -o FILE or a pipe");
		return SP_EXIT_USAGE;
	}
	in = sp_reader_open(argv + first, argc - first);
	if (!in)
		return SP_EXIT_FATAL;
	fflush(env.common.out);
	w = sp_writer_new(fileno(env.common.out),
			  env.common.out_path ? env.common.out_path : "<stdout>", fmt);
	if (!w) {
		sp_reader_close(in);
		return SP_EXIT_FATAL;
	}
	c = sp_corr_new(&env.corr, put, w);
	while (sp_reader_next(in, &rec) > 0) {
		if (sp_corr_add(c, &rec)) {
			werr = 1;
			break;
		}
		/* End of a batch: let a live pipeline see what is done. */
		if (!sp_reader_more_available(in) && sp_writer_flush(w)) {
			werr = 1;
			break;
		}
	}
	if (!werr && sp_corr_finish(c))
		werr = 1;
	report(sp_corr_stats(c));
	sp_corr_free(c);
	if (sp_writer_close(w))
		werr = 1;
	status = sp_reader_close(in);
	if (werr)
		status = SP_EXIT_FATAL;
	return sp_close_output(&env.common, status);
}
