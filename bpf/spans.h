/* SPDX-License-Identifier: MIT */
/*
 * spans.h - records the spans BPF program (bpf/spans.bpf.c) hands to its
 * loader (lib/record/bpf_spans.c) through the ring buffer 'spans'.
 *
 * A span event carries up to three strings (class, method, file; for Python
 * file and function; for raise the error class and file). Each string is
 * identified by its user address and a hash of its bytes; its bytes travel
 * only the first time the pair is seen in a process (the BPF side keeps an
 * LRU cache of what it sent), so most events are the fixed head only.
 */
#ifndef SP_BPF_SPANS_SHARED_H
#define SP_BPF_SPANS_SHARED_H

#define SP_BS_NSTR	3
#define SP_BS_STRLEN	128	/* longer strings are cut */
#define SP_BS_MAX_PIDS	8192
#define SP_BS_MAX_SPECS	4096	/* USDT operand specs of uprobe_multi links */

enum sp_bs_kind {
	SP_BS_START = 1,	/* a span starts */
	SP_BS_STOP = 2,		/* a span stops */
	SP_BS_RAISE = 3,	/* an exception is raised */
	SP_BS_AUDIT = 4,	/* a Python audit event: str[0] name, str[1] first arg */
	SP_BS_FORK = 5,		/* a tracked process forked pid (stopped when flags has STOPPED) */
	SP_BS_EXEC = 6,		/* a tracked process exec'd (stopped when flags has STOPPED) */
	SP_BS_EXIT = 7,		/* a tracked process exited */
	SP_BS_NAME = 8,		/* a runtime hook made a name: its strings, all sent */
	SP_BS_FIBER = 9,	/* a fiber switch: addr[0] from, addr[1] to, addr[2] fresh */
	SP_BS_RING = 10,	/* a thread's span ring: addr[0] its address (struct sp_ring),
				 * addr[1] its process's start (ns after boot), addr[2]
				 * its time namespace's CLOCK_MONOTONIC offset (ns, signed:
				 * the clock of the ring's stamps is the kernel's plus it) */
	SP_BS_CHUNK = 11,	/* entries of a span ring: addr[0] the ring, addr[1] the
				 * offset as SP_BS_RING's, cookie the first
				 * entry's number, line how many (up to SP_RING_CHUNK) follow
				 * the head; flags SP_BSF_LAST: the ring's last */
	SP_BS_RING_WAKE = 12,	/* half a span ring is unread: read the rings now
				 * (addr[0] the ring, addr[2] as SP_BS_RING's) */
	SP_BS_DLOPEN = 13,	/* a tracked process's ld.so changed its list of
				 * libraries (dlopen, dlclose): look at its mappings */
	SP_BS_FIND = 14,	/* -a: a process not tracked hit a runtime hook's
				 * shared link: judge and take it now */
};

/* Probes, also the index into the hit counters. The attach cookie is
 * (gen << 32 | probe) for USDT probes, with bits 8-31 the number of the
 * marker's location for uprobe_multi links, and (gen << 32 | func) for uprobes
 * (func: the --span-func index); gen is the image generation of the
 * process it was attached to (struct sp_bs_proc): a probe of an image the
 * process has left by exec is ignored until the loader detaches it. */
enum sp_bs_probe {
	SP_PR_RUBY_METHOD_ENTRY = 0,
	SP_PR_RUBY_METHOD_RETURN,
	SP_PR_RUBY_CMETHOD_ENTRY,
	SP_PR_RUBY_CMETHOD_RETURN,
	SP_PR_RUBY_RAISE,
	SP_PR_PY_FUNCTION_ENTRY,
	SP_PR_PY_FUNCTION_RETURN,
	SP_PR_PY_AUDIT,
	SP_PR_SP_BEGIN,
	SP_PR_SP_END,
	SP_PR_UPROBE_ENTRY,
	SP_PR_UPROBE_RETURN,
	SP_PR_RB_HOOK_CALL,	/* the runtime hooks' markers (runtime/hook) */
	SP_PR_RB_HOOK_RETURN,
	SP_PR_PY_HOOK_CALL,
	SP_PR_PY_HOOK_RETURN,
	SP_PR_RT_NAME,
	SP_PR_RB_HOOK_FIBER,
	SP_PR_PY_HOOK_AUDIT,
	SP_PR_PY_HOOK_RAISE,	/* a Python frame unwound by an exception */
	SP_PR_RT_RING,		/* a thread's span ring is made (rt__ring) */
	SP_PR_RT_FLUSH,		/* half a span ring is unread, or its thread ends (rt__flush) */
	SP_PR_PY_HOOK_CORO,	/* span rings only, never a marker: the next mark of the
				 * thread is a coroutine's frame: arg[0] the coroutine
				 * (generator object), arg[1] 1 if it suspends there */
	SP_PR_MAX,
};

/*
 * How to fetch the operands of a USDT probe attached by a uprobe_multi link
 * (value of the map 'usdt_specs', key: bits 8-31 of the attach cookie),
 * parsed by the loader from the probe's ELF note as libbpf parses it: the
 * layout of libbpf's struct __bpf_usdt_spec (<bpf/usdt.bpf.h>), so that
 * one BPF function reads both.
 */
#define SP_BS_USDT_CONST	0	/* val_off is the value */
#define SP_BS_USDT_REG		1	/* the register at reg_off */
#define SP_BS_USDT_DEREF	2	/* the word at the register + val_off */
struct sp_bs_usdt_arg {
	__u64 val_off;
	__u32 type;		/* SP_BS_USDT_* */
	__s16 reg_off;		/* offset in struct pt_regs */
	__u8 sign;		/* a signed operand */
	__u8 shift;		/* 64 - 8 * its size in bytes */
};

struct sp_bs_usdt_spec {
	struct sp_bs_usdt_arg args[12];
	__u64 cookie;		/* unused: the link's cookie says it */
	__s16 nargs;
	__u16 pad[3];
};

/* enum sp_bs_event flags */
#define SP_BSF_STOPPED		(1u << 0)	/* the process waits for SIGCONT */
#define SP_BSF_PLAIN		(1u << 1)	/* SP_BS_EXEC: an image known to have no
						 * probes (map 'images'): not stopped */
#define SP_BSF_SHARED_MM	(1u << 2)	/* SP_BS_FORK: a CLONE_VM child (vfork): not
						 * stopped, gets no probes */
#define SP_BSF_SENT(i)		(1u << (4 + (i)))	/* str[i] carries bytes */
#define SP_BSF_UNREAD(i)	(1u << (8 + (i)))	/* str[i] not read by BPF (a literal of
							 * the binary, or a page not resident):
							 * the loader reads it by address */
#define SP_BSF_LAST		(1u << 12)	/* SP_BS_CHUNK: the ring's last: it is gone */
#define SP_BSF_FAULT		(1u << 13)	/* SP_BS_CHUNK: its entries (line of them)
						 * could not be read: lost */
#define SP_BSF_BOOT		(1u << 14)	/* a span ring's start mark flagged
						 * SP_RING_BOOT (sp-record's own, never BPF's) */

struct sp_bs_event {
	__u64 time_ns;			/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 addr[SP_BS_NSTR];		/* user address of each string, 0 = none */
	__u64 hash[SP_BS_NSTR];		/* hash of its bytes (see sp_bs_hash); a
					 * marker's head event: hash[0] its address */
	__u64 cookie;			/* uprobe: --span-func index; FORK, EXEC:
					 * the process's new image generation */
	__s64 line;
	__u32 kind;			/* enum sp_bs_kind */
	__u32 probe;			/* enum sp_bs_probe */
	__u32 pid, tid;			/* tgid and thread id */
	__u32 ppid;			/* SP_BS_FORK: the parent */
	__u32 flags;			/* SP_BSF_* */
	__u16 len[SP_BS_NSTR];		/* bytes of str[i] without the NUL */
	__u16 pad;
	char str[SP_BS_NSTR][SP_BS_STRLEN];	/* only sent when a SENT flag is set */
};

/* Size of an event without the string bytes. */
#define SP_BS_HEAD_SIZE	__builtin_offsetof(struct sp_bs_event, str)

/* Value of the map 'tgids' (key: tgid). */
struct sp_bs_proc {
	__u32 gen;		/* image generation: 1 at fork, +1 at each exec */
	__u32 probed;		/* the loader attached probes to this image:
				 * SP_BS_PROBED: stop its fork children until
				 * they get theirs; SP_BS_PROBED_SHARED: its
				 * fork children are covered from their first
				 * instruction (links of generation 0) */
};

#define SP_BS_PROBED		1
#define SP_BS_PROBED_SHARED	2

/* Key of the map 'images': an executable the loader found without
 * probes for the modes asked (no runtime, no stackpulse USDT notes).
 * An exec of such a file is not stopped. */
struct sp_bs_imgkey {
	__u64 ino;
	__s64 mtime;		/* seconds */
	__u32 dev;		/* kernel encoding: major << 20 | minor */
	__u32 pad;
};

/* Key of the map 'strcache': the string addresses of an event of a process
 * (class, method, file: the strings of one method), value: struct
 * sp_bs_strval, the hashes of the bytes last sent from them. One lookup
 * per event, not one per string: in a large map each is a cache miss. */
struct sp_bs_strkey {
	__u64 addr[SP_BS_NSTR];
	__u32 pid;
	__u32 start;		/* the process's start (low bits of its ns after
				 * boot): a pid reused is another process, whose
				 * strings the reader does not know yet */
};

struct sp_bs_strval {
	__u64 hash[SP_BS_NSTR];
};

/*
 * A span ring: where a runtime hook (runtime/hook/ring.h) writes the
 * span marks of one thread when sp-record asks for it, instead of firing
 * a marker per mark. Only its thread writes entries; sp-record reads them
 * from the process's memory (process_vm_readv) and writes back how far it
 * has read ('consumed', process_vm_writev). The thread never overwrites
 * what sp-record has not read while sp-record reads the ring: it waits for
 * room (bounded), so nothing is lost. When half the ring is unread it
 * fires rt__flush (ring, 0, 0, 0), which only wakes sp-record; at the
 * thread's end rt__flush (ring, 0, 0, 1), and at its exit or exec BPF
 * itself, copies what is unread into SP_BS_CHUNK records. Each entry has a
 * number (its position in the thread's sequence), so one delivered twice
 * is dropped.
 *
 * One sp-record at a time owns a ring: its 'claim' names it (its pid and
 * start time, SP_RING_CLAIM()). Only the owner writes 'consumed' and
 * 'reader', so the thread waits for one reader only; another sp-record
 * reads the ring beside it without writing, and counts what the thread
 * overwrote before it read it (docs/spans.md). The thread zeroes the
 * claim when it starts the ring; an owner that is gone is taken over.
 * Everything here is the traced process's memory: sp-record checks it
 * (lib/record/span_rings.c).
 */
#define SP_RING_CAP	4096u	/* entries; a multiple of SP_RING_CHUNK */
#define SP_RING_HALF	(SP_RING_CAP / 2)
#define SP_RING_CHUNK	128u	/* entries per SP_BS_CHUNK record, aligned */
#define SP_RING_MAGIC	0x32525053u	/* "SPR2" */

/* struct sp_ring_head reader */
#define SP_RING_READING	1u	/* sp-record reads the ring: wait for room */
#define SP_RING_LEFT	2u	/* sp-record is done: do not wait */
#define SP_RING_ASKED	3u	/* the hook: sp-record asked for rings and should
				 * come to read this one: wait, a little */

/* The line of a runtime hook's start mark (ring entry or marker) for a
 * frame that was open when the hook began to mark: reconstructed, not
 * seen starting. No real line is below -1. */
#define SP_RT_LINE_SYNTHETIC(line)	(-2 - (line))
/* The largest line a hook encodes so (a larger one is written as 0,
 * unknown: -2 - line must not overflow). */
#define SP_RT_LINE_MAX			0x3fffffff

/* The most open frames a hook marks so, the innermost: the stops of the
 * frames beyond them find no start (sp-record counts them apart). */
#define SP_RT_OPEN_MAX	256

/* In a ring entry's probe: a reconstructed start the hook wrote because a
 * recorder came (runtime/hook/ring.h, sp_rt_resync_due(): the frames open
 * then, outermost first). sp-record keeps them only for a ring it did not
 * read from its start (its thread's outer frames started unseen); in a
 * ring it read from its start they repeat starts it has, and are dropped. */
#define SP_RING_RESYNC	0x80000000u

/* In a ring entry's probe: the Ruby hook's start mark for a frame open
 * when it loaded: StackPulse's own (RubyGems' Kernel#require of the
 * activator, StackPulseActivate.activate, its require of the hook, the C
 * require under each), not the program's. sp-record counts their depth
 * (SP_BSF_BOOT) but records neither them, nor their stops, nor what they
 * call. Only in a ring: a hook without one does not mark them. */
#define SP_RING_BOOT	0x40000000u

struct sp_ring_entry {
	__u64 time;		/* CLOCK_MONOTONIC, as bpf_ktime_get_ns() (in a
				 * time namespace, plus its offset: SP_BS_RING) */
	__u64 arg[3];		/* a marker's %rdi, %rsi, %rdx (addr[] of an event) */
	__s32 line;		/* its %ecx */
	__u32 probe;		/* enum sp_bs_probe of the marker it stands for */
};

struct sp_ring_head {
	__u64 head;		/* the thread: entries written; entry n is at
				 * e[n % SP_RING_CAP] */
	__u64 notified;		/* the thread: entries rt__flush told of */
	__u64 consumed;		/* sp-record: entries it has read */
	__u32 magic;		/* SP_RING_MAGIC */
	__u32 pid, tid;		/* its thread */
	__u32 reader;		/* SP_RING_ASKED, then sp-record's READING, LEFT */
	__u64 announced;	/* the thread: when it last fired rt__ring */
	__u64 claim;		/* the owning sp-record (SP_RING_CLAIM), 0: none */
	__u32 features;		/* the thread's hook: SP_RING_F_* (0: an older hook) */
	__u32 pad;
};

/* struct sp_ring_head features: the hook writes a run of the frames open
 * when a recorder comes (SP_RING_RESYNC). sp-record waits for it only in a
 * ring that says so: an older hook's ring is delivered whole at once. */
#define SP_RING_F_RUNS	1u

/* A reader's claim: its pid (up to 2^22, the kernel's largest) and its
 * start time (clock ticks after boot, /proc/PID/stat), which tells it
 * from a later process with the same pid. */
#define SP_RING_CLAIM_PID_BITS	22
#define SP_RING_CLAIM(pid, start)	((__u64)(start) << SP_RING_CLAIM_PID_BITS | (__u64)(pid))

struct sp_ring {
	struct sp_ring_head h;
	struct sp_ring_entry e[SP_RING_CAP];
};

#define SP_BS_CHUNK_SIZE	(SP_BS_HEAD_SIZE + SP_RING_CHUNK * sizeof(struct sp_ring_entry))

/* Value of the map 'rings' (key: tid): the span ring of a thread. */
struct sp_bs_ring {
	__u64 addr;
	__u32 pid;
	__u32 pad;
};

#endif
