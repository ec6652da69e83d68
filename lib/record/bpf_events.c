// SPDX-License-Identifier: MIT
/*
 * The "events" source: loads bpf/events.bpf.c with the best attach strategy
 * the kernel allows (tp_btf, else raw_tp, else classic tracepoints), keeps
 * its map of recorded processes seeded, and turns its ring buffer into
 * SP_REC_EVENT records with typed fields, and its per-CPU loss counters into
 * SP_REC_LOST records.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_events.h"
#include "procfs.h"
#include "safefile.h"
#include "sp.h"
#include <linux/types.h>
#include "../../bpf/events.h"	/* struct sp_bpf_ev */
#include "events.skel.h"

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef AT_REMOVEDIR
#define AT_REMOVEDIR 0x200
#endif

#define KERNEL_GROUPS (SP_EVG_PROC | SP_EVG_FILE | SP_EVG_NET | SP_EVG_DNS | SP_EVG_PRIV)

/* System calls behind each event kind; dns = only its payload is looked
 * at (a DNS query or not), the call itself is no event. */
static const struct sys_kind {
	int nr;
	unsigned char kind;
	unsigned char dns;
	const char *name;
} sys_kinds[] = {
	{ __NR_open, SP_EV_PATH_OPEN, 0, "open" },
	{ __NR_openat, SP_EV_PATH_OPEN, 0, "openat" },
	{ __NR_openat2, SP_EV_PATH_OPEN, 0, "openat2" },
	{ __NR_creat, SP_EV_PATH_OPEN, 0, "creat" },
	{ __NR_getdents, SP_EV_FILE_GETDENTS, 0, "getdents" },
	{ __NR_getdents64, SP_EV_FILE_GETDENTS, 0, "getdents64" },
	{ __NR_rename, SP_EV_FILE_RENAME, 0, "rename" },
	{ __NR_renameat, SP_EV_FILE_RENAME, 0, "renameat" },
	{ __NR_renameat2, SP_EV_FILE_RENAME, 0, "renameat2" },
	{ __NR_link, SP_EV_FILE_HARDLINK, 0, "link" },
	{ __NR_linkat, SP_EV_FILE_HARDLINK, 0, "linkat" },
	{ __NR_symlink, SP_EV_FILE_SYMLINK, 0, "symlink" },
	{ __NR_symlinkat, SP_EV_FILE_SYMLINK, 0, "symlinkat" },
	{ __NR_chmod, SP_EV_FILE_CHMOD, 0, "chmod" },
	{ __NR_fchmod, SP_EV_FILE_CHMOD, 0, "fchmod" },
	{ __NR_fchmodat, SP_EV_FILE_CHMOD, 0, "fchmodat" },
	{ __NR_fchmodat2, SP_EV_FILE_CHMOD, 0, "fchmodat2" },
	{ __NR_chown, SP_EV_FILE_CHOWN, 0, "chown" },
	{ __NR_fchown, SP_EV_FILE_CHOWN, 0, "fchown" },
	{ __NR_lchown, SP_EV_FILE_CHOWN, 0, "lchown" },
	{ __NR_fchownat, SP_EV_FILE_CHOWN, 0, "fchownat" },
	{ __NR_unlink, SP_EV_FILE_UNLINK, 0, "unlink" },
	{ __NR_unlinkat, SP_EV_FILE_UNLINK, 0, "unlinkat" },
	{ __NR_rmdir, SP_EV_FILE_UNLINK, 0, "rmdir" },
	{ __NR_connect, SP_EV_SOCK_CONNECT, 0, "connect" },
	{ __NR_bind, SP_EV_SOCK_BIND, 0, "bind" },
	{ __NR_listen, SP_EV_SOCK_LISTEN, 0, "listen" },
	{ __NR_accept, SP_EV_SOCK_ACCEPT, 0, "accept" },
	{ __NR_accept4, SP_EV_SOCK_ACCEPT, 0, "accept4" },
	{ __NR_sendto, SP_EV_DNS_REQ, 1, "sendto" },
	{ __NR_sendmsg, SP_EV_DNS_REQ, 1, "sendmsg" },
	{ __NR_sendmmsg, SP_EV_DNS_REQ, 1, "sendmmsg" },
	{ __NR_kill, SP_EV_TASK_KILL, 0, "kill" },
	{ __NR_tkill, SP_EV_TASK_KILL, 0, "tkill" },
	{ __NR_tgkill, SP_EV_TASK_KILL, 0, "tgkill" },
	{ __NR_ptrace, SP_EV_PTRACE_CHECK, 0, "ptrace" },
	{ __NR_mount, SP_EV_SB_MOUNT, 0, "mount" },
	{ __NR_setuid, SP_EV_SETID_CHANGE, 0, "setuid" },
	{ __NR_setgid, SP_EV_SETID_CHANGE, 0, "setgid" },
	{ __NR_setreuid, SP_EV_SETID_CHANGE, 0, "setreuid" },
	{ __NR_setregid, SP_EV_SETID_CHANGE, 0, "setregid" },
	{ __NR_setresuid, SP_EV_SETID_CHANGE, 0, "setresuid" },
	{ __NR_setresgid, SP_EV_SETID_CHANGE, 0, "setresgid" },
	{ __NR_setfsuid, SP_EV_SETID_CHANGE, 0, "setfsuid" },
	{ __NR_setfsgid, SP_EV_SETID_CHANGE, 0, "setfsgid" },
};

#define NSYS_KINDS (sizeof(sys_kinds) / sizeof(sys_kinds[0]))

/* sys_kinds[] by call number (index + 1, 0 = none): one load per record
 * instead of a walk over the table. Filled once, before any use. */
static unsigned char sys_kind_of[SP_BPF_NR_MAX];

static void sys_kind_index(void)
{
	size_t i;

	if (sys_kind_of[sys_kinds[0].nr])
		return;
	for (i = NSYS_KINDS; i-- > 0;)
		if (sys_kinds[i].nr >= 0 && sys_kinds[i].nr < SP_BPF_NR_MAX)
			sys_kind_of[sys_kinds[i].nr] = (unsigned char)(i + 1);
}

static const struct sys_kind *sys_kind(uint32_t nr)
{
	unsigned int i = nr < SP_BPF_NR_MAX ? sys_kind_of[nr] : 0;

	return i ? &sys_kinds[i - 1] : NULL;
}

/* ---- --events lists ---- */

uint64_t sp_events_default_kinds(void)
{
	uint64_t m = 0;
	unsigned int k;

	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		const struct sp_event_schema *s = sp_event_schema(k);

		if (s && (s->group & (SP_EVG_PROC | SP_EVG_FILE | SP_EVG_NET | SP_EVG_DNS)))
			m |= SP_EV_BIT(k);
	}
	return m;
}

static const struct {
	const char *name;
	unsigned int group;
} groups[] = {
	{ "proc", SP_EVG_PROC }, { "file", SP_EVG_FILE }, { "net", SP_EVG_NET },
	{ "dns", SP_EVG_DNS }, { "priv", SP_EVG_PRIV }, { "runtime", SP_EVG_RUNTIME },
};

static uint64_t group_kinds(unsigned int group)
{
	uint64_t m = 0;
	unsigned int k;

	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		const struct sp_event_schema *s = sp_event_schema(k);

		if (s && (s->group & group))
			m |= SP_EV_BIT(k);
	}
	return m;
}

int sp_events_parse(const char *list, uint64_t *kinds, uint64_t *named, char *err,
		    size_t errsize)
{
	uint64_t m = 0, n = 0;
	const char *p = list;
	bool first = true;

	if (!*list) {
		snprintf(err, errsize, "empty event list: use 'none' to record no events");
		return -1;
	}
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool minus = *p == '-';
		char word[64];
		uint64_t w = 0;
		unsigned int k;
		size_t i;

		if (minus) {
			p++;
			len--;
		}
		if (!len || len >= sizeof(word)) {
			snprintf(err, errsize, "invalid item '%.*s' in event list",
				 (int)(len + minus), p - minus);
			return -1;
		}
		memcpy(word, p, len);
		word[len] = 0;
		if (first && minus)
			m = sp_events_default_kinds();
		first = false;
		if (!strcmp(word, "all"))
			w = group_kinds(KERNEL_GROUPS);
		else if (!strcmp(word, "none"))
			w = 0, m = minus ? m : 0;
		else if (!strcmp(word, "default"))
			w = sp_events_default_kinds();
		for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
			if (!strcmp(word, groups[i].name))
				w = group_kinds(groups[i].group);
		k = sp_event_kind_by_name(word);
		if (k) {
			w = SP_EV_BIT(k);
			if (!minus)
				n |= w;
			else
				n &= ~w;
		} else if (!w && strcmp(word, "none")) {
			snprintf(err, errsize, "unknown event or group '%s' (groups: all, none, "
				 "default, proc, file, net, dns, priv, runtime; or an event name "
				 "such as path_open)", word);
			return -1;
		}
		if (minus)
			m &= ~w;
		else
			m |= w;
		p += len;
		if (*p == ',')
			p++;
	}
	*kinds = m;
	*named = n & m;
	return 0;
}

size_t sp_events_format(uint64_t kinds, char *buf, size_t size)
{
	size_t len = 0;
	unsigned int k;

	if (size)
		buf[0] = 0;
	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		const struct sp_event_schema *s = sp_event_schema(k);
		int n;

		if (!s || !(kinds & SP_EV_BIT(k)))
			continue;
		n = snprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
			     "%s%s", len ? "," : "", s->name);
		len += n;
	}
	return len;
}

/* ---- argp child ---- */

enum { OPT_EVENTS = 0x2400, OPT_NO_SAMPLES, OPT_EVENT_BUFFER, OPT_EVENT_ATTACH };

static const struct argp_option event_options[] = {
	{ "events", OPT_EVENTS, "LIST", 0,
	  "Kernel events to record: all, none, default (proc,file,net,dns), groups "
	  "(proc, file, net, dns, priv) or event names, comma-separated; -NAME removes", 0 },
	{ "no-samples", OPT_NO_SAMPLES, NULL, 0, "Record events only, no stack samples", 0 },
	{ "event-buffer", OPT_EVENT_BUFFER, "KIB",
	  0, "Size of the kernel event ring buffer in KiB, a power of 2 (default 8192)", 0 },
	{ "event-attach", OPT_EVENT_ATTACH, "HOW", 0,
	  "Attach kernel events with tp_btf, raw_tp or tracepoint only (default: the best "
	  "that works); with sys_enter (comma-separated), take the ids before a setid call "
	  "from the raw sys_enter tracepoint, not from per-call tracepoints", 0 },
	{ 0 }
};

/* --event-attach: a strategy, sys_enter, or both, comma-separated. */
static int parse_attach(const char *arg, struct sp_events_opts *o)
{
	static const char *const rungs[] = { "tp_btf", "raw_tp", "tracepoint" };
	const char *p = arg;
	size_t i, len;

	do {
		len = strcspn(p, ",");
		if (len == strlen("sys_enter") && !strncmp(p, "sys_enter", len)) {
			o->raw_entry = true;
		} else {
			for (i = 0; i < sizeof(rungs) / sizeof(rungs[0]); i++)
				if (len == strlen(rungs[i]) && !strncmp(p, rungs[i], len))
					break;
			if (i == sizeof(rungs) / sizeof(rungs[0]))
				return -1;
			o->attach = rungs[i];
		}
		p += len;
	} while (*p++ == ',');
	return 0;
}

static error_t parse_events_opt(int key, char *arg, struct argp_state *state)
{
	struct sp_events_opts *o = state->input;
	char err[256];

	if (!o)
		return ARGP_ERR_UNKNOWN;
	switch (key) {
	case ARGP_KEY_INIT:
		o->kinds = sp_events_default_kinds();
		break;
	case OPT_EVENTS:
		if (sp_events_parse(arg, &o->kinds, &o->named, err, sizeof(err)))
			argp_error(state, "--events: %s", err);
		o->given = true;
		break;
	case OPT_NO_SAMPLES:
		o->no_samples = true;
		break;
	case OPT_EVENT_BUFFER:
		if (sp_parse_uint(arg, 4, 1u << 21, &o->buffer_kib) ||
		    (o->buffer_kib & (o->buffer_kib - 1)))
			argp_error(state, "invalid --event-buffer '%s': KiB, a power of 2 from 4 "
				   "to 2097152", arg);
		break;
	case OPT_EVENT_ATTACH:
		if (parse_attach(arg, o))
			argp_error(state, "invalid --event-attach '%s': use tp_btf, raw_tp or "
				   "tracepoint, and/or sys_enter", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_events_argp = {
	.options = event_options,
	.parser = parse_events_opt,
};

/* ---- the source ---- */

enum { ST_NEW = 0, ST_READY, ST_OFF, ST_FATAL };

struct prog_set {
	const char *how;
	const char *suffix;
};

static const struct prog_set strategies[] = {
	{ "tp_btf", "btf" }, { "raw_tp", "raw" }, { "tracepoint", "tp" },
};

/* Programs of a strategy, by role. */
enum { P_ENTER, P_EXIT, P_FORK, P_EXEC, P_PEXIT, P_CAP, P_NUM };
static const char *const prog_roles[P_NUM] = {
	"on_sys_enter_", "on_sys_exit_", "on_fork_", "on_exec_", "on_exit_", "on_capable_",
};

struct ev_priv {
	struct sp_events_opts o;
	int state;
	struct sp_events *skel;
	struct ring_buffer *rb;
	struct sp_emit *out;
	const char *how;		/* strategy in use */
	char why[320];			/* why events are off */
	char tried[256];		/* strategies that failed and why */
	char probes[128];		/* top rungs probed: fentry, LSM */
	uint64_t avail;			/* kinds this kernel gives */
	uint64_t active;		/* kinds recorded */
	bool mounted_tracefs;
	const char *entry;		/* what gives entry-time data: "setid-tracepoints",
					 * "sys_enter", NULL = nothing attached */
	struct bpf_link *setid_links[8];	/* on_setid_tp on each setid call */
	int nsetid_links;
	int setid_err;			/* try_strategy(): attaching those failed */
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
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (sp_verbose < 2 && level != LIBBPF_WARN)
		return 0;
	if (sp_verbose < 1)
		return 0;
	sp_vmessage(fmt, ap);	/* its names (paths) escaped like ours */
	return 0;
}

static void appendf(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len >= size - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* What the kernel offers above and below the strategies, probed once. */
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

#define KFEAT_MAGIC "SPBPFF01"

/* Can a do-nothing program of this type load (and so attach) here? */
static int probe_prog(enum bpf_prog_type type, enum bpf_attach_type at, int btf_id)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = at);
	int fd;

	if (btf_id < 0)
		return -ENOENT;
	opts.attach_btf_id = btf_id;
	fd = bpf_prog_load(type, NULL, "GPL", insns, 2, &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

#define KFEAT_FILE "bpf-features"

/* bpf-features in the cache directory (sp_cache_dir(), as kallsyms), read
 * only if it is ours and private (safefile.h). */
static bool kfeat_load(struct kfeat *f, const char *dir, const char *id)
{
	struct sp_safe_want w = {
		SP_SAFE_NOFOLLOW | SP_SAFE_OWNER | SP_SAFE_PRIVATE, geteuid(), sizeof(*f)
	};
	const char *why;
	struct kfeat c;
	int dfd, fd;
	bool ok;

	dfd = sp_cache_dir_open(dir, false);
	if (dfd < 0)
		return false;
	fd = sp_safe_open(dfd, KFEAT_FILE, &w, NULL, &why);
	close(dfd);
	if (fd < 0) {
		if (why)
			sp_warn("cache '%s/%s': %s: not used", dir, KFEAT_FILE, why);
		return false;
	}
	ok = read(fd, &c, sizeof(c)) == (ssize_t)sizeof(c) &&
	     !memcmp(c.magic, KFEAT_MAGIC, 8) && !strncmp(c.boot_id, id, 40) &&
	     c.euid == geteuid() && c.fentry_err <= 0 && c.lsm_err <= 0;
	close(fd);
	if (ok)
		*f = c;
	return ok;
}

static void kfeat_save(const struct kfeat *f, const char *dir)
{
	int dfd = sp_cache_dir_open(dir, true);

	if (dfd < 0)
		return;
	sp_safe_write_file(dfd, KFEAT_FILE, f, sizeof(*f), 0600);
	close(dfd);
}

/* The verdicts, from the per-boot cache or from one parse of the kernel BTF
 * (each parse costs tens of milliseconds: never more than one). */
static void kfeat_get(struct kfeat *f)
{
	char id[40], *dir = sp_procfs_boot_id(id) ? NULL : sp_cache_dir(NULL);
	bool cache = dir != NULL;
	struct btf *btf;
	int fentry = -1, lsm = -1;

	if (cache && kfeat_load(f, dir, id)) {
		free(dir);
		return;
	}
	memset(f, 0, sizeof(*f));
	memcpy(f->magic, KFEAT_MAGIC, 8);
	if (cache)
		memcpy(f->boot_id, id, 40);
	f->euid = geteuid();
	btf = btf__load_vmlinux_btf();
	if (btf) {
		fentry = btf__find_by_name_kind(btf, "do_sys_openat2", BTF_KIND_FUNC);
		lsm = btf__find_by_name_kind(btf, "bpf_lsm_file_open", BTF_KIND_FUNC);
		f->tp_exec = btf__find_by_name_kind(btf, "btf_trace_sched_process_exec",
						    BTF_KIND_TYPEDEF) >= 0;
		f->tp_cap = btf__find_by_name_kind(btf, "btf_trace_cap_capable",
						   BTF_KIND_TYPEDEF) >= 0;
		btf__free(btf);
	}
	f->fentry_err = probe_prog(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, fentry);
	f->lsm_err = probe_prog(BPF_PROG_TYPE_LSM, BPF_LSM_MAC, lsm);
	if (cache && btf)
		kfeat_save(f, dir);
	free(dir);
}

/* May this process load tracing programs at all? A two-instruction
 * tracepoint program answers in microseconds, without any BTF. */
static int probe_tracing_allowed(void)
{
	return probe_prog(BPF_PROG_TYPE_TRACEPOINT, 0, 0);
}

static bool tracefs_ready(void)
{
	return !access("/sys/kernel/tracing/events/sched", F_OK) ||
	       !access("/sys/kernel/debug/tracing/events/sched", F_OK);
}

/* tracefs, which libbpf needs to attach classic tracepoints: mounted on
 * /sys/kernel/tracing (and unmounted once attached) when missing. false, and
 * why in tried under what, when it cannot be had. */
static bool need_tracefs(struct ev_priv *p, const char *what)
{
	if (tracefs_ready())
		return true;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0) {
		p->mounted_tracefs = true;
		return true;
	}
	appendf(p->tried, sizeof(p->tried), " %s(cannot mount tracefs: %s)", what,
		strerror(errno));
	return false;
}

/* Can the setid calls' own entry tracepoints (syscalls:sys_enter_setuid
 * ...) be used? They need tracefs and a kernel with syscall events. */
static bool setid_tps_ready(struct ev_priv *p)
{
	if (!need_tracefs(p, "setid-tracepoints"))
		return false;
	if (!access("/sys/kernel/tracing/events/syscalls/sys_enter_setuid", F_OK) ||
	    !access("/sys/kernel/debug/tracing/events/syscalls/sys_enter_setuid", F_OK))
		return true;
	appendf(p->tried, sizeof(p->tried), " setid-tracepoints(no syscall events)");
	return false;
}

static void detach_setid(struct ev_priv *p)
{
	while (p->nsetid_links > 0)
		bpf_link__destroy(p->setid_links[--p->nsetid_links]);
}

/* on_setid_tp on the entry tracepoint of each setid call. 0, or -errno
 * (and nothing attached). */
static int attach_setid(struct ev_priv *p, struct bpf_program *prog)
{
	unsigned int i;
	int err;

	for (i = 0; i < NSYS_KINDS; i++) {
		struct bpf_link *link;
		char name[64];

		if (sys_kinds[i].kind != SP_EV_SETID_CHANGE)
			continue;
		snprintf(name, sizeof(name), "sys_enter_%s", sys_kinds[i].name);
		link = bpf_program__attach_tracepoint(prog, "syscalls", name);
		if (!link || p->nsetid_links == (int)(sizeof(p->setid_links) /
						       sizeof(p->setid_links[0]))) {
			err = link ? -E2BIG : -errno;
			bpf_link__destroy(link);
			detach_setid(p);
			return err;
		}
		p->setid_links[p->nsetid_links++] = link;
	}
	return 0;
}

static struct bpf_program *role_prog(struct sp_events *skel, int role, const char *suffix)
{
	char name[64];

	snprintf(name, sizeof(name), "%s%s", prog_roles[role], suffix);
	return bpf_object__find_program_by_name(skel->obj, name);
}

/* Does system call i need anything at entry? With tp_btf and raw_tp only
 * the setid calls do (the ids before): the others' arguments, DNS payloads
 * included, are read from the registers at exit. */
static bool needs_entry(unsigned int i, bool tp)
{
	return tp || sys_kinds[i].kind == SP_EV_SETID_CHANGE;
}

/* Programs not needed for the kinds asked: every system call of the machine
 * passes sys_enter/sys_exit, so each is attached only when a system call
 * event asked for needs it. sys_exit: all of them, but with classic
 * tracepoints DNS (looked at on entry, where the arguments are); sys_enter:
 * with classic tracepoints, or for setid calls unless their own
 * tracepoints do (setid_tp). fork and exit always are: they keep the
 * process map. */
static bool skip_role(const struct ev_priv *p, int role, bool want_cap, bool tp, bool setid_tp)
{
	unsigned int i;

	switch (role) {
	case P_CAP:
		return !want_cap;
	case P_EXEC:
		return !(p->o.kinds & SP_EV_BIT(SP_EV_PROC_EXEC));
	case P_ENTER:
	case P_EXIT:
		for (i = 0; i < NSYS_KINDS; i++)
			if ((p->o.kinds & SP_EV_BIT(sys_kinds[i].kind)) &&
			    (role == P_EXIT ? !(tp && sys_kinds[i].dns) :
			     needs_entry(i, tp) && (tp || !setid_tp)))
				return false;
		return true;
	}
	return false;
}

/* Open, configure, load and attach one strategy; setid_tp: the setid
 * calls' entry from their own tracepoints (p->setid_err says when that
 * failed). 0, or -errno. */
static int try_strategy(struct ev_priv *p, const struct prog_set *ps, bool want_cap,
			bool setid_tp)
{
	struct sp_events *skel;
	struct bpf_program *prog;
	unsigned int i;
	int role, err;
	bool tp = !strcmp(ps->how, "tracepoint");

	skel = sp_events__open();
	if (!skel)
		return -errno;
	skel->rodata->want_fork = !!(p->o.kinds & SP_EV_BIT(SP_EV_PROC_FORK));
	skel->rodata->want_exec = !!(p->o.kinds & SP_EV_BIT(SP_EV_PROC_EXEC));
	skel->rodata->want_exit = !!(p->o.kinds & SP_EV_BIT(SP_EV_PROC_EXIT));
	skel->rodata->want_capable = want_cap;
	/* Wake the reader every 256 KiB (or a quarter of a smaller buffer):
	 * what it holds for the merge between two passes then stays in cache. */
	skel->rodata->wake_bytes = (p->o.buffer_kib ? p->o.buffer_kib : 8192) * 1024 / 4;
	if (skel->rodata->wake_bytes > 256 * 1024)
		skel->rodata->wake_bytes = 256 * 1024;
	bpf_map__set_max_entries(skel->maps.events,
				 (p->o.buffer_kib ? p->o.buffer_kib : 8192) * 1024);
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	for (role = 0; role < P_NUM; role++) {
		if (skip_role(p, role, want_cap, tp, setid_tp))
			continue;
		prog = role_prog(skel, role, ps->suffix);
		if (prog)
			bpf_program__set_autoload(prog, true);
	}
	bpf_program__set_autoload(skel->progs.on_setid_tp, setid_tp);
	err = sp_events__load(skel);
	if (err)
		goto fail;
	for (role = 0; role < P_NUM; role++) {
		struct bpf_link *link;

		if (skip_role(p, role, want_cap, tp, setid_tp))
			continue;
		prog = role_prog(skel, role, ps->suffix);
		if (!prog)
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			goto fail;
		}
		/* the skeleton destroys links it knows: keep it there */
		for (i = 0; i < (unsigned int)skel->skeleton->prog_cnt; i++)
			if (*skel->skeleton->progs[i].prog == prog)
				*skel->skeleton->progs[i].link = link;
	}
	if (setid_tp) {
		err = attach_setid(p, skel->progs.on_setid_tp);
		if (err) {
			p->setid_err = err;
			goto fail;
		}
	}
	/* tp_btf and raw_tp read a system call's arguments from the registers
	 * at exit; classic tracepoints must keep them from the entry. */
	for (i = 0; i < NSYS_KINDS; i++) {
		uint32_t nr = sys_kinds[i].nr, w = SP_WANT_PAIR;

		if (!(p->o.kinds & SP_EV_BIT(sys_kinds[i].kind)))
			continue;
		if (sys_kinds[i].dns)
			w = SP_WANT_DNS;
		else if (needs_entry(i, tp))
			w |= SP_WANT_ENTRY;
		err = bpf_map__update_elem(skel->maps.wanted, &nr, sizeof(nr), &w, sizeof(w), 0);
		if (err)
			goto fail;
	}
	p->skel = skel;
	p->entry = setid_tp ? "setid-tracepoints" :
		   !skip_role(p, P_ENTER, want_cap, tp, false) ? "sys_enter" : NULL;
	return 0;
fail:
	detach_setid(p);
	sp_events__destroy(skel);
	return err < 0 ? err : -EINVAL;
}

static int on_record(void *ctx, void *data, size_t size);

int sp_events_prepare(struct sp_source *s)
{
	struct ev_priv *p = s->priv;
	uint64_t kernel = group_kinds(KERNEL_GROUPS);
	uint64_t want = p->o.kinds & kernel, missing;
	bool want_cap, cap_hook, denied, setid_tps;
	struct kfeat kf;
	unsigned int i;
	int err = 0;
	char names[512];

	if (p->state != ST_NEW)
		return p->state == ST_READY ? 0 : p->state == ST_FATAL ? -1 : 1;
	libbpf_set_print(libbpf_print);
	p->state = ST_OFF;
	if (!want)
		return 0;

	/* Not allowed to load tracing programs at all: say so at once, without
	 * parsing the kernel BTF for probes whose answer is EPERM too. */
	err = probe_tracing_allowed();
	if (err == -EPERM || err == -EACCES) {
		memset(&kf, 0, sizeof(kf));
		kf.fentry_err = kf.lsm_err = err;
		appendf(p->tried, sizeof(p->tried), " tracepoint(%s)", strerror(-err));
	} else {
		err = 0;
		kfeat_get(&kf);
	}
	if (kf.fentry_err)
		appendf(p->probes, sizeof(p->probes), "%sbpf-fentry(%s)", *p->probes ? " " : "",
			strerrorname_np(-kf.fentry_err) ? strerrorname_np(-kf.fentry_err) : "error");
	if (kf.lsm_err)
		appendf(p->probes, sizeof(p->probes), "%sbpf-lsm(%s)", *p->probes ? " " : "",
			strerrorname_np(-kf.lsm_err) ? strerrorname_np(-kf.lsm_err) : "error");

	/* what this kernel and object can give at all */
	p->avail = kernel & ~SP_EV_BIT(SP_EV_KERNEL_READ_FILE);
	cap_hook = kf.tp_cap ||
		   !access("/sys/kernel/tracing/events/capability/cap_capable", F_OK);
	want_cap = cap_hook && (want & SP_EV_BIT(SP_EV_CAPABLE_CHECK));

	denied = err != 0;
	if (!denied)
		err = -ENOENT;
	/* the setid calls' entry: from their own tracepoints when they can be
	 * had, else (and when attaching them fails) from sys_enter */
	setid_tps = !denied && !p->o.raw_entry && (want & SP_EV_BIT(SP_EV_SETID_CHANGE)) &&
		    (!p->o.attach || strcmp(p->o.attach, "tracepoint")) && setid_tps_ready(p);
	for (i = 0; !denied && i < sizeof(strategies) / sizeof(strategies[0]); i++) {
		const struct prog_set *ps = &strategies[i];
		bool cap = want_cap && strcmp(ps->how, "tracepoint");

		if (p->o.attach && strcmp(p->o.attach, ps->how))
			continue;
		if (!strcmp(ps->how, "tp_btf") && !kf.tp_exec) {
			appendf(p->tried, sizeof(p->tried), " tp_btf(no BTF)");
			continue;
		}
		if (!strcmp(ps->how, "tracepoint") && !need_tracefs(p, "tracepoint"))
			continue;
		p->setid_err = 0;
		err = try_strategy(p, ps, cap, setid_tps && strcmp(ps->how, "tracepoint"));
		if (err && p->setid_err) {
			appendf(p->tried, sizeof(p->tried), " setid-tracepoints(%s)",
				strerror(-p->setid_err));
			err = try_strategy(p, ps, cap, false);
		}
		if (!err) {
			p->how = ps->how;
			if (!cap)
				p->avail &= ~SP_EV_BIT(SP_EV_CAPABLE_CHECK);
			break;
		}
		appendf(p->tried, sizeof(p->tried), " %s(%s)", ps->how, strerror(-err));
		if (err == -EPERM || (err == -EACCES && geteuid()))
			break;	/* no rung below helps */
	}
	/* attached tracepoints need tracefs no more: unmounted at once, so that
	 * it is not left behind however sp-record ends */
	if (p->mounted_tracefs)
		umount("/sys/kernel/tracing");
	if (!p->skel) {
		if (err == -EPERM || (err == -EACCES && geteuid()))
			snprintf(p->why, sizeof(p->why), "loading BPF programs needs root "
				 "(CAP_BPF and CAP_PERFMON): %s", strerror(-err));
		else
			snprintf(p->why, sizeof(p->why), "no attach strategy worked:%s", p->tried);
		p->avail = 0;
		if (p->o.given) {
			sp_error("kernel events unavailable: %s", p->why);
			p->state = ST_FATAL;
			return -1;
		}
		sp_warn("kernel events unavailable: %s; recording without them", p->why);
		return 1;
	}
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), on_record, p, NULL);
	if (!p->rb) {
		snprintf(p->why, sizeof(p->why), "ring_buffer__new: %s", strerror(errno));
		detach_setid(p);
		sp_events__destroy(p->skel);
		p->skel = NULL;
		p->entry = NULL;
		p->avail = 0;
		if (p->o.given) {
			sp_error("kernel events unavailable: %s", p->why);
			p->state = ST_FATAL;
			return -1;
		}
		sp_warn("kernel events unavailable: %s; recording without them", p->why);
		return 1;
	}
	s->fd = ring_buffer__epoll_fd(p->rb);
	p->ncpu = libbpf_num_possible_cpus();
	if (p->ncpu < 1)
		p->ncpu = 1;
	p->lost_seen = sp_xcalloc(p->ncpu, sizeof(*p->lost_seen));
	p->active = want & p->avail;
	p->state = ST_READY;
	missing = want & ~p->avail;
	if (missing & p->o.named) {
		sp_events_format(missing & p->o.named, names, sizeof(names));
		sp_error("event %s not available on this kernel (see docs/events.md)", names);
		p->state = ST_FATAL;
		return -1;
	}
	if (missing) {
		sp_events_format(missing, names, sizeof(names));
		sp_info("kernel events not available here: %s", names);
		return 1;
	}
	sp_info("kernel events attached with %s", p->how);
	return 0;
}

/* The children of pid (every thread's), appended to *v. */
static void add_children(uint32_t pid, uint32_t **v, size_t *n, size_t *cap)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char cpath[300];
		unsigned int c;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%u/task/%s/children", pid, de->d_name);
		f = fopen(cpath, "r");
		if (!f)
			continue;
		while (fscanf(f, "%u", &c) == 1) {
			sp_grow(v, cap, *n + 1, sizeof(**v));
			(*v)[(*n)++] = c;
		}
		fclose(f);
	}
	closedir(d);
}

static int ev_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct ev_priv *p = s->priv;
	uint32_t *v = NULL;
	size_t n = 0, cap = 0, i;
	uint8_t one = 1;
	int pass, r;

	r = sp_events_prepare(s);
	if (r < 0)
		return -1;
	if (p->state != ST_READY)
		return 0;
	p->started = true;
	if (t->system_wide) {
		p->skel->bss->trace_all = 1;
		return 0;
	}
	/* the roots, then their descendants; twice, for forks during the walk */
	for (pass = 0; pass < 2; pass++) {
		n = 0;
		for (i = 0; i < t->npids; i++) {
			sp_grow(&v, &cap, n + 1, sizeof(*v));
			v[n++] = t->pids[i];
		}
		for (i = 0; i < n && i < 65536; i++)
			add_children(v[i], &v, &n, &cap);
		for (i = 0; i < n; i++)
			if (bpf_map__update_elem(p->skel->maps.tgids, &v[i], sizeof(v[i]), &one,
						 sizeof(one), BPF_ANY))
				sp_warn("pid %u: cannot add to the BPF process map: %s", v[i],
					strerror(errno));
	}
	free(v);
	return 0;
}

/* Per-CPU loss counters that moved since last time become lost records. */
static int read_lost(struct ev_priv *p, struct sp_emit *out)
{
	struct sp_bpf_lost *l;
	uint32_t zero = 0;
	uint64_t now = sp_now_mono_ns();
	int cpu, n = 0;

	l = calloc(p->ncpu, sizeof(*l));
	if (!l)
		return 0;
	if (bpf_map__lookup_elem(p->skel->maps.lost, &zero, sizeof(zero), l,
				 sizeof(*l) * p->ncpu, 0)) {
		free(l);
		return 0;
	}
	for (cpu = 0; cpu < p->ncpu; cpu++) {
		struct sp_record rec = { .kind = SP_REC_LOST };
		uint64_t delta = l[cpu].count - p->lost_seen[cpu];

		if (!delta)
			continue;
		rec.lost.time = l[cpu].last_ns;
		rec.lost.start = p->lost_seen[cpu] ? p->lost_read_ns : l[cpu].first_ns;
		if (rec.lost.start > rec.lost.time)
			rec.lost.start = rec.lost.time;
		rec.lost.what = SP_LOST_EVENTS;
		rec.lost.count = delta;
		rec.lost.cpu = cpu + 1;
		p->lost_seen[cpu] = l[cpu].count;
		p->lost += delta;
		if (out->emit(out->ctx, &rec))
			p->err = -1;
		n++;
	}
	p->lost_read_ns = now;
	free(l);
	return n;
}

static int ev_poll(struct sp_source *s, struct sp_emit *out)
{
	struct ev_priv *p = s->priv;
	uint64_t before = p->delivered;
	int r;

	if (p->state != ST_READY || !p->started)
		return 0;
	p->out = out;
	p->drain_ns = sp_now_mono_ns();
	r = ring_buffer__consume(p->rb);
	p->out = NULL;
	if (r < 0 && r != -EINTR)
		return sp_error("kernel events: ring_buffer__consume: %s", strerror(-r));
	r = read_lost(p, out);
	if (p->err)
		return -1;
	return (int)(p->delivered - before) + r;
}

static uint64_t ev_watermark(struct sp_source *s)
{
	struct ev_priv *p = s->priv;
	const uint64_t slack = 1000000;	/* stamped but not yet committed */

	if (p->state != ST_READY || !p->started)
		return UINT64_MAX;
	return p->drain_ns > slack ? p->drain_ns - slack : 0;
}

static int ev_finish(struct sp_source *s, struct sp_emit *out)
{
	struct ev_priv *p = s->priv;

	if (p->state != ST_READY || !p->started)
		return 0;
	if (ev_poll(s, out) < 0)
		return -1;
	if (p->lost)
		sp_warn("%llu kernel events lost (%llu recorded): the ring buffer was full; "
			"a larger --event-buffer may help", (unsigned long long)p->lost,
			(unsigned long long)p->delivered);
	return 0;
}

static void ev_describe(struct sp_source *s, char *features, size_t fsize, char *unavailable,
			size_t usize)
{
	struct ev_priv *p = s->priv;
	uint64_t want = p->o.kinds & group_kinds(KERNEL_GROUPS);
	char names[512];

	if (!want)
		return;
	if (p->state == ST_READY) {
		appendf(features, fsize, "%sbpf-events=%s", *features ? " " : "", p->how);
		if (p->mounted_tracefs)
			appendf(features, fsize, " tracefs=mounted");
		if (p->entry)
			appendf(features, fsize, " entry=%s", p->entry);
		sp_events_format(p->active, names, sizeof(names));
		appendf(features, fsize, " events=%s", names);
	} else {
		appendf(unavailable, usize, "%sbpf-events", *unavailable ? " " : "");
	}
	if (*p->probes)
		appendf(unavailable, usize, "%s%s", *unavailable ? " " : "", p->probes);
	if (*p->tried && p->state == ST_READY)
		appendf(unavailable, usize, "%s%s", *unavailable ? " " : "", p->tried + 1);
	if (want & ~p->active) {
		sp_events_format(want & ~p->active, names, sizeof(names));
		appendf(unavailable, usize, "%sevents=%s", *unavailable ? " " : "", names);
	}
}

static void ev_free(struct sp_source *s)
{
	struct ev_priv *p;

	if (!s)
		return;
	p = s->priv;
	if (p) {
		ring_buffer__free(p->rb);
		detach_setid(p);
		sp_events__destroy(p->skel);
		free(p->lost_seen);
		free(p->text);
		free(p);
	}
	free(s);
}

void sp_events_counts(struct sp_source *s, uint64_t *events, uint64_t *lost)
{
	struct ev_priv *p = s->priv;

	*events = p->delivered;
	*lost = p->lost;
}

void sp_events_print_check(struct sp_source *s, FILE *f)
{
	struct ev_priv *p = s->priv;
	uint64_t saved = p->o.kinds;
	unsigned int k;

	if (p->state == ST_NEW) {
		p->o.kinds = group_kinds(KERNEL_GROUPS);
		p->o.given = false;
		sp_events_prepare(s);
		p->o.kinds = saved;
	}
	fprintf(f, "kernel events: %s%s%s%s\n", p->state == ST_READY ? "attached with " : "off: ",
		p->state == ST_READY ? p->how : p->why,
		p->state == ST_READY && p->entry ? ", system call entry from " : "",
		p->state == ST_READY && p->entry ? p->entry : "");
	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		const struct sp_event_schema *sc = sp_event_schema(k);

		if (!sc || !(sc->group & KERNEL_GROUPS))
			continue;
		fprintf(f, "  %-17s %s\n", sc->name,
			p->avail & SP_EV_BIT(k) ? "available" :
			k == SP_EV_KERNEL_READ_FILE ? "unavailable: no hook without kprobes or BPF LSM" :
			k == SP_EV_CAPABLE_CHECK && p->state == ST_READY ?
			"unavailable: no cap_capable tracepoint" : "unavailable");
	}
}

struct sp_source *sp_events_source_new(const struct sp_events_opts *o)
{
	struct sp_source *s = sp_xcalloc(1, sizeof(*s));
	struct ev_priv *p = sp_xcalloc(1, sizeof(*p));

	sys_kind_index();
	p->o = *o;
	s->name = "events";
	s->fd = -1;
	s->priv = p;
	s->start = ev_start;
	s->poll = ev_poll;
	s->watermark = ev_watermark;
	s->finish = ev_finish;
	s->describe = ev_describe;
	s->free = ev_free;
	return s;
}

/* ---- decoding ring-buffer records ---- */

struct strs {
	const char *p[SP_BPF_NSTR];
	uint32_t len[SP_BPF_NSTR];
};

static char *text_room(struct ev_priv *p, size_t n)
{
	sp_grow(&p->text, &p->text_cap, n, 1);
	return p->text;
}

/* The id of s as string i of a record. Records repeat their strings (a loop
 * opens the same path again and again): when s is what string i of the
 * previous record was, its id is checked against the writer's definitions
 * by one comparison instead of a hash and a lookup. */
static uint64_t slot_str(struct ev_priv *p, int i, const char *s, size_t len)
{
	struct sp_writer *w = p->out->w;
	uint64_t id = p->last_str[i];
	const char *t;
	size_t tlen;

	if (p->str_w != w) {
		memset(p->last_str, 0, sizeof(p->last_str));
		p->str_w = w;
		id = 0;
	}
	if (id && (t = sp_defs_str(sp_writer_defs(w), id, &tlen)) && tlen == len &&
	    !memcmp(t, s, len))
		return id;
	id = sp_writer_str(w, s, len);
	p->last_str[i] = id;
	return id;
}

/* String i as a string id: 0 when absent or unreadable. */
static uint64_t str_id(struct ev_priv *p, const struct sp_bpf_ev *e, const struct strs *st, int i)
{
	char *t;
	size_t n, len, j;

	if (e->flags & SP_BPF_FAULT(i))
		return 0;
	if (!(e->flags & SP_BPF_REVPATH(i)))
		return slot_str(p, i, st->p[i], st->len[i]);
	/* dentry names, leaf first: reverse into "/a/b/c" */
	len = st->len[i];
	t = text_room(p, len + 2);
	n = 0;
	j = len;
	while (j > 0) {
		size_t k = j;

		while (k > 0 && st->p[i][k - 1])
			k--;
		t[n++] = '/';
		memcpy(t + n, st->p[i] + k, j - k);
		n += j - k;
		if (k == 0)
			break;
		j = k - 1;
	}
	if (!n)
		t[n++] = '/';
	return slot_str(p, i, t, n);
}

/* argv, NUL-separated, as a shell-quoted command line. */
static uint64_t argv_id(struct ev_priv *p, const char *a, size_t len)
{
	size_t i, n = 0;
	char *t = text_room(p, len * 4 + 16);
	bool start = true;

	while (len && !a[len - 1])
		len--;
	for (i = 0; i <= len; i++) {
		size_t e = i, k;
		bool plain = true;

		while (e < len && a[e])
			e++;
		for (k = i; k < e; k++)
			if (!isalnum((unsigned char)a[k]) && !strchr("%+,-./:=@_^", a[k]))
				plain = false;
		if (!start)
			t[n++] = ' ';
		start = false;
		if (plain && e > i) {
			memcpy(t + n, a + i, e - i);
			n += e - i;
		} else {
			t[n++] = '\'';
			for (k = i; k < e; k++) {
				if (a[k] == '\'') {
					memcpy(t + n, "'\\''", 4);
					n += 4;
				} else {
					t[n++] = a[k];
				}
			}
			t[n++] = '\'';
		}
		i = e;
	}
	return sp_writer_str(p->out->w, t, n);
}

/* A struct sockaddr's family, address bytes, port and AF_UNIX path. */
struct peer {
	uint64_t family, port;
	uint8_t addr[16];
	uint32_t addr_len;
	const char *path;
	size_t path_len;
};

static void parse_sockaddr(const uint8_t *b, size_t len, struct peer *pe)
{
	uint16_t fam;

	memset(pe, 0, sizeof(*pe));
	if (len < 2)
		return;
	memcpy(&fam, b, 2);
	pe->family = fam;
	if (fam == AF_INET && len >= 8) {
		pe->port = (b[2] << 8) | b[3];
		memcpy(pe->addr, b + 4, 4);
		pe->addr_len = 4;
	} else if (fam == AF_INET6 && len >= 24) {
		pe->port = (b[2] << 8) | b[3];
		memcpy(pe->addr, b + 8, 16);
		pe->addr_len = 16;
	} else if (fam == AF_UNIX && len > 2) {
		pe->path = (const char *)b + 2;
		pe->path_len = strnlen(pe->path, len - 2);
		if (!pe->path_len && len > 3) {	/* abstract: "@name" */
			pe->path = (const char *)b + 3;
			pe->path_len = len - 3;
		}
	}
}

/* The question of a DNS query: name (dotted), qtype. -1 if not a query. */
static int parse_dns(struct ev_priv *p, const uint8_t *b, size_t len, size_t *name_len,
		     uint64_t *qtype, uint64_t *id)
{
	size_t i = 12, n = 0;
	char *t;

	if (len < 12 + 1 + 4)
		return -1;
	if (b[2] & 0x80)		/* QR: a response */
		return -1;
	if (!((b[4] << 8) | b[5]))	/* QDCOUNT */
		return -1;
	*id = (b[0] << 8) | b[1];
	t = text_room(p, len * 4 + 2);
	while (i < len && b[i]) {
		size_t l = b[i++], k;

		if (l > 63 || i + l > len)
			return -1;
		if (n)
			t[n++] = '.';
		for (k = 0; k < l; k++) {
			unsigned char c = b[i + k];

			if (c > 32 && c < 127 && c != '.' && c != '\\') {
				t[n++] = c;
			} else {
				n += sprintf(t + n, "\\%03u", c);
			}
		}
		i += l;
	}
	if (i + 3 > len)
		return -1;
	i++;
	*qtype = (b[i] << 8) | b[i + 1];
	if (!n)
		t[n++] = '.';
	*name_len = n;
	return 0;
}

static int64_t s32(uint64_t v)
{
	return (int32_t)(uint32_t)v;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct ev_priv *p = ctx;
	const struct sp_bpf_ev *e = data;
	struct sp_record rec = { .kind = SP_REC_EVENT };
	struct sp_event *ev = &rec.event;
	const struct sys_kind *sk = NULL;
	struct strs st;
	struct peer pe;
	size_t off = sizeof(*e), name_len;
	uint64_t qtype, id;
	uint32_t nr = e->nr;
	int i;

	if (!p->out || size < sizeof(*e))
		return 0;
	for (i = 0; i < SP_BPF_NSTR; i++) {
		st.p[i] = "";
		st.len[i] = 0;
		if (!e->str_len[i] && !(e->flags & (SP_BPF_REVPATH(i) | SP_BPF_BYTES(i))) &&
		    off >= size)
			continue;
		if (off + e->str_len[i] + 1 > size)
			break;
		st.p[i] = (const char *)data + off;
		st.len[i] = e->str_len[i];
		off += e->str_len[i] + 1;
	}
	ev->time = e->time_ns;
	ev->pid = e->pid;
	ev->tid = e->tid;
	for (i = 0; i < SP_EVENT_MAX_FIELDS; i++)
		ev->field[i].u = 0;
#define F(i) ev->field[i].u

	switch (e->kind) {
	case SP_BPF_FORK:
		ev->kind = SP_EV_PROC_FORK;
		F(0) = e->arg[0];
		F(1) = e->arg[1];
		F(2) = e->arg[2] == 1 ? SP_FORK_THREAD : 0;
		break;
	case SP_BPF_EXEC:
		ev->kind = SP_EV_PROC_EXEC;
		F(0) = str_id(p, e, &st, 0);
		F(1) = (e->flags & SP_BPF_FAULT(1)) ? 0 : argv_id(p, st.p[1], st.len[1]);
		F(2) = ((e->flags & SP_BPF_TRUNC(1)) ? 1 : 0) | ((e->flags & SP_BPF_TRUNC(0)) ? 2 : 0);
		F(3) = e->arg[0];
		break;
	case SP_BPF_EXIT:
		ev->kind = SP_EV_PROC_EXIT;
		if (e->arg[0] & 0x7f) {
			F(0) = (uint64_t)-1;
			F(1) = e->arg[0] & 0x7f;
		} else {
			F(0) = (e->arg[0] >> 8) & 0xff;
		}
		F(2) = e->arg[1];
		break;
	case SP_BPF_CAPABLE:
		ev->kind = SP_EV_CAPABLE_CHECK;
		F(0) = e->arg[0];
		F(1) = e->result;
		break;
	case SP_BPF_DNS:
		ev->kind = SP_EV_DNS_REQ;
		if (parse_dns(p, (const uint8_t *)st.p[0], st.len[0], &name_len, &qtype, &id))
			return 0;	/* not a query */
		F(0) = sp_writer_str(p->out->w, p->text, name_len);
		F(1) = qtype;
		if (st.len[1]) {
			parse_sockaddr((const uint8_t *)st.p[1], st.len[1], &pe);
		} else {
			memset(&pe, 0, sizeof(pe));
			pe.family = e->family;
			pe.port = e->port;
			pe.addr_len = e->family == AF_INET ? 4 : e->family == AF_INET6 ? 16 : 0;
			memcpy(pe.addr, e->addr, sizeof(pe.addr));
		}
		ev->field[2].b.p = pe.addr;
		ev->field[2].b.len = pe.addr_len;
		F(3) = pe.port;
		F(4) = id;
		break;
	case SP_BPF_SYSCALL:
		sk = sys_kind(nr);
		if (!sk)
			return 0;
		ev->kind = sk->kind;
		break;
	default:
		return 0;
	}

	if (sk) {
		const __u64 *a = e->arg;

		switch (sk->kind) {
		case SP_EV_PATH_OPEN: {
			uint64_t flags, mode;

			if (nr == __NR_open)
				flags = a[1], mode = a[2];
			else if (nr == __NR_creat)
				flags = O_CREAT | O_WRONLY | O_TRUNC, mode = a[1];
			else
				flags = a[2], mode = a[3];
			if (!(flags & (O_CREAT | __O_TMPFILE)))
				mode = 0;
			F(0) = str_id(p, e, &st, 0);
			F(1) = flags & 0xffffffffu;
			F(2) = mode;
			F(3) = e->result;
			F(4) = (e->flags & SP_BPF_REVPATH(1)) ? str_id(p, e, &st, 1) : 0;
			F(5) = ((e->flags & SP_BPF_TRUNC(0)) ? 1 : 0) |
			       ((e->flags & SP_BPF_TRUNC(1)) ? 2 : 0);
			break;
		}
		case SP_EV_FILE_GETDENTS:
			F(0) = str_id(p, e, &st, 0);
			F(1) = (uint32_t)a[0];
			F(2) = e->result;
			break;
		case SP_EV_FILE_RENAME:
			F(0) = str_id(p, e, &st, 0);
			F(1) = str_id(p, e, &st, 1);
			F(2) = nr == __NR_renameat2 ? (uint32_t)a[4] : 0;
			F(3) = e->result;
			break;
		case SP_EV_FILE_HARDLINK:
		case SP_EV_FILE_SYMLINK:
			F(0) = str_id(p, e, &st, 0);
			F(1) = str_id(p, e, &st, 1);
			F(2) = e->result;
			break;
		case SP_EV_FILE_CHMOD:
			F(0) = str_id(p, e, &st, 0);
			F(1) = (nr == __NR_fchmodat || nr == __NR_fchmodat2 ? a[2] : a[1]) & 07777;
			F(2) = e->result;
			break;
		case SP_EV_FILE_CHOWN:
			F(0) = str_id(p, e, &st, 0);
			F(1) = s32(nr == __NR_fchownat ? a[2] : a[1]);
			F(2) = s32(nr == __NR_fchownat ? a[3] : a[2]);
			F(3) = e->result;
			break;
		case SP_EV_FILE_UNLINK:
			F(0) = str_id(p, e, &st, 0);
			F(1) = nr == __NR_unlinkat ? (uint32_t)a[2] : nr == __NR_rmdir ? AT_REMOVEDIR : 0;
			F(2) = e->result;
			break;
		case SP_EV_SOCK_CONNECT:
		case SP_EV_SOCK_BIND:
			parse_sockaddr((const uint8_t *)st.p[0],
				       (e->flags & SP_BPF_FAULT(0)) ? 0 : st.len[0], &pe);
			F(0) = pe.family;
			ev->field[1].b.p = pe.addr;
			ev->field[1].b.len = pe.addr_len;
			F(2) = pe.port;
			F(3) = e->result;
			F(4) = (uint32_t)a[0];
			F(5) = pe.path ? sp_writer_str(p->out->w, pe.path, pe.path_len) : 0;
			break;
		case SP_EV_SOCK_LISTEN:
			F(0) = (uint32_t)a[0];
			F(1) = (uint32_t)a[1];
			F(2) = e->result;
			break;
		case SP_EV_SOCK_ACCEPT:
			memcpy(pe.addr, e->addr, sizeof(pe.addr));
			F(0) = e->family;
			ev->field[1].b.p = pe.addr;
			ev->field[1].b.len = e->family == AF_INET ? 4 : e->family == AF_INET6 ? 16 : 0;
			F(2) = e->port;
			F(3) = e->result;
			F(4) = (uint32_t)a[0];
			break;
		case SP_EV_TASK_KILL:
			F(0) = s32(nr == __NR_tgkill ? a[1] : a[0]);
			F(1) = (uint32_t)(nr == __NR_tgkill ? a[2] : a[1]);
			F(2) = e->result;
			break;
		case SP_EV_PTRACE_CHECK:
			F(0) = a[0];
			F(1) = (uint32_t)a[1];
			F(2) = e->result;
			break;
		case SP_EV_SB_MOUNT:
			F(0) = str_id(p, e, &st, 0);
			F(1) = str_id(p, e, &st, 1);
			F(2) = str_id(p, e, &st, 2);
			F(3) = a[3];
			F(4) = e->result;
			break;
		case SP_EV_SETID_CHANGE:
			F(0) = sp_writer_strz(p->out->w, sk->name);
			F(1) = (uint32_t)a[0];
			F(2) = (uint32_t)a[1];
			F(3) = (uint32_t)a[2];
			F(4) = (uint32_t)a[3];
			F(5) = e->result;
			break;
		default:
			return 0;
		}
	}
#undef F
	{
		const struct sp_event_schema *sc = sp_event_schema(ev->kind);

		ev->nfields = sc ? sc->nfields : 0;
	}
	if (p->out->emit(p->out->ctx, &rec)) {
		p->err = -1;
		return -1;
	}
	p->delivered++;
	return 0;
}
