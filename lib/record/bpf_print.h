/* SPDX-License-Identifier: MIT */
/*
 * bpf_print.h - libbpf's messages, for the whole process. libbpf keeps one
 * print callback, global; the BPF objects load on several threads at once
 * (the perf source's, the spans', the events'), so a loader that swapped
 * the callback to hush its own expected failures hushed, or got back after
 * it, another thread's messages. One callback is installed once; a loader
 * that expects failures hushes its own thread only.
 */
#ifndef STACKPULSE_RECORD_BPF_PRINT_H
#define STACKPULSE_RECORD_BPF_PRINT_H

#include <stdarg.h>
#include <stdbool.h>

#include <bpf/libbpf.h>

/* Install the callback: once, whoever calls first (any thread). */
void sp_bpf_print_init(void);
/* Hush libbpf on this thread (on), or let it speak again: returns what
 * the thread had before, to be given back. Installs the callback. */
bool sp_bpf_print_quiet(bool on);
/* The callback: nothing from a hushed thread; else libbpf's warnings
 * with -v, all its messages with -vv (docs/sp-record.md), its names, paths
 * among them, escaped as ours are (sp_vmessage). */
int sp_bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap);

#endif
