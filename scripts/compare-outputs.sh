#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compare what two builds of the filters write for the same inputs, byte by
# byte: for a change that must not change behaviour (a refactoring), run it
# with the tools built before and after.
#
#   scripts/compare-outputs.sh OLD_BIN_DIR NEW_BIN_DIR [SPOOL...]
#
# Inputs: every spool and JSON-lines fixture under tests/fixtures/, and each
# SPOOL named (recordings made beforehand with sp-record). Each input goes
# through a matrix of tool invocations (sp-decode in every form, sp-symbolize,
# sp-correlate, sp-tree, every sp-flame format); stdout, stderr (with the tool
# directory's path taken out) and the exit status are compared. Prints one
# line per difference and a summary; exits 1 if anything differs.
set -u
if [ $# -lt 2 ] || [ ! -x "$1/sp-decode" ] || [ ! -x "$2/sp-decode" ]; then
	echo "usage: $0 OLD_BIN_DIR NEW_BIN_DIR [SPOOL...]" >&2
	exit 64
fi
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LC_ALL=C SP_CACHE_DIR=$work/cache TZ=UTC

inputs=()
while IFS= read -r f; do
	inputs+=("$f")
done < <(find "$top/tests/fixtures" -type f \( -name '*.sp' -o -name '*.jsonl' -o -name '*.in' \) | sort)
inputs+=("$@")

# One invocation per line: the tool, its options; the input is appended
# (or piped where the line starts with '|': symbolized, then correlated).
matrix=(
	"sp-decode"
	"sp-decode --no-frames"
	"sp-decode --no-defs"
	"sp-decode --stats"
	"sp-decode --stats-json"
	"sp-decode --encode"
	"sp-symbolize --no-cache --quiet"
	"sp-correlate"
	"sp-tree"
	"sp-tree --stable"
	"sp-tree --stable --no-collapse --format=json"
	"sp-flame"
	"sp-flame --by=thread --annotate"
	"sp-flame --off-cpu"
	"sp-flame --svg --title=t --subtitle=s"
	"sp-flame --speedscope"
	"sp-flame --chrome"
	"sp-flame --pprof"
	"|sp-tree --stable"
	"|sp-flame --by=process --annotate"
	"|sp-flame --speedscope"
	"|sp-flame --pprof"
)

# run BIN_DIR INPUT INVOCATION OUT_PREFIX
run() {
	local bin=$1 in=$2 cmd=$3 out=$4 tool
	if [ "${cmd:0:1}" = "|" ]; then
		cmd=${cmd:1}
		tool=${cmd%% *}
		"$bin/sp-symbolize" --no-cache --quiet "$in" 2>/dev/null |
			"$bin/sp-correlate" 2>/dev/null |
			PATH=$bin:$PATH $cmd > "$out.out" 2> "$out.err"
	else
		tool=${cmd%% *}
		PATH=$bin:$PATH $cmd "$in" > "$out.out" 2> "$out.err"
	fi
	echo "status $?" >> "$out.err"
	# Diagnostics name the tool by its path only through argv[0]: same name.
	sed -i "s|$bin/||g" "$out.err"
	# pprof is gzip: compare what is inside (the gzip header has a time).
	if [ "$tool" = sp-flame ] && [[ $cmd == *--pprof* ]] && [ -s "$out.out" ]; then
		gzip -dc < "$out.out" > "$out.raw" 2>/dev/null && mv "$out.raw" "$out.out"
	fi
}

n=0 diff=0
for in in "${inputs[@]}"; do
	for cmd in "${matrix[@]}"; do
		n=$((n + 1))
		run "$old" "$in" "$cmd" "$work/a"
		run "$new" "$in" "$cmd" "$work/b"
		if ! cmp -s "$work/a.out" "$work/b.out" || ! cmp -s "$work/a.err" "$work/b.err"; then
			diff=$((diff + 1))
			echo "differs: ${in#"$top"/}: $cmd"
		fi
	done
done
echo "$n comparisons over ${#inputs[@]} inputs: $((n - diff)) identical, $diff different"
[ "$diff" = 0 ]
