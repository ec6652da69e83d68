// SPDX-License-Identifier: MIT
/*
 * sp-record's output as streams (flight.h): rotated segment files, the
 * flight recorder's window of memfd chunks and the dumps written from it,
 * or one file or pipe whose streams follow each other.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "flight.h"
#include "flightP.h"
#include "segments.h"
#include "spool.h"
#include "writer.h"

/* The window is cut into chunks of an eighth of it: the oldest goes whole,
 * so the window holds between 7/8 of its bound and the bound (plus what one
 * batch adds before it is checked). */
#define CHUNKS_PER_WINDOW 8
#define MIN_CHUNK (64u << 10)
#define MAX_CHUNKS 64

struct chunk {
	int fd;			/* memfd */
	uint64_t bytes, records, start;
	uint64_t hdr_bytes, hdr_time;	/* sp_segments_header_end() */
};

/* A dump being written: the file, the chunks' and the tail's memfds. */
struct dump_job {
	int fd;
	int src[MAX_CHUNKS + 3];
	uint64_t off[MAX_CHUNKS + 3], len[MAX_CHUNKS + 3];
	unsigned int n;
	int err;
	uint64_t t0, paused, total;
	/* Its phases, for -v: the trigger (when it fired, plus what
	 * --flight-after asked), the file created, its header written, the
	 * blocks reserved; the thread's start is t0 + paused. */
	uint64_t trigger, created, header, tail, started, reserved;
	uint64_t loop_cpu;		/* the loop's CPU time for it */
	uint64_t complete, synced;	/* when all was written; on disk */
	uint64_t cpu;			/* the copy's own CPU time */
	char name[128];
	bool running, threaded, done;
	pthread_t thread;
};

struct sp_flight {
	struct sp_flight_opts o;
	struct sp_segments *segs;
	int dirfd;
	struct sp_names files;	/* segments or dumps, oldest first */
	uint64_t bytes;		/* written to files */
	bool one;		/* one output (o.out_fd): no directory */
	int err;		/* its last write's errno, once its writer is gone */
	bool restream_said;
	uint64_t base;		/* one output: its offset at the start */

	/* rotation */
	int fd;			/* the current segment file */
	uint64_t seq;		/* its number in its name */
	uint64_t nseg;		/* streams started */
	uint64_t seg_start;

	/* the window */
	struct chunk chunks[MAX_CHUNKS];
	unsigned int first, n;	/* a ring */
	uint64_t chunk_bytes, chunk_ns;
	uint64_t dropped;	/* records of chunks that went */
	uint64_t rec_start;	/* when the recording started */

	/* the dump to come */
	bool pending, warned_disk;
	char trigger[32], detail[480];
	uint64_t trigger_time, due, last_dump, more;
	struct dump_job job;
};

static void finish_job(struct sp_flight *f, bool wait);
static int next_chunk(struct sp_flight *f, uint64_t now);
static void trim_window(struct sp_flight *f, uint64_t now);

int sp_flight_parse_limit(const char *s, uint64_t *bytes, uint64_t *ns)
{
	static const char units[] = "BKMGT";
	char *end;
	const char *u;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && *end && (u = strchr(units, *end)) && !errno &&
	    (!end[1] || !strcmp(end + 1, "B") || !strcmp(end + 1, "iB")) && *end != 0) {
		unsigned int shift = (unsigned int)(u - units) * 10;

		if (!v || v > (UINT64_MAX >> shift))
			return -1;
		*bytes = v << shift;
		return 0;
	}
	if (sp_parse_duration(s, &v) || !v)
		return -1;
	*ns = v;
	return 0;
}

struct sp_flight *sp_flight_new(const struct sp_flight_opts *o, const struct sp_defs *master)
{
	struct sp_flight *f = sp_xcalloc(1, sizeof(*f));

	f->o = *o;
	f->fd = -1;
	f->segs = sp_segments_new(master);
	if (!o->dir) {
		off_t at = lseek(o->out_fd, 0, SEEK_CUR);

		f->one = true;
		f->fd = o->out_fd;
		f->dirfd = -1;
		f->base = at > 0 ? (uint64_t)at : 0;
		if (o->out_format == SP_FORMAT_JSON)
			sp_segments_set_format(f->segs, SP_FORMAT_JSON);
		return f;
	}
	f->dirfd = sp_outdir_open(o->dir);
	if (f->dirfd < 0 ||
	    sp_names_scan(&f->files, f->dirfd, o->flight ? "dump-" : "segment-")) {
		sp_flight_free(f);
		return NULL;
	}
	if (f->files.cut)
		sp_warn("'%s' holds more than %u entries: only the first %u were looked at; "
			"--keep counts and deletes only the files of ours among them, and the "
			"numbers go on from the highest among them", o->dir, SP_NAMES_SCAN_MAX,
			SP_NAMES_SCAN_MAX);
	/* Number on after the highest segment or dump there: the order of
	 * the files, whatever the clock says (flight_dir.c). */
	f->seq = f->files.top;
	f->chunk_bytes = o->window_bytes / CHUNKS_PER_WINDOW;
	if (f->chunk_bytes < MIN_CHUNK)
		f->chunk_bytes = MIN_CHUNK;
	f->chunk_ns = o->window_ns ? o->window_ns / CHUNKS_PER_WINDOW : UINT64_MAX;
	return f;
}

void sp_flight_free(struct sp_flight *f)
{
	unsigned int i;

	if (!f)
		return;
	finish_job(f, true);
	sp_segments_free(f->segs);
	for (i = 0; i < f->n; i++)
		close(f->chunks[(f->first + i) % MAX_CHUNKS].fd);
	if (f->fd >= 0 && !f->one)
		close(f->fd);
	if (f->dirfd >= 0)
		close(f->dirfd);
	sp_names_release(&f->files);
	free(f);
}

/*
 * Each record into the current stream. A window's chunk that has grown to
 * its size is cut here, between two records, not only at the end of a
 * batch: under a flood one batch alone can be larger than the whole window,
 * and the bound must hold whatever the load.
 */
int sp_flight_put(void *flight, const struct sp_record *rec)
{
	struct sp_flight *f = flight;
	struct sp_writer *w = sp_segments_writer(f->segs);

	if (f->o.flight && f->n && w && sp_writer_bytes(w) >= f->chunk_bytes) {
		uint64_t now = sp_now_mono_ns();

		if (next_chunk(f, now))
			return -1;
		trim_window(f, now);
	}
	return sp_segments_put(f->segs, rec);
}

uint64_t sp_flight_due(const struct sp_flight *f)
{
	return f->pending && !f->job.running ? f->due : UINT64_MAX;
}

bool sp_flight_is_window(const struct sp_flight *f)
{
	return f->o.flight;
}

uint64_t sp_flight_streams(const struct sp_flight *f)
{
	return f->nseg;
}

struct sp_segments *sp_flight_segments(struct sp_flight *f)
{
	return f->segs;
}

uint64_t sp_flight_bytes(const struct sp_flight *f)
{
	struct sp_writer *w = sp_segments_writer(f->segs);

	if (f->one)
		return f->base + f->bytes + (w ? sp_writer_bytes(w) : 0);
	return f->bytes;
}

int sp_flight_errno(const struct sp_flight *f)
{
	struct sp_writer *w = sp_segments_writer(f->segs);

	return w ? sp_writer_errno(w) : f->err;
}

/* ---- one output ---- */

/*
 * The id space is past its bound: the recording goes on in a new stream
 * of the same output, where the recorder then compacts it (what nothing
 * live refers to goes; the old stream's writer and its tables are freed).
 * No end record between the two: readers join the streams, and
 * sp-correlate carries the spans still open across (the header's segment
 * number says the recording goes on).
 */
static int restream(struct sp_flight *f, uint64_t now)
{
	struct sp_writer *w = sp_segments_writer(f->segs);
	struct sp_segments *s = f->segs;

	if (sp_segments_master_size(s) < SP_FLIGHT_RESTREAM_DEFS || !sp_segments_compact_due(s))
		return 0;
	if (!f->restream_said)
		sp_info("the recording defined %llu strings, frames, stacks and modules: it goes "
			"on in a new stream of '%s' (readers join them; sp-tree shows the "
			"processes alive then again)", (unsigned long long)sp_segments_master_size(s),
			f->o.out_name);
	f->restream_said = true;
	f->bytes += sp_writer_bytes(w);
	if (sp_segments_close(s)) {
		f->err = errno;
		return -1;
	}
	return sp_segments_start(s, f->fd, f->o.out_name, ++f->nseg, now);
}

/* ---- rotation ---- */

static int next_segment(struct sp_flight *f, uint64_t now)
{
	char name[64];
	unsigned int tries;
	int fd = -1;

	for (tries = 0; fd < 0 && tries < 1000; tries++) {
		snprintf(name, sizeof(name), "segment-%06llu.sp", (unsigned long long)++f->seq);
		fd = sp_create_in(f->dirfd, name);
		if (fd < 0 && errno != EEXIST)
			return sp_error_errno("cannot create '%s/%s'", f->o.dir, name);
	}
	if (fd < 0)
		return sp_error("'%s': no free segment name", f->o.dir);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = fd;
	sp_names_add(&f->files, name);
	sp_names_trim(&f->files, f->dirfd, f->o.keep);
	f->seg_start = now;
	return sp_segments_start(f->segs, fd, name, ++f->nseg, now);
}

/* The segment is full: its end record says the recording goes on. */
static int rotate(struct sp_flight *f, uint64_t now, const struct sp_end *sofar)
{
	struct sp_writer *w = sp_segments_writer(f->segs);
	struct sp_record end = { .kind = SP_REC_END };

	end.end = *sofar;
	end.end.time = now;
	end.end.reason = SP_ENDR_ROTATED;
	if (sp_writer_put(w, &end))
		return -1;
	f->bytes += sp_writer_bytes(w);
	if (sp_segments_close(f->segs))
		return -1;
	return next_segment(f, now);
}

/* ---- the window ---- */

static struct chunk *cur_chunk(struct sp_flight *f)
{
	return &f->chunks[(f->first + f->n - 1) % MAX_CHUNKS];
}

static void drop_oldest(struct sp_flight *f)
{
	struct chunk *c = &f->chunks[f->first];

	f->dropped += c->records;
	close(c->fd);
	f->first = (f->first + 1) % MAX_CHUNKS;
	f->n--;
}

/* Bring the current chunk's counts up to date (its bytes flushed). */
static int settle(struct sp_flight *f)
{
	struct sp_writer *w = sp_segments_writer(f->segs);
	struct chunk *c;

	if (!f->n || !w)
		return 0;
	c = cur_chunk(f);
	if (sp_writer_flush(w))
		return -1;
	c->bytes = sp_writer_bytes(w);
	c->records = sp_segments_records(f->segs);
	return 0;
}

static int next_chunk(struct sp_flight *f, uint64_t now)
{
	struct chunk *c;
	int fd = memfd_create("sp-flight", MFD_CLOEXEC);

	if (fd < 0)
		return sp_error_errno("memfd_create");
	if (settle(f)) {
		close(fd);
		return -1;
	}
	if (f->n == MAX_CHUNKS)
		drop_oldest(f);
	f->n++;
	c = cur_chunk(f);
	*c = (struct chunk){ .fd = fd, .start = now };
	if (sp_segments_start(f->segs, fd, "flight window", ++f->nseg, now))
		return -1;
	c->hdr_bytes = sp_segments_header_end(f->segs, &c->hdr_time);
	return 0;
}

static uint64_t window_bytes(const struct sp_flight *f)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < f->n; i++)
		sum += f->chunks[(f->first + i) % MAX_CHUNKS].bytes;
	return sum;
}

/*
 * Keep the window within its bounds: the oldest chunk goes whole. The
 * newest chunk that holds records stays whatever its size: under a flood
 * one batch alone can pass the bound, and dropping it when a new chunk has
 * just been started would leave a dump taken now with no records at all.
 * So the bound may be passed by at most one chunk of one batch.
 */
static void trim_window(struct sp_flight *f, uint64_t now)
{
	while (f->n > 1) {
		const struct chunk *second = &f->chunks[(f->first + 1) % MAX_CHUNKS];

		if (f->n == 2 && !cur_chunk(f)->records)
			break;

		if (window_bytes(f) > f->o.window_bytes ||
		    (f->o.window_ns && second->start + f->o.window_ns < now))
			drop_oldest(f);
		else
			break;
	}
}

/* ---- dumps ---- */

/*
 * dump-SEQ-TIME-TRIGGER.sp: SEQ orders the dumps (--keep deletes by it),
 * TIME (UTC, of the wall clock, which may jump) is for people. A name
 * taken (planted, or a file left by a run whose number we did not see)
 * takes the next number.
 */
static int create_dump(struct sp_flight *f, uint64_t now_wall, char *name, size_t size)
{
	time_t t = (time_t)(now_wall / 1000000000u);
	char stamp[32];
	struct tm tm;
	unsigned int i;
	int fd;

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (i = 0; i < 1000; i++) {
		snprintf(name, size, "dump-%06llu-%s-%s.sp", (unsigned long long)++f->seq, stamp,
			 f->trigger);
		fd = sp_create_in(f->dirfd, name);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

static int copy_all(int to, int from, uint64_t start, uint64_t len)
{
	off_t off = (off_t)start;
	ssize_t n;

	while ((uint64_t)off < start + len) {
		n = sendfile(to, from, &off, start + len - (uint64_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? (errno = EIO, -1) : -1;
	}
	return 0;
}

/* The lost and end records, in the current chunk's ids, to the dump only. */
static int dump_tail(struct sp_flight *f, int fd, uint64_t now, const struct sp_end *sofar)
{
	struct sp_writer *w = sp_segments_writer(f->segs);
	struct sp_record rec;
	int chunk_fd = cur_chunk(f)->fd;
	int rc;

	if (sp_writer_set_fd(w, fd))
		return -1;
	rc = 0;
	rec = (struct sp_record){ .kind = SP_REC_END };
	rec.end = *sofar;
	rec.end.time = now;
	rec.end.reason = SP_ENDR_TRIGGER;
	rec.end.trigger = sp_writer_strz(w, f->trigger);
	rec.end.detail = sp_writer_strz(w, f->detail);
	rec.end.trigger_time = f->trigger_time;
	if (rc || sp_writer_put(w, &rec) || sp_writer_flush(w))
		rc = -1;
	sp_writer_set_fd(w, chunk_fd);
	return rc;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The copy is short (tens of ms of CPU for 64M) and it is what the trigger
 * waits for: on a loaded machine, at the recording's own priority, it
 * would get its share of a core (under a flood on 2 busy cores, 64M took
 * ten times its CPU time in wall time). So its thread asks for a higher
 * one (nice 10 less, as root), for the copy only: the thread ends with it.
 * Refused (no CAP_SYS_NICE), it copies as it is.
 */
static void boost_self(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int prio;

	errno = 0;
	prio = getpriority(PRIO_PROCESS, (id_t)tid);
	if (errno)
		return;
	prio = prio - 10 < -20 ? -20 : prio - 10;
	setpriority(PRIO_PROCESS, (id_t)tid, prio);
}

/*
 * The copy, on a thread of its own: the recording loop goes on. The file's
 * blocks are reserved first (its size is not changed: cut short by a
 * kill -9, it still ends with the last whole chunk it got), which spares
 * the file system an allocation per page. The dump is complete once its
 * last byte is written: any reader sees it whole from then on. Only then
 * is it synced, off the trigger's path; the next dump waits for it.
 */
static void *copy_job(void *arg)
{
	struct dump_job *j = arg;
	unsigned int i;

	if (j->threaded)
		boost_self();
	j->cpu = thread_cpu_ns();
	if (fallocate(j->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)j->total) && errno == ENOSPC)
		j->err = ENOSPC;
	j->reserved = sp_now_mono_ns();
	for (i = 0; i < j->n; i++) {
		if (!j->err && copy_all(j->fd, j->src[i], j->off[i], j->len[i]))
			j->err = errno ? errno : EIO;
		close(j->src[i]);
	}
	j->complete = sp_now_mono_ns();
	j->cpu = thread_cpu_ns() - j->cpu;
	if (!j->err && fdatasync(j->fd))
		j->err = errno;
	if (close(j->fd) && !j->err)
		j->err = errno;
	j->synced = sp_now_mono_ns();
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* A dump's copy is over (wait for it when asked): its file kept or not. */
static void finish_job(struct sp_flight *f, bool wait)
{
	struct dump_job *j = &f->job;

	if (!j->running || (!wait && !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)))
		return;
	if (j->threaded)
		pthread_join(j->thread, NULL);
	j->running = false;
	if (j->err) {
		unlinkat(f->dirfd, j->name, 0);
		if (!f->warned_disk)
			sp_warn("cannot write the dump '%s/%s': %s; the window is kept (said once)",
				f->o.dir, j->name, strerror(j->err));
		f->warned_disk = true;
		return;
	}
	f->bytes += j->total;
	sp_names_add(&f->files, j->name);
	sp_names_trim(&f->files, f->dirfd, f->o.keep);
	sp_info("dump '%s/%s': %llu bytes written in %.1f ms (%.1f ms of CPU; the recording "
		"paused %.1f ms; on disk after %.1f ms)", f->o.dir, j->name,
		(unsigned long long)j->total, (double)(j->complete - j->t0) / 1e6,
		(double)j->cpu / 1e6, (double)j->paused / 1e6,
		(double)(j->synced - j->t0) / 1e6);
	/* Where a trigger's wait goes: the loop's part, then the thread's
	 * (scripts/bench/flight reads this line). */
	sp_info("dump '%s': trigger to complete %.1f ms: the loop took it after %.1f ms, "
		"set the job up in %.1f ms (the file %.1f ms, its header %.1f ms, the end "
		"record %.1f ms); the thread reserved the blocks in %.1f ms, copied in %.1f ms; "
		"synced in %.1f ms more; the loop started the next chunk meanwhile, in %.1f ms "
		"(%.1f ms of its CPU for the whole dump)", j->name,
		(double)(j->complete - j->trigger) / 1e6, (double)(j->t0 - j->trigger) / 1e6,
		(double)(j->started - j->t0) / 1e6,
		(double)(j->created - j->t0) / 1e6, (double)(j->header - j->created) / 1e6,
		(double)(j->tail - j->header) / 1e6,
		(double)(j->reserved - j->started) / 1e6,
		(double)(j->complete - j->reserved) / 1e6,
		(double)(j->synced - j->complete) / 1e6,
		(double)(j->t0 + j->paused - j->started) / 1e6, (double)j->loop_cpu / 1e6);
}

/*
 * What the window dropped, as a lost record that goes right after the
 * first chunk's header: in time order (it ends where the window starts,
 * at the header's time, so the next record's time delta is unchanged), and
 * it names no string. A memfd of its own for the job; -1 when none.
 */
static int lost_fd(struct sp_flight *f, const struct chunk *first, uint64_t *len)
{
	struct sp_spool_state st = { .last_time = first->hdr_time };
	struct sp_record rec = { .kind = SP_REC_LOST };
	uint8_t buf[SP_SPOOL_MAX_FRAMING + 128];
	size_t n;
	int fd;

	rec.lost.time = first->hdr_time;
	rec.lost.start = f->rec_start;
	rec.lost.what = SP_LOST_WINDOW;
	rec.lost.count = f->dropped;
	if (sp_spool_bound(&rec) > 128 || (fd = memfd_create("sp-flight-lost", MFD_CLOEXEC)) < 0)
		return -1;
	n = sp_spool_encode(&st, &rec, buf + SP_SPOOL_MAX_FRAMING);
	*len = sp_varint_put(buf, SP_REC_LOST);
	*len += sp_varint_put(buf + *len, n);
	memmove(buf + *len, buf + SP_SPOOL_MAX_FRAMING, n);
	*len += n;
	if (write(fd, buf, *len) != (ssize_t)*len) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Add bytes [off, off + len) of fd (dup'ed) to the dump job. */
static void job_add(struct dump_job *j, int fd, uint64_t off, uint64_t len, bool dup_it)
{
	int src = dup_it ? dup(fd) : fd;

	if (src < 0) {
		j->err = errno;
		return;
	}
	j->src[j->n] = src;
	j->off[j->n] = off;
	j->len[j->n] = len;
	j->total += len;
	j->n++;
}

/* The tail (the end record) in a memfd of its own, for the job. */
static int tail_fd(struct sp_flight *f, uint64_t now, const struct sp_end *sofar,
		   uint64_t *len)
{
	struct sp_writer *w = sp_segments_writer(f->segs);
	uint64_t before = sp_writer_bytes(w);
	int fd = memfd_create("sp-flight-tail", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (dump_tail(f, fd, now, sofar)) {
		close(fd);
		return -1;
	}
	*len = sp_writer_bytes(w) - before;
	return fd;
}

/* The first chunk's header (magic, header, replayed definitions), copied
 * into the dump by the loop itself: a few kB, the recording barely waits. */
static int write_header(struct sp_flight *f, struct dump_job *j)
{
	const struct chunk *c = &f->chunks[f->first];

	if (copy_all(j->fd, c->fd, 0, c->hdr_bytes))
		return -1;
	j->total += c->hdr_bytes;
	return 0;
}

/*
 * Write the window out: the loop only creates the file, writes its header,
 * takes a reference to each chunk (dup: a chunk dropped meanwhile stays
 * readable), encodes the tail and starts a new chunk; a thread copies
 * (sendfile) while the recording goes on. One dump at a time.
 */
static void dump(struct sp_flight *f, uint64_t now, const struct sp_end *sofar)
{
	struct dump_job *j = &f->job;
	struct chunk saved;
	uint64_t tail_len = 0;
	unsigned int i;
	int tail;

	f->pending = false;
	f->last_dump = now;
	*j = (struct dump_job){ .t0 = sp_now_mono_ns(), .trigger = f->due,
				.loop_cpu = thread_cpu_ns() };
	if (j->trigger > j->t0)
		j->trigger = j->t0;
	if (settle(f))
		return;
	j->fd = create_dump(f, sp_now_wall_ns(), j->name, sizeof(j->name));
	if (j->fd < 0) {
		sp_error_errno("cannot create a dump in '%s'", f->o.dir);
		return;
	}
	j->created = sp_now_mono_ns();
	/* The first chunk's header now, before the thread: a dump killed
	 * (-9) before its copy begins is never an empty file. */
	if (f->n && write_header(f, j) < 0) {
		j->err = errno ? errno : EIO;
		close(j->fd);
		j->running = true;	/* over: deleted, said once */
		finish_job(f, true);
		return;
	}
	j->header = sp_now_mono_ns();
	for (i = 0; i < f->n; i++) {
		const struct chunk *c = &f->chunks[(f->first + i) % MAX_CHUNKS];
		uint64_t lost_len = 0;
		int lost = i == 0 && f->dropped ? lost_fd(f, c, &lost_len) : -1;

		if (i == 0) {
			/* its header is written: the lost record, the rest */
			if (lost >= 0)
				job_add(j, lost, 0, lost_len, false);
			job_add(j, c->fd, c->hdr_bytes, c->bytes - c->hdr_bytes, true);
		} else {
			job_add(j, c->fd, 0, c->bytes, true);
		}
	}
	/* The tail's strings went into the chunk's ids: the chunk ends here
	 * and the window goes on in a new one. */
	saved = *cur_chunk(f);
	tail = tail_fd(f, now, sofar, &tail_len);
	j->tail = sp_now_mono_ns();
	if (tail >= 0)
		job_add(j, tail, 0, tail_len, false);
	else
		j->err = j->err ? j->err : EIO;
	/* The job is whole (its own fds, offsets and lengths): the copy
	 * starts before the next chunk does. Starting a stream replays the
	 * live set and frees the last stream's tables, tens of ms of the
	 * loop on a loaded machine, which the trigger need not wait for. */
	j->running = true;
	j->started = sp_now_mono_ns();
	j->threaded = pthread_create(&j->thread, NULL, copy_job, j) == 0;
	if (!j->threaded) {
		copy_job(j);	/* no thread: copy here */
		finish_job(f, true);
	}
	if (!next_chunk(f, now))	/* its writer counted the tail, the chunk has not */
		f->chunks[(f->first + f->n - 2) % MAX_CHUNKS] = saved;
	j->paused = sp_now_mono_ns() - j->t0;
	j->loop_cpu = thread_cpu_ns() - j->loop_cpu;
}

void sp_flight_fire(struct sp_flight *f, const char *trigger, const char *detail,
		    uint64_t mono)
{
	size_t i;

	if (f->pending) {
		/* One dump holds them: said in its detail. */
		f->more++;
		return;
	}
	f->pending = true;
	f->more = 0;
	snprintf(f->trigger, sizeof(f->trigger), "%s", trigger);
	/* The trigger names a file: letters, digits, '-' and '_' only. */
	for (i = 0; f->trigger[i]; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
			    f->trigger[i]))
			f->trigger[i] = '_';
	snprintf(f->detail, sizeof(f->detail), "%s", detail ? detail : "");
	f->trigger_time = mono;
	f->due = mono + f->o.after_ns;
	/* At most one dump per interval: a storm waits and is counted. */
	if (f->last_dump && f->due < f->last_dump + f->o.interval_ns)
		f->due = f->last_dump + f->o.interval_ns;
}

/* The count of triggers a dump stood for goes in its detail. */
static void say_more(struct sp_flight *f)
{
	size_t len = strlen(f->detail);

	if (!f->more)
		return;
	snprintf(f->detail + len, sizeof(f->detail) - len, "%s%llu more trigger%s until the dump",
		 len ? "; " : "", (unsigned long long)f->more, f->more == 1 ? "" : "s");
	sp_warn("%llu trigger%s fired while a dump was waiting (--dump-interval): counted in it",
		(unsigned long long)f->more, f->more == 1 ? "" : "s");
}

/* ---- the steps ---- */

int sp_flight_begin(struct sp_flight *f, uint64_t now)
{
	f->rec_start = now;
	if (f->one)	/* the first stream: the recording's header as it is */
		return f->nseg++, sp_segments_start(f->segs, f->fd, f->o.out_name, 0, now);
	return f->o.flight ? next_chunk(f, now) : next_segment(f, now);
}

int sp_flight_batch(struct sp_flight *f, uint64_t now, const struct sp_end *sofar)
{
	struct sp_writer *w = sp_segments_writer(f->segs);

	if (!f->o.flight) {
		if (sp_writer_flush(w))
			return -1;
		if (f->one)
			return restream(f, now);
		if (sp_writer_bytes(w) >= f->o.segment_bytes ||
		    (f->o.segment_ns && now - f->seg_start >= f->o.segment_ns))
			return rotate(f, now, sofar);
		return 0;
	}
	if (settle(f))
		return -1;
	if (cur_chunk(f)->bytes >= f->chunk_bytes || now - cur_chunk(f)->start >= f->chunk_ns)
		if (next_chunk(f, now))
			return -1;
	trim_window(f, now);
	finish_job(f, false);
	if (f->pending && now >= f->due && !f->job.running) {
		say_more(f);
		dump(f, now, sofar);
		trim_window(f, now);
	}
	return 0;
}

int sp_flight_finish(struct sp_flight *f, uint64_t now, const struct sp_end *sofar)
{
	struct sp_writer *w = sp_segments_writer(f->segs);
	int rc = 0;

	if (f->o.flight) {
		finish_job(f, true);
		if (f->pending) {
			say_more(f);
			dump(f, now, sofar);
			finish_job(f, true);
		}
		return 0;
	}
	if (w && f->one) {
		rc = sp_writer_flush(w);
		f->err = sp_writer_errno(w);
	}
	if (w)
		f->bytes += sp_writer_bytes(w);
	rc = sp_segments_close(f->segs) || rc ? -1 : 0;
	if (f->one)	/* the caller's: closed by it */
		return rc;
	if (f->fd >= 0 && close(f->fd))
		rc = sp_error_errno("cannot write '%s'", f->o.dir);
	f->fd = -1;
	return rc;
}
