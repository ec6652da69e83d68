// SPDX-License-Identifier: MIT
/*
 * The name of a method span (record.h): one rule for every tool that shows
 * one (sp-tree and its summary, sp-flame, the exports, the triggers), so
 * that a name a user reads in one is the name another matches.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "record.h"

/* Ruby names a singleton class "#<Class:Foo>" (the hook gives it so for
 * a singleton method): its methods are Foo's own, "Foo.build". */
static bool singleton_of(const char *klass, const char **of, size_t *len)
{
	static const char head[] = "#<Class:";
	size_t n = strlen(klass);

	if (n <= sizeof(head) || strncmp(klass, head, sizeof(head) - 1) || klass[n - 1] != '>')
		return false;
	*of = klass + sizeof(head) - 1;
	*len = n - sizeof(head);
	return true;
}

size_t sp_span_name(char *out, size_t size, uint64_t runtime, const char *klass,
		    const char *method)
{
	const char *of;
	size_t len;
	int n;

	if (!method || !*method)
		method = "?";
	if (!klass || !*klass)
		n = snprintf(out, size, "%s", method);
	else if (runtime == SP_RT_RUBY && singleton_of(klass, &of, &len))
		n = snprintf(out, size, "%.*s.%s", (int)len, of, method);
	else
		n = snprintf(out, size, "%s%s%s", klass, runtime == SP_RT_RUBY ? "#" : ".",
			     method);
	return n < 0 ? 0 : (size_t)n;
}
