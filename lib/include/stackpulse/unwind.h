/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - DWARF (CFI) unwinding of user stacks at record time, from the
 * registers and the copy of the user stack that perf_event_open hands over
 * with a sample (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER).
 *
 * The unwinder keeps, per process, the executable mappings it was told about
 * (from /proc at attach and from MMAP2 records), and per file the parsed
 * unwind tables (.eh_frame, .debug_frame), so that a sample costs a table
 * walk, not an ELF parse. It never reads the target's memory: only the copy.
 */
#ifndef STACKPULSE_UNWIND_H
#define STACKPULSE_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct sp_unwinder;

/* The user registers perf must sample (attr.sample_regs_user) for this arch. */
uint64_t sp_unwind_regs_mask(void);

struct sp_unwinder *sp_unwinder_new(void);
void sp_unwinder_free(struct sp_unwinder *u);

/* A file mapping of a process became visible (or went away). pgoff is the
 * file offset of start. Returns 0, or -1 (nothing reported) on no memory. */
int sp_unwinder_map(struct sp_unwinder *u, uint32_t pid, uint64_t start, uint64_t end,
		    uint64_t pgoff, const char *path);
void sp_unwinder_unmap(struct sp_unwinder *u, uint32_t pid, uint64_t start, uint64_t end);
/* The process exited or exec'd: forget its mappings. */
void sp_unwinder_forget(struct sp_unwinder *u, uint32_t pid);

/*
 * Unwind one sample. regs are the sampled user registers in perf's order for
 * sp_unwind_regs_mask() (nregs of them), stack the copied bytes starting at
 * the sampled stack pointer (its dyn_size valid bytes). Writes at most max
 * instruction addresses into ips[], leaf first (the leaf is the sampled pc,
 * the others return addresses), and returns how many; *status says why it
 * stopped. Never loops, never reads outside stack[0..size).
 */
unsigned int sp_unwinder_unwind(struct sp_unwinder *u, uint32_t pid, uint32_t tid,
				const uint64_t *regs, unsigned int nregs,
				const uint8_t *stack, size_t size,
				uint64_t *ips, unsigned int max, enum sp_unwind_status *status);

#endif
