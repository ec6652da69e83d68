/* SPDX-License-Identifier: MIT */
/*
 * merge.h - the time-ordered merge of sp-record: records from every source
 * are held here until every source has moved past their time, then handed
 * to put() (the writer) in time order (sp_record_time(), record.h);
 * records of equal time keep the order in which they were added.
 */
#ifndef STACKPULSE_MERGE_H
#define STACKPULSE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

typedef int (*sp_merge_put_fn)(void *ctx, const struct sp_record *rec);

struct sp_merge;

/* NULL (reported) on no memory. */
struct sp_merge *sp_merge_new(sp_merge_put_fn put, void *ctx);
void sp_merge_free(struct sp_merge *m);

/* Copy rec (and the bytes its sp_bytes point to) in. 0, or -1 (reported)
 * on no memory. Has the signature of sp_emit_fn (source.h). */
int sp_merge_add(void *merge, const struct sp_record *rec);

/* Hand every held record with time <= upto to put(), oldest first
 * (UINT64_MAX: all of them). Returns how many, or -1 when put() failed (the
 * record that failed is dropped, the rest stay held). */
long sp_merge_flush(struct sp_merge *m, uint64_t upto);

/* Records held. */
size_t sp_merge_pending(const struct sp_merge *m);
/* fn on every record held, in no order, which may change its ids in place
 * (the recorder's id space is compacted: segments.h). 0, or fn's -1. */
int sp_merge_each(struct sp_merge *m, int (*fn)(void *ctx, struct sp_record *rec), void *ctx);
/* Time of the oldest held record, UINT64_MAX when empty. */
uint64_t sp_merge_oldest(const struct sp_merge *m);

#endif
