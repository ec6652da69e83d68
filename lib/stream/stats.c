// SPDX-License-Identifier: MIT
/* A summary of a record stream (stats.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escape.h"
#include "events.h"
#include "schema.h"
#include "sp.h"
#include "stats.h"

void sp_stats_init(struct sp_stats *s)
{
	memset(s, 0, sizeof(*s));
}

void sp_stats_release(struct sp_stats *s)
{
	sp_u64map_release(&s->pids);
	sp_u64map_release(&s->tids);
	free(s->depth);
	free(s->command);
	memset(s, 0, sizeof(*s));
}

/* The bytes of string id into dst, cut at a whole character; their length. */
static size_t copy_text(char *dst, size_t size, const struct sp_defs *d, uint64_t id)
{
	size_t len = 0;
	const char *p = sp_defs_str(d, id, &len);

	if (!p)
		return 0;
	if (len > size)
		len = sp_utf8_cut(p, len, size);
	memcpy(dst, p, len);
	return len;
}

static void saw_trigger(struct sp_stats *s, const struct sp_defs *d, const struct sp_end *e)
{
	s->dump = true;
	s->trigger_len = copy_text(s->trigger, sizeof(s->trigger), d, e->trigger);
	s->trigger_detail_len = copy_text(s->trigger_detail, sizeof(s->trigger_detail), d,
					  e->detail);
	s->trigger_time = e->trigger_time;
}

/* "2025-12-02T10:00:00.150Z (+150.0 ms)" for monotonic time t, or "?". */
static void fmt_at(const struct sp_stats *s, uint64_t t, char *out, size_t size)
{
	uint64_t wall;
	time_t secs;
	struct tm tm;
	size_t n;

	snprintf(out, size, "?");
	if (!t || !s->start_wall || t < s->start_mono)
		return;
	wall = s->start_wall + (t - s->start_mono);
	secs = (time_t)(wall / 1000000000ull);
	gmtime_r(&secs, &tm);
	n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, size - n, ".%03lluZ (+%.3f s)", (unsigned long long)(wall / 1000000ull % 1000),
		 (t - s->start_mono) / 1e9);
}

static void save_command(struct sp_stats *s, const struct sp_header *h)
{
	size_t len = h->command.len;

	if (!len)
		return;
	if (len > SP_STATS_COMMAND_MAX)
		len = sp_utf8_cut((const char *)h->command.p, len, SP_STATS_COMMAND_MAX);
	s->command = sp_xmalloc(len + 1);
	memcpy(s->command, h->command.p, len);
	s->command[len] = 0;
	s->command_len = len;
}

void sp_stats_add(struct sp_stats *s, const struct sp_defs *d, const struct sp_record *rec)
{
	unsigned int k = rec->kind <= SP_REC_KIND_MAX ? rec->kind : SP_REC_KIND_MAX;

	s->records++;
	s->per_kind[k]++;
	sp_walltime_add(&s->wall, rec);
	switch (rec->kind) {
	case SP_REC_HEADER:
		if (!s->streams++) {
			s->start_wall = rec->header.start_wall_ns;
			s->start_mono = rec->header.start_mono_ns;
			save_command(s, &rec->header);
		}
		break;
	case SP_REC_END:
		if (rec->end.reason == SP_ENDR_TRIGGER)
			saw_trigger(s, d, &rec->end);
		break;
	case SP_REC_STACK: {
		uint64_t id = sp_defs_nstacks(d), depth;

		if (id >= s->depth_cap) {
			size_t old = s->depth_cap;

			sp_grow(&s->depth, &s->depth_cap, id + 1, sizeof(*s->depth));
			memset(s->depth + old, 0, (s->depth_cap - old) * sizeof(*s->depth));
		}
		depth = rec->stack.parent < id ? s->depth[rec->stack.parent] + 1u : 1u;
		s->depth[id] = (uint32_t)depth;
		break;
	}
	case SP_REC_SAMPLE: {
		uint64_t depth = rec->sample.stack < s->depth_cap ? s->depth[rec->sample.stack] : 0;

		s->samples++;
		if (rec->sample.kind == SP_SAMPLE_OFFCPU)
			s->offcpu_ns += rec->sample.weight;
		else
			s->sample_weight += rec->sample.weight;
		s->unwind[rec->sample.unwind < 8 ? rec->sample.unwind : 0]++;
		if (rec->sample.flags & SP_SAMPLE_FP_GUESS)
			s->fp_guess++;
		s->depth_sum += depth;
		if (depth > s->max_depth)
			s->max_depth = depth;
		sp_u64map_put(&s->pids, rec->sample.pid, 1);
		sp_u64map_put(&s->tids, rec->sample.tid, 1);
		break;
	}
	case SP_REC_EVENT:
		s->events_per_kind[rec->event.kind < 64 ? rec->event.kind : 0]++;
		sp_u64map_put(&s->pids, rec->event.pid, 1);
		break;
	case SP_REC_PROCESS:
		sp_u64map_put(&s->pids, rec->process.pid, 1);
		break;
	case SP_REC_THREAD:
		sp_u64map_put(&s->tids, rec->thread.tid, 1);
		break;
	case SP_REC_LOST:
		if (rec->lost.what < SP_LOST_WHAT_MAX)
			s->lost[rec->lost.what] += rec->lost.count;
		break;
	default:
		break;
	}
}

static const char *kind_label(unsigned int k)
{
	return k == SP_REC_KIND_MAX ? "unknown" : sp_rec_kind_name(k);
}

void sp_stats_print(const struct sp_stats *s, FILE *out, uint64_t input_bytes, bool json)
{
	static const char *const unwind_names[8] = { "unassessed", "complete", "depth",
		"stack_size", "no_cfi", "unknown_map", "jit", "error" };
	uint64_t ns;
	enum sp_walltime_basis basis = sp_walltime_get(&s->wall, &ns);
	double span = ns / 1e9;
	unsigned int k;
	bool first = true;

	if (json) {
		fprintf(out, "{\"records\":%" PRIu64 ",\"samples\":%" PRIu64
			",\"processes\":%zu,\"threads\":%zu,\"duration_s\":%.6f"
			",\"lost_samples\":%" PRIu64 ",\"lost_events\":%" PRIu64
			",\"lost_spans\":%" PRIu64 ",\"bytes\":%" PRIu64, s->records, s->samples,
			s->pids.n, s->tids.n, span, s->lost[0], s->lost[1], s->lost[2], input_bytes);
		if (s->samples && input_bytes)
			fprintf(out, ",\"bytes_per_sample\":%.2f", (double)input_bytes / s->samples);
		if (s->lost[3])
			fprintf(out, ",\"interp_unread\":%" PRIu64, s->lost[3]);
		if (s->lost[SP_LOST_SPAN_STOPS])
			fprintf(out, ",\"lost_span_stops\":%" PRIu64, s->lost[SP_LOST_SPAN_STOPS]);
		if (s->lost[SP_LOST_UNPROBED])
			fprintf(out, ",\"unprobed\":%" PRIu64, s->lost[SP_LOST_UNPROBED]);
		if (s->streams > 1)
			fprintf(out, ",\"streams\":%" PRIu64, s->streams);
		if (s->fp_guess)
			fprintf(out, ",\"fp_guess\":%" PRIu64, s->fp_guess);
		if (s->lost[SP_LOST_WINDOW])
			fprintf(out, ",\"lost_window\":%" PRIu64, s->lost[SP_LOST_WINDOW]);
		if (s->lost[SP_LOST_INTERP_COPIES])
			fprintf(out, ",\"interp_copies_refused\":%" PRIu64,
				s->lost[SP_LOST_INTERP_COPIES]);
		if (s->lost[SP_LOST_INTERP_EVENTS])
			fprintf(out, ",\"interp_events_lost\":%" PRIu64,
				s->lost[SP_LOST_INTERP_EVENTS]);
		if (s->lost[SP_LOST_LATE_PROBES])
			fprintf(out, ",\"late_probes\":%" PRIu64, s->lost[SP_LOST_LATE_PROBES]);
		fprintf(out, ",\"duration_ns\":%" PRIu64, ns);
		if (basis != SP_WALLTIME_HEADER_TO_END) {
			fputs(",\"duration_note\":", out);
			sp_esc_json_put(out, sp_walltime_note(basis), strlen(sp_walltime_note(basis)), 0);
		}
		if (s->command) {
			fputs(",\"command\":", out);
			sp_esc_json_put(out, s->command, s->command_len, 0);
		}
		if (s->dump) {
			fputs(",\"trigger\":", out);
			sp_esc_json_put(out, s->trigger, s->trigger_len, 0);
			fputs(",\"trigger_detail\":", out);
			sp_esc_json_put(out, s->trigger_detail, s->trigger_detail_len, 0);
			fprintf(out, ",\"trigger_time\":%" PRIu64, s->trigger_time);
		}
		fprintf(out, ",\"kinds\":{");
		for (k = 1; k <= SP_REC_KIND_MAX; k++) {
			if (!s->per_kind[k])
				continue;
			fprintf(out, "%s\"%s\":%" PRIu64, first ? "" : ",", kind_label(k),
				s->per_kind[k]);
			first = false;
		}
		fprintf(out, "},\"events\":{");
		first = true;
		for (k = 1; k < 64; k++) {
			const struct sp_event_schema *es = sp_event_schema(k);

			if (!s->events_per_kind[k])
				continue;
			fprintf(out, "%s\"%s\":%" PRIu64, first ? "" : ",", es ? es->name : "other",
				s->events_per_kind[k]);
			first = false;
		}
		fprintf(out, "},\"unwind\":{");
		first = true;
		for (k = 0; k < 8; k++) {
			if (!s->unwind[k])
				continue;
			fprintf(out, "%s\"%s\":%" PRIu64, first ? "" : ",", unwind_names[k],
				s->unwind[k]);
			first = false;
		}
		fprintf(out, "}}\n");
		return;
	}
	fprintf(out, "records         %" PRIu64 "\n", s->records);
	for (k = 1; k <= SP_REC_KIND_MAX; k++)
		if (s->per_kind[k])
			fprintf(out, "  %-13s %" PRIu64 "\n", kind_label(k), s->per_kind[k]);
	fprintf(out, "samples         %" PRIu64, s->samples);
	if (s->offcpu_ns)
		fprintf(out, " (off-CPU %.3f s)", s->offcpu_ns / 1e9);
	fprintf(out, "\n");
	if (s->samples) {
		fprintf(out, "stack depth     mean %.1f, max %" PRIu64 "\n",
			(double)s->depth_sum / s->samples, s->max_depth);
		for (k = 1; k < 8; k++)
			if (s->unwind[k])
				fprintf(out, "  %-13s %.1f%%\n", unwind_names[k],
					100.0 * s->unwind[k] / s->samples);
	}
	for (k = 1; k < 64; k++) {
		const struct sp_event_schema *es = sp_event_schema(k);

		if (s->events_per_kind[k])
			fprintf(out, "  %-13s %" PRIu64 "\n", es ? es->name : "other",
				s->events_per_kind[k]);
	}
	fprintf(out, "processes       %zu\nthreads         %zu\n", s->pids.n, s->tids.n);
	fprintf(out, "duration        %.3f s", span);
	if (basis != SP_WALLTIME_HEADER_TO_END)
		fprintf(out, " (%s)", sp_walltime_note(basis));
	fputc('\n', out);
	if (s->command) {
		fputs("command         ", out);
		sp_esc_text_put(out, s->command, s->command_len, 0);
		fputc('\n', out);
	}
	fprintf(out, "lost            %" PRIu64 " samples, %" PRIu64 " events, %" PRIu64
		" spans\n", s->lost[0], s->lost[1], s->lost[2]);
	if (s->lost[3])
		fprintf(out, "interp unread   %" PRIu64 " samples (%.1f%%): their interpreted "
			"stack could not be read\n", s->lost[3],
			s->samples ? 100.0 * s->lost[3] / s->samples : 0.0);
	if (s->lost[SP_LOST_SPAN_STOPS])
		fprintf(out, "span stops      %" PRIu64 " dropped: their start came before the "
			"recording\n", s->lost[SP_LOST_SPAN_STOPS]);
	if (s->lost[SP_LOST_UNPROBED])
		fprintf(out, "unprobed        %" PRIu64 " processes left without some span "
			"probes\n", s->lost[SP_LOST_UNPROBED]);
	if (s->lost[SP_LOST_WINDOW])
		fprintf(out, "window          dropped %" PRIu64 " records (older than the flight "
			"recorder's window)\n", s->lost[SP_LOST_WINDOW]);
	if (s->lost[SP_LOST_INTERP_COPIES])
		fprintf(out, "interp copies   %" PRIu64 " Python code-object copies refused (a "
			"user's budget)\n", s->lost[SP_LOST_INTERP_COPIES]);
	if (s->lost[SP_LOST_INTERP_EVENTS])
		fprintf(out, "interp events   %" PRIu64 " kernel events without the interpreted "
			"stack they had (dropped unread: their thread's queue was full before "
			"they were read)\n", s->lost[SP_LOST_INTERP_EVENTS]);
	if (s->lost[SP_LOST_LATE_PROBES])
		fprintf(out, "late probes     %" PRIu64 " processes whose span probes went on "
			"late (ld.so took another runtime library than the one found at exec): "
			"what each ran before is missed\n", s->lost[SP_LOST_LATE_PROBES]);
	if (s->streams > 1)
		fprintf(out, "streams         %" PRIu64 " (segments of a recording, or spools "
			"joined)\n", s->streams);
	if (s->dump) {
		char at[80];

		fmt_at(s, s->trigger_time, at, sizeof(at));
		fputs("dump: trigger ", out);
		if (s->trigger_len)
			sp_esc_text_put(out, s->trigger, s->trigger_len, 0);
		else
			fputs("?", out);
		fprintf(out, " at %s", at);
		if (s->trigger_detail_len) {
			fputs(": ", out);
			sp_esc_text_put(out, s->trigger_detail, s->trigger_detail_len, 0);
		}
		fputc('\n', out);
	}
	if (input_bytes) {
		fprintf(out, "bytes           %" PRIu64 "\n", input_bytes);
		if (s->samples)
			fprintf(out, "bytes/sample    %.2f\n", (double)input_bytes / s->samples);
	}
}
