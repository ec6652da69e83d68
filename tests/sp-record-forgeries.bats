#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record runs as root and trusts nothing it did not make (docs/security.md):
# forgeries an attacker can plant, made here the way one would, are refused
# or not believed. Hooks of the runtimes that user nobody copied and maps
# (sp-record -a --spans, lib/record/bpf_spans_all.c), and a file system
# mounted where tracefs is looked for (lib/record/bpf_spans_load.c).
load helper

PY=/usr/bin/python3.11
LIBRUBY=/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
	STARTED=()
}

teardown() {
	kill_started "${STARTED[@]}"
	STARTED=()
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
}

require_python() {
	require_root
	[ -x $PY ] || skip "needs Debian's $PY"
	readelf -n $PY | grep -q function__entry || skip "$PY has no USDT probes"
}

# Waits (up to 30 s) until process $1 maps a file whose name ends in $2.
maps_file() {
	local i
	for i in $(seq 300); do
		grep -q -- "$2\$" "/proc/$1/maps" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

@test "sp-record -a --spans -v: 70 processes of nobody's that map a hook of their own: 64 refusals said, each once, escaped, then one line; none recorded" {
	require_python
	require_cmd setpriv
	[ -r $LIBRUBY ] || skip "needs Debian's libruby 3.1 (what the Ruby hook links to)"
	nobody_tools
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	local own="$NOBODY_DIR/own	dir" p i n err line pids=() py ok
	# The forgery: nobody's own copies of root's hooks (the Ruby one and
	# the Python package), in a directory whose name has a tab (said
	# escaped). The Ruby hook needs no Ruby to be mapped: a sleep that
	# preloads it (and libruby, which it links to) maps it, cheaply.
	mkdir "$own"
	cp "$NOBODY_DIR/runtime/ruby/3.1/stackpulse_hook.so" "$own/"
	cp -R "$NOBODY_DIR/runtime/python" "$own/"
	chown -R 65534:65534 "$own"
	for i in $(seq 69); do
		"${nobody[@]}" env LD_PRELOAD="$LIBRUBY $own/stackpulse_hook.so" sleep 600 &
		pids+=($!)
		STARTED+=($!)	# killed in teardown
	done
	# a Python with nobody's copy of the hook: its spans would show if it
	# were recorded; and one with root's hook, which is recorded
	nobody_py_loop "$own/python"
	py=$!
	pids+=($py)
	STARTED+=($py)
	nobody_py_loop "$NOBODY_DIR/runtime/python"
	ok=$!
	STARTED+=($ok)
	for p in "${pids[@]::69}"; do
		maps_file $p "$own/stackpulse_hook.so" || fail "pid $p has not mapped the forged hook"
	done
	maps_file $py "$own/python/_stackpulse_hook.cpython-311-x86_64-linux-gnu.so" ||
		fail "pid $py has not mapped the forged hook"
	maps_file $ok "$NOBODY_DIR/runtime/python/_stackpulse_hook.cpython-311-x86_64-linux-gnu.so" ||
		fail "pid $ok has not mapped root's hook"
	[ "${#pids[@]}" = 70 ]

	sp-record -v -a --no-samples --spans=python,ruby -d 2.5 -o "$OUT" 2>"$BATS_TEST_TMPDIR/err" ||
		fail "sp-record: exit $?: $(cat "$BATS_TEST_TMPDIR/err")"
	err=$(cat "$BATS_TEST_TMPDIR/err")
	# 70 of ours refused (and maybe others' on this machine): the first
	# 64 refusals are said, then one line for the rest
	n=$(grep -c "spans: pid [0-9]* maps a runtime hook not root's, or writable by others than root: not recorded: " <<<"$err" || true)
	[ "$n" = 64 ] || fail "$n refusals said: $err"
	n=$(grep -cx "sp-record: spans: more processes map a runtime hook not root's, or writable by others than root: not recorded, not said" <<<"$err" || true)
	[ "$n" = 1 ] || fail "$n lines for the refusals not said: $err"
	# each of ours said at most once, naming its pid and its file, escaped
	for p in "${pids[@]}"; do
		n=$(grep -c "spans: pid $p maps " <<<"$err" || true)
		[ "$n" -le 1 ] || fail "pid $p said $n times: $err"
		[ "$n" = 0 ] && continue
		line=$(grep "spans: pid $p maps " <<<"$err")
		if [ "$p" = "$py" ]; then
			[ "$line" = "sp-record: spans: pid $p maps a runtime hook not root's, or writable by others than root: not recorded: $NOBODY_DIR/own\\x09dir/python/_stackpulse_hook.cpython-311-x86_64-linux-gnu.so" ] ||
				fail "$line"
		else
			[ "$line" = "sp-record: spans: pid $p maps a runtime hook not root's, or writable by others than root: not recorded: $NOBODY_DIR/own\\x09dir/stackpulse_hook.so" ] ||
				fail "$line"
		fi
		! grep -q "spans: pid $p carries" <<<"$err" || fail "pid $p recorded: $err"
	done
	# most of the 64 are ours (others' refused hooks may take a few)
	n=$(for p in "${pids[@]}"; do grep "spans: pid $p maps " <<<"$err"; done | wc -l)
	[ "$n" -ge 32 ] || fail "only $n of ours said: $err"
	grep -q "spans: pid $ok carries a runtime hook" <<<"$err" || fail "$err"
	# the spans: of root's hook's process only, not of the forged Python's
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\") | .pid' | sort -u"
	assert_output "$ok"
}

# The names of the BPF programs sp-record holds while its command runs,
# when it records spans (--spans=python: loaded before the command starts),
# sorted, one a line. $@: a command to run sp-record under (none: here).
spans_progs() {
	"$@" "$SP_BIN/sp-record" --no-samples --events=none --spans=python -o "$BATS_TEST_TMPDIR/progs.sp" -- sh -c '
		for id in $(sed -n "s/^prog_id:[[:space:]]*//p" /proc/$PPID/fdinfo/*); do
			bpftool prog show id "$id" --json | jq -r .name
		done' | sort -u
}

@test "sp-record --spans: a file system mounted over tracefs's paths, with a forged events/sched, is not believed" {
	require_root
	require_cmd unshare util-linux
	require_cmd bpftool
	[ -r /sys/kernel/btf/vmlinux ] || skip "needs kernel BTF (/sys/kernel/btf/vmlinux)"
	unshare -m --propagation private mount -t tmpfs forged /sys/kernel/tracing 2>/dev/null ||
		skip "unshare cannot make a mount namespace and mount tmpfs here"
	local outside inside plant
	# Here: the programs of the spans' object the kernel has, sched_prepare_exec's
	# (tp_btf, Linux 6.10 and later) among them if it has that tracepoint.
	outside=$(spans_progs)
	grep -qx on_exit <<<"$outside" || fail "the spans' programs not seen: $outside"
	# The forgery says the opposite of the kernel (its BTF, which tracefs
	# stands in for): believed, it would leave out sched_prepare_exec's
	# program, or load it where the kernel has no such tracepoint (and the
	# load would fail). Planted on both paths sp-record looks at.
	if grep -qx on_prepare_exec <<<"$outside"; then
		plant='mkdir -p "$1/events/sched/sched_process_exit" && touch "$1/events/sched/enable"'
	else
		plant='mkdir -p "$1/events/sched/sched_prepare_exec" && touch "$1/events/sched/sched_prepare_exec/id"'
	fi
	inside=$(spans_progs unshare -m --propagation private sh -ec '
		mount -t tmpfs forged /sys/kernel/tracing
		mount -t tmpfs forged /sys/kernel/debug
		mkdir /sys/kernel/debug/tracing
		plant() { '"$plant"'; }
		plant /sys/kernel/tracing
		plant /sys/kernel/debug/tracing
		# the forgery is where sp-record looks
		[ "$(stat -f -c %T /sys/kernel/tracing/events/sched)" = tmpfs ]
		[ "$(stat -f -c %T /sys/kernel/debug/tracing/events/sched)" = tmpfs ]
		exec "$@"' sh)
	assert_equal "$inside" "$outside"
}

# The uprobe_multi links sp-record holds for every process (pid 0), from
# the fdinfo of its descriptors: their files' paths, one a line.
machine_wide_links() {
	local f
	for f in /proc/"$1"/fdinfo/*; do
		grep -q "^link_type:[[:space:]]*uprobe_multi" "$f" 2>/dev/null &&
			grep -q "^pid:[[:space:]]*0$" "$f" && sed -n 's/^path:[[:space:]]*//p' "$f"
	done
	true
}

@test "sp-record -p --spans: a hook of nobody's that a process of nobody's loads is probed for that process only, never for every process of the machine" {
	require_python
	require_cmd setpriv
	nobody_tools
	local own=$NOBODY_DIR/own py rec err=$BATS_TEST_TMPDIR/err links i
	mkdir -p "$own"
	cp -R "$NOBODY_DIR/runtime/python" "$own/"
	chown -R 65534:65534 "$own"
	nobody_py_loop "$own/python"
	py=$!
	STARTED+=($py)
	maps_file $py _stackpulse_hook.cpython-311-x86_64-linux-gnu.so || fail "no hook loaded"
	sp-record -v -p $py --no-samples --spans=python -d 30 -o "$OUT" 2> "$err" &
	rec=$!
	STARTED+=($rec)
	wait_said "$err" "attached" || fail "$(cat "$err")"
	sleep 2
	links=$(machine_wide_links $rec)
	kill -INT $rec
	wait $rec || fail "sp-record: $(cat "$err")"
	# a machine-wide link on a file nobody can replace (a symlink to libc by
	# the time it is made) would put the hook's breakpoints in every process
	echo "machine-wide links: ${links:-none}" >&3
	! grep -qF "$own" <<< "$links" || fail "a machine-wide link on nobody's file: $links"
	# its spans all the same, through links of its own
	run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"span_start\" and .pid == $py and .method == \"f\")' | wc -l"
	[ "$output" -gt 10 ] || fail "spans of f: $output: $(cat "$err")"
}
