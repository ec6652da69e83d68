// SPDX-License-Identifier: MIT
/*
 * perf.data's feature sections (perfdataP.h): in file mode an index after
 * the data section, one entry per bit set in the header; in pipe mode
 * HEADER_FEATURE records. Read here: host name, kernel release, perf
 * version, architecture, command line, event names (EVENT_DESC), the
 * build-id table, the clock and the first sample's time; they make the
 * stream's header record. Every other feature is skipped and counted.
 * Also: which event's samples the stream gets, and the stats text.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "perfdataP.h"
#include "sp.h"

/* perf's names of the feature bits, for --stats. */
static const char *const feat_names[] = {
	[1] = "tracing_data", [2] = "build_id", [3] = "hostname", [4] = "osrelease",
	[5] = "version", [6] = "arch", [7] = "nrcpus", [8] = "cpudesc", [9] = "cpuid",
	[10] = "total_mem", [11] = "cmdline", [12] = "event_desc", [13] = "cpu_topology",
	[14] = "numa_topology", [15] = "branch_stack", [16] = "pmu_mappings",
	[17] = "group_desc", [18] = "auxtrace", [19] = "stat", [20] = "cache",
	[21] = "sample_time", [22] = "mem_topology", [23] = "clockid", [24] = "dir_format",
	[25] = "bpf_prog_info", [26] = "bpf_btf", [27] = "compressed", [28] = "cpu_pmu_caps",
	[29] = "clock_data", [30] = "hybrid_topology", [31] = "pmu_caps",
};

/* A perf_header_string at *pos: { u32 len; char s[len]; }. NULL if it does not fit. */
static const char *take_string(const uint8_t *d, size_t n, size_t *pos, size_t *len)
{
	uint32_t l;

	if (n - *pos < 4)
		return NULL;
	l = pd_u32(d + *pos);
	if (l > n - *pos - 4)
		return NULL;
	*pos += 4;
	*len = strnlen((const char *)d + *pos, l);
	*pos += l;
	return (const char *)d + *pos - l;
}

static int one_string(struct pd *p, struct sp_buf *b, const uint8_t *d, size_t n, uint64_t off)
{
	size_t pos = 0, len;
	const char *s = take_string(d, n, &pos, &len);

	if (!s)
		return pd_fail(p, off, "feature string does not fit its section");
	sp_buf_reset(b);
	sp_buf_add(b, s, len);
	return 0;
}

static int cmdline(struct pd *p, const uint8_t *d, size_t n, uint64_t off)
{
	size_t pos = 4, len;
	uint32_t nr, i;
	const char *s;

	if (n < 4)
		return pd_fail(p, off, "command line section is too short");
	nr = pd_u32(d);
	sp_buf_reset(&p->cmdline);
	for (i = 0; i < nr; i++) {
		s = take_string(d, n, &pos, &len);
		if (!s)
			return pd_fail(p, off + pos, "command line argument %u does not fit", i);
		if (i)
			sp_buf_addch(&p->cmdline, ' ');
		sp_buf_add(&p->cmdline, s, len);
	}
	return 0;
}

/* EVENT_DESC: { u32 nr, attr_size; { attr; u32 nr_ids; string name; u64 ids[nr_ids]; } }. */
static int event_desc(struct pd *p, const uint8_t *d, size_t n, uint64_t off)
{
	uint32_t nr, asize, nids, i;
	size_t pos = 8, len;
	const char *name;
	uint64_t *v, k;

	if (n < 8)
		return pd_fail(p, off, "event description section is too short");
	nr = pd_u32(d);
	asize = pd_u32(d + 4);
	for (i = 0; i < nr; i++) {
		if (asize > n - pos || n - pos - asize < 4)
			return pd_fail(p, off + pos, "event description %u does not fit", i);
		pos += asize;
		nids = pd_u32(d + pos);
		pos += 4;
		name = take_string(d, n, &pos, &len);
		if (!name || nids > (n - pos) / 8)
			return pd_fail(p, off + pos, "event description %u does not fit", i);
		v = nids ? sp_u64map_get(&p->ids, pd_u64(d + pos)) : NULL;
		pos += (size_t)nids * 8;
		/* By its ids, or else by its place when every event is described. */
		k = v ? *v : p->nattrs == nr ? i : UINT64_MAX;
		if (k < p->nattrs) {
			len = len < sizeof(p->attrs[0].name) - 1 ? len : sizeof(p->attrs[0].name) - 1;
			memcpy(p->attrs[k].name, name, len);
			p->attrs[k].name[len] = 0;
		}
	}
	return 0;
}

static struct pd_file *file_get(struct pd *p, const char *path)
{
	uint64_t h = sp_hash_bytes(path, strlen(path)), *v;
	struct pd_file *f;

	v = sp_u64map_get(&p->files, h);
	if (v) {
		f = (struct pd_file *)(uintptr_t)*v;
		if (!strcmp(f->path, path))
			return f;
		return NULL;	/* a hash collision: this path goes without */
	}
	f = sp_xcalloc(1, sizeof(*f));
	f->path = sp_xstrdup(path);
	sp_u64map_put(&p->files, h, (uintptr_t)f);
	return f;
}

/* One build_id_event: { header; s32 pid; u8 build_id[24]; char filename[]; }. */
void pd_build_id_record(struct pd *p, const uint8_t *rec, size_t size)
{
	struct perf_event_header h;
	char path[4096];
	unsigned int len = 20;
	struct pd_file *f;
	size_t plen;

	memcpy(&h, rec, sizeof(h));
	if (size < 8 + 4 + 24 + 1)
		return;
	if (h.misc & (1u << 15)) {	/* PERF_RECORD_MISC_BUILD_ID_SIZE */
		len = rec[12 + 20];
		if (len > 20)
			len = 20;
	}
	plen = strnlen((const char *)rec + 36, size - 36);
	if (!plen || plen >= sizeof(path))
		return;
	memcpy(path, rec + 36, plen);
	path[plen] = 0;
	p->st->build_ids++;
	if (!strcmp(path, "[kernel.kallsyms]")) {
		memcpy(p->kbid, rec + 12, len);
		p->kbid_len = len;
		return;
	}
	f = file_get(p, path);
	if (f && !f->bid_len) {
		memcpy(f->bid, rec + 12, len);
		f->bid_len = len;
	}
}

struct pd_file *pd_file_of(struct pd *p, const char *path)
{
	return file_get(p, path);
}

static void build_ids(struct pd *p, const uint8_t *d, size_t n)
{
	size_t pos = 0;
	uint16_t sz;

	while (n - pos >= 8) {
		memcpy(&sz, d + pos + 6, 2);
		if (sz < 8 || sz > n - pos)
			break;
		pd_build_id_record(p, d + pos, sz);
		pos += sz;
	}
}

int pd_feature(struct pd *p, unsigned int feat, const uint8_t *d, size_t n, uint64_t off)
{
	int r = 0;

	switch (feat) {
	case PD_FEAT_HOSTNAME:
		r = one_string(p, &p->hostname, d, n, off);
		break;
	case PD_FEAT_OSRELEASE:
		r = one_string(p, &p->osrelease, d, n, off);
		break;
	case PD_FEAT_VERSION:
		r = one_string(p, &p->version, d, n, off);
		break;
	case PD_FEAT_ARCH:
		r = one_string(p, &p->arch, d, n, off);
		break;
	case PD_FEAT_CMDLINE:
		r = cmdline(p, d, n, off);
		break;
	case PD_FEAT_EVENT_DESC:
		r = event_desc(p, d, n, off);
		break;
	case PD_FEAT_BUILD_ID:
		build_ids(p, d, n);
		break;
	case PD_FEAT_CLOCKID:
		if (n >= 8)
			p->clockid = (int64_t)pd_u64(d);
		break;
	case PD_FEAT_CLOCK_DATA:
		if (n >= 24 && pd_u32(d) >= 1) {
			p->clockid = pd_u32(d + 4);
			p->clock_wall = pd_u64(d + 8);
			p->clock_time = pd_u64(d + 16);
		}
		break;
	case PD_FEAT_SAMPLE_TIME:
		if (n >= 8)
			p->first_time = pd_u64(d);
		break;
	default:
		p->st->unknown_features++;
		if (feat < SP_PERFDATA_NFEAT)
			p->st->feature_seen[feat] = 2;
		return 0;
	}
	p->st->features++;
	if (feat < SP_PERFDATA_NFEAT)
		p->st->feature_seen[feat] = 1;
	return r;
}

int pd_read_features(struct pd *p, uint64_t feat_off, uint64_t file_size, const uint64_t *bits)
{
	uint64_t sec[2], idx = feat_off;
	uint8_t *d;
	unsigned int b;
	int r;

	for (b = 0; b < PD_FEAT_BITS; b++) {
		if (!(bits[b / 64] >> (b % 64) & 1))
			continue;
		if (pd_pread(p, idx, sec, sizeof(sec)))
			return -1;
		idx += sizeof(sec);
		if (sec[1] > PD_MAX_FEATURE)
			return pd_fail(p, idx - 16, "feature %u is %" PRIu64 " bytes, more than %u",
				       b, sec[1], PD_MAX_FEATURE);
		if (sec[0] > file_size || sec[1] > file_size - sec[0])
			return pd_fail(p, idx - 16, "feature %u lies outside the file", b);
		d = sp_xmalloc(sec[1] + 1);
		r = pd_pread(p, sec[0], d, sec[1]);
		if (!r)
			r = pd_feature(p, b, d, sec[1], sec[0]);
		free(d);
		if (r)
			return -1;
	}
	return 0;
}

/* A name for an event that the file does not name. */
static void default_name(struct pd_attr *a)
{
	static const char *const sw[] = { "cpu-clock", "task-clock", "page-faults",
		"context-switches", "cpu-migrations", "minor-faults", "major-faults",
		"alignment-faults", "emulation-faults", "dummy", "bpf-output", "cgroup-switches" };
	static const char *const hw[] = { "cycles", "instructions", "cache-references",
		"cache-misses", "branches", "branch-misses", "bus-cycles",
		"stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles" };

	if (a->name[0])
		return;
	if (a->type == PERF_TYPE_SOFTWARE && a->config < sizeof(sw) / sizeof(*sw))
		snprintf(a->name, sizeof(a->name), "%s", sw[a->config]);
	else if (a->type == PERF_TYPE_HARDWARE && a->config < sizeof(hw) / sizeof(*hw))
		snprintf(a->name, sizeof(a->name), "%s", hw[a->config]);
	else
		snprintf(a->name, sizeof(a->name), "type%" PRIu64 ":0x%" PRIx64, a->type, a->config);
}

/* name names the event a: exactly, or but for perf's modifiers (":u", ":ppp"). */
static bool names(const char *name, const struct pd_attr *a)
{
	size_t n = strlen(name);

	if (!strcmp(a->name, name))
		return true;
	return !strncmp(a->name, name, n) && a->name[n] == ':' && a->name[n + 1] &&
	       strspn(a->name + n + 1, "ukhpPGHISDWe") == strlen(a->name + n + 1);
}

static bool is_dummy(const struct pd_attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_DUMMY;
}

/* Which events' samples the stream gets. 0, or -1 when the one asked for is not there. */
static int choose_events(struct pd *p)
{
	const char *want = p->o->event;
	struct pd_attr *cpu = NULL;
	struct sp_buf all = SP_BUF_INIT;
	unsigned int i;

	for (i = 0; i < p->nattrs; i++) {
		struct pd_attr *a = &p->attrs[i];

		default_name(a);
		a->role = PD_ROLE_OTHER;
		if (!strcmp(a->name, "offcpu-time"))
			a->role = PD_ROLE_OFFCPU;
		else if (!cpu && (want ? names(want, a) : !is_dummy(a)))
			cpu = a;
	}
	if (cpu) {
		cpu->role = PD_ROLE_CPU;
		snprintf(p->st->event, sizeof(p->st->event), "%s", cpu->name);
		return 0;
	}
	if (!want)
		return 0;	/* only off-CPU or dummy events */
	for (i = 0; i < p->nattrs; i++)
		sp_buf_printf(&all, "%s'%s'", i ? ", " : "", p->attrs[i].name);
	sp_error("%s: no event '%s' in it (its events: %s)", p->name, want, sp_buf_str(&all));
	sp_buf_release(&all);
	return -1;
}

static struct sp_bytes bytes(const struct sp_buf *b)
{
	return (struct sp_bytes){ (const uint8_t *)b->p, (uint32_t)b->len };
}

int pd_write_header(struct pd *p)
{
	struct sp_record r = { .kind = SP_REC_HEADER };
	struct sp_header *h = &r.header;
	const struct pd_attr *a = NULL;
	struct sp_buf prod = SP_BUF_INIT, feat = SP_BUF_INIT;
	unsigned int i;
	int err;

	p->header_done = true;
	if (choose_events(p))
		return -1;
	for (i = 0; i < p->nattrs; i++) {
		if (p->attrs[i].role == PD_ROLE_CPU)
			a = &p->attrs[i];
		if (p->attrs[i].role != PD_ROLE_OTHER && !p->o->no_unwind && !p->unw &&
		    (p->attrs[i].sample_type & PERF_SAMPLE_STACK_USER)) {
			p->unw = sp_unwinder_new();
			sp_unwinder_set_proc_fallback(p->unw, false);
		}
	}
	h->version = 1;
	if (p->clock_wall) {
		h->start_wall_ns = p->clock_wall;
		h->start_mono_ns = p->clock_time;
	} else {
		h->start_mono_ns = p->first_time;
	}
	h->clock = p->clockid == 1 ? SP_CLOCK_MONOTONIC : 0;
	if (a) {
		if (a->flags & PD_ATTR_FREQ)
			h->sample_freq = a->sample_period;
		else
			h->sample_period = a->sample_period;
		if (a->sample_type & PERF_SAMPLE_STACK_USER)
			h->call_graph = SP_CG_DWARF;
		else if (a->sample_type & PERF_SAMPLE_CALLCHAIN)
			h->call_graph = SP_CG_FP;
		if ((a->sample_type & PERF_SAMPLE_CALLCHAIN) &&
		    !(a->flags & PD_ATTR_EXCLUDE_CALLCHAIN_KERNEL))
			h->flags |= SP_HDR_KERNEL_STACKS;
		if (h->call_graph)
			h->flags |= SP_HDR_USER_STACKS;
		h->event = (struct sp_bytes){ (const uint8_t *)a->name, (uint32_t)strlen(a->name) };
	}
	h->hostname = bytes(&p->hostname);
	h->kernel = bytes(&p->osrelease);
	h->machine = bytes(&p->arch);
	h->command = bytes(&p->cmdline);
	sp_buf_printf(&prod, "perf %s (perf.data imported by sp-decode --from=perf)",
		      p->version.len ? p->version.p : "?");
	h->producer = bytes(&prod);
	sp_buf_printf(&feat, "perf.data=%s events=", p->pipe ? "pipe" : "file");
	for (i = 0; i < p->nattrs; i++)
		sp_buf_printf(&feat, "%s%s", i ? "," : "", p->attrs[i].name);
	h->features = bytes(&feat);
	err = sp_writer_put(p->w, &r);
	sp_buf_release(&prod);
	sp_buf_release(&feat);
	return err;
}

void sp_perfdata_stats_print(const struct sp_perfdata_stats *st, FILE *out)
{
	unsigned int i, n = 0;

	fprintf(out, "perf.data (%s mode): %" PRIu64 " records, %" PRIu64 " bytes, %u events\n",
		st->pipe ? "pipe" : "file", st->records, st->bytes, st->nevents);
	fprintf(out, "  samples imported: %" PRIu64 " of event '%s'", st->samples - st->offcpu_samples,
		st->event[0] ? st->event : "(none)");
	if (st->offcpu_samples)
		fprintf(out, ", %" PRIu64 " off-CPU", st->offcpu_samples);
	fprintf(out, "\n  samples of other events left out: %" PRIu64 "\n", st->other_event_samples);
	if (st->bad_samples)
		fprintf(out, "  samples that did not parse: %" PRIu64 "\n", st->bad_samples);
	if (st->unwound)
		fprintf(out, "  DWARF stacks unwound: %" PRIu64 " (%" PRIu64 " stopped early)\n",
			st->unwound, st->unwind_failed);
	fprintf(out, "  processes %" PRIu64 ", threads %" PRIu64 ", modules %" PRIu64
		", build-ids %" PRIu64 ", lost samples %" PRIu64 "\n",
		st->processes, st->threads, st->modules, st->build_ids, st->lost);
	if (st->ksyms || st->kernel_unnamed)
		fprintf(out, "  kernel symbols from this machine: %" PRIu64
			", kernel frames left unnamed: %" PRIu64 "%s%s\n", st->ksyms,
			st->kernel_unnamed, st->kernel_unnamed_why[0] ? ": " : "",
			st->kernel_unnamed_why);
	fprintf(out, "  records skipped (type not read): %" PRIu64, st->unknown_records);
	fprintf(out, "\n  features read: %" PRIu64 ", skipped: %" PRIu64, st->features,
		st->unknown_features);
	for (i = 0; i < SP_PERFDATA_NFEAT; i++) {
		if (st->feature_seen[i] != 2)
			continue;
		fprintf(out, "%s", n++ ? ", " : " (");
		if (i < sizeof(feat_names) / sizeof(*feat_names) && feat_names[i])
			fprintf(out, "%s", feat_names[i]);
		else
			fprintf(out, "feature %u", i);
	}
	fprintf(out, "%s\n", n ? ")" : "");
	fprintf(out, "  records by type:");
	for (i = 0; i < SP_PERFDATA_NTYPES; i++)
		if (st->type[i])
			fprintf(out, " %u:%" PRIu64, i, st->type[i]);
	fprintf(out, "\n");
}
