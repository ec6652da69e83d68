#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record --spans: method spans of Ruby, Python and C programs with known
# call trees (tests/fixtures/{ruby,python,src}), compared with the trees
# read off the fixtures' source by hand, names and lines included.
load helper

RUBY_FIX=$BATS_TEST_DIRNAME/fixtures/ruby/calls.rb
PY_FIX=$BATS_TEST_DIRNAME/fixtures/python/calls.py
PY=/usr/bin/python3.11

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
}

# The spans of one source file as "proc/thread kind class#method line depth",
# processes and threads named by order of appearance (p1 = the command).
tree() {
	sp-decode "$OUT" | jq -r --arg f "$1" '
		select((.type | startswith("span_")) and (.file // "" | endswith($f)))
		| [.pid, .tid, .type, (.klass // ""), (.method // ""), (.line // 0), (.depth // 0)]
		| @tsv' | awk -F'\t' '
		!($1 in P) { P[$1] = "p" (++np) }
		!($2 in T) { T[$2] = ($1 == $2) ? "main" : "t" (++nt) }
		{ printf "%s/%s %s %s#%s %s %s\n", P[$1], T[$2], $3, $4, $5, $6, $7 }'
}

# "method end" of each correlated span of source file $1 in $OUT.
span_ends() {
	sp-correlate "$OUT" | sp-decode | jq -r --arg f "$1" '
		select(.type == "span" and (.file // "" | endswith($f)))
		| "\(.method) \(.end // "stopped")"'
}

# The spans of tests/fixtures/lib/spans_lib.c in $OUT, counted.
lib_spans() {
	tree spans_lib.c | sort | uniq -c | awk '{print $1, $2, $3, $4, $5, $6}'
}

# The most hits of probe $1 in one process of $OUT (nothing: not attached).
probe_hits() {
	sp-decode "$OUT" | jq -rs --arg n "$1" \
		'[.[] | select(.type == "probe" and .name == $n) | .hits] | max // empty'
}

require_ruby() {
	require_root
	require_cmd ruby
	readelf -n /usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 2>/dev/null | grep -q method__entry ||
		skip "needs Debian's libruby 3.1 with USDT probes"
}

require_python() {
	require_root
	[ -x $PY ] || skip "needs Debian's $PY"
	readelf -n $PY | grep -q function__entry || skip "$PY has no USDT probes"
}

# The call tree of tests/fixtures/ruby/calls.rb in the recording $OUT.
assert_ruby_tree() {
	run -0 tree calls.rb
	# Entry lines are each method's first body line, stop lines the line
	# running when it returned (the raise and call lines when unwound).
	assert_output "p1/main span_start Tree#run 6 1
p1/main span_start Tree#nest 14 2
p1/main span_start Tree#inner 18 3
p1/main span_stop Tree#inner 19 3
p1/main span_stop Tree#nest 15 2
p1/main span_start Tree#fact 22 2
p1/main span_start Tree#fact 22 3
p1/main span_start Tree#fact 22 4
p1/main span_stop Tree#fact 22 4
p1/main span_stop Tree#fact 24 3
p1/main span_stop Tree#fact 24 2
p1/main span_start Tree#catcher 27 2
p1/main span_start Tree#middle 33 3
p1/main span_start Tree#thrower 37 4
p1/main span_raise ArgumentError# 37 0
p1/main span_stop Tree#thrower 37 4
p1/main span_stop Tree#middle 33 3
p1/main span_stop Tree#catcher 30 2
p1/main span_start Tree#thread 41 2
p1/t1 span_start Tree#inner 18 1
p1/t1 span_stop Tree#inner 19 1
p1/main span_stop Tree#thread 42 2
p1/main span_start Tree#child 45 2
p2/main span_start Tree#inner 18 1
p2/main span_stop Tree#inner 19 1
p1/main span_stop Tree#child 47 2
p1/main span_stop Tree#run 11 1"
}

@test "sp-record --spans=ruby: the Ruby call tree, nesting, recursion, raise, thread, fork" {
	require_ruby
	run -0 --separate-stderr sp-record -v --spans=ruby -o "$OUT" -- ruby "$RUBY_FIX"
	assert_ruby_tree
	# the methods open when the hook came in (the activator's, and
	# RubyGems' require of it and of the hook) are StackPulse's: neither
	# they nor their stops nor their calls are in the spool, and no stop
	# is dropped for want of a start unless marks were lost
	local said=$stderr
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" or .type == \"span_stop\") | .file' | sort -u"
	refute_line --partial stackpulse_activate
	refute_line --partial kernel_require
	[[ "$said" == *"spans: 3 Ruby frames open when the hook loaded"* ]] || fail "$said"
	if [[ "$said" != *"span marks lost"* ]]; then
		[[ "$said" == *"; 0 stops without a start dropped"* ]] || fail "$said"
	fi
	# by the hook's span rings (the default), not Ruby's own probes
	[[ "$stderr" != *"ruby:method__entry"* ]] || fail "Ruby's probes attached: $stderr"
	run -0 probe_hits "stackpulse:rb__call"
	(( output >= 10 ))
	run -0 probe_hits "stackpulse:rt__ring"
	(( output >= 1 ))
	# the thread's and the fork child's last marks come from their ends
	run -0 probe_hits "stackpulse:rt__flush"
	(( output >= 1 ))
	# the raise is Ruby's own probe, placed among the ring's marks by time
	run -0 span_ends calls.rb
	assert_line "thrower raised"
	assert_line "catcher stopped"
	# the same tree by the hook's markers, one per mark
	STACKPULSE_SPAN_RING=0 run -0 sp-record --spans=ruby -o "$OUT" -- ruby "$RUBY_FIX"
	assert_ruby_tree
	run -0 probe_hits "stackpulse:rt__ring"
	assert_output 0
	# the same tree from Ruby's own probes, with the activator's other hook
	STACKPULSE_RUBY_HOOK=c run -0 sp-record --spans=ruby -o "$OUT" -- ruby "$RUBY_FIX"
	assert_ruby_tree
	run -0 probe_hits "ruby:method__entry"
	(( output >= 10 ))
	# the runtime is named, with the version the interpreter reports
	run -0 sp-decode "$OUT"
	want=$(ruby -e 'print RUBY_VERSION')
	run -0 jq -r 'select(.type == "runtime") | "\(.runtime) \(.version) \(.mode)"' <<<"$output"
	assert_line "ruby $want method"
}

# The call tree of tests/fixtures/python/calls.py in the recording $OUT;
# "hook": as the hook names and marks it: each name with its module as the
# class ("__main__#run"; the interpreter's probes give "#run"), and the frames an
# exception unwound marked (at the raise line and the call it passed
# through, no class: CPython hides it from a profile function).
assert_python_tree() {
	local r1= r2= m= t=2
	if [ "${1:-}" = hook ]; then
		r1=$'\np1/main span_raise # 43 0'
		r2=$'\np1/main span_raise # 39 0'
		m=__main__
		# the hook marks the thread's frames open when its profile
		# function came: threading's _bootstrap, _bootstrap_inner
		t=4
	fi
	run -0 tree calls.py
	# Entry lines are the def lines, stop lines the line that returned.
	assert_output "p1/main span_start ${m}#<module> 0 1
p1/main span_start ${m}#run 9 2
p1/main span_start ${m}#nest 17 3
p1/main span_start ${m}#inner 21 4
p1/main span_stop ${m}#inner 22 4
p1/main span_stop ${m}#nest 18 3
p1/main span_start ${m}#fact 25 3
p1/main span_start ${m}#fact 25 4
p1/main span_start ${m}#fact 25 5
p1/main span_stop ${m}#fact 27 5
p1/main span_stop ${m}#fact 28 4
p1/main span_stop ${m}#fact 28 3
p1/main span_start ${m}#catcher 31 3
p1/main span_start ${m}#middle 38 4
p1/main span_start ${m}#thrower 42 5$r1
p1/main span_stop ${m}#thrower 43 5$r2
p1/main span_stop ${m}#middle 39 4
p1/main span_stop ${m}#catcher 35 3
p1/main span_start ${m}#thread 46 3
p1/t1 span_start ${m}#inner 21 $t
p1/t1 span_stop ${m}#inner 22 $t
p1/main span_stop ${m}#thread 49 3
p1/main span_start ${m}#child 52 3
p2/main span_start ${m}#<module> 0 1
p2/main span_start ${m}#inner 21 2
p2/main span_stop ${m}#inner 22 2
p2/main span_stop ${m}#<module> 58 1
p1/main span_stop ${m}#child 53 3
p1/main span_stop ${m}#run 14 2
p1/main span_stop ${m}#<module> 60 1"
}

@test "sp-record --spans=python: the Python call tree, nesting, recursion, raise, thread, child" {
	require_python
	# the same tree from CPython's own probes, with the builtin profile function
	STACKPULSE_PY_HOOK=slice run -0 sp-record --spans=python -o "$OUT" -- $PY "$PY_FIX"
	assert_python_tree
	run -0 probe_hits "python:function__entry"
	(( output >= 20 ))
	# by the hook's markers, one per mark
	STACKPULSE_SPAN_RING=0 run -0 sp-record --spans=python -o "$OUT" -- $PY "$PY_FIX"
	assert_python_tree hook
	run -0 probe_hits "stackpulse:rt__ring"
	assert_output 0
	# by the hook's span rings (the default)
	run -0 sp-record --spans=python -o "$OUT" -- $PY "$PY_FIX"
	assert_python_tree hook
	run -0 probe_hits "stackpulse:py__call"
	(( output >= 20 ))
	run -0 probe_hits "stackpulse:rt__ring"
	(( output >= 1 ))
	run -0 probe_hits "python:function__entry"
	assert_output ""
	# every stop had its start: a thread's frames open when the hook came
	# to it (threading's, which set the profile function) are marked
	# reconstructed, and their stops find them
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .klass == \"threading\"
		and (.method | startswith(\"Thread._bootstrap\"))) | \"\(.method) \(.flags) \(.depth)\"'"
	assert_output "Thread._bootstrap 0x2 1
Thread._bootstrap_inner 0x2 2"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\") | .what' | sort -u"
	if ! grep -qx spans <<<"$output"; then
		! grep -qx span_stops <<<"$output" || fail "lost: $output"
	fi
	# the frames the exception left end raised, the one that caught it not
	run -0 span_ends calls.py
	assert_line "thrower raised"
	assert_line "middle raised"
	assert_line "catcher stopped"
	# audit events: the script's own open, and the child's exec
	run -0 sp-decode "$OUT"
	run -0 jq -r 'select(.type == "event" and .event == "audit") | "\(.name) \(.args)"' <<<"$output"
	assert_line "open $PY_FIX"
	assert_line "subprocess.Popen $PY"
	assert_line "stackpulse.activated profile=hook"
}

# CPU spinners above sp-record's priority, killed in teardown.
SPIN=()
start_spinners() {
	local k
	for k in 1 2 3; do
		nice -n -15 sh -c 'while :; do :; done' &
		SPIN+=($!)
	done
}

teardown() {
	kill_started "${SPIN[@]}"
	SPIN=()
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
	[ -z "${SWAP_DIR:-}" ] || rm -rf "$SWAP_DIR"
}

@test "sp-record --spans=python: a loaded machine loses no marks of the command, <module> and run keep their starts" {
	require_python
	# sp-record below the spinners and the command: a thread's ring fills
	# before sp-record comes to read it (before, its thread waited 200 ms,
	# then overwrote its first marks: <module> and run lost their starts)
	start_spinners
	local i
	for i in 1 2; do
		run -0 --separate-stderr nice -n -5 sp-record --spans=python -o "$OUT" -- \
			nice -n -10 $PY "$PY_FIX"
		[[ "$stderr" != *"span marks lost"* ]] || fail "run $i: $stderr"
		run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"lost\" and .what == \"spans\")'"
		assert_output ""
		assert_python_tree hook
	done
}

# A CPython 3.11 built without USDT probes (pyenv's, for one), whose spans
# come only from the hook; nothing when there is none.
hook_only_python() {
	local cand lib
	for cand in /root/.pyenv/versions/3.11*/bin/python3.11 /usr/local/bin/python3.11 /opt/*/bin/python3.11; do
		[ -x "$cand" ] || continue
		lib=$(ldd "$cand" | awk '/libpython/ {print $3}')
		if ! readelf -n "$cand" ${lib:+"$lib"} 2>/dev/null | grep -q function__entry; then
			echo "$cand"
			return
		fi
	done
}

@test "sp-record --spans=python: a CPython 3.11 built without probes (pyenv's) has its spans from the hook" {
	require_root
	local py
	py=$(hook_only_python)
	[ -n "$py" ] || skip "no CPython 3.11 without USDT probes here (pyenv's, for one)"
	run -0 --separate-stderr sp-record --spans=python --interp=none -o "$OUT" -- "$py" "$PY_FIX"
	assert_python_tree hook
	run -0 probe_hits "stackpulse:py__call"
	(( output >= 10 ))
	# audit events from the hook's audit hook: the script's open, the child
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"runtime\") | .mode' | sort -u"
	assert_output "profile,audit"
	run -0 probe_hits "stackpulse:py__audit"
	(( output >= 10 ))
	run -0 sp-decode "$OUT"
	run -0 jq -r 'select(.type == "event" and .event == "audit") | "\(.name) \(.args)"' <<<"$output"
	assert_line "open $PY_FIX"
	assert_line "subprocess.Popen $py"
	assert_line "stackpulse.activated profile=hook"
}

@test "sp-record --spans=python: a fork child of a hook-only Python has its audit events from the hook, as its parent" {
	require_root
	local py child n
	py=$(hook_only_python)
	[ -n "$py" ] || skip "no CPython 3.11 without USDT probes here (pyenv's, for one)"
	run -0 --separate-stderr sp-record --spans=python --no-samples --interp=none -o "$OUT" -- "$py" -c '
import os, time
pid = os.fork()
if pid == 0:
    time.sleep(0.3)
    for i in range(20): open("/etc/hostname").close()
    os._exit(0)
os.waitpid(pid, 0)'
	sp-decode "$OUT" > "$BATS_TEST_TMPDIR/run.json"
	child=$(jq -r 'select(.type == "process" and .ppid != null) | "\(.pid) \(.ppid)"' "$BATS_TEST_TMPDIR/run.json" |
		awk 'NR == 1 { cmd = $1 } $2 == cmd { print $1; exit }')
	[ -n "$child" ] || fail "no fork child: $(jq -c 'select(.type == "process")' "$BATS_TEST_TMPDIR/run.json")"
	n=$(jq -c --argjson p "$child" 'select(.type == "event" and .pid == $p and .event == "audit" and .name == "open" and .args == "/etc/hostname")' "$BATS_TEST_TMPDIR/run.json" | wc -l)
	[ "$n" = 20 ] || fail "$n audit events of the child's 20 opens"
}

@test "sp-record --spans=python: a fork child not held gets its late audit probe in the python it runs, though its owner put a copy at its path since" {
	require_python
	require_cmd setpriv util-linux
	local dir child n
	nobody_tools
	dir=$NOBODY_DIR/py
	mkdir "$dir"
	cp $PY "$dir/python3.11"
	chown -R 65534:65534 "$dir"
	# the child is not held (the hook's shared link covers it): its audit
	# probe, the executable's USDT one, comes once it has lived 100 ms
	"$NOBODY_BIN/sp-record" --spans=python --no-samples --interp=none -o "$OUT" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$dir/python3.11" -c '
import os, sys, time
open(sys.argv[1], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
pid = os.fork()
if pid == 0:
    time.sleep(0.5)
    for i in range(20): open("/etc/hostname").close()
    os._exit(0)
os.waitpid(pid, 0)' "$dir/ready" "$dir/go" 2> "$BATS_TEST_TMPDIR/err" &
	local rec=$!
	SPIN+=($rec)
	wait_path "$dir/ready" 30 || fail "the program never started: $(cat "$BATS_TEST_TMPDIR/err")"
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'cp "$1/python3.11" "$1/new" && mv "$1/new" "$1/python3.11"' sh "$dir"
	touch "$dir/go"
	wait $rec || fail "sp-record failed: $(cat "$BATS_TEST_TMPDIR/err")"
	sp-decode "$OUT" > "$BATS_TEST_TMPDIR/run.json"
	child=$(jq -r 'select(.type == "process" and .ppid != null) | "\(.pid) \(.ppid)"' "$BATS_TEST_TMPDIR/run.json" |
		awk '{ pid[NR] = $1; ppid[NR] = $2 } END { for (i = 1; i <= NR; i++) for (j = 1; j <= NR; j++) if (ppid[i] == pid[j]) { print pid[i]; exit } }')
	[ -n "$child" ] || fail "no fork child: $(jq -c 'select(.type == "process")' "$BATS_TEST_TMPDIR/run.json")"
	n=$(jq -c --argjson p "$child" 'select(.type == "event" and .pid == $p and .event == "audit" and .name == "open" and .args == "/etc/hostname")' "$BATS_TEST_TMPDIR/run.json" | wc -l)
	[ "$n" = 20 ] || fail "$n audit events of the child's 20 opens: $(cat "$BATS_TEST_TMPDIR/err")"
}

@test "sp-record --spans: a hook-only Python run with -S or -I (no activator) is said to have no function spans" {
	require_root
	local py flag
	py=$(hook_only_python)
	[ -n "$py" ] || skip "no CPython 3.11 without USDT probes here (pyenv's, for one)"
	for flag in -S -I; do
		run -0 --separate-stderr sp-record --spans=auto -o "$OUT" -- "$py" "$flag" -c 'def f(): pass
for i in range(100): f()'
		[[ "$stderr" == *"stackpulse:py__call: 0 hits while Python ran to its end without the activator: the hook was not loaded"* ]]
		[ "$(grep -c 'warning' <<< "$stderr")" = 1 ]
		run -0 sp-decode "$OUT"
		run -0 jq -r 'select(.type == "probe" and .name == "stackpulse:py__call") | .verdict' <<<"$output"
		assert_output --partial "python -I and -S skip it"
	done
	# with the activator: no such warning
	run -0 --separate-stderr sp-record --spans=auto -o "$OUT" -- "$py" -c 'def f(): pass
f()'
	[[ "$stderr" != *"warning"* ]]
}

@test "sp-record --spans=python: a program that sets its own profile function (cProfile) is told its thread's spans end there, once, and the spool has it; threads starting are not" {
	require_root
	local py
	cat > "$BATS_TEST_TMPDIR/cprof.py" <<'EOF'
import cProfile, threading
def work(n):
	return sum(i * i for i in range(n))
def before():
	work(1000)
def profiled():
	work(1000)
def after():
	work(1000)
def threads():
	ts = [threading.Thread(target=work, args=(1000,)) for _ in range(4)]
	[t.start() for t in ts]
	[t.join() for t in ts]
threads()
before()
cProfile.run("profiled()", "/dev/null")
after()
cProfile.run("profiled()", "/dev/null")
EOF
	for py in /usr/bin/python3 "$(hook_only_python)"; do
		[ -x "$py" ] || continue
		run -0 --separate-stderr sp-record --spans=python --interp=none -o "$OUT" -- \
			"$py" "$BATS_TEST_TMPDIR/cprof.py"
		[ "$(grep -c 'set a profile function of its own' <<< "$stderr")" = 1 ]
		[[ "$stderr" == *"spans: pid "*" (python"*"): the program set a profile function of its own (sys.setprofile, as cProfile, profile and debuggers do) on thread "* ]]
		run -0 sp-decode "$OUT"
		# once: after the first cProfile.run, the hook's profile function is gone
		[ "$(jq -r 'select(.type == "event" and .event == "audit") | .name' <<< "$output" |
			grep -c '^stackpulse.profile_replaced$')" = 1 ]
		run -0 jq -r 'select(.type == "span_start") | .method' <<< "$output"
		assert_line before
		[ "$(grep -c '^work$' <<< "$output")" -ge 5 ]	# four threads, before
		refute_line profiled
		refute_line after
	done
	# a program that never sets one: no such warning, however many threads
	run -0 --separate-stderr sp-record --spans=python -o "$OUT" -- /usr/bin/python3 -c '
import concurrent.futures as cf
with cf.ThreadPoolExecutor(4) as ex: list(ex.map(abs, range(100)))'
	[[ "$stderr" != *"profile function of its own"* ]]
}

# The call tree of tests/fixtures/src/spans_c.c as its markers give it in
# the recording $OUT (name, line, depth per thread and process).
assert_c_marker_tree() {
	run -0 tree spans_c.c
	assert_output "p1/main span_start #main 84 1
p1/main span_start #nest 26 2
p1/main span_stop #nest 28 2
p1/main span_start #fact 36 2
p1/main span_start #fact 36 3
p1/main span_start #fact 36 4
p1/main span_stop #fact 38 4
p1/main span_stop #fact 38 3
p1/main span_stop #fact 38 2
p1/main span_start #catcher 64 2
p1/main span_start #middle 51 3
p1/main span_start #thrower 44 4
p1/main span_stop #thrower 45 4
p1/main span_stop #middle 53 3
p1/main span_stop #catcher 66 2
p1/t1 span_start #thread 72 1
p1/t1 span_stop #thread 74 1
p2/main span_start #child 92 1
p2/main span_stop #child 94 1
p1/main span_stop #main 99 1"
}

@test "sp-record --spans=usdt --span-func: the C call tree from <stackpulse/span.h> markers and a uprobe" {
	require_root
	prog=$SP_EXAMPLES/spans_c
	src=tests/fixtures/src/spans_c.c
	[ -x "$prog" ] || skip "build/examples/spans_c not built"
	run -0 readelf -n "$prog"
	assert_output --partial "Name: span__begin"
	run -0 sp-record --spans=usdt --span-func="$prog:leaf_work" -o "$OUT" -- "$prog"
	# markers: name, file and line of each SP_SPAN_* in the source
	assert_c_marker_tree
	# the lines really are those of the markers
	for l in 26 28 36 38 44 45 51 53 64 66 72 74 84 92 94 99; do
		sed -n "${l}p" "$BATS_TEST_DIRNAME/fixtures/src/spans_c.c" | grep -q 'SP_SPAN_\(BEGIN\|END\)'
	done
	# the uprobe pair: leaf_work nested in nest, thread and child
	run -0 tree spans_c
	assert_output "p1/main span_start spans_c#leaf_work 0 3
p1/main span_stop spans_c#leaf_work 0 3
p1/t1 span_start spans_c#leaf_work 0 2
p1/t1 span_stop spans_c#leaf_work 0 2
p2/main span_start spans_c#leaf_work 0 2
p2/main span_stop spans_c#leaf_work 0 2"
	# 9 SP_SPAN_BEGIN on the command's path, 1 in the child
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"probe\" and .name == \"stackpulse:span__begin\") | .hits' | sort -n | paste -sd' '"
	assert_output "1 9"
}

@test "sp-record --spans=usdt: markers in a library the program needs, named after the process is gone" {
	require_root
	prog=$SP_EXAMPLES/spans_uselib
	[ -x "$prog" ] || skip "build/examples/spans_uselib not built"
	run -0 sp-record --no-samples --spans=usdt -o "$OUT" -- "$prog"
	# main in the executable, lib_outer and lib_leaf in libspans_lib.so;
	# the program is gone long before sp-record reads the names: they come
	# from the library's file, found by where its markers were
	run -0 lib_spans
	assert_output "6 p1/main span_start #lib_leaf 11 3
3 p1/main span_start #lib_outer 19 2
6 p1/main span_stop #lib_leaf 13 3
3 p1/main span_stop #lib_outer 21 2"
	for l in 11 13 19 21; do
		sed -n "${l}p" "$BATS_TEST_DIRNAME/fixtures/lib/spans_lib.c" | grep -q 'SP_SPAN_\(BEGIN\|END\)'
	done
	run -0 tree spans_uselib.c
	assert_output "p1/main span_start #main 11 1
p1/main span_stop #main 14 1"
}

# spans_dlopen recorded by "$@" sp-record ...: its library's spans, found
# through ld.so's probe
assert_dlopen_spans() {
	prog=$SP_EXAMPLES/spans_dlopen
	[ -x "$prog" ] || skip "build/examples/spans_dlopen not built"
	run -0 --separate-stderr "$@" sp-record -v --no-samples --spans=usdt -o "$OUT" -- "$prog"
	[[ "$stderr" == *", 1 libraries given probes then (dlopen)"* ]] || fail "$stderr"
	run -0 lib_spans
	assert_output "6 p1/main span_start #lib_leaf 11 2
3 p1/main span_start #lib_outer 19 1
6 p1/main span_stop #lib_leaf 13 2
3 p1/main span_stop #lib_outer 21 1"
}

@test "sp-record --spans=usdt: markers in a library loaded with dlopen(), by a program without markers" {
	require_root
	assert_dlopen_spans
}

@test "sp-record --spans=usdt: dlopen() is followed without CAP_SYS_ADMIN (CAP_BPF and CAP_PERFMON), where /proc/PID/map_files is closed" {
	require_root
	require_cmd setpriv util-linux
	# the check this is about: map_files refuses a root without it
	run setpriv --bounding-set=-sys_admin,-checkpoint_restore sh -c \
		'r=$(head -1 /proc/$$/maps | cut -d" " -f1); cat /proc/$$/map_files/$r > /dev/null'
	[ "$status" != 0 ] || skip "map_files open without CAP_SYS_ADMIN here"
	run sh -c 'r=$(head -1 /proc/$$/maps | cut -d" " -f1); cat /proc/$$/map_files/$r > /dev/null'
	[ "$status" = 0 ] || skip "map_files does not open with it either"
	assert_dlopen_spans setpriv --bounding-set=-sys_admin,-checkpoint_restore
}

@test "sp-record --span-func: a CET function (endbr64, push) is probed past its endbr64, spans intact" {
	require_root
	cat > "$BATS_TEST_TMPDIR/cet.c" <<'C'
#include <stdlib.h>
__attribute__((noinline)) long leaf(long x) { __asm__ volatile("" ::: "memory"); return x + 1; }
__attribute__((noinline)) long outer(long x) { return leaf(x) + leaf(x + 1); }
int main(int argc, char **argv) { long s = 0; for (int i = 0; i < 1000; i++) s = outer(s); return s == 0; }
C
	cc -O1 -g -fno-omit-frame-pointer -fcf-protection=full -o "$BATS_TEST_TMPDIR/cet" \
		"$BATS_TEST_TMPDIR/cet.c" || skip "no compiler with -fcf-protection"
	# the pattern this is about: outer starts with endbr64, then push %rbp
	run -0 bash -c "objdump -d --no-show-raw-insn '$BATS_TEST_TMPDIR/cet' | grep -A2 '<outer>:' | awk 'NR == 2 {print \$2} NR == 3 {print \$2}' | paste -sd' '"
	assert_output "endbr64 push"
	run -0 sp-record --no-samples --spans=none --span-func="$BATS_TEST_TMPDIR/cet:outer" \
		--span-func="$BATS_TEST_TMPDIR/cet:leaf" -o "$OUT" -- "$BATS_TEST_TMPDIR/cet"
	# every call, nested: 1000 outer at depth 1, 2000 leaf at depth 2
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | \"\\(.method) \\(.depth)\"' | sort | uniq -c | awk '{print \$1, \$2, \$3}'"
	assert_output "2000 leaf 2
1000 outer 1"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_stop\") | .method' | sort | uniq -c | awk '{print \$1, \$2}'"
	assert_output "2000 leaf
1000 outer"
}

@test "sp-record --spans=ruby: a Ruby whose LD_LIBRARY_PATH names another libruby gets its probes in that one, as ld.so loads it" {
	require_ruby
	local lib=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 dir=$BATS_TEST_TMPDIR/llp
	mkdir "$dir"
	cp "$lib" "$dir/"
	# the layout this is about: ld.so takes the copy
	LD_LIBRARY_PATH=$dir ruby -e 'exit(File.read("/proc/self/maps").include?(ARGV[0]) ? 0 : 1)' \
		"$dir/libruby-3.1.so.3.1" || skip "ld.so does not take libruby from LD_LIBRARY_PATH here"
	assert_ruby_spans_with_ld_path "$dir"
}

@test "sp-record --spans=ruby: a Ruby whose libruby ld.so takes from a glibc-hwcaps subdirectory (x86-64-v2) gets its probes in that one" {
	require_ruby
	local lib=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 dir=$BATS_TEST_TMPDIR/hw
	mkdir -p "$dir/glibc-hwcaps/x86-64-v2"
	cp "$lib" "$dir/glibc-hwcaps/x86-64-v2/"
	LD_LIBRARY_PATH=$dir ruby -e 'exit(File.read("/proc/self/maps").include?(ARGV[0]) ? 0 : 1)' \
		"$dir/glibc-hwcaps/x86-64-v2/libruby-3.1.so.3.1" ||
		skip "ld.so does not take glibc-hwcaps/x86-64-v2 here (a CPU without it, or glibc before 2.33)"
	assert_ruby_spans_with_ld_path "$dir"
	# the runtime record names the library it maps, not the system's
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"runtime\") | .library' | sort -u"
	assert_output "$dir/glibc-hwcaps/x86-64-v2/libruby-3.1.so.3.1"
}

@test "sp-record --spans=ruby: a Ruby whose libruby ld.so takes from where the search at exec does not look (a legacy x86_64 subdirectory) gets its probes in that one once it runs, said once; its C methods and a fork child made at once too" {
	require_ruby
	local lib=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 dir=$BATS_TEST_TMPDIR/lg hook spans pid
	mkdir -p "$dir/x86_64"
	cp "$lib" "$dir/x86_64/"
	LD_LIBRARY_PATH=$dir ruby -e 'exit(File.read("/proc/self/maps").include?(ARGV[0]) ? 0 : 1)' \
		"$dir/x86_64/libruby-3.1.so.3.1" ||
		skip "ld.so does not take the legacy x86_64 subdirectory here (glibc 2.37 and later)"
	for spans in ruby ruby,ruby-c; do
		for hook in c hook; do
			# its calls come once it has run a while: the look at its
			# maps is at 20 ms (and the next poll)
			# (Ruby's own C-method probes where the activator has no
			# hook: where they went is what this tests)
			SP_RUBY_CMETHOD_PROBES=1 STACKPULSE_RUBY_HOOK=$hook \
				run -0 --separate-stderr sp-record --spans=$spans \
				--no-samples -o "$OUT" -- env LD_LIBRARY_PATH="$dir" ruby -e '
def f; end
def g; raise "x"; rescue; end
sleep 0.5
100.times { f }
g
3.times { [1].each {} }'
			run -0 grep -c "warning: pid [0-9]*: ld.so took '$dir/x86_64/libruby-3.1.so.3.1', not '/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1[.0-9]*' that sp-record found" <<<"$stderr"
			assert_output 1
			# in the spool: one late_probes loss of that pid, from its
			# exec to the move, before its calls of f (after 0.5 s)
			pid=$(sed -n 's/.*warning: pid \([0-9]*\): ld.so took.*/\1/p' <<<"$stderr")
			run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"lost\" and .what == \"late_probes\") | [.pid, .count, .start > 0 and .start <= .time]'"
			assert_output "[$pid,1,true]"
			run -0 bash -c "sp-decode '$OUT' | jq -s '([.[] | select(.type == \"lost\" and .what == \"late_probes\") | .time] | first) < ([.[] | select(.type == \"span_start\" and .method == \"f\") | .time] | min)'"
			assert_output true
			run -0 sp-decode --stats "$OUT"
			assert_line --regexp '^late probes +1 processes whose span probes went on late'
			# what was missed: with the hook, only the library's own probes'
			if [ $hook = hook ]; then
				[[ "$stderr" == *"its hook's spans came all along; its own probes"* ]] || fail "$stderr"
			else
				[[ "$stderr" == *"its probes go there now, what ran before is missed"* ]] || fail "$stderr"
			fi
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .method' | wc -l"
			[ "$output" = 100 ] || fail "$spans $hook: $output spans of f: $stderr"
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_raise\" and .file == \"-e\") | .klass'"
			[ "$output" = RuntimeError ] || fail "$spans $hook: raise marks: '$output': $stderr"
			# C methods: the probes moved with the others
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"each\") | .method' | wc -l"
			[ "$output" = "$([ $spans = ruby ] && echo 0 || echo 3)" ] ||
				fail "$spans $hook: $output spans of each: $stderr"
			# the last runtime record names the library it maps
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"runtime\" and .mode != \"stacks\") | .library' | tail -1"
			assert_output "$dir/x86_64/libruby-3.1.so.3.1"
		done
	done
	# a fork child made before its parent's maps were looked at (with the
	# hook not held: its raise probe comes late): its own are
	for hook in c hook; do
		STACKPULSE_RUBY_HOOK=$hook run -0 --separate-stderr sp-record --spans=ruby --no-samples \
			-o "$OUT" -- env LD_LIBRARY_PATH="$dir" ruby --disable-gems -e '
def f; end
def g; raise "x"; rescue; end
pid = fork { sleep 0.5; 100.times { f }; g }
sleep 0.5
50.times { f }
g
Process.wait pid'
		run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .pid' | sort | uniq -c | awk '{print \$1}' | sort -n | tr '\n' ' '"
		[ "$output" = "50 100 " ] || fail "fork $hook: spans of f per process: '$output': $stderr"
		run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_raise\" and .file == \"-e\") | .pid' | sort | uniq -c | awk '{print \$1}' | tr '\n' ' '"
		[ "$output" = "1 1 " ] || fail "fork $hook: raises per process: '$output': $stderr"
		[[ "$stderr" != *"no probes in"* ]] || fail "fork $hook: $stderr"
	done
}

@test "sp-record --spans=ruby: a libruby found without probes while ld.so takes one with them: the program gets its spans, and a second run of it too (not remembered as a program without probes)" {
	require_ruby
	command -v objcopy > /dev/null || skip "needs objcopy (binutils)"
	local lib=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 dir=$BATS_TEST_TMPDIR/np
	mkdir -p "$dir/x86_64"
	cp "$lib" "$dir/x86_64/"
	objcopy --remove-section .note.stapsdt "$lib" "$dir/libruby-3.1.so.3.1"
	LD_LIBRARY_PATH=$dir ruby -e 'exit(File.read("/proc/self/maps").include?(ARGV[0]) ? 0 : 1)' \
		"$dir/x86_64/libruby-3.1.so.3.1" ||
		skip "ld.so does not take the legacy x86_64 subdirectory here (glibc 2.37 and later)"
	STACKPULSE_RUBY_HOOK=c run -0 --separate-stderr sp-record --spans=ruby --no-samples \
		-o "$OUT" -- sh -c 'for i in 1 2; do env LD_LIBRARY_PATH="$1" ruby -e "def f; end; sleep 0.5; 100.times { f }"; done' sh "$dir"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .pid' | sort | uniq -c | awk '{print \$1}' | tr '\n' ' '"
	[ "$output" = "100 100 " ] || fail "spans of f per process: '$output': $stderr"
	run -0 grep -c "warning: pid [0-9]*: ld.so took '$dir/x86_64/libruby-3.1.so.3.1', not the library, which has no probes, that sp-record found" <<<"$stderr"
	assert_output 1
	# said once, counted for each in the spool: the two Rubies' pids
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\" and .what == \"late_probes\") | .pid' | sort | tr '\n' ' '"
	local late=$output
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .pid' | sort -u | tr '\n' ' '"
	[ "$late" = "$output" ] || fail "late_probes of pids '$late', spans of f in '$output'"
	run -0 bash -c "sp-tree --format=json '$OUT' | jq .late_probes"
	assert_output 2
}

# Wait up to 5 s until process $1 maps a file whose path has $2.
wait_maps() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -qF -- "$2" "/proc/$1/maps" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

@test "sp-record -p: a Ruby whose libruby was replaced since it started (a package upgrade: its maps say '(deleted)') has its C methods' spans, probed in the file it maps, and its Ruby frames in samples" {
	require_ruby
	local lib=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 dir=$BATS_TEST_TMPDIR/up pid
	mkdir "$dir"
	cp "$lib" "$dir/"
	LD_LIBRARY_PATH=$dir ruby -e 'def f; [1].map { 2 }; x = 0; 3000.times { x += 1 }; end; loop { f; sleep 0.002 }' &
	pid=$!
	SPIN+=($pid)
	wait_maps $pid "$dir/libruby-3.1.so.3.1" || fail "the Ruby never mapped its libruby"
	# what an upgrade does: a new file renamed over the old one's path
	cp "$lib" "$dir/new" && mv "$dir/new" "$dir/libruby-3.1.so.3.1"
	grep -qF "$dir/libruby-3.1.so.3.1 (deleted)" /proc/$pid/maps
	# Ruby's own C-method probes, which a Ruby 3.1 gets only when asked
	SP_RUBY_CMETHOD_PROBES=1 run -0 --separate-stderr sp-record --spans=ruby-c -p $pid -d 1 -o "$OUT"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .klass == \"Array\") | .method' | grep -cx map"
	(( output >= 50 )) || fail "$output spans of Array#map: $stderr"
	# named as it was mapped, without the kernel's mark
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"runtime\" and .mode == \"cmethod\") | .library'"
	assert_output "$dir/libruby-3.1.so.3.1"
	[[ "$stderr" != *"no Ruby with USDT probes ran"* ]] || fail "$stderr"
	# the stack walker read the mapped file too: Ruby frames in samples
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"runtime\" and .mode == \"stacks\") | .library'"
	assert_output "$dir/libruby-3.1.so.3.1 (deleted)"
	run -0 bash -c "sp-symbolize '$OUT' 2>/dev/null | sp-flame --format=folded 2>/dev/null | grep -c 'Object#f'"
	(( output > 0 ))
}

@test "sp-record -p --spans=python-audit: a Python whose executable was replaced since it started has its audit events, from the file it runs" {
	require_python_probes
	readelf -n /usr/bin/python3.11 | grep -q 'Name: audit' || skip "python3.11 has no audit probe"
	local dir=$BATS_TEST_TMPDIR/upy pid
	mkdir "$dir"
	cp /usr/bin/python3.11 "$dir/python3.11"
	"$dir/python3.11" -c '
import time
while True:
    open("/etc/hostname").close()
    time.sleep(0.005)' &
	pid=$!
	SPIN+=($pid)
	wait_maps $pid "$dir/python3.11" || fail "the Python never started"
	cp /usr/bin/python3.11 "$dir/new" && mv "$dir/new" "$dir/python3.11"
	[[ "$(readlink /proc/$pid/exe)" == *" (deleted)" ]]
	run -0 --separate-stderr sp-record --no-samples --spans=python-audit -p $pid -d 1 -o "$OUT"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"event\" and .event == \"audit\" and .name == \"open\") | .args' | grep -cx /etc/hostname"
	(( output >= 20 )) || fail "$output audit events of open: $stderr"
	[[ "$stderr" != *"no Python with USDT probes ran"* ]] || fail "$stderr"
}

# nobody's Rubies run with LD_LIBRARY_PATH naming nobody's directory, whose
# legacy x86_64 subdirectory has a libruby (ld.so takes it; the search at
# exec does not look there: the maps look moves the probes to it), while
# another process of nobody's keeps putting a FIFO, a link to a file only
# root reads, a short file and a copy of the library at that path. Nothing
# sp-record opens blocks; a Ruby is never left stopped; each that ran
# has its spans, or is named in a warning that says why not.
@test "sp-record --spans=ruby: nobody swaps a FIFO, a link, a short file and a copy at the path of the libruby ld.so takes from nobody's LD_LIBRARY_PATH: nothing blocks, no Ruby is left stopped, each has its spans or is named" {
	require_ruby
	require_cmd setpriv util-linux
	local lib=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 dir ok spans warned
	dir=$(mktemp -d /tmp/sp-llp.XXXXXX)
	SWAP_DIR=$dir
	chmod 0755 "$dir"
	mkdir "$dir/x86_64"
	cp "$lib" "$dir/good.so"
	cp "$lib" "$dir/x86_64/"
	echo x > "$dir/short"
	chown -R 65534:65534 "$dir"
	LD_LIBRARY_PATH=$dir ruby -e 'exit(File.read("/proc/self/maps").include?(ARGV[0]) ? 0 : 1)' \
		"$dir/x86_64/libruby-3.1.so.3.1" ||
		skip "ld.so does not take the legacy x86_64 subdirectory here (glibc 2.37 and later)"
	# the activator nobody's Rubies load: the checkout may be in a
	# directory only root can enter
	nobody_tools
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '
d=$1 t=$1/x86_64/libruby-3.1.so.3.1
while [ ! -e "$d/stop" ]; do
	mkfifo "$d/tmp" && mv -f "$d/tmp" "$t"
	ln -sf /etc/shadow "$d/tmp" && mv -Tf "$d/tmp" "$t"
	cp "$d/short" "$d/tmp" && mv -f "$d/tmp" "$t"
	cp "$d/good.so" "$d/tmp" && mv -f "$d/tmp" "$t"
	sleep 0.01
done' sh "$dir" 2>/dev/null &
	SPIN+=($!)
	STACKPULSE_RUBY_HOOK=c SP_RUNTIME_DIR=$NOBODY_DIR/runtime run -0 --separate-stderr \
		timeout 120 sp-record -v --no-samples --spans=ruby -o "$OUT" -- setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '
for i in 1 2 3 4 5 6 7 8 9 10; do
	# a FIFO at the path holds ld.so itself: its own
	env LD_LIBRARY_PATH="$1" timeout 3 ruby -e "def f; end; sleep 0.1; 50.times { f }" &&
		echo ok >&2
done
exit 0' sh "$dir"
	touch "$dir/stop"
	# none of these Rubies left stopped (other processes of nobody's may
	# be another recording's to hold)
	local p
	for p in $(pgrep -u 65534); do
		tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qxF "LD_LIBRARY_PATH=$dir" || continue
		! grep -q '^State:.*T' "/proc/$p/status" 2>/dev/null ||
			fail "pid $p left stopped: $(cat "/proc/$p/cmdline" | tr '\0' ' ')"
	done
	ok=$(grep -cx ok <<<"$stderr" || true)
	(( ok >= 1 )) || skip "no Ruby of the ten started (the swaps won every time)"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .pid' | sort | uniq -c | awk '\$1 == 50 {print \$2}' | wc -l"
	spans=$output
	# with -v the later ones are said without "warning:"
	warned=$(grep -E "(warning: )?(spans: )?pid [0-9]+:? (cannot attach|no probes|.*cannot be opened)" <<<"$stderr" |
		sed -E 's/.*pid ([0-9]+).*/\1/' | sort -u | wc -l)
	(( spans + warned >= ok )) || fail "$ok Rubies ran: $spans with their 50 spans, $warned named: $stderr"
	(( spans >= 1 )) || fail "no Ruby had its spans: $stderr"
}

# nobody's libruby whose section headers say its USDT notes, or its
# section names, are 3 GiB: a sparse file of 4 MB on disk, that ld.so
# still loads (it reads no section headers). libelf reads a section whole:
# root's sp-record grew to 3.2 GB and held the Ruby at exec 34 s.
@test "sp-record --spans=ruby: nobody's libruby (LD_LIBRARY_PATH) whose notes or section names say 3 GiB: refused, said, sp-record stays small" {
	require_ruby
	require_cmd setpriv util-linux
	[ -x /usr/bin/time ] || skip "needs /usr/bin/time (package time)"
	local lib=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 dir sec rss
	dir=$(mktemp -d /tmp/sp-big.XXXXXX)
	SWAP_DIR=$dir
	chmod 0755 "$dir"
	nobody_tools	# the activator nobody's Ruby loads, where nobody reads it
	for sec in .note.stapsdt .shstrtab; do
		python3 "$BATS_TEST_DIRNAME/fixtures/sparse_section.py" "$lib" \
			"$dir/libruby-3.1.so.3.1" "$sec"
		chown -R 65534:65534 "$dir"
		(( $(du -k "$dir/libruby-3.1.so.3.1" | cut -f1) < 100000 ))
		SP_RUNTIME_DIR=$NOBODY_DIR/runtime run -0 --separate-stderr \
			/usr/bin/time -f %M -o "$dir/rss" sp-record --spans=ruby \
			--no-samples -o "$OUT" -- setpriv --reuid=65534 --regid=65534 --clear-groups \
			env LD_LIBRARY_PATH="$dir" ruby -e 'p 1'
		assert_output 1
		rss=$(cat "$dir/rss")
		(( rss < 400000 )) || fail "$sec: sp-record grew to $rss KiB: $stderr"
		if [ $sec = .note.stapsdt ]; then
			[[ "$stderr" == *"'$dir/libruby-3.1.so.3.1' says its USDT notes (.note.stapsdt) are 3221225472 bytes"* ]] ||
				fail "$stderr"
		fi
	done
}

# A Ruby run with LD_LIBRARY_PATH=$1 under sp-record, with Ruby's own
# probes and with the hook: its 100 spans of f and its raise mark.
assert_ruby_spans_with_ld_path() {
	local dir=$1 hook
	for hook in c hook; do
		# in the process's environment, not sp-record's
		STACKPULSE_RUBY_HOOK=$hook run -0 --separate-stderr sp-record -v --spans=ruby \
			--no-samples -o "$OUT" -- env LD_LIBRARY_PATH="$dir" ruby -e '
def f; end
def g; raise "x"; rescue; end
100.times { f }
g'
		run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .method' | wc -l"
		[ "$output" = 100 ] || fail "$hook: $output spans of f: $stderr"
		run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_raise\" and .file == \"-e\") | .klass'"
		[ "$output" = RuntimeError ] || fail "$hook: raise marks: '$output': $stderr"
	done
}

@test "sp-record --spans with libbpf's USDT links (older kernels' path, SP_USDT_LINKS=1): the Ruby tree from Ruby's own probes, the C markers' tree" {
	require_ruby
	# libruby is a shared library: libbpf is given a descriptor's name for
	# it, and the fork child of calls.rb gets its parent's links
	SP_USDT_LINKS=1 STACKPULSE_RUBY_HOOK=c run -0 --separate-stderr sp-record -v --spans=ruby \
		-o "$OUT" -- ruby "$RUBY_FIX"
	assert_ruby_tree
	run -0 probe_hits "ruby:method__entry"
	(( output >= 10 ))
	[[ "$stderr" != *"cannot attach"* ]] || fail "$stderr"
	[ -x "$SP_EXAMPLES/spans_c" ] || skip "build/examples/spans_c not built"
	SP_USDT_LINKS=1 run -0 sp-record --spans=usdt -o "$OUT" -- "$SP_EXAMPLES/spans_c"
	assert_c_marker_tree
}

@test "sp-record --span-func: a binary made a FIFO during the recording is never opened to block on, another file put at its path gets no probes" {
	require_root
	local dir=$BATS_TEST_TMPDIR/d
	mkdir "$dir"
	printf '%s\n' '__attribute__((noinline)) long outer(long x) { __asm__ volatile("" ::: "memory"); return x + 1; }' \
		'int main(void) { long s = 0; for (int i = 0; i < 1000; i++) s = outer(s); return s != 1000; }' |
		cc -O1 -x c -o "$dir/prog" - || skip "no C compiler"
	cp "$dir/prog" "$dir/prog.real"
	# the path --span-func named becomes a FIFO, then the copy is run: its
	# image gets the uprobes of the path, which must not be opened
	run --separate-stderr timeout -k 10 60 sp-record --no-samples --spans=none \
		--span-func="$dir/prog:outer" -o "$OUT" -- \
		sh -c 'rm "$1" && mkfifo "$1" && exec "$1.real"' sh "$dir/prog"
	[ "$status" = 0 ] || fail "status $status (124: sp-record blocked on the FIFO): $stderr"
	sp-decode "$OUT" > /dev/null
	# another file at the path (a copy: the same offsets) gets no probes:
	# they are the file's that was read at the start, whose offsets they are
	rm "$dir/prog"
	cp "$dir/prog.real" "$dir/prog"
	run --separate-stderr -0 timeout -k 10 60 sp-record --no-samples --spans=none \
		--span-func="$dir/prog:outer" -o "$OUT" -- \
		sh -c 'cp "$1" "$1.new" && mv "$1.new" "$1" && exec "$1"' sh "$dir/prog"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .method' | grep -c '^outer\$' || true"
	assert_output 0
	# and the file itself does (the control)
	run -0 sp-record --no-samples --spans=none --span-func="$dir/prog:outer" -o "$OUT" -- "$dir/prog"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .method' | grep -c '^outer\$'"
	assert_output 1000
}

# A program of nobody's, in nobody's directory, with markers in a library
# there: it calls lib_outer once, waits for "go", forks; the child calls it
# 5 times. Between the two, nobody puts another file at the library's path
# ($1: "copy", the same bytes; "short", a file shorter than the markers'
# offsets; "removed": none). The child maps its parent's file and must get
# the probes in that one; 6 lib_outer spans in all.
fork_after_swap() {
	require_cmd setpriv util-linux
	local lib=$SP_EXAMPLES/libspans_lib.so dir
	[ -f "$lib" ] || skip "build/examples/libspans_lib.so not built"
	dir=$(mktemp -d /tmp/sp-swap.XXXXXX)
	SWAP_DIR=$dir
	chmod 0755 "$dir"
	cp "$lib" "$dir/libspans_lib.so"
	cat > "$dir/main.c" <<'C'
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int lib_outer(int);
int main(int argc, char **argv)
{
	int s = lib_outer(1), i;
	FILE *f = fopen(argv[1], "w");
	fclose(f);
	for (i = 0; i < 600 && access(argv[2], F_OK); i++)
		usleep(50000);
	if (fork() == 0) {
		for (i = 0; i < 5; i++)
			s += lib_outer(i);
		_exit(s == 0);
	}
	wait(NULL);
	return 0;
}
C
	cc -O1 -o "$dir/main" "$dir/main.c" -L"$dir" -lspans_lib '-Wl,-rpath,$ORIGIN' ||
		skip "no C compiler"
	chown -R 65534:65534 "$dir"
	sp-record -v --no-samples --spans=usdt -o "$OUT" -- setpriv --reuid=65534 --regid=65534 \
		--clear-groups "$dir/main" "$dir/ready" "$dir/go" 2> "$BATS_TEST_TMPDIR/err" &
	local rec=$!
	SPIN+=($rec)
	wait_path "$dir/ready" 30 || fail "the program never started"
	if [ "$1" = copy ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
			'cp "$1/libspans_lib.so" "$1/new" && mv "$1/new" "$1/libspans_lib.so"' sh "$dir"
	elif [ "$1" = removed ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups rm "$dir/libspans_lib.so"
	else
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
			'echo x > "$1/new" && mv "$1/new" "$1/libspans_lib.so"' sh "$dir"
	fi
	touch "$dir/go"
	wait $rec || fail "sp-record failed: $(cat "$BATS_TEST_TMPDIR/err")"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .method' | grep -c '^lib_outer\$'"
	[ "$output" = 6 ] || fail "$output lib_outer spans, not 6: $(cat "$BATS_TEST_TMPDIR/err")"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .method' | grep -c '^lib_leaf\$'"
	assert_output 12
}

@test "sp-record --spans=usdt: a fork child gets its probes in the library it maps, though its owner put a copy at its path since the parent's went on" {
	require_root
	fork_after_swap copy
}

@test "sp-record --spans=usdt: a fork child gets its probes in the library it maps, though its owner put a short file at its path since" {
	require_root
	fork_after_swap short
}

@test "sp-record --spans=usdt: a fork child gets its probes in the library it maps, though its owner removed it since" {
	require_root
	fork_after_swap removed
}

@test "sp-record --spans=usdt with libbpf's USDT links (SP_USDT_LINKS=1): a fork child's probes in the library it maps, though a copy is at its path since" {
	require_root
	SP_USDT_LINKS=1 fork_after_swap copy
}

@test "sp-record -p --spans=usdt: markers in a library mapped after 20 libraries without any are attached" {
	require_root
	local lib=$SP_EXAMPLES/libspans_lib.so dir=$BATS_TEST_TMPDIR/many i libs=
	[ -f "$lib" ] || skip "build/examples/libspans_lib.so not built"
	mkdir "$dir"
	cp "$lib" "$dir/"
	for i in $(seq 1 20); do
		echo "int f$i(void) { return $i; }" | cc -shared -fPIC -x c -o "$dir/libnomark$i.so" - ||
			skip "no C compiler"
		libs="$libs -lnomark$i"
	done
	cat > "$dir/main.c" <<'C'
#include <stdio.h>
#include <unistd.h>
int lib_outer(int);
int main(int argc, char **argv)
{
	int s = 0, i;
	FILE *f = fopen(argv[1], "w");
	fclose(f);
	for (i = 0; i < 3000 && access(argv[2], F_OK); i++) {
		s += lib_outer(i);
		usleep(20000);
	}
	return s == 0;
}
C
	# libspans_lib first: ld.so maps it first, at the highest address, so
	# that the maps list the 20 others before it
	cc -O1 -o "$dir/main" "$dir/main.c" -L"$dir" -Wl,--no-as-needed -lspans_lib $libs \
		'-Wl,-rpath,$ORIGIN' || skip "no C compiler"
	"$dir/main" "$dir/ready" "$dir/stop" &
	local pid=$!
	SPIN+=($pid)
	wait_path "$dir/ready" 30 || fail "the program never started"
	run -0 bash -c "grep -o '/[^ ]*\.so' /proc/$pid/maps | uniq | grep -n libspans_lib | cut -d: -f1"
	(( output > 17 )) || skip "libspans_lib.so is library $output of the maps here, not after 16 others"
	sp-record -v --no-samples --spans=usdt -p $pid -o "$OUT" 2> "$BATS_TEST_TMPDIR/err" &
	local rec=$!
	SPIN+=($rec)
	for i in $(seq 600); do
		(( $(sp-decode "$OUT" 2>/dev/null | jq -r 'select(.type == "span_start") | .method' 2>/dev/null |
		     grep -cx lib_outer) >= 5 )) && break
		sleep 0.1
	done
	touch "$dir/stop"
	wait $pid
	wait $rec || fail "sp-record failed: $(cat "$BATS_TEST_TMPDIR/err")"
	# each call's two lib_leaf spans inside its lib_outer (but the call the
	# attach came in, whose lib_outer may have begun before its probes)
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | \"\\(.method) \\(.depth)\"' | sort | uniq -c | awk '\$1 > 2 {print \$2, \$3}'"
	assert_output "lib_leaf 2
lib_outer 1"
}

@test "sp-record --spans=usdt: markers with generic operands (C++) give the same tree as the fixed registers of C" {
	require_root
	prog=$SP_EXAMPLES/spans_cxx
	[ -x "$prog" ] || skip "build/examples/spans_cxx not built (no C++ compiler)"
	# C on x86-64 passes the arguments in fixed registers, C++ does not:
	# sp-record reads the two kinds with different BPF programs
	run -0 bash -c "readelf -n '$SP_EXAMPLES/spans_c' | grep -c 'Arguments: 8@%rdi 8@%rsi -4@%edx'"
	assert_output 17
	run -0 bash -c "readelf -n '$prog' | grep 'Arguments:' | grep -vc 'Arguments: 8@%rdi 8@%rsi -4@%edx'"
	assert_output 17
	run -0 sp-record --spans=usdt -o "$OUT" -- "$prog"
	assert_c_marker_tree
}

@test "sp-tree: a Ruby method in a pseudo-file (<internal:...>) shows the whole name, a real file its base name" {
	require_ruby
	# where Ruby itself says these methods are
	local req tap
	req=$(ruby -e 'print method(:require).source_location[0]')
	tap=$(ruby -e 'print method(:tap).source_location[0]')
	[[ "$req" == "<internal:"*/* ]] || skip "require is not in a pseudo-path with a '/' here: $req"
	printf 'def f; end\nf\n' > "$BATS_TEST_TMPDIR/real.rb"
	run -0 --separate-stderr sp-record --no-samples --spans=ruby -o "$OUT" -- \
		ruby -e 'require "set"; 1.tap { }; load ARGV[0]' "$BATS_TEST_TMPDIR/real.rb"
	run -0 bash -c "sp-correlate '$OUT' 2>/dev/null | sp-tree --stable"
	# before: "Kernel#require at=kernel_require.rb>:37"
	assert_output --partial "[SPAN Kernel#require at=$req:"
	assert_output --partial "[SPAN Kernel#tap at=$tap:"
	assert_output --partial "[SPAN Object#f at=real.rb:1]"
}

@test "sp-record --spans=ruby: fibers each have their own stack of spans" {
	require_ruby
	run -0 sp-record --spans=ruby -o "$OUT" -- ruby "$BATS_TEST_DIRNAME/fixtures/ruby/fibers.rb"
	# depths per fiber: producer is the outermost span of its fiber, and
	# consumer, run while step waits in Fiber.yield, is not inside step
	run -0 tree fibers.rb
	assert_output "p1/main span_start Fib#run 6 1
p1/main span_start Fib#producer 18 1
p1/main span_start Fib#step 23 2
p1/main span_start Fib#consumer 27 2
p1/main span_start Fib#work 31 3
p1/main span_stop Fib#work 32 3
p1/main span_stop Fib#consumer 28 2
p1/main span_stop Fib#step 24 2
p1/main span_start Fib#step 23 2
p1/main span_start Fib#consumer 27 2
p1/main span_start Fib#work 31 3
p1/main span_stop Fib#work 32 3
p1/main span_stop Fib#consumer 28 2
p1/main span_stop Fib#step 24 2
p1/main span_stop Fib#producer 20 1
p1/main span_stop Fib#run 15 1"
	# the switches: root (0) to a new fiber and back, three resumes, then
	# the enumerator's fiber for two next calls
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"fiber_switch\") | \"\\(.from == \"0x0\") \\(.to == \"0x0\") \\(.flags // \"0x0\")\"' | paste -sd' '"
	assert_output "true false 0x1 false true 0x0 true false 0x0 false true 0x0 true false 0x0 false true 0x0 true false 0x1 false true 0x0 true false 0x0 false true 0x0"
	# correlated: the fiber's spans under the span that started it, and the
	# file open in work
	run -0 bash -c "sp-correlate '$OUT' 2>/dev/null | sp-tree --stable | sed -n '/Fib#run/,/fibers.rb (O_/p'"
	assert_output "├─ [SPAN Fib#run at=fibers.rb:6]
│  ├─ [SPAN Fib#producer at=fibers.rb:18]
│  │  └─ ×2 [SPAN Fib#step at=fibers.rb:23]
│  └─ ×2 [SPAN Fib#consumer at=fibers.rb:27]
│     └─ [SPAN Fib#work at=fibers.rb:31]
│        └─ FILE path_open → $BATS_TEST_DIRNAME/fixtures/ruby/fibers.rb (O_RDONLY|O_CLOEXEC) = fd"
}

# Spans of method $1 in $OUT: "starts stops".
count_spans() {
	sp-decode "$OUT" | jq -rs --arg m "$1" '
		[.[] | select(.method == $m)] as $s
		| "\([$s[] | select(.type == "span_start")] | length) \([$s[] | select(.type == "span_stop")] | length)"'
}

@test "sp-record --spans: span rings: a hot loop's spans are all there, its thread waiting for sp-record" {
	require_ruby
	require_python
	# 30000 calls make 60000 marks: the 4096-mark ring fills many times over
	run -0 --separate-stderr sp-record -v --no-samples --spans=ruby -o "$OUT" -- \
		ruby -e 'def f(x) = x + 1; s = 0; 30000.times { s = f(s) }'
	run -0 count_spans f
	assert_output "30000 30000"
	[[ "$stderr" != *"span marks lost"* ]] || fail "$stderr"
	run -0 probe_hits "stackpulse:rt__flush"
	(( output >= 10 ))
	# the hook looks at its reader at every wait, by one descriptor: its own
	# opens are not among the program's file events once per wait
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"event\" and
		.event == \"path_open\") | .path' | grep -c '^/proc/[0-9]*/stat\$' || true"
	[ "$output" -le 1 ]
	run -0 --separate-stderr sp-record -v --no-samples --spans=python -o "$OUT" -- \
		$PY -c 'def f(x): return x + 1
s = 0
for _ in range(30000): s = f(s)'
	run -0 count_spans f
	assert_output "30000 30000"
	[[ "$stderr" != *"span marks lost"* ]] || fail "$stderr"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"event\" and
		.event == \"path_open\") | .path' | grep -c '^/proc/[0-9]*/stat\$' || true"
	[ "$output" -le 1 ]
}

@test "sp-record --spans: span rings: marks not read yet survive exit!, os._exit and a thread's end" {
	require_ruby
	require_python
	# exit! skips at_exit and every hook: what the ring holds unread at the
	# exit is copied by BPF at sched_process_exit. sp-record does not read
	# the rings itself here (SP_SPAN_RINGS_UNREAD, for tests): the marks
	# can only have come from the copies at the ends.
	export SP_SPAN_RINGS_UNREAD=1
	run -0 sp-record --no-samples --spans=ruby -o "$OUT" -- \
		ruby -e 'def g = 1; def f = g; f; 200.times { f }; exit!(0)'
	run -0 count_spans f
	assert_output "201 201"
	run -0 count_spans g
	assert_output "201 201"
	# a forked child that leaves by os._exit, and a thread that ends
	run -0 sp-record --no-samples --spans=python -o "$OUT" -- $PY -c '
import os, threading
def g(): return 1
def f(): return g()
def h(): return f()
t = threading.Thread(target=h); t.start(); t.join()
pid = os.fork()
if pid == 0:
    for _ in range(50): f()
    os._exit(0)
os.waitpid(pid, 0)'
	run -0 count_spans f
	assert_output "51 51"
	run -0 count_spans h
	assert_output "1 1"
}

@test "sp-record --spans: span rings: a program outlives a killed sp-record without hanging" {
	require_ruby
	sp-record --no-samples --spans=ruby -o "$OUT" -- ruby -e '
		def f(x) = x + 1
		s = 0
		t = Time.now
		File.write(ARGV[1], "up")
		s = f(s) while Time.now - t < 3
		File.write(ARGV[0], "done") ' "$BATS_TEST_TMPDIR/done" "$BATS_TEST_TMPDIR/up" &
	local rec=$!
	# killed while the program runs (not while sp-record still starts)
	for i in $(seq 300); do
		[ -e "$BATS_TEST_TMPDIR/up" ] && break
		sleep 0.1
	done
	[ -e "$BATS_TEST_TMPDIR/up" ] || fail "the program did not start"
	sleep 1
	kill -KILL $rec
	wait $rec || true
	# the loop runs on (its threads wait once, then no more) and finishes
	for i in $(seq 100); do
		[ -e "$BATS_TEST_TMPDIR/done" ] && break
		sleep 0.1
	done
	[ "$(cat "$BATS_TEST_TMPDIR/done")" = done ]
}

# A Python of user nobody that lies in its span ring the way $1 says
# (tests/fixtures/python/hostile_ring.py, for 6 s), beside an honest Python
# making 2,000,000 span marks (of g) while it lies, under one recording
# that ends with them:
# sp-record's stderr, the recording in $OUT, the hostile pid in $hpid and
# sp-record's peak RSS (KiB) in $rss.
record_hostile_ring() {
	local honest='def g(x): return x + 1
s = 0
for _ in range(1000000): s = g(s)'
	# a copy of the tools whose runtime directory nobody can read (the
	# checkout may be in a directory only root can enter); the program on
	# stdin: its file need not be readable by nobody
	nobody_tools
	run -0 --separate-stderr /usr/bin/time -f 'sp-record maxrss %M' timeout 120 \
		"$NOBODY_BIN/sp-record" --spans=python --no-samples -o "$OUT" -- sh -c "
		setpriv --reuid=65534 --regid=65534 --clear-groups $PY - $1 6 \
			<'$BATS_TEST_DIRNAME/fixtures/python/hostile_ring.py' &
		sleep 2; $PY -c '$honest'; wait"
	rm -rf "$NOBODY_DIR"
	hpid=$(sed -n 's/^ring .* pid \([0-9]*\)$/\1/p' <<<"$output")
	[ -n "$hpid" ] || fail "the hostile Python found no ring: $output $stderr"
	rss=$(sed -n 's/^sp-record maxrss //p' <<<"$stderr")
}

# Span marks (starts and stops) of method $1 in $OUT (streamed: these
# recordings are large).
marks_of() {
	sp-decode "$OUT" | jq -n --arg m "$1" 'reduce (inputs | select(.method == $m and
		(.type == "span_start" or .type == "span_stop"))) as $x (0; . + 1)'
}

# Span marks counted lost in $OUT: "of pid $1, of the others, the largest
# count of one record".
spans_lost() {
	sp-decode "$OUT" | jq -rn --argjson p "$1" '
		reduce (inputs | select(.type == "lost" and .what == "spans")) as $l
			({mine: 0, others: 0, max: 0};
			 (if $l.pid == $p then .mine += $l.count else .others += $l.count end)
			 | .max = ([.max, $l.count] | max))
		| "\(.mine) \(.others) \(.max)"'
}

# The honest Python's 2,000,000 marks (of g) are all in $OUT, or counted
# lost.
assert_honest_spans() {
	local g lost
	run -0 marks_of g
	g=$output
	run -0 spans_lost "$hpid"
	lost=$(cut -d' ' -f2 <<<"$output")
	(( g + lost >= 2000000 && g + lost <= 2010000 )) ||
		fail "the honest Python's g: $g marks, $lost lost (of 2000000)"
}

@test "sp-record --spans: a span ring that lies (head run ahead, entries unmapped) is given up: the output goes on, memory stays bounded" {
	require_python
	require_cmd setpriv util-linux
	[ -x /usr/bin/time ] || skip "needs GNU time (/usr/bin/time) for the peak RSS"
	# before: the watermark waited for the unreadable ring, nothing was
	# written until the end and sp-record grew to about 1 GB
	record_hostile_ring unmap
	[[ "$stderr" == *"spans: pid $hpid (python3"*"): the span ring of thread $hpid at 0x"*" cannot be read (its entries: Bad address): given up"* ]] ||
		fail "$stderr"
	[ "$(grep -c "pid $hpid (" <<<"$stderr")" = 1 ]
	(( rss < 300000 )) || fail "sp-record's peak RSS: $rss KiB"
	assert_honest_spans
	# what the ring said it held is counted lost, under its pid
	run -0 spans_lost "$hpid"
	read -r mine others max <<<"$output"
	(( mine >= 3000 && mine < 100000 )) || fail "lost: $output"
}

@test "sp-record --spans: garbage heads and marks stamped an hour ahead: the ring is given up, no wrapped lost count, nothing held back" {
	require_python
	require_cmd setpriv util-linux
	[ -x /usr/bin/time ] || skip "needs GNU time (/usr/bin/time) for the peak RSS"
	# before: "4374699644935229379 span marks lost" on stderr
	record_hostile_ring garbage
	[[ "$stderr" == *"spans: pid $hpid (python3"*"more than a thread can write: given up"* ]] ||
		fail "$stderr"
	if grep -E '[0-9]{12,} span marks lost' <<<"$stderr"; then
		fail "$stderr"
	fi
	run -0 spans_lost "$hpid"
	read -r mine others max <<<"$output"
	(( max < 1000000000 )) || fail "lost: $output"
	assert_honest_spans
	# before: the merge held every mark after the first stamped ahead
	record_hostile_ring future
	[[ "$stderr" == *"spans: pid $hpid (python3"*"stamped "*" ns ahead of now: given up"* ]] ||
		fail "$stderr"
	(( rss < 300000 )) || fail "sp-record's peak RSS: $rss KiB"
	assert_honest_spans
}

@test "sp-record --spans: marks whose names point anywhere: sp-record keeps at most 16384 strings of a process" {
	require_python
	require_cmd setpriv util-linux
	[ -x /usr/bin/time ] || skip "needs GNU time (/usr/bin/time) for the peak RSS"
	# before: a string read and kept for every address, 190,000 in 5 s
	record_hostile_ring names
	[[ "$stderr" == *"spans: pid $hpid (python3"*"): more than 16384 strings read by address: later ones are not kept"* ]] ||
		fail "$stderr"
	run -0 bash -c "sp-decode '$OUT' | jq -n 'reduce (inputs | select(.type == \"string\")) as \$x (0; . + 1)'"
	(( output < 20000 )) || fail "$output strings"
	assert_honest_spans
}

@test "sp-record -p: two sp-records on one Python with span rings: the first owns the rings and misses nothing, the second reads beside it and counts every mark it misses" {
	require_python
	local go=$BATS_TEST_TMPDIR/go done=$BATS_TEST_TMPDIR/done
	STACKPULSE_SPAN_RING=1 PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import os, sys, time
def f(x): return x + 1
while not os.path.exists(sys.argv[1]): time.sleep(0.01)
s = 0
for _ in range(200000): s = f(s)
open(sys.argv[2], "w").close()
time.sleep(1.5)' "$go" "$done" &
	local py=$! a b
	sleep 0.5
	sp-record -v --spans=auto --no-samples -p $py -o "$BATS_TEST_TMPDIR/a.sp" 2>"$BATS_TEST_TMPDIR/a.err" &
	a=$!
	sleep 1.5
	sp-record -v --spans=auto --no-samples -p $py -o "$BATS_TEST_TMPDIR/b.sp" 2>"$BATS_TEST_TMPDIR/b.err" &
	b=$!
	# the ring is announced again each second it is used: both know it
	sleep 3
	touch "$go"
	wait $a
	wait $b
	wait $py
	# before: both wrote how far they had read; 28-45% of the marks were
	# missing from each spool and none was counted lost
	for x in a b; do
		OUT=$BATS_TEST_TMPDIR/$x.sp
		run -0 marks_of f
		local got=$output
		run -0 spans_lost "$py"
		read -r mine others max <<<"$output"
		# a stop whose start came before the recording is dropped, and said
		local early
		early=$(sed -n 's/.* \([0-9]*\) stops without a start dropped.*/\1/p' \
			"$BATS_TEST_TMPDIR/$x.err")
		output=$((mine + others))
		(( got + output + ${early:-0} >= 400000 && got + output <= 401000 )) ||
			fail "$x: $got marks of f and $output lost of 400000: $(cat "$BATS_TEST_TMPDIR/$x.err")"
		# the owner (the first, unless the second found the ring first)
		grep -q "read by another sp-record" "$BATS_TEST_TMPDIR/$x.err" ||
			(( output == 0 && got == 400000 )) ||
			fail "the owner missed marks: $(cat "$BATS_TEST_TMPDIR/$x.err")"
	done
	# one reads beside the other, and says so once
	run -0 cat "$BATS_TEST_TMPDIR/a.err" "$BATS_TEST_TMPDIR/b.err"
	run -0 grep -c "spans: pid $py (python3.11): its span rings are read by another sp-record (pid \($a\|$b\))" <<<"$output"
	assert_output 1
}

@test "sp-record -p: stops whose start came before the recording are a lost record, shown by sp-decode --stats and sp-tree" {
	require_python
	local go=$BATS_TEST_TMPDIR/go ready=$BATS_TEST_TMPDIR/ready i
	# attached while 300 calls of f are open: the hook marks the innermost
	# 256 frames open when the recording comes (tests/sp-record-wrappers.bats),
	# the stops of the others (and of <module>) have no start
	PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import os, sys, time
def f(n):
    if n:
        return f(n - 1) + 1
    open(sys.argv[2], "w").close()
    while not os.path.exists(sys.argv[1]): time.sleep(0.01)
    return 0
f(299)
time.sleep(0.5)' "$go" "$ready" &
	local py=$! rec
	for i in $(seq 600); do [ -e "$ready" ] && break; sleep 0.1; done
	sp-record -v --spans=auto --no-samples -p $py -o "$OUT" 2>"$BATS_TEST_TMPDIR/err" &
	rec=$!
	# until the spans flow (an exists of the loop is in the spool)
	spans_flow "$OUT" exists || fail "no span of exists came: $(cat "$BATS_TEST_TMPDIR/err")"
	touch "$go"
	wait $rec || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	wait $py
	local said
	said=$(sed -n 's/.* \([0-9]*\) stops without a start dropped.*/\1/p' "$BATS_TEST_TMPDIR/err")
	(( said >= 45 )) || fail "$(cat "$BATS_TEST_TMPDIR/err")"
	# said apart: all of them are of frames beyond the 256 rebuilt
	run -0 grep -c "stops without a start dropped (entered before the recording: $said of frames beyond the innermost 256 their hook rebuilt, 0 of Ruby fibers" "$BATS_TEST_TMPDIR/err"
	# before: stderr said it, the spool had no record of it
	run -0 bash -c "sp-decode '$OUT' | jq -n '[inputs | select(.type == \"lost\" and .what == \"span_stops\") | .count] | add'"
	assert_output "$said"
	run -0 sp-decode --stats "$OUT"
	assert_line "span stops      $said dropped: their start came before the recording"
	run -0 sp-decode --stats-json "$OUT"
	run -0 jq -r .lost_span_stops <<<"$output"
	assert_output "$said"
	run -0 sp-tree "$OUT"
	assert_line --regexp "^# stackpulse recording .* lost 0  span stops without a start $said\$"
}

@test "sp-record --spans=ruby: the default Ruby mode does not crash Ruby (50 runs in a row)" {
	require_ruby
	for i in $(seq 50); do
		run sp-record --spans=ruby --events=none -o "$OUT" -- ruby -e 'def f; 1; end; 100.times { f }'
		[ "$status" -eq 0 ] || fail "run $i: exit $status: $output"
		[[ "$output" != *"[BUG]"* ]] || fail "run $i: $output"
	done
	run -0 probe_hits "stackpulse:rb__call"
	(( output >= 100 ))
}

@test "sp-record --spans: a dead probe gets a verdict (Python without the activator)" {
	require_python
	STACKPULSE_PY_HOOK=none run -0 --separate-stderr sp-record --spans=python -o "$OUT" -- $PY "$PY_FIX"
	assert_output ""
	[[ "$stderr" == *"python:function__entry"*"entries not active"* ]]
	run -0 sp-decode "$OUT"
	run -0 jq -r 'select(.type == "probe" and .name == "python:function__entry") | .verdict' <<<"$output"
	assert_output --partial "the activator was not loaded"
}

@test "sp-record --spans=ruby,ruby-c -p: an attached Ruby has C-method spans, and method spans are called dead" {
	require_ruby
	ruby -e '$stdout.sync = true; def f; [1].map { 2 }; end; loop { f; sleep 0.01 }' &
	rpid=$!
	sleep 1
	SP_RUBY_CMETHOD_PROBES=1 run -0 sp-record --spans=ruby,ruby-c -p $rpid -d 1 -o "$OUT"
	kill $rpid; wait $rpid || true
	run -0 probe_hits "ruby:cmethod__entry"
	(( output > 10 ))
	run -0 sp-decode "$OUT"
	run -0 jq -r 'select(.type == "probe" and .name == "ruby:method__entry") | .verdict' <<<"$output"
	assert_output --partial "method spans not active"
	run -0 sp-decode "$OUT"
	run -0 jq -r 'select(.type == "span_start" and .klass == "Array") | .method' <<<"$output"
	assert_line map
}

# Ruby 3.1's cmethod__entry probe calls rb_dtrace_setup(), which crashed
# Ruby ("[BUG] Segmentation fault" at ostruct.rb's alias) in about 2 runs
# of 5 of this program with --spans=ruby,ruby-c before: C methods are now
# the hook's c_call events, and Ruby's probes are not set.
@test "sp-record --spans=ruby,ruby-c and --spans=ruby-c: a Ruby that loads json (and ostruct) is not crashed; its C methods come from the hook, each call" {
	require_ruby
	local spans i
	cat > "$BATS_TEST_TMPDIR/j.rb" <<-'EOF'
	require 'json'
	require 'ostruct'
	def f; [3, 1, 2].sort; end
	10.times { f }
	puts JSON.generate(OpenStruct.new(a: 1).to_h)
	EOF
	for spans in ruby,ruby-c ruby-c; do
		for i in 1 2 3 4 5 6; do
			run --separate-stderr sp-record --no-samples --spans=$spans -o "$OUT" -- \
				ruby "$BATS_TEST_TMPDIR/j.rb"
			[ "$status" = 0 ] || fail "$spans, run $i: status $status: $output $stderr"
			assert_output '{"a":1}'
			[[ "$stderr" != *"[BUG]"* ]] || fail "$stderr"
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .klass == \"Array\" and .method == \"sort\") | .file' | wc -l"
			[ "$output" = 10 ] || fail "$spans, run $i: $output spans of Array#sort"
			# nothing said amiss: no dead hook, no stop without a start
			[[ "$stderr" != *"no method spans"* && "$stderr" != *"unprobed"* ]] || fail "$stderr"
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\") | .what'"
			assert_output ""
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"probe\") | .name' | sort -u"
			refute_line ruby:cmethod__entry
		done
	done
	# C methods only: no Ruby method spans
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .method' | wc -l"
	assert_output 0
}

@test "sp-record -p --spans=ruby-c: a Ruby whose hook marks C methods alone, attached later: the C methods open then are rebuilt, none of its stops is dropped" {
	require_ruby
	STACKPULSE_RUBY_EVENTS=c_call STACKPULSE_SPAN_RING=1 \
		RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" \
		ruby -e 'def f; [1].map { 2 }; end; loop { f; sleep 0.01 }' &
	SPIN+=($!)
	sleep 1
	run -0 --separate-stderr sp-record -v --no-samples --spans=ruby-c -p "${SPIN[0]}" -d 1 -o "$OUT"
	[[ "$stderr" == *"; 0 stops without a start dropped"* ]] || fail "$stderr"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | \"\(.klass)#\(.method) \(.flags // 0)\"' | sort | uniq -c | awk '{print \$2, \$3, (\$1 > 20 ? \"many\" : \$1)}'"
	assert_line "Array#map 0x1 many"
	# open when sp-record came, its start rebuilt (a C method 0x1,
	# reconstructed 0x2)
	assert_line "Kernel#loop 0x3 1"
	# Ruby methods are not marked: C methods alone
	refute_line --partial "Object#f"
}

@test "sp-record --spans=ruby: a method whose line is negative (eval's argument) is a span as any other, not taken for a rebuilt or StackPulse's own" {
	require_ruby
	run -0 --separate-stderr sp-record -v --no-samples --spans=ruby -o "$OUT" -- \
		ruby -e 'def f; end; eval("def g; h; end; def h; end", binding, "x.rb", -2147483648); 5.times { f; g }'
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | \"\(.method) \(.flags // 0)\"' | sort | uniq -c | awk '{print \$1, \$2, \$3}'"
	assert_line "5 f 0"
	assert_line "5 g 0"
	assert_line "5 h 0"
	[[ "$stderr" == *"; 0 stops without a start dropped"* ]] || fail "$stderr"
}

@test "sp-record -p --spans=ruby-c: a Ruby 3.1 started without sp-record gets no C-method probes, which can crash it: said naming it, counted in the spool, and it lives on loading ostruct" {
	require_ruby
	[[ "$(ruby -e 'print RUBY_VERSION')" == 3.1.* ]] || skip "Ruby $(ruby -e 'print RUBY_VERSION') is not 3.1"
	local go=$BATS_TEST_TMPDIR/go pid
	ruby --disable-gems -e '
$stdout.sync = true
$VERBOSE = nil
sleep 0.05 until File.exist?(ARGV[0])
20.times { |i| load "ostruct.rb"; [2, 1].sort }
puts "alive"
sleep 0.5' "$go" > "$BATS_TEST_TMPDIR/out" 2>&1 &
	pid=$!
	SPIN+=($pid)
	sp-record --no-samples --spans=ruby-c -p $pid -o "$OUT" 2> "$BATS_TEST_TMPDIR/err" &
	SPIN+=($!)
	wait_said "$BATS_TEST_TMPDIR/err" "C-method probes" || fail "$(cat "$BATS_TEST_TMPDIR/err")"
	touch "$go"
	wait $pid || fail "the Ruby died: $(cat "$BATS_TEST_TMPDIR/out")"
	wait "${SPIN[1]}" || true
	run -0 cat "$BATS_TEST_TMPDIR/out"
	assert_output alive
	run -0 grep -c "warning: spans: pid $pid (ruby): Ruby 3\.1\.[0-9]*'s C-method probes (cmethod__entry) can crash it" "$BATS_TEST_TMPDIR/err"
	assert_output 1
	run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"runtime\" and .mode != \"stacks\") | .mode'"
	assert_output '"none"'
	run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"lost\" and .what == \"unprobed\") | .pid'"
	assert_output "$pid"
}

@test "sp-record -p --spans=ruby-c: each Ruby 3.1 whose C-method probes are refused is named, not only the first: the one running at the attach and those its shell starts later" {
	require_ruby
	[[ "$(ruby -e 'print RUBY_VERSION')" == 3.1.* ]] || skip "Ruby $(ruby -e 'print RUBY_VERSION') is not 3.1"
	local go=$BATS_TEST_TMPDIR/go pid rubies
	# the first Ruby runs at the attach, the two others start after it
	sh -c 'ruby --disable-gems -e "sleep 0.05 until File.exist?(ARGV[0])" "$1"
for i in 1 2; do ruby --disable-gems -e "sleep 0.3; [2, 1].sort"; done' sh "$go" &
	pid=$!
	SPIN+=($pid)
	sleep 0.3
	sp-record --no-samples --spans=ruby-c -p $pid -o "$OUT" 2> "$BATS_TEST_TMPDIR/err" &
	SPIN+=($!)
	wait_said "$BATS_TEST_TMPDIR/err" "C-method probes" || fail "$(cat "$BATS_TEST_TMPDIR/err")"
	touch "$go"
	wait $pid
	wait "${SPIN[1]}" || true
	rubies=$(sp-decode "$OUT" | jq -r 'select(.type == "lost" and .what == "unprobed") | .pid' | sort -n)
	[ "$(wc -l <<<"$rubies")" = 3 ] || fail "$rubies"
	run -0 grep -c "C-method probes (cmethod__entry) can crash it" "$BATS_TEST_TMPDIR/err"
	assert_output 1
	run -0 grep -c "Ruby 3\.1\.[0-9]* too: no C-method probes set" "$BATS_TEST_TMPDIR/err"
	assert_output 2
	for p in $rubies; do
		grep -q "warning: spans: pid $p (ruby): Ruby 3\.1" "$BATS_TEST_TMPDIR/err" ||
			fail "pid $p not named: $(cat "$BATS_TEST_TMPDIR/err")"
	done
}

@test "sp-record --check -p: what a recording of a running Ruby 3.1 and Python gets, found by recording them: interpreted frames, C methods refused, hookless spans partial; exit 1 then, not ok" {
	require_ruby
	[[ "$(ruby -e 'print RUBY_VERSION')" == 3.1.* ]] || skip "Ruby $(ruby -e 'print RUBY_VERSION') is not 3.1"
	[ -x /usr/bin/python3.11 ] || skip "no /usr/bin/python3.11"
	local rb py
	ruby --disable-gems -e 'def spin(n) = (1..n).reduce(:+); loop { spin(5000) }' &
	rb=$!
	SPIN+=($rb)
	# a generator: what C enters fires the USDT probe without a profile function
	/usr/bin/python3.11 -c '
def leaf(n):
    return sum(i * i for i in range(n))
while True:
    leaf(20000)' &
	py=$!
	SPIN+=($py)
	sleep 0.5
	run --separate-stderr -1 sp-record --check --spans=ruby-c -p $rb
	assert_line "  pid $rb: missing: no spans for --spans=ruby-c (refused or not probed: see what sp-record said)"
	assert_line --regexp "^  pid $rb: ruby 3\.1\.[0-9]+ \(.*libruby.*\): interpreted frames; ruby 3\.1\.[0-9]+ \(.*\): spans none$"
	assert_line --regexp "^  pid $rb: [0-9]+ samples, [1-9][0-9]* with interpreted frames$"
	assert_line --regexp "^    sp-record: warning: spans: pid $rb \(ruby\): Ruby 3\.1\.[0-9]+'s C-method probes"
	# the canaries are said to be other processes
	assert_line --partial "the canaries below are new processes on this machine, not the -p ones"
	run --separate-stderr -1 sp-record --check --spans=python -p $py
	assert_line --regexp "^  pid $py: python 3\.11\.[0-9]+ \(/usr/bin/python3\.11\): interpreted frames; python 3\.11\.[0-9]+ \(/usr/bin/python3\.11\): spans profile-when-set,audit$"
	assert_line --regexp "^  pid $py: missing: [0-9]+ spans for --spans=python, (a partial view|none): its runtime's own probes, without StackPulse's hook, fire only while tracing is on"
	# without spans: interpreted frames of both, nothing missing
	run --separate-stderr -0 sp-record --check -p $rb,$py
	assert_line --regexp "^  pid $rb: [0-9]+ samples, [1-9][0-9]* with interpreted frames$"
	assert_line --regexp "^  pid $py: [0-9]+ samples, [1-9][0-9]* with interpreted frames$"
	refute_line --partial "missing"
}

@test "sp-record --check -p of a shell: the Ruby it started before the check is looked at too, and a Python asked for that is not there is missing" {
	require_ruby
	local sh
	sh -c 'ruby --disable-gems -e "loop { [3, 1, 2].sort }"; true' &
	sh=$!
	SPIN+=($sh)
	sleep 0.5
	run --separate-stderr -1 sp-record --check --spans=ruby -p $sh
	assert_line "  pid $sh: no Python or Ruby found in it (native stacks only)"
	assert_line --regexp "^  pid [0-9]+ \(started by a -p one\): ruby 3\.[0-9.]+ \(.*\): interpreted frames; ruby .*: spans method-when-traced$"
	assert_line --regexp "^  pid [0-9]+ \(started by a -p one\): missing: 0 spans for --spans=ruby, none: its runtime's own probes, without StackPulse's hook"
	run --separate-stderr -1 sp-record --check --spans=python -p $sh
	assert_line "  missing: no Python in the -p processes or those they started in that second, for --spans=python"
	pkill -P $sh ruby || true
}

@test "sp-record -p --spans=ruby-c with SP_RUBY_CMETHOD_PROBES=1: a Ruby that dies of a fault while Ruby's probes are set in it is said, naming it" {
	require_ruby
	local go=$BATS_TEST_TMPDIR/go
	ruby --disable-gems -e 'sleep 0.05 until File.exist?(ARGV[0]); 3.times { [1].map { 2 } }; Process.kill(:SEGV, $$)' \
		"$go" > /dev/null 2>&1 &
	SPIN+=($!)
	SP_RUBY_CMETHOD_PROBES=1 sp-record --no-samples --spans=ruby-c -p "${SPIN[0]}" -o "$OUT" \
		2> "$BATS_TEST_TMPDIR/err" &
	SPIN+=($!)
	wait_said "$BATS_TEST_TMPDIR/err" "was started without sp-record\|cmethod" || sleep 1
	sleep 0.5
	touch "$go"
	wait "${SPIN[1]}" || true
	run -0 grep -c "warning: spans: pid ${SPIN[0]} (ruby) died of signal [0-9]* ([A-Za-z ]*) while Ruby's C-method probes were set in it" \
		"$BATS_TEST_TMPDIR/err"
	assert_output 1
}

@test "sp-record -p: a Ruby and a Python started with the activator have method spans when attached" {
	require_ruby
	require_python
	RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" \
		ruby -e 'def f; [1].map { 2 }; end; loop { f; sleep 0.01 }' &
	rpid=$!
	PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import time
def f(): return 1
while True:
    f(); time.sleep(0.01)' &
	ppid=$!
	sleep 1
	run -0 sp-record --no-samples --spans=ruby,python -p $rpid -p $ppid -d 1 -o "$OUT"
	kill $rpid $ppid; wait $rpid $ppid || true
	run -0 probe_hits "stackpulse:rb__call"
	(( output > 10 ))
	run -0 probe_hits "stackpulse:py__call"
	(( output > 10 ))
	# named although the names were made before the recording
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | \"\\(.klass // \"\")#\\(.method)\"' | sort | uniq -c | awk '\$1 > 10 {print \$2}'"
	assert_output "Object#f
__main__#f"
}

# record_then_go SPANS GO: sp-record -v --spans=SPANS -p the shell
# ${SPIN[0]} (which waits for the file GO), to $OUT (stderr in
# $BATS_TEST_TMPDIR/err); once attached, GO is made; waits for the end.
record_then_go() {
	sp-record -v --no-samples --spans="$1" -p "${SPIN[0]}" -o "$OUT" 2> "$BATS_TEST_TMPDIR/err" &
	SPIN+=($!)
	wait_said "$BATS_TEST_TMPDIR/err" "pid ${SPIN[0]} was started without sp-record" ||
		fail "not attached: $(cat "$BATS_TEST_TMPDIR/err")"
	touch "$2"
	wait "${SPIN[1]}" || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
}

@test "sp-record -p: a shell whose environment has the activators starts a Ruby and pyenv's Python after the attach: both get their spans (their libraries found at their exec, as for a command)" {
	require_ruby
	local go=$BATS_TEST_TMPDIR/go py
	py=$(ls /root/.pyenv/versions/3.11*/bin/python3.11 2>/dev/null | head -1)
	RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" \
	PYTHONPATH="$SP_BIN/../runtime/python" bash -c '
while [ ! -e "$1" ]; do sleep 0.05; done
ruby -e "def f; end; 100.times { f }"
[ -z "$2" ] || "$2" -c "
def f(): pass
for i in range(100): f()"' sh "$go" "$py" &
	SPIN+=($!)
	record_then_go ruby,python "$go"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"f\") | .runtime' | sort | uniq -c | awk '{print \$1, \$2}'"
	if [ -n "$py" ]; then
		assert_output "100 python
100 ruby"
	else
		assert_output "100 ruby"
	fi
	run grep "no Ruby with USDT probes ran\|no Python with USDT probes ran" "$BATS_TEST_TMPDIR/err"
	assert_failure
}

@test "sp-record -p --spans=ruby,ruby-c: a shell without the activator starts a Ruby after the attach: its C methods' spans and its raises" {
	require_ruby
	local go=$BATS_TEST_TMPDIR/go
	bash -c '
while [ ! -e "$1" ]; do sleep 0.05; done
ruby --disable-gems -e "def g; raise %q(x); rescue; end; 3.times { g }; 5.times { [1].each {} }"' sh "$go" &
	SPIN+=($!)
	SP_RUBY_CMETHOD_PROBES=1 record_then_go ruby,ruby-c "$go"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"each\" and .file == \"-e\") | .method' | wc -l"
	[ "$output" = 5 ] || fail "$output spans of each: $(cat "$BATS_TEST_TMPDIR/err")"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_raise\" and .file == \"-e\") | .klass' | wc -l"
	assert_output 3
	# no method spans: warned once, when its probes went on, not again
	# at its exit (-v: the verdict as information); its probe record
	# has the verdict
	run -0 grep -c "warning: spans: pid [0-9]*: Ruby without sp-record's activator" "$BATS_TEST_TMPDIR/err"
	assert_output 1
	run grep "warning: .*method__entry: 0 hits" "$BATS_TEST_TMPDIR/err"
	assert_failure
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"probe\" and .name == \"ruby:method__entry\") | .verdict'"
	assert_output --partial "0 hits while ruby:cmethod__entry"
}

# The hooks name each method once (rt__name) and mark its calls with the
# name's address only. A name made before sp-record attached was read from
# the process's memory when its spans were read: a process gone by then
# (a short-lived one, a container's) had its spans unnamed. The hook tells
# a name again at its first use once a recorder listens.
@test "sp-record -p: names made before the recording are told again once it listens: a process gone before its spans are read has them named" {
	require_ruby
	require_python
	local go=$BATS_TEST_TMPDIR/go rec pid what
	for what in python ruby; do
		rm -f "$go"
		if [ $what = python ]; then
			PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import os, sys, time
def f(): return 1
def idle(): return os.path.exists(sys.argv[1])
f()
while not idle():
    time.sleep(0.01)
f(); f()
os._exit(0)' "$go" &
		else
			RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" ruby -e '
def f; 1; end
def idle(g); File.exist?(g); end
f
sleep 0.01 until idle(ARGV[0])
f; f
exit!(0)' "$go" &
		fi
		pid=$!
		SPIN+=($pid)
		sleep 1
		# (the last round's spool would show its spans until this
		# recording starts and empties it)
		rm -f "$OUT"
		sp-record --no-samples --spans=$what -p $pid -o "$OUT" 2> "$BATS_TEST_TMPDIR/err" &
		rec=$!
		SPIN+=($rec)
		spans_flow "$OUT" idle || fail "$what: no span of idle: $(cat "$BATS_TEST_TMPDIR/err")"
		: > "$go"
		wait $rec || fail "$what: sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
		# f's two calls after the attach: named, though f's name was made
		# before it and the process was gone when they were read
		run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .pid == $pid and (.flags // 0) == 0) | .method // \"UNNAMED\"' | sort | uniq -c"
		echo "$what: $output" >&3
		assert_line --regexp '^ +2 f$'
		refute_line --partial UNNAMED
	done
}

@test "sp-record -a --spans: processes started with the activator outside sp-record have their spans, running before and started later; others get none" {
	require_ruby
	require_python
	local later=$BATS_TEST_TMPDIR/later rec
	RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" \
		ruby -e 'def f; [1].map { 2 }; end; loop { f; sleep 0.01 }' &
	rpid=$!
	# a Python without the hook: nothing is attached to it
	$PY -c '
import time
def plain(): return 1
while True:
    plain(); time.sleep(0.01)' &
	npid=$!
	sleep 1
	sp-record -v -a --no-samples --spans=ruby,python -d 4 -o "$OUT" 2>"$BATS_TEST_TMPDIR/err" &
	rec=$!
	# started once the recording runs, with its hook (span rings too)
	sleep 1.5
	STACKPULSE_SPAN_RING=1 PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import time
def g(): return 1
while True:
    g(); time.sleep(0.01)' &
	ppid=$!
	wait $rec || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	kill $rpid $ppid $npid; wait $rpid $ppid $npid || true
	grep -q "spans: pid $rpid carries a runtime hook" "$BATS_TEST_TMPDIR/err" ||
		fail "$(cat "$BATS_TEST_TMPDIR/err")"
	grep -q "spans: pid $ppid carries a runtime hook" "$BATS_TEST_TMPDIR/err"
	! grep -q "pid $npid carries" "$BATS_TEST_TMPDIR/err"
	# before: "spans are recorded for commands and -p pids, not system-wide", no span
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | \"\(.pid) \(.klass // \"\")#\(.method)\"' | sort | uniq -c | awk '\$1 > 10 {print \$2, \$3}'"
	assert_line "$ppid __main__#g"
	assert_line "$rpid Object#f"
	refute_line --regexp "^$npid "
}

# Ends the -v recording $1 (into $OUT, its stderr in $2) of short programs
# ("pid:i ...", $3) that each wrote how many times it called f to
# $BATS_TEST_TMPDIR/n.i, and checks that each was taken as it first ran a
# marker and has spans of f, and one at least all of them (each waits 100
# ms before its calls, while it is taken: all of them, unless the machine
# is so loaded that the take took longer).
assert_short_taken() {
	local p n got full=0

	kill -INT $1
	wait $1 || fail "sp-record: $(cat "$2")"
	shift
	grep -q "^sp-record: -a --spans: [0-9]* processes that carry a runtime hook taken, [1-9][0-9]* of them as they first ran a marker" "$1" ||
		fail "$(cat "$1")"
	sp-decode "$OUT" > "$BATS_TEST_TMPDIR/run.json"
	for p in $2; do
		n=$(cat "$BATS_TEST_TMPDIR/n.${p#*:}")
		got=$(jq -c --argjson p "${p%:*}" 'select(.type == "span_start" and .pid == $p and .method == "f")' "$BATS_TEST_TMPDIR/run.json" | wc -l)
		echo "pid ${p%:*}: $got spans of f, of $n calls" >&3
		[ "$got" -gt 0 ] && [ "$got" -le "$n" ] || fail "pid ${p%:*}: $got spans of f, of $n"
		[ "$got" -lt "$n" ] || full=$((full + 1))
	done
	[ "$full" -gt 0 ] || fail "no short program has all its spans"
}

@test "sp-record -a --spans: a short program whose hook file is probed already is taken as it first runs a marker, not at the next look at /proc" {
	require_python
	# a hook file's probes shared by every process that maps it are
	# uprobe_multi links (Linux 6.6)
	grep -q " bpf_uprobe_multi_link_attach$" /proc/kallsyms ||
		skip "needs uprobe_multi links (Linux 6.6) for a hook file's shared probes"
	local err=$BATS_TEST_TMPDIR/err short=$BATS_TEST_TMPDIR/short.py rec lp pids="" i
	# runs its first marker (<module>), waits 100 ms (while it is taken),
	# runs f for 50 ms, then says how many times: gone before or soon after
	# sp-record's next look at /proc (every 200 ms), which took none of it
	# before
	cat > "$short" <<-'EOS'
	import sys, time
	n = 0
	def f(i): return i * 2
	time.sleep(0.1)
	t = time.time()
	while time.time() - t < 0.05:
	    for i in range(100): f(i)
	    n += 100
	print(n, file=sys.stderr)
	EOS
	# a long-running one with the hook: its hook file gets the shared probes
	PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import time
def idle(): return 1
while True:
    idle(); time.sleep(0.01)' &
	lp=$!
	SPIN+=($lp)
	sp-record -v -a --no-samples --events=none --spans=python -o "$OUT" 2> "$err" &
	rec=$!
	SPIN+=($rec)
	wait_said "$err" "spans: pid $lp carries a runtime hook" || fail "not taken: $(cat "$err")"
	for i in 1 2 3; do
		PYTHONPATH="$SP_BIN/../runtime/python" $PY "$short" 2> "$BATS_TEST_TMPDIR/n.$i" &
		pids="$pids $!:$i"
		wait $!
		sleep 0.3
	done
	assert_short_taken $rec "$err" "$pids"
}

@test "sp-record -a --spans: the first process to load sp-record's own hook is taken at its first marker: a short Ruby program has all its calls" {
	require_ruby
	grep -q " bpf_uprobe_multi_link_attach$" /proc/kallsyms ||
		skip "needs uprobe_multi links (Linux 6.6) for a hook file's shared probes"
	local err=$BATS_TEST_TMPDIR/err hook rec i pids=""
	hook=$(ls "$SP_BIN"/../runtime/ruby/*/stackpulse_hook.so | head -1)
	[ "$(stat -c %u "$hook")" = 0 ] || skip "the Ruby hook is not root's: -a takes no process by it"
	sp-record -v -a --no-samples --events=none --spans=ruby -o "$OUT" 2> "$err" &
	rec=$!
	SPIN+=($rec)
	wait_said "$err" "stackpulse_hook.so: probed for every process that loads it" ||
		fail "no shared probes: $(cat "$err")"
	sleep 0.3
	# no other process maps the hook: each is the first, taken at its first
	# marker (during its 100 ms wait), gone before or soon after the next
	# look at /proc
	for i in 1 2; do
		RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" ruby -e '
def f(i) i * 2 end
sleep 0.1
t = Time.now
n = 0
while Time.now - t < 0.05
  100.times { |i| f(i) }
  n += 100
end
$stderr.puts n' 2> "$BATS_TEST_TMPDIR/n.$i" &
		pids="$pids $!:$i"
		wait $!
		sleep 0.5
	done
	assert_short_taken $rec "$err" "$pids"
}

# Starts sp-record -v -a --spans=python into $OUT (its pid the last of
# SPIN, its stderr in $BATS_TEST_TMPDIR/err) and waits for its shared
# probes on sp-record's own hooks.
start_audit_recorder() {
	local err=$BATS_TEST_TMPDIR/err
	sp-record -v -a --no-samples --events=none --spans=python -o "$OUT" 2> "$err" &
	SPIN+=($!)
	wait_said "$err" "probed for every process that loads it" || fail "$(cat "$err")"
	sleep 1
}

# Stops the -a recorder REC (its stderr in $BATS_TEST_TMPDIR/err) and
# checks that it took pid PY, whose 20 opens of /etc/hostname are each one
# audit event with its path:  assert_audit_once REC PY
assert_audit_once() {
	local err=$BATS_TEST_TMPDIR/err n
	sleep 0.5
	kill -INT $1
	wait $1 || fail "sp-record: $(cat "$err")"
	grep -q "spans: pid $2 carries a runtime hook" "$err" || fail "$(cat "$err")"
	n=$(sp-decode "$OUT" | jq -c --argjson p $2 'select(.type == "event" and .pid == $p and .event == "audit" and .name == "open" and .args == "/etc/hostname")' | wc -l)
	[ "$n" = 20 ] || fail "$n audit events of the 20 opens"
}

@test "sp-record -a --spans=python: a Python with probes of its own has each audit event once, its hook's shared link beside it" {
	require_python
	grep -q " bpf_uprobe_multi_link_attach$" /proc/kallsyms ||
		skip "needs uprobe_multi links (Linux 6.6) for a hook file's shared probes"
	local err=$BATS_TEST_TMPDIR/err rec py
	[ "$(stat -c %u "$SP_BIN"/../runtime/python/_stackpulse_hook.cpython-*.so | head -1)" = 0 ] ||
		skip "the Python hook is not root's: it gets no shared probes"
	start_audit_recorder
	rec=${SPIN[-1]}
	# Debian's python3.11 has its own python:audit probe; its hook's
	# py__audit marker is the hook-only Pythons' (it was there twice)
	PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import time
time.sleep(0.3)
for i in range(20): open("/etc/hostname").close()
time.sleep(0.3)' &
	py=$!
	wait $py
	assert_audit_once $rec $py
}

@test "sp-record -a --spans=python: a hook-only Python that execs Debian's has each of the new image's audit events once" {
	require_python
	grep -q " bpf_uprobe_multi_link_attach$" /proc/kallsyms ||
		skip "needs uprobe_multi links (Linux 6.6) for a hook file's shared probes"
	local err=$BATS_TEST_TMPDIR/err rt=$BATS_TEST_TMPDIR/rt hookpy rec py
	hookpy=$(hook_only_python)
	[ -n "$hookpy" ] || skip "no CPython 3.11 without USDT probes here (pyenv's, for one)"
	# root's copy of the hook, not sp-record's own: its shared link is made
	# for the first process that maps it, with the markers that one asks
	# for, py__audit too (a Python without probes of its own asks for it)
	cp -R "$SP_BIN/../runtime" "$rt"
	chmod -R go-w "$rt"
	[ "$(stat -c %u "$rt"/python/_stackpulse_hook.cpython-*.so | head -1)" = 0 ] ||
		skip "the copy of the Python hook is not root's: it gets no shared probes"
	start_audit_recorder
	rec=${SPIN[-1]}
	# taken with the hook's audit marker, it becomes Debian's python3.11,
	# whose audit events come from its own python:audit probe
	PYTHONPATH="$rt/python" "$hookpy" -c '
import os, sys, time
time.sleep(0.4)
os.execv(sys.argv[1], [sys.argv[1], "-c", """
import time
time.sleep(0.4)
for i in range(20): open("/etc/hostname").close()
time.sleep(0.3)"""])' "$PY" &
	py=$!
	wait $py
	assert_audit_once $rec $py
}

@test "sp-record -a --spans: a process of nobody's that maps a hook of its own, or a group-writable one, is not recorded; one with root's hook is" {
	require_python
	require_cmd setpriv
	nobody_tools
	local own gw ok p n err
	# nobody's own copy (a tab in its directory's name: said escaped),
	# and root's copy that its group may write
	mkdir "$NOBODY_DIR/own	dir" "$NOBODY_DIR/gw"
	cp -R "$NOBODY_DIR/runtime/python" "$NOBODY_DIR/own	dir/"
	chown -R 65534:65534 "$NOBODY_DIR/own	dir"
	cp -R "$NOBODY_DIR/runtime/python" "$NOBODY_DIR/gw/"
	chmod g+w "$NOBODY_DIR"/gw/python/_stackpulse_hook.cpython-*.so
	nobody_py_loop "$NOBODY_DIR/own	dir/python"
	own=$!
	nobody_py_loop "$NOBODY_DIR/gw/python"
	gw=$!
	nobody_py_loop "$NOBODY_DIR/runtime/python"
	ok=$!
	SPIN+=($own $gw $ok)	# killed in teardown
	sleep 1
	# each mapped its hook
	for p in $own $gw $ok; do
		grep -q _stackpulse_hook "/proc/$p/maps" || fail "pid $p has no hook mapped"
	done
	sp-record -v -a --no-samples --spans=python -d 2.5 -o "$OUT" 2>"$BATS_TEST_TMPDIR/err" ||
		fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	err=$(cat "$BATS_TEST_TMPDIR/err")
	grep -q "spans: pid $ok carries a runtime hook" <<<"$err" || fail "$err"
	! grep -q "spans: pid $own carries" <<<"$err" || fail "$err"
	! grep -q "spans: pid $gw carries" <<<"$err" || fail "$err"
	# each refusal said once, naming the pid and the file
	n=$(grep -cF "spans: pid $own maps a runtime hook not root's, or writable by others than root: not recorded: $NOBODY_DIR/own\x09dir/python/_stackpulse_hook.cpython-" <<<"$err" || true)
	[ "$n" = 1 ] || fail "$n lines for pid $own: $err"
	n=$(grep -cF "spans: pid $gw maps a runtime hook not root's, or writable by others than root: not recorded: $NOBODY_DIR/gw/python/_stackpulse_hook.cpython-" <<<"$err" || true)
	[ "$n" = 1 ] || fail "$n lines for pid $gw: $err"
	# the spans: of root's hook's process only
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .pid' | sort -u"
	assert_output "$ok"
}

@test "sp-record -p: processes whose hooks write span rings (an earlier sp-record's) are read when attached" {
	require_ruby
	require_python
	STACKPULSE_SPAN_RING=1 RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" \
		ruby -e 'def f; [1].map { 2 }; end; loop { f; sleep 0.01 }' &
	rpid=$!
	STACKPULSE_SPAN_RING=1 PYTHONPATH="$SP_BIN/../runtime/python" $PY -c '
import time
def f(): return 1
while True:
    f(); time.sleep(0.01)' &
	ppid=$!
	sleep 1
	# their rings were announced before: found when announced again (each
	# second a ring is used)
	run -0 --separate-stderr sp-record -v --no-samples --spans=ruby,python -p $rpid -p $ppid \
		-d 2.5 -o "$OUT"
	kill $rpid $ppid; wait $rpid $ppid || true
	[[ "$stderr" != *"span marks lost"* ]] || fail "$stderr"
	run -0 probe_hits "stackpulse:rt__ring"
	(( output >= 1 ))
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | \"\\(.klass // \"\")#\\(.method)\"' | sort | uniq -c | awk '\$1 > 10 {print \$2}'"
	assert_output "Object#f
__main__#f"
}

@test "sp-record --spans: a damaged hook file: one warning naming it, the runtimes' own probes instead" {
	require_ruby
	require_python
	rt=$BATS_TEST_TMPDIR/runtime
	cp -r "$SP_BIN/../runtime" "$rt"
	echo garbage > "$rt/ruby/3.1/stackpulse_hook.so"
	for f in "$rt"/python/_stackpulse_hook.cpython-*.so; do echo garbage > "$f"; done
	SP_RUNTIME_DIR=$rt run -0 --separate-stderr sp-record --no-samples --spans=ruby \
		-o "$OUT" -- ruby "$RUBY_FIX"
	[[ "$stderr" == *"spans: '$rt/ruby/3.1/stackpulse_hook.so' has no stackpulse:rb__call marker: recording Ruby's own probes instead"* ]]
	[[ "$stderr" == *"stackpulse: cannot load $rt/ruby/3.1/stackpulse_hook.so"* ]]
	# nothing lost: the same tree, from Ruby's probes and the activator's fallback hook
	assert_ruby_tree
	run -0 probe_hits "ruby:method__entry"
	(( output >= 10 ))
	SP_RUNTIME_DIR=$rt run -0 --separate-stderr sp-record --no-samples --spans=python \
		-o "$OUT" -- $PY "$PY_FIX"
	[[ "$stderr" == *"has no stackpulse:py__call marker: recording Python's own probes instead"* ]]
	assert_python_tree
}

@test "sp-record --span-func: a missing binary or function is an error naming it" {
	require_root
	run -2 --separate-stderr sp-record --span-func=/nonexistent/bin:main -o "$OUT" -- true
	assert_equal "$stderr" "sp-record: error: --span-func '/nonexistent/bin:main': cannot open '/nonexistent/bin': No such file or directory"
	run -2 --separate-stderr sp-record --span-func=/bin/true:no_such_function_xyz -o "$OUT" -- true
	[[ "$stderr" == *"no function 'no_such_function_xyz' in '"*"true'"* ]]
}

@test "sp-record --spans: bad words and malformed --span-func are usage errors" {
	run -64 --separate-stderr sp-record --spans=ruby,bogus -- true
	[[ "$stderr" == *"invalid --spans word 'bogus'"* ]]
	run -64 --separate-stderr sp-record --span-func=nocolon -- true
	[[ "$stderr" == *"invalid --span-func 'nocolon'"* ]]
}

@test "sp-record --spans: a span record costs a few bytes in the spool" {
	require_ruby
	run -0 sp-record --spans=ruby --no-samples -o "$OUT" -- ruby -e 'def f; 1; end; 20000.times { f }'
	n=$(sp-decode "$OUT" | jq -c 'select(.type | startswith("span_"))' | wc -l)
	(( n >= 40000 ))
	# class, method and file are interned once, not carried by each mark
	strings=$(sp-decode "$OUT" | jq -c 'select(.type == "string")' | wc -l)
	(( strings < 1000 ))
	size=$(stat -c %s "$OUT")
	(( size / n < 24 ))
}

@test "sp-record --spans=python: a Python built without probes is named at the end" {
	require_root
	# a copy of a binary without USDT notes stands for a runtime built
	# without --enable-dtrace
	readelf -n /bin/true | grep -q stapsdt && skip "/bin/true has USDT notes"
	run -0 --separate-stderr sp-record --no-samples --spans=python -o "$OUT" -- /bin/true
	assert_equal "$stderr" "sp-record: warning: --spans=python: no Python with USDT probes ran in the recorded processes (a Python built without them, as pyenv's, has function spans only when started under sp-record, which loads its hook)"
	run -0 sp-decode "$OUT"
	refute_output --partial '"type":"runtime"'
}

@test "sp-record --spans=python: generators nest, each resume a start and each yield a stop" {
	require_python
	cat > "$BATS_TEST_TMPDIR/gen.py" <<'PY'
def gen():
    yield 1
    yield 2


def consume():
    for x in gen():
        leaf(x)


def leaf(x):
    return x


consume()
PY
	run -0 --separate-stderr sp-record -v --no-samples --spans=python -o "$OUT" -- \
		$PY "$BATS_TEST_TMPDIR/gen.py"
	local rec_err=$stderr
	run -0 tree gen.py
	[ -n "$output" ] || fail "no spans; sp-record said: $rec_err"
	assert_output "p1/main span_start __main__#<module> 0 1
p1/main span_start __main__#consume 6 2
p1/main span_start __main__#gen 1 3
p1/main span_stop __main__#gen 2 3
p1/main span_start __main__#leaf 11 3
p1/main span_stop __main__#leaf 12 3
p1/main span_start __main__#gen 2 3
p1/main span_stop __main__#gen 3 3
p1/main span_start __main__#leaf 11 3
p1/main span_stop __main__#leaf 12 3
p1/main span_start __main__#gen 3 3
p1/main span_stop __main__#gen 3 3
p1/main span_stop __main__#consume 7 2
p1/main span_stop __main__#<module> 15 1"
	# consume's implicit return is on the for line (dis agrees)
	run -0 $PY -c "import dis; ns = {}; exec(open('$BATS_TEST_TMPDIR/gen.py').read(), ns); print([i.positions.lineno for i in dis.get_instructions(ns['consume']) if i.opname == 'RETURN_VALUE'])"
	assert_output "[7]"
}

@test "sp-record --spans=python: a span is named by its module and qualified name" {
	require_python
	# before: the bare function name ("run", "inner", "encode"), the same
	# for every class and module that has one
	cat > "$BATS_TEST_TMPDIR/qual.py" <<'PY'
import json


class Box:
    def run(self):
        def inner():
            return json.dumps([1])
        return inner()


Box().run()
PY
	run -0 --separate-stderr sp-record --no-samples --spans=python -o "$OUT" -- \
		$PY "$BATS_TEST_TMPDIR/qual.py"
	run -0 tree qual.py
	assert_output "p1/main span_start __main__#<module> 0 1
p1/main span_start __main__#Box 4 2
p1/main span_stop __main__#Box 5 2
p1/main span_start __main__#Box.run 5 2
p1/main span_start __main__#Box.run.<locals>.inner 6 3
p1/main span_stop __main__#Box.run.<locals>.inner 7 3
p1/main span_stop __main__#Box.run 8 2
p1/main span_stop __main__#<module> 11 1"
	# a module's own module, not the caller's
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and (.file // \"\" | endswith(\"/json/encoder.py\"))) | \"\\(.klass) \\(.method)\"' | sort -u"
	assert_line "json.encoder JSONEncoder.encode"
	# shown as Python names it: module.qualname
	run -0 bash -c "sp-correlate '$OUT' 2>/dev/null | sp-tree --stable"
	assert_output --partial "[SPAN __main__.Box.run.<locals>.inner at=qual.py:6]"
	assert_output --partial "[SPAN json.encoder.JSONEncoder.encode at=encoder.py:"
}

@test "sp-record --spans: a process that is no runtime gets no probes and is not held at exec or fork" {
	require_python
	# Python is no runtime for --spans=ruby: nothing to attach, its forks
	# run at once. It counts how often its children were seen stopped
	# (waitpid WUNTRACED): the first exec of /bin/true is held while
	# sp-record reads the file, the four after it are not held at all.
	cat >"$BATS_TEST_TMPDIR/spawn.py" <<-'EOF'
	import os
	stops = 0
	for i in range(5):
	    pid = os.fork()
	    if pid == 0:
	        os.execv("/bin/true", ["true"])
	    while True:
	        _, st = os.waitpid(pid, os.WUNTRACED)
	        if os.WIFSTOPPED(st):
	            stops += 1
	            continue
	        break
	print("stops", stops)
	EOF
	run -0 --separate-stderr sp-record -v --spans=ruby --events=none --interp=none -o "$OUT" -- $PY "$BATS_TEST_TMPDIR/spawn.py"
	# at most the first exec (it is continued at once, so even that one
	# is often gone before the parent looks)
	[[ "$output" == "stops 0" || "$output" == "stops 1" ]] || fail "$output"
	[[ "$stderr" == *"execs: 2 held to look for runtimes, 4 released at once"*"0 got probes; forks: 5, 0 held"* ]] ||
		fail "$stderr"
	# no runtime and no probe records: nothing was attached (interpreted
	# frames, off here, would name the Python they read)
	run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"runtime\" or .type == \"probe\")'"
	assert_output ""
}

@test "sp-record --spans: without BPF privileges the default warns once and records; a named mode fails" {
	require_root
	require_cmd setpriv
	d=$(mktemp -d /tmp/sp-nonroot.XXXXXX)
	chmod 777 "$d"
	nobody_tools
	nobody=(env -u RUBYOPT setpriv --reuid=65534 --regid=65534 --clear-groups)
	run -0 --separate-stderr "${nobody[@]}" "$NOBODY_BIN/sp-record" -o "$d/a.sp" --events=none -- \
		/bin/sh -c 'echo "RUBYOPT=$RUBYOPT"'
	# no activator is set when no spans can be recorded
	assert_output "RUBYOPT="
	run -0 grep -c "spans" <<<"$stderr"
	assert_output 1
	run -0 sp-decode "$d/a.sp"
	# the header does not claim spans, and says why they are missing
	run -0 jq -r 'select(.type == "header") | "\(.features) | \(.unavailable)"' <<<"$output"
	refute_output --partial "spans=ruby"
	assert_output --partial "spans(needs CAP_BPF"
	run -2 "${nobody[@]}" "$NOBODY_BIN/sp-record" -o "$d/b.sp" --events=none --spans=ruby -- /bin/true
	assert_output --partial "spans: loading BPF programs needs root"
	rm -rf "$d" "$NOBODY_DIR"
}

@test "sp-record --check --spans: a canary program per mode says whether its spans arrive" {
	require_root
	require_ruby
	require_python
	run -0 sp-record --check --spans=ruby,usdt
	assert_line --regexp '^  ruby +ok: stackpulse_canary seen \(ruby 3\.1\.[0-9]+, [^;]*libruby[^;]*; stackpulse:rb__call [1-9][0-9]*, stackpulse:rb__return [1-9]'
	assert_line '  usdt          ok: stackpulse_canary seen (stackpulse:span__begin 1, stackpulse:span__end 1)'
	# no python spans line (the interpreted-frames row names python3.11)
	refute_line --regexp '^  python '
	# Debian's Python first on PATH: spans from the hook's markers
	run -0 env PATH="${PY%/*}:$PATH" sp-record --check --spans=python
	assert_line --regexp '^  python +ok: stackpulse_canary seen \(python 3\.11\.[0-9]+, /usr/bin/python3\.11; stackpulse:py__call [1-9][0-9]*, stackpulse:py__return [1-9]'
	# and a dead probe: without the
	# activator, CPython 3.11 fires no function entries; exit 1
	run -1 env PATH="${PY%/*}:$PATH" STACKPULSE_PY_HOOK=none sp-record --check --spans=python
	assert_line --regexp '^  python +no spans: stackpulse_canary not seen: python:function__entry: [0-9]+ hits while python:function__return [1-9][0-9]*: function entries not active'
	assert_line --regexp '^  python-audit +ok: open seen \(python 3\.11\.[0-9]+, /usr/bin/python3\.11; '
	# a program that is not installed is skipped, not failed
	run -0 env PATH=/nonexistent "$SP_BIN/sp-record" --check --spans=ruby
	assert_line "  ruby          skipped: 'ruby' not found"
	# without --spans, no canary runs
	run -0 sp-record --check
	refute_line --partial canary
}

# The depth-1 span starts of $OUT's main thread as "klass.method flags",
# and the lost records' kinds.
startup_spans() {
	sp-decode "$OUT" | jq -r 'select(.type == "span_start") |
		"\(.klass // "").\(.method) \(.depth) \(.flags // "0")"'
}

# The first depth-1 span of $OUT's main thread to start, as
# "klass.method file flags".
first_main_span() {
	sp-decode "$OUT" | jq -rs '[.[] | select(.type == "span_start" and .depth == 1 and
		.tid == .pid)] | sort_by(.time) | first | "\(.klass).\(.method) \(.file) \(.flags // "0")"'
}

# Python's start-up (site, sitecustomize, the activator's imports) is
# Python's and StackPulse's, not the program's, and so is what the
# interpreter runs after it and before the program (the path hooks asked
# for sys.path[0], __main__'s loader): $1... runs prog.py, and -m pkg.
check_startup_left_out() {
	local prog=$BATS_TEST_TMPDIR/prog.py
	printf 'def work(n):\n    return sum(range(n))\n\ndef main():\n    import imported\n    for i in range(3):\n        work(1000)\n\nmain()\n' > "$prog"
	printf 'def init():\n    return 1\n\ninit()\n' > "$BATS_TEST_TMPDIR/imported.py"
	run --separate-stderr -0 sp-record --spans=python --no-samples -o "$OUT" -- "$@" "$prog"
	run -0 first_main_span
	assert_output "__main__.<module> $prog 0"
	run -0 startup_spans
	# the program's own, as written above: <module> at the top, main, work
	assert_line "__main__.<module> 1 0"
	assert_line "__main__.main 2 0"
	assert_line "__main__.work 3 0"
	# the import main makes: the import system's frames and the module's
	assert_line --regexp '\._find_and_load 3 0$'
	assert_line --regexp '^imported\.<module> ([4-9]|[1-9][0-9]) 0$'
	assert_line --regexp '^imported\.init ([5-9]|[1-9][0-9]) 0$'
	# no path hook (zipimporter, FileFinder's) nor loader made for
	# __main__ before it: only the import above runs them (deeper)
	refute_line --regexp '(zipimporter|path_hook|FileLoader)[^ ]* [12] '
	# nothing of site, of the activator (sitecustomize) nor reconstructed
	refute_line --regexp "^(site|sitecustomize)\\."
	refute_line --regexp " 0x2\$"
	# and no stop lost its start
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\") | .what'"
	[[ "$output" != *span_stops* ]] || fail "stops without a start: $output"
	run -0 sp-tree "$OUT"
	refute_line --partial "reconstructed"
	refute_line --regexp "SPAN tid=[0-9]+ (site|sitecustomize)\\."
	assert_line --regexp '^├─ \[SPAN tid=[0-9]+ __main__\.<module> at=prog\.py '
	# STACKPULSE_PY_STARTUP=1: reported as before, open when the hook came
	STACKPULSE_PY_STARTUP=1 run --separate-stderr -0 sp-record --spans=python --no-samples \
		-o "$OUT" -- "$@" "$prog"
	run -0 startup_spans
	assert_line --regexp "^site\\.main [0-9]+ 0x2\$"
	assert_line --regexp "^sitecustomize\\._stackpulse_activate [0-9]+ 0x2\$"
	# and what ran before the program, as seen
	assert_line --regexp '^zipimport\.zipimporter\.__init__ 1 0$'
	assert_line --regexp '\.path_hook_for_FileFinder 1 0$'
	run -0 first_main_span
	refute_output --regexp '^__main__\.'
	# -m: the program starts at runpy's runner, which imports the
	# module's package (the program's own code, kept) before its __main__;
	# the import of runpy before it is left out, and so are runpy's own
	# frames under the runner (_get_module_details, _run_code): the
	# package's import and __main__'s <module> are the runner's children.
	# A runpy function the program calls (run_path) is the program's.
	mkdir "$BATS_TEST_TMPDIR/pkg"
	printf 'def init():\n    return 1\n\ninit()\n' > "$BATS_TEST_TMPDIR/pkg/__init__.py"
	printf 'import runpy\n\ndef main():\n    runpy.run_path("side.py")\n    return 2\n\nmain()\n' \
		> "$BATS_TEST_TMPDIR/pkg/__main__.py"
	printf 'def side():\n    return 3\n\nside()\n' > "$BATS_TEST_TMPDIR/side.py"
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr -0 sp-record --spans=python --no-samples -o "$OUT" -- "$@" -m pkg
	run -0 first_main_span
	assert_output --regexp '^runpy\._run_module_as_main .*runpy.* 0$'
	run -0 startup_spans
	assert_line "runpy._run_module_as_main 1 0"
	assert_line --regexp '\._find_and_load 2 0$'
	assert_line --regexp '^pkg\.<module> ([3-9]|[1-9][0-9]) 0$'
	assert_line --regexp '^pkg\.init ([4-9]|[1-9][0-9]) 0$'
	assert_line "__main__.<module> 2 0"
	assert_line "__main__.main 3 0"
	refute_line --regexp '^runpy\.[^ ]+ [23] '
	# run_path's own frames, under main, and the script it runs
	assert_line "runpy.run_path 4 0"
	assert_line --regexp '^runpy\._run_code ([5-9]|[1-9][0-9]) 0$'
	assert_line --regexp '^<run_path>\.side ([6-9]|[1-9][0-9]) 0$'
	refute_line --regexp ' 0x2$'
	run -0 sp-tree "$OUT"
	refute_line --partial "reconstructed"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\") | .what'"
	[[ "$output" != *span_stops* ]] || fail "stops without a start: $output"
	# STACKPULSE_PY_STARTUP=1: runpy's frames under the runner too
	STACKPULSE_PY_STARTUP=1 run --separate-stderr -0 sp-record --spans=python --no-samples \
		-o "$OUT" -- "$@" -m pkg
	run -0 startup_spans
	assert_line "runpy._get_module_details 2 0"
	assert_line "runpy._run_code 2 0"
}

@test "sp-record --spans=python: Python's start-up and the activator are left out, the tree starts at the program (Debian's python3)" {
	require_python
	check_startup_left_out /usr/bin/python3
}

@test "sp-record --spans=python: Python's start-up and the activator are left out (pyenv's python3 shim)" {
	require_root
	[ -x /root/.pyenv/shims/python3 ] || skip "no pyenv python3 shim"
	[[ "$(/root/.pyenv/shims/python3 --version 2>&1)" == "Python 3.11."* ]] ||
		skip "pyenv's python3 is not 3.11"
	PATH=/root/.pyenv/shims:$PATH check_startup_left_out python3
}
