/* SPDX-License-Identifier: MIT */
/*
 * schema.h - the table that drives both encodings: for each record kind, its
 * JSON name and its fields in spool order, with type and place in the
 * in-memory struct. lib/stream/spool.c and lib/json*.c read it; nothing else needs to.
 */
#ifndef STACKPULSE_SCHEMA_H
#define STACKPULSE_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "events.h"
#include "record.h"

/* Which definition table a field refers to, for reference checks. */
enum sp_ref {
	SP_REF_NONE = 0,
	SP_REF_STRING,
	SP_REF_MODULE,
	SP_REF_FRAME,
	SP_REF_STACK,
};

#define SP_SF_ALWAYS	(1u << 0)	/* JSON shows it even when 0 */

struct sp_schema_field {
	const char *name;
	enum sp_field_type type;
	uint16_t off;		/* offsetof in the record's union member */
	uint8_t ref;		/* enum sp_ref */
	uint8_t flags;		/* SP_SF_* */
	const char *const *names;	/* enum value names for JSON, or NULL */
	unsigned int nnames;
};

struct sp_schema {
	const char *name;	/* JSON "type" */
	unsigned int nfields;
	const struct sp_schema_field *fields;
};

/* Schema of a known kind, or NULL. */
const struct sp_schema *sp_schema(unsigned int kind);

/* Fields an event has before its kind-specific values. */
#define SP_EVENT_COMMON_FIELDS 6

static inline uint64_t *sp_field_u64(void *rec_body, const struct sp_schema_field *f)
{
	return (uint64_t *)((char *)rec_body + f->off);
}

static inline struct sp_bytes *sp_field_bytes(void *rec_body, const struct sp_schema_field *f)
{
	return (struct sp_bytes *)((char *)rec_body + f->off);
}

/* Enum value name for JSON, or NULL when out of range. */
const char *sp_schema_enum_name(const struct sp_schema_field *f, uint64_t v);
/* Enum value of a name, or -1. */
int64_t sp_schema_enum_value(const struct sp_schema_field *f, const char *name);

#endif
