// SPDX-License-Identifier: MIT
/*
 * The perf source's processes, threads and mappings (perf_sourceP.h): what
 * the kernel reports in FORK, EXIT, COMM and MMAP2 records, and what /proc
 * says of the processes that exist when the recording starts, become
 * process, thread, module and module_end records; each process keeps its
 * executable mappings, by which its frames find their module. A process
 * that exec'd is written once its executable's mapping shows up (its path),
 * the command's end once its exit status can be had.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <linux/types.h>

#include "elf/archive.h"
#include "elf/elffile.h"
#include "hashmap.h"
#include "ident.h"
#include "perf_sourceP.h"
#include "stream/schema.h"
#include "proc_identity.h"
#include "procroot.h"
#include "procfs.h"
#include "sp.h"
#include "unwind.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

/* ---- modules ---- */

static const struct elf_entry *elf_lookup(struct perf *p, const char *path,
					  const uint8_t *bid, unsigned int bid_len)
{
	uint64_t h = sp_hash_bytes(path, strlen(path));
	uint64_t *v = sp_perf_map_get(&p->elfs, h, 0);
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
	if (path[0] == '/' && !sp_elf_path_unlinked(path)) {
		e->ok = sp_elf_info_file(path, &e->info) == 0;
		e->have_st = stat(path, &e->st) == 0;
	}
	sp_perf_map_put(&p->elfs, h, 0, (uintptr_t)e);
	return e;
}

/*
 * The file a process in another mount namespace (a container) maps at
 * [start, end): its path is the container's, and the host's file of that
 * name, if any, is another. Read through /proc/PID/map_files (the mapped
 * image itself), else the path inside /proc/PID/root; keyed by the file's
 * identity, not its path. A process gone by now gives an entry without
 * information (never the host's file). A file deleted since it was mapped
 * (a service's binary after an upgrade) or a memfd (a program run from
 * one) is read so too, through map_files only: its path names no file, or
 * another one anyone could have made under that name
 * (sp_elf_path_unlinked()).
 */
static const struct elf_entry *elf_lookup_foreign(struct perf *p, uint32_t pid, uint64_t start,
						  uint64_t end, const char *path, bool unlinked)
{
	struct elf_entry *e;
	struct stat st;
	char src[96];
	uint64_t h, *v;
	int fd = -1, rfd;

	snprintf(src, sizeof(src), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	if (stat(src, &st)) {
		st.st_mode = 0;
		rfd = unlinked ? -1 : sp_proc_root_dir(pid);
		fd = rfd < 0 ? -1 : sp_proc_root_open(rfd, path, false);
		if (rfd >= 0)
			close(rfd);
		snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
		if (fd < 0 || fstat(fd, &st))
			st.st_mode = 0;
	}
	h = sp_hash_mix(sp_hash_mix(sp_hash_u64(st.st_dev) | 1, st.st_ino),
			(uint64_t)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec);
	v = S_ISREG(st.st_mode) ? sp_perf_map_get(&p->elfs, h, 1) : NULL;
	if (v) {
		if (fd >= 0)
			close(fd);
		return (struct elf_entry *)(uintptr_t)*v;
	}
	e = sp_xcalloc(1, sizeof(*e));
	e->path = sp_xstrdup(path);
	if (S_ISREG(st.st_mode)) {
		e->ok = sp_elf_info_file(src, &e->info) == 0;
		e->st = st;
		e->have_st = true;
		sp_perf_map_put(&p->elfs, h, 1, (uintptr_t)e);
	} else {
		sp_perf_map_put(&p->elfs, p->elfs_gone++, 2, (uintptr_t)e);	/* freed at the end */
	}
	if (fd >= 0)
		close(fd);
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
	sp_perf_map_put(&p->mods_by_key, ka, kb, (uintptr_t)mod);
	sp_perf_map_put(&p->mods_by_id, mod->id, 0, (uintptr_t)mod);
	p->st.modules++;
	return mod;
}

/*
 * Whether a read of pr's /proc failed because it is gone (by the time its
 * records are handled, a short-lived process often is): then none of its
 * other reads is tried, they would fail the same way.
 */
static bool proc_gone(struct proc *pr, int rc)
{
	if (rc && (errno == ENOENT || errno == ESRCH) && !pr->gone) {
		pr->gone = true;
		pr->gone_at = sp_now_mono_ns();
	}
	return pr->gone;
}

/* sp_proc_other_mnt_ns() of pr as of time, false once it is gone (as it
 * was). The kernel's record of its fork or exec says it without a look in
 * /proc: a module is new at every exec of a program that no other process
 * maps (a loop of /bin/true). */
static bool proc_other_mnt_ns(struct perf *p, struct proc *pr, uint64_t time)
{
	uint64_t ns, self;
	bool other;

	if (!pr->kmnt_ns && sp_proc_mnt_ns(p->ident, pr->pid, time, pr->pending_exec, &ns) == 0)
		pr->kmnt_ns = ns;
	if (pr->kmnt_ns && (self = sp_perf_self_mnt_ns(p)))
		return pr->kmnt_ns != self;
	if (pr->gone)
		return false;
	errno = 0;
	other = sp_proc_other_mnt_ns(pr->pid);
	proc_gone(pr, !other && errno ? -1 : 0);
	return other;
}

/* The module of a mapping, created on first sight. */
static struct mod *mod_get(struct perf *p, struct proc *pr, uint64_t time, uint64_t start,
			   uint64_t end, uint64_t pgoff, const char *path, uint32_t prot,
			   uint64_t dev, uint64_t ino, const uint8_t *bid, unsigned int bid_len)
{
	struct sp_module m = { 0 };
	const struct elf_entry *e = NULL;
	uint32_t pid = pr->pid;
	uint64_t ka, kb, *v;
	bool anon, vdso;
	int64_t bias = 0;

	vdso = !strcmp(path, "[vdso]");
	anon = !vdso && (!path[0] || path[0] == '[' || !strncmp(path, "//anon", 6) ||
			 !strcmp(path, "/dev/zero (deleted)"));
	/* A memfd holds a program run from it (fexecve) or a JIT's code: an
	 * ELF file, read through map_files, is a file like any other. One
	 * that cannot be read so (not an ELF, the process gone) stays JIT. */
	if (!anon && !vdso && sp_elf_path_memfd(path)) {
		e = elf_lookup_foreign(p, pid, start, end, path, true);
		anon = !e->ok;
	}
	if (anon) {
		/* Code without a file (JIT): one module per process and address. */
		ka = sp_hash_u64(pid) | 1;
		kb = start;
	} else {
		ka = sp_hash_bytes(path, strlen(path));
		ka = sp_hash_mix(ka, dev);
		ka = sp_hash_mix(ka, ino);
		if (bid_len)
			ka = sp_hash_mix(ka, sp_hash_bytes(bid, bid_len));
		ka &= ~1ull;
		kb = pgoff;
	}
	v = sp_perf_map_get(&p->mods_by_key, ka, kb);
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
		bool unlinked = sp_elf_path_unlinked(path);

		if (!e)		/* else a memfd's, read above */
			e = unlinked || proc_other_mnt_ns(p, pr, time) ?
			    elf_lookup_foreign(p, pid, start, end, path, unlinked) :
			    elf_lookup(p, path, bid, bid_len);
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

static void mod_put(struct perf *p, struct mod *mod, uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_MODULE_END };

	if (!mod || --mod->refs)
		return;
	if (!p->finished) {
		r.module_end.time = time;
		r.module_end.module = mod->id;
		sp_perf_emit(p, &r);
	}
	sp_perf_map_del(&p->mods_by_key, mod->ka, mod->kb);
	sp_perf_map_del(&p->mods_by_id, mod->id, 0);
	free(mod);
}

struct mod *sp_perf_kernel_mod(struct perf *p)
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

/* ---- processes and their mappings ---- */

struct proc *sp_perf_proc_find(struct perf *p, uint32_t pid)
{
	uint64_t *v = sp_perf_map_get(&p->procs, pid, 0);

	return v ? (struct proc *)(uintptr_t)*v : NULL;
}

static struct proc *proc_get(struct perf *p, uint32_t pid)
{
	struct proc *pr = sp_perf_proc_find(p, pid);
	unsigned int i;

	if (pr)
		return pr;
	/* a new process of that pid (forked, exec'd, read from /proc): what
	 * ended of the pid's last one is no longer its */
	sp_proc_ended_forget(&p->ended, pid);
	pr = sp_xcalloc(1, sizeof(*pr));
	pr->pid = pid;
	pr->uid = (uid_t)-1;
	for (i = 0; i < p->nroots; i++)
		pr->root |= p->roots[i] == pid;
	sp_perf_map_put(&p->procs, pid, 0, (uintptr_t)pr);
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

/* pr's mappings are gone: it exec'd (exec), or ended. */
static void vma_clear(struct perf *p, struct proc *pr, uint64_t time, bool exec)
{
	while (pr->nvmas)
		vma_remove(p, pr, pr->nvmas - 1, time);
	if (p->unw && exec)
		sp_unwinder_exec(p->unw, pr->pid);
	else if (p->unw)
		sp_unwinder_forget(p->unw, pr->pid);
	if (p->interp)	/* an exec or an end: its interpreter is gone */
		sp_interp_on_end(p->interp, pr->pid, time);
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

const struct vma *sp_perf_vma_find(const struct proc *pr, uint64_t addr)
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
	sp_proc_identity_fill(p->out->w, p->ident, pr->pid, time, &r.process);
	pr->start_boot_ns = r.process.start_boot_ns;
	sp_perf_jit_note(p, pr, &r.process);
	if (!pr->defined)	/* a process once, not once more per exec */
		p->st.processes++;
	pr->defined = true;
	pr->pending_exec = false;
	return sp_perf_emit(p, &r);
}

/* A thread record; its tid in its namespace is its process's pid there
 * for the first thread, else what the kernel or /proc says. */
static int emit_thread(struct perf *p, const struct proc *pr, uint32_t tid, const char *name,
		       uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_THREAD };

	r.thread.time = time;
	r.thread.tid = tid;
	r.thread.pid = pr->pid;
	r.thread.name = sp_writer_strz(p->out->w, name);
	if (tid == pr->pid)
		r.thread.nstid = pr->nspid;
	else
		r.thread.nstid = sp_thread_nstid(p->ident, pr->pid, tid, time, !pr->gone);
	return sp_perf_emit(p, &r);
}

/*
 * The arguments of pr's latest exec, in buf: the command line sp-record
 * started for the command's first, else /proc's while the process runs
 * the program that exec named. Its record is written some milliseconds
 * after the exec, and a wrapper (pyenv's shims, env, sh -c 'exec ...')
 * may have exec'd the next program meanwhile: its comm then is that
 * program's, and the arguments are left unknown rather than another's.
 */
static const char *exec_args(struct perf *p, struct proc *pr, char *buf, size_t size)
{
	char comm[64];
	int i;

	if (pr->root && !pr->execd && p->o.args)
		return p->o.args;
	/* not on the whole machine: a read of /proc at each of its execs
	 * costs too much (its proc_exec events have the arguments) */
	if (p->system_wide || pr->gone)
		return NULL;
	for (i = 0; i < 2; i++) {	/* the same program before and after */
		if (sp_procfs_comm(pr->pid, pr->pid, comm, sizeof(comm)) ||
		    (!i && sp_procfs_cmdline(pr->pid, buf, size))) {
			proc_gone(pr, -1);	/* a first failed read says it is gone */
			return NULL;
		}
		if (strncmp(comm, pr->comm, sizeof(pr->comm) - 1))
			return NULL;
	}
	return buf;
}

void sp_perf_flush_pending_exec(struct perf *p, struct proc *pr)
{
	struct sp_record r = { .kind = SP_REC_SAMPLE };
	char args[4096];
	unsigned int i;

	if (!pr->pending_exec)
		return;
	emit_process(p, pr, pr->exec_time, 0, exec_args(p, pr, args, sizeof(args)));
	pr->execd = true;
	emit_thread(p, pr, pr->pid, pr->comm, pr->exec_time);
	for (i = 0; i < pr->nheld; i++) {
		r.sample = pr->held[i];
		sp_perf_emit(p, &r);
	}
	pr->nheld = 0;
}

bool sp_perf_hold_sample(struct perf *p, struct proc *pr, const struct sp_sample *s)
{
	if (!pr->pending_exec || pr->exe)
		return false;
	if (pr->nheld == SP_PERF_HELD_SAMPLES) {
		sp_perf_flush_pending_exec(p, pr);
		return false;
	}
	pr->held[pr->nheld++] = *s;
	return true;
}

/* The kernel names the new program (comm) before it maps its executable,
 * and a task preempted in between on a busy machine maps it many ms
 * later: an exec is given this long for its executable's mapping. */
#define EXEC_MAP_GRACE_NS (250 * 1000 * 1000ULL)

/* A process whose executable never showed up (a script run by an
 * interpreter already mapped, say) gets its record once its exec is
 * older than what has been processed by the grace above (its sample,
 * fork or exit writes it at once). */
void sp_perf_flush_pending_execs(struct perf *p, uint64_t upto)
{
	struct proc *pr;
	size_t i = 0;
	uint64_t v;

	while (sp_perf_map_next(&p->procs, &i, &v)) {
		pr = (struct proc *)(uintptr_t)v;
		if (pr->pending_exec &&
		    (upto == UINT64_MAX || pr->exec_time + EXEC_MAP_GRACE_NS <= upto))
			sp_perf_flush_pending_exec(p, pr);
	}
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
		*flags |= SP_PEND_SIGNALED | (si.si_code == CLD_DUMPED ? SP_PEND_CORE : 0);
	}
	return true;
}

static void proc_end(struct perf *p, struct proc *pr, uint64_t time, bool exec)
{
	struct sp_record r = { .kind = SP_REC_PROCESS_END };

	sp_perf_flush_pending_exec(p, pr);
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
		sp_perf_emit(p, &r);
	if (!exec) {
		uint32_t ppid;

		/* whose JIT perf map to trust: its user as it ended, as the
		 * kernel said (no read of /proc at every end) */
		sp_perf_capture_jit(p, pr, sp_proc_owner(p->ident, pr->pid, time, false, false,
							  &ppid, &pr->uid) == 0);
	}
	vma_clear(p, pr, time, exec);
}

static void proc_free(struct perf *p, struct proc *pr)
{
	sp_perf_map_del(&p->procs, pr->pid, 0);
	free(pr->vmas);
	sp_perf_jit_forget(pr);
	free(pr);
}

/* ---- processes that exist at attach, from /proc ---- */

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
	mod = mod_get(c->p, c->pr, c->time, m->start, m->end, m->pgoff, m->path, m->prot,
		      m->dev, m->ino, NULL, 0);
	vma_add(c->p, c->pr, m->start, m->end, m->pgoff, mod, c->time);
	if (c->p->interp)
		sp_interp_on_map(c->p->interp, c->p->out, c->pr->pid, m->path, m->start, m->end,
				 m->pgoff, c->time);
	if (c->p->unw)	/* all of them: [vdso] has CFI, anonymous code is "jit" */
		sp_unwinder_map(c->p->unw, c->pr->pid, m->start, m->end, m->pgoff, m->path);
	return 0;
}

/* Define a process that exists already (from /proc). 0, or -1 if it is gone. */
int sp_perf_scan_process(struct perf *p, uint32_t pid)
{
	char buf[4096], comm[64];
	struct scan_ctx c = { p, NULL, p->scan_time ? p->scan_time : sp_now_mono_ns() };
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
				emit_thread(p, pr, tids[i], comm, c.time);
		free(tids);
	}
	c.pr = pr;
	if (sp_procfs_maps(pid, SP_PROCFS_MAPS_BYTES, scan_map, &c) && errno == EFBIG &&
	    !p->maps_cut_said) {
		p->maps_cut_said = true;
		sp_warn("pid %u: its /proc/PID/maps is longer than %u MiB: the code mapped beyond "
			"is not recorded, and its samples there show bare addresses", pid,
			SP_PROCFS_MAPS_BYTES >> 20);
	}
	return 0;
}

void sp_perf_define_gone(struct perf *p, uint32_t pid, uint32_t ppid, const char *comm,
			 uint64_t time)
{
	struct proc *pr = proc_get(p, pid);

	if (pr->defined)
		return;
	pr->ppid = ppid;
	snprintf(pr->comm, sizeof(pr->comm), "%.15s", comm);
	/* no mappings: its identity is the kernel's map's, kept past its end */
	emit_process(p, pr, time, 0, NULL);
	emit_thread(p, pr, pid, pr->comm, time);
}

/* What the kernel's map says of pid's start, cut to the clock tick as a
 * record's is (proc_identity.c); 0 when it says nothing. */
static uint64_t kernel_start(struct perf *p, uint32_t pid)
{
	struct sp_bpf_ident id;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t tick = hz > 0 ? 1000000000ull / (uint64_t)hz : 1;

	if (sp_ident_bpf_lookup(p->ident, pid, &id) || !id.start_boot_ns)
		return 0;
	return id.start_boot_ns - id.start_boot_ns % tick;
}

struct proc *sp_perf_define_unseen(struct perf *p, uint32_t pid, uint64_t time)
{
	struct sp_bpf_ident id;
	struct proc *parent;

	/* A sample of a process whose record was written and that ended,
	 * read after its end (another CPU's ring): it has its record, and a
	 * second one would make two processes of one (with the pid alone
	 * when nothing knows it any more). */
	if (sp_proc_ended_is(&p->ended, pid, time, kernel_start(p, pid))) {
		p->ended_late++;
		return NULL;
	}
	if (!sp_perf_scan_process(p, pid))
		return sp_perf_proc_find(p, pid);
	if (sp_ident_bpf_lookup(p->ident, pid, &id) == 0) {
		/* As its fork would have been, by its own name as the kernel
		 * had it (a runtime's helper forked in the cgroup by another
		 * already gone), else its live parent's. */
		id.comm[sizeof(id.comm) - 1] = 0;
		parent = sp_perf_proc_find(p, id.ppid);
		if (id.comm[0])
			sp_perf_define_gone(p, pid, id.ppid, id.comm, time);
		else if (parent && parent->defined && !parent->gone)
			sp_perf_define_gone(p, pid, id.ppid, parent->comm, time);
	}
	if (!sp_perf_proc_find(p, pid) || !sp_perf_proc_find(p, pid)->defined) {
		/* Nothing knows it any more (the kernel's map pushed it out, or
		 * could not be loaded): a record by its pid alone, without
		 * identity (flag 0x4), so that its samples have a process;
		 * counted, and named with -v. */
		p->unseen_unnamed++;
		sp_info("pid %u: sampled, gone, and unknown to the kernel's map: its process "
			"record has its pid only", pid);
		sp_perf_define_gone(p, pid, 0, "", time);
	}
	return sp_perf_proc_find(p, pid);
}

/* ---- the kernel's records ---- */

void sp_perf_on_fork(struct perf *p, const struct perf_event_header *h)
{
	const struct perf_task_rec *t = (const void *)(h + 1);
	struct proc *parent, *pr;
	size_t i;

	if (h->size < sizeof(*h) + sizeof(*t))
		return;
	parent = proc_get(p, t->ppid);
	sp_perf_flush_pending_exec(p, parent);
	if (t->pid != t->tid) {
		/* A new thread of an existing process. */
		pr = proc_get(p, t->pid);
		sp_perf_flush_pending_exec(p, pr);
		pr->live_threads++;
		emit_thread(p, pr, t->tid, pr->comm, t->time);
		return;
	}
	pr = sp_perf_proc_find(p, t->pid);
	if (pr) {		/* a stale entry for a reused pid */
		sp_perf_flush_pending_exec(p, pr);
		vma_clear(p, pr, t->time, false);
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
	if (p->interp)
		sp_interp_on_fork(p->interp, t->ppid, t->pid, t->time);
	emit_process(p, pr, t->time, 0, NULL);
	emit_thread(p, pr, t->tid, pr->comm, t->time);
}

/* The last thread of pr ended at time. */
static void proc_exited(struct perf *p, struct proc *pr, uint64_t time)
{
	pr->leader_exited = false;
	proc_end(p, pr, time, false);
	pr->ended = true;
	pr->gone = true;
	pr->gone_at = time;
	/* Keep the entry while it may still matter for the command's status. */
	if (!pr->root) {
		if (pr->defined)
			sp_proc_ended_note(&p->ended, pr->pid, time, pr->start_boot_ns);
		proc_free(p, pr);
	}
}

void sp_perf_on_exit(struct perf *p, const struct perf_event_header *h)
{
	const struct perf_task_rec *t = (const void *)(h + 1);
	struct sp_record r = { .kind = SP_REC_THREAD_END };
	struct proc *pr;

	if (h->size < sizeof(*h) + sizeof(*t))
		return;
	pr = sp_perf_proc_find(p, t->pid);
	if (pr)
		sp_perf_flush_pending_exec(p, pr);
	r.thread_end.time = t->time;
	r.thread_end.tid = t->tid;
	r.thread_end.pid = t->pid;
	sp_perf_emit(p, &r);
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

void sp_perf_on_comm(struct perf *p, const struct perf_event_header *h, const struct sp_perf_id *id)
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
		/* the old image's JIT frames named now (their symbols go before
		 * the exec), and none of them taken for the new image's code */
		sp_perf_capture_jit(p, pr, false);
		if (pr->defined && !pr->pending_exec)
			proc_end(p, pr, id->time, true);
		else
			vma_clear(p, pr, id->time, true);
		/* Its records are older than the moment it was seen gone; a
		 * later exec is of another process (its fork was lost). */
		if (pr->gone && id->time >= pr->gone_at)
			pr->gone = false;
		/* Its user (a set-user-ID program changes it) and its parent
		 * (its fork unseen), from the kernel's record of the exec: at
		 * every exec of the machine, a read of /proc costs too much. */
		if (!pr->gone) {
			uint32_t ppid = 0;

			if (!proc_gone(pr, sp_proc_owner(p->ident, pr->pid, id->time, true, true,
							 &ppid, &pr->uid)) && !pr->ppid)
				pr->ppid = ppid;
		}
		memcpy(pr->comm, name, sizeof(name));
		pr->exe = 0;
		pr->kmnt_ns = 0;	/* the exec's entry, once the kernel has it */
		pr->pending_exec = true;
		pr->exec_time = id->time;
		pr->live_threads = 0;	/* an exec ends the other threads */
		pr->leader_exited = false;
		return;
	}
	sp_perf_flush_pending_exec(p, pr);
	if (ids[0] == ids[1])
		memcpy(pr->comm, name, sizeof(name));
	emit_thread(p, pr, ids[1], name, id->time);
}

struct perf_record_mmap2 {
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
};

/* An interpreter's mapping as soon as it is out of the ring, long before
 * its turn comes: its process's samples carry interpreted stacks from its
 * first moments (the BPF program reads them at sample time). */
void sp_perf_peek_mmap2(struct perf *p, const struct perf_event_header *h, uint64_t time)
{
	const struct perf_record_mmap2 *m = (const void *)(h + 1);
	size_t idsz = sp_perf_id_size(p->attr.sample_type), max;
	char path[4096];

	if (!p->interp || h->size < sizeof(*h) + sizeof(*m) + idsz || !(m->prot & PROT_EXEC))
		return;
	max = h->size - sizeof(*h) - sizeof(*m) - idsz;
	snprintf(path, sizeof(path), "%.*s", (int)strnlen(m->filename, max), m->filename);
	sp_interp_on_map(p->interp, NULL, m->pid, path, m->addr, m->addr + m->len, m->pgoff, time);
}

void sp_perf_on_mmap2(struct perf *p, const struct perf_event_header *h, const struct sp_perf_id *id)
{
	const struct perf_record_mmap2 *m = (const void *)(h + 1);
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
		sp_perf_flush_pending_exec(p, pr);
	}
	mod = mod_get(p, pr, id->time, m->addr, m->addr + m->len, m->pgoff, path, m->prot,
		      dev, ino, bid, bid_len);
	vma_add(p, pr, m->addr, m->addr + m->len, m->pgoff, mod, id->time);
	if (p->interp)
		sp_interp_on_map(p->interp, p->out, m->pid, path, m->addr, m->addr + m->len,
				 m->pgoff, id->time);
	if (p->unw)	/* all of them: [vdso] has CFI, anonymous code is "jit" */
		sp_unwinder_map(p->unw, m->pid, m->addr, m->addr + m->len, m->pgoff, path);
}

/* ---- the end ---- */

void sp_perf_procs_finish(struct perf *p)
{
	struct proc *pr;
	size_t i = 0;
	uint64_t v;

	/* Live processes: their JIT maps now; the command's end if the kernel
	 * reported its exit before it could be waited for. */
	while (sp_perf_map_next(&p->procs, &i, &v)) {
		pr = (struct proc *)(uintptr_t)v;
		sp_perf_flush_pending_exec(p, pr);
		/* its first thread exited, an end of a thread it made was not
		 * seen (lost): it ends there */
		if (pr->leader_exited) {
			pr->leader_exited = false;
			proc_end(p, pr, pr->leader_exit, false);
			pr->ended = true;
		}
		if (!pr->ended)
			sp_perf_capture_jit(p, pr, false);
		if (pr->end_deferred && pr->defined) {
			struct sp_record r = { .kind = SP_REC_PROCESS_END };

			r.process_end.time = pr->end_time;
			r.process_end.pid = pr->pid;
			root_status(pr, &r.process_end.status, &r.process_end.flags);
			sp_perf_emit(p, &r);
			pr->end_deferred = false;
		}
	}
}

void sp_perf_procs_remap(struct perf *p, const struct sp_remap *m)
{
	struct perf_map by_id = { 0 };
	size_t i = 0;
	uint64_t v;

	while (sp_perf_map_next(&p->mods_by_id, &i, &v)) {
		struct mod *mod = (struct mod *)(uintptr_t)v;

		mod->id = m->id(m->ctx, SP_REF_MODULE, mod->id);
		sp_perf_map_put(&by_id, mod->id, 0, v);
	}
	sp_perf_map_free(&p->mods_by_id);
	p->mods_by_id = by_id;
	for (i = 0; sp_perf_map_next(&p->procs, &i, &v);) {
		struct proc *pr = (struct proc *)(uintptr_t)v;
		unsigned int k;

		pr->exe = m->id(m->ctx, SP_REF_STRING, pr->exe);
		/* the samples an exec holds back until its process record */
		for (k = 0; k < pr->nheld; k++)
			pr->held[k].stack = m->id(m->ctx, SP_REF_STACK, pr->held[k].stack);
	}
}

void sp_perf_procs_free(struct perf *p)
{
	size_t i = 0;
	uint64_t v;

	while (sp_perf_map_next(&p->procs, &i, &v)) {
		struct proc *pr = (struct proc *)(uintptr_t)v;

		free(pr->vmas);
		free(pr);
	}
	sp_proc_ended_release(&p->ended);
	for (i = 0; sp_perf_map_next(&p->mods_by_id, &i, &v);)
		free((void *)(uintptr_t)v);
	for (i = 0; sp_perf_map_next(&p->elfs, &i, &v);) {
		struct elf_entry *e = (void *)(uintptr_t)v;

		free(e->path);
		free(e);
	}
	sp_perf_map_free(&p->procs);
	sp_perf_map_free(&p->mods_by_key);
	sp_perf_map_free(&p->mods_by_id);
	sp_perf_map_free(&p->elfs);
	sp_perf_jit_release(p);
}
