/* SPDX-License-Identifier: MIT */
/*
 * check_pids.h - what sp-record --check says of the processes given with
 * -p: whether each can be attached to (a process, not a thread of one, not
 * gone), named by its comm and executable, escaped. What a recording would
 * get of it (interpreted frames, spans) is not tried: the line says how to
 * find out. A pid that cannot be attached to is an error, as it is for a
 * recording.
 */
#ifndef STACKPULSE_CHECK_PIDS_H
#define STACKPULSE_CHECK_PIDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A line per pid on out; 0, or -1 when any cannot be attached to (said). */
int sp_check_pids(const uint32_t *pids, size_t n, FILE *out);

#endif
