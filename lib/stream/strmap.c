// SPDX-License-Identifier: MIT
/* Input-to-output string id mapping for filters that add strings. */
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "schema.h"
#include "sp.h"
#include "strmap.h"

void sp_strmap_reset(struct sp_strmap *m)
{
	m->n = 0;
}

void sp_strmap_release(struct sp_strmap *m)
{
	free(m->out);
	memset(m, 0, sizeof(*m));
}

int sp_strmap_put_string(struct sp_strmap *m, struct sp_writer *w, const struct sp_record *rec)
{
	uint64_t id;

	id = sp_writer_str(w, (const char *)rec->string.value.p, rec->string.value.len);
	if (!id)
		return -1;
	if (m->n == 0)
		m->n = 1;	/* id 0 is "no string" */
	sp_grow(&m->out, &m->cap, m->n + 1, sizeof(*m->out));
	m->out[0] = 0;
	m->out[m->n++] = id;
	return 0;
}

static int map(const struct sp_strmap *m, uint64_t *id, const char **why)
{
	if (!*id)
		return 0;
	if (*id >= m->n) {
		*why = "an undefined string";
		return -1;
	}
	*id = m->out[*id];
	return 0;
}

int sp_strmap_apply(const struct sp_strmap *m, struct sp_record *rec, const char **why)
{
	const struct sp_schema *sc;
	unsigned int i;

	if (rec->kind == SP_REC_STRING || rec->kind >= SP_REC_KIND_MAX)
		return 0;
	sc = sp_schema(rec->kind);
	if (!sc)
		return 0;
	for (i = 0; i < sc->nfields; i++) {
		const struct sp_schema_field *f = &sc->fields[i];

		if (f->ref == SP_REF_STRING && map(m, sp_field_u64(&rec->header, f), why) < 0)
			return -1;
	}
	if (rec->kind == SP_REC_EVENT) {
		const struct sp_event_schema *es = sp_event_schema(rec->event.kind);

		for (i = 0; es && i < es->nfields && i < rec->event.nfields; i++)
			if (es->fields[i].type == SP_FT_STR &&
			    map(m, &rec->event.field[i].u, why) < 0)
				return -1;
	}
	return 0;
}
