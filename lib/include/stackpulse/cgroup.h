/* SPDX-License-Identifier: MIT */
/*
 * cgroup.h - which container, pod or service a process belongs to, read from
 * its cgroup v2 path (the "0::" line of /proc/PID/cgroup), by the layouts the
 * common runtimes and systemd give their cgroups (docs/containers.md lists
 * them, with where each was seen).
 *
 * Pure string work: no file is read, nothing is allocated, nothing reported.
 * The path comes from the kernel but holds names chosen by others (unit and
 * slice names): every id is checked for its form before it is given.
 */
#ifndef STACKPULSE_CGROUP_H
#define STACKPULSE_CGROUP_H

#include <stddef.h>

#define SP_CGROUP_UNIT_MAX	255	/* a systemd unit name (systemd's own limit) */
#define SP_CGROUP_POD_MAX	64	/* a pod uid (36) or a Podman pod id (64 hex) */

struct sp_cgroup_owner {
	/*
	 * "docker", "podman", "containerd", "crio", "kubernetes" (a pod, or a
	 * container of a pod whose runtime the path does not name), "systemd"
	 * (a service), or NULL: nothing derivable. Static strings.
	 */
	const char *runtime;
	/* The container id (64 lowercase hex digits), or for "systemd" the
	 * unit name ("nginx.service"); "" for a pod alone or nothing. */
	char id[SP_CGROUP_UNIT_MAX + 1];
	/* The pod: a Kubernetes pod uid ('_' of systemd slice names turned
	 * back to '-') or a Podman pod id; "" when the path names none. */
	char pod[SP_CGROUP_POD_MAX + 1];
};

/*
 * Derive the owner of a cgroup path of len bytes (need not be
 * NUL-terminated). The innermost container in the path wins (a runtime in
 * a container: the inner one); a service is given only when the path names
 * no container or pod and its last part is a ".service" unit. Returns 1
 * when a runtime was found, 0 when not (out zeroed).
 */
int sp_cgroup_owner(const char *path, size_t len, struct sp_cgroup_owner *out);

#endif
