// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/interp.c: mixed mode (sp_interp_splice()), as
 * CPU and off-CPU samples both use it: each eval loop frame gives way to
 * the interpreted frames of its call, what is left goes at the root,
 * native "frames" in no mapping go, and the result stays within its bound;
 * and its bookkeeping of followed processes: the one memory reader (a
 * process's, then its parent's), the per-parent count of followed children
 * an end keeps right, and the queued stacks that go with a pid.
 *
 * interp.c is compiled in (its helpers are static), with the BPF side
 * (bpf_interp.c) replaced by the stubs below: no program is loaded.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"
#include "record/interpP.h"
#include "tap.h"

#include "../../lib/record/interp.c"

/* ---- bpf_interp.c's stand-ins ---- */

static unsigned int bpf_procs, bpf_dels;
static bool bpf_refuse;	/* sp_interp_bpf_proc() fails */

struct sp_interp_bpf *sp_interp_bpf_open(sp_interp_stack_fn fn, void *ctx, unsigned int uses)
{
	(void)fn, (void)ctx, (void)uses;
	return NULL;
}

int sp_interp_bpf_attach(struct sp_interp_bpf *b, const int *fds, size_t nfds, bool offcpu)
{
	(void)b, (void)fds, (void)nfds, (void)offcpu;
	return -1;
}

int sp_interp_bpf_layout(struct sp_interp_bpf *b, unsigned int row,
			 const struct sp_bpf_ilayout *l)
{
	(void)b, (void)row, (void)l;
	return 0;
}

int sp_interp_bpf_proc(struct sp_interp_bpf *b, uint32_t pid, const struct sp_bpf_iproc *v)
{
	(void)b, (void)pid, (void)v;
	if (bpf_refuse) {
		errno = ENOSPC;
		return -1;
	}
	bpf_procs++;
	return 0;
}

void sp_interp_bpf_proc_del(struct sp_interp_bpf *b, uint32_t pid)
{
	(void)b, (void)pid;
	bpf_dels++;
}

void sp_interp_bpf_drain(struct sp_interp_bpf *b)
{
	(void)b;
}

int sp_interp_bpf_wake_fd(const struct sp_interp_bpf *b)
{
	(void)b;
	return -1;
}

int sp_interp_bpf_events(struct sp_interp_bpf *b, bool raw_entry)
{
	(void)b;
	return -1;
}

void sp_interp_bpf_events_early(struct sp_interp_bpf *b)
{
	(void)b;
}

uint64_t sp_interp_bpf_lost(struct sp_interp_bpf *b)
{
	(void)b;
	return 0;
}

uint64_t sp_interp_bpf_copies_refused(struct sp_interp_bpf *b, uint32_t *pid)
{
	(void)b;
	*pid = 0;
	return 0;
}

void sp_interp_bpf_close(struct sp_interp_bpf *b)
{
	(void)b;
}

static unsigned int bpf_ruby_loads, bpf_ruby_waits;

int sp_interp_bpf_ruby(struct sp_interp_bpf *b, bool wait)
{
	(void)b;
	if (wait)
		bpf_ruby_waits++;
	else
		bpf_ruby_loads++;
	return 0;
}

uint64_t sp_interp_bpf_ruby_times(const struct sp_interp_bpf *b, uint64_t *ready)
{
	(void)b;
	*ready = 0;
	return 0;
}

int sp_interp_bpf_cgroups(struct sp_interp_bpf *b, struct sp_cgfilter_maps *m)
{
	(void)b, (void)m;
	return -1;
}

/* Interpreted frames 101..100+n, innermost first; entry where entry has
 * a '1'. */
static void frames(struct sp_interp_frames *f, unsigned int n, const char *entry)
{
	size_t i, len = strlen(entry);

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++) {
		f->ids[i] = 101 + i;
		f->entry[i] = i < len && entry[i] == '1';
	}
	f->n = n;
}

static bool same(const uint64_t *a, unsigned int na, const uint64_t *b, unsigned int nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

static void test_two_calls(void)
{
	/* leaf first: kernel 1, libc 2, eval 3, C 4, eval 5, main 6 */
	uint64_t ids[8] = { 1, 2, 3, 4, 5, 6 };
	const uint8_t eval[] = { 0, 0, 1, 0, 1, 0 };
	const uint64_t want[] = { 1, 2, 101, 102, 4, 103, 6 };
	struct sp_interp_frames f;
	unsigned int n = 6;

	frames(&f, 3, "010");
	sp_interp_splice(&f, ids, NULL, eval, &n, 64);
	CHECK(same(ids, n, want, 7));
}

static void test_cut_short(void)
{
	/* no frame pointers: one eval frame reached, then an address in no
	 * mapping; the rest of the interpreted frames go at the root */
	uint64_t ids[8] = { 1, 2, 3, 4 };
	const uint8_t eval[] = { 0, 1, 2, 2 };
	const uint64_t want[] = { 1, 101, 102, 103, 104 };
	struct sp_interp_frames f;
	unsigned int n = 4;

	frames(&f, 4, "0100");
	sp_interp_splice(&f, ids, NULL, eval, &n, 8);
	CHECK(same(ids, n, want, 5));
}

static void test_leaf_unmapped_and_none(void)
{
	/* the leaf in no mapping stays (a JIT, an address of its own) */
	uint64_t ids[8] = { 7, 8 };
	const uint8_t eval[] = { 2, 0 };
	const uint64_t want[] = { 7, 8, 101 };
	struct sp_interp_frames f;
	unsigned int n = 2;

	frames(&f, 1, "1");
	sp_interp_splice(&f, ids, NULL, eval, &n, 8);
	CHECK(same(ids, n, want, 3));
}

static void test_bound(void)
{
	uint64_t ids[SP_INTERP_SPLICE_MAX] = { 1, 2, 3 };
	const uint8_t eval[] = { 0, 1, 0 };
	struct sp_interp_frames f;
	unsigned int n = 3;

	frames(&f, SP_BPF_IFRAMES + 1, "");
	sp_interp_splice(&f, ids, NULL, eval, &n, 10);
	CHECK_EQ_U(n, 10);
	CHECK(ids[0] == 1 && ids[1] == 101 && ids[9] == 109);
	n = 3;
	ids[0] = 1;
	ids[1] = 2;
	ids[2] = 3;
	sp_interp_splice(&f, ids, NULL, eval, &n, 2 * SP_INTERP_SPLICE_MAX);
	CHECK_EQ_U(n, 2 + SP_BPF_IFRAMES + 1);
}

/*
 * CPython 3.11 resuming a generator from a builtin (all(genexpr)): the
 * generator's _PyEval_EvalFrameDefault call is entered, but its frame not
 * pushed yet (or popped already): the stack read holds the caller's
 * frames only, one entry frame for two eval loop calls. The innermost
 * call gets the placeholder, the outer one its own frames; before, the
 * inner one took them all and the outer one stayed a native frame.
 */
static void test_unpushed_frame(void)
{
	/* leaf first: inner eval 1, builtin_all 2, outer eval 3,
	 * PyEval_EvalCode 4, main 5; frames leaf_hash 101 .. <module> 105 */
	uint64_t ids[16] = { 1, 2, 3, 4, 5 };
	const uint8_t eval[] = { 1, 0, 1, 0, 0 };
	const uint64_t want[] = { 900, 2, 101, 102, 103, 104, 105, 4, 5 };
	const uint64_t want_pushed[] = { 100, 2, 101, 102, 103, 104, 105, 4, 5 };
	struct sp_interp_frames f;
	unsigned int n = 5, i;

	frames(&f, 5, "00001");
	CHECK(!sp_interp_unpushed(&f, 1));	/* one call, its entry frame */
	CHECK(sp_interp_unpushed(&f, 2));
	frames_push_inner(&f, 900);
	CHECK_EQ_U(f.n, 6);
	CHECK(f.ids[0] == 900 && f.entry[0] && f.ids[1] == 101 && !f.entry[1] && f.entry[5]);
	CHECK(!sp_interp_unpushed(&f, 2));
	sp_interp_splice(&f, ids, NULL, eval, &n, 64);
	CHECK(same(ids, n, want, 9));
	/* its frame pushed: the genexpr (100, an entry) is the inner call's */
	memset(&f, 0, sizeof(f));
	for (i = 0; i < 6; i++)
		f.ids[i] = 100 + i;
	f.entry[0] = f.entry[5] = 1;
	f.n = 6;
	CHECK(!sp_interp_unpushed(&f, 2));
	n = 5;
	memcpy(ids, (uint64_t[]){ 1, 2, 3, 4, 5 }, 5 * sizeof(*ids));
	sp_interp_splice(&f, ids, NULL, eval, &n, 64);
	CHECK(same(ids, n, want_pushed, 9));
	/* no frames read: nothing to place */
	f.n = 0;
	CHECK(!sp_interp_unpushed(&f, 1));
	/* a full stack: its root-most frame gives way */
	frames(&f, SP_BPF_IFRAMES + 1, "");
	f.entry[SP_BPF_IFRAMES] = 1;
	frames_push_inner(&f, 900);
	CHECK_EQ_U(f.n, SP_BPF_IFRAMES + 1);
	CHECK(f.ids[0] == 900 && f.ids[SP_BPF_IFRAMES] == 100 + SP_BPF_IFRAMES);
}

/* Array#sort (called from Ruby) calling Array#<=> from its C code,
 * calling Integer#<=>: each C method called from C goes over its C
 * function's frame, the one called from Ruby stays over its caller. */
static void test_cfunc_from_cfunc(void)
{
	/* leaf first: int_cmp 1, funcall 2, rb_ary_cmp 3, funcall 4, qsort 5,
	 * rb_ary_sort 6, vm_call_cfunc 7, eval 8, main 9 */
	uint64_t ids[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	const uint64_t pcs[] = { 0x1010, 0x2010, 0x3010, 0x2020, 0x5010, 0x6010, 0x7010, 0x8010,
				 0x9010 };
	const uint8_t eval[] = { 0, 0, 0, 0, 0, 0, 0, 1, 0 };
	/* Integer#<=> 101, Array#<=> 102, Array#sort 103, ig_pairs 104 */
	const uint64_t want[] = { 1, 101, 2, 3, 102, 4, 5, 6, 7, 103, 104, 9 };
	const uint64_t want_early[] = { 1, 2, 101, 3, 102, 4, 5, 6, 7, 103, 104, 9 };
	const uint64_t want_sort[] = { 1, 2, 3, 4, 5, 101, 102, 6, 7, 103, 104, 9 };
	const uint64_t want_cut[] = { 1, 2, 3, 4, 5, 6, 7, 101, 102, 103, 104, 9 };
	struct sp_interp_frames f;
	unsigned int n = 9;

	frames(&f, 4, "0001");
	f.cstart[0] = 0x1000, f.cend[0] = 0x1100;	/* int_cmp */
	f.cstart[1] = 0x3000, f.cend[1] = 0x3100;	/* rb_ary_cmp */
	f.cstart[2] = 0x6000, f.cend[2] = 0x6100;	/* rb_ary_sort, called from Ruby */
	f.cown[0] = f.cown[1] = 1;
	sp_interp_splice(&f, ids, pcs, eval, &n, 64);
	CHECK(same(ids, n, want, 12));
	/* the leaf's pc is taken as it is (not as a return address): before
	 * Integer#<=>'s function, not in it (its frame pushed, its function
	 * not called yet): it goes over Array#<=>'s function, under Array#<=> */
	n = 9;
	memcpy(ids, (uint64_t[]){ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 9 * sizeof(*ids));
	f.cstart[0] = 0x1011, f.cend[0] = 0x1100;	/* the leaf's pc is exact */
	sp_interp_splice(&f, ids, pcs, eval, &n, 64);
	CHECK(same(ids, n, want_early, 12));
	/* the leaf's pc is Integer#<=>'s first byte: in it */
	n = 9;
	memcpy(ids, (uint64_t[]){ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 9 * sizeof(*ids));
	f.cstart[0] = 0x1010;
	sp_interp_splice(&f, ids, pcs, eval, &n, 64);
	CHECK(same(ids, n, want, 12));
	/* neither function in the stack: over that of Array#sort, which
	 * called them, and Array#sort (called from Ruby) with its caller */
	n = 9;
	memcpy(ids, (uint64_t[]){ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 9 * sizeof(*ids));
	f.cstart[0] = 0xb000, f.cend[0] = 0xb100;
	f.cstart[1] = 0xa000, f.cend[1] = 0xa100;
	sp_interp_splice(&f, ids, pcs, eval, &n, 64);
	CHECK(same(ids, n, want_sort, 12));
	/* no addresses: as before */
	n = 9;
	memcpy(ids, (uint64_t[]){ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 9 * sizeof(*ids));
	f.cstart[0] = 0x1000, f.cend[0] = 0x1100;
	sp_interp_splice(&f, ids, NULL, eval, &n, 64);
	CHECK(same(ids, n, want_cut, 12));
}

/* ---- followed processes ---- */

/* A pid that names no process: a child's, reaped. */
static uint32_t gone_pid(void)
{
	pid_t c = fork();

	if (!c)
		_exit(0);
	waitpid(c, NULL, 0);
	return (uint32_t)c;
}

static void test_read_pid(void)
{
	static const uint64_t here = 0x1122334455667788ull;
	struct iproc pr = { 0 };
	uint64_t v = 0;

	CHECK(read_pid((uint32_t)getpid(), (uintptr_t)&here, &v, sizeof(v)) == 0);
	CHECK(v == here);
	/* unmapped, no process, nothing asked: failures, the buffer untouched */
	v = 0;
	CHECK(read_pid((uint32_t)getpid(), 8, &v, sizeof(v)) == -1);
	CHECK(read_pid(0, (uintptr_t)&here, &v, sizeof(v)) == -1);
	CHECK(read_pid((uint32_t)getpid(), (uintptr_t)&here, &v, 0) == -1);
	CHECK(v == 0);
	/* a code object's reader: the process's memory, else its parent's */
	pr.pid = gone_pid();
	CHECK(read_proc(&pr, (uintptr_t)&here, &v, sizeof(v)) == -1);
	CHECK(read_obj(&pr, (uintptr_t)&here, &v, sizeof(v)) == -1);	/* no parent */
	pr.parent = (uint32_t)getpid();
	CHECK(read_obj(&pr, (uintptr_t)&here, &v, sizeof(v)) == 0);
	CHECK(v == here);
	pr.pid = (uint32_t)getpid();	/* its own memory first */
	pr.parent = gone_pid();
	v = 0;
	CHECK(read_obj(&pr, (uintptr_t)&here, &v, sizeof(v)) == 0);
	CHECK(v == here);
}

static struct sp_interpreters *new_ip(void)
{
	struct sp_interpreters *ip = sp_xcalloc(1, sizeof(*ip));

	ip->mode = SP_INTERP_AUTO;
	bpf_procs = bpf_dels = bpf_ruby_loads = bpf_ruby_waits = 0;
	bpf_refuse = false;
	return ip;
}

/* pid followed as a process of runtime rt found from its mappings at time 1 */
static struct iproc *follow_rt(struct sp_interpreters *ip, uint32_t pid, unsigned int rt)
{
	struct iproc *pr = sp_xcalloc(1, sizeof(*pr));
	unsigned int row;

	pr->pid = pid;
	pr->l = rt == SP_RT_RUBY ? sp_interp_layout_find(SP_RT_RUBY, 3, 1, &row) :
		sp_interp_layout_find(SP_RT_PYTHON, 3, 11, &row);
	pr->row = row;
	pr->since = 1;
	return proc_add(ip, pr) ? pr : NULL;
}

static struct iproc *follow(struct sp_interpreters *ip, uint32_t pid)
{
	return follow_rt(ip, pid, SP_RT_PYTHON);
}

/* The Ruby walkers are asked for once, by the first Ruby followed (on a
 * thread: no wait), not by a Python; a wait is passed on only once they
 * were asked for (a command that runs Ruby, or a Ruby found). */
static void test_ruby_walkers_asked(void)
{
	struct sp_interpreters *ip = new_ip();

	sp_interp_ruby(ip, true);	/* no bpf: nothing */
	ip->bpf = (struct sp_interp_bpf *)&bpf_procs;	/* the stand-ins ignore it */
	sp_interp_ruby(ip, true);	/* nothing asked yet: no wait */
	CHECK_EQ_U(bpf_ruby_waits, 0);
	CHECK(follow(ip, 10) != NULL);
	CHECK_EQ_U(bpf_ruby_loads, 0);
	CHECK(follow_rt(ip, 20, SP_RT_RUBY) != NULL);
	CHECK_EQ_U(bpf_ruby_loads, 1);
	CHECK_EQ_U(ip->first_ruby, 20);
	CHECK(follow_rt(ip, 30, SP_RT_RUBY) != NULL);
	sp_interp_on_fork(ip, 20, 21, 2);	/* a Ruby's child: its parent's walkers */
	CHECK_EQ_U(bpf_ruby_loads, 1);
	CHECK_EQ_U(ip->first_ruby, 20);
	sp_interp_ruby(ip, true);
	CHECK_EQ_U(bpf_ruby_waits, 1);
	ip->bpf = NULL;
	sp_interp_free(ip);
	/* a command that runs Ruby asks before any is found, and waits */
	ip = new_ip();
	ip->bpf = (struct sp_interp_bpf *)&bpf_procs;
	sp_interp_ruby(ip, false);
	sp_interp_ruby(ip, true);
	CHECK(bpf_ruby_loads == 1 && bpf_ruby_waits == 1);
	CHECK_EQ_U(ip->first_ruby, 0);
	ip->bpf = NULL;
	sp_interp_free(ip);
}

static void test_children(void)
{
	struct sp_interpreters *ip = new_ip();
	struct iproc *p, *c1, *c2, *g;

	p = follow(ip, 100);
	CHECK(p != NULL);
	sp_interp_on_fork(ip, 100, 101, 2);
	sp_interp_on_fork(ip, 100, 102, 2);
	sp_interp_on_fork(ip, 100, 102, 3);	/* known already: not counted again */
	sp_interp_on_fork(ip, 999, 103, 2);	/* not a followed parent's */
	c1 = proc_find(ip, 101);
	c2 = proc_find(ip, 102);
	CHECK(c1 && c2 && !proc_find(ip, 103));
	CHECK_EQ_U(p->children, 2);
	CHECK(c1->parent == 100 && c2->parent == 100 && !c1->children);
	sp_interp_on_fork(ip, 101, 104, 3);	/* a grandchild counts for its parent */
	g = proc_find(ip, 104);
	CHECK(g && g->parent == 101);
	CHECK_EQ_U(c1->children, 1);
	CHECK_EQ_U(p->children, 2);
	/* the BPF side refuses one: it is not followed, nor counted */
	bpf_refuse = true;
	sp_interp_on_fork(ip, 100, 105, 3);
	bpf_refuse = false;
	CHECK(!proc_find(ip, 105));
	CHECK_EQ_U(p->children, 2);
	/* a child's end counts down its parent */
	sp_interp_on_end(ip, 102, 10);
	CHECK(!proc_find(ip, 102));
	CHECK_EQ_U(p->children, 1);
	/* an end found before its process (records are peeked at): nothing */
	sp_interp_on_end(ip, 104, 2);
	CHECK(proc_find(ip, 104) == g);
	CHECK_EQ_U(c1->children, 1);
	/* the parent's end: its children read from it no more */
	sp_interp_on_end(ip, 100, 10);
	CHECK(!proc_find(ip, 100));
	CHECK(c1->parent == 0);
	CHECK(g->parent == 101);	/* not its child */
	/* a new process with the parent's pid is no one's parent: the child's
	 * end leaves its count alone */
	p = follow(ip, 100);
	CHECK(p != NULL);
	sp_interp_on_end(ip, 101, 10);
	CHECK_EQ_U(p->children, 0);
	CHECK(g->parent == 0);
	CHECK_EQ_U(bpf_dels, 3);
	sp_interp_free(ip);
}

/* A stack of tid of pid read at time, for a sample (or for a call's
 * event when ev), as the BPF program hands it over. */
static void stack_in(struct sp_interpreters *ip, uint32_t pid, uint32_t tid, uint64_t time,
		     bool ev)
{
	struct sp_bpf_istack h = { 0 };
	struct sp_bpf_iframe f[2] = { { 0 } };

	h.pid = pid;
	h.tid = tid;
	h.time_ns = time;
	h.nframes = 2;
	h.flags = ev ? SP_BPF_IFL_EVENT : 0;
	on_stack(ip, &h, f, sizeof(f));
}

static void test_queues_drop_pid(void)
{
	struct sp_interpreters *ip = new_ip();
	uint32_t tid;

	CHECK(follow(ip, 200) && follow(ip, 300));
	/* more threads than a batch of keys */
	for (tid = 200; tid < 350; tid++) {
		stack_in(ip, 200, tid, 5, false);
		stack_in(ip, 200, tid, 6, false);
		stack_in(ip, 200, tid, 7, true);
	}
	stack_in(ip, 300, 1300, 5, false);
	stack_in(ip, 300, 1300, 6, true);
	stack_in(ip, 300, 1301, 6, true);
	CHECK_EQ_U(ip->tids.n, 151);
	CHECK_EQ_U(ip->evs.n, 152);
	CHECK(ip->npending == 301 && ip->nev == 152);
	/* a tid of 200 taken by process 300: its queue is 300's now */
	stack_in(ip, 300, 349, 8, true);
	CHECK(ip->nev == 152);
	sp_interp_on_end(ip, 200, 10);
	CHECK_EQ_U(ip->tids.n, 1);
	CHECK_EQ_U(ip->evs.n, 3);
	CHECK(ip->npending == 1 && ip->nev == 3);
	CHECK(sp_u64map_get(&ip->tids, 1300) && sp_u64map_get(&ip->evs, 1300) &&
	      sp_u64map_get(&ip->evs, 1301) && sp_u64map_get(&ip->evs, 349));
	/* a direct drop of a pid nothing holds changes nothing */
	queues_drop_pid(ip, 12345);
	CHECK(ip->npending == 1 && ip->nev == 3);
	queues_drop_pid(ip, 300);
	CHECK(!ip->tids.n && !ip->evs.n && !ip->npending && !ip->nev);
	sp_interp_free(ip);
}

/* A thread's event queue made when stacks are refused (PENDING_MAX): it
 * holds none, and a drop of its pid still finds it by its pid. */
static void test_empty_queue_dropped(void)
{
	struct sp_interpreters *ip = new_ip();

	CHECK(follow(ip, 400) != NULL);
	ip->nev = PENDING_MAX;
	stack_in(ip, 400, 401, 5, true);
	CHECK_EQ_U(ip->evs.n, 1);
	CHECK(ip->dropped == 1);
	ip->nev = 0;
	sp_interp_on_end(ip, 400, 10);
	CHECK_EQ_U(ip->evs.n, 0);
	sp_interp_free(ip);
}

/* Every call whose entry the interpreted stacks are read at has a name
 * and, where the kernel has system call tracepoints, a tracepoint of its
 * own: else the entry program falls back to raw sys_enter, run for every
 * system call of the machine. */
static void test_call_names(void)
{
	uint64_t bits[SP_BPF_INR_MAX / 64] = { 0 };
	bool tracefs = !access("/sys/kernel/tracing/events/syscalls", F_OK);
	unsigned int nr, n = 0;

	sp_ev_stack_calls(bits, SP_BPF_INR_MAX);
	sp_interp_proc_calls(bits, SP_BPF_INR_MAX);
	for (nr = 0; nr < SP_BPF_INR_MAX; nr++) {
		const char *name;
		char path[128];

		if (!(bits[nr / 64] >> (nr % 64) & 1))
			continue;
		n++;
		name = sp_ev_call_name(nr);
		if (!name)
			name = sp_interp_proc_call_name(nr);
		CHECK(name != NULL);
		if (!name || !tracefs)
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/tracing/events/syscalls/sys_enter_%s", name);
		if (access(path, F_OK))
			printf("# no tracepoint %s\n", path);
		CHECK(!access(path, F_OK));
	}
	CHECK(n > 10);
	CHECK_STR(sp_ev_call_name(__NR_openat), "openat");
	CHECK_STR(sp_interp_proc_call_name(__NR_execve), "execve");
	CHECK_STR(sp_interp_proc_call_name(__NR_exit_group), "exit_group");
	CHECK(sp_ev_call_name(__NR_getppid) == NULL);
	CHECK(sp_interp_proc_call_name(__NR_getppid) == NULL);
}

/* The writer's ids renumbered: a string id n becomes n + 1000 */
static uint64_t shift_id(void *ctx, unsigned int ref, uint64_t id)
{
	(void)ctx;
	return id && ref == SP_REF_STRING ? id + 1000 : id;
}

/* A compaction of the id space (-o DIR) renumbers every string id the
 * Ruby names keep: an iseq's label with its method's class put in, and a
 * C method's name, both cached with their method entry and used again
 * for the frames made after it (the frame caches start over). */
static void test_remap_ruby_names(void)
{
	struct sp_interpreters *ip = new_ip();
	struct iproc *pr = follow_rt(ip, 500, SP_RT_RUBY);
	struct code_ent *c = sp_xcalloc(1, sizeof(*c));
	struct me_ent *e = sp_xcalloc(1, sizeof(*e));
	struct sp_bpf_iframe fr = { .me = 0x7000 };
	const struct sp_remap m = { shift_id, NULL };

	CHECK(pr != NULL);
	if (!pr)
		return;
	c->func = 1;	/* "bar" */
	c->file = 2;
	c->me = 0x7000;
	c->me_func = 3;	/* "Foo#bar" */
	sp_u64map_put(&pr->codes, 0x6000, (uintptr_t)c);
	e->cfunc = 4;	/* "Array#each" */
	sp_u64map_put(&pr->mes, 0x8000, (uintptr_t)e);
	sp_interp_remap(ip, &m);
	CHECK_EQ_U(c->func, 1001);
	CHECK_EQ_U(c->file, 1002);
	CHECK_EQ_U(c->me_func, 1003);
	CHECK_EQ_U(e->cfunc, 1004);
	/* the same method entry again: the name cached, in the new ids */
	CHECK_EQ_U(rb_func(NULL, pr, c, &fr), 1003);
	CHECK(me_get(NULL, pr, 0x8000) == e);
	sp_interp_free(ip);
}

static uint64_t shift_stacks(void *ctx, unsigned int ref, uint64_t id)
{
	(void)ctx;
	return id && ref == SP_REF_STACK ? id + 1000 : id;
}

/*
 * A thread's last event stack (an event whose walk read the same frames
 * has it again) is of the ids' numbering when it was named: a compaction
 * (-o DIR) renumbers them, and the kept id would be no stack's, or
 * another's. It is dropped there, the next event's stack named afresh.
 */
static void test_last_event_stack_remapped(void)
{
	struct sp_interpreters *ip = new_ip();
	const struct sp_remap m = { shift_stacks, NULL };
	struct sp_bpf_istack h = { 0 };
	struct sp_bpf_iframe f[2] = { { 0 } };
	struct evq *q;
	uint64_t *v;

	CHECK(follow(ip, 600) != NULL);
	h.pid = h.tid = 600;
	h.time_ns = 5;
	h.nframes = 2;
	h.flags = SP_BPF_IFL_EVENT;
	h.cpu = __NR_openat;
	f[0].code = 0x1234;
	f[1].code = 0x5678;
	on_stack(ip, &h, f, sizeof(f));
	v = sp_u64map_get(&ip->evs, 600);
	CHECK(v != NULL);
	if (!v) {
		sp_interp_free(ip);
		return;
	}
	q = (void *)(uintptr_t)*v;
	remember_last(q, &q->p[0], 7);	/* as entry_stack() keeps it */
	CHECK(same_as_last(q, &q->p[0]));
	sp_u64map_put(&ip->forks, 601, 7);	/* another holder of stack 7 */
	sp_interp_remap(ip, &m);
	CHECK_EQ_U(*sp_u64map_get(&ip->forks, 601), 1007);
	CHECK_EQ_U(q->last_stack, 0);
	CHECK(!same_as_last(q, &q->p[0]));
	sp_interp_free(ip);
}

/* The lost records an end emits (sp_interp_finish()), the last one kept. */
static struct sp_lost emitted_lost;
static unsigned int emitted_losts;

static int keep_lost(void *ctx, const struct sp_record *r)
{
	(void)ctx;
	if (r->kind == SP_REC_LOST) {
		emitted_lost = r->lost;
		emitted_losts++;
	}
	return 0;
}

/* Thread tid's queue of event stacks over full: EVQ_LEN + 1 calls, 10 ns
 * apart from t0 (the oldest half is dropped unread). */
static void fill_event_queue(struct sp_interpreters *ip, uint32_t tid, uint64_t t0)
{
	struct sp_bpf_istack h = { 0 };
	struct sp_bpf_iframe f[1] = { { 0 } };
	unsigned int i;

	h.pid = 700;
	h.tid = tid;
	h.nframes = 1;
	h.flags = SP_BPF_IFL_EVENT;
	h.cpu = __NR_openat;
	f[0].code = 0x1234;
	for (i = 0; i <= EVQ_LEN; i++) {
		h.time_ns = t0 + 10 * i;
		on_stack(ip, &h, f, sizeof(f));
	}
}

/*
 * A kernel event whose interpreted stack was dropped unread (its thread's
 * queue was full before the event was read; the newest call dropped
 * included) is counted, in lost records (interp_events) written near the
 * events they count. An event whose call took no stack is not.
 */
static void test_event_stacks_lost_counted(void)
{
	struct sp_interpreters *ip = new_ip();
	struct sp_emit out = { NULL, keep_lost, NULL };
	const uint64_t newest_dropped = 1000 + 10 * (EVQ_LEN / 2 - 1);
	const uint64_t later = 1000 + LOST_BATCH_NS;

	CHECK(follow(ip, 700) != NULL);
	ip->bpf = (struct sp_interp_bpf *)&bpf_procs;	/* the stand-ins ignore it */
	fill_event_queue(ip, 700, 1000);
	emitted_losts = 0;
	/* the first call's event, and the newest dropped call's */
	CHECK_EQ_U(sp_interp_event_stack(ip, &out, 700, 700, 1000, __NR_openat, false), 0);
	CHECK_EQ_U(sp_interp_event_stack(ip, &out, 700, 700, newest_dropped + 5, __NR_openat,
					 false), 0);
	CHECK_EQ_U(ip->ev_lost.count, 2);
	/* another thread's, whose call took no stack: not counted */
	CHECK_EQ_U(sp_interp_event_stack(ip, &out, 700, 701, 1500, __NR_openat, false), 0);
	CHECK_EQ_U(ip->ev_lost.count, 2);
	CHECK_EQ_U(ip->ev_none, 3);
	CHECK_EQ_U(emitted_losts, 0);	/* one run yet: not written */
	/* a run longer than LOST_BATCH_NS is written as it goes, with its window */
	fill_event_queue(ip, 702, later);
	CHECK_EQ_U(sp_interp_event_stack(ip, &out, 700, 702, later, __NR_openat, false), 0);
	CHECK_EQ_U(ip->ev_lost.count, 3);
	CHECK_EQ_U(emitted_losts, 1);
	CHECK_EQ_U(emitted_lost.what, SP_LOST_INTERP_EVENTS);
	CHECK_EQ_U(emitted_lost.count, 2);
	CHECK_EQ_U(emitted_lost.pid, 700);
	CHECK_EQ_U(emitted_lost.start, 1000);
	CHECK_EQ_U(emitted_lost.time, newest_dropped + 5);
	/* the rest at the end */
	sp_interp_finish(ip, &out, later * 2);
	CHECK_EQ_U(emitted_losts, 2);
	CHECK_EQ_U(emitted_lost.count, 1);
	CHECK_EQ_U(emitted_lost.start, later);
	ip->bpf = NULL;
	sp_interp_free(ip);
}

int main(void)
{
	TAP_RUN(test_two_calls);
	TAP_RUN(test_cut_short);
	TAP_RUN(test_leaf_unmapped_and_none);
	TAP_RUN(test_bound);
	TAP_RUN(test_cfunc_from_cfunc);
	TAP_RUN(test_unpushed_frame);
	TAP_RUN(test_read_pid);
	TAP_RUN(test_children);
	TAP_RUN(test_ruby_walkers_asked);
	TAP_RUN(test_queues_drop_pid);
	TAP_RUN(test_empty_queue_dropped);
	TAP_RUN(test_call_names);
	TAP_RUN(test_remap_ruby_names);
	TAP_RUN(test_last_event_stack_remapped);
	TAP_RUN(test_event_stacks_lost_counted);
	return TAP_DONE();
}
