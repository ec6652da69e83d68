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

@test "the README's kernel-events example runs as written, and again" {
	require_root
	[ -x "$SP_EXAMPLES/evtest" ] || skip "build/examples/evtest is not built (make)"
	# its shell lines up to the recording, in a directory of this test
	# and with the examples of this build
	awk '/^## What did it touch/ { in_s = 1 } in_s && /^```sh/ { code = 1; next }
		code { print } code && /^sp-record / { exit }' "$BATS_TEST_DIRNAME/../README.md" |
		sed -e "s|/tmp/d|$BATS_TEST_TMPDIR/d|g" -e "s|\./build/examples/|$SP_EXAMPLES/|" \
			-e "s|-o run.sp|-o $BATS_TEST_TMPDIR/run.sp|" > "$BATS_TEST_TMPDIR/ex.sh"
	grep -q "evtest run $BATS_TEST_TMPDIR/d" "$BATS_TEST_TMPDIR/ex.sh"
	for i in 1 2; do
		run -0 timeout 120 bash -e "$BATS_TEST_TMPDIR/ex.sh"
	done
}

@test "the README's Python example shows report.py's main, as written" {
	require_root
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
	local ex=$BATS_TEST_DIRNAME/../scripts/examples
	# its two command lines, with the spool in this test's directory
	grep -A1 '^\$ cd scripts/examples && sp-record --spans=python' "$BATS_TEST_DIRNAME/../README.md" |
		sed -e 's/^\$ //' -e "s|cd scripts/examples|cd '$ex'|" \
			-e "s|report\.sp|$BATS_TEST_TMPDIR/report.sp|g" > "$BATS_TEST_TMPDIR/ex.sh"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/ex.sh")" = 2 ]
	run --separate-stderr -0 timeout 300 bash -e "$BATS_TEST_TMPDIR/ex.sh"
	# the program's own spans, named as the README shows them, not the
	# spans of Python's start-up a bare "main" also matches (site.main)
	assert_line --regexp '^└─ \[SPAN tid=[0-9]+ __main__\.<module> at=report\.py '
	assert_line --regexp '__main__\.main at=report\.py:13 '
	assert_line --partial 'PROC proc_exec → /bin/true'
	refute_line --partial 'site.main'
	refute_line --partial 'sitecustomize'
}
