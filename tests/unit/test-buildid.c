// SPDX-License-Identifier: MIT
/* Unit tests of lib/elf/buildid.c: note parsing (including malformed notes), and
 * ELF files built at test time with a build-id and load addresses chosen
 * here, so the expected values do not come from the code under test. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "buildid.h"

static void test_buildid_notes(void)
{
	/* An ABI-tag note, then a build-id note of 4 bytes. */
	uint8_t notes[] = {
		4, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 'G', 'N', 'U', 0,
		0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
		4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0,
		0xde, 0xad, 0xbe, 0xef,
	};
	uint8_t id[SP_BUILD_ID_MAX];
	char hex[2 * SP_BUILD_ID_MAX + 1];
	size_t cut;

	CHECK_EQ_U(sp_buildid_from_notes(notes, sizeof(notes), id, sizeof(id)), 4);
	CHECK_STR(sp_buildid_hex(id, 4, hex), "deadbeef");
	/* Cut anywhere: no build-id, and no read past the end (ASan). */
	for (cut = 0; cut < sizeof(notes); cut++) {
		uint8_t *p = malloc(cut ? cut : 1);

		memcpy(p, notes, cut);
		CHECK_EQ_U(sp_buildid_from_notes(p, cut, id, sizeof(id)), 0);
		free(p);
	}
	/* A name size that runs past the area. */
	notes[0] = 0xff;
	notes[1] = 0xff;
	CHECK_EQ_U(sp_buildid_from_notes(notes, sizeof(notes), id, sizeof(id)), 0);
}

static int build(const char *dir, const char *flags, char *out, size_t size)
{
	char cmd[1024];

	snprintf(out, size, "%s/prog", dir);
	snprintf(cmd, sizeof(cmd), "printf 'int main(void){return 0;}' > %s/prog.c && "
		 "cc %s -o %s %s/prog.c 2>/dev/null", dir, flags, out, dir);
	return system(cmd);
}

static void test_buildid_files(void)
{
	char dir[] = "/tmp/test-buildid-XXXXXX", path[512], hex[2 * SP_BUILD_ID_MAX + 1], cmd[600];
	struct sp_elf_info info;
	unsigned int i;
	int64_t bias = -1;

	CHECK(mkdtemp(dir) != NULL);
	if (build(dir, "-no-pie -Wl,--build-id=0x0123456789abcdef0011223344556677", path,
		  sizeof(path))) {
		printf("# no C compiler: skipped\n");
		return;
	}
	CHECK(sp_elf_info_file(path, &info) == 0);
	CHECK_STR(sp_buildid_hex(info.build_id, info.build_id_len, hex),
		  "0123456789abcdef0011223344556677");
	/* -no-pie on x86_64 loads at 0x400000: a file offset in the text
	 * segment is its address minus 0x400000. */
	for (i = 0; i < info.nloads; i++)
		if (info.load[i].offset && info.load[i].filesz)
			bias = sp_elf_bias(&info, info.load[i].offset & ~0xfffull);
	CHECK_EQ_U((uint64_t)bias, 0x400000);

	/* PIE: addresses are file offsets in the text segment. */
	CHECK(build(dir, "-pie -fPIE -Wl,--build-id=0xfeed", path, sizeof(path)) == 0);
	CHECK(sp_elf_info_file(path, &info) == 0);
	CHECK_STR(sp_buildid_hex(info.build_id, info.build_id_len, hex), "feed");
	CHECK_EQ_U((uint64_t)sp_elf_bias(&info, 0x1000), 0);

	/* No build-id at all. */
	CHECK(build(dir, "-Wl,--build-id=none", path, sizeof(path)) == 0);
	CHECK(sp_elf_info_file(path, &info) == 0);
	CHECK_EQ_U(info.build_id_len, 0);

	/* Not ELF, missing. */
	CHECK(sp_elf_info_file(dir, &info) == -1);
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	CHECK(sp_elf_info_file(path, &info) == -1 && errno == EINVAL);
	CHECK(sp_elf_info_file("/nonexistent", &info) == -1 && errno == ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

static void test_buildid_kernel(void)
{
	uint8_t id[SP_BUILD_ID_MAX];

	if (access("/sys/kernel/notes", R_OK)) {
		printf("# /sys/kernel/notes not readable: skipped\n");
		return;
	}
	CHECK(sp_buildid_kernel(id, sizeof(id)) >= 16);
}

int main(void)
{
	TAP_RUN(test_buildid_notes);
	TAP_RUN(test_buildid_files);
	TAP_RUN(test_buildid_kernel);
	return TAP_DONE();
}
