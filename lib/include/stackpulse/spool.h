/* SPDX-License-Identifier: MIT */
/*
 * spool.h - the spool's byte layout (docs/spool.md): the magic that opens a
 * stream, record framing (kind, length, payload) and the payload codec.
 * The writer and readers use these; tools use writer.h and reader.h.
 */
#ifndef STACKPULSE_SPOOL_H
#define STACKPULSE_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

#define SP_SPOOL_VERSION 1
#define SP_SPOOL_MAGIC "\x93SPOOL1\n"
#define SP_SPOOL_MAGIC_LEN 8
/* Largest record payload a reader accepts: bounds memory on hostile input. */
#define SP_SPOOL_MAX_RECORD (16u << 20)
/*
 * Largest record kind a reader takes for a newer writer's (and passes on):
 * version 1 has 24 kinds and adds kinds one by one, so a kind past this is
 * corrupt bytes, not a kind any version could use (docs/spool.md).
 */
#define SP_SPOOL_MAX_KIND 65535u
/*
 * Unknown kinds a newer writer plausibly uses: the next this many past
 * ours (kinds are added one by one). One further out, in a stream whose
 * header is not a newer writer's (a newer version, or fields past ours),
 * is more likely a corrupt byte: still passed on, but said as such.
 */
#define SP_SPOOL_NEWER_KINDS 32u
/* Most bytes of framing before a payload (two 10-byte varints). */
#define SP_SPOOL_MAX_FRAMING 20

/* Stream state that payloads are coded against (delta-coded times). */
struct sp_spool_state {
	uint64_t last_time;
};

/* Decode one varint from p[0..n): bytes used, 0 if cut short, -1 if corrupt. */
int sp_varint_get(const uint8_t *p, size_t n, uint64_t *v);
/* Encode v at p (room for 10 bytes): bytes used. */
unsigned int sp_varint_put(uint8_t *p, uint64_t v);

enum sp_frame_result {
	SP_FRAME_OK = 0,
	SP_FRAME_SHORT = 1,	/* need more bytes */
	SP_FRAME_CORRUPT = -1,
};

/*
 * Parse the framing at p[0..n): *kind, *payload offset from p and *len.
 * SHORT when the frame or its payload is not wholly in the buffer, CORRUPT
 * (with *why) for a bad varint, a kind 0 or over SP_SPOOL_MAX_KIND, or a
 * record over SP_SPOOL_MAX_RECORD.
 */
enum sp_frame_result sp_spool_frame(const uint8_t *p, size_t n, uint64_t *kind,
				    size_t *payload_off, uint64_t *len, const char **why);

/*
 * Decode a payload of the given kind into rec (bytes point into payload).
 * st is updated only on success. Returns 0, or -1 with *why.
 */
int sp_spool_decode(struct sp_spool_state *st, uint64_t kind, const uint8_t *payload,
		    size_t len, struct sp_record *rec, const char **why);

/*
 * Encode rec's payload into buf (at least sp_spool_bound(rec) bytes); returns
 * its length. Updates st.
 */
size_t sp_spool_encode(struct sp_spool_state *st, const struct sp_record *rec, uint8_t *buf);
/* An upper bound of the encoded payload size of rec. */
size_t sp_spool_bound(const struct sp_record *rec);

#endif
