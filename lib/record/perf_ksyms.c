// SPDX-License-Identifier: MIT
/*
 * The perf source's kernel symbols (perf_sourceP.h): a ksym record for
 * each kernel function its kernel frames land in, written before the
 * frame that needs it (ksym_writer.h). What is the perf source's own is
 * when the fresh read of module and BPF symbols begins.
 */
#include "perf_sourceP.h"

void sp_perf_ksyms_start(struct perf *p)
{
	/* The whole machine surely runs module code: read it meanwhile. So
	 * when interpreters are followed: a read at the first module frame
	 * stalls the loop for long (tens of ms), and the code objects their
	 * stacks name must be read before they are freed: with -p, or a
	 * command that runs Python or Ruby (interp_cmd.c). Another command
	 * only once one is followed (sp_perf_ksyms_poll()): the read costs
	 * some 80 ms of CPU, more than the rest of a short command's
	 * recording. */
	bool interp = p->o.interp != SP_INTERP_NONE;
	bool at_interp = !p->system_wide && interp && p->o.enable_on_exec &&
			 !sp_interp_command_interp(p->o.command);

	sp_ksym_writer_start(&p->ksyms, !at_interp && (p->system_wide || interp));
	p->fresh_at_interp = at_interp;
}

void sp_perf_ksyms_poll(struct perf *p)
{
	if (!p->fresh_at_interp || !p->interp || !sp_interp_following(p->interp))
		return;
	p->fresh_at_interp = false;
	sp_ksym_writer_fresh(&p->ksyms);
}

void sp_perf_ksym(struct perf *p, uint64_t addr)
{
	sp_ksym_writer_put(&p->ksyms, p->out->w, addr);
}

void sp_perf_ksyms_finish(struct perf *p)
{
	sp_ksym_writer_finish(&p->ksyms, "samples");
}

void sp_perf_ksyms_release(struct perf *p)
{
	sp_ksym_writer_release(&p->ksyms);
}
