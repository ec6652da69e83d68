// SPDX-License-Identifier: MIT
/* Writing a record stream as a spool or as JSON lines (writer.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_out.h"
#include "spool.h"
#include "writer.h"

/* Hand the buffer to the kernel once it holds this much. */
#define FLUSH_AT (256u << 10)

struct sp_writer {
	int fd;
	char *name;
	enum sp_format format;
	unsigned int json_flags;
	bool failed;
	int err;		/* errno of the write that failed */
	bool started;		/* a header has been written */
	struct sp_buf out;
	uint8_t *scratch;
	size_t scratch_cap;
	uint64_t flushed;	/* bytes handed to the kernel */
	struct sp_spool_state st;
	struct sp_defs *defs;
	sp_writer_tee_fn tee;	/* sp_writer_new_tee(): no output of its own */
	void *tee_ctx;
};

struct sp_writer *sp_writer_new(int fd, const char *name, enum sp_format format)
{
	struct sp_writer *w = sp_xcalloc(1, sizeof(*w));

	w->fd = fd;
	w->name = sp_xstrdup(name);
	w->format = format == SP_FORMAT_JSON ? SP_FORMAT_JSON : SP_FORMAT_SPOOL;
	w->defs = sp_defs_new();
	return w;
}

struct sp_writer *sp_writer_new_tee(const char *name, sp_writer_tee_fn fn, void *ctx)
{
	struct sp_writer *w = sp_writer_new(-1, name, SP_FORMAT_SPOOL);

	w->tee = fn;
	w->tee_ctx = ctx;
	return w;
}

int sp_writer_set_fd(struct sp_writer *w, int fd)
{
	if (sp_writer_flush(w))
		return -1;
	w->fd = fd;
	return 0;
}

void sp_writer_set_json_flags(struct sp_writer *w, unsigned int flags)
{
	w->json_flags = flags;
}

struct sp_defs *sp_writer_defs(struct sp_writer *w)
{
	return w->defs;
}

int sp_writer_errno(const struct sp_writer *w)
{
	return w->err;
}

uint64_t sp_writer_bytes(const struct sp_writer *w)
{
	return w->flushed + w->out.len;
}

int sp_writer_flush(struct sp_writer *w)
{
	size_t done = 0;
	ssize_t n;

	if (w->failed)
		return -1;
	while (done < w->out.len && !w->tee) {
		n = write(w->fd, w->out.p + done, w->out.len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			w->failed = true;
			w->err = errno;
			w->flushed += done;
			sp_buf_reset(&w->out);
			/* the reader went away: the caller says what that means */
			if (errno == EPIPE)
				return -1;
			return sp_error_errno("cannot write '%s'", w->name);
		}
		done += n;
	}
	w->flushed += done;
	sp_buf_reset(&w->out);
	return 0;
}

static int put_spool(struct sp_writer *w, const struct sp_record *rec)
{
	uint8_t frame[SP_SPOOL_MAX_FRAMING];
	size_t bound = sp_spool_bound(rec), len, f;
	uint64_t kind = rec->kind == SP_REC_KIND_MAX ? rec->unknown.kind : rec->kind;

	sp_grow(&w->scratch, &w->scratch_cap, bound + 1, 1);
	len = sp_spool_encode(&w->st, rec, w->scratch);
	if (len > SP_SPOOL_MAX_RECORD)
		return sp_error("'%s': a %s record of %zu bytes exceeds the spool's limit",
				w->name, sp_rec_kind_name(rec->kind) ?: "unknown", len);
	f = sp_varint_put(frame, kind);
	f += sp_varint_put(frame + f, len);
	sp_buf_add(&w->out, frame, f);
	sp_buf_add(&w->out, w->scratch, len);
	return 0;
}

/* The record as JSON shows it: with the id the definitions gave it. */
static const struct sp_record *with_id(struct sp_writer *w, const struct sp_record *rec,
				       struct sp_record *copy)
{
	uint64_t *id;

	switch (rec->kind) {
	case SP_REC_STRING:
	case SP_REC_MODULE:
	case SP_REC_FRAME:
	case SP_REC_STACK:
	case SP_REC_SPAN:
		break;
	default:
		return rec;
	}
	*copy = *rec;
	id = (uint64_t *)&copy->string.id;	/* the id is each one's first field */
	*id = rec->kind == SP_REC_STRING ? sp_defs_nstrings(w->defs) :
	      rec->kind == SP_REC_MODULE ? sp_defs_nmodules(w->defs) :
	      rec->kind == SP_REC_FRAME ? sp_defs_nframes(w->defs) :
	      rec->kind == SP_REC_STACK ? sp_defs_nstacks(w->defs) : sp_defs_nspans(w->defs);
	return copy;
}

int sp_writer_put(struct sp_writer *w, const struct sp_record *rec)
{
	struct sp_record copy;
	const char *why = NULL;

	if (w->failed)
		return -1;
	if (rec->kind != SP_REC_HEADER && !w->started) {
		/* A stream opens with a header: give hand-made input a minimal one. */
		struct sp_record h = { .kind = SP_REC_HEADER };

		h.header.version = SP_SPOOL_VERSION;
		h.header.clock = SP_CLOCK_MONOTONIC;
		if (sp_writer_put(w, &h))
			return -1;
	}
	if (rec->kind == SP_REC_HEADER) {
		w->started = true;
		w->st.last_time = 0;
		if (w->format == SP_FORMAT_SPOOL && !w->tee)
			sp_buf_add(&w->out, SP_SPOOL_MAGIC, SP_SPOOL_MAGIC_LEN);
	}
	if (sp_defs_add(w->defs, rec, &why))
		return sp_error("'%s': cannot write a %s record that refers to %s", w->name,
				sp_rec_kind_name(rec->kind) ?: "unknown", why);
	if (w->tee)
		return w->tee(w->tee_ctx, rec) ? (w->failed = true, -1) : 0;
	if (w->format == SP_FORMAT_JSON)
		rec = with_id(w, rec, &copy);
	if (w->format == SP_FORMAT_SPOOL) {
		if (put_spool(w, rec))
			return -1;
	} else if (!(w->json_flags & SP_JSON_NO_DEFS) ||
		   (rec->kind != SP_REC_STRING && rec->kind != SP_REC_FRAME &&
		    rec->kind != SP_REC_STACK && rec->kind != SP_REC_SYMBOL)) {
		sp_json_render(&w->out, w->defs, rec, w->json_flags);
	}
	if (w->out.len >= FLUSH_AT)
		return sp_writer_flush(w);
	return 0;
}

uint64_t sp_writer_str(struct sp_writer *w, const char *s, size_t len)
{
	struct sp_record r = { .kind = SP_REC_STRING };
	uint64_t id = sp_defs_find_str(w->defs, s, len);

	if (id)
		return id;
	if (len > SP_SPOOL_MAX_RECORD / 2)
		len = SP_SPOOL_MAX_RECORD / 2;
	r.string.value.p = (const uint8_t *)s;
	r.string.value.len = (uint32_t)len;
	if (sp_writer_put(w, &r))
		return 0;
	return sp_defs_nstrings(w->defs);
}

uint64_t sp_writer_strz(struct sp_writer *w, const char *s)
{
	return s ? sp_writer_str(w, s, strlen(s)) : 0;
}

uint64_t sp_writer_frame(struct sp_writer *w, const struct sp_frame *f)
{
	struct sp_record r = { .kind = SP_REC_FRAME };
	uint64_t id;

	r.frame = *f;
	r.frame.id = 0;
	id = sp_defs_find_frame(w->defs, &r.frame);
	if (id)
		return id;
	if (sp_writer_put(w, &r))
		return 0;
	return sp_defs_nframes(w->defs);
}

uint64_t sp_writer_stack(struct sp_writer *w, uint64_t parent, uint64_t frame)
{
	struct sp_record r = { .kind = SP_REC_STACK };
	uint64_t id = sp_defs_find_stack(w->defs, parent, frame);

	if (id)
		return id;
	r.stack.parent = parent;
	r.stack.frame = frame;
	if (sp_writer_put(w, &r))
		return 0;
	return sp_defs_nstacks(w->defs);
}

uint64_t sp_writer_stack_path(struct sp_writer *w, const uint64_t *frames_root_first,
			      unsigned int n)
{
	uint64_t stack = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		stack = sp_writer_stack(w, stack, frames_root_first[i]);
		if (!stack)
			return 0;
	}
	return stack;
}

int sp_writer_close(struct sp_writer *w)
{
	int err;

	if (!w)
		return 0;
	err = sp_writer_flush(w);
	err = w->failed ? -1 : err;
	sp_defs_free(w->defs);
	sp_buf_release(&w->out);
	free(w->scratch);
	free(w->name);
	free(w);
	return err;
}
