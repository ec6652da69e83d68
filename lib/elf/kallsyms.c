// SPDX-License-Identifier: MIT
/*
 * The kernel's code symbols from /proc/kallsyms (or a file in its format).
 * Here, not with the recorder, because sp-decode also reads it (to name the
 * kernel frames of a perf.data recorded on this kernel) and must build
 * without BPF; the per-boot cache sp-record keeps is lib/record/kallsyms_cache.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "buf.h"
#include "kallsyms.h"
#include "sp.h"

int sp_kallsyms_parse_line(char *line, uint64_t *addr, char **name, char **kmod)
{
	char *s = line, *end;
	char type;

	*addr = strtoull(s, &end, 16);
	if (end == s || *end != ' ')
		return -1;
	s = end + 1;
	type = *s;
	if (!type || s[1] != ' ')
		return -1;
	s += 2;
	*name = s;
	s += strcspn(s, "\t\n ");
	*kmod = s;
	if (*s == '\t' || *s == ' ') {
		*s++ = 0;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '[') {
			s++;
			*kmod = s;
			s += strcspn(s, "]\n");
		} else {
			*kmod = s;
		}
	}
	*s = 0;
	if (!**name)
		return -1;
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sp_kallsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Append s and its NUL to the names; its offset. */
static uint32_t add_name(struct sp_buf *names, const char *s)
{
	uint32_t off = (uint32_t)names->len;

	sp_buf_add(names, s, strlen(s) + 1);
	return off;
}

int sp_kallsyms_load(struct sp_kallsyms *k, const char *path)
{
	char *line = NULL, *name, *kmod, lastmod[128] = "", *iobuf;
	struct sp_buf names = SP_BUF_INIT;
	uint32_t lastmod_off = 0;
	size_t cap = 0, nonzero = 0;
	struct sp_kallsym *v;
	uint64_t addr;
	FILE *f;
	int r;

	memset(k, 0, sizeof(*k));
	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f)
		return -1;
	/* procfs says 1 KiB, and glibc sizes a buffer it allocates itself by
	 * that: give it 256 KiB of ours, 20 reads instead of 5000 */
	iobuf = malloc(1 << 18);
	if (iobuf)
		setvbuf(f, iobuf, _IOFBF, 1 << 18);
	add_name(&names, "");		/* offset 0: vmlinux */
	while (getline(&line, &cap, f) > 0) {
		r = sp_kallsyms_parse_line(line, &addr, &name, &kmod);
		if (r <= 0)
			continue;
		if (k->n == k->cap) {
			k->cap = k->cap ? 2 * k->cap : 65536;
			v = realloc(k->sym, k->cap * sizeof(*v));
			if (!v)
				goto nomem;
			k->sym = v;
		}
		k->sym[k->n].name = add_name(&names, name);
		if (!*kmod) {
			k->sym[k->n].kmod = 0;
		} else {
			if (strcmp(kmod, lastmod)) {
				snprintf(lastmod, sizeof(lastmod), "%s", kmod);
				lastmod_off = add_name(&names, kmod);
			}
			k->sym[k->n].kmod = lastmod_off;
		}
		k->sym[k->n].addr = addr;
		nonzero += addr != 0;
		if (!*kmod && !strcmp(name, "_stext"))
			k->text_lo = addr;
		else if (!*kmod && !strcmp(name, "_etext"))
			k->text_hi = addr;
		else if (!*kmod && !strcmp(name, "_sinittext"))
			k->init_lo = addr;
		else if (!*kmod && !strcmp(name, "_einittext"))
			k->init_hi = addr;
		k->n++;
	}
	free(line);
	fclose(f);
	free(iobuf);
	k->names = sp_buf_detach(&names, &k->names_len);
	k->zero = k->n && !nonzero;
	/* a range with one end missing is no range (not [0, end)) */
	if (!k->text_lo || k->text_hi <= k->text_lo)
		k->text_lo = k->text_hi = 0;
	if (!k->init_lo || k->init_hi <= k->init_lo)
		k->init_lo = k->init_hi = 0;
	if (k->n)
		qsort(k->sym, k->n, sizeof(*k->sym), cmp_sym);
	return 0;
nomem:
	free(line);
	fclose(f);
	free(iobuf);
	sp_buf_release(&names);
	sp_kallsyms_release(k);
	errno = ENOMEM;
	return -1;
}

void sp_kallsyms_release(struct sp_kallsyms *k)
{
	if (k->map) {
		munmap(k->map, k->map_len);
	} else {
		free(k->sym);
		free(k->names);
	}
	memset(k, 0, sizeof(*k));
}

const struct sp_kallsym *sp_kallsyms_find(const struct sp_kallsyms *k, uint64_t addr,
					  uint64_t *size)
{
	size_t lo = 0, hi = k->n, mid;

	if (!k->n || k->zero || addr < k->sym[0].addr)
		return NULL;
	/* The last symbol with sym.addr <= addr. */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (k->sym[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (size) {
		hi = lo + 1;
		while (hi < k->n && k->sym[hi].addr == k->sym[lo].addr)
			hi++;
		*size = hi < k->n ? k->sym[hi].addr - k->sym[lo].addr : 0;
	}
	return &k->sym[lo];
}
