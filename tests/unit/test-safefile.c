// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/base/safefile.c with real files: links, FIFOs, devices,
 * another user's files (as root: chown to 65534), files too large,
 * directories others can write, links on the way to a directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "safefile.h"
#include "sp.h"

static char top[] = "/tmp/test-safefile-XXXXXX";

static const char *at(const char *rel)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", top, rel);
	return buf[i];
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static bool is_root(void)
{
	return geteuid() == 0;
}

static void test_safefile_open(void)
{
	struct sp_safe_want own = { SP_SAFE_NOFOLLOW | SP_SAFE_OWNER | SP_SAFE_PRIVATE,
				    geteuid(), 100 };
	const char *why;
	struct stat st;
	char buf[16];
	int fd;

	put(at("plain"), "hello\n");
	chmod(at("plain"), 0644);
	fd = sp_safe_open(AT_FDCWD, at("plain"), &own, &st, &why);
	CHECK(fd >= 0 && why == NULL);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 6);
	CHECK(fd >= 0 && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY);
	CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	close(fd);

	/* A symbolic link: refused with NOFOLLOW, followed without. */
	CHECK(symlink(at("plain"), at("link")) == 0);
	CHECK(sp_safe_open(AT_FDCWD, at("link"), &own, NULL, &why) == -1 && errno == EPERM);
	CHECK_STR(why, "a symbolic link");
	fd = sp_safe_open(AT_FDCWD, at("link"), NULL, NULL, &why);
	CHECK(fd >= 0);
	close(fd);

	/* A FIFO nobody writes: refused at once, not waited on. */
	CHECK(mkfifo(at("fifo"), 0666) == 0);
	CHECK(sp_safe_open(AT_FDCWD, at("fifo"), NULL, &st, &why) == -1 && errno == EPERM);
	CHECK_STR(why, "not a regular file: a FIFO");
	CHECK(S_ISFIFO(st.st_mode));
	/* ... and through a link to it. */
	CHECK(symlink(at("fifo"), at("fifolink")) == 0);
	CHECK(sp_safe_open(AT_FDCWD, at("fifolink"), NULL, NULL, &why) == -1);
	CHECK_STR(why, "not a regular file: a FIFO");

	/* A device is looked at, not opened; a directory is not a file. */
	CHECK(sp_safe_open(AT_FDCWD, "/dev/null", NULL, NULL, &why) == -1 && errno == EPERM);
	CHECK_STR(why, "not a regular file: a character device");
	CHECK(sp_safe_open(AT_FDCWD, top, NULL, NULL, &why) == -1);
	CHECK_STR(why, "not a regular file: a directory");

	/* Writable by others; too large. */
	chmod(at("plain"), 0666);
	CHECK(sp_safe_open(AT_FDCWD, at("plain"), &own, NULL, &why) == -1);
	CHECK_STR(why, "writable by group or others");
	chmod(at("plain"), 0600);
	own.max_size = 5;
	CHECK(sp_safe_open(AT_FDCWD, at("plain"), &own, NULL, &why) == -1);
	CHECK_STR(why, "too large");
	own.max_size = 6;
	fd = sp_safe_open(AT_FDCWD, at("plain"), &own, NULL, &why);
	CHECK(fd >= 0);
	close(fd);

	/* Not there: a plain ENOENT, no reason. */
	errno = 0;
	CHECK(sp_safe_open(AT_FDCWD, at("none"), NULL, NULL, &why) == -1 && errno == ENOENT);
	CHECK(why == NULL);
}

static void test_safefile_owner(void)
{
	struct sp_safe_want w = { SP_SAFE_NOFOLLOW | SP_SAFE_OWNER, 1000, 0 };
	const char *why;
	int fd;

	if (!is_root()) {
		printf("# not root: cannot give files away\n");
		return;
	}
	put(at("nobody"), "x\n");
	CHECK(chown(at("nobody"), 65534, 65534) == 0);
	CHECK(sp_safe_open(AT_FDCWD, at("nobody"), &w, NULL, &why) == -1 && errno == EPERM);
	CHECK_STR(why, "owned by another user");
	w.owner = 65534;
	fd = sp_safe_open(AT_FDCWD, at("nobody"), &w, NULL, &why);
	CHECK(fd >= 0);
	close(fd);
	/* root's file is anyone's to trust, unless it has a second name */
	put(at("rootfile"), "x\n");
	fd = sp_safe_open(AT_FDCWD, at("rootfile"), &w, NULL, &why);
	CHECK(fd >= 0);
	close(fd);
	CHECK(link(at("rootfile"), at("hardlink")) == 0);
	CHECK(sp_safe_open(AT_FDCWD, at("hardlink"), &w, NULL, &why) == -1);
	CHECK_STR(why, "a hard link to a file of root");
	/* (uid_t)-1: root only */
	w.owner = (uid_t)-1;
	CHECK(sp_safe_open(AT_FDCWD, at("nobody"), &w, NULL, &why) == -1);
}

static int collect(void *ctx, char *line, size_t len)
{
	char *acc = ctx;

	CHECK_EQ_U(strlen(line), len);
	strcat(acc, line);
	strcat(acc, "|");
	return 0;
}

static int stop_at_b(void *ctx, char *line, size_t len)
{
	return !strcmp(line, "b") ? 7 : 0;
}

static void test_safefile_read_lines(void)
{
	struct sp_safe_lines l = { .max_bytes = 0, .max_line = 4 };
	char acc[256] = "";
	int fd;

	put(at("lines"), "a\nbbbbbbbbbb\n\ncccc\nddddd\neee");
	fd = open(at("lines"), O_RDONLY);
	CHECK(sp_safe_read_lines(fd, &l, collect, acc) == 0);
	CHECK_STR(acc, "a||cccc|eee|");
	CHECK_EQ_U(l.lines, 4);
	CHECK_EQ_U(l.long_lines, 2);
	CHECK(!l.cut);
	/* A bound in bytes: what lies wholly inside it, and "cut". */
	acc[0] = 0;
	l.max_bytes = 9;
	lseek(fd, 0, SEEK_SET);
	CHECK(sp_safe_read_lines(fd, &l, collect, acc) == 0);
	CHECK_STR(acc, "a|");
	CHECK_EQ_U(l.bytes, 9);
	CHECK(l.cut);
	/* Exactly at the bound: not cut, the last line given. */
	acc[0] = 0;
	l.max_bytes = 28;
	lseek(fd, 0, SEEK_SET);
	CHECK(sp_safe_read_lines(fd, &l, collect, acc) == 0);
	CHECK_STR(acc, "a||cccc|eee|");
	CHECK(!l.cut);
	close(fd);
	/* fn's non-zero stops it and is returned. */
	put(at("lines2"), "a\nb\nc\n");
	fd = open(at("lines2"), O_RDONLY);
	l.max_bytes = 0;
	CHECK(sp_safe_read_lines(fd, &l, stop_at_b, NULL) == 7);
	CHECK_EQ_U(l.lines, 2);
	close(fd);
	/* A sparse 1 GiB file without a newline, read to a 1 MiB bound. */
	fd = open(at("sparse"), O_RDWR | O_CREAT, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 1ll << 30) == 0);
	l.max_bytes = 1 << 20;
	acc[0] = 0;
	CHECK(sp_safe_read_lines(fd, &l, collect, acc) == 0);
	CHECK(l.cut);
	CHECK_EQ_U(l.lines, 0);
	CHECK_EQ_U(l.bytes, 1 << 20);
	close(fd);
}

static void test_safefile_dir(void)
{
	char why[1024], cwd[512];
	int fd, fd2;

	/* Made with its parents, and usable for *at() calls. */
	fd = sp_safe_dir(AT_FDCWD, at("d/e/f"), SP_SAFE_MKDIR, 0700, why, sizeof(why));
	CHECK(fd >= 0);
	CHECK(fd >= 0 && sp_safe_write_file(fd, "x", "hi", 2, 0600) == 0);
	close(fd);
	CHECK(access(at("d/e/f/x"), R_OK) == 0);
	/* Without SP_SAFE_MKDIR a missing one is ENOENT. */
	CHECK(sp_safe_dir(AT_FDCWD, at("d/none"), 0, 0700, why, sizeof(why)) == -1 &&
	      errno == ENOENT);
	/* Relative to the working directory, and to a descriptor. */
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(top) == 0);
	fd = sp_safe_dir(AT_FDCWD, "d/./e/../e", 0, 0700, why, sizeof(why));
	CHECK(fd >= 0);
	fd2 = fd >= 0 ? sp_safe_dir(fd, "f", 0, 0700, why, sizeof(why)) : -1;
	CHECK(fd2 >= 0);
	CHECK(fd2 >= 0 && faccessat(fd2, "x", R_OK, 0) == 0);
	close(fd);
	close(fd2);
	CHECK(chdir(cwd) == 0);
	/* Writable by others: refused, itself or on the way; sticky is fine. */
	CHECK(mkdir(at("open"), 0777) == 0 && chmod(at("open"), 0777) == 0);
	CHECK(sp_safe_dir(AT_FDCWD, at("open"), 0, 0700, why, sizeof(why)) == -1 &&
	      errno == EPERM);
	CHECK(strstr(why, "open' is writable by group or others") != NULL);
	CHECK(sp_safe_dir(AT_FDCWD, at("open/sub"), SP_SAFE_MKDIR, 0700, why, sizeof(why)) == -1);
	CHECK(access(at("open/sub"), F_OK) == -1);	/* nothing made under it */
	CHECK(chmod(at("open"), 01777) == 0);
	fd = sp_safe_dir(AT_FDCWD, at("open/sub"), SP_SAFE_MKDIR, 0700, why, sizeof(why));
	CHECK(fd >= 0);
	close(fd);
	/* A file on the way. */
	put(at("file"), "");
	CHECK(sp_safe_dir(AT_FDCWD, at("file/sub"), SP_SAFE_MKDIR, 0700, why, sizeof(why)) == -1 &&
	      errno == ENOTDIR);
	/* A link of ours to a good directory is followed; to a bad one not. */
	CHECK(symlink(at("d/e"), at("good")) == 0);
	fd = sp_safe_dir(AT_FDCWD, at("good/f"), 0, 0700, why, sizeof(why));
	CHECK(fd >= 0 && faccessat(fd, "x", R_OK, 0) == 0);
	close(fd);
	CHECK(symlink("open", at("bad")) == 0);		/* relative */
	CHECK(chmod(at("open"), 0777) == 0);
	CHECK(sp_safe_dir(AT_FDCWD, at("bad/sub"), 0, 0700, why, sizeof(why)) == -1 &&
	      errno == EPERM);
	if (is_root()) {
		/* Another user's directory, or link, on the way. */
		CHECK(mkdir(at("theirs"), 0755) == 0 && chown(at("theirs"), 65534, 65534) == 0);
		CHECK(sp_safe_dir(AT_FDCWD, at("theirs"), 0, 0700, why, sizeof(why)) == -1 &&
		      errno == EPERM);
		CHECK(strstr(why, "is owned by another user (uid 65534") != NULL);
		CHECK(lchown(at("good"), 65534, 65534) == 0);
		CHECK(sp_safe_dir(AT_FDCWD, at("good/f"), 0, 0700, why, sizeof(why)) == -1 &&
		      errno == EPERM);
		CHECK(strstr(why, "a symbolic link owned by another user") != NULL);
	}
	/* A loop of links ends. */
	CHECK(symlink("loop", at("loop")) == 0);
	CHECK(sp_safe_dir(AT_FDCWD, at("loop"), 0, 0700, why, sizeof(why)) == -1 && errno == ELOOP);
}

static void test_safefile_create(void)
{
	struct sp_safe_tmp t;
	char buf[16] = "";
	int dfd, fd;

	dfd = sp_safe_dir(AT_FDCWD, at("c"), SP_SAFE_MKDIR, 0755, NULL, 0);
	CHECK(dfd >= 0);
	/* A link at the final name is replaced, its target left alone. */
	put(at("victim"), "precious");
	CHECK(symlink(at("victim"), at("c/out")) == 0);
	CHECK(sp_safe_write_file(dfd, "out", "new", 3, 0644) == 0);
	fd = open(at("victim"), O_RDONLY);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 8);
	close(fd);
	CHECK_STR(buf, "precious");
	fd = open(at("c/out"), O_RDONLY | O_NOFOLLOW);
	CHECK(fd >= 0);
	close(fd);
	/* An aborted temporary leaves nothing. */
	CHECK(sp_safe_tmp_open(&t, dfd, 0600) == 0);
	CHECK(sp_safe_write_all(t.fd, "abc", 3) == 0);
	CHECK(faccessat(dfd, t.name, F_OK, AT_SYMLINK_NOFOLLOW) == 0);
	sp_safe_tmp_abort(&t);
	CHECK(faccessat(dfd, t.name, F_OK, AT_SYMLINK_NOFOLLOW) == -1);
	close(dfd);
}

static void test_safefile_cache_dir(void)
{
	char *d;
	int fd;

	setenv("SP_CACHE_DIR", "/x/y", 1);
	d = sp_cache_dir(NULL);
	CHECK_STR(d, "/x/y");
	free(d);
	d = sp_cache_dir("symbols");
	CHECK_STR(d, "/x/y/symbols");
	free(d);
	setenv("SP_CACHE_DIR", "", 1);
	CHECK(sp_cache_dir(NULL) == NULL && errno == ENOENT);
	unsetenv("SP_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "rel", 1);
	setenv("HOME", "/h", 1);
	d = sp_cache_dir(NULL);
	CHECK_STR(d, "/h/.cache/stackpulse");
	free(d);
	setenv("XDG_CACHE_HOME", "/c", 1);
	d = sp_cache_dir("s");
	CHECK_STR(d, "/c/stackpulse/s");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	CHECK(sp_cache_dir(NULL) == NULL);
	/* A refused cache directory: -1, EPERM (and one warning). */
	CHECK(mkdir(at("shared"), 0777) == 0 && chmod(at("shared"), 0777) == 0);
	CHECK(sp_cache_dir_open(at("shared"), true) == -1 && errno == EPERM);
	CHECK(sp_cache_dir_open(at("shared"), true) == -1 && errno == EPERM);
	fd = sp_cache_dir_open(at("mine/stackpulse"), true);
	CHECK(fd >= 0);
	close(fd);
}

int main(void)
{
	char cmd[128];
	int rc;

	sp_progname = "test-safefile";
	if (!mkdtemp(top))
		return 1;
	chmod(top, 0755);
	TAP_RUN(test_safefile_open);
	TAP_RUN(test_safefile_owner);
	TAP_RUN(test_safefile_read_lines);
	TAP_RUN(test_safefile_dir);
	TAP_RUN(test_safefile_create);
	TAP_RUN(test_safefile_cache_dir);
	rc = TAP_DONE();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		rc = 1;
	return rc;
}
