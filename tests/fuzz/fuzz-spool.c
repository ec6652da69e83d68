// SPDX-License-Identifier: MIT
/*
 * Fuzz the spool decoder: the input is a spool (the magic is put in front
 * when it is missing, so that mutations stay spools), read through a pipe
 * and checked by roundtrip.h: what was decoded encodes to a spool that
 * decodes and re-encodes to itself, also by way of JSON lines.
 * Seeds: tests/fuzz/corpus/fuzz-spool/.
 */
#include "roundtrip.h"
#include "spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t magic[] = SP_SPOOL_MAGIC;
	bool has = size >= SP_SPOOL_MAGIC_LEN && !memcmp(data, magic, SP_SPOOL_MAGIC_LEN);

	rt_check(data, size, magic, has ? 0 : SP_SPOOL_MAGIC_LEN);
	return 0;
}
