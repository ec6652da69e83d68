#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record's command line as perf users type it, and what it says it did.

load helper

WL=$SP_EXAMPLES/workload

setup() {
	require_cmd jq
	[ -x "$WL" ] || skip "build/examples/workload is not built (make)"
	OUT=$BATS_TEST_TMPDIR
}

header() {
	sp-decode "$1" | head -1
}

@test "sp-record: -g alone is the default call graph and leaves the next argument alone" {
	require_root
	run --separate-stderr -0 sp-record -g -o "$OUT/g.sp" --events=none --spans=none -- "$WL" 0.1
	[ "$(header "$OUT/g.sp" | jq -r .call_graph)" = auto ]
	# the default copy holds Ruby's deep stacks (docs/unwinding.md)
	header "$OUT/g.sp" | jq -e '.features | test("(^| )stack-size=32768( |$)")'
	# the whole machine: as much while each CPU's ring (of 64 MiB in all)
	# holds 512 samples, never under 8 KiB; a size given is taken as it is
	local ncpus want=8192
	ncpus=$(getconf _NPROCESSORS_ONLN)
	while [ $((want * 2)) -le 32768 ] && [ $((want * 2 * 512 * ncpus)) -le $((64 << 20)) ]; do
		want=$((want * 2))
	done
	run --separate-stderr -0 sp-record -a -d 0.2 -o "$OUT/a.sp" --events=none --spans=none
	header "$OUT/a.sp" | jq -e --arg s "stack-size=$want" '.features | test("(^| )" + $s + "( |$)")'
	run --separate-stderr -0 sp-record -a -d 0.2 --stack-size=16384 -o "$OUT/a2.sp" \
		--events=none --spans=none
	header "$OUT/a2.sp" | jq -e '.features | test("(^| )stack-size=16384( |$)")'
	# a mode as its own word after -g is still taken (perf's --call-graph dwarf)
	run --separate-stderr -0 sp-record -g fp -o "$OUT/f.sp" --events=none --spans=none -- "$WL" 0.1
	[ "$(header "$OUT/f.sp" | jq -r .call_graph)" = fp ]
	run --separate-stderr -0 sp-record --call-graph dwarf,16384 -o "$OUT/d.sp" --events=none \
		--spans=none -- "$WL" 0.1
	header "$OUT/d.sp" | jq -e '.call_graph == "dwarf" and (.features | test("stack-size=16384"))'
	# -g right before the command: the command is not taken for a mode
	run --separate-stderr -0 sp-record -o "$OUT/c.sp" --events=none --spans=none -g "$WL" 0.1
	[ "$(header "$OUT/c.sp" | jq -r .command)" = "$WL 0.1" ]
	run --separate-stderr -64 sp-record --call-graph=frames -- true
	[[ "$stderr" == *"invalid call graph 'frames'"* ]]
}

@test "sp-record: a second sampling event is refused, not put in the place of the first" {
	run --separate-stderr -64 sp-record -e cpu-clock -e page-faults -o "$OUT/e.sp" -- true
	[[ "$stderr" == *"one sampling event per recording: '-e page-faults' after '-e cpu-clock'"* ]]
	[ ! -e "$OUT/e.sp" ] || [ ! -s "$OUT/e.sp" ]
	# the same event twice is one event
	require_root
	run --separate-stderr -0 sp-record -e page-faults -e page-faults -o "$OUT/p.sp" \
		--events=none --spans=none -- "$WL" 0.1
	[ "$(header "$OUT/p.sp" | jq -r .event)" = page-faults ]
}

@test "sp-record -v counts each process once, however many times it execs" {
	require_root
	# sh, then five children that exec /bin/true: six processes, eleven process records
	run --separate-stderr -0 sp-record -v -o "$OUT/v.sp" --events=none --spans=none -- \
		sh -c 'for i in 1 2 3 4 5; do /bin/true; done'
	n=$(sp-decode "$OUT/v.sp" | jq -s '[.[] | select(.type=="process") | .pid] | unique | length')
	[ "$n" = 6 ]
	[[ "$stderr" == *" lost, 6 processes, "* ]]
}

@test "sp-correlate names the pids that had records but no process record (the first eight)" {
	{
		echo '{"type":"header","version":1,"start_wall_ns":1,"start_mono_ns":1000}'
		echo '{"type":"process","time":1000,"pid":20,"ppid":1,"comm":"app"}'
		for p in 31 32 33 34 35 36 37 38 39 40; do
			echo "{\"type\":\"sample\",\"time\":2000,\"pid\":$p,\"tid\":$p,\"cpu\":0,\"weight\":1}"
		done
		echo '{"type":"sample","time":2000,"pid":20,"tid":20,"cpu":0,"weight":1}'
	} > "$OUT/in.json"
	run --separate-stderr -0 sp-correlate --format=json "$OUT/in.json"
	assert_equal "$stderr" "sp-correlate: warning: 10 pids had records but no process record before them: 31, 32, 33, 34, 35, 36, 37, 38 and 2 more"
	head -3 "$OUT/in.json" > "$OUT/one.json"
	run --separate-stderr -0 sp-correlate --format=json "$OUT/one.json"
	assert_equal "$stderr" "sp-correlate: warning: 1 pids had records but no process record before them: 31"
}

@test "sp-record --help gives sp-record's own exit statuses and dump names" {
	run --separate-stderr -0 sp-record --help
	# it skips no records: the readers' "1 some records skipped" is not its
	[[ "$output" != *"1 some records skipped"* ]]
	assert_output --partial "Exit status: the command's"
	assert_output --partial "1 a canary of --check"
	assert_output --partial "141 output closed"
	# the dumps' sequence number (docs/sp-record.md, --flight)
	assert_output --partial "dump-NNNNNN-TIME-TRIGGER.sp"
}
