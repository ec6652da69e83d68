// SPDX-License-Identifier: MIT
/*
 * perf.data's task and mapping records (perfdataP.h): COMM, FORK and EXIT
 * become process, thread, process_end and thread_end records; MMAP and
 * MMAP2 of executable code become module records, and each process keeps
 * its mappings (sorted, not overlapping: a new mapping cuts the ones it
 * covers, as mmap does) to give sampled addresses their module and
 * file-relative address. A module is one file at one offset, shared by
 * every process that maps it; its build-id comes from the record (MMAP2
 * with a build-id), else from the file's build-id table, else from the file
 * on this machine. The kernel is one module, "[kernel.kallsyms]".
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "escape.h"
#include "perfdataP.h"
#include "sp.h"

#define PD_KERNEL_START 0xffff800000000000ull

struct pd_proc *pd_proc(struct pd *p, uint32_t pid)
{
	uint64_t *v = sp_u64map_get(&p->procs, pid);
	struct pd_proc *pr;

	if (v)
		return (struct pd_proc *)(uintptr_t)*v;
	pr = sp_xcalloc(1, sizeof(*pr));
	pr->pid = pid;
	sp_u64map_put(&p->procs, pid, (uintptr_t)pr);
	return pr;
}

static void proc_drop(struct pd *p, struct pd_proc *pr)
{
	sp_u64map_del(&p->procs, pr->pid);
	free(pr->vma);
	free(pr);
}

void pd_procs_free(struct pd *p)
{
	size_t i = 0;
	uint64_t k, v;

	while (sp_u64map_next(&p->procs, &i, &k, &v)) {
		struct pd_proc *pr = (struct pd_proc *)(uintptr_t)v;

		free(pr->vma);
		free(pr);
	}
	sp_u64map_release(&p->procs);
}

static void define_proc(struct pd *p, struct pd_proc *pr, uint64_t time, uint64_t flags)
{
	struct sp_record r = { .kind = SP_REC_PROCESS };

	r.process.time = time;
	r.process.pid = pr->pid;
	r.process.ppid = pr->ppid;
	r.process.comm = sp_writer_strz(p->w, pr->comm);
	r.process.flags = flags;
	sp_writer_put(p->w, &r);
	if (!pr->defined)
		p->st->processes++;
	pr->defined = true;
}

static void define_thread(struct pd *p, uint32_t pid, uint32_t tid, uint64_t time,
			  const char *name)
{
	struct sp_record r = { .kind = SP_REC_THREAD };

	r.thread.time = time;
	r.thread.pid = pid;
	r.thread.tid = tid;
	r.thread.name = sp_writer_strz(p->w, name);
	sp_writer_put(p->w, &r);
	p->st->threads++;
}

/* COMM: { u32 pid, tid; char comm[]; } */
void pd_on_comm(struct pd *p, const uint8_t *rec, size_t size, uint16_t misc)
{
	uint32_t pid, tid;
	uint64_t time = pd_other_time(p, rec, size);
	struct pd_proc *pr;
	char comm[32];
	size_t n;

	if (size < 17)
		return;
	pid = pd_u32(rec + 8);
	tid = pd_u32(rec + 12);
	n = strnlen((const char *)rec + 16, size - 16);
	n = n < sizeof(comm) - 1 ? n : sizeof(comm) - 1;
	memcpy(comm, rec + 16, n);
	comm[n] = 0;
	pr = pd_proc(p, pid);
	if (pid != tid) {
		define_thread(p, pid, tid, time, comm);
		return;
	}
	memcpy(pr->comm, comm, n + 1);
	if (misc & PERF_RECORD_MISC_COMM_EXEC) {
		/*
		 * A new image, whose mappings follow. Samples in the rest of
		 * the execve() still return to the old image: as perf does, the
		 * old mappings stay until new ones cover them.
		 */
		pr->exec_pending = true;
		define_proc(p, pr, time, pr->defined ? SP_PROC_EXEC : 0);
	} else {
		define_proc(p, pr, time, pr->defined ? 0 : SP_PROC_FROM_PROC);
	}
}

/* FORK and EXIT: { u32 pid, ppid, tid, ptid; u64 time; } */
void pd_on_fork(struct pd *p, const uint8_t *rec, size_t size)
{
	uint32_t pid, ppid, tid;
	struct pd_proc *pr, *parent;
	uint64_t time;

	if (size < 32)
		return;
	pid = pd_u32(rec + 8);
	ppid = pd_u32(rec + 12);
	tid = pd_u32(rec + 16);
	time = pd_u64(rec + 24);
	parent = pd_proc(p, ppid);
	if (pid == ppid) {
		define_thread(p, pid, tid, time, parent->comm);
		return;
	}
	pr = pd_proc(p, pid);
	pr->ppid = ppid;
	memcpy(pr->comm, parent->comm, sizeof(pr->comm));
	free(pr->vma);
	pr->vma = NULL;
	pr->nvma = pr->cap = 0;
	if (parent->nvma) {
		pr->vma = sp_xmalloc(parent->nvma * sizeof(*pr->vma));
		memcpy(pr->vma, parent->vma, parent->nvma * sizeof(*pr->vma));
		pr->nvma = pr->cap = parent->nvma;
	}
	if (p->unw)
		sp_unwinder_fork(p->unw, ppid, pid);
	define_proc(p, pr, time, 0);
}

void pd_on_exit(struct pd *p, const uint8_t *rec, size_t size)
{
	struct sp_record r = { 0 };
	uint32_t pid, tid;
	uint64_t *v;

	if (size < 32)
		return;
	pid = pd_u32(rec + 8);
	tid = pd_u32(rec + 16);
	if (pid != tid) {
		r.kind = SP_REC_THREAD_END;
		r.thread_end.time = pd_u64(rec + 24);
		r.thread_end.pid = pid;
		r.thread_end.tid = tid;
		sp_writer_put(p->w, &r);
		return;
	}
	r.kind = SP_REC_PROCESS_END;
	r.process_end.time = pd_u64(rec + 24);
	r.process_end.pid = pid;
	sp_writer_put(p->w, &r);
	v = sp_u64map_get(&p->procs, pid);
	if (v)
		proc_drop(p, (struct pd_proc *)(uintptr_t)*v);
	if (p->unw)
		sp_unwinder_forget(p->unw, pid);
}

const struct pd_vma *pd_vma_find(const struct pd_proc *pr, uint64_t addr)
{
	size_t lo = 0, hi = pr ? pr->nvma : 0, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < pr->vma[mid].start)
			hi = mid;
		else if (addr >= pr->vma[mid].end)
			lo = mid + 1;
		else
			return &pr->vma[mid];
	}
	return NULL;
}

/* Put v into pr's sorted mappings, cutting whatever it overlaps. */
static void vma_insert(struct pd_proc *pr, const struct pd_vma *v)
{
	struct pd_vma *out, tail;
	size_t i, n = 0, cap = pr->nvma + 2;
	bool placed = false;

	out = sp_xmalloc(cap * sizeof(*out));
	for (i = 0; i < pr->nvma; i++) {
		struct pd_vma o = pr->vma[i];

		if (o.end <= v->start || o.start >= v->end) {
			if (!placed && o.start >= v->end) {
				out[n++] = *v;
				placed = true;
			}
			out[n++] = o;
			continue;
		}
		tail = o;
		if (o.start < v->start) {
			o.end = v->start;
			out[n++] = o;
		}
		if (!placed) {
			out[n++] = *v;
			placed = true;
		}
		if (tail.end > v->end) {
			if (!tail.anon)
				tail.pgoff += v->end - tail.start;
			tail.start = v->end;
			out[n++] = tail;
		}
	}
	if (!placed)
		out[n++] = *v;
	free(pr->vma);
	pr->vma = out;
	pr->nvma = n;
	pr->cap = cap;
}

static void warn_path(const char *name, const char *fmt, const char *path)
{
	char e[1024];

	sp_esc_text(e, sizeof(e), path, strlen(path), 0);
	sp_warn(fmt, name, e);
}

/* The file on this machine, checked against the recorded build-id once. */
static const struct pd_file *local_file(struct pd *p, const char *path)
{
	struct pd_file *f = pd_file_of(p, path);

	if (!f || f->checked)
		return f;
	f->checked = true;
	if (path[0] != '/')
		return f;
	f->local_ok = sp_elf_info_file(path, &f->local) == 0;
	if (f->local_ok && f->bid_len && f->local.build_id_len &&
	    (f->local.build_id_len < f->bid_len ||
	     memcmp(f->local.build_id, f->bid, f->bid_len))) {
		warn_path(p->name, "%s: '%s' on this machine is not the file recorded "
			  "(its build-id differs): frames in it may be named wrongly", path);
	}
	return f;
}

uint64_t pd_kernel_mod(struct pd *p)
{
	struct sp_record r = { .kind = SP_REC_MODULE };

	if (p->kmod)
		return p->kmod;
	r.module.start = PD_KERNEL_START;
	r.module.end = UINT64_MAX;
	r.module.path = sp_writer_strz(p->w, "[kernel.kallsyms]");
	r.module.build_id = (struct sp_bytes){ p->kbid, p->kbid_len };
	r.module.prot = PROT_READ | PROT_EXEC;
	r.module.flags = SP_MOD_KERNEL;
	if (sp_writer_put(p->w, &r))
		return 0;
	p->st->modules++;
	p->kmod = sp_defs_nmodules(sp_writer_defs(p->w));
	return p->kmod;
}

struct map_in {
	uint32_t pid;
	uint64_t time, start, len, pgoff, ino, dev;
	uint32_t prot;
	const uint8_t *bid;
	unsigned int bid_len;
	const char *path;
};

/* The module of a file mapping (written on first sight), and the mapping's bias. */
static uint64_t module_of(struct pd *p, const struct map_in *m, bool anon, int64_t *bias)
{
	struct sp_record r = { .kind = SP_REC_MODULE };
	const struct pd_file *f = NULL;
	uint64_t key, *v;

	*bias = 0;
	if (anon) {
		key = sp_hash_mix(sp_hash_u64(m->pid) | 1, m->start);
	} else {
		key = sp_hash_mix(sp_hash_bytes(m->path, strlen(m->path)), m->pgoff) & ~1ull;
		f = local_file(p, m->path);
		if (f && f->local_ok)
			*bias = sp_elf_bias(&f->local, m->pgoff);
	}
	v = sp_u64map_get(&p->mods, key);
	if (v)
		return *v;
	r.module.time = m->time;
	r.module.pid = m->pid;
	r.module.start = m->start;
	r.module.end = m->start + m->len;
	r.module.pgoff = m->pgoff;
	r.module.prot = m->prot;
	r.module.ino = m->ino;
	r.module.dev = m->dev;
	r.module.flags = anon ? SP_MOD_ANON : 0;
	if (m->bid_len) {
		r.module.build_id = (struct sp_bytes){ m->bid, m->bid_len };
	} else if (f && f->bid_len) {
		r.module.build_id = (struct sp_bytes){ f->bid, f->bid_len };
	} else if (f && f->local_ok && f->local.build_id_len) {
		r.module.build_id = (struct sp_bytes){ f->local.build_id, f->local.build_id_len };
		r.module.flags |= SP_MOD_BUILD_ID_FILE;
	}
	r.module.path = sp_writer_strz(p->w, m->path[0] ? m->path : "//anon");
	if (sp_writer_put(p->w, &r))
		return 0;
	p->st->modules++;
	sp_u64map_put(&p->mods, key, sp_defs_nmodules(sp_writer_defs(p->w)));
	return sp_defs_nmodules(sp_writer_defs(p->w));
}

/*
 * MMAP: { u32 pid, tid; u64 addr, len, pgoff; char filename[]; }
 * MMAP2: { u32 pid, tid; u64 addr, len, pgoff; (u32 maj, min; u64 ino,
 * ino_generation) or (u8 build_id_size, pad[3], build_id[20]); u32 prot,
 * flags; char filename[]; }
 */
void pd_on_mmap(struct pd *p, const uint8_t *rec, size_t size, bool mmap2, uint16_t misc)
{
	size_t name_at = mmap2 ? 72 : 40;
	struct map_in m = { 0 };
	struct pd_vma v = { 0 };
	struct pd_proc *pr;
	char path[4096];
	size_t n;
	bool anon;

	if (size <= name_at)
		return;
	m.pid = pd_u32(rec + 8);
	m.start = pd_u64(rec + 16);
	m.len = pd_u64(rec + 24);
	m.pgoff = pd_u64(rec + 32);
	m.prot = PROT_READ | PROT_EXEC;
	if (mmap2) {
		m.prot = pd_u32(rec + 64);
		if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m.bid = rec + 44;
			m.bid_len = rec[40] <= 20 ? rec[40] : 20;
		} else {
			m.dev = (uint64_t)pd_u32(rec + 40) << 32 | pd_u32(rec + 44);
			m.ino = pd_u64(rec + 48);
		}
	} else if (misc & PERF_RECORD_MISC_MMAP_DATA) {
		return;
	}
	if (!(m.prot & PROT_EXEC) || m.pid == UINT32_MAX || !m.len ||
	    m.start + m.len < m.start || m.start >= PD_KERNEL_START)
		return;	/* data, the kernel and its modules (one module), or nonsense */
	n = strnlen((const char *)rec + name_at, size - name_at);
	n = n < sizeof(path) - 1 ? n : sizeof(path) - 1;
	memcpy(path, rec + name_at, n);
	path[n] = 0;
	m.path = path;
	m.time = pd_other_time(p, rec, size);
	anon = !path[0] || (path[0] == '[' && strcmp(path, "[vdso]")) ||
	       !strncmp(path, "//anon", 6) || !strncmp(path, "/memfd:", 7);
	v.start = m.start;
	v.end = m.start + m.len;
	v.pgoff = m.pgoff;
	v.anon = anon;
	v.mod = module_of(p, &m, anon, &v.bias);
	if (!v.mod)
		return;
	pr = pd_proc(p, m.pid);
	if (pr->exec_pending) {
		/* The unwinder starts the new image afresh. */
		pr->exec_pending = false;
		if (p->unw)
			sp_unwinder_forget(p->unw, m.pid);
	}
	vma_insert(pr, &v);
	if (p->unw && !anon)
		sp_unwinder_map(p->unw, m.pid, v.start, v.end, v.pgoff, path);
}
