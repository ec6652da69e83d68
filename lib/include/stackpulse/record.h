/* SPDX-License-Identifier: MIT */
/*
 * record.h - the record stream: every kind of record a recording carries,
 * in memory. docs/spool.md fixes their byte layout and docs/json.md their
 * JSON-lines form; both are generated from one table (lib/stream/schema.c), so a
 * field added here and there shows up in both encodings.
 *
 * Conventions:
 * - Every numeric field is a uint64_t (signed ones are int64_t); string
 *   fields hold a string id (0 = none) defined by an earlier SP_REC_STRING.
 * - Ids of strings, modules, frames, stacks, spans start at 1, are dense and
 *   assigned in order of appearance, so the spool does not store them.
 * - Times are CLOCK_MONOTONIC nanoseconds (the header maps them to wall clock).
 * - A header record starts a new stream: every id table starts again.
 */
#ifndef STACKPULSE_RECORD_H
#define STACKPULSE_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Record kinds; the numbers are the spool's and never change meaning. */
enum sp_rec_kind {
	SP_REC_NONE = 0,
	SP_REC_HEADER = 1,
	SP_REC_STRING = 2,
	SP_REC_PROCESS = 3,
	SP_REC_THREAD = 4,
	SP_REC_MODULE = 5,
	SP_REC_FRAME = 6,
	SP_REC_STACK = 7,
	SP_REC_SAMPLE = 8,
	SP_REC_EVENT = 9,
	SP_REC_SPAN_START = 10,
	SP_REC_SPAN_STOP = 11,
	SP_REC_SPAN_RAISE = 12,
	SP_REC_SYMBOL = 13,
	SP_REC_SPAN = 14,
	SP_REC_PROCESS_END = 15,
	SP_REC_MODULE_END = 16,
	SP_REC_LOST = 17,
	SP_REC_END = 18,
	SP_REC_KSYM = 19,
	SP_REC_JITSYM = 20,
	SP_REC_PROBE = 21,
	SP_REC_RUNTIME = 22,
	SP_REC_THREAD_END = 23,
	SP_REC_FIBER_SWITCH = 24,
	SP_REC_KIND_MAX,	/* kinds >= this are unknown: kept as raw bytes */
};

struct sp_bytes {
	const uint8_t *p;	/* borrowed: valid until the next record is read */
	uint32_t len;
};

/* Recording metadata; opens a stream. */
struct sp_header {
	uint64_t version;	/* SP_SPOOL_VERSION */
	uint64_t start_wall_ns;	/* CLOCK_REALTIME at start */
	uint64_t start_mono_ns;	/* CLOCK_MONOTONIC at the same moment */
	uint64_t clock;		/* enum sp_clock */
	uint64_t sample_period;	/* in units of the event (ns for cpu-clock), 0 = none */
	uint64_t sample_freq;	/* Hz when sampling by frequency, 0 otherwise */
	uint64_t call_graph;	/* enum sp_call_graph */
	uint64_t flags;		/* SP_HDR_* */
	/*
	 * Text, held inline rather than as string ids: the header opens the
	 * stream, so no string can be defined before it. Not NUL-terminated.
	 */
	struct sp_bytes event;		/* sampling event ("cpu-clock") */
	struct sp_bytes hostname;
	struct sp_bytes kernel;		/* kernel release */
	struct sp_bytes machine;	/* "x86_64" */
	struct sp_bytes command;	/* recorded command line, shell-quoted */
	struct sp_bytes producer;	/* "sp-record 0.1" */
	struct sp_bytes features;	/* facilities used, "perf=cpu-clock bpf=tp_btf ..." */
	struct sp_bytes unavailable;	/* facilities asked for but missing */
	uint64_t segment;	/* n-th stream of a rotated recording or a flight
				 * dump's window (1, 2, ...); 0 = a whole recording */
};

enum sp_clock { SP_CLOCK_MONOTONIC = 1 };
enum sp_call_graph { SP_CG_NONE = 0, SP_CG_FP = 1, SP_CG_DWARF = 2, SP_CG_AUTO = 3 };
#define SP_HDR_KERNEL_STACKS	(1u << 0)
#define SP_HDR_USER_STACKS	(1u << 1)
#define SP_HDR_SYMBOLIZED	(1u << 2)	/* sp-symbolize has run */
#define SP_HDR_CORRELATED	(1u << 3)	/* sp-correlate has run */

struct sp_string {
	uint64_t id;		/* implicit in the spool */
	struct sp_bytes value;	/* not NUL-terminated */
};

struct sp_process {
	uint64_t time;
	uint64_t pid, ppid;
	uint64_t comm;		/* str */
	uint64_t exe;		/* str: executable path */
	uint64_t flags;		/* SP_PROC_* */
	uint64_t args;		/* str: argv joined by spaces, may be 0 */
	/* Identity (docs/containers.md); 0 where unknown, and in older spools. */
	uint64_t nspid;		/* pid in its own pid namespace */
	uint64_t start_boot_ns;	/* when it started, ns since boot (1/CLK_TCK resolution) */
	uint64_t pid_ns, mnt_ns, net_ns, cgroup_ns;	/* namespace ids (inode numbers) */
	uint64_t cgroup;	/* str: cgroup v2 path */
	uint64_t runtime;	/* str: "docker", "podman", ..., "systemd" (cgroup.h) */
	uint64_t container;	/* str: container id, or the systemd unit */
	uint64_t pod;		/* str: Kubernetes pod uid or Podman pod id */
};
#define SP_PROC_FROM_PROC	(1u << 0)	/* found in /proc at attach, not seen starting */
#define SP_PROC_EXEC		(1u << 1)	/* re-definition after exec */
#define SP_PROC_NO_IDENTITY	(1u << 2)	/* gone, or its pid reused, before /proc was read */

struct sp_thread {
	uint64_t time;
	uint64_t tid, pid;
	uint64_t name;		/* str */
	uint64_t nstid;		/* tid in its own pid namespace; 0 unknown, and in older spools */
};

/* A mapping of a file (or the kernel, or an anonymous region) into a process. */
struct sp_module {
	uint64_t id;		/* implicit */
	uint64_t time;
	uint64_t pid;		/* 0 = kernel */
	uint64_t start, end;	/* absolute addresses, end exclusive */
	uint64_t pgoff;		/* file offset of start */
	uint64_t path;		/* str: "/usr/lib/x86_64-linux-gnu/libc.so.6", "[vdso]", "[kernel.kallsyms]" */
	struct sp_bytes build_id;
	uint64_t dev, ino, size, mtime_ns;
	uint64_t prot;		/* PROT_* bits */
	uint64_t flags;		/* SP_MOD_* */
};
#define SP_MOD_KERNEL		(1u << 0)
#define SP_MOD_ANON		(1u << 1)
#define SP_MOD_JIT		(1u << 2)
#define SP_MOD_BUILD_ID_FILE	(1u << 3)	/* build-id read from the file, not from the kernel */
#define SP_MOD_ARCHIVED		(1u << 4)	/* a copy is in the recording's archive */

enum sp_frame_mode {
	SP_FRAME_USER = 0,
	SP_FRAME_KERNEL = 1,
	SP_FRAME_INTERP = 2,	/* interpreted (Ruby, Python) */
	SP_FRAME_JIT = 3,
};

struct sp_frame {
	uint64_t id;		/* implicit */
	uint64_t module;	/* module id, 0 = none */
	uint64_t rel;		/* file-relative address (ELF virtual address space) */
	uint64_t addr;		/* absolute address */
	uint64_t mode;		/* enum sp_frame_mode */
	uint64_t pid;		/* only when module is 0 */
	uint64_t flags;		/* SP_FRAME_* */
};
#define SP_FRAME_LEAF		(1u << 0)	/* a sampled pc, not a return address */

/* A node of the stack trie: the stack 'parent' (its callers) plus one callee frame. */
struct sp_stack {
	uint64_t id;		/* implicit */
	uint64_t parent;	/* stack id of the caller chain, 0 = root */
	uint64_t frame;		/* frame id of the innermost frame */
};

enum sp_unwind_status {
	SP_UNWIND_UNKNOWN = 0,	/* not assessed (frame pointers) */
	SP_UNWIND_COMPLETE = 1,
	SP_UNWIND_DEPTH = 2,	/* truncated at the depth limit */
	SP_UNWIND_STACK_SIZE = 3,	/* ran past the copied user stack */
	SP_UNWIND_NO_CFI = 4,	/* a frame without unwind information */
	SP_UNWIND_UNKNOWN_MAP = 5,	/* pc in no known mapping */
	SP_UNWIND_JIT = 6,	/* JIT frame without map */
	SP_UNWIND_ERROR = 7,	/* garbage: loop, pc 0, sp outside the stack */
};

/* Name of an unwind status as in JSON lines ("complete", "stack_size", ...). */
const char *sp_unwind_status_name(unsigned int status);

enum sp_sample_kind {
	SP_SAMPLE_CPU = 0,	/* weight = number of periods */
	SP_SAMPLE_OFFCPU = 1,	/* weight = ns off the CPU */
};

struct sp_sample {
	uint64_t time;
	uint64_t pid, tid, cpu;
	uint64_t stack;		/* stack id, 0 = no stack */
	uint64_t weight;
	uint64_t unwind;	/* enum sp_unwind_status */
	uint64_t kind;		/* enum sp_sample_kind */
	uint64_t span;		/* owning span id (sp-correlate), 0 = none */
	uint64_t rule;		/* enum sp_assign_rule */
	uint64_t flags;		/* SP_SAMPLE_* */
};
/* Code without CFI was left through a frame pointer (the unwinder's
 * fallback, or --call-graph=auto's splice of the kernel's frame-pointer
 * chain): there rbp may hold an outer frame's pointer, so the stack may skip
 * frames even when its status is complete. A guess, said to be one. */
#define SP_SAMPLE_FP_GUESS	(1u << 0)

#define SP_EVENT_MAX_FIELDS 12

/* A value of an event field; which member is meaningful is set by the schema. */
struct sp_value {
	uint64_t u;		/* UINT, INT (as int64_t), STR (id), HEX */
	struct sp_bytes b;	/* BYTES, ADDR */
};

struct sp_event {
	uint64_t time;
	uint64_t pid, tid;
	uint64_t kind;		/* enum sp_event_kind (events.h) */
	uint64_t span;		/* owning span id (sp-correlate), 0 = none */
	uint64_t rule;		/* enum sp_assign_rule */
	uint32_t nfields;	/* values present (missing trailing ones are 0) */
	struct sp_value field[SP_EVENT_MAX_FIELDS];
	struct sp_bytes raw;	/* an unknown kind's undecoded fields */
};

enum sp_runtime {
	SP_RT_UNKNOWN = 0,
	SP_RT_RUBY = 1,
	SP_RT_PYTHON = 2,
	SP_RT_USDT = 3,		/* <stackpulse/span.h> markers */
	SP_RT_UPROBE = 4,	/* --span-func */
};

/* SP_REC_SPAN_START, SP_REC_SPAN_STOP, SP_REC_SPAN_RAISE share this shape. */
struct sp_span_mark {
	uint64_t time;
	uint64_t pid, tid;
	uint64_t runtime;	/* enum sp_runtime */
	uint64_t klass;		/* str: class or module ("Foo"), for raise: error class */
	uint64_t method;	/* str: method or function name; for raise: message */
	uint64_t file;		/* str */
	uint64_t line;
	uint64_t depth;		/* call depth when the runtime reports it, else 0 */
	uint64_t flags;		/* SP_MARK_* */
	uint64_t coro;		/* the coroutine (generator object) whose frame this
				 * is, 0 = none: its address, hex in JSON */
};
#define SP_MARK_CMETHOD		(1u << 0)	/* Ruby C method */
#define SP_MARK_SYNTHETIC	(1u << 1)	/* reconstructed, not observed */
#define SP_MARK_SUSPENDED	(1u << 2)	/* a coroutine's stop: it suspended
						 * (await, yield), it did not end */
#define SP_MARK_MATCH_ONLY	(1u << 3)	/* a raise while only some methods
						 * have spans (--spans-match): with
						 * none open, it is outside them */

/* Symbol of a frame, added by sp-symbolize. An inlined chain is several
 * records for the same frame: index 0 is the innermost (inlined) function
 * at the address, the last is the function the code physically belongs to. */
struct sp_symbol {
	uint64_t frame;		/* frame id */
	uint64_t index;		/* position in the inline chain, 0 = innermost */
	uint64_t func;		/* str: function name (demangled), 0 = unresolved */
	uint64_t file;		/* str: source file */
	uint64_t line;
	uint64_t column;
	uint64_t offset;	/* address minus the function's start */
	uint64_t status;	/* enum sp_sym_status (only on index 0) */
	uint64_t flags;		/* SP_SYM_* */
};
enum sp_sym_status {
	SP_SYM_OK = 0,
	SP_SYM_NO_SYMBOLS = 1,
	SP_SYM_STRIPPED = 2,	/* .dynsym only */
	SP_SYM_BUILD_ID_MISMATCH = 3,
	SP_SYM_FILE_MISSING = 4,
	SP_SYM_JIT_NO_MAP = 5,
	SP_SYM_NO_MODULE = 6,
	SP_SYM_BAD_FILE = 7,
};
#define SP_SYM_INLINE		(1u << 0)
#define SP_SYM_FROM_DYNSYM	(1u << 1)
#define SP_SYM_FROM_DWARF	(1u << 2)
#define SP_SYM_FROM_ARCHIVE	(1u << 3)

enum sp_span_end {
	SP_END_STOPPED = 0,
	SP_END_RAISED = 1,
	SP_END_OPEN = 2,	/* still open when the recording ended */
	SP_END_INCOMPLETE = 3,	/* its stop was lost, or records it overlaps were lost */
	SP_END_SYNTHETIC = 4,	/* a <no-span> gap */
};

/* What every output calls a gap span: the time a thread ran outside every span. */
#define SP_GAP_SPAN_NAME "<no-span>"

/* How sp-correlate assigned an event or sample to a span. */
enum sp_assign_rule {
	SP_RULE_NONE = 0,
	SP_RULE_THREAD = 1,	/* innermost span open on its own thread */
	SP_RULE_FORK = 2,	/* span open on the thread that forked its process (or an ancestor) */
	SP_RULE_GAP = 3,	/* the process's <no-span> gap span */
};

/* A method span, built by sp-correlate. */
struct sp_span {
	uint64_t id;		/* implicit: spans are numbered 1, 2, ... in the order written */
	uint64_t parent;	/* span id, 0 = none */
	uint64_t pid, tid;
	uint64_t runtime;
	uint64_t klass, method, file;	/* str */
	uint64_t line;
	uint64_t start, stop;	/* times; stop 0 when open */
	uint64_t end;		/* enum sp_span_end */
	uint64_t error;		/* str: raised error class */
	uint64_t samples;	/* CPU samples assigned to this span itself */
	uint64_t total_samples;	/* including its descendants */
	uint64_t events;	/* events assigned to this span itself */
	uint64_t fork_span;	/* span of the forking thread when parent is in another process */
	uint64_t offcpu_ns;	/* off-CPU time assigned to this span itself */
	uint64_t coro;		/* the mark's coroutine, 0 = none (lanes.h) */
	uint64_t flags;		/* SP_SPAN_* */
};
#define SP_SPAN_SUSPENDED	(1u << 0)	/* a coroutine's resume that ended by
						 * suspending, not by returning */
#define SP_SPAN_RECONSTRUCTED	(1u << 1)	/* its start mark was SP_MARK_SYNTHETIC:
						 * open before the recording (or the hook)
						 * found it, 'start' is when it was found,
						 * the duration a lower bound */

struct sp_process_end {
	uint64_t time;
	uint64_t pid;
	uint64_t status;	/* exit code, or 128 + signal */
	uint64_t flags;		/* SP_PEND_* */
};
#define SP_PEND_SIGNALED	(1u << 0)
#define SP_PEND_EXEC		(1u << 1)	/* the image was replaced by exec */
#define SP_PEND_CORE		(1u << 2)	/* with SIGNALED: it dumped core */

struct sp_thread_end {
	uint64_t time;
	uint64_t tid, pid;
};

/* A thread switched from one fiber (coroutine) to another: the span marks
 * after it belong to fiber 'to' of the thread, which has its own stack of
 * open spans. Fiber ids are the runtime's, 0 = the thread's root fiber. */
struct sp_fiber_switch {
	uint64_t time;
	uint64_t pid, tid;
	uint64_t from, to;
	uint64_t flags;		/* SP_FIBER_* */
};
#define SP_FIBER_NEW	(1u << 0)	/* 'to' starts here: it ran no method yet */

struct sp_module_end {
	uint64_t time;
	uint64_t module;	/* module id */
};

enum sp_lost_what {
	SP_LOST_SAMPLES = 0,
	SP_LOST_EVENTS = 1,
	SP_LOST_SPANS = 2,
	SP_LOST_INTERP = 3,	/* samples whose interpreted stack could not be read */
	SP_LOST_SPAN_STOPS = 4,	/* span stops dropped: their start came before the recording */
	SP_LOST_UNPROBED = 5,	/* processes left without span probes (count = processes) */
	SP_LOST_WINDOW = 6,	/* records older than a flight recorder's window, dropped */
	SP_LOST_INTERP_COPIES = 7,	/* Python code-object copies refused by the
					 * per-process budget (count = copies) */
	SP_LOST_INTERP_EVENTS = 8,	/* kernel events without the interpreted stack
					 * they had: dropped unread (their thread's
					 * queue was full before they were read) */
	SP_LOST_LATE_PROBES = 9,	/* processes whose span probes went on late,
					 * start..time (count = processes): their
					 * runtime library was not the file the
					 * search at exec found */
	SP_LOST_WHAT_MAX = 10,
};

struct sp_lost {
	uint64_t time;		/* end of the window */
	uint64_t start;		/* start of the window, 0 = unknown */
	uint64_t what;		/* enum sp_lost_what */
	uint64_t count;
	uint64_t cpu;		/* cpu + 1; 0 = unknown */
	uint64_t pid;		/* 0 = unknown */
};

struct sp_end {
	uint64_t time;
	uint64_t reason;	/* enum sp_end_reason */
	uint64_t status;	/* the command's exit status */
	uint64_t samples, events, lost_samples, lost_events;
	uint64_t trigger;	/* str: what made a flight dump ("signal", "exit", ...) */
	uint64_t detail;	/* str: its particulars ("pid 4711 killed by SIGSEGV") */
	uint64_t trigger_time;	/* monotonic ns it fired (a dump goes on a while after); 0 = none */
};
enum sp_end_reason {
	SP_ENDR_EXITED = 0,	/* the command / attached processes exited */
	SP_ENDR_DURATION = 1,
	SP_ENDR_SIGNAL = 2,	/* SIGINT/SIGTERM to the recorder */
	SP_ENDR_ERROR = 3,
	SP_ENDR_ROTATED = 4,	/* this segment ends; the recording goes on in the next */
	SP_ENDR_TRIGGER = 5,	/* a flight recorder's dump: trigger says why */
};

/* A kernel symbol, for symbolizing kernel frames on another machine. */
struct sp_ksym {
	uint64_t addr;
	uint64_t size;		/* 0 = up to the next symbol */
	uint64_t name;		/* str */
	uint64_t kmod;		/* str: kernel module, 0 = vmlinux */
};

/* A JIT symbol from /tmp/perf-PID.map. */
struct sp_jitsym {
	uint64_t pid;
	uint64_t addr, size;
	uint64_t name;		/* str */
	/* Not in the spool (a definition has no time): where sp-record's
	 * merge puts it, just before the first sample it names, after the
	 * exec that made the process's code (sp_record_time()). */
	uint64_t time;
};

/* Probe health: how often a probe fired in a process. */
struct sp_probe {
	uint64_t time;
	uint64_t pid;
	uint64_t name;		/* str: "ruby:method__entry" */
	uint64_t hits;
	uint64_t verdict;	/* str: "" or why the probe looks dead */
};

/* A language runtime found in a process. */
struct sp_runtime_info {
	uint64_t time;
	uint64_t pid;
	uint64_t runtime;	/* enum sp_runtime */
	uint64_t version;	/* str: "3.1.2" */
	uint64_t library;	/* str: path of the binary holding the probes */
	uint64_t mode;		/* str: how spans are recorded ("tracepoint", "cmethod", ...) */
};

/* A record kind this reader does not know, kept so it can be written back. */
struct sp_unknown {
	uint64_t kind;
	struct sp_bytes raw;
};

struct sp_record {
	enum sp_rec_kind kind;	/* SP_REC_KIND_MAX for an unknown kind */
	uint64_t pos;		/* spool byte offset, or JSON line number */
	struct sp_bytes extra;	/* trailing fields of a newer writer, kept verbatim */
	union {
		struct sp_header header;
		struct sp_string string;
		struct sp_process process;
		struct sp_thread thread;
		struct sp_module module;
		struct sp_frame frame;
		struct sp_stack stack;
		struct sp_sample sample;
		struct sp_event event;
		struct sp_span_mark mark;	/* SPAN_START, SPAN_STOP, SPAN_RAISE */
		struct sp_symbol symbol;
		struct sp_span span;
		struct sp_process_end process_end;
		struct sp_thread_end thread_end;
		struct sp_fiber_switch fiber_switch;
		struct sp_module_end module_end;
		struct sp_lost lost;
		struct sp_end end;
		struct sp_ksym ksym;
		struct sp_jitsym jitsym;
		struct sp_probe probe;
		struct sp_runtime_info runtime;
		struct sp_unknown unknown;
	};
};

/* Name of a record kind as in JSON ("sample"), or NULL. */
const char *sp_rec_kind_name(unsigned int kind);
/* Record kind of a JSON type name, or SP_REC_NONE. */
unsigned int sp_rec_kind_by_name(const char *name);

/* The time of a record: its time field (monotonic ns); 0 for kinds
 * without one (header, string, frame, stack, symbol, ksym, jitsym, unknown
 * kinds) and for a correlated span, whose start and stop are a range. The
 * merge orders records by it (merge.h), so those without one go out first. */
uint64_t sp_record_time(const struct sp_record *rec);

/*
 * The name of a method span as every tool shows it, into out (cut to
 * size): Ruby "Foo#run", a Ruby singleton method "Foo.build" (its class
 * as Ruby names a singleton class, "#<Class:Foo>"), others "qual.name";
 * the method alone without a class, "?" for a missing method. The length
 * the whole name has, as snprintf() gives it.
 */
size_t sp_span_name(char *out, size_t size, uint64_t runtime, const char *klass,
		    const char *method);

/* The schema as markdown tables (docs/spool.md is generated from it). */
void sp_schema_print_markdown(FILE *out);

#endif
