// SPDX-License-Identifier: MIT
/*
 * OTLP profiles: the samples aggregated by the pprof export (pprof.c: one
 * mechanism for mappings, functions, locations and inline lines), read back
 * from the profile it writes and turned into an ExportProfilesServiceRequest
 * of OpenTelemetry's profiles signal (opentelemetry-proto v1.11.0,
 * "v1development"), as OpenTelemetry's own pprof translation does:
 *
 *   - the request's dictionary holds pprof's string table (plus the
 *     attribute keys used here), its mappings, functions and locations
 *     (pprof's ids become indices: entry 0 of each table is the empty one
 *     the format wants), a stack per distinct list of locations, and the
 *     attributes: a mapping's build-id, a sample's thread;
 *   - each process (pprof's "pid" label) is a resource with the attributes
 *     the traces give it, with one CPU profile whose samples are pprof's
 *     (one per stack, thread and span) valued in nanoseconds, each linked
 *     to the span that owns it (the ids sp-export gives the same span in
 *     the traces).
 *
 * pprof aggregates samples by stack, pid and tid: the tid it is given here
 * is the number of a (thread, span) pair, so that a thread's samples in
 * different spans stay apart; the translation turns it back into the
 * thread's attribute and the span's link.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "otlp_pb.h"
#include "proto/profile.pb-c.h"
#include "sp.h"

typedef Perftools__Profiles__Profile PProfile;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit Attr;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ValueType;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles ScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles ResourceProfiles;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	Request;

/* A (thread, span) pair of a stream, and the link to the span. */
struct pkey {
	uint32_t gen;		/* which stream (header) */
	uint64_t tid, span;
	bool linked;		/* the span's record came: its ids are known */
	uint8_t trace_id[16], span_id[8];
};

struct sp_otlp_profiles {
	struct sp_otlp_opts opts;
	struct otlp_stream s;
	struct sp_pprof *pprof;
	struct pkey *keys;
	size_t nkeys, keys_cap;
	struct sp_idset key_idx;
	uint32_t gen;
};

struct sp_otlp_profiles *sp_otlp_profiles_new(const struct sp_otlp_opts *o)
{
	struct sp_otlp_profiles *p = sp_xcalloc(1, sizeof(*p));

	p->opts = *o;
	otlp_stream_init(&p->s, &p->opts);
	p->pprof = sp_pprof_new(false);
	return p;
}

void sp_otlp_profiles_free(struct sp_otlp_profiles *p)
{
	if (!p)
		return;
	otlp_stream_release(&p->s);
	sp_pprof_free(p->pprof);
	free(p->keys);
	sp_idset_release(&p->key_idx);
	free(p);
}

static bool key_eq(void *ctx, uint32_t id, const void *key)
{
	const struct pkey *a = &((const struct pkey *)ctx)[id - 1], *b = key;

	return a->gen == b->gen && a->tid == b->tid && a->span == b->span;
}

/* The number (1, 2, ...) of the pair (tid, span). */
static uint64_t sample_key(struct sp_otlp_profiles *p, uint64_t tid, uint64_t span)
{
	struct pkey k = { .gen = p->gen, .tid = tid, .span = span };
	uint64_t h = sp_hash_mix(sp_hash_mix(sp_hash_u64(k.gen), tid), span), root;
	uint32_t id = sp_idset_find(&p->key_idx, h, &k, key_eq, p->keys);

	if (id)
		return id;
	root = otlp_stream_root(&p->s, span);
	if (root) {
		k.linked = true;
		otlp_trace_id(&p->s, root, k.trace_id);
		otlp_span_id(&p->s, span, k.span_id);
	}
	sp_grow(&p->keys, &p->keys_cap, p->nkeys + 1, sizeof(*p->keys));
	p->keys[p->nkeys++] = k;
	sp_idset_add(&p->key_idx, h, p->nkeys);
	return p->nkeys;
}

int sp_otlp_profiles_add(struct sp_otlp_profiles *p, const struct sp_defs *d,
			 const struct sp_record *rec, uint64_t ns)
{
	struct sp_record r;
	uint64_t id, parent;

	switch (rec->kind) {
	case SP_REC_HEADER:
		otlp_stream_header(&p->s, &rec->header);
		p->gen++;
		return sp_pprof_add(p->pprof, d, rec, ns);
	case SP_REC_SPAN:
		otlp_stream_span(&p->s, d, &rec->span, &id, &parent);
		return 0;
	case SP_REC_PROCESS:
	case SP_REC_THREAD:
	case SP_REC_RUNTIME:
		otlp_stream_define(&p->s, d, rec);
		return 0;
	case SP_REC_SAMPLE:
		r = *rec;
		r.sample.tid = sample_key(p, rec->sample.tid, rec->sample.span);
		return sp_pprof_add(p->pprof, d, &r, ns);
	default:
		return 0;
	}
}

/* ---- the pprof profile, read back ---- */

static PProfile *pprof_read(struct sp_otlp_profiles *p, uint64_t period_ns)
{
	struct sp_buf raw = SP_BUF_INIT;
	char *gz = NULL;
	size_t gzlen = 0;
	FILE *mem = open_memstream(&gz, &gzlen);
	PProfile *pp = NULL;
	z_stream z = { 0 };
	int zr = Z_DATA_ERROR;

	if (!mem)
		return NULL;
	if (sp_pprof_write(p->pprof, mem, period_ns, NULL) < 0 || fclose(mem)) {
		free(gz);
		return NULL;
	}
	if (inflateInit2(&z, 16 + MAX_WBITS) == Z_OK) {
		z.next_in = (Bytef *)gz;
		z.avail_in = gzlen;
		do {
			sp_buf_reserve(&raw, 1 << 16);
			z.next_out = (Bytef *)raw.p + raw.len;
			z.avail_out = raw.cap - raw.len - 1;
			zr = inflate(&z, Z_NO_FLUSH);
			raw.len = raw.cap - 1 - z.avail_out;
		} while (zr == Z_OK);
		inflateEnd(&z);
	}
	if (zr == Z_STREAM_END)
		pp = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *)raw.p);
	free(gz);
	sp_buf_release(&raw);
	return pp;
}

/* ---- the dictionary ---- */

struct build {
	const struct sp_otlp_profiles *p;
	const PProfile *pp;
	Dict dict;
	char **strs;
	Mapping *maps, **mapp;
	Function *funcs, **funcp;
	Location *locs, **locp;
	Line *lines, **linep;
	Stack *stacks, **stackp;
	int32_t *locidx;	/* the stacks' location indices */
	struct sp_idset stack_idx;
	int32_t *sample_stack;	/* pprof sample -> stack index */
	Attr *attrs, **attrp;
	AnyValue *attr_av;
	int32_t *attr_of_map, *attr_of_sample;
	struct sp_u64map attr_of_tid;
	Link *links, **linkp;
	struct sp_u64map link_of_key;
	int32_t *link_of_sample;
	uint8_t zero[16];
	int32_t k_thread, k_build_id;	/* string indices */
	int64_t k_pid, k_tid;		/* pprof's label keys */
};

static void dict_strings(struct build *b)
{
	const PProfile *pp = b->pp;
	size_t i, n = pp->n_string_table;

	b->strs = sp_xcalloc(n + 3, sizeof(*b->strs));
	for (i = 0; i < n; i++) {
		b->strs[i] = pp->string_table[i];
		if (!strcmp(pp->string_table[i], "pid"))
			b->k_pid = i;
		else if (!strcmp(pp->string_table[i], "tid"))
			b->k_tid = i;
	}
	if (!n)
		b->strs[n++] = "";	/* string 0 must be "" */
	b->k_thread = n;
	b->strs[n++] = "thread.id";
	b->k_build_id = n;
	b->strs[n++] = "process.executable.build_id.gnu";
	b->dict.n_string_table = n;
	b->dict.string_table = b->strs;
}

/* Attribute n of the table: key (string index) = a string or an int. */
static int32_t attr_add(struct build *b, int32_t key, const char *s, int64_t i)
{
	size_t n = b->dict.n_attribute_table++;

	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&b->attrs[n]);
	opentelemetry__proto__common__v1__any_value__init(&b->attr_av[n]);
	b->attrs[n].key_strindex = key;
	b->attrs[n].value = &b->attr_av[n];
	if (s) {
		b->attr_av[n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		b->attr_av[n].string_value = (char *)s;
	} else {
		b->attr_av[n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		b->attr_av[n].int_value = i;
	}
	b->attrp[n] = &b->attrs[n];
	return n;
}

/* pprof's mappings, functions, locations: its id i is index i here. */
static int dict_tables(struct build *b)
{
	const PProfile *pp = b->pp;
	size_t i, j, nl = 0;

	b->maps = sp_xcalloc(pp->n_mapping + 1, sizeof(*b->maps));
	b->mapp = sp_xcalloc(pp->n_mapping + 1, sizeof(*b->mapp));
	b->attr_of_map = sp_xcalloc(pp->n_mapping + 1, sizeof(*b->attr_of_map));
	for (i = 0; i <= pp->n_mapping; i++) {
		Mapping *m = &b->maps[i];

		opentelemetry__proto__profiles__v1development__mapping__init(m);
		b->mapp[i] = m;
		if (!i)
			continue;
		if (pp->mapping[i - 1]->id != i)
			return -1;
		m->memory_start = pp->mapping[i - 1]->memory_start;
		m->memory_limit = pp->mapping[i - 1]->memory_limit;
		m->file_offset = pp->mapping[i - 1]->file_offset;
		m->filename_strindex = pp->mapping[i - 1]->filename;
		if (pp->mapping[i - 1]->build_id && *pp->string_table[pp->mapping[i - 1]->build_id]) {
			b->attr_of_map[i] = attr_add(b, b->k_build_id,
						     pp->string_table[pp->mapping[i - 1]->build_id], 0);
			m->n_attribute_indices = 1;
			m->attribute_indices = &b->attr_of_map[i];
		}
	}
	b->funcs = sp_xcalloc(pp->n_function + 1, sizeof(*b->funcs));
	b->funcp = sp_xcalloc(pp->n_function + 1, sizeof(*b->funcp));
	for (i = 0; i <= pp->n_function; i++) {
		opentelemetry__proto__profiles__v1development__function__init(&b->funcs[i]);
		b->funcp[i] = &b->funcs[i];
		if (!i)
			continue;
		if (pp->function[i - 1]->id != i)
			return -1;
		b->funcs[i].name_strindex = pp->function[i - 1]->name;
		b->funcs[i].system_name_strindex = pp->function[i - 1]->system_name;
		b->funcs[i].filename_strindex = pp->function[i - 1]->filename;
		b->funcs[i].start_line = pp->function[i - 1]->start_line;
	}
	for (i = 0; i < pp->n_location; i++)
		nl += pp->location[i]->n_line;
	b->lines = sp_xcalloc(nl + 1, sizeof(*b->lines));
	b->linep = sp_xcalloc(nl + 1, sizeof(*b->linep));
	b->locs = sp_xcalloc(pp->n_location + 1, sizeof(*b->locs));
	b->locp = sp_xcalloc(pp->n_location + 1, sizeof(*b->locp));
	for (i = 0, nl = 0; i <= pp->n_location; i++) {
		const Perftools__Profiles__Location *l = i ? pp->location[i - 1] : NULL;
		Location *o = &b->locs[i];

		opentelemetry__proto__profiles__v1development__location__init(o);
		b->locp[i] = o;
		if (!i)
			continue;
		if (l->id != i || l->mapping_id > pp->n_mapping)
			return -1;
		o->mapping_index = l->mapping_id;
		o->address = l->address;
		o->n_lines = l->n_line;
		o->lines = b->linep + nl;
		for (j = 0; j < l->n_line; j++, nl++) {
			opentelemetry__proto__profiles__v1development__line__init(&b->lines[nl]);
			if (l->line[j]->function_id > pp->n_function)
				return -1;
			b->lines[nl].function_index = l->line[j]->function_id;
			b->lines[nl].line = l->line[j]->line;
			b->lines[nl].column = l->line[j]->column;
			b->linep[nl] = &b->lines[nl];
		}
	}
	b->dict.n_mapping_table = pp->n_mapping + 1;
	b->dict.mapping_table = b->mapp;
	b->dict.n_function_table = pp->n_function + 1;
	b->dict.function_table = b->funcp;
	b->dict.n_location_table = pp->n_location + 1;
	b->dict.location_table = b->locp;
	return 0;
}

static bool stack_eq(void *ctx, uint32_t id, const void *key)
{
	const struct build *b = ctx;
	const Perftools__Profiles__Sample *a = key;
	const Stack *s = &b->stacks[id];
	size_t i;

	if (s->n_location_indices != a->n_location_id)
		return false;
	for (i = 0; i < a->n_location_id; i++)
		if ((uint64_t)s->location_indices[i] != a->location_id[i])
			return false;
	return true;
}

static void link_init(struct build *b, size_t i, const uint8_t *trace, const uint8_t *span)
{
	opentelemetry__proto__profiles__v1development__link__init(&b->links[i]);
	b->links[i].trace_id = (ProtobufCBinaryData){ 16, (uint8_t *)trace };
	b->links[i].span_id = (ProtobufCBinaryData){ 8, (uint8_t *)span };
	b->linkp[i] = &b->links[i];
	b->dict.n_link_table = i + 1;
}

/* The link to the span of (thread, span) pair key, added the first time. */
static int32_t link_of(struct build *b, uint64_t key)
{
	uint64_t *l = sp_u64map_get(&b->link_of_key, key);
	const struct pkey *k = &b->p->keys[key - 1];

	if (l)
		return *l;
	link_init(b, b->dict.n_link_table, k->trace_id, k->span_id);
	sp_u64map_put(&b->link_of_key, key, b->dict.n_link_table - 1);
	return b->dict.n_link_table - 1;
}

/* A stack per distinct list of locations (leaf first, as in pprof), and the
 * thread attribute of every sample. */
static int dict_stacks(struct build *b)
{
	const PProfile *pp = b->pp;
	size_t i, j, nloc = 0, nstacks = 1;

	for (i = 0; i < pp->n_sample; i++)
		nloc += pp->sample[i]->n_location_id;
	b->locidx = sp_xcalloc(nloc + 1, sizeof(*b->locidx));
	b->stacks = sp_xcalloc(pp->n_sample + 1, sizeof(*b->stacks));
	b->stackp = sp_xcalloc(pp->n_sample + 1, sizeof(*b->stackp));
	b->sample_stack = sp_xcalloc(pp->n_sample + 1, sizeof(*b->sample_stack));
	b->attr_of_sample = sp_xcalloc(pp->n_sample + 1, sizeof(*b->attr_of_sample));
	b->link_of_sample = sp_xcalloc(pp->n_sample + 1, sizeof(*b->link_of_sample));
	b->links = sp_xcalloc(b->p->nkeys + 1, sizeof(*b->links));
	b->linkp = sp_xcalloc(b->p->nkeys + 1, sizeof(*b->linkp));
	link_init(b, 0, b->zero, b->zero);	/* entry 0: no link, zero ids of full length */
	b->dict.link_table = b->linkp;
	opentelemetry__proto__profiles__v1development__stack__init(&b->stacks[0]);
	b->stackp[0] = &b->stacks[0];
	for (i = 0, nloc = 0; i < pp->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pp->sample[i];
		uint64_t h = sp_hash_bytes(s->location_id, s->n_location_id * sizeof(uint64_t));
		uint32_t id = sp_idset_find(&b->stack_idx, h, s, stack_eq, b);
		uint64_t key = 0, *a;
		const struct pkey *k;

		if (!id) {
			Stack *st = &b->stacks[nstacks];

			opentelemetry__proto__profiles__v1development__stack__init(st);
			st->n_location_indices = s->n_location_id;
			st->location_indices = b->locidx + nloc;
			for (j = 0; j < s->n_location_id; j++, nloc++) {
				if (s->location_id[j] > pp->n_location)
					return -1;
				b->locidx[nloc] = s->location_id[j];
			}
			b->stackp[nstacks] = st;
			id = nstacks++;
			sp_idset_add(&b->stack_idx, h, id);
		}
		b->sample_stack[i] = id;
		for (j = 0; j < s->n_label; j++)
			if (s->label[j]->key == b->k_tid)
				key = s->label[j]->num;
		if (key < 1 || key > b->p->nkeys)
			return -1;
		k = &b->p->keys[key - 1];
		a = sp_u64map_get(&b->attr_of_tid, k->tid);
		if (!a)
			a = sp_u64map_put(&b->attr_of_tid, k->tid,
					  attr_add(b, b->k_thread, NULL, k->tid));
		b->attr_of_sample[i] = *a;
		b->link_of_sample[i] = k->linked ? link_of(b, key) : 0;
	}
	b->dict.n_stack_table = nstacks;
	b->dict.stack_table = b->stackp;
	return 0;
}

static void build_release(struct build *b)
{
	free(b->strs);
	free(b->maps);
	free(b->mapp);
	free(b->funcs);
	free(b->funcp);
	free(b->locs);
	free(b->locp);
	free(b->lines);
	free(b->linep);
	free(b->stacks);
	free(b->stackp);
	free(b->locidx);
	sp_idset_release(&b->stack_idx);
	free(b->sample_stack);
	free(b->attrs);
	free(b->attrp);
	free(b->attr_av);
	free(b->attr_of_map);
	free(b->attr_of_sample);
	sp_u64map_release(&b->attr_of_tid);
	free(b->link_of_sample);
	free(b->links);
	free(b->linkp);
	sp_u64map_release(&b->link_of_key);
}

static int dict_build(struct build *b)
{
	const PProfile *pp = b->pp;
	size_t nattr = pp->n_mapping + pp->n_sample + 1;

	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&b->dict);
	b->attrs = sp_xcalloc(nattr, sizeof(*b->attrs));
	b->attrp = sp_xcalloc(nattr, sizeof(*b->attrp));
	b->attr_av = sp_xcalloc(nattr, sizeof(*b->attr_av));
	b->dict.attribute_table = b->attrp;
	dict_strings(b);
	attr_add(b, 0, "", 0);
	b->attrs[0].value = NULL;	/* entry 0: the zero value, KeyValueAndUnit{} */
	if (dict_tables(b) < 0 || dict_stacks(b) < 0)
		return -1;
	return 0;
}

/* ---- resources and their profiles ---- */

struct group {
	uint64_t pid;
	uint32_t res;
	size_t first, n;
	uint8_t id[16];
};

static uint64_t sample_pid(const struct build *b, const Perftools__Profiles__Sample *s)
{
	size_t j;

	for (j = 0; j < s->n_label; j++)
		if (s->label[j]->key == b->k_pid)
			return s->label[j]->num;
	return 0;
}

/* The samples by process (pprof's pid label), processes in order of their
 * first sample: *smpp[g.first .. g.first + g.n) are process g's. */
static struct group *group_samples(struct sp_otlp_profiles *p, const struct build *b, size_t *ngp,
				   Sample **smpp_msgs, Sample ***smpp_ptrs)
{
	const PProfile *pp = b->pp;
	struct sp_u64map gi = SP_U64MAP_INIT;
	struct group *g = NULL;
	size_t ng = 0, gcap = 0, i, len;
	Sample *smp, **smpp;
	uint64_t *x;

	for (i = 0; i < pp->n_sample; i++) {
		uint64_t pid = sample_pid(b, pp->sample[i]);

		x = sp_u64map_get(&gi, pid);
		if (!x) {
			sp_grow(&g, &gcap, ng + 1, sizeof(*g));
			g[ng] = (struct group){ .pid = pid };
			x = sp_u64map_put(&gi, pid, ++ng);
		}
		g[*x - 1].n++;
	}
	for (i = 0, len = 0; i < ng; i++) {
		g[i].first = len;
		len += g[i].n;
		g[i].n = 0;
		g[i].res = otlp_resource_of(&p->s, g[i].pid);
		otlp_profile_id(&p->s, g[i].pid, g[i].id);
	}
	smp = sp_xcalloc(pp->n_sample + 1, sizeof(*smp));
	smpp = sp_xcalloc(pp->n_sample + 1, sizeof(*smpp));
	for (i = 0; i < pp->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pp->sample[i];
		struct group *gr = &g[*sp_u64map_get(&gi, sample_pid(b, s)) - 1];
		Sample *o = &smp[gr->first + gr->n];

		opentelemetry__proto__profiles__v1development__sample__init(o);
		o->stack_index = b->sample_stack[i];
		o->n_attribute_indices = 1;
		o->attribute_indices = &b->attr_of_sample[i];
		o->link_index = b->link_of_sample[i];
		o->n_values = s->n_value > 1 ? 1 : 0;	/* cpu/nanoseconds */
		o->values = s->value + 1;
		smpp[gr->first + gr->n++] = o;
	}
	sp_u64map_release(&gi);
	*ngp = ng;
	*smpp_msgs = smp;
	*smpp_ptrs = smpp;
	return g;
}

static int request_write(struct sp_otlp_profiles *p, struct build *b, FILE *out)
{
	const PProfile *pp = b->pp;
	Request req = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	Scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	ValueType vt = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	struct group *g;
	size_t ng = 0, i, nkv = 0, len;
	Sample *smp, **smpp;
	Profile *prof, **profp;
	ScopeProfiles *sc, **scp;
	ResourceProfiles *rp, **rpp;
	Resource *res;
	struct otlp_kv_pool kv;
	uint8_t *buf;
	int rc = 0;

	g = group_samples(p, b, &ng, &smp, &smpp);
	for (i = 0; i < ng; i++)
		nkv += p->s.res[g[i].res].attrs.n;
	vt.type_strindex = pp->n_sample_type > 1 ? pp->sample_type[1]->type : 0;
	vt.unit_strindex = pp->n_sample_type > 1 ? pp->sample_type[1]->unit : 0;
	scope.name = "stackpulse";
	prof = sp_xcalloc(ng + 1, sizeof(*prof));
	profp = sp_xcalloc(ng + 1, sizeof(*profp));
	sc = sp_xcalloc(ng + 1, sizeof(*sc));
	scp = sp_xcalloc(ng + 1, sizeof(*scp));
	rp = sp_xcalloc(ng + 1, sizeof(*rp));
	rpp = sp_xcalloc(ng + 1, sizeof(*rpp));
	res = sp_xcalloc(ng + 1, sizeof(*res));
	otlp_pb_pool_init(&kv, nkv);
	for (i = 0; i < ng; i++) {
		const struct otlp_resource *r = &p->s.res[g[i].res];

		opentelemetry__proto__profiles__v1development__profile__init(&prof[i]);
		prof[i].sample_type = &vt;
		prof[i].period_type = &vt;
		prof[i].period = pp->period;
		prof[i].time_unix_nano = pp->time_nanos;
		prof[i].duration_nano = pp->duration_nanos;
		prof[i].profile_id = (ProtobufCBinaryData){ 16, g[i].id };
		prof[i].n_samples = g[i].n;
		prof[i].samples = smpp + g[i].first;
		profp[i] = &prof[i];
		opentelemetry__proto__profiles__v1development__scope_profiles__init(&sc[i]);
		sc[i].scope = &scope;
		sc[i].n_profiles = 1;
		sc[i].profiles = &profp[i];
		scp[i] = &sc[i];
		opentelemetry__proto__resource__v1__resource__init(&res[i]);
		res[i].n_attributes = r->attrs.n;
		res[i].attributes = otlp_pb_kvs(&kv, r->attrs.a, r->attrs.n);
		opentelemetry__proto__profiles__v1development__resource_profiles__init(&rp[i]);
		rp[i].resource = &res[i];
		rp[i].n_scope_profiles = 1;
		rp[i].scope_profiles = &scp[i];
		rpp[i] = &rp[i];
	}
	req.n_resource_profiles = ng;
	req.resource_profiles = rpp;
	req.dictionary = &b->dict;
	len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&req);
	buf = sp_xmalloc(len + 1);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&req, buf);
	if (p->opts.json)
		rc = otlp_json_message(out, &req.base) < 0 || fputc('\n', out) == EOF ? -1 : 0;
	else if (len && fwrite(buf, 1, len, out) != len)
		rc = -1;
	free(buf);
	otlp_pb_pool_release(&kv);
	free(prof);
	free(profp);
	free(sc);
	free(scp);
	free(rp);
	free(rpp);
	free(res);
	free(smp);
	free(smpp);
	free(g);
	return rc;
}

int sp_otlp_profiles_write(struct sp_otlp_profiles *p, FILE *out, uint64_t period_ns)
{
	struct build b = { 0 };
	PProfile *pp = pprof_read(p, period_ns);
	int rc;

	if (!pp)
		return sp_error("cannot build the profile");
	b.pp = pp;
	b.p = p;
	if (pp->n_string_table > INT32_MAX / 2 || pp->n_sample > INT32_MAX / 2 ||
	    dict_build(&b) < 0) {
		rc = sp_error("the pprof profile does not read as it was written");
	} else {
		rc = request_write(p, &b, out);
		if (rc < 0)
			sp_error_errno("cannot write the OTLP profiles");
	}
	build_release(&b);
	perftools__profiles__profile__free_unpacked(pp, NULL);
	return rc;
}
