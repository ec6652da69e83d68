// SPDX-License-Identifier: MIT
/*
 * stackpulse_hook.c - the CPython 3.11 extension _stackpulse_hook: a C
 * profile function that marks each Python function's start and stop with
 * a USDT marker of its own (runtime/hook/marker.h), for sp-record.
 *
 * Why not the interpreter's probes: CPython 3.11 fires function__entry only
 * with a profile function set, and each of its probes is a 1-byte nop (a
 * breakpoint trap per hit) whose three strings BPF must read from user
 * memory per event. A profile function in C sees every call and return
 * anyway; here it names the code object once (its module and qualified
 * name, names.h) and fires a 5-byte nop marker with the name's addresses
 * in registers.
 *
 * Lines are what the interpreter's probes gave: the line running when a
 * frame starts (its first line, or where a generator resumes) and stops.
 * A frame unwound by an exception also gets a py__raise mark before its
 * stop. With STACKPULSE_SPAN_RING=1 (sp-record sets it) the marks go to
 * the thread's span ring instead (runtime/hook/ring.h).
 *
 * A coroutine's frame (async def, @types.coroutine, an async generator)
 * starts at each resume and stops at each await; with span rings its
 * start and stop marks are preceded by an entry naming the coroutine (the
 * generator object) and whether the frame suspends there or ends
 * (py__coro, never a marker): sp-correlate and the renderers make a lane
 * of each task from them. Other frames pay one test of their code's flags.
 *
 * With STACKPULSE_SPANS_MATCH (sp-record --spans-match=GLOB; globs one a
 * line) only the functions whose "module.qualname" or qualname matches a
 * glob are marked. CPython 3.11 has no per-function hook: the profile
 * function is still called for every call and return, but whether a code
 * object matches is decided once, at its first call, and kept on the code
 * object itself (co_extra, _PyCode_SetExtra()): another function's call
 * costs the interpreter's tracing path, the call of this function and
 * one read of that slot; no name is made or looked up for it. Globs that
 * all name Ruby instance methods ("Store#load") set no profile function.
 *
 * Loaded by sitecustomize.py (sp-record puts its directory first on
 * PYTHONPATH): install() sets the profile function of the calling thread,
 * thread_start is given to threading.setprofile() for threads to come.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "../hook/marker.h"
#include "../hook/names.h"
#include "../hook/ring.h"

static struct sp_rt_names names;

/* --spans-match: the globs (NULL: every function is marked), the code
 * objects' extra slot that keeps each one's decision */
#define MATCH_GLOBS_MAX	64
static char *match_buf;
static const char *match_globs[MATCH_GLOBS_MAX];
static unsigned int match_n;
static bool match_none;	/* every glob names a Ruby method ("#"): no profile function */
static Py_ssize_t match_slot = -1;
static PyInterpreterState *match_interp;	/* the slot's: each interpreter has its own */

/*
 * Python's start-up, not the program: when install() runs from the
 * activator during start-up (site imported sitecustomize, which is this
 * activator), every frame open then is site's, importlib's or the
 * activator's, and so is everything they call until the outermost of them
 * returns (the activator's own imports, the sitecustomize it chains to,
 * site's .pth files). Those are not reported: the program's spans start at
 * its own <module>. The outermost start-up frame (a strong reference) and
 * its thread; NULL once it returned. STACKPULSE_PY_STARTUP=1 reports them
 * as before, reconstructed (docs/spans.md).
 */
static PyFrameObject *startup_frame;
static PyThreadState *startup_ts;

/*
 * Then, on the same thread, the interpreter's main still runs Python code
 * of its own before the program's: the path hooks it asks for a script's
 * importer (zipimporter, FileFinder's path_hook), the loader it sets on
 * __main__, the import of runpy for -m, a codec for a coding cookie,
 * readline for -i. All of it runs before the program's code starts, from C,
 * with no frame of the program below it: before_main leaves out every
 * frame of that thread from the end of start-up until the program starts
 * (STACKPULSE_PY_STARTUP=1 reports them). The rule is when, not which
 * names: the frames are CPython's internals, named differently across
 * versions (_frozen_importlib becomes importlib._bootstrap once importlib
 * is imported) and some not import frames at all, while when the program
 * starts is known: at the call of the __main__ module's code (a script,
 * -c), or, for -m (and a directory or zip run as a script), of
 * runpy._run_module_as_main, which the interpreter's main calls by that
 * name to find the module and run it as __main__, and which imports the
 * module's parent packages first: the program's own code, kept.
 * Only a run the interpreter's main gives to a program (its config names a
 * script, -c or -m) has such a window: an application that embeds Python
 * may never run __main__, and none of its frames are to be lost.
 */
static bool before_main;
static bool main_window_opened;

/*
 * For -m, runpy's own frames under its runner: _get_module_details,
 * _run_code, _get_code_from_file... which find the module and run its code,
 * and which the program never wrote. The runner's frame (a strong
 * reference, NULL once it returned) and its code's file, runpy's own
 * wherever it came from (<frozen runpy>, runpy.py): a frame of that file
 * called by the runner, directly or through such frames, on the runner's
 * thread is left out, its start and its stop (runner_inner()). What they
 * call is kept and nests under the runner: the imports of the module's
 * parent packages, importlib's finding of it, __main__'s <module>.
 */
static PyFrameObject *runner_frame;
static PyObject *runpy_file;
#define MATCH_YES	((void *)1)
#define MATCH_NO	((void *)2)

static const char *utf8(PyObject *s, size_t *len)
{
	Py_ssize_t n = 0;
	const char *p = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;

	if (!p) {
		PyErr_Clear();
		*len = 1;
		return "?";
	}
	*len = (size_t)n;
	return p;
}

/* The module a frame's code belongs to: its globals' __name__, or NULL. */
static const char *module_of(PyFrameObject *frame, size_t *len)
{
	PyObject *globals = PyFrame_GetGlobals(frame);
	PyObject *mod = globals && PyDict_Check(globals) ?
		PyDict_GetItemString(globals, "__name__") : NULL;
	const char *m = NULL;
	Py_ssize_t n = 0;

	if (mod && PyUnicode_Check(mod)) {
		m = PyUnicode_AsUTF8AndSize(mod, &n);
		if (!m)
			PyErr_Clear();
	}
	Py_XDECREF(globals);	/* the frame keeps them, and m with them */
	*len = m ? (size_t)n : 0;
	return m && n ? m : NULL;
}

/*
 * The name of a code object: its module (as the class of the span) and its
 * qualified name (JSONEncoder.encode), keyed by the code object and its
 * qualified name and file objects, so a code object freed and another made
 * at its address gets a name of its own. The module is looked up once, when
 * the name is made, from the globals of the first frame that runs the code.
 */
static struct sp_rt_name *code_name(PyFrameObject *frame, PyCodeObject *co)
{
	struct sp_rt_name *n = sp_rt_names_find(&names, (uintptr_t)co, (uintptr_t)co->co_qualname,
						(uintptr_t)co->co_filename);
	const char *s[3];
	size_t len[3] = { 0 };

	if (n) {
		sp_rt_name_use(n);	/* (told again to a recorder come since) */
		return n;
	}
	s[0] = module_of(frame, &len[0]);
	s[1] = utf8(co->co_qualname, &len[1]);
	s[2] = utf8(co->co_filename, &len[2]);
	n = sp_rt_names_add(&names, (uintptr_t)co, (uintptr_t)co->co_qualname,
			    (uintptr_t)co->co_filename, s, len, 0);
	if (n)
		sp_rt_name_use(n);
	return n;
}

#define CORO_FLAGS	(CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR)

/*
 * The coroutine a frame of code flagged CORO_FLAGS belongs to, for the
 * thread's next mark: its address, and for a return whether it yielded
 * (the interpreter marks the generator suspended before it tells the
 * profile function) rather than returned or raised.
 */
static void mark_coro(PyFrameObject *frame, int what)
{
	PyObject *gen = PyFrame_GetGenerator(frame);
	uintptr_t suspended;

	if (!gen)
		return;
	suspended = what == PyTrace_RETURN &&
		    ((PyGenObject *)gen)->gi_frame_state == -1;	/* FRAME_SUSPENDED */
	sp_rt_ring_put(SP_PR_PY_HOOK_CORO, gen, (void *)suspended, NULL, 0);
	Py_DECREF(gen);
}

/* The py__call marker, at one place (sp_py_call_site): a recorder listens
 * to a hook without span rings when a uprobe is on it (sp_rt_resync_due()). */
extern const unsigned char sp_py_call_site[];
__attribute__((noinline, noclone))
static void mark_call(const struct sp_rt_name *n, int line)
{
	SP_RT_MARK_AT(sp_py_call_site, py__call, n->str[0], n->str[1], n->str[2], line);
}

static void listened_check(PyFrameObject *frame, int what);

/* Whether "module.qualname" or the qualified name alone matches a glob. */
static bool match_name(PyFrameObject *frame, PyCodeObject *co)
{
	size_t mlen, qlen;
	const char *m = module_of(frame, &mlen), *q = utf8(co->co_qualname, &qlen);
	char *full = m ? malloc(mlen + qlen + 2) : NULL;	/* once per code object */
	bool yes = false;
	unsigned int i;

	if (full) {
		memcpy(full, m, mlen);
		full[mlen] = '.';
		memcpy(full + mlen + 1, q, qlen);
		full[mlen + 1 + qlen] = 0;
	}
	for (i = 0; i < match_n && !yes; i++)
		yes = !fnmatch(match_globs[i], q, 0) || (full && !fnmatch(match_globs[i], full, 0));
	free(full);
	return yes;
}

/* --spans-match: whether co's frames are marked, decided at its first
 * call and kept on it (a code object that cannot keep it is looked at
 * again at each call: still right, only slower). */
static bool match_code(PyFrameObject *frame, PyCodeObject *co)
{
	void *v = NULL;
	bool yes;

	/* another interpreter's slot index names another extension's slot */
	if (PyInterpreterState_Get() != match_interp)
		return match_name(frame, co);
	if (_PyCode_GetExtra((PyObject *)co, match_slot, &v) == 0 && v)
		return v == MATCH_YES;
	PyErr_Clear();
	yes = match_name(frame, co);
	if (_PyCode_SetExtra((PyObject *)co, match_slot, yes ? MATCH_YES : MATCH_NO))
		PyErr_Clear();
	return yes;
}

static void mark_open_frames(uint32_t flag, PyFrameObject *skip);

/*
 * Whether frame, being called, starts the program (before_main): the
 * __main__ module's code, or runpy's runner called from C. Its callers, if
 * any (not known to happen), were left out: reconstructed, as install()
 * does for the frames open when it comes.
 */
static bool main_begins(PyFrameObject *frame)
{
	PyFrameObject *back = PyFrame_GetBack(frame);
	PyCodeObject *co;
	size_t len;
	const char *m = module_of(frame, &len);
	bool yes = m && len == 8 && !memcmp(m, "__main__", 8);

	if (!yes && !back && m && len == 5 && !memcmp(m, "runpy", 5)) {
		co = PyFrame_GetCode(frame);
		yes = !PyUnicode_CompareWithASCIIString(co->co_qualname, "_run_module_as_main");
		if (yes && !runpy_file) {
			runner_frame = (PyFrameObject *)Py_NewRef(frame);
			runpy_file = Py_NewRef(co->co_filename);
		}
		Py_DECREF(co);
	}
	if (yes) {
		before_main = false;
		if (back)
			mark_open_frames(0, frame);
	}
	Py_XDECREF(back);
	return yes;
}

/* Whether co is of runpy's file (runpy_file): one object for the code
 * objects of one module, else compared. */
static bool runpy_code(PyCodeObject *co)
{
	PyObject *f = co->co_filename;

	return f == runpy_file || (PyUnicode_Check(f) &&
				   PyUnicode_GET_LENGTH(f) == PyUnicode_GET_LENGTH(runpy_file) &&
				   !PyUnicode_Compare(f, runpy_file));
}

/*
 * Whether frame (of code co) is runpy's machinery under its runner
 * (runner_frame): of runpy's file, called by the runner or by such a
 * frame. Its caller is the same at its start and its stop (a generator's at
 * each resume and suspension), so both are left out or neither: the
 * decoder's nesting stays whole. A runpy function the program calls
 * (runpy.run_path from its <module>) has the program's frame between it
 * and the runner: reported.
 */
static bool runner_inner(PyFrameObject *frame, PyCodeObject *co)
{
	PyFrameObject *f = frame, *back;
	bool yes;

	if (!runner_frame || frame == runner_frame || startup_ts != PyThreadState_Get())
		return false;
	yes = runpy_code(co);
	Py_INCREF(f);
	while (yes) {
		back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
		if (!f || f == runner_frame)
			break;
		co = PyFrame_GetCode(f);
		yes = runpy_code(co);
		Py_DECREF(co);
	}
	yes = yes && f == runner_frame;
	Py_XDECREF(f);
	return yes;
}

/*
 * Whether a call or return of frame (of code co) is left out: Python's
 * start-up, the window before the program (before_main) and runpy's frames
 * under its runner (runner_inner()). Each rule leaves out both the start and
 * the stop of a frame, or neither.
 */
static bool left_out(PyFrameObject *frame, PyCodeObject *co, int what)
{
	if (startup_ts != PyThreadState_Get())
		return false;
	if (startup_frame) {
		if (what == PyTrace_RETURN && frame == startup_frame)
			Py_CLEAR(startup_frame);	/* start-up is over */
		return true;
	}
	if (before_main && !(what == PyTrace_CALL && main_begins(frame)))
		return true;
	if (frame == runner_frame && what == PyTrace_RETURN) {
		Py_CLEAR(runner_frame);	/* the program is over */
		return false;
	}
	return runner_inner(frame, co);
}

static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	bool coro;

	struct sp_rt_name *n;
	PyCodeObject *co;
	int line;

	if (what != PyTrace_CALL && what != PyTrace_RETURN)
		return 0;	/* C calls */
	co = PyFrame_GetCode(frame);
	if (left_out(frame, co, what) || (match_n && !match_code(frame, co))) {
		Py_DECREF(co);
		return 0;
	}
	n = code_name(frame, co);
	coro = co->co_flags & CORO_FLAGS;
	Py_DECREF(co);
	if (!n)
		return 0;
	line = PyFrame_GetLineNumber(frame);
	listened_check(frame, what);
	if (what == PyTrace_CALL) {
		if (coro && sp_rt_ring_on)
			mark_coro(frame, what);
		if (!sp_rt_ring_on || !sp_rt_ring_put(SP_PR_PY_HOOK_CALL, n->str[0], n->str[1],
						      n->str[2], line))
			mark_call(n, line);
		return 0;
	}
	/*
	 * A frame left by an exception returns nothing (arg NULL): CPython
	 * calls the profile function so only while unwinding, with the
	 * exception put aside, so its class is not to be had here.
	 */
	if (!arg && (!sp_rt_ring_on || !sp_rt_ring_put(SP_PR_PY_HOOK_RAISE, NULL, n->str[1],
						       n->str[2], line)))
		SP_RT_MARK(py__raise, NULL, n->str[1], n->str[2], line);
	if (coro && sp_rt_ring_on)
		mark_coro(frame, what);
	if (!sp_rt_ring_on || !sp_rt_ring_put(SP_PR_PY_HOOK_RETURN, n->str[0], n->str[1],
					      n->str[2], line))
		SP_RT_MARK(py__return, n->str[0], n->str[1], n->str[2], line);
	return 0;
}

/* Set while the hook sets a profile function itself (the GIL held). */
static int setting_own;

static void set_profile(Py_tracefunc func)
{
	setting_own = 1;
	PyEval_SetProfile(func, NULL);
	setting_own = 0;
}

/*
 * An audit hook: the event and its first argument when it is a str, as the
 * interpreter's audit probe gives them (sp-record attaches this marker only
 * to a CPython built without probes). Never fails the event.
 *
 * A profile function the program sets over this thread's (cProfile,
 * profile, a debugger: sys.setprofile audits first) ends the thread's spans
 * in silence: it is told to sp-record as an audit event of its own, which
 * the interpreter's probe or this hook's marker carries. A thread starting
 * (threading sets thread_start) has no profile function yet.
 */
static int audit(const char *event, PyObject *args, void *unused)
{
	const char *arg = NULL;

	if (args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 1 &&
	    PyUnicode_CheckExact(PyTuple_GET_ITEM(args, 0))) {
		arg = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
		if (!arg)
			PyErr_Clear();
	}
	SP_RT_MARK(py__audit, event, arg, NULL, 0);
	if (!setting_own && !strcmp(event, "sys.setprofile") &&
	    PyThreadState_Get()->c_profilefunc == profile &&
	    PySys_Audit("stackpulse.profile_replaced", NULL) < 0)
		PyErr_Clear();
	return 0;
}

/*
 * The frames open now: their stops will come, their starts were not seen
 * (install() is called from the activator, the imports that ran it, a -c
 * program's or a module's that imported it late; or a recorder came
 * while the program ran: listened_check()). Marked as starts now, flagged
 * as reconstructed (SP_RT_LINE_SYNTHETIC; and in the ring entry's probe
 * SP_RING_RESYNC for a recorder's coming), outermost first; of a deeper
 * stack only the innermost SP_RT_OPEN_MAX (the stops of the others find no start, as before).
 * skip: the innermost frame when it is, the one whose call is being marked.
 */
static void mark_open_frames(uint32_t flag, PyFrameObject *skip)
{
	PyFrameObject *open[SP_RT_OPEN_MAX], *f = PyEval_GetFrame();
	struct sp_rt_name *n;
	PyCodeObject *co;
	int i, k = 0, line;

	if (f && f == skip)
		f = PyFrame_GetBack(f);
	else
		Py_XINCREF(f);
	for (; f && k < SP_RT_OPEN_MAX; f = PyFrame_GetBack(f))
		open[k++] = f;
	Py_XDECREF(f);
	for (i = k - 1; i >= 0; i--) {
		co = PyFrame_GetCode(open[i]);
		/* runpy's under its runner: neither start nor stop (left_out()) */
		n = runner_inner(open[i], co) || (match_n && !match_code(open[i], co)) ?
			    NULL : code_name(open[i], co);
		Py_DECREF(co);
		line = PyFrame_GetLineNumber(open[i]);
		line = SP_RT_LINE_SYNTHETIC(line > 0 && line < SP_RT_LINE_MAX ? line : 0);
		if (n && (!sp_rt_ring_on || !sp_rt_ring_put(SP_PR_PY_HOOK_CALL | flag, n->str[0],
							    n->str[1], n->str[2], line)))
			mark_call(n, line);
		Py_DECREF(open[i]);
	}
}

/* A recorder came (sp_rt_resync_due()): the frames open now. */
static void listened_check(PyFrameObject *frame, int what)
{
	if (sp_rt_resync_due(sp_py_call_site))
		mark_open_frames(SP_RING_RESYNC, what == PyTrace_CALL ? frame : NULL);
}

/* Whether the interpreter's main will run a program as __main__ once
 * start-up is over (before_main): its config names a script, -c or -m. */
static bool runs_program(void)
{
	const PyConfig *c = _PyInterpreterState_GetConfig(PyInterpreterState_Get());

	return c && (c->run_filename || c->run_command || c->run_module);
}

/*
 * Whether the frames open now are Python's start-up only (no frame of the
 * __main__ module: the activator did not come late, from a program's
 * import or from -c): then startup_frame is the outermost, and true.
 */
static bool startup_begins(void)
{
	PyFrameObject *f = PyEval_GetFrame(), *outer = NULL, *back;
	const char *m, *env = getenv("STACKPULSE_PY_STARTUP");
	size_t len;

	if ((env && !strcmp(env, "1")) || !f || startup_frame)
		return false;
	Py_INCREF(f);
	for (; f; f = back) {
		m = module_of(f, &len);
		if (m && len == 8 && !memcmp(m, "__main__", 8)) {
			Py_DECREF(f);
			Py_XDECREF(outer);
			return false;
		}
		back = PyFrame_GetBack(f);
		Py_XDECREF(outer);
		outer = f;	/* its reference kept */
	}
	startup_frame = outer;
	startup_ts = PyThreadState_Get();
	/* The window before the program opens once per process, at the
	 * interpreter's own start-up: a later install() on another thread
	 * must not open it again for a thread that may never run __main__. */
	if (!main_window_opened) {
		main_window_opened = true;
		before_main = runs_program();
	}
	return true;
}

/* The profile function of this thread; the audit hook, once. */
static PyObject *install(PyObject *self, PyObject *unused)
{
	static int audit_on;

	/* only Ruby's methods asked for (--spans-match): no cost here */
	if (!match_none) {
		if (PyThreadState_Get()->c_profilefunc != profile &&	/* not twice */
		    !startup_begins())
			mark_open_frames(0, NULL);
		sp_rt_resync_known(sp_py_call_site);
		set_profile(profile);
	}
	if (!audit_on && PySys_AddAuditHook(audit, NULL) == 0)
		audit_on = 1;
	else if (!audit_on)
		PyErr_Clear();
	Py_RETURN_NONE;
}

/*
 * threading.setprofile(thread_start): a new thread calls it through
 * sys.setprofile's Python-level trampoline for its first event; it puts the
 * C profile function in its place and handles that event itself.
 */
static PyObject *thread_start(PyObject *self, PyObject *args)
{
	PyObject *frame, *event, *arg;
	const char *ev;

	if (!PyArg_ParseTuple(args, "OOO", &frame, &event, &arg))
		return NULL;
	if (match_none) {
		set_profile(NULL);
		Py_RETURN_NONE;
	}
	ev = PyUnicode_Check(event) ? PyUnicode_AsUTF8(event) : NULL;
	if (!ev)
		PyErr_Clear();
	/*
	 * The thread's frames open now started unseen: threading's
	 * _bootstrap and _bootstrap_inner (which set the profile function
	 * just before run()), whose stops would come without a start.
	 * Marked as install() marks its caller's, leaving out the frame
	 * whose call is this event (its own start follows).
	 */
	if (PyThreadState_Get()->c_profilefunc != profile)
		mark_open_frames(0, ev && PyFrame_Check(frame) && !strcmp(ev, "call") ?
					    (PyFrameObject *)frame : NULL);
	sp_rt_resync_known(sp_py_call_site);
	set_profile(profile);
	if (ev && PyFrame_Check(frame) && !strcmp(ev, "call"))
		profile(NULL, (PyFrameObject *)frame, PyTrace_CALL, arg);
	else if (ev && PyFrame_Check(frame) && !strcmp(ev, "return"))
		profile(NULL, (PyFrameObject *)frame, PyTrace_RETURN, arg);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "install", install, METH_NOARGS, "Set the profile function of this thread." },
	{ "thread_start", thread_start, METH_VARARGS,
	  "For threading.setprofile(): sets the profile function of a new thread." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_stackpulse_hook",
	"StackPulse's profile function: span markers for sp-record.", -1, methods,
};

/* --spans-match: the globs one a line (sp-record checked them), and the
 * code objects' slot for the decisions; none: every function. */
static void match_init(void)
{
	const char *env = getenv("STACKPULSE_SPANS_MATCH");
	char *p, *save = NULL;

	if (!env || !*env || match_buf)
		return;
	match_slot = _PyEval_RequestCodeExtraIndex(NULL);
	match_interp = PyInterpreterState_Get();
	match_buf = match_slot >= 0 ? strdup(env) : NULL;
	if (!match_buf)
		return;
	/* a glob with a "#" (Store#load) is a Ruby instance method's: no
	 * Python name has one */
	for (p = strtok_r(match_buf, "\n", &save); p && match_n < MATCH_GLOBS_MAX;
	     p = strtok_r(NULL, "\n", &save))
		if (!strchr(p, '#'))
			match_globs[match_n++] = p;
	match_none = !match_n;
}

PyMODINIT_FUNC PyInit__stackpulse_hook(void)
{
	sp_rt_ring_init();
	match_init();
	return PyModule_Create(&module);
}
