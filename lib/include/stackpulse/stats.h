/* SPDX-License-Identifier: MIT */
/*
 * stats.h - a summary of a record stream: records per kind, samples,
 * processes, threads, time span, losses, bytes per sample (sp-decode --stats).
 */
#ifndef STACKPULSE_STATS_H
#define STACKPULSE_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "defs.h"
#include "hashmap.h"
#include "record.h"
#include "walltime.h"

#define SP_STATS_COMMAND_MAX 8192

struct sp_stats {
	uint64_t records;
	uint64_t per_kind[SP_REC_KIND_MAX + 1];	/* [SP_REC_KIND_MAX]: unknown kinds */
	uint64_t samples, sample_weight, offcpu_ns;
	uint64_t unwind[8];	/* samples per enum sp_unwind_status */
	uint64_t fp_guess;	/* samples marked SP_SAMPLE_FP_GUESS */
	uint64_t events_per_kind[64];
	uint64_t lost[SP_LOST_WHAT_MAX];	/* per enum sp_lost_what */
	struct sp_walltime wall;	/* the duration (walltime.h) */
	uint64_t streams;
	uint64_t start_wall, start_mono;	/* of the first header */
	/* A flight dump's end (SP_ENDR_TRIGGER): what fired, as recorded (cut
	 * at a whole character), escaped when printed. */
	char trigger[64], trigger_detail[256];
	size_t trigger_len, trigger_detail_len;
	uint64_t trigger_time;
	bool dump;
	/* The first header's command line, as recorded (cut at a whole
	 * character to SP_STATS_COMMAND_MAX bytes), escaped when printed. */
	char *command;
	size_t command_len;
	struct sp_u64map pids, tids;
	uint64_t max_depth, depth_sum;
	uint32_t *depth;	/* per stack id of the current stream */
	size_t depth_cap;
};

void sp_stats_init(struct sp_stats *s);
void sp_stats_release(struct sp_stats *s);
/* Count one record; d gives stack depths. */
void sp_stats_add(struct sp_stats *s, const struct sp_defs *d, const struct sp_record *rec);
/* Print the summary; input_bytes is what the records took (0 = unknown). */
void sp_stats_print(const struct sp_stats *s, FILE *out, uint64_t input_bytes, bool json);

#endif
