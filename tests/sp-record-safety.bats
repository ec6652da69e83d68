#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record never freezes or crashes what it records, nor touches what it
# does not record: the processes it holds stopped at fork and exec go on
# whatever becomes of sp-record (SIGKILL, a closed output pipe), thousands
# of forks neither crash nor stall it, other users' processes never meet
# its probes, and the activators work from any directory.
load helper

PY=/usr/bin/python3.11

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
}

require_python() {
	require_root
	[ -x $PY ] || skip "needs Debian's $PY"
	readelf -n $PY | grep -q function__entry || skip "$PY has no USDT probes"
}

# A program that forks and execs for $1 seconds: each child execs Python
# (a runtime: held at exec; its forks are held for its probes), then
# writes "done" to $2. Its pid in $2.pid.
fork_exec_loop() {
	cat >"$BATS_TEST_TMPDIR/loop.py" <<-'EOF'
	import os, sys, time
	open(sys.argv[2] + ".pid", "w").write(str(os.getpid()))
	end = time.time() + float(sys.argv[1])
	while time.time() < end:
	    pid = os.fork()
	    if pid == 0:
	        os.execv(sys.executable, [sys.executable, "-c", "pass"])
	    os.waitpid(pid, 0)
	open(sys.argv[2], "w").write("done")
	EOF
	echo "$BATS_TEST_TMPDIR/loop.py"
}

# pid $1 and its descendants
tree_of() {
	local c

	echo "$1"
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		tree_of "$c"
	done
}

# The processes of $1's tree stopped (state T), as "pid comm"
stopped_in() {
	local p

	for p in $(tree_of "$1"); do
		awk '{ i = index($0, ") "); if (substr($0, i + 2, 1) == "T") print $1, $2 }' \
			/proc/"$p"/stat 2>/dev/null
	done
}

# Wait (at most 10 s) until none of $1's tree is stopped; print those still
# stopped then. sp-record's guardian continues them once sp-record is gone.
settle() {
	local i s

	for i in $(seq 100); do
		s=$(stopped_in "$1")
		[ -z "$s" ] && return 0
		sleep 0.1
	done
	echo "$s"
}

@test "sp-record: SIGKILL while it records forks and execs leaves no process of the tree stopped" {
	require_python
	loop=$(fork_exec_loop)
	for run in 1 2 3; do
		rm -f "$BATS_TEST_TMPDIR/done" "$BATS_TEST_TMPDIR/done.pid"
		sp-record --spans=auto --events=none -o "$OUT" -- $PY "$loop" 30 "$BATS_TEST_TMPDIR/done" 3>&- &
		rec=$!
		for i in $(seq 100); do
			[ -s "$BATS_TEST_TMPDIR/done.pid" ] && break
			sleep 0.1
		done
		root=$(cat "$BATS_TEST_TMPDIR/done.pid")
		sleep 1		# forks and execs held and let go meanwhile
		kill -KILL $rec
		wait $rec || true
		left=$(settle "$root")
		kill -KILL $(tree_of "$root") 2>/dev/null || true
		[ -z "$left" ] || fail "run $run: stopped after sp-record's SIGKILL: $left"
	done
}

@test "sp-record: a closed output pipe: one message, exit 141, holds released, the command goes on" {
	require_python
	loop=$(fork_exec_loop)
	# stderr to a file: the command, left running, has it too
	run bash -c "sp-record --spans=auto --events=none -- $PY '$loop' 3 '$BATS_TEST_TMPDIR/done' \
		2>'$BATS_TEST_TMPDIR/err' | head -c 100 >/dev/null; echo \"status \${PIPESTATUS[0]}\"" 3>&-
	assert_output "status 141"
	run cat "$BATS_TEST_TMPDIR/err"
	assert_output "sp-record: the command's standard output goes to standard error: the records go to standard output (--command-stdout=FILE to choose)
sp-record: warning: output closed (broken pipe): recording stopped; the command goes on running"
	for i in $(seq 100); do
		[ -s "$BATS_TEST_TMPDIR/done.pid" ] && break
		sleep 0.1
	done
	root=$(cat "$BATS_TEST_TMPDIR/done.pid")
	left=$(settle "$root")
	if [ -n "$left" ]; then
		kill -KILL $(tree_of "$root") 2>/dev/null || true
		fail "stopped after the pipe closed: $left"
	fi
	# and the command finishes its work on its own
	for i in $(seq 200); do
		[ -e "$BATS_TEST_TMPDIR/done" ] && break
		sleep 0.1
	done
	[ "$(cat "$BATS_TEST_TMPDIR/done")" = done ]
}

@test "sp-record: 2,000 forks of a Python under --spans=auto (ASan build): no crash, no stall" {
	require_python
	# the sanitized sp-record (make asan-record), with the build tree's runtime
	rec=$SP_BIN/../asan/bin/sp-record
	[ -x "$rec" ] || skip "needs $rec (make asan-record)"
	export SP_RUNTIME_DIR=$SP_BIN/../runtime
	# no child is held at its fork: the runtime hook's markers are the
	# hook file's links, which cover it (its own python:audit would come
	# after 100 ms). Nothing slows the forks down to sp-record's pace any
	# more: a slow (sanitized) reader may let the ring buffer fill, which
	# must be said and be in the spool
	run --separate-stderr -0 "$rec" -v --spans=auto --events=none -o "$OUT" -- $PY -c '
import os
for i in range(2000):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)'
	[[ "$stderr" != *"AddressSanitizer"* && "$stderr" != *"runtime error"* ]] || fail "$stderr"
	[[ "$stderr" =~ forks:\ ([0-9]+),\ 0\ held\ for\ their\ parent\'s\ probes ]] || fail "$stderr"
	if [ "${BASH_REMATCH[1]}" != 2000 ]; then
		[[ "$stderr" == *"span events lost (ring buffer full)"* ]] || fail "$stderr"
		run -0 bash -c "sp-decode '$OUT' | jq -n '[inputs | select(.type == \"lost\" and .what == \"spans\") | .count] | add'"
		(( output > 0 )) || fail "no lost record: $output"
		return
	fi
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"process\") | .pid' | sort -u | wc -l"
	(( output >= 2001 )) && return
	# a child the kernel's records of which a full ring lost has no process
	# record: that loss must be said and be in the spool
	n=$output
	run -0 bash -c "sp-decode '$OUT' | jq -n '[inputs | select(.type == \"lost\") | .count] | add // 0'"
	(( output > 0 )) || fail "$n process records for 2,001 processes, and no loss said"
}

@test "sp-record: another user's valgrind runs while sp-record records something else" {
	require_root
	require_cmd valgrind
	require_cmd setpriv
	sp-record -o "$OUT" -- sleep 4 3>&- &
	rec=$!
	sleep 1.5	# recording (its BPF object is loaded after 50 ms)
	# valgrind takes a breakpoint in ld.so for its own: a probe of ours
	# there would kill it with SIGTRAP
	run setpriv --reuid=65534 --regid=65534 --clear-groups valgrind -q /bin/true
	wait $rec
	assert_success
	assert_output ""
}

@test "sp-record: a runtime directory with a space in its path: Ruby starts and has its spans" {
	require_root
	require_cmd ruby
	dir="$BATS_TEST_TMPDIR/stack pulse"
	mkdir -p "$dir"
	cp -R "$SP_BIN" "$dir/bin"
	cp -R "$SP_BIN/../runtime" "$dir/runtime"
	run --separate-stderr -0 "$dir/bin/sp-record" --spans=ruby --events=none -o "$OUT" -- \
		ruby -e 'def f = 1; 3.times { f }; puts "ran"'
	assert_output "ran"
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .method' | sort | uniq -c"
	assert_line --regexp '^ +3 f$'
}

# A thread renamed in a loop is a new string and a thread record each time:
# a recording to one file goes on in new streams once its id space is past
# its bound (SP_FLIGHT_RESTREAM_DEFS, 131,072 definitions), so root's
# sp-record lets the old definitions go instead of keeping every name.
@test "sp-record: nobody's process renames its thread 600,000 times: the recording to one file goes on in new streams, its id space stays bounded, and the streams read as one" {
	require_root
	require_cmd setpriv
	[ -x $PY ] || skip "needs Debian's $PY"
	local dir n max
	dir=$(mktemp -d /tmp/sp-rename.XXXXXX)
	cat >"$dir/rename.py" <<-'EOF2'
	import ctypes, sys
	prctl = ctypes.CDLL(None).prctl
	for i in range(int(sys.argv[1])):
	    prctl(15, b"n%013d" % i, 0, 0, 0)	# PR_SET_NAME
	EOF2
	chmod -R a+rX "$dir"
	run "$SP_BIN/sp-record" -v --spans=none -o "$OUT" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups $PY "$dir/rename.py" 600000
	rm -rf "$dir"
	[ "$status" -eq 0 ]
	[[ "$output" == *"it goes on in a new stream of '$OUT'"* ]]
	# the id space's peak: one bound and a batch, not every name
	max=$(sed -n 's/.*id space: [0-9]* definitions now, at most \([0-9]*\);.*/\1/p' <<<"$output")
	[ -n "$max" ] && [ "$max" -lt 262144 ]
	run "$SP_BIN/sp-decode" "$OUT"
	[ "$status" -eq 0 ]
	# each stream defines its own strings, from 1: none holds every name
	n=$(grep -c '^{"type":"header"' <<<"$output")
	[ "$n" -ge 3 ]
	max=$(grep -o '^{"type":"string","id":[0-9]*' <<<"$output" | cut -d: -f3 | sort -n | tail -1)
	[ "$max" -lt 262144 ]
	# the renames are in it (the rings may lose some under the flood: said)
	n=$(grep -c '^{"type":"thread",.*"name":"n0' <<<"$output")
	[ "$n" -ge 300000 ] || grep -q '^{"type":"lost"' <<<"$output"
	# one end, the command's (reason and status 0, "exited", are left out)
	n=$(grep '^{"type":"end"' <<<"$output")
	[[ "$n" != *$'\n'* && "$n" != *'"reason"'* && "$n" != *'"status"'* ]]
	# read as one recording: one process, the same across the streams
	run bash -c "'$SP_BIN/sp-correlate' '$OUT' | '$SP_BIN/sp-tree'"
	[ "$status" -eq 0 ]
	[[ "${lines[2]}" == "# processes 1 "* ]]
}

# The descriptors a shell started by $@ has, as "fd -> target" lines (a
# pipe's number left out: its stdout and the $(...) it reads with differ
# from run to run).
fds_under() {
	"$@" sh -c 'cd /proc/$$/fd && for f in *; do echo "$f -> $(readlink "$f")"; done' \
		2>/dev/null | sed 's/pipe:\[[0-9]*\]$/pipe/' | sort
}

@test "sp-record: the command it runs, and its trigger command, inherit none of sp-record's descriptors (output file, segments, rings, BPF)" {
	require_root
	fds_under env > "$BATS_TEST_TMPDIR/alone"
	[ -s "$BATS_TEST_TMPDIR/alone" ] || fail "no descriptors listed"
	for args in "-o $OUT" "-o $OUT --off-cpu --spans=auto" \
		"--segment=1s -o $BATS_TEST_TMPDIR/segs/" "--flight=1M -o $BATS_TEST_TMPDIR/dumps/"; do
		mkdir -p -m 700 "$BATS_TEST_TMPDIR/segs" "$BATS_TEST_TMPDIR/dumps"
		# shellcheck disable=SC2086 # the options, split
		fds_under sp-record $args -- > "$BATS_TEST_TMPDIR/under"
		# sp-record's own stdout (not a spool here) is the command's: the
		# same; anything more is a descriptor of sp-record's
		extra=$(comm -13 "$BATS_TEST_TMPDIR/alone" "$BATS_TEST_TMPDIR/under")
		[ -z "$extra" ] || fail "sp-record $args: the command inherits: $extra"
	done
	# nor the trigger command, run while the recording is under way (its
	# stdin is /dev/null, its stdout here the file: those two differ)
	rm -rf "$BATS_TEST_TMPDIR/dumps"
	mkdir -m 700 "$BATS_TEST_TMPDIR/dumps"
	L=$BATS_TEST_TMPDIR/trig
	echo 'cd /proc/$$/fd && for f in *; do echo "$f -> $(readlink "$f")"; done' \
		> "$BATS_TEST_TMPDIR/list.sh"
	sp-record --flight=1M -o "$BATS_TEST_TMPDIR/dumps/" --trigger-every=100ms \
		--trigger-cmd="sh $BATS_TEST_TMPDIR/list.sh > $L.tmp; mv $L.tmp $L; exit 1" \
		-- sleep 1 2>/dev/null
	[ -s "$L" ] || fail "the trigger command did not run"
	# (the shell reads its script through a descriptor of its own)
	extra=$(sed 's/pipe:\[[0-9]*\]$/pipe/' "$L" | grep -v -e '^[01] ' -e '/list\.sh$' | sort |
		comm -13 "$BATS_TEST_TMPDIR/alone" -)
	[ -z "$extra" ] || fail "the trigger command inherits: $extra"
}

# sp-record -o $1 running a command that waits, killed with SIGKILL once
# sp-decode --follow $1 reads it: the follower ends (within 10 s), says
# so, exit 1. The command is killed after.
# Wait (up to 10 s) until sp-record's output PATH has bytes: a file not
# empty, a directory not empty.
output_appears() {
	local i
	for i in $(seq 100); do
		if [ -d "$1" ]; then
			[ -n "$(ls "$1" 2>/dev/null)" ] && return 0
		else
			[ -s "$1" ] && return 0
		fi
		sleep 0.1
	done
	return 1
}

# The follower PID ends within 10 s (its writer is gone), with exit status
# 1; else it is killed and the test fails saying WHAT it waits for.
follower_ends() {
	local i st=0
	for i in $(seq 100); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		kill "$1"
		fail "sp-decode --follow still waits $2 10 s after its writer went"
	fi
	wait "$1" || st=$?
	[ "$st" = 1 ] || fail "exit $st: $(cat "$BATS_TEST_TMPDIR/err")"
}

follow_killed_writer() {
	local rec fol cmd st=0 i

	sp-record "${@:2}" -o "$1" -- sleep 60 2>"$BATS_TEST_TMPDIR/rec.err" &
	rec=$!
	output_appears "$1" || true
	sp-decode --follow "$1" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	fol=$!
	sleep 2
	kill -0 "$fol" || fail "the follower ended while its writer lived: $(cat "$BATS_TEST_TMPDIR/err")"
	cmd=$(pgrep -P "$rec" -x sleep) || fail "no command under sp-record"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null || true
	kill -KILL "$cmd" || true
	follower_ends "$fol" "for more"
	grep -Eq "^sp-decode: warning: $1.*@[0-9]+: its writer is gone without writing its end record" \
		"$BATS_TEST_TMPDIR/err" || fail "$(cat "$BATS_TEST_TMPDIR/err")"
	# what it read is there: the header and the process
	grep -q '"type":"header"' "$BATS_TEST_TMPDIR/out"
	grep -q '"comm":"sleep"' "$BATS_TEST_TMPDIR/out"
}

@test "sp-decode --follow of a recording whose sp-record is killed (SIGKILL): it ends, says so, exit 1" {
	require_root
	follow_killed_writer "$OUT"
}

@test "sp-decode --follow DIR of a rotating recording whose sp-record is killed: it ends, says so, exit 1" {
	require_root
	mkdir -m 700 "$BATS_TEST_TMPDIR/segs"
	follow_killed_writer "$BATS_TEST_TMPDIR/segs/" --segment=1s
}

# A rotation, as flight.c makes it: the next segment is created and locked
# before the full one is closed. A locker (Python, open file description
# write locks as spool_lock.c takes them) stands in for sp-record over the
# segments of a real rotated recording, copied into $2 one by one: it holds
# segment 1 for 1.5 s, then, unless $1 is "killed", creates and locks each
# next segment before dropping the one before it (1 s each).
rotate_like_a_recorder() {
	local how=$1 dir=$2 src=$3
	/usr/bin/python3 -c '
import fcntl, os, shutil, struct, sys, time
how, dst, src = sys.argv[1:4]
lock = struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 1, 0)
def make(n):
	name = "segment-%06d.sp" % n
	fd = os.open(os.path.join(dst, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
	fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock)
	with open(os.path.join(src, name), "rb") as f:
		os.write(fd, f.read())
	return fd
held = make(1)
time.sleep(1.5)
if how == "killed":
	sys.exit(0)		# gone between the rotated end and the next segment
for n in (2, 3):
	nxt = make(n)
	os.close(held)
	held = nxt
	time.sleep(1)
' "$how" "$dir" "$src"
}

# A real rotated recording of three segments (1 s each) in the new directory $1.
three_segments() {
	mkdir -m 700 "$1"
	sp-record -o "$1/" --segment=1s -- sleep 2.5 2>/dev/null
	[ -e "$1/segment-000003.sp" ] || fail "the recording made $(ls "$1")"
}

@test "sp-decode --follow DIR: a recorder killed between a rotation's end record and the next segment ends it, exit 1" {
	require_root
	local src="$BATS_TEST_TMPDIR/src" dst="$BATS_TEST_TMPDIR/dst"
	three_segments "$src"
	mkdir -m 700 "$dst"
	sp-decode "$src/segment-000001.sp" | tail -1 | grep -q '"reason":"rotated"'
	rotate_like_a_recorder killed "$dst" "$src" &
	locker=$!
	sleep 0.3
	sp-decode --follow "$dst" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	fol=$!
	sleep 1
	kill -0 "$fol" 2>/dev/null || fail "it ended while segment 1 was held: $(cat "$BATS_TEST_TMPDIR/err")"
	wait "$locker"
	follower_ends "$fol" "for segment 2"
	grep -q "^sp-decode: warning: '$dst': segment 1 ended for a rotation, but its writer is gone without creating the next (killed, or it failed): following ends here$" \
		"$BATS_TEST_TMPDIR/err" || fail "$(cat "$BATS_TEST_TMPDIR/err")"
	grep -q '"comm":"sleep"' "$BATS_TEST_TMPDIR/out"
}

@test "sp-decode --follow DIR: a recorder that rotates slowly is waited for through every segment" {
	require_root
	local src="$BATS_TEST_TMPDIR/src" dst="$BATS_TEST_TMPDIR/dst"
	three_segments "$src"
	mkdir -m 700 "$dst"
	rotate_like_a_recorder rotates "$dst" "$src" &
	locker=$!
	sleep 0.3
	run --separate-stderr timeout 20 sp-decode --follow "$dst"
	wait "$locker"
	[ "$status" = 0 ] || fail "exit $status: $stderr"
	[ -z "$stderr" ] || fail "$stderr"
	# every segment's records, up to the recording's own end
	[ "$(tail -1 <<<"$output" | jq -r '.type + " " + (.reason // "exited")')" = "end exited" ] ||
		fail "$(tail -1 <<<"$output")"
	[ "$(jq -s length <<<"$output")" = "$(cat "$src"/segment-* | sp-decode | grep -vc '"reason":"rotated"')" ] ||
		fail "records differ from the segments'"
}

@test "sp-decode --follow DIR of a real sp-record rotating every 100 ms: every segment, no writer said gone" {
	require_root
	local d="$BATS_TEST_TMPDIR/segs"
	mkdir -m 700 "$d"
	sp-record -o "$d/" --segment=100ms -- sh -c 'for i in $(seq 40); do ls / >/dev/null; sleep 0.05; done' \
		2>"$BATS_TEST_TMPDIR/rec.err" &
	rec=$!
	output_appears "$d" || true
	run --separate-stderr timeout 60 sp-decode --follow "$d"
	wait "$rec" || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/rec.err")"
	[ "$status" = 0 ] || fail "exit $status: $stderr"
	[ -z "$stderr" ] || fail "$stderr"
	n=$(ls "$d" | grep -c '^segment-')
	[ "$n" -ge 10 ] || fail "only $n segments"
	[ "$(grep -c '"type":"header"' <<<"$output")" = "$n" ]
	[ "$(tail -1 <<<"$output" | jq -r '.type + " " + (.reason // "exited")')" = "end exited" ]
}

@test "sp-decode --follow of a file whose sp-record was killed before it started: said once, followed on" {
	require_root
	sp-record -o "$OUT" -- sleep 30 2>/dev/null &
	rec=$!
	output_appears "$OUT" || true
	sleep 0.5
	cmd=$(pgrep -P "$rec" -x sleep) || fail "no command under sp-record"
	kill -KILL "$rec"
	wait "$rec" 2>/dev/null || true
	kill -KILL "$cmd" || true
	sp-decode --follow "$OUT" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	fol=$!
	sleep 4.5
	kill -0 "$fol" 2>/dev/null || fail "it ended: there is no telling a writer gone: $(cat "$BATS_TEST_TMPDIR/err")"
	kill "$fol"
	wait "$fol" || true
	[ "$(grep -c 'no writer holds a lock on it' "$BATS_TEST_TMPDIR/err")" = 1 ] ||
		fail "$(cat "$BATS_TEST_TMPDIR/err")"
	grep -Eq "^sp-decode: warning: $OUT@[0-9]+: no writer holds a lock on it \(sp-record holds one while it writes\): if its writer ended before sp-decode started, nothing more comes; following goes on until interrupted$" \
		"$BATS_TEST_TMPDIR/err" || fail "$(cat "$BATS_TEST_TMPDIR/err")"
	grep -q '"comm":"sleep"' "$BATS_TEST_TMPDIR/out"
}

@test "sp-record: a second recording to a file another one writes says so" {
	require_root
	sp-record -o "$OUT" -- sleep 3 2>/dev/null &
	rec=$!
	output_appears "$OUT" || true
	run --separate-stderr sp-record -o "$OUT" -- true
	wait "$rec" || true
	[[ "$stderr" == *"sp-record: warning: '$OUT': another program holds a lock on this file (another recording writing it?)"* ]] ||
		fail "$stderr"
}

@test "sp-decode --follow: a read lock another user takes and drops on the spool does not end it while sp-record writes" {
	require_root
	require_cmd setpriv
	D=$(mktemp -d /tmp/sp-rdlock.XXXXXX)
	chmod 755 "$D"
	: >"$D/out.sp"
	chmod 644 "$D/out.sp"	# readable by all, as a spool left from before
	# nobody holds a read lock (open file description) for 2 s, then drops it
	setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import fcntl, struct, sys, time
f = open(sys.argv[1], "rb")
fcntl.fcntl(f, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0))
time.sleep(2)
' "$D/out.sp" &
	locker=$!
	sleep 0.5
	sp-record -o "$D/out.sp" -- sleep 5 2>"$D/rec.err" &
	rec=$!
	sleep 0.5
	sp-decode --follow "$D/out.sp" >/dev/null 2>"$D/fol.err" &
	fol=$!
	wait "$locker"
	sleep 2.5	# two looks after the read lock went
	kill -0 "$fol" 2>/dev/null || fail "the follower ended while sp-record wrote: $(cat "$D/fol.err")"
	grep -q "another program holds a lock on this file" "$D/rec.err" || fail "$(cat "$D/rec.err")"
	wait "$rec"
	kill "$fol" 2>/dev/null || true
	wait "$fol" || true
	rm -rf "$D"
}
