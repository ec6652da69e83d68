// SPDX-License-Identifier: MIT
/*
 * The event vocabulary: names, groups and typed fields of each event kind,
 * and the groups' names as --events= lists spell them (sp-record, sp-tree).
 */
#include <string.h>

#include "events.h"

#define U SP_FT_UINT
#define I SP_FT_INT
#define S SP_FT_STR
#define X SP_FT_HEX
#define A SP_FT_ADDR
#define K SP_FT_STACK

static const struct sp_event_schema schemas[SP_EV_KIND_MAX] = {
	[SP_EV_PROC_FORK] = { "proc_fork", SP_EVG_PROC, 4,
		{ { "child_pid", U }, { "child_tid", U }, { "flags", U }, { "stack", K } } },
	[SP_EV_PROC_EXEC] = { "proc_exec", SP_EVG_PROC, 11,
		{ { "filename", S }, { "argv", S }, { "truncated", U }, { "old_pid", U },
		  { "nspid", U }, { "pid_ns", U }, { "mnt_ns", U }, { "cgroup_id", U },
		  { "start_boot_ns", U }, { "cgroup", S }, { "stack", K } } },
	[SP_EV_PROC_EXIT] = { "proc_exit", SP_EVG_PROC, 4,
		{ { "code", I }, { "signal", U }, { "thread", U }, { "stack", K } } },
	[SP_EV_PATH_OPEN] = { "path_open", SP_EVG_FILE, 7,
		{ { "path", S }, { "flags", X }, { "mode", X }, { "result", I },
		  { "dir", S }, { "truncated", U }, { "stack", K } } },
	[SP_EV_FILE_GETDENTS] = { "file_getdents", SP_EVG_FILE, 4,
		{ { "path", S }, { "fd", U }, { "result", I }, { "stack", K } } },
	[SP_EV_FILE_RENAME] = { "file_rename", SP_EVG_FILE, 5,
		{ { "old", S }, { "new", S }, { "flags", X }, { "result", I }, { "stack", K } } },
	[SP_EV_FILE_HARDLINK] = { "file_hardlink", SP_EVG_FILE, 4,
		{ { "old", S }, { "new", S }, { "result", I }, { "stack", K } } },
	[SP_EV_FILE_SYMLINK] = { "file_symlink", SP_EVG_FILE, 4,
		{ { "target", S }, { "link", S }, { "result", I }, { "stack", K } } },
	[SP_EV_FILE_CHMOD] = { "file_chmod", SP_EVG_FILE, 4,
		{ { "path", S }, { "mode", X }, { "result", I }, { "stack", K } } },
	[SP_EV_FILE_CHOWN] = { "file_chown", SP_EVG_FILE, 5,
		{ { "path", S }, { "uid", I }, { "gid", I }, { "result", I }, { "stack", K } } },
	[SP_EV_FILE_UNLINK] = { "file_unlink", SP_EVG_FILE, 4,
		{ { "path", S }, { "flags", X }, { "result", I }, { "stack", K } } },
	[SP_EV_SOCK_CONNECT] = { "sock_connect", SP_EVG_NET, 7,
		{ { "family", U }, { "addr", A }, { "port", U }, { "result", I },
		  { "fd", U }, { "path", S }, { "stack", K } } },
	[SP_EV_SOCK_BIND] = { "sock_bind", SP_EVG_NET, 7,
		{ { "family", U }, { "addr", A }, { "port", U }, { "result", I },
		  { "fd", U }, { "path", S }, { "stack", K } } },
	[SP_EV_SOCK_LISTEN] = { "sock_listen", SP_EVG_NET, 4,
		{ { "fd", U }, { "backlog", U }, { "result", I }, { "stack", K } } },
	[SP_EV_SOCK_ACCEPT] = { "sock_accept", SP_EVG_NET, 6,
		{ { "family", U }, { "addr", A }, { "port", U }, { "result", I },
		  { "fd", U }, { "stack", K } } },
	[SP_EV_DNS_REQ] = { "dns_req", SP_EVG_DNS, 6,
		{ { "name", S }, { "qtype", U }, { "server", A }, { "port", U },
		  { "id", U }, { "stack", K } } },
	[SP_EV_TASK_KILL] = { "task_kill", SP_EVG_PRIV, 4,
		{ { "target", I }, { "signal", U }, { "result", I }, { "stack", K } } },
	[SP_EV_PTRACE_CHECK] = { "ptrace_check", SP_EVG_PRIV, 4,
		{ { "request", U }, { "target", U }, { "result", I }, { "stack", K } } },
	[SP_EV_SB_MOUNT] = { "sb_mount", SP_EVG_PRIV, 6,
		{ { "source", S }, { "target", S }, { "fstype", S }, { "flags", X },
		  { "result", I }, { "stack", K } } },
	[SP_EV_SETID_CHANGE] = { "setid_change", SP_EVG_PRIV, 7,
		{ { "call", S }, { "old_uid", U }, { "new_uid", U }, { "old_gid", U },
		  { "new_gid", U }, { "result", I }, { "stack", K } } },
	[SP_EV_CAPABLE_CHECK] = { "capable_check", SP_EVG_PRIV, 3,
		{ { "cap", U }, { "result", I }, { "stack", K } } },
	[SP_EV_KERNEL_READ_FILE] = { "kernel_read_file", SP_EVG_PRIV, 4,
		{ { "path", S }, { "id", U }, { "result", I }, { "stack", K } } },
	[SP_EV_AUDIT] = { "audit", SP_EVG_RUNTIME, 3,
		{ { "name", S }, { "args", S }, { "runtime", U } } },
};

const struct sp_event_schema *sp_event_schema(uint64_t kind)
{
	if (kind >= SP_EV_KIND_MAX || !schemas[kind].name)
		return NULL;
	return &schemas[kind];
}

unsigned int sp_event_kind_by_name(const char *name)
{
	unsigned int k;

	for (k = 1; k < SP_EV_KIND_MAX; k++)
		if (schemas[k].name && !strcmp(schemas[k].name, name))
			return k;
	return SP_EV_NONE;
}

int sp_event_field_index(uint64_t kind, const char *name)
{
	const struct sp_event_schema *s = sp_event_schema(kind);
	unsigned int i;

	if (!s)
		return -1;
	for (i = 0; i < s->nfields; i++)
		if (!strcmp(s->fields[i].name, name))
			return (int)i;
	return -1;
}

static const struct {
	const char *name;
	unsigned int group;
} groups[] = {
	{ "proc", SP_EVG_PROC }, { "file", SP_EVG_FILE }, { "net", SP_EVG_NET },
	{ "dns", SP_EVG_DNS }, { "priv", SP_EVG_PRIV }, { "runtime", SP_EVG_RUNTIME },
};

unsigned int sp_event_group_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (!strcmp(name, groups[i].name))
			return groups[i].group;
	return 0;
}

uint64_t sp_event_group_kinds(unsigned int group)
{
	uint64_t m = 0;
	unsigned int k;

	for (k = 1; k < SP_EV_KIND_MAX; k++)
		if (schemas[k].name && (schemas[k].group & group))
			m |= UINT64_C(1) << k;
	return m;
}
