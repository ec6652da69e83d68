// SPDX-License-Identifier: MIT
/* Unit tests of the spool codec (lib/stream/spool.c): varints, framing, payloads. */
#include "records.h"
#include "spool.h"
#include "tap.h"

static void test_spool_varint_edges(void)
{
	static const struct {
		uint64_t v;
		unsigned int len;
	} cases[] = {
		{ 0, 1 }, { 1, 1 }, { 127, 1 }, { 128, 2 }, { 16383, 2 }, { 16384, 3 },
		{ (1ull << 32) - 1, 5 }, { 1ull << 35, 6 }, { (1ull << 56) - 1, 8 },
		{ 1ull << 56, 9 }, { (1ull << 63) - 1, 9 }, { 1ull << 63, 10 }, { UINT64_MAX, 10 },
	};
	uint8_t buf[16];
	unsigned int i, n;
	uint64_t v;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(buf, 0xee, sizeof(buf));
		n = sp_varint_put(buf, cases[i].v);
		CHECK_EQ_U(n, cases[i].len);
		CHECK_EQ_U(buf[n], 0xee);	/* nothing written past it */
		CHECK_EQ_U(sp_varint_get(buf, sizeof(buf), &v), n);
		CHECK_EQ_U(v, cases[i].v);
		/* Exactly enough bytes decode; one fewer is "cut short". */
		CHECK_EQ_U(sp_varint_get(buf, n, &v), n);
		CHECK_EQ_U(sp_varint_get(buf, n - 1, &v), 0);
	}
	/* UINT64_MAX: nine 0xff then 0x01, LEB128 by hand. */
	n = sp_varint_put(buf, UINT64_MAX);
	for (i = 0; i < 9; i++)
		CHECK_EQ_U(buf[i], 0xff);
	CHECK_EQ_U(buf[9], 0x01);
	/* 300 = 0b10_0101100 -> 0xac 0x02 */
	CHECK_EQ_U(sp_varint_put(buf, 300), 2);
	CHECK_EQ_U(buf[0], 0xac);
	CHECK_EQ_U(buf[1], 0x02);
}

static void test_spool_varint_corrupt(void)
{
	uint8_t b[12];
	uint64_t v = 42;

	CHECK_EQ_U(sp_varint_get(b, 0, &v), 0);	/* nothing yet */
	/* Ten bytes whose last carries more than bit 63. */
	memset(b, 0xff, 9);
	b[9] = 0x02;
	CHECK(sp_varint_get(b, 10, &v) < 0);
	b[9] = 0x7f;
	CHECK(sp_varint_get(b, 10, &v) < 0);
	/* Eleven bytes: the tenth still says "more". */
	memset(b, 0x80, 11);
	b[11] = 0;
	CHECK(sp_varint_get(b, 12, &v) < 0);
	b[9] = 0x81;
	CHECK(sp_varint_get(b, 12, &v) < 0);
	/* Nine continuation bytes are only "cut short", not corrupt. */
	CHECK_EQ_U(sp_varint_get(b, 9, &v), 0);
	/* A non-minimal but in-range encoding is read as its value. */
	b[0] = 0x81;
	b[1] = 0x80;
	b[2] = 0x00;
	CHECK_EQ_U(sp_varint_get(b, 3, &v), 3);
	CHECK_EQ_U(v, 1);
}

static void test_spool_frame(void)
{
	uint8_t b[32];
	uint64_t kind, len;
	size_t off;
	const char *why = NULL;
	unsigned int n;

	n = sp_varint_put(b, SP_REC_SAMPLE);
	n += sp_varint_put(b + n, 3);
	memcpy(b + n, "abc", 3);
	CHECK_EQ_U(sp_spool_frame(b, n + 3, &kind, &off, &len, &why), SP_FRAME_OK);
	CHECK_EQ_U(kind, SP_REC_SAMPLE);
	CHECK_EQ_U(off, 2);
	CHECK_EQ_U(len, 3);
	/* Every shorter prefix is SHORT, not CORRUPT. */
	for (n = 0; n < 5; n++)
		CHECK_EQ_U(sp_spool_frame(b, n, &kind, &off, &len, &why), SP_FRAME_SHORT);
	/* A length over the limit is corrupt even before its payload arrives. */
	n = sp_varint_put(b, SP_REC_STRING);
	n += sp_varint_put(b + n, SP_SPOOL_MAX_RECORD + 1);
	why = NULL;
	CHECK_EQ_U(sp_spool_frame(b, n, &kind, &off, &len, &why), SP_FRAME_CORRUPT);
	CHECK(why && strstr(why, "limit"));
	/* At the limit it only waits for the payload. */
	n = sp_varint_put(b, SP_REC_STRING);
	n += sp_varint_put(b + n, SP_SPOOL_MAX_RECORD);
	CHECK_EQ_U(sp_spool_frame(b, n, &kind, &off, &len, &why), SP_FRAME_SHORT);
	/* Corrupt varints in the kind and in the length. */
	memset(b, 0xff, 11);
	why = NULL;
	CHECK_EQ_U(sp_spool_frame(b, 11, &kind, &off, &len, &why), SP_FRAME_CORRUPT);
	CHECK(why != NULL);
	b[0] = SP_REC_SAMPLE;
	why = NULL;
	CHECK_EQ_U(sp_spool_frame(b, 11, &kind, &off, &len, &why), SP_FRAME_CORRUPT);
	CHECK(why && strstr(why, "length"));
	/* Kind 0 is never written: zeroed bytes are corrupt. */
	b[0] = 0;
	b[1] = 0;
	why = NULL;
	CHECK_EQ_U(sp_spool_frame(b, 2, &kind, &off, &len, &why), SP_FRAME_CORRUPT);
	CHECK(why != NULL);
	/* A kind a newer version may use is framed; one past any it could
	 * is corrupt, before its length is read */
	n = sp_varint_put(b, SP_SPOOL_MAX_KIND);
	n += sp_varint_put(b + n, 0);
	CHECK_EQ_U(sp_spool_frame(b, n, &kind, &off, &len, &why), SP_FRAME_OK);
	CHECK_EQ_U(kind, 65535);
	n = sp_varint_put(b, SP_SPOOL_MAX_KIND + 1);
	why = NULL;
	CHECK_EQ_U(sp_spool_frame(b, n, &kind, &off, &len, &why), SP_FRAME_CORRUPT);
	CHECK_STR(why, "corrupt record kind (over 65535, more than any version uses)");
	n = sp_varint_put(b, 3848290697215ull);
	CHECK_EQ_U(sp_spool_frame(b, n, &kind, &off, &len, &why), SP_FRAME_CORRUPT);
}

/* Encode rec, check it decodes to the same record and re-encodes to the same bytes. */
static size_t roundtrip(const struct sp_record *rec, uint8_t *buf, struct sp_spool_state *enc,
			struct sp_spool_state *dec, const char *what)
{
	struct sp_record back;
	struct sp_spool_state enc2 = *dec;
	uint8_t *again = malloc(sp_spool_bound(rec) + 1);
	const char *why = NULL;
	size_t n, n2;

	CHECK(sp_spool_bound(rec) < 4096);
	n = sp_spool_encode(enc, rec, buf);
	CHECK(n <= sp_spool_bound(rec));
	if (sp_spool_decode(dec, rec->kind == SP_REC_KIND_MAX ? rec->unknown.kind : rec->kind, buf,
			    n, &back, &why)) {
		printf("#   %s: decode failed: %s\n", what, why);
		tap_case_failed = 1;
		free(again);
		return n;
	}
	if (!rec_same(rec, &back, &why)) {
		printf("#   %s: field '%s' differs after the round trip\n", what, why);
		tap_case_failed = 1;
	}
	n2 = sp_spool_encode(&enc2, &back, again);
	if (n2 != n || memcmp(again, buf, n)) {
		printf("#   %s: re-encoding differs\n", what);
		tap_case_failed = 1;
	}
	CHECK_EQ_U(enc->last_time, dec->last_time);
	free(again);
	return n;
}

static void test_spool_every_kind_roundtrip(void)
{
	struct sp_spool_state enc = { 0 }, dec = { 0 };
	struct sp_record rec;
	uint8_t buf[4096];
	unsigned int k, ev, seed, kinds = 0;
	char what[64];

	for (seed = 0; seed < 3; seed++) {
		for (k = 1; k < SP_REC_KIND_MAX; k++) {
			if (!sp_schema(k))
				continue;
			rec_make(&rec, k, seed);
			snprintf(what, sizeof(what), "%s (seed %u)", sp_rec_kind_name(k), seed);
			roundtrip(&rec, buf, &enc, &dec, what);
			kinds += seed == 0;
		}
	}
	CHECK_EQ_U(kinds, SP_REC_KIND_MAX - 1);	/* every kind has a schema */
	for (ev = 1; ev < SP_EV_KIND_MAX; ev++) {
		rec_make(&rec, SP_REC_EVENT, 0);
		memset(&rec.event.field, 0, sizeof(rec.event.field));
		rec_fill_event(&rec, ev, ev);
		snprintf(what, sizeof(what), "event %s", sp_event_schema(ev)->name);
		roundtrip(&rec, buf, &enc, &dec, what);
	}
}

static void test_spool_time_zigzag(void)
{
	static const uint64_t times[] = { 1000, 999, 5000000000ull, 4999999999ull, 0, 1ull << 62,
					  UINT64_MAX, 1 };
	struct sp_spool_state enc = { 0 }, dec = { 0 };
	struct sp_record rec = { .kind = SP_REC_SAMPLE }, back;
	uint8_t buf[64];
	const char *why;
	unsigned int i;
	size_t n;

	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		rec.sample.time = times[i];
		rec.sample.pid = 7;
		n = sp_spool_encode(&enc, &rec, buf);
		CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_SAMPLE, buf, n, &back, &why), 0);
		CHECK_EQ_U(back.sample.time, times[i]);
		CHECK_EQ_U(back.sample.pid, 7);
	}
	/* One ns backwards is zigzag 1: a single byte. */
	enc.last_time = 1000;
	rec.sample.time = 999;
	rec.sample.pid = 0;
	n = sp_spool_encode(&enc, &rec, buf);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(buf[0], 1);
	/* One ns forwards is 2; the same time is 0 and trimmed away. */
	rec.sample.time = 1000;
	n = sp_spool_encode(&enc, &rec, buf);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(buf[0], 2);
	n = sp_spool_encode(&enc, &rec, buf);
	CHECK_EQ_U(n, 0);
	/* Times are coded against every time field of the stream, not per kind. */
	enc.last_time = dec.last_time = 0;
	rec.sample.time = 100;
	n = sp_spool_encode(&enc, &rec, buf);
	CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_SAMPLE, buf, n, &back, &why), 0);
	{
		struct sp_record pe = { .kind = SP_REC_PROCESS_END };

		pe.process_end.time = 90;
		pe.process_end.pid = 1;
		n = sp_spool_encode(&enc, &pe, buf);
		CHECK_EQ_U(buf[0], 19);	/* zigzag(-10) */
		CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_PROCESS_END, buf, n, &back, &why), 0);
		CHECK_EQ_U(back.process_end.time, 90);
	}
}

static void test_spool_trailing_zeros(void)
{
	struct sp_spool_state enc = { 0 }, dec = { 0 };
	struct sp_record rec = { .kind = SP_REC_SAMPLE }, back;
	uint8_t buf[64];
	const char *why;
	size_t n;

	/* time 5 (zigzag 10), pid 300 (2 bytes); the 8 fields after are 0. */
	rec.sample.time = 5;
	rec.sample.pid = 300;
	n = sp_spool_encode(&enc, &rec, buf);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(buf[0], 10);
	/* A zero in the middle stays: only the tail is cut. */
	enc.last_time = 0;
	rec.sample.weight = 1;
	n = sp_spool_encode(&enc, &rec, buf);
	CHECK_EQ_U(n, 3 + 3 + 1);	/* time, pid, tid 0, cpu 0, stack 0, weight */
	CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_SAMPLE, buf, n, &back, &why), 0);
	CHECK_EQ_U(back.sample.weight, 1);
	CHECK_EQ_U(back.sample.tid, 0);
	/* All zero: an empty payload. */
	memset(&rec, 0, sizeof(rec));
	rec.kind = SP_REC_LOST;
	enc.last_time = 0;
	CHECK_EQ_U(sp_spool_encode(&enc, &rec, buf), 0);
	/* Empty byte fields at the end are trimmed too. */
	memset(&rec, 0, sizeof(rec));
	rec.kind = SP_REC_MODULE;
	rec.module.pid = 3;
	enc.last_time = 0;
	CHECK_EQ_U(sp_spool_encode(&enc, &rec, buf), 2);
}

static void test_spool_missing_fields_zero(void)
{
	struct sp_spool_state dec = { 0 };
	struct sp_record back;
	const struct sp_schema *s;
	const char *why;
	uint8_t one[1] = { 4 };	/* time +2 */
	unsigned int k, i;

	for (k = 1; k < SP_REC_KIND_MAX; k++) {
		if (!(s = sp_schema(k)))
			continue;
		/* An empty payload: every field is 0. */
		dec.last_time = 77;
		CHECK_EQ_U(sp_spool_decode(&dec, k, one, 0, &back, &why), 0);
		CHECK_EQ_U(back.kind, k);
		for (i = 0; i < s->nfields; i++) {
			const struct sp_schema_field *f = &s->fields[i];

			if (rec_is_bytes(f->type))
				CHECK_EQ_U(sp_field_bytes(&back.header, f)->len, 0);
			else if (f->type == SP_FT_TIME)
				CHECK_EQ_U(*sp_field_u64(&back.header, f), 77);	/* delta 0 */
			else
				CHECK_EQ_U(*sp_field_u64(&back.header, f), 0);
		}
		CHECK_EQ_U(back.extra.len, 0);
	}
	/* One byte: only the first field. */
	dec.last_time = 10;
	CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_SAMPLE, one, 1, &back, &why), 0);
	CHECK_EQ_U(back.sample.time, 12);
	CHECK_EQ_U(back.sample.weight, 0);
	CHECK_EQ_U(dec.last_time, 12);
}

static void test_spool_unknown_kind_kept(void)
{
	struct sp_spool_state enc = { 0 }, dec = { 0 };
	struct sp_record back;
	const uint8_t payload[] = { 1, 2, 3, 0x80, 0xff };
	uint8_t buf[16];
	const char *why;
	size_t n;

	CHECK_EQ_U(sp_spool_decode(&dec, 200, payload, sizeof(payload), &back, &why), 0);
	CHECK_EQ_U(back.kind, SP_REC_KIND_MAX);
	CHECK_EQ_U(back.unknown.kind, 200);
	CHECK_EQ_U(back.unknown.raw.len, sizeof(payload));
	CHECK(back.unknown.raw.p == payload);
	CHECK_EQ_U(dec.last_time, 0);	/* its times, if any, are not known */
	n = sp_spool_encode(&enc, &back, buf);
	CHECK_EQ_U(n, sizeof(payload));
	CHECK(!memcmp(buf, payload, n));
	/* The first kind past the table is unknown too. */
	CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_KIND_MAX, payload, 0, &back, &why), 0);
	CHECK_EQ_U(back.kind, SP_REC_KIND_MAX);
	CHECK_EQ_U(back.unknown.kind, SP_REC_KIND_MAX);
}

static void test_spool_unknown_trailing_bytes_kept(void)
{
	struct sp_spool_state enc = { 0 }, dec = { 0 }, enc2 = { 0 };
	struct sp_record rec, back;
	uint8_t buf[4096], buf2[4096];
	const uint8_t newer[] = { 0x05, 0x81, 0x01, 0x00 };	/* a newer writer's fields */
	const char *why;
	size_t n, n2;

	rec_make(&rec, SP_REC_SAMPLE, 1);
	n = sp_spool_encode(&enc, &rec, buf);
	memcpy(buf + n, newer, sizeof(newer));
	CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_SAMPLE, buf, n + sizeof(newer), &back, &why), 0);
	rec.extra = back.extra;
	CHECK(rec_same(&rec, &back, &why));
	CHECK_EQ_U(back.extra.len, sizeof(newer));
	CHECK(back.extra.len && !memcmp(back.extra.p, newer, sizeof(newer)));
	n2 = sp_spool_encode(&enc2, &back, buf2);
	CHECK_EQ_U(n2, n + sizeof(newer));
	CHECK(!memcmp(buf, buf2, n2));

	/* An event of a kind this reader does not know keeps its values raw. */
	memset(&rec, 0, sizeof(rec));
	rec.kind = SP_REC_EVENT;
	rec.event.time = 9;
	rec.event.kind = 63;
	rec.event.raw.p = newer;
	rec.event.raw.len = sizeof(newer);
	enc.last_time = dec.last_time = enc2.last_time = 0;
	n = sp_spool_encode(&enc, &rec, buf);
	CHECK_EQ_U(sp_spool_decode(&dec, SP_REC_EVENT, buf, n, &back, &why), 0);
	CHECK_EQ_U(back.event.kind, 63);
	CHECK_EQ_U(back.event.raw.len, sizeof(newer));
	CHECK(back.event.raw.len && !memcmp(back.event.raw.p, newer, sizeof(newer)));
	n2 = sp_spool_encode(&enc2, &back, buf2);
	CHECK(n2 == n && !memcmp(buf, buf2, n));
}

static void test_spool_corrupt_payload(void)
{
	struct sp_spool_state dec = { 1234 };
	struct sp_record back;
	const char *why = NULL;
	/* A string whose length says 9 bytes where 2 are left. */
	const uint8_t str[] = { 9, 'a', 'b' };
	/* A sample whose second field is a varint that never ends. */
	uint8_t bad[12] = { 2 };

	memset(bad + 1, 0xff, 11);
	CHECK(sp_spool_decode(&dec, SP_REC_STRING, str, sizeof(str), &back, &why) < 0);
	CHECK(why && strstr(why, "longer"));
	why = NULL;
	CHECK(sp_spool_decode(&dec, SP_REC_SAMPLE, bad, sizeof(bad), &back, &why) < 0);
	CHECK(why && strstr(why, "varint"));
	/* A failed decode leaves the stream's time alone. */
	CHECK_EQ_U(dec.last_time, 1234);
	/* A varint cut by the end of its record is corrupt too. */
	bad[1] = 0x80;
	why = NULL;
	CHECK(sp_spool_decode(&dec, SP_REC_SAMPLE, bad, 2, &back, &why) < 0);
	CHECK_EQ_U(dec.last_time, 1234);
}

int main(void)
{
	TAP_RUN(test_spool_varint_edges);
	TAP_RUN(test_spool_varint_corrupt);
	TAP_RUN(test_spool_frame);
	TAP_RUN(test_spool_every_kind_roundtrip);
	TAP_RUN(test_spool_time_zigzag);
	TAP_RUN(test_spool_trailing_zeros);
	TAP_RUN(test_spool_missing_fields_zero);
	TAP_RUN(test_spool_unknown_kind_kept);
	TAP_RUN(test_spool_unknown_trailing_bytes_kept);
	TAP_RUN(test_spool_corrupt_payload);
	return TAP_DONE();
}
