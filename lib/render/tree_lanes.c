// SPDX-License-Identifier: MIT
/*
 * sp-tree's lanes (lanes.h): after the tree, one node per asyncio task and
 * Ruby fiber with its whole life (wall time from its first resume to its
 * end, time running, resumes, awaits) and its resumes beneath, each naming
 * the span it was in the tree above.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lanes.h"
#include "sp.h"
#include "treeP.h"

/* The names of a lane's outermost coroutine, taken when its first resume
 * came (string ids are the stream's). */
struct tlane_name {
	const char *klass, *method, *file;
};

struct tree_lanes {
	struct sp_lanes l;
	struct tlane_name *name;
	size_t cap;
};

static const char *str_of(struct sp_tree *t, uint64_t id)
{
	return id && id <= t->nstrs ? t->strs[id - 1] : NULL;
}

void sp_tree_lanes_add(struct sp_tree *t, const struct sp_record *rec)
{
	struct sp_lane *ln;
	struct tlane_name *nm;

	if (!t->lanes) {
		if (rec->kind == SP_REC_HEADER)
			return;
		t->lanes = sp_xcalloc(1, sizeof(*t->lanes));
	}
	ln = sp_lanes_add(&t->lanes->l, rec);
	if (!ln || ln->nres != 1)
		return;
	if (ln->seq > t->lanes->cap) {
		size_t old = t->lanes->cap;

		sp_grow(&t->lanes->name, &t->lanes->cap, ln->seq, sizeof(*t->lanes->name));
		memset(t->lanes->name + old, 0, (t->lanes->cap - old) * sizeof(*t->lanes->name));
	}
	nm = &t->lanes->name[ln->seq - 1];
	nm->klass = str_of(t, ln->klass);
	nm->method = str_of(t, ln->method);
	nm->file = str_of(t, ln->file);
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
	static const struct tlane_name none;
	char w[32], r[32], s[32];
	size_t i, j;

	if (!l || !l->n)
		return;
	sp_lanes_finish(l);
	fprintf(t->out, "# lanes: %zu (asyncio tasks and Ruby fibers, each from its first resume "
		"to its end)\n", l->n);
	for (i = 0; i < l->n; i++) {
		const struct sp_lane *ln = l->lane[i];

		lane_title(t, ln, i < t->lanes->cap ? &t->lanes->name[i] : &none);
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
	if (l->dropped)
		fprintf(t->out, "# lanes: %" PRIu64 " more not kept (more than %u)\n", l->dropped,
			SP_LANES_MAX);
}

/* The lanes as the JSON member "lanes" (after the processes). */
void sp_tree_lanes_json(struct sp_tree *t)
{
	struct sp_lanes *l = t->lanes ? &t->lanes->l : NULL;
	static const struct tlane_name none;
	size_t i, j;

	if (!l || !l->n)
		return;
	sp_lanes_finish(l);
	fputs(",\"lanes\":[", t->out);
	for (i = 0; i < l->n; i++) {
		const struct sp_lane *ln = l->lane[i];
		const struct tlane_name *nm = i < t->lanes->cap ? &t->lanes->name[i] : &none;

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
}

void sp_tree_lanes_free(struct sp_tree *t)
{
	if (!t->lanes)
		return;
	sp_lanes_release(&t->lanes->l);
	free(t->lanes->name);
	free(t->lanes);
	t->lanes = NULL;
}
