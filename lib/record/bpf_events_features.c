// SPDX-License-Identifier: MIT
/*
 * What the kernel offers the "events" source above and below its attach
 * strategies (bpf_eventsP.h): whether a do-nothing fentry and BPF LSM
 * program load, whether the tracepoints it wants have BTF, and whether
 * tracing programs may load at all. Parsing the kernel's BTF costs tens of
 * milliseconds, so the verdicts are cached per boot and user in the cache
 * directory (sp_cache_dir(), as kallsyms), read back only if the file is
 * ours and private (safefile.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_eventsP.h"
#include "procfs.h"
#include "safefile.h"
#include "sp.h"

#define KFEAT_MAGIC "SPBPFF01"

/* Can a do-nothing program of this type load (and so attach) here? */
static int probe_prog(enum bpf_prog_type type, enum bpf_attach_type at, int btf_id)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = at);
	int fd;

	if (btf_id < 0)
		return -ENOENT;
	opts.attach_btf_id = btf_id;
	fd = bpf_prog_load(type, NULL, "GPL", insns, 2, &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

#define KFEAT_FILE "bpf-features"

/* bpf-features in the cache directory (sp_cache_dir(), as kallsyms), read
 * only if it is ours and private (safefile.h). */
static bool kfeat_load(struct kfeat *f, const char *dir, const char *id)
{
	struct sp_safe_want w = {
		SP_SAFE_NOFOLLOW | SP_SAFE_OWNER | SP_SAFE_PRIVATE, geteuid(), sizeof(*f)
	};
	const char *why;
	struct kfeat c;
	int dfd, fd;
	bool ok;

	dfd = sp_cache_dir_open(dir, false);
	if (dfd < 0)
		return false;
	fd = sp_safe_open(dfd, KFEAT_FILE, &w, NULL, &why);
	close(dfd);
	if (fd < 0) {
		if (why)
			sp_warn("cache '%s/%s': %s: not used", dir, KFEAT_FILE, why);
		return false;
	}
	ok = read(fd, &c, sizeof(c)) == (ssize_t)sizeof(c) &&
	     !memcmp(c.magic, KFEAT_MAGIC, 8) && !strncmp(c.boot_id, id, 40) &&
	     c.euid == geteuid() && c.fentry_err <= 0 && c.lsm_err <= 0;
	close(fd);
	if (ok)
		*f = c;
	return ok;
}

static void kfeat_save(const struct kfeat *f, const char *dir)
{
	int dfd = sp_cache_dir_open(dir, true);

	if (dfd < 0)
		return;
	sp_safe_write_file(dfd, KFEAT_FILE, f, sizeof(*f), 0600);
	close(dfd);
}

/* The verdicts, from the per-boot cache or from one parse of the kernel BTF
 * (each parse costs tens of milliseconds: never more than one). */
void sp_ev_kfeat_get(struct kfeat *f)
{
	char id[40], *dir = sp_procfs_boot_id(id) ? NULL : sp_cache_dir(NULL);
	bool cache = dir != NULL;
	struct btf *btf;
	int fentry = -1, lsm = -1;

	if (cache && kfeat_load(f, dir, id)) {
		free(dir);
		return;
	}
	memset(f, 0, sizeof(*f));
	memcpy(f->magic, KFEAT_MAGIC, 8);
	if (cache)
		memcpy(f->boot_id, id, 40);
	f->euid = geteuid();
	btf = btf__load_vmlinux_btf();
	if (btf) {
		fentry = btf__find_by_name_kind(btf, "do_sys_openat2", BTF_KIND_FUNC);
		lsm = btf__find_by_name_kind(btf, "bpf_lsm_file_open", BTF_KIND_FUNC);
		f->tp_exec = btf__find_by_name_kind(btf, "btf_trace_sched_process_exec",
						    BTF_KIND_TYPEDEF) >= 0;
		f->tp_cap = btf__find_by_name_kind(btf, "btf_trace_cap_capable",
						   BTF_KIND_TYPEDEF) >= 0;
		btf__free(btf);
	}
	f->fentry_err = probe_prog(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, fentry);
	f->lsm_err = probe_prog(BPF_PROG_TYPE_LSM, BPF_LSM_MAC, lsm);
	if (cache && btf)
		kfeat_save(f, dir);
	free(dir);
}

/* May this process load tracing programs at all? A two-instruction
 * tracepoint program answers in microseconds, without any BTF. */
int sp_ev_probe_tracing_allowed(void)
{
	return probe_prog(BPF_PROG_TYPE_TRACEPOINT, 0, 0);
}
