#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Kernel events carry the interpreted stack of the thread that made them
# (docs/interpreters.md): a Python and a Ruby program open known files from
# known methods and connect to a server the test starts; recorded without
# spans, launched and with -p, sp-correlate and sp-tree put each event
# under the method that made it. With spans on, spans still win. A forged
# interpreter run by nobody gets a bounded, truncated stack for its events.
# Child processes (their fork and exec) go under the method that started
# them, with no span.
load helper

PY=/usr/bin/python3.11
RB=/usr/bin/ruby
PYFIX=$BATS_TEST_DIRNAME/fixtures/python/ev_methods.py
RBFIX=$BATS_TEST_DIRNAME/fixtures/ruby/ev_methods.rb
PYKIDS=$BATS_TEST_DIRNAME/fixtures/python/ev_children.py
RBKIDS=$BATS_TEST_DIRNAME/fixtures/ruby/ev_children.rb

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
	D=$BATS_TEST_TMPDIR
	echo config > "$D/ev-config.txt"
}

teardown() {
	[ -z "${BG:-}" ] || kill "$BG" 2>/dev/null || true
	[ -z "${SRV:-}" ] || kill "$SRV" 2>/dev/null || true
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
}

need() {
	require_root
	[ -x "$1" ] || skip "needs Debian's $1"
	require_cmd jq
}

# A local server that accepts and closes, forever; PORT is its port.
start_server() {
	$PY -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept(); c.close()' "$D/port" &
	SRV=$!
	for _ in $(seq 100); do [ -s "$D/port" ] && break; sleep 0.1; done
	PORT=$(cat "$D/port")
	[ -n "$PORT" ] || fail "the server did not start"
}

# "method<TAB>what" for each of the program's file and connect events: the
# method of the span sp-correlate gave it ("-" when none; "span:" before it
# when a span hook made the span, not an interpreted frame), what it touched.
owners() {
	sp-correlate --format=json "$OUT" 2>/dev/null | jq -r --arg port "$PORT" --arg skip "${SKIP_MS:-0}" -s '
		(map(select(.type == "span")) | map({key: (.id | tostring),
			value: ((if .end == "synthetic" then "" else "span:" end) +
				(.method // "-"))}) | from_entries) as $m
		| [.[] | select(.type == "event")
		   | select(((.path // "") | test("/ev-(config|report)\\.txt$")) or
			    (.event == "sock_connect" and (.port | tostring) == $port))]
		| sort_by(.time)
		# with -p, the events before the interpreter is found have no
		# stack: those of the first $skip ms after the first with one
		| ((map(select(.stack != null)) | first | .time // 0) + ($skip | tonumber) * 1000000) as $from
		| .[] | select(.time >= $from)
		| [$m[(.span // 0) | tostring] // "-",
		   (if .event == "sock_connect" then "connect" else (.path | sub(".*/"; "")) end)]
		| @tsv'
}

# Every event of the program is under its method, and there are at least
# $1 of each: $2 $3 $4 the methods of the config open, the report open and
# the connect.
assert_owners() {
	run owners
	[ "$status" = 0 ] || fail "sp-correlate | jq: $output"
	local o=$output want
	for want in "$2	ev-config.txt" "$3	ev-report.txt" "$4	connect"; do
		n=$(grep -cxF "$want" <<<"$o" || true)
		[ "$n" -ge "$1" ] || fail "$n x '$want' (want >= $1): $(sort <<<"$o" | uniq -c)"
	done
	bad=$(grep -vxF -e "$2	ev-config.txt" -e "$3	ev-report.txt" -e "$4	connect" <<<"$o" || true)
	[ -z "$bad" ] || fail "events under another method: $(sort <<<"$bad" | uniq -c)"
}

# Each line of an sp-tree (stdin) but the spans' and frames', after the
# nearest span or frame above it in the tree and a tab. By depth, not by
# order: a span's own events are printed after its child frames' trees.
tree_owners() {
	awk '
	function depth(s,   i, p) {
		i = index(s, "├─")
		if (!i)
			i = index(s, "└─")
		if (!i)
			return -1
		p = substr(s, 1, i - 1)
		gsub(/│/, " ", p)
		return int(length(p) / 3)
	}
	{ d = depth($0) }
	d < 0 { next }
	{ for (k = d; k <= top; k++) delete line[k]; line[d] = $0; top = d }
	/\[(FRAME|SPAN)/ { next }
	{
		o = ""
		for (k = d - 1; k >= 0 && o == ""; k--)
			if ((k in line) && line[k] ~ /\[(FRAME|SPAN)/)
				o = line[k]
		print o "\t" $0
	}'
}

# sp-tree: each of the program's events is right under its method's frame
# (with ALLOW_GAP=1, -p's first ones, from before the interpreter was
# found, may be right under the <no-span> gap span: those of a call whose
# program was not attached yet, after others that were, too).
assert_tree() {
	run --separate-stderr sh -c "sp-correlate '$OUT' | sp-tree --stable"
	[ "$status" = 0 ] || fail "sp-tree: $stderr"
	local owned
	owned=$(tree_owners <<<"$output")
	awk -F'\t' -v a="$1" -v b="$2" -v c="$3" -v port=":$PORT" -v gap="${ALLOW_GAP:-0}" '
		!($2 ~ /ev-(config|report)\.txt/ || ($2 ~ /sock_connect/ && index($2, port))) { next }
		gap && index($1, "[SPAN <no-span>]") { next }
		$2 ~ /ev-config\.txt/ { n++; if (index($1, "FRAME " a " ") == 0) { print "config under " $1; bad++ } }
		$2 ~ /ev-report\.txt/ { n++; if (index($1, "FRAME " b " ") == 0) { print "report under " $1; bad++ } }
		$2 ~ /sock_connect/ { n++; if (index($1, "FRAME " c " ") == 0) { print "connect under " $1; bad++ } }
		END { if (n < 3) { print "only " n " events"; bad++ } exit bad > 0 }' <<<"$owned" ||
		fail "$(awk -F'\t' -v port=":$PORT" '/ev-config|ev-report/ || (/sock_connect/ && index($2, port)) { print $1 " / " $2 }' <<<"$owned" | head -5)"
}

@test "a Python command without spans: its files and connects under the methods that made them" {
	need $PY
	start_server
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- $PY "$PYFIX" "$PORT" "$D" 5
	[ "$status" = 0 ] || fail "status $status: $stderr"
	assert_owners 5 Store.load_config write_report Client.ping
	assert_tree Store.load_config write_report Client.ping
}

@test "--event-attach=sys_enter: the raw sys_enter fallback still gives a Python's events their methods" {
	need $PY
	start_server
	# the entry program on raw sys_enter, as where the calls' own
	# tracepoints cannot be had
	run --separate-stderr timeout 120 sp-record -v --spans=none --event-attach=sys_enter \
		-o "$OUT" -- $PY "$PYFIX" "$PORT" "$D" 5
	[ "$status" = 0 ] || fail "status $status: $stderr"
	grep -q 'interpreted frames: system call entries from the raw sys_enter' <<<"$stderr" ||
		fail "not from raw sys_enter: $stderr"
	! grep -q 'cannot attach to system call entries' <<<"$stderr" || fail "$stderr"
	assert_owners 5 Store.load_config write_report Client.ping
	assert_tree Store.load_config write_report Client.ping
}

@test "sp-record -p of a running Python without spans: its events under their methods" {
	need $PY
	start_server
	$PY "$PYFIX" "$PORT" "$D" 0 "$D/ready" &
	BG=$!
	for _ in $(seq 100); do [ -e "$D/ready" ] && break; sleep 0.1; done
	[ -e "$D/ready" ] || fail "the program did not start"
	run --separate-stderr timeout 60 sp-record --spans=none -p "$BG" -d 2 -o "$OUT"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	SKIP_MS=200 assert_owners 5 Store.load_config write_report Client.ping
	ALLOW_GAP=1 assert_tree Store.load_config write_report Client.ping
}

@test "a Ruby command without spans: its files and connects under the methods that made them" {
	need $RB
	start_server
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- $RB "$RBFIX" "$PORT" "$D" 5
	[ "$status" = 0 ] || fail "status $status: $stderr"
	assert_owners 5 Store#load_config Object#write_report Client#ping
	assert_tree Store#load_config Object#write_report Client#ping
}

@test "a Ruby command where tracefs is not mounted: its events carry its methods from the first, and tracefs is not left mounted" {
	need $RB
	require_cmd unshare
	start_server
	# A mount namespace with neither tracefs path: sp-record mounts it for
	# the tracepoints its sources attach on threads of their own, and the
	# interpreters' source must find it as its walkers were loaded for.
	run --separate-stderr timeout 120 unshare -m sh -c '
		umount /sys/kernel/debug/tracing 2>/dev/null
		umount /sys/kernel/tracing 2>/dev/null
		umount -l /sys/kernel/debug 2>/dev/null
		[ ! -e /sys/kernel/tracing/events ] || exit 99
		sp-record -v --spans=none -o "$1" -- "$2" "$3" "$4" "$5" 5 || exit
		! grep -q " /sys/kernel/tracing " /proc/self/mounts || exit 98' sh \
		"$OUT" $RB "$RBFIX" "$PORT" "$D"
	[ "$status" != 99 ] || skip "tracefs cannot be unmounted here"
	[ "$status" != 98 ] || fail "tracefs left mounted"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	! grep -q 'walker not loaded yet' <<< "$stderr" || fail "$(grep walker <<< "$stderr")"
	assert_owners 5 Store#load_config Object#write_report Client#ping
	assert_tree Store#load_config Object#write_report Client#ping
}

@test "sp-record -p of a running Ruby without spans: its events under their methods" {
	need $RB
	start_server
	$RB "$RBFIX" "$PORT" "$D" 0 "$D/ready" &
	BG=$!
	for _ in $(seq 100); do [ -e "$D/ready" ] && break; sleep 0.1; done
	[ -e "$D/ready" ] || fail "the program did not start"
	run --separate-stderr timeout 60 sp-record --spans=none -p "$BG" -d 2 -o "$OUT"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	SKIP_MS=200 assert_owners 5 Store#load_config Object#write_report Client#ping
	ALLOW_GAP=1 assert_tree Store#load_config Object#write_report Client#ping
}

@test "with spans on, an event goes to its span, not to its interpreted frame" {
	need $RB
	require_ruby_probes
	start_server
	run --separate-stderr timeout 120 sp-record --spans=auto -o "$OUT" -- $RB "$RBFIX" "$PORT" "$D" 5
	[ "$status" = 0 ] || fail "status $status: $stderr"
	# every one of them in the span its method's hook made
	assert_owners 5 span:load_config span:write_report span:ping
}

@test "a forged interpreter run by nobody: its events' stacks end truncated, bounded" {
	require_root
	require_cmd gcc
	require_cmd setpriv
	NOBODY_DIR=$(mktemp -d /tmp/sp-forged.XXXXXX)
	gcc -O0 -o "$NOBODY_DIR/python3-forged" "$BATS_TEST_DIRNAME/fixtures/sp-record-interp/forged.c"
	chmod -R a+rX "$NOBODY_DIR"
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$NOBODY_DIR/python3-forged" 1 /etc/hostname
	[ "$status" = 0 ] || fail "status $status: $stderr"
	# the opens the forged program makes carry its forged stack: the cycle
	# cut at the walk's limit (its frames), then the mark at the root
	run sh -c "sp-decode '$OUT' | jq -c 'select(.type == \"event\" and .path == \"/etc/hostname\") | .stack' | sort -u"
	[ -n "$output" ] && [ "$output" != null ] || fail "no stack on the forged program's opens: $output"
	# the first such stack: the limit's frames and the mark, its root
	run sh -c "sp-decode '$OUT' | jq -rs '
		(map(select(.type == \"stack\")) | map({key: (.id | tostring), value: .}) | from_entries) as \$s
		| (map(select(.type == \"symbol\")) | map({key: (.frame | tostring), value: .func}) | from_entries) as \$f
		| [.[] | select(.type == \"event\" and .path == \"/etc/hostname\" and .stack)][0].stack
		| [recurse(\$s[tostring].parent; . != 0 and . != null)] | map(\$f[\$s[tostring].frame | tostring])
		| \"\\(length) \\(.[-1])\"'"
	[ "$status" = 0 ] || fail "jq: $output"
	[ "$output" = "$(($(walk_limit) + 1)) [python: truncated]" ] || fail "$output"
	run sh -c "sp-correlate '$OUT' | sp-tree --stable | grep -B1 '/etc/hostname' | grep -m1 FRAME"
	[ "$status" = 0 ] || fail "no frame for the forged opens"
	[[ "$output" == *"AAAA"* || "$output" == *"[python: "* ]] || fail "$output"
	[ "${#output}" -le 800 ] || fail "a frame name of ${#output} bytes"
}

# "event<TAB>image<TAB>owner<TAB>stack" for each fork of process $1 that
# made a process (image: the first program its child exec'd) and each exec
# of another process: the method of the span sp-correlate gave it and the
# interpreted frames of the event's own stack, root first (empty: none).
# With -p, only those from $SKIP_MS ms after the first fork with a stack.
children() {
	sp-correlate --format=json "$OUT" 2>/dev/null | jq -r -s --argjson pid "$1" \
		--arg skip "${SKIP_MS:-0}" '
		(map(select(.type == "span")) | map({key: (.id | tostring),
			value: (.method // "-")}) | from_entries) as $m
		| (map(select(.type == "stack")) | map({key: (.id | tostring), value: .})
		   | from_entries) as $s
		| (map(select(.type == "symbol")) | map({key: (.frame | tostring), value: .func})
		   | from_entries) as $f
		| (map(select(.type == "event" and .event == "proc_exec")) | group_by(.pid)
		   | map({key: (.[0].pid | tostring), value: (sort_by(.time)[0].filename)})
		   | from_entries) as $x
		| [.[] | select(.type == "event")
		   | select((.event == "proc_fork" and .pid == $pid and .flags == 0) or
			    (.event == "proc_exec" and .pid != $pid))] | sort_by(.time)
		| ((map(select(.event == "proc_fork" and .stack != null)) | first | .time // 0)
		   + ($skip | tonumber) * 1000000) as $from
		| .[] | select(.time >= $from)
		| [.event, (if .event == "proc_fork" then $x[.child_pid | tostring] // "?"
			    else .filename end),
		   $m[(.span // 0) | tostring] // "-",
		   ([.stack | recurse($s[tostring].parent; . != 0 and . != null)]
		    | map($f[$s[tostring].frame | tostring] // "?") | reverse | join(";"))]
		| @tsv'
}

# Each line of children's $2 (event, image, owner, and a frame its stack
# must hold, "-" for any) is there at least $1 times, and no fork or exec
# of the program's children is under another method.
assert_children() {
	local n=$1 pid=$2 o want ev img own frame bad
	shift 2
	run children "$pid"
	[ "$status" = 0 ] || fail "sp-correlate | jq: $output"
	o=$output
	for want in "$@"; do
		IFS='|' read -r ev img own frame <<<"$want"
		n_=$(awk -F'\t' -v e="$ev" -v i="$img" -v m="$own" -v f="$frame" '
			$1 == e && $2 == i && $3 == m && (f == "-" || index(";" $4 ";", ";" f ";")) { k++ }
			END { print k + 0 }' <<<"$o")
		[ "$n_" -ge "$n" ] || fail "$n_ x '$want' (want >= $n): $(cut -f1-3 <<<"$o" | sort | uniq -c)"
	done
	# every child is one of those, under its method (a fork whose child's
	# exec the recording's end cut off, "?", under one of the methods)
	bad=$(awk -F'\t' -v w="$(printf '%s\n' "$@")" '
		BEGIN { n = split(w, l, "\n")
			for (i = 1; i <= n; i++) {
				split(l[i], x, "|"); ok[x[1] SUBSEP x[2] SUBSEP x[3]] = 1; by[x[1] SUBSEP x[3]] = 1 } }
		!(($1 SUBSEP $2 SUBSEP $3) in ok) && !($2 == "?" && ($1 SUBSEP $3) in by)' <<<"$o")
	[ -z "$bad" ] || fail "children under another method: $bad"
}

# sp-tree: each exec of image $1 is in a child process node right under
# the frame of method $2 (the fork's line between them).
assert_child_tree() {
	run --separate-stderr sh -c "sp-correlate '$OUT' | sp-tree --stable"
	[ "$status" = 0 ] || fail "sp-tree: $stderr"
	local owned
	owned=$(tree_owners <<<"$output")
	awk -F'\t' -v img="$1" -v m="$2" -v gap="${ALLOW_GAP:-0}" '
		index($2, "proc_exec → " img) {
			if (gap && index($1, "[SPAN <no-span>]")) next
			n++; if (index($1, "[FRAME " m " ") == 0) { print img " under " $1; bad++ } }
		END { if (n < 1) { print "no exec of " img; bad++ } exit bad > 0 }' <<<"$owned" ||
		fail "$(awk -F'\t' -v img="$1" 'index($2, "proc_exec → " img) { print $1 " / " $2 }' <<<"$owned" | head -5)"
}

# The program's own functions, from its source: subprocess.run forks in
# Popen._execute_child (/usr/lib/python3.11/subprocess.py, its call of
# _fork_exec), under run_child; os.system is a C function, so its fork
# and sh's are run_shell's; sh's own child (echo) comes from it too.
# An exec's owner is checked, not its own stack: the child's exec takes
# its fork's stack when it has none, and under load that stack can reach
# sp-record (another ring) after the exec; its owner then comes from the
# child's origin, the fork's frame.
PY_KIDS=("proc_fork|/bin/true|Popen._execute_child|run_child"
	 "proc_exec|/bin/true|Popen._execute_child|-"
	 "proc_fork|/bin/sh|run_shell|run_shell"
	 "proc_exec|/bin/sh|run_shell|-")

@test "a Python command without spans: its children under the functions that started them" {
	need $PY
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- $PY "$PYKIDS" "$D" 4
	[ "$status" = 0 ] || fail "status $status: $stderr"
	pid=$(sp-decode "$OUT" | jq -s 'map(select(.type == "event" and .event == "proc_exec" and
		(.argv | test("ev_children")))) | first | .pid')
	assert_children 4 "$pid" "${PY_KIDS[@]}" "proc_exec|/bin/echo|run_shell|-"
	assert_child_tree /bin/true Popen._execute_child
	assert_child_tree /bin/sh run_shell
}

@test "sp-record -p of a running Python without spans: its children under their functions" {
	need $PY
	$PY "$PYKIDS" "$D" 0 "$D/ready" &
	BG=$!
	for _ in $(seq 100); do [ -e "$D/ready" ] && break; sleep 0.1; done
	[ -e "$D/ready" ] || fail "the program did not start"
	run --separate-stderr timeout 60 sp-record --spans=none -p "$BG" -d 2 -o "$OUT"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	SKIP_MS=200 assert_children 3 "$BG" "${PY_KIDS[@]}" "proc_exec|/bin/echo|run_shell|-"
	ALLOW_GAP=1 assert_child_tree /bin/true Popen._execute_child
}

# Kernel#system and Kernel#` are C methods: passed over, as for any event
RB_KIDS=("proc_fork|/bin/true|Object#run_child|Object#run_child"
	 "proc_exec|/bin/true|Object#run_child|-"
	 "proc_fork|/bin/echo|Runner#capture|Runner#capture"
	 "proc_exec|/bin/echo|Runner#capture|-")

@test "a Ruby command without spans: its children under the methods that started them" {
	need $RB
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- $RB "$RBKIDS" "$D" 4
	[ "$status" = 0 ] || fail "status $status: $stderr"
	pid=$(sp-decode "$OUT" | jq -s 'map(select(.type == "event" and .event == "proc_exec" and
		(.argv | test("ev_children")))) | first | .pid')
	assert_children 4 "$pid" "${RB_KIDS[@]}"
	assert_child_tree /bin/true Object#run_child
	assert_child_tree /bin/echo Runner#capture
}

@test "sp-record -p of a running Ruby without spans: its children under their methods" {
	need $RB
	$RB "$RBKIDS" "$D" 0 "$D/ready" &
	BG=$!
	for _ in $(seq 100); do [ -e "$D/ready" ] && break; sleep 0.1; done
	[ -e "$D/ready" ] || fail "the program did not start"
	run --separate-stderr timeout 60 sp-record --spans=none -p "$BG" -d 2 -o "$OUT"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	SKIP_MS=200 assert_children 3 "$BG" "${RB_KIDS[@]}"
	ALLOW_GAP=1 assert_child_tree /bin/true Object#run_child
}

# --no-samples opens no sampling event, but the interpreters are still
# followed from their mappings: each event's stack is walked at its system
# call. The program's own loop count is the number of each event, and every
# one of them is under its method.
assert_exact() {
	run owners
	[ "$status" = 0 ] || fail "sp-correlate | jq: $output"
	local o=$output want n
	for want in "$2	ev-config.txt" "$3	ev-report.txt" "$4	connect"; do
		n=$(grep -cxF "$want" <<<"$o" || true)
		[ "$n" = "$1" ] || fail "$n x '$want' (want $1): $(sort <<<"$o" | uniq -c)"
	done
	[ "$(wc -l <<<"$o")" = $(($1 * 3)) ] || fail "other events: $(sort <<<"$o" | uniq -c)"
}

@test "--no-samples: a Python's and a Ruby's events still under the methods that made them" {
	need $PY
	[ -x $RB ] || skip "needs Debian's $RB"
	start_server
	run --separate-stderr timeout 120 sp-record --no-samples --spans=none -o "$OUT" -- $PY "$PYFIX" "$PORT" "$D" 7
	[ "$status" = 0 ] || fail "python: status $status: $stderr"
	assert_exact 7 Store.load_config write_report Client.ping
	assert_tree Store.load_config write_report Client.ping
	run --separate-stderr timeout 120 sp-record --no-samples --spans=none -o "$OUT" -- $RB "$RBFIX" "$PORT" "$D" 7
	[ "$status" = 0 ] || fail "ruby: status $status: $stderr"
	assert_exact 7 Store#load_config Object#write_report Client#ping
	assert_tree Store#load_config Object#write_report Client#ping
	# and --interp=none still turns it off
	run --separate-stderr timeout 120 sp-record --no-samples --spans=none --interp=none -o "$OUT" -- $PY "$PYFIX" "$PORT" "$D" 2
	[ "$status" = 0 ] || fail "--interp=none: status $status: $stderr"
	run owners
	[ "$status" = 0 ] && [ "$(wc -l <<<"$output")" = 6 ] || fail "--interp=none: $output"
	! grep -E 'load_config|write_report|ping' <<<"$output" || fail "--interp=none: under a method"
}

PYFORK=$BATS_TEST_DIRNAME/fixtures/python/ev_forked.py
RBFORK=$BATS_TEST_DIRNAME/fixtures/ruby/ev_forked.rb

# "owner<TAB>what" for each of the ev-*.txt opens and each exit of process
# $1 and of the children it forked (a fork recorded): the method of the
# span sp-correlate gave it ("-" when none), the file's name or "exit
# CODE". With -p, only those from $SKIP_MS ms after the first with a stack.
forked() {
	sp-correlate --format=json "$OUT" 2>/dev/null | jq -r -s --argjson pid "$1" \
		--arg skip "${SKIP_MS:-0}" '
		(map(select(.type == "span")) | map({key: (.id | tostring),
			value: (.method // "-")}) | from_entries) as $m
		| [.[] | select(.type == "event" and .event == "proc_fork" and .pid == $pid and
				.flags == 0) | .child_pid] as $kids
		| [.[] | select(.type == "event") | select(.pid as $p | $p == $pid or any($kids[]; . == $p))
		   | select(((.path // "") | test("/ev-(fork|mp|parent|done)\\.txt$")) or
			    (.event == "proc_exit" and .thread == 0))] | sort_by(.time)
		| ((map(select(.stack != null)) | first | .time // 0) + ($skip | tonumber) * 1000000) as $from
		| .[] | select(.time >= $from)
		| [$m[(.span // 0) | tostring] // "-",
		   (if .event == "proc_exit" then "exit \(.code)" else (.path | sub(".*/"; "")) end)]
		| @tsv'
}

# Each of "owner<TAB>what" $3... is among forked's lines of process $2 at
# least $1 times (one written "once:owner<TAB>what" exactly once), and no
# line is another one.
assert_forked() {
	local n=$1 pid=$2 o want k bad lines=()
	shift 2
	run forked "$pid"
	[ "$status" = 0 ] || fail "sp-correlate | jq: $output"
	o=$output
	for want in "$@"; do
		lines+=("-e${want#once:}")
		k=$(grep -cxF "${want#once:}" <<<"$o" || true)
		if [ "$want" != "${want#once:}" ]; then
			[ "$k" = 1 ] || fail "$k x '${want#once:}' (want 1): $(sort <<<"$o" | uniq -c)"
		else
			[ "$k" -ge "$n" ] || fail "$k x '$want' (want >= $n): $(sort <<<"$o" | uniq -c)"
		fi
	done
	bad=$(grep -vxF "${lines[@]}" <<<"$o" || true)
	[ -z "$bad" ] || fail "events under another method: $(sort <<<"$bad" | uniq -c)"
}

# The program's own functions; multiprocessing's child ends in
# Popen._launch (/usr/lib/python3.11/multiprocessing/popen_fork.py, its
# os._exit after the target returned).
PY_FORKED=("child_work	ev-fork.txt" "child_work	ev-mp.txt" "parent_work	ev-parent.txt"
	   "child_quit	exit 7" "Popen._launch	exit 0")
# Kernel#exit! and File.read are C methods: passed over
RB_FORKED=("Worker#run	ev-fork.txt" "Object#parent_work	ev-parent.txt" "Worker#quit	exit 7")

@test "a Python command without spans: its forked children's events and exits under their functions" {
	need $PY
	for f in fork mp parent; do echo $f > "$D/ev-$f.txt"; done
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- $PY "$PYFORK" "$D" 6 0.2
	[ "$status" = 3 ] || fail "status $status: $stderr"
	pid=$(sp-decode "$OUT" | jq -s 'map(select(.type == "event" and .event == "proc_exec" and
		(.argv | test("ev_forked")))) | first | .pid')
	assert_forked 3 "$pid" "${PY_FORKED[@]}" "once:finish	ev-done.txt" "once:finish	exit 3"
}

@test "sp-record -p of a running Python without spans: the children it forks after, under their functions" {
	need $PY
	for f in fork mp parent; do echo $f > "$D/ev-$f.txt"; done
	$PY "$PYFORK" "$D" 0 0.3 "$D/ready" &
	BG=$!
	for _ in $(seq 100); do [ -e "$D/ready" ] && break; sleep 0.1; done
	[ -e "$D/ready" ] || fail "the program did not start"
	run --separate-stderr timeout 60 sp-record --spans=none -p "$BG" -d 2 -o "$OUT"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	SKIP_MS=200 assert_forked 2 "$BG" "${PY_FORKED[@]}"
}

@test "a Ruby command without spans: its forked children's events and exits under their methods" {
	need $RB
	for f in fork parent; do echo $f > "$D/ev-$f.txt"; done
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- $RB "$RBFORK" "$D" 6 0.2
	[ "$status" = 3 ] || fail "status $status: $stderr"
	pid=$(sp-decode "$OUT" | jq -s 'map(select(.type == "event" and .event == "proc_exec" and
		(.argv | test("ev_forked")))) | first | .pid')
	assert_forked 3 "$pid" "${RB_FORKED[@]}" "once:Object#finish	ev-done.txt" \
		"once:Object#finish	exit 3"
}

@test "sp-record -p of a running Ruby without spans: the children it forks after, under their methods" {
	need $RB
	for f in fork parent; do echo $f > "$D/ev-$f.txt"; done
	$RB "$RBFORK" "$D" 0 0.3 "$D/ready" &
	BG=$!
	for _ in $(seq 100); do [ -e "$D/ready" ] && break; sleep 0.1; done
	[ -e "$D/ready" ] || fail "the program did not start"
	run --separate-stderr timeout 60 sp-record --spans=none -p "$BG" -d 2 -o "$OUT"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	SKIP_MS=200 assert_forked 2 "$BG" "${RB_FORKED[@]}"
}

@test "segments: a Python's event stacks stay right across the id space's compactions (-o DIR)" {
	need "$PY"
	# each open names a new path: the id space grows until it is compacted
	cat > "$D/opens.py" <<'PY'
def opener(i):
    try:
        open("/nonexistent/x-%d" % i)
    except OSError:
        pass
for i in range(30000):
    opener(i)
PY
	mkdir -m 700 "$D/segs"
	run --separate-stderr sp-record -v --no-samples --spans=none --segment=256K -o "$D/segs/" -- "$PY" "$D/opens.py"
	[ "$status" = 0 ] || fail "exit $status: $stderr"
	[[ "$stderr" =~ [1-9][0-9]*\ compactions ]] || fail "no compaction: $stderr"
	for s in "$D"/segs/segment-*.sp; do
		sp-decode "$s" >/dev/null || fail "$s does not decode alone"
	done
	# every open of /nonexistent is under opener at its line 3, in every segment
	sp-symbolize "$D/segs" 2>/dev/null | sp-correlate 2>/dev/null | sp-tree 2>/dev/null > "$D/tree"
	grep -Eq 'FRAME .*opener at=[^ ]*opens.py:3 ' "$D/tree" || fail "$(grep -m5 nonexistent "$D/tree")"
	! grep -E 'FRAME ' "$D/tree" | grep opens.py | grep -vq 'opener at=[^ ]*opens.py:3 ' ||
		fail "$(grep -E 'FRAME ' "$D/tree" | grep opens.py | grep -v 'opener at=[^ ]*opens.py:3 ' | head)"
	# every one with its stack, or counted without (a burst of calls read
	# late on a loaded machine fills the thread's queue: said, counted)
	n=$(sp-decode "$D/segs" | jq -s '[.[] | select(.type == "event" and (.path // "" | startswith("/nonexistent/x-")))] as $o |
		[.[] | select(.type == "lost" and .what == "interp_events") | .count] as $l |
		[($o | length), ($o | map(select(.stack)) | length), ($l | add // 0)] | @tsv' -r)
	read -r all with lost <<<"$n"
	[ "$all" = 30000 ] || fail "$all opens"
	[ "$((with + lost))" = 30000 ] || fail "opens with a stack $with, counted without $lost: $stderr"
}

@test "events without the interpreted stack they had (a lost record, interp_events): in sp-decode --stats, --stats-json and sp-tree's header" {
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1}' \
		'{"type":"lost","time":900,"start":500,"what":"interp_events","count":37,"pid":700}' \
		'{"type":"end","time":1000}' | sp-decode --encode -o "$D/l.sp"
	run -0 --separate-stderr sp-decode "$D/l.sp"
	[ "$(jq -c 'select(.type == "lost") | [.what, .count, .pid, .start]' <<<"$output")" = '["interp_events",37,700,500]' ]
	run -0 --separate-stderr sp-decode --stats "$D/l.sp"
	[[ "$output" == *"interp events   37 kernel events without the interpreted stack they had (dropped unread: their thread's queue was full before they were read)"* ]] ||
		fail "$output"
	[[ "$output" == *"lost            0 samples, 0 events, 0 spans"* ]] || fail "$output"
	[ "$(sp-decode --stats-json "$D/l.sp" | jq .interp_events_lost)" = 37 ]
	run -0 --separate-stderr sp-tree "$D/l.sp"
	[[ "${lines[0]}" == *"  events without their interpreted stack 37"* ]] || fail "${lines[0]}"
	[ "$(sp-tree --format=json "$D/l.sp" | jq .interp_events_lost)" = 37 ]
}

@test "sp-record -p of a busy Python: its opens carry their stacks from the first recorded" {
	need "$PY"
	cat > "$D/busy.py" <<'PY'
import time
def handle(i):
    with open("/dev/null", "a") as f:
        f.write("x")
while True:
    for i in range(200):
        handle(i)
    time.sleep(0.01)
PY
	"$PY" "$D/busy.py" &
	BG=$!
	sleep 1
	run --separate-stderr sp-record -p "$BG" -d 1 -o "$OUT"
	[ "$status" = 0 ] || fail "exit $status: $stderr"
	n=$(sp-decode "$OUT" | jq -s --argjson p "$BG" '[.[] | select(.type == "event" and .event == "path_open" and .pid == $p)] |
		[length, (map(select(.stack)) | length), (.[:200] | map(select(.stack | not)) | length)] | @tsv' -r)
	read -r all with first <<<"$n"
	[ "$all" -ge 1000 ] || fail "only $all opens"
	# the attach's gap was the first 140-650: none of the first 200 now
	[ "$first" = 0 ] || fail "$first of the first 200 opens without a stack: $stderr"
	# any other one is said (a full ring on a loaded machine)
	[ "$with" = "$all" ] || [[ "$stderr" == *"interpreted stacks lost"* ]] ||
		[[ "$stderr" == *"without the interpreted stack they had"* ]] ||
		fail "$((all - with)) of $all opens without a stack, said nowhere: $stderr"
}
