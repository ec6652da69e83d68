// SPDX-License-Identifier: MIT
/* Unit tests of the spans source's helpers (lib/record/bpf_spans_*.c):
 * option words, --span-func specs, USDT providers as span modes, runtime
 * libraries and versions, the activators' environment, USDT operands, which
 * commands have probes. The notes themselves: tests/unit/test-usdt.c; the
 * recording is tested for real in tests/sp-record-spans.bats. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/libbpf.h>

#include "bpf_spans.h"
#include "procfs.h"
#include "record/bpf_spansP.h"
#include "spans.h"
#include "tap.h"

#define LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"
#define PYTHON "/usr/bin/python3.11"

static void test_bpf_spans_parse_list(void)
{
	unsigned int m = 12345;
	const char *bad = NULL;
	size_t badlen = 0;

	CHECK(!sp_spans_parse_list("auto", &m, &bad, &badlen));
	CHECK_EQ_U(m, SP_SPANS_AUTO);
	CHECK(!sp_spans_parse_list("none", &m, &bad, &badlen));
	CHECK_EQ_U(m, 0);
	CHECK(!sp_spans_parse_list("ruby-c,usdt", &m, &bad, &badlen));
	CHECK_EQ_U(m, SP_SPANS_RUBY_C | SP_SPANS_USDT);
	CHECK(!sp_spans_parse_list("python", &m, &bad, &badlen));
	CHECK_EQ_U(m, SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT);
	CHECK(sp_spans_parse_list("ruby,rubyx,usdt", &m, &bad, &badlen) == -1);
	CHECK_EQ_U(badlen, 5);
	CHECK(!strncmp(bad, "rubyx", 5));
	CHECK(sp_spans_parse_list("ruby,", &m, &bad, &badlen) == -1);
	CHECK_EQ_U(badlen, 0);
	CHECK(sp_spans_parse_list("", &m, &bad, &badlen) == -1);
}

static void test_bpf_spans_split_func(void)
{
	char bin[64], func[32];

	CHECK(!sp_spans_split_func("/usr/bin/x:main", bin, sizeof(bin), func, sizeof(func)));
	CHECK_STR(bin, "/usr/bin/x");
	CHECK_STR(func, "main");
	/* the last colon splits: C++ names are globs here, paths may hold ':' */
	CHECK(!sp_spans_split_func("a:b:f*", bin, sizeof(bin), func, sizeof(func)));
	CHECK_STR(bin, "a:b");
	CHECK_STR(func, "f*");
	CHECK(sp_spans_split_func("nocolon", bin, sizeof(bin), func, sizeof(func)) == -1);
	CHECK(sp_spans_split_func(":main", bin, sizeof(bin), func, sizeof(func)) == -1);
	CHECK(sp_spans_split_func("bin:", bin, sizeof(bin), func, sizeof(func)) == -1);
	CHECK(sp_spans_split_func("bin:0123456789012345678901234567890123456789", bin,
				  sizeof(bin), func, sizeof(func)) == -1);
}

/* A file with a note that looks like USDT but is not: not a provider. */
static void test_bpf_spans_elf_providers(void)
{
	char exe[4096];
	ssize_t n;

	/* this test binary has no USDT notes */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = 0;
	CHECK_EQ_U(sp_spans_elf_providers(exe), 0);
	CHECK(sp_spans_elf_providers("/nonexistent/file") == -1);
	CHECK(sp_spans_elf_providers("/etc/hostname") == -1);
	/* C on x86-64: every marker passes its arguments in fixed registers */
	if (!access("build/examples/spans_c", R_OK))
		CHECK_EQ_U(sp_spans_elf_providers("build/examples/spans_c"),
			   SP_SPANS_USDT | SP_SPANS_USDT_REGS);
	else
		printf("# skipped spans_c: not built\n");
	/* the same markers compiled as C++: generic operands */
	if (!access("build/examples/spans_cxx", R_OK))
		CHECK_EQ_U(sp_spans_elf_providers("build/examples/spans_cxx"), SP_SPANS_USDT);
	else
		printf("# skipped spans_cxx: not built\n");
	/* a runtime hook has markers of its own, no span__begin/end: it is
	 * no <stackpulse/span.h> library to give span probes */
	if (!access("build/runtime/ruby/3.1/stackpulse_hook.so", R_OK))
		CHECK_EQ_U(sp_spans_elf_providers("build/runtime/ruby/3.1/stackpulse_hook.so"), 0);
	else
		printf("# skipped the Ruby hook: not built\n");
	if (!access(LIBRUBY, R_OK))
		CHECK_EQ_U(sp_spans_elf_providers(LIBRUBY), SP_SPANS_RUBY);
	if (!access(PYTHON, R_OK))
		CHECK_EQ_U(sp_spans_elf_providers(PYTHON), SP_SPANS_PYTHON);
}

static void test_bpf_spans_runtime_libs(void)
{
	char libs[4][4096];
	int n;

	if (access("/usr/bin/ruby3.1", R_OK) || access(LIBRUBY, R_OK)) {
		printf("# skipped: no Debian ruby3.1\n");
		return;
	}
	n = sp_spans_runtime_libs("/usr/bin/ruby3.1", libs, 4);
	CHECK_EQ_U(n, 1);
	/* realpath of the soname link */
	CHECK(n == 1 && !strncmp(libs[0], LIBRUBY, strlen(LIBRUBY)));
	/* python3.11 is linked statically with libpython: no library */
	if (!access(PYTHON, R_OK))
		CHECK_EQ_U(sp_spans_runtime_libs(PYTHON, libs, 4), 0);
	CHECK_EQ_U(sp_spans_runtime_libs("/nonexistent", libs, 4), 0);
}

/* An executable needing 20 other libraries before libruby: the runtime's
 * library is never the one a cap of 16 cuts. */
static void test_bpf_spans_needed_libs_runtime_first(void)
{
	static const char *const others[] = {
		"m", "z", "gmp", "crypt", "bz2", "lzma", "elf", "dw", "ffi", "ssl", "crypto",
		"expat", "zstd", "yaml-0", "readline", "ncursesw", "tinfo", "sqlite3", "uuid", "cap",
	};
	char dir[] = "/tmp/sp-test-needed-XXXXXX", cmd[8192], exe[64], (*libs)[4096];
	size_t i, len;
	int n;

	if (access(LIBRUBY, R_OK) || system("command -v cc > /dev/null 2>&1") ||
	    !mkdtemp(dir)) {
		printf("# skipped: needs Debian's ruby3.1 and a C compiler\n");
		return;
	}
	snprintf(exe, sizeof(exe), "%s/needs", dir);
	len = (size_t)snprintf(cmd, sizeof(cmd), "printf 'int main(void) { return 0; }' | "
			       "cc -x c -o %s - -x none -Wl,--no-as-needed", exe);
	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len,
					" $(ls /usr/lib/x86_64-linux-gnu/lib%s.so.* | head -1)",
					others[i]);
	snprintf(cmd + len, sizeof(cmd) - len, " " LIBRUBY " 2>/dev/null");
	if (system(cmd)) {
		printf("# skipped: cannot link a program with 21 libraries\n");
		rmdir(dir);
		return;
	}
	libs = malloc(16 * sizeof(*libs));
	n = sp_spans_needed_libs(exe, true, NULL, libs, 16);
	CHECK_EQ_U(n, 16);
	CHECK(n >= 1 && !strncmp(libs[0], LIBRUBY, strlen(LIBRUBY)));
	for (i = 1; i < (size_t)n; i++)
		CHECK(!strstr(libs[i], "libruby"));
	n = sp_spans_needed_libs(exe, false, NULL, libs, 16);
	CHECK_EQ_U(n, 1);
	CHECK(sp_spans_file_has_probes(SP_SPANS_RUBY, exe));
	free(libs);
	unlink(exe);
	rmdir(dir);
}

static void test_bpf_spans_runtime_version(void)
{
	char v[32], want[32] = "";
	FILE *f;

	sp_spans_runtime_version("/nonexistent", 1, v, sizeof(v));
	CHECK_STR(v, "");
	if (!access(LIBRUBY, R_OK) && (f = popen("ruby -e 'print RUBY_VERSION' 2>/dev/null", "r"))) {
		if (!fgets(want, sizeof(want), f))
			want[0] = 0;
		pclose(f);
		sp_spans_runtime_version(LIBRUBY, 1, v, sizeof(v));
		CHECK_STR(v, want);
	}
	if (!access(PYTHON, R_OK) && (f = popen(PYTHON " -c 'import platform; "
						"print(platform.python_version(), end=\"\")'", "r"))) {
		if (!fgets(want, sizeof(want), f))
			want[0] = 0;
		pclose(f);
		sp_spans_runtime_version(PYTHON, 2, v, sizeof(v));
		CHECK_STR(v, want);
	}
}

static void test_bpf_spans_setup_env(void)
{
	struct sp_spans_opts o = { .modes = SP_SPANS_RUBY | SP_SPANS_PYTHON,
				   .runtime_dir = "/opt/sp/runtime" };

	setenv("RUBYOPT", "-w", 1);
	unsetenv("PYTHONPATH");
	CHECK(!sp_spans_setup_env(&o));
	CHECK_STR(getenv("RUBYOPT"), "-r/opt/sp/runtime/ruby/stackpulse_activate.rb -w");
	CHECK_STR(getenv("PYTHONPATH"), "/opt/sp/runtime/python");
	/* twice (nested sp-record): not added again */
	CHECK(!sp_spans_setup_env(&o));
	CHECK_STR(getenv("RUBYOPT"), "-r/opt/sp/runtime/ruby/stackpulse_activate.rb -w");
	CHECK_STR(getenv("PYTHONPATH"), "/opt/sp/runtime/python");
	CHECK_STR(getenv("STACKPULSE_RUBY_EVENTS"), "call");
	CHECK_STR(getenv("STACKPULSE_SPAN_RING"), "1");
	/* C-method spans come from the activator's hook too, alone (audit
	 * events need none) */
	o.modes = SP_SPANS_RUBY_C | SP_SPANS_PY_AUDIT;
	unsetenv("RUBYOPT");
	unsetenv("STACKPULSE_RUBY_EVENTS");
	CHECK(!sp_spans_setup_env(&o));
	CHECK_STR(getenv("RUBYOPT"), "-r/opt/sp/runtime/ruby/stackpulse_activate.rb");
	CHECK_STR(getenv("STACKPULSE_RUBY_EVENTS"), "c_call");
	o.modes = SP_SPANS_RUBY_C | SP_SPANS_RUBY;
	unsetenv("RUBYOPT");
	unsetenv("STACKPULSE_RUBY_EVENTS");
	CHECK(!sp_spans_setup_env(&o));
	CHECK_STR(getenv("STACKPULSE_RUBY_EVENTS"), "call,c_call");
	/* the user's own is kept */
	setenv("STACKPULSE_RUBY_EVENTS", "call", 1);
	CHECK(!sp_spans_setup_env(&o));
	CHECK_STR(getenv("STACKPULSE_RUBY_EVENTS"), "call");
	unsetenv("STACKPULSE_RUBY_EVENTS");
	unsetenv("RUBYOPT");
	/* a directory with a space: Ruby splits RUBYOPT at white space */
	o.modes = SP_SPANS_RUBY;
	o.runtime_dir = "/opt/stack pulse/runtime";
	setenv("RUBYLIB", "/usr/local/lib/ruby", 1);
	CHECK(!sp_spans_setup_env(&o));
	CHECK_STR(getenv("RUBYOPT"), "-rstackpulse_activate");
	CHECK_STR(getenv("RUBYLIB"), "/opt/stack pulse/runtime/ruby:/usr/local/lib/ruby");
	unsetenv("RUBYOPT");
	unsetenv("RUBYLIB");
	/* the default: no activator, no globs */
	o.modes = SP_SPANS_DEFAULT;
	o.runtime_dir = "/opt/sp/runtime";
	unsetenv("PYTHONPATH");
	unsetenv("STACKPULSE_SPANS_MATCH");
	CHECK(!sp_spans_setup_env(&o));
	CHECK(getenv("RUBYOPT") == NULL && getenv("PYTHONPATH") == NULL);
	CHECK(getenv("STACKPULSE_SPANS_MATCH") == NULL);
	/* --spans-match: the globs one a line, for the Ruby activator */
	o.modes = SP_SPANS_DEFAULT | SP_SPANS_RUBY;
	o.globs[0] = "Store#*";
	o.globs[1] = "Gem.load_*";
	o.nglobs = 2;
	CHECK(!sp_spans_setup_env(&o));
	CHECK_STR(getenv("STACKPULSE_SPANS_MATCH"), "Store#*\nGem.load_*");
	CHECK_STR(getenv("RUBYOPT"), "-r/opt/sp/runtime/ruby/stackpulse_activate.rb");
	unsetenv("RUBYOPT");
	unsetenv("STACKPULSE_SPANS_MATCH");
}

/* Operands of USDT notes as readelf -n prints them, read as libbpf reads
 * them (x86-64 struct pt_regs offsets: rbx 40, r15 0, rsp 152, eax 80). */
static void test_bpf_spans_usdt_parse_args(void)
{
	struct sp_bs_usdt_spec sp;

#if defined(__x86_64__)
	/* python:audit in Debian's python3.11 */
	CHECK_EQ_U(sp_spans_usdt_parse_args("8@%rbx 8@%r15", &sp), 2);
	CHECK_EQ_U(sp.nargs, 2);
	CHECK_EQ_U(sp.args[0].type, SP_BS_USDT_REG);
	CHECK_EQ_U(sp.args[0].reg_off, 40);
	CHECK_EQ_U(sp.args[0].shift, 0);
	CHECK_EQ_U(sp.args[1].reg_off, 0);
	/* ruby:cmethod__entry in libruby 3.1 */
	CHECK_EQ_U(sp_spans_usdt_parse_args("8@32(%rsp) 8@40(%rsp) 8@48(%rsp) -4@56(%rsp)", &sp),
		   4);
	CHECK_EQ_U(sp.args[0].type, SP_BS_USDT_DEREF);
	CHECK_EQ_U(sp.args[0].reg_off, 152);
	CHECK_EQ_U(sp.args[0].val_off, 32);
	CHECK_EQ_U(sp.args[3].val_off, 56);
	CHECK_EQ_U(sp.args[3].sign, 1);
	CHECK_EQ_U(sp.args[3].shift, 32);
	/* python:function__entry; a constant; no offset */
	CHECK_EQ_U(sp_spans_usdt_parse_args("8@%rbp 8@%r12 -4@%eax", &sp), 3);
	CHECK_EQ_U(sp.args[2].reg_off, 80);
	CHECK_EQ_U(sp.args[2].sign, 1);
	CHECK_EQ_U(sp_spans_usdt_parse_args("-4@$-9 2@(%rdi)", &sp), 2);
	CHECK_EQ_U(sp.args[0].type, SP_BS_USDT_CONST);
	CHECK(sp.args[0].val_off == (uint64_t)-9);
	CHECK_EQ_U(sp.args[1].type, SP_BS_USDT_DEREF);
	CHECK_EQ_U(sp.args[1].val_off, 0);
	CHECK_EQ_U(sp.args[1].shift, 48);
	CHECK_EQ_U(sp_spans_usdt_parse_args("", &sp), 0);
	/* what it cannot read: libbpf's links read it */
	CHECK(sp_spans_usdt_parse_args("8@%xmm0", &sp) == -1);
	CHECK(sp_spans_usdt_parse_args("3@%rax", &sp) == -1);
	CHECK(sp_spans_usdt_parse_args("8@%rax junk", &sp) == -1);
#else
	CHECK(sp_spans_usdt_parse_args("8@%rbx", &sp) == -1);
#endif
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_bpf_spans_file_has_probes(void)
{
	char dir[] = "/tmp/test-bpf_spans.XXXXXX", path[64];

	/* coreutils: no runtime, no notes of ours */
	CHECK(!sp_spans_file_has_probes(SP_SPANS_AUTO, "/bin/true"));
	CHECK(!sp_spans_file_has_probes(SP_SPANS_AUTO, "/nonexistent/ruby"));
	/* Debian's ruby: /usr/bin/ruby has DT_NEEDED libruby-3.1.so.3.1
	 * (readelf -d), which has the ruby USDT notes (readelf -n) */
	if (!access(LIBRUBY, R_OK) && !access("/usr/bin/ruby", X_OK)) {
		CHECK(sp_spans_file_has_probes(SP_SPANS_RUBY, "/usr/bin/ruby"));
		CHECK(!sp_spans_file_has_probes(SP_SPANS_PYTHON | SP_SPANS_USDT, "/usr/bin/ruby"));
	}
	if (!access(PYTHON, X_OK)) {
		CHECK(sp_spans_file_has_probes(SP_SPANS_PYTHON, PYTHON));
		/* the audit probe is the "python" provider's: the default waits */
		CHECK(sp_spans_file_has_probes(SP_SPANS_DEFAULT, PYTHON));
	}
	if (!mkdtemp(dir))
		return;
	snprintf(path, sizeof(path), "%s/a", dir);
	write_file(path, "#!/usr/bin/env ruby\nputs 1\n");
	CHECK(sp_spans_file_has_probes(SP_SPANS_RUBY, path));
	write_file(path, "#!/bin/sh\necho 1\n");
	CHECK(!sp_spans_file_has_probes(SP_SPANS_AUTO, path));
	write_file(path, "#!" PYTHON " -u\nprint(1)\n");
	CHECK(sp_spans_file_has_probes(SP_SPANS_PYTHON, path) == !access(PYTHON, X_OK));
	write_file(path, "plain text");
	CHECK(!sp_spans_file_has_probes(SP_SPANS_AUTO, path));
	unlink(path);
	rmdir(dir);
}

/* Beyond the USDT links libbpf can hold, a process gets none: counted once a
 * process, for the spool's lost record. */
static void test_bpf_spans_usdt_full_counted(void)
{
	static struct bs_att like;
	struct bs_ctx c;
	struct bs_proc a, b;

	memset(&c, 0, sizeof(c));
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.pid = 100;
	b.pid = 101;
	c.usdt_live = 512;	/* SP_SPANS_USDT_LIVE: all wait to be detached */
	CHECK(sp_bs_attach_usdt_how(&c, &a, NULL, "/bin/x", "python", "function__entry", 0,
				    NULL) == -1);
	CHECK(sp_bs_attach_usdt_how(&c, &a, NULL, "/bin/x", "python", "function__return", 1,
				    NULL) == -1);
	/* a fork child's (its parent's attachment given) */
	CHECK(sp_bs_attach_usdt_how(&c, &b, NULL, "/bin/x", "python", "function__entry", 0,
				    &like) == -1);
	CHECK(c.usdt_full);
	CHECK_EQ_U(c.unprobed, 2);
}

/* The reaper threads (bpf_spans_procs.c) finish what is queued and end. */
static void stop_reapers(struct bs_ctx *c)
{
	unsigned int i;

	pthread_mutex_lock(&c->rq_lock);
	c->reaper_stop = true;
	pthread_cond_broadcast(&c->rq_cond);
	pthread_mutex_unlock(&c->rq_lock);
	for (i = 0; i < c->reapers; i++)
		pthread_join(c->reaper[i], NULL);
}

/*
 * A container's file (bpf_spans_root.c) is kept while a process known uses
 * it, then SP_BS_ROOT_IDLE_NS more, then closed, with what was keyed by its
 * name "/proc/self/fd/N": the next file of that number must not inherit
 * its marker locations' numbers with their operand specs written (BPF
 * would read the new file's operands by the old one's registers), and its
 * shared link goes to the reapers, not destroyed in the poll loop.
 */
static void test_bpf_spans_roots_sweep(void)
{
	char a[] = "/tmp/sp-test-root.XXXXXX", b[] = "/tmp/sp-test-root.XXXXXX";
	char name[32], other[32];
	uint64_t t0 = 5000000001ull;	/* odd: idle_ns is never 0 */
	struct bs_ctx c;
	struct bs_proc *p;
	uint32_t id, kept, id2, swapped;
	int fa, fb, fk, shared;
	size_t i;

	memset(&c, 0, sizeof(c));
	fa = mkstemp(a);
	fk = mkstemp(b);
	shared = dup(fa);
	CHECK(fa >= 0 && fk >= 0 && shared >= 0);
	c.croots = 2;
	c.roots = calloc(c.croots, sizeof(*c.roots));
	c.roots[0].fd = fa;
	c.roots[1].fd = fk;
	c.nroots = 2;
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fa);
	snprintf(other, sizeof(other), "/proc/self/fd/%d", fk);
	/* a process uses the second file */
	p = sp_bs_proc_new(&c, 4242);
	snprintf(p->exe, sizeof(p->exe), "%s", other);
	snprintf(c.shared[0].path, sizeof(c.shared[0].path), "%s", name);
	c.shared[0].fd = shared;
	c.nshared = 1;
	id = sp_bs_loc_id(&c, name, 8, 1, 0x1234);
	kept = sp_bs_loc_id(&c, other, 8, 1, 0x1234);
	CHECK(id && kept && id != kept);
	c.locs[id - 1].spec = c.locs[kept - 1].spec = true;	/* attached */
	CHECK_EQ_U(sp_bs_loc_id(&c, name, 8, 1, 0x1234), id);
	/* another file at the same name (its owner replaced it): a location
	 * of its own, its spec to be written, its literals its own */
	swapped = sp_bs_loc_id(&c, name, 8, 2, 0x1234);
	CHECK(swapped && swapped != id && swapped != kept);
	CHECK(!c.locs[swapped - 1].spec && c.locs[swapped - 1].ino == 2);
	CHECK_EQ_U(sp_bs_loc_id(&c, name, 8, 2, 0x1234), swapped);
	CHECK_EQ_U(sp_bs_loc_id(&c, name, 8, 1, 0x1234), id);

	/* unused: kept a while, a process of its container may map it again */
	sp_bs_roots_sweep(&c, t0);
	CHECK_EQ_U(c.nroots, 2);
	CHECK_EQ_U(c.roots_idle, 1);
	CHECK(fcntl(fa, F_GETFD) >= 0);
	CHECK_EQ_U(sp_bs_loc_id(&c, name, 8, 1, 0x1234), id);
	sp_bs_roots_sweep(&c, t0 + SP_BS_ROOT_IDLE_NS / 2);
	CHECK_EQ_U(c.nroots, 2);
	/* then closed, with its name's shared link and locations */
	sp_bs_roots_sweep(&c, t0 + SP_BS_ROOT_IDLE_NS);
	CHECK_EQ_U(c.nroots, 1);
	CHECK(c.roots[0].fd == fk);
	CHECK_EQ_U(c.roots_idle, 0);
	CHECK_EQ_U(c.nshared, 0);
	CHECK(fcntl(fa, F_GETFD) < 0);
	CHECK(c.locs[id - 1].bin == NULL && !c.locs[id - 1].spec);
	/* the file still used keeps its location and its spec */
	CHECK_EQ_U(sp_bs_loc_id(&c, other, 8, 1, 0x1234), kept);
	CHECK(c.locs[kept - 1].spec);

	/* the next file gets the same number, so the same name: a location of
	 * it is new, its spec to be written (the number itself may be reused) */
	fb = open(b, O_RDONLY | O_CLOEXEC);
	CHECK(fb == fa);
	id2 = sp_bs_loc_id(&c, name, 8, 1, 0x1234);
	CHECK(id2 != 0 && id2 != kept);
	CHECK(!c.locs[id2 - 1].spec);
	CHECK_STR(c.locs[id2 - 1].bin, name);
	CHECK_EQ_U(sp_bs_loc_id(&c, name, 8, 1, 0x1234), id2);

	/* the shared link went to a reaper thread: stop them, it is closed */
	CHECK(c.reaper_on);
	stop_reapers(&c);
	CHECK(fcntl(shared, F_GETFD) < 0);

	/* more than half of SP_BS_ROOT_FILES open: an unused one goes at once */
	sp_bs_detach_all_how(&c, p, true);
	p->exe[0] = 0;
	c.nroots = SP_BS_ROOT_FILES / 2 + 1;
	c.roots = realloc(c.roots, c.nroots * sizeof(*c.roots));
	for (i = 1; i < c.nroots; i++) {
		c.roots[i] = c.roots[0];
		c.roots[i].fd = dup(fk);
	}
	sp_bs_roots_sweep(&c, t0 + 2 * SP_BS_ROOT_IDLE_NS);
	CHECK_EQ_U(c.nroots, 0);
	CHECK(fcntl(fk, F_GETFD) < 0);

	close(fb);
	unlink(a);
	unlink(b);
	for (i = 0; i < c.nlocs; i++)
		free(c.locs[i].bin);
	free(c.locs);
	free(c.loc_free);
	free(c.rq);
	free(c.roots);
	free(c.procs);
	free(p);
	sp_u64map_release(&c.loc_ids);
	sp_u64map_release(&c.by_pid);
}

/* Location numbers all given: those of files no process known nor a
 * shared link has probes in come back; those in use stay. */
static void test_bpf_spans_locs_collected(void)
{
	struct bs_ctx c;
	uint32_t id, kept, again;
	size_t i;

	memset(&c, 0, sizeof(c));
	/* a hook file's shared link is on (8, 5) */
	c.shared[0].dev = 8;
	c.shared[0].ino = 5;
	c.nshared = 1;
	kept = sp_bs_loc_id(&c, "/hook.so", 8, 5, 0x10);
	CHECK(kept);
	/* one inode after another at one path, each its own numbers */
	for (i = 0; c.nlocs + 1 < SP_BS_MAX_SPECS; i++)
		CHECK(sp_bs_loc_id(&c, "/home/u/libruby.so", 8, 100 + i, 0x20));
	CHECK_EQ_U(c.loc_collections, 0);
	id = sp_bs_loc_id(&c, "/home/u/libruby.so", 8, 999999, 0x20);
	CHECK(id && id < SP_BS_MAX_SPECS);
	CHECK_EQ_U(c.loc_collections, 1);
	/* the shared link's location kept its number and its file */
	CHECK_EQ_U(sp_bs_loc_id(&c, "/hook.so", 8, 5, 0x10), kept);
	CHECK(c.locs[kept - 1].bin && c.locs[kept - 1].ino == 5);
	/* a collected one is new again: its spec to be written */
	again = sp_bs_loc_id(&c, "/home/u/libruby.so", 8, 100, 0x20);
	CHECK(again && again < SP_BS_MAX_SPECS && !c.locs[again - 1].spec);
	for (i = 0; i < c.nlocs; i++)
		free(c.locs[i].bin);
	free(c.locs);
	free(c.loc_free);
	sp_u64map_release(&c.loc_ids);
	sp_u64map_release(&c.by_pid);
}

/* -a: which mappings are a runtime hook's (bpf_spans_all.c) */
static void test_bpf_spans_maps_line_hook(void)
{
	CHECK(sp_bs_maps_line_hook("7f1-7f2 r-xp 00002000 fe:00 5628108    "
				   "/sp-runtime/python/_stackpulse_hook.cpython-311-x86_64-linux-gnu.so\n"));
	CHECK(sp_bs_maps_line_hook("7f1-7f2 r--p 00000000 fe:00 12 /usr/share/stackpulse/runtime/ruby/"
				   "3.1/stackpulse_hook.so\n"));
	/* a file named after it elsewhere in the path, or another library */
	CHECK(!sp_bs_maps_line_hook("7f1-7f2 r--p 00000000 fe:00 12 /stackpulse_hook.so/libc.so.6\n"));
	CHECK(!sp_bs_maps_line_hook("7f1-7f2 r-xp 00000000 fe:00 12 /usr/lib/libruby.so.3.1\n"));
	CHECK(!sp_bs_maps_line_hook("7f1-7f2 rw-p 00000000 00:00 0 [heap]\n"));
	CHECK(!sp_bs_maps_line_hook("7f1-7f2 rw-p 00000000 00:00 0\n"));
}

/* -a: which listed pids a pass reads again (bpf_spans_all.c) */
static void test_bpf_spans_all_rule(void)
{
	uint64_t young = 100000, old = SP_BS_ALL_SEEN(5000, 0, 0, 7);
	uint64_t kid = SP_BS_ALL_SEEN(young, 0, 0, 7);
	unsigned int pass, reads = 0;

	/* a new pid, a young one: its start read at every pass */
	CHECK(sp_bs_all_read_start(NULL, young, 8, 1234));
	CHECK(sp_bs_all_read_start(&kid, young, 8, 1234));
	/* an old one judged: once in SP_BS_ALL_RECHECK passes, not every one */
	for (pass = 0; pass < 10 * SP_BS_ALL_RECHECK; pass++)
		reads += sp_bs_all_read_start(&old, young, pass, 1234);
	CHECK_EQ_U(reads, 10);
	/* its mappings read: when new, young, or of another start (its pid
	 * reused), not when of the start judged */
	CHECK(sp_bs_all_judge(NULL, 5000, young));
	CHECK(!sp_bs_all_judge(&old, 5000, young));
	CHECK(sp_bs_all_judge(&old, 5001, young));
	CHECK(sp_bs_all_judge(&kid, young, young));
	/* judged on an ask: the same start, kept beside the bit */
	old = SP_BS_ALL_SEEN(5000, 1, 1, 7);
	CHECK(!sp_bs_all_judge(&old, 5000, young));
	CHECK(sp_bs_all_judge(&old, 5001, young));
	/* the whole of a start time since boot is kept (46 bits: 22,000
	 * years of 100 Hz ticks) */
	old = SP_BS_ALL_SEEN(1ull << 45, 1, 1, 0xffff);
	CHECK(!sp_bs_all_judge(&old, 1ull << 45, UINT64_MAX));
	CHECK(sp_bs_all_judge(&old, (1ull << 45) + 1, UINT64_MAX));
}

static int count_emit(void *ctx, const struct sp_record *r)
{
	(void)r;
	(*(int *)ctx)++;
	return 0;
}

static bool bpf_tracked(struct bs_ctx *c, uint32_t pid)
{
	struct sp_bs_proc v;

	return !bpf_map__lookup_elem(c->skel->maps.tgids, &pid, sizeof(pid), &v, sizeof(v), 0);
}

/* A context over the real BPF object (root), as bpf_spans.c makes one:
 * false, said, when there is none. */
static bool ctx_open(struct bs_ctx *c, const struct sp_spans_opts *o, struct sp_emit *out)
{
	char why[256];

	memset(c, 0, sizeof(*c));
	if (geteuid() != 0 || !(c->skel = sp_bs_load_skel(why, sizeof(why)))) {
		printf("# skipped: no BPF (%s)\n", geteuid() ? "not root" : why);
		return false;
	}
	pthread_mutex_init(&c->bpf_lock, NULL);
	pthread_mutex_init(&c->rq_lock, NULL);
	pthread_cond_init(&c->rq_cond, NULL);
	c->o = o;
	c->out = out;
	c->guard_fd = c->epfd = -1;
	return true;
}

static void ctx_close(struct bs_ctx *c)
{
	stop_reapers(c);
	sp_bs_ctx_release(c);
}

/*
 * -a seeds a pid judged to be the process that started at t
 * (sp_bs_all_take()): one that names another by the seed's end (here: a
 * start time not the one judged) is let go, with all the seed did (BPF's
 * tracking, ld.so's probe), and what BPF sent of it, or of the children
 * it forked meanwhile, is dropped; the process judged is kept; and BPF's
 * entry for a pid that a tracked process's child took is left alone.
 */
static void test_bpf_spans_all_take(void)
{
	struct sp_spans_opts o = { .modes = SP_SPANS_RUBY | SP_SPANS_PYTHON | SP_SPANS_USDT };
	struct sp_bs_event e = { .kind = SP_BS_EXEC, .flags = 0 };
	struct sp_bs_proc one = { .gen = 1 };
	int emitted = 0;
	struct sp_emit out = { .emit = count_emit, .ctx = &emitted };
	struct bs_proc *p;
	struct bs_ctx c;
	struct sp_bs_proc none = { .gen = 1, .probed = 0 };
	uint64_t t, t2, t3;
	pid_t kid, kid2, kid3;
	uint32_t fake_child = 4194000, me = (uint32_t)getpid();

	if (!ctx_open(&c, &o, &out))
		return;
	c.all = true;
	kid = fork();
	if (kid == 0) {
		pause();
		_exit(0);
	}
	kid2 = fork();
	if (kid2 == 0) {
		pause();
		_exit(0);
	}
	CHECK(kid > 0 && kid2 > 0);
	CHECK(sp_procfs_start(kid, &t) == 0 && sp_procfs_start(kid2, &t2) == 0);

	/* its pid names a process started later than the one judged */
	CHECK(sp_bs_all_take(&c, kid, t - 1, "/nonexistent") == 1);
	p = sp_bs_proc_get(&c, kid);
	CHECK(p && p->untracked && p->exited);
	CHECK(!bpf_tracked(&c, kid));
	CHECK(p && !p->natt && !p->dl.link && p->dl.fd < 0);
	CHECK(c.ngone == 1 && c.gone[0] == p);
	/* what BPF sent before: its exec, a child it forked (tracked by BPF
	 * at its fork), a span mark */
	e.pid = kid;
	CHECK(sp_bs_on_event(&c, &e, sizeof(e)) == 0);
	CHECK(p && !p->natt && p->gen == 1);	/* no new image: nothing attached */
	CHECK(!bpf_map__update_elem(c.skel->maps.tgids, &fake_child, sizeof(fake_child), &one,
				    sizeof(one), BPF_ANY));
	e.kind = SP_BS_FORK;
	e.pid = fake_child;
	e.ppid = kid;
	CHECK(sp_bs_on_event(&c, &e, sizeof(e)) == 0);
	CHECK(!bpf_tracked(&c, fake_child));
	p = sp_bs_proc_get(&c, fake_child);
	CHECK(p && p->untracked);
	e.kind = SP_BS_START;
	e.probe = SP_PR_SP_BEGIN;
	e.pid = e.tid = kid;
	e.ppid = 0;
	CHECK(sp_bs_on_event(&c, &e, sizeof(e)) == 0);
	e.pid = e.tid = fake_child;
	CHECK(sp_bs_on_event(&c, &e, sizeof(e)) == 0);
	CHECK_EQ_U(emitted, 0);
	CHECK_EQ_U(c.forks, 0);

	/* the process judged */
	CHECK(sp_bs_all_take(&c, kid2, t2, "/nonexistent") == 0);
	p = sp_bs_proc_get(&c, kid2);
	CHECK(p && !p->untracked && !p->exited);
	CHECK(bpf_tracked(&c, kid2));

	/* a pid whose number a tracked process's fork child took (here: a
	 * child of this test, tracked with probed 0, so that BPF stops none
	 * of its children): BPF's entry for it is the child's, and stays */
	CHECK(!bpf_map__update_elem(c.skel->maps.tgids, &me, sizeof(me), &none, sizeof(none),
				    BPF_ANY));
	kid3 = fork();
	if (kid3 == 0) {
		pause();
		_exit(0);
	}
	CHECK(kid3 > 0 && sp_procfs_start(kid3, &t3) == 0);
	CHECK(sp_bs_all_take(&c, kid3, t3 - 1, "/nonexistent") == 1);
	p = sp_bs_proc_get(&c, kid3);
	CHECK(p && p->untracked);
	CHECK(bpf_tracked(&c, kid3));
	bpf_map__delete_elem(c.skel->maps.tgids, &me, sizeof(me), 0);
	kill(kid3, SIGKILL);
	waitpid(kid3, NULL, 0);

	kill(kid, SIGKILL);
	kill(kid2, SIGKILL);
	waitpid(kid, NULL, 0);
	waitpid(kid2, NULL, 0);
	ctx_close(&c);
}

/* One span ring entry of thread pid (its process) through the decoder. */
static void ring_mark(struct bs_ctx *c, uint32_t probe, int32_t line)
{
	struct sp_ring_entry re = { .time = 1000, .probe = probe, .line = line };

	CHECK(sp_bs_ring_put(c, (uint32_t)getpid(), (uint32_t)getpid(), &re) == 0);
}

/*
 * The Ruby hook's frames open when it loaded (SP_RING_BOOT: StackPulse's
 * activator and the requires of it, Ruby and C) are counted, not
 * recorded; nor their stops, nor what they call before they return; the
 * program's marks after them are, C methods' too. A boot flag on a stop
 * is a bad entry. A real mark at any line (eval's -2^31) is the program's.
 */
static void test_bpf_spans_boot_frames(void)
{
	struct sp_spans_opts o = { .modes = SP_SPANS_RUBY | SP_SPANS_RUBY_C };
	int emitted = 0, k;
	struct sp_emit out = { .emit = count_emit, .ctx = &emitted };
	struct bs_ctx c;

	if (!ctx_open(&c, &o, &out))
		return;
	for (k = 0; k < 3; k++)
		ring_mark(&c, SP_PR_RB_HOOK_CALL | SP_RING_BOOT, SP_RT_LINE_SYNTHETIC(4));
	ring_mark(&c, SP_PR_RUBY_CMETHOD_ENTRY, 127);	/* the activator's call */
	ring_mark(&c, SP_PR_RUBY_CMETHOD_RETURN, 127);
	for (k = 0; k < 3; k++)
		ring_mark(&c, SP_PR_RB_HOOK_RETURN, 85);
	CHECK_EQ_U(emitted, 0);
	CHECK_EQ_U(c.boot_frames, 3);
	CHECK_EQ_U(c.boot_calls, 1);
	/* the program's */
	ring_mark(&c, SP_PR_RB_HOOK_CALL, 1);
	ring_mark(&c, SP_PR_RUBY_CMETHOD_ENTRY, 2);
	ring_mark(&c, SP_PR_RUBY_CMETHOD_RETURN, 2);
	ring_mark(&c, SP_PR_RB_HOOK_CALL, -2147483647 - 1);
	ring_mark(&c, SP_PR_RB_HOOK_RETURN, -2147483647 - 1);
	ring_mark(&c, SP_PR_RB_HOOK_RETURN, 1);
	CHECK_EQ_U(emitted, 6);
	CHECK_EQ_U(c.orphans, 0);
	CHECK_EQ_U(c.spans, 6);
	CHECK_EQ_U(c.boot_frames, 3);
	/* flagged so on a stop: not a mark */
	ring_mark(&c, SP_PR_RB_HOOK_RETURN | SP_RING_BOOT, 1);
	CHECK_EQ_U(emitted, 6);
	CHECK_EQ_U(c.rings.bad, 1);
	ctx_close(&c);
}

/* A chain of n processes, each the child of the one before, the first in
 * a process group of its own: their pids into chain[], the first's
 * returned (-1 when it could not be made). */
static pid_t fork_chain(uint32_t *chain, unsigned int n)
{
	int fds[2];
	unsigned int i;
	pid_t first;

	if (pipe(fds))
		return -1;
	first = fork();
	if (first == 0) {
		setpgid(0, 0);
		close(fds[0]);
		for (i = 0; i < n; i++) {
			uint32_t me = (uint32_t)getpid();

			if (write(fds[1], &me, sizeof(me)) != sizeof(me))
				_exit(1);
			if (i + 1 < n && fork() != 0)
				break;	/* the parent waits; the child goes on */
		}
		close(fds[1]);
		pause();
		_exit(0);
	}
	close(fds[1]);
	for (i = 0; first > 0 && i < n; i++)
		if (read(fds[0], &chain[i], sizeof(chain[i])) != sizeof(chain[i]))
			break;
	close(fds[0]);
	return first > 0 && i == n ? first : -1;
}

/*
 * -p: the processes a -p one started before the attach are tracked, found
 * breadth first (the walk no longer recurses, a few kB of stack a
 * generation, as deep as the tree's user made it): a chain of
 * SP_TEST_CHAIN processes, every one of them followed. (Each takes ld.so's
 * probe, whose detach waits for the kernel: a few, not thousands.)
 */
#define SP_TEST_CHAIN	48
static void test_bpf_spans_seed_descendants(void)
{
	struct sp_spans_opts o = { .modes = SP_SPANS_PYTHON };
	int emitted = 0;
	struct sp_emit out = { .emit = count_emit, .ctx = &emitted };
	static uint32_t chain[SP_TEST_CHAIN];
	unsigned int i, tracked = 0;
	struct bs_ctx c;
	pid_t first;

	if (!ctx_open(&c, &o, &out))
		return;
	first = fork_chain(chain, SP_TEST_CHAIN);
	CHECK(first > 0);
	if (first > 0) {
		c.pids = chain;
		c.npids = 1;
		CHECK(sp_bs_seed(&c, chain[0], "/nonexistent", false, true) == 0);
		CHECK(sp_bs_seed_descendants(&c, "/nonexistent") == 0);
		for (i = 0; i < SP_TEST_CHAIN; i++)
			tracked += bpf_tracked(&c, chain[i]);
		CHECK_EQ_U(tracked, SP_TEST_CHAIN);
		kill(-first, SIGKILL);
		waitpid(first, NULL, 0);
	}
	c.pids = NULL;
	ctx_close(&c);
}

/* The tracefs answer (bpf_spans_load.c) is the kernel BTF's, which it
 * stands in for: tp_btf/sched_prepare_exec loads if and only if the
 * kernel's BTF has the tracepoint. */
static void test_bpf_spans_has_prepare_exec(void)
{
	bool btf = libbpf_find_vmlinux_btf_id("sched_prepare_exec", BPF_TRACE_RAW_TP) >= 0;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("# skipped: no kernel BTF\n");
		return;
	}
	if (access("/sys/kernel/tracing/events/sched", F_OK) &&
	    access("/sys/kernel/debug/tracing/events/sched", F_OK))
		printf("# tracefs not visible: the BTF answers both\n");
	CHECK(sp_bs_has_prepare_exec() == btf);
}

int main(void)
{
	TAP_RUN(test_bpf_spans_parse_list);
	TAP_RUN(test_bpf_spans_all_rule);
	TAP_RUN(test_bpf_spans_all_take);
	TAP_RUN(test_bpf_spans_boot_frames);
	TAP_RUN(test_bpf_spans_seed_descendants);
	TAP_RUN(test_bpf_spans_split_func);
	TAP_RUN(test_bpf_spans_elf_providers);
	TAP_RUN(test_bpf_spans_runtime_libs);
	TAP_RUN(test_bpf_spans_needed_libs_runtime_first);
	TAP_RUN(test_bpf_spans_runtime_version);
	TAP_RUN(test_bpf_spans_setup_env);
	TAP_RUN(test_bpf_spans_usdt_parse_args);
	TAP_RUN(test_bpf_spans_file_has_probes);
	TAP_RUN(test_bpf_spans_usdt_full_counted);
	TAP_RUN(test_bpf_spans_roots_sweep);
	TAP_RUN(test_bpf_spans_locs_collected);
	TAP_RUN(test_bpf_spans_maps_line_hook);
	TAP_RUN(test_bpf_spans_has_prepare_exec);
	return TAP_DONE();
}
