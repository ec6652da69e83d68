// SPDX-License-Identifier: MIT
/*
 * Held records and span trees: the copies of records a span owns (pooled by
 * size), the trees of spans not emitted yet and the roots among them, and
 * their emission in pre-order once a root closes (docs/correlate.md: when
 * each record is emitted). Too many held records emit the oldest trees
 * early; end records wait until no older held record is left.
 */
#include <stdlib.h>
#include <string.h>

#include "correlateP.h"
#include "events.h"
#include "sp.h"

static size_t rec_bytes(const struct sp_record *r)
{
	size_t n = r->extra.len;
	unsigned int i;

	if (r->kind == SP_REC_EVENT) {
		n += r->event.raw.len;
		for (i = 0; i < r->event.nfields && i < SP_EVENT_MAX_FIELDS; i++)
			n += r->event.field[i].b.len;
	}
	return n;
}

static uint8_t *copy_bytes(struct sp_bytes *b, uint8_t *to)
{
	if (!b->len) {
		b->p = NULL;
		return to;
	}
	memcpy(to, b->p, b->len);
	b->p = to;
	return to + b->len;
}

struct hrec *sp_corr_hrec_new(struct sp_corr *c, const struct sp_record *r)
{
	size_t nb = rec_bytes(r);
	struct hrec *h;
	uint8_t *p;
	unsigned int i;

	if (!HREC_WHOLE(r->kind) && !nb) {
		if ((h = c->free_small))
			c->free_small = h->next;
		else
			h = sp_xmalloc(HREC_SMALL);
		h->big = 0;
		memcpy(&h->rec, r, SMALL_REC);
	} else if (!nb) {
		if ((h = c->free_full))
			c->free_full = h->next;
		else
			h = sp_xmalloc(HREC_FULL);
		h->big = 1;
		memcpy(&h->rec, r, sizeof(*r));
	} else {
		if (nb <= HREC_BYTES && (h = c->free_bytes)) {
			c->free_bytes = h->next;
		} else {
			h = sp_xmalloc(HREC_FULL + (nb <= HREC_BYTES ? HREC_BYTES : nb));
		}
		h->big = nb <= HREC_BYTES ? 3 : 2;
		memcpy(&h->rec, r, HREC_WHOLE(r->kind) ? sizeof(*r) : SMALL_REC);
		p = (uint8_t *)h + HREC_FULL;
		p = copy_bytes(&h->rec.extra, p);
		if (r->kind == SP_REC_EVENT) {
			p = copy_bytes(&h->rec.event.raw, p);
			for (i = 0; i < h->rec.event.nfields && i < SP_EVENT_MAX_FIELDS; i++)
				p = copy_bytes(&h->rec.event.field[i].b, p);
		}
	}
	h->next = NULL;
	return h;
}

void sp_corr_hrec_free(struct sp_corr *c, struct hrec *h)
{
	if (h->big == 0) {
		h->next = c->free_small;
		c->free_small = h;
	} else if (h->big == 1) {
		h->next = c->free_full;
		c->free_full = h;
	} else if (h->big == 3) {
		h->next = c->free_bytes;
		c->free_bytes = h;
	} else {
		free(h);
	}
}

void sp_corr_out(struct sp_corr *c, const struct sp_record *r)
{
	if (c->failed)
		return;
	if (c->emit(c->ctx, r))
		c->failed = 1;
}

/* A small hrec's record is copied out whole: consumers may copy a record. */
void sp_corr_out_held(struct sp_corr *c, struct hrec *h)
{
	if (h->big) {
		sp_corr_out(c, &h->rec);
		return;
	}
	memcpy(&c->scratch, &h->rec, SMALL_REC);
	sp_corr_out(c, &c->scratch);
}

void sp_corr_span_get(struct span *s)
{
	s->refs++;
}

void sp_corr_span_put(struct span *s)
{
	struct span *up;

	while (s && !--s->refs) {
		up = s->up;
		free(s);
		s = up;
	}
}

static void roots_insert(struct sp_corr *c, struct span *s)
{
	struct span *p = c->roots_tail;

	while (p && p->s.start > s->s.start)
		p = p->prev_root;
	s->prev_root = p;
	s->next_root = p ? p->next_root : c->roots;
	if (s->next_root)
		s->next_root->prev_root = s;
	else
		c->roots_tail = s;
	if (p)
		p->next_root = s;
	else
		c->roots = s;
	s->is_root = true;
}

static void roots_remove(struct sp_corr *c, struct span *s)
{
	if (s->prev_root)
		s->prev_root->next_root = s->next_root;
	else
		c->roots = s->next_root;
	if (s->next_root)
		s->next_root->prev_root = s->prev_root;
	else
		c->roots_tail = s->prev_root;
	s->prev_root = s->next_root = NULL;
	s->is_root = false;
}

/*
 * A new span; up (its parent, or fork span when fork) is taken as a counted
 * reference. It joins up's tree while up is not emitted, else it is a root.
 */
struct span *sp_corr_span_new(struct sp_corr *c, struct span *up, bool fork)
{
	struct span *s = sp_xcalloc(1, sizeof(*s));

	s->refs = 1;		/* the tree's (or the roots list's) */
	s->open = true;
	s->up = up;
	s->up_is_fork = fork;
	if (up)
		sp_corr_span_get(up);
	return s;
}

void sp_corr_span_link(struct sp_corr *c, struct span *s)
{
	struct span *up = s->up;

	if (up && !up->emitted) {
		if (up->last_child)
			up->last_child->next_sibling = s;
		else
			up->first_child = s;
		up->last_child = s;
		s->in_tree = true;
	} else {
		if (up && s->up_is_fork)
			s->s.fork_span = up->s.id;
		else if (up)
			s->s.parent = up->s.id;
		roots_insert(c, s);
	}
}

/* Emit a span record and its held records, then forget the records. */
static void emit_one(struct sp_corr *c, struct span *s)
{
	struct sp_record r = { .kind = SP_REC_SPAN };
	struct hrec *h, *next;

	s->s.id = ++c->next_id;
	if (s->up && s->up->emitted) {
		if (s->up_is_fork)
			s->s.fork_span = s->up->s.id;
		else
			s->s.parent = s->up->s.id;
	}
	if (s->open) {
		s->s.stop = 0;
		s->s.end = SP_END_OPEN;
		s->s.total_samples = s->s.samples + s->child_total;
	}
	if (s->incomplete && !s->gap)
		s->s.end = SP_END_INCOMPLETE;
	s->emitted = true;
	r.span = s->s;
	c->st.spans++;
	sp_corr_out(c, &r);
	for (h = s->held; h; h = next) {
		next = h->next;
		if (h->rec.kind == SP_REC_SAMPLE)
			h->rec.sample.span = s->s.id;
		else if (h->rec.kind == SP_REC_EVENT)
			h->rec.event.span = s->s.id;
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
	}
	c->held -= s->nheld;
	s->nheld = 0;
	s->held = s->held_tail = NULL;
}

static void work_push(struct sp_corr *c, size_t *n, struct span *s)
{
	if (*n == c->capwork)
		sp_grow(&c->work, &c->capwork, *n + 1, sizeof(*c->work));
	c->work[(*n)++] = s;
}

/*
 * Emit the tree under root (an emission root) in pre-order. Open children
 * are detached into roots of their own unless with_open (an early flush),
 * which emits them as they are.
 */
void sp_corr_emit_tree(struct sp_corr *c, struct span *root, bool with_open)
{
	struct span *s, *ch, *next, *rev;
	size_t n = 0;

	if (root->is_root)
		roots_remove(c, root);
	work_push(c, &n, root);
	while (n) {
		s = c->work[--n];
		emit_one(c, s);
		/* push children in reverse so the first is emitted first */
		rev = NULL;
		for (ch = s->first_child; ch; ch = next) {
			next = ch->next_sibling;
			ch->next_sibling = rev;
			rev = ch;
		}
		s->first_child = s->last_child = NULL;
		for (ch = rev; ch; ch = next) {
			next = ch->next_sibling;
			ch->next_sibling = NULL;
			ch->in_tree = false;
			if (ch->open && !with_open) {
				if (ch->up_is_fork)
					ch->s.fork_span = s->s.id;
				else
					ch->s.parent = s->s.id;
				roots_insert(c, ch);
			} else {
				work_push(c, &n, ch);
			}
		}
		sp_corr_span_put(s);	/* the tree's reference */
	}
	sp_corr_flush_deferred(c);
}

void sp_corr_hold(struct sp_corr *c, struct span *s, struct hrec *h, uint64_t rule)
{
	struct sp_record *r = &h->rec;

	if (r->kind == SP_REC_SAMPLE) {
		r->sample.rule = rule;
		if (r->sample.kind == SP_SAMPLE_OFFCPU)
			s->s.offcpu_ns += r->sample.weight;
		else
			s->s.samples += r->sample.weight ? r->sample.weight : 1;
		c->st.assigned[rule & 3]++;
	} else if (r->kind == SP_REC_EVENT) {
		r->event.rule = rule;
		s->s.events++;
		c->st.assigned[rule & 3]++;
	}
	if (s->gap && h->key > s->s.stop)
		s->s.stop = h->key;
	if (s->emitted) {	/* flushed early: the span's record is out already */
		if (r->kind == SP_REC_SAMPLE)
			r->sample.span = s->s.id;
		else if (r->kind == SP_REC_EVENT)
			r->event.span = s->s.id;
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
		return;
	}
	h->next = NULL;
	if (s->held_tail)
		s->held_tail->next = h;
	else
		s->held = h;
	s->held_tail = h;
	s->nheld++;
	c->held++;
}

/* Too much held: emit the oldest trees as they are (docs/correlate.md). */
void sp_corr_relieve(struct sp_corr *c)
{
	struct span *r;

	while (c->held > c->o.max_held / 4 * 3 && (r = c->roots)) {
		c->st.early_flush++;
		if (r->gap_of)
			sp_corr_close_gap(c, r->gap_of);
		else
			sp_corr_emit_tree(c, r, true);
	}
}

void sp_corr_defer(struct sp_corr *c, struct hrec *h)
{
	h->next = NULL;
	if (c->deferred_tail)
		c->deferred_tail->next = h;
	else
		c->deferred = h;
	c->deferred_tail = h;
	sp_corr_flush_deferred(c);
}

void sp_corr_flush_deferred(struct sp_corr *c)
{
	struct hrec *h;

	while ((h = c->deferred) && (!c->roots || h->key < c->roots->s.start || !c->held)) {
		c->deferred = h->next;
		if (!c->deferred)
			c->deferred_tail = NULL;
		sp_corr_out_held(c, h);
		sp_corr_hrec_free(c, h);
	}
}

