#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record --trigger: what makes a flight recorder write its window out
# (docs/postmortem.md). Each trigger is made to fire by a real program; its
# dump is found in the output directory by its name, ends with an end
# record naming the trigger, and symbolizes, correlates and prints alone.

load helper

setup() {
	require_cmd jq
	sp-record --help | grep -q -- '--trigger=' || skip "this sp-record has no --trigger"
	D=$BATS_TEST_TMPDIR/dumps
	mkdir -p "$D"
}

need_flight() {
	sp-record --help | grep -q -- '--flight=' || skip "this sp-record has no --flight"
	require_root
	[ -r /sys/kernel/btf/vmlinux ] || skip "needs kernel BTF (/sys/kernel/btf/vmlinux)"
}

# The dump of trigger $1 in $D (there must be exactly one), checked: its end
# record names the trigger, and the filters read it alone.
check_dump() {
	local trigger=$1 dumps
	dumps=("$D"/dump-*-"$trigger".sp)
	[ "${#dumps[@]}" = 1 ] && [ -f "${dumps[0]}" ] ||
		fail "want one dump-*-$trigger.sp in $D, have: $(ls "$D")"
	DUMP=${dumps[0]}
	[[ ${DUMP##*/} =~ ^dump-[0-9]{6,}-[0-9]{8}T[0-9]{6}Z-$trigger\.sp$ ]] || fail "dump named ${DUMP##*/}"
	run -0 sp-decode "$DUMP"
	END=$(jq -c 'select(.type == "end")' <<< "$output")
	[ "$(jq -r .trigger <<< "$END")" = "$trigger" ] || fail "end record: $END"
	DETAIL=$(jq -r .detail <<< "$END")
	sp-symbolize -o "$BATS_TEST_TMPDIR/dump.sym.sp" "$DUMP" 2>/dev/null
	run -0 sp-correlate -o "$BATS_TEST_TMPDIR/dump.cor.sp" "$BATS_TEST_TMPDIR/dump.sym.sp"
	run -0 sp-tree "$BATS_TEST_TMPDIR/dump.cor.sp"
	TREE=$output
}

@test "sp-record --trigger: a spec that cannot be read is a usage error naming it" {
	run --separate-stderr -64 sp-record '--trigger=span>soon' -- true
	[[ "$stderr" == *"invalid trigger 'span>soon': 'soon' is not a duration"* ]] || fail "$stderr"
	run --separate-stderr -64 sp-record --trigger=event=exec.nofield:x -- true
	[[ "$stderr" == *"invalid trigger 'event=exec.nofield:x': event proc_exec has no field 'nofield'"* ]] ||
		fail "$stderr"
	run --separate-stderr -64 sp-record --trigger=exit=SIGNOPE -- true
	[[ "$stderr" == *"'SIGNOPE' is neither nonzero, crash nor a signal"* ]] || fail "$stderr"
	run --separate-stderr -64 sp-record --trigger-every=1s -- true
	[[ "$stderr" == *"--trigger-every and --trigger-timeout need a trigger command"* ]] ||
		fail "$stderr"
	# a trigger with no window to write out would fire for nothing
	run --separate-stderr -64 sp-record --trigger=exit -o "$BATS_TEST_TMPDIR/x.sp" -- true
	[[ "$stderr" == *"need --flight"* ]] || fail "$stderr"
}

@test "sp-record --trigger=exit=crash: a child's SIGSEGV dumps the window, with what it did before" {
	need_flight
	run -0 sp-record --flight=16M --flight-after=100ms --trigger=exit=crash -o "$D" -- \
		sh -c 'cat /etc/hostname >/dev/null; sh -c "kill -SEGV \$\$"; sleep 1'
	check_dump exit
	[[ "$DETAIL" == "pid "*" (sh) killed by SIGSEGV" ]] || fail "detail: $DETAIL"
	[[ "$TREE" == *"/etc/hostname"* ]] || fail "the open before the crash is not in the tree"
}

@test "sp-record --trigger=exit: an exec is no exit, a clean exit fires nothing" {
	need_flight
	run -0 sp-record --flight=16M --flight-after=100ms --trigger=exit -o "$D" -- \
		sh -c 'sh -c "exec true"; true; sleep 0.5'
	[ -z "$(ls "$D")" ] || fail "dumps without a failure: $(ls "$D")"
}

@test "sp-record --trigger=event=exec:GLOB: the exec of a program dumps" {
	need_flight
	run -0 sp-record --flight=16M --flight-after=100ms --trigger='event=exec:*/sqlite3' -o "$D" -- \
		sh -c '/bin/true; sqlite3 :memory: "select 1" >/dev/null; sleep 1'
	check_dump event
	[[ "$DETAIL" == "proc_exec filename=/usr/bin/sqlite3 by pid "* ]] || fail "detail: $DETAIL"
}

@test "sp-record --trigger='span>TIME:GLOB': a slow Python function dumps" {
	need_flight
	cat > "$BATS_TEST_TMPDIR/slow.py" <<-'EOF'
	import time
	def handle(n):
	    time.sleep(n)
	handle(0.01)
	handle(0.3)
	time.sleep(0.5)
	EOF
	run -0 sp-record --spans=auto --flight=16M --flight-after=100ms '--trigger=span>0.2s:handle' -o "$D" -- \
		/usr/bin/python3 "$BATS_TEST_TMPDIR/slow.py"
	check_dump span
	# it fires once the span has been open past the threshold, or at its stop
	[[ "$DETAIL" == "span __main__.handle took 0.3"*" s (over 0.200 s) in pid "* ||
	   "$DETAIL" == "span __main__.handle open for 0."*" s (over 0.200 s) in pid "* ]] ||
		fail "detail: $DETAIL"
}

@test "sp-record --trigger-cmd: a command that exits 0 dumps, its first line says why" {
	need_flight
	# A run of the command (a shell) may take longer than 100 ms on a
	# loaded machine: its timeout is long. The recording lasts until the
	# dump is there (60 s at most), however long the runs take.
	run -0 sp-record --flight=16M --flight-after=100ms -o "$D" --trigger-every=100ms \
		--trigger-timeout=30s \
		--trigger-cmd="test -e $BATS_TEST_TMPDIR/flag && printf 'flag\\tup\\nsecond\\n'" -- \
		sh -c "sleep 0.5; touch $BATS_TEST_TMPDIR/flag; i=0
			while [ \$i -lt 600 ] && ! ls $D/dump-*-cmd.sp >/dev/null 2>&1; do sleep 0.1; i=\$((i + 1)); done
			sleep 0.2"
	dumps=("$D"/dump-*-cmd.sp)
	# the flag stays up: the rate limit keeps it to one dump or a few
	D2=$BATS_TEST_TMPDIR/one && mkdir -p "$D2" && mv "${dumps[0]}" "$D2/" && D=$D2
	check_dump cmd
	# the command's first line, escaped; the recorder may add how many more
	# triggers came while the dump waited for its aftermath
	[[ "$DETAIL" == 'flag\x09up' || "$DETAIL" == 'flag\x09up; '*' more trigger'* ]] ||
		fail "detail: $DETAIL"
}

@test "sp-record --trigger-cmd: a command that hangs is killed at its timeout and never fires" {
	need_flight
	run --separate-stderr -0 sp-record --flight=16M -o "$D" --trigger-every=200ms \
		--trigger-timeout=200ms --trigger-cmd='sleep 61.17 & exec sleep 61.17' -- sleep 1.5
	[ -z "$(ls "$D")" ] || fail "a killed command dumped: $(ls "$D")"
	[[ "$stderr" == *"trigger command still running after 0.200 s: killed"* ]] || fail "$stderr"
	run pgrep -f '^sleep 61.17$'
	[ "$status" = 1 ] || fail "its processes were left running: $output"
}
