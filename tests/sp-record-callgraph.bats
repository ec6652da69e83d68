#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record's call graph by default, on Debian's binaries (built without
# frame pointers), and the hints sp-record and sp-flame give about stacks.

load helper

setup() {
	require_root
	require_cmd jq
	OUT=$BATS_TEST_TMPDIR
}

# The share (whole %) of samples of comm $2 in the symbolized spool $1 whose
# stack holds main's caller (__libc_start_call_main).
reach_main() {
	sp-symbolize "$1" 2>/dev/null | sp-decode |
		jq -s --arg comm "$2" '
			([.[] | select(.type=="process" and .comm==$comm) | .pid] | unique) as $pids |
			[.[] | select(.type=="sample" and (.pid as $p | $pids | index($p)))] as $s |
			if ($s | length) == 0 then -1 else
			([$s[] | select(any(.frames[]?; .func=="__libc_start_call_main"))] | length) * 100
			/ ($s | length) | floor end'
}

@test "sp-record: by default, stacks of Debian's xz (no frame pointers) reach main; with fp they do not" {
	[ -x /usr/bin/xz ] || skip "needs /usr/bin/xz (xz-utils)"
	head -c 2M /dev/urandom > "$OUT/rnd"
	run --separate-stderr -0 sp-record --events=none --spans=none -o "$OUT/d.sp" -- \
		xz -3 -T1 -c "$OUT/rnd"
	run -0 sp-decode "$OUT/d.sp"
	[ "$(head -1 <<< "$output" | jq -r .call_graph)" = auto ]
	run -0 reach_main "$OUT/d.sp" xz
	echo "default: $output% reach main"
	[ "$output" -ge 90 ]
	run --separate-stderr -0 sp-record --events=none --spans=none --call-graph=fp \
		-o "$OUT/f.sp" -- xz -3 -T1 -c "$OUT/rnd"
	run -0 reach_main "$OUT/f.sp" xz
	echo "fp: $output% reach main"
	[ "$output" -ge 0 ] && [ "$output" -le 10 ]
}

@test "sp-record: by default, Debian's python3 reaches main through libpython" {
	[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3"
	run --separate-stderr -0 sp-record --events=none --spans=none -o "$OUT/p.sp" -- \
		/usr/bin/python3 -c 'import json; d = [{"a": i} for i in range(100000)]
for _ in range(3): json.loads(json.dumps(d))'
	run -0 reach_main "$OUT/p.sp" python3
	echo "$output% reach main"
	[ "$output" -ge 80 ]
}

@test "sp-record: stacks inside glibc's __vfork are complete, not 'inconsistent data'" {
	require_cmd cc
	cat > "$OUT/vf.c" <<-'EOF'
	#include <sys/wait.h>
	#include <unistd.h>
	int main(void)
	{
		for (int i = 0; i < 20000; i++) {
			pid_t p = vfork();
			if (p == 0)
				_exit(0);
			waitpid(p, NULL, 0);
		}
		return 0;
	}
	EOF
	cc -O2 -o "$OUT/vf" "$OUT/vf.c"
	run --separate-stderr -0 sp-record --events=none --spans=none -c 100000 -o "$OUT/v.sp" \
		-- "$OUT/vf"
	[[ "$stderr" != *"inconsistent data in libc"* ]]
	sp-symbolize "$OUT/v.sp" 2>/dev/null | sp-decode |
		jq -r 'select(.type=="sample" and any(.frames[]?; .func=="vfork" or .func=="__vfork"))
		       | .unwind' | sort | uniq -c > "$OUT/st"
	cat "$OUT/st"
	grep -q ' complete$' "$OUT/st"
	run grep -c -v ' complete$' "$OUT/st"
	assert_output 0
}

@test "sp-record: a stack stopped at a uretprobe's trampoline is said to be in [uprobes], not a missed mapping" {
	WL=$SP_EXAMPLES/workload
	[ -x "$WL" ] || skip "build/examples/workload is not built (make)"
	run --separate-stderr -0 sp-record --events=none --span-func="$WL:compile_ast" \
		--span-func="$WL:backend_thread" -o "$OUT/u.sp" -- "$WL" 0.5
	echo "$stderr"
	[[ "$stderr" == *"no_cfi: "*"stopped in [uprobes] at 0x"*"uretprobe's return trampoline"* ]]
	[[ "$stderr" != *"no known mapping (e.g. 0x7fffffffe000)"* ]]
	[[ "$stderr" != *"install its debug symbols (.debug_frame) or build it"*"[uprobes]"* ]]
}

@test "sp-flame's hint for stacks cut by the stack copy is the one sp-record gives" {
	WL=$SP_EXAMPLES/unwind_workload
	[ -x "$WL" ] || skip "build/examples/unwind_workload is not built (make)"
	run --separate-stderr -0 sp-record --events=none --spans=none --call-graph=dwarf,128 \
		-o "$OUT/s.sp" -- "$WL" -3000
	rec=$(grep -o 'stack_size: .*' <<< "$stderr")
	echo "sp-record: $rec"
	[[ "$rec" == *"hit the 128-byte stack copy: use --call-graph=dwarf,512" ]]
	run --separate-stderr -0 sp-flame "$OUT/s.sp"
	echo "sp-flame: $stderr"
	[[ "$stderr" == *"hint: "*"hit the 128-byte stack copy: use --call-graph=dwarf,512"* ]]
	[[ "$stderr" != *"--call-graph=fp"* ]]
}
