// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/procfs.c: /proc/PID/maps and perf-map lines, a fake
 * /proc tree, and this very process read from the real /proc. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "procfs.h"

static void test_procfs_parse_map(void)
{
	char l1[] = "55e0c5a01000-55e0c5a05000 r-xp 00001000 fe:00 5309031    /usr/bin/true";
	char l2[] = "7ffd1e9f2000-7ffd1e9f4000 r-xp 00000000 00:00 0                  [vdso]";
	char l3[] = "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 ";
	char l4[] = "7f00-7e00 r-xp 00000000 00:00 0 /x";
	char l5[] = "7f0000000000-7f0000001000 r-xp 00000000 08:01 12 /tmp/a b (deleted)";
	char l6[] = "garbage";
	struct sp_proc_map m;

	CHECK(sp_procfs_parse_map(l1, &m) == 0);
	CHECK_EQ_U(m.start, 0x55e0c5a01000);
	CHECK_EQ_U(m.end, 0x55e0c5a05000);
	CHECK_EQ_U(m.pgoff, 0x1000);
	CHECK_EQ_U(m.prot, PROT_READ | PROT_EXEC);
	CHECK_EQ_U(m.dev, makedev(0xfe, 0));
	CHECK_EQ_U(m.ino, 5309031);
	CHECK_STR(m.path, "/usr/bin/true");
	CHECK(sp_procfs_parse_map(l2, &m) == 0);
	CHECK_STR(m.path, "[vdso]");
	CHECK(sp_procfs_parse_map(l3, &m) == 0);
	CHECK_EQ_U(m.prot, PROT_READ | PROT_WRITE | PROT_EXEC);
	CHECK_STR(m.path, "");
	CHECK(sp_procfs_parse_map(l4, &m) == -1);	/* end before start */
	CHECK(sp_procfs_parse_map(l5, &m) == 0);
	CHECK_STR(m.path, "/tmp/a b (deleted)");
	CHECK(sp_procfs_parse_map(l6, &m) == -1);
}

static void test_procfs_parse_perfmap(void)
{
	char l1[] = "7f0000001000 40 LazyCompile:~main /app.js:1";
	char l2[] = "0x10 0x20 x";
	char l3[] = "7f0000001000 40";
	char l4[] = "zz 10 x";
	uint64_t a, s;
	const char *n;

	CHECK(sp_procfs_parse_perfmap(l1, &a, &s, &n) == 0);
	CHECK_EQ_U(a, 0x7f0000001000);
	CHECK_EQ_U(s, 0x40);
	CHECK_STR(n, "LazyCompile:~main /app.js:1");
	CHECK(sp_procfs_parse_perfmap(l2, &a, &s, &n) == 0);
	CHECK_EQ_U(a, 0x10);
	CHECK_EQ_U(s, 0x20);
	CHECK(sp_procfs_parse_perfmap(l3, &a, &s, &n) == -1);
	CHECK(sp_procfs_parse_perfmap(l4, &a, &s, &n) == -1);
}

static void put_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	fwrite(text, 1, len, f);
	fclose(f);
}

static int count_jit(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	(*(int *)ctx)++;
	return 0;
}

static void test_procfs_fake_root(void)
{
	char dir[] = "/tmp/test-procfs-XXXXXX", p[512], buf[256];
	uint32_t *tids = NULL, tgid = 0, ppid = 0;
	struct sp_perfmap_result res;
	size_t n = 0;
	int jit = 0;
	uid_t uid;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(p, sizeof(p), "%s/42", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/42/task", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/42/task/43", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/42/task/42", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/42/task/43/comm", dir);
	put_file(p, "worker\n", 7);
	snprintf(p, sizeof(p), "%s/42/cmdline", dir);
	put_file(p, "ruby\0-e\0puts 1\0", 15);
	snprintf(p, sizeof(p), "%s/42/status", dir);
	n = (size_t)snprintf(buf, sizeof(buf), "Name:\truby\nTgid:\t42\nPPid:\t7\n"
			     "Uid:\t%u\t%u\t%u\t%u\n", 1u, 2u, 3u, (unsigned int)getuid());
	put_file(p, buf, n);
	snprintf(p, sizeof(p), "%s/perf-42.map", dir);
	put_file(p, "1000 10 a\nbad line\n2000 20 b\n", 29);

	sp_procfs_root = dir;
	sp_procfs_perfmap_dir = dir;
	CHECK(sp_procfs_tasks(42, &tids, &n) == 0);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(tids[0], 42);
	CHECK_EQ_U(tids[1], 43);
	free(tids);
	CHECK(sp_procfs_comm(42, 43, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "worker");
	CHECK(sp_procfs_cmdline(42, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "ruby -e puts 1");
	CHECK(sp_procfs_status(42, &tgid, &ppid) == 0);
	CHECK_EQ_U(tgid, 42);
	CHECK_EQ_U(ppid, 7);
	CHECK(sp_procfs_uid(42, &uid) == 0);
	CHECK_EQ_U(uid, getuid());	/* the file-system user, the 4th */
	/* 42's user (from its status) owns the map */
	CHECK(sp_procfs_perfmap(42, (uid_t)-1, count_jit, &jit, &res) == 0);
	CHECK_EQ_U(jit, 2);
	CHECK_EQ_U(res.syms, 2);
	CHECK_EQ_U(res.skipped, 1);
	CHECK(!res.cut && !res.why);
	CHECK_EQ_U(res.user, getuid());
	/* 42 known gone (pid 0): no status is read (not even a "0/status"),
	 * the user given is its */
	snprintf(p, sizeof(p), "%s/0", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/0/status", dir);
	put_file(p, "Uid:\t777\t777\t777\t777\n", 21);
	jit = 0;
	CHECK(sp_procfs_perfmap_at(AT_FDCWD, 42, 0, 12345, count_jit, &jit, &res) == 0 ||
	      getuid() != 0);
	CHECK_EQ_U(res.user, 12345);
	errno = 0;
	CHECK(sp_procfs_perfmap(43, (uid_t)-1, count_jit, &jit, &res) == -1 && errno == ENOENT);
	CHECK(res.why == NULL);
	CHECK(sp_procfs_comm(99, 99, buf, sizeof(buf)) == -1);
	/* a thread's tid in its namespace: NSpid's last field */
	CHECK(sp_procfs_thread_nstid(42, 43, &tgid) == -1);	/* no status */
	snprintf(p, sizeof(p), "%s/42/task/43/status", dir);
	put_file(p, "Name:\tworker\nNSpid:\t43\t5\n", 25);
	CHECK(sp_procfs_thread_nstid(42, 43, &tgid) == 0);
	CHECK_EQ_U(tgid, 5);
	put_file(p, "Name:\tworker\nNSpid:\t43\tx\n", 25);
	CHECK(sp_procfs_thread_nstid(42, 43, &tgid) == -1);
	sp_procfs_root = "/proc";
	sp_procfs_perfmap_dir = "/tmp";
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CHECK(system(p) == 0);
}

struct self_ctx {
	char exe[4096];
	int exec_maps_of_exe;
	uint64_t sample;	/* an address of this function's code */
	int holds_sample;
};

static int self_map(void *ctx, const struct sp_proc_map *m)
{
	struct self_ctx *c = ctx;

	if ((m->prot & PROT_EXEC) && !strcmp(m->path, c->exe))
		c->exec_maps_of_exe++;
	if (c->sample >= m->start && c->sample < m->end && (m->prot & PROT_EXEC))
		c->holds_sample = 1;
	return 0;
}

struct maps_seen {
	unsigned int n;
	uint64_t starts[8];
};

static int note_map(void *ctx, const struct sp_proc_map *m)
{
	struct maps_seen *c = ctx;

	if (c->n < 8)
		c->starts[c->n] = m->start;
	c->n++;
	return 0;
}

/* A process's owner decides how long its maps are: a line longer than we
 * read is skipped whole (its end is not taken for a line), the next one
 * still read, and no more than max_bytes are (EFBIG, after the mappings
 * before). */
static void test_procfs_maps_bounds(void)
{
	char dir[] = "/tmp/test-procfs-XXXXXX", p[512];
	const char *a = "1000-2000 r-xp 00000000 08:01 12 /a\n";
	const char *b = "3000-4000 r-xp 00000000 08:01 13 /b\n";
	size_t longlen = PATH_MAX + 4096, at = 0;
	struct maps_seen seen = { 0 };
	char *text = malloc(longlen + 256);

	CHECK(text != NULL && mkdtemp(dir) != NULL);
	snprintf(p, sizeof(p), "%s/42", dir);
	mkdir(p, 0755);
	at += (size_t)sprintf(text + at, "%s", a);
	at += (size_t)sprintf(text + at, "5000-6000 r-xp 00000000 08:01 14 /");
	memset(text + at, 'x', longlen);	/* a deep path, longer than we read */
	at += longlen;
	/* whose end reads as a line of its own: not taken for one */
	at += (size_t)sprintf(text + at, "/7000-8000 r-xp 00000000 08:01 99 /evil\n");
	at += (size_t)sprintf(text + at, "%s", b);
	/* the last line without its newline */
	at += (size_t)sprintf(text + at, "9000-a000 r-xp 00000000 08:01 15 /c");
	snprintf(p, sizeof(p), "%s/42/maps", dir);
	put_file(p, text, at);
	sp_procfs_root = dir;
	CHECK(sp_procfs_maps(42, SP_PROCFS_MAPS_BYTES, note_map, &seen) == 0);
	CHECK_EQ_U(seen.n, 3);
	CHECK_EQ_U(seen.starts[0], 0x1000);
	CHECK_EQ_U(seen.starts[1], 0x3000);
	CHECK_EQ_U(seen.starts[2], 0x9000);
	/* cut after the first line */
	memset(&seen, 0, sizeof(seen));
	errno = 0;
	CHECK(sp_procfs_maps(42, strlen(a) + 10, note_map, &seen) == -1);
	CHECK_EQ_U(errno, EFBIG);
	CHECK_EQ_U(seen.n, 1);
	/* exactly the whole: read whole */
	memset(&seen, 0, sizeof(seen));
	CHECK(sp_procfs_maps(42, at, note_map, &seen) == 0);
	CHECK_EQ_U(seen.n, 3);
	/* gone */
	errno = 0;
	CHECK(sp_procfs_maps(43, SP_PROCFS_MAPS_BYTES, note_map, &seen) == -1);
	CHECK_EQ_U(errno, ENOENT);
	sp_procfs_root = "/proc";
	free(text);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CHECK(system(p) == 0);
}

static void test_procfs_self(void)
{
	static struct sp_proc_identity me;
	struct self_ctx c = { .sample = (uint64_t)(uintptr_t)&self_map };
	uint32_t *tids = NULL, tgid, ppid, pid = (uint32_t)getpid();
	size_t n = 0, i;
	int found = 0;

	CHECK(sp_procfs_exe(pid, c.exe, sizeof(c.exe)) == 0);
	CHECK(c.exe[0] == '/');
	CHECK(sp_procfs_maps(pid, SP_PROCFS_MAPS_BYTES, self_map, &c) == 0);
	CHECK(c.exec_maps_of_exe >= 1);
	CHECK(c.holds_sample);
	CHECK(sp_procfs_status(pid, &tgid, &ppid) == 0);
	CHECK_EQ_U(tgid, pid);
	CHECK_EQ_U(ppid, (uint32_t)getppid());
	CHECK(sp_procfs_tasks(pid, &tids, &n) == 0);
	for (i = 0; i < n; i++)
		found |= tids[i] == pid;
	CHECK(found);
	free(tids);
	/* the first thread's tid in its namespace is the process's pid there */
	CHECK(sp_procfs_identity(pid, &me) == 0);
	CHECK(sp_procfs_thread_nstid(pid, pid, &tgid) == 0);
	CHECK_EQ_U(tgid, me.nspid);
	CHECK(sp_procfs_pids(&tids, &n) == 0);
	found = 0;
	for (i = 0; i < n; i++)
		found |= tids[i] == pid;
	CHECK(found);
	for (i = 1; i < n; i++)
		CHECK(tids[i - 1] < tids[i]);
	free(tids);
}

/* AT_SECURE as the kernel set it: not for this test, yes for a
 * set-user-ID root copy of sleep run by nobody (as ld.so sees it:
 * LD_LIBRARY_PATH ignored); false for a pid that is gone. */
static void test_procfs_at_secure(void)
{
	char dir[] = "/tmp/sp-test-secure-XXXXXX", cmd[512], pidbuf[32] = "";
	FILE *f;

	CHECK(!sp_procfs_at_secure((uint32_t)getpid()));
	CHECK(!sp_procfs_at_secure(0x7ffffff0));
	if (geteuid() != 0 || !mkdtemp(dir)) {
		printf("# skipped: needs root\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "chmod 0755 %s && cp /bin/sleep %s/sleep && chmod 4755 %s/sleep && "
		 "(setpriv --reuid=65534 --regid=65534 --clear-groups %s/sleep 5 > /dev/null & "
		 "echo $!)", dir, dir, dir, dir);
	f = popen(cmd, "r");
	if (f && fgets(pidbuf, sizeof(pidbuf), f) && atoi(pidbuf) > 0) {
		uint32_t pid = (uint32_t)atoi(pidbuf);
		int i;

		/* once it runs sleep (setpriv execs it) */
		for (i = 0; i < 100; i++) {
			char exe[PATH_MAX] = "", link[64];

			snprintf(link, sizeof(link), "/proc/%u/exe", pid);
			if (readlink(link, exe, sizeof(exe) - 1) > 0 && strstr(exe, dir))
				break;
			usleep(20000);
		}
		CHECK(sp_procfs_at_secure(pid));
		kill((pid_t)pid, SIGKILL);
	} else {
		printf("# skipped: cannot run a set-user-ID copy of sleep\n");
	}
	if (f)
		pclose(f);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(!system(cmd));
}

static void test_procfs_cpu_list(void)
{
	int *v = NULL;
	int n;

	n = sp_parse_cpu_list("0-3,8,10-11\n", &v);
	CHECK_EQ_U(n, 7);
	CHECK(n == 7 && v[0] == 0 && v[3] == 3 && v[4] == 8 && v[5] == 10 && v[6] == 11);
	free(v);
	n = sp_parse_cpu_list("5", &v);
	CHECK(n == 1 && v[0] == 5);
	free(v);
	n = sp_parse_cpu_list("0-100000", &v);
	CHECK_EQ_U(n, 4096);
	free(v);
	n = sp_parse_cpu_list("garbage", &v);
	CHECK_EQ_U(n, 0);
	free(v);
	n = sp_online_cpus(&v);
	CHECK(n >= 1);
	free(v);
}

/* A perf map is read only if it is a regular file of the process's user
 * or root, and only so far. */
static void test_procfs_perfmap_refused(void)
{
	char dir[] = "/tmp/test-procfs-XXXXXX", p[512], q[512];
	struct sp_perfmap_result res;
	uid_t me = getuid();
	int jit = 0, fd;
	size_t i;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	sp_procfs_perfmap_dir = dir;
	sp_procfs_root = dir;		/* no /proc entries: the uid given is used */
	/* A FIFO: refused at once, never opened (it would block). */
	snprintf(p, sizeof(p), "%s/perf-50.map", dir);
	CHECK(mkfifo(p, 0666) == 0);
	CHECK(sp_procfs_perfmap(50, me, count_jit, &jit, &res) == -1 && errno == EPERM);
	CHECK_STR(res.why, "not a regular file: a FIFO");
	/* A symbolic link, to a good map even: refused. */
	snprintf(q, sizeof(q), "%s/good", dir);
	put_file(q, "1000 10 a\n", 10);
	snprintf(p, sizeof(p), "%s/perf-51.map", dir);
	CHECK(symlink(q, p) == 0);
	CHECK(sp_procfs_perfmap(51, me, count_jit, &jit, &res) == -1 && errno == EPERM);
	CHECK_STR(res.why, "a symbolic link");
	CHECK_EQ_U(jit, 0);
	/* Lines longer than the bound are skipped, the others read. */
	snprintf(p, sizeof(p), "%s/perf-52.map", dir);
	f = fopen(p, "w");
	fprintf(f, "1000 10 a\n2000 10 ");
	for (i = 0; i < SP_PERFMAP_MAX_LINE; i++)
		fputc('x', f);
	fprintf(f, "\n3000 10 c");
	fclose(f);
	CHECK(sp_procfs_perfmap(52, me, count_jit, &jit, &res) == 0);
	CHECK_EQ_U(jit, 2);
	CHECK_EQ_U(res.skipped, 1);
	CHECK(!res.cut);
	/* An 8 GiB sparse file: its first 64 MiB are read, then it is cut. */
	snprintf(p, sizeof(p), "%s/perf-53.map", dir);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 8ll << 30) == 0 && pwrite(fd, "1000 10 a\n", 10, 0) == 10);
	close(fd);
	jit = 0;
	CHECK(sp_procfs_perfmap(53, me, count_jit, &jit, &res) == 0);
	CHECK(res.cut);
	CHECK_STR(res.why, "larger than 64 MiB");
	CHECK_EQ_U(jit, 1);
	/* More symbols than the bound: the first ones. */
	snprintf(p, sizeof(p), "%s/perf-54.map", dir);
	f = fopen(p, "w");
	for (i = 0; i < SP_PERFMAP_MAX_SYMS + 10; i++)
		fprintf(f, "%zx 1 s\n", i);
	fclose(f);
	jit = 0;
	CHECK(sp_procfs_perfmap(54, me, count_jit, &jit, &res) == 0);
	CHECK(res.cut);
	CHECK_EQ_U(jit, SP_PERFMAP_MAX_SYMS);
	if (me == 0) {
		/* Another user's map, for a process of root or of user 1000. */
		snprintf(p, sizeof(p), "%s/perf-55.map", dir);
		put_file(p, "1000 10 a\n", 10);
		CHECK(chown(p, 65534, 65534) == 0);
		CHECK(sp_procfs_perfmap(55, 0, count_jit, &jit, &res) == -1 && errno == EPERM);
		CHECK_STR(res.why, "owned by another user");
		CHECK_EQ_U(res.owner, 65534);
		CHECK(sp_procfs_perfmap(55, 1000, count_jit, &jit, &res) == -1);
		CHECK(sp_procfs_perfmap(55, (uid_t)-1, count_jit, &jit, &res) == -1);
		jit = 0;
		CHECK(sp_procfs_perfmap(55, 65534, count_jit, &jit, &res) == 0);
		CHECK_EQ_U(jit, 1);
		/* A hard link to a file of root, for a process of another user. */
		snprintf(p, sizeof(p), "%s/perf-56.map", dir);
		CHECK(link(q, p) == 0);
		CHECK(sp_procfs_perfmap(56, 65534, count_jit, &jit, &res) == -1);
		CHECK_STR(res.why, "a hard link to a file of root");
		/* root's own map of one name is fine for anyone's process */
		snprintf(p, sizeof(p), "%s/perf-57.map", dir);
		put_file(p, "1000 10 a\n", 10);
		CHECK(sp_procfs_perfmap(57, 65534, count_jit, &jit, &res) == 0);
	} else {
		printf("# not root: another user's map not tried\n");
	}
	sp_procfs_perfmap_dir = "/tmp";
	sp_procfs_root = "/proc";
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CHECK(system(p) == 0);
}

/* The boot id: 36 characters of a UUID, the same at each read. */
static void test_procfs_boot_id(void)
{
	char a[40], b[40];

	CHECK(sp_procfs_boot_id(a) == 0);
	CHECK(sp_procfs_boot_id(b) == 0);
	CHECK_EQ_U(strlen(a), 36);
	CHECK(a[8] == '-' && a[13] == '-' && a[18] == '-' && a[23] == '-');
	CHECK_STR(a, b);
}

/* stat lines whose comm holds ')' and spaces, and lines cut short. */
static void test_procfs_parse_start(void)
{
	static const char rest[] = " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 19 20\n";
	char line[256];
	uint64_t t = 0;

	snprintf(line, sizeof(line), "42 (a) b) 1 2 (c)%s", rest);
	CHECK(sp_procfs_parse_start(line, strlen(line), &t) == 0);
	CHECK_EQ_U(t, 987654);
	snprintf(line, sizeof(line), "42 ())))%s", rest);
	CHECK(sp_procfs_parse_start(line, strlen(line), &t) == 0);
	CHECK_EQ_U(t, 987654);
	/* cut before field 22, no ')', field 22 not a number */
	snprintf(line, sizeof(line), "42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18");
	CHECK(sp_procfs_parse_start(line, strlen(line), &t) == -1);
	CHECK(sp_procfs_parse_start("42 x S 1", 8, &t) == -1);
	snprintf(line, sizeof(line), "42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -5 1");
	CHECK(sp_procfs_parse_start(line, strlen(line), &t) == -1);
	/* the length is the bound, not a NUL */
	snprintf(line, sizeof(line), "42 (x)%s", rest);
	CHECK(sp_procfs_parse_start(line, 20, &t) == -1);
}

static void test_procfs_parse_ns(void)
{
	uint32_t pid = 0;
	uint64_t ino = 0;

	CHECK(sp_procfs_parse_nspid("\t4242\t7\n", &pid) == 0);
	CHECK_EQ_U(pid, 7);
	CHECK(sp_procfs_parse_nspid("\t4242", &pid) == 0);
	CHECK_EQ_U(pid, 4242);
	CHECK(sp_procfs_parse_nspid("\t", &pid) == -1);
	CHECK(sp_procfs_parse_nspid("\t12 x", &pid) == -1);
	CHECK(sp_procfs_parse_nspid("\t99999999999", &pid) == -1);
	CHECK(sp_procfs_parse_ns("pid:[4026531836]", "pid", &ino) == 0);
	CHECK_EQ_U(ino, 4026531836u);
	CHECK(sp_procfs_parse_ns("net:[4026531836]", "pid", &ino) == -1);
	CHECK(sp_procfs_parse_ns("pid:[4026531836", "pid", &ino) == -1);
	CHECK(sp_procfs_parse_ns("pid:[]", "pid", &ino) == -1);
	CHECK(sp_procfs_parse_ns("pid:[1]x", "pid", &ino) == -1);
}

/* A child named like a stat line: its identity next to this process's. */
static void test_procfs_identity(void)
{
	struct sp_proc_identity me, kid;
	static const char *const ns[] = { "pid", "mnt", "net", "cgroup" };
	struct timespec now;
	char path[64], line[8192];
	struct stat st;
	int fds[2], ready[2], i;
	char c = 0;
	pid_t pid;
	FILE *f;

	CHECK(pipe(fds) == 0 && pipe(ready) == 0);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NAME, "x) 1 2 (y", 0, 0, 0);
		close(fds[1]);
		if (write(ready[1], &c, 1) != 1 || read(fds[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	CHECK(read(ready[0], &c, 1) == 1);	/* its name is set */
	close(ready[0]);
	close(ready[1]);
	CHECK(sp_procfs_identity((uint32_t)getpid(), &me) == 0);
	CHECK(sp_procfs_identity((uint32_t)pid, &kid) == 0);
	clock_gettime(CLOCK_BOOTTIME, &now);
	CHECK(kid.start_ticks >= me.start_ticks);
	CHECK(kid.start_ticks <= (uint64_t)now.tv_sec * (uint64_t)sysconf(_SC_CLK_TCK) +
	      (uint64_t)sysconf(_SC_CLK_TCK));
	CHECK(kid.nspid != 0);
	for (i = 0; i < SP_NS_COUNT; i++) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns[i]);
		CHECK(stat(path, &st) == 0 && st.st_ino == me.ns[i]);
		CHECK_EQ_U(kid.ns[i], me.ns[i]);
	}
	f = fopen("/proc/self/cgroup", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			CHECK_STR(me.cgroup, line + 3);
		}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	CHECK(f && fgets(line, sizeof(line), f) && !strncmp(line, "x) 1 2 (y", 9));
	if (f)
		fclose(f);
	close(fds[1]);
	waitpid(pid, NULL, 0);
	close(fds[0]);
	CHECK(sp_procfs_identity((uint32_t)pid, &kid) == -1);
}

/* The directory of pid in the fake /proc dir, with its status. */
static void put_status(const char *dir, uint32_t pid, uint32_t tgid, uint32_t ppid)
{
	char p[512], buf[128];
	int len;

	snprintf(p, sizeof(p), "%s/%u", dir, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/status", dir, pid);
	len = snprintf(buf, sizeof(buf), "Name:\tx\nTgid:\t%u\nPPid:\t%u\n", tgid, ppid);
	put_file(p, buf, (size_t)len);
}

/* A fake /proc holding pid -> ppid: a chain 10 <- 11 <- 12 <- 13, a
 * sibling 14 of 11, an unrelated 20 <- 21, a cycle 30 <- 31 <- 30, and a
 * thread-like entry 15 whose Tgid is not itself. */
static void test_procfs_descendants(void)
{
	static const uint32_t tree[][3] = {	/* pid, tgid, ppid */
		{ 10, 10, 1 }, { 11, 11, 10 }, { 12, 12, 11 }, { 13, 13, 12 }, { 14, 14, 10 },
		{ 15, 10, 10 }, { 20, 20, 1 }, { 21, 21, 20 }, { 30, 30, 31 }, { 31, 31, 30 },
	};
	char dir[] = "/tmp/sp-procfs-desc-XXXXXX", p[512];
	uint32_t *v, root = 10, cyc = 30;
	size_t n, more, i, k;

	CHECK(mkdtemp(dir) != NULL);
	for (i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
		put_status(dir, tree[i][0], tree[i][1], tree[i][2]);
	sp_procfs_root = dir;
	CHECK(sp_procfs_descendants(&root, 1, 100, &v, NULL, &n, &more) == 0);
	CHECK_EQ_U(n, 4);
	CHECK_EQ_U(more, 0);
	for (k = 0, i = 0; i < n; i++)
		k |= 1u << (v[i] - 10);
	CHECK_EQ_U(k, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4));	/* 11..14, not 15 */
	free(v);
	/* bounded: the first generation comes first */
	CHECK(sp_procfs_descendants(&root, 1, 2, &v, NULL, &n, &more) == 0);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(more, 2);
	for (i = 0; i < n; i++)
		CHECK(v[i] == 11 || v[i] == 14);
	free(v);
	/* a cycle ends: 31 only, never the root again */
	CHECK(sp_procfs_descendants(&cyc, 1, 100, &v, NULL, &n, &more) == 0);
	CHECK_EQ_U(n, 1);
	CHECK(n == 1 && v[0] == 31);
	free(v);
	sp_procfs_root = "/proc";
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CHECK(system(p) == 0);
}

/* In the real /proc: the descendants of our parent are neither us nor
 * what we started (a recorder of the shell it was started from), while
 * ours, as a root, are found as ever. */
static void test_procfs_descendants_not_self(void)
{
	uint32_t *v, root = (uint32_t)getppid();
	bool self = false, ours = false, found = false;
	size_t n, more, i;
	int q[2];
	pid_t kid;
	char c;

	CHECK(!pipe(q));
	kid = fork();
	if (kid == 0) {
		close(q[1]);
		_exit(read(q[0], &c, 1) < 0);
	}
	CHECK(kid > 0);
	CHECK(sp_procfs_descendants(&root, 1, 1 << 20, &v, NULL, &n, &more) == 0);
	for (i = 0; i < n; i++) {
		self |= v[i] == (uint32_t)getpid();
		ours |= v[i] == (uint32_t)kid;
	}
	CHECK(!self);
	CHECK(!ours);
	free(v);
	root = (uint32_t)getpid();
	CHECK(sp_procfs_descendants(&root, 1, 1 << 20, &v, NULL, &n, &more) == 0);
	for (i = 0; i < n; i++)
		found |= v[i] == (uint32_t)kid;
	CHECK(found);
	free(v);
	close(q[1]);
	waitpid(kid, NULL, 0);
	close(q[0]);
}

/* Each stat line of the fake /proc: pid, a comm with ") " in it, start. */
static void put_stat(const char *dir, uint32_t pid, uint64_t start)
{
	char p[512], buf[256];
	int len;

	snprintf(p, sizeof(p), "%s/%u/stat", dir, pid);
	len = snprintf(buf, sizeof(buf), "%u (a) b) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu "
		       "100 10\n", pid, (unsigned long long)start);
	put_file(p, buf, (size_t)len);
}

/* -p's children: their start times as listed, and the rule that leaves
 * out one whose pid names another process (or none) once it is opened. */
static void test_procfs_descendants_starts(void)
{
	static const uint32_t tree[][2] = { { 10, 1 }, { 11, 10 }, { 12, 11 }, { 14, 10 } };
	char dir[] = "/tmp/sp-procfs-start-XXXXXX", p[512];
	uint32_t *v, root = 10;
	uint64_t *st;
	size_t n, more, i;

	CHECK(mkdtemp(dir) != NULL);
	for (i = 0; i < sizeof(tree) / sizeof(tree[0]); i++) {
		put_status(dir, tree[i][0], tree[i][0], tree[i][1]);
		if (tree[i][0] != 14)	/* 14: no stat (gone meanwhile) */
			put_stat(dir, tree[i][0], 1000 + tree[i][0]);
	}
	sp_procfs_root = dir;
	CHECK(sp_procfs_descendants(&root, 1, 100, &v, &st, &n, &more) == 0);
	CHECK_EQ_U(n, 2);	/* 11 and 12; 14 left out, its start unread */
	for (i = 0; i < n; i++) {
		CHECK(v[i] == 11 || v[i] == 12);
		CHECK_EQ_U(st[i], 1000 + v[i]);
		CHECK(sp_procfs_same_process(v[i], st[i]));
	}
	/* 12 ends and another process takes its pid: a later start */
	put_stat(dir, 12, 5000);
	for (i = 0; i < n; i++)
		CHECK(sp_procfs_same_process(v[i], st[i]) == (v[i] == 11));
	/* 11 ends: no stat */
	snprintf(p, sizeof(p), "%s/11/stat", dir);
	CHECK(unlink(p) == 0);
	CHECK(!sp_procfs_same_process(11, 1011));
	CHECK(!sp_procfs_same_process(10, 0));	/* a start not known: never the same */
	CHECK(sp_procfs_same_process(10, 1010));
	free(v);
	free(st);
	sp_procfs_root = "/proc";
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CHECK(system(p) == 0);
}

/*
 * An identity is all one process's: its start time read before the rest
 * and after. The fake /proc/12/stat is a FIFO that a child fills once for
 * each read (the next once the last is closed: inotify), so that the pid
 * names another process (a later start) by the end of the second identity
 * read: the cgroup read in between may be the other's.
 */
static void test_procfs_identity_reused(void)
{
	static const uint64_t starts[] = { 1000, 1000, 1000, 5000 };
	char dir[] = "/tmp/sp-procfs-reuse-XXXXXX", p[512], buf[256];
	struct sp_proc_identity *id = calloc(1, sizeof(*id));
	pid_t kid;
	size_t i;
	int fd, len, in;

	CHECK(mkdtemp(dir) != NULL);
	put_status(dir, 12, 12, 1);
	snprintf(p, sizeof(p), "%s/12/cgroup", dir);
	put_file(p, "0::/user.slice/other\n", 21);
	snprintf(p, sizeof(p), "%s/12/stat", dir);
	CHECK(mkfifo(p, 0600) == 0);
	in = inotify_init1(IN_CLOEXEC);
	CHECK(in >= 0 && inotify_add_watch(in, p, IN_CLOSE_NOWRITE) >= 0);
	kid = fork();
	if (kid == 0) {
		struct inotify_event ev[4];

		/* reader and writer: a read never meets the end of the
		 * file, nor a write the lack of a reader */
		fd = open(p, O_RDWR);
		for (i = 0; fd >= 0 && i < sizeof(starts) / sizeof(starts[0]); i++) {
			len = snprintf(buf, sizeof(buf), "12 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 "
				       "20 0 1 0 %llu 100 10\n", (unsigned long long)starts[i]);
			/* the next once the reader closed the last */
			if (write(fd, buf, (size_t)len) != len || read(in, ev, sizeof(ev)) <= 0)
				_exit(1);
		}
		_exit(0);
	}
	sp_procfs_root = dir;
	/* the same start before and after: taken */
	CHECK(sp_procfs_identity(12, id) == 0);
	CHECK_EQ_U(id->start_ticks, 1000);
	CHECK_STR(id->cgroup, "/user.slice/other");
	/* another start after: nothing is taken */
	errno = 0;
	CHECK(sp_procfs_identity(12, id) == -1 && errno == ESRCH);
	CHECK(!id->start_ticks && !id->cgroup[0]);
	sp_procfs_root = "/proc";
	kill(kid, SIGKILL);	/* without the check after: a close never comes */
	waitpid(kid, NULL, 0);
	close(in);
	free(id);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CHECK(system(p) == 0);
}

int main(void)
{
	TAP_RUN(test_procfs_cpu_list);
	TAP_RUN(test_procfs_at_secure);
	TAP_RUN(test_procfs_parse_map);
	TAP_RUN(test_procfs_parse_perfmap);
	TAP_RUN(test_procfs_fake_root);
	TAP_RUN(test_procfs_perfmap_refused);
	TAP_RUN(test_procfs_self);
	TAP_RUN(test_procfs_maps_bounds);
	TAP_RUN(test_procfs_boot_id);
	TAP_RUN(test_procfs_parse_start);
	TAP_RUN(test_procfs_parse_ns);
	TAP_RUN(test_procfs_identity);
	TAP_RUN(test_procfs_identity_reused);
	TAP_RUN(test_procfs_descendants);
	TAP_RUN(test_procfs_descendants_starts);
	TAP_RUN(test_procfs_descendants_not_self);
	return TAP_DONE();
}
