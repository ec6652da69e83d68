// SPDX-License-Identifier: MIT
/*
 * The symbolizer's statistics (symbolize_priv.h): frames looked up, named
 * and given a file:line, and why the others were not, per file (kept
 * after a file is retired), for the kernel, JIT code and frames without a
 * module, and the debug files asked of debuginfod; sp-symbolize prints
 * them (per file with --stats).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "sp.h"
#include "symbolize_priv.h"

static const char *const status_text[NSTATUS] = {
	[SP_SYM_OK] = "resolved",
	[SP_SYM_NO_SYMBOLS] = "no symbols",
	[SP_SYM_STRIPPED] = "stripped (.dynsym only)",
	[SP_SYM_BUILD_ID_MISMATCH] = "build-id mismatch",
	[SP_SYM_FILE_MISSING] = "file missing",
	[SP_SYM_JIT_NO_MAP] = "JIT without map",
	[SP_SYM_NO_MODULE] = "no module",
	[SP_SYM_BAD_FILE] = "bad file",
};

const char *sp_sym_status_text(unsigned int status)
{
	return status < NSTATUS ? status_text[status] : "unknown";
}

void sp_sym_stats_add(struct file_stats *to, const struct file_stats *from)
{
	unsigned int i;

	to->frames += from->frames;
	to->named += from->named;
	to->with_line += from->with_line;
	for (i = 0; i < NSTATUS; i++)
		to->by_status[i] += from->by_status[i];
}

struct retired *sp_sym_retired_of(const struct sp_symbolizer *s, const char *path)
{
	const uint64_t *v;
	struct retired *r;

	if (!path)
		return NULL;
	v = sp_u64map_get(&s->retired_by_path, sp_hash_bytes(path, strlen(path)));
	r = v ? (struct retired *)(uintptr_t)*v : NULL;
	return r && r->path && !strcmp(r->path, path) ? r : NULL;
}

static void print_one(FILE *out, const char *what, const struct file_stats *st)
{
	unsigned int i;
	bool first = true;

	/* what: a path from the spool, so another's string (docs/escaping.md) */
	fprintf(out, "%s: ", sp_progname);
	sp_esc_text_put(out, what, strlen(what), 0);
	fprintf(out, "%s%" PRIu64 " frames, %" PRIu64 " named, %" PRIu64 " with file:line",
		what[0] ? ": " : "", st->frames, st->named, st->with_line);
	for (i = 0; i < NSTATUS; i++) {
		if (!st->by_status[i] || i == SP_SYM_OK)
			continue;
		fprintf(out, "%s%" PRIu64 " %s", first ? "; unresolved or partial: " : ", ",
			st->by_status[i], status_text[i]);
		first = false;
	}
	fputc('\n', out);
}

/* Every frame looked up: the kernel's, JIT code's, without a module, every file's. */
static void all_stats(const struct sp_symbolizer *s, struct file_stats *all)
{
	const struct image *img;
	const struct retired *r;

	sp_sym_stats_add(all, &s->kernel_st);
	sp_sym_stats_add(all, &s->jit_st);
	sp_sym_stats_add(all, &s->none_st);
	for (img = s->images; img; img = img->next)
		sp_sym_stats_add(all, &img->st);
	for (r = s->retired; r; r = r->next)
		sp_sym_stats_add(all, &r->st);
}

void sp_symbolizer_counts(const struct sp_symbolizer *s, uint64_t *resolved, uint64_t *total)
{
	struct file_stats all = { 0 };

	all_stats(s, &all);
	*resolved = all.named;
	*total = all.frames;
}

void sp_symbolizer_files(const struct sp_symbolizer *s, uint64_t *loaded, uint64_t *live)
{
	*loaded = s->files_loaded;
	*live = s->files_live;
}

void sp_symbolizer_print_stats(struct sp_symbolizer *s, FILE *out, bool per_module)
{
	struct file_stats all = { 0 };
	struct sp_u64map merged = SP_U64MAP_INIT;
	const struct image *img;
	const struct retired *r;

	all_stats(s, &all);
	fflush(stdout);
	print_one(out, "", &all);
	sp_dbgd_print_stats(s->dbgd, out);
	if (!per_module)
		return;
	if (s->kernel_st.frames)
		print_one(out, "  [kernel]", &s->kernel_st);
	if (s->jit_st.frames)
		print_one(out, "  [jit]", &s->jit_st);
	if (s->none_st.frames)
		print_one(out, "  [no module]", &s->none_st);
	/* a file still mapped and also retired earlier (another process's)
	 * is one line: the retired entry is added in and then skipped */
	for (img = s->images; img; img = img->next)
		if (img->st.frames) {
			struct file_stats st = img->st;
			char what[4200];

			r = img->from_archive ? NULL : sp_sym_retired_of(s, img->path);
			if (r) {
				sp_sym_stats_add(&st, &r->st);
				sp_u64map_put(&merged, (uint64_t)(uintptr_t)r, 1);
			}
			snprintf(what, sizeof(what), "  %s%s", img->path,
				 img->from_archive ? " (archive)" : "");
			print_one(out, what, &st);
		}
	for (r = s->retired; r; r = r->next) {
		char what[4200];

		if (sp_u64map_get(&merged, (uint64_t)(uintptr_t)r))
			continue;
		snprintf(what, sizeof(what), "  %s", r->path ? r->path : "?");
		print_one(out, what, &r->st);
	}
	sp_u64map_release(&merged);
}
