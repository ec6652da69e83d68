// SPDX-License-Identifier: MIT
/*
 * sp-record --cgroup / --container: from what the user named to the cgroup
 * v2 directories the recording is limited to (cgroup_filter.h).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf_cgnew.h"
#include "cgroup.h"
#include "cgroup_filter.h"
#include "container_name.h"
#include "escape.h"
#include "procfs.h"
#include "sp.h"

extern char **environ;

enum { OPT_CGROUP = 0x2600, OPT_CONTAINER };

static const struct argp_option cgroup_options[] = {
	{ "cgroup", OPT_CGROUP, "PATH", 0, "With -a: record only the processes of this cgroup v2 "
	  "directory and below (\"/system.slice/nginx.service\"); may be repeated", 0 },
	{ "container", OPT_CONTAINER, "ID", 0, "With -a: record only this container's processes, "
	  "by id prefix, systemd unit, or name (podman's or docker's); every container that "
	  "matches, also one started later; may be repeated", 0 },
	{ 0 }
};

static error_t parse_cgroup_opt(int key, char *arg, struct argp_state *state)
{
	struct sp_cgroup_filter *f = state->input;

	if (!f)
		return ARGP_ERR_UNKNOWN;
	switch (key) {
	case OPT_CGROUP:
		if (arg[0] != '/' || strstr(arg, "/../") || !strcmp(arg + strlen(arg) - 3, "/..") ||
		    strlen(arg) > SP_PROC_CGROUP_MAX)
			argp_error(state, "invalid cgroup '%s': a path from the cgroup v2 root, "
				   "starting with '/', without '..'", arg);
		if (f->ncgroups == SP_CGROUP_FILTER_MAX)
			argp_error(state, "at most %d --cgroup", SP_CGROUP_FILTER_MAX);
		f->cgroups[f->ncgroups++] = arg;
		break;
	case OPT_CONTAINER:
		if (!*arg || strlen(arg) > SP_CGROUP_UNIT_MAX)
			argp_error(state, "invalid container '%s'", arg);
		if (f->ncontainers == SP_CGROUP_FILTER_MAX)
			argp_error(state, "at most %d --container", SP_CGROUP_FILTER_MAX);
		f->containers[f->ncontainers++] = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_cgroup_filter_argp = {
	.options = cgroup_options,
	.parser = parse_cgroup_opt,
};

/* The first cgroup2 mount whose root is the hierarchy's root, from
 * /proc/self/mountinfo (fields: id parent maj:min root mountpoint ... - type);
 * quiet: say nothing when there is none. */
static int cgroup2_mount_q(char *out, size_t size, bool quiet)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], root[4096], mnt[4096], *dash;
	int found = -1;

	if (!f)
		return quiet ? -1 : sp_error_errno("cannot open /proc/self/mountinfo");
	while (found && fgets(line, sizeof(line), f)) {
		dash = strstr(line, " - ");
		if (!dash || strncmp(dash + 3, "cgroup2 ", 8))
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 || strcmp(root, "/"))
			continue;
		if (strchr(mnt, '\\') || strlen(mnt) >= size)
			continue;	/* an escaped name: not ours to guess */
		snprintf(out, size, "%s", mnt);
		found = 0;
	}
	fclose(f);
	if (found && !quiet)
		sp_error("no cgroup v2 hierarchy is mounted (--cgroup and --container need one)");
	return found;
}

static int cgroup2_mount(char *out, size_t size)
{
	return cgroup2_mount_q(out, size, false);
}

/* The first free slot of f, or SP_CGROUP_FILTER_DIRS when all are taken. */
static unsigned int free_slot(const struct sp_cgroup_filter *f)
{
	unsigned int i;

	for (i = 0; i < f->n && f->id[i]; i++)
		;
	return i;
}

/* Open a cgroup directory into f. 0 (also when it is followed already: the
 * same cgroup id), 1 when it does not exist and absent is set (not
 * reported), or -1 (reported). */
static int add_dir_q(struct sp_cgroup_filter *f, int mfd, const char *path, const char *why,
		     bool absent)
{
	struct stat st;
	unsigned int i;
	int fd;

	fd = path[1] ? openat(mfd, path + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) :
		       dup(mfd);
	if (fd < 0 && errno == ENOENT && absent)
		return 1;
	if (fd < 0 || fstat(fd, &st)) {

		if (fd >= 0)
			close(fd);
		return sp_error_errno("%s: cannot open cgroup '%s'", why, path);
	}
	/* by id, not path: a directory made again at the same path (a
	 * container or service started again) is another cgroup */
	for (i = 0; i < f->n; i++)
		if (f->id[i] == st.st_ino) {
			close(fd);
			return 0;
		}
	i = free_slot(f);
	if (i == SP_CGROUP_FILTER_DIRS) {
		close(fd);
		return sp_error("more than %d cgroups to record", SP_CGROUP_FILTER_DIRS);
	}
	f->path[i] = sp_xstrdup(path);
	f->last = i;
	f->fd[i] = fd;
	f->id[i] = st.st_ino;
	if (i == f->n)
		f->n++;
	f->gen++;
	f->nadded++;
	return 0;
}

/* Slot i's cgroup was removed: its directory is closed and the slot is
 * free for the next (a recording that sees many containers come and go
 * holds only the running ones'). */
static void drop_dir(struct sp_cgroup_filter *f, unsigned int i)
{

	/* users name their own cgroups (delegated, rootless): escaped */
	sp_info("cgroup '%s' removed: its events are closed", f->path[i]);
	close(f->fd[i]);
	free(f->path[i]);
	f->path[i] = NULL;
	f->fd[i] = -1;
	f->id[i] = 0;
	f->gen++;
	f->nremoved++;
}

static int add_dir(struct sp_cgroup_filter *f, int mfd, const char *path, const char *why)
{
	return add_dir_q(f, mfd, path, why, false) < 0 ? -1 : 0;
}

static bool is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return n > 0;
}

/* The container id `tool inspect` gives for a name, into id[65]. 0 or -1
 * (the tool is missing, or knows no such container: not reported). */
static int inspect(const char *tool, const char *name, char *id)
{
	char *argv[] = { (char *)tool, "inspect", "--format", "{{.Id}}", (char *)name, NULL };
	posix_spawn_file_actions_t fa;
	char buf[256];
	size_t len = 0;
	ssize_t n;
	int fds[2], status = -1;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, tool, &fa, NULL, argv, environ))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	while (pid > 0 && (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;	/* bounded: the rest is left unread */
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || status)
		return -1;
	while (len && isspace((unsigned char)buf[len - 1]))
		len--;
	if (len != 64 || !is_hex(buf, 64))
		return -1;
	memcpy(id, buf, 64);
	id[64] = 0;
	return 0;
}

/* The cgroup of one container: the process's path cut after the part that
 * names id (a process may sit in a cgroup below its container's). */
static bool container_dir(const char *cgpath, const char *id, char *out, size_t size)
{
	const char *at = strstr(cgpath, id), *end;

	if (!at)
		return false;
	end = strchr(at, '/');
	if (!end)
		end = at + strlen(at);
	if ((size_t)(end - cgpath) >= size)
		return false;
	memcpy(out, cgpath, (size_t)(end - cgpath));
	out[end - cgpath] = 0;
	return true;
}

/* Every running process's container whose id matches want (a prefix of
 * hex digits, or the whole id: a unit name); its cgroups into f. 0, 1 when
 * no process matched, -1 (reported). */
static int add_container(struct sp_cgroup_filter *f, int mfd, const char *want)
{
	struct sp_proc_identity *pid_id = sp_xcalloc(1, sizeof(*pid_id));
	struct sp_cgroup_owner o;
	char first[SP_CGROUP_UNIT_MAX + 1] = "", dir[SP_PROC_CGROUP_MAX + 1];
	bool prefix = is_hex(want, strlen(want));
	uint32_t *pids = NULL;
	size_t npids = 0, i, len = strlen(want);
	int ret = 0, found = 0;

	if (sp_procfs_pids(&pids, &npids))
		npids = 0;
	/* an identity is one process's, read by number between two reads of
	 * its start time: a pid reused meanwhile gives none (procfs.c) */
	for (i = 0; i < npids && !ret; i++) {
		if (sp_procfs_identity(pids[i], pid_id) || !pid_id->cgroup[0] ||
		    !sp_cgroup_owner(pid_id->cgroup, strlen(pid_id->cgroup), &o) || !o.id[0])
			continue;
		if (prefix ? strncmp(o.id, want, len) : strcmp(o.id, want))
			continue;
		if (first[0] && strcmp(first, o.id)) {
			ret = sp_error("container '%s' is ambiguous: %.12s and %.12s", want, first, o.id);
			break;
		}
		snprintf(first, sizeof(first), "%s", o.id);
		if (!container_dir(pid_id->cgroup, o.id, dir, sizeof(dir)))
			continue;
		ret = add_dir(f, mfd, dir, "--container");
		found++;
	}
	free(pids);
	free(pid_id);
	if (ret)
		return -1;
	return found ? 0 : 1;	/* none: the caller tries the name, then says so */
}

/* A container by id prefix or unit, else by name (podman, then docker),
 * the names only when inspect is set. 0 found, 1 not (yet), -1 (reported). */
static int find_container(struct sp_cgroup_filter *f, int mfd, const char *c, bool inspect_ok)
{
	char id[65];
	int r = add_container(f, mfd, c);

	if (r == 1 && inspect_ok && (!inspect("podman", c, id) || !inspect("docker", c, id)))
		r = add_container(f, mfd, id);
	return r;
}

int sp_cgroup_filter_resolve(struct sp_cgroup_filter *f)
{
	char mnt[4096];
	unsigned int i;
	int mfd, r;

	if (!sp_cgroup_filter_given(f))
		return 0;
	if (cgroup2_mount(mnt, sizeof(mnt)))
		return -1;
	mfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return sp_error_errno("cannot open the cgroup v2 root '%s'", mnt);
	/* before the running processes are looked at: a cgroup made from
	 * here on is told, none falls in between */
	if (getenv("SP_CGROUPS_POLL") && !strcmp(getenv("SP_CGROUPS_POLL"), "1"))
		sp_info("cgroups made while recording: looked for every 200 ms "
			"(SP_CGROUPS_POLL=1)");
	else
		f->watch = sp_cgwatch_open();
	f->polling = !f->watch;
	if (!f->names_root)
		f->names_root = "/";
	for (i = 0; i < f->ncgroups; i++) {
		r = add_dir_q(f, mfd, f->cgroups[i], "--cgroup", true);
		if (r < 0)
			goto fail;
		f->cgroup_seen[i] = r == 0;
		if (r == 0)
			continue;
		sp_warn("--cgroup: '%s' does not exist (yet): its processes are recorded once it "
			"is made", f->cgroups[i]);
		f->cgroup_waits[i] = true;
		f->nwaiting++;
	}
	for (i = 0; i < f->ncontainers; i++) {
		r = find_container(f, mfd, f->containers[i], true);
		if (r < 0)
			goto fail;
		f->container_seen[i] = r == 0;
		if (r == 0)
			continue;
		sp_warn("--container: no running process belongs to a container '%s' (an id "
			"prefix, a systemd unit, or a name podman or docker knows) yet: its "
			"processes are recorded once it starts", f->containers[i]);
		f->container_waits[i] = true;
		f->nwaiting++;
	}
	if (!sp_cgroup_filter_following(f)) {
		close(mfd);
		return 0;
	}
	f->mfd = mfd;
	f->next_look_ns = f->next_inspect_ns = sp_now_mono_ns() + 200 * 1000000ull;
	return 0;
fail:
	sp_cgwatch_free(f->watch);
	f->watch = NULL;
	f->polling = false;
	close(mfd);
	return -1;
}

int sp_cgroup_filter_fd(const struct sp_cgroup_filter *f)
{
	return f && f->watch ? sp_cgwatch_fd(f->watch) : -1;
}

/* Whether the container id/name o is what --container want names. */
static bool wanted_container(struct sp_cgroup_filter *f, const struct sp_cgroup_owner *o,
			     const char *want)
{
	size_t len = strlen(want);
	char id[65];
	int r;

	if (is_hex(want, len) ? !strncmp(o->id, want, len) : !strcmp(o->id, want))
		return true;
	if (!o->runtime || !strcmp(o->runtime, "systemd"))
		return false;	/* names are containers' */
	r = sp_container_named(f->names_root, o->id, want);
	if (r >= 0)
		return r == 1;
	/* a runtime whose files we do not read: ask it (a process, and it may
	 * wait for the runtime's lock while the container starts) */
	return !strcmp(f->names_root, "/") &&
	       ((!inspect("podman", want, id) && !strcmp(id, o->id)) ||
		(!inspect("docker", want, id) && !strcmp(id, o->id)));
}

static void said_appeared(const char *dir)
{

	sp_info("cgroup '%s' appeared: recorded from now on", dir);
}

static bool seen_before(struct sp_cgroup_filter *f, const char *id)
{
	unsigned int i;

	for (i = 0; i < f->nseen && i < 64; i++)
		if (!strcmp(f->seen[i], id))
			return true;
	return false;
}

int sp_cgroup_filter_consider(struct sp_cgroup_filter *f, const char *path)
{
	char dir[SP_PROC_CGROUP_MAX + 1];
	struct sp_cgroup_owner o;
	unsigned int i;
	uint64_t before = f->nadded;
	const char *found = NULL;

	for (i = 0; i < f->ncgroups && !found; i++)
		if (!strcmp(path, f->cgroups[i])) {
			found = f->cgroups[i];
			f->cgroup_waits[i] = false;
			f->cgroup_seen[i] = true;
			snprintf(dir, sizeof(dir), "%s", path);
		}
	if (!found && f->ncontainers && sp_cgroup_owner(path, strlen(path), &o) && o.id[0] &&
	    container_dir(path, o.id, dir, sizeof(dir))) {
		/* its directory followed already, or matched nothing before */
		for (i = 0; i < f->n; i++)
			if (f->path[i] && !strcmp(f->path[i], dir)) {
				struct stat st;

				if (fstatat(f->mfd, dir[1] ? dir + 1 : ".", &st,
					    AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == f->id[i])
					return 0;
			}
		if (seen_before(f, o.id))
			return 0;
		for (i = 0; i < f->ncontainers && !found; i++)
			if (wanted_container(f, &o, f->containers[i])) {
				found = f->containers[i];
				f->container_waits[i] = false;
				f->container_seen[i] = true;
			}
		if (!found) {
			snprintf(f->seen[f->nseen++ % 64], sizeof(f->seen[0]), "%.64s", o.id);
			return 0;
		}
	}
	if (!found)
		return 0;
	if (free_slot(f) == SP_CGROUP_FILTER_DIRS) {
		if (!f->full_said)
			sp_warn("more than %d cgroups followed: '%s' (%s) and the later ones are "
				"not recorded", SP_CGROUP_FILTER_DIRS, dir, found);
		f->full_said = true;
		return 0;
	}
	if (add_dir_q(f, f->mfd, dir, found[0] == '/' ? "--cgroup" : "--container", true) < 0)
		return 0;	/* said; a directory gone already (1): nothing to follow */
	if (f->nadded == before)
		return 0;
	said_appeared(dir);
	return 1;
}

/* Whether cgroup id is one of f's directories or below one. */
static bool followed_id(const struct sp_cgroup_filter *f, uint64_t id)
{
	char path[SP_PROC_CGROUP_MAX + 1];
	unsigned int i;

	for (i = 0; i < f->n; i++)
		if (f->id[i] == id)
			return true;
	return f->n && sp_cgroup_path_by_id(id, path, sizeof(path)) == 0 &&
	       sp_cgroup_filter_match(f, path);
}

static int read_path(const struct sp_cgroup_filter *f, uint64_t id, char *buf, size_t size)
{
	return (f->path_by_id ? f->path_by_id : sp_cgroup_path_by_id)(id, buf, size);
}

/* A cgroup made whose path was not readable, dropped: removed within the
 * wait, or never readable. Said once with -v, counted. */
static void unread_dropped(struct sp_cgroup_filter *f, uint64_t id, const char *why)
{
	if (!f->nunread_dropped++)
		sp_info("cgroup %llu: made, but %s: not followed (further ones counted)",
			(unsigned long long)id, why);
}

/* A cgroup made, told by the kernel at now: followed if its path matches
 * what was named; a path not readable yet asked for again later. */
static void made(struct sp_cgroup_filter *f, uint64_t id, uint64_t now)
{
	char path[SP_PROC_CGROUP_MAX + 1];

	if (read_path(f, id, path, sizeof(path)) == 0) {
		sp_cgroup_filter_consider(f, path);
		return;
	}
	if (f->nunread == SP_CGROUP_FILTER_UNREAD) {
		unread_dropped(f, id, "more cgroups than that wait to be readable");
		return;
	}
	f->unread[f->nunread++] = (struct sp_cgroup_unread){ id, now + SP_CGROUP_FILTER_UNREAD_NS };
}

/* The cgroups made whose paths were not readable before, asked again:
 * followed once they read, dropped past their wait. */
static void take_unread(struct sp_cgroup_filter *f, uint64_t now)
{
	char path[SP_PROC_CGROUP_MAX + 1];
	unsigned int i, k = 0;

	for (i = 0; i < f->nunread; i++) {
		struct sp_cgroup_unread u = f->unread[i];

		if (read_path(f, u.id, path, sizeof(path)) == 0)
			sp_cgroup_filter_consider(f, path);
		else if (now >= u.until_ns)
			unread_dropped(f, u.id, "its path never became readable");
		else
			f->unread[k++] = u;
	}
	f->nunread = k;
}

/* Cgroup id was removed: its slot freed, and no longer asked for. */
static void removed(struct sp_cgroup_filter *f, uint64_t id)
{
	unsigned int i, k = 0;

	for (i = 0; i < f->n; i++)
		if (f->id[i] == id)
			drop_dir(f, i);
	for (i = 0; i < f->nunread; i++)
		if (f->unread[i].id != id)
			f->unread[k++] = f->unread[i];
	f->nunread = k;
}

unsigned int sp_cgroup_filter_told(struct sp_cgroup_filter *f, const struct sp_cgwatch_ev *ev,
				   size_t n, uint64_t now)
{
	uint64_t before = f->nadded;
	size_t i;

	if (f->nunread)
		take_unread(f, now);
	for (i = 0; i < n; i++) {
		if (ev[i].gone) {
			removed(f, ev[i].id);
		} else if (!ev[i].pid) {
			made(f, ev[i].id, now);
		} else if (f->nmoved < SP_CGROUP_FILTER_MOVED && followed_id(f, ev[i].id)) {
			f->moved[f->nmoved].pid = ev[i].pid;
			f->moved[f->nmoved].ppid = ev[i].ppid;
			memcpy(f->moved[f->nmoved++].comm, ev[i].comm, sizeof(ev[i].comm));
		}
	}
	f->nwaiting = 0;
	for (i = 0; i < f->ncgroups + f->ncontainers; i++)
		f->nwaiting += i < f->ncgroups ? f->cgroup_waits[i] :
			       f->container_waits[i - f->ncgroups];
	return (unsigned int)(f->nadded - before);
}

/*
 * Polling: the directories followed that were removed (none at their path
 * any more, or another cgroup made there since: another inode) are freed,
 * as the kernel's word frees them with a watch, and every name is waited
 * for again: one whose cgroups still run is found again at once (the same
 * ids: nothing new opened), one made again later is followed again.
 */
static void look_removed(struct sp_cgroup_filter *f)
{
	unsigned int i;
	bool any = false;
	struct stat st;

	for (i = 0; i < f->n; i++) {
		if (!f->id[i] || !f->path[i][1])
			continue;	/* a free slot; the root stays */
		if (fstatat(f->mfd, f->path[i] + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 ?
		    st.st_ino == f->id[i] : errno != ENOENT && errno != ENOTDIR)
			continue;	/* there, or cannot tell: kept */
		drop_dir(f, i);
		any = true;
	}
	if (!any)
		return;
	for (i = 0; i < f->ncgroups; i++)
		if (!f->cgroup_waits[i]) {
			f->cgroup_waits[i] = true;
			f->nwaiting++;
		}
	for (i = 0; i < f->ncontainers; i++)
		if (!f->container_waits[i]) {
			f->container_waits[i] = true;
			f->nwaiting++;
		}
}

unsigned int sp_cgroup_filter_follow(struct sp_cgroup_filter *f, uint64_t now)
{
	unsigned int i;
	uint64_t before = f->nadded;
	bool inspect_ok;
	int r;

	if (f->watch) {
		const struct sp_cgwatch_ev *ev;
		size_t n = sp_cgwatch_read(f->watch, &ev);

		return sp_cgroup_filter_told(f, ev, n, now);
	}
	if (!f->polling || now < f->next_look_ns)
		return 0;
	f->next_look_ns = now + 200 * 1000000ull;
	look_removed(f);
	if (!f->nwaiting)
		return 0;
	inspect_ok = now >= f->next_inspect_ns;
	if (inspect_ok)
		f->next_inspect_ns = now + 1000 * 1000000ull;
	for (i = 0; i < f->ncgroups; i++) {
		if (!f->cgroup_waits[i])
			continue;
		uint64_t had = f->nadded;

		r = add_dir_q(f, f->mfd, f->cgroups[i], "--cgroup", true);
		if (r == 1)
			continue;	/* not yet */
		if (f->nadded > had)
			said_appeared(f->cgroups[i]);
		f->cgroup_waits[i] = false;	/* found, or said why not */
		f->cgroup_seen[i] |= r == 0;
		f->nwaiting--;
	}
	for (i = 0; i < f->ncontainers; i++) {
		if (!f->container_waits[i])
			continue;
		uint64_t had = f->nadded;

		r = find_container(f, f->mfd, f->containers[i], inspect_ok);
		if (r == 1)
			continue;
		if (f->nadded > had)
			said_appeared(f->path[f->last]);
		f->container_waits[i] = false;
		f->container_seen[i] |= r == 0;
		f->nwaiting--;
	}
	return (unsigned int)(f->nadded - before);
}

bool sp_cgroup_filter_match(const struct sp_cgroup_filter *f, const char *path)
{
	unsigned int i;
	size_t n;

	for (i = 0; i < f->n; i++) {
		if (!f->path[i])
			continue;	/* a free slot */
		n = strlen(f->path[i]);
		if (!strcmp(f->path[i], "/") ||
		    (!strncmp(path, f->path[i], n) && (path[n] == 0 || path[n] == '/')))
			return true;
	}
	return false;
}

void sp_cgroup_filter_release(struct sp_cgroup_filter *f)
{
	unsigned int i;

	for (i = 0; i < f->ncgroups + f->ncontainers; i++) {
		const char *name = i < f->ncgroups ? f->cgroups[i] : f->containers[i - f->ncgroups];

		if (!(i < f->ncgroups ? f->cgroup_waits[i] : f->container_waits[i - f->ncgroups]) ||
		    (i < f->ncgroups ? f->cgroup_seen[i] : f->container_seen[i - f->ncgroups]))
			continue;
		sp_warn("%s '%s' never appeared while recording: nothing of it was recorded",
			i < f->ncgroups ? "--cgroup" : "--container", name);
	}
	if (sp_cgroup_filter_following(f))
		close(f->mfd);
	sp_cgwatch_free(f->watch);
	f->watch = NULL;
	f->polling = false;
	f->nwaiting = 0;
	memset(f->cgroup_waits, 0, sizeof(f->cgroup_waits));
	memset(f->container_waits, 0, sizeof(f->container_waits));
	for (i = 0; i < f->n; i++) {
		if (f->path[i])
			close(f->fd[i]);
		free(f->path[i]);
	}
	f->n = 0;
}

int sp_cgroup_path_by_id(uint64_t id, char *buf, size_t size)
{
	static int mfd = -2;
	static char mnt[4096];
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh.handle_bytes = sizeof(uint64_t), .fh.handle_type = 0xfe /* FILEID_KERNFS */ };
	char self[64], path[SP_PROC_CGROUP_MAX + 4096 + 1];
	size_t ml;
	ssize_t n;
	int fd;

	if (mfd == -2)
		mfd = cgroup2_mount_q(mnt, sizeof(mnt), true) ? -1 :
		      open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0 || !id)
		return -1;
	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(mfd, &h.fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = readlink(self, path, sizeof(path) - 1);
	close(fd);
	ml = strlen(mnt);
	if (n <= 0 || (size_t)n < ml || memcmp(path, mnt, ml) || (size_t)n - ml >= size)
		return -1;
	path[n] = 0;
	snprintf(buf, size, "%s", (size_t)n == ml ? "/" : path + ml);
	return 0;
}
