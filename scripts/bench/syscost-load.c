// SPDX-License-Identifier: MIT
/*
 * syscost-load.c - scripts/bench/syscost's timer and loads.
 *
 *   syscost-load run CMD [ARG...]   runs CMD, prints "SYS_US WALL_US": the
 *                                   system time of CMD and all its waited-for
 *                                   children (wait4's rusage, in µs, finer
 *                                   than time(1)'s 10 ms), and its wall time
 *   syscost-load opens N            N open()/close() pairs of /etc/hostname
 *                                   (each an event sp-record records)
 *   syscost-load getppid N          N getppid() calls (a system call no
 *                                   event wants: the bare cost of the hooks)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int run(char **argv)
{
	struct rusage ru;
	long long t0 = now_us();
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return perror("fork"), 2;
	if (!pid) {
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) != pid)
		return perror("wait4"), 2;
	printf("%lld %lld\n", ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
	       now_us() - t0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0, i;

	if (argc > 2 && !strcmp(argv[1], "run"))
		return run(argv + 2);
	if (argc > 2 && !strcmp(argv[1], "opens")) {
		for (i = 0; i < n; i++) {
			int fd = open("/etc/hostname", O_RDONLY);

			if (fd >= 0)
				close(fd);
		}
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "getppid")) {
		for (i = 0; i < n; i++)
			syscall(SYS_getppid);
		return 0;
	}
	fprintf(stderr, "usage: syscost-load run CMD... | opens N | getppid N\n");
	return 64;
}
