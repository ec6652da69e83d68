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
 * Loaded by sitecustomize.py (sp-record puts its directory first on
 * PYTHONPATH): install() sets the profile function of the calling thread,
 * thread_start is given to threading.setprofile() for threads to come.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../hook/marker.h"
#include "../hook/names.h"
#include "../hook/ring.h"

static struct sp_rt_names names;

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

	if (n)
		return n;
	s[0] = module_of(frame, &len[0]);
	s[1] = utf8(co->co_qualname, &len[1]);
	s[2] = utf8(co->co_filename, &len[2]);
	n = sp_rt_names_add(&names, (uintptr_t)co, (uintptr_t)co->co_qualname,
			    (uintptr_t)co->co_filename, s, len, 0);
	if (n)
		SP_RT_MARK_NAME(n);
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

static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	bool coro;

	struct sp_rt_name *n;
	PyCodeObject *co;
	int line;

	if (what != PyTrace_CALL && what != PyTrace_RETURN)
		return 0;	/* C calls */
	co = PyFrame_GetCode(frame);
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

/*
 * An audit hook: the event and its first argument when it is a str, as the
 * interpreter's audit probe gives them (sp-record attaches this marker only
 * to a CPython built without probes). Never fails the event.
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
#define SP_RT_OPEN_MAX	256
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
		n = code_name(open[i], co);
		Py_DECREF(co);
		line = PyFrame_GetLineNumber(open[i]);
		line = SP_RT_LINE_SYNTHETIC(line > 0 ? line : 0);
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

/* The profile function of this thread; the audit hook, once. */
static PyObject *install(PyObject *self, PyObject *unused)
{
	static int audit_on;

	if (PyThreadState_Get()->c_profilefunc != profile)	/* not twice */
		mark_open_frames(0, NULL);
	sp_rt_resync_known(sp_py_call_site);
	PyEval_SetProfile(profile, NULL);
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
	PyEval_SetProfile(profile, NULL);
	ev = PyUnicode_Check(event) ? PyUnicode_AsUTF8(event) : NULL;
	if (!ev)
		PyErr_Clear();
	else if (PyFrame_Check(frame) && !strcmp(ev, "call"))
		profile(NULL, (PyFrameObject *)frame, PyTrace_CALL, arg);
	else if (PyFrame_Check(frame) && !strcmp(ev, "return"))
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

PyMODINIT_FUNC PyInit__stackpulse_hook(void)
{
	sp_rt_ring_init();
	return PyModule_Create(&module);
}
