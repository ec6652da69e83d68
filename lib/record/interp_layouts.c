// SPDX-License-Identifier: MIT
/*
 * The one table of interpreter structure layouts (interpP.h): for each
 * supported runtime version, where the BPF program finds a thread's state
 * and its frames, and where user space finds a code object's names and
 * line table. docs/interpreters.md says how the rows were measured and how
 * to add one.
 *
 * CPython 3.11 (x86-64, the same in every 3.11.x: the structures are part
 * of the version's ABI): offsets read with gdb from pyenv's 3.11.7
 * libpython3.11.so (built with debug information), e.g.
 *   print (long)&((PyThreadState*)0)->native_thread_id
 * and checked against Debian's 3.11.2 /usr/bin/python3.11 at run time.
 *
 * Ruby 3.1 (x86-64, every 3.1.x): the structures of vm_core.h, iseq.h and
 * ractor_core.h as a 3.1.2 build lays them out, read in Debian's 3.1.2
 * libruby-3.1.so.3.1 (no debug information) by following them from
 * ruby_current_vm_ptr in a live process: the main ractor's thread list
 * found where its head points at the main thread, sizeof(rb_control_frame_t)
 * (64: pc, sp, iseq, self, ep, block_code, __bp__, jit_return) from the
 * distance between two frames, the rest from their fields' order in the
 * 3.1 sources (the status byte: 2 for a thread blocked in join, 0 for a
 * running one, as read). docs/interpreters.md has the walk.
 */
#include <stdlib.h>
#include <string.h>

#include "interpP.h"
#include "record.h"

static const struct sp_interp_layout table[] = {
	{
		.name = "python3.11", .runtime = SP_RT_PYTHON, .major = 3, .minor = 11,
		.bpf = {
			.rt_interp_head = 40,	/* _PyRuntime.interpreters.head */
			.is_tstate_head = 16,	/* PyInterpreterState.threads.head */
			.ts_next = 8,
			.ts_native_tid = 160,
			.ts_cframe = 56,
			.cf_current = 8,
			.fr_code = 32,
			.fr_previous = 48,
			.fr_instr = 56,
			.fr_entry = 68,
			.co_code = 184,		/* co_code_adaptive */
			.co_firstline = 72,
			.co_name = 128,		/* co_qualname */
			.co_file = 112,		/* co_filename */
			.co_lines = 136,	/* co_linetable */
			.var_size = 16,
			.bytes_data = 32,
			.valid = 1,
		},
		.ob_type = 8,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
		.code_size = 192,
		.ts_interp = 16,
	},
	{
		.name = "ruby3.1", .runtime = SP_RT_RUBY, .major = 3, .minor = 1,
		.bpf = {
			.kind = SP_BPF_IK_RUBY,
			.rb_vm_ractor = 32,	/* rb_vm_t.ractor.main_ractor */
			.rb_ractor_threads = 304,	/* rb_ractor_t.threads.set */
			.rb_th_node = 0,	/* rb_thread_t.lt_node */
			.rb_th_ec = 40,
			.rb_th_id = 80,		/* thread_id */
			.rb_th_tid = 88,
			.rb_th_status = 92,	/* status:2, the first bit-field after tid */
			.rb_ec_cfp = 16,	/* after vm_stack (0), vm_stack_size (8) */
			.rb_cfp_size = 64,
			.rb_cfp_pc = 0,
			.rb_cfp_iseq = 16,
			.rb_cfp_ep = 32,
			.rb_iseq_body = 16,
			.rb_body_size = 4,	/* iseq_size; iseq_encoded at 8 */
			.rb_svar_me = 8,	/* flags, cref_or_me */
			.valid = 1,
		},
		.rb = {
			.vm_main_thread = 40,
			.th_vm = 32,
			.iseq_size = 24,	/* flags, wrapper, body */
			.body_size = 152,	/* up to insns_info's end */
			.loc_path = 64,		/* location.pathobj */
			.loc_label = 80,	/* location.label */
			.loc_first = 88,	/* location.first_lineno (a Fixnum) */
			.info_body = 120,	/* insns_info.body */
			.info_pos = 128,	/* insns_info.positions */
			.info_size = 136,	/* insns_info.size */
			.info_succ = 144,	/* insns_info.succ_index_table */
			.entry_size = 12,	/* line_no, node_id, events */
			.rstr_heap_len = 16,
			.rstr_heap_ptr = 24,
			.rstr_embed = 16,
			.rary_embed = 16,
			.rary_heap_ptr = 32,
			.me_def = 16,		/* flags, defined_class, def, called_id, owner */
			.me_owner = 32,
			.def_original_id = 32,	/* type:4 ... (8), body (a union of 24) */
			.def_cfunc = 8,		/* body.cfunc.func */
			.class_ext = 24,	/* flags, klass, super, ptr (not USE_RVARGC) */
			.ext_iv_tbl = 8,	/* iv_index_tbl, iv_tbl */
			.st_start = 32,
			.st_bound = 40,
			.st_entries = 48,	/* of {hash, key, record} */
			.sym_last_id = 0,
			.sym_ids = 16,		/* last_id, str_sym, ids */
			.id_classpath = 0xf01,	/* predefined IDs, as read live */
			.id_attached = 0xc11,
			.last_op_id = 0xa9,
		},
	},
};

#define NROWS (sizeof(table) / sizeof(table[0]))

/* SP_INTERP_DROP (tests: a row taken out), read once, before any thread
 * that looks rows up runs (sp_interp_layouts_env()). */
static const char *drop;
static bool drop_read;

void sp_interp_layouts_env(void)
{
	if (!drop_read)
		drop = getenv("SP_INTERP_DROP");
	drop_read = true;
}

static bool dropped(const char *name)
{
	sp_interp_layouts_env();
	return drop && !strcmp(drop, name);
}

const struct sp_interp_layout *sp_interp_layout_find(unsigned int runtime, unsigned int major,
						     unsigned int minor, unsigned int *row)
{
	unsigned int i;

	for (i = 0; i < NROWS; i++) {
		const struct sp_interp_layout *l = &table[i];

		if (l->runtime == runtime && l->major == major && l->minor == minor &&
		    !dropped(l->name)) {
			if (row)
				*row = i;
			return l;
		}
	}
	return NULL;
}

/* The BPF program reads a frame's fields from fr_code on, a code object's
 * from co_firstline on, one block each; a code object it copies, from its
 * start (SP_BPF_ICODE_HEAD bytes: user space finds its fields there). */
bool sp_interp_layout_fits(const struct sp_interp_layout *l)
{
	const struct sp_bpf_ilayout *b = &l->bpf;
	unsigned int f = b->fr_code, c = b->co_firstline;

	if (b->kind == SP_BPF_IK_RUBY)	/* a control frame's fields, one block */
		return b->rb_ec_cfp >= 16 && b->rb_cfp_size >= 8 &&
		       b->rb_cfp_pc + 8 <= SP_BPF_IFRAME_BLOCK &&
		       b->rb_cfp_iseq + 8 <= SP_BPF_IFRAME_BLOCK &&
		       b->rb_cfp_ep + 8 <= SP_BPF_IFRAME_BLOCK;

	return b->fr_instr >= f && b->fr_instr - f + 8 <= SP_BPF_IFRAME_BLOCK &&
	       b->fr_previous >= f && b->fr_previous - f + 8 <= SP_BPF_IFRAME_BLOCK &&
	       b->fr_entry >= f && b->fr_entry - f + 8 <= SP_BPF_IFRAME_BLOCK &&
	       b->co_name >= c && b->co_name - c + 8 <= SP_BPF_ICODE_BLOCK &&
	       b->co_file >= c && b->co_file - c + 8 <= SP_BPF_ICODE_BLOCK &&
	       l->ob_type + 8 <= SP_BPF_ICODE_HEAD && c + 4 <= SP_BPF_ICODE_HEAD &&
	       b->co_name + 8 <= SP_BPF_ICODE_HEAD && b->co_file + 8 <= SP_BPF_ICODE_HEAD &&
	       b->co_lines + 8 <= SP_BPF_ICODE_HEAD;
}

const struct sp_interp_layout *sp_interp_layout_row(unsigned int row)
{
	return row < NROWS ? &table[row] : NULL;
}

const char *sp_interp_layout_names(void)
{
	return "python3.11 ruby3.1";
}
