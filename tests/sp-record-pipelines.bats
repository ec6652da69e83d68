#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The pipelines the manual pages show, run as written (read from the pages)
# with programs that print: what the recorded command writes on its
# standard output must never land in the records' pipe.

load helper

DOCS=$BATS_TEST_DIRNAME/../docs

setup() {
	require_root
	require_cmd jq
	WL=$SP_EXAMPLES/workload
	[ -x "$WL" ] || skip "build/examples/workload is not built (make)"
	D=$BATS_TEST_TMPDIR/run
	mkdir -p "$D"
	cd "$D"
	export WL
	# Programs that print, under the names the pages use.
	printf '#!/bin/sh\necho "app: starting"\nexec "$WL" 0.3\n' > app
	printf '#!/bin/sh\nfor i in 1 2 3; do echo "server: request $i"; done\nexec "$WL" 0.3\n' \
		> server
	mkdir -p bin
	printf '#!/bin/sh\nwhile :; do echo "prog: a line of output"; done | head -c 100000\nexec "$WL" 1\n' \
		> bin/prog
	chmod +x app server bin/prog
	printf 'all: a b\na:\n\t@echo "make: building a"; "$(WL)" 0.2\nb:\n\t@echo "make: building b"; "$(WL)" 0.2\n' \
		> Makefile
	cat > app.rb <<-'EOF'
	class Greeter
	  def hello(n)
	    puts "hello #{n}"
	    x = 0
	    200_000.times { x += 1 }
	    x
	  end
	end
	3.times { |i| Greeter.new.hello(i) }
	EOF
}

# The first pipeline in $1 (a page) that starts with $2, as written there
# (in a code block or between backquotes).
pipeline() {
	local line
	line=$(grep -o -m1 -- "$2[^\`]*" "$DOCS/$1") || { echo "no '$2' in $1" >&2; return 1; }
	echo "$line"
}

@test "pipelines: sp-symbolize.md's 'sp-record -- make -j2 | sp-symbolize | sp-flame --svg > flame.svg'" {
	cmd=$(pipeline sp-symbolize.md 'sp-record -- make -j2 |')
	run --separate-stderr bash -o pipefail -c "$cmd"
	echo "$stderr"
	[ "$status" = 0 ]
	grep -q '<svg' flame.svg
	grep -q 'hash_token' flame.svg
	# what make and its commands printed went to standard error, said once
	[[ "$stderr" == *"make: building a"* && "$stderr" == *"make: building b"* ]]
	[ "$(grep -c "the command's standard output goes to standard error" <<< "$stderr")" = 1 ]
}

@test "pipelines: sp-record.md's 'sp-record -- ./app | sp-symbolize | sp-flame'" {
	cmd=$(pipeline sp-record.md 'sp-record -- ./app |')
	run --separate-stderr bash -o pipefail -c "$cmd"
	echo "$stderr"
	[ "$status" = 0 ]
	[[ "$output" == *hash_token* ]]
	[[ "$output" != *"app: starting"* ]]
	[[ "$stderr" == *"app: starting"* ]]
}

@test "pipelines: sp-record.md's 'sp-record -- ./server | sp-decode | jq ...'" {
	cmd=$(pipeline sp-record.md 'sp-record -- ./server |')
	run --separate-stderr bash -o pipefail -c "$cmd"
	echo "$stderr"
	[ "$status" = 0 ]
	[ "$(jq -r .type <<< "$output" | sort -u)" = sample ]
	[[ "$stderr" == *"server: request 3"* ]]
}

@test "pipelines: sp-record.md's broken pipe 'sp-record -- prog | head -c 100' stops recording and exits 141" {
	cmd=$(pipeline sp-record.md 'sp-record -- prog | head -c')
	PATH=$D/bin:$PATH run --separate-stderr bash -c "$cmd > $D/head.out; echo \${PIPESTATUS[0]}"
	echo "$stderr"
	assert_output 141
	[ "$(head -c 4 "$D/head.out" | od -An -c | tr -d ' ')" != "prog" ]
	[[ "$stderr" == *"output closed (broken pipe)"* ]]
}

@test "pipelines: sp-tree.md's and sp-correlate.md's 'sp-record --spans=ruby -- ruby app.rb | sp-correlate | sp-tree'" {
	require_cmd ruby
	for page in sp-tree.md sp-correlate.md; do
		cmd=$(pipeline $page 'sp-record --spans=ruby -- ruby app.rb |')
		run --separate-stderr bash -o pipefail -c "$cmd"
		echo "$page: $stderr"
		[ "$status" = 0 ]
		[[ "$output" == *"Greeter#hello"* ]]
		[[ "$output" != *"hello 0"* ]]
		[[ "$stderr" == *"hello 2"* ]]
		[[ "$stderr" != *"not a StackPulse spool"* ]]
	done
}

@test "pipelines: a command that prints, piped to sp-correlate | sp-tree; --command-stdout=FILE" {
	run --separate-stderr bash -o pipefail -c "sp-record -- sh -c 'echo hello' | sp-correlate | sp-tree"
	echo "$stderr"
	[ "$status" = 0 ]
	[[ "$output" == *"sh -c 'echo hello'"* || "$output" == *"sh"* ]]
	[[ "$stderr" == *hello* ]]
	run --separate-stderr bash -o pipefail -c \
		"sp-record --command-stdout=$D/cmd.out -- sh -c 'echo hello' | sp-correlate | sp-tree"
	[ "$status" = 0 ]
	[ "$(cat "$D/cmd.out")" = hello ]
	[[ "$stderr" != *hello* ]]
	[[ "$stderr" != *"goes to standard error"* ]]
	# with -o FILE the command keeps its standard output
	run --separate-stderr -0 sp-record -o "$D/x.sp" -- sh -c 'echo hello'
	assert_output hello
	run --separate-stderr -64 sp-record --command-stdout=x -p $$ -d 1
	[[ "$stderr" == *"--command-stdout needs a command"* ]]
}

@test "pipelines: --command-stdout=FILE goes through no link another user made, into no file of theirs in /tmp (as nobody)" {
	require_root
	require_cmd setpriv
	local d
	d=$(mktemp -d /tmp/sp-cmdout.XXXXXX)
	chmod 1777 "$d"
	echo keep > "$D/roots-file"
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		"ln -s '$D/roots-file' '$d/link'; echo theirs > '$d/theirs'; chmod 666 '$d/theirs'"
	run --separate-stderr -2 sp-record --command-stdout="$d/link" -o "$D/x.sp" -- sh -c 'echo hello'
	assert_equal "$stderr" "sp-record: error: cannot open '$d/link' for the command's output: it is a symbolic link (give the file it names)"
	assert_equal "$(cat "$D/roots-file")" keep
	run --separate-stderr -2 sp-record --command-stdout="$d/theirs" -o "$D/x.sp" -- sh -c 'echo hello'
	[[ "$stderr" == "sp-record: error: refusing to write '$d/theirs': it is another user's file (uid 65534)"* ]] || fail "$stderr"
	assert_equal "$(cat "$d/theirs")" theirs
	# a name of its own there is written
	run --separate-stderr -0 sp-record --command-stdout="$d/mine" -o "$D/x.sp" -- sh -c 'echo hello'
	assert_equal "$(cat "$d/mine")" hello
	rm -rf "$d"
}
