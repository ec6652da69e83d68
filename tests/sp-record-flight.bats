#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record -o DIR: rotated segments that each read alone, and the flight
# recorder (--flight): a bounded window in memory, dumped on SIGUSR1 as a
# spool that decodes, symbolizes, correlates and trees alone, even for a
# process that started long before the window; the directory is ours alone.
load helper

setup() {
	D=$BATS_TEST_TMPDIR/out
}

teardown() {
	# its command first: killed -9, sp-record cannot take it along
	[ -z "${REC:-}" ] || pkill -9 -P "$REC" 2>/dev/null || true
	[ -z "${REC:-}" ] || kill -9 "$REC" 2>/dev/null || true
	[ -z "${BUSY:-}" ] || kill -9 "$BUSY" 2>/dev/null || true
	! mountpoint -q "$D" 2>/dev/null || umount "$D"
}

# Wait (at most 20 s) until DIR holds $2 dumps.
wait_dumps() {
	local i
	for i in $(seq 1 200); do
		[ "$(ls "$1"/dump-*.sp 2>/dev/null | wc -l)" -ge "$2" ] && return 0
		sleep 0.1
	done
	fail "no dump in $1 after 20 s"
}

# Wait (at most 60 s) until dump $1 is complete: its last record is the end.
wait_whole() {
	local i
	for i in $(seq 1 600); do
		sp-decode "$1" 2>/dev/null | tail -1 | grep -q '"type":"end"' && return 0
		sleep 0.1
	done
	fail "$1 is not complete after 60 s"
}

# Wait until every thread of sp-record $1 blocks SIGUSR1 (its signalfd
# takes it): a thread started before may take it otherwise, and the
# trigger is lost.
wait_usr1() {
	local i t ok
	for i in $(seq 1 300); do
		ok=1
		for t in /proc/"$1"/task/*/status; do
			[ $((0x$(awk '/^SigBlk/ { print $2 }' "$t" 2>/dev/null || echo 0) & 0x200)) != 0 ] ||
				ok=
		done
		[ -n "$ok" ] && return 0
		sleep 0.1
	done
	fail "sp-record $1 does not take SIGUSR1"
}

# Wait (at most 120 s) until the child $2 of $1 has used $3 ticks of CPU.
wait_cpu() {
	local i pid ticks
	for i in $(seq 1 1200); do
		pid=$(pgrep -P "$1" -x "$2" | head -1)
		if [ -n "$pid" ]; then
			ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
			[ "${ticks:-0}" -ge "$3" ] && return 0
		fi
		sleep 0.1
	done
	fail "$2 (child of $1) did not get $3 ticks of CPU in 120 s"
}

# A busy program with a name of our own, started now.
start_busy() {
	cp /bin/sh "$BATS_TEST_TMPDIR/oldbusy"
	"$BATS_TEST_TMPDIR/oldbusy" -c 'while :; do :; done' &
	BUSY=$!
}

@test "--flight without -o DIR is refused, and so is -o FILE (left as it was)" {
	run -64 sp-record --flight=1M -a
	assert_output --partial "--flight needs -o DIR"
	echo keep >"$BATS_TEST_TMPDIR/file.sp"
	run -64 sp-record --flight=1M -o "$BATS_TEST_TMPDIR/file.sp" -a
	assert_output --partial "is not a directory"
	[ "$(cat "$BATS_TEST_TMPDIR/file.sp")" = keep ]	# not opened, not truncated
	run -64 sp-record --flight=lots -o "$BATS_TEST_TMPDIR/" -a
	assert_output --partial "invalid --flight"
	run -64 sp-record --keep=3 -a
	assert_output --partial "need -o DIR"
}

@test "a SIGUSR1 dump reads alone: the old process defined, the window's loss counted" {
	require_root
	start_busy
	sleep 1		# long before the window
	# kernel events and spans are not what this tests: without them the
	# sources attach at once, even on a loaded machine
	sp-record -F 499 -p "$BUSY" --events=none --spans=none --flight=1s --flight-after=300ms \
		--dump-interval=0 -o "$D/" 2>"$BATS_TEST_TMPDIR/err" &
	REC=$!
	wait_usr1 "$REC"
	# The window (1 s) goes on only once the loop runs: how soon that is
	# depends on the load. So a dump at a time, until one is from a
	# recording longer than the window (it counts what went before it).
	for i in $(seq 1 30); do
		sleep 2
		kill -USR1 "$REC"
		wait_dumps "$D" "$i"
		dump=$(ls -t "$D"/dump-*-signal.sp | head -1)
		wait_whole "$dump"
		sp-decode "$dump" | grep '"type":"lost"' | grep -q '"what":"window"' && break
	done
	kill -INT "$REC"
	wait "$REC" || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	REC=
	[ "$(stat -c %a "$dump")" = 600 ]
	run -0 sp-decode "$dump"
	# the process record of a process that began 4 s ago, in a 1 s window
	echo "$output" | grep '"type":"process"' | grep -q "\"pid\":$BUSY" ||
		fail "no process record of $BUSY"
	echo "$output" | grep -q '"type":"string".*"value":"oldbusy"' || fail "no comm"
	echo "$output" | grep '"type":"sample"' | grep -q "\"pid\":$BUSY" || fail "no sample"
	echo "$output" | grep '"type":"lost"' | grep -q '"what":"window"' ||
		fail "the records older than the window are not counted"
	end=$(echo "$output" | tail -1)
	echo "$end" | grep -q '"type":"end".*"reason":"trigger".*"trigger":"signal"' || fail "$end"
	echo "$end" | grep -q '"detail":"SIGUSR1 from pid' || fail "$end"
	echo "$end" | grep -q '"trigger_time":[1-9]' || fail "$end"
	# one end record only: none between the chunks
	[ "$(echo "$output" | grep -c '"type":"end"')" = 1 ]
	run -0 sh -c "sp-symbolize '$dump' | sp-correlate | sp-tree"
	assert_output --partial "comm=oldbusy"
	run -0 sh -c "sp-symbolize '$dump' | sp-flame -o '$BATS_TEST_TMPDIR/f.svg'"
}

@test "the window stays within --flight=256K under a flood of opens, and says what it dropped" {
	require_root
	[ -x "$SP_EXAMPLES/evtest" ] || skip "needs build/examples/evtest (make)"
	sp-record -F 4999 --spans=none --flight=256K --flight-after=0 -o "$D/" -- \
		"$SP_EXAMPLES/evtest" flood 1000000000 2>"$BATS_TEST_TMPDIR/err" &
	REC=$!
	wait_usr1 "$REC"
	# The flood starts once the sources are attached (seconds on a loaded
	# machine): the window is full once the flood has had a second of CPU
	# (thousands of opens, many times 256K of events), however long that
	# takes.
	wait_cpu "$REC" evtest 100
	kill -USR1 "$REC"
	wait_dumps "$D" 1
	sleep 1
	kill -USR1 "$REC"	# the second waits for --dump-interval (10 s)
	sleep 1
	kill -INT "$REC"
	wait "$REC" || true
	REC=
	n=0
	for dump in "$D"/dump-*.sp; do
		size=$(stat -c %s "$dump")
		# the bound, and at most what a batch adds before it is checked
		[ "$size" -le $((768 * 1024)) ] || fail "$dump: $size bytes"
		run -0 sp-decode "$dump"
		echo "$output" | grep '"type":"lost"' | grep '"what":"window"' |
			grep -q '"count":[1-9]' || fail "$dump: no window loss"
		echo "$output" | grep -q '"type":"event"' || fail "$dump: no event"
		n=$((n + 1))
	done
	[ "$n" = 2 ] || fail "$n dumps (the pending one is written at the end)"
}

# The numbers of sp-record -v's "id space:" line in $1: now, peak,
# compactions, dropped.
id_space() {
	sed -n 's/^sp-record: id space: \([0-9]*\) definitions now, at most \([0-9]*\); \([0-9]*\) compactions dropped \([0-9]*\)$/\1 \2 \3 \4/p' "$1"
}

@test "a flood of new names through a small window: the id space stays small, each dump reads alone" {
	require_root
	mkdir -m 700 "$D"
	T=$BATS_TEST_TMPDIR
	# 4000 file names and 400 processes never seen before, twice: a dump
	# in between, one at the end. Each name is a string, each process its
	# own process record, arguments and modules.
	cat >"$T/flood.sh" <<-'EOF'
	flood() {
		for i in $(seq 1 4000); do
			: <"/nonexistent/flood-$1-$i" 2>/dev/null
			[ $((i % 10)) = 0 ] && bash -c "exec -a shortlived-$1-$i true"
		done
	}
	flood one
	: >"$T/phase1"
	while [ ! -e "$T/go" ]; do sleep 0.1; done
	flood two
	EOF
	T=$T sp-record -v -F 999 --flight=256K --flight-after=0 -o "$D/" -- \
		env T="$T" bash "$T/flood.sh" 2>"$T/err" &
	REC=$!
	while [ ! -e "$T/phase1" ]; do sleep 0.1; done
	wait_usr1 "$REC"
	kill -USR1 "$REC"
	wait_dumps "$D" 1
	kill -USR1 "$REC"	# waits for --dump-interval: written at the end
	touch "$T/go"
	wait "$REC" || fail "sp-record: $(cat "$T/err")"
	REC=
	read -r now peak compactions dropped <<<"$(id_space "$T/err")"
	[ -n "$dropped" ] || fail "no id space line: $(grep 'id space' "$T/err")"
	# 8000 names, 800 processes (each several definitions) went through;
	# what is kept is what is live, plus what came since the last compaction
	[ "$compactions" -ge 2 ] || fail "$compactions compactions"
	[ "$dropped" -ge 8800 ] || fail "dropped $dropped"
	[ "$peak" -lt 8800 ] || fail "at most $peak definitions"
	[ "$now" -lt 8800 ] || fail "$now definitions at the end"
	n=0
	for dump in "$D"/dump-*.sp; do
		n=$((n + 1))
		# no reference to an id the dump does not define (exit 1 then)
		run -0 sp-decode "$dump"
		echo "$output" | grep '"type":"lost"' | grep -q '"what":"window"' ||
			fail "$dump: no window loss"
		# the flood's shell began long before the window: defined all the same
		echo "$output" | grep -q '"type":"string".*"value":"bash"' || fail "$dump: no bash"
		echo "$output" | grep -q '"value":"/nonexistent/flood-' || fail "$dump: no open"
		run -0 bash -o pipefail -c "sp-symbolize '$dump' | sp-correlate | sp-tree"
		assert_output --partial "comm=bash"
		assert_output --partial "/nonexistent/flood-"
	done
	[ "$n" = 2 ] || fail "$n dumps"
	# the first dump has the first flood's last names, the second (written
	# when --dump-interval allowed it) the second flood's
	run -0 sp-decode "$(ls "$D"/dump-*.sp | head -1)"
	assert_output --partial "/nonexistent/flood-one-4000"
	run -0 sp-decode "$(ls "$D"/dump-*.sp | tail -1)"
	assert_output --partial "/nonexistent/flood-two-"
}

@test "--off-cpu through process churn: the id space is compacted, the waits keep their modules" {
	require_root
	mkdir -m 700 "$D"
	T=$BATS_TEST_TMPDIR
	# 3000 names and 750 processes never seen before, each process waited
	# for by the shell (an off-CPU wait in wait4) and itself waiting in
	# nanosleep; then the same shell waits until told to end.
	cat >"$T/churn.sh" <<-'EOF'
	for i in $(seq 1 3000); do
		: 2>/dev/null <"/nonexistent/churn-$i"
		[ $((i % 4)) = 0 ] && bash -c "exec -a churn-$i sleep 0.002"
	done
	: >"$T/churned"
	while [ ! -e "$T/go" ]; do sleep 0.05; done
	EOF
	T=$T sp-record -v -F 99 --off-cpu --flight=256K --flight-after=0 -o "$D/" -- \
		env T="$T" bash "$T/churn.sh" 2>"$T/err" &
	REC=$!
	while [ ! -e "$T/churned" ]; do sleep 0.1; done
	wait_usr1 "$REC"
	sleep 1		# waits of the shell after the churn's compactions
	kill -USR1 "$REC"
	wait_dumps "$D" 1
	touch "$T/go"
	wait "$REC" || fail "sp-record: $(cat "$T/err")"
	REC=
	run grep -c "cannot renumber" "$T/err"
	[ "$output" = 0 ] || fail "$(cat "$T/err")"
	read -r now peak compactions dropped <<<"$(id_space "$T/err")"
	[ -n "$dropped" ] || fail "no id space line: $(grep 'id space' "$T/err")"
	[ "$compactions" -ge 1 ] || fail "$compactions compactions"
	[ "$dropped" -ge 3000 ] || fail "dropped $dropped"
	dump=$(ls "$D"/dump-*.sp)
	# every id it uses defined (exit 1 otherwise)
	run -0 sp-decode "$dump"
	echo "$output" >"$T/dump.jsonl"
	# each off-CPU wait of the shell unwound whole: its frames in the
	# kernel, in libc and in bash itself; of a sleep (new since the
	# compactions), in sleep: by the modules the dump defines
	run python3 - "$T/dump.jsonl" <<-'EOF'
	import json, sys
	exe, waits, other = {}, {"bash": 0, "sleep": 0}, {}
	for line in open(sys.argv[1]):
	    r = json.loads(line)
	    if r.get("type") == "process":
	        exe[r["pid"]] = r.get("exe", "")
	    if r.get("type") != "sample" or r.get("kind") != "offcpu":
	        continue
	    prog = exe.get(r["pid"], "").rsplit("/", 1)[-1]
	    if r.get("unwind") != "complete":	# one inside an exec, a fork
	        k = prog + ":" + str(r.get("unwind"))
	        other[k] = other.get(k, 0) + 1
	        continue
	    if prog not in waits:
	        other[prog + ":complete"] = other.get(prog + ":complete", 0) + 1
	        continue
	    waits[prog] += 1
	    fr = r.get("frames", [])
	    mods = [f.get("module", "") for f in fr if f.get("mode") == "user"]
	    # the loader mapping the program's libraries: no frame of it yet
	    if mods and all("/ld-linux" in m for m in mods):
	        continue
	    if not any(f.get("mode") == "kernel" for f in fr):
	        sys.exit("no kernel frame: " + line)
	    if not any(m.endswith("/" + prog) for m in mods):
	        sys.exit("no frame in " + prog + ": " + line)
	    if prog == "bash" and not any("/libc.so" in m for m in mods):
	        sys.exit("no libc frame: " + line)
	print(waits["bash"], waits["sleep"], json.dumps(other, sort_keys=True))
	EOF
	[ "$status" = 0 ] || fail "$output"
	read -r bash sleep other <<<"$output"
	[ "$bash" -ge 3 ] && [ "$sleep" -ge 3 ] ||
		fail "$bash waits of the shell, $sleep of sleep in the dump (not complete: $other; $(grep -c . "$T/dump.jsonl") records)"
	run -0 bash -o pipefail -c "sp-symbolize '$dump' | sp-tree"
}

@test "a dump that is due does not wait for the next batch (--batch=60s)" {
	require_root
	start_busy
	sp-record -F 999 -p "$BUSY" --events=none --spans=none --batch=60s --flight=1M \
		--flight-after=0 --dump-interval=0 -o "$D/" 2>"$BATS_TEST_TMPDIR/err" &
	REC=$!
	wait_usr1 "$REC"
	# A dump at a time until one holds a sample of the busy program (how
	# soon the loop runs, and the program with it, depends on the load).
	# The next batch is a minute away: each dump is whole well before it.
	for i in $(seq 1 20); do
		sleep 1
		kill -USR1 "$REC"
		wait_dumps "$D" "$i"
		dump=$(ls -t "$D"/dump-*.sp | head -1)
		for j in $(seq 1 300); do
			sp-decode "$dump" 2>/dev/null | tail -1 | grep -q '"reason":"trigger"' && break
			sleep 0.1
		done
		[ "$j" -lt 300 ] || fail "$dump is not whole after 30 s: it waits for the batch"
		sp-decode "$dump" | grep -q '"type":"sample"' && break
	done
	kill -INT "$REC"
	wait "$REC" || true
	REC=
	# whole and alone: its size is what was written (the space reserved
	# for it is not part of it), then symbolized, correlated, a tree
	run -0 sp-decode "$dump"
	echo "$output" | head -1 | grep -q '"type":"header"'
	echo "$output" | tail -1 | grep -q '"reason":"trigger"'
	echo "$output" | grep -q '"type":"sample"' || fail "no sample in the dump"
	sp-symbolize "$dump" | sp-correlate | sp-tree > "$BATS_TEST_TMPDIR/tree"
	grep -q 'comm=oldbusy' "$BATS_TEST_TMPDIR/tree" || fail "$(cat "$BATS_TEST_TMPDIR/tree")"
}

@test "-v accounts for each dump's wait in its phases; dumps copied while the next chunk starts read whole" {
	require_root
	start_busy
	sp-record -v -F 999 -p "$BUSY" --events=none --spans=none --flight=1M --flight-after=0 \
		--dump-interval=0 -o "$D/" 2>"$BATS_TEST_TMPDIR/err" &
	REC=$!
	wait_usr1 "$REC"
	# Each dump's copy runs while the recording starts its next chunk: three
	# in a row, each one whole, then the window goes on.
	for i in 1 2 3; do
		sleep 1
		kill -USR1 "$REC"
		wait_dumps "$D" "$i"
		wait_whole "$(ls -t "$D"/dump-*-signal.sp | head -1)"
	done
	kill -INT "$REC"
	wait "$REC" || fail "sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	REC=
	for dump in "$D"/dump-*-signal.sp; do
		run -0 sp-decode "$dump"
		echo "$output" | head -1 | grep -q '"type":"header"' || fail "$dump: no header first"
		echo "$output" | tail -1 | grep -q '"reason":"trigger"' || fail "$dump: no end last"
		[ "$(echo "$output" | grep -c '"type":"end"')" = 1 ] || fail "$dump: not one end"
	done
	# one account per dump, its phases adding up to the whole (each is
	# rounded to 0.1 ms: within 0.3 ms)
	run -0 grep 'trigger to complete' "$BATS_TEST_TMPDIR/err"
	[ "${#lines[@]}" = 3 ] || fail "$output"
	for l in "${lines[@]}"; do
		echo "$l" | awk '{
			if (!match($0, /trigger to complete [0-9.]+ ms: the loop took it after [0-9.]+ ms, set the job up in [0-9.]+ ms .*; the thread reserved the blocks in [0-9.]+ ms, copied in [0-9.]+ ms; synced in [0-9.]+ ms more; the loop started the next chunk meanwhile, in [0-9.]+ ms/))
				exit 1
			split(substr($0, RSTART, RLENGTH), w, " ")
			total = w[4]; sum = w[11] + w[18] + w[39] + w[43]
			exit (total - sum > 0.3 || sum - total > 0.3) ? 1 : 0
		}' || fail "phases do not add up: $l"
	done
}

@test "rotation keeps --keep segments, each reads alone, and all of them in a row" {
	require_root
	mkdir -m 700 "$D"
	: >"$D/segment-000041.sp"	# numbering goes on after the highest
	# the command runs at least 2.4 s, however fast the machine: 6 or more
	# segments of 400 ms, of which the newest 3 are kept
	run -0 sp-record -F 999 --segment=400ms --keep=3 -o "$D" -- \
		sh -c 'for i in 1 2 3 4 5 6; do i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; /bin/true; sleep 0.4; done'
	ls "$D"
	[ "$(ls "$D" | wc -l)" = 3 ]
	[ ! -e "$D/segment-000041.sp" ]
	last=$(ls "$D" | tail -1)
	first=$(ls "$D" | head -1)
	[ "${first#segment-}" \> "000042.sp" ]
	for f in "$D"/segment-*.sp; do
		[ "$(stat -c %a "$f")" = 600 ]
		run -0 sp-decode "$f"
		echo "$output" | head -1 | grep -q '"type":"header".*"segment":[1-9]' || fail "$f"
		if [ "$f" = "$D/$last" ]; then
			echo "$output" | tail -1 | grep -v '"reason":"rotated"' | grep -q '"type":"end"'
		else
			echo "$output" | tail -1 | grep -q '"type":"end".*"reason":"rotated"' || fail "$f"
		fi
		# a sample's stack resolves with this file's definitions alone
		run -0 sh -c "sp-symbolize '$f' | sp-correlate | sp-tree"
	done
	run -0 sh -c "cat '$D'/segment-*.sp | sp-decode --stats"
	assert_output --regexp "header +3"
	assert_output --regexp "end +3"
}

@test "sp-record killed (-9) while dumping leaves the earlier dump whole and the last readable" {
	require_root
	start_busy
	sp-record -F 999 -p "$BUSY" --flight=8M --flight-after=0 --dump-interval=0 \
		-o "$D/" 2>/dev/null &
	REC=$!
	wait_usr1 "$REC"
	sleep 2
	kill -USR1 "$REC"
	wait_dumps "$D" 1
	sleep 1
	kill -USR1 "$REC"
	kill -9 "$REC"
	wait "$REC" || true
	REC=
	first=$(ls "$D"/dump-*.sp | head -1)
	run -0 sp-decode "$first"
	echo "$output" | tail -1 | grep -q '"reason":"trigger"'
	for f in "$D"/dump-*.sp; do
		# a cut dump reads to its last whole record, then says it is cut
		run sp-decode "$f"
		echo "$output" | head -1 | grep -q '"type":"header"' || fail "$f"
		[ "$status" = 0 ] || echo "$stderr$output" | grep -q "cut short" || fail "$f: $output"
	done
}

@test "sp-record killed (-9) as a dump begins leaves a dump that holds the header at least" {
	require_root
	require_cmd gdb
	start_busy
	sp-record -F 99 --events=none -p "$BUSY" --flight=1M --flight-after=0 \
		-o "$D/" 2>"$BATS_TEST_TMPDIR/err" &
	REC=$!
	wait_usr1 "$REC"
	# Held at the start of the dump's copy (its thread), however fast or
	# slow the machine: the dump is created, nothing is copied yet. Killed
	# there, the file must not be empty.
	run timeout 120 gdb -q -batch -nx -p "$REC" -ex 'set pagination off' \
		-ex 'handle SIGUSR1 nostop noprint pass' -ex 'break copy_job' \
		-ex "shell kill -USR1 $REC" -ex continue -ex "shell kill -9 $REC"
	[[ "$output" != *'"copy_job" not defined'* ]] || skip "sp-record has no symbols"
	[[ "$output" == *"Breakpoint 1, copy_job"* ]] ||
		fail "not held at the copy: $output; sp-record: $(cat "$BATS_TEST_TMPDIR/err")"
	wait "$REC" || true
	REC=
	dump=$(ls "$D"/dump-*-signal.sp) || fail "no dump: $(ls "$D")"
	[ -s "$dump" ] || fail "$dump is empty"
	# what a dump cut short at its start reads as: its header, status 0,
	# no end record
	run --separate-stderr -0 sp-decode "$dump"
	echo "$output" | head -1 | grep -q '"type":"header".*"segment":[1-9]' || fail "$output"
	echo "$output" | grep -q '"type":"end"' && fail "an end record in a dump cut short: $output"
	true
}

@test "--keep deletes the oldest dumps an earlier run left, also of one second" {
	require_root
	mkdir -m 700 "$D"
	# an earlier run's dumps of one second: the second sorts first by name
	: >"$D/dump-20261204T055812Z-signal.sp"
	: >"$D/dump-20261204T055812Z-signal-2.sp"
	touch -d '2026-12-04 05:58:12.100' "$D/dump-20261204T055812Z-signal.sp"
	touch -d '2026-12-04 05:58:12.700' "$D/dump-20261204T055812Z-signal-2.sp"
	run sp-record -F 99 --events=none --spans=none --flight=1M --flight-after=0 --keep=2 \
		--trigger=exit -o "$D" -- sh -c 'sleep 0.5; exit 3'
	[ "$status" = 3 ] || fail "sp-record: $output"
	ls "$D"/dump-*-exit.sp || fail "no dump of the exit: $(ls "$D")"
	[ -e "$D/dump-20261204T055812Z-signal-2.sp" ] || fail "the newer one went: $(ls "$D")"
	[ ! -e "$D/dump-20261204T055812Z-signal.sp" ] || fail "the oldest is kept: $(ls "$D")"
	[ "$(ls "$D" | wc -l)" = 2 ]
}

# One run that dumps at its command's exit into $D, keeping $1 dumps.
dump_at_exit() {
	run sp-record -F 99 --events=none --spans=none --flight=1M --flight-after=0 --keep="$1" \
		--trigger=exit -o "$D" -- sh -c 'sleep 0.2; exit 3'
	[ "$status" = 3 ] || fail "sp-record: $output"
}

@test "--keep deletes by the dumps' numbers, not their times: a clock set back between runs" {
	require_root
	mkdir -m 700 "$D"
	# an earlier sp-record's dumps, named by a time 73 years ahead, and a
	# numbered one of that time
	: >"$D/dump-20991231T235958Z-signal.sp"
	: >"$D/dump-20991231T235959Z-signal.sp"
	: >"$D/dump-000007-20991231T235959Z-signal.sp"
	dump_at_exit 3
	dump_at_exit 3
	# the two runs' dumps numbered on from 7, whatever their time says
	ls "$D"
	[ -e "$D/dump-000007-20991231T235959Z-signal.sp" ] || fail "the numbered one went: $(ls "$D")"
	first=$(ls "$D" | grep -E '^dump-000008-[0-9]{8}T[0-9]{6}Z-exit\.sp$') ||
		fail "the first run's dump is gone or misnamed: $(ls "$D")"
	second=$(ls "$D" | grep -E '^dump-000009-[0-9]{8}T[0-9]{6}Z-exit\.sp$') ||
		fail "the second run's dump is gone or misnamed: $(ls "$D")"
	[ "$(ls "$D" | wc -l)" = 3 ] || fail "the time-named ones are kept: $(ls "$D")"
	run -0 sp-decode "$D/$second"
	echo "$output" | grep -q '"type":"end".*"trigger":"exit"' || fail "$output"
}

@test "a clock set back (faketime) between two runs: --keep keeps the newest dumps" {
	require_root
	require_cmd faketime
	mkdir -m 700 "$D"
	FAKETIME_DONT_FAKE_MONOTONIC=1 faketime '2099-12-31 23:59:00' \
		sp-record -F 99 --events=none --spans=none --flight=1M --flight-after=0 --keep=2 \
		--trigger=exit -o "$D" -- sh -c 'sleep 0.2; exit 3' || [ $? = 3 ] || fail "faketime run"
	ls "$D" | grep -q '^dump-.*2099[0-9]\{4\}T' ||
		skip "faketime did not reach sp-record's clock: $(ls "$D")"
	dump_at_exit 2
	dump_at_exit 2
	ls "$D"
	# the dumps of the two later runs are the newest: the one named 2099 goes
	[ "$(ls "$D" | wc -l)" = 2 ] || fail "$(ls "$D")"
	! ls "$D" | grep -q 2099 || fail "the newest went, the oldest is kept: $(ls "$D")"
}

@test "the output directory is ours alone: another user's, a symlink, a shared one refused" {
	require_root
	nobody_tools
	nb=$NOBODY_DIR/nb
	mkdir "$nb" && chown 65534:65534 "$nb"
	theirs=$nb/theirs
	setpriv --reuid=65534 --regid=65534 --clear-groups mkdir -m 700 "$theirs"
	run -2 sp-record --flight=1M -o "$theirs/" -a -d 1
	assert_output --partial "belongs to uid 65534"
	# a symlink nobody planted where we were told to write
	mkdir -m 700 "$BATS_TEST_TMPDIR/target"
	setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$BATS_TEST_TMPDIR/target" "$nb/dumps"
	run -2 sp-record --flight=1M -o "$nb/dumps/" -a -d 1
	assert_output --partial "a symlink is not followed"
	[ -z "$(ls "$BATS_TEST_TMPDIR/target")" ]
	mkdir -m 1777 "$BATS_TEST_TMPDIR/shared"
	run -2 sp-record --segment=1M -o "$BATS_TEST_TMPDIR/shared" -a -d 1
	assert_output --partial "writable by others"
	rm -rf "$NOBODY_DIR"
}

@test "a full disk keeps the window and says so once; the next dump, with room, is whole" {
	require_root
	[ -x "$SP_EXAMPLES/evtest" ] || skip "needs build/examples/evtest (make)"
	mkdir "$D"
	mount -t tmpfs -o size=64k,mode=0700 tmpfs "$D" || skip "cannot mount a tmpfs"
	sp-record -F 999 --spans=none --flight=1M --flight-after=0 --dump-interval=0 -o "$D/" -- \
		"$SP_EXAMPLES/evtest" flood 1000000000 2>"$BATS_TEST_TMPDIR/err" &
	REC=$!
	wait_usr1 "$REC"
	# the window must be larger than the disk (64k): after a second of
	# the flood's CPU it holds 1M of its events, however loaded the machine
	wait_cpu "$REC" evtest 100
	kill -USR1 "$REC"
	for i in $(seq 1 600); do
		grep -q 'cannot write the dump' "$BATS_TEST_TMPDIR/err" && break
		sleep 0.1
	done
	kill -USR1 "$REC"
	sleep 2
	# a dump that could not be written is deleted (once its copy failed,
	# how soon depends on the load); one left whole would stay
	for i in $(seq 1 300); do
		[ -z "$(ls "$D")" ] && break
		sleep 0.1
	done
	[ -z "$(ls "$D")" ] || fail "a partial dump was left: $(ls -l "$D")"
	mount -o remount,size=16m "$D"
	kill -USR1 "$REC"
	wait_dumps "$D" 1
	kill -INT "$REC"
	wait "$REC" || true
	REC=
	run -0 sp-decode "$(ls "$D"/dump-*.sp)"
	echo "$output" | tail -1 | grep -q '"reason":"trigger"' || fail "$output"
	[ "$(grep -c 'cannot write the dump' "$BATS_TEST_TMPDIR/err")" = 1 ] ||
		fail "$(cat "$BATS_TEST_TMPDIR/err")"
}
