// SPDX-License-Identifier: MIT
/*
 * How the spans source attaches a USDT probe (bpf_spansP.h): every
 * location of it in one uprobe_multi link, with the probe's operands
 * parsed here into the BPF map usdt_specs (so a semaphore and any operand
 * form work without libbpf's USDT manager); markers with fixed-register
 * operands, several probes in one link; else libbpf's USDT links, bounded
 * in number. The locations come from lib/elf/usdt.c, cached per file.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#if defined(__x86_64__)
#include <asm/ptrace.h>		/* struct pt_regs: USDT operands */
#endif

#include "bpf_spansP.h"
#include "elf/usdt.h"
#include "procfs.h"
#include "safefile.h"
#include "sp.h"

/*
 * The binary bin, opened to be attached to: libbpf and the kernel open the
 * file they are given by name, and a path another user may have made a
 * FIFO or a link since it was looked at would hold the attaching thread
 * (and the processes stopped for it), or give another file breakpoints at
 * offsets read from this one (an int3 mid-instruction). So the notes are
 * read from, and the probes put on, a descriptor opened here with the file
 * checks, by its name "/proc/self/fd/N" (a container's files are such
 * names already, bpf_spans_root.c). like: a fork child's parent's
 * attachment, whose file the child maps: when another, or none, is at the
 * path since, the child's mapping of it (open_mapped()).
 * Closed by bin_close() once attached: the probes hold the inode.
 */
struct bs_bin {
	int fd;			/* ours, or -1 */
	const char *name;	/* what libbpf and the kernel are given */
	char buf[32];
	uint64_t dev, ino;
};

struct mapped_ctx {
	uint32_t pid;
	const struct bs_att *like;
	struct stat *st;
	const char **why;
	int fd;
	bool any;		/* a mapping seen: not a zombie */
};

static int mapped_line(void *ctx, const struct sp_proc_map *m)
{
	struct mapped_ctx *c = ctx;
	char path[96];

	c->any = true;
	if (m->ino != c->like->ino)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, c->pid, m->start,
		 m->end);
	c->fd = sp_safe_open(AT_FDCWD, path, NULL, c->st, c->why);
	if (c->fd < 0 && errno == EPERM && !*c->why)
		*c->why = "its /proc/PID/map_files is closed to sp-record (it has no "
			  "CAP_SYS_ADMIN)";
	if (c->fd >= 0 && ((uint64_t)c->st->st_dev != c->like->dev ||
			   (uint64_t)c->st->st_ino != m->ino)) {
		close(c->fd);
		c->fd = -1;
	}
	return c->fd >= 0;
}

/*
 * The file (like's) that pid maps, opened through /proc/PID/map_files:
 * its path names another file now, or none. A line's inode is compared
 * first, the file's device and inode once opened. -1, errno ENOENT when
 * pid is gone (or a zombie), else ESTALE: it maps the file no more (or not
 * within SP_BS_MAPS_BYTES), or it cannot be opened (*why).
 */
static int open_mapped(uint32_t pid, const struct bs_att *like, struct stat *st,
		       const char **why)
{
	struct mapped_ctx c = { pid, like, st, why, -1, false };

	*why = NULL;
	if (sp_procfs_maps(pid, SP_BS_MAPS_BYTES, mapped_line, &c) < 0 && !c.any &&
	    errno != ENOENT && errno != ESRCH)
		*why = strerror(errno);
	/* no maps at all: a zombie (killed while held), or gone: nothing to
	 * attach; else it maps the file no more (or not within the bound) */
	if (c.fd < 0 && !c.any && !*why)
		errno = ENOENT;
	else if (c.fd < 0)
		errno = ESTALE;
	return c.fd;
}

/* bin_open()'s results besides 0 */
#define BIN_FAILED	(-1)	/* the file cannot be opened: *why, else errno */
#define BIN_GONE	(-2)	/* a fork child that is gone */
#define BIN_STALE	(-3)	/* a fork child that maps its parent's file no more */

static int bin_open(uint32_t pid, const char *bin, const struct bs_att *like, struct bs_bin *b,
		    const char **why)
{
	struct stat st;
	bool ok;

	*why = NULL;
	b->fd = -1;
	b->name = bin;
	if (strncmp(bin, "/proc/self/fd/", 14)) {
		b->fd = sp_safe_open(AT_FDCWD, bin, NULL, &st, why);
		ok = b->fd >= 0;
		if (ok) {
			snprintf(b->buf, sizeof(b->buf), "/proc/self/fd/%d", b->fd);
			b->name = b->buf;
		}
	} else {
		ok = stat(bin, &st) == 0;
	}
	if (!like || !like->ino) {
		if (!ok)
			return BIN_FAILED;
		b->dev = (uint64_t)st.st_dev;
		b->ino = (uint64_t)st.st_ino;
		return 0;
	}
	if (ok && like->dev == (uint64_t)st.st_dev && like->ino == (uint64_t)st.st_ino) {
		b->dev = like->dev;
		b->ino = like->ino;
		return 0;
	}
	/* a fork child maps its parent's file: another is at the path since,
	 * or none (its owner replaced or removed it): that one, by the mapping */
	if (b->fd >= 0)
		close(b->fd);
	b->fd = open_mapped(pid, like, &st, why);
	if (b->fd < 0) {
		if (errno == ENOENT)
			return BIN_GONE;
		if (!*why)
			*why = "another file, or none, is at its path since its parent's probes "
			       "went on, and the process maps the parent's no more";
		return BIN_STALE;
	}
	snprintf(b->buf, sizeof(b->buf), "/proc/self/fd/%d", b->fd);
	b->name = b->buf;
	b->dev = like->dev;
	b->ino = like->ino;
	return 0;
}

static void bin_close(struct bs_bin *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
}

/* The attachment just added to p is of the file b (for its fork children). */
static void att_of_bin(struct bs_proc *p, const struct bs_bin *b)
{
	p->att[p->natt - 1]->dev = b->dev;
	p->att[p->natt - 1]->ino = b->ino;
}

/* p gets no probes of a kind it should have: counted once (a lost
 * record, sp_bs_emit_lost) */
static void count_unprobed(struct bs_ctx *c, struct bs_proc *p)
{
	if (!p->unprobed) {
		p->unprobed = true;
		__atomic_add_fetch(&c->unprobed, 1, __ATOMIC_RELAXED);
	}
}

/*
 * A fork child's probes in a file that is not its parent's (like, above):
 * said once for the recording, the child counted as unprobed.
 */
static void child_unprobed(struct bs_ctx *c, struct bs_proc *p, const char *bin, const char *why)
{
	if (!c->stale_warned) {
		c->stale_warned = true;
		sp_warn("pid %u: no probes in '%s': %s (later ones: with -v)", p->pid, bin, why);
	} else if (sp_verbose) {
		sp_info("spans: pid %u: no probes in '%s': %s", p->pid, bin, why);
	}
	count_unprobed(c, p);
}

/* bin_open() for p, what failed said: a fork child's stale file as
 * child_unprobed(), another's that cannot be opened as what (NULL: not
 * said here). */
static int bin_open_said(struct bs_ctx *c, struct bs_proc *p, const char *bin,
			 const struct bs_att *like, struct bs_bin *b, const char *what)
{
	const char *why;
	int r = bin_open(p->pid, bin, like, b, &why);

	if (r == BIN_STALE)
		child_unprobed(c, p, bin, why);
	else if (r == BIN_FAILED && !like && what)
		sp_warn("pid %u: cannot attach %s in '%s': %s", p->pid, what, bin,
			why ? why : strerror(errno));
	return r;
}

/*
 * libbpf's USDT links, for kernels without uprobe_multi links (and
 * operands sp_bs_attach_multi() cannot read). Each takes one or more of the
 * 4096 specs of the BPF object until the reaper has destroyed it; libbpf
 * 1.1 frees memory twice when an attach finds none left (its detach
 * reallocates its free list to 0 bytes), so at most SP_SPANS_USDT_LIVE
 * such links live at once: beyond that a process gets none, said once.
 * like: as in bin_open() (a fork child's: not said when it fails).
 */
#define SP_SPANS_USDT_LIVE	512
int sp_bs_attach_usdt_how(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *prog,
			  const char *bin, const char *provider, const char *name,
			  uint32_t probe, const struct bs_att *like)
{
	LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = (uint64_t)p->gen << 32 | probe);
	char what[160];
	struct bs_bin b;
	struct bpf_link *l;
	int e;

	if (__atomic_load_n(&c->usdt_live, __ATOMIC_RELAXED) >= SP_SPANS_USDT_LIVE) {
		if (!c->usdt_full)
			sp_warn("spans: %u USDT links wait to be detached: pid %u and later "
				"processes get no %s:%s until they are", SP_SPANS_USDT_LIVE,
				p->pid, provider, name);
		c->usdt_full = true;
		count_unprobed(c, p);
		return -1;
	}
	snprintf(what, sizeof(what), "%s:%s", provider, name);
	if (bin_open_said(c, p, bin, like, &b, what))
		return -1;
	pthread_mutex_lock(&c->bpf_lock);
	l = bpf_program__attach_usdt(prog, p->pid, b.name, provider, name, &uo);
	e = errno;
	pthread_mutex_unlock(&c->bpf_lock);
	bin_close(&b);
	if (!l) {
		if (e == ESRCH)
			return -1;	/* the process is gone */
		if (like) {	/* a fork child: said once, counted */
			child_unprobed(c, p, bin, strerror(e));
			return -1;
		}
		sp_warn("pid %u: cannot attach %s:%s in '%s': %s", p->pid, provider, name, bin,
			strerror(e));
		return -1;
	}
	__atomic_add_fetch(&c->usdt_live, 1, __ATOMIC_RELAXED);
	sp_bs_att_add_link(p, probe, 0, bin, prog, (struct bs_link){ .link = l, .fd = -1, .usdt = true },
			   false, NULL);
	att_of_bin(p, &b);
	return 0;
}

/*
 * sp_usdt_offsets() (lib/elf/usdt.c), cached by file (path, device, inode, mtime) and
 * probe: a forking runtime's children each get their links while they
 * wait, stopped, and the ELF notes need not be read again for each.
 */
int sp_bs_offsets_cached(const char *path, const char *file, const char *provider,
			 const char *name, const char *args, uint64_t *offs, int max)
{
	static struct {
		char path[PATH_MAX], probe[128];
		dev_t dev;
		ino_t ino;
		struct timespec mtime;
		int n;
		uint64_t offs[64];
	} cache[32];
	static unsigned int next;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	char probe[128];
	struct stat st;
	unsigned int i;
	int n;

	if (stat(file, &st) || max > 64)
		return sp_usdt_offsets(file, provider, name, args, offs, max);
	snprintf(probe, sizeof(probe), "%s:%s:%s", provider, name, args ? args : "");
	pthread_mutex_lock(&lock);
	for (i = 0; i < 32; i++) {
		if (cache[i].ino != st.st_ino || cache[i].dev != st.st_dev ||
		    cache[i].mtime.tv_sec != st.st_mtim.tv_sec ||
		    cache[i].mtime.tv_nsec != st.st_mtim.tv_nsec || strcmp(cache[i].probe, probe) ||
		    strcmp(cache[i].path, path))
			continue;
		n = cache[i].n;
		if (n > 0)
			memcpy(offs, cache[i].offs, n * sizeof(*offs));
		pthread_mutex_unlock(&lock);
		return n;
	}
	pthread_mutex_unlock(&lock);
	n = sp_usdt_offsets(file, provider, name, args, offs, max);
	pthread_mutex_lock(&lock);
	i = next++ % 32;
	snprintf(cache[i].path, sizeof(cache[i].path), "%s", path);
	snprintf(cache[i].probe, sizeof(cache[i].probe), "%s", probe);
	cache[i].dev = st.st_dev;
	cache[i].ino = st.st_ino;
	cache[i].mtime = st.st_mtim;
	cache[i].n = n;
	if (n > 0)
		memcpy(cache[i].offs, offs, n * sizeof(*offs));
	pthread_mutex_unlock(&lock);
	return n;
}

#if defined(__x86_64__)
/* The offset in struct pt_regs of an x86-64 register named as in a USDT
 * note's operands (any width), or -1; as libbpf reads them. */
static int reg_offset(const char *name)
{
	static const struct {
		const char *names[4];
		size_t off;
	} regs[] = {
#define R(f) offsetof(struct pt_regs, f)
		{ { "rip", "eip", "", "" }, R(rip) },
		{ { "rax", "eax", "ax", "al" }, R(rax) },
		{ { "rbx", "ebx", "bx", "bl" }, R(rbx) },
		{ { "rcx", "ecx", "cx", "cl" }, R(rcx) },
		{ { "rdx", "edx", "dx", "dl" }, R(rdx) },
		{ { "rsi", "esi", "si", "sil" }, R(rsi) },
		{ { "rdi", "edi", "di", "dil" }, R(rdi) },
		{ { "rbp", "ebp", "bp", "bpl" }, R(rbp) },
		{ { "rsp", "esp", "sp", "spl" }, R(rsp) },
		{ { "r8", "r8d", "r8w", "r8b" }, R(r8) },
		{ { "r9", "r9d", "r9w", "r9b" }, R(r9) },
		{ { "r10", "r10d", "r10w", "r10b" }, R(r10) },
		{ { "r11", "r11d", "r11w", "r11b" }, R(r11) },
		{ { "r12", "r12d", "r12w", "r12b" }, R(r12) },
		{ { "r13", "r13d", "r13w", "r13b" }, R(r13) },
		{ { "r14", "r14d", "r14w", "r14b" }, R(r14) },
		{ { "r15", "r15d", "r15w", "r15b" }, R(r15) },
#undef R
	};
	size_t i, j;

	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (j = 0; j < 4; j++)
			if (regs[i].names[j][0] && !strcmp(regs[i].names[j], name))
				return (int)regs[i].off;
	return -1;
}

int sp_spans_usdt_parse_args(const char *args, struct sp_bs_usdt_spec *spec)
{
	const char *s = args;
	char reg[16];
	long off;
	int size, len, n = 0, r;

	memset(spec, 0, sizeof(*spec));
	while (*s) {
		struct sp_bs_usdt_arg *a;

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		if (n == (int)(sizeof(spec->args) / sizeof(spec->args[0])))
			return -1;
		a = &spec->args[n];
		len = 0;
		if (sscanf(s, " %d @ %ld ( %%%15[^)] ) %n", &size, &off, reg, &len) == 3 && len) {
			a->type = SP_BS_USDT_DEREF;
			a->val_off = (uint64_t)off;
		} else if ((len = 0, sscanf(s, " %d @ ( %%%15[^)] ) %n", &size, reg, &len)) == 2 &&
			   len) {
			a->type = SP_BS_USDT_DEREF;
		} else if ((len = 0, sscanf(s, " %d @ %%%15s %n", &size, reg, &len)) == 2 && len) {
			a->type = SP_BS_USDT_REG;
		} else if ((len = 0, sscanf(s, " %d @ $%ld %n", &size, &off, &len)) == 2 && len) {
			a->type = SP_BS_USDT_CONST;
			a->val_off = (uint64_t)off;
			reg[0] = 0;
		} else {
			return -1;
		}
		if (a->type != SP_BS_USDT_CONST) {
			r = reg_offset(reg);
			if (r < 0)
				return -1;
			a->reg_off = (int16_t)r;
		}
		switch (size) {
		case -1: case -2: case -4: case -8:
			a->sign = 1;
			size = -size;
			/* fall through */
		case 1: case 2: case 4: case 8:
			a->shift = (uint8_t)(64 - size * 8);
			break;
		default:
			return -1;
		}
		n++;
		s += len;
	}
	spec->nargs = (int16_t)n;
	return n;
}
#else
int sp_spans_usdt_parse_args(const char *args, struct sp_bs_usdt_spec *spec)
{
	(void)args;
	memset(spec, 0, sizeof(*spec));
	return -1;	/* libbpf's USDT links read them */
}
#endif

/*
 * Every location of USDT probe provider:name in path: file offset, the file
 * offset of its semaphore (0: none) and its operands, parsed. Cached by
 * file (path, device, inode, mtime) and probe: a forking runtime's
 * children each get their links while they wait, stopped. NULL when the
 * probe is not there or its notes or operands cannot be read here.
 */
#define SP_USDT_LOCS	64
struct usdt_probe_cache {
	char path[PATH_MAX], probe[128];
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	int n;			/* -1: unusable */
	uint64_t off[SP_USDT_LOCS], ref[SP_USDT_LOCS];
	struct sp_bs_usdt_spec spec[SP_USDT_LOCS];
};

static int usdt_probe_add(void *arg, const struct sp_usdt_loc *l)
{
	struct usdt_probe_cache *u = arg;

	if (u->n >= SP_USDT_LOCS || sp_spans_usdt_parse_args(l->args, &u->spec[u->n]) < 0)
		return -1;
	u->off[u->n] = l->off;
	u->ref[u->n] = l->sem_off;
	u->n++;
	return 0;
}

static int usdt_probe_read(const char *path, const char *provider, const char *name,
			   struct usdt_probe_cache *u)
{
	int n;

	u->n = 0;
	n = sp_usdt_locations(path, provider, name, usdt_probe_add, u);
	return n > 0 ? n : -1;
}

/* path: the binary's name (the cache's key); file: what is read (path,
 * or a descriptor's name of it) */
static const struct usdt_probe_cache *usdt_probe(struct bs_ctx *c, const char *path,
						 const char *file, const char *provider,
						 const char *name)
{
	struct usdt_probe_cache *u;
	char probe[128];
	struct stat st;
	size_t i;

	if (stat(file, &st))
		return NULL;
	snprintf(probe, sizeof(probe), "%s:%s", provider, name);
	for (i = 0; i < c->nucache; i++) {
		u = &c->ucache[i];
		if (u->ino == st.st_ino && u->dev == st.st_dev &&
		    u->mtime.tv_sec == st.st_mtim.tv_sec && u->mtime.tv_nsec == st.st_mtim.tv_nsec &&
		    !strcmp(u->probe, probe) && !strcmp(u->path, path))
			return u->n > 0 ? u : NULL;
	}
	if (c->nucache == 32)
		c->nucache = 0;		/* forget them all: rare */
	if (!c->ucache)
		c->ucache = sp_xcalloc(32, sizeof(*c->ucache));
	u = &c->ucache[c->nucache++];
	memset(u, 0, sizeof(*u));
	snprintf(u->path, sizeof(u->path), "%s", path);
	snprintf(u->probe, sizeof(u->probe), "%s", probe);
	u->dev = st.st_dev;
	u->ino = st.st_ino;
	u->mtime = st.st_mtim;
	u->n = usdt_probe_read(file, provider, name, u);
	return u->n > 0 ? u : NULL;
}

/* The number of a marker location (struct bs_loc), 0 when there are too
 * many to number in a cookie. A forgotten location's number is given
 * again: the specs map has SP_BS_MAX_SPECS of them, and with containers
 * coming and going their files would use them up. */
static uint64_t loc_key(const char *bin, uint64_t dev, uint64_t ino, uint64_t off)
{
	return sp_hash_mix(sp_hash_mix(sp_hash_mix(sp_hash_bytes(bin, strlen(bin)), dev), ino),
			   off);
}

static uint64_t file_key(uint64_t dev, uint64_t ino)
{
	return sp_hash_mix(sp_hash_u64(dev) | 1, ino);
}

/* Location l goes: its number to be given again. */
static void loc_release(struct bs_ctx *c, size_t i)
{
	struct bs_loc *l = &c->locs[i];
	uint64_t key = loc_key(l->bin, l->dev, l->ino, l->off), *v;

	v = sp_u64map_get(&c->loc_ids, key);
	if (v && *v == i + 1)
		sp_u64map_del(&c->loc_ids, key);
	free(l->bin);
	l->bin = NULL;
	l->spec = false;
	sp_grow(&c->loc_free, &c->cloc_free, c->nloc_free + 1, sizeof(*c->loc_free));
	c->loc_free[c->nloc_free++] = (uint32_t)(i + 1);
}

static void mark_files(struct sp_u64map *used, const struct bs_proc *p)
{
	size_t k;

	for (k = 0; k < p->natt; k++)
		if (p->att[k]->ino)
			sp_u64map_put(used, file_key(p->att[k]->dev, p->att[k]->ino), 1);
}

/*
 * Every number a cookie can hold is given (SP_BS_MAX_SPECS): those of
 * locations in files no process sp-record knows has probes in any more,
 * nor a hook's shared link, go back. A file's owner who puts inode after
 * inode at one path (or a stream of containers' files) takes numbers at
 * each exec; without this they ran out for every other process of the
 * recording, whose probes then fell back to libbpf's USDT links, slow and
 * capped (a root Ruby held 13.5 s at its exec after 24 such execs).
 */
static void locs_collect(struct bs_ctx *c)
{
	struct sp_u64map used = { 0 };
	uint64_t pid, at;
	size_t it, i;

	for (it = 0; sp_u64map_next(&c->by_pid, &it, &pid, &at);)
		mark_files(&used, c->procs[at - 1]);
	for (i = 0; i < c->ngone; i++)
		mark_files(&used, c->gone[i]);
	for (i = 0; i < c->nshared; i++)
		sp_u64map_put(&used, file_key(c->shared[i].dev, c->shared[i].ino), 1);
	for (i = 0; i < c->nlocs; i++)
		if (c->locs[i].bin && !sp_u64map_get(&used, file_key(c->locs[i].dev, c->locs[i].ino)))
			loc_release(c, i);
	sp_u64map_release(&used);
	c->loc_collections++;
}

uint32_t sp_bs_loc_id(struct bs_ctx *c, const char *bin, uint64_t dev, uint64_t ino,
		      uint64_t off)
{
	uint64_t key = loc_key(bin, dev, ino, off), *v;
	struct bs_loc *l;
	uint32_t id;

	v = sp_u64map_get(&c->loc_ids, key);
	if (v && c->locs[*v - 1].bin && c->locs[*v - 1].off == off &&
	    c->locs[*v - 1].dev == dev && c->locs[*v - 1].ino == ino &&
	    !strcmp(c->locs[*v - 1].bin, bin))
		return (uint32_t)*v;
	if (!c->nloc_free && c->nlocs + 1 >= SP_BS_MAX_SPECS)
		locs_collect(c);
	if (c->nloc_free) {
		id = c->loc_free[--c->nloc_free];
	} else {
		if (c->nlocs >= 0xffffff)
			return 0;
		sp_grow(&c->locs, &c->clocs, c->nlocs + 1, sizeof(*c->locs));
		id = (uint32_t)++c->nlocs;
	}
	l = &c->locs[id - 1];
	l->bin = sp_xstrdup(bin);
	l->off = off;
	l->dev = dev;
	l->ino = ino;
	l->spec = false;	/* its operands written at its first link */
	if (!v)
		sp_u64map_put(&c->loc_ids, key, id);
	return id;
}

/*
 * The file named bin is closed: the name may stand for another file next
 * (a descriptor's number, bpf_spans_root.c), which must not get its
 * locations' numbers, and so their operand specs, nor their literals.
 * A late event of such a number finds no file (read_literal()).
 */
void sp_bs_usdt_forget(struct bs_ctx *c, const char *bin)
{
	size_t i, k = 0;

	for (i = 0; i < c->nlocs; i++)
		if (c->locs[i].bin && !strcmp(c->locs[i].bin, bin))
			loc_release(c, i);
	/* keyed by the file too, but no use kept */
	for (i = 0; i < c->nucache; i++)
		if (strcmp(c->ucache[i].path, bin))
			c->ucache[k++] = c->ucache[i];
	c->nucache = k;
}

/*
 * USDT probe provider:name of bin for p, by a uprobe_multi link (every
 * location of the probe in one link; the cookie is ours, no libbpf spec):
 * semaphores (reference counters) and operands included, each location's
 * operands in the map 'usdt_specs' at its number (bits 8-31 of the
 * cookie). like: as in bin_open(). 0 (also when p is gone, or a fork
 * child's file is not its parent's: said, child_unprobed()), or -1: use a
 * USDT link (operands it cannot read, the kernel has no such links, or
 * refused this one).
 */
int sp_bs_attach_multi(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *prog,
		       const char *bin, const char *provider, const char *name, uint32_t probe,
		       const struct bs_att *like)
{
	union bpf_attr attr;
	struct sp_uprobe_multi_attr *u = (void *)&attr;
	const struct usdt_probe_cache *uc;
	uint64_t offs[SP_USDT_LOCS], cookies[SP_USDT_LOCS];
	struct bs_bin b;
	bool refs = false;
	int n, i, fd, r, e;
	uint32_t id;

	if (c->no_multi)
		return -1;
	r = bin_open_said(c, p, bin, like, &b, NULL);	/* the USDT link says why */
	if (r == BIN_STALE || r == BIN_GONE)
		return 0;
	if (r)
		return -1;
	uc = usdt_probe(c, bin, b.name, provider, name);
	n = uc ? uc->n : -1;
	for (i = 0; i < n; i++) {
		struct bs_loc *l;

		offs[i] = uc->off[i];
		id = sp_bs_loc_id(c, bin, b.dev, b.ino, offs[i]);
		l = id ? &c->locs[id - 1] : NULL;
		if (!l || id >= SP_BS_MAX_SPECS ||
		    (!l->spec && bpf_map__update_elem(c->skel->maps.usdt_specs, &id, sizeof(id),
						      &uc->spec[i], sizeof(uc->spec[i]),
						      BPF_ANY))) {
			n = -1;
			break;
		}
		l->spec = true;
		refs |= uc->ref[i] != 0;
		cookies[i] = (uint64_t)p->gen << 32 | (uint64_t)id << 8 | probe;
	}
	if (n <= 0) {
		bin_close(&b);
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	u->prog_fd = bpf_program__fd(prog);
	u->attach_type = SP_BPF_TRACE_UPROBE_MULTI;
	u->path = (uintptr_t)b.name;
	u->offsets = (uintptr_t)offs;
	u->ref_ctr_offsets = refs ? (uintptr_t)uc->ref : 0;
	u->cookies = (uintptr_t)cookies;
	u->cnt = n;
	u->pid = p->pid;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	e = errno;
	bin_close(&b);
	errno = e;
	if (fd < 0) {
		if (errno == ESRCH)
			return 0;	/* gone: nothing to attach */
		/* this file's link only: whether the kernel has such links
		 * was asked once, at the start (sp_bs_probe_multi()), not of
		 * a file another user may have made */
		if (sp_verbose)
			sp_info("spans: uprobe_multi link for %s:%s in '%s' refused (%s): USDT links",
				provider, name, bin, strerror(errno));
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	sp_bs_att_add_link(p, probe, 0, bin, prog, (struct bs_link){ .fd = fd }, true, NULL);
	att_of_bin(p, &b);
	return 0;
}

/*
 * Whether this kernel has uprobe_multi links (Linux 6.6), asked once at the
 * start as libbpf does: a link asked for on "/" (no regular file) is
 * refused with EBADF by a kernel that has them, EINVAL or EOPNOTSUPP by
 * one that does not. Asking at each attach instead would let a file
 * another user controls (one made shorter than its notes say) turn them
 * off for the whole recording. (Linux 6.6-6.9 without 6.10's fix filter a
 * link with a pid by that thread, not its process; libbpf asks that too,
 * with pid -1, and then uses no such links at all. Not asked here: the
 * shared links, with no pid, are right there, and without them every fork
 * child of a runtime would be held for links of its own.)
 */
bool sp_bs_probe_multi(struct bs_ctx *c)
{
	union bpf_attr attr;
	struct sp_uprobe_multi_attr *u = (void *)&attr;
	uint64_t off = 0, cookie = 0;
	int fd;

	memset(&attr, 0, sizeof(attr));
	u->prog_fd = bpf_program__fd(c->skel->progs.on_marker_multi);
	u->attach_type = SP_BPF_TRACE_UPROBE_MULTI;
	u->path = (uintptr_t)"/";
	u->offsets = (uintptr_t)&off;
	u->cookies = (uintptr_t)&cookie;
	u->cnt = 1;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd >= 0) {
		close(fd);
		return true;
	}
	return errno == EBADF;
}

/* USDT probe provider:name of bin for p: by a uprobe_multi link (prog
 * multi), else by libbpf's USDT link (prog usdt). like: as in bin_open(). */
void sp_bs_attach_any(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *multi,
		      struct bpf_program *usdt, const char *bin, const char *provider,
		      const char *name, uint32_t probe, const struct bs_att *like)
{
	if (sp_bs_attach_multi(c, p, multi, bin, provider, name, probe, like))
		sp_bs_attach_usdt_how(c, p, usdt, bin, provider, name, probe, like);
}

/* The USDT-link program of a marker with fixed-register operands. */
static struct bpf_program *marker_prog(struct bs_ctx *c, uint32_t probe)
{
	struct sp_spans *sk = c->skel;

	switch (probe) {
	case SP_PR_SP_BEGIN:
	case SP_PR_SP_END:
		return sk->progs.on_sp_span_regs;
	case SP_PR_RT_NAME:
		return sk->progs.on_rt_name;
	case SP_PR_RT_RING:
		return sk->progs.on_rt_ring;
	case SP_PR_RT_FLUSH:
		return sk->progs.on_rt_flush;
	case SP_PR_PY_HOOK_AUDIT:
		return sk->progs.on_rt_audit;
	}
	return sk->progs.on_rt_hook;
}

#define SP_MARKER_LOCS	256
/*
 * One uprobe_multi link for the markers probes[0..n) of bin whose operands
 * are args, for process pid with cookies of image generation gen (pid and
 * gen 0: every process that maps bin, attach_shared() in
 * bpf_spans_attach.c); found[k]: the locations of probes[k] (0: the binary
 * lacks it, -1: other operands, or no such links). The link's file
 * descriptor, or -1 (errno ESRCH: pid is gone; 0: no link was tried).
 */
int sp_bs_marker_link(struct bs_ctx *c, const char *bin, const char *file, uint64_t dev,
		      uint64_t ino, const char *args, const uint32_t *probes, int n, uint32_t pid,
		      uint32_t gen, int *found)
{
	uint64_t offs[SP_MARKER_LOCS], cookies[SP_MARKER_LOCS], o[64];
	int total = 0, k, i, fd = -1;
	union bpf_attr attr;
	struct sp_uprobe_multi_attr *u = (void *)&attr;
	uint32_t id;

	for (k = 0; k < n && k < 16; k++) {
		const char *name = strchr(sp_bs_probe_names[probes[k]], ':') + 1;

		found[k] = c->no_multi ? -1 :
			   sp_bs_offsets_cached(bin, file, "stackpulse", name, args, o, 64);
		if (found[k] <= 0)
			continue;
		for (i = 0; i < found[k] && total < SP_MARKER_LOCS; i++) {
			id = sp_bs_loc_id(c, bin, dev, ino, o[i]);
			offs[total] = o[i];
			cookies[total++] = (uint64_t)gen << 32 | (uint64_t)id << 8 | probes[k];
		}
	}
	if (total && total < SP_MARKER_LOCS) {
		memset(&attr, 0, sizeof(attr));
		u->prog_fd = bpf_program__fd(c->skel->progs.on_marker_multi);
		u->attach_type = SP_BPF_TRACE_UPROBE_MULTI;
		u->path = (uintptr_t)file;
		u->offsets = (uintptr_t)offs;
		u->cookies = (uintptr_t)cookies;
		u->cnt = total;
		u->pid = pid;
		fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
		/* this link only (sp_bs_probe_multi()) */
		if (fd < 0 && errno != ESRCH && sp_verbose)
			sp_info("spans: uprobe_multi link for the markers in '%s' refused (%s): "
				"USDT links", bin, strerror(errno));
		if (fd >= 0)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
		return fd;
	}
	errno = 0;	/* no link tried */
	return -1;
}

/*
 * Markers probes[0..n) of bin whose operands are args (fixed registers):
 * one uprobe_multi link for them all, on_marker_multi telling them apart
 * by the cookie (a fork child gets one link per binary, not one per
 * marker). A marker the binary lacks is left out; one whose operands are
 * others, and all of them where the kernel has no such links, get a USDT
 * link each. Each gets its struct bs_att (its probe's health), the first
 * the link, all the same group.
 */
void sp_bs_attach_markers(struct bs_ctx *c, struct bs_proc *p, const char *bin,
			  const char *args, const uint32_t *probes, int n,
			  const struct bs_att *like)
{
	int found[16], k, fd;
	struct bs_bin b;
	uint32_t group;
	bool first = true;

	if (bin_open_said(c, p, bin, like, &b, "the markers"))
		return;
	fd = sp_bs_marker_link(c, bin, b.name, b.dev, b.ino, args, probes, n, p->pid, p->gen,
			       found);
	if (fd < 0 && errno == ESRCH) {
		bin_close(&b);
		return;		/* gone: nothing to attach */
	}
	if (fd >= 0) {
		group = ++c->groups;
		for (k = 0; k < n && k < 16; k++) {
			if (found[k] <= 0)
				continue;
			sp_bs_att_add_link(p, probes[k], 0, bin, c->skel->progs.on_marker_multi,
					   (struct bs_link){ .fd = first ? fd : -1 }, true, args);
			p->att[p->natt - 1]->group = group;
			att_of_bin(p, &b);
			first = false;
		}
	}
	bin_close(&b);
	for (k = 0; k < n && k < 16; k++) {
		const char *name = strchr(sp_bs_probe_names[probes[k]], ':') + 1;

		if (fd < 0 || found[k] < 0)
			sp_bs_attach_usdt_how(c, p, marker_prog(c, probes[k]), bin, "stackpulse",
					      name, probes[k], like);
	}
}
