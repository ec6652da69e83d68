// SPDX-License-Identifier: MIT
/*
 * Events no span covers, attributed to their innermost interpreted frame
 * (docs/correlate.md): sp-record links a kernel event of a Python or Ruby
 * thread to the interpreted stack at that moment (the event's "stack"
 * field). The correlator keeps the names of the stream's interpreted
 * frames (frame records of mode interp and their symbols) and, for stacks
 * whose innermost frame is one, that frame; an event its gap rule would
 * give to the process's <no-span> gap span goes to a synthetic span of
 * that frame's function under it instead, one per thread, function and
 * file while the gap span is open. Spans, when there are any, still win.
 */
#include <stdlib.h>

#include "correlateP.h"
#include "events.h"
#include "sp.h"

#define IMAX		(1u << 20)	/* interpreted frames and stacks kept per stream */
#define SCAN_MAX	256		/* a gap span's children looked at for the frame's */

void sp_corr_interp_note(struct sp_corr *c, const struct sp_record *r)
{
	uint64_t *v;

	switch (r->kind) {
	case SP_REC_FRAME:	/* ids are implicit: the n-th frame, the n-th stack */
		c->nframes++;
		if (r->frame.mode == SP_FRAME_INTERP && c->iframes.n < IMAX)
			sp_u64map_put(&c->iframes, c->nframes, 0);
		break;
	case SP_REC_SYMBOL:
		v = r->symbol.index ? NULL : sp_u64map_get(&c->iframes, r->symbol.frame);
		if (!v || *v || !r->symbol.func)
			break;
		sp_grow(&c->isyms, &c->capisyms, c->nisyms + 1, sizeof(*c->isyms));
		c->isyms[c->nisyms].func = r->symbol.func;
		c->isyms[c->nisyms].file = r->symbol.file;
		c->isyms[c->nisyms].line = r->symbol.line;
		*v = ++c->nisyms;
		break;
	case SP_REC_STACK:
		c->nstacks++;
		if (c->istacks.n < IMAX && sp_u64map_get(&c->iframes, r->stack.frame)) {
			sp_u64map_put(&c->istacks, c->nstacks, r->stack.frame);
			if (r->stack.parent)
				sp_u64map_put(&c->istack_up, c->nstacks, r->stack.parent);
		}
		break;
	default:
		break;
	}
}

void sp_corr_interp_reset(struct sp_corr *c)
{
	sp_u64map_release(&c->iframes);
	sp_u64map_release(&c->istacks);
	sp_u64map_release(&c->istack_up);
	free(c->isyms);
	c->isyms = NULL;
	c->nisyms = c->capisyms = 0;
	c->nframes = c->nstacks = 0;
}

/* The name of the innermost interpreted frame of an event's stack that
 * has a source file: a Ruby C method the code called (IO.read,
 * TCPSocket#initialize) is a frame of its own, without a file, and the
 * event belongs to the method that called it (Store#load_config), as it
 * does in Python, whose C functions have no frame. At most CFUNC_UP such
 * frames are passed; an event with only those goes to the innermost. */
#define CFUNC_UP	4

static const struct corr_isym *event_frame(const struct sp_corr *c, const struct sp_event *e)
{
	const struct sp_event_schema *es = sp_event_schema(e->kind);
	const struct corr_isym *first = NULL, *sym;
	const uint64_t *fr, *v;
	uint64_t stack;
	unsigned int n, up;

	if (!es || !es->nfields || es->fields[es->nfields - 1].type != SP_FT_STACK)
		return NULL;
	n = es->nfields - 1;
	if (n >= e->nfields || n >= SP_EVENT_MAX_FIELDS || !e->field[n].u)
		return NULL;
	for (stack = e->field[n].u, up = 0; stack && up <= CFUNC_UP; up++) {
		fr = sp_u64map_get(&c->istacks, stack);
		v = fr ? sp_u64map_get(&c->iframes, *fr) : NULL;
		if (!v || !*v || *v > c->nisyms)
			break;
		sym = &c->isyms[*v - 1];
		if (sym->file)
			return sym;
		if (!first)
			first = sym;
		v = sp_u64map_get(&c->istack_up, stack);
		stack = v ? *v : 0;
	}
	return first;
}

bool sp_corr_interp_framed(const struct sp_corr *c, const struct sp_event *e)
{
	return event_frame(c, e) != NULL;
}

struct span *sp_corr_interp_owner(struct sp_corr *c, struct span *gap, const struct sp_event *e)
{
	const struct corr_isym *f = event_frame(c, e);
	struct span *s;
	unsigned int n = 0;

	if (!f || !gap->gap || gap->emitted)
		return gap;
	for (s = gap->first_child; s && n < SCAN_MAX; s = s->next_sibling, n++)
		if (s->gap && s->open && s->s.tid == e->tid && s->s.method == f->func &&
		    s->s.file == f->file)
			break;
	if (!s || n == SCAN_MAX) {
		s = sp_corr_span_new(c, gap, false);
		s->gap = true;
		s->s.pid = e->pid;
		s->s.tid = e->tid;
		s->s.method = f->func;
		s->s.file = f->file;
		s->s.line = f->line;
		s->s.start = s->s.stop = e->time;
		s->s.end = SP_END_SYNTHETIC;
		sp_corr_span_link(c, s);
		c->st.gap_spans++;
	}
	gap->sub_held++;
	return s;
}

void sp_corr_interp_close(struct span *gap)
{
	struct span *s;

	for (s = gap->first_child; s; s = s->next_sibling)
		if (s->gap && s->open) {
			s->open = false;
			s->s.total_samples = s->s.samples;
		}
}
