// SPDX-License-Identifier: MIT
/* Unit tests of lib/elf/fstarts.c: the .eh_frame_hdr search table read
 * only in the encoding linkers write, bounded by the section, kept only
 * sorted; a function's end is the next start; and this test's own file,
 * whose library functions must all be found where its symbol table puts
 * them. */
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "elf/fstarts.h"
#include "tap.h"

/* A section at ELF address 0x1000 of n entries whose starts are at
 * 0x1000 + rel[i]. */
static size_t hdr(uint8_t *b, const int32_t *rel, uint32_t n, uint32_t count)
{
	size_t i;

	b[0] = 1, b[1] = 0x1b, b[2] = 0x03, b[3] = 0x3b;
	memset(b + 4, 0, 4);
	memcpy(b + 8, &count, 4);
	for (i = 0; i < n; i++) {
		memcpy(b + 12 + 8 * i, &rel[i], 4);
		memset(b + 16 + 8 * i, 0, 4);
	}
	return 12 + 8 * n;
}

static void test_parse(void)
{
	const int32_t rel[] = { -0x800, 0x100, 0x100, 0x180, 0x400 };
	const int32_t unsorted[] = { 0x100, 0x80 };
	uint8_t b[128];
	struct sp_fstarts f;
	uint64_t end = 0;
	size_t len = hdr(b, rel, 5, 5);

	CHECK(sp_fstarts_parse(b, len, 0x1000, &f) == 0);
	CHECK_EQ_U(f.n, 5);
	CHECK(sp_fstarts_find(&f, 0x800, &end) == 1 && end == 0x1100);
	/* two FDEs at one start: the function ends at the next other one */
	CHECK(sp_fstarts_find(&f, 0x1100, &end) == 1 && end == 0x1180);
	CHECK(sp_fstarts_find(&f, 0x1400, &end) == 0);	/* the last: no end known */
	/* inside a function, before the first, after the last: no start */
	CHECK(sp_fstarts_find(&f, 0x1101, &end) == 0);
	CHECK(sp_fstarts_find(&f, 0x7ff, &end) == 0);
	CHECK(sp_fstarts_find(&f, 0x2000, &end) == 0);
	sp_fstarts_release(&f);
	/* a count past the section, another encoding, unsorted, none */
	CHECK(sp_fstarts_parse(b, hdr(b, rel, 5, 6), 0x1000, &f) == -1 && !f.n && !f.at);
	hdr(b, rel, 5, 5);
	b[3] = 0x1b;
	CHECK(sp_fstarts_parse(b, len, 0x1000, &f) == -1);
	CHECK(sp_fstarts_parse(b, hdr(b, unsorted, 2, 2), 0x1000, &f) == -1 && !f.at);
	CHECK(sp_fstarts_parse(b, hdr(b, rel, 0, 0), 0x1000, &f) == -1);
	CHECK(sp_fstarts_parse(b, 11, 0x1000, &f) == -1);
	CHECK(sp_fstarts_parse(b, hdr(b, rel, 0, 0xffffffffu), 0x1000, &f) == -1);
}

/* Every function of this file's symbol table with a size starts a
 * function of its table (the compiler gives each its FDE). */
static void test_self(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	struct sp_fstarts f;
	unsigned int funcs = 0, found = 0;

	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	CHECK(elf != NULL);
	if (!elf)
		return;
	CHECK(sp_fstarts_read(elf, &f) == 0);
	CHECK(f.n > 4);
	if (f.n <= 4)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;
			uint64_t end;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !s.st_value || !s.st_size)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name || strncmp(name, "sp_", 3) ||	/* the library's: not inlined */
			    s.st_value == f.at[f.n - 1])	/* the last: no end known */
				continue;
			funcs++;
			if (sp_fstarts_find(&f, s.st_value, &end) && end >= s.st_value + s.st_size)
				found++;
		}
	}
	CHECK(funcs >= 3);
	CHECK_EQ_U(found, funcs);
	sp_fstarts_release(&f);
	elf_end(elf);
	close(fd);
}

int main(void)
{
	TAP_RUN(test_parse);
	TAP_RUN(test_self);
	return TAP_DONE();
}
