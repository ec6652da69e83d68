// SPDX-License-Identifier: MIT
/* A persistent cache of DWARF indexes: one mapped file per build-id. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "buildid.h"
#include "safefile.h"
#include "sp.h"
#include "symcache.h"

#define MAGIC		"SPDWIDX"	/* and its NUL: 8 bytes */
#define BOM		0x01020304u
#define MAX_FILE	(4ull << 30)

struct file_header {
	char magic[8];
	uint32_t version;
	uint32_t bom;			/* BOM as the writer stored it */
	uint32_t header_size;		/* sizeof(struct file_header) */
	uint32_t build_id_len;
	uint8_t build_id[SP_BUILD_ID_MAX];
	uint64_t text_lo, text_hi;
	uint64_t file_size;
	uint64_t nclusters, ncu;
	uint64_t units, bad;
	uint64_t sum;			/* of all up to the parts, with this field 0 */
};

struct file_cluster {
	uint64_t lo, hi;
	uint64_t cu_first, ncu;		/* into the unit offsets after the table */
	uint64_t part_off, part_size;	/* 0 size: not built */
	uint64_t part_sum;
};

struct file_part {
	uint64_t nnodes, nsegs, nrows, nstrs, blob_len;
	uint64_t units, nfuncs, ninlined;
};

_Static_assert(sizeof(struct file_header) % 8 == 0, "header size");
_Static_assert(sizeof(struct file_cluster) == 56, "cluster size");
_Static_assert(sizeof(struct sp_dwarfidx_node) == 32, "node size");
_Static_assert(sizeof(struct sp_dwarfidx_row) == 24, "row size");

struct sp_symcache {
	char *dir;
	bool write_failed;
	bool dir_refused;	/* by sp_cache_dir_open(), which said why */
};

struct mapping {
	void *p;
	size_t size;
};

static uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* A fast checksum of 8-byte words (n a multiple of 8), chained through h. */
static uint64_t sum64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 31;
	}
	return h;
}

static bool checksums_checked(void)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	return false;	/* let the fuzzer reach the checks behind them */
#else
	return true;
#endif
}

/* ---- layout ---- */

static uint64_t part_size(const struct file_part *fp)
{
	return sizeof(*fp) + fp->nnodes * sizeof(struct sp_dwarfidx_node) +
	       fp->nsegs * 8 + pad8(fp->nsegs * 4) + fp->nrows * (24 + 8) +
	       pad8(fp->nstrs * 4) + pad8(fp->blob_len);
}

/* Point d at the arrays of the part at p (size checked by the caller). */
static void part_arrays(const unsigned char *p, const struct file_part *fp,
			struct sp_dwarfidx_part *d)
{
	p += sizeof(*fp);
	memset(d, 0, sizeof(*d));
	d->nnodes = fp->nnodes;
	d->nsegs = fp->nsegs;
	d->nrows = fp->nrows;
	d->nstrs = fp->nstrs;
	d->blob_len = fp->blob_len;
	d->units = fp->units;
	d->nfuncs = fp->nfuncs;
	d->ninlined = fp->ninlined;
	d->nodes = (const void *)p;
	p += fp->nnodes * sizeof(struct sp_dwarfidx_node);
	d->seg_lo = (const void *)p;
	p += fp->nsegs * 8;
	d->seg_node = (const void *)p;
	p += pad8(fp->nsegs * 4);
	d->rows = (const void *)p;
	p += fp->nrows * 24;
	d->row_addr = (const void *)p;
	p += fp->nrows * 8;
	d->str_off = (const void *)p;
	p += pad8(fp->nstrs * 4);
	d->blob = (const char *)p;
}

/* ---- encoding ---- */

static uint64_t blob_len(const struct sp_dwarfidx_part *d)
{
	uint64_t i, n = 0;

	for (i = 0; i < d->nstrs; i++)
		n += strlen(d->strs[i]) + 1;
	return n;
}

static unsigned char *encode_part(unsigned char *p, const struct sp_dwarfidx_part *d,
				  uint64_t blen)
{
	struct file_part fp = {
		.nnodes = d->nnodes, .nsegs = d->nsegs, .nrows = d->nrows, .nstrs = d->nstrs,
		.blob_len = blen, .units = d->units, .nfuncs = d->nfuncs,
		.ninlined = d->ninlined,
	};
	uint64_t i, off = 0;
	uint32_t o;

	memcpy(p, &fp, sizeof(fp));
	p += sizeof(fp);
	memcpy(p, d->nodes, d->nnodes * sizeof(*d->nodes));
	p += d->nnodes * sizeof(*d->nodes);
	memcpy(p, d->seg_lo, d->nsegs * 8);
	p += d->nsegs * 8;
	memcpy(p, d->seg_node, d->nsegs * 4);
	p += pad8(d->nsegs * 4);
	memcpy(p, d->rows, d->nrows * sizeof(*d->rows));
	p += d->nrows * sizeof(*d->rows);
	memcpy(p, d->row_addr, d->nrows * 8);
	p += d->nrows * 8;
	for (i = 0; i < d->nstrs; i++) {
		o = (uint32_t)off;
		memcpy(p + i * 4, &o, 4);
		off += strlen(d->strs[i]) + 1;
	}
	p += pad8(d->nstrs * 4);
	for (i = 0, off = 0; i < d->nstrs; i++) {
		size_t len = strlen(d->strs[i]) + 1;

		memcpy(p + off, d->strs[i], len);
		off += len;
	}
	p += pad8(blen);
	return p;
}

void *sp_symcache_encode(const struct sp_symcache_key *k, const struct sp_dwarfidx *x,
			 size_t *size)
{
	struct sp_dwarfidx_cluster c;
	struct sp_dwarfidx_part d;
	struct file_header h = { .version = SP_SYMCACHE_VERSION, .bom = BOM };
	struct file_cluster *fc;
	uint64_t total, off, *cu, *blens;
	size_t ncl, units, bad, i;
	unsigned char *buf, *p;

	sp_dwarfidx_counts(x, &ncl, &units, &bad);
	if (k->build_id_len > SP_BUILD_ID_MAX)
		return NULL;
	blens = sp_xcalloc(ncl + 1, sizeof(*blens));
	memcpy(h.magic, MAGIC, 8);
	h.header_size = sizeof(h);
	h.build_id_len = k->build_id_len;
	memcpy(h.build_id, k->build_id, k->build_id_len);
	h.text_lo = k->text_lo;
	h.text_hi = k->text_hi;
	h.nclusters = ncl;
	h.units = units;
	h.bad = bad;
	for (i = 0; i < ncl; i++) {
		sp_dwarfidx_cluster(x, i, &c, &d);
		h.ncu += c.ncu;
	}
	total = sizeof(h) + ncl * sizeof(*fc) + h.ncu * 8;
	for (i = 0; i < ncl; i++) {
		struct file_part fp;

		sp_dwarfidx_cluster(x, i, &c, &d);
		if (!c.part)
			continue;
		blens[i] = blob_len(&d);
		if (blens[i] > UINT32_MAX) {
			free(blens);
			errno = EOVERFLOW;
			return NULL;
		}
		fp = (struct file_part){ .nnodes = d.nnodes, .nsegs = d.nsegs, .nrows = d.nrows,
					 .nstrs = d.nstrs, .blob_len = blens[i] };
		total += part_size(&fp);
	}
	h.file_size = total;
	buf = calloc(1, total);	/* as large as the index: not fatal (symcache.h) */
	if (!buf) {
		free(blens);
		return NULL;
	}
	fc = (struct file_cluster *)(buf + sizeof(h));
	cu = (uint64_t *)(fc + ncl);
	off = sizeof(h) + ncl * sizeof(*fc) + h.ncu * 8;
	p = buf + off;
	for (i = 0, h.ncu = 0; i < ncl; i++) {
		unsigned char *q;

		sp_dwarfidx_cluster(x, i, &c, &d);
		fc[i].lo = c.lo;
		fc[i].hi = c.hi;
		fc[i].cu_first = h.ncu;
		fc[i].ncu = c.ncu;
		memcpy(cu + h.ncu, c.cu_off, c.ncu * 8);
		h.ncu += c.ncu;
		if (!c.part)
			continue;
		q = encode_part(p, &d, blens[i]);
		fc[i].part_off = (uint64_t)(p - buf);
		fc[i].part_size = (uint64_t)(q - p);
		fc[i].part_sum = sum64(0, p, q - p);
		p = q;
	}
	memcpy(buf, &h, sizeof(h));
	h.sum = sum64(0, buf, sizeof(h) + ncl * sizeof(*fc) + h.ncu * 8);
	memcpy(buf, &h, sizeof(h));
	free(blens);
	*size = total;
	return buf;
}

/* ---- decoding: everything checked before use ---- */

struct sp_dwarfidx *sp_symcache_decode(const void *map, size_t size,
				       const struct sp_symcache_key *k, const char **why)
{
	const unsigned char *base = map;
	struct sp_dwarfidx_cluster *cl = NULL;
	struct sp_dwarfidx_part *parts = NULL;
	const struct file_cluster *fc;
	struct sp_dwarfidx *x = NULL;
	struct file_header h;
	uint64_t i, table, sum;

	if (size < sizeof(h)) {
		*why = "shorter than its header";
		return NULL;
	}
	memcpy(&h, base, sizeof(h));
	if (memcmp(h.magic, MAGIC, 8)) {
		*why = "not a symbol cache file";
		return NULL;
	}
	if (h.version != SP_SYMCACHE_VERSION || h.bom != BOM) {
		*why = "another format version";
		return NULL;
	}
	if (h.header_size != sizeof(h) || h.file_size != size) {
		*why = h.file_size > size ? "truncated" : "its size is not the recorded one";
		return NULL;
	}
	if (h.build_id_len != k->build_id_len ||
	    memcmp(h.build_id, k->build_id, k->build_id_len) || h.text_lo != k->text_lo ||
	    h.text_hi != k->text_hi) {
		*why = "made for another file";
		return NULL;
	}
	if (h.nclusters == 0 || h.nclusters > (size - sizeof(h)) / sizeof(*fc) ||
	    h.ncu > (size - sizeof(h) - h.nclusters * sizeof(*fc)) / 8) {
		*why = "counts larger than the file";
		return NULL;
	}
	table = sizeof(h) + h.nclusters * sizeof(*fc) + h.ncu * 8;
	sum = h.sum;
	h.sum = 0;
	if (checksums_checked() &&
	    sum64(sum64(0, &h, sizeof(h)), base + sizeof(h), table - sizeof(h)) != sum) {
		*why = "checksum mismatch";
		return NULL;
	}
	fc = (const struct file_cluster *)(base + sizeof(h));
	/* As many as the file says, up to 4 GiB of it: not fatal (symcache.h). */
	cl = calloc(h.nclusters, sizeof(*cl));
	parts = calloc(h.nclusters, sizeof(*parts));
	if (!cl || !parts) {
		*why = "out of memory";
		goto out;
	}
	for (i = 0; i < h.nclusters; i++) {
		struct file_cluster f;
		struct file_part fp;

		memcpy(&f, &fc[i], sizeof(f));
		if (f.cu_first > h.ncu || f.ncu > h.ncu - f.cu_first) {
			*why = "a cluster's units out of range";
			goto out;
		}
		cl[i].lo = f.lo;
		cl[i].hi = f.hi;
		cl[i].ncu = f.ncu;
		cl[i].cu_off = (const uint64_t *)(base + sizeof(h) + h.nclusters * sizeof(*fc)) +
			       f.cu_first;
		if (!f.part_size)
			continue;
		if (f.part_off < table || f.part_off % 8 || f.part_off > size ||
		    f.part_size > size - f.part_off || f.part_size < sizeof(fp)) {
			*why = "a cluster's part out of the file";
			goto out;
		}
		memcpy(&fp, base + f.part_off, sizeof(fp));
		if (fp.nnodes > f.part_size || fp.nsegs > f.part_size ||
		    fp.nrows > f.part_size || fp.nstrs > f.part_size ||
		    fp.blob_len > f.part_size || part_size(&fp) != f.part_size) {
			*why = "a part's counts do not match its size";
			goto out;
		}
		if (checksums_checked() && sum64(0, base + f.part_off, f.part_size) != f.part_sum) {
			*why = "checksum mismatch";
			goto out;
		}
		part_arrays(base + f.part_off, &fp, &parts[i]);
		cl[i].part = &parts[i];
	}
	x = sp_dwarfidx_import(h.text_lo, h.text_hi, cl, h.nclusters, h.units, h.bad, why);
out:
	free(cl);
	free(parts);
	return x;
}

/* ---- files ---- */

char *sp_symcache_default_dir(void)
{
	return sp_cache_dir("symbols");
}

struct sp_symcache *sp_symcache_new(const char *dir)
{
	struct sp_symcache *c = sp_xcalloc(1, sizeof(*c));

	c->dir = sp_xstrdup(dir);
	return c;
}

void sp_symcache_free(struct sp_symcache *c)
{
	if (!c)
		return;
	free(c->dir);
	free(c);
}

/* The file's path (for messages), and its name in the directory. */
static char *entry_path(const struct sp_symcache *c, const struct sp_symcache_key *k,
			const char **name)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];
	char *p;

	if (!k->build_id_len || k->build_id_len > SP_BUILD_ID_MAX)
		return NULL;
	sp_buildid_hex(k->build_id, k->build_id_len, hex);
	p = sp_xstrfmt("%s/%s-%llx-%llx.idx", c->dir, hex, (unsigned long long)k->text_lo,
		       (unsigned long long)k->text_hi);
	*name = p + strlen(c->dir) + 1;
	return p;
}

static void unmap(void *arg)
{
	struct mapping *m = arg;

	munmap(m->p, m->size);
	free(m);
}

struct sp_dwarfidx *sp_symcache_load(struct sp_symcache *c, const struct sp_symcache_key *k)
{
	/* Only our own (or root's) private regular file, in a directory that
	 * is ours: another user's file could name functions as it likes. */
	struct sp_safe_want w = {
		SP_SAFE_NOFOLLOW | SP_SAFE_OWNER | SP_SAFE_PRIVATE, geteuid(), MAX_FILE
	};
	struct sp_dwarfidx *x = NULL;
	struct mapping *m = NULL;
	const char *why = NULL, *name;
	char *path = entry_path(c, k, &name);
	struct stat st;
	void *p;
	int fd, dfd;

	if (!path)
		return NULL;
	dfd = c->dir_refused ? -1 : sp_cache_dir_open(c->dir, false);
	if (dfd < 0) {
		if (errno == EPERM)
			c->dir_refused = true;	/* sp_cache_dir_open() said why */
		free(path);
		return NULL;
	}
	fd = sp_safe_open(dfd, name, &w, &st, &why);
	close(dfd);
	if (fd < 0) {
		if (why)
			sp_warn("cache '%s': %s%s", path, why,
				strcmp(why, "too large") ? "" : " (over 4 GiB)");
		else if (errno != ENOENT && errno != ENOTDIR)
			sp_warn("cache '%s': cannot open: %s", path, strerror(errno));
		free(path);
		return NULL;
	}
	if (!st.st_size) {
		why = "empty";
		goto out;
	}
	/* Populated: every page is read by the checks anyway, faulting one by one is slower. */
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED) {
		sp_warn("cache '%s': mmap: %s", path, strerror(errno));
		goto out;
	}
	x = sp_symcache_decode(p, st.st_size, k, &why);
	if (!x) {
		munmap(p, st.st_size);
		if (!why)
			why = "out of memory";
		goto out;
	}
	m = sp_xmalloc(sizeof(*m));
	m->p = p;
	m->size = st.st_size;
	sp_dwarfidx_set_release(x, unmap, m);
out:
	if (!x && why && strcmp(why, "another format version"))
		sp_warn("cache '%s': %s", path, why);
	else if (!x && why)
		sp_info("cache '%s': %s: it will be replaced", path, why);
	close(fd);
	free(path);
	return x;
}

int sp_symcache_save(struct sp_symcache *c, const struct sp_symcache_key *k,
		     const struct sp_dwarfidx *x)
{
	unsigned char *buf = NULL;
	struct sp_safe_tmp t;
	const char *name;
	char *path = NULL;
	int dfd = -1, rc = -1;
	size_t size = 0;

	if (c->write_failed || c->dir_refused)
		return -1;
	path = entry_path(c, k, &name);
	if (!path)
		return -1;
	buf = sp_symcache_encode(k, x, &size);
	if (!buf) {
		sp_warn("cache '%s': cannot encode the index: %s", path, strerror(errno));
		goto out;
	}
	/* The directories made and checked without following others' links;
	 * the file made anew, never written through a name others chose. */
	dfd = sp_cache_dir_open(c->dir, true);
	if (dfd < 0 || sp_safe_tmp_open(&t, dfd, 0600) < 0) {
		if (dfd < 0 && errno == EPERM)
			c->dir_refused = true;	/* sp_cache_dir_open() said why */
		else
			sp_warn("cache '%s': cannot create files there: %s", c->dir,
				strerror(errno));
		c->write_failed = true;
		goto out;
	}
	if (sp_safe_write_all(t.fd, buf, size) < 0) {
		sp_warn("cache '%s': write: %s", path, strerror(errno));
		sp_safe_tmp_abort(&t);
		goto out;
	}
	if (sp_safe_tmp_commit(&t, name) < 0) {
		sp_warn("cache '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	free(buf);
	free(path);
	return rc;
}
