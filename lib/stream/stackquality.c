// SPDX-License-Identifier: MIT
/* How complete recorded stacks are, and why not (stackquality.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sp.h"
#include "stackquality.h"
#include "unwind.h"

/*
 * The highest address a process can map code at on x86_64 (47 bits, the
 * user half of 4-level page tables), and the vsyscall page the kernel
 * shows every process above it. A frame anywhere else, a "return address"
 * of ASCII text (0x6d75733635326168, "hash256m") say, was a frame-pointer
 * guess that went into data, or a corrupt stack: garbage, not JIT code.
 * (With 5-level page tables a process that asks for it can map up to 56
 * bits; none known does so for code.)
 */
#define USER_ADDR_MAX	0x00007fffffffffffULL
#define VSYSCALL_START	0xffffffffff600000ULL
#define VSYSCALL_END	0xffffffffff601000ULL

static bool unmappable(uint64_t addr)
{
	return addr > USER_ADDR_MAX && (addr < VSYSCALL_START || addr >= VSYSCALL_END);
}

struct cause {
	unsigned int status;
	bool offcpu;		/* STACK_SIZE: off-CPU samples, with their own copy */
	char *module;		/* NULL = none / merged */
	uint64_t rel;
	uint64_t pid;		/* the process of the example (rel), 0 unknown */
	uint64_t count;
	uint64_t interp_whole;	/* of count, with their whole interpreted stack */
};

struct sp_stackq {
	uint64_t status[8];
	uint64_t samples;
	uint64_t interp_whole;	/* cut natively, whole interpreted stack */
	uint64_t fp_guess;	/* samples with SP_SAMPLE_FP_GUESS */
	struct cause causes[SP_STACKQ_MAX_CAUSES];
	unsigned int ncauses;
	struct cause overflow[8];	/* per status, once the table is full */
	enum sp_call_graph cg;
	uint64_t stack_size, max_depth;
	uint64_t offcpu_stack_size;	/* off-CPU samples' copy (0: 8192) */
	uint64_t frames[SP_UNWIND_MAX_FRAMES];	/* scratch for add_sample */
};

struct sp_stackq *sp_stackq_new(void)
{
	return sp_xcalloc(1, sizeof(struct sp_stackq));
}

void sp_stackq_free(struct sp_stackq *q)
{
	unsigned int i;

	if (!q)
		return;
	for (i = 0; i < q->ncauses; i++)
		free(q->causes[i].module);
	free(q);
}

void sp_stackq_set_config(struct sp_stackq *q, enum sp_call_graph cg, uint64_t stack_size,
			  uint64_t max_depth)
{
	q->cg = cg;
	q->stack_size = stack_size;
	q->max_depth = max_depth;
}

void sp_stackq_set_offcpu_copy(struct sp_stackq *q, uint64_t stack_size)
{
	q->offcpu_stack_size = stack_size;
}

/* The number after "word" in a string of words, or 0. */
static uint64_t word_value(const char *s, const char *word)
{
	size_t len = strlen(word);
	const char *p = s;

	while (p && (p = strstr(p, word))) {
		if ((p == s || p[-1] == ' ') && p[len] >= '0' && p[len] <= '9')
			return strtoull(p + len, NULL, 10);
		p += len;
	}
	return 0;
}

void sp_stackq_set_header(struct sp_stackq *q, const struct sp_header *h, const struct sp_defs *d)
{
	char features[1024];
	size_t len = h->features.len < sizeof(features) - 1 ? h->features.len : sizeof(features) - 1;

	(void)d;
	if (len)
		memcpy(features, h->features.p, len);
	features[len] = 0;
	q->cg = h->call_graph;
	q->stack_size = word_value(features, "call-graph=dwarf,");
	if (!q->stack_size)
		q->stack_size = word_value(features, "call-graph=auto,");
	if (!q->stack_size)
		q->stack_size = word_value(features, "stack-size=");
	q->max_depth = word_value(features, "max-depth=");
	q->offcpu_stack_size = word_value(features, "offcpu-stack-size=");
}

static void add_cause(struct sp_stackq *q, unsigned int status, unsigned int kind,
		      const char *module, uint64_t rel, uint64_t pid, uint64_t n, uint64_t whole);

void sp_stackq_add(struct sp_stackq *q, unsigned int status, unsigned int kind,
		   const char *module, uint64_t rel, uint64_t n)
{
	add_cause(q, status, kind, module, rel, 0, n, 0);
}

void sp_stackq_add_interp(struct sp_stackq *q, unsigned int status, unsigned int kind,
			  const char *module, uint64_t rel, uint64_t n, uint64_t whole)
{
	add_cause(q, status, kind, module, rel, 0, n, whole);
}

static void add_cause(struct sp_stackq *q, unsigned int status, unsigned int kind,
		      const char *module, uint64_t rel, uint64_t pid, uint64_t n, uint64_t whole)
{
	bool offcpu = status == SP_UNWIND_STACK_SIZE && kind == SP_SAMPLE_OFFCPU;
	struct cause *c = NULL;
	unsigned int i;

	if (status > 7)
		status = SP_UNWIND_ERROR;
	q->samples += n;
	q->status[status] += n;
	if (status == SP_UNWIND_COMPLETE || status == SP_UNWIND_UNKNOWN)
		return;
	/* Causes whose hint names the module are kept per module; the others
	 * (depth, stack size, JIT code: no file to name) once per status. */
	if (status != SP_UNWIND_NO_CFI && status != SP_UNWIND_ERROR)
		module = NULL;
	for (i = 0; i < q->ncauses; i++) {
		struct cause *k = &q->causes[i];

		if (k->status == status && k->offcpu == offcpu && (k->module == module ||
		    (k->module && module && !strcmp(k->module, module)))) {
			c = k;
			break;
		}
	}
	if (!c && q->ncauses < SP_STACKQ_MAX_CAUSES) {
		c = &q->causes[q->ncauses++];
		c->status = status;
		c->offcpu = offcpu;
		c->module = module ? sp_xstrdup(module) : NULL;
		c->rel = rel;
		c->pid = pid;
	}
	if (!c) {
		c = &q->overflow[status];
		c->status = status;
	}
	whole = whole < n ? whole : n;
	c->count += n;
	c->interp_whole += whole;
	q->interp_whole += whole;
	if (!c->rel) {
		c->rel = rel;
		c->pid = pid;
	}
}

/* Whether the frames of a stack (leaf first, n) hold an interpreted stack
 * read whole: interpreted frames, none of them the placeholder that ends a
 * truncated or unreadable one ("[ruby: truncated]", interp.c). */
static bool interp_whole(const struct sp_defs *d, const uint64_t *frames, int n)
{
	bool any = false;
	int i;

	for (i = 0; i < n && i < SP_UNWIND_MAX_FRAMES; i++) {
		const struct sp_frame *f = sp_defs_frame(d, frames[i]);
		const struct sp_symbol *sym;
		const char *name;
		unsigned int ns = 0;

		if (!f || f->mode != SP_FRAME_INTERP)
			continue;
		sym = sp_defs_symbols(d, frames[i], &ns);
		name = sym && ns ? sp_defs_strz(d, sym->func) : NULL;
		if (!name || (name[0] == '[' && strchr(name, ':') && name[strlen(name) - 1] == ']'))
			return false;
		any = true;
	}
	return any;
}

void sp_stackq_add_sample(struct sp_stackq *q, const struct sp_defs *d, const struct sp_sample *s)
{
	unsigned int status = (unsigned int)(s->unwind > 7 ? SP_UNWIND_ERROR : s->unwind);
	const char *module = NULL;
	uint64_t rel = 0;
	int depth = 0;

	/* of the stacks assessed, which the share is of (an imported or
	 * forged spool may flag others) */
	if ((s->flags & SP_SAMPLE_FP_GUESS) && s->unwind != SP_UNWIND_UNKNOWN)
		q->fp_guess++;
	if (s->unwind != SP_UNWIND_COMPLETE && s->unwind != SP_UNWIND_UNKNOWN && s->stack)
		depth = sp_defs_stack_frames(d, s->stack, q->frames, SP_UNWIND_MAX_FRAMES);
	if (depth > 0) {
		/* Leaf first: the outermost native frame we have is the last one
		 * that is not interpreted (those go root-ward of a cut stack). */
		int last = depth <= SP_UNWIND_MAX_FRAMES ? depth - 1 : SP_UNWIND_MAX_FRAMES - 1;
		const struct sp_frame *f = sp_defs_frame(d, q->frames[last]);
		const struct sp_module *m;

		while (last > 0 && f && f->mode == SP_FRAME_INTERP)
			f = sp_defs_frame(d, q->frames[--last]);
		m = f ? sp_defs_module(d, f->module) : NULL;

		if (f)
			rel = f->module ? f->rel : f->addr;
		if (m)
			module = sp_defs_str(d, m->path, NULL);
		/* a stack that ends at an address no process can map ends in
		 * garbage, whatever stopped its unwind before */
		if (f && f->mode != SP_FRAME_KERNEL && unmappable(f->addr)) {
			status = SP_UNWIND_ERROR;
			module = NULL;
			rel = f->addr;
		}
	}
	add_cause(q, status, s->kind, module, rel, s->pid, 1,
		  depth > 0 && interp_whole(d, q->frames, depth));
}

void sp_stackq_summary(const struct sp_stackq *q, struct sp_stackq_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->samples = q->samples;
	memcpy(s->status, q->status, sizeof(s->status));
	s->assessed = q->samples - q->status[SP_UNWIND_UNKNOWN];
	s->complete = q->status[SP_UNWIND_COMPLETE];
	s->complete_share = s->assessed ? (double)s->complete / s->assessed : 0;
	s->interp_whole = q->interp_whole;
	s->fp_guess = q->fp_guess;
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/* The stack copy size to suggest: four times the current one, within
 * perf's limit (65528 bytes, a multiple of 8 below 64 KiB). */
static uint64_t bigger_copy(uint64_t size)
{
	uint64_t s = size ? size * 4 : 32768;

	return s > 65528 ? 65528 : s;
}

/* Stacks cut by the copy: off-CPU samples have a copy of their own
 * (perf_offcpu.h); in interpreter threads, only native frames may be lost. */
static void stack_size_hint(const struct sp_stackq *q, const struct cause *c, double pct,
			    char *buf, size_t len)
{
	uint64_t size = c->offcpu ? (q->offcpu_stack_size ? q->offcpu_stack_size : 8192) :
		q->stack_size;
	const char *which = c->offcpu ? "off-CPU " : "";
	char copy[32] = "", advice[64] = "";

	if (size)
		snprintf(copy, sizeof(copy), "%" PRIu64 "-byte ", size);
	if (c->interp_whole) {
		if (size < 65528)
			snprintf(advice, sizeof(advice), "; for those, use "
				 "--call-graph=dwarf,%" PRIu64, bigger_copy(size));
		snprintf(buf, len, "%.1f%% of %sstacks hit the %sstack copy, of which "
			 "%.0f%% still have their whole interpreted stack (only the native "
			 "frames root-ward of the copy are lost)%s", pct, which, copy,
			 100.0 * (double)c->interp_whole / (double)c->count, advice);
	} else if (size >= 65528) {
		snprintf(buf, len, "%.1f%% of %sstacks are deeper than the largest stack "
			 "copy (%" PRIu64 " bytes): build the deep code with "
			 "-fno-omit-frame-pointer and use --call-graph=auto", pct, which, size);
	} else {
		snprintf(buf, len, "%.1f%% of %sstacks hit the %sstack copy%s: use "
			 "--call-graph=dwarf,%" PRIu64, pct, which, copy, size ? "" : " size",
			 bigger_copy(size));
	}
}

static void make_hint(const struct sp_stackq *q, const struct cause *c, double share, char *buf,
		      size_t len)
{
	double pct = share * 100;
	const char *mod = c->module;
	char in_pid[24] = "";

	if (c->pid)
		snprintf(in_pid, sizeof(in_pid), "%" PRIu64, c->pid);
	switch (c->status) {
	case SP_UNWIND_DEPTH:
		if (q->max_depth)
			snprintf(buf, len, "%.1f%% of stacks hit the limit of %" PRIu64 " frames: "
				 "raise it (--max-depth) if the outer frames matter", pct,
				 q->max_depth);
		else
			snprintf(buf, len, "%.1f%% of stacks hit the frame limit: raise it "
				 "(--max-depth) if the outer frames matter", pct);
		break;
	case SP_UNWIND_STACK_SIZE:
		stack_size_hint(q, c, pct, buf, len);
		break;
	case SP_UNWIND_NO_CFI:
		if (mod && !strncmp(mod, "[uprobes", 8))
			/* the kernel's page of uprobes: not a file, nothing to install */
			snprintf(buf, len, "%.1f%% of stacks stopped in %s at 0x%" PRIx64
				 ", the kernel's page for uprobes: a uretprobe's return trampoline "
				 "(the return address of a function probed with --span-func is held by "
				 "the kernel) or a probed instruction stepped out of line; the callers "
				 "above it cannot be unwound from the stack copy", pct, mod, c->rel);
		else if (mod)
			snprintf(buf, len, "%.1f%% of stacks stopped in %s at 0x%" PRIx64 ", which "
				 "has no unwind information there: install its debug symbols "
				 "(.debug_frame) or build it with -fasynchronous-unwind-tables or "
				 "-fno-omit-frame-pointer", pct, base_name(mod), c->rel);
		else
			snprintf(buf, len, "%.1f%% of stacks stopped in code without unwind "
				 "information: install debug symbols or build with "
				 "-fno-omit-frame-pointer", pct);
		break;
	case SP_UNWIND_UNKNOWN_MAP:
		snprintf(buf, len, "%.1f%% of stacks stopped at an address in no known mapping "
			 "(e.g. 0x%" PRIx64 "%s%s): a sample inside execve (registers of the old "
			 "image), or a missed mapping (lost records, a process gone before it was "
			 "read)", pct, c->rel, c->pid ? " in pid " : "", in_pid);
		break;
	case SP_UNWIND_JIT:
		snprintf(buf, len, "%.1f%% of stacks stopped in JIT-compiled code (e.g. 0x%" PRIx64
			 "%s%s): enable the runtime's perf map and frame pointers (node "
			 "--perf-basic-prof, python3.12 -X perf, -XX:+PreserveFramePointer)%s",
			 pct, c->rel, c->pid ? " in pid " : "", in_pid,
			 q->cg == SP_CG_AUTO ? "" : " and use --call-graph=auto");
		break;
	default:
		if (mod)
			snprintf(buf, len, "%.1f%% of stacks stopped on inconsistent data in %s at "
				 "0x%" PRIx64 " (a return address outside the stack, or CFI that "
				 "does not match the code: is the file on disk the one that ran?)",
				 pct, base_name(mod), c->rel);
		else if (unmappable(c->rel))
			snprintf(buf, len, "%.1f%% of stacks ended at an address no process can "
				 "map (e.g. 0x%" PRIx64 "): a frame-pointer guess that went into data, "
				 "or a corrupt stack", pct, c->rel);
		else
			snprintf(buf, len, "%.1f%% of stacks stopped on inconsistent data (a "
				 "corrupt stack or registers)", pct);
		break;
	}
}

/* Causes sorted by count, most frequent first; ties by status. */
static unsigned int sorted_causes(const struct sp_stackq *q, const struct cause **out)
{
	unsigned int n = 0, i, j;

	for (i = 0; i < q->ncauses; i++)
		out[n++] = &q->causes[i];
	for (i = 0; i < 8; i++)
		if (q->overflow[i].count)
			out[n++] = &q->overflow[i];
	/* insertion sort: n is small */
	for (i = 1; i < n; i++) {
		const struct cause *c = out[i];

		for (j = i; j > 0 && (out[j - 1]->count < c->count ||
		     (out[j - 1]->count == c->count && out[j - 1]->status > c->status)); j--)
			out[j] = out[j - 1];
		out[j] = c;
	}
	return n;
}

int sp_stackq_cause(const struct sp_stackq *q, unsigned int i, struct sp_stackq_cause *c)
{
	const struct cause *list[SP_STACKQ_MAX_CAUSES + 8];
	uint64_t assessed = q->samples - q->status[SP_UNWIND_UNKNOWN];
	unsigned int n = sorted_causes(q, list);

	if (i >= n)
		return -1;
	c->status = list[i]->status;
	c->module = list[i]->module;
	c->rel = list[i]->rel;
	c->count = list[i]->count;
	c->interp_whole = list[i]->interp_whole;
	c->share = assessed ? (double)c->count / assessed : 0;
	make_hint(q, list[i], c->share, c->hint, sizeof(c->hint));
	return 0;
}

void sp_stackq_print(const struct sp_stackq *q, FILE *out, const char *prefix,
		     unsigned int max_causes)
{
	struct sp_stackq_summary s;
	struct sp_stackq_cause c;
	unsigned int i, shown = 0;

	sp_stackq_summary(q, &s);
	if (!s.samples)
		return;
	if (!prefix)
		prefix = "";
	if (!s.assessed) {
		fprintf(out, "%sstacks: %" PRIu64 " samples with frame-pointer stacks, completeness "
			"not assessed (use --call-graph=dwarf or auto to assess it)\n", prefix,
			s.samples);
		return;
	}
	fprintf(out, "%sstacks: %.1f%% complete (%" PRIu64 " of %" PRIu64 " unwound samples "
		"reached the thread's first frame)", prefix, 100 * s.complete_share, s.complete,
		s.assessed);
	if (s.interp_whole)	/* cut natively, not in what the interpreter ran */
		fprintf(out, "; %" PRIu64 " more (%.1f%%) have their whole interpreted stack, "
			"cut only in native frames", s.interp_whole,
			100.0 * (double)s.interp_whole / (double)s.assessed);
	fputc('\n', out);
	/* The top causes, each status named once: its other causes (other
	 * modules, off-CPU copies) follow on lines of their own under it. */
	for (i = 0; i < max_causes && !sp_stackq_cause(q, i, &c); i++) {
		const char *name = sp_unwind_status_name(c.status);
		unsigned int status = c.status, j;

		if (shown & (1u << status))
			continue;
		shown |= 1u << status;
		fprintf(out, "%s  %s: %s\n", prefix, name, c.hint);
		for (j = i + 1; j < max_causes && !sp_stackq_cause(q, j, &c); j++)
			if (c.status == status)
				fprintf(out, "%s  %*s  %s\n", prefix, (int)strlen(name), "", c.hint);
	}
	/* Complete or not, such a stack is a guess: say how many there are. */
	if (s.fp_guess)
		fprintf(out, "%s  fp_guess: %" PRIu64 " stack%s (%.1f%%) left a frame without "
			"CFI through its frame pointer (may skip frames)\n", prefix, s.fp_guess,
			s.fp_guess == 1 ? "" : "s", 100.0 * (double)s.fp_guess / (double)s.assessed);
}
