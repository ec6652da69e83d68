/* SPDX-License-Identifier: MIT */
/*
 * interpP.h - interpreted frames in perf samples (docs/interpreters.md),
 * the private face of the files that do it:
 *
 *   interp_layouts.c  the one table of per-version structure offsets
 *   interp_py.c       CPython's structures as user space reads them: code
 *                     objects, their strings and line tables (bounded,
 *                     checked, through a reader the fuzzer can fake)
 *   interp_rb.c       Ruby's alike: iseqs, their RStrings and insns_info
 *                     line tables (positions or the succinct index)
 *   interp.c          which processes run an interpreter, the stacks the
 *                     BPF program read paired with perf's samples, the
 *                     frames and symbols written for them
 *   bpf_interp.c      the BPF program on the sampling (and context-switch)
 *                     events, its maps and ring buffer
 *
 * The perf source calls sp_interp_*() from its hooks (perf_source.c,
 * perf_procs.c, perf_samples.c), the off-CPU source from perf_offcpu.c;
 * nothing here is public.
 */
#ifndef STACKPULSE_RECORD_INTERPP_H
#define STACKPULSE_RECORD_INTERPP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "perf_source.h"

#include "../../bpf/interp.h"

/* ---- the layout table (interp_layouts.c) ---- */

struct sp_interp_layout {
	const char *name;	/* "python3.11" */
	unsigned int runtime;	/* enum sp_runtime */
	unsigned int major, minor;
	struct sp_bpf_ilayout bpf;	/* what the BPF program needs */
	/* what user space needs to name a frame */
	uint16_t ob_type;	/* PyObject.ob_type */
	uint16_t str_length, str_state;	/* PyASCIIObject.length, .state */
	uint16_t str_ascii_data;	/* sizeof(PyASCIIObject) */
	uint16_t str_compact_data;	/* sizeof(PyCompactUnicodeObject) */
	uint16_t code_size;	/* bytes of a code object read at once */
	uint16_t ts_interp;	/* PyThreadState.interp: the check at attach */
	/* Ruby: what user space needs to name a frame and check the layout */
	struct {
		uint16_t vm_main_thread;	/* rb_vm_t.ractor.main_thread */
		uint16_t th_vm;		/* rb_thread_t.vm */
		uint16_t iseq_size;	/* bytes of an rb_iseq_t read (flags, body) */
		uint16_t body_size;	/* bytes of its body read */
		uint16_t loc_path, loc_label, loc_first;	/* body.location.* */
		uint16_t info_body, info_pos, info_size, info_succ;	/* body.insns_info.* */
		uint16_t entry_size;	/* sizeof(struct iseq_insn_info_entry) */
		uint16_t rstr_heap_len, rstr_heap_ptr, rstr_embed;	/* RString */
		uint16_t rary_embed, rary_heap_ptr;	/* RArray */
		/* naming a frame's method: its method entry, owner class, ids */
		uint16_t me_def, me_owner;	/* rb_method_entry_t.def, .owner */
		uint16_t def_original_id;	/* rb_method_definition_t.original_id */
		uint16_t def_cfunc;	/* rb_method_definition_t.body.cfunc.func */
		uint16_t class_ext, ext_iv_tbl;	/* RClass.ptr, rb_classext_t.iv_tbl */
		uint16_t st_start, st_bound, st_entries;	/* st_table.entries_* */
		uint16_t sym_last_id, sym_ids;	/* ruby_global_symbols.last_id, .ids */
		uint32_t id_classpath, id_attached;	/* "__classpath__", "__attached__" */
		uint32_t last_op_id;	/* tLAST_OP_ID: above it, an ID's serial is id >> 4 */
	} rb;
};

/* The row for a runtime's version, NULL if unsupported (or removed by
 * SP_INTERP_DROP=name, the tests' way to make a version unknown). Its
 * index in the table is the BPF layout row. */
const struct sp_interp_layout *sp_interp_layout_find(unsigned int runtime, unsigned int major,
						     unsigned int minor, unsigned int *row);
const struct sp_interp_layout *sp_interp_layout_row(unsigned int row);
/* Whether a row's fields fit the blocks the BPF program reads at once. */
bool sp_interp_layout_fits(const struct sp_interp_layout *l);
/* "python3.11" ...: the versions the table knows, space-separated. */
const char *sp_interp_layout_names(void);

/* ---- reading another process's memory ---- */

/* A field of what was copied out (unaligned, host order). */
static inline uint64_t sp_interp_u64(const uint8_t *p, size_t off)
{
	uint64_t v;

	__builtin_memcpy(&v, p + off, sizeof(v));
	return v;
}

static inline uint32_t sp_interp_u32(const uint8_t *p, size_t off)
{
	uint32_t v;

	__builtin_memcpy(&v, p + off, sizeof(v));
	return v;
}

struct sp_interp_mem {
	/* len bytes at addr into buf: 0, or -1 when any of them cannot be read. */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/* ---- CPython (interp_py.c) ---- */

#define SP_PY_NAME_MAX		512	/* bytes of a name or file kept (UTF-8) */
#define SP_PY_LINETABLE_MAX	(256 * 1024)	/* bytes of a line table read */

struct sp_py_code {
	uint64_t name_addr, file_addr;	/* co_qualname, co_filename */
	char qualname[SP_PY_NAME_MAX];
	char file[SP_PY_NAME_MAX];
	int firstline;
	uint8_t *linetable;	/* malloc'd, len bytes; NULL when unreadable */
	size_t len;
	bool whole;		/* linetable is the whole table (else its first
				 * bytes, or none: a line past them is unknown) */
	bool cut;		/* a copy's: a name cut short by the copy (or its
				 * file not copied) */
};

/*
 * Read the code object at addr: its type must be code_type, its strings
 * str objects of at most SP_PY_NAME_MAX bytes (longer ones are cut and end
 * in "..."), its line table a bytes object of at most SP_PY_LINETABLE_MAX.
 * 0, or -1 with *why a static reason ("not a code object", "unreadable").
 */
int sp_py_code_read(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		    uint64_t addr, uint64_t code_type, struct sp_py_code *c, const char **why);
/*
 * The same from the copy the BPF program made of it (r, len bytes of the
 * record: struct sp_bpf_icode, cut after its lines): strings as many
 * characters as were copied ("..." when fewer than all), the line table
 * as many bytes (c->whole says whether that is all of it). The copy must
 * be of the code its frames name (its first line and name).
 */
int sp_py_code_copy(const struct sp_interp_layout *l, const struct sp_bpf_icode *r, size_t len,
		    uint64_t code_type, struct sp_py_code *c, const char **why);
void sp_py_code_release(struct sp_py_code *c);
/* The line of instruction instr (code units; < 0: the function's first
 * line) from a 3.11 location table into *line: false when the table does
 * not say (an instruction past its end, an entry cut short: a table
 * copied in part), *line then the first line. Reads no byte past len
 * whatever the table holds. */
bool sp_py_line_at(const uint8_t *tab, size_t len, int firstline, int instr, int *line);
/*
 * Where a scan of a line table stopped: the start of the entry that held
 * the instruction last looked up (its offset in the table, its first
 * instruction, the line before it). The entries are deltas, read from the
 * start; a frame's instruction only moves forward, or stays (the outer
 * frames of every event of a stack), so a lookup resumes from here when it
 * can. Zeroed (SP_PY_LINEPOS_INIT) for a table not scanned yet; to be
 * zeroed again whenever the table it was made on is replaced.
 */
struct sp_py_linepos {
	size_t i;
	long addr, line;
	bool set;
};
#define SP_PY_LINEPOS_INIT { 0, 0, 0, false }
/* sp_py_line_at(), resuming from *pos when instr is at or after it, *pos
 * then where this lookup stopped; pos may be NULL. */
bool sp_py_line_from(const uint8_t *tab, size_t len, int firstline, int instr,
		     struct sp_py_linepos *pos, int *line);
/* The same, the first line when the table does not say. */
int sp_py_line(const uint8_t *tab, size_t len, int firstline, int instr);
/* The str object at addr as UTF-8 into out (cap >= 4), cut at cap - 4
 * bytes with "..." appended. 0, or -1 (not a str, unreadable). */
int sp_py_str(const struct sp_interp_layout *l, const struct sp_interp_mem *m, uint64_t addr,
	      char *out, size_t cap);
/* The same from a copy of the str object (b, its first len bytes: its
 * header and as many characters as fit), "..." when it holds fewer than
 * all. 0, 1 when the copy held fewer characters than out had room for, or
 * -1 (not a str, too short for its header). */
int sp_py_str_copy(const struct sp_interp_layout *l, const uint8_t *b, size_t len, char *out,
		   size_t cap);

/* ---- Ruby (interp_rb.c) ---- */

#define SP_RB_INSNS_MAX		(1u << 18)	/* instructions of an iseq whose lines are read */

/* What an iseq's line table says: the line of each insns_info entry, and
 * where the entries start (positions[], or the succinct index table). */
struct sp_rb_lines {
	int firstline;
	uint32_t iseq_size;	/* instructions (VALUEs) */
	int32_t *lines;		/* malloc'd, n of them */
	uint32_t n;
	uint32_t *positions;	/* malloc'd, n of them, or NULL */
	uint64_t *succ;		/* malloc'd, nsucc words, or NULL */
	size_t nsucc;
};

struct sp_rb_iseq {
	uint64_t body;
	char label[SP_PY_NAME_MAX];	/* "bar", "block in bar", "<main>" */
	char file[SP_PY_NAME_MAX];
	struct sp_rb_lines lines;
};

/* Read the iseq at addr: an imemo of type iseq, its label and path
 * RStrings of at most SP_PY_NAME_MAX bytes kept (longer ones are cut and
 * end in "..."), its line table bounded by SP_RB_INSNS_MAX. 0, or -1 with
 * *why a static reason ("not an iseq", "unreadable"). */
int sp_rb_iseq_read(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		    uint64_t addr, struct sp_rb_iseq *q, const char **why);
void sp_rb_lines_release(struct sp_rb_lines *t);
/* The line of the instruction before pc index pc (< 0: the first line),
 * as Ruby's own backtraces give it. Reads nothing past what was copied. */
int sp_rb_line(const struct sp_rb_lines *t, int pc);
/* The RString at addr into out (cap >= 8), cut with "..."; NULs become
 * '?'. 0, or -1 (not a string, unreadable). */
int sp_rb_str(const struct sp_interp_layout *l, const struct sp_interp_mem *m, uint64_t addr,
	      char *out, size_t cap);

#define SP_RB_IVARS_MAX		64	/* instance variables of a class looked at */
#define SP_RB_CLASS_HOPS	4	/* iclass, singleton and attached steps to a name */
#define SP_RB_ID_MAX		128	/* bytes of a method's name kept */

/* What a frame's method entry says: its owner as "Foo#" (an instance
 * method) or "Foo." (a singleton's), anonymous ones "#<Class:0x...>#",
 * and its method's name (empty when ruby_global_symbols is unknown). */
struct sp_rb_method {
	char owner[SP_PY_NAME_MAX];
	char name[SP_RB_ID_MAX];
	bool iseq;		/* a method defined in Ruby (its iseq's label names it) */
	uint64_t cfunc;		/* a C method's: its C function (0: unknown, or another
				 * kind of method) */
};

/* Read the method entry at addr (an imemo ment, as the BPF program found it),
 * with symbols the address of ruby_global_symbols (0: unknown) to name
 * IDs. 0, or -1 with *why ("not a method entry", "unreadable"). Bounded: SP_RB_CLASS_HOPS steps, SP_RB_IVARS_MAX
 * ivars, names cut with "...". */
int sp_rb_method_read(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		      uint64_t symbols, uint64_t addr, struct sp_rb_method *me, const char **why);
/* The name of ID id into out (cap >= 8): 0, or -1. */
int sp_rb_id_name(const struct sp_interp_layout *l, const struct sp_interp_mem *m,
		  uint64_t symbols, uint64_t id, char *out, size_t cap);
/* A frame's name into out: label ("bar", "block (2 levels) in bar") with
 * the owner put before its method ("Foo#bar", "block in Foo.bar") when me
 * names the same method; label NULL: a C method, "Array#each". */
void sp_rb_frame_name(const struct sp_rb_method *me, const char *label, char *out, size_t cap);
/* ruby_global_symbols from the code of rb_id2str (len bytes at ELF address
 * addr): the table its serial check reads, or the target of its tail jump
 * into where that check is (*jump, to scan next); 0 when neither. */
uint64_t sp_rb_find_symbols(const uint8_t *code, size_t len, uint64_t addr, uint64_t *jump);

/* ---- the recording side (interp.c, bpf_interp.c) ---- */

struct sp_emit;
struct sp_interpreters;
struct sp_remap;

/* Load the BPF program (before the events are open: they sample at once
 * with -p and -a). NULL for --interp=none or when it cannot be loaded
 * (reported once: native stacks continue). */
/* What the BPF object serves besides CPU samples: its programs for
 * off-CPU samples and for kernel events are loaded only when asked for
 * (each costs the kernel's verifier some 0.1 s of CPU at start; Ruby's
 * walkers most: --interp=python leaves them out). */
#define SP_INTERP_USE_OFFCPU	(1u << 0)
#define SP_INTERP_USE_EVENTS	(1u << 1)
#define SP_INTERP_USE_ALL	(SP_INTERP_USE_OFFCPU | SP_INTERP_USE_EVENTS)
#define SP_INTERP_NO_SAMPLES	(1u << 2)	/* --no-samples: no CPU sample walk */
#define SP_INTERP_NO_RUBY	(1u << 3)	/* --interp=python: no Ruby walk */
/* The Ruby walkers (some 0.1-0.25 s of the verifier each) are loaded once
 * a Ruby is found (sp_interp_ruby()), not with the object. */
#define SP_INTERP_RUBY_LATER	(1u << 4)

struct sp_interpreters *sp_interp_new(enum sp_interp_mode mode, unsigned int uses);
/* With SP_INTERP_RUBY_LATER: load the Ruby walkers now on a thread (a
 * command that runs Ruby: before it does), or (wait) await a load that
 * was asked for; a no-op without one or when they are in. */
void sp_interp_ruby(struct sp_interpreters *ip, bool wait);
/* Whether the Ruby walkers are in (every one asked for loaded). */
bool sp_interp_ruby_loaded(const struct sp_interpreters *ip);
/* Whether a process is followed now. */
bool sp_interp_following(const struct sp_interpreters *ip);
/* interp_cmd.c: whether the command cmd (argv[0], looked up in PATH as
 * the exec will) runs Ruby, by the file's name or its "#!" line; and
 * whether such a line (len bytes) names Ruby, directly or through env. */
bool sp_interp_command_ruby(const char *cmd);
/* interp_layouts.c: read the environment the layouts use (call before
 * starting a thread that looks layouts up). */
void sp_interp_layouts_env(void);
/* Whether it runs Ruby or Python ("python3*"), alike. */
bool sp_interp_command_interp(const char *cmd);
bool sp_interp_shebang_ruby(const char *line, size_t len);
/* What the command sp-record starts is foreseen to run (interp_cmd.c). */
enum sp_interp_cmd {
	SP_ICMD_NONE,		/* no command: -p or -a */
	SP_ICMD_RUBY,		/* sp_interp_command_ruby() */
	SP_ICMD_PYTHON,		/* Python (sp_interp_command_interp(), not Ruby) */
	SP_ICMD_OTHER,		/* anything else: a shell, make, a test runner */
};
enum sp_interp_cmd sp_interp_command_kind(const char *cmd);
/*
 * The one rule: whether the Ruby walkers are loaded before the target
 * runs (and, but under -a, awaited then), rather than once a Ruby is
 * found. mode: --interp; cmd: the command's kind; system_wide: -a; pids:
 * -p's processes, each asked pid_ruby() (sp_interp_pid_ruby()) until one
 * runs Ruby (none given: not asked).
 */
bool sp_interp_ruby_first(enum sp_interp_mode mode, enum sp_interp_cmd cmd, bool system_wide,
			  const uint32_t *pids, size_t npids, bool (*pid_ruby)(uint32_t pid));
/* Whether process pid maps a ruby or libruby file; whether the text of
 * a /proc/PID/maps file does (at most 65536 lines read). */
bool sp_interp_pid_ruby(uint32_t pid);
bool sp_interp_maps_ruby(FILE *maps);
void sp_interp_free(struct sp_interpreters *ip);
/* Renumber the ids kept (the writer's id space compacted: source.h): the
 * code objects' names (Ruby's with their class put in), the C methods'
 * names, the forks' stacks and the modules; the frame caches start over. */
void sp_interp_remap(struct sp_interpreters *ip, const struct sp_remap *m);
/* Attach it to these sampling events. 0, or -1 (reported; native stacks
 * continue). Samples before this moment have no interpreted stack and are
 * not counted as unread. */
int sp_interp_attach(struct sp_interpreters *ip, const int *fds, size_t nfds);
/* An executable mapping of pid at time: path at [start, end), file offset pgoff.
 * Registers the process when path holds a supported interpreter; with out
 * (when the mapping's turn comes in time order) a runtime record says
 * which, and whether it is followed. */
void sp_interp_on_map(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
		      const char *path, uint64_t start, uint64_t end, uint64_t pgoff, uint64_t time);
/* A new process pid of ppid at time (peeked at, as mappings are). */
void sp_interp_on_fork(struct sp_interpreters *ip, uint32_t ppid, uint32_t pid, uint64_t time);
/* pid exited or exec'd at time: forget what it mapped before. */
void sp_interp_on_end(struct sp_interpreters *ip, uint32_t pid, uint64_t time);
/* Take the stacks the BPF program wrote so far (before the perf rings'
 * records are handled: each of them was written near its sample), and
 * read their code objects now, before the program frees them (imports
 * run a module's code once): their names' strings go to out. */
void sp_interp_drain(struct sp_interpreters *ip, struct sp_emit *out);
/* A descriptor that polls readable when a stack naming code not met before
 * is waiting (its code may be freed soon: drain at once), -1 if none. */
int sp_interp_wake_fd(const struct sp_interpreters *ip);

/* interp_outcome.c: what became of a sample's interpreted stack. */
enum sp_interp_outcome {
	SP_IO_COMPLETE,		/* every frame read and named */
	SP_IO_NONE,		/* the thread had no interpreted stack (no VM or
				 * thread state yet, or none any more) */
	SP_IO_NOT_FOLLOWED,	/* the interpreter ran before the BPF program knew
				 * of the process: its stack was not read */
	SP_IO_UNPAIRED,		/* no stack read near the sample's time */
	SP_IO_FAULT,		/* a read failed in the walk: "[x: unreadable]" */
	SP_IO_TRUNCATED,	/* deeper than the walk's bound */
	SP_IO_FREED,		/* a frame's code not read (freed, or its memory
				 * reused, before user space read it) */
	SP_IO_NO_LINE,		/* every frame named, a line unknown: its code was
				 * named from the BPF program's copy, whose line
				 * table stops before it (no incomplete stack) */
	SP_IO_NO_WALKER,	/* a Ruby's, taken while its walker was still
				 * loading (bpf_interp.c): native stack only */
	SP_IO_UNPUSHED,		/* the innermost eval loop call had no frame of
				 * its own on the stack read (entering it, or
				 * leaving it): "[x: frame not pushed]" */
	SP_IO_N
};
/* What is known of a sample of a followed process. */
struct sp_interp_seen {
	bool taken;		/* a stack was read for it */
	uint8_t status;		/* that stack's SP_BPF_IST_* */
	bool truncated;		/* its SP_BPF_IFL_TRUNCATED */
	bool all_named;		/* each of its frames' code was read */
	bool no_line;		/* a frame's line is unknown (named from a copy) */
	uint64_t time;		/* the sample's */
	uint64_t followed;	/* when the BPF program was told of the process
				 * (0: from its start, as a fork's child) */
	bool started;		/* its interpreter was set up by then */
	bool no_eval;		/* its native stack, unwound whole, is in no eval loop */
	bool unpushed;		/* one eval loop call more in it than entry frames
				 * (sp_interp_unpushed()) */
};
enum sp_interp_outcome sp_interp_outcome(const struct sp_interp_seen *s);
const char *sp_interp_outcome_name(enum sp_interp_outcome o);
/* Whether it counts as an incomplete interpreted stack. */
bool sp_interp_outcome_incomplete(enum sp_interp_outcome o);

/* The interpreted frames of a sample, innermost first: frame ids, each
 * with 1 in entry[] when it is the first frame of its eval loop call;
 * Ruby: a C method's frame has where its C function lies in
 * [cstart, cend) (cend 0: another frame, or unknown), and 1 in cown[]
 * when another C method's C code called it. */
struct sp_interp_frames {
	uint64_t ids[SP_BPF_IFRAMES + 1];
	uint8_t entry[SP_BPF_IFRAMES + 1];
	uint64_t cstart[SP_BPF_IFRAMES + 1], cend[SP_BPF_IFRAMES + 1];
	uint8_t cown[SP_BPF_IFRAMES + 1];
	unsigned int n;
};
/* The stack read for (pid, tid)'s sample at time: 1 with f filled, 0 when
 * the process runs no known interpreter. calls: the eval loop calls in the
 * sample's native stack when it was unwound whole
 * (sp_interp_eval_calls()), -1 when it was not. 0: no interpreted code ran
 * then (sp_interp_outcome()); one more than the stack read has entry
 * frames: the innermost call is entering or leaving its frame, which the
 * stack read does not hold, and f starts with a placeholder for it
 * (sp_interp_unpushed()), so that each call keeps its own frames. */
int sp_interp_sample(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid, uint32_t tid,
		     uint64_t time, int calls, struct sp_interp_frames *f);
/* Whether f, read for a sample whose native stack was unwound whole and
 * holds calls eval loop calls, lacks the innermost call's frame: calls is
 * one more than f's entry frames. The eval loop pushes its frame after its
 * entry (CPython 3.11: tstate->cframe is the caller's until
 * _PyEval_EvalFrameDefault's prologue is done) and pops it before it
 * returns; Ruby's vm_exec() pops its FINISH frame before rb_vm_exec()
 * returns. Spliced as read, that call would take its caller's frames,
 * and every call above the next one's. */
bool sp_interp_unpushed(const struct sp_interp_frames *f, unsigned int calls);
/* Put f's frames in place of the eval loop's native frames in ids (leaf
 * first, *n of them, at most max <= SP_INTERP_SPLICE_MAX): eval[i] is 1
 * for a frame of the eval loop, 2 for an address in no executable mapping
 * (left out), else 0. pcs[i] (NULL: none known) is frame i's address (the
 * leaf's pc, then return addresses; 0 for a kernel frame): a C method
 * called from C goes over its C function's frame when it is the next
 * frame to place, or, when its function is not in the stack, over the
 * function of the C method that called it; else, as every other, with the
 * eval loop frame of its call. */
#define SP_INTERP_SPLICE_MAX	1024
void sp_interp_splice(const struct sp_interp_frames *f, uint64_t *ids, const uint64_t *pcs,
		      const uint8_t *eval, unsigned int *n, unsigned int max);
/* Off-CPU samples (perf_offcpu.c): attach to the context-switch events
 * (0, or -1 reported); at a switch-out of (pid, tid) at time, take the
 * stack read then (NULL: pid runs no known interpreter); when the wait is
 * recorded, its frames as sp_interp_sample() gives them (counted as a
 * sample's); then free it. */
struct sp_interp_stack;
int sp_interp_offcpu_attach(struct sp_interpreters *ip, const int *fds, size_t nfds);
/* -a --cgroup: the maps of the cgroup test at the start of the program
 * attached by sp_interp_offcpu_attach() (bpf_cgfilter.h), 0; -1 when it
 * is not attached. */
struct sp_cgfilter_maps;
int sp_interp_offcpu_cgroups(struct sp_interpreters *ip, struct sp_cgfilter_maps *m);
struct sp_interp_stack *sp_interp_offcpu_take(struct sp_interpreters *ip, struct sp_emit *out,
					      uint32_t pid, uint32_t tid, uint64_t time);
int sp_interp_offcpu_frames(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			    const struct sp_interp_stack *st, struct sp_interp_frames *f);
void sp_interp_stack_free(struct sp_interp_stack *st);
/* Whether addr in pid is the interpreter's eval loop function. */
bool sp_interp_is_eval(const struct sp_interpreters *ip, uint32_t pid, uint64_t addr);
/* The eval loop calls among the n frames at pcs marked 1 in eval (as
 * sp_interp_splice() takes them): one per frame, but a Ruby's
 * vm_exec_core (named by a full symbol table) is part of the rb_vm_exec
 * call that called it. */
unsigned int sp_interp_eval_calls(const struct sp_interpreters *ip, uint32_t pid,
				  const uint64_t *pcs, const uint8_t *eval, unsigned int n);
/* The interpreters of this recording (the perf source's), NULL if none:
 * the events source links its events to their stacks through them. */
struct sp_interpreters *sp_interp_current(void);
/* Kernel events are recorded: read a stack at each call that makes one,
 * at the entry tracepoint of each such call, or with raw_entry
 * (--event-attach=sys_enter) at the raw sys_enter one, as where the
 * calls' own cannot be had. 0, or -1 (reported once). */
int sp_interp_events_on(struct sp_interpreters *ip, bool raw_entry);
/* The command is an interpreter: see sp_interp_bpf_events_early(). */
void sp_interp_events_early(struct sp_interpreters *ip);
/* The interpreted stack of thread tid of pid at the entry of system call
 * nr, for the event that call made at time (dns: an event of a call whose
 * stack is not read, which takes the stack of the thread's last call read
 * within a second: a resolver's connect): its stack id in out, root
 * first, a placeholder marking a truncated or unreadable one; 0 when the
 * process runs no known interpreter or the stack was not read. */
uint64_t sp_interp_event_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			       uint32_t tid, uint64_t time, uint32_t nr, bool dns);
/* The calls whose entry a fork, an exec or an exit event takes its stack
 * from (clone, clone3, fork, vfork; execve, execveat; exit, exit_group),
 * set in bits (nbits). */
void sp_interp_proc_calls(uint64_t *bits, size_t nbits);
/* The name of one of those calls ("clone", "execve"...), NULL for another. */
const char *sp_interp_proc_call_name(uint32_t nr);
/* A fork event of thread tid of pid at time: the stack at the entry of
 * the clone, fork or vfork that made it, as sp_interp_event_stack() gives
 * it. A new process (not a thread) is followed from here on, as by
 * sp_interp_on_fork(), and its fork's stack kept for its exec. */
uint64_t sp_interp_fork_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			      uint32_t tid, uint64_t time, uint32_t child, bool thread);
/* An exec event of pid, made by its thread tid (the exec's old_pid) at
 * time: the stack at that thread's execve, else, for the first exec of a
 * child, the one its fork carried (a child between fork and exec runs no
 * interpreted code of its own: subprocess, system, spawn). 0: none. */
uint64_t sp_interp_exec_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			      uint32_t tid, uint64_t time);
/* A proc_exit event of thread tid of pid at time, not by a signal: the
 * stack at the entry of the exit or exit_group that ended it (0: none,
 * as when another thread's exit_group ended it). */
uint64_t sp_interp_exit_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			      uint32_t tid, uint64_t time);
/* pid ended: a fork's stack kept for its exec goes. */
void sp_interp_proc_exit(struct sp_interpreters *ip, uint32_t pid);
/* The end: the count of unreadable stacks (a lost record), warnings. */
void sp_interp_finish(struct sp_interpreters *ip, struct sp_emit *out, uint64_t time);
/* "interp=python3.11" for the header, or "" */
const char *sp_interp_describe(const struct sp_interpreters *ip);

/* ---- bpf_interp.c: the BPF side, used by interp.c ---- */

struct sp_interp_bpf;
typedef void (*sp_interp_stack_fn)(void *ctx, const struct sp_bpf_istack *h,
				   const struct sp_bpf_iframe *f, size_t nbytes);
/* Load the program (NULL: reported); then attach it to the events. */
struct sp_interp_bpf *sp_interp_bpf_open(sp_interp_stack_fn fn, void *ctx, unsigned int uses);
/* offcpu: on_switch on context-switch events, else on_sample */
int sp_interp_bpf_attach(struct sp_interp_bpf *b, const int *fds, size_t nfds, bool offcpu);
/* on_switch's cgroup test: its maps (0), -1 when it is not loaded */
int sp_interp_bpf_cgroups(struct sp_interp_bpf *b, struct sp_cgfilter_maps *m);
int sp_interp_bpf_layout(struct sp_interp_bpf *b, unsigned int row,
			 const struct sp_bpf_ilayout *l);
int sp_interp_bpf_proc(struct sp_interp_bpf *b, uint32_t pid, const struct sp_bpf_iproc *v);
void sp_interp_bpf_proc_del(struct sp_interp_bpf *b, uint32_t pid);
void sp_interp_bpf_drain(struct sp_interp_bpf *b);
/* The stacks' ring buffer, to poll (woken for new code only). */
int sp_interp_bpf_wake_fd(const struct sp_interp_bpf *b);
/* Read stacks at the entry of the calls sp_ev_stack_calls() names too,
 * once a process is in the procs map (at once if one is already); with
 * raw_entry from the raw sys_enter tracepoint only. */
int sp_interp_bpf_events(struct sp_interp_bpf *b, bool raw_entry);
/* A command that is an interpreter: the entry program is attached with the
 * events (before it runs), not once its mappings are read: its first calls
 * (a script's first opens, a few ms in) carry their stacks too. */
void sp_interp_bpf_events_early(struct sp_interp_bpf *b);
/* bpf_events_decode.c: the system calls whose kernel events get an
 * interpreted stack, as bits by call number (nbits of them). */
void sp_ev_stack_calls(uint64_t *bits, size_t nbits);
/* The name of one of those calls ("openat", "connect"...), NULL for another. */
const char *sp_ev_call_name(uint32_t nr);
uint64_t sp_interp_bpf_lost(struct sp_interp_bpf *b);
/* Python code-object copies the per-process budget refused (SP_BPF_ICOPY_*),
 * and one process they were refused to (*pid, 0: none). */
uint64_t sp_interp_bpf_copies_refused(struct sp_interp_bpf *b, uint32_t *pid);
/* Load the Ruby walkers this recording needs that are not in yet: now
 * (wait: a load under way on the thread is awaited too), or on a thread
 * (a finished one is joined first). 0: all in; 1: loading on the thread;
 * -1: a load failed (said once). */
int sp_interp_bpf_ruby(struct sp_interp_bpf *b, bool wait);
/* When the first walker load was asked for (0: never), and when the last
 * one was in (*ready, 0: not yet). */
uint64_t sp_interp_bpf_ruby_times(const struct sp_interp_bpf *b, uint64_t *ready);
void sp_interp_bpf_close(struct sp_interp_bpf *b);

#endif
