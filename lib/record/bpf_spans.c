// SPDX-License-Identifier: MIT
/*
 * The "spans" record source: loads bpf/spans.bpf.c, attaches USDT probes
 * and uprobes per process of the recorded tree, and turns the ring buffer's
 * events into span, runtime, audit, probe and lost records.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#if defined(__x86_64__)
#include <asm/ptrace.h>		/* struct pt_regs: USDT operands */
#endif

#include "bpf_spans.h"
#include "safefile.h"
#include "span_rings.h"
#include "hold_guard.h"
#include "launch.h"
#include "events.h"
#include "hashmap.h"
#include "sp.h"
#include "spans.h"
#include "spans.skel.h"

/* union bpf_attr's link_create for a uprobe_multi link (Linux 6.6), which
 * the system headers here predate. */
#define SP_BPF_TRACE_UPROBE_MULTI	48
struct sp_uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, uflags, pid;
};

struct sp_spans_opts sp_spans_opts = { .modes = SP_SPANS_AUTO };

/* --spans=auto, a command that is no runtime: load BPF only if it still
 * runs this long after the start. */
#define SP_SPANS_DEFER_NS	50000000ull

/* ---- options ---- */

enum { OPT_SPANS = 0x2100, OPT_SPAN_FUNC };

static const struct argp_option spans_options[] = {
	{ "spans", OPT_SPANS, "LIST", 0,
	  "Record method spans: auto (default: every runtime found), ruby, ruby-c, python, "
	  "python-audit, usdt, none; comma-separated", 0 },
	{ "span-func", OPT_SPAN_FUNC, "BINARY:FUNCTION", 0,
	  "Record a span for each call of FUNCTION (a glob) in BINARY; repeatable", 0 },
	{ 0 }
};

static const struct {
	const char *word;
	unsigned int bits;
} span_words[] = {
	{ "auto", SP_SPANS_AUTO },
	{ "none", 0 },
	{ "ruby", SP_SPANS_RUBY },
	{ "ruby-c", SP_SPANS_RUBY_C },
	{ "python", SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT },
	{ "python-audit", SP_SPANS_PY_AUDIT },
	{ "usdt", SP_SPANS_USDT },
};

int sp_spans_parse_list(const char *list, unsigned int *modes, const char **bad, size_t *badlen)
{
	const char *p = list, *end;
	unsigned int m = 0, i;
	size_t n;

	for (;;) {
		end = strchr(p, ',');
		n = end ? (size_t)(end - p) : strlen(p);
		for (i = 0; i < sizeof(span_words) / sizeof(span_words[0]); i++)
			if (strlen(span_words[i].word) == n && !strncmp(span_words[i].word, p, n))
				break;
		if (i == sizeof(span_words) / sizeof(span_words[0])) {
			*bad = p;
			*badlen = n;
			return -1;
		}
		m |= span_words[i].bits;
		if (!end)
			break;
		p = end + 1;
	}
	*modes = m;
	return 0;
}

int sp_spans_split_func(const char *spec, char *bin, size_t bsize, char *func, size_t fsize)
{
	const char *colon = strrchr(spec, ':');
	size_t n;

	if (!colon || colon == spec || !colon[1])
		return -1;
	n = colon - spec;
	if (n >= bsize || strlen(colon + 1) >= fsize)
		return -1;
	memcpy(bin, spec, n);
	bin[n] = 0;
	strcpy(func, colon + 1);
	return 0;
}

static void preload_start(const struct sp_spans_opts *o, bool now);
static bool may_bpf(void);

static error_t parse_spans(int key, char *arg, struct argp_state *state)
{
	struct sp_spans_opts *o = state->input ? state->input : &sp_spans_opts;
	char bin[PATH_MAX], func[512];
	const char *bad;
	size_t badlen;

	switch (key) {
	case OPT_SPANS:
		if (sp_spans_parse_list(arg, &o->modes, &bad, &badlen))
			argp_error(state, "invalid --spans word '%.*s': use auto, ruby, ruby-c, python, "
				   "python-audit, usdt or none", (int)badlen, bad);
		/* "auto" is the default spelled out: nothing named */
		o->explicit_modes = strcmp(arg, "auto") != 0;
		o->given = true;
		break;
	case OPT_SPAN_FUNC:
		if (sp_spans_split_func(arg, bin, sizeof(bin), func, sizeof(func)))
			argp_error(state, "invalid --span-func '%s': use BINARY:FUNCTION", arg);
		if (o->nfuncs == SP_SPANS_MAX_FUNCS)
			argp_error(state, "too many --span-func options (at most %d)",
				   SP_SPANS_MAX_FUNCS);
		o->funcs[o->nfuncs++] = arg;
		break;
	case ARGP_KEY_SUCCESS:
		/* the guardian's pipe among the first descriptors */
		if ((o->modes || o->nfuncs) && may_bpf())
			sp_hold_guard_prepare();
		/* Load the BPF object now, while sp-record sets up the rest,
		 * unless it is --spans=auto for a command that is no runtime:
		 * then start() loads it in the background. */
		preload_start(o, false);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_spans_argp = {
	.options = spans_options,
	.parser = parse_spans,
};

/* ---- activators ---- */

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

const char *sp_spans_runtime_dir(const struct sp_spans_opts *o)
{
	static char dir[PATH_MAX];
	static const char *const rel[] = {
		"/../share/stackpulse/runtime",	/* installed: PREFIX/bin -> PREFIX/share */
		"/../runtime",			/* build tree: build/bin -> build/runtime */
		"/../../runtime",		/* source tree, without the hooks */
	};
	char exe[PATH_MAX], probe[PATH_MAX + 64], *slash;
	const char *env = getenv("SP_RUNTIME_DIR");
	ssize_t n;
	unsigned int i;

	if (o && o->runtime_dir)
		return o->runtime_dir;
	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(probe, sizeof(probe), "%s%s/ruby/stackpulse_activate.rb", exe, rel[i]);
		if (is_file(probe) && realpath(probe, dir)) {
			/* cut "/ruby/stackpulse_activate.rb" */
			*strrchr(dir, '/') = 0;
			*strrchr(dir, '/') = 0;
			return dir;
		}
	}
	return NULL;
}

static int prepend_env(const char *name, const char *value, const char *sep)
{
	const char *old = getenv(name);
	char *buf;
	int ret;

	if (old && strstr(old, value))
		return 0;	/* already there (nested sp-record) */
	if (old && *old) {
		if (asprintf(&buf, "%s%s%s", value, sep, old) < 0)
			return sp_error("out of memory");
	} else {
		buf = strdup(value);
		if (!buf)
			return sp_error("out of memory");
	}
	ret = setenv(name, buf, 1);
	free(buf);
	return ret ? sp_error_errno("cannot set %s", name) : 0;
}

int sp_spans_setup_env(const struct sp_spans_opts *o)
{
	const char *dir = sp_spans_runtime_dir(o);
	char path[PATH_MAX + 64];

	if (!(o->modes & (SP_SPANS_RUBY | SP_SPANS_PYTHON)))
		return 0;
	if (!dir) {
		if (o->explicit_modes)
			return sp_error("cannot find the Ruby/Python activators "
					"(share/stackpulse/runtime): set SP_RUNTIME_DIR");
		sp_warn("cannot find the Ruby/Python activators: Ruby method and Python "
			"function spans will be missing");
		return 0;
	}
	if (o->modes & SP_SPANS_RUBY) {
		/*
		 * Ruby splits RUBYOPT at white space and knows no quoting: a
		 * directory with a space goes into RUBYLIB (split at colons),
		 * and RUBYOPT names the activator without its directory.
		 */
		if (!strpbrk(dir, " \t\n\v\f\r")) {
			snprintf(path, sizeof(path), "-r%s/ruby/stackpulse_activate.rb", dir);
			if (prepend_env("RUBYOPT", path, " "))
				return -1;
		} else if (strchr(dir, ':')) {
			sp_warn("the activators' directory has both white space and a colon in its "
				"name, which Ruby cannot load from (RUBYOPT, RUBYLIB): Ruby method "
				"spans will be missing (set SP_RUNTIME_DIR)");
		} else {
			snprintf(path, sizeof(path), "%s/ruby", dir);
			if (prepend_env("RUBYLIB", path, ":") ||
			    prepend_env("RUBYOPT", "-rstackpulse_activate", " "))
				return -1;
		}
	}
	if (o->modes & SP_SPANS_PYTHON) {
		snprintf(path, sizeof(path), "%s/python", dir);
		if (prepend_env("PYTHONPATH", path, ":"))
			return -1;
	}
	/*
	 * The hooks' span rings (runtime/hook/ring.h), unless Ruby's
	 * C-method probes are recorded too: their marks come at once, and a
	 * thread's marks must reach the loader in their order. An explicit
	 * STACKPULSE_SPAN_RING (0: a marker per mark) is left alone.
	 */
	if (!getenv("STACKPULSE_SPAN_RING") &&
	    setenv("STACKPULSE_SPAN_RING", (o->modes & SP_SPANS_RUBY_C) ? "0" : "1", 1))
		return sp_error_errno("cannot set STACKPULSE_SPAN_RING");
	return 0;
}

/* ---- ELF inspection ---- */

static Elf *elf_open(const char *path, int *fd)
{
	Elf *e;

	elf_version(EV_CURRENT);
	/* A path a traced process names: a regular file only (no FIFO to
	 * block on, no device to open), read rather than mapped (a file cut
	 * short under us is an error, not SIGBUS). */
	*fd = sp_safe_open(AT_FDCWD, path, NULL, NULL, NULL);
	if (*fd < 0)
		return NULL;
	e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		errno = ENOEXEC;
		return NULL;
	}
	return e;
}

static void elf_close(Elf *e, int fd)
{
	elf_end(e);
	close(fd);
}

static int read_dynsym(const char *path, const char *sym, void *buf, size_t size);

/* A python* or libpython* ELF file that defines Py_Version (3.11 on). */
static bool is_cpython_file(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	uint32_t v;

	if (strncmp(base, "python", 6) && strncmp(base, "libpython", 9))
		return false;
	return !read_dynsym(path, "Py_Version", &v, sizeof(v)) && (v >> 24) == 3 &&
	       ((v >> 16) & 0xff) >= 11;
}

int sp_spans_elf_providers(const char *path)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	int fd, bits = 0;
	unsigned int regs = 0, other = 0;
	Elf *e = elf_open(path, &fd);

	if (!e)
		return sp_error_errno("cannot read ELF file '%s'", path);
	if (elf_getshdrstrndx(e, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *desc = (const char *)d->d_buf + doff, *prov;
			size_t head = gelf_getclass(e) == ELFCLASS64 ? 24 : 12;

			if (nh.n_type != 3 || nh.n_descsz <= head || nh.n_namesz != 8 ||
			    memcmp((const char *)d->d_buf + noff, "stapsdt", 8))
				continue;
			prov = desc + head;
			if (!memchr(prov, 0, nh.n_descsz - head))
				continue;
			if (!strcmp(prov, "ruby"))
				bits |= SP_SPANS_RUBY;
			else if (!strcmp(prov, "python"))
				bits |= SP_SPANS_PYTHON;
			else if (!strcmp(prov, "stackpulse")) {
				/* provider, name, arguments: NUL-terminated in a row */
				const char *end = desc + nh.n_descsz, *name, *args;

				bits |= SP_SPANS_USDT;
				name = prov + strlen(prov) + 1;
				args = name < end ? memchr(name, 0, end - name) : NULL;
				if (args && ++args < end && memchr(args, 0, end - args) &&
				    !strcmp(args, SP_SPANS_USDT_REGS_ARGS))
					regs++;
				else
					other++;
			}
		}
	}
	if (regs && !other)
		bits |= SP_SPANS_USDT_REGS;
out:
	elf_close(e, fd);
	if (!(bits & SP_SPANS_PYTHON) && is_cpython_file(path))
		bits |= SP_SPANS_PY_HOOKABLE;
	return bits;
}

/* The file offset of virtual address va in e's loaded segments (only the
 * executable ones with exec), or -1. */
static int64_t va_to_offset(Elf *e, uint64_t va, bool exec)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (!exec || (ph.p_flags & PF_X)) && va >= ph.p_vaddr &&
		    va < ph.p_vaddr + ph.p_filesz)
			return (int64_t)(va - ph.p_vaddr + ph.p_offset);
	return -1;
}

/* The virtual address of file offset off in e's executable segments, or
 * UINT64_MAX. */
static uint64_t offset_to_va(Elf *e, uint64_t off)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return UINT64_MAX;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    off >= ph.p_offset && off < ph.p_offset + ph.p_filesz)
			return off - ph.p_offset + ph.p_vaddr;
	return UINT64_MAX;
}

int sp_spans_usdt_offsets(const char *path, const char *provider, const char *name,
			  const char *args, uint64_t *offs, int max)
{
	uint64_t base_addr = 0, fsize;
	Elf_Scn *scn = NULL;
	struct stat st;
	GElf_Shdr sh;
	size_t shstrndx;
	int fd, n = 0;
	Elf *e = elf_open(path, &fd);

	if (!e)
		return -1;
	if (elf_getshdrstrndx(e, &shstrndx) || gelf_getclass(e) != ELFCLASS64 || fstat(fd, &st))
		goto fail;
	fsize = (uint64_t)st.st_size;	/* a location must be in the file */
	while ((scn = elf_nextscn(e, scn))) {
		const char *sn;

		if (gelf_getshdr(scn, &sh) && (sn = elf_strptr(e, shstrndx, sh.sh_name)) &&
		    !strcmp(sn, ".stapsdt.base"))
			base_addr = sh.sh_addr;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		const char *sn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(sn = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(sn, ".note.stapsdt"))
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *desc = (const char *)d->d_buf + doff, *end = desc + nh.n_descsz;
			const char *prov = desc + 24, *pname, *pargs;
			uint64_t pc, base, sem;
			int64_t fo;

			if (nh.n_type != 3 || nh.n_descsz <= 24 || !memchr(prov, 0, end - prov))
				continue;
			pname = prov + strlen(prov) + 1;
			if (pname >= end || !memchr(pname, 0, end - pname))
				continue;
			pargs = pname + strlen(pname) + 1;
			if (strcmp(prov, provider) || strcmp(pname, name))
				continue;
			memcpy(&pc, desc, 8);
			memcpy(&base, desc + 8, 8);
			memcpy(&sem, desc + 16, 8);
			/* a semaphore needs a reference counter; other operands
			 * need another BPF program: not for this attachment */
			if (sem || pargs >= end || !memchr(pargs, 0, end - pargs) ||
			    (args && strcmp(pargs, args)))
				goto fail;
			if (base_addr && base)
				pc += base_addr - base;	/* prelinked */
			fo = va_to_offset(e, pc, true);
			if (fo < 0 || (uint64_t)fo >= fsize || n >= max)
				goto fail;
			offs[n++] = (uint64_t)fo;
		}
	}
	elf_close(e, fd);
	return n;
fail:
	elf_close(e, fd);
	return -1;
}

static bool runtime_lib_name(const char *name)
{
	return !strncmp(name, "libruby", 7) || !strncmp(name, "libpython", 9);
}

int sp_spans_runtime_libs(const char *exe, char paths[][4096], int n)
{
	return sp_spans_needed_libs(exe, false, paths, n);
}

int sp_spans_needed_libs(const char *exe, bool all, char paths[][4096], int n)
{
	static const char *const std_dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
		"/usr/local/lib", "/lib", "/usr/lib",
	};
	const char *needed[16], *runpath = NULL;
	char origin[PATH_MAX], dir[PATH_MAX], cand[PATH_MAX * 3], *slash;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int fd, nneeded = 0, found = 0, i;
	Elf *e = elf_open(exe, &fd);

	if (!e)
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Dyn dyn;
		size_t j;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		d = elf_getdata(scn, NULL);
		for (j = 0; d && sh.sh_entsize && j < sh.sh_size / sh.sh_entsize; j++) {
			const char *s;

			if (!gelf_getdyn(d, j, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED) {
				if ((all || runtime_lib_name(s)) && nneeded < 16)
					needed[nneeded++] = s;
			} else {
				runpath = s;
			}
		}
	}
	snprintf(origin, sizeof(origin), "%s", exe);
	slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	for (i = 0; i < nneeded && found < n; i++) {
		const char *p = runpath;
		bool ok = false;

		while (p && *p && !ok) {
			const char *end = strchr(p, ':');
			size_t len = end ? (size_t)(end - p) : strlen(p);

			if (len < sizeof(dir)) {
				memcpy(dir, p, len);
				dir[len] = 0;
				if (!strncmp(dir, "$ORIGIN", 7))
					snprintf(cand, sizeof(cand), "%s%s/%s", origin, dir + 7, needed[i]);
				else
					snprintf(cand, sizeof(cand), "%s/%s", dir, needed[i]);
				ok = is_file(cand);
			}
			p = end ? end + 1 : NULL;
		}
		for (size_t d = 0; !ok && d < sizeof(std_dirs) / sizeof(std_dirs[0]); d++) {
			snprintf(cand, sizeof(cand), "%s/%s", std_dirs[d], needed[i]);
			ok = is_file(cand);
		}
		if (ok && realpath(cand, paths[found]))
			found++;
	}
	elf_close(e, fd);
	return found;
}

/* Bytes at a dynamic symbol's address in the file, or -1. */
static int read_dynsym(const char *path, const char *sym, void *buf, size_t size)
{
	Elf_Scn *scn = NULL, *s2;
	GElf_Shdr sh, sh2;
	int fd, ret = -1;
	Elf *e = elf_open(path, &fd);

	if (!e)
		return -1;
	while ((scn = elf_nextscn(e, scn)) && ret < 0) {
		Elf_Data *d;
		GElf_Sym st;
		size_t j;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (j = 0; d && j < sh.sh_size / sh.sh_entsize; j++) {
			const char *name;
			Elf_Data *d2;

			if (!gelf_getsym(d, j, &st) || st.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, st.st_name);
			if (!name || strcmp(name, sym))
				continue;
			s2 = elf_getscn(e, st.st_shndx);
			if (!s2 || !gelf_getshdr(s2, &sh2) || sh2.sh_type == SHT_NOBITS)
				break;
			d2 = elf_getdata(s2, NULL);
			if (!d2 || st.st_value < sh2.sh_addr ||
			    st.st_value - sh2.sh_addr + size > d2->d_size)
				break;
			memcpy(buf, (char *)d2->d_buf + (st.st_value - sh2.sh_addr), size);
			ret = 0;
			break;
		}
	}
	elf_close(e, fd);
	return ret;
}

void sp_spans_runtime_version(const char *path, int runtime, char *buf, size_t size)
{
	char v[16] = "";
	uint32_t hex;

	buf[0] = 0;
	if (runtime == SP_RT_RUBY && !read_dynsym(path, "ruby_version", v, sizeof(v) - 1)) {
		v[sizeof(v) - 1] = 0;
		snprintf(buf, size, "%s", v);
	} else if (runtime == SP_RT_PYTHON && !read_dynsym(path, "Py_Version", &hex, 4)) {
		snprintf(buf, size, "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
	}
}

/* ---- the source ---- */

static const char *const probe_names[SP_PR_MAX] = {
	[SP_PR_RUBY_METHOD_ENTRY] = "ruby:method__entry",
	[SP_PR_RUBY_METHOD_RETURN] = "ruby:method__return",
	[SP_PR_RUBY_CMETHOD_ENTRY] = "ruby:cmethod__entry",
	[SP_PR_RUBY_CMETHOD_RETURN] = "ruby:cmethod__return",
	[SP_PR_RUBY_RAISE] = "ruby:raise",
	[SP_PR_PY_FUNCTION_ENTRY] = "python:function__entry",
	[SP_PR_PY_FUNCTION_RETURN] = "python:function__return",
	[SP_PR_PY_AUDIT] = "python:audit",
	[SP_PR_SP_BEGIN] = "stackpulse:span__begin",
	[SP_PR_SP_END] = "stackpulse:span__end",
	[SP_PR_UPROBE_ENTRY] = "uprobe",
	[SP_PR_UPROBE_RETURN] = "uretprobe",
	[SP_PR_RB_HOOK_CALL] = "stackpulse:rb__call",
	[SP_PR_RB_HOOK_RETURN] = "stackpulse:rb__return",
	[SP_PR_PY_HOOK_CALL] = "stackpulse:py__call",
	[SP_PR_PY_HOOK_RETURN] = "stackpulse:py__return",
	[SP_PR_RT_NAME] = "stackpulse:rt__name",
	[SP_PR_RB_HOOK_FIBER] = "stackpulse:rb__fiber",
	[SP_PR_PY_HOOK_AUDIT] = "stackpulse:py__audit",
	[SP_PR_PY_HOOK_RAISE] = "stackpulse:py__raise",
	[SP_PR_RT_RING] = "stackpulse:rt__ring",
	[SP_PR_RT_FLUSH] = "stackpulse:rt__flush",
};

/* What one process image has attached. */
/* An attachment to destroy: libbpf's link, or the file descriptor of a
 * uprobe_multi link (libbpf 1.1 cannot make those). */
struct bs_link {
	struct bpf_link *link;
	int fd;			/* -1 with a libbpf link */
	bool usdt;		/* a libbpf USDT link: its manager is shared */
};

struct bs_att {
	uint32_t probe;		/* enum sp_bs_probe */
	uint32_t func;		/* --span-func index for uprobes */
	struct bpf_program *prog;	/* attached to, for a fork child's copy */
	struct bs_link link;
	bool multi;		/* by a uprobe_multi link */
	uint32_t group;		/* attach_markers(): the markers of one link, which
				 * the first of them holds; 0: a link of its own */
	const char *args;	/* with group: the operands their notes had to
				 * have (fixed registers; a string that lives
				 * for ever, for fork children's links) */
	char bin[];		/* the binary */
};

/* A --span-func function resolved to one symbol. */
struct bs_func {
	char *bin;
	char *name;
	unsigned int skip;	/* bytes after the symbol where the uprobe goes */
	uint64_t name_id, bin_id, base_id;	/* interned strings */
};

struct bs_proc {
	uint32_t pid;
	uint32_t gen;			/* image generation (struct sp_bs_proc) */
	bool exited;
	unsigned int runtimes;		/* SP_SPANS_RUBY/PYTHON/USDT bits found */
	unsigned int announced;		/* runtimes with a SP_REC_RUNTIME written */
	struct bs_att **att;
	size_t natt, catt;
	struct sp_u64map strs;		/* mix(addr, hash) -> string id */
	struct sp_u64map depth;		/* depth_key() -> open spans */
	/* Ruby fibers (the hook's rb__fiber), each with its own open spans:
	 * per thread the fiber it runs (0 = its root fiber), the root's id
	 * once known, and the fibers seen starting (mix(tid, fiber)). */
	bool fibers;
	struct sp_u64map fib_cur, fib_root, fib_known;
	bool py_active;			/* the Python activator announced itself */
	bool cm_pending;		/* C-method probes wait for the first method entry */
	bool attached;			/* running before the recording (-p): no activator */
	bool gone_seen;			/* exited: forget_gone() saw it once */
	uint64_t gone_ns;		/* when its exit was read */
	uint32_t ppid;			/* forked from, until it execs: same addresses */
	uint32_t by_addr;		/* strings looked up by address (str_from_user) */
	bool capped;			/* told it reached SP_SPANS_*_PER_PROC */
	char rlib[2][PATH_MAX];		/* ruby, python binary holding the probes */
	uint64_t hits[SP_PR_MAX];	/* events read per probe (probe health) */
	struct bs_link dl;		/* its ld.so's _dl_debug_state (dlopen) */
	char exe[PATH_MAX];		/* the executable and where it is mapped: */
	struct { uint64_t start, end, off; } map[8];	/* strings of gone processes */
	unsigned int nmap;
};

/*
 * Detaching a uprobe waits for the kernel's grace periods (tens of ms
 * each, more on a loaded machine); the reapers' waits overlap. Until its
 * link is gone, a detached process's probe costs every hit of the same
 * probe in the live processes a call: a fork storm's links must go as
 * fast as they come.
 */
#define SP_REAPERS	4

struct bs_ctx {
	const struct sp_spans_opts *o;
	struct sp_spans *skel;
	struct ring_buffer *rb;
	struct sp_emit *out;		/* during start/poll/finish */
	struct bs_proc **procs;
	size_t nprocs, cprocs;
	struct sp_u64map by_pid;	/* pid -> index + 1 of the live process */
	struct bs_func *funcs;
	size_t nfuncs, cfuncs;
	uint64_t last_poll_ns;
	uint64_t addr_strs;		/* new strings str_from_user() made */
	uint64_t addr_live;		/* by_addr of the processes known */
	uint64_t fibers_live;		/* fib_known and depth entries of those */
	uint64_t lost_seen, lost_since;
	uint64_t spans, raises, audits, orphans, fiber_switches;
	uint64_t idle;			/* probes without hits and without a reason */
	bool releasing;			/* spans_free: only let stopped processes go */
	unsigned int found;		/* runtimes seen anywhere */
	int err;			/* fatal error inside the ring callback */
	/*
	 * Detaching a uprobe waits for an RCU grace period in the kernel
	 * (50-90 ms each here): links of an image a process left (exec,
	 * exit) are destroyed by reaper threads, so the process and the
	 * loop go on at once. The stale probes are ignored in BPF meanwhile
	 * (image generation). libbpf's USDT manager is not thread-safe:
	 * every attach and detach of a libbpf USDT link holds bpf_lock (and
	 * only those: a uprobe_multi link is a file descriptor of ours).
	 */
	pthread_mutex_t bpf_lock, rq_lock;
	pthread_cond_t rq_cond;
	pthread_t reaper[SP_REAPERS];
	unsigned int reapers;		/* threads running reaper_main() */
	bool reaper_on, reaper_stop;
	struct bs_link *rq;
	size_t nrq, crq;
	bool no_multi;			/* uprobe_multi links refused: USDT links */
	uint32_t groups;		/* attach_markers() links made */
	uint64_t plain_execs, stopped_execs;	/* execs released by BPF / looked at */
	uint64_t forks, stopped_forks;		/* forks, and those held for probes */
	uint64_t probed_images;			/* images that got probes */
	uint32_t *pids;			/* the target */
	bool *pid_cmd;			/* started by sp-record */
	unsigned int npids;
	bool deferred;			/* auto: waiting for the preloaded object */
	uint64_t defer_since;
	bool finishing;
	int epfd;			/* s->fd while deferred: preload.efd, then the ring */
	char unavailable[256];
	/*
	 * Marker locations attached by uprobe_multi links, numbered from 1 in
	 * their cookies (bits 8-31): the binary and the file offset, so that
	 * a marker's address (sent by BPF) gives where its binary is loaded,
	 * and its string literals can be read from the file when the process
	 * is gone (a library's: sp-record never sees its mapping).
	 */
	struct bs_loc { char *bin; uint64_t off; bool spec; } *locs;
	size_t nlocs, clocs;
	struct sp_u64map loc_ids;	/* mix(hash(bin), off) -> number */
	struct sp_span_rings rings;	/* the runtime hooks' span rings */
	struct { char path[PATH_MAX]; uint64_t off; } ldso[2];	/* ld.so's
					 * _dl_debug_state, by file (0: none) */
	unsigned int nldso;
	uint64_t dlopens, late_libs;	/* ld.so's changes looked at; libraries
					 * given probes that way */
	int guard_fd;			/* the guardian's pipe (hold_guard.h) */
	unsigned int usdt_live;		/* libbpf USDT links (atomic) */
	bool usdt_full;			/* too many of them: said so */
	bool dl_warned;			/* an ld.so could not be probed: said so */
	/* Processes whose ld.so probe waits (attach_dl_later()) */
	struct dl_wait { struct bs_proc *p; uint64_t due; } *dlw;
	size_t ndlw, cdlw;
	struct usdt_probe_cache *ucache;	/* USDT locations by file and probe */
	size_t nucache;
	bool rings_unread;		/* SP_SPAN_RINGS_UNREAD=1 (tests): only what
					 * BPF copies at the threads' ends */
	/* Processes that exited: their bookkeeping goes at the next poll, as
	 * their other threads' last ring chunks may come after the exit. */
	struct bs_proc **gone;
	size_t ngone, cgone;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && sp_verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && sp_verbose < 1)
		return 0;
	/* A failed load is reported once by the caller; details with -v. */
	if (level == LIBBPF_WARN && sp_verbose < 1)
		return 0;
	sp_vmessage(fmt, ap);	/* "libbpf: ...": its names (paths) escaped like ours */
	return 0;
}

/* Whether this process may load tracing BPF programs: CAP_BPF and
 * CAP_PERFMON, or CAP_SYS_ADMIN, in the effective set. */
static bool may_bpf(void)
{
	static int cached = -1;
	unsigned long long eff = 0;
	char line[256];
	FILE *f;

	if (cached >= 0)
		return cached;
	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7))
			eff = strtoull(line + 7, NULL, 16);
	if (f)
		fclose(f);
	cached = (eff >> 21 & 1) || ((eff >> 38 & 1) && (eff >> 39 & 1));
	return cached;
}

/*
 * Open, load and attach (the fork/exec/exit hooks) the BPF object: about
 * 0.2 s here, most of it libbpf parsing the kernel's BTF. sp-record starts
 * it in a thread as soon as its options are parsed (preload), so it runs
 * while the other sources load theirs.
 */
static struct sp_spans *load_skel(char *why, size_t size)
{
	struct sp_spans *sk;
	int err;

	libbpf_set_print(libbpf_print);
	sk = sp_spans__open();
	if (!sk) {
		snprintf(why, size, "cannot open the BPF program: %s", strerror(errno));
		return NULL;
	}
	/* uprobe_multi programs: an attach type libbpf 1.1 has no section for */
	bpf_program__set_expected_attach_type(sk->progs.on_marker_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_ruby_method_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_ruby_raise_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_py_function_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_py_audit_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_sp_span_any_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(sk->progs.on_dl_state_multi,
					      SP_BPF_TRACE_UPROBE_MULTI);
	/* sched_prepare_exec: Linux 6.10 and later */
	if (libbpf_find_vmlinux_btf_id("sched_prepare_exec", BPF_TRACE_RAW_TP) < 0)
		bpf_program__set_autoload(sk->progs.on_prepare_exec, false);
	if ((err = sp_spans__load(sk)))
		snprintf(why, size, "cannot load the BPF program: %s", strerror(-err));
	else if ((err = sp_spans__attach(sk)))	/* fork, exec, exit tracepoints */
		snprintf(why, size, "cannot attach the process tracepoints: %s", strerror(-err));
	if (err) {
		sp_spans__destroy(sk);
		return NULL;
	}
	return sk;
}

static struct {
	pthread_t th;
	bool on;
	int efd;		/* written once loaded (or failed) */
	int done;		/* atomic */
	struct sp_spans *skel;
	char why[256];
} preload = { .efd = -1 };

static void *preload_main(void *arg)
{
	uint64_t one = 1;

	(void)arg;
	preload.skel = load_skel(preload.why, sizeof(preload.why));
	__atomic_store_n(&preload.done, 1, __ATOMIC_RELEASE);
	if (write(preload.efd, &one, sizeof(one)) < 0)
		return NULL;
	return NULL;
}

static bool preload_ready(void)
{
	return __atomic_load_n(&preload.done, __ATOMIC_ACQUIRE);
}

static bool command_has_probes(unsigned int modes);

static void preload_start(const struct sp_spans_opts *o, bool now)
{
	if (preload.on || (!o->modes && !o->nfuncs) || !may_bpf())
		return;
	if (!now && !o->explicit_modes && !o->nfuncs && !command_has_probes(o->modes))
		return;
	if (preload.efd < 0)
		preload.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (preload.efd < 0)
		return;
	preload.on = !pthread_create(&preload.th, NULL, preload_main, NULL);
}

/* The preloaded object (NULL and why set if it failed), or a fresh load. */
static struct sp_spans *preload_take(char *why, size_t size)
{
	struct sp_spans *sk;

	if (!preload.on)
		return load_skel(why, size);
	pthread_join(preload.th, NULL);
	preload.on = false;
	sk = preload.skel;
	preload.skel = NULL;
	if (!sk)
		snprintf(why, size, "%s", preload.why);
	return sk;
}

static struct bs_proc *proc_get(struct bs_ctx *c, uint32_t pid)
{
	uint64_t *i = sp_u64map_get(&c->by_pid, pid);

	return i ? c->procs[*i - 1] : NULL;
}

static struct bs_proc *proc_new(struct bs_ctx *c, uint32_t pid)
{
	struct bs_proc *p = sp_xcalloc(1, sizeof(*p));

	p->pid = pid;
	p->dl.fd = -1;
	sp_grow(&c->procs, &c->cprocs, c->nprocs + 1, sizeof(*c->procs));
	c->procs[c->nprocs++] = p;
	sp_u64map_put(&c->by_pid, pid, c->nprocs);
	return p;
}

static void att_add_link(struct bs_proc *p, uint32_t probe, uint32_t func, const char *bin,
			 struct bpf_program *prog, struct bs_link link, bool multi,
			 const char *args)
{
	struct bs_att *a = sp_xmalloc(sizeof(*a) + strlen(bin) + 1);

	a->probe = probe;
	a->func = func;
	a->prog = prog;
	a->link = link;
	a->multi = multi;
	a->group = 0;
	a->args = args;
	strcpy(a->bin, bin);
	sp_grow(&p->att, &p->catt, p->natt + 1, sizeof(*p->att));
	p->att[p->natt++] = a;
}

static void att_add(struct bs_proc *p, uint32_t probe, uint32_t func, const char *bin,
		    struct bpf_program *prog, struct bpf_link *link)
{
	att_add_link(p, probe, func, bin, prog, (struct bs_link){ .link = link, .fd = -1 }, false,
		     NULL);
}

/*
 * Destroy an attachment: a uprobe's takes the kernel an RCU grace period
 * or two (tens of milliseconds), so only libbpf's USDT links, whose
 * manager the attaching thread shares, hold bpf_lock meanwhile.
 */
static void link_destroy(struct bs_ctx *c, struct bs_link l)
{
	if (l.link && l.usdt) {
		pthread_mutex_lock(&c->bpf_lock);
		bpf_link__destroy(l.link);
		pthread_mutex_unlock(&c->bpf_lock);
		__atomic_sub_fetch(&c->usdt_live, 1, __ATOMIC_RELAXED);
	} else if (l.link) {
		bpf_link__destroy(l.link);
	} else if (l.fd >= 0) {
		close(l.fd);
	}
}

/* Hits of a probe in p: the events read from it (lost ones are counted
 * apart, in lost records). */
static uint64_t hits_of(struct bs_ctx *c, const struct bs_proc *p, uint32_t probe)
{
	return probe < SP_PR_MAX ? p->hits[probe] : 0;
}

/* Why a probe looks dead, or "". */
static void verdict(struct bs_ctx *c, const struct bs_proc *p, uint32_t probe, uint64_t hits,
		    char *buf, size_t size)
{
	uint64_t other;

	buf[0] = 0;
	switch (probe) {
	case SP_PR_RUBY_METHOD_ENTRY:
	case SP_PR_RUBY_METHOD_RETURN:
		other = hits_of(c, p, SP_PR_RUBY_CMETHOD_ENTRY);
		if (!hits && other)
			snprintf(buf, size, "0 hits while ruby:cmethod__entry %llu: method spans "
				 "not active (no TracePoint in the process: the activator was not "
				 "loaded)", (unsigned long long)other);
		else if (!hits)
			snprintf(buf, size, "0 hits: no Ruby method ran, or method spans not active "
				 "(the activator was not loaded)");
		break;
	case SP_PR_PY_FUNCTION_ENTRY:
		other = hits_of(c, p, SP_PR_PY_FUNCTION_RETURN);
		if (!p->py_active && other)
			snprintf(buf, size, "%llu hits while python:function__return %llu: function "
				 "entries not active (CPython 3.11 fires them only with a profile "
				 "function set: the activator was not loaded)",
				 (unsigned long long)hits, (unsigned long long)other);
		else if (!hits)
			snprintf(buf, size, "0 hits: no Python function ran");
		break;
	case SP_PR_RB_HOOK_CALL:
	case SP_PR_RB_HOOK_RETURN:
		if (!hits)
			snprintf(buf, size, "0 hits: no Ruby method ran, or the hook was not loaded "
				 "(the activator, RUBYOPT)");
		break;
	case SP_PR_PY_HOOK_CALL:
	case SP_PR_PY_HOOK_RETURN:
		if (!hits && !p->py_active && hits_of(c, p, SP_PR_PY_AUDIT))
			snprintf(buf, size, "0 hits while python:audit %llu: the hook was not loaded "
				 "(the activator, PYTHONPATH)",
				 (unsigned long long)hits_of(c, p, SP_PR_PY_AUDIT));
		else if (!hits)
			snprintf(buf, size, "0 hits: no Python function ran, or the hook was not "
				 "loaded (the activator, PYTHONPATH)");
		break;
	case SP_PR_RUBY_RAISE:
	case SP_PR_PY_AUDIT:
	case SP_PR_RT_NAME:
	case SP_PR_RB_HOOK_FIBER:
	case SP_PR_PY_HOOK_AUDIT:
	case SP_PR_PY_HOOK_RAISE:
	case SP_PR_RT_RING:
	case SP_PR_RT_FLUSH:
		break;		/* silence is normal */
	default:
		if (!hits)
			snprintf(buf, size, "0 hits");
	}
}

/* SP_REC_PROBE records (and a line on stderr) for what p has attached. */
static int emit_health(struct bs_ctx *c, struct bs_proc *p, uint64_t time, bool only_if_hit)
{
	struct sp_record r = { .kind = SP_REC_PROBE };
	char why[256], line[1024], name[600];
	uint64_t total = 0;
	size_t i, j, len = 0;
	bool dup;

	for (i = 0; i < p->natt; i++)
		total += hits_of(c, p, p->att[i]->probe);
	if (!p->natt || (only_if_hit && !total))
		return 0;
	len = snprintf(line, sizeof(line), "spans: pid %u:", p->pid);
	for (i = 0; i < p->natt; i++) {
		struct bs_att *a = p->att[i];
		uint64_t hits;

		/* one record per probe (a uprobe per function) */
		for (dup = false, j = 0; j < i; j++)
			if (p->att[j]->probe == a->probe && p->att[j]->func == a->func)
				dup = true;
		if (dup)
			continue;
		if (a->probe == SP_PR_UPROBE_ENTRY || a->probe == SP_PR_UPROBE_RETURN) {
			/* hits are per probe kind; name the functions */
			snprintf(name, sizeof(name), "%s:%s", probe_names[a->probe],
				 c->funcs[a->func].name);
			if (a->func != 0 && p->att[0]->probe == a->probe)
				continue;
		} else {
			snprintf(name, sizeof(name), "%s", probe_names[a->probe]);
		}
		hits = hits_of(c, p, a->probe);
		verdict(c, p, a->probe, hits, why, sizeof(why));
		r.probe.time = time;
		r.probe.pid = p->pid;
		r.probe.name = sp_writer_strz(c->out->w, name);
		r.probe.hits = hits;
		r.probe.verdict = sp_writer_strz(c->out->w, why);
		if (c->out->emit(c->out->ctx, &r))
			return -1;
		if (len < sizeof(line) - 1)
			len += snprintf(line + len, sizeof(line) - len, " %s %llu", name,
					(unsigned long long)hits);
		/* Evidence of a dead probe ("0 hits while ... N") is worth a
		 * warning; a short-lived process that ran no method is not. */
		if (why[0] && strstr(why, " while "))
			sp_warn("pid %u: %s: %s", p->pid, name, why);
		else if (why[0])
			c->idle++;
	}
	if (sp_verbose)
		sp_info("%s", line);
	return 0;
}

/* Destroy l now (sync) or by the reapers. */
static void *reaper_main(void *arg)
{
	struct bs_ctx *c = arg;
	struct bs_link l;

	for (;;) {
		pthread_mutex_lock(&c->rq_lock);
		while (!c->nrq && !c->reaper_stop)
			pthread_cond_wait(&c->rq_cond, &c->rq_lock);
		if (!c->nrq) {
			pthread_mutex_unlock(&c->rq_lock);
			return NULL;
		}
		l = c->rq[--c->nrq];
		pthread_mutex_unlock(&c->rq_lock);
		link_destroy(c, l);
	}
}

/* Destroy l now (sync) or by the reapers. */
static void detach_link(struct bs_ctx *c, struct bs_link l, bool sync)
{
	while (!sync && c->reapers < SP_REAPERS &&
	       !pthread_create(&c->reaper[c->reapers], NULL, reaper_main, c))
		c->reaper_on = ++c->reapers > 0;
	if (sync || !c->reaper_on) {
		link_destroy(c, l);
		return;
	}
	pthread_mutex_lock(&c->rq_lock);
	sp_grow(&c->rq, &c->crq, c->nrq + 1, sizeof(*c->rq));
	c->rq[c->nrq++] = l;
	pthread_cond_signal(&c->rq_cond);
	pthread_mutex_unlock(&c->rq_lock);
}

/* Detach everything p has attached: now (sync) or by the reaper. */
static void detach_all_how(struct bs_ctx *c, struct bs_proc *p, bool sync)
{
	size_t i;

	if (p->dl.link || p->dl.fd >= 0) {
		detach_link(c, p->dl, sync);
		p->dl = (struct bs_link){ .fd = -1 };
	}
	for (i = 0; i < p->natt; i++) {
		if (p->att[i]->link.link || p->att[i]->link.fd >= 0)
			detach_link(c, p->att[i]->link, sync);
		free(p->att[i]);
	}
	p->natt = 0;
}

static void detach_all(struct bs_ctx *c, struct bs_proc *p)
{
	detach_all_how(c, p, false);
}

/* Tell BPF the generation of p's image and whether it has probes (p is
 * stopped, or not started yet: BPF changes the entry only at its fork and
 * exec). */
static void set_tracked(struct bs_ctx *c, struct bs_proc *p)
{
	struct sp_bs_proc v = { .gen = p->gen, .probed = p->natt > 0 };

	bpf_map__update_elem(c->skel->maps.tgids, &p->pid, sizeof(p->pid), &v, sizeof(v),
			     BPF_EXIST);
}

static int emit_runtime(struct bs_ctx *c, struct bs_proc *p, int rt, const char *lib,
			const char *mode)
{
	struct sp_record r = { .kind = SP_REC_RUNTIME };
	char ver[32];

	sp_spans_runtime_version(lib, rt, ver, sizeof(ver));
	r.runtime.time = sp_now_mono_ns();
	r.runtime.pid = p->pid;
	r.runtime.runtime = rt;
	r.runtime.version = sp_writer_strz(c->out->w, ver);
	r.runtime.library = sp_writer_strz(c->out->w, lib);
	r.runtime.mode = sp_writer_strz(c->out->w, mode);
	return c->out->emit(c->out->ctx, &r);
}

/*
 * libbpf's USDT links, for kernels without uprobe_multi links (and
 * operands attach_multi() cannot read). Each takes one or more of the
 * 4096 specs of the BPF object until the reaper has destroyed it; libbpf
 * 1.1 frees memory twice when an attach finds none left (its detach
 * reallocates its free list to 0 bytes), so at most SP_SPANS_USDT_LIVE
 * such links live at once: beyond that a process gets none, said once.
 */
#define SP_SPANS_USDT_LIVE	512
static int attach_usdt_how(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *prog,
			   const char *bin, const char *provider, const char *name,
			   uint32_t probe, bool quiet)
{
	LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = (uint64_t)p->gen << 32 | probe);
	struct bpf_link *l;

	if (__atomic_load_n(&c->usdt_live, __ATOMIC_RELAXED) >= SP_SPANS_USDT_LIVE) {
		if (!c->usdt_full)
			sp_warn("spans: %u USDT links wait to be detached: pid %u and later "
				"processes get no %s:%s until they are", SP_SPANS_USDT_LIVE,
				p->pid, provider, name);
		c->usdt_full = true;
		return -1;
	}
	pthread_mutex_lock(&c->bpf_lock);
	l = bpf_program__attach_usdt(prog, p->pid, bin, provider, name, &uo);
	pthread_mutex_unlock(&c->bpf_lock);
	if (!l) {
		int e = errno;

		if (e == ESRCH || quiet)
			return -1;	/* the process is gone */
		sp_warn("pid %u: cannot attach %s:%s in '%s': %s", p->pid, provider, name, bin,
			strerror(e));
		return -1;
	}
	__atomic_add_fetch(&c->usdt_live, 1, __ATOMIC_RELAXED);
	att_add_link(p, probe, 0, bin, prog, (struct bs_link){ .link = l, .fd = -1, .usdt = true },
		     false, NULL);
	return 0;
}

static int attach_usdt(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *prog,
		       const char *bin, const char *provider, const char *name, uint32_t probe)
{
	return attach_usdt_how(c, p, prog, bin, provider, name, probe, false);
}

/* The runtime hook of rt that process pid has mapped (an attached process
 * started with the activator in its environment), into path. */
static bool hook_mapped(uint32_t pid, int rt, char *path, size_t size)
{
	const char *name = rt == SP_RT_RUBY ? "/stackpulse_hook.so" : "/_stackpulse_hook.cpython-";
	char maps[64], line[PATH_MAX + 256], *at, *nl;
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		at = strchr(line, '/');
		if (!at || !strstr(at, name))
			continue;
		nl = strchr(at, '\n');
		if (nl)
			*nl = 0;
		snprintf(path, size, "%s", at);
		found = is_file(path);
	}
	if (f)
		fclose(f);
	return found;
}

static int offsets_cached(const char *path, const char *provider, const char *name,
			  const char *args, uint64_t *offs, int max);

/*
 * Whether the hook file at path has its markers (a damaged or foreign file
 * does not): else the runtime's own probes are attached, which still fire
 * with the activator's fallback hook, and sp-record says so once.
 */
static bool hook_usable(int rt, const char *path)
{
	static bool warned[2];
	uint64_t offs[64];
	const char *call = rt == SP_RT_RUBY ? "rb__call" : "py__call";

	if (offsets_cached(path, "stackpulse", call, SP_SPANS_HOOK_ARGS, offs, 64) > 0)
		return true;
	if (!warned[rt == SP_RT_RUBY]) {
		warned[rt == SP_RT_RUBY] = true;
		sp_warn("spans: '%s' has no stackpulse:%s marker: recording %s's own probes "
			"instead (rebuild with make)", path, call, rt == SP_RT_RUBY ? "Ruby" : "Python");
	}
	return false;
}

/*
 * The runtime hook the activator of runtime rt loads into a process that
 * runs the library bin, in path: the extension built for bin's version,
 * when it exists and the activator's environment variable asks for it
 * (unset or "hook"). The activators make the same choice (runtime).
 * An attached process has no activator from us: the hook if it has one
 * loaded (started with the activator in its environment).
 */
static bool hook_for(struct bs_ctx *c, const struct bs_proc *p, int rt, const char *bin,
		     char *path, size_t size)
{
	const char *dir = sp_spans_runtime_dir(c->o), *env;
	char ver[32], pat[PATH_MAX + 64];
	unsigned int major, minor;
	glob_t g;
	bool ok;

	if (p->attached)
		return hook_mapped(p->pid, rt, path, size);
	env = getenv(rt == SP_RT_RUBY ? "STACKPULSE_RUBY_HOOK" : "STACKPULSE_PY_HOOK");
	if (!dir || (env && *env && strcmp(env, "hook")))
		return false;
	sp_spans_runtime_version(bin, rt, ver, sizeof(ver));
	if (sscanf(ver, "%u.%u", &major, &minor) != 2)
		return false;
	if (rt == SP_RT_RUBY) {
		snprintf(path, size, "%s/ruby/%u.%u/stackpulse_hook.so", dir, major, minor);
		ok = is_file(path);
	} else {
		/* CPython imports only the extension of its own version's tag */
		snprintf(pat, sizeof(pat), "%s/python/_stackpulse_hook.cpython-%u%u-*.so", dir,
			 major, minor);
		if (glob(pat, 0, NULL, &g))
			return false;
		ok = g.gl_pathc >= 1 && is_file(g.gl_pathv[0]);
		if (ok)
			snprintf(path, size, "%s", g.gl_pathv[0]);
		globfree(&g);
	}
	return ok && hook_usable(rt, path);
}

static uint32_t loc_id(struct bs_ctx *c, const char *bin, uint64_t off);

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
 * Markers probes[0..n) of bin whose operands are args (fixed registers):
 * one uprobe_multi link for them all, on_marker_multi telling them apart
 * by the cookie (a fork child gets one link per binary, not one per
 * marker). A marker the binary lacks is left out; one whose operands are
 * others, and all of them where the kernel has no such links, get a USDT
 * link each. Each gets its struct bs_att (its probe's health), the first
 * the link, all the same group.
 */
static void attach_markers(struct bs_ctx *c, struct bs_proc *p, const char *bin,
			   const char *args, const uint32_t *probes, int n)
{
	uint64_t offs[SP_MARKER_LOCS], cookies[SP_MARKER_LOCS], o[64];
	int found[16], total = 0, k, i, fd = -1;
	union bpf_attr attr;
	struct sp_uprobe_multi_attr *u = (void *)&attr;
	uint32_t group, id;
	bool first = true;

	for (k = 0; k < n && k < 16; k++) {
		const char *name = strchr(probe_names[probes[k]], ':') + 1;

		found[k] = c->no_multi ? -1 : offsets_cached(bin, "stackpulse", name, args, o, 64);
		if (found[k] <= 0)
			continue;
		for (i = 0; i < found[k] && total < SP_MARKER_LOCS; i++) {
			id = loc_id(c, bin, o[i]);
			offs[total] = o[i];
			cookies[total++] = (uint64_t)p->gen << 32 | (uint64_t)id << 8 | probes[k];
		}
	}
	if (total && total < SP_MARKER_LOCS) {
		memset(&attr, 0, sizeof(attr));
		u->prog_fd = bpf_program__fd(c->skel->progs.on_marker_multi);
		u->attach_type = SP_BPF_TRACE_UPROBE_MULTI;
		u->path = (uintptr_t)bin;
		u->offsets = (uintptr_t)offs;
		u->cookies = (uintptr_t)cookies;
		u->cnt = total;
		u->pid = p->pid;
		fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
		if (fd < 0 && errno == ESRCH)
			return;		/* gone: nothing to attach */
		if (fd < 0 && (errno == EINVAL || errno == EOPNOTSUPP || errno == E2BIG))
			c->no_multi = true;
		if (fd < 0 && sp_verbose)
			sp_info("spans: uprobe_multi link for the markers in '%s' refused (%s): "
				"USDT links", bin, strerror(errno));
	}
	if (fd >= 0) {
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		group = ++c->groups;
		for (k = 0; k < n && k < 16; k++) {
			if (found[k] <= 0)
				continue;
			att_add_link(p, probes[k], 0, bin, c->skel->progs.on_marker_multi,
				     (struct bs_link){ .fd = first ? fd : -1 }, true, args);
			p->att[p->natt - 1]->group = group;
			first = false;
		}
	}
	for (k = 0; k < n && k < 16; k++) {
		const char *name = strchr(probe_names[probes[k]], ':') + 1;

		if (fd < 0 || found[k] < 0)
			attach_usdt(c, p, marker_prog(c, probes[k]), bin, "stackpulse", name,
				    probes[k]);
	}
}

/* The markers of a runtime hook (rb__ or py__ call, return; rt__name;
 * rb__fiber or py__raise; the span rings'; with audit, py__audit). */
static void attach_hook(struct bs_ctx *c, struct bs_proc *p, const char *hook, uint32_t call,
			bool audit)
{
	uint32_t probes[] = {
		call, call + 1, SP_PR_RT_NAME,
		call == SP_PR_RB_HOOK_CALL ? SP_PR_RB_HOOK_FIBER : SP_PR_PY_HOOK_RAISE,
		/* a hook with span rings (STACKPULSE_SPAN_RING=1) marks through these */
		SP_PR_RT_RING, SP_PR_RT_FLUSH, SP_PR_PY_HOOK_AUDIT,
	};

	attach_markers(c, p, hook, SP_SPANS_HOOK_ARGS, probes, audit ? 7 : 6);
}

/* The number of a marker location (struct bs_loc), 0 when there are too
 * many to number in a cookie. */
static uint32_t loc_id(struct bs_ctx *c, const char *bin, uint64_t off)
{
	uint64_t key = sp_hash_mix(sp_hash_bytes(bin, strlen(bin)), off), *v;

	v = sp_u64map_get(&c->loc_ids, key);
	if (v && c->locs[*v - 1].off == off && !strcmp(c->locs[*v - 1].bin, bin))
		return (uint32_t)*v;
	if (c->nlocs >= 0xffffff)
		return 0;
	sp_grow(&c->locs, &c->clocs, c->nlocs + 1, sizeof(*c->locs));
	c->locs[c->nlocs].bin = sp_xstrdup(bin);
	c->locs[c->nlocs].off = off;
	c->locs[c->nlocs].spec = false;
	c->nlocs++;
	if (!v)
		sp_u64map_put(&c->loc_ids, key, c->nlocs);
	return (uint32_t)c->nlocs;
}

/*
 * A string literal at addr of the binary whose marker sent event e (by
 * its location's number and the marker's address), read from the file:
 * for a process gone before sp-record read its strings. -1 if unknown.
 */
static ssize_t read_literal(struct bs_ctx *c, const struct sp_bs_event *e, uint64_t addr,
			    char *buf, size_t size)
{
	uint32_t id = (uint32_t)(e->cookie >> 8) & 0xffffff;
	uint64_t ip = e->hash[0], va, base;
	const struct bs_loc *l;
	ssize_t n = -1;
	int64_t off;
	int fd;
	Elf *el;

	if ((e->probe != SP_PR_SP_BEGIN && e->probe != SP_PR_SP_END) || !id || id > c->nlocs ||
	    !ip)
		return -1;
	l = &c->locs[id - 1];
	el = elf_open(l->bin, &fd);
	if (!el)
		return -1;
	va = offset_to_va(el, l->off);
	/* the marker's address is its own (or one past a breakpoint): the
	 * binary is loaded at a page boundary */
	base = (ip - va) & ~(uint64_t)4095;
	off = va != UINT64_MAX ? va_to_offset(el, addr - base, false) : -1;
	if (off >= 0)
		n = pread(fd, buf, size, off);
	elf_close(el, fd);
	return n;
}

/*
 * sp_spans_usdt_offsets(), cached by file (path, device, inode, mtime) and
 * probe: a forking runtime's children each get their links while they
 * wait, stopped, and the ELF notes need not be read again for each.
 */
static int offsets_cached(const char *path, const char *provider, const char *name,
			  const char *args, uint64_t *offs, int max)
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

	if (stat(path, &st) || max > 64)
		return sp_spans_usdt_offsets(path, provider, name, args, offs, max);
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
	n = sp_spans_usdt_offsets(path, provider, name, args, offs, max);
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

static int usdt_probe_read(const char *path, const char *provider, const char *name,
			   struct usdt_probe_cache *u)
{
	uint64_t base_addr = 0, fsize;
	Elf_Scn *scn = NULL;
	struct stat st;
	GElf_Shdr sh;
	size_t shstrndx;
	int fd, n = 0;
	Elf *e = elf_open(path, &fd);

	if (!e)
		return -1;
	if (elf_getshdrstrndx(e, &shstrndx) || gelf_getclass(e) != ELFCLASS64 || fstat(fd, &st))
		goto fail;
	fsize = (uint64_t)st.st_size;
	while ((scn = elf_nextscn(e, scn))) {
		const char *sn;

		if (gelf_getshdr(scn, &sh) && (sn = elf_strptr(e, shstrndx, sh.sh_name)) &&
		    !strcmp(sn, ".stapsdt.base"))
			base_addr = sh.sh_addr;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		const char *sn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(sn = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(sn, ".note.stapsdt"))
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *desc = (const char *)d->d_buf + doff, *end = desc + nh.n_descsz;
			const char *prov = desc + 24, *pname, *pargs;
			uint64_t pc, base, sem;
			int64_t fo, so = 0;

			if (nh.n_type != 3 || nh.n_descsz <= 24 || !memchr(prov, 0, end - prov))
				continue;
			pname = prov + strlen(prov) + 1;
			if (pname >= end || !memchr(pname, 0, end - pname))
				continue;
			pargs = pname + strlen(pname) + 1;
			if (strcmp(prov, provider) || strcmp(pname, name))
				continue;
			if (pargs >= end || !memchr(pargs, 0, end - pargs) || n >= SP_USDT_LOCS)
				goto fail;
			memcpy(&pc, desc, 8);
			memcpy(&base, desc + 8, 8);
			memcpy(&sem, desc + 16, 8);
			if (base_addr && base)
				pc += base_addr - base;	/* prelinked */
			fo = va_to_offset(e, pc, true);
			if (sem)
				so = va_to_offset(e, sem, false);
			if (fo < 0 || (uint64_t)fo >= fsize || so < 0 || (uint64_t)so >= fsize ||
			    sp_spans_usdt_parse_args(pargs, &u->spec[n]) < 0)
				goto fail;
			u->off[n] = (uint64_t)fo;
			u->ref[n] = (uint64_t)so;
			n++;
		}
	}
	elf_close(e, fd);
	return n ? n : -1;
fail:
	elf_close(e, fd);
	return -1;
}

static const struct usdt_probe_cache *usdt_probe(struct bs_ctx *c, const char *path,
						 const char *provider, const char *name)
{
	struct usdt_probe_cache *u;
	char probe[128];
	struct stat st;
	size_t i;

	if (stat(path, &st))
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
	u->n = usdt_probe_read(path, provider, name, u);
	return u->n > 0 ? u : NULL;
}

/*
 * USDT probe provider:name of bin for p, by a uprobe_multi link (every
 * location of the probe in one link; the cookie is ours, no libbpf spec):
 * semaphores (reference counters) and operands included, each location's
 * operands in the map 'usdt_specs' at its number (bits 8-31 of the
 * cookie). 0, or -1: use a USDT link (operands it cannot read, or the
 * kernel refuses these links: c->no_multi).
 */
static int attach_multi(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *prog,
			const char *bin, const char *provider, const char *name, uint32_t probe)
{
	union bpf_attr attr;
	struct sp_uprobe_multi_attr *u = (void *)&attr;
	const struct usdt_probe_cache *uc;
	uint64_t offs[SP_USDT_LOCS], cookies[SP_USDT_LOCS];
	bool refs = false;
	int n, i, fd;
	uint32_t id;

	if (c->no_multi)
		return -1;
	uc = usdt_probe(c, bin, provider, name);
	n = uc ? uc->n : -1;
	if (n <= 0)
		return -1;
	for (i = 0; i < n; i++) {
		struct bs_loc *l;

		offs[i] = uc->off[i];
		id = loc_id(c, bin, offs[i]);
		l = id ? &c->locs[id - 1] : NULL;
		if (!l || id >= SP_BS_MAX_SPECS)
			return -1;
		if (!l->spec && bpf_map__update_elem(c->skel->maps.usdt_specs, &id, sizeof(id),
						     &uc->spec[i], sizeof(uc->spec[i]), BPF_ANY))
			return -1;
		l->spec = true;
		refs |= uc->ref[i] != 0;
		cookies[i] = (uint64_t)p->gen << 32 | (uint64_t)id << 8 | probe;
	}
	memset(&attr, 0, sizeof(attr));
	u->prog_fd = bpf_program__fd(prog);
	u->attach_type = SP_BPF_TRACE_UPROBE_MULTI;
	u->path = (uintptr_t)bin;
	u->offsets = (uintptr_t)offs;
	u->ref_ctr_offsets = refs ? (uintptr_t)uc->ref : 0;
	u->cookies = (uintptr_t)cookies;
	u->cnt = n;
	u->pid = p->pid;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0) {
		if (errno == ESRCH)
			return 0;	/* gone: nothing to attach */
		if (errno == EINVAL || errno == EOPNOTSUPP || errno == E2BIG)
			c->no_multi = true;
		if (sp_verbose)
			sp_info("spans: uprobe_multi link for %s:%s in '%s' refused (%s): USDT links",
				provider, name, bin, strerror(errno));
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	att_add_link(p, probe, 0, bin, prog, (struct bs_link){ .fd = fd }, true, NULL);
	return 0;
}

/* USDT probe provider:name of bin for p: by a uprobe_multi link (prog
 * multi), else by libbpf's USDT link (prog usdt). */
static void attach_any(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *multi,
		       struct bpf_program *usdt, const char *bin, const char *provider,
		       const char *name, uint32_t probe)
{
	if (attach_multi(c, p, multi, bin, provider, name, probe))
		attach_usdt(c, p, usdt, bin, provider, name, probe);
}

static void attach_cmethod(struct bs_ctx *c, struct bs_proc *p, const char *bin)
{
	struct bpf_program *multi = c->skel->progs.on_ruby_method_multi;
	struct bpf_program *prog = c->skel->progs.on_ruby_method;

	attach_any(c, p, multi, prog, bin, "ruby", "cmethod__entry", SP_PR_RUBY_CMETHOD_ENTRY);
	attach_any(c, p, multi, prog, bin, "ruby", "cmethod__return", SP_PR_RUBY_CMETHOD_RETURN);
}

/* Attach what the modes ask for in binary bin (its USDT providers are
 * provs) to process p. */
static void attach_bin(struct bs_ctx *c, struct bs_proc *p, const char *bin, int provs)
{
	struct sp_spans *sk = c->skel;
	unsigned int m = c->o->modes;
	char hook[PATH_MAX + 64];
	bool any = false;

	if ((provs & SP_SPANS_RUBY) && (m & (SP_SPANS_RUBY | SP_SPANS_RUBY_C))) {
		if ((m & SP_SPANS_RUBY) && hook_for(c, p, SP_RT_RUBY, bin, hook, sizeof(hook))) {
			attach_hook(c, p, hook, SP_PR_RB_HOOK_CALL, false);
		} else if (m & SP_SPANS_RUBY) {
			attach_any(c, p, sk->progs.on_ruby_method_multi, sk->progs.on_ruby_method,
				   bin, "ruby", "method__entry", SP_PR_RUBY_METHOD_ENTRY);
			attach_any(c, p, sk->progs.on_ruby_method_multi, sk->progs.on_ruby_method,
				   bin, "ruby", "method__return", SP_PR_RUBY_METHOD_RETURN);
		}
		/*
		 * Ruby 3.1.2 crashes at start-up (monitor.rb, 8 runs in 80) when
		 * the cmethod probes are set while the activator's event hook is
		 * being installed: with both families, the cmethod probes are
		 * attached once the process's first method__entry shows that
		 * the hook is in (docs/spans.md).
		 */
		if ((m & SP_SPANS_RUBY_C) && (m & SP_SPANS_RUBY) && !p->attached)
			p->cm_pending = true;
		else if (m & SP_SPANS_RUBY_C)
			attach_cmethod(c, p, bin);
		attach_any(c, p, sk->progs.on_ruby_raise_multi, sk->progs.on_ruby_raise, bin, "ruby",
			   "raise", SP_PR_RUBY_RAISE);
		p->runtimes |= SP_SPANS_RUBY;
		snprintf(p->rlib[0], sizeof(p->rlib[0]), "%s", bin);
		any = true;
	}
	if ((provs & SP_SPANS_PY_HOOKABLE) && (m & SP_SPANS_PYTHON) &&
	    hook_for(c, p, SP_RT_PYTHON, bin, hook, sizeof(hook))) {
		/* no probes of its own: the hook's markers only, audit too */
		attach_hook(c, p, hook, SP_PR_PY_HOOK_CALL, m & SP_SPANS_PY_AUDIT);
		p->runtimes |= SP_SPANS_PYTHON;
		snprintf(p->rlib[1], sizeof(p->rlib[1]), "%s", bin);
		any = true;
	}
	if ((provs & SP_SPANS_PYTHON) && (m & (SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT))) {
		if ((m & SP_SPANS_PYTHON) && hook_for(c, p, SP_RT_PYTHON, bin, hook, sizeof(hook))) {
			attach_hook(c, p, hook, SP_PR_PY_HOOK_CALL, false);
		} else if (m & SP_SPANS_PYTHON) {
			attach_any(c, p, sk->progs.on_py_function_multi, sk->progs.on_py_function,
				   bin, "python", "function__entry", SP_PR_PY_FUNCTION_ENTRY);
			attach_any(c, p, sk->progs.on_py_function_multi, sk->progs.on_py_function,
				   bin, "python", "function__return", SP_PR_PY_FUNCTION_RETURN);
		}
		if (m & SP_SPANS_PY_AUDIT)
			attach_any(c, p, sk->progs.on_py_audit_multi, sk->progs.on_py_audit, bin,
				   "python", "audit", SP_PR_PY_AUDIT);
		p->runtimes |= SP_SPANS_PYTHON;
		snprintf(p->rlib[1], sizeof(p->rlib[1]), "%s", bin);
		any = true;
	}
	if ((provs & SP_SPANS_USDT) && (m & SP_SPANS_USDT)) {
		if (provs & SP_SPANS_USDT_REGS) {
			static const uint32_t marks[] = { SP_PR_SP_BEGIN, SP_PR_SP_END };

			attach_markers(c, p, bin, SP_SPANS_USDT_REGS_ARGS, marks, 2);
		} else {
			attach_any(c, p, sk->progs.on_sp_span_any_multi, sk->progs.on_sp_span, bin,
				   "stackpulse", "span__begin", SP_PR_SP_BEGIN);
			attach_any(c, p, sk->progs.on_sp_span_any_multi, sk->progs.on_sp_span, bin,
				   "stackpulse", "span__end", SP_PR_SP_END);
		}
		p->runtimes |= SP_SPANS_USDT;
		any = true;
	}
	(void)any;
}

static void attach_funcs(struct bs_ctx *c, struct bs_proc *p)
{
	size_t i;

	for (i = 0; i < c->nfuncs; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = c->funcs[i].name,
			    .bpf_cookie = (uint64_t)p->gen << 32 | i);
		struct bpf_link *l;

		pthread_mutex_lock(&c->bpf_lock);
		l = bpf_program__attach_uprobe_opts(c->skel->progs.on_func_entry, p->pid,
						    c->funcs[i].bin, c->funcs[i].skip, &uo);
		pthread_mutex_unlock(&c->bpf_lock);
		if (!l)
			continue;
		att_add(p, SP_PR_UPROBE_ENTRY, i, c->funcs[i].bin, c->skel->progs.on_func_entry, l);
		uo.retprobe = true;
		pthread_mutex_lock(&c->bpf_lock);
		l = bpf_program__attach_uprobe_opts(c->skel->progs.on_func_return, p->pid,
						    c->funcs[i].bin, c->funcs[i].skip, &uo);
		pthread_mutex_unlock(&c->bpf_lock);
		if (l)
			att_add(p, SP_PR_UPROBE_RETURN, i, c->funcs[i].bin,
				c->skel->progs.on_func_return, l);
	}
}

/* Provider bits of a binary, cached by path (an executable and the
 * libraries it needs: markers may be in any of them). */
#define PROVIDERS_CACHE	128
static int providers_cached(struct bs_ctx *c, const char *path)
{
	static struct {
		char path[PATH_MAX];
		dev_t dev;
		ino_t ino;
		int bits;
	} cache[PROVIDERS_CACHE];
	static unsigned int next;
	struct stat st;
	unsigned int i;
	int bits;

	if (stat(path, &st))
		return 0;
	for (i = 0; i < PROVIDERS_CACHE; i++)
		if (cache[i].ino == st.st_ino && cache[i].dev == st.st_dev &&
		    !strcmp(cache[i].path, path))
			return cache[i].bits;
	bits = sp_spans_elf_providers(path);
	if (bits < 0)
		bits = 0;
	i = next++ % PROVIDERS_CACHE;
	snprintf(cache[i].path, sizeof(cache[i].path), "%s", path);
	cache[i].dev = st.st_dev;
	cache[i].ino = st.st_ino;
	cache[i].bits = bits;
	return bits;
}

static bool has_bin(const struct bs_proc *p, const char *bin)
{
	size_t i;

	for (i = 0; i < p->natt; i++)
		if (!strcmp(p->att[i]->bin, bin))
			return true;
	return false;
}

static bool has_probe(const struct bs_proc *p, uint32_t probe)
{
	size_t i;

	for (i = 0; i < p->natt; i++)
		if (p->att[i]->probe == probe)
			return true;
	return false;
}

static void announce(struct bs_ctx *c, struct bs_proc *p)
{
	unsigned int m = c->o->modes;
	char mode[64];

	if ((p->runtimes & SP_SPANS_RUBY) && !(p->announced & SP_SPANS_RUBY)) {
		snprintf(mode, sizeof(mode), "%s%s%s",
			 m & SP_SPANS_RUBY ? "method" : "",
			 (m & SP_SPANS_RUBY) && (m & SP_SPANS_RUBY_C) ? "," : "",
			 m & SP_SPANS_RUBY_C ? "cmethod" : "");
		emit_runtime(c, p, SP_RT_RUBY, p->rlib[0], mode);
		p->announced |= SP_SPANS_RUBY;
	}
	if ((p->runtimes & SP_SPANS_PYTHON) && !(p->announced & SP_SPANS_PYTHON)) {
		bool audit = has_probe(p, SP_PR_PY_AUDIT) || has_probe(p, SP_PR_PY_HOOK_AUDIT);

		snprintf(mode, sizeof(mode), "%s%s%s",
			 m & SP_SPANS_PYTHON ? "profile" : "",
			 (m & SP_SPANS_PYTHON) && audit ? "," : "",
			 audit ? "audit" : "");
		emit_runtime(c, p, SP_RT_PYTHON, p->rlib[1], mode);
		p->announced |= SP_SPANS_PYTHON;
	}
	c->found |= p->runtimes;
}

/*
 * ld.so of process p has changed its libraries: the mapped ones that have
 * probes for the modes asked and none yet (their markers from now on;
 * what ran between the dlopen and now is missed). The runtime hooks
 * (runtime) have theirs attached at exec.
 */
static void scan_libs(struct bs_ctx *c, struct bs_proc *p)
{
	const char *rt = sp_spans_runtime_dir(c->o);
	char name[64], line[PATH_MAX + 256];
	bool any = false;
	FILE *f;

	snprintf(name, sizeof(name), "/proc/%u/maps", p->pid);
	f = fopen(name, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char perms[8], *path = strchr(line, '/'), *nl, *base;
		int provs;

		if (!path || sscanf(line, "%*x-%*x %7s", perms) != 1 || !strchr(perms, 'x'))
			continue;
		nl = strchr(path, '\n');
		if (nl)
			*nl = 0;
		base = strrchr(path, '/') + 1;
		if (!strstr(base, ".so") || !strcmp(path, p->exe) || has_bin(p, path) ||
		    (rt && !strncmp(path, rt, strlen(rt))))
			continue;
		provs = providers_cached(c, path);
		if (!(provs & SP_SPANS_USDT))
			continue;
		attach_bin(c, p, path, provs & (SP_SPANS_USDT | SP_SPANS_USDT_REGS));
		c->late_libs++;
		any = true;
	}
	if (f)
		fclose(f);
	if (any)
		announce(c, p);
}

static void attach_dl(struct bs_ctx *c, struct bs_proc *p, bool scan);
static void attach_dl_later(struct bs_ctx *c, struct bs_proc *p);

static void on_dlopen(struct bs_ctx *c, const struct sp_bs_event *e)
{
	struct bs_proc *p = proc_get(c, e->pid);

	c->dlopens++;
	if (p && !p->exited)
		scan_libs(c, p);
}

/* Attach everything for the image process p runs now. */
static void attach_image(struct bs_ctx *c, struct bs_proc *p)
{
	char exe[PATH_MAX], link[64], line[PATH_MAX + 256], (*libs)[4096];
	ssize_t n;
	int nlibs, i;
	FILE *f;

	snprintf(link, sizeof(link), "/proc/%u/exe", p->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;		/* gone */
	exe[n] = 0;
	snprintf(p->exe, sizeof(p->exe), "%s", exe);
	p->nmap = 0;
	if (c->o->modes) {
		libs = sp_xmalloc(16 * sizeof(*libs));
		attach_bin(c, p, exe, providers_cached(c, exe));
		/* Libraries: mapped ones (a running process), else what the
		 * executable needs (stopped at exec: nothing is mapped yet). */
		nlibs = 0;
		snprintf(link, sizeof(link), "/proc/%u/maps", p->pid);
		f = fopen(link, "re");
		while (f && fgets(line, sizeof(line), f) && nlibs < 16) {
			char *path = strchr(line, '/'), *base, *nl;

			if (!path)
				continue;
			nl = strchr(path, '\n');
			if (nl)
				*nl = 0;
			base = strrchr(path, '/') + 1;
			if (!strcmp(path, exe) && p->nmap < 8) {
				unsigned long long lo, hi, off;

				if (sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) == 3) {
					p->map[p->nmap].start = lo;
					p->map[p->nmap].end = hi;
					p->map[p->nmap].off = off;
					p->nmap++;
				}
				continue;
			}
			/* <stackpulse/span.h> markers may be in any library */
			if (!runtime_lib_name(base) &&
			    !((c->o->modes & SP_SPANS_USDT) && strstr(base, ".so")))
				continue;
			for (i = 0; i < nlibs; i++)
				if (!strcmp(libs[i], path))
					break;
			if (i == nlibs)
				snprintf(libs[nlibs++], sizeof(libs[0]), "%s", path);
		}
		if (f)
			fclose(f);
		/* stopped at exec, only the executable and ld.so are mapped */
		if (!p->attached) {
			char (*need)[4096] = sp_xmalloc(16 * sizeof(*need));
			int nn = sp_spans_needed_libs(exe, c->o->modes & SP_SPANS_USDT, need, 16), k;

			for (k = 0; k < nn && nlibs < 16; k++) {
				for (i = 0; i < nlibs; i++)
					if (!strcmp(libs[i], need[k]))
						break;
				if (i == nlibs)
					memcpy(libs[nlibs++], need[k], sizeof(need[k]));
			}
			free(need);
		}
		for (i = 0; i < nlibs; i++)
			attach_bin(c, p, libs[i], providers_cached(c, libs[i]));
		free(libs);
	}
	attach_funcs(c, p);
	announce(c, p);
}

/* A forked child: the same image as its parent; with probes: attach the
 * same probes (the child is stopped). */
static void attach_like(struct bs_ctx *c, struct bs_proc *child, const struct bs_proc *parent,
			bool probes)
{
	struct sp_spans *sk = c->skel;
	size_t i;

	for (i = 0; probes && i < parent->natt; i++) {
		const struct bs_att *a = parent->att[i];
		struct bpf_program *prog;
		struct bpf_link *l;

		if (a->probe == SP_PR_UPROBE_ENTRY || a->probe == SP_PR_UPROBE_RETURN) {
			LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = c->funcs[a->func].name,
				    .bpf_cookie = (uint64_t)child->gen << 32 | a->func,
				    .retprobe = a->probe == SP_PR_UPROBE_RETURN);

			prog = uo.retprobe ? sk->progs.on_func_return : sk->progs.on_func_entry;
			pthread_mutex_lock(&c->bpf_lock);
			l = bpf_program__attach_uprobe_opts(prog, child->pid, a->bin,
							    c->funcs[a->func].skip, &uo);
			pthread_mutex_unlock(&c->bpf_lock);
		} else if (a->group) {	/* markers in one link: the same, once */
			uint32_t probes[16];
			size_t j;
			int n = 0;

			if (a->link.fd < 0)
				continue;	/* its group's link is another's */
			for (j = i; j < parent->natt && n < 16; j++)
				if (parent->att[j]->group == a->group)
					probes[n++] = parent->att[j]->probe;
			attach_markers(c, child, a->bin, a->args, probes, n);
			continue;
		} else if (a->multi) {	/* a uprobe_multi link: the same */
			const char *prov = probe_names[a->probe];
			const char *name = strchr(prov, ':') + 1;
			char provider[16];

			snprintf(provider, sizeof(provider), "%.*s", (int)(name - 1 - prov), prov);
			attach_multi(c, child, a->prog, a->bin, provider, name, a->probe);
			continue;
		} else {	/* libbpf's USDT link */
			const char *prov, *name = strchr(probe_names[a->probe], ':') + 1;
			char provider[16];

			prov = probe_names[a->probe];
			snprintf(provider, sizeof(provider), "%.*s", (int)(name - 1 - prov), prov);
			attach_usdt_how(c, child, a->prog, a->bin, provider, name, a->probe, true);
			continue;
		}
		if (l)
			att_add(child, a->probe, a->func, a->bin, prog, l);
	}
	memcpy(child->exe, parent->exe, sizeof(child->exe));
	memcpy(child->map, parent->map, sizeof(child->map));
	child->nmap = parent->nmap;
	child->runtimes = parent->runtimes;
	child->cm_pending = parent->cm_pending;
	child->attached = parent->attached;
	memcpy(child->rlib, parent->rlib, sizeof(child->rlib));
	if (probes)	/* not a vfork child: it runs no code of the image */
		announce(c, child);
}

/* p runs an image without probes for the modes asked: let BPF release
 * later execs of the same file (dev, inode, mtime) without stopping them. */
static void mark_plain(struct bs_ctx *c, struct bs_proc *p)
{
	struct sp_bs_imgkey k = { 0 };
	uint32_t one = 1;
	char link[64];
	struct stat st;

	if (p->runtimes || p->natt || c->nfuncs)
		return;
	snprintf(link, sizeof(link), "/proc/%u/exe", p->pid);
	if (stat(link, &st))
		return;
	k.ino = st.st_ino;
	k.dev = major(st.st_dev) << 20 | minor(st.st_dev);
	k.mtime = st.st_mtim.tv_sec;
	bpf_map__update_elem(c->skel->maps.images, &k, sizeof(k), &one, sizeof(one), BPF_ANY);
}

/* Let a process BPF stopped go: continued first, then no longer held (so
 * that the guardian continues it should sp-record die in between). */
static void cont(struct bs_ctx *c, uint32_t pid)
{
	if (kill(pid, SIGCONT) && errno != ESRCH)
		sp_warn("pid %u: cannot continue: %s", pid, strerror(errno));
	bpf_map__delete_elem(c->skel->maps.held, &pid, sizeof(pid), 0);
}

static ssize_t read_remote(uint32_t pid, uint64_t addr, char *buf, size_t size)
{
	struct iovec local = { buf, size }, remote = { (void *)addr, size };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n <= 0) {
		/* up to the end of the page only */
		size_t room = 4096 - (addr & 4095);

		remote.iov_len = local.iov_len = room < size ? room : size;
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	}
	return n;
}

/*
 * What a process's marks may make sp-record keep, whatever its span rings
 * say (docs/spans.md): strings looked up by address, per process and new
 * ones in all, and fibers (with their open-span counts) per process.
 */
#define SP_SPANS_ADDR_STRS_PER_PROC	16384u
#define SP_SPANS_ADDR_STRS_LIVE		262144u	/* of the processes known */
#define SP_SPANS_ADDR_STRS_MAX		65536u	/* new strings, in all */
#define SP_SPANS_FIBERS_PER_PROC	65536u
#define SP_SPANS_FIBERS_LIVE		262144u	/* of the processes known */

/* p reached a bound: said once. */
static void proc_capped(struct bs_proc *p, const char *what, unsigned int bound)
{
	char name[80];

	if (p->capped)
		return;
	p->capped = true;
	sp_span_rings_comm(p->pid, name, sizeof(name));
	sp_warn("spans: pid %u (%s): more than %u %s: later ones are not kept (its marks "
		"go on without them)", p->pid, name, bound, what);
}

/* A string BPF could not read (a page not resident yet): read it with
 * process_vm_readv(), which faults the page in, so BPF reads it next time.
 * Cached by address: such strings are literals of the binary (or names a
 * hook made before the recording), and so is an address that cannot be
 * read. Span ring marks carry any address their process writes: bounded. */
static uint64_t str_from_user(struct bs_ctx *c, struct bs_proc *p, uint64_t addr,
			      const struct sp_bs_event *e)
{
	uint64_t key = sp_hash_mix(addr, UINT64_MAX), *id, sid, before;
	char buf[SP_BS_STRLEN];
	unsigned int i;
	ssize_t n;

	id = sp_u64map_get(&p->strs, key);
	if (id)
		return *id;
	if (p->by_addr >= SP_SPANS_ADDR_STRS_PER_PROC || c->addr_live >= SP_SPANS_ADDR_STRS_LIVE ||
	    c->addr_strs >= SP_SPANS_ADDR_STRS_MAX) {
		proc_capped(p, "strings read by address", p->by_addr >= SP_SPANS_ADDR_STRS_PER_PROC ?
			    SP_SPANS_ADDR_STRS_PER_PROC : c->addr_live >= SP_SPANS_ADDR_STRS_LIVE ?
			    SP_SPANS_ADDR_STRS_LIVE : SP_SPANS_ADDR_STRS_MAX);
		return 0;
	}
	p->by_addr++;
	c->addr_live++;
	n = read_remote(p->pid, addr, buf, sizeof(buf) - 1);
	/* A forked child that is gone already: its parent has the same bytes. */
	if (n <= 0 && p->ppid)
		n = read_remote(p->ppid, addr, buf, sizeof(buf) - 1);
	/* Both gone (short-lived): a literal of the executable, read the file. */
	for (i = 0; n <= 0 && i < p->nmap; i++) {
		int fd;

		if (addr < p->map[i].start || addr >= p->map[i].end)
			continue;
		fd = open(p->exe, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		n = pread(fd, buf, sizeof(buf) - 1, addr - p->map[i].start + p->map[i].off);
		close(fd);
	}
	/* A literal of a library: its marker said where the library was. */
	if (n <= 0 && e)
		n = read_literal(c, e, addr, buf, sizeof(buf) - 1);
	if (n <= 0) {
		sp_u64map_put(&p->strs, key, 0);
		return 0;
	}
	buf[n] = 0;
	before = sp_defs_nstrings(sp_writer_defs(c->out->w));
	sid = sp_writer_str(c->out->w, buf, strlen(buf));
	if (sp_defs_nstrings(sp_writer_defs(c->out->w)) > before)
		c->addr_strs++;
	sp_u64map_put(&p->strs, key, sid);
	return sid;
}

/*
 * A fork child has its parent's memory as it was at the fork, which is
 * where its events stand in the ring: what the parent's strings were at
 * their addresses then, the child's are (runtime hooks' names are made
 * once and never freed; a child that exits before it is read leaves no
 * memory to read them from).
 */
static void copy_strs(struct bs_ctx *c, struct bs_proc *child, const struct bs_proc *parent)
{
	uint64_t k, v;
	size_t i;

	child->by_addr = parent->by_addr;	/* counted in the bounds as its own */
	c->addr_live += parent->by_addr;
	for (i = 0; sp_u64map_next(&parent->strs, &i, &k, &v);)
		sp_u64map_put(&child->strs, k, v);
}

/* String id of string i of an event, 0 if none or unknown. */
static uint64_t str_id(struct bs_ctx *c, struct bs_proc *p, const struct sp_bs_event *e,
		       size_t size, int i)
{
	uint64_t key, *id, sid;

	if (!e->addr[i])
		return 0;
	if (e->flags & SP_BSF_UNREAD(i))
		return str_from_user(c, p, e->addr[i], e);
	key = sp_hash_mix(e->addr[i], e->hash[i]);
	if ((e->flags & SP_BSF_SENT(i)) && size >= sizeof(*e)) {
		size_t len = e->len[i];

		if (len >= SP_BS_STRLEN)
			len = SP_BS_STRLEN - 1;
		sid = sp_writer_str(c->out->w, e->str[i], strnlen(e->str[i], len));
		if (sid)
			sp_u64map_put(&p->strs, key, sid);
		return sid;
	}
	id = sp_u64map_get(&p->strs, key);
	return id ? *id : 0;
}

static void fibers_release(struct bs_proc *p)
{
	p->fibers = false;
	sp_u64map_release(&p->fib_cur);
	sp_u64map_release(&p->fib_root);
	sp_u64map_release(&p->fib_known);
}

/* p's open-span counts and fibers go (an exec, its end). */
static void spans_state_release(struct bs_ctx *c, struct bs_proc *p)
{
	c->fibers_live -= p->depth.n + p->fib_known.n;
	sp_u64map_release(&p->depth);
	fibers_release(p);
}

/* The key of a thread's open-span count: per fiber once p has fibers. */
static uint64_t depth_key(const struct bs_proc *p, uint32_t tid)
{
	uint64_t *f;

	if (!p->fibers)
		return tid;
	f = sp_u64map_get(&p->fib_cur, tid);
	return f && *f ? sp_hash_mix(tid, *f) : tid;
}

/*
 * stackpulse:rb__fiber (from, to, fresh): written as a fiber switch record
 * with the thread's root fiber as 0. The hook knows the root only as "the
 * first fiber left"; its id is the first fiber come back to that was not
 * seen starting.
 */
static int on_fiber(struct bs_ctx *c, struct bs_proc *p, const struct sp_bs_event *e)
{
	struct sp_record r = { .kind = SP_REC_FIBER_SWITCH };
	uint64_t from = e->addr[0], to = e->addr[1], *root, known;
	uint64_t kept = p->fib_known.n + p->depth.n;
	bool fresh = e->addr[2] != 0;

	p->fibers = true;
	root = sp_u64map_get(&p->fib_root, e->tid);
	if (root && from == *root)
		from = 0;
	known = to ? sp_u64map_get(&p->fib_known, sp_hash_mix(e->tid, to)) != NULL : true;
	if (root && to == *root) {
		to = 0;
	} else if (fresh && (p->fib_known.n >= SP_SPANS_FIBERS_PER_PROC ||
			     c->fibers_live >= SP_SPANS_FIBERS_LIVE)) {
		proc_capped(p, "fibers", p->fib_known.n >= SP_SPANS_FIBERS_PER_PROC ?
			    SP_SPANS_FIBERS_PER_PROC : SP_SPANS_FIBERS_LIVE);
	} else if (fresh) {
		sp_u64map_put(&p->fib_known, sp_hash_mix(e->tid, to), 1);
	} else if (!root && !known) {
		sp_u64map_put(&p->fib_root, e->tid, to);
		to = 0;
	}
	sp_u64map_put(&p->fib_cur, e->tid, to);
	if (fresh)	/* a fiber id reused: its old spans are gone */
		sp_u64map_del(&p->depth, sp_hash_mix(e->tid, to));
	c->fibers_live += p->fib_known.n + p->depth.n - kept;
	r.fiber_switch.time = e->time_ns;
	r.fiber_switch.pid = e->pid;
	r.fiber_switch.tid = e->tid;
	r.fiber_switch.from = from;
	r.fiber_switch.to = to;
	r.fiber_switch.flags = fresh ? SP_FIBER_NEW : 0;
	c->fiber_switches++;
	if (c->out->emit(c->out->ctx, &r)) {
		c->err = -1;
		return -1;
	}
	return 0;
}

/* A runtime hook's new name: its strings, known by address from now on
 * (the hook never frees or changes them). */
static int on_name(struct bs_ctx *c, const struct sp_bs_event *e, size_t size)
{
	struct bs_proc *p = proc_get(c, e->pid);
	int i;

	if (!p)
		p = proc_new(c, e->pid);
	p->hits[SP_PR_RT_NAME]++;
	for (i = 0; i < SP_BS_NSTR && size >= sizeof(*e); i++) {
		size_t len = e->len[i];
		uint64_t sid;

		if (!e->addr[i] || !(e->flags & SP_BSF_SENT(i)))
			continue;
		if (len >= SP_BS_STRLEN)
			len = SP_BS_STRLEN - 1;
		sid = sp_writer_str(c->out->w, e->str[i], strnlen(e->str[i], len));
		if (sid)
			sp_u64map_put(&p->strs, sp_hash_mix(e->addr[i], UINT64_MAX), sid);
	}
	return 0;
}

static int on_proc_event(struct bs_ctx *c, const struct sp_bs_event *e)
{
	struct bs_proc *p = proc_get(c, e->pid), *parent;

	switch (e->kind) {
	case SP_BS_FORK:
		if (p) {	/* pid reuse of an exited one */
			sp_u64map_del(&c->by_pid, e->pid);
		}
		p = proc_new(c, e->pid);
		p->ppid = e->ppid;
		p->gen = (uint32_t)e->cookie;
		parent = proc_get(c, e->ppid);
		/* BPF stops a child when its parent has probes (if the kernel
		 * can: bpf_send_signal_task), never a vfork child */
		if (parent)
			attach_like(c, p, parent, parent->natt && !(e->flags & SP_BSF_SHARED_MM));
		if (parent && !(e->flags & SP_BSF_SHARED_MM))
			copy_strs(c, p, parent);
		if (p->natt)
			set_tracked(c, p);
		/* its own ld.so probe: a vfork child gets one when it execs */
		if (!(e->flags & SP_BSF_SHARED_MM))
			attach_dl_later(c, p);
		c->forks++;
		if (e->flags & SP_BSF_STOPPED)
			c->stopped_forks++;
		break;
	case SP_BS_EXEC:
		if (!p)
			p = proc_new(c, e->pid);
		emit_health(c, p, e->time_ns, true);
		memset(p->hits, 0, sizeof(p->hits));	/* a new image's probes */
		/* stale from now on (generation): the reaper detaches them */
		detach_all(c, p);
		p->gen = (uint32_t)e->cookie;
		p->runtimes = 0;
		p->announced = 0;
		p->py_active = false;
		p->cm_pending = false;
		p->ppid = 0;
		spans_state_release(c, p);
		if (e->flags & SP_BSF_PLAIN) {
			/* known without probes: BPF did not stop it */
			c->plain_execs++;
			p->exe[0] = 0;
			p->nmap = 0;
			attach_dl_later(c, p);
			break;
		}
		c->stopped_execs++;
		attach_image(c, p);
		attach_dl(c, p, false);
		if (p->natt) {
			set_tracked(c, p);
			c->probed_images++;
		} else {
			mark_plain(c, p);
		}
		break;
	case SP_BS_EXIT:
		if (!p)
			return 0;
		emit_health(c, p, e->time_ns, false);
		detach_all(c, p);
		p->exited = true;
		p->gone_ns = sp_now_mono_ns();
		sp_grow(&c->gone, &c->cgone, c->ngone + 1, sizeof(*c->gone));
		c->gone[c->ngone++] = p;
		return 0;
	}
	if (e->flags & SP_BSF_STOPPED)
		cont(c, e->pid);
	return 0;
}

static int on_event(void *ctx, void *data, size_t size);

/* The kind of event a runtime hook's mark stands for; 0: not a hook's. */
static uint32_t hook_mark_kind(uint32_t probe)
{
	switch (probe) {
	case SP_PR_RB_HOOK_CALL:
	case SP_PR_PY_HOOK_CALL:
		return SP_BS_START;
	case SP_PR_RB_HOOK_RETURN:
	case SP_PR_PY_HOOK_RETURN:
		return SP_BS_STOP;
	case SP_PR_PY_HOOK_RAISE:
		return SP_BS_RAISE;
	case SP_PR_RB_HOOK_FIBER:
		return SP_BS_FIBER;
	}
	return 0;
}

/* One entry of a span ring: the event its marker would have sent. */
static int ring_put(void *ctx, uint32_t pid, uint32_t tid, const struct sp_ring_entry *re)
{
	struct bs_ctx *c = ctx;
	struct sp_bs_event ev, *e = &ev;
	int i;

	/* the head only (strings by address): a whole event is 500 bytes */
	memset(e, 0, SP_BS_HEAD_SIZE);
	e->kind = hook_mark_kind(re->probe);
	if (!e->kind) {
		c->rings.bad++;
		return 0;
	}
	e->time_ns = re->time;
	e->probe = re->probe;
	e->pid = pid;
	e->tid = tid;
	e->line = re->line;
	for (i = 0; i < SP_BS_NSTR; i++) {
		e->addr[i] = re->arg[i];
		if (e->kind != SP_BS_FIBER)
			e->flags |= SP_BSF_UNREAD(i);
	}
	return on_event(c, e, SP_BS_HEAD_SIZE);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct bs_ctx *c = ctx;
	const struct sp_bs_event *e = data;
	struct sp_record r = { 0 };
	struct bs_proc *p;

	if (size < SP_BS_HEAD_SIZE)
		return 0;
	if (c->releasing) {
		if (e->flags & SP_BSF_STOPPED)
			cont(c, e->pid);
		return 0;
	}
	if (e->kind == SP_BS_NAME)
		return on_name(c, e, size);
	if (e->kind >= SP_BS_FORK && e->kind <= SP_BS_EXIT)
		return on_proc_event(c, e);
	if (e->kind == SP_BS_DLOPEN) {
		on_dlopen(c, e);
		return 0;
	}
	p = proc_get(c, e->pid);
	if (!p)
		p = proc_new(c, e->pid);	/* raced with our own bookkeeping */
	if (e->probe < SP_PR_MAX)
		p->hits[e->probe]++;
	if (e->kind == SP_BS_FIBER)
		return on_fiber(c, p, e);
	if (e->kind == SP_BS_RING) {
		sp_span_rings_add(&c->rings, e->pid, e->tid, e->addr[0], e->time_ns, e->line != 0);
		return 0;
	}
	if (e->kind == SP_BS_RING_WAKE) {
		sp_span_rings_wake(&c->rings, e->pid, e->tid, e->addr[0], e->time_ns);
		return 0;
	}
	if (e->kind == SP_BS_CHUNK) {
		if (size < SP_BS_CHUNK_SIZE)
			return 0;
		if (sp_span_rings_chunk(&c->rings, e->pid, e->tid, e->addr[0], e->cookie,
					(uint32_t)e->line, e->flags, e->time_ns,
					(const void *)((const char *)e + SP_BS_HEAD_SIZE),
					ring_put, c))
			return -1;
		return 0;
	}
	if (e->kind == SP_BS_AUDIT) {
		r.kind = SP_REC_EVENT;
		r.event.time = e->time_ns;
		r.event.pid = e->pid;
		r.event.tid = e->tid;
		r.event.kind = SP_EV_AUDIT;
		r.event.nfields = 3;
		r.event.field[0].u = str_id(c, p, e, size, 0);
		r.event.field[1].u = str_id(c, p, e, size, 1);
		r.event.field[2].u = SP_RT_PYTHON;
		c->audits++;
		if (!p->py_active && r.event.field[0].u &&
		    r.event.field[0].u == sp_writer_strz(c->out->w, "stackpulse.activated"))
			p->py_active = true;
	} else {
		struct sp_span_mark *m = &r.mark;

		r.kind = e->kind == SP_BS_START ? SP_REC_SPAN_START :
			 e->kind == SP_BS_STOP ? SP_REC_SPAN_STOP : SP_REC_SPAN_RAISE;
		m->time = e->time_ns;
		m->pid = e->pid;
		m->tid = e->tid;
		m->line = e->line > 0 ? (uint64_t)e->line : 0;
		switch (e->probe) {
		case SP_PR_RUBY_CMETHOD_ENTRY:
		case SP_PR_RUBY_CMETHOD_RETURN:
			m->flags = SP_MARK_CMETHOD;
			/* fall through */
		case SP_PR_RUBY_METHOD_ENTRY:
		case SP_PR_RUBY_METHOD_RETURN:
		case SP_PR_RUBY_RAISE:
		case SP_PR_RB_HOOK_CALL:
		case SP_PR_RB_HOOK_RETURN:
			m->runtime = SP_RT_RUBY;
			break;
		case SP_PR_PY_FUNCTION_ENTRY:
		case SP_PR_PY_FUNCTION_RETURN:
		case SP_PR_PY_HOOK_CALL:
		case SP_PR_PY_HOOK_RETURN:
		case SP_PR_PY_HOOK_RAISE:
			m->runtime = SP_RT_PYTHON;
			break;
		case SP_PR_SP_BEGIN:
		case SP_PR_SP_END:
			m->runtime = SP_RT_USDT;
			break;
		default:
			m->runtime = SP_RT_UPROBE;
		}
		if (m->runtime == SP_RT_UPROBE) {
			if (e->cookie < c->nfuncs) {
				struct bs_func *f = &c->funcs[e->cookie];

				m->klass = f->base_id;
				m->method = f->name_id;
				m->file = f->bin_id;
			}
		} else {
			m->klass = str_id(c, p, e, size, 0);
			m->method = str_id(c, p, e, size, 1);
			m->file = str_id(c, p, e, size, 2);
		}
		/* a frame unwound: its file and line, no class, no message */
		if (e->probe == SP_PR_PY_HOOK_RAISE)
			m->method = 0;
		if (e->kind == SP_BS_RAISE) {
			c->raises++;
		} else {
			uint64_t key = depth_key(p, e->tid), *d = sp_u64map_get(&p->depth, key);

			if (p->cm_pending && (e->probe == SP_PR_RUBY_METHOD_ENTRY ||
					      e->probe == SP_PR_RB_HOOK_CALL)) {
				p->cm_pending = false;
				attach_cmethod(c, p, p->rlib[0]);
			}
			if (e->kind == SP_BS_START) {
				m->depth = (d ? *d : 0) + 1;
				/* a count per thread, and per fiber it ran (the
				 * fibers are the process's word: bounded) */
				if (d) {
					*d = m->depth;
				} else if (key == e->tid || (p->depth.n < SP_SPANS_FIBERS_PER_PROC &&
							    c->fibers_live < SP_SPANS_FIBERS_LIVE)) {
					sp_u64map_put(&p->depth, key, m->depth);
					c->fibers_live++;	/* a new key */
				} else {
					proc_capped(p, "fibers", SP_SPANS_FIBERS_PER_PROC);
				}
			} else if (!d || !*d) {
				/* entered before the recording (or the activator) */
				c->orphans++;
				return 0;
			} else {
				m->depth = (*d)--;
			}
			c->spans++;
		}
	}
	if (c->out->emit(c->out->ctx, &r)) {
		c->err = -1;
		return -1;
	}
	return 0;
}

static uint64_t lost_total(struct bs_ctx *c)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	uint64_t *v, sum = 0;
	uint32_t zero = 0;

	if (ncpu <= 0)
		return 0;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return 0;
	if (!bpf_map__lookup_elem(c->skel->maps.lost, &zero, sizeof(zero), v,
				  sizeof(*v) * ncpu, 0))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

/* Span marks of process pid lost from its span rings since: a lost record
 * of its own. */
static int emit_ring_lost(void *ctx, uint32_t pid, uint64_t n, uint64_t since)
{
	struct bs_ctx *c = ctx;
	struct sp_record r = { .kind = SP_REC_LOST };

	r.lost.time = sp_now_mono_ns();
	r.lost.start = since;
	r.lost.what = SP_LOST_SPANS;
	r.lost.count = n;
	r.lost.pid = pid;
	return c->out->emit(c->out->ctx, &r);
}

static int emit_lost(struct bs_ctx *c, uint64_t now)
{
	uint64_t total = lost_total(c);
	struct sp_record r = { .kind = SP_REC_LOST };

	if (sp_span_rings_take_lost(&c->rings, now, emit_ring_lost, c))
		return -1;
	if (total <= c->lost_seen)
		return 0;
	r.lost.time = now;
	r.lost.start = c->lost_since;
	r.lost.what = SP_LOST_SPANS;
	r.lost.count = total - c->lost_seen;
	c->lost_seen = total;
	c->lost_since = now;
	return c->out->emit(c->out->ctx, &r);
}

/* Resolve the --span-func options into functions. */
/*
 * Where a --span-func uprobe goes in function st of e: past an endbr64
 * (the first instruction of every function in a CET build, -fcf-protection)
 * when a "push %reg" follows. The kernel emulates a push (and branches and
 * nops) but runs any other instruction by single-stepping it out of line,
 * and a single step on this VM costs about 13 µs (a debug trap the
 * hypervisor takes) against about 1.4 µs for the whole span. endbr64 does
 * nothing; the return address is still on top of the stack after it, as
 * the return probe needs.
 */
static unsigned int entry_skip(Elf *e, const GElf_Sym *st)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	Elf_Scn *scn = elf_getscn(e, st->st_shndx);
	const unsigned char *b;
	Elf_Data *d;
	GElf_Shdr sh;
	uint64_t at;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
	    st->st_value < sh.sh_addr || (d = elf_getdata(scn, NULL)) == NULL)
		return 0;
	at = st->st_value - sh.sh_addr;
	if (at + 6 > d->d_size)
		return 0;
	b = (const unsigned char *)d->d_buf + at;
	if (memcmp(b, endbr64, 4))
		return 0;
	if ((b[4] >= 0x50 && b[4] <= 0x57) || (b[4] == 0x41 && b[5] >= 0x50 && b[5] <= 0x57))
		return 4;
	return 0;
}

static int resolve_funcs(struct bs_ctx *c)
{
	char bin[PATH_MAX], pat[512], full[PATH_MAX * 2 + 64];
	unsigned int k;

	for (k = 0; k < c->o->nfuncs; k++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		size_t matched = 0;
		int fd;
		Elf *e;

		if (sp_spans_split_func(c->o->funcs[k], bin, sizeof(bin), pat, sizeof(pat)))
			return sp_error("invalid --span-func '%s'", c->o->funcs[k]);
		if (!strchr(bin, '/')) {
			/* a command on PATH, else a library name libbpf resolves */
			bool ok = sp_launch_find(bin, full, sizeof(full));

			if (!ok) {
				static const char *const dirs[] = {
					"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					"/usr/local/lib", "/lib", "/usr/lib" };

				for (size_t d = 0; d < 5 && !ok; d++) {
					snprintf(full, sizeof(full), "%s/%s", dirs[d], bin);
					ok = is_file(full);
				}
			}
			if (!ok)
				return sp_error("--span-func '%s': binary '%s' not found",
						c->o->funcs[k], bin);
		} else if (!realpath(bin, full)) {
			return sp_error_errno("--span-func '%s': cannot open '%s'", c->o->funcs[k],
					      bin);
		}
		e = elf_open(full, &fd);
		if (!e)
			return sp_error_errno("--span-func '%s': cannot read ELF file '%s'",
					      c->o->funcs[k], full);
		/* .symtab if present, else .dynsym */
		for (int pass = 0; pass < 2 && !matched; pass++) {
			scn = NULL;
			while ((scn = elf_nextscn(e, scn))) {
				Elf_Data *d;
				GElf_Sym st;
				size_t j;

				if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
				    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB))
					continue;
				d = elf_getdata(scn, NULL);
				for (j = 0; d && j < sh.sh_size / sh.sh_entsize; j++) {
					const char *name;
					size_t q;
					bool dup = false;

					if (!gelf_getsym(d, j, &st) || st.st_shndx == SHN_UNDEF ||
					    GELF_ST_TYPE(st.st_info) != STT_FUNC || !st.st_value)
						continue;
					name = elf_strptr(e, sh.sh_link, st.st_name);
					if (!name || fnmatch(pat, name, 0))
						continue;
					for (q = 0; q < c->nfuncs; q++)
						if (!strcmp(c->funcs[q].name, name) &&
						    !strcmp(c->funcs[q].bin, full))
							dup = true;
					if (dup)
						continue;
					if (++matched > SP_SPANS_MAX_MATCHES) {
						elf_close(e, fd);
						return sp_error("--span-func '%s': more than %d "
								"functions match", c->o->funcs[k],
								SP_SPANS_MAX_MATCHES);
					}
					sp_grow(&c->funcs, &c->cfuncs, c->nfuncs + 1,
						sizeof(*c->funcs));
					c->funcs[c->nfuncs].bin = sp_xstrdup(full);
					c->funcs[c->nfuncs].name = sp_xstrdup(name);
					c->funcs[c->nfuncs].skip = entry_skip(e, &st);
					c->nfuncs++;
				}
			}
		}
		elf_close(e, fd);
		if (!matched)
			return sp_error("--span-func '%s': no function '%s' in '%s'",
					c->o->funcs[k], pat, full);
	}
	return 0;
}

/* Whether an executable (or the interpreter of a script) is a runtime or
 * has <stackpulse/span.h> markers for the modes asked; depth: #! levels. */
/* Provider bits of a file that the modes have something for. */
static bool providers_match(int bits, unsigned int modes)
{
	if ((bits & SP_SPANS_PY_HOOKABLE) && (modes & SP_SPANS_PYTHON))
		return true;
	return bits & modes & ~(SP_SPANS_USDT_REGS | SP_SPANS_PY_HOOKABLE);
}

static bool file_has_probes(unsigned int modes, const char *path, int depth)
{
	char head[256], (*libs)[4096], *nl, *interp, *arg;
	bool found = false;
	ssize_t n;
	int fd, i, nlibs;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n < 4)
		return false;
	head[n] = 0;
	if (head[0] == '#' && head[1] == '!') {
		if (depth > 2)
			return false;
		nl = strchr(head, '\n');
		if (nl)
			*nl = 0;
		interp = strtok(head + 2, " \t");
		arg = interp ? strtok(NULL, " \t") : NULL;
		if (!interp)
			return false;
		/* #!/usr/bin/env ruby: the name says it */
		if (arg && !strcmp(strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp, "env"))
			return strstr(arg, "ruby") || strstr(arg, "python");
		return file_has_probes(modes, interp, depth + 1);
	}
	if (memcmp(head, "\177ELF", 4))
		return false;
	if (providers_match(providers_cached(NULL, path), modes))
		return true;
	libs = sp_xmalloc(16 * sizeof(*libs));
	nlibs = sp_spans_needed_libs(path, modes & SP_SPANS_USDT, libs, 16);
	for (i = 0; i < nlibs && !found; i++)
		found = providers_match(providers_cached(NULL, libs[i]), modes);
	free(libs);
	return found;
}

bool sp_spans_file_has_probes(unsigned int modes, const char *path)
{
	return file_has_probes(modes, path, 0);
}

/* The command sp-record runs, from its own arguments after "--". false
 * when it is known not to be a runtime; true when it is or is unknown. */
static bool command_has_probes(unsigned int modes)
{
	static char args[65536];
	char full[PATH_MAX + 256];
	const char *a, *cmd = NULL;
	ssize_t n;
	int fd;

	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, args, sizeof(args) - 1);
	close(fd);
	if (n <= 0 || n == sizeof(args) - 1)
		return true;
	args[n] = 0;
	for (a = args + strlen(args) + 1; a < args + n; a += strlen(a) + 1)
		if (!strcmp(a, "--")) {
			cmd = a + 3;
			break;
		}
	if (!cmd || cmd >= args + n || !*cmd)
		return true;
	if (sp_launch_find(cmd, full, sizeof(full)))
		return file_has_probes(modes, full, 0);
	return true;
}

/* Track pid (and, with walk, its descendants, found running) in BPF.
 * cmd: started by sp-record (the activators are in its environment). */
static int seed(struct bs_ctx *c, uint32_t pid, const char *self, bool cmd, bool walk)
{
	struct sp_bs_proc one = { .gen = 1 };
	char exe[PATH_MAX], link[64], path[96], buf[4096];
	struct bs_proc *p;
	struct dirent *de;
	ssize_t n;
	DIR *d;

	if (bpf_map__update_elem(c->skel->maps.tgids, &pid, sizeof(pid), &one, sizeof(one),
				 BPF_ANY))
		return sp_error_errno("spans: cannot track pid %u", pid);
	if (proc_get(c, pid))
		return 0;
	p = proc_new(c, pid);
	p->gen = 1;
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	/* Our own child before exec: the exec hook attaches. */
	if (!strcmp(exe, self))
		return 0;
	p->attached = !cmd;
	attach_image(c, p);
	attach_dl(c, p, false);
	if (p->natt)
		set_tracked(c, p);
	if (!cmd && c->o->explicit_modes && (c->o->modes & (SP_SPANS_RUBY | SP_SPANS_PYTHON)))
		sp_info("pid %u was started without sp-record: Ruby method spans need a "
			"TracePoint in it, Python 3.11 function entries the eval-frame "
			"hook (see docs/spans.md)", pid);
	if (!walk)
		return 0;
	/* Children forked before the fork hook knew the parent. */
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char cpath[128], *q, *end;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%u/task/%.20s/children", pid, de->d_name);
		fd = open(cpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		for (q = buf; *q; q = end) {
			unsigned long child = strtoul(q, &end, 10);

			if (end == q)
				break;
			if (child && child < UINT32_MAX && seed(c, child, self, cmd, true))
				break;
		}
	}
	if (d)
		closedir(d);
	return 0;
}

/* The file offset of function sym in the ELF file at path (its .dynsym,
 * else .symtab), 0 if none. */
static uint64_t elf_func_offset(const char *path, const char *sym)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	int64_t off = -1;
	int fd, pass;
	Elf *e = elf_open(path, &fd);

	if (!e)
		return 0;
	for (pass = 0; pass < 2 && off < 0; pass++) {
		scn = NULL;
		while (off < 0 && (scn = elf_nextscn(e, scn))) {
			Elf_Data *d;
			GElf_Sym st;
			size_t j;

			if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
			    sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM))
				continue;
			d = elf_getdata(scn, NULL);
			for (j = 0; d && j < sh.sh_size / sh.sh_entsize; j++) {
				const char *name;

				if (!gelf_getsym(d, j, &st) || st.st_shndx == SHN_UNDEF ||
				    GELF_ST_TYPE(st.st_info) != STT_FUNC)
					continue;
				name = elf_strptr(e, sh.sh_link, st.st_name);
				if (name && !strcmp(name, sym)) {
					off = va_to_offset(e, st.st_value, true);
					break;
				}
			}
		}
	}
	elf_close(e, fd);
	return off > 0 ? (uint64_t)off : 0;
}

/* The ld.so process pid maps (its program interpreter), into path: false
 * when there is none (a static program) or the process is gone. */
static bool ldso_of(uint32_t pid, char *path, size_t size)
{
	char maps[64], line[PATH_MAX + 256], *at, *nl, *base;
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		at = strchr(line, '/');
		if (!at)
			continue;
		nl = strchr(at, '\n');
		if (nl)
			*nl = 0;
		base = strrchr(at, '/') + 1;
		if (strncmp(base, "ld-", 3) || !strstr(base, ".so"))
			continue;
		snprintf(path, size, "%s", at);
		found = true;
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * <stackpulse/span.h> markers in libraries loaded later (dlopen): ld.so
 * calls _dl_debug_state() when its list of libraries changes, for
 * debuggers. A uprobe there in each process of the tree (a trap at its
 * start-up, each dlopen and dlclose), never in others: its breakpoint in
 * every process that maps ld.so would stop debuggers and valgrind, which
 * take it for their own. scan: look at the libraries p has mapped now (it
 * ran before the probe was there).
 */
static void attach_dl(struct bs_ctx *c, struct bs_proc *p, bool scan)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	char path[PATH_MAX];
	struct bpf_link *l;
	uint64_t off = 0;
	unsigned int i;

	if (!(c->o->modes & SP_SPANS_USDT) || p->exited || p->dl.link || p->dl.fd >= 0 ||
	    !ldso_of(p->pid, path, sizeof(path)))
		return;
	for (i = 0; i < c->nldso && !off; i++)
		if (!strcmp(c->ldso[i].path, path))
			off = c->ldso[i].off;
	if (i == c->nldso) {
		off = elf_func_offset(path, "_dl_debug_state");
		if (!off)
			sp_info("spans: no _dl_debug_state in '%s': libraries loaded with "
				"dlopen() get no probes", path);
		i = c->nldso < 2 ? c->nldso++ : 1;
		snprintf(c->ldso[i].path, sizeof(c->ldso[i].path), "%s", path);
		c->ldso[i].off = off;
	}
	if (!off)
		return;
	if (!c->no_multi) {
		union bpf_attr attr;
		struct sp_uprobe_multi_attr *u = (void *)&attr;
		uint64_t cookie = 0;
		int fd;

		memset(&attr, 0, sizeof(attr));
		u->prog_fd = bpf_program__fd(c->skel->progs.on_dl_state_multi);
		u->attach_type = SP_BPF_TRACE_UPROBE_MULTI;
		u->path = (uintptr_t)path;
		u->offsets = (uintptr_t)&off;
		u->cookies = (uintptr_t)&cookie;
		u->cnt = 1;
		u->pid = p->pid;
		fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
		if (fd >= 0) {
			fcntl(fd, F_SETFD, FD_CLOEXEC);
			p->dl.fd = fd;
		} else if (errno == ESRCH) {
			return;
		} else if (errno == EINVAL || errno == EOPNOTSUPP || errno == E2BIG) {
			c->no_multi = true;
		}
	}
	if (p->dl.fd < 0) {
		l = bpf_program__attach_uprobe_opts(c->skel->progs.on_dl_state, p->pid, path, off,
						    &uo);
		if (!l && errno != ESRCH && errno != ENOENT && !c->dl_warned) {
			c->dl_warned = true;
			sp_info("spans: cannot probe %s's _dl_debug_state (pid %u: %s): libraries "
				"loaded with dlopen() get no probes", path, p->pid, strerror(errno));
		}
		p->dl.link = l;
	}
	if (scan && (p->dl.link || p->dl.fd >= 0))
		scan_libs(c, p);
}

/*
 * The guardian of the processes BPF will stop (hold_guard.h), before
 * anything is stopped: BPF stops none until it runs. Without it, nothing
 * is held: a process may run a little before its probes are there.
 */
static void start_guard(struct bs_ctx *c)
{
	uint32_t ids[3] = { 0 };
	struct bpf_link_info info;
	struct bpf_link *links[2] = { c->skel->links.on_fork, c->skel->links.on_exec };
	__u32 len;
	int i, k = 0;

	for (i = 0; i < 2; i++) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (links[i] && !bpf_obj_get_info_by_fd(bpf_link__fd(links[i]), &info, &len))
			ids[k++] = info.id;
	}
	c->guard_fd = sp_hold_guard_start(bpf_map__fd(c->skel->maps.held), ids);
	if (c->guard_fd < 0) {
		sp_warn("spans: processes are not held at fork and exec: their first "
			"spans may be missed");
		return;
	}
	c->skel->bss->stop_new = 1;
}

/*
 * Each ld.so probe is a consumer of the one uprobe on ld.so's inode, which
 * every process maps: the kernel checks each consumer's filter for each
 * process that maps it (an exec anywhere) and at each attach and detach,
 * so that thousands of short-lived processes (a fork storm, a shell loop
 * of plain programs) each with its own would cost in proportion to their
 * square. A fork child, and a process that execs a program known to have
 * no probes, gets its probe only once it has lived SP_DL_AFTER_NS, with a
 * look at what it loaded meanwhile (markers that fired in that time are
 * missed). A process held at exec gets it at once.
 */
#define SP_DL_AFTER_NS	100000000ull
static void attach_dl_later(struct bs_ctx *c, struct bs_proc *p)
{
	if (!(c->o->modes & SP_SPANS_USDT))
		return;
	sp_grow(&c->dlw, &c->cdlw, c->ndlw + 1, sizeof(*c->dlw));
	c->dlw[c->ndlw].p = p;
	c->dlw[c->ndlw++].due = sp_now_mono_ns() + SP_DL_AFTER_NS;
}

/* The waiting ld.so probes that are due. */
static void attach_dl_due(struct bs_ctx *c, uint64_t now)
{
	size_t i, k = 0;

	for (i = 0; i < c->ndlw; i++) {
		struct bs_proc *p = c->dlw[i].p;

		if (p->exited || proc_get(c, p->pid) != p)
			continue;
		if (now < c->dlw[i].due) {
			c->dlw[k++] = c->dlw[i];
			continue;
		}
		attach_dl(c, p, true);
	}
	c->ndlw = k;
}

/* The BPF object is there: track the target and listen. */
static int start_tracking(struct sp_source *s, struct bs_ctx *c)
{
	char self[PATH_MAX];
	unsigned int i;
	ssize_t n;

	if (!(c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.spans), on_event, c, NULL)))
		return -1;
	start_guard(c);
	if (c->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(c->rb), &ev))
			return -1;
	} else {
		s->fd = ring_buffer__epoll_fd(c->rb);
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	for (i = 0; i < c->npids; i++)
		if (seed(c, c->pids[i], self, c->pid_cmd[i], c->epfd >= 0))
			return -1;
	c->last_poll_ns = sp_now_mono_ns();
	c->lost_since = c->last_poll_ns;
	c->rings.since = c->last_poll_ns;
	c->rings.lost_since = c->last_poll_ns;
	return 0;
}

static int spans_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct bs_ctx *c = s->priv;
	char self[PATH_MAX], exe[PATH_MAX], link[64], why[256] = "";
	unsigned int i;
	ssize_t n;

	c->out = out;
	if (t->system_wide && (c->o->modes || c->o->nfuncs)) {
		snprintf(c->unavailable, sizeof(c->unavailable), "spans(system-wide)");
		sp_warn("spans are recorded for commands and -p pids, not system-wide");
		return 0;
	}
	if (!c->o->modes && !c->o->nfuncs)
		return 0;
	if (resolve_funcs(c))
		return -1;
	for (i = 0; i < c->nfuncs; i++) {
		const char *base = strrchr(c->funcs[i].bin, '/');

		c->funcs[i].name_id = sp_writer_strz(out->w, c->funcs[i].name);
		c->funcs[i].bin_id = sp_writer_strz(out->w, c->funcs[i].bin);
		c->funcs[i].base_id = sp_writer_strz(out->w, base ? base + 1 : c->funcs[i].bin);
	}
	/* The target, and which of it is our command (not exec'd yet). */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	c->pids = sp_xcalloc(t->npids + 1, sizeof(*c->pids));
	c->pid_cmd = sp_xcalloc(t->npids + 1, sizeof(*c->pid_cmd));
	for (i = 0; i < t->npids; i++) {
		c->pids[i] = t->pids[i];
		snprintf(link, sizeof(link), "/proc/%u/exe", t->pids[i]);
		n = readlink(link, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		c->pid_cmd[i] = n > 0 && !strcmp(exe, self);
	}
	c->npids = t->npids;
	if (!may_bpf()) {
		snprintf(why, sizeof(why), "loading BPF programs needs root (CAP_BPF and "
			 "CAP_PERFMON)");
	} else if (!c->o->explicit_modes && !c->o->nfuncs && c->npids == 1 && c->pid_cmd[0] &&
		   (!preload.on || !preload_ready()) && !command_has_probes(c->o->modes) &&
		   (preload.efd >= 0 ||
		    (preload.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0)) {
		/*
		 * --spans=auto and a command that is no runtime: nobody asked
		 * for spans, so nobody waits for the BPF object. The recording
		 * starts now; the processes of the tree are tracked once it is
		 * loaded (those running by then are attached as found, their
		 * first spans missed). A command that ends before that costs
		 * no more than without spans. A runtime command waits.
		 */
		struct epoll_event ev = { .events = EPOLLIN };

		c->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (c->epfd < 0 || epoll_ctl(c->epfd, EPOLL_CTL_ADD, preload.efd, &ev))
			return sp_error_errno("spans: epoll");
		s->fd = c->epfd;
		c->deferred = true;
		/* A command that is done in a few milliseconds (/bin/true)
		 * should not even share the CPU with the load: it starts at
		 * the first poll (an event, or the batch timer) after 50 ms. */
		c->defer_since = sp_now_mono_ns();
		return 0;
	} else if ((c->skel = preload_take(why, sizeof(why))) && !start_tracking(s, c)) {
		return 0;
	} else if (c->skel && !why[0]) {
		snprintf(why, sizeof(why), "cannot create the ring buffer: %s", strerror(errno));
	}
	ring_buffer__free(c->rb);
	c->rb = NULL;
	sp_spans__destroy(c->skel);
	c->skel = NULL;
	/* Only what the user named is worth stopping for. */
	if (c->o->explicit_modes || c->o->nfuncs)
		return sp_error("spans: %s", why);
	sp_warn("spans: %s: recording without method spans", why);
	snprintf(c->unavailable, sizeof(c->unavailable), "spans");
	return 0;
}

/* The command still runs (not a zombie). */
static bool tree_alive(struct bs_ctx *c)
{
	char path[64], buf[256], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", c->pids[0]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* --spans=auto: the BPF object loaded in the background is ready. */
static int finish_deferred(struct sp_source *s, struct bs_ctx *c)
{
	char why[256] = "";

	c->deferred = false;
	/* it stays readable: stop watching it */
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, preload.efd, NULL);
	c->skel = preload_take(why, sizeof(why));
	if (c->skel && !start_tracking(s, c))
		return 0;
	if (c->skel && !why[0])
		snprintf(why, sizeof(why), "cannot create the ring buffer: %s", strerror(errno));
	ring_buffer__free(c->rb);
	c->rb = NULL;
	sp_spans__destroy(c->skel);
	c->skel = NULL;
	sp_warn("spans: %s: recording without method spans", why);
	return 0;
}

/*
 * The processes whose exit was read before the last poll and at least
 * 200 ms ago: the last chunks of their other threads (which may exit
 * after the leader, under load well after) are in by then.
 */
static void forget_gone(struct bs_ctx *c, uint64_t now)
{
	size_t i, k = 0;

	for (i = 0; i < c->ngone; i++) {
		struct bs_proc *p = c->gone[i];
		uint64_t *at = sp_u64map_get(&c->by_pid, p->pid);

		if (!p->gone_seen || now - p->gone_ns < 200000000 || c->finishing) {
			p->gone_seen = true;
			c->gone[k++] = p;
			continue;
		}
		sp_u64map_release(&p->strs);
		c->addr_live -= p->by_addr;
		spans_state_release(c, p);
		if (at && c->procs[*at - 1] == p)
			sp_u64map_del(&c->by_pid, p->pid);
	}
	c->ngone = k;
}

static int spans_poll(struct sp_source *s, struct sp_emit *out)
{
	struct bs_ctx *c = s->priv;
	uint64_t before = c->spans + c->raises + c->audits, now;
	int n;

	c->out = out;
	if (c->deferred && !preload.on && !c->finishing &&
	    sp_now_mono_ns() - c->defer_since >= SP_SPANS_DEFER_NS && tree_alive(c)) {
		preload_start(c->o, true);
		if (!preload.on) {	/* no thread: load here */
			char why[256] = "";

			c->deferred = false;
			if (!(c->skel = load_skel(why, sizeof(why))) || start_tracking(s, c))
				sp_warn("spans: %s: recording without method spans",
					why[0] ? why : "cannot start");
		}
	}
	if (c->deferred && preload_ready() && finish_deferred(s, c))
		return -1;
	if (!c->rb)
		return 0;
	now = sp_now_mono_ns();
	n = ring_buffer__consume(c->rb);
	if (c->err)
		return -1;
	if (n < 0 && n != -EINTR)
		return sp_error("spans: ring buffer: %s", strerror(-n));
	c->last_poll_ns = now;
	if ((!c->rings_unread && sp_span_rings_poll(&c->rings, now, ring_put, c)) || c->err)
		return -1;
	attach_dl_due(c, now);
	forget_gone(c, now);
	if (emit_lost(c, now))
		return -1;
	return (int)(c->spans + c->raises + c->audits - before);
}

static uint64_t spans_watermark(struct sp_source *s)
{
	struct bs_ctx *c = s->priv;
	uint64_t w;

	if (!c->rb)
		return UINT64_MAX;	/* also while the object loads: nothing before */
	/* An event stamped just before the last drain may be committed after
	 * it: hold back a millisecond. */
	w = sp_span_rings_watermark(&c->rings);
	if (c->last_poll_ns < w)
		w = c->last_poll_ns;
	w = w > 1000000 ? w - 1000000 : 0;
	/* promised: no ring mark older than this may come out any more */
	if (w > c->rings.released)
		c->rings.released = w;
	return w;
}

static int spans_finish(struct sp_source *s, struct sp_emit *out)
{
	struct bs_ctx *c = s->priv;
	uint64_t now;
	size_t i;

	c->finishing = true;
	sp_span_rings_wake(&c->rings, 0, 0, 0, 0);	/* read the rings now, whenever last */
	if (spans_poll(s, out) < 0)
		return -1;
	sp_span_rings_leave(&c->rings);	/* their threads wait for us no more */
	if (c->deferred) {
		sp_info("spans: the recording ended before the BPF program was loaded: "
			"no spans");
		return 0;
	}
	if (!c->rb)
		return 0;
	now = sp_now_mono_ns();
	for (i = 0; i < c->nprocs; i++) {
		struct bs_proc *p = c->procs[i];

		if (!p->exited && emit_health(c, p, now, false))
			return -1;
	}
	if (emit_lost(c, now))
		return -1;
	if (c->o->explicit_modes && (c->o->modes & (SP_SPANS_RUBY | SP_SPANS_RUBY_C)) &&
	    !(c->found & SP_SPANS_RUBY))
		sp_warn("--spans=ruby: no Ruby with USDT probes ran in the recorded processes");
	if (c->o->explicit_modes && (c->o->modes & (SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT)) &&
	    !(c->found & SP_SPANS_PYTHON))
		sp_warn("--spans=python: no Python with USDT probes ran in the recorded processes");
	if (c->lost_seen)
		sp_warn("spans: %llu span events lost (ring buffer full)",
			(unsigned long long)c->lost_seen);
	sp_info("spans: %llu span marks, %llu raises, %llu audit events, %llu fiber switches; "
		"%llu stops without a start dropped (entered before the recording); %llu idle "
		"probes (see the probe records)",
		(unsigned long long)c->spans, (unsigned long long)c->raises,
		(unsigned long long)c->audits, (unsigned long long)c->fiber_switches,
		(unsigned long long)c->orphans, (unsigned long long)c->idle);
	if (c->rings.n || c->rings.reading || c->rings.shared || c->rings.given_up)
		sp_info("spans: span rings: %llu read; %llu read beside another sp-record, "
			"%llu given up, %llu past the bounds; %llu not readable at their "
			"thread's end, %llu ended without their last copy, %llu chunks after "
			"lost ones, %llu bad entries, %llu entries read twice, %llu marks older "
			"than what was written (of rings found late: out of order)",
			(unsigned long long)c->rings.reading, (unsigned long long)c->rings.shared,
			(unsigned long long)c->rings.given_up, (unsigned long long)c->rings.refused,
			(unsigned long long)c->rings.faults, (unsigned long long)c->rings.unended,
			(unsigned long long)c->rings.gaps, (unsigned long long)c->rings.bad,
			(unsigned long long)c->rings.dups, (unsigned long long)c->rings.late);
	if (c->rings.lost)
		sp_warn("spans: %llu span marks lost from span rings (counted in the spool): "
			"%llu overwritten by threads that gave up waiting for sp-record (a loaded "
			"machine?), %llu missed beside another sp-record, %llu in rings given up, "
			"%llu not readable at their thread's end",
			(unsigned long long)c->rings.lost, (unsigned long long)c->rings.lost_waited,
			(unsigned long long)c->rings.lost_shared,
			(unsigned long long)c->rings.lost_given_up,
			(unsigned long long)c->rings.lost_at_end);
	sp_info("spans: execs: %llu held to look for runtimes, %llu released at once (file known "
		"without probes); %llu got probes; forks: %llu, %llu held for their parent's probes; "
		"ld.so changes: %llu, %llu libraries given probes then (dlopen)",
		(unsigned long long)c->stopped_execs, (unsigned long long)c->plain_execs,
		(unsigned long long)c->probed_images, (unsigned long long)c->forks,
		(unsigned long long)c->stopped_forks, (unsigned long long)c->dlopens,
		(unsigned long long)c->late_libs);
	return 0;
}

static void spans_describe(struct sp_source *s, char *features, size_t fsize,
			   char *unavailable, size_t usize)
{
	struct bs_ctx *c = s->priv;
	unsigned int m = c->o->modes;
	size_t len;

	if (!m && !c->o->nfuncs)
		return;
	if (!may_bpf()) {
		/* start() will record without spans: do not claim them. */
		snprintf(unavailable, usize, "spans(needs CAP_BPF and CAP_PERFMON)");
		return;
	}
	snprintf(features, fsize, "spans=%s%s%s%s%s%s",
		 m & SP_SPANS_RUBY ? "ruby," : "", m & SP_SPANS_RUBY_C ? "ruby-c," : "",
		 m & SP_SPANS_PYTHON ? "python," : "", m & SP_SPANS_PY_AUDIT ? "python-audit," : "",
		 m & SP_SPANS_USDT ? "usdt," : "", c->o->nfuncs ? "uprobe," : "");
	len = strlen(features);
	if (len && features[len - 1] == ',')
		features[len - 1] = 0;
	if (c->unavailable[0])
		snprintf(unavailable, usize, "%s", c->unavailable);
}

static int spans_prepare_env(struct sp_source *s)
{
	struct bs_ctx *c = s->priv;

	/* No spans without BPF: spare Ruby and Python the activators' cost
	 * (start() says why). */
	if (!may_bpf() && !c->o->explicit_modes)
		return 0;

	return sp_spans_setup_env(c->o);
}

/*
 * Closing a uprobe's perf event waits for the kernel (about 75 ms each
 * here), and so would sp-record's exit with the descriptors still open:
 * a child inherits them and closes them after sp-record has exited; our
 * own copies then close at once. The child first closes everything that
 * is not a kernel object (the output, the terminal, pipes), so nobody
 * waits for it. Only async-signal-safe calls after fork().
 */
static void handoff_close(void)
{
	char path[32] = "/proc/self/fd/", target[32];
	int fd, pass, k, maxfd = 4096;
	pid_t pid = fork();

	if (pid != 0)
		return;		/* the parent, or no child: close them ourselves */
	for (pass = 0; pass < 2; pass++) {
		for (fd = 0; fd < maxfd; fd++) {
			char num[12];
			int n = 0, v = fd;
			ssize_t len;

			if (pass == 1) {
				close(fd);
				continue;
			}
			do {
				num[n++] = '0' + v % 10;
				v /= 10;
			} while (v);
			for (k = 0; k < n; k++)
				path[14 + k] = num[n - 1 - k];
			path[14 + n] = 0;
			len = readlink(path, target, sizeof(target));
			if (len < 0)
				continue;
			if (len < 11 || memcmp(target, "anon_inode:", 11))
				close(fd);
		}
	}
	_exit(0);
}

static void spans_free(struct sp_source *s)
{
	struct bs_ctx *c;
	struct bs_link *queued = NULL;
	size_t i, nqueued = 0, left;

	if (!s)
		return;
	c = s->priv;
	if (c->rb) {
		/* Detach the process hooks first, then continue whoever they stopped. */
		bpf_link__destroy(c->skel->links.on_fork);
		bpf_link__destroy(c->skel->links.on_exec);
		c->skel->links.on_fork = c->skel->links.on_exec = NULL;
		c->releasing = true;
		ring_buffer__consume(c->rb);
		/* and whoever is held still (the map is the truth) */
		sp_hold_guard_sweep(bpf_map__fd(c->skel->maps.held));
		/* not finished (the output failed): threads wait for us no more */
		if (!c->finishing)
			sp_span_rings_leave(&c->rings);
	}
	/* The guardian sweeps a little longer: a program that was running
	 * as its link went may stop one more. */
	if (c->guard_fd >= 0)
		close(c->guard_fd);
	c->guard_fd = -1;
	if (c->reaper_on) {
		pthread_mutex_lock(&c->rq_lock);
		queued = c->rq;
		nqueued = c->nrq;
		c->rq = NULL;
		c->nrq = c->crq = 0;
		c->reaper_stop = true;
		pthread_cond_broadcast(&c->rq_cond);
		pthread_mutex_unlock(&c->rq_lock);
	}
	for (i = 0, left = nqueued; i < c->nprocs; i++)
		left += c->procs[i]->natt + (c->procs[i]->dl.link || c->procs[i]->dl.fd >= 0);
	/* What is left to detach is closed by a helper after we are gone. */
	if (left)
		handoff_close();
	for (i = 0; i < nqueued; i++)
		link_destroy(c, queued[i]);
	free(queued);
	for (i = 0; i < c->reapers; i++)
		pthread_join(c->reaper[i], NULL);
	free(c->rq);
	for (i = 0; i < c->nprocs; i++) {
		struct bs_proc *p = c->procs[i];

		detach_all_how(c, p, true);
		free(p->att);
		sp_u64map_release(&p->strs);
		spans_state_release(c, p);
		free(p);
	}
	free(c->procs);
	free(c->gone);
	free(c->dlw);
	sp_span_rings_release(&c->rings);
	sp_u64map_release(&c->by_pid);
	for (i = 0; i < c->nlocs; i++)
		free(c->locs[i].bin);
	free(c->locs);
	free(c->ucache);
	sp_u64map_release(&c->loc_ids);
	for (i = 0; i < c->nfuncs; i++) {
		free(c->funcs[i].bin);
		free(c->funcs[i].name);
	}
	free(c->funcs);
	ring_buffer__free(c->rb);
	sp_spans__destroy(c->skel);
	if (preload.on && !c->deferred) {	/* never started */
		char why[256];

		sp_spans__destroy(preload_take(why, sizeof(why)));
	}
	/* Still loading at the end (a short command under --spans=auto): do
	 * not wait for it, the exit closes whatever it made. */
	if (c->epfd >= 0)
		close(c->epfd);
	free(c->pids);
	free(c->pid_cmd);
	free(c);
	free(s);
}

struct sp_source *sp_spans_source_new(const struct sp_spans_opts *o)
{
	struct sp_source *s = sp_xcalloc(1, sizeof(*s));
	struct bs_ctx *c = sp_xcalloc(1, sizeof(*c));

	c->o = o;
	sp_span_rings_init(&c->rings);	/* our claim on the rings we read */
	c->rings_unread = getenv("SP_SPAN_RINGS_UNREAD") &&
			  !strcmp(getenv("SP_SPAN_RINGS_UNREAD"), "1");
	pthread_mutex_init(&c->bpf_lock, NULL);
	pthread_mutex_init(&c->rq_lock, NULL);
	pthread_cond_init(&c->rq_cond, NULL);
	c->epfd = -1;
	c->guard_fd = -1;
	s->name = "spans";
	s->fd = -1;
	s->priv = c;
	s->start = spans_start;
	s->poll = spans_poll;
	s->watermark = spans_watermark;
	s->finish = spans_finish;
	s->describe = spans_describe;
	s->free = spans_free;
	s->prepare_env = spans_prepare_env;
	return s;
}
