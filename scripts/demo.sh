#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: record the bundled example program and show what was recorded.
# Usage: scripts/demo.sh [BUILD_DIR]   (default build)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-build}
case $out in /*) ;; *) out=$top/$out ;; esac
bin=$out/bin
wl=$out/examples/workload
spool=${DEMO_SPOOL:-$out/demo/workload.sp}

for t in sp-record sp-decode; do
	[ -x "$bin/$t" ] || { echo "demo: $bin/$t is missing: run make" >&2; exit 2; }
done
[ -x "$wl" ] || { echo "demo: $wl is missing: run make" >&2; exit 2; }
command -v jq >/dev/null || { echo "demo: needs jq (scripts/install-deps.sh)" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
	echo "demo: not root: sp-record records user stacks only (perf_event_paranoid" \
		"is $(cat /proc/sys/kernel/perf_event_paranoid))" >&2
fi
mkdir -p "$(dirname "$spool")"

if [ -t 1 ]; then b=$'\033[1m' n=$'\033[0m'; else b= n=; fi
step() { printf '\n%s== %s%s\n' "$b" "$*" "$n"; }

step "Recording $wl (two threads and a child process, 1 s) at 999 Hz"
echo "\$ sp-record -o $spool -- $wl"
status=0
"$bin/sp-record" -o "$spool" -- "$wl" || status=$?
echo "The recording is in $spool ($(stat -c %s "$spool") bytes); sp-record exited $status, as the workload did."

step "Summary: sp-decode --stats"
"$bin/sp-decode" --stats "$spool"

step "The processes and threads it saw"
"$bin/sp-decode" "$spool" | jq -c 'select(.type=="process" or .type=="thread")
	| {type, pid, tid, ppid, comm, name}' | sed 's/,"[a-z]*":null//g'

step "A few samples as JSON lines (frames leaf first; rel is the address nm shows)"
"$bin/sp-decode" "$spool" | jq -c 'select(.type=="sample")
	| {time, pid, tid, cpu, frames: [.frames[:4][] | {rel, module: (.module // "?" | split("/") | last), mode}]}' \
	| awk 'NR % 40 == 1' | head -4

step "The hottest leaf functions (rel from the spool, names from nm)"
"$bin/sp-decode" "$spool" | jq -r --arg exe "$(readlink -f "$wl")" \
	'select(.type=="sample") | .frames[0] | select(.module==$exe) | .rel' |
	sort | uniq -c | sort -rn > "$out/demo/leaves"
nm -S --defined-only "$wl" | awk '$3 ~ /^[tT]$/ { print $1, $2, $4 }' > "$out/demo/syms"
while read -r addr size name; do
	n=0
	lo=$((16#$addr)) hi=$((16#$addr + 16#$size))
	while read -r count rel; do
		((rel >= lo && rel < hi)) && n=$((n + count))
	done < "$out/demo/leaves"
	[ "$n" -gt 0 ] && echo "$n $name"
done < "$out/demo/syms" | sort -rn | head -6 | awk '{ printf "  %5d samples  %s\n", $1, $2 }'

if [ -x "$bin/sp-flame" ]; then
	step "A flame graph of the recording: sp-symbolize | sp-flame --svg"
	svg=$out/demo/workload.svg
	if [ -x "$bin/sp-symbolize" ]; then
		"$bin/sp-symbolize" "$spool" 2>/dev/null | "$bin/sp-flame" --svg -o "$svg" || true
	else
		"$bin/sp-flame" --svg -o "$svg" "$spool" || true
	fi
	echo "The flame graph is in $svg: open it in a browser (it needs no network)."
fi

echo
echo "Next: sp-decode $spool | less   (every record as JSON lines)"
