// SPDX-License-Identifier: MIT
/*
 * One node of the tree as one line of text: a process, thread, span or
 * event with what sp-tree shows of it (docs/sp-tree.md), in colour or not,
 * with times or stable. The text form prints these lines; the stable order
 * and the collapsing of identical siblings compare them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "events.h"
#include "sp.h"
#include "treeP.h"

const char *sp_tree_base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static void tline_add(struct tline *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tline_add(struct tline *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len + 1 >= sizeof(b->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->len, sizeof(b->buf) - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n;
	if (b->len >= sizeof(b->buf)) {
		b->len = sp_esc_text_trim(b->buf, sizeof(b->buf) - 1);
		b->buf[b->len] = 0;
	}
}

static void tline_color(struct tline *b, bool on, const char *code)
{
	if (on)
		tline_add(b, "\033[%sm", code);
}

void sp_tree_fmt_dur(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, size, "%.1fus", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, size, "%.1fms", ns / 1e6);
	else
		snprintf(buf, size, "%.3fs", ns / 1e9);
}

/* "Foo#bar", "bar", or "<no-span>". */
void sp_tree_span_name(struct tline *b, const struct tspan *s)
{
	if (s->end == SP_END_SYNTHETIC) {
		tline_add(b, "<no-span>");
		return;
	}
	if (s->klass && *s->klass && s->runtime == SP_RT_RUBY)
		tline_add(b, "%s#%s", s->klass, s->method ? s->method : "?");
	else if (s->klass && *s->klass)
		tline_add(b, "%s.%s", s->klass, s->method ? s->method : "?");
	else
		tline_add(b, "%s", s->method ? s->method : "?");
}

static const char *group_tag(uint64_t kind)
{
	const struct sp_event_schema *es = sp_event_schema(kind);

	if (!es)
		return "EVT";
	switch (es->group) {
	case SP_EVG_PROC: return "PROC";
	case SP_EVG_FILE: return "FILE";
	case SP_EVG_NET: return "NET";
	case SP_EVG_DNS: return "DNS";
	case SP_EVG_PRIV: return "PRIV";
	case SP_EVG_RUNTIME: return "RT";
	default: return "EVT";
	}
}

const char *sp_tree_group_name(uint64_t kind)
{
	const struct sp_event_schema *es = sp_event_schema(kind);

	switch (es ? es->group : 0) {
	case SP_EVG_PROC: return "proc";
	case SP_EVG_FILE: return "file";
	case SP_EVG_NET: return "net";
	case SP_EVG_DNS: return "dns";
	case SP_EVG_PRIV: return "priv";
	case SP_EVG_RUNTIME: return "runtime";
	default: return "unknown";
	}
}

static const char *group_color(uint64_t kind)
{
	const struct sp_event_schema *es = sp_event_schema(kind);

	switch (es ? es->group : 0) {
	case SP_EVG_PROC: return "32";
	case SP_EVG_FILE: return "34";
	case SP_EVG_NET: return "35";
	case SP_EVG_DNS: return "33";
	case SP_EVG_PRIV: return "31";
	default: return "0";
	}
}

static void render_cpu(struct sp_tree *t, struct tline *b, uint64_t total, uint64_t self)
{
	char x[32], y[32];

	if (!total)
		return;
	if (t->period_ns) {
		sp_tree_fmt_dur(x, sizeof(x), total * t->period_ns);
		sp_tree_fmt_dur(y, sizeof(y), self * t->period_ns);
		if (self != total)
			tline_add(b, " cpu=%s self=%s", x, y);
		else
			tline_add(b, " cpu=%s", x);
	} else if (self != total) {
		tline_add(b, " samples=%llu self=%llu", (unsigned long long)total,
		       (unsigned long long)self);
	} else {
		tline_add(b, " samples=%llu", (unsigned long long)total);
	}
}

static void render_proc(struct tline *b, const struct tproc *p, bool stable, bool color)
{
	tline_color(b, color, "1");
	tline_add(b, "[PROC");
	if (!stable)
		tline_add(b, " pid=%llu", (unsigned long long)p->pid);
	if (!stable && p->nspid && p->nspid != p->pid)
		tline_add(b, " nspid=%llu", (unsigned long long)p->nspid);
	tline_add(b, " comm=%s", p->comm ? p->comm : "?");
	if (p->runtime)	/* a container id shortened as its runtime's tools do */
		tline_add(b, " container=%s:%.*s", p->runtime, p->container &&
			  strlen(p->container) == 64 ? 12 : 255, p->container ? p->container : "");
	if (!stable && p->ppid)
		tline_add(b, " parent=%llu", (unsigned long long)p->ppid);
	if (p->exited && (p->flags & SP_PEND_SIGNALED))
		tline_add(b, " killed=%llu", (unsigned long long)(p->status - 128));
	else if (p->exited && !(p->flags & SP_PEND_EXEC))
		tline_add(b, " exit=%llu", (unsigned long long)p->status);
	tline_add(b, "]");
	tline_color(b, color, "0");
}

/* A span's duration and CPU, of the span or of its collapsed group ag. */
static void render_span_times(struct sp_tree *t, struct tline *b, const struct tspan *s,
			      const struct agg *ag)
{
	char d[32];

	if (ag && ag->count > 1) {
		sp_tree_fmt_dur(d, sizeof(d), ag->dur);
		tline_add(b, " dur=%s%s", ag->open ? ">" : "", d);
		render_cpu(t, b, ag->total, ag->samples);
		return;
	}
	if (s->stop >= s->start && (s->stop || !s->start)) {
		sp_tree_fmt_dur(d, sizeof(d), s->stop - s->start);
		tline_add(b, " dur=%s", d);
	} else {
		tline_add(b, " dur=?");
	}
	render_cpu(t, b, s->total, s->samples);
}

static void render_span(struct sp_tree *t, struct tline *b, const struct tspan *s,
			const struct agg *ag, bool stable, bool color)
{
	bool gap = s->end == SP_END_SYNTHETIC;

	tline_add(b, "[SPAN");
	if (!stable)
		tline_add(b, " tid=%llu", (unsigned long long)s->tid);
	tline_add(b, " ");
	tline_color(b, color, gap ? "2" : "1;36");
	sp_tree_span_name(b, s);
	tline_color(b, color, "0");
	if (s->file && !gap) {
		tline_add(b, " at=%s", sp_tree_base_name(s->file));
		if (s->line)
			tline_add(b, ":%llu", (unsigned long long)s->line);
	}
	if (!stable)
		render_span_times(t, b, s, ag);
	tline_add(b, "]");
	if (s->end == SP_END_OPEN) {
		tline_color(b, color, "33");
		tline_add(b, " (open)");
		tline_color(b, color, "0");
	} else if (s->end == SP_END_INCOMPLETE) {
		tline_color(b, color, "33");
		tline_add(b, " (incomplete)");
		tline_color(b, color, "0");
	}
	if (s->end == SP_END_RAISED || s->error) {
		tline_color(b, color, "31");
		tline_add(b, " (raise %s", s->error ? s->error : "?");
		if (s->message && *s->message) {
			size_t m = strnlen(s->message, 201);

			if (m > 200)	/* the first 200 bytes, whole characters */
				m = sp_esc_text_trim(s->message, 200);
			tline_add(b, ": \"%.*s\"", (int)m, s->message);
		}
		tline_add(b, ")");
		tline_color(b, color, "0");
	}
}

static void render_event(struct tline *b, const struct tevent *e, uint64_t base,
			 const struct agg *ag, bool stable, bool color)
{
	const struct sp_event_schema *es = sp_event_schema(e->kind);
	char d[32], txt[2048];
	const char *eq;

	sp_event_text(txt, sizeof(txt), e->kind, e->vals, e->nvals, stable);
	tline_color(b, color, group_color(e->kind));
	tline_add(b, "%-4s %s", group_tag(e->kind), es ? es->name : "event");
	tline_color(b, color, "0");
	eq = color ? strstr(txt, " = -") : NULL;
	if (eq) {
		tline_add(b, " → %.*s", (int)(eq - txt), txt);
		tline_color(b, color, "31");
		tline_add(b, "%s", eq);
		tline_color(b, color, "0");
	} else {
		tline_add(b, " → %s", txt);
	}
	if (!stable && !(ag && ag->count > 1)) {
		sp_tree_fmt_dur(d, sizeof(d), e->n.time >= base ? e->n.time - base : 0);
		tline_color(b, color, "2");
		tline_add(b, "  @+%s%s", e->n.time >= base ? "" : "-", d);
		tline_color(b, color, "0");
	}
}

void sp_tree_render_line(struct sp_tree *t, struct tline *b, const struct tnode *n,
			 uint64_t base, const struct agg *ag, bool stable, bool color)
{
	b->len = 0;
	b->buf[0] = 0;
	if (ag && ag->count > 1)
		tline_add(b, "×%llu ", (unsigned long long)ag->count);
	switch (n->type) {
	case N_PROC:
		render_proc(b, (const struct tproc *)n, stable, color);
		break;
	case N_THREAD:
		tline_add(b, "[THREAD");
		if (!stable)
			tline_add(b, " tid=%llu", (unsigned long long)((const struct tthread *)n)->tid);
		tline_add(b, "]");
		break;
	case N_SPAN:
		render_span(t, b, (const struct tspan *)n, ag, stable, color);
		break;
	case N_EVENT:
		render_event(b, (const struct tevent *)n, base, ag, stable, color);
		break;
	}
}
