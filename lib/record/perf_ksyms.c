// SPDX-License-Identifier: MIT
/*
 * The perf source's kernel symbols (perf_sourceP.h): a ksym record for
 * each kernel function its kernel frames land in, always written before
 * the frame that needs it, so that every reader (a streaming symbolizer,
 * another machine) can name them. The table is this boot's cache
 * (kallsyms.c), mapped at start, or /proc/kallsyms read by a thread while
 * the command starts; a cached table is exact for vmlinux only, so the
 * first frame outside its text waits for a fresh read (begun at start for
 * -a, and when interpreters are followed). A frame whose table is still being read waits for it: a record
 * never depends on a later one.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_sourceP.h"
#include "safefile.h"
#include "sp.h"

static void *load_kallsyms(void *arg)
{
	struct perf *p = arg;
	char *dir = sp_cache_dir(NULL);	/* the parsed kallsyms of this boot */

	p->ksyms_err = sp_kallsyms_load_cached(&p->ksyms, dir) ? errno : 0;
	free(dir);
	__atomic_store_n(&p->ksyms_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *load_fresh(void *arg)
{
	struct perf *p = arg;

	p->fresh_err = sp_kallsyms_load(&p->fresh, NULL) ? errno : 0;
	__atomic_store_n(&p->fresh_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The table that can name addr, waiting for one still being read: the
 * first read of this boot, or, for an address outside the cached vmlinux
 * text (kernel modules, BPF programs), a fresh read, once per recording.
 * NULL when there is none.
 */
static const struct sp_kallsyms *table_for(struct perf *p, uint64_t addr)
{
	if (p->ksyms_started) {
		pthread_join(p->ksyms_thread, NULL);
		p->ksyms_started = false;
	}
	if (p->ksyms_err || p->ksyms.zero || !p->ksyms.n)
		return NULL;
	if (!p->ksyms.from_cache || sp_kallsyms_in_text(&p->ksyms, addr))
		return &p->ksyms;
	if (!__atomic_load_n(&p->fresh_done, __ATOMIC_ACQUIRE) || p->fresh_started) {
		if (p->fresh_started)
			pthread_join(p->fresh_thread, NULL);
		else
			load_fresh(p);
		p->fresh_started = false;
		if (p->fresh_err) {
			sp_kallsyms_release(&p->fresh);
		} else {
			sp_kallsyms_release(&p->ksyms);
			p->ksyms = p->fresh;
			memset(&p->fresh, 0, sizeof(p->fresh));
		}
	}
	return p->ksyms.from_cache ? NULL : &p->ksyms;
}

/*
 * The ksym record of the kernel function holding addr, written straight
 * to the writer (a ksym has no time) before the frame that needs it, so
 * that every reader, a streaming sp-symbolize included, has it when the
 * frame comes. Called for each new kernel frame before it is interned.
 */
void sp_perf_ksym(struct perf *p, uint64_t addr)
{
	struct sp_record r = { .kind = SP_REC_KSYM };
	const struct sp_kallsyms *t;
	const struct sp_kallsym *k;
	uint64_t size;

	if (!p->ksyms_wanted)
		return;
	t = table_for(p, addr);
	k = t ? sp_kallsyms_find(t, addr, &size) : NULL;
	if (!k) {
		p->ksym_missing++;
		return;
	}
	if (sp_perf_map_get(&p->ksym_written, k->addr, 0))
		return;
	sp_perf_map_put(&p->ksym_written, k->addr, 0, 1);
	r.ksym.addr = k->addr;
	r.ksym.size = size;
	r.ksym.name = sp_writer_strz(p->out->w, sp_kallsyms_str(t, k->name));
	r.ksym.kmod = k->kmod ? sp_writer_strz(p->out->w, sp_kallsyms_str(t, k->kmod)) : 0;
	sp_writer_put(p->out->w, &r);
}

/* At the end: say once when kernel frames went without a symbol. */
void sp_perf_ksyms_finish(struct perf *p)
{
	if (!p->ksym_missing || !p->ksyms_wanted || p->ksym_warned)
		return;
	p->ksym_warned = true;
	if (p->ksyms_err || p->ksyms.zero || !p->ksyms.n)
		sp_warn("kernel symbols not recorded: /proc/kallsyms %s",
			p->ksyms.zero ? "shows no addresses" :
			p->ksyms_err ? strerror(p->ksyms_err) : "was not read");
	else if (p->fresh_err)
		sp_warn("%" PRIu64 " kernel frames outside the kernel's text got no symbol: "
			"/proc/kallsyms could not be read again (%s)", p->ksym_missing,
			strerror(p->fresh_err));
	else
		/* the table was read (again) and lacks them: code unloaded
		 * before the read (a module, a BPF program), or not kernel
		 * code at all; no read failed */
		sp_warn("%" PRIu64 " kernel frames got no symbol: /proc/kallsyms has none at "
			"their addresses (code unloaded before it was read, or not kernel "
			"code)", p->ksym_missing);
}

void sp_perf_ksyms_start(struct perf *p)
{
	char *dir = sp_cache_dir(NULL);

	p->ksyms_wanted = true;
	if (sp_kallsyms_open_cache(&p->ksyms, dir) == 0) {
		__atomic_store_n(&p->ksyms_done, 1, __ATOMIC_RELEASE);
		/* The whole machine surely runs module code: read it meanwhile.
		 * So when interpreters are followed: a read at the first module
		 * frame stalls the loop for long (tens of ms), and the code
		 * objects their stacks name must be read before they are freed:
		 * with -p, or a command that runs Python or Ruby (interp_cmd.c).
		 * Another command only once one is followed (sp_perf_ksyms_poll()):
		 * the read costs some 80 ms of CPU, more than the rest of a short
		 * command's recording. */
		bool interp = p->o.interp != SP_INTERP_NONE;

		if (!p->system_wide && interp && p->o.enable_on_exec &&
		    !sp_interp_command_interp(p->o.command))
			p->fresh_at_interp = true;
		else if ((p->system_wide || interp) &&
			 pthread_create(&p->fresh_thread, NULL, load_fresh, p) == 0)
			p->fresh_started = true;
	} else if (pthread_create(&p->ksyms_thread, NULL, load_kallsyms, p) == 0)
		p->ksyms_started = true;
	else
		load_kallsyms(p);
	free(dir);
}

void sp_perf_ksyms_poll(struct perf *p)
{
	if (!p->fresh_at_interp || !p->interp || !sp_interp_following(p->interp))
		return;
	p->fresh_at_interp = false;
	if (!p->fresh_started && !__atomic_load_n(&p->fresh_done, __ATOMIC_ACQUIRE) &&
	    pthread_create(&p->fresh_thread, NULL, load_fresh, p) == 0)
		p->fresh_started = true;
}

void sp_perf_ksyms_release(struct perf *p)
{
	if (p->ksyms_started)
		pthread_join(p->ksyms_thread, NULL);
	if (p->fresh_started)
		pthread_join(p->fresh_thread, NULL);
	sp_kallsyms_release(&p->ksyms);
	sp_kallsyms_release(&p->fresh);
	sp_perf_map_free(&p->ksym_written);
}
