// SPDX-License-Identifier: MIT
/*
 * The symbolizer (symbolize.h, symbolize_priv.h): its life, and the
 * stream's modules, kernel and JIT symbols as they come. Modules that map
 * one file share its image (one build-id, one image, whatever the path);
 * an image is retired, its statistics kept, when its last module goes, and
 * a process's anonymous (JIT) memory and symbols with the process.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <libelf.h>

#include "sp.h"
#include "symbolize_priv.h"

struct sp_symbolizer *sp_symbolizer_new(const struct sp_symbolize_opts *opts)
{
	struct sp_symbolizer *s = sp_xcalloc(1, sizeof(*s));

	if (opts)
		s->o = *opts;
	if (!s->o.no_cache) {
		char *dir = s->o.cache_dir ? sp_xstrdup(s->o.cache_dir) : sp_symcache_default_dir();

		s->cache = dir ? sp_symcache_new(dir) : NULL;
		if (!s->o.no_debuginfod)
			s->dbgd = sp_dbgd_new(dir, s->o.debuginfod_timeout_ns, s->o.progress);
		free(dir);
	} else if (!s->o.no_debuginfod) {
		s->dbgd = sp_dbgd_new(NULL, s->o.debuginfod_timeout_ns, s->o.progress);
	}
	elf_version(EV_CURRENT);
	sp_symbolizer_reset(s, "");
	return s;
}

static void image_retire(struct sp_symbolizer *s, struct image *img)
{
	struct image **pp;
	struct retired *r;

	s->generation++;
	for (pp = &s->images; *pp; pp = &(*pp)->next) {
		if (*pp == img) {
			*pp = img->next;
			break;
		}
	}
	if (img->st.frames) {
		/* one entry per file however many processes mapped it in turn
		 * (a shell's every `env`): --stats prints one line per file */
		r = sp_sym_retired_of(s, img->path);
		if (r) {
			sp_sym_stats_add(&r->st, &img->st);
		} else {
			r = sp_xcalloc(1, sizeof(*r));
			r->path = img->path;
			img->path = NULL;
			r->st = img->st;
			r->next = s->retired;
			s->retired = r;
			if (r->path)
				sp_u64map_put(&s->retired_by_path,
					      sp_hash_bytes(r->path, strlen(r->path)),
					      (uint64_t)(uintptr_t)r);
		}
	}
	if (img->loaded && s->files_live)
		s->files_live--;
	sp_image_unload(img);
	free(img->path);
	free(img->loaded_from);
	if (img->root_fd >= 0)
		close(img->root_fd);
	free(img);
}

static bool same_identity(const struct image *img, const struct sp_module *m, const char *path,
			  bool anon)
{
	if (img->anon != anon || img->kernel)
		return false;
	if (anon)
		return img->pid == m->pid;
	/* One build-id, one image, whatever path it was mapped from
	 * (/lib/... and /usr/lib/... are often the same file). */
	if (m->build_id.len)
		return img->build_id_len == m->build_id.len &&
		       !memcmp(img->build_id, m->build_id.p, m->build_id.len);
	return !img->build_id_len && !strcmp(img->path, path) && img->dev == m->dev &&
	       img->ino == m->ino && img->size == m->size && img->mtime_ns == m->mtime_ns &&
	       (!img->vdso || img->pid == m->pid);
}

/* ---- streams, modules, retirement ---- */

void sp_symbolizer_reset(struct sp_symbolizer *s, const char *kernel_release)
{
	struct utsname u;
	size_t iter = 0;
	uint64_t k, v;

	while (s->images)
		image_retire(s, s->images);
	free(s->mods);
	s->mods = NULL;
	s->nmods = s->capmods = 0;
	sp_u64map_release(&s->pid_mods);
	while (sp_u64map_next(&s->jit, &iter, &k, &v))
		sp_symtab_free((struct sp_symtab *)(uintptr_t)v);
	sp_u64map_release(&s->jit);
	sp_symtab_free(s->ksyms);
	s->ksyms = NULL;
	s->generation++;
	snprintf(s->kernel_release, sizeof(s->kernel_release), "%s",
		 kernel_release ? kernel_release : "");
	s->same_kernel = !s->kernel_release[0] ||
			 (uname(&u) == 0 && !strcmp(u.release, s->kernel_release));
}

void sp_symbolizer_module(struct sp_symbolizer *s, const struct sp_module *m, const char *path)
{
	struct module_ent *me;
	struct image *img;
	bool kernel, anon;
	uint64_t *head;

	if (!m->id || m->id > (1u << 30))
		return;
	if (m->id >= s->capmods) {
		size_t old = s->capmods;

		sp_grow(&s->mods, &s->capmods, m->id + 1, sizeof(*s->mods));
		memset(s->mods + old, 0, (s->capmods - old) * sizeof(*s->mods));
	}
	if (m->id >= s->nmods)
		s->nmods = m->id + 1;
	me = &s->mods[m->id];
	if (me->live)
		return;		/* defined twice: keep the first */
	if (!path)
		path = "";
	kernel = (m->flags & SP_MOD_KERNEL) || m->pid == 0 || !strncmp(path, "[kernel", 7);
	anon = !kernel && ((m->flags & (SP_MOD_ANON | SP_MOD_JIT)) || !path[0] ||
			   !strncmp(path, "//anon", 6) || !strncmp(path, "[anon", 5) ||
			   !strcmp(path, "[heap]") || !strncmp(path, "[stack", 6));
	me->pid = m->pid;
	me->start = m->start;
	me->flags = m->flags;
	me->time = m->time;
	me->live = true;
	me->img = NULL;
	if (kernel)
		return;		/* kernel frames use the kernel symbols */
	for (img = s->images; img; img = img->next)
		if (same_identity(img, m, path, anon))
			break;
	if (!img) {
		img = sp_xcalloc(1, sizeof(*img));
		img->path = sp_xstrdup(path);
		img->build_id_len = m->build_id.len > SP_BUILD_ID_MAX ? SP_BUILD_ID_MAX :
				    m->build_id.len;
		if (img->build_id_len)
			memcpy(img->build_id, m->build_id.p, img->build_id_len);
		img->dev = m->dev;
		img->ino = m->ino;
		img->size = m->size;
		img->mtime_ns = m->mtime_ns;
		img->pid = m->pid;
		img->root_fd = -1;
		img->anon = anon;
		img->vdso = !strcmp(path, "[vdso]");
		img->sym = s;
		img->next = s->images;
		s->images = img;
	}
	if (++img->refs > 1)
		img->shared = true;
	me->img = img;
	head = sp_u64map_get(&s->pid_mods, m->pid);
	me->next_in_pid = head ? *head : 0;
	sp_u64map_put(&s->pid_mods, m->pid, m->id);
}

static void module_retire(struct sp_symbolizer *s, struct module_ent *me)
{
	if (!me->live)
		return;
	me->live = false;
	if (me->img && --me->img->refs == 0)
		image_retire(s, me->img);
	me->img = NULL;
}

void sp_symbolizer_module_end(struct sp_symbolizer *s, uint64_t module)
{
	if (module < s->nmods)
		module_retire(s, &s->mods[module]);
}

void sp_symbolizer_process_end(struct sp_symbolizer *s, uint64_t pid, uint64_t time)
{
	uint64_t *head = sp_u64map_get(&s->pid_mods, pid);
	uint64_t id = head ? *head : 0, *jt, kept = 0, last = 0;
	unsigned int guard = 0;

	while (id && id < s->nmods && guard++ < (1u << 30)) {
		struct module_ent *me = &s->mods[id];
		uint64_t next = me->next_in_pid;

		/*
		 * A file's module may be shared by every process that maps the
		 * file (sp-record retires it with SP_REC_MODULE_END when the
		 * last one goes); a process's anonymous (JIT) memory is its own.
		 * A module's definition may come before records older than it
		 * (sp-record writes it when it learns of the mapping, ahead of
		 * the time-ordered records): one mapped after the end (the new
		 * image of an exec, whose end record came after) stays.
		 */
		if (me->pid != pid || !me->img || !me->img->anon) {
			/* not its own: off the list, as the list goes */
		} else if (!(time && me->time > time)) {
			module_retire(s, me);
		} else {
			me->next_in_pid = 0;
			if (last)
				s->mods[last].next_in_pid = id;
			else
				kept = id;
			last = id;
		}
		id = next;
	}
	if (kept)
		sp_u64map_put(&s->pid_mods, pid, kept);
	else
		sp_u64map_del(&s->pid_mods, pid);
	jt = sp_u64map_get(&s->jit, pid);
	if (jt) {
		s->generation++;
		sp_symtab_free((struct sp_symtab *)(uintptr_t)*jt);
		sp_u64map_del(&s->jit, pid);
	}
}

void sp_symbolizer_ksym(struct sp_symbolizer *s, const struct sp_ksym *k, const char *name,
			size_t len)
{
	if (!name || !len)
		return;
	if (!s->ksyms)
		s->ksyms = sp_symtab_new();
	sp_symtab_add(s->ksyms, k->addr, k->size, name, len, 0);
}

void sp_symbolizer_jitsym(struct sp_symbolizer *s, const struct sp_jitsym *j, const char *name,
			  size_t len)
{
	uint64_t *v = sp_u64map_get(&s->jit, j->pid);
	struct sp_symtab *st;

	if (!name || !len)
		return;
	if (v) {
		st = (struct sp_symtab *)(uintptr_t)*v;
	} else {
		st = sp_symtab_new();
		sp_u64map_put(&s->jit, j->pid, (uint64_t)(uintptr_t)st);
	}
	sp_symtab_add(st, j->addr, j->size, name, len, 0);
}

void sp_symbolizer_free(struct sp_symbolizer *s)
{
	struct retired *r, *next;

	if (!s)
		return;
	sp_symbolizer_reset(s, "");
	sp_symcache_free(s->cache);
	sp_dbgd_free(s->dbgd);
	free(s->waiting);
	for (r = s->retired; r; r = next) {
		next = r->next;
		free(r->path);
		free(r);
	}
	sp_u64map_release(&s->retired_by_path);
	free(s);
}
