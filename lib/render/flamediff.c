// SPDX-License-Identifier: MIT
/*
 * Differences between two aggregations (column 0 = base, 1 = new), each
 * normalised by its own total: folded differences in the two-column form
 * that flamegraph.pl and difffolded.pl use, and function-level changes of
 * inclusive share for a summary and a CI threshold.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "sp.h"

static int cmp_change(const void *a, const void *b, void *arg)
{
	const struct sp_flame_change *x = a, *y = b;
	double dx = fabs(x->new_pct - x->base_pct), dy = fabs(y->new_pct - y->base_pct);

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(sp_folded_name(arg, x->name, NULL), sp_folded_name(arg, y->name, NULL));
}

struct sp_flame_change *sp_flame_changes(const struct sp_folded *f,
					 const struct sp_flame_paths *p, size_t *nout)
{
	uint32_t nn = sp_folded_nnames(f);
	uint64_t (*w)[2] = sp_xcalloc(nn ? nn : 1, sizeof(*w));
	size_t *stamp = sp_xcalloc(nn ? nn : 1, sizeof(*stamp));
	struct sp_flame_change *v = NULL;
	size_t cap = 0, n = 0, i;
	uint32_t d, id;

	/* Inclusive: a function counts once per stack, however often it recurs. */
	for (i = 0; i < p->n; i++) {
		for (d = 0; d < p->v[i].depth; d++) {
			id = p->v[i].names[d];
			if (id >= nn || stamp[id] == i + 1)
				continue;
			stamp[id] = i + 1;
			w[id][0] += p->v[i].w[0];
			w[id][1] += p->v[i].w[1];
		}
	}
	for (id = 1; id < nn; id++) {
		double a, b;

		if (!w[id][0] && !w[id][1])
			continue;
		a = p->total[0] ? 100.0 * w[id][0] / p->total[0] : 0;
		b = p->total[1] ? 100.0 * w[id][1] / p->total[1] : 0;
		sp_grow(&v, &cap, n + 1, sizeof(*v));
		v[n].name = id;
		v[n].base_pct = a;
		v[n].new_pct = b;
		n++;
	}
	if (n > 1)
		qsort_r(v, n, sizeof(*v), cmp_change, (void *)f);
	free(w);
	free(stamp);
	*nout = n;
	return v;
}

int sp_flame_diff_print(const struct sp_folded *f, const struct sp_flame_paths *p, FILE *out,
			bool all)
{
	uint64_t t0 = p->total[0], t1 = p->total[1];
	size_t i;
	uint32_t d;

	for (i = 0; i < p->n; i++) {
		const struct sp_flame_path *x = &p->v[i];
		unsigned __int128 a = (unsigned __int128)x->w[0] * t1;
		unsigned __int128 b = (unsigned __int128)x->w[1] * t0;
		uint64_t base;

		/* Same share on both sides (exactly, in integers): no change. */
		if (!all && a == b)
			continue;
		base = t0 ? (uint64_t)((a + t0 / 2) / t0) : 0;
		if (!t1)	/* nothing new to scale to: keep base's counts */
			base = x->w[0];
		for (d = 0; d < x->depth; d++) {
			if (d)
				putc(';', out);
			sp_folded_put_name(out, sp_folded_name(f, x->names[d], NULL));
		}
		fprintf(out, " %" PRIu64 " %" PRIu64 "\n", base, x->w[1]);
		if (ferror(out))
			return -1;
	}
	return 0;
}
