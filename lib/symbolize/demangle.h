/* SPDX-License-Identifier: MIT */
/*
 * demangle.h - C++ (Itanium ABI) and Rust (legacy and v0) symbol names made
 * readable, through libiberty's cplus_demangle.
 */
#ifndef STACKPULSE_DEMANGLE_H
#define STACKPULSE_DEMANGLE_H

/*
 * The demangled form of name (with parameter lists, as c++filt prints it),
 * malloc()ed: the caller free()s it. NULL when name is not a mangled name
 * (plain C names, "main") or is malformed.
 */
char *sp_demangle(const char *name);

/*
 * Demangle once and keep the result in *slot (owned by the caller, who
 * free()s it unless it equals name). Returns the readable name: *slot, or
 * name itself when it is not mangled.
 */
const char *sp_demangle_cached(const char *name, char **slot);

#endif
