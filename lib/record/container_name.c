// SPDX-License-Identifier: MIT
/*
 * A container's name from its runtime's files (container_name.h).
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container_name.h"
#include "safefile.h"

/* The JSON of root/path, or NULL: a regular file of root's, no link. */
static json_t *load(const char *root, const char *path)
{
	const struct sp_safe_want want = {
		.flags = SP_SAFE_NOFOLLOW | SP_SAFE_OWNER,
		.owner = (uid_t)-1,
		.max_size = SP_CONTAINER_NAME_FILE_MAX,
	};
	char full[4096];
	struct stat st;
	json_t *j = NULL;
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd;

	if ((size_t)snprintf(full, sizeof(full), "%s/%s", root, path) >= sizeof(full))
		return NULL;
	fd = sp_safe_open(AT_FDCWD, full, &want, &st, NULL);
	if (fd < 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	while (buf && len < (size_t)st.st_size &&
	       (n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;	/* a file grown since fstat is read no further */
	close(fd);
	if (buf)
		j = json_loadb(buf, len, 0, NULL);
	free(buf);
	return j;
}

/* containers/storage's list: is id's entry named name? 1, 0, -1 not listed */
static int podman_named(const char *root, const char *driver, const char *id, const char *name)
{
	char path[128];
	json_t *all, *c, *names, *v;
	size_t i, k;
	int yes = -1;

	snprintf(path, sizeof(path), "var/lib/containers/storage/%s-containers/containers.json",
		 driver);
	all = load(root, path);
	json_array_foreach(all, i, c) {
		if (!json_is_string(json_object_get(c, "id")) ||
		    strcmp(json_string_value(json_object_get(c, "id")), id))
			continue;
		names = json_object_get(c, "names");
		yes = 0;
		json_array_foreach(names, k, v)
			if (json_is_string(v) && !strcmp(json_string_value(v), name))
				yes = 1;
		break;
	}
	json_decref(all);
	return yes;
}

static int docker_named(const char *root, const char *id, const char *name)
{
	char path[160];
	json_t *c;
	const char *n;
	int yes;

	snprintf(path, sizeof(path), "var/lib/docker/containers/%s/config.v2.json", id);
	c = load(root, path);
	n = json_string_value(json_object_get(c, "Name"));
	/* Docker keeps the name with a leading '/' */
	yes = !n ? -1 : n[0] == '/' && !strcmp(n + 1, name);
	json_decref(c);
	return yes;
}

int sp_container_named(const char *root, const char *id, const char *name)
{
	int r[3];
	size_t i;

	/* the id becomes part of a path: its exact form only */
	if (strlen(id) != 64 || !*name)
		return -1;
	for (i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", id[i]))
			return -1;
	r[0] = podman_named(root, "overlay", id, name);
	r[1] = r[0] == 1 ? 1 : podman_named(root, "vfs", id, name);
	r[2] = r[1] == 1 ? 1 : docker_named(root, id, name);
	if (r[0] == 1 || r[1] == 1 || r[2] == 1)
		return 1;
	return r[0] == 0 || r[1] == 0 || r[2] == 0 ? 0 : -1;
}
