/* SPDX-License-Identifier: MIT */
/*
 * bpf_spans.h - the "spans" record source of sp-record: method spans from
 * Ruby and Python (USDT probes of the interpreters), from C programs marked
 * with <stackpulse/span.h>, and from any native function (--span-func, a
 * uprobe and uretprobe pair), for the recorded process tree only.
 *
 * Records: SP_REC_SPAN_START/STOP/RAISE, SP_REC_EVENT (Python audit events),
 * SP_REC_RUNTIME when a runtime is first seen in a process, SP_REC_PROBE
 * (hits per probe per process, with a verdict for dead probes) when a
 * process exits or the recording ends, SP_REC_LOST what=SP_LOST_SPANS.
 *
 * New processes of the tree are held with SIGSTOP from BPF on fork and exec
 * until their probes are attached (pid-filtered, never system-wide), then
 * continued; so spans are complete from a process's first instruction.
 */
#ifndef STACKPULSE_BPF_SPANS_H
#define STACKPULSE_BPF_SPANS_H

#include <argp.h>
#include <stdbool.h>
#include <stdint.h>

#include "source.h"

/* --spans= words, as bits. */
#define SP_SPANS_RUBY		(1u << 0)	/* method spans: activator + method__entry/return + raise */
#define SP_SPANS_RUBY_C		(1u << 1)	/* C-method spans: cmethod__entry/return + raise */
#define SP_SPANS_PYTHON		(1u << 2)	/* function spans: activator + function__entry/return */
#define SP_SPANS_PY_AUDIT	(1u << 3)	/* Python audit events */
#define SP_SPANS_USDT		(1u << 4)	/* <stackpulse/span.h> markers */
/* sp_spans_elf_providers(): every stackpulse:span__begin/end marker of the
 * file passes its arguments in %rdi, %rsi, %edx (<stackpulse/span.h> on
 * x86-64) */
#define SP_SPANS_USDT_REGS	(1u << 8)
#define SP_SPANS_USDT_REGS_ARGS	"8@%rdi 8@%rsi -4@%edx"
/* sp_spans_elf_providers(): a CPython 3.11 or later without USDT probes
 * (built without --enable-dtrace, as pyenv's are; known by its dynamic
 * symbol Py_Version): the Python hook alone gives its spans */
#define SP_SPANS_PY_HOOKABLE	(1u << 9)
/* The runtime hooks' markers (runtime/hook/marker.h) pass class,
 * method, file and line so. */
#define SP_SPANS_HOOK_ARGS	"8@%rdi 8@%rsi 8@%rdx -4@%ecx"
#define SP_SPANS_AUTO		(SP_SPANS_RUBY | SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT | SP_SPANS_USDT)
/*
 * What a recording gets without --spans: nothing per call. The per-call
 * method hooks cost 1.5-20x on call-heavy programs, and interpreted stacks
 * (docs/interpreters.md) name the method of every sample and kernel event
 * without them; audit events and <stackpulse/span.h> markers cost only
 * where they fire (docs/spans.md, "Why spans are off by default").
 */
#define SP_SPANS_DEFAULT	(SP_SPANS_PY_AUDIT | SP_SPANS_USDT)

#define SP_SPANS_MAX_FUNCS	64	/* --span-func options */
#define SP_SPANS_MAX_GLOBS	64	/* --spans-match options */
#define SP_SPANS_MAX_MATCHES	256	/* functions one glob may match */

struct sp_cgroup_filter;

struct sp_spans_opts {
	unsigned int modes;		/* SP_SPANS_* */
	bool explicit_modes;		/* --spans given: a missing runtime is an error */
	bool given;			/* --spans given, even as "auto" */
	/* --spans-match: Ruby method spans of these methods only
	 * ("Class#method", "Class.method"); sets SP_SPANS_RUBY */
	const char *globs[SP_SPANS_MAX_GLOBS];
	unsigned int nglobs;
	const char *funcs[SP_SPANS_MAX_FUNCS];	/* "BINARY:FUNCTION" (glob) */
	unsigned int nfuncs;
	const char *runtime_dir;	/* activators; NULL = found next to the binary */
	/* The command sp-record starts, when given after "--" (NULL-terminated
	 * argv): --spans=auto loads BPF early only if it may run a runtime.
	 * NULL: none given so (-p, -a, or a command without "--"), which may. */
	char *const *command;
	/* -a --cgroup/--container: the processes that carry a runtime hook
	 * are followed in these only (NULL: the whole machine) */
	const struct sp_cgroup_filter *cgroups;
};

/* argp child: --spans=LIST, --span-func=BINARY:FUNCTION, --spans-match=GLOB.
 * Its input is the tool's struct sp_spans_opts (state->child_inputs[i]),
 * with its defaults set: .modes = SP_SPANS_DEFAULT, no functions. It only
 * parses: the source's creation acts on the options. */
extern const struct argp sp_spans_argp;

/* Parse a --spans= list ("auto", "none", "ruby,python", ...) into SP_SPANS_*
 * bits. 0, or -1 with *bad pointing at the unknown word. */
int sp_spans_parse_list(const char *list, unsigned int *modes, const char **bad, size_t *badlen);

/* modes (SP_SPANS_* mode bits) spelled as a --spans= list would be, into
 * buf: "ruby,python", "none" for none. */
void sp_spans_list_str(unsigned int modes, char *buf, size_t size);

/* Where the Ruby/Python activators and hooks live (build/runtime in the
 * build tree, PREFIX/share/stackpulse/runtime when installed; $SP_RUNTIME_DIR
 * first), or NULL. */
const char *sp_spans_runtime_dir(const struct sp_spans_opts *o);

/*
 * Prepare the environment of a command sp-record starts (call before fork):
 * RUBYOPT gets -r<activator> (Ruby method spans), PYTHONPATH the directory
 * of the Python activator, STACKPULSE_SPANS_MATCH the --spans-match globs
 * (one a line). 0, or -1 (reported) when an activator the modes need is
 * missing.
 */
int sp_spans_setup_env(const struct sp_spans_opts *o);

/* The source; NULL (reported) on failure. o must outlive it. Creating it
 * starts loading the BPF object in a thread (unless --spans=auto and
 * o->command is known to be no runtime), so that the load overlaps the
 * tool's other set-up: create it as early as can be. */
struct sp_source *sp_spans_source_new(const struct sp_spans_opts *o);

/*
 * Helpers, exposed for the unit test.
 */
/* Providers with USDT notes in an ELF file, as bits (SP_SPANS_RUBY for
 * "ruby", SP_SPANS_PYTHON for "python", SP_SPANS_USDT for the
 * <stackpulse/span.h> markers stackpulse:span__begin and span__end (not
 * the runtime hooks' other "stackpulse" markers), with SP_SPANS_USDT_REGS
 * when each of those passes its arguments as
 * SP_SPANS_USDT_REGS_ARGS; SP_SPANS_PY_HOOKABLE for a CPython without
 * probes). -1 (reported) if the file cannot be read. */
int sp_spans_elf_providers(const char *path);
/* A USDT note's operands ("8@%rbx -4@24(%rsp) 4@$1") as libbpf reads
 * them (struct sp_bs_usdt_spec, bpf/spans.h; x86-64 only): how many, or -1
 * when one cannot be read here (then libbpf's USDT links read them). */
struct sp_bs_usdt_spec;
int sp_spans_usdt_parse_args(const char *args, struct sp_bs_usdt_spec *spec);
/* Whether executing path runs something with probes for modes: an ELF
 * file with the USDT providers, or needing a libruby/libpython that has
 * them, or a "#!" script whose interpreter is one ("#!/usr/bin/env ruby"
 * counts by name). --spans=auto decides from it whether to wait for BPF. */
bool sp_spans_file_has_probes(unsigned int modes, const char *path);
/* Resolve the libruby/libpython an executable needs (DT_NEEDED, RPATH,
 * RUNPATH, standard directories) into paths[], at most n. Returns how
 * many. */
int sp_spans_runtime_libs(const char *exe, char paths[][4096], int n);
/* The same for every library it needs directly when all is true (for
 * <stackpulse/span.h> markers in libraries), at most n, the runtimes'
 * libraries first, searched as how says for one process (NULL: without
 * LD_LIBRARY_PATH; lib/elf/dynamic.h): its via_ld_path for all of them,
 * its missing for the runtimes' only. */
struct sp_elf_libsearch;
int sp_spans_needed_libs(const char *exe, bool all, struct sp_elf_libsearch *how,
			 char paths[][4096], int n);
/* A runtime's version read from its binary ("3.1.2"), or "" when unknown. */
void sp_spans_runtime_version(const char *path, int runtime, char *buf, size_t size);
/* Split "BINARY:FUNCTION" at the last ':'. 0, or -1 when malformed. */
int sp_spans_split_func(const char *spec, char *bin, size_t bsize, char *func, size_t fsize);

#endif
