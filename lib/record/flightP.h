/* SPDX-License-Identifier: MIT */
/* flightP.h - what flight.c and flight_dir.c share: the files of the
 * output directory, oldest first, and their cap. */
#ifndef STACKPULSE_FLIGHTP_H
#define STACKPULSE_FLIGHTP_H

#include <stddef.h>
#include <stdint.h>

/* Names of our files in the directory, oldest first. */
struct sp_names {
	char **v;
	size_t n, cap;
};

/* The names in dirfd that start with prefix and end in ".sp", oldest
 * first: by the number and time in the name, then by when the file was
 * last written (dumps of one second). 0 or -1. */
int sp_names_scan(struct sp_names *l, int dirfd, const char *prefix);
void sp_names_add(struct sp_names *l, const char *name);
/* Delete the oldest until at most keep are left (0: keep all). */
void sp_names_trim(struct sp_names *l, int dirfd, unsigned int keep);
void sp_names_release(struct sp_names *l);
/* Create name in dirfd: exclusive, not through a symlink, 0600. */
int sp_create_in(int dirfd, const char *name);

#endif
