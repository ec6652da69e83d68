# SPDX-License-Identifier: MIT
# Loaded by every .bats file.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

SP_BIN=${SP_BIN:-$BATS_TEST_DIRNAME/../build/bin}
SP_EXAMPLES=${SP_EXAMPLES:-$BATS_TEST_DIRNAME/../build/examples}
PATH=$SP_BIN:$PATH
SP_TOOLS=$(cd "$SP_BIN" && echo sp-*)
export LC_ALL=C
# Caches (sp-symbolize's DWARF indexes, sp-record's kallsyms) go to this run's
# temporary directory, never to ~/.cache.
export SP_CACHE_DIR=${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/sp-cache
# sp-symbolize would ask the environment's debuginfod servers for the
# fixtures' debug files; a test that wants a server starts its own.
unset DEBUGINFOD_URLS
f=${BATS_TEST_FILENAME##*/}
FIXTURES=$BATS_TEST_DIRNAME/fixtures/${f%.bats}

# The sp-record-end processes of the tests before this one may still be
# closing their links: a test's recording does not wait for them (it
# keeps them paused while it attaches, docs/sp-record.md), so neither
# does the test.

# Skip unless root (recording needs perf_event_open with kernel stacks and BPF).
require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root: perf_event_open and BPF"
}

# Skip unless a command exists.
require_cmd() {
	command -v "$1" >/dev/null || skip "needs $1 (${2:-not installed})"
}

# Skip unless Debian's Ruby 3.1 (libruby) and Python 3.11 have their USDT
# probes (what the runtimes' spans are tested with).
require_ruby_probes() {
	require_cmd ruby
	readelf -n /usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1 2>/dev/null | grep -q method__entry ||
		skip "needs Debian's libruby 3.1 with USDT probes"
}
require_python_probes() {
	[ -x /usr/bin/python3.11 ] || skip "needs Debian's /usr/bin/python3.11"
	readelf -n /usr/bin/python3.11 | grep -q function__entry || skip "python3.11 has no USDT probes"
}

# A copy of the tools, their runtime directory and the example programs that
# user nobody can run: the checkout may be in a directory only root can enter
# (/root/..., mode 0700). Sets NOBODY_DIR (remove it at the end of the test),
# NOBODY_BIN and NOBODY_EXAMPLES.
nobody_tools() {
	NOBODY_DIR=$(mktemp -d /tmp/sp-nobody.XXXXXX)
	mkdir -p "$NOBODY_DIR/bin" "$NOBODY_DIR/examples"
	cp "$SP_BIN"/sp-* "$NOBODY_DIR/bin/"
	if [ -d "$SP_BIN/../runtime" ]; then
		cp -R "$SP_BIN/../runtime" "$NOBODY_DIR/runtime"
	fi
	cp -R "$SP_EXAMPLES"/. "$NOBODY_DIR/examples/"
	chmod -R a+rX "$NOBODY_DIR"
	NOBODY_BIN=$NOBODY_DIR/bin
	NOBODY_EXAMPLES=$NOBODY_DIR/examples
}

# wait_path FILE [SECONDS]: waits until FILE exists (10 s by default);
# false if it never does.
wait_path() {
	local i
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	false
}

# wait_said FILE PATTERN [SECONDS]: waits until FILE (a recorder's stderr)
# has a line matching PATTERN (grep's), 30 s by default; false if never.
wait_said() {
	local i
	for ((i = 0; i < ${3:-30} * 20; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	false
}

# Kills the processes $@ a test started in the background (those still
# there) and reaps them: for teardown(), which runs even when the test
# failed half way.
kill_started() {
	local p
	for p in "$@"; do
		kill "$p" 2>/dev/null || true
		kill -CONT "$p" 2>/dev/null || true	# (a test stopped it)
	done
	for p in "$@"; do
		wait "$p" 2>/dev/null || true
	done
}

# Starts in the background ($! is its pid) a Python 3.11 of user nobody's
# that calls f() in a loop, with the Python hook of directory $1 (root's
# runtime, or a copy a test forged).
nobody_py_loop() {
	PYTHONPATH="$1" setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3.11 -c '
import time
def f(): return 1
while True:
    f(); time.sleep(0.01)' &
}

# Spools built byte by byte for the deep-input tests (sp-correlate, sp-tree,
# sp-flame): the records of a million nested spans, never a committed file.
# $1 copies of the bytes printf makes of $2, appended to $3 (doubling, so
# a million records take twenty steps).
repeat_bytes() {
	local n=$1 one=$BATS_TEST_TMPDIR/rep.one two=$BATS_TEST_TMPDIR/rep.two
	printf "$2" > "$one"
	while [ "$n" -gt 0 ]; do
		[ $((n & 1)) -eq 1 ] && cat "$one" >> "$3"
		cat "$one" "$one" > "$two" && mv "$two" "$one"
		n=$((n >> 1))
	done
}

# Append $2 span records of method string 1 on thread 7 of process 7 to the
# spool $3, each 1 ns after the one before: span_start ($1 = start, kind 10)
# or span_stop ($1 = stop, kind 11); payload: time +1, pid 7, tid 7,
# runtime 0, class 0, method 1.
span_marks() {
	if [ "$1" = start ]; then
		repeat_bytes "$2" '\012\006\002\007\007\000\000\001' "$3"
	else
		repeat_bytes "$2" '\013\006\002\007\007\000\000\001' "$3"
	fi
}

# Run a command with a 1 MiB stack: a recursion as deep as its input would
# crash it.
small_stack() {
	bash -c 'ulimit -s 1024 && exec "$@"' small_stack "$@"
}

# Waits (up to 60 s) until the spool $1 that an attached sp-record is
# writing holds a span_start of method $2: the spans flow, the recording
# found the process. Fails otherwise. ($1 must not be an earlier
# recording's: sp-record empties it only when its recording starts.)
spans_flow() {
	local i
	for i in $(seq 600); do
		sp-decode "$1" 2>/dev/null | jq -r 'select(.type == "span_start") | .method' 2>/dev/null |
			grep -qx -- "$2" && return 0
		sleep 0.1
	done
	return 1
}

# Waits (up to 60 s) until the spool $1 that a system-wide sp-record is
# writing holds its first batch (the processes already running, read at
# the start, are more than 16 KiB): the recording has begun. Loading the
# BPF programs takes seconds on a loaded machine, so "started 1 s after
# sp-record" is no proof of "started after the recording began".
recording_began() {
	local i
	for i in $(seq 600); do
		[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge 16384 ] && return 0
		sleep 0.1
	done
	return 1
}

# The interpreted frames a stack walk reads at most (bpf/interp.h).
walk_limit() {
	awk '$1 == "#define" && $2 == "SP_BPF_IFRAMES" { print $3 }' "$BATS_TEST_DIRNAME/../bpf/interp.h"
}
