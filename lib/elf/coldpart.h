/* SPDX-License-Identifier: MIT */
/*
 * coldpart.h - the cold part of a function a compiler split in two (GCC's
 * "foo.cold", in .text.unlikely): code of the same function, in the same
 * native frame, somewhere else in the file, and named by no symbol a
 * stripped binary keeps. CPython's _PyEval_EvalFrameDefault runs there
 * whenever tracing or a profile function is on: a stack walker that knows
 * the eval loop by its symbol's range misses those frames.
 *
 * Found from the hot part's own code: its near jumps (jmp rel32, jcc
 * rel32) that leave it land inside one other function-sized range of
 * .eh_frame_hdr (fstarts.h), not at its start as a tail call does. Bytes
 * are not decoded as instructions: a byte pattern that is no jump lands
 * anywhere, and a range is taken only when SP_COLD_MIN_JUMPS of them land
 * inside it and it holds the most (Debian's python3.11: 378 into one
 * range, none into any other).
 */
#ifndef STACKPULSE_ELF_COLDPART_H
#define STACKPULSE_ELF_COLDPART_H

#include <stddef.h>
#include <stdint.h>

#include "elf/fstarts.h"

#define SP_COLD_MIN_JUMPS	8

/* The function whose code (len bytes) is at ELF address addr: its cold
 * part's range into [*start, *end), 0; -1 when none is found. */
int sp_cold_part(const uint8_t *code, size_t len, uint64_t addr, const struct sp_fstarts *f,
		 uint64_t *start, uint64_t *end);

#endif
