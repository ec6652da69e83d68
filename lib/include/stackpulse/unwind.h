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

#include <stdbool.h>
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
/* The process exited: forget it (a later process of that pid is another). */
void sp_unwinder_forget(struct sp_unwinder *u, uint32_t pid);
/* The process exec'd: its mappings are gone, and the new image's come as
 * reported mappings (sp_unwinder_map()); /proc is not read for it. */
void sp_unwinder_exec(struct sp_unwinder *u, uint32_t pid);

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

/*
 * Extensions (backward compatible).
 */

/* Number of registers sp_unwind_regs_mask() selects. */
#define SP_UNWIND_NREGS 17
/* Hard bound on frames of one unwind, whatever max the caller passes. */
#define SP_UNWIND_MAX_FRAMES 512

/* The child inherits the parent's mappings (a FORK record). 0 or -1 on no memory. */
int sp_unwinder_fork(struct sp_unwinder *u, uint32_t ppid, uint32_t pid);

/*
 * The same for a source that tells what its rings hold in the order it reads
 * them, not in time order (each CPU's ring is in order, the rings are not
 * among themselves): each call carries its record's time stamp, and the
 * outcome is that of the records in time order. A mapping stamped before the
 * process's last exec (or its fork) is an earlier image's and is ignored, as
 * is one a newer mapping already covers; an exec drops only the mappings
 * stamped before it, a fork copies only the parent's mappings stamped before
 * it and none once the child's later exec was told. time 0 is the in-order
 * call above. Unmapping and forgetting are in order only.
 */
int sp_unwinder_map_at(struct sp_unwinder *u, uint32_t pid, uint64_t start, uint64_t end,
		       uint64_t pgoff, const char *path, uint64_t time);
void sp_unwinder_exec_at(struct sp_unwinder *u, uint32_t pid, uint64_t time);
int sp_unwinder_fork_at(struct sp_unwinder *u, uint32_t ppid, uint32_t pid, uint64_t time);

/*
 * When asked to unwind for a pid it was told nothing about, the unwinder
 * reads /proc/PID/maps once for it (on by default; a fuzzer or an offline
 * unwind turns it off).
 */
void sp_unwinder_set_proc_fallback(struct sp_unwinder *u, bool on);
/*
 * Unload every file not used since the last trim: its cache of unwind
 * rules (about 1 MB per file used), its CFI and its ELF with the mapping of
 * it (which would keep a deleted file's disk space), all loaded again as
 * unwinding needs them. A file in use stays loaded (what is loaded is what
 * the last two trims' interval used). A recording that runs for days
 * (sp-record -o DIR) calls it now and then, since a machine keeps running
 * new files.
 */
void sp_unwinder_trim(struct sp_unwinder *u);

/*
 * Where the last sp_unwinder_unwind() stopped: the path of the module that
 * holds the outermost pc (NULL when it is in no known mapping) and that pc's
 * file-relative address (ELF virtual address) in *rel. The string stays
 * valid until the next call into the unwinder.
 */
const char *sp_unwinder_stop_module(const struct sp_unwinder *u, uint64_t *rel);

/*
 * How many frames of the last sp_unwinder_unwind() were left through the
 * frame pointer, for code in a file without CFI (return address at rbp+8).
 * Each is a guess: in such code rbp may still hold an outer frame's
 * pointer, and the unwind then skips frames yet ends complete. The caller
 * marks the sample (SP_SAMPLE_FP_GUESS) when this is not 0.
 */
unsigned int sp_unwinder_fp_frames(const struct sp_unwinder *u);

/*
 * The file-relative (ELF virtual) address of addr in pid's mappings as the
 * unwinder knows them, for frames that name a module. 0 with *rel set, or
 * -1 (no mapping, anonymous memory, or a file that cannot be read).
 */
int sp_unwinder_rel(struct sp_unwinder *u, uint32_t pid, uint64_t addr, uint64_t *rel);

/*
 * Where addr lies in pid's mappings as the unwinder knows them: the mapped
 * file's path (valid for the unwinder's life: files are never forgotten,
 * only unloaded), the mapping's file offset as reported (pgoff) and addr's
 * ELF virtual address in the file (*rel; its file offset when the file
 * cannot be read). 0, or -1 (no mapping, anonymous or special memory).
 * Taken when a sample is read, it does not depend on what happens to the
 * process later (an exec, an exit, a pid reused).
 */
int sp_unwinder_where(struct sp_unwinder *u, uint32_t pid, uint64_t addr, const char **path,
		      uint64_t *pgoff, uint64_t *rel);

struct sp_unwind_stats {
	uint64_t samples;		/* sp_unwinder_unwind() calls */
	uint64_t frames;		/* addresses returned */
	uint64_t status[8];		/* per enum sp_unwind_status */
	uint64_t ns;			/* time spent unwinding (CLOCK_MONOTONIC) */
	uint64_t files, files_bad;	/* files opened; without usable CFI */
};
void sp_unwinder_stats(const struct sp_unwinder *u, struct sp_unwind_stats *st);

/*
 * --call-graph=auto: splice a frame-pointer chain (perf's
 * PERF_SAMPLE_CALLCHAIN user part, leaf first) onto a DWARF unwind that
 * stopped at code without CFI (status NO_CFI, JIT or UNKNOWN_MAP): when the
 * DWARF unwind's outermost pc occurs in fp[], the frames after it are
 * appended (up to max). Returns the new count; *status is left alone, as the
 * spliced part cannot be assessed. A caller whose count grew marks the
 * sample SP_SAMPLE_FP_GUESS.
 */
unsigned int sp_unwind_splice_fp(uint64_t *ips, unsigned int n, unsigned int max,
				 const uint64_t *fp, unsigned int nfp);

/*
 * sp_unwind_splice_fp() for pid, then the spliced chain's last frame judged
 * as a DWARF unwind's would be: when it is the thread's first frame (a
 * return address in the dynamic loader's entry code, where a process starts
 * and which has no CFI), *status becomes SP_UNWIND_COMPLETE. Otherwise
 * *status is left alone. Returns the new count.
 */
unsigned int sp_unwinder_splice_fp(struct sp_unwinder *u, uint32_t pid, uint64_t *ips,
				   unsigned int n, unsigned int max, const uint64_t *fp,
				   unsigned int nfp, enum sp_unwind_status *status);

#endif
