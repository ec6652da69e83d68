// SPDX-License-Identifier: MIT
/* sp-symbolize - add function names, source files and lines to recorded frames. */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader.h"
#include "sp.h"
#include "strmap.h"
#include "symbolize.h"
#include "writer.h"

enum {
	OPT_FORMAT = 0x1000,
	OPT_DEBUG_DIR,
	OPT_SYSROOT,
	OPT_IMAGE_DIR,
	OPT_ARCHIVE,
	OPT_NO_DEMANGLE,
	OPT_NO_INLINE,
	OPT_NO_SYSTEM_DEBUG,
	OPT_INDEX_ALL,
	OPT_CACHE_DIR,
	OPT_NO_CACHE,
	OPT_STATS,
	OPT_FORCE,
	OPT_FOLLOW,
	OPT_QUIET,
};

static struct env {
	struct sp_common_opts common;
	struct sp_symbolize_opts sym;
	unsigned int ndebug, nimage;
	enum sp_format format;
	bool stats, force, follow, quiet;
} env;

static const char doc[] = "Add function names, source files and lines to recorded frames.\v"
	"Reads spool or JSON lines from each FILE, or stdin if none or '-', and writes the "
	"stream back (in the input's format unless --format says otherwise) with a symbol "
	"record after each frame: one per level of its inline chain, innermost first. "
	"A frame that cannot be resolved gets a symbol record saying why (file missing, "
	"build-id mismatch, stripped, ...); a summary goes to stderr at the end.\n\n"
	"Example: sp-record -o run.sp -- ./server && sp-symbolize run.sp | sp-decode\n"
	"Example: sp-symbolize --archive arch --sysroot /srv/img run.sp -o run-sym.sp\n\n"
	SP_EXIT_STATUS_DOC;

static const struct argp_option options[] = {
	{ "format", OPT_FORMAT, "FMT", 0, "Output 'spool' or 'json' (default: as the input)", 0 },
	{ "archive", OPT_ARCHIVE, "DIR", 0,
	  "Look for binaries in DIR first (made by sp-record --archive DIR)", 0 },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", 0,
	  "Look for separate debug files in DIR (.build-id/xx/... and debuglink; repeatable)", 0 },
	{ "sysroot", OPT_SYSROOT, "DIR", 0,
	  "Find recorded paths under DIR (a recording from another machine or container)", 0 },
	{ "image-dir", OPT_IMAGE_DIR, "DIR", 0,
	  "Look for binaries by base name in DIR, build-id checked (repeatable)", 0 },
	{ "no-demangle", OPT_NO_DEMANGLE, NULL, 0, "Keep C++ and Rust names mangled", 0 },
	{ "no-inline", OPT_NO_INLINE, NULL, 0, "Only the physical function of each frame", 0 },
	{ "no-system-debug", OPT_NO_SYSTEM_DEBUG, NULL, 0,
	  "Do not look in /usr/lib/debug (only --debug-dir)", 0 },
	{ "index-all", OPT_INDEX_ALL, NULL, 0,
	  "Index each file's whole DWARF when the file is loaded, not a unit at a time", 0 },
	{ "cache-dir", OPT_CACHE_DIR, "DIR", 0,
	  "Keep DWARF indexes in DIR (default $SP_CACHE_DIR/symbols, else "
	  "~/.cache/stackpulse/symbols)", 0 },
	{ "no-cache", OPT_NO_CACHE, NULL, 0, "Neither read nor write the DWARF index cache", 0 },
	{ "force", OPT_FORCE, NULL, 0,
	  "Symbolize an already symbolized stream again (its symbol records are dropped)", 0 },
	{ "follow", OPT_FOLLOW, NULL, 0,
	  "Follow a growing spool FILE until the recording ends (or SIGINT)", 0 },
	{ "stats", OPT_STATS, NULL, 0, "Print the summary per file too", 0 },
	{ "quiet", OPT_QUIET, NULL, 0, "No summary and no progress on stderr", 0 },
	{ 0 }
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.common;
		break;
	case OPT_FORMAT:
		if (sp_parse_format(arg, &env.format))
			argp_error(state, "invalid format '%s': use spool or json", arg);
		break;
	case OPT_DEBUG_DIR:
		if (env.ndebug >= SP_SYMBOLIZE_MAX_DIRS - 1)
			argp_error(state, "at most %d --debug-dir", SP_SYMBOLIZE_MAX_DIRS - 1);
		env.sym.debug_dirs[env.ndebug++] = arg;
		break;
	case OPT_IMAGE_DIR:
		if (env.nimage >= SP_SYMBOLIZE_MAX_DIRS - 1)
			argp_error(state, "at most %d --image-dir", SP_SYMBOLIZE_MAX_DIRS - 1);
		env.sym.image_dirs[env.nimage++] = arg;
		break;
	case OPT_SYSROOT:
		env.sym.sysroot = arg;
		break;
	case OPT_ARCHIVE:
		env.sym.archive = arg;
		break;
	case OPT_NO_DEMANGLE:
		env.sym.no_demangle = true;
		break;
	case OPT_NO_INLINE:
		env.sym.no_inline = true;
		break;
	case OPT_NO_SYSTEM_DEBUG:
		env.sym.no_system_debug = true;
		break;
	case OPT_INDEX_ALL:
		env.sym.index_all = true;
		break;
	case OPT_CACHE_DIR:
		if (!*arg)
			argp_error(state, "empty cache directory");
		env.sym.cache_dir = arg;
		break;
	case OPT_NO_CACHE:
		env.sym.no_cache = true;
		break;
	case OPT_FORCE:
		env.force = true;
		break;
	case OPT_FOLLOW:
		env.follow = true;
		break;
	case OPT_STATS:
		env.stats = true;
		break;
	case OPT_QUIET:
		env.quiet = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

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
	uint32_t first, n;	/* levels in g.levels */
	unsigned int status;
	bool defer;
};

/* The sort key of a batched frame. */
struct order {
	uint64_t module, rel;
	uint64_t i;		/* index in the batch */
};

/* One slot of str_id()'s table: pointer and id side by side, one cache line a probe. */
struct str_slot {
	const char *p;		/* NULL: empty */
	uint64_t id;
};

static struct {
	struct sp_reader *in;
	struct sp_writer *w;
	struct sp_symbolizer *sym;
	struct sp_strmap map;
	struct str_slot *str_ids;	/* symbolizer string pointer -> output string id */
	size_t str_cap, str_n;		/* str_cap a power of 2 (or 0), at most half used */
	uint64_t str_gen;		/* sp_symbolizer_generation() str_ids is valid for */
	struct pending *pending;
	size_t npending, cappending;
	struct batched *batch;
	struct order *order, *order_tmp;
	size_t nbatch, capbatch, caporder, caporder_tmp;
	struct sp_sym_level *levels;
	size_t nlevels, caplevels;
	bool passthrough;	/* the input is symbolized already */
	uint64_t t0, last_progress, records;
	bool progress_shown;
} g = { .map = SP_STRMAP_INIT };

static void on_signal(int sig)
{
	(void)sig;
	sp_reader_stop(g.in);
}

static void str_ids_release(void)
{
	free(g.str_ids);
	g.str_ids = NULL;
	g.str_cap = g.str_n = 0;
}

static struct str_slot *str_slot(const char *p)
{
	size_t mask = g.str_cap - 1;
	size_t i = (size_t)(((uintptr_t)p * 0x9e3779b97f4a7c15ull) >> 32) & mask;

	while (g.str_ids[i].p && g.str_ids[i].p != p)
		i = (i + 1) & mask;
	return &g.str_ids[i];
}

/* The output id of a symbolizer string, interned once per string. */
static uint64_t str_id(const char *p)
{
	struct str_slot *sl;
	uint64_t id;
	size_t i;

	if (!p)
		return 0;
	if (g.str_gen != sp_symbolizer_generation(g.sym)) {
		str_ids_release();
		g.str_gen = sp_symbolizer_generation(g.sym);
	}
	if (g.str_cap) {
		sl = str_slot(p);
		if (sl->p)
			return sl->id;
	}
	id = sp_writer_strz(g.w, p);
	if (!id)
		return 0;
	if ((g.str_n + 1) * 2 > g.str_cap) {
		struct str_slot *old = g.str_ids;
		size_t cap = g.str_cap;

		g.str_cap = cap ? cap * 2 : 1024;
		g.str_ids = sp_xcalloc(g.str_cap, sizeof(*g.str_ids));
		for (i = 0; i < cap; i++)
			if (old[i].p)
				*str_slot(old[i].p) = old[i];
		free(old);
	}
	sl = str_slot(p);
	sl->p = p;
	sl->id = id;
	g.str_n++;
	return id;
}

static int put_levels(uint64_t frame, unsigned int status, const struct sp_sym_level *level,
		      unsigned int n)
{
	struct sp_record rec = { .kind = SP_REC_SYMBOL };
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct sp_sym_level *l = &level[i];

		memset(&rec.symbol, 0, sizeof(rec.symbol));
		rec.symbol.frame = frame;
		rec.symbol.index = i;
		rec.symbol.func = str_id(l->func);
		rec.symbol.file = str_id(l->file);
		rec.symbol.line = l->line;
		rec.symbol.column = l->column;
		rec.symbol.offset = l->offset;
		rec.symbol.status = i == 0 ? status : 0;
		rec.symbol.flags = l->flags;
		if (sp_writer_put(g.w, &rec))
			return -1;
	}
	return 0;
}

static int put_symbols(uint64_t frame, const struct sp_frame *f)
{
	const struct sp_sym_result *r = sp_symbolizer_frame(g.sym, f);

	return put_levels(frame, r->status, r->level, r->n);
}

/* Resolve the deferred frames of pid (all of them when all). */
static int flush_pending(uint64_t pid, bool all)
{
	size_t i, j = 0;
	int err = 0;

	for (i = 0; i < g.npending; i++) {
		struct pending *p = &g.pending[i];

		if (all || p->pid == pid) {
			if (!err && put_symbols(p->id, &p->f))
				err = -1;
		} else {
			g.pending[j++] = *p;
		}
	}
	g.npending = j;
	return err;
}

static void defer_frame(uint64_t id, const struct sp_frame *f)
{
	const struct sp_module *m = f->module ? sp_defs_module(sp_writer_defs(g.w), f->module) :
				    NULL;
	struct pending *p;

	sp_grow(&g.pending, &g.cappending, g.npending + 1, sizeof(*g.pending));
	p = &g.pending[g.npending++];
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
 * Sort g.order[0..n) by module, then rel, keeping the frames' order among
 * equals: LSD radix over the bytes in which the keys differ at all.
 */
static void sort_order(size_t n)
{
	struct order *a = g.order, *b = g.order_tmp, *t;
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
	if (a != g.order)
		memcpy(g.order, a, n * sizeof(*a));
}

/* Resolve the held-back frames in address order, then write them in theirs. */
static int flush_batch(void)
{
	struct sp_record rec = { .kind = SP_REC_FRAME };
	size_t i, n = g.nbatch, k = 0;
	uint64_t id;

	if (!n)
		return 0;
	g.nbatch = 0;
	g.nlevels = 0;
	sp_grow(&g.order, &g.caporder, n, sizeof(*g.order));
	sp_grow(&g.order_tmp, &g.caporder_tmp, n, sizeof(*g.order_tmp));
	for (i = 0; i < n; i++) {
		struct batched *b = &g.batch[i];

		/* No record comes between them: what defers one is the same for all. */
		b->defer = sp_symbolizer_should_defer(g.sym, &b->f);
		if (!b->defer) {
			g.order[k].module = b->f.module;
			g.order[k].rel = b->f.rel;
			g.order[k++].i = i;
		}
	}
	sort_order(k);
	for (i = 0; i < k; i++) {
		struct batched *b = &g.batch[g.order[i].i];
		const struct sp_sym_result *r;

		/* In address order the batch is read at random: fetch ahead. */
		if (i + PREFETCH < k)
			__builtin_prefetch(&g.batch[g.order[i + PREFETCH].i]);
		r = sp_symbolizer_frame(g.sym, &b->f);

		sp_grow(&g.levels, &g.caplevels, g.nlevels + r->n, sizeof(*g.levels));
		memcpy(g.levels + g.nlevels, r->level, r->n * sizeof(*r->level));
		b->first = (uint32_t)g.nlevels;
		b->n = r->n;
		b->status = r->status;
		g.nlevels += r->n;
	}
	for (i = 0; i < n; i++) {
		struct batched *b = &g.batch[i];

		/* The levels are in lookup order: fetch them ahead of their turn. */
		if (i + PREFETCH < n && !g.batch[i + PREFETCH].defer)
			__builtin_prefetch(g.levels + g.batch[i + PREFETCH].first);
		rec.frame = b->f;
		if (sp_writer_put(g.w, &rec))
			return -1;
		id = sp_defs_nframes(sp_writer_defs(g.w));
		if (b->defer)
			defer_frame(id, &b->f);
		else if (put_levels(id, b->status, g.levels + b->first, b->n))
			return -1;
	}
	return 0;
}

static void progress(bool done)
{
	uint64_t now, resolved, total, loaded, live;

	if (env.quiet || !isatty(STDERR_FILENO))
		return;
	now = sp_now_mono_ns();
	if (done) {
		if (g.progress_shown)
			fprintf(stderr, "\r\033[K");
		return;
	}
	if (now - g.t0 < 1000000000ull || now - g.last_progress < 250000000ull)
		return;
	g.last_progress = now;
	g.progress_shown = true;
	sp_symbolizer_counts(g.sym, &resolved, &total);
	sp_symbolizer_files(g.sym, &loaded, &live);
	fprintf(stderr, "\r%s: %" PRIu64 " records, %" PRIu64 " frames (%" PRIu64
		" named), %" PRIu64 " files loaded, %" PRIu64 " live\033[K", sp_progname,
		g.records, total, resolved, loaded, live);
}

static const char *writer_str(uint64_t id, size_t *len)
{
	return sp_defs_str(sp_writer_defs(g.w), id, len);
}

static int handle(struct sp_record *rec)
{
	const char *why = NULL, *s;
	size_t len = 0;
	uint64_t id;

	/* A frame without bytes of a newer writer waits in the batch. */
	if (rec->kind == SP_REC_FRAME && !g.passthrough && !rec->extra.len) {
		if (sp_strmap_apply(&g.map, rec, &why) < 0) {
			sp_reader_skipped(g.in, rec, "a %s record refers to %s",
					  sp_rec_kind_name(rec->kind) ?: "unknown", why);
			return 0;
		}
		if (g.nbatch == BATCH && flush_batch())
			return -1;
		sp_grow(&g.batch, &g.capbatch, g.nbatch + 1, sizeof(*g.batch));
		g.batch[g.nbatch++].f = rec->frame;
		return 0;
	}
	if (flush_batch())
		return -1;
	switch (rec->kind) {
	case SP_REC_HEADER:
		if (flush_pending(0, true))
			return -1;
		sp_strmap_reset(&g.map);
		str_ids_release();
		g.passthrough = (rec->header.flags & SP_HDR_SYMBOLIZED) && !env.force;
		{
			char rel[128];
			size_t n = rec->header.kernel.len < sizeof(rel) - 1 ?
				   rec->header.kernel.len : sizeof(rel) - 1;

			memcpy(rel, rec->header.kernel.p, n);
			rel[n] = 0;
			sp_symbolizer_reset(g.sym, rel);
		}
		rec->header.flags |= SP_HDR_SYMBOLIZED;
		return sp_writer_put(g.w, rec);
	case SP_REC_STRING:
		return sp_strmap_put_string(&g.map, g.w, rec);
	default:
		break;
	}
	if (sp_strmap_apply(&g.map, rec, &why) < 0) {
		sp_reader_skipped(g.in, rec, "a %s record refers to %s",
				  sp_rec_kind_name(rec->kind) ?: "unknown", why);
		return 0;
	}
	switch (rec->kind) {
	case SP_REC_SYMBOL:
		/* With --force, the input's symbols give way to ours. */
		if (!g.passthrough && env.force)
			return 0;
		break;
	case SP_REC_PROCESS_END:
		if (flush_pending(rec->process_end.pid, false))
			return -1;
		break;
	case SP_REC_END:
		if (flush_pending(0, true))
			return -1;
		break;
	default:
		break;
	}
	if (sp_writer_put(g.w, rec))
		return -1;
	if (g.passthrough)
		return 0;
	switch (rec->kind) {
	case SP_REC_MODULE:
		rec->module.id = sp_defs_nmodules(sp_writer_defs(g.w));
		sp_symbolizer_module(g.sym, &rec->module, writer_str(rec->module.path, NULL));
		break;
	case SP_REC_MODULE_END:
		sp_symbolizer_module_end(g.sym, rec->module_end.module);
		break;
	case SP_REC_PROCESS_END:
		sp_symbolizer_process_end(g.sym, rec->process_end.pid);
		break;
	case SP_REC_KSYM:
		s = writer_str(rec->ksym.name, &len);
		sp_symbolizer_ksym(g.sym, &rec->ksym, s, len);
		break;
	case SP_REC_JITSYM:
		s = writer_str(rec->jitsym.name, &len);
		sp_symbolizer_jitsym(g.sym, &rec->jitsym, s, len);
		break;
	case SP_REC_FRAME:
		id = sp_defs_nframes(sp_writer_defs(g.w));
		if (sp_symbolizer_should_defer(g.sym, &rec->frame)) {
			defer_frame(id, &rec->frame);
			return 0;
		}
		return put_symbols(id, &rec->frame);
	default:
		break;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = { { .argp = &sp_common_argp }, { 0 } };
	static const struct argp argp = {
		.options = options, .parser = parse_opt, .children = children,
		.args_doc = "[FILE...]", .doc = doc,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct sp_record rec;
	int first, status, err = 0, rc;
	enum sp_format fmt;

	argp_parse(&argp, argc, argv, 0, &first, NULL);
	g.t0 = sp_now_mono_ns();
	g.sym = sp_symbolizer_new(&env.sym);
	if (!g.sym)
		sp_die("out of memory");
	g.in = sp_reader_open(argv + first, argc - first);
	if (!g.in)
		return SP_EXIT_FATAL;
	if (env.follow) {
		sp_reader_follow(g.in, true, false);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	while ((rc = sp_reader_next(g.in, &rec)) > 0) {
		if (!g.w) {
			fmt = env.format ? env.format : sp_reader_format(g.in);
			if (fmt == SP_FORMAT_SPOOL && env.common.out_is_tty && !env.format)
				fmt = SP_FORMAT_JSON;
			fflush(env.common.out);
			g.w = sp_writer_new(fileno(env.common.out),
					    env.common.out_path ? env.common.out_path : "<stdout>",
					    fmt);
			if (!g.w) {
				err = -1;
				break;
			}
			/* Nothing here reads back a spool's symbols: do not store them. */
			if (fmt == SP_FORMAT_SPOOL)
				sp_defs_keep_symbols(sp_writer_defs(g.w), false);
		}
		g.records++;
		if (handle(&rec)) {
			err = -1;
			break;
		}
		if (!sp_reader_more_available(g.in) && (flush_batch() || sp_writer_flush(g.w))) {
			err = -1;
			break;
		}
		if (!(g.records & 1023))
			progress(false);
	}
	if (g.w && !err && (flush_batch() || flush_pending(0, true)))
		err = -1;
	if (g.w && sp_writer_close(g.w))
		err = -1;
	progress(true);
	status = sp_reader_close(g.in);
	if (err)
		status = SP_EXIT_FATAL;
	sp_symbolizer_save(g.sym);
	if (!env.quiet)
		sp_symbolizer_print_stats(g.sym, stderr, env.stats);
	sp_symbolizer_free(g.sym);
	sp_strmap_release(&g.map);
	str_ids_release();
	free(g.pending);
	free(g.batch);
	free(g.order);
	free(g.order_tmp);
	free(g.levels);
	return sp_close_output(&env.common, status);
}
