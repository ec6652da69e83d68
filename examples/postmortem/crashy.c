// SPDX-License-Identifier: MIT
/*
 * crashy - a program that does several things and then crashes, for the
 * worked post-mortem (docs/postmortem.md, examples/postmortem/run.sh):
 *
 *	load_config()	 opens and reads files (its own config, /etc/hostname)
 *	checksum()	 burns some CPU
 *	call_service()	 connects to a port on 127.0.0.1 (its own listener) and
 *			 sends a request
 *	run_helper()	 spawns a child: /bin/sh -c 'echo ...'
 *	apply_update()	 writes through a null pointer: SIGSEGV
 *
 * Usage: crashy [DIR]	(its files go to DIR, default /tmp)
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static void load_config(const char *dir)
{
	char path[4096], buf[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/crashy.conf", dir);
	f = fopen(path, "w");
	if (f) {
		fputs("update=yes\nretries=3\n", f);
		fclose(f);
	}
	f = fopen(path, "r");
	while (f && fgets(buf, sizeof(buf), f))
		sink += strlen(buf);
	if (f)
		fclose(f);
	f = fopen("/etc/hostname", "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			sink += strlen(buf);
		fclose(f);
	}
}

/* About a second of CPU, so the flame graph has something to show. */
static __attribute__((noinline)) unsigned long checksum(unsigned long rounds)
{
	unsigned long h = 1469598103934665603ul, i;

	for (i = 0; i < rounds; i++)
		h = (h ^ i) * 1099511628211ul;
	return h;
}

static void burn(double seconds)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		sink += checksum(20000000);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

static void call_service(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int srv, c, s;
	char buf[64];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv = socket(AF_INET, SOCK_STREAM, 0);
	if (srv < 0 || bind(srv, (struct sockaddr *)&sa, sizeof(sa)) || listen(srv, 1) ||
	    getsockname(srv, (struct sockaddr *)&sa, &len))
		return;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c >= 0 && connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		s = accept(srv, NULL, NULL);
		if (write(c, "GET /update\n", 12) == 12 && s >= 0)
			sink += (unsigned long)read(s, buf, sizeof(buf));
		if (s >= 0)
			close(s);
	}
	if (c >= 0)
		close(c);
	close(srv);
}

static void run_helper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "echo helper ran >/dev/null", (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static __attribute__((noinline)) void apply_update(int *state)
{
	burn(0.3);
	*state = 1;	/* state is NULL: SIGSEGV */
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	int *volatile state = NULL;

	load_config(dir);
	burn(1.0);
	call_service();
	run_helper();
	fprintf(stderr, "crashy: applying the update\n");
	apply_update(state);
	return 0;
}
