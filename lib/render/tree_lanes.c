// SPDX-License-Identifier: MIT
/*
 * sp-tree's lanes (lanes.h): after the tree, one node per asyncio task and
 * Ruby fiber with its whole life (wall time from its first resume to its
 * end, time running, resumes, awaits) and its resumes beneath, each naming
 * the span it was in the tree above.
 *
 * The tree's filters choose lanes too: --pid and --container those of the
 * processes shown (decided when printing, or when the tree last knew the
 * process: it forgets those it printed), --tid those of its threads,
 * --span those a matching span ran in.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lanes.h"
#include "sp.h"
#include "treeP.h"

/* The names of a lane's outermost coroutine, taken when its first resume
 * came (string ids are the stream's), and what the filters say of it. */
struct tlane_name {
	const char *klass, *method, *file;
	bool proc_ok;		/* its process is shown (--pid, --container) */
	bool span_ok;		/* a task: a span in it matched --span */
};

/* A span that matched --span on a thread with fibers: the fiber lanes
 * whose resumes it began in are shown. */
struct tlane_hit {
	uint64_t tid, start;
};

/* Spans kept for --span and fibers at most (more: every fiber is shown). */
#define TLANE_HITS_MAX	SP_LANES_MAX

struct tree_lanes {
	struct sp_lanes l;
	struct tlane_name *name;
	size_t cap;
	struct tlane_hit *hit;	/* sorted by tid, start when printing */
	size_t nhit, caphit;
	bool hits_full;
};

static const char *str_of(struct sp_tree *t, uint64_t id)
{
	return id && id <= t->nstrs ? t->strs[id - 1] : NULL;
}

/*
 * Whether the process pid is shown (with --pid or --container): it is a
 * top-level one, or under the fork of one. A process the tree does not know
 * is shown when --pid names it.
 */
static bool proc_shown(struct sp_tree *t, uint64_t pid)
{
	unsigned int hops;

	if (!t->o.npids && !t->o.ncontainers)
		return true;
	for (hops = 0; hops < 4096; hops++) {
		uint64_t *v = sp_u64map_get(&t->procs, pid);
		const struct tproc *p = v ? (const struct tproc *)(uintptr_t)*v : NULL;

		if (!p)
			return !t->o.ncontainers && sp_tree_in_list(t->o.pids, t->o.npids, pid);
		if (sp_tree_is_root(t, p))
			return true;
		if (!p->attached || !p->ppid || p->ppid == pid)
			return false;
		pid = p->ppid;
	}
	return false;
}

static struct tlane_name *name_of(struct tree_lanes *tl, const struct sp_lane *ln)
{
	if (ln->seq > tl->cap) {
		size_t old = tl->cap;

		sp_grow(&tl->name, &tl->cap, ln->seq, sizeof(*tl->name));
		memset(tl->name + old, 0, (tl->cap - old) * sizeof(*tl->name));
	}
	return &tl->name[ln->seq - 1];
}

/* Decide again for the lanes of processes the tree knows now (a fork
 * record can come after the child's first spans): before a new stream
 * forgets them, and when printing. */
void sp_tree_lanes_decide(struct sp_tree *t)
{
	size_t i;

	for (i = 0; t->lanes && i < t->lanes->l.n; i++) {
		const struct sp_lane *ln = t->lanes->l.lane[i];

		if (sp_u64map_get(&t->procs, ln->pid))
			name_of(t->lanes, ln)->proc_ok = proc_shown(t, ln->pid);
	}
}

/* A span that matched --span: its task's lane, or where fibers look for it. */
static void span_hit(struct sp_tree *t, const struct sp_span *r)
{
	struct tree_lanes *tl = t->lanes;
	struct tspan s = { .klass = str_of(t, r->klass), .method = str_of(t, r->method),
			   .runtime = r->runtime, .end = r->end };

	if (!sp_tree_name_matches(t, &s))
		return;
	if (tl->l.last_lane) {
		name_of(tl, tl->l.lane[tl->l.last_lane - 1])->span_ok = true;
		return;
	}
	if (r->runtime != SP_RT_RUBY)
		return;
	if (tl->nhit >= TLANE_HITS_MAX) {
		tl->hits_full = true;
		return;
	}
	sp_grow(&tl->hit, &tl->caphit, tl->nhit + 1, sizeof(*tl->hit));
	tl->hit[tl->nhit++] = (struct tlane_hit){ r->tid, r->start };
}

void sp_tree_lanes_add(struct sp_tree *t, const struct sp_record *rec)
{
	struct sp_lane *ln;
	struct tlane_name *nm;
	size_t before, i;

	if (!t->lanes) {
		if (rec->kind == SP_REC_HEADER)
			return;
		t->lanes = sp_xcalloc(1, sizeof(*t->lanes));
	}
	before = t->lanes->l.n;
	ln = sp_lanes_add(&t->lanes->l, rec);
	for (i = before; i < t->lanes->l.n; i++)	/* a new task or fiber */
		name_of(t->lanes, t->lanes->l.lane[i])->proc_ok =
			proc_shown(t, t->lanes->l.lane[i]->pid);
	if (ln && ln->nres == 1) {
		nm = name_of(t->lanes, ln);
		nm->klass = str_of(t, ln->klass);
		nm->method = str_of(t, ln->method);
		nm->file = str_of(t, ln->file);
	}
	if (rec->kind == SP_REC_SPAN && t->o.nspans)
		span_hit(t, &rec->span);
}

static int cmp_hit(const void *a, const void *b)
{
	const struct tlane_hit *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* A span of tl->hit (sorted) on thread tid began in [start, stop] (stop 0: open). */
static bool hit_in(const struct tree_lanes *tl, uint64_t tid, uint64_t start, uint64_t stop)
{
	size_t lo = 0, hi = tl->nhit, mid;

	while (lo < hi) {	/* the first hit at or after (tid, start) */
		mid = lo + (hi - lo) / 2;
		if (tl->hit[mid].tid < tid || (tl->hit[mid].tid == tid && tl->hit[mid].start < start))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < tl->nhit && tl->hit[lo].tid == tid && (!stop || tl->hit[lo].start <= stop);
}

/* Whether lane i passes the tree's filters. */
static bool lane_shown(struct sp_tree *t, size_t i)
{
	struct tree_lanes *tl = t->lanes;
	const struct sp_lane *ln = tl->l.lane[i];
	const struct tlane_name *nm = name_of(tl, ln);
	size_t j;

	if (!nm->proc_ok)
		return false;
	if (t->o.ntids && !sp_tree_in_list(t->o.tids, t->o.ntids, ln->tid))
		return false;
	if (!t->o.nspans || nm->span_ok)
		return true;
	if (ln->runtime != SP_RT_RUBY)
		return false;
	if (tl->hits_full)
		return true;
	for (j = 0; j < ln->nres; j++)
		if (hit_in(tl, ln->tid, ln->res[j].start, ln->res[j].stop))
			return true;
	return false;
}

/* The indexes of the lanes shown, in order, into *out (malloc'd; NULL for none). */
static size_t lanes_shown(struct sp_tree *t, size_t **out)
{
	struct tree_lanes *tl = t->lanes;
	size_t i, n = 0, *v;

	*out = NULL;
	if (!tl || !tl->l.n)
		return 0;
	sp_lanes_finish(&tl->l);
	sp_tree_lanes_decide(t);
	if (tl->nhit > 1)
		qsort(tl->hit, tl->nhit, sizeof(*tl->hit), cmp_hit);
	v = sp_xcalloc(tl->l.n, sizeof(*v));
	for (i = 0; i < tl->l.n; i++)
		if (lane_shown(t, i))
			v[n++] = i;
	if (!n) {
		free(v);
		v = NULL;
	}
	*out = v;
	return n;
}

static void lane_title(struct sp_tree *t, const struct sp_lane *ln, const struct tlane_name *nm)
{
	if (ln->runtime == SP_RT_RUBY && t->stable) {
		fprintf(t->out, "fiber  owner %s", ln->owner ? "a fiber" : "root");
		return;
	}
	if (ln->runtime == SP_RT_RUBY) {
		fprintf(t->out, "fiber 0x%" PRIx64 "  owner %s", ln->id, ln->owner ? "" : "root");
		if (ln->owner)
			fprintf(t->out, "fiber 0x%" PRIx64, ln->owner);
		return;
	}
	fprintf(t->out, "task %s%s%s", nm->klass ? nm->klass : "", nm->klass ? "." : "",
		nm->method ? nm->method : "?");
	if (nm->file)
		fprintf(t->out, "  %s:%" PRIu64, nm->file, ln->line);
}

static void print_resume(struct sp_tree *t, const struct sp_lane *ln, size_t i, uint64_t base)
{
	const struct sp_lane_resume *r = &ln->res[i];
	char d[32];

	fputs(i + 1 < ln->nres ? "├─ " : "└─ ", t->out);
	fprintf(t->out, "resume %zu", i + 1);
	if (!t->stable) {
		sp_tree_fmt_dur(d, sizeof(d), r->start > base ? r->start - base : 0);
		fprintf(t->out, "  +%s", d);
		if (r->stop) {
			sp_tree_fmt_dur(d, sizeof(d), r->stop - r->start);
			fprintf(t->out, "  dur=%s", d);
		}
	}
	fputs(!r->stop ? "  (open)" : r->suspended ? "  -> await" :
	      ln->runtime == SP_RT_RUBY ? "  -> end" : "  -> return", t->out);
	if (r->span && !t->stable)
		fprintf(t->out, "  [span %" PRIu64 "]", r->span);
	fputc('\n', t->out);
}

/* The lanes as text, after the tree. */
void sp_tree_print_lanes(struct sp_tree *t)
{
	struct sp_lanes *l = t->lanes ? &t->lanes->l : NULL;
	uint64_t base = t->start_mono;
	char w[32], r[32], s[32];
	size_t i, j, n, *shown;

	n = lanes_shown(t, &shown);
	if (n)
		fprintf(t->out, "# lanes: %zu (asyncio tasks and Ruby fibers, each from its first "
			"resume to its end)\n", n);
	for (i = 0; i < n; i++) {
		const struct sp_lane *ln = l->lane[shown[i]];

		lane_title(t, ln, name_of(t->lanes, ln));
		if (!t->stable) {
			sp_tree_fmt_dur(s, sizeof(s), ln->start > base ? ln->start - base : 0);
			sp_tree_fmt_dur(w, sizeof(w), ln->stop > ln->start ? ln->stop - ln->start : 0);
			sp_tree_fmt_dur(r, sizeof(r), ln->running_ns);
			fprintf(t->out, "  pid %" PRIu64 " tid %" PRIu64 "  +%s  wall=%s running=%s",
				ln->pid, ln->tid, s, w, r);
		}
		fprintf(t->out, "  resumes=%zu awaits=%" PRIu64 "%s\n", ln->nres, ln->awaits,
			ln->runtime == SP_RT_PYTHON && !ln->done ? "  (not ended)" : "");
		for (j = 0; j < ln->nres; j++)
			print_resume(t, ln, j, base);
	}
	free(shown);
	if (l && l->dropped)
		fprintf(t->out, "# lanes: %" PRIu64 " more not kept (more than %u)\n", l->dropped,
			SP_LANES_MAX);
}

/* The lanes as the JSON member "lanes" (after the processes). */
void sp_tree_lanes_json(struct sp_tree *t)
{
	struct sp_lanes *l = t->lanes ? &t->lanes->l : NULL;
	size_t i, j, n, *shown;

	n = lanes_shown(t, &shown);
	if (!n)
		return;
	fputs(",\"lanes\":[", t->out);
	for (i = 0; i < n; i++) {
		const struct sp_lane *ln = l->lane[shown[i]];
		const struct tlane_name *nm = name_of(t->lanes, ln);

		fprintf(t->out, "%s{\"kind\":\"%s\"", i ? "," : "",
			ln->runtime == SP_RT_RUBY ? "fiber" : "task");
		if (!t->stable)
			fprintf(t->out, ",\"id\":\"0x%" PRIx64 "\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64,
				ln->id, ln->pid, ln->tid);
		if (ln->runtime == SP_RT_RUBY) {
			if (!t->stable)
				fprintf(t->out, ",\"owner\":\"0x%" PRIx64 "\"", ln->owner);
		} else {
			fputs(",\"name\":", t->out);
			sp_tree_json_str(t->out, nm->method ? nm->method : "?");
			fputs(",\"module\":", t->out);
			sp_tree_json_str(t->out, nm->klass ? nm->klass : "");
			fputs(",\"file\":", t->out);
			sp_tree_json_str(t->out, nm->file ? nm->file : "");
			fprintf(t->out, ",\"line\":%" PRIu64 ",\"done\":%s", ln->line,
				ln->done ? "true" : "false");
		}
		if (!t->stable)
			fprintf(t->out, ",\"start\":%" PRIu64 ",\"stop\":%" PRIu64
				",\"running_ns\":%" PRIu64, ln->start, ln->stop, ln->running_ns);
		fprintf(t->out, ",\"awaits\":%" PRIu64 ",\"resumes\":[", ln->awaits);
		for (j = 0; j < ln->nres; j++) {
			const struct sp_lane_resume *r = &ln->res[j];

			fprintf(t->out, "%s{\"suspended\":%s", j ? "," : "",
				r->suspended ? "true" : "false");
			if (!t->stable)
				fprintf(t->out, ",\"start\":%" PRIu64 ",\"stop\":%" PRIu64
					",\"span\":%" PRIu64, r->start, r->stop, r->span);
			fputc('}', t->out);
		}
		fputs("]}", t->out);
	}
	fputc(']', t->out);
	free(shown);
}

void sp_tree_lanes_free(struct sp_tree *t)
{
	if (!t->lanes)
		return;
	sp_lanes_release(&t->lanes->l);
	free(t->lanes->name);
	free(t->lanes->hit);
	free(t->lanes);
	t->lanes = NULL;
}
