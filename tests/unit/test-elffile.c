// SPDX-License-Identifier: MIT
/* Unit tests of lib/elf/elffile.c: which files are opened (regular ELF files
 * only, and never a FIFO or a device), read or mapped, and what is said
 * about the others; a program built here with a build-id chosen here. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
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

int main(void)
{
	char cmd[100];
	int rc;

	TAP_RUN(test_elffile_unlinked_paths);
	if (!mkdtemp(dir) || build()) {
		TAP_SKIP(test_elffile_read_and_map, "cannot build a program with cc");
		TAP_SKIP(test_elffile_refused, "cannot build a program with cc");
		return TAP_DONE();
	}
	TAP_RUN(test_elffile_read_and_map);
	TAP_RUN(test_elffile_refused);
	rc = TAP_DONE();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return rc;
}
