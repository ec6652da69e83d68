// SPDX-License-Identifier: MIT
/* Demangling of C++ and Rust names with libiberty. */
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "demangle.h"

char *sp_demangle(const char *name)
{
	/* Every mangled form libiberty knows starts with '_' (_Z, _R, __Z). */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R' && name[1] != '_'))
		return NULL;
	/* DMGL_AUTO tries Rust first: legacy Rust names are valid _Z names too. */
	return cplus_demangle(name, DMGL_AUTO | DMGL_PARAMS | DMGL_ANSI);
}

const char *sp_demangle_cached(const char *name, char **slot)
{
	if (!*slot) {
		*slot = sp_demangle(name);
		if (!*slot)
			*slot = (char *)name;
	}
	return *slot;
}
