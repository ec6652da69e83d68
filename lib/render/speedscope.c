// SPDX-License-Identifier: MIT
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * the names as shared frames, one sampled profile per thread from the
 * time-ordered runs, and one evented profile per thread from the spans of
 * correlated input (opened and closed properly nested, as the format
 * requires), and one per asyncio task (lanes.h): the spans of its resumes,
 * from its first resume to its end.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "flame.h"
#include "foldedP.h"
#include "hashmap.h"
#include "sp.h"

void sp_flame_json_str(FILE *out, const char *str)
{
	sp_esc_json_put(out, str, strlen(str), 0);
}

static int cmp_run(const void *a, const void *b, void *arg)
{
	const struct sp_folded *f = arg;
	const struct sp_flame_run *x = sp_folded_seq(f, *(const size_t *)a);
	const struct sp_flame_run *y = sp_folded_seq(f, *(const size_t *)b);

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static void thread_title(const struct sp_folded *f, uint64_t pid, uint64_t tid, const char *what,
			 char *buf, size_t len)
{
	const char *tn = sp_folded_thread_name(f, tid), *comm = sp_folded_comm(f, pid);

	snprintf(buf, len, "%s%s%s-%" PRIu64 "/%" PRIu64, what, *what ? " " : "",
		 *tn ? tn : *comm ? comm : "?", pid, tid);
}

static void sampled(const struct sp_folded *f, FILE *out, bool *first)
{
	size_t n = sp_folded_nseq(f), *ix = sp_xcalloc(n ? n : 1, sizeof(*ix));
	uint32_t *path = NULL;
	size_t cap = 0, i, j, k;
	unsigned int depth, d;
	uint64_t end;
	char title[600];

	for (i = 0; i < n; i++)
		ix[i] = i;
	qsort_r(ix, n, sizeof(*ix), cmp_run, (void *)f);
	for (i = 0; i < n; i = j) {
		const struct sp_flame_run *r0 = sp_folded_seq(f, ix[i]);

		end = 0;
		for (j = i; j < n; j++) {
			const struct sp_flame_run *r = sp_folded_seq(f, ix[j]);

			if (r->pid != r0->pid || r->tid != r0->tid)
				break;
			end += r->weight;
		}
		thread_title(f, r0->pid, r0->tid, "", title, sizeof(title));
		fputs(*first ? "\n" : ",\n", out);
		*first = false;
		fputs("{\"type\":\"sampled\",\"name\":", out);
		sp_flame_json_str(out, title);
		fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64
			",\"samples\":[", sp_folded_weight(f) == SP_FLAME_W_TIME ? "nanoseconds" : "none", end);
		for (k = i; k < j; k++) {
			const struct sp_flame_run *r = sp_folded_seq(f, ix[k]);

			depth = sp_folded_node_path(f, r->node, NULL, 0);
			sp_grow(&path, &cap, depth + 1, sizeof(*path));
			sp_folded_node_path(f, r->node, path, depth);
			fputs(k > i ? ",[" : "[", out);
			for (d = 0; d < depth; d++)
				fprintf(out, d ? ",%u" : "%u", path[d] - 1);
			putc(']', out);
		}
		fputs("],\"weights\":[", out);
		for (k = i; k < j; k++)
			fprintf(out, k > i ? ",%" PRIu64 : "%" PRIu64, sp_folded_seq(f, ix[k])->weight);
		fputs("]}", out);
	}
	free(ix);
	free(path);
}

static int cmp_span(const void *a, const void *b, void *arg)
{
	const struct sp_folded *f = arg;
	const struct sp_flame_span *x = sp_folded_span(f, *(const size_t *)a);
	const struct sp_flame_span *y = sp_folded_span(f, *(const size_t *)b);

	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->stop != y->stop)		/* the outer (longer) span first */
		return x->stop > y->stop ? -1 : 1;
	return x->id < y->id ? -1 : 1;
}

struct opened {
	uint32_t frame;
	uint64_t stop;
};

/* The open and close events of spans ix[i..j), sorted by cmp_span, nested
 * (st: room for j - i); last closes what is open at the end. */
static void span_events(const struct sp_folded *f, FILE *out, const size_t *ix, size_t i, size_t j,
			uint64_t last, struct opened *st)
{
	size_t k, ns = 0;

	for (k = i; k < j; k++) {
		const struct sp_flame_span *s = sp_folded_span(f, ix[k]);
		uint64_t stop = s->stop && s->stop >= s->start ? s->stop : last;

		while (ns && st[ns - 1].stop <= s->start) {
			ns--;
			fprintf(out, ",{\"type\":\"C\",\"frame\":%u,\"at\":%" PRIu64 "}",
				st[ns].frame, st[ns].stop);
		}
		if (ns && stop > st[ns - 1].stop)	/* overlaps its parent: clip */
			stop = st[ns - 1].stop;
		fprintf(out, "%s{\"type\":\"O\",\"frame\":%u,\"at\":%" PRIu64 "}",
			k > i ? "," : "", s->name - 1, s->start);
		st[ns].frame = s->name - 1;
		st[ns].stop = stop;
		ns++;
	}
	while (ns) {
		ns--;
		fprintf(out, ",{\"type\":\"C\",\"frame\":%u,\"at\":%" PRIu64 "}",
			st[ns].frame, st[ns].stop);
	}
}

/*
 * The lane (1, 2, ...) of each span into lane[], 0 for none, and the
 * number of lanes: a span with a coroutine whose parent has none is a
 * resume of the task of that coroutine (until a resume of it that did not
 * suspend: an address used again is another task); what runs under it is
 * the task's, and so is a coroutine it awaits when a throw into the task
 * runs that one first (lanes.h). Spans come parents first.
 */
static size_t lanes_of(const struct sp_folded *f, size_t *lane)
{
	size_t n = sp_folded_nspans(f), nl = 0, i;
	const struct sp_flame_span *base = sp_folded_span(f, 0);
	struct sp_u64map live = SP_U64MAP_INIT;	/* gen, pid, coro -> lane */
	struct sp_u64map inner = SP_U64MAP_INIT;	/* of a coroutine awaited */
	bool *done = sp_xcalloc(n + 1, sizeof(*done));
	uint64_t *v, k;

	for (i = 0; i < n; i++) {
		const struct sp_flame_span *s = base + i;
		const struct sp_flame_span *up = s->parent ?
			sp_folded_span_find(f, s->gen, s->parent) : NULL;

		lane[i] = up ? lane[up - base] : 0;
		if (!s->coro)
			continue;
		k = sp_hash_mix(sp_hash_mix(sp_hash_u64(s->gen), s->pid), s->coro);
		v = sp_u64map_get(&inner, k);
		if (!(up && up->coro) && v && !done[*v])
			lane[i] = *v;
		else if (!(up && up->coro))
			v = NULL;
		if ((up && up->coro) || v) {
			if (lane[i] && s->suspended)
				sp_u64map_put(&inner, k, lane[i]);
			else
				sp_u64map_del(&inner, k);
			continue;
		}
		v = sp_u64map_get(&live, k);
		lane[i] = v && *v ? *v : ++nl;
		done[lane[i]] = !s->suspended;
		sp_u64map_put(&live, k, s->suspended ? lane[i] : 0);
	}
	sp_u64map_release(&live);
	sp_u64map_release(&inner);
	free(done);
	return nl;
}

static int cmp_lane(const void *a, const void *b, void *arg)
{
	const size_t *lane = arg, x = *(const size_t *)a, y = *(const size_t *)b;

	if (lane[x] != lane[y])
		return lane[x] < lane[y] ? -1 : 1;
	return x < y ? -1 : 1;
}

/* One evented profile per asyncio task: the spans of its resumes. */
static void lanes(const struct sp_folded *f, FILE *out, bool *first)
{
	size_t n = sp_folded_nspans(f), *lane, *ix, *sub, i, j, m = 0;
	uint64_t last = sp_folded_stats(f)->last_time, hi;
	struct opened *st;
	char title[700];

	if (!n)
		return;
	lane = sp_xcalloc(n, sizeof(*lane));
	if (!lanes_of(f, lane)) {
		free(lane);
		return;
	}
	ix = sp_xcalloc(n, sizeof(*ix));
	sub = sp_xcalloc(n, sizeof(*sub));
	st = sp_xcalloc(n, sizeof(*st));
	for (i = 0; i < n; i++)
		if (lane[i])
			ix[m++] = i;
	qsort_r(ix, m, sizeof(*ix), cmp_lane, lane);
	for (i = 0; i < m; i = j) {
		const struct sp_flame_span *s0 = sp_folded_span(f, ix[i]);

		hi = s0->start;
		for (j = i; j < m && lane[ix[j]] == lane[ix[i]]; j++) {
			const struct sp_flame_span *s = sp_folded_span(f, ix[j]);

			sub[j - i] = ix[j];
			if ((s->stop ? s->stop : last) > hi)
				hi = s->stop ? s->stop : last;
		}
		qsort_r(sub, j - i, sizeof(*sub), cmp_span, (void *)f);
		snprintf(title, sizeof(title), "task %s %" PRIu64 "/%" PRIu64,
			 sp_folded_name(f, s0->name, NULL), s0->pid, s0->tid);
		fputs(*first ? "\n" : ",\n", out);
		*first = false;
		fputs("{\"type\":\"evented\",\"name\":", out);
		sp_flame_json_str(out, title);
		fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":%" PRIu64 ",\"endValue\":%"
			PRIu64 ",\"events\":[", s0->start, hi);
		span_events(f, out, sub, 0, j - i, last, st);
		fputs("]}", out);
	}
	free(lane);
	free(ix);
	free(sub);
	free(st);
}

static void evented(const struct sp_folded *f, FILE *out, bool *first)
{
	size_t n = sp_folded_nspans(f), *ix = sp_xcalloc(n ? n : 1, sizeof(*ix));
	struct opened *st = sp_xcalloc(n ? n : 1, sizeof(*st));
	uint64_t last = sp_folded_stats(f)->last_time, lo, hi;
	size_t i, j;
	char title[600];

	for (i = 0; i < n; i++) {
		const struct sp_flame_span *s = sp_folded_span(f, i);

		ix[i] = i;
		if (s->stop > last)
			last = s->stop;
		if (s->start > last)
			last = s->start;
	}
	qsort_r(ix, n, sizeof(*ix), cmp_span, (void *)f);
	for (i = 0; i < n; i = j) {
		const struct sp_flame_span *s0 = sp_folded_span(f, ix[i]);

		lo = s0->start;
		hi = lo;
		for (j = i; j < n; j++) {
			const struct sp_flame_span *s = sp_folded_span(f, ix[j]);

			if (s->gen != s0->gen || s->pid != s0->pid || s->tid != s0->tid)
				break;
			if ((s->stop ? s->stop : last) > hi)
				hi = s->stop ? s->stop : last;
		}
		thread_title(f, s0->pid, s0->tid, "spans", title, sizeof(title));
		fputs(*first ? "\n" : ",\n", out);
		*first = false;
		fputs("{\"type\":\"evented\",\"name\":", out);
		sp_flame_json_str(out, title);
		fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":%" PRIu64 ",\"endValue\":%"
			PRIu64 ",\"events\":[", lo, hi);
		span_events(f, out, ix, i, j, last, st);
		fputs("]}", out);
	}
	free(ix);
	free(st);
}

int sp_speedscope_write(const struct sp_folded *f, const char *name, FILE *out)
{
	uint32_t nn = sp_folded_nnames(f), i;
	bool first = true;

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"sp-flame\",\"name\":", out);
	sp_flame_json_str(out, name ? name : "");
	fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", out);
	for (i = 1; i < nn; i++) {
		fputs(i > 1 ? ",\n{\"name\":" : "\n{\"name\":", out);
		sp_flame_json_str(out, sp_folded_name(f, i, NULL));
		putc('}', out);
	}
	fputs("]},\"profiles\":[", out);
	sampled(f, out, &first);
	evented(f, out, &first);
	lanes(f, out, &first);
	fputs("]}\n", out);
	return ferror(out) ? -1 : 0;
}
