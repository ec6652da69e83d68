// SPDX-License-Identifier: MIT
/*
 * The names of the kernel frames of an imported perf.data (perfdataP.h).
 * perf.data holds no symbol table for the kernel: perf names kernel frames
 * from the machine it reads the file on. The spool names them from ksym
 * records (docs/spool.md), so when the file was recorded on the kernel
 * running here, its /proc/kallsyms (kallsyms.h) gives them, one ksym
 * record per kernel function, written before the first sample whose stack
 * holds one of its frames, as sp-record does. Whether the file's kernel is
 * this one: the build-id of [kernel.kallsyms] in its build-id table against
 * /sys/kernel/notes; without one, its osrelease against uname -r. Decided
 * at the first kernel frame; when the answer is no, said once, and the
 * frames left unnamed are counted (--stats).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/utsname.h>

#include "escape.h"
#include "perfdataP.h"
#include "sp.h"

/* Why the file's kernel frames cannot be named here, into why; 0 if they can. */
static int kernel_differs(struct pd *p, char *why, size_t n)
{
	uint8_t id[SP_BUILD_ID_MAX];
	char a[2 * SP_BUILD_ID_MAX + 1], b[2 * SP_BUILD_ID_MAX + 1], rel[96];
	struct utsname u;
	unsigned int len;

	if (p->kbid_len) {
		len = sp_buildid_kernel(id, sizeof(id));
		if (!len) {
			snprintf(why, n, "the running kernel's build-id cannot be read "
				 "(/sys/kernel/notes)");
			return 1;
		}
		if (len != p->kbid_len || memcmp(id, p->kbid, len)) {
			snprintf(why, n, "recorded on another kernel (build-id %s, this one's %s)",
				 sp_buildid_hex(p->kbid, p->kbid_len, a), sp_buildid_hex(id, len, b));
			return 1;
		}
		return 0;
	}
	if (!p->osrelease.len) {
		snprintf(why, n, "the file names no kernel build-id nor release");
		return 1;
	}
	if (uname(&u) || strlen(u.release) != p->osrelease.len ||
	    memcmp(u.release, p->osrelease.p, p->osrelease.len)) {
		sp_esc_text(rel, sizeof(rel), p->osrelease.p, p->osrelease.len, 0);
		snprintf(why, n, "recorded on another kernel (no build-id; release '%s', "
			 "this one '%s')", rel, u.release);
		return 1;
	}
	return 0;
}

/* The first kernel frame: load this kernel's symbols, or say why not. */
static void decide(struct pd *p)
{
	char why[sizeof(p->st->kernel_unnamed_why)];

	p->ksyms_state = -1;
	if (kernel_differs(p, why, sizeof(why))) {
		/* (the kernel's symbols of another machine are not ours to give) */
	} else if (sp_kallsyms_load(&p->ksyms, NULL)) {
		snprintf(why, sizeof(why), "/proc/kallsyms: %s", strerror(errno));
	} else if (p->ksyms.zero || !p->ksyms.n) {
		snprintf(why, sizeof(why), "/proc/kallsyms shows no addresses "
			 "(kernel.kptr_restrict, or not root)");
	} else {
		p->ksyms_state = 1;
		return;
	}
	sp_warn("%s: kernel frames stay unnamed: %s", p->name, why);
	snprintf(p->st->kernel_unnamed_why, sizeof(p->st->kernel_unnamed_why), "%s", why);
}

void pd_ksym(struct pd *p, uint64_t addr)
{
	struct sp_record r = { .kind = SP_REC_KSYM };
	const struct sp_kallsym *k;
	uint64_t size;

	if (!p->ksyms_state)
		decide(p);
	k = p->ksyms_state > 0 ? sp_kallsyms_find(&p->ksyms, addr, &size) : NULL;
	if (!k) {
		p->st->kernel_unnamed++;
		return;
	}
	if (sp_u64map_get(&p->ksym_written, k->addr))
		return;
	sp_u64map_put(&p->ksym_written, k->addr, 1);
	r.ksym.addr = k->addr;
	r.ksym.size = size;
	r.ksym.name = sp_writer_strz(p->w, sp_kallsyms_str(&p->ksyms, k->name));
	r.ksym.kmod = k->kmod ? sp_writer_strz(p->w, sp_kallsyms_str(&p->ksyms, k->kmod)) : 0;
	if (sp_writer_put(p->w, &r) == 0)
		p->st->ksyms++;
}

void pd_ksyms_free(struct pd *p)
{
	sp_kallsyms_release(&p->ksyms);
	sp_u64map_release(&p->ksym_written);
}
