// SPDX-License-Identifier: MIT
/* sp-decode - turn a spool into JSON lines and back, follow a growing spool. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perfdata.h"
#include "reader.h"
#include "sp.h"
#include "stackquality.h"
#include "stats.h"
#include "writer.h"

enum {
	OPT_NO_FRAMES = 0x100,
	OPT_NO_DEFS,
	OPT_DISCARD,
	OPT_FORMAT,
	OPT_STATS_JSON,
	OPT_SCHEMA,
	OPT_FROM,
	OPT_PERF_EVENT,
	OPT_NO_UNWIND,
};

static struct env {
	struct sp_common_opts common;
	enum sp_format format;
	bool follow, discard, stats, stats_json;
	bool from_perf;
	struct sp_perfdata_opts perf;
	unsigned int json_flags;
} env;

static const char doc[] = "Turn a spool into JSON lines, JSON lines into a spool, or summarise either; "
	"import a perf.data file.\v"
	"Reads spool or JSON lines from each FILE (a directory: its segments in order), or stdin if none or '-'. The output is JSON "
	"lines unless --encode or --format=spool is given; a spool is never written to a terminal. "
	"With --from=perf, FILE is one perf.data (file or pipe mode, '-' for stdin) and "
	"becomes a stream.\n\n"
	"Examples:\n"
	"  sp-decode run.sp | jq -c 'select(.type==\"sample\") | .frames[0].func'\n"
	"  sp-decode run.sp | sp-decode --encode -o copy.sp     # lossless round trip\n"
	"  sp-decode --stats run.sp\n"
	"  rm -f live.sp; sp-record -o live.sp -- ./app & sp-decode --follow live.sp\n"
	"  sp-decode --from=perf -e -o run.sp perf.data && sp-symbolize run.sp | sp-flame\n"
	"  perf record -g -o - -- ./app | sp-decode --from=perf -e -o run.sp -\n\n"
	SP_EXIT_STATUS_DOC;

static const struct argp_option options[] = {
	{ "encode", 'e', NULL, 0, "Write a spool (same as --format=spool)", 0 },
	{ "format", OPT_FORMAT, "FMT", 0, "Output format: json (default) or spool", 0 },
	{ "follow", 'f', NULL, 0, "Keep reading a growing file until its end record or SIGINT", 0 },
	{ "discard", OPT_DISCARD, NULL, 0,
	  "With --follow: punch holes in the part of FILE already read (frees disk)", 0 },
	{ "stats", 's', NULL, 0, "Print a summary instead of the records", 0 },
	{ "stats-json", OPT_STATS_JSON, NULL, 0, "Print the summary as one JSON object", 0 },
	{ "schema", OPT_SCHEMA, NULL, 0, "Print the record schema as markdown tables and exit", 0 },
	{ "no-frames", OPT_NO_FRAMES, NULL, 0, "JSON: samples without their inline frames", 0 },
	{ "no-defs", OPT_NO_DEFS, NULL, 0,
	  "JSON: leave out string, frame, stack and symbol lines (not re-encodable)", 0 },
	{ "from", OPT_FROM, "FMT", 0, "Read FILE as FMT: perf (a perf.data file)", 0 },
	{ "perf-event", OPT_PERF_EVENT, "NAME", 0,
	  "With --from=perf: the event whose samples to import (default: the first)", 0 },
	{ "no-unwind", OPT_NO_UNWIND, NULL, 0,
	  "With --from=perf: leave --call-graph=dwarf user stacks out, not unwound", 0 },
	{ 0 }
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		break;
	case 'e':
		env.format = SP_FORMAT_SPOOL;
		break;
	case OPT_FORMAT:
		if (sp_parse_format(arg, &env.format))
			argp_error(state, "invalid format '%s': use spool or json", arg);
		break;
	case 'f':
		env.follow = true;
		break;
	case OPT_DISCARD:
		env.discard = true;
		break;
	case 's':
		env.stats = true;
		break;
	case OPT_STATS_JSON:
		env.stats = env.stats_json = true;
		break;
	case OPT_SCHEMA:
		sp_schema_print_markdown(stdout);
		exit(fflush(stdout) ? SP_EXIT_FATAL : SP_EXIT_OK);
	case OPT_NO_FRAMES:
		env.json_flags |= SP_JSON_NO_INLINE_FRAMES;
		break;
	case OPT_NO_DEFS:
		env.json_flags |= SP_JSON_NO_DEFS;
		break;
	case OPT_FROM:
		if (strcmp(arg, "perf"))
			argp_error(state, "invalid input format '%s': use perf", arg);
		env.from_perf = true;
		break;
	case OPT_PERF_EVENT:
		env.perf.event = arg;
		break;
	case OPT_NO_UNWIND:
		env.perf.no_unwind = true;
		break;
	case ARGP_KEY_SUCCESS:	/* ARGP_KEY_END is not seen when FILEs are given */
		if (env.discard && !env.follow)
			argp_error(state, "--discard needs --follow");
		if ((env.perf.event || env.perf.no_unwind) && !env.from_perf)
			argp_error(state, "--perf-event and --no-unwind need --from=perf");
		if (env.from_perf && (env.follow || state->next != state->argc - 1))
			argp_error(state, "--from=perf reads one FILE, without --follow");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static struct sp_reader *reader;
static volatile sig_atomic_t stopped;

static void on_signal(int sig)
{
	(void)sig;
	stopped = 1;
	if (reader)
		sp_reader_stop(reader);
}

static int decode(struct sp_writer *w)
{
	struct sp_record rec;

	while (sp_reader_next(reader, &rec) > 0) {
		if (sp_writer_put(w, &rec))
			return -1;
		/* End of a batch: let a live pipeline see it. */
		if (!sp_reader_more_available(reader) && sp_writer_flush(w))
			return -1;
	}
	return 0;
}

static void summarise(FILE *out)
{
	struct sp_stats stats;
	struct sp_record rec;

	struct sp_stackq *quality = sp_stackq_new();

	if (!quality)
		sp_die("out of memory");
	sp_stats_init(&stats);
	while (sp_reader_next(reader, &rec) > 0) {
		struct sp_defs *d = sp_reader_defs(reader);

		sp_stats_add(&stats, d, &rec);
		if (rec.kind == SP_REC_HEADER)
			sp_stackq_set_header(quality, sp_defs_header(d), d);
		else if (rec.kind == SP_REC_SAMPLE)
			sp_stackq_add_sample(quality, d, &rec.sample);
	}
	sp_stats_print(&stats, out, sp_reader_format(reader) == SP_FORMAT_SPOOL ?
		       sp_reader_bytes(reader) : 0, env.stats_json);
	/* How complete the stacks are, and what to do about the rest. */
	if (!env.stats_json)
		sp_stackq_print(quality, out, "", 3);
	sp_stackq_free(quality);
	sp_stats_release(&stats);
}

/*
 * --from=perf: import the perf.data into the output, or with --stats into a
 * spool in memory that the summary then reads, after the import's counts.
 */
static int from_perf(const char *path)
{
	struct sp_perfdata_stats st;
	struct sp_writer *w;
	int fd = -1, err, status;

	if (env.stats) {
		fd = memfd_create("sp-decode-perf", MFD_CLOEXEC);
		if (fd < 0)
			return sp_error_errno("cannot create a file in memory"), SP_EXIT_FATAL;
	} else {
		fflush(env.common.out);
	}
	w = sp_writer_new(fd >= 0 ? fd : fileno(env.common.out),
			  env.common.out_path ? env.common.out_path : "<stdout>",
			  fd >= 0 || env.format == SP_FORMAT_SPOOL ? SP_FORMAT_SPOOL : SP_FORMAT_JSON);
	if (!w)
		return SP_EXIT_FATAL;
	sp_writer_set_json_flags(w, env.json_flags);
	err = sp_perfdata_import(path, w, &env.perf, &st);
	err |= sp_writer_close(w);
	status = err ? SP_EXIT_FATAL : st.bad_samples ? SP_EXIT_PARTIAL : SP_EXIT_OK;
	if (fd < 0)
		return sp_close_output(&env.common, status);
	if (err && lseek(fd, 0, SEEK_END) == 0) {	/* said: nothing to sum up */
		close(fd);
		return sp_close_output(&env.common, status);
	}
	if (!env.stats_json)	/* the JSON summary stays one object */
		sp_perfdata_stats_print(&st, env.common.out);
	lseek(fd, 0, SEEK_SET);
	reader = sp_reader_open_fd(fd, path);
	if (!reader)
		return SP_EXIT_FATAL;
	summarise(env.common.out);
	status = sp_status_merge(status, sp_reader_close(reader));
	close(fd);
	return sp_close_output(&env.common, status);
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]", .doc = doc,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct sp_writer *w = NULL;
	int first, status, werr = 0;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	if (env.format == SP_FORMAT_SPOOL && !env.stats && env.common.out_is_tty) {
		sp_error("refusing to write a binary spool to a terminal: use -o FILE or a pipe");
		return SP_EXIT_USAGE;
	}
	if (env.from_perf)
		return from_perf(argv[first]);
	if (env.follow) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		/* the writer started a moment ago may not have made it yet */
		if (!sp_reader_await(argv + first, argc - first, &stopped))
			return SP_EXIT_OK;
	}
	reader = sp_reader_open(argv + first, argc - first);
	if (!reader)
		return SP_EXIT_FATAL;
	if (env.follow) {
		sp_reader_follow(reader, true, env.discard);
		if (stopped)	/* before the reader was there to be told */
			sp_reader_stop(reader);
	}
	if (env.stats) {
		summarise(env.common.out);
	} else {
		fflush(env.common.out);
		w = sp_writer_new(fileno(env.common.out),
				  env.common.out_path ? env.common.out_path : "<stdout>",
				  env.format == SP_FORMAT_SPOOL ? SP_FORMAT_SPOOL : SP_FORMAT_JSON);
		sp_writer_set_json_flags(w, env.json_flags);
		werr = decode(w);
		werr |= sp_writer_close(w);
	}
	status = sp_reader_close(reader);
	if (werr)
		status = SP_EXIT_FATAL;
	return sp_close_output(&env.common, status);
}
