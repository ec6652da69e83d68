#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-export: OTLP traces and profiles. The files are decoded by protobufjs (installed from
# npm by the test) from OpenTelemetry's own .proto files and checked against
# sp-decode's JSON lines of the same recording, or against values worked out
# by hand from tests/fixtures/sp-export/forks.jsonl.

load helper

PROTO=$BATS_TEST_DIRNAME/../third_party/opentelemetry-proto

# protobufjs, installed once per run of this file into a temporary directory.
need_npm() {
	require_cmd npm "npm is needed to install protobufjs, the independent OTLP reader"
	require_cmd node
	NPM_DIR=$BATS_FILE_TMPDIR/npm
	if [ ! -d "$NPM_DIR/node_modules/protobufjs" ]; then
		mkdir -p "$NPM_DIR"
		(cd "$NPM_DIR" && timeout 300 npm install --no-audit --no-fund --silent \
			protobufjs@7 >/dev/null 2>&1) ||
			skip "npm install protobufjs failed (no registry?)"
	fi
	export NODE_PATH=$NPM_DIR/node_modules
}

teardown() {
	if [ -n "${rpid:-}" ]; then
		kill "$rpid" 2>/dev/null || true
	fi
}

# Export $1 (correlated) both ways into $T and check both against its records.
check_export() {
	sp-decode "$1" > "$T/rec.jsonl"
	run --separate-stderr -0 sp-export -o "$T/req.pb" "$1"
	run --separate-stderr -0 sp-export --json -o "$T/req.json" "$1"
	run -0 node "$BATS_TEST_DIRNAME/fixtures/sp-export/otlp-check.js" "$PROTO" \
		"$T/req.pb" "$T/req.json" "$T/rec.jsonl"
}

@test "sp-export: spans, parents, times, threads and events of a real recording, read back by protobufjs" {
	require_root
	need_npm
	T=$BATS_TEST_TMPDIR
	sp-record --spans=usdt -o "$T/run.sp" -- "$SP_EXAMPLES/spans_c" >/dev/null
	sp-correlate -o "$T/run.c.sp" "$T/run.sp"
	check_export "$T/run.c.sp"
	# what the check counted is what the recording holds
	spans=$(jq -s '[.[] | select(.type == "span")] | length' "$T/rec.jsonl")
	events=$(jq -s '[.[] | select(.type == "event" and .span > 0)] | length' "$T/rec.jsonl")
	roots=$(jq -s '[.[] | select(.type == "span" and .parent == 0 and (.fork_span // 0) == 0)] | length' "$T/rec.jsonl")
	[ "$spans" -ge 10 ] && [ "$events" -ge 3 ]
	assert_output --regexp "^ok: $spans spans, $events events, [0-9]+ resources, $roots traces$"
	# spans_c's thread and its child process: their spans hang under main's span
	run -0 jq -s '[.[] | select(.type == "span" and .fork_span > 0)] | length' "$T/rec.jsonl"
	[ "$output" -ge 1 ]
}

@test "sp-export: a Python program's spans and audit events (Debian's python3)" {
	require_root
	need_npm
	[ -x /usr/bin/python3.11 ] || skip "needs Debian's python3.11"
	T=$BATS_TEST_TMPDIR
	cat > "$T/t.py" <<-'EOF'
	import socket
	def work(n):
	    with open("/etc/hostname") as f:
	        f.read()
	    s = socket.socket()
	    try:
	        s.connect(("127.0.0.1", 9))
	    except OSError:
	        pass
	    s.close()
	for i in range(3):
	    work(i)
	EOF
	sp-record --spans=python,python-audit -o "$T/py.sp" -- /usr/bin/python3.11 "$T/t.py" >/dev/null
	sp-correlate -o "$T/py.c.sp" "$T/py.sp"
	check_export "$T/py.c.sp"
	# the three calls of work() (a span named module.qualname) each own
	# their file and socket events
	run -0 jq -c '[.resourceSpans[].scopeSpans[].spans[] | select(.name == "__main__.work") |
		[(.events // [])[].name | select(. == "path_open" or . == "sock_connect")] | sort] | unique' "$T/req.json"
	assert_output '[["path_open","sock_connect"]]'
	run -0 jq '[.resourceSpans[].scopeSpans[].spans[] | select(.name == "__main__.work")] | length' "$T/req.json"
	assert_output 3
}

@test "sp-export --profiles: CPU time by process, thread, span and stack, linked to the spans, read back by protobufjs" {
	require_root
	need_npm
	T=$BATS_TEST_TMPDIR
	# a parent and a child process, two threads each (tests/fixtures/src/workload.c)
	sp-record -F 499 -o "$T/w.sp" -- "$SP_EXAMPLES/workload" 2 >/dev/null
	sp-symbolize "$T/w.sp" 2>/dev/null | sp-correlate -o "$T/w.sym.sp"
	sp-decode "$T/w.sym.sp" > "$T/w.jsonl"
	run --separate-stderr -0 sp-export --profiles -o "$T/w.prof" "$T/w.sym.sp"
	run --separate-stderr -0 sp-export --profiles --json -o "$T/w.prof.json" "$T/w.sym.sp"
	run --separate-stderr -0 sp-export -o "$T/w.traces" "$T/w.sym.sp"
	run -0 node "$BATS_TEST_DIRNAME/fixtures/sp-export/otlp-profiles-check.js" "$PROTO" \
		"$T/w.prof" "$T/w.jsonl" "$T/w.prof.json" "$T/w.traces"
	pids=$(jq -s '[.[] | select(.type == "sample" and (.kind // "cpu") == "cpu") | .pid] | unique | length' "$T/w.jsonl")
	periods=$(jq -s '[.[] | select(.type == "sample" and (.kind // "cpu") == "cpu") | (.weight // 1)] | add' "$T/w.jsonl")
	[ "$periods" -ge 10 ]
	# a period at 499 Hz: 1e9 / 499 ns, rounded down
	# every sample is owned by a span (a gap span at least): each span with samples is a link
	links=$(jq -s '[.[] | select(.type == "sample" and (.kind // "cpu") == "cpu") | [.tid, .span]] | unique | length' "$T/w.jsonl")
	assert_output --regexp "^ok: $pids processes, [0-9]+ samples, [0-9]+ stacks, $links links, $((periods * 2004008)) ns$"
	# the same bytes twice
	sp-export --profiles -o "$T/w2.prof" "$T/w.sym.sp" 2>/dev/null
	cmp "$T/w.prof" "$T/w2.prof"
}

@test "sp-export: forks, raises, open spans and hostile names, by hand" {
	need_npm
	T=$BATS_TEST_TMPDIR
	check_export "$FIXTURES/forks.jsonl"
	assert_output "ok: 3 spans, 2 events, 2 resources, 1 traces"
	run --separate-stderr -0 sp-export --json "$FIXTURES/forks.jsonl"
	assert_equal "$stderr" "sp-export: warning: 1 events belong to no span: not written"
	echo "$output" > "$T/f.json"
	# resources: the comm that is not UTF-8 and the one with a direction mark by their text form
	run -0 jq -r '.resourceSpans[].resource.attributes[] | select(.key == "service.name") | .value.stringValue' "$T/f.json"
	assert_output $'ru\\xffby\nworker\\xe2\\x80\\xae'
	run -0 jq -r '[.resourceSpans[].resource.attributes[] | select(.key == "host.arch" or .key == "os.version") | .value.stringValue] | join(" ")' "$T/f.json"
	assert_output "amd64 6.1.0 amd64 6.1.0"
	# names, ends (the open span at the end record: start_wall + 5 ms), statuses
	run -0 jq -r '.resourceSpans[].scopeSpans[].spans[] | [.name, .startTimeUnixNano, .endTimeUnixNano, (.status.code // 0), (.status.message // "")] | join(" ")' "$T/f.json"
	assert_output - <<-'EOF'
	Foo#bar 1764668400000000000 1764668400004000000 0 
	Foo#boom 1764668400001000000 1764668400002000000 2 RuntimeError
	child\x1bwork 1764668400002500000 1764668400005000000 0 
	EOF
	# the child process's span: in its forking span's trace, under it
	run -0 jq -r '[.resourceSpans[].scopeSpans[].spans[]] | "\(.[2].parentSpanId == .[0].spanId) \(.[2].traceId == .[0].traceId) \(.[0].parentSpanId == null)"' "$T/f.json"
	assert_output "true true true"
	run -0 jq -r '.resourceSpans[1].scopeSpans[0].spans[0].attributes[] | select(.key == "code.filepath") | .value.stringValue' "$T/f.json"
	assert_output 'C:\x5cxdir\app.rb'
}

@test "sp-export: two conversions are the same bytes; another recording has other ids" {
	T=$BATS_TEST_TMPDIR
	sp-export -o "$T/a.pb" "$FIXTURES/forks.jsonl" 2>/dev/null
	sp-export -o "$T/b.pb" "$FIXTURES/forks.jsonl" 2>/dev/null
	cmp "$T/a.pb" "$T/b.pb"
	[ -s "$T/a.pb" ]
	sed 's/"start_wall_ns":1764668400000000000/"start_wall_ns":1764668500000000000/' \
		"$FIXTURES/forks.jsonl" > "$T/later.jsonl"
	sp-export --json "$FIXTURES/forks.jsonl" 2>/dev/null |
		jq -r '.resourceSpans[].scopeSpans[].spans[] | .traceId, .spanId' | sort -u > "$T/a.ids"
	sp-export --json "$T/later.jsonl" 2>/dev/null |
		jq -r '.resourceSpans[].scopeSpans[].spans[] | .traceId, .spanId' | sort -u > "$T/b.ids"
	[ "$(wc -l < "$T/a.ids")" = 4 ]	# one trace, three spans
	run -0 comm -12 "$T/a.ids" "$T/b.ids"
	assert_output ""
	run -1 grep -x '0*' "$T/a.ids"
}

@test "sp-export: an OTLP/HTTP receiver takes both files (POST /v1/traces)" {
	need_npm
	require_cmd curl
	T=$BATS_TEST_TMPDIR
	sp-export -o "$T/f.pb" "$FIXTURES/forks.jsonl" 2>/dev/null
	sp-export --json -o "$T/f.json" "$FIXTURES/forks.jsonl" 2>/dev/null
	node "$BATS_TEST_DIRNAME/fixtures/sp-export/otlp-receiver.js" "$PROTO" "$T/port" "$T/log" 3>&- &
	rpid=$!
	for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
	port=$(cat "$T/port")
	run -0 curl -sS -o "$T/resp" -w '%{http_code} %{content_type}' --data-binary @"$T/f.pb" \
		-H 'Content-Type: application/x-protobuf' "http://127.0.0.1:$port/v1/traces"
	assert_output "200 application/x-protobuf"
	run -0 curl -sS -w ' %{http_code}' --data-binary @"$T/f.json" \
		-H 'Content-Type: application/json' "http://127.0.0.1:$port/v1/traces"
	assert_output "{} 200"
	sp-decode --encode -o "$T/w.sp" "$BATS_TEST_DIRNAME/fixtures/sp-flame/basic.jsonl"
	sp-export --profiles -o "$T/w.prof" "$T/w.sp" 2>/dev/null
	run -0 curl -sS -o "$T/resp" -w '%{http_code}' --data-binary @"$T/w.prof" \
		-H 'Content-Type: application/x-protobuf' "http://127.0.0.1:$port/v1development/profiles"
	assert_output 200
	kill "$rpid"
	rpid=
	run -0 cat "$T/log"
	assert_output $'protobuf 2 3 2\njson 2 3 2\nprofiles 1 5'
}

@test "sp-export: uncorrelated input is correlated on the fly: the request sp-correlate's output gives" {
	require_cmd jq
	T=$BATS_TEST_TMPDIR
	grep -v '"type":"span"' "$FIXTURES/forks.jsonl" |
		sed -e 's/"flags":"0x8"/"flags":"0x0"/' -e 's/"span":[0-9]*,"rule":"[a-z]*",//' > "$T/raw.jsonl"
	! grep -F '"span":' "$T/raw.jsonl"
	run --separate-stderr -0 sp-export -o "$T/raw.pb" "$T/raw.jsonl"
	assert_equal "$stderr" ""
	sp-correlate "$T/raw.jsonl" | sp-export -o "$T/corr.pb"
	[ -s "$T/raw.pb" ]
	cmp "$T/raw.pb" "$T/corr.pb"
	# every event is in a span: the three of the fixture
	run --separate-stderr -0 sp-export --json "$T/raw.jsonl"
	[ "$(jq '[.resourceSpans[].scopeSpans[].spans[].events // [] | length] | add' <<< "$output")" -eq \
	  "$(grep -c '"type":"event"' "$T/raw.jsonl")" ]
}

@test "sp-export: an event naming a span never defined is reported (exit 1)" {
	T=$BATS_TEST_TMPDIR
	sed 's/"span":3,/"span":9,/' "$FIXTURES/forks.jsonl" > "$T/bad.jsonl"
	run --separate-stderr -1 sp-export --json "$T/bad.jsonl"
	[[ "$stderr" == *"sp-export: warning: 1 events name a span the input never defined: not written"* ]]
	run -0 jq '[.resourceSpans[].scopeSpans[].spans[] | (.events // [])[]] | length' <<<"$output"
	assert_output 1
}
