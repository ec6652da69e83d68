#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: record the bundled examples and show what StackPulse makes of
# them: which method did what (a Ruby program, as a tree), where the time
# went (a C program, as hot functions and a flame graph).
# Usage: scripts/demo.sh [BUILD_DIR]   (default build)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-build}
case $out in /*) ;; *) out=$top/$out ;; esac
bin=$out/bin
wl=$out/examples/workload
shop=$top/scripts/examples/shop.rb
demo=$out/demo

for t in sp-record sp-decode sp-symbolize sp-correlate sp-tree sp-flame; do
	[ -x "$bin/$t" ] || { echo "demo: $bin/$t is missing: run make" >&2; exit 2; }
done
[ -x "$wl" ] || { echo "demo: $wl is missing: run make" >&2; exit 2; }
command -v jq >/dev/null || { echo "demo: needs jq (scripts/install-deps.sh)" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
	echo "demo: not root: sp-record records user stacks only, without kernel events" \
		"or spans (perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid))" >&2
fi
mkdir -p "$demo"
PATH=$bin:$PATH
# The demo's caches (sp-symbolize's DWARF indexes, sp-record's kallsyms) stay
# in its directory, not in ~/.cache.
export SP_CACHE_DIR=${SP_CACHE_DIR-$demo/cache}

if [ -t 1 ]; then b=$'\033[1m' n=$'\033[0m'; else b= n=; fi
step() { printf '\n%s== %s%s\n' "$b" "$*" "$n"; }
show() { printf '$ %s\n' "$*"; }

step "Which method did what: a Ruby program, its method spans and kernel events"
show "sp-record --spans=ruby -o $demo/shop.sp -- ruby scripts/examples/shop.rb"
if command -v ruby >/dev/null; then
	sp-record --spans=ruby -o "$demo/shop.sp" -- ruby "$shop"
	show "sp-correlate $demo/shop.sp | sp-tree --span 'Shop#run'"
	sp-correlate "$demo/shop.sp" 2>/dev/null | sp-tree --span 'Shop#run'
	echo "(every method of the run, the files, sockets, names and processes it caused, its CPU time)"
else
	echo "ruby is not installed: skipped (scripts/install-deps.sh installs it)"
fi

step "Where the time went: a C program with two threads and a child process"
show "sp-record -o $demo/workload.sp -- $wl"
status=0
sp-record -o "$demo/workload.sp" -- "$wl" || status=$?
echo "sp-record exited $status, as the program did; the recording takes $(stat -c %s "$demo/workload.sp") bytes."
show "sp-decode --stats $demo/workload.sp"
sp-decode --stats "$demo/workload.sp"

step "The hottest functions (sp-symbolize adds names, files and lines)"
show "sp-symbolize $demo/workload.sp | sp-decode | jq -r 'select(.type==\"sample\") | .frames[0] | \"\\(.func) \\(.file):\\(.line)\"' | sort | uniq -c | sort -rn"
sp-symbolize -o "$demo/workload.sym.sp" "$demo/workload.sp" 2>/dev/null
sp-decode "$demo/workload.sym.sp" |
	jq -r 'select(.type=="sample") | .frames[0] | "\(.func) \(.file):\(.line)"' |
	sort | uniq -c | sort -rn | head -6

step "A flame graph"
show "sp-flame --svg -o $demo/workload.svg $demo/workload.sym.sp"
sp-flame --svg -o "$demo/workload.svg" "$demo/workload.sym.sp"
echo "The flame graph is in $demo/workload.svg: open it in a browser (it needs no network)."

echo
echo "Next: sp-decode $demo/workload.sp | less     every record as JSON lines"
echo "      sp-tree $demo/shop.sp                   the whole Ruby run, Ruby's start-up included"
echo "      sp-flame --speedscope -o p.json $demo/workload.sym.sp   for https://speedscope.app"
