// SPDX-License-Identifier: MIT
/*
 * A source's ksym records (ksym_writer.h): the kernel's table, from the
 * per-boot cache or read on a thread, and a fresh read for what the cache
 * cannot name.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ksym_writer.h"
#include "safefile.h"
#include "sp.h"
#include "writer.h"

static void *load_first(void *arg)
{
	struct sp_ksym_writer *k = arg;
	char *dir = sp_cache_dir(NULL);	/* the parsed kallsyms of this boot */

	k->err = sp_kallsyms_load_cached(&k->tab, dir) ? errno : 0;
	free(dir);
	return NULL;
}

static void *load_fresh(void *arg)
{
	struct sp_ksym_writer *k = arg;

	k->fresh_err = sp_kallsyms_load(&k->fresh, NULL) ? errno : 0;
	__atomic_store_n(&k->fresh_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

void sp_ksym_writer_start(struct sp_ksym_writer *k, bool fresh_now)
{
	char *dir = sp_cache_dir(NULL);

	k->started = true;
	if (sp_kallsyms_open_cache(&k->tab, dir) == 0) {
		if (fresh_now)
			sp_ksym_writer_fresh(k);
	} else if (pthread_create(&k->thread, NULL, load_first, k) == 0) {
		k->thread_run = true;
	} else {
		load_first(k);
	}
	free(dir);
}

void sp_ksym_writer_fresh(struct sp_ksym_writer *k)
{
	/* (the first read under way, or done, is fresh: no second one; tab
	 * is read only once its thread is joined) */
	if (!k->started || k->thread_run || !k->tab.from_cache || k->fresh_run ||
	    __atomic_load_n(&k->fresh_done, __ATOMIC_ACQUIRE))
		return;
	if (pthread_create(&k->fresh_thread, NULL, load_fresh, k) == 0)
		k->fresh_run = true;
}

/*
 * The table that can name addr, waiting for one still being read: the
 * first read of this boot, or, for an address outside the cached vmlinux
 * text, a fresh read, once per recording. NULL when there is none.
 */
static const struct sp_kallsyms *table_for(struct sp_ksym_writer *k, uint64_t addr)
{
	if (k->thread_run) {
		pthread_join(k->thread, NULL);
		k->thread_run = false;
	}
	if (k->err || k->tab.zero || !k->tab.n)
		return NULL;
	if (!k->tab.from_cache || sp_kallsyms_in_text(&k->tab, addr))
		return &k->tab;
	if (k->fresh_run || !__atomic_load_n(&k->fresh_done, __ATOMIC_ACQUIRE)) {
		if (k->fresh_run)
			pthread_join(k->fresh_thread, NULL);
		else
			load_fresh(k);
		k->fresh_run = false;
		if (!k->fresh_err && (k->fresh.zero || !k->fresh.n))
			k->fresh_err = EPERM;	/* no addresses now (kptr_restrict) */
		if (k->fresh_err) {
			/* the cache still names vmlinux's frames */
			sp_kallsyms_release(&k->fresh);
		} else {
			sp_kallsyms_release(&k->tab);
			k->tab = k->fresh;
			memset(&k->fresh, 0, sizeof(k->fresh));
		}
	}
	return k->tab.from_cache ? NULL : &k->tab;
}

void sp_ksym_writer_put(struct sp_ksym_writer *k, struct sp_writer *w, uint64_t addr)
{
	struct sp_record r = { .kind = SP_REC_KSYM };
	const struct sp_kallsyms *t;
	const struct sp_kallsym *s;
	uint64_t size;

	if (!k->started)
		return;
	t = table_for(k, addr);
	s = t ? sp_kallsyms_find(t, addr, &size) : NULL;
	if (!s) {
		if (!sp_u64map_get(&k->written, addr)) {
			sp_u64map_put(&k->written, addr, 2);
			k->missing++;
		}
		return;
	}
	if (sp_u64map_get(&k->written, s->addr))
		return;
	sp_u64map_put(&k->written, s->addr, 1);
	r.ksym.addr = s->addr;
	r.ksym.size = size;
	r.ksym.name = sp_writer_strz(w, sp_kallsyms_str(t, s->name));
	r.ksym.kmod = s->kmod ? sp_writer_strz(w, sp_kallsyms_str(t, s->kmod)) : 0;
	sp_writer_put(w, &r);
}

/* Said once by whichever source says it first: it is the table's, not a
 * source's (the loop's thread only). */
static bool table_said;

void sp_ksym_writer_finish(struct sp_ksym_writer *k, const char *what)
{
	if (!k->missing || !k->started || k->warned)
		return;
	k->warned = true;
	if (k->thread_run) {	/* (not after a miss: it was joined then) */
		pthread_join(k->thread, NULL);
		k->thread_run = false;
	}
	if (k->fresh_run) {	/* begun, never needed: its error is no one's */
		pthread_join(k->fresh_thread, NULL);
		k->fresh_run = false;
		k->fresh_err = 0;
	}
	if (k->err || k->tab.zero || !k->tab.n) {
		if (!table_said)
			sp_warn("kernel symbols not recorded: /proc/kallsyms %s",
				k->tab.zero ? "shows no addresses" :
				k->err ? strerror(k->err) : "was not read");
		table_said = true;
	} else if (k->fresh_err)
		sp_warn("%" PRIu64 " kernel frames of %s outside the kernel's text got no symbol: "
			"/proc/kallsyms could not be read again (%s)", k->missing, what,
			strerror(k->fresh_err));
	else
		/* the table was read (again) and lacks them: code unloaded
		 * before the read (a module, a BPF program), or not kernel
		 * code at all; no read failed */
		sp_warn("%" PRIu64 " kernel frames of %s got no symbol: /proc/kallsyms has none at "
			"their addresses (code unloaded before it was read, or not kernel "
			"code)", k->missing, what);
}

bool sp_kernel_has_modules(void)
{
	char c;
	int fd = open("/proc/modules", O_RDONLY | O_CLOEXEC);
	bool any = fd >= 0 && read(fd, &c, 1) == 1;

	if (fd >= 0)
		close(fd);
	return any;
}

void sp_ksym_writer_release(struct sp_ksym_writer *k)
{
	if (k->thread_run)
		pthread_join(k->thread, NULL);
	if (k->fresh_run)
		pthread_join(k->fresh_thread, NULL);
	k->thread_run = k->fresh_run = false;
	sp_kallsyms_release(&k->tab);
	sp_kallsyms_release(&k->fresh);
	sp_u64map_release(&k->written);
}
