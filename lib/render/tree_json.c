// SPDX-License-Identifier: MIT
/*
 * The tree's JSON form (docs/sp-tree.md): one object per node with its
 * children in an array, every string in its text form escaped for JSON.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "correlate.h"
#include "escape.h"
#include "events.h"
#include "sp.h"
#include "treeP.h"

/* A string in its text form (copy_str()), as JSON gives it back. */
void sp_tree_json_str(FILE *f, const char *s)
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
	sp_tree_sort_children(t, n);
	if (!sp_tree_next_kept(n->first) && n->type == N_EVENT)
		return false;
	fputs(",\"children\":[", t->out);
	if (t->o.max_depth && depth > t->o.max_depth) {
		fputc(']', t->out);
		return false;
	}
	return true;
}

/* After the children of n: an item that counts those --min-share hid. */
static void elided_json(struct sp_tree *t, const struct tnode *n, uint64_t count)
{
	uint64_t ns, telling, k = sp_tree_elided(t, n, &ns, &telling);

	if (!k)
		return;
	fprintf(t->out, "%s{\"type\":\"elided\",\"count\":%llu,\"min_share\":%g", count ? "," : "",
		(unsigned long long)k, t->share);
	if (telling)
		fprintf(t->out, ",\"with_events\":%llu", (unsigned long long)telling);
	if (!t->stable)
		fprintf(t->out, ",\"dur_ns\":%llu", (unsigned long long)ns);
	fputc('}', t->out);
}

/* A run of siblings being written: the next kept one and where to stop. */
struct jframe {
	struct tnode *parent;	/* whose children they are */
	struct tnode *next, *stop;
	uint64_t base, count;	/* count: items written in the array */
	unsigned int depth;
};

/*
 * The JSON items of the sorted siblings from c up to stop at depth, each
 * with what is under it, depth first; *count: items written before.
 */
void sp_tree_print_range_json(struct sp_tree *t, struct tnode *parent, struct tnode *c,
			      struct tnode *stop, bool final, unsigned int depth, uint64_t base,
			      uint64_t *count)
{
	struct jframe *st = sp_xmalloc(16 * sizeof(*st)), *f;
	size_t n = 1, cap = 16;
	struct tnode *d;
	struct agg ag;

	st[0] = (struct jframe){ parent, sp_tree_next_kept(c), stop, base, *count, depth };
	while (n) {
		f = &st[n - 1];
		if (!f->next || f->next == f->stop) {
			if (n > 1 || final)
				elided_json(t, f->parent, f->count);
			if (--n)
				fputs("]}", t->out);	/* its array, then the node */
			else
				*count = f->count;
			continue;
		}
		c = f->next;
		d = sp_tree_next_kept(sp_tree_group_end(t, c, &ag));
		if (ag.count > 1)
			sp_tree_fold_run(t, c, d);
		f->next = d;
		if (f->count++)
			fputc(',', t->out);
		base = print_json(t, c, f->base, &ag);
		depth = sp_tree_depth_below(c, f->depth);
		if (!children_json(t, c, depth)) {
			fputc('}', t->out);
			continue;
		}
		sp_grow(&st, &cap, n + 1, sizeof(*st));
		st[n++] = (struct jframe){ c, sp_tree_next_kept(c->first), NULL, base, 0, depth };
	}
	free(st);
}

void sp_tree_json_proc_head(struct sp_tree *t, const struct tproc *p)
{
	FILE *f = t->out;

	fputs("{\"type\":\"process\"", f);
	if (!t->stable)
		fprintf(f, ",\"pid\":%llu,\"ppid\":%llu", (unsigned long long)p->pid,
			(unsigned long long)p->ppid);
	fputs(",\"comm\":", f);
	sp_tree_json_str(f, sp_tree_proc_comm(p));
	if (p->exe) {
		fputs(",\"exe\":", f);
		sp_tree_json_str(f, p->exe);
	}
	if (!t->stable && p->nspid)
		fprintf(f, ",\"nspid\":%llu", (unsigned long long)p->nspid);
	if (p->runtime) {
		fputs(",\"runtime\":", f);
		sp_tree_json_str(f, p->runtime);
		fputs(",\"container\":", f);
		sp_tree_json_str(f, p->container ? p->container : "");
	}
}

void sp_tree_json_proc_exit(struct sp_tree *t, const struct tproc *p)
{
	uint64_t code, sig;
	char name[32];
	bool core;

	if (!sp_tree_proc_status(p, &code, &sig, &core))
		return;
	if (sig)
		fprintf(t->out, ",\"signal\":%llu,\"signal_name\":\"%s\"%s",
			(unsigned long long)sig, sp_tree_signal_name(name, sig),
			core ? ",\"core_dumped\":true" : "");
	else
		fprintf(t->out, ",\"exit\":%llu", (unsigned long long)code);
}

/* ,"key":"value" for a string of the tree. */
static void json_member(FILE *f, const char *key, const char *s)
{
	fprintf(f, ",\"%s\":", key);
	sp_tree_json_str(f, s);
}

static void json_span(struct sp_tree *t, const struct tspan *s, uint64_t base,
		      const struct agg *ag)
{
	bool group = ag && ag->count > 1;
	FILE *f = t->out;
	struct sp_buf b = SP_BUF_INIT;

	sp_tree_span_name(&b, s);
	fputs("{\"type\":\"span\",\"name\":", f);
	sp_tree_json_str(f, sp_buf_str(&b));
	sp_buf_release(&b);
	if (s->klass)
		json_member(f, "class", s->klass);
	if (s->method)
		json_member(f, "method", s->method);
	if (s->early && !t->stable)
		fputs(",\"written_early\":true", f);
	if (s->file) {
		json_member(f, "file", s->file);
		fprintf(f, ",\"line\":%llu", (unsigned long long)s->line);
	}
	fprintf(f, ",\"end\":\"%s\"", sp_span_end_name(s->end));
	if (s->error)
		json_member(f, "error", s->error);
	if (s->message)
		json_member(f, "message", s->message);
	if (group)
		fprintf(f, ",\"count\":%llu", (unsigned long long)ag->count);
	if (t->stable)
		return;
	fprintf(f, ",\"tid\":%llu,\"offset_ns\":%lld", (unsigned long long)s->tid,
		(long long)(s->start - base));
	if (s->stop)
		fprintf(f, ",\"dur_ns\":%llu",
			(unsigned long long)(group ? ag->dur : s->stop - s->start));
	fprintf(f, ",\"samples\":%llu,\"total_samples\":%llu",
		(unsigned long long)(group ? ag->samples : s->samples),
		(unsigned long long)(group ? ag->total : s->total));
	if (t->period_ns)
		fprintf(f, ",\"cpu_ns\":%llu",
			(unsigned long long)((group ? ag->total : s->total) * t->period_ns));
}

/* An address field: its length byte, then 4 or 16 bytes. */
static void json_addr(FILE *f, const uint8_t *p)
{
	char a[64];

	if (p && p[0] == 4)
		inet_ntop(AF_INET, p + 1, a, sizeof(a));
	else if (p && p[0] == 16)
		inet_ntop(AF_INET6, p + 1, a, sizeof(a));
	else
		a[0] = 0;
	sp_tree_json_str(f, a);
}

/* "fields":{...}: each field of the event's kind by its type. */
/* A field that is not the same in every event of a collapsed run
 * (varies) is null. */
static void json_event_fields(FILE *f, const struct tevent *e, const struct sp_event_schema *es,
			      uint32_t varies)
{
	const uint8_t *p;
	unsigned int i, k;

	fputs(",\"fields\":{", f);
	for (i = 0; i < e->nvals; i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "", es->fields[i].name);
		if (varies & (1u << i)) {
			fputs("null", f);
			continue;
		}
		switch (es->fields[i].type) {
		case SP_FT_STR:
			sp_tree_json_str(f, (const char *)(uintptr_t)e->vals[i]);
			break;
		case SP_FT_ADDR:
			json_addr(f, (const uint8_t *)(uintptr_t)e->vals[i]);
			break;
		case SP_FT_BYTES:
			p = (const uint8_t *)(uintptr_t)e->vals[i];
			fputc('"', f);
			for (k = 0; p && k < p[0]; k++)
				fprintf(f, "%02x", p[1 + k]);
			fputc('"', f);
			break;
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

static void json_event(struct sp_tree *t, const struct tevent *e, uint64_t base,
		       const struct agg *ag)
{
	const struct sp_event_schema *es = sp_event_schema(e->kind);
	FILE *f = t->out;
	struct sp_buf txt = SP_BUF_INIT;
	uint32_t varies = ag ? ag->varies : e->varies;

	sp_event_text_run(&txt, e->kind, e->vals, e->nvals, t->stable, varies);
	fprintf(f, "{\"type\":\"event\",\"kind\":\"%s\",\"group\":\"%s\",\"text\":",
		es ? es->name : "unknown", sp_tree_group_name(e->kind));
	sp_tree_json_str(f, sp_buf_str(&txt));
	sp_buf_release(&txt);
	if (ag && ag->count > 1)
		fprintf(f, ",\"count\":%llu", (unsigned long long)ag->count);
	if (t->stable)
		return;
	fprintf(f, ",\"pid\":%llu,\"tid\":%llu,\"offset_ns\":%lld,\"rule\":",
		(unsigned long long)e->pid, (unsigned long long)e->tid,
		(long long)(e->n.time - base));
	if (varies & TEV_RULE_VARIES)
		fputs("null", f);
	else
		fprintf(f, "\"%s\"", sp_rule_name(e->rule));
	if (es)
		json_event_fields(f, e, es, varies);
}

/* The node's object up to its children; returns the base of their offsets. */
static uint64_t print_json(struct sp_tree *t, struct tnode *n, uint64_t base,
			   const struct agg *ag)
{
	switch (n->type) {
	case N_PROC:
		sp_tree_json_proc_head(t, (const struct tproc *)n);
		sp_tree_json_proc_exit(t, (const struct tproc *)n);
		break;
	case N_THREAD:
		fputs("{\"type\":\"thread\"", t->out);
		if (!t->stable)
			fprintf(t->out, ",\"tid\":%llu",
				(unsigned long long)((const struct tthread *)n)->tid);
		if (!t->stable && ((const struct tthread *)n)->nstid)
			fprintf(t->out, ",\"nstid\":%llu",
				(unsigned long long)((const struct tthread *)n)->nstid);
		break;
	case N_SPAN:
		json_span(t, (const struct tspan *)n, base, ag);
		base = ((const struct tspan *)n)->start;
		break;
	case N_EVENT:
		json_event(t, (const struct tevent *)n, base, ag);
		break;
	}
	return base;
}

/* A top-level node and everything under it. */
void sp_tree_print_root_json(struct sp_tree *t, struct tnode *n, uint64_t base)
{
	uint64_t count = 0;

	base = print_json(t, n, base, NULL);
	if (children_json(t, n, sp_tree_top_depth(t))) {
		sp_tree_print_range_json(t, n, n->first, NULL, true, sp_tree_top_depth(t), base,
					 &count);
		fputc(']', t->out);
	}
	fputc('}', t->out);
}
