// SPDX-License-Identifier: MIT
/*
 * The spans source's options (bpf_spans.h): --spans=LIST,
 * --span-func=BINARY:FUNCTION and --spans-match=GLOB, parsed into the struct sp_spans_opts the
 * tool hands the argp child as its input, as every source's child takes
 * the tool's settings. Parsing only parses: the source's creation
 * (bpf_spans.c) starts what the options ask for.
 */
#include <limits.h>
#include <string.h>

#include "bpf_spansP.h"
#include "sp.h"

enum { OPT_SPANS = 0x2100, OPT_SPAN_FUNC, OPT_SPANS_MATCH };

#define GLOB_MAX	256	/* bytes of a --spans-match glob */

static const struct argp_option spans_options[] = {
	{ "spans", OPT_SPANS, "LIST", 0,
	  "Record method spans: auto (every runtime found), ruby, ruby-c, python, "
	  "python-audit, usdt, none; comma-separated (default: python-audit,usdt, no "
	  "per-call method spans)", 0 },
	{ "span-func", OPT_SPAN_FUNC, "BINARY:FUNCTION", 0,
	  "Record a span for each call of FUNCTION (a glob) in BINARY; repeatable", 0 },
	{ "spans-match", OPT_SPANS_MATCH, "GLOB", 0,
	  "Record spans of the Ruby methods whose Class#method or Class.method matches GLOB "
	  "(no per-call cost for the others), and of the Python functions whose qualname or "
	  "module.qualname does; repeatable", 0 },
	{ 0 }
};

static const struct {
	const char *word;
	unsigned int bits;
} span_words[] = {
	{ "auto", SP_SPANS_AUTO },
	{ "none", 0 },
	{ "ruby", SP_SPANS_RUBY },
	{ "ruby-c", SP_SPANS_RUBY_C },
	{ "python", SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT },
	{ "python-audit", SP_SPANS_PY_AUDIT },
	{ "usdt", SP_SPANS_USDT },
};

void sp_spans_list_str(unsigned int modes, char *buf, size_t size)
{
	size_t len = 0, i;

	buf[0] = 0;
	/* words of the table whose bits are all in modes, each bit once:
	 * "python" takes the audit bit it carries */
	for (i = 0; i < sizeof(span_words) / sizeof(span_words[0]) && len < size; i++) {
		unsigned int bits = span_words[i].bits;

		if (!bits || bits == SP_SPANS_AUTO || (modes & bits) != bits)
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "",
					span_words[i].word);
		modes &= ~bits;
	}
	if (!buf[0])
		snprintf(buf, size, "none");
}

int sp_spans_parse_list(const char *list, unsigned int *modes, const char **bad, size_t *badlen)
{
	const char *p = list, *end;
	unsigned int m = 0, i;
	size_t n;

	for (;;) {
		end = strchr(p, ',');
		n = end ? (size_t)(end - p) : strlen(p);
		for (i = 0; i < sizeof(span_words) / sizeof(span_words[0]); i++)
			if (strlen(span_words[i].word) == n && !strncmp(span_words[i].word, p, n))
				break;
		if (i == sizeof(span_words) / sizeof(span_words[0])) {
			*bad = p;
			*badlen = n;
			return -1;
		}
		m |= span_words[i].bits;
		if (!end)
			break;
		p = end + 1;
	}
	*modes = m;
	return 0;
}

int sp_spans_split_func(const char *spec, char *bin, size_t bsize, char *func, size_t fsize)
{
	const char *colon = strrchr(spec, ':');
	size_t n;

	if (!colon || colon == spec || !colon[1])
		return -1;
	n = colon - spec;
	if (n >= bsize || strlen(colon + 1) >= fsize)
		return -1;
	memcpy(bin, spec, n);
	bin[n] = 0;
	strcpy(func, colon + 1);
	return 0;
}

static error_t parse_spans(int key, char *arg, struct argp_state *state)
{
	struct sp_spans_opts *o = state->input;
	char bin[PATH_MAX], func[512];
	const char *bad;
	size_t badlen;

	switch (key) {
	case OPT_SPANS:
		if (sp_spans_parse_list(arg, &o->modes, &bad, &badlen))
			argp_error(state, "invalid --spans word '%.*s': use auto, ruby, ruby-c, python, "
				   "python-audit, usdt or none", (int)badlen, bad);
		/* "auto" names no runtime: one missing is no error */
		o->explicit_modes = strcmp(arg, "auto") != 0;
		o->given = true;
		break;
	case OPT_SPAN_FUNC:
		if (sp_spans_split_func(arg, bin, sizeof(bin), func, sizeof(func)))
			argp_error(state, "invalid --span-func '%s': use BINARY:FUNCTION", arg);
		if (o->nfuncs == SP_SPANS_MAX_FUNCS)
			argp_error(state, "too many --span-func options (at most %d)",
				   SP_SPANS_MAX_FUNCS);
		o->funcs[o->nfuncs++] = arg;
		break;
	case OPT_SPANS_MATCH:
		/* handed to the activator one a line (STACKPULSE_SPANS_MATCH) */
		if (!*arg || strchr(arg, '\n') || strlen(arg) > GLOB_MAX)
			argp_error(state, "invalid --spans-match '%s': one glob of 1 to %d bytes, "
				   "no newline", arg, GLOB_MAX);
		if (o->nglobs == SP_SPANS_MAX_GLOBS)
			argp_error(state, "too many --spans-match options (at most %d)",
				   SP_SPANS_MAX_GLOBS);
		o->globs[o->nglobs++] = arg;
		break;
	case ARGP_KEY_SUCCESS:	/* ARGP_KEY_END is not seen when a command is given */
		/* the activators' hooks, in their matching mode */
		if (o->nglobs)
			o->modes |= SP_SPANS_RUBY | SP_SPANS_PYTHON;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_spans_argp = {
	.options = spans_options,
	.parser = parse_spans,
};
