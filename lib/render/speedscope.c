// SPDX-License-Identifier: MIT
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * the names as shared frames (with keep_source, one per function and
 * source file, with the file and the lowest line the symbols gave), one
 * sampled profile per thread from the
 * time-ordered runs, and one evented profile per thread from the spans of
 * correlated input (opened and closed properly nested, as the format
 * requires), one per Ruby fiber (the spans that began while it ran: a
 * fiber's stack is its own, so they are not its thread's), and one per
 * asyncio task (lanes.h): the spans of its resumes, from its first resume
 * to its end.
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

/* Keys x[0..n) and y[0..n), the first that differs deciding. */
static int cmp_keys(const uint64_t *x, const uint64_t *y, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* Runs by process and thread, then in their order. */
static int cmp_run(const void *a, const void *b, void *arg)
{
	const struct sp_folded *f = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct sp_flame_run *x = sp_folded_seq(f, i), *y = sp_folded_seq(f, j);

	return cmp_keys((const uint64_t[]){ x->pid, x->tid, i },
			(const uint64_t[]){ y->pid, y->tid, j }, 3);
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

/* Spans by stream, process, thread and start, the outer (longer) first. */
static int cmp_span(const void *a, const void *b, void *arg)
{
	const struct sp_folded *f = arg;
	const struct sp_flame_span *x = sp_folded_span(f, *(const size_t *)a);
	const struct sp_flame_span *y = sp_folded_span(f, *(const size_t *)b);

	return cmp_keys((const uint64_t[]){ x->gen, x->pid, x->tid, x->start, y->stop, x->id },
			(const uint64_t[]){ y->gen, y->pid, y->tid, y->start, x->stop, y->id }, 6);
}

/* Fiber switches by stream, process, thread and time, then in input order. */
static int cmp_switch(const void *a, const void *b, void *arg)
{
	const struct sp_folded *f = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct sp_flame_fiber *x = sp_folded_fiber(f, i), *y = sp_folded_fiber(f, j);

	return cmp_keys((const uint64_t[]){ x->gen, x->pid, x->tid, x->time, i },
			(const uint64_t[]){ y->gen, y->pid, y->tid, y->time, j }, 5);
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

	return cmp_keys((const uint64_t[]){ lane[x], x }, (const uint64_t[]){ lane[y], y }, 2);
}

/*
 * The Ruby fiber (1, 2, ...) each span ran in into fib[], 0 for its
 * thread's root fiber, and the number of fibers; each one's first switch
 * to it (an index of sp_folded_fiber()) into (*first)[fiber - 1]. A span is
 * of the fiber its thread ran when it started: the last switch on that
 * thread at or before its start (a fiber's outermost spans have the
 * resumer's span as parent, so parents do not say it). A switch that says
 * its fiber is new starts another fiber with the same id.
 */
static size_t fibers_of(const struct sp_folded *f, size_t *fib, size_t **first)
{
	size_t nsw = sp_folded_nfibers(f), n = sp_folded_nspans(f), nf = 0, i, lo, hi, mid;
	struct sp_u64map ids = SP_U64MAP_INIT;	/* gen, pid, id -> its fiber */
	size_t *ix, *of;
	uint64_t k, *v;

	*first = NULL;
	if (!nsw)
		return 0;
	ix = sp_xcalloc(nsw, sizeof(*ix));
	of = sp_xcalloc(nsw, sizeof(*of));
	*first = sp_xcalloc(nsw, sizeof(**first));
	for (i = 0; i < nsw; i++)
		ix[i] = i;
	qsort_r(ix, nsw, sizeof(*ix), cmp_switch, (void *)f);
	for (i = 0; i < nsw; i++) {
		const struct sp_flame_fiber *w = sp_folded_fiber(f, ix[i]);

		if (!w->to)
			continue;
		k = sp_hash_mix(sp_hash_mix(sp_hash_u64(w->gen), w->pid), w->to);
		v = sp_u64map_get(&ids, k);
		if (v && !w->fresh) {
			of[i] = *v;
			continue;
		}
		(*first)[nf] = ix[i];
		of[i] = ++nf;
		sp_u64map_put(&ids, k, nf);
	}
	for (i = 0; i < n; i++) {
		const struct sp_flame_span *s = sp_folded_span(f, i);
		const uint64_t at[] = { s->gen, s->pid, s->tid, s->start };

		for (lo = 0, hi = nsw; lo < hi;) {	/* the first switch after the start */
			const struct sp_flame_fiber *w = sp_folded_fiber(f, ix[mid = lo + (hi - lo) / 2]);

			if (cmp_keys((const uint64_t[]){ w->gen, w->pid, w->tid, w->time }, at, 4) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		fib[i] = 0;
		if (lo) {
			const struct sp_flame_fiber *w = sp_folded_fiber(f, ix[lo - 1]);

			if (w->gen == s->gen && w->pid == s->pid && w->tid == s->tid)
				fib[i] = of[lo - 1];
		}
	}
	sp_u64map_release(&ids);
	free(ix);
	free(of);
	return nf;
}

/* The time an open span ends at: the last the input saw. */
static uint64_t end_time(const struct sp_folded *f)
{
	uint64_t last = sp_folded_stats(f)->last_time;
	size_t i, n = sp_folded_nspans(f);

	for (i = 0; i < n; i++) {
		const struct sp_flame_span *s = sp_folded_span(f, i);

		if (s->stop > last)
			last = s->stop;
		if (s->start > last)
			last = s->start;
	}
	return last;
}

/* One evented profile of spans ix[i..j), sorted by cmp_span. */
static void profile(const struct sp_folded *f, FILE *out, bool *first, const char *title,
		    const size_t *ix, size_t i, size_t j, uint64_t last, struct opened *st)
{
	uint64_t lo = sp_folded_span(f, ix[i])->start, hi = lo;
	size_t k;

	for (k = i; k < j; k++) {
		const struct sp_flame_span *s = sp_folded_span(f, ix[k]);

		if ((s->stop ? s->stop : last) > hi)
			hi = s->stop ? s->stop : last;
	}
	fputs(*first ? "\n" : ",\n", out);
	*first = false;
	fputs("{\"type\":\"evented\",\"name\":", out);
	sp_flame_json_str(out, title);
	fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":%" PRIu64 ",\"endValue\":%"
		PRIu64 ",\"events\":[", lo, hi);
	span_events(f, out, ix, i, j, last, st);
	fputs("]}", out);
}

/* A lane's profile title: a task's (by its first span) or a fiber's. */
struct lane_kind {
	const char *what;		/* "task" or "fiber" */
	const size_t *first;		/* fibers: each one's first switch */
};

/*
 * One evented profile per lane (lane[i] of span i: 1, 2, ..., 0 for none):
 * an asyncio task's (the spans of its resumes) or a Ruby fiber's.
 */
static void lanes(const struct sp_folded *f, FILE *out, bool *first, const size_t *lane,
		  const struct lane_kind *kind, uint64_t last)
{
	size_t n = sp_folded_nspans(f), *ix, *sub, i, j, m = 0;
	struct opened *st;
	char title[700];

	ix = sp_xcalloc(n ? n : 1, sizeof(*ix));
	sub = sp_xcalloc(n ? n : 1, sizeof(*sub));
	st = sp_xcalloc(n ? n : 1, sizeof(*st));
	for (i = 0; i < n; i++)
		if (lane[i])
			ix[m++] = i;
	qsort_r(ix, m, sizeof(*ix), cmp_lane, (void *)lane);
	for (i = 0; i < m; i = j) {
		const struct sp_flame_span *s0 = sp_folded_span(f, ix[i]);

		for (j = i; j < m && lane[ix[j]] == lane[ix[i]]; j++)
			sub[j - i] = ix[j];
		qsort_r(sub, j - i, sizeof(*sub), cmp_span, (void *)f);
		if (kind->first) {
			const struct sp_flame_fiber *w = sp_folded_fiber(f, kind->first[lane[ix[i]] - 1]);

			snprintf(title, sizeof(title), "fiber 0x%" PRIx64 " %" PRIu64 "/%" PRIu64,
				 w->to, w->pid, w->tid);
		} else {
			snprintf(title, sizeof(title), "%s %s %" PRIu64 "/%" PRIu64, kind->what,
				 sp_folded_name(f, s0->name, NULL), s0->pid, s0->tid);
		}
		profile(f, out, first, title, sub, 0, j - i, last, st);
	}
	free(ix);
	free(sub);
	free(st);
}

/* One evented profile per thread: its spans but its fibers'. */
static void evented(const struct sp_folded *f, FILE *out, bool *first, const size_t *fib,
		    uint64_t last)
{
	size_t n = sp_folded_nspans(f), *ix = sp_xcalloc(n ? n : 1, sizeof(*ix));
	struct opened *st = sp_xcalloc(n ? n : 1, sizeof(*st));
	size_t i, j, m = 0;
	char title[600];

	for (i = 0; i < n; i++)
		if (!fib[i])
			ix[m++] = i;
	qsort_r(ix, m, sizeof(*ix), cmp_span, (void *)f);
	for (i = 0; i < m; i = j) {
		const struct sp_flame_span *s0 = sp_folded_span(f, ix[i]);

		for (j = i; j < m; j++) {
			const struct sp_flame_span *s = sp_folded_span(f, ix[j]);

			if (s->gen != s0->gen || s->pid != s0->pid || s->tid != s0->tid)
				break;
		}
		thread_title(f, s0->pid, s0->tid, "spans", title, sizeof(title));
		profile(f, out, first, title, ix, i, j, last, st);
	}
	free(ix);
	free(st);
}

/* The evented profiles: threads, Ruby fibers, asyncio tasks. */
static void all_evented(const struct sp_folded *f, FILE *out, bool *first)
{
	size_t n = sp_folded_nspans(f), *lane = sp_xcalloc(n ? n : 1, sizeof(*lane));
	size_t *fib = sp_xcalloc(n ? n : 1, sizeof(*fib)), *firsts;
	uint64_t last = end_time(f);
	const struct lane_kind task = { "task", NULL };
	struct lane_kind fiber = { "fiber", NULL };

	if (fibers_of(f, fib, &firsts))
		fiber.first = firsts;
	evented(f, out, first, fib, last);
	if (fiber.first)
		lanes(f, out, first, fib, &fiber, last);
	if (n && lanes_of(f, lane))
		lanes(f, out, first, lane, &task, last);
	free(lane);
	free(fib);
	free(firsts);
}

int sp_speedscope_write(const struct sp_folded *f, const char *name, FILE *out)
{
	uint32_t nn = sp_folded_nnames(f), i;
	unsigned int line, col;
	const char *file;
	bool first = true;

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"sp-flame\",\"name\":", out);
	sp_flame_json_str(out, name ? name : "");
	fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", out);
	for (i = 1; i < nn; i++) {
		fputs(i > 1 ? ",\n{\"name\":" : "\n{\"name\":", out);
		sp_flame_json_str(out, sp_folded_name(f, i, NULL));
		file = sp_folded_name_source(f, i, &line, &col);
		if (*file) {
			fputs(",\"file\":", out);
			sp_flame_json_str(out, file);
		}
		if (*file && line)
			fprintf(out, ",\"line\":%u", line);
		if (*file && line && col)
			fprintf(out, ",\"col\":%u", col);
		putc('}', out);
	}
	fputs("]},\"profiles\":[", out);
	sampled(f, out, &first);
	all_evented(f, out, &first);
	fputs("]}\n", out);
	return ferror(out) ? -1 : 0;
}
