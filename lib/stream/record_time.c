// SPDX-License-Identifier: MIT
/*
 * The time of a record (record.h): one switch over the kinds, so that the
 * merge, the triggers and the tools that bound a recording never disagree
 * about which field is a record's time.
 */
#include "record.h"

uint64_t sp_record_time(const struct sp_record *r)
{
	switch (r->kind) {
	case SP_REC_PROCESS:
		return r->process.time;
	case SP_REC_THREAD:
		return r->thread.time;
	case SP_REC_MODULE:
		return r->module.time;
	case SP_REC_SAMPLE:
		return r->sample.time;
	case SP_REC_EVENT:
		return r->event.time;
	case SP_REC_SPAN_START:
	case SP_REC_SPAN_STOP:
	case SP_REC_SPAN_RAISE:
		return r->mark.time;
	case SP_REC_PROCESS_END:
		return r->process_end.time;
	case SP_REC_THREAD_END:
		return r->thread_end.time;
	case SP_REC_FIBER_SWITCH:
		return r->fiber_switch.time;
	case SP_REC_MODULE_END:
		return r->module_end.time;
	case SP_REC_LOST:
		return r->lost.time;
	case SP_REC_END:
		return r->end.time;
	case SP_REC_PROBE:
		return r->probe.time;
	case SP_REC_RUNTIME:
		return r->runtime.time;
	case SP_REC_JITSYM:
		return r->jitsym.time;	/* 0 once read from a spool */
	default:
		return 0;
	}
}
