// SPDX-License-Identifier: MIT
/*
 * The perf source's BPF objects: the identity hooks (bpf_ident.c) and the
 * interpreted-stack walkers (interp.c), loaded on a thread from the
 * source's creation on, while sp-record loads the events source's object
 * on its own: the verifier and libbpf's parse of the kernel's BTF take
 * most of sp-record's start-up, and with two CPUs the two loads
 * overlap. perf_start() awaits the thread before it opens the
 * events (it needs both objects then). Without BPF (not root), or when
 * no thread can be made, they load in perf_start() as before.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bpf_print.h"
#include "perf_sourceP.h"
#include "proc_identity.h"
#include "sp.h"

static void *load(void *arg)
{
	struct perf *p = arg;

	sp_perf_bpf_load(p);
	return NULL;
}

void sp_perf_bpf_load(struct perf *p)
{
	p->ident = sp_ident_bpf_open();	/* before the events: no fork missed */
	/* Without samples (--no-samples: the dummy event), interpreters are
	 * still followed from the mappings, for the stacks of kernel events
	 * and off-CPU samples; with neither, there is nothing to walk for. */
	if (!p->sideband || !p->o.interp_no_events || !p->o.interp_no_offcpu)
		p->interp = sp_interp_new(p->o.interp,
					 (p->o.interp_no_offcpu ? 0 : SP_INTERP_USE_OFFCPU) |
					 (p->o.interp_no_events ? 0 : SP_INTERP_USE_EVENTS) |
					 (p->sideband ? SP_INTERP_NO_SAMPLES : 0) |
					 SP_INTERP_RUBY_LATER);	/* NULL: native stacks only */
	/* A command whose Rubies get the walkers before it runs: they load
	 * meanwhile, on a thread of their own, and are awaited before it runs
	 * (perf_start(); the rule: sp_interp_ruby_first()). -p's processes
	 * are looked at there. */
	if (p->interp && sp_interp_ruby_first(p->o.interp, p->cmd_kind, false, NULL, 0, NULL))
		sp_interp_ruby(p->interp, false);
}

/*
 * What the load reads of the environment is read here, before the thread:
 * the main thread sets the command's environment (the spans' prepare_env)
 * while the thread runs, and a getenv() beside a setenv() may read an
 * environ array being freed (PATH for the command's lookup, the layouts'
 * SP_INTERP_DROP).
 */
void sp_perf_bpf_start(struct perf *p)
{
	p->cmd_kind = sp_interp_command_kind(p->o.enable_on_exec ? p->o.command : NULL);
	sp_interp_layouts_env();
	if (geteuid() != 0)
		return;	/* perf_start() loads them (and says why it cannot) */
	sp_bpf_print_init();	/* libbpf's printer, one for all threads: bpf_print.h */
	p->bpf_started = !pthread_create(&p->bpf_thread, NULL, load, p);
}

void sp_perf_bpf_wait(struct perf *p)
{
	if (p->bpf_started) {
		pthread_join(p->bpf_thread, NULL);
		p->bpf_started = false;
		p->bpf_loaded = true;
	}
	if (!p->bpf_loaded)
		sp_perf_bpf_load(p);
	p->bpf_loaded = true;
}
