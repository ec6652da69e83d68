/* SPDX-License-Identifier: MIT */
/*
 * hold_guard.h - the guardian of the processes sp-record holds stopped.
 *
 * BPF stops a process of the recorded tree at fork or exec (SIGSTOP) so
 * that sp-record can attach its probes before it runs, and notes it in a
 * BPF hash map (tgid -> time); sp-record continues it (SIGCONT) and
 * deletes the entry. The guardian is a small process of its own, forked
 * before anything is stopped, that outlives sp-record: when sp-record is
 * gone, however it went (exit, SIGKILL, a crash, the OOM killer), it
 * continues every process the map still holds, and exits.
 *
 * It keeps two file descriptors, the map's and the read end of a pipe
 * whose write end only sp-record has: no BPF program or link (the probes
 * detach when sp-record goes), no output (a reader of sp-record's pipe
 * sees its end). It runs in a session of its own (a terminal's ^C to
 * sp-record's process group does not reach it), is not dumpable (no one
 * else may ptrace it), and ignores the usual signals.
 */
#ifndef SP_HOLD_GUARD_H
#define SP_HOLD_GUARD_H

#include <stdint.h>

/*
 * Make the guardian's pipe now, as early as can be, so that its end has a
 * low number: a dying process closes its file descriptors in order, and
 * closing each uprobe's takes the kernel tens of milliseconds; the
 * guardian sees the end as soon as that one is closed. Optional.
 */
void sp_hold_guard_prepare(void);

/*
 * Start the guardian of the map at map_fd; prog_ids: the BPF programs
 * that stop processes (0 ends the list, at most 4): once sp-record is gone
 * the guardian sweeps the map until they are gone too (at most 10 s).
 * Returns the write end of its pipe (close-on-exec): closing it, or
 * sp-record's end, sets the guardian off. -1 (reported) on failure.
 */
int sp_hold_guard_start(int map_fd, const uint32_t *prog_ids);

/*
 * Continue (SIGCONT) every process the map at map_fd holds and delete its
 * entry. Async-signal-safe (the guardian's own sweep). Returns how many.
 */
int sp_hold_guard_sweep(int map_fd);

#endif
