// SPDX-License-Identifier: MIT
/* Unit tests of lib/elf/elffile.c: which files are opened (regular ELF files
 * only, and never a FIFO or a device), read or mapped, and what is said
 * about the others; a program built here with a build-id chosen here. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid.h"
#include "elf/elffile.h"
#include "tap.h"

static char dir[] = "/tmp/test-elffile-XXXXXX";
static char prog[600];

/* A program with the build-id 0xfeedface0102 (-Wl,--build-id=0x...). */
static int build(void)
{
	char cmd[2048];

	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd), "printf 'int main(void){return 0;}' > %s/prog.c && "
		 "cc -g -Wl,--build-id=0xfeedface0102 -o %s %s/prog.c 2>/dev/null", dir, prog,
		 dir);
	return system(cmd);
}

static int open_fds(void)
{
	int fd = dup(0), n = fd;

	close(fd);
	return n;	/* the lowest free descriptor: grows if one leaks */
}

static void check_file(Elf *elf)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];
	uint8_t id[SP_BUILD_ID_MAX];
	unsigned int n;

	n = elf ? sp_elf_build_id(elf, id) : 0;
	CHECK_EQ_U(n, 6);
	CHECK_STR(sp_buildid_hex(id, n, hex), "feedface0102");
	CHECK(elf && sp_elf_has_section(elf, ".text", true));
	CHECK(elf && sp_elf_has_section(elf, ".debug_info", true));
	CHECK(elf && !sp_elf_has_section(elf, ".no_such_section", false));
}

static void test_elffile_read_and_map(void)
{
	int fd = -2, before = open_fds();
	const char *why = "unset";
	Elf *elf;

	elf = sp_elf_open(prog, SP_ELF_READ, 0, &fd, &why);
	CHECK(elf != NULL && fd >= 0 && why == NULL);
	check_file(elf);
	sp_elf_close(elf, fd);
	/* Mapped: the descriptor is closed already. */
	elf = sp_elf_open(prog, SP_ELF_MAP, 0, &fd, &why);
	CHECK(elf != NULL && fd == -1);
	check_file(elf);
	sp_elf_close(elf, fd);
	/* A descriptor of the caller's, which it keeps. */
	fd = open(prog, O_RDONLY);
	elf = sp_elf_begin(fd, SP_ELF_READ);
	check_file(elf);
	sp_elf_close(elf, fd);
	CHECK_EQ_U(open_fds(), before);
}

static void test_elffile_refused(void)
{
	char path[700];
	int fd = 5, before = open_fds();
	const char *why;
	Elf *elf;

	/* A FIFO is never opened (an open for reading would block here). */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(mkfifo(path, 0600) == 0);
	elf = sp_elf_open(path, SP_ELF_READ, 0, &fd, &why);
	CHECK(!elf && fd < 0 && errno == EPERM);
	CHECK_STR(why, "not a regular file: a FIFO");
	/* Nor a device. */
	elf = sp_elf_open("/dev/null", SP_ELF_MAP, 0, &fd, &why);
	CHECK(!elf && errno == EPERM);
	CHECK_STR(why, "not a regular file: a character device");
	/* Larger than allowed. */
	elf = sp_elf_open(prog, SP_ELF_READ, 64, &fd, &why);
	CHECK(!elf && errno == EPERM);
	CHECK_STR(why, "too large");
	/* Not there: no reason worth a warning. */
	snprintf(path, sizeof(path), "%s/missing", dir);
	elf = sp_elf_open(path, SP_ELF_READ, 0, &fd, &why);
	CHECK(!elf && errno == ENOENT && why == NULL);
	/* A regular file that is not ELF, read or mapped. */
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	elf = sp_elf_open(path, SP_ELF_READ, 0, &fd, &why);
	CHECK(!elf && fd < 0 && errno == ENOEXEC);
	CHECK_STR(why, "not an ELF file");
	elf = sp_elf_open(path, SP_ELF_MAP, 0, &fd, NULL);
	CHECK(!elf && errno == ENOEXEC);
	fd = open(path, O_RDONLY);
	CHECK(!sp_elf_begin(fd, SP_ELF_READ) && errno == ENOEXEC);
	close(fd);
	CHECK_EQ_U(open_fds(), before);
}

/* Mapping paths that name no file: read through /proc/PID/map_files only. */
static void test_elffile_unlinked_paths(void)
{
	CHECK(sp_elf_path_unlinked("/memfd:busy (deleted)"));
	CHECK(sp_elf_path_memfd("/memfd:busy (deleted)"));
	CHECK(sp_elf_path_memfd("/memfd: (deleted)"));
	CHECK(sp_elf_path_unlinked("/usr/bin/mysum (deleted)"));
	CHECK(!sp_elf_path_memfd("/usr/bin/mysum (deleted)"));
	CHECK(!sp_elf_path_unlinked("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(!sp_elf_path_unlinked("/tmp/memfd:x"));
	CHECK(!sp_elf_path_memfd("//anon"));
	CHECK(!sp_elf_path_unlinked(""));
	CHECK(!sp_elf_path_unlinked(NULL));
}

/* A copy of prog at path with a change made to its bytes by fn. */
static int copy_patched(const char *path, void (*fn)(uint8_t *b, size_t n, int fd))
{
	FILE *in = fopen(prog, "rb");
	uint8_t *b = malloc(1 << 20);
	size_t n = in && b ? fread(b, 1, 1 << 20, in) : 0;
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);

	if (in)
		fclose(in);
	if (fd < 0 || !n) {
		free(b);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fn(b, n, fd);
	if (write(fd, b, n) != (ssize_t)n)
		n = 0;
	close(fd);
	free(b);
	return n ? 0 : -1;
}

/* e_shnum 0 and section 0's sh_size (the extended count) 50 million:
 * libelf would allocate a table that large */
static void many_sections(uint8_t *b, size_t n, int fd)
{
	Elf64_Ehdr eh;
	uint64_t count = 50000000;

	(void)fd;
	memcpy(&eh, b, sizeof(eh));
	if (eh.e_shoff + sizeof(Elf64_Shdr) > n)
		return;
	eh.e_shnum = 0;
	memcpy(b, &eh, sizeof(eh));
	memcpy(b + eh.e_shoff + offsetof(Elf64_Shdr, sh_size), &count, 8);
}

/* the section names' table says 2 GiB, the file made that long (sparse) */
static void huge_names(uint8_t *b, size_t n, int fd)
{
	Elf64_Ehdr eh;
	uint64_t size = 2ull << 30, off;

	memcpy(&eh, b, sizeof(eh));
	off = eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr);
	if (off + sizeof(Elf64_Shdr) > n)
		return;
	memcpy(b + off + offsetof(Elf64_Shdr, sh_size), &size, 8);
	if (ftruncate(fd, (off_t)(4ull << 30)))
		return;
}

static void test_elffile_bounded(void)
{
	char path[700];
	size_t ndx;
	GElf_Shdr sh;
	int fd;
	Elf *e;

	snprintf(path, sizeof(path), "%s/many", dir);
	CHECK(copy_patched(path, many_sections) == 0);
	errno = 0;
	e = sp_elf_open(path, SP_ELF_READ, 0, &fd, NULL);
	CHECK(!e && errno == ENOEXEC);
	sp_elf_close(e, e ? fd : -1);
	snprintf(path, sizeof(path), "%s/names", dir);
	CHECK(copy_patched(path, huge_names) == 0);
	e = sp_elf_open(path, SP_ELF_READ, 0, &fd, NULL);
	CHECK(e != NULL);
	if (e) {
		/* refused before elf_strptr() would read 2 GiB */
		CHECK(sp_elf_shstrndx(e, &ndx) == -1);
		CHECK(sp_elf_section(e, ".text", &sh) == NULL);
		sp_elf_close(e, fd);
	}
	unlink(path);
	/* the program itself: its names, its text within a bound */
	e = sp_elf_open(prog, SP_ELF_READ, 0, &fd, NULL);
	CHECK(e != NULL);
	if (e) {
		Elf_Scn *scn = sp_elf_section(e, ".text", &sh);

		CHECK(sp_elf_shstrndx(e, &ndx) == 0);
		CHECK(scn != NULL);
		CHECK(scn && sp_elf_data_max(scn, &sh, sh.sh_size) != NULL);
		CHECK(scn && sh.sh_size > 1 && sp_elf_data_max(scn, &sh, sh.sh_size - 1) == NULL);
		sp_elf_close(e, fd);
	}
}

int main(void)
{
	char cmd[100];
	int rc;

	TAP_RUN(test_elffile_unlinked_paths);
	if (!mkdtemp(dir) || build()) {
		TAP_SKIP(test_elffile_read_and_map, "cannot build a program with cc");
		TAP_SKIP(test_elffile_refused, "cannot build a program with cc");
		TAP_SKIP(test_elffile_bounded, "cannot build a program with cc");
		return TAP_DONE();
	}
	TAP_RUN(test_elffile_read_and_map);
	TAP_RUN(test_elffile_refused);
	TAP_RUN(test_elffile_bounded);
	rc = TAP_DONE();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return rc;
}
