// SPDX-License-Identifier: MIT
/*
 * Naming the frames of a stack for the flame graph: a frame's names (its
 * function and the functions inlined into it, or its module and offset
 * when no symbol names it), cached by frame id, and a stack id's trie node,
 * resolved once from its parent's, so the cost is the stack ids of the
 * stream and not the depth of every stack.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "foldedP.h"
#include "sp.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

static uint32_t name_with_suffix(struct sp_folded *f, const char *s, unsigned int kind,
				 const char *file)
{
	static const char *const suffix[SP_FN_KIND_MAX] = {
		[SP_FN_KERNEL] = "_[k]", [SP_FN_INLINE] = "_[i]", [SP_FN_JIT] = "_[j]",
	};
	char buf[1024];

	if (!f->o.annotate || !suffix[kind])
		return sp_folded_intern_src(f, s, kind, file);
	snprintf(buf, sizeof(buf), "%s%s", s, suffix[kind]);
	return sp_folded_intern_src(f, buf, kind, file);
}

static const struct fcache *frame_names(struct sp_folded *f, const struct sp_defs *d,
					uint64_t fid)
{
	const struct sp_frame *fr = sp_defs_frame(d, fid);
	const struct sp_symbol *sym;
	const struct sp_module *m;
	unsigned int nsym = 0, kind, i;
	struct fcache *c;
	char buf[1024];
	uint32_t name;

	if (fid < f->fc_cap && (f->fc[fid].flags & FC_VALID))
		return &f->fc[fid];
	if (fid >= f->fc_cap) {
		size_t old = f->fc_cap;

		sp_grow(&f->fc, &f->fc_cap, fid + 1, sizeof(*f->fc));
		memset(f->fc + old, 0, (f->fc_cap - old) * sizeof(*f->fc));
	}
	c = &f->fc[fid];
	c->off = f->fpool_len;
	c->n = 0;
	c->flags = FC_VALID;
	c->glue = 0;
	if (!fr) {
		c->flags |= FC_NOMAP;
		name = sp_folded_internz(f, "[unknown]", SP_FN_UNKNOWN);
		goto one;
	}
	switch (fr->mode) {
	case SP_FRAME_KERNEL:
		kind = SP_FN_KERNEL;
		break;
	case SP_FRAME_INTERP:
		kind = SP_FN_INTERP;
		c->flags |= FC_USER;	/* the program's own: a stack of them is not broken */
		break;
	case SP_FRAME_JIT:
		kind = SP_FN_JIT;
		break;
	default:
		kind = SP_FN_USER;
		c->flags |= FC_USER;
		break;
	}
	m = fr->module ? sp_defs_module(d, fr->module) : NULL;
	if (f->o.fold_runtime && m && sp_folded_is_hook_module(sp_defs_strz(d, m->path))) {
		/* the hook and what it calls: one frame, "[_stackpulse_hook]" */
		const char *base = base_name(sp_defs_strz(d, m->path));

		snprintf(buf, sizeof(buf), "[%.*s]", (int)strcspn(base, "."), base);
		name = sp_folded_internz(f, buf, SP_FN_UNKNOWN);
		c->flags |= FC_HOOK;
		goto one;
	}
	sym = sp_defs_symbols(d, fid, &nsym);
	if (sym && nsym && sym[0].func) {
		sp_grow(&f->fpool, &f->fpool_cap, f->fpool_len + nsym, sizeof(*f->fpool));
		for (i = nsym; i-- > 0;) {
			const char *fn = sp_defs_strz(d, sym[i].func);

			if (!*fn || (f->o.no_inline && i != nsym - 1))
				continue;
			name = name_with_suffix(f, fn, i != nsym - 1 ? SP_FN_INLINE : kind,
						sp_defs_strz(d, sym[i].file));
			if (f->o.keep_source)
				sp_folded_note_line(f, name, sym[i].line, sym[i].column);
			if (f->o.fold_runtime && sp_folded_is_glue(fn)) {
				c->glue = name;
				continue;
			}
			f->fpool[f->fpool_len++] = name;
			c->n++;
		}
		return c;
	}
	if (!m)
		c->flags |= FC_NOMAP;
	f->st.unresolved_frames++;
	if (m && f->o.no_addresses)
		snprintf(buf, sizeof(buf), "[%s]", base_name(sp_defs_strz(d, m->path)));
	else if (m)
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(sp_defs_strz(d, m->path)),
			 fr->rel);
	else if (f->o.no_addresses || f->o.unknown_unnamed)
		snprintf(buf, sizeof(buf), "[unknown]");
	else
		snprintf(buf, sizeof(buf), "0x%" PRIx64, fr->addr);
	if (f->o.annotate && kind == SP_FN_KERNEL)
		strncat(buf, "_[k]", sizeof(buf) - strlen(buf) - 1);
	name = sp_folded_internz(f, buf, SP_FN_UNKNOWN);
	if (f->o.fold_runtime && m && sp_folded_is_runtime_module(sp_defs_strz(d, m->path))) {
		c->glue = name;	/* an unnamed frame of the interpreter */
		return c;
	}
one:
	sp_grow(&f->fpool, &f->fpool_cap, f->fpool_len + 1, sizeof(*f->fpool));
	f->fpool[f->fpool_len++] = name;
	c->n = 1;
	return c;
}

uint32_t sp_folded_leaf_node(struct sp_folded *f, const struct sp_defs *d, uint64_t sid,
			     uint32_t node)
{
	const struct sp_stack *st;
	const struct fcache *fc;

	if (!f->o.fold_runtime || !(st = sp_defs_stack(d, sid)) ||
	    (sid < f->sc_cap && (f->sc[sid].flags & SC_HOOK)))
		return node;
	fc = frame_names(f, d, st->frame);
	return fc->n || !fc->glue ? node : sp_folded_child(f, node, fc->glue);
}

static struct scache *scache_slot(struct sp_folded *f, uint64_t sid)
{
	if (sid >= f->sc_cap) {
		size_t old = f->sc_cap;

		sp_grow(&f->sc, &f->sc_cap, sid + 1, sizeof(*f->sc));
		memset(f->sc + old, 0, (f->sc_cap - old) * sizeof(*f->sc));
	}
	return &f->sc[sid];
}

/* The trie node of a frame's names under node; counts user frames. */
static uint32_t frame_under(struct sp_folded *f, const struct sp_defs *d, uint32_t node,
			    uint64_t fid, uint8_t *nuser, bool outermost, uint8_t *flags)
{
	const struct fcache *fc = frame_names(f, d, fid);
	unsigned int j;

	if ((fc->flags & FC_USER) && *nuser < 2)
		(*nuser)++;
	if (*flags & SC_HOOK)
		return node;	/* called by a span hook: its cost, under its name */
	if (fc->flags & FC_HOOK)
		*flags |= SC_HOOK;
	for (j = 0; j < fc->n; j++)
		node = sp_folded_child(f, node, f->fpool[fc->off + j]);
	if (outermost && (fc->flags & FC_NOMAP))
		*flags |= SC_NOMAP;
	return node;
}

/*
 * Resolve a stack id to a trie node (the root when no frame has a name);
 * -1 if undefined. A stack is its parent's node plus its own frame, so
 * each stack id is resolved once, from its nearest resolved ancestor: the
 * cost is the stack ids of the stream, not the depth of every stack. A
 * stack deeper than SP_MAX_STACK_DEPTH keeps its innermost frames
 * (defs.h), resolved on their own.
 */
int sp_folded_resolve_stack(struct sp_folded *f, const struct sp_defs *d, uint64_t sid,
			 const struct scache **out)
{
	const struct sp_stack *st;
	uint8_t flags = 0, nuser = 0;
	uint32_t node = 0;
	unsigned int depth, k = 0, i;
	struct scache *c;
	uint64_t x;

	if (sid < f->sc_cap && f->sc[sid].node1) {
		*out = &f->sc[sid];
		return 0;
	}
	if (!sp_defs_stack(d, sid))
		return -1;
	if (!f->fbuf_cap)
		sp_grow(&f->fbuf, &f->fbuf_cap, SP_MAX_STACK_DEPTH, sizeof(*f->fbuf));
	depth = sp_defs_stack_depth(d, sid);
	if (depth > SP_MAX_STACK_DEPTH) {
		sp_defs_stack_frames(d, sid, f->fbuf, SP_MAX_STACK_DEPTH);
		flags = SC_CUT;
		for (i = SP_MAX_STACK_DEPTH; i-- > 0;)
			node = frame_under(f, d, node, f->fbuf[i], &nuser,
					   i == SP_MAX_STACK_DEPTH - 1, &flags);
	} else {
		/* the stack ids not resolved yet, leaf first, into fbuf */
		for (x = sid; x && !(x < f->sc_cap && f->sc[x].node1); x = st->parent) {
			st = sp_defs_stack(d, x);
			f->fbuf[k++] = x;
		}
		if (x) {
			node = f->sc[x].node1 - 1;
			flags = f->sc[x].flags & (SC_NOMAP | SC_HOOK);
			nuser = f->sc[x].nuser;
		}
		while (k-- > 0) {
			st = sp_defs_stack(d, f->fbuf[k]);
			node = frame_under(f, d, node, st->frame, &nuser, !st->parent, &flags);
			c = scache_slot(f, f->fbuf[k]);
			c->node1 = node + 1;
			c->flags = flags;
			c->nuser = nuser;
		}
		*out = &f->sc[sid];
		return 0;
	}
	c = scache_slot(f, sid);
	c->node1 = node + 1;
	c->flags = flags;
	c->nuser = nuser;
	*out = c;
	return 0;
}
