// SPDX-License-Identifier: MIT
/*
 * Unit tests of the shared DWARF file a debug file's units refer to
 * (lib/symbolize/dwarf_alt.c): dwz's multifile found and given to libdw;
 * the same path made a FIFO, or another file, refused at once; a file
 * without the link opened as before. Needs gcc and dwz (skipped without).
 */
#include <dwarf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdw.h>

#include "elf/elffile.h"
#include "symbolize/dwarf_alt.h"
#include "tap.h"

static char dir[] = "/tmp/sp-test-dwarf-alt-XXXXXX";

/* The name of the subprogram DIE main of the first unit with one, read
 * through dw (its name may be in the shared file: DW_FORM_GNU_strp_alt). */
static bool names_main(Dwarf *dw)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu, child;
	bool found = false;

	while (!found && !dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL)) {
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0) {
			do {
				Dwarf_Attribute a;
				const char *n;

				if (dwarf_tag(&child) == DW_TAG_subprogram &&
				    dwarf_attr_integrate(&child, DW_AT_name, &a) &&
				    (n = dwarf_formstring(&a)) && !strcmp(n, "main"))
					found = true;
			} while (!found && dwarf_siblingof(&child, &child) == 0);
		}
		off = next;
	}
	return found;
}

/* sp_dwarf_begin() of the file dir/name, with debug directory dbg if any:
 * the Dwarf, or NULL with *why. */
static Dwarf *begin_in(const char *name, const char *dbg, const char **why, Elf **elf, int *fd)
{
	const char *dirs[1] = { dbg };
	struct sp_dwarf_where where = { .dirs = dirs, .ndirs = dbg ? 1 : 0 };
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*elf = sp_elf_open(path, SP_ELF_READ, 0, fd, NULL);
	if (!*elf)
		return NULL;
	return sp_dwarf_begin(*elf, path, &where, why);
}

static Dwarf *begin(const char *name, const char **why, Elf **elf, int *fd)
{
	return begin_in(name, NULL, why, elf, fd);
}

static void test_dwarf_alt(void)
{
	const char *why = NULL;
	char cmd[1024], path[128];
	Dwarf *dw;
	Elf *elf;
	int fd;

	snprintf(cmd, sizeof(cmd), "cd %s && printf '%%s\\n' 'struct s { int a; long b; };' "
		 "'int use(struct s *p) { return p->a; }' "
		 "'int main(void) { struct s v = { 0, 1 }; return use(&v); }' > t.c && "
		 "gcc -O1 -g -o a t.c && gcc -O1 -g -DX=1 -o b t.c && cp a plain && "
		 "dwz -m common.debug -M %s/common.debug a b && "
		 "gcc -O1 -g -o c t.c -DY=1 && cp c d && sed 's/int a;/int a, z;/' t.c > u.c && "
		 "gcc -O1 -g -o d u.c && dwz -m other.debug -M %s/other.debug c d",
		 dir, dir, dir);
	if (system(cmd)) {
		printf("# skipped: gcc and dwz made no shared file\n");
		return;
	}
	/* through the shared file */
	dw = begin("a", &why, &elf, &fd);
	CHECK(dw != NULL);
	CHECK(dw && dwarf_getalt(dw) != NULL);
	CHECK(dw && names_main(dw));
	sp_dwarf_end(dw);
	sp_elf_close(elf, fd);
	/* no link: as dwarf_begin_elf() */
	dw = begin("plain", &why, &elf, &fd);
	CHECK(dw != NULL && names_main(dw));
	sp_dwarf_end(dw);
	sp_elf_close(elf, fd);
	/* another shared file at the path: not the build-id the link names */
	snprintf(path, sizeof(path), "%s/common.debug", dir);
	snprintf(cmd, sizeof(cmd), "%s/common.real", dir);
	CHECK(!rename(path, cmd));
	snprintf(cmd, sizeof(cmd), "%s/other.debug", dir);
	CHECK(!symlink(cmd, path));
	why = NULL;
	dw = begin("a", &why, &elf, &fd);
	CHECK(dw == NULL);
	CHECK(why && strstr(why, "shared DWARF file") && strstr(why, "/common.debug'"));
	sp_elf_close(elf, fd);
	/* a FIFO there: refused at once, never waited on */
	CHECK(!unlink(path));
	CHECK(!mkfifo(path, 0600));
	why = NULL;
	dw = begin("a", &why, &elf, &fd);
	CHECK(dw == NULL);
	CHECK(why && strstr(why, "shared DWARF file"));
	sp_elf_close(elf, fd);
	/* the right file by its build-id in a debug directory, none at the path */
	CHECK(!unlink(path));
	snprintf(cmd, sizeof(cmd), "cd %s && id=$(readelf -n common.real | awk '/Build ID/ "
		 "{ print $3 }') && mkdir -p dbg/.build-id/${id%%${id#??}} && "
		 "cp common.real dbg/.build-id/${id%%${id#??}}/${id#??}.debug", dir);
	CHECK(!system(cmd));
	snprintf(cmd, sizeof(cmd), "%s/dbg", dir);
	dw = begin_in("a", cmd, &why, &elf, &fd);
	CHECK(dw != NULL && names_main(dw));
	sp_dwarf_end(dw);
	sp_elf_close(elf, fd);
	/* a shared file that names one of its own (libdw would open that) */
	snprintf(cmd, sizeof(cmd), "cd %s && printf 'x\\0\\1\\2\\3\\4' > link && "
		 "objcopy --add-section .gnu_debugaltlink=link common.real common.debug", dir);
	CHECK(!system(cmd));
	why = NULL;
	dw = begin("a", &why, &elf, &fd);
	CHECK(dw == NULL);
	CHECK(why && strstr(why, "shared DWARF file"));
	sp_elf_close(elf, fd);
	sp_dwarf_end(NULL);
}

int main(void)
{
	char cmd[256];
	int rc;

	elf_version(EV_CURRENT);
	if (!mkdtemp(dir))
		return 1;
	if (system("command -v gcc > /dev/null && command -v dwz > /dev/null"))
		TAP_SKIP(test_dwarf_alt, "needs gcc and dwz");
	else
		TAP_RUN(test_dwarf_alt);
	rc = TAP_DONE();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		rc = 1;
	return rc;
}
