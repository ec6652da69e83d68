/* SPDX-License-Identifier: MIT */
/*
 * container_name.h - the name a container runtime gave a container, read
 * from the runtime's own files rather than by running `podman inspect`
 * (which takes a process and, while the container starts, waits for the
 * runtime's lock): -a --container=NAME tells a container started while
 * recording by its cgroup's id and learns its name here, in time to follow
 * it before its first program runs (docs/containers.md).
 *
 * The files are root's: each is opened without following a link, must be
 * owned by root and is read no further than SP_CONTAINER_NAME_FILE_MAX.
 */
#ifndef STACKPULSE_CONTAINER_NAME_H
#define STACKPULSE_CONTAINER_NAME_H

#define SP_CONTAINER_NAME_FILE_MAX	(16u << 20)	/* bytes read of one file */

/*
 * Whether the container whose id is id (64 lowercase hex digits) is named
 * name, by what root ("/", or a directory standing for it in tests) holds:
 *  - Podman (containers/storage): var/lib/containers/storage/
 *    {overlay,vfs}-containers/containers.json, an array of
 *    {"id": ID, "names": [NAME, ...]};
 *  - Docker: var/lib/docker/containers/ID/config.v2.json, {"Name": "/NAME"}.
 * 1 when named so, 0 when a file has the container under other names
 * only, -1 when none has it (or cannot be read, or id is not an id).
 */
int sp_container_named(const char *root, const char *id, const char *name);

#endif
