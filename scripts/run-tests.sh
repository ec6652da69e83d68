#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every test: C unit tests (plain and sanitized, TAP), then the bats
# suites. Ends with one line "N passed, N failed".
set -u
out=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
passed=0 failed=0 skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count_tap() {	# count TAP lines of $log into the totals, echoing failures
	local p f s
	p=$(grep -Ec '^ok [0-9]+' "$log")
	s=$(grep -Ec '^ok [0-9]+.*# [Ss][Kk][Ii][Pp]' "$log")
	f=$(grep -Ec '^not ok [0-9]+' "$log")
	passed=$((passed + p - s)) skipped=$((skipped + s)) failed=$((failed + f))
	# every failure named, then their details, each line and the whole cut
	# short: one failure's long output must not hide the others
	grep -E '^not ok' "$log"
	[ "$f" = 0 ] || grep -E '^not ok|^#' "$log" | grep -v '^# skip' | cut -c1-300 | head -80
}

for t in "$out"/unit/test-* "$out"/asan/test-*; do
	[ -x "$t" ] || continue
	echo "== ${t#"$out"/}"
	if ! "$t" > "$log" 2>&1; then
		grep -q '^not ok' "$log" || { echo "not ok 1 - ${t##*/} crashed" >> "$log"; }
	fi
	count_tap
done

if command -v bats >/dev/null; then
	echo "== bats tests/"
	SP_BIN=$top/$out/bin SP_EXAMPLES=$top/$out/examples \
		bats --tap --timing ${BATS_JOBS:+--jobs "$BATS_JOBS"} tests/ > "$log" 2>&1
	count_tap
	echo "== slowest tests"
	sed -n 's/^ok [0-9]* \(.*\) in \([0-9]*\)ms$/\2 \1/p' "$log" | sort -rn | head -8 |
		awk '{ printf "  %6.1f s  %s\n", $1 / 1000, substr($0, index($0, " ") + 1) }'
else
	echo "not ok - bats is not installed (run scripts/install-deps.sh)"
	failed=$((failed + 1))
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
