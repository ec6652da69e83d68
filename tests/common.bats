#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# What every tool promises: --help, usage errors, clean stdout on errors.

load helper

@test "every tool prints --help on stdout and exits 0" {
	for t in $SP_TOOLS; do
		run --separate-stderr -0 "$t" --help
		assert_output --partial "Usage: $t"
		assert_output --partial "Exit status:"
		assert_output --partial "Example"
		[ -z "$stderr" ]
	done
}

@test "every tool rejects an unknown option with status 64" {
	for t in $SP_TOOLS; do
		run --separate-stderr -64 "$t" --no-such-option
		assert_equal "$output" ""
		[[ "$stderr" == *"no-such-option"* ]]
	done
}

@test "every record-reading tool names a missing input file and writes nothing" {
	for t in $SP_TOOLS; do
		[ "$t" = sp-record ] && continue
		run --separate-stderr -2 "$t" /nonexistent/run.sp
		assert_equal "$output" ""
		assert_equal "$stderr" "$t: error: cannot open '/nonexistent/run.sp': No such file or directory"
	done
}

@test "every record-reading tool rejects input that is neither spool nor JSON" {
	for t in $SP_TOOLS; do
		[ "$t" = sp-record ] && continue
		run --separate-stderr -2 "$t" "$BATS_TEST_DIRNAME/fixtures/garbage.bin"
		[[ "$stderr" == *"garbage.bin@0: not a StackPulse spool or JSON lines"* ]]
	done
}
