/* SPDX-License-Identifier: MIT */
/*
 * safefile.h - opening and creating files where another user may have put
 * something: a JIT perf map in /tmp, a shared archive or cache directory,
 * a path named in a spool. sp-record runs as root; what it opens on
 * another's behalf must not make it follow a link, block on a FIFO, open a
 * device, read without end, or write through someone else's link.
 *
 * The rules (docs/security.md):
 *  - A file is opened as O_PATH first and checked with fstat() before it
 *    is opened for reading (through /proc/self/fd): a FIFO, a device or a
 *    socket is refused without ever being opened. On request a symbolic
 *    link is refused rather than followed, the owner must be root or a
 *    given user, others must not be able to write it, and its size is
 *    bounded. Reading is bounded in bytes and in line length.
 *  - A directory is trusted when it and every directory above it is owned
 *    by root or by the effective user and is not writable by group or
 *    others, unless it is sticky (as /tmp). A symbolic link on the way is
 *    followed only when root or the effective user owns it (its directory
 *    is trusted already); the link's target is checked the same way.
 *  - A file is created under a temporary name with O_CREAT|O_EXCL|
 *    O_NOFOLLOW in a trusted directory, written, fsync()ed and renamed into
 *    place with renameat().
 *
 * Functions return a descriptor or 0, or -1 with errno set; nothing is
 * reported except by sp_cache_dir_open(). A refusal (a check failed, not a
 * system call) sets errno to EPERM and says why.
 */
#ifndef STACKPULSE_SAFEFILE_H
#define STACKPULSE_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What sp_safe_open() requires of a file besides being a regular file. */
#define SP_SAFE_NOFOLLOW	(1u << 0)	/* the last component is not a symbolic link */
#define SP_SAFE_OWNER		(1u << 1)	/* owned by root or by .owner */
#define SP_SAFE_PRIVATE		(1u << 2)	/* not writable by group or others */

struct sp_safe_want {
	unsigned int flags;	/* SP_SAFE_* */
	uid_t owner;		/* with SP_SAFE_OWNER; (uid_t)-1: root only */
	uint64_t max_size;	/* a larger file is refused; 0: any size */
};

/*
 * Open path (relative to dirfd, or AT_FDCWD) read-only, O_NONBLOCK and
 * O_NOCTTY, if it is a regular file that meets w (NULL: only that). A file
 * owned by root while .owner is another user must have one link (not a hard
 * link made to a root file). *st (may be NULL) gets the file's status
 * whenever it could be read, also on refusal; *why (may be NULL) a static
 * reason on refusal (errno EPERM), NULL when a system call failed. Returns
 * the descriptor.
 */
int sp_safe_open(int dirfd, const char *path, const struct sp_safe_want *w, struct stat *st,
		 const char **why);

/* Bounds and results of sp_safe_read_lines(). */
struct sp_safe_lines {
	uint64_t max_bytes;	/* read no further; 0: no bound */
	size_t max_line;	/* a longer line (without its newline) is skipped */
	/* results */
	uint64_t bytes;		/* read */
	uint64_t lines;		/* given to fn */
	uint64_t long_lines;	/* skipped */
	bool cut;		/* stopped at max_bytes with more to read */
};

/*
 * Call fn for each line of fd (without its newline, NUL-terminated, len
 * bytes; a last line without a newline counts), never holding more than
 * max_line + 1 bytes of one. Returns 0 at the end or the bound, fn's
 * non-zero return value, or -1 with errno set on a read error.
 */
int sp_safe_read_lines(int fd, struct sp_safe_lines *l,
		       int (*fn)(void *ctx, char *line, size_t len), void *ctx);

/* Create missing directories (mode, less the umask) on the way. */
#define SP_SAFE_MKDIR	(1u << 0)

/*
 * Open directory path as an O_PATH descriptor for the *at() calls,
 * checking every directory from / (or from dirfd, which the caller
 * trusts; AT_FDCWD: the working directory's path) as the rules above say.
 * On failure why (size bytes, may be NULL) names the directory and what is
 * wrong with it.
 */
int sp_safe_dir(int dirfd, const char *path, unsigned int flags, mode_t mode, char *why,
		size_t size);

/* Is a directory with this status trusted (the rule above)? NULL, or a
 * static reason. */
const char *sp_safe_dir_check(const struct stat *st);

/* A file being written under a temporary name in a trusted directory. */
struct sp_safe_tmp {
	int dirfd;		/* not owned */
	int fd;
	char name[64];		/* ".sp-tmp.PID.RANDOM" */
};

/* Create the temporary in dirfd (O_EXCL, O_NOFOLLOW, mode less the umask). */
int sp_safe_tmp_open(struct sp_safe_tmp *t, int dirfd, mode_t mode);
/* fsync(), close() and rename it to name in the same directory; on failure
 * it is removed. */
int sp_safe_tmp_commit(struct sp_safe_tmp *t, const char *name);
/* Close and remove it. errno is kept. */
void sp_safe_tmp_abort(struct sp_safe_tmp *t);

/* write() all of p, going on after EINTR and short writes. 0 or -1. */
int sp_safe_write_all(int fd, const void *p, size_t n);
/* The whole of name in dirfd, through a temporary. 0 or -1. */
int sp_safe_write_file(int dirfd, const char *name, const void *p, size_t n, mode_t mode);

/*
 * The cache directory of sp-record and sp-symbolize: $SP_CACHE_DIR (set
 * and empty: no cache), else $XDG_CACHE_HOME/stackpulse, else
 * $HOME/.cache/stackpulse (XDG_CACHE_HOME and HOME only when absolute),
 * with "/sub" appended when sub is not NULL. A new string (caller free()s
 * it), or NULL when there is none (errno ENOENT).
 */
char *sp_cache_dir(const char *sub);

/*
 * sp_safe_dir() for a cache directory (create: make the missing ones,
 * 0700). A directory refused by the rules is reported once per process,
 * "cache directory 'DIR' not used: WHY"; other failures (ENOENT, EACCES)
 * are left to the caller.
 */
int sp_cache_dir_open(const char *dir, bool create);

#endif
