/* SPDX-License-Identifier: MIT */
/*
 * spill.h - an input that can be read only once (a FIFO, a shell's
 * <(...), /dev/stdin on a pipe) kept whole in an unnamed temporary file,
 * so that a tool that looks at its first bytes to tell its format can
 * read it again from the start.
 */
#ifndef STACKPULSE_SPILL_H
#define STACKPULSE_SPILL_H

/*
 * path names a stream (a FIFO or a socket, not "-"): its bytes until its
 * end are copied into an unnamed file (O_TMPFILE in $TMPDIR, else /tmp),
 * whose descriptor, at offset 0, is returned. -2: path is no stream, or no
 * such file can be made (said): read it as it is; -1: it could not be
 * read (said, naming path).
 */
int sp_spill_stream(const char *path);

#endif
