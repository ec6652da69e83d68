#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-correlate: golden outputs, the stream's rules checked with jq, bad input.

load helper

setup() {
	require_cmd jq
}

@test "sp-correlate: every golden case gives its .out" {
	cd "$FIXTURES"
	for in in *.in; do
		case=${in%.in}
		args="--format=json"
		[ -f "$case.args" ] && args=$(cat "$case.args")
		run --separate-stderr sp-correlate $args "$in"
		[ "$status" -eq 0 ] || { echo "$in: exit $status: $stderr"; false; }
		diff -u "$case.out" <(printf '%s\n' "$output") || { echo "$in differs"; false; }
	done
}

@test "sp-correlate: span ids are dense from 1 and defined before every use" {
	for in in "$FIXTURES"/*.in; do
		run -0 bash -c "sp-correlate --format=json '$in' 2>/dev/null | jq -r '
			if .type == \"span\" then \"S \(.id) \(.parent) \(.fork_span // 0)\"
			elif .type == \"sample\" or .type == \"event\" then \"U \(.span)\" else empty end'"
		next=1
		while read -r kind a b c; do
			if [ "$kind" = S ]; then
				[ "$a" -eq "$next" ] || { echo "$in: span $a where $next expected"; false; }
				[ "$b" -lt "$a" ] && [ "$c" -lt "$a" ]
				next=$((next + 1))
			else
				[ "$a" -gt 0 ] && [ "$a" -lt "$next" ] ||
					{ echo "$in: use of span $a before it"; false; }
			fi
		done <<< "$output"
	done
	run -0 bash -c "sp-correlate --format=json '$FIXTURES/app.in' | grep -c '\"type\":\"span\"'"
	assert_output 8	# load connect tick*3 gap boom serve
}

@test "sp-correlate: nothing is dropped: every sample, event and mark comes out once" {
	for in in "$FIXTURES"/*.in; do
		for t in sample event span_start span_stop span_raise process process_end module_end lost; do
			a=$(grep -c "\"type\":\"$t\"" "$in" || true)
			b=$(sp-correlate --format=json "$in" 2>/dev/null | grep -c "\"type\":\"$t\"" || true)
			[ "$a" = "$b" ] || { echo "$in: $t: $a in, $b out"; false; }
		done
	done
}

@test "sp-correlate: a span's counts add up to what carries its id" {
	for in in "$FIXTURES"/*.in; do
		sp-correlate --format=json "$in" 2>/dev/null > "$BATS_TEST_TMPDIR/c.jsonl"
		run -0 jq -rs '
			[.[] | select(.type == "span")] as $spans
			| [.[] | select(.type == "event")] as $ev
			| [.[] | select(.type == "sample")] as $sa
			| $spans[] | . as $s
			| [($ev | map(select(.span == $s.id)) | length), ($s.events // 0),
			   ($sa | map(select(.span == $s.id)) | length), ($s.samples // 0)]
			| select(.[0] != .[1] or .[2] != .[3]) | tostring' "$BATS_TEST_TMPDIR/c.jsonl"
		assert_output ""
	done
}

@test "sp-correlate: spool in, spool out, same records as JSON in" {
	sp-decode --encode "$FIXTURES/app.in" > "$BATS_TEST_TMPDIR/app.sp"
	sp-correlate "$BATS_TEST_TMPDIR/app.sp" > "$BATS_TEST_TMPDIR/out.sp"
	run -0 sp-decode "$BATS_TEST_TMPDIR/out.sp"
	diff -u "$FIXTURES/app.out" <(printf '%s\n' "$output")
}

@test "sp-correlate: correlating twice gives the same stream" {
	sp-correlate "$FIXTURES/app.in" | sp-correlate --format=json > "$BATS_TEST_TMPDIR/twice"
	diff -u "$FIXTURES/app.out" "$BATS_TEST_TMPDIR/twice"
}

@test "sp-correlate: records out of order are reordered within the window, late ones reported" {
	run --separate-stderr -0 sp-correlate --format=json "$FIXTURES/order.in"
	# the event at 3ms came after the stop at 4ms: still inside handler
	[ "$(jq -c 'select(.type=="event" and .path=="/srv/data") | [.span,.rule]' <<< "$output")" = '[1,"thread"]' ]
	[[ "$stderr" == *"1 records came later than the reorder window (--window) allows"* ]]
	[[ "$stderr" == *"1 span stops matched no open span"* ]]
	[[ "$stderr" == *"1 pids had records but no process record before them"* ]]
	# without a window the same event is late and falls in the gap
	run --separate-stderr -0 sp-correlate --format=json --window=0 "$FIXTURES/order.in"
	[ "$(jq -c 'select(.type=="event" and .path=="/srv/data") | .rule' <<< "$output")" = '"gap"' ]
}

@test "sp-correlate: a span overlapping lost records ends incomplete" {
	run --separate-stderr -0 sp-correlate --format=json "$FIXTURES/lost.in"
	[ "$(jq -r 'select(.type=="span") | "\(.method)=\(.end // "stopped")"' <<< "$output" | tr '\n' ' ')" = "before=stopped across=incomplete after=stopped " ]
	[[ "$stderr" == *"1 spans overlap lost records"* ]]
}

@test "sp-correlate: a process's late probes (lost, late_probes) take no span away: spans across stay stopped; sp-decode --stats and sp-tree count the process" {
	sed 's/"what":"samples","count":12,"cpu":1/"what":"late_probes","count":1/' "$FIXTURES/lost.in" \
		> "$BATS_TEST_TMPDIR/late.jsonl"
	grep -q '"late_probes"' "$BATS_TEST_TMPDIR/late.jsonl"
	run --separate-stderr -0 sp-correlate --format=json "$BATS_TEST_TMPDIR/late.jsonl"
	[ "$(jq -r 'select(.type=="span") | "\(.method)=\(.end // "stopped")"' <<< "$output" | tr '\n' ' ')" = "before=stopped across=stopped after=stopped " ]
	[[ "$stderr" != *"overlap lost records"* ]]
	# the name survives the spool: encoded, decoded, counted
	run -0 sp-decode --encode -o "$BATS_TEST_TMPDIR/late.sp" "$BATS_TEST_TMPDIR/late.jsonl"
	run -0 bash -c "sp-decode '$BATS_TEST_TMPDIR/late.sp' | jq -c 'select(.type == \"lost\") | [.what, .pid, .start, .time]'"
	assert_output '["late_probes",10,1400,1500]'
	run -0 sp-decode --stats "$BATS_TEST_TMPDIR/late.sp"
	assert_line --regexp '^late probes +1 processes'
	assert_line --regexp '^lost +0 samples, 0 events, 0 spans'
	run -0 bash -c "sp-decode --stats-json '$BATS_TEST_TMPDIR/late.sp' | jq .late_probes"
	assert_output 1
	run -0 bash -c "sp-tree --format=json '$BATS_TEST_TMPDIR/late.sp' | jq .late_probes"
	assert_output 1
	run -0 sp-tree "$BATS_TEST_TMPDIR/late.sp"
	assert_output --partial "processes with late probes 1"
}

@test "sp-correlate: a bad JSON line is reported with its line, the rest still comes out" {
	{ head -3 "$FIXTURES/app.in"; echo '{"type":"sample","time":"x"}'; tail -n +4 "$FIXTURES/app.in"; } \
		> "$BATS_TEST_TMPDIR/bad.jsonl"
	run --separate-stderr -1 sp-correlate --format=json "$BATS_TEST_TMPDIR/bad.jsonl"
	[[ "$stderr" == *"bad.jsonl:4: "* ]]
	[ "$(grep -c '"type":"span"' <<< "$output")" -eq 8 ]
}

@test "sp-correlate: a stream without spans gives gap spans only" {
	grep -v '"span_' "$FIXTURES/app.in" > "$BATS_TEST_TMPDIR/nospans.jsonl"
	run -0 bash -c "sp-correlate --format=json '$BATS_TEST_TMPDIR/nospans.jsonl' | jq -r 'select(.type==\"span\") | .end' | sort -u"
	assert_output "synthetic"
}

@test "sp-correlate: bad options exit 64" {
	run -64 sp-correlate --window=abc "$FIXTURES/app.in"
	run -64 sp-correlate --format=xml "$FIXTURES/app.in"
	run -64 sp-correlate --max-held=3 "$FIXTURES/app.in"
}


@test "sp-correlate: 1,000,000 nested spans within a 1 MiB stack; a sample in the innermost keeps 4096 of its 100000 frames" {
	awk 'BEGIN {
		print "{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1,\"clock\":\"monotonic\"}"
		print "{\"type\":\"string\",\"value\":\"f\"}"
		print "{\"type\":\"process\",\"time\":1,\"pid\":7,\"ppid\":1,\"comm\":\"deep\"}"
		print "{\"type\":\"frame\",\"module\":0,\"rel\":\"0x20\",\"addr\":\"0x20\",\"pid\":7}"
		for (i = 1; i <= 100000; i++)
			printf "{\"type\":\"stack\",\"parent\":%d,\"frame\":1}\n", i - 1
	}' | sp-decode --encode -o "$BATS_TEST_TMPDIR/deep.sp" 2>/dev/null
	span_marks start 1000000 "$BATS_TEST_TMPDIR/deep.sp"
	# a sample: time +1, pid 7, tid 7, cpu 0, stack 100000, weight 1
	printf '\010\010\002\007\007\000\240\215\006\001' >> "$BATS_TEST_TMPDIR/deep.sp"
	span_marks stop 1000000 "$BATS_TEST_TMPDIR/deep.sp"
	printf '\022\001\002' >> "$BATS_TEST_TMPDIR/deep.sp"	# end, 1 ns later
	run --separate-stderr -0 small_stack sp-correlate --stats --format=json --max-held=4000000 \
		-o "$BATS_TEST_TMPDIR/out.jsonl" "$BATS_TEST_TMPDIR/deep.sp"
	[[ "$stderr" == *"1000000 spans (0 gaps)"* ]]
	[[ "$stderr" == *"deep.sp@"*": stack 4097 is deeper than 4096 frames"* ]]
	# span n is the parent of span n + 1; the tree is written whole once
	# its outermost span stops (--max-held: all its records are held till then),
	# and every span stopped
	run -0 awk -F'"parent":' '/"type":"span"/ { n++; split($2, a, ","); if (a[1] != n - 1) bad++
		if ($0 ~ /"end":/) notstopped++ } END { print n, bad + 0, notstopped + 0 }' \
		"$BATS_TEST_TMPDIR/out.jsonl"
	assert_output "1000000 0 0"
	grep '"type":"sample"' "$BATS_TEST_TMPDIR/out.jsonl" > "$BATS_TEST_TMPDIR/sample.jsonl"
	run -0 jq -c '[.span, .rule, (.frames | length), .truncated]' "$BATS_TEST_TMPDIR/sample.jsonl"
	assert_output '[1000000,"thread",4096,95904]'
}
