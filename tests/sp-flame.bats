#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-flame: folded stacks, SVG, differences and exports. Expectations are
# computed by hand from the fixtures (tests/fixtures/sp-flame/README.md) or
# checked with independent readers (xmllint, pprof-format, speedscope's
# schema, jq, headless chromium).

load helper

setup() {
	basic=$FIXTURES/basic.jsonl
	spans=$FIXTURES/spans.jsonl
}

# npm packages for the independent readers, installed once per run of this
# file into a temporary directory.
need_npm() {
	require_cmd npm "npm is needed to install the pprof-format and speedscope packages"
	require_cmd node
	NPM_DIR=$BATS_FILE_TMPDIR/npm
	if [ ! -d "$NPM_DIR/node_modules/pprof-format" ]; then
		mkdir -p "$NPM_DIR"
		(cd "$NPM_DIR" && timeout 300 npm install --no-audit --no-fund --silent \
			pprof-format speedscope ajv >/dev/null 2>&1) ||
			skip "npm install pprof-format speedscope ajv failed (no registry?)"
	fi
	export NODE_PATH=$NPM_DIR/node_modules
}

@test "sp-flame: folded stacks match the hand-computed ones, sorted, ';' escaped" {
	run --separate-stderr -0 sp-flame "$basic"
	assert_output "$(cat "$FIXTURES/basic.folded")"
}

@test "sp-flame: a spool and its JSON lines give the same folded stacks" {
	sp-decode --encode -o "$BATS_TEST_TMPDIR/basic.sp" "$basic"
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/basic.sp"
	assert_output "$(cat "$FIXTURES/basic.folded")"
	run --separate-stderr -0 sp-flame < "$BATS_TEST_TMPDIR/basic.sp"
	assert_output "$(cat "$FIXTURES/basic.folded")"
}

@test "sp-flame: the footer gives the share of broken-looking stacks and a hint" {
	run --separate-stderr -0 sp-flame "$basic"
	[[ "$stderr" == *"8 samples, 12.5% with a broken-looking stack (1 with a single user frame); hint: record with sp-record's default --call-graph=auto"* ]]
	[[ "$stderr" == *"; 1 frame unresolved (run sp-symbolize first)" ]]
	run --separate-stderr -0 sp-flame -q "$basic"
	assert_equal "$stderr" ""
}

@test "sp-flame: the footer of a DWARF recording gives its cause's hint, never to record with auto" {
	# basic.jsonl as recorded with --call-graph=auto, its first sample cut
	# at an unknown mapping: the hint is sp-record's for that cause
	sed -e 's/"call_graph":"fp"/"call_graph":"auto"/' \
		-e '0,/"type":"sample"/s/"weight":1}/"weight":1,"unwind":"unknown_map"}/' \
		"$basic" > "$BATS_TEST_TMPDIR/auto.jsonl"
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/auto.jsonl"
	[[ "$stderr" == *"; hint: "*"stopped at an address in no known mapping"* ]]
	[[ "$stderr" != *"--call-graph=auto"* ]]
	# without unwinder causes in the stream: no advice to record as it was
	sed -e 's/"call_graph":"fp"/"call_graph":"dwarf"/' "$basic" > "$BATS_TEST_TMPDIR/dwarf.jsonl"
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/dwarf.jsonl"
	[[ "$stderr" == *"with a broken-looking stack"*"; hint: "* ]]
	[[ "$stderr" != *"--call-graph=auto"* ]]
}

@test "sp-flame: the footer counts stacks left through a frame pointer" {
	# basic.jsonl recorded with --call-graph=dwarf, its first sample a guess
	sed -e 's/"call_graph":"fp"/"call_graph":"dwarf"/' \
		-e '0,/"type":"sample"/s/"weight":1}/"weight":1,"unwind":"complete","flags":"0x1"}/' \
		"$basic" > "$BATS_TEST_TMPDIR/guess.jsonl"
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/guess.jsonl"
	[[ "$stderr" == *"; 1 stack left a frame without CFI through its frame pointer (may skip frames)"* ]]
	# the same stacks, none a guess: nothing said
	run --separate-stderr -0 sp-flame "$basic"
	[[ "$stderr" != *"frame pointer (may skip frames)"* ]]
}

@test "sp-flame: --by=thread --annotate prefixes threads and marks kernel and inline frames" {
	run --separate-stderr -0 sp-flame --by=thread --annotate "$basic"
	assert_output "$(cat "$FIXTURES/basic-by-thread-annotated.folded")"
	run --separate-stderr -0 sp-flame --by=process "$basic"
	assert_line "app-100;main 1"
	assert_line "app-100;_start;main;work;compute;square 3"
}

@test "sp-flame: --no-inline and --no-addresses" {
	run --separate-stderr -0 sp-flame --no-inline --no-addresses "$basic"
	assert_line "_start;main;work;compute 3"
	assert_line "_start;main;work;[libc.so.6];ksys_read 2"
	refute_output --partial "square"
}

@test "sp-flame: filters by pid, tid, comm and time window" {
	run --separate-stderr -0 sp-flame --tid=101 "$basic"
	assert_output "$(printf '%s\n' '_start;main;work;libc.so.6+0x1234;ksys_read 2' 'main 1')"
	run --separate-stderr -0 sp-flame --comm=app --pid=100 "$basic"
	assert_output "$(cat "$FIXTURES/basic.folded")"
	# samples at 5, 6, 7 ms after the start
	run --separate-stderr -0 sp-flame --since=5ms "$basic"
	assert_output "$(printf '%s\n' '_start;main;odd\x3bname here 1' '_start;main;work 1' 'main 1')"
	# samples at 0, 1, 2 ms
	run --separate-stderr -0 sp-flame --until=3ms "$basic"
	assert_output "_start;main;work;compute;square 3"
	run --separate-stderr -0 sp-flame --pid=999 "$basic"
	assert_output ""
	[[ "$stderr" == *"warning: no samples in the input (all filtered out)"* ]]
}

@test "sp-flame: --weight=time counts nanoseconds (1000 Hz: 1 ms a sample), --off-cpu" {
	run --separate-stderr -0 sp-flame --weight=time "$basic"
	assert_line "_start;main;work;compute;square 3000000"
	assert_line "main 1000000"
	run --separate-stderr -0 sp-flame --off-cpu --weight=time "$basic"
	assert_output "_start;main;work 5000000"
}

@test "sp-flame: --by=span puts the span path at the root" {
	run --separate-stderr -0 sp-flame --by=span "$spans"
	assert_output "$(printf '%s\n' 'Foo#bar;Foo#baz;main;vm_exec 2' 'Foo#bar;main;vm_exec 1' 'main 1')"
}

@test "sp-flame: --flamechart keeps the time order, merging consecutive equal stacks" {
	run --separate-stderr -0 sp-flame --flamechart "$basic"
	assert_equal "${lines[0]}" "_start;main;work;compute;square 3"
	assert_equal "${lines[1]}" "_start;main;work;libc.so.6+0x1234;ksys_read 2"
	assert_equal "${lines[4]}" "main 1"
}

@test "sp-flame: an empty recording gives empty output, a valid SVG and a warning" {
	head -1 "$basic" > "$BATS_TEST_TMPDIR/empty.jsonl"
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/empty.jsonl"
	assert_output ""
	assert_equal "$stderr" "sp-flame: warning: no samples in the input"
	run --separate-stderr -0 sp-flame --svg -o "$BATS_TEST_TMPDIR/empty.svg" "$BATS_TEST_TMPDIR/empty.jsonl"
	require_cmd xmllint "libxml2-utils"
	xmllint --noout "$BATS_TEST_TMPDIR/empty.svg"
}

@test "sp-flame: a sample on an undefined stack is reported with its line, exit 1" {
	{ head -1 "$basic"; echo '{"type":"sample","time":1000000001,"pid":1,"tid":1,"cpu":0,"stack":99,"weight":1}'; } \
		> "$BATS_TEST_TMPDIR/bad.jsonl"
	run --separate-stderr -1 sp-flame "$BATS_TEST_TMPDIR/bad.jsonl"
	[[ "$stderr" == *"bad.jsonl:2: "*"undefined stack"* ]]
}

@test "sp-flame: the SVG is well-formed, self-contained and holds every frame" {
	require_cmd xmllint "libxml2-utils"
	run --separate-stderr -0 sp-flame --svg -o "$BATS_TEST_TMPDIR/b.svg" "$basic"
	svg=$BATS_TEST_TMPDIR/b.svg
	xmllint --noout "$svg"
	# 9 distinct frames: _start, main (twice: under _start and alone), work,
	# compute, square, libc.so.6+0x1234, ksys_read, odd;name here
	run -0 xmllint --xpath "count(//*[local-name()='g'][@class='f'])" "$svg"
	assert_output 9
	run -0 xmllint --xpath "string(//*[local-name()='g'][@class='f'][*[local-name()='title'][starts-with(., 'compute ')]]/*[local-name()='title'])" "$svg"
	assert_output "compute (3 samples, 37.50%)"
	run -0 xmllint --xpath "string(//*[local-name()='g'][@class='f'][*[local-name()='title'][starts-with(., 'odd')]]/*[local-name()='title'])" "$svg"
	assert_output "odd;name here (1 samples, 12.50%)"
	# subtitle says what was recorded, the footer the broken share
	run -0 xmllint --xpath "string(//*[@id='subtitle'])" "$svg"
	assert_output --partial "cpu-clock at 1000 Hz: ./app --demo on testhost"
	run -0 xmllint --xpath "string(//*[@id='footer'])" "$svg"
	assert_output --partial "12.5% with a broken-looking stack"
	# no network: the only URL is the SVG namespace
	run grep -oE '(https?:)?//[a-zA-Z0-9.-]+' "$svg"
	assert_output "http://www.w3.org"
}

@test "sp-flame: colours are deterministic by name across runs and inputs" {
	sp-flame -q --svg -o "$BATS_TEST_TMPDIR/a.svg" "$basic"
	sp-flame -q --svg --tid=100 -o "$BATS_TEST_TMPDIR/b.svg" "$basic"
	a=$(grep -o '<title>square [^<]*</title><rect[^>]*fill="[^"]*"' "$BATS_TEST_TMPDIR/a.svg" | grep -o 'fill="[^"]*"')
	b=$(grep -o '<title>square [^<]*</title><rect[^>]*fill="[^"]*"' "$BATS_TEST_TMPDIR/b.svg" | grep -o 'fill="[^"]*"')
	[ -n "$a" ]
	assert_equal "$a" "$b"
	cmp "$BATS_TEST_TMPDIR/a.svg" <(sp-flame -q --svg "$basic")
}

@test "sp-flame: --inverted puts the root at the top, --flamechart says time order" {
	require_cmd xmllint "libxml2-utils"
	sp-flame -q --svg -o "$BATS_TEST_TMPDIR/n.svg" "$basic"
	sp-flame -q --svg --inverted -o "$BATS_TEST_TMPDIR/i.svg" "$basic"
	q="string(//*[local-name()='g'][*[local-name()='title'][starts-with(., '_start ')]]/*[local-name()='rect']/@y)"
	qleaf="string(//*[local-name()='g'][*[local-name()='title'][starts-with(., 'square ')]]/*[local-name()='rect']/@y)"
	root_n=$(xmllint --xpath "$q" "$BATS_TEST_TMPDIR/n.svg")
	leaf_n=$(xmllint --xpath "$qleaf" "$BATS_TEST_TMPDIR/n.svg")
	root_i=$(xmllint --xpath "$q" "$BATS_TEST_TMPDIR/i.svg")
	leaf_i=$(xmllint --xpath "$qleaf" "$BATS_TEST_TMPDIR/i.svg")
	[ "$root_n" -gt "$leaf_n" ]
	[ "$root_i" -lt "$leaf_i" ]
	run -0 sp-flame -q --svg --flamechart "$basic"
	assert_output --partial ">time order</text>"
	assert_output --partial ">Flame Chart</text>"
}

@test "sp-flame: the SVG renders in headless chromium; its script zooms and searches" {
	browser=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$browser" ] || skip "needs chromium (not installed)"
	sp-flame -q --svg -o "$BATS_TEST_TMPDIR/b.svg" "$basic"
	chrome() {
		timeout 90 "$browser" --headless --no-sandbox --disable-gpu \
			--disable-background-networking --dump-dom "file://$BATS_TEST_TMPDIR/b.svg$1" 2>/dev/null
	}
	# init() replaces "sorted by name" with the number of frames
	run chrome ""
	assert_output --partial ">9 frames</text>"
	assert_output --partial "compute (3 samples"
	# zoomed into work (6 of 8 samples), compute (3) takes half of 1180 px
	run chrome "#zoom=work"
	assert_output --regexp '<title>compute [^<]*</title><rect [^>]*width="590"'
	assert_output --partial 'id="unzoom" class="btn"'
	# compute and square: 3 of 8 samples (nested frames are not counted twice)
	run chrome "#search=%5E(compute%7Csquare)%24"
	assert_output --partial ">Matched: 37.5%</text>"
	[ "$(grep -o 'fill="rgb(230,0,230)"' <<< "$output" | wc -l)" = 2 ]
}

@test "sp-flame: a named file of folded stacks is read as such" {
	run --separate-stderr -0 sp-flame "$FIXTURES/basic.folded"
	assert_output "$(cat "$FIXTURES/basic.folded")"
	printf 'a;b 2\nnot a stack line\n' > "$BATS_TEST_TMPDIR/bad.folded"
	run --separate-stderr -1 sp-flame "$BATS_TEST_TMPDIR/bad.folded"
	assert_output "a;b 2"
	[[ "$stderr" == *"bad.folded:2: not a folded stack line"* ]]
	# on standard input (records only), the message says what it is and
	# how to give it; so do the other filters'
	run --separate-stderr -2 sp-flame < "$FIXTURES/basic.folded"
	assert_equal "$stderr" "sp-flame: error: <stdin>@0: not a StackPulse spool or JSON lines: folded stacks, which only sp-flame reads, from a file it is given by name (sp-flame FILE; a pipe: sp-flame /dev/stdin)"
	run --separate-stderr -0 bash -c 'cat "$1" | sp-flame /dev/stdin' _ "$FIXTURES/basic.folded"
	assert_output "$(cat "$FIXTURES/basic.folded")"
	run --separate-stderr -2 sp-tree "$FIXTURES/basic.folded"
	[[ "$stderr" == *"basic.folded@0: not a StackPulse spool or JSON lines: folded stacks, which only sp-flame reads"* ]]
}

@test "sp-flame: a FIFO, a process substitution and /dev/stdin on a pipe are read whole, folded stacks or records" {
	sp-decode --encode -o "$BATS_TEST_TMPDIR/basic.sp" "$basic"
	# folded stacks longer than the 4096 bytes looked at for the format
	awk '{ for (i = 0; i < 40; i++) { $1 = $1 ";f" i; print } }' "$FIXTURES/basic.folded" \
		> "$BATS_TEST_TMPDIR/long.folded"
	(( $(wc -c < "$BATS_TEST_TMPDIR/long.folded") > 8192 ))
	run --separate-stderr -0 sp-flame <(cat "$BATS_TEST_TMPDIR/long.folded")
	assert_output "$(sp-flame "$BATS_TEST_TMPDIR/long.folded")"
	run --separate-stderr -0 bash -c "cat '$BATS_TEST_TMPDIR/basic.sp' | sp-flame /dev/stdin"
	assert_output "$(cat "$FIXTURES/basic.folded")"
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	cat "$BATS_TEST_TMPDIR/basic.sp" > "$BATS_TEST_TMPDIR/fifo" &
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/fifo"
	assert_output "$(cat "$FIXTURES/basic.folded")"
	run --separate-stderr -3 sp-flame --diff --fail-above=0 <(cat "$basic") <(cat "$BATS_TEST_TMPDIR/long.folded")
	[[ "$stderr" != *"no change"* ]]
	# bad input through one still names it
	run --separate-stderr -2 sp-flame <(echo garbage)
	[[ "$stderr" == *"/dev/fd/"*"@0: not a StackPulse spool or JSON lines"* ]]
}

@test "sp-flame: a pprof profile (gzip) is never written to a terminal; to a pipe it is" {
	require_cmd script "util-linux's script gives a terminal"
	run script -qec "sp-flame --pprof '$basic'" /dev/null
	assert_equal "$status" 64
	assert_output --partial "refusing to write a gzip-compressed pprof profile to a terminal"
	# folded stacks to a terminal are fine; pprof to a pipe is fine
	run script -qec "sp-flame '$basic'" /dev/null
	assert_equal "$status" 0
	run -0 bash -c 'sp-flame --pprof "$1" 2>/dev/null | od -An -tx1 | head -1' _ "$basic"
	assert_output --regexp '^ 1f 8b'
}

@test "sp-flame: the diff of a recording with itself is empty and exits 0" {
	sp-decode --encode -o "$BATS_TEST_TMPDIR/basic.sp" "$basic"
	run --separate-stderr -0 sp-flame --diff --fail-above=0 "$basic" "$BATS_TEST_TMPDIR/basic.sp"
	assert_output ""
	[[ "$stderr" == *"no change"* ]]
}

@test "sp-flame: --diff names an address in no mapping [unknown] in both runs, so its stacks meet" {
	# the same stack, its outermost frame at an address in no mapping,
	# which each run has elsewhere
	for a in 0x7f1111000000 0x7f2222000000; do
		{
			grep -v '"type":"sample"\|"type":"end"' "$basic"
			echo '{"type":"frame","id":8,"module":0,"pid":100,"rel":"'$a'","addr":"'$a'"}'
			echo '{"type":"stack","id":9,"parent":0,"frame":8}'
			echo '{"type":"stack","id":10,"parent":9,"frame":1}'
			echo '{"type":"sample","time":1000000000,"pid":100,"tid":100,"cpu":0,"stack":10,"weight":1}'
		} > "$BATS_TEST_TMPDIR/$a.jsonl"
	done
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/0x7f1111000000.jsonl"
	assert_output "0x7f1111000000;main 1"
	run --separate-stderr -0 sp-flame --diff --diff-all "$BATS_TEST_TMPDIR/0x7f1111000000.jsonl" \
		"$BATS_TEST_TMPDIR/0x7f2222000000.jsonl"
	assert_output "[unknown];main 1 1"
	[[ "$stderr" == *"no change"* ]]
}

@test "sp-flame: --diff scales BASE to NEW's total; --fail-above fails on a grown share" {
	# base 8 samples, new 18: base counts x 18/8, rounded
	run --separate-stderr -0 sp-flame --diff "$basic" "$FIXTURES/regressed.folded"
	assert_output "$(printf '%s\n' '_start;main;odd\x3bname here 2 1' '_start;main;work 2 1' \
		'_start;main;work;compute;square 7 13' '_start;main;work;libc.so.6+0x1234;ksys_read 5 2' 'main 2 1')"
	# compute and square: 3/8 = 37.50% -> 13/18 = 72.22%
	[[ "$stderr" == *"+34.72 points   37.50% ->  72.22%  compute"* ]]
	run --separate-stderr -3 sp-flame --diff --fail-above=30 "$basic" "$FIXTURES/regressed.folded"
	[[ "$stderr" == *"sp-flame: error: 'compute' grew by 34.72 points (37.50% -> 72.22%), above --fail-above=30"* ]]
	run --separate-stderr -0 sp-flame --diff --fail-above=40 "$basic" "$FIXTURES/regressed.folded"
	# the other way round compute shrinks by 34.72 points, which is never a
	# failure; ksys_read grows the most: 2/18 = 11.11% -> 2/8 = 25% (+13.89)
	run --separate-stderr -0 sp-flame --diff --fail-above=14 "$FIXTURES/regressed.folded" "$basic"
	run --separate-stderr -3 sp-flame --diff --fail-above=13.8 "$FIXTURES/regressed.folded" "$basic"
	[[ "$stderr" == *"grew by 13.89 points (11.11% -> 25.00%)"* ]]
}

@test "sp-flame: the differential SVG is well-formed, red where it grew, blue where it shrank" {
	require_cmd xmllint "libxml2-utils"
	run --separate-stderr -0 sp-flame --diff --svg -o "$BATS_TEST_TMPDIR/d.svg" "$basic" "$FIXTURES/regressed.folded"
	xmllint --noout "$BATS_TEST_TMPDIR/d.svg"
	run -0 xmllint --xpath "string(//*[local-name()='g'][*[local-name()='title'][starts-with(., 'square ')]]/*[local-name()='rect']/@fill)" "$BATS_TEST_TMPDIR/d.svg"
	assert_output "rgb(255,0,0)"	# the largest growth: full red
	run -0 xmllint --xpath "string(//*[local-name()='g'][*[local-name()='title'][starts-with(., 'ksys_read ')]]/*[local-name()='rect']/@fill)" "$BATS_TEST_TMPDIR/d.svg"
	[[ "$output" == "rgb("*",255)" ]]	# 25% -> 11%: blue
}

@test "sp-flame: --diff needs two inputs" {
	run --separate-stderr -64 sp-flame --diff "$basic"
	[[ "$stderr" == *"--diff takes two inputs"* ]]
}

@test "sp-flame: the pprof file decodes with pprof-format to the same totals and stacks" {
	need_npm
	run --separate-stderr -0 sp-flame --pprof -o "$BATS_TEST_TMPDIR/b.pb.gz" "$basic"
	run -0 node "$FIXTURES/pprof-folded.js" "$BATS_TEST_TMPDIR/b.pb.gz"
	assert_line "types samples/count cpu/nanoseconds"
	assert_line "totals 8 8000000"
	assert_line --partial "/usr/bin/app@0123456789abcdef0123456789abcdef01234567"
	assert_line --partial "/lib/x86_64-linux-gnu/libc.so.6@fedcba9876543210fedcba9876543210fedcba98"
	diff <(printf '%s\n' "${lines[@]}" | tail -n +4) "$FIXTURES/basic.folded"
}

@test "sp-flame: speedscope JSON validates against speedscope's schema" {
	need_npm
	sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/b.json" "$basic"
	run -0 node "$FIXTURES/speedscope-check.js" "$BATS_TEST_TMPDIR/b.json"
	assert_output "$(printf '%s\n' 'sampled app-100/100 5' 'sampled worker-100/101 3')"
	sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/s.json" "$spans"
	run -0 node "$FIXTURES/speedscope-check.js" "$BATS_TEST_TMPDIR/s.json"
	assert_output "$(printf '%s\n' 'sampled ruby-200/200 4' 'evented spans ruby-200/200 4')"
	# and the checker does reject a broken file
	jq 'del(.profiles[0].weights)' "$BATS_TEST_TMPDIR/s.json" > "$BATS_TEST_TMPDIR/broken.json"
	run -1 node "$FIXTURES/speedscope-check.js" "$BATS_TEST_TMPDIR/broken.json"
}

@test "sp-flame: Chrome trace JSON has spans as complete events and events as instants" {
	require_cmd jq
	sp-flame -q --chrome -o "$BATS_TEST_TMPDIR/t.json" "$spans"
	run -0 jq -c '[.traceEvents[] | select(.ph == "X") | [.name, .tid, .ts, .dur]]' "$BATS_TEST_TMPDIR/t.json"
	assert_output '[["Foo#bar",200,0,4000],["Foo#baz",200,1000,2000]]'
	run -0 jq -c '[.traceEvents[] | select(.ph == "i") | [.name, .s, .ts, .args.path]]' "$BATS_TEST_TMPDIR/t.json"
	assert_output '[["path_open","t",2000,"/etc/hosts"]]'
	# An event names its span by the id its slice carries, in a spool too,
	# where span ids are implicit (the order spans are written).
	sp-decode --encode -o "$BATS_TEST_TMPDIR/spans.sp" "$spans"
	for f in "$spans" "$BATS_TEST_TMPDIR/spans.sp"; do
		sp-flame -q --chrome -o "$BATS_TEST_TMPDIR/t.json" "$f"
		run -0 jq -c '[.traceEvents[] | select(.ph == "X" or .ph == "i") | [.name, .args.span]]' "$BATS_TEST_TMPDIR/t.json"
		assert_output '[["Foo#bar",1],["Foo#baz",2],["path_open",2]]'
	done
}

@test "sp-flame: a real recording of the bundled example shows its functions" {
	require_root
	[ -x "$SP_EXAMPLES/workload" ] || skip "build/examples/workload not built"
	run -0 timeout 60 sp-record -F 499 -o "$BATS_TEST_TMPDIR/w.sp" -- "$SP_EXAMPLES/workload" 0.5
	sp-symbolize "$BATS_TEST_TMPDIR/w.sp" > "$BATS_TEST_TMPDIR/w.sym.sp" 2>/dev/null
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/w.sym.sp"
	# the leaves the example spends its time in (nm would list them too)
	assert_output --regexp "(^|;)main;"
	assert_output --regexp "(hash_token|fold_constants|draw_line|mix_pixels|child_checksum)"
	[[ "$stderr" == *" samples, "*"% with a broken-looking stack"* ]]
}

@test "sp-flame: memory follows distinct stacks, not samples (100x the samples, same stacks)" {
	[ -x /usr/bin/time ] || skip "needs /usr/bin/time (package time)"
	gen() {	# the definitions of basic.jsonl, then $1 samples over its 6 stacks
		grep -v '"type":"sample"\|"type":"end"' "$basic"
		awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++)
			printf "{\"type\":\"sample\",\"time\":%d,\"pid\":100,\"tid\":%d,\"cpu\":0,\"stack\":%d,\"weight\":1}\n",
				1000000000 + i * 1000, 100 + i % 2, 3 + i % 6 }'
	}
	gen 1000 | sp-decode --encode -o "$BATS_TEST_TMPDIR/few.sp"
	gen 100000 | sp-decode --encode -o "$BATS_TEST_TMPDIR/many.sp"
	/usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/few.rss" sp-flame -q "$BATS_TEST_TMPDIR/few.sp" > /dev/null
	/usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/many.rss" sp-flame -q "$BATS_TEST_TMPDIR/many.sp" > "$BATS_TEST_TMPDIR/many.folded"
	# 100000 samples over 6 stacks: 100000 / 6 = 16666 or 16667 each
	run -0 awk '{ s += $NF } END { print NR, s }' "$BATS_TEST_TMPDIR/many.folded"
	assert_output "6 100000"
	few=$(cat "$BATS_TEST_TMPDIR/few.rss") many=$(cat "$BATS_TEST_TMPDIR/many.rss")
	echo "peak RSS: $few KiB for 1000 samples, $many KiB for 100000"
	[ "$many" -lt $((few + 2048)) ]
}

@test "sp-flame: Chrome trace of uncorrelated input pairs span marks as begin/end" {
	require_cmd jq
	{
		head -1 "$basic"
		echo '{"type":"span_start","time":1000001000,"pid":100,"tid":101,"runtime":"python","klass":"mod","method":"f"}'
		echo '{"type":"span_stop","time":1000003000,"pid":100,"tid":101,"runtime":"python","klass":"mod","method":"f"}'
	} > "$BATS_TEST_TMPDIR/marks.jsonl"
	run --separate-stderr -0 sp-flame --chrome "$BATS_TEST_TMPDIR/marks.jsonl"
	run -0 jq -c '[.traceEvents[] | [.ph, .name, .tid, .ts]]' <<< "$output"
	assert_output '[["B","mod.f",101,1],["E","mod.f",101,3]]'
}

@test "sp-flame: a spool cut short gives the stacks read so far, names the offset, exits 2" {
	sp-decode --encode -o "$BATS_TEST_TMPDIR/basic.sp" "$basic"
	size=$(stat -c %s "$BATS_TEST_TMPDIR/basic.sp")
	head -c $((size - 30)) "$BATS_TEST_TMPDIR/basic.sp" > "$BATS_TEST_TMPDIR/cut.sp"
	run --separate-stderr -2 sp-flame "$BATS_TEST_TMPDIR/cut.sp"
	[[ "$stderr" == *"sp-flame: error: $BATS_TEST_TMPDIR/cut.sp@"*": record cut short"* ]]
	[ -n "$output" ]
	# every line is one of the complete recording's, with at most its count
	while read -r line; do
		stack=${line% *} n=${line##* }
		full=$(grep -F "$stack " "$FIXTURES/basic.folded" | awk -v s="$stack" 'substr($0, 1, length(s) + 1) == s " " { print $NF }')
		[ -n "$full" ] && [ "$n" -le "$full" ]
	done <<< "$output"
}

# 100 modules with build-ids, all defined before the first sample (the
# definitions once kept build-ids in an array that moved from the 17th
# module on, and the pprof writer read them after the move), then one
# sample in each.
modules_100() {
	awk 'BEGIN {
		print "{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1000,\"clock\":\"monotonic\"}"
		for (i = 1; i <= 100; i++)
			printf "{\"type\":\"module\",\"time\":1000,\"pid\":7,\"start\":\"0x%x\",\"end\":\"0x%x\",\"path\":\"/lib/m%d.so\",\"build_id\":\"%040x\"}\n",
				i * 65536, i * 65536 + 4096, i, 1000003 * i
		for (i = 1; i <= 100; i++) {
			printf "{\"type\":\"frame\",\"module\":%d,\"rel\":\"0x10\",\"addr\":\"0x%x\"}\n", i, i * 65536 + 16
			printf "{\"type\":\"stack\",\"parent\":0,\"frame\":%d}\n", i
		}
		for (i = 1; i <= 100; i++)
			printf "{\"type\":\"sample\",\"time\":%d,\"pid\":7,\"tid\":7,\"stack\":%d}\n", 2000 + i, i
	}'
}

@test "sp-flame: --pprof carries each of 100 modules' own build-id" {
	modules_100 | sp-decode --encode -o "$BATS_TEST_TMPDIR/m.sp"
	out=$BATS_TEST_TMPDIR/m.pb.gz
	if command -v valgrind >/dev/null; then
		# a read of freed memory is an error here, whatever it happens to hold
		run --separate-stderr -0 valgrind -q --error-exitcode=99 sp-flame --pprof -o "$out" \
			"$BATS_TEST_TMPDIR/m.sp"
		[[ "$stderr" != *"Invalid read"* ]]
	else
		run --separate-stderr -0 sp-flame --pprof -o "$out" "$BATS_TEST_TMPDIR/m.sp"
	fi
	# every build-id is in the profile's string table, as pprof's hex
	for i in $(seq 100); do
		printf '%040x\n' $((1000003 * i))
	done > "$BATS_TEST_TMPDIR/want"
	run -0 bash -c "gzip -dc '$out' | grep -aoE '[0-9a-f]{40}' | sort -u | diff - <(sort '$BATS_TEST_TMPDIR/want')"
	# and each mapping has its own, read back by an independent decoder
	if command -v npm >/dev/null && command -v node >/dev/null; then
		need_npm
		run -0 node "$FIXTURES/pprof-folded.js" "$out"
		for i in $(seq 100); do
			assert_line --partial "/lib/m$i.so@$(printf '%040x' $((1000003 * i)))"
		done
	fi
}


@test "sp-flame: a 100000-frame stack folds to its 4096 innermost frames, counted as truncated" {
	awk 'BEGIN {
		print "{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1000,\"clock\":\"monotonic\"}"
		print "{\"type\":\"frame\",\"module\":0,\"rel\":\"0x10\",\"addr\":\"0x10\",\"pid\":7}"
		print "{\"type\":\"symbol\",\"frame\":1,\"index\":0,\"func\":\"main\"}"
		print "{\"type\":\"frame\",\"module\":0,\"rel\":\"0x20\",\"addr\":\"0x20\",\"pid\":7}"
		print "{\"type\":\"symbol\",\"frame\":2,\"index\":0,\"func\":\"rec\"}"
		for (i = 1; i <= 100000; i++)
			printf "{\"type\":\"stack\",\"parent\":%d,\"frame\":%d}\n", i - 1, i == 1 ? 1 : 2
		# one sample every 1000 levels, and three on the deepest
		for (i = 1000; i <= 100000; i += 1000)
			printf "{\"type\":\"sample\",\"time\":%d,\"pid\":7,\"tid\":7,\"stack\":%d}\n", 2000 + i, i
		for (i = 0; i < 2; i++)
			print "{\"type\":\"sample\",\"time\":200000,\"pid\":7,\"tid\":7,\"stack\":100000}"
	}' | sp-decode --encode -o "$BATS_TEST_TMPDIR/deep.sp" 2>/dev/null
	run --separate-stderr -0 small_stack sp-flame "$BATS_TEST_TMPDIR/deep.sp"
	# stacks 1000..4000 are whole (main at the root); the deeper ones
	# keep 4096 frames of rec, and all of those are one stack
	run -0 awk '{ n = split($1, f, ";"); print n, f[1], $2 }' <<< "$output"
	assert_line "1000 main 1"
	assert_line "4000 main 1"
	assert_line "4096 rec 98"
	[ "${#lines[@]}" -eq 5 ]
	[[ "$stderr" == *"warning: $BATS_TEST_TMPDIR/deep.sp@"*": stack 4097 is deeper than 4096 frames"* ]]
	[[ "$stderr" == *"102 samples, 100.0% with a broken-looking stack (102 truncated at the depth limit"* ]]
}

@test "sp-flame: 1,000,000 nested spans: --by=span keeps the 4096 innermost and says so; speedscope and Chrome hold every span" {
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1,"clock":"monotonic"}' \
		'{"type":"string","value":"f"}' \
		'{"type":"process","time":1,"pid":7,"ppid":1,"comm":"deep"}' \
		'{"type":"frame","module":0,"rel":"0x10","addr":"0x10","pid":7}' \
		'{"type":"symbol","frame":1,"index":0,"func":"work"}' \
		'{"type":"stack","parent":0,"frame":1}' | sp-decode --encode -o "$BATS_TEST_TMPDIR/deep.sp"
	span_marks start 1000000 "$BATS_TEST_TMPDIR/deep.sp"
	# a sample in the innermost: time +1, pid 7, tid 7, cpu 0, stack 1, weight 1
	printf '\010\006\002\007\007\000\001\001' >> "$BATS_TEST_TMPDIR/deep.sp"
	printf '\022\001\002' >> "$BATS_TEST_TMPDIR/deep.sp"	# end, 1 ns later
	sp-correlate -o "$BATS_TEST_TMPDIR/c.sp" "$BATS_TEST_TMPDIR/deep.sp"
	run --separate-stderr -0 small_stack sp-flame --by=span "$BATS_TEST_TMPDIR/c.sp"
	run -0 awk -F';' '{ print NF, $1, $NF }' <<< "$output"
	assert_output "4097 f work 1"
	[[ "$stderr" == *"; 1 sample under more than 4096 spans: the outermost left out"* ]]
	run --separate-stderr -0 small_stack sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/s.json" \
		"$BATS_TEST_TMPDIR/c.sp"
	run -0 bash -c "grep -o '{\"type\":\"[OC]\"' '$BATS_TEST_TMPDIR/s.json' | sort | uniq -c"
	assert_line --regexp '^ *1000000 \{"type":"C"$'
	assert_line --regexp '^ *1000000 \{"type":"O"$'
	run --separate-stderr -0 small_stack sp-flame -q --chrome -o "$BATS_TEST_TMPDIR/c.json" \
		"$BATS_TEST_TMPDIR/c.sp"
	[ "$(grep -c '"cat":"span"' "$BATS_TEST_TMPDIR/c.json")" -eq 1000000 ]
}

@test "sp-flame: the Chrome trace names each process and thread once, by its last name" {
	require_cmd jq
	{
		head -4 "$basic"
		echo '{"type":"thread","time":1000000500,"tid":101,"pid":100,"name":"worker-2"}'
		echo '{"type":"thread","time":1000000600,"tid":101,"pid":100,"name":"worker-2"}'
		echo '{"type":"process","time":1000000700,"pid":100,"ppid":1,"comm":"app2","exe":"/usr/bin/app2","flags":"0x2"}'
		echo '{"type":"thread","time":1000000800,"tid":0,"pid":0,"name":"swapper/0"}'
	} > "$BATS_TEST_TMPDIR/names.jsonl"
	run --separate-stderr -0 sp-flame --chrome "$BATS_TEST_TMPDIR/names.jsonl"
	echo "$output" > "$BATS_TEST_TMPDIR/t.json"
	# no (name, pid, tid) metadata twice
	run -0 jq -c '[.traceEvents[] | select(.ph == "M") | [.name, .pid, .tid]] | group_by(.) | map(select(length > 1))' "$BATS_TEST_TMPDIR/t.json"
	assert_output '[]'
	run -0 jq -c '[.traceEvents[] | select(.ph == "M") | [.name, .pid, .tid, .args.name]] | sort' "$BATS_TEST_TMPDIR/t.json"
	assert_output '[["process_name",100,100,"app2"],["thread_name",0,0,"swapper/0"],["thread_name",100,100,"app"],["thread_name",100,101,"worker-2"]]'
}

@test "sp-flame: DevTools' trace engine reads the Chrome trace: each thread by its last name, its spans, the gap as <no-span>" {
	require_cmd npm "npm installs DevTools' trace engine (@paulirish/trace_engine)"
	require_cmd node
	dir=$BATS_FILE_TMPDIR/trace_engine
	if [ ! -d "$dir/node_modules/@paulirish/trace_engine" ]; then
		mkdir -p "$dir"
		(cd "$dir" && timeout 300 npm install --no-audit --no-fund --silent \
			@paulirish/trace_engine >/dev/null 2>&1) ||
			skip "npm install @paulirish/trace_engine failed (no registry?)"
	fi
	{
		grep -v '"type":"event"' "$spans"
		echo '{"type":"thread","time":1000000500,"tid":200,"pid":200,"name":"ruby-main"}'
		echo '{"type":"thread","time":1000000600,"tid":201,"pid":200,"name":"worker"}'
		echo '{"type":"span","id":3,"parent":0,"pid":200,"tid":201,"runtime":"ruby","klass":"W","method":"run","start":1000000000,"stop":1002000000}'
		echo '{"type":"span","id":4,"parent":0,"pid":200,"tid":200,"end":"synthetic","start":1005000000,"stop":1006000000}'
	} > "$BATS_TEST_TMPDIR/t.jsonl"
	sp-flame -q --chrome -o "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/t.jsonl"
	run -0 timeout 120 node "$FIXTURES/chrome-check.mjs" "$BATS_TEST_TMPDIR/t.json" "$dir/node_modules"
	assert_output "$(printf '%s\n' 'thread 200/200 ruby-main: Foo#bar,Foo#baz,<no-span>' 'thread 200/201 worker: W#run')"
}

@test "sp-flame: the gap span is <no-span> in folded stacks and the Chrome trace, as sp-tree and the docs name it" {
	require_cmd jq
	{
		grep -v '"type":"sample"\|"type":"event"' "$spans"
		echo '{"type":"span","id":3,"parent":0,"pid":200,"tid":200,"end":"synthetic","start":1005000000,"stop":1005000000}'
		echo '{"type":"sample","time":1005000000,"pid":200,"tid":200,"cpu":0,"stack":1,"weight":1,"span":3,"rule":"gap"}'
	} > "$BATS_TEST_TMPDIR/gap.jsonl"
	run --separate-stderr -0 sp-flame --by=span "$BATS_TEST_TMPDIR/gap.jsonl"
	assert_output '<no-span>;main 1'
	run --separate-stderr -0 sp-flame --chrome "$BATS_TEST_TMPDIR/gap.jsonl"
	run -0 jq -r '.traceEvents[] | select(.args.span == 3) | .name' <<< "$output"
	assert_output '<no-span>'
	grep -rq '<no-span>' "$BATS_TEST_DIRNAME/../docs/correlate.md"
	! grep -rq '\[no span\]' "$BATS_TEST_DIRNAME/../docs"
}

@test "sp-flame: pprof reads the main binary from the first mapping and symbolizes what is only partly named" {
	require_cmd go "golang-go: go tool pprof is the reader"
	# the first sample's leaf is in the kernel, then libc: the mappings
	# arrive kernel, libc, app; app has one frame with no symbol (0x401700)
	{
		grep -v '"type":"sample"\|"type":"end"' "$basic"
		echo '{"type":"frame","id":8,"module":1,"rel":"0x1700","addr":"0x401700"}'
		echo '{"type":"stack","id":9,"parent":2,"frame":8}'
		echo '{"type":"sample","time":1000000000,"pid":100,"tid":101,"cpu":1,"stack":6,"weight":1}'
		echo '{"type":"sample","time":1001000000,"pid":100,"tid":100,"cpu":0,"stack":4,"weight":1}'
		echo '{"type":"sample","time":1002000000,"pid":100,"tid":100,"cpu":0,"stack":9,"weight":1}'
	} > "$BATS_TEST_TMPDIR/m.jsonl"
	sp-flame -q --pprof -o "$BATS_TEST_TMPDIR/m.pb.gz" "$BATS_TEST_TMPDIR/m.jsonl"
	run -0 go tool pprof -symbolize=none -top "$BATS_TEST_TMPDIR/m.pb.gz"
	assert_line "File: app"
	assert_line "Build ID: 0123456789abcdef0123456789abcdef01234567"
	run -0 go tool pprof -symbolize=none -raw "$BATS_TEST_TMPDIR/m.pb.gz"
	# one frame of app has no function: app is not marked [FN], so pprof
	# would look its addresses up; the kernel's one frame is named
	assert_line --regexp '^1: 0x400000/0x401000/0x0 /usr/bin/app 0123456789abcdef0123456789abcdef01234567 *$'
	assert_line --regexp '^[23]: 0xffffffff81000000/0xffffffff82000000/0x0 \[kernel.kallsyms\] +\[FN\]$'
	assert_line --regexp '^[23]: 0x7f0000000000/0x7f0000100000/0x0 /lib/x86_64-linux-gnu/libc.so.6 fedcba9876543210fedcba9876543210fedcba98 *$'
	assert_line --regexp '^ +[0-9]+: 0x401700 M=1 *$'
}

@test "sp-flame: pprof places a frame another process took inside its mapping, through the file's ELF address" {
	require_cmd go "golang-go: go tool pprof is the reader"
	# A frame is one per file and address, with the first module record
	# of the file: frames 8 and 10 carry another process's addresses.
	# libc's bias (ELF address - file offset) is 0, libz's 0x2000 (learnt
	# from frame 9, in its mapping), whichever comes first.
	{
		grep -v '"type":"sample"\|"type":"end"' "$basic"
		echo '{"type":"module","id":4,"time":1000000000,"pid":100,"start":"0x7f1000000000","end":"0x7f1000010000","pgoff":"0x1000","path":"/lib/x86_64-linux-gnu/libz.so.1"}'
		echo '{"type":"frame","id":8,"module":2,"rel":"0x2345","addr":"0x7f5500002345"}'
		echo '{"type":"frame","id":9,"module":4,"rel":"0x3100","addr":"0x7f1000000100"}'
		echo '{"type":"frame","id":10,"module":4,"rel":"0x3400","addr":"0x7f6600000400"}'
		echo '{"type":"stack","id":9,"parent":3,"frame":8}'
		echo '{"type":"stack","id":10,"parent":3,"frame":10}'
		echo '{"type":"stack","id":11,"parent":3,"frame":9}'
		for s in 9 10 11 5; do
			echo '{"type":"sample","time":1000000000,"pid":100,"tid":100,"cpu":0,"stack":'$s',"weight":1}'
		done
	} > "$BATS_TEST_TMPDIR/o.jsonl"
	sp-flame -q --pprof -o "$BATS_TEST_TMPDIR/o.pb.gz" "$BATS_TEST_TMPDIR/o.jsonl"
	run -0 go tool pprof -symbolize=none -raw "$BATS_TEST_TMPDIR/o.pb.gz"
	assert_line --regexp '^ +[0-9]+: 0x7f0000002345 M=[0-9]+ *$'
	assert_line --regexp '^ +[0-9]+: 0x7f1000000400 M=[0-9]+ *$'
	assert_line --regexp '^ +[0-9]+: 0x7f1000000100 M=[0-9]+ *$'
	assert_line --regexp '^ +[0-9]+: 0x7f0000001234 M=[0-9]+ *$'
	refute_output --partial 0x7f55
	refute_output --partial 0x7f66
}

@test "sp-flame: pprof of a real program run twice: every location in its mapping, and pprof names its functions" {
	require_root
	require_cmd go "golang-go: go tool pprof is the reader"
	[ -x "$SP_EXAMPLES/workload" ] || skip "build/examples/workload not built"
	# the shell maps libc first; each run of workload maps it elsewhere
	run -0 timeout 60 sp-record -F 499 -o "$BATS_TEST_TMPDIR/w.sp" -- \
		sh -c "$SP_EXAMPLES/workload 0.2; $SP_EXAMPLES/workload 0.2"
	sp-flame -q --pprof -o "$BATS_TEST_TMPDIR/w.pb.gz" "$BATS_TEST_TMPDIR/w.sp"
	run -0 sh -c 'go tool pprof -symbolize=none -raw "$1" | python3 "$2"' _ \
		"$BATS_TEST_TMPDIR/w.pb.gz" "$FIXTURES/pprof-in-mapping.py"
	[[ "$output" == *" 0" || "$output" == *" 0 " ]] || fail "locations outside their mapping: $output"
	[ "${output%% *}" -gt 10 ] || fail "too few locations: $output"
	# pprof looks the addresses up in the binary itself (nothing symbolized)
	run -0 go tool pprof -top "$BATS_TEST_TMPDIR/w.pb.gz"
	assert_output --regexp "(hash_token|fold_constants|draw_line|mix_pixels|child_checksum)"
}

@test "sp-flame: pprof types off-CPU samples as waits and off_cpu nanoseconds, not cpu" {
	require_cmd go "golang-go: go tool pprof is the reader"
	sp-flame -q --pprof --off-cpu -o "$BATS_TEST_TMPDIR/off.pb.gz" "$basic"
	run -0 go tool pprof -symbolize=none -raw "$BATS_TEST_TMPDIR/off.pb.gz"
	assert_line "PeriodType: waits count"
	assert_line "Period: 1"
	assert_line "waits/count off_cpu/nanoseconds[dflt]"
	assert_line --regexp '^ +1 +5000000: '
	run -0 go tool pprof -symbolize=none -top "$BATS_TEST_TMPDIR/off.pb.gz"
	assert_line "Type: off_cpu"
	assert_line --partial "Showing nodes accounting for 5ms, 100% of 5ms total"
	# CPU samples keep their types, cpu the default
	sp-flame -q --pprof -o "$BATS_TEST_TMPDIR/cpu.pb.gz" "$basic"
	run -0 go tool pprof -symbolize=none -raw "$BATS_TEST_TMPDIR/cpu.pb.gz"
	assert_line "PeriodType: cpu nanoseconds"
	assert_line "Period: 1000000"
	assert_line "samples/count cpu/nanoseconds[dflt]"
}

@test "sp-flame: pprof of a real 300 ms sleep says off_cpu, about 300 ms, in sleep's own binary" {
	require_root
	require_cmd go "golang-go: go tool pprof is the reader"
	run -0 timeout 60 sp-record --off-cpu -o "$BATS_TEST_TMPDIR/s.sp" -- sleep 0.3
	sp-symbolize "$BATS_TEST_TMPDIR/s.sp" > "$BATS_TEST_TMPDIR/s.sym.sp" 2>/dev/null
	sp-flame -q --pprof --off-cpu --comm=sleep -o "$BATS_TEST_TMPDIR/s.pb.gz" "$BATS_TEST_TMPDIR/s.sym.sp"
	run -0 go tool pprof -symbolize=none -top "$BATS_TEST_TMPDIR/s.pb.gz"
	assert_line "Type: off_cpu"
	assert_line "File: sleep"
	# at least the 300 ms the program slept, in milliseconds or seconds
	assert_line --regexp '^Showing nodes accounting for (3[0-9][0-9](\.[0-9]+)?ms|0\.3[0-9]*s), '
}

@test "sp-flame: --by=span correlates an input sp-correlate has not seen, as sp-tree does" {
	# spans.jsonl's definitions, its header saying symbolized only, and
	# span marks instead of span records
	{
		head -1 "$spans" | sed 's/"flags":"0xc"/"flags":"0x4"/'
		grep '"type":"\(process\|thread\|module\|frame\|symbol\|stack\)"' "$spans"
		m='"pid":200,"tid":200,"runtime":"ruby","klass":"Foo"'
		echo "{\"type\":\"span_start\",\"time\":1000000000,$m,\"method\":\"bar\",\"file\":\"app.rb\",\"line\":3}"
		echo '{"type":"sample","time":1000500000,"pid":200,"tid":200,"cpu":0,"stack":2,"weight":1}'
		echo "{\"type\":\"span_start\",\"time\":1001000000,$m,\"method\":\"baz\",\"file\":\"app.rb\",\"line\":7}"
		echo '{"type":"sample","time":1001500000,"pid":200,"tid":200,"cpu":0,"stack":2,"weight":1}'
		echo '{"type":"sample","time":1002500000,"pid":200,"tid":200,"cpu":0,"stack":2,"weight":1}'
		echo "{\"type\":\"span_stop\",\"time\":1003000000,$m,\"method\":\"baz\"}"
		echo "{\"type\":\"span_stop\",\"time\":1004000000,$m,\"method\":\"bar\"}"
		echo '{"type":"sample","time":1005000000,"pid":200,"tid":200,"cpu":0,"stack":1,"weight":1}'
	} > "$BATS_TEST_TMPDIR/marks.jsonl"
	run --separate-stderr -0 sp-flame --by=span "$BATS_TEST_TMPDIR/marks.jsonl"
	assert_output "$(printf '%s\n' '<no-span>;main 1' 'Foo#bar;Foo#baz;main;vm_exec 2' 'Foo#bar;main;vm_exec 1')"
	# the same as through sp-correlate, and from a spool
	run --separate-stderr -0 sh -c "sp-correlate '$BATS_TEST_TMPDIR/marks.jsonl' | sp-flame --by=span"
	assert_output "$(printf '%s\n' '<no-span>;main 1' 'Foo#bar;Foo#baz;main;vm_exec 2' 'Foo#bar;main;vm_exec 1')"
	sp-decode --encode -o "$BATS_TEST_TMPDIR/marks.sp" "$BATS_TEST_TMPDIR/marks.jsonl"
	# two streams one after the other: each correlated on its own
	run --separate-stderr -0 sp-flame --by=span "$BATS_TEST_TMPDIR/marks.sp" "$BATS_TEST_TMPDIR/marks.sp"
	assert_output "$(printf '%s\n' '<no-span>;main 2' 'Foo#bar;Foo#baz;main;vm_exec 4' 'Foo#bar;main;vm_exec 2')"
	# a correlated stream after an uncorrelated one is taken as it is
	run --separate-stderr -0 sp-flame --by=span "$BATS_TEST_TMPDIR/marks.sp" "$spans"
	assert_output "$(printf '%s\n' '<no-span>;main 1' 'Foo#bar;Foo#baz;main;vm_exec 4' 'Foo#bar;main;vm_exec 2' 'main 1')"
}

@test "sp-flame: --fold-runtime leaves the interpreter's glue out, keeps it at the leaf, and folds the span hook into one frame" {
	run --separate-stderr -0 sp-flame --by=span --fold-runtime "$FIXTURES/runtime.jsonl"
	assert_output "$(printf '%s\n' \
		'mod.outer;_PyEval_EvalFrameDefault 1' \
		'mod.outer;_PyFunction_Vectorcall 1' \
		'mod.outer;__clock_gettime 1' \
		'mod.outer;mod.inner;PyUnicode_Format;unicode_format_arg 1' \
		'mod.outer;mod.inner;[_stackpulse_hook] 2' \
		'mod.outer;mod.inner;_PyEval_EvalFrameDefault 2' \
		'mod.outer;python3.11+0xc000 1')"
	# without it, every frame as recorded
	run --separate-stderr -0 sp-flame --by=span "$FIXTURES/runtime.jsonl"
	assert_line 'mod.outer;mod.inner;_start;__libc_start_main;Py_BytesMain;_PyEval_EvalFrameDefault;_PyFunction_Vectorcall;_PyEval_EvalFrameDefault;call_trace.part.0;profile;__clock_gettime 1'
	# the SVG and speedscope take the same stacks
	run --separate-stderr -0 sp-flame --svg --by=span --fold-runtime "$FIXTURES/runtime.jsonl"
	[[ "$output" != *"Py_BytesMain"* && "$output" == *"[_stackpulse_hook]"* ]]
	sp-flame -q --speedscope --fold-runtime -o "$BATS_TEST_TMPDIR/s.json" "$FIXTURES/runtime.jsonl"
	run -0 jq -c '.shared.frames as $f | [.profiles[] | select(.type == "sampled") | .samples[][]] |
		unique | map($f[.].name) | sort' "$BATS_TEST_TMPDIR/s.json"
	assert_output '["PyUnicode_Format","[_stackpulse_hook]","_PyEval_EvalFrameDefault","_PyFunction_Vectorcall","__clock_gettime","python3.11+0xc000","unicode_format_arg"]'
}

@test "sp-flame: the runtime glue table in docs/sp-flame.md is the code's" {
	# and so are the module rows
	grep -q '^| The span hooks (by module) | `_stackpulse_hook\.\*`, `stackpulse_hook\.\*` ' "$BATS_TEST_DIRNAME/../docs/sp-flame.md"
	grep -q '^| Unnamed frames of the runtimes (by file) | `libruby\*`, `libpython\*`, `ruby\*`, `python\*` |' "$BATS_TEST_DIRNAME/../docs/sp-flame.md"
	grep -q '"libruby", "libpython", "ruby", "python"' "$BATS_TEST_DIRNAME/../lib/render/folded_runtime.c"
	src=$BATS_TEST_DIRNAME/../lib/render/folded_runtime.c
	doc=$BATS_TEST_DIRNAME/../docs/sp-flame.md
	code=$(sed -n '/^static const char \*const glue\[\] = {/,/^};/p' "$src" |
		grep -o '"[^"]*"' | tr -d '"' | sort)
	[ "$(wc -l <<< "$code")" -gt 50 ]
	docs=$(sed -n '/^## RUNTIME GLUE/,/^## /p' "$doc" | grep '^| ' | grep -v '(by module)\|(by file)' |
		tail -n +3 | cut -d'|' -f3 | grep -o '`[^`]*`' | tr -d '`' | sort)
	diff <(echo "$code") <(echo "$docs")
}

@test "sp-flame: --by=span --fold-runtime on a real Python recording (dwarf): methods, then the native code they ran" {
	require_root
	command -v python3 >/dev/null || skip "needs python3"
	cat > "$BATS_TEST_TMPDIR/app.py" <<'PY'
import json
def parse(s):
    return json.loads(s)
def work(n):
    return sum(len(parse('{"a": [1, 2, {"b": "%d"}]}' % i)) for i in range(n))
print(work(60000))
PY
	run -0 timeout 120 sp-record --spans=python --call-graph=dwarf -F 499 -o "$BATS_TEST_TMPDIR/p.sp" -- python3 "$BATS_TEST_TMPDIR/app.py"
	grep -q "span marks\|span_start" <<< "$(sp-decode --stats "$BATS_TEST_TMPDIR/p.sp")" ||
		skip "no Python spans recorded: $(sp-record --check --spans=python 2>&1 | tail -1)"
	sp-symbolize "$BATS_TEST_TMPDIR/p.sp" > "$BATS_TEST_TMPDIR/p.sym.sp" 2>/dev/null
	run --separate-stderr -0 sp-flame --by=span --fold-runtime --comm=python3 "$BATS_TEST_TMPDIR/p.sym.sp"
	echo "$output" > "$BATS_TEST_TMPDIR/f.folded"
	# spans came from an uncorrelated spool: correlated on the fly
	# (Python spans are named module.qualname; a span whose marks a loaded
	# machine dropped from the ring is missing from some paths, so the
	# chain is asked for in part: work's span path, and json.loads in it)
	grep -q '^__main__\.<module>;__main__\.work;' "$BATS_TEST_TMPDIR/f.folded" ||
		fail "no span path of work: $(head -c 600 "$BATS_TEST_TMPDIR/f.folded")"
	grep -q '^__main__\.<module>;__main__\.work;.*json\.loads' "$BATS_TEST_TMPDIR/f.folded" ||
		fail "json.loads under no span path of work: $(head -c 600 "$BATS_TEST_TMPDIR/f.folded")"
	# no evaluation loop or libc start but at the leaf; the hook only as one leaf
	run grep -E '(^|;)(_PyEval_EvalFrameDefault|_PyFunction_Vectorcall|__libc_start_main|Py_RunMain|call_trace);' "$BATS_TEST_TMPDIR/f.folded"
	assert_failure
	run grep -E '_stackpulse_hook' "$BATS_TEST_TMPDIR/f.folded"
	if [ "$status" = 0 ]; then
		run grep -vE '(^|;)\[_stackpulse_hook\] [0-9]+$' <<< "$output"
		assert_failure
	fi
	# the same recording without the option has them (the evaluation loop's
	# own frames are replaced by the Python frames they ran: _PyEval_Vector
	# calls it)
	run --separate-stderr -0 sp-flame --by=span --comm=python3 "$BATS_TEST_TMPDIR/p.sym.sp"
	assert_output --regexp ';_PyEval_Vector;'
}

@test "sp-flame: --lines=FUNCTION counts its leaf samples by source line, inlined code on the line of the call" {
	# square is inlined into compute at app.c:30; its own code is app.c:5
	run --separate-stderr -0 sp-flame --lines=compute "$basic"
	assert_line "# compute: 3 of 8 samples (37.50%) at the leaf, by source line (share of the function's)"
	assert_line "## app.c (source not shown: No such file or directory)"
	assert_line --regexp '^ 100\.00% +3 +30$'
	run --separate-stderr -0 sp-flame --lines=square "$basic"
	assert_line --regexp '^ 100\.00% +3 +5$'
	# never at a leaf: said, with the hottest leaves (by samples, then name)
	run --separate-stderr -0 sp-flame -q --lines=_start "$basic"
	assert_output ""
	[[ "$stderr" == *"no sample has '_start' at its leaf; the hottest leaves: 'compute' (3), 'ksys_read' (2), 'main' (1), 'odd;name here' (1), 'work' (1)"* ]]
	run --separate-stderr -64 sp-flame --lines= "$basic"
}

@test "sp-flame: --lines on a real recording of a bundled program names its two hot loops' lines, with their source" {
	require_root
	[ -x "$SP_EXAMPLES/hotlines" ] || skip "build/examples/hotlines not built"
	src=tests/fixtures/src/hotlines.c
	run -0 timeout 60 sp-record -F 999 -o "$BATS_TEST_TMPDIR/h.sp" -- "$SP_EXAMPLES/hotlines" 1
	sp-symbolize "$BATS_TEST_TMPDIR/h.sp" > "$BATS_TEST_TMPDIR/h.sym.sp" 2>/dev/null
	# the file names are the compiler's, relative to the checkout
	cd "$BATS_TEST_DIRNAME/.."
	run --separate-stderr -0 sp-flame -q --lines=hot_loops "$BATS_TEST_TMPDIR/h.sym.sp"
	echo "$output" > "$BATS_TEST_TMPDIR/lines.txt"
	assert_line --regexp '^# hot_loops: [0-9]+ of [0-9]+ samples \([0-9.]+%\) at the leaf'
	assert_line "## $src"
	l3=$(grep -n 'LOOP3 \*/' "$src" | cut -d: -f1)
	l1=$(grep -n 'LOOP1 \*/' "$src" | cut -d: -f1)
	row() { awk -v l="$1" '$3 == l { print $2 }' "$BATS_TEST_TMPDIR/lines.txt"; }
	n3=$(row "$l3") n1=$(row "$l1")
	total=$(sed -n 's/^# hot_loops: \([0-9]*\) of.*/\1/p' "$BATS_TEST_TMPDIR/lines.txt")
	echo "LOOP3 line $l3: $n3, LOOP1 line $l1: $n1, of $total"
	# the loop three times as long has more samples; the two loops hold most
	[ "$n3" -gt "$n1" ] && [ "$n1" -gt 0 ]
	[ $((n3 + n1)) -ge $((total * 8 / 10)) ]
	# the source text of the row is the file's own line (tabs as spaces)
	grep -qF -- "$(sed -n "${l3}p" "$src" | expand -t 8)" "$BATS_TEST_TMPDIR/lines.txt"
	# from elsewhere the relative file cannot be read: said, counts kept
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr -0 sp-flame -q --lines=hot_loops "$BATS_TEST_TMPDIR/h.sym.sp"
	assert_line "## $src (source not shown: No such file or directory)"
	assert_line --regexp "^ +[0-9.]+% +$n3 +$l3\$"
}

@test "sp-flame: --by=span --fold-runtime on a real Ruby recording (dwarf): libruby's unnamed frames fold too" {
	require_root
	command -v ruby >/dev/null || skip "needs ruby"
	cat > "$BATS_TEST_TMPDIR/app.rb" <<'RB'
require 'json'
def parse(s) = JSON.parse(s)
def work(n) = (0...n).sum { |i| parse(%Q({"a": [1, 2, {"b": "#{i}"}]})).size }
puts work(30000)
RB
	run -0 timeout 120 sp-record --spans=ruby --call-graph=dwarf -F 499 -o "$BATS_TEST_TMPDIR/r.sp" -- ruby "$BATS_TEST_TMPDIR/app.rb"
	grep -q "span_start" <<< "$(sp-decode --stats "$BATS_TEST_TMPDIR/r.sp")" ||
		skip "no Ruby spans recorded: $(sp-record --check --spans=ruby 2>&1 | tail -1)"
	sp-symbolize "$BATS_TEST_TMPDIR/r.sp" > "$BATS_TEST_TMPDIR/r.sym.sp" 2>/dev/null
	run --separate-stderr -0 sp-flame --by=span --fold-runtime --comm=ruby "$BATS_TEST_TMPDIR/r.sym.sp"
	echo "$output" > "$BATS_TEST_TMPDIR/f.folded"
	grep -q '^Object#work;.*Object#parse;JSON\.parse' "$BATS_TEST_TMPDIR/f.folded"
	# libruby's frames, named or not, and the hook only at a leaf
	run grep -E '(^|;)(libruby[^;]*\+0x[0-9a-f]+|rb_vm_exec|rb_yield|ruby_run_node|__libc_start_main|\[stackpulse_hook\]);' "$BATS_TEST_TMPDIR/f.folded"
	assert_failure
	# and without --fold-runtime they are there (the eval loop's own frame,
	# rb_vm_exec, is replaced by the methods it ran when the interpreted
	# stack was read: look for any of them)
	run --separate-stderr -0 sp-flame --by=span --comm=ruby "$BATS_TEST_TMPDIR/r.sym.sp"
	assert_output --regexp ';(libruby[^;]*\+0x[0-9a-f]+|rb_[a-z_]+|ruby_run_node);'
}

@test "sp-flame: speedscope and the Chrome trace of a real Python program with threads nest on each thread" {
	require_root
	[ -x /usr/bin/python3.11 ] || skip "needs Debian's /usr/bin/python3.11"
	compgen -G "$SP_BIN/../runtime/python/_stackpulse_hook*.so" >/dev/null ||
		skip "the Python hook is not built (python3-dev)"
	workers=4 jobs=16
	cat > "$BATS_TEST_TMPDIR/pool.py" <<PY
from concurrent.futures import ThreadPoolExecutor
import time
def work(n):
    return sum(i * i for i in range(n))
def job(k):
    with open("/etc/hostname", "rb") as f:
        f.read(8)
    time.sleep(0.002)
    return work(20000 + k)
with ThreadPoolExecutor(max_workers=$workers) as ex:
    print(len(list(ex.map(job, range($jobs)))))
PY
	out=$BATS_TEST_TMPDIR/run.sp corr=$BATS_TEST_TMPDIR/run.corr.sp
	run -0 --separate-stderr sp-record --spans=python -o "$out" -- /usr/bin/python3.11 "$BATS_TEST_TMPDIR/pool.py"
	assert_output "$jobs"
	sp-correlate -o "$corr" "$out" 2>/dev/null
	sp-correlate --format=json "$corr" > "$BATS_TEST_TMPDIR/corr.jsonl"
	sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/s.json" "$corr"
	sp-flame -q --chrome -o "$BATS_TEST_TMPDIR/c.json" "$corr"
	# the formats' rules, and each method's span whole, by readers of our own
	# (tests/fixtures/sp-flame/README.md)
	run -0 python3 "$FIXTURES/speedscope-nesting.py" "$BATS_TEST_TMPDIR/s.json" "$BATS_TEST_TMPDIR/corr.jsonl"
	run -0 python3 "$FIXTURES/chrome-nesting.py" "$BATS_TEST_TMPDIR/c.json" "$BATS_TEST_TMPDIR/corr.jsonl"
	# the jobs ran on the workers: each job's span on a thread of its own
	# profile, not the main thread's (threads from the spans' own tids)
	run -0 jq -r 'select(.type == "span" and .method == "job") | .tid' "$BATS_TEST_TMPDIR/corr.jsonl"
	[ "${#lines[@]}" -eq "$jobs" ]
	tids=$(printf '%s\n' "${lines[@]}" | sort -u)
	main=$(jq -r 'select(.type == "process") | .pid' "$BATS_TEST_TMPDIR/corr.jsonl" | head -1)
	[ "$(wc -l <<< "$tids")" -ge 1 ] && [ "$(wc -l <<< "$tids")" -le "$workers" ]
	! grep -qx "$main" <<< "$tids"
	for t in $tids; do
		run -0 jq -r --arg t "/$t" '[.profiles[] | select(.type == "evented" and (.name | startswith("spans ")) and (.name | endswith($t)))] | length' "$BATS_TEST_TMPDIR/s.json"
		assert_output 1
	done
}

@test "sp-flame: --by=process and --by=thread label samples with the name the process had then: before and after an exec" {
	{
		head -n 29 "$basic"
		echo '{"type":"sample","time":1000000000,"pid":100,"tid":100,"cpu":0,"stack":8,"weight":1}'
		echo '{"type":"process","time":1000500000,"pid":100,"ppid":1,"comm":"as","exe":"/usr/bin/as","flags":"0x2"}'
		echo '{"type":"thread","time":1000500000,"tid":100,"pid":100,"name":"as"}'
		echo '{"type":"sample","time":1001000000,"pid":100,"tid":100,"cpu":0,"stack":8,"weight":1}'
		echo '{"type":"sample","time":1002000000,"pid":100,"tid":100,"cpu":0,"stack":8,"weight":1}'
		# named as before again: one line with the first name's samples
		echo '{"type":"process","time":1002500000,"pid":100,"ppid":1,"comm":"app","exe":"/usr/bin/app","flags":"0x2"}'
		echo '{"type":"thread","time":1002500000,"tid":100,"pid":100,"name":"app"}'
		echo '{"type":"sample","time":1003000000,"pid":100,"tid":100,"cpu":0,"stack":8,"weight":1}'
	} > "$BATS_TEST_TMPDIR/exec.jsonl"
	run --separate-stderr -0 sp-flame --by=process "$BATS_TEST_TMPDIR/exec.jsonl"
	assert_output "app-100;main 2
as-100;main 2"
	run --separate-stderr -0 sp-flame --by=thread "$BATS_TEST_TMPDIR/exec.jsonl"
	assert_output "app-100;main 2
as-100;main 2"
}

# basic.jsonl with a Python module's frames: "[python]" recorded with no
# range, its frames' addresses ids; <module> of two files, <genexpr>, and
# a C++ function (demangled, as sp-symbolize gives it) under them.
interp_input() {
	{
		grep -v '"type":"sample"\|"type":"end"' "$basic"
		echo '{"type":"module","id":4,"time":1000000000,"pid":100,"start":"0x0","end":"0x0","path":"[python]"}'
		echo '{"type":"frame","id":8,"module":4,"rel":"0x1","addr":"0x1","mode":"interp"}'
		echo '{"type":"frame","id":9,"module":4,"rel":"0x2","addr":"0x2","mode":"interp"}'
		echo '{"type":"frame","id":10,"module":4,"rel":"0x3","addr":"0x3","mode":"interp"}'
		echo '{"type":"frame","id":11,"module":4,"rel":"0x4","addr":"0x4","mode":"interp"}'
		echo '{"type":"frame","id":12,"module":1,"rel":"0x1700","addr":"0x401700"}'
		echo '{"type":"symbol","frame":8,"index":0,"func":"<module>","file":"app.py","line":7}'
		echo '{"type":"symbol","frame":9,"index":0,"func":"<genexpr>","file":"app.py","line":2}'
		echo '{"type":"symbol","frame":10,"index":0,"func":"<module>","file":"lib.py","line":1}'
		echo '{"type":"symbol","frame":11,"index":0,"func":"<module>","file":"app.py","line":5}'
		echo '{"type":"symbol","frame":12,"index":0,"func":"std::vector<int, std::allocator<int> >::push_back(int const&)","file":"vec.h","line":9,"column":3}'
		echo '{"type":"stack","id":9,"parent":2,"frame":8}'
		echo '{"type":"stack","id":10,"parent":9,"frame":9}'
		echo '{"type":"stack","id":11,"parent":10,"frame":12}'
		echo '{"type":"stack","id":12,"parent":2,"frame":10}'
		echo '{"type":"stack","id":13,"parent":2,"frame":11}'
		for s in 10 11 11 12 13; do
			echo '{"type":"sample","time":1000000000,"pid":100,"tid":100,"cpu":0,"stack":'$s',"weight":1}'
		done
	} > "$BATS_TEST_TMPDIR/py.jsonl"
}

@test "sp-flame: pprof names interpreted functions as they are (<module>), still simplifies C++ names, and holds [python]'s locations in its mapping" {
	require_cmd go "golang-go: go tool pprof is the reader"
	interp_input
	sp-flame -q --pprof -o "$BATS_TEST_TMPDIR/py.pb.gz" "$BATS_TEST_TMPDIR/py.jsonl"
	# pprof strips "<...>" from a name equal to its system name, as from
	# a demangled C++ name: <module> showed as its mapping, [[python]]
	run -0 go tool pprof -top "$BATS_TEST_TMPDIR/py.pb.gz"
	assert_line --regexp ' <module>$'
	assert_line --regexp ' <genexpr>$'
	assert_line --regexp ' std::vector::push_back$'
	refute_output --partial '[[python]]'
	run -0 go tool pprof -symbolize=none -raw "$BATS_TEST_TMPDIR/py.pb.gz"
	assert_line --regexp '^[0-9]+: 0x1/0x5/0x0 \[python\] +\[FN\]\[FL\]\[LN\]$'
}

@test "sp-flame: speedscope frames carry their function's file, lowest line and column; one per function and file" {
	interp_input
	run --separate-stderr -0 sp-flame --speedscope "$BATS_TEST_TMPDIR/py.jsonl"
	echo "$output" > "$BATS_TEST_TMPDIR/py.json"
	run -0 jq -c '[.shared.frames[] | select(.name | test("^<|^main$|^_start$|vector"))] | sort_by(.name, .file)' \
		"$BATS_TEST_TMPDIR/py.json"
	assert_output '[{"name":"<genexpr>","file":"app.py","line":2},{"name":"<module>","file":"app.py","line":5},{"name":"<module>","file":"lib.py","line":1},{"name":"_start"},{"name":"main","file":"app.c","line":10},{"name":"std::vector<int, std::allocator<int> >::push_back(int const&)","file":"vec.h","line":9,"col":3}]'
	# the folded stacks still merge by name
	run --separate-stderr -0 sp-flame "$BATS_TEST_TMPDIR/py.jsonl"
	assert_line '_start;main;<module> 2'
}

@test "sp-flame: a real Python program: pprof shows <module> by name, speedscope gives the script's frames its file and lines" {
	require_root
	[ -x /usr/bin/python3.11 ] || skip "needs Debian's /usr/bin/python3.11"
	printf 'def f():\n    return sum(i * i for i in range(2000000))\nf()\n' > "$BATS_TEST_TMPDIR/app.py"
	run -0 timeout 60 sp-record -o "$BATS_TEST_TMPDIR/p.sp" -- /usr/bin/python3.11 "$BATS_TEST_TMPDIR/app.py"
	sp-symbolize "$BATS_TEST_TMPDIR/p.sp" > "$BATS_TEST_TMPDIR/p.sym.sp" 2>/dev/null
	sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/p.json" "$BATS_TEST_TMPDIR/p.sym.sp"
	run -0 jq -r --arg f "$BATS_TEST_TMPDIR/app.py" \
		'[.shared.frames[] | select(.file == $f) | "\(.name) \(.line)"] | sort | .[]' \
		"$BATS_TEST_TMPDIR/p.json"
	assert_line '<module> 3'
	assert_line 'f 2'
	if command -v go >/dev/null; then
		sp-flame -q --pprof -o "$BATS_TEST_TMPDIR/p.pb.gz" "$BATS_TEST_TMPDIR/p.sym.sp"
		run -0 go tool pprof -top "$BATS_TEST_TMPDIR/p.pb.gz"
		assert_line --regexp ' <module>$'
		refute_output --partial '[[python]]'
	fi
}
