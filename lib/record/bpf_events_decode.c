// SPDX-License-Identifier: MIT
/*
 * Decoding the "events" source's ring buffer (bpf_eventsP.h): each struct
 * sp_bpf_ev (bpf/events.h) and the strings after it become an
 * SP_REC_EVENT with the typed fields of its kind (events.h): paths
 * reversed from dentry names, argv shell-quoted, socket addresses and DNS
 * questions parsed, each system call's arguments in their place.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <netinet/in.h>

#include "bpf_eventsP.h"
#include "interpP.h"
#include "procfs.h"
#include "sp.h"

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef AT_REMOVEDIR
#define AT_REMOVEDIR 0x200
#endif

/* The system calls behind each event kind (bpf_eventsP.h). */
const struct sys_kind sp_ev_sys_kinds[] = {
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

const size_t sp_ev_nsys_kinds = sizeof(sp_ev_sys_kinds) / sizeof(sp_ev_sys_kinds[0]);

void sp_ev_stack_calls(uint64_t *bits, size_t nbits)
{
	size_t i;

	/* not the DNS sends: a program's every write to a socket (the
	 * resolver's connect before them gives their stack) */
	for (i = 0; i < sp_ev_nsys_kinds; i++)
		if (!sp_ev_sys_kinds[i].dns && sp_ev_sys_kinds[i].nr >= 0 &&
		    (size_t)sp_ev_sys_kinds[i].nr < nbits)
			bits[sp_ev_sys_kinds[i].nr / 64] |= 1ull << (sp_ev_sys_kinds[i].nr % 64);
}

const char *sp_ev_call_name(uint32_t nr)
{
	size_t i;

	for (i = 0; i < sp_ev_nsys_kinds; i++)
		if (sp_ev_sys_kinds[i].nr >= 0 && (uint32_t)sp_ev_sys_kinds[i].nr == nr)
			return sp_ev_sys_kinds[i].name;
	return NULL;
}

/* sp_ev_sys_kinds[] by call number (index + 1, 0 = none): one load per record
 * instead of a walk over the table. Filled once, before any use. */
static unsigned char sys_kind_of[SP_BPF_NR_MAX];

void sp_ev_sys_kind_index(void)
{
	size_t i;

	if (sys_kind_of[sp_ev_sys_kinds[0].nr])
		return;
	for (i = sp_ev_nsys_kinds; i-- > 0;)
		if (sp_ev_sys_kinds[i].nr >= 0 && sp_ev_sys_kinds[i].nr < SP_BPF_NR_MAX)
			sys_kind_of[sp_ev_sys_kinds[i].nr] = (unsigned char)(i + 1);
}

static const struct sys_kind *sys_kind(uint32_t nr)
{
	unsigned int i = nr < SP_BPF_NR_MAX ? sys_kind_of[nr] : 0;

	return i ? &sp_ev_sys_kinds[i - 1] : NULL;
}

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

/* String i, dentry names leaf first, reversed into "/a/b/c" in p->text:
 * its length. */
static size_t rev_path(struct ev_priv *p, const struct strs *st, int i)
{
	char *t;
	size_t n, len, j;

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
	return n;
}

/* String i as a string id: 0 when absent or unreadable. */
/* The path of a cgroup id as a string id (slot 2: an exec has two
 * strings), the last one's kept; 0 when the cgroup is gone already. */
static uint64_t cgroup_str(struct ev_priv *p, uint64_t id)
{
	char path[SP_PROC_CGROUP_MAX + 1];

	if (!id)
		return 0;
	if (id != p->cg_id) {
		p->cg_id = id;
		p->cg_ok = sp_cgroup_path_by_id(id, path, sizeof(path)) == 0;
		if (p->cg_ok)
			snprintf(p->cg_path, sizeof(p->cg_path), "%s", path);
	}
	return p->cg_ok ? slot_str(p, 2, p->cg_path, strlen(p->cg_path)) : 0;
}

static uint64_t str_id(struct ev_priv *p, const struct sp_bpf_ev *e, const struct strs *st, int i)
{
	size_t n;

	if (e->flags & SP_BPF_FAULT(i))
		return 0;
	if (!(e->flags & SP_BPF_REVPATH(i)))
		return slot_str(p, i, st->p[i], st->len[i]);
	n = rev_path(p, st, i);
	return slot_str(p, i, p->text, n);
}

/*
 * Path string i made absolute with the directory string d it was looked up
 * from (the dirfd's or the current directory, rebuilt from dentries), as
 * path_open's path and dir are shown together. As given when absolute,
 * empty, or the directory is missing, unreadable or cut (a cut one lost
 * its top: joined, it would look whole and be wrong).
 */
static uint64_t path_in_dir(struct ev_priv *p, const struct sp_bpf_ev *e, const struct strs *st,
			    int i, int d)
{
	size_t n, len = st->len[i];
	char *t;

	if ((e->flags & (SP_BPF_FAULT(i) | SP_BPF_FAULT(d) | SP_BPF_TRUNC(d))) ||
	    !(e->flags & SP_BPF_REVPATH(d)) || !len || st->p[i][0] == '/')
		return str_id(p, e, st, i);
	n = rev_path(p, st, d);
	t = text_room(p, n + 1 + len);
	if (n > 1)
		t[n++] = '/';
	else
		n = 1;		/* "/" */
	memcpy(t + n, st->p[i], len);
	return slot_str(p, i, t, n + len);
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

/* The strings after the record's fixed part, each NUL-terminated; ""
 * for those absent or cut off. */
static void split_strings(const struct sp_bpf_ev *e, const void *data, size_t size,
			  struct strs *st)
{
	size_t off = sizeof(*e);
	int i;

	for (i = 0; i < SP_BPF_NSTR; i++) {
		st->p[i] = "";
		st->len[i] = 0;
	}
	for (i = 0; i < SP_BPF_NSTR; i++) {
		if (!e->str_len[i] && !(e->flags & (SP_BPF_REVPATH(i) | SP_BPF_BYTES(i))) &&
		    off >= size)
			continue;
		if (off + e->str_len[i] + 1 > size)
			break;
		st->p[i] = (const char *)data + off;
		st->len[i] = e->str_len[i];
		off += e->str_len[i] + 1;
	}
}

#define F(i) ev->field[i].u

/* The events the programs make of a task's life (fork, exec, exit), of a
 * capability check and of a DNS query, into ev (its byte fields point into
 * *pe). 0, or -1: no event (an unknown kind, a DNS payload that is no
 * query). */
static int decode_task(struct ev_priv *p, const struct sp_bpf_ev *e, const struct strs *st,
		       struct sp_event *ev, struct peer *pe)
{
	size_t name_len;
	uint64_t qtype, id;

	switch (e->kind) {
	case SP_BPF_FORK:
		ev->kind = SP_EV_PROC_FORK;
		F(0) = e->arg[0];
		F(1) = e->arg[1];
		F(2) = e->arg[2] == 1 ? SP_FORK_THREAD : 0;
		break;
	case SP_BPF_EXEC:
		ev->kind = SP_EV_PROC_EXEC;
		F(0) = str_id(p, e, st, 0);
		F(1) = (e->flags & SP_BPF_FAULT(1)) ? 0 : argv_id(p, st->p[1], st->len[1]);
		F(2) = ((e->flags & SP_BPF_TRUNC(1)) ? 1 : 0) | ((e->flags & SP_BPF_TRUNC(0)) ? 2 : 0);
		F(3) = e->arg[0];
		F(4) = e->arg[1];	/* identity, read in the kernel at exec */
		F(5) = e->arg[2];
		F(6) = e->arg[3];
		F(7) = e->arg[4];
		F(8) = e->arg[5];
		F(9) = cgroup_str(p, e->arg[4]);
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
		if (parse_dns(p, (const uint8_t *)st->p[0], st->len[0], &name_len, &qtype, &id))
			return -1;	/* not a query */
		F(0) = sp_writer_str(p->out->w, p->text, name_len);
		F(1) = qtype;
		if (st->len[1]) {
			parse_sockaddr((const uint8_t *)st->p[1], st->len[1], pe);
		} else {
			memset(pe, 0, sizeof(*pe));
			pe->family = e->family;
			pe->port = e->port;
			pe->addr_len = e->family == AF_INET ? 4 : e->family == AF_INET6 ? 16 : 0;
			memcpy(pe->addr, e->addr, sizeof(pe->addr));
		}
		ev->field[2].b.p = pe->addr;
		ev->field[2].b.len = pe->addr_len;
		F(3) = pe->port;
		F(4) = id;
		break;
	default:
		return -1;
	}
	return 0;
}

/* Whether the directory of a rename's or link's old path (string 2) is
 * the new path's too: the old path is absolute (the directory is the new
 * one's then), or both were looked up from the same dirfd. */
static bool same_dir(const struct sp_bpf_ev *e, const struct strs *st)
{
	uint32_t nr = e->nr;

	if ((e->flags & SP_BPF_FAULT(0)) || (st->len[0] && st->p[0][0] == '/'))
		return true;
	if (nr == __NR_rename || nr == __NR_link)
		return true;
	return (int)e->arg[0] == (int)e->arg[2];
}

/* A system call's event: its kind's fields from the call's arguments
 * (a[]), result and strings, into ev (its byte fields point into *pe).
 * 0, or -1 for a kind no call gives. */
static int decode_syscall(struct ev_priv *p, const struct sp_bpf_ev *e, const struct strs *st,
			  const struct sys_kind *sk, struct sp_event *ev, struct peer *pe)
{
	const __u64 *a = e->arg;
	uint32_t nr = e->nr;

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
		F(0) = str_id(p, e, st, 0);
		F(1) = flags & 0xffffffffu;
		F(2) = mode;
		F(3) = e->result;
		F(4) = (e->flags & SP_BPF_REVPATH(1)) ? str_id(p, e, st, 1) : 0;
		F(5) = ((e->flags & SP_BPF_TRUNC(0)) ? 1 : 0) |
		       ((e->flags & SP_BPF_TRUNC(1)) ? 2 : 0);
		break;
	}
	case SP_EV_FILE_GETDENTS:
		F(0) = str_id(p, e, st, 0);
		F(1) = (uint32_t)a[0];
		F(2) = e->result;
		break;
	case SP_EV_FILE_RENAME:
		F(0) = path_in_dir(p, e, st, 0, 2);
		F(1) = same_dir(e, st) ? path_in_dir(p, e, st, 1, 2) : str_id(p, e, st, 1);
		F(2) = nr == __NR_renameat2 ? (uint32_t)a[4] : 0;
		F(3) = e->result;
		break;
	case SP_EV_FILE_HARDLINK:
		F(0) = path_in_dir(p, e, st, 0, 2);
		F(1) = same_dir(e, st) ? path_in_dir(p, e, st, 1, 2) : str_id(p, e, st, 1);
		F(2) = e->result;
		break;
	case SP_EV_FILE_SYMLINK:
		F(0) = str_id(p, e, st, 0);	/* the link's content: never looked up here */
		F(1) = path_in_dir(p, e, st, 1, 2);
		F(2) = e->result;
		break;
	case SP_EV_FILE_CHMOD:
		F(0) = path_in_dir(p, e, st, 0, 1);
		F(1) = (nr == __NR_fchmodat || nr == __NR_fchmodat2 ? a[2] : a[1]) & 07777;
		F(2) = e->result;
		break;
	case SP_EV_FILE_CHOWN:
		F(0) = path_in_dir(p, e, st, 0, 1);
		F(1) = s32(nr == __NR_fchownat ? a[2] : a[1]);
		F(2) = s32(nr == __NR_fchownat ? a[3] : a[2]);
		F(3) = e->result;
		break;
	case SP_EV_FILE_UNLINK:
		F(0) = path_in_dir(p, e, st, 0, 1);
		F(1) = nr == __NR_unlinkat ? (uint32_t)a[2] : nr == __NR_rmdir ? AT_REMOVEDIR : 0;
		F(2) = e->result;
		break;
	case SP_EV_SOCK_CONNECT:
	case SP_EV_SOCK_BIND:
		parse_sockaddr((const uint8_t *)st->p[0],
			       (e->flags & SP_BPF_FAULT(0)) ? 0 : st->len[0], pe);
		F(0) = pe->family;
		ev->field[1].b.p = pe->addr;
		ev->field[1].b.len = pe->addr_len;
		F(2) = pe->port;
		F(3) = e->result;
		F(4) = (uint32_t)a[0];
		F(5) = pe->path ? sp_writer_str(p->out->w, pe->path, pe->path_len) : 0;
		break;
	case SP_EV_SOCK_LISTEN:
		F(0) = (uint32_t)a[0];
		F(1) = (uint32_t)a[1];
		F(2) = e->result;
		break;
	case SP_EV_SOCK_ACCEPT:
		memcpy(pe->addr, e->addr, sizeof(pe->addr));
		F(0) = e->family;
		ev->field[1].b.p = pe->addr;
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
		F(0) = str_id(p, e, st, 0);
		F(1) = str_id(p, e, st, 1);
		F(2) = str_id(p, e, st, 2);
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
		return -1;
	}
	return 0;
}

#undef F

/* The interpreted stack of event ev (of record e, from system call sk
 * or a task event): its stack id, 0 when it has none. */
static uint64_t event_stack(struct ev_priv *p, const struct sp_bpf_ev *e,
			    const struct sys_kind *sk, const struct sp_event *ev)
{
	struct sp_interpreters *ip = sp_interp_current();

	if (!ip)
		return 0;
	if (sk)
		return sp_interp_event_stack(ip, p->out, e->pid, e->tid, e->time_ns, e->nr,
					     sk->dns);
	if (ev->kind == SP_EV_PROC_FORK)
		return sp_interp_fork_stack(ip, p->out, e->pid, e->tid, e->time_ns,
					    (uint32_t)ev->field[0].u,
					    ev->field[2].u & SP_FORK_THREAD);
	if (ev->kind == SP_EV_PROC_EXEC)	/* made by its old tid */
		return sp_interp_exec_stack(ip, p->out, e->pid, (uint32_t)ev->field[3].u,
					    e->time_ns);
	if (ev->kind == SP_EV_PROC_EXIT && !ev->field[1].u)	/* a signal's: no call */
		return sp_interp_exit_stack(ip, p->out, e->pid, e->tid, e->time_ns);
	return 0;
}

int sp_ev_on_record(void *ctx, void *data, size_t size)
{
	struct ev_priv *p = ctx;
	const struct sp_bpf_ev *e = data;
	struct sp_record rec = { .kind = SP_REC_EVENT };
	struct sp_event *ev = &rec.event;
	const struct sp_event_schema *sc;
	const struct sys_kind *sk = NULL;
	struct strs st;
	struct peer pe;
	int i;

	if (!p->out || size < sizeof(*e))
		return 0;
	split_strings(e, data, size, &st);
	ev->time = e->time_ns;
	ev->pid = e->pid;
	ev->tid = e->tid;
	for (i = 0; i < SP_EVENT_MAX_FIELDS; i++)
		ev->field[i].u = 0;
	if (e->kind == SP_BPF_SYSCALL) {
		sk = sys_kind(e->nr);
		if (!sk)
			return 0;
		ev->kind = sk->kind;
		if (decode_syscall(p, e, &st, sk, ev, &pe))
			return 0;
	} else if (decode_task(p, e, &st, ev, &pe)) {
		return 0;
	}
	sc = sp_event_schema(ev->kind);
	ev->nfields = sc ? sc->nfields : 0;
	if (ev->nfields && sc->fields[ev->nfields - 1].type == SP_FT_STACK) {
		/* the interpreted stack at the call's entry, or no stack field */
		uint64_t stack = event_stack(p, e, sk, ev);

		if (stack)
			ev->field[ev->nfields - 1].u = stack;
		else
			ev->nfields--;
	}
	if (ev->kind == SP_EV_PROC_EXIT && !ev->field[2].u && sp_interp_current())
		sp_interp_proc_exit(sp_interp_current(), e->pid);
	if (p->out->emit(p->out->ctx, &rec)) {
		p->err = -1;
		return -1;
	}
	p->delivered++;
	return 0;
}
