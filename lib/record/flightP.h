/* SPDX-License-Identifier: MIT */
/* flightP.h - what flight.c and flight_dir.c share: the files of the
 * output directory, oldest first, and their cap. */
#ifndef STACKPULSE_FLIGHTP_H
#define STACKPULSE_FLIGHTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Names of our files in the directory, oldest first. */
struct sp_names {
	char **v;
	size_t n, cap;
	uint64_t top;	/* the highest sequence number sp_names_scan() found */
	bool cut;	/* the scan stopped at its bound: names were not seen */
};

/* Directory entries a scan looks at, at most (every name, ours or not):
 * the directory is ours, but a full one would hold sp-record's start
 * for as long as it took to list. Twice --keep's highest. */
#define SP_NAMES_SCAN_MAX	2000000u

/* Digits of a file's sequence number at most (below 10^18: no overflow). */
#define SP_NAME_SEQ_DIGITS_MAX	18

/*
 * Our files in dirfd, oldest first: segments ("segment-", segdir.h) or
 * dumps ("dump-", sp_dump_name_parse()) by their sequence number; dumps
 * named before dumps had one are older than every numbered one, by the
 * time in their names, then by when the file was last written (dumps of
 * one second). Other names are left out (and never deleted). 0 or -1.
 */
int sp_names_scan(struct sp_names *l, int dirfd, const char *prefix);
/* The same, looking at max entries at most: l->cut when there were more
 * (then the names kept are some of ours, not all). */
int sp_names_scan_max(struct sp_names *l, int dirfd, const char *prefix, size_t max);

/*
 * A dump's file name: dump-SEQ-YYYYmmddTHHMMSSZ-TRIGGER.sp (SEQ as a
 * segment's: six digits or more, from 1), or one of an earlier
 * sp-record, dump-YYYYmmddTHHMMSSZ-TRIGGER[-N].sp (*seq = 0). stamp:
 * 17 bytes, the time in the name. 0, or -1 when it is neither.
 */
int sp_dump_name_parse(const char *name, uint64_t *seq, char *stamp);
void sp_names_add(struct sp_names *l, const char *name);
/* Delete the oldest until at most keep are left (0: keep all). */
void sp_names_trim(struct sp_names *l, int dirfd, unsigned int keep);
void sp_names_release(struct sp_names *l);
/* Create name in dirfd: exclusive, not through a symlink, 0600. */
int sp_create_in(int dirfd, const char *name);

#endif
