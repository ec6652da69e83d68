// SPDX-License-Identifier: MIT
/*
 * The "events" source of sp-record (bpf_events.h): kernel events of the
 * recorded process tree from bpf/events.bpf.c. This file is the source
 * itself, as sp-record drives it (source.h), its per-CPU loss counters
 * turned into SP_REC_LOST records, and sp-record --check's table;
 * bpf_eventsP.h maps the files that load, attach and decode.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_eventsP.h"
#include "interpP.h"
#include "sp.h"
#include "events.skel.h"

static int ev_start(struct sp_source *s, const struct sp_target *t, struct sp_emit *out)
{
	struct ev_priv *p = s->priv;
	int r;

	r = sp_events_prepare(s);
	if (r < 0)
		return -1;
	if (p->state != ST_READY)
		return 0;
	p->started = true;
	sp_ev_sync_cgroups(p);	/* the cgroups made while the programs loaded */
	/* The interpreted stacks' entry program before the seeding (the perf
	 * source's interpreters, started before): attaching it takes tens of
	 * ms, and a -p process's events, recorded from the seeding on, came
	 * without their stacks meanwhile. (After the cgroups: those made
	 * while the programs loaded are taken at the start, with the others.) */
	if (sp_interp_current())
		sp_interp_events_on(sp_interp_current(), p->o.raw_entry);
	sp_ev_seed_pids(p, t);
	return 0;
}

/* Per-CPU loss counters that moved since last time become lost records. */
static int read_lost(struct ev_priv *p, struct sp_emit *out)
{
	struct sp_bpf_lost *l;
	uint32_t zero = 0;
	uint64_t now = sp_now_mono_ns();
	int cpu, n = 0;

	l = calloc(p->ncpu, sizeof(*l));
	if (!l)
		return 0;
	if (bpf_map__lookup_elem(p->skel->maps.lost, &zero, sizeof(zero), l,
				 sizeof(*l) * p->ncpu, 0)) {
		free(l);
		return 0;
	}
	for (cpu = 0; cpu < p->ncpu; cpu++) {
		struct sp_record rec = { .kind = SP_REC_LOST };
		uint64_t delta = l[cpu].count - p->lost_seen[cpu];

		if (!delta)
			continue;
		rec.lost.time = l[cpu].last_ns;
		rec.lost.start = p->lost_seen[cpu] ? p->lost_read_ns : l[cpu].first_ns;
		if (rec.lost.start > rec.lost.time)
			rec.lost.start = rec.lost.time;
		rec.lost.what = SP_LOST_EVENTS;
		rec.lost.count = delta;
		rec.lost.cpu = cpu + 1;
		p->lost_seen[cpu] = l[cpu].count;
		p->lost += delta;
		if (out->emit(out->ctx, &rec))
			p->err = -1;
		n++;
	}
	p->lost_read_ns = now;
	free(l);
	return n;
}

/* The cgroups -a --container/--cgroup found, or removed, since
 * (perf_cgroups.c): the map holds what each slot holds now. */
void sp_ev_sync_cgroups(struct ev_priv *p)
{
	const struct sp_cgroup_filter *f = p->o.cgroups;
	uint8_t one = 1;
	unsigned int i;

	for (i = 0; f && i < f->n && i < SP_BPF_CGROUPS; i++) {
		if (p->cg_ids[i] == f->id[i])
			continue;
		if (p->cg_ids[i])
			bpf_map__delete_elem(p->skel->maps.cgroups, &p->cg_ids[i],
					     sizeof(uint64_t), 0);
		p->cg_ids[i] = 0;
		if (!f->id[i])
			continue;
		if (bpf_map__update_elem(p->skel->maps.cgroups, &f->id[i], sizeof(uint64_t),
					 &one, sizeof(one), BPF_ANY))
			sp_warn("kernel events: cgroup '%s' cannot be added to the filter: %s",
				f->path[i], strerror(errno));
		else
			p->cg_ids[i] = f->id[i];
	}
}

static int ev_poll(struct sp_source *s, struct sp_emit *out)
{
	struct ev_priv *p = s->priv;
	uint64_t before = p->delivered;
	int r;

	if (p->state != ST_READY || !p->started)
		return 0;
	p->out = out;
	sp_ev_sync_cgroups(p);
	p->drain_ns = sp_now_mono_ns();
	r = ring_buffer__consume(p->rb);
	p->out = NULL;
	if (r < 0 && r != -EINTR)
		return sp_error("kernel events: ring_buffer__consume: %s", strerror(-r));
	r = read_lost(p, out);
	if (p->err)
		return -1;
	return (int)(p->delivered - before) + r;
}

static uint64_t ev_watermark(struct sp_source *s)
{
	struct ev_priv *p = s->priv;
	const uint64_t slack = 1000000;	/* stamped but not yet committed */

	if (p->state != ST_READY || !p->started)
		return UINT64_MAX;
	return p->drain_ns > slack ? p->drain_ns - slack : 0;
}

static int ev_finish(struct sp_source *s, struct sp_emit *out)
{
	struct ev_priv *p = s->priv;

	if (p->state != ST_READY || !p->started)
		return 0;
	if (ev_poll(s, out) < 0)
		return -1;
	if (p->lost)
		sp_warn("%llu kernel events lost (%llu recorded): the ring buffer was full; "
			"a larger --event-buffer may help", (unsigned long long)p->lost,
			(unsigned long long)p->delivered);
	return 0;
}

/* Add words to the string in buf (size bytes, cut at its end), after a
 * blank when it has some already; b is released. */
static void put_words(char *buf, size_t size, struct sp_buf *b)
{
	size_t len = strlen(buf);

	if (b->len)
		snprintf(buf + len, size - len, "%s%s", len ? " " : "", b->p);
	sp_buf_release(b);
}

static void ev_describe(struct sp_source *s, char *features, size_t fsize, char *unavailable,
			size_t usize)
{
	struct ev_priv *p = s->priv;
	uint64_t want = p->o.kinds & sp_event_group_kinds(KERNEL_GROUPS);
	struct sp_buf f = SP_BUF_INIT, u = SP_BUF_INIT;
	char names[512];

	if (!want)
		return;
	if (p->state == ST_READY) {
		sp_buf_printf(&f, "bpf-events=%s", p->how);
		if (p->mounted_tracefs)
			sp_buf_puts(&f, " tracefs=mounted");
		if (p->entry)
			sp_buf_printf(&f, " entry=%s", p->entry);
		if (p->exit_how)
			sp_buf_printf(&f, " exit=%s", p->exit_how);
		sp_events_format(p->active, names, sizeof(names));
		sp_buf_printf(&f, " events=%s", names);
	} else {
		sp_buf_puts(&u, "bpf-events");
	}
	if (p->probes.len)
		sp_buf_printf(&u, "%s%s", u.len ? " " : "", p->probes.p);
	if (p->tried.len && p->state == ST_READY)
		sp_buf_printf(&u, "%s%s", u.len ? " " : "", p->tried.p + 1);
	if (want & ~p->active) {
		sp_events_format(want & ~p->active, names, sizeof(names));
		sp_buf_printf(&u, "%sevents=%s", u.len ? " " : "", names);
	}
	put_words(features, fsize, &f);
	put_words(unavailable, usize, &u);
}

static void ev_free(struct sp_source *s)
{
	struct ev_priv *p;

	if (!s)
		return;
	p = s->priv;
	if (p) {
		sp_ev_unload(p);
		free(p->lost_seen);
		free(p->text);
		sp_buf_release(&p->tried);
		sp_buf_release(&p->probes);
		free(p);
	}
	free(s);
}

void sp_events_counts(struct sp_source *s, uint64_t *events, uint64_t *lost)
{
	struct ev_priv *p = s->priv;

	*events = p->delivered;
	*lost = p->lost;
}

void sp_events_print_check(struct sp_source *s, FILE *f)
{
	struct ev_priv *p = s->priv;
	uint64_t saved = p->o.kinds;
	unsigned int k;

	if (p->state == ST_NEW) {
		p->o.kinds = sp_event_group_kinds(KERNEL_GROUPS);
		p->o.given = false;
		sp_events_prepare(s);
		p->o.kinds = saved;
	}
	fprintf(f, "kernel events: %s%s%s%s\n", p->state == ST_READY ? "attached with " : "off: ",
		p->state == ST_READY ? p->how : p->why,
		p->state == ST_READY && p->entry ? ", system call entry from " : "",
		p->state == ST_READY && p->entry ? p->entry : "");
	for (k = 1; k < SP_EV_KIND_MAX; k++) {
		const struct sp_event_schema *sc = sp_event_schema(k);

		if (!sc || !(sc->group & KERNEL_GROUPS))
			continue;
		fprintf(f, "  %-17s %s\n", sc->name,
			p->avail & SP_EV_BIT(k) ? "available" :
			k == SP_EV_KERNEL_READ_FILE ? "unavailable: no hook without kprobes or BPF LSM" :
			k == SP_EV_CAPABLE_CHECK && p->state == ST_READY ?
			"unavailable: no cap_capable tracepoint" : "unavailable");
	}
}

/* The writer's ids renumbered (source.h): the strings of the last record
 * are interned again when next used. */
static void ev_remap(struct sp_source *s, const struct sp_remap *m)
{
	struct ev_priv *p = s->priv;

	(void)m;
	memset(p->last_str, 0, sizeof(p->last_str));
}

struct sp_source *sp_events_source_new(const struct sp_events_opts *o)
{
	struct sp_source *s = sp_xcalloc(1, sizeof(*s));
	struct ev_priv *p = sp_xcalloc(1, sizeof(*p));

	sp_ev_sys_kind_index();
	p->o = *o;
	s->name = "events";
	s->fd = -1;
	s->priv = p;
	s->start = ev_start;
	s->poll = ev_poll;
	s->watermark = ev_watermark;
	s->finish = ev_finish;
	s->describe = ev_describe;
	s->free = ev_free;
	s->remap = ev_remap;
	return s;
}
