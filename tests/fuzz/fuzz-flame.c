// SPDX-License-Identifier: MIT
/*
 * Fuzz sp-flame's aggregation and every renderer: the input is a record
 * stream (spool or JSON lines; seeds in tests/fuzz/corpus/fuzz-flame/) read
 * from a memfd and fed, with every prefix and the time order kept, to the
 * folded aggregation, the pprof and Chrome trace writers; then folded text,
 * SVG, a self-difference, speedscope and pprof are rendered to /dev/null.
 * The input is also read as folded text lines. Nothing may crash or hang.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "annotate.h"
#include "export.h"
#include "flame.h"
#include "reader.h"
#include "sp.h"

static FILE *null_out(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

static void render(struct sp_folded *f, bool time_order)
{
	struct sp_flame_paths p;
	struct sp_svg_opts so = { .footer = "x; hint: y" };
	struct sp_flame_change *c;
	size_t n;

	sp_folded_paths(f, time_order, &p);
	sp_folded_print(f, &p, null_out(), true);
	sp_flame_svg(f, &p, &so, null_out());
	so.diff = true;
	so.inverted = true;
	sp_flame_svg(f, &p, &so, null_out());
	c = sp_flame_changes(f, &p, &n);
	free(c);
	sp_flame_diff_print(f, &p, null_out(), false);
	sp_flame_paths_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_flame_opts o = {
		.by = SP_FLAME_BY_PROCESS | SP_FLAME_BY_THREAD | SP_FLAME_BY_SPAN,
		.keep_sequence = true, .keep_spans = true, .weight = SP_FLAME_W_TIME,
		.fold_runtime = size & 1,
	};
	struct sp_folded *f = sp_folded_new(&o);
	struct sp_pprof *pp = sp_pprof_new(false);
	struct sp_chrome *ch = sp_chrome_new(null_out());
	struct sp_annotate *an = sp_annotate_new("main");
	struct sp_record rec;
	struct sp_reader *r;
	char buf[512];
	const char *why, *p, *nl;
	int fd = memfd_create("in", MFD_CLOEXEC);

	sp_verbose = -1;
	sp_pprof_set_off_cpu(pp, size & 2);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0)
		abort();
	r = sp_reader_open_fd(fd, "in");
	while (r && sp_reader_next(r, &rec) > 0) {
		struct sp_defs *d = sp_reader_defs(r);
		int k = sp_folded_add(f, d, &rec, &why);

		if (k == SP_FOLDED_TAKEN || rec.kind != SP_REC_SAMPLE)
			sp_pprof_add(pp, d, &rec, 1000);
		if (k == SP_FOLDED_TAKEN)
			sp_annotate_add(an, d, &rec.sample);
		sp_chrome_add(ch, d, &rec);
	}
	if (r)
		sp_reader_close(r);
	close(fd);
	sp_chrome_finish(ch);
	render(f, false);
	render(f, true);
	sp_speedscope_write(f, "fuzz", null_out());
	sp_pprof_write(pp, null_out(), 1000, "fuzz");
	sp_folded_footer(f, buf, sizeof(buf));
	sp_pprof_free(pp);
	sp_annotate_print(an, null_out());
	sp_annotate_free(an);

	/* The same bytes as folded text, in both columns. */
	for (p = (const char *)data; p < (const char *)data + size; p = nl + 1) {
		nl = memchr(p, '\n', (const char *)data + size - p);
		if (!nl)
			nl = (const char *)data + size;
		sp_folded_set_column(f, (p - (const char *)data) & 1);
		sp_folded_add_line(f, p, nl - p);
	}
	render(f, false);
	sp_folded_free(f);
	return 0;
}
