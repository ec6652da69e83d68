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
#define SP_SPAN_BEGIN(name)	STAP_PROBE3(stackpulse, span__begin, name, __FILE__, __LINE__)
#define SP_SPAN_END(name)	STAP_PROBE3(stackpulse, span__end, name, __FILE__, __LINE__)
#else
#warning "<sys/sdt.h> not found (install systemtap-sdt-dev): span markers compiled out"
#define SP_SPAN_BEGIN(name)	((void)0)
#define SP_SPAN_END(name)	((void)0)
#endif

#endif
