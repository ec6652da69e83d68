// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/perf_ring.c: draining a ring (records that wrap around
 * its end, a torn ring) and decoding samples and sample_id trailers, on
 * rings built in memory; the attribute bits every recording event sets. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "perf_ring.h"

#define RING 256

static struct perf_event_mmap_page meta;
static uint8_t data[RING];

/* Write a record of n u64 words (header included) at the ring's head. */
static void put(uint32_t type, const uint64_t *words, unsigned int n)
{
	struct perf_event_header h = { .type = type, .misc = 0, .size = (uint16_t)(8 * (n + 1)) };
	uint8_t buf[512];
	uint64_t i, head = meta.data_head;

	memcpy(buf, &h, 8);
	memcpy(buf + 8, words, 8 * n);
	for (i = 0; i < h.size; i++)
		data[(head + i) % RING] = buf[i];
	meta.data_head = head + h.size;
}

static void test_perf_ring_wrap(void)
{
	struct sp_perf_ring r;
	const struct perf_event_header *h;
	uint64_t w[20];
	unsigned int i, n = 0;

	memset(&meta, 0, sizeof(meta));
	/* Start near the end so the third record wraps. */
	meta.data_head = meta.data_tail = RING - 40;
	sp_perf_ring_init(&r, &meta, data, RING);
	for (i = 0; i < 20; i++)
		w[i] = 1000 + i;
	put(PERF_RECORD_SAMPLE, w, 1);		/* 16 bytes */
	put(PERF_RECORD_LOST, w, 1);		/* 16 bytes: 8 left before the end */
	put(PERF_RECORD_COMM, w, 5);		/* 48 bytes, wraps */
	CHECK_EQ_U(sp_perf_ring_begin(&r), 80);
	while ((h = sp_perf_ring_next(&r))) {
		const uint64_t *p = (const uint64_t *)(h + 1);

		n++;
		if (n == 3) {
			CHECK_EQ_U(h->type, PERF_RECORD_COMM);
			CHECK_EQ_U(h->size, 48);
			for (i = 0; i < 5; i++)
				CHECK_EQ_U(p[i], 1000 + i);
		}
	}
	CHECK_EQ_U(n, 3);
	sp_perf_ring_end(&r);
	CHECK_EQ_U(meta.data_tail, meta.data_head);
	/* Nothing more until the kernel writes again. */
	CHECK_EQ_U(sp_perf_ring_begin(&r), 0);
	CHECK(sp_perf_ring_next(&r) == NULL);
	CHECK_EQ_U(r.bad, 0);
	free(r.copy);
}

static void test_perf_ring_torn(void)
{
	struct sp_perf_ring r;
	uint64_t w[2] = { 1, 2 };

	memset(&meta, 0, sizeof(meta));
	memset(data, 0, sizeof(data));
	sp_perf_ring_init(&r, &meta, data, RING);
	put(PERF_RECORD_SAMPLE, w, 2);
	/* A header claiming more bytes than there are: skipped, counted. */
	data[6] = 0xff;
	CHECK_EQ_U(sp_perf_ring_begin(&r), 24);
	CHECK(sp_perf_ring_next(&r) == NULL);
	CHECK_EQ_U(r.bad, 1);
	CHECK_EQ_U(r.tail, r.head);
	/* A head more than a ring ahead (cannot happen): resynchronised. */
	meta.data_head += 4 * RING;
	sp_perf_ring_begin(&r);
	CHECK_EQ_U(r.bad, 2);
	CHECK_EQ_U(r.tail, meta.data_head);
}

static void test_perf_ring_parse_sample(void)
{
	uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
		      PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
		      PERF_SAMPLE_STACK_USER | PERF_SAMPLE_CGROUP;
	uint64_t rec[32];
	struct perf_event_header *h = (void *)rec;
	struct sp_perf_sample s;
	unsigned int n = 1;

	rec[n++] = 0x401234;				/* ip */
	rec[n++] = (uint64_t)77 << 32 | 42;		/* pid 42, tid 77 */
	rec[n++] = 123456789;				/* time */
	rec[n++] = 1;					/* cpu */
	rec[n++] = 1000000;				/* period */
	rec[n++] = 3;					/* callchain nr */
	rec[n++] = (uint64_t)PERF_CONTEXT_USER;
	rec[n++] = 0x401234;
	rec[n++] = 0x401500;
	rec[n++] = PERF_SAMPLE_REGS_ABI_64;		/* abi, then 2 registers */
	rec[n++] = 0xaa;
	rec[n++] = 0xbb;
	rec[n++] = 16;					/* stack size */
	rec[n++] = 0x1111;
	rec[n++] = 0x2222;
	rec[n++] = 8;					/* dyn size */
	rec[n++] = 5668;				/* cgroup id */
	h->type = PERF_RECORD_SAMPLE;
	h->misc = 0;
	h->size = (uint16_t)(8 * n);
	CHECK(sp_perf_parse_sample(h, st, 2, &s) == 0);
	CHECK_EQ_U(s.ip, 0x401234);
	CHECK_EQ_U(s.pid, 42);
	CHECK_EQ_U(s.tid, 77);
	CHECK_EQ_U(s.time, 123456789);
	CHECK_EQ_U(s.cpu, 1);
	CHECK_EQ_U(s.period, 1000000);
	CHECK_EQ_U(s.nr, 3);
	CHECK_EQ_U(s.ips[2], 0x401500);
	CHECK_EQ_U(s.nregs, 2);
	CHECK_EQ_U(s.regs[1], 0xbb);
	CHECK_EQ_U(s.stack_size, 16);
	CHECK_EQ_U(s.stack_dyn_size, 8);
	CHECK_EQ_U(((const uint64_t *)s.stack)[1], 0x2222);
	CHECK_EQ_U(s.cgroup, 5668);

	/* Cut short anywhere: refused, never read past the record. */
	for (unsigned int cut = 2; cut < n; cut++) {
		h->size = (uint16_t)(8 * cut);
		CHECK(sp_perf_parse_sample(h, st, 2, &s) == -1);
	}
	/* A callchain longer than the record. */
	h->size = (uint16_t)(8 * n);
	rec[6] = 1000;
	CHECK(sp_perf_parse_sample(h, st, 2, &s) == -1);
	/* A sample_type bit it does not understand. */
	CHECK(sp_perf_parse_sample(h, st | PERF_SAMPLE_RAW, 2, &s) == -1);
}

/* A sample's copy keeps the stack bytes the kernel wrote (dyn_size rounded
 * up to 8) and every field around them; anything else is copied whole. */
static void test_perf_ring_record_dup(void)
{
	uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
		      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_CGROUP;
	uint64_t rec[32], t;
	struct perf_event_header *h = (void *)rec, *c;
	struct sp_perf_sample s;
	unsigned int n = 1, i;

	rec[n++] = 0x401234;				/* ip */
	rec[n++] = (uint64_t)77 << 32 | 42;		/* pid 42, tid 77 */
	rec[n++] = 987654321;				/* time */
	rec[n++] = PERF_SAMPLE_REGS_ABI_64;		/* abi, then 2 registers */
	rec[n++] = 0xaa;
	rec[n++] = 0xbb;
	rec[n++] = 40;					/* stack size */
	for (i = 0; i < 5; i++)
		rec[n++] = 0x1000 + i;
	rec[n++] = 12;					/* dyn size */
	rec[n++] = 5668;				/* cgroup id */
	h->type = PERF_RECORD_SAMPLE;
	h->misc = 3;
	h->size = (uint16_t)(8 * n);

	c = sp_perf_record_dup(h, st, 2, &t);
	CHECK_EQ_U(c->size, h->size - 24);		/* 16 of the 40 bytes kept */
	CHECK_EQ_U(t, 987654321);			/* its time, parsed on the way */
	CHECK_EQ_U(c->type, PERF_RECORD_SAMPLE);
	CHECK_EQ_U(c->misc, 3);
	CHECK(sp_perf_parse_sample(c, st, 2, &s) == 0);
	CHECK_EQ_U(s.ip, 0x401234);
	CHECK_EQ_U(s.tid, 77);
	CHECK_EQ_U(s.regs[1], 0xbb);
	CHECK_EQ_U(s.stack_size, 16);
	CHECK_EQ_U(s.stack_dyn_size, 12);
	CHECK_EQ_U(((const uint64_t *)s.stack)[0], 0x1000);
	CHECK_EQ_U(((const uint64_t *)s.stack)[1], 0x1001);
	CHECK_EQ_U(s.cgroup, 5668);
	free(c);

	/* a full copy (dyn_size rounds up to the whole) stays as it is */
	rec[13] = 33;
	c = sp_perf_record_dup(h, st, 2, &t);
	CHECK_EQ_U(c->size, h->size);
	CHECK(!memcmp(c, h, h->size));
	free(c);
	/* as does one that does not parse (dyn_size beyond the copy) */
	rec[13] = 41;
	c = sp_perf_record_dup(h, st, 2, &t);
	CHECK(!memcmp(c, h, h->size));
	CHECK_EQ_U(t, 0);
	free(c);
	/* nothing written: 8 bytes kept, so that dyn_size still follows */
	rec[13] = 0;
	c = sp_perf_record_dup(h, st, 2, &t);
	CHECK_EQ_U(c->size, h->size - 32);
	CHECK(sp_perf_parse_sample(c, st, 2, &s) == 0);
	CHECK_EQ_U(s.stack_dyn_size, 0);
	CHECK_EQ_U(s.cgroup, 5668);
	free(c);
	/* a record other than a sample */
	h->type = PERF_RECORD_COMM;
	c = sp_perf_record_dup(h, st, 2, &t);
	CHECK(!memcmp(c, h, h->size));
	CHECK_EQ_U(t, 0);
	free(c);
}

static void test_perf_ring_parse_id(void)
{
	uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	uint64_t rec[8];
	struct perf_event_header *h = (void *)rec;
	struct sp_perf_id id;

	CHECK_EQ_U(sp_perf_id_size(st), 24);
	rec[1] = 0xdead;				/* the record's own body */
	rec[2] = (uint64_t)9 << 32 | 8;			/* pid 8, tid 9 */
	rec[3] = 5550000;
	rec[4] = 1;
	h->type = PERF_RECORD_COMM;
	h->size = 40;
	CHECK(sp_perf_parse_id(h, st, &id) == 0);
	CHECK_EQ_U(id.pid, 8);
	CHECK_EQ_U(id.tid, 9);
	CHECK_EQ_U(id.time, 5550000);
	CHECK_EQ_U(id.cpu, 1);
	h->size = 16;
	CHECK(sp_perf_parse_id(h, st, &id) == -1);
}

/* What every recording event asks for, and the user stack for DWARF. */
static void test_perf_ring_attr(void)
{
	struct perf_event_attr a;
	unsigned int n;

	memset(&a, 0, sizeof(a));
	sp_perf_attr_records(&a, false);
	CHECK_EQ_U(a.size, sizeof(a));
	CHECK(a.sample_id_all && a.mmap && a.mmap2 && a.comm && a.comm_exec && a.task);
	CHECK(a.use_clockid && a.clockid == CLOCK_MONOTONIC && a.inherit && a.watermark);
	CHECK(a.exclude_hv && !a.disabled && !a.enable_on_exec);
	sp_perf_attr_records(&a, true);
	CHECK(a.disabled && a.enable_on_exec);

	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_IP;
	CHECK_EQ_U(sp_perf_attr_user_stack(&a, SP_CG_FP, 4096), 0);
	CHECK_EQ_U(sp_perf_attr_user_stack(&a, SP_CG_NONE, 4096), 0);
	CHECK_EQ_U(a.sample_type, PERF_SAMPLE_IP);
	n = sp_perf_attr_user_stack(&a, SP_CG_DWARF, 0);
	CHECK_EQ_U(n, (unsigned int)__builtin_popcountll(a.sample_regs_user));
	CHECK(n > 0);
	CHECK_EQ_U(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
	CHECK_EQ_U(a.sample_stack_user, 8192);
	CHECK(a.exclude_callchain_user);	/* dwarf: the unwinder makes the user stack */
	memset(&a, 0, sizeof(a));
	CHECK_EQ_U(sp_perf_attr_user_stack(&a, SP_CG_AUTO, 4096), n);
	CHECK_EQ_U(a.sample_stack_user, 4096);
	CHECK(!a.exclude_callchain_user);	/* auto: frame pointers where CFI is missing */
}

/* Rings that hold as many samples whatever the stack copy, within 64 MiB. */
static void test_perf_ring_pages(void)
{
	CHECK_EQ_U(sp_perf_ring_pages(512, 0, 2, 4096), 512);
	CHECK_EQ_U(sp_perf_ring_pages(512, 8192, 2, 4096), 512);
	CHECK_EQ_U(sp_perf_ring_pages(512, 4096, 2, 4096), 512);
	CHECK_EQ_U(sp_perf_ring_pages(512, 16384, 2, 4096), 1024);
	CHECK_EQ_U(sp_perf_ring_pages(512, 20000, 2, 4096), 2048);
	CHECK_EQ_U(sp_perf_ring_pages(512, 32768, 2, 4096), 2048);
	CHECK_EQ_U(sp_perf_ring_pages(512, 65528, 2, 4096), 4096);
	/* 64 CPUs: 64 MiB is 256 pages each, below the base: the base */
	CHECK_EQ_U(sp_perf_ring_pages(512, 65528, 64, 4096), 512);
	/* 8 CPUs: 8 MiB each at most */
	CHECK_EQ_U(sp_perf_ring_pages(512, 65528, 8, 4096), 2048);
	CHECK_EQ_U(sp_perf_ring_pages(512, 32768, 0, 4096), 2048);

	CHECK_EQ_U(sp_perf_ring_wakeup(512 * 4096, 8192), 64 << 10);
	CHECK_EQ_U(sp_perf_ring_wakeup(512 * 4096, 0), 64 << 10);
	CHECK_EQ_U(sp_perf_ring_wakeup(2048 * 4096, 32768), 32768 * 8);
	CHECK_EQ_U(sp_perf_ring_wakeup(16 * 4096, 32768), 16 * 4096 / 4);
}

/* -a's copy: 512 samples a CPU within 64 MiB, between 8192 and most */
static void test_perf_ring_copy_all(void)
{
	CHECK_EQ_U(sp_perf_ring_copy_all(1, 32768), 32768);
	CHECK_EQ_U(sp_perf_ring_copy_all(2, 32768), 32768);
	CHECK_EQ_U(sp_perf_ring_copy_all(4, 32768), 32768);	/* 16 MiB: 512 x 32 KiB */
	CHECK_EQ_U(sp_perf_ring_copy_all(5, 32768), 16384);
	CHECK_EQ_U(sp_perf_ring_copy_all(8, 32768), 16384);
	CHECK_EQ_U(sp_perf_ring_copy_all(16, 32768), 8192);
	CHECK_EQ_U(sp_perf_ring_copy_all(256, 32768), 8192);	/* never below perf's */
	CHECK_EQ_U(sp_perf_ring_copy_all(0, 32768), 32768);
	CHECK_EQ_U(sp_perf_ring_copy_all(2, 16384), 16384);	/* never above most */
	CHECK_EQ_U(sp_perf_ring_copy_all(2, 20000), 16384);
}

int main(void)
{
	TAP_RUN(test_perf_ring_wrap);
	TAP_RUN(test_perf_ring_torn);
	TAP_RUN(test_perf_ring_parse_sample);
	TAP_RUN(test_perf_ring_record_dup);
	TAP_RUN(test_perf_ring_parse_id);
	TAP_RUN(test_perf_ring_attr);
	TAP_RUN(test_perf_ring_pages);
	TAP_RUN(test_perf_ring_copy_all);
	return TAP_DONE();
}
