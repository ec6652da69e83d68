// SPDX-License-Identifier: MIT
/* sp-export - a recording as OpenTelemetry (OTLP) traces or profiles for any OTLP backend. */
#include <inttypes.h>
#include <string.h>

#include "correlate.h"
#include "export.h"
#include "flame.h"
#include "reader.h"
#include "sp.h"

enum { OPT_TRACES = 0x100, OPT_PROFILES, OPT_JSON, OPT_SERVICE };


static struct env {
	struct sp_common_opts common;
	struct sp_otlp_opts otlp;
	bool profiles;
} env;

static const char doc[] =
	"Write a recording as OpenTelemetry traces (OTLP/protobuf or OTLP/JSON), or its "
	"samples as OpenTelemetry profiles: export requests that an OTLP endpoint takes as "
	"they are.\v"
	"Reads spool or JSON lines from each FILE (a directory: its segments in order), or "
	"stdin if none or '-'. Every process is a resource, every span a span, every kernel or "
	"runtime event an event of the span that caused it; a recording sp-correlate has not "
	"seen is correlated on the fly. Ids follow from the recording: the same input gives the "
	"same file.\n\n"
	"Examples:\n"
	"  sp-symbolize run.sp | sp-export -o run.otlp\n"
	"  curl --data-binary @run.otlp -H 'Content-Type: application/x-protobuf' \\\n"
	"      http://collector:4318/v1/traces\n"
	"  sp-correlate run.sp | sp-export --json -o run.otlp.json\n"
	"  sp-symbolize run.sp | sp-export --profiles -o run.profiles.otlp\n\n"
	"Exit status: 0 ok, 1 some records or events skipped (the first 5 of a kind each named, the rest counted), 2 fatal, "
	"64 usage.";

static const struct argp_option options[] = {
	{ "traces", OPT_TRACES, NULL, 0, "OTLP traces: spans and their events (default)", 0 },
	{ "profiles", OPT_PROFILES, NULL, 0,
	  "OTLP profiles (v1development): CPU samples by process, stack and thread", 0 },
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
		env.profiles = false;
		break;
	case OPT_PROFILES:
		env.profiles = true;
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
static int report(const struct sp_otlp_stats *st)
{
	int status = SP_EXIT_OK;

	if (!st->spans)
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

static int to_traces(void *ctx, const struct sp_defs *defs, const struct sp_record *rec)
{
	return sp_otlp_traces_add(ctx, defs, rec) < 0 ? -1 : 0;
}

/* A stream sp-correlate has not seen is correlated on the fly, as sp-tree
 * and sp-flame --by=span do. */
static int export_traces(char **paths, int n)
{
	struct sp_otlp_stats st = { 0 };
	struct sp_otlp_traces *t;
	struct sp_reader *in;
	int status, rc;

	in = sp_reader_open(paths, n);
	if (!in)
		return SP_EXIT_FATAL;
	t = sp_otlp_traces_new(env.common.out, &env.otlp);
	rc = sp_corr_read(in, NULL, to_traces, t, NULL);
	status = sp_reader_close(in);
	if (rc < 0)	/* a write that failed, said where it failed */
		status = SP_EXIT_FATAL;
	if (sp_otlp_traces_finish(t, &st) < 0)
		return SP_EXIT_FATAL;
	return sp_status_merge(status, report(&st));
}

/* The samples as sp-flame takes them (CPU samples, their period). */
static int export_profiles(char **paths, int n)
{
	static const struct sp_flame_opts fo;
	struct sp_folded *fold = sp_folded_new(&fo);
	struct sp_otlp_profiles *p = sp_otlp_profiles_new(&env.otlp);
	struct sp_reader *in = sp_reader_open(paths, n);
	const char *why = NULL;
	struct sp_record rec;
	uint64_t ns;
	int status = SP_EXIT_FATAL, r;

	while (in && sp_reader_next(in, &rec) > 0) {
		r = sp_folded_add(fold, sp_reader_defs(in), &rec, &why);
		if (r == SP_FOLDED_BAD) {
			sp_reader_skipped(in, &rec, "%s", why);
			continue;
		}
		if (rec.kind == SP_REC_SAMPLE && r != SP_FOLDED_TAKEN)
			continue;
		ns = rec.kind != SP_REC_SAMPLE ? 0 :
		     (rec.sample.weight ? rec.sample.weight : 1) * sp_folded_period_ns(fold);
		sp_otlp_profiles_add(p, sp_reader_defs(in), &rec, ns);
	}
	if (in)
		status = sp_reader_close(in);
	if (status != SP_EXIT_FATAL && !sp_folded_stats(fold)->samples[0])
		sp_warn("no samples in the input");
	if (status != SP_EXIT_FATAL &&
	    sp_otlp_profiles_write(p, env.common.out, sp_folded_period_ns(fold)) < 0)
		status = SP_EXIT_FATAL;
	sp_otlp_profiles_free(p);
	sp_folded_free(fold);
	return status;
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]", .doc = doc,
	};
	int first, status;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	if (env.profiles)
		status = export_profiles(argv + first, argc - first);
	else
		status = export_traces(argv + first, argc - first);
	return sp_close_output(&env.common, status);
}
