// SPDX-License-Identifier: MIT
/* Unit tests for lib/stream/strmap.c: string ids stay right when a filter adds strings. */
#include <sys/mman.h>
#include <unistd.h>

#include "stream/strmap.h"
#include "tap.h"
#include "writer.h"

static struct sp_record str(uint64_t id, const char *s)
{
	struct sp_record r = { .kind = SP_REC_STRING };

	r.string.id = id;
	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = (uint32_t)strlen(s);
	return r;
}

static void test_strmap_shift(void)
{
	int fd = memfd_create("strmap", 0);
	struct sp_writer *w = sp_writer_new(fd, "memfd", SP_FORMAT_SPOOL);
	struct sp_strmap m = SP_STRMAP_INIT;
	struct sp_record r, h = { .kind = SP_REC_HEADER };
	const char *why = NULL;

	sp_writer_put(w, &h);
	r = str(1, "comm-a");
	CHECK(sp_strmap_put_string(&m, w, &r) == 0);
	/* The filter adds a string of its own: output id 2. */
	CHECK_EQ_U(sp_writer_strz(w, "added"), 2);
	r = str(2, "/bin/exe");
	CHECK(sp_strmap_put_string(&m, w, &r) == 0);
	/* An input string equal to one already written is not written twice. */
	r = str(3, "added");
	CHECK(sp_strmap_put_string(&m, w, &r) == 0);
	memset(&r, 0, sizeof(r));
	r.kind = SP_REC_PROCESS;
	r.process.pid = 7;
	r.process.comm = 1;
	r.process.exe = 2;
	r.process.args = 3;
	CHECK(sp_strmap_apply(&m, &r, &why) == 0);
	CHECK_EQ_U(r.process.comm, 1);
	CHECK_EQ_U(r.process.exe, 3);
	CHECK_EQ_U(r.process.args, 2);
	CHECK(sp_writer_put(w, &r) == 0);
	CHECK_STR(sp_defs_strz(sp_writer_defs(w), r.process.exe), "/bin/exe");
	/* A reference to a string never passed on. */
	r.process.comm = 9;
	CHECK(sp_strmap_apply(&m, &r, &why) == -1);
	CHECK(why != NULL);
	/* A header starts again. */
	sp_strmap_reset(&m);
	r.process.comm = 1;
	CHECK(sp_strmap_apply(&m, &r, &why) == -1);
	sp_strmap_release(&m);
	sp_writer_close(w);
	close(fd);
}

int main(void)
{
	TAP_RUN(test_strmap_shift);
	return TAP_DONE();
}
