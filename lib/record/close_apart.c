// SPDX-License-Identifier: MIT
/* File descriptors closed by a process of their own (close_apart.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "close_apart.h"
#include "procfs.h"
#include "sp.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define CLOSER_NAME	"sp-record-end"
#define WAIT_MAX	64	/* closers waited for at once */
/*
 * The closers' lock file: root's, in a directory only root writes. Two
 * bytes of it are locks (open file description locks: a process that
 * dies lets go of its own):
 * - the close lock: a closer holds it exclusively for each close, a
 *   recording shared while it attaches;
 * - the gate: a recording holds it exclusively only while it takes the
 *   close lock, and a closer passes it (shared) before each close. So a
 *   closer that has just closed cannot take the close lock again before
 *   a recording that waits for it: the recording waits for one close at
 *   most, and recordings that start together do not wait for each other.
 */
#define CLOSERS_LOCK	"/run/sp-record-closers.lock"
#define LOCK_BYTE_CLOSE	0
#define LOCK_BYTE_GATE	1
#define CLOSER_LOCK_WAIT_NS	(10 * 1000000000ULL)	/* then it closes all anyway */

static int pause_fd = -1;	/* this recording's shared hold of the close lock */
static const char *lock_path = CLOSERS_LOCK;

void sp_close_apart_lock_path(const char *path)
{
	lock_path = path;
}

/* The closers' lock file, or -1 when there is none to trust (no /run, a
 * file there that is not root's alone); *why then says which, a static
 * string. System calls only: closers call it. */
static int closers_lock_open(const char **why)
{
	struct stat st;
	int fd;

	fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0) {
		*why = errno == ELOOP ? "a symbolic link" :
		       errno == ENOENT || errno == EROFS ? NULL :
		       "not a file root can open";
		return -1;
	}
	*why = fstat(fd, &st) || !S_ISREG(st.st_mode) ? "not a regular file" :
	       st.st_uid != 0 ? "not owned by root" :
	       st.st_nlink != 1 ? "a file with other links" :
	       st.st_mode & 077 ? "open to others than root" : NULL;
	if (*why) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Lock byte `byte` of fd as type (F_RDLCK, F_WRLCK, F_UNLCK), waiting at
 * most timeout_ns. System calls only. */
static bool lock_within(int fd, int byte, short type, uint64_t timeout_ns)
{
	const struct timespec step = { 0, 1000000 };
	struct flock l = { .l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };
	uint64_t waited = 0;

	while (fcntl(fd, F_OFD_SETLK, &l)) {
		if ((errno != EAGAIN && errno != EACCES && errno != EINTR) || waited >= timeout_ns)
			return false;
		nanosleep(&step, NULL);
		waited += (uint64_t)step.tv_nsec;
	}
	return true;
}

static void close_range_of(unsigned int lo, unsigned int hi)
{
	unsigned int fd;

	if (lo > hi)
		return;
	if (!syscall(SYS_close_range, lo, hi, 0))
		return;
	/* before Linux 5.9: one by one, as far as a process is likely to go */
	for (fd = lo; fd <= hi && fd < 65536; fd++)
		close((int)fd);
}

void sp_close_all_but(int *keep, size_t n)
{
	unsigned int next = 0;
	size_t i, j;

	/* insertion sort: no allocation, and n is a few dozen */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned int)keep[i] < next)
			continue;	/* ignored, or a repeat */
		if ((unsigned int)keep[i] > next)
			close_range_of(next, (unsigned int)keep[i] - 1);
		next = (unsigned int)keep[i] + 1;
	}
	close_range_of(next, ~0u);
}

void sp_keeper_become(int *keep, size_t n, const char *name)
{
	static const int ignored[] = {
		SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU,
		SIGUSR1, SIGUSR2,
	};
	struct sigaction sa;
	size_t i;

	sp_close_all_but(keep, n);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	for (i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		sigaction(ignored[i], &sa, NULL);
	setsid();
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

void sp_keeper_wait_end(int rfd)
{
	char buf[64];
	ssize_t r;

	for (;;) {
		r = read(rfd, buf, sizeof(buf));
		if (r > 0 || (r < 0 && errno == EINTR))
			continue;
		break;
	}
}

/*
 * Waits for the caller's end of the pipe, rfd, then closes fds[0..n) one
 * by one, each while holding the closers' lock: a recording that attaches
 * meanwhile holds it shared, and this closer waits between two closes
 * until it is done. Its attaches then find the tracepoints' events still
 * referenced (ours), so they neither wait for the kernel's event_mutex
 * behind our grace periods nor register anything anew, and our closes of
 * the events it attached too wait for no grace period at all.
 */
static noreturn void closer_main(int rfd, int *fds, size_t n)
{
	const char *why;
	size_t i;
	int lock;

	fds[n] = rfd;	/* the caller left room */
	sp_close_all_but(fds, n + 1);	/* at once: the parent waits */
	/* a grandchild: init's at once, nobody's zombie while sp-record runs
	 * (_Fork: no atfork handlers, safe in a child of a process with threads) */
	if (_Fork())
		_exit(0);
	sp_keeper_become(fds, n + 1, CLOSER_NAME);
	/* the caller writes nothing: EOF once its copies are closed */
	sp_keeper_wait_end(rfd);
	close(rfd);
	lock = closers_lock_open(&why);
	for (i = 0; lock >= 0 && i < n + 1; i++) {
		bool held;

		if (fds[i] < 0 || fds[i] == rfd)
			continue;	/* closed above: its number may be the lock's now */
		held = lock_within(lock, LOCK_BYTE_GATE, F_RDLCK, CLOSER_LOCK_WAIT_NS) &&
		       lock_within(lock, LOCK_BYTE_GATE, F_UNLCK, 0) &&
		       lock_within(lock, LOCK_BYTE_CLOSE, F_WRLCK, CLOSER_LOCK_WAIT_NS);
		close(fds[i]);
		if (!held)
			break;	/* a recording attaching that long: the rest at once */
		lock_within(lock, LOCK_BYTE_CLOSE, F_UNLCK, 0);
	}
	_exit(0);	/* the rest, or all of them without the lock */
}

int sp_fds_close_apart(int *fds, size_t n)
{
	int p[2], *keep, err;
	pid_t pid;

	/* the child's list is made here: after fork() it may not allocate */
	keep = calloc(n + 1, sizeof(*keep));
	if (!keep)
		return -ENOMEM;
	memcpy(keep, fds, n * sizeof(*keep));
	if (pipe2(p, O_CLOEXEC)) {
		err = -errno;
		free(keep);
		return err;
	}
	pid = fork();
	if (!pid)
		closer_main(p[0], keep, n);	/* only system calls there */
	err = pid < 0 ? -errno : 0;
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(keep);
	close(p[0]);
	if (err) {
		close(p[1]);
		return err;
	}
	return p[1];
}

void sp_bpf_links_destroy(struct bpf_link **links, size_t n)
{
	size_t i, k = 0;
	int *fds, done;

	fds = n > 1 ? calloc(n, sizeof(*fds)) : NULL;
	for (i = 0; fds && i < n; i++)
		if (links[i] && bpf_link__fd(links[i]) >= 0)
			fds[k++] = bpf_link__fd(links[i]);
	/* with one, or if it cannot: here */
	done = k > 1 ? sp_fds_close_apart(fds, k) : -1;
	free(fds);
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	if (done >= 0)
		close(done);
}

/* pid is a closer: root's, and so named (only root makes a uid 0 process;
 * one so named that never ends costs the timeout, no more). */
static bool is_closer(uint32_t pid)
{
	char comm[32], path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	return !sp_procfs_comm(pid, pid, comm, sizeof(comm)) && !strcmp(comm, CLOSER_NAME) &&
	       !stat(path, &st) && st.st_uid == 0;
}

int sp_close_apart_wait_earlier(uint64_t timeout_ns)
{
	static bool done;
	uint64_t deadline = sp_now_mono_ns() + timeout_ns, now;
	int fds[WAIT_MAX], nfds = 0, i, lock;
	const char *why = NULL;
	uint32_t *pids;
	size_t n, k;

	/* once, before anything of ours could have made a closer */
	if (__atomic_exchange_n(&done, true, __ATOMIC_ACQ_REL) || geteuid() != 0)
		return 0;
	/* the closers paused between two closes until sp_close_apart_resume() */
	lock = closers_lock_open(&why);
	if (why)	/* once a run: this is called once */
		sp_warn("%s is %s: not used; recordings wait for earlier ones to close their "
			"links instead (remove it: sp-record makes it anew)",
			lock_path, why);
	if (lock >= 0 && lock_within(lock, LOCK_BYTE_GATE, F_WRLCK, timeout_ns)) {
		bool held = lock_within(lock, LOCK_BYTE_CLOSE, F_RDLCK, timeout_ns);

		lock_within(lock, LOCK_BYTE_GATE, F_UNLCK, 0);
		if (held) {
			pause_fd = lock;
			return 0;
		}
	}
	if (lock >= 0)
		close(lock);
	if (sp_procfs_pids(&pids, &n))
		return 0;
	for (k = 0; k < n && nfds < WAIT_MAX; k++)
		if (pids[k] != (uint32_t)getpid() && is_closer(pids[k])) {
			int fd = (int)syscall(SYS_pidfd_open, (pid_t)pids[k], 0);

			if (fd >= 0)
				fds[nfds++] = fd;
		}
	free(pids);
	/* a pidfd reads as ready once its process has exited, its files
	 * closed (the kernel's waits are in its exit) */
	for (i = 0; i < nfds; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };

		now = sp_now_mono_ns();
		if (now < deadline)
			poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		close(fds[i]);
	}
	if (nfds)
		sp_info("waited for %d earlier recording(s) to close their links", nfds);
	return nfds;
}

void sp_close_apart_resume(void)
{
	int fd = __atomic_exchange_n(&pause_fd, -1, __ATOMIC_ACQ_REL);

	if (fd < 0)
		return;
	/* now: a child forked meanwhile and not yet exec'd holds the same
	 * open file description, which would keep the lock until it execs */
	lock_within(fd, LOCK_BYTE_CLOSE, F_UNLCK, 0);
	close(fd);
}
