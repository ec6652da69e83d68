#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerate the golden outputs of sp-correlate and sp-tree:
#   tests/fixtures/<tool>/<case>.in  ->  <case>.out
# run from the fixture directory as '<tool> ARGS <case>.in', where ARGS is
# the content of <case>.args if present, else the tool's default below.
# Check every changed .out by hand (git diff) before committing it.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${SP_BIN:-$top/build/bin}
export LC_ALL=C

default_args() {
	case $1 in
	sp-correlate) echo "--format=json" ;;
	sp-tree) echo "--stable" ;;
	esac
}

for tool in sp-correlate sp-tree; do
	dir=$top/tests/fixtures/$tool
	[ -d "$dir" ] || continue
	for in in "$dir"/*.in; do
		[ -e "$in" ] || continue
		name=${in##*/}
		case=${name%.in}
		if [ -f "$dir/$case.args" ]; then
			args=$(cat "$dir/$case.args")
		else
			args=$(default_args "$tool")
		fi
		# shellcheck disable=SC2086 # ARGS are words on purpose
		(cd "$dir" && "$bin/$tool" $args "$name") > "$dir/$case.out" || {
			echo "$tool $args $name: exit $?" >&2
			exit 1
		}
		echo "  $tool $args $name"
	done
done
