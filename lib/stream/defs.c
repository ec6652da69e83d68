// SPDX-License-Identifier: MIT
/* The definitions of a record stream, and interning by value (defs.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "defs.h"
#include "hashmap.h"
#include "json_out.h"
#include "schema.h"
#include "sp.h"

/*
 * Strings and build-ids are copied into an arena (arena.h): they never
 * move, so that the pointers sp_defs_str() and sp_defs_module() give out
 * stay valid for the life of the stream.
 */
#define BLOCK_SIZE (1u << 20)

struct str_ent {
	const char *p;		/* in a block */
	uint32_t len;
	uint8_t text;		/* sp_defs_str_text() + 1; 0 not known yet */
};

struct sym_range {
	uint32_t first;		/* index into syms */
	uint32_t n;
};

struct sp_defs {
	bool have_header;
	bool drop_symbols;	/* sp_defs_keep_symbols(false) */
	struct sp_header header;
	uint8_t *header_text;	/* the header's text fields, copied */
	uint64_t nspans;

	struct sp_arena strings;	/* strings and build-ids */
	struct str_ent *strs;	/* [0] unused: ids start at 1 */
	size_t nstrs, strs_cap;
	struct sp_idset str_index;
	bool str_indexed;

	/* One allocation per module, kept across streams and reused: a
	 * module's address (and its build-id's) never changes. */
	struct sp_module **mods;
	size_t nmods, mods_cap, mods_alloc;

	struct sp_frame *frames;
	size_t nframes, frames_cap;
	struct sp_idset frame_index;
	bool frame_indexed;

	struct sp_stack *stacks;
	uint32_t *stack_depth;	/* frames from the root, per stack id */
	size_t nstacks, stacks_cap, depth_cap;
	struct sp_idset stack_index;
	bool stack_indexed;
	unsigned int limits_hit;	/* SP_DEFS_LIMIT_*, until read */

	struct sp_symbol *syms;
	size_t nsyms, syms_cap;
	struct sym_range *sym_of;	/* per frame id */
	size_t sym_of_cap;
};

struct sp_defs *sp_defs_new(void)
{
	struct sp_defs *d = sp_xcalloc(1, sizeof(*d));

	d->strings.block_size = BLOCK_SIZE;
	sp_defs_reset(d);
	return d;
}

void sp_defs_reset(struct sp_defs *d)
{
	d->have_header = false;
	sp_arena_reset(&d->strings);
	d->limits_hit = 0;
	d->nstrs = d->nmods = d->nframes = d->nstacks = d->nsyms = d->nspans = 0;
	sp_idset_release(&d->str_index);
	sp_idset_release(&d->frame_index);
	sp_idset_release(&d->stack_index);
	d->str_indexed = d->frame_indexed = d->stack_indexed = false;
	if (d->sym_of)
		memset(d->sym_of, 0, d->sym_of_cap * sizeof(*d->sym_of));
}

struct sp_defs *sp_defs_take(struct sp_defs *d)
{
	struct sp_defs *old = sp_xmalloc(sizeof(*old));
	struct sp_record h = { .kind = SP_REC_HEADER };
	const char *why;

	*old = *d;
	memset(d, 0, sizeof(*d));
	d->strings.block_size = BLOCK_SIZE;
	d->drop_symbols = old->drop_symbols;
	sp_defs_reset(d);
	if (old->have_header) {
		h.header = old->header;
		sp_defs_add(d, &h, &why);
	}
	d->nspans = old->nspans;
	return old;
}

void sp_defs_free(struct sp_defs *d)
{
	size_t i;

	if (!d)
		return;
	sp_defs_reset(d);
	sp_arena_release(&d->strings);
	free(d->header_text);
	free(d->strs);
	for (i = 0; i < d->mods_alloc; i++)
		free(d->mods[i]);
	free(d->mods);
	free(d->frames);
	free(d->stacks);
	free(d->stack_depth);
	free(d->syms);
	free(d->sym_of);
	free(d);
}

/*
 * Equality of stored definitions, and the hashes of those that are not
 * bytes (a string's is sp_hash_bytes()), for sp_idset.
 */
struct str_key {
	const char *s;
	size_t len;
};

static bool str_eq(void *ctx, uint32_t id, const void *key)
{
	struct sp_defs *d = ctx;
	const struct str_key *k = key;

	return d->strs[id].len == k->len && !memcmp(d->strs[id].p, k->s, k->len);
}

static uint64_t frame_hash(const struct sp_frame *f)
{
	uint64_t h = sp_hash_mix(f->module, f->rel);

	h = sp_hash_mix(h, f->addr);
	h = sp_hash_mix(h, f->mode);
	h = sp_hash_mix(h, f->pid);
	return sp_hash_mix(h, f->flags);
}

static bool frame_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_frame *a = &((struct sp_defs *)ctx)->frames[id], *b = key;

	return a->module == b->module && a->rel == b->rel && a->addr == b->addr &&
	       a->mode == b->mode && a->pid == b->pid && a->flags == b->flags;
}

static uint64_t stack_hash(uint64_t parent, uint64_t frame)
{
	return sp_hash_mix(sp_hash_u64(parent), frame);
}

static bool stack_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_stack *a = &((struct sp_defs *)ctx)->stacks[id], *b = key;

	return a->parent == b->parent && a->frame == b->frame;
}

static void add_string(struct sp_defs *d, const uint8_t *p, uint32_t len)
{
	uint64_t id;

	if (d->nstrs == 0)
		d->nstrs = 1;	/* slot 0 is "no string" */
	sp_grow(&d->strs, &d->strs_cap, d->nstrs + 1, sizeof(*d->strs));
	id = d->nstrs++;
	d->strs[id].p = sp_arena_copy(&d->strings, p, len);
	d->strs[id].len = len;
	d->strs[id].text = 0;
	if (d->str_indexed)
		sp_idset_add(&d->str_index, sp_hash_bytes(d->strs[id].p, len), id);
}

static int check_ref(const struct sp_defs *d, uint8_t ref, uint64_t v)
{
	switch (ref) {
	case SP_REF_STRING:
		return v < (d->nstrs ? d->nstrs : 1) ? 0 : -1;
	case SP_REF_MODULE:
		return v <= d->nmods ? 0 : -1;
	case SP_REF_FRAME:
		return v <= d->nframes ? 0 : -1;
	case SP_REF_STACK:
		return v <= d->nstacks ? 0 : -1;
	default:
		return 0;
	}
}

int sp_defs_check(const struct sp_defs *d, const struct sp_record *rec, const char **why)
{
	static const char *const what[] = { "", "an undefined string", "an undefined module",
					    "an undefined frame", "an undefined stack" };
	const struct sp_schema *s;
	const struct sp_event_schema *es;
	unsigned int i;

	/* The commonest kinds without the walk over their schema (same checks, same order). */
	switch (rec->kind) {
	case SP_REC_STRING:
		return 0;
	case SP_REC_FRAME:
		if (check_ref(d, SP_REF_MODULE, rec->frame.module))
			return *why = what[SP_REF_MODULE], -1;
		return 0;
	case SP_REC_SYMBOL:
		if (check_ref(d, SP_REF_FRAME, rec->symbol.frame))
			return *why = what[SP_REF_FRAME], -1;
		if (check_ref(d, SP_REF_STRING, rec->symbol.func) ||
		    check_ref(d, SP_REF_STRING, rec->symbol.file))
			return *why = what[SP_REF_STRING], -1;
		if (!rec->symbol.frame)
			return *why = "frame 0", -1;
		return 0;
	default:
		break;
	}
	s = sp_schema(rec->kind);
	if (!s)
		return 0;
	for (i = 0; i < s->nfields; i++) {
		const struct sp_schema_field *f = &s->fields[i];

		if (f->ref && check_ref(d, f->ref, *sp_field_u64((void *)&rec->header, f))) {
			*why = what[f->ref];
			return -1;
		}
	}
	if (rec->kind == SP_REC_EVENT && (es = sp_event_schema(rec->event.kind))) {
		for (i = 0; i < rec->event.nfields && i < es->nfields; i++) {
			enum sp_ref ref = es->fields[i].type == SP_FT_STR ? SP_REF_STRING :
					  es->fields[i].type == SP_FT_STACK ? SP_REF_STACK :
					  SP_REF_NONE;

			if (ref && check_ref(d, ref, rec->event.field[i].u)) {
				*why = what[ref];
				return -1;
			}
		}
	}
	/* Frames and symbols need a definition that exists, not just any id. */
	if (rec->kind == SP_REC_STACK && !rec->stack.frame) {
		*why = "frame 0";
		return -1;
	}
	if (rec->kind == SP_REC_SYMBOL && !rec->symbol.frame) {
		*why = "frame 0";
		return -1;
	}
	return 0;
}

/* Keep the header with its text fields copied into one buffer of our own. */
static void copy_header(struct sp_defs *d, const struct sp_header *h)
{
	struct sp_bytes *t[] = { &d->header.event, &d->header.hostname, &d->header.kernel,
				 &d->header.machine, &d->header.command, &d->header.producer,
				 &d->header.features, &d->header.unavailable };
	size_t total = 0, i, off = 0;

	d->header = *h;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		total += t[i]->len + 1;
	free(d->header_text);
	d->header_text = sp_xmalloc(total);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (t[i]->len)
			memcpy(d->header_text + off, t[i]->p, t[i]->len);
		d->header_text[off + t[i]->len] = 0;
		t[i]->p = d->header_text + off;
		off += t[i]->len + 1;
	}
	d->have_header = true;
}

int sp_defs_add(struct sp_defs *d, const struct sp_record *rec, const char **why)
{
	static const char *bad_id = "an id out of order";

	if (rec->kind == SP_REC_HEADER) {
		sp_defs_reset(d);
		copy_header(d, &rec->header);
		return 0;
	}
	if (sp_defs_check(d, rec, why))
		return -1;
	switch (rec->kind) {
	case SP_REC_STRING:
		if (rec->string.id && rec->string.id != (d->nstrs ? d->nstrs : 1))
			return *why = bad_id, -1;
		add_string(d, rec->string.value.p, rec->string.value.len);
		break;
	case SP_REC_MODULE: {
		struct sp_module *m;

		if (rec->module.id && rec->module.id != d->nmods + 1)
			return *why = bad_id, -1;
		if (d->nmods + 1 >= d->mods_alloc) {
			sp_grow(&d->mods, &d->mods_cap, d->nmods + 2, sizeof(*d->mods));
			while (d->mods_alloc < d->nmods + 2)
				d->mods[d->mods_alloc++] = NULL;
		}
		d->nmods++;
		if (!d->mods[d->nmods])
			d->mods[d->nmods] = sp_xmalloc(sizeof(**d->mods));
		m = d->mods[d->nmods];
		*m = rec->module;
		m->id = d->nmods;
		/* Its bytes are the reader's until the next record: copied. */
		m->build_id.p = rec->module.build_id.len ?
				(const uint8_t *)sp_arena_copy(&d->strings, rec->module.build_id.p,
							     rec->module.build_id.len) : NULL;
		break;
	}
	case SP_REC_FRAME:
		if (rec->frame.id && rec->frame.id != d->nframes + 1)
			return *why = bad_id, -1;
		sp_grow(&d->frames, &d->frames_cap, d->nframes + 2, sizeof(*d->frames));
		d->nframes++;
		d->frames[d->nframes] = rec->frame;
		d->frames[d->nframes].id = d->nframes;
		if (d->frame_indexed)
			sp_idset_add(&d->frame_index, frame_hash(&rec->frame), d->nframes);
		break;
	case SP_REC_STACK:
		if (rec->stack.id && rec->stack.id != d->nstacks + 1)
			return *why = bad_id, -1;
		sp_grow(&d->stacks, &d->stacks_cap, d->nstacks + 2, sizeof(*d->stacks));
		sp_grow(&d->stack_depth, &d->depth_cap, d->nstacks + 2, sizeof(*d->stack_depth));
		d->nstacks++;
		d->stacks[d->nstacks] = rec->stack;
		d->stacks[d->nstacks].id = d->nstacks;
		/* The parent is defined (checked above), so its depth is known. */
		d->stack_depth[d->nstacks] = !rec->stack.parent ? 1 :
			d->stack_depth[rec->stack.parent] < UINT32_MAX ?
			d->stack_depth[rec->stack.parent] + 1 : UINT32_MAX;
		if (d->stack_depth[d->nstacks] == SP_MAX_STACK_DEPTH + 1)
			d->limits_hit |= SP_DEFS_LIMIT_STACK;
		if (d->stack_indexed)
			sp_idset_add(&d->stack_index,
				     stack_hash(rec->stack.parent, rec->stack.frame), d->nstacks);
		break;
	case SP_REC_SPAN:
		if (rec->span.id && rec->span.id != d->nspans + 1)
			return *why = bad_id, -1;
		d->nspans++;
		break;
	case SP_REC_SYMBOL: {
		struct sym_range *r;
		uint64_t f = rec->symbol.frame;

		if (d->drop_symbols)
			break;

		if (f >= d->sym_of_cap) {
			size_t old = d->sym_of_cap;

			sp_grow(&d->sym_of, &d->sym_of_cap, f + 1, sizeof(*d->sym_of));
			memset(d->sym_of + old, 0, (d->sym_of_cap - old) * sizeof(*d->sym_of));
		}
		r = &d->sym_of[f];
		/* A chain is consecutive records; a new index 0 replaces the chain. */
		if (rec->symbol.index == 0 || !r->n || r->first + r->n != d->nsyms) {
			r->first = d->nsyms;
			r->n = 0;
		}
		if (r->n == SP_MAX_INLINE_DEPTH) {
			/* The innermost levels stay, and the last one (the
			 * function the code belongs to): the ones between go. */
			d->syms[r->first + r->n - 1] = rec->symbol;
			d->limits_hit |= SP_DEFS_LIMIT_INLINE;
			break;
		}
		sp_grow(&d->syms, &d->syms_cap, d->nsyms + 1, sizeof(*d->syms));
		d->syms[d->nsyms++] = rec->symbol;
		r->n++;
		break;
	}
	default:
		break;
	}
	return 0;
}

void sp_defs_keep_symbols(struct sp_defs *d, bool keep)
{
	d->drop_symbols = !keep;
}

const struct sp_header *sp_defs_header(const struct sp_defs *d)
{
	return d->have_header ? &d->header : NULL;
}

const char *sp_defs_str(const struct sp_defs *d, uint64_t id, size_t *len)
{
	if (!id || id >= d->nstrs)
		return NULL;
	if (len)
		*len = d->strs[id].len;
	return d->strs[id].p;
}

const char *sp_defs_strz(const struct sp_defs *d, uint64_t id)
{
	const char *s = sp_defs_str(d, id, NULL);

	return s ? s : "";
}

const struct sp_module *sp_defs_module(const struct sp_defs *d, uint64_t id)
{
	return id && id <= d->nmods ? d->mods[id] : NULL;
}

const struct sp_frame *sp_defs_frame(const struct sp_defs *d, uint64_t id)
{
	return id && id <= d->nframes ? &d->frames[id] : NULL;
}

const struct sp_stack *sp_defs_stack(const struct sp_defs *d, uint64_t id)
{
	return id && id <= d->nstacks ? &d->stacks[id] : NULL;
}

const struct sp_symbol *sp_defs_symbols(const struct sp_defs *d, uint64_t frame, unsigned int *n)
{
	if (frame >= d->sym_of_cap || !d->sym_of[frame].n) {
		*n = 0;
		return NULL;
	}
	*n = d->sym_of[frame].n;
	return &d->syms[d->sym_of[frame].first];
}

uint64_t sp_defs_nstrings(const struct sp_defs *d)
{
	return d->nstrs ? d->nstrs - 1 : 0;
}

uint64_t sp_defs_nmodules(const struct sp_defs *d)
{
	return d->nmods;
}

uint64_t sp_defs_nframes(const struct sp_defs *d)
{
	return d->nframes;
}

uint64_t sp_defs_nstacks(const struct sp_defs *d)
{
	return d->nstacks;
}

uint64_t sp_defs_nspans(const struct sp_defs *d)
{
	return d->nspans;
}

uint64_t sp_defs_span_id(const struct sp_defs *d, const struct sp_span *s)
{
	return s->id ? s->id : d->nspans;
}

unsigned int sp_defs_stack_depth(const struct sp_defs *d, uint64_t stack)
{
	return stack && stack <= d->nstacks ? d->stack_depth[stack] : 0;
}

int sp_defs_stack_frames(const struct sp_defs *d, uint64_t stack, uint64_t *frames,
			 unsigned int max)
{
	uint32_t depth;
	unsigned int n;

	if (stack > d->nstacks)
		return -1;
	depth = sp_defs_stack_depth(d, stack);
	/* Parents always have smaller ids (defined first), so this ends;
	 * only the frames asked for are visited. */
	for (n = 0; stack && n < max; n++) {
		frames[n] = d->stacks[stack].frame;
		stack = d->stacks[stack].parent;
	}
	return depth > INT_MAX ? INT_MAX : (int)depth;
}

unsigned int sp_defs_limits_hit(struct sp_defs *d)
{
	unsigned int hit = d->limits_hit;

	d->limits_hit = 0;
	return hit;
}

uint64_t sp_defs_find_str(struct sp_defs *d, const char *s, size_t len)
{
	struct str_key k = { s, len };
	size_t i;

	if (!d->str_indexed) {
		d->str_indexed = true;
		for (i = 1; i < d->nstrs; i++)
			sp_idset_add(&d->str_index, sp_hash_bytes(d->strs[i].p, d->strs[i].len), i);
	}
	return sp_idset_find(&d->str_index, sp_hash_bytes(s, len), &k, str_eq, d);
}

enum sp_str_text sp_defs_str_text(struct sp_defs *d, uint64_t id)
{
	struct str_ent *e;
	const char *s;

	if (!id || id >= d->nstrs)
		return SP_STR_ID;
	e = &d->strs[id];
	if (!e->text) {
		/* Stable: a string defined later never comes first for its text. */
		s = e->p;
		if (!sp_utf8_valid(s, e->len) || sp_defs_find_str(d, s, e->len) != id)
			e->text = 1 + SP_STR_ID;
		else
			e->text = 1 + (sp_json_plain(s, e->len) ? SP_STR_PLAIN : SP_STR_TEXT);
	}
	return e->text - 1;
}

bool sp_defs_str_is_text(struct sp_defs *d, uint64_t id)
{
	return sp_defs_str_text(d, id) != SP_STR_ID;
}

uint64_t sp_defs_find_frame(struct sp_defs *d, const struct sp_frame *f)
{
	size_t i;

	if (!d->frame_indexed) {
		d->frame_indexed = true;
		for (i = 1; i <= d->nframes; i++)
			sp_idset_add(&d->frame_index, frame_hash(&d->frames[i]), i);
	}
	return sp_idset_find(&d->frame_index, frame_hash(f), f, frame_eq, d);
}

uint64_t sp_defs_find_stack(struct sp_defs *d, uint64_t parent, uint64_t frame)
{
	struct sp_stack key = { .parent = parent, .frame = frame };
	size_t i;

	if (!d->stack_indexed) {
		d->stack_indexed = true;
		for (i = 1; i <= d->nstacks; i++)
			sp_idset_add(&d->stack_index,
				     stack_hash(d->stacks[i].parent, d->stacks[i].frame), i);
	}
	return sp_idset_find(&d->stack_index, stack_hash(parent, frame), &key, stack_eq, d);
}

void sp_defs_retire_module(struct sp_defs *d, uint64_t module)
{
	/* Symbols are small next to the caches of the symbolizer, which frees
	 * its own; the definitions stay for the records still to come. */
	(void)d;
	(void)module;
}
