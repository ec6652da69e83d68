// SPDX-License-Identifier: MIT
/*
 * Spans across the segments of one recording (correlateP.h). A rotated
 * recording, or a flight dump's window, is several streams whose ids start
 * again at each header (a header with a segment number); a span that
 * started in one and stops in a later one must still come out whole.
 *
 * Where a segment ends, the spans still open on each thread's running
 * fiber are emitted as they are (end "open": what the segment saw of them,
 * so that its samples and events keep their span) and noted by pid, tid,
 * start and depth: span marks carry those, not ids. At the next segment's
 * header they are opened again on their threads, unnamed (their names are
 * string ids of the stream that ended; the runtime and line, numbers, are
 * kept), so that the new segment's samples
 * and events go to them. A stop mark that matches no named span then names
 * and closes the innermost one opened again (of its depth, when the runtime
 * gives depths): that span record has its real start and stop. A span open
 * over several segments is carried on each time. Parked fibers' spans are
 * not carried (they end open with their segment).
 */
#include <stdlib.h>

#include "correlateP.h"
#include "sp.h"

void sp_corr_carry_out(struct sp_corr *c)
{
	size_t it, i;
	uint64_t v;

	c->ncarry = 0;
	for (it = 0; sp_u64map_next(&c->threads, &it, NULL, &v);) {
		const struct thr *t = (const struct thr *)(uintptr_t)v;

		for (i = 0; i < t->depth; i++) {
			const struct span *s = t->stack[i];

			sp_grow(&c->carry, &c->capcarry, c->ncarry + 1, sizeof(*c->carry));
			c->carry[c->ncarry++] = (struct carry){ s->s.pid, s->s.tid, s->s.start,
								 s->depth, s->s.runtime, s->s.line };
		}
	}
}

void sp_corr_carry_in(struct sp_corr *c)
{
	size_t i;

	for (i = 0; i < c->ncarry; i++) {
		const struct carry *k = &c->carry[i];
		struct proc *p = sp_corr_proc_find(c, k->pid);
		struct thr *t = sp_corr_thr_find(c, k->tid);
		struct span *up, *s;
		bool fork = false;

		/* Not defined yet: its process record comes again with the
		 * segment's definitions, and then defines it. */
		if (!p)
			p = sp_corr_proc_new(c, k->pid);
		if (!t || t->pid != k->pid)
			t = sp_corr_thr_new(c, p, k->tid, p->origin);
		up = t->depth ? t->stack[t->depth - 1] : t->base;
		if (!up) {
			up = sp_corr_fork_owner(t);
			fork = up != NULL;
		}
		s = sp_corr_span_new(c, up, fork);
		s->s.pid = k->pid;
		s->s.tid = k->tid;
		s->s.start = k->start;
		s->s.end = SP_END_STOPPED;
		s->depth = k->depth;
		s->s.runtime = k->runtime;
		s->s.line = k->line;	/* its start's (a stop's may differ) */
		s->carried = true;
		sp_corr_span_link(c, s);
		if (t->depth == t->cap)
			sp_grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack));
		t->stack[t->depth++] = s;
		sp_corr_span_get(s);	/* the stack's; unnamed: not in c->open */
		c->st.carried++;
	}
	c->ncarry = 0;
}

int sp_corr_carry_match(struct sp_corr *c, struct thr *t, const struct sp_span_mark *m)
{
	int k;

	for (k = (int)t->depth - 1; k >= 0; k--) {
		struct span *s = t->stack[k];

		if (!s->carried || (m->depth && s->depth && s->depth != m->depth))
			continue;
		s->carried = false;
		if (!s->s.runtime)
			s->s.runtime = m->runtime;
		s->s.klass = m->klass;
		s->s.method = m->method;
		s->s.file = m->file;

		sp_corr_count_open(c, t, s, true);	/* close_top counts it out */
		return k;
	}
	return -1;
}
