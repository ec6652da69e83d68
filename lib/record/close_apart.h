/* SPDX-License-Identifier: MIT */
/*
 * close_apart.h - file descriptors closed by a process of their own, so
 * that sp-record's end does not wait for the kernel to let them go.
 *
 * Closing the last reference to a perf event on a tracepoint (each
 * per-call system call tracepoint of the events' and the interpreters'
 * sources) waits for the tracepoints' RCU grace periods under the
 * kernel's event_mutex: 15-30 ms each on a loaded VM, one after the
 * other whatever the threads (6.x's perf_trace_destroy). Some 80 of them
 * kept sp-record from ending for 1.3-2 s after a short command, and an
 * exiting process closes its descriptors before its parent's wait()
 * returns. A child forked with a copy of just those descriptors holds
 * the last references: sp-record's own closes return at once, and the
 * child pays the kernel's waits after sp-record has gone.
 *
 * The child keeps nothing else (no output a reader waits on, no program
 * or link that stops processes, no guardian's pipe), runs in a session of
 * its own, ignores the usual signals and is named sp-record-end. Its
 * programs stay attached until it has closed them: they only read and
 * write into rings nobody reads any more.
 */
#ifndef SP_RECORD_CLOSE_APART_H
#define SP_RECORD_CLOSE_APART_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Close every file descriptor of the calling process but keep[0..n)
 * (sorted in place; negative ones ignored). Only system calls, no
 * allocation: for a child forked from a process with threads.
 */
void sp_close_all_but(int *keep, size_t n);

/*
 * Make a forked child a keeper: a process of its own that keeps keep[0..n)
 * only (sp_close_all_but), runs in a session of its own (a terminal's ^C
 * to sp-record's process group does not reach it), ignores the usual
 * signals, is not dumpable (no one else may ptrace it) and is named name
 * in ps. System calls only. Then sp_keeper_wait_end(rfd) waits, reading
 * the pipe at rfd, until the last copy of its other end is closed.
 */
void sp_keeper_become(int *keep, size_t n, const char *name);
void sp_keeper_wait_end(int rfd);

/*
 * Fork a child that holds fds[0..n) (sorted in place) and nothing else.
 * Returns the write end of a pipe (close-on-exec), or -errno (nothing
 * done) when it cannot: the caller closes its own copies of fds (and of
 * whatever they hold, a perf link's event), then that end; the child,
 * which waits for it, then closes the last references and exits. The
 * child is a grandchild, init's (or a subreaper's) at once: nobody waits
 * for it, and it is no zombie of a long recording.
 */
int sp_fds_close_apart(int *fds, size_t n);

/*
 * Before a recording's first attach: keep the closers of earlier
 * recordings from closing until sp_close_apart_resume(). Each close of a
 * closer holds the kernel's event_mutex for the tracepoints' grace periods
 * (15-30 ms, 3 s for all of a recording's), which a recording attaching
 * meanwhile needs too: its tracepoints and uprobes came late (a -p
 * process's first events without stacks, a hook that gave up waiting for
 * sp-record). Closers close one descriptor at a time, each under a lock
 * (/run/sp-record-closers.lock, root's) held exclusively; a recording
 * takes it shared, so it waits for one close at most (timeout_ns at
 * most), and recordings that start together do not wait for each other.
 * While it attaches, the closers' events are still referenced, so its
 * attaches register nothing anew, and the closers' closes of the events
 * it attached too then wait for no grace period. Without that lock
 * (/run missing, or its file not root's alone), it waits as before, at
 * most timeout_ns, for the closers to end. Only as root, and only the
 * first call of a process (later ones return 0 at once: the closers then
 * may be its own). Returns how many closers it waited for (said with -v).
 */
#define SP_CLOSERS_WAIT_NS	(5 * 1000000000ULL)	/* a few closers' worth */
int sp_close_apart_wait_earlier(uint64_t timeout_ns);
/* Let the closers paused by sp_close_apart_wait_earlier() go on: once
 * every source is attached. Nothing when none were paused. */
void sp_close_apart_resume(void);
/* Unit tests: the closers' lock file at path instead (called before any
 * closer is made). */
void sp_close_apart_lock_path(const char *path);

/* bpf_link__destroy() of links[0..n) (NULL ones skipped), their last
 * references closed apart when there are several. */
struct bpf_link;
void sp_bpf_links_destroy(struct bpf_link **links, size_t n);

#endif
