// SPDX-License-Identifier: MIT
/*
 * Separate debug files fetched by build-id from debuginfod servers
 * (debuginfod.h): a batch of build-ids shared among up to SP_DBGD_THREADS
 * threads, one libdebuginfod client each, every fetch ended by its
 * progress callback when it takes longer than the timeout; the files kept
 * in a checked cache directory and opened from it only as safefile.h says.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "buf.h"
#include "buildid.h"
#include "hashmap.h"
#include "safefile.h"
#include "sp.h"
#include "debuginfod.h"

#define MAX_ENTRIES	65536		/* build-ids asked for in one run */
#define MAX_FILE	(4ull << 30)	/* larger debug files are not read */
#define CACHE_NAME	"debuginfo"	/* libdebuginfod's: DIR/<hex>/debuginfo */

enum state { QUEUED, FOUND, FAILED };

struct entry {
	uint8_t id[SP_BUILD_ID_MAX];
	unsigned int n;
	enum state state;
	char *what;		/* the module's path, for messages */
	char *file;		/* FOUND: where it is */
	int err;		/* FAILED: libdebuginfod's errno, 0: see why */
	const char *why;	/* FAILED: a static reason, or NULL */
	bool transferred;	/* FOUND: fetched, not found in a cache */
};

struct worker {
	struct sp_dbgd *d;
	pthread_t thread;
	uint64_t start_ns;	/* of the fetch under way, 0: none */
	long got, total;	/* its bytes so far and in all (0: not known) */
	bool timed_out;
	bool transferred;	/* the servers were asked (not libdebuginfod's cache) */
	bool started;		/* thread is running it */
};

struct sp_dbgd {
	char *dir;		/* the cache; NULL: libdebuginfod's own */
	int dirfd;		/* -1: not opened yet */
	bool setup, off;	/* setup done; off: no usable cache directory */
	uint64_t timeout_ns;
	bool progress, progress_shown;
	struct entry *e;
	size_t n, cap;
	struct sp_u64map by_id;	/* hash of the build-id -> index + 1 */
	size_t *queue;		/* entries to fetch */
	size_t nqueue, capqueue, next, done;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned int running;
	uint64_t bytes_done;	/* by the fetches of this batch that ended */
	struct worker w[SP_DBGD_THREADS];
	uint64_t fetched, cached, failed;
};

struct sp_dbgd *sp_dbgd_new(const char *cache_dir, uint64_t timeout_ns, bool progress)
{
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR), *t;
	struct sp_dbgd *d;

	if (!urls || !*urls)
		return NULL;
	d = sp_xcalloc(1, sizeof(*d));
	d->dir = cache_dir ? sp_xstrfmt("%s/debuginfod", cache_dir) : NULL;
	d->dirfd = -1;
	d->progress = progress;
	d->timeout_ns = timeout_ns;
	t = getenv(DEBUGINFOD_TIMEOUT_ENV_VAR);
	if (!d->timeout_ns && t && (sp_parse_duration(t, &d->timeout_ns) || !d->timeout_ns)) {
		sp_warn("%s='%s' is not a number of seconds: %.0f s used", DEBUGINFOD_TIMEOUT_ENV_VAR,
			t, SP_DBGD_TIMEOUT_NS / 1e9);
		d->timeout_ns = 0;
	}
	if (!d->timeout_ns)
		d->timeout_ns = SP_DBGD_TIMEOUT_NS;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	return d;
}

void sp_dbgd_free(struct sp_dbgd *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		free(d->e[i].what);
		free(d->e[i].file);
	}
	free(d->e);
	free(d->queue);
	sp_u64map_release(&d->by_id);
	if (d->dirfd >= 0)
		close(d->dirfd);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d->dir);
	free(d);
}

static struct entry *entry_find(struct sp_dbgd *d, const uint8_t *id, unsigned int n)
{
	uint64_t *v = sp_u64map_get(&d->by_id, sp_hash_bytes(id, n));
	size_t i;

	if (v && d->e[*v - 1].n == n && !memcmp(d->e[*v - 1].id, id, n))
		return &d->e[*v - 1];
	if (!v)
		return NULL;
	for (i = 0; i < d->n; i++)	/* two build-ids of one hash */
		if (d->e[i].n == n && !memcmp(d->e[i].id, id, n))
			return &d->e[i];
	return NULL;
}

bool sp_dbgd_known(struct sp_dbgd *d, const uint8_t *id, unsigned int n)
{
	return entry_find(d, id, n) != NULL;
}

void sp_dbgd_want(struct sp_dbgd *d, const uint8_t *id, unsigned int n, const char *what)
{
	struct entry *e;

	if (!n || n > SP_BUILD_ID_MAX || entry_find(d, id, n) || d->n >= MAX_ENTRIES)
		return;
	sp_grow(&d->e, &d->cap, d->n + 1, sizeof(*d->e));
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	memcpy(e->id, id, n);
	e->n = n;
	e->what = sp_xstrdup(what);
	e->state = QUEUED;
	if (!sp_u64map_get(&d->by_id, sp_hash_bytes(id, n)))
		sp_u64map_put(&d->by_id, sp_hash_bytes(id, n), d->n + 1);
	sp_grow(&d->queue, &d->capqueue, d->nqueue + 1, sizeof(*d->queue));
	d->queue[d->nqueue++] = d->n++;
}

/* The cache directory, made and checked once; libdebuginfod told of it. */
static void setup(struct sp_dbgd *d)
{
	d->setup = true;
	if (!d->dir)
		return;
	d->dirfd = sp_cache_dir_open(d->dir, true);
	if (d->dirfd < 0) {
		/* A directory refused was said by sp_cache_dir_open(). */
		sp_warn("debuginfod not used: no cache directory to keep its files in ('%s': %s)",
			d->dir, errno == EPERM ? "refused" : strerror(errno));
		d->off = true;
		return;
	}
	/* Read by libdebuginfod at each query; set before any thread runs. */
	setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, d->dir, 1);
}

/*
 * The debug file of e, opened only if it is a regular file of the
 * effective user (or root) that nobody else may write, not a link: its
 * descriptor, or -1 with *why (NULL: not there).
 */
static int open_checked(struct sp_dbgd *d, const struct entry *e, const char *file,
			const char **why)
{
	struct sp_safe_want want = {
		.flags = SP_SAFE_NOFOLLOW | SP_SAFE_OWNER | SP_SAFE_PRIVATE,
		.owner = geteuid(), .max_size = MAX_FILE,
	};
	char hex[2 * SP_BUILD_ID_MAX + 1], rel[2 * SP_BUILD_ID_MAX + 32];
	struct stat st;
	int fd;

	*why = NULL;
	if (d->dirfd >= 0) {
		/* Inside the checked directory, whatever path libdebuginfod says. */
		snprintf(rel, sizeof(rel), "%s/" CACHE_NAME, sp_buildid_hex(e->id, e->n, hex));
		fd = sp_safe_open(d->dirfd, rel, &want, &st, why);
	} else {
		fd = file ? sp_safe_open(AT_FDCWD, file, &want, &st, why) : -1;
	}
	if (fd >= 0 && st.st_size == 0) {
		/* libdebuginfod's mark of a build-id the servers did not have */
		close(fd);
		*why = NULL;
		return -1;
	}
	return fd;
}

static int on_progress(debuginfod_client *c, long got, long total)
{
	struct worker *w = debuginfod_get_user_data(c);
	struct sp_dbgd *d = w->d;
	bool stop;

	pthread_mutex_lock(&d->mu);
	w->got = got;
	w->total = total;
	w->transferred = true;
	stop = sp_now_mono_ns() - w->start_ns > d->timeout_ns;
	if (stop)
		w->timed_out = true;
	pthread_mutex_unlock(&d->mu);
	return stop;
}

/* Fetch e with client c (NULL: none could be made). */
static void fetch_one(struct worker *w, debuginfod_client *c, struct entry *e)
{
	char *path = NULL;
	int fd;

	fd = c ? debuginfod_find_debuginfo(c, e->id, (int)e->n, &path) : -ENOMEM;
	if (fd >= 0) {
		close(fd);	/* opened again, checked, by sp_dbgd_open() */
		e->file = path;
		e->transferred = w->transferred;
		e->state = FOUND;
		return;
	}
	free(path);
	e->state = FAILED;
	e->err = -fd;
	e->transferred = w->transferred;
	if (w->timed_out)
		e->why = "timed out";
	else if (fd == -ENOENT)
		e->why = "no server has it";
	else if (fd == -EHOSTUNREACH)	/* libdebuginfod's for a name not resolved, too */
		e->why = "no server could be reached (host not found or unreachable)";
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sp_dbgd *d = w->d;
	debuginfod_client *c = debuginfod_begin();
	struct entry *e;

	if (c) {
		debuginfod_set_user_data(c, w);
		debuginfod_set_progressfn(c, on_progress);
	}
	pthread_mutex_lock(&d->mu);
	while (d->next < d->nqueue) {
		e = &d->e[d->queue[d->next++]];
		if (e->state != QUEUED)
			continue;
		w->start_ns = sp_now_mono_ns();
		w->got = w->total = 0;
		w->timed_out = w->transferred = false;
		pthread_mutex_unlock(&d->mu);
		fetch_one(w, c, e);
		pthread_mutex_lock(&d->mu);
		w->start_ns = 0;
		d->bytes_done += w->got > 0 ? (uint64_t)w->got : 0;
		d->done++;
		pthread_cond_signal(&d->cv);
	}
	d->running--;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	if (c)
		debuginfod_end(c);
	return NULL;
}

/* "sp-symbolize: debuginfod: 2 of 5 debug files, 12.5 MB so far", on one
 * line of the terminal (d->mu held). */
static void show_progress(struct sp_dbgd *d, size_t todo)
{
	double mb = d->bytes_done / 1e6;
	unsigned int i;

	for (i = 0; i < SP_DBGD_THREADS; i++)
		if (d->w[i].start_ns && d->w[i].got > 0)
			mb += d->w[i].got / 1e6;
	fprintf(stderr, "\r%s: debuginfod: %zu of %zu debug files, %.1f MB so far\033[K",
		sp_progname, d->done, todo, mb);
	d->progress_shown = true;
}

/* Run the workers over the queue and wait for them, showing progress. */
static void run_workers(struct sp_dbgd *d, size_t todo)
{
	uint64_t t0 = sp_now_mono_ns();
	unsigned int i, nthreads = todo < SP_DBGD_THREADS ? (unsigned int)todo : SP_DBGD_THREADS;
	unsigned int started = 0;
	struct timespec ts;

	d->done = 0;
	d->bytes_done = 0;
	pthread_mutex_lock(&d->mu);
	for (i = 0; i < nthreads; i++) {
		d->w[i] = (struct worker){ .d = d };
		if (pthread_create(&d->w[i].thread, NULL, worker_main, &d->w[i]) == 0) {
			d->w[i].started = true;
			started++;
			d->running++;
		}
	}
	pthread_mutex_unlock(&d->mu);
	if (!started) {
		d->running = 1;
		worker_main(&d->w[0]);	/* in this thread, then */
		return;
	}
	pthread_mutex_lock(&d->mu);
	while (d->running) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&d->cv, &d->mu, &ts);
		if (d->progress && d->running && sp_now_mono_ns() - t0 > 1000000000ull)
			show_progress(d, todo);
	}
	pthread_mutex_unlock(&d->mu);
	for (i = 0; i < nthreads; i++)
		if (d->w[i].started)
			pthread_join(d->w[i].thread, NULL);
	if (d->progress_shown)
		fprintf(stderr, "\r\033[K");
	d->progress_shown = false;
}

/*
 * libdebuginfod marks a build-id it did not get with an empty file that
 * it believes for cache_miss_s (600 s): right when no server has it, wrong
 * when we gave up waiting. Remove that mark (ours: in the checked
 * directory, empty).
 */
static void unmark(struct sp_dbgd *d, const struct entry *e)
{
	char hex[2 * SP_BUILD_ID_MAX + 1], rel[2 * SP_BUILD_ID_MAX + 32];
	struct stat st;

	if (d->dirfd < 0)
		return;
	snprintf(rel, sizeof(rel), "%s/" CACHE_NAME, sp_buildid_hex(e->id, e->n, hex));
	if (fstatat(d->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == 0 && st.st_uid == geteuid())
		unlinkat(d->dirfd, rel, 0);
}

/* Say why e was not fetched, once. */
static void say_failed(struct sp_dbgd *d, struct entry *e)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];
	char why[128];

	d->failed++;
	if (e->why && !strcmp(e->why, "timed out")) {
		snprintf(why, sizeof(why), "timed out after %.3g s", d->timeout_ns / 1e9);
		unmark(d, e);
	} else if (e->err == ENOENT && !e->transferred) {
		snprintf(why, sizeof(why), "no server had it when last asked, less than "
			 "libdebuginfod's cache_miss_s ago");
	} else {
		snprintf(why, sizeof(why), "%s", e->why ? e->why : strerror(e->err));
	}
	sp_warn("'%s': debug information not fetched from debuginfod (build-id %s): %s",
		e->what, sp_buildid_hex(e->id, e->n, hex), why);
}

void sp_dbgd_fetch(struct sp_dbgd *d)
{
	const char *why;
	size_t i, todo = 0;
	int fd;

	if (!d->setup)
		setup(d);
	for (i = 0; i < d->nqueue; i++) {
		struct entry *e = &d->e[d->queue[i]];

		if (d->off) {
			e->state = FAILED;	/* said once by setup() */
			d->failed++;
			continue;
		}
		/* Kept from an earlier run: no server is asked. */
		fd = d->dirfd >= 0 ? open_checked(d, e, NULL, &why) : -1;
		if (fd >= 0) {
			close(fd);
			e->state = FOUND;
			d->cached++;
		} else {
			todo++;
		}
	}
	d->next = 0;
	if (todo)
		run_workers(d, todo);
	for (i = 0; i < d->nqueue; i++) {
		struct entry *e = &d->e[d->queue[i]];

		if (e->state == FAILED && !d->off)
			say_failed(d, e);
		else if (e->state == FOUND && e->transferred)
			d->fetched++;
		else if (e->state == FOUND && e->file)
			d->cached++;	/* libdebuginfod's own */
	}
	d->nqueue = 0;
}

int sp_dbgd_open(struct sp_dbgd *d, const uint8_t *id, unsigned int n, const char *what,
		 char **path)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];
	struct entry *e = entry_find(d, id, n);
	const char *why;
	int fd;

	*path = NULL;
	if (!e) {
		sp_dbgd_want(d, id, n, what);
		sp_dbgd_fetch(d);
		e = entry_find(d, id, n);
	}
	if (!e || e->state != FOUND)
		return -1;
	fd = open_checked(d, e, e->file, &why);
	if (fd < 0) {
		e->state = FAILED;
		d->failed++;
		sp_warn("'%s': the debug file fetched from debuginfod (build-id %s) is not used: %s",
			e->what, sp_buildid_hex(e->id, e->n, hex), why ? why : strerror(errno));
		return -1;
	}
	if (d->dirfd >= 0)
		*path = sp_xstrfmt("%s/%s/" CACHE_NAME, d->dir, sp_buildid_hex(e->id, e->n, hex));
	else
		*path = sp_xstrdup(e->file);
	return fd;
}

void sp_dbgd_print_stats(const struct sp_dbgd *d, FILE *out)
{
	if (!d || !d->n)
		return;
	fprintf(out, "%s: debuginfod: %" PRIu64 " debug files fetched, %" PRIu64
		" from its cache, %" PRIu64 " not fetched\n", sp_progname, d->fetched, d->cached,
		d->failed);
}
