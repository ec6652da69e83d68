// SPDX-License-Identifier: MIT
/*
 * perf.data's samples (perfdataP.h): the fields of a PERF_RECORD_SAMPLE in
 * the order its event's sample_type gives them (<linux/perf_event.h>), each
 * length checked against the record, then a sample record whose stack is
 * interned with the writer. Kernel frames come from the callchain's kernel
 * part; user frames from its user part (frame pointers) or, for
 * --call-graph=dwarf, from unwinding the copied user stack with the
 * unwinder sp-record uses (unwind.h). A frame is one per (module,
 * file-relative address), or per (pid, address) where no module holds it,
 * as sp-record writes them.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "perfdataP.h"
#include "sp.h"

#define PD_SAMPLE_BRANCH_HW_INDEX (1ull << 17)
#define PD_SAMPLE_BRANCH_COUNTERS (1ull << 19)
#define PD_FORMAT_LOST (1ull << 4)
#define PD_KERNEL_START 0xffff800000000000ull

struct pd_sample {
	uint64_t ip, time, id, period, cpu;
	uint32_t pid, tid;
	const uint8_t *chain;
	uint64_t nr;
	const uint8_t *regs;
	uint64_t abi;
	const uint8_t *stack;
	uint64_t stack_size, dyn_size;
};

struct cur {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t take(struct cur *c)
{
	uint64_t v;

	if (c->end - c->p < 8) {
		c->bad = true;
		return 0;
	}
	v = pd_u64(c->p);
	c->p += 8;
	return v;
}

/* Skip n bytes; NULL (and bad) if they are not there. */
static const uint8_t *skip(struct cur *c, uint64_t n)
{
	const uint8_t *at = c->p;

	if ((uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return at;
}

void pd_attr_setup(struct pd_attr *a)
{
	uint64_t want = sp_unwind_regs_mask(), below;
	unsigned int k = 0, b;

	a->nregs_user = (unsigned int)__builtin_popcountll(a->regs_user);
	a->nregs_intr = (unsigned int)__builtin_popcountll(a->regs_intr);
	a->can_unwind = (a->sample_type & PERF_SAMPLE_REGS_USER) &&
			(a->sample_type & PERF_SAMPLE_STACK_USER);
	for (b = 0; b < 64 && k < SP_UNWIND_NREGS; b++) {
		if (!(want >> b & 1))
			continue;
		below = b ? a->regs_user & ((1ull << b) - 1) : 0;
		a->regs_pick[k++] = (a->regs_user >> b & 1) ?
				    __builtin_popcountll(below) : -1;
		if (!(a->regs_user >> b & 1))
			a->can_unwind = false;
	}
	if (k < SP_UNWIND_NREGS)
		a->can_unwind = false;
}

static uint64_t read_size(const struct pd_attr *a, struct cur *c)
{
	uint64_t rf = a->read_format, per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PD_FORMAT_LOST);
	uint64_t head = !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING);
	uint64_t nr;

	if (!(rf & PERF_FORMAT_GROUP))
		return 8 * (head + per);
	nr = take(c);
	if (nr > (uint64_t)(c->end - c->p) / 8 / per)
		return UINT64_MAX;
	return 8 * (head + nr * per);
}

/* The fields of a sample up to the user stack. 0, or -1 if they do not fit. */
static int parse(const struct pd_attr *a, const uint8_t *rec, size_t size, struct pd_sample *s)
{
	struct cur c = { rec + 8, rec + size, false };
	uint64_t st = a->sample_type, n;

	memset(s, 0, sizeof(*s));
	if (st & PERF_SAMPLE_IDENTIFIER)
		s->id = take(&c);
	if (st & PERF_SAMPLE_IP)
		s->ip = take(&c);
	if (st & PERF_SAMPLE_TID) {
		n = take(&c);
		s->pid = (uint32_t)n;
		s->tid = (uint32_t)(n >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		s->time = take(&c);
	if (st & PERF_SAMPLE_ADDR)
		take(&c);
	if (st & PERF_SAMPLE_ID)
		s->id = take(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		take(&c);
	if (st & PERF_SAMPLE_CPU)
		s->cpu = (uint32_t)take(&c);
	if (st & PERF_SAMPLE_PERIOD)
		s->period = take(&c);
	if (st & PERF_SAMPLE_READ)
		skip(&c, read_size(a, &c));
	if (st & PERF_SAMPLE_CALLCHAIN) {
		s->nr = take(&c);
		s->chain = skip(&c, s->nr > (uint64_t)(c.end - c.p) / 8 ? UINT64_MAX : s->nr * 8);
	}
	if (st & PERF_SAMPLE_RAW) {
		if (c.end - c.p < 4)
			return -1;
		n = pd_u32(c.p);
		skip(&c, 4 + n);
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		n = take(&c);
		if (a->branch_sample_type & PD_SAMPLE_BRANCH_HW_INDEX)
			take(&c);
		skip(&c, n > (uint64_t)(c.end - c.p) / 24 ? UINT64_MAX : n * 24);
		if (a->branch_sample_type & PD_SAMPLE_BRANCH_COUNTERS)
			skip(&c, n * 8);
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		s->abi = take(&c);
		if (s->abi)
			s->regs = skip(&c, 8ull * a->nregs_user);
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		s->stack_size = take(&c);
		if (s->stack_size) {
			s->stack = skip(&c, s->stack_size);
			s->dyn_size = take(&c);
			if (s->dyn_size > s->stack_size)
				return -1;
		}
	}
	return c.bad ? -1 : 0;
}

static uint64_t frame(struct pd *p, const struct pd_proc *pr, uint32_t pid, uint64_t ip,
		      bool kernel, bool leaf)
{
	struct sp_frame f = { .addr = ip, .rel = ip, .flags = leaf ? SP_FRAME_LEAF : 0 };
	const struct pd_vma *v;

	if (kernel) {
		pd_ksym(p, ip);
		f.module = pd_kernel_mod(p);
		f.mode = SP_FRAME_KERNEL;
	} else if ((v = pd_vma_find(pr, ip))) {
		f.module = v->mod;
		if (!v->anon)
			f.rel = ip - v->start + v->pgoff + (uint64_t)v->bias;
	}
	if (!f.module)
		f.pid = pid;
	return sp_writer_frame(p->w, &f);
}

/* The registers the unwinder wants, in its order, from the sample's. */
static bool pick_regs(struct pd *p, const struct pd_attr *a, const struct pd_sample *s,
		      uint64_t *regs)
{
	unsigned int i;

	if (!a->can_unwind) {
		if (!p->said_regs)
			sp_warn("%s: event '%s' did not sample the user registers the unwinder "
				"needs: its user stacks are left out", p->name, a->name);
		p->said_regs = true;
		return false;
	}
	if (s->abi != PERF_SAMPLE_REGS_ABI_64) {
		if (!p->said_abi && s->abi)
			sp_warn("%s: samples of 32-bit code are not unwound", p->name);
		p->said_abi = p->said_abi || s->abi;
		return false;
	}
	for (i = 0; i < SP_UNWIND_NREGS; i++)
		regs[i] = pd_u64(s->regs + 8 * (unsigned int)a->regs_pick[i]);
	return true;
}

/* The frames of a sample into ids[], leaf first; returns how many. */
static unsigned int stack_of(struct pd *p, const struct pd_attr *a, const struct pd_sample *s,
			     uint16_t misc, uint64_t *ids, enum sp_unwind_status *ust)
{
	uint64_t user[PD_MAX_FRAMES], regs[SP_UNWIND_NREGS], ip, id;
	const struct pd_proc *pr = pd_proc(p, s->pid);
	unsigned int n = 0, nu = 0, j;
	bool first = true;
	uint64_t i;
	int ctx = -1;

	for (i = 0; s->chain && i < s->nr && n < PD_MAX_FRAMES; i++) {
		ip = pd_u64(s->chain + 8 * i);
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
			      ip == (uint64_t)PERF_CONTEXT_USER ? 0 : -1;
			first = true;
			continue;
		}
		if (ctx < 0)
			continue;
		id = frame(p, pr, s->pid, ip, ctx == 1, first);
		first = false;
		if (id)
			ids[n++] = id;
	}
	if (!s->chain && (a->sample_type & PERF_SAMPLE_IP)) {
		bool k = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
			 s->ip >= PD_KERNEL_START;

		id = frame(p, pr, s->pid, s->ip, k, true);
		if (id)
			ids[n++] = id;
	}
	if (p->unw && s->regs && s->stack && pick_regs(p, a, s, regs)) {
		nu = sp_unwinder_unwind(p->unw, s->pid, s->tid, regs, SP_UNWIND_NREGS, s->stack,
					s->dyn_size, user, PD_MAX_FRAMES - n, ust);
		p->st->unwound++;
		if (*ust != SP_UNWIND_COMPLETE)
			p->st->unwind_failed++;
	}
	for (j = 0; j < nu && n < PD_MAX_FRAMES; j++) {
		id = frame(p, pr, s->pid, user[j], false, j == 0);
		if (id)
			ids[n++] = id;
	}
	return n;
}

void pd_on_sample(struct pd *p, const uint8_t *rec, size_t size, uint16_t misc)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	const struct pd_attr *a = pd_attr_of_sample(p, rec, size);
	enum sp_unwind_status ust = SP_UNWIND_UNKNOWN;
	uint64_t ids[PD_MAX_FRAMES], tmp;
	struct pd_sample s;
	unsigned int n, i;

	if (!a || parse(a, rec, size, &s)) {
		p->st->bad_samples++;
		if (!p->said_bad_sample)
			pd_fail(p, p->rec_off, "a sample that does not parse%s; skipped "
				"(and any more, counted in --stats)", a ? "" : " (no event has its id)");
		p->said_bad_sample = true;
		return;
	}
	if (a->role == PD_ROLE_OTHER) {
		p->st->other_event_samples++;
		return;
	}
	n = stack_of(p, a, &s, misc, ids, &ust);
	for (i = 0; i < n / 2; i++) {
		tmp = ids[i];
		ids[i] = ids[n - 1 - i];
		ids[n - 1 - i] = tmp;
	}
	r.sample.time = s.time;
	r.sample.pid = s.pid;
	r.sample.tid = s.tid;
	r.sample.cpu = s.cpu;
	r.sample.stack = n ? sp_writer_stack_path(p->w, ids, n) : 0;
	r.sample.unwind = ust != SP_UNWIND_UNKNOWN ? ust :
			  n >= PD_MAX_FRAMES ? SP_UNWIND_DEPTH : SP_UNWIND_UNKNOWN;
	/* Unwound here (a status), and through a frame pointer somewhere. */
	if (ust != SP_UNWIND_UNKNOWN && sp_unwinder_fp_frames(p->unw))
		r.sample.flags = SP_SAMPLE_FP_GUESS;
	if (a->role == PD_ROLE_OFFCPU) {
		r.sample.kind = SP_SAMPLE_OFFCPU;
		r.sample.weight = s.period;
		p->st->offcpu_samples++;
	} else {
		r.sample.kind = SP_SAMPLE_CPU;
		r.sample.weight = 1;
	}
	p->st->samples++;
	sp_writer_put(p->w, &r);
}

/* LOST: { u64 id, lost; } */
void pd_on_lost(struct pd *p, const uint8_t *rec, size_t size)
{
	struct sp_record r = { .kind = SP_REC_LOST };

	if (size < 24)
		return;
	r.lost.time = pd_other_time(p, rec, size);
	r.lost.what = SP_LOST_SAMPLES;
	r.lost.count = pd_u64(rec + 16);
	p->st->lost += r.lost.count;
	sp_writer_put(p->w, &r);
}
