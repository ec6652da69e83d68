// SPDX-License-Identifier: MIT
/*
 * The perf source's sampling event (perf_sourceP.h): event names, the
 * perf_event_attr, what this kernel and our permissions allow (probed on
 * ourselves when the source is made), and the events themselves: one per
 * online CPU that follows the target and, through inherit=1, its
 * descendants (cpu=-1 with inherit cannot be mmapped), the first on each
 * CPU owning the ring the others write into. The event clock is
 * CLOCK_MONOTONIC (use_clockid), the clock of every other source. Also
 * sp-record --check's table of what this machine supports.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "perf_sourceP.h"
#include "proc_pin.h"
#include "procfs.h"
#include "sp.h"
#include "unwind.h"

/* ---- names ---- */

static const struct event_name {
	const char *name;
	uint32_t type;
	uint64_t config;
} events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },	/* side-band records only */
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};

int sp_perf_event_lookup(const char *name, uint32_t *type, uint64_t *config, bool *hardware)
{
	size_t i;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		if (!strcmp(name, events[i].name)) {
			*type = events[i].type;
			*config = events[i].config;
			*hardware = events[i].type == PERF_TYPE_HARDWARE;
			return 0;
		}
	}
	return -1;
}

const char *sp_perf_event_names(void)
{
	return "cpu-clock task-clock page-faults minor-faults major-faults context-switches "
	       "cpu-migrations alignment-faults emulation-faults cycles instructions "
	       "cache-references cache-misses branches branch-misses bus-cycles ref-cycles";
}

int sp_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group)
{
	return sp_perf_event_open(attr, pid, cpu, group);
}

int sp_perf_paranoid_level(void)
{
	char buf[32] = "";
	int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 2;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : 2;
}

/* ---- the events of a recording ---- */

static int add_fd(struct perf *p, int fd, unsigned int cpu)
{
	sp_grow(&p->fds, &p->fds_cap, p->nfds + 1, sizeof(*p->fds));
	sp_grow(&p->fd_cpu, &p->fd_cpu_cap, p->nfds + 1, sizeof(*p->fd_cpu));
	p->fd_cpu[p->nfds] = cpu;
	p->fds[p->nfds++] = fd;
	return fd;
}

/* The pages of each CPU's ring: -m, or enough for the stack copies. */
static unsigned int ring_pages(const struct perf *p)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (p->o.pages)
		return p->o.pages;
	if (p->o.call_graph < SP_CG_DWARF)
		return DEFAULT_PAGES;
	/* Without root, the rings count against perf_event_mlock_kb and then
	 * RLIMIT_MEMLOCK: rings scaled for 32 KiB copies are over both on
	 * Debian's defaults, and the mmap fails. The 8 KiB copies' size fits. */
	if (geteuid())
		return DWARF_PAGES;
	/* The whole machine with stack copies: the first half second unwinds
	 * every binary once and overflowed 2 MiB rings; four times that while
	 * all rings stay within 64 MiB. */
	if (p->system_wide && (uint64_t)p->ncpus * DWARF_PAGES * 4 * page <= 64 << 20)
		return sp_perf_ring_pages(DWARF_PAGES * 4, p->o.stack_size, p->ncpus, page);
	return sp_perf_ring_pages(DWARF_PAGES, p->o.stack_size, p->ncpus, page);
}

/*
 * -a --cgroup/--container: CPU i's ring is owned by an event of no cgroup
 * that writes nothing into it (a dummy software event, which never
 * samples, with no side-band record asked for), so that every cgroup's
 * events can close when it is removed: the event that owns a ring cannot
 * (its mapping needs it), and one of a cgroup kept that cgroup in the
 * kernel, removed but not freed, until the end. The ring's wake-up and
 * clock are the sampling events'. 0, or -1 with errno set.
 */
static int open_ring_owner(struct perf *p, unsigned int i)
{
	struct perf_event_attr a = { .size = sizeof(a) };
	struct cpu_ring *c = &p->cpus[i];
	int fd;

	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.use_clockid = p->attr.use_clockid;
	a.clockid = p->attr.clockid;
	a.watermark = p->attr.watermark;
	a.wakeup_watermark = p->attr.wakeup_watermark;
	a.wakeup_events = p->attr.wakeup_events;
	a.exclude_kernel = p->attr.exclude_kernel;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, -1, c->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	c->fd = fd;
	c->own_fd = true;
	return 0;
}

/* Open the event for (pid, cpu i): the first on a CPU owns its ring, the
 * others write into it. 0, or -1 with errno set. */
static int open_on(struct perf *p, pid_t pid, unsigned int i)
{
	struct cpu_ring *c = &p->cpus[i];
	/* edge-triggered: a ring whose first event was a process's that
	 * ended (-p A -p B, A gone) says EPOLLHUP for good while B's events
	 * still write into it; level-triggered, the loop would spin. Every
	 * pass drains every ring anyway (perf_queue.h). */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	unsigned int pages = ring_pages(p);
	int fd;

	p->failed_call = "perf_event_open";
	if (p->cgroup_mode && c->fd < 0) {
		p->failed_call = "perf_event_open of the ring's owner";
		if (open_ring_owner(p, i))
			return -1;
		p->failed_call = geteuid() ? "mmap of the ring buffer (over perf_event_mlock_kb? "
					     "try a smaller -m)" : "mmap of the ring buffer";
		if (sp_perf_ring_map(&p->rings[i], c->fd, pages))
			return -1;
		ev.data.u32 = i;
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, c->fd, &ev))
			return -1;
		p->failed_call = "perf_event_open";
	}
	if (p->cgroup_mode)	/* pid is a cgroup directory's descriptor */
		fd = (int)syscall(SYS_perf_event_open, &p->attr, pid, c->cpu, -1,
				  PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP);
	else
		fd = sp_perf_open(&p->attr, pid, c->cpu, -1);
	if (fd < 0)
		return -1;
	add_fd(p, fd, (unsigned int)c->cpu);
	if (c->fd < 0) {
		p->failed_call = geteuid() ? "mmap of the ring buffer (over perf_event_mlock_kb? "
					     "try a smaller -m)" : "mmap of the ring buffer";
		if (sp_perf_ring_map(&p->rings[i], fd, pages))
			return -1;
		c->fd = fd;
		ev.data.u32 = i;
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev))
			return -1;
		return 0;
	}
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, c->fd);
}

/* Close the events opened from p->fds[from] on: a CPU's ring owner, that
 * others' events write into, is only disabled. */
static void drop_fds_from(struct perf *p, size_t from)
{
	size_t i, k = from;
	unsigned int c;

	for (i = from; i < p->nfds; i++) {
		for (c = 0; c < p->ncpus && p->cpus[c].fd != p->fds[i]; c++)
			;
		if (c < p->ncpus) {
			ioctl(p->fds[i], PERF_EVENT_IOC_DISABLE, 0);
			p->fd_cpu[k] = p->fd_cpu[i];
			p->fds[k++] = p->fds[i];
		} else {
			close(p->fds[i]);
		}
	}
	p->nfds = k;
}

/* A process that was only found (a -p process's existing child): one that
 * is gone is left out, one that cannot be sampled is said and left out. */
static int attach_failed(bool optional, uint32_t pid, const char *why)
{
	if (!optional)
		return sp_error("pid %u: %s", pid, why);
	if (!strstr(why, "no such process") && !strstr(why, "exited"))
		sp_warn("pid %u (started by a -p process before the attach): not sampled: %s",
			pid, why);
	return 0;
}

/*
 * The events of thread tid of the held process, one per CPU. They are
 * opened disabled and enabled only once tid is seen to still be one of its
 * threads: tid may have ended since it was listed and its number be taken
 * by another process (another user's), which they would sample. 0; 1 when
 * tid is not (or no longer) its thread, nothing of it left open; -1 with
 * errno set.
 */
static int open_thread(struct perf *p, const struct sp_proc_pin *pin, uint32_t tid)
{
	size_t from = p->nfds, i;
	uint32_t was_disabled = p->attr.disabled;
	unsigned int c;
	int r = 0;

	p->attr.disabled = 1;
	for (c = 0; c < p->ncpus && !r; c++)
		if (open_on(p, (pid_t)tid, c))
			r = errno == ESRCH ? 1 : -1;
	p->attr.disabled = was_disabled;
	if (r < 0) {
		int err = errno;

		if (sp_proc_pin_has_thread(pin, tid)) {
			errno = err;
			return -1;
		}
	}
	/* a failure on a tid no longer the process's (EACCES for another
	 * user's process that took its number) is a thread that ended */
	if (r || !sp_proc_pin_has_thread(pin, tid)) {
		drop_fds_from(p, from);
		return 1;
	}
	/* enabling an event enables what its thread's children inherited of
	 * it meanwhile, disabled */
	p->failed_call = "PERF_EVENT_IOC_ENABLE";
	for (i = from; !was_disabled && i < p->nfds; i++)
		if (ioctl(p->fds[i], PERF_EVENT_IOC_ENABLE, 0))
			return -1;
	return 0;
}

/* Why pid's events could not be opened (errno), into why. */
static void open_failure(const struct perf *p, char *why, size_t size)
{
	if ((errno == EACCES || errno == EPERM) && !strcmp(p->failed_call, "perf_event_open"))
		snprintf(why, size, "perf_event_open (needs root or the same user and "
			 "perf_event_paranoid <= 2): %s", strerror(errno));
	else
		snprintf(why, size, "%s: %s", p->failed_call, strerror(errno));
}

/* The events of process pid, each of its threads'. held: pid as the
 * recorder holds it since sp-record started (a -p root), else NULL: it is
 * held from now (a child found at the attach, checked by its start). */
static int attach_pid(struct perf *p, uint32_t pid, bool all_threads, bool optional,
		      const struct sp_proc_pin *held)
{
	struct sp_proc_pin own = SP_PROC_PIN_INIT;
	const struct sp_proc_pin *pin = held ? held : &own;
	char why[256];
	uint32_t *tids = NULL, *seen = NULL;
	size_t from = p->nfds, n = 0, nseen = 0, seen_cap = 0, i, k;
	unsigned int c, round;
	bool added, exited;

	if (!all_threads) {
		for (c = 0; c < p->ncpus; c++)
			if (open_on(p, pid, c))
				return sp_error_errno("pid %u: %s", pid, p->failed_call);
		return 0;
	}
	/* Held before its threads are listed: its threads are listed and
	 * checked through it, and its end is told by it, whatever process
	 * its pid (or a thread's tid) names meanwhile. */
	if (!held && sp_proc_pin_open(&own, pid)) {
		sp_pidfd_failure(pid, errno, why, sizeof(why));
		return attach_failed(optional, pid, why);
	}
	/* Existing threads each need their own events; re-read the list until
	 * no thread appeared meanwhile (new ones inherit the events). */
	for (round = 0; round < 8; round++) {
		if (sp_proc_pin_tasks(pin, &tids, &n)) {
			if (round || sp_proc_pin_exited(pin))
				break;	/* gone: said below */
			snprintf(why, sizeof(why), "cannot list its threads: %s", strerror(errno));
			free(seen);
			sp_proc_pin_close(&own);
			return attach_failed(optional, pid, why);
		}
		added = false;
		for (i = 0; i < n; i++) {
			for (k = 0; k < nseen && seen[k] != tids[i]; k++)
				;
			if (k < nseen)
				continue;
			sp_grow(&seen, &seen_cap, nseen + 1, sizeof(*seen));
			seen[nseen++] = tids[i];
			added = true;
			if (open_thread(p, pin, tids[i]) >= 0)
				continue;	/* opened, or the thread ended */
			open_failure(p, why, sizeof(why));
			free(tids);
			free(seen);
			sp_proc_pin_close(&own);
			drop_fds_from(p, from);
			return attach_failed(optional, pid, why);
		}
		free(tids);
		tids = NULL;
		if (!added)
			break;
	}
	free(seen);
	exited = sp_proc_pin_exited(pin);
	sp_proc_pin_close(&own);
	if (exited) {
		drop_fds_from(p, from);
		return attach_failed(optional, pid, "exited during attach");
	}
	return 0;
}

int sp_perf_cpus(struct perf *p)
{
	unsigned int c;
	int *cpus = NULL, n;

	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		return sp_error_errno("epoll_create1");
	n = sp_online_cpus(&cpus);
	if (n <= 0)
		return sp_error("cannot read the online CPUs");
	p->cpus = sp_xcalloc(n, sizeof(*p->cpus));
	p->rings = sp_xcalloc(n, sizeof(*p->rings));
	p->ncpus = n;
	for (c = 0; c < p->ncpus; c++) {
		p->cpus[c].cpu = cpus[c];
		p->cpus[c].fd = -1;
	}
	free(cpus);
	return 0;
}

/* -a --cgroup/--container: one event per cgroup and CPU, counting the
 * tasks of the cgroup and its descendants only; their side-band records
 * (processes, mappings) are of those tasks only, too. */
int sp_perf_open_cgroup(struct perf *p, unsigned int i)
{
	const struct sp_cgroup_filter *f = p->o.cgroups;
	unsigned int c;
	size_t k;

	if (!p->cg_fds) {
		p->cg_fds = sp_xcalloc((size_t)SP_CGROUP_FILTER_DIRS * p->ncpus, sizeof(int));
		for (k = 0; k < (size_t)SP_CGROUP_FILTER_DIRS * p->ncpus; k++)
			p->cg_fds[k] = -1;
	}
	p->cg_open_id[i] = f->id[i];
	for (c = 0; c < p->ncpus; c++) {
		if (open_on(p, f->fd[i], c))
			return sp_error_errno("cgroup '%s' on cpu %d: %s", f->path[i],
					      p->cpus[c].cpu, p->failed_call);
		p->cg_fds[i * p->ncpus + c] = p->fds[p->nfds - 1];
	}
	return 0;
}

void sp_perf_close_cgroup(struct perf *p, unsigned int i)
{
	unsigned int c;
	size_t k;
	int fd;

	p->cg_open_id[i] = 0;
	for (c = 0; p->cg_fds && c < p->ncpus; c++) {
		fd = p->cg_fds[i * p->ncpus + c];
		p->cg_fds[i * p->ncpus + c] = -1;
		if (fd < 0 || fd == p->cpus[c].fd)
			continue;	/* a ring's owner (none of a cgroup's now) */
		for (k = 0; k < p->nfds && p->fds[k] != fd; k++)
			;
		if (k < p->nfds) {
			p->fds[k] = p->fds[--p->nfds];
			p->fd_cpu[k] = p->fd_cpu[p->nfds];
		}
		close(fd);
	}
}

/* Those found at the start: none when all are waited for (perf_cgroups.c). */
static int open_cgroups(struct perf *p, const struct sp_cgroup_filter *f)
{
	unsigned int i;

	p->cgroup_mode = true;
	p->cg_gen = f->gen;
	for (i = 0; i < f->n; i++)
		if (f->id[i] && sp_perf_open_cgroup(p, i))
			return -1;
	return 0;
}

int sp_perf_open_events(struct perf *p, const struct sp_target *t)
{
	struct rlimit rl;
	unsigned int c;
	size_t i, nreused = 0;
	uint32_t first = 0;

	if (t->system_wide) {
		/* CPU-wide events: on from the start, even with a command. */
		p->attr.inherit = 0;
		p->attr.disabled = 0;
		p->attr.enable_on_exec = 0;
		if (sp_cgroup_filter_given(p->o.cgroups))
			return open_cgroups(p, p->o.cgroups);
		for (c = 0; c < p->ncpus; c++)
			if (open_on(p, -1, c))
				return sp_error_errno("system-wide %s on cpu %d%s", p->failed_call,
						      p->cpus[c].cpu,
						      errno == EACCES || errno == EPERM ?
						      " (needs root or perf_event_paranoid <= 0)" : "");
		return 0;
	}
	/* One event per thread and CPU: many descriptors for a big process. */
	if (!p->o.enable_on_exec && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* past the roots: their children found at the attach (perf_source.c) */
	for (i = 0; i < t->npids; i++) {
		size_t from = p->nfds;

		if (attach_pid(p, t->pids[i], !p->o.enable_on_exec, i >= p->nroots,
			       i < p->nroots && t->pins ? &t->pins[i] : NULL))
			return -1;
		/* A child listed, then gone and its pid taken by another
		 * process (another user's) before its events were open: what
		 * was opened is of that process, closed; the pid is left out
		 * of the scan (0 in p->found_pids, which t->pids is). */
		if (i >= p->nroots && p->found_starts && t->pids == p->found_pids &&
		    !sp_procfs_same_process(t->pids[i], p->found_starts[i - p->nroots])) {
			drop_fds_from(p, from);
			if (!nreused++)
				first = t->pids[i];
			p->found_pids[i] = 0;
		}
	}
	if (nreused)
		sp_info("-p: %zu process%s started by the given ones ended before %s events were "
			"open: not recorded (first: pid %u)", nreused, nreused == 1 ? "" : "es",
			nreused == 1 ? "its" : "their", first);
	return 0;
}

/* ---- the attribute, and what this machine allows of it ---- */

void sp_perf_attr_setup(struct perf *p)
{
	struct perf_event_attr *a = &p->attr;

	sp_perf_attr_records(a, p->o.enable_on_exec);
	a->type = p->type;
	a->config = p->config;
	p->sideband = p->type == PERF_TYPE_SOFTWARE && p->config == PERF_COUNT_SW_DUMMY;
	if (p->sideband) {
		/* never samples: no period, no frequency; processes, threads and
		 * mappings still come as COMM/FORK/EXIT/MMAP2 records */
		p->o.freq = 0;
		p->o.period = 0;
	} else if (p->o.period) {
		a->sample_period = p->o.period;
	} else {
		a->freq = 1;
		a->sample_freq = p->o.freq;
	}
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_PERIOD;
	if (p->o.call_graph != SP_CG_NONE)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (!p->o.kernel_only)
		p->nregs = sp_perf_attr_user_stack(a, p->o.call_graph, p->o.stack_size);
	a->build_id = 1;
	a->exclude_guest = 1;
	/* Wake the loop when a ring is a quarter full or holds about eight
	 * samples (64 KiB of 8192-byte copies), well before it overflows
	 * between two batches. */
	{
		uint64_t ring = (uint64_t)ring_pages(p) * (uint64_t)sysconf(_SC_PAGESIZE);

		a->wakeup_watermark = sp_perf_ring_wakeup(ring, p->o.kernel_only ? 0 :
							  p->o.stack_size);
		/* Side-band only: a wake-up at every record of the machine (a
		 * fork, an exec's comm and mappings, an exit) costs more than
		 * the record, so every SIDEBAND_WAKEUP bytes: a few of an
		 * exec's records, so an interpreter's mapping (its events'
		 * stacks) still comes out before its first methods run. The
		 * loop drains every ring each batch (--batch) all the same: an
		 * end or a trigger waits no longer than that. */
		if (p->sideband && a->wakeup_watermark > SIDEBAND_WAKEUP)
			a->wakeup_watermark = SIDEBAND_WAKEUP;
		if (!a->wakeup_watermark)
			a->wakeup_watermark = 1;
	}
	if (p->o.user_only)
		a->exclude_kernel = 1;
	if (p->o.kernel_only) {
		a->exclude_user = 1;
		a->exclude_callchain_user = 1;
	}
}

int sp_perf_attr_probe(struct perf *p)
{
	struct perf_event_attr *a = &p->attr;
	int fd;

	/* Probe on ourselves what this kernel and our permissions allow. */
	p->kernel_ok = !p->o.user_only;
	p->build_id_ok = true;
	for (;;) {
		fd = sp_perf_open(a, 0, -1, -1);
		if (fd >= 0) {
			close(fd);
			break;
		}
		if (errno == EINVAL && a->build_id) {
			a->build_id = 0;
			p->build_id_ok = false;
			continue;
		}
		if ((errno == EACCES || errno == EPERM) && !a->exclude_kernel && !p->o.kernel_only) {
			a->exclude_kernel = 1;
			a->exclude_callchain_kernel = 1;
			p->kernel_ok = false;
			continue;
		}
		if (p->hardware && (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV)) {
			sp_error("event '%s' is not available: this machine has no hardware PMU "
				 "(use a software event: cpu-clock, task-clock)", p->o.event);
			return -1;
		}
		if (errno == EACCES || errno == EPERM) {
			sp_error_errno("cannot sample '%s' (perf_event_paranoid is %d)", p->o.event,
				       sp_perf_paranoid_level());
			return -1;
		}
		sp_error_errno("perf_event_open of event '%s'", p->o.event);
		return -1;
	}
	return 0;
}

/* ---- sp-record --check ---- */

static bool try_open(uint32_t type, uint64_t config, uint64_t extra_type, bool kernel,
		     bool build_id, int *err)
{
	struct perf_event_attr a = { 0 };
	int fd;

	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.sample_period = 1000000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | extra_type;
	a.exclude_kernel = !kernel;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.mmap2 = build_id;
	a.build_id = build_id;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	if (extra_type & PERF_SAMPLE_REGS_USER) {
		a.sample_regs_user = sp_unwind_regs_mask();
		a.sample_stack_user = 8192;
	}
	fd = sp_perf_open(&a, 0, -1, -1);
	*err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static bool path_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

int sp_perf_check(FILE *out)
{
	struct {
		const char *what;
		bool ok;
		const char *note;
	} rows[16];
	struct utsname u;
	int n = 0, missing = 0, err, i, par = sp_perf_paranoid_level();
	bool sw, hw, kern, regs, bid;
	struct sp_interpreters *interp;
	char pnote[96];

	uname(&u);
	sw = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, false, false, &err);
	rows[n++] = (typeof(rows[0])){ "software events (cpu-clock, task-clock, ...)", sw,
		sw ? "" : strerror(err) };
	hw = try_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, false, false, &err);
	rows[n++] = (typeof(rows[0])){ "hardware events (cycles, instructions, ...)", hw,
		hw ? "" : err == ENOENT || err == EOPNOTSUPP ? "no hardware PMU" : strerror(err) };
	kern = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PERF_SAMPLE_CALLCHAIN, true,
			false, &err);
	snprintf(pnote, sizeof(pnote), "needs root or perf_event_paranoid <= 1 (it is %d)", par);
	rows[n++] = (typeof(rows[0])){ "kernel stacks", kern, kern ? "" : pnote };
	rows[n++] = (typeof(rows[0])){ "user stacks by frame pointers", sw, "" };
	regs = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
			PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, false, false, &err);
	rows[n++] = (typeof(rows[0])){ "user registers and stack copies (--call-graph=dwarf)",
		regs, regs ? "" : strerror(err) };
	bid = try_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, false, true, &err);
	rows[n++] = (typeof(rows[0])){ "build-ids in MMAP2 records", bid,
		bid ? "" : "build-ids are read from the files instead" };
	rows[n++] = (typeof(rows[0])){ "system-wide recording (-a)", geteuid() == 0 || par <= 0,
		geteuid() == 0 || par <= 0 ? "" : "needs root or perf_event_paranoid <= 0" };
	rows[n++] = (typeof(rows[0])){ "kernel symbols (/proc/kallsyms addresses)",
		geteuid() == 0, geteuid() == 0 ? "" : "addresses are hidden from non-root" };
	rows[n++] = (typeof(rows[0])){ "BPF type information (/sys/kernel/btf/vmlinux)",
		path_exists("/sys/kernel/btf/vmlinux"), "kernel events and spans need it" };
	rows[n++] = (typeof(rows[0])){ "tracefs (/sys/kernel/tracing/events)",
		path_exists("/sys/kernel/tracing/events"),
		"tracepoint/ programs need it; tp_btf/raw_tp do not" };
	rows[n++] = (typeof(rows[0])){ "kprobes", path_exists("/sys/bus/event_source/devices/kprobe"),
		"not built into this kernel" };
	rows[n++] = (typeof(rows[0])){ "uprobes (USDT spans)",
		path_exists("/sys/bus/event_source/devices/uprobe"), "not built into this kernel" };
	/* every walker, Ruby's too (a recording loads those once a Ruby is
	 * found, in an object of their own) */
	interp = sp_interp_new(SP_INTERP_AUTO, SP_INTERP_USE_ALL);
	rows[n++] = (typeof(rows[0])){ "interpreted frames in samples (--interp: python3.11)",
		interp != NULL, "the BPF program does not load (said above)" };
	rows[n++] = (typeof(rows[0])){ "Ruby's interpreted frames (--interp: ruby3.1)",
		interp && sp_interp_ruby_loaded(interp),
		"its walkers do not load (said above)" };
	sp_interp_free(interp);

	fprintf(out, "sp-record on %s %s %s, %ld CPUs online, perf_event_paranoid %d, %s\n",
		u.sysname, u.release, u.machine, sysconf(_SC_NPROCESSORS_ONLN), par,
		geteuid() == 0 ? "root" : "not root");
	for (i = 0; i < n; i++) {
		fprintf(out, "  %-3s %s%s%s\n", rows[i].ok ? "yes" : "no", rows[i].what,
			!rows[i].ok && rows[i].note[0] ? ": " : "", rows[i].ok ? "" : rows[i].note);
		missing += !rows[i].ok;
	}
	return missing;
}
