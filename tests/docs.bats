#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The docs say what the code does.

load helper

@test "docs/spool.md's field tables are the code's schema" {
	run -0 sp-decode --schema
	schema=$output
	doc=$(sed -n '/<!-- schema:begin -->/,/<!-- schema:end -->/p' "$BATS_TEST_DIRNAME/../docs/spool.md" | sed '1d;$d')
	[ "$schema" = "$doc" ] || fail "docs/spool.md is out of date: run scripts/update-docs.sh"
}

@test "every tool has a manual page in docs/" {
	for t in $SP_TOOLS; do
		[ -f "$BATS_TEST_DIRNAME/../docs/$t.md" ] || fail "docs/$t.md is missing"
		grep -q '^## EXIT STATUS' "$BATS_TEST_DIRNAME/../docs/$t.md" || fail "docs/$t.md has no EXIT STATUS"
	done
}

@test "every event kind is documented in docs/events.md" {
	[ -f "$BATS_TEST_DIRNAME/../docs/events.md" ] || fail "docs/events.md is missing"
	for e in $(sp-decode --schema | awk -F'|' '/^\| [a-z_]+ \| [0-9]+ \| [a-z]+ \|/ {gsub(/ /,"",$2); print $2}' | sort -u); do
		grep -q "$e" "$BATS_TEST_DIRNAME/../docs/events.md" || fail "$e is not in docs/events.md"
	done
}
