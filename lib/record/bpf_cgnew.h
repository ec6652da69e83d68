/* SPDX-License-Identifier: MIT */
/*
 * bpf_cgnew.h - the cgroup v2 directories made while recording, told by
 * the kernel as each is made (bpf/cgnew.bpf.c), for -a --cgroup/--container
 * to follow a container started later from its cgroup's making on rather
 * than by looking again every so often (cgroup_filter.c).
 */
#ifndef STACKPULSE_BPF_CGNEW_H
#define STACKPULSE_BPF_CGNEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_cgwatch;

/* Load and attach; NULL when it cannot be (said with -v: the caller looks
 * again every 200 ms instead). */
struct sp_cgwatch *sp_cgwatch_open(void);

/* A descriptor that is readable while ids wait (for epoll). */
int sp_cgwatch_fd(const struct sp_cgwatch *w);

/* What the kernel told: a cgroup made (pid 0), or process pid moved into
 * cgroup id. */
struct sp_cgwatch_ev {
	uint64_t id;
	uint32_t pid, ppid;
	bool gone;		/* the cgroup was removed (pid 0) */
	char comm[16];		/* NUL-terminated */
};

/* What was told since the last call, in order, into *evs (w's, valid
 * until the next call). Returns how many. */
size_t sp_cgwatch_read(struct sp_cgwatch *w, const struct sp_cgwatch_ev **evs);

void sp_cgwatch_free(struct sp_cgwatch *w);

#endif
