// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/import/perfdata*.c: pipe-mode perf.data files built
 * here byte by byte, imported, and the stream read back. Mappings that
 * cut each other, a child that inherits its parent's mappings, an exec
 * whose old mappings stay until covered, records out of time order within
 * a round, a callchain longer than its record, unknown record types, and a
 * record shorter than its header.
 */
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "perfdata.h"
#include "reader.h"
#include "tap.h"

#define ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | \
	    PERF_SAMPLE_PERIOD)

static void put(struct sp_buf *b, const void *p, size_t n)
{
	sp_buf_add(b, p, n);
}

static void u64(struct sp_buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void u32(struct sp_buf *b, uint32_t v)
{
	put(b, &v, 4);
}

/* A record of type with body; id: append the sample_id (pid, tid, time). */
static void rec(struct sp_buf *f, uint32_t type, uint16_t misc, const struct sp_buf *body,
		bool id, uint32_t pid, uint64_t time)
{
	struct perf_event_header h = { type, misc, (uint16_t)(8 + body->len + (id ? 16 : 0)) };

	put(f, &h, sizeof(h));
	if (body->len)
		put(f, body->p, body->len);
	if (id) {
		u64(f, (uint64_t)pid << 32 | pid);
		u64(f, time);
	}
}

static void start(struct sp_buf *f)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
				     .sample_type = ST, .sample_period = 1, .sample_id_all = 1 };
	struct sp_buf b = SP_BUF_INIT;

	put(f, "PERFILE2", 8);
	u64(f, 16);
	put(&b, &a, sizeof(a));
	u64(&b, 1);
	rec(f, 64, 0, &b, false, 0, 0);
	sp_buf_release(&b);
}

static void mmap2(struct sp_buf *f, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  const char *path, uint64_t time)
{
	struct sp_buf b = SP_BUF_INIT;
	char name[64] = { 0 };

	u32(&b, pid);
	u32(&b, pid);
	u64(&b, start);
	u64(&b, len);
	u64(&b, pgoff);
	put(&b, (uint8_t[24]){ 0 }, 24);
	u32(&b, PROT_READ | PROT_EXEC);
	u32(&b, 0);
	strncpy(name, path, sizeof(name) - 1);
	put(&b, name, (strlen(name) + 8) & ~7ul);
	rec(f, PERF_RECORD_MMAP2, 0, &b, true, pid, time);
	sp_buf_release(&b);
}

static void task(struct sp_buf *f, uint32_t type, uint32_t pid, uint32_t ppid, uint64_t time)
{
	struct sp_buf b = SP_BUF_INIT;

	u32(&b, pid);
	u32(&b, ppid);
	u32(&b, pid);
	u32(&b, ppid);
	u64(&b, time);
	rec(f, type, 0, &b, true, pid, time);
	sp_buf_release(&b);
}

static void comm(struct sp_buf *f, uint32_t pid, const char *name, bool exec, uint64_t time)
{
	struct sp_buf b = SP_BUF_INIT;
	char n[16] = { 0 };

	u32(&b, pid);
	u32(&b, pid);
	strncpy(n, name, sizeof(n) - 1);
	put(&b, n, sizeof(n));
	rec(f, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0, &b, true, pid, time);
	sp_buf_release(&b);
}

/* A sample at ip (a one-frame user callchain); nr overrides the chain's length. */
static void sample(struct sp_buf *f, uint32_t pid, uint64_t ip, uint64_t time, uint64_t nr)
{
	struct sp_buf b = SP_BUF_INIT;

	u64(&b, ip);
	u64(&b, (uint64_t)pid << 32 | pid);
	u64(&b, time);
	u64(&b, 1);
	u64(&b, nr ? nr : 2);
	u64(&b, (uint64_t)PERF_CONTEXT_USER);
	u64(&b, ip);
	rec(f, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, &b, false, 0, 0);
	sp_buf_release(&b);
}

static void round_end(struct sp_buf *f)
{
	struct sp_buf b = SP_BUF_INIT;

	rec(f, 68, 0, &b, false, 0, 0);
}

struct got {
	unsigned int samples;
	char where[16][64];	/* per sample: "path+0xrel" of its leaf */
};

/* Import f; the samples' leaves in the order written. Returns the import's result. */
static int import(const struct sp_buf *f, struct sp_perfdata_stats *st, struct got *g)
{
	int in = memfd_create("in", 0), out = memfd_create("out", 0), r;
	struct sp_writer *w = sp_writer_new(out, "out", SP_FORMAT_SPOOL);
	struct sp_record rec;
	struct sp_reader *rd;
	char path[64];

	memset(g, 0, sizeof(*g));
	if (write(in, f->p, f->len) != (ssize_t)f->len)
		return -2;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", in);
	r = sp_perfdata_import(path, w, NULL, st);
	sp_writer_close(w);
	lseek(out, 0, SEEK_SET);
	rd = sp_reader_open_fd(out, "out");
	while (rd && sp_reader_next(rd, &rec) > 0) {
		const struct sp_defs *d = sp_reader_defs(rd);
		const struct sp_stack *s;
		const struct sp_frame *fr;
		const struct sp_module *m;

		if (rec.kind != SP_REC_SAMPLE || g->samples >= 16)
			continue;
		s = sp_defs_stack(d, rec.sample.stack);
		fr = s ? sp_defs_frame(d, s->frame) : NULL;
		m = fr && fr->module ? sp_defs_module(d, fr->module) : NULL;
		snprintf(g->where[g->samples++], 64, "%s+0x%llx", m ? sp_defs_strz(d, m->path) : "-",
			 fr ? (unsigned long long)fr->rel : 0ull);
	}
	if (!rd || sp_reader_close(rd))
		r = -3;
	close(in);
	close(out);
	return r;
}

static void test_mappings(void)
{
	struct sp_buf f = SP_BUF_INIT;
	struct sp_perfdata_stats st;
	struct got g;

	start(&f);
	comm(&f, 10, "app", true, 100);
	mmap2(&f, 10, 0x10000, 0x4000, 0, "/nonexistent/a", 110);
	mmap2(&f, 10, 0x11000, 0x1000, 0x2000, "/nonexistent/b", 120);	/* cuts a in two */
	sample(&f, 10, 0x10800, 200, 0);
	sample(&f, 10, 0x11800, 210, 0);
	sample(&f, 10, 0x13800, 220, 0);	/* a's tail keeps its file offset */
	task(&f, PERF_RECORD_FORK, 11, 10, 230);
	sample(&f, 11, 0x13800, 240, 0);	/* the child's copy */
	comm(&f, 11, "other", true, 250);	/* exec: the old image stays until covered */
	sample(&f, 11, 0x10800, 260, 0);
	mmap2(&f, 11, 0x10000, 0x1000, 0, "/nonexistent/c", 270);
	sample(&f, 11, 0x10800, 280, 0);
	task(&f, PERF_RECORD_EXIT, 11, 10, 290);
	CHECK(import(&f, &st, &g) == 0);
	CHECK(g.samples == 6);
	CHECK(!strcmp(g.where[0], "/nonexistent/a+0x800"));
	CHECK(!strcmp(g.where[1], "/nonexistent/b+0x2800"));
	CHECK(!strcmp(g.where[2], "/nonexistent/a+0x3800"));
	CHECK(!strcmp(g.where[3], "/nonexistent/a+0x3800"));
	CHECK(!strcmp(g.where[4], "/nonexistent/a+0x800"));
	CHECK(!strcmp(g.where[5], "/nonexistent/c+0x800"));
	CHECK(st.processes == 2 && st.modules == 3 && st.samples == 6);
	sp_buf_release(&f);
}

/* Within a round, a child's sample before its FORK in the file: put in time order. */
static void test_order(void)
{
	struct sp_buf f = SP_BUF_INIT;
	struct sp_perfdata_stats st;
	struct got g;

	start(&f);
	mmap2(&f, 10, 0x10000, 0x1000, 0, "/nonexistent/a", 110);
	round_end(&f);
	sample(&f, 11, 0x10800, 300, 0);
	task(&f, PERF_RECORD_FORK, 11, 10, 200);
	round_end(&f);
	round_end(&f);
	CHECK(import(&f, &st, &g) == 0);
	CHECK(g.samples == 1);
	CHECK(!strcmp(g.where[0], "/nonexistent/a+0x800"));
	sp_buf_release(&f);
}

static void test_bad(void)
{
	struct sp_buf f = SP_BUF_INIT;
	struct sp_perfdata_stats st;
	struct sp_buf b = SP_BUF_INIT;
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 4 };
	struct got g;

	start(&f);
	mmap2(&f, 10, 0x10000, 0x1000, 0, "/nonexistent/a", 110);
	sample(&f, 10, 0x10800, 200, 1ull << 60);	/* a callchain past its record */
	u64(&b, 42);
	rec(&f, 120, 0, &b, false, 0, 0);		/* a type nobody knows */
	sample(&f, 10, 0x10800, 210, 0);
	CHECK(import(&f, &st, &g) == 0);
	CHECK(g.samples == 1 && st.bad_samples == 1 && st.unknown_records == 1);
	put(&f, &h, sizeof(h));				/* shorter than its header */
	CHECK(import(&f, &st, &g) == -1);
	CHECK(g.samples == 1);				/* what came before is written */
	sp_buf_release(&f);
	sp_buf_release(&b);
}

int main(void)
{
	sp_progname = "test-perfdata";
	TAP_RUN(test_mappings);
	TAP_RUN(test_order);
	TAP_RUN(test_bad);
	return TAP_DONE();
}
