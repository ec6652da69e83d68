// SPDX-License-Identifier: MIT
/*
 * Whether a command sp-record starts runs Ruby (interpP.h): then the
 * Ruby walkers load before it runs (bpf_interp.c), not once it is found,
 * when its first samples would have native stacks only. A guess made
 * before the exec from what the exec will run: the file PATH names, by
 * its name or its link's ("ruby", "ruby3.1"), else by its "#!" line (its interpreter,
 * or env's first word that is no option or assignment: "bundle", "rake",
 * "gem" and "irb" are Ruby scripts). A wrong guess costs time, not
 * stacks: a Ruby that was not foreseen loads the walkers when it is found
 * and counts what it ran meanwhile. Only the first 256 bytes of a
 * regular file are read. A process sp-record attaches to (-p) runs Ruby
 * when its maps name a ruby or libruby file: it is sampled as soon as the
 * events are open, so its walkers load before.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/interpP.h"

#define SHEBANG_MAX	256

/* Whether the file name of path (len bytes) starts with prefix. */
static bool named(const char *path, size_t len, const char *prefix)
{
	const char *b = path;
	size_t i;

	for (i = 0; i < len; i++)
		if (path[i] == '/')
			b = path + i + 1;
	len -= (size_t)(b - path);
	return len >= strlen(prefix) && !strncmp(b, prefix, strlen(prefix));
}

static bool ruby_name(const char *path, size_t len)
{
	return named(path, len, "ruby");
}

static bool python_name(const char *path, size_t len)
{
	return named(path, len, "python3");
}

static bool shebang_names(const char *line, size_t len, bool (*name)(const char *, size_t))
{
	const char *p = line, *end, *w;
	bool env = false;

	if (len < 2 || p[0] != '#' || p[1] != '!')
		return false;
	end = memchr(line, '\n', len);
	end = end ? end : line + len;
	for (p += 2;; p = w) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		for (w = p; w < end && *w != ' ' && *w != '\t'; w++)
			;
		if (w == p)
			return false;
		/* env's options and NAME=VALUE words: the command comes after */
		if (env && (*p == '-' || memchr(p, '=', (size_t)(w - p))))
			continue;
		if (!env && w - p >= 4 && !memcmp(w - 4, "/env", 4)) {
			env = true;
			continue;
		}
		return name(p, (size_t)(w - p));
	}
}

bool sp_interp_shebang_ruby(const char *line, size_t len)
{
	return shebang_names(line, len, ruby_name);
}

/* The file the exec of cmd runs, as execvp() finds it, into out. */
static bool resolve(const char *cmd, char *out, size_t size)
{
	const char *path = getenv("PATH"), *p, *colon;
	size_t dlen;

	if (strchr(cmd, '/'))
		return snprintf(out, size, "%s", cmd) < (int)size;
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; ; p = colon + 1) {
		colon = strchr(p, ':');
		dlen = colon ? (size_t)(colon - p) : strlen(p);
		if (snprintf(out, size, "%.*s%s%s", (int)dlen, p, dlen ? "/" : "", cmd) <
		    (int)size && !access(out, X_OK))
			return true;
		if (!colon)
			return false;
	}
}

/* Whether cmd's file is named so (or links to a file named so), or its
 * "#!" line names such a file. */
static bool command_names(const char *cmd, bool (*name)(const char *, size_t))
{
	char path[PATH_MAX], real[PATH_MAX], buf[SHEBANG_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (!cmd || !*cmd || !resolve(cmd, path, sizeof(path)))
		return false;
	if (name(path, strlen(path)) || (realpath(path, real) && name(real, strlen(real))))
		return true;
	/* a regular file only, before it is opened: opening a device has
	 * effects of its own (a watchdog, a tape); O_NONBLOCK: one swapped in
	 * for a FIFO since does not hang us, and it is checked again */
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	n = fstat(fd, &st) || !S_ISREG(st.st_mode) ? -1 : read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 && shebang_names(buf, (size_t)n, name);
}

bool sp_interp_command_ruby(const char *cmd)
{
	return command_names(cmd, ruby_name);
}

bool sp_interp_command_interp(const char *cmd)
{
	return command_names(cmd, ruby_name) || command_names(cmd, python_name);
}

enum sp_interp_cmd sp_interp_command_kind(const char *cmd)
{
	if (!cmd)
		return SP_ICMD_NONE;
	if (sp_interp_command_ruby(cmd))
		return SP_ICMD_RUBY;
	return command_names(cmd, python_name) ? SP_ICMD_PYTHON : SP_ICMD_OTHER;
}

/*
 * A command but Python's: any may start a Ruby at once (sh -c, make, a
 * test runner), and loaded only once that Ruby was found, most of a short
 * Ruby's samples had no interpreted stack (`sh -c 'gem list'`: 353 of 368
 * samples; not awaited, 146-217); a Python most likely starts none, and
 * the load (0.1-0.25 s of the verifier a walker) would only delay it. -p:
 * its processes are sampled as soon as the events are open, so when one
 * runs Ruby. -a alone: its Rubies load them when the scan finds them.
 */
bool sp_interp_ruby_first(enum sp_interp_mode mode, enum sp_interp_cmd cmd, bool system_wide,
			  const uint32_t *pids, size_t npids, bool (*pid_ruby)(uint32_t pid))
{
	size_t i;

	if (mode == SP_INTERP_PYTHON || mode == SP_INTERP_NONE)
		return false;
	if (cmd != SP_ICMD_NONE)
		return cmd != SP_ICMD_PYTHON;
	if (system_wide)
		return false;
	for (i = 0; i < npids; i++)
		if (pid_ruby(pids[i]))
			return true;
	return false;
}

/* The path of a /proc/PID/maps line (after five fields), or NULL. */
static const char *maps_path(const char *line)
{
	const char *p = line;
	int field;

	for (field = 0; field < 5; field++) {
		p = strchr(p, ' ');
		if (!p)
			return NULL;
		while (*p == ' ')
			p++;
	}
	return *p == '/' ? p : NULL;
}

bool sp_interp_maps_ruby(FILE *maps)
{
	char line[4096 + 128];
	const char *path, *b;
	unsigned int n = 0;

	/* bounded: a process with more mappings than this is not looked at
	 * further (its Ruby, if any, is found from its mappings later) */
	while (n++ < 65536 && fgets(line, sizeof(line), maps)) {
		if (!(path = maps_path(line)))
			continue;
		b = strrchr(path, '/') + 1;
		if (!strncmp(b, "ruby", 4) || !strncmp(b, "libruby", 7))
			return true;
	}
	return false;
}

bool sp_interp_pid_ruby(uint32_t pid)
{
	char path[64];
	bool ruby;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	ruby = sp_interp_maps_ruby(f);
	fclose(f);
	return ruby;
}
