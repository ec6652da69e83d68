// SPDX-License-Identifier: MIT
/* The options every tool shares (-o, -v, --color), as an argp child. */
#include <errno.h>
#include <fcntl.h>
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
			/* close-on-exec: a command sp-record runs must not
			 * inherit it; not through a symbolic link another
			 * user made (in a shared directory, to a file of
			 * root's), as the kernel's protected_symlinks rule
			 * has it in sticky directories: ours or root's
			 * (/dev/stdout) are followed */
			const int how = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY |
					(o->out_kept ? 0 : O_TRUNC);
			struct stat ln;
			int fd = open(o->out_path, how | O_NOFOLLOW, 0666);

			if (fd < 0 && errno == ELOOP && !lstat(o->out_path, &ln) &&
			    S_ISLNK(ln.st_mode) && (ln.st_uid == 0 || ln.st_uid == geteuid()))
				fd = open(o->out_path, how, 0666);

			o->out = fd >= 0 ? fdopen(fd, "w") : NULL;
			if (!o->out) {
				if (errno == ELOOP)
					sp_error("cannot open '%s' for writing: it is a symbolic "
						 "link (give the file it names)", o->out_path);
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
