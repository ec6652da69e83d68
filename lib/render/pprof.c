// SPDX-License-Identifier: MIT
/*
 * pprof export: the profile.proto message (lib/render/profile.proto, compiled by
 * protoc-c at build time), packed by libprotobuf-c and gzip-compressed by
 * zlib, as `pprof` and the libraries that read its files expect.
 *
 * What pprof reads from the file, besides the samples: the first mapping
 * names the program ("File:" of `pprof -top`), so the main executable of
 * the process with the most samples goes first; a mapping says it has
 * functions, file names and lines only when every location in it has them
 * (pprof then symbolizes none of its addresses itself); off-CPU samples are
 * waits, typed off_cpu/nanoseconds, not cpu time.
 *
 * pprof simplifies a function's name when its system_name equals it, as
 * a demangled C++ name ("a<int>::f(int)" becomes "a::f"), and then shows
 * nothing of "<module>" but its mapping: an interpreted function has no
 * system name, which tells pprof its name is final.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <zlib.h>

#include "escape.h"
#include "export.h"
#include "hashmap.h"
#include "sp.h"

/*
 * The generated code is compiled here rather than as a source of its own:
 * every build of the library (the archive, the sanitizer and fuzzing builds
 * built from each lib/ source) then carries it without a rule of its own.
 */
#include "proto/profile.pb-c.c"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

struct pmap {
	uint32_t gen;
	uint64_t module, pid;
	uint64_t start, limit, offset;
	int64_t filename, build_id;
	uint64_t nlocs, nfuncs, nfiles;	/* its locations: all, with a function, with a file */
	bool has_inline, exec, kernel;
	/* Its interpreted frames' lowest and highest address (ids, not
	 * memory): the range of a module recorded without one (interp). */
	uint64_t interp_lo, interp_hi;
	bool has_interp;
	/* The file's ELF address minus its file offset in this mapping,
	 * from a frame of the mapping's own process (bias_known): what
	 * places there a frame another process took (loc_address()). */
	int64_t bias;
	bool bias_known;
};

struct pfunc {
	int64_t name, filename;
	bool interp;		/* an interpreted function's: no system name */
};

struct pline {
	uint64_t func;
	int64_t line, column;
};

struct ploc {
	uint32_t gen;
	uint64_t frame;
	uint64_t mapping;	/* id, 0 = none */
	uint64_t address;	/* as the frame gives it */
	uint64_t rel;		/* its ELF address in the mapping's file */
	bool elsewhere;		/* address is of another process, outside the mapping */
	uint32_t line_off, nlines;
};

struct psample {
	uint32_t gen;
	uint64_t stack, pid, tid;
	uint32_t loc_off, nlocs;
	uint64_t count, ns;
};

struct sp_pprof {
	bool no_inline, off_cpu;
	uint32_t gen;

	char **strs;
	size_t nstrs, strs_cap;
	struct sp_idset str_idx;

	struct pmap *maps;
	size_t nmaps, maps_cap;
	struct sp_idset map_idx;
	struct pfunc *funcs;
	size_t nfuncs, funcs_cap;
	struct sp_idset func_idx;
	struct ploc *locs;
	size_t nlocs, locs_cap;
	struct sp_idset loc_idx;
	struct pline *lines;
	size_t nlines, lines_cap;
	struct psample *samples;
	size_t nsamples, samples_cap;
	struct sp_idset sample_idx;
	uint64_t *locpool;
	size_t locpool_len, locpool_cap;
	uint64_t *fbuf;
	size_t fbuf_cap;

	struct sp_u64map exe_of;	/* pid -> exe's string index, from process records */
	struct sp_u64map cont_of;	/* pid -> "runtime:id" string index (its container) */
	struct sp_u64map exe_mod;	/* pid -> module id of its exe (this stream), 0: none */
	uint64_t total_samples, total_ns;
	uint64_t start_wall, start_mono, first, last;
	bool have_header, have_sample;
};

/* ---- strings ---- */

struct skey {
	const char *s;
	size_t len;
};

static bool str_eq(void *ctx, uint32_t id, const void *key)
{
	const struct sp_pprof *p = ctx;
	const struct skey *k = key;

	return strlen(p->strs[id - 1]) == k->len && !memcmp(p->strs[id - 1], k->s, k->len);
}

/*
 * A string's index in the table: the table holds text forms (escape.h), so
 * that pprof's strings are valid UTF-8, as protobuf wants, and a terminal
 * showing `pprof -top` gets no control character.
 */
static int64_t str(struct sp_pprof *p, const char *raw, size_t rlen)
{
	size_t len = sp_esc_text(NULL, 0, raw, rlen, 0);
	char *c = len == rlen ? NULL : sp_xmalloc(len + 1);
	const char *s = c ? c : raw;
	struct skey k = { s, len };
	uint32_t id;
	uint64_t h;

	if (c)
		sp_esc_text(c, len + 1, raw, rlen, 0);
	h = sp_hash_bytes(s, len);
	id = sp_idset_find(&p->str_idx, h, &k, str_eq, p);
	if (id) {
		free(c);
		return id - 1;
	}
	if (!c) {
		c = sp_xmalloc(len + 1);
		memcpy(c, s, len);
		c[len] = '\0';
	}
	sp_grow(&p->strs, &p->strs_cap, p->nstrs + 1, sizeof(*p->strs));
	p->strs[p->nstrs] = c;
	sp_idset_add(&p->str_idx, h, p->nstrs + 1);
	return p->nstrs++;
}

static int64_t strz(struct sp_pprof *p, const char *s)
{
	return str(p, s, strlen(s));
}

/* Label samples with the container their process's record names
 * (docs/containers.md): "podman:<id>"; a systemd service is no container. */
static void note_container(struct sp_pprof *p, const struct sp_defs *d,
			   const struct sp_process *r)
{
	const char *rt = sp_defs_strz(d, r->runtime), *id = sp_defs_strz(d, r->container);
	char buf[400];

	if (!rt || !*rt || !id || !*id || !strcmp(rt, "systemd"))
		return;
	snprintf(buf, sizeof(buf), "%s:%s", rt, id);
	sp_u64map_put(&p->cont_of, r->pid, (uint64_t)strz(p, buf));
}

struct sp_pprof *sp_pprof_new(bool no_inline)
{
	struct sp_pprof *p = sp_xcalloc(1, sizeof(*p));

	p->no_inline = no_inline;
	strz(p, "");		/* string 0 must be empty */
	return p;
}

void sp_pprof_set_off_cpu(struct sp_pprof *p, bool off_cpu)
{
	p->off_cpu = off_cpu;
}

void sp_pprof_free(struct sp_pprof *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	free(p->strs);
	sp_idset_release(&p->str_idx);
	free(p->maps);
	sp_idset_release(&p->map_idx);
	free(p->funcs);
	sp_idset_release(&p->func_idx);
	free(p->locs);
	sp_idset_release(&p->loc_idx);
	free(p->lines);
	free(p->samples);
	sp_idset_release(&p->sample_idx);
	free(p->locpool);
	free(p->fbuf);
	sp_u64map_release(&p->exe_of);
	sp_u64map_release(&p->cont_of);
	sp_u64map_release(&p->exe_mod);
	free(p);
}

void sp_pprof_totals(const struct sp_pprof *p, uint64_t *samples, uint64_t *ns)
{
	*samples = p->total_samples;
	*ns = p->total_ns;
}

/* ---- mappings, functions, locations ---- */

struct idkey {
	uint32_t gen;
	uint64_t id;
};

static bool map_eq(void *ctx, uint32_t id, const void *key)
{
	const struct pmap *m = &((const struct pmap *)ctx)[id - 1];
	const struct idkey *k = key;

	return m->gen == k->gen && m->module == k->id;
}

static uint64_t mapping(struct sp_pprof *p, const struct sp_defs *d, uint64_t module)
{
	struct idkey k = { p->gen, module };
	uint64_t h = sp_hash_mix(p->gen, module);
	uint32_t id = sp_idset_find(&p->map_idx, h, &k, map_eq, p->maps);
	const struct sp_module *m;
	struct pmap *x;
	char hex[2 * 64 + 1];
	uint32_t i;

	if (id)
		return id;
	m = sp_defs_module(d, module);
	if (!m)
		return 0;
	sp_grow(&p->maps, &p->maps_cap, p->nmaps + 1, sizeof(*p->maps));
	x = &p->maps[p->nmaps];
	memset(x, 0, sizeof(*x));
	x->gen = p->gen;
	x->module = module;
	x->pid = m->pid;
	x->exec = m->prot & PROT_EXEC;
	x->kernel = (m->flags & SP_MOD_KERNEL) || !m->pid;
	x->start = m->start;
	x->limit = m->end;
	x->offset = m->pgoff;
	x->filename = strz(p, sp_defs_strz(d, m->path));
	for (i = 0; i < m->build_id.len && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->build_id.p[i]);
	hex[2 * i] = '\0';
	x->build_id = strz(p, hex);
	sp_idset_add(&p->map_idx, h, p->nmaps + 1);
	return ++p->nmaps;
}

static bool func_eq(void *ctx, uint32_t id, const void *key)
{
	const struct pfunc *f = &((const struct pfunc *)ctx)[id - 1], *k = key;

	return f->name == k->name && f->filename == k->filename && f->interp == k->interp;
}

static uint64_t function(struct sp_pprof *p, int64_t name, int64_t filename, bool interp)
{
	struct pfunc k = { name, filename, interp };
	uint64_t h = sp_hash_mix(sp_hash_mix(name, filename), interp);
	uint32_t id = sp_idset_find(&p->func_idx, h, &k, func_eq, p->funcs);

	if (id)
		return id;
	sp_grow(&p->funcs, &p->funcs_cap, p->nfuncs + 1, sizeof(*p->funcs));
	p->funcs[p->nfuncs] = k;
	sp_idset_add(&p->func_idx, h, p->nfuncs + 1);
	return ++p->nfuncs;
}

static bool loc_eq(void *ctx, uint32_t id, const void *key)
{
	const struct ploc *l = &((const struct ploc *)ctx)[id - 1];
	const struct idkey *k = key;

	return l->gen == k->gen && l->frame == k->id;
}

static uint64_t location(struct sp_pprof *p, const struct sp_defs *d, uint64_t fid)
{
	struct idkey k = { p->gen, fid };
	uint64_t h = sp_hash_mix(p->gen, fid);
	uint32_t id = sp_idset_find(&p->loc_idx, h, &k, loc_eq, p->locs);
	const struct sp_frame *fr;
	const struct sp_symbol *sym;
	unsigned int nsym = 0, i;
	struct ploc *l;
	struct pmap *m = NULL;

	if (id)
		return id;
	fr = sp_defs_frame(d, fid);
	sp_grow(&p->locs, &p->locs_cap, p->nlocs + 1, sizeof(*p->locs));
	l = &p->locs[p->nlocs];
	memset(l, 0, sizeof(*l));
	l->gen = p->gen;
	l->frame = fid;
	l->line_off = p->nlines;
	if (fr) {
		l->address = fr->addr;
		l->rel = fr->rel;
		l->mapping = fr->module ? mapping(p, d, fr->module) : 0;
		m = l->mapping ? &p->maps[l->mapping - 1] : NULL;
		l = &p->locs[p->nlocs];	/* mapping() does not move locs; be plain */
		/* A frame is one per file and address, with the first module
		 * record of that file: one another process took carries that
		 * process's address, outside the mapping (pprof, symbolizing,
		 * reads a location's file offset as address - start + offset). */
		if (m && !m->kernel && fr->mode == SP_FRAME_USER) {
			l->elsewhere = fr->addr < m->start || fr->addr >= m->limit;
			if (!l->elsewhere && !m->bias_known) {
				m->bias = (int64_t)(fr->rel - (fr->addr - m->start + m->offset));
				m->bias_known = true;
			}
		}
		if (m && fr->mode == SP_FRAME_INTERP) {
			if (!m->has_interp || fr->addr < m->interp_lo)
				m->interp_lo = fr->addr;
			if (!m->has_interp || fr->addr > m->interp_hi)
				m->interp_hi = fr->addr;
			m->has_interp = true;
		}
		sym = sp_defs_symbols(d, fid, &nsym);
		if (sym && nsym && sym[0].func) {
			for (i = 0; i < nsym; i++) {
				struct pline *ln;

				if (p->no_inline && i != nsym - 1)
					continue;
				if (!sym[i].func)
					continue;
				sp_grow(&p->lines, &p->lines_cap, p->nlines + 1, sizeof(*p->lines));
				ln = &p->lines[p->nlines++];
				ln->func = function(p, strz(p, sp_defs_strz(d, sym[i].func)),
						    strz(p, sp_defs_strz(d, sym[i].file)),
						    fr->mode == SP_FRAME_INTERP);
				ln->line = sym[i].line;
				ln->column = sym[i].column;
				l->nlines++;
			}
			if (m) {
				m->nfuncs++;
				if (sym[0].file)
					m->nfiles++;
				if (nsym > 1 && !p->no_inline)
					m->has_inline = true;
			}
		}
		if (m)
			m->nlocs++;
	}
	sp_idset_add(&p->loc_idx, h, p->nlocs + 1);
	return ++p->nlocs;
}

/* ---- samples ---- */

struct sample_key {
	uint32_t gen;
	uint64_t stack, pid, tid;
};

static bool sample_eq(void *ctx, uint32_t id, const void *key)
{
	const struct psample *s = &((const struct psample *)ctx)[id - 1];
	const struct sample_key *k = key;

	return s->gen == k->gen && s->stack == k->stack && s->pid == k->pid && s->tid == k->tid;
}

/*
 * The module of a process's exe (its code segment, else its first), looked
 * up once per process once its exe is known; NULL while it is not.
 */
static uint64_t *find_exe(struct sp_pprof *p, const struct sp_defs *d, uint64_t pid)
{
	uint64_t *exe = sp_u64map_get(&p->exe_of, pid), n = sp_defs_nmodules(d), i, best = 0;
	const struct sp_module *m;
	bool exec = false;

	if (!exe)
		return NULL;
	for (i = 1; i <= n && !exec; i++) {
		m = sp_defs_module(d, i);
		if (!m || m->pid != pid || (best && !(m->prot & PROT_EXEC)) ||
		    strcmp(p->strs[*exe], sp_defs_strz(d, m->path)))
			continue;
		best = i;
		exec = m->prot & PROT_EXEC;
	}
	return sp_u64map_put(&p->exe_mod, pid, best);
}

static int add_sample(struct sp_pprof *p, const struct sp_defs *d, const struct sp_sample *s,
		      uint64_t ns)
{
	struct sample_key k = { p->gen, s->stack, s->pid, s->tid };
	uint64_t h = sp_hash_mix(sp_hash_mix(sp_hash_mix(sp_hash_u64(p->gen), s->stack), s->pid),
				 s->tid);
	uint32_t id = sp_idset_find(&p->sample_idx, h, &k, sample_eq, p->samples);
	struct psample *x;
	uint64_t *exe;
	int depth = 0, i;

	if (!id) {
		/* The program's own file is a mapping even when no frame is in
		 * it (a stack unwound only through libc): pprof names it. */
		exe = sp_u64map_get(&p->exe_mod, s->pid);
		if (!exe)
			exe = find_exe(p, d, s->pid);
		if (exe && *exe)
			mapping(p, d, *exe);
		if (s->stack) {
			/* A deeper stack keeps its innermost frames (defs.h). */
			if (!p->fbuf_cap)
				sp_grow(&p->fbuf, &p->fbuf_cap, SP_MAX_STACK_DEPTH, sizeof(*p->fbuf));
			depth = sp_defs_stack_frames(d, s->stack, p->fbuf, SP_MAX_STACK_DEPTH);
			if (depth < 0)
				return -1;
			if (depth > SP_MAX_STACK_DEPTH)
				depth = SP_MAX_STACK_DEPTH;
		}
		sp_grow(&p->samples, &p->samples_cap, p->nsamples + 1, sizeof(*p->samples));
		x = &p->samples[p->nsamples];
		x->gen = p->gen;
		x->stack = s->stack;
		x->pid = s->pid;
		x->tid = s->tid;
		x->count = x->ns = 0;
		x->loc_off = p->locpool_len;
		x->nlocs = depth;
		sp_grow(&p->locpool, &p->locpool_cap, p->locpool_len + depth, sizeof(*p->locpool));
		for (i = 0; i < depth; i++)	/* leaf first, as pprof wants */
			p->locpool[p->locpool_len + i] = location(p, d, p->fbuf[i]);
		p->locpool_len += depth;
		id = ++p->nsamples;
		sp_idset_add(&p->sample_idx, h, id);
	}
	x = &p->samples[id - 1];
	x->count++;
	x->ns += ns;
	p->total_samples++;
	p->total_ns += ns;
	if (!p->have_sample || s->time < p->first)
		p->first = s->time;
	if (s->time > p->last)
		p->last = s->time;
	p->have_sample = true;
	return 0;
}

int sp_pprof_add(struct sp_pprof *p, const struct sp_defs *d, const struct sp_record *rec,
		 uint64_t ns)
{
	switch (rec->kind) {
	case SP_REC_HEADER:
		p->gen++;
		sp_u64map_release(&p->exe_mod);	/* module ids start again */
		if (!p->have_header) {
			p->have_header = true;
			p->start_wall = rec->header.start_wall_ns;
			p->start_mono = rec->header.start_mono_ns;
		}
		return 0;
	case SP_REC_PROCESS:
		if (rec->process.exe) {
			sp_u64map_put(&p->exe_of, rec->process.pid,
				      strz(p, sp_defs_strz(d, rec->process.exe)));
			sp_u64map_del(&p->exe_mod, rec->process.pid);	/* exec: a new one */
		}
		note_container(p, d, &rec->process);
		return 0;

	case SP_REC_SAMPLE:
		return add_sample(p, d, &rec->sample, ns);
	default:
		return 0;
	}
}

/* ---- writing ---- */

static int gzip_write(const uint8_t *buf, size_t len, FILE *out)
{
	unsigned char chunk[65536];
	z_stream zs;
	int rc, flush;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 16: a gzip header and trailer, not a bare zlib stream. */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return sp_error("pprof: deflateInit2 failed");
	zs.next_in = (uint8_t *)buf;
	zs.avail_in = len;
	do {
		flush = Z_FINISH;
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		rc = deflate(&zs, flush);
		if (rc == Z_STREAM_ERROR) {
			deflateEnd(&zs);
			return sp_error("pprof: deflate failed");
		}
		if (fwrite(chunk, 1, sizeof(chunk) - zs.avail_out, out) !=
		    sizeof(chunk) - zs.avail_out) {
			deflateEnd(&zs);
			return -1;	/* the caller reports the failed write */
		}
	} while (rc != Z_STREAM_END);
	deflateEnd(&zs);
	return 0;
}

/*
 * The profile.proto message's repeated fields, built from the tables: for
 * each, the messages and the array of pointers to them protobuf-c wants.
 */
struct pb {
	Mapping *maps, **mapp;
	uint64_t *ids;
	Function *funcs, **funcp;
	Location *locs, **locp;
	Line *lines, **linep;
	Sample *samples, **samplep;
	Label *labels, **labelp;
	int64_t *values;
};

/* The pid with the most samples (the lowest of equals), or 0. */
static uint64_t main_pid(const struct sp_pprof *p)
{
	struct sp_u64map n = SP_U64MAP_INIT;
	uint64_t best = 0, most = 0, pid, c, *v;
	size_t i;

	for (i = 0; i < p->nsamples; i++) {
		v = sp_u64map_get(&n, p->samples[i].pid);
		if (!v)
			v = sp_u64map_put(&n, p->samples[i].pid, 0);
		*v += p->samples[i].count;
	}
	for (i = 0; sp_u64map_next(&n, &i, &pid, &c);)
		if (c > most || (c == most && pid < best)) {
			most = c;
			best = pid;
		}
	sp_u64map_release(&n);
	return best;
}

/*
 * The index of the mapping pprof should take for the program: the main
 * process's executable (its exe, else a file of it that is no shared
 * library), its code segment first; never the kernel or a [pseudo] file.
 */
static size_t main_mapping(const struct sp_pprof *p)
{
	uint64_t pid = main_pid(p), *exe = sp_u64map_get(&p->exe_of, pid);
	unsigned int score, best = 0;
	size_t i, at = 0;

	for (i = 0; i < p->nmaps; i++) {
		const struct pmap *m = &p->maps[i];
		const char *name = p->strs[m->filename], *base = strrchr(name, '/');

		if (m->kernel || !*name || *name == '[')
			continue;
		score = 1;
		if (exe && (int64_t)*exe == m->filename)
			score += 16;
		if (m->pid == pid)
			score += 8;
		if (!strstr(base ? base : name, ".so"))
			score += 4;
		if (m->exec)
			score += 2;
		if (score > best) {
			best = score;
			at = i;
		}
	}
	return at;
}

/* A location's address in its mapping: a frame another process took is
 * moved to where this mapping holds the same byte of the file, through
 * the file's ELF address (its bias learnt from a frame of the mapping's
 * own process; without one, 0: segments at their file offsets, as GNU ld
 * lays out a shared library's or PIE's code). */
static uint64_t loc_address(const struct sp_pprof *p, const struct ploc *l)
{
	const struct pmap *m;
	uint64_t a;

	if (!l->elsewhere)
		return l->address;
	m = &p->maps[l->mapping - 1];
	a = m->start + (l->rel - (uint64_t)m->bias - m->offset);
	/* (outside it all the same: another segment of the file, or a bias
	 * a forged frame taught: left as it was) */
	return a >= m->start && a < m->limit ? a : l->address;
}

/* Mappings, the main one first (ids[i]: the id of p->maps[i]). */
static void pb_mappings(const struct sp_pprof *p, struct pb *b)
{
	size_t i, first = main_mapping(p);

	b->maps = sp_xcalloc(p->nmaps + 1, sizeof(*b->maps));
	b->mapp = sp_xcalloc(p->nmaps + 1, sizeof(*b->mapp));
	b->ids = sp_xcalloc(p->nmaps + 1, sizeof(*b->ids));
	for (i = 0; i < p->nmaps; i++)
		b->ids[i] = i == first ? 1 : i < first ? i + 2 : i + 1;
	for (i = 0; i < p->nmaps; i++) {
		const struct pmap *x = &p->maps[i];
		Mapping *m = &b->maps[b->ids[i] - 1];

		perftools__profiles__mapping__init(m);
		m->id = b->ids[i];
		m->memory_start = x->start;
		m->memory_limit = x->limit;
		/* "[python]", "[ruby]": recorded with no range, their frames'
		 * addresses are ids; the range holds them, as pprof reads it */
		if (x->start >= x->limit && x->has_interp && x->interp_hi < UINT64_MAX) {
			m->memory_start = x->interp_lo;
			m->memory_limit = x->interp_hi + 1;
		}
		m->file_offset = x->offset;
		m->filename = x->filename;
		m->build_id = x->build_id;
		/* "has" means every location: pprof then symbolizes none of them */
		m->has_functions = x->nlocs && x->nfuncs == x->nlocs;
		m->has_filenames = x->nlocs && x->nfiles == x->nlocs;
		m->has_line_numbers = m->has_filenames;
		m->has_inline_frames = x->has_inline && m->has_functions;
		b->mapp[m->id - 1] = m;
	}
}

static void pb_functions(const struct sp_pprof *p, struct pb *b)
{
	size_t i;

	b->funcs = sp_xcalloc(p->nfuncs + 1, sizeof(*b->funcs));
	b->funcp = sp_xcalloc(p->nfuncs + 1, sizeof(*b->funcp));
	for (i = 0; i < p->nfuncs; i++) {
		perftools__profiles__function__init(&b->funcs[i]);
		b->funcs[i].id = i + 1;
		b->funcs[i].name = p->funcs[i].name;
		b->funcs[i].system_name = p->funcs[i].interp ? 0 : p->funcs[i].name;
		b->funcs[i].filename = p->funcs[i].filename;
		b->funcp[i] = &b->funcs[i];
	}
}

/* Locations and the lines each points into. */
static void pb_locations(const struct sp_pprof *p, struct pb *b)
{
	size_t i;

	b->lines = sp_xcalloc(p->nlines + 1, sizeof(*b->lines));
	b->linep = sp_xcalloc(p->nlines + 1, sizeof(*b->linep));
	for (i = 0; i < p->nlines; i++) {
		perftools__profiles__line__init(&b->lines[i]);
		b->lines[i].function_id = p->lines[i].func;
		b->lines[i].line = p->lines[i].line;
		b->lines[i].column = p->lines[i].column;
		b->linep[i] = &b->lines[i];
	}
	b->locs = sp_xcalloc(p->nlocs + 1, sizeof(*b->locs));
	b->locp = sp_xcalloc(p->nlocs + 1, sizeof(*b->locp));
	for (i = 0; i < p->nlocs; i++) {
		perftools__profiles__location__init(&b->locs[i]);
		b->locs[i].id = i + 1;
		b->locs[i].mapping_id = p->locs[i].mapping ? b->ids[p->locs[i].mapping - 1] : 0;
		b->locs[i].address = loc_address(p, &p->locs[i]);
		b->locs[i].n_line = p->locs[i].nlines;
		b->locs[i].line = b->linep + p->locs[i].line_off;
		b->locp[i] = &b->locs[i];
	}
}

/* Samples with their two values and their pid and tid labels, and a
 * container label when their process's record names one. */
static void pb_samples(const struct sp_pprof *p, struct pb *b, int64_t k_pid, int64_t k_tid,
		       int64_t k_cont)
{
	uint64_t *cont;
	size_t i;

	b->samples = sp_xcalloc(p->nsamples + 1, sizeof(*b->samples));
	b->samplep = sp_xcalloc(p->nsamples + 1, sizeof(*b->samplep));
	b->labels = sp_xcalloc(3 * p->nsamples + 1, sizeof(*b->labels));
	b->labelp = sp_xcalloc(3 * p->nsamples + 1, sizeof(*b->labelp));
	b->values = sp_xcalloc(2 * p->nsamples + 1, sizeof(*b->values));
	for (i = 0; i < p->nsamples; i++) {
		Sample *s = &b->samples[i];
		Label *l = &b->labels[3 * i];

		perftools__profiles__sample__init(s);
		s->n_location_id = p->samples[i].nlocs;
		s->location_id = p->locpool + p->samples[i].loc_off;
		b->values[2 * i] = p->samples[i].count;
		b->values[2 * i + 1] = p->samples[i].ns;
		s->n_value = 2;
		s->value = &b->values[2 * i];
		perftools__profiles__label__init(&l[0]);
		perftools__profiles__label__init(&l[1]);
		l[0].key = k_pid;
		l[0].num = p->samples[i].pid;
		l[1].key = k_tid;
		l[1].num = p->samples[i].tid;
		b->labelp[3 * i] = &l[0];
		b->labelp[3 * i + 1] = &l[1];
		s->n_label = 2;
		s->label = &b->labelp[3 * i];
		cont = k_cont ? sp_u64map_get(&p->cont_of, p->samples[i].pid) : NULL;
		if (cont) {
			perftools__profiles__label__init(&l[2]);
			l[2].key = k_cont;
			l[2].str = (int64_t)*cont;
			b->labelp[3 * i + 2] = &l[2];
			s->n_label = 3;
		}
		b->samplep[i] = s;
	}
}

static void pb_free(struct pb *b)
{
	free(b->maps);
	free(b->mapp);
	free(b->ids);
	free(b->funcs);
	free(b->funcp);
	free(b->locs);
	free(b->locp);
	free(b->lines);
	free(b->linep);
	free(b->samples);
	free(b->samplep);
	free(b->labels);
	free(b->labelp);
	free(b->values);
}

int sp_pprof_write(struct sp_pprof *p, FILE *out, uint64_t period_ns, const char *comment)
{
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[3] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
			    PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
			    PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	ValueType *vtp[2] = { &vt[0], &vt[1] };
	/* the string table's order is the order of these calls: keep it */
	int64_t k_samples = strz(p, "samples"), k_count = strz(p, "count");
	int64_t k_cpu = strz(p, "cpu"), k_ns = strz(p, "nanoseconds");
	int64_t k_waits = p->off_cpu ? strz(p, "waits") : 0;
	int64_t k_off = p->off_cpu ? strz(p, "off_cpu") : 0;
	int64_t k_pid = strz(p, "pid"), k_tid = strz(p, "tid");
	int64_t comment_idx = strz(p, comment ? comment : "");
	struct pb b;
	uint8_t *buf;
	size_t len;
	int rc;

	vt[0].type = k_samples;
	vt[0].unit = k_count;
	vt[1].type = k_cpu;
	vt[1].unit = k_ns;
	vt[2].type = k_cpu;
	vt[2].unit = k_ns;
	prof.period = period_ns;
	if (p->off_cpu) {
		/* Each sample is one wait of its own length, as Go's block
		 * profile counts contentions: the period is one wait. */
		vt[0].type = k_waits;
		vt[1].type = k_off;
		vt[2].type = k_waits;
		vt[2].unit = k_count;
		prof.period = 1;
	}
	prof.n_sample_type = 2;
	prof.sample_type = vtp;
	prof.period_type = &vt[2];
	prof.time_nanos = p->start_wall;
	prof.duration_nanos = p->have_sample ? p->last - p->first : 0;
	prof.default_sample_type = p->off_cpu ? k_off : k_cpu;	/* a string, not an index */
	if (comment && *comment) {
		prof.n_comment = 1;
		prof.comment = &comment_idx;
	}
	pb_mappings(p, &b);
	pb_functions(p, &b);
	pb_locations(p, &b);
	pb_samples(p, &b, k_pid, k_tid, p->cont_of.n ? strz(p, "container") : 0);
	prof.n_mapping = p->nmaps;
	prof.mapping = b.mapp;
	prof.n_function = p->nfuncs;
	prof.function = b.funcp;
	prof.n_location = p->nlocs;
	prof.location = b.locp;
	prof.n_sample = p->nsamples;
	prof.sample = b.samplep;
	prof.n_string_table = p->nstrs;
	prof.string_table = p->strs;

	len = perftools__profiles__profile__get_packed_size(&prof);
	buf = sp_xmalloc(len ? len : 1);
	perftools__profiles__profile__pack(&prof, buf);
	rc = gzip_write(buf, len, out);
	free(buf);
	pb_free(&b);
	return rc;
}
