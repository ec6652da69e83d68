#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerate the field tables of docs/spool.md from the code's own schema
# (sp-decode --schema). tests/docs.bats fails when they are out of date.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${SP_BIN:-$top/build/bin}
doc=$top/docs/spool.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	sed -n '1,/<!-- schema:begin -->/p' "$doc"
	"$bin/sp-decode" --schema
	sed -n '/<!-- schema:end -->/,$p' "$doc"
} > "$tmp"
cat "$tmp" > "$doc"
