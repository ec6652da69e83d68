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

@test "every tool says with --version which commit it was built from" {
	# this checkout's commit, when the tools are its own build (make check)
	rev=
	if [ "$(realpath "$SP_BIN")" = "$(realpath "$BATS_TEST_DIRNAME/../build/bin")" ]; then
		rev=$(git -C "$BATS_TEST_DIRNAME/.." rev-parse --short=12 HEAD 2>/dev/null) || rev=
	fi
	for t in $SP_TOOLS; do
		run --separate-stderr -0 "$t" --version
		[[ "$output" =~ ^StackPulse\ [0-9a-f]{12}(-dirty)?$|^StackPulse\ unknown$ ]] || fail "$t: $output"
		[ -z "$rev" ] || [[ "$output" == "StackPulse $rev"* ]] || fail "$t: $output, not $rev"
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

teardown() {
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
}

@test "every tool's -o: another user's file in a shared sticky directory is refused, untouched; a FIFO with no reader does not block (as nobody)" {
	require_root
	require_cmd setpriv
	local d t
	d=$(mktemp -d /tmp/sp-sticky.XXXXXX)
	chmod 1777 "$d"
	# nobody made the name first: root's recording would be theirs to read
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo keep > '$d/x.sp'; chmod 666 '$d/x.sp'"
	# nobody's FIFO there would hold the tool: refused at once
	setpriv --reuid=65534 --regid=65534 --clear-groups mkfifo "$d/fifo"
	for t in $SP_TOOLS; do
		for f in x.sp fifo; do
			if [ "$t" = sp-record ]; then
				run --separate-stderr timeout 20 "$t" -o "$d/$f" -- true
			else
				run --separate-stderr timeout 20 "$t" -o "$d/$f" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
			fi
			[ "$status" -eq 2 ] || fail "$t -o $f: status $status: $stderr"
			[ -z "$output" ]
		done
		assert_equal "$(cat "$d/x.sp")" keep
	done
	# the last tool's two messages
	run --separate-stderr -2 sp-decode -o "$d/x.sp" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	assert_equal "$stderr" "sp-decode: error: refusing to write '$d/x.sp': it is another user's file (uid 65534) in a directory others may write in: what is written would be theirs to read (remove it, or give another name)"
	run --separate-stderr -2 timeout 20 sp-decode -o "$d/fifo" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	assert_equal "$stderr" "sp-decode: error: refusing to write '$d/fifo': it is another user's FIFO (uid 65534) in a directory others may write in (remove it, or give another name)"
	# root's own FIFO no one opens: waited for a while, said, then refused
	mkfifo "$d/own"
	run --separate-stderr -2 timeout 20 sp-decode -o "$d/own" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	assert_equal "$stderr" "sp-decode: waiting for a reader of the FIFO '$d/own' (up to 5 s)
sp-decode: error: cannot open '$d/own' for writing: a FIFO no one read in 5 s (start its reader first)"
	# root's own file there, and a FIFO read, are written: its reader
	# first, or the writer first (the writer waits for it)
	run -0 sp-decode -o "$d/mine.sp" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	run -0 sp-decode -o "$d/mine.sp" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	cat "$d/own" > "$d/from-fifo" &
	sleep 0.2
	run -0 timeout 20 sp-decode -o "$d/own" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	wait
	cmp "$d/from-fifo" "$d/mine.sp"
	rm "$d/from-fifo"
	sp-decode -o "$d/own" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl" &
	sleep 0.3
	cat "$d/own" > "$d/from-fifo"
	wait $! || fail "the writer that came first failed"
	cmp "$d/from-fifo" "$d/mine.sp"
	rm -rf "$d"
}

@test "every tool's -o goes through no symbolic link another user made (root writing in their directory), its own and root's are followed" {
	require_root
	require_cmd setpriv
	local target t
	# nobody's directory, where root writes; root's file the link names
	NOBODY_DIR=$(mktemp -d /tmp/sp-common.XXXXXX)
	chmod 755 "$NOBODY_DIR"
	mkdir "$NOBODY_DIR/theirs"
	chown 65534 "$NOBODY_DIR/theirs"
	target=$NOBODY_DIR/roots-file
	setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$target" "$NOBODY_DIR/theirs/out.sp"
	for t in $SP_TOOLS; do
		echo keep > "$target"
		if [ "$t" = sp-record ]; then
			run --separate-stderr -2 "$t" -o "$NOBODY_DIR/theirs/out.sp" -- true
		else
			run --separate-stderr -2 "$t" -o "$NOBODY_DIR/theirs/out.sp" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
		fi
		assert_equal "$stderr" "$t: error: cannot open '$NOBODY_DIR/theirs/out.sp' for writing: it is a symbolic link (give the file it names)"
		assert_equal "$(cat "$target")" keep
	done
	# root's own link is followed, as /dev/stdout is
	ln -s "$target" "$NOBODY_DIR/mine.sp"
	run --separate-stderr -0 sp-decode -o "$NOBODY_DIR/mine.sp" "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	[ "$(cat "$target")" != keep ] || fail "not written through root's own link"
	run --separate-stderr -0 sp-decode -o /dev/stdout "$BATS_TEST_DIRNAME/fixtures/sp-decode/small.jsonl"
	assert_line --index 0 --partial '"type":"header"'
}
