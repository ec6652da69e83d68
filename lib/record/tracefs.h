/* SPDX-License-Identifier: MIT */
/*
 * tracefs.h - tracefs, held for the sources that attach classic tracepoints
 * (libbpf reads a tracepoint's id from tracefs): mounted on
 * /sys/kernel/tracing when no tracefs is there, unmounted once the last
 * holder has let it go. The sources load on threads of their own: one
 * source's unmount must not pull tracefs from under another's look or
 * attach (the interpreters' source loaded Ruby's walkers for the system
 * calls' tracepoints while the events' source had tracefs mounted, and
 * found them gone when it attached). A tracefs mounted by anyone else is
 * never unmounted.
 */
#ifndef SP_RECORD_TRACEFS_H
#define SP_RECORD_TRACEFS_H

#include <stdbool.h>

/* Whether tracefs's events are at /sys/kernel/tracing or
 * /sys/kernel/debug/tracing now. */
bool sp_tracefs_ready(void);
/*
 * Hold tracefs: true once its events are there (mounted now if they were
 * not; *mounted says whether sp-record mounted it, NULL allowed), to be let
 * go with sp_tracefs_release(); false, errno set, nothing held, when it
 * cannot be had.
 */
bool sp_tracefs_hold(bool *mounted);
void sp_tracefs_release(void);

#endif
