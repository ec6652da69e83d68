// SPDX-License-Identifier: MIT
/* perf_event_open ring buffers: the records asked for, draining the rings
 * and decoding their records. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_ring.h"
#include "sp.h"
#include "unwind.h"

void sp_perf_attr_records(struct perf_event_attr *a, bool enable_on_exec)
{
	a->size = sizeof(*a);
	a->sample_id_all = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->inherit = 1;
	a->watermark = 1;
	a->exclude_hv = 1;
	a->read_format = SP_PERF_FORMAT_LOST;
	if (enable_on_exec) {
		a->disabled = 1;
		a->enable_on_exec = 1;
	}
}

int sp_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group)
{
	int fd = (int)syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0 && errno == EINVAL && (a->read_format & SP_PERF_FORMAT_LOST)) {
		a->read_format &= ~SP_PERF_FORMAT_LOST;
		fd = (int)syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
	}
	return fd;
}

bool sp_perf_fd_lost(const struct perf_event_attr *a, int fd, uint64_t *lost)
{
	uint64_t v[2];

	*lost = 0;
	if (a->read_format != SP_PERF_FORMAT_LOST || fd < 0 ||
	    read(fd, v, sizeof(v)) != (ssize_t)sizeof(v))
		return false;	/* (another layout than { value, lost } too) */
	*lost = v[1];
	return true;
}

bool sp_perf_lost_said(struct sp_perf_lost *l, const struct perf_event_header *h,
		       const struct sp_perf_id *id, struct sp_record *r)
{
	const uint64_t *v = (const void *)(h + 1);	/* { id, lost } */
	uint64_t *said;

	if (h->size < sizeof(*h) + 16)
		return false;
	memset(r, 0, sizeof(*r));
	r->kind = SP_REC_LOST;
	r->lost.time = id->time;
	r->lost.what = SP_LOST_SAMPLES;
	r->lost.count = v[1];
	r->lost.cpu = (uint64_t)id->cpu + 1;
	said = sp_u64map_get(&l->said, id->cpu);
	sp_u64map_put(&l->said, id->cpu, (said ? *said : 0) + v[1]);
	return true;
}

uint64_t sp_perf_lost_unsaid(const struct sp_perf_lost *l, const struct perf_event_attr *a,
			     const int *fds, const unsigned int *fd_cpu, size_t n, uint64_t time,
			     int (*emit)(void *ctx, const struct sp_record *r), void *ctx,
			     const char *what)
{
	struct sp_record r = { .kind = SP_REC_LOST };
	struct sp_u64map lost = { 0 };
	uint64_t cpu, one, all = 0;
	const uint64_t *said;
	size_t i, it = 0;

	/* (an event closed before the end takes its count with it: an
	 * undercount) */
	for (i = 0; i < n; i++)
		if (sp_perf_fd_lost(a, fds[i], &one) && one) {
			uint64_t *was = sp_u64map_get(&lost, fd_cpu[i]);

			sp_u64map_put(&lost, fd_cpu[i], (was ? *was : 0) + one);
		}
	while (sp_u64map_next(&lost, &it, &cpu, &one)) {
		said = sp_u64map_get(&l->said, cpu);
		if (said && *said >= one)
			continue;
		r.lost.time = time;
		r.lost.what = SP_LOST_SAMPLES;
		r.lost.cpu = cpu + 1;
		r.lost.count = one - (said ? *said : 0);
		all += r.lost.count;
		emit(ctx, &r);
	}
	sp_u64map_release(&lost);
	if (all)
		sp_info("%s%" PRIu64 " records the kernel could not write went unsaid (a ring full "
			"when the recording ended: the kernel says a loss with the next record)",
			what, all);
	return all;
}

void sp_perf_lost_release(struct sp_perf_lost *l)
{
	sp_u64map_release(&l->said);
}

unsigned int sp_perf_attr_user_stack(struct perf_event_attr *a, enum sp_call_graph cg,
				     uint32_t stack_size)
{
	if (cg < SP_CG_DWARF)
		return 0;
	a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = sp_unwind_regs_mask();
	a->sample_stack_user = stack_size ? stack_size : 8192;
	if (cg == SP_CG_DWARF)
		a->exclude_callchain_user = 1;
	return (unsigned int)__builtin_popcountll(a->sample_regs_user);
}

unsigned int sp_perf_ring_pages(unsigned int base, uint32_t stack_size, unsigned int ncpus,
				uint64_t page_size)
{
	uint64_t want = base, copy = stack_size ? stack_size : 8192;

	while (want < (uint64_t)base * ((copy + 8191) / 8192))
		want *= 2;
	/* within 64 MiB in all: the scaled size halved until it fits */
	while (want > base && (uint64_t)(ncpus ? ncpus : 1) * want * page_size > SP_PERF_RINGS_MOST)
		want /= 2;
	return (unsigned int)want;
}

uint32_t sp_perf_ring_copy_all(unsigned int ncpus, uint32_t most)
{
	uint64_t per_cpu = SP_PERF_RINGS_MOST / (ncpus ? ncpus : 1), copy = 8192;

	while (copy * 2 <= most && copy * 2 * SP_PERF_RING_SAMPLES_ALL <= per_cpu)
		copy *= 2;
	return (uint32_t)copy;
}

uint32_t sp_perf_ring_wakeup(uint64_t ring, uint32_t stack_size)
{
	uint64_t most = stack_size > 8192 ? (uint64_t)stack_size * 8 : 64 << 10;

	return (uint32_t)(ring / 4 < most ? ring / 4 : most);
}

int sp_perf_ring_map(struct sp_perf_ring *r, int fd, unsigned int pages)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)(pages + 1) * page;
	void *p;

	memset(r, 0, sizeof(*r));
	if (!pages || (pages & (pages - 1))) {
		errno = EINVAL;
		return -1;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	r->meta = p;
	r->data = (uint8_t *)p + page;
	r->size = (uint64_t)pages * page;
	r->map_len = len;
	r->tail = __atomic_load_n(&r->meta->data_tail, __ATOMIC_ACQUIRE);
	r->head = r->tail;
	return 0;
}

void sp_perf_ring_init(struct sp_perf_ring *r, struct perf_event_mmap_page *meta,
		       uint8_t *data, uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->meta = meta;
	r->data = data;
	r->size = size;
	r->tail = meta->data_tail;
	r->head = r->tail;
}

void sp_perf_ring_unmap(struct sp_perf_ring *r)
{
	if (r->map_len && r->meta)
		munmap(r->meta, r->map_len);
	free(r->copy);
	memset(r, 0, sizeof(*r));
}

uint64_t sp_perf_ring_begin(struct sp_perf_ring *r)
{
	if (!r->meta)
		return 0;
	/* Pairs with the kernel's store of data_head after writing records. */
	r->head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	if (r->head - r->tail > r->size) {
		/* Cannot happen with a writable mapping; resynchronise rather than
		 * read garbage. */
		r->bad++;
		r->tail = r->head;
	}
	return r->head - r->tail;
}

const struct perf_event_header *sp_perf_ring_next(struct sp_perf_ring *r)
{
	struct perf_event_header h;
	uint64_t off, avail = r->head - r->tail;
	size_t first;

	if (avail < sizeof(h))
		return NULL;
	off = r->tail & (r->size - 1);
	first = r->size - off;
	if (first >= sizeof(h)) {
		memcpy(&h, r->data + off, sizeof(h));
	} else {
		memcpy(&h, r->data + off, first);
		memcpy((uint8_t *)&h + first, r->data, sizeof(h) - first);
	}
	if (h.size < sizeof(h) || h.size > avail || (h.size & 7)) {
		/* A torn ring: skip everything that is there. */
		r->bad++;
		r->tail = r->head;
		return NULL;
	}
	r->tail += h.size;
	if (first >= h.size)
		return (const struct perf_event_header *)(r->data + off);
	if (r->copy_cap < h.size) {
		uint8_t *p = realloc(r->copy, h.size);

		if (!p) {
			r->bad++;
			return NULL;
		}
		r->copy = p;
		r->copy_cap = h.size;
	}
	memcpy(r->copy, r->data + off, first);
	memcpy(r->copy + first, r->data, h.size - first);
	return (const struct perf_event_header *)r->copy;
}

void sp_perf_ring_end(struct sp_perf_ring *r)
{
	if (!r->meta)
		return;
	/* Pairs with the kernel's check of data_tail before it overwrites. */
	__atomic_store_n(&r->meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

#define KNOWN_SAMPLE_BITS (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
	PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
	PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | \
	PERF_SAMPLE_CGROUP)

struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t take(struct cursor *c)
{
	uint64_t v;

	if (c->end - c->p < 8) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static const void *take_n(struct cursor *c, uint64_t n)
{
	const void *p = c->p;

	if ((uint64_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	return p;
}

int sp_perf_parse_sample(const struct perf_event_header *h, uint64_t st,
			 unsigned int nregs, struct sp_perf_sample *s)
{
	struct cursor c = { (const uint8_t *)(h + 1), (const uint8_t *)h + h->size, 0 };
	uint64_t v;

	memset(s, 0, sizeof(*s));
	if (st & ~KNOWN_SAMPLE_BITS)
		return -1;
	if (st & PERF_SAMPLE_IDENTIFIER)
		s->id = take(&c);
	if (st & PERF_SAMPLE_IP)
		s->ip = take(&c);
	if (st & PERF_SAMPLE_TID) {
		v = take(&c);
		s->pid = (uint32_t)v;
		s->tid = (uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		s->time = take(&c);
	if (st & PERF_SAMPLE_ID)
		s->id = take(&c);
	if (st & PERF_SAMPLE_CPU)
		s->cpu = (uint32_t)take(&c);
	if (st & PERF_SAMPLE_PERIOD)
		s->period = take(&c);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		s->nr = take(&c);
		if (s->nr > ((uint64_t)(c.end - c.p)) / 8)
			return -1;
		s->ips = take_n(&c, s->nr * 8);
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		s->regs_abi = take(&c);
		if (s->regs_abi) {
			s->nregs = nregs;
			s->regs = take_n(&c, (uint64_t)nregs * 8);
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		s->stack_size = take(&c);
		if (s->stack_size) {
			s->stack = take_n(&c, s->stack_size);
			s->stack_dyn_size = take(&c);
			if (s->stack_dyn_size > s->stack_size)
				return -1;
		}
	}
	if (st & PERF_SAMPLE_CGROUP)
		s->cgroup = take(&c);
	return c.bad ? -1 : 0;
}

struct perf_event_header *sp_perf_record_dup(const struct perf_event_header *h, uint64_t st,
					     unsigned int nregs, uint64_t *time)
{
	struct sp_perf_sample s;
	bool parsed = false;
	uint64_t keep;
	size_t pre, post;
	uint8_t *c;

	*time = 0;
	if (h->type == PERF_RECORD_SAMPLE && !sp_perf_parse_sample(h, st, nregs, &s)) {
		parsed = true;
		*time = s.time;
	}
	/* The bytes written, rounded up to 8; never none, as a stack_size of
	 * 0 has no dyn_size after it. */
	if (!parsed || !(st & PERF_SAMPLE_STACK_USER) ||
	    (keep = s.stack_dyn_size ? (s.stack_dyn_size + 7) & ~(uint64_t)7 : 8) >=
	    s.stack_size) {
		c = sp_xmalloc(h->size);
		memcpy(c, h, h->size);
		return (struct perf_event_header *)c;
	}
	/* before the stack (its size field last), the kept bytes, then dyn_size
	 * and the fields after it */
	pre = (size_t)(s.stack - (const uint8_t *)h);
	post = h->size - pre - s.stack_size;
	c = sp_xmalloc(pre + keep + post);
	memcpy(c, h, pre);
	memcpy(c + pre - 8, &keep, 8);
	memcpy(c + pre, s.stack, keep);
	memcpy(c + pre + keep, s.stack + s.stack_size, post);
	((struct perf_event_header *)c)->size = (uint16_t)(pre + keep + post);
	return (struct perf_event_header *)c;
}

size_t sp_perf_id_size(uint64_t st)
{
	size_t n = 0;

	n += !!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ID);
	n += !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU);
	n += !!(st & PERF_SAMPLE_IDENTIFIER);
	return n * 8;
}

int sp_perf_parse_id(const struct perf_event_header *h, uint64_t st, struct sp_perf_id *id)
{
	size_t n = sp_perf_id_size(st);
	struct cursor c;
	uint64_t v;

	memset(id, 0, sizeof(*id));
	if (h->size < sizeof(*h) + n)
		return -1;
	c.p = (const uint8_t *)h + h->size - n;
	c.end = (const uint8_t *)h + h->size;
	c.bad = 0;
	if (st & PERF_SAMPLE_TID) {
		v = take(&c);
		id->pid = (uint32_t)v;
		id->tid = (uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		id->time = take(&c);
	if (st & PERF_SAMPLE_ID)
		take(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		take(&c);
	if (st & PERF_SAMPLE_CPU)
		id->cpu = (uint32_t)take(&c);
	return c.bad ? -1 : 0;
}
