// SPDX-License-Identifier: MIT
/*
 * interp_outcome.c - what became of a sample's interpreted stack, and the
 * counts of each outcome a recording's end summary and its lost record
 * give. One place decides what is "incomplete": a stack that the
 * interpreter had and that was not read whole. A sample of a thread that
 * ran no interpreted code (no thread state yet, no VM yet, or none any
 * more) has no interpreted stack: it is no failure. Neither is a sample
 * taken between the interpreter's mapping and the moment the BPF program
 * was told of the process, when the interpreter had not started then (its
 * VM or first interpreter was not set up: it is set up once, so it was
 * not at the sample either) or when the sample's native stack, unwound to
 * its first frame, is in no eval loop (start-up: ld.so, the VM's setup).
 * Every other sample without a stack read for
 * it is a failure, named by why; one taken before its Ruby walker was
 * loaded (loaded once a Ruby is found) too, and one read while the
 * innermost eval loop call was entering or leaving its frame (the stack
 * read lacks that call's frame). A stack named whole with a
 * line unknown (its code named from the BPF program's copy, whose line
 * table stopped short) is complete, and counted apart.
 */
#include "record/interpP.h"

enum sp_interp_outcome sp_interp_outcome(const struct sp_interp_seen *s)
{
	if (!s->taken) {
		if (s->time < s->followed)
			return s->started && !s->no_eval ? SP_IO_NOT_FOLLOWED : SP_IO_NONE;
		return SP_IO_UNPAIRED;
	}
	if (s->status == SP_BPF_IST_NO_THREAD)
		return SP_IO_NONE;
	if (s->status == SP_BPF_IST_NO_WALKER)
		return SP_IO_NO_WALKER;
	if (s->status != SP_BPF_IST_OK)
		return SP_IO_FAULT;
	if (s->truncated)
		return SP_IO_TRUNCATED;
	if (!s->all_named)
		return SP_IO_FREED;
	if (s->unpushed)
		return SP_IO_UNPUSHED;
	return s->no_line ? SP_IO_NO_LINE : SP_IO_COMPLETE;
}

const char *sp_interp_outcome_name(enum sp_interp_outcome o)
{
	static const char *const names[SP_IO_N] = {
		[SP_IO_COMPLETE] = "complete", [SP_IO_NONE] = "none",
		[SP_IO_NOT_FOLLOWED] = "not-followed-yet", [SP_IO_UNPAIRED] = "unpaired",
		[SP_IO_FAULT] = "unreadable", [SP_IO_TRUNCATED] = "truncated",
		[SP_IO_FREED] = "code-freed", [SP_IO_NO_LINE] = "line-unknown",
		[SP_IO_NO_WALKER] = "walker-loading", [SP_IO_UNPUSHED] = "frame-not-pushed",
	};

	return (unsigned int)o < SP_IO_N ? names[o] : "?";
}

bool sp_interp_outcome_incomplete(enum sp_interp_outcome o)
{
	return o != SP_IO_COMPLETE && o != SP_IO_NO_LINE && o != SP_IO_NONE;
}
