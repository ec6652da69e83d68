#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record: a process that is gone by the time its records are handled is
# not looked for in /proc again and again (each such look fails), and what
# the kernel said of it is all recorded still.

load helper

setup() {
	require_cmd strace
	require_cmd jq
	OUT=$BATS_TEST_TMPDIR
}

@test "sp-record: a process that exits at once is read from /proc at most once, and its records are whole" {
	# Under strace, sp-record handles each child's records well after the
	# child is gone; every /proc read of it then fails.
	strace -f -qq -e trace=openat,newfstatat,readlink,statx -o "$OUT/trace" \
		sp-record -o "$OUT/g.sp" -- \
		sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do /bin/true; done' 2>"$OUT/err"
	sp-decode "$OUT/g.sp" > "$OUT/g.json"
	jq -r 'select(.type=="process" and .comm=="true") | .pid' "$OUT/g.json" | sort -u \
		> "$OUT/pids"
	[ "$(wc -l < "$OUT/pids")" -eq 12 ]
	while read -r pid; do
		# Whole: its exec with its executable, its thread, its module
		# (with what the file says), its thread's end and its end.
		has() { [ -n "$(jq -c "select($1)" "$OUT/g.json" | head -c 1)" ]; }
		has ".type==\"process\" and .pid==$pid and .exe==\"/usr/bin/true\""
		has ".type==\"thread\" and .pid==$pid and .name==\"true\""
		has ".type==\"module\" and .pid==$pid and .path==\"/usr/bin/true\" and .build_id and .size"
		has ".type==\"thread_end\" and .tid==$pid"
		has ".type==\"process_end\" and .pid==$pid and (.flags // \"0x0\")==\"0x0\""
		# Read once at most: the first failed read says it is gone. (The
		# unwinder opens a file through the first mapping it unwinds in,
		# /proc/PID/map_files, once per file, not per process: not
		# counted.)
		n=$(grep -E "\"/proc/$pid/[^\"]*\".* = -1 E" "$OUT/trace" |
			grep -cv "/map_files/" || true)
		[ "$n" -le 1 ] || {
			echo "pid $pid: $n failed /proc reads:"
			grep "/proc/$pid/" "$OUT/trace"
			false
		}
	done < "$OUT/pids"
}

@test "sp-record: an exec and an end read no /proc/PID/status nor ns/mnt, and the JIT perf map of a process that ran no JIT code is not looked for" {
	require_root	# the kernel's record of each exec and end (BPF)
	strace -f -qq -e trace=%file,read -o "$OUT/trace" \
		sp-record -o "$OUT/s.sp" -- \
		sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do /bin/true; done' 2>"$OUT/err"
	sp-decode "$OUT/s.sp" | jq -r 'select(.type=="process" and .comm=="true") | .pid' |
		sort -u > "$OUT/pids"
	[ "$(wc -l < "$OUT/pids")" -eq 12 ]
	while read -r pid; do
		n=$(grep -c "\"/proc/$pid/status\"" "$OUT/trace" || true)
		[ "$n" -eq 0 ] || {
			echo "pid $pid: /proc/$pid/status read $n times:"
			grep "\"/proc/$pid/status\"" "$OUT/trace"
			false
		}
		# whether its executable's file is the host's: the kernel said
		n=$(grep -c "\"/proc/$pid/ns/mnt\"" "$OUT/trace" || true)
		[ "$n" -eq 0 ] || {
			echo "pid $pid: /proc/$pid/ns/mnt looked at $n times"
			false
		}
		n=$(grep -c "perf-$pid\.map" "$OUT/trace" || true)
		[ "$n" -eq 0 ] || {
			echo "pid $pid: $n system calls for its perf map:"
			grep "perf-$pid\.map" "$OUT/trace"
			false
		}
	done < "$OUT/pids"
}
