#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record --call-graph=dwarf (stacks unwound at record time with the
# binaries' CFI) and --off-cpu, on real programs: a C workload built without
# frame pointers, CPython and Ruby loops, a program that sleeps 200 ms.
# Stacks are checked after sp-symbolize by tests/fixtures/sp-record-unwind/
# stacks.py, against call chains fixed by the programs' source.

load helper

setup_file() {
	export UW_TMP=$BATS_FILE_TMPDIR
	# The Makefile builds fixtures with frame pointers; these need them gone.
	cc -O1 -g -fomit-frame-pointer -fno-inline-functions-called-once \
		-o "$UW_TMP/unwind_workload" "$BATS_TEST_DIRNAME/fixtures/src/unwind_workload.c"
	cc -O1 -g -fomit-frame-pointer \
		-o "$UW_TMP/offcpu_sleeper" "$BATS_TEST_DIRNAME/fixtures/src/offcpu_sleeper.c"
}

stacks() {
	"$FIXTURES/stacks.py" "$@"
}

teardown() {
	kill_started ${BGPIDS:-}
}

# Record, symbolize, decode: JSON lines of the symbolized recording in $1.jsonl.
record_json() {
	local name=$1
	shift
	# Stack samples only: no BPF events or spans, which are tested elsewhere.
	run --separate-stderr sp-record --events=none --spans=none -o "$UW_TMP/$name.sp" "$@"
	assert_success
	echo "$stderr" > "$UW_TMP/$name.err"
	sp-symbolize "$UW_TMP/$name.sp" 2>/dev/null | sp-decode > "$UW_TMP/$name.jsonl"
}

@test "sp-record-unwind: the C workload really has no frame pointers" {
	# Independent of StackPulse: the functions never set up %rbp.
	run objdump -d --no-show-raw-insn "$UW_TMP/unwind_workload"
	assert_success
	for f in uw_run uw_outer uw_middle uw_inner; do
		body=$(printf '%s\n' "$output" | awk -v f="<$f>:" '$2 == f {p = 1; next} /^$/ {p = 0} p')
		[ -n "$body" ]
		! grep -q 'mov *%rsp,%rbp' <<< "$body"
	done
}

@test "sp-record-unwind: dwarf stacks of code without frame pointers reach main in >= 95% of samples" {
	require_root
	record_json c --call-graph=dwarf -- "$UW_TMP/unwind_workload" 1
	read -r uw main inner full < <(stacks chain < "$UW_TMP/c.jsonl")
	echo "samples in uw_*: $uw, through uw_run to main: $main; in uw_inner: $inner, full chain: $full"
	[ "$uw" -ge 50 ]
	[ $((main * 100)) -ge $((uw * 95)) ]
	# Where uw_inner is on the stack, so is the whole known chain, in order.
	[ "$inner" -ge 20 ]
	[ $((full * 100)) -ge $((inner * 95)) ]
	# The end-of-run summary says how complete the stacks were.
	grep -Eq '^sp-record: stacks: (9[5-9]|100)\.[0-9]% complete' "$UW_TMP/c.err"
}

@test "sp-record-unwind: the same program with frame pointers only does not reach main" {
	require_root
	# The control: proves the test above measures the unwinder, not luck.
	record_json cfp --call-graph=fp -- "$UW_TMP/unwind_workload" 0.5
	read -r uw main inner full < <(stacks chain < "$UW_TMP/cfp.jsonl")
	echo "fp: samples in uw_*: $uw, to main: $main"
	[ "$uw" -ge 20 ]
	[ $((main * 100)) -lt $((uw * 50)) ]
}

# Folded stacks of a recording: "frames count" lines.
folded() {
	sp-symbolize "$1" 2>/dev/null | sp-flame --no-addresses 2>/dev/null
}

@test "sp-record-unwind: dwarf stops at code without CFI (jit), auto goes on with frame pointers" {
	require_root
	[ -x "$SP_EXAMPLES/jit_frames" ] || skip "build/examples/jit_frames missing: run make"
	# jit_frames calls back into itself from anonymous executable memory that
	# keeps a frame pointer (built with frame pointers, like all examples).
	run --separate-stderr sp-record --events=none --spans=none --call-graph=dwarf \
		-o "$UW_TMP/jd.sp" -- "$SP_EXAMPLES/jit_frames" 0.5
	assert_success
	assert_regex "$stderr" "jit: [0-9.]+% of stacks stopped in JIT-compiled code"
	read -r hot through < <(folded "$UW_TMP/jd.sp" |
		awk '/jf_hot/ { h += $NF } /main;jf_run;\[anon\];jf_hot/ { t += $NF } END { print h + 0, t + 0 }')
	echo "dwarf: samples in jf_hot: $hot, through the anonymous code to main: $through"
	[ "$hot" -ge 20 ]
	[ "$through" = 0 ]
	run --separate-stderr sp-record --events=none --spans=none --call-graph=auto \
		-o "$UW_TMP/ja.sp" -- "$SP_EXAMPLES/jit_frames" 0.5
	assert_success
	read -r hot through < <(folded "$UW_TMP/ja.sp" |
		awk '/jf_hot/ { h += $NF } /main;jf_run;\[anon\];jf_hot/ { t += $NF } END { print h + 0, t + 0 }')
	echo "auto: samples in jf_hot: $hot, through the anonymous code to main: $through"
	[ "$hot" -ge 20 ]
	[ $((through * 100)) -ge $((hot * 90)) ]
	# Those stacks went on by frame pointers: marked and counted as guesses.
	assert_regex "$stderr" "fp_guess: [0-9]+ stacks \([0-9.]+%\) left a frame without CFI through its frame pointer \(may skip frames\)"
	read -r flagged spliced < <(sp-symbolize "$UW_TMP/ja.sp" 2>/dev/null | sp-decode 2>/dev/null |
		jq -r 'select(.type == "sample" and any(.frames[]; .func == "jf_hot") and
			any(.frames[]; .func == "main")) | .flags // "0"' |
		awk '$1 == "0x1" { f++ } { n++ } END { print f + 0, n + 0 }')
	echo "auto: samples from jf_hot to main: $spliced, flagged: $flagged"
	[ "$spliced" -ge 20 ]
	[ "$flagged" = "$spliced" ]
	# the count is of every stack so marked (one in the anonymous code
	# itself, say, has no jf_hot)
	marked=$(sp-decode "$UW_TMP/ja.sp" 2>/dev/null |
		jq -r 'select(.type == "sample" and .flags == "0x1") | 1' | wc -l)
	[ "$marked" -ge "$flagged" ]
	run --separate-stderr -0 sp-decode --stats "$UW_TMP/ja.sp"
	assert_line --regexp "^  fp_guess: $marked stacks "
}

@test "sp-record-unwind: short commands' stacks that end in ld.so's entry code are complete" {
	require_root
	local ld=/lib64/ld-linux-x86-64.so.2 entry start ok cut
	[ -e "$ld" ] || skip "no $ld"
	# The return address of _start's call of _dl_start: the first frame of
	# every process (ld.so's entry code has no CFI).
	entry=$(readelf -h "$ld" | awk '/Entry point address/ { print $4 }')
	start=$(printf '0x%x' $((entry + 8)))
	# Default spans: ld.so's probes are stepped out of line in [uprobes],
	# where the DWARF unwind stops and the frame-pointer chain goes on to
	# _start. Often, so a few stacks of the 46 starts are sampled there.
	run --separate-stderr sp-record -F 4999 -o "$UW_TMP/ld.sp" -- sh -c \
		'for i in $(seq 40); do /usr/bin/true; done
		 for i in 1 2 3; do /usr/bin/python3 -c pass; done; echo hi >/dev/null'
	assert_success
	refute_regex "$stderr" "stopped in ld-linux[^ ]* at $start"
	read -r ok cut < <(sp-decode "$UW_TMP/ld.sp" 2>/dev/null | jq -r --arg s "$start" '
		select(.type == "sample") | [.frames[] | select(.mode == "user")] as $u |
		select($u | length > 0 and (.[-1].module // "" | test("/ld-linux")) and
		       .[-1].rel == $s) | .unwind' |
		awk '$1 == "complete" { c++ } $1 != "complete" { n++ } END { print c + 0, n + 0 }')
	echo "stacks ending at ld.so's _start ($start): complete $ok, not $cut"
	[ "$ok" -ge 10 ]
	[ "$cut" = 0 ]
}

@test "sp-record-unwind: stacks left through a frame pointer in code without CFI are marked guesses" {
	require_root
	[ -x "$SP_EXAMPLES/nocfi_frames" ] || skip "build/examples/nocfi_frames missing: run make"
	# nocfi_frames reaches nf_hot through assembly without CFI, once with a
	# frame pointer and once without (then rbp is nf_keeper's, which the
	# unwind skips). The default call graph: the summary is printed for them.
	record_json nf -- "$SP_EXAMPLES/nocfi_frames" 0.5
	grep -Eq '^sp-record:   fp_guess: [0-9]+ stacks \([0-9.]+%\) left a frame without CFI through its frame pointer \(may skip frames\)$' "$UW_TMP/nf.err"
	read -r framed frameless kept flagged < <(jq -r 'select(.type == "sample" and
		any(.frames[]; .func == "nf_hot") and any(.frames[]; .func == "main")) |
		[([.frames[].func] | index("nf_framed") != null),
		 ([.frames[].func] | index("nf_frameless") != null),
		 ([.frames[].func] | index("nf_keeper") != null), .flags == "0x1"] | @tsv' \
		"$UW_TMP/nf.jsonl" | awk '$1 == "true" { a++ } $2 == "true" { b++ }
		$3 == "true" { k++ } $4 == "true" { f++ } END { print a + 0, b + 0, k + 0, f + 0 }')
	echo "to main through nf_framed: $framed, through nf_frameless: $frameless" \
		"(with nf_keeper: $kept); flagged: $flagged"
	[ "$framed" -ge 20 ]
	[ "$frameless" -ge 20 ]
	[ "$kept" = 0 ]		# the guess's cost, which the flag owns up to
	[ "$flagged" = $((framed + frameless)) ]
	run --separate-stderr -0 sp-decode --stats "$UW_TMP/nf.sp"
	assert_line --regexp "^  fp_guess: [0-9]+ stacks "
}

@test "sp-record-unwind: Python stacks pass through the interpreter into libc and back to main" {
	require_root
	[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3"
	record_json py --call-graph=dwarf -- /usr/bin/python3 "$FIXTURES/loop.py" 1
	# Debian's python3.11 holds the interpreter itself (no libpython); its
	# main tail-calls Py_BytesMain, so main's caller marks the bottom.
	read -r total complete through < <(stacks through /usr/bin/python3 __libc_start_call_main \
		< "$UW_TMP/py.jsonl")
	echo "python samples: $total, complete: $complete, libc<-interpreter<-main: $through"
	[ "$total" -ge 50 ]
	[ "$through" -ge 5 ]
	[ $((complete * 100)) -ge $((total * 90)) ]
}

@test "sp-record-unwind: Ruby stacks pass through libruby into libc and back to main" {
	require_root
	require_cmd ruby
	# Ruby's VM frames are large: 8 KiB copies cut about a quarter of the
	# stacks (the summary says so); 32 KiB (the default) hold them.
	record_json rb --call-graph=dwarf --stack-size=32768 -- ruby "$FIXTURES/loop.rb" 1
	read -r total complete through < <(stacks through libruby __libc_start_call_main \
		< "$UW_TMP/rb.jsonl")
	echo "ruby samples: $total, complete: $complete, libc<-libruby<-main: $through"
	[ "$total" -ge 50 ]
	[ "$through" -ge 5 ]
	[ $((complete * 100)) -ge $((total * 90)) ]
}

@test "sp-record-unwind: the summary names the copy size when stacks are cut by it" {
	require_root
	require_cmd ruby
	# native stacks only: with interpreted ones, the next test's wording
	run --separate-stderr sp-record --call-graph=dwarf --stack-size=1024 --interp=none \
		-o "$UW_TMP/small.sp" -- ruby "$FIXTURES/loop.rb" 0.3
	assert_success
	assert_regex "$stderr" "stack_size: [0-9.]+% of stacks hit the 1024-byte stack copy: use --call-graph=dwarf,4096"
}

# Samples of the spool $1: "all cut", cut = unwind stopped at the copy's end.
cut_counts() {
	sp-decode "$1" | jq -rs '[.[] | select(.type == "sample")] |
		"\(length) \([.[] | select(.unwind == "stack_size")] | length)"'
}

@test "sp-record-unwind: by default a Ruby program deep in requires and blocks is cut less than with 8 KiB copies" {
	require_root
	require_cmd ruby
	require_cmd jq
	local d=$UW_TMP/deep i
	mkdir -p "$d"
	# eight nested requires, each from inside two blocks, then a loop of
	# blocks around a recursion: Ruby's native stack is deep under its VM
	for i in 1 2 3 4 5 6 7 8; do
		echo "[1].each { |_| 1.times { require_relative \"d$((i + 1))\" } }" > "$d/d$i.rb"
	done
	cat > "$d/d9.rb" <<-'EOF'
	def leaf(n) = n < 2 ? n : leaf(n - 1) + leaf(n - 2)
	t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
	s = 0
	while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < 0.6
	  [1, 2, 3].each { |x| s += leaf(10 + x) }
	end
	puts s
	EOF
	run --separate-stderr -0 sp-record --events=none --spans=none -o "$d/def.sp" -- ruby "$d/d1.rb"
	read -r dall dcut < <(cut_counts "$d/def.sp")
	run --separate-stderr -0 sp-record --events=none --spans=none --call-graph=dwarf,8192 \
		-o "$d/small.sp" -- ruby "$d/d1.rb"
	small_err=$stderr
	read -r sall scut < <(cut_counts "$d/small.sp")
	echo "default: $dcut of $dall cut; 8192: $scut of $sall cut"
	echo "$small_err"
	[ "$dall" -ge 30 ] && [ "$sall" -ge 30 ]
	# the program is deep enough for 8 KiB to cut it often
	[ $((scut * 100)) -ge $((sall * 30)) ]
	# the default cuts at most half as often
	[ $((dcut * sall * 2)) -le $((scut * dall)) ]
	# and the summary says the interpreted stacks of the cut ones are whole
	[[ "$small_err" == *"stack_size: "*"hit the 8192-byte stack copy, of which "*"% still have their whole interpreted stack"*"use --call-graph=dwarf,32768"* ]]
	[[ "$small_err" == *"stacks: "*"% complete ("*"more ("*"have their whole interpreted stack, cut only in native frames"* ]]
}

@test "sp-record-unwind: 200 ms asleep in a known function is 200 ms off-CPU in that stack" {
	require_root
	record_json off --call-graph=dwarf --off-cpu -- "$UW_TMP/offcpu_sleeper" 200
	read -r waits ns_in ns_total < <(stacks offcpu oc_wait_here < "$UW_TMP/off.jsonl")
	echo "waits in oc_wait_here: $waits, $ns_in ns; all off-CPU: $ns_total ns"
	# Tolerance: not less than the sleep minus 5% (timer slack can only
	# lengthen it), at most 50% more (wake-up latency on a loaded machine).
	[ "$waits" -ge 1 ]
	[ "$ns_in" -ge 190000000 ]
	[ "$ns_in" -le 300000000 ]
	# And the whole stack is there: oc_wait_here called from oc_run from main.
	python3 - "$UW_TMP/off.jsonl" <<-'EOF'
		import json, sys
		for line in open(sys.argv[1]):
		    r = json.loads(line)
		    if r.get("type") == "sample" and r.get("kind") == "offcpu":
		        fs = [f.get("func") for f in r["frames"] if f.get("mode", "user") == "user"]
		        if "oc_wait_here" in fs:
		            i = fs.index("oc_wait_here")
		            assert fs[i:i + 3] == ["oc_wait_here", "oc_run", "main"], fs
		            assert r["unwind"] == "complete", r["unwind"]
	EOF
	grep -q '^sp-record: off-cpu: [1-9][0-9]* waits recorded' "$UW_TMP/off.err"
	# The header says off-CPU time was recorded, and not that it was missing.
	head -1 "$UW_TMP/off.jsonl" | jq -e '(.features | test("off-cpu=context-switch"))
		and ((.unavailable // "") | test("off-cpu") | not)'
}

# A wait's kernel frames (schedule and what called it) are named: their
# ksym records come before them, so sp-symbolize has them when the frames
# come (docs/spool.md, "Rules"); written at the end they came too late.
@test "sp-record-unwind: an off-CPU wait's kernel frames are named by sp-symbolize" {
	require_root
	record_json offk --off-cpu -- "$UW_TMP/offcpu_sleeper" 100
	run -0 jq -r 'select(.type == "sample" and .kind == "offcpu") | .frames[]
		| select(.mode == "kernel") | .func // "UNNAMED \(.addr)"' "$UW_TMP/offk.jsonl"
	[ -n "$output" ] || fail "no kernel frame in an off-CPU sample"
	refute_line --partial UNNAMED
	# where every wait ends in the kernel
	assert_line schedule
}

offcpu_modules() {
	"$FIXTURES/offcpu_modules.py" "$@" || {
		grep '^sp-record: off-cpu' "$UW_TMP/$(basename "$1" .jsonl).err"
		false
	}
}

# The perf source writes a file's module once, with the first process that
# maps it: the waits of every other process find it by file and offset.
@test "sp-record-unwind: -a --off-cpu places every run's waits in libc and the program" {
	require_root
	record_json offa3 -a --off-cpu --off-cpu-min=20ms -- sh -c \
		'for i in 1 2 3; do "$0" 100; done' "$UW_TMP/offcpu_sleeper"
	# Under load a ring may overflow and lose a run's switch: 2 of 3.
	offcpu_modules "$UW_TMP/offa3.jsonl" "$UW_TMP" offcpu_sleeper 2 '/libc\.so' '/offcpu_sleeper$'
}

@test "sp-record-unwind: -a --off-cpu places python3's waits, started after sh, in its modules" {
	require_root
	require_cmd python3
	# The interpreter itself (python3 may be a shell script, pyenv's), by a
	# name no other process of the machine has.
	ln -sf "$(python3 -c 'import sys; print(sys.executable)')" "$UW_TMP/ocpy3"
	record_json offpy -a --off-cpu --off-cpu-min=20ms -- sh -c \
		'sleep 0.1; "$0" -c "import time; time.sleep(0.2)"' "$UW_TMP/ocpy3"
	offcpu_modules "$UW_TMP/offpy.jsonl" "$UW_TMP" ocpy3 1 '/libc\.so' 'python'
}

@test "sp-record-unwind: -a --off-cpu places a gcc compile's waits in gcc's and collect2's modules" {
	require_root
	require_cmd gcc
	printf 'int main(void) { return 0; }\n' > "$UW_TMP/small.c"
	record_json offgcc -a --off-cpu -- sh -c \
		'for i in 1 2 3 4; do gcc -O2 -o "$0.bin" "$0"; done' "$UW_TMP/small.c"
	# The driver and collect2 wait for the programs they run (cc1, as,
	# ld): non-PIE programs, mapped at the same address in every run.
	# Under load a ring may overflow and lose a run's switches: 1 of 4.
	offcpu_modules "$UW_TMP/offgcc.jsonl" "$UW_TMP" collect2 1 '/collect2$' '/libc\.so'
	offcpu_modules "$UW_TMP/offgcc.jsonl" "$UW_TMP" gcc 1 'gcc' '/libc\.so'
}

# A process's voluntary context switches, all its threads.
voluntary_switches() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^voluntary_ctxt_switches/ { n += $2 } END { print n + 0 }'
}

# Each switch-out sample of sp-record's own carried 8 KiB of its stack: a
# few filled a ring to its wake-up mark, the wake-up made more, and an
# idle machine kept the recorder busy (some 25000 switches a second).
@test "sp-record-unwind: -a --off-cpu leaves the recorder's own waits out, in the kernel: it does not wake itself" {
	require_root
	for opts in --interp=auto --interp=none; do
		sp-record -v -a --off-cpu $opts --events=none --spans=none -d 4 \
			-o "$UW_TMP/self.sp" 2> "$UW_TMP/self.err" &
		rec=$!
		BGPIDS=$rec
		for _ in $(seq 100); do
			grep -q "kernel events attached\|own switch-outs" "$UW_TMP/self.err" && break
			sleep 0.1
		done
		sleep 0.5	# (its start-up's switches past)
		a=$(voluntary_switches $rec)
		sleep 1
		b=$(voluntary_switches $rec)
		wait $rec || fail "$(cat "$UW_TMP/self.err")"
		BGPIDS=
		echo "$opts: sp-record switched $((b - a)) times in a second" >&3
		grep -q "off-cpu: sp-record's own switch-outs are left out in the kernel" \
			"$UW_TMP/self.err" || fail "$(cat "$UW_TMP/self.err")"
		# its batches and the machine's other switches wake it, a few
		# hundred times a second, not thousands
		[ $((b - a)) -lt 5000 ] || fail "$opts: $((b - a)) switches in a second"
		run -0 bash -c "sp-decode '$UW_TMP/self.sp' | jq -c 'select(.type == \"sample\" and .kind == \"offcpu\" and .pid == $rec)'"
		[ -z "$output" ] || fail "$output"
	done
}

@test "sp-record-unwind: --off-cpu-min drops shorter waits but counts them" {
	require_root
	record_json offmin --call-graph=fp --off-cpu-min=500ms -- "$UW_TMP/offcpu_sleeper" 200
	read -r waits ns_in ns_total < <(stacks offcpu oc_wait_here < "$UW_TMP/offmin.jsonl")
	[ "$waits" = 0 ]
	[ "$ns_total" = 0 ]
	grep -Eq '^sp-record: off-cpu: 0 waits recorded.* [1-9][0-9]* shorter than 500.000 ms' \
		"$UW_TMP/offmin.err"
}

@test "sp-record-unwind: a bad --off-cpu-min is a usage error" {
	run -64 sp-record --off-cpu-min=soon -- true
	assert_output --partial "invalid --off-cpu-min 'soon'"
}

# Another user's binary whose section headers say a CFI or DWARF section
# is 3 GiB (a sparse file of a few KB on disk): libdw would read it whole.
@test "sp-record-unwind: nobody's binary whose .eh_frame or .debug_info says 3 GiB: refused, said, sp-record stays small" {
	require_root
	require_cmd setpriv util-linux
	require_cmd cc
	[ -x /usr/bin/time ] || skip "needs /usr/bin/time (package time)"
	local dir rss case
	dir=$(mktemp -d /tmp/sp-bigcfi.XXXXXX)
	chmod 0755 "$dir"
	printf 'int main(void) { volatile unsigned long x = 0; for (;;) x++; }\n' |
		cc -O1 -g -fno-asynchronous-unwind-tables -x c -o "$dir/spin" -
	for case in "/usr/bin/sha256sum .eh_frame /dev/zero" "$dir/spin .debug_info"; do
		set -- $case
		python3 "$BATS_TEST_DIRNAME/fixtures/sparse_section.py" "$1" "$dir/big" "$2"
		chown 65534:65534 "$dir/big"
		(( $(du -k "$dir/big" | cut -f1) < 10000 ))
		run --separate-stderr /usr/bin/time -f %M -o "$dir/rss" sp-record --call-graph=dwarf \
			-o "$dir/rec.sp" -- setpriv --reuid=65534 --regid=65534 --clear-groups \
			timeout 1 "$dir/big" ${3:-}
		[ "$status" = 124 ] || fail "$2: status $status: $stderr"
		rss=$(tail -n 1 "$dir/rss")	# after time's own line on the status
		(( rss < 400000 )) || fail "$2: sp-record grew to $rss KiB: $stderr"
		[[ "$stderr" == *"'$dir/big' says its $2 is larger than 64 MiB"* ]] || fail "$stderr"
	done
	rm -rf "$dir"
}
