// SPDX-License-Identifier: MIT
/*
 * Fuzz the perf.data importer (sp-decode --from=perf): the input is a
 * perf.data file, in file or pipe mode, read from a memfd by its path as
 * sp-decode reads a file. Whatever it is, the import must not crash, hang
 * or allocate without bound, and the stream it writes, however short, must
 * read back with no error: every record refers only to what was defined
 * before it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perfdata.h"
#include "reader.h"
#include "sp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_perfdata_stats st;
	struct sp_record rec;
	struct sp_reader *r;
	struct sp_writer *w;
	int in, out, err;
	char path[64];

	sp_progname = "fuzz-perfdata";
	in = memfd_create("perf.data", MFD_CLOEXEC);
	out = memfd_create("out.sp", MFD_CLOEXEC);
	if (in < 0 || out < 0 || write(in, data, size) != (ssize_t)size)
		goto done;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", in);
	w = sp_writer_new(out, "out.sp", SP_FORMAT_SPOOL);
	if (!w)
		abort();
	sp_perfdata_import(path, w, NULL, &st);
	if (sp_writer_close(w))
		abort();
	if (lseek(out, 0, SEEK_END) <= 0)
		goto done;	/* nothing written: not even a header */
	lseek(out, 0, SEEK_SET);
	r = sp_reader_open_fd(out, "out.sp");
	if (!r)
		abort();
	while (sp_reader_next(r, &rec) > 0)
		;
	err = sp_reader_close(r);
	if (err != SP_EXIT_OK)
		abort();
done:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return 0;
}
