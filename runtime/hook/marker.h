/* SPDX-License-Identifier: MIT */
/*
 * marker.h - the USDT markers of the runtime hooks, provider "stackpulse":
 *
 *	rb__call, rb__return	a Ruby method starts, returns (or unwinds)
 *	py__call, py__return	a Python function starts, returns (or unwinds)
 *	rt__name		a name was made, or is used the first time
 *				since a recorder came (names.h): its strings, to
 *				be read once, now, while they are surely resident
 *	rb__fiber		a Ruby thread switched fibers: (from, to, fresh)
 *	py__audit		a Python audit event: (event, its first argument
 *				when a str), for Pythons without the audit probe
 *
 * Arguments (class, method, file, line): the three strings of a struct
 * sp_rt_name and a line, in %rdi, %rsi, %rdx and %ecx; the note says so
 * ("8@%rdi 8@%rsi 8@%rdx -4@%ecx", SP_SPANS_HOOK_ARGS in bpf_spans.h) and
 * sp-record attaches a BPF program that reads the registers directly. Each
 * marker is <sys/sdt.h>'s 1-byte nop (a breakpoint trap per hit), not the
 * 5-byte nop of <stackpulse/span.h>: sp-record attaches the hooks'
 * markers once per hook file for every process that maps it, so that a
 * fork child is covered without being held, and Linux 6.18 turns a
 * uprobe on a 5-byte nop into a call of a trampoline page that a fork
 * child does not inherit (it dies of SIGSEGV at its first marker). With
 * span rings (what sp-record's commands get) few marks are markers.
 *
 * x86-64 only: the hooks are not built elsewhere, and the runtimes' own
 * probes are used there.
 */
#ifndef SP_RT_MARKER_H
#define SP_RT_MARKER_H

#include <sys/sdt.h>

#if !defined(__x86_64__)
#error "the runtime hooks are built for x86-64 only"
#endif

#define SP_RT_MARK(probe, cls, method, file, line)					\
	__asm__ __volatile__(STAP_PROBE_ASM(stackpulse, probe,				\
					    8@%%rdi 8@%%rsi 8@%%rdx -4@%%ecx)		\
			     : : "D"(cls), "S"(method), "d"(file), "c"(line))

/* A marker at the hidden symbol label, for sp_rt_probed(label) (ring.h):
 * in a function of one body only (noinline, noclone), one label. */
#define SP_RT_MARK_AT(label, probe, cls, method, file, line)				\
	__asm__ __volatile__(".globl " #label "\n\t.hidden " #label "\n" #label ":\n\t"	\
			     STAP_PROBE_ASM(stackpulse, probe,					\
					    8@%%rdi 8@%%rsi 8@%%rdx -4@%%ecx)		\
			     : : "D"(cls), "S"(method), "d"(file), "c"(line))

#endif
