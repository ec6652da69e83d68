// SPDX-License-Identifier: MIT
/* Reading processes, threads and mappings from /proc. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procfs.h"
#include "safefile.h"
#include "sp.h"

const char *sp_procfs_root = "/proc";
const char *sp_procfs_perfmap_dir = "/tmp";

static int hexval(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	int n = 0;

	while (isxdigit((unsigned char)*p)) {
		if (n++ >= 16)
			return -1;
		x = x * 16 + (isdigit((unsigned char)*p) ? *p - '0' : (tolower(*p) - 'a' + 10));
		p++;
	}
	if (!n)
		return -1;
	*s = p;
	*v = x;
	return 0;
}

static int expect(const char **s, char c)
{
	if (**s != c)
		return -1;
	(*s)++;
	return 0;
}

int sp_procfs_parse_map(char *line, struct sp_proc_map *m)
{
	const char *s = line;
	uint64_t maj, min;

	memset(m, 0, sizeof(*m));
	if (hexval(&s, &m->start) || expect(&s, '-') || hexval(&s, &m->end) || expect(&s, ' '))
		return -1;
	if (m->end < m->start || strlen(s) < 5)
		return -1;
	m->prot = (s[0] == 'r' ? PROT_READ : 0) | (s[1] == 'w' ? PROT_WRITE : 0) |
		  (s[2] == 'x' ? PROT_EXEC : 0);
	s += 4;
	if (expect(&s, ' ') || hexval(&s, &m->pgoff) || expect(&s, ' ') ||
	    hexval(&s, &maj) || expect(&s, ':') || hexval(&s, &min) || expect(&s, ' '))
		return -1;
	m->dev = makedev(maj, min);
	if (!isdigit((unsigned char)*s))
		return -1;
	m->ino = strtoull(s, (char **)&s, 10);
	while (*s == ' ')
		s++;
	m->path = s;
	return 0;
}

static FILE *open_proc(uint32_t pid, const char *what)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%u/%s", sp_procfs_root, pid, what);
	return fopen(path, "re");
}

int sp_procfs_maps(uint32_t pid, size_t max_bytes,
		   int (*fn)(void *ctx, const struct sp_proc_map *m), void *ctx)
{
	/* a mapping whose path is longer than PATH_MAX (a deep directory:
	 * d_path() has no such limit) is skipped whole, never grown into,
	 * and its end never taken for a line of its own */
	char line[PATH_MAX + 256];
	struct sp_proc_map m;
	size_t bytes = 0, len;
	bool whole = true;
	int ret = 0;
	FILE *f;

	f = open_proc(pid, "maps");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		len = strlen(line);
		bytes += len;
		if (bytes > max_bytes) {
			ret = -1;
			errno = EFBIG;
			break;
		}
		if (len && line[len - 1] == '\n') {
			line[len - 1] = 0;
		} else if (!feof(f)) {
			whole = false;	/* the rest of this line comes next */
			continue;
		}
		if (!whole) {		/* the end of a line too long */
			whole = true;
			continue;
		}
		if (sp_procfs_parse_map(line, &m))
			continue;
		ret = fn(ctx, &m);
		if (ret)
			break;
	}
	fclose(f);
	return ret;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The numeric names in d, which is closed. */
static int list_numeric_dir(DIR *d, uint32_t **out, size_t *n)
{
	uint32_t *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	char *end;
	unsigned long x;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		x = strtoul(de->d_name, &end, 10);
		if (*end || x > UINT32_MAX)
			continue;
		if (cnt == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				errno = ENOMEM;
				return -1;
			}
			v = nv;
		}
		v[cnt++] = (uint32_t)x;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_u32);
	*out = v;
	*n = cnt;
	return 0;
}

static int list_numeric(const char *dir, uint32_t **out, size_t *n)
{
	return list_numeric_dir(opendir(dir), out, n);
}

int sp_procfs_tasks(uint32_t pid, uint32_t **tids, size_t *n)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%u/task", sp_procfs_root, pid);
	return list_numeric(path, tids, n);
}

int sp_procfs_tasks_at(int procdir, uint32_t **tids, size_t *n)
{
	int fd = openat(procdir, "task", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return list_numeric_dir(d, tids, n);
}

int sp_procfs_pids(uint32_t **pids, size_t *n)
{
	return list_numeric(sp_procfs_root, pids, n);
}

static int read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return (int)n;
}

int sp_procfs_comm(uint32_t pid, uint32_t tid, char *buf, size_t size)
{
	char path[256];
	int n;

	snprintf(path, sizeof(path), "%s/%u/task/%u/comm", sp_procfs_root, pid, tid);
	n = read_small(path, buf, size);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/* Tgid, PPid and the State letter of /proc/PID/status: 0, or -1. */
static int read_status(uint32_t pid, uint32_t *tgid, uint32_t *ppid, char *state)
{
	char line[256];
	int found = 0;
	FILE *f;

	f = open_proc(pid, "status");
	if (!f)
		return -1;
	*state = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Tgid:", 5)) {
			*tgid = (uint32_t)strtoul(line + 5, NULL, 10);
			found |= 1;
		} else if (!strncmp(line, "PPid:", 5)) {
			*ppid = (uint32_t)strtoul(line + 5, NULL, 10);
			found |= 2;
		} else if (!strncmp(line, "State:", 6)) {
			*state = line[6 + strspn(line + 6, " \t")];
		}
	}
	fclose(f);
	if (found != 3) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int sp_procfs_status(uint32_t pid, uint32_t *tgid, uint32_t *ppid)
{
	char state;

	return read_status(pid, tgid, ppid, &state);
}

bool sp_procfs_zombie(uint32_t pid, uint32_t *ppid)
{
	uint32_t tgid;
	char state;

	return read_status(pid, &tgid, ppid, &state) == 0 && state == 'Z';
}

struct pid_parent {
	uint32_t pid, ppid;
	uint64_t start;	/* its start time, read before its parent (0: not asked) */
};

static int by_ppid(const void *a, const void *b)
{
	const struct pid_parent *x = a, *y = b;

	return x->ppid < y->ppid ? -1 : x->ppid > y->ppid;
}

/* Index of the first of v[0..n) (sorted by ppid) whose ppid is ppid. */
static size_t first_child(const struct pid_parent *v, size_t n, uint32_t ppid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].ppid < ppid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of pid in the sorted pids[0..n), or n. */
static size_t pid_index(const uint32_t *pids, size_t n, uint32_t pid)
{
	const uint32_t *hit = bsearch(&pid, pids, n, sizeof(*pids), cmp_u32);

	return hit ? (size_t)(hit - pids) : n;
}

/*
 * Without CONFIG_PROC_CHILDREN (this kernel has none) the tree is only in
 * each process's PPid: every process's is read once, sorted by parent, and
 * the tree walked breadth first through a queue (no recursion; each pid
 * taken once, so a cycle in what was read ends too): O(N log N).
 */
int sp_procfs_descendants(const uint32_t *roots, size_t nroots, size_t max, uint32_t **out,
			  uint64_t **starts, size_t *n, size_t *more)
{
	uint32_t *pids = NULL, *queue = NULL, tgid, pp;
	struct pid_parent *kids = NULL;
	size_t npids = 0, nkids = 0, head = 0, tail = 0, nq, i, k;
	uint8_t *taken = NULL;
	uint64_t start = 0, *qstart = NULL;

	*out = NULL;
	if (starts)
		*starts = NULL;
	*n = *more = 0;
	if (sp_procfs_pids(&pids, &npids))
		return -1;
	kids = calloc(npids ? npids : 1, sizeof(*kids));
	taken = calloc(npids ? npids : 1, 1);
	queue = calloc(npids + nroots + 1, sizeof(*queue));
	qstart = calloc(npids + nroots + 1, sizeof(*qstart));	/* queue's starts */
	if (!kids || !taken || !queue || !qstart) {
		free(pids);
		free(kids);
		free(taken);
		free(queue);
		free(qstart);
		errno = ENOMEM;
		return -1;
	}
	/* gone, or not a process: left out. The start time is read first: a
	 * pid reused before its parent is read names another start then */
	for (i = 0; i < npids; i++)
		if ((!starts || !sp_procfs_start(pids[i], &start)) &&
		    !sp_procfs_status(pids[i], &tgid, &pp) && tgid == pids[i] && pp)
			kids[nkids++] = (struct pid_parent){ pids[i], pp, start };
	qsort(kids, nkids, sizeof(*kids), by_ppid);
	for (i = 0; i < nroots; i++) {
		k = pid_index(pids, npids, roots[i]);
		if (k < npids && taken[k])
			continue;
		if (k < npids)
			taken[k] = 1;
		queue[tail++] = roots[i];
	}
	/* the caller, unless a root, is no one's descendant here, nor what
	 * it started: a recorder of the shell it was started from (-p $$)
	 * records the shell, not itself */
	k = pid_index(pids, npids, (uint32_t)getpid());
	if (k < npids)
		taken[k] = 1;
	nq = tail;
	while (head < tail) {
		uint32_t parent = queue[head++];

		for (i = first_child(kids, nkids, parent); i < nkids && kids[i].ppid == parent; i++) {
			k = pid_index(pids, npids, kids[i].pid);
			if (k >= npids || taken[k])
				continue;
			taken[k] = 1;
			qstart[tail] = kids[i].start;
			queue[tail++] = kids[i].pid;
		}
	}
	free(pids);
	free(taken);
	/* the roots were first, then each generation in turn */
	k = tail - nq;
	memmove(queue, queue + nq, k * sizeof(*queue));
	if (k > max) {
		*more = k - max;
		k = max;
	}
	if (starts) {
		memmove(qstart, qstart + nq, k * sizeof(*qstart));
		*starts = qstart;
	} else {
		free(qstart);
	}
	free(kids);
	*out = queue;
	*n = k;
	return 0;
}

bool sp_procfs_same_process(uint32_t pid, uint64_t start_ticks)
{
	uint64_t now;

	return start_ticks && !sp_procfs_start(pid, &now) && now == start_ticks;
}

int sp_procfs_exe(uint32_t pid, char *buf, size_t size)
{
	char path[256];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/exe", sp_procfs_root, pid);
	n = readlink(path, buf, size - 1);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

int sp_procfs_argv(uint32_t pid, char *buf, size_t size, bool *cut)
{
	char path[256];
	int n;

	*cut = false;
	if (size < 2)
		return -1;
	snprintf(path, sizeof(path), "%s/%u/cmdline", sp_procfs_root, pid);
	n = read_small(path, buf, size);
	if (n < 0)
		return -1;
	/* a full buffer may hold only the start: its last argument is cut
	 * (the kernel gives ARG_MAX bytes; the process chooses them all) */
	*cut = (size_t)n == size - 1;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	buf[n] = 0;
	return n;
}

int sp_procfs_cmdline(uint32_t pid, char *buf, size_t size)
{
	bool cut;
	int n = sp_procfs_argv(pid, buf, size, &cut), i;

	if (n < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	return 0;
}

int sp_procfs_parse_perfmap(char *line, uint64_t *addr, uint64_t *size, const char **name)
{
	const char *s = line;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (hexval(&s, addr) || expect(&s, ' '))
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (hexval(&s, size) || expect(&s, ' ') || !*s)
		return -1;
	*name = s;
	return 0;
}

struct perfmap_ctx {
	int (*fn)(void *ctx, uint64_t addr, uint64_t size, const char *name);
	void *ctx;
	struct sp_perfmap_result *res;
	bool full;
};

static int perfmap_line(void *arg, char *line, size_t len)
{
	struct perfmap_ctx *c = arg;
	uint64_t addr, size;
	const char *name;

	if (sp_procfs_parse_perfmap(line, &addr, &size, &name)) {
		c->res->skipped++;
		return 0;
	}
	if (c->res->syms >= SP_PERFMAP_MAX_SYMS) {
		c->full = true;
		return 1;
	}
	c->res->syms++;
	return c->fn(c->ctx, addr, size, name);
}

int sp_procfs_perfmap_fd(int fd, int (*fn)(void *ctx, uint64_t addr, uint64_t size,
					    const char *name), void *ctx,
			 struct sp_perfmap_result *res)
{
	struct sp_safe_lines l = { .max_bytes = SP_PERFMAP_MAX_BYTES,
				   .max_line = SP_PERFMAP_MAX_LINE };
	struct perfmap_ctx c = { fn, ctx, res, false };
	int ret;

	res->syms = res->skipped = 0;
	res->cut = false;
	res->why = NULL;
	ret = sp_safe_read_lines(fd, &l, perfmap_line, &c);
	res->skipped += l.long_lines;
	if (c.full) {
		ret = 0;
		res->cut = true;
		res->why = "more symbols than " SP_PERFMAP_MAX_SYMS_TEXT;
	} else if (!ret && l.cut) {
		res->cut = true;
		res->why = "larger than " SP_PERFMAP_MAX_BYTES_TEXT;
	}
	return ret;
}

int sp_procfs_perfmap(uint32_t pid, uid_t uid, int (*fn)(void *ctx, uint64_t addr, uint64_t size,
							  const char *name), void *ctx,
		      struct sp_perfmap_result *res)
{
	return sp_procfs_perfmap_at(AT_FDCWD, pid, pid, uid, fn, ctx, res);
}

int sp_procfs_perfmap_at(int dirfd, uint32_t name_pid, uint32_t pid, uid_t uid,
			 int (*fn)(void *ctx, uint64_t addr, uint64_t size, const char *name),
			 void *ctx, struct sp_perfmap_result *res)
{
	struct sp_safe_want w = { SP_SAFE_NOFOLLOW | SP_SAFE_OWNER, uid, 0 };
	struct stat st;
	char path[256];
	int fd, ret, e;
	uid_t now;

	memset(res, 0, sizeof(*res));
	res->user = uid;
	res->owner = (uid_t)-1;
	if (dirfd == AT_FDCWD)
		snprintf(path, sizeof(path), "%s/perf-%u.map", sp_procfs_perfmap_dir, name_pid);
	else
		snprintf(path, sizeof(path), "perf-%u.map", name_pid);
	/* Most processes have none: that costs one system call (asked at
	 * every end of a process of the machine), and no link is followed.
	 * One that is there gets every check of sp_safe_open() below. */
	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW))
		return -1;
	/* The user the process runs as now; else as it was last seen. */
	if (pid && sp_procfs_uid(pid, &now) == 0)
		w.owner = now;
	res->user = w.owner;
	fd = sp_safe_open(dirfd, path, &w, &st, &res->why);
	if (fd < 0) {
		if (errno == EPERM)
			res->owner = st.st_uid;
		return -1;
	}
	res->owner = st.st_uid;
	ret = sp_procfs_perfmap_fd(fd, fn, ctx, res);
	e = errno;
	close(fd);
	errno = e;
	return ret;
}

int sp_procfs_creds(uint32_t pid, uint32_t *uid, uint32_t *gid, uint32_t *groups,
		    unsigned int max, unsigned int *ngroups)
{
	char line[4096], *p, *end;
	unsigned long r, e, s, fs;
	int have = 0;
	FILE *f;

	*ngroups = 0;
	f = open_proc(pid, "status");
	if (!f)
		return -1;
	/* a line longer than the buffer comes in pieces: only whole ones,
	 * which start with their name, are taken */
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Uid:", 4) &&
		    sscanf(line + 4, "%lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			*uid = (uint32_t)fs;
			have |= 1;
		} else if (gid && !strncmp(line, "Gid:", 4) &&
			   sscanf(line + 4, "%lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			*gid = (uint32_t)fs;
			have |= 2;
		} else if (!strncmp(line, "Groups:", 7)) {
			for (p = line + 7; *ngroups < max; p = end) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p)
					break;
				groups[(*ngroups)++] = (uint32_t)g;
			}
		}
	}
	fclose(f);
	if (have != (gid ? 3 : 1)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int sp_procfs_uid(uint32_t pid, uid_t *uid)
{
	uint32_t u;
	unsigned int n;

	if (sp_procfs_creds(pid, &u, NULL, NULL, 0, &n))
		return -1;
	*uid = (uid_t)u;	/* files it creates are its file-system user's */
	return 0;
}

int sp_parse_cpu_list(const char *list, int **out)
{
	const char *s = list;
	char *end;
	int *v = NULL;
	size_t n = 0, cap = 0;
	long a, b, i;

	while (*s && *s != '\n') {
		a = strtol(s, &end, 10);
		if (end == s || a < 0)
			break;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			s = end;
		}
		/* A kernel supports at most a few thousand CPUs: bound the list. */
		for (i = a; i <= b && i < 4096; i++) {
			sp_grow(&v, &cap, n + 1, sizeof(*v));
			v[n++] = (int)i;
		}
		if (*s != ',')
			break;
		s++;
	}
	*out = v;
	return (int)n;
}

int sp_online_cpus(int **out)
{
	char buf[256];
	ssize_t len;
	int fd;

	fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (len <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		len = snprintf(buf, sizeof(buf), "0-%ld", c > 0 ? c - 1 : 0);
	}
	buf[len] = 0;
	return sp_parse_cpu_list(buf, out);
}

int sp_procfs_boot_id(char *buf)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	memset(buf, 0, 40);
	if (fd < 0)
		return -1;
	n = read(fd, buf, 39);
	close(fd);
	if (n < 32)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* ---- identity: namespaces, start time, cgroup ---- */

#define INIT_PID_NS_INO 0xeffffffcu	/* PROC_PID_INIT_INO, fixed by the kernel */

bool sp_procfs_host_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == INIT_PID_NS_INO;
}

int sp_procfs_parse_start(const char *stat, size_t n, uint64_t *ticks)
{
	const char *p = memrchr(stat, ')', n), *end = stat + n;
	uint64_t v = 0;
	int field = 2;	/* comm, which ends at the last ')' */

	if (!p)
		return -1;
	p++;
	while (field < 22) {
		if (p == end || *p != ' ')
			return -1;
		while (p < end && *p == ' ')
			p++;
		field++;
		if (field == 22)
			break;
		while (p < end && *p != ' ')
			p++;
	}
	if (p == end || !isdigit((unsigned char)*p))
		return -1;
	while (p < end && isdigit((unsigned char)*p)) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p++ - '0');
	}
	if (p < end && *p != ' ' && *p != '\n')
		return -1;
	*ticks = v;
	return 0;
}

int sp_procfs_start(uint32_t pid, uint64_t *ticks)
{
	char path[64], buf[1024];
	int n;

	snprintf(path, sizeof(path), "%s/%u/stat", sp_procfs_root, pid);
	n = read_small(path, buf, sizeof(buf));
	if (n <= 0 || sp_procfs_parse_start(buf, (size_t)n, ticks)) {
		if (n >= 0 || errno == ENOENT)
			errno = ESRCH;
		return -1;
	}
	return 0;
}

int sp_procfs_mem_open(uint32_t pid, uint64_t start_ticks)
{
	char path[64];
	uint64_t now;
	int fd;

	if (!start_ticks) {
		errno = ESRCH;
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%u/mem", sp_procfs_root, pid);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	/* read after the open: a pid is reused only by a later process, so
	 * the start it names now is the one it named at the open (a start
	 * that cannot be read for another reason than the process's end, out
	 * of descriptors say, keeps its errno) */
	if (sp_procfs_start(pid, &now)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	if (now != start_ticks) {
		close(fd);
		errno = ESRCH;
		return -1;
	}
	return fd;
}

int sp_procfs_parse_nspid(const char *value, uint32_t *pid)
{
	const char *p = value, *last = NULL;
	unsigned long v;
	char *end;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n')
			break;
		if (!isdigit((unsigned char)*p))
			return -1;
		last = p;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (!last)
		return -1;
	errno = 0;
	v = strtoul(last, &end, 10);
	if (errno || v == 0 || v > UINT32_MAX)
		return -1;
	*pid = (uint32_t)v;
	return 0;
}

int sp_procfs_parse_ns(const char *link, const char *type, uint64_t *ino)
{
	size_t n = strlen(type);
	uint64_t v = 0;
	const char *p;

	if (strncmp(link, type, n) || link[n] != ':' || link[n + 1] != '[')
		return -1;
	p = link + n + 2;
	if (!isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p)) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p++ - '0');
	}
	if (p[0] != ']' || p[1] || !v)
		return -1;
	*ino = v;
	return 0;
}

static int identity_status_line(void *ctx, char *line, size_t len)
{
	struct sp_proc_identity *id = ctx;

	(void)len;
	if (!strncmp(line, "NSpid:", 6)) {
		if (sp_procfs_parse_nspid(line + 6, &id->nspid))
			id->nspid = 0;
		return 1;
	}
	return 0;
}

static int identity_cgroup_line(void *ctx, char *line, size_t len)
{
	struct sp_proc_identity *id = ctx;

	if (len < 3 || memcmp(line, "0::", 3))
		return 0;
	memcpy(id->cgroup, line + 3, len - 3 + 1);
	return 1;
}

/* Each line of /proc/PID/what to fn, bounded; *long_lines: how many were
 * longer than max_line (skipped). 0, or -1 if it cannot be read. */
static int proc_lines(uint32_t pid, const char *what, size_t max_line,
		      int (*fn)(void *ctx, char *line, size_t len), void *ctx,
		      uint64_t *long_lines)
{
	struct sp_safe_lines l = { .max_bytes = SP_PROC_CGROUP_FILE_MAX, .max_line = max_line };
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%u/%s", sp_procfs_root, pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = sp_safe_read_lines(fd, &l, fn, ctx);
	close(fd);
	*long_lines = l.long_lines;
	return ret < 0 ? -1 : 0;
}

int sp_procfs_identity(uint32_t pid, struct sp_proc_identity *id)
{
	static const char *const ns_names[SP_NS_COUNT] = { "pid", "mnt", "net", "cgroup" };
	char path[256], buf[1024];
	uint64_t long_lines, again;
	int n, i;
	ssize_t len;

	memset(id, 0, sizeof(*id));
	snprintf(path, sizeof(path), "%s/%u/stat", sp_procfs_root, pid);
	n = read_small(path, buf, sizeof(buf));
	/* Gone (a zombie still has its stat): none of the rest is there
	 * either, and short-lived processes are many. Nor is the rest known
	 * to be one process's without its start time (below). */
	if (n <= 0 || sp_procfs_parse_start(buf, (size_t)n, &id->start_ticks)) {
		errno = ESRCH;
		return -1;
	}
	proc_lines(pid, "status", 1024, identity_status_line, id, &long_lines);
	for (i = 0; i < SP_NS_COUNT; i++) {
		snprintf(path, sizeof(path), "%s/%u/ns/%s", sp_procfs_root, pid, ns_names[i]);
		len = readlink(path, buf, 63);
		if (len <= 0)
			continue;
		buf[len] = 0;
		sp_procfs_parse_ns(buf, ns_names[i], &id->ns[i]);
	}
	/* A longer line is skipped: on a v2 host the "0::" line is the only one. */
	if (proc_lines(pid, "cgroup", SP_PROC_CGROUP_MAX + 3, identity_cgroup_line, id,
		       &long_lines) == 0)
		id->cgroup_long = !id->cgroup[0] && long_lines;
	/*
	 * Each file is read by the pid's number: the process may have ended
	 * meanwhile and its pid named another (another user's, in another
	 * container). None is taken unless the start time read first is the
	 * start time still: a pid is not reused while its process exists, so
	 * all was read of the process that started then.
	 */
	if (sp_procfs_start(pid, &again) || again != id->start_ticks) {
		memset(id, 0, sizeof(*id));
		errno = ESRCH;
		return -1;
	}
	return 0;
}

static int nstid_line(void *ctx, char *line, size_t len)
{
	(void)len;
	if (strncmp(line, "NSpid:", 6))
		return 0;
	if (sp_procfs_parse_nspid(line + 6, ctx))
		*(uint32_t *)ctx = 0;
	return 1;
}

int sp_procfs_thread_nstid(uint32_t pid, uint32_t tid, uint32_t *nstid)
{
	uint64_t long_lines;
	uint32_t nr = 0;
	char what[64];

	snprintf(what, sizeof(what), "task/%u/status", tid);
	if (proc_lines(pid, what, 1024, nstid_line, &nr, &long_lines) || !nr)
		return -1;
	*nstid = nr;
	return 0;
}

bool sp_procfs_at_secure(uint32_t pid)
{
	unsigned long v[2 * 64];	/* (type, value) pairs: about 20 of them */
	char path[256];
	ssize_t n;
	size_t i;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/auxv", sp_procfs_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, v, sizeof(v));
	close(fd);
	for (i = 0; n > 0 && i + 1 < (size_t)n / sizeof(v[0]) && v[i] != AT_NULL; i += 2)
		if (v[i] == AT_SECURE)
			return v[i + 1] != 0;
	return false;
}
