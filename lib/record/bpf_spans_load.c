// SPDX-License-Identifier: MIT
/*
 * Loading the spans source's BPF object (bpf/spans.bpf.c, bpf_spansP.h):
 * whether this process may, the load itself (about 0.2 s, most of it
 * libbpf parsing the kernel's BTF), and the preload: a thread that the
 * source's creation starts, so that the load overlaps the rest of
 * sp-record's start-up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "tracefs.h"
#include "bpf_print.h"
#include "bpf_spansP.h"
#include "sp.h"

/* Whether this process may load tracing BPF programs: CAP_BPF and
 * CAP_PERFMON, or CAP_SYS_ADMIN, in the effective set. */
bool sp_bs_may_bpf(void)
{
	static int cached = -1;
	unsigned long long eff = 0;
	char line[256];
	FILE *f;

	if (cached >= 0)
		return cached;
	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7))
			eff = strtoull(line + 7, NULL, 16);
	if (f)
		fclose(f);
	cached = (eff >> 21 & 1) || ((eff >> 38 & 1) && (eff >> 39 & 1));
	return cached;
}

#define SP_TRACEFS_MAGIC	0x74726163	/* linux/magic.h */
#define SP_DEBUGFS_MAGIC	0x64626720

/* Whether dir is on tracefs (or, where debugfs may stand for it, on
 * debugfs, whose tracing/ is tracefs mounted on its own): any other file
 * system mounted on the path could say what it likes. */
static bool on_tracefs(const char *dir, bool debugfs)
{
	struct statfs fs;

	return !statfs(dir, &fs) && ((unsigned long)fs.f_type == SP_TRACEFS_MAGIC ||
				     (debugfs && (unsigned long)fs.f_type == SP_DEBUGFS_MAGIC));
}

/* 1 or 0 when a tracefs says whether sched_prepare_exec exists, else -1. */
static int prepare_exec_in_tracefs(void)
{
	static const struct {
		const char *dir;
		bool debugfs;
	} sched[] = {
		{"/sys/kernel/tracing/events/sched", false},
		{"/sys/kernel/debug/tracing/events/sched", true},
	};
	char path[96];
	size_t i;

	for (i = 0; i < sizeof(sched) / sizeof(sched[0]); i++) {
		if (!on_tracefs(sched[i].dir, sched[i].debugfs))
			continue;	/* not mounted there, or not tracefs */
		snprintf(path, sizeof(path), "%s/sched_prepare_exec", sched[i].dir);
		if (!access(path, F_OK))
			return 1;
		/* unless tracefs went meanwhile (someone else's, unmounted) */
		if (on_tracefs(sched[i].dir, sched[i].debugfs))
			return 0;
	}
	return -1;
}

/* Whether the kernel has the sched_prepare_exec tracepoint. Tracefs says
 * so in a few microseconds (held meanwhile, mounted when it is not:
 * tracefs.h); only where it cannot be had is the kernel's BTF searched, a
 * parse of its own (tens of milliseconds of CPU, on top of the one
 * sp_spans__load() makes). */
bool sp_bs_has_prepare_exec(void)
{
	bool held = sp_tracefs_hold(NULL);
	int found = prepare_exec_in_tracefs();

	if (held)
		sp_tracefs_release();
	if (found >= 0)
		return found;
	return libbpf_find_vmlinux_btf_id("sched_prepare_exec", BPF_TRACE_RAW_TP) >= 0;
}

/*
 * Open, load and attach (the fork/exec/exit hooks) the BPF object: about
 * 0.2 s here, most of it libbpf parsing the kernel's BTF. The source's
 * creation starts it in a thread (preload), before sp-record sets up the
 * rest, so it runs while the other sources load theirs.
 */
struct sp_spans *sp_bs_load_skel(char *why, size_t size)
{
	struct sp_spans *sk;
	int err;

	sp_bpf_print_init();
	sk = sp_spans__open();
	if (!sk) {
		snprintf(why, size, "cannot open the BPF program: %s", strerror(errno));
		return NULL;
	}
	/* uprobe_multi programs: an attach type libbpf 1.1 has no section for */
	bpf_program__set_expected_attach_type(sk->progs.on_marker_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_ruby_method_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_ruby_raise_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_py_function_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_py_audit_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_sp_span_any_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_dl_state_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	/* sched_prepare_exec: Linux 6.10 and later */
	if (!sp_bs_has_prepare_exec())
		bpf_program__set_autoload(sk->progs.on_prepare_exec, false);
	if ((err = sp_spans__load(sk)))
		snprintf(why, size, "cannot load the BPF program: %s", strerror(-err));
	else if ((err = sp_spans__attach(sk)))	/* fork, exec, exit tracepoints */
		snprintf(why, size, "cannot attach the process tracepoints: %s", strerror(-err));
	if (err) {
		sp_spans__destroy(sk);
		return NULL;
	}
	return sk;
}

/* The preload: one per process (sp-record records with one spans source). */
static struct {
	pthread_t th;
	bool on;
	int efd;		/* written once loaded (or failed) */
	int done;		/* atomic */
	struct sp_spans *skel;
	char why[256];
} preload = { .efd = -1 };

static void *preload_main(void *arg)
{
	uint64_t one = 1;

	(void)arg;
	preload.skel = sp_bs_load_skel(preload.why, sizeof(preload.why));
	__atomic_store_n(&preload.done, 1, __ATOMIC_RELEASE);
	if (write(preload.efd, &one, sizeof(one)) < 0)
		return NULL;
	return NULL;
}

bool sp_bs_preload_running(void)
{
	return preload.on;
}

bool sp_bs_preload_ready(void)
{
	return __atomic_load_n(&preload.done, __ATOMIC_ACQUIRE);
}

/* The eventfd the preload writes when it is done (made now if need be), or -1. */
int sp_bs_preload_fd(void)
{
	if (preload.efd < 0)
		preload.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return preload.efd;
}

/* Start loading in a thread, unless the options ask for nothing, BPF is
 * not allowed, or (now false) it is --spans=auto for a command that is no
 * runtime: then start() defers the load. */
void sp_bs_preload_start(const struct sp_spans_opts *o, bool now)
{
	if (preload.on || (!o->modes && !o->nfuncs) || !sp_bs_may_bpf())
		return;
	if (!now && !o->explicit_modes && !o->nfuncs && !sp_bs_command_has_probes(o))
		return;
	if (sp_bs_preload_fd() < 0)
		return;
	preload.on = !pthread_create(&preload.th, NULL, preload_main, NULL);
}

/* The preloaded object (NULL and why set if it failed), or a fresh load. */
struct sp_spans *sp_bs_preload_take(char *why, size_t size)
{
	struct sp_spans *sk;

	if (!preload.on)
		return sp_bs_load_skel(why, size);
	pthread_join(preload.th, NULL);
	preload.on = false;
	sk = preload.skel;
	preload.skel = NULL;
	if (!sk)
		snprintf(why, size, "%s", preload.why);
	return sk;
}
