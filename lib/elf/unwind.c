// SPDX-License-Identifier: MIT
/*
 * DWARF (CFI) unwinding of sampled user stacks, x86_64.
 *
 * We do not use libdwfl's unwinder: it wants a Dwfl per process with its
 * modules re-reported as they change, and tells little about why it stopped.
 * Instead each file's CFI (.eh_frame through .eh_frame_hdr, and .debug_frame
 * when present) is opened once with libdw (dwarf_getcfi_elf, dwarf_getcfi),
 * libdw computes the register rules at a pc (dwarf_cfi_addrframe), and the
 * small DWARF expression evaluator below applies them to the sampled
 * registers, reading memory only from the copied stack. The rules at a pc
 * are cached per file when they are plain ("CFA = reg + off", "saved at
 * CFA + off"), which covers nearly every frame of compiled code, so the
 * common case costs a hash lookup per frame.
 *
 * Every step must move the CFA up, the frame count is bounded, and reads
 * outside [sp, sp + size) stop the unwind with a status.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elf/elffile.h"
#include "hashmap.h"
#include "safefile.h"
#include "sp.h"
#include "unwind.h"

#define NREGS		17	/* DWARF x86_64: 0..15 GP registers, 16 = return address */
#define DW_RAX		0
#define DW_RBX		3
#define DW_RBP		6
#define DW_RSP		7
#define DW_RIP		16
#define EXPR_STACK	64
#define EXPR_STEPS	256
#define PROC_BUCKETS	256
#define FILE_BUCKETS	256
#define RULE_CACHE	4096	/* per file, power of two */
#define MAX_MAPS	65536	/* per process */
#define LOADER_START	128	/* most bytes of ld.so's _start and _dl_start_user */

/* perf register index (PERF_REG_X86_*) of each DWARF register. */
static const unsigned char dwarf_to_perf[NREGS] = {
	0 /* rax=AX */, 3 /* rdx=DX */, 2 /* rcx=CX */, 1 /* rbx=BX */,
	4 /* rsi=SI */, 5 /* rdi=DI */, 6 /* rbp=BP */, 7 /* rsp=SP */,
	16, 17, 18, 19, 20, 21, 22, 23 /* r8..r15 */, 8 /* rip=IP */,
};

enum rule_kind {
	R_UNDEF = 0,	/* the caller's value is lost */
	R_SAME,		/* unchanged */
	R_OFFSET,	/* saved at CFA + off */
	R_VAL_OFFSET,	/* is CFA + off */
	R_REG,		/* is the value of register 'reg' */
};

/* Plain rules at one pc of a file, cached. */
struct rules {
	uint64_t vaddr;		/* key; 0 = empty slot */
	int64_t cfa_off;
	int64_t off[NREGS];
	uint8_t cfa_reg;
	uint8_t kind[NREGS];
	uint8_t reg[NREGS];
	uint8_t ra;
	bool signal;
};

struct uw_file {
	struct uw_file *next;
	char *path;
	/* A path that names no file (sp_elf_path_unlinked()) is read through
	 * map_files only, and is one file per inode: two programs run from
	 * memfds of one name are two files. 0 for the others: by path. */
	uint64_t dev, ino;
	bool loaded, bad;
	bool vdso;
	bool unlinked;
	/* A memfd that holds no ELF (a JIT's code, as .NET's double mapping),
	 * or that could not be read: its code is JIT code. */
	bool memfd, jit;
	Elf *elf;
	Dwarf *dw;
	Dwarf_CFI *eh, *dbg;
	void *image;		/* vdso copy */
	bool read;		/* read through fd, not mapped: others can change it */
	int fd;			/* with read: libelf's descriptor, and file_bytes()'s */
	struct {
		uint64_t off, vaddr, filesz;
	} load[16];
	unsigned int nload;
	uint64_t entry;		/* e_entry: the process's first code, when this is its entry file */
	/* ld.so's _start and _dl_start_user (loader_start()): [entry, this),
	 * or 0 when the code at entry is not theirs */
	uint64_t loader_end;
	/* Where .init and .fini start (0: none): crti's _init and _fini, called
	 * by ld.so for every library, have no CFI */
	uint64_t init_fini[2];
	struct rules *cache;	/* RULE_CACHE slots, allocated on first use */
	uint64_t used;		/* the unwinder's trims when it was last used */
};

struct uw_map {
	uint64_t start, end, pgoff;
	struct uw_file *file;	/* NULL: anonymous executable memory (JIT) */
	bool special;		/* [vsyscall] and the like: no CFI */
	uint64_t time;		/* its record's time stamp (0: told in order) */
};

struct uw_proc {
	struct uw_proc *next;
	uint32_t pid;
	bool told;		/* mappings were reported to us */
	bool proc_read;		/* /proc/PID/maps was read */
	struct uw_map *maps;	/* sorted by start, disjoint */
	size_t n, cap;
	/* Its last exec or fork, by time stamp (0: told in order): a mapping
	 * stamped before it is an earlier image's, read late (map_at). */
	uint64_t since;
};

struct sp_unwinder {
	struct uw_proc *procs[PROC_BUCKETS];
	struct uw_file *files[FILE_BUCKETS];
	bool proc_fallback;
	uint64_t trims;		/* sp_unwinder_trim() calls so far */
	struct sp_unwind_stats st;
	const char *stop_path;
	uint64_t stop_rel;
	unsigned int fp_frames;	/* of the last unwind, left by fp_rules() */
};

/* State of one unwind. */
struct uw_ctx {
	uint64_t regs[NREGS];
	uint32_t valid;		/* bit per register */
	const uint8_t *stack;
	uint64_t lo, hi;	/* copied range [lo, hi) */
	int fault;		/* status of the first failed read, 0 if none */
};

uint64_t sp_unwind_regs_mask(void)
{
	/* AX..IP (0-8) and R8..R15 (16-23): the sample then carries them in
	 * this order, which dwarf_to_perf[] relies on after compaction. */
	return 0x1ffULL | (0xffULL << 16);
}

/* Index of a perf register in the compacted sample order. */
static unsigned int perf_slot(unsigned int perf_reg)
{
	return perf_reg < 9 ? perf_reg : perf_reg - 16 + 9;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct sp_unwinder *sp_unwinder_new(void)
{
	struct sp_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->proc_fallback = true;
	elf_version(EV_CURRENT);
	return u;
}

void sp_unwinder_set_proc_fallback(struct sp_unwinder *u, bool on)
{
	u->proc_fallback = on;
}

/* Whether a user other than root can write the file behind fd (or it
 * cannot be told). */
static bool others_can_change(int fd)
{
	struct stat st;

	return fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Close what file_load() opened (the file's mapping with its ELF): the
 * file is loaded again, through a mapping of it, when a frame needs it. */
static void file_unload(struct uw_file *f)
{
	if (f->dw)
		dwarf_end(f->dw);	/* also ends f->dbg */
	if (f->eh)
		dwarf_cfi_end(f->eh);
	if (f->elf)
		elf_end(f->elf);	/* unmaps it */
	if (f->read)
		close(f->fd);		/* after libelf's last read of it */
	f->read = false;
	free(f->image);
	free(f->cache);
	f->dw = NULL;
	f->dbg = f->eh = NULL;
	f->elf = NULL;
	f->image = NULL;
	f->cache = NULL;
	f->nload = 0;
	f->entry = 0;
	f->loader_end = 0;
	f->init_fini[0] = f->init_fini[1] = 0;
	f->loaded = f->bad = false;
}

/* The files themselves (path, a few bytes) stay: mappings point to them,
 * and sp_unwinder_where()'s paths must stay valid. A file used since the
 * last trim stays loaded: a machine's libc, shells and interpreters are
 * in use all the time, and loading them again (their CFI parsed anew, a
 * lookup in libdw at each frame until the cache of rules is warm again)
 * cost sp-record more than anything the trim saved. */
void sp_unwinder_trim(struct sp_unwinder *u)
{
	struct uw_file *f;
	size_t i;

	for (i = 0; i < FILE_BUCKETS; i++)
		for (f = u->files[i]; f; f = f->next)
			if (f->used != u->trims)
				file_unload(f);
	u->trims++;
}

static void proc_free(struct uw_proc *p)
{
	free(p->maps);
	free(p);
}

void sp_unwinder_free(struct sp_unwinder *u)
{
	unsigned int i;

	if (!u)
		return;
	for (i = 0; i < PROC_BUCKETS; i++) {
		while (u->procs[i]) {
			struct uw_proc *p = u->procs[i];

			u->procs[i] = p->next;
			proc_free(p);
		}
	}
	for (i = 0; i < FILE_BUCKETS; i++) {
		while (u->files[i]) {
			struct uw_file *f = u->files[i];

			u->files[i] = f->next;
			file_unload(f);
			free(f->path);
			free(f);
		}
	}
	free(u);
}

void sp_unwinder_stats(const struct sp_unwinder *u, struct sp_unwind_stats *st)
{
	*st = u->st;
}

const char *sp_unwinder_stop_module(const struct sp_unwinder *u, uint64_t *rel)
{
	if (rel)
		*rel = u->stop_rel;
	return u->stop_path;
}

unsigned int sp_unwinder_fp_frames(const struct sp_unwinder *u)
{
	return u->fp_frames;
}

static struct uw_proc *proc_find(struct sp_unwinder *u, uint32_t pid, bool create)
{
	struct uw_proc **pp = &u->procs[pid % PROC_BUCKETS], *p;

	for (p = *pp; p; p = p->next)
		if (p->pid == pid)
			return p;
	if (!create)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = *pp;
	*pp = p;
	return p;
}

/* Files are kept for the unwinder's life: mappings of one library in many
 * processes share its parsed tables. */
static struct uw_file *file_get(struct sp_unwinder *u, const char *path, uint64_t dev,
			       uint64_t ino)
{
	struct uw_file **pp = &u->files[sp_hash_bytes(path, strlen(path)) % FILE_BUCKETS], *f;

	for (f = *pp; f; f = f->next)
		if (!strcmp(f->path, path) && f->dev == dev && f->ino == ino)
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	f->vdso = !strcmp(path, "[vdso]");
	f->dev = dev;
	f->ino = ino;
	f->unlinked = sp_elf_path_unlinked(path);
	f->memfd = sp_elf_path_memfd(path);
	f->next = *pp;
	*pp = f;
	return f;
}

/* Remove [start, end) from p's mappings, splitting one that straddles it. */
static void maps_punch(struct uw_proc *p, uint64_t start, uint64_t end)
{
	size_t i = 0;

	while (i < p->n) {
		struct uw_map *m = &p->maps[i];

		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		if (m->start < start && m->end > end) {
			/* split in two */
			sp_grow(&p->maps, &p->cap, p->n + 1, sizeof(*p->maps));
			m = &p->maps[i];
			memmove(m + 1, m, (p->n - i) * sizeof(*m));
			p->n++;
			m[0].end = start;
			m[1].pgoff += end - m[1].start;
			m[1].start = end;
			return;
		}
		if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->pgoff += end - m->start;
			m->start = end;
			i++;
		} else {
			memmove(m, m + 1, (p->n - i - 1) * sizeof(*m));
			p->n--;
		}
	}
}

static bool is_anon_path(const char *path)
{
	return !path || !*path || !strcmp(path, "//anon") || !strncmp(path, "[anon", 5) ||
	       !strcmp(path, "[heap]") || !strncmp(path, "[stack", 6) ||
	       !strncmp(path, "/dev/zero", 9);
}

/* The inode a process maps at [start, end), for a path that names none
 * (0, 0 when it cannot be had: the process is gone, or we may not look). */
static void map_inode(uint32_t pid, uint64_t start, uint64_t end, uint64_t *dev, uint64_t *ino)
{
	char name[96];
	struct stat st;

	*dev = *ino = 0;
	snprintf(name, sizeof(name), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	if (pid && stat(name, &st) == 0 && S_ISREG(st.st_mode)) {
		*dev = st.st_dev;
		*ino = st.st_ino;
	}
}

/* The index of p's first mapping that ends after addr. */
static size_t first_ending_after(const struct uw_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Insert m where its start sorts; the place must be free. 0, or -1 past
 * MAX_MAPS (dropped). */
static int maps_insert(struct uw_proc *p, const struct uw_map *m)
{
	size_t lo;

	if (p->n >= MAX_MAPS)
		return -1;
	sp_grow(&p->maps, &p->cap, p->n + 1, sizeof(*p->maps));
	lo = first_ending_after(p, m->start);
	memmove(&p->maps[lo + 1], &p->maps[lo], (p->n - lo) * sizeof(*m));
	p->maps[lo] = *m;
	p->n++;
	return 0;
}

/*
 * Put m in p as the records in time order would have: over what it
 * overlaps that is older (or told in order, time 0), under what is newer
 * (told first, from another CPU's ring): only its pieces that no newer
 * mapping holds go in.
 */
static void maps_place(struct uw_proc *p, const struct uw_map *m)
{
	uint64_t cur = m->start;

	if (!m->time) {
		maps_punch(p, m->start, m->end);
		maps_insert(p, m);
		return;
	}
	while (cur < m->end) {
		uint64_t piece_end = m->end;
		size_t i;

		for (i = first_ending_after(p, cur); i < p->n && p->maps[i].start < m->end; i++) {
			if (p->maps[i].time <= m->time)
				continue;		/* older: the piece goes over it */
			if (p->maps[i].start <= cur) {	/* newer, holding cur */
				cur = p->maps[i].end;
				continue;
			}
			piece_end = p->maps[i].start;
			break;
		}
		if (cur >= m->end)
			break;
		if (piece_end > cur) {
			struct uw_map piece = *m;

			piece.pgoff += cur - m->start;
			piece.start = cur;
			piece.end = piece_end;
			maps_punch(p, cur, piece_end);
			if (maps_insert(p, &piece))
				return;
		}
		cur = piece_end;
	}
}

static int proc_add_map(struct sp_unwinder *u, struct uw_proc *p, uint64_t start, uint64_t end,
			uint64_t pgoff, const char *path, uint64_t time)
{
	struct uw_map m = { .start = start, .end = end, .pgoff = pgoff, .time = time };
	uint64_t dev = 0, ino = 0;

	/* told out of order: stamped before the process's last exec, it is
	 * an earlier image's, read late */
	if (end <= start || (time && time < p->since))
		return 0;
	if (is_anon_path(path)) {
		m.file = NULL;
	} else if (path[0] == '/' || !strcmp(path, "[vdso]")) {
		if (sp_elf_path_unlinked(path))
			map_inode(p->pid, start, end, &dev, &ino);
		m.file = file_get(u, path, dev, ino);
		if (!m.file)
			return -1;
	} else {
		m.special = true;	/* [vsyscall], [uprobes], ... */
	}
	maps_place(p, &m);
	return 0;
}

int sp_unwinder_map_at(struct sp_unwinder *u, uint32_t pid, uint64_t start, uint64_t end,
		       uint64_t pgoff, const char *path, uint64_t time)
{
	struct uw_proc *p = proc_find(u, pid, true);

	if (!p)
		return -1;
	p->told = true;
	return proc_add_map(u, p, start, end, pgoff, path, time);
}

int sp_unwinder_map(struct sp_unwinder *u, uint32_t pid, uint64_t start, uint64_t end,
		    uint64_t pgoff, const char *path)
{
	return sp_unwinder_map_at(u, pid, start, end, pgoff, path, 0);
}

/* Drop p's mappings stamped before time: an earlier image's, or an
 * earlier process's (all of them for 0, told in order). */
static void maps_drop_until(struct uw_proc *p, uint64_t time)
{
	size_t i, n = 0;

	for (i = 0; i < p->n; i++)
		if (time && p->maps[i].time >= time)
			p->maps[n++] = p->maps[i];
	p->n = n;
}

void sp_unwinder_unmap(struct sp_unwinder *u, uint32_t pid, uint64_t start, uint64_t end)
{
	struct uw_proc *p = proc_find(u, pid, false);

	if (p)
		maps_punch(p, start, end);
}

void sp_unwinder_forget(struct sp_unwinder *u, uint32_t pid)
{
	struct uw_proc **pp = &u->procs[pid % PROC_BUCKETS], *p;

	for (; (p = *pp); pp = &p->next) {
		if (p->pid == pid) {
			*pp = p->next;
			proc_free(p);
			return;
		}
	}
}

void sp_unwinder_exec_at(struct sp_unwinder *u, uint32_t pid, uint64_t time)
{
	struct uw_proc *p = proc_find(u, pid, true);

	if (!p)
		return;
	/* Kept as told: a sample taken inside the exec (its registers still
	 * the old image's) must not read /proc, where by now the process may
	 * be gone (or show a later state); the new mappings come as MMAP2
	 * records. */
	p->told = true;
	if (time && time < p->since)
		return;		/* an earlier exec, read after a later one */
	maps_drop_until(p, time);
	p->since = time;
}

void sp_unwinder_exec(struct sp_unwinder *u, uint32_t pid)
{
	sp_unwinder_exec_at(u, pid, 0);
}

int sp_unwinder_fork_at(struct sp_unwinder *u, uint32_t ppid, uint32_t pid, uint64_t time)
{
	struct uw_proc *pp = proc_find(u, ppid, false), *p;
	size_t i;

	if (ppid == pid)
		return 0;
	if (!pp) {
		/* no parent to copy; what was told of the pid before the fork
		 * was an earlier process's all the same */
		p = time ? proc_find(u, pid, false) : NULL;
		if (p && p->since <= time) {
			maps_drop_until(p, time);
			p->since = time;
		}
		return 0;
	}
	if (!time) {
		sp_unwinder_forget(u, pid);	/* an earlier process of that pid */
	} else if ((p = proc_find(u, pid, false)) && p->since > time) {
		return 0;	/* it exec'd since, and that was read first */
	}
	p = proc_find(u, pid, true);
	if (!p)
		return -1;
	p->told = true;
	/* what was told of the pid before the fork was an earlier process's;
	 * what after, the child's own (read first, from another CPU's ring) */
	maps_drop_until(p, time);
	p->since = time;
	if (!p->n) {	/* the usual case: what the parent had mapped by then */
		sp_grow(&p->maps, &p->cap, pp->n, sizeof(*p->maps));
		for (i = 0; i < pp->n; i++)
			if (!time || pp->maps[i].time <= time)
				p->maps[p->n++] = pp->maps[i];
		return 0;
	}
	for (i = 0; i < pp->n; i++) {
		struct uw_map m = pp->maps[i];

		if (m.time > time)
			continue;
		if (!m.time)
			m.time = 1;	/* told in order: older than the child's own */
		maps_place(p, &m);
	}
	return 0;
}

int sp_unwinder_fork(struct sp_unwinder *u, uint32_t ppid, uint32_t pid)
{
	return sp_unwinder_fork_at(u, ppid, pid, 0);
}

/* Executable mappings from /proc/PID/maps, for a process nobody told us about. */
static void proc_read_maps(struct sp_unwinder *u, struct uw_proc *p)
{
	char name[64], line[4096 + 128];
	FILE *fp;

	p->proc_read = true;
	snprintf(name, sizeof(name), "/proc/%u/maps", p->pid);
	fp = fopen(name, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int path_at = 0;
		char *path, *nl;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
			   &path_at) < 4 || perms[2] != 'x')
			continue;
		path = path_at ? line + path_at : line + strlen(line);
		nl = strchr(path, '\n');
		if (nl)
			*nl = 0;
		proc_add_map(u, p, start, end, pgoff, path, 0);
	}
	fclose(fp);
}

/* pid's mappings; for a pid nobody told us about, read from /proc once. */
static struct uw_proc *proc_lookup(struct sp_unwinder *u, uint32_t pid)
{
	struct uw_proc *p = proc_find(u, pid, false);

	if (!p && u->proc_fallback) {
		p = proc_find(u, pid, true);
		if (p)
			proc_read_maps(u, p);
	}
	return p;
}

static const struct uw_map *map_find(const struct uw_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct uw_map *m = &p->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

/* A copy of our own vDSO: the kernel gives every process of an ABI the same image. */
static int load_vdso(struct uw_file *f)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	size_t size = 0;
	unsigned int i;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -1;
	for (i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff) + i;

		if (ph->p_offset + ph->p_filesz > size)
			size = ph->p_offset + ph->p_filesz;
	}
	if (eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize > size)
		size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (!size || size > (1 << 20))
		return -1;
	f->image = malloc(size);
	if (!f->image)
		return -1;
	memcpy(f->image, base, size);
	f->elf = elf_memory(f->image, size);
	return f->elf ? 0 : -1;
}

/* Open a file's ELF and CFI once; on failure the file is marked bad. The
 * mapping's own inode (/proc/PID/map_files) is preferred, so a binary
 * replaced on disk since it was mapped still unwinds with its own tables. */
static uint64_t loader_start(struct uw_file *f);

static void file_load(struct uw_file *f, uint32_t pid, const struct uw_map *m, struct sp_unwinder *u)
{
	char alt[4200];
	GElf_Ehdr ehdr;
	size_t phnum, i, shstrndx;
	Elf_Scn *scn = NULL;
	bool has_debug_frame = false;
	const char *big;
	int fd = -1;

	f->loaded = true;
	f->bad = true;
	u->st.files++;
	if (f->vdso) {
		if (load_vdso(f))
			goto fail;
	} else {
		/* Regular files only (sp_safe_open): a path another user
		 * controls may name a FIFO or a device by now. A path that
		 * names no file (deleted, a memfd) is not opened: anyone may
		 * have made a file of that name. */
		f->jit = f->memfd;
		if (pid) {
			snprintf(alt, sizeof(alt), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid,
				 m->start, m->end);
			fd = sp_safe_open(AT_FDCWD, alt, NULL, NULL, NULL);
		}
		if (fd < 0 && !f->unlinked)
			fd = sp_safe_open(AT_FDCWD, f->path, NULL, NULL, NULL);
		if (fd < 0 && pid && !f->unlinked) {
			snprintf(alt, sizeof(alt), "/proc/%u/root%s", pid, f->path);
			fd = sp_safe_open(AT_FDCWD, alt, NULL, NULL, NULL);
		}
		if (fd < 0)
			goto fail;
		/* A file only root can change is mapped (elf/elffile.h), the
		 * descriptor no longer needed. One another user can change is
		 * read: its owner could truncate it while mapped, and the next
		 * read of its CFI (or of the code bytes before a return
		 * address) past the new end would kill sp-record with SIGBUS. */
		f->read = others_can_change(fd);
		f->elf = sp_elf_begin(fd, f->read ? SP_ELF_READ : SP_ELF_MAP);
		if (!f->elf) {
			f->read = false;
			goto fail;
		}
		if (f->read)
			f->fd = fd;
		else
			close(fd);
		fd = -1;
	}
	if (elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &ehdr) ||
	    ehdr.e_machine != EM_X86_64 || elf_getphdrnum(f->elf, &phnum))
		goto fail;
	f->jit = false;		/* a memfd's ELF: a program run from it */
	f->entry = ehdr.e_entry;
	for (i = 0; i < phnum && f->nload < 16; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->load[f->nload].off = ph.p_offset;
		f->load[f->nload].vaddr = ph.p_vaddr;
		f->load[f->nload].filesz = ph.p_filesz;
		f->nload++;
	}
	if (!f->nload)
		goto fail;
	f->loader_end = loader_start(f);
	/* another user's file is read, not mapped, and libdw reads what it
	 * takes of it whole: at the sizes its owner wrote (a sparse file of a
	 * few KB on disk said 3 GiB, and root's sp-record grew to that) */
	if (f->read && (big = sp_elf_dwarf_too_big(f->elf, false))) {
		sp_warn("'%s' says its %s is larger than %u MiB: its frames are not unwound "
			"(a sparse or forged file)", f->path, big, SP_ELF_CFI_MAX >> 20);
		goto fail;
	}
	f->eh = dwarf_getcfi_elf(f->elf);
	if (!sp_elf_shstrndx(f->elf, &shstrndx)) {
		while ((scn = elf_nextscn(f->elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(f->elf, shstrndx, sh.sh_name);
			if (name && !strcmp(name, ".debug_frame") && sh.sh_type == SHT_PROGBITS)
				has_debug_frame = true;
			if (name && sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) &&
			    (!strcmp(name, ".init") || !strcmp(name, ".fini")))
				f->init_fini[name[1] == 'f'] = sh.sh_addr;
		}
	}
	if (has_debug_frame && f->read && (big = sp_elf_dwarf_too_big(f->elf, true))) {
		sp_warn("'%s' says its %s is larger than %u MiB: its .debug_frame is not read",
			f->path, big, SP_ELF_CFI_MAX >> 20);
		has_debug_frame = false;
	}
	if (has_debug_frame) {
		f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
		if (f->dw)
			f->dbg = dwarf_getcfi(f->dw);
	}
	if (!f->eh && !f->dbg)
		goto fail;
	f->bad = false;
	return;
fail:
	if (fd >= 0)
		close(fd);
	file_unload(f);		/* of a bad file only its name is kept */
	f->loaded = f->bad = true;
	u->st.files_bad++;
}

/* File-relative (ELF virtual) address of addr in mapping m. */
static bool map_vaddr(const struct uw_map *m, uint64_t addr, uint64_t *vaddr)
{
	const struct uw_file *f = m->file;
	uint64_t off = addr - m->start + m->pgoff;
	unsigned int i;

	for (i = 0; i < f->nload; i++) {
		if (off >= f->load[i].off && off < f->load[i].off + f->load[i].filesz) {
			*vaddr = off - f->load[i].off + f->load[i].vaddr;
			return true;
		}
	}
	return false;
}

static int read_u64(struct uw_ctx *c, uint64_t addr, uint64_t *val)
{
	if (addr < c->lo || addr > UINT64_MAX - 8) {
		if (!c->fault)
			c->fault = SP_UNWIND_ERROR;
		return -1;
	}
	if (addr + 8 > c->hi) {
		/* Nothing copied at all is no copy too small: the stack
		 * pointer was in no mapping, as in a sample inside execve
		 * (the old image's registers, the new image's memory). */
		if (!c->fault)
			c->fault = c->hi == c->lo ? SP_UNWIND_UNKNOWN_MAP : SP_UNWIND_STACK_SIZE;
		return -1;
	}
	memcpy(val, c->stack + (addr - c->lo), 8);
	return 0;
}

static int reg_get(struct uw_ctx *c, uint64_t regno, uint64_t *val)
{
	if (regno >= NREGS || !(c->valid & (1u << regno))) {
		if (!c->fault)
			c->fault = SP_UNWIND_ERROR;
		return -1;
	}
	*val = c->regs[regno];
	return 0;
}

/* One evaluation of a DWARF expression: its operations, what it may use,
 * and its stack. */
struct expr {
	struct uw_ctx *c;
	const Dwarf_Op *ops;
	size_t nops;
	const uint64_t *cfa;	/* NULL while computing the CFA */
	uint64_t bias;
	uint64_t st[EXPR_STACK];
	unsigned int sp;
	bool is_location;	/* the result is where the value is */
};

#define PUSH(v) do { if (x->sp >= EXPR_STACK) return -1; x->st[x->sp++] = (v); } while (0)
#define POP(v) do { if (!x->sp) return -1; (v) = x->st[--x->sp]; } while (0)

/* Operation ops[*i] on the stack; a branch sets *i to the operation before
 * its target. 0, or -1 when it cannot be done (c->fault may say why). */
static int expr_op(struct expr *x, size_t *i)
{
	const Dwarf_Op *op = &x->ops[*i];
	uint64_t a, b;

	switch (op->atom) {
	case DW_OP_lit0 ... DW_OP_lit31:
		PUSH(op->atom - DW_OP_lit0);
		break;
	case DW_OP_addr:
		PUSH(op->number + x->bias);
		break;
	case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
	case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
	case DW_OP_constu: case DW_OP_consts:
		PUSH(op->number);
		break;
	case DW_OP_reg0 ... DW_OP_reg31:
		if (reg_get(x->c, op->atom - DW_OP_reg0, &a))
			return -1;
		PUSH(a);
		break;
	case DW_OP_regx:
		if (reg_get(x->c, op->number, &a))
			return -1;
		PUSH(a);
		break;
	case DW_OP_breg0 ... DW_OP_breg31:
		if (reg_get(x->c, op->atom - DW_OP_breg0, &a))
			return -1;
		PUSH(a + op->number);
		break;
	case DW_OP_bregx:
		if (reg_get(x->c, op->number, &a))
			return -1;
		PUSH(a + op->number2);
		break;
	case DW_OP_dup:
		POP(a);
		PUSH(a);
		PUSH(a);
		break;
	case DW_OP_drop:
		POP(a);
		break;
	case DW_OP_pick:
		if (op->number >= x->sp)
			return -1;
		a = x->st[x->sp - 1 - op->number];
		PUSH(a);
		break;
	case DW_OP_over:
		if (x->sp < 2)
			return -1;
		a = x->st[x->sp - 2];
		PUSH(a);
		break;
	case DW_OP_swap:
		if (x->sp < 2)
			return -1;
		a = x->st[x->sp - 1];
		x->st[x->sp - 1] = x->st[x->sp - 2];
		x->st[x->sp - 2] = a;
		break;
	case DW_OP_rot:
		if (x->sp < 3)
			return -1;
		a = x->st[x->sp - 1];
		x->st[x->sp - 1] = x->st[x->sp - 2];
		x->st[x->sp - 2] = x->st[x->sp - 3];
		x->st[x->sp - 3] = a;
		break;
	case DW_OP_deref:
	case DW_OP_deref_size:
		POP(a);
		if (read_u64(x->c, a, &b))
			return -1;
		if (op->atom == DW_OP_deref_size) {
			if (op->number > 8)
				return -1;
			if (op->number < 8)
				b &= (1ULL << (op->number * 8)) - 1;
		}
		PUSH(b);
		break;
	case DW_OP_abs:
		POP(a);
		PUSH((int64_t)a < 0 ? -a : a);
		break;
	case DW_OP_neg:
		POP(a);
		PUSH(-a);
		break;
	case DW_OP_not:
		POP(a);
		PUSH(~a);
		break;
	case DW_OP_plus_uconst:
		POP(a);
		PUSH(a + op->number);
		break;
#define BINOP(atom, expr) case atom: POP(b); POP(a); PUSH(expr); break;
	BINOP(DW_OP_and, a & b)
	BINOP(DW_OP_minus, a - b)
	BINOP(DW_OP_mul, a * b)
	BINOP(DW_OP_or, a | b)
	BINOP(DW_OP_plus, a + b)
	BINOP(DW_OP_shl, b >= 64 ? 0 : a << b)
	BINOP(DW_OP_shr, b >= 64 ? 0 : a >> b)
	BINOP(DW_OP_shra, (uint64_t)((int64_t)a >> (b >= 64 ? 63 : b)))
	BINOP(DW_OP_xor, a ^ b)
	BINOP(DW_OP_le, (int64_t)a <= (int64_t)b)
	BINOP(DW_OP_ge, (int64_t)a >= (int64_t)b)
	BINOP(DW_OP_eq, a == b)
	BINOP(DW_OP_lt, (int64_t)a < (int64_t)b)
	BINOP(DW_OP_gt, (int64_t)a > (int64_t)b)
	BINOP(DW_OP_ne, a != b)
#undef BINOP
	case DW_OP_div:
		POP(b);
		POP(a);
		if (!b || ((int64_t)a == INT64_MIN && (int64_t)b == -1))
			return -1;
		PUSH((uint64_t)((int64_t)a / (int64_t)b));
		break;
	case DW_OP_mod:
		POP(b);
		POP(a);
		if (!b)
			return -1;
		PUSH(a % b);
		break;
	case DW_OP_bra:
	case DW_OP_skip: {
		uint64_t target;
		size_t j;

		if (op->atom == DW_OP_bra) {
			POP(a);
			if (!a)
				break;
		}
		target = op->offset + 3 + (int16_t)op->number;
		for (j = 0; j < x->nops && x->ops[j].offset != target; j++)
			;
		if (j == x->nops)
			return -1;
		*i = j - 1;	/* the loop's i++ lands on j; steps bound it */
		break;
	}
	case DW_OP_nop:
		break;
	case DW_OP_call_frame_cfa:
		if (!x->cfa)
			return -1;
		PUSH(*x->cfa);
		x->is_location = true;
		break;
	case DW_OP_stack_value:
		x->is_location = false;
		break;
	default:
		return -1;
	}
	return 0;
}

#undef PUSH
#undef POP

/*
 * Evaluate a DWARF expression as libdw hands CFI rules over: the result is
 * a location (read from the stack) once DW_OP_call_frame_cfa has been seen,
 * unless DW_OP_stack_value follows. cfa is NULL while computing the CFA.
 */
static int expr_eval(struct uw_ctx *c, const Dwarf_Op *ops, size_t nops, const uint64_t *cfa,
		     uint64_t bias, uint64_t *result)
{
	struct expr x;
	unsigned int steps = 0;
	size_t i;

	x.c = c;
	x.ops = ops;
	x.nops = nops;
	x.cfa = cfa;
	x.bias = bias;
	x.sp = 0;
	x.is_location = false;
	if (!nops)
		goto bad;
	for (i = 0; i < nops; i++)
		if (++steps > EXPR_STEPS || expr_op(&x, &i))
			goto bad;
	if (!x.sp)
		goto bad;
	if (x.is_location)
		return read_u64(c, x.st[x.sp - 1], result);
	*result = x.st[x.sp - 1];
	return 0;
bad:
	if (!c->fault)
		c->fault = SP_UNWIND_ERROR;
	return -1;
}

/*
 * libdw's x86-64 ABI defaults (elfutils' x86_64_abi_cfi) give "same value"
 * to DWARF register 0 (rax) where the psABI means rbx (3), so rbx comes out
 * undefined in every frame whose CFI does not save it. A frame whose CFA is
 * rbx-based, glibc's _dl_runtime_resolve under _dl_fixup, then stops the
 * unwind. rbx is callee-saved: an undefined rbx is taken as unchanged.
 * Compilers never emit DW_CFA_undefined for rbx, so nothing true is lost.
 */
static bool abi_same_value(int regno)
{
	return regno == DW_RBX;
}

/* And rax, caller-saved, which those defaults call "same value": its value
 * in a caller is unknown (only a signal frame's CFI restores it). */
static bool abi_undefined(int regno)
{
	return regno == DW_RAX;
}

/*
 * Turn libdw's rules at a pc into plain rules when they all are plain.
 * Returns false when some rule needs the general evaluator.
 */
static bool rules_compile(Dwarf_Frame *fr, struct rules *r)
{
	Dwarf_Op *ops, mem[3];
	size_t nops;
	bool signal = false;
	int ra, i;

	ra = dwarf_frame_info(fr, NULL, NULL, &signal);
	if (ra < 0 || ra >= NREGS)
		return false;
	r->ra = ra;
	r->signal = signal;
	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1)
		return false;
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		r->cfa_reg = ops[0].atom - DW_OP_breg0;
		r->cfa_off = (int64_t)ops[0].number;
	} else if (ops[0].atom == DW_OP_bregx) {
		r->cfa_reg = ops[0].number;
		r->cfa_off = (int64_t)ops[0].number2;
	} else {
		return false;
	}
	if (r->cfa_reg >= NREGS)
		return false;
	for (i = 0; i < NREGS; i++) {
		if (dwarf_frame_register(fr, i, mem, &ops, &nops))
			return false;
		r->off[i] = 0;
		r->reg[i] = 0;
		if (nops == 0) {
			r->kind[i] = (ops && !abi_same_value(i)) || abi_undefined(i) ? R_UNDEF : R_SAME;
		} else if (ops[0].atom == DW_OP_call_frame_cfa) {
			size_t n = 1;

			if (nops >= 2 && ops[1].atom == DW_OP_plus_uconst)
				r->off[i] = (int64_t)ops[n++].number;
			if (n == nops)
				r->kind[i] = R_OFFSET;
			else if (n + 1 == nops && ops[n].atom == DW_OP_stack_value)
				r->kind[i] = R_VAL_OFFSET;
			else
				return false;
		} else if (nops == 1 && ops[0].atom == DW_OP_regx && ops[0].number < NREGS) {
			r->kind[i] = R_REG;
			r->reg[i] = ops[0].number;
		} else {
			return false;
		}
	}
	return true;
}

/* Apply plain rules: the caller's registers into out. 0, or -1 with c->fault. */
static int rules_apply(struct uw_ctx *c, const struct rules *r, uint64_t *cfa_out,
		       uint64_t *out, uint32_t *valid_out)
{
	uint64_t cfa, v;
	uint32_t valid = 0;
	int i;

	if (reg_get(c, r->cfa_reg, &cfa))
		return -1;
	cfa += r->cfa_off;
	for (i = 0; i < NREGS; i++) {
		switch (r->kind[i]) {
		case R_UNDEF:
			continue;
		case R_SAME:
			if (!(c->valid & (1u << i)))
				continue;
			v = c->regs[i];
			break;
		case R_OFFSET:
			if (read_u64(c, cfa + r->off[i], &v)) {
				if (i == r->ra)
					return -1;
				c->fault = 0;	/* a lost callee-saved register only matters if used */
				continue;
			}
			break;
		case R_VAL_OFFSET:
			v = cfa + r->off[i];
			break;
		case R_REG:
			if (!(c->valid & (1u << r->reg[i])))
				continue;
			v = c->regs[r->reg[i]];
			break;
		default:
			continue;
		}
		out[i] = v;
		valid |= 1u << i;
	}
	*cfa_out = cfa;
	*valid_out = valid;
	return 0;
}

/* The general path, for frames whose rules are expressions (PLT, signal
 * trampolines, realigned stacks). */
static int frame_apply(struct uw_ctx *c, Dwarf_Frame *fr, uint64_t bias, int ra,
		       uint64_t *cfa_out, uint64_t *out, uint32_t *valid_out, bool *ra_undef)
{
	Dwarf_Op *ops, mem[3];
	size_t nops;
	uint64_t cfa, v;
	uint32_t valid = 0;
	int i;

	*ra_undef = false;
	if (dwarf_frame_cfa(fr, &ops, &nops) || !nops) {
		c->fault = SP_UNWIND_NO_CFI;
		return -1;
	}
	if (expr_eval(c, ops, nops, NULL, bias, &cfa))
		return -1;
	for (i = 0; i < NREGS; i++) {
		if (dwarf_frame_register(fr, i, mem, &ops, &nops))
			continue;
		if (nops == 0) {
			if ((ops && !abi_same_value(i)) || abi_undefined(i)) {
				if (i == ra)
					*ra_undef = true;
				continue;
			}
			if (!(c->valid & (1u << i)))
				continue;
			v = c->regs[i];
		} else if (expr_eval(c, ops, nops, &cfa, bias, &v)) {
			if (i == ra)
				return -1;
			c->fault = 0;
			continue;
		}
		out[i] = v;
		valid |= 1u << i;
	}
	*cfa_out = cfa;
	*valid_out = valid;
	return 0;
}

/* n bytes of the file at ELF virtual address vaddr, all within one PT_LOAD
 * segment's file part. */
static bool file_bytes(struct uw_file *f, uint64_t vaddr, uint8_t *buf, size_t n)
{
	const char *raw = NULL;
	size_t size = 0;
	unsigned int i;

	/* A file that is read, not mapped: pread (a cut file gives a short
	 * read), never elf_rawfile(), which would read all of it. */
	if (!f->read && !(raw = f->elf ? elf_rawfile(f->elf, &size) : NULL))
		return false;
	for (i = 0; i < f->nload; i++) {
		uint64_t off;

		if (vaddr < f->load[i].vaddr || vaddr - f->load[i].vaddr > f->load[i].filesz ||
		    n > f->load[i].filesz - (vaddr - f->load[i].vaddr))
			continue;
		off = vaddr - f->load[i].vaddr + f->load[i].off;
		if (f->read)
			return off <= (uint64_t)INT64_MAX &&
			       pread(f->fd, buf, n, (off_t)off) == (ssize_t)n;
		if (off > size || n > size - off)
			return false;
		memcpy(buf, raw + off, n);
		return true;
	}
	return false;
}

/*
 * The end of ld.so's entry code when f is glibc's x86-64 ld.so, else 0:
 * at e_entry its _start, "mov %rsp,%rdi; call _dl_start", then
 * _dl_start_user, which calls _dl_init (the libraries' constructors) and
 * leaves for the program's entry with "jmp *%r12". None of it has CFI;
 * every thread of a process starts there and every frame in it is its
 * first. Recognised by e_entry and these bytes, not by a symbol name.
 */
static uint64_t loader_start(struct uw_file *f)
{
	static const uint8_t start[] = { 0x48, 0x89, 0xe7, 0xe8 };	/* mov %rsp,%rdi; call */
	static const uint8_t leave[] = { 0x41, 0xff, 0xe4 };		/* jmp *%r12 */
	uint8_t b[LOADER_START];
	size_t i;

	if (!f->entry || !file_bytes(f, f->entry, b, sizeof(b)) || memcmp(b, start, sizeof(start)))
		return 0;
	for (i = sizeof(start) + 4; i + sizeof(leave) <= sizeof(b); i++)
		if (!memcmp(b + i, leave, sizeof(leave)))
			return f->entry + i + sizeof(leave);
	return 0;
}

/*
 * Whether pc (file-relative; a return address unless exact) is its
 * thread's first frame because it is in the entry code of f: e_entry
 * itself, where the kernel starts a process (a sample taken as execve
 * returns), or ld.so's _start and _dl_start_user (loader_start()), any pc
 * in them or a return address that follows one of their calls (of
 * _dl_start, of _dl_init). Not any address near e_entry: what follows the
 * jump to the program is another function.
 */
static bool entry_frame(struct uw_file *f, uint64_t pc, bool exact)
{
	uint8_t op;

	if (!f->entry)
		return false;
	if (exact && pc == f->entry)
		return true;
	if (!f->loader_end || pc < f->entry || pc >= f->loader_end)
		return false;
	if (exact)
		return true;
	return pc >= f->entry + 5 && file_bytes(f, pc - 5, &op, 1) && op == 0xe8;
}

/*
 * glibc's clone and clone3 end their CFI at the syscall that starts a
 * thread and give the new thread's code its own "first frame" FDE, so the
 * few bytes right after the syscall have none: the child comes out there on
 * an empty stack. A thread sampled inside that syscall (creating threads is
 * slow, a thread-per-request server spends percents of its samples there)
 * stops in the gap. True when vaddr follows `mov $clone_nr,%eax; syscall`.
 */
static bool after_thread_start_syscall(struct uw_file *f, uint64_t vaddr)
{
	uint8_t b[7];
	uint32_t nr;

	if (vaddr < sizeof(b) || !file_bytes(f, vaddr - sizeof(b), b, sizeof(b)))
		return false;
	if (b[0] != 0xb8 || b[5] != 0x0f || b[6] != 0x05)
		return false;
	memcpy(&nr, b + 1, sizeof(nr));
	return nr == 56 /* clone */ || nr == 435 /* clone3 */;
}

/* The rules of a leaf function that has pushed nothing: return address at
 * rsp, every other register the caller's. */
static void leaf_rules(struct rules *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < NREGS; i++)
		r->kind[i] = R_SAME;
	r->kind[DW_RSP] = R_UNDEF;	/* step() sets it to the CFA */
	r->cfa_reg = DW_RSP;
	r->cfa_off = 8;
	r->ra = DW_RIP;
	r->kind[DW_RIP] = R_OFFSET;
	r->off[DW_RIP] = -8;
}

/* True when the bytes before ra in its file end a call instruction: ra is
 * a return address, not data that happens to point into code. */
static bool after_call(const struct uw_map *m, uint64_t ra)
{
	uint8_t b[7];
	uint64_t vaddr;
	unsigned int len;

	if (m->file->bad || ra - m->start < sizeof(b) || !map_vaddr(m, ra - sizeof(b), &vaddr) ||
	    !file_bytes(m->file, vaddr, b, sizeof(b)))
		return false;
	if (b[2] == 0xe8)		/* call rel32 */
		return true;
	/* call *r/m (ff /2): 2 to 7 bytes from the opcode, its ModRM after it */
	for (len = 2; len <= 7; len++)
		if (b[7 - len] == 0xff && (b[8 - len] & 0x38) == 0x10)
			return true;
	return false;
}

/* Whether the word at at, in the copied stack, is a return address: it
 * points just after a call instruction in a mapped file. */
static bool return_address_at(struct sp_unwinder *u, const struct uw_ctx *c, uint32_t pid,
			      const struct uw_proc *p, uint64_t at)
{
	const struct uw_map *m;
	uint64_t ra;

	if (at < c->lo || at > c->hi || c->hi - at < 8)
		return false;
	memcpy(&ra, c->stack + (at - c->lo), 8);
	m = ra ? map_find(p, ra - 1) : NULL;
	if (!m || !m->file)
		return false;
	m->file->used = u->trims;
	if (!m->file->loaded)
		file_load(m->file, pid, m, u);
	return after_call(m, ra);
}

/*
 * A sample at the very first instruction of _init or _fini (or just after
 * its endbr64), code without CFI that ld.so calls for every library it
 * loads: a library's first touch of the page there takes a page fault, and
 * the sample lands there. Nothing is pushed yet: the return address is at
 * rsp, taken only when it follows a call instruction in a mapped file.
 */
static bool init_fini_entry_rules(struct sp_unwinder *u, struct uw_ctx *c, uint32_t pid,
				  const struct uw_proc *p, struct uw_file *f, uint64_t vaddr,
				  struct rules *r)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t b[4];
	int i;

	for (i = 0; i < 2; i++) {
		uint64_t at = f->init_fini[i];

		if (at && (vaddr == at || (vaddr == at + 4 && file_bytes(f, at, b, 4) &&
					   !memcmp(b, endbr64, 4))))
			break;
	}
	if (i == 2 || !p || !(c->valid & (1u << DW_RSP)) ||
	    !return_address_at(u, c, pid, p, c->regs[DW_RSP]))
		return false;
	leaf_rules(r);
	return true;
}

/*
 * Code without CFI (crtstuff's __do_global_dtors_aux, hand-written
 * assembly) that keeps a frame pointer: the caller's frame is at rbp, as
 * elfutils' x86-64 fallback takes it. Only when rbp lies in the copied stack
 * above sp and the return address there is in a mapped file: otherwise the
 * frame stays "no CFI" and is said so. A sample at such a function's first
 * instructions, before its push of rbp, loses its direct caller.
 */
static bool fp_rules(struct sp_unwinder *u, struct uw_ctx *c, uint32_t pid,
		     const struct uw_proc *p, struct rules *r)
{
	uint64_t fp;

	if (!p || !(c->valid & (1u << DW_RBP)) || !(c->valid & (1u << DW_RSP)))
		return false;
	fp = c->regs[DW_RBP];
	if (fp < c->regs[DW_RSP] || fp > UINT64_MAX - 8 || !return_address_at(u, c, pid, p, fp + 8))
		return false;
	leaf_rules(r);
	r->cfa_reg = DW_RBP;
	r->cfa_off = 16;
	r->kind[DW_RBP] = R_OFFSET;
	r->off[DW_RBP] = -16;
	return true;
}

static struct rules *cache_slot(struct uw_file *f, uint64_t vaddr)
{
	uint64_t h = vaddr * 0x9e3779b97f4a7c15ULL;

	if (!f->cache) {
		f->cache = calloc(RULE_CACHE, sizeof(*f->cache));
		if (!f->cache)
			return NULL;
	}
	return &f->cache[(h >> 40) & (RULE_CACHE - 1)];
}

/*
 * One step: from the frame at pc (registers in c) to its caller. Returns
 * 0 with the caller's registers in c, 1 when this was the outermost frame
 * (return address undefined), or -1 with *status set.
 */
static int step(struct sp_unwinder *u, struct uw_ctx *c, uint32_t pid, const struct uw_proc *p,
		uint64_t pc, bool exact, uint64_t *cfa_io, bool *signal, int *status)
{
	const struct uw_map *m;
	uint64_t lookup = exact ? pc : pc - 1, vaddr, cfa, out[NREGS];
	uint32_t valid;
	struct rules tmp, *slot;
	Dwarf_Frame *fr = NULL;
	bool ra_undef = false, guess = false;
	int ra, rc;

	m = p ? map_find(p, lookup) : NULL;
	u->stop_path = NULL;
	u->stop_rel = pc;
	if (!m && p && (m = map_find(p, pc)) && m->special) {
		/* A return address at the start of [uprobes]: a uretprobe's
		 * trampoline, which has no CFI (not a missed mapping). */
		*status = SP_UNWIND_NO_CFI;
		return -1;
	}
	if (!m) {
		*status = SP_UNWIND_UNKNOWN_MAP;
		return -1;
	}
	if (!m->file) {
		*status = m->special ? SP_UNWIND_NO_CFI : SP_UNWIND_JIT;
		return -1;
	}
	u->stop_path = m->file->path;
	m->file->used = u->trims;
	if (!m->file->loaded)
		file_load(m->file, pid, m, u);
	if (m->file->bad || !map_vaddr(m, lookup, &vaddr)) {
		*status = m->file->jit ? SP_UNWIND_JIT : SP_UNWIND_NO_CFI;
		return -1;
	}
	u->stop_rel = vaddr + (pc - lookup);

	slot = cache_slot(m->file, vaddr);
	if (slot && slot->vaddr == vaddr + 1) {
		rc = rules_apply(c, slot, &cfa, out, &valid);
		ra = slot->ra;
		*signal = slot->signal;
		ra_undef = slot->kind[ra] == R_UNDEF;
	} else {
		if ((!m->file->eh || dwarf_cfi_addrframe(m->file->eh, vaddr, &fr)) &&
		    (!m->file->dbg || dwarf_cfi_addrframe(m->file->dbg, vaddr, &fr))) {
			/* ld.so's entry code has no CFI: there the stack is
			 * complete anyway */
			if (entry_frame(m->file, u->stop_rel, exact))
				return 1;
			if (!exact || !after_thread_start_syscall(m->file, vaddr)) {
				/* at _init's entry nothing is pushed: no guess; through a
				 * frame pointer it is one (fp_rules()) */
				if ((exact && init_fini_entry_rules(u, c, pid, p, m->file, vaddr,
								    &tmp)) ||
				    (guess = fp_rules(u, c, pid, p, &tmp))) {
					*signal = false;
					rc = rules_apply(c, &tmp, &cfa, out, &valid);
					ra = tmp.ra;
					ra_undef = false;
					goto applied;
				}
				*status = SP_UNWIND_NO_CFI;
				return -1;
			}
			/* The child has rax 0 there (the syscall's return): its
			 * first frame. The parent is still in the wrapper, which
			 * pushed nothing: a sample inside the syscall has rax
			 * -ENOSYS, one just after it the child's tid. */
			if ((c->valid & 1u) && c->regs[0] == 0)
				return 1;
			leaf_rules(&tmp);
			*signal = false;
			rc = rules_apply(c, &tmp, &cfa, out, &valid);
			ra = tmp.ra;
			ra_undef = false;
			goto applied;
		}
		ra = dwarf_frame_info(fr, NULL, NULL, signal);
		if (ra < 0 || ra >= NREGS) {
			free(fr);
			*status = SP_UNWIND_ERROR;
			return -1;
		}
		memset(&tmp, 0, sizeof(tmp));
		if (slot && rules_compile(fr, &tmp)) {
			tmp.vaddr = vaddr + 1;	/* 0 marks an empty slot */
			*slot = tmp;
			rc = rules_apply(c, slot, &cfa, out, &valid);
			ra_undef = slot->kind[ra] == R_UNDEF;
		} else {
			rc = frame_apply(c, fr, m->start - m->pgoff, ra, &cfa, out, &valid,
					 &ra_undef);
		}
		free(fr);
	}
applied:
	if (rc) {
		*status = c->fault ? c->fault : SP_UNWIND_ERROR;
		return -1;
	}
	if (ra_undef)
		return 1;	/* _start, clone's child: the thread's first frame */
	if (!(valid & (1u << ra))) {
		*status = SP_UNWIND_ERROR;
		return -1;
	}
	if (cfa <= *cfa_io) {
		*status = SP_UNWIND_ERROR;	/* the stack must grow towards the caller */
		return -1;
	}
	*cfa_io = cfa;
	if (!(valid & (1u << DW_RSP))) {
		out[DW_RSP] = cfa;
		valid |= 1u << DW_RSP;
	}
	out[DW_RIP] = out[ra];
	valid |= 1u << DW_RIP;
	memcpy(c->regs, out, sizeof(out));
	c->valid = valid;
	u->fp_frames += guess;	/* counted once the caller's frame is taken */
	return 0;
}

unsigned int sp_unwinder_unwind(struct sp_unwinder *u, uint32_t pid, uint32_t tid,
				const uint64_t *regs, unsigned int nregs,
				const uint8_t *stack, size_t size,
				uint64_t *ips, unsigned int max, enum sp_unwind_status *status)
{
	struct uw_ctx c = { .stack = stack };
	struct uw_proc *p;
	uint64_t t0 = now_ns(), pc, cfa;
	unsigned int n = 0, i;
	bool exact = true, signal = false;
	int st = SP_UNWIND_ERROR, rc;

	u->st.samples++;
	u->stop_path = NULL;
	u->stop_rel = 0;
	u->fp_frames = 0;
	if (max > SP_UNWIND_MAX_FRAMES)
		max = SP_UNWIND_MAX_FRAMES;
	for (i = 0; i < NREGS; i++) {
		unsigned int slot = perf_slot(dwarf_to_perf[i]);

		if (regs && slot < nregs) {
			c.regs[i] = regs[slot];
			c.valid |= 1u << i;
		}
	}
	if (!(c.valid & (1u << DW_RIP)) || !(c.valid & (1u << DW_RSP)))
		goto out;
	if (!max) {
		st = SP_UNWIND_DEPTH;	/* the caller's frames (kernel ones) took all room */
		goto out;
	}
	c.lo = c.regs[DW_RSP];
	c.hi = stack && size <= UINT64_MAX - c.lo ? c.lo + size : c.lo;
	p = proc_lookup(u, pid);
	/* The first CFA may equal the sampled sp (a function that has popped
	 * its return address into a register: glibc's __vfork), the next ones
	 * must each rise. */
	cfa = c.lo ? c.lo - 1 : 0;
	pc = c.regs[DW_RIP];
	for (;;) {
		ips[n++] = pc;
		c.fault = 0;
		rc = step(u, &c, pid, p, pc, exact, &cfa, &signal, &st);
		if (rc < 0)
			break;
		if (rc > 0) {
			st = SP_UNWIND_COMPLETE;
			break;
		}
		pc = c.regs[DW_RIP];
		if (!pc) {
			st = SP_UNWIND_COMPLETE;	/* a zero return address ends the chain */
			break;
		}
		if (n >= max) {
			st = SP_UNWIND_DEPTH;
			break;
		}
		/* The caller of a signal frame was interrupted, not calling. */
		exact = signal;
	}
out:
	(void)tid;
	*status = st;
	u->st.frames += n;
	u->st.status[st & 7]++;
	u->st.ns += now_ns() - t0;
	return n;
}

/* The file mapping of pid holding addr, its file opened; NULL if none. */
static const struct uw_map *file_map_at(struct sp_unwinder *u, uint32_t pid, uint64_t addr)
{
	struct uw_proc *p = proc_lookup(u, pid);
	const struct uw_map *m = p ? map_find(p, addr) : NULL;

	if (!m || !m->file)
		return NULL;
	m->file->used = u->trims;
	if (!m->file->loaded)
		file_load(m->file, pid, m, u);
	return m;
}

int sp_unwinder_rel(struct sp_unwinder *u, uint32_t pid, uint64_t addr, uint64_t *rel)
{
	const struct uw_map *m = file_map_at(u, pid, addr);

	if (!m || m->file->bad || !map_vaddr(m, addr, rel))
		return -1;
	return 0;
}

int sp_unwinder_where(struct sp_unwinder *u, uint32_t pid, uint64_t addr, const char **path,
		      uint64_t *pgoff, uint64_t *rel)
{
	const struct uw_map *m = file_map_at(u, pid, addr);

	if (!m)
		return -1;
	*path = m->file->path;
	*pgoff = m->pgoff;
	/* A file that cannot be read: its offset, as a module's frames have then. */
	if (m->file->bad || !map_vaddr(m, addr, rel))
		*rel = addr - m->start + m->pgoff;
	return 0;
}

unsigned int sp_unwinder_splice_fp(struct sp_unwinder *u, uint32_t pid, uint64_t *ips,
				   unsigned int n, unsigned int max, const uint64_t *fp,
				   unsigned int nfp, enum sp_unwind_status *status)
{
	unsigned int spliced = sp_unwind_splice_fp(ips, n, max, fp, nfp);
	const struct uw_map *m;
	uint64_t ra, vaddr;

	if (spliced <= n)
		return spliced;
	/* the chain's last frame is a return address: looked up at ra - 1 */
	ra = ips[spliced - 1];
	m = ra ? file_map_at(u, pid, ra - 1) : NULL;
	if (m && !m->file->bad && map_vaddr(m, ra - 1, &vaddr) &&
	    entry_frame(m->file, vaddr + 1, false))
		*status = SP_UNWIND_COMPLETE;
	return spliced;
}

unsigned int sp_unwind_splice_fp(uint64_t *ips, unsigned int n, unsigned int max,
				 const uint64_t *fp, unsigned int nfp)
{
	unsigned int i;

	if (!n || n >= max)
		return n;
	for (i = 0; i < nfp; i++) {
		if (fp[i] == ips[n - 1]) {
			for (i++; i < nfp && n < max; i++)
				ips[n++] = fp[i];
			break;
		}
	}
	return n;
}
