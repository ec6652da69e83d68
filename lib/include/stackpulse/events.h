/* SPDX-License-Identifier: MIT */
/*
 * events.h - the kernel and runtime event vocabulary: each event kind, its
 * group (for --events=) and its typed fields. The spool stores an event's
 * fields in the order listed here; docs/events.md documents them.
 *
 * Compatibility: a kind's number never changes; fields are only ever appended
 * to a kind (older readers ignore the extra ones, newer readers read missing
 * trailing fields as 0).
 */
#ifndef STACKPULSE_EVENTS_H
#define STACKPULSE_EVENTS_H

#include <stdint.h>

#include "record.h"

enum sp_event_kind {
	SP_EV_NONE = 0,
	SP_EV_PROC_FORK = 1,
	SP_EV_PROC_EXEC = 2,
	SP_EV_PROC_EXIT = 3,
	SP_EV_PATH_OPEN = 4,
	SP_EV_FILE_GETDENTS = 5,
	SP_EV_FILE_RENAME = 6,
	SP_EV_FILE_HARDLINK = 7,
	SP_EV_FILE_SYMLINK = 8,
	SP_EV_FILE_CHMOD = 9,
	SP_EV_FILE_CHOWN = 10,
	SP_EV_FILE_UNLINK = 11,
	SP_EV_SOCK_CONNECT = 12,
	SP_EV_SOCK_BIND = 13,
	SP_EV_SOCK_LISTEN = 14,
	SP_EV_SOCK_ACCEPT = 15,
	SP_EV_DNS_REQ = 16,
	SP_EV_TASK_KILL = 17,
	SP_EV_PTRACE_CHECK = 18,
	SP_EV_SB_MOUNT = 19,
	SP_EV_SETID_CHANGE = 20,
	SP_EV_CAPABLE_CHECK = 21,
	SP_EV_KERNEL_READ_FILE = 22,
	SP_EV_AUDIT = 23,	/* a runtime's audit hook (Python sys.audit) */
	SP_EV_KIND_MAX,
};

/* Event groups, as bits, for --events=. */
#define SP_EVG_PROC	(1u << 0)
#define SP_EVG_FILE	(1u << 1)
#define SP_EVG_NET	(1u << 2)
#define SP_EVG_DNS	(1u << 3)
#define SP_EVG_PRIV	(1u << 4)
#define SP_EVG_RUNTIME	(1u << 5)

/* Types of event fields (and of record fields, lib/stream/schema.h). */
enum sp_field_type {
	SP_FT_UINT = 1,		/* unsigned integer */
	SP_FT_INT = 2,		/* signed integer (results, exit codes) */
	SP_FT_STR = 3,		/* string id; JSON shows the string */
	SP_FT_HEX = 4,		/* unsigned, JSON shows "0x..." */
	SP_FT_ADDR = 5,		/* 4 or 16 bytes of network address; JSON shows text */
	SP_FT_BYTES = 6,	/* bytes; JSON shows hex */
	SP_FT_TIME = 7,		/* ns, delta-coded in the spool */
	SP_FT_ID = 8,		/* implicit dense id: in JSON, not in the spool */
	SP_FT_STRVAL = 9,	/* a string record's own bytes */
	SP_FT_FLAGS = 10,	/* unsigned; JSON shows the number */
	SP_FT_TEXT = 11,	/* inline text (struct sp_bytes); JSON shows a string */
	SP_FT_STACK = 12,	/* stack id (uint): an event's interpreted stack */
};

struct sp_event_field {
	const char *name;
	enum sp_field_type type;
};

struct sp_event_schema {
	const char *name;	/* "path_open" */
	unsigned int group;	/* SP_EVG_* */
	unsigned int nfields;
	struct sp_event_field fields[SP_EVENT_MAX_FIELDS];
};

/* The schema of a kind, or NULL for an unknown kind. */
const struct sp_event_schema *sp_event_schema(uint64_t kind);
/* The kind of an event name, or SP_EV_NONE. */
unsigned int sp_event_kind_by_name(const char *name);
/* Index of a field of a kind by name, or -1. */
int sp_event_field_index(uint64_t kind, const char *name);
/* The SP_EVG_* bit of a group's name ("proc", "file", "net", "dns", "priv",
 * "runtime"), or 0. */
unsigned int sp_event_group_by_name(const char *name);
/* The kinds of the groups in groups (SP_EVG_* bits), one bit (1 << kind)
 * each. */
uint64_t sp_event_group_kinds(unsigned int groups);

/* Fork flags (field "flags" of proc_fork). */
#define SP_FORK_THREAD	(1u << 0)	/* a new thread, not a process */

#endif
