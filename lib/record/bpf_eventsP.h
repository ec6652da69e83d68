/* SPDX-License-Identifier: MIT */
/*
 * bpf_eventsP.h - the state the files of the "events" source share
 * (bpf_events.h is its public face). Read it as the map of the source:
 *
 *   bpf_events.c           the sp_source vtable: creating, starting,
 *                          polling, finishing, describing and freeing the
 *                          source; its loss counters; sp-record --check
 *   bpf_events_opts.c      --events lists and the argp child
 *   bpf_events_features.c  what the kernel offers above the attach
 *                          strategies (fentry, BPF LSM, tracepoints with
 *                          BTF), probed once per boot and cached
 *   bpf_events_load.c      loading bpf/events.bpf.c with the best attach
 *                          strategy the kernel allows (tp_btf, else raw_tp,
 *                          else classic tracepoints), attaching it, and
 *                          seeding its map of recorded processes
 *   bpf_events_decode.c    ring buffer records into SP_REC_EVENT records
 *                          with typed fields (events.h)
 */
#ifndef STACKPULSE_RECORD_BPF_EVENTSP_H
#define STACKPULSE_RECORD_BPF_EVENTSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf_events.h"
#include "procfs.h"
#include "buf.h"
#include "source.h"
#include "writer.h"
#include "../../bpf/events.h"	/* struct sp_bpf_ev, SP_BPF_NSTR */

/* The groups bpf/events.bpf.c records (runtime events come from spans). */
#define KERNEL_GROUPS (SP_EVG_PROC | SP_EVG_FILE | SP_EVG_NET | SP_EVG_DNS | SP_EVG_PRIV)

/* A system call behind an event kind; dns: only its payload is looked at
 * (a DNS query or not), the call itself is no event. */
struct sys_kind {
	int nr;
	unsigned char kind;
	unsigned char dns;
	const char *name;
};

extern const struct sys_kind sp_ev_sys_kinds[];
extern const size_t sp_ev_nsys_kinds;

/* What the kernel offers above and below the strategies, probed once
 * (bpf_events_features.c); the layout of the cache file. */
struct kfeat {
	char magic[8];
	char boot_id[40];
	uint32_t euid;
	int32_t fentry_err;		/* 0, or -errno of a do-nothing fentry load */
	int32_t lsm_err;		/* same for a BPF LSM program */
	uint8_t tp_exec;		/* btf_trace_sched_process_exec exists */
	uint8_t tp_cap;			/* btf_trace_cap_capable exists */
	uint8_t pad[2];
};

/* Where the source is: nothing tried yet, recording, off (warned), or
 * off when the user named an event (fatal). */
enum { ST_NEW = 0, ST_READY, ST_OFF, ST_FATAL };

struct sp_events;		/* the skeleton of bpf/events.bpf.c */
struct ring_buffer;
struct bpf_link;

struct ev_priv {
	struct sp_events_opts o;
	int state;
	struct sp_events *skel;
	uint64_t cg_ids[SP_BPF_CGROUPS];	/* o.cgroups' slots' ids in its map (0: none) */
	struct ring_buffer *rb;
	struct sp_emit *out;
	const char *how;		/* strategy in use */
	char why[320];			/* why events are off */
	struct sp_buf tried;		/* strategies that failed and why: " how(why)"... */
	struct sp_buf probes;		/* top rungs probed: fentry, LSM */
	uint64_t avail;			/* kinds this kernel gives */
	uint64_t active;		/* kinds recorded */
	bool tracefs_held;		/* sp_tracefs_hold() while loading */
	bool mounted_tracefs;		/* by sp-record: said in the header */
	const char *entry;		/* what gives entry-time data: "setid-tracepoints",
					 * "sys_enter", NULL = nothing attached */
	struct bpf_link *setid_links[8];	/* on_setid_tp on each setid call */
	int nsetid_links;
	int setid_err;			/* try_strategy(): attaching those failed */
	struct bpf_link *exit_links[64];	/* on_sys_exit_call on each wanted call */
	int nexit_links;
	int exit_err;			/* try_strategy(): attaching those failed */
	const char *exit_how;		/* "sys-exit-tracepoints" or NULL (raw sys_exit) */
	bool started;
	int ncpu;
	uint64_t *lost_seen;		/* per CPU */
	uint64_t lost_read_ns;
	uint64_t drain_ns;
	uint64_t delivered, lost;
	int err;
	char *text;			/* argv and DNS name scratch */
	size_t text_cap;
	struct sp_writer *str_w;	/* the writer last_str[] ids are of */
	uint64_t last_str[SP_BPF_NSTR];	/* string i of the last record, as an id */
	uint64_t cg_id;			/* the cgroup id last looked up, its path */
	bool cg_ok;
	char cg_path[SP_PROC_CGROUP_MAX + 1];
};

/* bpf_events_features.c */
void sp_ev_kfeat_get(struct kfeat *f);
/* May this process load tracing programs at all? 0 or -errno, in
 * microseconds, without any BTF. */
int sp_ev_probe_tracing_allowed(void);

/* bpf_events_load.c: the ring buffer, the BPF objects and links, gone. */
void sp_ev_unload(struct ev_priv *p);
/* Add the target's processes and their descendants to the BPF map of
 * recorded processes (or record them all, -a). */
void sp_ev_seed_pids(struct ev_priv *p, const struct sp_target *t);
/* The map of cgroups as o.cgroups' slots are now (some found, some
 * removed since) (bpf_events.c). */
void sp_ev_sync_cgroups(struct ev_priv *p);

/* bpf_events_decode.c: fill the index of sp_ev_sys_kinds[] by call
 * number (once, before the first record). */
void sp_ev_sys_kind_index(void);
/* The ring buffer's callback: one record to an SP_REC_EVENT through
 * p->out (ctx). 0, or -1 when emitting failed. */
int sp_ev_on_record(void *ctx, void *data, size_t size);

#endif
