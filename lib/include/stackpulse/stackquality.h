/* SPDX-License-Identifier: MIT */
/*
 * stackquality.h - how complete the recorded stacks are, and why not: the
 * share of samples whose stack reached the thread's first frame, and the
 * top causes of the others, each with a concrete hint ("34% of stacks hit
 * the 8192-byte stack copy: use --call-graph=dwarf,32768").
 *
 * sp-record feeds it each sample's unwind status as it unwinds; tools that
 * read a recording (sp-decode --stats, sp-flame) feed it the header and the
 * samples with the stream's definitions, from which it finds the module the
 * outermost frame of each cut stack lies in.
 *
 * Memory is bounded: causes are kept per (status, module) for at most
 * SP_STACKQ_MAX_CAUSES distinct pairs; later pairs are merged per status.
 */
#ifndef STACKPULSE_STACKQUALITY_H
#define STACKPULSE_STACKQUALITY_H

#include <stdint.h>
#include <stdio.h>

#include "defs.h"
#include "record.h"

#define SP_STACKQ_MAX_CAUSES 256

struct sp_stackq;

struct sp_stackq *sp_stackq_new(void);
void sp_stackq_free(struct sp_stackq *q);

/* What the recording was made with, for the hints. stack_size is the
 * --call-graph=dwarf copy size in bytes (0 = unknown), max_depth the frame
 * limit (0 = unknown). */
void sp_stackq_set_config(struct sp_stackq *q, enum sp_call_graph cg, uint64_t stack_size,
			  uint64_t max_depth);
/* The copy of off-CPU samples (SP_SAMPLE_OFFCPU), when it differs (0: 8192). */
void sp_stackq_set_offcpu_copy(struct sp_stackq *q, uint64_t stack_size);
/* The same, read from a header: call_graph, and the "call-graph=dwarf,SIZE"
 * (or "stack-size=SIZE"), "offcpu-stack-size=SIZE" and "max-depth=N" words
 * of its features string. */
void sp_stackq_set_header(struct sp_stackq *q, const struct sp_header *h, const struct sp_defs *d);

/*
 * Count n samples (of enum sp_sample_kind kind) with unwind status, whose
 * unwind stopped in module (a path, NULL = none or unknown) at the
 * file-relative address rel.
 */
void sp_stackq_add(struct sp_stackq *q, unsigned int status, unsigned int kind,
		   const char *module, uint64_t rel, uint64_t n);
/* The same, whole of the n with their interpreted stack read whole (the
 * native stack of an interpreter thread cut, its interpreted one not). */
void sp_stackq_add_interp(struct sp_stackq *q, unsigned int status, unsigned int kind,
			  const char *module, uint64_t rel, uint64_t n, uint64_t whole);
/* Count a decoded sample: the module is that of its stack's outermost
 * frame; an incomplete one whose stack holds interpreted frames and none
 * of the placeholders of a truncated or unreadable interpreted stack
 * counts as whole. One marked SP_SAMPLE_FP_GUESS is counted as such too. */
void sp_stackq_add_sample(struct sp_stackq *q, const struct sp_defs *d, const struct sp_sample *s);

struct sp_stackq_summary {
	uint64_t samples;	/* all samples counted */
	uint64_t assessed;	/* samples with a status other than SP_UNWIND_UNKNOWN */
	uint64_t complete;
	uint64_t status[8];	/* per enum sp_unwind_status */
	double complete_share;	/* complete / assessed, 0..1 (0 when none assessed) */
	uint64_t interp_whole;	/* incomplete, but with a whole interpreted stack */
	uint64_t fp_guess;	/* samples marked SP_SAMPLE_FP_GUESS, whatever their
				 * status (only sp_stackq_add_sample() sees them) */
};
void sp_stackq_summary(const struct sp_stackq *q, struct sp_stackq_summary *s);

/* One cause of incomplete stacks, as returned by sp_stackq_cause(). */
struct sp_stackq_cause {
	unsigned int status;	/* enum sp_unwind_status, never COMPLETE */
	const char *module;	/* path, or NULL; owned by q */
	uint64_t rel;		/* an example address in it */
	uint64_t count;
	uint64_t interp_whole;	/* of count, with a whole interpreted stack */
	double share;		/* of the assessed samples, 0..1 */
	char hint[512];		/* one sentence for a human */
};
/* The i-th most frequent cause (0-based). 0, or -1 past the last one. */
int sp_stackq_cause(const struct sp_stackq *q, unsigned int i, struct sp_stackq_cause *c);

/*
 * Print the summary: one line with the complete share, then at most
 * max_causes lines with the top causes and their hints, then, when some
 * stacks left a frame through its frame pointer, one line that counts them
 * (those may skip frames), each line starting with prefix. Prints nothing
 * when no sample was counted.
 */
void sp_stackq_print(const struct sp_stackq *q, FILE *out, const char *prefix,
		     unsigned int max_causes);

#endif
