// SPDX-License-Identifier: MIT
/* Unit tests of lib/record/proc_ended.c: a sample of a process that ended
 * is its own (taken before its end, or the kernel names its start), a
 * later one of the pid is another process's; bounded. */
#include <stdint.h>

#include "tap.h"
#include "record/proc_ended.h"

static void test_proc_ended_is(void)
{
	struct sp_proc_ended e = { 0 };

	CHECK(!sp_proc_ended_is(&e, 100, 5, 0));
	sp_proc_ended_note(&e, 100, 1000, 50);
	/* a sample read after the end, taken before it: the ended process */
	CHECK(sp_proc_ended_is(&e, 100, 900, 0));
	CHECK(sp_proc_ended_is(&e, 100, 1000, 0));
	/* just after its end, unknown to the kernel: its own exit path */
	CHECK(sp_proc_ended_is(&e, 100, 1001, 0));
	CHECK(sp_proc_ended_is(&e, 100, 1000 + SP_PROC_ENDED_TAIL_NS, 0));
	/* later, unknown to the kernel: another process of that pid */
	CHECK(!sp_proc_ended_is(&e, 100, 1001 + SP_PROC_ENDED_TAIL_NS, 0));
	/* after its end, the kernel's entry still the ended one's start */
	CHECK(sp_proc_ended_is(&e, 100, 2000, 50));
	CHECK(!sp_proc_ended_is(&e, 100, 2000, 60));
	CHECK(!sp_proc_ended_is(&e, 101, 900, 0));
	/* a new process of the pid defined: nothing ended is left of it */
	sp_proc_ended_forget(&e, 100);
	CHECK(!sp_proc_ended_is(&e, 100, 900, 50));
	sp_proc_ended_release(&e);
}

static void test_proc_ended_bounded(void)
{
	struct sp_proc_ended e = { .max = 8 };
	uint32_t pid;

	for (pid = 1; pid <= 20; pid++)
		sp_proc_ended_note(&e, pid, pid * 10, 0);
	CHECK(e.end.n <= 8);
	/* the latest ends are kept */
	CHECK(sp_proc_ended_is(&e, 20, 5, 0));
	CHECK(sp_proc_ended_is(&e, 19, 5, 0));
	CHECK(!sp_proc_ended_is(&e, 1, 5, 0));
	/* the same pid again: one entry, the newer end */
	sp_proc_ended_note(&e, 20, 500, 7);
	CHECK(!sp_proc_ended_is(&e, 20, 501 + SP_PROC_ENDED_TAIL_NS, 0));
	CHECK(sp_proc_ended_is(&e, 20, 501 + SP_PROC_ENDED_TAIL_NS, 7));
	CHECK(!sp_proc_ended_is(&e, 20, 501, 8));	/* the kernel says: another one */
	sp_proc_ended_release(&e);
}

int main(void)
{
	TAP_RUN(test_proc_ended_is);
	TAP_RUN(test_proc_ended_bounded);
	return TAP_DONE();
}
