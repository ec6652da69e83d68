// SPDX-License-Identifier: MIT
/*
 * Fuzz the JIT perf-map reader sp-record runs as root on a file any user
 * may have written (/tmp/perf-PID.map): the input is the file, read from a
 * memfd with the bounds of sp_procfs_perfmap_fd(). Every symbol it gives
 * must be a line of the input: a name without a newline, of a line no
 * longer than the bound. Nothing may crash, hang or allocate without bound.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "procfs.h"
#include "sp.h"

struct seen {
	const uint8_t *data;
	size_t size;
	uint64_t n;
};

static int on_sym(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	struct seen *s = ctx;
	size_t len = strlen(name);

	if (!len || len >= SP_PERFMAP_MAX_LINE || strchr(name, '\n') ||
	    !memmem(s->data, s->size, name, len))
		abort();
	s->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_perfmap_result res;
	struct seen s = { data, size, 0 };
	int fd;

	sp_progname = "fuzz-perfmap";
	fd = memfd_create("perf-map", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size && lseek(fd, 0, SEEK_SET) == 0) {
		if (sp_procfs_perfmap_fd(fd, on_sym, &s, &res) != 0 || res.syms != s.n ||
		    res.cut)
			abort();
	}
	close(fd);
	return 0;
}
