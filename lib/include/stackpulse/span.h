/* SPDX-License-Identifier: MIT */
/*
 * span.h - mark spans in a C program for sp-record (--spans=usdt, on by
 * default). Installed as <stackpulse/span.h>; needs <sys/sdt.h> from
 * systemtap-sdt-dev at build time only, nothing at run time.
 *
 *	#include <stackpulse/span.h>
 *
 *	void handle(struct request *r)
 *	{
 *		SP_SPAN_BEGIN("handle");
 *		...
 *		SP_SPAN_END("handle");
 *	}
 *
 * Each marker is a USDT probe (provider "stackpulse", probes span__begin and
 * span__end, arguments: name, __FILE__, __LINE__): a single nop in the code
 * when nobody traces it, no semaphore, no function call, no data written.
 * On x86-64 the marker is a 5-byte nop, not <sys/sdt.h>'s 1-byte one, and
 * its arguments are in fixed registers (the probe's note says so: "8@%rdi
 * 8@%rsi -4@%edx"): Linux 6.18 and later turn a uprobe on a 5-byte nop into
 * a call at its first hit, a system call instead of a breakpoint trap, and
 * sp-record's BPF program reads the registers directly instead of decoding
 * a generic argument spec. Loading the three registers costs the untraced
 * program what <sys/sdt.h>'s operands would, no more.
 * sp-record finds the markers in the executable's ELF notes, attaches a
 * uprobe to each for the recorded processes only, and records a span start
 * or stop with the name, file and line. Begin and end must pair up on the
 * same thread, innermost first (return paths need their own SP_SPAN_END).
 * name must be a string with static storage (a literal).
 *
 * Define SP_SPAN_DISABLE before including to compile the markers out.
 */
#ifndef STACKPULSE_SPAN_H
#define STACKPULSE_SPAN_H

#if defined(SP_SPAN_DISABLE) || !defined(__has_include)
#define SP_SPAN_BEGIN(name)	((void)0)
#define SP_SPAN_END(name)	((void)0)
#elif __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#if defined(__x86_64__)
/* <sys/sdt.h> expands _SDT_NOP where a probe is written, so this holds for
 * the probes below, and for any other probe of this translation unit. */
#undef _SDT_NOP
#define _SDT_NOP	.nops 5
#endif
#if defined(__x86_64__) && !defined(__cplusplus)
/* (C++: <sys/sdt.h> has STAP_PROBE_ASM for C99 only; generic operands.) */
#define SP_SPAN_PROBE_(probe, name)						\
	__asm__ __volatile__(STAP_PROBE_ASM(stackpulse, probe, 8@%%rdi 8@%%rsi -4@%%edx) \
			     : : "D"(name), "S"(__FILE__), "d"(__LINE__))
#define SP_SPAN_BEGIN(name)	SP_SPAN_PROBE_(span__begin, name)
#define SP_SPAN_END(name)	SP_SPAN_PROBE_(span__end, name)
#else
#define SP_SPAN_BEGIN(name)	STAP_PROBE3(stackpulse, span__begin, name, __FILE__, __LINE__)
#define SP_SPAN_END(name)	STAP_PROBE3(stackpulse, span__end, name, __FILE__, __LINE__)
#endif
#else
#warning "<sys/sdt.h> not found (install systemtap-sdt-dev): span markers compiled out"
#define SP_SPAN_BEGIN(name)	((void)0)
#define SP_SPAN_END(name)	((void)0)
#endif

#endif
