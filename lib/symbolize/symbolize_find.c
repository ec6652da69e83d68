// SPDX-License-Identifier: MIT
/*
 * Finding the file behind an image (symbolize_priv.h): in the archive, by
 * its base name in the image directories, at its recorded path under the
 * sysroot, or this process's own vDSO; every candidate opened as a regular
 * ELF file only and checked against the recorded build-id (else its size
 * and mtime) before it is used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "buf.h"
#include "elf/archive.h"
#include "elf/elffile.h"
#include "procroot.h"
#include "sp.h"
#include "symbolize_priv.h"

void sp_image_file_close(struct image_file *f)
{
	sp_elf_close(f->elf, f->fd);
	free(f->path);
	f->elf = NULL;
	f->fd = -1;
	f->path = NULL;
}

int sp_image_file_open(struct image_file *f, const char *path, const char **why)
{
	/* The path comes from the input: a FIFO there must not hang us, and a
	 * device is not even opened (opening one may do something). Read, not
	 * mapped: a file truncated while we read it gives short reads
	 * (errors), where a mapping would give SIGBUS. */
	f->path = NULL;
	f->elf = sp_elf_open(path, SP_ELF_READ, MAX_FILE_SIZE, &f->fd, why);
	if (!f->elf) {
		if (*why && !strcmp(*why, "too large"))
			*why = "file too large";
		else if (!*why && errno != ENOENT && errno != ENOTDIR)
			*why = "cannot open";
		return -1;
	}
	f->path = sp_xstrdup(path);
	return 0;
}

void sp_image_warn(struct image *img, const char *file, const char *what)
{
	sp_warn("'%s': %s; its frames stay unresolved", file ? file : img->path, what);
}

int sp_image_file_try(struct image *img, const char *path, bool check_stat,
		      struct image_file *f, const char **why)
{
	uint8_t id[SP_BUILD_ID_MAX];
	unsigned int n;
	struct stat st;

	if (sp_image_file_open(f, path, why) < 0)
		return *why ? -1 : 0;
	if (img->build_id_len) {
		n = sp_elf_build_id(f->elf, id);
		if (n != img->build_id_len || memcmp(id, img->build_id, n)) {
			*why = "build-id mismatch";
			sp_image_file_close(f);
			return -1;
		}
	} else if (check_stat && img->size && fstat(f->fd, &st) == 0 &&
		   ((uint64_t)st.st_size != img->size ||
		    (img->mtime_ns && (uint64_t)st.st_mtim.tv_sec * 1000000000u +
		     (uint64_t)st.st_mtim.tv_nsec != img->mtime_ns))) {
		*why = "file changed since the recording (size or mtime differ)";
		sp_image_file_close(f);
		return -1;
	}
	return 1;
}

/* The vDSO of this process, when it is the recorded one. */
static int open_own_vdso(struct sp_symbolizer *s, struct image *img, struct image_file *f,
			 const char **why)
{
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	uint8_t id[SP_BUILD_ID_MAX];
	size_t size;
	unsigned int n;

	f->fd = -1;
	f->elf = NULL;
	f->path = NULL;
	*why = NULL;
	if (!base || memcmp(base, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	/* The vDSO's section headers are its last bytes. */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > (1u << 20))
		return 0;
	f->elf = elf_memory((char *)base, size);
	if (!f->elf)
		return 0;
	if (img->build_id_len) {
		n = sp_elf_build_id(f->elf, id);
		if (n != img->build_id_len || memcmp(id, img->build_id, n)) {
			sp_image_file_close(f);
			*why = "build-id mismatch with this machine's vDSO";
			return -1;
		}
	} else if (!s->same_kernel) {
		sp_image_file_close(f);
		*why = "recorded on another kernel; its vDSO is not here";
		return -1;
	}
	f->path = sp_xstrdup("[vdso]");
	return 1;
}

/* The vDSO: the archive's copy, else this process's own if it is the same. */
static bool find_vdso(struct sp_symbolizer *s, struct image *img, struct image_file *f)
{
	const char *why = NULL;
	char *p;
	int rc = 0;

	if (s->o.archive && img->build_id_len) {
		p = sp_archive_path(s->o.archive, img->build_id, img->build_id_len, NULL);
		rc = p ? sp_image_file_try(img, p, false, f, &why) : 0;
		free(p);
		img->from_archive = rc > 0;
	}
	if (rc <= 0)
		rc = open_own_vdso(s, img, f, &why);
	if (rc <= 0) {
		img->status = rc < 0 ? SP_SYM_BUILD_ID_MISMATCH : SP_SYM_FILE_MISSING;
		if (why)
			sp_image_warn(img, NULL, why);
		return false;
	}
	return true;
}

/* The first candidate that was there but not the file: named if none is. */
struct miss {
	const char *why;
	char *path;
};

/* Try candidate path (freed here, or kept in m) for img: whether it is the file. */
static bool try_candidate(struct image *img, char *path, bool check_stat, struct image_file *f,
			  struct miss *m)
{
	const char *why = NULL;
	int rc = sp_image_file_try(img, path, check_stat, f, &why);

	if (rc < 0 && !m->why) {
		m->why = why;
		m->path = path;
		return false;
	}
	free(path);
	return rc > 0;
}

/*
 * The recorded path inside /proc/PID/root, resolved as the process would
 * (procroot.h): only with a build-id to check it against, since the pid
 * may have been given to another process since.
 */
static bool find_in_root(struct image *img, struct image_file *f, struct miss *m)
{
	int rfd, fd;
	bool found;

	if (!img->build_id_len || !img->pid || img->path[0] != '/' || !sp_proc_other_mnt_ns(img->pid))
		return false;
	rfd = sp_proc_root_dir((uint32_t)img->pid);
	if (rfd < 0)
		return false;
	fd = sp_proc_root_open(rfd, img->path, false);
	close(rfd);
	if (fd < 0)
		return false;
	found = try_candidate(img, sp_xstrfmt("/proc/self/fd/%d", fd), false, f, m);
	if (!found || img->root_fd >= 0)
		close(fd);
	else
		img->root_fd = fd;	/* the file is opened again by that name later */
	return found;
}

/* A file by the recorded path, in the order of the candidates below. */
static bool find_file(struct sp_symbolizer *s, struct image *img, struct image_file *f,
		      struct miss *m)
{
	const char *sysroot = s->o.sysroot, *base;
	char *p;
	size_t len;
	unsigned int i;

	/* 1. The archive: the exact image, even if deleted or replaced since. */
	if (s->o.archive && img->build_id_len) {
		p = sp_archive_path(s->o.archive, img->build_id, img->build_id_len, NULL);
		if (p && try_candidate(img, p, false, f, m)) {
			img->from_archive = true;
			return true;
		}
	}
	/* 2. --image-dir: by base name. */
	base = strrchr(img->path, '/');
	for (i = 0; i < SP_SYMBOLIZE_MAX_DIRS && s->o.image_dirs[i]; i++) {
		p = sp_xstrfmt("%s/%s", s->o.image_dirs[i], base ? base + 1 : img->path);
		if (try_candidate(img, p, false, f, m))
			return true;
	}
	/* 3. The recorded path, under the sysroot. A deleted file's path ends in " (deleted)". */
	if (sysroot && strcmp(sysroot, "/"))
		p = sp_xstrfmt("%s%s%s", sysroot, img->path[0] == '/' ? "" : "/", img->path);
	else
		p = sp_xstrdup(img->path);
	len = strlen(p);
	if (len > 10 && !strcmp(p + len - 10, " (deleted)"))
		p[len - 10] = 0;
	if (try_candidate(img, p, !sysroot || !strcmp(sysroot, "/"), f, m))
		return true;
	/* 4. Inside the root of the process that mapped it, while it lives (a
	 * container's file the host does not have). */
	return find_in_root(img, f, m);
}

bool sp_image_find(struct sp_symbolizer *s, struct image *img, struct image_file *f)
{
	struct miss m = { 0 };

	if (img->vdso)
		return find_vdso(s, img, f);
	if (img->path[0] == '[') {
		img->status = SP_SYM_NO_SYMBOLS;
		return false;
	}
	if (find_file(s, img, f, &m)) {
		free(m.path);
		return true;
	}
	if (m.why) {
		img->status = strstr(m.why, "mismatch") || strstr(m.why, "changed") ?
			      SP_SYM_BUILD_ID_MISMATCH : SP_SYM_BAD_FILE;
		sp_image_warn(img, m.path, m.why);
	} else {
		img->status = SP_SYM_FILE_MISSING;
		sp_image_warn(img, NULL, "file not found");
	}
	free(m.path);
	return false;
}
