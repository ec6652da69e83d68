// SPDX-License-Identifier: MIT
/*
 * How long a recording lasted (walltime.h). One definition, so that two
 * tools never give one recording two durations: what a user means by it is
 * how long sp-record recorded, from its start (the header) to its end (the
 * end record). Only when there is no end record do the records themselves
 * bound it, and that is a lower bound the tools say is one.
 */
#include "walltime.h"

static void saw(struct sp_walltime *w, uint64_t t)
{
	if (!t)
		return;
	if (!w->first_time || t < w->first_time)
		w->first_time = t;
	if (t > w->last_time)
		w->last_time = t;
}

void sp_walltime_add(struct sp_walltime *w, const struct sp_record *rec)
{
	switch (rec->kind) {
	case SP_REC_HEADER:
		if (!w->headers++)
			w->start_mono = rec->header.start_mono_ns;
		/* a segment after the rotated end: that end is not the last */
		w->rotated_time = 0;
		break;
	case SP_REC_END:
		/* the recording's end, not one of its timed records; a
		 * segment's end (segments joined): the recording goes on, but
		 * when no segment follows (one read alone), it is where what
		 * there is of the recording ends */
		if (rec->end.reason != SP_ENDR_ROTATED)
			w->end_time = sp_record_time(rec);
		else
			w->rotated_time = sp_record_time(rec);
		break;
	case SP_REC_SAMPLE:
	case SP_REC_EVENT:
	case SP_REC_SPAN_START:
	case SP_REC_SPAN_STOP:
	case SP_REC_SPAN_RAISE:
		saw(w, sp_record_time(rec));
		break;
	case SP_REC_SPAN:
		/* the marks, correlated: a range, which sp_record_time() has
		 * no one time for; both of its ends bound the recording */
		saw(w, rec->span.start);
		saw(w, rec->span.stop);
		break;
	default:
		/*
		 * Only records of work bound the recording, as sp-decode
		 * --stats always counted them. The other kinds with a time are
		 * bookkeeping: definitions (process, thread, module, runtime,
		 * probe; a later segment replays them stamped with its own
		 * start: segments.c), their ends, fiber switches, lost windows.
		 */
		break;
	}
}

enum sp_walltime_basis sp_walltime_get(const struct sp_walltime *w, uint64_t *ns)
{
	if (w->start_mono && w->end_time > w->start_mono) {
		*ns = w->end_time - w->start_mono;
		return SP_WALLTIME_HEADER_TO_END;
	}
	if (!w->end_time && w->start_mono && w->rotated_time > w->start_mono) {
		/* the segment's records are before its end; a span that
		 * sp-correlate ended open there may be stamped later */
		*ns = (w->last_time > w->rotated_time ? w->last_time : w->rotated_time) -
		      w->start_mono;
		return SP_WALLTIME_TO_ROTATION;
	}
	if (w->last_time > w->first_time) {
		*ns = w->last_time - w->first_time;
		return SP_WALLTIME_FIRST_TO_LAST;
	}
	*ns = 0;
	return SP_WALLTIME_UNKNOWN;
}

const char *sp_walltime_note(enum sp_walltime_basis b)
{
	switch (b) {
	case SP_WALLTIME_HEADER_TO_END:
		return "";
	case SP_WALLTIME_FIRST_TO_LAST:
		return "no end record: first to last record";
	case SP_WALLTIME_TO_ROTATION:
		return "a segment: the recording goes on in the next";
	default:
		return "no end record and no timed records";
	}
}
