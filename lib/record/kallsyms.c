// SPDX-License-Identifier: MIT
/* The kernel's code symbols from /proc/kallsyms. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kallsyms.h"
#include "procfs.h"

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
	char *line = NULL, *name, *kmod, lastmod[128] = "", *iobuf;
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
	/* procfs says 1 KiB, and glibc sizes a buffer it allocates itself by
	 * that: give it 256 KiB of ours, 20 reads instead of 5000 */
	iobuf = malloc(1 << 18);
	if (iobuf)
		setvbuf(f, iobuf, _IOFBF, 1 << 18);
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
		if (!*kmod && !strcmp(name, "_stext"))
			k->text_lo = addr;
		else if (!*kmod && !strcmp(name, "_etext"))
			k->text_hi = addr;
		k->n++;
	}
	free(line);
	fclose(f);
	free(iobuf);
	k->zero = k->n && !nonzero;
	if (k->n)
		qsort(k->sym, k->n, sizeof(*k->sym), cmp_sym);
	return 0;
nomem:
	free(line);
	fclose(f);
	free(iobuf);
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

/* The cache: a header, the symbols, the names. */
#define CACHE_MAGIC "SPKSYMS1"

struct cache_head {
	char magic[8];
	char boot_id[40];
	uint64_t n, names_len, text_lo, text_hi;
};

static int read_all(int fd, void *p, size_t n)
{
	ssize_t r;

	while (n) {
		r = read(fd, p, n);
		if (r <= 0)
			return -1;
		p = (char *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

static int load_cache(struct sp_kallsyms *k, const char *path, const char *id)
{
	struct cache_head h;
	struct stat st;
	uint8_t *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    !S_ISREG(st.st_mode) || read_all(fd, &h, sizeof(h)) ||
	    memcmp(h.magic, CACHE_MAGIC, 8) || strncmp(h.boot_id, id, 40) ||
	    h.n > (1u << 24) || !h.names_len || h.names_len > (1u << 28) ||
	    (uint64_t)st.st_size != sizeof(h) + h.n * sizeof(*k->sym) + h.names_len)
		goto bad;
	/* Mapped, not read: a lookup touches a few pages of it. */
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		goto bad;
	k->map = p;
	k->map_len = (size_t)st.st_size;
	k->sym = (struct sp_kallsym *)(p + sizeof(h));
	k->names = (char *)(p + sizeof(h) + h.n * sizeof(*k->sym));
	k->n = h.n;
	k->names_len = h.names_len;
	if (k->names[h.names_len - 1])	/* every name ends inside */
		goto bad;
	k->text_lo = h.text_lo;
	k->text_hi = h.text_hi;
	k->from_cache = true;
	close(fd);
	return 0;
bad:
	close(fd);
	sp_kallsyms_release(k);
	errno = EINVAL;
	return -1;
}

static void save_cache(const struct sp_kallsyms *k, const char *dir, const char *path,
		       const char *id)
{
	struct cache_head h = { .magic = CACHE_MAGIC };
	char tmp[4200];
	FILE *f;
	int fd, ok;

	mkdir(dir, 0700);
	memcpy(h.boot_id, id, 40);
	h.n = k->n;
	h.names_len = k->names_len;
	h.text_lo = k->text_lo;
	h.text_hi = k->text_hi;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	ok = fwrite(&h, sizeof(h), 1, f) == 1 &&
	     fwrite(k->sym, sizeof(*k->sym), k->n, f) == k->n &&
	     fwrite(k->names, 1, k->names_len, f) == k->names_len;
	ok &= fclose(f) == 0;
	if (!ok || rename(tmp, path))
		unlink(tmp);
}

int sp_kallsyms_open_cache(struct sp_kallsyms *k, const char *dir)
{
	char id[40], path[4096];

	memset(k, 0, sizeof(*k));
	if (!dir || sp_procfs_boot_id(id) || strlen(dir) > 4000) {
		errno = ENOENT;
		return -1;
	}
	snprintf(path, sizeof(path), "%s/kallsyms-%s", dir, id);
	return load_cache(k, path, id);
}

int sp_kallsyms_load_cached(struct sp_kallsyms *k, const char *dir)
{
	char id[40], path[4096];

	memset(k, 0, sizeof(*k));
	if (!dir || sp_procfs_boot_id(id) || strlen(dir) > 4000)
		return sp_kallsyms_load(k, NULL);
	snprintf(path, sizeof(path), "%s/kallsyms-%s", dir, id);
	if (load_cache(k, path, id) == 0)
		return 0;
	if (sp_kallsyms_load(k, NULL))
		return -1;
	if (!k->zero && k->text_lo && k->text_hi > k->text_lo)
		save_cache(k, dir, path, id);
	return 0;
}
