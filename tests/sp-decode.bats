#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-decode: spool <-> JSON lines, bad input, following a growing file,
# --stats. Fixtures and their expected messages: fixtures/sp-decode/README.md.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
	ALL=$FIXTURES/all-kinds.jsonl
	SMALL=$FIXTURES/small.jsonl
}

# big.sp: a stream with one string, the module it names, a frame, a stack
# and 524288 samples on it (2^$2 with a second argument; 8 bytes each, made
# here byte by byte, not by the writer), then an end record. Sets
# SAMPLES_AT, the first sample's offset.
make_big() {
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1}' \
		'{"type":"string","value":"app"}' \
		'{"type":"module","pid":1,"start":"0x1000","end":"0x2000","path":"app"}' \
		'{"type":"frame","module":1,"rel":"0x10","addr":"0x1010"}' \
		'{"type":"stack","frame":1}' | sp-decode --encode -o "$1"
	SAMPLES_AT=$(stat -c %s "$1")
	# kind 8, length 6: time +1 ns, pid 1, tid 1, cpu 0, stack 1, weight 1
	printf '\010\006\002\001\001\000\001\001' > "$T/rec"
	for _ in $(seq "${2:-19}"); do
		cat "$T/rec" "$T/rec" > "$T/rec2" && mv "$T/rec2" "$T/rec"
	done
	cat "$T/rec" >> "$1"
	printf '\022\000' >> "$1"	# end record
}

@test "sp-decode: every JSON fixture round-trips spool -> JSON -> spool byte for byte" {
	n=0
	for f in "$BATS_TEST_DIRNAME"/fixtures/*/*.jsonl; do
		# Only fixtures that are whole, valid recordings.
		sp-decode --encode -o "$T/a.sp" "$f" 2>/dev/null || continue
		run -0 sp-decode -o "$T/a.jsonl" "$T/a.sp"
		run -0 sp-decode --encode -o "$T/b.sp" "$T/a.jsonl"
		cmp "$T/a.sp" "$T/b.sp" || fail "$f: the spool changed on the round trip"
		run -0 sp-decode -o "$T/b.jsonl" "$T/b.sp"
		cmp "$T/a.jsonl" "$T/b.jsonl" || fail "$f: the JSON changed on the round trip"
		n=$((n + 1))
	done
	[ "$n" -ge 2 ]
	# The every-kind fixture (status 1: it carries an unknown kind) too.
	run -1 sp-decode --encode -o "$T/a.sp" "$ALL"
	run --separate-stderr -1 sp-decode "$T/a.sp"
	printf '%s\n' "$output" > "$T/a.jsonl"
	run -1 sp-decode --encode -o "$T/b.sp" "$T/a.jsonl"
	cmp "$T/a.sp" "$T/b.sp"
}

@test "sp-decode: the committed every-kind spool is what the JSON encodes to, and decodes to it" {
	# The magic, then a header record (kind 1) at offset 8.
	run -0 od -An -tx1 -N10 "$FIXTURES/all-kinds.sp"
	assert_equal "$(echo $output | cut -d' ' -f1-9)" "93 53 50 4f 4f 4c 31 0a 01"
	run -1 sp-decode --encode -o "$T/a.sp" "$ALL"
	cmp "$T/a.sp" "$FIXTURES/all-kinds.sp"
	# Every record but the strings (which decoding lists where they are
	# first used) is the hand-written line, field for field.
	run --separate-stderr -1 sp-decode "$FIXTURES/all-kinds.sp"
	diff <(jq -S -c 'select(.type != "string")' "$ALL") \
		<(printf '%s\n' "$output" | jq -S -c 'select(.type != "string") | del(.frames)')
	# The strings: the same values; their ids count up from 1.
	diff <(printf '%s\n' "$output" | jq -r 'select(.type == "string") | .id') \
		<(seq 1 "$(printf '%s\n' "$output" | grep -c '"type":"string"')")
	# Frames inline, leaf first: stack 3 is frame 3 under frame 1 under frame 2.
	run -0 jq -c -r 'select(.type == "sample" and .stack == 3) | [.frames[].frame] | @csv' \
		<<< "$output"
	assert_output "3,1,2"
}

@test "sp-decode: a hand-written recording decodes to what it says" {
	run --separate-stderr -0 sp-decode "$SMALL"
	assert_equal "$(printf '%s\n' "$output" | wc -l)" 24
	# JSON in, JSON out: the same records.
	diff <(jq -S -c 'del(.frames)' "$SMALL") <(printf '%s\n' "$output" | jq -S -c 'del(.frames)')
	run -0 jq -c -r 'select(.type == "sample") | if .frames then [.frames[].rel] | join(">")
		else "-" end' <<< "$output"
	assert_output $'0x200>0x100\n0x300>0x100\n0x100\n0x200>0x100\n-'
}

@test "sp-decode: a record that refers to an undefined id is skipped with its offset, status 1" {
	run --separate-stderr -1 sp-decode "$FIXTURES/undefined-stack.sp"
	assert_equal "$stderr" "sp-decode: error: $FIXTURES/undefined-stack.sp@10: sample record refers to an undefined stack; skipped"
	assert_equal "$(jq -r .type <<< "$output" | tr '\n' ' ')" "header string process "
	assert_line --index 2 '{"type":"process","time":0,"pid":7,"ppid":1,"comm":"x"}'
}

@test "sp-decode: one corrupt record says a few of those it leaves undefined and counts the rest, status 1" {
	make_big "$T/lost.sp" 12
	# the string (02 04 03 'app', after the header) with its kind byte
	# flipped to f8: a kind 632 (f8 04) of 3 bytes, and the module, frame,
	# stack and 4096 samples after it refer to what it defined
	LOST_AT=$((8 + 2 + $(od -An -tu1 -j9 -N1 "$T/lost.sp")))	# magic, header 01 len
	assert_equal "$(od -An -tx1 -j "$LOST_AT" -N1 "$T/lost.sp")" " 02"
	cp "$T/lost.sp" "$T/bad.sp"
	printf '\370' | dd of="$T/bad.sp" bs=1 seek="$LOST_AT" conv=notrunc status=none
	run --separate-stderr -1 sp-decode "$T/bad.sp"
	assert_equal "${#stderr_lines[@]}" 7
	assert_equal "${stderr_lines[0]}" "sp-decode: warning: $T/bad.sp@$LOST_AT: unknown record kind 632, far past the 24 kinds of this version, which the stream's header says wrote it: the input looks corrupt here; passed on undecoded"
	assert_equal "${stderr_lines[1]}" "sp-decode: error: $T/bad.sp@$((LOST_AT + 6)): module record refers to an undefined string; skipped"
	assert_equal "${stderr_lines[5]}" "sp-decode: error: $T/bad.sp@$((SAMPLES_AT + 8)): sample record refers to an undefined stack; skipped"
	# 3 definitions and 4096 samples skipped: 5 said, the rest counted
	assert_equal "${stderr_lines[6]}" "sp-decode: error: $T/bad.sp: 4094 more records referring to undefined definitions skipped (first at $T/bad.sp@$((SAMPLES_AT + 16)))"
	# the rest is written: the header, the corrupt record, the end
	assert_equal "$(jq -r .type <<< "$output" | tr '\n' ' ')" "header unknown end "
	# and so for every tool that reads records
	for t in sp-tree sp-flame sp-correlate sp-symbolize; do
		run --separate-stderr -1 "$t" "$T/bad.sp"
		[ "${#stderr_lines[@]}" -le 8 ]
		assert_equal "${stderr_lines[0]}" "$t: warning: $T/bad.sp@$LOST_AT: unknown record kind 632, far past the 24 kinds of this version, which the stream's header says wrote it: the input looks corrupt here; passed on undecoded"
		[[ "$stderr" == *"
$t: error: $T/bad.sp: 4094 more records referring to undefined definitions skipped (first at $T/bad.sp@$((SAMPLES_AT + 16)))"* ]]
	done
	# JSON lines: the stack's line cut short, its 4096 samples skipped
	sp-decode "$T/lost.sp" | sed '5s/}$//' > "$T/bad.jsonl"
	run --separate-stderr -1 sp-decode --stats "$T/bad.jsonl"
	assert_equal "${#stderr_lines[@]}" 7
	assert_equal "${stderr_lines[0]}" "sp-decode: error: $T/bad.jsonl:5: invalid JSON: '}' expected near end of file; line skipped"
	assert_equal "${stderr_lines[1]}" "sp-decode: error: $T/bad.jsonl:6: sample record refers to an undefined stack; line skipped"
	assert_equal "${stderr_lines[6]}" "sp-decode: error: $T/bad.jsonl: 4091 more lines referring to undefined definitions skipped (first at $T/bad.jsonl:11)"
	assert_line --index 0 "records         5"
}

@test "sp-decode: a recording with a corrupt byte gives a few lines, the first naming it, and the exact count of the rest, status 1" {
	require_root
	sp-record -o "$T/run.sp" -- sh -c 'ls /usr/bin >/dev/null; sleep 0.2' 2>/dev/null
	# the record after the header: its first string
	sp-decode "$T/run.sp" | head -1 | sp-decode --encode -o "$T/hdr.sp"
	at=$(stat -c %s "$T/hdr.sp")
	assert_equal "$(od -An -tx1 -j "$at" -N1 "$T/run.sp")" " 02"
	cp "$T/run.sp" "$T/bad.sp"
	printf '\370' | dd of="$T/bad.sp" bs=1 seek="$at" conv=notrunc status=none
	all=$(sp-decode "$T/run.sp" | wc -l)
	run --separate-stderr -1 sp-decode "$T/bad.sp"
	# what is left out: one line less per record skipped
	skipped=$((all - ${#lines[@]}))
	[ "$skipped" -gt 5 ]
	assert_equal "${#stderr_lines[@]}" 7
	[[ "${stderr_lines[0]}" == "sp-decode: warning: $T/bad.sp@$at: unknown record kind "*", far past the 24 kinds of this version, "*"the input looks corrupt here; passed on undecoded" ]]
	[[ "${stderr_lines[1]}" == "sp-decode: error: $T/bad.sp@"*" record refers to an undefined "*"; skipped" ]]
	[[ "${stderr_lines[6]}" == "sp-decode: error: $T/bad.sp: $((skipped - 5)) more records referring to undefined definitions skipped (first at $T/bad.sp@"*")" ]]
}

@test "sp-decode: an unknown record kind is passed on, warned about once, status 1" {
	run --separate-stderr -1 sp-decode "$FIXTURES/unknown-kind.sp"
	# 99: far past the kinds of version 1 in a stream of version 1
	assert_equal "$stderr" "sp-decode: warning: $FIXTURES/unknown-kind.sp@10: unknown record kind 99, far past the 24 kinds of this version, which the stream's header says wrote it: the input looks corrupt here; passed on undecoded"
	assert_line --index 1 '{"type":"unknown","kind":99,"raw":"6162"}'
	assert_equal "${#lines[@]}" 4
	# And written back as it was.
	run -0 bash -c 'sp-decode "$1" 2>/dev/null | sp-decode --encode 2>/dev/null | cmp - "$1"' _ \
		"$FIXTURES/unknown-kind.sp"
}

@test "sp-decode: a record kind past any a version could use is corrupt, not a newer one's" {
	# the small spool without its end, then a record of a kind and 0 bytes
	grep -v '"type":"end"' "$SMALL" | sp-decode --encode -o "$T/base.sp"
	at=$(stat -c %s "$T/base.sp")
	# 65535, the largest a newer version may use: passed on, status 1;
	# from a stream of this version, more likely a corrupt byte
	{ cat "$T/base.sp"; printf '\377\377\003\000'; } > "$T/k.sp"
	run --separate-stderr -1 sp-decode "$T/k.sp"
	assert_equal "$stderr" "sp-decode: warning: $T/k.sp@$at: unknown record kind 65535, far past the 24 kinds of this version, which the stream's header says wrote it: the input looks corrupt here; passed on undecoded"
	assert_line --index $((${#lines[@]} - 1)) '{"type":"unknown","kind":65535,"raw":""}'
	# from a newer version's stream (its header says so), a newer kind
	grep -v '"type":"end"' "$SMALL" | sed '1s/"version":1/"version":2/' |
		sp-decode --encode -o "$T/newer.sp"
	{ cat "$T/newer.sp"; printf '\377\377\003\000'; } > "$T/k.sp"
	run --separate-stderr -1 sp-decode "$T/k.sp"
	assert_equal "$stderr" "sp-decode: warning: $T/k.sp@$at: unknown record kind 65535 (from a newer StackPulse?) passed on undecoded"
	# and one just past the kinds of this version, from any stream
	{ cat "$T/base.sp"; printf '\031\000'; } > "$T/k.sp"
	run --separate-stderr -1 sp-decode "$T/k.sp"
	assert_equal "$stderr" "sp-decode: warning: $T/k.sp@$at: unknown record kind 25 (from a newer StackPulse?) passed on undecoded"
	# 65536, and 3848290697215 (bytes of a corrupt spool): corrupt, status 2
	for k in '\200\200\004' '\377\377\377\377\377\177'; do
		{ cat "$T/base.sp"; printf "$k"'\000'; } > "$T/k.sp"
		run --separate-stderr -2 sp-decode "$T/k.sp"
		assert_equal "$stderr" "sp-decode: error: $T/k.sp@$at: corrupt record kind (over 65535, more than any version uses)"
	done
	# nor can JSON lines ask for one
	echo '{"type":"unknown","kind":65536,"raw":""}' >> "$T/j.jsonl"
	run --separate-stderr -1 sp-decode --encode -o "$T/j.sp" "$T/j.jsonl"	# a bad line: skipped
	[[ "$stderr" == *'an "unknown" record of a kind over 65535, more than any version uses'* ]] ||
		fail "$stderr"
}

@test "sp-decode: a corrupt varint stops the input with its offset, status 2, records before it written" {
	run --separate-stderr -2 sp-decode "$FIXTURES/corrupt-varint.sp"
	assert_equal "$stderr" "sp-decode: error: $FIXTURES/corrupt-varint.sp@14: corrupt record kind"
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 '{"type":"string","id":1,"value":"x"}'
	run --separate-stderr -2 sp-decode "$FIXTURES/kind-zero.sp"
	assert_equal "$stderr" "sp-decode: error: $FIXTURES/kind-zero.sp@10: record kind 0"
	assert_equal "${#lines[@]}" 1
	run --separate-stderr -2 sp-decode "$FIXTURES/bad-payload.sp"
	assert_equal "$stderr" "sp-decode: error: $FIXTURES/bad-payload.sp@10: string record: byte string longer than its record"
	assert_equal "${#lines[@]}" 1
}

@test "sp-decode: a record longer than the file, or than the limit, names its offset, status 2" {
	run --separate-stderr -2 sp-decode "$FIXTURES/cut-short.sp"
	assert_equal "$stderr" "sp-decode: error: $FIXTURES/cut-short.sp@14: record cut short (the spool ends 5 bytes into it)"
	assert_equal "${#lines[@]}" 2
	run --separate-stderr -2 sp-decode "$FIXTURES/huge-length.sp"
	assert_equal "$stderr" "sp-decode: error: $FIXTURES/huge-length.sp@10: record longer than the 16 MiB limit"
	assert_equal "${#lines[@]}" 1
	# The same through --encode: the records before it still reach the spool.
	run --separate-stderr -2 sp-decode --encode -o "$T/out.sp" "$FIXTURES/cut-short.sp"
	run -0 sp-decode "$T/out.sp"
	assert_equal "${#lines[@]}" 2
}

@test "sp-decode: a truncated spool decodes up to its last whole record and names the offset" {
	size=$(stat -c %s "$FIXTURES/all-kinds.sp")
	head -c $((size - 3)) "$FIXTURES/all-kinds.sp" > "$T/cut.sp"
	# The last record is the end record; it starts where a spool of
	# everything else ends.
	last=$(grep -v '"type":"end"' "$ALL" | sp-decode --encode 2>/dev/null | wc -c)
	# Likewise the unknown record starts where the lines before it end.
	unk=$(grep -n '"type":"unknown"' "$ALL" | cut -d: -f1)
	unk=$(head -n $((unk - 1)) "$ALL" | sp-decode --encode | wc -c)
	run --separate-stderr -1 sp-decode "$FIXTURES/all-kinds.sp"
	full=$output
	run --separate-stderr -2 sp-decode "$T/cut.sp"
	assert_equal "${stderr_lines[0]}" "sp-decode: warning: $T/cut.sp@$unk: unknown record kind 99, far past the 24 kinds of this version, which the stream's header says wrote it: the input looks corrupt here; passed on undecoded"
	assert_equal "${stderr_lines[1]}" "sp-decode: error: $T/cut.sp@$last: record cut short (the spool ends $((size - 3 - last)) bytes into it)"
	assert_equal "${#stderr_lines[@]}" 2
	# Everything but the end record.
	assert_equal "$output" "$(printf '%s\n' "$full" | sed '$d')"
	refute_output --partial '"type":"end"'
}

@test "sp-decode: a spool cut one byte into a record says 1 byte" {
	# the small spool without its end record, then the end record's first byte
	grep -v '"type":"end"' "$SMALL" | sp-decode --encode -o "$T/noend.sp"
	last=$(stat -c %s "$T/noend.sp")
	sp-decode --encode -o "$T/all.sp" "$SMALL"
	head -c $((last + 1)) "$T/all.sp" > "$T/cut.sp"
	run --separate-stderr -2 sp-decode "$T/cut.sp"
	assert_equal "$stderr" "sp-decode: error: $T/cut.sp@$last: record cut short (the spool ends 1 byte into it)"
	head -c $((last + 2)) "$T/all.sp" > "$T/cut.sp"
	run --separate-stderr -2 sp-decode "$T/cut.sp"
	assert_equal "$stderr" "sp-decode: error: $T/cut.sp@$last: record cut short (the spool ends 2 bytes into it)"
}

# Checks of one cut, in bash alone: this runs a thousand times.
check_cut() {	# n status
	local out err
	IFS= read -r -d '' out < "$T/out" || true
	IFS= read -r -d '' err < "$T/err" || true
	case $2 in
	0 | 1 | 2) ;;
	*) fail "cut at $1: status $2: $err" ;;
	esac
	[[ "$full" == "$out"* ]] || fail "cut at $1: not a prefix of the whole"
	[[ -z "$out" || "$out" == *$'\n' ]] || fail "cut at $1: half a line"
	if [ "$2" = 2 ]; then
		[[ "$err" =~ cut.sp@[0-9]+:\ (record\ cut\ short|not\ a\ StackPulse\ spool) ]] ||
			fail "cut at $1: $err"
	fi
	[[ "$err" != *error:*error:* ]] || fail "cut at $1: more than one error: $err"
}

@test "sp-decode: a spool cut at every byte decodes to a prefix of the whole, never crashes or hangs" {
	spool=$FIXTURES/all-kinds.sp
	size=$(stat -c %s "$spool")
	sp-decode "$spool" > "$T/full.jsonl" 2>/dev/null || true
	IFS= read -r -d '' full < "$T/full.jsonl" || true
	[ "${#full}" -gt 1000 ]
	for n in $(seq 0 "$size"); do
		head -c "$n" "$spool" > "$T/cut.sp"
		st=0
		# A CPU limit rather than timeout(1): one process less per cut.
		(ulimit -t 10 && exec sp-decode "$T/cut.sp") > "$T/out" 2> "$T/err" || st=$?
		check_cut "$n" "$st"
	done
	# The whole file is the whole decode.
	[ "$n" = "$size" ]
	cmp "$T/out" "$T/full.jsonl"
}

@test "sp-decode: input that is neither spool nor JSON is refused at offset 0" {
	printf 'hello\n' > "$T/text"
	run --separate-stderr -2 sp-decode "$T/text"
	assert_equal "$stderr" "sp-decode: error: $T/text@0: not a StackPulse spool or JSON lines"
	assert_equal "$output" ""
	# Seven bytes of the magic are not a spool either.
	head -c 7 "$FIXTURES/all-kinds.sp" > "$T/short"
	run --separate-stderr -2 sp-decode "$T/short"
	assert_equal "$stderr" "sp-decode: error: $T/short@0: not a StackPulse spool or JSON lines"
	# An empty input has no records: said, not an error (as an empty
	# directory of segments); every filter reads through the same reader
	: > "$T/empty"
	run --separate-stderr -0 sp-decode "$T/empty"
	assert_equal "$output" ""
	assert_equal "$stderr" "sp-decode: warning: '$T/empty' is empty: no recording in it (did what wrote it fail?)"
	run --separate-stderr -0 sp-tree < "$T/empty"
	assert_equal "$stderr" "sp-tree: warning: '<stdin>' is empty: no recording in it (did what wrote it fail?)"
}

@test "sp-decode --encode of --no-defs output says once that it cannot be read back, status 1" {
	sp-decode --encode -o "$T/all.sp" "$SMALL"
	sp-decode --no-defs "$T/all.sp" > "$T/nodefs.jsonl"
	n=$(grep -c '"type":"sample"' "$T/nodefs.jsonl")
	[ "$n" -ge 2 ]
	first=$(grep -n '"type":"sample"' "$T/nodefs.jsonl" | head -1 | cut -d: -f1)
	run --separate-stderr -1 sp-decode --encode -o "$T/back.sp" < "$T/nodefs.jsonl"
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[0]}" "sp-decode: error: <stdin>:$first: sample record refers to an undefined stack, and no stack or frame is defined before it: a stream without its definitions (as sp-decode --no-defs writes) cannot be read back; the lines that need them are skipped (said once)"
	said=${stderr_lines[1]}
	# the rest is written: of the samples, those on no stack (stack 0)
	run -0 sp-decode "$T/back.sp"
	assert_output --partial '"type":"header"'
	assert_equal "$(grep -c '"type":"sample"' <<< "$output")" \
		"$(grep -c '"type":"sample".*"stack":0,' "$T/nodefs.jsonl")"
	# and those skipped after the first are counted in one line, exactly
	skipped=$((n - $(grep -c '"type":"sample"' <<< "$output")))
	[[ "$said" == "sp-decode: error: <stdin>: $((skipped - 1)) more lines needing the definitions left out skipped (first at <stdin>:"*")" ]] ||
		fail "$said ($skipped skipped)"
	# a stream with its stacks: a sample on another undefined stack is said itself
	{ sp-decode "$T/all.sp"; echo '{"type":"sample","time":1,"pid":1,"tid":1,"cpu":0,"stack":999,"weight":1}'; } |
		grep -v '"type":"end"' > "$T/one.jsonl"
	run --separate-stderr -1 sp-decode --encode -o "$T/one.sp" "$T/one.jsonl"
	assert_equal "$stderr" "sp-decode: error: $T/one.jsonl:$(wc -l < "$T/one.jsonl"): sample record refers to an undefined stack; line skipped"
}

@test "sp-decode: bad JSON lines are skipped with their line numbers, status 1" {
	run --separate-stderr -1 sp-decode "$FIXTURES/bad.jsonl"
	assert_equal "${#stderr_lines[@]}" 3
	assert_equal "${stderr_lines[0]}" "sp-decode: error: $FIXTURES/bad.jsonl:2: invalid JSON: unexpected token near end of file; line skipped"
	assert_equal "${stderr_lines[1]}" "sp-decode: error: $FIXTURES/bad.jsonl:3: field 'pid' must be a non-negative integer; line skipped"
	assert_equal "${stderr_lines[2]}" "sp-decode: error: $FIXTURES/bad.jsonl:5: sample record refers to an undefined stack, and no stack or frame is defined before it: a stream without its definitions (as sp-decode --no-defs writes) cannot be read back; the lines that need them are skipped (said once)"
	# The good lines (after a header the writer opens the stream with).
	assert_equal "$(jq -r .type <<< "$output" | tr '\n' ' ')" "header string process "
	# A wrong type for a field, and for the whole line.
	printf '{"type":"header"}\n{"type":"sample","time":"soon"}\n[1]\n' > "$T/t.jsonl"
	run --separate-stderr -1 sp-decode "$T/t.jsonl"
	assert_equal "${stderr_lines[0]}" "sp-decode: error: $T/t.jsonl:2: field 'time' must be a non-negative integer; line skipped"
	assert_equal "${stderr_lines[1]}" "sp-decode: error: $T/t.jsonl:3: not a JSON object; line skipped"
	assert_equal "${#lines[@]}" 1
}

@test "sp-decode: reads stdin, '-' and pipes, and names stdin in messages" {
	sp-decode --encode -o "$T/small.sp" "$SMALL"
	sp-decode "$T/small.sp" > "$T/want"
	run -0 sp-decode < "$T/small.sp"
	assert_equal "$output" "$(cat "$T/want")"
	run -0 sp-decode - < "$T/small.sp"
	assert_equal "$output" "$(cat "$T/want")"
	run -0 bash -c 'cat "$1" | sp-decode' _ "$T/small.sp"
	assert_equal "$output" "$(cat "$T/want")"
	run -0 bash -c 'cat "$1" | sp-decode' _ "$SMALL"
	assert_equal "$output" "$(cat "$T/want")"
	run -0 bash -c 'cat "$1" | sp-decode --encode | cmp - "$2"' _ "$SMALL" "$T/small.sp"
	run --separate-stderr -2 bash -c 'cat "$1" | sp-decode' _ "$FIXTURES/cut-short.sp"
	assert_equal "$stderr" "sp-decode: error: <stdin>@14: record cut short (the spool ends 5 bytes into it)"
	assert_equal "${#lines[@]}" 2
}

@test "sp-decode: concatenated spools are streams one after the other" {
	sp-decode --encode -o "$T/a.sp" "$SMALL"
	sp-decode --encode -o "$T/b.sp" "$ALL" 2>/dev/null || true
	{ sp-decode "$T/a.sp"; sp-decode "$T/b.sp" 2>/dev/null; } > "$T/want" || true
	run --separate-stderr -1 bash -c 'cat "$1" "$2" | sp-decode' _ "$T/a.sp" "$T/b.sp"
	assert_equal "$output" "$(cat "$T/want")"
	assert_equal "$(grep -c '"type":"header"' <<< "$output")" 2
	# String ids start again with the second stream.
	assert_equal "$(grep -c '"type":"string","id":1,' <<< "$output")" 2
	# Also as two arguments, and back to the same bytes.
	run --separate-stderr -1 sp-decode "$T/a.sp" "$T/b.sp"
	assert_equal "$output" "$(cat "$T/want")"
	run -0 bash -c 'cat "$1" "$2" | sp-decode 2>/dev/null | sp-decode --encode 2>/dev/null |
		cmp - <(cat "$1" "$2")' _ "$T/a.sp" "$T/b.sp"
}

@test "sp-decode --stats: the counts of a hand-counted recording" {
	sp-decode --encode -o "$T/small.sp" "$SMALL"
	size=$(stat -c %s "$T/small.sp")
	run --separate-stderr -0 sp-decode --stats "$T/small.sp"
	assert_line "records         24"
	assert_line "  sample        5"
	assert_line "  stack         3"
	assert_line "  lost          3"
	assert_line "samples         5 (off-CPU 0.500 s)"
	assert_line "stack depth     mean 1.4, max 2"	# (2 + 2 + 1 + 2 + 0) / 5
	assert_line "  complete      20.0%"
	assert_line "  no_cfi        20.0%"
	assert_line "  path_open     1"
	assert_line "  proc_exit     1"
	assert_line "processes       2"
	assert_line "threads         4"
	assert_line "duration        2.500 s"	# the header's start 1.0 s to the end's 3.5 s
	assert_line "lost            9 samples, 3 events, 0 spans"
	assert_line "bytes           $size"
	assert_line "bytes/sample    $(awk -v s="$size" 'BEGIN { printf "%.2f", s / 5 }')"
	# The same as JSON, from the JSON lines (no byte count there).
	run --separate-stderr -0 sp-decode --stats-json "$SMALL"
	assert_equal "$(jq -c '[.records, .samples, .processes, .threads, .duration_s,
		.lost_samples, .lost_events, .kinds.sample, .kinds.string, .events.path_open,
		.unwind.complete, .bytes]' <<< "$output")" "[24,5,2,4,2.5,9,3,5,2,1,1,0]"
}

@test "sp-decode --stats: stacks left through a frame pointer are counted apart" {
	{
		echo '{"type":"header","version":1,"start_wall_ns":1,"start_mono_ns":1,"call_graph":"dwarf"}'
		echo '{"type":"sample","time":1,"pid":1,"tid":1,"unwind":"complete","flags":"0x1","frames":[{"addr":"0x10"},{"addr":"0x20"}]}'
		echo '{"type":"sample","time":2,"pid":1,"tid":1,"unwind":"complete","frames":[{"addr":"0x10"}]}'
		echo '{"type":"sample","time":3,"pid":1,"tid":1,"unwind":"no_cfi","frames":[{"addr":"0x30"}]}'
	} > "$T/fp.jsonl"
	sp-decode --encode -o "$T/fp.sp" "$T/fp.jsonl"
	run --separate-stderr -0 sp-decode --stats "$T/fp.sp"
	assert_line "stacks: 66.7% complete (2 of 3 unwound samples reached the thread's first frame)"
	assert_line "  fp_guess: 1 stack (33.3%) left a frame without CFI through its frame pointer (may skip frames)"
	run --separate-stderr -0 sp-decode --stats-json "$T/fp.sp"
	assert_equal "$(jq -c '[.fp_guess, .unwind.complete]' <<< "$output")" "[1,2]"
	# The flag survives the spool; without it, nothing is said.
	run --separate-stderr -0 sp-decode --no-defs --no-frames "$T/fp.sp"
	assert_line --partial '"time":1,"pid":1,"tid":1,"cpu":0,"stack":2,"weight":1,"unwind":"complete","flags":"0x1"}'
	grep -v '"flags"' "$T/fp.jsonl" | sp-decode --encode -o "$T/nofp.sp"
	run --separate-stderr -0 sp-decode --stats "$T/nofp.sp"
	refute_output --partial "fp_guess"
}

@test "sp-decode: a reader that goes away ends it quietly (SIGPIPE)" {
	make_big "$T/big.sp"
	run --separate-stderr bash -c 'set -o pipefail; sp-decode "$1" | head -1' _ "$T/big.sp"
	assert_equal "$status" 141
	assert_equal "$stderr" ""
	assert_output --partial '{"type":"header"'
}

@test "sp-decode: a spool is never written to a terminal" {
	require_cmd script "util-linux's script gives a terminal"
	run script -qec "sp-decode --encode '$SMALL'" /dev/null
	assert_equal "$status" 64
	assert_output --partial "refusing to write a binary spool to a terminal"
	refute_output --partial "SPOOL1"
	# JSON to a terminal is fine; a spool to a file or pipe is fine.
	run script -qec "sp-decode '$SMALL'" /dev/null
	assert_equal "$status" 0
	run -0 bash -c 'sp-decode --encode "$1" | od -c | head -1' _ "$SMALL"
	assert_output --partial "S   P   O   O   L   1"
}

@test "sp-decode: usage errors exit 64" {
	run --separate-stderr -64 sp-decode --discard "$SMALL"
	[[ "$stderr" == *"--discard needs --follow"* ]]
	run --separate-stderr -64 sp-decode --format=xml "$SMALL"
	[[ "$stderr" == *"invalid format 'xml'"* ]]
}

# Wait (at most 10 s) for a background sp-decode; its status in $st.
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

@test "sp-decode --follow: a record split across two writes is retried; the end record stops it" {
	sp-decode --encode -o "$T/small.sp" "$SMALL"
	# A length that ends inside a record: decoding that much alone says so.
	for cut in $(seq 100 200); do
		st=0
		sp-decode -o /dev/null <(head -c "$cut" "$T/small.sp") 2>/dev/null || st=$?
		[ "$st" = 2 ] && break
	done
	[ "$st" = 2 ]
	head -c "$cut" "$T/small.sp" > "$T/live.sp"
	sp-decode --follow "$T/live.sp" > "$T/out" 2> "$T/err" &
	pid=$!
	sleep 0.5
	kill -0 "$pid"	# still waiting for more
	tail -c +$((cut + 1)) "$T/small.sp" | head -c 30 >> "$T/live.sp"
	sleep 0.3
	tail -c +$((cut + 31)) "$T/small.sp" >> "$T/live.sp"
	wait_for "$pid"
	assert_equal "$st" 0
	assert_equal "$(cat "$T/err")" ""
	cmp "$T/out" <(sp-decode "$T/small.sp")
}

@test "sp-decode --follow: SIGINT stops it with everything read so far written" {
	grep -v '"type":"end"' "$SMALL" | sp-decode --encode -o "$T/live.sp"
	sp-decode --follow "$T/live.sp" > "$T/out" 2> "$T/err" &
	pid=$!
	for _ in $(seq 50); do
		[ "$(wc -l < "$T/out")" = 23 ] && break
		sleep 0.1
	done
	assert_equal "$(wc -l < "$T/out")" 23	# flushed while it waits
	kill -INT "$pid"
	wait_for "$pid"
	assert_equal "$st" 0
	assert_equal "$(cat "$T/err")" ""
}

@test "sp-decode --follow: a file its writer has not made yet is waited for, said once after a second; SIGINT meanwhile ends it, status 0" {
	sp-decode --follow "$T/later.sp" > "$T/out" 2> "$T/err" &
	pid=$!
	wait_said "$T/err" "does not exist yet" 10
	kill -0 "$pid"
	# the writer comes late: the whole recording, up to its end record
	sp-decode --encode -o "$T/later.sp" "$SMALL"
	wait_for "$pid"
	assert_equal "$st" 0
	assert_equal "$(wc -l < "$T/out")" "$(sp-decode "$T/later.sp" | wc -l)"
	assert_equal "$(cat "$T/err")" "sp-decode: warning: '$T/later.sp' does not exist yet: waiting for it to be created (interrupt to stop)"
	# interrupted while it waits (once it says so: its handler is in)
	sp-decode --follow "$T/never.sp" > "$T/out" 2> "$T/err" &
	pid=$!
	wait_said "$T/err" "does not exist yet" 10
	kill -INT "$pid"
	wait_for "$pid"
	assert_equal "$st" 0
	assert_equal "$(cat "$T/out")" ""
	# without --follow a missing file is an error at once
	run --separate-stderr -2 sp-decode "$T/never.sp"
	[[ "$stderr" == *"cannot open '$T/never.sp'"* ]]
}

@test "sp-decode --follow: a file that shrinks is an error" {
	grep -v '"type":"end"' "$SMALL" | sp-decode --encode -o "$T/live.sp"
	sp-decode --follow "$T/live.sp" > "$T/out" 2> "$T/err" &
	pid=$!
	sleep 0.5
	truncate -s 50 "$T/live.sp"
	wait_for "$pid"
	assert_equal "$st" 2
	assert_equal "$(cat "$T/err")" "sp-decode: error: $T/live.sp@50: the file shrank while being followed"
}

discard_in() {
	make_big "$1"
	size=$(stat -c %s "$1")
	before=$(stat -c %b "$1")
	run --separate-stderr -0 sp-decode --follow --discard --stats "$1"
	assert_line "samples         524288"
	after=$(stat -c %b "$1")
	# At least 2 of its 4 MiB (in 512-byte blocks) are gone; the size stays.
	[ "$after" -lt $((before - 4096)) ] || fail "$1: $before blocks before, $after after"
	assert_equal "$(stat -c %s "$1")" "$size"
	# Only the part already read was punched: the tail still has data.
	run -0 bash -c 'tail -c 2 "$1" | od -An -tx1' _ "$1"
	assert_output " 12 00"
}

@test "sp-decode --follow --discard frees the part already read (ext4 under /tmp)" {
	[ "$(stat -f -c %T "$T")" = ext2/ext3 ] || skip "$T is not on ext4"
	discard_in "$T/big.sp"
}

@test "sp-decode --follow --discard frees the part already read (tmpfs /dev/shm)" {
	[ -w /dev/shm ] || skip "no writable /dev/shm"
	f=/dev/shm/sp-decode-bats-$$.sp
	discard_in "$f"
	rm -f "$f"
}

@test "sp-decode: without --discard a followed file keeps its blocks" {
	make_big "$T/big.sp"
	before=$(stat -c %b "$T/big.sp")
	run -0 sp-decode --follow --stats "$T/big.sp"
	assert_equal "$(stat -c %b "$T/big.sp")" "$before"
}

@test "sp-decode --stats says how complete the stacks are and what to do" {
	# 3 of 4 unwound samples are complete (75.0%), 1 hit the 8192-byte copy (25.0%).
	run --separate-stderr -0 sp-decode --stats "$FIXTURES/unwind.jsonl"
	assert_line --partial "stacks: 75.0% complete (3 of 4 unwound samples"
	assert_line --regexp "stack_size: 25.0% of stacks hit the 8192-byte stack copy.*--call-graph=dwarf,"
}

# A stack $1 frames deep as JSON lines: main (frame 1) at the root, then
# frame 2 over and over; a sample on the deepest stack and one on stack 10.
deep_stack() {
	awk -v n="$1" 'BEGIN {
		print "{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1000,\"clock\":\"monotonic\"}"
		print "{\"type\":\"frame\",\"module\":0,\"rel\":\"0x10\",\"addr\":\"0x10\",\"pid\":7}"
		print "{\"type\":\"frame\",\"module\":0,\"rel\":\"0x20\",\"addr\":\"0x20\",\"pid\":7}"
		for (i = 1; i <= n; i++)
			printf "{\"type\":\"stack\",\"parent\":%d,\"frame\":%d}\n", i - 1, i == 1 ? 1 : 2
		printf "{\"type\":\"sample\",\"time\":2000,\"pid\":7,\"tid\":7,\"stack\":%d}\n", n
		print "{\"type\":\"sample\",\"time\":2001,\"pid\":7,\"tid\":7,\"stack\":10}"
	}'
}

@test "sp-decode: a 100000-frame stack shows its 4096 innermost frames, says how many are left out, warns once" {
	deep_stack 100000 | sp-decode --encode -o "$T/deep.sp"
	run --separate-stderr -0 sp-decode -o "$T/deep.jsonl" "$T/deep.sp"
	# one warning, naming the file, the offset and the first stack past the limit
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "sp-decode: warning: $T/deep.sp@"*": stack 4097 is deeper than 4096 frames: "* ]]
	run -0 jq -c 'select(.type == "sample") | [.stack, (.frames | length), .truncated,
		.frames[0].addr, .frames[-1].addr]' "$T/deep.jsonl"
	assert_line --index 0 '[100000,4096,95904,"0x20","0x20"]'
	assert_line --index 1 '[10,10,null,"0x20","0x10"]'
	# the output keeps to the bound: the stack definitions, and 4096 frames a sample
	[ "$(stat -c %s "$T/deep.jsonl")" -lt $((100000 * 60 + 2 * 4096 * 80)) ]
	# JSON lines in, the same (the line number instead of the offset)
	deep_stack 100000 > "$T/deep.in.jsonl"
	run --separate-stderr -0 sp-decode --no-frames -o /dev/null "$T/deep.in.jsonl"
	[[ "$stderr" == "sp-decode: warning: $T/deep.in.jsonl:4100: stack 4097 is deeper than 4096 frames: "* ]]
	# nothing is lost from the stream itself: it encodes back byte for byte
	run -0 sp-decode --encode -o "$T/back.sp" "$T/deep.jsonl"
	cmp "$T/deep.sp" "$T/back.sp"
}
