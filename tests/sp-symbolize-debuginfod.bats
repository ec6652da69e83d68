#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-symbolize and debuginfod: programs are built here with -g, their debug
# information split off with objcopy --only-keep-debug and the programs
# stripped; a real debuginfod server (elfutils') started here on 127.0.0.1
# serves the debug files, and a stub server (fixtures) misbehaves where a
# test needs it to. Expected names and lines come from addr2line on the
# unstripped programs, request counts from the servers themselves.

load helper

BASE=$((0x500000000000))
BASE2=$((0x600000000000))

setup() {
	require_cmd gcc
	require_cmd jq
	require_cmd objcopy
	require_cmd curl
	require_cmd python3
	T=$BATS_TEST_TMPDIR
	SRV_PID=
	SHARED=
	# Each test its own cache: what one fetched is not another's.
	export SP_CACHE_DIR=$T/cache
	unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT DEBUGINFOD_CACHE_PATH DEBUGINFOD_PROGRESS
	mkdir -p "$T/srv" "$T/app"
}

teardown() {
	[ -z "$SRV_PID" ] || kill "$SRV_PID" 2>/dev/null || true
	[ -z "$SHARED" ] || rm -rf "$SHARED"
}

buildid() {
	readelf -n "$1" | awk '/Build ID/ { print $3 }'
}

fn_addr() {	# fn_addr BIN NAME -> 0x... (ELF address, from nm)
	nm "$1" | awk -v n="$2" '$3 == n { print "0x" $1; exit }' | sed 's/^0x0*/0x/'
}

# app NAME [cc flags...]: the fixture built with -g as $T/app/NAME, its full
# copy kept as $T/NAME.full and its debug file in $T/srv/<build-id>.debug
# (the stub server's layout; debuginfod scans the directory), stripped.
app() {
	local name=$1 bid
	shift
	gcc -O1 -g -fno-omit-frame-pointer "$@" -o "$T/$name.full" \
		"$BATS_TEST_DIRNAME/fixtures/sp-symbolize/inl.c"
	bid=$(buildid "$T/$name.full")
	[ -n "$bid" ]
	objcopy --only-keep-debug "$T/$name.full" "$T/srv/$bid.debug"
	strip --strip-all -o "$T/app/$name" "$T/$name.full"
	! nm "$T/app/$name" 2>/dev/null | grep -q ' walk$'
}

# free_port: a TCP port nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_debuginfod: elfutils' server over $T/srv; URL, SRV_PID. Waits until it
# has scanned every file there.
start_debuginfod() {
	require_cmd debuginfod "Debian package debuginfod"
	local port n want tries=0
	want=$(ls "$T/srv" | wc -l)
	port=$(free_port)
	debuginfod -F -t 0 -g 0 -d "$T/db.sqlite" -p "$port" "$T/srv" > "$T/srv.log" 2>&1 &
	SRV_PID=$!
	URL=http://127.0.0.1:$port
	while :; do
		n=$(curl -s "$URL/metrics" | awk '/^scanned_files_total\{source="file"\}/ { print $2 }')
		[ "${n:-0}" -ge "$want" ] && break
		kill -0 "$SRV_PID" || { cat "$T/srv.log"; false; }
		((tries++ < 300)) || { cat "$T/srv.log"; false; }
		sleep 0.1
	done
}

# requests: how many debug files the debuginfod server was asked for.
requests() {
	curl -s "$URL/metrics" |
		awk '/^http_requests_total\{type="debuginfo"\}/ { n = $2 } END { print n + 0 }'
}

# start_stub ARGS...: the misbehaving server; URL, SRV_PID, its log $T/stub.log.
start_stub() {
	: > "$T/stub.log"
	python3 "$BATS_TEST_DIRNAME/fixtures/sp-symbolize-debuginfod/stub_server.py" \
		--dir "$T/srv" --log "$T/stub.log" "$@" > "$T/stub.port" &
	SRV_PID=$!
	local tries=0
	until [ -s "$T/stub.port" ]; do
		((tries++ < 100)) || false
		sleep 0.1
	done
	URL=http://127.0.0.1:$(head -1 "$T/stub.port")
}

# stream ADDRS_A [ADDRS_B]: JSON lines with module 1 mapping $T/app/a, module
# 2 $T/app/b (when ADDRS_B is given), one leaf frame per ELF address.
stream() {
	local a
	printf '{"type":"header","version":1,"clock":"monotonic"}\n'
	printf '{"type":"module","time":1,"pid":100,"start":"0x%x","end":"0x%x","path":"%s","build_id":"%s"}\n' \
		"$BASE" $((BASE + 0x1000000)) "$T/app/a" "$(buildid "$T/app/a")"
	[ -z "${2:-}" ] ||
		printf '{"type":"module","time":1,"pid":100,"start":"0x%x","end":"0x%x","path":"%s","build_id":"%s"}\n' \
			"$BASE2" $((BASE2 + 0x1000000)) "$T/app/b" "$(buildid "$T/app/b")"
	for a in $1; do
		printf '{"type":"frame","module":1,"rel":"%s","addr":"0x%x","flags":"0x1"}\n' "$a" $((BASE + a))
	done
	for a in ${2:-}; do
		printf '{"type":"frame","module":2,"rel":"%s","addr":"0x%x","flags":"0x1"}\n' "$a" $((BASE2 + a))
	done
	printf '{"type":"process_end","time":2,"pid":100}\n'
}

# syms FILE: one line per innermost symbol: module|rel|func|file:line
syms() {
	jq -rs '(map(select(.type == "frame")) | map({key: (.id | tostring), value: "\(.module)|\(.rel)"})
		| from_entries) as $f
		| .[] | select(.type == "symbol" and .index == 0)
		| "\($f[.frame | tostring])|\(.func // "??")|\((.file // "??") | split("/") | last):\(.line // 0)"' "$1"
}

# ref MODULE BIN ADDRS: what addr2line says of the innermost level, as syms.
ref() {
	addr2line -f -i -a -e "$2" $3 | awk -v m="$1" '
		/^0x/ { sub(/^0x0*/, "0x"); a = $0; first = 1; next }
		first { f = $0; getline loc; sub(/ \(discriminator.*/, "", loc)
			n = split(loc, p, "/"); print m "|" a "|" f "|" p[n]; first = 0; next }
		{ getline }'
}

# walk_addrs BIN: a few addresses inside walk().
walk_addrs() {
	local a
	a=$(fn_addr "$1" walk)
	[ -n "$a" ]
	printf '0x%x 0x%x 0x%x\n' $((a)) $((a + 4)) $((a + 9))
}

@test "sp-symbolize-debuginfod: a stripped program recorded by sp-record gets function, file and line from a debuginfod server, and only from it" {
	require_root
	[ -x "$SP_BIN/sp-record" ] || skip "sp-record is not built"
	app a
	sp-record -F 1999 -o "$T/run.sp" -- "$T/app/a" 200000000 2> "$T/rec.err" || {
		cat "$T/rec.err"
		skip "sp-record could not record here"
	}
	start_debuginfod
	# Without DEBUGINFOD_URLS: nothing is asked, walk() has no name.
	run --separate-stderr -0 sp-symbolize --no-system-debug -o "$T/plain.sp" "$T/run.sp"
	sp-decode "$T/plain.sp" > "$T/plain.jsonl"
	! grep -q '"func":"walk"' "$T/plain.jsonl"
	assert_equal "$(requests)" 0
	# With it: walk() with the lines addr2line gives. (The C library's debug
	# file is asked for too: the server does not have it.)
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --stats \
		-o "$T/sym.sp" "$T/run.sp"
	[[ "$stderr" == *"debuginfod: 1 debug files fetched, 0 from its cache, "* ]]
	[[ "$stderr" != *"'$T/app/a': debug information not fetched"* ]]
	[ "$(requests)" -ge 1 ]
	sp-decode "$T/sym.sp" > "$T/sym.jsonl"
	syms "$T/sym.jsonl" | grep '|walk|' | sort -u > "$T/ours"
	[ -s "$T/ours" ]
	local mod rel f loc
	while IFS='|' read -r mod rel f loc; do
		ref "$mod" "$T/a.full" "$rel" | grep -qxF "$mod|$rel|$f|$loc" ||
			{ echo "ours: $mod|$rel|$f|$loc; addr2line: $(ref "$mod" "$T/a.full" "$rel")"; false; }
	done < "$T/ours"
	grep -q '|walk|inl.c:[1-9]' "$T/ours"
	# The records are the same but for the symbols.
	assert_equal "$(jq -c 'select(.type != "symbol" and .type != "string")' "$T/sym.jsonl" | wc -l)" \
		"$(jq -c 'select(.type != "symbol" and .type != "string")' "$T/plain.jsonl" | wc -l)"
}

@test "sp-symbolize-debuginfod: every address of walk() in two stripped programs agrees with addr2line" {
	app a
	app b -O2
	[ "$(buildid "$T/a.full")" != "$(buildid "$T/b.full")" ]
	start_debuginfod
	local aa bb
	aa=$(walk_addrs "$T/a.full")
	bb=$(walk_addrs "$T/b.full")
	stream "$aa" "$bb" > "$T/in.jsonl"
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	assert_equal "$(requests)" 2
	syms "$T/out.jsonl" | sort > "$T/ours"
	{ ref 1 "$T/a.full" "$aa"; ref 2 "$T/b.full" "$bb"; } | sort > "$T/ref"
	diff -u "$T/ref" "$T/ours"
}

@test "sp-symbolize-debuginfod: a server that is down costs one line per module and nothing else" {
	app a
	app b -O2
	stream "$(walk_addrs "$T/a.full")" "$(walk_addrs "$T/b.full")" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/plain.jsonl" \
		"$T/in.jsonl"
	URL=http://127.0.0.1:$(free_port)	# nothing listens there
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --stats \
		--format json -o "$T/down.jsonl" "$T/in.jsonl"
	# One line per module, naming it, its build-id and why.
	assert_equal "$(grep -c 'debug information not fetched from debuginfod' <<< "$stderr")" 2
	grep -q "'$T/app/a': debug information not fetched from debuginfod (build-id $(buildid "$T/a.full")): Connection refused" <<< "$stderr"
	grep -q "'$T/app/b': debug information not fetched from debuginfod (build-id $(buildid "$T/b.full")): Connection refused" <<< "$stderr"
	[[ "$stderr" == *"debuginfod: 0 debug files fetched, 0 from its cache, 2 not fetched"* ]]
	# The output is the one without debuginfod.
	diff -u "$T/plain.jsonl" "$T/down.jsonl"
	# The server comes up: the next run fetches (a refused connection is not
	# remembered as "no server has it").
	start_debuginfod
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/up.jsonl" "$T/in.jsonl"
	assert_equal "$(requests)" 2
	assert_equal "$(syms "$T/up.jsonl" | grep -c '|walk|inl.c:')" 6
}

@test "sp-symbolize-debuginfod: --no-debuginfod asks nothing; a second run takes the file from the cache" {
	app a
	start_debuginfod
	stream "$(walk_addrs "$T/a.full")" > "$T/in.jsonl"
	export DEBUGINFOD_URLS=$URL
	run --separate-stderr -0 sp-symbolize --no-system-debug --no-debuginfod --format json "$T/in.jsonl"
	assert_equal "$(requests)" 0
	[[ "$output" != *'"walk"'* ]]
	[[ "$stderr" != *debuginfod* ]]
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/1.jsonl" "$T/in.jsonl"
	assert_equal "$(requests)" 1
	[ -s "$SP_CACHE_DIR/symbols/debuginfod/$(buildid "$T/a.full")/debuginfo" ]
	# The cache directory is the user's alone.
	assert_equal "$(stat -c %a "$SP_CACHE_DIR/symbols/debuginfod")" 700
	# Again, without the DWARF index kept of the first run: the debug file
	# comes from the cache, the server is not asked.
	rm -f "$SP_CACHE_DIR"/symbols/*.idx
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/2.jsonl" "$T/in.jsonl"
	[[ "$stderr" == *"debuginfod: 0 debug files fetched, 1 from its cache, 0 not fetched"* ]]
	assert_equal "$(requests)" 1
	diff -u <(syms "$T/1.jsonl") <(syms "$T/2.jsonl")
	grep -q '"func":"walk"' "$T/2.jsonl"
	# And with the index kept: nothing is asked either.
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/3.jsonl" "$T/in.jsonl"
	assert_equal "$(requests)" 1
	diff -u <(syms "$T/1.jsonl") <(syms "$T/3.jsonl")
}

@test "sp-symbolize-debuginfod: a build-id no server has is said once and asked once" {
	app a
	start_debuginfod
	rm "$T/srv/$(buildid "$T/a.full").debug"
	stream "$(walk_addrs "$T/a.full")" > "$T/in.jsonl"
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	assert_equal "$(grep -c "'$T/app/a': debug information not fetched from debuginfod (build-id $(buildid "$T/a.full")): no server has it" <<< "$stderr")" 1
	assert_equal "$(requests)" 1
}

@test "sp-symbolize-debuginfod: DEBUGINFOD_TIMEOUT and --debuginfod-timeout give up a server that never answers" {
	app a
	start_stub --stall
	stream "$(walk_addrs "$T/a.full")" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/plain.jsonl" "$T/in.jsonl"
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 timeout 120 sp-symbolize --no-system-debug \
		--debuginfod-timeout=1 --format json -o "$T/out.jsonl" "$T/in.jsonl"
	grep -q "'$T/app/a': debug information not fetched from debuginfod (build-id $(buildid "$T/a.full")): timed out after 1 s" <<< "$stderr"
	diff -u "$T/plain.jsonl" "$T/out.jsonl"
	assert_equal "$(wc -l < "$T/stub.log")" 1
	DEBUGINFOD_TIMEOUT=1 DEBUGINFOD_URLS=$URL run --separate-stderr -0 timeout 120 sp-symbolize \
		--no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	grep -q "timed out after 1 s" <<< "$stderr"
	# Giving up is not "no server has it": the server is asked again.
	assert_equal "$(wc -l < "$T/stub.log")" 2
}

@test "sp-symbolize-debuginfod: distinct build-ids are fetched in parallel" {
	app a
	app b -O2
	# The stub answers only when both requests wait at once: fetched one after
	# the other, the first would wait for the second forever (503 after 60 s).
	start_stub --barrier 2
	stream "$(walk_addrs "$T/a.full")" "$(walk_addrs "$T/b.full")" > "$T/in.jsonl"
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	[[ "$stderr" == *"debuginfod: 2 debug files fetched, 0 from its cache, 0 not fetched"* ]]
	assert_equal "$(syms "$T/out.jsonl" | grep -c '^1|.*|walk|inl.c:')" 3
	assert_equal "$(syms "$T/out.jsonl" | grep -c '^2|.*|walk|inl.c:')" 3
	assert_equal "$(wc -l < "$T/stub.log")" 2
}

@test "sp-symbolize-debuginfod: a server's file of another build-id is not used" {
	app a
	app b -O2
	# The server answers a's build-id with b's debug file.
	mv "$T/srv/$(buildid "$T/b.full").debug" "$T/srv/$(buildid "$T/a.full").debug"
	start_stub
	stream "$(walk_addrs "$T/a.full")" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/plain.jsonl" "$T/in.jsonl"
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	grep -q "'$T/app/a': the debug file fetched from debuginfod, '.*', is not its own" <<< "$stderr"
	diff -u "$T/plain.jsonl" "$T/out.jsonl"
}

@test "sp-symbolize-debuginfod: a cache directory another user can write is not used, and nothing is fetched" {
	app a
	start_debuginfod
	stream "$(walk_addrs "$T/a.full")" > "$T/in.jsonl"
	mkdir -p "$SP_CACHE_DIR/symbols/debuginfod"
	chmod 0777 "$SP_CACHE_DIR/symbols/debuginfod"
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	[[ "$stderr" == *"cache directory '$SP_CACHE_DIR/symbols/debuginfod' not used"* ]]
	[[ "$stderr" == *"debuginfod not used: no cache directory"* ]]
	assert_equal "$(requests)" 0
	! grep -q '"func":"walk"' "$T/out.jsonl"
	[ -z "$(ls -A "$SP_CACHE_DIR/symbols/debuginfod")" ]
}

@test "sp-symbolize-debuginfod: a debug file another user planted in a shared cache is never used" {
	require_root
	require_cmd setpriv
	app a
	app b -O2
	start_debuginfod
	stream "$(walk_addrs "$T/a.full")" > "$T/in.jsonl"
	# A sticky directory every user can write, as /tmp; user nobody makes the
	# cache there first and plants b's debug file under a's build-id.
	local shared bid
	bid=$(buildid "$T/a.full")
	shared=$(mktemp -d /tmp/sp-shared.XXXXXX)
	SHARED=$shared
	chmod 1777 "$shared"
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		"mkdir -p '$shared/sp/symbols/debuginfod/$bid' && cat > '$shared/sp/symbols/debuginfod/$bid/debuginfo'" \
		< "$T/srv/$(buildid "$T/b.full").debug"
	[ "$(stat -c %U "$shared/sp/symbols/debuginfod/$bid/debuginfo")" = nobody ]
	SP_CACHE_DIR=$shared/sp DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize \
		--no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	[[ "$stderr" == *"cache directory '$shared/sp/symbols"*"not used"* ]]
	[[ "$stderr" == *"debuginfod not used: no cache directory"* ]]
	assert_equal "$(requests)" 0
	! grep -q '"func":"walk"' "$T/out.jsonl"
	# Made by us, the same path is used: the file is fetched, and it is a's.
	rm -rf "$shared/sp"
	SP_CACHE_DIR=$shared/sp DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize \
		--no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	assert_equal "$(requests)" 1
	diff -u <(ref 1 "$T/a.full" "$(walk_addrs "$T/a.full")" | sort) <(syms "$T/out.jsonl" | sort)
}

@test "sp-symbolize-debuginfod: a slow fetch shows its progress on a terminal, not in a pipe" {
	require_cmd script "Debian package bsdutils"
	app a
	start_stub --slow 4
	stream "$(walk_addrs "$T/a.full")" > "$T/in.jsonl"
	DEBUGINFOD_URLS=$URL script -qec "sp-symbolize --no-system-debug --format json -o $T/out.jsonl $T/in.jsonl" \
		/dev/null > "$T/tty.out"
	grep -q 'debuginfod: 0 of 1 debug files, [0-9.]* MB so far' "$T/tty.out"
	grep -q '"func":"walk"' "$T/out.jsonl"
	rm -rf "$SP_CACHE_DIR"
	DEBUGINFOD_URLS=$URL run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	[[ "$stderr" != *"so far"* ]]
}

@test "sp-symbolize-debuginfod: the debuginfod options --help prints are in docs/sp-symbolize.md" {
	run -0 sp-symbolize --help
	opts=$(grep -E '^ +(-., )?--[a-z]' <<< "$output" | grep -oE -- '--[a-z][a-z-]+' | grep debuginfod | sort -u)
	assert_equal "$(wc -w <<< "$opts")" 2
	missing=""
	for o in $opts; do
		grep -qF -- "\`$o" "$BATS_TEST_DIRNAME/../docs/sp-symbolize.md" || missing="$missing $o"
	done
	assert_equal "$missing" ""
}
