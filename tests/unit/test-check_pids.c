// SPDX-License-Identifier: MIT
/*
 * Unit tests of what --check says of -p pids (lib/record/check_pids.c): a
 * process gets a line with its comm and executable, escaped; a pid with no
 * process and a thread that is not its process's first are errors.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "check_pids.h"
#include "tap.h"

static int said(const uint32_t *pids, size_t n, char *buf, size_t size)
{
	FILE *f;
	int rc;

	buf[0] = 0;
	f = fmemopen(buf, size, "w");
	if (!f)
		return -2;
	rc = sp_check_pids(pids, n, f);
	fclose(f);
	return rc;
}

static void test_check_pids_self(void)
{
	char buf[4096], want[64];
	uint32_t pid = (uint32_t)getpid();

	prctl(PR_SET_NAME, (unsigned long)"chk\x1b[31m", 0, 0, 0);
	CHECK(said(&pid, 1, buf, sizeof(buf)) == 0);
	snprintf(want, sizeof(want), "-p %u (chk\\x1b[31m, /", pid);
	CHECK(strstr(buf, want) == buf);
	CHECK(strstr(buf, "test-check_pids): can be attached to"));
	CHECK(!strchr(buf, '\x1b'));
}

static void *idle(void *arg)
{
	uint32_t *tid = arg;

	*tid = (uint32_t)gettid();
	pause();
	return NULL;
}

static void test_check_pids_refused(void)
{
	uint32_t pids[2] = { 0x3fffffff, 0 }, me = (uint32_t)getpid();
	char buf[4096];
	pthread_t t;

	CHECK(said(pids, 1, buf, sizeof(buf)) == -1);
	CHECK(!strcmp(buf, ""));
	CHECK(pthread_create(&t, NULL, idle, &pids[1]) == 0);
	while (!__atomic_load_n(&pids[1], __ATOMIC_ACQUIRE))
		usleep(1000);
	CHECK(said(&pids[1], 1, buf, sizeof(buf)) == -1);
	/* one bad among good ones: the good ones are said */
	pids[0] = me;
	CHECK(said(pids, 2, buf, sizeof(buf)) == -1);
	CHECK(strstr(buf, "can be attached to") && strchr(buf, '\n') == strrchr(buf, '\n'));
	pthread_cancel(t);
	pthread_join(t, NULL);
}

int main(void)
{
	TAP_RUN(test_check_pids_self);
	TAP_RUN(test_check_pids_refused);
	return TAP_DONE();
}
