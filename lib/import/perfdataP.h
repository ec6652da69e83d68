/* SPDX-License-Identifier: MIT */
/*
 * perfdataP.h - the perf.data importer's shared state (perfdata.h). Its
 * files:
 *   perfdata.c           opening the file, its header and attributes, the
 *                        buffered input, the record loop and dispatch
 *   perfdata_features.c  feature sections (file mode) and HEADER_FEATURE
 *                        records (pipe mode), the build-id table, the
 *                        stream's header record, the stats text
 *   perfdata_order.c     holding records until their time comes (rounds)
 *   perfdata_procs.c     COMM, FORK, EXIT, MMAP, MMAP2: processes, threads,
 *                        modules and each process's mappings
 *   perfdata_sample.c    PERF_RECORD_SAMPLE: its fields by sample_type,
 *                        the callchain and the DWARF unwind into a stack
 *   perfdata_ksyms.c     the kernel frames' names, from this machine's
 *                        /proc/kallsyms when the file's kernel is this one
 *
 * The layout of perf.data is perf's (tools/perf/Documentation/
 * perf.data-file-format.txt in the Linux sources); the record layouts are
 * the kernel's (<linux/perf_event.h>). Everything here is read from bytes
 * the caller checked the length of; nothing is trusted to be aligned.
 */
#ifndef STACKPULSE_PERFDATAP_H
#define STACKPULSE_PERFDATAP_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/heap.h"
#include "buf.h"
#include "buildid.h"
#include "hashmap.h"
#include "kallsyms.h"
#include "perfdata.h"
#include "unwind.h"
#include "writer.h"

/* Bounds on what the file may make us allocate or walk. */
#define PD_MAX_ATTRS 4096		/* events in one file */
#define PD_MAX_IDS (1u << 20)		/* sample ids over all events */
#define PD_MAX_FEATURE (64u << 20)	/* one feature section */
#define PD_MAX_FRAMES 1024		/* frames of one stack, as sp-record */
#define PD_REC_MAX 65536		/* a record's size is 16 bits */
#define PD_ATTR_MAX 4096		/* a perf_event_attr of a future perf */

/* perf's own record types (tools/perf/util/event.h), 64 and up. */
enum {
	PD_HEADER_ATTR = 64,
	PD_HEADER_EVENT_TYPE = 65,
	PD_HEADER_TRACING_DATA = 66,
	PD_HEADER_BUILD_ID = 67,
	PD_FINISHED_ROUND = 68,
	PD_ID_INDEX = 69,
	PD_AUXTRACE_INFO = 70,
	PD_AUXTRACE = 71,
	PD_AUXTRACE_ERROR = 72,
	PD_THREAD_MAP = 73,
	PD_CPU_MAP = 74,
	PD_STAT_CONFIG = 75,
	PD_STAT = 76,
	PD_STAT_ROUND = 77,
	PD_EVENT_UPDATE = 78,
	PD_TIME_CONV = 79,
	PD_HEADER_FEATURE = 80,
	PD_COMPRESSED = 81,
	PD_FINISHED_INIT = 82,
};

/* Feature bits of the file header (perf's HEADER_*). */
enum {
	PD_FEAT_TRACING_DATA = 1,
	PD_FEAT_BUILD_ID = 2,
	PD_FEAT_HOSTNAME = 3,
	PD_FEAT_OSRELEASE = 4,
	PD_FEAT_VERSION = 5,
	PD_FEAT_ARCH = 6,
	PD_FEAT_NRCPUS = 7,
	PD_FEAT_CPUDESC = 8,
	PD_FEAT_CPUID = 9,
	PD_FEAT_TOTAL_MEM = 10,
	PD_FEAT_CMDLINE = 11,
	PD_FEAT_EVENT_DESC = 12,
	PD_FEAT_SAMPLE_TIME = 21,
	PD_FEAT_CLOCKID = 23,
	PD_FEAT_CLOCK_DATA = 29,
	PD_FEAT_BITS = 256,
};

/* What an event's samples become. */
enum pd_role { PD_ROLE_OTHER, PD_ROLE_CPU, PD_ROLE_OFFCPU };

struct pd_attr {
	uint64_t type, config, sample_type, read_format, branch_sample_type;
	uint64_t sample_period;		/* or sample_freq with freq */
	uint64_t flags;			/* the bit field word of perf_event_attr */
	uint64_t regs_user, regs_intr;	/* masks */
	unsigned int nregs_user, nregs_intr;
	int regs_pick[SP_UNWIND_NREGS];	/* the unwinder's registers in regs_user, -1: absent */
	bool can_unwind;		/* regs_user holds every register the unwinder needs */
	enum pd_role role;
	char name[128];
};

/* Bits of perf_event_attr's flag word used here. */
#define PD_ATTR_FREQ (1ull << 10)
#define PD_ATTR_SAMPLE_ID_ALL (1ull << 18)
#define PD_ATTR_EXCLUDE_CALLCHAIN_KERNEL (1ull << 21)
#define PD_ATTR_EXCLUDE_CALLCHAIN_USER (1ull << 22)

/* One mapping of a process: [start, end) at file offset pgoff of module mod. */
struct pd_vma {
	uint64_t start, end, pgoff;
	uint64_t mod;			/* module id */
	int64_t bias;			/* ELF vaddr minus file offset */
	bool anon;
};

struct pd_proc {
	uint32_t pid, ppid;
	bool defined;			/* its process record is written */
	bool exec_pending;		/* exec'd: the unwinder forgets it at its first new mapping */
	char comm[32];
	struct pd_vma *vma;		/* sorted by start, not overlapping */
	size_t nvma, cap;
};

/* What the importer knows about a file named by a mapping. */
struct pd_file {
	char *path;
	uint8_t bid[SP_BUILD_ID_MAX];	/* from the build-id table or the record */
	unsigned int bid_len;
	struct sp_elf_info local;	/* the file on this machine */
	bool local_ok, checked, warned;
};

struct pd {
	const char *name;		/* for messages */
	int fd;
	bool pipe;
	struct sp_writer *w;
	const struct sp_perfdata_opts *o;
	struct sp_perfdata_stats *st;

	/* Buffered input: buf[pos..len) are the bytes at file offset off. */
	uint8_t *buf;
	size_t pos, len;
	uint64_t off, end;		/* end: where the records end (pipe: none) */
	bool eof;
	uint8_t *rec;			/* the current record, PD_REC_MAX bytes, aligned */
	uint64_t rec_off;

	struct pd_attr *attrs;
	unsigned int nattrs;
	size_t attrs_cap;
	struct sp_u64map ids;		/* sample id -> attr index */
	int id_pos, id_pos_other;	/* in u64s, from the start / the end; -1 none */
	uint64_t id_sample_type;	/* the first attr's, for sample_id_all */

	/* Header data, kept until the header record is written. */
	bool header_done;
	struct sp_buf hostname, osrelease, arch, version, cmdline;
	int64_t clockid;		/* -1 unknown */
	uint64_t clock_wall, clock_time;	/* CLOCK_DATA: wall and clock at one moment */
	uint64_t first_time;

	struct sp_u64map files;		/* hash of a path -> struct pd_file * */
	uint8_t kbid[SP_BUILD_ID_MAX];	/* [kernel.kallsyms] in the build-id table */
	unsigned int kbid_len;
	uint64_t kmod;			/* module id of the kernel, 0 until used */
	int ksyms_state;		/* 0 undecided, 1 named from ksyms, -1 unnamed */
	struct sp_kallsyms ksyms;	/* this kernel's, when the file's is this one */
	struct sp_u64map ksym_written;	/* symbol address -> 1: its ksym is written */
	struct sp_u64map mods;		/* hash of (path, pgoff) -> module id */
	struct sp_u64map procs;		/* pid -> struct pd_proc * */
	struct sp_unwinder *unw;

	struct sp_heap queue;		/* records waiting for their round */
	uint64_t seq, queued_bytes, max_time, round_limit;
	bool said_queue;

	bool said_unknown[SP_PERFDATA_NTYPES], said_feature[PD_FEAT_BITS];
	bool said_regs, said_abi, said_bad_sample;
};

/* A little-endian (native) read of n bytes at p. */
static inline uint64_t pd_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t pd_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* perfdata.c */
int pd_fail(struct pd *p, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int pd_pread(struct pd *p, uint64_t off, void *dst, size_t n);
const struct pd_attr *pd_attr_of_sample(const struct pd *p, const uint8_t *rec, size_t size);
/* The trailing sample_id of a non-sample record: its time and attr. */
uint64_t pd_other_time(const struct pd *p, const uint8_t *rec, size_t size);

int pd_dispatch_kernel(struct pd *p, const uint8_t *rec, size_t size);

/* perfdata_order.c */
int pd_queue(struct pd *p, const uint8_t *rec, size_t size);
int pd_round(struct pd *p);
int pd_flush(struct pd *p, uint64_t limit);
void pd_queue_free(struct pd *p);

/* perfdata_features.c */
int pd_read_features(struct pd *p, uint64_t feat_off, uint64_t file_size, const uint64_t *bits);
int pd_feature(struct pd *p, unsigned int feat, const uint8_t *d, size_t n, uint64_t off);
void pd_build_id_record(struct pd *p, const uint8_t *rec, size_t size);
int pd_write_header(struct pd *p);
struct pd_file *pd_file_of(struct pd *p, const char *path);

/* perfdata_procs.c */
struct pd_proc *pd_proc(struct pd *p, uint32_t pid);
void pd_on_comm(struct pd *p, const uint8_t *rec, size_t size, uint16_t misc);
void pd_on_fork(struct pd *p, const uint8_t *rec, size_t size);
void pd_on_exit(struct pd *p, const uint8_t *rec, size_t size);
void pd_on_mmap(struct pd *p, const uint8_t *rec, size_t size, bool mmap2, uint16_t misc);
const struct pd_vma *pd_vma_find(const struct pd_proc *pr, uint64_t addr);
uint64_t pd_kernel_mod(struct pd *p);
void pd_procs_free(struct pd *p);

/* perfdata_sample.c */
void pd_on_sample(struct pd *p, const uint8_t *rec, size_t size, uint16_t misc);
void pd_on_lost(struct pd *p, const uint8_t *rec, size_t size);
void pd_attr_setup(struct pd_attr *a);

/* perfdata_ksyms.c: before a kernel frame at addr is interned. */
void pd_ksym(struct pd *p, uint64_t addr);
void pd_ksyms_free(struct pd *p);

#endif
