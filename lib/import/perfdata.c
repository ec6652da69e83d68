// SPDX-License-Identifier: MIT
/*
 * Reading a perf.data file (perfdata.h, perfdataP.h): the file header and
 * its attributes (file mode) or the pipe header (pipe mode), the records
 * one by one through a bounded buffer, and their dispatch by type. perf's
 * own record types (64 and up) that carry nothing a stream shows are
 * counted and skipped, with the bytes some of them carry after the record
 * (tracing data, AUX trace data).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdataP.h"
#include "safefile.h"
#include "sp.h"

#define PD_MAGIC 0x32454c4946524550ull		/* "PERFILE2" */
#define PD_MAGIC_SWAPPED 0x50455246494c4532ull
#define PD_BUF (256u << 10)
#define PD_FILE_HEADER 104			/* with the 256 feature bits */

int pd_fail(struct pd *p, uint64_t off, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return sp_error("%s@%" PRIu64 ": %s", p->name, off, msg);
}

int pd_pread(struct pd *p, uint64_t off, void *dst, size_t n)
{
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		r = pread(p->fd, (uint8_t *)dst + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sp_error_errno("cannot read '%s'", p->name);
		if (r == 0)
			return pd_fail(p, off + done, "the file ends %zu bytes early", n - done);
		done += (size_t)r;
	}
	return 0;
}

/* Make n bytes available at buf[pos]. 1, 0 at the end of the input, -1. */
static int fill(struct pd *p, size_t n)
{
	ssize_t r;

	if (p->len - p->pos >= n)
		return 1;
	memmove(p->buf, p->buf + p->pos, p->len - p->pos);
	p->len -= p->pos;
	p->pos = 0;
	while (p->len < n && !p->eof) {
		r = read(p->fd, p->buf + p->len, PD_BUF - p->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sp_error_errno("cannot read '%s'", p->name);
		if (r == 0)
			p->eof = true;
		p->len += (size_t)r;
	}
	return p->len >= n ? 1 : 0;
}

static void consume(struct pd *p, size_t n)
{
	p->pos += n;
	p->off += n;
}

/* Skip n bytes that follow a record (tracing or AUX data), bounded by time only. */
static int skip_bytes(struct pd *p, uint64_t n)
{
	size_t k;
	int r;

	if (p->end != UINT64_MAX && n > p->end - p->off)
		return pd_fail(p, p->off, "%" PRIu64 " bytes of data run past the data section", n);
	while (n) {
		k = n < PD_BUF ? (size_t)n : PD_BUF;
		r = fill(p, k);
		if (r < 0)
			return -1;
		if (!r)
			return pd_fail(p, p->off, "the file ends inside %" PRIu64 " bytes of data", n);
		consume(p, k);
		n -= k;
	}
	return 0;
}

/* The next record into p->rec: its size, 0 at the end, -1 on error. */
/* The file ends inside the record at p->off. */
static int cut_short(struct pd *p)
{
	size_t n = p->len - p->pos;

	return pd_fail(p, p->off, "record cut short (the file ends %zu byte%s into it)", n,
		       n == 1 ? "" : "s");
}

static int next_record(struct pd *p)
{
	struct perf_event_header h;
	int r;

	if (p->end != UINT64_MAX && p->off >= p->end)
		return 0;
	r = fill(p, sizeof(h));
	if (r <= 0) {
		if (r == 0 && p->len - p->pos)
			return cut_short(p);
		return r;
	}
	memcpy(&h, p->buf + p->pos, sizeof(h));
	if (h.size < sizeof(h))
		return pd_fail(p, p->off, "record of type %u is %u bytes long, shorter than its header",
			       h.type, h.size);
	if (p->end != UINT64_MAX && h.size > p->end - p->off)
		return pd_fail(p, p->off, "record of %u bytes runs past the data section", h.size);
	r = fill(p, h.size);
	if (r < 0)
		return -1;
	if (!r)
		return cut_short(p);
	memcpy(p->rec, p->buf + p->pos, h.size);
	p->rec_off = p->off;
	consume(p, h.size);
	return h.size;
}

/* An attribute (size bytes at a) into its index, with its sample ids. */
static int add_attr(struct pd *p, const uint8_t *a, size_t size, uint64_t off)
{
	struct perf_event_attr at = { 0 };
	struct pd_attr *x;

	if (size < PERF_ATTR_SIZE_VER0)
		return pd_fail(p, off, "event attribute of %zu bytes is too short", size);
	if (p->nattrs >= PD_MAX_ATTRS)
		return pd_fail(p, off, "more than %u events", PD_MAX_ATTRS);
	memcpy(&at, a, size < sizeof(at) ? size : sizeof(at));
	sp_grow(&p->attrs, &p->attrs_cap, p->nattrs + 1, sizeof(*p->attrs));
	x = &p->attrs[p->nattrs++];
	memset(x, 0, sizeof(*x));
	x->type = at.type;
	x->config = at.config;
	x->sample_type = at.sample_type;
	x->read_format = at.read_format;
	x->branch_sample_type = at.branch_sample_type;
	x->sample_period = at.sample_period;
	memcpy(&x->flags, a + 40, 8);
	x->regs_user = at.sample_regs_user;
	x->regs_intr = at.sample_regs_intr;
	if (at.use_clockid && p->clockid < 0)
		p->clockid = at.clockid;
	pd_attr_setup(x);
	return 0;
}

static int add_id(struct pd *p, uint64_t id, uint64_t off)
{
	if (p->ids.n >= PD_MAX_IDS)
		return pd_fail(p, off, "more than %u sample ids", PD_MAX_IDS);
	sp_u64map_put(&p->ids, id, p->nattrs - 1);
	return 0;
}

/* Where the sample id is, once every attribute is known. */
static void id_positions(struct pd *p)
{
	uint64_t st = p->nattrs ? p->attrs[0].sample_type : 0;

	p->id_sample_type = st;
	p->id_pos = p->id_pos_other = -1;
	if (st & PERF_SAMPLE_IDENTIFIER) {
		p->id_pos = 0;
		p->id_pos_other = 1;
	} else if (st & PERF_SAMPLE_ID) {
		p->id_pos = !!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) +
			    !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ADDR);
		p->id_pos_other = 1 + !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU);
	}
}

const struct pd_attr *pd_attr_of_sample(const struct pd *p, const uint8_t *rec, size_t size)
{
	uint64_t *v;

	if (p->nattrs == 1 || p->id_pos < 0)
		return p->nattrs ? &p->attrs[0] : NULL;
	if (8 + 8 * (size_t)(p->id_pos + 1) > size)
		return NULL;
	v = sp_u64map_get(&p->ids, pd_u64(rec + 8 + 8 * p->id_pos));
	return v ? &p->attrs[*v] : NULL;
}

uint64_t pd_other_time(const struct pd *p, const uint8_t *rec, size_t size)
{
	uint64_t st = p->id_sample_type;
	size_t back;

	if (!p->nattrs || !(p->attrs[0].flags & PD_ATTR_SAMPLE_ID_ALL) || !(st & PERF_SAMPLE_TIME))
		return 0;
	back = 1 + !!(st & PERF_SAMPLE_ID) + !!(st & PERF_SAMPLE_STREAM_ID) +
	       !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_IDENTIFIER);
	if (8 + 8 * back > size)
		return 0;
	return pd_u64(rec + size - 8 * back);
}

/* File mode: the header, the attributes and their ids, the features. */
static int read_file_header(struct pd *p)
{
	uint8_t h[PD_FILE_HEADER], *a;
	uint64_t attr_size, attrs_off, attrs_size, data_off, data_size, n, i, j, ids_off, ids_size, id;
	uint64_t bits[4];
	struct stat st;

	if (fstat(p->fd, &st))
		return sp_error_errno("cannot stat '%s'", p->name);
	if (pd_pread(p, 0, h, sizeof(h)))
		return -1;
	if (pd_u64(h + 8) < sizeof(h))
		return pd_fail(p, 8, "header of %" PRIu64 " bytes is too short", pd_u64(h + 8));
	attr_size = pd_u64(h + 16);
	attrs_off = pd_u64(h + 24);
	attrs_size = pd_u64(h + 32);
	data_off = pd_u64(h + 40);
	data_size = pd_u64(h + 48);
	memcpy(bits, h + 72, sizeof(bits));
	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > PD_ATTR_MAX)
		return pd_fail(p, 16, "event attribute size %" PRIu64 " is not plausible", attr_size);
	if (attrs_off > (uint64_t)st.st_size || attrs_size > (uint64_t)st.st_size - attrs_off)
		return pd_fail(p, 24, "the attribute section lies outside the file");
	if (data_off > (uint64_t)st.st_size || data_size > (uint64_t)st.st_size - data_off)
		return pd_fail(p, 40, "the data section lies outside the file");
	n = attrs_size / attr_size;
	if (n > PD_MAX_ATTRS)
		return pd_fail(p, 32, "more than %u events", PD_MAX_ATTRS);
	a = sp_xmalloc(attr_size);
	for (i = 0; i < n; i++) {
		uint64_t off = attrs_off + i * attr_size;

		if (pd_pread(p, off, a, attr_size) ||
		    add_attr(p, a, attr_size - 16, off))
			goto fail;
		ids_off = pd_u64(a + attr_size - 16);
		ids_size = pd_u64(a + attr_size - 8);
		if (ids_off > (uint64_t)st.st_size || ids_size > (uint64_t)st.st_size - ids_off ||
		    ids_size / 8 > PD_MAX_IDS) {
			pd_fail(p, off + attr_size - 16, "the ids of event %" PRIu64 " lie outside the file", i);
			goto fail;
		}
		for (j = 0; j < ids_size / 8; j++) {
			if (pd_pread(p, ids_off + 8 * j, &id, 8) || add_id(p, id, ids_off + 8 * j))
				goto fail;
		}
	}
	free(a);
	if (!p->nattrs)
		return pd_fail(p, 24, "no events");
	id_positions(p);
	p->off = data_off;
	p->end = data_off + data_size;
	if (!data_size && (uint64_t)st.st_size > data_off) {
		/* perf was stopped before it wrote the sizes and the features. */
		sp_warn("%s: the header gives no data size (perf record did not finish?): "
			"reading records to the end of the file, without its features", p->name);
		p->end = (uint64_t)st.st_size;
	} else if (pd_read_features(p, data_off + data_size, (uint64_t)st.st_size, bits)) {
		return -1;
	}
	if (lseek(p->fd, (off_t)data_off, SEEK_SET) < 0)
		return sp_error_errno("cannot seek in '%s'", p->name);
	return 0;
fail:
	free(a);
	return -1;
}

/* Pipe mode: an attribute record, with its ids after it. */
static int on_header_attr(struct pd *p, const uint8_t *rec, size_t size)
{
	uint32_t asize;
	size_t i;

	if (size < 8 + PERF_ATTR_SIZE_VER0)
		return pd_fail(p, p->rec_off, "attribute record is too short");
	asize = pd_u32(rec + 8 + 4);
	if (asize < PERF_ATTR_SIZE_VER0 || asize > size - 8)
		return pd_fail(p, p->rec_off, "attribute of %u bytes in a record of %zu", asize, size);
	if (add_attr(p, rec + 8, asize, p->rec_off + 8))
		return -1;
	for (i = 8 + asize; i + 8 <= size; i += 8) {
		if (add_id(p, pd_u64(rec + i), p->rec_off + i))
			return -1;
	}
	id_positions(p);
	return 0;
}

static void unknown(struct pd *p, unsigned int type)
{
	p->st->unknown_records++;
	if (type < SP_PERFDATA_NTYPES && p->said_unknown[type])
		return;
	if (type < SP_PERFDATA_NTYPES)
		p->said_unknown[type] = true;
	sp_info("%s@%" PRIu64 ": records of type %u are not read (skipped and counted)",
			p->name, p->rec_off, type);
}

/* perf's own records (64 and up). 0, or -1 on a fatal error. */
static int on_user_record(struct pd *p, unsigned int type, const uint8_t *rec, size_t size)
{
	switch (type) {
	case PD_HEADER_ATTR:
		return on_header_attr(p, rec, size);
	case PD_HEADER_TRACING_DATA:
		if (size < 12)
			return pd_fail(p, p->rec_off, "tracing data record is too short");
		return skip_bytes(p, pd_u32(rec + 8));
	case PD_AUXTRACE:
		unknown(p, type);
		if (size < 16)
			return pd_fail(p, p->rec_off, "AUX trace record is too short");
		return skip_bytes(p, pd_u64(rec + 8));
	case PD_HEADER_BUILD_ID:
		pd_build_id_record(p, rec, size);
		return 0;
	case PD_HEADER_FEATURE:
		if (size < 16)
			return pd_fail(p, p->rec_off, "feature record is too short");
		return pd_feature(p, (unsigned int)(pd_u64(rec + 8) < PD_FEAT_BITS ?
					pd_u64(rec + 8) : PD_FEAT_BITS - 1),
				  rec + 16, size - 16, p->rec_off + 16);
	case PD_FINISHED_ROUND:
		return pd_round(p);
	case PD_FINISHED_INIT:
	case PD_ID_INDEX:
	case PD_THREAD_MAP:
	case PD_CPU_MAP:
	case PD_TIME_CONV:
	case PD_EVENT_UPDATE:
	case PD_HEADER_EVENT_TYPE:
		return 0;	/* nothing a stream shows */
	default:
		unknown(p, type);
		return 0;
	}
}

static int dispatch(struct pd *p, const uint8_t *rec, size_t size)
{
	struct perf_event_header h;

	memcpy(&h, rec, sizeof(h));
	p->st->records++;
	p->st->bytes += size;
	p->st->type[h.type < SP_PERFDATA_NTYPES ? h.type : SP_PERFDATA_NTYPES - 1]++;
	if (h.type >= 64)
		return on_user_record(p, h.type, rec, size);
	if (!p->header_done && pd_write_header(p))
		return -1;
	return pd_queue(p, rec, size);
}

/* A record of the kernel's, in time order. 0, or -1 on a fatal error. */
int pd_dispatch_kernel(struct pd *p, const uint8_t *rec, size_t size)
{
	struct perf_event_header h;

	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		pd_on_sample(p, rec, size, h.misc);
		break;
	case PERF_RECORD_MMAP:
		pd_on_mmap(p, rec, size, false, h.misc);
		break;
	case PERF_RECORD_MMAP2:
		pd_on_mmap(p, rec, size, true, h.misc);
		break;
	case PERF_RECORD_COMM:
		pd_on_comm(p, rec, size, h.misc);
		break;
	case PERF_RECORD_FORK:
		pd_on_fork(p, rec, size);
		break;
	case PERF_RECORD_EXIT:
		pd_on_exit(p, rec, size);
		break;
	case PERF_RECORD_LOST:
		pd_on_lost(p, rec, size);
		break;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
	case PERF_RECORD_KSYMBOL:
	case PERF_RECORD_BPF_EVENT:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_NAMESPACES:
	case PERF_RECORD_CGROUP:
		break;	/* understood, nothing a stream shows */
	default:
		unknown(p, h.type);
		break;
	}
	return sp_writer_errno(p->w) ? -1 : 0;
}

static int open_input(struct pd *p, const char *path)
{
	static const struct sp_safe_want want = { 0 };
	const char *why = NULL;
	struct stat st;

	if (!strcmp(path, "-")) {
		p->fd = STDIN_FILENO;
		p->name = "<stdin>";
		return 0;
	}
	p->name = path;
	p->fd = sp_safe_open(AT_FDCWD, path, &want, &st, &why);
	if (p->fd < 0 && errno == EPERM) {
		/* A FIFO: perf record -o - | sp-decode --from=perf /dev/stdin */
		p->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (p->fd >= 0 && (fstat(p->fd, &st) || S_ISDIR(st.st_mode))) {
			close(p->fd);
			errno = EISDIR;
			p->fd = -1;
		}
	}
	if (p->fd < 0)
		return sp_error_errno("cannot open '%s'%s%s", path, why ? ": " : "", why ? why : "");
	return 0;
}

/* Magic and mode from the first 16 bytes. */
static int read_magic(struct pd *p)
{
	uint64_t magic, size;
	int r = fill(p, 16);

	if (r < 0)
		return -1;
	if (!r)
		return pd_fail(p, 0, "not a perf.data file (%zu bytes)", p->len);
	magic = pd_u64(p->buf);
	size = pd_u64(p->buf + 8);
	if (magic == PD_MAGIC_SWAPPED)
		return pd_fail(p, 0, "perf.data of a big-endian machine is not supported");
	if (magic != PD_MAGIC)
		return pd_fail(p, 0, "not a perf.data file (no PERFILE2 magic)");
	p->pipe = size == 16;
	p->st->pipe = p->pipe;
	if (p->pipe) {
		consume(p, 16);
		p->end = UINT64_MAX;
		return 0;
	}
	if (lseek(p->fd, 0, SEEK_CUR) < 0)
		return pd_fail(p, 8, "a file-mode perf.data cannot be read from a pipe "
			       "(record with -o - for pipe mode)");
	p->pos = p->len = 0;
	p->eof = false;
	return read_file_header(p);
}

static void pd_free(struct pd *p)
{
	size_t i = 0;
	uint64_t k, v;

	while (sp_u64map_next(&p->files, &i, &k, &v)) {
		struct pd_file *f = (struct pd_file *)(uintptr_t)v;

		free(f->path);
		free(f);
	}
	sp_u64map_release(&p->files);
	sp_u64map_release(&p->mods);
	sp_u64map_release(&p->ids);
	pd_queue_free(p);
	pd_procs_free(p);
	pd_ksyms_free(p);
	if (p->unw)
		sp_unwinder_free(p->unw);
	sp_buf_release(&p->hostname);
	sp_buf_release(&p->osrelease);
	sp_buf_release(&p->arch);
	sp_buf_release(&p->version);
	sp_buf_release(&p->cmdline);
	free(p->attrs);
	free(p->buf);
	free(p->rec);
}

int sp_perfdata_import(const char *path, struct sp_writer *w,
		       const struct sp_perfdata_opts *o, struct sp_perfdata_stats *st)
{
	static const struct sp_perfdata_opts none = { 0 };
	struct pd p = { .w = w, .o = o ? o : &none, .st = st, .clockid = -1, .fd = -1 };
	int r = 0;

	memset(st, 0, sizeof(*st));
	p.buf = sp_xmalloc(PD_BUF);
	p.rec = sp_xmalloc(PD_REC_MAX);
	if (open_input(&p, path) || read_magic(&p)) {
		r = -1;
		goto out;
	}
	while ((r = next_record(&p)) > 0) {
		if (dispatch(&p, p.rec, (size_t)r)) {
			r = -1;
			break;
		}
	}
	/* What came before a fault is written too. */
	if (pd_flush(&p, UINT64_MAX))
		r = -1;
	if (r == 0 && !p.header_done)
		r = pd_write_header(&p);
	st->nevents = p.nattrs;
out:
	if (p.fd > STDIN_FILENO)
		close(p.fd);
	pd_free(&p);
	return r < 0 ? -1 : 0;
}
