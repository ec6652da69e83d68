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

/* The file name of a path; a runtime's pseudo-path whole, as its last '/'
 * is inside the brackets (<internal:/usr/lib/ruby/.../kernel_require.rb>). */
const char *sp_tree_base_name(const char *path)
{
	const char *s = path && *path != '<' ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

void sp_tree_vaddf(struct sp_buf *b, size_t max, const char *fmt, va_list ap)
{
	if (b->len >= max)
		return;
	sp_buf_vprintf(b, fmt, ap);
	if (b->len > max)	/* cut short: whole characters and escapes */
		sp_buf_setlen(b, sp_esc_text_trim(b->p, max));
}

static void line_add(struct sp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void line_add(struct sp_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sp_tree_vaddf(b, SP_TREE_LINE_MAX, fmt, ap);
	va_end(ap);
}

static void line_color(struct sp_buf *b, bool on, const char *code)
{
	if (on)
		line_add(b, "\033[%sm", code);
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

/* "Foo#bar", "bar", or "<no-span>" (a synthetic span with a method is an
 * interpreted frame's, sp-correlate's for events no span covers). */
void sp_tree_span_name(struct sp_buf *b, const struct tspan *s)
{
	char name[1024];

	if (s->end == SP_END_SYNTHETIC && !s->method) {
		line_add(b, "<no-span>");
		return;
	}
	sp_span_name(name, sizeof(name), s->runtime, s->klass, s->method);
	line_add(b, "%s", name);
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

static void render_cpu(struct sp_tree *t, struct sp_buf *b, uint64_t total, uint64_t self)
{
	char x[32], y[32];

	if (!total)
		return;
	if (t->period_ns) {
		sp_tree_fmt_dur(x, sizeof(x), total * t->period_ns);
		sp_tree_fmt_dur(y, sizeof(y), self * t->period_ns);
		if (self != total)
			line_add(b, " cpu=%s self-cpu=%s", x, y);
		else
			line_add(b, " cpu=%s", x);
	} else if (self != total) {
		line_add(b, " samples=%llu self-samples=%llu", (unsigned long long)total,
		       (unsigned long long)self);
	} else {
		line_add(b, " samples=%llu", (unsigned long long)total);
	}
}

const char *sp_tree_proc_comm(const struct tproc *p)
{
	if (p->comm)
		return p->comm;
	return !p->defined && !p->attached ? p->tried : NULL;
}

bool sp_tree_proc_status(const struct tproc *p, uint64_t *code, uint64_t *sig, bool *core)
{
	*code = *sig = 0;
	*core = false;
	if (p->flags & SP_PEND_EXEC)
		return false;
	if (!p->exited) {
		/* no end record (a command sp-record could not start): its own
		 * proc_exit event says how it ended */
		if (!p->exit_seen)
			return false;
		*code = p->exit_signal ? 0 : p->exit_code & 0xff;
		*sig = p->exit_signal;
		return true;
	}
	if (p->flags & SP_PEND_SIGNALED) {
		*sig = p->status - 128;
		*core = p->flags & SP_PEND_CORE;
	} else if (!p->status && p->exit_seen) {
		*code = p->exit_signal ? 0 : p->exit_code & 0xff;
		*sig = p->exit_signal;
	} else {
		*code = p->status;
	}
	return true;
}

static void render_proc(struct sp_buf *b, const struct tproc *p, bool stable, bool color)
{
	uint64_t code, sig;
	char name[32];
	bool core;

	line_color(b, color, "1");
	line_add(b, "[PROC");
	if (!stable)
		line_add(b, " pid=%llu", (unsigned long long)p->pid);
	if (!stable && p->nspid && p->nspid != p->pid)
		line_add(b, " nspid=%llu", (unsigned long long)p->nspid);
	line_add(b, " comm=%s", sp_tree_proc_comm(p) ? sp_tree_proc_comm(p) : "?");
	if (p->runtime)	/* a container id shortened as its runtime's tools do */
		line_add(b, " container=%s:%.*s", p->runtime, p->container &&
			  strlen(p->container) == 64 ? 12 : 255, p->container ? p->container : "");
	if (!stable && p->ppid)
		line_add(b, " parent=%llu", (unsigned long long)p->ppid);
	if (sp_tree_proc_status(p, &code, &sig, &core) && sig)
		line_add(b, " killed=%s%s", sp_tree_signal_name(name, sig),
			 core ? " core-dumped" : "");
	else if (sp_tree_proc_status(p, &code, &sig, &core))
		line_add(b, " exit=%llu", (unsigned long long)code);
	line_add(b, "]");
	line_color(b, color, "0");
}

/* A span's duration and CPU, of the span or of its collapsed group ag. */
static void render_span_times(struct sp_tree *t, struct sp_buf *b, const struct tspan *s,
			      const struct agg *ag)
{
	char d[32];

	if (ag && ag->count > 1) {
		sp_tree_fmt_dur(d, sizeof(d), ag->dur);
		line_add(b, " dur=%s%s", ag->open ? ">" : "", d);
		render_cpu(t, b, ag->total, ag->samples);
		return;
	}
	if (s->stop >= s->start && (s->stop || !s->start)) {
		sp_tree_fmt_dur(d, sizeof(d), s->stop - s->start);
		/* began before it was found: at least this long */
		line_add(b, " dur=%s%s", s->reconstructed ? ">=" : "", d);
	} else {
		line_add(b, " dur=?");
	}
	render_cpu(t, b, s->total, s->samples);
}

static void render_span(struct sp_tree *t, struct sp_buf *b, const struct tspan *s,
			const struct agg *ag, bool stable, bool color)
{
	bool frame = s->end == SP_END_SYNTHETIC && s->method;
	bool gap = s->end == SP_END_SYNTHETIC && !frame;

	line_add(b, frame ? "[FRAME" : "[SPAN");
	if (!stable)
		line_add(b, " tid=%llu", (unsigned long long)s->tid);
	line_add(b, " ");
	line_color(b, color, gap ? "2" : "1;36");
	sp_tree_span_name(b, s);
	line_color(b, color, "0");
	if (s->file && !gap) {
		line_add(b, " at=%s", sp_tree_base_name(s->file));
		if (s->line)
			line_add(b, ":%llu", (unsigned long long)s->line);
	}
	if (!stable)
		render_span_times(t, b, s, ag);
	line_add(b, "]");
	if (s->reconstructed) {
		line_color(b, color, "33");
		line_add(b, " (reconstructed: open when found)");
		line_color(b, color, "0");
	}
	if (s->end == SP_END_OPEN) {
		line_color(b, color, "33");
		line_add(b, " (open)");
		line_color(b, color, "0");
	} else if (s->early && !stable) {
		line_color(b, color, "33");
		line_add(b, " (written before its end: CPU counted until then)");
		line_color(b, color, "0");
	} else if (s->end == SP_END_INCOMPLETE) {
		line_color(b, color, "33");
		line_add(b, " (incomplete)");
		line_color(b, color, "0");
	}
	if (s->end == SP_END_RAISED || s->error) {
		line_color(b, color, "31");
		line_add(b, " (raise %s", s->error ? s->error : "?");
		if (s->message && *s->message) {
			size_t m = strnlen(s->message, 201);

			if (m > 200)	/* the first 200 bytes, whole characters */
				m = sp_esc_text_trim(s->message, 200);
			line_add(b, ": \"%.*s\"", (int)m, s->message);
		}
		line_add(b, ")");
		line_color(b, color, "0");
	}
}

static void render_event(struct sp_buf *b, const struct tevent *e, uint64_t base,
			 const struct agg *ag, bool stable, bool color)
{
	const struct sp_event_schema *es = sp_event_schema(e->kind);
	struct sp_buf tb = SP_BUF_INIT;
	const char *eq, *txt;
	char d[32];

	sp_event_text_run(&tb, e->kind, e->vals, e->nvals, stable, ag ? ag->varies : e->varies);
	txt = sp_buf_str(&tb);
	line_color(b, color, group_color(e->kind));
	line_add(b, "%-4s %s", group_tag(e->kind), es ? es->name : "event");
	line_color(b, color, "0");
	eq = color ? strstr(txt, " = -") : NULL;
	if (eq) {
		line_add(b, " → %.*s", (int)(eq - txt), txt);
		line_color(b, color, "31");
		line_add(b, "%s", eq);
		line_color(b, color, "0");
	} else {
		line_add(b, " → %s", txt);
	}
	if (!stable && !(ag && ag->count > 1)) {
		sp_tree_fmt_dur(d, sizeof(d), e->n.time >= base ? e->n.time - base : 0);
		line_color(b, color, "2");
		line_add(b, "  @+%s%s", e->n.time >= base ? "" : "-", d);
		line_color(b, color, "0");
	}
	sp_buf_release(&tb);
}

/* The name of an audit event without children (a run's member), or NULL. */
static const char *audit_leaf_name(const struct tnode *n)
{
	const struct tevent *e = (const struct tevent *)n;

	if (!n || n->type != N_EVENT || n->first || e->kind != SP_EV_AUDIT || !e->nvals)
		return NULL;
	return e->vals[0] ? (const char *)(uintptr_t)e->vals[0] : NULL;
}

bool sp_tree_audit_run(struct sp_tree *t, struct tnode *c, struct tnode **after,
		       struct sp_buf *b, uint64_t base, bool stable, bool color)
{
	const char *name = audit_leaf_name(c), *arg;
	struct tnode *n, *end;
	uint64_t count = 0, shown = 0;
	size_t len;
	char d[32];

	if (!name || t->o.no_collapse)
		return false;
	for (end = c; audit_leaf_name(end) && !strcmp(audit_leaf_name(end), name);
	     end = sp_tree_next_kept(end->next))
		count++;
	if (count < 2)
		return false;
	sp_buf_reset(b);
	line_color(b, color, group_color(SP_EV_AUDIT));
	line_add(b, "%-4s audit", group_tag(SP_EV_AUDIT));
	line_color(b, color, "0");
	line_add(b, " → %s ×%llu:", name, (unsigned long long)count);
	/* the first arguments, up to about a line's worth */
	for (n = c, len = 0; n != end; n = sp_tree_next_kept(n->next)) {
		const struct tevent *e = (const struct tevent *)n;

		arg = e->nvals > 1 && e->vals[1] ? (const char *)(uintptr_t)e->vals[1] : "";
		if (len + strlen(arg) > 120 && shown)
			break;
		line_add(b, "%s %s", shown ? "," : "", *arg ? arg : "-");
		len += strlen(arg) + 2;
		shown++;
	}
	if (shown < count)
		line_add(b, ", … (+%llu more)", (unsigned long long)(count - shown));
	if (!stable) {
		sp_tree_fmt_dur(d, sizeof(d), c->time >= base ? c->time - base : 0);
		line_color(b, color, "2");
		line_add(b, "  @+%s%s", c->time >= base ? "" : "-", d);
		line_color(b, color, "0");
	}
	*after = end;
	return true;
}

void sp_tree_render_line(struct sp_tree *t, struct sp_buf *b, const struct tnode *n,
			 uint64_t base, const struct agg *ag, bool stable, bool color)
{
	const struct tthread *th;

	sp_buf_reset(b);
	if (ag && ag->count > 1)
		line_add(b, "×%llu ", (unsigned long long)ag->count);
	switch (n->type) {
	case N_PROC:
		render_proc(b, (const struct tproc *)n, stable, color);
		break;
	case N_THREAD:
		line_add(b, "[THREAD");
		th = (const struct tthread *)n;
		if (!stable)
			line_add(b, " tid=%llu", (unsigned long long)th->tid);
		if (!stable && th->nstid && th->nstid != th->tid)
			line_add(b, " nstid=%llu", (unsigned long long)th->nstid);
		line_add(b, "]");
		break;
	case N_SPAN:
		render_span(t, b, (const struct tspan *)n, ag, stable, color);
		break;
	case N_EVENT:
		render_event(b, (const struct tevent *)n, base, ag, stable, color);
		break;
	}
}
