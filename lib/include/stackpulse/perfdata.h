/* SPDX-License-Identifier: MIT */
/*
 * perfdata.h - turn a perf.data file (what `perf record` writes, in file or
 * pipe mode) into an ordinary record stream: the header's feature sections
 * become the stream's header, COMM/FORK/EXIT/MMAP/MMAP2 records its
 * processes, threads and modules, and PERF_RECORD_SAMPLE its samples, with
 * frame-pointer callchains (kernel and user parts) and --call-graph=dwarf
 * user stacks unwound by the same unwinder sp-record uses (unwind.h).
 *
 * The file is input nobody vouches for: every length it gives is checked
 * against the bytes that are there and against a fixed bound before
 * anything is allocated, and the parser has no recursion. Record types and
 * features it does not know are skipped and counted, never fatal; a
 * malformed file is reported once, as 'FILE@OFFSET: what', and the import
 * stops there (what came before it is written).
 *
 * Only perf.data written on a little-endian machine is read (the common
 * case); a byte-swapped file is refused with a message.
 */
#ifndef STACKPULSE_PERFDATA_H
#define STACKPULSE_PERFDATA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "writer.h"

struct sp_perfdata_opts {
	/*
	 * The event whose samples become the stream's CPU samples, by the name
	 * perf gives it ("cpu-clock", "page-faults", "sched:sched_switch"), or
	 * NULL for the first event of the file. Samples of perf's off-CPU event
	 * ("offcpu-time", perf record --off-cpu) always become off-CPU samples.
	 */
	const char *event;
	bool no_unwind;		/* do not unwind --call-graph=dwarf stacks */
};

#define SP_PERFDATA_NTYPES 128	/* record types counted one by one */
#define SP_PERFDATA_NFEAT 64	/* feature bits counted one by one */

struct sp_perfdata_stats {
	bool pipe;			/* the input was in pipe mode */
	uint64_t bytes;			/* bytes of records read */
	uint64_t records;		/* records read */
	uint64_t type[SP_PERFDATA_NTYPES];	/* records per type (the last: any higher) */
	uint64_t unknown_records;	/* records of types not understood, skipped */
	uint64_t features;		/* feature sections read */
	uint64_t unknown_features;	/* feature sections skipped */
	uint64_t feature_seen[SP_PERFDATA_NFEAT];	/* per feature bit: 1 read, 2 skipped */
	uint64_t samples;		/* samples written */
	uint64_t offcpu_samples;	/* of which off-CPU */
	uint64_t other_event_samples;	/* samples of events not chosen, left out */
	uint64_t bad_samples;		/* samples that did not parse, skipped */
	uint64_t unwound, unwind_failed;	/* DWARF stacks unwound; of which stopped early */
	uint64_t lost;			/* samples the kernel lost (PERF_RECORD_LOST) */
	uint64_t processes, threads, modules;
	uint64_t build_ids;		/* build-id table entries */
	uint64_t ksyms;			/* ksym records written (this kernel's names) */
	uint64_t kernel_unnamed;	/* kernel frames (in samples) left unnamed */
	char kernel_unnamed_why[256];	/* why, when the file's kernel is not this one */
	unsigned int nevents;		/* events (attrs) in the file */
	char event[128];		/* the chosen event's name */
};

/*
 * Read the perf.data at path ("-": standard input, which may be a pipe)
 * and write its records with w (header first). Returns 0, or -1 after
 * reporting why (the file cannot be read, is not perf.data, or is
 * malformed at an offset the message names); st (zeroed first) says what
 * was read, written and skipped either way.
 */
int sp_perfdata_import(const char *path, struct sp_writer *w,
		       const struct sp_perfdata_opts *o, struct sp_perfdata_stats *st);

/* The import's counts as text (sp-decode --stats), one line per fact. */
void sp_perfdata_stats_print(const struct sp_perfdata_stats *st, FILE *out);

#endif
