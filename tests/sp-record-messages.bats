#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# What sp-record's spans say and what they keep quiet about, on real Ruby
# and Python runs: no warning for what every run does (Ruby's start-up
# raises), the warning where it means something, and the recorded
# program's own messages as the plain run prints them.
load helper

PY=/usr/bin/python3.11

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
	require_root
}

teardown() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
	kill_started ${BGPIDS:-}
}

@test "sp-record: Ruby's start-up raises are no raise with no span open; a raise outside any method still is" {
	require_ruby_probes
	cat >"$BATS_TEST_TMPDIR/quiet.rb" <<-'EOF'
	def work; 1; end
	work
	EOF
	run --separate-stderr -0 sp-record -v --spans=auto -o "$OUT" -- ruby "$BATS_TEST_TMPDIR/quiet.rb"
	# RubyGems rescues a NameError and a LoadError before RUBYOPT's -r
	[[ "$stderr" == *"Ruby raises before the activator's hook was in"* ]] || fail "$stderr"
	run --separate-stderr -0 sp-correlate -o /dev/null "$OUT"
	[[ "$stderr" != *"no span open"* ]] || fail "$stderr"
	run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"span_raise\")'"
	[ -z "$output" ] || fail "$output"

	# a raise in a method, and one at the top level: both recorded, the
	# second is the one with no span open
	cat >"$BATS_TEST_TMPDIR/raises.rb" <<-'EOF'
	def work; raise ArgumentError; rescue ArgumentError; end
	work
	begin; raise IndexError; rescue IndexError; end
	EOF
	run --separate-stderr -0 sp-record --spans=auto -o "$OUT" -- ruby "$BATS_TEST_TMPDIR/raises.rb"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_raise\") | .klass'"
	[ "$output" = "$(printf 'ArgumentError\nIndexError')" ] || fail "$output"
	run --separate-stderr -0 sp-correlate -o /dev/null "$OUT"
	[[ "$stderr" == *"1 raises came with no span open"* ]] || fail "$stderr"
}

@test "sp-record: an ImportError of the user's own sitecustomize is printed as the plain run prints it" {
	require_python_probes
	mkdir -p "$BATS_TEST_TMPDIR/site"
	echo 'import no_such_module_of_the_user' >"$BATS_TEST_TMPDIR/site/sitecustomize.py"
	cat >"$BATS_TEST_TMPDIR/app.py" <<-'EOF'
	def work():
	    return 1
	work()
	print("app ran")
	EOF
	run --separate-stderr -0 env PYTHONPATH="$BATS_TEST_TMPDIR/site" $PY "$BATS_TEST_TMPDIR/app.py"
	plain=$stderr
	[[ "$plain" == *"no_such_module_of_the_user"* ]] || fail "plain: $plain"
	run --separate-stderr -0 env PYTHONPATH="$BATS_TEST_TMPDIR/site" \
		sp-record --spans=auto -o "$OUT" -- $PY "$BATS_TEST_TMPDIR/app.py"
	[ "$output" = "app ran" ]
	[[ "$stderr" == *"$plain"* ]] || fail "plain: $plain; under sp-record: $stderr"
	# and the activator ran all the same
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .method' | grep -c '^work$'"
	[ "$output" = 1 ]

	# any other error of it too, and a missing one stays quiet
	echo 'raise ValueError("the user said no")' >"$BATS_TEST_TMPDIR/site/sitecustomize.py"
	run --separate-stderr -0 env PYTHONPATH="$BATS_TEST_TMPDIR/site" $PY "$BATS_TEST_TMPDIR/app.py"
	plain=$stderr
	run --separate-stderr -0 env PYTHONPATH="$BATS_TEST_TMPDIR/site" \
		sp-record --spans=auto -o "$OUT" -- $PY "$BATS_TEST_TMPDIR/app.py"
	[[ "$stderr" == *"$plain"* ]] || fail "plain: $plain; under sp-record: $stderr"
	rm "$BATS_TEST_TMPDIR/site/sitecustomize.py"
	run --separate-stderr -0 env PYTHONPATH="$BATS_TEST_TMPDIR/site" \
		sp-record --spans=auto -o "$OUT" -- $PY "$BATS_TEST_TMPDIR/app.py"
	[[ "$stderr" != *sitecustomize* ]] || fail "$stderr"
}

@test "sp-record -p: a Python without the activator gets no function__return probe until a profile function makes entries, and is told so once" {
	require_python_probes
	cat >"$BATS_TEST_TMPDIR/loop.py" <<-'EOF'
	import sys, time
	def work(x):
	    return x + 1
	if sys.argv[2] == "profiled":
	    sys.setprofile(slice)	# what cProfile or a debugger would set
	open(sys.argv[1], "w").write("ready")
	end = time.time() + 60	# killed once recorded; long enough for a slow attach
	s = 0
	while time.time() < end:
	    s = work(s)
	EOF
	for how in plain profiled; do
		rm -f "$BATS_TEST_TMPDIR/ready"
		$PY "$BATS_TEST_TMPDIR/loop.py" "$BATS_TEST_TMPDIR/ready" $how 3>&- &
		pid=$!
		for i in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/ready" ] && break; sleep 0.05; done
		run --separate-stderr -0 sp-record -v --spans=auto -p $pid -d 1 -o "$OUT"
		kill $pid 2>/dev/null || true
		wait $pid 2>/dev/null || true
		probes=$(sp-decode "$OUT" | jq -r 'select(.type == "probe") | "\(.name) \(.hits)"')
		if [ $how = plain ]; then
			[ "$(grep -c "Python without sp-record's activator" <<<"$stderr")" = 1 ] || fail "$stderr"
			[[ "$stderr" != *" while "* ]] || fail "$stderr"
			[[ "$probes" == *"python:function__entry 0"* ]] || fail "$probes"
			[[ "$probes" != *"function__return"* ]] || fail "$probes"
		else
			# entries came: returns are attached, and the spans are there
			[[ "$probes" =~ python:function__return\ [1-9] ]] || fail "$probes"
			run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .method' | grep -c '^work$'"
			(( output > 100 )) || fail "$output"
			[[ "$stderr" != *"function entries not active"* ]] || fail "$stderr"
		fi
	done
}

@test "sp-record -p: a Ruby without the activator is told so once, and a TracePoint of its own still gives spans" {
	require_ruby_probes
	local how pid i
	cat >"$BATS_TEST_TMPDIR/loop.rb" <<-'EOF2'
	def work(x) = x + 1
	TracePoint.new(:call) {}.enable if ARGV[1] == "traced"
	File.write(ARGV[0], "ready")
	t = Time.now + 60	# killed once recorded; long enough for a slow attach
	s = 0
	s = work(s) while Time.now < t
	EOF2
	for how in plain traced; do
		rm -f "$BATS_TEST_TMPDIR/ready"
		ruby "$BATS_TEST_TMPDIR/loop.rb" "$BATS_TEST_TMPDIR/ready" $how 3>&- &
		pid=$!
		for i in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/ready" ] && break; sleep 0.05; done
		run --separate-stderr -0 sp-record --spans=ruby -p $pid -d 1 -o "$OUT"
		kill $pid 2>/dev/null || true
		wait $pid 2>/dev/null || true
		[ "$(grep -c "pid $pid: Ruby without sp-record's activator" <<<"$stderr")" = 1 ] ||
			fail "$stderr"
		n=$(sp-decode "$OUT" | jq -r 'select(.type == "span_start") | .method' | grep -c 'work$' || true)
		if [ $how = plain ]; then
			[ "$n" = 0 ] || fail "$n spans of work"
		else
			(( n > 100 )) || fail "$n spans of work"
		fi
	done
}

@test "sp-record -o a file of /proc that refuses the write: the error, and no word of records kept" {
	run --separate-stderr -2 sp-record -o /proc/version -- true
	assert_equal "$stderr" "sp-record: error: cannot write '/proc/version': Input/output error"
	# a full disk after some batches: those are kept, and said (256 KiB:
	# the first batch fits, even when the kernel's symbols are read first
	# with no cache, the recording of 1.5 MB does not)
	MNT=$BATS_TEST_TMPDIR/full
	mkdir -p "$MNT"
	mount -t tmpfs -o size=256k tmpfs "$MNT" || skip "cannot mount a tmpfs"
	run --separate-stderr -2 sp-record --batch 20ms -o "$MNT/x.sp" -- sh -c 'ls -R /usr/lib >/dev/null'
	[[ "$stderr" == *"cannot write '$MNT/x.sp': No space left on device"* ]] || fail "$stderr"
	[[ "$stderr" == *"warning: '$MNT/x.sp' ends with the records written before the error"* ]] ||
		fail "$stderr"
}

@test "sp-record -p of a zombie says it has exited and is not reaped yet, naming its parent" {
	# a child that exits at once, and a parent that never reaps it
	$PY -c 'import os, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
time.sleep(30)' > "$BATS_TEST_TMPDIR/z" &
	parent=$!
	BGPIDS=$parent
	for _ in $(seq 50); do
		z=$(cat "$BATS_TEST_TMPDIR/z")
		[ -n "$z" ] && [ "$(awk '{ print $3 }' "/proc/$z/stat")" = Z ] && break
		sleep 0.1
	done
	[ "$(awk '{ print $3 }' "/proc/$z/stat")" = Z ] || fail "no zombie: $z"
	comm=$(cat "/proc/$parent/comm")
	want="pid $z: has exited: a zombie its parent, pid $parent ($comm), has not reaped yet"
	run --separate-stderr -2 sp-record -o "$OUT" -p "$z" -d 0.1
	assert_equal "$stderr" "sp-record: error: $want"
	run --separate-stderr -2 sp-record --check -p "$z"
	assert_equal "$stderr" "sp-record: error: $want"
}

# offcpu_lost STDERR: the count of records the off-CPU summary says were lost
offcpu_lost() {
	sed -n 's/^sp-record: off-cpu: .*; \([0-9]*\) records lost$/\1/p' <<< "$1"
}

# switches_while_stopped ARGS...: sp-record ARGS -- a command that makes
# switches while the recorder is stopped (SIGSTOP), so its 1-page off-CPU
# rings overflow whatever the machine's load; $stderr is the recorder's.
# With SW_AFTER=1 in the environment the command makes more once the
# recorder goes on (the kernel says a ring's loss with its next record).
switches_while_stopped() {
	local d=$BATS_TEST_TMPDIR/sw rec
	rm -rf "$d" && mkdir "$d"
	cat > "$d/cmd" <<-'EOS'
	#!/bin/sh
	: > "$0.started"
	while [ ! -e "$0.go" ]; do sleep 0.02; done
	# each child waited for is a switch of the shell, and more of its own
	for i in $(seq 200); do /bin/true; done
	dd if=/dev/zero bs=1 count=20000 status=none | cat > /dev/null
	: > "$0.done"
	[ -z "$SW_AFTER" ] && exit 0
	# with SW_AFTER: more switches once the recorder reads again
	while [ ! -e "$0.cont" ]; do sleep 0.02; done
	for i in $(seq 50); do /bin/true; done
	EOS
	chmod +x "$d/cmd"
	sp-record "$@" -o "$OUT" -- "$d/cmd" 2> "$d/err" &
	rec=$!
	BGPIDS=$rec
	wait_path "$d/cmd.started" 30 || fail "$(cat "$d/err")"
	kill -STOP $rec
	: > "$d/cmd.go"
	wait_path "$d/cmd.done" 60 || { kill -CONT $rec; fail "the command did not end"; }
	kill -CONT $rec
	: > "$d/cmd.cont"
	wait $rec || fail "sp-record: exit $?: $(cat "$d/err")"
	BGPIDS=
	stderr=$(cat "$d/err")
}

@test "sp-record --off-cpu: switch records the off-CPU rings lost are said with what helps them, not -F" {
	# rings of 1 page, not drained while the command switches: most are lost
	switches_while_stopped --off-cpu -m 1 -F 1
	n=$(offcpu_lost "$stderr")
	[ -n "$n" ] || fail "$stderr"
	grep -qxF "sp-record: warning: $n off-CPU switch records lost (the off-CPU ring buffers overflowed: try -m, or --call-graph=fp to copy no user stack at a switch; -F does not change them)" <<< "$stderr" ||
		fail "$stderr"
	# the CPU samples' hint is not given for them
	! grep -q "warning: $n samples lost" <<< "$stderr" || fail "$stderr"
	# without a stack copy, -m alone. The command ended while sp-record was
	# stopped: no record came after its rings were drained, which is when
	# the kernel says a ring's losses; they are counted all the same.
	switches_while_stopped -v --off-cpu --call-graph=fp -m 1 -F 1
	n=$(offcpu_lost "$stderr")
	[ -n "$n" ] || fail "$stderr"
	grep -q "^sp-record: off-cpu: [0-9]* records the kernel could not write went unsaid" <<< "$stderr" ||
		fail "$stderr"
	grep -qxF "sp-record: warning: $n off-CPU switch records lost (the off-CPU ring buffers overflowed: try -m; -F does not change them)" <<< "$stderr" ||
		fail "$stderr"
}

@test "sp-record --off-cpu: a loss the kernel says is a lost record at its time, naming its CPU" {
	SW_AFTER=1 switches_while_stopped --off-cpu --call-graph=fp -m 1 -F 1
	n=$(offcpu_lost "$stderr")
	[ -n "$n" ] && [ "$n" -gt 0 ] || fail "$stderr"
	sp-decode "$OUT" > "$BATS_TEST_TMPDIR/run.json"
	# each names its CPU
	run -0 jq -s '[.[] | select(.type == "lost" and (.what // "samples") == "samples" and .cpu == null)] | length' "$BATS_TEST_TMPDIR/run.json"
	[ "$output" = 0 ] || fail "lost records without a CPU: $output"
	# one at least was said before the waits of the switches after it: in
	# a flight recorder's window with them, not only at the end
	run -0 jq -s '([.[] | select(.type == "lost") | .time] | min) <
		([.[] | select(.type == "sample" and .kind == "offcpu") | .time] | max)' "$BATS_TEST_TMPDIR/run.json"
	[ "$output" = true ] || fail "no lost record before the last wait: $(jq -c 'select(.type == "lost")' "$BATS_TEST_TMPDIR/run.json")"
	# and they add up to what the warnings say, the CPU samples' with them
	cpu=$(sed -n 's/^sp-record: warning: \([0-9]*\) samples lost .*/\1/p' <<< "$stderr")
	run -0 jq -s '[.[] | select(.type == "lost" and (.what // "samples") == "samples") | .count] | add' "$BATS_TEST_TMPDIR/run.json"
	[ "$output" = "$((n + ${cpu:-0}))" ] || fail "spool: $output, said: $n off-CPU and ${cpu:-0} CPU samples: $stderr"
}

# The kernel says a ring's losses with the next record it writes there: a
# burst that filled the rings while sp-record did not read them, with no
# record after (the command ended meanwhile), was lost in silence.
@test "sp-record: CPU samples a ring could not write at the end are said lost, though the kernel never said so" {
	switches_while_stopped -v -F 4999 -m 1
	n=$(sed -n 's/^sp-record: warning: \([0-9]*\) samples lost (the ring buffers overflowed: try -m or a lower -F)$/\1/p' <<< "$stderr")
	[ -n "$n" ] && [ "$n" -gt 0 ] || fail "$stderr"
	grep -q "^sp-record: [0-9]* records the kernel could not write went unsaid" <<< "$stderr" ||
		fail "$stderr"
	# in the spool too, for sp-decode --stats and sp-tree
	run -0 bash -c "sp-decode '$OUT' | jq -s '[.[] | select(.type == \"lost\" and (.what // \"samples\") == \"samples\") | .count] | add'"
	[ "$output" = "$n" ] || fail "spool: $output, said: $n"
}
