// SPDX-License-Identifier: MIT
/*
 * What one process image of the recorded tree gets attached, for the
 * spans source (bpf_spansP.h): per binary (the executable and the
 * libraries it maps or needs), the runtime hooks' markers or the
 * runtimes' own USDT probes, <stackpulse/span.h> markers; a fork child
 * the same as its parent; and ld.so's _dl_debug_state, so that libraries
 * loaded later get theirs. How a probe is attached is bpf_spans_usdt.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_spansP.h"
#include "cgroup_filter.h"
#include "elf/dynamic.h"
#include "escape.h"
#include "procfs.h"
#include "procroot.h"
#include "record.h"
#include "safefile.h"
#include "sp.h"
#include "writer.h"

struct hook_ctx {
	struct bs_ctx *c;
	uint32_t pid;
	const char *name;
	char *path;
	size_t size;
};

static int hook_line(void *ctx, const struct sp_proc_map *m)
{
	struct hook_ctx *h = ctx;

	return m->path[0] == '/' && strstr(m->path, h->name) &&
	       !sp_bs_mapped_path(h->c, h->pid, m, false, h->path, h->size) &&
	       sp_bs_is_file(h->path);
}

/* The runtime hook of rt that process pid has mapped (an attached process
 * started with the activator in its environment), into path. */
static bool hook_mapped(struct bs_ctx *c, uint32_t pid, int rt, char *path, size_t size)
{
	struct hook_ctx h = { c, pid, rt == SP_RT_RUBY ? "/stackpulse_hook.so" :
							 "/_stackpulse_hook.cpython-", path, size };

	return sp_procfs_maps(pid, SP_BS_MAPS_BYTES, hook_line, &h) > 0;
}

/* The hook of runtime rt for the library bin in an activator's directory
 * dir (.../ruby or .../python): the extension built for bin's version. */
static bool hook_in_dir(const char *dir, int rt, const char *bin, char *path, size_t size)
{
	char ver[32], pat[PATH_MAX + 64];
	unsigned int major, minor;
	glob_t g;
	bool ok;

	sp_spans_runtime_version(bin, rt, ver, sizeof(ver));
	if (sscanf(ver, "%u.%u", &major, &minor) != 2)
		return false;
	if (rt == SP_RT_RUBY) {
		snprintf(path, size, "%s/%u.%u/stackpulse_hook.so", dir, major, minor);
		return sp_bs_is_file(path);
	}
	/* CPython imports only the extension of its own version's tag */
	snprintf(pat, sizeof(pat), "%s/_stackpulse_hook.cpython-%u%u-*.so", dir, major, minor);
	if (glob(pat, 0, NULL, &g))
		return false;
	ok = g.gl_pathc >= 1 && sp_bs_is_file(g.gl_pathv[0]);
	if (ok)
		snprintf(path, size, "%s", g.gl_pathv[0]);
	globfree(&g);
	return ok;
}

/* The activator's directory in one word of PYTHONPATH or RUBYOPT, into
 * dir: false when the word names none. */
static bool activator_dir(int rt, const char *tok, char *dir, size_t size)
{
	const char *slash = strrchr(tok, '/');

	if (rt == SP_RT_RUBY) {
		if (strncmp(tok, "-r/", 3) || strcmp(slash, "/stackpulse_activate.rb"))
			return false;
		snprintf(dir, size, "%.*s", (int)(slash - tok - 2), tok + 2);
		return true;
	}
	snprintf(dir, size, "%s/sitecustomize.py", tok);
	if (tok[0] != '/' || !sp_bs_is_file(dir))
		return false;
	snprintf(dir, size, "%s", tok);
	return true;
}

/*
 * The hook an attached process will load although it has not yet: its
 * environment names the activator (PYTHONPATH with our sitecustomize.py,
 * RUBYOPT with -r.../stackpulse_activate.rb), which loads the hook when
 * the runtime gets there (a Python run with -S that imports sitecustomize
 * later; a wrapper's Python found before its start-up is over). The
 * directory must be one only root or we may change: the process chose it.
 */
static bool hook_in_environ(uint32_t pid, int rt, const char *bin, char *path, size_t size)
{
	const char *var = rt == SP_RT_RUBY ? "RUBYOPT" : "PYTHONPATH";
	const char *sep = rt == SP_RT_RUBY ? " " : ":";
	const char *mode, *v;
	char *env, *val = NULL, *tok, *save, dir[PATH_MAX];
	bool found = false, off, cut;
	size_t n;
	int dfd;

	env = sp_bs_proc_environ(pid, &n, &cut);
	/* the first of each, as the runtime's getenv() takes it */
	mode = sp_bs_env_get(env, n, rt == SP_RT_RUBY ? "STACKPULSE_RUBY_HOOK" : "STACKPULSE_PY_HOOK",
			     false);
	off = mode && *mode && strcmp(mode, "hook");
	v = sp_bs_env_get(env, n, var, false);
	if (v)
		val = env + (v - env);	/* in env, which strtok_r() cuts */
	for (tok = val && !off ? strtok_r(val, sep, &save) : NULL; tok && !found;
	     tok = strtok_r(NULL, sep, &save)) {
		if (!activator_dir(rt, tok, dir, sizeof(dir)))
			continue;
		dfd = sp_safe_dir(AT_FDCWD, dir, 0, 0, NULL, 0);
		if (dfd < 0)
			continue;
		close(dfd);
		found = hook_in_dir(dir, rt, bin, path, size);
	}
	free(env);
	return found;
}

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

	if (sp_bs_offsets_cached(path, path, "stackpulse", call, SP_SPANS_HOOK_ARGS, offs, 64) > 0)
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
 * An attached process has no activator from us: the hook it has loaded,
 * or the one its environment will load (hook_in_environ()).
 */
static bool hook_for(struct bs_ctx *c, const struct bs_proc *p, int rt, const char *bin,
		     char *path, size_t size)
{
	const char *dir = sp_spans_runtime_dir(c->o), *env;
	char sub[PATH_MAX];

	if (p->attached)
		return hook_mapped(c, p->pid, rt, path, size) ||
		       (hook_in_environ(p->pid, rt, bin, path, size) && hook_usable(rt, path));
	env = getenv(rt == SP_RT_RUBY ? "STACKPULSE_RUBY_HOOK" : "STACKPULSE_PY_HOOK");
	if (!dir || (env && *env && strcmp(env, "hook")))
		return false;
	snprintf(sub, sizeof(sub), "%s/%s", dir, rt == SP_RT_RUBY ? "ruby" : "python");
	return hook_in_dir(sub, rt, bin, path, size) && hook_usable(rt, path);
}

/*
 * The markers probes[0..n) of the runtime hook file hook for p by the
 * file's shared link: one uprobe_multi link for every process that maps
 * the file (pid 0, generation 0), made for the first process that needs
 * it and kept to the end. Only processes started with an activator map a
 * hook; BPF counts a hit only in a process of the tree whose image has
 * probes (bpf/spans.bpf.c, tracked()). So a fork child is covered from its
 * first instruction: it is not stopped, and nothing is attached or
 * detached for it (a uprobe's attach and detach cost milliseconds, and
 * a held child waits for sp-record's loop). false: per-process links
 * instead (no uprobe_multi links, other operands, too many hook files).
 */
/*
 * The shared link of hook's file, made now if need be (probes: what it is
 * made with, n of them); NULL: none to be had. A link for every process
 * of the machine is made only on a file root owns and no one else may
 * write, opened once and read and probed through that descriptor: a path
 * another user controls could name another file (libc) by the time the
 * link is made, and breakpoints at the hook's offsets would land in every
 * process. Another file gets links of the process's own.
 */
static struct bs_shared *shared_of(struct bs_ctx *c, const char *hook, const uint32_t *probes,
				   int n)
{
	char file[64];
	struct bs_shared *sh;
	struct stat st;
	unsigned int i;
	int k, fd;

	/* opened as a file another user may have put there: looked at
	 * first, so a FIFO swapped in since the maps were read is not
	 * waited on (sp_safe_open), then root's, written by no one else */
	fd = sp_safe_open(AT_FDCWD, hook, &(struct sp_safe_want){ .flags = SP_SAFE_PRIVATE }, &st,
			  NULL);
	if (fd < 0)
		return NULL;
	if (st.st_uid != 0) {
		close(fd);
		return NULL;
	}
	/* one link per file: a second would fire for every process too */
	for (i = 0; i < c->nshared; i++)
		if (c->shared[i].dev == (uint64_t)st.st_dev && c->shared[i].ino == (uint64_t)st.st_ino) {
			close(fd);
			return &c->shared[i];
		}
	if (c->no_multi || c->nshared >= sizeof(c->shared) / sizeof(c->shared[0]) || n > 16 ||
	    strlen(hook) >= sizeof(c->shared[0].path)) {
		close(fd);
		return NULL;
	}
	sh = &c->shared[c->nshared];
	snprintf(file, sizeof(file), "/proc/self/fd/%d", fd);
	sh->fd = sp_bs_marker_link(c, hook, file, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
				   SP_SPANS_HOOK_ARGS, probes, n, 0, 0, sh->found);
	close(fd);
	for (k = 0; k < n && sh->fd >= 0; k++)
		if (sh->found[k] < 0) {
			close(sh->fd);
			sh->fd = -1;
		}
	if (sh->fd < 0)
		return NULL;
	snprintf(sh->path, sizeof(sh->path), "%s", hook);
	sh->dev = (uint64_t)st.st_dev;
	sh->ino = (uint64_t)st.st_ino;
	memcpy(sh->probes, probes, n * sizeof(*probes));
	sh->n = n;
	sh->group = ++c->groups;
	c->nshared++;
	return sh;
}

/*
 * The markers probes[0..n) of hook for p through the file's shared link;
 * those the link was made without (for another process first), links of
 * p's own. The link's attachments are p's under the link's name: the file
 * is in use while p is (a container's root, bpf_spans_root.c). false: no
 * shared link.
 */
static bool attach_shared(struct bs_ctx *c, struct bs_proc *p, const char *hook,
			  const uint32_t *probes, int n)
{
	struct bs_shared *sh = shared_of(c, hook, probes, n);
	uint32_t missing[16];
	int j, k, nmissing = 0;

	if (!sh)
		return false;
	for (k = 0; k < sh->n; k++) {
		for (j = 0; j < n && probes[j] != sh->probes[k]; j++)
			;
		if (sh->found[k] <= 0 || j == n)
			continue;	/* not in the file, or not asked for p */
		sp_bs_att_add_link(p, sh->probes[k], 0, sh->path, c->skel->progs.on_marker_multi,
				   (struct bs_link){ .fd = -1 }, true, SP_SPANS_HOOK_ARGS);
		p->att[p->natt - 1]->group = sh->group;
		p->att[p->natt - 1]->shared = true;
	}
	for (j = 0; j < n && j < 16; j++) {
		for (k = 0; k < sh->n && sh->probes[k] != probes[j]; k++)
			;
		if (k == sh->n)
			missing[nmissing++] = probes[j];
	}
	if (nmissing)
		sp_bs_attach_markers(c, p, hook, SP_SPANS_HOOK_ARGS, missing, nmissing, NULL);
	return true;
}

/* The markers of a runtime hook whose call marker is call (rb__ or py__
 * call, return; rt__name; rb__fiber or py__raise; the span rings'; with
 * audit, py__audit) into probes[7]: how many. */
static int hook_probes(uint32_t call, bool audit, uint32_t *probes)
{
	const uint32_t all[] = {
		call, call + 1, SP_PR_RT_NAME,
		call == SP_PR_RB_HOOK_CALL ? SP_PR_RB_HOOK_FIBER : SP_PR_PY_HOOK_RAISE,
		/* a hook with span rings (STACKPULSE_SPAN_RING=1) marks through these */
		SP_PR_RT_RING, SP_PR_RT_FLUSH, SP_PR_PY_HOOK_AUDIT,
	};

	memcpy(probes, all, sizeof(all));
	return audit ? 7 : 6;
}

/* The markers of a runtime hook (hook_probes()): the file's shared link,
 * else links of p's own. */
static void attach_hook(struct bs_ctx *c, struct bs_proc *p, const char *hook, uint32_t call,
			bool audit)
{
	uint32_t probes[7];
	int n = hook_probes(call, audit, probes);

	if (audit)
		p->hook_audit = true;
	if (!attach_shared(c, p, hook, probes, n))
		sp_bs_attach_markers(c, p, hook, SP_SPANS_HOOK_ARGS, probes, n, NULL);
}

/* One of sp-record's own hooks given its shared link (shared_of(): root's,
 * written by no one else), with the markers every process asks for (not
 * py__audit: a Python with probes of its own has its own audit probe). */
static void share_installed(struct bs_ctx *c, const char *path, uint32_t call)
{
	uint32_t probes[7];
	char real[PATH_MAX];

	if (!realpath(path, real))
		return;
	if (shared_of(c, real, probes, hook_probes(call, false, probes)))
		sp_info("spans: %s: probed for every process that loads it: each is taken at "
			"its first marker", real);
}

void sp_bs_share_installed(struct bs_ctx *c)
{
	const char *dir = sp_spans_runtime_dir(c->o);
	unsigned int m = c->o->modes;
	char path[PATH_MAX];
	glob_t g;
	size_t i;

	/* Not with --cgroup/--container: every process that loads the hook
	 * pays for a probe, and until one of those cgroups' does, none of
	 * them is recorded. */
	if (!dir || (c->o->cgroups && sp_cgroup_filter_given(c->o->cgroups)))
		return;
	/* one per Ruby version built for, one per Python ABI */
	snprintf(path, sizeof(path), "%s/ruby/*/stackpulse_hook.so", dir);
	if ((m & SP_SPANS_RUBY) && glob(path, 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			share_installed(c, g.gl_pathv[i], SP_PR_RB_HOOK_CALL);
		globfree(&g);
	}
	snprintf(path, sizeof(path), "%s/python/_stackpulse_hook.cpython-*.so", dir);
	if ((m & SP_SPANS_PYTHON) && glob(path, 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			share_installed(c, g.gl_pathv[i], SP_PR_PY_HOOK_CALL);
		globfree(&g);
	}
}

void sp_bs_attach_cmethod(struct bs_ctx *c, struct bs_proc *p, const char *bin)
{
	struct bpf_program *multi = c->skel->progs.on_ruby_method_multi;
	struct bpf_program *prog = c->skel->progs.on_ruby_method;

	sp_bs_attach_any(c, p, multi, prog, bin, "ruby", "cmethod__entry", SP_PR_RUBY_CMETHOD_ENTRY, NULL);
	sp_bs_attach_any(c, p, multi, prog, bin, "ruby", "cmethod__return", SP_PR_RUBY_CMETHOD_RETURN, NULL);
}

/*
 * A Python attached with -p that has no hook loaded (started without the
 * activator). One with USDT probes (Debian's): CPython 3.11 fires
 * function__entry only while a profile function is set (cProfile, a
 * debugger), and function__return on every return all the same, which
 * alone makes no span; so its return probe waits for its first entry
 * (decode_mark()). One without (pyenv's, built without --with-dtrace) has
 * nothing to attach at all: sp_bs_announce() writes its runtime record with
 * mode "none" and a lost record (what=unprobed) that counts it, once its
 * pid is known to be the process looked at (-a, -p's descendants). Said in
 * full for the first, by a short line naming each of the next few
 * (sp_say_next()).
 */
static void py_without_hook_said(const struct bs_proc *p, bool usdt)
{
	static struct sp_tally said;
	char name[80];

	switch (sp_say_next(&said, "spans: Pythons started without sp-record's activator")) {
	case SP_SAY_FULL:
		break;
	case SP_SAY_SHORT:
		sp_span_rings_comm(p->pid, name, sizeof(name));
		sp_warn("spans: pid %u (%s): Python without sp-record's activator too: no "
			"function spans", p->pid, name);
		return;
	default:
		return;
	}
	sp_warn("spans: pid %u: Python without sp-record's activator (started without "
		"sp-record): no function spans%s; its samples and events are recorded. For "
		"function spans start it under sp-record, or with the activator's directory "
		"first on PYTHONPATH (docs/spans.md)%s", p->pid,
		usdt ? " unless a profile function is set in it (cProfile, a debugger): "
		       "without one, only the frames C code enters (generators, callbacks) "
		       "come, a partial view (its runtime record's mode: profile-when-set)"
		     : " (it has no USDT probes either, as pyenv's builds have none)",
		sp_proc_other_mnt_ns(p->pid) ? "; it runs in another mount namespace (a "
		"container): the activator has to be in its image (docs/containers.md)" : "");
}

static void py_without_hook(struct bs_proc *p, const char *bin, bool usdt)
{
	if (!usdt) {
		p->py_none = true;
		snprintf(p->rlib[1], sizeof(p->rlib[1]), "%s", bin);
		return;
	}
	p->ret_pending = true;
	p->unhooked = true;
	py_without_hook_said(p, true);
}

/*
 * A Ruby attached with -p that has no hook loaded: Ruby's own method probes
 * fire only while a TracePoint is enabled in it, which a program rarely
 * has; said as for Python.
 */
/*
 * Whether Ruby's cmethod__entry/return probes are refused in the Ruby bin
 * (its version into ver): Ruby 3.1's rb_dtrace_setup() crashes the program
 * at times while they are on: `require "ostruct"` (json loads it) died in
 * 1 run of 4 here, "[BUG] Segmentation fault" at an alias statement
 * (docs/spans.md). Not refused when SP_RUBY_CMETHOD_PROBES=1 says to take
 * the risk.
 */
static bool rb_cmethod_refused(const char *bin, char *ver, size_t size)
{
	const char *force = getenv("SP_RUBY_CMETHOD_PROBES");

	ver[0] = 0;
	if (force && !strcmp(force, "1"))
		return false;
	sp_spans_runtime_version(bin, SP_RT_RUBY, ver, size);
	return !strncmp(ver, "3.1.", 4);
}

static void rb_without_hook(struct bs_proc *p, const char *bin)
{
	char ver[32];
	static struct sp_tally said;
	char name[80];

	p->unhooked = true;
	switch (sp_say_next(&said, "spans: Rubies started without sp-record's activator")) {
	case SP_SAY_FULL:
		break;
	case SP_SAY_SHORT:
		sp_span_rings_comm(p->pid, name, sizeof(name));
		sp_warn("spans: pid %u (%s): Ruby without sp-record's activator too: no "
			"method spans", p->pid, name);
		return;
	default:
		return;
	}
	sp_warn("spans: pid %u: Ruby without sp-record's activator (started without "
		"sp-record): no method spans unless a TracePoint is enabled in it; its samples "
		"and events are recorded%s. For method spans start it under sp-record, or with "
		"the activator in RUBYOPT (docs/spans.md)%s", p->pid,
		rb_cmethod_refused(bin, ver, sizeof(ver)) ? "" :
		", and --spans=ruby-c gives its C methods' spans",
		sp_proc_other_mnt_ns(p->pid) ? "; it runs in another mount namespace (a "
		"container): the activator has to be in its image (docs/containers.md)" : "");
}

/*
 * Whether p's Ruby hook marks C methods: STACKPULSE_RUBY_EVENTS names
 * c_call and its span rings are on (STACKPULSE_SPAN_RING=1), in
 * sp-record's environment for its command and their children (what it
 * set, or what the user had), in its own for a process attached (-p). The
 * first of each, as getenv() takes it.
 */
static bool hook_marks_c(const struct bs_proc *p)
{
	const char *ev, *ring;
	char *env = NULL;
	size_t len;
	bool cut, yes;

	if (!p->attached) {
		ev = getenv("STACKPULSE_RUBY_EVENTS");
		ring = getenv("STACKPULSE_SPAN_RING");
	} else {
		env = sp_bs_proc_environ(p->pid, &len, &cut);
		ev = sp_bs_env_get(env, len, "STACKPULSE_RUBY_EVENTS", false);
		ring = sp_bs_env_get(env, len, "STACKPULSE_SPAN_RING", false);
	}
	yes = ev && strstr(ev, "c_call") && ring && !strcmp(ring, "1");
	free(env);
	return yes;
}

/* Whether Ruby's cmethod__entry/return probes may be set in p (its Ruby
 * is bin): not where they are refused (rb_cmethod_refused()), said naming
 * the process (sp_say_next()). */
static bool rb_cmethod_probes_ok(struct bs_proc *p, const char *bin)
{
	static struct sp_tally said;
	char ver[32], name[80];

	if (!rb_cmethod_refused(bin, ver, sizeof(ver)))
		return true;
	p->cm_refused = true;	/* its runtime record and a lost record say so */
	sp_span_rings_comm(p->pid, name, sizeof(name));
	switch (sp_say_next(&said, "spans: Rubies 3.1 given no C-method probes")) {
	case SP_SAY_FULL:
		sp_warn("spans: pid %u (%s): Ruby %s's C-method probes (cmethod__entry) can "
			"crash it (a segmentation fault in rb_dtrace_setup, e.g. while it loads "
			"ostruct): no C-method spans for it. A Ruby started under sp-record "
			"gets them from sp-record's hook instead (with its span rings: not with "
			"STACKPULSE_SPAN_RING=0); SP_RUBY_CMETHOD_PROBES=1 sets the probes all "
			"the same (docs/spans.md)", p->pid, name, ver);
		break;
	case SP_SAY_SHORT:
		sp_warn("spans: pid %u (%s): Ruby %s too: no C-method probes set, no C-method "
			"spans", p->pid, name, ver);
		break;
	default:
		break;
	}
	return false;
}

/* Attach what the modes ask for in binary bin (its USDT providers are
 * provs) to process p. */
static void attach_bin(struct bs_ctx *c, struct bs_proc *p, const char *bin, int provs)
{
	struct sp_spans *sk = c->skel;
	unsigned int m = c->o->modes;
	char hook[PATH_MAX + 64];
	bool any = false, hooked = false;

	if ((provs & SP_SPANS_RUBY) && (m & (SP_SPANS_RUBY | SP_SPANS_RUBY_C))) {
		/* with C methods alone, a hook that marks only Ruby methods
		 * (a process attached, started with the activator) is none */
		if (hook_for(c, p, SP_RT_RUBY, bin, hook, sizeof(hook)) &&
		    ((m & SP_SPANS_RUBY) || hook_marks_c(p))) {
			attach_hook(c, p, hook, SP_PR_RB_HOOK_CALL, false);
			hooked = true;
		} else if (m & SP_SPANS_RUBY) {
			sp_bs_attach_any(c, p, sk->progs.on_ruby_method_multi, sk->progs.on_ruby_method,
					 bin, "ruby", "method__entry", SP_PR_RUBY_METHOD_ENTRY, NULL);
			sp_bs_attach_any(c, p, sk->progs.on_ruby_method_multi, sk->progs.on_ruby_method,
					 bin, "ruby", "method__return", SP_PR_RUBY_METHOD_RETURN, NULL);
			if (p->attached)
				rb_without_hook(p, bin);
		}
		/*
		 * C methods: a hook marks them itself when its environment
		 * asks (sp-record's command and its children, a process started
		 * with STACKPULSE_RUBY_EVENTS naming c_call). Otherwise Ruby's
		 * cmethod probes, where they are safe (rb_cmethod_probes_ok()).
		 * The activator without its hook (Fiddle or TracePoint): they
		 * wait for the process's first method__entry, which shows that
		 * the activator's event hook is in (Ruby 3.1.2 crashed at
		 * start-up when they were set before it: docs/spans.md).
		 */
		if (!(m & SP_SPANS_RUBY_C) || (hooked && hook_marks_c(p)))
			;
		else if (!rb_cmethod_probes_ok(p, bin))
			;
		else if ((m & SP_SPANS_RUBY) && !p->attached)
			p->cm_pending = true;
		else
			sp_bs_attach_cmethod(c, p, bin);
		/* raise marks go with spans: none without any (C methods
		 * refused, Ruby methods not asked for) */
		if (!p->cm_refused || (m & SP_SPANS_RUBY))
			sp_bs_attach_any(c, p, sk->progs.on_ruby_raise_multi,
					 sk->progs.on_ruby_raise, bin, "ruby", "raise",
					 SP_PR_RUBY_RAISE, NULL);
		p->runtimes |= SP_SPANS_RUBY;
		snprintf(p->rlib[0], sizeof(p->rlib[0]), "%s", bin);
		any = true;
	}
	if ((provs & SP_SPANS_PY_HOOKABLE) && (m & SP_SPANS_PYTHON)) {
		if (hook_for(c, p, SP_RT_PYTHON, bin, hook, sizeof(hook))) {
			/* no probes of its own: the hook's markers only, audit too */
			attach_hook(c, p, hook, SP_PR_PY_HOOK_CALL, m & SP_SPANS_PY_AUDIT);
			p->runtimes |= SP_SPANS_PYTHON;
			snprintf(p->rlib[1], sizeof(p->rlib[1]), "%s", bin);
			any = true;
		} else if (p->attached) {
			py_without_hook(p, bin, false);
		}
	} else if ((provs & SP_SPANS_PY_HOOKABLE) && (m & SP_SPANS_PY_AUDIT)) {
		/* python-audit without python (the default) in a CPython with
		 * no audit probe (pyenv's build): the audit hook of the hook its
		 * own environment loads (the activator on PYTHONPATH), its
		 * marker only: no per-call spans. Not hook_for(): sp-record
		 * puts the activator in no environment for this mode. */
		static const uint32_t audit[] = { SP_PR_PY_HOOK_AUDIT };
		uint64_t off;

		/* whether this one has the activator is its environment's say,
		 * not the file's: later execs of it are looked at again */
		p->env_probes = true;
		if ((hook_mapped(c, p->pid, SP_RT_PYTHON, hook, sizeof(hook)) ||
		     (hook_in_environ(p->pid, SP_RT_PYTHON, bin, hook, sizeof(hook)) &&
		      hook_usable(SP_RT_PYTHON, hook))) &&
		    sp_bs_offsets_cached(hook, hook, "stackpulse", "py__audit", SP_SPANS_HOOK_ARGS,
					 &off, 1) > 0) {
			p->hook_audit = true;
			if (!attach_shared(c, p, hook, audit, 1))
				sp_bs_attach_markers(c, p, hook, SP_SPANS_HOOK_ARGS, audit, 1, NULL);
			p->runtimes |= SP_SPANS_PYTHON;	/* its runtime record: mode audit */
			snprintf(p->rlib[1], sizeof(p->rlib[1]), "%s", bin);
		} else if (sp_verbose) {
			sp_info("spans: pid %u: its Python has no audit probe (pyenv's build) and no "
				"activator in its environment: no audit events (%s)", p->pid,
				p->attached ? "a process started under sp-record with --spans=python "
				"gets them through the activator's hook; one running cannot be given it" :
				"--spans=python gives them, through the activator's hook");
		}
	}
	if ((provs & SP_SPANS_PYTHON) && (m & (SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT))) {
		if ((m & SP_SPANS_PYTHON) && hook_for(c, p, SP_RT_PYTHON, bin, hook, sizeof(hook))) {
			attach_hook(c, p, hook, SP_PR_PY_HOOK_CALL, false);
		} else if (m & SP_SPANS_PYTHON) {
			sp_bs_attach_any(c, p, sk->progs.on_py_function_multi, sk->progs.on_py_function,
					 bin, "python", "function__entry", SP_PR_PY_FUNCTION_ENTRY, NULL);
			if (p->attached)
				py_without_hook(p, bin, true);
			else
				sp_bs_attach_any(c, p, sk->progs.on_py_function_multi,
						 sk->progs.on_py_function, bin, "python",
						 "function__return", SP_PR_PY_FUNCTION_RETURN, NULL);
		}
		if (m & SP_SPANS_PY_AUDIT)
			sp_bs_attach_any(c, p, sk->progs.on_py_audit_multi, sk->progs.on_py_audit, bin,
					 "python", "audit", SP_PR_PY_AUDIT, NULL);
		p->runtimes |= SP_SPANS_PYTHON;
		snprintf(p->rlib[1], sizeof(p->rlib[1]), "%s", bin);
		any = true;
	}
	if ((provs & SP_SPANS_USDT) && (m & SP_SPANS_USDT)) {
		if (provs & SP_SPANS_USDT_REGS) {
			static const uint32_t marks[] = { SP_PR_SP_BEGIN, SP_PR_SP_END };

			sp_bs_attach_markers(c, p, bin, SP_SPANS_USDT_REGS_ARGS, marks, 2, NULL);
		} else {
			sp_bs_attach_any(c, p, sk->progs.on_sp_span_any_multi, sk->progs.on_sp_span, bin,
					 "stackpulse", "span__begin", SP_PR_SP_BEGIN, NULL);
			sp_bs_attach_any(c, p, sk->progs.on_sp_span_any_multi, sk->progs.on_sp_span, bin,
					 "stackpulse", "span__end", SP_PR_SP_END, NULL);
		}
		p->runtimes |= SP_SPANS_USDT;
		any = true;
	}
	(void)any;
}

static bool has_bin(const struct bs_proc *p, const char *bin)
{
	size_t i;

	for (i = 0; i < p->natt; i++)
		if (!strcmp(p->att[i]->bin, bin))
			return true;
	return false;
}

bool sp_bs_has_probe(const struct bs_proc *p, uint32_t probe)
{
	size_t i;

	for (i = 0; i < p->natt; i++)
		if (p->att[i]->probe == probe)
			return true;
	return false;
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
	r.runtime.library = sp_writer_strz(c->out->w, sp_bs_root_name(c, lib));
	r.runtime.mode = sp_writer_strz(c->out->w, mode);
	return c->out->emit(c->out->ctx, &r);
}

/* A runtime record for each runtime of p not announced yet; none while
 * -a has not checked its pid again (sp_bs_all_take() announces then). */
void sp_bs_announce(struct bs_ctx *c, struct bs_proc *p)
{
	unsigned int m = c->o->modes;
	char mode[64];

	if (c->all_seeding)
		return;

	if ((p->runtimes & SP_SPANS_RUBY) && !(p->announced & SP_SPANS_RUBY)) {
		snprintf(mode, sizeof(mode), "%s%s%s",
			 !(m & SP_SPANS_RUBY) ? "" : p->unhooked ? "method-when-traced" : "method",
			 (m & SP_SPANS_RUBY) && (m & SP_SPANS_RUBY_C) && !p->cm_refused ? "," : "",
			 (m & SP_SPANS_RUBY_C) && !p->cm_refused ? "cmethod" : "");
		emit_runtime(c, p, SP_RT_RUBY, p->rlib[0], *mode ? mode : "none");
		if (p->cm_refused)
			sp_bs_emit_unprobed(c, p, sp_now_mono_ns());
		p->announced |= SP_SPANS_RUBY;
	}
	if (p->py_none && !(p->runtimes & SP_SPANS_PYTHON) && !(p->announced & SP_SPANS_PYTHON)) {
		py_without_hook_said(p, false);
		emit_runtime(c, p, SP_RT_PYTHON, p->rlib[1], "none");
		sp_bs_emit_unprobed(c, p, sp_now_mono_ns());
		p->announced |= SP_SPANS_PYTHON;
	}
	if ((p->runtimes & SP_SPANS_PYTHON) && !(p->announced & SP_SPANS_PYTHON)) {
		bool audit = sp_bs_has_probe(p, SP_PR_PY_AUDIT) || sp_bs_has_probe(p, SP_PR_PY_HOOK_AUDIT);

		snprintf(mode, sizeof(mode), "%s%s%s",
			 !(m & SP_SPANS_PYTHON) ? "" : p->unhooked ? "profile-when-set" : "profile",
			 (m & SP_SPANS_PYTHON) && audit ? "," : "",
			 audit ? "audit" : "");
		emit_runtime(c, p, SP_RT_PYTHON, p->rlib[1], mode);
		p->announced |= SP_SPANS_PYTHON;
	}
	c->found |= p->runtimes;
}

struct scan_libs_ctx {
	struct bs_ctx *c;
	struct bs_proc *p;
	const char *rt;		/* the activators' directory, or NULL */
	bool any;
};

static int scan_libs_line(void *ctx, const struct sp_proc_map *m)
{
	struct scan_libs_ctx *s = ctx;
	const char *base = strrchr(m->path, '/');
	char host[PATH_MAX];
	int provs;

	if (!(m->prot & PROT_EXEC) || m->path[0] != '/' || !strstr(base, ".so") ||
	    (s->rt && !strncmp(m->path, s->rt, strlen(s->rt))) ||
	    sp_bs_mapped_path(s->c, s->p->pid, m, false, host, sizeof(host)) ||
	    !strcmp(host, s->p->exe) || has_bin(s->p, host))
		return 0;
	provs = sp_bs_providers_cached(host);
	if (!(provs & SP_SPANS_USDT))
		return 0;
	attach_bin(s->c, s->p, host, provs & (SP_SPANS_USDT | SP_SPANS_USDT_REGS));
	s->c->late_libs++;
	s->any = true;
	return 0;
}

/*
 * ld.so of process p has changed its libraries: the mapped ones that have
 * probes for the modes asked and none yet (their markers from now on;
 * what ran between the dlopen and now is missed). The runtime hooks
 * (runtime) have theirs attached at exec.
 */
void sp_bs_scan_libs(struct bs_ctx *c, struct bs_proc *p)
{
	struct scan_libs_ctx s = { c, p, sp_spans_runtime_dir(c->o), false };

	sp_procfs_maps(p->pid, SP_BS_MAPS_BYTES, scan_libs_line, &s);
	if (s.any)
		sp_bs_announce(c, p);
}

/*
 * The libraries a running process maps that may have probes, once each:
 * every libruby and libpython (at most SP_BS_RUNTIME_LIBS_MAX), and with
 * --spans=usdt the other .so files, of which up to SP_BS_LIBS_MAX that
 * have <stackpulse/span.h> markers get them (said once per process when
 * more have). The others are looked at up to SP_BS_LIBS_LOOKED, each an
 * ELF read (cached by file, sp_bs_providers_cached()); in a container's
 * mount namespace, where each looked at is a kept descriptor of the
 * recording's SP_BS_ROOT_FILES, only SP_BS_LIBS_MAX. The maps list files by
 * address, which ASLR shuffles: a Python that imported a dozen extension
 * modules maps them before its libpython, so the runtimes' libraries have
 * a cap of their own and are attached first, and a library with markers
 * is not crowded out by the dozens without.
 */
#define SP_BS_RUNTIME_LIBS_MAX	16
#define SP_BS_LIBS_MAX		16
#define SP_BS_LIBS_LOOKED	256
struct lib_list {
	struct {
		char *path;
		bool runtime;
		struct sp_proc_map map;	/* a mapped one's (ino 0: one searched
					 * for at exec, not mapped yet) */
	} *lib;
	size_t n, cap, runtimes, others;
	size_t max_others;	/* looked at: SP_BS_LIBS_LOOKED or SP_BS_LIBS_MAX */
	bool cut_runtimes, cut_others;
};

static void lib_add(struct lib_list *l, const char *path, bool runtime,
		    const struct sp_proc_map *m)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->lib[i].path, path))
			return;
	if (runtime ? l->runtimes >= SP_BS_RUNTIME_LIBS_MAX : l->others >= l->max_others) {
		*(runtime ? &l->cut_runtimes : &l->cut_others) = true;
		return;
	}
	sp_grow(&l->lib, &l->cap, l->n + 1, sizeof(*l->lib));
	l->lib[l->n].path = sp_xstrdup(path);
	l->lib[l->n].map = m ? *m : (struct sp_proc_map){ 0 };
	l->lib[l->n].map.path = l->lib[l->n].path;
	l->lib[l->n++].runtime = runtime;
	if (runtime)
		l->runtimes++;
	else
		l->others++;
}

/* Attach what the libraries of l have for p, the runtimes' first; a
 * library not named as a runtime's gets only its <stackpulse/span.h>
 * markers (as sp_bs_scan_libs() gives a dlopen()ed one). Frees l. */
static void lib_attach(struct bs_ctx *c, struct bs_proc *p, struct lib_list *l)
{
	char host[PATH_MAX];
	size_t i, marked = 0;
	int pass, provs;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < l->n; i++) {
			if (l->lib[i].runtime != !pass ||
			    (l->lib[i].map.ino ?
				     sp_bs_mapped_path(c, p->pid, &l->lib[i].map, false, host,
						       sizeof(host)) :
				     sp_bs_host_path(c, p->pid, l->lib[i].path, host, sizeof(host))))
				continue;
			provs = sp_bs_providers_cached(host);
			if (!l->lib[i].runtime) {
				provs &= SP_SPANS_USDT | SP_SPANS_USDT_REGS;
				if (provs && marked++ >= SP_BS_LIBS_MAX) {
					l->cut_others = true;
					continue;
				}
			}
			attach_bin(c, p, host, provs);
		}
	for (i = 0; i < l->n; i++)
		free(l->lib[i].path);
	free(l->lib);
	if (l->cut_runtimes)
		sp_info("spans: pid %u maps more than %d libruby or libpython libraries: the "
			"others get no probes", p->pid, SP_BS_RUNTIME_LIBS_MAX);
	if (l->cut_others)
		sp_info("spans: pid %u maps more than %zu other libraries, or more than %d with "
			"<stackpulse/span.h> markers: markers in the others are attached only "
			"if one is loaded later (dlopen)", p->pid, l->max_others, SP_BS_LIBS_MAX);
}

/*
 * A runtime library the search found for p, stopped at its exec, to be
 * compared with what ld.so maps once it runs (sp_bs_verify_libs()). Not
 * for a container's process: the search looked at the host's directories,
 * and its maps name files in its root, whose inodes (overlayfs) need not
 * be those stat() gives.
 */
static void found_add(struct bs_ctx *c, struct bs_proc *p, const char *path)
{
	bool py = strncmp(strrchr(path, '/') + 1, "libruby", 7) != 0;
	unsigned int m = c->o->modes;
	struct stat st;
	size_t i;

	if (!(m & (py ? SP_SPANS_PYTHON | SP_SPANS_PY_AUDIT : SP_SPANS_RUBY | SP_SPANS_RUBY_C)) ||
	    !strncmp(p->exe, "/proc/self/fd/", 14) || stat(path, &st))
		return;
	for (i = 0; i < sizeof(p->found) / sizeof(p->found[0]); i++)
		if (!p->found[i].ino) {
			p->found[i].hash = sp_hash_bytes(path, strlen(path));
			p->found[i].dev = (uint64_t)st.st_dev;
			p->found[i].ino = (uint64_t)st.st_ino;
			p->found[i].py = py;
			p->libs_unverified = true;
			p->verify_tries = 0;
			return;
		}
}

/* The rights a process opens files with (its file-system uid and groups,
 * from /proc/PID/status: not its /proc directory's owner, which is root's
 * for a process made non-dumpable, by an exec of a file it may not read);
 * not known when it is gone: then only what every user may read is its
 * (a process killed while held must not make root follow its links). */
static void proc_creds(uint32_t pid, struct sp_elf_libsearch *how)
{
	if (sp_procfs_creds(pid, &how->uid, &how->gid, how->groups, SP_ELF_GROUPS_MAX,
			    &how->ngroups)) {
		how->uid = SP_ELF_UID_UNKNOWN;
		how->ngroups = 0;
	}
}

struct image_ctx {
	struct bs_ctx *c;
	struct bs_proc *p;
	const char *exe;	/* its executable, as its maps name it */
	struct lib_list *libs;
	bool runtime_mapped;	/* a libruby or libpython: it runs already */
};

/* A mapping of the image p runs: the executable's (where its code is, by
 * address), or a library that may have probes. */
static int image_line(void *ctx, const struct sp_proc_map *m)
{
	struct image_ctx *ic = ctx;
	struct bs_proc *p = ic->p;
	const char *base = strrchr(m->path, '/');
	bool runtime;

	if (m->path[0] != '/')
		return 0;
	if (!strcmp(m->path, ic->exe)) {
		if (p->nmap < 8) {
			p->map[p->nmap].start = m->start;
			p->map[p->nmap].end = m->end;
			p->map[p->nmap].off = m->pgoff;
			p->nmap++;
			p->exe_dev = m->dev;
			p->exe_ino = m->ino;
		}
		return 0;
	}
	/* <stackpulse/span.h> markers may be in any library */
	runtime = sp_bs_runtime_lib_name(base + 1);
	ic->runtime_mapped |= runtime;
	if (runtime || ((ic->c->o->modes & SP_SPANS_USDT) && strstr(base + 1, ".so")))
		lib_add(ic->libs, m->path, runtime, m);
	return 0;
}

/* Attach everything for the image process p runs now: at_exec, stopped at
 * its exec (whether or not sp-record started its tree: a child of a -p
 * process too), its libraries not mapped yet. */
void sp_bs_attach_image(struct bs_ctx *c, struct bs_proc *p, bool at_exec)
{
	char exe[PATH_MAX], host[PATH_MAX], link[64];
	struct lib_list libs = { .max_others = SP_BS_LIBS_LOOKED };
	struct image_ctx ic = { c };
	bool unreached;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%u/exe", p->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;		/* gone */
	exe[n] = 0;
	/* exe and the maps name files as p sees them (a container's own) */
	unreached = sp_bs_exe_path(c, p->pid, exe, host, sizeof(host)) < 0;
	snprintf(p->exe, sizeof(p->exe), "%s", unreached ? exe : host);
	p->nmap = 0;
	p->exe_dev = p->exe_ino = 0;
	if (c->o->modes && !unreached) {
		attach_bin(c, p, p->exe, sp_bs_providers_cached(p->exe));
		if (!strncmp(p->exe, "/proc/self/fd/", 14))
			libs.max_others = SP_BS_LIBS_MAX;	/* a container's */
		/* Libraries: mapped ones (a running process), else what the
		 * executable needs (stopped at exec: nothing is mapped yet). */
		ic.p = p;
		ic.exe = exe;
		ic.libs = &libs;
		sp_procfs_maps(p->pid, SP_BS_MAPS_BYTES, image_line, &ic);
		/* stopped at exec, only the executable and ld.so are mapped */
		/* (-a takes only processes with a hook: not their execs' runtimes) */
		if ((at_exec && !c->all) || !p->attached) {
			char (*need)[4096] = sp_xmalloc(16 * sizeof(*need)), cwd[64];
			struct sp_elf_libsearch how = { .cwd = cwd };
			size_t elen;
			bool cut;
			char *env = sp_bs_proc_environ(p->pid, &elen, &cut);
			int nn, k;

			/* found as ld.so will for it: its LD_LIBRARY_PATH
			 * (the last, as ld.so takes it), unless it runs
			 * AT_SECURE (set-ID, capabilities), its directory */
			snprintf(cwd, sizeof(cwd), "/proc/%u/cwd", p->pid);
			if (!sp_procfs_at_secure(p->pid))
				how.ld_path = sp_bs_env_get(env, elen, "LD_LIBRARY_PATH", true);
			/* its user's: what it could not read is not taken */
			proc_creds(p->pid, &how);
			nn = sp_spans_needed_libs(p->exe, c->o->modes & SP_SPANS_USDT, &how, need, 16);
			/* what it found there, or could not find, depends on
			 * its environment, not only on its file: a later exec
			 * of the file is looked at again (sp_bs_mark_plain()) */
			if (how.via_ld_path || how.missing || cut)
				p->env_probes = true;
			free(env);

			for (k = 0; k < nn; k++) {
				bool rt = sp_bs_runtime_lib_name(strrchr(need[k], '/') + 1);

				lib_add(&libs, need[k], rt, NULL);
				if (rt && !ic.runtime_mapped)
					found_add(c, p, need[k]);
			}
			free(need);
		}
		lib_attach(c, p, &libs);
	}
	sp_bs_attach_funcs(c, p);
	sp_bs_announce(c, p);
}

/* The USDT-link program of a uprobe_multi one, for the same probe
 * (sp_bs_attach_any(, NULL)'s pairs); NULL for others. */
static struct bpf_program *usdt_twin(struct bs_ctx *c, const struct bpf_program *multi)
{
	struct sp_spans *sk = c->skel;

	if (multi == sk->progs.on_ruby_method_multi)
		return sk->progs.on_ruby_method;
	if (multi == sk->progs.on_ruby_raise_multi)
		return sk->progs.on_ruby_raise;
	if (multi == sk->progs.on_py_function_multi)
		return sk->progs.on_py_function;
	if (multi == sk->progs.on_py_audit_multi)
		return sk->progs.on_py_audit;
	if (multi == sk->progs.on_sp_span_any_multi)
		return sk->progs.on_sp_span;
	return NULL;
}

/* A forked child: the same image as its parent; with probes: attach the
 * same probes (the child is stopped). A uprobe_multi link the kernel
 * refuses the child gets as a USDT link, as its parent would have. */
void sp_bs_attach_like(struct bs_ctx *c, struct bs_proc *child, const struct bs_proc *parent,
		       bool probes)
{
	struct sp_spans *sk = c->skel;
	size_t i;

	for (i = 0; probes && i < parent->natt; i++) {
		const struct bs_att *a = parent->att[i];
		struct bpf_program *prog;
		struct bpf_link *l;

		if (child->late_probes && (a->probe == SP_PR_RUBY_RAISE ||
					   a->probe == SP_PR_PY_AUDIT)) {
			child->late_probes |= 1u << a->probe;	/* when it lives on */
			child->late_dev[a->probe == SP_PR_PY_AUDIT] = a->dev;
			child->late_ino[a->probe == SP_PR_PY_AUDIT] = a->ino;
			continue;
		} else if (a->shared) {	/* the hook file's link covers it too */
			sp_bs_att_add_link(child, a->probe, a->func, a->bin, a->prog,
					   (struct bs_link){ .fd = -1 }, true, a->args);
			child->att[child->natt - 1]->group = a->group;
			child->att[child->natt - 1]->shared = true;
			continue;
		} else if (a->probe == SP_PR_UPROBE_ENTRY || a->probe == SP_PR_UPROBE_RETURN) {
			LIBBPF_OPTS(bpf_uprobe_opts, uo,
				    .bpf_cookie = (uint64_t)child->gen << 32 | a->func,
				    .retprobe = a->probe == SP_PR_UPROBE_RETURN);

			prog = uo.retprobe ? sk->progs.on_func_return : sk->progs.on_func_entry;
			pthread_mutex_lock(&c->bpf_lock);
			l = bpf_program__attach_uprobe_opts(prog, child->pid,
							    c->funcs[a->func].attach,
							    c->funcs[a->func].off, &uo);
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
			sp_bs_attach_markers(c, child, a->bin, a->args, probes, n, a);
			continue;
		} else if (a->multi) {	/* a uprobe_multi link: the same */
			const char *prov = sp_bs_probe_names[a->probe];
			const char *name = strchr(prov, ':') + 1;
			char provider[16];

			snprintf(provider, sizeof(provider), "%.*s", (int)(name - 1 - prov), prov);
			if (sp_bs_attach_multi(c, child, a->prog, a->bin, provider, name, a->probe,
					       a) && (prog = usdt_twin(c, a->prog)))
				sp_bs_attach_usdt_how(c, child, prog, a->bin, provider, name,
						      a->probe, a);
			continue;
		} else {	/* libbpf's USDT link */
			const char *prov, *name = strchr(sp_bs_probe_names[a->probe], ':') + 1;
			char provider[16];

			prov = sp_bs_probe_names[a->probe];
			snprintf(provider, sizeof(provider), "%.*s", (int)(name - 1 - prov), prov);
			sp_bs_attach_usdt_how(c, child, a->prog, a->bin, provider, name, a->probe, a);
			continue;
		}
		if (l)
			sp_bs_att_add(child, a->probe, a->func, a->bin, prog, l);
	}
	memcpy(child->exe, parent->exe, sizeof(child->exe));
	memcpy(child->map, parent->map, sizeof(child->map));
	child->nmap = parent->nmap;
	child->exe_dev = parent->exe_dev;
	child->exe_ino = parent->exe_ino;
	child->runtimes = parent->runtimes;
	child->cm_pending = parent->cm_pending;
	child->ret_pending = parent->ret_pending;
	child->py_none = parent->py_none;
	child->unhooked = parent->unhooked;
	child->attached = parent->attached;
	child->running = parent->running;
	memcpy(child->rlib, parent->rlib, sizeof(child->rlib));
	/* made before its parent's maps were looked at: its own are */
	if (probes && parent->libs_unverified) {
		memcpy(child->found, parent->found, sizeof(child->found));
		child->libs_unverified = true;
		child->verify_tries = 0;
		sp_bs_verify_later(c, child);
	}
	if (probes)	/* not a vfork child: it runs no code of the image */
		sp_bs_announce(c, child);
}

struct ldso_ctx {
	uint32_t pid;
	char *path;
	size_t size;
	struct stat *st;
	const char **why;
	int fd;
	bool found;
};

static int ldso_line(void *ctx, const struct sp_proc_map *m)
{
	struct ldso_ctx *c = ctx;
	const char *base = strrchr(m->path, '/');
	char mf[96];

	if (m->path[0] != '/' || strncmp(base + 1, "ld-", 3) || !strstr(base, ".so"))
		return 0;
	/* its first mapping: the others are the same file's */
	c->found = true;
	snprintf(c->path, c->size, "%s", m->path);
	snprintf(mf, sizeof(mf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, c->pid, m->start,
		 m->end);
	c->fd = sp_safe_open(AT_FDCWD, mf, NULL, c->st, c->why);
	if (c->fd < 0 && errno == EPERM && !*c->why) {
		c->fd = sp_safe_open(AT_FDCWD, m->path, NULL, c->st, c->why);
		if (c->fd >= 0 && ((uint64_t)c->st->st_dev != m->dev ||
				   (uint64_t)c->st->st_ino != m->ino)) {
			close(c->fd);
			c->fd = -1;
			*c->why = "another file is at its path";
		}
	}
	if (c->fd < 0 && !*c->why)
		*c->why = strerror(errno);
	return 1;
}

/*
 * The ld.so process pid maps (its program interpreter), opened through
 * /proc/PID/map_files: the very file it maps, whatever its path names now
 * (another user's file, a container's), checked as sp_safe_open() does;
 * without the capability map_files asks for (CAP_SYS_ADMIN: sp-record may
 * run with CAP_BPF and CAP_PERFMON alone), by its path, taken only if it
 * is the file the maps line names (device and inode). path gets the name
 * its maps give, for messages. -1 when there is none (a static program, or
 * not within SP_BS_MAPS_BYTES of its maps), the process is gone, or the
 * file cannot be had (*why, said once).
 */
static int ldso_of(uint32_t pid, char *path, size_t size, struct stat *st, const char **why)
{
	struct ldso_ctx c = { pid, path, size, st, why, -1, false };

	*why = NULL;
	sp_procfs_maps(pid, SP_BS_MAPS_BYTES, ldso_line, &c);
	return c.fd;
}

/*
 * <stackpulse/span.h> markers in libraries loaded later (dlopen): ld.so
 * calls _dl_debug_state() when its list of libraries changes, for
 * debuggers. A uprobe there in each process of the tree (a trap at its
 * start-up, each dlopen and dlclose), never in others: its breakpoint in
 * every process that maps ld.so would stop debuggers and valgrind, which
 * take it for their own. scan: look at the libraries p has mapped now (it
 * ran before the probe was there). The function's offset is read from,
 * and the probe put on, the file p maps (ldso_of()), by its descriptor's
 * name: never a path's file that may have changed since.
 */
void sp_bs_attach_dl(struct bs_ctx *c, struct bs_proc *p, bool scan)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	char path[PATH_MAX] = "", file[32];
	const char *why;
	struct bpf_link *l;
	struct stat st;
	uint64_t off = 0;
	unsigned int i;
	int fd;

	if (!(c->o->modes & SP_SPANS_USDT) || p->exited || p->dl.link || p->dl.fd >= 0)
		return;
	fd = ldso_of(p->pid, path, sizeof(path), &st, &why);
	if (fd < 0) {
		if (why && !c->dl_warned && !p->exited) {
			c->dl_warned = true;
			sp_info("spans: cannot open pid %u's ld.so '%s' (%s): libraries loaded with "
				"dlopen() get no probes", p->pid, path, why);
		}
		return;
	}
	snprintf(file, sizeof(file), "/proc/self/fd/%d", fd);
	for (i = 0; i < c->nldso; i++)
		if (c->ldso[i].dev == (uint64_t)st.st_dev && c->ldso[i].ino == (uint64_t)st.st_ino &&
		    c->ldso[i].size == (uint64_t)st.st_size &&
		    c->ldso[i].ctime_ns == (uint64_t)st.st_ctim.tv_sec * 1000000000ull +
					   (uint64_t)st.st_ctim.tv_nsec)
			break;
	if (i < c->nldso) {
		off = c->ldso[i].off;
	} else {
		off = sp_elf_func_offset(file, "_dl_debug_state");
		if (!off)
			sp_info("spans: no _dl_debug_state in '%s': libraries loaded with "
				"dlopen() get no probes", path);
		/* the first ld.so stays (the host's, as a rule), a third
		 * replaces the second (containers') */
		i = c->nldso < 2 ? c->nldso++ : 1;
		snprintf(c->ldso[i].path, sizeof(c->ldso[i].path), "%s", path);
		c->ldso[i].dev = (uint64_t)st.st_dev;
		c->ldso[i].ino = (uint64_t)st.st_ino;
		c->ldso[i].size = (uint64_t)st.st_size;
		c->ldso[i].ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000ull +
				      (uint64_t)st.st_ctim.tv_nsec;
		c->ldso[i].off = off;
	}
	if (!off) {
		close(fd);
		return;
	}
	if (!c->no_multi) {
		union bpf_attr attr;
		struct sp_uprobe_multi_attr *u = (void *)&attr;
		uint64_t cookie = 0;
		int lfd;

		memset(&attr, 0, sizeof(attr));
		u->prog_fd = bpf_program__fd(c->skel->progs.on_dl_state_multi);
		u->attach_type = SP_BPF_TRACE_UPROBE_MULTI;
		u->path = (uintptr_t)file;
		u->offsets = (uintptr_t)&off;
		u->cookies = (uintptr_t)&cookie;
		u->cnt = 1;
		u->pid = p->pid;
		lfd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
		if (lfd >= 0) {
			fcntl(lfd, F_SETFD, FD_CLOEXEC);
			p->dl.fd = lfd;
		} else if (errno == ESRCH) {
			close(fd);
			return;
		}	/* else this link only: sp_bs_probe_multi() */
	}
	if (p->dl.fd < 0) {
		l = bpf_program__attach_uprobe_opts(c->skel->progs.on_dl_state, p->pid, file, off,
						    &uo);
		if (!l && errno != ESRCH && errno != ENOENT && !c->dl_warned) {
			c->dl_warned = true;
			sp_info("spans: cannot probe %s's _dl_debug_state (pid %u: %s): libraries "
				"loaded with dlopen() get no probes", path, p->pid, strerror(errno));
		}
		p->dl.link = l;
	}
	close(fd);	/* the probe holds the inode */
	if (scan && (p->dl.link || p->dl.fd >= 0))
		sp_bs_scan_libs(c, p);
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
void sp_bs_attach_dl_later(struct bs_ctx *c, struct bs_proc *p)
{
	if (!(c->o->modes & SP_SPANS_USDT))
		return;
	sp_grow(&c->dlw, &c->cdlw, c->ndlw + 1, sizeof(*c->dlw));
	c->dlw[c->ndlw++] = (struct dl_wait){ .p = p, .due = sp_now_mono_ns() + SP_DL_AFTER_NS };
}

/*
 * A fork child that was not held (its parent's markers are the hook files'
 * links: attach_shared()) gets its own Ruby raise and Python audit probes
 * only once it has lived SP_DL_AFTER_NS: attaching and detaching a uprobe
 * write-locks the memory map of every process that maps its file, the
 * parent's too, and most such children exec at once (system(), a shell's
 * fork). A raise or audit event of the child before then is missed.
 */
void sp_bs_attach_late(struct bs_ctx *c, struct bs_proc *p)
{
	sp_grow(&c->dlw, &c->cdlw, c->ndlw + 1, sizeof(*c->dlw));
	c->dlw[c->ndlw++] = (struct dl_wait){ .p = p, .due = sp_now_mono_ns() + SP_DL_AFTER_NS };
}

static void attach_late_now(struct bs_ctx *c, struct bs_proc *p)
{
	struct sp_spans *sk = c->skel;
	uint32_t late = p->late_probes;
	/* on the files its parent's were on, which it maps */
	struct bs_att rb = { .dev = p->late_dev[0], .ino = p->late_ino[0] };
	struct bs_att py = { .dev = p->late_dev[1], .ino = p->late_ino[1] };

	p->late_probes = 0;
	if ((late & 1u << SP_PR_RUBY_RAISE) && p->rlib[0][0])
		sp_bs_attach_any(c, p, sk->progs.on_ruby_raise_multi, sk->progs.on_ruby_raise,
				 p->rlib[0], "ruby", "raise", SP_PR_RUBY_RAISE, &rb);
	if ((late & 1u << SP_PR_PY_AUDIT) && p->rlib[1][0])
		sp_bs_attach_any(c, p, sk->progs.on_py_audit_multi, sk->progs.on_py_audit,
				 p->rlib[1], "python", "audit", SP_PR_PY_AUDIT, &py);
}

/* the look at the maps of a process whose runtime libraries were found by
 * search at exec: at its start-up's ld.so trap, else this long after */
#define SP_VERIFY_AFTER_NS	20000000ull

#define SP_VERIFY_OTHERS	4
struct verify_ctx {
	struct bs_ctx *c;
	struct bs_proc *p;
	bool seen[2];		/* a libruby, a libpython is mapped */
	bool found_mapped[2];	/* one of the files found of that kind is */
	bool exe_ok;		/* its executable is the image looked at */
	/* the others of each kind, by address: names and mappings */
	char other[2][SP_VERIFY_OTHERS][PATH_MAX];
	struct sp_proc_map other_map[2][SP_VERIFY_OTHERS];
	int nother[2];
};

/* The attachments of p in bin (a runtime library it does not map) go: a
 * fork child's copy of them would be said to be stale. Those holding
 * others' markers (a group) stay. What went: 1 << probe of each. */
static uint32_t drop_bin(struct bs_ctx *c, struct bs_proc *p, const char *bin)
{
	uint32_t gone = 0;
	size_t i, k = 0;

	for (i = 0; i < p->natt; i++) {
		struct bs_att *a = p->att[i];

		if (strcmp(a->bin, bin) || a->group || a->shared) {
			p->att[k++] = a;
			continue;
		}
		gone |= 1u << a->probe;
		if (a->link.link || a->link.fd >= 0)
			sp_bs_detach_link(c, a->link, false);
		free(a);
	}
	p->natt = k;
	return gone;
}

/* Whether p has probes in the file bin with inode ino. */
static bool probed_file(const struct bs_proc *p, const char *bin, uint64_t ino)
{
	size_t i;

	for (i = 0; i < p->natt; i++)
		if (p->att[i]->ino == ino && !strcmp(p->att[i]->bin, bin))
			return true;
	return false;
}

/* The spool's count of a process whose probes moved late: a lost record
 * (what=late_probes, its pid) for the time from its exec (or fork) until
 * now, in which its runtime's probes were on another file or none. */
static void emit_late_probes(struct bs_ctx *c, const struct bs_proc *p)
{
	struct sp_record l = { .kind = SP_REC_LOST };
	uint64_t now = sp_now_mono_ns();

	l.lost.what = SP_LOST_LATE_PROBES;
	l.lost.count = 1;
	l.lost.pid = p->pid;
	l.lost.time = now;
	l.lost.start = p->image_ns && p->image_ns <= now ? p->image_ns : now;
	c->out->emit(c->out->ctx, &l);	/* a write error is the writer's to say */
}

/* p maps host (a libruby, rb, or libpython), not the file of that runtime
 * the search found (was: the one with its probes, or ""): its probes go
 * to host; said when some were on the other file. */
static bool move_runtime(struct bs_ctx *c, struct bs_proc *p, const char *path,
			 const char *host, uint64_t ino, bool rb)
{
	struct sp_spans *sk = c->skel;
	char was_said[PATH_MAX + 2], old[PATH_MAX];
	const char *was = p->rlib[rb ? 0 : 1];
	int provs = sp_bs_providers_cached(host), k = rb ? 0 : 1;
	struct stat st;
	uint32_t gone;
	size_t before;
	bool hooked;

	if (!(provs & (rb ? SP_SPANS_RUBY : SP_SPANS_PYTHON | SP_SPANS_PY_HOOKABLE)))
		return false;	/* a stub (libpython3.so), or no runtime's */
	if (probed_file(p, host, ino)) {	/* it had them all along */
		if (strcmp(was, host))
			drop_bin(c, p, was);
		snprintf(p->rlib[k], sizeof(p->rlib[k]), "%s", host);
		return true;
	}
	gone = was[0] ? drop_bin(c, p, was) : 0;
	before = p->natt;
	snprintf(old, sizeof(old), "%s", was);	/* rlib[k] changes below */
	/* a new runtime record names the library it maps */
	p->announced &= ~(unsigned int)(rb ? SP_SPANS_RUBY : SP_SPANS_PYTHON);
	/* an unheld fork child's late raise and audit probes: that file */
	if (p->late_ino[k] && !stat(host, &st) && (uint64_t)st.st_ino == ino) {
		p->late_dev[k] = (uint64_t)st.st_dev;
		p->late_ino[k] = ino;
	}
	hooked = (rb && sp_bs_has_probe(p, SP_PR_RB_HOOK_CALL)) ||
		 (!rb && (sp_bs_has_probe(p, SP_PR_PY_HOOK_CALL) ||
			  sp_bs_has_probe(p, SP_PR_PY_HOOK_AUDIT)));
	if (rb && hooked) {
		/* its hook's marks came all along: the library's own probes */
		snprintf(p->rlib[0], sizeof(p->rlib[0]), "%s", host);
		if (gone & 1u << SP_PR_RUBY_RAISE)
			sp_bs_attach_any(c, p, sk->progs.on_ruby_raise_multi, sk->progs.on_ruby_raise,
					 host, "ruby", "raise", SP_PR_RUBY_RAISE, NULL);
		if (gone & (1u << SP_PR_RUBY_CMETHOD_ENTRY | 1u << SP_PR_RUBY_CMETHOD_RETURN))
			sp_bs_attach_cmethod(c, p, host);
	} else if (hooked) {
		snprintf(p->rlib[1], sizeof(p->rlib[1]), "%s", host);
		if ((gone & 1u << SP_PR_PY_AUDIT) && (provs & SP_SPANS_PYTHON))
			sp_bs_attach_any(c, p, sk->progs.on_py_audit_multi, sk->progs.on_py_audit,
					 host, "python", "audit", SP_PR_PY_AUDIT, NULL);
	} else {
		attach_bin(c, p, host, provs & (rb ? SP_SPANS_RUBY : SP_SPANS_PYTHON |
							     SP_SPANS_PY_HOOKABLE));
	}
	if (p->natt)	/* BPF: it has probes (a file found had none) */
		sp_bs_set_tracked(c, p, true);
	/* said when probes moved, or came only now: what ran before is missed */
	if (!gone && p->natt <= before)
		return true;
	c->other_libs++;
	emit_late_probes(c, p);
	if (c->other_lib_warned && !sp_verbose)
		return true;
	/* names as they are: the message printer escapes (error.c) */
	if (old[0])
		snprintf(was_said, sizeof(was_said), "'%s'", old);
	else
		snprintf(was_said, sizeof(was_said), "the library, which has no probes,");
	(c->other_lib_warned ? sp_info : sp_warn)(
		"pid %u: ld.so took '%s', not %s that sp-record found as it would (a "
		"directory only ld.so.cache lists, a $PLATFORM, tls or x86_64 subdirectory, "
		"GLIBC_TUNABLES, LD_PRELOAD, or a file put at the path meanwhile): %s%s",
		p->pid, path, was_said,
		hooked ? "its hook's spans came all along; its own probes (raises, C methods, "
			 "audit events) go there now, those before are missed" :
			 "its probes go there now, what ran before is missed",
		c->other_lib_warned ? "" : " (later ones: with -v)");
	c->other_lib_warned = true;
	return true;
}

/* Whether the mapping m (a runtime library of kind py) is a file the search
 * found: by name and inode, or by the device and inode stat() gives (a hard
 * link, a bind mount; overlayfs, whose maps give the lower file's inode). */
static bool is_found(const struct bs_proc *p, const struct sp_proc_map *m, bool py)
{
	uint64_t hash = sp_hash_bytes(m->path, strlen(m->path));
	size_t i, n = sizeof(p->found) / sizeof(p->found[0]);
	struct stat st;
	bool st_ok = false, st_tried = false;

	for (i = 0; i < n; i++) {
		if (!p->found[i].ino || p->found[i].py != py)
			continue;
		if (p->found[i].hash == hash && p->found[i].ino == m->ino)
			return true;
		if (!st_tried) {
			st_tried = true;
			st_ok = !stat(m->path, &st);
		}
		if (st_ok && (uint64_t)st.st_ino == p->found[i].ino &&
		    (uint64_t)st.st_dev == p->found[i].dev)
			return true;
	}
	return false;
}

static int verify_line(void *ctx, const struct sp_proc_map *m)
{
	struct verify_ctx *v = ctx;
	struct bs_proc *p = v->p;
	const char *base = strrchr(m->path, '/');
	int k;

	if (m->path[0] != '/')
		return 0;
	if (p->exe_ino && m->ino == p->exe_ino)
		v->exe_ok = true;
	if (!(m->prot & PROT_EXEC) || !sp_bs_runtime_lib_name(base + 1))
		return 0;
	k = strncmp(base + 1, "libruby", 7) != 0;
	v->seen[k] = true;
	if (is_found(p, m, k)) {
		v->found_mapped[k] = true;
	} else if (v->nother[k] < SP_VERIFY_OTHERS &&
		   (!v->nother[k] || strcmp(v->other[k][v->nother[k] - 1], m->path))) {
		snprintf(v->other[k][v->nother[k]], PATH_MAX, "%s", m->path);
		v->other_map[k][v->nother[k]] = *m;
		v->other_map[k][v->nother[k]].path = v->other[k][v->nother[k]];
		v->nother[k]++;
	}
	return 0;
}

/* Whether a file of kind py was found and is not looked at yet. */
static bool found_any(const struct bs_proc *p, bool py)
{
	size_t i;

	for (i = 0; i < sizeof(p->found) / sizeof(p->found[0]); i++)
		if (p->found[i].ino && p->found[i].py == py)
			return true;
	return false;
}

/* Forget the files found of kind py: looked at. */
static void found_done(struct bs_proc *p, bool py)
{
	size_t i;

	for (i = 0; i < sizeof(p->found) / sizeof(p->found[0]); i++)
		if (p->found[i].py == py)
			p->found[i].ino = 0;
}

/*
 * p's runtime libraries were found at exec by a search done as ld.so's
 * (sp_elf_needed_libs()), before ld.so ran: ld.so may have taken another
 * file (a directory only its cache lists, a legacy subdirectory, a file
 * its owner put at the path in between). Its maps say, for each kind
 * (libruby, libpython) they have: when none of the files found of that
 * kind is mapped, and another is, the probes move there (what ran before
 * is missed), said once; when one is (another beside it: a native
 * extension built for another version), nothing changes. A kind not
 * mapped yet is looked at again: at the next ld.so trap, or (last: the
 * timer's look) up to SP_VERIFY_TRIES times more.
 */
#define SP_VERIFY_TRIES	10
void sp_bs_verify_libs(struct bs_ctx *c, struct bs_proc *p, bool last)
{
	struct verify_ctx *v = sp_xmalloc(sizeof(*v));
	char host[PATH_MAX];
	int j, k;

	memset(v, 0, sizeof(*v));
	v->c = c;
	v->p = p;
	if (sp_procfs_maps(p->pid, SP_BS_MAPS_BYTES, verify_line, v) || (p->exe_ino && !v->exe_ok)) {
		/* gone, or another image (an exec not seen yet): its own
		 * events say what comes next */
		p->libs_unverified = false;
		memset(p->found, 0, sizeof(p->found));
		free(v);
		return;
	}
	for (k = 0; k < 2; k++) {
		/* a kind none was found of (dlopen'd, LD_PRELOAD) is not ours
		 * to move */
		if (!v->seen[k] || !found_any(p, k))
			continue;
		found_done(p, k);
		for (j = 0; !v->found_mapped[k] && j < v->nother[k]; j++)
			/* the very file mapped: its path is its owner's to
			 * change while the probes move (a rare look) */
			if (!sp_bs_mapped_path(c, p->pid, &v->other_map[k][j], true, host,
					       sizeof(host)) &&
			    move_runtime(c, p, v->other[k][j], host, v->other_map[k][j].ino, k == 0))
				break;
	}
	free(v);
	p->libs_unverified = found_any(p, 0) || found_any(p, 1);
	if (p->libs_unverified && last && ++p->verify_tries <= SP_VERIFY_TRIES)
		sp_bs_verify_later(c, p);
	else if (last)
		p->libs_unverified = false;
	/* looked at, and no probes after all: its file is remembered so */
	if (!p->libs_unverified && !p->natt)
		sp_bs_mark_plain(c, p);
	sp_bs_announce(c, p);
}

/* The look at p's maps (sp_bs_verify_libs()) once it has run a little:
 * not for a later image (it exec'd again meanwhile). */
void sp_bs_verify_later(struct bs_ctx *c, struct bs_proc *p)
{
	sp_grow(&c->dlw, &c->cdlw, c->ndlw + 1, sizeof(*c->dlw));
	c->dlw[c->ndlw] = (struct dl_wait){ .p = p, .gen = p->gen, .verify = true,
					    .due = sp_now_mono_ns() + SP_VERIFY_AFTER_NS };
	c->ndlw++;
}

/* The waiting ld.so probes (and late probes) that are due. */
void sp_bs_attach_dl_due(struct bs_ctx *c, uint64_t now)
{
	size_t i, k = 0;

	for (i = 0; i < c->ndlw; i++) {
		struct bs_proc *p = c->dlw[i].p;

		if (p->exited || sp_bs_proc_get(c, p->pid) != p)
			continue;
		if (now < c->dlw[i].due) {
			c->dlw[k++] = c->dlw[i];
			continue;
		}
		if (c->dlw[i].verify) {
			if (p->libs_unverified && c->dlw[i].gen == p->gen)
				sp_bs_verify_libs(c, p, true);
			continue;
		}
		if (p->late_probes)
			attach_late_now(c, p);
		sp_bs_attach_dl(c, p, true);
	}
	c->ndlw = k;
}
