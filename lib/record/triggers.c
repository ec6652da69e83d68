// SPDX-License-Identifier: MIT
/*
 * Triggers on records (triggers.h): a process that dies badly, a span that
 * lasted too long, an event that matches a pattern. Each record on its way
 * to the output is checked once; the processes' names and the open spans
 * the checks need are tracked in bounded tables. The command trigger is
 * triggers_cmd.c, the specs triggers_opts.c.
 */
#include <arpa/inet.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "escape.h"
#include "events.h"
#include "record.h"
#include "sp.h"
#include "stream/schema.h"
#include "triggersP.h"

/* A detail being written: snprintf's rules, never past n - 1 bytes; once
 * a part is cut short, nothing more is added (so a cut name is never
 * followed by words that make it look whole). */
struct dbuf {
	char *p;
	size_t n, len;
	bool full;
};

static void dput(struct dbuf *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dput(struct dbuf *d, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (d->full || d->len + 1 >= d->n)
		return;
	va_start(ap, fmt);
	k = vsnprintf(d->p + d->len, d->n - d->len, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	if (d->len + (size_t)k >= d->n) {
		d->len += sp_esc_text_trim(d->p + d->len, d->n - 1 - d->len);
		d->full = true;
	} else {
		d->len += (size_t)k;
	}
	d->p[d->len] = 0;
}

/* Others' bytes, as their text form. */
static void dput_esc(struct dbuf *d, const char *s, size_t len)
{
	size_t k;

	if (d->full || d->len + 1 >= d->n)
		return;
	k = sp_esc_text(d->p + d->len, d->n - d->len, s, len, 0);
	if (k < d->n - d->len) {
		d->len += k;
	} else {
		d->len += strlen(d->p + d->len);
		d->full = true;
	}
}

static uint64_t read_oom_kills(void)
{
	char line[128];
	uint64_t v = 0;
	FILE *f = fopen("/proc/vmstat", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %" SCNu64, &v) == 1)
			break;
	fclose(f);
	return v;
}

struct sp_triggers *sp_triggers_new(const struct sp_trigger_opts *o)
{
	struct sp_triggers *t = sp_xcalloc(1, sizeof(*t));
	unsigned int i;

	t->o = *o;
	if (!t->o.every_ns)
		t->o.every_ns = 10 * UINT64_C(1000000000);
	if (!t->o.timeout_ns)
		t->o.timeout_ns = t->o.every_ns;
	t->fd = -1;
	t->next_run = sp_now_mono_ns() + t->o.every_ns;
	if (o->exit)
		t->oom_kills = read_oom_kills();
	t->min_limit = UINT64_MAX;
	for (i = 0; i < o->nspans; i++)
		if (o->spans[i].min_ns < t->min_limit)
			t->min_limit = o->spans[i].min_ns;
	return t;
}

void sp_triggers_stats(const struct sp_triggers *t, struct sp_triggers_stats *st)
{
	*st = t->st;
}

/* ---- exit ---- */

/* A process's comm and executable, as its last process record named them. */
static void proc_names(struct sp_triggers *t, struct sp_defs *defs, uint64_t pid,
		       const char **comm, const char **exe)
{
	uint64_t *v = sp_u64map_get(&t->procs, pid);

	*comm = v ? sp_defs_str(defs, *v >> 32, NULL) : NULL;
	*exe = v ? sp_defs_str(defs, *v & 0xffffffffu, NULL) : NULL;
}

static void track_proc(struct sp_triggers *t, const struct sp_process *p)
{
	uint64_t v = (p->comm <= 0xffffffffu ? p->comm << 32 : 0) |
		     (p->exe <= 0xffffffffu ? p->exe : 0);

	if (t->procs.n >= SP_TRIG_MAX_PROCS && !sp_u64map_get(&t->procs, p->pid)) {
		t->st.untracked++;
		return;
	}
	sp_u64map_put(&t->procs, p->pid, v);
}

static bool recently_fired(struct sp_triggers *t, uint64_t pid, bool forget)
{
	unsigned int i;

	for (i = 0; i < SP_TRIG_RECENT_EXITS; i++) {
		if (t->recent[i] == pid && pid) {
			if (forget)
				t->recent[i] = 0;
			return true;
		}
	}
	return false;
}

static void describe_death(struct sp_triggers *t, struct dbuf *d, int64_t code, unsigned int sig)
{
	const char *name = sig && sig < 65 ? sigabbrev_np((int)sig) : NULL;
	uint64_t oom;

	if (!sig) {
		dput(d, " exited with status %lld", (long long)code);
		return;
	}
	if (name)
		dput(d, " killed by SIG%s", name);
	else
		dput(d, " killed by signal %u", sig);
	if (sig == SIGKILL) {
		oom = read_oom_kills();
		dput(d, oom > t->oom_kills ? " (the OOM killer killed %" PRIu64 " since)" :
		     " (not the OOM killer: kill -9, or a kill the kernel did not count)",
		     oom - t->oom_kills);
		t->oom_kills = oom;
	}
}

/* A process ended with exit code (or -1) and signal (or 0): "exit" when
 * the options ask for it. */
static const char *check_exit(struct sp_triggers *t, struct sp_defs *defs, uint64_t pid,
			      int64_t code, unsigned int sig, char *detail, size_t n)
{
	const char *comm, *exe;
	struct dbuf d = { detail, n, 0, false };
	bool fires;

	if (!t->o.exit || recently_fired(t, pid, true))
		return NULL;
	if (sig)
		fires = sig < 64 && (t->o.exit_signals & (UINT64_C(1) << sig));
	else
		fires = code != 0 && t->o.exit_nonzero;
	if (!fires)
		return NULL;
	proc_names(t, defs, pid, &comm, &exe);
	if (t->o.exit_glob[0] && !(comm && !fnmatch(t->o.exit_glob, comm, 0)) &&
	    !(exe && !fnmatch(t->o.exit_glob, exe, 0)))
		return NULL;
	if (n)
		detail[0] = 0;
	dput(&d, "pid %" PRIu64, pid);
	if (comm) {
		dput(&d, " (");
		dput_esc(&d, comm, strlen(comm));
		dput(&d, ")");
	}
	describe_death(t, &d, code, sig);
	t->recent[t->nrecent++ % SP_TRIG_RECENT_EXITS] = pid;
	t->st.exits++;
	return "exit";
}

static const char *on_process_end(struct sp_triggers *t, const struct sp_process_end *pe,
				  struct sp_defs *defs, char *detail, size_t n)
{
	const char *name = NULL;

	if (pe->flags & SP_PEND_EXEC)
		return NULL;	/* the image was replaced: the process goes on */
	if (pe->flags & SP_PEND_SIGNALED)
		name = check_exit(t, defs, pe->pid, -1,
				  pe->status > 128 ? (unsigned int)(pe->status - 128) : 0, detail, n);
	else if (pe->status)
		name = check_exit(t, defs, pe->pid, (int64_t)pe->status, 0, detail, n);
	else
		recently_fired(t, pe->pid, true);
	sp_u64map_del(&t->procs, pe->pid);
	return name;
}

/* ---- span ---- */

static uint64_t span_key(uint64_t tid, uint64_t depth)
{
	return tid << 20 | depth;
}

/* The name sp-tree gives a span, in t->name. */
static const char *span_name(struct sp_triggers *t, struct sp_defs *defs, uint64_t klass_id,
			     uint64_t method_id, uint64_t runtime, const char **method)
{
	const char *klass = sp_defs_str(defs, klass_id, NULL);

	*method = sp_defs_str(defs, method_id, NULL);
	sp_buf_reset(&t->name);
	char name[1024];

	sp_span_name(name, sizeof(name), runtime, klass, *method);
	sp_buf_puts(&t->name, name);
	return sp_buf_str(&t->name);
}

/* The threshold of the first spec the span's name matches, UINT64_MAX if none. */
static uint64_t span_limit(struct sp_triggers *t, struct sp_defs *defs,
			   const struct sp_trig_span *sp)
{
	const char *method, *name = span_name(t, defs, sp->klass, sp->method, sp->runtime, &method);
	unsigned int i;

	for (i = 0; i < t->o.nspans; i++) {
		const struct sp_trigger_span *s = &t->o.spans[i];

		if (!s->glob[0] || !fnmatch(s->glob, name, 0) ||
		    (method && !fnmatch(s->glob, method, 0)))
			return s->min_ns;
	}
	return UINT64_MAX;
}

static const char *span_fired(struct sp_triggers *t, const struct sp_trig_span *sp,
			      uint64_t dur, bool open, char *detail, size_t n)
{
	struct dbuf d = { detail, n, 0, false };

	if (n)
		detail[0] = 0;
	dput(&d, "span ");
	dput_esc(&d, sp_buf_str(&t->name), t->name.len);
	dput(&d, " %s %.3f s (over %.3f s) in pid %" PRIu64 " tid %" PRIu64,
	     open ? "open for" : "took", (double)dur / 1e9, (double)sp->limit / 1e9, sp->pid,
	     sp->tid);
	t->st.spans++;
	return "span";
}

static void span_forget(struct sp_triggers *t, uint64_t key, uint64_t idx)
{
	sp_u64map_del(&t->open, key);
	sp_grow(&t->free_spans, &t->free_cap, t->nfree + 1, sizeof(*t->free_spans));
	t->free_spans[t->nfree++] = (uint32_t)idx;
}

static const char *on_span_stop(struct sp_triggers *t, const struct sp_span_mark *m,
				struct sp_defs *defs, char *detail, size_t n)
{
	uint64_t key = span_key(m->tid, m->depth), *v, dur;
	struct sp_trig_span *sp;

	v = m->depth <= SP_TRIG_MAX_DEPTH ? sp_u64map_get(&t->open, key) : NULL;
	if (!v)
		return NULL;
	sp = &t->spans[*v - 1];
	span_forget(t, key, *v - 1);
	if (sp->limit == UINT64_MAX)
		return NULL;	/* fired while open, or matches no spec */
	/* the stop's own name: a runtime may name the span only there */
	sp->klass = m->klass ? m->klass : sp->klass;
	sp->method = m->method ? m->method : sp->method;
	sp->limit = span_limit(t, defs, sp);	/* (leaves its name in t->name) */
	dur = m->time > sp->start ? m->time - sp->start : 0;
	return dur > sp->limit ? span_fired(t, sp, dur, false, detail, n) : NULL;
}

static void on_span_start(struct sp_triggers *t, const struct sp_span_mark *m)
{
	struct sp_trig_span *sp;
	uint64_t idx, *v;

	if (m->depth > SP_TRIG_MAX_DEPTH) {
		t->st.untracked++;
		return;
	}
	v = sp_u64map_get(&t->open, span_key(m->tid, m->depth));
	if (v) {
		idx = *v - 1;	/* its stop was lost: this start takes its place */
	} else if (t->nfree) {
		idx = t->free_spans[--t->nfree];
	} else {
		if (t->nspans == SP_TRIG_MAX_OPEN_SPANS) {
			/* threads that died with spans open fill it: start over */
			t->st.untracked += t->open.n;
			sp_u64map_release(&t->open);
			t->open = (struct sp_u64map)SP_U64MAP_INIT;
			t->nspans = t->nfree = 0;
		}
		sp_grow(&t->spans, &t->spans_cap, t->nspans + 1, sizeof(*t->spans));
		idx = t->nspans++;
	}
	sp_u64map_put(&t->open, span_key(m->tid, m->depth), idx + 1);
	sp = &t->spans[idx];
	*sp = (struct sp_trig_span){ .start = m->time, .pid = m->pid, .tid = m->tid,
				     .klass = m->klass, .method = m->method,
				     .runtime = m->runtime };
}

/* Every SP_TRIG_SCAN_NS of record time: a span still open past its
 * threshold (a request that hangs) fires then, not at its stop. */
static const char *scan_open_spans(struct sp_triggers *t, uint64_t now, struct sp_defs *defs,
				   char *detail, size_t n)
{
	struct sp_trig_span *sp;
	const char *method;
	uint64_t key, v;
	size_t i = 0;

	if (now < t->last_scan + SP_TRIG_SCAN_NS)
		return NULL;
	t->last_scan = now;
	while (sp_u64map_next(&t->open, &i, &key, &v)) {
		sp = &t->spans[v - 1];
		if (sp->limit == UINT64_MAX || now <= sp->start + t->min_limit)
			continue;
		if (!sp->limit)
			sp->limit = span_limit(t, defs, sp);
		if (sp->limit == UINT64_MAX || now <= sp->start + sp->limit)
			continue;
		span_name(t, defs, sp->klass, sp->method, sp->runtime, &method);
		span_fired(t, sp, now - sp->start, true, detail, n);
		sp->limit = UINT64_MAX;		/* once */
		return "span";
	}
	return NULL;
}

const char *sp_triggers_tick(struct sp_triggers *t, uint64_t upto, struct sp_defs *defs,
			     char *detail, size_t n)
{
	if (!t->o.nspans || !t->open.n)
		return NULL;
	return scan_open_spans(t, upto, defs, detail, n);
}

/* ---- event ---- */

/* An event field's value as text (a string's own bytes) into buf: its
 * length, or -1 for a field with no text (bytes). */
static int field_text(const struct sp_event *ev, unsigned int i, struct sp_defs *defs,
		      char *buf, size_t size, const char **text)
{
	const struct sp_event_schema *s = sp_event_schema(ev->kind);
	const struct sp_value *v = &ev->field[i];
	size_t len;

	*text = buf;
	if (i >= ev->nfields)
		return snprintf(buf, size, "0");
	switch (s->fields[i].type) {
	case SP_FT_STR:
		*text = sp_defs_str(defs, v->u, &len);
		if (!*text)
			*text = "";
		return (int)strlen(*text);
	case SP_FT_INT:
		return snprintf(buf, size, "%lld", (long long)(int64_t)v->u);
	case SP_FT_HEX:
		return snprintf(buf, size, "0x%llx", (unsigned long long)v->u);
	case SP_FT_ADDR:
		if (v->b.len == 4 && inet_ntop(AF_INET, v->b.p, buf, (socklen_t)size))
			return (int)strlen(buf);
		if (v->b.len == 16 && inet_ntop(AF_INET6, v->b.p, buf, (socklen_t)size))
			return (int)strlen(buf);
		return -1;
	case SP_FT_BYTES:
		return -1;
	default:
		return snprintf(buf, size, "%llu", (unsigned long long)v->u);
	}
}

static const char *on_event(struct sp_triggers *t, const struct sp_event *ev,
			    struct sp_defs *defs, char *detail, size_t n)
{
	const struct sp_event_schema *s = sp_event_schema(ev->kind);
	struct dbuf d = { detail, n, 0, false };
	const char *text = NULL, *comm, *exe;
	char buf[64];
	unsigned int i;
	int len = -1;

	if (!s)
		return NULL;
	for (i = 0; i < t->o.nevents; i++) {
		const struct sp_trigger_event *e = &t->o.events[i];

		if (e->kind != ev->kind)
			continue;
		len = e->field >= 0 ? field_text(ev, (unsigned int)e->field, defs, buf,
						 sizeof(buf), &text) : -1;
		if (!e->glob[0] || (len >= 0 && !fnmatch(e->glob, text, 0)))
			break;
	}
	if (i == t->o.nevents)
		return NULL;
	if (n)
		detail[0] = 0;
	dput(&d, "%s", s->name);
	if (len >= 0) {
		dput(&d, " %s=", s->fields[t->o.events[i].field].name);
		dput_esc(&d, text, (size_t)len);
	}
	dput(&d, " by pid %" PRIu64, ev->pid);
	proc_names(t, defs, ev->pid, &comm, &exe);
	if (comm) {
		dput(&d, " (");
		dput_esc(&d, comm, strlen(comm));
		dput(&d, ")");
	}
	t->st.events++;
	return "event";
}

/* A process's last thread ended: proc_exit with thread 0. */
static const char *on_proc_exit(struct sp_triggers *t, const struct sp_event *ev,
				struct sp_defs *defs, char *detail, size_t n)
{
	if (ev->nfields < 3 || ev->field[2].u)
		return NULL;
	return check_exit(t, defs, ev->pid, (int64_t)ev->field[0].u,
			  (unsigned int)ev->field[1].u, detail, n);
}

const char *sp_triggers_check(struct sp_triggers *t, const struct sp_record *rec,
			      struct sp_defs *defs, char *detail, size_t n)
{
	const char *name = NULL;

	switch (rec->kind) {
	case SP_REC_PROCESS:
		if (t->o.exit || t->o.nevents)
			track_proc(t, &rec->process);
		break;
	case SP_REC_PROCESS_END:
		name = on_process_end(t, &rec->process_end, defs, detail, n);
		break;
	case SP_REC_EVENT:
		if (rec->event.kind == SP_EV_PROC_EXIT)
			name = on_proc_exit(t, &rec->event, defs, detail, n);
		if (!name && t->o.nevents)
			name = on_event(t, &rec->event, defs, detail, n);
		break;
	case SP_REC_SPAN_START:
		if (t->o.nspans)
			on_span_start(t, &rec->mark);
		break;
	case SP_REC_SPAN_STOP:
		if (t->o.nspans)
			name = on_span_stop(t, &rec->mark, defs, detail, n);
		break;
	default:
		break;
	}
	if (!name && t->o.nspans && t->open.n)
		name = scan_open_spans(t, sp_record_time(rec), defs, detail, n);
	return name;
}

void sp_triggers_remap(struct sp_triggers *t, const struct sp_remap *m)
{
	uint64_t pid, v, comm, exe, *at;
	size_t i;

	for (i = 0; sp_u64map_next(&t->procs, &i, &pid, &v);) {
		comm = m->id(m->ctx, SP_REF_STRING, v >> 32);
		exe = m->id(m->ctx, SP_REF_STRING, v & 0xffffffffu);
		at = sp_u64map_get(&t->procs, pid);
		*at = (comm <= 0xffffffffu ? comm << 32 : 0) | (exe <= 0xffffffffu ? exe : 0);
	}
	/* the free ones too: their ids are not looked at again */
	for (i = 0; i < t->nspans; i++) {
		t->spans[i].klass = m->id(m->ctx, SP_REF_STRING, t->spans[i].klass);
		t->spans[i].method = m->id(m->ctx, SP_REF_STRING, t->spans[i].method);
	}
}

void sp_triggers_free(struct sp_triggers *t)
{
	if (!t)
		return;
	sp_triggers_cmd_stop(t);
	sp_u64map_release(&t->procs);
	sp_u64map_release(&t->open);
	free(t->spans);
	free(t->free_spans);
	sp_buf_release(&t->name);
	free(t);
}
