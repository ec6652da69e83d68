// SPDX-License-Identifier: MIT
/*
 * The kernel's word on each cgroup v2 directory made while recording, and
 * each process moved into one (bpf_cgnew.h): bpf/cgnew.bpf.c on the
 * cgroup_mkdir and cgroup_attach_task tracepoints, its ring read.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_print.h"
#include "bpf_cgnew.h"
#include "cgnew.h"
#include "cgnew.skel.h"
#include "sp.h"

struct sp_cgwatch {
	struct sp_cgnew *skel;
	struct ring_buffer *rb;
	/* the batch read: ring_buffer__consume() calls back per record and
	 * consumes each, so every one is kept */
	struct sp_cgwatch_ev *evs;
	size_t n, cap;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct sp_cgwatch *w = ctx;
	const struct sp_bpf_cgnew *e = data;

	if (size < sizeof(*e))
		return 0;
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->evs = sp_xrealloc(w->evs, w->cap * sizeof(*w->evs));
	}
	w->evs[w->n].id = e->id;
	w->evs[w->n].pid = e->pid;
	w->evs[w->n].ppid = e->ppid;
	w->evs[w->n].gone = e->gone != 0;
	memcpy(w->evs[w->n].comm, e->comm, sizeof(e->comm));
	w->evs[w->n++].comm[15] = 0;
	return 0;
}

struct sp_cgwatch *sp_cgwatch_open(void)
{
	bool was = sp_bpf_print_quiet(true);
	struct sp_cgwatch *w = sp_xcalloc(1, sizeof(*w));
	int err = 0;

	w->skel = sp_cgnew__open_and_load();
	if (!w->skel || sp_cgnew__attach(w->skel))
		err = errno ? errno : EINVAL;
	if (!err) {
		w->rb = ring_buffer__new(bpf_map__fd(w->skel->maps.cgnew), on_record, w, NULL);
		if (!w->rb)
			err = errno ? errno : EINVAL;
	}
	sp_bpf_print_quiet(was);
	if (err) {
		sp_info("cgroups made while recording: cannot load the BPF program that tells "
			"them: %s; looked for every 200 ms instead", strerror(err));
		sp_cgwatch_free(w);
		return NULL;
	}
	return w;
}

int sp_cgwatch_fd(const struct sp_cgwatch *w)
{
	return ring_buffer__epoll_fd(w->rb);
}

size_t sp_cgwatch_read(struct sp_cgwatch *w, const struct sp_cgwatch_ev **evs)
{
	w->n = 0;
	ring_buffer__consume(w->rb);
	*evs = w->evs;
	return w->n;
}

void sp_cgwatch_free(struct sp_cgwatch *w)
{
	if (!w)
		return;
	ring_buffer__free(w->rb);
	free(w->evs);
	sp_cgnew__destroy(w->skel);
	free(w);
}
