// SPDX-License-Identifier: MIT
/*
 * A source's ksym records (ksym_writer.h): the kernel's table, from the
 * per-boot cache or read on a thread, and a fresh read for what the cache
 * cannot name; the reads shared by the sources of a recording.
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

/* The reads under way or held, [0] the first, [1] the fresh one. */
static struct sp_ksym_read *reads[2];

static void *do_read(void *arg)
{
	struct sp_ksym_read *r = arg;
	char *dir = r->first ? sp_cache_dir(NULL) : NULL;	/* the parsed kallsyms of this boot */

	if (r->first)
		r->err = sp_kallsyms_load_cached(&r->tab, dir) ? errno : 0;
	else
		r->err = sp_kallsyms_load(&r->tab, NULL) ? errno : 0;
	free(dir);
	return NULL;
}

/* The read of that kind under way or held, or a new one begun. */
static struct sp_ksym_read *read_begin(bool first)
{
	struct sp_ksym_read *r = reads[!first];

	if (r) {
		r->users++;
		return r;
	}
	r = sp_xcalloc(1, sizeof(*r));
	r->first = first;
	r->users = 1;
	if (pthread_create(&r->thread, NULL, do_read, r) == 0)
		r->thread_run = true;
	else
		do_read(r);
	reads[!first] = r;
	return r;
}

/* r's table, once read (its error in r->err). */
static const struct sp_kallsyms *read_wait(struct sp_ksym_read *r)
{
	if (r->thread_run) {
		pthread_join(r->thread, NULL);
		r->thread_run = false;
	}
	return &r->tab;
}

static void read_put(struct sp_ksym_read *r)
{
	if (!r || --r->users)
		return;
	read_wait(r);
	if (reads[!r->first] == r)
		reads[!r->first] = NULL;
	sp_kallsyms_release(&r->tab);
	free(r);
}

void sp_ksym_writer_start(struct sp_ksym_writer *k, bool fresh_now)
{
	char *dir = sp_cache_dir(NULL);

	k->started = true;
	if (sp_kallsyms_open_cache(&k->tab, dir) == 0) {
		if (fresh_now)
			sp_ksym_writer_fresh(k);
	} else {
		k->first = read_begin(true);
	}
	free(dir);
}

void sp_ksym_writer_fresh(struct sp_ksym_writer *k)
{
	/* (the first read is fresh: no second one) */
	if (!k->started || k->first || !k->tab.from_cache || k->fresh)
		return;
	k->fresh = read_begin(false);
}

/*
 * The table that can name addr, waiting for one still being read: the
 * first read of this boot, or, for an address outside the cached vmlinux
 * text, a fresh read, once per recording. NULL when there is none.
 */
static const struct sp_kallsyms *table_for(struct sp_ksym_writer *k, uint64_t addr)
{
	const struct sp_kallsyms *t;

	if (k->first) {
		t = read_wait(k->first);
		k->err = k->first->err;
		return k->err || t->zero || !t->n ? NULL : t;
	}
	if (k->tab.zero || !k->tab.n)
		return NULL;
	if (k->fresh_ok)
		return &k->fresh->tab;
	if (sp_kallsyms_in_text(&k->tab, addr))
		return &k->tab;
	if (k->fresh_err)
		return NULL;	/* (the cache still names vmlinux's frames) */
	if (!k->fresh)
		k->fresh = read_begin(false);
	t = read_wait(k->fresh);
	k->fresh_err = k->fresh->err ? k->fresh->err :
		       t->zero || !t->n ? EPERM : 0;	/* no addresses now (kptr_restrict) */
	k->fresh_ok = !k->fresh_err;
	return k->fresh_ok ? t : NULL;
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
	const struct sp_kallsyms *t = &k->tab;

	if (!k->missing || !k->started || k->warned)
		return;
	k->warned = true;
	if (k->first) {	/* (joined at the first miss already) */
		t = read_wait(k->first);
		k->err = k->first->err;
	}
	if (k->err || t->zero || !t->n) {
		if (!table_said)
			sp_warn("kernel symbols not recorded: /proc/kallsyms %s",
				t->zero ? "shows no addresses" :
				k->err ? strerror(k->err) : "was not read");
		table_said = true;
	} else if (k->fresh_err)
		sp_warn("%" PRIu64 " kernel frames of %s outside the kernel's text got no symbol: "
			"/proc/kallsyms could not be read again (%s)", k->missing, what,
			strerror(k->fresh_err));
	else
		/* the table was read (again) and lacks them: code unloaded
		 * before the read (a module, a BPF program), or not kernel
		 * code at all; no read failed (a fresh read begun and never
		 * needed is no one's concern) */
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
	read_put(k->first);
	read_put(k->fresh);
	k->first = k->fresh = NULL;
	k->fresh_ok = false;
	sp_kallsyms_release(&k->tab);
	sp_u64map_release(&k->written);
}
