// SPDX-License-Identifier: MIT
/*
 * -a with --spans=ruby/python (docs/spans.md, "The whole machine"): the
 * processes that carry a runtime hook, started with an activator in their
 * environment (by an earlier sp-record, a service's own environment, a
 * container's), are recorded as -p pids are: each found at the start, and
 * each that loads its hook later, through its mappings. Nothing is
 * attached to a process without a hook: sp-record cannot load one into a
 * running interpreter, and Ruby's and Python's own probes in every one of
 * them would slow the whole machine.
 *
 * A process's hook is loaded while its interpreter starts (RUBYOPT's -r,
 * Python's sitecustomize), so a process is looked at again at each pass
 * while it is young, and once more when older only if it was never seen:
 * each pass reads the mappings of the processes started in the last
 * SP_BS_ALL_YOUNG_S seconds and of the new pids, not of the whole machine.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpf_spansP.h"
#include "cgroup_filter.h"
#include "procfs.h"
#include "sp.h"

#define SP_BS_ALL_EVERY_NS	200000000ull	/* between two passes */
#define SP_BS_ALL_YOUNG_S	5		/* a process looked at again until this old */

/* Whether a line of /proc/PID/maps names a runtime hook's file (its name as
 * the process sees it: another mount namespace's path is fine). */
bool sp_bs_maps_line_hook(const char *line)
{
	const char *path = strchr(line, '/'), *base;

	if (!path)
		return false;
	base = strrchr(path, '/') + 1;
	return !strncmp(base, "stackpulse_hook.so", 18) ||
	       !strncmp(base, "_stackpulse_hook.cpython-", 25);
}

#define SP_BS_ALL_MAPS_LINES	65536	/* a process's mappings read, at most */
#define SP_BS_ALL_REFUSALS	64	/* refused hooks said with -v, at most */

/* --cgroup/--container: a process outside them is none of ours. */
static bool in_filter(const struct bs_ctx *c, uint32_t pid)
{
	struct sp_proc_identity *id;
	bool in;

	if (!c->o->cgroups || !sp_cgroup_filter_given(c->o->cgroups))
		return true;
	id = sp_xcalloc(1, sizeof(*id));
	in = sp_procfs_identity(pid, id) == 0 && id->cgroup[0] &&
	     sp_cgroup_filter_match(c->o->cgroups, id->cgroup);
	free(id);
	return in;
}

/*
 * Whether the hook a line names is one root installed: the mapped file
 * itself (through /proc/PID/map_files, whatever its path says) is a
 * regular file owned by root. A file any user can name so would otherwise
 * let every user on the machine opt a process in to root's probes and
 * reads, which -a takes on no one's word. One refused is said once a
 * process (*said), with -v, if --cgroup/--container take it (another's
 * is none of ours), and SP_BS_ALL_REFUSALS in all: a process that is
 * not remembered (c->all_seen full) is judged, and would be said, again
 * at each pass.
 */
static bool hook_trusted(struct bs_ctx *c, uint32_t pid, const char *line, bool *said)
{
	unsigned long long lo, hi;
	char path[96];
	const char *name = strchr(line, '/');
	struct stat st;
	bool ok;

	if (sscanf(line, "%llx-%llx", &lo, &hi) != 2)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid, lo, hi);
	ok = stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	     !(st.st_mode & (S_IWGRP | S_IWOTH));
	if (!ok && !*said && name && in_filter(c, pid)) {
		if (c->all_refusals < SP_BS_ALL_REFUSALS)	/* sp_info() escapes the path */
			sp_info("spans: pid %u maps a runtime hook not root's, or writable by "
				"others than root: not recorded: %.*s", pid,
				(int)strcspn(name, "\n"), name);
		else if (c->all_refusals == SP_BS_ALL_REFUSALS)
			sp_info("spans: more processes map a runtime hook not root's, or "
				"writable by others than root: not recorded, not said");
		if (c->all_refusals <= SP_BS_ALL_REFUSALS)
			c->all_refusals++;
		*said = true;
	}
	return ok;
}

static bool carries_hook(struct bs_ctx *c, uint32_t pid, bool *said)
{
	char maps[64], line[PATH_MAX + 256];
	unsigned int lines = 0;
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	while (f && !found && lines++ < SP_BS_ALL_MAPS_LINES && fgets(line, sizeof(line), f))
		found = sp_bs_maps_line_hook(line) && hook_trusted(c, pid, line, said);
	if (f)
		fclose(f);
	return found;
}

/*
 * c->all_seen: each listed pid not tracked -> its start time, whether it
 * was judged when BPF asked for it (a process outside --cgroup that runs
 * root's hook asks at every marker BPF's memory of asks has forgotten:
 * judged once), whether its hook was refused and said (once), and the
 * pass it was last listed in.
 * Bounded: past SP_BS_ALL_SEEN_MAX pids, others are judged at every pass.
 */
#define SEEN_START(v)		((v) >> 18)
#define SEEN_WAS_ASKED(v)	(((v) >> 17) & 1)
#define SEEN_SAID(v)		(((v) >> 16) & 1)
#define SP_BS_ALL_SEEN_MAX	262144

/*
 * Whether a pass reads the start time of a listed pid (seen: its entry, or
 * NULL): a new one's, or a young one's (its hook may load still); an old
 * one judged already only one pass in SP_BS_ALL_RECHECK (spread over the
 * pids), not every 200 ms. Its pid reused meanwhile (after a wrap of the
 * pids) is looked at by then.
 */
bool sp_bs_all_read_start(const uint64_t *seen, uint64_t young, uint64_t pass, uint32_t pid)
{
	if (!seen || SEEN_START(*seen) >= young)
		return true;
	return (pass + pid) % SP_BS_ALL_RECHECK == 0;
}

/* Whether a pid that started at t has its mappings read: not when judged
 * already at that start, and old enough to have its hook. */
bool sp_bs_all_judge(const uint64_t *seen, uint64_t t, uint64_t young)
{
	return !seen || SEEN_START(*seen) != t || t >= young;
}

static uint64_t boot_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ((uint64_t)ts.tv_sec * (uint64_t)hz) + (uint64_t)ts.tv_nsec / (1000000000ull / hz);
}

/*
 * Record pid, judged as the process that started at t, as -p does: 0, 1
 * when it was not that process by then (undone), -1 when it cannot be
 * taken (said; c->err when fatal).
 *
 * The seed acts on the pid's number: BPF tracks it, probes are attached
 * to it, /proc/PID/... is read. Checking after is enough: a pid is not
 * reused while its process exists (a zombie holds it until reaped), so
 * the start time t after the seed proves that all it did in between was
 * done to the process judged. Else that one ended meanwhile, and the pid
 * is nobody's or another's (another user's): all the seed did is undone
 * (sp_bs_untrack()), and a later pass judges the pid anew. The runtimes
 * it found are announced (a runtime record) only once it is checked.
 */
int sp_bs_all_take(struct bs_ctx *c, uint32_t pid, uint64_t t, const char *self)
{
	struct bs_proc *p;
	int r;

	c->all_seeding = true;
	r = sp_bs_seed(c, pid, self, false, false);
	c->all_seeding = false;
	p = sp_bs_proc_get(c, pid);
	if (r || !p)
		return -1;
	if (sp_procfs_same_process(pid, t)) {
		sp_bs_announce(c, p);
		return 0;
	}
	sp_info("spans: pid %u ended while it was being attached: let go", pid);
	sp_bs_untrack(c, p);
	return 1;
}

/* The executable of sp-record, read once (what a seed leaves alone). */
static const char *self_exe(char *self, size_t size)
{
	if (!self[0]) {
		ssize_t len = readlink("/proc/self/exe", self, size - 1);

		self[len > 0 ? len : 0] = 0;
	}
	return self;
}

/*
 * Judge pid, which started at t (seen: its c->all_seen entry, or NULL;
 * asked: BPF asked for it), and take it when it carries a trusted hook and
 * the filters take it. 1 when taken, 0 when not, -1 when the recording
 * cannot go on (c->err).
 */
static int judge(struct bs_ctx *c, uint32_t pid, uint64_t t, uint64_t *seen, bool asked,
		 char *self, size_t self_size)
{
	bool said = seen && SEEN_START(*seen) == t && SEEN_SAID(*seen);
	int r;

	if (!carries_hook(c, pid, &said) || !in_filter(c, pid)) {
		if (seen || c->all_seen.n < SP_BS_ALL_SEEN_MAX)
			sp_u64map_put(&c->all_seen, pid, SP_BS_ALL_SEEN(t, asked, said,
									c->all_pass));
		return 0;
	}
	/* Its mappings were read: the pid still names the process that
	 * started at t, not another (another user's) that took it
	 * meanwhile. If not, it is judged anew at the next pass. */
	if (!sp_procfs_same_process(pid, t)) {
		if (seen)
			sp_u64map_del(&c->all_seen, pid);
		return 0;
	}
	if (seen || c->all_seen.n < SP_BS_ALL_SEEN_MAX)
		sp_u64map_put(&c->all_seen, pid, SP_BS_ALL_SEEN(t, asked, said, c->all_pass));
	sp_info("spans: pid %u carries a runtime hook: recorded as with -p", pid);
	/* one that cannot be taken (a full map) is said by the seed;
	 * the others still are. One that ended meanwhile: its pid is
	 * judged anew once its bookkeeping is forgotten. */
	r = sp_bs_all_take(c, pid, t, self_exe(self, self_size));
	if (r > 0)
		sp_u64map_del(&c->all_seen, pid);
	if (!r)
		c->all_found++;
	return r < 0 && c->err ? -1 : !r;
}

#define SP_BS_ALL_ASKED_MAX	1024	/* pids asked for between two polls, kept */

void sp_bs_all_ask(struct bs_ctx *c, uint32_t pid)
{
	/* past the bound, the next pass of /proc finds it */
	if (!c->all || c->nasked >= SP_BS_ALL_ASKED_MAX)
		return;
	sp_grow(&c->all_asked, &c->cap_asked, c->nasked + 1, sizeof(*c->all_asked));
	c->all_asked[c->nasked++] = pid;
}

int sp_bs_all_asked(struct bs_ctx *c)
{
	char self[PATH_MAX] = "";
	uint64_t t, *seen;
	size_t i;
	int r = 0, taken = 0;

	for (i = 0; i < c->nasked && r >= 0; i++) {
		uint32_t pid = c->all_asked[i];

		/* tracked already, or an earlier process of that pid not
		 * forgotten yet (the next pass judges it) */
		if (pid == (uint32_t)getpid() || sp_bs_proc_get(c, pid))
			continue;
		if (sp_procfs_start(pid, &t) || !t)
			continue;	/* gone */
		/* judged whatever a pass judged before (it runs a hook's
		 * markers now: one it loaded since, say), but once on an ask */
		seen = sp_u64map_get(&c->all_seen, pid);
		if (seen && SEEN_START(*seen) == t && SEEN_WAS_ASKED(*seen))
			continue;
		r = judge(c, pid, t, seen, true, self, sizeof(self));
		if (r > 0) {
			taken++;
			c->all_asked_found++;
		}
	}
	c->nasked = 0;
	return r < 0 ? -1 : taken;
}

int sp_bs_all_scan(struct bs_ctx *c, uint64_t now)
{
	char self[PATH_MAX] = "";
	uint64_t young, t, *seen;
	uint32_t *pids = NULL, me = (uint32_t)getpid();
	size_t npids = 0, i, it;
	uint64_t k, v, *gone = NULL;
	size_t ngone = 0;

	if (!c->all || (c->all_next_ns && now < c->all_next_ns))
		return 0;
	c->all_next_ns = now + SP_BS_ALL_EVERY_NS;
	if (sp_procfs_pids(&pids, &npids))
		return 0;
	young = boot_ticks() - SP_BS_ALL_YOUNG_S * (uint64_t)sysconf(_SC_CLK_TCK);
	c->all_pass++;
	for (i = 0; i < npids; i++) {
		struct bs_proc *p = sp_bs_proc_get(c, pids[i]);

		/* tracked already (or by its fork), or an earlier process of
		 * that pid whose bookkeeping forget_gone() has not dropped yet */
		if (pids[i] == me || p)
			continue;
		seen = sp_u64map_get(&c->all_seen, pids[i]);
		if (!sp_bs_all_read_start(seen, young, c->all_pass, pids[i])) {
			*seen = SP_BS_ALL_SEEN(SEEN_START(*seen), SEEN_WAS_ASKED(*seen),
					       SEEN_SAID(*seen), c->all_pass);
			continue;
		}
		if (sp_procfs_start(pids[i], &t) || !t)
			continue;	/* gone */
		if (!sp_bs_all_judge(seen, t, young)) {
			*seen = SP_BS_ALL_SEEN(t, SEEN_WAS_ASKED(*seen), SEEN_SAID(*seen),
					       c->all_pass);
			continue;
		}
		/* (judged on an ask at this start: still so) */
		if (judge(c, pids[i], t, seen, seen && SEEN_START(*seen) == t && SEEN_WAS_ASKED(*seen),
			  self, sizeof(self)) < 0)
			break;
	}
	free(pids);
	/* the pids not listed in this pass are gone: forgotten */
	for (it = 0; sp_u64map_next(&c->all_seen, &it, &k, &v);)
		if ((v & 0xffff) != (c->all_pass & 0xffff)) {
			gone = sp_xrealloc(gone, (ngone + 1) * sizeof(*gone));
			gone[ngone++] = k;
		}
	for (i = 0; i < ngone; i++)
		sp_u64map_del(&c->all_seen, gone[i]);
	free(gone);
	return c->err ? -1 : 0;
}
