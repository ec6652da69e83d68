// SPDX-License-Identifier: MIT
/*
 * The tree's text form: each node's line behind the drawing of the levels
 * above it ("├─ ", "│  "), children below -d counted on one line, so are
 * those under --min-share, and levels beyond INDENT_LEVELS drawn as
 * "… +N ".
 */
#include <stdlib.h>
#include <string.h>

#include "sp.h"
#include "treeP.h"

/* Levels of a line's prefix drawn in full; a deeper line starts with
 * "… +N " for the N levels above those. */
#define INDENT_LEVELS 100
static void prefix_push(struct prefix *pf, bool last)
{
	const char *seg = last ? "   " : "│  ";
	size_t at;

	if (pf->len + 2 > pf->cap) {
		pf->cap = pf->cap ? 2 * pf->cap : 64;
		pf->off = sp_xrealloc(pf->off, pf->cap * sizeof(*pf->off));
		pf->txt = sp_xrealloc(pf->txt, pf->cap * 5);	/* 5: the bytes of "│  " */
		if (!pf->len)
			pf->off[0] = 0;
	}
	at = pf->off[pf->len];
	memcpy(pf->txt + at, seg, strlen(seg));
	pf->off[++pf->len] = at + strlen(seg);
}

void sp_tree_prefix_release(struct prefix *pf)
{
	free(pf->txt);
	free(pf->off);
}

static void put_prefix(struct sp_tree *t, const struct prefix *pf)
{
	size_t from = 0;

	if (!pf->len)
		return;
	if (pf->len > INDENT_LEVELS) {
		from = pf->len - INDENT_LEVELS;
		fprintf(t->out, "… +%zu ", from);
	}
	fwrite(pf->txt + pf->off[from], 1, pf->off[pf->len] - pf->off[from], t->out);
}

/*
 * Sort n's children and say whether they are printed, at depth: below
 * -d, the kept ones are counted on one line instead.
 */
static bool children_text(struct sp_tree *t, struct tnode *n, struct prefix *pf,
			  unsigned int depth)
{
	struct tnode *c;
	size_t hidden = 0;

	sp_tree_sort_children(t, n);
	if (t->o.max_depth && depth > t->o.max_depth) {
		for (c = n->first; c; c = c->next)
			hidden += c->keep;
		if (hidden) {
			put_prefix(t, pf);
			fprintf(t->out, "└─ … %zu more\n", hidden);
		}
		return false;
	}
	return true;
}

/* The line after the children of n that counts those --min-share hid. */
static void elided_line(struct sp_tree *t, const struct tnode *n, struct prefix *pf)
{
	uint64_t ns, telling, count = sp_tree_elided(t, n, &ns, &telling);
	char d[32];

	if (!count)
		return;
	sp_tree_fmt_dur(d, sizeof(d), ns);
	put_prefix(t, pf);
	fprintf(t->out, "└─ … %llu more, each under %g%% of the %s time",
		(unsigned long long)count, t->share * 100,
		n->type == N_SPAN ? "top-level span's" : "recording's");
	if (!t->stable)
		fprintf(t->out, " (%s in all)", d);
	/* what they did is what a reader looks for: say it is there */
	if (telling)
		fprintf(t->out, "; %llu of them with events or a raise (--min-share=0 shows them)",
			(unsigned long long)telling);
	fputc('\n', t->out);
}

/* A run of siblings being printed: the next kept one and where to stop. */
struct tframe {
	struct tnode *parent;	/* whose children they are */
	struct tnode *next, *stop;
	uint64_t base;		/* offsets of events count from it */
	size_t plen;		/* levels of the prefix of its lines */
	unsigned int depth;
	bool final;		/* the run ends with the parent's last child */
};

/*
 * Print the sorted children of a node from c up to stop (NULL: all) at
 * depth, each with what is under it, depth first. final: the run printed
 * last is the node's last child (└─); else more follow (streaming).
 */
void sp_tree_print_range_text(struct sp_tree *t, struct tnode *parent, struct tnode *c,
			      struct tnode *stop, bool final, struct prefix *pf, unsigned int depth,
			      uint64_t base)
{
	struct tframe *st = sp_xmalloc(16 * sizeof(*st)), *f;
	size_t n = 1, cap = 16, plen = pf->len;
	struct tnode *d;
	struct agg ag;
	struct sp_buf b = SP_BUF_INIT;
	uint64_t ns;
	bool last;

	st[0] = (struct tframe){ parent, sp_tree_next_kept(c), stop, base, pf->len, depth, final };
	while (n) {
		f = &st[n - 1];
		pf->len = f->plen;
		if (!f->next || f->next == f->stop) {
			if (f->final)
				elided_line(t, f->parent, pf);
			n--;
			continue;
		}
		c = f->next;
		if (sp_tree_audit_run(t, c, &d, &b, f->base, t->stable, t->color)) {
			f->next = d;
			last = f->final && d == NULL && !sp_tree_elided(t, f->parent, &ns, NULL);
			put_prefix(t, pf);
			fprintf(t->out, "%s%s\n", last ? "└─ " : "├─ ", sp_buf_str(&b));
			continue;
		}
		d = sp_tree_next_kept(sp_tree_group_end(t, c, &ag));
		if (ag.count > 1)
			sp_tree_fold_run(t, c, d);
		f->next = d;
		last = f->final && d == NULL && !sp_tree_elided(t, f->parent, &ns, NULL);
		sp_tree_render_line(t, &b, c, f->base, &ag, t->stable, t->color);
		put_prefix(t, pf);
		fprintf(t->out, "%s%s\n", last ? "└─ " : "├─ ", sp_buf_str(&b));
		prefix_push(pf, last);
		if (c->type == N_SPAN)
			base = ((const struct tspan *)c)->start;
		else
			base = f->base;
		depth = sp_tree_depth_below(c, f->depth);
		if (!children_text(t, c, pf, depth))
			continue;
		sp_grow(&st, &cap, n + 1, sizeof(*st));
		st[n++] = (struct tframe){ c, sp_tree_next_kept(c->first), NULL, base, pf->len, depth,
					   true };
	}
	pf->len = plen;
	free(st);
	sp_buf_release(&b);
}

/* A top-level node and everything under it. */
void sp_tree_print_text(struct sp_tree *t, struct tnode *n, struct prefix *pf, uint64_t base)
{
	struct sp_buf b = SP_BUF_INIT;

	sp_tree_render_line(t, &b, n, base, NULL, t->stable, t->color);
	fprintf(t->out, "%s\n", sp_buf_str(&b));
	sp_buf_release(&b);
	pf->len = 0;
	if (n->type == N_SPAN)
		base = ((const struct tspan *)n)->start;
	if (children_text(t, n, pf, sp_tree_top_depth(t)))
		sp_tree_print_range_text(t, n, n->first, NULL, true, pf, sp_tree_top_depth(t),
					 base);
}
