/* SPDX-License-Identifier: MIT */
/*
 * sp.h - what every StackPulse tool shares: exit codes, diagnostics and the
 * common command-line options (-o, -v).
 */
#ifndef STACKPULSE_SP_H
#define STACKPULSE_SP_H

#include <argp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>

/* Exit codes, listed at the end of every tool's --help. */
enum sp_exit {
	SP_EXIT_OK = 0,		/* all input processed */
	SP_EXIT_PARTIAL = 1,	/* output written, some records skipped (the first 5
				 * of a kind each named, the rest counted) */
	SP_EXIT_FATAL = 2,	/* output missing or cut short */
	SP_EXIT_USAGE = 64,	/* bad command line (argp exits with it itself) */
};

#define SP_EXIT_STATUS_DOC \
	"Exit status: 0 ok, 1 some records skipped (the first 5 of a kind each named, the rest " \
	"counted), 2 fatal, 64 usage."

/* The program name used in messages ("sp-decode"); set by sp_common_argp. */
extern const char *sp_progname;
/* Verbosity: 0 normal, 1 with -v, 2 with -vv. */
extern int sp_verbose;

/* "sp-x: error: <fmt>" on stderr; returns -1 so lib code can 'return sp_error(..)'. */
int sp_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* As sp_error() with ": <strerror(errno)>" appended. */
int sp_error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "sp-x: warning: <fmt>". */
void sp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A diagnostic many things can earn (-a's processes, the records after a
 * corrupt one): said for the first few, then only counted, so that one
 * cause gives a few lines, not one a record. *t is the caller's tally for
 * that diagnostic (zeroed to start): t->n counts every one exactly, said or
 * not, so a closing line can give the rest's number (sp_tally_unsaid()).
 */
struct sp_tally {
	uint64_t n;		/* how many earned it, said or not */
	uint64_t said;		/* how many of them were said */
	uint64_t first_unsaid;	/* the caller's position of the first not said */
};
enum sp_say { SP_SAY_FULL, SP_SAY_SHORT, SP_SAY_NOTHING };
/*
 * Count one more, at position pos (the caller's: a byte offset, a line);
 * say the first of them in full (SP_SAY_FULL), the next `named` by a short
 * line each (SP_SAY_SHORT; a caller with one form says both alike), and
 * the rest not (SP_SAY_NOTHING).
 */
enum sp_say sp_tally_next(struct sp_tally *t, unsigned int named, uint64_t pos);
/* Count one more that is not to be said whatever the count (its like was). */
void sp_tally_quiet(struct sp_tally *t, uint64_t pos);
/* How many were counted and not said: what a closing line gives. */
static inline uint64_t sp_tally_unsaid(const struct sp_tally *t)
{
	return t->n - t->said;
}
/*
 * A warning that many processes can earn (-a, a command's children): the
 * first is said in full, the next SP_SAY_NAMED by a short line naming each,
 * then once that the rest go unnamed (what names them: "spans: Rubies
 * started without ..."); the spool has each all the same.
 */
#define SP_SAY_NAMED 8
enum sp_say sp_say_next(struct sp_tally *t, const char *what);
/* "sp-x: <fmt>" when -v was given. */
void sp_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "sp-x: <fmt>" for a library's own message (libbpf's print callback), with
 * its trailing newline, if any, replaced by ours. */
void sp_vmessage(const char *fmt, va_list ap);
/* Tools only: print an error and exit(SP_EXIT_FATAL). */
noreturn void sp_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Out of memory is fatal, in the library as in the tools (docs/hacking.md):
 * these print "out of memory" and exit(SP_EXIT_FATAL); they never return
 * NULL. A size that comes from input is bounded before it is allocated, so
 * that hostile input gets a message naming it, never this exit.
 */
void *sp_xmalloc(size_t n);
void *sp_xcalloc(size_t n, size_t size);
void *sp_xrealloc(void *p, size_t n);
char *sp_xstrdup(const char *s);
/* Grow *p (of *cap elements of size sz) to hold at least n; doubles. A size
 * that overflows size_t is out of memory (fatal, as above). */
void sp_grow(void *pp, size_t *cap, size_t n, size_t sz);

/* Strict number parsing: the whole string, in [min, max]. 0 ok, -1 bad. */
int sp_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int sp_parse_uint32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* "1.5s", "200ms", "3m", "10" (seconds) -> nanoseconds. 0 ok, -1 bad. */
int sp_parse_duration(const char *s, uint64_t *ns);

/* Output format of record-writing tools. */
enum sp_format {
	SP_FORMAT_AUTO = 0,	/* spool unless stdout is a terminal, then JSON lines */
	SP_FORMAT_SPOOL,
	SP_FORMAT_JSON,
};

/* "spool" or "json" -> *out. 0 ok, -1 anything else. */
int sp_parse_format(const char *s, enum sp_format *out);

/* Options every tool takes, parsed by the argp child sp_common_argp. */
struct sp_common_opts {
	const char *out_path;	/* -o FILE; NULL or "-" = stdout */
	FILE *out;		/* opened after parsing (stdout by default) */
	bool out_is_tty;
	bool color;		/* --color=auto|always|never resolved */
	int color_mode;		/* 0 auto, 1 always, 2 never */
	bool dir_ok;		/* set by the tool: -o may name a directory */
	const char *dir_needed;	/* set by the tool: -o must, or this is the
				 * usage error (nothing opened) */
	const char *out_dir;	/* then: -o DIR (an existing directory or a path
				 * ending in '/'), not opened; out is stdout */
	bool out_kept;		/* set by the tool: -o FILE is opened, not
				 * emptied, until sp_output_begin() (a
				 * recording that never starts leaves the
				 * file it would replace as it was) */
};

extern const struct argp sp_common_argp;

/*
 * Flush and close env.common.out; a failed write turns status into
 * SP_EXIT_FATAL with a message. Returns the exit status to return from main.
 */
int sp_close_output(struct sp_common_opts *o, int status);
/*
 * A file to write (-o FILE, --command-stdout=FILE), close-on-exec (a
 * command sp-record runs must not inherit it): made when it is not there.
 * An existing one is opened without following a symbolic link another
 * user made (in a shared directory, to a file of root's; ours or root's,
 * /dev/stdout, are followed), without blocking (a FIFO with no reader:
 * one's own is waited for, SP_FIFO_WAIT_MS at most, then ENXIO), and not
 * when it is another user's in a shared sticky directory, a FIFO too
 * (said: -2); emptied unless keep. -1 with errno.
 */
int sp_output_open(const char *path, bool keep);

/* How long sp_output_open() waits for a reader of one's own FIFO. */
#define SP_FIFO_WAIT_MS	5000
/* With out_kept: empties -o FILE (a regular file) for the output about
 * to be written; 0, or -1 with a message. */
int sp_output_begin(const struct sp_common_opts *o);

/* Worst of two statuses (FATAL > PARTIAL > OK). */
static inline int sp_status_merge(int a, int b)
{
	return a > b ? a : b;
}

/* Monotonic and wall clocks in nanoseconds; the CPU time this process
 * has used, all its threads. The monotonic clock is the kernel's (its
 * perf and BPF stamps'), not our time namespace's (timens.c). */
uint64_t sp_now_mono_ns(void);
uint64_t sp_now_wall_ns(void);
uint64_t sp_now_cpu_ns(void);

/* What our time namespace adds to the kernel's CLOCK_MONOTONIC, or with
 * boottime to its CLOCK_BOOTTIME, in ns (0 in the host's namespace). */
int64_t sp_timens_offset_ns(bool boottime);

#endif
