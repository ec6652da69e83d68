// SPDX-License-Identifier: MIT
/* Unit tests of the spans source's helpers (lib/record/bpf_spans_*.c):
 * option words, --span-func specs, USDT providers as span modes, runtime
 * libraries and versions, the activators' environment, USDT operands, which
 * commands have probes. The notes themselves: tests/unit/test-usdt.c; the
 * recording is tested for real in tests/sp-record-spans.bats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "bpf_spans.h"
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
	/* C-method spans and audit events need no activator */
	o.modes = SP_SPANS_RUBY_C | SP_SPANS_PY_AUDIT;
	unsetenv("RUBYOPT");
	CHECK(!sp_spans_setup_env(&o));
	CHECK(getenv("RUBYOPT") == NULL);
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
	struct bs_ctx c;
	struct bs_proc a, b;

	memset(&c, 0, sizeof(c));
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.pid = 100;
	b.pid = 101;
	c.usdt_live = 512;	/* SP_SPANS_USDT_LIVE: all wait to be detached */
	CHECK(sp_bs_attach_usdt_how(&c, &a, NULL, "/bin/x", "python", "function__entry", 0,
				    false) == -1);
	CHECK(sp_bs_attach_usdt_how(&c, &a, NULL, "/bin/x", "python", "function__return", 1,
				    false) == -1);
	CHECK(sp_bs_attach_usdt_how(&c, &b, NULL, "/bin/x", "python", "function__entry", 0,
				    true) == -1);
	CHECK(c.usdt_full);
	CHECK_EQ_U(c.unprobed, 2);
}

int main(void)
{
	TAP_RUN(test_bpf_spans_parse_list);
	TAP_RUN(test_bpf_spans_split_func);
	TAP_RUN(test_bpf_spans_elf_providers);
	TAP_RUN(test_bpf_spans_runtime_libs);
	TAP_RUN(test_bpf_spans_runtime_version);
	TAP_RUN(test_bpf_spans_setup_env);
	TAP_RUN(test_bpf_spans_usdt_parse_args);
	TAP_RUN(test_bpf_spans_file_has_probes);
	TAP_RUN(test_bpf_spans_usdt_full_counted);
	return TAP_DONE();
}
