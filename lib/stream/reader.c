// SPDX-License-Identifier: MIT
/*
 * Reading record streams (reader.h): inputs in turn, each a spool or JSON
 * lines, told apart by the first bytes; optional following of a growing file;
 * a directory of a rotated recording's segments read in order as one input
 * (segdir.h), followed across rotations.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "folded_text.h"
#include "json_in.h"
#include "reader.h"
#include "schema.h"
#include "segdir.h"
#include "spool.h"
#include "spool_lock.h"

#define CHUNK (256u << 10)
#define MAX_LINE (SP_SPOOL_MAX_RECORD)
#define FOLLOW_WAIT_NS 20000000L	/* 20 ms between looks at a growing file */
#define DISCARD_EVERY (1u << 20)
#define STALE_WAITS 50u		/* looks (1 s) before a segment with a newer one is over */

/*
 * Kinds of the diagnostics said one by one for the first SP_READER_SAID of
 * an input, then counted (reader.h): what follows a corrupt record says
 * the same few things over and over.
 */
enum said_kind {
	SAID_UNDEFINED,	/* a record referring to an undefined definition: skipped */
	SAID_SKIPPED,	/* any other record or line skipped */
	SAID_NODEFS,	/* JSON lines of a stream without its definitions */
	SAID_UNKNOWN,	/* a record of an unknown kind: passed on undecoded */
	SAID_KINDS
};

struct sp_reader {
	char **paths;
	int npaths, next_path;

	/* The input being read. */
	char *name;
	int fd;
	bool own_fd, is_reg, eof, open;
	enum sp_format format;	/* 0 until detected */
	uint8_t *buf;
	size_t start, end, cap;
	uint64_t base;		/* file offset of buf[0] */
	uint64_t line;		/* JSON line number of the next line */
	bool pending_json;	/* records of a parsed line still to hand out */
	uint64_t pending_pos;
	uint64_t punched;	/* bytes of the file already discarded */
	uint64_t consumed;	/* bytes of the inputs already closed */

	struct sp_defs *defs;
	struct sp_spool_state st;
	struct sp_json_in *json;
	int status;
	bool follow, discard, saw_end;
	bool nonblock;		/* inside sp_reader_poll() */
	bool would_block;	/* the visible end was reached, more may come */
	volatile sig_atomic_t stop;
	/* A directory of segments being read (dir_path its name). */
	struct sp_segdir *dir;
	char *dir_path;
	uint64_t seg;		/* the segment open or last read; 0: none yet */
	bool seg_rotated;	/* the segment read ended with reason "rotated" */
	bool dir_ended;		/* a segment ended the recording */
	bool seg_read;		/* r->seg was opened and read */
	bool opening;		/* inside sp_reader_open() */
	bool dir_cut_said, discard_said;
	unsigned int idle_waits;	/* looks at a followed segment that did not grow */
	unsigned int lock_waits;	/* looks at a followed file that did not grow */
	unsigned int unlocked_looks;	/* lock looks in a row that found none */
	/* its writer's lock was seen (spool_lock.h): in this file, or in an
	 * earlier segment of this directory (one writer writes them all) */
	bool writer_seen;
	bool nolock_said;	/* a followed file no writer ever locked, said */

	struct sp_tally said[SAID_KINDS];	/* of this input, until it ends */
	uint64_t said_kinds[SP_READER_SAID];	/* the unknown kinds said (as many
						 * as said[SAID_UNKNOWN].said) */
	bool newer_writer;	/* the stream's header is a newer writer's */
	unsigned int warned_limits;	/* SP_DEFS_LIMIT_* reported for this input */
};

static void set_status(struct sp_reader *r, int s)
{
	r->status = sp_status_merge(r->status, s);
}

static const char *sep(const struct sp_reader *r)
{
	return r->format == SP_FORMAT_JSON ? ":" : "@";
}

/*
 * Say how many of each kind of diagnostic went unsaid (reader.h), where
 * the first of them was, and start counting again: at the end of an input,
 * and at the reader's close for any counted after it.
 */
static void say_unsaid(struct sp_reader *r)
{
	static const char *const what[SAID_KINDS][2] = {
		{ "records referring to undefined definitions skipped",
		  "lines referring to undefined definitions skipped" },
		{ "records skipped", "lines skipped" },
		{ "records needing the definitions left out skipped",
		  "lines needing the definitions left out skipped" },
		{ "records of unknown kinds passed on undecoded",
		  "records of unknown kinds passed on undecoded" },
	};
	bool json = r->format == SP_FORMAT_JSON;
	const char *name = sp_reader_name(r);
	unsigned int k;

	for (k = 0; k < SAID_KINDS; k++) {
		uint64_t n = sp_tally_unsaid(&r->said[k]);

		if (!n)
			continue;
		if (k == SAID_UNKNOWN)
			sp_warn("%s: %llu more %s (first at %s%s%llu)", name,
				(unsigned long long)n, what[k][json], name, sep(r),
				(unsigned long long)r->said[k].first_unsaid);
		else
			sp_error("%s: %llu more %s (first at %s%s%llu)", name,
				 (unsigned long long)n, what[k][json], name, sep(r),
				 (unsigned long long)r->said[k].first_unsaid);
	}
	memset(r->said, 0, sizeof(r->said));
}

/*
 * A record (a JSON line) skipped: said with its position for the first few
 * of its kind, then counted; either way the status is PARTIAL.
 */
static void skipped(struct sp_reader *r, uint64_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void skipped(struct sp_reader *r, uint64_t pos, const char *fmt, ...)
{
	char msg[512];
	enum said_kind k;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	set_status(r, SP_EXIT_PARTIAL);
	k = strstr(msg, "an undefined ") ? SAID_UNDEFINED : SAID_SKIPPED;
	if (sp_tally_next(&r->said[k], SP_READER_SAID - 1, pos) != SP_SAY_NOTHING)
		sp_error("%s%s%llu: %s", sp_reader_name(r), sep(r), (unsigned long long)pos, msg);
}

static void close_input(struct sp_reader *r)
{
	say_unsaid(r);
	if (r->open)
		r->consumed += r->base + r->start;
	if (r->own_fd && r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->open = false;
	r->start = r->end = 0;
	r->base = 0;
}

static void start_input(struct sp_reader *r, int fd, bool own, const char *name)
{
	struct stat st;

	free(r->name);
	r->name = sp_xstrdup(name);
	r->fd = fd;
	r->own_fd = own;
	r->is_reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	r->eof = false;
	r->open = true;
	r->format = 0;
	r->start = r->end = 0;
	r->base = 0;
	r->line = 1;
	r->punched = 0;
	r->pending_json = false;
	r->saw_end = false;
	r->seg_rotated = false;
	r->idle_waits = r->lock_waits = r->unlocked_looks = 0;
	if (!r->dir)
		r->writer_seen = r->nolock_said = false;
	r->warned_limits = 0;
	r->newer_writer = false;
}

/* Segments from..to (inclusive) of the directory will not be read. */
static void say_gap(struct sp_reader *r, uint64_t from, uint64_t to)
{
	if (from == 1)
		sp_warn("'%s': the oldest segment is %llu: %s%llu %s gone (deleted by the "
			"recorder's --keep cap, or lost)", r->dir_path, (unsigned long long)to + 1,
			to > 1 ? "segments 1-" : "segment ", (unsigned long long)to,
			to > 1 ? "are" : "is");
	else if (from == to)
		sp_warn("'%s': segment %llu is missing (deleted by the recorder's --keep cap, or "
			"lost): the stream jumps from segment %llu to %llu", r->dir_path,
			(unsigned long long)from, (unsigned long long)from - 1,
			(unsigned long long)to + 1);
	else
		sp_warn("'%s': segments %llu-%llu are missing (deleted by the recorder's --keep "
			"cap, or lost): the stream jumps from segment %llu to %llu", r->dir_path,
			(unsigned long long)from, (unsigned long long)to,
			(unsigned long long)from - 1, (unsigned long long)to + 1);
}

static void wait_a_little(void)
{
	struct timespec ts = { 0, FOLLOW_WAIT_NS };

	nanosleep(&ts, NULL);
}

/* Read the directory again; false (reported) if it cannot be read. */
static bool rescan(struct sp_reader *r)
{
	bool cut;

	if (sp_segdir_scan(r->dir, &cut)) {
		sp_error_errno("cannot read the directory '%s'", r->dir_path);
		set_status(r, SP_EXIT_FATAL);
		return false;
	}
	if (cut && !r->dir_cut_said) {
		r->dir_cut_said = true;
		sp_warn("'%s' holds more than %u names: segments past them are not seen",
			r->dir_path, SP_SEGDIR_MAX_NAMES);
	}
	return true;
}

/* Before moving past segment r->seg: say if it was over without its end. */
static void check_left(struct sp_reader *r, uint64_t next)
{
	if (r->seg && !r->seg_rotated && !r->saw_end && r->seg_read)
		sp_warn("'%s/segment-%06llu.sp' ends without an end record (its writer stopped "
			"early): going on with segment %llu", r->dir_path,
			(unsigned long long)r->seg, (unsigned long long)next);
	r->seg_read = false;
}

/*
 * Following a directory past segment r->seg, which ended "rotated": its
 * writer creates (and locks, spool_lock.h) the next segment before it
 * closes this one (flight.c), so this one unlocked with no next segment
 * after it means the writer is gone: killed between the two. Looked at as
 * writer_gone() looks (the first wait, then every STALE_WAITS), and only
 * for a writer whose lock was seen (an older StackPulse's never is): here
 * or on a segment read before. The lock is looked at before the
 * directory: a next segment created after the look is seen.
 */
static bool rotation_orphaned(struct sp_reader *r)
{
	const char *why;
	uint64_t next;
	int fd, locked;

	if (!r->seg || !r->seg_rotated || r->lock_waits++ % STALE_WAITS)
		return false;
	fd = sp_segdir_open_segment(r->dir, r->seg, &why);
	if (fd < 0 && errno != ENOENT)
		return false;	/* not known: wait on */
	locked = fd < 0 ? 0 : sp_spool_locked(fd);	/* deleted: by a later rotation */
	if (fd >= 0)
		close(fd);
	if (locked == 1) {
		r->writer_seen = true;
		r->unlocked_looks = 0;
	}
	if (locked == 0 && !r->writer_seen && ++r->unlocked_looks == 2 && !r->nolock_said) {
		r->nolock_said = true;	/* as writer_gone() says it */
		sp_warn("'%s': segment %llu ended for a rotation, and no writer holds a lock "
			"on it (sp-record holds one while it writes): if its writer ended "
			"before sp-decode started, no next segment comes; following goes on "
			"until interrupted", r->dir_path, (unsigned long long)r->seg);
	}
	if (locked != 0 || !r->writer_seen)
		return false;
	if (!rescan(r) || sp_segdir_next(r->dir, r->seg, &next))
		return false;
	if (++r->unlocked_looks < 2)
		return false;
	sp_warn("'%s': segment %llu ended for a rotation, but its writer is gone without "
		"creating the next (killed, or it failed): following ends here", r->dir_path,
		(unsigned long long)r->seg);
	set_status(r, SP_EXIT_PARTIAL);
	r->dir_ended = true;
	return true;
}

/*
 * Open the directory's next segment: 1 opened, 0 the directory is done,
 * -1 none yet (following, inside sp_reader_poll(): r->would_block).
 * Following, a segment not there yet is waited for, unless a segment
 * ended the recording.
 */
static int open_segment(struct sp_reader *r)
{
	for (;;) {
		char name[SP_SEGDIR_NAME_MAX], *path;
		const char *why;
		uint64_t seq;
		int fd;

		if (r->stop || !rescan(r))
			return 0;
		if (!sp_segdir_next(r->dir, r->seg, &seq)) {
			if (r->opening && !r->seg)
				return -1;	/* empty: whether to wait is not known yet */
			if (!r->follow || r->dir_ended || rotation_orphaned(r))
				return 0;
			if (r->nonblock) {
				r->would_block = true;
				return -1;
			}
			wait_a_little();
			continue;
		}
		check_left(r, seq);
		if (seq != r->seg + 1 && (r->seg || seq > 1))
			say_gap(r, r->seg + 1, seq - 1);
		r->seg = seq;
		sp_segdir_name(seq, name);
		fd = sp_segdir_open_segment(r->dir, seq, &why);
		if (fd < 0 && errno == ENOENT) {
			sp_warn("'%s/%s' was deleted before it could be read (the recorder's --keep "
				"cap): going on with the oldest segment left", r->dir_path, name);
			continue;
		}
		if (fd < 0) {
			if (why)
				sp_error("'%s/%s': %s; skipped", r->dir_path, name, why);
			else
				sp_error_errno("cannot open '%s/%s'", r->dir_path, name);
			set_status(r, SP_EXIT_PARTIAL);
			continue;
		}
		path = sp_xmalloc(strlen(r->dir_path) + 1 + sizeof(name));
		sprintf(path, "%s/%s", r->dir_path, name);
		start_input(r, fd, true, path);
		free(path);
		r->seg_read = true;
		return 1;
	}
}

static void close_dir(struct sp_reader *r)
{
	sp_segdir_free(r->dir);
	r->dir = NULL;
	free(r->dir_path);
	r->dir_path = NULL;
}

/*
 * Path p as a directory of segments: 1 it is one (r->dir set), 0 it is not
 * a directory, -1 a directory that cannot be read this way (reported).
 */
static int open_dir(struct sp_reader *r, const char *p)
{
	struct stat st;

	r->dir = sp_segdir_open(p);
	if (r->dir) {
		r->dir_path = sp_xstrdup(p);
		r->seg = 0;
		r->seg_read = r->seg_rotated = r->saw_end = r->dir_ended = false;
		r->writer_seen = r->nolock_said = false;
		return 1;
	}
	if ((errno == ELOOP || errno == ENOTDIR) && lstat(p, &st) == 0 && S_ISLNK(st.st_mode) &&
	    stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
		sp_error("'%s' is a symbolic link to a directory: segments are read only from "
			 "a directory named itself", p);
		set_status(r, SP_EXIT_FATAL);
		return -1;
	}
	if (errno != ENOTDIR && errno != ELOOP && errno != ENOENT && errno != EACCES) {
		sp_error_errno("cannot open the directory '%s'", p);
		set_status(r, SP_EXIT_FATAL);
		return -1;
	}
	return 0;
}

/* Open the next path, or the next segment of a directory; false when there
 * is none left (r->would_block: none yet). */
static bool open_next(struct sp_reader *r)
{
	while (r->dir || r->next_path < r->npaths || (r->npaths == 0 && r->next_path == 0)) {
		const char *p;
		int fd, k;

		if (r->dir) {
			k = open_segment(r);
			if (k > 0)
				return true;
			if (k < 0)
				return false;
			if (!r->seg && !r->stop && sp_segdir_others(r->dir)) {
				sp_error("'%s' holds no segments (segment-NNNNNN.sp): not a "
					 "recording (name a spool file in it, or the directory "
					 "sp-record -o DIR wrote)", r->dir_path);
				set_status(r, SP_EXIT_FATAL);
			} else if (!r->seg && !r->stop) {
				sp_warn("'%s' holds no segments (segment-NNNNNN.sp)", r->dir_path);
			}
			close_dir(r);
			continue;
		}
		p = r->npaths ? r->paths[r->next_path] : "-";
		r->next_path++;
		if (!strcmp(p, "-")) {
			start_input(r, STDIN_FILENO, false, "<stdin>");
			return true;
		}
		k = open_dir(r, p);
		if (k)
			continue;
		fd = open(p, (r->discard ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (fd < 0) {
			sp_error_errno("cannot open '%s'", p);
			set_status(r, SP_EXIT_FATAL);
			continue;
		}
		start_input(r, fd, true, p);
		return true;
	}
	return false;
}

static struct sp_reader *reader_new(void)
{
	struct sp_reader *r = sp_xcalloc(1, sizeof(*r));

	r->fd = -1;
	r->defs = sp_defs_new();
	r->json = sp_json_in_new();
	return r;
}

struct sp_reader *sp_reader_open(char **paths, int n)
{
	struct sp_reader *r = reader_new();
	bool ok;

	r->paths = paths;
	r->npaths = n;
	r->opening = true;
	ok = open_next(r) || r->dir;	/* an empty directory may be followed */
	r->opening = false;
	if (!ok) {
		sp_reader_close(r);
		return NULL;
	}
	return r;
}

struct sp_reader *sp_reader_open_fd(int fd, const char *name)
{
	struct sp_reader *r = reader_new();

	r->npaths = 0;
	r->next_path = 1;
	start_input(r, fd, false, name);
	return r;
}

void sp_reader_follow(struct sp_reader *r, bool follow, bool discard)
{
	r->follow = follow;
	r->discard = discard && follow;
	if (r->discard && r->dir)
		sp_warn("'%s': --discard leaves the segments of a directory whole (the "
			"recorder's --keep cap bounds them)", r->dir_path);
	/* Discarding needs a descriptor that may write. */
	if (r->discard && r->open && r->own_fd && r->npaths && !r->dir) {
		int fd = open(r->name, O_RDWR | O_CLOEXEC);

		if (fd >= 0) {
			dup2(fd, r->fd);
			close(fd);
		}
	}
}

void sp_reader_stop(struct sp_reader *r)
{
	r->stop = 1;
}

bool sp_reader_await(char **paths, int n, const volatile sig_atomic_t *stop)
{
	const struct timespec tick = { 0, 50 * 1000000 };
	unsigned int waits;
	int i;

	for (i = 0; i < n; i++) {
		if (!strcmp(paths[i], "-"))
			continue;
		for (waits = 0; access(paths[i], F_OK) && errno == ENOENT; waits++) {
			if (*stop)
				return false;
			if (waits == 20)
				sp_warn("'%s' does not exist yet: waiting for it to be created "
					"(interrupt to stop)", paths[i]);
			nanosleep(&tick, NULL);
		}
	}
	return true;
}

struct sp_defs *sp_reader_defs(struct sp_reader *r)
{
	return r->defs;
}

const char *sp_reader_name(const struct sp_reader *r)
{
	return r->name ? r->name : "<stdin>";
}

enum sp_format sp_reader_format(const struct sp_reader *r)
{
	return r->format ? r->format : SP_FORMAT_SPOOL;
}

uint64_t sp_reader_bytes(const struct sp_reader *r)
{
	return r->consumed + (r->open ? r->base + r->start : 0);
}

bool sp_reader_more_available(struct sp_reader *r)
{
	struct stat st;

	if (r->end > r->start || r->pending_json)
		return true;
	return r->is_reg && fstat(r->fd, &st) == 0 && (uint64_t)st.st_size > r->base + r->end;
}

void sp_reader_skipped(struct sp_reader *r, const struct sp_record *rec, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	skipped(r, rec->pos, "%s", msg);
}

/* Punch out the consumed, page-aligned prefix of a followed file. */
static void discard_consumed(struct sp_reader *r)
{
	uint64_t upto = (r->base + r->start) & ~(uint64_t)4095;

	if (!r->discard || !r->is_reg || r->dir || upto < r->punched + DISCARD_EVERY)
		return;
	if (fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, r->punched,
		      upto - r->punched)) {
		sp_warn("'%s': cannot discard the consumed part: %s", r->name, strerror(errno));
		r->discard = false;
		return;
	}
	r->punched = upto;
}

/*
 * A followed segment that stopped growing without its end record while a
 * newer segment exists is over: its writer went on without closing it
 * (killed, or a new recording in the directory). Looked at every
 * STALE_WAITS waits at its end.
 */
static bool abandoned(struct sp_reader *r)
{
	uint64_t next;

	if (!r->dir || ++r->idle_waits % STALE_WAITS)
		return false;
	return rescan(r) && sp_segdir_next(r->dir, r->seg, &next);
}

/*
 * A followed file whose writer's lock (spool_lock.h) was seen and is gone,
 * without its end record and with nothing more written: its writer was
 * killed (or it is an older StackPulse's: then the lock is never seen, and
 * the file is followed until interrupted). Looked at on the first wait at
 * the end and every STALE_WAITS (1 s) after; gone when two looks in a row
 * find no lock (a segment is locked a moment after it is created). The
 * size is looked at after the lock: a writer that ended well wrote its end
 * record before closing.
 */
static bool writer_gone(struct sp_reader *r)
{
	struct stat st;
	int locked;

	if (r->lock_waits++ % STALE_WAITS)
		return false;
	locked = sp_spool_locked(r->fd);
	if (locked == 1) {
		r->writer_seen = true;
		r->unlocked_looks = 0;
	}
	if (locked == 0 && !r->writer_seen && r->base + r->end > 0 &&
	    ++r->unlocked_looks == 2 && !r->nolock_said) {
		/* nothing written for a second, and no lock ever: there is no
		 * telling a writer gone before the following began from one
		 * that locks nothing; said once, following goes on. (An empty
		 * file is not said: sp-record creates its output first and
		 * locks it before it writes.) */
		r->nolock_said = true;
		sp_warn("%s@%llu: no writer holds a lock on it (sp-record holds one while it "
			"writes): if its writer ended before sp-decode started, nothing more "
			"comes; following goes on until interrupted", r->name,
			(unsigned long long)(r->base + r->end));
	}
	if (locked != 0 || !r->writer_seen)
		return false;
	if (fstat(r->fd, &st) == 0 && (uint64_t)st.st_size > r->base + r->end)
		return false;	/* its last bytes: read them first */
	if (++r->unlocked_looks < 2)
		return false;
	sp_warn("%s@%llu: its writer is gone without writing its end record (killed, or "
		"it failed): following ends here", r->name,
		(unsigned long long)(r->base + r->end));
	set_status(r, SP_EXIT_PARTIAL);
	r->dir_ended = true;	/* no segment comes after it either */
	return true;
}

/*
 * Read more bytes, keeping buf[start..end). want is the total number of
 * unconsumed bytes needed (0: any more). Returns >0 read, 0 at the end of the
 * input (after waiting when following), -1 on error (reported).
 */
static int fill(struct sp_reader *r, size_t want)
{
	ssize_t n;

	discard_consumed(r);
	if (r->start > 0 && (r->start >= r->cap / 2 || r->end == r->start)) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->base += r->start;
		r->end -= r->start;
		r->start = 0;
	}
	if (want < r->end - r->start + CHUNK)
		want = r->end - r->start + CHUNK;
	sp_grow(&r->buf, &r->cap, r->start + want, 1);
	for (;;) {
		if (r->eof && !r->follow)
			return 0;
		n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n > 0) {
			r->idle_waits = r->unlocked_looks = 0;
			r->end += n;
			return 1;
		}
		if (n < 0 && errno == EINTR) {
			if (r->stop)
				return 0;
			continue;
		}
		if (n < 0) {
			sp_error_errno("cannot read '%s'", r->name);
			set_status(r, SP_EXIT_FATAL);
			return -1;
		}
		r->eof = true;
		if (r->nonblock && r->is_reg && !r->saw_end) {
			struct stat st;

			if (fstat(r->fd, &st) == 0 && (uint64_t)st.st_size < r->base + r->end) {
				sp_error("%s@%llu: the file shrank while being read", r->name,
					 (unsigned long long)st.st_size);
				set_status(r, SP_EXIT_FATAL);
				return -1;
			}
			discard_consumed(r);
			if (abandoned(r) || writer_gone(r))
				return 0;
			r->would_block = true;
			r->eof = false;
			return 0;
		}
		if (!r->follow || !r->is_reg || r->saw_end || r->stop || abandoned(r) ||
		    writer_gone(r))
			return 0;
		/* Following: a growing file. Shrinking is an error. */
		{
			struct stat st;
			struct timespec ts = { 0, FOLLOW_WAIT_NS };

			if (fstat(r->fd, &st) == 0 && (uint64_t)st.st_size < r->base + r->end) {
				sp_error("%s@%llu: the file shrank while being followed", r->name,
					 (unsigned long long)st.st_size);
				set_status(r, SP_EXIT_FATAL);
				return -1;
			}
			discard_consumed(r);
			nanosleep(&ts, NULL);
			if (r->stop)
				return 0;
		}
	}
}

static int detect(struct sp_reader *r)
{
	size_t i;

	while (r->end - r->start < SP_SPOOL_MAGIC_LEN) {
		int f = fill(r, SP_SPOOL_MAGIC_LEN);

		if (f < 0)
			return -1;
		if (f == 0)
			break;
	}
	if (r->would_block && r->end - r->start < SP_SPOOL_MAGIC_LEN)
		return 0;	/* decide once the writer has written more */
	if (r->end - r->start >= SP_SPOOL_MAGIC_LEN &&
	    !memcmp(r->buf + r->start, SP_SPOOL_MAGIC, SP_SPOOL_MAGIC_LEN)) {
		r->format = SP_FORMAT_SPOOL;
		return 0;
	}
	for (i = r->start; i < r->end && strchr(" \t\r\n", r->buf[i]); i++)
		;
	if (i < r->end && r->buf[i] == '{') {
		r->format = SP_FORMAT_JSON;
		return 0;
	}
	if (r->end == r->start || i == r->end) {
		/* Empty input, or only white space: no records. Said, as for an
		 * empty directory: a pipe from a recorder that failed gives one */
		if (r->base == 0)
			sp_warn("'%s' is empty: no recording in it (did what wrote it fail?)",
				r->name);
		r->format = SP_FORMAT_JSON;
		return 0;
	}
	if (sp_looks_folded(r->buf + r->start, r->end - r->start))
		sp_error("%s@0: not a StackPulse spool or JSON lines: folded stacks, which only "
			 "sp-flame reads, from a file it is given by name (sp-flame FILE; a "
			 "pipe: sp-flame /dev/stdin)", r->name);
	else
		sp_error("%s@0: not a StackPulse spool or JSON lines", r->name);
	set_status(r, SP_EXIT_FATAL);
	return -1;
}

/*
 * Definitions past a limit of the defs (defs.h): said once per input, at
 * the first one. Nothing is dropped from the stream; what is derived from
 * the stack or frame is cut, and the outputs say so where they can.
 */
static void warn_limits(struct sp_reader *r, uint64_t pos)
{
	unsigned int hit = sp_defs_limits_hit(r->defs) & ~r->warned_limits;

	if (!hit)
		return;
	r->warned_limits |= hit;
	if (hit & SP_DEFS_LIMIT_STACK)
		sp_warn("%s%s%llu: stack %llu is deeper than %u frames: its frames past the %u "
			"innermost are left out wherever stacks are shown or counted",
			r->name, sep(r), (unsigned long long)pos,
			(unsigned long long)sp_defs_nstacks(r->defs), SP_MAX_STACK_DEPTH,
			SP_MAX_STACK_DEPTH);
	if (hit & SP_DEFS_LIMIT_INLINE)
		sp_warn("%s%s%llu: a frame has more than %u inline levels: the ones between "
			"the %u innermost and the last are left out", r->name, sep(r),
			(unsigned long long)pos, SP_MAX_INLINE_DEPTH, SP_MAX_INLINE_DEPTH - 1);
}

/*
 * A kind a newer writer plausibly uses: one of the next few past ours, or
 * any in a stream whose header is a newer writer's. One further out is
 * more likely a corrupt byte (a flipped one gives a kind in the hundreds).
 */
static bool newer_kind(const struct sp_reader *r, uint64_t kind)
{
	return r->newer_writer || kind < SP_REC_KIND_MAX + SP_SPOOL_NEWER_KINDS;
}

/* An unknown kind: said once per kind, for the first few kinds, then counted. */
static void warn_unknown(struct sp_reader *r, const struct sp_record *rec)
{
	struct sp_tally *t = &r->said[SAID_UNKNOWN];
	uint64_t kind = rec->unknown.kind;
	unsigned int i;

	set_status(r, SP_EXIT_PARTIAL);
	for (i = 0; i < t->said && i < SP_READER_SAID; i++) {
		if (r->said_kinds[i] == kind) {
			sp_tally_quiet(t, rec->pos);
			return;
		}
	}
	if (sp_tally_next(t, SP_READER_SAID - 1, rec->pos) == SP_SAY_NOTHING)
		return;
	r->said_kinds[t->said - 1] = kind;
	if (newer_kind(r, kind))
		sp_warn("%s%s%llu: unknown record kind %llu (from a newer StackPulse?) passed on "
			"undecoded", r->name, sep(r), (unsigned long long)rec->pos,
			(unsigned long long)kind);
	else
		sp_warn("%s%s%llu: unknown record kind %llu, far past the %u kinds of this "
			"version, which the stream's header says wrote it: the input looks "
			"corrupt here; passed on undecoded", r->name, sep(r),
			(unsigned long long)rec->pos, (unsigned long long)kind,
			(unsigned int)SP_REC_KIND_MAX - 1);
}

/*
 * An end record read: false to drop it. Between the segments of a
 * directory, an end with reason "rotated" is transport: it closes one file
 * of a recording that goes on in the next segment's stream (whose header,
 * with its segment number, follows), so it is not handed on. Passed on,
 * every consumer would have to tell it from a real end, or a follower
 * downstream would stop, sp-tree would date the recording's end there,
 * sp-correlate would close the spans still running. Read from a file (one
 * segment alone, or segments joined) it is passed on as it is, so that
 * sp-decode and --encode keep it; sp-tree and sp-correlate then pass over
 * it. Any other end ends the recording: a followed directory is not waited
 * on after it.
 */
static bool end_record(struct sp_reader *r, const struct sp_record *rec)
{
	r->saw_end = true;
	if (rec->end.reason == SP_ENDR_ROTATED) {
		r->seg_rotated = true;
		return !r->dir;
	}
	if (r->dir)
		r->dir_ended = true;
	return true;
}

/* 1 record, 0 end of this input, -1 fatal in this input. */
static int next_spool(struct sp_reader *r, struct sp_record *rec)
{
	for (;;) {
		size_t avail = r->end - r->start, off = 0;
		uint64_t kind, len, pos = r->base + r->start;
		const uint8_t *p = r->buf + r->start;
		const char *why = NULL;
		enum sp_frame_result fr;
		int f;

		if (avail && !memcmp(p, SP_SPOOL_MAGIC, avail < SP_SPOOL_MAGIC_LEN ? avail :
				     SP_SPOOL_MAGIC_LEN)) {
			/* The magic opens a stream (spools may be concatenated).
			 * Other bytes starting with its first are a record of a
			 * kind whose varint begins with 0x93 (147, 275, ...). */
			if (avail >= SP_SPOOL_MAGIC_LEN) {
				r->start += SP_SPOOL_MAGIC_LEN;
				r->st.last_time = 0;
				continue;
			}
			fr = SP_FRAME_SHORT;
			len = SP_SPOOL_MAGIC_LEN;
			off = 0;
		} else {
			fr = avail ? sp_spool_frame(p, avail, &kind, &off, &len, &why) : SP_FRAME_SHORT;
		}
		if (fr == SP_FRAME_CORRUPT) {
			sp_error("%s@%llu: %s", r->name, (unsigned long long)pos, why);
			set_status(r, SP_EXIT_FATAL);
			return -1;
		}
		if (fr == SP_FRAME_SHORT) {
			size_t want = avail && why == NULL && off ? off + len : 0;

			f = fill(r, want ? want : avail + 1);
			if (f < 0)
				return -1;
			if (f == 0) {
				if (r->end == r->start || r->stop || r->would_block)
					return 0;
				sp_error("%s@%llu: record cut short (the spool ends %zu byte%s into it)",
					 r->name, (unsigned long long)(r->base + r->start),
					 r->end - r->start, r->end - r->start == 1 ? "" : "s");
				set_status(r, SP_EXIT_FATAL);
				return -1;
			}
			continue;
		}
		if (sp_spool_decode(&r->st, kind, p + off, len, rec, &why)) {
			sp_error("%s@%llu: %s record: %s", r->name, (unsigned long long)pos,
				 sp_rec_kind_name(kind) ?: "a", why);
			set_status(r, SP_EXIT_FATAL);
			return -1;
		}
		r->start += off + len;
		rec->pos = pos;
		if (rec->kind == SP_REC_KIND_MAX) {
			warn_unknown(r, rec);
			return 1;
		}
		if (sp_defs_add(r->defs, rec, &why)) {
			skipped(r, pos, "%s record refers to %s; skipped", sp_rec_kind_name(kind),
				why);
			continue;
		}
		if (rec->kind == SP_REC_STACK || rec->kind == SP_REC_SYMBOL)
			warn_limits(r, pos);
		if (rec->kind == SP_REC_END && !end_record(r, rec))
			continue;
		return 1;
	}
}

/*
 * A JSON line that could not be taken: skipped, said with its line. Lines
 * naming stacks or frames where none was defined at all are a stream
 * without its definitions (sp-decode --no-defs leaves them out): every
 * sample refers to one, so that is said once, for what it is, and the
 * rest counted, not said once a sample.
 */
static void json_line_failed(struct sp_reader *r, const char *why)
{
	bool nodefs = (strstr(why, "an undefined stack") || strstr(why, "an undefined frame")) &&
		      !sp_defs_nstacks(r->defs) && !sp_defs_nframes(r->defs);

	if (!nodefs) {
		skipped(r, r->pending_pos, "%s; line skipped", why);
		return;
	}
	set_status(r, SP_EXIT_PARTIAL);
	if (sp_tally_next(&r->said[SAID_NODEFS], 0, r->pending_pos) == SP_SAY_NOTHING)
		return;
	sp_error("%s:%llu: %s, and no stack or frame is defined before it: a stream "
		 "without its definitions (as sp-decode --no-defs writes) cannot be "
		 "read back; the lines that need them are skipped (said once)", r->name,
		 (unsigned long long)r->pending_pos, why);
}

static int next_json(struct sp_reader *r, struct sp_record *rec)
{
	for (;;) {
		const struct sp_record *q;
		uint8_t *nl;
		size_t len;
		const char *why;
		bool last = false;

		if (r->pending_json && (q = sp_json_in_next(r->json))) {
			*rec = *q;
			rec->pos = r->pending_pos;
			if (rec->kind == SP_REC_KIND_MAX)
				warn_unknown(r, rec);
			if (rec->kind == SP_REC_END && !end_record(r, rec))
				continue;
			return 1;
		}
		r->pending_json = false;
		nl = memchr(r->buf + r->start, '\n', r->end - r->start);
		if (!nl) {
			int f;

			if (r->end - r->start > MAX_LINE) {
				sp_error("%s:%llu: line longer than %u bytes", r->name,
					 (unsigned long long)r->line, MAX_LINE);
				set_status(r, SP_EXIT_FATAL);
				return -1;
			}
			f = fill(r, 0);
			if (f < 0)
				return -1;
			if (f > 0)
				continue;
			if (r->end == r->start || r->stop || r->would_block)
				return 0;
			last = true;	/* a last line without its newline */
			nl = r->buf + r->end;
		}
		len = nl - (r->buf + r->start);
		r->pending_pos = r->line++;
		if (len && !(len == 1 && r->buf[r->start] == '\r')) {
			const char *line = (const char *)r->buf + r->start;
			size_t i;

			for (i = 0; i < len && strchr(" \t\r", line[i]); i++)
				;
			if (i < len && sp_json_in_parse(r->json, r->defs, line, len, &why))
				json_line_failed(r, why);
			if (i < len)
				warn_limits(r, r->pending_pos);
			r->pending_json = i < len;
		}
		r->start += len + (last ? 0 : 1);
	}
}

int sp_reader_next(struct sp_reader *r, struct sp_record *rec)
{
	int got;

	r->would_block = false;
	while (r->open || open_next(r)) {
		r->would_block = false;
		if (!r->format && detect(r) < 0) {
			close_input(r);
			continue;
		}
		if (!r->format && r->would_block)
			return 0;	/* not even the magic is visible yet */
		got = r->format == SP_FORMAT_SPOOL ? next_spool(r, rec) : next_json(r, rec);
		if (got > 0 && rec->kind == SP_REC_HEADER)
			r->newer_writer = rec->header.version > SP_SPOOL_VERSION ||
					  rec->extra.len;
		if (got > 0)
			return 1;
		if (got == 0 && r->would_block)
			return 0;
		close_input(r);
		if (r->stop)
			break;
	}
	if (r->would_block)
		return 0;
	return r->status == SP_EXIT_FATAL ? -1 : 0;
}

int sp_reader_poll(struct sp_reader *r, struct sp_record *rec, bool *at_end)
{
	int got;

	r->nonblock = true;
	got = sp_reader_next(r, rec);
	r->nonblock = false;
	*at_end = got <= 0 && !r->would_block;
	return got;
}

int sp_reader_close(struct sp_reader *r)
{
	int status;

	if (!r)
		return SP_EXIT_FATAL;
	close_input(r);
	close_dir(r);
	status = r->status;
	sp_defs_free(r->defs);
	sp_json_in_free(r->json);
	free(r->buf);
	free(r->name);
	free(r);
	return status;
}
