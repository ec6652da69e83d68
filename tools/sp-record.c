// SPDX-License-Identifier: MIT
/* sp-record - record stack samples (and more) of a command, of running
 * processes, or of the whole machine, as a spool. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_events.h"
#include "bpf_spans.h"
#include "check_pids.h"
#include "launch.h"
#include "malloc_hold.h"
#include "perf_offcpu.h"
#include "perf_source.h"
#include "recorder.h"
#include "source.h"
#include "sp.h"
#include "span.h"
#include "spans_canary.h"
#include "triggers.h"

static struct env {
	struct sp_common_opts common;	/* -o, -v: lib/base/opt.c */
	struct sp_perf_opts perf;
	struct sp_offcpu_opts offcpu;	/* --off-cpu: lib/record/perf_offcpu.c */
	struct sp_events_opts events;	/* --events: lib/record/bpf_events.c */
	struct sp_spans_opts spans;	/* --spans: lib/record/bpf_spans.c */
	struct sp_trigger_opts triggers;	/* --trigger: lib/record/triggers_opts.c */
	struct sp_cgroup_filter cgroups;	/* --cgroup, --container: lib/record/cgroup_filter.c */
	uint32_t pids[SP_RECORDER_MAX_PIDS];
	unsigned int npids;
	bool system_wide;
	bool check;
	uint64_t duration_ns;
	uint64_t batch_ns;
	enum sp_format format;
	const char *command_stdout;	/* --command-stdout */
	bool call_graph_given;		/* -g MODE: its stack summary always */
	struct sp_flight_opts flight;	/* -o DIR, --segment, --keep, --flight... */
	bool keep_given;
} env = {
	.flight = { .segment_bytes = SP_FLIGHT_DEFAULT_SEGMENT,
		    .after_ns = SP_FLIGHT_DEFAULT_AFTER,
		    .interval_ns = SP_FLIGHT_DEFAULT_INTERVAL },
	.perf = { .freq = 999, .call_graph = SP_CG_AUTO },
	.spans = { .modes = SP_SPANS_DEFAULT },
	.batch_ns = 100000000,
	.format = SP_FORMAT_SPOOL,
};

static const char doc[] =
	"Record stack samples of COMMAND (and every process it starts), of running "
	"processes (-p), or of the whole machine (-a).\v"
	"Samples CPU stacks with perf_event_open (kernel stacks by frame pointers, "
	"user stacks unwound by DWARF at record time, frame pointers where a binary has "
	"no unwind information: --call-graph=auto) and records the processes, "
	"threads and executable mappings (with build-ids) needed to make sense of them "
	"later, on this machine or another. Output goes to -o FILE, or to standard "
	"output when it is not a terminal, else to ./" SP_RECORDER_DEFAULT_OUTPUT "; records are "
	"written in batches (--batch), so a reader sees them while the command runs.\n\n"
	"Example: sp-record -o run.sp -- make test\n"
	"         sp-record -F 99 -p 1234 -d 10s | sp-decode --stats\n\n"
	"With a COMMAND, sp-record exits with the command's status (128 + signal "
	"when it was killed), 126 when it cannot be run, 127 when it is not found. "
	"SIGINT and SIGTERM sent to sp-record are passed on to the command.\n\n"
	"With -o DIR (an existing directory, or a path ending in '/'), the recording is "
	"cut into segment files DIR/segment-NNNNNN.sp, each readable alone (--segment, "
	"--keep). With --flight, only the most recent records are kept, in memory, and "
	"written to DIR/dump-NNNNNN-TIME-TRIGGER.sp when something fires: SIGUSR1 to "
	"sp-record (docs/flight-recorder.md).\n\n"
	"When the reader of its output goes away (a broken pipe), sp-record says "
	"so, stops recording, leaves the command running and exits 141.\n\n"
	/* not SP_EXIT_STATUS_DOC: sp-record skips no records, and has more */
	"Exit status: the command's (above); otherwise 0 ok, 1 a canary of --check "
	"--spans recorded no span, or a -p process of --check got none of what was asked "
	"(no interpreted frames, no spans), 2 fatal, 64 usage, 141 output closed.";

enum {
	OPT_BATCH = 0x2000,
	OPT_USER_ONLY,
	OPT_NO_CHILDREN,
	OPT_KERNEL_ONLY,
	OPT_STACK_SIZE,
	OPT_FORMAT,
	OPT_CHECK,
	OPT_ARCHIVE,
	OPT_COMMAND_STDOUT,
	OPT_INTERP,
	OPT_SEGMENT,
	OPT_KEEP,
	OPT_FLIGHT,
	OPT_FLIGHT_AFTER,
	OPT_DUMP_INTERVAL,
};

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Target:", 1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Record running processes (and their new children)", 1 },
	{ "no-children", OPT_NO_CHILDREN, NULL, 0, "With -p: leave out the processes they "
	  "started before the attach (taken by default, at most 4096)", 1 },
	{ "all-cpus", 'a', NULL, 0, "Record the whole machine", 1 },
	{ "duration", 'd', "TIME", 0, "Stop after TIME (\"10s\", \"500ms\"; plain seconds)", 1 },
	{ NULL, 0, NULL, 0, "Sampling:", 2 },
	{ "freq", 'F', "HZ", 0, "Sample at HZ per CPU (default 999)", 2 },
	{ "count", 'c', "PERIOD", 0, "Sample every PERIOD events instead", 2 },
	{ "event", 'e', "EVENT", 0, "Sampling event: cpu-clock (default), task-clock, "
	  "page-faults, context-switches, ...; cycles, instructions where there is a PMU", 2 },
	{ "call-graph", 'g', "MODE", OPTION_ARG_OPTIONAL, "auto (default: dwarf, then frame "
	  "pointers where CFI is missing), dwarf[,SIZE] (unwind copies of the user stack), fp "
	  "(frame pointers only), none; -g alone is the default", 2 },
	{ "stack-size", OPT_STACK_SIZE, "BYTES", 0, "User stack bytes copied per sample for "
	  "dwarf and auto (default 32768; with -a 32768 on up to 4 CPUs, 16384 on up to 8, "
	  "else 8192; 8192 at each --off-cpu switch)", 2 },
	{ "user-only", OPT_USER_ONLY, NULL, 0, "Only samples and stacks in user space", 2 },
	{ "kernel-only", OPT_KERNEL_ONLY, NULL, 0, "Only samples and stacks in the kernel", 2 },
	{ "interp", OPT_INTERP, "WHICH", 0, "Interpreted frames in samples: auto (default: every "
	  "supported runtime), python, ruby, none (docs/interpreters.md)", 2 },
	{ "mmap-pages", 'm', "PAGES", 0, "Ring buffer pages per CPU, a power of 2 "
	  "(default 128 for fp; for auto and dwarf 512 per 8 KiB of stack copy, four times "
	  "that with -a; all rings within 64 MiB)", 2 },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "batch", OPT_BATCH, "TIME", 0, "Write records at least this often (default 100ms)", 3 },
	{ "format", OPT_FORMAT, "FORMAT", 0, "spool (default) or json (JSON lines)", 3 },
	{ "check", OPT_CHECK, NULL, 0, "Say what this machine supports and exit; with -p, first "
	  "whether each pid can be attached to, then what a recording gets of each "
	  "(recorded for a second: runtimes, interpreted frames, spans); with --spans, also "
	  "record a canary program per span mode, without, say what the default records", 3 },
	{ "command-stdout", OPT_COMMAND_STDOUT, "FILE", 0, "Write the command's standard output "
	  "to FILE (default: its standard output, or standard error when the records go to "
	  "standard output)", 3 },
	{ "archive", OPT_ARCHIVE, "DIR", 0, "Copy each sampled binary into DIR once per build-id "
	  "(for sp-symbolize --archive DIR; off by default)", 3 },
	{ NULL, 0, NULL, 0, "Rotation and flight recorder (-o DIR):", 6 },
	{ "segment", OPT_SEGMENT, "SIZE|TIME", 0, "With -o DIR: start a new segment file past "
	  "SIZE (\"64M\", the default) or TIME (\"10m\")", 6 },
	{ "keep", OPT_KEEP, "N", 0, "Keep at most N segment files (default: all) or N dumps "
	  "(default 16) in DIR, deleting the oldest", 6 },
	{ "flight", OPT_FLIGHT, "LIMIT[,LIMIT]", 0, "Keep only the most recent records, in "
	  "memory, within a size (\"64M\") and/or a time (\"10m\"), and write a dump to -o DIR "
	  "when a trigger fires (SIGUSR1)", 6 },
	{ "flight-after", OPT_FLIGHT_AFTER, "TIME", 0, "Record this long after a trigger before "
	  "the dump is written (default 2s)", 6 },
	{ "dump-interval", OPT_DUMP_INTERVAL, "TIME", 0, "At most one dump per TIME (default "
	  "10s); triggers in between are counted in the next dump", 6 },
	{ 0 }
};

static int parse_pids(const char *arg)
{
	char *copy = sp_xstrdup(arg), *save = NULL, *tok;
	uint32_t pid;
	int ret = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (sp_parse_uint32(tok, 1, 0x3fffffff, &pid) || env.npids == SP_RECORDER_MAX_PIDS) {
			ret = -1;
			break;
		}
		env.pids[env.npids++] = pid;
	}
	free(copy);
	return ret;
}

/* --call-graph's MODE into env.perf; 0, or -1 (nothing set) for no mode. */
static int parse_call_graph(const char *arg)
{
	enum sp_call_graph cg;
	uint64_t v = 0;

	if (!strcmp(arg, "fp"))
		cg = SP_CG_FP;
	else if (!strcmp(arg, "dwarf"))
		cg = SP_CG_DWARF;
	else if (!strcmp(arg, "auto"))
		cg = SP_CG_AUTO;
	else if (!strcmp(arg, "none"))
		cg = SP_CG_NONE;
	else if ((!strncmp(arg, "dwarf,", 6) || !strncmp(arg, "auto,", 5)) &&
		 !sp_parse_uint(strchr(arg, ',') + 1, 8, 65528, &v) && !(v & 7))
		/* dwarf,SIZE as perf spells it: the same as --stack-size=SIZE */
		cg = arg[0] == 'd' ? SP_CG_DWARF : SP_CG_AUTO;
	else
		return -1;
	env.perf.call_graph = cg;
	if (v)
		env.perf.stack_size = (uint32_t)v;
	return 0;
}

/* --flight=LIMIT[,LIMIT]: a size, a time, or both. */
static int parse_flight(const char *arg)
{
	char *copy = sp_xstrdup(arg), *comma = strchr(copy, ',');
	int rc;

	if (comma)
		*comma = 0;
	rc = sp_flight_parse_limit(copy, &env.flight.window_bytes, &env.flight.window_ns);
	if (!rc && comma)
		rc = sp_flight_parse_limit(comma + 1, &env.flight.window_bytes,
					   &env.flight.window_ns);
	free(copy);
	if (!env.flight.window_bytes)
		env.flight.window_bytes = SP_FLIGHT_DEFAULT_WINDOW;
	env.flight.flight = true;
	return rc;
}

/* -o DIR (the common options leave a directory to us, and refuse a file
 * with --flight): rotation, or the flight recorder's dumps. */
static void check_dir(struct argp_state *state)
{
	const char *o = env.common.out_dir;

	if (!o) {
		if (env.keep_given || env.flight.segment_ns ||
		    env.flight.segment_bytes != SP_FLIGHT_DEFAULT_SEGMENT)
			argp_error(state, "--segment and --keep need -o DIR");
		return;
	}
	if (env.format == SP_FORMAT_JSON)
		argp_error(state, "-o DIR writes spools: --format=json goes to a file or a pipe");
	if (env.flight.flight && !env.keep_given)
		env.flight.keep = SP_FLIGHT_DEFAULT_KEEP;
	env.flight.dir = o;
}

/* The options of -o DIR: rotation and the flight recorder. */
static void parse_dir_opt(int key, char *arg, struct argp_state *state)
{
	uint64_t v;

	switch (key) {
	case OPT_SEGMENT:
		env.flight.segment_bytes = UINT64_MAX;
		if (sp_flight_parse_limit(arg, &env.flight.segment_bytes, &env.flight.segment_ns))
			argp_error(state, "invalid segment bound '%s' (a size like 64M or a "
				   "time like 10m)", arg);
		break;
	case OPT_KEEP:
		if (sp_parse_uint(arg, 1, 1000000, &v))
			argp_error(state, "invalid --keep '%s' (1 to 1000000)", arg);
		env.flight.keep = (unsigned int)v;
		env.keep_given = true;
		break;
	case OPT_FLIGHT:
		/* checked by the common options, before -o is opened as a file */
		env.common.dir_needed = "--flight needs -o DIR, the directory its dumps go to";
		if (parse_flight(arg))
			argp_error(state, "invalid --flight '%s': a size like 64M, a time like "
				   "10m, or both: 64M,10m", arg);
		break;
	case OPT_FLIGHT_AFTER:
		if (sp_parse_duration(arg, &env.flight.after_ns))
			argp_error(state, "invalid --flight-after '%s'", arg);
		break;
	case OPT_DUMP_INTERVAL:
		if (sp_parse_duration(arg, &env.flight.interval_ns))
			argp_error(state, "invalid --dump-interval '%s'", arg);
		break;
	}
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		env.common.dir_ok = true;
		env.common.out_kept = true;	/* a recording that fails to start keeps the old one */
		state->child_inputs[1] = &env.offcpu;
		state->child_inputs[2] = &env.events;
		state->child_inputs[3] = &env.spans;
		state->child_inputs[4] = &env.triggers;
		state->child_inputs[5] = &env.cgroups;
		break;
	case 'p':
		if (parse_pids(arg))
			argp_error(state, "invalid pid list '%s'", arg);
		break;
	case OPT_NO_CHILDREN:
		env.perf.no_children = true;
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
		/* One sampling event per recording: a second is refused, not
		 * silently put in the place of the first. */
		if (env.perf.event && strcmp(env.perf.event, arg))
			argp_error(state, "one sampling event per recording: '-e %s' after '-e %s' "
				   "(record each in its own run, or use --events for kernel events)",
				   arg, env.perf.event);
		env.perf.event = arg;
		break;
	case 'g':
		/* -g alone (perf's habit) is the default call graph; a MODE
		 * after it as its own word is taken only when it is one. */
		if (!arg && state->next < state->argc &&
		    !parse_call_graph(state->argv[state->next])) {
			state->next++;
			env.call_graph_given = true;
			break;
		}
		if (!arg)
			env.perf.call_graph = SP_CG_AUTO;
		if (arg && parse_call_graph(arg))
			argp_error(state, "invalid call graph '%s': use fp, dwarf[,SIZE], auto[,SIZE] "
				   "or none (SIZE: 8 to 65528, a multiple of 8)", arg);
		env.call_graph_given = arg != NULL;
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
	case OPT_COMMAND_STDOUT:
		env.command_stdout = arg;
		break;
	case OPT_INTERP:
		if (!strcmp(arg, "auto"))
			env.perf.interp = SP_INTERP_AUTO;
		else if (!strcmp(arg, "python"))
			env.perf.interp = SP_INTERP_PYTHON;
		else if (!strcmp(arg, "ruby"))
			env.perf.interp = SP_INTERP_RUBY;
		else if (!strcmp(arg, "none"))
			env.perf.interp = SP_INTERP_NONE;
		else
			argp_error(state, "invalid interpreter '%s': use auto, python, ruby or none",
				   arg);
		break;
	case OPT_SEGMENT:
	case OPT_KEEP:
	case OPT_FLIGHT:
	case OPT_FLIGHT_AFTER:
	case OPT_DUMP_INTERVAL:
		parse_dir_opt(key, arg, state);
		break;
	case ARGP_KEY_SUCCESS:	/* ARGP_KEY_END is not seen when a command is given */
		if (env.perf.user_only && env.perf.kernel_only)
			argp_error(state, "--user-only and --kernel-only exclude each other");
		if (env.check)
			break;
		check_dir(state);	/* the common options' ARGP_KEY_SUCCESS came first */
		if (sp_triggers_any(&env.triggers) && !env.flight.flight)
			argp_error(state, "--trigger and --trigger-cmd need --flight: a trigger "
				   "writes out the flight recorder's window");
		if (sp_cgroup_filter_given(&env.cgroups) && !env.system_wide)
			argp_error(state, "--cgroup and --container go with -a");
		if (env.npids && env.system_wide)
			argp_error(state, "-p and -a exclude each other");
		if (env.npids && state->next < state->argc)
			argp_error(state, "give either -p or a command, not both");
		if (!env.npids && !env.system_wide && state->next >= state->argc)
			argp_error(state, "nothing to record: give a command, -p PID or -a");
		if (env.command_stdout && state->next >= state->argc)
			argp_error(state, "--command-stdout needs a command to run");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * Record sources. Each is a struct sp_source (source.h) that the recorder
 * (recorder.h) drives, registered under its kind; the records of all of
 * them are merged by time into one stream. Adding one is three lines: its
 * argp child in children[] (its options), the child's input in
 * ARGP_KEY_INIT if it has one, and its constructor here. A source that the
 * options did not ask for is simply not added. The spans source was made
 * first, its BPF object loading meanwhile (main()). 0, or the exit status.
 */
static int add_sources(struct sp_recorder *rec, struct sp_source *spans)
{
	struct sp_source *ev;
	uint32_t type;
	uint64_t config;
	int status = SP_EXIT_FATAL;
	bool hw;

	if (env.events.no_samples) {
		/* side-band records (processes, mappings) without any sample */
		if (!sp_perf_event_lookup("dummy", &type, &config, &hw))
			env.perf.event = "dummy";
		else
			env.perf.period = UINT64_C(1) << 62;
	}
	env.perf.interp_no_offcpu = !env.offcpu.enabled;
	env.perf.interp_no_events = env.events.given && !env.events.kinds;
	if (sp_recorder_add(rec, SP_SOURCE_PERF, sp_perf_source_new(&env.perf)))
		goto fail;	/* the constructor said why */
	/* Kernel events: attached before the header, which describes them; an
	 * event the user named that cannot be had stops here. */
	ev = sp_events_source_new(&env.events);
	if (sp_recorder_add(rec, SP_SOURCE_EVENTS, ev))
		goto fail;
	if (sp_events_prepare(ev) < 0) {
		status = SP_EXIT_USAGE;
		goto fail;
	}
	if (env.offcpu.enabled) {
		env.offcpu.call_graph = env.perf.call_graph;
		env.offcpu.stack_size = env.perf.stack_size;
		env.offcpu.kernel_frames = !env.perf.user_only;
		env.offcpu.enable_on_exec = env.perf.enable_on_exec;
		env.offcpu.pages = env.perf.pages;	/* -m: its rings too */
		if (sp_recorder_add(rec, SP_SOURCE_OFFCPU, sp_offcpu_source_new(&env.offcpu)))
			goto fail;
	}
	/* --spans: lib/record/bpf_spans.c */
	return sp_recorder_add(rec, SP_SOURCE_SPANS, spans) ? SP_EXIT_FATAL : SP_EXIT_OK;
fail:
	spans->free(spans);	/* not the recorder's yet */
	return status;
}

/* "--name=" and its value, allocated */
static char *option_arg(const char *name, const char *value)
{
	size_t len = strlen(name) + strlen(value) + 1;
	char *s = sp_xmalloc(len);

	snprintf(s, len, "%s%s", name, value);
	return s;
}

/* sp-record --check: what this machine supports; with --spans, a canary
 * recording per span mode, else what the default records. */
static int check(void)
{
	struct sp_source *ev;
	char self[4096];
	ssize_t n;
	int status, missing = 0;

	if (sp_check_pids(env.pids, env.npids, stdout))
		return sp_close_output(&env.common, SP_EXIT_FATAL);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		sp_die("cannot find sp-record's own binary: %s", strerror(errno));
	self[n] = 0;
	if (env.npids) {
		const char *args[2 + SP_SPANS_MAX_GLOBS + SP_SPANS_MAX_FUNCS];
		char spans[160] = "--spans=auto", *own[SP_SPANS_MAX_GLOBS + SP_SPANS_MAX_FUNCS];
		unsigned int asked = 0, nargs = 0, nown = 0, k;

		/* the same span options as given, for the second recorded */
		if (env.spans.explicit_modes) {
			strcpy(spans, "--spans=");
			sp_spans_list_str(env.spans.modes, spans + 8, sizeof(spans) - 8);
		}
		if (env.spans.given)
			args[nargs++] = spans;
		for (k = 0; k < env.spans.nglobs; k++)
			args[nargs++] = own[nown++] = option_arg("--spans-match=", env.spans.globs[k]);
		for (k = 0; k < env.spans.nfuncs; k++)
			args[nargs++] = own[nown++] = option_arg("--span-func=", env.spans.funcs[k]);
		args[nargs] = NULL;
		/* the runtimes whose method spans were asked for: --spans-match
		 * names Ruby methods */
		if ((env.spans.given && (env.spans.modes & (SP_SPANS_RUBY | SP_SPANS_RUBY_C))) ||
		    env.spans.nglobs)
			asked |= SP_CHECK_RUBY;
		if (env.spans.given && (env.spans.modes & SP_SPANS_PYTHON))
			asked |= SP_CHECK_PYTHON;
		missing = sp_check_pids_record(self, env.pids, env.npids, nargs ? args : NULL,
					       asked, stdout);
		while (nown)
			free(own[--nown]);
		if (missing < 0)
			return sp_close_output(&env.common, SP_EXIT_FATAL);
	}
	sp_perf_check(stdout);
	ev = sp_events_source_new(&env.events);
	sp_events_print_check(ev, stdout);
	ev->free(ev);
	if (!env.spans.given) {
		/* what a recording gets without --spans (docs/spans.md) */
		fprintf(stdout, "spans (default python-audit,usdt): no per-call method spans; "
			"Python audit events and <stackpulse/span.h> markers; samples and kernel "
			"events of Python and Ruby name their methods from interpreted stacks "
			"(--interp). Method spans: --spans=auto, ruby, python, or "
			"--spans-match=GLOB; --check --spans=LIST tries each mode\n");
		return sp_close_output(&env.common, missing ? SP_EXIT_PARTIAL : SP_EXIT_OK);
	}
	fflush(stdout);
	if (env.npids)
		fprintf(stdout, "(the canaries below are new processes on this machine, not the -p "
			"ones: what the -p ones get is above)\n");
	status = sp_spans_canary(self, env.spans.modes, !env.spans.explicit_modes, stdout) ||
		 missing ? SP_EXIT_PARTIAL : SP_EXIT_OK;
	return sp_close_output(&env.common, status);
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = {
		{ .argp = &sp_common_argp },
		{ .argp = &sp_offcpu_argp, .group = 2 },
		{ .argp = &sp_events_argp, .group = 4 },
		{ .argp = &sp_spans_argp, .group = 5 },
		{ .argp = &sp_triggers_argp, .group = 6 },
		{ .argp = &sp_cgroup_filter_argp, .group = 1 },
		{ 0 }
	};
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[--] COMMAND [ARG...]", .doc = doc,
	};
	struct sp_recorder_opts ro;
	struct sp_recorder *rec;
	struct sp_source *spans;
	const char *command;
	int first, status;

	/* The program of the usdt canary (--check --spans=usdt): one span. */
	if (argc == 2 && !strcmp(argv[1], SP_CANARY_USDT_OPTION)) {
		SP_SPAN_BEGIN(SP_CANARY_METHOD);
		SP_SPAN_END(SP_CANARY_METHOD);
		return SP_EXIT_OK;
	}
	sp_launch_note_inherited();	/* before any descriptor of ours */
	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &first, NULL);
	/* until started: the kernel's BTF parsed per BPF object reuses the
	 * last parse's pages; not for the long recordings of -o DIR, which
	 * start once and would keep the pieces (malloc_hold.h) */
	if (!env.flight.dir)
		sp_malloc_hold_begin();
	if (env.check)
		return check();
	/* A trigger this early (nothing recorded yet) is no reason to die;
	 * the recorder takes SIGUSR1 from its signalfd once it is set up. */
	if (env.flight.flight)
		signal(SIGUSR1, SIG_IGN);
	if (first < argc && !strcmp(argv[first], "--"))
		first++;
	/* the globs reach a program through the activator sp-record gives it */
	if (env.spans.nglobs && first >= argc)
		sp_warn("--spans-match applies to the commands sp-record starts: processes "
			"attached with -p or -a keep the hooks they were started with");
	if (sp_cgroup_filter_resolve(&env.cgroups))
		return SP_EXIT_FATAL;
	env.perf.cgroups = &env.cgroups;
	env.events.cgroups = &env.cgroups;
	env.spans.cgroups = &env.cgroups;
	if (sp_cgroup_filter_given(&env.cgroups))
		env.offcpu.cgroups = &env.cgroups;
	env.perf.enable_on_exec = first < argc;
	/* the whole machine: the copy its rings can hold (perf_ring.h) */
	if (env.system_wide && !env.perf.stack_size)
		env.perf.stack_size = sp_perf_stack_copy_all();
	/* The spans source first: its BPF object loads while the rest is set
	 * up. It is told the command when "--" set it apart. */
	if (first < argc && first > 0 && !strcmp(argv[first - 1], "--"))
		env.spans.command = argv + first;
	spans = sp_spans_source_new(&env.spans);
	if (!spans)
		return SP_EXIT_FATAL;

	ro = (struct sp_recorder_opts){
		.common = &env.common, .format = env.format,
		.batch_ns = env.batch_ns, .duration_ns = env.duration_ns,
		.pids = env.pids, .npids = env.npids, .system_wide = env.system_wide,
		.call_graph = env.perf.call_graph, .stack_size = env.perf.stack_size,
		.command_stdout = env.command_stdout, .stack_summary = env.call_graph_given,
		.triggers = &env.triggers,
		.flight = env.flight.dir ? &env.flight : NULL,
	};
	rec = sp_recorder_new(&ro);		/* signals caught, -p processes held */
	if (!rec) {
		spans->free(spans);
		return SP_EXIT_FATAL;
	}
	command = sp_recorder_describe(rec, argv + first, argc - first);
	if (first < argc) {
		env.perf.args = command;	/* the command's process record */
		env.perf.command = argv[first];	/* does it run Ruby? */
	}
	status = add_sources(rec, spans);
	if (status == SP_EXIT_OK && sp_recorder_open_output(rec))
		status = SP_EXIT_FATAL;
	/* The command waits before exec while the sources attach to its pid. */
	if (status == SP_EXIT_OK && first < argc && sp_recorder_launch(rec, argv + first))
		status = SP_EXIT_FATAL;
	if (status == SP_EXIT_OK) {
		sp_recorder_start(rec);		/* the header; the sources attach */
		sp_recorder_go(rec);		/* the command execs */
		sp_malloc_hold_end();
		sp_recorder_run(rec);
		sp_recorder_end(rec);		/* the last records, the end record */
		status = sp_recorder_report(rec);
	}
	sp_recorder_free(rec);
	return sp_close_output(&env.common, status);
}
