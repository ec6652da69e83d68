// SPDX-License-Identifier: MIT
/*
 * The "perf" source of sp-record: stack samples from perf_event_open and the
 * processes, threads and executable mappings they need.
 *
 * One event per online CPU follows the target and, through inherit=1, its
 * descendants (cpu=-1 with inherit cannot be mmapped). Records are copied
 * out of the rings on every poll and processed in time order once no ring
 * can still hold an older one: after a pass over every ring that started at
 * time T, every record stamped before T has been seen (records are written
 * at the moment they are stamped, with interrupts off), so the next poll
 * processes everything up to T. The event clock is CLOCK_MONOTONIC
 * (use_clockid), the clock of every other source.
 *
 * Modules are interned by file identity (path, device, inode or build-id,
 * file offset), so the same library mapped at different addresses in many
 * processes is one module, and a frame is interned by (module,
 * file-relative address): stacks are shared across processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elf/archive.h"
#include "buildid.h"
#include "hashmap.h"
#include "kallsyms.h"
#include "perf_queue.h"
#include "perf_ring.h"
#include "perf_source.h"
#include "procfs.h"
#include "safefile.h"
#include "sp.h"
#include "unwind.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

#define DEFAULT_PAGES		128	/* 512 KiB per CPU: ~2 s of 999 Hz samples */
#define DWARF_PAGES		512
#define MAX_FRAMES		1024
#define KERNEL_START		0xffff800000000000ull

/* ---- a small open-addressing map: (a, b) -> v ---- */

struct kv {
	uint64_t a, b, v;
	bool used;
};

struct map {
	struct kv *t;
	size_t cap, n;		/* cap a power of two */
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6));

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static uint64_t *map_get(const struct map *m, uint64_t a, uint64_t b)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = mix(a, b) & (m->cap - 1); m->t[i].used; i = (i + 1) & (m->cap - 1))
		if (m->t[i].a == a && m->t[i].b == b)
			return &m->t[i].v;
	return NULL;
}

static void map_put(struct map *m, uint64_t a, uint64_t b, uint64_t v)
{
	struct kv *old;
	size_t i, oldcap;
	uint64_t *p = map_get(m, a, b);

	if (p) {
		*p = v;
		return;
	}
	if (2 * (m->n + 1) > m->cap) {
		old = m->t;
		oldcap = m->cap;
		m->cap = m->cap ? 2 * m->cap : 256;
		m->t = sp_xcalloc(m->cap, sizeof(*m->t));
		m->n = 0;
		for (i = 0; i < oldcap; i++)
			if (old[i].used)
				map_put(m, old[i].a, old[i].b, old[i].v);
		free(old);
	}
	for (i = mix(a, b) & (m->cap - 1); m->t[i].used; i = (i + 1) & (m->cap - 1))
		;
	m->t[i] = (struct kv){ a, b, v, true };
	m->n++;
}

static void map_del(struct map *m, uint64_t a, uint64_t b)
{
	size_t i, j, k;

	if (!m->cap)
		return;
	for (i = mix(a, b) & (m->cap - 1); m->t[i].used; i = (i + 1) & (m->cap - 1))
		if (m->t[i].a == a && m->t[i].b == b)
			break;
	if (!m->t[i].used)
		return;
	/* Backward-shift deletion keeps every probe chain unbroken. */
	j = i;
	for (;;) {
		m->t[i].used = false;
		for (;;) {
			j = (j + 1) & (m->cap - 1);
			if (!m->t[j].used) {
				m->n--;
				return;
			}
			k = mix(m->t[j].a, m->t[j].b) & (m->cap - 1);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		m->t[i] = m->t[j];
		i = j;
	}
}

static void map_free(struct map *m)
{
	free(m->t);
	memset(m, 0, sizeof(*m));
}

/* ---- state ---- */

struct mod {
	uint64_t id;		/* module id in the stream */
	uint64_t ka, kb;	/* key in perf->mods_by_key */
	int64_t bias;		/* ELF vaddr - file offset */
	uint64_t flags;		/* SP_MOD_* */
	unsigned long refs;	/* vmas that use it */
};

struct vma {
	uint64_t start, end, pgoff;
	struct mod *mod;
};

struct proc {
	uint32_t pid, ppid;
	bool defined;		/* a process record was emitted */
	bool pending_exec;	/* exec'd: the record waits for the executable's path */
	bool root;		/* the command sp-record started */
	bool ended;
	bool end_deferred;	/* the command's end waits for its exit status */
	bool leader_exited;	/* its first thread exited before threads it made */
	uint32_t live_threads;	/* threads seen made (not the first) and not ended */
	uid_t uid;		/* its user when last seen, (uid_t)-1 unknown: whose JIT map to trust */
	uint64_t exec_time, end_time, leader_exit;
	char comm[17];
	uint64_t exe;		/* string id */
	struct vma *vmas;	/* sorted by start, not overlapping */
	size_t nvmas, cap;
};

struct elf_entry {
	char *path;
	bool ok;
	struct sp_elf_info info;
	struct stat st;
	bool have_st;
};

struct cpu_ring {
	int cpu;
	int fd;			/* the event that owns the ring (its ring: rings[i]) */
};

/* A record copied out of its ring, waiting for its turn. */
struct pending {
	struct sp_perf_qitem head;
	struct perf_event_header *h;
};

struct perf {
	struct sp_perf_opts o;
	struct perf_event_attr attr;
	uint32_t type;
	uint64_t config;
	bool hardware;
	bool kernel_ok;		/* kernel samples and callchains allowed */
	bool build_id_ok;	/* attr.build_id works */
	bool sideband;		/* the "dummy" event: side-band records, no sample */
	unsigned int nregs;	/* registers in attr.sample_regs_user */
	int epfd;

	struct cpu_ring *cpus;
	struct sp_perf_ring *rings;	/* one per CPU */
	unsigned int ncpus;
	int *fds;		/* every event fd (ring owners too) */
	size_t nfds, fds_cap;

	struct sp_perf_queue q;	/* records copied out of the rings */
	bool finished;

	struct sp_emit *out;
	struct map procs;	/* (pid, 0) -> struct proc * */
	struct map mods_by_key;	/* key -> struct mod * */
	struct map mods_by_id;	/* (id, 0) -> struct mod * */
	struct map frames;	/* (module << 4 | flags, rel) -> frame id */
	struct map frames_raw;	/* (pid << 4 | flags, addr) -> frame id (no module) */
	struct map elfs;	/* (hash of path, 0) -> struct elf_entry * */
	struct mod *kmod;	/* [kernel.kallsyms] */
	uint64_t *kaddrs;	/* kernel frame addresses seen (once each) */
	size_t nkaddrs, kaddrs_cap;

	bool vdso_ok;
	struct sp_elf_info vdso;

	struct sp_unwinder *unw;

	/* Kernel symbols: the per-boot cache, mapped at start, or the kernel's
	 * table read by a thread; a fresh read, in the background, once a frame
	 * outside the cached vmlinux text shows up. */
	bool ksyms_wanted;
	pthread_t ksyms_thread;
	bool ksyms_started;	/* the thread is to be joined */
	int ksyms_done;		/* atomic: p->ksyms is loaded (or failed) */
	struct sp_kallsyms ksyms;
	int ksyms_err;
	pthread_t fresh_thread;
	bool fresh_started;
	int fresh_done;		/* atomic */
	struct sp_kallsyms fresh;
	int fresh_err;
	size_t kresolved;	/* kaddrs[] whose ksym is written */
	struct map ksym_written;	/* symbol address -> 1 */
	bool ksym_warned;

	uint32_t *roots;
	unsigned int nroots;
	bool system_wide;

	struct sp_perf_stats st;
	const char *failed_call;	/* what open_on() failed at */
};

/* ---- events ---- */

static const struct event_name {
	const char *name;
	uint32_t type;
	uint64_t config;
} events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },	/* side-band records only */
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};

int sp_perf_event_lookup(const char *name, uint32_t *type, uint64_t *config, bool *hardware)
{
	size_t i;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		if (!strcmp(name, events[i].name)) {
			*type = events[i].type;
			*config = events[i].config;
			*hardware = events[i].type == PERF_TYPE_HARDWARE;
			return 0;
		}
	}
	return -1;
}

const char *sp_perf_event_names(void)
{
	return "cpu-clock task-clock page-faults minor-faults major-faults context-switches "
	       "cpu-migrations alignment-faults emulation-faults cycles instructions "
	       "cache-references cache-misses branches branch-misses bus-cycles ref-cycles";
}

static int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

static int paranoid_level(void)
{
	char buf[32] = "";
	int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 2;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : 2;
}

/* ---- modules and frames ---- */

static const struct elf_entry *elf_lookup(struct perf *p, const char *path,
					  const uint8_t *bid, unsigned int bid_len)
{
	uint64_t h = sp_hash_bytes(path, strlen(path));
	uint64_t *v = map_get(&p->elfs, h, 0);
	struct elf_entry *e;

	if (v) {
		e = (struct elf_entry *)(uintptr_t)*v;
		/* The file at that path was replaced: read it again. */
		if (!bid_len || !e->ok || (e->info.build_id_len == bid_len &&
					  !memcmp(e->info.build_id, bid, bid_len)))
			return e;
		free(e->path);
		free(e);
	}
	e = sp_xcalloc(1, sizeof(*e));
	e->path = sp_xstrdup(path);
	if (path[0] == '/' && !strstr(path, " (deleted)") && strncmp(path, "/memfd:", 7)) {
		e->ok = sp_elf_info_file(path, &e->info) == 0;
		e->have_st = stat(path, &e->st) == 0;
	}
	map_put(&p->elfs, h, 0, (uintptr_t)e);
	return e;
}

/* Write a module record now (definitions come early) and remember it. */
static struct mod *mod_new(struct perf *p, uint64_t ka, uint64_t kb, struct sp_module *m,
			   int64_t bias)
{
	struct sp_record r = { .kind = SP_REC_MODULE };
	struct mod *mod;

	r.module = *m;
	r.module.id = 0;
	if (sp_writer_put(p->out->w, &r))
		return NULL;
	mod = sp_xcalloc(1, sizeof(*mod));
	mod->id = sp_defs_nmodules(sp_writer_defs(p->out->w));
	mod->ka = ka;
	mod->kb = kb;
	mod->bias = bias;
	mod->flags = m->flags;
	map_put(&p->mods_by_key, ka, kb, (uintptr_t)mod);
	map_put(&p->mods_by_id, mod->id, 0, (uintptr_t)mod);
	p->st.modules++;
	return mod;
}

/* The module of a mapping, created on first sight. */
static struct mod *mod_get(struct perf *p, uint32_t pid, uint64_t time, uint64_t start,
			   uint64_t end, uint64_t pgoff, const char *path, uint32_t prot,
			   uint64_t dev, uint64_t ino, const uint8_t *bid, unsigned int bid_len)
{
	struct sp_module m = { 0 };
	const struct elf_entry *e = NULL;
	uint64_t ka, kb, *v;
	bool anon, vdso;
	int64_t bias = 0;

	vdso = !strcmp(path, "[vdso]");
	anon = !vdso && (!path[0] || path[0] == '[' || !strncmp(path, "//anon", 6) ||
			 !strncmp(path, "/memfd:", 7) || !strcmp(path, "/dev/zero (deleted)"));
	if (anon) {
		/* Code without a file (JIT): one module per process and address. */
		ka = sp_hash_u64(pid) | 1;
		kb = start;
	} else {
		ka = sp_hash_bytes(path, strlen(path));
		ka = sp_hash_mix(ka, dev);
		ka = sp_hash_mix(ka, ino);
		ka = sp_hash_mix(ka, sp_hash_bytes(bid, bid_len));
		ka &= ~1ull;
		kb = pgoff;
	}
	v = map_get(&p->mods_by_key, ka, kb);
	if (v)
		return (struct mod *)(uintptr_t)*v;

	m.time = time;
	m.pid = pid;
	m.start = start;
	m.end = end;
	m.pgoff = pgoff;
	m.prot = prot;
	m.dev = dev;
	m.ino = ino;
	if (anon) {
		m.flags = SP_MOD_ANON;
	} else if (vdso) {
		if (p->vdso_ok) {
			bias = sp_elf_bias(&p->vdso, pgoff);
			m.build_id.p = p->vdso.build_id;
			m.build_id.len = p->vdso.build_id_len;
		}
	} else {
		e = elf_lookup(p, path, bid, bid_len);
		if (e->ok)
			bias = sp_elf_bias(&e->info, pgoff);
		if (bid_len) {
			m.build_id.p = bid;
			m.build_id.len = bid_len;
		} else if (e->ok && e->info.build_id_len) {
			m.build_id.p = e->info.build_id;
			m.build_id.len = e->info.build_id_len;
			m.flags |= SP_MOD_BUILD_ID_FILE;
		}
		/* sp-record --archive: a copy of the exact image, taken while it is mapped. */
		if (p->o.archive && m.build_id.len) {
			int rc = sp_archive_module(p->o.archive, pid, start, end, path,
						   m.build_id.p, m.build_id.len);

			if (rc >= 0)
				m.flags |= SP_MOD_ARCHIVED;
			else if (rc != SP_ARCHIVE_REFUSED)	/* that one is said once */
				sp_warn("cannot archive '%s' of pid %u into '%s': %s", path, pid,
					p->o.archive, strerror(errno));
		}
		if (e->have_st) {
			if (!dev && !ino) {
				m.dev = e->st.st_dev;
				m.ino = e->st.st_ino;
			}
			m.size = e->st.st_size;
			m.mtime_ns = (uint64_t)e->st.st_mtim.tv_sec * 1000000000ull +
				     e->st.st_mtim.tv_nsec;
		}
	}
	m.path = sp_writer_strz(p->out->w, anon && !path[0] ? "//anon" : path);
	return mod_new(p, ka, kb, &m, bias);
}

static int emit(struct perf *p, const struct sp_record *r)
{
	return p->out->emit(p->out->ctx, r);
}

static void mod_put(struct perf *p, struct mod *mod, uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_MODULE_END };

	if (!mod || --mod->refs)
		return;
	if (!p->finished) {
		r.module_end.time = time;
		r.module_end.module = mod->id;
		emit(p, &r);
	}
	map_del(&p->mods_by_key, mod->ka, mod->kb);
	map_del(&p->mods_by_id, mod->id, 0);
	free(mod);
}

static struct mod *kernel_mod(struct perf *p)
{
	struct sp_module m = { 0 };
	uint8_t bid[SP_BUILD_ID_MAX];
	unsigned int len;

	if (p->kmod)
		return p->kmod;
	len = sp_buildid_kernel(bid, sizeof(bid));
	m.start = KERNEL_START;
	m.end = UINT64_MAX;
	m.path = sp_writer_strz(p->out->w, "[kernel.kallsyms]");
	m.build_id.p = bid;
	m.build_id.len = len;
	m.prot = PROT_READ | PROT_EXEC;
	m.flags = SP_MOD_KERNEL;
	p->kmod = mod_new(p, 2, 0, &m, 0);
	if (p->kmod)
		p->kmod->refs = 1;	/* never retired */
	return p->kmod;
}

/* ---- processes ---- */

static struct proc *proc_find(struct perf *p, uint32_t pid)
{
	uint64_t *v = map_get(&p->procs, pid, 0);

	return v ? (struct proc *)(uintptr_t)*v : NULL;
}

static struct proc *proc_get(struct perf *p, uint32_t pid)
{
	struct proc *pr = proc_find(p, pid);
	unsigned int i;

	if (pr)
		return pr;
	pr = sp_xcalloc(1, sizeof(*pr));
	pr->pid = pid;
	pr->uid = (uid_t)-1;
	for (i = 0; i < p->nroots; i++)
		pr->root |= p->roots[i] == pid;
	map_put(&p->procs, pid, 0, (uintptr_t)pr);
	return pr;
}

static void vma_remove(struct perf *p, struct proc *pr, size_t i, uint64_t time)
{
	struct vma *v = &pr->vmas[i];

	if (p->unw)
		sp_unwinder_unmap(p->unw, pr->pid, v->start, v->end);
	mod_put(p, v->mod, time);
	memmove(v, v + 1, (pr->nvmas - i - 1) * sizeof(*v));
	pr->nvmas--;
}

static void vma_clear(struct perf *p, struct proc *pr, uint64_t time)
{
	while (pr->nvmas)
		vma_remove(p, pr, pr->nvmas - 1, time);
	if (p->unw)
		sp_unwinder_forget(p->unw, pr->pid);
}

/* Insert a mapping; mappings it overlaps are gone (perf reports no munmap). */
static void vma_add(struct perf *p, struct proc *pr, uint64_t start, uint64_t end,
		    uint64_t pgoff, struct mod *mod, uint64_t time)
{
	size_t i, lo = 0, hi = pr->nvmas, mid;

	if (!mod || end <= start)
		return;
	mod->refs++;	/* held before the mappings it replaces let go of it */
	/* First vma with end > start. */
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (pr->vmas[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;
	while (i < pr->nvmas && pr->vmas[i].start < end)
		vma_remove(p, pr, i, time);
	sp_grow(&pr->vmas, &pr->cap, pr->nvmas + 1, sizeof(*pr->vmas));
	memmove(&pr->vmas[i + 1], &pr->vmas[i], (pr->nvmas - i) * sizeof(*pr->vmas));
	pr->vmas[i] = (struct vma){ start, end, pgoff, mod };
	pr->nvmas++;
}

static const struct vma *vma_find(const struct proc *pr, uint64_t addr)
{
	size_t lo = 0, hi = pr ? pr->nvmas : 0, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (pr->vmas[mid].end <= addr)
			lo = mid + 1;
		else if (pr->vmas[mid].start > addr)
			hi = mid;
		else
			return &pr->vmas[mid];
	}
	return NULL;
}

static int emit_process(struct perf *p, struct proc *pr, uint64_t time, uint64_t flags,
			const char *args)
{
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.time = time;
	r.process.pid = pr->pid;
	r.process.ppid = pr->ppid;
	r.process.comm = sp_writer_strz(p->out->w, pr->comm);
	r.process.exe = pr->exe;
	r.process.flags = flags | (pr->defined ? SP_PROC_EXEC : 0);
	r.process.args = args && *args ? sp_writer_strz(p->out->w, args) : 0;
	pr->defined = true;
	pr->pending_exec = false;
	p->st.processes++;
	return emit(p, &r);
}

static int emit_thread(struct perf *p, uint32_t pid, uint32_t tid, const char *name,
		       uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_THREAD };

	r.thread.time = time;
	r.thread.tid = tid;
	r.thread.pid = pid;
	r.thread.name = sp_writer_strz(p->out->w, name);
	return emit(p, &r);
}

static void flush_pending_exec(struct perf *p, struct proc *pr)
{
	if (pr->pending_exec) {
		emit_process(p, pr, pr->exec_time, 0, pr->root ? p->o.args : NULL);
		emit_thread(p, pr->pid, pr->pid, pr->comm, pr->exec_time);
	}
}

static int jit_cb(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	void **a = ctx;
	struct perf *p = a[0];
	struct proc *pr = a[1];
	struct sp_record r = { .kind = SP_REC_JITSYM };

	r.jitsym.pid = pr->pid;
	r.jitsym.addr = addr;
	r.jitsym.size = size;
	r.jitsym.name = sp_writer_strz(p->out->w, name);
	return emit(p, &r);
}

/*
 * JIT perf maps outlive their process in /tmp but may be rewritten by the
 * next process with the same pid: take them when the process ends. The
 * process, or anyone, may have put anything there: a map not owned by the
 * process's user or root, a link, a FIFO is refused, and a map is read up
 * to a bound (sp_procfs_perfmap()); each such map is named once.
 */
static void capture_jit(struct perf *p, struct proc *pr)
{
	struct sp_perfmap_result res;
	void *ctx[2] = { p, pr };
	char who[64] = "";

	if (sp_procfs_perfmap(pr->pid, pr->uid, jit_cb, ctx, &res) == 0 && !res.cut)
		return;
	if (!res.why)
		return;		/* none (the usual case), or stopped by the output */
	if (res.owner != (uid_t)-1 && !strcmp(res.why, "owned by another user") &&
	    res.user != (uid_t)-1)
		snprintf(who, sizeof(who), " (uid %u; the process's user is %u)",
			 (unsigned int)res.owner, (unsigned int)res.user);
	else if (res.owner != (uid_t)-1 && !strcmp(res.why, "owned by another user"))
		snprintf(who, sizeof(who), " (uid %u; the process's user is not known)",
			 (unsigned int)res.owner);
	sp_warn("pid %u: JIT perf map '%s/perf-%u.map' %s: %s%s", pr->pid, sp_procfs_perfmap_dir,
		pr->pid, res.cut ? "read in part" : "not read", res.why, who);
}

/* Exit status of the command sp-record started, without reaping it. */
static bool root_status(struct proc *pr, uint64_t *status, uint64_t *flags)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (!pr->root || waitid(P_PID, pr->pid, &si, WEXITED | WNOHANG | WNOWAIT) || !si.si_pid)
		return false;
	if (si.si_code == CLD_EXITED) {
		*status = (uint64_t)si.si_status;
	} else {
		*status = 128 + (uint64_t)si.si_status;
		*flags |= SP_PEND_SIGNALED;
	}
	return true;
}

static void proc_end(struct perf *p, struct proc *pr, uint64_t time, bool exec)
{
	struct sp_record r = { .kind = SP_REC_PROCESS_END };

	flush_pending_exec(p, pr);
	r.process_end.time = time;
	r.process_end.pid = pr->pid;
	if (exec) {
		r.process_end.flags = SP_PEND_EXEC;
	} else if (pr->root && !root_status(pr, &r.process_end.status, &r.process_end.flags)) {
		/* The kernel reports the exit before the parent can wait for it:
		 * finish() writes this end, with the status, once the loop saw the
		 * command go. */
		pr->end_deferred = true;
		pr->end_time = time;
	}
	if (pr->defined && !pr->end_deferred)
		emit(p, &r);
	if (!exec)
		capture_jit(p, pr);
	vma_clear(p, pr, time);
}

static void proc_free(struct perf *p, struct proc *pr)
{
	map_del(&p->procs, pr->pid, 0);
	free(pr->vmas);
	free(pr);
}

/* ---- /proc at attach ---- */

struct scan_ctx {
	struct perf *p;
	struct proc *pr;
	uint64_t time;
};

static int scan_map(void *ctx, const struct sp_proc_map *m)
{
	struct scan_ctx *c = ctx;
	struct mod *mod;

	if (!(m->prot & PROT_EXEC) || !strcmp(m->path, "[vsyscall]"))
		return 0;
	mod = mod_get(c->p, c->pr->pid, c->time, m->start, m->end, m->pgoff, m->path, m->prot,
		      m->dev, m->ino, NULL, 0);
	vma_add(c->p, c->pr, m->start, m->end, m->pgoff, mod, c->time);
	if (c->p->unw)	/* all of them: [vdso] has CFI, anonymous code is "jit" */
		sp_unwinder_map(c->p->unw, c->pr->pid, m->start, m->end, m->pgoff, m->path);
	return 0;
}

/* Define a process that exists already (from /proc). 0, or -1 if it is gone. */
static int scan_process(struct perf *p, uint32_t pid)
{
	char buf[4096], comm[64];
	struct scan_ctx c = { p, NULL, sp_now_mono_ns() };
	uint32_t tgid = 0, ppid = 0, *tids = NULL;
	size_t n = 0, i;
	struct proc *pr;

	if (sp_procfs_status(pid, &tgid, &ppid) || tgid != pid)
		return -1;
	pr = proc_get(p, pid);
	if (pr->defined)
		return 0;
	pr->ppid = ppid;
	sp_procfs_uid(pid, &pr->uid);
	if (sp_procfs_comm(pid, pid, comm, sizeof(comm)) == 0)
		snprintf(pr->comm, sizeof(pr->comm), "%.16s", comm);
	if (sp_procfs_exe(pid, buf, sizeof(buf)) == 0)
		pr->exe = sp_writer_strz(p->out->w, buf);
	if (sp_procfs_cmdline(pid, buf, sizeof(buf)))
		buf[0] = 0;
	emit_process(p, pr, c.time, SP_PROC_FROM_PROC, buf);
	if (sp_procfs_tasks(pid, &tids, &n) == 0) {
		for (i = 0; i < n; i++)
			if (sp_procfs_comm(pid, tids[i], comm, sizeof(comm)) == 0)
				emit_thread(p, pid, tids[i], comm, c.time);
		free(tids);
	}
	c.pr = pr;
	sp_procfs_maps(pid, scan_map, &c);
	return 0;
}

/* ---- records from the rings ---- */

static void resolve_ksyms(struct perf *p, bool final);

static uint64_t intern_frame(struct perf *p, struct proc *pr, uint32_t pid, uint64_t ip,
			     bool kernel, bool leaf)
{
	struct sp_frame f = { 0 };
	const struct vma *v;
	struct mod *mod = NULL;
	uint64_t *id, rel = ip, flags = leaf ? SP_FRAME_LEAF : 0;

	if (kernel) {
		mod = kernel_mod(p);
		if (!mod)
			return 0;
		f.mode = SP_FRAME_KERNEL;
	} else if ((v = vma_find(pr, ip))) {
		mod = v->mod;
		if (!(mod->flags & SP_MOD_ANON))
			rel = ip - v->start + v->pgoff + (uint64_t)mod->bias;
	}
	if (mod) {
		id = map_get(&p->frames, mod->id << 4 | flags << 2 | f.mode, rel);
		if (id)
			return *id;
		f.module = mod->id;
	} else {
		id = map_get(&p->frames_raw, (uint64_t)pid << 4 | flags << 2, ip);
		if (id)
			return *id;
		f.pid = pid;
	}
	f.rel = rel;
	f.addr = ip;
	f.flags = flags;
	if (kernel) {
		sp_grow(&p->kaddrs, &p->kaddrs_cap, p->nkaddrs + 1, sizeof(*p->kaddrs));
		p->kaddrs[p->nkaddrs++] = ip;
		resolve_ksyms(p, false);	/* its symbol before it, when known */
	}
	f.id = sp_writer_frame(p->out->w, &f);
	if (!f.id)
		return 0;
	if (mod) {
		map_put(&p->frames, mod->id << 4 | flags << 2 | f.mode, rel, f.id);
	} else {
		map_put(&p->frames_raw, (uint64_t)pid << 4 | flags << 2, ip, f.id);
	}
	return f.id;
}

static void on_sample(struct perf *p, const struct perf_event_header *h)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	uint64_t ids[MAX_FRAMES], user[MAX_FRAMES], fp[MAX_FRAMES], ip, id;
	enum sp_unwind_status ust = SP_UNWIND_UNKNOWN;
	unsigned int n = 0, nu = 0, nfp = 0, i, j;
	struct sp_perf_sample s;
	int ctx = -1;		/* 0 user, 1 kernel, -1 other */
	bool first = true;
	struct proc *pr;
	uint64_t tmp;

	if (sp_perf_parse_sample(h, p->attr.sample_type, p->nregs, &s)) {
		p->st.bad++;
		return;
	}
	pr = proc_find(p, s.pid);
	if (pr && pr->pending_exec)
		flush_pending_exec(p, pr);
	if (!s.ips) {
		/* No callchain: the sampled ip alone. */
		s.nr = 0;
	}
	for (i = 0; i < s.nr && n < MAX_FRAMES; i++) {
		ip = s.ips[i];
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
			      ip == (uint64_t)PERF_CONTEXT_USER ? 0 : -1;
			first = true;
			continue;
		}
		if (ctx < 0)
			continue;
		if (ctx == 0 && p->unw) {
			if (nfp < MAX_FRAMES)
				fp[nfp++] = ip;
			continue;
		}
		id = intern_frame(p, pr, s.pid, ip, ctx == 1, first);
		first = false;
		if (id)
			ids[n++] = id;
	}
	if (!s.ips && s.ip) {
		id = intern_frame(p, pr, s.pid, s.ip, s.ip >= KERNEL_START, true);
		if (id)
			ids[n++] = id;
	}
	if (p->unw && s.regs && s.nregs) {
		nu = sp_unwinder_unwind(p->unw, s.pid, s.tid, s.regs, s.nregs, s.stack,
					s.stack_dyn_size, user, MAX_FRAMES - n, &ust);
		if (p->o.call_graph == SP_CG_AUTO && nfp &&
		    (ust == SP_UNWIND_NO_CFI || ust == SP_UNWIND_JIT ||
		     ust == SP_UNWIND_UNKNOWN_MAP))
			nu = sp_unwind_splice_fp(user, nu, MAX_FRAMES - n, fp, nfp);
	} else if (p->unw && nfp) {
		/* No user registers (a kernel thread, or in auto mode): the chain. */
		memcpy(user, fp, nfp * sizeof(*fp));
		nu = nfp;
	}
	for (j = 0; j < nu && n < MAX_FRAMES; j++) {
		id = intern_frame(p, pr, s.pid, user[j], false, j == 0);
		if (id)
			ids[n++] = id;
	}
	/* Leaf first from perf; the trie wants the root first. */
	for (i = 0; i < n / 2; i++) {
		tmp = ids[i];
		ids[i] = ids[n - 1 - i];
		ids[n - 1 - i] = tmp;
	}
	r.sample.time = s.time;
	r.sample.pid = s.pid;
	r.sample.tid = s.tid;
	r.sample.cpu = s.cpu;
	r.sample.stack = n ? sp_writer_stack_path(p->out->w, ids, n) : 0;
	r.sample.weight = 1;
	r.sample.unwind = p->unw ? ust : (n >= MAX_FRAMES ? SP_UNWIND_DEPTH : SP_UNWIND_UNKNOWN);
	r.sample.kind = SP_SAMPLE_CPU;
	p->st.samples++;
	emit(p, &r);
}

struct task_rec {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

static void on_fork(struct perf *p, const struct perf_event_header *h)
{
	const struct task_rec *t = (const void *)(h + 1);
	struct proc *parent, *pr;
	size_t i;

	if (h->size < sizeof(*h) + sizeof(*t))
		return;
	parent = proc_get(p, t->ppid);
	flush_pending_exec(p, parent);
	if (t->pid != t->tid) {
		/* A new thread of an existing process. */
		pr = proc_get(p, t->pid);
		flush_pending_exec(p, pr);
		pr->live_threads++;
		emit_thread(p, t->pid, t->tid, pr->comm, t->time);
		return;
	}
	pr = proc_find(p, t->pid);
	if (pr) {		/* a stale entry for a reused pid */
		vma_clear(p, pr, t->time);
		proc_free(p, pr);
	}
	pr = proc_get(p, t->pid);
	pr->ppid = t->ppid;
	pr->uid = parent->uid;
	memcpy(pr->comm, parent->comm, sizeof(pr->comm));
	pr->exe = parent->exe;
	for (i = 0; i < parent->nvmas; i++)
		vma_add(p, pr, parent->vmas[i].start, parent->vmas[i].end, parent->vmas[i].pgoff,
			parent->vmas[i].mod, t->time);
	if (p->unw)
		sp_unwinder_fork(p->unw, t->ppid, t->pid);
	emit_process(p, pr, t->time, 0, NULL);
	emit_thread(p, t->pid, t->tid, pr->comm, t->time);
}

/* The last thread of pr ended at time. */
static void proc_exited(struct perf *p, struct proc *pr, uint64_t time)
{
	pr->leader_exited = false;
	proc_end(p, pr, time, false);
	pr->ended = true;
	/* Keep the entry while it may still matter for the command's status. */
	if (!pr->root)
		proc_free(p, pr);
}

static void on_exit_rec(struct perf *p, const struct perf_event_header *h)
{
	const struct task_rec *t = (const void *)(h + 1);
	struct sp_record r = { .kind = SP_REC_THREAD_END };
	struct proc *pr;

	if (h->size < sizeof(*h) + sizeof(*t))
		return;
	pr = proc_find(p, t->pid);
	if (pr)
		flush_pending_exec(p, pr);
	r.thread_end.time = t->time;
	r.thread_end.tid = t->tid;
	r.thread_end.pid = t->pid;
	emit(p, &r);
	if (!pr)
		return;
	if (t->pid != t->tid) {
		if (pr->live_threads)
			pr->live_threads--;
		if (pr->leader_exited && !pr->live_threads)
			proc_exited(p, pr, t->time);
		return;
	}
	/*
	 * The first thread ends. In an exit_group() it is often the first to
	 * go, while the threads it made still end (their events come after):
	 * the process ends with the last of those it saw made.
	 */
	if (pr->live_threads) {
		pr->leader_exited = true;
		pr->leader_exit = t->time;
		return;
	}
	proc_exited(p, pr, t->time);
}

static void on_comm(struct perf *p, const struct perf_event_header *h, const struct sp_perf_id *id)
{
	const uint32_t *ids = (const void *)(h + 1);
	const char *comm = (const char *)(ids + 2);
	size_t max = h->size - sizeof(*h) - 8;
	struct proc *pr;
	char name[17];

	if (h->size < sizeof(*h) + 16)
		return;
	snprintf(name, sizeof(name), "%.*s", (int)strnlen(comm, max < 16 ? max : 16), comm);
	pr = proc_get(p, ids[0]);
	if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
		if (pr->defined && !pr->pending_exec)
			proc_end(p, pr, id->time, true);
		else
			vma_clear(p, pr, id->time);
		if (!pr->ppid) {
			uint32_t tgid;

			sp_procfs_status(pr->pid, &tgid, &pr->ppid);
		}
		sp_procfs_uid(pr->pid, &pr->uid);	/* a set-user-ID program changes it */
		memcpy(pr->comm, name, sizeof(name));
		pr->exe = 0;
		pr->pending_exec = true;
		pr->exec_time = id->time;
		pr->live_threads = 0;	/* an exec ends the other threads */
		pr->leader_exited = false;
		return;
	}
	flush_pending_exec(p, pr);
	if (ids[0] == ids[1])
		memcpy(pr->comm, name, sizeof(name));
	emit_thread(p, ids[0], ids[1], name, id->time);
}

static void on_mmap2(struct perf *p, const struct perf_event_header *h, const struct sp_perf_id *id)
{
	const struct perf_record_mmap2 {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		union {
			struct {
				uint32_t maj, min;
				uint64_t ino, ino_generation;
			};
			struct {
				uint8_t build_id_size, r1;
				uint16_t r2;
				uint8_t build_id[20];
			};
		};
		uint32_t prot, flags;
		char filename[];
	} *m = (const void *)(h + 1);
	size_t idsz = sp_perf_id_size(p->attr.sample_type), max;
	uint64_t dev = 0, ino = 0;
	const uint8_t *bid = NULL;
	unsigned int bid_len = 0;
	char path[4096];
	struct proc *pr;
	struct mod *mod;

	if (h->size < sizeof(*h) + sizeof(*m) + idsz)
		return;
	max = h->size - sizeof(*h) - sizeof(*m) - idsz;
	snprintf(path, sizeof(path), "%.*s", (int)strnlen(m->filename, max), m->filename);
	if (!(m->prot & PROT_EXEC))
		return;
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		bid = m->build_id;
		bid_len = m->build_id_size <= 20 ? m->build_id_size : 20;
	} else {
		dev = makedev(m->maj, m->min);
		ino = m->ino;
	}
	pr = proc_get(p, m->pid);
	if (pr->pending_exec && path[0] == '/' && !pr->exe) {
		pr->exe = sp_writer_strz(p->out->w, path);
		flush_pending_exec(p, pr);
	}
	mod = mod_get(p, m->pid, id->time, m->addr, m->addr + m->len, m->pgoff, path, m->prot,
		      dev, ino, bid, bid_len);
	vma_add(p, pr, m->addr, m->addr + m->len, m->pgoff, mod, id->time);
	if (p->unw)	/* all of them: [vdso] has CFI, anonymous code is "jit" */
		sp_unwinder_map(p->unw, m->pid, m->addr, m->addr + m->len, m->pgoff, path);
}

static void on_lost(struct perf *p, const struct perf_event_header *h, const struct sp_perf_id *id)
{
	const uint64_t *v = (const void *)(h + 1);
	struct sp_record r = { .kind = SP_REC_LOST };

	if (h->size < sizeof(*h) + 16)
		return;
	r.lost.time = id->time;
	r.lost.what = SP_LOST_SAMPLES;
	r.lost.count = v[1];
	r.lost.cpu = (uint64_t)id->cpu + 1;
	p->st.lost += v[1];
	emit(p, &r);
}

static void process_record(struct perf *p, const struct perf_event_header *h)
{
	struct sp_perf_id id;

	if (h->type == PERF_RECORD_SAMPLE) {
		on_sample(p, h);
		return;
	}
	if (sp_perf_parse_id(h, p->attr.sample_type, &id))
		return;
	switch (h->type) {
	case PERF_RECORD_MMAP2:
		on_mmap2(p, h, &id);
		break;
	case PERF_RECORD_COMM:
		on_comm(p, h, &id);
		break;
	case PERF_RECORD_FORK:
		on_fork(p, h);
		break;
	case PERF_RECORD_EXIT:
		on_exit_rec(p, h);
		break;
	case PERF_RECORD_LOST:
		on_lost(p, h, &id);
		break;
	default:
		break;
	}
}

static uint64_t record_time(struct perf *p, const struct perf_event_header *h)
{
	struct sp_perf_sample s;
	struct sp_perf_id id;

	if (h->type == PERF_RECORD_SAMPLE)
		return sp_perf_parse_sample(h, p->attr.sample_type, p->nregs, &s) ? 0 : s.time;
	if (h->type == PERF_RECORD_FORK || h->type == PERF_RECORD_EXIT)
		return h->size >= sizeof(*h) + sizeof(struct task_rec) ?
		       ((const struct task_rec *)(h + 1))->time : 0;
	return sp_perf_parse_id(h, p->attr.sample_type, &id) ? 0 : id.time;
}

/* Each record is copied out of its ring (so the kernel can reuse the space). */
static void read_record(void *ctx, const struct perf_event_header *h)
{
	struct perf *p = ctx;
	struct perf_event_header *c = sp_xmalloc(h->size);
	struct pending *it;

	memcpy(c, h, h->size);
	it = sp_perf_queue_push(&p->q, record_time(p, c));
	it->h = c;
}

static void handle_record(void *ctx, void *item)
{
	struct pending *it = item;

	process_record(ctx, it->h);
	free(it->h);
}

static void drop_record(void *ctx, void *item)
{
	free(((struct pending *)item)->h);
}

/* A process whose executable never showed up (a script run by an
 * interpreter already mapped, say) gets its record once its exec is
 * older than what has been processed. */
static void flush_pending_execs(struct perf *p, uint64_t upto)
{
	struct proc *pr;
	size_t i;

	for (i = 0; i < p->procs.cap; i++) {
		if (!p->procs.t[i].used)
			continue;
		pr = (struct proc *)(uintptr_t)p->procs.t[i].v;
		if (pr->pending_exec && pr->exec_time <= upto)
			flush_pending_exec(p, pr);
	}
}

/* ---- the sp_source interface ---- */

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
	if (!k || map_get(&p->ksym_written, k->addr, 0))
		return;
	map_put(&p->ksym_written, k->addr, 0, 1);
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
static void resolve_ksyms(struct perf *p, bool final)
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

static int add_fd(struct perf *p, int fd)
{
	sp_grow(&p->fds, &p->fds_cap, p->nfds + 1, sizeof(*p->fds));
	p->fds[p->nfds++] = fd;
	return fd;
}

/* Open the event for (pid, cpu i): the first on a CPU owns its ring, the
 * others write into it. 0, or -1 with errno set. */
static int open_on(struct perf *p, pid_t pid, unsigned int i)
{
	struct cpu_ring *c = &p->cpus[i];
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int pages = p->o.pages ? p->o.pages :
			     p->o.call_graph >= SP_CG_DWARF ? DWARF_PAGES : DEFAULT_PAGES;
	int fd;

	p->failed_call = "perf_event_open";
	fd = perf_open(&p->attr, pid, c->cpu, -1);
	if (fd < 0)
		return -1;
	add_fd(p, fd);
	if (c->fd < 0) {
		p->failed_call = geteuid() ? "mmap of the ring buffer (over perf_event_mlock_kb? "
					     "try a smaller -m)" : "mmap of the ring buffer";
		if (sp_perf_ring_map(&p->rings[i], fd, pages))
			return -1;
		c->fd = fd;
		ev.data.u32 = i;
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev))
			return -1;
		return 0;
	}
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, c->fd);
}

static int attach_pid(struct perf *p, uint32_t pid, bool all_threads)
{
	uint32_t *tids = NULL, *seen = NULL;
	size_t n = 0, nseen = 0, seen_cap = 0, i, k;
	unsigned int c, round;
	bool added;

	if (!all_threads) {
		for (c = 0; c < p->ncpus; c++)
			if (open_on(p, pid, c))
				return sp_error_errno("pid %u: %s", pid, p->failed_call);
		return 0;
	}
	/* Existing threads each need their own events; re-read the list until
	 * no thread appeared meanwhile (new ones inherit the events). */
	for (round = 0; round < 8; round++) {
		if (sp_procfs_tasks(pid, &tids, &n)) {
			free(seen);
			return round ? 0 : sp_error("pid %u: no such process", pid);
		}
		added = false;
		for (i = 0; i < n; i++) {
			for (k = 0; k < nseen && seen[k] != tids[i]; k++)
				;
			if (k < nseen)
				continue;
			sp_grow(&seen, &seen_cap, nseen + 1, sizeof(*seen));
			seen[nseen++] = tids[i];
			added = true;
			for (c = 0; c < p->ncpus; c++) {
				if (open_on(p, tids[i], c) == 0)
					continue;
				if (errno == ESRCH)
					break;	/* the thread ended meanwhile */
				free(tids);
				free(seen);
				if ((errno == EACCES || errno == EPERM) &&
				    !strcmp(p->failed_call, "perf_event_open"))
					return sp_error_errno("pid %u: perf_event_open (needs root or "
							      "the same user and perf_event_paranoid "
							      "<= 2)", pid);
				return sp_error_errno("pid %u: %s", pid, p->failed_call);
			}
		}
		free(tids);
		tids = NULL;
		if (!added)
			break;
	}
	free(seen);
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return sp_error("pid %u exited during attach", pid);
	return 0;
}

static int perf_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct perf *p = s->priv;
	uint32_t *pids = NULL;
	size_t npids = 0, i;
	unsigned int c;
	int *cpus = NULL, n;

	p->out = out;
	p->q.last_pass = p->q.bound = sp_now_mono_ns();
	p->roots = sp_xcalloc(t->npids + 1, sizeof(*p->roots));
	memcpy(p->roots, t->pids, t->npids * sizeof(*p->roots));
	p->nroots = t->npids;
	p->system_wide = t->system_wide;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		return sp_error_errno("epoll_create1");
	s->fd = p->epfd;
	n = sp_online_cpus(&cpus);
	if (n <= 0)
		return sp_error("cannot read the online CPUs");
	p->cpus = sp_xcalloc(n, sizeof(*p->cpus));
	p->rings = sp_xcalloc(n, sizeof(*p->rings));
	p->ncpus = n;
	for (c = 0; c < p->ncpus; c++) {
		p->cpus[c].cpu = cpus[c];
		p->cpus[c].fd = -1;
	}
	free(cpus);

	if (p->o.call_graph >= SP_CG_DWARF) {
		p->unw = sp_unwinder_new();
		if (!p->unw)
			return sp_error("cannot set up DWARF unwinding");
	}
	if (t->system_wide) {
		/* CPU-wide events: on from the start, even with a command. */
		p->attr.inherit = 0;
		p->attr.disabled = 0;
		p->attr.enable_on_exec = 0;
		for (c = 0; c < p->ncpus; c++)
			if (open_on(p, -1, c))
				return sp_error_errno("system-wide %s on cpu %d%s", p->failed_call,
						      p->cpus[c].cpu,
						      errno == EACCES || errno == EPERM ?
						      " (needs root or perf_event_paranoid <= 0)" : "");
	} else {
		/* One event per thread and CPU: many descriptors for a big process. */
		struct rlimit rl;

		if (!p->o.enable_on_exec && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		for (i = 0; i < t->npids; i++)
			if (attach_pid(p, t->pids[i], !p->o.enable_on_exec))
				return -1;
	}
	if (p->kernel_ok && geteuid() == 0 && !p->o.user_only) {
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
	if (p->o.enable_on_exec && !t->system_wide)
		return 0;
	/* Processes that exist already: their records come from /proc. The
	 * events are open, so nothing that happens from now on is missed. */
	if (t->system_wide) {
		if (sp_procfs_pids(&pids, &npids) == 0) {
			for (i = 0; i < npids; i++)
				scan_process(p, pids[i]);
			free(pids);
		}
	} else {
		for (i = 0; i < t->npids; i++)
			if (scan_process(p, t->pids[i]))
				return sp_error("pid %u exited during attach", t->pids[i]);
	}
	return 0;
}

static int perf_poll(struct sp_source *s, struct sp_emit *out)
{
	struct perf *p = s->priv;
	int n;

	p->out = out;
	n = (int)sp_perf_queue_poll(&p->q, p->epfd, p->rings, p->ncpus);
	flush_pending_execs(p, p->q.bound);
	resolve_ksyms(p, false);
	return n;
}

static uint64_t perf_watermark(struct sp_source *s)
{
	struct perf *p = s->priv;

	return p->finished ? UINT64_MAX : p->q.bound;
}

static int perf_finish(struct sp_source *s, struct sp_emit *out)
{
	struct perf *p = s->priv;
	struct proc *pr;
	size_t i;
	int n;

	p->out = out;
	for (i = 0; i < p->nfds; i++)
		ioctl(p->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	n = (int)sp_perf_queue_finish(&p->q, p->rings, p->ncpus);
	flush_pending_execs(p, UINT64_MAX);
	/* Live processes: their JIT maps now; the command's end if the kernel
	 * reported its exit before it could be waited for. */
	for (i = 0; i < p->procs.cap; i++) {
		if (!p->procs.t[i].used)
			continue;
		pr = (struct proc *)(uintptr_t)p->procs.t[i].v;
		flush_pending_exec(p, pr);
		/* its first thread exited, an end of a thread it made was not
		 * seen (lost): it ends there */
		if (pr->leader_exited) {
			pr->leader_exited = false;
			proc_end(p, pr, pr->leader_exit, false);
			pr->ended = true;
		}
		if (!pr->ended)
			capture_jit(p, pr);
		if (pr->end_deferred && pr->defined) {
			struct sp_record r = { .kind = SP_REC_PROCESS_END };

			r.process_end.time = pr->end_time;
			r.process_end.pid = pr->pid;
			root_status(pr, &r.process_end.status, &r.process_end.flags);
			emit(p, &r);
			pr->end_deferred = false;
		}
	}
	resolve_ksyms(p, true);
	if (p->st.bad + p->q.bad)
		sp_warn("%" PRIu64 " malformed perf records skipped", p->st.bad + p->q.bad);
	p->q.bound = UINT64_MAX;
	p->finished = true;
	return n < 0 ? -1 : 0;
}

static void perf_describe(struct sp_source *s, char *f, size_t fsize, char *u, size_t usize)
{
	struct perf *p = s->priv;
	static const char *const cg[] = { "none", "fp", "dwarf", "auto" };

	if (p->sideband) {
		/* no samples, so no stacks: only what tracks processes and mappings */
		snprintf(f, fsize, "perf=dummy samples=none%s",
			 p->build_id_ok ? " mmap2-build-id" : "");
		snprintf(u, usize, "%s", p->build_id_ok ? "" : "mmap2-build-id");
		return;
	}
	snprintf(f, fsize, "perf=%s callchain=%s%s%s%s", p->o.event,
		 cg[p->o.call_graph & 3],
		 p->kernel_ok && !p->o.user_only ? " kernel-stacks" : "",
		 p->o.kernel_only ? "" : " user-stacks",
		 p->build_id_ok ? " mmap2-build-id" : "");
	snprintf(u, usize, "%s%s", p->kernel_ok || p->o.user_only ? "" : "kernel-stacks",
		 p->build_id_ok ? "" : (p->kernel_ok || p->o.user_only ? "mmap2-build-id" :
					" mmap2-build-id"));
}

static void perf_free(struct sp_source *s)
{
	struct perf *p;
	size_t i;

	if (!s)
		return;
	p = s->priv;
	if (p) {
		if (p->ksyms_started)
			pthread_join(p->ksyms_thread, NULL);
		if (p->fresh_started)
			pthread_join(p->fresh_thread, NULL);
		sp_kallsyms_release(&p->ksyms);
		sp_kallsyms_release(&p->fresh);
		map_free(&p->ksym_written);
		for (i = 0; i < p->ncpus; i++)
			sp_perf_ring_unmap(&p->rings[i]);
		for (i = 0; i < p->nfds; i++)
			close(p->fds[i]);
		if (p->epfd >= 0)
			close(p->epfd);
		sp_perf_queue_release(&p->q, drop_record);
		for (i = 0; i < p->procs.cap; i++) {
			if (p->procs.t[i].used) {
				struct proc *pr = (struct proc *)(uintptr_t)p->procs.t[i].v;

				free(pr->vmas);
				free(pr);
			}
		}
		for (i = 0; i < p->mods_by_id.cap; i++)
			if (p->mods_by_id.t[i].used)
				free((void *)(uintptr_t)p->mods_by_id.t[i].v);
		for (i = 0; i < p->elfs.cap; i++) {
			if (p->elfs.t[i].used) {
				struct elf_entry *e = (void *)(uintptr_t)p->elfs.t[i].v;

				free(e->path);
				free(e);
			}
		}
		if (p->unw)
			sp_unwinder_free(p->unw);
		map_free(&p->procs);
		map_free(&p->mods_by_key);
		map_free(&p->mods_by_id);
		map_free(&p->frames);
		map_free(&p->frames_raw);
		map_free(&p->elfs);
		free(p->cpus);
		free(p->rings);
		free(p->fds);
		free(p->kaddrs);
		free(p->roots);
		free(p);
	}
	free(s);
}

static void read_vdso(struct perf *p)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	FILE *f;
	char line[512];
	unsigned long long a, b;

	if (!base)
		return;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2 &&
		    a == base) {
			p->vdso_ok = sp_elf_info_mem((void *)(uintptr_t)a, b - a, &p->vdso) == 0;
			break;
		}
	}
	fclose(f);
}

static unsigned int popcount64(uint64_t v)
{
	return (unsigned int)__builtin_popcountll(v);
}

struct sp_source *sp_perf_source_new(const struct sp_perf_opts *o)
{
	struct sp_source *s = sp_xcalloc(1, sizeof(*s));
	struct perf *p = sp_xcalloc(1, sizeof(*p));
	struct perf_event_attr *a = &p->attr;
	int fd;

	s->name = "perf";
	s->fd = -1;
	s->priv = p;
	s->start = perf_start;
	s->poll = perf_poll;
	s->watermark = perf_watermark;
	s->finish = perf_finish;
	s->describe = perf_describe;
	s->free = perf_free;
	p->epfd = -1;
	sp_perf_queue_init(&p->q, sizeof(struct pending), read_record, handle_record, p);
	p->o = *o;
	if (!p->o.event)
		p->o.event = "cpu-clock";
	if (!p->o.period && !p->o.freq)
		p->o.freq = 999;
	if (sp_perf_event_lookup(p->o.event, &p->type, &p->config, &p->hardware)) {
		sp_error("unknown event '%s' (known: %s)", p->o.event, sp_perf_event_names());
		goto fail;
	}

	a->size = sizeof(*a);
	a->type = p->type;
	a->config = p->config;
	p->sideband = p->type == PERF_TYPE_SOFTWARE && p->config == PERF_COUNT_SW_DUMMY;
	if (p->sideband) {
		/* never samples: no period, no frequency; processes, threads and
		 * mappings still come as COMM/FORK/EXIT/MMAP2 records */
		p->o.freq = 0;
		p->o.period = 0;
	} else if (p->o.period) {
		a->sample_period = p->o.period;
	} else {
		a->freq = 1;
		a->sample_freq = p->o.freq;
	}
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_PERIOD;
	if (p->o.call_graph != SP_CG_NONE)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (p->o.call_graph >= SP_CG_DWARF && !p->o.kernel_only) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = sp_unwind_regs_mask();
		a->sample_stack_user = p->o.stack_size ? p->o.stack_size : 8192;
		p->nregs = popcount64(a->sample_regs_user);
		if (p->o.call_graph == SP_CG_DWARF)
			a->exclude_callchain_user = 1;
	}
	a->sample_id_all = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->build_id = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_hv = 1;
	a->exclude_guest = 1;
	a->inherit = 1;
	a->watermark = 1;
	/* Wake the loop when a ring is a quarter full (64 KiB of the default
	 * 512), well before it overflows between two batches. */
	{
		uint64_t ring = (uint64_t)(p->o.pages ? p->o.pages :
			p->o.call_graph >= SP_CG_DWARF ? DWARF_PAGES : DEFAULT_PAGES) *
			(uint64_t)sysconf(_SC_PAGESIZE);

		a->wakeup_watermark = (uint32_t)(ring / 4 < (64 << 10) ? ring / 4 : 64 << 10);
		if (!a->wakeup_watermark)
			a->wakeup_watermark = 1;
	}
	if (p->o.user_only)
		a->exclude_kernel = 1;
	if (p->o.kernel_only) {
		a->exclude_user = 1;
		a->exclude_callchain_user = 1;
	}
	if (p->o.enable_on_exec) {
		a->disabled = 1;
		a->enable_on_exec = 1;
	}

	/* Probe on ourselves what this kernel and our permissions allow. */
	p->kernel_ok = !p->o.user_only;
	p->build_id_ok = true;
	for (;;) {
		fd = perf_open(a, 0, -1, -1);
		if (fd >= 0) {
			close(fd);
			break;
		}
		if (errno == EINVAL && a->build_id) {
			a->build_id = 0;
			p->build_id_ok = false;
			continue;
		}
		if ((errno == EACCES || errno == EPERM) && !a->exclude_kernel && !p->o.kernel_only) {
			a->exclude_kernel = 1;
			a->exclude_callchain_kernel = 1;
			p->kernel_ok = false;
			continue;
		}
		if (p->hardware && (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV)) {
			sp_error("event '%s' is not available: this machine has no hardware PMU "
				 "(use a software event: cpu-clock, task-clock)", p->o.event);
			goto fail;
		}
		if (errno == EACCES || errno == EPERM) {
			sp_error_errno("cannot sample '%s' (perf_event_paranoid is %d)", p->o.event,
				       paranoid_level());
			goto fail;
		}
		sp_error_errno("perf_event_open of event '%s'", p->o.event);
		goto fail;
	}
	if (!p->kernel_ok && !p->o.user_only && !p->sideband)
		sp_warn("kernel stacks need root or perf_event_paranoid <= 1 (it is %d): "
			"recording user stacks only", paranoid_level());
	read_vdso(p);
	return s;
fail:
	perf_free(s);
	return NULL;
}

void sp_perf_source_info(struct sp_source *s, struct sp_perf_info *info)
{
	struct perf *p = s->priv;

	info->event = p->o.event;
	info->freq = p->o.period ? 0 : p->o.freq;
	info->period = p->o.period;
	info->call_graph = p->sideband ? SP_CG_NONE : p->o.call_graph;
	info->flags = p->sideband ? 0 :
		      (p->kernel_ok && !p->o.user_only ? SP_HDR_KERNEL_STACKS : 0) |
		      (p->o.kernel_only || p->o.call_graph == SP_CG_NONE ? 0 : SP_HDR_USER_STACKS);
}

void sp_perf_source_stats(struct sp_source *s, struct sp_perf_stats *st)
{
	const struct perf *p = s->priv;

	*st = p->st;
	st->bad += p->q.bad;	/* the rings' malformed records, with the samples' */
}

/* ---- --check ---- */

static bool try_open(uint32_t type, uint64_t config, uint64_t extra_type, bool kernel,
		     bool build_id, int *err)
{
	struct perf_event_attr a = { 0 };
	int fd;

	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.sample_period = 1000000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | extra_type;
	a.exclude_kernel = !kernel;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.mmap2 = build_id;
	a.build_id = build_id;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	if (extra_type & PERF_SAMPLE_REGS_USER) {
		a.sample_regs_user = sp_unwind_regs_mask();
		a.sample_stack_user = 8192;
	}
	fd = perf_open(&a, 0, -1, -1);
	*err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static bool path_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

int sp_perf_check(FILE *out)
{
	struct {
		const char *what;
		bool ok;
		const char *note;
	} rows[16];
	struct utsname u;
	int n = 0, missing = 0, err, i, par = paranoid_level();
	bool sw, hw, kern, regs, bid;
	char pnote[96];

	uname(&u);
	sw = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, false, false, &err);
	rows[n++] = (typeof(rows[0])){ "software events (cpu-clock, task-clock, ...)", sw,
		sw ? "" : strerror(err) };
	hw = try_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, false, false, &err);
	rows[n++] = (typeof(rows[0])){ "hardware events (cycles, instructions, ...)", hw,
		hw ? "" : err == ENOENT || err == EOPNOTSUPP ? "no hardware PMU" : strerror(err) };
	kern = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PERF_SAMPLE_CALLCHAIN, true,
			false, &err);
	snprintf(pnote, sizeof(pnote), "needs root or perf_event_paranoid <= 1 (it is %d)", par);
	rows[n++] = (typeof(rows[0])){ "kernel stacks", kern, kern ? "" : pnote };
	rows[n++] = (typeof(rows[0])){ "user stacks by frame pointers", sw, "" };
	regs = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
			PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, false, false, &err);
	rows[n++] = (typeof(rows[0])){ "user registers and stack copies (--call-graph=dwarf)",
		regs, regs ? "" : strerror(err) };
	bid = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, false, true, &err);
	rows[n++] = (typeof(rows[0])){ "build-ids in MMAP2 records", bid,
		bid ? "" : "build-ids are read from the files instead" };
	rows[n++] = (typeof(rows[0])){ "system-wide recording (-a)", geteuid() == 0 || par <= 0,
		geteuid() == 0 || par <= 0 ? "" : "needs root or perf_event_paranoid <= 0" };
	rows[n++] = (typeof(rows[0])){ "kernel symbols (/proc/kallsyms addresses)",
		geteuid() == 0, geteuid() == 0 ? "" : "addresses are hidden from non-root" };
	rows[n++] = (typeof(rows[0])){ "BPF type information (/sys/kernel/btf/vmlinux)",
		path_exists("/sys/kernel/btf/vmlinux"), "kernel events and spans need it" };
	rows[n++] = (typeof(rows[0])){ "tracefs (/sys/kernel/tracing/events)",
		path_exists("/sys/kernel/tracing/events"),
		"tracepoint/ programs need it; tp_btf/raw_tp do not" };
	rows[n++] = (typeof(rows[0])){ "kprobes", path_exists("/sys/bus/event_source/devices/kprobe"),
		"not built into this kernel" };
	rows[n++] = (typeof(rows[0])){ "uprobes (USDT spans)",
		path_exists("/sys/bus/event_source/devices/uprobe"), "not built into this kernel" };

	fprintf(out, "sp-record on %s %s %s, %ld CPUs online, perf_event_paranoid %d, %s\n",
		u.sysname, u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN), par,
		geteuid() == 0 ? "root" : "not root");
	for (i = 0; i < n; i++) {
		fprintf(out, "  %-3s %s%s%s\n", rows[i].ok ? "yes" : "no", rows[i].what,
			!rows[i].ok && rows[i].note[0] ? ": " : "", rows[i].ok ? "" : rows[i].note);
		missing += !rows[i].ok;
	}
	return missing;
}
