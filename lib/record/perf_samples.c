// SPDX-License-Identifier: MIT
/*
 * The perf source's samples (perf_sourceP.h): each PERF_RECORD_SAMPLE
 * becomes a sample record whose stack is interned with the writer, frame
 * by frame. Kernel frames come from the kernel's callchain; user frames
 * from the callchain (frame pointers) or from unwinding the copy of the
 * user stack by DWARF (unwind.c), or both spliced (--call-graph=auto). A
 * frame is interned by (module, file-relative address), or by (pid,
 * address) where no module holds it.
 */
#include <string.h>

#include "perf_sourceP.h"
#include "sp.h"
#include "unwind.h"

static uint64_t intern_frame(struct perf *p, struct proc *pr, uint32_t pid, uint64_t ip,
			     bool kernel, bool leaf)
{
	struct sp_frame f = { 0 };
	const struct vma *v;
	struct mod *mod = NULL;
	uint64_t *id, rel = ip, flags = leaf ? SP_FRAME_LEAF : 0;

	if (kernel) {
		mod = sp_perf_kernel_mod(p);
		if (!mod)
			return 0;
		f.mode = SP_FRAME_KERNEL;
	} else if ((v = sp_perf_vma_find(pr, ip))) {
		mod = v->mod;
		if (!(mod->flags & SP_MOD_ANON))
			rel = ip - v->start + v->pgoff + (uint64_t)mod->bias;
	}
	/* in anonymous executable memory (a JIT's): its JIT map will name it
	 * (before the frame cache: a forked child shares its parent's frames);
	 * an address in no mapping at all is not code a JIT made known */
	if (!kernel && pr && mod && (mod->flags & SP_MOD_ANON))
		sp_perf_jit_addr(p, pr, ip);
	if (mod) {
		id = sp_perf_map_get(&p->frames, mod->id << 4 | flags << 2 | f.mode, rel);
		if (id)
			return *id;
		f.module = mod->id;
	} else {
		id = sp_perf_map_get(&p->frames_raw, (uint64_t)pid << 4 | flags << 2, ip);
		if (id)
			return *id;
		f.pid = pid;
	}
	f.rel = rel;
	f.addr = ip;
	f.flags = flags;
	/* Its symbol before it, always; a return address is named by the
	 * call before it, as sp-symbolize looks it up (at address - 1). */
	if (kernel)
		sp_perf_ksym(p, leaf || !ip ? ip : ip - 1);
	f.id = sp_writer_frame(p->out->w, &f);
	if (!f.id)
		return 0;
	if (mod) {
		sp_perf_map_put(&p->frames, mod->id << 4 | flags << 2 | f.mode, rel, f.id);
	} else {
		sp_perf_map_put(&p->frames_raw, (uint64_t)pid << 4 | flags << 2, ip, f.id);
	}
	return f.id;
}

/* What sp_interp_splice() needs of a user frame: 1 eval loop, 2 unmapped. */
static uint8_t eval_mark(const struct perf *p, const struct proc *pr, uint32_t pid, uint64_t ip)
{
	if (!p->interp)
		return 0;
	if (sp_interp_is_eval(p->interp, pid, ip))
		return 1;
	return pr && !sp_perf_vma_find(pr, ip) ? 2 : 0;
}

void sp_perf_on_sample(struct perf *p, const struct perf_event_header *h)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	uint64_t ids[MAX_FRAMES], user[MAX_FRAMES], fp[MAX_FRAMES], pcs[MAX_FRAMES], ip, id;
	uint8_t eval[MAX_FRAMES];
	struct sp_interp_frames inf;
	enum sp_unwind_status ust = SP_UNWIND_UNKNOWN;
	unsigned int n = 0, nu = 0, nfp = 0, i, j;
	struct sp_perf_sample s;
	int ctx = -1;		/* 0 user, 1 kernel, -1 other */
	bool first = true, guess = false;
	struct proc *pr;
	uint64_t tmp;

	if (sp_perf_parse_sample(h, p->attr.sample_type, p->nregs, &s)) {
		p->st.bad++;
		return;
	}
	p->sample_time = s.time;	/* where its JIT symbols go (perf_jit.c) */
	pr = sp_perf_proc_find(p, s.pid);
	/* -a: a process started while the events opened, CPU by CPU (its
	 * fork's record went to a ring not open yet), and gone before /proc
	 * was read has samples and nothing else: defined from what the
	 * kernel's map knows. Of a command's or a -p tree's, every fork is
	 * seen (the events are the tree's, inherited). */
	if ((!pr || !pr->defined) && (p->cgroup_mode || p->system_wide) && s.pid)
		pr = sp_perf_define_unseen(p, s.pid, s.time);
	if (!s.ips) {
		/* No callchain: the sampled ip alone. */
		s.nr = 0;
	}
	for (i = 0; i < s.nr && n < MAX_FRAMES; i++) {
		ip = s.ips[i];
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
			      ip == (uint64_t)PERF_CONTEXT_USER ? 0 : -1;
			first = true;
			continue;
		}
		if (ctx < 0)
			continue;
		/*
		 * Kernel code is in the upper half only: a lower address in
		 * the kernel's chain (seen: heap addresses of the sampled
		 * process at its top) is its unwinder gone astray, no frame.
		 * Dropped and counted, the sample kept with its other frames;
		 * looked up, it would cost a fresh /proc/kallsyms read and
		 * end as a kernel frame without a symbol.
		 */
		if (ctx == 1 && ip < KERNEL_START) {
			p->kernel_astray++;
			first = false;
			continue;
		}
		if (ctx == 0 && p->unw) {
			if (nfp < MAX_FRAMES)
				fp[nfp++] = ip;
			continue;
		}
		id = intern_frame(p, pr, s.pid, ip, ctx == 1, first);
		first = false;
		if (id) {
			eval[n] = ctx == 0 ? eval_mark(p, pr, s.pid, ip) : 0;
			pcs[n] = ctx == 0 ? ip : 0;
			ids[n++] = id;
		}
	}
	if (!s.ips && s.ip) {
		id = intern_frame(p, pr, s.pid, s.ip, s.ip >= KERNEL_START, true);
		if (id) {
			eval[n] = s.ip < KERNEL_START ? eval_mark(p, pr, s.pid, s.ip) : 0;
			pcs[n] = s.ip < KERNEL_START ? s.ip : 0;
			ids[n++] = id;
		}
	}
	if (p->unw && s.regs && s.nregs) {
		nu = sp_unwinder_unwind(p->unw, s.pid, s.tid, s.regs, s.nregs, s.stack,
					s.stack_dyn_size, user, MAX_FRAMES - n, &ust);
		guess = sp_unwinder_fp_frames(p->unw) > 0;
		if (p->o.call_graph == SP_CG_AUTO && nfp &&
		    (ust == SP_UNWIND_NO_CFI || ust == SP_UNWIND_JIT ||
		     ust == SP_UNWIND_UNKNOWN_MAP)) {
			j = nu;
			nu = sp_unwinder_splice_fp(p->unw, s.pid, user, nu, MAX_FRAMES - n, fp,
						   nfp, &ust);
			guess |= nu > j;
		}
	} else if (p->unw && nfp) {
		/* No user registers (a kernel thread, or in auto mode): the chain. */
		memcpy(user, fp, nfp * sizeof(*fp));
		nu = nfp;
	}
	for (j = 0; j < nu && n < MAX_FRAMES; j++) {
		id = intern_frame(p, pr, s.pid, user[j], false, j == 0);
		if (id) {
			eval[n] = eval_mark(p, pr, s.pid, user[j]);
			pcs[n] = user[j];
			ids[n++] = id;
		}
	}
	if (p->interp && sp_interp_sample(p->interp, p->out, s.pid, s.tid, s.time,
					  ust == SP_UNWIND_COMPLETE ?
					  (int)sp_interp_eval_calls(p->interp, s.pid, pcs, eval, n) :
					  -1, &inf))
		sp_interp_splice(&inf, ids, pcs, eval, &n, MAX_FRAMES);
	/* Leaf first from perf; the trie wants the root first. */
	for (i = 0; i < n / 2; i++) {
		tmp = ids[i];
		ids[i] = ids[n - 1 - i];
		ids[n - 1 - i] = tmp;
	}
	r.sample.time = s.time;
	r.sample.pid = s.pid;
	r.sample.tid = s.tid;
	r.sample.cpu = s.cpu;
	r.sample.stack = n ? sp_writer_stack_path(p->out->w, ids, n) : 0;
	r.sample.weight = 1;
	r.sample.unwind = p->unw ? ust : (n >= MAX_FRAMES ? SP_UNWIND_DEPTH : SP_UNWIND_UNKNOWN);
	r.sample.kind = SP_SAMPLE_CPU;
	r.sample.flags = guess ? SP_SAMPLE_FP_GUESS : 0;
	p->st.samples++;
	if (!pr || !sp_perf_hold_sample(p, pr, &r.sample))
		sp_perf_emit(p, &r);
}

void sp_perf_on_lost(struct perf *p, const struct perf_event_header *h, const struct sp_perf_id *id)
{
	struct sp_record r;

	if (!sp_perf_lost_said(&p->lost, h, id, &r))
		return;
	p->st.lost += r.lost.count;
	sp_perf_emit(p, &r);
}
