// SPDX-License-Identifier: MIT
/*
 * The recording as a tree (docs/sp-tree.md), built: processes, their spans,
 * the events of each span, and child processes and threads under the fork
 * or clone that started them. The other files of the tree print it
 * (treeP.h lists them).
 *
 * Placement: a span goes under its parent span; a root span under the
 * thread container of its thread when it was started under a fork span and
 * the clone was seen, else under its process. An event goes under its span
 * (rules thread and gap); an event assigned by the fork rule goes under the
 * container of its thread or process, which hangs under the fork event that
 * started it. A process whose fork was not seen is a top-level root.
 */
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "events.h"
#include "hashmap.h"
#include "sp.h"
#include "treeP.h"

/* ---- memory ----------------------------------------------------------- */

/*
 * A string of the input, kept in its text form (escape.h): what sp-tree
 * shows, matches and sorts is that, so no name reaches a line raw.
 */
static char *copy_str(struct sp_tree *t, const void *p, size_t len)
{
	size_t n = sp_esc_text(NULL, 0, p, len, 0);
	char *esc, *s;

	if (n == len)
		return sp_arena_copy(&t->strings, p, len);
	esc = sp_xmalloc(n + 1);
	sp_esc_text(esc, n + 1, p, len, 0);
	s = sp_arena_copy(&t->strings, esc, n);
	free(esc);
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

struct sp_tree *sp_tree_new(const struct sp_tree_opts *opts)
{
	struct sp_tree *t = sp_xcalloc(1, sizeof(*t));

	if (opts)
		t->o = *opts;
	t->limit = t->o.buffer_nodes;
	t->strings.block_size = 1u << 20;
	t->pid_seen = sp_xcalloc(t->o.npids + 1, sizeof(*t->pid_seen));
	t->container_seen = sp_xcalloc(t->o.ncontainers + 1, sizeof(*t->container_seen));
	if (t->o.summary)
		sp_tree_summary_new(t);
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

static void forget_open(struct sp_tree *t, struct tspan *s)
{
	size_t i;

	for (i = 0; i < t->nopen; i++) {
		if (t->open[i] == s) {
			t->open[i] = t->open[--t->nopen];
			break;
		}
	}
	s->written_open = false;
}

/*
 * A stop mark of a span written open: it ended here. A mark right after
 * its own (closed) span's record is that span's, not this.
 */
static void close_written_open(struct sp_tree *t, const struct sp_span_mark *m)
{
	const struct tspan *last = t->last_span;
	struct tspan *s = NULL;
	size_t i;

	if (last && last->tid == m->tid && last->stop == m->time && !last->written_open)
		return;
	for (i = t->nopen; i-- > 0;) {
		s = t->open[i];
		if (s->tid == m->tid && s->pid == m->pid && s->start <= m->time &&
		    s->method == tstr(t, m->method) && s->klass == tstr(t, m->klass))
			break;
		s = NULL;
	}
	if (!s)
		return;
	s->stop = m->time;
	s->end = s->error ? SP_END_RAISED : SP_END_STOPPED;
	s->early = true;
	forget_open(t, s);
	if (m->time > t->max_time)
		t->max_time = m->time;
}

static void summary_stop(struct sp_tree *t, const struct sp_span_mark *m)
{
	struct tspan s = { .tid = m->tid, .pid = m->pid, .runtime = m->runtime,
			   .stop = m->time };

	s.klass = tstr(t, m->klass);
	s.method = tstr(t, m->method);
	s.file = tstr(t, m->file);
	sp_tree_summary_stop(t, &s);
}

/* Forget the id, pid or tid that names node n, and free it. */
static void free_node(struct sp_tree *t, struct tnode *n)
{
	uint64_t key = 0, *v;
	struct sp_u64map *m = NULL;

	if (n->fold_elided && (v = sp_u64map_get(&t->fold_elided, n->seq))) {
		free((void *)(uintptr_t)*v);
		sp_u64map_del(&t->fold_elided, n->seq);
	}

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
		if (((struct tspan *)n)->written_open)
			forget_open(t, (struct tspan *)n);
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
void sp_tree_free_subtree(struct sp_tree *t, struct tnode *root)
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

/* A process of the input: one --pid named, if it is. */
static void pid_seen(struct sp_tree *t, uint64_t pid)
{
	size_t i;

	for (i = 0; i < t->o.npids; i++)
		if (t->o.pids[i] == pid)
			t->pid_seen[i] = true;
}

bool sp_tree_pid_seen(const struct sp_tree *t, size_t i)
{
	return i < t->o.npids && t->pid_seen[i];
}

bool sp_tree_container_seen(const struct sp_tree *t, size_t i)
{
	return i < t->o.ncontainers && t->container_seen[i];
}

/*
 * The program of the recorded command ("/nonexistent/cmd" of
 * "/nonexistent/cmd -x", unquoted as sp-record quotes it), by its base name,
 * or NULL: no command, or processes attached (-p, -a) rather than started.
 */
static const char *command_program(struct sp_tree *t)
{
	const char *c = t->command;
	struct sp_buf w = SP_BUF_INIT;
	const char *name = NULL;
	char q;

	if (!c || !*c || *c == '-')
		return NULL;
	for (; *c && *c != ' '; c++) {
		if (*c == '\'' || *c == '"') {
			for (q = *c++; *c && *c != q; c++)
				sp_buf_addch(&w, *c);
			if (!*c)
				break;
		} else if (*c == '\\' && c[1]) {
			sp_buf_addch(&w, *++c);
		} else {
			sp_buf_addch(&w, *c);
		}
	}
	if (w.len) {
		name = sp_tree_base_name(sp_buf_str(&w));
		name = *name ? sp_arena_copy(&t->strings, name, strlen(name)) : NULL;
	}
	sp_buf_release(&w);
	return name;
}

static struct tproc *proc_new(struct sp_tree *t, uint64_t pid, uint64_t time)
{
	struct tproc *p = node_new(t, sizeof(*p), N_PROC, time);

	pid_seen(t, pid);
	if (!t->nprocs)		/* sp-record's command comes first */
		p->tried = command_program(t);

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

/* The process node that node n (a span, a thread, a process: what a
 * record is placed under) is in. */
static struct tproc *proc_of(struct tnode *n)
{
	switch (n->type) {
	case N_PROC:
		return (struct tproc *)n;
	case N_SPAN:
		return ((struct tspan *)n)->proc;
	case N_THREAD:
		return ((struct tthread *)n)->proc;
	default:
		return NULL;
	}
}

/* Whether anc's node holds p's, by the forks that attached them (every
 * record of a process is in its own node's subtree). */
static bool holds(const struct tproc *anc, const struct tproc *p)
{
	unsigned int hops;

	for (hops = 0; p && hops < 1u << 20; hops++, p = p->holder)
		if (p == anc)
			return true;
	return p != NULL;	/* (deeper than any real tree: taken as a cycle) */
}

static struct tthread *thread_of(struct sp_tree *t, uint64_t tid, uint64_t pid)
{
	uint64_t *v = sp_u64map_get(&t->threads, tid);
	struct tthread *th = v ? (struct tthread *)(uintptr_t)*v : NULL;

	return th && th->pid == pid ? th : NULL;
}

static uint64_t nstid_of(struct sp_tree *t, uint64_t tid, uint64_t pid);

/*
 * The node of thread tid in gap span g, for its records of the gap: the one
 * its fork made in g; else, for a thread whose fork is not in the input
 * (started before -p, or before the recording), one made now under g at
 * its first record there (forkless). NULL when the thread's node is
 * elsewhere (its fork is in a span: its records of the gap are the gap's).
 */
static struct tthread *gap_thread(struct sp_tree *t, struct tspan *g, uint64_t tid,
				  uint64_t time)
{
	struct tthread *th = thread_of(t, tid, g->pid);

	if (th)
		return th->gap == g ? th : NULL;
	th = node_new(t, sizeof(*th), N_THREAD, time);
	th->tid = tid;
	th->pid = g->pid;
	th->nstid = nstid_of(t, tid, g->pid);
	th->gap = g;
	th->proc = g->proc;
	th->forkless = true;
	sp_u64map_put(&t->threads, tid, (uint64_t)(uintptr_t)th);
	append(&g->n, &th->n);
	return th;
}

struct tthread *sp_tree_thread_of(struct sp_tree *t, uint64_t tid, uint64_t pid)
{
	return thread_of(t, tid, pid);
}

/* Take child c, which follows prev (NULL: the first), out of parent's
 * list; c->next is left for the caller. */
static void unlink_child(struct tnode *parent, struct tnode *prev, struct tnode *c)
{
	if (prev)
		prev->next = c->next;
	else
		parent->first = c->next;
	if (parent->last == c)
		parent->last = prev;
}

/* A forkless thread node's records since the fork its thread's node came
 * from moved to that node; whether none is left (an older thread of the
 * same tid keeps those before). */
static bool merge_forkless(struct sp_tree *t, struct tthread *f)
{
	struct tnode *c = f->n.first, *prev = NULL, *next;
	struct tthread *into = f->into;

	f->into = NULL;
	for (; c; c = next) {
		next = c->next;
		if (c->time < into->n.time) {
			prev = c;
			continue;
		}
		unlink_child(&f->n, prev, c);
		append(&into->n, c);
	}
	return !f->n.first;
}

void sp_tree_adopt(struct sp_tree *t, struct tspan *g)
{
	struct tnode *c = g->n.first, *prev = NULL, *next;
	struct tthread *th;

	g->adopt = false;
	for (; c; c = next) {
		const struct tevent *e = (const struct tevent *)c;

		next = c->next;
		if (c->type == N_THREAD && ((struct tthread *)c)->into) {
			if (!merge_forkless(t, (struct tthread *)c)) {
				prev = c;
				continue;
			}
			/* emptied: unlinked, freed at the end */
			unlink_child(&g->n, prev, c);
			c->next = t->dead;
			t->dead = c;
			continue;
		}
		/* an event of its own (no fork under it), of this process, of a
		 * thread made in g, since that thread was made (not a thread
		 * before it with the same tid) */
		if (c->type != N_EVENT || c->first || e->pid != g->pid || e->tid == g->tid ||
		    !(th = thread_of(t, e->tid, e->pid)) || th->gap != g || c->time < th->n.time) {
			prev = c;
			continue;
		}
		unlink_child(&g->n, prev, c);
		append(&th->n, c);
	}
	g->n.sorted = false;
}

/*
 * A new stream: its ids start again. The next segment of a rotated
 * recording, or of a flight dump's window (a header with a segment number),
 * goes on with the same processes and threads: they are kept, and their
 * definitions replayed at its start name them again (add_process()).
 * Another recording starts anew.
 */
static void reset_stream(struct sp_tree *t, bool goes_on)
{
	if (!goes_on && t->sum)		/* another recording: its parts end here */
		sp_tree_summary_parts_end(t);
	sp_tree_summary_flush(t);
	while (t->nopen)	/* a new stream does not end them */
		forget_open(t, t->open[0]);
	t->nstrs = 0;
	t->nspans = 0;
	t->last_span = NULL;
	t->streams++;
	if (!goes_on) {
		sp_u64map_release(&t->procs);
		sp_u64map_release(&t->threads);
		sp_u64map_release(&t->nstids);
		sp_u64map_release(&t->parts);
	}
	sp_u64map_release(&t->spans);
}

static bool header_lists_event(const struct sp_header *h, const char *kind);

static void add_header(struct sp_tree *t, const struct sp_header *h)
{
	reset_stream(t, t->have_header && h->segment);
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
	t->kernel_opens = header_lists_event(h, "path_open");
	t->kernel_dirents = header_lists_event(h, "file_getdents");
}

/* Whether the header's features say sp-record recorded this event kind
 * ("... events=proc_fork,path_open,... ..."). */
static bool header_lists_event(const struct sp_header *h, const char *kind)
{
	const char *p = (const char *)h->features.p, *end, *e;
	size_t k = strlen(kind);

	if (!p || !h->features.len)
		return false;
	for (end = p + h->features.len; p < end; p = e + 1) {
		for (e = p; e < end && *e != ' '; e++)
			;
		if (e - p < 7 || memcmp(p, "events=", 7))
			continue;
		for (p += 7; p < e; p++) {
			const char *c = memchr(p, ',', (size_t)(e - p));

			if (!c)
				c = e;
			if ((size_t)(c - p) == k && !memcmp(p, kind, k))
				return true;
			p = c;
		}
	}
	return false;
}

/*
 * A Python audit event of the interpreter's own machinery, left out of the
 * tree unless asked for (--all-audit, or --events naming audit): each
 * import's exec and marshal.loads, compile, the attribute and frame hooks,
 * the interpreter's tear-down, and what the kernel's own events show
 * already, beside them (an open, a directory listed). Imports, subprocess,
 * sockets and the rest stay.
 */
static bool audit_internal(const struct sp_tree *t, const char *name)
{
	static const char *const own[] = {
		"exec", "compile", "marshal.loads", "marshal.load", "marshal.dumps",
		"marshal.dump", "object.__getattr__", "object.__setattr__",
		"object.__delattr__", "sys._getframe", "sys._getframemodulename",
		"code.__new__", "function.__new__", "builtins.id",
		"cpython.PyInterpreterState_Clear", "cpython._PySys_ClearAuditHooks",
	};
	size_t i;

	if (!name)
		return false;
	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(name, own[i]))
			return true;
	if (t->kernel_opens && !strcmp(name, "open"))
		return true;
	return t->kernel_dirents && (!strcmp(name, "os.listdir") || !strcmp(name, "os.scandir"));
}

uint64_t sp_tree_audit_hidden(const struct sp_tree *t)
{
	return t->audit_hidden;
}

static void add_process(struct sp_tree *t, const struct sp_process *r)
{
	uint64_t *v = sp_u64map_get(&t->procs, r->pid);
	struct tproc *p = v ? (struct tproc *)(uintptr_t)*v : NULL;

	/* A process still running, defined in an earlier segment of the same
	 * recording, is the same one replayed (unless its start differs). */
	if (p && p->defined && !(r->flags & SP_PROC_EXEC) &&
	    !(p->stream < t->streams && !p->exited &&
	      (!p->start_boot || !r->start_boot_ns || p->start_boot == r->start_boot_ns)))
		p = NULL;	/* the pid was reused */
	if (!p)
		p = proc_new(t, r->pid, r->time);
	p->defined = true;
	p->stream = t->streams;
	if (r->start_boot_ns)
		p->start_boot = r->start_boot_ns;
	if (r->ppid)
		p->ppid = r->ppid;
	if (tstr(t, r->comm))
		p->comm = tstr(t, r->comm);
	if (tstr(t, r->exe))
		p->exe = tstr(t, r->exe);
	if (r->nspid)
		p->nspid = r->nspid;
	if (tstr(t, r->runtime)) {
		p->runtime = tstr(t, r->runtime);
		p->container = tstr(t, r->container);
		for (size_t i = 0; i < t->o.ncontainers; i++)
			if (sp_tree_container_matches(t->o.containers[i], p->runtime, p->container))
				t->container_seen[i] = true;
	}
}

/* A thread's tid in its namespace, for its node (made before or after). */
static void add_thread(struct sp_tree *t, const struct sp_thread *r)
{
	struct tthread *th;

	if (!r->nstid || r->nstid > UINT32_MAX || r->pid > UINT32_MAX)
		return;
	sp_u64map_put(&t->nstids, r->tid, r->pid << 32 | r->nstid);
	th = thread_of(t, r->tid, r->pid);
	if (th)
		th->nstid = r->nstid;
}

static uint64_t nstid_of(struct sp_tree *t, uint64_t tid, uint64_t pid)
{
	uint64_t *v = sp_u64map_get(&t->nstids, tid);

	return v && *v >> 32 == pid ? *v & UINT32_MAX : 0;
}

static void fill_span(struct sp_tree *t, struct tspan *s, const struct sp_span *r)
{
	s->tid = r->tid;
	s->pid = r->pid;
	s->start = r->start;
	s->stop = r->stop;
	s->end = r->end;
	s->reconstructed = r->flags & SP_SPAN_RECONSTRUCTED;
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
	if (r->end == SP_END_SYNTHETIC && s->method)
		t->nframes++;
	else
		t->nspans_total++;
	if (r->stop > t->max_time)
		t->max_time = r->stop;
}

static uint64_t part_key(const struct sp_span *r)
{
	return sp_hash_mix(sp_hash_u64(r->tid), r->start);
}

/*
 * The part of span r that an earlier segment of the recording wrote as open
 * at its end (sp-correlate writes each segment's part, and the span whole
 * in the segment where it stops: docs/segments.md): r is the same span
 * going on. Its record now says how it ended; later parts hang under it.
 */
static struct tspan *earlier_part(struct sp_tree *t, const struct sp_span *r)
{
	uint64_t *v = t->streams > 1 ? sp_u64map_get(&t->parts, part_key(r)) : NULL;
	struct tspan *s = v ? (struct tspan *)(uintptr_t)*v : NULL;

	if (!s || s->stream >= t->streams || s->tid != r->tid || s->pid != r->pid ||
	    s->start != r->start)
		return NULL;
	s->stream = t->streams;
	s->id = ++t->nspans;
	s->stop = r->stop;
	s->end = r->end;
	s->samples += r->samples;	/* each part counts its segment's */
	s->total += r->total_samples;
	s->offcpu += r->offcpu_ns;
	if (r->method) {
		s->line = r->line;
		s->runtime = r->runtime;
		s->klass = tstr(t, r->klass);
		s->method = tstr(t, r->method);
		s->file = tstr(t, r->file);
	}
	if (r->error)
		s->error = tstr(t, r->error);
	if (r->stop > t->max_time)
		t->max_time = r->stop;
	if (r->end != SP_END_OPEN)
		sp_u64map_del(&t->parts, part_key(r));
	return s;
}

/*
 * --summary of a rotated recording: a span open at a segment's end comes
 * as one part per segment (earlier_part()). Its parts are held, keyed as
 * there, and counted once, whole, with the part that says how it ended
 * (or, still open at the end of the input, by sp_tree_summary_parts_end());
 * meanwhile it is its children's parent, as in the tree.
 */
static void summary_part(struct sp_tree *t, struct tspan *s, const struct sp_span *r)
{
	uint64_t k = part_key(r), *v = sp_u64map_get(&t->parts, k);
	struct tspan *prev = v ? (struct tspan *)(uintptr_t)*v : NULL;

	if (prev && prev->stream < t->streams && prev->tid == r->tid && prev->pid == r->pid &&
	    prev->start == r->start) {
		s->samples += prev->samples;
		s->total += prev->total;
		s->offcpu += prev->offcpu;
		s->reconstructed = prev->reconstructed;
		s->part_child = prev->part_child;
		if (!s->method) {
			s->klass = prev->klass;
			s->method = prev->method;
			s->file = prev->file;
			s->line = prev->line;
			s->runtime = prev->runtime;
		}
		free(prev);
		sp_u64map_del(&t->parts, k);
		if (s->end == SP_END_SYNTHETIC && s->method)
			t->nframes--;	/* one span, not one a part */
		else
			t->nspans_total--;
	}
	if (r->end != SP_END_OPEN || !r->stop) {
		sp_tree_summary_add(t, s, r->parent, false);
		return;
	}
	if ((v = sp_u64map_get(&t->parts, k)))	/* a forged stream's second of one key */
		return;
	prev = sp_xmalloc(sizeof(*prev));
	*prev = *s;
	prev->stream = t->streams;
	sp_u64map_put(&t->parts, k, (uint64_t)(uintptr_t)prev);
	sp_tree_summary_add(t, prev, r->parent, true);
}

void sp_tree_summary_parts_end(struct sp_tree *t)
{
	size_t i = 0;
	uint64_t k, v;

	sp_tree_summary_flush(t);	/* the parts' children are counted in them */
	while (sp_u64map_next(&t->parts, &i, &k, &v)) {
		struct tspan *s = (struct tspan *)(uintptr_t)v;

		s->end = SP_END_OPEN;	/* still open when the input ended */
		s->stop = 0;
		sp_tree_summary_add(t, s, 0, false);
		sp_tree_summary_flush(t);	/* before s goes */
		free(s);
	}
	sp_u64map_release(&t->parts);
}

static void add_span(struct sp_tree *t, const struct sp_span *r)
{
	struct tspan *s, one;
	struct tnode *parent = NULL;
	struct tthread *th;
	uint64_t *v;

	if (t->sum) {
		memset(&one, 0, sizeof(one));
		fill_span(t, &one, r);
		summary_part(t, &one, r);
		return;
	}
	s = earlier_part(t, r);
	if (s) {
		sp_u64map_put(&t->spans, s->id, (uint64_t)(uintptr_t)s);
		t->last_span = s;
		return;
	}
	s = node_new(t, sizeof(*s), N_SPAN, r->start);
	fill_span(t, s, r);
	s->stream = t->streams;
	if (r->end == SP_END_OPEN && r->stop)
		sp_u64map_put(&t->parts, part_key(r), (uint64_t)(uintptr_t)s);
	sp_u64map_put(&t->spans, s->id, (uint64_t)(uintptr_t)s);
	t->last_span = s;
	if (r->end == SP_END_OPEN && !r->stop) {
		s->written_open = true;
		sp_grow(&t->open, &t->capopen, t->nopen + 1, sizeof(*t->open));
		t->open[t->nopen++] = s;
	}
	if (r->end == SP_END_SYNTHETIC && !s->method)
		s->gap = s;
	if (r->parent && r->parent < s->id && (v = sp_u64map_get(&t->spans, r->parent)) &&
	    ((const struct tspan *)(uintptr_t)*v)->pid == r->pid) {
		const struct tspan *up;

		parent = (struct tnode *)(uintptr_t)*v;
		up = parent->type == N_SPAN ? (const struct tspan *)parent : NULL;
		if (up && up->gap == up && r->end == SP_END_SYNTHETIC)
			s->gap = up;	/* an interpreted frame's, in the gap */
		/* another thread's frame in the gap: under that thread */
		if (s->gap == up && r->tid != up->tid &&
		    (th = gap_thread(t, (struct tspan *)up, r->tid, r->start)))
			parent = &th->n;
	} else if (r->fork_span && (th = thread_of(t, r->tid, r->pid)))
		parent = &th->n;
	else
		parent = &proc_get(t, r->pid, r->start)->n;
	s->proc = proc_of(parent);
	/*
	 * A top-level span: sp-correlate writes a span tree whole once its
	 * outermost span closes, so what the process held before it is finished.
	 */
	if (parent->type == N_PROC && t->out && t->limit && t->live > t->limit &&
	    (!t->streaming || t->streaming == (struct tproc *)parent) &&
	    sp_tree_is_root(t, (struct tproc *)parent))
		sp_tree_stream_proc(t, (struct tproc *)parent);
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
	if (r->kind == SP_EV_AUDIT && n && !t->o.all_audit &&
	    !(t->o.event_kinds & (1ull << SP_EV_AUDIT)) && audit_internal(t, tstr(t, r->field[0].u))) {
		t->nevents++;
		t->audit_hidden++;
		if (r->time > t->max_time)
			t->max_time = r->time;
		return;
	}
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
	} else if ((s = span_by_id(t, r->span)) && s->pid == r->pid) {
		/* (a span of another process holds none of this one's records:
		 * a forged stream's, which could put a process under itself) */
		parent = &s->n;
		/* the gap span is the process's: an event of another of its
		 * threads goes under that thread's node, when the thread was
		 * made in this gap span (its node is there) */
		if (s->gap == s && r->tid != s->tid && (th = gap_thread(t, s, r->tid, r->time)))
			parent = &th->n;
	} else {
		if (r->rule)
			t->orphans++;
		parent = &proc_get(t, r->pid, r->time)->n;
	}
	append(parent, &e->n);

	if (r->kind == SP_EV_PROC_EXIT && n >= 3 && !e->vals[2]) {
		/* the process's own end: its end record knows the status of the
		 * recorded command only */
		struct tproc *p = proc_get(t, r->pid, r->time);

		p->exit_seen = true;
		p->exit_code = e->vals[0];
		p->exit_signal = e->vals[1];
	}
	if (r->kind == SP_EV_PROC_EXEC && n >= 1 && e->vals[0]) {
		const char *file = (const char *)(uintptr_t)e->vals[0];

		proc_get(t, r->pid, r->time)->comm = sp_tree_base_name(file);
	}
	if (r->kind == SP_EV_PROC_FORK && n >= 3) {
		uint64_t child = r->field[0].u, ctid = r->field[1].u;

		if (r->field[2].u & SP_FORK_THREAD) {
			th = node_new(t, sizeof(*th), N_THREAD, r->time);
			th->tid = ctid;
			th->pid = r->pid;
			th->nstid = nstid_of(t, ctid, r->pid);
			th->proc = proc_of(parent);
			/* the gap span it was made in: its fork's, or that of the
			 * thread that made it */
			th->gap = parent->type == N_SPAN ? ((const struct tspan *)parent)->gap :
				  parent->type == N_THREAD ? ((const struct tthread *)parent)->gap :
				  NULL;
			if (th->gap) {	/* its records that came first move under it */
				struct tthread *old = thread_of(t, ctid, r->pid);

				if (old && old->forkless && old->gap == th->gap)
					old->into = th;
				((struct tspan *)th->gap)->adopt = true;
			}
			sp_u64map_put(&t->threads, ctid, (uint64_t)(uintptr_t)th);
			append(&e->n, &th->n);
		} else if (child && child != r->pid) {
			struct tproc *p;

			struct tproc *me = proc_of(parent);	/* where the fork is */

			v = sp_u64map_get(&t->procs, child);
			p = v ? (struct tproc *)(uintptr_t)*v : NULL;
			/* attached, or holding the forking process (a pid reused,
			 * or a forged stream): a process of its own, never a
			 * cycle */
			if (!p || p->attached || holds(p, me))
				p = proc_new(t, child, r->time);
			p->attached = true;
			p->holder = me;
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

	if (rec->kind == SP_REC_HEADER && !t->sum)	/* before it forgets the processes */
		sp_tree_lanes_decide(t);
	sp_walltime_add(&t->wall, rec);
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
		pid_seen(t, rec->process.pid);
		add_process(t, &rec->process);
		break;
	case SP_REC_THREAD:
		add_thread(t, &rec->thread);
		break;
	case SP_REC_THREAD_END:
		if (nstid_of(t, rec->thread_end.tid, rec->thread_end.pid))
			sp_u64map_del(&t->nstids, rec->thread_end.tid);
		break;
	case SP_REC_SPAN:
		add_span(t, &rec->span);
		break;
	case SP_REC_EVENT:
		if (t->sum)	/* the summary has spans only */
			break;
		add_event(t, &rec->event);
		break;
	case SP_REC_SPAN_STOP:
		if (t->sum)
			summary_stop(t, &rec->mark);
		else if (t->nopen)
			close_written_open(t, &rec->mark);
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
		if (rec->lost.what < SP_LOST_WHAT_MAX)
			t->lost[rec->lost.what] += rec->lost.count;
		break;
	case SP_REC_END:
		if (rec->end.reason == SP_ENDR_ROTATED)
			break;	/* a segment's end (segments joined): it goes on */
		t->end_time = rec->end.time;
		if (rec->end.reason == SP_ENDR_TRIGGER) {
			t->trigger = tstr(t, rec->end.trigger);
			t->trigger_detail = tstr(t, rec->end.detail);
			t->trigger_time = rec->end.trigger_time;
		}
		break;
	default:
		break;
	}
	/* after the tree took it: the process a lane's first resume is of is known */
	if (!t->sum && (rec->kind == SP_REC_SPAN || rec->kind == SP_REC_FIBER_SWITCH ||
			rec->kind == SP_REC_HEADER))
		sp_tree_lanes_add(t, rec);
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
	struct tproc *p;

	if (!t)
		return;
	for (;;) {
		for (p = t->roots; p && p->attached; p = p->next_root)
			;
		if (!p)
			break;
		sp_tree_free_subtree(t, &p->n);
	}
	if (t->sum)
		sp_tree_summary_parts_end(t);	/* (not printed: frees them) */
	sp_tree_summary_free(t);
	sp_tree_lanes_free(t);
	sp_arena_release(&t->strings);
	free(t->strs);
	free(t->open);
	free(t->sortbuf);
	free(t->walk);
	sp_u64map_release(&t->fold_elided);	/* emptied as their nodes were freed */
	sp_u64map_release(&t->procs);
	sp_u64map_release(&t->threads);
	sp_u64map_release(&t->nstids);
	sp_u64map_release(&t->spans);
	sp_u64map_release(&t->parts);
	while (t->dead) {
		struct tnode *n = t->dead;

		t->dead = n->next;
		free(n);
	}
	free(t->pid_seen);
	free(t->container_seen);
	free(t);
}
