// SPDX-License-Identifier: MIT
/* Diagnostics: "sp-x: error: ..." on stderr, and out-of-memory handling. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "sp.h"

const char *sp_progname = "stackpulse";
int sp_verbose;

/*
 * Messages name others' files, processes and symbols: the message is written
 * in its text form (escape.h), so that no name can move the cursor, clear the
 * terminal or start a line of its own. Built in arrays on the stack, not in
 * an sp_buf: "out of memory" itself is said through here.
 */
static void vreport(const char *prefix, const char *fmt, va_list ap, int errnum)
{
	char msg[4096], buf[4096];
	int n, m;

	m = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (m < 0)
		m = 0;
	if ((size_t)m >= sizeof(msg))
		m = sp_esc_text_trim(msg, sizeof(msg) - 1);	/* whole characters */
	if (!*prefix && m && msg[m - 1] == '\n')
		m--;		/* a library's message: its line, our newline */
	/* One write per message, so messages of parallel tools do not interleave. */
	n = snprintf(buf, sizeof(buf), "%s: %s", sp_progname, prefix);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	sp_esc_text(buf + n, sizeof(buf) - n, msg, m, 0);
	n += strlen(buf + n);
	if (errnum)
		n += snprintf(buf + n, sizeof(buf) - n, ": %s", strerror(errnum));
	if ((size_t)n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	fflush(stdout);
	fwrite(buf, 1, n, stderr);
}

int sp_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap, 0);
	va_end(ap);
	return -1;
}

int sp_error_errno(const char *fmt, ...)
{
	int errnum = errno;
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap, errnum);
	va_end(ap);
	errno = errnum;
	return -1;
}

void sp_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap, 0);
	va_end(ap);
}

enum sp_say sp_tally_next(struct sp_tally *t, unsigned int named, uint64_t pos)
{
	t->n++;
	if (t->said > named) {
		if (t->n - t->said == 1)
			t->first_unsaid = pos;
		return SP_SAY_NOTHING;
	}
	return t->said++ ? SP_SAY_SHORT : SP_SAY_FULL;
}

void sp_tally_quiet(struct sp_tally *t, uint64_t pos)
{
	if (++t->n - t->said == 1)
		t->first_unsaid = pos;
}

enum sp_say sp_say_next(struct sp_tally *t, const char *what)
{
	enum sp_say say = sp_tally_next(t, SP_SAY_NAMED, 0);

	if (say == SP_SAY_NOTHING && sp_tally_unsaid(t) == 1)
		sp_warn("more %s are not named here (each has its runtime record in the spool)",
			what);
	return say;
}

void sp_info(const char *fmt, ...)
{
	va_list ap;

	if (!sp_verbose)
		return;
	va_start(ap, fmt);
	vreport("", fmt, ap, 0);
	va_end(ap);
}

void sp_vmessage(const char *fmt, va_list ap)
{
	vreport("", fmt, ap, 0);
}

noreturn void sp_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap, 0);
	va_end(ap);
	exit(SP_EXIT_FATAL);
}

void *sp_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		sp_die("out of memory (%zu bytes)", n);
	return p;
}

void *sp_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		sp_die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *sp_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		sp_die("out of memory (%zu bytes)", n);
	return p;
}

char *sp_xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		sp_die("out of memory");
	return d;
}

void sp_grow(void *pp, size_t *cap, size_t n, size_t sz)
{
	void **p = pp;
	size_t c = *cap;

	if (n <= c)
		return;
	if (c < 16)
		c = 16;
	while (c < n && c <= SIZE_MAX / 2)
		c *= 2;
	if (c < n || (sz && c > SIZE_MAX / sz))
		sp_die("out of memory (%zu x %zu bytes)", n, sz);
	*p = sp_xrealloc(*p, c * sz);
	*cap = c;
}
