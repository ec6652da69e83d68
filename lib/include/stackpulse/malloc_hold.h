/* SPDX-License-Identifier: MIT */
/*
 * malloc_hold.h - freed memory kept while sp-record starts.
 *
 * sp-record's start parses the kernel's BTF (5.4 MB here, more in its
 * index) once per BPF object, and frees it in between; glibc gives a block
 * that large back to the kernel at free(), so each parse touches fresh
 * zeroed pages. A page fault costs about 10 us on the virtual machines it
 * runs on (31 ms of system time for one parse's 2,800, against 4 ms for
 * the whole parse in memory already touched). While held, freed memory
 * stays in the process for the next parse; once started, the recorder lets
 * it go and malloc goes back to sizes like glibc's own.
 *
 * The price: what lives on is scattered over the pages the parses used,
 * which stay resident (measured: about 10 MB more RSS for the rest of a
 * recording). Worth it for the many short recordings of scripts and CI,
 * not for the always-on ones (-o DIR), which start once.
 *
 *	sp_malloc_hold_begin();		before the first BPF object loads
 *	... sources created, loaded, attached ...
 *	sp_malloc_hold_end();		freed memory back to the kernel
 *
 * Process-wide (mallopt), for a program's start only; nothing without glibc.
 */
#ifndef STACKPULSE_MALLOC_HOLD_H
#define STACKPULSE_MALLOC_HOLD_H

void sp_malloc_hold_begin(void);
void sp_malloc_hold_end(void);

#endif
