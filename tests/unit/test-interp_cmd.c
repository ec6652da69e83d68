// SPDX-License-Identifier: MIT
/*
 * Unit tests of the guess whether a command runs Ruby
 * (lib/record/interp_cmd.c): by the file's name or its link's, by its
 * "#!" line (directly or through env, past env's options and
 * assignments), looked up in PATH as the exec will; anything else, a
 * missing file, a directory or a FIFO, is not Ruby (and does not hang);
 * and whether a process's maps name a ruby or libruby file.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "record/interpP.h"
#include "tap.h"

static char dir[PATH_MAX];

static bool shebang(const char *s)
{
	return sp_interp_shebang_ruby(s, strlen(s));
}

static void test_shebang(void)
{
	CHECK(shebang("#!/usr/bin/ruby\n"));
	CHECK(shebang("#!/usr/bin/ruby3.1 -w\nputs 1\n"));
	CHECK(shebang("#! /usr/local/bin/ruby"));
	CHECK(shebang("#!/usr/bin/env ruby\n"));
	CHECK(shebang("#!/usr/bin/env -S RUBYOPT=-W0 ruby --disable-gems\n"));
	CHECK(!shebang("#!/usr/bin/env python3\n"));
	CHECK(!shebang("#!/bin/sh\nexec ruby \"$@\"\n"));
	CHECK(!shebang("#!/usr/bin/rubbish\n"));
	CHECK(!shebang("#!/usr/bin/env\n"));
	CHECK(!shebang("#!\n"));
	CHECK(!shebang("ruby\n"));
	CHECK(!sp_interp_shebang_ruby("#!/usr/bin/ruby", 5));	/* cut before the name */
}

static void put(const char *name, const char *text, mode_t mode)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static bool in_dir(const char *name)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return sp_interp_command_ruby(path);
}

static void test_files(void)
{
	char path[PATH_MAX * 2], link[PATH_MAX * 2];

	put("ruby3.1", "\x7f" "ELF", 0755);
	put("rake", "#!/usr/bin/env ruby\nrequire 'rake'\n", 0755);
	put("tool", "#!/bin/sh\necho\n", 0755);
	CHECK(in_dir("ruby3.1"));
	CHECK(in_dir("rake"));
	CHECK(!in_dir("tool"));
	CHECK(!in_dir("missing"));
	/* Python or Ruby */
	put("python3.11", "\x7f" "ELF", 0755);
	put("pytool", "#!/usr/bin/env python3\nimport sys\n", 0755);
	snprintf(path, sizeof(path), "%s/python3.11", dir);
	CHECK(sp_interp_command_interp(path));
	CHECK(!sp_interp_command_ruby(path));
	snprintf(path, sizeof(path), "%s/pytool", dir);
	CHECK(sp_interp_command_interp(path));
	snprintf(path, sizeof(path), "%s/rake", dir);
	CHECK(sp_interp_command_interp(path));
	snprintf(path, sizeof(path), "%s/tool", dir);
	CHECK(!sp_interp_command_interp(path));
	/* a link named otherwise to a ruby */
	snprintf(path, sizeof(path), "%s/ruby3.1", dir);
	snprintf(link, sizeof(link), "%s/rb", dir);
	CHECK(symlink(path, link) == 0);
	CHECK(in_dir("rb"));
	/* not regular files: no read, no hang */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(mkfifo(path, 0755) == 0);
	CHECK(!in_dir("fifo"));
	snprintf(path, sizeof(path), "%s/sub", dir);
	CHECK(mkdir(path, 0755) == 0);
	CHECK(!in_dir("sub"));
	CHECK(!sp_interp_command_ruby(""));
	CHECK(!sp_interp_command_ruby(NULL));
}

static void test_path(void)
{
	char path[PATH_MAX * 2];
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;

	snprintf(path, sizeof(path), "/nonexistent:%s", dir);
	setenv("PATH", path, 1);
	CHECK(sp_interp_command_ruby("rake"));
	CHECK(!sp_interp_command_ruby("tool"));
	CHECK(!sp_interp_command_ruby("nosuchcommand"));
	/* found only when executable, as the exec would */
	put("plain", "#!/usr/bin/ruby\n", 0644);
	CHECK(!sp_interp_command_ruby("plain"));
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
}

static bool maps(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	bool r;

	if (!f)
		return false;
	r = sp_interp_maps_ruby(f);
	fclose(f);
	return r;
}

/* A process's maps: a ruby or libruby file anywhere names Ruby; a name
 * that only contains it, a file in a "ruby" directory, or an anonymous
 * mapping does not. */
static void test_maps(void)
{
	CHECK(maps("55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123 /usr/bin/ruby3.1\n"));
	CHECK(maps("7f0000000000-7f0000001000 r--p 00000000 00:00 0 \n"
		   "7f1000000000-7f1000100000 r-xp 00020000 08:01 77   "
		   "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2\n"));
	CHECK(!maps("55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123 /usr/bin/python3.11\n"
		    "7f1000000000-7f1000100000 r-xp 00020000 08:01 77 "
		    "/usr/lib/ruby/3.1.0/x86_64-linux/etc.so\n"
		    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
		    "7f2000000000-7f2000001000 r--p 00000000 08:01 9 /opt/notruby\n"));
	CHECK(!maps(""));
	CHECK(!maps("garbage without fields\n"));
	/* the process itself: this test is no Ruby */
	CHECK(!sp_interp_pid_ruby((uint32_t)getpid()));
	CHECK(!sp_interp_pid_ruby(0));
}

/* -p's processes as the rule sees them: pids 2 and 3 run Ruby; which
 * were asked. */
static unsigned int asked;

static bool fake_pid_ruby(uint32_t pid)
{
	asked |= 1u << pid;
	return pid == 2 || pid == 3;
}

/* The one rule for the Ruby walkers before the target runs, over its
 * inputs: the command foreseen, -a, -p, --interp. */
static void test_ruby_first(void)
{
	static const uint32_t none_ruby[] = { 1, 4 }, one_ruby[] = { 1, 3, 4 };
	static const enum sp_interp_mode modes[] = { SP_INTERP_AUTO, SP_INTERP_RUBY };
	size_t m;

	for (m = 0; m < 2; m++) {
		enum sp_interp_mode mode = modes[m];

		/* a command: all but Python's, -a or not; its pid not asked */
		asked = 0;
		CHECK(sp_interp_ruby_first(mode, SP_ICMD_RUBY, false, one_ruby, 3, fake_pid_ruby));
		CHECK(sp_interp_ruby_first(mode, SP_ICMD_OTHER, false, none_ruby, 2,
					   fake_pid_ruby));
		CHECK(!sp_interp_ruby_first(mode, SP_ICMD_PYTHON, false, one_ruby, 3,
					    fake_pid_ruby));
		CHECK(sp_interp_ruby_first(mode, SP_ICMD_RUBY, true, NULL, 0, fake_pid_ruby));
		CHECK(sp_interp_ruby_first(mode, SP_ICMD_OTHER, true, NULL, 0, fake_pid_ruby));
		CHECK(!sp_interp_ruby_first(mode, SP_ICMD_PYTHON, true, NULL, 0, fake_pid_ruby));
		CHECK_EQ_U(asked, 0);
		/* -p: when one of its processes runs Ruby, asked until one does */
		CHECK(sp_interp_ruby_first(mode, SP_ICMD_NONE, false, one_ruby, 3, fake_pid_ruby));
		CHECK_EQ_U(asked, (1u << 1) | (1u << 3));
		CHECK(!sp_interp_ruby_first(mode, SP_ICMD_NONE, false, none_ruby, 2,
					    fake_pid_ruby));
		CHECK(!sp_interp_ruby_first(mode, SP_ICMD_NONE, false, NULL, 0, fake_pid_ruby));
		/* -a alone: when the scan finds a Ruby, not before */
		asked = 0;
		CHECK(!sp_interp_ruby_first(mode, SP_ICMD_NONE, true, one_ruby, 3, fake_pid_ruby));
		CHECK_EQ_U(asked, 0);
	}
	/* --interp=python or none: never */
	CHECK(!sp_interp_ruby_first(SP_INTERP_PYTHON, SP_ICMD_RUBY, false, NULL, 0, fake_pid_ruby));
	CHECK(!sp_interp_ruby_first(SP_INTERP_PYTHON, SP_ICMD_NONE, false, one_ruby, 3,
				    fake_pid_ruby));
	CHECK(!sp_interp_ruby_first(SP_INTERP_NONE, SP_ICMD_OTHER, false, NULL, 0, fake_pid_ruby));
	/* what a command is foreseen to be */
	CHECK_EQ_U(sp_interp_command_kind(NULL), SP_ICMD_NONE);
	CHECK_EQ_U(sp_interp_command_kind("/nonexistent/ruby3.1"), SP_ICMD_RUBY);
	CHECK_EQ_U(sp_interp_command_kind("/nonexistent/python3.11"), SP_ICMD_PYTHON);
	CHECK_EQ_U(sp_interp_command_kind("/bin/sh"), SP_ICMD_OTHER);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "%s/sp-interp-cmd.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	TAP_RUN(test_shebang);
	TAP_RUN(test_files);
	TAP_RUN(test_path);
	TAP_RUN(test_maps);
	TAP_RUN(test_ruby_first);
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "# cannot remove %s\n", dir);
	}
	return TAP_DONE();
}
