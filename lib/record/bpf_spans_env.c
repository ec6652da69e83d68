// SPDX-License-Identifier: MIT
/*
 * The runtime activators of the spans source (bpf_spans.h): where they
 * live (installed, build tree, $SP_RUNTIME_DIR), and the environment of
 * the command sp-record starts, which makes Ruby (RUBYOPT, RUBYLIB) and
 * Python (PYTHONPATH) load them, the hooks use span rings, and the Ruby
 * one traces only the methods --spans-match names; and the environment
 * of a process found running (the activators, LD_LIBRARY_PATH in it).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_spansP.h"
#include "buf.h"
#include "sp.h"

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
		if (sp_bs_is_file(probe) && realpath(probe, dir)) {
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

/* --spans-match: the globs one a line, for the activator (which then
 * traces the matching methods only). */
static int set_globs(const struct sp_spans_opts *o)
{
	struct sp_buf b = SP_BUF_INIT;
	unsigned int i;
	int ret;

	for (i = 0; i < o->nglobs; i++)
		sp_buf_printf(&b, "%s%s", i ? "\n" : "", o->globs[i]);
	ret = setenv("STACKPULSE_SPANS_MATCH", sp_buf_str(&b), 1);
	sp_buf_release(&b);
	return ret ? sp_error_errno("cannot set STACKPULSE_SPANS_MATCH") : 0;
}

/*
 * With --spans named, the spans are read from the command's first
 * instruction (a failed load ends sp-record before the command runs): a
 * thread whose ring fills before our first read of it waits for us while
 * we run (runtime/hook/ring.h), however long a loaded machine keeps us
 * off a CPU. Otherwise (--spans=auto: the load may fail, or come late),
 * and for an outer sp-record's name inherited, the hook's short wait.
 */
static int set_reader(const struct sp_spans_opts *o)
{
	char v[32];

	if (!o->explicit_modes)
		return unsetenv("STACKPULSE_SPAN_READER") ?
		       sp_error_errno("cannot unset STACKPULSE_SPAN_READER") : 0;
	snprintf(v, sizeof(v), "%llu",
		 (unsigned long long)sp_span_rings_claim_of((uint32_t)getpid()));
	return setenv("STACKPULSE_SPAN_READER", v, 1) ?
	       sp_error_errno("cannot set STACKPULSE_SPAN_READER") : 0;
}

int sp_spans_setup_env(const struct sp_spans_opts *o)
{
	const char *dir = sp_spans_runtime_dir(o);
	char path[PATH_MAX + 64];

	if (!(o->modes & (SP_SPANS_RUBY | SP_SPANS_RUBY_C | SP_SPANS_PYTHON)))
		return 0;
	if (!dir) {
		if (o->explicit_modes)
			return sp_error("cannot find the Ruby/Python activators "
					"(share/stackpulse/runtime): set SP_RUNTIME_DIR");
		sp_warn("cannot find the Ruby/Python activators: Ruby method and Python "
			"function spans will be missing");
		return 0;
	}
	if (o->modes & (SP_SPANS_RUBY | SP_SPANS_RUBY_C)) {
		/* what its hook marks: Ruby methods, C methods (Ruby's own
		 * probes for these can crash Ruby 3.1: docs/spans.md) */
		if (!getenv("STACKPULSE_RUBY_EVENTS") &&
		    setenv("STACKPULSE_RUBY_EVENTS",
			   !(o->modes & SP_SPANS_RUBY_C) ? "call" :
			   !(o->modes & SP_SPANS_RUBY) ? "c_call" : "call,c_call", 1))
			return sp_error_errno("cannot set STACKPULSE_RUBY_EVENTS");
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
	if (o->nglobs && set_globs(o))
		return -1;
	if (o->modes & SP_SPANS_PYTHON) {
		snprintf(path, sizeof(path), "%s/python", dir);
		if (prepend_env("PYTHONPATH", path, ":"))
			return -1;
	}
	/*
	 * The hooks' span rings (runtime/hook/ring.h). An explicit
	 * STACKPULSE_SPAN_RING (0: a marker per mark, and no C methods) is
	 * left alone.
	 */
	if (!getenv("STACKPULSE_SPAN_RING") && setenv("STACKPULSE_SPAN_RING", "1", 1))
		return sp_error_errno("cannot set STACKPULSE_SPAN_RING");
	return set_reader(o);
}

char *sp_bs_proc_environ(uint32_t pid, size_t *len, bool *cut)
{
	char name[64], *env = sp_xmalloc(SP_BS_ENVIRON_MAX), more;
	ssize_t r;
	size_t n = 0;
	int fd;

	*cut = false;
	snprintf(name, sizeof(name), "/proc/%u/environ", pid);
	fd = open(name, O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && n < SP_BS_ENVIRON_MAX - 1 &&
	       (r = read(fd, env + n, SP_BS_ENVIRON_MAX - 1 - n)) > 0)
		n += (size_t)r;
	if (fd >= 0 && n == SP_BS_ENVIRON_MAX - 1)
		*cut = read(fd, &more, 1) == 1;
	if (fd >= 0)
		close(fd);
	env[n] = 0;
	*len = n;
	return env;
}

const char *sp_bs_env_get(const char *env, size_t len, const char *name, bool last)
{
	size_t k = strlen(name);
	const char *e, *val = NULL;

	for (e = env; e < env + len; e += strlen(e) + 1)
		if (!strncmp(e, name, k) && e[k] == '=') {
			val = e + k + 1;
			if (!last)
				break;
		}
	return val;
}
