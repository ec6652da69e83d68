// SPDX-License-Identifier: MIT
/*
 * Which binaries have probes for the spans source (bpf_spans.h,
 * bpf_spansP.h): an ELF file's USDT providers (read by lib/elf/usdt.c) as
 * SP_SPANS_* bits, a CPython the Python hook alone can serve, the runtime
 * libraries an executable needs and their versions, and whether a command
 * (or the interpreter of a script) runs any of them, which --spans=auto
 * asks before it waits for BPF.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf_spansP.h"
#include "elf/dynamic.h"
#include "elf/usdt.h"
#include "launch.h"
#include "record.h"
#include "safefile.h"
#include "sp.h"

/* A python* or libpython* ELF file that defines Py_Version (3.11 on). A
 * container's file is named by our descriptor (bpf_spans_root.c): its own
 * name is the link's last part. */
static bool is_cpython_file(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char link[PATH_MAX];
	ssize_t n;
	uint32_t v;

	if (!strncmp(path, "/proc/self/fd/", 14)) {
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			return false;
		link[n] = 0;
		base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	}
	if (strncmp(base, "python", 6) && strncmp(base, "libpython", 9))
		return false;
	return !sp_elf_read_dynsym(path, "Py_Version", &v, sizeof(v)) && (v >> 24) == 3 &&
	       ((v >> 16) & 0xff) >= 11;
}

struct providers {
	int bits;
	unsigned int regs, other;	/* span markers with fixed registers, others */
};

static void provider_bits(void *arg, const struct sp_usdt_note *n)
{
	struct providers *pv = arg;

	if (!strcmp(n->provider, "ruby")) {
		pv->bits |= SP_SPANS_RUBY;
	} else if (!strcmp(n->provider, "python")) {
		pv->bits |= SP_SPANS_PYTHON;
	} else if (!strcmp(n->provider, "stackpulse") && n->name &&
		   (!strcmp(n->name, "span__begin") || !strcmp(n->name, "span__end"))) {
		/* <stackpulse/span.h> markers; the runtime hooks' own
		 * (rb__call, py__call, rt__name, ...) are attached as hooks */
		pv->bits |= SP_SPANS_USDT;
		if (n->args && !strcmp(n->args, SP_SPANS_USDT_REGS_ARGS))
			pv->regs++;
		else
			pv->other++;
	}
}

int sp_spans_elf_providers(const char *path)
{
	struct providers pv = { 0 };

	if (sp_usdt_notes(path, provider_bits, &pv))
		return sp_error_errno("cannot read ELF file '%s'", path);
	if (pv.regs && !pv.other)
		pv.bits |= SP_SPANS_USDT_REGS;
	if (!(pv.bits & SP_SPANS_PYTHON) && is_cpython_file(path))
		pv.bits |= SP_SPANS_PY_HOOKABLE;
	return pv.bits;
}

bool sp_bs_runtime_lib_name(const char *name)
{
	return !strncmp(name, "libruby", 7) || !strncmp(name, "libpython", 9);
}

int sp_spans_runtime_libs(const char *exe, char paths[][4096], int n)
{
	return sp_spans_needed_libs(exe, false, NULL, paths, n);
}

static bool other_lib_name(const char *name)
{
	return !sp_bs_runtime_lib_name(name);
}

/* The runtimes' libraries first: a program that needs more libraries than
 * the caller takes must not lose libruby or libpython to the cut. */
int sp_spans_needed_libs(const char *exe, bool all, struct sp_elf_libsearch *how,
			 char paths[][4096], int n)
{
	int k = sp_elf_needed_libs(exe, sp_bs_runtime_lib_name, how, paths, n);
	bool via = how && how->via_ld_path, missing = how && how->missing;

	if (all && k < n)
		k += sp_elf_needed_libs(exe, other_lib_name, how, paths + k, n - k);
	/* missing: a runtime's library only (another found nowhere is, as a
	 * rule, in a directory of ld.so's cache that is not searched here:
	 * its program would be held at every exec for nothing) */
	if (how) {
		how->via_ld_path |= via;
		how->missing = missing;
	}
	return k;
}

void sp_spans_runtime_version(const char *path, int runtime, char *buf, size_t size)
{
	char v[16] = "";
	uint32_t hex;

	buf[0] = 0;
	if (runtime == SP_RT_RUBY && !sp_elf_read_dynsym(path, "ruby_version", v, sizeof(v) - 1)) {
		v[sizeof(v) - 1] = 0;
		snprintf(buf, size, "%s", v);
	} else if (runtime == SP_RT_PYTHON && !sp_elf_read_dynsym(path, "Py_Version", &hex, 4)) {
		snprintf(buf, size, "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
	}
}

/* Provider bits of a binary, cached by path (an executable and the
 * libraries it needs: markers may be in any of them). */
#define PROVIDERS_CACHE	256	/* at least the libraries of a process looked at */
int sp_bs_providers_cached(const char *path)
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

/* Provider bits of a file that the modes have something for. */
static bool providers_match(int bits, unsigned int modes)
{
	if ((bits & SP_SPANS_PY_HOOKABLE) && (modes & SP_SPANS_PYTHON))
		return true;
	/* the audit probe is one of the "python" provider's */
	if ((bits & SP_SPANS_PYTHON) && (modes & SP_SPANS_PY_AUDIT))
		return true;
	return bits & modes & ~(SP_SPANS_USDT_REGS | SP_SPANS_PY_HOOKABLE);
}

/*
 * Whether a script (its path, and its first n bytes in head) may exec a
 * runtime, whatever its interpreter: a wrapper such as pyenv's shims
 * (bash scripts named python3, ruby, pip ...; pyenv execs the interpreter
 * about 80 ms in), "exec /usr/bin/python3", "exec \"$@\"". Deciding "no
 * runtime" for it lets that runtime run before the BPF object is there.
 */
static bool script_may_exec_runtime(const char *path, const char *head, size_t n)
{
	static const char *const words[] = { "python", "ruby", "pyenv", "rbenv", "exec" };
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(base, words[i]) || memmem(head, n, words[i], strlen(words[i])))
			return true;
	return false;
}

/* Whether an executable (or the interpreter of a script) is a runtime or
 * has <stackpulse/span.h> markers for the modes asked; depth: #! levels.
 * A script that may exec a runtime counts as one for the runtimes' modes. */
static bool file_has_probes(unsigned int modes, const char *path, int depth)
{
	char head[4096], (*libs)[4096], *nl, *interp, *arg;
	struct sp_elf_libsearch how = { 0 };
	bool found = false;
	struct stat st;
	ssize_t n;
	int fd, i, nlibs;

	/* a path another user may have made a FIFO since the exec: not
	 * opened to block on (sp_safe_open: regular files only) */
	fd = sp_safe_open(AT_FDCWD, path, NULL, NULL, NULL);
	if (fd < 0)
		return false;
	n = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (n < 4)
		return false;
	head[n] = 0;
	if (head[0] == '#' && head[1] == '!') {
		if ((modes & (SP_SPANS_RUBY | SP_SPANS_RUBY_C | SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT)) &&
		    script_may_exec_runtime(path, head, (size_t)n))
			return true;
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
	if (providers_match(sp_bs_providers_cached(path), modes))
		return true;
	libs = sp_xmalloc(16 * sizeof(*libs));
	/* the command's environment and directory are sp-record's; ld.so
	 * leaves LD_LIBRARY_PATH out for a set-ID program */
	how.ld_path = stat(path, &st) || (st.st_mode & (S_ISUID | S_ISGID)) ? NULL :
		      getenv("LD_LIBRARY_PATH");
	how.cwd = ".";
	nlibs = sp_spans_needed_libs(path, modes & SP_SPANS_USDT, &how, libs, 16);
	for (i = 0; i < nlibs && !found; i++)
		found = providers_match(sp_bs_providers_cached(libs[i]), modes);
	free(libs);
	return found;
}

bool sp_spans_file_has_probes(unsigned int modes, const char *path)
{
	return file_has_probes(modes, path, 0);
}

/* The command sp-record starts (o->command), when it was given after "--":
 * false when it is known not to be a runtime; true when it is or is
 * unknown (none given so: -p, -a, or a command without "--"). */
bool sp_bs_command_has_probes(const struct sp_spans_opts *o)
{
	char full[PATH_MAX + 256];

	if (!o->command || !o->command[0] || !*o->command[0])
		return true;
	if (sp_launch_find(o->command[0], full, sizeof(full)))
		return file_has_probes(o->modes, full, 0);
	return true;
}
