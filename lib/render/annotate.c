// SPDX-License-Identifier: MIT
/*
 * One function's cost by source line (annotate.h): samples whose leaf
 * frame's symbols name the function are counted by (file, line) of the
 * function's own level of the inline chain; the table is printed per file,
 * with the source text read from the file (bounded, through safefile.h)
 * when it can be read. Every other leaf function is counted too, to name
 * the hottest ones when the function was never at a leaf.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "annotate.h"
#include "buf.h"
#include "escape.h"
#include "hashmap.h"
#include "safefile.h"
#include "sp.h"

/* A wider range of lines is shown as the lines with samples only. */
#define SPAN_MAX		400
#define SOURCE_MAX_SIZE		(64ull << 20)
#define SOURCE_MAX_LINE		4096
#define SUGGEST			5

/* A name, interned: a file or a leaf function, with its samples. */
struct aname {
	char *s;
	uint64_t n;
};

struct aline {
	uint32_t file;		/* index in files */
	uint64_t line;		/* 0: none known */
	uint64_t n;
};

struct sp_annotate {
	char *func;
	uint64_t total, matched;
	struct aname *files, *leaves;
	size_t nfiles, files_cap, nleaves, leaves_cap;
	struct sp_idset file_idx, leaf_idx;
	struct aline *lines;
	size_t nlines, lines_cap;
	struct sp_idset line_idx;
};

struct sp_annotate *sp_annotate_new(const char *func)
{
	struct sp_annotate *a = sp_xcalloc(1, sizeof(*a));

	a->func = sp_xstrdup(func);
	return a;
}

static void free_names(struct aname *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].s);
	free(v);
}

void sp_annotate_free(struct sp_annotate *a)
{
	if (!a)
		return;
	free(a->func);
	free_names(a->files, a->nfiles);
	free_names(a->leaves, a->nleaves);
	sp_idset_release(&a->file_idx);
	sp_idset_release(&a->leaf_idx);
	sp_idset_release(&a->line_idx);
	free(a->lines);
	free(a);
}

static bool name_eq(void *ctx, uint32_t id, const void *key)
{
	return !strcmp(((const struct aname *)ctx)[id - 1].s, key);
}

/* The index of s in v, added with no samples if new. */
static size_t intern(struct aname **v, size_t *n, size_t *cap, struct sp_idset *idx,
		     const char *s)
{
	uint64_t h = sp_hash_bytes(s, strlen(s));
	uint32_t id = sp_idset_find(idx, h, s, name_eq, *v);

	if (id)
		return id - 1;
	sp_grow(v, cap, *n + 1, sizeof(**v));
	(*v)[*n].s = sp_xstrdup(s);
	(*v)[*n].n = 0;
	sp_idset_add(idx, h, *n + 1);
	return (*n)++;
}

static bool line_eq(void *ctx, uint32_t id, const void *key)
{
	const struct aline *a = &((const struct aline *)ctx)[id - 1], *b = key;

	return a->file == b->file && a->line == b->line;
}

static void count_line(struct sp_annotate *a, const char *file, uint64_t line)
{
	struct aline k = { 0, line, 0 };
	uint64_t h;
	uint32_t id;

	k.file = intern(&a->files, &a->nfiles, &a->files_cap, &a->file_idx, file);
	h = sp_hash_mix(k.file, line);
	id = sp_idset_find(&a->line_idx, h, &k, line_eq, a->lines);
	if (!id) {
		sp_grow(&a->lines, &a->lines_cap, a->nlines + 1, sizeof(*a->lines));
		a->lines[a->nlines] = k;
		id = ++a->nlines;
		sp_idset_add(&a->line_idx, h, id);
	}
	a->lines[id - 1].n++;
	a->files[k.file].n++;
}

void sp_annotate_add(struct sp_annotate *a, const struct sp_defs *d, const struct sp_sample *s)
{
	const struct sp_stack *st = s->stack ? sp_defs_stack(d, s->stack) : NULL;
	const struct sp_symbol *sym;
	unsigned int nsym = 0, i;
	size_t leaf;

	a->total++;
	if (!st)
		return;
	sym = sp_defs_symbols(d, st->frame, &nsym);
	if (!sym || !nsym || !sym[0].func)
		return;
	/* innermost first: the function's own level gives its line */
	for (i = 0; i < nsym; i++)
		if (!strcmp(sp_defs_strz(d, sym[i].func), a->func))
			break;
	if (i < nsym) {
		a->matched++;
		count_line(a, sp_defs_strz(d, sym[i].file), sym[i].line);
		return;
	}
	leaf = intern(&a->leaves, &a->nleaves, &a->leaves_cap, &a->leaf_idx,
		      sp_defs_strz(d, sym[nsym - 1].func));
	a->leaves[leaf].n++;
}

uint64_t sp_annotate_matched(const struct sp_annotate *a, uint64_t *total)
{
	if (total)
		*total = a->total;
	return a->matched;
}

/* ---- printing ---- */

/*
 * The text of a source file's lines: every line lo..hi when that range is
 * short (SPAN_MAX), else only the lines with samples.
 */
struct source {
	uint64_t lo, hi, at;
	bool every;
	const struct aline *lines;	/* sorted by line, all known */
	size_t n, next;
	char **text;		/* every: text[line - lo]; else text[i] of lines[i] */
};

static int keep_line(void *ctx, char *line, size_t len)
{
	struct source *src = ctx;

	(void)len;
	if (++src->at > src->hi)
		return 1;	/* the rest is not needed */
	if (src->every) {
		if (src->at >= src->lo)
			src->text[src->at - src->lo] = sp_xstrdup(line);
		return 0;
	}
	while (src->next < src->n && src->lines[src->next].line < src->at)
		src->next++;
	if (src->next < src->n && src->lines[src->next].line == src->at)
		src->text[src->next] = sp_xstrdup(line);
	return 0;
}

/* Read what src wants of path; false (with why) when it cannot be read. */
static bool read_source(const char *path, struct source *src, const char **why)
{
	struct sp_safe_want w = { .max_size = SOURCE_MAX_SIZE };
	struct sp_safe_lines l = { .max_bytes = SOURCE_MAX_SIZE, .max_line = SOURCE_MAX_LINE };
	int fd;

	if (!*path) {
		*why = "no file name";
		return false;
	}
	*why = NULL;
	fd = sp_safe_open(AT_FDCWD, path, &w, NULL, why);
	if (fd < 0) {
		if (!*why)
			*why = strerror(errno);
		return false;
	}
	if (sp_safe_read_lines(fd, &l, keep_line, src) < 0) {
		*why = strerror(errno);
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* Source text: tabs to spaces (8 columns), then its text form. */
static void put_text(FILE *out, const char *s)
{
	struct sp_buf b = SP_BUF_INIT;
	size_t col = 0;

	for (; *s; s++) {
		if (*s == '\t') {
			do
				sp_buf_addch(&b, ' ');
			while (++col % 8);
			continue;
		}
		sp_buf_addch(&b, *s);
		col++;
	}
	if (b.len)
		sp_esc_text_put(out, b.p, b.len, 0);
	sp_buf_release(&b);
}

static int cmp_line(const void *x, const void *y)
{
	const struct aline *a = x, *b = y;

	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static void put_row(FILE *out, const struct sp_annotate *a, uint64_t n, uint64_t line,
		    const char *text)
{
	if (n)
		fprintf(out, "%7.2f%% %8" PRIu64, 100.0 * n / a->matched, n);
	else
		fprintf(out, "%8s %8s", "", "");
	if (line)
		fprintf(out, " %6" PRIu64, line);
	else
		fprintf(out, " %6s", "?");
	if (text && *text) {
		fputs("  ", out);
		put_text(out, text);
	}
	putc('\n', out);
}

/*
 * The rows of one file (lines[0 .. n), sorted by line): samples without a
 * line first, then every line from the first to the last with samples
 * when that is short and the source readable, else the lines with samples.
 */
static void print_file(FILE *out, const struct sp_annotate *a, const char *path,
		       const struct aline *lines, size_t n)
{
	const char *name = *path ? path :
			   "(no file: the binary has no line table; install its debug symbols)";
	const char *why = "no line numbers";
	struct source src = { 0 };
	bool have = false;
	size_t i, j, known, ntext;
	uint64_t l;

	for (known = 0; known < n && !lines[known].line; known++)
		;
	src.lines = lines + known;
	src.n = n - known;
	if (src.n) {
		src.lo = src.lines[0].line;
		src.hi = src.lines[src.n - 1].line;
		src.every = src.hi - src.lo < SPAN_MAX;
	}
	ntext = src.every ? src.hi - src.lo + 1 : src.n;
	src.text = sp_xcalloc(ntext + 1, sizeof(*src.text));
	fputs("\n## ", out);
	sp_esc_text_put(out, name, strlen(name), 0);
	if (src.n)
		have = read_source(path, &src, &why);
	if (!have && *path) {
		fputs(" (source not shown: ", out);
		sp_esc_text_put(out, why, strlen(why), 0);
		fputs(")", out);
	}
	fprintf(out, "\n%8s %8s %6s%s\n", "share", "samples", "line", have ? "  source" : "");
	for (i = 0; i < known; i++)
		put_row(out, a, lines[i].n, 0, NULL);
	if (have && src.every) {
		for (l = src.lo, j = 0; l <= src.hi; l++) {
			uint64_t c = j < src.n && src.lines[j].line == l ? src.lines[j++].n : 0;

			put_row(out, a, c, l, src.text[l - src.lo]);
		}
	} else {
		for (j = 0; j < src.n; j++)
			put_row(out, a, src.lines[j].n, src.lines[j].line,
				src.every ? src.text[src.lines[j].line - src.lo] : src.text[j]);
	}
	for (i = 0; i < ntext; i++)
		free(src.text[i]);
	free(src.text);
}

static int cmp_leaf(const void *x, const void *y)
{
	const struct aname *a = x, *b = y;

	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return strcmp(a->s, b->s);
}

/* The text form of s (escape.h) added to b: names reach no terminal raw. */
static void add_text(struct sp_buf *b, const char *s)
{
	size_t len = strlen(s), n = sp_esc_text(NULL, 0, s, len, 0);

	sp_buf_reserve(b, n + 1);
	sp_esc_text(b->p + b->len, n + 1, s, len, 0);
	sp_buf_setlen(b, b->len + n);
}

static void suggest(struct sp_annotate *a)
{
	struct sp_buf b = SP_BUF_INIT, f = SP_BUF_INIT;
	size_t i;

	if (a->nleaves)
		qsort(a->leaves, a->nleaves, sizeof(*a->leaves), cmp_leaf);
	sp_idset_release(&a->leaf_idx);	/* the order moved */
	for (i = 0; i < a->nleaves && i < SUGGEST; i++) {
		sp_buf_puts(&b, i ? ", '" : "'");
		add_text(&b, a->leaves[i].s);
		sp_buf_printf(&b, "' (%" PRIu64 ")", a->leaves[i].n);
	}
	add_text(&f, a->func);
	sp_warn("no sample has '%s' at its leaf%s%s", sp_buf_str(&f),
		b.len ? "; the hottest leaves: " :
		" (no sample has a named leaf: run sp-symbolize first)", b.len ? sp_buf_str(&b) : "");
	sp_buf_release(&b);
	sp_buf_release(&f);
}

int sp_annotate_print(struct sp_annotate *a, FILE *out)
{
	size_t i, first;

	if (!a->matched) {
		suggest(a);
		return ferror(out) ? -1 : 0;
	}
	fputs("# ", out);
	sp_esc_text_put(out, a->func, strlen(a->func), 0);
	fprintf(out, ": %" PRIu64 " of %" PRIu64 " samples (%.2f%%) at the leaf, by source line"
		" (share of the function's)\n", a->matched, a->total,
		100.0 * a->matched / a->total);
	qsort(a->lines, a->nlines, sizeof(*a->lines), cmp_line);
	sp_idset_release(&a->line_idx);	/* the order moved */
	for (first = 0, i = 1; i <= a->nlines; i++) {
		if (i < a->nlines && a->lines[i].file == a->lines[first].file)
			continue;
		print_file(out, a, a->files[a->lines[first].file].s, a->lines + first, i - first);
		first = i;
	}
	return ferror(out) ? -1 : 0;
}
