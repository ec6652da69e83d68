// SPDX-License-Identifier: MIT
/*
 * --span-func BINARY:FUNCTION for the spans source (bpf_spansP.h): the
 * globs resolved into functions of the ELF files (their symbol tables),
 * and the uprobe and uretprobe pair each process image gets per function.
 */
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "bpf_spansP.h"
#include "elf/dynamic.h"
#include "elf/elffile.h"
#include "launch.h"
#include "sp.h"

/*
 * Where a --span-func uprobe goes in function st of e: past an endbr64
 * (the first instruction of every function in a CET build, -fcf-protection)
 * when a "push %reg" follows. The kernel emulates a push (and branches and
 * nops) but runs any other instruction by single-stepping it out of line,
 * and a single step on this VM costs about 13 µs (a debug trap the
 * hypervisor takes) against about 1.4 µs for the whole span. endbr64 does
 * nothing; the return address is still on top of the stack after it, as
 * the return probe needs.
 */
static unsigned int entry_skip(Elf *e, const GElf_Sym *st)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	Elf_Scn *scn = elf_getscn(e, st->st_shndx);
	const unsigned char *b;
	Elf_Data *d;
	GElf_Shdr sh;
	uint64_t at;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
	    st->st_value < sh.sh_addr || sh.sh_size < 6 || st->st_value - sh.sh_addr > sh.sh_size - 6)
		return 0;
	at = st->st_value - sh.sh_addr;
	/* the 6 bytes only, not the section */
	d = elf_getdata_rawchunk(e, (int64_t)(sh.sh_offset + at), 6, ELF_T_BYTE);
	if (!d || !d->d_buf || d->d_size < 6)
		return 0;
	b = (const unsigned char *)d->d_buf;
	if (memcmp(b, endbr64, 4))
		return 0;
	if ((b[4] >= 0x50 && b[4] <= 0x57) || (b[4] == 0x41 && b[5] >= 0x50 && b[5] <= 0x57))
		return 4;
	return 0;
}

/* Resolve the --span-func options into functions: 0, or -1 (reported). */
int sp_bs_resolve_funcs(struct bs_ctx *c)
{
	char bin[PATH_MAX], pat[512], full[PATH_MAX * 2 + 64];
	unsigned int k;

	for (k = 0; k < c->o->nfuncs; k++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		size_t matched = 0;
		char attach[32];
		int fd, keep;
		Elf *e;

		if (sp_spans_split_func(c->o->funcs[k], bin, sizeof(bin), pat, sizeof(pat)))
			return sp_error("invalid --span-func '%s'", c->o->funcs[k]);
		if (!strchr(bin, '/')) {
			/* a command on PATH, else a library name libbpf resolves */
			bool ok = sp_launch_find(bin, full, sizeof(full));

			if (!ok) {
				static const char *const dirs[] = {
					"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					"/usr/local/lib", "/lib", "/usr/lib" };

				for (size_t d = 0; d < 5 && !ok; d++) {
					snprintf(full, sizeof(full), "%s/%s", dirs[d], bin);
					ok = sp_bs_is_file(full);
				}
			}
			if (!ok)
				return sp_error("--span-func '%s': binary '%s' not found",
						c->o->funcs[k], bin);
		} else if (!realpath(bin, full)) {
			return sp_error_errno("--span-func '%s': cannot open '%s'", c->o->funcs[k],
					      bin);
		}
		e = sp_elf_open(full, SP_ELF_READ, 0, &fd, NULL);
		if (!e)
			return sp_error_errno("--span-func '%s': cannot read ELF file '%s'",
					      c->o->funcs[k], full);
		keep = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (keep < 0) {
			sp_elf_close(e, fd);
			return sp_error_errno("--span-func '%s': '%s'", c->o->funcs[k], full);
		}
		sp_grow(&c->func_fds, &c->cfunc_fds, c->nfunc_fds + 1, sizeof(*c->func_fds));
		c->func_fds[c->nfunc_fds++] = keep;
		snprintf(attach, sizeof(attach), "/proc/self/fd/%d", keep);
		/* .symtab if present, else .dynsym */
		for (int pass = 0; pass < 2 && !matched; pass++) {
			scn = NULL;
			while ((scn = elf_nextscn(e, scn))) {
				Elf_Data *d;
				GElf_Sym st;
				size_t j;

				if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
				    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) ||
				    !sp_elf_strtab_ok(e, sh.sh_link, SP_ELF_STRTAB_MAX))
					continue;
				d = sp_elf_data_max(scn, &sh, SP_ELF_SYMTAB_MAX);
				for (j = 0; d && j < sh.sh_size / sh.sh_entsize; j++) {
					const char *name;
					size_t q;
					bool dup = false;
					int64_t off;

					if (!gelf_getsym(d, j, &st) || st.st_shndx == SHN_UNDEF ||
					    GELF_ST_TYPE(st.st_info) != STT_FUNC || !st.st_value ||
					    (off = sp_elf_va_to_offset(e, st.st_value, true)) < 0)
						continue;
					name = elf_strptr(e, sh.sh_link, st.st_name);
					if (!name || fnmatch(pat, name, 0))
						continue;
					for (q = 0; q < c->nfuncs; q++)
						if (!strcmp(c->funcs[q].name, name) &&
						    !strcmp(c->funcs[q].bin, full))
							dup = true;
					if (dup)
						continue;
					if (++matched > SP_SPANS_MAX_MATCHES) {
						sp_elf_close(e, fd);
						return sp_error("--span-func '%s': more than %d "
								"functions match", c->o->funcs[k],
								SP_SPANS_MAX_MATCHES);
					}
					sp_grow(&c->funcs, &c->cfuncs, c->nfuncs + 1,
						sizeof(*c->funcs));
					c->funcs[c->nfuncs].bin = sp_xstrdup(full);
					c->funcs[c->nfuncs].name = sp_xstrdup(name);
					c->funcs[c->nfuncs].attach = sp_xstrdup(attach);
					c->funcs[c->nfuncs].off = (uint64_t)off + entry_skip(e, &st);
					c->nfuncs++;
				}
				break;	/* the first table of its kind: libelf keeps each */
			}
		}
		sp_elf_close(e, fd);
		if (!matched)
			return sp_error("--span-func '%s': no function '%s' in '%s'",
					c->o->funcs[k], pat, full);
	}
	return 0;
}

void sp_bs_attach_funcs(struct bs_ctx *c, struct bs_proc *p)
{
	size_t i;

	for (i = 0; i < c->nfuncs; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = (uint64_t)p->gen << 32 | i);
		struct bpf_link *l;

		pthread_mutex_lock(&c->bpf_lock);
		l = bpf_program__attach_uprobe_opts(c->skel->progs.on_func_entry, p->pid,
						    c->funcs[i].attach, c->funcs[i].off, &uo);
		pthread_mutex_unlock(&c->bpf_lock);
		if (!l)
			continue;
		sp_bs_att_add(p, SP_PR_UPROBE_ENTRY, i, c->funcs[i].bin, c->skel->progs.on_func_entry, l);
		uo.retprobe = true;
		pthread_mutex_lock(&c->bpf_lock);
		l = bpf_program__attach_uprobe_opts(c->skel->progs.on_func_return, p->pid,
						    c->funcs[i].attach, c->funcs[i].off, &uo);
		pthread_mutex_unlock(&c->bpf_lock);
		if (l)
			sp_bs_att_add(p, SP_PR_UPROBE_RETURN, i, c->funcs[i].bin,
				      c->skel->progs.on_func_return, l);
	}
}
