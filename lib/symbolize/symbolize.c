// SPDX-License-Identifier: MIT
/* Frame symbolization: finding, checking and indexing the files behind modules. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <gelf.h>
#include <zlib.h>

#include "elf/archive.h"
#include "elf/elffile.h"
#include "buf.h"
#include "buildid.h"
#include "demangle.h"
#include "dwarfidx.h"
#include "hashmap.h"
#include "safefile.h"
#include "sp.h"
#include "escape.h"
#include "symbolize.h"
#include "symcache.h"
#include "elf/symtab.h"

#define NSTATUS		(SP_SYM_BAD_FILE + 1)
#define MAX_FILE_SIZE	(4ull << 30)	/* larger "ELF files" are not read */

struct file_stats {
	uint64_t frames;
	uint64_t by_status[NSTATUS];
	uint64_t named;		/* frames given a function name */
	uint64_t with_line;	/* frames given a file:line */
};

/* A cached result: levels[first .. first + n) of the image. */
struct cached {
	uint32_t first, n;
	uint32_t status;
};

/* One file identity (build-id, else path + inode), shared by its modules. */
struct image {
	struct image *next;		/* all images */
	char *path;			/* recorded path */
	uint8_t build_id[SP_BUILD_ID_MAX];
	unsigned int build_id_len;
	uint64_t dev, ino, size, mtime_ns;
	uint64_t pid;			/* for JIT/anon and identity without build-id */
	bool vdso, kernel, anon;
	unsigned int refs;		/* live modules */
	bool shared;			/* has had several modules: worth caching results */

	/* Loaded on the first lookup. */
	bool loaded;
	unsigned int status;		/* SP_SYM_OK, or why nothing resolves */
	bool stripped;			/* only .dynsym */
	bool from_archive;
	char *loaded_from;		/* the file actually read */
	struct sp_symtab *symtab;	/* the file's own: .symtab, else .dynsym */
	struct sp_symtab *dbgsyms;	/* a separate debug file's .symtab, if the file has none */
	struct sp_dwarfidx *dwarf;	/* lazy: reads dw_elf at lookups */
	Elf *dw_elf;			/* the file of the DWARF, held open for it */
	int dw_fd;
	uint64_t text_lo, text_hi;	/* what the index covers: the cache key */
	bool dwarf_cached;		/* dwarf came from the cache: no debug file yet */
	bool debug_tried;		/* ... and it has been looked for since */
	size_t saved_built;		/* clusters built when last saved to the cache */
	struct sp_symbolizer *sym;

	struct sp_u64map cache;		/* (lookup address << 1 | leaf) -> index + 1 */
	struct cached *results;
	size_t nresults, capresults;
	struct sp_sym_level *levels;
	size_t nlevels, caplevels;

	struct file_stats st;
};

/* Statistics kept after an image is freed. */
struct retired {
	struct retired *next;
	char *path;
	struct file_stats st;
};

struct module_ent {
	struct image *img;
	uint64_t pid;
	uint64_t start;
	uint64_t next_in_pid;		/* module id, 0 = end */
	uint64_t flags;
	bool live;
};

struct jit_table {
	struct sp_symtab *st;
};

struct sp_symbolizer {
	struct sp_symbolize_opts o;
	struct image *images;
	struct retired *retired;
	struct module_ent *mods;	/* by module id */
	size_t nmods, capmods;
	struct sp_u64map pid_mods;	/* pid -> first module id */
	struct sp_u64map jit;		/* pid -> struct sp_symtab * */
	struct sp_symtab *ksyms;
	char kernel_release[128];
	bool same_kernel;
	struct sp_sym_result res;
	struct file_stats kernel_st, jit_st, none_st;
	uint64_t files_loaded, files_live;
	uint64_t generation;
	struct sp_symcache *cache;	/* NULL: --no-cache */
};

static const char *const status_text[NSTATUS] = {
	[SP_SYM_OK] = "resolved",
	[SP_SYM_NO_SYMBOLS] = "no symbols",
	[SP_SYM_STRIPPED] = "stripped (.dynsym only)",
	[SP_SYM_BUILD_ID_MISMATCH] = "build-id mismatch",
	[SP_SYM_FILE_MISSING] = "file missing",
	[SP_SYM_JIT_NO_MAP] = "JIT without map",
	[SP_SYM_NO_MODULE] = "no module",
	[SP_SYM_BAD_FILE] = "bad file",
};

const char *sp_sym_status_text(unsigned int status)
{
	return status < NSTATUS ? status_text[status] : "unknown";
}

struct sp_symbolizer *sp_symbolizer_new(const struct sp_symbolize_opts *opts)
{
	struct sp_symbolizer *s = sp_xcalloc(1, sizeof(*s));

	if (opts)
		s->o = *opts;
	if (!s->o.no_cache) {
		char *dir = s->o.cache_dir ? sp_xstrdup(s->o.cache_dir) : sp_symcache_default_dir();

		s->cache = dir ? sp_symcache_new(dir) : NULL;
		free(dir);
	}
	elf_version(EV_CURRENT);
	sp_symbolizer_reset(s, "");
	return s;
}

/* ---- images ---- */

static void cache_key(const struct image *img, struct sp_symcache_key *k)
{
	k->build_id = img->build_id;
	k->build_id_len = img->build_id_len;
	k->text_lo = img->text_lo;
	k->text_hi = img->text_hi;
}

/* What was indexed here is kept for the next run. */
static void image_save(struct image *img)
{
	struct sp_symcache_key k;
	size_t built;

	if (!img->dwarf || !img->sym || !img->sym->cache || !img->build_id_len || img->vdso)
		return;
	built = sp_dwarfidx_built(img->dwarf);
	if (built == img->saved_built)
		return;
	img->saved_built = built;
	cache_key(img, &k);
	sp_symcache_save(img->sym->cache, &k, img->dwarf);
}

void sp_symbolizer_save(struct sp_symbolizer *s)
{
	struct image *img;

	for (img = s->images; img; img = img->next)
		image_save(img);
}

static void image_unload(struct image *img)
{
	image_save(img);
	sp_symtab_free(img->symtab);
	sp_symtab_free(img->dbgsyms);
	if (img->dwarf && sp_verbose) {
		struct sp_dwarfidx_stats ds;

		sp_dwarfidx_stats(img->dwarf, &ds);
		sp_info("'%s': DWARF: %zu of %zu units indexed (%zu functions, %zu inlined, "
			"%zu line rows), %.1f ms in all", img->loaded_from ? img->loaded_from : "?", ds.units_indexed, ds.units,
			ds.functions, ds.inlined, ds.rows, ds.build_ns / 1e6);
	}
	sp_dwarfidx_free(img->dwarf);
	if (img->dw_elf) {
		elf_end(img->dw_elf);
		close(img->dw_fd);
	}
	img->dw_elf = NULL;
	img->symtab = NULL;
	img->dbgsyms = NULL;
	img->dwarf = NULL;
	sp_u64map_release(&img->cache);
	free(img->results);
	free(img->levels);
	img->results = NULL;
	img->levels = NULL;
	img->nresults = img->capresults = img->nlevels = img->caplevels = 0;
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
		r = sp_xcalloc(1, sizeof(*r));
		r->path = img->path;
		img->path = NULL;
		r->st = img->st;
		r->next = s->retired;
		s->retired = r;
	}
	if (img->loaded && s->files_live)
		s->files_live--;
	image_unload(img);
	free(img->path);
	free(img->loaded_from);
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

void sp_symbolizer_process_end(struct sp_symbolizer *s, uint64_t pid)
{
	uint64_t *head = sp_u64map_get(&s->pid_mods, pid);
	uint64_t id = head ? *head : 0, *jt;
	unsigned int guard = 0;

	while (id && id < s->nmods && guard++ < (1u << 30)) {
		struct module_ent *me = &s->mods[id];
		uint64_t next = me->next_in_pid;

		/*
		 * A file's module may be shared by every process that maps the
		 * file (sp-record retires it with SP_REC_MODULE_END when the
		 * last one goes); a process's anonymous (JIT) memory is its own.
		 */
		if (me->pid == pid && me->img && me->img->anon)
			module_retire(s, me);
		id = next;
	}
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

/* ---- finding and loading files ---- */

struct elf_file {
	int fd;
	Elf *elf;
	char *path;
};

static void elf_file_close(struct elf_file *f)
{
	sp_elf_close(f->elf, f->fd);
	free(f->path);
	f->elf = NULL;
	f->fd = -1;
	f->path = NULL;
}

/*
 * Open path as an ELF file: 0, or -1 with *why (a static message; NULL for
 * a plain "not there", which is not worth a warning).
 */
static int elf_file_open(struct elf_file *f, const char *path, const char **why)
{
	/* The path comes from the input: a FIFO there must not hang us, and a
	 * device is not even opened (opening one may do something). Read, not
	 * mapped: a file truncated while we read it gives short reads
	 * (errors), where a mapping would give SIGBUS. */
	f->path = NULL;
	f->elf = sp_elf_open(path, SP_ELF_READ, MAX_FILE_SIZE, &f->fd, why);
	if (!f->elf) {
		if (*why && !strcmp(*why, "too large"))
			*why = "file too large";
		else if (!*why && errno != ENOENT && errno != ENOTDIR)
			*why = "cannot open";
		return -1;
	}
	f->path = sp_xstrdup(path);
	return 0;
}

/* Bounds of the executable sections, for the DWARF index. */
static void text_bounds(Elf *elf, uint64_t *lo, uint64_t *hi)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	*lo = UINT64_MAX;
	*hi = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		if (sh.sh_addr < *lo)
			*lo = sh.sh_addr;
		if (sh.sh_addr + sh.sh_size > *hi)
			*hi = sh.sh_addr + sh.sh_size;
	}
	if (*hi == 0)
		*lo = 0;
}

/* Warn once per image. */
static void image_warn(struct image *img, const char *file, const char *what)
{
	sp_warn("'%s': %s; its frames stay unresolved", file ? file : img->path, what);
}

/* Open a candidate for the image and check its identity. 1 match, 0 not
 * there, -1 there but wrong (*why). */
static int try_image(struct image *img, const char *path, bool check_stat, struct elf_file *f,
		     const char **why)
{
	uint8_t id[SP_BUILD_ID_MAX];
	unsigned int n;
	struct stat st;

	if (elf_file_open(f, path, why) < 0)
		return *why ? -1 : 0;
	if (img->build_id_len) {
		n = sp_elf_build_id(f->elf, id);
		if (n != img->build_id_len || memcmp(id, img->build_id, n)) {
			*why = "build-id mismatch";
			elf_file_close(f);
			return -1;
		}
	} else if (check_stat && img->size && fstat(f->fd, &st) == 0 &&
		   ((uint64_t)st.st_size != img->size ||
		    (img->mtime_ns && (uint64_t)st.st_mtim.tv_sec * 1000000000u +
		     (uint64_t)st.st_mtim.tv_nsec != img->mtime_ns))) {
		*why = "file changed since the recording (size or mtime differ)";
		elf_file_close(f);
		return -1;
	}
	return 1;
}

static uint32_t crc_file(int fd)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	return (uint32_t)crc;
}

/* .gnu_debuglink: name and CRC. */
static const char *debuglink(Elf *elf, uint32_t *crc)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;
		Elf_Data *d;
		size_t len;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, ".gnu_debuglink"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 8)
			return NULL;
		len = strnlen(d->d_buf, d->d_size);
		if (!len || len >= d->d_size || strchr(d->d_buf, '/'))
			return NULL;
		len = (len + 4) & ~(size_t)3;
		if (len + 4 > d->d_size)
			return NULL;
		memcpy(crc, (char *)d->d_buf + len, 4);
		return d->d_buf;
	}
	return NULL;
}

/* Try a debug file candidate. */
static bool try_debug(struct image *img, const char *path, bool have_crc, uint32_t crc,
		      struct elf_file *dbg)
{
	uint8_t id[SP_BUILD_ID_MAX];
	const char *why;
	unsigned int n;

	if (elf_file_open(dbg, path, &why) < 0)
		return false;
	if (img->build_id_len) {
		n = sp_elf_build_id(dbg->elf, id);
		if (n != img->build_id_len || memcmp(id, img->build_id, n))
			goto no;
	} else if (!have_crc || crc_file(dbg->fd) != crc) {
		goto no;
	}
	if (!sp_elf_has_section(dbg->elf, ".debug_info", true) && !sp_symtab_elf_has_symtab(dbg->elf))
		goto no;
	return true;
no:
	elf_file_close(dbg);
	return false;
}

static bool find_debug(struct sp_symbolizer *s, struct image *img, struct elf_file *f,
		       struct elf_file *dbg)
{
	const char *dirs[SP_SYMBOLIZE_MAX_DIRS + 3];
	char hex[2 * SP_BUILD_ID_MAX + 1], *sysdbg = NULL, *p, *dir, *slash;
	const char *link;
	uint32_t crc = 0;
	unsigned int nd = 0, i;
	bool found = false;

	for (i = 0; i < SP_SYMBOLIZE_MAX_DIRS && s->o.debug_dirs[i]; i++)
		dirs[nd++] = s->o.debug_dirs[i];
	if (!s->o.no_system_debug) {
		if (s->o.sysroot && strcmp(s->o.sysroot, "/")) {
			sysdbg = sp_xstrfmt("%s/usr/lib/debug", s->o.sysroot);
			dirs[nd++] = sysdbg;
		}
		dirs[nd++] = "/usr/lib/debug";
	}
	if (img->build_id_len) {
		sp_buildid_hex(img->build_id, img->build_id_len, hex);
		for (i = 0; i < nd && !found; i++) {
			p = sp_xstrfmt("%s/.build-id/%.2s/%s.debug", dirs[i], hex, hex + 2);
			found = try_debug(img, p, false, 0, dbg);
			free(p);
		}
		if (!found && s->o.archive) {
			p = sp_archive_path(s->o.archive, img->build_id, img->build_id_len, ".debug");
			if (p)
				found = try_debug(img, p, false, 0, dbg);
			free(p);
		}
	}
	link = found ? NULL : debuglink(f->elf, &crc);
	if (link) {
		/* Next to the file read, in its .debug/, under each debug dir. */
		dir = sp_xstrdup(f->path);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			p = sp_xstrfmt("%s/%s", dir, link);
			if (strcmp(p, f->path))
				found = try_debug(img, p, true, crc, dbg);
			free(p);
			if (!found) {
				p = sp_xstrfmt("%s/.debug/%s", dir, link);
				found = try_debug(img, p, true, crc, dbg);
				free(p);
			}
		}
		free(dir);
		dir = sp_xstrdup(img->path);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			for (i = 0; i < nd && !found; i++) {
				p = sp_xstrfmt("%s%s/%s", dirs[i], dir, link);
				found = try_debug(img, p, true, crc, dbg);
				free(p);
			}
		}
		free(dir);
	}
	free(sysdbg);
	return found;
}

/* The vDSO of this process, when it is the recorded one. */
static int open_own_vdso(struct sp_symbolizer *s, struct image *img, struct elf_file *f,
			 const char **why)
{
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	uint8_t id[SP_BUILD_ID_MAX];
	size_t size;
	unsigned int n;

	f->fd = -1;
	f->elf = NULL;
	f->path = NULL;
	*why = NULL;
	if (!base || memcmp(base, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	/* The vDSO's section headers are its last bytes. */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > (1u << 20))
		return 0;
	f->elf = elf_memory((char *)base, size);
	if (!f->elf)
		return 0;
	if (img->build_id_len) {
		n = sp_elf_build_id(f->elf, id);
		if (n != img->build_id_len || memcmp(id, img->build_id, n)) {
			elf_file_close(f);
			*why = "build-id mismatch with this machine's vDSO";
			return -1;
		}
	} else if (!s->same_kernel) {
		elf_file_close(f);
		*why = "recorded on another kernel; its vDSO is not here";
		return -1;
	}
	f->path = sp_xstrdup("[vdso]");
	return 1;
}

/*
 * The file holding img's DWARF: f itself, else its separate debug file,
 * opened into dbg. A stripped file gets the debug file's .symtab too.
 */
static struct elf_file *debug_find(struct sp_symbolizer *s, struct image *img,
				   struct elf_file *f, struct elf_file *dbg)
{
	const char *why;

	img->debug_tried = true;
	if (sp_elf_has_section(f->elf, ".debug_info", true) || img->vdso || !find_debug(s, img, f, dbg))
		return f;
	if (img->stripped && !img->dbgsyms && sp_symtab_elf_has_symtab(dbg->elf)) {
		img->dbgsyms = sp_symtab_new();
		if (sp_symtab_add_elf(img->dbgsyms, dbg->elf, false, &why) > 0)
			img->stripped = false;
	}
	return dbg;
}

/* libdw's handle on f's DWARF, NULL (warned) if it has none that is usable. */
static Dwarf *dwarf_open(struct elf_file *f)
{
	const char *why;
	Dwarf *dw;

	if (!sp_dwarfidx_elf_sane(f->elf, &why)) {
		sp_warn("'%s': DWARF not used: %s", f->path, why);
		return NULL;
	}
	dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (!dw && sp_elf_has_section(f->elf, ".debug_info", true))
		sp_warn("'%s': DWARF not used: %s", f->path, dwarf_errmsg(-1));
	return dw;
}

/*
 * For an index from the cache: find the debug file after all (a lookup
 * needs a cluster the cache lacks, or the debug file's symbols), and give
 * its DWARF when want_dwarf, holding the file open for the index.
 */
static Dwarf *image_debug(struct image *img, bool want_dwarf)
{
	struct elf_file f = { .fd = -1 }, dbg = { .fd = -1 }, *dwf;
	const char *why = NULL;
	Dwarf *dw = NULL;

	if (!img->loaded_from || try_image(img, img->loaded_from, false, &f, &why) <= 0) {
		img->debug_tried = true;
		return NULL;
	}
	dwf = debug_find(img->sym, img, &f, &dbg);
	if (want_dwarf && !img->dw_elf) {
		dw = dwarf_open(dwf);
		if (dw) {
			img->dw_elf = dwf->elf;
			img->dw_fd = dwf->fd;
			dwf->elf = NULL;
			dwf->fd = -1;
			sp_info("'%s': DWARF from '%s' for units not in the cache", img->path,
				dwf->path);
		}
	}
	elf_file_close(&dbg);
	elf_file_close(&f);
	return dw;
}

static Dwarf *image_dwarf(void *arg)
{
	return image_debug(arg, true);
}

static void image_load(struct sp_symbolizer *s, struct image *img)
{
	struct elf_file f = { .fd = -1 }, dbg = { .fd = -1 };
	const char *why = NULL, *first_why = NULL, *sysroot = s->o.sysroot;
	char *p, *first_path = NULL;
	struct elf_file *symf, *dwf;
	unsigned int i;
	Dwarf *dw;
	int rc = 0, nsyms;
	size_t bad = 0;

	img->loaded = true;
	s->files_loaded++;
	s->files_live++;
	if (img->anon) {
		img->status = SP_SYM_JIT_NO_MAP;
		return;
	}
	if (img->vdso) {
		if (s->o.archive && img->build_id_len) {
			p = sp_archive_path(s->o.archive, img->build_id, img->build_id_len, NULL);
			rc = p ? try_image(img, p, false, &f, &why) : 0;
			free(p);
			img->from_archive = rc > 0;
		}
		if (rc <= 0)
			rc = open_own_vdso(s, img, &f, &why);
		if (rc <= 0) {
			img->status = rc < 0 ? SP_SYM_BUILD_ID_MISMATCH : SP_SYM_FILE_MISSING;
			if (why)
				image_warn(img, NULL, why);
			return;
		}
		goto found;
	}
	if (img->path[0] == '[') {
		img->status = SP_SYM_NO_SYMBOLS;
		return;
	}
	/* 1. The archive: the exact image, even if deleted or replaced since. */
	if (s->o.archive && img->build_id_len) {
		p = sp_archive_path(s->o.archive, img->build_id, img->build_id_len, NULL);
		rc = p ? try_image(img, p, false, &f, &why) : 0;
		if (rc > 0) {
			img->from_archive = true;
			free(p);
			goto found;
		}
		if (rc < 0 && !first_why) {
			first_why = why;
			first_path = p;
			p = NULL;
		}
		free(p);
	}
	/* 2. --image-dir: by base name. */
	for (i = 0; i < SP_SYMBOLIZE_MAX_DIRS && s->o.image_dirs[i]; i++) {
		const char *base = strrchr(img->path, '/');

		p = sp_xstrfmt("%s/%s", s->o.image_dirs[i], base ? base + 1 : img->path);
		rc = try_image(img, p, false, &f, &why);
		if (rc > 0) {
			free(p);
			goto found;
		}
		if (rc < 0 && !first_why) {
			first_why = why;
			first_path = p;
			p = NULL;
		}
		free(p);
	}
	/* 3. The recorded path, under the sysroot. A deleted file's path ends in " (deleted)". */
	if (sysroot && strcmp(sysroot, "/"))
		p = sp_xstrfmt("%s%s%s", sysroot, img->path[0] == '/' ? "" : "/", img->path);
	else
		p = sp_xstrdup(img->path);
	{
		size_t len = strlen(p);

		if (len > 10 && !strcmp(p + len - 10, " (deleted)"))
			p[len - 10] = 0;
		rc = try_image(img, p, !sysroot || !strcmp(sysroot, "/"), &f, &why);
		if (rc > 0) {
			free(p);
			free(first_path);
			goto found;
		}
		if (rc < 0 && !first_why) {
			first_why = why;
			first_path = p;
			p = NULL;
		}
		free(p);
	}
	if (first_why) {
		img->status = strstr(first_why, "mismatch") || strstr(first_why, "changed") ?
			      SP_SYM_BUILD_ID_MISMATCH : SP_SYM_BAD_FILE;
		image_warn(img, first_path, first_why);
	} else {
		img->status = SP_SYM_FILE_MISSING;
		image_warn(img, NULL, "file not found");
	}
	free(first_path);
	return;

found:
	free(img->loaded_from);
	img->loaded_from = f.path ? sp_xstrdup(f.path) : NULL;
	img->symtab = sp_symtab_new();
	/*
	 * The file's own table names the physical function (as llvm-symbolizer
	 * does: public names of exported functions); a debug file's .symtab
	 * names what DWARF does not cover when the file is stripped.
	 */
	nsyms = sp_symtab_add_elf(img->symtab, f.elf, false, &why);
	if (nsyms < 0)
		image_warn(img, f.path, why);
	img->stripped = !sp_symtab_elf_has_symtab(f.elf);
	text_bounds(f.elf, &img->text_lo, &img->text_hi);
	/* An index kept from an earlier run: no debug file read until it lacks a cluster. */
	if (s->cache && img->build_id_len && !img->vdso) {
		struct sp_symcache_key k;

		cache_key(img, &k);
		img->dwarf = sp_symcache_load(s->cache, &k);
	}
	if (img->dwarf) {
		img->dwarf_cached = true;
		sp_dwarfidx_set_opener(img->dwarf, image_dwarf, img);
		if (s->o.index_all && sp_dwarfidx_index_all(img->dwarf) < 0)
			sp_warn("'%s': DWARF: some units could not be indexed", img->path);
		if (sp_verbose) {
			struct sp_dwarfidx_stats ds;

			sp_dwarfidx_stats(img->dwarf, &ds);
			sp_info("'%s': %zu symbols%s; DWARF index from the cache (%zu of %zu "
				"units indexed)", img->path, sp_symtab_count(img->symtab),
				img->stripped ? " (.dynsym only)" : "", ds.units_indexed,
				ds.units);
		}
		goto out;
	}
	/* Debug information: the file's own, else a separate debug file. */
	symf = &f;
	dwf = debug_find(s, img, &f, &dbg);
	if (dwf == &dbg && img->dbgsyms)
		symf = &dbg;
	dw = dwarf_open(dwf);
	if (dw) {
		/* Lazily: a unit is indexed when an address falls in it. */
		img->dwarf = sp_dwarfidx_open(dw, img->text_lo, img->text_hi, &bad, &why);
		if (img->dwarf && s->o.index_all && sp_dwarfidx_index_all(img->dwarf) < 0)
			sp_warn("'%s': DWARF: some units could not be indexed", dwf->path);
		if (!img->dwarf && why && strcmp(why, "no DWARF compilation units"))
			sp_warn("'%s': DWARF not used: %s", dwf->path, why);
		else if (bad)
			sp_warn("'%s': %zu DWARF units could not be read", dwf->path, bad);
	}
	if (sp_symtab_count(img->symtab) == 0 && !img->dwarf &&
	    (!img->dbgsyms || !sp_symtab_count(img->dbgsyms))) {
		img->status = nsyms < 0 ? SP_SYM_BAD_FILE : SP_SYM_NO_SYMBOLS;
		if (nsyms >= 0)
			sp_info("'%s': no symbols", f.path);
	}
	if (sp_verbose) {
		struct sp_dwarfidx_stats ds = { 0 };

		if (img->dwarf)
			sp_dwarfidx_stats(img->dwarf, &ds);
		sp_info("'%s': %zu symbols%s from '%s'; DWARF %s (%zu units, their ranges read "
			"in %.1f ms)", img->path, sp_symtab_count(img->symtab),
			img->stripped ? " (.dynsym only)" : "", symf->path,
			img->dwarf ? dwf->path : "none", ds.units, ds.build_ns / 1e6);
	}
	if (img->dwarf) {
		/* The index reads the file at lookups: keep it open with it. */
		img->dw_elf = dwf->elf;
		img->dw_fd = dwf->fd;
		dwf->elf = NULL;
		dwf->fd = -1;
	}
out:
	elf_file_close(&dbg);
	elf_file_close(&f);
}

/* ---- lookups ---- */

static void count(struct file_stats *st, const struct sp_sym_result *r)
{
	st->frames++;
	st->by_status[r->status < NSTATUS ? r->status : SP_SYM_BAD_FILE]++;
	if (r->level[0].func)
		st->named++;
	if (r->level[0].file)
		st->with_line++;
}

/* Resolve in an image into s->res (strings owned by the image). */
static void image_lookup(struct sp_symbolizer *s, struct image *img, uint64_t rel, bool leaf)
{
	struct sp_sym_result *r = &s->res;
	struct sp_dwarf_loc loc[SP_SYMBOLIZE_MAX_LEVELS];
	const struct sp_symtab_entry *sym;
	uint64_t addr = leaf || !rel ? rel : rel - 1;
	bool demangle = !s->o.no_demangle;
	int n = 0, i;

	r->status = img->status;
	r->n = 1;
	memset(&r->level[0], 0, sizeof(r->level[0]));
	if (img->status != SP_SYM_OK)
		return;
	memset(&loc[0], 0, sizeof(loc[0]));
	if (img->dwarf)
		n = sp_dwarfidx_lookup(img->dwarf, addr, demangle, loc,
				       s->o.no_inline ? 1 : SP_SYMBOLIZE_MAX_LEVELS);
	if (s->o.no_inline && n > 0 && loc[0].inlined) {
		/* Only the physical function, at the line of the outermost call site. */
		n = sp_dwarfidx_lookup(img->dwarf, addr, demangle, loc, SP_SYMBOLIZE_MAX_LEVELS);
		loc[0] = loc[n - 1];
		n = 1;
	}
	sym = sp_symtab_lookup(img->symtab, addr);
	if (!sym && n == 0 && img->stripped && img->dwarf_cached && !img->debug_tried)
		image_debug(img, false);
	if (!sym && n == 0 && img->dbgsyms)
		sym = sp_symtab_lookup(img->dbgsyms, addr);
	if (n > 0) {
		for (i = 0; i < n; i++) {
			struct sp_sym_level *l = &r->level[i];

			l->func = loc[i].func;
			l->file = loc[i].file;
			l->line = loc[i].line;
			l->column = loc[i].column;
			l->offset = rel >= loc[i].entry ? rel - loc[i].entry : 0;
			l->flags = SP_SYM_FROM_DWARF | (loc[i].inlined ? SP_SYM_INLINE : 0);
		}
		r->n = (unsigned int)n;
		/*
		 * The physical function is named as the file's own symbol table
		 * names it (as llvm-symbolizer does): glibc's public aliases, not
		 * its internal __GI_ names.
		 */
		if (sym && !(sym->flags & SP_SYMTAB_UNSIZED)) {
			struct sp_sym_level *l = &r->level[n - 1];

			l->func = demangle ? sp_demangle_cached(sym->name,
						&((struct sp_symtab_entry *)sym)->demangled) :
				  sym->name;
			l->offset = rel - sym->addr;
		}
	} else {
		r->level[0].file = loc[0].file;
		r->level[0].line = loc[0].line;
		r->level[0].column = loc[0].column;
		if (loc[0].file)
			r->level[0].flags |= SP_SYM_FROM_DWARF;
		if (sym) {
			r->level[0].func = demangle ?
				sp_demangle_cached(sym->name,
						   &((struct sp_symtab_entry *)sym)->demangled) :
				sym->name;
			r->level[0].offset = rel - sym->addr;
			if (sym->flags & SP_SYMTAB_DYNSYM)
				r->level[0].flags |= SP_SYM_FROM_DYNSYM;
		}
	}
	if (img->stripped && !img->dwarf)
		r->status = SP_SYM_STRIPPED;
	else if (!r->level[0].func && !r->level[0].file)
		r->status = SP_SYM_NO_SYMBOLS;
	if (img->from_archive)
		for (i = 0; i < (int)r->n; i++)
			r->level[i].flags |= SP_SYM_FROM_ARCHIVE;
}

static void cache_put(struct image *img, uint64_t key, const struct sp_sym_result *r)
{
	struct cached *c;

	if (img->nresults >= UINT32_MAX - 1 || img->nlevels + r->n >= UINT32_MAX)
		return;
	sp_grow(&img->results, &img->capresults, img->nresults + 1, sizeof(*img->results));
	sp_grow(&img->levels, &img->caplevels, img->nlevels + r->n, sizeof(*img->levels));
	c = &img->results[img->nresults];
	c->first = (uint32_t)img->nlevels;
	c->n = r->n;
	c->status = r->status;
	memcpy(img->levels + img->nlevels, r->level, r->n * sizeof(*r->level));
	img->nlevels += r->n;
	sp_u64map_put(&img->cache, key, ++img->nresults);
}

static void table_lookup(struct sp_symbolizer *s, struct sp_symtab *st, uint64_t addr, bool leaf,
			 unsigned int missing)
{
	struct sp_sym_result *r = &s->res;
	const struct sp_symtab_entry *e;
	uint64_t a = leaf || !addr ? addr : addr - 1;

	r->n = 1;
	memset(&r->level[0], 0, sizeof(r->level[0]));
	e = st ? sp_symtab_lookup(st, a) : NULL;
	if (!e) {
		r->status = missing;
		return;
	}
	r->status = SP_SYM_OK;
	r->level[0].func = s->o.no_demangle ? e->name :
			   sp_demangle_cached(e->name, &((struct sp_symtab_entry *)e)->demangled);
	r->level[0].offset = addr - e->addr;
}

static struct sp_symtab *jit_table(struct sp_symbolizer *s, uint64_t pid)
{
	uint64_t *v = sp_u64map_get(&s->jit, pid);

	return v ? (struct sp_symtab *)(uintptr_t)*v : NULL;
}

static struct module_ent *frame_module(struct sp_symbolizer *s, const struct sp_frame *f)
{
	if (f->module && f->module < s->nmods && s->mods[f->module].live)
		return &s->mods[f->module];
	return NULL;
}

bool sp_symbolizer_should_defer(struct sp_symbolizer *s, const struct sp_frame *f)
{
	struct module_ent *me = frame_module(s, f);
	uint64_t pid = me ? me->pid : f->pid;

	if (f->mode == SP_FRAME_KERNEL || (me && !me->img && me->live))
		return !s->ksyms;
	if (f->mode == SP_FRAME_JIT || !me || (me->img && me->img->anon))
		return !jit_table(s, pid);
	return false;
}

const struct sp_sym_result *sp_symbolizer_frame(struct sp_symbolizer *s,
						const struct sp_frame *f)
{
	struct sp_sym_result *r = &s->res;
	struct module_ent *me = frame_module(s, f);
	bool leaf = f->flags & SP_FRAME_LEAF;
	struct image *img;
	uint64_t key, *v;

	if (f->mode == SP_FRAME_KERNEL || (me && !me->img)) {
		table_lookup(s, s->ksyms, f->addr, leaf, SP_SYM_NO_SYMBOLS);
		count(&s->kernel_st, r);
		return r;
	}
	if (!me || f->mode == SP_FRAME_JIT || (me->img && me->img->anon)) {
		struct sp_symtab *jt = jit_table(s, me ? me->pid : f->pid);

		table_lookup(s, jt, f->addr, leaf,
			     me || f->mode == SP_FRAME_JIT ? SP_SYM_JIT_NO_MAP : SP_SYM_NO_MODULE);
		count(r->status == SP_SYM_NO_MODULE ? &s->none_st : &s->jit_st, r);
		return r;
	}
	img = me->img;
	if (!img->loaded)
		image_load(s, img);
	/*
	 * The stream interns frames, so a frame is looked up once per module;
	 * the same address again comes only through another module of the
	 * same file (another process): cache results for shared files only.
	 */
	key = f->rel << 1 | leaf;
	v = img->shared ? sp_u64map_get(&img->cache, key) : NULL;
	if (v) {
		const struct cached *c = &img->results[*v - 1];

		r->status = c->status;
		r->n = c->n;
		memcpy(r->level, img->levels + c->first, c->n * sizeof(*r->level));
	} else {
		image_lookup(s, img, f->rel, leaf);
		if (img->shared)
			cache_put(img, key, r);
	}
	count(&img->st, r);
	return r;
}

uint64_t sp_symbolizer_generation(const struct sp_symbolizer *s)
{
	return s->generation;
}

/* ---- statistics ---- */

static void add_stats(struct file_stats *to, const struct file_stats *from)
{
	unsigned int i;

	to->frames += from->frames;
	to->named += from->named;
	to->with_line += from->with_line;
	for (i = 0; i < NSTATUS; i++)
		to->by_status[i] += from->by_status[i];
}

static void print_one(FILE *out, const char *what, const struct file_stats *st)
{
	unsigned int i;
	bool first = true;

	/* what: a path from the spool, so another's string (docs/escaping.md) */
	fprintf(out, "%s: ", sp_progname);
	sp_esc_text_put(out, what, strlen(what), 0);
	fprintf(out, "%s%" PRIu64 " frames, %" PRIu64 " named, %" PRIu64 " with file:line",
		what[0] ? ": " : "", st->frames, st->named, st->with_line);
	for (i = 0; i < NSTATUS; i++) {
		if (!st->by_status[i] || i == SP_SYM_OK)
			continue;
		fprintf(out, "%s%" PRIu64 " %s", first ? "; unresolved or partial: " : ", ",
			st->by_status[i], status_text[i]);
		first = false;
	}
	fputc('\n', out);
}

void sp_symbolizer_counts(const struct sp_symbolizer *s, uint64_t *resolved, uint64_t *total)
{
	struct file_stats all = { 0 };
	const struct image *img;
	const struct retired *r;

	add_stats(&all, &s->kernel_st);
	add_stats(&all, &s->jit_st);
	add_stats(&all, &s->none_st);
	for (img = s->images; img; img = img->next)
		add_stats(&all, &img->st);
	for (r = s->retired; r; r = r->next)
		add_stats(&all, &r->st);
	*resolved = all.named;
	*total = all.frames;
}

void sp_symbolizer_files(const struct sp_symbolizer *s, uint64_t *loaded, uint64_t *live)
{
	*loaded = s->files_loaded;
	*live = s->files_live;
}

void sp_symbolizer_print_stats(struct sp_symbolizer *s, FILE *out, bool per_module)
{
	struct file_stats all = { 0 };
	const struct image *img;
	const struct retired *r;

	add_stats(&all, &s->kernel_st);
	add_stats(&all, &s->jit_st);
	add_stats(&all, &s->none_st);
	for (img = s->images; img; img = img->next)
		add_stats(&all, &img->st);
	for (r = s->retired; r; r = r->next)
		add_stats(&all, &r->st);
	fflush(stdout);
	print_one(out, "", &all);
	if (!per_module)
		return;
	if (s->kernel_st.frames)
		print_one(out, "  [kernel]", &s->kernel_st);
	if (s->jit_st.frames)
		print_one(out, "  [jit]", &s->jit_st);
	if (s->none_st.frames)
		print_one(out, "  [no module]", &s->none_st);
	for (img = s->images; img; img = img->next)
		if (img->st.frames) {
			char what[4200];

			snprintf(what, sizeof(what), "  %s%s", img->path,
				 img->from_archive ? " (archive)" : "");
			print_one(out, what, &img->st);
		}
	for (r = s->retired; r; r = r->next) {
		char what[4200];

		snprintf(what, sizeof(what), "  %s", r->path ? r->path : "?");
		print_one(out, what, &r->st);
	}
}

void sp_symbolizer_free(struct sp_symbolizer *s)
{
	struct retired *r, *next;

	if (!s)
		return;
	sp_symbolizer_reset(s, "");
	sp_symcache_free(s->cache);
	for (r = s->retired; r; r = next) {
		next = r->next;
		free(r->path);
		free(r);
	}
	free(s);
}
