#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# A rotated recording's directory of segments, read by every filter as one
# stream, followed across rotations; a flight dump of several streams. The
# segments are cut here from sp-correlate's app.in (JSON lines encoded),
# as a rotating recorder writes them: each opens with a header and the
# process again, the closed ones end with reason "rotated".

load helper

APP=$BATS_TEST_DIRNAME/fixtures/sp-correlate/app.in

setup() {
	T=$BATS_TEST_TMPDIR
	HDR=$(sed -n 1p "$APP")
	PROC=$(sed -n 2p "$APP")
}

# seg_json N FIRST LAST [END]: segment N's JSON lines: lines FIRST-LAST of
# app.in after the header and the process, then END (a record, or nothing).
seg_json() {
	echo "${HDR%\}},\"segment\":$1}"
	echo "$PROC"
	sed -n "$2,$3p" "$APP"
	[ -z "${4:-}" ] || echo "$4"
}

ROT1='{"type":"end","time":1002400000,"reason":"rotated"}'
ROT2='{"type":"end","time":1005300000,"reason":"rotated"}'

# Three segments in $1: "load" starts in the first and stops in the third,
# "connect" starts in the first and stops in the second.
make_segments() {
	mkdir -p "$1"
	seg_json 1 3 8 "$ROT1" | sp-decode --encode -o "$1/segment-000001.sp"
	seg_json 2 9 24 "$ROT2" | sp-decode --encode -o "$1/segment-000002.sp"
	seg_json 3 25 43 | sp-decode --encode -o "$1/segment-000003.sp"
}

# The records that are not definitions, in order.
timed() {
	grep -v -e '"type":"header"' -e '"type":"string"' -e '"type":"process"' "$@"
}

@test "segments: a directory of three segments reads as the one recording" {
	make_segments "$T/d"
	run --separate-stderr sp-decode "$T/d"
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(timed <<< "$output")" "$(sp-decode "$APP" | timed)"
	# each segment's header (ids start again), no "rotated" end
	assert_equal "$(grep -c '"type":"header"' <<< "$output")" 3
	refute_output --partial '"rotated"'
	# the segment alone keeps its end, so that it round-trips
	run sp-decode "$T/d/segment-000001.sp"
	assert_line --index $((${#lines[@]} - 1)) "$ROT1"
	# what the summary counts: the process once, its samples and events
	sp-decode --stats "$T/d" > "$T/stats"
	grep -qx 'processes       3' "$T/stats"
	grep -qx 'samples         4' "$T/stats"
	grep -q '^streams         3 ' "$T/stats"
	sp-decode --stats-json "$T/d" | grep -q '"processes":3,'
}

@test "segments: a process replayed in each segment is one process in sp-tree" {
	make_segments "$T/d"
	run --separate-stderr sp-tree --stable "$T/d"
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$output" "$(cat "$BATS_TEST_DIRNAME/fixtures/sp-tree/app.out")"
	assert_equal "$(sp-tree "$T/d" | grep -c 'PROC pid=4711')" 1
	# the same through sp-correlate, and from the segments joined in one file
	cat "$T"/d/segment-*.sp > "$T/joined.sp"
	run --separate-stderr sh -c "sp-correlate '$T/joined.sp' | sp-tree --stable"
	assert_success
	assert_equal "$output" "$(cat "$BATS_TEST_DIRNAME/fixtures/sp-tree/app.out")"
	# folded stacks as from the one recording
	assert_equal "$(sp-flame -f folded "$T/d")" "$(sp-flame -f folded "$APP")"
}

@test "segments: a span started in one segment and stopped in a later one is whole in sp-correlate" {
	make_segments "$T/d"
	run --separate-stderr sh -c "sp-correlate '$T/d' | sp-decode | grep '\"type\":\"span\"'"
	assert_success
	assert_equal "$stderr" ""
	# load: 1001000000 (segment 1) to 1013400000 (segment 3), stopped
	assert_line --regexp '"method":"load".*"start":1001000000,"stop":1013400000\}$'
	# connect: segment 1 to segment 2, with the sample of segment 2
	assert_line --regexp '"method":"connect".*"start":1002000000,"stop":1003000000,"samples":1,'
	refute_output --partial 'span stops matched no open span'
}

@test "segments: sp-tree --summary counts a span that crosses segments once, whole, as of the one recording" {
	make_segments "$T/d"
	whole=$(sp-tree --summary "$APP")
	# "load" runs through all three segments: one call, stopped, not open
	grep -Eq '^ +1 +12\.4ms .* Foo#load  app\.rb:12$' <<< "$whole" || fail "$whole"
	run --separate-stderr -0 sp-tree --summary "$T/d"
	assert_equal "$output" "$whole"
	run --separate-stderr -0 sh -c "sp-correlate '$T/d' | sp-tree --summary"
	assert_equal "$output" "$whole"
	cat "$T"/d/segment-*.sp > "$T/joined.sp"
	run --separate-stderr -0 sp-tree --summary "$T/joined.sp"
	assert_equal "$output" "$whole"
}

@test "segments: sp-export names every part of a span that crosses segments, the middle one too" {
	make_segments "$T/d"
	run --separate-stderr -0 sh -c "sp-export --json '$T/d' | jq -r '.resourceSpans[].scopeSpans[].spans[] | .name'"
	refute_line "span"
	refute_line "span carried over"
	# load runs through the three segments: a part in each, all named
	assert_equal "$(grep -cx 'Foo#load' <<< "$output")" 3
}

@test "segments: a real Ruby method over several segments is named in each of sp-export's parts" {
	require_root
	require_cmd ruby
	mkdir "$T/r"
	printf 'def outer\n  4.times { inner }\nend\ndef inner\n  sleep 0.3\nend\nouter\n' > "$T/long.rb"
	run --separate-stderr -0 sp-record --no-samples --spans=ruby --segment=250ms -o "$T/r" -- ruby "$T/long.rb"
	[ "$(ls "$T/r" | wc -l)" -ge 4 ] || fail "$(ls "$T/r")"
	run --separate-stderr -0 sh -c "sp-export --json '$T/r' | jq -r '.resourceSpans[].scopeSpans[].spans[] | \"\(.name) \(.startTimeUnixNano)\"'"
	refute_line --regexp "^span "
	refute_line --regexp "^span carried over "
	# outer's parts: one start, one in each segment it was open in
	(( $(grep -c '^Object#outer ' <<< "$output") >= 4 )) || fail "$output"
	[ "$(grep '^Object#outer ' <<< "$output" | sort -u | wc -l)" = 1 ] || fail "$output"
}

@test "segments: every filter reads a directory" {
	make_segments "$T/d"
	for tool in "sp-symbolize -o $T/sym.sp" "sp-correlate -o $T/c.sp" "sp-flame -f svg" \
		    "sp-tree" "sp-export --json"; do
		run --separate-stderr $tool "$T/d"
		[ "$status" = 0 ] || fail "$tool: status $status: $stderr"
	done
	assert_equal "$(sp-decode "$T/sym.sp" | timed | grep -vc '"type":"symbol"')" \
		"$(sp-decode "$APP" | timed | grep -c .)"
}

@test "segments: a segment missing in the middle or at the start is said once, by number" {
	make_segments "$T/d"
	cp "$T/d/segment-000003.sp" "$T/d/segment-000007.sp"
	rm "$T/d/segment-000001.sp" "$T/d/segment-000003.sp"
	touch "$T/d/segment-1.sp" "$T/d/notes" "$T/d/segment-000004.sp.tmp"
	run --separate-stderr sp-decode "$T/d"
	assert_success
	assert_equal "$stderr" "sp-decode: warning: '$T/d': the oldest segment is 2: segment 1 is gone (deleted by the recorder's --keep cap, or lost)
sp-decode: warning: '$T/d': segments 3-6 are missing (deleted by the recorder's --keep cap, or lost): the stream jumps from segment 2 to 7"
	assert_equal "$(grep -c '"type":"header"' <<< "$output")" 2
}

@test "segments: an empty directory is an empty stream, said; a file is not taken for one" {
	mkdir "$T/empty"
	run --separate-stderr sp-decode "$T/empty"
	assert_success
	assert_output ""
	assert_equal "$stderr" "sp-decode: warning: '$T/empty' holds no segments (segment-NNNNNN.sp)"
	# A directory of other files (a checkout, flight dumps) is no recording
	mkdir "$T/other"
	cp "$BATS_TEST_DIRNAME/fixtures/sp-decode/all-kinds.sp" "$T/other/dump.sp"
	run --separate-stderr -2 sp-decode "$T/other"
	assert_output ""
	assert_equal "$stderr" "sp-decode: error: '$T/other' holds no segments (segment-NNNNNN.sp): not a recording (name a spool file in it, or the directory sp-record -o DIR wrote)"
	run --separate-stderr -2 sp-tree "$T/other"
}

# wait_for PID: it ends by itself within 10 s; $st its status.
wait_for() {
	local i
	for i in $(seq 100); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -9 "$1"
		fail "sp-decode --follow did not stop"
	fi
	st=0
	wait "$1" || st=$?
}

@test "segments: sp-decode --follow DIR reads across rotations while the writer goes on, and stops at the real end" {
	make_segments "$T/all"
	mkdir "$T/d"
	# the first segment without its end yet, as it grows
	seg_json 1 3 8 | sp-decode --encode -o "$T/part1"
	n=$(stat -c %s "$T/part1")
	head -c $((n - 40)) "$T/all/segment-000001.sp" > "$T/d/segment-000001.sp"
	sp-decode --follow "$T/d" > "$T/out" 2> "$T/err" &
	pid=$!
	(	# the writer: finishes segment 1, then starts 2 later, 3 still later
		sleep 0.3
		tail -c +$((n - 39)) "$T/all/segment-000001.sp" >> "$T/d/segment-000001.sp"
		sleep 0.5
		cp "$T/all/segment-000002.sp" "$T/d/segment-000002.sp.tmp"
		mv "$T/d/segment-000002.sp.tmp" "$T/d/segment-000002.sp"
		sleep 0.5
		head -c 100 "$T/all/segment-000003.sp" > "$T/d/segment-000003.sp"
		sleep 0.3
		tail -c +101 "$T/all/segment-000003.sp" >> "$T/d/segment-000003.sp"
	) &
	writer=$!
	sleep 0.6
	kill -0 "$pid"	# waiting for the next segment after the rotation
	wait "$writer"
	wait_for "$pid"
	assert_equal "$st" 0
	assert_equal "$(cat "$T/err")" ""
	assert_equal "$(cat "$T/out")" "$(sp-decode "$T/all")"
}

@test "segments: sp-decode --follow DIR says a segment deleted before it was read and goes on" {
	make_segments "$T/all"
	mkdir "$T/d"
	cp "$T/all/segment-000001.sp" "$T/d/"
	sp-decode --follow "$T/d" > "$T/out" 2> "$T/err" &
	pid=$!
	sleep 0.5
	kill -0 "$pid"	# segment 1 rotated: waiting for 2
	# the cap deleted 2 before the follower came to it
	cp "$T/all/segment-000003.sp" "$T/d/segment-000003.sp"
	wait_for "$pid"
	assert_equal "$st" 0
	assert_equal "$(cat "$T/err")" "sp-decode: warning: '$T/d': segment 2 is missing (deleted by the recorder's --keep cap, or lost): the stream jumps from segment 1 to 3"
	assert_equal "$(grep -c '"type":"header"' "$T/out")" 2
	grep -q '"reason":"signal"' "$T/out"
}

@test "segments: a flight dump's streams, window losses and trigger in sp-decode --stats and sp-tree" {
	{
		seg_json 1 3 24
		seg_json 2 25 42
		echo '{"type":"lost","time":1000000000,"what":"window","count":1234}'
		echo '{"type":"end","time":1204000000,"reason":"trigger","trigger":"signal","detail":"SIGUSR1 from pid 99","trigger_time":1150000000}'
	} | sp-decode --encode -o "$T/dump-20251202T100000Z-signal.sp"
	run --separate-stderr sp-decode --stats "$T/dump-20251202T100000Z-signal.sp"
	assert_success
	assert_line 'processes       3'
	assert_line 'window          dropped 1234 records (older than the flight recorder'"'"'s window)'
	assert_line 'dump: trigger signal at 2025-12-02T10:00:00.150Z (+0.150 s): SIGUSR1 from pid 99'
	sp-decode --stats-json "$T/dump-20251202T100000Z-signal.sp" |
		jq -e '.streams == 2 and .lost_window == 1234 and .trigger == "signal" and
			.trigger_detail == "SIGUSR1 from pid 99" and .trigger_time == 1150000000' >/dev/null
	run --separate-stderr sp-tree "$T/dump-20251202T100000Z-signal.sp"
	assert_success
	assert_line --index 0 --partial '  window dropped 1234 records'
	assert_line --index 1 '# dump: trigger signal at 2025-12-02T10:00:00.150Z (+150.0ms): SIGUSR1 from pid 99'
	assert_line --index 3 '# processes 3  spans 8  events 16'
	# the span of both streams is whole
	assert_line --partial 'Foo#load at=app.rb:12 dur=12.4ms'
}

@test "segments: a hostile directory: links, FIFOs, odd names are not read, nothing blocks (as nobody)" {
	require_root
	nobody_tools
	D=$(mktemp -d /tmp/sp-segdir.XXXXXX)
	chmod 755 "$D"
	make_segments "$D/d"
	ln -sf /etc/shadow "$D/d/segment-000002.sp"
	rm -f "$D/d/segment-000003.sp"
	mkfifo "$D/d/segment-000003.sp"
	ln -s "$D/d/segment-000001.sp" "$D/d/segment-000004.sp"
	mkdir "$D/d/segment-000005.sp"
	touch "$D/d/$(printf 'segment-000006.sp\nx')" "$D/d/segment-$(printf '%0200d' 6).sp"
	ln -s "$D/d" "$D/link"
	chmod -R a+rX "$D"
	run --separate-stderr timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$NOBODY_BIN/sp-decode" "$D/d"
	assert_equal "$status" 1
	assert_equal "$(grep -c '"type":"header"' <<< "$output")" 1
	refute_output --partial 'root:'
	assert_equal "$stderr" "sp-decode: error: '$D/d/segment-000002.sp': a symbolic link; skipped
sp-decode: error: '$D/d/segment-000003.sp': not a regular file: a FIFO; skipped
sp-decode: error: '$D/d/segment-000004.sp': a symbolic link; skipped
sp-decode: error: '$D/d/segment-000005.sp': not a regular file: a directory; skipped"
	# a link to the directory is not followed either
	run --separate-stderr timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$NOBODY_BIN/sp-decode" "$D/link"
	assert_equal "$status" 2
	assert_equal "$stderr" "sp-decode: error: '$D/link' is a symbolic link to a directory: segments are read only from a directory named itself"
	rm -rf "$D" "$NOBODY_DIR"
}
