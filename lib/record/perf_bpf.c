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

#include "perf_sourceP.h"
#include "proc_identity.h"
#include "sp.h"

/*
 * libbpf has one printer for the process, and each loader swaps in its
 * own for its load and back: with loads on two threads, either may be
 * left in place. One that says nothing below -v, put in before the thread
 * starts, makes whichever is left say nothing below -v, as each of them
 * does.
 */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (sp_verbose < 1 || (level == LIBBPF_DEBUG && sp_verbose < 2))
		return 0;
	sp_vmessage(fmt, ap);
	return 0;
}

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
	/* A command that runs Ruby: its walkers load meanwhile, on a thread
	 * of their own, and are awaited before it runs (perf_start()). So for
	 * any other command but Python's, which may start a Ruby at once (sh
	 * -c, make, a test runner): loaded once that Ruby was found, its first
	 * half second or more had no interpreted stacks on a loaded machine
	 * (`sh -c 'gem list'`: 353 of 368 samples; not awaited, 146-217). */
	if (p->interp && p->o.interp != SP_INTERP_PYTHON && p->o.enable_on_exec &&
	    !p->cmd_python)
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
	p->cmd_ruby = p->o.enable_on_exec && p->o.command &&
		      sp_interp_command_ruby(p->o.command);
	p->cmd_python = p->o.enable_on_exec && p->o.command && !p->cmd_ruby &&
			sp_interp_command_interp(p->o.command);
	sp_interp_layouts_env();
	if (geteuid() != 0)
		return;	/* perf_start() loads them (and says why it cannot) */
	libbpf_set_print(libbpf_print);
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
