// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/elf/unwind.c: unwind this program's own stack, captured the
 * way perf hands it over (registers in perf's order, bytes from sp up),
 * through functions built without frame pointers, and compare with the
 * return addresses the functions saw themselves.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "unwind.h"

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
#define COPY 16384

struct snap {
	uint64_t regs[SP_UNWIND_NREGS];	/* perf order: AX..IP, R8..R15 */
	uint8_t stack[COPY];
	size_t size;
	void *ret[5];			/* return addresses seen by level 0..4 */
};

static struct snap snaps[2];
static uint64_t stack_top;		/* end of the stack being captured */
static volatile int sink;

/* Like perf's copy: raw bytes, redzones included (hence no ASan here). */
static __attribute__((noinline, no_sanitize_address)) void copy_stack(uint8_t *dst,
								     const uint8_t *src, size_t n)
{
	while (n--)
		*dst++ = *(const volatile uint8_t *)src++;
}

/* Registers at one point of capture(), then the stack above sp. */
static NOFP void capture(struct snap *s)
{
	uint64_t *r = s->regs;
	size_t n;

	s->ret[0] = __builtin_return_address(0);
	__asm__ volatile(
		"movq %%rax, 0(%0)\n\t"
		"movq %%rbx, 8(%0)\n\t"
		"movq %%rcx, 16(%0)\n\t"
		"movq %%rdx, 24(%0)\n\t"
		"movq %%rsi, 32(%0)\n\t"
		"movq %%rdi, 40(%0)\n\t"
		"movq %%rbp, 48(%0)\n\t"
		"movq %%rsp, 56(%0)\n\t"
		"leaq 0(%%rip), %%rax\n\t"
		"movq %%rax, 64(%0)\n\t"
		"movq %%r8, 72(%0)\n\t"
		"movq %%r9, 80(%0)\n\t"
		"movq %%r10, 88(%0)\n\t"
		"movq %%r11, 96(%0)\n\t"
		"movq %%r12, 104(%0)\n\t"
		"movq %%r13, 112(%0)\n\t"
		"movq %%r14, 120(%0)\n\t"
		"movq %%r15, 128(%0)\n\t"
		: : "r"(r) : "rax", "memory");
	n = stack_top - r[7];
	if (n > COPY)
		n = COPY;
	copy_stack(s->stack, (const uint8_t *)r[7], n);
	s->size = n;
	sink++;
}

static NOFP void level3(struct snap *s)
{
	s->ret[1] = __builtin_return_address(0);
	capture(s);
	sink++;		/* no tail call */
}

static NOFP void level2(struct snap *s)
{
	s->ret[2] = __builtin_return_address(0);
	level3(s);
	sink++;
}

static NOFP void level1(struct snap *s)
{
	s->ret[3] = __builtin_return_address(0);
	level2(s);
	sink++;
}

static uint64_t main_stack_top(void)
{
	char line[512];
	unsigned long long lo, hi, top = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			top = hi;
	if (f)
		fclose(f);
	return top;
}

/* Check that ips[] holds capture's pc region, then level3..level1's callers. */
static void check_chain(const struct snap *s, const uint64_t *ips, unsigned int n)
{
	CHECK(n >= 5);
	if (n < 5)
		return;
	CHECK_EQ_U(ips[0], s->regs[8]);			/* the sampled pc */
	CHECK_EQ_U(ips[1], (uint64_t)s->ret[0]);	/* in level3 */
	CHECK_EQ_U(ips[2], (uint64_t)s->ret[1]);	/* in level2 */
	CHECK_EQ_U(ips[3], (uint64_t)s->ret[2]);	/* in level1 */
	CHECK_EQ_U(ips[4], (uint64_t)s->ret[3]);	/* in level1's caller */
}

static void test_unwind_main_thread(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t ips[128];
	unsigned int n;

	stack_top = main_stack_top();
	CHECK(stack_top != 0);
	level1(s);
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	check_chain(s, ips, n);
	/* level1 <- test <- TAP_RUN in main <- __libc_start_call_main <- ... <- _start */
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	CHECK(n >= 8 && n < 20);
	sp_unwinder_free(u);
}

static void *thread_main(void *arg)
{
	level1(arg);
	return NULL;
}

static void test_unwind_thread_reaches_clone(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[1];
	enum sp_unwind_status st;
	pthread_attr_t attr;
	pthread_t t;
	uint64_t ips[128];
	size_t ssize = 256 * 1024;
	void *stk = aligned_alloc(4096, ssize);
	unsigned int n;

	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stk, ssize);
	stack_top = (uint64_t)stk + ssize;
	CHECK(!pthread_create(&t, &attr, thread_main, s));
	pthread_join(t, NULL);
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	check_chain(s, ips, n);
	/* thread_main <- start_thread <- clone3, whose CFI ends the chain */
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	CHECK(n >= 6 && n < 12);
	pthread_attr_destroy(&attr);
	free(stk);
	sp_unwinder_free(u);
}

static void test_unwind_truncations(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t ips[128], regs[SP_UNWIND_NREGS];
	unsigned int n;

	/* depth */
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 3, &st);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(st, SP_UNWIND_DEPTH);
	CHECK_EQ_U(ips[2], (uint64_t)s->ret[1]);
	/* a copy that ends inside the chain: the frames whose return address
	 * lies in the copy, then the status says why it stopped */
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, 32,
			       ips, 128, &st);
	CHECK(n >= 1 && n <= 5);
	CHECK_EQ_U(st, SP_UNWIND_STACK_SIZE);
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, 4,
			       ips, 128, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_STACK_SIZE);
	/* no copy at all: the stack pointer in no mapping (inside execve),
	 * which no bigger copy helps */
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, NULL, 0,
			       ips, 128, &st);
	CHECK_EQ_U(st, SP_UNWIND_UNKNOWN_MAP);
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, 0,
			       ips, 128, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_UNKNOWN_MAP);
	/* pc in no mapping */
	memcpy(regs, s->regs, sizeof(regs));
	regs[8] = 0x10;
	n = sp_unwinder_unwind(u, getpid(), getpid(), regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_UNKNOWN_MAP);
	CHECK(sp_unwinder_stop_module(u, NULL) == NULL);
	/* no room left at all */
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 0, &st);
	CHECK_EQ_U(n, 0);
	CHECK_EQ_U(st, SP_UNWIND_DEPTH);
	/* too few registers */
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, 4, s->stack, s->size, ips, 128, &st);
	CHECK_EQ_U(n, 0);
	CHECK_EQ_U(st, SP_UNWIND_ERROR);
	sp_unwinder_free(u);
}

static void test_unwind_jit_and_reported_maps(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t ips[16], regs[SP_UNWIND_NREGS], rel;
	unsigned int n;
	const char *path;

	sp_unwinder_set_proc_fallback(u, false);
	/* Told about nothing, no /proc: the pc is in no known mapping. */
	n = sp_unwinder_unwind(u, 4242, 4242, s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 16, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_UNKNOWN_MAP);
	/* Anonymous executable memory is JIT code. */
	CHECK(!sp_unwinder_map(u, 4242, 0x100000, 0x200000, 0, "//anon"));
	memcpy(regs, s->regs, sizeof(regs));
	regs[8] = 0x100010;
	n = sp_unwinder_unwind(u, 4242, 4242, regs, SP_UNWIND_NREGS, s->stack, s->size, ips, 16, &st);
	CHECK_EQ_U(st, SP_UNWIND_JIT);
	/* A mapping of a file that does not exist: no unwind information. */
	CHECK(!sp_unwinder_map(u, 4242, 0x300000, 0x400000, 0, "/nonexistent/libfoo.so"));
	regs[8] = 0x300010;
	n = sp_unwinder_unwind(u, 4242, 4242, regs, SP_UNWIND_NREGS, s->stack, s->size, ips, 16, &st);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	path = sp_unwinder_stop_module(u, &rel);
	CHECK_STR(path, "/nonexistent/libfoo.so");
	/* Unmapping the middle splits the mapping; forget drops the process. */
	sp_unwinder_unmap(u, 4242, 0x340000, 0x350000);
	regs[8] = 0x345000;
	n = sp_unwinder_unwind(u, 4242, 4242, regs, SP_UNWIND_NREGS, s->stack, s->size, ips, 16, &st);
	CHECK_EQ_U(st, SP_UNWIND_UNKNOWN_MAP);
	regs[8] = 0x355000;
	n = sp_unwinder_unwind(u, 4242, 4242, regs, SP_UNWIND_NREGS, s->stack, s->size, ips, 16, &st);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	CHECK(!sp_unwinder_fork(u, 4242, 4243));
	n = sp_unwinder_unwind(u, 4243, 4243, regs, SP_UNWIND_NREGS, s->stack, s->size, ips, 16, &st);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	sp_unwinder_forget(u, 4242);
	n = sp_unwinder_unwind(u, 4242, 4242, regs, SP_UNWIND_NREGS, s->stack, s->size, ips, 16, &st);
	CHECK_EQ_U(st, SP_UNWIND_UNKNOWN_MAP);
	sp_unwinder_free(u);
}

/* Report this process's executable mappings to u as pid's (as sp-record
 * does from MMAP2 records). The one holding addr, if any, into *at_lo,
 * *at_off and at_path (at_size bytes). */
static void report_own_maps(struct sp_unwinder *u, uint32_t pid, uint64_t addr,
			    unsigned long long *at_lo, unsigned long long *at_off,
			    char *at_path, size_t at_size)
{
	unsigned long long lo, hi, off;
	char line[4200], perms[8], path[4096];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms, &off, path) < 4 ||
		    perms[2] != 'x')
			continue;
		CHECK(!sp_unwinder_map(u, pid, lo, hi, off, path));
		if (at_lo && addr >= lo && addr < hi) {
			*at_lo = lo;
			*at_off = off;
			snprintf(at_path, at_size, "%s", path);
		}
	}
	if (f)
		fclose(f);
}

/* At an exec the process stays known with no mappings: a sample taken
 * inside the exec is unknown_map, not a /proc read (which would find this
 * program's mappings here and unwind), and the new image's reported
 * mappings unwind. */
static void test_unwind_exec_awaits_maps(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t ips[128];
	unsigned int n;

	CHECK(!sp_unwinder_map(u, getpid(), 0x100000, 0x200000, 0, "/nonexistent/old"));
	sp_unwinder_exec(u, getpid());
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_UNKNOWN_MAP);
	report_own_maps(u, getpid(), 0, NULL, NULL, NULL, 0);
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	CHECK(n >= 5);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	sp_unwinder_free(u);
}

/* Where an address lies, as the off-CPU source asks when it reads a sample:
 * the file and mapping offset it was told, and the ELF address dladdr()
 * computes from this program's load base. */
static void test_unwind_where(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	uint64_t fn = (uint64_t)(uintptr_t)&test_unwind_where, pgoff = 1, rel = 0;
	unsigned long long at_lo = 0, at_off = 0;
	char at_path[4096] = "";
	const char *where = NULL;
	Dl_info dl;

	sp_unwinder_set_proc_fallback(u, false);
	report_own_maps(u, 999, fn, &at_lo, &at_off, at_path, sizeof(at_path));
	CHECK(at_lo != 0);
	CHECK(dladdr((void *)(uintptr_t)fn, &dl) != 0);
	CHECK_EQ_U(sp_unwinder_where(u, 999, fn, &where, &pgoff, &rel), 0);
	CHECK_STR(where, at_path);
	CHECK_EQ_U(pgoff, at_off);
	CHECK_EQ_U(rel, fn - (uint64_t)(uintptr_t)dl.dli_fbase);
	/* Anonymous memory, or a process nobody told of: nowhere. */
	CHECK(!sp_unwinder_map(u, 999, 0x1000, 0x2000, 0, "//anon"));
	CHECK_EQ_U(sp_unwinder_where(u, 999, 0x1800, &where, &pgoff, &rel), (uint64_t)-1);
	CHECK_EQ_U(sp_unwinder_where(u, 998, fn, &where, &pgoff, &rel), (uint64_t)-1);
	/* A file that cannot be read: its path, and the offset in it. */
	CHECK(!sp_unwinder_map(u, 999, 0x300000, 0x400000, 0x5000, "/nonexistent/libfoo.so"));
	CHECK_EQ_U(sp_unwinder_where(u, 999, 0x300010, &where, &pgoff, &rel), 0);
	CHECK_STR(where, "/nonexistent/libfoo.so");
	CHECK_EQ_U(pgoff, 0x5000);
	CHECK_EQ_U(rel, 0x5010);
	/* The path outlives the process's mappings. */
	sp_unwinder_forget(u, 999);
	CHECK_STR(where, "/nonexistent/libfoo.so");
	sp_unwinder_free(u);
}

/* The path pid has at addr (NULL: none). */
static const char *path_at(struct sp_unwinder *u, uint32_t pid, uint64_t addr)
{
	const char *path = NULL;
	uint64_t pgoff, rel;

	return sp_unwinder_where(u, pid, addr, &path, &pgoff, &rel) ? NULL : path;
}

/* A source reading its CPUs' rings one after the other tells a process's
 * exec, fork and mappings out of time order: the outcome is that of time
 * order. The case seen: a shell's MMAP2 read from one CPU's ring before its
 * exec's COMM from another's left the shell with no mapping of itself. */
static void test_unwind_told_out_of_order(void)
{
	struct sp_unwinder *u = sp_unwinder_new();

	sp_unwinder_set_proc_fallback(u, false);
	/* the new image's mapping (t 20) read before its exec (t 10) */
	CHECK(!sp_unwinder_map_at(u, 50, 0x1000, 0x2000, 0, "/nonexistent/old", 5));
	CHECK(!sp_unwinder_map_at(u, 50, 0x400000, 0x500000, 0, "/nonexistent/bash", 20));
	sp_unwinder_exec_at(u, 50, 10);
	CHECK_STR(path_at(u, 50, 0x400100), "/nonexistent/bash");
	CHECK(path_at(u, 50, 0x1100) == NULL);
	/* the old image's mapping read after the exec: stale */
	CHECK(!sp_unwinder_map_at(u, 50, 0x3000, 0x4000, 0, "/nonexistent/old2", 8));
	CHECK(path_at(u, 50, 0x3100) == NULL);
	/* an earlier exec (env, t 3) read after the later one: nothing lost */
	sp_unwinder_exec_at(u, 50, 3);
	CHECK_STR(path_at(u, 50, 0x400100), "/nonexistent/bash");
	/* a place a newer mapping holds is not taken by an older report */
	CHECK(!sp_unwinder_map_at(u, 50, 0x600000, 0x700000, 0, "/nonexistent/new", 40));
	CHECK(!sp_unwinder_map_at(u, 50, 0x600000, 0x700000, 0, "/nonexistent/stale", 30));
	CHECK_STR(path_at(u, 50, 0x600100), "/nonexistent/new");
	/* ... and an older one gives way to a newer one, as in order */
	CHECK(!sp_unwinder_map_at(u, 50, 0x600000, 0x680000, 0, "/nonexistent/newer", 45));
	CHECK_STR(path_at(u, 50, 0x600100), "/nonexistent/newer");
	CHECK_STR(path_at(u, 50, 0x690000), "/nonexistent/new");

	/* A fork (t 50) read after the child's own mapping (t 60): the child
	 * has both, and not the parent's mapping made after the fork (t 55). */
	CHECK(!sp_unwinder_map_at(u, 50, 0x800000, 0x900000, 0, "/nonexistent/dlopened", 55));
	CHECK(!sp_unwinder_map_at(u, 51, 0xa00000, 0xb00000, 0, "/nonexistent/child", 60));
	CHECK(!sp_unwinder_fork_at(u, 50, 51, 50));
	CHECK_STR(path_at(u, 51, 0xa00100), "/nonexistent/child");
	CHECK_STR(path_at(u, 51, 0x400100), "/nonexistent/bash");
	CHECK_STR(path_at(u, 51, 0x600100), "/nonexistent/newer");
	CHECK(path_at(u, 51, 0x800100) == NULL);
	/* A fork read after the child's exec (t 70) and new image (t 71):
	 * none of the parent's mappings are the child's. */
	sp_unwinder_exec_at(u, 52, 70);
	CHECK(!sp_unwinder_map_at(u, 52, 0xc00000, 0xd00000, 0, "/nonexistent/sleep", 71));
	CHECK(!sp_unwinder_fork_at(u, 50, 52, 65));
	CHECK_STR(path_at(u, 52, 0xc00100), "/nonexistent/sleep");
	CHECK(path_at(u, 52, 0x400100) == NULL);
	/* A pid's earlier process (its mapping, t 1): the fork replaces it. */
	CHECK(!sp_unwinder_map_at(u, 53, 0x400000, 0x500000, 0, "/nonexistent/earlier", 1));
	CHECK(!sp_unwinder_fork_at(u, 50, 53, 80));
	CHECK_STR(path_at(u, 53, 0x400100), "/nonexistent/bash");

	/* A fork read after the child's own mapping inside one of the
	 * parent's: the parent's is the child's around it, not over it. */
	CHECK(!sp_unwinder_map_at(u, 54, 0x1000, 0x2000, 0, "/nonexistent/p1", 1));
	CHECK(!sp_unwinder_map_at(u, 54, 0x4000, 0x7000, 0, "/nonexistent/p2", 1));
	CHECK(!sp_unwinder_map_at(u, 55, 0x5000, 0x6000, 0, "/nonexistent/own", 60));
	CHECK(!sp_unwinder_fork_at(u, 54, 55, 50));
	CHECK_STR(path_at(u, 55, 0x5800), "/nonexistent/own");
	CHECK_STR(path_at(u, 55, 0x4800), "/nonexistent/p2");
	CHECK_STR(path_at(u, 55, 0x6800), "/nonexistent/p2");
	CHECK_STR(path_at(u, 55, 0x1800), "/nonexistent/p1");
	/* An older mapping read after a newer one it only partly overlaps:
	 * the older one holds the rest, as in time order. */
	CHECK(!sp_unwinder_map_at(u, 56, 0x18000, 0x19000, 0, "/nonexistent/t6", 6));
	CHECK(!sp_unwinder_map_at(u, 56, 0x10000, 0x20000, 0, "/nonexistent/t5", 5));
	CHECK_STR(path_at(u, 56, 0x11000), "/nonexistent/t5");
	CHECK_STR(path_at(u, 56, 0x18800), "/nonexistent/t6");
	CHECK_STR(path_at(u, 56, 0x1f000), "/nonexistent/t5");
	/* A mapping stamped at its exec's time is the new image's, whichever
	 * is read first; one told in order (time 0) after a timed exec is
	 * taken. */
	CHECK(!sp_unwinder_map_at(u, 57, 0x1000, 0x2000, 0, "/nonexistent/at", 100));
	sp_unwinder_exec_at(u, 57, 100);
	CHECK_STR(path_at(u, 57, 0x1800), "/nonexistent/at");
	sp_unwinder_exec_at(u, 58, 100);
	CHECK(!sp_unwinder_map_at(u, 58, 0x1000, 0x2000, 0, "/nonexistent/at", 100));
	CHECK_STR(path_at(u, 58, 0x1800), "/nonexistent/at");
	CHECK(!sp_unwinder_map(u, 58, 0x3000, 0x4000, 0, "/nonexistent/untimed"));
	CHECK_STR(path_at(u, 58, 0x3800), "/nonexistent/untimed");

	/* In order (time 0), as before: an exec drops every mapping, a fork
	 * copies every one of the parent's. */
	CHECK(!sp_unwinder_map(u, 60, 0x1000, 0x2000, 0, "/nonexistent/a"));
	CHECK(!sp_unwinder_fork(u, 60, 61));
	CHECK_STR(path_at(u, 61, 0x1100), "/nonexistent/a");
	sp_unwinder_exec(u, 60);
	CHECK(path_at(u, 60, 0x1100) == NULL);
	CHECK(!sp_unwinder_map(u, 60, 0x5000, 0x6000, 0, "/nonexistent/b"));
	CHECK_STR(path_at(u, 60, 0x5100), "/nonexistent/b");
	sp_unwinder_free(u);
}

/* How many mappings of path this process has. */
static unsigned int maps_of(const char *path)
{
	char line[4200], name[4096];
	unsigned int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %*s %4095s", name) == 1 && !strcmp(name, path))
			n++;
	if (f)
		fclose(f);
	return n;
}

/* Trimming unloads the files not used since the last trim, with their
 * mappings (a deleted binary's would keep its disk space), and they load
 * again when a frame needs them; a file in use stays loaded. */
static void test_unwind_trim_unloads(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t a[128], b[128];
	unsigned int base, n1, n2;
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	CHECK(len > 0);
	if (len <= 0) {
		sp_unwinder_free(u);
		return;
	}
	exe[len] = 0;
	base = maps_of(exe);
	n1 = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
				a, 128, &st);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	CHECK_EQ_U(maps_of(exe), base + 1);	/* the unwinder's mapping of it */
	sp_unwinder_trim(u);			/* used since: kept */
	CHECK_EQ_U(maps_of(exe), base + 1);
	sp_unwinder_trim(u);			/* not used since the last: unloaded */
	CHECK_EQ_U(maps_of(exe), base);
	n2 = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
				b, 128, &st);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	CHECK(n1 == n2 && !memcmp(a, b, n1 * sizeof(a[0])));
	CHECK_EQ_U(maps_of(exe), base + 1);
	sp_unwinder_free(u);
	CHECK_EQ_U(maps_of(exe), base);
}

/* The same mappings reported by hand (as sp-record does from MMAP2
 * records) unwind as well as the /proc fallback. */
static void test_unwind_reported_maps_match_proc(void)
{
	struct sp_unwinder *u = sp_unwinder_new(), *v = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st1, st2;
	uint64_t a[128], b[128];
	unsigned int n1, n2;

	sp_unwinder_set_proc_fallback(v, false);
	report_own_maps(v, 777, 0, NULL, NULL, NULL, 0);
	n1 = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
				a, 128, &st1);
	n2 = sp_unwinder_unwind(v, 777, 777, s->regs, SP_UNWIND_NREGS, s->stack, s->size, b, 128,
				&st2);
	CHECK_EQ_U(n1, n2);
	CHECK_EQ_U(st1, st2);
	CHECK(n1 == n2 && !memcmp(a, b, n1 * sizeof(a[0])));
	sp_unwinder_free(u);
	sp_unwinder_free(v);
}

/* Garbage stacks and registers: a status, never a crash or a loop. */
static void test_unwind_garbage(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t ips[64], regs[SP_UNWIND_NREGS];
	static uint8_t junk[COPY];
	unsigned int i, k, n, bad = 0;

	srand(1);
	for (k = 0; k < 200; k++) {
		for (i = 0; i < sizeof(junk); i++)
			junk[i] = rand();
		/* half the time keep real return addresses around */
		if (k & 1)
			memcpy(junk + 64, s->stack + 64, 512);
		memcpy(regs, s->regs, sizeof(regs));
		if (k & 2)
			regs[8] = (uint64_t)s->ret[k % 4];
		n = sp_unwinder_unwind(u, getpid(), getpid(), regs, SP_UNWIND_NREGS, junk,
				       sizeof(junk), ips, 64, &st);
		if (n > 64 || st == SP_UNWIND_UNKNOWN)
			bad++;
	}
	CHECK_EQ_U(bad, 0);
	/* A self-referencing frame: the saved return address points back into
	 * capture and the stack repeats; the CFA must rise, so it ends. */
	for (i = 0; i + 16 <= sizeof(junk); i += 16) {
		uint64_t pc = s->regs[8];

		memcpy(junk + i, &pc, 8);
		memcpy(junk + i + 8, &pc, 8);
	}
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, junk,
			       sizeof(junk), ips, 64, &st);
	CHECK(n <= 64);
	CHECK(st != SP_UNWIND_COMPLETE);
	sp_unwinder_free(u);
}

static void test_unwind_splice_fp(void)
{
	uint64_t ips[8] = { 1, 2, 3 };
	const uint64_t fp[] = { 9, 3, 4, 5, 6, 7, 8 };

	CHECK_EQ_U(sp_unwind_splice_fp(ips, 3, 6, fp, 7), 6);
	CHECK_EQ_U(ips[3], 4);
	CHECK_EQ_U(ips[5], 6);
	CHECK_EQ_U(sp_unwind_splice_fp(ips, 2, 6, fp, 0), 2);
	CHECK_STR(sp_unwind_status_name(SP_UNWIND_STACK_SIZE), "stack_size");
}

/* The first executable address in this process's libc just after
 * `mov $435,%eax; syscall` (clone3), or 0. */
static uint64_t libc_clone3_gap(void)
{
	static const uint8_t pat[7] = { 0xb8, 0xb3, 0x01, 0x00, 0x00, 0x0f, 0x05 };
	char line[512], perms[8], path[256];
	unsigned long long lo, hi, off;
	uint64_t found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (!found && f && fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &lo, &hi, perms, &off,
			   path) < 4 || perms[2] != 'x' || !strstr(path, "/libc.so"))
			continue;
		for (uint64_t a = lo; a + sizeof(pat) <= hi; a++)
			if (!memcmp((const void *)a, pat, sizeof(pat))) {
				found = a + sizeof(pat);
				break;
			}
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * glibc's clone3 has no CFI right after its syscall, where the new thread
 * starts. A thread sampled inside the syscall (the parent, rax -ENOSYS) is
 * in a leaf that pushed nothing: its caller's return address is at rsp and
 * the chain goes on. The child (rax 0) is at its first frame.
 */
static void test_unwind_clone3_gap(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	static uint8_t stack[COPY + 8];
	uint64_t regs[SP_UNWIND_NREGS], ips[128], gap = libc_clone3_gap(), ret;
	enum sp_unwind_status st;
	unsigned int n;

	stack_top = main_stack_top();
	level1(s);
	/* As if capture()'s pc had called clone3: its "return address" on top. */
	ret = s->regs[8];
	memcpy(stack, &ret, 8);
	memcpy(stack + 8, s->stack, s->size);
	memcpy(regs, s->regs, sizeof(regs));
	regs[7] = s->regs[7] - 8;	/* SP */
	regs[8] = gap;			/* IP */
	regs[0] = (uint64_t)-38;	/* AX: -ENOSYS, inside the syscall */
	n = sp_unwinder_unwind(u, getpid(), getpid(), regs, SP_UNWIND_NREGS, stack, s->size + 8,
			       ips, 128, &st);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	CHECK(n >= 6);
	if (n >= 6) {
		CHECK_EQ_U(ips[0], gap);
		check_chain(s, ips + 1, n - 1);
	}
	regs[0] = 0;			/* the child's return */
	n = sp_unwinder_unwind(u, getpid(), getpid(), regs, SP_UNWIND_NREGS, stack, s->size + 8,
			       ips, 128, &st);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	CHECK_EQ_U(n, 1);
	/* Any other no-CFI address is still said to be one (without a frame
	 * pointer to fall back on). */
	regs[8] = gap + 1;
	regs[0] = (uint64_t)-38;
	regs[6] = 0;
	n = sp_unwinder_unwind(u, getpid(), getpid(), regs, SP_UNWIND_NREGS, stack, s->size + 8,
			       ips, 128, &st);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	sp_unwinder_free(u);
}

/*
 * A frame whose CFA is rbx-based, as glibc's _dl_runtime_resolve (push rbx,
 * mov rsp,rbx, realign the stack), sampled at the first instruction of a
 * callee whose CFI never mentions rbx (_dl_fixup, hit by a page fault on
 * its first byte). rbx_frame_ra is rbx_frame's own return address.
 */
uint64_t entry_regs[SP_UNWIND_NREGS], rbx_frame_ra;
void rbx_frame(void);
void entry_snap(void);
void entry_copy(void);
__asm__(
	".text\n"
	".globl rbx_frame\n.type rbx_frame,@function\n"
	"rbx_frame:\n\t.cfi_startproc\n\t"
	"movq (%rsp), %rax\n\tmovq %rax, rbx_frame_ra(%rip)\n\t"
	"pushq %rbx\n\t.cfi_adjust_cfa_offset 8\n\t.cfi_rel_offset %rbx, 0\n\t"
	"movq %rsp, %rbx\n\t.cfi_def_cfa_register %rbx\n\t"
	"andq $-64, %rsp\n\tsubq $192, %rsp\n\t"
	"call entry_snap\n"
	".globl rbx_frame_ret\nrbx_frame_ret:\n\t"
	"movq %rbx, %rsp\n\t.cfi_def_cfa_register %rsp\n\t"
	"popq %rbx\n\t.cfi_adjust_cfa_offset -8\n\t.cfi_restore %rbx\n\t"
	"ret\n\t.cfi_endproc\n"
	".size rbx_frame, .-rbx_frame\n"
	".globl entry_snap\n.type entry_snap,@function\n"
	"entry_snap:\n\t.cfi_startproc\n\t"
	"movq %rax, entry_regs+0(%rip)\n\t"
	"movq %rbx, entry_regs+8(%rip)\n\t"
	"movq %rcx, entry_regs+16(%rip)\n\t"
	"movq %rdx, entry_regs+24(%rip)\n\t"
	"movq %rsi, entry_regs+32(%rip)\n\t"
	"movq %rdi, entry_regs+40(%rip)\n\t"
	"movq %rbp, entry_regs+48(%rip)\n\t"
	"movq %rsp, entry_regs+56(%rip)\n\t"
	"leaq entry_snap(%rip), %rax\n\tmovq %rax, entry_regs+64(%rip)\n\t"
	"movq %r8, entry_regs+72(%rip)\n\t"
	"movq %r9, entry_regs+80(%rip)\n\t"
	"movq %r10, entry_regs+88(%rip)\n\t"
	"movq %r11, entry_regs+96(%rip)\n\t"
	"movq %r12, entry_regs+104(%rip)\n\t"
	"movq %r13, entry_regs+112(%rip)\n\t"
	"movq %r14, entry_regs+120(%rip)\n\t"
	"movq %r15, entry_regs+128(%rip)\n\t"
	"jmp entry_copy\n\t.cfi_endproc\n"
	".size entry_snap, .-entry_snap\n");
extern const char rbx_frame_ret[];

/* A function without CFI that keeps a frame pointer (as crtstuff's
 * __do_global_dtors_aux): no .cfi directives, so no FDE. */
uint64_t nocfi_frame_ra;
void nocfi_frame(void);
__asm__(
	".text\n"
	".globl nocfi_frame\n.type nocfi_frame,@function\n"
	"nocfi_frame:\n\t"
	"movq (%rsp), %rax\n\tmovq %rax, nocfi_frame_ra(%rip)\n\t"
	"pushq %rbp\n\tmovq %rsp, %rbp\n\tsubq $48, %rsp\n\t"
	"call entry_snap\n"
	".globl nocfi_frame_ret\nnocfi_frame_ret:\n\t"
	"leave\n\tret\n"
	".size nocfi_frame, .-nocfi_frame\n");
extern const char nocfi_frame_ret[];

/* Called by a jump from entry_snap: the stack above its sp, while it is live. */
void entry_copy(void)
{
	struct snap *s = &snaps[0];
	size_t n = stack_top - entry_regs[7];

	if (n > COPY)
		n = COPY;
	memcpy(s->regs, entry_regs, sizeof(s->regs));
	copy_stack(s->stack, (const uint8_t *)entry_regs[7], n);
	s->size = n;
}

/*
 * Run one of the frames above (it calls entry_snap, which takes the
 * registers, and entry_copy the stack) and unwind what it took: entry_snap,
 * then that frame at ret, then the caller it returns to (*ra, which it
 * stores), to the thread's first frame. Returns how many frames the unwind
 * left through the frame pointer.
 */
static unsigned int unwind_asm_frame(struct sp_unwinder *u, void (*frame)(void),
				     const char *ret, const uint64_t *ra)
{
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t ips[128];
	unsigned int n;

	stack_top = main_stack_top();
	frame();
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	CHECK(n >= 3);
	if (n >= 3) {
		CHECK_EQ_U(ips[0], (uint64_t)entry_snap);
		CHECK_EQ_U(ips[1], (uint64_t)ret);
		CHECK_EQ_U(ips[2], *ra);
	}
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	return sp_unwinder_fp_frames(u);
}

static void test_unwind_rbx_based_cfa(void)
{
	struct sp_unwinder *u = sp_unwinder_new();

	/* Through the rbx-based CFA, by CFI alone: no guess. */
	CHECK_EQ_U(unwind_asm_frame(u, rbx_frame, rbx_frame_ret, &rbx_frame_ra), 0);
	sp_unwinder_free(u);
}

static void test_unwind_no_cfi_frame_pointer(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	enum sp_unwind_status st;
	uint64_t ips[128];
	unsigned int n;

	/* By its frame pointer, once: a guess, counted. */
	CHECK_EQ_U(unwind_asm_frame(u, nocfi_frame, nocfi_frame_ret, &nocfi_frame_ra), 1);
	/* A frame pointer that points nowhere useful: said to be no CFI. */
	s->regs[6] = s->regs[7] - 64;		/* BP below SP */
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	CHECK_EQ_U(sp_unwinder_fp_frames(u), 0);	/* per unwind, and none taken */
	s->regs[6] = s->regs[7];		/* BP at SP: its "return address" is data */
	memset(s->stack + 8, 0x41, 8);
	n = sp_unwinder_unwind(u, getpid(), getpid(), s->regs, SP_UNWIND_NREGS, s->stack, s->size,
			       ips, 128, &st);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	CHECK_EQ_U(sp_unwinder_fp_frames(u), 0);
	sp_unwinder_free(u);
}

/*
 * What the guess risks: a function without CFI that keeps no frame of its
 * own, called by one that keeps a frame pointer. rbp is still the caller's,
 * so the fallback returns to the caller's caller: a complete stack, one
 * frame short, which only the count tells from a true one.
 */
uint64_t nofp_frame_ra;
void nofp_frame(void);
__asm__(
	".text\n"
	".globl nofp_frame\n.type nofp_frame,@function\n"
	"nofp_frame:\n\t"
	"subq $8, %rsp\n\t"
	"call entry_snap\n"
	".globl nofp_frame_ret\nnofp_frame_ret:\n\t"
	"addq $8, %rsp\n\tret\n"
	".size nofp_frame, .-nofp_frame\n");
extern const char nofp_frame_ret[];

static __attribute__((noinline, optimize("no-omit-frame-pointer"))) void fp_caller(void)
{
	nofp_frame_ra = (uint64_t)__builtin_return_address(0);	/* fp_caller's own */
	nofp_frame();
	sink++;
}

static void test_unwind_frame_pointer_guess_skips(void)
{
	struct sp_unwinder *u = sp_unwinder_new();

	/* fp_caller's frame (the return address into it) is missing. */
	CHECK_EQ_U(unwind_asm_frame(u, fp_caller, nofp_frame_ret, &nofp_frame_ra), 1);
	sp_unwinder_free(u);
}

/*
 * A file another user owns, cut short by them after sp-record loaded it: the
 * next lookups in its CFI (and reads of its code bytes) must give errors,
 * not SIGBUS, which a mapped file raises past its new end. A copy of libc,
 * reported as the mapping of a made-up process, is cut to one page between
 * two unwinds.
 */
static void test_unwind_file_cut_while_loaded(void)
{
	struct sp_unwinder *u = sp_unwinder_new();
	struct snap *s = &snaps[0];
	char path[] = "/tmp/sp-unwind-cut-XXXXXX", buf[65536];
	uint64_t ips[16], regs[SP_UNWIND_NREGS], base = 0x7f0000000000ULL, x_off = 0, x_size = 0;
	enum sp_unwind_status st;
	int fd = mkstemp(path), in = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	ssize_t r;
	off_t size = 0;
	size_t i, nph = 0;
	Elf *elf;
	unsigned int n;

	CHECK(fd >= 0 && in >= 0);
	while ((r = read(in, buf, sizeof(buf))) > 0 && write(fd, buf, (size_t)r) == r)
		size += r;
	close(in);
	if (geteuid() == 0)
		CHECK(fchown(fd, 65534, 65534) == 0);	/* nobody's */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf && !elf_getphdrnum(elf, &nph));
	for (i = 0; elf && i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    ph.p_vaddr == ph.p_offset) {
			x_off = ph.p_offset;
			x_size = ph.p_filesz;
		}
	}
	if (elf)
		elf_end(elf);
	CHECK(x_size > 0x10000);
	sp_unwinder_set_proc_fallback(u, false);
	CHECK(!sp_unwinder_map(u, 4343, base, base + (uint64_t)size, 0, path));
	memcpy(regs, s->regs, sizeof(regs));
	regs[8] = base + x_off + 0x200;		/* loads the file, looks up its CFI */
	n = sp_unwinder_unwind(u, 4343, 4343, regs, SP_UNWIND_NREGS, s->stack, s->size, ips, 16, &st);
	CHECK(n >= 1);
	CHECK(ftruncate(fd, 4096) == 0);
	for (i = 1; i <= 16; i++) {		/* lookups all over its code */
		regs[8] = base + x_off + x_size * i / 17;
		n = sp_unwinder_unwind(u, 4343, 4343, regs, SP_UNWIND_NREGS, s->stack, s->size,
				       ips, 16, &st);
		CHECK(n >= 1);
	}
	sp_unwinder_free(u);
	unlink(path);
	close(fd);
}

/*
 * A sample at the first instruction of a library's _init (crti's code,
 * without CFI, which ld.so calls for every library it loads): its caller is
 * the return address at rsp, taken only when it follows a call. libz's
 * .init, reported as the mapping of a made-up process; the return address
 * is one after a call in that same code.
 */
static void test_unwind_init_entry(void)
{
	const char *lib = "/lib/x86_64-linux-gnu/libz.so.1";
	struct sp_unwinder *u;
	uint64_t ips[8], regs[SP_UNWIND_NREGS] = { 0 }, base = 0x7f0000000000ULL;
	uint64_t init = 0, init_size = 0, ra = 0, stack[8] = { 0 };
	enum sp_unwind_status st;
	size_t shstrndx, k;
	Elf_Scn *scn = NULL;
	uint8_t code[256];
	struct stat sb;
	unsigned int n;
	int fd = open(lib, O_RDONLY);
	Elf *elf;

	if (fd < 0 || fstat(fd, &sb)) {
		printf("# no %s: skipped\n", lib);
		return;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf && !elf_getshdrstrndx(elf, &shstrndx));
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".init")) {
			init = sh.sh_addr;
			init_size = sh.sh_size < sizeof(code) ? sh.sh_size : sizeof(code);
			CHECK(sh.sh_addr == sh.sh_offset);	/* mapped from offset 0 below */
			CHECK(pread(fd, code, init_size, (off_t)sh.sh_offset) == (ssize_t)init_size);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	for (k = 0; init && k + 2 <= init_size; k++)	/* call *%rax: ff d0 */
		if (code[k] == 0xff && code[k + 1] == 0xd0)
			ra = base + init + k + 2;
	if (!init || !ra) {
		printf("# %s has no .init with a call in it: skipped\n", lib);
		return;
	}
	u = sp_unwinder_new();
	sp_unwinder_set_proc_fallback(u, false);
	CHECK(!sp_unwinder_map(u, 4344, base, base + (uint64_t)sb.st_size, 0, lib));
	regs[7] = 0x7ffd00001000ULL;			/* sp: the copy's first word */
	stack[0] = ra;
	regs[8] = base + init;				/* its first instruction */
	n = sp_unwinder_unwind(u, 4344, 4344, regs, SP_UNWIND_NREGS, (const uint8_t *)stack,
			       sizeof(stack), ips, 8, &st);
	CHECK(n >= 2);
	if (n >= 2)
		CHECK_EQ_U(ips[1], ra);
	CHECK_EQ_U(sp_unwinder_fp_frames(u), 0);	/* nothing pushed there: no guess */
	/* anywhere else in it, or data at rsp: said to be no CFI */
	regs[8] = base + init + (code[0] == 0xf3 ? 8 : 4);
	n = sp_unwinder_unwind(u, 4344, 4344, regs, SP_UNWIND_NREGS, (const uint8_t *)stack,
			       sizeof(stack), ips, 8, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	regs[8] = base + init;
	stack[0] = base + init + 1;			/* after no call */
	n = sp_unwinder_unwind(u, 4344, 4344, regs, SP_UNWIND_NREGS, (const uint8_t *)stack,
			       sizeof(stack), ips, 8, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	sp_unwinder_free(u);
}

/* ld.so's path and e_entry, from this process's own maps: *entry 0 if none. */
static void own_loader(char *path, size_t size, uint64_t *entry, off_t *fsize)
{
	char line[4200], p[4096];
	unsigned long long lo, hi, off;
	FILE *f = fopen("/proc/self/maps", "r");
	GElf_Ehdr eh;
	struct stat sb;
	Elf *elf;
	int fd;

	*entry = 0;
	path[0] = 0;
	while (f && !path[0] && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi, &off, p) == 4 &&
		    strstr(p, "/ld-linux"))
			snprintf(path, size, "%s", p);
	if (f)
		fclose(f);
	fd = path[0] ? open(path, O_RDONLY) : -1;
	if (fd < 0 || fstat(fd, &sb))
		return;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && gelf_getehdr(elf, &eh)) {
		*entry = eh.e_entry;
		*fsize = sb.st_size;
	}
	if (elf)
		elf_end(elf);
	close(fd);
}

/*
 * ld.so's _start ("mov %rsp,%rdi; call _dl_start") is where every process
 * starts, and has no CFI. A frame there is the thread's first, whether the
 * DWARF unwind reaches it or --call-graph=auto's frame-pointer chain does
 * (a sample in a probed instruction stepped out of line in [uprobes],
 * whose chain goes on into ld.so). Only its entry code is: not what follows
 * the jump to the program, nor a return address after no call in it.
 */
static void test_unwind_loader_entry(void)
{
	const uint64_t base = 0x7f0000000000ULL, xol = 0x7fffffffe080ULL;
	char path[4096];
	uint8_t code[128];
	uint64_t entry, ips[8], fp[3], regs[SP_UNWIND_NREGS] = { 0 }, stack[8] = { 0 };
	uint64_t dl_start = 0, jmp = 0;
	enum sp_unwind_status st;
	struct sp_unwinder *u;
	unsigned int n, k;
	off_t size = 0;
	int32_t rel;
	int fd;

	own_loader(path, sizeof(path), &entry, &size);
	fd = entry ? open(path, O_RDONLY) : -1;
	/* mapped from offset 0 below: ld.so's text is at its file offset */
	if (fd < 0 || pread(fd, code, sizeof(code), (off_t)entry) != (ssize_t)sizeof(code) ||
	    memcmp(code, "\x48\x89\xe7\xe8", 4)) {
		printf("# no x86-64 glibc ld.so mapped: skipped\n");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	memcpy(&rel, code + 4, 4);
	dl_start = entry + 8 + (uint64_t)(int64_t)rel;
	for (k = 8; !jmp && k + 3 <= sizeof(code); k++)
		if (!memcmp(code + k, "\x41\xff\xe4", 3))	/* jmp *%r12 */
			jmp = entry + k;
	CHECK(jmp != 0);
	u = sp_unwinder_new();
	sp_unwinder_set_proc_fallback(u, false);
	CHECK(!sp_unwinder_map(u, 4346, base, base + (uint64_t)size, 0, path));
	CHECK(!sp_unwinder_map(u, 4346, xol & ~0xfffULL, (xol & ~0xfffULL) + 0x1000, 0,
			       "[uprobes]"));
	regs[7] = 0x7ffd00001000ULL;			/* sp: the copy's first word */

	/* at e_entry: nothing has run yet */
	regs[8] = base + entry;
	n = sp_unwinder_unwind(u, 4346, 4346, regs, SP_UNWIND_NREGS, (const uint8_t *)stack,
			       sizeof(stack), ips, 8, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	/* at _dl_start's first instruction, called by _start: complete */
	regs[8] = base + dl_start;
	stack[0] = base + entry + 8;
	n = sp_unwinder_unwind(u, 4346, 4346, regs, SP_UNWIND_NREGS, (const uint8_t *)stack,
			       sizeof(stack), ips, 8, &st);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	/* a "return address" in _start after no call: not its first frame */
	if (code[4] != 0xe8) {
		stack[0] = base + entry + 9;
		n = sp_unwinder_unwind(u, 4346, 4346, regs, SP_UNWIND_NREGS,
				       (const uint8_t *)stack, sizeof(stack), ips, 8, &st);
		CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	}
	/* the padding after the jump to the program, within 64 bytes of
	 * e_entry, is no entry code */
	if ((jmp + 3) % 16 && jmp + 3 < entry + 64) {
		regs[8] = base + jmp + 3;
		n = sp_unwinder_unwind(u, 4346, 4346, regs, SP_UNWIND_NREGS,
				       (const uint8_t *)stack, sizeof(stack), ips, 8, &st);
		CHECK_EQ_U(n, 1);
		CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	}

	/* auto: a probed instruction stepped out of line, the kernel's
	 * frame-pointer chain through _dl_start into _start */
	regs[8] = xol;
	n = sp_unwinder_unwind(u, 4346, 4346, regs, SP_UNWIND_NREGS, (const uint8_t *)stack,
			       sizeof(stack), ips, 8, &st);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	fp[0] = xol;
	fp[1] = base + dl_start + 16;
	fp[2] = base + entry + 8;
	n = sp_unwinder_splice_fp(u, 4346, ips, n, 8, fp, 3, &st);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(st, SP_UNWIND_COMPLETE);
	/* a chain that ends elsewhere keeps the DWARF status */
	st = SP_UNWIND_NO_CFI;
	fp[2] = base + jmp + 3;
	n = sp_unwinder_splice_fp(u, 4346, ips, 1, 8, fp, 3, &st);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	fp[2] = base + dl_start + 32;
	n = sp_unwinder_splice_fp(u, 4346, ips, 1, 8, fp, 3, &st);
	CHECK_EQ_U(st, SP_UNWIND_NO_CFI);
	sp_unwinder_free(u);
}

int main(void)
{
	TAP_RUN(test_unwind_main_thread);
	TAP_RUN(test_unwind_thread_reaches_clone);
	TAP_RUN(test_unwind_truncations);
	TAP_RUN(test_unwind_jit_and_reported_maps);
	TAP_RUN(test_unwind_exec_awaits_maps);
	TAP_RUN(test_unwind_where);
	TAP_RUN(test_unwind_trim_unloads);
	TAP_RUN(test_unwind_reported_maps_match_proc);
	TAP_RUN(test_unwind_garbage);
	TAP_RUN(test_unwind_splice_fp);
	TAP_RUN(test_unwind_rbx_based_cfa);
	TAP_RUN(test_unwind_no_cfi_frame_pointer);
	TAP_RUN(test_unwind_frame_pointer_guess_skips);
	TAP_RUN(test_unwind_file_cut_while_loaded);
	TAP_RUN(test_unwind_told_out_of_order);
	TAP_RUN(test_unwind_init_entry);
	TAP_RUN(test_unwind_loader_entry);
	if (libc_clone3_gap())
		TAP_RUN(test_unwind_clone3_gap);
	else
		TAP_SKIP(test_unwind_clone3_gap, "no clone3 syscall found in this libc");
	return TAP_DONE();
}
