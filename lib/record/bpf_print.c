// SPDX-License-Identifier: MIT
/* bpf_print.c - libbpf's messages, one callback for the process (bpf_print.h). */
#include <pthread.h>

#include "bpf_print.h"
#include "sp.h"

static __thread bool quiet;
static pthread_once_t once = PTHREAD_ONCE_INIT;

int sp_bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (quiet || sp_verbose < 1 || (level != LIBBPF_WARN && sp_verbose < 2))
		return 0;
	sp_vmessage(fmt, ap);
	return 0;
}

static void install(void)
{
	libbpf_set_print(sp_bpf_print);
}

void sp_bpf_print_init(void)
{
	pthread_once(&once, install);
}

bool sp_bpf_print_quiet(bool on)
{
	bool was = quiet;

	sp_bpf_print_init();	/* libbpf's own callback would not ask */
	quiet = on;
	return was;
}
