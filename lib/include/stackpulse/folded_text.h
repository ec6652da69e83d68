/* SPDX-License-Identifier: MIT */
/*
 * folded_text.h - whether bytes are folded stacks ("a;b;c 12" lines), the
 * text flamegraph.pl reads: sp-flame takes such a file as input, and the
 * readers of records name it when they are given one.
 */
#ifndef STACKPULSE_FOLDED_TEXT_H
#define STACKPULSE_FOLDED_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The first n bytes of an input (its first few KB): text, not a spool or
 * JSON, whose first line ends in a space and a count. */
bool sp_looks_folded(const unsigned char *buf, size_t n);

#endif
