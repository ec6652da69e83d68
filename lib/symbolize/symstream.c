// SPDX-License-Identifier: MIT
/* symstream.c - a record stream rewritten with symbols after its frames. */
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "sp.h"
#include "stream/strmap.h"
#include "symstream.h"

/* A frame whose symbols may come later in the stream (kernel, JIT). */
struct pending {
	struct sp_frame f;
	uint64_t id, pid;
};

/*
 * Consecutive frame records are held back, up to BATCH of them, and looked
 * up in address order (random addresses one after the other miss the caches
 * in every table of the index); they are then written in their own order,
 * each followed by its symbols, as one at a time would write them.
 */
#define BATCH 16384
#define PREFETCH 16

struct batched {
	struct sp_frame f;
	uint32_t first, n;	/* levels in s->levels */
	unsigned int status;
	bool defer;
};

/* The sort key of a batched frame. */
struct order {
	uint64_t module, rel;
	uint64_t i;		/* index in the batch */
};

struct sp_symstream {
	struct sp_writer *w;
	struct sp_symbolizer *sym;
	bool force;
	struct sp_strmap map;
	struct sp_u64map str_ids;	/* symbolizer string pointer -> output string id */
	uint64_t str_gen;		/* sp_symbolizer_generation() str_ids is valid for */
	struct pending *pending;
	size_t npending, cappending;
	struct batched *batch;
	struct order *order, *order_tmp;
	size_t nbatch, capbatch, caporder, caporder_tmp;
	struct sp_sym_level *levels;
	size_t nlevels, caplevels;
	uint64_t *mods;			/* the batch's modules, for sp_symbolizer_prepare() */
	size_t capmods;
	bool passthrough;	/* the input is symbolized already */
};

/* The output id of a symbolizer string, interned once per string. */
static uint64_t str_id(struct sp_symstream *s, const char *p)
{
	uint64_t *v, id;

	if (!p)
		return 0;
	if (s->str_gen != sp_symbolizer_generation(s->sym)) {
		sp_u64map_release(&s->str_ids);
		s->str_gen = sp_symbolizer_generation(s->sym);
	}
	v = sp_u64map_get(&s->str_ids, (uintptr_t)p);
	if (v)
		return *v;
	id = sp_writer_strz(s->w, p);
	if (id)
		sp_u64map_put(&s->str_ids, (uintptr_t)p, id);
	return id;
}

static int put_levels(struct sp_symstream *s, uint64_t frame, unsigned int status, const struct sp_sym_level *level,
		      unsigned int n)
{
	struct sp_record rec = { .kind = SP_REC_SYMBOL };
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct sp_sym_level *l = &level[i];

		memset(&rec.symbol, 0, sizeof(rec.symbol));
		rec.symbol.frame = frame;
		rec.symbol.index = i;
		rec.symbol.func = str_id(s, l->func);
		rec.symbol.file = str_id(s, l->file);
		rec.symbol.line = l->line;
		rec.symbol.column = l->column;
		rec.symbol.offset = l->offset;
		rec.symbol.status = i == 0 ? status : 0;
		rec.symbol.flags = l->flags;
		if (sp_writer_put(s->w, &rec))
			return -1;
	}
	return 0;
}

static int put_symbols(struct sp_symstream *s, uint64_t frame, const struct sp_frame *f)
{
	const struct sp_sym_result *r = sp_symbolizer_frame(s->sym, f);

	return put_levels(s, frame, r->status, r->level, r->n);
}

/* Resolve the deferred frames of pid (all of them when all). */
static int flush_pending(struct sp_symstream *s, uint64_t pid, bool all)
{
	size_t i, j = 0;
	int err = 0;

	for (i = 0; i < s->npending; i++) {
		struct pending *p = &s->pending[i];

		if (all || p->pid == pid) {
			if (!err && put_symbols(s, p->id, &p->f))
				err = -1;
		} else {
			s->pending[j++] = *p;
		}
	}
	s->npending = j;
	return err;
}

static void defer_frame(struct sp_symstream *s, uint64_t id, const struct sp_frame *f)
{
	const struct sp_module *m = f->module ? sp_defs_module(sp_writer_defs(s->w), f->module) :
				    NULL;
	struct pending *p;

	sp_grow(&s->pending, &s->cappending, s->npending + 1, sizeof(*s->pending));
	p = &s->pending[s->npending++];
	p->f = *f;
	p->id = id;
	p->pid = m ? m->pid : f->pid;
	/* A JIT module may be retired before we resolve: go by pid. */
	if (f->mode != SP_FRAME_KERNEL && m && m->pid != 0) {
		p->f.module = 0;
		p->f.pid = p->pid;
		p->f.mode = SP_FRAME_JIT;
	}
}

/* One stable pass of a radix sort: by byte 'shift' of key (rel, else module). */
static void radix_pass(struct order *from, struct order *to, size_t n, bool by_module,
		       unsigned int shift)
{
	size_t count[256] = { 0 }, i, sum = 0, c;

	for (i = 0; i < n; i++)
		count[((by_module ? from[i].module : from[i].rel) >> shift) & 255]++;
	for (i = 0; i < 256; i++) {
		c = count[i];
		count[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++)
		to[count[((by_module ? from[i].module : from[i].rel) >> shift) & 255]++] = from[i];
}

/*
 * Sort s->order[0..n) by module, then rel, keeping the frames' order among
 * equals: LSD radix over the bytes in which the keys differ at all.
 */
static void sort_order(struct sp_symstream *s, size_t n)
{
	struct order *a = s->order, *b = s->order_tmp, *t;
	uint64_t rel_or = 0, rel_and = UINT64_MAX, mod_or = 0, mod_and = UINT64_MAX;
	unsigned int pass, shift;
	size_t i;

	for (i = 0; i < n; i++) {
		rel_or |= a[i].rel;
		rel_and &= a[i].rel;
		mod_or |= a[i].module;
		mod_and &= a[i].module;
	}
	for (pass = 0; pass < 16; pass++) {
		bool by_module = pass >= 8;
		uint64_t diff = by_module ? mod_or ^ mod_and : rel_or ^ rel_and;

		shift = (pass % 8) * 8;
		if (!((diff >> shift) & 255))
			continue;
		radix_pass(a, b, n, by_module, shift);
		t = a;
		a = b;
		b = t;
	}
	if (a != s->order)
		memcpy(s->order, a, n * sizeof(*a));
}

/* Load the files of the batch's modules (sorted: k frames) together, so
 * that the debug files they lack are fetched in parallel. */
static void prepare(struct sp_symstream *s, size_t k)
{
	size_t i, n = 0;

	sp_grow(&s->mods, &s->capmods, k, sizeof(*s->mods));
	for (i = 0; i < k; i++)
		if (!n || s->mods[n - 1] != s->order[i].module)
			s->mods[n++] = s->order[i].module;
	sp_symbolizer_prepare(s->sym, s->mods, n);
}

/* Resolve the held-back frames in address order, then write them in theirs. */
static int flush_batch(struct sp_symstream *s)
{
	struct sp_record rec = { .kind = SP_REC_FRAME };
	size_t i, n = s->nbatch, k = 0;
	uint64_t id;

	if (!n)
		return 0;
	s->nbatch = 0;
	s->nlevels = 0;
	sp_grow(&s->order, &s->caporder, n, sizeof(*s->order));
	sp_grow(&s->order_tmp, &s->caporder_tmp, n, sizeof(*s->order_tmp));
	for (i = 0; i < n; i++) {
		struct batched *b = &s->batch[i];

		/* No record comes between them: what defers one is the same for all. */
		b->defer = sp_symbolizer_should_defer(s->sym, &b->f);
		if (!b->defer) {
			s->order[k].module = b->f.module;
			s->order[k].rel = b->f.rel;
			s->order[k++].i = i;
		}
	}
	sort_order(s, k);
	prepare(s, k);
	for (i = 0; i < k; i++) {
		struct batched *b = &s->batch[s->order[i].i];
		const struct sp_sym_result *r;

		/* In address order the batch is read at random: fetch ahead. */
		if (i + PREFETCH < k)
			__builtin_prefetch(&s->batch[s->order[i + PREFETCH].i]);
		r = sp_symbolizer_frame(s->sym, &b->f);

		sp_grow(&s->levels, &s->caplevels, s->nlevels + r->n, sizeof(*s->levels));
		memcpy(s->levels + s->nlevels, r->level, r->n * sizeof(*r->level));
		b->first = (uint32_t)s->nlevels;
		b->n = r->n;
		b->status = r->status;
		s->nlevels += r->n;
	}
	for (i = 0; i < n; i++) {
		struct batched *b = &s->batch[i];

		/* The levels are in lookup order: fetch them ahead of their turn. */
		if (i + PREFETCH < n && !s->batch[i + PREFETCH].defer)
			__builtin_prefetch(s->levels + s->batch[i + PREFETCH].first);
		rec.frame = b->f;
		if (sp_writer_put(s->w, &rec))
			return -1;
		id = sp_defs_nframes(sp_writer_defs(s->w));
		if (b->defer)
			defer_frame(s, id, &b->f);
		else if (put_levels(s, id, b->status, s->levels + b->first, b->n))
			return -1;
	}
	return 0;
}

static const char *writer_str(struct sp_symstream *s, uint64_t id, size_t *len)
{
	return sp_defs_str(sp_writer_defs(s->w), id, len);
}

static bool interp_frame(struct sp_symstream *s, uint64_t id)
{
	const struct sp_frame *f = sp_defs_frame(sp_writer_defs(s->w), id);

	return f && f->mode == SP_FRAME_INTERP;
}

int sp_symstream_put(struct sp_symstream *s, struct sp_reader *in, struct sp_record *rec)
{
	const char *why = NULL, *name;
	size_t len = 0;
	uint64_t id;

	/* A frame without bytes of a newer writer waits in the batch; an
	 * interpreted one has nothing to look up: the recorder named it. */
	if (rec->kind == SP_REC_FRAME && !s->passthrough && !rec->extra.len &&
	    rec->frame.mode != SP_FRAME_INTERP) {
		if (sp_strmap_apply(&s->map, rec, &why) < 0) {
			sp_reader_skipped(in, rec, "a %s record refers to %s",
					  sp_rec_kind_name(rec->kind) ?: "unknown", why);
			return 0;
		}
		if (s->nbatch == BATCH && flush_batch(s))
			return -1;
		sp_grow(&s->batch, &s->capbatch, s->nbatch + 1, sizeof(*s->batch));
		s->batch[s->nbatch++].f = rec->frame;
		return 0;
	}
	if (flush_batch(s))
		return -1;
	switch (rec->kind) {
	case SP_REC_HEADER:
		if (flush_pending(s, 0, true))
			return -1;
		sp_strmap_reset(&s->map);
		sp_u64map_release(&s->str_ids);
		s->passthrough = (rec->header.flags & SP_HDR_SYMBOLIZED) && !s->force;
		{
			char rel[128];
			size_t n = rec->header.kernel.len < sizeof(rel) - 1 ?
				   rec->header.kernel.len : sizeof(rel) - 1;

			if (n)	/* kernel.p is NULL when the header has no release */
				memcpy(rel, rec->header.kernel.p, n);
			rel[n] = 0;
			sp_symbolizer_reset(s->sym, rel);
		}
		rec->header.flags |= SP_HDR_SYMBOLIZED;
		return sp_writer_put(s->w, rec);
	case SP_REC_STRING:
		return sp_strmap_put_string(&s->map, s->w, rec);
	default:
		break;
	}
	if (sp_strmap_apply(&s->map, rec, &why) < 0) {
		sp_reader_skipped(in, rec, "a %s record refers to %s",
				  sp_rec_kind_name(rec->kind) ?: "unknown", why);
		return 0;
	}
	switch (rec->kind) {
	case SP_REC_SYMBOL:
		/* With --force, the input's symbols give way to ours; but an
		 * interpreted frame's are the recorder's, which we cannot make */
		if (!s->passthrough && s->force && !interp_frame(s, rec->symbol.frame))
			return 0;
		break;
	case SP_REC_PROCESS_END:
		if (flush_pending(s, rec->process_end.pid, false))
			return -1;
		break;
	case SP_REC_END:
		if (flush_pending(s, 0, true))
			return -1;
		break;
	default:
		break;
	}
	if (sp_writer_put(s->w, rec))
		return -1;
	if (s->passthrough)
		return 0;
	switch (rec->kind) {
	case SP_REC_MODULE:
		rec->module.id = sp_defs_nmodules(sp_writer_defs(s->w));
		sp_symbolizer_module(s->sym, &rec->module, writer_str(s, rec->module.path, NULL));
		break;
	case SP_REC_MODULE_END:
		sp_symbolizer_module_end(s->sym, rec->module_end.module);
		break;
	case SP_REC_PROCESS_END:
		sp_symbolizer_process_end(s->sym, rec->process_end.pid, rec->process_end.time);
		break;
	case SP_REC_KSYM:
		name = writer_str(s, rec->ksym.name, &len);
		sp_symbolizer_ksym(s->sym, &rec->ksym, name, len);
		break;
	case SP_REC_JITSYM:
		name = writer_str(s, rec->jitsym.name, &len);
		sp_symbolizer_jitsym(s->sym, &rec->jitsym, name, len);
		break;
	case SP_REC_FRAME:
		if (rec->frame.mode == SP_FRAME_INTERP)
			return 0;	/* named by the recorder's own symbol record */
		id = sp_defs_nframes(sp_writer_defs(s->w));
		if (sp_symbolizer_should_defer(s->sym, &rec->frame)) {
			defer_frame(s, id, &rec->frame);
			return 0;
		}
		return put_symbols(s, id, &rec->frame);
	default:
		break;
	}
	return 0;
}

int sp_symstream_flush(struct sp_symstream *s)
{
	return flush_batch(s);
}

int sp_symstream_finish(struct sp_symstream *s)
{
	if (flush_batch(s) || flush_pending(s, 0, true))
		return -1;
	return 0;
}

struct sp_symstream *sp_symstream_new(struct sp_symbolizer *sym, struct sp_writer *w,
				      const struct sp_symstream_opts *opts)
{
	struct sp_symstream *s = sp_xcalloc(1, sizeof(*s));

	s->map = (struct sp_strmap)SP_STRMAP_INIT;
	s->sym = sym;
	s->w = w;
	s->force = opts && opts->force;
	return s;
}

void sp_symstream_free(struct sp_symstream *s)
{
	if (!s)
		return;
	sp_strmap_release(&s->map);
	sp_u64map_release(&s->str_ids);
	free(s->pending);
	free(s->batch);
	free(s->order);
	free(s->order_tmp);
	free(s->levels);
	free(s->mods);
	free(s);
}
