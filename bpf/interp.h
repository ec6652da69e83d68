/* SPDX-License-Identifier: MIT */
/*
 * interp.h - what bpf/interp.bpf.c hands to lib/record/bpf_interp.c: the
 * interpreted stack of the thread a perf sample interrupted (or a context
 * switch switched out), read at sample time, and the maps user space fills to say which processes run a
 * known interpreter and where its structures are.
 *
 * A ring-buffer record is a struct sp_bpf_istack followed by nframes
 * struct sp_bpf_iframe, innermost first. Offsets are bytes; addresses are
 * the target process's.
 */
#ifndef SP_BPF_INTERP_SHARED_H
#define SP_BPF_INTERP_SHARED_H

/* interpreted frames walked per sample (a power of 2): a Python's import
 * chains and recursions pass 128 (pydoc -k: 5.5% of its samples) */
#define SP_BPF_IFRAMES		256
#define SP_BPF_ITHREADS		256	/* thread states looked at to find a thread's */
#define SP_BPF_ILAYOUTS		16	/* layouts (interp_layouts.c's table rows) */
#define SP_BPF_IPROCS		4096	/* processes with a known interpreter */
/* Bytes read at once from a frame (from its code pointer on) and from a
 * code object (from its first line on): a layout's fields must fit. */
#define SP_BPF_IFRAME_BLOCK	48
#define SP_BPF_ICODE_BLOCK	64
/* Python: what the walk copies of a code object it meets first (struct
 * sp_bpf_icode): the object's first bytes, its name's and file's str
 * objects from their start (header and characters), its line table's
 * first bytes; at most SP_BPF_ICOPIES code objects per walk. */
#define SP_BPF_ICODE_HEAD	160
#define SP_BPF_ISTR		256
#define SP_BPF_ISTR_SHORT	128	/* read instead when SP_BPF_ISTR does not read */
#define SP_BPF_ILINES		2048
#define SP_BPF_ICOPIES		16
/* Python: copies per user (root: per process), a token bucket: a process
 * that makes its code objects look new at every sample (fresh code in a
 * loop) would fill the ring with copies, some 2.9 KiB each
 * (docs/security.md), and its forks with it. A copy refused leaves the
 * code to be read from the process, as Ruby's is. */
#define SP_BPF_ICOPY_BURST	512	/* copies a user may have at once */
#define SP_BPF_ICOPY_RATE	128	/* then per second */
/* Ruby: bytes of control frames read at once (16 of 3.1's 64-byte frames) */
#define SP_BPF_RB_CFP_BLOCK	1024
/* Ruby: iseqs and method entries a walk remembers it read (a power of 2) */
#define SP_BPF_RB_SEEN		8
/* System call numbers the entry program may be asked to stop at. */
#define SP_BPF_INR_MAX		512

/* status of a record */
enum sp_bpf_istatus {
	SP_BPF_IST_OK = 0,
	SP_BPF_IST_NO_THREAD = 1,	/* no thread state for this thread (not Python yet) */
	SP_BPF_IST_FAULT = 2,		/* a read failed (paged out, freed, bogus pointer) */
	SP_BPF_IST_NO_LAYOUT = 3,	/* the process's layout row is empty */
	SP_BPF_IST_NO_WALKER = 4,	/* its walker's slot is empty: the Ruby walkers
					 * are loaded once a Ruby is found, and were not
					 * in yet */
};

/* flags of a record */
#define SP_BPF_IFL_TRUNCATED	(1u << 0)	/* deeper than SP_BPF_IFRAMES */
#define SP_BPF_IFL_EVENT	(1u << 1)	/* read at a system call's entry, not a
						 * sample's: cpu holds the call's number */
#define SP_BPF_IFL_OFFCPU	(1u << 2)	/* read as the thread was switched out
						 * (an off-CPU sample's) */
#define SP_BPF_IFL_CODE		(1u << 3)	/* no stack: a code object's copy
						 * (struct sp_bpf_icode follows) */

/* flags of a frame */
#define SP_BPF_IFR_ENTRY	(1u << 0)	/* the first frame of an eval loop call */
#define SP_BPF_IFR_NO_INSTR	(1u << 1)	/* instr unknown */
#define SP_BPF_IFR_CFUNC	(1u << 2)	/* Ruby: a C method's frame (no code, its me) */

/* A process running an interpreter (key: tgid). */
struct sp_bpf_iproc {
	__u64 runtime;		/* address of _PyRuntime, or of ruby_current_vm_ptr */
	__u32 layout;		/* row of the "layouts" map */
	__u32 pad;
};

/* kind of a layout: how its frames are walked */
#define SP_BPF_IK_PYTHON	0
#define SP_BPF_IK_RUBY		1

/* Ruby's frame magic (rb_control_frame_t's ep[0]) */
#define SP_BPF_RB_MAGIC_MASK	0x7fff0001u
#define SP_BPF_RB_MAGIC_DUMMY	0x79990001u
#define SP_BPF_RB_MAGIC_CFUNC	0x55550001u	/* a C method's frame (not an ifunc's) */
#define SP_BPF_RB_FLAG_FINISH	0x20u	/* the first frame of a vm_exec() call */
#define SP_BPF_RB_FLAG_CFRAME	0x80u	/* a C method's frame */
#define SP_BPF_RB_KILLED	3u	/* rb_thread_t.status: THREAD_KILLED */
#define SP_BPF_RB_ENV_LOCAL	0x2u	/* ep[0]: VM_ENV_FLAG_LOCAL, a method's (or top) env */
/* an imemo's type (flags): the method entry, or an svar that holds it */
#define SP_BPF_RB_T_MASK	0x1fu
#define SP_BPF_RB_T_IMEMO	0x1au
#define SP_BPF_RB_IMEMO_SHIFT	12
#define SP_BPF_RB_IMEMO_SVAR	2u
#define SP_BPF_RB_IMEMO_MENT	6u
/* Environments followed outwards from a block's to find its method entry
 * (ep[-1], VM_ENV_DATA_INDEX_SPECVAL, holds the previous ep) */
#define SP_BPF_RB_EP_HOPS	4

/* Where things are, per interpreter version (lib/record/interp_layouts.c).
 * A Python row fills the first fields; a Ruby row (kind SP_BPF_IK_RUBY)
 * the rb_ ones. */
struct sp_bpf_ilayout {
	__u16 rt_interp_head;	/* _PyRuntime.interpreters.head */
	__u16 is_tstate_head;	/* PyInterpreterState.threads.head */
	__u16 ts_next;		/* PyThreadState.next */
	__u16 ts_native_tid;	/* PyThreadState.native_thread_id */
	__u16 ts_cframe;	/* PyThreadState.cframe */
	__u16 cf_current;	/* _PyCFrame.current_frame */
	__u16 fr_code;		/* _PyInterpreterFrame.f_code */
	__u16 fr_previous;	/* _PyInterpreterFrame.previous */
	__u16 fr_instr;		/* _PyInterpreterFrame.prev_instr */
	__u16 fr_entry;		/* _PyInterpreterFrame.is_entry (a byte) */
	__u16 co_code;		/* PyCodeObject.co_code_adaptive */
	__u16 co_firstline;	/* PyCodeObject.co_firstlineno */
	__u16 co_name;		/* PyCodeObject.co_qualname */
	__u16 valid;		/* 1 once user space filled the row */
	__u16 kind;		/* SP_BPF_IK_* */
	__u16 rb_vm_ractor;	/* rb_vm_t.ractor.main_ractor */
	__u16 rb_ractor_threads;	/* rb_ractor_t.threads.set (a list_head) */
	__u16 rb_th_node;	/* rb_thread_t.lt_node (the list's links) */
	__u16 rb_th_ec;		/* rb_thread_t.ec */
	__u16 rb_th_id;		/* rb_thread_t.thread_id (pthread_t) */
	__u16 rb_ec_cfp;	/* rb_execution_context_t.cfp (vm_stack, _size before) */
	__u16 rb_cfp_size;	/* sizeof(rb_control_frame_t) */
	__u16 rb_cfp_pc, rb_cfp_iseq, rb_cfp_ep;
	__u16 rb_iseq_body;	/* rb_iseq_t.body */
	__u16 rb_body_size;	/* rb_iseq_constant_body.iseq_size (iseq_encoded follows) */
	__u16 rb_th_tid;	/* rb_thread_t.tid (an int: the parent's in a forked child) */
	__u16 rb_th_status;	/* the byte of rb_thread_t.status (its low 2 bits) */
	__u16 rb_svar_me;	/* struct vm_svar.cref_or_me */
	__u16 co_file;		/* PyCodeObject.co_filename */
	__u16 co_lines;		/* PyCodeObject.co_linetable (a bytes object) */
	__u16 var_size;		/* PyVarObject.ob_size */
	__u16 bytes_data;	/* PyBytesObject.ob_sval */
};

/* The code object's first line and the low halves of its name's and its
 * file's addresses, xor'ed, identify it: user space reads the object later,
 * and refuses one that changed since (freed, its memory reused: a module's
 * top-level code is "<module>" at line 1, its file tells it from another
 * module's at the same address). For Ruby the code object is
 * the instruction sequence (rb_iseq_t), identified by its length and the
 * low half of its body's address; me is the frame's method entry, found
 * as rb_vm_frame_method_entry() does (ep[VM_ENV_DATA_INDEX_ME_CREF], an
 * imemo ment, or an svar holding one; for a block, that of the
 * environments it was made in). A C method's frame
 * (SP_BPF_IFR_CFUNC) has no code, only its me. */
struct sp_bpf_iframe {
	__u64 code;		/* address of the code object (iseq) */
	__s32 instr;		/* index of the current instruction (code units; Ruby: VALUEs) */
	__u32 firstline;	/* co_firstlineno (Ruby: iseq_size) */
	__u32 name;		/* low 32 bits of co_qualname's address ^ co_filename's
				 * (Ruby: of the body's address) */
	__u32 flags;		/* SP_BPF_IFR_* */
	__u64 me;		/* Ruby: the method entry (0: none, and always for Python) */
};

struct sp_bpf_istack {
	__u64 time_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC, as perf's */
	__u64 tstate;		/* the thread state read, 0 = none */
	__u32 pid, tid;
	__u32 cpu;		/* a sample's CPU; an event's call number (SP_BPF_IFL_EVENT) */
	__u16 nframes;
	__u8 status;		/* enum sp_bpf_istatus */
	__u8 flags;		/* SP_BPF_IFL_* */
};

/* Copies the budget refused, per CPU: how many, and the last process's. */
struct sp_bpf_icopy_refused {
	__u64 n;
	__u32 pid;
	__u32 pad;
};

/*
 * A Python code object as the walk that met it first found it (a record
 * flagged SP_BPF_IFL_CODE: this after the header, cut after lines_len bytes
 * of lines): user space names its frames from this copy when the object is
 * gone by the time it reads it (an import's module body is freed within
 * milliseconds). Lengths are the bytes copied of each block, 0 when it did
 * not read; the strings' blocks start at their objects and hold as many
 * characters as fit.
 */
struct sp_bpf_icode {
	__u64 code;		/* address of the code object */
	__u32 firstline, name;	/* its identity, as in its frames */
	__u32 lines_size;	/* the whole line table's bytes (ob_size, capped) */
	__u16 head_len, qual_len, file_len, lines_len;
	__u8 head[SP_BPF_ICODE_HEAD];	/* the code object's first bytes */
	__u8 qual[SP_BPF_ISTR];		/* co_qualname's str object */
	__u8 file[SP_BPF_ISTR];		/* co_filename's */
	__u8 lines[SP_BPF_ILINES];	/* co_linetable's first bytes (its data) */
};

#define SP_BPF_IREC_MAX	(sizeof(struct sp_bpf_istack) + \
			 SP_BPF_IFRAMES * sizeof(struct sp_bpf_iframe))

#endif
