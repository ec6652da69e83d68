// SPDX-License-Identifier: MIT
/*
 * Interpreted frames in perf samples (interpP.h, docs/interpreters.md):
 * which processes run a supported interpreter (found from the ELF file of
 * an executable mapping: its version and the addresses of its runtime
 * state, code type and eval loop), the stacks the BPF program read for
 * their samples, paired with perf's sample of the same thread (the stack
 * read nearest to the sample's time), and the frames written for them:
 * one frame per (function, file, line), named by a symbol record that
 * sp-record writes itself. Off-CPU samples (perf_offcpu.c) get theirs
 * alike, from the stacks read as their threads were switched out, queued
 * apart from the CPU samples' ones.
 *
 * Code objects are read from the process (process_vm_readv) once per
 * (process, address), checked (their type must be the interpreter's code
 * type) and cached with the low bits of their first line, which the BPF
 * program copies with each frame: a freed and reused address is read again.
 * Ruby's instruction sequences are handled alike (interp_rb.c), named by
 * their label ("bar", "block in bar") in a "[ruby]" module, with the class
 * of the frame's method entry put in ("Foo#bar", "block in Foo.baz"); a C
 * method's frame is named by its method entry alone ("Array#each"). Method
 * entries are read once per (process, address), at most MAX_MES of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <gelf.h>

#include "elf/coldpart.h"
#include "elf/elffile.h"
#include "elf/fstarts.h"
#include "escape.h"
#include "hashmap.h"
#include "interpP.h"
#include "stream/schema.h"
#include "procroot.h"
#include "record.h"
#include "safefile.h"
#include "source.h"
#include "sp.h"
#include "writer.h"

/* stacks kept in all, waiting for their samples (and as many for their
 * events): up to 8 KiB each (256 frames), 256 MiB in all at most */
#define PENDING_MAX	32768
#define TIDQ_LEN	1024		/* stacks kept per thread waiting for their sample
				 * (the perf queue handles samples a pass or two later) */
#define MAX_CODES	65536		/* code objects cached per process */
#define MAX_MES		4096		/* Ruby method entries cached per process */
/* ns: a stack read more than PAIR_WINDOW before a sample, or more than
 * PAIR_SLACK after it, is not its stack */
#define PAIR_WINDOW	(50 * 1000 * 1000ull)
#define PAIR_SLACK	(300 * 1000ull)
#define ELF_MAX		(1ull << 30)
#define FORKS_MAX	4096		/* children whose fork's stack waits for their exec */
/* ns: a DNS send takes the stack of its thread's last call read this
 * recently (the resolver's connect) */
#define DNS_WINDOW	(1000 * 1000 * 1000ull)
/* the tids map's key of a thread's off-CPU stacks (its CPU samples': the tid) */
#define OFFCPU_KEY	(1ull << 32)
#define EVQ_LEN		16384	/* stacks kept per thread waiting for their calls' events
				 * (the events' ring is read a pass or more later) */

/* Events counted together: how many, their window, their process (the
 * first one's; pids: more than one). */
struct lost_run {
	uint64_t count, first, last;
	uint32_t pid;
	bool pids;
};

static void lost_run_add(struct lost_run *r, uint32_t pid, uint64_t time)
{
	if (!r->count++) {
		r->pid = pid;
		r->first = r->last = time;
	}
	r->pids |= pid != r->pid;
	if (time < r->first)
		r->first = time;
	if (time > r->last)
		r->last = time;
}

/* What an ELF file says about the interpreter it holds. */
struct elf_info {
	char *path;
	bool ok;		/* holds an interpreter's runtime state */
	unsigned int runtime, major, minor, micro;
	bool micro_unknown;	/* the version is its file name's (Python before 3.11) */
	uint64_t runtime_sym, code_type_sym, eval_sym, eval_size;	/* ELF addresses */
	uint64_t eval2_sym, eval2_size;	/* Ruby: vm_exec_core, when the file names it;
					 * Python: _PyEval_EvalFrameDefault's cold part */
	uint64_t symbols_sym;	/* Ruby: ruby_global_symbols (0: not found) */
	struct sp_fstarts fstarts;	/* Ruby: where its functions start (C methods') */
	GElf_Phdr load[8];	/* its PT_LOAD headers */
	unsigned int nload;
};

struct code_ent {
	uint32_t firstline, name;	/* as the BPF program copies them */
	bool bad;
	bool copy;		/* Python: named from the BPF program's copy, which
				 * holds less than all (a name cut, the line table's
				 * first bytes): read from the process once, if it
				 * still has it */
	uint64_t func, file;	/* string ids */
	int line0;
	uint8_t *linetable;
	size_t len;
	bool whole;		/* Python: linetable is all of it */
	struct sp_py_linepos lpos;	/* where linetable's last lookup stopped */
	struct sp_rb_lines rb;	/* Ruby's line table */
	uint64_t me, me_func;	/* Ruby: the method entry last seen with it, the name */
};

/* A Ruby method entry, read once. */
struct me_ent {
	bool bad;		/* not one (a cref), or unreadable */
	uint64_t cfunc;		/* its name as a C method's frame, a string id */
	uint64_t cstart, cend;	/* where its C function lies, when in the
				 * interpreter's file (0: unknown) */
	struct sp_rb_method m;
};

struct pend {
	struct sp_bpf_istack h;
	struct sp_bpf_iframe *f;	/* h.nframes of them, malloc'd */
};

/* A thread's stacks at the entry of its last calls, oldest first; the
 * first may be one an event took already (used). */
struct evq {
	uint32_t pid;		/* the process of its stacks */
	unsigned int n;
	size_t cap;
	bool used;
	struct pend *p;
	/* The stack of the last call that made an event, and what the walk
	 * read for it: a call with the same (the several system calls of
	 * one line of Python, an import's opens and reads) has the same
	 * stack, not looked up again. 0: none. */
	uint64_t last_stack;
	struct sp_bpf_istack last_h;
	struct sp_bpf_iframe *last_f;
	size_t last_cap;
	/* the oldest stack kept when the queue was full and stacks were
	 * dropped unread: an event before it whose stack is not here had its
	 * stack dropped (0: none was) */
	uint64_t dropped_before;
};

/* A thread's stacks waiting for their samples (CPU or off-CPU ones). */
struct tidq {
	uint32_t pid;
	unsigned int n;
	size_t cap;
	struct pend *p;
};

struct iproc {
	uint32_t pid;
	unsigned int row;
	const struct sp_interp_layout *l;
	const struct elf_info *e;
	uint64_t runtime, code_type, eval_start, eval_end, eval2_start, eval2_end;
	uint64_t symbols;	/* Ruby: ruby_global_symbols, 0 if unknown */
	uint64_t base;		/* its file's load bias */
	uint64_t since;		/* time of the mapping (or fork) it was found at */
	uint64_t followed;	/* when the BPF program was told of it (0: a fork's
				 * child, followed in the kernel from its start) */
	bool started;		/* its interpreter was set up by then */
	uint32_t parent;	/* a forked child's followed parent, 0 once it ended */
	unsigned int children;	/* followed processes whose parent it is */
	bool announced;		/* its runtime record is written */
	bool checked;		/* a code object decoded: the layout fits */
	unsigned int misfits;	/* code objects that did not decode before that */
	struct sp_u64map codes;	/* address -> struct code_ent * */
	struct sp_u64map mes;	/* Ruby: method entry address -> struct me_ent * */
};

struct sp_interpreters {
	enum sp_interp_mode mode;
	struct sp_interp_bpf *bpf;
	bool failed;
	struct sp_u64map procs;	/* pid -> struct iproc * */
	struct sp_u64map tids;	/* tid (| OFFCPU_KEY) -> struct tidq * */
	struct sp_u64map evs;	/* tid -> struct evq *: stacks at its last calls' entries */
	struct sp_u64map forks;	/* child pid -> the stack id its fork carried (0: gone),
				 * until its exec or exit */
	struct sp_u64map elfs;	/* hash of path -> struct elf_info * */
	struct sp_u64map locs;	/* func << 32 | file -> location index + 1 */
	struct sp_u64map frames;	/* location index << 32 | line -> frame id */
	uint64_t nlocs, nframes;
	uint64_t unknown_id, truncated_id;	/* the placeholder frames' ids */
	uint64_t module[2];	/* the "[python]" and "[ruby]" modules' ids */
	char desc[64];
	/* counters */
	uint64_t attached;	/* when the program was attached */
	uint64_t offcpu_attached;	/* to the context-switch events (0: not) */
	struct sp_emit *out;	/* while draining */
	uint64_t samples, unread;	/* unread: incomplete (sp_interp_outcome_incomplete) */
	uint64_t outcomes[SP_IO_N];
	uint32_t unread_pid;	/* the last process with an unread stack, to name it */
	uint64_t npending, dropped;	/* stacks waiting for their samples; refused */
	uint64_t copies;		/* Python code-object copies received */
	uint64_t nev;		/* stacks waiting for their events */
	uint64_t ev_stacks, ev_none;	/* events of followed processes with a stack, without */
	uint64_t forks_full;	/* forks whose stack could not be kept for the child's exec */
	uint64_t ev_no_walker;	/* events of a Ruby's whose walker was not in yet */
	/* events whose stack was dropped unread: all, and those not in a
	 * lost record yet (flush_lost_events()) */
	struct lost_run ev_lost, ev_lost_pending;
	uint32_t first_ruby;	/* the first Ruby found */
	bool ruby_asked;	/* for the Ruby walkers (sp_interp_bpf_ruby()) */
	unsigned int warned_version;	/* 1 << runtime: warned once each */
};

static bool is_ruby(const struct iproc *pr)
{
	return pr->l->runtime == SP_RT_RUBY;
}

static const char *rt_name(unsigned int runtime)
{
	return runtime == SP_RT_RUBY ? "ruby" : "python";
}

/* ---- memory of the process ---- */

/* len bytes at addr of process pid into buf (the caller's, of len bytes):
 * 0, or -1 when any of them cannot be read (a short read is a failure). */
static int read_pid(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };

	if (!pid || !len || len > SSIZE_MAX)
		return -1;
	return process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int read_proc(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return read_pid(((const struct iproc *)ctx)->pid, addr, buf, len);
}

/*
 * A code object's or a method entry's bytes: a forked child's that can no
 * longer be read (it exited right after the call whose stack names them:
 * os._exit, exit!) from its parent, which had the same objects at the same
 * addresses at the fork. The callers' checks (a code object's first line
 * and name, an iseq's size and body, a method entry's type) refuse one the
 * parent freed or changed since.
 */
static int read_obj(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct iproc *pr = ctx;

	if (!read_pid(pr->pid, addr, buf, len))
		return 0;
	return pr->parent ? read_pid(pr->parent, addr, buf, len) : -1;
}

/* ---- the interpreter's ELF file ---- */

/* The first table of each kind only: libelf keeps what it read until the
 * file is closed, and another user's file may have as many as it likes. */
static bool elf_sym(Elf *elf, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	bool dynsym = false, symtab = false;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type == SHT_DYNSYM && dynsym) || (sh.sh_type == SHT_SYMTAB && symtab))
			continue;
		dynsym |= sh.sh_type == SHT_DYNSYM;
		symtab |= sh.sh_type == SHT_SYMTAB;
		if ((sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !sp_elf_strtab_ok(elf, sh.sh_link, SP_ELF_STRTAB_MAX) ||
		    !(d = sp_elf_data_max(scn, &sh, SP_ELF_SYMTAB_MAX)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			const char *s;

			/* defined here: a program that calls into a library
			 * names the library's symbols too (undefined) */
			if (!gelf_getsym(d, (int)i, out) || !out->st_value ||
			    out->st_shndx == SHN_UNDEF)
				continue;
			s = elf_strptr(elf, sh.sh_link, out->st_name);
			if (s && !strcmp(s, name))
				return true;
		}
	}
	return false;
}

/* The n bytes at ELF address addr (Py_Version, ruby_version, a function's
 * code): those bytes only, not their section, whose size is the file's
 * owner's to say. */
static bool elf_bytes(Elf *elf, uint64_t addr, void *v, size_t n)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    addr < sh.sh_addr || n > sh.sh_size || addr - sh.sh_addr > sh.sh_size - n)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)(sh.sh_offset + (addr - sh.sh_addr)), n,
					 ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size < n)
			return false;
		memcpy(v, d->d_buf, n);
		return true;
	}
	return false;
}

/* Ruby: ruby_global_symbols (the table of IDs' names), from the symbol
 * table, or from the code of rb_id2str where it reads it. */
static uint64_t ruby_symbols(Elf *elf)
{
	uint8_t code[128];
	uint64_t at, jump = 0, sym;
	unsigned int i;
	GElf_Sym s;

	if (elf_sym(elf, "ruby_global_symbols", &s))
		return s.st_value;
	if (!elf_sym(elf, "rb_id2str", &s))
		return 0;
	for (i = 0, at = s.st_value; i < 2 && at; i++, at = jump) {
		if (!elf_bytes(elf, at, code, sizeof(code)))
			return 0;
		if ((sym = sp_rb_find_symbols(code, sizeof(code), at, &jump)))
			return sym;
	}
	return 0;
}

/* Ruby: ruby_version ("3.1.2") and the VM's eval loop. */
static void elf_read_ruby(Elf *elf, struct elf_info *e, uint64_t vm_ptr)
{
	GElf_Sym s;
	char ver[16] = "";

	e->runtime_sym = vm_ptr;
	e->runtime = SP_RT_RUBY;
	if (elf_sym(elf, "ruby_version", &s) && s.st_size >= 2 && s.st_size <= sizeof(ver) &&
	    elf_bytes(elf, s.st_value, ver, s.st_size)) {
		ver[sizeof(ver) - 1] = 0;
		if (sscanf(ver, "%u.%u.%u", &e->major, &e->minor, &e->micro) < 2)
			e->major = e->minor = 0;
	}
	if (elf_sym(elf, "rb_vm_exec", &s)) {
		e->eval_sym = s.st_value;
		e->eval_size = s.st_size;
	}
	if (elf_sym(elf, "vm_exec_core", &s)) {	/* only with a full symbol table */
		e->eval2_sym = s.st_value;
		e->eval2_size = s.st_size;
	}
	e->symbols_sym = ruby_symbols(elf);
	sp_fstarts_read(elf, &e->fstarts);	/* none: C methods go with their caller */
	e->ok = e->major && e->nload;
	if (e->ok && !e->symbols_sym) {
		char path[256];

		sp_esc_text(path, sizeof(path), e->path, strlen(e->path), 0);
		sp_warn("%s: ruby_global_symbols not found: C methods' frames are named "
			"by their class only (Array#?)", path);
	}
}

/* The version a Python's file name says (python3.10, libpython2.7.so.1.0):
 * only 3.11 and later say it in their data (Py_Version), and an older one
 * must be named as what it is when it is refused. */
static void python_version_from_name(struct elf_info *e)
{
	const char *b = strrchr(e->path, '/');

	b = b ? b + 1 : e->path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (sscanf(b, "python%u.%u", &e->major, &e->minor) != 2 || e->major > 99 ||
	    e->minor > 99)
		e->major = e->minor = 0;
	e->micro_unknown = true;
}

/*
 * Python: the cold part of _PyEval_EvalFrameDefault (coldpart.h), where
 * the eval loop runs while a profile function or tracing is on (the
 * activator's hook, cProfile, a debugger): its frames are the loop's too.
 * Without it, a sample there had its Python frames spliced one eval frame
 * off, the leftovers at the root of a stack that looked complete.
 */
#define EVAL_SCAN_MAX	(1u << 20)	/* the hot part's bytes looked at */
static void python_eval_cold(Elf *elf, struct elf_info *e)
{
	uint64_t start, end;
	struct sp_fstarts f;
	GElf_Sym s;
	uint8_t *code;

	if (elf_sym(elf, "_PyEval_EvalFrameDefault.cold", &s) && s.st_size) {
		e->eval2_sym = s.st_value;	/* a full symbol table names it */
		e->eval2_size = s.st_size;
		return;
	}
	if (!e->eval_size || e->eval_size > EVAL_SCAN_MAX || sp_fstarts_read(elf, &f))
		return;
	code = sp_xmalloc(e->eval_size);
	if (elf_bytes(elf, e->eval_sym, code, e->eval_size) &&
	    !sp_cold_part(code, e->eval_size, e->eval_sym, &f, &start, &end) &&
	    end - start <= EVAL_SCAN_MAX) {
		e->eval2_sym = start;
		e->eval2_size = end - start;
	}
	free(code);
	sp_fstarts_release(&f);
}

/* Read, not mapped (elffile.h): the interpreter's file may be a user's or a
 * container's, who could cut it short while it is read. */
static void elf_read(struct elf_info *e, const char *src)
{
	GElf_Sym s;
	GElf_Phdr ph;
	size_t i, nph;
	uint32_t ver;
	int fd;
	Elf *elf = sp_elf_open(src, SP_ELF_READ, ELF_MAX, &fd, NULL);

	if (!elf)
		return;
	if (elf_getphdrnum(elf, &nph) == 0)
		for (i = 0; i < nph && e->nload < 8; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				e->load[e->nload++] = ph;
	if (elf_sym(elf, "_PyRuntime", &s)) {
		e->runtime_sym = s.st_value;
		e->runtime = SP_RT_PYTHON;
		if (elf_sym(elf, "Py_Version", &s) && elf_bytes(elf, s.st_value, &ver, 4)) {
			e->major = ver >> 24;
			e->minor = ver >> 16 & 0xff;
			e->micro = ver >> 8 & 0xff;
		}
		if (!e->major)
			python_version_from_name(e);
		if (elf_sym(elf, "PyCode_Type", &s))
			e->code_type_sym = s.st_value;
		if (elf_sym(elf, "_PyEval_EvalFrameDefault", &s)) {
			e->eval_sym = s.st_value;
			e->eval_size = s.st_size;
			python_eval_cold(elf, e);
		}
		e->ok = e->code_type_sym && e->nload;
	} else if (elf_sym(elf, "ruby_current_vm_ptr", &s)) {
		elf_read_ruby(elf, e, s.st_value);
	} else if (elf_sym(elf, "Py_Initialize", &s)) {
		/* a Python before 3.7 (no _PyRuntime): found, to be refused by
		 * name and version, not passed over in silence */
		e->runtime = SP_RT_PYTHON;
		python_version_from_name(e);
		e->ok = e->nload;
	}
	sp_elf_close(elf, fd);
}

/* The interpreter's file as process pid maps it at [start, end): in a
 * container (another mount namespace), the path inside its root
 * (procroot.h); a file deleted since it was mapped (a libruby or python a
 * package upgrade replaced under a running service: its path names the
 * new one, or none), the mapping itself (/proc/PID/map_files);
 * those keyed by the file's identity. NULL when it cannot be opened. */
static const struct elf_info *elf_get(struct sp_interpreters *ip, const char *path, uint32_t pid,
				      uint64_t start, uint64_t end)
{
	uint64_t h = sp_hash_bytes(path, strlen(path)), *v;
	struct elf_info *e;
	struct stat st;
	char src[96];
	int rfd, fd = -1;

	if (sp_elf_path_unlinked(path)) {
		snprintf(src, sizeof(src), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start,
			 end);
		fd = sp_safe_open(AT_FDCWD, src, NULL, &st, NULL);
		if (fd < 0)
			return NULL;
		h = sp_hash_mix(sp_hash_mix(h, st.st_dev), st.st_ino);
	} else if (sp_proc_other_mnt_ns(pid)) {
		rfd = sp_proc_root_dir(pid);
		fd = rfd < 0 ? -1 : sp_proc_root_open(rfd, path, false);
		if (rfd >= 0)
			close(rfd);
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		h = sp_hash_mix(sp_hash_mix(h, st.st_dev), st.st_ino);
	}
	v = sp_u64map_get(&ip->elfs, h);
	if (v) {
		if (fd >= 0)
			close(fd);
		return (const struct elf_info *)(uintptr_t)*v;
	}
	e = sp_xcalloc(1, sizeof(*e));
	e->path = sp_xstrdup(path);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	elf_read(e, fd >= 0 ? src : path);
	if (fd >= 0)
		close(fd);
	sp_u64map_put(&ip->elfs, h, (uintptr_t)e);
	return e;
}

/* Whether a file's name says it may hold an interpreter. */
static bool candidate(const struct sp_interpreters *ip, const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (ip->mode == SP_INTERP_NONE)
		return false;
	if (ip->mode != SP_INTERP_RUBY &&
	    (!strncmp(b, "python", 6) || !strncmp(b, "libpython", 9)))
		return true;	/* Python 2 too: refused, with a warning */
	return ip->mode != SP_INTERP_PYTHON &&
	       (!strncmp(b, "ruby", 4) || !strncmp(b, "libruby", 7));
}

/* ---- processes ---- */

static struct iproc *proc_find(const struct sp_interpreters *ip, uint32_t pid)
{
	uint64_t *v = sp_u64map_get(&ip->procs, pid);

	return v ? (struct iproc *)(uintptr_t)*v : NULL;
}

static void mes_clear(struct iproc *pr)
{
	size_t i = 0;
	uint64_t k, v;

	while (sp_u64map_next(&pr->mes, &i, &k, &v))
		free((void *)(uintptr_t)v);
	sp_u64map_release(&pr->mes);
}

static void codes_clear(struct iproc *pr)
{
	size_t i = 0;
	uint64_t k, v;

	mes_clear(pr);

	while (sp_u64map_next(&pr->codes, &i, &k, &v)) {
		struct code_ent *c = (void *)(uintptr_t)v;

		free(c->linetable);
		sp_rb_lines_release(&c->rb);
		free(c);
	}
	sp_u64map_release(&pr->codes);
}

void sp_interp_remap(struct sp_interpreters *ip, const struct sp_remap *m)
{
	size_t i = 0, j;
	uint64_t k, v, ck, cv;

	if (!ip)
		return;
	while (sp_u64map_next(&ip->procs, &i, &k, &v)) {
		struct iproc *pr = (void *)(uintptr_t)v;

		for (j = 0; sp_u64map_next(&pr->codes, &j, &ck, &cv);) {
			struct code_ent *c = (void *)(uintptr_t)cv;

			c->func = m->id(m->ctx, SP_REF_STRING, c->func);
			c->file = m->id(m->ctx, SP_REF_STRING, c->file);
			/* Ruby: the name with its method's class put in, kept
			 * for as long as the same method entry comes with it */
			if (c->me_func)
				c->me_func = m->id(m->ctx, SP_REF_STRING, c->me_func);
		}
		/* Ruby: a C method's name, kept with its method entry */
		for (j = 0; sp_u64map_next(&pr->mes, &j, &ck, &cv);) {
			struct me_ent *e = (void *)(uintptr_t)cv;

			if (e->cfunc)
				e->cfunc = m->id(m->ctx, SP_REF_STRING, e->cfunc);
		}
	}
	/* a child's exec to come takes its fork's stack: kept (0 when it
	 * could not be, which is none) */
	for (i = 0; sp_u64map_next(&ip->forks, &i, &k, &v);)
		if (v)
			*sp_u64map_get(&ip->forks, k) = m->id(m->ctx, SP_REF_STACK, v);
	/* a thread's last event stack is of the old numbering: named again
	 * at the next event (kept, it would keep the stack alive) */
	for (i = 0; sp_u64map_next(&ip->evs, &i, &k, &v);)
		((struct evq *)(uintptr_t)v)->last_stack = 0;
	ip->module[0] = m->id(m->ctx, SP_REF_MODULE, ip->module[0]);
	ip->module[1] = m->id(m->ctx, SP_REF_MODULE, ip->module[1]);
	/* Keyed by string ids, and as many as the names ever seen: found (and
	 * their frames defined, with their symbols) again when used. The
	 * frames' addresses go on counting: a new frame is never an old one. */
	sp_u64map_release(&ip->locs);
	sp_u64map_release(&ip->frames);
}

/* "3.11.7", or "3.10" when only the file's name said it (nothing when it
 * said none: "python of a version not known"). */
static void version_text(const struct elf_info *e, char *buf, size_t size)
{
	if (e->micro_unknown && !e->major)
		snprintf(buf, size, "of a version not known");
	else if (e->micro_unknown)
		snprintf(buf, size, "%u.%u", e->major, e->minor);
	else
		snprintf(buf, size, "%u.%u.%u", e->major, e->minor, e->micro);
}

static void runtime_record(struct sp_emit *out, uint32_t pid, uint64_t time,
			   const struct elf_info *e, const char *mode)
{
	struct sp_record r = { .kind = SP_REC_RUNTIME };
	char ver[32];

	version_text(e, ver, sizeof(ver));
	r.runtime.time = time;
	r.runtime.pid = pid;
	r.runtime.runtime = e->runtime;
	r.runtime.version = sp_writer_strz(out->w, ver);
	r.runtime.library = sp_writer_strz(out->w, e->path);
	r.runtime.mode = sp_writer_strz(out->w, mode);
	out->emit(out->ctx, &r);
}

/* Ruby: the main ractor's first thread is the VM's main thread, and it
 * points back at the VM. */
static bool live_check_rb(const struct iproc *pr)
{
	const struct sp_interp_mem m = { read_proc, (void *)pr };
	const struct sp_interp_layout *l = pr->l;
	uint64_t vm = 0, ractor = 0, main = 0, first = 0, back = 0;

	if (m.read(m.ctx, pr->runtime, &vm, 8))
		return true;	/* not mapped yet (or gone) */
	if (!vm)
		return true;	/* not started yet */
	if (m.read(m.ctx, vm + l->bpf.rb_vm_ractor, &ractor, 8) ||
	    m.read(m.ctx, vm + l->rb.vm_main_thread, &main, 8))
		return false;
	if (!ractor || !main)
		return true;
	return !m.read(m.ctx, ractor + l->bpf.rb_ractor_threads, &first, 8) &&
	       first == main + l->bpf.rb_th_node &&
	       !m.read(m.ctx, main + l->rb.th_vm, &back, 8) && back == vm;
}

/* The live interpreter agrees with the layout: its first thread state
 * points back at its interpreter. True too when it is not running yet. */
static bool live_check(const struct iproc *pr)
{
	const struct sp_interp_mem m = { read_proc, (void *)pr };
	uint64_t interp = 0, ts = 0, back = 0;

	if (is_ruby(pr))
		return live_check_rb(pr);
	if (m.read(m.ctx, pr->runtime + pr->l->bpf.rt_interp_head, &interp, 8))
		return true;	/* not mapped yet (or gone): the walk in BPF will fail alone */
	if (!interp)
		return true;
	if (m.read(m.ctx, interp + pr->l->bpf.is_tstate_head, &ts, 8))
		return false;
	if (!ts)
		return true;
	return !m.read(m.ctx, ts + pr->l->ts_interp, &back, 8) && back == interp;
}

/* Whether pr's interpreter is set up: Ruby's VM, Python's first
 * interpreter. Memory not mapped yet (or gone) says no. */
static bool interp_started(const struct iproc *pr)
{
	uint64_t v = 0, at = pr->runtime + (is_ruby(pr) ? 0 : pr->l->bpf.rt_interp_head);

	return !read_proc((void *)pr, at, &v, 8) && v;
}

/* Follow pr (the BPF program too): whether it is (else pr is freed). */
static bool proc_add(struct sp_interpreters *ip, struct iproc *pr)
{
	struct sp_bpf_iproc v = { .runtime = pr->runtime, .layout = pr->row };

	if (sp_interp_bpf_proc(ip->bpf, pr->pid, &v)) {
		sp_warn("pid %u: cannot follow its %s stacks: %s", pr->pid, pr->l->name,
			strerror(errno));
		free(pr);
		return false;
	}
	sp_u64map_put(&ip->procs, pr->pid, (uintptr_t)pr);
	/* A Ruby's walkers load now, on a thread, if they are not in: what
	 * it runs meanwhile is counted (SP_IO_NO_WALKER, ev_no_walker). */
	if (is_ruby(pr) && !ip->first_ruby) {
		ip->first_ruby = pr->pid;
		ip->ruby_asked = true;
		sp_interp_bpf_ruby(ip->bpf, false);
	}
	return true;
}

static void unsupported(struct sp_interpreters *ip, uint32_t pid, const struct elf_info *e,
			const char *why)
{
	char path[256], ver[32];

	if (ip->warned_version & 1u << e->runtime)
		return;
	ip->warned_version |= 1u << e->runtime;
	sp_esc_text(path, sizeof(path), e->path, strlen(e->path), 0);
	version_text(e, ver, sizeof(ver));
	sp_warn("pid %u: %s %s (%s): %s; native stacks only", pid, rt_name(e->runtime), ver,
		path, why);
}

void sp_interp_on_map(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
		      const char *path, uint64_t start, uint64_t end, uint64_t pgoff, uint64_t time)
{
	const struct elf_info *e;
	const struct sp_interp_layout *l;
	struct iproc *pr;
	uint64_t base = 0;
	unsigned int i, row;

	if (!ip->bpf || !candidate(ip, path))
		return;
	e = elf_get(ip, path, pid, start, end);
	if (!e || !e->ok)
		return;
	for (i = 0; i < e->nload; i++)
		if (pgoff >= e->load[i].p_offset &&
		    pgoff < e->load[i].p_offset + e->load[i].p_filesz)
			break;
	if (i == e->nload)
		return;
	base = start - (e->load[i].p_vaddr + (pgoff - e->load[i].p_offset));
	if ((pr = proc_find(ip, pid)) && pr->runtime == base + e->runtime_sym) {
		if (out && !pr->announced)	/* found early, its turn now */
			runtime_record(out, pid, time, pr->e, "stacks");
		pr->announced |= out != NULL;
		return;
	}
	if (pr) {
		if (out)
			return;	/* an older mapping's turn: the process exec'd since */
		sp_interp_on_end(ip, pid, UINT64_MAX);	/* exec'd: that interpreter is gone */
	}
	l = sp_interp_layout_find(e->runtime, e->major, e->minor, &row);
	if (!l) {
		if (out) {
			runtime_record(out, pid, time, e, "unsupported");
			unsupported(ip, pid, e, "no layout for this version");
		}
		return;
	}
	pr = sp_xcalloc(1, sizeof(*pr));
	pr->pid = pid;
	pr->row = row;
	pr->l = l;
	pr->e = e;
	pr->runtime = base + e->runtime_sym;
	pr->code_type = base + e->code_type_sym;
	pr->eval_start = e->eval_sym ? base + e->eval_sym : 0;
	pr->eval_end = pr->eval_start + e->eval_size;
	pr->eval2_start = e->eval2_sym ? base + e->eval2_sym : 0;
	pr->eval2_end = pr->eval2_start + e->eval2_size;
	pr->symbols = e->symbols_sym ? base + e->symbols_sym : 0;
	pr->base = base;
	if (!live_check(pr)) {
		if (out) {
			runtime_record(out, pid, time, e, "unsupported");
			unsupported(ip, pid, e, "its structures do not match the layout");
		}
		free(pr);
		return;
	}
	pr->since = time;
	if (out)
		runtime_record(out, pid, time, e, "stacks");
	pr->announced = out != NULL;
	/* its samples until now had no walk: they had no stack either when
	 * the interpreter is not set up yet (sp_interp_outcome()) */
	pr->started = interp_started(pr);
	if (proc_add(ip, pr))
		pr->followed = sp_now_mono_ns();
}

void sp_interp_on_fork(struct sp_interpreters *ip, uint32_t ppid, uint32_t pid, uint64_t time)
{
	struct iproc *parent = proc_find(ip, ppid), *pr;

	if (!parent || proc_find(ip, pid))
		return;
	pr = sp_xcalloc(1, sizeof(*pr));
	*pr = *parent;
	pr->pid = pid;
	pr->parent = ppid;
	pr->children = 0;
	pr->since = time;
	pr->followed = 0;	/* on_task_fork: from its first instruction */
	pr->announced = true;	/* a fork runs what its parent ran */
	memset(&pr->codes, 0, sizeof(pr->codes));
	memset(&pr->mes, 0, sizeof(pr->mes));
	if (proc_add(ip, pr))
		parent->children++;	/* (proc_add() moves no iproc: parent stays valid) */
}

/* The n oldest stacks of q go. */
static void tidq_drop(struct sp_interpreters *ip, struct tidq *q, unsigned int n)
{
	unsigned int i;

	if (n > q->n)
		n = q->n;
	if (!n)
		return;
	for (i = 0; i < n; i++)
		free(q->p[i].f);
	ip->npending -= n;
	memmove(q->p, q->p + n, (q->n - n) * sizeof(q->p[0]));
	q->n -= n;
}

static void tidq_free(struct sp_interpreters *ip, struct tidq *q)
{
	tidq_drop(ip, q, q->n);
	free(q->p);
	free(q);
}

/* The n oldest stacks of q go. */
static void evq_drop(struct sp_interpreters *ip, struct evq *q, unsigned int n)
{
	unsigned int i;

	if (n > q->n)
		n = q->n;
	if (!n)
		return;	/* (a queue that never held one has no array) */
	q->used = false;
	ip->nev -= n;
	for (i = 0; i < n; i++)
		free(q->p[i].f);
	memmove(q->p, q->p + n, (q->n - n) * sizeof(q->p[0]));
	q->n -= n;
}

static void evq_free(struct sp_interpreters *ip, struct evq *q)
{
	if (q) {
		evq_drop(ip, q, q->n);
		free(q->p);
		free(q->last_f);
		free(q);
	}
}

/* Whether p read what the walk of q's last stack read: the same frames,
 * status and flags (the time, CPU and call number may differ). */
static bool same_as_last(const struct evq *q, const struct pend *p)
{
	return q->last_stack && q->last_h.nframes == p->h.nframes &&
	       q->last_h.status == p->h.status && q->last_h.flags == p->h.flags &&
	       q->last_h.tstate == p->h.tstate &&
	       (!p->h.nframes || !memcmp(q->last_f, p->f, p->h.nframes * sizeof(p->f[0])));
}

static void remember_last(struct evq *q, const struct pend *p, uint64_t stack)
{
	size_t n = p->h.nframes;

	q->last_stack = 0;
	if (n > q->last_cap) {
		free(q->last_f);
		q->last_f = sp_xmalloc(n * sizeof(p->f[0]));
		q->last_cap = n;
	}
	if (n)
		memcpy(q->last_f, p->f, n * sizeof(p->f[0]));
	q->last_h = p->h;
	q->last_stack = stack;
}

/* Up to n keys of queues map (evs if ev, else tids) that hold pid's
 * stacks into keys, from *it on: how many. */
static size_t queue_keys(const struct sp_u64map *map, bool ev, uint32_t pid, size_t *it,
			 uint64_t *keys, size_t n)
{
	uint64_t k, v;
	size_t got = 0;

	while (got < n && sp_u64map_next(map, it, &k, &v))
		if ((ev ? ((const struct evq *)(uintptr_t)v)->pid :
		     ((const struct tidq *)(uintptr_t)v)->pid) == pid)
			keys[got++] = k;
	return got;
}

/* The queues of pid's threads go, with the stacks they hold, those waiting
 * for their samples and those for their calls' events (pid ended, exec'd
 * or is no longer followed): no later record of it can take them, and a
 * reused tid must not. Keys are found a batch at a time, then deleted (a
 * deletion moves other keys: an iteration does not survive it). */
static void queues_drop_pid(struct sp_interpreters *ip, uint32_t pid)
{
	uint64_t keys[64];
	size_t it, n, i;
	int ev;

	for (ev = 0; ev < 2; ev++) {
		struct sp_u64map *map = ev ? &ip->evs : &ip->tids;

		do {
			it = 0;
			n = queue_keys(map, ev, pid, &it, keys, 64);
			for (i = 0; i < n; i++) {
				void *q = (void *)(uintptr_t)*sp_u64map_get(map, keys[i]);

				if (ev)
					evq_free(ip, q);
				else
					tidq_free(ip, q);
				sp_u64map_del(map, keys[i]);
			}
		} while (n == 64);
	}
}

void sp_interp_on_end(struct sp_interpreters *ip, uint32_t pid, uint64_t time)
{
	struct iproc *pr = proc_find(ip, pid), *parent;
	uint64_t k, v;
	size_t i;

	if (!pr || pr->since >= time)
		return;	/* found after this end (records are peeked at early) */
	sp_interp_bpf_proc_del(ip->bpf, pid);
	sp_u64map_del(&ip->procs, pid);
	if (pr->parent && (parent = proc_find(ip, pr->parent)) && parent->children)
		parent->children--;
	/* its children read from it no more (its pid may be reused): looked
	 * for only when it has some, so that an end costs no walk of every
	 * followed process */
	for (i = 0; pr->children && sp_u64map_next(&ip->procs, &i, &k, &v);) {
		struct iproc *c = (void *)(uintptr_t)v;

		if (c->parent == pid) {
			c->parent = 0;
			pr->children--;
		}
	}
	codes_clear(pr);
	free(pr);
	queues_drop_pid(ip, pid);
}

bool sp_interp_is_eval(const struct sp_interpreters *ip, uint32_t pid, uint64_t addr)
{
	const struct iproc *pr = proc_find(ip, pid);

	return pr && ((addr >= pr->eval_start && addr < pr->eval_end) ||
		      (addr >= pr->eval2_start && addr < pr->eval2_end));
}

unsigned int sp_interp_eval_calls(const struct sp_interpreters *ip, uint32_t pid,
				  const uint64_t *pcs, const uint8_t *eval, unsigned int n)
{
	const struct iproc *pr = proc_find(ip, pid);
	unsigned int i, calls = 0;
	uint64_t at;

	for (i = 0; pr && i < n; i++) {
		if (eval[i] != 1)
			continue;
		at = i ? pcs[i] - 1 : pcs[i];
		/* Python's second range is the loop's cold part: the same
		 * call; Ruby's is vm_exec_core, called by rb_vm_exec */
		if (!is_ruby(pr) || !(at >= pr->eval2_start && at < pr->eval2_end))
			calls++;
	}
	return calls;
}

/* ---- stacks from the BPF program ---- */

static struct code_ent *code_get(struct sp_interpreters *ip, struct sp_emit *out,
				 struct iproc *pr, const struct sp_bpf_iframe *fr);
static const struct me_ent *me_get(struct sp_emit *out, struct iproc *pr, uint64_t addr);
static void on_code(struct sp_interpreters *ip, const struct sp_bpf_istack *h,
		    const struct sp_bpf_icode *r, size_t len);

/* Reads what stack p's frames name (code objects, method entries) now,
 * while the process most likely still has them: a stack may wait for its
 * sample or event, and the process may exit or free them meanwhile. */
static void read_now(struct sp_interpreters *ip, uint32_t pid, const struct pend *p)
{
	struct iproc *pr;
	size_t i;

	if (!ip->out || !(pr = proc_find(ip, pid)))
		return;
	for (i = 0; i < p->h.nframes; i++) {
		if (!(p->f[i].flags & SP_BPF_IFR_CFUNC))
			code_get(ip, ip->out, pr, &p->f[i]);
		if (p->f[i].me && is_ruby(pr))
			me_get(ip->out, pr, p->f[i].me);
	}
}

/* The stack read at the entry of a call of thread h->tid, queued for the
 * event the call makes at its exit (a queue is of one process: a tid
 * reused by another empties it). */
static void on_event_stack(struct sp_interpreters *ip, const struct sp_bpf_istack *h,
			   const struct sp_bpf_iframe *f, size_t n)
{
	uint64_t *v = sp_u64map_get(&ip->evs, h->tid);
	struct evq *q = v ? (void *)(uintptr_t)*v : NULL;
	struct pend *p;

	if (!q) {
		q = sp_xcalloc(1, sizeof(*q));
		q->pid = h->pid;
		sp_u64map_put(&ip->evs, h->tid, (uintptr_t)q);
	}
	if (q->pid != h->pid) {
		evq_drop(ip, q, q->n);	/* a tid reused by another process */
		q->pid = h->pid;
		q->last_stack = 0;
		q->dropped_before = 0;
	}
	if (q->n == EVQ_LEN) {
		/* calls that made no event, most of them; an event of one
		 * read later is counted (count_stackless()), when they held
		 * a stack (a thread not in Python yet has none to lose) */
		unsigned int i;

		for (i = 0; i < EVQ_LEN / 2; i++)
			if (q->p[i].h.status != SP_BPF_IST_NO_THREAD && q->p[i].h.nframes) {
				q->dropped_before = q->p[EVQ_LEN / 2].h.time_ns;
				break;
			}
		evq_drop(ip, q, EVQ_LEN / 2);
	}
	if (ip->nev >= PENDING_MAX) {
		ip->dropped++;	/* events not read for long: bounded */
		return;
	}
	ip->nev++;
	sp_grow(&q->p, &q->cap, q->n + 1, sizeof(*q->p));
	p = &q->p[q->n++];
	p->h = *h;
	p->h.nframes = (uint16_t)n;
	p->f = n ? sp_xmalloc(n * sizeof(*f)) : NULL;
	if (n)
		memcpy(p->f, f, n * sizeof(*f));
	read_now(ip, h->pid, p);
}

static void on_stack(void *ctx, const struct sp_bpf_istack *h, const struct sp_bpf_iframe *f,
		     size_t nbytes)
{
	struct sp_interpreters *ip = ctx;
	uint64_t key = h->tid | (h->flags & SP_BPF_IFL_OFFCPU ? OFFCPU_KEY : 0);
	uint64_t *v = sp_u64map_get(&ip->tids, key);
	size_t n = h->nframes;
	struct tidq *q;
	struct pend *p;

	if (h->flags & SP_BPF_IFL_CODE) {
		ip->copies++;
		on_code(ip, h, (const void *)f, nbytes);
		return;
	}
	if (n > SP_BPF_IFRAMES || n * sizeof(*f) > nbytes)
		n = 0;	/* a record we did not write: no frames */
	if (h->flags & SP_BPF_IFL_EVENT) {
		on_event_stack(ip, h, f, n);
		return;
	}
	if (v) {
		q = (void *)(uintptr_t)*v;
	} else {
		q = sp_xcalloc(1, sizeof(*q));
		sp_u64map_put(&ip->tids, key, (uintptr_t)q);
	}
	if (q->pid != h->pid) {
		tidq_drop(ip, q, q->n);	/* a tid reused by another process */
		q->pid = h->pid;
	}
	if (q->n == TIDQ_LEN)
		tidq_drop(ip, q, TIDQ_LEN / 2);	/* no sample took them: they never will */
	if (ip->npending >= PENDING_MAX) {
		ip->dropped++;	/* samples lost, or not handled for long: bounded */
		return;
	}
	ip->npending++;
	sp_grow(&q->p, &q->cap, q->n + 1, sizeof(*q->p));
	p = &q->p[q->n++];
	p->h = *h;
	p->h.nframes = (uint16_t)n;
	p->f = n ? sp_xmalloc(n * sizeof(*f)) : NULL;
	if (n)
		memcpy(p->f, f, n * sizeof(*f));
	read_now(ip, h->pid, p);
}

void sp_interp_drain(struct sp_interpreters *ip, struct sp_emit *out)
{
	ip->out = out;
	if (ip->bpf)
		sp_interp_bpf_drain(ip->bpf);
	ip->out = NULL;
	if (ip->bpf && ip->ruby_asked)	/* a walker load on its thread: done? */
		sp_interp_bpf_ruby(ip->bpf, false);
}

bool sp_interp_ruby_loaded(const struct sp_interpreters *ip)
{
	uint64_t ready = 0;

	if (ip->bpf)
		sp_interp_bpf_ruby_times(ip->bpf, &ready);
	return ready && sp_interp_bpf_ruby(ip->bpf, false) == 0;
}

bool sp_interp_following(const struct sp_interpreters *ip)
{
	return ip->procs.n > 0;
}

void sp_interp_ruby(struct sp_interpreters *ip, bool wait)
{
	if (!ip || !ip->bpf || (wait && !ip->ruby_asked))
		return;
	ip->ruby_asked = true;
	sp_interp_bpf_ruby(ip->bpf, wait);
}

int sp_interp_wake_fd(const struct sp_interpreters *ip)
{
	return ip->bpf ? sp_interp_bpf_wake_fd(ip->bpf) : -1;
}

/* ---- frames ---- */

/* A frame of the interpreter's module named func at file:line. */
static uint64_t frame_of(struct sp_interpreters *ip, struct sp_emit *out,
			 const struct iproc *pr, uint64_t func, uint64_t file, uint64_t line)
{
	struct sp_record r = { .kind = SP_REC_SYMBOL };
	struct sp_frame f = { 0 };
	uint64_t *v, loc, *mod = &ip->module[is_ruby(pr)];

	if (!*mod) {
		struct sp_record m = { .kind = SP_REC_MODULE };

		m.module.pid = pr->pid;
		m.module.path = sp_writer_strz(out->w, is_ruby(pr) ? "[ruby]" : "[python]");
		if (sp_writer_put(out->w, &m))
			return 0;
		*mod = sp_defs_nmodules(sp_writer_defs(out->w));
	}
	func |= (uint64_t)is_ruby(pr) << 31;	/* one location per runtime */
	v = sp_u64map_get(&ip->locs, func << 32 | file);
	loc = v ? *v : (sp_u64map_put(&ip->locs, func << 32 | file, ++ip->nlocs), ip->nlocs);
	v = sp_u64map_get(&ip->frames, loc << 32 | (line & 0xffffffff));
	if (v)
		return *v;
	f.module = *mod;
	f.rel = f.addr = ++ip->nframes;
	f.mode = SP_FRAME_INTERP;
	f.id = sp_writer_frame(out->w, &f);
	if (!f.id)
		return 0;
	r.symbol.frame = f.id;
	r.symbol.func = func & ~(1ull << 31);
	r.symbol.file = file;
	r.symbol.line = line;
	if (sp_writer_put(out->w, &r))
		return 0;
	sp_u64map_put(&ip->frames, loc << 32 | (line & 0xffffffff), f.id);
	return f.id;
}

static uint64_t placeholder(struct sp_interpreters *ip, struct sp_emit *out,
			    const struct iproc *pr, const char *what)
{
	char name[64];

	snprintf(name, sizeof(name), "[%s: %s]", rt_name(pr->l->runtime), what);
	return frame_of(ip, out, pr, sp_writer_strz(out->w, name), 0, 0);
}

/* What pc says of a code object into c (its line table now c's), its
 * strings into out. */
static void py_code_keep(struct sp_emit *out, struct code_ent *c, struct sp_py_code *pc)
{
	free(c->linetable);
	c->line0 = pc->firstline;
	c->func = sp_writer_strz(out->w, pc->qualname);
	c->file = sp_writer_strz(out->w, pc->file);
	c->linetable = pc->linetable;
	c->len = pc->len;
	c->whole = pc->whole;
	c->lpos = (struct sp_py_linepos)SP_PY_LINEPOS_INIT;
	pc->linetable = NULL;
}

/* The code object of fr into c, its strings into out: 0, 1 when it is
 * another object than at the sample (freed, its memory reused: no name
 * rather than a wrong one), or -1 with *why. */
static int code_read_py(struct sp_emit *out, struct iproc *pr, const struct sp_bpf_iframe *fr,
			struct code_ent *c, const char **why)
{
	const struct sp_interp_mem m = { read_obj, pr };
	struct sp_py_code pc;

	if (sp_py_code_read(pr->l, &m, fr->code, pr->code_type, &pc, why))
		return -1;
	if ((uint32_t)pc.firstline != fr->firstline ||
	    ((uint32_t)pc.name_addr ^ (uint32_t)pc.file_addr) != fr->name) {
		sp_py_code_release(&pc);
		return 1;
	}
	py_code_keep(out, c, &pc);
	return 0;
}

static int code_read_rb(struct sp_emit *out, struct iproc *pr, const struct sp_bpf_iframe *fr,
			struct code_ent *c, const char **why)
{
	const struct sp_interp_mem m = { read_obj, pr };
	struct sp_rb_iseq q;

	if (sp_rb_iseq_read(pr->l, &m, fr->code, &q, why))
		return -1;
	if (q.lines.iseq_size != fr->firstline || (uint32_t)q.body != fr->name) {
		sp_rb_lines_release(&q.lines);
		return 1;
	}
	c->line0 = q.lines.firstline;
	c->func = sp_writer_strz(out->w, q.label);
	c->file = sp_writer_strz(out->w, q.file);
	c->rb = q.lines;
	return 0;
}

/* Ruby: the method entry at addr, read once (NULL: none, or unreadable). */
static const struct me_ent *me_get(struct sp_emit *out, struct iproc *pr, uint64_t addr)
{
	const struct sp_interp_mem m = { read_obj, pr };
	uint64_t *v = sp_u64map_get(&pr->mes, addr), end;
	struct me_ent *e;
	const char *why;
	char name[SP_PY_NAME_MAX];

	if (v) {
		e = (void *)(uintptr_t)*v;
		return e->bad ? NULL : e;
	}
	if (!addr)
		return NULL;
	if (pr->mes.n >= MAX_MES)
		mes_clear(pr);
	e = sp_xcalloc(1, sizeof(*e));
	sp_u64map_put(&pr->mes, addr, (uintptr_t)e);
	if (sp_rb_method_read(pr->l, &m, pr->symbols, addr, &e->m, &why)) {
		e->bad = true;
		return NULL;
	}
	sp_rb_frame_name(&e->m, NULL, name, sizeof(name));
	e->cfunc = sp_writer_strz(out->w, name);
	if (e->m.cfunc > pr->base && pr->e &&
	    sp_fstarts_find(&pr->e->fstarts, e->m.cfunc - pr->base, &end)) {
		e->cstart = e->m.cfunc;
		e->cend = pr->base + end;
	}
	return e;
}

/* Ruby: the name of frame fr of code c, its method entry's class put in. */
static uint64_t rb_func(struct sp_emit *out, struct iproc *pr, struct code_ent *c,
			const struct sp_bpf_iframe *fr)
{
	char name[SP_PY_NAME_MAX], label[SP_PY_NAME_MAX];
	const struct me_ent *e;
	const char *p;
	size_t len = 0;

	if (!fr->me)
		return c->func;
	if (c->me == fr->me && c->me_func)
		return c->me_func;
	e = me_get(out, pr, fr->me);
	p = e ? sp_defs_str(sp_writer_defs(out->w), c->func, &len) : NULL;
	c->me = fr->me;
	c->me_func = c->func;
	if (p && len < sizeof(label)) {
		memcpy(label, p, len);
		label[len] = 0;
		sp_rb_frame_name(&e->m, label, name, sizeof(name));
		c->me_func = sp_writer_strz(out->w, name);
	}
	return c->me_func;
}

/* The codes map's key of fr's code: its address and identity (code at an
 * address reused is another entry, and the old one stays for the samples
 * that named it; a clash of two keys costs a read, never a wrong name). */
static uint64_t code_key(const struct sp_bpf_iframe *fr)
{
	return fr->code ^ (uint64_t)(fr->firstline * 0x9e3779b1u ^ fr->name) << 32;
}

/* The entry of fr's code, emptied for it (made if there is none). */
static struct code_ent *code_slot(struct iproc *pr, const struct sp_bpf_iframe *fr)
{
	uint64_t *v = sp_u64map_get(&pr->codes, code_key(fr));
	struct code_ent *c = v ? (void *)(uintptr_t)*v : NULL;

	if (!c) {
		if (pr->codes.n >= MAX_CODES)
			codes_clear(pr);
		c = sp_xcalloc(1, sizeof(*c));
		sp_u64map_put(&pr->codes, code_key(fr), (uintptr_t)c);
	}
	free(c->linetable);
	c->linetable = NULL;
	c->len = 0;
	c->whole = false;
	c->lpos = (struct sp_py_linepos)SP_PY_LINEPOS_INIT;
	c->copy = false;
	sp_rb_lines_release(&c->rb);
	c->firstline = fr->firstline;
	c->name = fr->name;
	c->bad = false;
	return c;
}

/*
 * A code object's copy, made by the walk that met it first (a record
 * ahead of that walk's stack): its frames are named from it, so a module
 * body freed before the stack is drained is named all the same. What the
 * copy lacks (a name cut, the line table past its first bytes) the live
 * object gives when code_get() reads it.
 */
static void on_code(struct sp_interpreters *ip, const struct sp_bpf_istack *h,
		    const struct sp_bpf_icode *r, size_t len)
{
	struct iproc *pr = proc_find(ip, h->pid);
	struct sp_bpf_iframe fr = { 0 };
	struct sp_py_code pc;
	struct code_ent *c;
	const char *why;
	uint64_t *v;

	if (!ip->out || !pr || is_ruby(pr) || len < offsetof(struct sp_bpf_icode, lines))
		return;
	if (h->time_ns < pr->since)
		return;	/* a process before this one (the pid reused): not its code */
	fr.code = r->code;
	fr.firstline = r->firstline;
	fr.name = r->name;
	v = sp_u64map_get(&pr->codes, code_key(&fr));
	c = v ? (void *)(uintptr_t)*v : NULL;
	if (c && !c->bad && c->firstline == fr.firstline && c->name == fr.name)
		return;	/* named already (the map of code met was full) */
	if (sp_py_code_copy(pr->l, r, len, pr->code_type, &pc, &why))
		return;	/* the live object may say more */
	c = code_slot(pr, &fr);
	py_code_keep(ip->out, c, &pc);
	c->copy = pc.cut || !pc.whole;
	pr->checked = true;
}

/* Python: code c named from a copy that lacks something: the live object,
 * read once, completes it if it is still there. */
static void code_complete(struct sp_emit *out, struct iproc *pr, struct code_ent *c,
			  const struct sp_bpf_iframe *fr)
{
	const struct sp_interp_mem m = { read_obj, pr };
	struct sp_py_code pc;
	const char *why;

	c->copy = false;
	if (sp_py_code_read(pr->l, &m, fr->code, pr->code_type, &pc, &why))
		return;
	if ((uint32_t)pc.firstline != fr->firstline ||
	    ((uint32_t)pc.name_addr ^ (uint32_t)pc.file_addr) != fr->name) {
		sp_py_code_release(&pc);
		return;
	}
	if (!pc.whole && pc.len <= c->len) {	/* the copy's table says more */
		free(pc.linetable);
		pc.linetable = c->linetable;
		pc.len = c->len;
		pc.whole = c->whole;
		c->linetable = NULL;
	}
	py_code_keep(out, c, &pc);
}

/* The code object of frame fr, read once (NULL: not one). */
static struct code_ent *code_get(struct sp_interpreters *ip, struct sp_emit *out,
				 struct iproc *pr, const struct sp_bpf_iframe *fr)
{
	uint64_t *v = sp_u64map_get(&pr->codes, code_key(fr));
	struct code_ent *c = v ? (void *)(uintptr_t)*v : NULL;
	const char *why = "unreadable";
	int rc;

	if (c && c->firstline == fr->firstline && c->name == fr->name) {
		if (c->copy && !c->bad)
			code_complete(out, pr, c, fr);
		return c->bad ? NULL : c;
	}
	c = code_slot(pr, fr);
	rc = is_ruby(pr) ? code_read_rb(out, pr, fr, c, &why) : code_read_py(out, pr, fr, c, &why);
	if (rc < 0) {
		c->bad = true;
		/* unreadable memory says nothing of the layout (the process may
		 * be gone); memory that is there but not a code object does */
		if (!pr->checked && strcmp(why, "unreadable") && ++pr->misfits == 16)
			sp_warn("pid %u: %s %u.%u.%u: its code objects do not decode with "
				"the %s layout (%s); its interpreted frames are unknown", pr->pid,
				rt_name(pr->l->runtime), pr->e->major, pr->e->minor,
				pr->e->micro, pr->l->name, why);
		return NULL;
	}
	if (rc > 0) {
		c->bad = true;
		return NULL;
	}
	pr->checked = true;
	return c;
}

/* The line of instruction instr of code c; 0 (unknown) when c's line
 * table is only in part here and stops before it (*no_line set then). */
static int line_of(const struct iproc *pr, struct code_ent *c, int instr, bool *no_line)
{
	int line;

	if (is_ruby(pr))
		return sp_rb_line(&c->rb, instr);
	if (sp_py_line_from(c->linetable, c->len, c->line0, instr, &c->lpos, &line) || c->whole)
		return line;
	*no_line = true;
	return 0;
}

static uint64_t dist(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * The stack of tid's sample at time: the one read nearest to it, at most
 * PAIR_SLACK after (the kernel may stamp the sample before or after the
 * program runs) and PAIR_WINDOW before. The older ones go: no later sample
 * can be theirs.
 */
static bool take(struct sp_interpreters *ip, uint32_t pid, uint64_t key, uint64_t time,
		 struct pend *out)
{
	uint64_t *v = sp_u64map_get(&ip->tids, key);
	struct tidq *q = v ? (void *)(uintptr_t)*v : NULL;
	unsigned int i, k = 0;

	if (!q || q->pid != pid)
		return false;
	for (i = 0; i < q->n && q->p[i].h.time_ns <= time + PAIR_SLACK; i++)
		k = i + 1;
	if (!k)
		return false;
	if (k >= 2 && dist(q->p[k - 2].h.time_ns, time) < dist(q->p[k - 1].h.time_ns, time))
		k--;
	*out = q->p[k - 1];
	q->p[k - 1].f = NULL;	/* now the caller's */
	tidq_drop(ip, q, k);
	return out->h.time_ns + PAIR_WINDOW >= time;
}

/* The frames of stack p into f, innermost first, with a placeholder at
 * the root of a truncated or unreadable one; whether every frame was read
 * (*no_line set when a frame's line is unknown). */
static bool frames_of(struct sp_interpreters *ip, struct sp_emit *out, struct iproc *pr,
		      const struct pend *p, struct sp_interp_frames *f, bool *no_line)
{
	bool complete = p->h.status == SP_BPF_IST_OK && !(p->h.flags & SP_BPF_IFL_TRUNCATED);
	unsigned int i;

	f->n = 0;
	for (i = 0; i < p->h.nframes && i < SP_BPF_IFRAMES; i++) {
		struct code_ent *c = NULL;
		const struct me_ent *e = NULL;
		uint64_t id;

		f->cstart[f->n] = f->cend[f->n] = 0;
		f->cown[f->n] = 0;
		if (is_ruby(pr) && (p->f[i].flags & SP_BPF_IFR_CFUNC))
			e = me_get(out, pr, p->f[i].me);
		else
			c = code_get(ip, out, pr, &p->f[i]);
		/* a C method called from another one's C code goes over its C
		 * function's frame (sp_interp_splice()); one called from Ruby
		 * right over its caller */
		if (e && e->cend && !(p->f[i].flags & SP_BPF_IFR_ENTRY)) {
			f->cstart[f->n] = e->cstart;
			f->cend[f->n] = e->cend;
			f->cown[f->n] = i + 1 < p->h.nframes &&
					(p->f[i + 1].flags & SP_BPF_IFR_CFUNC);
		}
		if (c)
			id = frame_of(ip, out, pr, is_ruby(pr) ? rb_func(out, pr, c, &p->f[i]) :
				      c->func, c->file,
				      (uint64_t)line_of(pr, c, p->f[i].instr, no_line));
		else if (e)
			id = frame_of(ip, out, pr, e->cfunc, 0, 0);
		else
			id = placeholder(ip, out, pr, "unreadable frame");
		complete &= c != NULL || e != NULL;
		if (!id)
			continue;
		f->ids[f->n] = id;
		f->entry[f->n++] = !!(p->f[i].flags & SP_BPF_IFR_ENTRY);
	}
	if (p->h.status != SP_BPF_IST_OK || (p->h.flags & SP_BPF_IFL_TRUNCATED)) {
		uint64_t id = placeholder(ip, out, pr, p->h.status == SP_BPF_IST_OK ?
					  "truncated" : p->h.status == SP_BPF_IST_NO_WALKER ?
					  "walker not loaded yet" : "unreadable");

		if (id) {
			f->ids[f->n] = id;
			f->cstart[f->n] = f->cend[f->n] = 0;
			f->cown[f->n] = 0;
			f->entry[f->n++] = 1;
		}
	}
	return complete;
}

bool sp_interp_unpushed(const struct sp_interp_frames *f, unsigned int calls)
{
	unsigned int i, entries = 0;

	for (i = 0; i < f->n; i++)
		entries += !!f->entry[i];
	return f->n && entries + 1 == calls;
}

/* id, innermost, as the only frame of the innermost eval loop call. */
static void frames_push_inner(struct sp_interp_frames *f, uint64_t id)
{
	if (f->n > SP_BPF_IFRAMES)
		f->n = SP_BPF_IFRAMES;	/* the root's placeholder goes */
	memmove(f->ids + 1, f->ids, f->n * sizeof(*f->ids));
	memmove(f->entry + 1, f->entry, f->n * sizeof(*f->entry));
	memmove(f->cstart + 1, f->cstart, f->n * sizeof(*f->cstart));
	memmove(f->cend + 1, f->cend, f->n * sizeof(*f->cend));
	memmove(f->cown + 1, f->cown, f->n * sizeof(*f->cown));
	f->ids[0] = id;
	f->entry[0] = 1;
	f->cstart[0] = f->cend[0] = 0;
	f->cown[0] = 0;
	f->n++;
}

/* The frames of stack p, taken for a sample of pr at time, into f (its
 * count as a sample, by outcome): 1, or 0 with none. calls: as
 * sp_interp_sample()'s. */
static int sample_frames(struct sp_interpreters *ip, struct sp_emit *out, struct iproc *pr,
			 const struct pend *p, bool taken, uint64_t time, int calls,
			 struct sp_interp_frames *f)
{
	struct sp_interp_seen seen = {
		.taken = taken, .status = p->h.status,
		.truncated = !!(p->h.flags & SP_BPF_IFL_TRUNCATED),
		.time = time, .followed = pr->followed, .started = pr->started,
		.no_eval = calls == 0,
	};
	enum sp_interp_outcome o;
	uint64_t id;

	f->n = 0;
	ip->samples++;
	seen.all_named = taken && p->h.status != SP_BPF_IST_NO_THREAD &&
			 frames_of(ip, out, pr, p, f, &seen.no_line);
	/* a whole walk only: a cut one's entry frames are not all there */
	if (calls > 0 && taken && p->h.status == SP_BPF_IST_OK && !seen.truncated &&
	    sp_interp_unpushed(f, calls) &&
	    (id = placeholder(ip, out, pr, "frame not pushed"))) {
		frames_push_inner(f, id);
		seen.unpushed = true;
	}
	o = sp_interp_outcome(&seen);
	ip->outcomes[o]++;
	if (sp_interp_outcome_incomplete(o)) {
		ip->unread++;
		ip->unread_pid = pr->pid;
	}
	return f->n ? 1 : 0;
}

int sp_interp_sample(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid, uint32_t tid,
		     uint64_t time, int calls, struct sp_interp_frames *f)
{
	struct iproc *pr = proc_find(ip, pid);
	struct pend p = { 0 };
	bool taken;
	int rc;

	f->n = 0;
	if (!pr || time < ip->attached)
		return 0;
	taken = take(ip, pid, tid, time, &p);
	rc = sample_frames(ip, out, pr, &p, taken, time, calls, f);
	free(p.f);
	return rc;
}

/* ---- off-CPU samples ---- */

struct sp_interp_stack {
	uint64_t time;		/* the switch-out's */
	bool taken;
	struct pend p;
};

int sp_interp_offcpu_attach(struct sp_interpreters *ip, const int *fds, size_t nfds)
{
	if (!ip->bpf || sp_interp_bpf_attach(ip->bpf, fds, nfds, true))
		return -1;
	ip->offcpu_attached = sp_now_mono_ns();
	return 0;
}

int sp_interp_offcpu_cgroups(struct sp_interpreters *ip, struct sp_cgfilter_maps *m)
{
	if (!ip->bpf || !ip->offcpu_attached)
		return -1;
	return sp_interp_bpf_cgroups(ip->bpf, m);
}

struct sp_interp_stack *sp_interp_offcpu_take(struct sp_interpreters *ip, struct sp_emit *out,
					      uint32_t pid, uint32_t tid, uint64_t time)
{
	struct sp_interp_stack *st;

	if (!proc_find(ip, pid) || time < ip->offcpu_attached)
		return NULL;
	sp_interp_drain(ip, out);	/* read in the switch, as its sample */
	st = sp_xcalloc(1, sizeof(*st));
	st->time = time;
	st->taken = take(ip, pid, tid | OFFCPU_KEY, time, &st->p);
	return st;
}

int sp_interp_offcpu_frames(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			    const struct sp_interp_stack *st, struct sp_interp_frames *f)
{
	struct iproc *pr = proc_find(ip, pid);

	f->n = 0;
	if (!pr || pr->since > st->time)
		return 0;	/* it ended (or exec'd) meanwhile */
	return sample_frames(ip, out, pr, &st->p, st->taken, st->time, -1, f);
}

void sp_interp_stack_free(struct sp_interp_stack *st)
{
	if (st) {
		free(st->p.f);
		free(st);
	}
}

/*
 * Mixed mode: each native frame of the interpreter's eval loop (eval[i])
 * gives way to the interpreted frames it runs, from the innermost up to
 * the first frame of that eval loop call; what is left (the native stack
 * was cut short, as without frame pointers) goes on the root side. The
 * native frames that are no return address (in no executable mapping:
 * what a frame pointer chain reads in a program built without them) are
 * left out. ids are leaf first, n at most max.
 */
/* Whether the native frame at pc (the leaf's when leaf, else a return
 * address) is in the C function of f's frame j. */
static bool in_cfunc(const struct sp_interp_frames *f, unsigned int j, uint64_t pc, bool leaf)
{
	uint64_t at = leaf ? pc : pc - 1;

	return f->cend[j] && at >= f->cstart[j] && at < f->cend[j];
}

#define CFUNC_SKIP	8	/* C methods called from C looked past for one whose code is here */

/* The C method whose C function pc is in, plus 1 (0: none): frame j, or
 * one of the few right after it while they are C methods called from C,
 * up to the first called from Ruby. */
static unsigned int cfunc_at(const struct sp_interp_frames *f, unsigned int j, uint64_t pc,
			     bool leaf)
{
	unsigned int c;

	for (c = j; c < f->n && c < j + CFUNC_SKIP && f->cend[c]; c++) {
		if (in_cfunc(f, c, pc, leaf))
			return c + 1;
		if (!f->cown[c])
			break;
	}
	return 0;
}

void sp_interp_splice(const struct sp_interp_frames *f, uint64_t *ids, const uint64_t *pcs,
		      const uint8_t *eval, unsigned int *n, unsigned int max)
{
	uint64_t out[SP_INTERP_SPLICE_MAX];
	unsigned int i, k = 0, j = 0, c;

	if (max > SP_INTERP_SPLICE_MAX)
		max = SP_INTERP_SPLICE_MAX;
	for (i = 0; i < *n && k < max; i++) {
		if (eval[i] == 2 && i)
			continue;
		if (eval[i] != 1 || j == f->n) {
			c = pcs && j < f->n ? cfunc_at(f, j, pcs[i], !i) : 0;
			/* C methods called from C whose C code is not in the
			 * stack (a sample between the push of a method's frame
			 * and the call of its function): over their caller's
			 * function */
			while (j + 1 < c && k < max)
				out[k++] = f->ids[j++];
			if (k < max)
				out[k++] = ids[i];
			/* a C method called from C over its own C function;
			 * one called from Ruby stays with its caller */
			if (c && f->cown[j] && k < max)
				out[k++] = f->ids[j++];
			continue;
		}
		while (j < f->n && k < max) {
			out[k++] = f->ids[j];
			if (f->entry[j++])
				break;
		}
	}
	while (j < f->n && k < max)
		out[k++] = f->ids[j++];
	memcpy(ids, out, k * sizeof(*ids));
	*n = k;
}

/* The calls that make a fork event (in the parent) and an exec event. */
static const int fork_calls[] = {
	__NR_clone, __NR_clone3,
#ifdef __NR_fork
	__NR_fork,
#endif
#ifdef __NR_vfork
	__NR_vfork,
#endif
};
static const int exec_calls[] = { __NR_execve, __NR_execveat };
/* The calls that end a thread or its process (a proc_exit event). */
static const int exit_calls[] = { __NR_exit, __NR_exit_group };

#define NCALLS(a)	(sizeof(a) / sizeof((a)[0]))

static void calls_set(uint64_t *bits, size_t nbits, const int *nr, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (nr[i] >= 0 && (size_t)nr[i] < nbits)
			bits[nr[i] / 64] |= 1ull << (nr[i] % 64);
}

void sp_interp_proc_calls(uint64_t *bits, size_t nbits)
{
	calls_set(bits, nbits, fork_calls, NCALLS(fork_calls));
	calls_set(bits, nbits, exec_calls, NCALLS(exec_calls));
	calls_set(bits, nbits, exit_calls, NCALLS(exit_calls));
}

const char *sp_interp_proc_call_name(uint32_t nr)
{
	switch (nr) {
	case __NR_clone: return "clone";
	case __NR_clone3: return "clone3";
#ifdef __NR_fork
	case __NR_fork: return "fork";
#endif
#ifdef __NR_vfork
	case __NR_vfork: return "vfork";
#endif
	case __NR_execve: return "execve";
	case __NR_execveat: return "execveat";
	case __NR_exit: return "exit";
	case __NR_exit_group: return "exit_group";
	}
	return NULL;
}

static bool call_in(uint32_t nr, const int *calls, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((uint32_t)calls[i] == nr)
			return true;
	return false;
}

/*
 * The interpreted stack of tid of pr at the entry of its newest call
 * before time, for the event that call made, when the call is one of
 * calls[n] (dns: any call read within DNS_WINDOW): its stack id in out,
 * root first; 0 when there is none.
 */
static uint64_t entry_stack(struct sp_interpreters *ip, struct sp_emit *out, struct iproc *pr,
			    uint32_t tid, uint64_t time, const int *calls, size_t n, bool dns,
			    bool *dropped)
{
	struct sp_interp_frames f;
	const struct pend *p;
	uint64_t *v, ids[SP_BPF_IFRAMES + 1], stack;
	unsigned int i, k = 0;
	bool no_line = false;
	struct evq *q;

	sp_interp_drain(ip, out);	/* the call's entry came before its event */
	v = sp_u64map_get(&ip->evs, tid);
	q = v ? (struct evq *)(uintptr_t)*v : NULL;
	/* the newest entry before the event: the call that made it, as a
	 * thread is in one call at a time */
	while (q && k < q->n && q->p[k].h.time_ns <= time)
		k++;
	if (!k || q->pid != pr->pid) {
		*dropped = q && q->pid == pr->pid && time < q->dropped_before;
		return 0;
	}
	evq_drop(ip, q, k - 1);	/* older calls' (a DNS send may still want this one) */
	p = &q->p[0];
	/* a call makes one event: a stack an event took is another call's
	 * when this call's own was not read */
	if (p->h.time_ns < pr->since || p->h.status == SP_BPF_IST_NO_THREAD ||
	    (dns ? time - p->h.time_ns > DNS_WINDOW :
	     !call_in(p->h.cpu, calls, n) || q->used))
		return 0;
	if (p->h.status == SP_BPF_IST_NO_WALKER && !(dns && q->used))
		ip->ev_no_walker++;
	q->used |= !dns;
	if (same_as_last(q, p))
		return q->last_stack;
	frames_of(ip, out, pr, p, &f, &no_line);
	if (!f.n)
		return 0;
	for (i = 0; i < f.n; i++)	/* the trie wants the root first */
		ids[i] = f.ids[f.n - 1 - i];
	stack = sp_writer_stack_path(out->w, ids, f.n);
	if (stack && !no_line)	/* (a line not known yet may be later) */
		remember_last(q, p, stack);
	return stack;
}

/*
 * An event of pr at time without its interpreted stack. One whose walk
 * was dropped unread (dropped: its thread's queue was full before the
 * event was read) had a stack the recording does not have: counted apart,
 * in lost records. (One made before the process was followed cannot be
 * told from one of an interpreter still setting up, which had none: a
 * launched Python's setlocale() opens; not counted.)
 */
static void count_stackless(struct sp_interpreters *ip, const struct iproc *pr, uint64_t time,
			    bool dropped)
{
	ip->ev_none++;
	if (!dropped)
		return;
	lost_run_add(&ip->ev_lost, pr->pid, time);
	lost_run_add(&ip->ev_lost_pending, pr->pid, time);
}

/*
 * The events counted by count_stackless() since the last lost record, in
 * one (what = interp_events, their window, their pid or 0): written when a
 * stack comes again or the run is LOST_BATCH_NS long, so that it lies
 * near the events it counts (a reader orders lost records by their start).
 */
#define LOST_BATCH_NS	(100 * 1000 * 1000ull)
static void flush_lost_events(struct sp_interpreters *ip, struct sp_emit *out)
{
	struct lost_run *run = &ip->ev_lost_pending;
	struct sp_record r = { .kind = SP_REC_LOST };

	if (!run->count)
		return;
	r.lost.time = run->last;
	r.lost.start = run->first;
	r.lost.what = SP_LOST_INTERP_EVENTS;
	r.lost.count = run->count;
	r.lost.pid = run->pids ? 0 : run->pid;
	out->emit(out->ctx, &r);
	memset(run, 0, sizeof(*run));
}

/* Before an event at time is counted: the lost record of those before it,
 * when a stack came (stack) or their run is long. */
static void lost_events_due(struct sp_interpreters *ip, struct sp_emit *out, uint64_t time,
			    uint64_t stack)
{
	if (ip->ev_lost_pending.count &&
	    (stack || time >= ip->ev_lost_pending.first + LOST_BATCH_NS))
		flush_lost_events(ip, out);
}

/* entry_stack() of a followed pid, counted */
static uint64_t counted_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			      uint32_t tid, uint64_t time, const int *calls, size_t n, bool dns)
{
	struct iproc *pr = proc_find(ip, pid);
	bool dropped = false;
	uint64_t stack;

	if (!pr)
		return 0;
	stack = entry_stack(ip, out, pr, tid, time, calls, n, dns, &dropped);
	lost_events_due(ip, out, time, stack);
	if (stack)
		ip->ev_stacks++;
	else
		count_stackless(ip, pr, time, dropped);
	return stack;
}

uint64_t sp_interp_event_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			       uint32_t tid, uint64_t time, uint32_t nr, bool dns)
{
	const int call = (int)nr;

	return counted_stack(ip, out, pid, tid, time, &call, 1, dns);
}

uint64_t sp_interp_fork_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			      uint32_t tid, uint64_t time, uint32_t child, bool thread)
{
	struct iproc *pr = proc_find(ip, pid);
	bool dropped = false;
	uint64_t stack;

	if (!pr)
		return 0;
	/* the child's own events come after this one, in the same ring: it is
	 * followed from here if perf's record of the fork is not read yet */
	if (!thread && child != pid)
		sp_interp_on_fork(ip, pid, child, time);
	stack = entry_stack(ip, out, pr, tid, time, fork_calls, NCALLS(fork_calls), false,
			    &dropped);
	lost_events_due(ip, out, time, stack);
	if (!stack) {
		count_stackless(ip, pr, time, dropped);
		return 0;
	}
	ip->ev_stacks++;
	if (thread || child == pid)
		return stack;
	if (ip->forks.n < FORKS_MAX || sp_u64map_get(&ip->forks, child))
		sp_u64map_put(&ip->forks, child, stack);
	else
		ip->forks_full++;	/* children that neither exec'd nor exited */
	return stack;
}

uint64_t sp_interp_exec_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			      uint32_t tid, uint64_t time)
{
	struct iproc *pr = proc_find(ip, pid);
	uint64_t *v = sp_u64map_get(&ip->forks, pid), carried = v ? *v : 0, stack = 0;
	bool dropped = false;

	if (v)
		sp_u64map_del(&ip->forks, pid);	/* a later exec is the new image's */
	if (pr)
		stack = entry_stack(ip, out, pr, tid, time, exec_calls, NCALLS(exec_calls),
				    false, &dropped);
	if (!stack)
		stack = carried;	/* no code of its own ran since: its fork's */
	lost_events_due(ip, out, time, stack);
	if (stack)
		ip->ev_stacks++;
	else if (pr)
		count_stackless(ip, pr, time, dropped);
	return stack;
}

uint64_t sp_interp_exit_stack(struct sp_interpreters *ip, struct sp_emit *out, uint32_t pid,
			      uint32_t tid, uint64_t time)
{
	return counted_stack(ip, out, pid, tid, time, exit_calls, NCALLS(exit_calls), false);
}

void sp_interp_proc_exit(struct sp_interpreters *ip, uint32_t pid)
{
	sp_u64map_del(&ip->forks, pid);
}

/* ---- the source's life ---- */

static struct sp_interpreters *current_ip;

struct sp_interpreters *sp_interp_current(void)
{
	return current_ip;
}

int sp_interp_events_on(struct sp_interpreters *ip, bool raw_entry)
{
	return ip->bpf ? sp_interp_bpf_events(ip->bpf, raw_entry) : -1;
}

void sp_interp_events_early(struct sp_interpreters *ip)
{
	if (ip && ip->bpf)
		sp_interp_bpf_events_early(ip->bpf);
}

struct sp_interpreters *sp_interp_new(enum sp_interp_mode mode, unsigned int uses)
{
	struct sp_interpreters *ip;
	const struct sp_interp_layout *l;
	unsigned int row;

	if (mode == SP_INTERP_NONE)
		return NULL;
	ip = sp_xcalloc(1, sizeof(*ip));
	ip->mode = mode;
	if (mode == SP_INTERP_PYTHON)
		uses |= SP_INTERP_NO_RUBY;	/* no Ruby is registered (candidate()) */
	ip->bpf = sp_interp_bpf_open(on_stack, ip, uses);
	if (!ip->bpf) {
		free(ip);
		return NULL;
	}
	for (row = 0; (l = sp_interp_layout_row(row)); row++)
		if (sp_interp_layout_fits(l))
			sp_interp_bpf_layout(ip->bpf, row, &l->bpf);
	current_ip = ip;
	return ip;
}

int sp_interp_attach(struct sp_interpreters *ip, const int *fds, size_t nfds)
{
	if (sp_interp_bpf_attach(ip->bpf, fds, nfds, false)) {
		sp_interp_bpf_close(ip->bpf);
		ip->bpf = NULL;
		return -1;
	}
	ip->attached = sp_now_mono_ns();
	return 0;
}

const char *sp_interp_describe(const struct sp_interpreters *ip)
{
	switch (ip->mode) {
	case SP_INTERP_NONE:
		return "";
	case SP_INTERP_PYTHON:
		return "interp=python3.11";
	case SP_INTERP_RUBY:
		return "interp=ruby3.1";
	default:
		return "interp=python3.11,ruby3.1";
	}
}

/* A line of sp-record's end summary (not a warning: it is no fault of
 * the run, and the spool counts it too). */
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sp_vmessage(fmt, ap);
	va_end(ap);
}

/* The incomplete samples by outcome, "2 code-freed, 1 unpaired", into buf. */
static const char *outcomes_text(const struct sp_interpreters *ip, char *buf, size_t size)
{
	size_t len = 0;
	unsigned int o;

	buf[0] = 0;
	for (o = 0; o < SP_IO_N; o++)
		if (sp_interp_outcome_incomplete(o) && ip->outcomes[o] && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%" PRIu64 " %s",
						len ? ", " : "", ip->outcomes[o],
						sp_interp_outcome_name(o));
	return buf;
}

void sp_interp_finish(struct sp_interpreters *ip, struct sp_emit *out, uint64_t time)
{
	struct sp_record r = { .kind = SP_REC_LOST }, c = { .kind = SP_REC_LOST };
	uint64_t lost, refused;
	uint32_t refused_pid;
	char why[160];

	if (!ip->bpf)
		return;
	lost = sp_interp_bpf_lost(ip->bpf);
	if (lost)
		sp_warn("%" PRIu64 " interpreted stacks lost (their ring buffer was full)", lost);
	refused = sp_interp_bpf_copies_refused(ip->bpf, &refused_pid);
	if (refused) {
		/* a process that makes code without end: its frames are read
		 * from it, and named "code freed" when that code is gone */
		sp_info("interpreted frames: %" PRIu64 " copies of Python code objects refused "
			"(%" PRIu64 " taken; at most %u a user, then %u a second), e.g. to pid %u",
			refused, ip->copies, SP_BPF_ICOPY_BURST, SP_BPF_ICOPY_RATE, refused_pid);
		c.lost.time = time;
		c.lost.what = SP_LOST_INTERP_COPIES;
		c.lost.count = refused;
		out->emit(out->ctx, &c);
	}
	if (ip->dropped)
		sp_warn("%" PRIu64 " interpreted stacks dropped: %d already waited for their "
			"samples", ip->dropped, PENDING_MAX);
	if (ip->forks_full)
		sp_warn("%" PRIu64 " forks' interpreted stacks not kept for their children's "
			"exec: %d children had neither exec'd nor exited", ip->forks_full,
			FORKS_MAX);
	if (ip->outcomes[SP_IO_NO_WALKER] || ip->ev_no_walker) {
		uint64_t asked, ready;

		asked = sp_interp_bpf_ruby_times(ip->bpf, &ready);
		char when[64];

		if (ready >= asked && ready)
			snprintf(when, sizeof(when), "were in %.0f ms after they were asked for",
				 (double)(ready - asked) / 1e6);
		else
			snprintf(when, sizeof(when), "were still loading when the recording ended");
		say("Ruby's stack walkers %s: %" PRIu64 " samples and %" PRIu64 " kernel "
		    "events of Ruby (the first Ruby: pid %u) before that have native stacks "
		    "only, their interpreted ones said missing (\"walker not loaded yet\")",
		    when, ip->outcomes[SP_IO_NO_WALKER], ip->ev_no_walker, ip->first_ruby);
	}
	flush_lost_events(ip, out);
	if (ip->ev_lost.count) {
		const struct lost_run *run = &ip->ev_lost;

		say("interpreted stacks: %" PRIu64 " kernel events of pid %u%s (over %.1f ms) "
		    "are without the interpreted stack they had: dropped unread, the thread's "
		    "queue of %u was full before their events were read; they are under no "
		    "method", run->count, run->pid, run->pids ? " and others" : "",
		    (double)(run->last - run->first) / 1e6, EVQ_LEN);
	}
	if (!ip->samples)
		return;
	if (ip->unread)	/* a summary, as the native stacks' quality is told */
		say("interpreted stacks: %.1f%% complete (%" PRIu64 " of %" PRIu64 " samples of "
		    "interpreter threads); the others (%s) end in a frame that says why "
		    "(truncated, unreadable, or code freed before it was read) or have none, "
		    "e.g. pid %u",
		    100.0 * (double)(ip->samples - ip->unread) / (double)ip->samples,
		    ip->samples - ip->unread, ip->samples,
		    outcomes_text(ip, why, sizeof(why)), ip->unread_pid);
	if (ip->outcomes[SP_IO_NO_LINE])
		say("interpreted frames: %" PRIu64 " samples have a frame whose line is unknown: "
		    "its code was freed before it was read, and the copy the BPF program made "
		    "holds its line table's first %d bytes only", ip->outcomes[SP_IO_NO_LINE],
		    SP_BPF_ILINES);
	r.lost.time = time;
	r.lost.what = SP_LOST_INTERP;
	r.lost.count = ip->unread;
	if (ip->unread)
		out->emit(out->ctx, &r);
	if (getenv("SP_INTERP_STATS")) {
		unsigned int o;

		/* "samples N complete N" first: scripts/bench/interp reads it */
		fprintf(stderr, "interp: samples %" PRIu64, ip->samples);
		for (o = 0; o < SP_IO_N; o++)
			fprintf(stderr, " %s %" PRIu64, sp_interp_outcome_name(o), ip->outcomes[o]);
		fprintf(stderr, " unread %" PRIu64 " events %" PRIu64 " events-without %" PRIu64
			" events-no-walker %" PRIu64 " copies-refused %" PRIu64 "\n", ip->unread,
			ip->ev_stacks, ip->ev_none, ip->ev_no_walker, refused);
	}
}

void sp_interp_free(struct sp_interpreters *ip)
{
	size_t i = 0;
	uint64_t k, v;

	if (!ip)
		return;
	if (current_ip == ip)
		current_ip = NULL;
	while (sp_u64map_next(&ip->evs, &i, &k, &v))
		evq_free(ip, (void *)(uintptr_t)v);
	sp_u64map_release(&ip->evs);
	sp_u64map_release(&ip->forks);
	i = 0;
	while (sp_u64map_next(&ip->procs, &i, &k, &v)) {
		struct iproc *pr = (void *)(uintptr_t)v;

		codes_clear(pr);
		free(pr);
	}
	i = 0;
	while (sp_u64map_next(&ip->tids, &i, &k, &v)) {
		tidq_free(ip, (void *)(uintptr_t)v);
	}
	i = 0;
	while (sp_u64map_next(&ip->elfs, &i, &k, &v)) {
		struct elf_info *e = (void *)(uintptr_t)v;

		free(e->path);
		sp_fstarts_release(&e->fstarts);
		free(e);
	}
	sp_u64map_release(&ip->procs);
	sp_u64map_release(&ip->tids);
	sp_u64map_release(&ip->elfs);
	sp_u64map_release(&ip->locs);
	sp_u64map_release(&ip->frames);
	sp_interp_bpf_close(ip->bpf);
	free(ip);
}
