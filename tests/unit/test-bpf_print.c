// SPDX-License-Identifier: MIT
/*
 * Unit tests of libbpf's one printer (lib/record/bpf_print.c): a thread
 * that hushes libbpf hushes itself only, while another thread's messages
 * go on being said, at once, as libbpf's loaders run on several threads.
 * libbpf itself speaks here: opening an object file that is not there
 * warns with the file's name.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "record/bpf_print.h"
#include "sp.h"
#include "stderr_capture.h"
#include "tap.h"

#define ROUNDS 200

static pthread_barrier_t both;

/* Make libbpf warn, naming what (in the missing file's name), n times. */
static void *opens(void *arg)
{
	const char *what = arg;
	bool hushed = !strcmp(what, "hushed"), was;
	char path[128];
	int i;

	was = sp_bpf_print_quiet(hushed);
	pthread_barrier_wait(&both);
	for (i = 0; i < ROUNDS; i++) {
		struct bpf_object *o;

		snprintf(path, sizeof(path), "/nonexistent/sp-%s-%d.bpf.o", what, i);
		o = bpf_object__open_file(path, NULL);
		if (o && !libbpf_get_error(o))
			bpf_object__close(o);
	}
	sp_bpf_print_quiet(was);
	return NULL;
}

/* What went to stderr while fn(both threads) ran, into out. */
static void run(char *out, size_t size)
{
	struct stderr_capture cap;
	pthread_t a, b;

	stderr_capture_begin(&cap);
	pthread_barrier_init(&both, NULL, 2);
	pthread_create(&a, NULL, opens, "hushed");
	pthread_create(&b, NULL, opens, "spoken");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_barrier_destroy(&both);
	stderr_capture_end(&cap, out, size);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

static char text[1 << 20];

static void test_bpf_print_threads(void)
{
	libbpf_print_fn_t mine;

	sp_bpf_print_init();
	sp_bpf_print_init();	/* once only, whoever asks */
	mine = libbpf_set_print(sp_bpf_print);
	CHECK(mine == sp_bpf_print);

	sp_verbose = 1;
	run(text, sizeof(text));
	CHECK_EQ_U(count(text, "sp-hushed-"), 0);
	CHECK_EQ_U(count(text, "sp-spoken-"), ROUNDS);
	/* hushing is given back: this thread was never hushed */
	CHECK(!sp_bpf_print_quiet(false));

	sp_verbose = 0;		/* without -v, nobody's */
	run(text, sizeof(text));
	CHECK_EQ_U(count(text, "sp-spoken-"), 0);
	sp_verbose = 2;
	run(text, sizeof(text));
	CHECK_EQ_U(count(text, "sp-hushed-"), 0);
	CHECK(count(text, "sp-spoken-") >= ROUNDS);
}

int main(void)
{
	TAP_RUN(test_bpf_print_threads);
	return TAP_DONE();
}
