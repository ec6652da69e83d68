/* SPDX-License-Identifier: MIT */
/*
 * bpf_spansP.h - the state the files of the "spans" source share
 * (bpf_spans.h is its public face). Read it as the map of the source:
 *
 *   bpf_spans.c          the sp_source vtable: creating (which starts the
 *                        BPF load), starting (or deferring) the tracking,
 *                        polling, finishing with its summary, describing
 *                        and freeing the source
 *   bpf_spans_opts.c     --spans and --span-func: the argp child
 *   bpf_spans_env.c      the runtime activators' directory and the
 *                        environment of the command sp-record starts
 *   bpf_spans_elf.c      which binaries have probes for the modes asked:
 *                        their USDT providers (lib/elf/usdt.c), the
 *                        runtime libraries they need, scripts' interpreters
 *   bpf_spans_load.c     loading bpf/spans.bpf.c, in a thread that the
 *                        source's creation starts (the preload)
 *   bpf_spans_procs.c    the processes of the tree: their bookkeeping at
 *                        fork, exec and exit, probe health, detaching by
 *                        the reaper threads, finding them at the start
 *   bpf_spans_attach.c   what one process image gets: runtime probes or
 *                        hooks, markers, libraries loaded later (ld.so)
 *   bpf_spans_usdt.c     how a USDT probe is attached: uprobe_multi links
 *                        with our own operand specs, else libbpf's links
 *   bpf_spans_funcs.c    --span-func: resolving the globs, the uprobes
 *   bpf_spans_all.c      -a: the processes that carry a runtime hook
 *   bpf_spans_decode.c   the ring buffer's events (and span rings'
 *                        entries) into span, event, fiber and lost records
 *
 * Functions that cross files have the prefix sp_bs_; none is public.
 */
#ifndef STACKPULSE_RECORD_BPF_SPANSP_H
#define STACKPULSE_RECORD_BPF_SPANSP_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

#include "bpf_spans.h"
#include "hashmap.h"
#include "procfs.h"
#include "source.h"
#include "span_rings.h"
#include "spans.h"
#include "spans.skel.h"

/* union bpf_attr's link_create for a uprobe_multi link (Linux 6.6), which
 * the system headers here predate. */
#define SP_BPF_TRACE_UPROBE_MULTI	48
struct sp_uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, uflags, pid;
};

/*
 * What a process's marks may make sp-record keep, whatever its span rings
 * say (docs/spans.md): strings looked up by address, per process and new
 * ones in all, and fibers (with their open-span counts) per process.
 */
#define SP_SPANS_ADDR_STRS_PER_PROC	16384u
#define SP_SPANS_ADDR_STRS_LIVE		262144u	/* of the processes known */
#define SP_SPANS_ADDR_STRS_MAX		65536u	/* new strings, in all */
#define SP_SPANS_FIBERS_PER_PROC	65536u

/* A Ruby hook's C-method probes attached later than this after the hook
 * was in (its first mark wakes sp-record: 0.7-4 ms here, while Ruby reads
 * the program's file) are said to have missed the program's C methods. */
#define SP_SPANS_CMETHOD_LAG_NS		5000000ull
#define SP_SPANS_FIBERS_LIVE		262144u	/* of the processes known */

/* The most of a process's maps read (sp_procfs_maps()): its owner decides
 * how long they are, and it may be held meanwhile. */
#define SP_BS_MAPS_BYTES		(4u << 20)

struct usdt_probe_cache;	/* bpf_spans_usdt.c */

/* An attachment to destroy: libbpf's link, or the file descriptor of a
 * uprobe_multi link (libbpf 1.1 cannot make those). */
struct bs_link {
	struct bpf_link *link;
	int fd;			/* -1 with a libbpf link */
	bool usdt;		/* a libbpf USDT link: its manager is shared */
};

struct bs_att {
	uint32_t probe;		/* enum sp_bs_probe */
	uint32_t func;		/* --span-func index for uprobes */
	struct bpf_program *prog;	/* attached to, for a fork child's copy */
	struct bs_link link;
	bool multi;		/* by a uprobe_multi link */
	uint32_t group;		/* attach_markers(): the markers of one link, which
				 * the first of them holds; 0: a link of its own */
	bool shared;		/* by a hook file's shared link (c->shared): no
				 * link of its own */
	const char *args;	/* with group: the operands their notes had to
				 * have (fixed registers; a string that lives
				 * for ever, for fork children's links) */
	uint64_t dev, ino;	/* the file probed (0: not known): a fork
				 * child's probes go on that file or none */
	char bin[];		/* the binary */
};

/* A --span-func function resolved to one symbol. */
struct bs_func {
	char *bin;
	char *name;
	/* the uprobe's file offset (the symbol's, past entry_skip()): libbpf is
	 * given the offset, not the name, so that it never opens the file
	 * itself (a path another user may have made a FIFO since) */
	uint64_t off;
	/* the name the uprobes are given: "/proc/self/fd/N" of the file read
	 * at the start, kept open (c->func_fds), so that a file put at the
	 * path since gets no breakpoint at an offset that is not its own */
	char *attach;
	uint64_t name_id, bin_id, base_id;	/* interned strings */
};

struct bs_proc {
	uint32_t pid;
	uint32_t gen;			/* image generation (struct sp_bs_proc) */
	bool exited;
	unsigned int runtimes;		/* SP_SPANS_RUBY/PYTHON/USDT bits found */
	unsigned int announced;		/* runtimes with a SP_REC_RUNTIME written */
	struct bs_att **att;
	size_t natt, catt;
	struct sp_u64map strs;		/* mix(addr, hash) -> string id */
	struct sp_u64map depth;		/* depth_key() -> open spans */
	/* Runs of reconstructed starts (a hook's frames open when it or a
	 * recorder came): depth_key() -> the deepest of them, and tid -> 1
	 * for a thread with one; what a stop without a start is counted as */
	struct sp_u64map rebuilt, rebuilt_tid;
	/* Ruby fibers (the hook's rb__fiber), each with its own open spans:
	 * per thread the fiber it runs (0 = its root fiber), the root's id
	 * once known, and the fibers seen starting (mix(tid, fiber)). */
	bool fibers;
	struct sp_u64map fib_cur, fib_root, fib_known;
	struct sp_u64map coro_next;	/* tid -> coroutine of its next span mark
					 * (SP_PR_PY_HOOK_CORO): one per thread */
	bool py_active;			/* the Python activator announced itself */
	bool py_replaced;		/* its profile function was replaced: said */
	bool cm_pending;		/* C-method probes wait for the first method entry */
	bool cm_refused;		/* C-method probes not set: they crash its Ruby */
	/* Its runtime's own method probes, without StackPulse's hook
	 * (attached with -p): they fire only while tracing is on in it
	 * (a TracePoint, a profile function), or for the frames C code
	 * enters (Python's generators): its runtime record says so */
	bool unhooked;
	/* The Ruby hook's frames open when it loaded (SP_RING_BOOT):
	 * StackPulse's own, not recorded; on depth_key() boot_key, the
	 * depths 1..boot_open are theirs until their stops come. */
	uint64_t boot_key;
	uint32_t boot_open;
	uint32_t late_probes;		/* a fork child not held: 1 << probe of its
					 * raise and audit probes, attached once it has
					 * lived SP_DL_AFTER_NS (sp_bs_attach_dl_due()) */
	bool env_probes;		/* its probes depend on its environment (the
					 * activator), not only on its file's: not
					 * marked plain (sp_bs_mark_plain()) */
	bool running;			/* this image ran before sp-record found it
					 * (-p, -a, a command found late; their
					 * fork children): not stopped at its exec */
	bool libs_unverified;		/* its runtime libraries were found by search
					 * at exec: its maps not looked at yet
					 * (sp_bs_verify_libs()) */
	struct { uint64_t hash, dev, ino; bool py; } found[4];	/* the
					 * libruby and libpython files the search
					 * found: their paths' hashes, devices and
					 * inodes (0: none) */
	uint8_t verify_tries;		/* looks at its maps before ld.so mapped them */
	uint64_t image_ns;		/* its exec, or its fork (a child of a
					 * held image): what a late move of its
					 * probes missed is from then on */
	uint64_t late_dev[2], late_ino[2];	/* the files its parent's were
					 * on (libruby, libpython): its own */
	bool hook_audit;		/* its hook's py__audit marker was asked for: a
					 * hook file's shared link may have it for
					 * another process (bpf_spans_attach.c) */
	bool ret_pending;		/* python:function__return waits for the first
					 * function__entry (attached, no activator) */
	bool attached;			/* running before the recording (-p): no activator */
	bool late;			/* the command's, found running when the BPF
					 * object came (--spans=auto, deferred) */
	bool py_none;			/* a Python attached with neither hook nor USDT
					 * probes: announced with mode "none" */
	bool no_spans;			/* a runtime whose spans never came: counted */
	bool gone_seen;			/* exited: forget_gone() saw it once */
	bool untracked;			/* tracked for a process it was not
					 * (sp_bs_untrack()): what BPF sends of
					 * it is dropped until it is forgotten */
	uint64_t gone_ns;		/* when its exit was read */
	uint32_t ppid;			/* forked from, until it execs: same addresses */
	uint32_t by_addr;		/* strings looked up by address (str_from_user) */
	bool capped;			/* told it reached SP_SPANS_*_PER_PROC */
	bool unprobed;			/* a USDT probe refused: counted in c->unprobed */
	char rlib[2][PATH_MAX];		/* ruby, python binary holding the probes */
	uint64_t hits[SP_PR_MAX];	/* events read per probe (probe health) */
	struct bs_link dl;		/* its ld.so's _dl_debug_state (dlopen) */
	char exe[PATH_MAX];		/* the executable and where it is mapped: */
	struct { uint64_t start, end, off; } map[8];	/* strings of gone processes */
	unsigned int nmap;
	uint64_t exe_dev, exe_ino;	/* the file those mappings are of (maps) */
};

/*
 * Detaching a uprobe waits for the kernel's grace periods (tens of ms
 * each, more on a loaded machine); the reapers' waits overlap. Until its
 * link is gone, a detached process's probe costs every hit of the same
 * probe in the live processes a call: a fork storm's links must go as
 * fast as they come.
 */
#define SP_REAPERS	4

struct bs_ctx {
	const struct sp_spans_opts *o;
	struct sp_spans *skel;
	struct ring_buffer *rb;
	struct sp_emit *out;		/* during start/poll/finish */
	struct bs_proc **procs;
	size_t nprocs, cprocs;
	struct sp_u64map by_pid;	/* pid -> index + 1 of the live process */
	struct bs_func *funcs;
	size_t nfuncs, cfuncs;
	int *func_fds;			/* the --span-func files, open to the end */
	size_t nfunc_fds, cfunc_fds;
	uint64_t last_poll_ns;
	uint64_t addr_strs;		/* new strings str_from_user() made */
	uint64_t addr_live;		/* by_addr of the processes known */
	uint64_t fibers_live;		/* fib_known and depth entries of those */
	uint64_t lost_seen, lost_since;
	uint64_t spans, raises, audits, orphans, fiber_switches;
	uint64_t boot_raises;		/* Ruby's before its hook was in: not kept */
	uint64_t boot_frames;		/* the Ruby hook's own open when it loaded */
	uint64_t boot_calls;		/* calls made by those, not recorded either */
	uint64_t cmethod_lag_ns;	/* the longest from a Ruby hook's being in to
					 * its C-method probes' attach (cm_pending) */
	bool cmethod_lag_said;
	uint64_t orphans_seen;		/* of orphans: in a lost record already */
	uint64_t orphans_deep;		/* of orphans: beyond a run of the most
					 * frames a hook rebuilds (SP_RT_OPEN_MAX) */
	uint64_t orphans_fiber;		/* of orphans: of a fiber other than the
					 * one a run was made in */
	unsigned int unprobed;		/* processes denied a USDT link (atomic) */
	unsigned int unprobed_seen;	/* of those: in a lost record already */
	uint64_t idle;			/* probes without hits and without a reason */
	bool releasing;			/* spans_free: only let stopped processes go */
	unsigned int found;		/* runtimes seen anywhere */
	int err;			/* fatal error inside the ring callback */
	/*
	 * Detaching a uprobe waits for an RCU grace period in the kernel
	 * (50-90 ms each here): links of an image a process left (exec,
	 * exit) are destroyed by reaper threads, so the process and the
	 * loop go on at once. The stale probes are ignored in BPF meanwhile
	 * (image generation). libbpf's USDT manager is not thread-safe:
	 * every attach and detach of a libbpf USDT link holds bpf_lock (and
	 * only those: a uprobe_multi link is a file descriptor of ours).
	 */
	pthread_mutex_t bpf_lock, rq_lock;
	pthread_cond_t rq_cond;
	pthread_t reaper[SP_REAPERS];
	unsigned int reapers;		/* threads running reaper_main() */
	bool reaper_on, reaper_stop;
	struct bs_link *rq;
	size_t nrq, crq;
	bool no_multi;			/* no uprobe_multi links: USDT links */
	bool stale_warned;		/* a fork child's file was replaced: said */
	bool other_lib_warned;		/* ld.so took a runtime library the search
					 * did not find: said */
	uint64_t other_libs;		/* processes it happened to */
	uint32_t groups;		/* attach_markers() links made */
	uint64_t plain_execs, stopped_execs;	/* execs released by BPF / looked at */
	uint64_t forks, stopped_forks;		/* forks, and those held for probes */
	uint64_t probed_images;			/* images that got probes */
	uint32_t *pids;			/* the target */
	bool *pid_cmd;			/* started by sp-record */
	unsigned int npids;
	bool deferred;			/* auto: waiting for the preloaded object */
	uint64_t defer_since;
	bool finishing;
	int epfd;			/* s->fd while deferred: preload.efd, then the ring */
	char unavailable[256];
	/*
	 * Marker locations attached by uprobe_multi links, numbered from 1 in
	 * their cookies (bits 8-31): the binary and the file offset, so that
	 * a marker's address (sent by BPF) gives where its binary is loaded,
	 * and its string literals can be read from the file when the process
	 * is gone (a library's: sp-record never sees its mapping).
	 */
	struct bs_loc {
		char *bin;	/* NULL: its file closed (bpf_spans_root.c) */
		uint64_t off;
		uint64_t dev, ino;	/* the file's: a name may stand for
					 * another (its owner replaced it) */
		bool spec;
	} *locs;
	size_t nlocs, clocs;
	struct sp_u64map loc_ids;	/* mix(hash(bin), dev, ino, off) -> number */
	uint32_t *loc_free;		/* numbers of locations forgotten */
	size_t nloc_free, cloc_free;
	uint64_t loc_collections;	/* all numbers given: the unused came back */
	struct sp_span_rings rings;	/* the runtime hooks' span rings */
	struct { char path[PATH_MAX]; uint64_t dev, ino, size, ctime_ns, off; } ldso[2];
					/* ld.so's _dl_debug_state, by file
					 * (off 0: none) */
	unsigned int nldso;
	uint64_t dlopens, late_libs;	/* ld.so's changes looked at; libraries
					 * given probes that way */
	int guard_fd;			/* the guardian's pipe (hold_guard.h) */
	/* The runtime hooks' markers, one link per hook file for every
	 * process that maps it (bpf_spans_attach.c, attach_shared()) */
	struct bs_shared {
		char path[PATH_MAX];
		uint64_t dev, ino;	/* the file's: one link per file, whatever
					 * path a process maps it by */
		int fd, n, found[16];
		uint32_t group, probes[16];
	} shared[4];
	unsigned int nshared;
	unsigned int usdt_live;		/* libbpf USDT links (atomic) */
	bool usdt_full;			/* too many of them: said so */
	bool dl_warned;			/* an ld.so could not be probed: said so */
	/* Processes whose ld.so probe waits (attach_dl_later()) */
	/* processes waiting for their ld.so probe (and late probes), or for
	 * the look at their maps (verify: of image generation gen) */
	struct dl_wait { struct bs_proc *p; uint64_t due; uint32_t gen; bool verify; } *dlw;
	size_t ndlw, cdlw;
	struct usdt_probe_cache *ucache;	/* USDT locations by file and probe */
	size_t nucache;
	/* Files of processes in other mount namespaces, kept open and
	 * named /proc/self/fd/N (bpf_spans_root.c) */
	struct bs_root {
		dev_t dev;
		ino_t ino;
		int fd;
		uint64_t idle_ns;	/* unused since (0: used at the last sweep) */
		char path[PATH_MAX];
	} *roots;
	size_t nroots, croots;
	size_t roots_idle;		/* of roots: unused, kept a while */
	uint64_t roots_due;		/* the next sweep for those */
	bool roots_full;		/* more than it keeps: said so */
	bool unmapped_warned;		/* a mapped file that cannot be reached: said */
	bool rings_unread;		/* SP_SPAN_RINGS_UNREAD=1 (tests): only what
					 * BPF copies at the threads' ends */
	/* Processes that exited: their bookkeeping goes at the next poll, as
	 * their other threads' last ring chunks may come after the exit. */
	struct bs_proc **gone;
	size_t ngone, cgone;
	/* -a: the processes that carry a runtime hook (bpf_spans_all.c) */
	bool all;
	uint64_t all_next_ns, all_pass, all_found;
	unsigned int all_refusals;	/* refused hooks said (-v) */
	bool all_seeding;		/* a seed whose pid is not checked again
					 * yet: runtimes not announced */
	struct sp_u64map all_seen;	/* pid -> start ticks, refusal said, pass
					 * it was last listed in (bpf_spans_all.c) */
	uint32_t *all_asked;		/* pids BPF asked for (SP_BS_FIND), to be
					 * judged at the end of this poll */
	size_t nasked, cap_asked;
	uint64_t all_asked_found;	/* of c->all_found: taken when asked */
};

/* "provider:name" of each probe (enum sp_bs_probe). */
extern const char *const sp_bs_probe_names[SP_PR_MAX];

static inline bool sp_bs_is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* bpf_spans_load.c: the BPF object, and the thread that loads it early. */
bool sp_bs_may_bpf(void);
bool sp_bs_has_prepare_exec(void);
struct sp_spans *sp_bs_load_skel(char *why, size_t size);
void sp_bs_preload_start(const struct sp_spans_opts *o, bool now);
bool sp_bs_preload_running(void);
bool sp_bs_preload_ready(void);
int sp_bs_preload_fd(void);
struct sp_spans *sp_bs_preload_take(char *why, size_t size);

/* bpf_spans_root.c: the name under which the host reaches path as
 * process pid names it (path itself in our mount namespace) into out; -1
 * when it cannot (gone, not a regular file). sp_bs_root_name(): path as
 * the process named it, for such a name. */
int sp_bs_host_path(struct bs_ctx *c, uint32_t pid, const char *path, char *out, size_t size);
/* The same for the file of mapping m of pid: in our mount namespace, its
 * path when the file there is the one mapped (device and inode), else
 * (replaced or removed since it was mapped: a package upgraded under a
 * running service, "... (deleted)") the mapping's own file, opened through
 * /proc/PID/map_files and kept as a container's are; always so with
 * always (no path a user may change between this look and the attach).
 * -1 when it cannot (gone, said when the file cannot be reached). */
int sp_bs_mapped_path(struct bs_ctx *c, uint32_t pid, const struct sp_proc_map *m, bool always,
		      char *out, size_t size);
/* The same for pid's executable, exe as /proc/PID/exe names it (through
 * that link when another file, or none, is at its path). */
int sp_bs_exe_path(struct bs_ctx *c, uint32_t pid, const char *exe, char *out, size_t size);
const char *sp_bs_root_name(const struct bs_ctx *c, const char *path);
/* sp_bs_roots_sweep(): closes the files no process known has used for
 * SP_BS_ROOT_IDLE_NS (at once when more than half of SP_BS_ROOT_FILES are
 * open); now: CLOCK_MONOTONIC ns. */
#define SP_BS_ROOT_FILES	256
#define SP_BS_ROOT_IDLE_NS	10000000000ull
void sp_bs_roots_sweep(struct bs_ctx *c, uint64_t now);
void sp_bs_roots_release(struct bs_ctx *c);

/* bpf_spans_elf.c */
bool sp_bs_runtime_lib_name(const char *name);
int sp_bs_providers_cached(const char *path);
bool sp_bs_command_has_probes(const struct sp_spans_opts *o);

/* bpf_spans_procs.c */
struct bs_proc *sp_bs_proc_get(struct bs_ctx *c, uint32_t pid);
struct bs_proc *sp_bs_proc_new(struct bs_ctx *c, uint32_t pid);
void sp_bs_att_add_link(struct bs_proc *p, uint32_t probe, uint32_t func, const char *bin,
			struct bpf_program *prog, struct bs_link link, bool multi,
			const char *args);
void sp_bs_att_add(struct bs_proc *p, uint32_t probe, uint32_t func, const char *bin,
		   struct bpf_program *prog, struct bpf_link *link);
void sp_bs_link_destroy(struct bs_ctx *c, struct bs_link l);
void sp_bs_detach_link(struct bs_ctx *c, struct bs_link l, bool sync);
void sp_bs_detach_all_how(struct bs_ctx *c, struct bs_proc *p, bool sync);
int sp_bs_emit_unprobed(struct bs_ctx *c, struct bs_proc *p, uint64_t time);
int sp_bs_emit_health(struct bs_ctx *c, struct bs_proc *p, uint64_t time, bool only_if_hit);
void sp_bs_proc_capped(struct bs_proc *p, const char *what, unsigned int bound);
void sp_bs_spans_state_release(struct bs_ctx *c, struct bs_proc *p);
void sp_bs_cont(struct bs_ctx *c, uint32_t pid);
int sp_bs_on_proc_event(struct bs_ctx *c, const struct sp_bs_event *e);
void sp_bs_forget_gone(struct bs_ctx *c, uint64_t now);
void sp_bs_untrack(struct bs_ctx *c, struct bs_proc *p);
int sp_bs_seed(struct bs_ctx *c, uint32_t pid, const char *self, bool cmd, bool walk);
/* Only its BPF part: pid tracked (its marks kept) from now on. 0, or -1
 * (said). */
int sp_bs_track(struct bs_ctx *c, uint32_t pid, bool cmd);
#define SP_BS_SEED_KIDS_MAX	4096	/* processes the -p ones started, taken at the start */
int sp_bs_seed_descendants(struct bs_ctx *c, const char *self);
void sp_bs_ctx_release(struct bs_ctx *c);

/* bpf_spans_all.c */
bool sp_bs_maps_line_hook(const char *line);
/* an old pid judged already: its start time read again one pass in this many */
#define SP_BS_ALL_RECHECK	25
/* an entry of c->all_seen: start ticks, judged when BPF asked for it,
 * refusal said, pass last listed in */
#define SP_BS_ALL_SEEN(t, asked, said, pass) \
	((uint64_t)(t) << 18 | (uint64_t)(asked) << 17 | (uint64_t)(said) << 16 | \
	 ((uint64_t)(pass) & 0xffff))
bool sp_bs_all_read_start(const uint64_t *seen, uint64_t young, uint64_t pass, uint32_t pid);
bool sp_bs_all_judge(const uint64_t *seen, uint64_t t, uint64_t young);
int sp_bs_all_take(struct bs_ctx *c, uint32_t pid, uint64_t t, const char *self);
int sp_bs_all_scan(struct bs_ctx *c, uint64_t now);
/* -a: the hooks of sp-record's own runtime directory given their shared
 * links at the start (bpf_spans_attach.c). */
void sp_bs_share_installed(struct bs_ctx *c);
/* BPF asked for pid (SP_BS_FIND): judged and taken at the next
 * sp_bs_all_asked(), as a pass would. */
void sp_bs_all_ask(struct bs_ctx *c, uint32_t pid);
/* Judge and take the pids asked for since the last call, each process
 * once. How many were taken, or -1 (c->err). */
int sp_bs_all_asked(struct bs_ctx *c);

/* bpf_spans_attach.c */
void sp_bs_attach_image(struct bs_ctx *c, struct bs_proc *p, bool at_exec);
void sp_bs_announce(struct bs_ctx *c, struct bs_proc *p);
bool sp_bs_has_probe(const struct bs_proc *p, uint32_t probe);
void sp_bs_attach_like(struct bs_ctx *c, struct bs_proc *child, const struct bs_proc *parent,
		       bool probes);
void sp_bs_attach_cmethod(struct bs_ctx *c, struct bs_proc *p, const char *bin);
void sp_bs_scan_libs(struct bs_ctx *c, struct bs_proc *p);
void sp_bs_attach_dl(struct bs_ctx *c, struct bs_proc *p, bool scan);
void sp_bs_attach_dl_later(struct bs_ctx *c, struct bs_proc *p);
void sp_bs_attach_late(struct bs_ctx *c, struct bs_proc *p);
void sp_bs_attach_dl_due(struct bs_ctx *c, uint64_t now);
void sp_bs_verify_libs(struct bs_ctx *c, struct bs_proc *p, bool last);
/* bpf_spans_procs.c: tell BPF p's image generation and whether it has
 * probes now (running: p is not held, may have exec'd since) */
void sp_bs_set_tracked(struct bs_ctx *c, struct bs_proc *p, bool running);
/* remember p's executable as one without probes (BPF releases its execs) */
void sp_bs_mark_plain(struct bs_ctx *c, struct bs_proc *p);
void sp_bs_verify_later(struct bs_ctx *c, struct bs_proc *p);

/* bpf_spans_env.c: the environment of process pid (its first
 * SP_BS_ENVIRON_MAX - 1 bytes, NUL-terminated; empty when it cannot be
 * read), to free; *cut: it is longer (what is past the cut is unknown).
 * The value of variable name in it, or NULL: the first (as getenv()), or
 * with last the last (as ld.so takes LD_LIBRARY_PATH). */
#define SP_BS_ENVIRON_MAX	65536
char *sp_bs_proc_environ(uint32_t pid, size_t *len, bool *cut);
const char *sp_bs_env_get(const char *env, size_t len, const char *name, bool last);

/* bpf_spans_usdt.c */
/* path: the file's name (the cache's key, with its device, inode and
 * mtime); file: what is read (path, or a descriptor's name of it) */
int sp_bs_offsets_cached(const char *path, const char *file, const char *provider,
			 const char *name, const char *args, uint64_t *offs, int max);
int sp_bs_attach_usdt_how(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *prog,
			  const char *bin, const char *provider, const char *name,
			  uint32_t probe, const struct bs_att *like);
int sp_bs_attach_multi(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *prog,
		       const char *bin, const char *provider, const char *name, uint32_t probe,
		       const struct bs_att *like);
bool sp_bs_probe_multi(struct bs_ctx *c);
/* sp_bs_loc_id(): the number of a marker location (struct bs_loc) in the
 * file named bin whose device and inode are dev, ino (another file at that
 * name gets numbers, operands and literals of its own), 0 when there are
 * too many. sp_bs_usdt_forget(): what is known of the file named bin,
 * which is closed (its name may stand for another file next). */
uint32_t sp_bs_loc_id(struct bs_ctx *c, const char *bin, uint64_t dev, uint64_t ino,
		      uint64_t off);
void sp_bs_usdt_forget(struct bs_ctx *c, const char *bin);
void sp_bs_attach_any(struct bs_ctx *c, struct bs_proc *p, struct bpf_program *multi,
		      struct bpf_program *usdt, const char *bin, const char *provider,
		      const char *name, uint32_t probe, const struct bs_att *like);
/* file: what is read and probed (bin, or a /proc/self/fd/N of it); bin,
 * dev, ino: its name and its file's, for the locations' ids */
int sp_bs_marker_link(struct bs_ctx *c, const char *bin, const char *file, uint64_t dev,
		      uint64_t ino, const char *args, const uint32_t *probes, int n, uint32_t pid,
		      uint32_t gen, int *found);
void sp_bs_attach_markers(struct bs_ctx *c, struct bs_proc *p, const char *bin,
			  const char *args, const uint32_t *probes, int n,
			  const struct bs_att *like);

/* bpf_spans_funcs.c */
int sp_bs_resolve_funcs(struct bs_ctx *c);
void sp_bs_attach_funcs(struct bs_ctx *c, struct bs_proc *p);

/* bpf_spans_decode.c */
int sp_bs_on_event(void *ctx, void *data, size_t size);
int sp_bs_ring_put(void *ctx, uint32_t pid, uint32_t tid, const struct sp_ring_entry *re);
void sp_bs_copy_strs(struct bs_ctx *c, struct bs_proc *child, const struct bs_proc *parent);
int sp_bs_emit_lost(struct bs_ctx *c, uint64_t now);

#endif
