// SPDX-License-Identifier: MIT
/*
 * The whole tree printed: its header (or, streaming, its opening lines and
 * a trailer with the totals), then each top-level process and what is under
 * it, in text or JSON. Streaming (--buffer): once the tree holds too many
 * nodes, the finished subtrees of the process being printed go out and are
 * freed (docs/sp-tree.md).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sp.h"
#include "treeP.h"

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

/* The duration, and why it is not the recording's when it is not. */
static const char *fmt_duration(const struct sp_tree *t, char *d, size_t size, uint64_t *ns)
{
	enum sp_walltime_basis b = sp_walltime_get(&t->wall, ns);

	if (*ns)
		sp_tree_fmt_dur(d, size, *ns);
	else
		snprintf(d, size, "?");
	return sp_walltime_note(b);
}

/* " (note)", or nothing, after the text duration. */
static void print_note(struct sp_tree *t, const char *note)
{
	if (*note)
		fprintf(t->out, " (%s)", note);
}

static void json_note(struct sp_tree *t, const char *note)
{
	if (*note) {
		fputs(",\"duration_note\":", t->out);
		sp_tree_json_str(t->out, note);
	}
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
			sp_tree_json_str(t->out, t->command);
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

/* The losses the "lost" sum leaves out, when there were any. */
static void print_other_losses(struct sp_tree *t)
{
	uint64_t stops = t->lost[SP_LOST_SPAN_STOPS], unprobed = t->lost[SP_LOST_UNPROBED];
	uint64_t window = t->lost[SP_LOST_WINDOW], early = t->lost[SP_LOST_INTERP_EVENTS];
	uint64_t late = t->lost[SP_LOST_LATE_PROBES];

	if (t->json) {
		if (stops)
			fprintf(t->out, ",\"lost_span_stops\":%llu", (unsigned long long)stops);
		if (unprobed)
			fprintf(t->out, ",\"unprobed\":%llu", (unsigned long long)unprobed);
		if (window)
			fprintf(t->out, ",\"lost_window\":%llu", (unsigned long long)window);
		if (early)
			fprintf(t->out, ",\"interp_events_lost\":%llu",
				(unsigned long long)early);
		if (late)
			fprintf(t->out, ",\"late_probes\":%llu", (unsigned long long)late);
		return;
	}
	if (stops)
		fprintf(t->out, "  span stops without a start %llu", (unsigned long long)stops);
	if (unprobed)
		fprintf(t->out, "  processes without probes %llu", (unsigned long long)unprobed);
	if (window)
		fprintf(t->out, "  window dropped %llu records", (unsigned long long)window);
	if (early)
		fprintf(t->out, "  events without their interpreted stack %llu",
			(unsigned long long)early);
	if (late)
		fprintf(t->out, "  processes with late probes %llu", (unsigned long long)late);
}

/* A flight dump: which trigger made it, when (wall clock, and after the
 * start of what it holds), and its particulars. */
static void print_trigger(struct sp_tree *t)
{
	uint64_t at = t->trigger_time, wall = 0;
	char when[64] = "?", d[32] = "?";

	if (!t->trigger)
		return;
	if (at && t->start_mono && at >= t->start_mono) {
		wall = t->start_wall ? t->start_wall + (at - t->start_mono) : 0;
		sp_tree_fmt_dur(d, sizeof(d), at - t->start_mono);
	}
	if (t->json) {
		fputs(",\"trigger\":", t->out);
		sp_tree_json_str(t->out, t->trigger);
		if (t->trigger_detail) {
			fputs(",\"trigger_detail\":", t->out);
			sp_tree_json_str(t->out, t->trigger_detail);
		}
		if (at)
			fprintf(t->out, ",\"trigger_time\":%llu", (unsigned long long)at);
		return;
	}
	if (wall) {
		time_t secs = (time_t)(wall / 1000000000ull);
		struct tm tm;

		gmtime_r(&secs, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03lluZ",
			 (unsigned long long)(wall / 1000000ull % 1000));
	}
	fprintf(t->out, "# dump: trigger %s at %s (+%s)%s%s\n", t->trigger, when, d,
		t->trigger_detail ? ": " : "", t->trigger_detail ? t->trigger_detail : "");
}

/* The counts line, and what of them the tree leaves out by default. */
static void print_counts(struct sp_tree *t)
{
	fprintf(t->out, "# processes %llu  spans %llu", (unsigned long long)t->nprocs,
		(unsigned long long)t->nspans_total);
	if (t->nframes)
		fprintf(t->out, "  frames %llu", (unsigned long long)t->nframes);
	fprintf(t->out, "  events %llu", (unsigned long long)t->nevents);
	if (t->audit_hidden)
		fprintf(t->out, " (%llu audit events of Python's own not shown: --all-audit)",
			(unsigned long long)t->audit_hidden);
	fputc('\n', t->out);
}

/* The same in the JSON object. */
static void json_counts(struct sp_tree *t)
{
	if (t->audit_hidden)
		fprintf(t->out, ",\"audit_hidden\":%llu", (unsigned long long)t->audit_hidden);
}

static void print_trailer(struct sp_tree *t)
{
	uint64_t ns;
	char d[32];
	const char *note = fmt_duration(t, d, sizeof(d), &ns);

	if (t->json) {
		fputc(']', t->out);
		sp_tree_lanes_json(t);
		if (!t->stable)
			fprintf(t->out, ",\"duration_ns\":%llu,\"lost_samples\":%llu,"
				"\"lost_events\":%llu,\"lost_spans\":%llu", (unsigned long long)ns,
				(unsigned long long)t->lost[0], (unsigned long long)t->lost[1],
				(unsigned long long)t->lost[2]);
		if (!t->stable) {
			json_note(t, note);
			print_other_losses(t);
			print_trigger(t);
			json_counts(t);
		}
		fputs("}\n", t->out);
		return;
	}
	if (t->stable)
		return;
	fprintf(t->out, "# duration %s", d);
	print_note(t, note);
	fprintf(t->out, "  lost %llu", (unsigned long long)(t->lost[0] + t->lost[1] + t->lost[2]));
	print_other_losses(t);
	fputc('\n', t->out);
	print_trigger(t);
	print_counts(t);
}

static void print_header(struct sp_tree *t)
{
	char when[64], d[32];
	uint64_t ns;
	const char *note = fmt_duration(t, d, sizeof(d), &ns);

	if (t->json) {
		fputs("{\"type\":\"recording\"", t->out);
		if (!t->stable)
			fprintf(t->out, ",\"start_wall_ns\":%llu,\"duration_ns\":%llu,"
				"\"lost_samples\":%llu,\"lost_events\":%llu,\"lost_spans\":%llu",
				(unsigned long long)t->start_wall, (unsigned long long)ns,
				(unsigned long long)t->lost[0], (unsigned long long)t->lost[1],
				(unsigned long long)t->lost[2]);
		if (!t->stable) {
			json_note(t, note);
			print_other_losses(t);
			print_trigger(t);
			json_counts(t);
		}
		if (t->command) {
			fputs(",\"command\":", t->out);
			sp_tree_json_str(t->out, t->command);
		}
		return;
	}
	if (t->stable) {
		fputs("# stackpulse recording\n", t->out);
		return;
	}
	fmt_when(t, when, sizeof(when));
	fprintf(t->out, "# stackpulse recording  started %s  duration %s", when, d);
	print_note(t, note);
	fprintf(t->out, "  lost %llu", (unsigned long long)(t->lost[0] + t->lost[1] + t->lost[2]));
	print_other_losses(t);
	fputc('\n', t->out);
	print_trigger(t);
	if (t->command)
		fprintf(t->out, "# command: %s\n", t->command);
	print_counts(t);
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
	return (n->type == N_PROC && !((const struct tproc *)n)->exited) ||
	       (n->type == N_SPAN && ((const struct tspan *)n)->written_open);
}

/* Does the subtree hold a process or a span written open that has not ended
 * (records may still come)? */
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
	struct sp_buf b = SP_BUF_INIT;

	if (!t->head_done)
		print_opening(t);
	p->streamed = true;
	t->streaming = p;
	if (t->json) {
		if (t->emitted_procs++)
			fputc(',', t->out);
		sp_tree_json_proc_head(t, p);
		fputs(",\"children\":[", t->out);
		return;
	}
	sp_tree_render_line(t, &b, &p->n, root_base(t, &p->n), NULL, t->stable, t->color);
	fprintf(t->out, "%s\n", sp_buf_str(&b));
	sp_buf_release(&b);
}

/*
 * Print the finished top-level subtrees of root process p, sorted (and, with
 * --stable, ordered) among themselves, and free them. Subtrees holding a
 * live process wait; so does the last run of identical siblings, which may
 * grow and which decides the └─ of the process (unless the only run is
 * larger than the buffer: then it is printed, and an identical sibling that
 * comes later starts a run of its own).
 */
void sp_tree_stream_proc(struct sp_tree *t, struct tproc *p)
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
		sp_tree_compute_keep(t, &p->n, false, false);
		sp_tree_sort_children(t, &p->n);
		for (c = sp_tree_next_kept(p->n.first); c; c = d) {
			d = sp_tree_next_kept(sp_tree_group_end(t, c, &ag));
			ngroups++;
			if (!d && (ngroups > 1 || ag.count == 1 ||
				   run_nodes(t, c, ag.count) <= t->limit))
				stop = c;
		}
		if (sp_tree_next_kept(p->n.first) != stop) {
			if (!p->streamed)
				open_proc(t, p);
			if (t->json) {
				sp_tree_print_range_json(t, &p->n, p->n.first, stop, false,
						 sp_tree_top_depth(t),
						 root_base(t, &p->n),
						 &t->emitted);
			} else {
				sp_tree_print_range_text(t, &p->n, p->n.first, stop, false, &pf,
						 sp_tree_top_depth(t), root_base(t, &p->n));
				sp_tree_prefix_release(&pf);
			}
		}
		for (c = p->n.first; c != stop; c = next) {
			next = c->next;
			if (c->small) {	/* its line comes after the process's last child */
				p->elided_n++;
				p->elided_ns += sp_tree_node_dur(t, c);
				p->elided_telling += sp_tree_small_telling(c);
			}
			sp_tree_free_subtree(t, c);
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
		if (!sp_tree_is_root(t, p) || p->streamed)
			continue;
		if (n == cap)
			sp_grow(&v, &cap, n + 1, sizeof(*v));
		v[n++] = &p->n;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), sp_tree_cmp_time);
	*out = v;
	return n;
}

int sp_tree_print(struct sp_tree *t, FILE *out)
{
	struct prefix pf = { 0 };
	struct tproc *sp = t->streaming;
	struct tnode **roots;
	struct sp_buf b = SP_BUF_INIT;
	size_t i, n;
	bool first = true;

	setup_output(t, out);
	if (t->sum) {
		sp_tree_print_summary(t);
		return ferror(out) ? -1 : 0;
	}
	if (sp) {
		/* the rest of the process being streamed, then its end */
		sp_tree_compute_keep(t, &sp->n, false, false);
		sp_tree_sort_children(t, &sp->n);
		if (t->json) {
			sp_tree_print_range_json(t, &sp->n, sp->n.first, NULL, true,
					 sp_tree_top_depth(t),
					 root_base(t, &sp->n),
					 &t->emitted);
			fputc(']', out);
			sp_tree_json_proc_exit(t, sp);
			fputc('}', out);
		} else {
			sp_tree_print_range_text(t, &sp->n, sp->n.first, NULL, true, &pf,
					 sp_tree_top_depth(t), root_base(t, &sp->n));
			sp_tree_render_line(t, &b, &sp->n, 0, NULL, t->stable, t->color);
			fprintf(out, "# end of %s\n", sp_buf_str(&b));
			sp_buf_release(&b);
		}
		first = false;
	} else {
		print_header(t);
		if (t->json)
			fputs(",\"processes\":[", out);
	}
	n = collect_roots(t, &roots);
	for (i = 0; i < n; i++) {
		if (!sp_tree_compute_keep(t, roots[i], false, false) &&
		    (t->o.nspans || t->o.ntids || t->o.event_kinds))
			continue;
		if (t->json) {
			if (!first)
				fputc(',', out);
			sp_tree_print_root_json(t, roots[i], t->start_mono ? t->start_mono :
					roots[i]->time);
		} else {
			sp_tree_print_text(t, roots[i], &pf, t->start_mono ? t->start_mono :
				   roots[i]->time);
		}
		first = false;
	}
	if (!t->json)
		sp_tree_print_lanes(t);
	if (t->head_done)
		print_trailer(t);
	else if (t->json) {
		fputc(']', out);
		sp_tree_lanes_json(t);
		fputs("}\n", out);
	}
	free(roots);
	sp_tree_prefix_release(&pf);
	return ferror(out) ? -1 : 0;
}

