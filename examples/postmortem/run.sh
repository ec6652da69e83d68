#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A worked post-mortem (docs/postmortem.md): the flight recorder runs on the
# whole machine, keeping its last two minutes; crashy (crashy.c) reads its
# config, burns CPU, calls a service on 127.0.0.1, runs a helper, and dies
# of SIGSEGV; the crash makes the recorder write the window out. Then the
# dump alone says what crashy did before it died: its events and child as
# a tree, where its CPU went as a flame graph.
# Usage: examples/postmortem/run.sh [BUILD_DIR [WORK_DIR]]   (as root;
#        default build and build/postmortem)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-build}
case $out in /*) ;; *) out=$top/$out ;; esac
work=${2:-$out/postmortem}
bin=$out/bin
PATH=$bin:$PATH
export SP_CACHE_DIR=${SP_CACHE_DIR-$work/cache}

for t in sp-record sp-decode sp-symbolize sp-correlate sp-tree sp-flame; do
	[ -x "$bin/$t" ] || { echo "postmortem: $bin/$t is missing: run make" >&2; exit 2; }
done
sp-record --help | grep -q -- '--flight=' ||
	{ echo "postmortem: this sp-record has no flight recorder (--flight)" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
	echo "postmortem: needs root (the whole machine, kernel events)" >&2
	exit 2
fi
command -v jq >/dev/null || { echo "postmortem: needs jq" >&2; exit 2; }
if [ -t 1 ]; then b=$'\033[1m' n=$'\033[0m'; else b= n=; fi
step() { printf '\n%s== %s%s\n' "$b" "$*" "$n"; }
show() { printf '$ %s\n' "$*"; }

rm -rf "$work/dumps"
mkdir -p "$work/dumps"
${CC:-cc} -O1 -g -fno-omit-frame-pointer -o "$work/crashy" "$top/examples/postmortem/crashy.c"

step "The flight recorder: the whole machine, the last 2 minutes (at most 64 MB) in memory"
show "sp-record -a -F 99 --spans=none --flight=64M,2m --flight-after=1s --trigger='exit=crash:crashy' -o $work/dumps &"
sp-record -a -F 99 --spans=none --flight=64M,2m --flight-after=1s \
	--trigger='exit=crash:crashy' -o "$work/dumps" 2> "$work/record.err" &
rec=$!
trap 'kill -INT $rec 2>/dev/null || true' EXIT
# ready once its perf events (one per CPU) and BPF programs are open
for ((i = 0; i < 300; i++)); do
	kill -0 "$rec" 2>/dev/null || { cat "$work/record.err" >&2; exit 2; }
	fds=$(ls -l "/proc/$rec/fd" 2>/dev/null || true)
	[ "$(grep -c 'perf_event' <<< "$fds")" -ge "$(nproc)" ] && grep -q 'bpf-prog' <<< "$fds" && break
	sleep 0.1
done
sleep 1

step "A program does several things, then crashes"
show "$work/crashy $work"
"$work/crashy" "$work" &
pid=$!
status=0
wait "$pid" || status=$?
echo "crashy (pid $pid) exited with status $status (128 + 11: SIGSEGV)"

# the dump: written once the second after the crash is in it
dump=
for ((i = 0; i < 300; i++)); do
	dump=$(ls "$work"/dumps/dump-*-exit.sp 2>/dev/null | head -n 1)
	if [ -n "$dump" ] && sp-decode "$dump" 2>/dev/null | jq -e 'select(.type == "end")' >/dev/null; then
		break
	fi
	dump=
	sleep 0.1
done
kill -INT "$rec" 2>/dev/null || true
wait "$rec" || true
trap - EXIT
[ -n "$dump" ] || { echo "postmortem: no dump after the crash" >&2; cat "$work/record.err" >&2; exit 2; }

step "The dump: a complete spool, named by time and trigger"
show "ls $work/dumps"
ls -l "$work/dumps"
show "sp-decode --stats $dump"
sp-decode --stats "$dump"
show "sp-decode $dump | jq -c 'select(.type == \"end\")'"
sp-decode "$dump" | jq -c 'select(.type == "end")'

step "What crashy did before it died: its files, connection, child, in order"
sp-symbolize -o "$work/dump.sym.sp" "$dump" 2>/dev/null
show "sp-symbolize -o dump.sym.sp $dump; sp-correlate dump.sym.sp | sp-tree --pid=$pid"
sp-correlate "$work/dump.sym.sp" | sp-tree --pid="$pid"

step "Where its CPU went in its last seconds"
show "sp-flame --pid=$pid dump.sym.sp   (folded stacks, the heaviest first)"
sp-flame --pid="$pid" "$work/dump.sym.sp" | awk '{ print $NF, $0 }' | sort -rn | cut -d' ' -f2- | head -5
show "sp-flame --svg --pid=$pid -o $work/crashy.svg dump.sym.sp"
sp-flame --svg --pid="$pid" -o "$work/crashy.svg" "$work/dump.sym.sp"
echo "The flame graph is in $work/crashy.svg."
