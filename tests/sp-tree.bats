#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-tree: golden trees, stable output across runs, JSON, filters, colour.

load helper

@test "sp-tree: every golden case gives its .out" {
	cd "$FIXTURES"
	for in in *.in; do
		case=${in%.in}
		args="--stable"
		[ -f "$case.args" ] && args=$(cat "$case.args")
		run --separate-stderr sp-tree $args "$in"
		[ "$status" -eq 0 ] || { echo "$in: exit $status: $stderr"; false; }
		diff -u "$case.out" <(printf '%s\n' "$output") || { echo "$in differs"; false; }
	done
}

@test "sp-tree: correlated input and raw input give the same tree" {
	sp-correlate "$FIXTURES/app.in" > "$BATS_TEST_TMPDIR/c.sp"
	run -0 sp-tree "$BATS_TEST_TMPDIR/c.sp"
	diff -u "$FIXTURES/app-full.out" <(printf '%s\n' "$output")
}

@test "sp-tree: --stable is the same for two runs with other tids, times and interleaving" {
	run -0 sp-tree --stable "$FIXTURES/threads-a.in"
	a=$output
	run -0 sp-tree --stable "$FIXTURES/threads-b.in"
	[ "$a" = "$output" ]
	# and the plain trees do differ
	[ "$(sp-tree "$FIXTURES/threads-a.in")" != "$(sp-tree "$FIXTURES/threads-b.in")" ]
	# nothing run-dependent is left in the stable form
	! grep -E 'pid=|tid=|dur=|@\+|started' <<< "$a"
}

@test "sp-tree: JSON has every event, the fork nesting and the raise" {
	require_cmd jq
	run -0 bash -c "sp-tree --format=json --no-collapse '$FIXTURES/app.in' |
		jq '[.. | objects | select(.type == \"event\")] | length'"
	[ "$output" = "$(grep -c '"type":"event"' "$FIXTURES/app.in")" ]
	run -0 bash -c "sp-tree --format=json '$FIXTURES/app.in' | jq -r '
		.processes[0].children[0].children[] | select(.kind == \"proc_fork\")
		| .children[0] | \"\(.comm) \(.pid) \(.exit)\"'"
	assert_output "sh 4712 0"
	run -0 bash -c "sp-tree --format=json '$FIXTURES/app.in' | jq -r '
		.. | objects | select(.name? == \"Foo#boom\") | \"\(.end) \(.error) \(.message)\"'"
	assert_output "raised RuntimeError no config"
	run -0 bash -c "sp-tree --format=json '$FIXTURES/app.in' | jq -r '
		.. | objects | select(.type? == \"span\" and .count? == 3) | \"\(.name) \(.dur_ns)\"'"
	assert_output "Foo#tick 4000000"
}

@test "sp-tree: durations and offsets are computed from the records" {
	run -0 sp-tree "$FIXTURES/app.in"
	# load: 1.0010s to 1.0134s; the open 0.2ms in; the fork 3.1ms in
	assert_output --partial "[SPAN tid=4711 Foo#load at=app.rb:12 dur=12.4ms cpu=3.0ms self-cpu=2.0ms]"
	assert_output --partial "FILE path_open → /etc/app.conf (O_RDONLY|O_CLOEXEC) = 3  @+200.0us"
	assert_output --partial "PROC proc_fork → 4712  @+3.1ms"
	# open at the end: stopped by the end record at 1.204s
	assert_output --partial "Foo#serve at=app.rb:50 dur=154.0ms cpu=1.0ms] (open)"
	assert_output --partial "duration 204.0ms  lost 0"
}

@test "sp-tree: colour only when asked or on a terminal" {
	run -0 sp-tree "$FIXTURES/app.in"
	[[ "$output" != *$'\033['* ]]
	run -0 sp-tree --color=always "$FIXTURES/app.in"
	[[ "$output" == *$'\033[1;36mFoo#load'* ]]
	[[ "$output" == *$'\033[31m = -ENOENT'* ]]
}

@test "sp-tree: a stream without spans still shows processes and events" {
	grep -v '"span_' "$FIXTURES/app.in" > "$BATS_TEST_TMPDIR/nospans.jsonl"
	run -0 sp-tree --stable --no-collapse "$BATS_TEST_TMPDIR/nospans.jsonl"
	assert_output --partial "[PROC comm=ruby]"
	assert_output --partial "[SPAN <no-span>]"
	assert_output --partial "PROC proc_exec → /usr/bin/cat /etc/hostname"
	[ "$(grep -c '→' <<< "$output")" -eq 16 ]
}

@test "sp-tree: bad options exit 64" {
	run -64 sp-tree --events=bogus "$FIXTURES/app.in"
	run -64 sp-tree --format=xml "$FIXTURES/app.in"
	run -64 sp-tree --depth=0 "$FIXTURES/app.in"
	run -64 sp-tree --min-dur=soon "$FIXTURES/app.in"
	# --events=none is sp-record's word for no events: --no-events
	run -0 sp-tree --stable --events=none "$FIXTURES/app.in"
	no_events=$output
	run -0 sp-tree --stable --no-events "$FIXTURES/app.in"
	assert_equal "$no_events" "$output"
	! grep -F 'path_open' <<< "$output"
}

@test "sp-tree: a truncated spool still prints what came before, exit 2" {
	sp-decode --encode "$FIXTURES/app.in" > "$BATS_TEST_TMPDIR/app.sp"
	size=$(stat -c %s "$BATS_TEST_TMPDIR/app.sp")
	head -c $((size - 5)) "$BATS_TEST_TMPDIR/app.sp" > "$BATS_TEST_TMPDIR/cut.sp"
	run --separate-stderr -2 sp-tree --stable "$BATS_TEST_TMPDIR/cut.sp"
	[[ "$stderr" == *"cut.sp@"* ]]
	[[ "$output" == *"[SPAN Foo#load at=app.rb:12]"* ]]
}

# The headline pipeline on a real Ruby program, as root: sp-record's spans and
# kernel events, correlated, printed stable. The child's dynamic loader and
# locale opens depend on the system, so they are left out of the comparison.
@test "sp-tree: live: sp-record -- ruby app.rb | sp-correlate | sp-tree --stable" {
	require_root
	require_cmd ruby
	readelf -n /usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 2>/dev/null | grep -q method__entry ||
		skip "needs Debian's libruby 3.1 with USDT probes"
	run --separate-stderr -0 bash -c "sp-record --spans=auto --no-samples -- ruby '$FIXTURES/live/app.rb' |
		sp-correlate | sp-tree --stable --span='App#*'"
	got=$(grep -v -E 'path_open → /(etc/ld\.so\.cache|lib/|usr/)' <<< "$output")
	diff -u "$FIXTURES/live/app.tree" <(printf '%s\n' "$got")
}

@test "sp-tree: streaming with a small --buffer prints the same tree as holding it whole" {
	require_cmd jq
	cd "$FIXTURES"
	local n=0
	for in in *.in; do
		case=${in%.in}
		args="--stable"
		[ -f "$case.args" ] && args=$(cat "$case.args")
		if grep -q -- --format=json <<< "$args"; then
			run -0 bash -c "sp-tree $args --buffer=8 '$in' | jq -S .processes"
			[ "$output" = "$(jq -S .processes "$case.out")" ] || { echo "$in differs"; false; }
			continue
		fi
		# the tree lines are the golden's; only the '#' lines move
		run -0 sp-tree $args --buffer=8 "$in"
		diff -u <(grep -v '^#' "$case.out") <(grep -v '^#' <<< "$output") ||
			{ echo "$in differs"; false; }
		grep -q '^# end of \[PROC' <<< "$output" && n=$((n + 1))
	done
	# the buffer was small enough to stream most cases
	[ "$n" -ge 5 ]
}

@test "sp-tree: when it streams, the totals come at the end and JSON stays one document" {
	require_cmd jq
	run -0 sp-tree --buffer=1 --no-collapse "$FIXTURES/app.in"
	[ "${lines[0]}" = "# stackpulse recording  started 2025-12-02T10:00:00.000Z  (streamed: totals at the end)" ]
	[ "${lines[-3]}" = "# end of [PROC pid=4711 comm=ruby parent=4700]" ]
	[ "${lines[-2]}" = "# duration 204.0ms  lost 0" ]
	[ "${lines[-1]}" = "# processes 3  spans 8  events 16" ]
	run -0 bash -c "sp-tree --format=json --buffer=1 --no-collapse '$FIXTURES/app.in' |
		jq -c '[.duration_ns, .lost_events, (.processes | length), ([.. | objects | select(.type == \"event\")] | length)]'"
	[ "$output" = "[204000000,0,1,16]" ]
}


@test "sp-tree: 1,000,000 nested spans print within a 1 MiB stack, as -d says, whole, and as JSON" {
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1,"clock":"monotonic"}' \
		'{"type":"string","value":"f"}' \
		'{"type":"process","time":1,"pid":7,"ppid":1,"comm":"deep"}' |
		sp-decode --encode -o "$BATS_TEST_TMPDIR/deep.sp"
	span_marks start 1000000 "$BATS_TEST_TMPDIR/deep.sp"
	printf '\022\001\002' >> "$BATS_TEST_TMPDIR/deep.sp"	# end, 1 ns later
	run --separate-stderr -0 small_stack sp-tree -d 3 "$BATS_TEST_TMPDIR/deep.sp"
	[ "${#lines[@]}" -eq 7 ]
	assert_line --index 3 "└─ [SPAN tid=7 f dur=1.0ms] (open)"
	assert_line --index 6 "         └─ … 1 more"
	# every level; past 100 the line says how many levels are above its drawing
	run --separate-stderr -0 small_stack sp-tree --stable -o "$BATS_TEST_TMPDIR/all.txt" \
		"$BATS_TEST_TMPDIR/deep.sp"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/all.txt")" -eq 1000002 ]
	sed -n '103p;104p;$p' "$BATS_TEST_TMPDIR/all.txt" > "$BATS_TEST_TMPDIR/some.txt"
	indent=$(printf '%300s' '')
	run -0 cat "$BATS_TEST_TMPDIR/some.txt"
	assert_line --index 0 "$indent└─ [SPAN f] (open)"
	assert_line --index 1 "… +1 $indent└─ [SPAN f] (open)"
	assert_line --index 2 "… +999899 $indent└─ [SPAN f] (open)"
	# one JSON document, every span in it, every bracket closed
	run --separate-stderr -0 small_stack sp-tree --format=json -o "$BATS_TEST_TMPDIR/all.json" \
		"$BATS_TEST_TMPDIR/deep.sp"
	[ "$(grep -o '"type":"span"' "$BATS_TEST_TMPDIR/all.json" | wc -l)" -eq 1000000 ]
	[ "$(tr -cd '[' < "$BATS_TEST_TMPDIR/all.json" | wc -c)" -eq 1000002 ]
	[ "$(tr -cd ']' < "$BATS_TEST_TMPDIR/all.json" | wc -c)" -eq 1000002 ]
	[ "$(tr -cd '{' < "$BATS_TEST_TMPDIR/all.json" | wc -c)" -eq 1000002 ]
	[ "$(tr -cd '}' < "$BATS_TEST_TMPDIR/all.json" | wc -c)" -eq 1000002 ]
	[ "$(tail -c 5 "$BATS_TEST_TMPDIR/all.json")" = ']}]}' ]
}

# The end record knows the status of the recorded command only (sp-record
# waits for it); another process's comes from its proc_exit event.
@test "sp-tree: a process killed by a signal is shown killed by it, not exit=0" {
	require_root
	cd "$BATS_TEST_TMPDIR"
	sp-record -o k.sp -- sh -c 'sleep 5 & sleep .3; kill $!; wait; exit 3' 2>/dev/null || true
	run --separate-stderr -0 sp-tree --no-events k.sp
	grep -E '\[PROC pid=[0-9]+ comm=sleep parent=[0-9]+ killed=SIGTERM\]' <<< "$output"
	grep -E '\[PROC pid=[0-9]+ comm=sleep parent=[0-9]+ exit=0\]' <<< "$output"
	grep -E '\[PROC pid=[0-9]+ comm=sh parent=[0-9]+ exit=3\]' <<< "$output"
	run -0 sp-tree --format=json --no-events k.sp
	[ "$(jq -c '[.. | objects | select(.type == "process") |
		[.comm, .exit, .signal, .signal_name]] | sort' <<< "$output")" = \
	  '[["sh",3,null,null],["sleep",null,15,"SIGTERM"],["sleep",0,null,null]]' ]
}

@test "sp-tree: a recorded command that dumped core says so" {
	require_root
	cd "$BATS_TEST_TMPDIR"
	# SIGQUIT may be ignored where the test runs (a shell's background job):
	# the command sets it back to its default first.
	run sp-record -o c.sp -- env --default-signal=QUIT sh -c 'ulimit -c unlimited; kill -QUIT $$'
	[ "$status" -eq 131 ] || { echo "sp-record exited $status (not 131): $output"; false; }
	ls core* >/dev/null 2>&1 || skip "no core was dumped here (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
	run --separate-stderr -0 sp-tree --no-events c.sp
	grep -E '\[PROC pid=[0-9]+ comm=sh parent=[0-9]+ killed=SIGQUIT core-dumped\]' <<< "$output"
}

# summary.in: Fib#a (0-10ms) calls Fib#b recursively three deep (1-6, 2-5,
# 3-4ms; one CPU sample at 3.5ms) and Fib#c (7-9ms); Fib#c again at 11-12ms;
# another thread runs Fib#b from 0.5 to 2.5ms.
@test "sp-tree --summary: calls, total once per outermost call of a recursion, self, CPU" {
	run -0 sp-tree --summary --format=json "$FIXTURES/summary.in"
	row() { jq -c --arg m "$1" '.rows[] | select(.method == $m) |
		[.calls, .total_ns, .self_ns, .cpu_ns, .self_cpu_ns]' <<< "$output"; }
	[ "$(row Fib#a)" = '[1,10000000,3000000,1000000,0]' ]
	[ "$(row Fib#b)" = '[4,7000000,7000000,1000000,1000000]' ]
	[ "$(row Fib#c)" = '[2,3000000,3000000,0,0]' ]
	[ "$(jq -c '[.spans, .methods, .open_spans, .span_time_ns]' <<< "$output")" = '[7,3,0,13000000]' ]
	# sorted by self, then by name
	[ "$(jq -c '[.rows[].method]' <<< "$output")" = '["Fib#b","Fib#a","Fib#c"]' ]
	run -0 sp-tree --summary --sort=total --top=2 "$FIXTURES/summary.in"
	[ "$(grep -c 'Fib#' <<< "$output")" -eq 2 ]
	grep -E '^ +1 +10\.0ms +76\.9% +3\.0ms +23\.1% +1\.0ms +- +- +Fib#a +fib\.rb:10$' <<< "$output"
	grep -q 'top 2' <<< "$output"
	run -0 sp-tree --summary --sort=calls "$FIXTURES/summary.in"
	[ "$(grep -o 'Fib#[a-c]' <<< "$output" | tr '\n' ' ')" = "Fib#b Fib#c Fib#a " ]
	run -64 sp-tree --summary --sort=bogus "$FIXTURES/summary.in"
	run -64 sp-tree --summary --top=0 "$FIXTURES/summary.in"
}

# A [FRAME] (the events of an interpreted frame outside every span) lasts
# from its first event to its last, across any number of calls: the
# summary is of method spans and the gaps, and leaves it out.
@test "sp-tree --summary: a [FRAME] is not a method call" {
	cat > "$BATS_TEST_TMPDIR/frames.jsonl" <<-'EOF'
	{"type":"header","version":1,"start_wall_ns":1764669600000000000,"start_mono_ns":1000000000,"clock":"monotonic","sample_period":1000000,"flags":"0x8","event":"cpu-clock","command":"ruby app.rb"}
	{"type":"process","time":1000000000,"pid":100,"ppid":1,"comm":"ruby","exe":"/usr/bin/ruby3.1"}
	{"type":"span","id":1,"parent":0,"pid":100,"tid":100,"start":1000000000,"stop":1500000000,"end":"synthetic"}
	{"type":"span","id":2,"parent":1,"pid":100,"tid":100,"method":"glob","file":"<internal:dir>","line":220,"start":1100000000,"stop":1400000000,"end":"synthetic","events":2}
	{"type":"span","id":3,"parent":0,"pid":100,"tid":100,"runtime":"ruby","klass":"Foo","method":"run","file":"/app.rb","line":3,"start":1500000000,"stop":1600000000}
	EOF
	run -0 sp-tree "$BATS_TEST_TMPDIR/frames.jsonl"
	assert_line --partial "[FRAME tid=100 glob at=<internal:dir>:220 dur=300.0ms]"
	run -0 sp-tree --summary --format=json "$BATS_TEST_TMPDIR/frames.jsonl"
	[ "$(jq -c '[.rows[].method]' <<< "$output")" = '["<no-span>","Foo#run"]' ]
	[ "$(jq -c '.rows[] | select(.method == "<no-span>") | [.total_ns, .self_ns]' <<< "$output")" = '[500000000,500000000]' ]
	[ "$(jq -c '.span_time_ns' <<< "$output")" = '600000000' ]
}

@test "sp-tree --summary: correlated input and raw input give the same table" {
	sp-correlate "$FIXTURES/app.in" > "$BATS_TEST_TMPDIR/c.sp"
	[ "$(sp-tree --summary "$BATS_TEST_TMPDIR/c.sp")" = "$(sp-tree --summary "$FIXTURES/app.in")" ]
	run -0 sp-tree --summary --stable "$FIXTURES/app.in"
	grep -E '^ +1  Foo#load  app\.rb:12$' <<< "$output"
}

@test "sp-tree: with --span, -d counts from the span that matched, not from the process" {
	# Foo#connect is two levels down: its events are at level 3
	run -0 sp-tree --stable --span='Foo#connect' -d 1 "$FIXTURES/app.in"
	grep -F '[SPAN Foo#connect at=app.rb:20]' <<< "$output"
	grep -F 'dns_req → localhost A' <<< "$output"
	grep -F 'sock_connect → 127.0.0.1:8080' <<< "$output"
	! grep -F 'more' <<< "$output"
}

# Main#run (1 s) calls Main#big (800 ms) and 25,000 methods of 1 us each.
big_tree() {
	python3 - "$1" "$FIXTURES" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from marks import put, mark, start
start()
mark("span_start", 1000, "run")
mark("span_start", 100000000, "big")
mark("span_stop", 900000000, "big")
for i in range(25000):
	mark("span_start", 900001000 + 2000 * i, "m%d" % i)
	mark("span_stop", 900002000 + 2000 * i, "m%d" % i)
mark("span_stop", 1000001000, "run")
put({"type": "end", "time": 1000001000})
PY
}

@test "sp-tree: a large tree hides spans under 0.5% of their top-level span, and says so" {
	require_cmd python3
	big_tree "$BATS_TEST_TMPDIR/big.jsonl"
	run --separate-stderr -0 sp-tree "$BATS_TEST_TMPDIR/big.jsonl"
	[ "${#lines[@]}" -eq 6 ]
	assert_line --index 2 '[PROC pid=7 comm=ruby parent=1]'
	assert_line --index 3 '└─ [SPAN tid=7 Main#run at=main.rb:1 dur=1.000s]'
	assert_line --index 4 '   ├─ [SPAN tid=7 Main#big at=main.rb:1 dur=800.0ms]'
	assert_line --index 5 "   └─ … 25000 more, each under 0.5% of the top-level span's time (25.0ms in all)"
	run --separate-stderr -0 sp-tree --format=json "$BATS_TEST_TMPDIR/big.jsonl"
	[ "$(jq -c '.processes[0].children[0].children[1]' <<< "$output")" = \
	  '{"type":"elided","count":25000,"min_share":0.005,"dur_ns":25000000}' ]
	# --min-share=0 shows them all; so does a higher share hide Main#big
	run --separate-stderr -0 sp-tree --min-share=0 "$BATS_TEST_TMPDIR/big.jsonl"
	[ "$(grep -c 'Main#m[0-9]' <<< "$output")" -eq 25000 ]
	! grep -F '… ' <<< "$output"
	run --separate-stderr -0 sp-tree --stable --min-share=90% "$BATS_TEST_TMPDIR/big.jsonl"
	assert_line --index 3 "   └─ … 25001 more, each under 90% of the top-level span's time"
	run -64 sp-tree --min-share=101 "$BATS_TEST_TMPDIR/big.jsonl"
	run -64 sp-tree --min-share=x "$BATS_TEST_TMPDIR/big.jsonl"
}

@test "sp-tree: --span, --tid and --events in a large tree show what they select, however short: no default --min-share" {
	require_cmd python3
	big_tree "$BATS_TEST_TMPDIR/big.jsonl"
	run --separate-stderr -0 sp-tree --stable --span='Main#m12345' "$BATS_TEST_TMPDIR/big.jsonl"
	assert_line --partial 'Main#m12345'
	! grep -F '… ' <<< "$output"
	run --separate-stderr -0 sp-tree --stable --tid=7 "$BATS_TEST_TMPDIR/big.jsonl"
	[ "$(grep -c 'Main#m[0-9]' <<< "$output")" -eq 25000 ]
	# asked for, a share still hides
	run --separate-stderr -0 sp-tree --stable --tid=7 --min-share=0.5 "$BATS_TEST_TMPDIR/big.jsonl"
	[ "$(grep -c 'Main#m[0-9]' <<< "$output")" -eq 0 ]
}

@test "sp-tree: a small tree hides nothing unless --min-share is given" {
	run -0 sp-tree --stable "$FIXTURES/app.in"
	! grep -F 'more, each under' <<< "$output"
	# Foo#tick (3 times) and Foo#boom run 1 ms or less of the recording's 204 ms
	run -0 sp-tree --stable --min-share=1% "$FIXTURES/app.in"
	! grep -F -e 'Foo#tick' -e 'Foo#boom' <<< "$output"
	grep -F 'Foo#load' <<< "$output"
	grep -F "└─ … 4 more, each under 1% of the recording's time" <<< "$output"
}

# One span f holding 600,000 short calls of f: 1.2 million span marks, more
# than sp-correlate holds (--max-held, 1048576), so the tree is written
# before f ends. f's stop mark follows: f ended, it is not open.
@test "sp-tree: a span written before its end (--max-held) ends at its stop, not (open)" {
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1,"clock":"monotonic"}' \
		'{"type":"string","value":"f"}' \
		'{"type":"process","time":1,"pid":7,"ppid":1,"comm":"deep"}' |
		sp-decode --encode -o "$BATS_TEST_TMPDIR/early.sp"
	span_marks start 1 "$BATS_TEST_TMPDIR/early.sp"
	repeat_bytes 600000 '\012\006\002\007\007\000\000\001\013\006\002\007\007\000\000\001' \
		"$BATS_TEST_TMPDIR/early.sp"
	span_marks stop 1 "$BATS_TEST_TMPDIR/early.sp"
	printf '\022\001\002' >> "$BATS_TEST_TMPDIR/early.sp"	# end, 1 ns later
	run --separate-stderr -0 sp-correlate -o "$BATS_TEST_TMPDIR/c.sp" "$BATS_TEST_TMPDIR/early.sp"
	[[ "$stderr" == *"1 span trees were written before they closed"* ]]
	for in in early.sp c.sp; do
		run --separate-stderr -0 sp-tree "$BATS_TEST_TMPDIR/$in"
		assert_line --index 3 '└─ [SPAN tid=7 f dur=1.2ms] (written before its end: CPU counted until then)'
		! grep -F '(open)' <<< "$output"
		run --separate-stderr -0 sp-tree --format=json "$BATS_TEST_TMPDIR/$in"
		[ "$(jq -c '.processes[0].children[0] | [.end, .dur_ns, .written_early]' <<< "$output")" = \
		  '["stopped",1200001,true]' ]
		run --separate-stderr -0 sp-tree --summary --format=json "$BATS_TEST_TMPDIR/$in"
		[ "$(jq -c '[.open_spans, .written_early, .rows[0].calls, .rows[0].total_ns]' <<< "$output")" = \
		  '[0,1,600001,1200001]' ]
	done
}

@test "sp-tree and sp-decode --stats give one recording one duration: the header's start to the end record" {
	require_root
	require_cmd jq
	T=$BATS_TEST_TMPDIR
	run --separate-stderr -0 sp-record -o "$T/d.sp" -- sleep 0.3
	sp-decode "$T/d.sp" > "$T/d.jsonl"
	# the definition, computed from the records themselves
	want=$(jq -s '(.[] | select(.type=="end") | .time) -
		(.[] | select(.type=="header") | .start_mono_ns)' "$T/d.jsonl")
	[ "$want" -gt 300000000 ]	# at least the sleep
	run --separate-stderr -0 sp-tree --format=json "$T/d.sp"
	assert_equal "$(jq .duration_ns <<< "$output")" "$want"
	assert_equal "$(jq -r '.duration_note // "none"' <<< "$output")" "none"
	run --separate-stderr -0 sp-decode --stats-json "$T/d.sp"
	assert_equal "$(jq .duration_ns <<< "$output")" "$want"
	# and the text of both: the same number, without a note
	s=$(awk -v n="$want" 'BEGIN { printf "%.3f", n / 1e9 }')
	ms=$(awk -v n="$want" 'BEGIN { printf "%.1f", n / 1e6 }')
	run --separate-stderr -0 sp-decode --stats "$T/d.sp"
	assert_line "duration        $s s"
	run --separate-stderr -0 sp-tree "$T/d.sp"
	[[ "${lines[0]}" == *"  duration ${s}s  lost "* || "${lines[0]}" == *"  duration ${ms}ms  lost "* ]] ||
		fail "${lines[0]} (want $want ns)"
	# without its end record: from the first timed record to the last, said so
	grep -v '"type":"end"' "$T/d.jsonl" > "$T/noend.jsonl"
	want=$(jq -s '[.[] | select(.type == "sample" or .type == "event" or
		(.type | startswith("span_"))) | .time | select(. > 0)] | max - min' "$T/noend.jsonl")
	run --separate-stderr -0 sp-tree --format=json "$T/noend.jsonl"
	assert_equal "$(jq .duration_ns <<< "$output")" "$want"
	assert_equal "$(jq -r .duration_note <<< "$output")" "no end record: first to last record"
	run --separate-stderr -0 sp-decode --stats-json "$T/noend.jsonl"
	assert_equal "$(jq .duration_ns <<< "$output")" "$want"
	run --separate-stderr -0 sp-decode --stats "$T/noend.jsonl"
	assert_line --partial "s (no end record: first to last record)"
}

@test "sp-tree and sp-decode --stats of a segment read alone: it has an end, of a segment, and lasts to it" {
	require_cmd jq
	T=$BATS_TEST_TMPDIR
	app=$BATS_TEST_DIRNAME/fixtures/sp-correlate/app.in
	# segment 2 of a rotated recording: its header (start 1.000 s), the
	# process, records, and the end of reason "rotated" at 1.0053 s
	{ sed -n 1p "$app" | sed 's/}$/,"segment":2}/'; sed -n '2,24p' "$app"
	  echo '{"type":"end","time":1005300000,"reason":"rotated"}'; } |
		sp-decode --encode -o "$T/segment-000002.sp"
	run --separate-stderr -0 sp-tree "$T/segment-000002.sp"
	assert_line --index 0 --partial "  duration 5.3ms (a segment: the recording goes on in the next)  lost "
	refute_output --partial "no end record"
	run --separate-stderr -0 sp-tree --format=json "$T/segment-000002.sp"
	assert_equal "$(jq -c '[.duration_ns, .duration_note]' <<< "$output")" \
		'[5300000,"a segment: the recording goes on in the next"]'
	run --separate-stderr -0 sp-decode --stats "$T/segment-000002.sp"
	assert_line "duration        0.005 s (a segment: the recording goes on in the next)"
	# with the next segment, cut short, after it: no end record after all
	{ sed -n 1p "$app" | sed 's/}$/,"segment":3}/'; sed -n '2p;25,43p' "$app" | grep -v '"type":"end"'; } |
		sp-decode --encode -o "$T/segment-000003.sp"
	cat "$T/segment-000002.sp" "$T/segment-000003.sp" > "$T/joined.sp"
	run --separate-stderr -0 sp-tree "$T/joined.sp"
	assert_line --index 0 --partial "(no end record: first to last record)"
}

# Main#foo called three times, 10, 50 and 100 ms long, each calling Main#bar
# twice (half of it each), each bar calling Main#baz for a quarter of it.
@test "sp-tree: the children of a collapsed run sum every member's calls, not the first one's" {
	require_cmd python3 jq
	python3 - "$BATS_TEST_TMPDIR/runs.jsonl" "$FIXTURES" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from marks import put, mark, start
start()
t = 1000
for ms in (10, 50, 100):
	d = ms * 1000000
	mark("span_start", t, "foo")
	for half in (0, 1):
		b = t + half * d // 2
		mark("span_start", b, "bar")
		mark("span_start", b, "baz")
		mark("span_stop", b + d // 4, "baz")
		mark("span_stop", b + d // 2, "bar")
	mark("span_stop", t + d, "foo")
	t += d + 1000
put({"type": "end", "time": t})
PY
	run --separate-stderr -0 sp-tree "$BATS_TEST_TMPDIR/runs.jsonl"
	assert_line --index 3 '└─ ×3 [SPAN tid=7 Main#foo at=main.rb:1 dur=160.0ms]'
	assert_line --index 4 '   └─ ×6 [SPAN tid=7 Main#bar at=main.rb:1 dur=160.0ms]'
	assert_line --index 5 '      └─ ×6 [SPAN tid=7 Main#baz at=main.rb:1 dur=80.0ms]'
	run --separate-stderr -0 sp-tree --format=json "$BATS_TEST_TMPDIR/runs.jsonl"
	[ "$(jq -c '.processes[0].children[0] | [.count, .dur_ns, .children[0].count,
		.children[0].dur_ns, .children[0].children[0].count, .children[0].children[0].dur_ns]' \
		<<< "$output")" = '[3,160000000,6,160000000,6,80000000]' ]
	# one by one, each call has its own children
	run --separate-stderr -0 sp-tree --no-collapse "$BATS_TEST_TMPDIR/runs.jsonl"
	[ "$(grep -c 'Main#bar' <<< "$output")" -eq 6 ]
	! grep -F '×' <<< "$output"
	# --stable prints no times: the children of the run are one member's
	run --separate-stderr -0 sp-tree --stable "$BATS_TEST_TMPDIR/runs.jsonl"
	assert_line --index 2 '└─ ×3 [SPAN Main#foo at=main.rb:1]'
	assert_line --index 3 '   └─ ×2 [SPAN Main#bar at=main.rb:1]'
}

@test "sp-tree: forks that print the same are not one ×N line: each child's pid shows (--stable still collapses them)" {
	require_cmd python3
	python3 - "$BATS_TEST_TMPDIR/forks.jsonl" <<'PY'
import json, sys
out = open(sys.argv[1], "w")
def put(r): out.write(json.dumps(r) + "\n")
put({"type": "header", "version": 1, "start_mono_ns": 1000, "clock": "monotonic"})
put({"type": "process", "time": 1000, "pid": 7, "ppid": 1, "comm": "python3"})
for i, pid in enumerate((101, 102, 103)):
	t = 2000 + 10000 * i
	put({"type": "event", "time": t, "pid": 7, "tid": 7, "event": "proc_fork",
	     "child_pid": pid, "child_tid": pid, "flags": 0})
	put({"type": "process", "time": t, "pid": pid, "ppid": 7, "comm": "true"})
	put({"type": "event", "time": t + 5000, "pid": pid, "tid": pid, "event": "proc_exit",
	     "code": 0, "signal": 0, "core": 0})
put({"type": "end", "time": 50000})
PY
	run --separate-stderr -0 sp-tree "$BATS_TEST_TMPDIR/forks.jsonl"
	for pid in 101 102 103; do
		assert_line --partial "PROC proc_fork → $pid"
		assert_line --partial "[PROC pid=$pid comm=true parent=7"
	done
	! grep -F '×' <<< "$output"
	run --separate-stderr -0 sp-tree --stable "$BATS_TEST_TMPDIR/forks.jsonl"
	assert_line --partial '×3 PROC proc_fork'
}

@test "sp-tree: the line of spans --min-share hid says how many of them had events or a raise" {
	require_cmd python3 jq
	python3 - "$BATS_TEST_TMPDIR/big.jsonl" "$FIXTURES" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from marks import put, mark, start
start()
mark("span_start", 1000, "run")
for i in range(25000):
	t = 1001000 + 2000 * i
	mark("span_start", t, "m%d" % i)
	if i in (10, 20, 30):
		put({"type": "event", "time": t + 500, "pid": 7, "tid": 7, "event": "path_open",
		     "path": "/etc/m%d" % i, "flags": "0x0", "mode": "0x0", "result": 3})
	if i == 40:
		mark("span_raise", t + 500, "boom", klass="RuntimeError")
	mark("span_stop", t + 1000, "m%d" % i)
mark("span_stop", 1000001000, "run")
put({"type": "end", "time": 1000001000})
PY
	run --separate-stderr -0 sp-tree "$BATS_TEST_TMPDIR/big.jsonl"
	assert_line --partial "… 25000 more, each under 0.5% of the top-level span's time (25.0ms in all); 4 of them with events or a raise (--min-share=0 shows them)"
	run --separate-stderr -0 sp-tree --format=json "$BATS_TEST_TMPDIR/big.jsonl"
	[ "$(jq -c '.processes[0].children[0].children[0] | [.type, .count, .with_events]' <<< "$output")" = \
	  '["elided",25000,4]' ]
	run --separate-stderr -0 sp-tree --min-share=0 "$BATS_TEST_TMPDIR/big.jsonl"
	assert_line --partial 'path_open → /etc/m20'
}

# Main#foo three times, each with one long Main#big and 1, 5 and 5 tiny
# calls that --min-share hides.
@test "sp-tree: under a collapsed run, the line of hidden spans counts every member's" {
	require_cmd python3 jq
	python3 - "$BATS_TEST_TMPDIR/g.jsonl" "$FIXTURES" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from marks import put, mark, start
start()
M = 1000000
t = 1000
mark("span_start", t, "run")
for ntiny in (1, 5, 5):
	s = t + 1
	mark("span_start", s, "foo")
	mark("span_start", s + 1, "big")
	mark("span_stop", s + 10 * M, "big")
	u = s + 10 * M
	for i in range(ntiny):
		mark("span_start", u + 1, "tiny")
		u += 100
		mark("span_stop", u, "tiny")
	t = s + 30 * M
	mark("span_stop", t, "foo")
mark("span_stop", t + 1, "run")
put({"type": "end", "time": t + 2})
PY
	run --separate-stderr -0 sp-tree --min-share=0.01 "$BATS_TEST_TMPDIR/g.jsonl"
	assert_line --index 4 '   └─ ×3 [SPAN tid=7 Main#foo at=main.rb:1 dur=90.0ms]'
	assert_line --index 5 '      ├─ ×3 [SPAN tid=7 Main#big at=main.rb:1 dur=30.0ms]'
	assert_line --index 6 "      └─ … 11 more, each under 0.01% of the top-level span's time (1.1us in all)"
	run --separate-stderr -0 sp-tree --format=json --min-share=0.01 "$BATS_TEST_TMPDIR/g.jsonl"
	[ "$(jq -c '.processes[0].children[0].children[0].children[1] | [.type, .count, .dur_ns]' <<< "$output")" = \
	  '["elided",11,1089]' ]
}

# Every event under a [THREAD] node (at any depth) is that thread's; the
# gap span holds none of the worker threads' own; $1 the jq path to check.
threads_hold_their_own() {
	local tree=$1
	# no event of another thread inside a thread's node
	run -0 jq '[.. | objects | select(.type == "thread") | .tid as $t
		| .. | objects | select(.type == "event" and .tid != $t)] | length' <<< "$tree"
	assert_output 0
	# no worker's event straight under the process's gap span
	run -0 jq '[.processes[] | .pid as $p | .children[]? | select(.name == "<no-span>")
		| .children[]? | select(.type == "event" and .tid != $p)] | length' <<< "$tree"
	assert_output 0
}

@test "sp-tree: a worker thread's own opens, frames and exit outside every span are under its [THREAD]" {
	require_root
	command -v gcc > /dev/null || skip "needs gcc"
	cat > "$BATS_TEST_TMPDIR/mt.c" <<'EOC'
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
static void *worker(void *a)
{
	close(open(a ? "/etc/hostname" : "/etc/passwd", O_RDONLY));
	return 0;
}
int main(void)
{
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], 0, worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], 0);
	return 0;
}
EOC
	gcc -O1 -pthread -o "$BATS_TEST_TMPDIR/mt" "$BATS_TEST_TMPDIR/mt.c"
	run -0 timeout 60 sp-record -o "$BATS_TEST_TMPDIR/mt.sp" -- "$BATS_TEST_TMPDIR/mt"
	tree=$(sp-correlate "$BATS_TEST_TMPDIR/mt.sp" | sp-tree --format=json)
	threads_hold_their_own "$tree"
	# each worker's open and its exit are in its own node
	for f in /etc/hostname /etc/passwd; do
		run -0 jq --arg f "$f" '[.. | objects | select(.type == "thread")
			| select([.. | objects | select(.kind == "path_open" and .fields.path == $f)] | length > 0)
			| select([.. | objects | select(.kind == "proc_exit" and .fields.thread == 1)] | length == 1)] | length' <<< "$tree"
		assert_output 1
	done
	# Python's threads: their interpreted frames' lines too
	cat > "$BATS_TEST_TMPDIR/mt.py" <<'EOP'
import threading
def work(path):
    with open(path) as f:
        f.read()
ts = [threading.Thread(target=work, args=(p,)) for p in ("/etc/hostname", "/etc/passwd")]
for t in ts:
    t.start()
for t in ts:
    t.join()
EOP
	run -0 timeout 60 sp-record -o "$BATS_TEST_TMPDIR/py.sp" -- /usr/bin/python3 "$BATS_TEST_TMPDIR/mt.py"
	tree=$(sp-correlate "$BATS_TEST_TMPDIR/py.sp" | sp-tree --format=json)
	threads_hold_their_own "$tree"
	run -0 jq '[.. | objects | select(.type == "thread") | .. | objects
		| select(.type == "span" and .name == "work")] | length' <<< "$tree"
	[ "$output" -ge 1 ] || fail "no frame of work under a thread: $(sp-correlate "$BATS_TEST_TMPDIR/py.sp" | sp-tree | head -60)"
}

@test "sp-tree: a --pid no process of the input has is said, naming it; one it has is not" {
	run --separate-stderr -0 sp-tree --pid=4712 --pid=999999 "$FIXTURES/app.in"
	assert_equal "$stderr" "sp-tree: warning: --pid=999999: no process of the input has this pid: nothing is shown for it"
	assert_output --partial "[PROC pid=4712"
	refute_output --partial "[PROC pid=4711"
	run --separate-stderr -0 sp-tree --pid=4712 "$FIXTURES/app.in"
	assert_equal "$stderr" ""
}

@test "sp-tree: Debian's python3: Python's own audit events are counted, not shown; its imports are one line a run; --all-audit shows all" {
	require_root
	[ -x /usr/bin/python3 ] || skip "needs Debian's /usr/bin/python3"
	run -0 timeout 60 sp-record -o "$BATS_TEST_TMPDIR/a.sp" -- /usr/bin/python3 -c \
		'import json, subprocess; subprocess.run(["true"]); open("/etc/hostname").close()'
	sp-correlate "$BATS_TEST_TMPDIR/a.sp" > "$BATS_TEST_TMPDIR/c.sp"
	n_audit=$(sp-decode "$BATS_TEST_TMPDIR/c.sp" | jq -s '[.[] | select(.type == "event" and .event == "audit")] | length')
	[ "$n_audit" -gt 20 ] || skip "no audit events recorded ($n_audit): $(sp-record --check 2>&1 | grep -i audit)"
	run --separate-stderr -0 sp-tree "$BATS_TEST_TMPDIR/c.sp"
	[[ "${lines[2]}" =~ \(([0-9]+)\ audit\ events\ of\ Python\'s\ own\ not\ shown:\ --all-audit\)$ ]] ||
		fail "counts line: ${lines[2]}"
	hidden=${BASH_REMATCH[1]}
	refute_output --partial "audit → exec"
	refute_output --partial "audit → marshal.loads"
	refute_output --partial "audit → open /etc/hostname"	# the kernel's path_open says it
	assert_output --partial "FILE path_open → /etc/hostname"
	assert_output --regexp "RT   audit → import ×[0-9]+: .*json"
	assert_output --partial "RT   audit → subprocess.Popen true"
	short=${#lines[@]}
	# all of them: each one a line, and as many as the recording has
	run --separate-stderr -0 sp-tree --all-audit --no-collapse "$BATS_TEST_TMPDIR/c.sp"
	assert_output --partial "audit → exec"
	assert_output --partial "audit → open /etc/hostname"
	[ "$(grep -c 'RT   audit → ' <<< "$output")" -eq "$n_audit" ]
	[ "${#lines[@]}" -gt "$((short + hidden / 2))" ]
	run --separate-stderr -0 sp-tree --format=json "$BATS_TEST_TMPDIR/c.sp"
	[ "$(jq .audit_hidden <<< "$output")" -eq "$hidden" ]
	[ "$(jq '[.. | objects | select(.kind == "audit") | (.count // 1)] | add' <<< "$output")" -eq "$((n_audit - hidden))" ]
}

@test "sp-tree: a --container no process of the input is in is said (names are not recorded: ids); one that is, is not" {
	{
		echo '{"type":"header","version":1,"start_wall_ns":1764668400000000000,"start_mono_ns":1000000000,"command":"x"}'
		echo '{"type":"process","time":1000000000,"pid":10,"ppid":1,"comm":"ruby","runtime":"podman","container":"d2ad567a613b"}'
		echo '{"type":"process","time":1000000000,"pid":20,"ppid":1,"comm":"sh"}'
	} > "$BATS_TEST_TMPDIR/c.jsonl"
	run --separate-stderr -0 sp-tree --container=d2ad --container=podman:d2 "$BATS_TEST_TMPDIR/c.jsonl"
	assert_equal "$stderr" ""
	assert_output --partial "[PROC pid=10 comm=ruby"
	refute_output --partial "pid=20"
	run --separate-stderr -0 sp-tree --container=myapp --container=docker:d2ad "$BATS_TEST_TMPDIR/c.jsonl"
	assert_line --index 0 --partial "# stackpulse recording"
	refute_output --partial "[PROC"
	[ "${#stderr_lines[@]}" -eq 2 ] || fail "$stderr"
	[[ "${stderr_lines[0]}" == "sp-tree: warning: --container=myapp: no process of the input is in a container whose id starts so (a container's name is not recorded: give its id"* ]]
	[[ "${stderr_lines[1]}" == "sp-tree: warning: --container=docker:d2ad: no process"* ]]
}

@test "sp-tree: a forged stream whose forks would put a process under itself ends, each process printed once" {
	local c=$BATS_TEST_DIRNAME/fuzz/corpus/fuzz-correlate
	# 100 forks 200 in a span of 200's; 100 and 200 fork each other
	# through threads and a third process
	for f in tree-fork-cycle.jsonl tree-fork-cycle-threads.jsonl tree-forged-tids.jsonl; do
		for o in --pid=200 --pid=100 --buffer=3 --stable; do
			# (bounded: a cycle once grew the JSON form by 1 GB a second)
			run --separate-stderr bash -c 'ulimit -v 2000000; exec timeout 10 sp-tree "$@"' _ \
				$o --format=json "$c/$f"
			[ "$status" -ne 124 ] || fail "$f $o: no end"
			[ "$status" -le 2 ] || fail "$f $o: status $status: $stderr"
		done
	done
	run --separate-stderr -0 timeout 20 sp-tree --pid=200 "$c/tree-fork-cycle.jsonl"
	assert_equal "$(grep -c '\[PROC pid=200' <<< "$output")" 1
	assert_output --partial "[SPAN tid=200"
}

@test "sp-tree: threads started before sp-record -p: each worker's own records of the gap under a [THREAD] of its own; --tid shows them" {
	require_root
	[ -x /usr/bin/python3 ] || skip "needs Debian's /usr/bin/python3"
	cat > "$BATS_TEST_TMPDIR/workers.py" <<'EOP'
import threading, time
def work(path):
    while True:
        with open(path) as f:
            f.read()
        time.sleep(0.02)
for p in ("/etc/hostname", "/etc/passwd"):
    threading.Thread(target=work, args=(p,), daemon=True).start()
time.sleep(30)
EOP
	/usr/bin/python3 "$BATS_TEST_TMPDIR/workers.py" &
	local pid=$!
	sleep 0.5
	run timeout 30 sp-record -p "$pid" -d 1.5 -o "$BATS_TEST_TMPDIR/w.sp"
	kill "$pid"; wait "$pid" 2>/dev/null || true
	[ "$status" -eq 0 ] || fail "sp-record: $output"
	tree=$(sp-correlate "$BATS_TEST_TMPDIR/w.sp" | sp-tree --format=json)
	threads_hold_their_own "$tree"
	for f in /etc/hostname /etc/passwd; do
		run -0 jq --arg f "$f" '[.. | objects | select(.type == "thread")
			| select([.. | objects | select(.kind == "path_open" and .fields.path == $f)] | length > 0)
			| .tid] | unique | length' <<< "$tree"
		assert_output 1
	done
	# --tid of one worker: its opens, not the other's
	wtid=$(jq --arg f /etc/hostname '[.. | objects | select(.type == "thread")
		| select([.. | objects | select(.kind == "path_open" and .fields.path == $f)] | length > 0)
		| .tid][0]' <<< "$tree")
	run -0 bash -c "sp-correlate '$BATS_TEST_TMPDIR/w.sp' | sp-tree --tid=$wtid"
	assert_output --partial "[THREAD tid=$wtid]"
	assert_output --partial "/etc/hostname"
	refute_output --partial "/etc/passwd"
}

# A line that stands for N events (×N) states only what holds for each of
# them: a peer's port or an fd that differs among them shows as "*".
@test "sp-tree: a collapsed line shows '*' for a port or an fd its events differ in, not the first one's" {
	require_root
	require_cmd jq
	[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3"
	cat > "$BATS_TEST_TMPDIR/srv.py" <<'EOP'
import socket
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
clients = [socket.create_connection(srv.getsockname()) for _ in range(4)]
def serve():
    for _ in range(4):
        conn, _ = srv.accept()
        conn.close()
def keep_open():
    return [open("/etc/hostname") for _ in range(3)]
serve()
files = keep_open()
EOP
	run -0 timeout 60 sp-record -o "$BATS_TEST_TMPDIR/srv.sp" -- /usr/bin/python3 "$BATS_TEST_TMPDIR/srv.py"
	run -0 sp-tree --no-collapse "$BATS_TEST_TMPDIR/srv.sp"
	[ "$(grep -oE 'sock_accept → from 127\.0\.0\.1:[0-9]+' <<< "$output" | sort -u | wc -l)" -eq 4 ] ||
		skip "not 4 accepts from 4 ports recorded: $(grep accept <<< "$output")"
	run -0 sp-tree "$BATS_TEST_TMPDIR/srv.sp"
	assert_output --regexp '×4 NET  sock_accept → from 127\.0\.0\.1:\* = [0-9]+'
	refute_output --regexp '×[0-9]+ NET  sock_accept → from 127\.0\.0\.1:[0-9]'
	assert_output --regexp '×3 FILE path_open → /etc/hostname \(O_RDONLY\|O_CLOEXEC\) = \*'
	refute_output --regexp '×[0-9]+ FILE path_open → /etc/hostname .* = [0-9]'
	# JSON: the text says the same, a field that differs is null
	run -0 sp-tree --format=json "$BATS_TEST_TMPDIR/srv.sp"
	run -0 jq -c '[.. | objects | select(.kind == "sock_accept" and .count == 4)
		| [.text, .fields.port, (.fields.addr | length > 0)]]' <<< "$output"
	assert_output --regexp '^\[\["from 127\.0\.0\.1:\* = [0-9]+",null,true\]\]$'
	# --stable shows neither port nor fd: one line, as before
	run -0 sp-tree --stable "$BATS_TEST_TMPDIR/srv.sp"
	assert_output --partial '×4 NET  sock_accept → from 127.0.0.1 = fd'
}

# sp-record -- /nonexistent/cmd: the exec fails, so no process record names
# the command's process; its proc_exit and the header's command line do.
@test "sp-tree: a command that could not be run shows its exit 127 and the program it was to run" {
	require_root
	require_cmd jq
	run -127 sp-record -o "$BATS_TEST_TMPDIR/nf.sp" -- /nonexistent/cmd
	run --separate-stderr -0 sp-tree "$BATS_TEST_TMPDIR/nf.sp"
	assert_line --regexp '^\[PROC pid=[0-9]+ comm=cmd exit=127\]$'
	assert_line --partial 'PROC proc_exit → exit 127'
	run -0 sp-tree --format=json "$BATS_TEST_TMPDIR/nf.sp"
	[ "$(jq -c '[.processes[] | [.comm, .exit]]' <<< "$output")" = '[["cmd",127]]' ]
}

# A Ruby program without method spans: its events are under [FRAME]s, the
# innermost interpreted frame of their stack, which are no method calls.
@test "sp-tree: the counts line tells spans from frames, as --summary counts spans" {
	require_root
	require_cmd rake
	require_cmd jq
	printf 'task :default do\n sh "echo hi | wc -c"\nend\n' > "$BATS_TEST_TMPDIR/Rakefile"
	run -0 timeout 60 sp-record -o "$BATS_TEST_TMPDIR/rake.sp" -- rake -f "$BATS_TEST_TMPDIR/Rakefile"
	run -0 sp-tree --no-collapse --min-share=0 "$BATS_TEST_TMPDIR/rake.sp"
	frames=$(grep -c '\[FRAME ' <<< "$output") || skip "no [FRAME] in the tree: $(head -20 <<< "$output")"
	spans=$(grep -c '\[SPAN ' <<< "$output")
	assert_line --index 2 "# processes $(grep -c '\[PROC ' <<< "$output")  spans $spans  frames $frames  events ${lines[2]##*events }"
	run -0 sp-tree --summary --format=json "$BATS_TEST_TMPDIR/rake.sp"
	[ "$(jq -c '[.spans, .frames]' <<< "$output")" = "[$spans,$frames]" ]
	run -0 sp-tree --summary "$BATS_TEST_TMPDIR/rake.sp"
	assert_line --index 0 --regexp "^# stackpulse summary  spans $spans  methods "
	assert_line --index 1 --partial "# $frames frames ([FRAME] in the tree"
}
