// SPDX-License-Identifier: MIT
/*
 * Reading record streams (reader.h): inputs in turn, each a spool or JSON
 * lines, told apart by the first bytes; optional following of a growing file.
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

#include "json_in.h"
#include "reader.h"
#include "schema.h"
#include "spool.h"

#define CHUNK (256u << 10)
#define MAX_LINE (SP_SPOOL_MAX_RECORD)
#define FOLLOW_WAIT_NS 20000000L	/* 20 ms between looks at a growing file */
#define DISCARD_EVERY (1u << 20)

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
	uint64_t warned_kinds;	/* bit per unknown kind % 64 already reported */
	unsigned int warned_limits;	/* SP_DEFS_LIMIT_* reported for this input */
};

static void set_status(struct sp_reader *r, int s)
{
	r->status = sp_status_merge(r->status, s);
}

static void close_input(struct sp_reader *r)
{
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
	r->warned_limits = 0;
}

/* Open the next path; false when there is none left. */
static bool open_next(struct sp_reader *r)
{
	while (r->next_path < r->npaths || (r->npaths == 0 && r->next_path == 0)) {
		const char *p = r->npaths ? r->paths[r->next_path] : "-";
		int fd;

		r->next_path++;
		if (!strcmp(p, "-")) {
			start_input(r, STDIN_FILENO, false, "<stdin>");
			return true;
		}
		fd = open(p, (r->discard ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;

			if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
				close(fd);
				errno = EISDIR;
				fd = -1;
			}
		}
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

	r->paths = paths;
	r->npaths = n;
	if (!open_next(r)) {
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
	/* Discarding needs a descriptor that may write. */
	if (r->discard && r->open && r->own_fd && r->npaths) {
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
	if (r->format == SP_FORMAT_JSON)
		sp_error("%s:%llu: %s", r->name, (unsigned long long)rec->pos, msg);
	else
		sp_error("%s@%llu: %s", r->name, (unsigned long long)rec->pos, msg);
	set_status(r, SP_EXIT_PARTIAL);
}

/* Punch out the consumed, page-aligned prefix of a followed file. */
static void discard_consumed(struct sp_reader *r)
{
	uint64_t upto = (r->base + r->start) & ~(uint64_t)4095;

	if (!r->discard || !r->is_reg || upto < r->punched + DISCARD_EVERY)
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
			r->would_block = true;
			r->eof = false;
			return 0;
		}
		if (!r->follow || !r->is_reg || r->saw_end || r->stop)
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
		/* Empty input, or only white space: no records. */
		r->format = SP_FORMAT_JSON;
		return 0;
	}
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
	const char *sep = r->format == SP_FORMAT_JSON ? ":" : "@";

	if (!hit)
		return;
	r->warned_limits |= hit;
	if (hit & SP_DEFS_LIMIT_STACK)
		sp_warn("%s%s%llu: stack %llu is deeper than %u frames: its frames past the %u "
			"innermost are left out wherever stacks are shown or counted",
			r->name, sep, (unsigned long long)pos,
			(unsigned long long)sp_defs_nstacks(r->defs), SP_MAX_STACK_DEPTH,
			SP_MAX_STACK_DEPTH);
	if (hit & SP_DEFS_LIMIT_INLINE)
		sp_warn("%s%s%llu: a frame has more than %u inline levels: the ones between "
			"the %u innermost and the last are left out", r->name, sep,
			(unsigned long long)pos, SP_MAX_INLINE_DEPTH, SP_MAX_INLINE_DEPTH - 1);
}

static void warn_unknown(struct sp_reader *r, const struct sp_record *rec)
{
	uint64_t bit = 1ull << (rec->unknown.kind % 64);

	set_status(r, SP_EXIT_PARTIAL);
	if (r->warned_kinds & bit)
		return;
	r->warned_kinds |= bit;
	sp_warn("%s%s%llu: unknown record kind %llu (from a newer StackPulse?) passed on undecoded",
		r->name, r->format == SP_FORMAT_JSON ? ":" : "@", (unsigned long long)rec->pos,
		(unsigned long long)rec->unknown.kind);
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
				sp_error("%s@%llu: record cut short (the spool ends %zu bytes into it)",
					 r->name, (unsigned long long)(r->base + r->start),
					 r->end - r->start);
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
			sp_error("%s@%llu: %s record refers to %s; skipped", r->name,
				 (unsigned long long)pos, sp_rec_kind_name(kind), why);
			set_status(r, SP_EXIT_PARTIAL);
			continue;
		}
		if (rec->kind == SP_REC_STACK || rec->kind == SP_REC_SYMBOL)
			warn_limits(r, pos);
		if (rec->kind == SP_REC_END)
			r->saw_end = true;
		return 1;
	}
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
			if (rec->kind == SP_REC_END)
				r->saw_end = true;
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
			if (i < len && sp_json_in_parse(r->json, r->defs, line, len, &why)) {
				sp_error("%s:%llu: %s; line skipped", r->name,
					 (unsigned long long)r->pending_pos, why);
				set_status(r, SP_EXIT_PARTIAL);
			}
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

	while (r->open || open_next(r)) {
		r->would_block = false;
		if (!r->format && detect(r) < 0) {
			close_input(r);
			continue;
		}
		if (!r->format && r->would_block)
			return 0;	/* not even the magic is visible yet */
		got = r->format == SP_FORMAT_SPOOL ? next_spool(r, rec) : next_json(r, rec);
		if (got > 0)
			return 1;
		if (got == 0 && r->would_block)
			return 0;
		close_input(r);
		if (r->stop)
			break;
	}
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
	status = r->status;
	sp_defs_free(r->defs);
	sp_json_in_free(r->json);
	free(r->buf);
	free(r->name);
	free(r);
	return status;
}
