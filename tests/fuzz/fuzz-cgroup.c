// SPDX-License-Identifier: MIT
/*
 * Fuzz the container a cgroup path names (lib/base/cgroup.c): the path
 * comes from the kernel, its parts from whoever named the unit or slice.
 * The input is the path, in a buffer of exactly its size (no NUL after it).
 * A runtime is given exactly when 1 is returned; a container id is 64
 * lowercase hex digits of the input or a ".service" unit of it; a pod is 32
 * or 36 characters. Nothing may read past the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"

static int hex64(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_cgroup_owner o;
	char *path = malloc(size ? size : 1);
	size_t n;
	int ret;

	if (!path)
		return 0;
	memcpy(path, data, size);
	ret = sp_cgroup_owner(path, size, &o);
	if (ret != (o.runtime != NULL))
		abort();
	n = strlen(o.id);
	if (n && !memmem(path, size, o.id, n))
		abort();
	if (n && strcmp(o.runtime, "systemd") ? !hex64(o.id) :
	    n && (n <= 8 || strcmp(o.id + n - 8, ".service")))
		abort();
	n = strlen(o.pod);
	if (n && n != 32 && n != 36 && !hex64(o.pod))
		abort();
	if (!ret && (o.id[0] || o.pod[0]))
		abort();
	free(path);
	return 0;
}
