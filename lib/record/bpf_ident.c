// SPDX-License-Identifier: MIT
/*
 * The kernel's side of process identity (proc_identity.h): bpf/ident.bpf.c
 * loaded and attached to fork and exec, and its maps of pids and of tids
 * looked up when a process or thread record is written, after it may be
 * gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_print.h"
#include "ident.skel.h"
#include "proc_identity.h"
#include "procfs.h"
#include "sp.h"

struct sp_ident_bpf {
	struct sp_ident *skel;
	int map_fd;
	int threads_fd;
};

struct sp_ident_bpf *sp_ident_bpf_open(void)
{
	bool was;
	struct sp_ident_bpf *b;
	int err = 0;

	/* Its maps are keyed by the host's pids, perf's records by ours: in
	 * a pid namespace of its own (sp-record in a container) one pid
	 * would name another process. */
	if (!sp_procfs_host_pidns()) {
		sp_info("process identity: not in the host's pid namespace; read from /proc only");
		return NULL;
	}
	was = sp_bpf_print_quiet(true);
	b = sp_xcalloc(1, sizeof(*b));

	b->skel = sp_ident__open_and_load();
	if (!b->skel || sp_ident__attach(b->skel))
		err = errno ? errno : EINVAL;
	sp_bpf_print_quiet(was);
	if (err) {
		/* Without privileges this is expected: -v says it. */
		if (err == EPERM && geteuid() != 0)
			sp_info("process identity: no BPF without privileges; read from /proc only");
		else
			sp_warn("process identity: cannot load its BPF program: %s; read from "
				"/proc only: processes gone before their record have none",
				strerror(err));
		sp_ident_bpf_free(b);
		return NULL;
	}
	b->map_fd = bpf_map__fd(b->skel->maps.idents);
	b->threads_fd = bpf_map__fd(b->skel->maps.threads);
	return b;
}

int sp_ident_bpf_lookup(struct sp_ident_bpf *b, uint32_t pid, struct sp_bpf_ident *out)
{
	if (!b)
		return -1;
	return bpf_map_lookup_elem(b->map_fd, &pid, out) ? -1 : 0;
}

int sp_ident_bpf_thread(struct sp_ident_bpf *b, uint32_t tid, struct sp_bpf_thread *out)
{
	if (!b)
		return -1;
	return bpf_map_lookup_elem(b->threads_fd, &tid, out) ? -1 : 0;
}

void sp_ident_bpf_free(struct sp_ident_bpf *b)
{
	if (!b)
		return;
	sp_ident__destroy(b->skel);
	free(b);
}
