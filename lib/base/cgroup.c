// SPDX-License-Identifier: MIT
/*
 * The container, pod or service a cgroup v2 path names (cgroup.h). The path
 * is cut into its parts and read from the innermost outwards, each part
 * matched against the names runtimes give their cgroups; docs/containers.md
 * has the table of layouts.
 */
#include <stdbool.h>
#include <string.h>

#include "cgroup.h"

#define ID_LEN 64

struct part {
	const char *s;
	size_t n;
};

static bool is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool has_prefix(struct part p, const char *pre)
{
	size_t n = strlen(pre);

	return p.n >= n && !memcmp(p.s, pre, n);
}

static bool has_suffix(struct part p, const char *suf)
{
	size_t n = strlen(suf);

	return p.n >= n && !memcmp(p.s + p.n - n, suf, n);
}

static bool is_name(struct part p, const char *name)
{
	return p.n == strlen(name) && !memcmp(p.s, name, p.n);
}

/* PREFIX<64 hex>SUFFIX: the id, or NULL. */
static const char *id_between(struct part p, const char *pre, const char *suf)
{
	size_t a = strlen(pre), b = strlen(suf);

	if (p.n != a + ID_LEN + b || !has_prefix(p, pre) || !has_suffix(p, suf) ||
	    !is_hex(p.s + a, ID_LEN))
		return NULL;
	return p.s + a;
}

/*
 * A Kubernetes pod uid: 8-4-4-4-12 hex digits (an API pod), or 32 hex digits
 * (a static pod's hash); the systemd driver writes '_' for '-'. Copied into
 * out with '-'. False if it has another form.
 */
static bool pod_uid(const char *s, size_t n, char *out)
{
	size_t i;

	if (n != 36 && n != 32)
		return false;
	for (i = 0; i < n; i++) {
		bool dash = n == 36 && (i == 8 || i == 13 || i == 18 || i == 23);

		if (dash ? (s[i] != '-' && s[i] != '_') : !is_hex(s + i, 1))
			return false;
	}
	for (i = 0; i < n; i++)
		out[i] = s[i] == '_' ? '-' : s[i];
	out[n] = 0;
	return true;
}

/* kubepods[-QOS]-pod<uid>.slice (systemd driver) or pod<uid> under
 * kubepods (cgroupfs driver). */
static bool kube_pod(struct part p, bool under_kubepods, char *out)
{
	const char *dash;
	size_t n;

	if (has_prefix(p, "kubepods-") && has_suffix(p, ".slice")) {
		n = p.n - strlen(".slice");
		dash = memrchr(p.s, '-', n);
		if (!dash || dash + 4 > p.s + n || memcmp(dash + 1, "pod", 3))
			return false;
		return pod_uid(dash + 4, (size_t)(p.s + n - dash - 4), out);
	}
	return under_kubepods && has_prefix(p, "pod") && pod_uid(p.s + 3, p.n - 3, out);
}

/* A Podman pod's slice: machine-libpod_pod_<id>.slice (root) or
 * user-libpod_pod_<id>.slice (rootless). */
static bool podman_pod(struct part p, char *out)
{
	const char *id = id_between(p, "machine-libpod_pod_", ".slice");

	if (!id)
		id = id_between(p, "user-libpod_pod_", ".slice");
	if (!id)
		return false;
	memcpy(out, id, ID_LEN);
	out[ID_LEN] = 0;
	return true;
}

/* The container part p (its parent: up, or NULL at the top) names. */
static const char *container(struct part p, const struct part *up, bool under_kubepods,
			     const char **id)
{
	static const struct {
		const char *pre, *suf, *runtime;
	} scopes[] = {
		{ "docker-", ".scope", "docker" },
		{ "libpod-", ".scope", "podman" },
		{ "libpod-", "", "podman" },		/* cgroupfs manager */
		{ "cri-containerd-", ".scope", "containerd" },
		{ "crio-", ".scope", "crio" },
	};
	char uid[SP_CGROUP_POD_MAX + 1];
	size_t i;

	for (i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++)
		if ((*id = id_between(p, scopes[i].pre, scopes[i].suf)))
			return scopes[i].runtime;
	if (!up || !(*id = id_between(p, "", "")))
		return NULL;
	if (is_name(*up, "docker"))
		return "docker";
	if (kube_pod(*up, under_kubepods, uid))
		return "kubernetes";
	return NULL;
}

static bool unit_name(struct part p)
{
	size_t i;

	if (p.n > SP_CGROUP_UNIT_MAX || p.n <= strlen(".service") || !has_suffix(p, ".service"))
		return false;
	for (i = 0; i < p.n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.\\@-",
			    p.s[i]) || !p.s[i])
			return false;
	return true;
}

#define MAX_PARTS 64	/* deeper paths are read by their last parts only */

int sp_cgroup_owner(const char *path, size_t len, struct sp_cgroup_owner *out)
{
	struct part parts[MAX_PARTS];
	const char *s = path, *end = path + len, *slash, *id = NULL;
	bool kubepods = false;
	size_t n = 0, i;

	memset(out, 0, sizeof(*out));
	while (s < end) {
		slash = memchr(s, '/', (size_t)(end - s));
		if (!slash)
			slash = end;
		if (slash > s) {
			if (n == MAX_PARTS) {
				memmove(parts, parts + 1, (MAX_PARTS - 1) * sizeof(*parts));
				n--;
			}
			parts[n++] = (struct part){ s, (size_t)(slash - s) };
			if (is_name(parts[n - 1], "kubepods"))
				kubepods = true;
		}
		s = slash + 1;
	}
	for (i = n; i-- > 0;) {
		if (!out->runtime)
			out->runtime = container(parts[i], i ? &parts[i - 1] : NULL, kubepods, &id);
		if (kube_pod(parts[i], kubepods, out->pod)) {
			out->runtime = out->runtime ? out->runtime : "kubernetes";
			break;
		}
		if (podman_pod(parts[i], out->pod)) {
			out->runtime = out->runtime ? out->runtime : "podman";
			break;
		}
	}
	if (id) {
		memcpy(out->id, id, ID_LEN);
		out->id[ID_LEN] = 0;
	} else if (!out->runtime && n && unit_name(parts[n - 1])) {
		out->runtime = "systemd";
		memcpy(out->id, parts[n - 1].s, parts[n - 1].n);
		out->id[parts[n - 1].n] = 0;
	}
	return out->runtime != NULL;
}
