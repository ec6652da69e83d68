// SPDX-License-Identifier: MIT
/*
 * stackpulse_hook.c - the Ruby 3.1 extension stackpulse_hook: an event
 * hook in C that marks each Ruby method's start and stop with a USDT marker
 * of its own (runtime/hook/marker.h), for sp-record.
 *
 * Why not the interpreter's probes: Ruby fires method__entry/return only
 * while a :call/:return hook is installed anyway, each is a 1-byte nop (a
 * breakpoint trap per hit), and its three strings (class, method, file)
 * must be read from user memory by BPF per event. This hook is called in
 * the same place; it names each (class, method, file) once (names.h) and
 * fires a 5-byte nop marker with the name's addresses in registers.
 *
 * Names and lines are what the interpreter's probes gave: the class is the
 * method's owner (a module for its methods; for a class's or module's
 * singleton method its singleton class, "#<Class:Foo>"), the line is the line running when the method starts
 * (its first body line) and stops.
 *
 * With STACKPULSE_SPAN_RING=1 (sp-record sets it) the marks go to the
 * thread's span ring instead (runtime/hook/ring.h).
 *
 * Loaded by stackpulse_activate.rb (RUBYOPT=-r... for the Ruby processes
 * sp-record starts); Init_stackpulse_hook installs the hook for every
 * thread, or, with STACKPULSE_SPANS_MATCH set (--spans-match), defines
 * StackPulseHook.tracepoint for the activator to trace matching methods.
 */
#include <ruby.h>
#include <ruby/debug.h>
#include <string.h>

#include "../hook/marker.h"
#include "../hook/names.h"
#include "../hook/ring.h"

static struct sp_rt_names names;
static ID id_attached, id_instance_method;
static VALUE iseq_class;		/* RubyVM::InstructionSequence */

/*
 * The methods of Ruby's own that the hook calls inside the program, taken
 * when it loads (before the program's code): called through these Method
 * objects (rb_method_call()), never by name, so that a program that
 * redefines or prepends one (a class's own instance_method, a patched
 * Binding#eval or Location#label) is not run from inside the hook. Each is
 * UnboundMethod#bind_call bound to Ruby's method (its receiver is the
 * first argument), RubyVM::InstructionSequence.of bound to its class. 0:
 * not taken, called by name.
 */
enum own {
	OWN_LABEL, OWN_BASE_LABEL, OWN_PATH, OWN_LINENO,	/* Thread::Backtrace::Location */
	OWN_EVAL,						/* Binding */
	OWN_INSTANCE_METHOD,					/* Module */
	OWN_ISEQ_OF,						/* InstructionSequence.of */
	OWN_N
};
static const char *const own_names[OWN_N] = {
	"label", "base_label", "path", "lineno", "eval", "instance_method", "of",
};
static VALUE own[OWN_N];
static ID own_ids[OWN_N];

static VALUE call_own(enum own k, VALUE recv, int argc, const VALUE *argv)
{
	VALUE a[2] = { recv, argc ? argv[0] : Qnil };

	if (!own[k])
		return rb_funcallv(recv, own_ids[k], argc, argv);
	if (k == OWN_ISEQ_OF)
		return rb_method_call(argc, argv, own[k]);
	return rb_method_call(argc + 1, a, own[k]);
}

static VALUE take_own(VALUE unused)
{
	static const char *const classes[OWN_N] = {
		"Thread::Backtrace::Location", "Thread::Backtrace::Location",
		"Thread::Backtrace::Location", "Thread::Backtrace::Location", "Binding",
		"Module", NULL,
	};
	VALUE bind_call = rb_funcall(rb_cUnboundMethod, id_instance_method, 1,
				     ID2SYM(rb_intern("bind_call")));
	int k;

	for (k = 0; k < OWN_N; k++) {
		VALUE um;

		if (!classes[k])
			continue;
		um = rb_funcall(rb_path2class(classes[k]), id_instance_method, 1,
				ID2SYM(own_ids[k]));
		own[k] = rb_funcall(bind_call, rb_intern("bind"), 1, um);
	}
	if (iseq_class)
		own[OWN_ISEQ_OF] = rb_obj_method(iseq_class, ID2SYM(own_ids[OWN_ISEQ_OF]));
	return Qnil;
}
static bool match_mode;		/* --spans-match: TracePoints on some methods */
static bool ruby_calls = true;	/* Ruby methods' calls and returns are marked */
static bool c_calls;		/* C methods' too (STACKPULSE_RUBY_EVENTS) */
static VALUE traced;		/* their iseqs (identity): StackPulseHook.traced */

static const char *cstr(VALUE s, size_t *len)
{
	if (!RB_TYPE_P(s, T_STRING)) {
		*len = 1;
		return "?";
	}
	*len = RSTRING_LEN(s);
	return RSTRING_PTR(s);
}

/*
 * The owner of a method as Ruby's probes name it (vm.c, rb_dtrace_setup),
 * but for a class's or module's singleton method: its singleton class as
 * Ruby writes it, "#<Class:Foo>", which the tools show as "Foo.build"
 * (record.h, sp_span_name()); the probes' "Foo" made it "Foo#build", an
 * instance method. A singleton method of another object is its class's.
 */
static VALUE owner_path(VALUE klass)
{
	if (RB_TYPE_P(klass, T_ICLASS))
		klass = RBASIC(klass)->klass;
	else if (FL_TEST(klass, FL_SINGLETON)) {
		VALUE o = rb_attr_get(klass, id_attached);

		if (RB_TYPE_P(o, T_CLASS) || RB_TYPE_P(o, T_MODULE))
			return rb_sprintf("#<Class:%" PRIsVALUE ">", rb_class_path(o));
		klass = rb_obj_class(o);
	}
	return rb_class_path(klass);
}

/* Keyed by the owner, the method's symbol and the file's bytes (the
 * iseq's path string, alive as long as the method's code). */
static struct sp_rt_name *method_name(VALUE klass, VALUE mid, const char *file)
{
	struct sp_rt_name *n = sp_rt_names_find(&names, klass, mid, (uintptr_t)file);
	const char *s[3];
	size_t len[3];
	VALUE cls, meth;

	if (n) {
		sp_rt_name_use(n);	/* (told again to a recorder come since) */
		return n;
	}
	cls = klass && !NIL_P(klass) ? owner_path(klass) : Qnil;
	meth = SYMBOL_P(mid) ? rb_sym2str(mid) : Qnil;
	s[0] = cstr(cls, &len[0]);
	s[1] = cstr(meth, &len[1]);
	s[2] = file ? file : "?";
	len[2] = strlen(s[2]);
	n = sp_rt_names_add(&names, klass, mid, (uintptr_t)file, s, len, 0);
	if (n)
		sp_rt_name_use(n);
	return n;
}

/*
 * File and line as Ruby's probes give them: the method's own frame, the
 * line it runs (at a call its first body line; rb_tracearg_lineno() would
 * give the def line).
 */
/* The fiber this thread runs, as the last switch said (0 before one).
 * Dynamic TLS: a dlopen'ed library may find no static TLS left, and only
 * fiber switches (rare) read it. */
static __thread VALUE cur_fiber;

/*
 * A fiber switch, reported in the fiber switched to: the fiber left, the
 * fiber entered, and whether the latter starts now (no method frame on
 * its stack yet: a fresh fiber, not one resumed). The first switch of a
 * thread leaves its root fiber, reported as 0; sp-record learns the root's
 * id when the thread comes back to a fiber that is not fresh and it never
 * saw start.
 */
static void on_fiber_switch(void)
{
	VALUE to = rb_fiber_current(), klass;
	ID mid;
	long fresh = !rb_frame_method_id_and_class(&mid, &klass);

	if (!sp_rt_ring_on ||
	    !sp_rt_ring_put(SP_PR_RB_HOOK_FIBER, (void *)cur_fiber, (void *)to, (void *)fresh, 0))
		SP_RT_MARK(rb__fiber, cur_fiber, to, fresh, 0);
	cur_fiber = to;
}

/* The rb__call marker, at one place (sp_rb_call_site): a recorder listens
 * to a hook without span rings when a uprobe is on it (sp_rt_resync_due()). */
extern const unsigned char sp_rb_call_site[];
__attribute__((noinline, noclone))
static void mark_call(const struct sp_rt_name *n, int line)
{
	SP_RT_MARK_AT(sp_rb_call_site, rb__call, n->str[0], n->str[1], n->str[2], line);
}

/*
 * The method a block frame runs as its body, when it is one: a method
 * made with define_method (Ruby calls it a bmethod; its :call names it,
 * its frame is the block's, labelled "block in ..."). __method__ in the
 * frame's binding names the method the block belongs to; the frame is
 * that method's own when the method's code is this very block (the
 * iseq's wrapper is one object per iseq), not a block inside it.
 */
static VALUE bmethod_body(VALUE args)
{
	const VALUE *a = (const VALUE *)args;	/* binding, class, iseq */
	VALUE src = rb_str_new_cstr("__method__"), mid = call_own(OWN_EVAL, a[0], 1, &src), um;

	if (!SYMBOL_P(mid))
		return Qnil;
	um = call_own(OWN_INSTANCE_METHOD, a[1], 1, &mid);
	return call_own(OWN_ISEQ_OF, iseq_class, 1, &um) == a[2] ? mid : Qnil;
}

static VALUE bmethod_id(const rb_debug_inspector_t *dc, long i, VALUE klass, VALUE iseq)
{
	VALUE a[3] = { rb_debug_inspector_frame_binding_get(dc, i), klass, iseq }, mid;
	int state = 0;

	if (NIL_P(a[0]) || !iseq_class)
		return Qnil;
	mid = rb_protect(bmethod_body, (VALUE)a, &state);
	if (state) {
		rb_set_errinfo(Qnil);	/* removed since, or a frame of no method */
		return Qnil;
	}
	return mid;
}

/*
 * Whether frame i of the inspected stack is a Ruby method's own frame,
 * one whose start the hook marks (a :call), and its method (*mid): Ruby
 * code (an iseq) of a method (a class), labelled with its name alone
 * ("block in m" and "rescue in m" are frames inside m; <main>,
 * <class:C> and required files' tops have no class), or a block that is
 * a define_method method's body; not the frame of an eval'd string,
 * which is labelled as the method it runs in and called by eval itself.
 * With --spans-match, only a method the activator traces.
 */
static bool method_frame(const rb_debug_inspector_t *dc, VALUE locs, long i, VALUE *mid)
{
	static const char *const evals[] = { "eval", "instance_eval", "class_eval",
					     "module_eval" };
	VALUE loc = RARRAY_AREF(locs, i), iseq = rb_debug_inspector_frame_iseq_get(dc, i);
	VALUE klass = rb_debug_inspector_frame_class_get(dc, i), label, base, caller;
	unsigned int k;

	if (NIL_P(iseq) || NIL_P(klass))
		return false;
	if (match_mode && !RTEST(rb_hash_lookup2(traced, iseq, Qfalse)))
		return false;
	label = call_own(OWN_LABEL, loc, 0, NULL);
	base = call_own(OWN_BASE_LABEL, loc, 0, NULL);
	if (!RB_TYPE_P(label, T_STRING) || !RB_TYPE_P(base, T_STRING))
		return false;
	if (!RTEST(rb_str_equal(label, base))) {
		if (RSTRING_LEN(label) < 6 || memcmp(RSTRING_PTR(label), "block ", 6))
			return false;
		*mid = bmethod_id(dc, i, klass, iseq);
		return !NIL_P(*mid);
	}
	*mid = ID2SYM(rb_intern_str(base));
	if (i + 1 >= RARRAY_LEN(locs) || !NIL_P(rb_debug_inspector_frame_iseq_get(dc, i + 1)))
		return true;
	caller = call_own(OWN_LABEL, RARRAY_AREF(locs, i + 1), 0, NULL);
	for (k = 0; k < sizeof(evals) / sizeof(evals[0]) && RB_TYPE_P(caller, T_STRING); k++)
		if ((size_t)RSTRING_LEN(caller) == strlen(evals[k]) &&
		    !memcmp(RSTRING_PTR(caller), evals[k], RSTRING_LEN(caller)))
			return false;
	return true;
}

/*
 * A C method's frame (no code of its own, a class): when the hook loads
 * with C methods marked, the require that loads it is one, and its
 * c_return comes.
 */
static bool c_frame(const rb_debug_inspector_t *dc, VALUE locs, long i, VALUE *mid)
{
	VALUE label;

	if (!NIL_P(rb_debug_inspector_frame_iseq_get(dc, i)) ||
	    NIL_P(rb_debug_inspector_frame_class_get(dc, i)))
		return false;
	label = call_own(OWN_LABEL, RARRAY_AREF(locs, i), 0, NULL);
	if (!RB_TYPE_P(label, T_STRING))
		return false;
	*mid = ID2SYM(rb_intern_str(label));
	return true;
}

/*
 * The Ruby methods open now (a recorder came: sp_rt_resync_due()):
 * their stops will come, their starts were not recorded. Marked as starts
 * with the names their :call would have had (owner, method, the iseq's
 * path: the same keys, so the same names) and the line each runs now,
 * flagged as reconstructed (SP_RT_LINE_SYNTHETIC; SP_RING_RESYNC in a ring),
 * outermost first; of a deeper stack only the innermost SP_RT_OPEN_MAX.
 * skip: the innermost frame, the method whose call is being marked. The
 * walk is the debug inspector's (Ruby's public API for the frames with
 * their classes), once per thread per recorder.
 */
struct open_walk {
	bool skip;
	bool boot;		/* the hook loads: the frames are StackPulse's own */
	uint32_t flag;		/* SP_RING_RESYNC for a recorder's coming, else 0 */
};

static VALUE mark_open_frames(const rb_debug_inspector_t *dc, void *data)
{
	const struct open_walk *w = data;
	VALUE locs = rb_debug_inspector_backtrace_locations(dc), path, mids[SP_RT_OPEN_MAX];
	long i, n = RB_TYPE_P(locs, T_ARRAY) ? RARRAY_LEN(locs) : 0, open[SP_RT_OPEN_MAX];
	struct sp_rt_name *nm;
	int k = 0, line;
	uint32_t probe, probes[SP_RT_OPEN_MAX];

	/* C frames only where their returns are marked: in a ring */
	for (i = w->skip ? 1 : 0; i < n && k < SP_RT_OPEN_MAX; i++)
		if (ruby_calls && method_frame(dc, locs, i, &mids[k]))
			probes[k] = SP_PR_RB_HOOK_CALL, open[k++] = i;
		else if (c_calls && sp_rt_ring_on && c_frame(dc, locs, i, &mids[k]))
			probes[k] = SP_PR_RUBY_CMETHOD_ENTRY, open[k++] = i;
	while (k-- > 0) {
		i = open[k];
		probe = probes[k];
		path = call_own(OWN_PATH, RARRAY_AREF(locs, i), 0, NULL);
		line = NUM2INT(call_own(OWN_LINENO, RARRAY_AREF(locs, i), 0, NULL));
		nm = method_name(rb_debug_inspector_frame_class_get(dc, i), mids[k],
				 RB_TYPE_P(path, T_STRING) ? RSTRING_PTR(path) : NULL);
		/* (a line past what the encoding holds is "unknown") */
		line = SP_RT_LINE_SYNTHETIC(line > 0 && line < SP_RT_LINE_MAX ? line : 0);
		/* (boot frames are all counted as Ruby's: sp-record drops them) */
		if (w->boot) {
			if (nm && sp_rt_ring_on)
				sp_rt_ring_put(SP_PR_RB_HOOK_CALL | SP_RING_BOOT, nm->str[0],
					       nm->str[1], nm->str[2], line);
			continue;
		}
		if (nm && (!sp_rt_ring_on ||
			   !sp_rt_ring_put(probe | w->flag, nm->str[0], nm->str[1], nm->str[2],
					   line)) &&
		    probe == SP_PR_RB_HOOK_CALL)
			mark_call(nm, line);
	}
	return Qnil;
}

static VALUE open_frames(VALUE data)
{
	return rb_debug_inspector_open(mark_open_frames, (void *)data);
}

/* A recorder came: the open methods marked, before this event's mark. An
 * error on the way (none is expected) is not the program's. */
static void resync(rb_event_flag_t ev)
{
	struct open_walk w = { .skip = ev == RUBY_EVENT_CALL || ev == RUBY_EVENT_C_CALL,
			       .flag = SP_RING_RESYNC };
	int state = 0;

	rb_protect(open_frames, (VALUE)&w, &state);
	if (state)
		rb_set_errinfo(Qnil);
}

/*
 * A C method's call or return (--spans=ruby-c): marked in the span ring
 * as Ruby's cmethod__entry/return probes would have (owner, method, the
 * calling Ruby frame's file and line). Ruby's own probes are not used for
 * them: Ruby 3.1's rb_dtrace_setup() crashes the program at times while
 * they are on (docs/spans.md). In a ring only: a hook without rings
 * (STACKPULSE_SPAN_RING=0) marks no C methods.
 */
static void on_c_event(rb_event_flag_t ev, rb_trace_arg_t *ta)
{
	struct sp_rt_name *n;
	int line;

	if (!sp_rt_ring_on)
		return;
	/* a recorder came: the frames open now first (with C methods
	 * alone, no Ruby method's event would do it) */
	if (sp_rt_resync_due(sp_rb_call_site))
		resync(ev);
	n = method_name(rb_tracearg_defined_class(ta), rb_tracearg_method_id(ta),
			rb_sourcefile());
	if (!n)
		return;
	/* once: rb_sourceline() walks to the calling Ruby frame */
	line = rb_sourceline();
	sp_rt_ring_put(ev == RUBY_EVENT_C_CALL ? SP_PR_RUBY_CMETHOD_ENTRY :
		       SP_PR_RUBY_CMETHOD_RETURN,
		       n->str[0], n->str[1], n->str[2], line > 0 ? line : 0);
}

static void on_event(VALUE data, rb_trace_arg_t *ta)
{
	rb_event_flag_t ev = rb_tracearg_event_flag(ta);
	struct sp_rt_name *n;
	int line;

	if (ev == RUBY_EVENT_FIBER_SWITCH) {
		on_fiber_switch();
		return;
	}
	if (ev == RUBY_EVENT_C_CALL || ev == RUBY_EVENT_C_RETURN) {
		on_c_event(ev, ta);
		return;
	}
	/* with --spans-match, of the methods traced (method_frame()): the
	 * stops of the others never come */
	if (sp_rt_resync_due(sp_rb_call_site))
		resync(ev);
	n = method_name(rb_tracearg_defined_class(ta), rb_tracearg_method_id(ta),
			rb_sourcefile());
	if (!n)
		return;
	/* a line below 0 (eval's argument) would read as reconstructed */
	line = rb_sourceline();
	if (line < 0)
		line = 0;
	if (sp_rt_ring_on &&
	    sp_rt_ring_put(ev == RUBY_EVENT_CALL ? SP_PR_RB_HOOK_CALL : SP_PR_RB_HOOK_RETURN,
			   n->str[0], n->str[1], n->str[2], line))
		return;
	if (ev == RUBY_EVENT_CALL)
		mark_call(n, line);
	else
		SP_RT_MARK(rb__return, n->str[0], n->str[1], n->str[2], line);
}

/* A targeted TracePoint's function (StackPulseHook.tracepoint): the same
 * marks as the event hook's, for its method only. */
static void on_tracepoint(VALUE tpval, void *data)
{
	on_event(Qnil, rb_tracearg_from_tracepoint(tpval));
}

/*
 * StackPulseHook.tracepoint: a TracePoint of :call and :return whose
 * function is on_tracepoint, for the activator to enable on one method
 * (enable(target: method)): with --spans-match only the matching methods
 * pay for a hook, the others run as without one.
 */
static VALUE tracepoint(VALUE self)
{
	return rb_tracepoint_new(0, RUBY_EVENT_CALL | RUBY_EVENT_RETURN, on_tracepoint, NULL);
}

/*
 * StackPulseHook.traced(iseq): the activator enabled a tracepoint on the
 * method whose code this is (RubyVM::InstructionSequence.of): its frames
 * open when a recorder comes are rebuilt, the others' stops never come.
 */
static VALUE traced_add(VALUE self, VALUE iseq)
{
	rb_hash_aset(traced, iseq, Qtrue);
	return Qnil;
}

/*
 * STACKPULSE_RUBY_EVENTS (sp-record sets it): "call" (the default) marks
 * Ruby methods, "c_call" C methods, "call,c_call" both.
 */
static void events_from_env(void)
{
	const char *ev = getenv("STACKPULSE_RUBY_EVENTS");

	if (!ev || !*ev)
		return;
	ruby_calls = strstr(ev, "call") == ev || strstr(ev, ",call");
	c_calls = strstr(ev, "c_call") != NULL;
}

void Init_stackpulse_hook(void)
{
	const char *match = getenv("STACKPULSE_SPANS_MATCH");
	rb_event_flag_t events = RUBY_EVENT_FIBER_SWITCH;
	struct open_walk boot = { .skip = false, .boot = true, .flag = 0 };
	int state = 0, k;

	id_attached = rb_intern("__attached__");
	id_instance_method = rb_intern("instance_method");
	for (k = 0; k < OWN_N; k++) {
		own_ids[k] = rb_intern(own_names[k]);
		rb_gc_register_address(&own[k]);
	}
	/* looked up, never raised for: a missing constant at Init would end
	 * the traced program (define_method methods are then not rebuilt) */
	iseq_class = 0;
	if (rb_const_defined(rb_cObject, rb_intern("RubyVM"))) {
		VALUE vm = rb_const_get(rb_cObject, rb_intern("RubyVM"));

		if ((RB_TYPE_P(vm, T_CLASS) || RB_TYPE_P(vm, T_MODULE)) &&
		    rb_const_defined(vm, rb_intern("InstructionSequence")))
			iseq_class = rb_const_get(vm, rb_intern("InstructionSequence"));
	}
	rb_gc_register_address(&iseq_class);
	/* all or none: one missing is called by name, as all others are then */
	rb_protect(take_own, Qnil, &state);
	if (state) {
		rb_set_errinfo(Qnil);
		memset(own, 0, sizeof(own));
		state = 0;
	}
	events_from_env();
	sp_rt_ring_init();
	/* announced now: sp-record knows the hook is in from here on (a raise
	 * before was Ruby's start-up, when no span can be open) */
	if (sp_rt_ring_on)
		sp_rt_ring_start();
	if (match && *match) {
		match_mode = true;
		/* --spans-match: the activator enables one TracePoint per
		 * matching method; no hook for every call, no fiber switches */
		rb_define_singleton_method(rb_define_module("StackPulseHook"), "tracepoint",
					   tracepoint, 0);
		rb_define_singleton_method(rb_define_module("StackPulseHook"), "traced",
					   traced_add, 1);
		traced = rb_funcall(rb_hash_new(), rb_intern("compare_by_identity"), 0);
		rb_gc_register_address(&traced);
		return;
	}
	/*
	 * The methods open now started unseen: the activator's
	 * StackPulseActivate.activate and RubyGems' Kernel#require, twice
	 * (RUBYOPT's -r of the activator, its require of this file). Marked
	 * in the ring with SP_RING_BOOT: sp-record leaves them and their
	 * stops out of the recording (they are StackPulse's, not the
	 * program's), and takes the first as the sign that the hook is in
	 * (Ruby's C-method probes wait for it: docs/spans.md). Those whose
	 * returns will be marked: Ruby methods', C methods' (the C require
	 * under each Kernel#require), or both.
	 */
	rb_protect(open_frames, (VALUE)&boot, &state);
	if (state)
		rb_set_errinfo(Qnil);
	if (ruby_calls)
		events |= RUBY_EVENT_CALL | RUBY_EVENT_RETURN;
	if (c_calls)
		events |= RUBY_EVENT_C_CALL | RUBY_EVENT_C_RETURN;
	sp_rt_resync_known(sp_rb_call_site);
	rb_add_event_hook2((rb_event_hook_func_t)(void (*)(void))on_event, events, Qnil,
			   RUBY_EVENT_HOOK_FLAG_SAFE | RUBY_EVENT_HOOK_FLAG_RAW_ARG);
}
