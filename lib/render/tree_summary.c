// SPDX-License-Identifier: MIT
/*
 * sp-tree --summary: the spans as one row per method across every thread
 * and process, sorted, as Python's pstats or `stackprof --text` print
 * them (docs/sp-tree.md): calls, total and self time, CPU with and without
 * callees, off-CPU time.
 *
 * Spans come in the order sp-correlate writes them: a span tree whole, each
 * span after its parent. Each thread keeps the stack of its spans still
 * open to later children; a span pops what is above its parent, and what
 * is popped is summed. A method's total counts only its outermost
 * occurrence on a stack (a recursion is counted once), so each thread
 * counts the occurrences of each method on its stack.
 */
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "sp.h"
#include "treeP.h"

struct smethod {
	const char *name;	/* "Foo#bar", in the tree's arena */
	const char *file;	/* NULL when the span had none */
	uint64_t line;		/* the smallest seen (Python resumes have later ones) */
	uint64_t calls, open, total, self, samples, self_samples, offcpu;
};

struct sframe {
	uint64_t id;		/* span id in its stream */
	uint32_t method;	/* index into methods */
	bool outer;		/* the outermost of its method on the stack */
	bool known;		/* closed: dur is its duration */
	uint64_t start, dur, child, samples, total, offcpu;
	/* a part of a span that goes on in the next segment, not counted
	 * here: what its children took goes to the part kept (tree.c) */
	struct tspan *hold;
};

struct sstack {
	struct sframe *f;
	size_t n, cap;
};

struct tsummary {
	struct smethod *m;
	size_t nm, capm;
	struct sp_idset index;		/* methods by name and file */
	struct sstack *stacks;
	size_t nstacks, capstacks;
	struct sp_u64map stack_of;	/* tid -> index into stacks */
	struct sp_u64map active;	/* (stack << 32 | method) -> occurrences on it */
	struct sp_buf key;
	uint64_t spans, open, early;
	uint64_t frames;	/* [FRAME]s: no method calls, left out */
	uint64_t last_tid, last_stop;	/* the last span added, if closed */
};

struct mkey {
	const char *name, *file;
};

static bool method_eq(void *ctx, uint32_t id, const void *key)
{
	const struct smethod *m = &((struct tsummary *)ctx)->m[id - 1];
	const struct mkey *k = key;

	return !strcmp(m->name, k->name) &&
	       (m->file == k->file || (m->file && k->file && !strcmp(m->file, k->file)));
}

static uint32_t method_of(struct sp_tree *t, const struct tspan *s)
{
	struct tsummary *S = t->sum;
	struct mkey k;
	uint64_t h;
	uint32_t id;

	sp_buf_reset(&S->key);
	sp_tree_span_name(&S->key, s);
	k.name = sp_buf_str(&S->key);
	k.file = s->end == SP_END_SYNTHETIC ? NULL : s->file;
	h = sp_hash_mix(sp_hash_bytes(k.name, S->key.len),
			k.file ? sp_hash_bytes(k.file, strlen(k.file)) : 0);
	id = sp_idset_find(&S->index, h, &k, method_eq, S);
	if (!id) {
		if (S->nm == UINT32_MAX - 1)
			sp_die("more than %u methods", UINT32_MAX - 1);
		sp_grow(&S->m, &S->capm, S->nm + 1, sizeof(*S->m));
		memset(&S->m[S->nm], 0, sizeof(*S->m));
		S->m[S->nm].name = sp_arena_copy(&t->strings, k.name, S->key.len);
		S->m[S->nm].file = k.file;
		S->m[S->nm].line = s->line;
		id = (uint32_t)++S->nm;
		sp_idset_add(&S->index, h, id);
	}
	if (s->line && (!S->m[id - 1].line || s->line < S->m[id - 1].line))
		S->m[id - 1].line = s->line;
	return id - 1;
}

static uint64_t active_key(size_t stack, uint32_t method)
{
	return (uint64_t)stack << 32 | method;
}

/* Sum the top frame of stack si into its method and its parent frame. */
static void pop(struct tsummary *S, size_t si)
{
	struct sstack *st = &S->stacks[si];
	struct sframe *f = &st->f[--st->n];
	struct smethod *m = &S->m[f->method];
	uint64_t *v = sp_u64map_get(&S->active, active_key(si, f->method));

	if (f->hold) {
		f->hold->part_child = f->child;
		return;
	}
	if (v && !--*v)
		sp_u64map_del(&S->active, active_key(si, f->method));
	m->self_samples += f->samples;
	m->offcpu += f->offcpu;
	if (f->outer)
		m->samples += f->total;
	if (!f->known)
		return;
	m->self += f->dur > f->child ? f->dur - f->child : 0;
	if (f->outer)
		m->total += f->dur;
	if (st->n)
		st->f[st->n - 1].child += f->dur;
}

static size_t stack_of(struct tsummary *S, uint64_t tid)
{
	uint64_t *v = sp_u64map_get(&S->stack_of, tid);

	if (v)
		return *v;
	sp_grow(&S->stacks, &S->capstacks, S->nstacks + 1, sizeof(*S->stacks));
	memset(&S->stacks[S->nstacks], 0, sizeof(*S->stacks));
	sp_u64map_put(&S->stack_of, tid, S->nstacks);
	return S->nstacks++;
}

void sp_tree_summary_add(struct sp_tree *t, struct tspan *s, uint64_t parent, bool hold)
{
	struct tsummary *S = t->sum;
	size_t si;
	struct sstack *st;
	uint32_t mi;
	struct sframe *f;
	uint64_t *v;

	/* A [FRAME] (sp-correlate's span for the events of an interpreted
	 * frame outside every span) lasts from its first event to its last,
	 * across however many calls: no call's time. Its time stays the gap's. */
	if (s->end == SP_END_SYNTHETIC && s->method) {
		S->frames += !hold;
		return;
	}
	si = stack_of(S, s->tid);
	st = &S->stacks[si];
	mi = method_of(t, s);

	/* what is above the parent is finished (a span comes after its parent) */
	while (st->n && (!parent || st->f[st->n - 1].id != parent))
		pop(S, si);
	sp_grow(&st->f, &st->cap, st->n + 1, sizeof(*st->f));
	f = &st->f[st->n++];
	memset(f, 0, sizeof(*f));
	f->id = s->id;
	f->method = mi;
	f->child = s->part_child;	/* its earlier parts' children */
	if (hold) {			/* only its children's parent, for now */
		f->hold = s;
		return;
	}
	f->known = s->stop >= s->start && s->stop && s->end != SP_END_OPEN;
	f->start = s->start;
	f->dur = f->known ? s->stop - s->start : 0;
	S->last_tid = s->tid;
	S->last_stop = f->known ? s->stop : 0;
	f->samples = s->samples;
	f->total = s->total;
	f->offcpu = s->offcpu;
	v = sp_u64map_get(&S->active, active_key(si, mi));
	f->outer = !v;
	if (v)
		++*v;
	else
		sp_u64map_put(&S->active, active_key(si, mi), 1);
	S->m[mi].calls++;
	S->spans++;
	if (!f->known) {
		S->m[mi].open++;
		S->open++;
	}
}

void sp_tree_summary_stop(struct sp_tree *t, const struct tspan *m)
{
	struct tsummary *S = t->sum;
	uint64_t *v = sp_u64map_get(&S->stack_of, m->tid);
	struct sstack *st;
	uint32_t mi;
	size_t i;

	if (!v || !S->open || (S->last_tid == m->tid && S->last_stop == m->stop))
		return;		/* none open, or the stop of the span just added */
	st = &S->stacks[*v];
	mi = method_of(t, m);
	for (i = st->n; i-- > 0;) {
		struct sframe *f = &st->f[i];

		if (f->known || f->method != mi || f->start > m->stop)
			continue;
		f->known = true;
		f->dur = m->stop - f->start;
		S->m[mi].open--;
		S->open--;
		S->early++;
		return;
	}
}

void sp_tree_summary_new(struct sp_tree *t)
{
	t->sum = sp_xcalloc(1, sizeof(*t->sum));
}

/* The end of a stream: every stack is finished. */
void sp_tree_summary_flush(struct sp_tree *t)
{
	struct tsummary *S = t->sum;
	size_t i;

	if (!S)
		return;
	for (i = 0; i < S->nstacks; i++)
		while (S->stacks[i].n)
			pop(S, i);
	/* ids start again in the next stream */
	for (i = 0; i < S->nstacks; i++)
		free(S->stacks[i].f);
	free(S->stacks);
	S->stacks = NULL;
	S->nstacks = S->capstacks = 0;
	sp_u64map_release(&S->stack_of);
	sp_u64map_release(&S->active);
}

void sp_tree_summary_free(struct sp_tree *t)
{
	struct tsummary *S = t->sum;

	if (!S)
		return;
	sp_tree_summary_flush(t);
	free(S->m);
	sp_idset_release(&S->index);
	sp_buf_release(&S->key);
	free(S);
	t->sum = NULL;
}

/* ---- printing ---------------------------------------------------------- */

static uint64_t sort_value(const struct sp_tree *t, const struct smethod *m)
{
	switch (t->o.summary_sort) {
	case SP_SUMMARY_TOTAL: return m->total;
	case SP_SUMMARY_CALLS: return m->calls;
	case SP_SUMMARY_CPU: return m->self_samples;
	case SP_SUMMARY_OFFCPU: return m->offcpu;
	default: return m->self;
	}
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct sp_tree *t = ctx;
	const struct smethod *x = *(const struct smethod *const *)a;
	const struct smethod *y = *(const struct smethod *const *)b;
	uint64_t vx = t->stable ? x->calls : sort_value(t, x);
	uint64_t vy = t->stable ? y->calls : sort_value(t, y);
	int c;

	if (vx != vy)
		return vx > vy ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

static const char *const sort_names[] = {
	[SP_SUMMARY_SELF] = "self", [SP_SUMMARY_TOTAL] = "total", [SP_SUMMARY_CALLS] = "calls",
	[SP_SUMMARY_CPU] = "cpu", [SP_SUMMARY_OFFCPU] = "offcpu",
};

static void cell_dur(FILE *f, uint64_t ns)
{
	char d[32];

	sp_tree_fmt_dur(d, sizeof(d), ns);
	fprintf(f, " %10s", d);
}

/* CPU and off-CPU cells: "-" for none, which is most methods' */
static void cell_cpu(const struct sp_tree *t, FILE *f, uint64_t samples)
{
	if (!samples)
		fprintf(f, " %10s", "-");
	else if (t->period_ns)
		cell_dur(f, samples * t->period_ns);
	else
		fprintf(f, " %10llu", (unsigned long long)samples);
}

static void cell_share(FILE *f, uint64_t part, uint64_t whole)
{
	fprintf(f, " %6.1f%%", whole ? 100.0 * (double)part / (double)whole : 0.0);
}

static void text_row(const struct sp_tree *t, const struct smethod *m, uint64_t whole)
{
	FILE *f = t->out;

	fprintf(f, "%10llu", (unsigned long long)m->calls);
	if (!t->stable) {
		cell_dur(f, m->total);
		cell_share(f, m->total, whole);
		cell_dur(f, m->self);
		cell_share(f, m->self, whole);
		cell_cpu(t, f, m->samples);
		cell_cpu(t, f, m->self_samples);
		if (m->offcpu)
			cell_dur(f, m->offcpu);
		else
			fprintf(f, " %10s", "-");
	}
	fprintf(f, "  %s", m->name);
	if (m->file) {
		fprintf(f, "  %s", sp_tree_base_name(m->file));
		if (m->line)
			fprintf(f, ":%llu", (unsigned long long)m->line);
	}
	if (m->open)
		fprintf(f, "  (%llu open)", (unsigned long long)m->open);
	fputc('\n', f);
}

static void json_row(const struct sp_tree *t, const struct smethod *m)
{
	FILE *f = t->out;

	fputs("{\"method\":", f);
	sp_tree_json_str(f, m->name);
	if (m->file) {
		fputs(",\"file\":", f);
		sp_tree_json_str(f, m->file);
	}
	if (m->line)
		fprintf(f, ",\"line\":%llu", (unsigned long long)m->line);
	fprintf(f, ",\"calls\":%llu", (unsigned long long)m->calls);
	if (m->open)
		fprintf(f, ",\"open\":%llu", (unsigned long long)m->open);
	if (!t->stable) {
		fprintf(f, ",\"total_ns\":%llu,\"self_ns\":%llu,\"samples\":%llu,"
			"\"self_samples\":%llu,\"offcpu_ns\":%llu", (unsigned long long)m->total,
			(unsigned long long)m->self, (unsigned long long)m->samples,
			(unsigned long long)m->self_samples, (unsigned long long)m->offcpu);
		if (t->period_ns)
			fprintf(f, ",\"cpu_ns\":%llu,\"self_cpu_ns\":%llu",
				(unsigned long long)(m->samples * t->period_ns),
				(unsigned long long)(m->self_samples * t->period_ns));
	}
	fputc('}', f);
}

static void print_head(const struct sp_tree *t, size_t shown, uint64_t whole)
{
	const struct tsummary *S = t->sum;
	FILE *f = t->out;

	if (t->json) {
		fprintf(f, "{\"type\":\"summary\",\"sort\":\"%s\",\"spans\":%llu,\"frames\":%llu,"
			"\"methods\":%zu,\"open_spans\":%llu,\"written_early\":%llu",
			t->stable ? "calls" : sort_names[t->o.summary_sort],
			(unsigned long long)S->spans, (unsigned long long)S->frames, S->nm,
			(unsigned long long)S->open, (unsigned long long)S->early);
		if (!t->stable)
			fprintf(f, ",\"span_time_ns\":%llu,\"sample_period_ns\":%llu",
				(unsigned long long)whole, (unsigned long long)t->period_ns);
		fputs(",\"rows\":[", f);
		return;
	}
	fprintf(f, "# stackpulse summary  spans %llu  methods %zu  sorted by %s",
		(unsigned long long)S->spans, S->nm,
		t->stable ? "calls" : sort_names[t->o.summary_sort]);
	if (shown < S->nm)
		fprintf(f, "  top %zu", shown);
	fputc('\n', f);
	if (S->open)
		fprintf(f, "# %llu spans were open at the end: their time is not counted\n",
			(unsigned long long)S->open);
	if (S->frames)
		fprintf(f, "# %llu frames ([FRAME] in the tree: an interpreted function's events "
			"outside every span) are no method calls: not in the table\n",
			(unsigned long long)S->frames);
	if (S->early)
		fprintf(f, "# %llu spans were written before their end (sp-correlate --max-held): "
			"their CPU is counted until then\n", (unsigned long long)S->early);
	if (t->stable) {
		fprintf(f, "%10s  %s\n", "calls", "method  location");
		return;
	}
	fputs("# total: time inside, a recursion counted once; self: total minus its calls; "
	      "% of all span time\n", f);
	fprintf(f, "%10s %10s %7s %10s %7s %10s %10s %10s  %s\n",
		"calls", "total", "%", "self", "%",
		t->period_ns ? "cpu" : "samples", t->period_ns ? "self-cpu" : "self-smpl",
		"off-cpu", "method  location");
}

void sp_tree_print_summary(struct sp_tree *t)
{
	struct tsummary *S = t->sum;
	const struct smethod **rows;
	uint64_t whole = 0;
	size_t i, shown;

	sp_tree_summary_parts_end(t);
	sp_tree_summary_flush(t);
	rows = sp_xmalloc((S->nm ? S->nm : 1) * sizeof(*rows));
	for (i = 0; i < S->nm; i++) {
		rows[i] = &S->m[i];
		whole += S->m[i].self;	/* each span's time once: the time under spans */
	}
	qsort_r(rows, S->nm, sizeof(*rows), cmp_rows, t);
	shown = t->o.summary_top && t->o.summary_top < S->nm ? t->o.summary_top : S->nm;
	print_head(t, shown, whole);
	for (i = 0; i < shown; i++) {
		if (t->json) {
			if (i)
				fputc(',', t->out);
			json_row(t, rows[i]);
		} else {
			text_row(t, rows[i], whole);
		}
	}
	if (t->json)
		fputs("]}\n", t->out);
	free(rows);
}
