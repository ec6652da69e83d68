// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/elf/coldpart.c: the cold part is the range most of a
 * function's outgoing jumps land inside, not at its start (a tail call),
 * and only with SP_COLD_MIN_JUMPS of them; and Debian's python3.11, whose
 * _PyEval_EvalFrameDefault GCC split, where readelf's .eh_frame gives the
 * cold part (its range is found, outside the hot one).
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/coldpart.h"
#include "tap.h"

static uint64_t starts[] = { 0x1000, 0x2000, 0x3000, 0x4000, 0x8000 };
static const struct sp_fstarts table = { starts, 5 };

/* code at ELF address 0x5000: a jmp rel32 (e9) or jcc rel32 (0f 8x) at
 * offset i to target t */
static void jump(uint8_t *code, size_t i, uint64_t t, bool jcc)
{
	int32_t rel = (int32_t)(t - (0x5000 + i + (jcc ? 6 : 5)));

	if (jcc) {
		code[i] = 0x0f;
		code[i + 1] = 0x84;
		memcpy(code + i + 2, &rel, 4);
	} else {
		code[i] = 0xe9;
		memcpy(code + i + 1, &rel, 4);
	}
}

static void test_coldpart_most_jumps_inside(void)
{
	uint8_t code[512];
	uint64_t s = 0, e = 0;
	size_t i;

	memset(code, 0x90, sizeof(code));
	for (i = 0; i < 10; i++)	/* into [0x2000, 0x3000) */
		jump(code, 16 * i, 0x2010 + 8 * i, i % 2);
	for (i = 10; i < 14; i++)	/* fewer into [0x1000, 0x2000) */
		jump(code, 16 * i, 0x1100, false);
	for (i = 14; i < 30; i++)	/* tail calls: at a start, not counted */
		jump(code, 16 * i, 0x4000, false);
	jump(code, 16 * 30, 0x5010, false);	/* within the function */
	CHECK(sp_cold_part(code, sizeof(code), 0x5000, &table, &s, &e) == 0);
	CHECK_EQ_U(s, 0x2000);
	CHECK_EQ_U(e, 0x3000);
}

static void test_coldpart_too_few(void)
{
	uint8_t code[256];
	uint64_t s, e;
	size_t i;

	memset(code, 0x90, sizeof(code));
	for (i = 0; i < SP_COLD_MIN_JUMPS - 1; i++)
		jump(code, 16 * i, 0x2010, false);
	CHECK(sp_cold_part(code, sizeof(code), 0x5000, &table, &s, &e) == -1);
	/* past the last start, before the first: no range */
	for (i = 0; i < 12; i++)
		jump(code, 16 * i, i % 2 ? 0x9000 : 0x800, false);
	CHECK(sp_cold_part(code, sizeof(code), 0x5000, &table, &s, &e) == -1);
	/* a jump cut off at the end is not read past it */
	memset(code, 0xe9, sizeof(code));
	CHECK(sp_cold_part(code, 3, 0x5000, &table, &s, &e) == -1);
}

static bool sym_of(Elf *elf, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t i;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++)
			if (gelf_getsym(d, (int)i, out) &&
			    !strcmp(elf_strptr(elf, sh.sh_link, out->st_name), name))
				return true;
	}
	return false;
}

static void test_coldpart_debian_python(void)
{
	const char *path = "/usr/bin/python3.11";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct sp_fstarts f = { 0 };
	uint64_t s = 0, e = 0, off;
	uint8_t *code;
	GElf_Sym sym;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0) {
		printf("# skip: no %s\n", path);
		return;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || !sym_of(elf, "_PyEval_EvalFrameDefault", &sym) || sp_fstarts_read(elf, &f)) {
		printf("# skip: %s has no _PyEval_EvalFrameDefault or .eh_frame_hdr\n", path);
		goto out;
	}
	code = calloc(1, sym.st_size);
	while (code && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    sym.st_value >= sh.sh_addr && sym.st_value + sym.st_size <= sh.sh_addr + sh.sh_size)
			break;
	if (!code || !scn || access("/etc/debian_version", F_OK)) {
		/* Debian's build is the one known to be split */
		printf("# skip: not Debian's %s, or its code in no section\n", path);
		free(code);
		goto out;
	}
	off = sh.sh_offset + (sym.st_value - sh.sh_addr);
	CHECK(pread(fd, code, sym.st_size, (off_t)off) == (ssize_t)sym.st_size);
	CHECK(sp_cold_part(code, sym.st_size, sym.st_value, &f, &s, &e) == 0);
	CHECK(e > s);
	CHECK(e <= sym.st_value || s >= sym.st_value + sym.st_size);
	free(code);
out:
	sp_fstarts_release(&f);
	if (elf)
		elf_end(elf);
	close(fd);
}

int main(void)
{
	TAP_RUN(test_coldpart_most_jumps_inside);
	TAP_RUN(test_coldpart_too_few);
	TAP_RUN(test_coldpart_debian_python);
	return TAP_DONE();
}
