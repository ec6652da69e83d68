// SPDX-License-Identifier: MIT
/*
 * A readable rendering of every event kind of lib/stream/events.c (see
 * tree.h), by the kind's group. Its strings come in their text form
 * (escape.h: lib/render/tree.c keeps them so), so they are written as they
 * are.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "escape.h"
#include "events.h"
#include "treeP.h"

/* Linux's generic open flag bits that glibc does not export on its own. */
#define SP_O_SYNC_BIT	04000000	/* SP_O_SYNC_BIT: O_SYNC is this plus O_DSYNC */
#define SP_O_TMPFILE_BIT	020000000	/* SP_O_TMPFILE_BIT: O_TMPFILE adds O_DIRECTORY */

static void tb_add(struct sp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tb_add(struct sp_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sp_tree_vaddf(b, SP_EVENT_TEXT_MAX, fmt, ap);
	va_end(ap);
}

static const char *str(uint64_t v)
{
	return v ? (const char *)(uintptr_t)v : NULL;
}

/*
 * A string, in its text form (escape.h), quoted when it is empty or has a
 * blank, a quote or an escape; a quote inside is written \x22.
 */
static void tb_str(struct sp_buf *b, const char *s)
{
	const char *q;

	if (!s) {
		tb_add(b, "?");
		return;
	}
	if (*s && !strpbrk(s, " \"\\")) {
		tb_add(b, "%s", s);
		return;
	}
	tb_add(b, "\"");
	for (; (q = strchr(s, '"')); s = q + 1)
		tb_add(b, "%.*s\\x22", (int)(q - s), s);
	tb_add(b, "%s\"", s);
}

/* Field i is not the same in every event a collapsed line stands for. */
#define VARIES(i)	(varies & (1u << (i)))

/* " = 3", " = -ENOENT"; " = *" when the events of a collapsed line differ in it. */
static void tb_result(struct sp_buf *b, uint64_t v, bool var)
{
	int64_t r = (int64_t)v;
	const char *name;

	if (var) {
		tb_add(b, " = *");
		return;
	}
	if (r >= 0) {
		tb_add(b, " = %lld", (long long)r);
		return;
	}
	name = r >= -4095 ? strerrorname_np((int)-r) : NULL;
	if (name)
		tb_add(b, " = -%s", name);
	else
		tb_add(b, " = %lld", (long long)r);
}

/* An address and, with show_port, its port ("*" with port_var). */
static void tb_addr(struct sp_buf *b, uint64_t family, uint64_t v, uint64_t port, bool show_port,
		    bool port_var)
{
	const uint8_t *a = (const uint8_t *)(uintptr_t)v;
	char txt[INET6_ADDRSTRLEN];

	if (family == AF_UNIX) {
		tb_add(b, "unix");
		return;
	}
	if (!a || (a[0] != 4 && a[0] != 16)) {
		tb_add(b, "?");
	} else if (a[0] == 4) {
		inet_ntop(AF_INET, a + 1, txt, sizeof(txt));
		tb_add(b, "%s", txt);
	} else {
		inet_ntop(AF_INET6, a + 1, txt, sizeof(txt));
		tb_add(b, "[%s]", txt);
	}
	if (show_port && port_var)
		tb_add(b, ":*");
	else if (show_port)
		tb_add(b, ":%llu", (unsigned long long)port);
}

void sp_open_flags_text(struct sp_buf *b, uint64_t flags)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{ O_CREAT, "O_CREAT" }, { O_EXCL, "O_EXCL" }, { O_NOCTTY, "O_NOCTTY" },
		{ O_TRUNC, "O_TRUNC" }, { O_APPEND, "O_APPEND" }, { O_NONBLOCK, "O_NONBLOCK" },
		{ SP_O_SYNC_BIT, "O_SYNC" }, { O_DSYNC, "O_DSYNC" }, { O_ASYNC, "O_ASYNC" },
		{ O_DIRECT, "O_DIRECT" }, { O_LARGEFILE, "O_LARGEFILE" },
		{ SP_O_TMPFILE_BIT, "O_TMPFILE" }, { O_DIRECTORY, "O_DIRECTORY" },
		{ O_NOFOLLOW, "O_NOFOLLOW" }, { O_NOATIME, "O_NOATIME" },
		{ O_CLOEXEC, "O_CLOEXEC" }, { O_PATH, "O_PATH" },
	};
	static const char *const acc[] = { "O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE" };
	size_t start = b->len;
	uint64_t rest = flags;
	unsigned int i;

	if (!(flags & O_PATH))
		sp_buf_puts(b, acc[flags & O_ACCMODE]);
	rest &= ~(uint64_t)O_ACCMODE;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(rest & names[i].bit))
			continue;
		sp_buf_printf(b, "%s%s", b->len > start ? "|" : "", names[i].name);
		rest &= ~names[i].bit;
	}
	if (rest)
		sp_buf_printf(b, "%s0x%llx", b->len > start ? "|" : "", (unsigned long long)rest);
}

const char *sp_tree_signal_name(char buf[32], uint64_t sig)
{
	const char *n = sig < 65 ? sigabbrev_np((int)sig) : NULL;

	if (n)
		snprintf(buf, 32, "SIG%s", n);
	else
		snprintf(buf, 32, "signal %llu", (unsigned long long)sig);
	return buf;
}

static const char *qtype_name(uint64_t q)
{
	switch (q) {
	case 1: return "A";
	case 2: return "NS";
	case 5: return "CNAME";
	case 6: return "SOA";
	case 12: return "PTR";
	case 15: return "MX";
	case 16: return "TXT";
	case 28: return "AAAA";
	case 33: return "SRV";
	case 64: return "SVCB";
	case 65: return "HTTPS";
	case 255: return "ANY";
	default: return NULL;
	}
}

static const char *cap_name(uint64_t cap)
{
	static const char *const names[] = {
		"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
		"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
		"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
		"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
		"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
		"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
		"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
		"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
		"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
		"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
		"CAP_CHECKPOINT_RESTORE",
	};

	return cap < sizeof(names) / sizeof(names[0]) ? names[cap] : NULL;
}

static const char *ptrace_name(uint64_t req)
{
	switch (req) {
	case 0: return "PTRACE_TRACEME";
	case 16: return "PTRACE_ATTACH";
	case 0x4206: return "PTRACE_SEIZE";
	default: return NULL;
	}
}

static const char *read_file_id(uint64_t id)
{
	static const char *const names[] = { "unknown", "firmware", NULL, "module",
		"kexec-image", "kexec-initramfs", "security-policy", "x509-certificate" };

	return id < sizeof(names) / sizeof(names[0]) ? names[id] : NULL;
}

/* "/bin/sh -c 'cat x'": the file, then argv after argv[0] when argv[0] names it. */
static void tb_exec(struct sp_buf *b, const char *file, const char *argv, uint64_t truncated)
{
	const char *base, *sp, *a0;
	size_t n;

	tb_add(b, "%s", file ? file : "?");
	if (argv && *argv) {
		sp = strchr(argv, ' ');
		n = sp ? (size_t)(sp - argv) : strlen(argv);
		base = file ? strrchr(file, '/') : NULL;
		base = base ? base + 1 : file;
		a0 = memchr(argv, '/', n) ? argv : NULL;
		if ((base && n == strlen(base) && !strncmp(argv, base, n)) ||
		    (a0 && file && n == strlen(file) && !strncmp(argv, file, n))) {
			if (sp)
				tb_add(b, "%s", sp);
		} else {
			tb_add(b, " [%s]", argv);
		}
	}
	if (truncated)
		tb_add(b, " …");
}

/* Processes and threads: fork, exec, exit; false for a kind it does not know. */
static bool proc_text(struct sp_buf *b, uint64_t kind, const uint64_t *v, bool stable,
		      uint32_t varies)
{
	char sig[32];

	switch (kind) {
	case SP_EV_PROC_FORK:
		if ((v[2] & SP_FORK_THREAD) && !stable && VARIES(1))
			tb_add(b, "thread *");
		else if (v[2] & SP_FORK_THREAD)
			tb_add(b, stable ? "thread" : "thread %llu", (unsigned long long)v[1]);
		else if (!stable && VARIES(0))
			tb_add(b, "*");
		else
			tb_add(b, stable ? "child" : "%llu", (unsigned long long)v[0]);
		break;
	case SP_EV_PROC_EXEC:
		tb_exec(b, str(v[0]), str(v[1]), v[2]);
		break;
	case SP_EV_PROC_EXIT:
		if (v[1])
			tb_add(b, "%skilled by %s", v[2] ? "thread " : "",
			       sp_tree_signal_name(sig, v[1]));
		else
			tb_add(b, "%sexit %lld", v[2] ? "thread " : "", (long long)(int64_t)v[0]);
		break;
	default:
		return false;
	}
	return true;
}

/* Files: opens, renames, links, modes, owners, removals; false for a kind it does not know. */
static bool file_text(struct sp_buf *b, uint64_t kind, const uint64_t *v, bool stable,
		      uint32_t varies)
{
	struct sp_buf flags = SP_BUF_INIT;

	switch (kind) {
	case SP_EV_PATH_OPEN:
		if (str(v[4]) && str(v[0]) && str(v[0])[0] != '/')
			tb_add(b, "%s/", str(v[4]));
		tb_str(b, str(v[0]));
		sp_open_flags_text(&flags, v[1]);
		tb_add(b, " (%s", sp_buf_str(&flags));
		sp_buf_release(&flags);
		if (v[1] & (O_CREAT | SP_O_TMPFILE_BIT))
			tb_add(b, ", 0%llo", (unsigned long long)v[2]);
		tb_add(b, ")");
		if (v[5])
			tb_add(b, " …");
		if ((int64_t)v[3] >= 0 && stable)
			tb_add(b, " = fd");
		else
			tb_result(b, v[3], VARIES(3));
		break;
	case SP_EV_FILE_GETDENTS:
		tb_str(b, str(v[0]));
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_FILE_RENAME:
		tb_str(b, str(v[0]));
		tb_add(b, " → ");
		tb_str(b, str(v[1]));
		if (v[2])
			tb_add(b, " (flags 0x%llx)", (unsigned long long)v[2]);
		tb_result(b, v[3], VARIES(3));
		break;
	case SP_EV_FILE_HARDLINK:
		tb_str(b, str(v[1]));
		tb_add(b, " => ");
		tb_str(b, str(v[0]));
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_FILE_SYMLINK:
		tb_str(b, str(v[1]));
		tb_add(b, " -> ");
		tb_str(b, str(v[0]));
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_FILE_CHMOD:
		tb_str(b, str(v[0]));
		tb_add(b, " mode 0%llo", (unsigned long long)v[1]);
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_FILE_CHOWN:
		tb_str(b, str(v[0]));
		tb_add(b, " owner %lld:%lld", (long long)(int64_t)v[1], (long long)(int64_t)v[2]);
		tb_result(b, v[3], VARIES(3));
		break;
	case SP_EV_FILE_UNLINK:
		tb_str(b, str(v[0]));
		if (v[1] & AT_REMOVEDIR)
			tb_add(b, " (AT_REMOVEDIR)");
		tb_result(b, v[2], VARIES(2));
		break;
	default:
		return false;
	}
	return true;
}

/* Sockets and DNS requests; false for a kind it does not know. */
static bool net_text(struct sp_buf *b, uint64_t kind, const uint64_t *v, bool stable,
		     uint32_t varies)
{
	switch (kind) {
	case SP_EV_SOCK_CONNECT:
	case SP_EV_SOCK_BIND:
		tb_addr(b, v[0], v[1], v[2], true, VARIES(2));
		tb_result(b, v[3], VARIES(3));
		break;
	case SP_EV_SOCK_ACCEPT:
		/* the peer's port is ephemeral: not stable */
		tb_add(b, "from ");
		tb_addr(b, v[0], v[1], v[2], !stable, VARIES(2));
		if ((int64_t)v[3] >= 0 && stable)
			tb_add(b, " = fd");
		else
			tb_result(b, v[3], VARIES(3));
		break;
	case SP_EV_SOCK_LISTEN:
		if (stable)
			tb_add(b, "backlog %llu", (unsigned long long)v[1]);
		else if (VARIES(0))
			tb_add(b, "fd * backlog %llu", (unsigned long long)v[1]);
		else
			tb_add(b, "fd %llu backlog %llu", (unsigned long long)v[0],
			       (unsigned long long)v[1]);
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_DNS_REQ:
		tb_str(b, str(v[0]));
		if (qtype_name(v[1]))
			tb_add(b, " %s", qtype_name(v[1]));
		else
			tb_add(b, " type %llu", (unsigned long long)v[1]);
		if (v[2]) {
			tb_add(b, " via ");
			tb_addr(b, 0, v[2], v[3], true, VARIES(3));
		}
		break;
	default:
		return false;
	}
	return true;
}

/* Privileges, signals, mounts and the runtime's audit events; false for a kind it does not know. */
static bool priv_text(struct sp_buf *b, uint64_t kind, const uint64_t *v, bool stable,
		      uint32_t varies)
{
	char sig[32];

	switch (kind) {
	case SP_EV_TASK_KILL:
		if (stable)
			tb_add(b, "%s", sp_tree_signal_name(sig, v[1]));
		else if (VARIES(0))
			tb_add(b, "%s to *", sp_tree_signal_name(sig, v[1]));
		else
			tb_add(b, "%s to %lld", sp_tree_signal_name(sig, v[1]),
			       (long long)(int64_t)v[0]);
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_PTRACE_CHECK:
		if (ptrace_name(v[0]))
			tb_add(b, "%s", ptrace_name(v[0]));
		else
			tb_add(b, "request %llu", (unsigned long long)v[0]);
		if (!stable && VARIES(1))
			tb_add(b, " *");
		else if (!stable)
			tb_add(b, " %llu", (unsigned long long)v[1]);
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_SB_MOUNT:
		tb_str(b, str(v[0]));
		tb_add(b, " on ");
		tb_str(b, str(v[1]));
		if (str(v[2]))
			tb_add(b, " type %s", str(v[2]));
		if (v[3])
			tb_add(b, " (flags 0x%llx)", (unsigned long long)v[3]);
		tb_result(b, v[4], VARIES(4));
		break;
	case SP_EV_SETID_CHANGE:
		tb_add(b, "%s", str(v[0]) ? str(v[0]) : "set*id");
		if (v[1] != v[2])
			tb_add(b, " uid %llu→%llu", (unsigned long long)v[1], (unsigned long long)v[2]);
		if (v[3] != v[4])
			tb_add(b, " gid %llu→%llu", (unsigned long long)v[3], (unsigned long long)v[4]);
		tb_result(b, v[5], VARIES(5));
		break;
	case SP_EV_CAPABLE_CHECK:
		if (cap_name(v[0]))
			tb_add(b, "%s", cap_name(v[0]));
		else
			tb_add(b, "capability %llu", (unsigned long long)v[0]);
		tb_result(b, v[1], VARIES(1));
		break;
	case SP_EV_KERNEL_READ_FILE:
		tb_str(b, str(v[0]));
		if (read_file_id(v[1]))
			tb_add(b, " (%s)", read_file_id(v[1]));
		tb_result(b, v[2], VARIES(2));
		break;
	case SP_EV_AUDIT:
		tb_add(b, "%s", str(v[0]) ? str(v[0]) : "?");
		if (str(v[1]) && *str(v[1]))
			tb_add(b, " %s", str(v[1]));
		break;

	default:
		return false;
	}
	return true;
}

/* Two values of a field of type type: the same text, bytes or number. */
static bool field_same(enum sp_field_type type, uint64_t x, uint64_t y)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)x, *q = (const uint8_t *)(uintptr_t)y;

	if (x == y)
		return true;
	switch (type) {
	case SP_FT_STR:
		return p && q && !strcmp((const char *)p, (const char *)q);
	case SP_FT_ADDR:
	case SP_FT_BYTES:
		return p && q && p[0] == q[0] && !memcmp(p + 1, q + 1, p[0]);
	default:
		return false;
	}
}

uint32_t sp_event_fields_differ(uint64_t kind, const uint64_t *a, unsigned int na,
				const uint64_t *b, unsigned int nb)
{
	const struct sp_event_schema *es = sp_event_schema(kind);
	unsigned int i, n = na > nb ? na : nb;
	uint32_t d = 0;

	for (i = 0; i < n && i < SP_EVENT_MAX_FIELDS; i++)
		if (i >= na || i >= nb || !es ||
		    !field_same(es->fields[i].type, a[i], b[i]))
			d |= 1u << i;
	return d;
}

void sp_event_text(struct sp_buf *b, uint64_t kind, const uint64_t *vals, unsigned int nvals,
		   bool stable)
{
	sp_event_text_run(b, kind, vals, nvals, stable, 0);
}

void sp_event_text_run(struct sp_buf *b, uint64_t kind, const uint64_t *vals, unsigned int nvals,
		       bool stable, uint32_t varies)
{
	const struct sp_event_schema *es = sp_event_schema(kind);
	uint64_t v[SP_EVENT_MAX_FIELDS] = { 0 };
	unsigned int i;
	bool known;

	sp_buf_reset(b);
	for (i = 0; i < nvals && i < SP_EVENT_MAX_FIELDS; i++)
		v[i] = vals[i];
	switch (es ? es->group : 0) {
	case SP_EVG_PROC:
		known = proc_text(b, kind, v, stable, varies);
		break;
	case SP_EVG_FILE:
		known = file_text(b, kind, v, stable, varies);
		break;
	case SP_EVG_NET:
	case SP_EVG_DNS:
		known = net_text(b, kind, v, stable, varies);
		break;
	case SP_EVG_PRIV:
	case SP_EVG_RUNTIME:
		known = priv_text(b, kind, v, stable, varies);
		break;
	default:
		known = false;
		break;
	}
	if (!known)
		tb_add(b, "kind %llu", (unsigned long long)kind);
}
