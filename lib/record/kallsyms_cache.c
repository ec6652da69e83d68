// SPDX-License-Identifier: MIT
/* The per-boot cache of the parsed /proc/kallsyms (kallsyms.h), sp-record's. */
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
#include "safefile.h"
#include "sp.h"

/* The cache: a header, the symbols, the names. */
#define CACHE_MAGIC "SPKSYMS2"	/* 2: init text */

struct cache_head {
	char magic[8];
	char boot_id[40];
	uint64_t n, names_len, text_lo, text_hi, init_lo, init_hi;
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
	k->init_lo = h.init_lo;
	k->init_hi = h.init_hi;
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
	h.init_lo = k->init_lo;
	h.init_hi = k->init_hi;
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
