// SPDX-License-Identifier: MIT
/*
 * The triggers' options (triggers.h): each --trigger SPEC into a struct
 * sp_trigger_opts, and the argp child for --trigger, --trigger-cmd,
 * --trigger-every and --trigger-timeout. A spec that cannot be read is
 * refused with one message that names it and says what was wrong.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "events.h"
#include "sp.h"
#include "triggersP.h"

enum { OPT_TRIGGER = 0x2300, OPT_TRIGGER_CMD, OPT_TRIGGER_EVERY, OPT_TRIGGER_TIMEOUT };

/* What "exit=crash" names: the signals of a program's own fault, and the
 * OOM killer's. */
#define CRASH_SIGNALS	((UINT64_C(1) << SIGSEGV) | (UINT64_C(1) << SIGBUS) | \
			 (UINT64_C(1) << SIGILL) | (UINT64_C(1) << SIGFPE) | \
			 (UINT64_C(1) << SIGABRT) | (UINT64_C(1) << SIGSYS) | \
			 (UINT64_C(1) << SIGTRAP) | (UINT64_C(1) << SIGKILL))

/* Short names of the events a post-mortem asks for most. */
static const struct {
	const char *alias, *name;
} event_aliases[] = {
	{ "exec", "proc_exec" }, { "connect", "sock_connect" }, { "open", "path_open" },
	{ "bind", "sock_bind" }, { "accept", "sock_accept" }, { "dns", "dns_req" },
	{ "unlink", "file_unlink" }, { "kill", "task_kill" },
};

static int bad(char *err, size_t size, const char *spec, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(char *err, size_t size, const char *spec, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(err, size, "invalid trigger '%s': ", spec);

	if (k >= 0 && (size_t)k < size) {
		va_start(ap, fmt);
		vsnprintf(err + k, size - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Copy a glob into dst[SP_TRIGGERS_GLOB_MAX]; -1 if too long or empty. */
static int set_glob(char *dst, const char *glob)
{
	size_t n = strlen(glob);

	if (!n || n >= SP_TRIGGERS_GLOB_MAX)
		return -1;
	memcpy(dst, glob, n + 1);
	return 0;
}

/* "SIGSEGV", "segv", "11": its number, or 0. */
static unsigned int signal_number(const char *s, size_t n)
{
	char word[16];
	uint64_t v;
	int i;

	if (n >= sizeof(word))
		return 0;
	memcpy(word, s, n);
	word[n] = 0;
	if (!sp_parse_uint(word, 1, 63, &v))
		return (unsigned int)v;
	if (!strncasecmp(word, "SIG", 3))
		memmove(word, word + 3, n - 2);
	for (i = 1; i < 64; i++)
		if (sigabbrev_np(i) && !strcasecmp(sigabbrev_np(i), word))
			return (unsigned int)i;
	return 0;
}

/* exit[=WHAT,...][:GLOB] (spec without "exit") */
static int parse_exit(struct sp_trigger_opts *o, const char *spec, const char *rest,
		      char *err, size_t size)
{
	const char *glob = strchr(rest, ':'), *p, *end;
	size_t n;
	unsigned int sig;

	if (glob && set_glob(o->exit_glob, glob + 1))
		return bad(err, size, spec, "the process GLOB after ':' is empty or longer "
			   "than %d bytes", SP_TRIGGERS_GLOB_MAX - 1);
	end = glob ? glob : rest + strlen(rest);
	o->exit = true;
	if (rest == end) {
		/* any failure; a broken pipe is no failure of the program */
		o->exit_nonzero = true;
		o->exit_signals |= ~(UINT64_C(1) << SIGPIPE) & ~UINT64_C(1);
		return 0;
	}
	if (*rest != '=' || rest + 1 == end)
		return bad(err, size, spec, "use exit, exit=WHAT[,WHAT...] or exit[=WHAT]:GLOB "
			   "(WHAT: nonzero, crash, or a signal such as SIGSEGV)");
	for (p = rest + 1; p < end; p += n + (p[n] == ',')) {
		n = strcspn(p, ",:");
		if (n == 7 && !strncmp(p, "nonzero", 7))
			o->exit_nonzero = true;
		else if (n == 5 && !strncmp(p, "crash", 5))
			o->exit_signals |= CRASH_SIGNALS;
		else if ((sig = signal_number(p, n)))
			o->exit_signals |= UINT64_C(1) << sig;
		else
			return bad(err, size, spec, "'%.*s' is neither nonzero, crash nor a signal "
				   "(SIGSEGV, SIGABRT, KILL, 9)", (int)n, p);
	}
	return 0;
}

/* span>DURATION[:GLOB] (rest after "span>") */
static int parse_span(struct sp_trigger_opts *o, const char *spec, const char *rest,
		      char *err, size_t size)
{
	struct sp_trigger_span *s = &o->spans[o->nspans];
	const char *colon = strchr(rest, ':');
	char dur[32];
	size_t n = colon ? (size_t)(colon - rest) : strlen(rest);

	if (o->nspans == SP_TRIGGERS_MAX_SPECS)
		return bad(err, size, spec, "more than %d span triggers", SP_TRIGGERS_MAX_SPECS);
	memset(s, 0, sizeof(*s));
	if (!n || n >= sizeof(dur))
		return bad(err, size, spec, "use span>DURATION[:GLOB], e.g. span>500ms:Shop#*");
	memcpy(dur, rest, n);
	dur[n] = 0;
	if (sp_parse_duration(dur, &s->min_ns))
		return bad(err, size, spec, "'%s' is not a duration (\"500ms\", \"2s\")", dur);
	if (colon && set_glob(s->glob, colon + 1))
		return bad(err, size, spec, "the span GLOB after ':' is empty or longer than %d "
			   "bytes", SP_TRIGGERS_GLOB_MAX - 1);
	o->nspans++;
	return 0;
}

/* The field a glob is matched on when none is named: the port of a
 * socket's event, else the first string (a path, a name). */
static int default_field(unsigned int kind)
{
	const struct sp_event_schema *s = sp_event_schema(kind);
	unsigned int i;

	if (sp_event_field_index(kind, "port") >= 0)
		return sp_event_field_index(kind, "port");
	for (i = 0; i < s->nfields; i++)
		if (s->fields[i].type == SP_FT_STR)
			return (int)i;
	return -1;
}

/* event=KIND[.FIELD][:GLOB] (rest after "event=") */
static int parse_event(struct sp_trigger_opts *o, const char *spec, const char *rest,
		       char *err, size_t size)
{
	struct sp_trigger_event *e = &o->events[o->nevents];
	const char *colon = strchr(rest, ':'), *dot;
	size_t n = colon ? (size_t)(colon - rest) : strlen(rest), i;
	char kind[64], *field;

	if (o->nevents == SP_TRIGGERS_MAX_SPECS)
		return bad(err, size, spec, "more than %d event triggers", SP_TRIGGERS_MAX_SPECS);
	memset(e, 0, sizeof(*e));
	if (!n || n >= sizeof(kind))
		return bad(err, size, spec, "use event=KIND[.FIELD][:GLOB], e.g. "
			   "event=exec:*/curl or event=connect:5432");
	memcpy(kind, rest, n);
	kind[n] = 0;
	dot = strchr(kind, '.');
	field = dot ? kind + (dot - kind) : NULL;
	if (field)
		*field++ = 0;
	for (i = 0; i < sizeof(event_aliases) / sizeof(event_aliases[0]); i++)
		if (!strcmp(kind, event_aliases[i].alias))
			e->kind = sp_event_kind_by_name(event_aliases[i].name);
	if (!e->kind)
		e->kind = sp_event_kind_by_name(kind);
	if (!e->kind)
		return bad(err, size, spec, "no event '%s' (exec, connect, open, bind, accept, "
			   "dns, unlink, kill, or an event name of docs/events.md)", kind);
	e->field = field ? sp_event_field_index(e->kind, field) : default_field(e->kind);
	if (field && e->field < 0)
		return bad(err, size, spec, "event %s has no field '%s'",
			   sp_event_schema(e->kind)->name, field);
	if (colon && set_glob(e->glob, colon + 1))
		return bad(err, size, spec, "the GLOB after ':' is empty or longer than %d bytes",
			   SP_TRIGGERS_GLOB_MAX - 1);
	if (colon && e->field < 0)
		return bad(err, size, spec, "event %s has no field to match by default: name "
			   "one (event=%s.FIELD:GLOB)", sp_event_schema(e->kind)->name, kind);
	o->nevents++;
	return 0;
}

int sp_triggers_parse(struct sp_trigger_opts *o, const char *spec, char *err, size_t size)
{
	if (!strncmp(spec, "exit", 4) && (!spec[4] || spec[4] == '=' || spec[4] == ':'))
		return parse_exit(o, spec, spec + 4, err, size);
	if (!strncmp(spec, "span>", 5))
		return parse_span(o, spec, spec + 5, err, size);
	if (!strncmp(spec, "event=", 6))
		return parse_event(o, spec, spec + 6, err, size);
	if (!strncmp(spec, "cmd=", 4)) {
		if (!spec[4])
			return bad(err, size, spec, "the COMMAND after 'cmd=' is empty");
		if (o->cmd && strcmp(o->cmd, spec + 4))
			return bad(err, size, spec, "one trigger command per recording (the "
				   "first: '%s')", o->cmd);
		o->cmd = spec + 4;
		return 0;
	}
	if (!strcmp(spec, "signal"))
		return 0;	/* SIGUSR1: always a trigger */
	return bad(err, size, spec, "use exit[=WHAT][:GLOB], span>DURATION[:GLOB], "
		   "event=KIND[.FIELD][:GLOB], cmd=COMMAND or signal");
}

bool sp_triggers_any(const struct sp_trigger_opts *o)
{
	return o->exit || o->nspans || o->nevents || o->cmd;
}

static const struct argp_option trigger_options[] = {
	{ "trigger", OPT_TRIGGER, "SPEC", 0,
	  "Dump the flight window when SPEC happens: exit[=nonzero|crash|SIGNAL,...][:GLOB], "
	  "span>DURATION[:GLOB], event=KIND[.FIELD][:GLOB] (KIND: exec, connect, open, ... "
	  "or an event name), cmd=COMMAND; repeatable (SIGUSR1 always dumps)", 0 },
	{ "trigger-cmd", OPT_TRIGGER_CMD, "COMMAND", 0,
	  "Run /bin/sh -c COMMAND every --trigger-every: dump when it exits 0 (the first "
	  "line it prints says why)", 0 },
	{ "trigger-every", OPT_TRIGGER_EVERY, "TIME", 0,
	  "How often the trigger command runs (default 10s)", 0 },
	{ "trigger-timeout", OPT_TRIGGER_TIMEOUT, "TIME", 0,
	  "Kill a run of the trigger command after TIME (default: --trigger-every)", 0 },
	{ 0 }
};

static error_t parse_trigger(int key, char *arg, struct argp_state *state)
{
	struct sp_trigger_opts *o = state->input;
	char err[512];
	uint64_t ns;

	if (!o)
		return ARGP_ERR_UNKNOWN;
	switch (key) {
	case OPT_TRIGGER:
		if (sp_triggers_parse(o, arg, err, sizeof(err)))
			argp_error(state, "%s", err);
		break;
	case OPT_TRIGGER_CMD:
		if (!*arg)
			argp_error(state, "invalid --trigger-cmd '': the command is empty");
		if (o->cmd && strcmp(o->cmd, arg))
			argp_error(state, "one trigger command per recording: '%s' after '%s'",
				   arg, o->cmd);
		o->cmd = arg;
		break;
	case OPT_TRIGGER_EVERY:
	case OPT_TRIGGER_TIMEOUT:
		if (sp_parse_duration(arg, &ns) || ns < 100000000)
			argp_error(state, "invalid %s '%s' (a time of at least 100ms)",
				   key == OPT_TRIGGER_EVERY ? "--trigger-every" : "--trigger-timeout",
				   arg);
		if (key == OPT_TRIGGER_EVERY)
			o->every_ns = ns;
		else
			o->timeout_ns = ns;
		break;
	case ARGP_KEY_SUCCESS:
		if ((o->every_ns || o->timeout_ns) && !o->cmd)
			argp_error(state, "--trigger-every and --trigger-timeout need a trigger "
				   "command (--trigger-cmd or --trigger=cmd=COMMAND)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_triggers_argp = {
	.options = trigger_options,
	.parser = parse_trigger,
};
