#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record --spans through wrappers and late finds: pyenv's python3 shim (a
# bash script that execs the interpreter about 80 ms in), a #!/bin/sh script
# that execs Debian's python3, a Python attached with -p before it loads the
# activator. Each case runs several times: what went wrong was a race
# between the BPF object's load, the exec and the hook's load.
load helper

APP=$FIXTURES/app.py
SHIM=/root/.pyenv/shims/python3
PY=/usr/bin/python3.11
RUBY=/usr/bin/ruby
RUNS=5

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
	STARTED=()
}

teardown() {
	kill_started "${STARTED[@]}"
}

require_python() {
	require_root
	[ -x $PY ] || skip "needs Debian's $PY"
	[ -d "$SP_BIN/../runtime/python" ] || skip "needs the Python hook (python3-dev)"
}

require_shim() {
	require_python
	[ -x $SHIM ] || skip "needs pyenv's shim $SHIM"
	[ "$($SHIM -c 'import sys; print(sys.version_info[:2] == (3, 11))' 2>/dev/null)" = True ] ||
		skip "pyenv's python3 is not 3.11 (the hook's version)"
}

# "method depth flags" of each span start of app.py in $OUT, and the
# number of its span starts, in one line per start.
app_starts() {
	sp-decode "$OUT" | jq -r --arg f "$APP" '
		select(.type == "span_start" and (.file // "" | endswith("app.py")))
		| "\(.method) \(.depth) \(.flags // "0")"'
}

# Every span of app.py is there: <module>, main, 100 of work and of leaf.
assert_app_spans() {
	local starts
	starts=$(app_starts)
	run -0 grep -c "^<module> 1 " <<<"$starts"
	assert_output 1
	run -0 grep -c "^main 2 " <<<"$starts"
	assert_output 1
	run -0 grep -c "^work 3 " <<<"$starts"
	assert_output 100
	run -0 grep -c "^leaf 4 " <<<"$starts"
	assert_output 100
}

@test "sp-record --spans=auto: through pyenv's python3 shim every span arrives, <module> and main too ($RUNS runs)" {
	require_shim
	local round
	for round in $(seq "$RUNS"); do
		run --separate-stderr -0 sp-record --spans=auto --no-samples -o "$OUT" -- $SHIM "$APP"
		assert_app_spans
		# its libpython is the file found at exec (its hook has no
		# probe in it): the look at its maps says nothing
		[[ "$stderr" != *"ld.so took"* ]] || fail "$stderr"
	done
}

@test "sp-record --spans=auto: through a #!/bin/sh wrapper that execs python3 every span arrives ($RUNS runs)" {
	require_python
	local wrap=$BATS_TEST_TMPDIR/python-wrapper round
	printf '#!/bin/sh\nexec %s "$@"\n' "$PY" > "$wrap"
	chmod +x "$wrap"
	for round in $(seq "$RUNS"); do
		run --separate-stderr -0 sp-record --spans=auto --no-samples -o "$OUT" -- "$wrap" "$APP"
		assert_app_spans
	done
}

# A Python started with the activator's environment that loads it only
# after sp-record -p attached (-S skips it at start-up): it waits for the
# file go, then imports sitecustomize and runs app.py. Runs $1.
late_activator() {
	local py=$1 go=$BATS_TEST_TMPDIR/go rec pid starts
	rm -f "$go"
	PYTHONPATH="$SP_BIN/../runtime/python" STACKPULSE_SPAN_RING=1 $py -S -c '
import os, sys, time
while not os.path.exists(sys.argv[1]): time.sleep(0.01)
import sitecustomize
exec(compile(open(sys.argv[2]).read(), sys.argv[2], "exec"))' "$go" "$APP" &
	pid=$!
	sleep 0.3
	sp-record -v --spans=auto --no-samples -p $pid -o "$OUT" 2>"$BATS_TEST_TMPDIR/err" &
	rec=$!
	# its spans' probes are on (a loaded machine takes seconds to load them)
	wait_said "$BATS_TEST_TMPDIR/err" "spans: following" 60 ||
		fail "not attached: $(cat "$BATS_TEST_TMPDIR/err")"
	touch "$go"
	wait $pid
	wait $rec || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	# before: "0 span marks" with a Python without probes, and no warning
	run -0 grep -E "spans: [1-9][0-9]* span marks" "$BATS_TEST_TMPDIR/err"
	# the -c program's <module> was open when the hook came: its start is
	# reconstructed, flagged synthetic, and its stop is not dropped
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .depth == 1)
		| \"\(.method) \(.file) \(.flags // 0)\"' | head -1"
	assert_output "<module> <string> 0x2"
	# app.py itself ran after it: every span, one deeper
	starts=$(app_starts)
	run -0 grep -c "^<module> 2 0$" <<<"$starts"
	assert_output 1
	run -0 grep -c "^work 4 0$" <<<"$starts"
	assert_output 100
	run -0 grep -c "^leaf 5 0$" <<<"$starts"
	assert_output 100
}

@test "sp-record -p: a Python that loads the activator after the attach gets its spans, the frames open then reconstructed (Debian's, $RUNS runs)" {
	require_python
	local round
	for round in $(seq "$RUNS"); do
		late_activator $PY
	done
}

@test "sp-record -p: the same with pyenv's Python 3.11, which has no USDT probes of its own ($RUNS runs)" {
	require_shim
	local py round
	py=$($SHIM -c 'import sys; print(sys.executable)')
	for round in $(seq "$RUNS"); do
		late_activator "$py"
	done
}

# Runs CMD... FIXTURE ready go in the background, attaches sp-record -v -p
# to it once it wrote ready, and makes go once the spool holds a span of
# tick (the spans flow: the recording found it); sp-record's stderr is in
# $BATS_TEST_TMPDIR/err:  attach_found FIXTURE CMD...
attach_found() {
	local fix=$1 ready=$BATS_TEST_TMPDIR/ready go=$BATS_TEST_TMPDIR/go pid rec i
	shift
	rm -f "$ready" "$go"
	"$@" "$fix" "$ready" "$go" &
	pid=$!
	for i in $(seq 600); do [ -e "$ready" ] && break; sleep 0.1; done
	[ -e "$ready" ] || fail "$fix did not start"
	local started=$SECONDS
	sp-record -v --spans=auto --no-samples -p $pid -o "$OUT" 2>"$BATS_TEST_TMPDIR/err" &
	rec=$!
	for i in $(seq 600); do
		sp-decode "$OUT" 2>/dev/null | jq -r 'select(.type == "span_start") | .method' 2>/dev/null |
			grep -qx tick && break
		sleep 0.1
	done
	touch "$go"
	wait $pid
	wait $rec || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	sp-decode "$OUT" | jq -r 'select(.type == "span_start") | .method' | grep -qx tick ||
		fail "no span of tick in $((SECONDS - started)) s; sp-record said: $(cat "$BATS_TEST_TMPDIR/err")"
}

# A program of deep.py or deep.rb, run by CMD with its hook and span rings,
# found by sp-record -p while it is inside nested functions or methods:
#   late_spans FIXTURE BEYOND NAME... -- CMD...
# NAME...: the ones open then, outermost first, as sp-tree names them;
# BEYOND: a regex of those the thread may be in beyond them then (its
# mark after the recording came may be a return). The fixture writes
# $BATS_TEST_TMPDIR/ready, then calls tick every 10 ms until the file go
# exists, which is made once the spool holds a tick's span (the spans
# flow: the recording found it).
late_spans() {
	local fix=$FIXTURES/$1 beyond=$2
	local base=${1##*/} names=() methods="" depths="" n name
	shift 2
	while [ "$1" != -- ]; do
		names+=("$1")
		methods+="${1##*[#.]}"$'\n'
		depths+="${1##*[#.]} $(( ${#names[@]} ))"$'\n'
		shift
	done
	shift
	n=${#names[@]}
	attach_found "$fix" "$@"
	# the frames open when the recording found the thread: their starts
	# reconstructed (flag 2), outermost first, named and nested
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and ((.flags // \"0\") == \"0x2\"))
		| \"\(.method) \(.depth)\"'"
	[ "$(head -$n <<<"$output")"$'\n' = "$depths" ] || fail "reconstructed starts: $output"
	[ "$(sed -n "$((n + 1)),\$p" <<<"$output" | grep -cv -E "^($beyond) $((n + 1))\$")" = 0 ] ||
		fail "reconstructed starts: $output"
	# and their stops found them: none dropped
	run -0 grep -E "spans: [0-9]+ span marks, .*; 0 stops without a start dropped" \
		"$BATS_TEST_TMPDIR/err"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\" and .what == \"span_stops\") | .count'"
	assert_output ""
	# sp-correlate: spans flagged reconstructed that stopped, each the
	# parent of the next, the last the parent of the ticks
	run -0 bash -c "sp-correlate '$OUT' | sp-decode | jq -r 'select(.type == \"span\")
		| \"\(.id) \(.parent) \(.method) \(.end // \"stopped\") \(.flags // \"0\")\"'"
	local ids
	ids=$(awk '$5 == "0x2" { print $1, $2, $3, $4 }' <<<"$output" | head -$n)
	[ "$(awk '{ print $3, $4 }' <<<"$ids")"$'\n' = "$(sed 's/$/ stopped/' <<<"${methods%$'\n'}")"$'\n' ] ||
		fail "reconstructed spans: $ids"
	[ "$(awk 'NR > 1 && $2 != prev { bad = 1 } { prev = $1 } END { print bad + 0 }' <<<"$ids")" = 0 ] ||
		fail "not nested: $ids"
	local last_id
	last_id=$(tail -1 <<<"$ids" | awk '{ print $1 }')
	[ "$(awk -v p="$last_id" '$3 == "tick" && $2 != p' <<<"$output" | wc -l)" = 0 ] ||
		fail "a tick outside ${names[n - 1]}: $output"
	# the flag round-trips JSON -> spool -> JSON
	sp-correlate "$OUT" | sp-decode > "$BATS_TEST_TMPDIR/c.json"
	sp-decode -e "$BATS_TEST_TMPDIR/c.json" > "$BATS_TEST_TMPDIR/c.sp"
	run -0 bash -c "sp-decode '$BATS_TEST_TMPDIR/c.sp' | jq -r 'select(.type == \"span\" and .flags == \"0x2\") | .method' | head -$n"
	assert_output "${methods%$'\n'}"
	# sp-tree says so, and the durations are lower bounds
	run -0 sp-tree "$OUT"
	for name in "${names[@]}"; do
		assert_line --regexp "^[│├└─ ]*\[SPAN tid=[0-9]+ ${name//./\\.} at=${base//./\\.}:[0-9]+ dur=>=[^]]*\] \(reconstructed: open when found\)\$"
	done
}

# deep.py run by $1... (after environment words, if any) with the activator
# and span rings, found inside main() -> outer() -> inner()
late_python() {
	late_spans deep.py 'tick|exists' '__main__.<module>' __main__.main __main__.outer \
		__main__.inner -- env PYTHONPATH="$SP_BIN/../runtime/python" STACKPULSE_SPAN_RING=1 "$@"
}

@test "sp-record -p: a Python inside nested functions when found gets them as reconstructed spans, their stops matched" {
	require_python
	late_python $PY
}

@test "sp-record -p: the same through a #!/bin/sh wrapper that execs python3" {
	require_python
	local wrap=$BATS_TEST_TMPDIR/python-wrapper
	printf '#!/bin/sh\nexec %s "$@"\n' "$PY" > "$wrap"
	chmod +x "$wrap"
	late_python "$wrap"
}

@test "sp-record -p: the same through pyenv's python3 shim" {
	require_shim
	late_python $SHIM
}

@test "sp-record -p: pyenv's Python with more than 16 libraries mapped before its libpython still gets its hook's spans" {
	require_shim
	local py
	py=$($SHIM -c 'import sys; print(sys.executable)')
	attach_found "$FIXTURES/many_libs.py" env PYTHONPATH="$SP_BIN/../runtime/python" \
		STACKPULSE_SPAN_RING=1 "$py"
	# the layout this is about: more libraries listed before libpython in
	# its maps than sp-record once looked at (16)
	(( $(cat "$BATS_TEST_TMPDIR/ready") > 16 )) ||
		skip "the extension modules are not mapped before libpython here ($(cat "$BATS_TEST_TMPDIR/ready"))"
	run -0 grep -E "spans: pid [0-9]+: stackpulse:py__call [1-9]" "$BATS_TEST_TMPDIR/err"
}

@test "sp-record -p: pyenv's Python without the activator (no hook, no USDT probes) is told so once, and counted in the spool" {
	require_shim
	local py pid i
	py=$($SHIM -c 'import sys; print(sys.executable)')
	rm -f "$BATS_TEST_TMPDIR/ready"
	"$py" "$FIXTURES/many_libs.py" "$BATS_TEST_TMPDIR/ready" "$BATS_TEST_TMPDIR/go" 3>&- &
	pid=$!
	for i in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/ready" ] && break; sleep 0.05; done
	run --separate-stderr -0 sp-record --spans=auto --no-samples -p $pid -d 1 -o "$OUT"
	touch "$BATS_TEST_TMPDIR/go"
	wait $pid
	[ "$(grep -c "pid $pid: Python without sp-record's activator .*no USDT probes" <<<"$stderr")" = 1 ] ||
		fail "$stderr"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"runtime\" and .mode != \"stacks\") | \"\(.pid) \(.runtime) \(.mode) \(.library)\"'"
	assert_output --regexp "^$pid python none .*/libpython3\.11[^/]*\$"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\" and .what == \"unprobed\") | \"\(.pid) \(.count)\"'"
	assert_output "$pid 1"
}

@test "sp-record -p, default spans: pyenv's Python (no audit probe) with the activator in its environment has its audit events from the hook, and no per-call spans" {
	require_shim
	local py pid rec i ready=$BATS_TEST_TMPDIR/ready go=$BATS_TEST_TMPDIR/go
	py=$($SHIM -c 'import sys; print(sys.executable)')
	PYTHONPATH="$SP_BIN/../runtime/python" "$py" -c '
import os, sys, time
open(sys.argv[1], "w").close()
n = 0
while not os.path.exists(sys.argv[2]):
    os.listdir(sys.argv[3])
    n += 1
    time.sleep(0.02)
' "$ready" "$go" "$BATS_TEST_TMPDIR" 3>&- &
	pid=$!
	STARTED+=($pid)
	wait_path "$ready" 30 || fail "the program did not start"
	sp-record -v --no-samples -p $pid -o "$OUT" 2> "$BATS_TEST_TMPDIR/err" 3>&- &
	rec=$!
	STARTED+=($rec)
	for i in $(seq 600); do
		sp-decode "$OUT" 2>/dev/null | jq -r 'select(.type == "event" and .event == "audit") | .name' 2>/dev/null |
			grep -qx os.listdir && break
		sleep 0.1
	done
	touch "$go"
	wait $pid
	wait $rec || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"event\" and .event == \"audit\" and .name == \"os.listdir\") | .args' | sort -u"
	[ "$output" = "$BATS_TEST_TMPDIR" ] || fail "audit os.listdir: '$output'; sp-record said: $(cat "$BATS_TEST_TMPDIR/err")"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\")' | wc -l"
	assert_output 0
	run grep -c "stackpulse:py__call" "$BATS_TEST_TMPDIR/err"
	assert_output 0
}

@test "sp-record, default spans: pyenv's Python run twice, first without the activator in its environment, then with it: the second's audit events are there" {
	require_shim
	local py
	py=$($SHIM -c 'import sys; print(sys.executable)')
	# sh is no runtime: the probes load while it sleeps
	run -0 --separate-stderr sp-record -v --no-samples -o "$OUT" -- sh -c '
		sleep 1
		"$1" -c pass
		PYTHONPATH="$2" "$1" -c "import os, sys; os.listdir(sys.argv[1])" "$3"' \
		sh "$py" "$SP_BIN/../runtime/python" "$BATS_TEST_TMPDIR"
	[[ "$stderr" == *"no activator in its environment: no audit events"* ]] || fail "$stderr"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"event\" and .event == \"audit\" and .name == \"os.listdir\") | .args'"
	[ "$output" = "$BATS_TEST_TMPDIR" ] || fail "audit os.listdir: '$output'; sp-record said: $stderr"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"runtime\" and .runtime == \"python\" and .mode != \"stacks\") | .mode'"
	assert_output "audit"
}

@test "sp-record -p: the same for a Python without span rings (a marker per mark)" {
	require_python
	late_python STACKPULSE_SPAN_RING=0 $PY
}

@test "sp-record -p: a Python run with -m, found inside nested functions: runpy's frames under its runner are not reconstructed" {
	require_python
	cp "$FIXTURES/deep.py" "$BATS_TEST_TMPDIR/deep.py"
	# python3 -m deep READY GO, from deep.py's directory
	attach_found "$BATS_TEST_TMPDIR/deep.py" env PYTHONPATH="$SP_BIN/../runtime/python" \
		STACKPULSE_SPAN_RING=1 sh -c 'cd "${1%/*}" && exec "$0" -m deep "$2" "$3"' $PY
	# the runner, then the program's: not _run_code between them, whose
	# stop the hook leaves out as it leaves out its start
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and ((.flags // \"0\") == \"0x2\"))
		| \"\(.klass).\(.method) \(.depth)\"'"
	[ "$(head -5 <<<"$output")" = "runpy._run_module_as_main 1
__main__.<module> 2
__main__.main 3
__main__.outer 4
__main__.inner 5" ] || fail "reconstructed starts: $output"
	run -0 grep -E "spans: [0-9]+ span marks, .*; 0 stops without a start dropped" \
		"$BATS_TEST_TMPDIR/err"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .klass == \"runpy\") | .method'"
	assert_output "_run_module_as_main"
	run -0 sp-tree "$OUT"
	refute_line --regexp "SPAN tid=[0-9]+ runpy\._(run_code|get_module_details) "
}

require_ruby() {
	require_root
	[ -x $RUBY ] || skip "needs Debian's $RUBY"
	[ -f "$SP_BIN/../runtime/ruby/3.1/stackpulse_hook.so" ] || skip "needs the Ruby hook (ruby-dev)"
	[ "$($RUBY -e 'print RUBY_VERSION[/\A\d+\.\d+/]')" = 3.1 ] || skip "$RUBY is not Ruby 3.1"
}

# deep.rb run by $1... (after environment words, if any) with the activator
# and span rings, found inside Deep.main -> Deep#outer -> a block ->
# Walk#middle -> Deep#inner
late_ruby() {
	late_spans deep.rb tick Deep.main Deep#outer Walk#middle Deep#inner -- \
		env RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" STACKPULSE_SPAN_RING=1 "$@"
}

@test "sp-record -p: a Ruby inside nested methods when found gets them as reconstructed spans, their stops matched" {
	require_ruby
	late_ruby $RUBY
}

@test "sp-record -p: a Ruby inside a define_method method when found gets it named as its calls are" {
	require_ruby
	late_spans deep.rb tick Deep.main Deep#outer Walk#middle Deep#inner -- \
		env RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" STACKPULSE_SPAN_RING=1 \
		DEEP_MIDDLE=define_method $RUBY
}

@test "sp-record -p: the define_method rebuild calls Ruby's own methods, not the program's overrides of them" {
	require_ruby
	late_spans deep.rb tick Deep.main Deep#outer Walk#middle Deep#inner -- \
		env RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" STACKPULSE_SPAN_RING=1 \
		DEEP_MIDDLE=define_method DEEP_OVERRIDE=1 $RUBY
	[ ! -e "$BATS_TEST_TMPDIR/ready.called" ] ||
		fail "the hook ran the program's methods: $(sort "$BATS_TEST_TMPDIR/ready.called" | uniq -c)"
}

@test "sp-record -p: a Ruby with --spans-match inside matching methods when found gets those, and only those" {
	require_ruby
	# Walk#middle is not traced: not rebuilt, and no stop of it comes
	late_spans deep.rb tick Deep.main Deep#outer Deep#inner -- \
		env RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" STACKPULSE_SPAN_RING=1 \
		DEEP_MIDDLE=define_method STACKPULSE_SPANS_MATCH=$'Deep.main\nDeep#outer\nDeep#inner\nDeep#tick' $RUBY
}

@test "sp-record -p: a Ruby with methods open in a fiber it does not run when found says their stops are of that fiber" {
	require_ruby
	attach_found "$FIXTURES/fiber.rb" env RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" \
		STACKPULSE_SPAN_RING=1 $RUBY
	# the running fiber's Main#run is rebuilt (and tick, when it was in
	# one); Fib#b and Fib#a, open in the suspended fiber, stop without a
	# start: dropped, and said to be so
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .flags == \"0x2\") | .method' | grep -vx tick"
	assert_output run
	run -0 grep -c "; 2 stops without a start dropped (entered before the recording: 0 of frames beyond the innermost 256 their hook rebuilt, 2 of Ruby fibers not running when it did)" \
		"$BATS_TEST_TMPDIR/err"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\" and .what == \"span_stops\") | .count'"
	assert_output 2
	# and Main#run stops where run returns (its end), not where b did (15)
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_stop\" and .depth == 1) | .line'"
	assert_output 25
}

@test "sp-record -p: the same through a #!/bin/sh wrapper that execs ruby" {
	require_ruby
	local wrap=$BATS_TEST_TMPDIR/ruby-wrapper
	printf '#!/bin/sh\nexec %s "$@"\n' "$RUBY" > "$wrap"
	chmod +x "$wrap"
	late_ruby "$wrap"
}

@test "sp-record -p: the same for a Ruby without span rings (a marker per mark)" {
	require_ruby
	late_ruby STACKPULSE_SPAN_RING=0 $RUBY
}

@test "sp-record: a Python found whose spans never came is named in a warning and counted in the spool" {
	require_python
	local pid
	# -S skips the activator: the hook's probes are attached, no mark comes
	run --separate-stderr -0 sp-record --spans=auto --no-samples -o "$OUT" -- $PY -S "$APP"
	pid=$(sp-decode "$OUT" | jq -r 'select(.type == "runtime") | .pid' | head -1)
	[ -n "$pid" ] || fail "no runtime record"
	run -0 grep -c "^sp-record: warning: pid $pid (.*python3[.0-9]*): stackpulse:py__call: 0 hits while" <<<"$stderr"
	assert_output 1
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"lost\" and .what == \"unprobed\") | \"\(.pid) \(.count)\"'"
	assert_output "$pid 1"
	run -0 sp-tree "$OUT"
	assert_line --regexp "^# stackpulse recording .* processes without probes 1\$"
}

@test "sp-record --check --spans=auto: a python3 on PATH that is a script is recorded as --spans=auto would, and said to be one" {
	require_python
	local dir=$BATS_TEST_TMPDIR/bin
	mkdir -p "$dir"
	printf '#!/bin/sh\nexec %s "$@"\n' "$PY" > "$dir/python3"
	chmod +x "$dir/python3"
	PATH=$dir:$PATH run --separate-stderr sp-record --check --spans=auto
	assert_line "spans (a canary program recorded per mode, as --spans=auto records it):"
	assert_line --regexp "^  python +ok: stackpulse_canary seen \('$dir/python3' is a script \(#!/bin/sh\): the runtime it execs was recorded, found at its exec; python 3\.11"
}
