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

#include "buf.h"
#include "kallsyms.h"
#include "procfs.h"
#include "safefile.h"
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
		k->n++;
	}
	free(line);
	fclose(f);
	free(iobuf);
	k->names = sp_buf_detach(&names, &k->names_len);
	k->zero = k->n && !nonzero;
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

static bool refused_said;

/* The cache file: only ours (or root's), private, regular, in a directory
 * that is ours (safefile.h). */
static int load_cache(struct sp_kallsyms *k, const char *dir, const char *name, const char *id)
{
	struct sp_safe_want w = {
		SP_SAFE_NOFOLLOW | SP_SAFE_OWNER | SP_SAFE_PRIVATE, geteuid(), 1ull << 32
	};
	struct cache_head h;
	const char *why;
	struct stat st;
	uint8_t *p;
	int dfd, fd;

	dfd = sp_cache_dir_open(dir, false);
	if (dfd < 0)
		return -1;
	fd = sp_safe_open(dfd, name, &w, &st, &why);
	close(dfd);
	if (fd < 0) {
		/* (sp-record tries the cache twice: say it once) */
		if (why && !__atomic_exchange_n(&refused_said, true, __ATOMIC_RELAXED))
			sp_warn("cache '%s/%s': %s: not used", dir, name, why);
		return -1;
	}
	if (read_all(fd, &h, sizeof(h)) ||
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

static void save_cache(const struct sp_kallsyms *k, const char *dir, const char *name,
		       const char *id)
{
	struct cache_head h = { .magic = CACHE_MAGIC };
	struct sp_safe_tmp t;
	int dfd;

	memcpy(h.boot_id, id, 40);
	h.n = k->n;
	h.names_len = k->names_len;
	h.text_lo = k->text_lo;
	h.text_hi = k->text_hi;
	dfd = sp_cache_dir_open(dir, true);
	if (dfd < 0)
		return;
	if (sp_safe_tmp_open(&t, dfd, 0600) == 0) {
		if (sp_safe_write_all(t.fd, &h, sizeof(h)) ||
		    sp_safe_write_all(t.fd, k->sym, k->n * sizeof(*k->sym)) ||
		    sp_safe_write_all(t.fd, k->names, k->names_len))
			sp_safe_tmp_abort(&t);
		else
			sp_safe_tmp_commit(&t, name);
	}
	close(dfd);
}

int sp_kallsyms_open_cache(struct sp_kallsyms *k, const char *dir)
{
	char id[40], name[64];

	memset(k, 0, sizeof(*k));
	if (!dir || sp_procfs_boot_id(id)) {
		errno = ENOENT;
		return -1;
	}
	snprintf(name, sizeof(name), "kallsyms-%s", id);
	return load_cache(k, dir, name, id);
}

int sp_kallsyms_load_cached(struct sp_kallsyms *k, const char *dir)
{
	char id[40], name[64];

	memset(k, 0, sizeof(*k));
	if (!dir || sp_procfs_boot_id(id))
		return sp_kallsyms_load(k, NULL);
	snprintf(name, sizeof(name), "kallsyms-%s", id);
	if (load_cache(k, dir, name, id) == 0)
		return 0;
	if (sp_kallsyms_load(k, NULL))
		return -1;
	if (!k->zero && k->text_lo && k->text_hi > k->text_lo)
		save_cache(k, dir, name, id);
	return 0;
}
