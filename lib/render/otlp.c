// SPDX-License-Identifier: MIT
/*
 * OTLP export, what every signal shares: the recording's identity and the
 * ids derived from it, its clock, attributes in their text form, and the
 * resources, one per process (and per exec of it), with the attributes of
 * OpenTelemetry's semantic conventions (process.*, host.*, os.*).
 *
 * The ids are a hash of the recording (host, command, start times) and the
 * span's number in it. Their function is part of the format (docs/otlp.md):
 * it must not change between versions, so it is written out here rather
 * than taken from hashmap.h, whose hashes may change.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "otlpP.h"
#include "sp.h"

/* splitmix64's finaliser over h and v: stable, documented in docs/otlp.md. */
static uint64_t id_mix(uint64_t h, uint64_t v)
{
	uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* FNV-1a, 64 bits. */
static uint64_t id_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = v & 0xff;
}

void otlp_trace_id(const struct otlp_stream *s, uint64_t root, uint8_t id[16])
{
	uint64_t h = id_mix(s->key, root);

	put_be64(id, id_mix(h, 1));
	put_be64(id + 8, id_mix(h, 2));
	if (!memcmp(id, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16))
		id[15] = 1;	/* all zeros is invalid */
}

void otlp_span_id(const struct otlp_stream *s, uint64_t span, uint8_t id[8])
{
	put_be64(id, id_mix(id_mix(s->key, span), 3));
	if (!memcmp(id, "\0\0\0\0\0\0\0\0", 8))
		id[7] = 1;
}

void otlp_profile_id(const struct otlp_stream *s, uint64_t pid, uint8_t id[16])
{
	uint64_t h = id_mix(s->key, pid);

	put_be64(id, id_mix(h, 4));
	put_be64(id + 8, id_mix(h, 5));
	if (!memcmp(id, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16))
		id[15] = 1;
}

uint64_t otlp_wall(const struct otlp_stream *s, uint64_t mono)
{
	return mono + (uint64_t)s->wall_off;
}

const char *otlp_text(struct sp_arena *a, const char *s, size_t n)
{
	const char *copy;
	size_t len;
	char *t;

	if (sp_esc_text_same(s, n, 0))
		return sp_arena_copy(a, s, n);
	len = sp_esc_text(NULL, 0, s, n, 0);
	t = sp_xmalloc(len + 1);
	sp_esc_text(t, len + 1, s, n, 0);
	copy = sp_arena_copy(a, t, len);
	free(t);
	return copy;
}

const char *otlp_strid(struct sp_arena *a, const struct sp_defs *d, uint64_t id)
{
	size_t n = 0;
	const char *s = sp_defs_str(d, id, &n);

	return s ? otlp_text(a, s, n) : "";
}

bool otlp_addr_text(const struct sp_bytes *b, char *dst, size_t size)
{
	return (b->len == 4 && inet_ntop(AF_INET, b->p, dst, size)) ||
	       (b->len == 16 && inet_ntop(AF_INET6, b->p, dst, size));
}

static struct otlp_attr *attr_new(struct otlp_attrs *v, const char *key)
{
	struct otlp_attr *a;

	sp_grow(&v->a, &v->cap, v->n + 1, sizeof(*v->a));
	a = &v->a[v->n++];
	memset(a, 0, sizeof(*a));
	a->key = key;
	return a;
}

void otlp_attr_str(struct otlp_attrs *v, const char *key, const char *s)
{
	struct otlp_attr *a = attr_new(v, key);

	a->type = OTLP_STR;
	a->s = s;
}

void otlp_attr_int(struct otlp_attrs *v, const char *key, int64_t i)
{
	struct otlp_attr *a = attr_new(v, key);

	a->type = OTLP_INT;
	a->i = i;
}

void otlp_stream_init(struct otlp_stream *s, const struct sp_otlp_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->opts = o;
	s->key = id_mix(0, 0);
}

void otlp_stream_release(struct otlp_stream *s)
{
	size_t i;

	for (i = 0; i < s->nres; i++)
		free(s->res[i].attrs.a);
	free(s->res);
	free(s->root);
	sp_u64map_release(&s->res_of_pid);
	sp_u64map_release(&s->thread_name);
	sp_arena_release(&s->text);
}

static void header_text(char *dst, size_t size, const struct sp_bytes *b)
{
	size_t n = sp_esc_text(dst, size, (const char *)b->p, b->len, 0);

	if (n >= size)	/* cut: end on a whole character */
		dst[sp_esc_text_trim(dst, strlen(dst))] = 0;
}

void otlp_stream_header(struct otlp_stream *s, const struct sp_header *h)
{
	uint64_t k = 0xcbf29ce484222325ull;

	k = id_bytes(k, h->hostname.p, h->hostname.len);
	k = id_bytes(k, (const uint8_t *)"", 1);
	k = id_bytes(k, h->command.p, h->command.len);
	k = id_mix(k, h->start_wall_ns);
	s->key = id_mix(k, h->start_mono_ns);
	/* the segments of one recording share its header's words but number
	 * their spans anew: each its own ids */
	if (h->segment)
		s->key = id_mix(s->key, h->segment);
	s->wall_off = h->start_wall_ns && h->start_mono_ns ?
		      (int64_t)(h->start_wall_ns - h->start_mono_ns) : 0;
	header_text(s->host, sizeof(s->host), &h->hostname);
	header_text(s->kernel, sizeof(s->kernel), &h->kernel);
	header_text(s->arch, sizeof(s->arch), &h->machine);
	/* host.arch's values are Go's names */
	if (!strcmp(s->arch, "x86_64"))
		strcpy(s->arch, "amd64");
	else if (!strcmp(s->arch, "aarch64"))
		strcpy(s->arch, "arm64");
	/* a new stream: pids may mean other processes, span ids start again */
	s->nroot = 0;
	sp_u64map_release(&s->res_of_pid);
	sp_u64map_release(&s->thread_name);
}

uint64_t otlp_stream_span(struct otlp_stream *s, const struct sp_defs *d, const struct sp_span *sp,
			  uint64_t *id, uint64_t *parent)
{
	uint64_t n = sp_defs_span_id(d, sp);
	uint64_t p = sp->parent ? sp->parent : sp->fork_span, root = n;

	if (p && p < n && p <= s->nroot && s->root[p - 1])
		root = s->root[p - 1];
	else
		p = 0;	/* not seen before it: it cannot be a parent here */
	sp_grow(&s->root, &s->root_cap, n, sizeof(*s->root));
	while (s->nroot < n)
		s->root[s->nroot++] = 0;
	s->root[n - 1] = root;
	*id = n;
	*parent = p;
	return root;
}

uint64_t otlp_stream_root(const struct otlp_stream *s, uint64_t id)
{
	return id && id <= s->nroot ? s->root[id - 1] : 0;
}

static struct otlp_resource *resource_new(struct otlp_stream *s, uint64_t pid)
{
	struct otlp_resource *r;

	sp_grow(&s->res, &s->res_cap, s->nres + 1, sizeof(*s->res));
	r = &s->res[s->nres++];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	sp_u64map_put(&s->res_of_pid, pid, s->nres);
	return r;
}

static void host_attrs(struct otlp_stream *s, struct otlp_attrs *v)
{
	if (*s->host)
		otlp_attr_str(v, "host.name", s->host);
	if (*s->arch)
		otlp_attr_str(v, "host.arch", s->arch);
	otlp_attr_str(v, "os.type", "linux");
	if (*s->kernel)
		otlp_attr_str(v, "os.version", s->kernel);
}

/* The container a process record names (docs/containers.md), in the
 * OpenTelemetry resource conventions: container.id and container.runtime,
 * k8s.pod.uid for a Kubernetes pod; a systemd service is no container. */
static void container_attrs(struct otlp_stream *s, const struct sp_defs *d,
			    const struct sp_process *p, struct otlp_attrs *a)
{
	const char *rt = p->runtime ? otlp_strid(&s->text, d, p->runtime) : "";

	if (!*rt || !strcmp(rt, "systemd"))
		return;
	if (p->container)
		otlp_attr_str(a, "container.id", otlp_strid(&s->text, d, p->container));
	if (strcmp(rt, "kubernetes"))
		otlp_attr_str(a, "container.runtime", rt);
	if (p->pod && strcmp(rt, "podman"))
		otlp_attr_str(a, "k8s.pod.uid", otlp_strid(&s->text, d, p->pod));
}

static void process_attrs(struct otlp_stream *s, const struct sp_defs *d,
			  const struct sp_process *p)
{
	struct otlp_resource *r = resource_new(s, p->pid);
	const char *comm = otlp_strid(&s->text, d, p->comm);
	const char *service = s->opts->service_name;

	if (!service)
		service = *comm ? comm : "unknown_service";
	otlp_attr_str(&r->attrs, "service.name", service);
	otlp_attr_int(&r->attrs, "process.pid", (int64_t)p->pid);
	if (p->ppid)
		otlp_attr_int(&r->attrs, "process.parent_pid", (int64_t)p->ppid);
	if (*comm)
		otlp_attr_str(&r->attrs, "process.executable.name", comm);
	if (p->exe)
		otlp_attr_str(&r->attrs, "process.executable.path",
			      otlp_strid(&s->text, d, p->exe));
	if (p->args)
		otlp_attr_str(&r->attrs, "process.command_line",
			      otlp_strid(&s->text, d, p->args));
	container_attrs(s, d, p, &r->attrs);
	host_attrs(s, &r->attrs);
}

uint32_t otlp_resource_of(struct otlp_stream *s, uint64_t pid)
{
	uint64_t *i = sp_u64map_get(&s->res_of_pid, pid);
	struct otlp_resource *r;

	if (i)
		return *i - 1;
	r = resource_new(s, pid);
	otlp_attr_str(&r->attrs, "service.name", s->opts->service_name ?
		      s->opts->service_name : "unknown_service");
	otlp_attr_int(&r->attrs, "process.pid", (int64_t)pid);
	host_attrs(s, &r->attrs);
	return s->nres - 1;
}

static bool has_attr(const struct otlp_attrs *v, const char *key)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (!strcmp(v->a[i].key, key))
			return true;
	return false;
}

void otlp_stream_define(struct otlp_stream *s, const struct sp_defs *d,
			const struct sp_record *rec)
{
	static const char *const runtimes[] = { "", "ruby", "python" };
	const struct sp_runtime_info *rt;
	struct otlp_resource *r;
	uint32_t i;

	switch (rec->kind) {
	case SP_REC_PROCESS:
		process_attrs(s, d, &rec->process);
		break;
	case SP_REC_THREAD:
		sp_u64map_put(&s->thread_name, rec->thread.tid,
			      (uintptr_t)otlp_strid(&s->text, d, rec->thread.name));
		break;
	case SP_REC_RUNTIME:
		rt = &rec->runtime;
		if (rt->runtime < 1 || rt->runtime > 2)
			break;
		i = otlp_resource_of(s, rt->pid);	/* may move s->res */
		r = &s->res[i];
		if (has_attr(&r->attrs, "process.runtime.name"))
			break;	/* said again (another library of it) */
		otlp_attr_str(&r->attrs, "process.runtime.name", runtimes[rt->runtime]);
		if (rt->version)
			otlp_attr_str(&r->attrs, "process.runtime.version",
				      otlp_strid(&s->text, d, rt->version));
		break;
	default:
		break;
	}
}
