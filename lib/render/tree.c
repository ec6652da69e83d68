// SPDX-License-Identifier: MIT
/*
 * The recording as a tree (docs/sp-tree.md): processes, their spans, the
 * events of each span, and child processes and threads under the fork or
 * clone that started them.
 *
 * Placement: a span goes under its parent span; a root span under the
 * thread container of its thread when it was started under a fork span and
 * the clone was seen, else under its process. An event goes under its span
 * (rules thread and gap); an event assigned by the fork rule goes under the
 * container of its thread or process, which hangs under the fork event that
 * started it. A process whose fork was not seen is a top-level root.
 *
 * The depth of the tree is the input's (a recursion a million calls deep is
 * a million nested spans): every walk over it keeps its own stack on the
 * heap, none recurses.
 */
#include <arpa/inet.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "correlate.h"
#include "escape.h"
#include "events.h"
#include "hashmap.h"
#include "sp.h"
#include "tree.h"

enum { N_PROC = 1, N_THREAD, N_SPAN, N_EVENT };

struct tnode {
	struct tnode *first, *last, *next;
	uint64_t time, seq;	/* sort key */
	uint64_t sig;		/* subtree signature for collapsing, 0 = not yet */
	uint8_t type;
	bool keep, sorted;
};

/* Nodes are allocated one by one and freed once printed (streaming). */

struct tproc {
	struct tnode n;
	uint64_t pid, ppid, status, flags;
	const char *comm, *exe;
	bool defined, attached, exited, streamed;
	struct tproc *next_root, *prev_root;
};

struct tthread {
	struct tnode n;
	uint64_t tid, pid;
};

struct tspan {
	struct tnode n;
	uint64_t id, tid, pid, start, stop, end, samples, total, offcpu, line, runtime, raises;
	const char *klass, *method, *file, *error, *message;
};

struct tevent {
	struct tnode n;
	uint64_t pid, tid, kind, rule;
	uint32_t nvals;
	uint64_t vals[];
};

struct arena {
	struct arena *next;
	size_t used, size;
	char data[];
};

struct sp_tree {
	struct sp_tree_opts o;
	struct arena *arena;
	uint64_t seq;

	/* per stream */
	char **strs;
	size_t nstrs, capstrs;
	uint64_t nspans;		/* span ids given so far */
	struct sp_u64map procs, threads, spans;	/* pid, tid, span id -> live node */
	struct tspan *last_span;

	/* whole recording */
	struct tproc *roots, *roots_tail;
	bool have_header;
	uint64_t start_wall, start_mono, period_ns, end_time, max_time, lost[3];
	char *command;
	uint64_t nprocs, nspans_total, nevents, orphans;

	/* streaming (docs/sp-tree.md): nodes held, the process being printed */
	uint64_t live, limit;
	struct tproc *streaming;
	bool head_done;		/* the opening lines are out */
	uint64_t emitted;	/* top-level items of streaming written (JSON commas) */
	uint64_t emitted_procs;

	/* printing */
	FILE *out;
	bool stable, color, json;
	struct tnode **sortbuf;
	size_t capsort;

	/* the nodes still to visit of has_live() and tree_nodes() */
	struct tnode **walk;
	size_t capwalk;
};

/* ---- memory ----------------------------------------------------------- */

static void *alloc(struct sp_tree *t, size_t n)
{
	struct arena *a = t->arena;
	void *p;

	n = (n + 7) & ~(size_t)7;
	if (!a || a->used + n > a->size) {
		size_t size = n > (1u << 20) ? n : (1u << 20);

		a = sp_xmalloc(sizeof(*a) + size);
		a->size = size;
		a->used = 0;
		a->next = t->arena;
		t->arena = a;
	}
	p = a->data + a->used;
	a->used += n;
	memset(p, 0, n);
	return p;
}

/*
 * A string of the input, kept in its text form (escape.h): what sp-tree
 * shows, matches and sorts is that, so no name reaches a line raw.
 */
static char *copy_str(struct sp_tree *t, const void *p, size_t len)
{
	size_t n = sp_esc_text(NULL, 0, p, len, 0);
	char *s = alloc(t, n + 1);

	if (n == len) {
		memcpy(s, p, len);
		s[len] = 0;
	} else {
		sp_esc_text(s, n + 1, p, len, 0);
	}
	return s;
}

static const char *tstr(struct sp_tree *t, uint64_t id)
{
	return id && id <= t->nstrs ? t->strs[id - 1] : NULL;
}

static void *node_new(struct sp_tree *t, size_t size, uint8_t type, uint64_t time)
{
	struct tnode *n = sp_xcalloc(1, size);

	t->live++;
	n->type = type;
	n->time = time;
	n->seq = t->seq++;
	return n;
}

static void append(struct tnode *parent, struct tnode *child)
{
	child->next = NULL;
	if (parent->last)
		parent->last->next = child;
	else
		parent->first = child;
	parent->last = child;
	parent->sorted = false;
}

/* ---- building --------------------------------------------------------- */

static void stream_proc(struct sp_tree *t, struct tproc *p);
static bool is_root(const struct sp_tree *t, const struct tproc *p);

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

struct sp_tree *sp_tree_new(const struct sp_tree_opts *opts)
{
	struct sp_tree *t = sp_xcalloc(1, sizeof(*t));

	if (opts)
		t->o = *opts;
	t->limit = t->o.buffer_nodes;
	return t;
}

static void add_root(struct sp_tree *t, struct tproc *p)
{
	p->prev_root = t->roots_tail;
	if (t->roots_tail)
		t->roots_tail->next_root = p;
	else
		t->roots = p;
	t->roots_tail = p;
}

static void del_root(struct sp_tree *t, struct tproc *p)
{
	if (p->prev_root)
		p->prev_root->next_root = p->next_root;
	else
		t->roots = p->next_root;
	if (p->next_root)
		p->next_root->prev_root = p->prev_root;
	else
		t->roots_tail = p->prev_root;
}

/* Forget the id, pid or tid that names node n, and free it. */
static void free_node(struct sp_tree *t, struct tnode *n)
{
	uint64_t key = 0, *v;
	struct sp_u64map *m = NULL;

	switch (n->type) {
	case N_PROC:
		m = &t->procs;
		key = ((struct tproc *)n)->pid;
		del_root(t, (struct tproc *)n);
		break;
	case N_THREAD:
		m = &t->threads;
		key = ((struct tthread *)n)->tid;
		break;
	case N_SPAN:
		m = &t->spans;
		key = ((struct tspan *)n)->id;
		if (t->last_span == (struct tspan *)n)
			t->last_span = NULL;
		break;
	}
	if (m && (v = sp_u64map_get(m, key)) && *v == (uint64_t)(uintptr_t)n)
		sp_u64map_del(m, key);
	t->live--;
	free(n);
}

/*
 * Free a printed subtree and forget the ids, pids and tids that named it.
 * The nodes still to free are one list: a node's children go in front of
 * the rest as it is freed (root's siblings are not touched).
 */
static void free_tree(struct sp_tree *t, struct tnode *root)
{
	struct tnode *n = root, *todo = NULL, *c;

	for (;;) {
		if (n->first) {
			for (c = n->first; c->next; c = c->next)
				;
			c->next = todo;
			todo = n->first;
		}
		free_node(t, n);
		if (!todo)
			break;
		n = todo;
		todo = n->next;
	}
}

static struct tproc *proc_new(struct sp_tree *t, uint64_t pid, uint64_t time)
{
	struct tproc *p = node_new(t, sizeof(*p), N_PROC, time);

	p->pid = pid;
	sp_u64map_put(&t->procs, pid, (uint64_t)(uintptr_t)p);
	add_root(t, p);
	t->nprocs++;
	return p;
}

static struct tproc *proc_get(struct sp_tree *t, uint64_t pid, uint64_t time)
{
	uint64_t *v = sp_u64map_get(&t->procs, pid);

	return v ? (struct tproc *)(uintptr_t)*v : proc_new(t, pid, time);
}

/* Whether process pid descends from process anc, by the parents known. */
static bool is_ancestor(struct sp_tree *t, uint64_t anc, uint64_t pid)
{
	unsigned int hops;
	uint64_t *v;

	for (hops = 0; pid && hops < 4096; hops++) {
		struct tproc *p;

		if (pid == anc)
			return true;
		v = sp_u64map_get(&t->procs, pid);
		p = v ? (struct tproc *)(uintptr_t)*v : NULL;
		if (!p || !p->attached)
			return false;
		pid = p->ppid;
	}
	return hops >= 4096;
}

static struct tthread *thread_of(struct sp_tree *t, uint64_t tid, uint64_t pid)
{
	uint64_t *v = sp_u64map_get(&t->threads, tid);
	struct tthread *th = v ? (struct tthread *)(uintptr_t)*v : NULL;

	return th && th->pid == pid ? th : NULL;
}

static void reset_stream(struct sp_tree *t)
{
	t->nstrs = 0;
	t->nspans = 0;
	t->last_span = NULL;
	sp_u64map_release(&t->procs);
	sp_u64map_release(&t->threads);
	sp_u64map_release(&t->spans);
}

static void add_header(struct sp_tree *t, const struct sp_header *h)
{
	reset_stream(t);
	if (t->have_header)
		return;
	t->have_header = true;
	t->start_wall = h->start_wall_ns;
	t->start_mono = h->start_mono_ns;
	if (h->sample_freq)
		t->period_ns = 1000000000ull / h->sample_freq;
	else if (h->event.len == 9 && !memcmp(h->event.p, "cpu-clock", 9))
		t->period_ns = h->sample_period;
	else if (h->event.len == 10 && !memcmp(h->event.p, "task-clock", 10))
		t->period_ns = h->sample_period;
	if (h->command.len)
		t->command = copy_str(t, h->command.p, h->command.len);
}

static void add_process(struct sp_tree *t, const struct sp_process *r)
{
	uint64_t *v = sp_u64map_get(&t->procs, r->pid);
	struct tproc *p = v ? (struct tproc *)(uintptr_t)*v : NULL;

	if (p && p->defined && !(r->flags & SP_PROC_EXEC))
		p = NULL;	/* the pid was reused */
	if (!p)
		p = proc_new(t, r->pid, r->time);
	p->defined = true;
	if (r->ppid)
		p->ppid = r->ppid;
	if (tstr(t, r->comm))
		p->comm = tstr(t, r->comm);
	if (tstr(t, r->exe))
		p->exe = tstr(t, r->exe);
}

static void add_span(struct sp_tree *t, const struct sp_span *r)
{
	struct tspan *s = node_new(t, sizeof(*s), N_SPAN, r->start);
	struct tnode *parent = NULL;
	struct tthread *th;
	uint64_t *v;

	s->tid = r->tid;
	s->pid = r->pid;
	s->start = r->start;
	s->stop = r->stop;
	s->end = r->end;
	s->samples = r->samples;
	s->total = r->total_samples;
	s->offcpu = r->offcpu_ns;
	s->line = r->line;
	s->runtime = r->runtime;
	s->klass = tstr(t, r->klass);
	s->method = tstr(t, r->method);
	s->file = tstr(t, r->file);
	s->error = tstr(t, r->error);
	s->id = ++t->nspans;
	sp_u64map_put(&t->spans, s->id, (uint64_t)(uintptr_t)s);
	t->nspans_total++;
	t->last_span = s;
	if (r->stop > t->max_time)
		t->max_time = r->stop;
	if (r->parent && r->parent < s->id && (v = sp_u64map_get(&t->spans, r->parent)))
		parent = (struct tnode *)(uintptr_t)*v;
	else if (r->fork_span && (th = thread_of(t, r->tid, r->pid)))
		parent = &th->n;
	else
		parent = &proc_get(t, r->pid, r->start)->n;
	/*
	 * A top-level span: sp-correlate writes a span tree whole once its
	 * outermost span closes, so what the process held before it is finished.
	 */
	if (parent->type == N_PROC && t->out && t->limit && t->live > t->limit &&
	    (!t->streaming || t->streaming == (struct tproc *)parent) &&
	    is_root(t, (struct tproc *)parent))
		stream_proc(t, (struct tproc *)parent);
	append(parent, &s->n);
}

static struct tspan *span_by_id(struct sp_tree *t, uint64_t id)
{
	uint64_t *v = id ? sp_u64map_get(&t->spans, id) : NULL;

	return v ? (struct tspan *)(uintptr_t)*v : NULL;
}

static void add_event(struct sp_tree *t, const struct sp_event *r)
{
	const struct sp_event_schema *es = sp_event_schema(r->kind);
	unsigned int i, n = es ? es->nfields : 0;
	size_t extra = 0;
	uint8_t *bytes;
	struct tevent *e;
	struct tnode *parent = NULL;
	struct tthread *th;
	struct tspan *s;
	uint64_t *v;

	if (n > r->nfields)
		n = r->nfields;
	for (i = 0; i < n; i++)
		if ((es->fields[i].type == SP_FT_ADDR || es->fields[i].type == SP_FT_BYTES) &&
		    r->field[i].b.len && r->field[i].b.len <= 255)
			extra += r->field[i].b.len + 1u;
	/* the event and its address and byte fields in one allocation */
	e = node_new(t, sizeof(*e) + n * sizeof(uint64_t) + extra, N_EVENT, r->time);
	bytes = (uint8_t *)&e->vals[n];
	e->pid = r->pid;
	e->tid = r->tid;
	e->kind = r->kind;
	e->rule = r->rule;
	e->nvals = n;
	for (i = 0; i < n; i++) {
		const struct sp_value *f = &r->field[i];
		uint8_t *b;

		switch (es->fields[i].type) {
		case SP_FT_STR:
			e->vals[i] = (uintptr_t)tstr(t, f->u);
			break;
		case SP_FT_ADDR:
		case SP_FT_BYTES:
			if (!f->b.len || f->b.len > 255)
				break;
			b = bytes;
			bytes += f->b.len + 1u;
			b[0] = (uint8_t)f->b.len;
			memcpy(b + 1, f->b.p, f->b.len);
			e->vals[i] = (uintptr_t)b;
			break;
		default:
			e->vals[i] = f->u;
			break;
		}
	}
	t->nevents++;
	if (r->time > t->max_time)
		t->max_time = r->time;
	if (r->rule == SP_RULE_FORK) {
		th = thread_of(t, r->tid, r->pid);
		parent = th ? &th->n : &proc_get(t, r->pid, r->time)->n;
	} else if ((s = span_by_id(t, r->span))) {
		parent = &s->n;
	} else {
		if (r->rule)
			t->orphans++;
		parent = &proc_get(t, r->pid, r->time)->n;
	}
	append(parent, &e->n);

	if (r->kind == SP_EV_PROC_EXEC && n >= 1 && e->vals[0]) {
		const char *file = (const char *)(uintptr_t)e->vals[0];

		proc_get(t, r->pid, r->time)->comm = base_name(file);
	}
	if (r->kind == SP_EV_PROC_FORK && n >= 3) {
		uint64_t child = r->field[0].u, ctid = r->field[1].u;

		if (r->field[2].u & SP_FORK_THREAD) {
			th = node_new(t, sizeof(*th), N_THREAD, r->time);
			th->tid = ctid;
			th->pid = r->pid;
			sp_u64map_put(&t->threads, ctid, (uint64_t)(uintptr_t)th);
			append(&e->n, &th->n);
		} else if (child && child != r->pid) {
			struct tproc *p;

			v = sp_u64map_get(&t->procs, child);
			p = v ? (struct tproc *)(uintptr_t)*v : NULL;
			/* attached, or an ancestor of the forking process (a pid
			 * reused, or a forged stream): a process of its own, never
			 * a cycle */
			if (!p || p->attached || is_ancestor(t, child, r->pid))
				p = proc_new(t, child, r->time);
			p->attached = true;
			if (!p->ppid)
				p->ppid = r->pid;
			if (p->n.time > r->time)
				p->n.time = r->time;
			append(&e->n, &p->n);
		}
	}
}

void sp_tree_add(struct sp_tree *t, const struct sp_record *rec)
{
	struct tproc *p;
	uint64_t *v;

	switch (rec->kind) {
	case SP_REC_HEADER:
		add_header(t, &rec->header);
		break;
	case SP_REC_STRING:
		if (t->nstrs == t->capstrs)
			sp_grow(&t->strs, &t->capstrs, t->nstrs + 1, sizeof(*t->strs));
		t->strs[t->nstrs++] = copy_str(t, rec->string.value.p, rec->string.value.len);
		break;
	case SP_REC_PROCESS:
		add_process(t, &rec->process);
		break;
	case SP_REC_SPAN:
		add_span(t, &rec->span);
		break;
	case SP_REC_EVENT:
		add_event(t, &rec->event);
		break;
	case SP_REC_SPAN_RAISE:
		/* a raise follows the span that owns it (docs/correlate.md) */
		if (t->last_span && t->last_span->tid == rec->mark.tid) {
			t->last_span->raises++;
			if (!t->last_span->error)
				t->last_span->error = tstr(t, rec->mark.klass);
			t->last_span->message = tstr(t, rec->mark.method);
		}
		break;
	case SP_REC_PROCESS_END:
		v = sp_u64map_get(&t->procs, rec->process_end.pid);
		if (v) {
			p = (struct tproc *)(uintptr_t)*v;
			p->exited = true;
			p->status = rec->process_end.status;
			p->flags = rec->process_end.flags;
		}
		break;
	case SP_REC_LOST:
		if (rec->lost.what < 3)
			t->lost[rec->lost.what] += rec->lost.count;
		break;
	case SP_REC_END:
		t->end_time = rec->end.time;
		break;
	default:
		break;
	}
}

uint64_t sp_tree_nodes_held(const struct sp_tree *t)
{
	return t->live;
}

uint64_t sp_tree_orphans(const struct sp_tree *t)
{
	return t->orphans;
}

void sp_tree_free(struct sp_tree *t)
{
	struct arena *a, *next;

	struct tproc *p;

	if (!t)
		return;
	for (;;) {
		for (p = t->roots; p && p->attached; p = p->next_root)
			;
		if (!p)
			break;
		free_tree(t, &p->n);
	}
	for (a = t->arena; a; a = next) {
		next = a->next;
		free(a);
	}
	free(t->strs);
	free(t->sortbuf);
	free(t->walk);
	sp_u64map_release(&t->procs);
	sp_u64map_release(&t->threads);
	sp_u64map_release(&t->spans);
	free(t);
}

/* ---- rendering one line ----------------------------------------------- */

struct lb {
	char buf[4096];
	size_t len;
};

static void lb_add(struct lb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void lb_add(struct lb *b, const char *fmt, ...)
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

static void lb_color(struct lb *b, bool on, const char *code)
{
	if (on)
		lb_add(b, "\033[%sm", code);
}

static void fmt_dur(char *buf, size_t size, uint64_t ns)
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
static void span_name(struct lb *b, const struct tspan *s)
{
	if (s->end == SP_END_SYNTHETIC) {
		lb_add(b, "<no-span>");
		return;
	}
	if (s->klass && *s->klass && s->runtime == SP_RT_RUBY)
		lb_add(b, "%s#%s", s->klass, s->method ? s->method : "?");
	else if (s->klass && *s->klass)
		lb_add(b, "%s.%s", s->klass, s->method ? s->method : "?");
	else
		lb_add(b, "%s", s->method ? s->method : "?");
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

static const char *group_name(uint64_t kind)
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

/* Sums over a collapsed group of spans. */
struct agg {
	uint64_t count, dur, total, samples;
	bool open;
};

static void render_cpu(struct sp_tree *t, struct lb *b, uint64_t total, uint64_t self)
{
	char x[32], y[32];

	if (!total)
		return;
	if (t->period_ns) {
		fmt_dur(x, sizeof(x), total * t->period_ns);
		fmt_dur(y, sizeof(y), self * t->period_ns);
		if (self != total)
			lb_add(b, " cpu=%s self=%s", x, y);
		else
			lb_add(b, " cpu=%s", x);
	} else if (self != total) {
		lb_add(b, " samples=%llu self=%llu", (unsigned long long)total,
		       (unsigned long long)self);
	} else {
		lb_add(b, " samples=%llu", (unsigned long long)total);
	}
}

/*
 * One line for node n (without tree connector). base is the time offsets
 * count from; ag is set for a collapsed group.
 */
static void render(struct sp_tree *t, struct lb *b, const struct tnode *n, uint64_t base,
		   const struct agg *ag, bool stable, bool color)
{
	char d[32], txt[2048];

	b->len = 0;
	b->buf[0] = 0;
	if (ag && ag->count > 1)
		lb_add(b, "×%llu ", (unsigned long long)ag->count);
	switch (n->type) {
	case N_PROC: {
		const struct tproc *p = (const void *)n;

		lb_color(b, color, "1");
		lb_add(b, "[PROC");
		if (!stable)
			lb_add(b, " pid=%llu", (unsigned long long)p->pid);
		lb_add(b, " comm=%s", p->comm ? p->comm : "?");
		if (!stable && p->ppid)
			lb_add(b, " parent=%llu", (unsigned long long)p->ppid);
		if (p->exited && (p->flags & SP_PEND_SIGNALED))
			lb_add(b, " killed=%llu", (unsigned long long)(p->status - 128));
		else if (p->exited && !(p->flags & SP_PEND_EXEC))
			lb_add(b, " exit=%llu", (unsigned long long)p->status);
		lb_add(b, "]");
		lb_color(b, color, "0");
		break;
	}
	case N_THREAD: {
		const struct tthread *th = (const void *)n;

		lb_add(b, "[THREAD");
		if (!stable)
			lb_add(b, " tid=%llu", (unsigned long long)th->tid);
		lb_add(b, "]");
		break;
	}
	case N_SPAN: {
		const struct tspan *s = (const void *)n;
		bool gap = s->end == SP_END_SYNTHETIC;

		lb_add(b, "[SPAN");
		if (!stable)
			lb_add(b, " tid=%llu", (unsigned long long)s->tid);
		lb_add(b, " ");
		lb_color(b, color, gap ? "2" : "1;36");
		span_name(b, s);
		lb_color(b, color, "0");
		if (s->file && !gap) {
			lb_add(b, " at=%s", base_name(s->file));
			if (s->line)
				lb_add(b, ":%llu", (unsigned long long)s->line);
		}
		if (!stable) {
			if (ag && ag->count > 1) {
				fmt_dur(d, sizeof(d), ag->dur);
				lb_add(b, " dur=%s%s", ag->open ? ">" : "", d);
				render_cpu(t, b, ag->total, ag->samples);
			} else {
				if (s->stop >= s->start && (s->stop || !s->start)) {
					fmt_dur(d, sizeof(d), s->stop - s->start);
					lb_add(b, " dur=%s", d);
				} else {
					lb_add(b, " dur=?");
				}
				render_cpu(t, b, s->total, s->samples);
			}
		}
		lb_add(b, "]");
		if (s->end == SP_END_OPEN) {
			lb_color(b, color, "33");
			lb_add(b, " (open)");
			lb_color(b, color, "0");
		} else if (s->end == SP_END_INCOMPLETE) {
			lb_color(b, color, "33");
			lb_add(b, " (incomplete)");
			lb_color(b, color, "0");
		}
		if (s->end == SP_END_RAISED || s->error) {
			lb_color(b, color, "31");
			lb_add(b, " (raise %s", s->error ? s->error : "?");
			if (s->message && *s->message) {
				size_t m = strnlen(s->message, 201);

				if (m > 200)	/* the first 200 bytes, whole characters */
					m = sp_esc_text_trim(s->message, 200);
				lb_add(b, ": \"%.*s\"", (int)m, s->message);
			}
			lb_add(b, ")");
			lb_color(b, color, "0");
		}
		break;
	}
	case N_EVENT: {
		const struct tevent *e = (const void *)n;
		const struct sp_event_schema *es = sp_event_schema(e->kind);
		const char *eq;

		sp_event_text(txt, sizeof(txt), e->kind, e->vals, e->nvals, stable);
		lb_color(b, color, group_color(e->kind));
		lb_add(b, "%-4s %s", group_tag(e->kind), es ? es->name : "event");
		lb_color(b, color, "0");
		eq = color ? strstr(txt, " = -") : NULL;
		if (eq) {
			lb_add(b, " → %.*s", (int)(eq - txt), txt);
			lb_color(b, color, "31");
			lb_add(b, "%s", eq);
			lb_color(b, color, "0");
		} else {
			lb_add(b, " → %s", txt);
		}
		if (!stable && !(ag && ag->count > 1)) {
			fmt_dur(d, sizeof(d), e->n.time >= base ? e->n.time - base : 0);
			lb_color(b, color, "2");
			lb_add(b, "  @+%s%s", e->n.time >= base ? "" : "-", d);
			lb_color(b, color, "0");
		}
		break;
	}
	}
}

/* ---- ordering, filtering, collapsing ---------------------------------- */

static uint64_t node_tid(const struct tnode *n)
{
	switch (n->type) {
	case N_SPAN: return ((const struct tspan *)n)->tid;
	case N_EVENT: return ((const struct tevent *)n)->tid;
	case N_PROC: return ((const struct tproc *)n)->pid;
	case N_THREAD: return ((const struct tthread *)n)->tid;
	}
	return 0;
}

static int cmp_time(const void *a, const void *b)
{
	const struct tnode *x = *(const struct tnode *const *)a, *y = *(const struct tnode *const *)b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A thread's run of siblings, for the stable order. */
struct sgroup {
	char *key;		/* stable text of its first item */
	uint64_t hash;		/* of the signatures of all its items */
	size_t first, rank;
};

struct sitem {
	struct tnode *n;
	size_t rank, idx;
};

static struct sgroup *cmp_groups;

static int cmp_group(const void *a, const void *b)
{
	const struct sgroup *x = &cmp_groups[*(const size_t *)a];
	const struct sgroup *y = &cmp_groups[*(const size_t *)b];
	int c;

	if (!x->key || !y->key)		/* group 0: the node's own thread */
		return !x->key ? (!y->key ? 0 : -1) : 1;
	c = strcmp(x->key, y->key);
	if (c)
		return c;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_item(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint64_t signature(struct sp_tree *t, struct tnode *n);

/*
 * Reorder the time-sorted t->sortbuf[0..k) for --stable: the node's own
 * thread first in time order, then each other thread's items in time order,
 * the threads ordered by what they did (the text of their first item, then
 * a hash of all of it), not by tid or interleaving.
 */
static void stable_order(struct sp_tree *t, struct tnode *n, size_t k)
{
	struct sp_u64map groups_of = SP_U64MAP_INIT;
	struct sgroup *g = sp_xcalloc(k + 1, sizeof(*g));
	struct sitem *it = sp_xcalloc(k, sizeof(*it));
	size_t *order, ng = 1, i, gi;
	uint64_t own = node_tid(n), *v;
	struct lb lb;

	/* signature() sorts grandchildren with t->sortbuf: work on a copy */
	for (i = 0; i < k; i++)
		it[i].n = t->sortbuf[i];
	for (i = 0; i < k; i++) {
		uint64_t tid = node_tid(it[i].n);

		if (tid == own) {
			gi = 0;
		} else if ((v = sp_u64map_get(&groups_of, tid))) {
			gi = *v;
		} else {
			gi = ng++;
			sp_u64map_put(&groups_of, tid, gi);
			g[gi].first = i;
			render(t, &lb, it[i].n, 0, NULL, true, false);
			g[gi].key = sp_xstrdup(lb.buf);
		}
		g[gi].hash = sp_hash_mix(g[gi].hash, signature(t, it[i].n));
		it[i].idx = i;
		it[i].rank = gi;	/* group index for now */
	}
	order = sp_xmalloc(ng * sizeof(*order));
	for (i = 0; i < ng; i++)
		order[i] = i;
	cmp_groups = g;
	qsort(order, ng, sizeof(*order), cmp_group);
	for (i = 0; i < ng; i++)
		g[order[i]].rank = i;
	for (i = 0; i < k; i++)
		it[i].rank = g[it[i].rank].rank;
	qsort(it, k, sizeof(*it), cmp_item);
	for (i = 0; i < k; i++)
		t->sortbuf[i] = it[i].n;
	for (i = 0; i < ng; i++)
		free(g[i].key);
	free(order);
	free(it);
	free(g);
	sp_u64map_release(&groups_of);
}

/* Sort n's children by time (--stable: see stable_order()). */
static void sort_children(struct sp_tree *t, struct tnode *n)
{
	struct tnode *c;
	size_t k = 0, i;

	if (n->sorted)
		return;
	n->sorted = true;
	for (c = n->first; c; c = c->next)
		k++;
	if (k < 2)
		return;
	if (k > t->capsort)
		sp_grow(&t->sortbuf, &t->capsort, k, sizeof(*t->sortbuf));
	for (i = 0, c = n->first; c; c = c->next)
		t->sortbuf[i++] = c;
	qsort(t->sortbuf, k, sizeof(*t->sortbuf), cmp_time);
	if (t->stable && n->type != N_EVENT)
		stable_order(t, n, k);
	n->first = t->sortbuf[0];
	for (i = 0; i + 1 < k; i++)
		t->sortbuf[i]->next = t->sortbuf[i + 1];
	t->sortbuf[k - 1]->next = NULL;
	n->last = t->sortbuf[k - 1];
}

static bool in_list(const uint64_t *v, size_t n, uint64_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static bool name_matches(struct sp_tree *t, const struct tspan *s)
{
	struct lb b = { .len = 0 };
	size_t i;

	span_name(&b, s);
	for (i = 0; i < t->o.nspans; i++)
		if (!fnmatch(t->o.spans[i], b.buf, 0) ||
		    (s->method && !fnmatch(t->o.spans[i], s->method, 0)))
			return true;
	return false;
}

/* A node of compute_keep()'s walk: what holds for it and what is under it. */
struct kframe {
	struct tnode *n, *next;	/* next: the child to visit next */
	bool name_ok, tid_ok, self, any;
};

/*
 * What node f->n decides by itself, before its children; false when it is
 * hidden with everything under it (shorter than --min-dur).
 */
static bool keep_enter(struct sp_tree *t, struct kframe *f)
{
	bool selective = t->o.nspans || t->o.ntids || t->o.event_kinds;
	struct tnode *n = f->n;

	f->self = !selective;
	f->any = false;
	f->next = n->first;
	switch (n->type) {
	case N_SPAN: {
		const struct tspan *s = (const void *)n;

		if (t->o.min_dur_ns && s->stop && s->stop - s->start < t->o.min_dur_ns &&
		    s->end != SP_END_OPEN && s->end != SP_END_SYNTHETIC) {
			n->keep = false;
			return false;
		}
		f->name_ok = f->name_ok || !t->o.nspans || name_matches(t, s);
		f->tid_ok = !t->o.ntids || in_list(t->o.tids, t->o.ntids, s->tid);
		if (selective)
			f->self = f->name_ok && f->tid_ok && !t->o.event_kinds;
		break;
	}
	case N_EVENT: {
		const struct tevent *e = (const void *)n;
		bool kind_ok = !t->o.event_kinds ||
			       (e->kind < 64 && (t->o.event_kinds & (1ull << e->kind)));

		f->self = !t->o.no_events && kind_ok && (f->name_ok || !t->o.nspans) &&
			  (f->tid_ok || !t->o.ntids);
		break;
	}
	default:
		break;
	}
	return true;
}

/*
 * Decide what is shown under root: a node is kept when it matches the
 * filters itself or something under it does. name_ok: a span above matched
 * --span; tid_ok: the span above is of a --tid thread.
 */
static bool compute_keep(struct sp_tree *t, struct tnode *root, bool name_ok, bool tid_ok)
{
	struct kframe *st = sp_xmalloc(16 * sizeof(*st)), *f;
	size_t n = 1, cap = 16;
	struct tnode *c;
	bool keep;

	st[0] = (struct kframe){ .n = root, .name_ok = name_ok, .tid_ok = tid_ok };
	if (!keep_enter(t, &st[0])) {
		free(st);
		return false;
	}
	while (n) {
		f = &st[n - 1];
		if ((c = f->next)) {
			f->next = c->next;
			sp_grow(&st, &cap, n + 1, sizeof(*st));
			st[n] = (struct kframe){ .n = c, .name_ok = st[n - 1].name_ok,
						 .tid_ok = st[n - 1].tid_ok };
			if (keep_enter(t, &st[n]))
				n++;
			continue;
		}
		keep = f->n->keep = f->self || f->any;
		if (--n)
			st[n - 1].any |= keep;
	}
	free(st);
	return root->keep;
}

/*
 * A node's fingerprint: 64-bit FNV-1a of its stable text, from seed h. Not a
 * table hash (those are hashmap.h's): through the signatures it goes into,
 * its values order --stable's thread groups whose first lines are the same
 * (cmp_group()), so they are part of sp-tree's output: never change it.
 */
static uint64_t text_fingerprint(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

/* n's signature, once its children's are known. */
static void sign(struct sp_tree *t, struct tnode *n)
{
	struct lb b;
	struct tnode *c;
	uint64_t h;

	sort_children(t, n);
	render(t, &b, n, 0, NULL, true, false);
	h = text_fingerprint(0xcbf29ce484222325ull ^ n->type, b.buf);
	for (c = n->first; c; c = c->next)
		if (c->keep)
			h = sp_hash_mix(h, c->sig);
	n->sig = h ? h : 1;
}

/*
 * A hash of what the node and its kept children print in stable form.
 * Children first (every child: sorting them for --stable needs theirs),
 * by a walk of its own; a node's signature is kept once computed.
 */
static uint64_t signature(struct sp_tree *t, struct tnode *root)
{
	struct tnode **st, *n, *c;
	size_t k = 1, cap = 16;

	if (root->sig)
		return root->sig;
	if (!root->first) {
		sign(t, root);
		return root->sig;
	}
	/* each entry: a node whose children are being signed, and the next */
	st = sp_xmalloc(2 * cap * sizeof(*st));
	st[0] = root;
	st[1] = root->first;
	while (k) {
		n = st[2 * (k - 1)];
		c = st[2 * (k - 1) + 1];
		while (c && c->sig)
			c = c->next;
		if (c) {
			st[2 * (k - 1) + 1] = c->next;
			if (!c->first) {
				sign(t, c);
				continue;
			}
			if (k == cap) {
				cap *= 2;
				st = sp_xrealloc(st, 2 * cap * sizeof(*st));
			}
			st[2 * k] = c;
			st[2 * k + 1] = c->first;
			k++;
			continue;
		}
		sign(t, n);
		k--;
	}
	free(st);
	return root->sig;
}

/*
 * The kept sibling run that starts at kept node c: c and the identical kept
 * siblings that follow it (unless --no-collapse), summed into ag. Returns
 * the node after the run (maybe not kept).
 */
static struct tnode *group_end(struct sp_tree *t, struct tnode *c, struct agg *ag)
{
	struct tnode *next;

	memset(ag, 0, sizeof(*ag));
	ag->count = 1;
	if (c->type == N_SPAN) {
		const struct tspan *s = (const void *)c;

		ag->dur = s->stop > s->start ? s->stop - s->start : 0;
		ag->total = s->total;
		ag->samples = s->samples;
		ag->open = !s->stop;
	}
	for (next = c->next; next; next = next->next) {
		if (!next->keep)
			continue;
		if (t->o.no_collapse || next->type != c->type || next->type == N_PROC ||
		    (!t->stable && node_tid(next) != node_tid(c)) ||
		    signature(t, next) != signature(t, c))
			break;
		ag->count++;
		if (next->type == N_SPAN) {
			const struct tspan *s = (const void *)next;

			ag->dur += s->stop > s->start ? s->stop - s->start : 0;
			ag->total += s->total;
			ag->samples += s->samples;
			ag->open |= !s->stop;
		}
	}
	return next;
}

static struct tnode *next_kept(struct tnode *c)
{
	while (c && !c->keep)
		c = c->next;
	return c;
}

/* ---- text ------------------------------------------------------------- */

/* Levels of a line's prefix drawn in full; a deeper line starts with
 * "… +N " for the N levels above those. */
#define INDENT_LEVELS 100

/* The tree drawing in front of a line: one segment per level above it. */
struct prefix {
	char *txt;		/* the segments, "│  " or "   " */
	size_t *off;		/* off[i]: where level i's segment starts in txt */
	size_t len, cap;	/* levels */
};

static void prefix_push(struct prefix *pf, bool last)
{
	const char *seg = last ? "   " : "│  ";
	size_t at;

	if (pf->len + 2 > pf->cap) {
		pf->cap = pf->cap ? 2 * pf->cap : 64;
		pf->off = sp_xrealloc(pf->off, pf->cap * sizeof(*pf->off));
		pf->txt = sp_xrealloc(pf->txt, pf->cap * 5);	/* 5: the bytes of "│  " */
		if (!pf->len)
			pf->off[0] = 0;
	}
	at = pf->off[pf->len];
	memcpy(pf->txt + at, seg, strlen(seg));
	pf->off[++pf->len] = at + strlen(seg);
}

static void prefix_release(struct prefix *pf)
{
	free(pf->txt);
	free(pf->off);
}

static void put_prefix(struct sp_tree *t, const struct prefix *pf)
{
	size_t from = 0;

	if (!pf->len)
		return;
	if (pf->len > INDENT_LEVELS) {
		from = pf->len - INDENT_LEVELS;
		fprintf(t->out, "… +%zu ", from);
	}
	fwrite(pf->txt + pf->off[from], 1, pf->off[pf->len] - pf->off[from], t->out);
}

/*
 * Sort n's children and say whether they are printed, at depth: below
 * -d, the kept ones are counted on one line instead.
 */
static bool children_text(struct sp_tree *t, struct tnode *n, struct prefix *pf,
			  unsigned int depth)
{
	struct tnode *c;
	size_t hidden = 0;

	sort_children(t, n);
	if (t->o.max_depth && depth > t->o.max_depth) {
		for (c = n->first; c; c = c->next)
			hidden += c->keep;
		if (hidden) {
			put_prefix(t, pf);
			fprintf(t->out, "└─ … %zu more\n", hidden);
		}
		return false;
	}
	return true;
}

/* A run of siblings being printed: the next kept one and where to stop. */
struct tframe {
	struct tnode *next, *stop;
	uint64_t base;		/* offsets of events count from it */
	size_t plen;		/* levels of the prefix of its lines */
	unsigned int depth;
	bool final;		/* the run ends with the parent's last child */
};

/*
 * Print the sorted children of a node from c up to stop (NULL: all) at
 * depth, each with what is under it, depth first. final: the run printed
 * last is the node's last child (└─); else more follow (streaming).
 */
static void print_range_text(struct sp_tree *t, struct tnode *c, struct tnode *stop,
			     bool final, struct prefix *pf, unsigned int depth, uint64_t base)
{
	struct tframe *st = sp_xmalloc(16 * sizeof(*st)), *f;
	size_t n = 1, cap = 16, plen = pf->len;
	struct tnode *d;
	struct agg ag;
	struct lb b;
	bool last;

	st[0] = (struct tframe){ next_kept(c), stop, base, pf->len, depth, final };
	while (n) {
		f = &st[n - 1];
		pf->len = f->plen;
		if (!f->next || f->next == f->stop) {
			n--;
			continue;
		}
		c = f->next;
		d = next_kept(group_end(t, c, &ag));
		f->next = d;
		last = f->final && d == NULL;
		render(t, &b, c, f->base, &ag, t->stable, t->color);
		put_prefix(t, pf);
		fprintf(t->out, "%s%s\n", last ? "└─ " : "├─ ", b.buf);
		prefix_push(pf, last);
		if (c->type == N_SPAN)
			base = ((const struct tspan *)c)->start;
		else
			base = f->base;
		depth = f->depth + 1;
		if (!children_text(t, c, pf, depth))
			continue;
		sp_grow(&st, &cap, n + 1, sizeof(*st));
		st[n++] = (struct tframe){ next_kept(c->first), NULL, base, pf->len, depth, true };
	}
	pf->len = plen;
	free(st);
}

/* A top-level node and everything under it. */
static void print_text(struct sp_tree *t, struct tnode *n, struct prefix *pf, uint64_t base)
{
	struct lb b;

	render(t, &b, n, base, NULL, t->stable, t->color);
	fprintf(t->out, "%s\n", b.buf);
	pf->len = 0;
	if (n->type == N_SPAN)
		base = ((const struct tspan *)n)->start;
	if (children_text(t, n, pf, 1))
		print_range_text(t, n->first, NULL, true, pf, 1, base);
}

/* ---- JSON ------------------------------------------------------------- */

/* A string in its text form (copy_str()), as JSON gives it back. */
static void json_str(FILE *f, const char *s)
{
	s = s ? s : "";
	sp_esc_json_put(f, s, strlen(s), SP_ESC_EXACT);
}

static uint64_t print_json(struct sp_tree *t, struct tnode *n, uint64_t base,
			   const struct agg *ag);

/*
 * Sort n's children and open their array at depth; false when there is
 * none to print (an event without children has no member; below -d, the
 * array is empty and closed).
 */
static bool children_json(struct sp_tree *t, struct tnode *n, unsigned int depth)
{
	sort_children(t, n);
	if (!next_kept(n->first) && n->type == N_EVENT)
		return false;
	fputs(",\"children\":[", t->out);
	if (t->o.max_depth && depth > t->o.max_depth) {
		fputc(']', t->out);
		return false;
	}
	return true;
}

/* A run of siblings being written: the next kept one and where to stop. */
struct jframe {
	struct tnode *next, *stop;
	uint64_t base, count;	/* count: items written in the array */
	unsigned int depth;
};

/*
 * The JSON items of the sorted siblings from c up to stop at depth, each
 * with what is under it, depth first; *count: items written before.
 */
static void print_range_json(struct sp_tree *t, struct tnode *c, struct tnode *stop,
			     unsigned int depth, uint64_t base, uint64_t *count)
{
	struct jframe *st = sp_xmalloc(16 * sizeof(*st)), *f;
	size_t n = 1, cap = 16;
	struct tnode *d;
	struct agg ag;

	st[0] = (struct jframe){ next_kept(c), stop, base, *count, depth };
	while (n) {
		f = &st[n - 1];
		if (!f->next || f->next == f->stop) {
			if (--n)
				fputs("]}", t->out);	/* its array, then the node */
			else
				*count = f->count;
			continue;
		}
		c = f->next;
		d = next_kept(group_end(t, c, &ag));
		f->next = d;
		if (f->count++)
			fputc(',', t->out);
		base = print_json(t, c, f->base, &ag);
		depth = f->depth + 1;
		if (!children_json(t, c, depth)) {
			fputc('}', t->out);
			continue;
		}
		sp_grow(&st, &cap, n + 1, sizeof(*st));
		st[n++] = (struct jframe){ next_kept(c->first), NULL, base, 0, depth };
	}
	free(st);
}

static void json_proc_head(struct sp_tree *t, const struct tproc *p)
{
	FILE *f = t->out;

	fputs("{\"type\":\"process\"", f);
	if (!t->stable)
		fprintf(f, ",\"pid\":%llu,\"ppid\":%llu", (unsigned long long)p->pid,
			(unsigned long long)p->ppid);
	fputs(",\"comm\":", f);
	json_str(f, p->comm);
	if (p->exe) {
		fputs(",\"exe\":", f);
		json_str(f, p->exe);
	}
}

static void json_proc_exit(struct sp_tree *t, const struct tproc *p)
{
	if (p->exited && (p->flags & SP_PEND_SIGNALED))
		fprintf(t->out, ",\"signal\":%llu", (unsigned long long)(p->status - 128));
	else if (p->exited && !(p->flags & SP_PEND_EXEC))
		fprintf(t->out, ",\"exit\":%llu", (unsigned long long)p->status);
}

/* The node's object up to its children; returns the base of their offsets. */
static uint64_t print_json(struct sp_tree *t, struct tnode *n, uint64_t base,
			   const struct agg *ag)
{
	FILE *f = t->out;
	char txt[2048];
	struct lb b;

	switch (n->type) {
	case N_PROC:
		json_proc_head(t, (const void *)n);
		json_proc_exit(t, (const void *)n);
		break;
	case N_THREAD:
		fputs("{\"type\":\"thread\"", f);
		if (!t->stable)
			fprintf(f, ",\"tid\":%llu", (unsigned long long)((const struct tthread *)n)->tid);
		break;
	case N_SPAN: {
		const struct tspan *s = (const void *)n;

		b.len = 0;
		span_name(&b, s);
		fputs("{\"type\":\"span\",\"name\":", f);
		json_str(f, b.buf);
		if (s->klass) {
			fputs(",\"class\":", f);
			json_str(f, s->klass);
		}
		if (s->method) {
			fputs(",\"method\":", f);
			json_str(f, s->method);
		}
		if (s->file) {
			fputs(",\"file\":", f);
			json_str(f, s->file);
			fprintf(f, ",\"line\":%llu", (unsigned long long)s->line);
		}
		fprintf(f, ",\"end\":\"%s\"", sp_span_end_name(s->end));
		if (s->error) {
			fputs(",\"error\":", f);
			json_str(f, s->error);
		}
		if (s->message) {
			fputs(",\"message\":", f);
			json_str(f, s->message);
		}
		if (ag && ag->count > 1)
			fprintf(f, ",\"count\":%llu", (unsigned long long)ag->count);
		if (!t->stable) {
			fprintf(f, ",\"tid\":%llu,\"offset_ns\":%lld", (unsigned long long)s->tid,
				(long long)(s->start - base));
			if (s->stop)
				fprintf(f, ",\"dur_ns\":%llu", (unsigned long long)(ag && ag->count > 1 ?
					ag->dur : s->stop - s->start));
			fprintf(f, ",\"samples\":%llu,\"total_samples\":%llu",
				(unsigned long long)s->samples,
				(unsigned long long)(ag && ag->count > 1 ? ag->total : s->total));
			if (t->period_ns)
				fprintf(f, ",\"cpu_ns\":%llu", (unsigned long long)
					((ag && ag->count > 1 ? ag->total : s->total) * t->period_ns));
		}
		base = s->start;
		break;
	}
	case N_EVENT: {
		const struct tevent *e = (const void *)n;
		const struct sp_event_schema *es = sp_event_schema(e->kind);
		unsigned int i;

		sp_event_text(txt, sizeof(txt), e->kind, e->vals, e->nvals, t->stable);
		fprintf(f, "{\"type\":\"event\",\"kind\":\"%s\",\"group\":\"%s\",\"text\":",
			es ? es->name : "unknown", group_name(e->kind));
		json_str(f, txt);
		if (ag && ag->count > 1)
			fprintf(f, ",\"count\":%llu", (unsigned long long)ag->count);
		if (!t->stable) {
			fprintf(f, ",\"pid\":%llu,\"tid\":%llu,\"offset_ns\":%lld,\"rule\":\"%s\"",
				(unsigned long long)e->pid, (unsigned long long)e->tid,
				(long long)(e->n.time - base), sp_rule_name(e->rule));
			if (es) {
				fputs(",\"fields\":{", f);
				for (i = 0; i < e->nvals; i++) {
					fprintf(f, "%s\"%s\":", i ? "," : "", es->fields[i].name);
					switch (es->fields[i].type) {
					case SP_FT_STR:
						json_str(f, (const char *)(uintptr_t)e->vals[i]);
						break;
					case SP_FT_ADDR: {
						const uint8_t *p = (const uint8_t *)(uintptr_t)e->vals[i];
						char a[64];

						if (p && p[0] == 4)
							inet_ntop(AF_INET, p + 1, a, sizeof(a));
						else if (p && p[0] == 16)
							inet_ntop(AF_INET6, p + 1, a, sizeof(a));
						else
							a[0] = 0;
						json_str(f, a);
						break;
					}
					case SP_FT_BYTES: {
						const uint8_t *p = (const uint8_t *)(uintptr_t)e->vals[i];
						unsigned int k;

						fputc('"', f);
						for (k = 0; p && k < p[0]; k++)
							fprintf(f, "%02x", p[1 + k]);
						fputc('"', f);
						break;
					}
					case SP_FT_INT:
						fprintf(f, "%lld", (long long)(int64_t)e->vals[i]);
						break;
					default:
						fprintf(f, "%llu", (unsigned long long)e->vals[i]);
						break;
					}
				}
				fputc('}', f);
			}
		}
		break;
	}
	}
	return base;
}

/* A top-level node and everything under it. */
static void print_root_json(struct sp_tree *t, struct tnode *n, uint64_t base)
{
	uint64_t count = 0;

	base = print_json(t, n, base, NULL);
	if (children_json(t, n, 1)) {
		print_range_json(t, n->first, NULL, 1, base, &count);
		fputc(']', t->out);
	}
	fputc('}', t->out);
}

/* ---- the whole tree --------------------------------------------------- */

static void fmt_when(const struct sp_tree *t, char *when, size_t size)
{
	time_t secs;
	struct tm tm;

	snprintf(when, size, "?");
	if (!t->start_wall)
		return;
	secs = (time_t)(t->start_wall / 1000000000ull);
	gmtime_r(&secs, &tm);
	strftime(when, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), size - strlen(when), ".%03lluZ",
		 (unsigned long long)(t->start_wall / 1000000ull % 1000));
}

static void fmt_duration(const struct sp_tree *t, char *d, size_t size, uint64_t *ns)
{
	uint64_t end = t->end_time ? t->end_time : t->max_time;

	*ns = end > t->start_mono && t->start_mono ? end - t->start_mono : 0;
	if (*ns)
		fmt_dur(d, size, *ns);
	else
		snprintf(d, size, "?");
}

/*
 * Streaming: the opening lines, before the first process is printed, hold
 * what is known at the start; the totals come in a trailer (print_trailer).
 */
static void print_opening(struct sp_tree *t)
{
	char when[64];

	t->head_done = true;
	if (t->json) {
		fputs("{\"type\":\"recording\"", t->out);
		if (!t->stable)
			fprintf(t->out, ",\"start_wall_ns\":%llu", (unsigned long long)t->start_wall);
		if (t->command) {
			fputs(",\"command\":", t->out);
			json_str(t->out, t->command);
		}
		fputs(",\"processes\":[", t->out);
		return;
	}
	if (t->stable) {
		fputs("# stackpulse recording\n", t->out);
		return;
	}
	fmt_when(t, when, sizeof(when));
	fprintf(t->out, "# stackpulse recording  started %s  (streamed: totals at the end)\n", when);
	if (t->command)
		fprintf(t->out, "# command: %s\n", t->command);
}

static void print_trailer(struct sp_tree *t)
{
	uint64_t ns;
	char d[32];

	fmt_duration(t, d, sizeof(d), &ns);
	if (t->json) {
		fputc(']', t->out);
		if (!t->stable)
			fprintf(t->out, ",\"duration_ns\":%llu,\"lost_samples\":%llu,"
				"\"lost_events\":%llu,\"lost_spans\":%llu", (unsigned long long)ns,
				(unsigned long long)t->lost[0], (unsigned long long)t->lost[1],
				(unsigned long long)t->lost[2]);
		fputs("}\n", t->out);
		return;
	}
	if (t->stable)
		return;
	fprintf(t->out, "# duration %s  lost %llu\n", d,
		(unsigned long long)(t->lost[0] + t->lost[1] + t->lost[2]));
	fprintf(t->out, "# processes %llu  spans %llu  events %llu\n",
		(unsigned long long)t->nprocs, (unsigned long long)t->nspans_total,
		(unsigned long long)t->nevents);
}

static void print_header(struct sp_tree *t)
{
	uint64_t end = t->end_time ? t->end_time : t->max_time;
	uint64_t lost = t->lost[0] + t->lost[1] + t->lost[2];
	char when[64] = "?", d[32];
	time_t secs;
	struct tm tm;

	if (t->json) {
		fputs("{\"type\":\"recording\"", t->out);
		if (!t->stable) {
			fprintf(t->out, ",\"start_wall_ns\":%llu,\"duration_ns\":%llu",
				(unsigned long long)t->start_wall,
				(unsigned long long)(end > t->start_mono && t->start_mono ?
						     end - t->start_mono : 0));
			fprintf(t->out, ",\"lost_samples\":%llu,\"lost_events\":%llu,"
				"\"lost_spans\":%llu", (unsigned long long)t->lost[0],
				(unsigned long long)t->lost[1], (unsigned long long)t->lost[2]);
		}
		if (t->command) {
			fputs(",\"command\":", t->out);
			json_str(t->out, t->command);
		}
		return;
	}
	if (t->stable) {
		fputs("# stackpulse recording\n", t->out);
		return;
	}
	if (t->start_wall) {
		secs = (time_t)(t->start_wall / 1000000000ull);
		gmtime_r(&secs, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03lluZ",
			 (unsigned long long)(t->start_wall / 1000000ull % 1000));
	}
	if (t->start_mono && end > t->start_mono)
		fmt_dur(d, sizeof(d), end - t->start_mono);
	else
		strcpy(d, "?");
	fprintf(t->out, "# stackpulse recording  started %s  duration %s  lost %llu\n", when, d,
		(unsigned long long)lost);
	if (t->command)
		fprintf(t->out, "# command: %s\n", t->command);
	fprintf(t->out, "# processes %llu  spans %llu  events %llu\n",
		(unsigned long long)t->nprocs, (unsigned long long)t->nspans_total,
		(unsigned long long)t->nevents);
}

static bool is_root(const struct sp_tree *t, const struct tproc *p)
{
	return t->o.npids ? in_list(t->o.pids, t->o.npids, p->pid) : !p->attached;
}

static uint64_t root_base(const struct sp_tree *t, const struct tnode *n)
{
	return t->start_mono ? t->start_mono : n->time;
}

/*
 * Visit the subtree of root, node by node, until visit() says stop; true
 * if it did. The nodes still to visit are kept in t->walk.
 */
static bool walk_tree(struct sp_tree *t, const struct tnode *root,
		      bool (*visit)(const struct tnode *n, void *ctx), void *ctx)
{
	const struct tnode *n, *c;
	size_t k = 0;

	sp_grow(&t->walk, &t->capwalk, 1, sizeof(*t->walk));
	t->walk[k++] = (struct tnode *)root;
	while (k) {
		n = t->walk[--k];
		if (visit(n, ctx))
			return true;
		for (c = n->first; c; c = c->next) {
			if (k == t->capwalk)
				sp_grow(&t->walk, &t->capwalk, k + 1, sizeof(*t->walk));
			t->walk[k++] = (struct tnode *)c;
		}
	}
	return false;
}

static bool is_live(const struct tnode *n, void *ctx)
{
	return n->type == N_PROC && !((const struct tproc *)n)->exited;
}

/* Does the subtree hold a process that has not ended (records may still come)? */
static bool has_live(struct sp_tree *t, const struct tnode *n)
{
	return walk_tree(t, n, is_live, NULL);
}

static bool count_node(const struct tnode *n, void *ctx)
{
	++*(uint64_t *)ctx;
	return false;
}

static uint64_t tree_nodes(struct sp_tree *t, const struct tnode *n)
{
	uint64_t k = 0;

	walk_tree(t, n, count_node, &k);
	return k;
}

/* Nodes held by a run of count identical siblings starting at c. */
static uint64_t run_nodes(struct sp_tree *t, const struct tnode *c, uint64_t count)
{
	return count * tree_nodes(t, c);
}

/* The line or JSON opening of the process being streamed. */
static void open_proc(struct sp_tree *t, struct tproc *p)
{
	struct lb b;

	if (!t->head_done)
		print_opening(t);
	p->streamed = true;
	t->streaming = p;
	if (t->json) {
		if (t->emitted_procs++)
			fputc(',', t->out);
		json_proc_head(t, p);
		fputs(",\"children\":[", t->out);
		return;
	}
	render(t, &b, &p->n, root_base(t, &p->n), NULL, t->stable, t->color);
	fprintf(t->out, "%s\n", b.buf);
}

/*
 * Print the finished top-level subtrees of root process p, sorted (and, with
 * --stable, ordered) among themselves, and free them. Subtrees holding a
 * live process wait; so does the last run of identical siblings, which may
 * grow and which decides the └─ of the process (unless the only run is
 * larger than the buffer: then it is printed, and an identical sibling that
 * comes later starts a run of its own).
 */
static void stream_proc(struct sp_tree *t, struct tproc *p)
{
	struct tnode *c, *next, *held = NULL, **hp = &held, *ready = NULL, **rp = &ready;
	struct tnode *stop = NULL, *last_ready = NULL, *d;
	struct prefix pf = { 0 };
	size_t ngroups = 0;
	struct agg ag;

	for (c = p->n.first; c; c = next) {
		next = c->next;
		c->next = NULL;
		if (has_live(t, c)) {
			*hp = c;
			hp = &c->next;
		} else {
			*rp = c;
			rp = &c->next;
			last_ready = c;
		}
	}
	p->n.first = ready;
	p->n.last = last_ready;
	p->n.sorted = false;
	if (ready) {
		compute_keep(t, &p->n, false, false);
		sort_children(t, &p->n);
		for (c = next_kept(p->n.first); c; c = d) {
			d = next_kept(group_end(t, c, &ag));
			ngroups++;
			if (!d && (ngroups > 1 || ag.count == 1 ||
				   run_nodes(t, c, ag.count) <= t->limit))
				stop = c;
		}
		if (next_kept(p->n.first) != stop) {
			if (!p->streamed)
				open_proc(t, p);
			if (t->json) {
				print_range_json(t, p->n.first, stop, 1, root_base(t, &p->n),
						 &t->emitted);
			} else {
				print_range_text(t, p->n.first, stop, false, &pf, 1,
						 root_base(t, &p->n));
				prefix_release(&pf);
			}
		}
		for (c = p->n.first; c != stop; c = next) {
			next = c->next;
			free_tree(t, c);
		}
		p->n.first = stop;
		if (!stop)
			p->n.last = NULL;
	}
	/* what waits: the carried run, then the live subtrees */
	if (held) {
		if (p->n.last)
			p->n.last->next = held;
		else
			p->n.first = held;
		for (c = held; c->next; c = c->next)
			;
		p->n.last = c;
	}
	p->n.sorted = false;
}

static void setup_output(struct sp_tree *t, FILE *out)
{
	t->out = out;
	t->stable = t->o.stable;
	t->color = t->o.color && !t->o.json;
	t->json = t->o.json;
}

void sp_tree_set_output(struct sp_tree *t, FILE *out)
{
	setup_output(t, out);
}

/* Top-level processes: those not under a fork, or every --pid process. */
static size_t collect_roots(struct sp_tree *t, struct tnode ***out)
{
	struct tnode **v = NULL;
	size_t n = 0, cap = 0;
	struct tproc *p;

	for (p = t->roots; p; p = p->next_root) {
		if (!is_root(t, p) || p->streamed)
			continue;
		if (n == cap)
			sp_grow(&v, &cap, n + 1, sizeof(*v));
		v[n++] = &p->n;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_time);
	*out = v;
	return n;
}

int sp_tree_print(struct sp_tree *t, FILE *out)
{
	struct prefix pf = { 0 };
	struct tproc *sp = t->streaming;
	struct tnode **roots;
	struct lb b;
	size_t i, n;
	bool first = true;

	setup_output(t, out);
	if (sp) {
		/* the rest of the process being streamed, then its end */
		compute_keep(t, &sp->n, false, false);
		sort_children(t, &sp->n);
		if (t->json) {
			print_range_json(t, sp->n.first, NULL, 1, root_base(t, &sp->n),
					 &t->emitted);
			fputc(']', out);
			json_proc_exit(t, sp);
			fputc('}', out);
		} else {
			print_range_text(t, sp->n.first, NULL, true, &pf, 1, root_base(t, &sp->n));
			render(t, &b, &sp->n, 0, NULL, t->stable, t->color);
			fprintf(out, "# end of %s\n", b.buf);
		}
		first = false;
	} else {
		print_header(t);
		if (t->json)
			fputs(",\"processes\":[", out);
	}
	n = collect_roots(t, &roots);
	for (i = 0; i < n; i++) {
		if (!compute_keep(t, roots[i], false, false) &&
		    (t->o.nspans || t->o.ntids || t->o.event_kinds))
			continue;
		if (t->json) {
			if (!first)
				fputc(',', out);
			print_root_json(t, roots[i], t->start_mono ? t->start_mono :
					roots[i]->time);
		} else {
			print_text(t, roots[i], &pf, t->start_mono ? t->start_mono :
				   roots[i]->time);
		}
		first = false;
	}
	if (t->head_done)
		print_trailer(t);
	else if (t->json)
		fputs("]}\n", out);
	free(roots);
	prefix_release(&pf);
	return ferror(out) ? -1 : 0;
}
