// SPDX-License-Identifier: MIT
/* sp-export - a recording as OpenTelemetry (OTLP) traces for any OTLP backend. */
#include <inttypes.h>
#include <string.h>

#include "export.h"
#include "reader.h"
#include "sp.h"

enum { OPT_TRACES = 0x100, OPT_JSON, OPT_SERVICE };

static struct env {
	struct sp_common_opts common;
	struct sp_otlp_opts otlp;
} env;

static const char doc[] =
	"Write a correlated recording as OpenTelemetry traces: an OTLP/protobuf (or\n"
	"OTLP/JSON) export request that any OTLP endpoint takes as it is.\v"
	"Reads spool or JSON lines from each FILE, or stdin if none or '-'. Every process is "
	"a resource, every span a span, every kernel or runtime event an event of the span "
	"that caused it. Run sp-correlate first. Ids follow from the recording: the same "
	"input gives the same file.\n\n"
	"Examples:\n"
	"  sp-symbolize run.sp | sp-correlate | sp-export -o run.otlp\n"
	"  curl --data-binary @run.otlp -H 'Content-Type: application/x-protobuf' \\\n"
	"      http://collector:4318/v1/traces\n"
	"  sp-correlate run.sp | sp-export --json -o run.otlp.json\n\n"
	"Exit status: 0 ok, 1 some records or events skipped (each reported), 2 fatal, "
	"64 usage.";

static const struct argp_option options[] = {
	{ "traces", OPT_TRACES, NULL, 0, "OTLP traces: spans and their events (default)", 0 },
	{ "json", OPT_JSON, NULL, 0, "OTLP/JSON instead of OTLP/protobuf", 0 },
	{ "service-name", OPT_SERVICE, "NAME", 0,
	  "service.name of every resource (default: the process's command name)", 0 },
	{ 0 }
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		break;
	case OPT_TRACES:
		break;
	case OPT_JSON:
		env.otlp.json = true;
		break;
	case OPT_SERVICE:
		if (!*arg)
			argp_error(state, "--service-name must not be empty");
		env.otlp.service_name = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Say once what could not be written; 1 if anything was left out. */
static int report(const struct sp_otlp_stats *st, bool correlated)
{
	int status = SP_EXIT_OK;

	if (!correlated)
		sp_warn("the input is not correlated: no spans to export (run sp-correlate first)");
	else if (!st->spans)
		sp_warn("no spans in the input");
	if (st->events_unowned)
		sp_warn("%" PRIu64 " events belong to no span: not written", st->events_unowned);
	if (st->events_late) {
		sp_warn("%" PRIu64 " events came after their span was written (trees written "
			"early by sp-correlate --max-held): not written", st->events_late);
		status = SP_EXIT_PARTIAL;
	}
	if (st->events_no_span) {
		sp_warn("%" PRIu64 " events name a span the input never defined: not written",
			st->events_no_span);
		status = SP_EXIT_PARTIAL;
	}
	return status;
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]", .doc = doc,
	};
	struct sp_otlp_stats st = { 0 };
	struct sp_otlp_traces *t;
	struct sp_reader *in;
	struct sp_record rec;
	bool correlated = false;
	int first, status, rc;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	in = sp_reader_open(argv + first, argc - first);
	if (!in)
		return SP_EXIT_FATAL;
	t = sp_otlp_traces_new(env.common.out, &env.otlp);
	while (sp_reader_next(in, &rec) > 0) {
		if ((rec.kind == SP_REC_HEADER && rec.header.flags & SP_HDR_CORRELATED) ||
		    rec.kind == SP_REC_SPAN)
			correlated = true;
		if (sp_otlp_traces_add(t, sp_reader_defs(in), &rec) < 0)
			break;
	}
	status = sp_reader_close(in);
	rc = sp_otlp_traces_finish(t, &st);
	if (rc < 0)
		status = SP_EXIT_FATAL;
	else
		status = sp_status_merge(status, report(&st, correlated));
	return sp_close_output(&env.common, status);
}
