// SPDX-License-Identifier: MIT
/*
 * Fuzz the correlator and the tree: the input is a record stream (spool or
 * JSON lines; seeds in tests/fuzz/corpus/fuzz-correlate/) fed to sp_corr
 * with tiny limits (a short window, few held records, small gap spans) so
 * that reordering, early flushes and gap changes all happen. Its output must
 * keep the stream's rules (span ids dense from 1, every span reference
 * backwards) and is fed to trees printed as text and JSON to /dev/null.
 * The input itself goes to a tree too, as sp-tree takes a stream
 * sp-correlate has seen (a forged one: spans of one process holding
 * another's records, forks in cycles), streamed with --pid, and to a
 * --summary. Nothing may crash, hang or break a rule.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "correlate.h"
#include "reader.h"
#include "sp.h"
#include "tree.h"

struct sink {
	struct sp_tree *text, *json;
	uint64_t next;		/* next span id of the stream */
};

static int take(void *ctx, const struct sp_record *rec)
{
	struct sink *s = ctx;

	switch (rec->kind) {
	case SP_REC_HEADER:
		s->next = 1;
		break;
	case SP_REC_SPAN:
		if (rec->span.id && rec->span.id != s->next)
			abort();
		if (rec->span.parent >= s->next || rec->span.fork_span >= s->next)
			abort();
		s->next++;
		break;
	case SP_REC_SAMPLE:
		if (!rec->sample.span || rec->sample.span >= s->next)
			abort();
		break;
	case SP_REC_EVENT:
		if (!rec->event.span || rec->event.span >= s->next)
			abort();
		break;
	default:
		break;
	}
	sp_tree_add(s->text, rec);
	sp_tree_add(s->json, rec);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const spans[] = { "*a*" };
	struct sp_corr_opts co = { .window_ns = 500, .max_held = 16, .gap_max = 2,
				   .max_window = 8 };
	struct sp_tree_opts to = { .stable = true, .max_depth = 6, .spans = spans, .nspans = 1 };
	struct sp_tree_opts jo = { .json = true, .min_dur_ns = 10 };
	static const uint64_t pids[] = { 100, 200 };
	struct sp_tree_opts ro = { .pids = pids, .npids = 2, .buffer_nodes = 3 };
	struct sp_tree_opts so = { .summary = true };
	struct sp_tree *raw, *sum;
	struct sink s = { .next = 1 };
	struct sp_record rec;
	struct sp_reader *r;
	struct sp_corr *c;
	FILE *null = fopen("/dev/null", "w");
	int fd = memfd_create("in", MFD_CLOEXEC);

	sp_verbose = -1;
	if (!null || fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET))
		abort();
	s.text = sp_tree_new(&to);
	s.json = sp_tree_new(&jo);
	raw = sp_tree_new(&ro);
	sp_tree_set_output(raw, null);
	sum = sp_tree_new(&so);
	c = sp_corr_new(&co, take, &s);
	r = sp_reader_open_fd(fd, "in");
	while (r && sp_reader_next(r, &rec) > 0) {
		sp_tree_add(raw, &rec);
		sp_tree_add(sum, &rec);
		sp_corr_add(c, &rec);
	}
	if (r)
		sp_reader_close(r);
	sp_corr_finish(c);
	sp_corr_free(c);
	sp_tree_print(s.text, null);
	sp_tree_print(s.json, null);
	sp_tree_print(raw, null);
	sp_tree_print(sum, null);
	sp_tree_free(s.text);
	sp_tree_free(s.json);
	sp_tree_free(raw);
	sp_tree_free(sum);
	close(fd);
	fclose(null);
	return 0;
}
