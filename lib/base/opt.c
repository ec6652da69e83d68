// SPDX-License-Identifier: MIT
/* The options every tool shares (-o, -v, --color), as an argp child. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sp.h"

enum { OPT_COLOR = 0x1000 };

#ifndef SP_VERSION
#define SP_VERSION "unknown"
#endif
/* argp's --version (-V) in every tool: the commit it was built from */
const char *argp_program_version = "StackPulse " SP_VERSION;

static const struct argp_option common_options[] = {
	{ "output", 'o', "FILE", 0, "Write to FILE instead of standard output", -1 },
	{ "verbose", 'v', NULL, 0, "Say more on standard error (repeat for more)", -1 },
	{ "color", OPT_COLOR, "WHEN", OPTION_ARG_OPTIONAL,
	  "Colour output: auto (default: only on a terminal), always, never", -1 },
	{ NULL, 'h', NULL, OPTION_HIDDEN, NULL, -1 },
	{ 0 }
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Whether an existing file st at path is another user's in a directory
 * others may write in with the sticky bit (/tmp): what root writes there
 * would be that user's to read (they made the name first). The kernel's
 * protected_regular=2 rule, which a machine may not set.
 */
static bool others_in_shared_dir(const char *path, const struct stat *st)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat ds;
	size_t n;

	if (st->st_uid == geteuid())
		return false;
	n = slash ? (size_t)(slash - path) : 0;
	if (n >= sizeof(dir))
		return true;	/* (no path this long is ours to check) */
	if (!slash)
		strcpy(dir, ".");
	else if (!n)
		strcpy(dir, "/");
	else
		memcpy(dir, path, n), dir[n] = 0;
	if (stat(dir, &ds))
		return false;
	return (ds.st_mode & S_ISVTX) && (ds.st_mode & (S_IWOTH | S_IWGRP)) &&
	       st->st_uid != ds.st_uid;
}

/* A line on stderr, as every message (not only with -v). */
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sp_vmessage(fmt, ap);
	va_end(ap);
}

/*
 * A FIFO at path with no reader yet (open gave ENXIO): another user's in
 * a directory others may write in is refused at once (-2, said: one
 * planted in /tmp would hold the tool); one's own is waited for, as a
 * writer of a FIFO waits, but SP_FIFO_WAIT_MS at most (said after a
 * second), then ENXIO. Opened as the first open was (how), so the checks
 * after it hold for what is opened in the end.
 */
static int fifo_wait_reader(const char *path, int how)
{
	struct stat st;
	int fd, ms;

	if (!lstat(path, &st) && S_ISFIFO(st.st_mode) && others_in_shared_dir(path, &st)) {
		sp_error("refusing to write '%s': it is another user's FIFO (uid %u) in a "
			 "directory others may write in (remove it, or give another name)", path,
			 (unsigned)st.st_uid);
		return -2;
	}
	for (ms = 0; ms < SP_FIFO_WAIT_MS; ms += 10) {
		if (ms == 1000)
			say("waiting for a reader of the FIFO '%s' (up to %d s)", path,
					SP_FIFO_WAIT_MS / 1000);
		usleep(10000);
		fd = open(path, how);
		if (fd >= 0 || errno != ENXIO)
			return fd;
	}
	errno = ENXIO;
	return -1;
}

int sp_output_open(const char *path, bool keep)
{
	const int how = O_WRONLY | O_CLOEXEC | O_NOCTTY;
	struct stat ln, st;
	bool followed = false;
	int fd = open(path, how | O_CREAT | O_EXCL | O_NOFOLLOW, 0666), fl;

	if (fd >= 0 || errno != EEXIST)
		return fd;
	fd = open(path, how | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ENXIO)
		fd = fifo_wait_reader(path, how | O_NOFOLLOW | O_NONBLOCK);
	if (fd == -2)
		return -2;
	if (fd < 0 && errno == ELOOP && !lstat(path, &ln) && S_ISLNK(ln.st_mode) &&
	    (ln.st_uid == 0 || ln.st_uid == geteuid())) {
		fd = open(path, how | O_CREAT | O_NONBLOCK, 0666);
		followed = true;
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st)) {
		fl = errno;
		close(fd);
		errno = fl;
		return -1;
	}
	if (!followed && others_in_shared_dir(path, &st)) {
		sp_error("refusing to write '%s': it is another user's file (uid %u) in a "
			 "directory others may write in: what is written would be theirs to "
			 "read (remove it, or give another name)", path, (unsigned)st.st_uid);
		close(fd);
		return -2;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	if (!keep && S_ISREG(st.st_mode) && ftruncate(fd, 0)) {
		fl = errno;
		close(fd);
		errno = fl;
		return -1;
	}
	return fd;
}

static error_t parse_common(int key, char *arg, struct argp_state *state)
{
	struct sp_common_opts *o = state->input;
	const char *slash;

	switch (key) {
	case ARGP_KEY_INIT:
		slash = strrchr(program_invocation_name, '/');
		sp_progname = slash ? slash + 1 : program_invocation_name;
		break;
	case 'o':
		o->out_path = arg;
		break;
	case 'v':
		sp_verbose++;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case OPT_COLOR:
		if (!arg || !strcmp(arg, "auto"))
			o->color_mode = 0;
		else if (!strcmp(arg, "always"))
			o->color_mode = 1;
		else if (!strcmp(arg, "never"))
			o->color_mode = 2;
		else
			argp_error(state, "invalid --color '%s': use auto, always or never", arg);
		break;
	case ARGP_KEY_SUCCESS:
		if (!o)
			break;
		if (o->dir_ok && o->out_path && *o->out_path &&
		    (o->out_path[strlen(o->out_path) - 1] == '/' || is_dir(o->out_path))) {
			o->out_dir = o->out_path;
			o->out_path = NULL;
		}
		if (o->dir_needed && !o->out_dir)
			argp_error(state, "%s%s%s%s", o->dir_needed, o->out_path ? " ('" : "",
				   o->out_path ? o->out_path : "",
				   o->out_path ? "' is not a directory)" : "");
		if (o->out_path && strcmp(o->out_path, "-")) {
			int fd = sp_output_open(o->out_path, o->out_kept);

			o->out = fd >= 0 ? fdopen(fd, "w") : NULL;
			if (!o->out) {
				if (fd == -2)
					;	/* said */
				else if (errno == ELOOP)
					sp_error("cannot open '%s' for writing: it is a symbolic "
						 "link (give the file it names)", o->out_path);
				else if (errno == ENXIO)
					sp_error("cannot open '%s' for writing: a FIFO no one read "
						 "in %d s (start its reader first)", o->out_path,
						 SP_FIFO_WAIT_MS / 1000);
				else
					sp_error_errno("cannot open '%s' for writing", o->out_path);
				exit(SP_EXIT_FATAL);
			}
		} else {
			o->out = stdout;
		}
		o->out_is_tty = isatty(fileno(o->out));
		o->color = o->color_mode == 1 || (o->color_mode == 0 && o->out_is_tty &&
						  !getenv("NO_COLOR"));
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_common_argp = {
	.options = common_options,
	.parser = parse_common,
};

int sp_output_begin(const struct sp_common_opts *o)
{
	struct stat st;

	if (!o->out_kept || !o->out || o->out == stdout)
		return 0;
	if (fstat(fileno(o->out), &st) == 0 && S_ISREG(st.st_mode) &&
	    ftruncate(fileno(o->out), 0))
		return sp_error_errno("cannot empty '%s' for the new recording", o->out_path);
	return 0;
}

int sp_close_output(struct sp_common_opts *o, int status)
{
	FILE *f = o->out ? o->out : stdout;
	int failed;

	failed = fflush(f) != 0 || ferror(f);
	if (f != stdout)
		failed |= fclose(f) != 0;
	if (failed) {
		sp_error_errno("cannot write '%s'", o->out_path && f != stdout ? o->out_path : "<stdout>");
		return SP_EXIT_FATAL;
	}
	return status;
}

/* argp's exit status for usage errors. */
__attribute__((constructor)) static void set_usage_status(void)
{
	argp_err_exit_status = SP_EXIT_USAGE;
}
