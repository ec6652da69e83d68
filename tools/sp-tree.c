// SPDX-License-Identifier: MIT
/* sp-tree - print recorded processes, spans and events as a tree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate.h"
#include "events.h"
#include "reader.h"
#include "sp.h"
#include "tree.h"

enum {
	OPT_FORMAT = 0x100, OPT_STABLE, OPT_MIN_DUR, OPT_PID, OPT_TID, OPT_SPAN, OPT_EVENTS,
	OPT_NO_COLLAPSE, OPT_NO_EVENTS, OPT_ALL_AUDIT, OPT_WINDOW, OPT_BUFFER, OPT_SUMMARY, OPT_SORT, OPT_TOP,
	OPT_MIN_SHARE, OPT_CONTAINER,
};

#define MAX_FILTERS 64

static struct env {
	struct sp_common_opts common;
	struct sp_tree_opts tree;
	uint64_t pids[MAX_FILTERS], tids[MAX_FILTERS];
	const char *spans[MAX_FILTERS];
	const char *containers[MAX_FILTERS];
	uint64_t window_ns;
} env = { .window_ns = SP_CORR_WINDOW_NS, .tree.buffer_nodes = 65536, .tree.min_share = -1 };

static const char doc[] = "Print recorded processes, method spans, the events each span "
	"caused and the processes it started, as a tree.\v"
	"Reads spool or JSON lines from each FILE (a directory: its segments in order), or stdin if none or '-'. Records that "
	"sp-correlate has not seen are correlated on the fly.\n\n"
	"Examples:\n"
	"  sp-record -- ruby app.rb | sp-correlate | sp-tree\n"
	"  sp-tree --stable run.sp > tree.txt && diff -u expected.txt tree.txt\n"
	"  sp-tree --span='Foo#*' --events=file,net --min-dur=1ms run.sp\n"
	"  sp-tree --format=json run.sp | jq '.processes[0].children[].name'\n"
	"  sp-tree --summary --sort=total --top=20 run.sp\n\n"
	SP_EXIT_STATUS_DOC;

static const struct argp_option options[] = {
	{ "format", OPT_FORMAT, "FMT", 0, "Output: text (default) or json", 0 },
	{ "stable", OPT_STABLE, NULL, 0,
	  "Leave out what changes from run to run (times, durations, pids, tids) and order "
	  "siblings deterministically, for diffs", 0 },
	{ "depth", 'd', "N", 0, "Print at most N levels below each process (with --span: below each span "
	  "that matched)", 0 },
	{ "min-dur", OPT_MIN_DUR, "DURATION", 0, "Hide spans shorter than DURATION (e.g. 1ms)", 0 },
	{ "min-share", OPT_MIN_SHARE, "PERCENT", 0,
	  "Hide spans shorter than PERCENT of the time of their top-level span (a top-level "
	  "span: of the recording), counted on one line (default: 0.5% in a tree of more "
	  "than 20000 spans without --span, --tid or --events, else 0: all)", 0 },
	{ "pid", OPT_PID, "PID", 0, "Show only this process and what it started (repeatable)", 0 },
	{ "tid", OPT_TID, "TID", 0, "Show only spans of this thread (repeatable)", 0 },
	{ "container", OPT_CONTAINER, "ID", 0, "Show only the processes of this container: a "
	  "prefix of its id or unit name, or RUNTIME:PREFIX (repeatable)", 0 },
	{ "span", OPT_SPAN, "GLOB", 0,
	  "Show only spans whose name ('Foo#bar' or 'bar') matches GLOB, with what is under "
	  "them (repeatable)", 0 },
	{ "events", OPT_EVENTS, "LIST", 0,
	  "Show only these event kinds or groups (proc,file,net,dns,priv,runtime or "
	  "path_open,...), and the spans that hold them; none: as --no-events", 0 },
	{ "no-events", OPT_NO_EVENTS, NULL, 0, "Processes and spans only", 0 },
	{ "all-audit", OPT_ALL_AUDIT, NULL, 0,
	  "Python's own audit events too: each import's exec and marshal.loads, compile, "
	  "attribute hooks, and opens and listings the kernel's events show already", 0 },
	{ "no-collapse", OPT_NO_COLLAPSE, NULL, 0,
	  "Print repeated identical siblings one by one instead of as '×N'", 0 },
	{ "buffer", OPT_BUFFER, "NODES", 0,
	  "Hold about NODES tree nodes before printing the finished top-level spans of a "
	  "process (default 65536); 0 holds the whole tree", 0 },
	{ "summary", OPT_SUMMARY, NULL, 0,
	  "Print a table of methods instead of the tree: calls, total and self time, CPU "
	  "with and without callees, off-CPU time, across all threads and processes", 0 },
	{ "sort", OPT_SORT, "KEY", 0,
	  "With --summary: sort by self (default), total, calls, cpu (self CPU) or offcpu", 0 },
	{ "top", OPT_TOP, "N", 0, "With --summary: print the first N methods only", 0 },
	{ "window", OPT_WINDOW, "DURATION", 0,
	  "When correlating on the fly: the reorder window (default 1ms)", 0 },
	{ 0 }
};

static uint64_t parse_events(const char *list)
{
	char *copy = sp_xstrdup(list), *tok, *save = NULL;
	uint64_t mask = 0;
	unsigned int k, group;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		k = sp_event_kind_by_name(tok);
		group = k ? 0 : sp_event_group_by_name(tok);
		if (!k && !group) {
			free(copy);
			return 0;
		}
		mask |= k ? 1ull << k : sp_event_group_kinds(group);
	}
	free(copy);
	return mask;
}

/* "0.5%" or "0.5": a percentage from 0 to 100, as a share. */
static int parse_percent(const char *arg, double *share)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || errno || (*end && strcmp(end, "%")) || !(v >= 0 && v <= 100))
		return -1;
	*share = v / 100;
	return 0;
}

static int parse_sort(const char *arg, enum sp_summary_sort *sort)
{
	static const char *const names[] = {
		[SP_SUMMARY_SELF] = "self", [SP_SUMMARY_TOTAL] = "total",
		[SP_SUMMARY_CALLS] = "calls", [SP_SUMMARY_CPU] = "cpu",
		[SP_SUMMARY_OFFCPU] = "offcpu",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(arg, names[i])) {
			*sort = (enum sp_summary_sort)i;
			return 0;
		}
	}
	return -1;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct sp_tree_opts *o = &env.tree;
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "json"))
			o->json = true;
		else if (!strcmp(arg, "text"))
			o->json = false;
		else
			argp_error(state, "invalid format '%s': use text or json", arg);
		break;
	case OPT_STABLE:
		o->stable = true;
		break;
	case 'd':
		if (sp_parse_uint(arg, 1, 100000, &v))
			argp_error(state, "invalid depth '%s'", arg);
		o->max_depth = (unsigned int)v;
		break;
	case OPT_MIN_DUR:
		if (sp_parse_duration(arg, &o->min_dur_ns))
			argp_error(state, "invalid duration '%s'", arg);
		break;
	case OPT_MIN_SHARE:
		if (parse_percent(arg, &o->min_share))
			argp_error(state, "invalid share '%s': a percentage such as 0.5%% (0: all)",
				   arg);
		break;
	case OPT_PID:
	case OPT_TID:
		if (sp_parse_uint(arg, 1, UINT32_MAX, &v))
			argp_error(state, "invalid %s '%s'", key == OPT_PID ? "pid" : "tid", arg);
		if ((key == OPT_PID ? o->npids : o->ntids) == MAX_FILTERS)
			argp_error(state, "at most %d of each filter", MAX_FILTERS);
		if (key == OPT_PID)
			env.pids[o->npids++] = v;
		else
			env.tids[o->ntids++] = v;
		break;
	case OPT_CONTAINER:
		if (!*arg)
			argp_error(state, "invalid container ''");
		if (o->ncontainers == MAX_FILTERS)
			argp_error(state, "at most %d of each filter", MAX_FILTERS);
		env.containers[o->ncontainers++] = arg;
		break;
	case OPT_SPAN:
		if (o->nspans == MAX_FILTERS)
			argp_error(state, "at most %d of each filter", MAX_FILTERS);
		env.spans[o->nspans++] = arg;
		break;
	case OPT_EVENTS:
		if (!strcmp(arg, "none")) {	/* as sp-record's --events=none */
			o->no_events = true;
			break;
		}
		o->event_kinds = parse_events(arg);
		if (!o->event_kinds)
			argp_error(state, "invalid event list '%s': event kinds or groups "
				   "(proc,file,net,dns,priv,runtime), or none", arg);
		break;
	case OPT_NO_EVENTS:
		o->no_events = true;
		break;
	case OPT_ALL_AUDIT:
		o->all_audit = true;
		break;
	case OPT_NO_COLLAPSE:
		o->no_collapse = true;
		break;
	case OPT_BUFFER:
		if (sp_parse_uint(arg, 0, UINT64_MAX, &env.tree.buffer_nodes))
			argp_error(state, "invalid node count '%s'", arg);
		break;
	case OPT_SUMMARY:
		o->summary = true;
		break;
	case OPT_SORT:
		if (parse_sort(arg, &o->summary_sort))
			argp_error(state, "invalid sort key '%s': use self, total, calls, cpu or "
				   "offcpu", arg);
		break;
	case OPT_TOP:
		if (sp_parse_uint(arg, 1, SIZE_MAX, &v))
			argp_error(state, "invalid count '%s'", arg);
		o->summary_top = (size_t)v;
		break;
	case OPT_WINDOW:
		if (!strcmp(arg, "0"))
			env.window_ns = 0;
		else if (sp_parse_duration(arg, &env.window_ns))
			argp_error(state, "invalid window '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int to_tree(void *ctx, const struct sp_record *rec)
{
	sp_tree_add(ctx, rec);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]", .doc = doc,
	};
	struct sp_corr_opts copts = { 0 };
	struct sp_corr *corr = NULL;
	struct sp_reader *in;
	struct sp_record rec;
	struct sp_tree *tree;
	int first, status;
	bool direct = false;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	env.tree.pids = env.pids;
	env.tree.tids = env.tids;
	env.tree.spans = env.spans;
	env.tree.containers = env.containers;
	env.tree.color = env.common.color;
	in = sp_reader_open(argv + first, argc - first);
	if (!in)
		return SP_EXIT_FATAL;
	tree = sp_tree_new(&env.tree);
	sp_tree_set_output(tree, env.common.out);
	copts.window_ns = env.window_ns;
	while (sp_reader_next(in, &rec) > 0) {
		if (rec.kind == SP_REC_HEADER) {
			/* each stream says whether sp-correlate has seen it; the
			 * correlator ends its own streams at a header (and
			 * carries spans on into a recording's next segment) */
			direct = rec.header.flags & SP_HDR_CORRELATED;
			if (corr && direct)
				sp_corr_finish(corr);
		}
		if (direct) {
			sp_tree_add(tree, &rec);
			continue;
		}
		if (!corr)
			corr = sp_corr_new(&copts, to_tree, tree);
		/* a segment's end, which the correlator passes over as
		 * transport: the tree still dates a segment read alone by it
		 * (and otherwise passes over it too) */
		if (rec.kind == SP_REC_END && rec.end.reason == SP_ENDR_ROTATED)
			sp_tree_add(tree, &rec);
		sp_corr_add(corr, &rec);
	}
	if (corr) {
		sp_corr_finish(corr);
		sp_corr_free(corr);
	}
	status = sp_reader_close(in);
	if (sp_tree_orphans(tree))
		sp_warn("%llu events named a span that was not in the input, or another "
			"process's: each is shown under its own process",
			(unsigned long long)sp_tree_orphans(tree));
	for (size_t i = 0; i < env.tree.ncontainers; i++)
		if (!sp_tree_container_seen(tree, i))
			sp_warn("--container=%s: no process of the input is in a container whose "
				"id starts so (a container's name is not recorded: give its id, "
				"or RUNTIME:ID, as the processes' \"container\" in sp-decode shows)",
				env.containers[i]);
	for (size_t i = 0; i < env.tree.npids; i++)
		if (!sp_tree_pid_seen(tree, i))
			sp_warn("--pid=%llu: no process of the input has this pid: nothing is "
				"shown for it", (unsigned long long)env.pids[i]);
	if (sp_tree_print(tree, env.common.out))
		status = SP_EXIT_FATAL;
	sp_tree_free(tree);
	return sp_close_output(&env.common, status);
}
