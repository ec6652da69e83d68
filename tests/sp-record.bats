#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record: real perf_event_open recordings of the bundled workload.

load helper

WL=$SP_EXAMPLES/workload

setup() {
	require_cmd jq
	[ -x "$WL" ] || skip "build/examples/workload is not built (make)"
	OUT=$BATS_TEST_TMPDIR
}

teardown() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
	[ -n "${BGPIDS:-}" ] && kill $BGPIDS 2>/dev/null
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
	true
}

# Decode a spool to JSON lines (checked: the spool must be readable).
decode() {
	sp-decode "$1" > "$1.json"
}

# Whether jq prints anything (jq 1.6's -e only looks at the last input).
has() {
	[ -n "$(jq -c "$@" | head -c 1)" ]
}

@test "sp-record: --check says what the machine supports" {
	run --separate-stderr -0 sp-record --check
	assert_output --partial "software events"
	assert_output --partial "kernel stacks"
	assert_output --regexp "(yes|no) +hardware events"
}

@test "sp-record: --check -p says whether each pid can be attached to; a gone one is an error" {
	sleep 30 &
	BGPIDS=$!
	run --separate-stderr -0 sp-record --check -p $BGPIDS
	[ "${lines[0]}" = "-p $BGPIDS (sleep, /usr/bin/sleep): can be attached to" ] || fail "$output"
	# what a recording of it gets: recorded for a second
	[ "${lines[1]}" = "-p: what a recording gets, recorded for 1 s with the default spans:" ] ||
		fail "$output"
	[ "${lines[2]}" = "  pid $BGPIDS: no Python or Ruby found in it (native stacks only)" ] ||
		fail "$output"
	[ "${lines[3]}" = "  pid $BGPIDS: no samples: it did not run on a CPU in that second" ] ||
		fail "$output"
	kill $BGPIDS
	wait $BGPIDS 2>/dev/null || true
	run --separate-stderr -2 sp-record --check -p $BGPIDS
	[ "$stderr" = "sp-record: error: pid $BGPIDS: no such process" ] || fail "$stderr"
	[ -z "$output" ]
}

@test "sp-record: --check -p records into no path another user controls (TMPDIR theirs: nothing made there, no hang)" {
	require_root
	local dir=$BATS_TEST_TMPDIR/theirs pid
	mkdir -m 0777 "$dir"
	chown nobody "$dir"
	runuser -u nobody -- sleep 30 &
	pid=$!
	sleep 0.2
	pid=$(pgrep -P $pid -x sleep || echo $pid)
	TMPDIR=$dir run --separate-stderr -0 timeout 60 sp-record --check --spans=usdt -p $pid
	assert_line "-p: what a recording gets, recorded for 1 s with --spans=usdt:"
	assert_line "  pid $pid: no Python or Ruby found in it (native stacks only)"
	[ -z "$(ls -A "$dir")" ] || fail "made in TMPDIR: $(ls -A "$dir")"
	kill $pid 2>/dev/null || true
}

@test "sp-record: --check -p records with the --spans-match globs given: no Ruby there is missing, exit 1" {
	require_root
	sleep 30 &
	local pid=$!
	run --separate-stderr -1 sp-record --check --spans-match='Foo#*' -p $pid
	assert_line "-p: what a recording gets, recorded for 1 s with --spans-match=Foo#*:"
	assert_line "  missing: no Ruby in the -p processes or those they started in that second, for --spans-match=Foo#*"
	kill $pid
}

@test "sp-record: nothing to record is a usage error" {
	run --separate-stderr -64 sp-record
	[[ "$stderr" == *"nothing to record"* ]]
	run --separate-stderr -64 sp-record -p 1 -a
	[[ "$stderr" == *"exclude each other"* ]]
	run --separate-stderr -64 sp-record -F 0 -- true
	[[ "$stderr" == *"invalid frequency '0'"* ]]
}

@test "sp-record: a command that does not exist exits 127 with one message" {
	require_root
	run --separate-stderr -127 sp-record -o "$OUT/x.sp" -- /nonexistent/cmd
	assert_equal "$stderr" "sp-record: error: cannot run '/nonexistent/cmd': No such file or directory"
	# The spool is still complete: header and end record.
	decode "$OUT/x.sp"
	run jq -r 'select(.type=="end") | .reason' "$OUT/x.sp.json"
	assert_output "error"
}

@test "sp-record: an unwritable output path is reported and nothing runs" {
	run --separate-stderr -2 sp-record -o /nonexistent/dir/x.sp -- touch "$OUT/ran"
	[[ "$stderr" == *"'/nonexistent/dir/x.sp'"* ]]
	[ ! -e "$OUT/ran" ]
}

@test "sp-record: with a terminal on stdout it writes ./stackpulse.sp and says so" {
	require_root
	require_cmd script util-linux
	cd "$OUT"
	run script -qec "sp-record --events=none --spans=none -- true" /dev/null
	assert_output --partial "writing 'stackpulse.sp'"
	run --separate-stderr -0 sp-decode stackpulse.sp
	[[ "$output" == *'"type":"end"'* ]]
}

@test "sp-record: an unknown event, and a hardware event without a PMU, are one clear error" {
	run --separate-stderr -2 sp-record -e bogus -o "$OUT/x.sp" -- true
	[[ "$stderr" == *"unknown event 'bogus'"* ]]
	require_root
	if sp-record --check | grep -q '^  no  hardware events'; then
		run --separate-stderr -2 sp-record -e cycles -o "$OUT/x.sp" -- true
		[[ "$stderr" == *"event 'cycles' is not available: this machine has no hardware PMU"* ]]
		[ "$(grep -c . <<< "$stderr")" = 1 ]
	else
		run --separate-stderr -0 sp-record -e cycles -o "$OUT/x.sp" -- true
	fi
}

@test "sp-record: samples the kernel drops are counted, never silently" {
	require_root
	# A one-page ring at 10 kHz overflows unless the loop keeps up.
	run --separate-stderr -0 sp-record --events=none --spans=none -m 1 -F 10000 \
		-o "$OUT/l.sp" -- "$WL" 0.5
	decode "$OUT/l.sp"
	lost=$(jq -s '[.[] | select(.type=="lost" and (.what // "samples")=="samples") | .count] | add // 0' \
		"$OUT/l.sp.json")
	run jq -r 'select(.type=="end") | .lost_samples // 0' "$OUT/l.sp.json"
	assert_output "$lost"
	echo "lost: $lost"
	if [ "$lost" -gt 0 ]; then
		[[ "$stderr" == *"$lost samples lost"* ]]
		# Each lost record names its CPU.
		! has 'select(.type=="lost" and .cpu == null)' "$OUT/l.sp.json"
	fi
}

@test "sp-record: a pid that does not exist; the recording it would have replaced is kept" {
	run --separate-stderr -2 sp-record -o "$OUT/x.sp" -p 999999999
	[[ "$stderr" == *"pid 999999999: no such process"* ]]
	# A recording that never starts leaves the file as it was; one that
	# starts replaces it whole.
	run -0 sp-record -o "$OUT/keep.sp" -- sh -c 'echo one > /dev/null'
	cp "$OUT/keep.sp" "$OUT/keep.before"
	run --separate-stderr -2 sp-record -o "$OUT/keep.sp" -p 1,999999999 -d 1
	[[ "$stderr" == *"pid 999999999: no such process"* ]]
	cmp "$OUT/keep.sp" "$OUT/keep.before"
	run --separate-stderr -64 sp-record -o "$OUT/keep.sp" --events=bogus -- true
	cmp "$OUT/keep.sp" "$OUT/keep.before"
	run -0 sp-record -o "$OUT/keep.sp" -- true
	run -0 sp-decode "$OUT/keep.sp"
	[ "$(jq -r 'select(.type=="header") | .command' <<< "$output")" = true ] || fail "$output"
	run -0 sp-decode --stats "$OUT/keep.sp"
	[[ "$output" != *"echo one"* ]]
}

@test "sp-record: -p of a thread that is not its process's first is refused, naming the process to give" {
	require_root
	"$WL" 20 &
	wl=$!
	BGPIDS=$wl
	sleep 0.3	# let it start its backend thread
	BGPIDS="$wl $(pgrep -P $wl || true)"	# stopped by teardown
	tid=$(ls "/proc/$wl/task" | grep -vx "$wl" | head -1)
	[ -n "$tid" ] || fail "no second thread in $wl"
	run --separate-stderr -2 sp-record -o "$OUT/t.sp" -p "$tid" -d 0.5
	[[ "$stderr" == *"pid $tid: a thread of process $wl, not a process: give -p $wl"* ]]
}

@test "sp-record: every thread and the child process of the workload have samples" {
	require_root
	run --separate-stderr -0 sp-record -o "$OUT/w.sp" -- "$WL" 0.6
	decode "$OUT/w.sp"
	J=$OUT/w.sp.json
	root=$(jq -r 'select(.type=="process" and .args != null) | .pid' "$J" | head -1)
	child=$(jq -r "select(.type==\"process\" and .ppid==$root) | .pid" "$J" | head -1)
	backend=$(jq -r "select(.type==\"thread\" and .pid==$root and .name==\"backend\") | .tid" "$J" | tail -1)
	[ -n "$root" ] && [ -n "$child" ] && [ -n "$backend" ]
	# Samples on the main thread, the backend thread and in the child.
	for tid in "$root" "$backend" "$child"; do
		n=$(jq "select(.type==\"sample\" and .tid==$tid)" "$J" | jq -s length)
		echo "tid $tid: $n samples"
		[ "$n" -ge 5 ]
	done
	# The child's name change (prctl) was recorded.
	has "select(.type==\"thread\" and .tid==$child and .name==\"wl-child\")" "$J"
	# Both processes ended, the command with status 0, and the recording ended.
	has "select(.type==\"process_end\" and .pid==$child)" "$J"
	has "select(.type==\"process_end\" and .pid==$root and (.status // 0)==0)" "$J"
	run jq -r 'select(.type=="end") | "\(.reason // "exited") \(.samples)"' "$J"
	[[ "$output" == "exited "* ]]
	# The end record counts what is in the spool.
	n=$(jq -s '[.[] | select(.type=="sample")] | length' "$J")
	assert_output "exited $n"
}

@test "sp-record: the workload's hot functions are in the stacks, at nm's addresses" {
	require_root
	require_cmd nm binutils
	run --separate-stderr -0 sp-record -o "$OUT/w.sp" -- "$WL" 0.6
	decode "$OUT/w.sp"
	exe=$(readlink -f "$WL")
	# rel of every frame of the workload in every sample, leaf and callers.
	jq -r --arg exe "$exe" 'select(.type=="sample") | .frames[] |
		select(.module==$exe) | .rel' "$OUT/w.sp.json" | sort | uniq -c > "$OUT/rels"
	[ -s "$OUT/rels" ]
	# Symbol ranges from nm, checked independently of sp-record.
	nm -S --defined-only "$WL" | awk '$3 ~ /^[tT]$/ { print $1, $2, $4 }' > "$OUT/syms"
	hits() {	# samples whose frames fall in function $1
		local addr size name lo hi n=0 count rel
		read -r addr size name < <(awk -v fn="$1" '$3 == fn' "$OUT/syms")
		lo=$((16#$addr)) hi=$((16#$addr + 16#$size))
		while read -r count rel; do
			((rel >= lo && rel < hi)) && n=$((n + count))
		done < "$OUT/rels"
		echo $n
	}
	for fn in hash_token fold_constants draw_line mix_pixels child_checksum walk_tree; do
		echo "$fn: $(hits $fn)"
		[ "$(hits $fn)" -gt 0 ]
	done
	# Leaves: most user leaf frames of the workload are in the five leaves.
	jq -r --arg exe "$exe" 'select(.type=="sample") | .frames[0] |
		select(.module==$exe) | .rel' "$OUT/w.sp.json" | sort | uniq -c > "$OUT/rels"
	leaf=0
	for fn in hash_token fold_constants draw_line mix_pixels child_checksum; do
		leaf=$((leaf + $(hits $fn)))
	done
	all=$(awk '{ n += $1 } END { print n }' "$OUT/rels")
	echo "leaves in hot functions: $leaf of $all"
	[ $((leaf * 10)) -ge $((all * 8)) ]
}

@test "sp-record: build-ids match readelf -n" {
	require_root
	require_cmd readelf binutils
	run --separate-stderr -0 sp-record -o "$OUT/w.sp" -- "$WL" 0.2
	decode "$OUT/w.sp"
	n=0
	while read -r path bid; do
		[ -f "$path" ] || continue
		want=$(readelf -n "$path" | awk '/Build ID:/ { print $3 }')
		echo "$path: $bid vs $want"
		assert_equal "$bid" "$want"
		n=$((n + 1))
	done < <(jq -r 'select(.type=="module" and .build_id != null and (.path|startswith("/")))
		| "\(.path) \(.build_id)"' "$OUT/w.sp.json" | sort -u)
	# At least the workload, the dynamic linker and libc.
	[ "$n" -ge 3 ]
}

@test "sp-record: kernel frames come with kernel symbols from /proc/kallsyms" {
	require_root
	# a command that spends its time in the kernel (copying zeros), so
	# that samples surely have kernel frames
	run --separate-stderr -0 sp-record -o "$OUT/w.sp" -- \
		dd if=/dev/zero of=/dev/null bs=64k count=100000
	decode "$OUT/w.sp"
	# vmlinux symbols (those of modules and BPF programs come and go) are
	# real kallsyms lines: address and name.
	jq -r 'select(.type=="ksym" and .kmod == null) | "\(.addr[2:]) \(.name)"' \
		"$OUT/w.sp.json" | sort -u > "$OUT/ksyms"
	[ -s "$OUT/ksyms" ]
	awk '{ print $1, $3 }' /proc/kallsyms | sort -u > "$OUT/kallsyms"
	run comm -23 "$OUT/ksyms" "$OUT/kallsyms"
	assert_output ""
	# Every kernel frame falls in one of them (a return address: the byte
	# before it, the call, as sp-symbolize looks it up).
	jq -r 'select(.type=="frame" and .mode=="kernel") | .addr' "$OUT/w.sp.json" > "$OUT/kf"
	jq -r 'select(.type=="ksym") | "\(.addr) \(.size)"' "$OUT/w.sp.json" > "$OUT/kr"
	bad=0
	while read -r a; do
		ok=0
		while read -r lo size; do
			((a >= lo && a < lo + (size ? size : 1))) && { ok=1; break; }
			((a - 1 >= lo && a - 1 < lo + (size ? size : 1))) && { ok=1; break; }
		done < "$OUT/kr"
		[ $ok = 1 ] || bad=$((bad + 1))
	done < <(sort -u "$OUT/kf" | head -60)
	run echo $bad
	assert_output "0"
}

@test "sp-record: -a beside dd: every kernel frame inside a ksym record is named, its ksym written before it" {
	require_root
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	dd if=/dev/zero of=/dev/null bs=64k count=100000000 2>/dev/null &
	BGPIDS=$!
	run --separate-stderr -0 sp-record --events=none --spans=none -a -d 1 -o "$OUT/a.sp"
	kill $BGPIDS
	decode "$OUT/a.sp"
	sp-symbolize "$OUT/a.sp" 2>/dev/null | sp-decode > "$OUT/a.sym.json"
	run python3 - "$OUT/a.sp.json" "$OUT/a.sym.json" <<-'EOF'
	import json, sys
	def load(path):
	    return [json.loads(l) for l in open(path)]
	def covered(ksyms, a):
	    return any(lo <= a < lo + max(size, 1) for lo, size in ksyms)
	# the recording: a kernel frame comes after the ksym that holds it
	ksyms, late = [], 0
	for r in load(sys.argv[1]):
	    if r["type"] == "ksym":
	        ksyms.append((int(r["addr"], 16), r.get("size", 0)))
	    elif r["type"] == "frame" and r.get("mode") == "kernel":
	        a = int(r["addr"], 16)
	        late += not (covered(ksyms, a) or covered(ksyms, a - 1))
	all_ksyms = ksyms
	# symbolized: every kernel frame of every sample inside a ksym is named
	inside = unnamed = 0
	for r in load(sys.argv[2]):
	    if r["type"] != "sample":
	        continue
	    for f in r.get("frames", []):
	        if f.get("mode") != "kernel":
	            continue
	        a = int(f["addr"], 16)
	        if covered(all_ksyms, a) or covered(all_ksyms, a - 1):
	            inside += 1
	            unnamed += "func" not in f
	print("kernel frames after their ksym: %d late; in samples: %d inside a ksym, %d unnamed"
	      % (late, inside, unnamed))
	sys.exit(1 if late or unnamed or inside < 100 else 0)
	EOF
	[ "$status" = 0 ]
}

@test "sp-record: a process ends with the last of its threads (exit_group: the first thread often goes first)" {
	require_root
	[ -x /usr/bin/python3.11 ] || skip "needs /usr/bin/python3.11"
	run --separate-stderr -3 sp-record --no-samples --spans=none -o "$OUT/t.sp" -- /usr/bin/python3.11 -c '
import os, threading, time
for _ in range(3):
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
time.sleep(0.2)
os._exit(3)'
	decode "$OUT/t.sp"
	# no record of the process's threads after its end
	run -0 jq -s '[.[] | select(.type == "process_end")] | length' "$OUT/t.sp.json"
	assert_output 1
	run -0 jq -s '
		([.[] | select(.type == "process_end")][0]) as $fin
		| [.[] | select(.pid == $fin.pid and .time > $fin.time and .type != "module")] | length' \
		"$OUT/t.sp.json"
	assert_output 0
	run -0 jq -s '[.[] | select(.type == "thread_end")] | length' "$OUT/t.sp.json"
	(( output >= 4 ))
	run --separate-stderr -0 sp-correlate -o /dev/null "$OUT/t.sp"
	[[ "$stderr" != *"no process record"* ]] || fail "$stderr"
}

@test "sp-record: each exec's process record has that program's arguments, or none, never another's" {
	require_root
	# sh execs env, which execs sleep; sh's child sleep is exec'd after a fork
	run --separate-stderr -0 sp-record -o "$OUT/x.sp" -- \
		sh -c 'sleep 0.4; exec env sleep 0.5'
	decode "$OUT/x.sp"
	run -0 jq -r 'select(.type=="process") | "\(.comm)|\(.args // "-")"' "$OUT/x.sp.json"
	# the command line given, on the command's first program only
	[ "$(grep -c "^sh|sh -c 'sleep 0.4; exec env sleep 0.5'$" <<<"$output")" = 1 ]
	[ "$(grep -c "sleep 0.4; exec" <<<"$output")" = 1 ]
	# the programs that ran long enough to be read are read (the fork
	# child's, the command's last)
	grep -qx 'sleep|sleep 0.4' <<<"$output"
	grep -qx 'sleep|sleep 0.5' <<<"$output"
	# env, gone by the time its record is written, has none or its own
	run -0 grep '^env|' <<<"$output"
	[[ "$output" == "env|-" || "$output" == "env|env sleep 0.5" ]]
}

@test "sp-record: exits with the command's status, or 128 + its signal" {
	require_root
	run --separate-stderr -7 sp-record -o "$OUT/a.sp" -- "$WL" 0.05 7
	decode "$OUT/a.sp"
	run jq -r 'select(.type=="end") | .status' "$OUT/a.sp.json"
	assert_output "7"
	run --separate-stderr -143 sp-record -o "$OUT/b.sp" -- sh -c 'kill -TERM $$'
	decode "$OUT/b.sp"
	has 'select(.type=="process_end" and .status==143)' "$OUT/b.sp.json"
}

@test "sp-record: SIGINT is passed to the command and the spool ends cleanly" {
	require_root
	sp-record -o "$OUT/i.sp" -- "$WL" 20 2> "$OUT/err" &
	rec=$!
	BGPIDS=$rec
	# Wait until the workload runs (its samples are on disk), then interrupt.
	for i in $(seq 150); do
		[ -s "$OUT/i.sp" ] && sp-decode "$OUT/i.sp" 2>/dev/null | grep -q '"sample"' && break
		sleep 0.1
	done
	kill -INT $rec
	st=0
	wait $rec || st=$?
	assert_equal "$st" 130	# the workload died of the SIGINT it was passed
	decode "$OUT/i.sp"
	run jq -r 'select(.type=="end") | .reason' "$OUT/i.sp.json"
	assert_output "signal"
	has 'select(.type=="sample")' "$OUT/i.sp.json"
}

@test "sp-record: a recording through a pipe is readable while it grows" {
	require_root
	mkfifo "$OUT/fifo"
	sp-record --batch 50ms -o "$OUT/fifo" -- "$WL" 3 2>/dev/null &
	rec=$!
	BGPIDS=$rec
	# The first sample must reach the reader while the recorder still runs.
	sp-decode "$OUT/fifo" | {
		grep -m1 '"type":"sample"' > "$OUT/first"
		kill -0 $rec 2>/dev/null && echo alive > "$OUT/alive"
		cat > /dev/null
	}
	wait $rec
	[ -s "$OUT/first" ]
	[ -e "$OUT/alive" ]
}

@test "sp-record: SIGKILL of the recorder leaves a readable spool" {
	require_root
	sp-record --batch 50ms -o "$OUT/k.sp" -- "$WL" 20 2>/dev/null &
	rec=$!
	BGPIDS=$rec
	for i in $(seq 100); do
		[ -s "$OUT/k.sp" ] && sp-decode "$OUT/k.sp" 2>/dev/null | grep -q '"sample"' && break
		sleep 0.1
	done
	kill -KILL $rec
	wait $rec || true
	run --separate-stderr sp-decode "$OUT/k.sp"
	# The workload goes on without the recorder: stop it (its pids are in the spool).
	BGPIDS=$(printf '%s\n' "$output" | jq -r 'select(.type=="process") | .pid' | sort -u)
	[ "$status" -eq 0 ]
	[[ "$output" == *'"type":"sample"'* ]]
	[[ "$output" != *'"type":"end"'* ]]
}

@test "sp-record: a full disk gives one clear error and a readable spool" {
	require_root
	MNT=$OUT/full
	mkdir -p "$MNT"
	mount -t tmpfs -o size=8k tmpfs "$MNT" || skip "cannot mount a tmpfs"
	run --separate-stderr -2 sp-record --batch 20ms -o "$MNT/x.sp" -- "$WL" 2
	[[ "$stderr" == *"cannot write '$MNT/x.sp': No space left on device"* ]]
	[ "$(grep -c 'error:' <<< "$stderr")" = 1 ]
	run --separate-stderr -0 sp-decode "$MNT/x.sp"
	[[ "$output" == *'"type":"header"'* ]]
	umount "$MNT"
	MNT=
}

@test "sp-record: -p records a running process and its existing threads" {
	require_root
	"$WL" 20 &	# long enough for the BPF sources to load first
	wl=$!
	BGPIDS=$wl
	sleep 0.3	# let it start its thread and child
	BGPIDS="$wl $(pgrep -P $wl || true)"	# stopped by teardown
	run --separate-stderr -0 sp-record -o "$OUT/p.sp" -p $wl -d 0.5
	decode "$OUT/p.sp"
	J=$OUT/p.sp.json
	has "select(.type==\"process\" and .pid==$wl and .flags==\"0x1\")" "$J"
	# The backend thread existed before sp-record attached: it has samples.
	n=$(jq -s "[.[] | select(.type==\"sample\" and .pid==$wl)] | map(.tid) | unique | length" "$J")
	[ "$n" -ge 2 ]
	# Its executable mapping came from /proc/PID/maps, with the build-id.
	want=$(readelf -n "$WL" | awk '/Build ID:/ { print $3 }')
	has --arg b "$want" 'select(.type=="module" and .build_id==$b)' "$J"
	run jq -r 'select(.type=="end") | .reason' "$J"
	assert_output "duration"
}

@test "sp-record: -p A -p B: once A ends, B is still recorded and the recorder does not spin on A's rings" {
	require_root
	local a b rec used
	sleep 60 &
	a=$!
	# B: busy, so that it has samples after A's end
	sh -c 'while :; do :; done' &
	b=$!
	BGPIDS="$a $b"
	sp-record -v -p $a -p $b --off-cpu -o "$OUT/ab.sp" 2> "$OUT/err" &
	rec=$!
	BGPIDS="$a $b $rec"
	wait_path "$OUT/ab.sp" 60 && sleep 2
	# sp-record's CPU (clock ticks, its threads) over the 4 s after A's end
	used=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/$rec/stat)
	kill $a
	sleep 4
	used=$(( $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/$rec/stat) - used ))
	kill -INT $rec
	wait $rec || fail "sp-record: $(cat "$OUT/err")"
	kill $b
	BGPIDS=
	# the rings the first events of A own said EPOLLHUP for good: the loop
	# woke at once, again and again, most of a CPU (2.5 s of the 4 measured
	# beside B's loop); a few hundredths of a second now
	echo "sp-record's CPU in the 4 s after A's end: $used ticks of $(getconf CLK_TCK) a second" >&3
	[ "$used" -lt "$(( $(getconf CLK_TCK) * 3 / 2 ))" ] || fail "sp-record used $used ticks: $(cat "$OUT/err")"
	decode "$OUT/ab.sp"
	# B's samples go on after A's end
	run jq -s --argjson a "$a" --argjson b "$b" '([.[] | select(.type == "process_end" and .pid == $a) | .time] | first) as $gone
		| [.[] | select(.type == "sample" and .pid == $b and .time > $gone)] | length' "$OUT/ab.sp.json"
	[ "$output" -gt 100 ] || fail "B's samples after A's end: $output"
}

@test "sp-record: -p of a process whose binary was deleted since (an upgrade) keeps its build-id, archive and names" {
	require_root
	require_cmd readelf binutils
	local want
	cp "$WL" "$OUT/wl-old"
	"$OUT/wl-old" 20 &
	wl=$!
	BGPIDS=$wl
	sleep 0.3
	BGPIDS="$wl $(pgrep -P $wl || true)"	# stopped by teardown
	want=$(readelf -n "$OUT/wl-old" | awk '/Build ID:/ { print $3 }')
	rm "$OUT/wl-old"
	# a file made under the deleted one's name is not it
	printf 'not an ELF file\n' > "$OUT/wl-old (deleted)"
	run --separate-stderr -0 sp-record -o "$OUT/del.sp" --archive="$OUT/arch" -p $wl -d 0.5
	decode "$OUT/del.sp"
	has --arg b "$want" --arg p "$OUT/wl-old (deleted)" \
		'select(.type=="module" and .path==$p and .build_id==$b)' "$OUT/del.sp.json"
	[ -f "$OUT/arch/${want:0:2}/${want:2}" ]
	# its functions are named from the archive's copy
	run -0 sp-symbolize --archive="$OUT/arch" -o "$OUT/del.sym" "$OUT/del.sp"
	sp-flame --folded "$OUT/del.sym" | grep -q 'backend_thread;'
}

# Python that runs the program $2 (its arguments after it) from a memfd
# named $1, as runc, systemd and sandboxes do (fexecve): its code is mapped
# from '/memfd:$1 (deleted)'.
MEMFD_EXEC='import os, sys
fd = os.memfd_create(sys.argv[1], 0)
with open(sys.argv[2], "rb") as f:
    os.write(fd, f.read())
os.execv("/proc/self/fd/%d" % fd, [sys.argv[1]] + sys.argv[3:])'

@test "sp-record: a program run from a memfd is a file: CFI stacks, build-id, archive and names" {
	require_root
	require_cmd readelf binutils
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	local want jit n
	want=$(readelf -n "$WL" | awk '/Build ID:/ { print $3 }')
	run --separate-stderr -0 sp-record --events=none --spans=none --call-graph=dwarf \
		--archive="$OUT/arch" -o "$OUT/mfd.sp" -- /usr/bin/python3 -c "$MEMFD_EXEC" wl "$WL" 0.5
	echo "$stderr"
	# unwound with its CFI: no stack stops in it as if it were JIT code
	[[ "$stderr" != *"jit:"* ]]
	decode "$OUT/mfd.sp"
	has --arg b "$want" --arg p "/memfd:wl (deleted)" \
		'select(.type=="module" and .path==$p and .build_id==$b)' "$OUT/mfd.sp.json"
	jit=$(jq -r 'select(.type == "sample" and .unwind == "jit") | 1' "$OUT/mfd.sp.json" | wc -l)
	n=$(jq -r 'select(.type == "sample" and .unwind == "complete") | 1' "$OUT/mfd.sp.json" | wc -l)
	echo "samples complete: $n, jit: $jit"
	[ "$jit" = 0 ]
	[ "$n" -ge 50 ]
	[ -f "$OUT/arch/${want:0:2}/${want:2}" ]
	# the process is gone: its functions are named from the archive's copy,
	# in whole stacks of each thread and of the child it forked
	run -0 sp-symbolize --archive="$OUT/arch" -o "$OUT/mfd.sym" "$OUT/mfd.sp"
	sp-flame --folded "$OUT/mfd.sym" > "$OUT/mfd.folded"
	grep -q '^_start;__libc_start_main;.*main;run_frontend;walk_tree;' "$OUT/mfd.folded"
	grep -q ';backend_thread;run_backend;walk_tree;' "$OUT/mfd.folded"
	grep -q 'main;run_child;walk_tree;' "$OUT/mfd.folded"
}

@test "sp-record: -p of a program of nobody's run from a memfd reads its build-id through map_files" {
	require_root
	require_cmd readelf binutils
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	local want wl jit
	nobody_tools
	want=$(readelf -n "$NOBODY_EXAMPLES/workload" | awk '/Build ID:/ { print $3 }')
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "$MEMFD_EXEC" \
		wl "$NOBODY_EXAMPLES/workload" 20 &
	wl=$!
	BGPIDS=$wl
	sleep 0.5
	BGPIDS="$wl $(pgrep -P $wl || true)"	# stopped by teardown
	grep -q '/memfd:wl (deleted)' /proc/$wl/maps
	run --separate-stderr -0 sp-record --call-graph=dwarf -o "$OUT/mfdp.sp" \
		--archive="$OUT/arch" -p $wl -d 0.5
	echo "$stderr"
	[[ "$stderr" != *"jit:"* ]]
	decode "$OUT/mfdp.sp"
	# read from the file (flag 0x8: /proc/PID/maps gives no build-id)
	has --arg b "$want" --arg p "/memfd:wl (deleted)" \
		'select(.type=="module" and .path==$p and .build_id==$b and .flags=="0x18")' \
		"$OUT/mfdp.sp.json"
	jit=$(jq -r 'select(.type == "sample" and .unwind == "jit") | 1' "$OUT/mfdp.sp.json" | wc -l)
	[ "$jit" = 0 ]
	kill $BGPIDS
	wait $wl || true
	BGPIDS=
	[ ! -d /proc/$wl ] || [ "$(cat /proc/$wl/comm)" != wl ]
	run -0 sp-symbolize --archive="$OUT/arch" -o "$OUT/mfdp.sym" "$OUT/mfdp.sp"
	sp-flame --folded "$OUT/mfdp.sym" > "$OUT/mfdp.folded"
	grep -q ';backend_thread;run_backend;walk_tree;' "$OUT/mfdp.folded"
	grep -q 'main;run_frontend;walk_tree;' "$OUT/mfdp.folded"
}

@test "sp-record: code a JIT runs from a memfd (no ELF in it) stays JIT code" {
	require_root
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	# a loop of machine code written to a memfd, mapped executable and
	# called in a loop: .NET's W^X double mapping does the same
	run --separate-stderr -0 sp-record --events=none --spans=none --call-graph=dwarf \
		-o "$OUT/mjit.sp" -- /usr/bin/python3 -c '
import ctypes, os, struct, time
fd = os.memfd_create("jitcode", 0)
code = b"\x48\xb9" + struct.pack("<Q", 2000000) + b"\x48\xff\xc9\x75\xfb\xc3"
os.write(fd, code.ljust(4096, b"\xcc"))
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
loop = ctypes.CFUNCTYPE(None)(libc.mmap(None, 4096, 5, 1, fd, 0))
end = time.time() + 0.5
while time.time() < end:
    loop()'
	echo "$stderr"
	assert_regex "$stderr" "jit: [0-9.]+% of stacks stopped in JIT-compiled code"
	decode "$OUT/mjit.sp"
	has --arg p "/memfd:jitcode (deleted)" \
		'select(.type=="module" and .path==$p and .flags=="0x2" and .build_id==null)' \
		"$OUT/mjit.sp.json"
}

@test "sp-record: -p puts each attached process's command line in the header, escaped" {
	require_root
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	# arguments as we give them: one with spaces and quotes, one with an ESC
	/usr/bin/python3 -c 'import time; time.sleep(30)' marker-arg $'esc\e[2J' &
	py=$!
	sleep 30 &
	sl=$!
	BGPIDS="$py $sl"
	sleep 0.3
	run --separate-stderr -0 sp-record -o "$OUT/pp.sp" -p $py,$sl -d 0.3
	want="-p $py: /usr/bin/python3 -c 'import time; time.sleep(30)' marker-arg 'esc\x1b[2J'; -p $sl: sleep 30"
	run --separate-stderr -0 sp-tree "$OUT/pp.sp"
	assert_line "# command: $want"
	[[ "$output" != *$'\e'* ]] || fail "a raw ESC in sp-tree's output"
	run --separate-stderr -0 sp-decode --stats "$OUT/pp.sp"
	assert_line "command         $want"
	[[ "$output" != *$'\e'* ]] || fail "a raw ESC in sp-decode --stats"
	run --separate-stderr -0 sp-decode --stats-json "$OUT/pp.sp"
	assert_equal "$(jq -r .command <<< "$output")" "$want"
}

@test "sp-record: -p of a shell records the process it started before the attach" {
	require_root
	# sh waits for the workload: the sampled CPU is all in its child
	sh -c '"$1" 20; :' _ "$WL" &
	sh_pid=$!
	BGPIDS=$sh_pid
	sleep 0.3
	kid=$(pgrep -P $sh_pid)
	BGPIDS="$sh_pid $kid $(pgrep -P "$kid" || true)"	# stopped by teardown
	run --separate-stderr -0 sp-record -v -o "$OUT/pc.sp" -p $sh_pid -d 0.5
	[[ "$stderr" == *"-p: also recording"*"(first: pid $kid)"* ]]
	decode "$OUT/pc.sp"
	J=$OUT/pc.sp.json
	has "select(.type==\"process\" and .pid==$kid and .flags==\"0x1\" and .ppid==$sh_pid)" "$J"
	has "select(.type==\"sample\" and .pid==$kid)" "$J"
	# --no-children: the shell alone is sampled (it waits: no samples)
	run --separate-stderr -0 sp-record -v --no-children -o "$OUT/pn.sp" -p $sh_pid -d 0.5
	[[ "$stderr" != *"-p: also recording"* ]]
	decode "$OUT/pn.sp"
	! has "select(.type==\"sample\" and .pid==$kid)" "$OUT/pn.sp.json"
}

@test "sp-record: -p of the shell sp-record runs from records the shell, not sp-record" {
	require_root
	# the shell waits for sp-record, its child: nothing of it is recorded
	run --separate-stderr -0 sh -c 'sp-record -v -o "$1" -p $$ -d 0.5; :' _ "$OUT/self.sp"
	[[ "$stderr" != *"-p: also recording"* ]] || fail "$stderr"
	decode "$OUT/self.sp"
	run -0 jq -r 'select(.type=="process") | .comm' "$OUT/self.sp.json"
	[ "$output" = sh ] || fail "processes: $output"
}

@test "sp-record: -p of a kernel thread says nothing of a JIT map it cannot have" {
	require_root
	local k
	# kdevtmpfs: in a mount namespace of its own, with no root to reach
	k=$(pgrep -x kdevtmpfs) || skip "no kdevtmpfs kernel thread"
	run --separate-stderr -0 sp-record -o "$OUT/k.sp" -p "$k" -d 0.3
	[[ "$stderr" != *"JIT perf map"* ]] || fail "$stderr"
}

@test "sp-record: -a records the whole machine for --duration" {
	require_root
	run --separate-stderr -0 sp-record -o "$OUT/a.sp" -a -d 0.3 -F 199
	decode "$OUT/a.sp"
	has 'select(.type=="sample")' "$OUT/a.sp.json"
	has 'select(.type=="process" and .pid==1)' "$OUT/a.sp.json"
}

# A loop of short processes that exec twice, running while the events open
# CPU by CPU: a process started then and gone before /proc is read has its
# record all the same, and the samples of a process's exit after its end
# record are its own (sp-correlate).
@test "sp-record: -a beside a loop of short processes: every sampled process has a record before its samples, and sp-correlate names no unknown pid" {
	require_root
	local end=$((SECONDS + 5)) loop
	(while [ $SECONDS -lt $end ]; do sh -c 'exec env true'; done) &
	loop=$!
	sleep 0.3
	run --separate-stderr -0 sp-record -o "$OUT/l.sp" -a -d 2
	kill "$loop" 2>/dev/null || true
	wait "$loop" || true
	decode "$OUT/l.sp"
	# in file order: a sample's pid (not the idle task's) defined before it
	run jq -rn '[inputs] | reduce .[] as $r ({d: {}, bad: []};
		if $r.type == "process" then .d[($r.pid | tostring)] = 1
		elif $r.type == "sample" and $r.pid != 0 and (.d[($r.pid | tostring)] | not)
		then .bad += [$r.pid] else . end) | .bad | unique | .[]' "$OUT/l.sp.json"
	assert_output ""
	run --separate-stderr -0 sp-correlate --stats -o /dev/null "$OUT/l.sp"
	[[ $stderr != *"no process record before them"* ]]
	# the loop's processes were sampled as they ended
	[[ $stderr =~ \ ([0-9]+)\ records\ of\ processes\ just\ after\ their\ end ]]
}

@test "sp-record: -a with a command records the machine until the command ends" {
	require_root
	run --separate-stderr -3 sp-record --events=none --spans=none -o "$OUT/ac.sp" -a -- "$WL" 0.3 3
	decode "$OUT/ac.sp"
	# The command after its exec (flag 0x2); other workloads may run too.
	root=$(jq -rs --arg a "$WL 0.3 3" 'map(select(.type=="process" and .args==$a and
		.flags=="0x2")) | .[0].pid' "$OUT/ac.sp.json")
	[ "$root" != null ]
	has "select(.type==\"sample\" and .pid==$root)" "$OUT/ac.sp.json"
	has "select(.type==\"sample\" and .pid!=$root)" "$OUT/ac.sp.json"
	run jq -r 'select(.type=="end") | "\(.reason // "exited") \(.status)"' "$OUT/ac.sp.json"
	assert_output "exited 3"
}

@test "sp-record: without permission for kernel stacks it says so once and records user stacks" {
	require_root
	require_cmd setpriv util-linux
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ] || skip "perf_event_paranoid < 2"
	nobody_tools
	run --separate-stderr -0 bash -c 'setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$3/sp-record" --spans=none --events=none -- "$1" 0.3 > "$2"' _ \
		"$NOBODY_EXAMPLES/workload" "$OUT/u.sp" "$NOBODY_BIN"
	rm -rf "$NOBODY_DIR"
	echo "$stderr"
	[ "$(grep -c 'kernel stacks' <<< "$stderr")" = 1 ]
	decode "$OUT/u.sp"
	has 'select(.type=="sample")' "$OUT/u.sp.json"
	! has 'select(.type=="frame" and .mode=="kernel")' "$OUT/u.sp.json"
}

JF=$SP_EXAMPLES/jit_frames

# jit_frames runs code in anonymous memory that it names in its perf map as a
# JIT does (jf_trampoline), after a symbol sh wrote there first: only the
# symbol that holds a frame of it is written. A process with no frame in
# such code has its map not read: one map linked as every short process's
# would otherwise be written whole for each (docs/security.md).
@test "sp-record: a JIT perf map is read as its process runs and when it ends, for the symbols its frames are in" {
	require_root
	[ -x "$JF" ] || skip "build/examples/jit_frames is not built (make)"
	run --separate-stderr -0 sp-record --format=json -- sh -c \
		'printf "7f0000001000 40 never_run\n" > /tmp/perf-$$.map; echo $$ >&2; exec "$1" 0.3 map' _ "$JF"
	pid=$(grep -x "[0-9]*" <<< "$stderr")
	addr=$(awk '/jf_trampoline/ { print $1 }' "/tmp/perf-$pid.map")
	rm -f "/tmp/perf-$pid.map"
	[ -n "$addr" ]
	printf '%s\n' "$output" > "$OUT/j.json"
	run jq -r 'select(.type=="jitsym") | "\(.pid) \(.addr) \(.size) \(.name)"' "$OUT/j.json"
	assert_output "$pid 0x$addr 8 jf_trampoline"
	# read while it ran: before the samples that need it, so that a flame
	# graph names the frame (read only at the end, every sample had
	# anon+0x...)
	jq -e -s --arg a "$((16#$addr))" '($a | tonumber) as $lo | [.[] | select(.type == "jitsym"
		or (.type == "sample" and any((.frames // [])[]; (.addr | ltrimstr("0x") | explode |
		 reduce .[] as $c (0; . * 16 + ($c | if . >= 97 then . - 87 else . - 48 end)))
		 as $x | $x >= $lo and $x <= $lo + 8)))][0].type == "jitsym"' "$OUT/j.json"
	run -0 bash -c "sp-decode --encode '$OUT/j.json' | sp-symbolize | sp-flame --format=folded"
	[[ $output == *';jf_run;jf_trampoline;jf_hot;jf_mix '* ]]
	[[ $output != *'anon+'* ]]
	# a process that ran no code without a file: its map is left alone
	run --separate-stderr -0 sp-record --format=json -- sh -c \
		'printf "7f0000001000 40 jitted_hello\n" > /tmp/perf-$$.map; echo $$ >&2'
	pid=$(grep -x "[0-9]*" <<< "$stderr")
	rm -f "/tmp/perf-$pid.map"
	[[ $output != *'"type":"jitsym"'* ]]
}

@test "sp-record: a JIT perf map of another user's process is read when that user owns it" {
	require_root
	require_cmd setpriv util-linux
	nobody_tools
	# the inner shell is often reaped before its end is read: its user is
	# then the one sp-record saw it start as
	run --separate-stderr -0 sp-record --events=none --spans=none --format=json -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'sh -c '\''echo $$ >&2; exec "$1" 0.3 map'\'' _ "$1"; sleep 0.3' _ \
		"$NOBODY_EXAMPLES/jit_frames"
	pid=$(grep -x -m1 "[0-9]*" <<< "$stderr")
	rm -rf "/tmp/perf-$pid.map" "$NOBODY_DIR"
	printf '%s\n' "$output" > "$OUT/n.json"
	run jq -r 'select(.type=="jitsym") | "\(.pid) \(.name)"' "$OUT/n.json"
	assert_output "$pid jf_trampoline"
}

@test "sp-record: a JIT perf map that is a FIFO is refused at once with one warning, not waited on" {
	require_root
	require_cmd setpriv util-linux
	nobody_tools
	# (before, sp-record blocked in open() for good, deaf to SIGTERM: -k)
	run --separate-stderr timeout -k 5 60 sp-record --events=none --spans=none -o "$OUT/f.sp" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'mkfifo /tmp/perf-$$.map; echo $$ >&2; exec "$1" 0.5' _ "$NOBODY_EXAMPLES/jit_frames"
	pid=${stderr%%$'\n'*}
	rm -rf "/tmp/perf-$pid.map" "$NOBODY_DIR"
	echo "$stderr"
	assert_equal "$status" 0
	assert_equal "$(grep -c "JIT perf map" <<< "$stderr")" 1
	[[ "$stderr" == *"sp-record: warning: pid $pid: JIT perf map '/tmp/perf-$pid.map' not read: not a regular file: a FIFO"* ]]
	decode "$OUT/f.sp"
	jq -e -s '.[-1].type == "end"' "$OUT/f.sp.json"
}

@test "sp-record: an 8 GiB sparse JIT perf map is read only to its bound, in little memory" {
	require_root
	require_cmd setpriv util-linux
	nobody_tools
	require_cmd /usr/bin/time time
	run --separate-stderr timeout -k 5 120 /usr/bin/time -f 'maxrss %M' \
		sp-record --events=none --spans=none -o "$OUT/s.sp" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'truncate -s 8G /tmp/perf-$$.map; echo $$ >&2; exec "$1" 0.3' _ "$NOBODY_EXAMPLES/jit_frames"
	pid=${stderr%%$'\n'*}
	rm -rf "/tmp/perf-$pid.map" "$NOBODY_DIR"
	echo "$stderr"
	assert_equal "$status" 0
	[[ "$stderr" == *"pid $pid: JIT perf map '/tmp/perf-$pid.map' read in part: larger than 64 MiB"* ]]
	rss=$(sed -n 's/^maxrss //p' <<< "$stderr")
	echo "sp-record's largest resident size: $rss KiB"
	# about 50 MiB without any map; reading the map whole takes gigabytes
	[ "$rss" -lt $((256 * 1024)) ]
}

@test "sp-record: a JIT perf map that is a link to a root-only file is not followed" {
	require_root
	require_cmd setpriv util-linux
	nobody_tools
	printf '1000 10 secret_symbol\n' > "$OUT/secret"
	chmod 600 "$OUT/secret"
	run --separate-stderr -0 sp-record --events=none --spans=none -o "$OUT/l.sp" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		'ln -s "$1" /tmp/perf-$$.map; echo $$ >&2; exec "$2" 0.3' _ "$OUT/secret" \
		"$NOBODY_EXAMPLES/jit_frames"
	pid=${stderr%%$'\n'*}
	rm -rf "/tmp/perf-$pid.map" "$NOBODY_DIR"
	[[ "$stderr" == *"pid $pid: JIT perf map '/tmp/perf-$pid.map' not read: a symbolic link"* ]]
	! grep -q secret_symbol "$OUT/l.sp"
	decode "$OUT/l.sp"
	! has 'select(.type=="jitsym")' "$OUT/l.sp.json"
}

# plant_and_record DIR VICTIM: as nobody, make DIR/xx/ and a link to VICTIM
# named as sp-record's temporary copy of the workload would be (its pid is
# this shell's: exec), then record the workload with --archive DIR.
plant_and_record() {
	local bid
	bid=$(readelf -n "$WL" | awk '/Build ID/ { print $3 }')
	[ -n "$bid" ] || return 99
	bash -c 'setpriv --reuid=65534 --regid=65534 --clear-groups \
			sh -c "mkdir -p \"\$1\" && ln -s \"\$2\" \"\$3\"" _ "$1/${2:0:2}" "$3" \
			"$1/${2:0:2}/${2:2}.tmp.$$" || exit 99
		exec sp-record --events=none --spans=none --archive "$1" -o "$4" -- "$5" 0.2' \
		_ "$1" "$bid" "$2" "$OUT/a.sp" "$WL"
}

@test "sp-record --archive: links another user left in a shared archive are not followed" {
	require_root
	require_cmd setpriv util-linux
	require_cmd readelf binutils
	local D victim=$OUT/victim
	printf 'precious\n' > "$victim"
	chmod 600 "$victim"
	# Writable by all: refused as a whole, said once.
	D=$(mktemp -d /tmp/sp-arch.XXXXXX)
	chmod 777 "$D"
	run --separate-stderr plant_and_record "$D" "$victim"
	rm -rf "$D"
	echo "$stderr"
	assert_equal "$status" 0
	assert_equal "$(cat "$victim")" "precious"
	assert_equal "$(grep -c "archive directory" <<< "$stderr")" 1
	[[ "$stderr" == *"archive directory '$D' not used: '$D' is writable by group or others (uid 0, mode 0777)"* ]]
	# Sticky, as /tmp: used, but not the directory nobody made in it.
	D=$(mktemp -d /tmp/sp-arch.XXXXXX)
	chmod 1777 "$D"
	run --separate-stderr plant_and_record "$D" "$victim"
	echo "$stderr"
	assert_equal "$status" 0
	assert_equal "$(cat "$victim")" "precious"
	[[ "$stderr" == *"archive directory '$D/"??"' not used: '"??"' is owned by another user (uid 65534"* ]]
	# the other modules (libc, ld.so) are archived in directories of root
	n=$(find "$D" -mindepth 2 -type f -user root | wc -l)
	rm -rf "$D"
	[ "$n" -gt 0 ]
}

@test "sp-record: a cache directory that is another user's link is not used, and nothing is made through it" {
	require_root
	require_cmd setpriv util-linux
	local S R=$OUT/rootonly
	mkdir -m 700 "$R"
	S=$(mktemp -d /tmp/sp-cache.XXXXXX)
	chmod 1777 "$S"
	setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$R" "$S/c"
	SP_CACHE_DIR=$S/c run --separate-stderr -0 sp-record -o "$OUT/c.sp" -- "$WL" 0.1
	rm -rf "$S"
	echo "$stderr"
	assert_equal "$(ls -A "$R")" ""
	assert_equal "$(grep -c "cache directory" <<< "$stderr")" 1
	[[ "$stderr" == *"cache directory '$S/c' not used: '$S/c' is a symbolic link owned by another user (uid 65534"* ]]
}

@test "sp-record: a mapped file replaced by a FIFO does not hang it" {
	require_root
	require_cmd setpriv util-linux
	[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3"
	# nobody maps a file executable, then puts a FIFO at its path before
	# sp-record reads the mapping's ELF headers
	run --separate-stderr timeout -k 5 60 sp-record --events=none --spans=none -o "$OUT/m.sp" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import mmap, os, time
p = "/tmp/sp-mapped-%d" % os.getpid()
with open(p, "wb") as f:
    f.write(b"\x7fELF" + bytes(4092))
fd = os.open(p, os.O_RDONLY)
m = mmap.mmap(fd, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
os.mkfifo(p + ".f")
os.rename(p + ".f", p)
time.sleep(0.5)
os.unlink(p)'
	echo "$stderr"
	assert_equal "$status" 0
	decode "$OUT/m.sp"
	has 'select(.type=="module" and (.path | startswith("/tmp/sp-mapped-")))' "$OUT/m.sp.json"
}

@test "sp-record: --call-graph=dwarf unwinds the workload with its CFI" {
	require_root
	run --separate-stderr -0 sp-record -g dwarf -o "$OUT/d.sp" -- "$WL" 0.3
	decode "$OUT/d.sp"
	exe=$(readlink -f "$WL")
	main=$(nm "$WL" | awk '$3 == "main" { print $1 }')
	# Some stacks reach main (or the thread entry) through the unwound frames.
	n=$(jq -r --arg exe "$exe" 'select(.type=="sample") | [.frames[] | select(.module==$exe)] | length' \
		"$OUT/d.sp.json" | awk '$1 >= 6' | wc -l)
	echo "samples with >= 6 workload frames: $n"
	[ "$n" -gt 0 ]
}

@test "sp-record: without root, the default options record with one warning per missing facility" {
	require_root
	command -v setpriv >/dev/null || skip "needs setpriv"
	D=$(mktemp -d /tmp/sp-nr.XXXXXX)
	chmod 777 "$D"
	nobody_tools
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$NOBODY_BIN/sp-record" -o "$D/nr.sp" -- "$NOBODY_EXAMPLES/workload" 0.3
	st=$status
	err=$stderr
	sp-decode "$D/nr.sp" > "$OUT/nr.json"
	rm -rf "$D" "$NOBODY_DIR"
	assert_equal "$st" 0
	[[ $err != *"error"* ]]
	# each facility it lacks is named once, and nothing is said twice
	assert_equal "$(grep -c 'kernel stacks need root' <<< "$err")" 1
	assert_equal "$(grep -c 'kernel events unavailable' <<< "$err")" 1
	assert_equal "$(sort <<< "$err" | uniq -d)" ""
	jq -e -s '.[0].type == "header" and (.[0].unavailable | split(" ") | index("kernel-stacks") and index("bpf-events"))' "$OUT/nr.json"
	jq -e -s '.[-1].type == "end"' "$OUT/nr.json"
	# user stacks still come: the workload burns CPU for a while
	jq -e -s 'any(.[]; .type == "sample")' "$OUT/nr.json"
}

@test "sp-record: every option --help prints is in docs/sp-record.md" {
	run -0 sp-record --help
	# the option lines only (the examples name other tools' options)
	opts=$(grep -E '^ +(-., )?--[a-z]' <<< "$output" | grep -oE -- '--[a-z][a-z-]+' | sort -u)
	[ -n "$opts" ]
	missing=""
	for o in $opts; do
		grep -qF -- "\`$o" "$BATS_TEST_DIRNAME/../docs/sp-record.md" || missing="$missing $o"
	done
	assert_equal "$missing" ""
}
