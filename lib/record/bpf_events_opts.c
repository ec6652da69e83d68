// SPDX-License-Identifier: MIT
/*
 * The "events" source's options (bpf_eventsP.h): --events lists (groups,
 * event names, removals) as masks of kinds and back, and the argp child
 * for --events, --no-samples, --event-buffer and --event-attach.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bpf_eventsP.h"
#include "sp.h"

uint64_t sp_events_default_kinds(void)
{
	return sp_event_group_kinds(SP_EVG_PROC | SP_EVG_FILE | SP_EVG_NET | SP_EVG_DNS);
}

int sp_events_parse(const char *list, uint64_t *kinds, uint64_t *named, char *err,
		    size_t errsize)
{
	uint64_t m = 0, n = 0;
	const char *p = list;
	bool first = true;

	if (!*list) {
		snprintf(err, errsize, "empty event list: use 'none' to record no events");
		return -1;
	}
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool minus = *p == '-';
		char word[64];
		uint64_t w = 0;
		unsigned int k;

		if (minus) {
			p++;
			len--;
		}
		if (!len || len >= sizeof(word)) {
			snprintf(err, errsize, "invalid item '%.*s' in event list",
				 (int)(len + minus), p - minus);
			return -1;
		}
		memcpy(word, p, len);
		word[len] = 0;
		if (first && minus)
			m = sp_events_default_kinds();
		first = false;
		if (!strcmp(word, "all"))
			w = sp_event_group_kinds(KERNEL_GROUPS);
		else if (!strcmp(word, "none"))
			w = 0, m = minus ? m : 0;
		else if (!strcmp(word, "default"))
			w = sp_events_default_kinds();
		if (sp_event_group_by_name(word))
			w = sp_event_group_kinds(sp_event_group_by_name(word));
		k = sp_event_kind_by_name(word);
		if (k) {
			w = SP_EV_BIT(k);
			if (!minus)
				n |= w;
			else
				n &= ~w;
		} else if (!w && strcmp(word, "none")) {
			snprintf(err, errsize, "unknown event or group '%s' (groups: all, none, "
				 "default, proc, file, net, dns, priv, runtime; or an event name "
				 "such as path_open)", word);
			return -1;
		}
		if (minus)
			m &= ~w;
		else
			m |= w;
		p += len;
		if (*p == ',')
			p++;
	}
	*kinds = m;
	*named = n & m;
	return 0;
}

size_t sp_events_format(uint64_t kinds, char *buf, size_t size)
{
	size_t len = 0;
	unsigned int k;

	if (size)
		buf[0] = 0;
	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		const struct sp_event_schema *s = sp_event_schema(k);
		int n;

		if (!s || !(kinds & SP_EV_BIT(k)))
			continue;
		n = snprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
			     "%s%s", len ? "," : "", s->name);
		len += n;
	}
	return len;
}

enum { OPT_EVENTS = 0x2400, OPT_NO_SAMPLES, OPT_EVENT_BUFFER, OPT_EVENT_ATTACH };

static const struct argp_option event_options[] = {
	{ "events", OPT_EVENTS, "LIST", 0,
	  "Kernel events to record: all, none, default (proc,file,net,dns), groups "
	  "(proc, file, net, dns, priv) or event names, comma-separated; -NAME removes", 0 },
	{ "no-samples", OPT_NO_SAMPLES, NULL, 0, "Record events only, no stack samples", 0 },
	{ "event-buffer", OPT_EVENT_BUFFER, "KIB",
	  0, "Size of the kernel event ring buffer in KiB, a power of 2 (default 8192)", 0 },
	{ "event-attach", OPT_EVENT_ATTACH, "HOW", 0,
	  "Attach kernel events with tp_btf, raw_tp or tracepoint only (default: the best "
	  "that works); with sys_enter (comma-separated), take the ids before a setid call "
	  "from the raw sys_enter tracepoint, not from per-call tracepoints", 0 },
	{ 0 }
};

/* --event-attach: a strategy, sys_enter, or both, comma-separated. */
static int parse_attach(const char *arg, struct sp_events_opts *o)
{
	static const char *const rungs[] = { "tp_btf", "raw_tp", "tracepoint" };
	const char *p = arg;
	size_t i, len;

	do {
		len = strcspn(p, ",");
		if (len == strlen("sys_enter") && !strncmp(p, "sys_enter", len)) {
			o->raw_entry = true;
		} else {
			for (i = 0; i < sizeof(rungs) / sizeof(rungs[0]); i++)
				if (len == strlen(rungs[i]) && !strncmp(p, rungs[i], len))
					break;
			if (i == sizeof(rungs) / sizeof(rungs[0]))
				return -1;
			o->attach = rungs[i];
		}
		p += len;
	} while (*p++ == ',');
	return 0;
}

static error_t parse_events_opt(int key, char *arg, struct argp_state *state)
{
	struct sp_events_opts *o = state->input;
	char err[256];

	if (!o)
		return ARGP_ERR_UNKNOWN;
	switch (key) {
	case ARGP_KEY_INIT:
		o->kinds = sp_events_default_kinds();
		break;
	case OPT_EVENTS:
		if (sp_events_parse(arg, &o->kinds, &o->named, err, sizeof(err)))
			argp_error(state, "--events: %s", err);
		o->given = true;
		break;
	case OPT_NO_SAMPLES:
		o->no_samples = true;
		break;
	case OPT_EVENT_BUFFER:
		if (sp_parse_uint(arg, 4, 1u << 21, &o->buffer_kib) ||
		    (o->buffer_kib & (o->buffer_kib - 1)))
			argp_error(state, "invalid --event-buffer '%s': KiB, a power of 2 from 4 "
				   "to 2097152", arg);
		break;
	case OPT_EVENT_ATTACH:
		if (parse_attach(arg, o))
			argp_error(state, "invalid --event-attach '%s': use tp_btf, raw_tp or "
				   "tracepoint, and/or sys_enter", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_events_argp = {
	.options = event_options,
	.parser = parse_events_opt,
};
