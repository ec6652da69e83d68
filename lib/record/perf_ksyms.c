// SPDX-License-Identifier: MIT
/*
 * The perf source's kernel symbols (perf_sourceP.h): a ksym record for
 * each kernel function its kernel frames land in, written before the frame
 * that needs it, so that a streaming symbolizer (and another machine) can
 * name them. The table is this boot's cache (kallsyms.c), mapped at start,
 * or /proc/kallsyms read by a thread; a cached table is exact for vmlinux
 * only, so a frame outside its text waits for a fresh read, also in the
 * background.
 */
#include <errno.h>
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

static void use_fresh(struct perf *p)
{
	sp_kallsyms_release(&p->ksyms);
	p->ksyms = p->fresh;
	p->ksyms_err = p->fresh_err;
	memset(&p->fresh, 0, sizeof(p->fresh));
}

/* Written straight to the writer (a ksym has no time), so that it comes
 * before the frame that needs it and a streaming symbolizer can use it. */
static void put_ksym(struct perf *p, uint64_t addr)
{
	struct sp_record r = { .kind = SP_REC_KSYM };
	const struct sp_kallsym *k;
	uint64_t size;

	k = sp_kallsyms_find(&p->ksyms, addr, &size);
	if (!k || sp_perf_map_get(&p->ksym_written, k->addr, 0))
		return;
	sp_perf_map_put(&p->ksym_written, k->addr, 0, 1);
	r.ksym.addr = k->addr;
	r.ksym.size = size;
	r.ksym.name = sp_writer_strz(p->out->w, sp_kallsyms_str(&p->ksyms, k->name));
	r.ksym.kmod = k->kmod ? sp_writer_strz(p->out->w, sp_kallsyms_str(&p->ksyms, k->kmod)) : 0;
	sp_writer_put(p->out->w, &r);
}

/*
 * Write the ksyms of the kernel frames seen so far that the table can
 * answer for. A cached table is exact for vmlinux only (modules and BPF
 * programs come and go): a frame outside its text waits for a fresh read.
 * final: wait for whatever is still loading.
 */
void sp_perf_resolve_ksyms(struct perf *p, bool final)
{
	uint64_t a;

	if (!p->ksyms_wanted || p->kresolved == p->nkaddrs)
		goto out;
	if (final && p->ksyms_started) {
		pthread_join(p->ksyms_thread, NULL);
		p->ksyms_started = false;
	}
	if (!__atomic_load_n(&p->ksyms_done, __ATOMIC_ACQUIRE) || p->ksyms_err || p->ksyms.zero)
		goto out;
	if (p->fresh_started && (final || __atomic_load_n(&p->fresh_done, __ATOMIC_ACQUIRE))) {
		pthread_join(p->fresh_thread, NULL);
		p->fresh_started = false;
		use_fresh(p);
		if (p->ksyms_err)
			goto out;
	}
	while (p->kresolved < p->nkaddrs) {
		a = p->kaddrs[p->kresolved];
		if (p->ksyms.from_cache && !sp_kallsyms_in_text(&p->ksyms, a)) {
			if (final) {
				p->fresh_err = sp_kallsyms_load(&p->fresh, NULL) ? errno : 0;
				use_fresh(p);
				if (p->ksyms_err)
					goto out;
				continue;
			}
			if (!p->fresh_started &&
			    pthread_create(&p->fresh_thread, NULL, load_fresh, p) == 0)
				p->fresh_started = true;
			return;
		}
		put_ksym(p, a);
		p->kresolved++;
	}
out:
	if (final && p->kresolved < p->nkaddrs && p->ksyms_wanted && !p->ksym_warned) {
		p->ksym_warned = true;
		sp_warn("kernel symbols not recorded: /proc/kallsyms %s",
			p->ksyms.zero ? "shows no addresses" :
			p->ksyms_err ? strerror(p->ksyms_err) : "was not read");
	}
}

void sp_perf_ksyms_start(struct perf *p)
{
	char *dir = sp_cache_dir(NULL);

	p->ksyms_wanted = true;
	if (sp_kallsyms_open_cache(&p->ksyms, dir) == 0)
		__atomic_store_n(&p->ksyms_done, 1, __ATOMIC_RELEASE);
	else if (pthread_create(&p->ksyms_thread, NULL, load_kallsyms, p) == 0)
		p->ksyms_started = true;
	else
		load_kallsyms(p);
	free(dir);
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
