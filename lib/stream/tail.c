// SPDX-License-Identifier: MIT
/* Incremental reading of a growing spool in bounded batches (tail.h). */
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "reader.h"
#include "sp.h"
#include "tail.h"

struct active_module {
	uint64_t pid, id;
};

struct sp_tail {
	struct sp_reader *r;
	char *path;
	bool ended;
	struct sp_sample *samples;
	size_t nsamples, samples_cap;
	uint64_t *pids, *retired_pids, *retired_modules;
	size_t npids, pids_cap, nretired_pids, rp_cap, nretired_modules, rm_cap;
	struct sp_u64map seen;			/* pids of this poll */
	struct active_module *active;		/* live modules of processes */
	size_t nactive, active_cap;
};

struct sp_tail *sp_tail_open(const char *path, bool discard)
{
	char *paths[1] = { (char *)path };
	struct sp_tail *t;
	struct sp_reader *r = sp_reader_open(paths, 1);

	if (!r)
		return NULL;
	sp_reader_follow(r, false, false);
	if (discard)
		sp_reader_follow(r, true, true);
	t = sp_xcalloc(1, sizeof(*t));
	t->r = r;
	t->path = sp_xstrdup(path);
	return t;
}

struct sp_defs *sp_tail_defs(struct sp_tail *t)
{
	return sp_reader_defs(t->r);
}

const struct sp_header *sp_tail_header(struct sp_tail *t)
{
	return sp_defs_header(sp_reader_defs(t->r));
}

static void observe(struct sp_tail *t, uint64_t pid)
{
	if (!pid || sp_u64map_get(&t->seen, pid))
		return;
	sp_u64map_put(&t->seen, pid, 1);
	sp_grow(&t->pids, &t->pids_cap, t->npids + 1, sizeof(*t->pids));
	t->pids[t->npids++] = pid;
}

static void retire_module(struct sp_tail *t, uint64_t id)
{
	sp_grow(&t->retired_modules, &t->rm_cap, t->nretired_modules + 1,
		sizeof(*t->retired_modules));
	t->retired_modules[t->nretired_modules++] = id;
}

static void retire_process(struct sp_tail *t, uint64_t pid)
{
	size_t i, k = 0;

	for (i = 0; i < t->nactive; i++) {
		if (t->active[i].pid == pid)
			retire_module(t, t->active[i].id);
		else
			t->active[k++] = t->active[i];
	}
	t->nactive = k;
	sp_grow(&t->retired_pids, &t->rp_cap, t->nretired_pids + 1, sizeof(*t->retired_pids));
	t->retired_pids[t->nretired_pids++] = pid;
}

static void forget_module(struct sp_tail *t, uint64_t id)
{
	size_t i;

	for (i = 0; i < t->nactive; i++) {
		if (t->active[i].id == id) {
			t->active[i] = t->active[--t->nactive];
			break;
		}
	}
	retire_module(t, id);
}

int sp_tail_poll(struct sp_tail *t, struct sp_tail_batch *b)
{
	struct sp_defs *d = sp_reader_defs(t->r);
	uint64_t mod0 = sp_defs_nmodules(d), frame0 = sp_defs_nframes(d);
	struct sp_record rec;
	bool at_end = false, ends_batch = false;
	int got;

	t->nsamples = t->npids = t->nretired_pids = t->nretired_modules = 0;
	sp_u64map_release(&t->seen);
	memset(b, 0, sizeof(*b));
	while (!t->ended && !ends_batch && t->nsamples < SP_TAIL_MAX_BATCH) {
		got = sp_reader_poll(t->r, &rec, &at_end);
		if (got < 0)
			return -1;
		if (got == 0) {
			t->ended = at_end;
			break;
		}
		switch (rec.kind) {
		case SP_REC_HEADER:
			/* A new stream: ids start again. */
			mod0 = frame0 = 0;
			t->nactive = 0;
			break;
		case SP_REC_SAMPLE:
			sp_grow(&t->samples, &t->samples_cap, t->nsamples + 1, sizeof(*t->samples));
			t->samples[t->nsamples++] = rec.sample;
			observe(t, rec.sample.pid);
			break;
		case SP_REC_MODULE:
			if (rec.module.pid) {
				sp_grow(&t->active, &t->active_cap, t->nactive + 1, sizeof(*t->active));
				t->active[t->nactive].pid = rec.module.pid;
				t->active[t->nactive++].id = sp_defs_nmodules(d);
				observe(t, rec.module.pid);
			}
			break;
		case SP_REC_PROCESS_END:
			observe(t, rec.process_end.pid);
			retire_process(t, rec.process_end.pid);
			ends_batch = true;
			break;
		case SP_REC_MODULE_END:
			forget_module(t, rec.module_end.module);
			ends_batch = true;
			break;
		case SP_REC_END:
			t->ended = true;
			break;
		default:
			break;
		}
	}
	b->samples = t->samples;
	b->nsamples = t->nsamples;
	b->first_module = mod0 + 1;
	b->nmodules = sp_defs_nmodules(d) - mod0;
	b->first_frame = frame0 + 1;
	b->nframes = sp_defs_nframes(d) - frame0;
	b->pids = t->pids;
	b->npids = t->npids;
	b->retired_pids = t->retired_pids;
	b->nretired_pids = t->nretired_pids;
	b->retired_modules = t->retired_modules;
	b->nretired_modules = t->nretired_modules;
	b->ended = t->ended;
	b->has_more = !t->ended && sp_reader_more_available(t->r);
	return 0;
}

int sp_tail_close(struct sp_tail *t)
{
	int status;

	if (!t)
		return SP_EXIT_OK;
	status = sp_reader_close(t->r);
	sp_u64map_release(&t->seen);
	free(t->samples);
	free(t->pids);
	free(t->retired_pids);
	free(t->retired_modules);
	free(t->active);
	free(t->path);
	free(t);
	return status == SP_EXIT_FATAL ? SP_EXIT_FATAL : SP_EXIT_OK;
}
