/* SPDX-License-Identifier: MIT */
/*
 * proc_pin.h - one process held by what cannot come to name another: its
 * pidfd and its /proc/PID directory, both bound to the process itself, not
 * to its pid. sp-record -p (running as root) asks through them whether a
 * thread id still is one of the process's threads and whether the process
 * has exited: a pid or tid that ended can be reused at any moment, by any
 * user's process, which kill(pid, 0) or /proc/PID by number cannot tell
 * from the process asked for (docs/sp-record.md, "Attaching with -p").
 */
#ifndef SP_RECORD_PROC_PIN_H
#define SP_RECORD_PROC_PIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_proc_pin {
	uint32_t pid;
	int pidfd;	/* readable once the process has exited */
	int dir;	/* /proc/PID, O_PATH: its lookups stay the process's */
};

#define SP_PROC_PIN_INIT { 0, -1, -1 }

/*
 * Hold process pid (a process, not a thread of one: pidfd_open()). 0, or
 * -1 with errno set (ESRCH: no such process, or it exited meanwhile) and
 * nothing left open.
 */
int sp_proc_pin_open(struct sp_proc_pin *pin, uint32_t pid);
/* Whether tid is a thread of the process now (a tid reused by another
 * process, or one of a process that is gone, is not). */
bool sp_proc_pin_has_thread(const struct sp_proc_pin *pin, uint32_t tid);
/* Its threads now (a malloc'd array of *n, sorted). 0, or -1 (gone). */
int sp_proc_pin_tasks(const struct sp_proc_pin *pin, uint32_t **tids, size_t *n);
/* Whether the process has exited (a zombie has). */
bool sp_proc_pin_exited(const struct sp_proc_pin *pin);
/* Whether its pid names another process now: the one held is gone (reaped,
 * its /proc directory empty) and a process of that number is there. */
bool sp_proc_pin_reused(const struct sp_proc_pin *pin);
void sp_proc_pin_close(struct sp_proc_pin *pin);

/* Why pidfd_open(pid) failed with err, for a message "pid PID: WHY" (a
 * thread id is told apart from a process that is gone). */
void sp_pidfd_failure(uint32_t pid, int err, char *why, size_t size);

#endif
