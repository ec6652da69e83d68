/* SPDX-License-Identifier: MIT */
/*
 * debuginfod.h - separate debug files fetched by build-id from the servers
 * that DEBUGINFOD_URLS names (libdebuginfod), for the symbolizer's images
 * whose debug information is nowhere on the machine.
 *
 * Build-ids are asked for in a batch (sp_dbgd_want() for each, then
 * sp_dbgd_fetch()), by up to SP_DBGD_THREADS clients at a time, each fetch
 * bounded by a timeout; a build-id is asked for once per run, whatever
 * the answer. The files go to a cache directory, "debuginfod" in the
 * symbolizer's index cache, created 0700 and checked as safefile.h says
 * (sp_cache_dir_open()); a file from it is used only if it is a regular
 * file the effective user owns that nobody else can write. A file already
 * there is used without asking the servers. A build-id that could not be
 * fetched is said once, naming the module.
 */
#ifndef STACKPULSE_SYMBOLIZE_DEBUGINFOD_H
#define STACKPULSE_SYMBOLIZE_DEBUGINFOD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SP_DBGD_THREADS		4
#define SP_DBGD_TIMEOUT_NS	(90 * 1000000000ull)	/* libdebuginfod's own default */

struct sp_dbgd;

/*
 * A fetcher if DEBUGINFOD_URLS names a server, else NULL. cache_dir: the
 * symbolizer's index cache (NULL: libdebuginfod's own cache,
 * $DEBUGINFOD_CACHE_PATH or ~/.cache/debuginfod_client); timeout_ns: per
 * file, 0 for $DEBUGINFOD_TIMEOUT (seconds) or SP_DBGD_TIMEOUT_NS;
 * progress: say on stderr how a fetch longer than a second goes.
 */
struct sp_dbgd *sp_dbgd_new(const char *cache_dir, uint64_t timeout_ns, bool progress);
void sp_dbgd_free(struct sp_dbgd *d);

/* Whether build-id has been asked for (or queued) in this run. */
bool sp_dbgd_known(struct sp_dbgd *d, const uint8_t *id, unsigned int n);
/* Queue build-id for the next sp_dbgd_fetch(); what: the module's path,
 * for messages. */
void sp_dbgd_want(struct sp_dbgd *d, const uint8_t *id, unsigned int n, const char *what);
/* Fetch every build-id queued, in parallel; failures said, once each. */
void sp_dbgd_fetch(struct sp_dbgd *d);
/*
 * The debug file of build-id, opened read-only and checked: its
 * descriptor and in *path its name (a new string), or -1. A build-id never
 * asked for is fetched now.
 */
int sp_dbgd_open(struct sp_dbgd *d, const uint8_t *id, unsigned int n, const char *what,
		 char **path);

/* "debuginfod: N fetched, N from the cache, N not fetched" if any was asked for. */
void sp_dbgd_print_stats(const struct sp_dbgd *d, FILE *out);

#endif
