// SPDX-License-Identifier: MIT
/*
 * The runtimes' glue for sp-flame --fold-runtime: native frames that only
 * carry a call from one interpreted method to the next (CPython's and
 * Ruby's evaluation loops and call paths), the tracing machinery that runs
 * the span hooks, and the C runtime's start of a process or thread. One
 * table, the one docs/sp-flame.md shows (tests/sp-flame.bats checks that
 * they agree): with the span path at the root of a stack, these frames
 * say nothing the spans do not. The span hooks' own modules are glue too,
 * and so are the frames no symbol names in the runtimes' own files.
 */
#include <string.h>

#include "foldedP.h"

/* A name, or a prefix when it ends in '*'. */
static const char *const glue[] = {
	/* CPython: starting the interpreter and running a module */
	"Py_BytesMain", "Py_Main", "Py_RunMain", "pymain_*", "_PyRun_*", "PyRun_*",
	"pyrun_file", "run_mod", "run_eval_code_obj", "PyEval_EvalCode*",
	/* CPython: the evaluation loop and the calls between functions */
	"_PyEval_EvalFrameDefault", "_PyEval_EvalFrame", "_PyEval_Vector",
	"_PyFunction_Vectorcall", "_PyObject_Vectorcall*", "PyObject_Vectorcall*",
	"_PyVectorcall_Call", "PyVectorcall_Call", "_PyObject_Call*", "PyObject_Call*",
	"_PyObject_MakeTpCall", "_PyObject_FastCall*", "object_vacall", "do_call_core",
	"method_vectorcall*", "cfunction_call", "cfunction_vectorcall*", "vectorcall_method",
	"vectorcall_unbound", "slot_tp_call", "slot_tp_init", "type_call", "builtin_exec*",
	"gen_send_ex*", "gen_iternext", "_PyGen_Send", "PyIter_Send", "pythread_wrapper",
	"thread_run",
	/* CPython: the profiling hook's calls (sys.setprofile) */
	"call_trace*", "trace_function_entry", "trace_function_exit", "maybe_call_line_trace",
	"call_exc_trace", "trace_call_function",
	/* Ruby: running the main script */
	"ruby_run_node", "ruby_exec_node", "rb_ec_exec_node",
	/* Ruby: the VM loop and the calls between methods and blocks */
	"vm_exec_core", "vm_exec", "rb_vm_exec", "vm_exec_handle_exception", "vm_call*",
	"vm_invoke*", "vm_yield*", "vm_sendish", "invoke_block_from_c*",
	"invoke_iseq_block_from_c", "rb_yield*", "rb_funcall*", "rb_call0", "rb_call",
	"rb_vm_invoke_proc*", "rb_block_call*", "rb_iterate*", "iterate_method", "rb_protect",
	"rb_ensure", "rb_rescue*", "rb_vrescue2", "rb_catch*", "catch_i", "loop_i",
	"thread_start_func_*", "thread_do_start*",
	/* Ruby: the event hooks that run the span hook (TracePoint) */
	"rb_exec_event_hook*", "rb_threadptr_exec_event_hooks*", "exec_hooks_*",
	/* the C runtime: a process's and a thread's first frames */
	"_start", "__libc_start_main*", "__libc_start_call_main", "start_thread", "clone",
	"clone3",
};

/* The span hooks' modules, by the start of their file name. */
static const char *const hook_modules[] = { "_stackpulse_hook.", "stackpulse_hook." };

/*
 * The runtimes' own files, by the start of their file name: a frame in
 * them that no symbol names (Debian's libruby has no symbols for its static
 * functions, vm_exec_core or vm_call_iseq_setup among them) is glue too.
 */
static const char *const runtime_modules[] = { "libruby", "libpython", "ruby", "python" };

static bool match(const char *pat, const char *name, size_t len)
{
	size_t n = strlen(pat);

	if (n && pat[n - 1] == '*')
		return len >= n - 1 && !memcmp(pat, name, n - 1);
	return len == n && !memcmp(pat, name, n);
}

bool sp_folded_is_glue(const char *name)
{
	/* a compiler's clone of a function is the function ("call_trace.part.0") */
	size_t len = strcspn(name, "."), i;

	for (i = 0; i < sizeof(glue) / sizeof(glue[0]); i++)
		if (match(glue[i], name, len))
			return true;
	return false;
}

static bool base_starts(const char *path, const char *const *v, size_t n)
{
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < n; i++)
		if (!strncmp(base, v[i], strlen(v[i])))
			return true;
	return false;
}

bool sp_folded_is_hook_module(const char *path)
{
	return base_starts(path, hook_modules, sizeof(hook_modules) / sizeof(hook_modules[0]));
}

bool sp_folded_is_runtime_module(const char *path)
{
	return base_starts(path, runtime_modules,
			   sizeof(runtime_modules) / sizeof(runtime_modules[0]));
}
