// SPDX-License-Identifier: MIT
/*
 * The record schema: one row per field of each kind, in spool order. Appending
 * a field to a kind is compatible both ways (old readers skip it, new readers
 * read it as 0 from old spools); reordering or removing one is not.
 */
#include <string.h>

#include "schema.h"

#define F(st, fld, ty) { #fld, ty, offsetof(struct st, fld), 0, 0, NULL, 0 }
#define FA(st, fld, ty) { #fld, ty, offsetof(struct st, fld), 0, SP_SF_ALWAYS, NULL, 0 }
#define FR(st, fld, ty, r) { #fld, ty, offsetof(struct st, fld), r, 0, NULL, 0 }
#define FRA(st, fld, ty, r) { #fld, ty, offsetof(struct st, fld), r, SP_SF_ALWAYS, NULL, 0 }
#define FS(st, fld) FR(st, fld, SP_FT_STR, SP_REF_STRING)
#define FE(st, fld, nm) { #fld, SP_FT_UINT, offsetof(struct st, fld), 0, 0, nm, \
			  sizeof(nm) / sizeof(nm[0]) }
#define N(a) (sizeof(a) / sizeof(a[0]))

static const char *const clock_names[] = { "unknown", "monotonic" };
static const char *const cg_names[] = { "none", "fp", "dwarf", "auto" };
static const char *const mode_names[] = { "user", "kernel", "interp", "jit" };
static const char *const unwind_names[] = { "unknown", "complete", "depth", "stack_size",
	"no_cfi", "unknown_map", "jit", "error" };
const char *sp_unwind_status_name(unsigned int status)
{
	return status < N(unwind_names) ? unwind_names[status] : "invalid";
}

static const char *const sample_kind_names[] = { "cpu", "offcpu" };
static const char *const rule_names[] = { "none", "thread", "fork", "gap" };
static const char *const runtime_names[] = { "unknown", "ruby", "python", "usdt", "uprobe" };
static const char *const sym_status_names[] = { "ok", "no_symbols", "stripped",
	"build_id_mismatch", "file_missing", "jit_no_map", "no_module", "bad_file" };
static const char *const end_names[] = { "stopped", "raised", "open", "incomplete", "synthetic" };
static const char *const lost_names[] = { "samples", "events", "spans", "interp",
	"span_stops", "unprobed", "window", "interp_copies", "interp_events", "late_probes" };
static const char *const endr_names[] = { "exited", "duration", "signal", "error", "rotated",
	"trigger" };

static const struct sp_schema_field header_f[] = {
	FA(sp_header, version, SP_FT_UINT),
	FA(sp_header, start_wall_ns, SP_FT_UINT),
	FA(sp_header, start_mono_ns, SP_FT_TIME),
	FE(sp_header, clock, clock_names),
	F(sp_header, sample_period, SP_FT_UINT),
	F(sp_header, sample_freq, SP_FT_UINT),
	FE(sp_header, call_graph, cg_names),
	F(sp_header, flags, SP_FT_HEX),
	F(sp_header, event, SP_FT_TEXT),
	F(sp_header, hostname, SP_FT_TEXT),
	F(sp_header, kernel, SP_FT_TEXT),
	F(sp_header, machine, SP_FT_TEXT),
	F(sp_header, command, SP_FT_TEXT),
	F(sp_header, producer, SP_FT_TEXT),
	F(sp_header, features, SP_FT_TEXT),
	F(sp_header, unavailable, SP_FT_TEXT),
	F(sp_header, segment, SP_FT_UINT),
};

static const struct sp_schema_field string_f[] = {
	FA(sp_string, id, SP_FT_ID),
	FA(sp_string, value, SP_FT_STRVAL),
};

static const struct sp_schema_field process_f[] = {
	FA(sp_process, time, SP_FT_TIME),
	FA(sp_process, pid, SP_FT_UINT),
	FA(sp_process, ppid, SP_FT_UINT),
	FS(sp_process, comm),
	FS(sp_process, exe),
	F(sp_process, flags, SP_FT_HEX),
	FS(sp_process, args),
	F(sp_process, nspid, SP_FT_UINT),
	F(sp_process, start_boot_ns, SP_FT_UINT),
	F(sp_process, pid_ns, SP_FT_UINT),
	F(sp_process, mnt_ns, SP_FT_UINT),
	F(sp_process, net_ns, SP_FT_UINT),
	F(sp_process, cgroup_ns, SP_FT_UINT),
	FS(sp_process, cgroup),
	FS(sp_process, runtime),
	FS(sp_process, container),
	FS(sp_process, pod),
};

static const struct sp_schema_field thread_f[] = {
	FA(sp_thread, time, SP_FT_TIME),
	FA(sp_thread, tid, SP_FT_UINT),
	FA(sp_thread, pid, SP_FT_UINT),
	FS(sp_thread, name),
	F(sp_thread, nstid, SP_FT_UINT),
};

static const struct sp_schema_field module_f[] = {
	FA(sp_module, id, SP_FT_ID),
	FA(sp_module, time, SP_FT_TIME),
	FA(sp_module, pid, SP_FT_UINT),
	FA(sp_module, start, SP_FT_HEX),
	FA(sp_module, end, SP_FT_HEX),
	F(sp_module, pgoff, SP_FT_HEX),
	FS(sp_module, path),
	F(sp_module, build_id, SP_FT_BYTES),
	F(sp_module, dev, SP_FT_UINT),
	F(sp_module, ino, SP_FT_UINT),
	F(sp_module, size, SP_FT_UINT),
	F(sp_module, mtime_ns, SP_FT_UINT),
	F(sp_module, prot, SP_FT_UINT),
	F(sp_module, flags, SP_FT_HEX),
};

static const struct sp_schema_field frame_f[] = {
	FA(sp_frame, id, SP_FT_ID),
	FRA(sp_frame, module, SP_FT_UINT, SP_REF_MODULE),
	FA(sp_frame, rel, SP_FT_HEX),
	FA(sp_frame, addr, SP_FT_HEX),
	FE(sp_frame, mode, mode_names),
	F(sp_frame, pid, SP_FT_UINT),
	F(sp_frame, flags, SP_FT_HEX),
};

static const struct sp_schema_field stack_f[] = {
	FA(sp_stack, id, SP_FT_ID),
	FRA(sp_stack, parent, SP_FT_UINT, SP_REF_STACK),
	FRA(sp_stack, frame, SP_FT_UINT, SP_REF_FRAME),
};

static const struct sp_schema_field sample_f[] = {
	FA(sp_sample, time, SP_FT_TIME),
	FA(sp_sample, pid, SP_FT_UINT),
	FA(sp_sample, tid, SP_FT_UINT),
	FA(sp_sample, cpu, SP_FT_UINT),
	FRA(sp_sample, stack, SP_FT_UINT, SP_REF_STACK),
	FA(sp_sample, weight, SP_FT_UINT),
	FE(sp_sample, unwind, unwind_names),
	FE(sp_sample, kind, sample_kind_names),
	F(sp_sample, span, SP_FT_UINT),
	FE(sp_sample, rule, rule_names),
	F(sp_sample, flags, SP_FT_HEX),
};

/* An event's common part; its kind-specific values follow (lib/stream/events.c). */
static const struct sp_schema_field event_f[SP_EVENT_COMMON_FIELDS] = {
	FA(sp_event, time, SP_FT_TIME),
	FA(sp_event, pid, SP_FT_UINT),
	FA(sp_event, tid, SP_FT_UINT),
	FA(sp_event, kind, SP_FT_UINT),
	F(sp_event, span, SP_FT_UINT),
	FE(sp_event, rule, rule_names),
};

static const struct sp_schema_field mark_f[] = {
	FA(sp_span_mark, time, SP_FT_TIME),
	FA(sp_span_mark, pid, SP_FT_UINT),
	FA(sp_span_mark, tid, SP_FT_UINT),
	FE(sp_span_mark, runtime, runtime_names),
	FS(sp_span_mark, klass),
	FS(sp_span_mark, method),
	FS(sp_span_mark, file),
	F(sp_span_mark, line, SP_FT_UINT),
	F(sp_span_mark, depth, SP_FT_UINT),
	F(sp_span_mark, flags, SP_FT_HEX),
	F(sp_span_mark, coro, SP_FT_HEX),
};

static const struct sp_schema_field symbol_f[] = {
	FRA(sp_symbol, frame, SP_FT_UINT, SP_REF_FRAME),
	FA(sp_symbol, index, SP_FT_UINT),
	FS(sp_symbol, func),
	FS(sp_symbol, file),
	F(sp_symbol, line, SP_FT_UINT),
	F(sp_symbol, column, SP_FT_UINT),
	F(sp_symbol, offset, SP_FT_HEX),
	FE(sp_symbol, status, sym_status_names),
	F(sp_symbol, flags, SP_FT_HEX),
};

static const struct sp_schema_field span_f[] = {
	FA(sp_span, id, SP_FT_ID),
	FA(sp_span, parent, SP_FT_UINT),
	FA(sp_span, pid, SP_FT_UINT),
	FA(sp_span, tid, SP_FT_UINT),
	FE(sp_span, runtime, runtime_names),
	FS(sp_span, klass),
	FS(sp_span, method),
	FS(sp_span, file),
	F(sp_span, line, SP_FT_UINT),
	FA(sp_span, start, SP_FT_TIME),
	F(sp_span, stop, SP_FT_TIME),
	FE(sp_span, end, end_names),
	FS(sp_span, error),
	F(sp_span, samples, SP_FT_UINT),
	F(sp_span, total_samples, SP_FT_UINT),
	F(sp_span, events, SP_FT_UINT),
	F(sp_span, fork_span, SP_FT_UINT),
	F(sp_span, offcpu_ns, SP_FT_UINT),
	F(sp_span, coro, SP_FT_HEX),
	F(sp_span, flags, SP_FT_HEX),
};

static const struct sp_schema_field process_end_f[] = {
	FA(sp_process_end, time, SP_FT_TIME),
	FA(sp_process_end, pid, SP_FT_UINT),
	F(sp_process_end, status, SP_FT_UINT),
	F(sp_process_end, flags, SP_FT_HEX),
};

static const struct sp_schema_field thread_end_f[] = {
	FA(sp_thread_end, time, SP_FT_TIME),
	FA(sp_thread_end, tid, SP_FT_UINT),
	FA(sp_thread_end, pid, SP_FT_UINT),
};

static const struct sp_schema_field fiber_switch_f[] = {
	FA(sp_fiber_switch, time, SP_FT_TIME),
	FA(sp_fiber_switch, pid, SP_FT_UINT),
	FA(sp_fiber_switch, tid, SP_FT_UINT),
	FA(sp_fiber_switch, from, SP_FT_HEX),
	FA(sp_fiber_switch, to, SP_FT_HEX),
	F(sp_fiber_switch, flags, SP_FT_HEX),
};

static const struct sp_schema_field module_end_f[] = {
	FA(sp_module_end, time, SP_FT_TIME),
	FRA(sp_module_end, module, SP_FT_UINT, SP_REF_MODULE),
};

static const struct sp_schema_field lost_f[] = {
	FA(sp_lost, time, SP_FT_TIME),
	F(sp_lost, start, SP_FT_UINT),
	FE(sp_lost, what, lost_names),
	FA(sp_lost, count, SP_FT_UINT),
	F(sp_lost, cpu, SP_FT_UINT),
	F(sp_lost, pid, SP_FT_UINT),
};

static const struct sp_schema_field end_f[] = {
	FA(sp_end, time, SP_FT_TIME),
	FE(sp_end, reason, endr_names),
	F(sp_end, status, SP_FT_UINT),
	F(sp_end, samples, SP_FT_UINT),
	F(sp_end, events, SP_FT_UINT),
	F(sp_end, lost_samples, SP_FT_UINT),
	F(sp_end, lost_events, SP_FT_UINT),
	FS(sp_end, trigger),
	FS(sp_end, detail),
	F(sp_end, trigger_time, SP_FT_UINT),
};

static const struct sp_schema_field ksym_f[] = {
	FA(sp_ksym, addr, SP_FT_HEX),
	F(sp_ksym, size, SP_FT_UINT),
	FS(sp_ksym, name),
	FS(sp_ksym, kmod),
};

static const struct sp_schema_field jitsym_f[] = {
	FA(sp_jitsym, pid, SP_FT_UINT),
	FA(sp_jitsym, addr, SP_FT_HEX),
	F(sp_jitsym, size, SP_FT_UINT),
	FS(sp_jitsym, name),
};

static const struct sp_schema_field probe_f[] = {
	FA(sp_probe, time, SP_FT_TIME),
	FA(sp_probe, pid, SP_FT_UINT),
	FS(sp_probe, name),
	FA(sp_probe, hits, SP_FT_UINT),
	FS(sp_probe, verdict),
};

static const struct sp_schema_field runtime_f[] = {
	FA(sp_runtime_info, time, SP_FT_TIME),
	FA(sp_runtime_info, pid, SP_FT_UINT),
	FE(sp_runtime_info, runtime, runtime_names),
	FS(sp_runtime_info, version),
	FS(sp_runtime_info, library),
	FS(sp_runtime_info, mode),
};

#define S(kind, nm, f) [kind] = { nm, N(f), f }

static const struct sp_schema schemas[SP_REC_KIND_MAX] = {
	S(SP_REC_HEADER, "header", header_f),
	S(SP_REC_STRING, "string", string_f),
	S(SP_REC_PROCESS, "process", process_f),
	S(SP_REC_THREAD, "thread", thread_f),
	S(SP_REC_MODULE, "module", module_f),
	S(SP_REC_FRAME, "frame", frame_f),
	S(SP_REC_STACK, "stack", stack_f),
	S(SP_REC_SAMPLE, "sample", sample_f),
	S(SP_REC_EVENT, "event", event_f),
	S(SP_REC_SPAN_START, "span_start", mark_f),
	S(SP_REC_SPAN_STOP, "span_stop", mark_f),
	S(SP_REC_SPAN_RAISE, "span_raise", mark_f),
	S(SP_REC_SYMBOL, "symbol", symbol_f),
	S(SP_REC_SPAN, "span", span_f),
	S(SP_REC_PROCESS_END, "process_end", process_end_f),
	S(SP_REC_MODULE_END, "module_end", module_end_f),
	S(SP_REC_LOST, "lost", lost_f),
	S(SP_REC_END, "end", end_f),
	S(SP_REC_KSYM, "ksym", ksym_f),
	S(SP_REC_JITSYM, "jitsym", jitsym_f),
	S(SP_REC_PROBE, "probe", probe_f),
	S(SP_REC_RUNTIME, "runtime", runtime_f),
	S(SP_REC_THREAD_END, "thread_end", thread_end_f),
	S(SP_REC_FIBER_SWITCH, "fiber_switch", fiber_switch_f),
};

const struct sp_schema *sp_schema(unsigned int kind)
{
	if (kind >= SP_REC_KIND_MAX || !schemas[kind].name)
		return NULL;
	return &schemas[kind];
}

const char *sp_rec_kind_name(unsigned int kind)
{
	const struct sp_schema *s = sp_schema(kind);

	return s ? s->name : NULL;
}

unsigned int sp_rec_kind_by_name(const char *name)
{
	unsigned int k;

	for (k = 1; k < SP_REC_KIND_MAX; k++)
		if (schemas[k].name && !strcmp(schemas[k].name, name))
			return k;
	return SP_REC_NONE;
}

const char *sp_schema_enum_name(const struct sp_schema_field *f, uint64_t v)
{
	return f->names && v < f->nnames ? f->names[v] : NULL;
}

int64_t sp_schema_enum_value(const struct sp_schema_field *f, const char *name)
{
	unsigned int i;

	for (i = 0; f->names && i < f->nnames; i++)
		if (!strcmp(f->names[i], name))
			return i;
	return -1;
}

static const char *type_doc(enum sp_field_type t)
{
	switch (t) {
	case SP_FT_UINT: return "uint";
	case SP_FT_INT: return "int (zigzag)";
	case SP_FT_STR: return "string id";
	case SP_FT_HEX: return "uint (hex in JSON)";
	case SP_FT_ADDR: return "bytes (address)";
	case SP_FT_BYTES: return "bytes (hex in JSON)";
	case SP_FT_TIME: return "time (delta)";
	case SP_FT_ID: return "implicit id";
	case SP_FT_STRVAL: return "bytes (text)";
	case SP_FT_FLAGS: return "uint";
	case SP_FT_TEXT: return "bytes (text)";
	case SP_FT_STACK: return "stack id";
	}
	return "?";
}

void sp_schema_print_markdown(FILE *out)
{
	unsigned int k, i, j;

	fprintf(out, "| kind | type | # | field | encoding | JSON |\n");
	fprintf(out, "| --- | --- | --- | --- | --- | --- |\n");
	for (k = 1; k < SP_REC_KIND_MAX; k++) {
		const struct sp_schema *s = sp_schema(k);

		for (i = 0; s && i < s->nfields; i++) {
			const struct sp_schema_field *f = &s->fields[i];

			fprintf(out, "| %u | %s | %u | `%s` | %s | %s", k, s->name, i, f->name,
				type_doc(f->type), f->type == SP_FT_ID ? "shown, not stored" :
				f->flags & SP_SF_ALWAYS ? "always" : "omitted when 0");
			for (j = 0; f->names && j < f->nnames; j++)
				fprintf(out, "%s%u=`%s`", j ? ", " : "; names: ", j, f->names[j]);
			fprintf(out, " |\n");
		}
	}
	fprintf(out, "\n| event | kind | group | # | field | encoding |\n");
	fprintf(out, "| --- | --- | --- | --- | --- | --- |\n");
	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		static const char *const groups[] = { "proc", "file", "net", "dns", "priv", "runtime" };
		const struct sp_event_schema *e = sp_event_schema(k);
		const char *g = "";

		for (j = 0; e && j < 6; j++)
			if (e->group & (1u << j))
				g = groups[j];
		for (i = 0; e && i < e->nfields; i++)
			fprintf(out, "| %s | %u | %s | %u | `%s` | %s |\n", e->name, k, g,
				SP_EVENT_COMMON_FIELDS + i, e->fields[i].name,
				type_doc(e->fields[i].type));
	}
}
