// SPDX-License-Identifier: MIT
/* sp-symbolize - add function names, source files and lines to recorded frames. */
#include <inttypes.h>
#include <signal.h>
#include <unistd.h>

#include "reader.h"
#include "sp.h"
#include "symbolize.h"
#include "symstream.h"
#include "writer.h"

enum {
	OPT_FORMAT = 0x1000,
	OPT_DEBUG_DIR,
	OPT_SYSROOT,
	OPT_IMAGE_DIR,
	OPT_ARCHIVE,
	OPT_NO_DEMANGLE,
	OPT_NO_INLINE,
	OPT_NO_SYSTEM_DEBUG,
	OPT_INDEX_ALL,
	OPT_CACHE_DIR,
	OPT_NO_CACHE,
	OPT_NO_DEBUGINFOD,
	OPT_DEBUGINFOD_TIMEOUT,
	OPT_STATS,
	OPT_FORCE,
	OPT_FOLLOW,
};

static struct env {
	struct sp_common_opts common;
	struct sp_symbolize_opts sym;
	struct sp_symstream_opts stream;
	unsigned int ndebug, nimage;
	enum sp_format format;
	bool stats, follow, quiet;
} env;

static const char doc[] = "Add function names, source files and lines to recorded frames.\v"
	"Reads spool or JSON lines from each FILE (a directory: its segments in order), or stdin if none or '-', and writes the "
	"stream back (in the input's format unless --format says otherwise) with a symbol "
	"record after each frame: one per level of its inline chain, innermost first. "
	"A frame that cannot be resolved gets a symbol record saying why (file missing, "
	"build-id mismatch, stripped, ...); a summary goes to stderr at the end.\n\n"
	"Example: sp-record -o run.sp -- ./server && sp-symbolize run.sp | sp-decode\n"
	"Example: sp-symbolize --archive arch --sysroot /srv/img run.sp -o run-sym.sp\n\n"
	SP_EXIT_STATUS_DOC;

static const struct argp_option options[] = {
	{ "format", OPT_FORMAT, "FMT", 0, "Output 'spool' or 'json' (default: as the input)", 0 },
	{ "archive", OPT_ARCHIVE, "DIR", 0,
	  "Look for binaries in DIR first (made by sp-record --archive DIR)", 0 },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", 0,
	  "Look for separate debug files in DIR (.build-id/xx/... and debuglink; repeatable)", 0 },
	{ "sysroot", OPT_SYSROOT, "DIR", 0,
	  "Find recorded paths under DIR (a recording from another machine or container)", 0 },
	{ "image-dir", OPT_IMAGE_DIR, "DIR", 0,
	  "Look for binaries by base name in DIR, build-id checked (repeatable)", 0 },
	{ "no-demangle", OPT_NO_DEMANGLE, NULL, 0, "Keep C++ and Rust names mangled", 0 },
	{ "no-inline", OPT_NO_INLINE, NULL, 0, "Only the physical function of each frame", 0 },
	{ "no-system-debug", OPT_NO_SYSTEM_DEBUG, NULL, 0,
	  "Do not look in /usr/lib/debug (only --debug-dir)", 0 },
	{ "index-all", OPT_INDEX_ALL, NULL, 0,
	  "Index each file's whole DWARF when the file is loaded, not a unit at a time", 0 },
	{ "cache-dir", OPT_CACHE_DIR, "DIR", 0,
	  "Keep DWARF indexes in DIR (default $SP_CACHE_DIR/symbols, else "
	  "~/.cache/stackpulse/symbols)", 0 },
	{ "no-cache", OPT_NO_CACHE, NULL, 0, "Neither read nor write the DWARF index cache", 0 },
	{ "no-debuginfod", OPT_NO_DEBUGINFOD, NULL, 0,
	  "Do not fetch missing debug files from the servers in DEBUGINFOD_URLS", 0 },
	{ "debuginfod-timeout", OPT_DEBUGINFOD_TIMEOUT, "TIME", 0,
	  "Give up a debug file not fetched in TIME (\"30s\"; default $DEBUGINFOD_TIMEOUT "
	  "seconds, else 90 s)", 0 },
	{ "force", OPT_FORCE, NULL, 0,
	  "Symbolize an already symbolized stream again (its symbol records are dropped)", 0 },
	{ "follow", OPT_FOLLOW, NULL, 0,
	  "Follow a growing spool FILE until the recording ends (or SIGINT)", 0 },
	{ "stats", OPT_STATS, NULL, 0, "Print the summary per file too", 0 },
	{ "quiet", 'q', NULL, 0, "No summary and no progress on stderr", 0 },
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
	case OPT_DEBUG_DIR:
		if (env.ndebug >= SP_SYMBOLIZE_MAX_DIRS - 1)
			argp_error(state, "at most %d --debug-dir", SP_SYMBOLIZE_MAX_DIRS - 1);
		env.sym.debug_dirs[env.ndebug++] = arg;
		break;
	case OPT_IMAGE_DIR:
		if (env.nimage >= SP_SYMBOLIZE_MAX_DIRS - 1)
			argp_error(state, "at most %d --image-dir", SP_SYMBOLIZE_MAX_DIRS - 1);
		env.sym.image_dirs[env.nimage++] = arg;
		break;
	case OPT_SYSROOT:
		env.sym.sysroot = arg;
		break;
	case OPT_ARCHIVE:
		env.sym.archive = arg;
		break;
	case OPT_NO_DEMANGLE:
		env.sym.no_demangle = true;
		break;
	case OPT_NO_INLINE:
		env.sym.no_inline = true;
		break;
	case OPT_NO_SYSTEM_DEBUG:
		env.sym.no_system_debug = true;
		break;
	case OPT_INDEX_ALL:
		env.sym.index_all = true;
		break;
	case OPT_CACHE_DIR:
		if (!*arg)
			argp_error(state, "empty cache directory");
		env.sym.cache_dir = arg;
		break;
	case OPT_NO_CACHE:
		env.sym.no_cache = true;
		break;
	case OPT_NO_DEBUGINFOD:
		env.sym.no_debuginfod = true;
		break;
	case OPT_DEBUGINFOD_TIMEOUT:
		if (sp_parse_duration(arg, &env.sym.debuginfod_timeout_ns) ||
		    !env.sym.debuginfod_timeout_ns)
			argp_error(state, "invalid timeout '%s'", arg);
		break;
	case OPT_FORCE:
		env.stream.force = true;
		break;
	case OPT_FOLLOW:
		env.follow = true;
		break;
	case OPT_STATS:
		env.stats = true;
		break;
	case 'q':	/* as sp-flame's -q */
		env.quiet = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static struct {
	struct sp_reader *in;
	struct sp_writer *w;
	struct sp_symbolizer *sym;
	struct sp_symstream *stream;
	uint64_t t0, last_progress, records;
	bool progress_shown;
} g;

static void on_signal(int sig)
{
	(void)sig;
	sp_reader_stop(g.in);
}

static void progress(bool done)
{
	uint64_t now, resolved, total, loaded, live;

	if (env.quiet || !isatty(STDERR_FILENO))
		return;
	now = sp_now_mono_ns();
	if (done) {
		if (g.progress_shown)
			fprintf(stderr, "\r\033[K");
		return;
	}
	if (now - g.t0 < 1000000000ull || now - g.last_progress < 250000000ull)
		return;
	g.last_progress = now;
	g.progress_shown = true;
	sp_symbolizer_counts(g.sym, &resolved, &total);
	sp_symbolizer_files(g.sym, &loaded, &live);
	fprintf(stderr, "\r%s: %" PRIu64 " records, %" PRIu64 " frames (%" PRIu64
		" named), %" PRIu64 " files loaded, %" PRIu64 " live\033[K", sp_progname,
		g.records, total, resolved, loaded, live);
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]", .doc = doc,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct sp_record rec;
	int first, status, err = 0, rc;
	enum sp_format fmt;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	g.t0 = sp_now_mono_ns();
	env.sym.progress = !env.quiet && isatty(STDERR_FILENO);
	g.sym = sp_symbolizer_new(&env.sym);
	if (!g.sym)
		sp_die("out of memory");
	g.in = sp_reader_open(argv + first, argc - first);
	if (!g.in)
		return SP_EXIT_FATAL;
	if (env.follow) {
		sp_reader_follow(g.in, true, false);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	while ((rc = sp_reader_next(g.in, &rec)) > 0) {
		if (!g.w) {
			fmt = env.format ? env.format : sp_reader_format(g.in);
			if (fmt == SP_FORMAT_SPOOL && env.common.out_is_tty && !env.format)
				fmt = SP_FORMAT_JSON;
			fflush(env.common.out);
			g.w = sp_writer_new(fileno(env.common.out),
					    env.common.out_path ? env.common.out_path : "<stdout>",
					    fmt);
			if (!g.w) {
				err = -1;
				break;
			}
			/* Nothing here reads back a spool's symbols: do not store them. */
			if (fmt == SP_FORMAT_SPOOL)
				sp_defs_keep_symbols(sp_writer_defs(g.w), false);
			g.stream = sp_symstream_new(g.sym, g.w, &env.stream);
		}
		g.records++;
		if (sp_symstream_put(g.stream, g.in, &rec)) {
			err = -1;
			break;
		}
		if (!sp_reader_more_available(g.in) &&
		    (sp_symstream_flush(g.stream) || sp_writer_flush(g.w))) {
			err = -1;
			break;
		}
		if (!(g.records & 1023))
			progress(false);
	}
	if (g.w && !err && sp_symstream_finish(g.stream))
		err = -1;
	if (g.w && sp_writer_close(g.w))
		err = -1;
	progress(true);
	status = sp_reader_close(g.in);
	if (err)
		status = SP_EXIT_FATAL;
	sp_symbolizer_save(g.sym);
	if (!env.quiet)
		sp_symbolizer_print_stats(g.sym, stderr, env.stats);
	sp_symstream_free(g.stream);
	sp_symbolizer_free(g.sym);
	return sp_close_output(&env.common, status);
}
