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
}

@test "sp-flame: the diff of a recording with itself is empty and exits 0" {
	sp-decode --encode -o "$BATS_TEST_TMPDIR/basic.sp" "$basic"
	run --separate-stderr -0 sp-flame --diff --fail-above=0 "$basic" "$BATS_TEST_TMPDIR/basic.sp"
	assert_output ""
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
