// SPDX-License-Identifier: MIT
/* An input readable once, kept in an unnamed temporary file (spill.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spill.h"
#include "sp.h"

int sp_spill_stream(const char *path)
{
	const char *dir = getenv("TMPDIR");
	char buf[65536];
	struct stat st;
	ssize_t n, w, off;
	int in, tmp;

	/* FIFOs and sockets only: a device (/dev/zero) would fill the
	 * temporary file's file system */
	if (!strcmp(path, "-") || stat(path, &st) || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return -2;	/* the readers say what is wrong with it, if anything */
	/* no name: nothing of it is left behind, nor can another user's
	 * link or file stand in for it */
	tmp = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tmp < 0 && dir && *dir)
		tmp = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tmp < 0) {
		sp_warn("'%s' can be read once only, and no temporary file to keep it in could "
			"be made (TMPDIR, /tmp: %s): its format is told from its first bytes, "
			"which are then gone", path, strerror(errno));
		return -2;
	}
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		sp_error_errno("cannot open '%s'", path);
		close(tmp);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sp_error_errno("cannot read '%s'", path);
			goto fail;
		}
		for (off = 0; off < n; off += w) {
			w = write(tmp, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w <= 0) {
				sp_error_errno("cannot keep '%s' in a temporary file", path);
				goto fail;
			}
		}
	}
	close(in);
	if (lseek(tmp, 0, SEEK_SET) < 0) {
		sp_error_errno("cannot read back '%s'", path);
		close(tmp);
		return -1;
	}
	return tmp;
fail:
	close(in);
	close(tmp);
	return -1;
}
