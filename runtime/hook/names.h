/* SPDX-License-Identifier: MIT */
/*
 * names.h - the names a runtime hook (stackpulse_hook.so for Ruby,
 * _stackpulse_hook for Python) hands to sp-record with each span marker.
 *
 * A hook sees the runtime's objects (a class, a method id, a code object);
 * sp-record wants their names. Reading three strings from user memory per
 * event in BPF cost more than the rest of a span, so the hook interns each
 * combination of objects once, as C strings of its own that it never frees
 * or changes, and passes their addresses. An address then means one string
 * for the life of the process (and of its fork children), which is what
 * lets BPF and sp-record cache a string by its address alone: the bytes are
 * read once, when the name is made (marker rt__name), never per event.
 *
 * The runtime's lock (Ruby's GVL, CPython's GIL) serialises the callers.
 */
#ifndef SP_RT_NAMES_H
#define SP_RT_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_rt_name {
	uintptr_t key[3];	/* the runtime's objects it was made for */
	const char *str[3];	/* class (or NULL), method, file: NUL-terminated */
	int line;		/* a line the hook keeps with the name */
	unsigned int told;	/* sp_rt_names_heard when last told (rt__name) */
};

struct sp_rt_names {
	struct sp_rt_name **slot;	/* open addressing; NULL = empty */
	size_t mask, n;
};

static inline size_t sp_rt_names_hash(uintptr_t a, uintptr_t b, uintptr_t c)
{
	uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull) ^ (c * 0xc2b2ae3d27d4eb4full));

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (size_t)h;
}

/* The name made for these objects, or NULL: the hot path, a probe or two. */
static inline struct sp_rt_name *sp_rt_names_find(const struct sp_rt_names *t, uintptr_t a,
						  uintptr_t b, uintptr_t c)
{
	size_t i;

	if (!t->slot)
		return NULL;
	for (i = sp_rt_names_hash(a, b, c) & t->mask; t->slot[i]; i = (i + 1) & t->mask) {
		struct sp_rt_name *n = t->slot[i];

		if (n->key[0] == a && n->key[1] == b && n->key[2] == c)
			return n;
	}
	return NULL;
}

/*
 * A name is told to a recorder by the rt__name marker, whose BPF program
 * reads its strings (still resident: just written). A name made while no
 * recorder listened (sp-record -p, or -a finding a process, came later)
 * was told no one: its marks carried addresses that sp-record then read
 * from the process, and a process gone by then (a short-lived one, a
 * container's) left its spans unnamed. So each name is told again at its
 * first use after a recorder came: the marker's own byte says whether a
 * uprobe is on it (ring.h, sp_rt_probed()), each change to "on" is a new
 * hearing, and a name not told in this one is told before its mark.
 */
extern const unsigned char sp_rt_name_site[];	/* the rt__name marker's */
extern unsigned int sp_rt_names_heard;		/* hearings so far */
extern bool sp_rt_names_listened;		/* the marker's state last seen */

void sp_rt_name_tell(struct sp_rt_name *n);

/* At each use of n (the runtime's lock held): told, if a recorder listens
 * that was not told it. A byte load and two compares. */
static inline void sp_rt_name_use(struct sp_rt_name *n)
{
	bool on = *(const volatile unsigned char *)sp_rt_name_site == 0xcc;

	if (__builtin_expect(on != sp_rt_names_listened, 0)) {
		sp_rt_names_listened = on;
		sp_rt_names_heard += on;
	}
	if (on && n->told != sp_rt_names_heard)
		sp_rt_name_tell(n);
}

/*
 * Make the name of objects (a, b, c): copies of the strings s[i] of len[i]
 * bytes (s[i] NULL: none), cut at SP_RT_NAME_MAX bytes. Replaces an older
 * name of the same objects in the table (the old one stays valid: it is
 * never freed). NULL when out of memory: the caller sends no span then.
 */
#define SP_RT_NAME_MAX	127	/* what sp-record reads of a string */
struct sp_rt_name *sp_rt_names_add(struct sp_rt_names *t, uintptr_t a, uintptr_t b,
				   uintptr_t c, const char *const s[3], const size_t len[3],
				   int line);

#endif
