// SPDX-License-Identifier: MIT
/*
 * A reader's records, correlated where sp-correlate has not seen them: what
 * sp-flame --by=span and sp-export read, so that `sp-record ... | sp-export`
 * gives the spans `sp-record ... | sp-correlate | sp-export` gives.
 */
#include "correlate.h"
#include "defs.h"
#include "reader.h"
#include "sp.h"

struct corr_read {
	struct sp_reader *in;
	struct sp_defs *cdefs;	/* the definitions of what the correlator emits */
	sp_corr_take_fn take;
	void *ctx;
};

/*
 * What the correlator emits: its own stream, whose definitions are kept
 * apart (a span tree held over a stream's end refers to that stream's
 * definitions, which the reader has already dropped for the next one).
 */
static int from_corr(void *ctx, const struct sp_record *rec)
{
	struct corr_read *r = ctx;
	const char *why = NULL;

	if (sp_defs_add(r->cdefs, rec, &why)) {
		sp_reader_skipped(r->in, rec, "%s record refers to %s", sp_rec_kind_name(rec->kind),
				  why);
		return 0;
	}
	return r->take(r->ctx, r->cdefs, rec);
}

static int corr_end(struct sp_corr **corr)
{
	int rc;

	if (!*corr)
		return 0;
	rc = sp_corr_finish(*corr);
	sp_corr_free(*corr);
	*corr = NULL;
	return rc;
}

int sp_corr_read(struct sp_reader *in, const struct sp_corr_opts *opts, sp_corr_take_fn take,
		 void *ctx, bool *correlated)
{
	struct corr_read r = { .in = in, .take = take, .ctx = ctx };
	struct sp_corr *corr = NULL;
	struct sp_record rec;
	bool direct = true;
	int rc = 0;

	while (rc == 0 && sp_reader_next(in, &rec) > 0) {
		/* each stream's header says whether sp-correlate has seen it */
		if (rec.kind == SP_REC_HEADER) {
			direct = rec.header.flags & SP_HDR_CORRELATED;
			if (direct) {
				rc = corr_end(&corr);
			} else {
				if (!corr)
					corr = sp_corr_new(opts, from_corr, &r);
				if (!r.cdefs)
					r.cdefs = sp_defs_new();
				if (correlated)
					*correlated = true;
			}
			if (rc)
				break;
		}
		if (direct)
			rc = take(ctx, sp_reader_defs(in), &rec);
		else
			rc = sp_corr_add(corr, &rec) ? -1 : 0;
	}
	if (corr_end(&corr) && !rc)
		rc = -1;
	sp_defs_free(r.cdefs);
	return rc;
}
