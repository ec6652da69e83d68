/* SPDX-License-Identifier: MIT */
/*
 * perf_ring.h - reading perf_event_open ring buffers and decoding the
 * records in them.
 *
 * A ring is drained in passes: sp_perf_ring_begin() takes a snapshot of the
 * kernel's head, sp_perf_ring_next() returns the records up to it one by
 * one (a record that wraps around the end of the ring is copied into a
 * buffer the ring owns, so every record is contiguous), sp_perf_ring_end()
 * hands the space back to the kernel. A record returned by next() is valid
 * until the following next() or end().
 */
#ifndef STACKPULSE_PERF_RING_H
#define STACKPULSE_PERF_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "hashmap.h"
#include "record.h"

struct sp_perf_ring {
	struct perf_event_mmap_page *meta;	/* NULL when not mapped */
	uint8_t *data;
	uint64_t size;		/* data size, a power of two */
	uint64_t head;		/* snapshot taken by begin() */
	uint64_t tail;		/* next byte to read */
	size_t map_len;		/* 0 when not owned by an mmap (tests) */
	uint8_t *copy;		/* a wrapped record made contiguous */
	size_t copy_cap;
	uint64_t bad;		/* records with an impossible size (ring reset) */
};

/*
 * What every event of a recording asks the kernel for, besides its
 * samples: the records that track processes and mappings (MMAP2 with
 * MMAP, COMM with exec, FORK and EXIT), a sample_id trailer on each,
 * CLOCK_MONOTONIC time stamps, inheritance by the children, wake-ups by
 * watermark, nothing of the hypervisor; with enable_on_exec, off until the
 * command execs; and as its read format, the count of the records it could
 * not write (SP_PERF_FORMAT_LOST, for sp_perf_lost_total()). Sets a->size.
 */
void sp_perf_attr_records(struct perf_event_attr *a, bool enable_on_exec);

/* PERF_FORMAT_LOST (Linux 6.0; an enum where the headers have it). */
#define SP_PERF_FORMAT_LOST	(1ull << 4)

/* perf_event_open(2), close-on-exec; an attr the kernel refuses for
 * SP_PERF_FORMAT_LOST (before 6.0) loses it, for this open and the next. */
int sp_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group);

/*
 * The records a source's rings could not write, said per CPU (one
 * mechanism for every perf source). A ring says its losses with a lost
 * record, but only with the next record it writes: a burst at the end of a
 * recording would be lost in silence. So each lost record a ring says
 * becomes a lost record naming its CPU, at its time (sp_perf_lost_said()),
 * and at the end each CPU's events' own counts of what they could not
 * write (SP_PERF_FORMAT_LOST; an inherited child's count as its parent's),
 * less what its rings said, are one lost record more (sp_perf_lost_unsaid()).
 */
struct sp_perf_id;

struct sp_perf_lost {
	struct sp_u64map said;	/* CPU -> losses its rings' lost records said */
};

/* h, a PERF_RECORD_LOST read from id's CPU's ring, as the lost record r,
 * counted as said; false when h is too short to say a count. */
bool sp_perf_lost_said(struct sp_perf_lost *l, const struct perf_event_header *h,
		       const struct sp_perf_id *id, struct sp_record *r);
/*
 * Once the events fds (opened with a; fd_cpu[i] the CPU of fds[i]'s ring)
 * are off and their rings drained: a lost record stamped time per CPU for
 * what its rings never said, through emit(ctx, record); said with -v, what
 * naming whose records ("" or "off-cpu: "). Returns their sum: 0 too when
 * a lacks the count (a kernel before 6.0).
 */
uint64_t sp_perf_lost_unsaid(const struct sp_perf_lost *l, const struct perf_event_attr *a,
			     const int *fds, const unsigned int *fd_cpu, size_t n, uint64_t time,
			     int (*emit)(void *ctx, const struct sp_record *r), void *ctx,
			     const char *what);
void sp_perf_lost_release(struct sp_perf_lost *l);
/* One event's count of the records it could not write (as above); false
 * when a lacks it, or the read fails. */
bool sp_perf_fd_lost(const struct perf_event_attr *a, int fd, uint64_t *lost);
/*
 * For --call-graph=dwarf and auto: the user registers unwind.c needs and
 * stack_size bytes of the user stack (0: 8192) with each sample, and for
 * dwarf no user callchain. Nothing for fp and none. Returns the number of
 * registers, for sp_perf_parse_sample().
 */
unsigned int sp_perf_attr_user_stack(struct perf_event_attr *a, enum sp_call_graph cg,
				     uint32_t stack_size);
/* All the rings of a recording, on every CPU, within this many bytes. */
#define SP_PERF_RINGS_MOST	(64ull << 20)
/*
 * The ring pages per CPU for stack copies of stack_size bytes (0: 8192),
 * when base pages suit 8192-byte ones: base times the copy's size over
 * 8192, rounded up to a power of two, so a ring holds as many samples
 * (and as much time) whatever the copy; but never more than all ncpus
 * rings within SP_PERF_RINGS_MOST of page_size pages, nor fewer than base.
 */
unsigned int sp_perf_ring_pages(unsigned int base, uint32_t stack_size, unsigned int ncpus,
				uint64_t page_size);
/* The bytes after which a ring of ring bytes wakes its reader: a quarter
 * of it, at most about eight samples of stack_size-byte copies (64 KiB
 * for 8192 or none), so a large copy does not wake it at every sample. */
uint32_t sp_perf_ring_wakeup(uint64_t ring, uint32_t stack_size);
/*
 * The user stack copy of the whole machine's samples (-a) on ncpus CPUs:
 * the largest power of two from most down to 8192 (perf's default) whose
 * samples the rings, within the SP_PERF_RINGS_MOST they share, still hold
 * SP_PERF_RING_SAMPLES_ALL of a CPU. A sample takes its whole copy in its
 * ring whatever the stack held, and the first second of -a unwinds every
 * binary once while the rings fill.
 */
#define SP_PERF_RING_SAMPLES_ALL	512
uint32_t sp_perf_ring_copy_all(unsigned int ncpus, uint32_t most);

/* Map the ring of a perf event fd: 1 + pages pages (pages a power of two).
 * 0, or -1 with errno set (nothing reported). */
int sp_perf_ring_map(struct sp_perf_ring *r, int fd, unsigned int pages);
/* Use memory the caller owns (unit tests): meta followed by size bytes. */
void sp_perf_ring_init(struct sp_perf_ring *r, struct perf_event_mmap_page *meta,
		       uint8_t *data, uint64_t size);
void sp_perf_ring_unmap(struct sp_perf_ring *r);

/* Start a pass. Returns the number of bytes ready. */
uint64_t sp_perf_ring_begin(struct sp_perf_ring *r);
/* The next whole record of this pass, or NULL at its end. */
const struct perf_event_header *sp_perf_ring_next(struct sp_perf_ring *r);
/* Give the bytes read back to the kernel. */
void sp_perf_ring_end(struct sp_perf_ring *r);

/* The fields of a PERF_RECORD_SAMPLE that sp-record asks for. */
struct sp_perf_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint32_t cpu;
	uint64_t period;
	uint64_t nr;			/* callchain entries, with context markers */
	const uint64_t *ips;
	uint64_t regs_abi;		/* PERF_SAMPLE_REGS_ABI_*, 0 = no registers */
	unsigned int nregs;
	const uint64_t *regs;
	uint64_t stack_size;		/* bytes of the user stack copy */
	const uint8_t *stack;
	uint64_t stack_dyn_size;	/* valid bytes of the copy */
	uint64_t cgroup;		/* PERF_SAMPLE_CGROUP: the task's cgroup id, 0 = none */
};

/* The sample_id trailer of a non-sample record (attr.sample_id_all). */
struct sp_perf_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
};

/*
 * Decode a sample of the given sample_type (only IDENTIFIER, IP, TID, TIME,
 * ID, CPU, PERIOD, CALLCHAIN, REGS_USER and STACK_USER are understood; any
 * other bit makes it fail). nregs is the number of bits set in
 * attr.sample_regs_user. 0, or -1 when the record is malformed.
 */
int sp_perf_parse_sample(const struct perf_event_header *h, uint64_t sample_type,
			 unsigned int nregs, struct sp_perf_sample *s);
/*
 * A copy of record h (malloc'd, never NULL), for holding past the ring's
 * pass. A sample's user stack copy is cut to the bytes the kernel wrote
 * (dyn_size, rounded up to 8): the ring keeps room for the whole
 * sample_stack_user whatever the stack held, and the rest is stale. The
 * copy parses as the record did, with stack_size the kept bytes. Any other
 * record, and a sample that does not parse, is copied whole. *time is the
 * sample's time, parsed on the way (0: not a sample, or one that does not
 * parse).
 */
struct perf_event_header *sp_perf_record_dup(const struct perf_event_header *h,
					     uint64_t sample_type, unsigned int nregs,
					     uint64_t *time);
/* Decode the sample_id trailer of a non-sample record. 0 or -1. */
int sp_perf_parse_id(const struct perf_event_header *h, uint64_t sample_type,
		     struct sp_perf_id *id);
/* Bytes of the sample_id trailer for sample_type. */
size_t sp_perf_id_size(uint64_t sample_type);

#endif
