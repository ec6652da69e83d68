// SPDX-License-Identifier: MIT
/* The kernel's code symbols from /proc/kallsyms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kallsyms.h"

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

static int add_name(struct sp_kallsyms *k, const char *s, uint32_t *off)
{
	size_t len = strlen(s) + 1;
	char *p;

	if (k->names_len + len > k->names_cap) {
		size_t cap = k->names_cap ? 2 * k->names_cap : 1 << 20;

		while (cap < k->names_len + len)
			cap *= 2;
		p = realloc(k->names, cap);
		if (!p)
			return -1;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + k->names_len, s, len);
	*off = (uint32_t)k->names_len;
	k->names_len += len;
	return 0;
}

int sp_kallsyms_load(struct sp_kallsyms *k, const char *path)
{
	char *line = NULL, *name, *kmod, lastmod[128] = "";
	uint32_t lastmod_off = 0, off;
	size_t cap = 0, nonzero = 0;
	struct sp_kallsym *v;
	uint64_t addr;
	FILE *f;
	int r;

	memset(k, 0, sizeof(*k));
	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f)
		return -1;
	setvbuf(f, NULL, _IOFBF, 1 << 16);	/* procfs says 1 KiB: too many reads */
	if (add_name(k, "", &off))	/* offset 0: vmlinux */
		goto nomem;
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
		if (add_name(k, name, &k->sym[k->n].name))
			goto nomem;
		if (!*kmod) {
			k->sym[k->n].kmod = 0;
		} else {
			if (strcmp(kmod, lastmod)) {
				snprintf(lastmod, sizeof(lastmod), "%s", kmod);
				if (add_name(k, kmod, &lastmod_off))
					goto nomem;
			}
			k->sym[k->n].kmod = lastmod_off;
		}
		k->sym[k->n].addr = addr;
		nonzero += addr != 0;
		k->n++;
	}
	free(line);
	fclose(f);
	k->zero = k->n && !nonzero;
	if (k->n)
		qsort(k->sym, k->n, sizeof(*k->sym), cmp_sym);
	return 0;
nomem:
	free(line);
	fclose(f);
	sp_kallsyms_release(k);
	errno = ENOMEM;
	return -1;
}

void sp_kallsyms_release(struct sp_kallsyms *k)
{
	free(k->sym);
	free(k->names);
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
