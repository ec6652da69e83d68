// SPDX-License-Identifier: MIT
/*
 * The streaming correlator (correlate.h): method spans per thread from span
 * marks, fork descendants, and the owner of every event and sample
 * (docs/correlate.md). This file takes the records in: definitions go out
 * at once, timed records through the reorder window to the rules, a header
 * ends one stream and begins the next, and a stream correlated already
 * passes through. correlateP.h says which file does the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "correlateP.h"
#include "sp.h"

const char *sp_rule_name(uint64_t rule)
{
	static const char *const names[] = { "none", "thread", "fork", "gap" };

	return rule < 4 ? names[rule] : "?";
}

const char *sp_span_end_name(uint64_t end)
{
	static const char *const names[] = { "stopped", "raised", "open", "incomplete",
					     "synthetic" };

	return end < 5 ? names[end] : "?";
}

struct sp_corr *sp_corr_new(const struct sp_corr_opts *opts, sp_corr_emit_fn emit, void *ctx)
{
	struct sp_corr *c = sp_xcalloc(1, sizeof(*c));

	if (opts)
		c->o = *opts;
	else
		c->o.window_ns = SP_CORR_WINDOW_NS;
	if (!c->o.max_window)
		c->o.max_window = SP_CORR_MAX_WINDOW;
	if (!c->o.max_held)
		c->o.max_held = SP_CORR_MAX_HELD;
	if (!c->o.gap_max)
		c->o.gap_max = SP_CORR_GAP_MAX;
	c->emit = emit;
	c->ctx = ctx;
	return c;
}

/* Close everything, emit everything held: the end of a stream (carry: of
 * a segment, whose open spans go on in the next, correlate_carry.c). */
static void end_stream(struct sp_corr *c, bool carry)
{
	size_t it;
	uint64_t v;

	sp_corr_drain(c, true);
	if (carry)
		sp_corr_carry_out(c);
	/* in the tables' order (hashmap.h): it decides which tree comes first */
	for (it = 0; sp_u64map_next(&c->threads, &it, NULL, &v);)
		sp_corr_close_all(c, (struct thr *)(uintptr_t)v, c->max_time);
	for (it = 0; sp_u64map_next(&c->procs, &it, NULL, &v);)
		sp_corr_close_gap(c, (struct proc *)(uintptr_t)v);
	while (c->roots)
		sp_corr_emit_tree(c, c->roots, true);
	sp_corr_flush_deferred(c);
}

/* Forget the stream: a new header starts new ids and new processes. */
static void reset_stream(struct sp_corr *c)
{
	size_t it = 0;
	uint64_t v;

	/* the table changes under us at each: rescan */
	while (sp_u64map_next(&c->procs, &it, NULL, &v)) {
		sp_corr_proc_end(c, (struct proc *)(uintptr_t)v, c->max_time);
		it = 0;
	}
	/* threads of processes never seen are in no process list: none exist,
	 * every thread belongs to a struct proc. */
	c->nexited = 0;
	sp_u64map_release(&c->ended);
	c->next_id = 0;
	c->nlost = 0;
	sp_corr_interp_reset(c);
	c->any_released = false;
	c->released = 0;
}

/*
 * A record of a stream correlated already, as it is, but for references to
 * spans not defined before it (a damaged or forged input): a span's parent
 * or fork span becomes none, a sample or event without a valid span is
 * dropped and counted, so that the output keeps the stream's rules.
 */
static void pass_through(struct sp_corr *c, const struct sp_record *rec)
{
	struct sp_record r;

	switch (rec->kind) {
	case SP_REC_SPAN:
		r = *rec;
		r.span.id = ++c->pass_spans;	/* ids are implicit: the n-th span */
		if (r.span.parent >= c->pass_spans || r.span.fork_span >= c->pass_spans) {
			if (r.span.parent >= c->pass_spans)
				r.span.parent = 0;
			if (r.span.fork_span >= c->pass_spans)
				r.span.fork_span = 0;
			c->st.bad_refs++;
		}
		sp_corr_out(c, &r);
		return;
	case SP_REC_SAMPLE:
		if (!rec->sample.span || rec->sample.span > c->pass_spans) {
			c->st.bad_refs++;
			return;
		}
		break;
	case SP_REC_EVENT:
		if (!rec->event.span || rec->event.span > c->pass_spans) {
			c->st.bad_refs++;
			return;
		}
		break;
	default:
		break;
	}
	sp_corr_out(c, rec);
}

int sp_corr_add(struct sp_corr *c, const struct sp_record *rec)
{
	struct sp_record hdr;
	bool goes_on;

	if (c->failed)
		return -1;
	c->st.records++;
	if (c->passthrough && rec->kind != SP_REC_HEADER) {
		pass_through(c, rec);
		return c->failed ? -1 : 0;
	}
	switch (rec->kind) {
	case SP_REC_HEADER:
		/* the next segment of the same recording: its spans go on */
		goes_on = c->streams++ && rec->header.segment && !c->passthrough &&
			  !(rec->header.flags & SP_HDR_CORRELATED);
		end_stream(c, goes_on);
		reset_stream(c);
		/* correlated already: its spans stand, its order is theirs */
		c->passthrough = rec->header.flags & SP_HDR_CORRELATED;
		c->pass_spans = 0;
		hdr = *rec;
		hdr.header.flags |= SP_HDR_CORRELATED;
		sp_corr_out(c, &hdr);
		if (goes_on)
			sp_corr_carry_in(c);
		return c->failed ? -1 : 0;
	case SP_REC_END:
		/* a segment's end is transport (segments joined in one file): the
		 * next header says a segment starts, and its spans go on */
		if (rec->end.reason == SP_ENDR_ROTATED)
			return 0;
		if (rec->end.time > c->max_time)
			c->max_time = rec->end.time;
		end_stream(c, false);
		sp_corr_out(c, rec);
		return c->failed ? -1 : 0;
	case SP_REC_SPAN:
		c->st.old_spans++;
		return 0;
	case SP_REC_FRAME:
	case SP_REC_SYMBOL:
	case SP_REC_STACK:
		sp_corr_interp_note(c, rec);
		break;
	default:
		break;
	}
	if (!sp_corr_window_add(c, rec))
		sp_corr_out(c, rec);
	return c->failed ? -1 : 0;
}

int sp_corr_finish(struct sp_corr *c)
{
	if (c->failed)
		return -1;
	end_stream(c, false);
	return c->failed ? -1 : 0;
}

const struct sp_corr_stats *sp_corr_stats(const struct sp_corr *c)
{
	return &c->st;
}

void sp_corr_free(struct sp_corr *c)
{
	struct hrec *h;
	size_t it;
	uint64_t v;

	if (!c)
		return;
	/* Whatever is left (after a failed emit) is dropped without output. */
	c->failed = 1;
	while (c->heap.n || c->rlen)
		sp_corr_hrec_free(c, sp_corr_window_pop(c));
	end_stream(c, false);
	reset_stream(c);
	while ((h = c->deferred)) {
		c->deferred = h->next;
		sp_corr_hrec_free(c, h);
	}
	while ((h = c->free_small)) {
		c->free_small = h->next;
		free(h);
	}
	while ((h = c->free_full)) {
		c->free_full = h->next;
		free(h);
	}
	while ((h = c->free_bytes)) {
		c->free_bytes = h->next;
		free(h);
	}
	for (it = 0; sp_u64map_next(&c->procs, &it, NULL, &v);)
		free((struct proc *)(uintptr_t)v);
	sp_u64map_release(&c->procs);
	sp_u64map_release(&c->ended);
	sp_u64map_release(&c->threads);
	free(c->open.v);
	sp_idset_release(&c->open.idx);
	sp_heap_release(&c->heap);
	free(c->ring);
	free(c->exited);
	free(c->work);
	free(c->carry);
	free(c->lost);
	free(c);
}

