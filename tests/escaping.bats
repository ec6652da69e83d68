#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Others' strings in every output (docs/escaping.md): a recording whose
# process, thread, span, file, frame and module names hold ESC, CR, LF, a
# forged "FILE path_open → /etc/ok" line, bytes that are not UTF-8, DEL, C1
# and bidirectional controls (tests/fixtures/escaping/README.md), and a real
# recording of a process that names itself so, through sp-decode, sp-tree,
# every sp-flame output and the warnings. Valid non-ASCII names (café#漢,
# 漢字é) come through unchanged.

load helper

setup() {
	H=$FIXTURES/hostile.jsonl
	T=$BATS_TEST_TMPDIR
	FORGED='FILE path_open → /etc/ok'
}

teardown() {
	[ -n "${D:-}" ] && rm -rf "$D"
	true
}

# No raw control byte (C0 but TAB and LF, DEL) and no C1 control in file $1.
CONTROLS='[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]'
no_controls() {
	! LC_ALL=C grep -qaP "$CONTROLS" "$1" ||
		fail "$1 has a raw control character: $(LC_ALL=C grep -naP "$CONTROLS" "$1" | head -3 | cat -A)"
}

# File $1 is valid UTF-8 (strict: no surrogates, nothing beyond U+10FFFF).
utf8() {
	perl -MEncode -0777 -ne 'decode("UTF-8", $_, Encode::FB_CROAK)' "$1" ||
		fail "$1 is not valid UTF-8"
}

# npm packages for the independent pprof and speedscope readers (as in
# sp-flame.bats), installed once per run of this file.
need_npm() {
	require_cmd npm "npm is needed to install the pprof-format package"
	require_cmd node
	NPM_DIR=$BATS_FILE_TMPDIR/npm
	if [ ! -d "$NPM_DIR/node_modules/pprof-format" ]; then
		mkdir -p "$NPM_DIR"
		(cd "$NPM_DIR" && timeout 300 npm install --no-audit --no-fund --silent \
			pprof-format speedscope ajv >/dev/null 2>&1) ||
			skip "npm install pprof-format speedscope ajv failed (no registry?)"
	fi
	export NODE_PATH=$NPM_DIR/node_modules
}

@test "escaping: sp-decode writes valid JSON lines with no control character, and they lead back to the same spool" {
	require_cmd jq
	sp-decode --encode -o "$T/h.sp" "$H"
	sp-decode "$T/h.sp" > "$T/h.json"
	no_controls "$T/h.json"
	utf8 "$T/h.json"
	# jq reads every line
	run -0 jq -c . "$T/h.json"
	[ "${#lines[@]}" = "$(wc -l < "$T/h.json")" ]
	# back to the same spool, and the same lines
	sp-decode --encode -o "$T/h2.sp" "$T/h.json"
	cmp "$T/h.sp" "$T/h2.sp"
	run -0 sp-decode "$T/h2.sp"
	[ "$output" = "$(cat "$T/h.json")" ]
	# strings are carried exactly: JSON escapes, or hex when not UTF-8
	run -0 jq -r 'select(.type=="string" and .id==1) | .value' "$T/h.json"
	[ "$output" = $'x\e[2J\r\n'"$FORGED" ]
	run -0 jq -r 'select(.type=="string" and .id==3) | .value' "$T/h.json"
	[ "$output" = $'w\xc2\x85\x7f\xc2\x9b31m\xe2\x80\xaeevil' ]
	run -0 jq -r 'select(.type=="string" and .id==4) | .value_hex' "$T/h.json"
	assert_output "ff4b6c617373"
	run -0 jq -r 'select(.type=="process") | .comm' "$T/h.json"
	[ "$output" = $'x\e[2J\r\n'"$FORGED" ]
	# valid non-ASCII as it is
	grep -q '"value":"café#漢"' "$T/h.json"
	# inline frames show names by their text form
	run -0 jq -r 'select(.type=="sample") | .frames[].func' "$T/h.json"
	assert_line 'f\x0d\x0aFILE path_open → /etc/ok'
	assert_line 'bad\xfe\xc2\x85\x7fname'
	assert_line 'semi;colon\x09and space\x5cx41'
	assert_line '漢字é'
}

@test "escaping: sp-tree shows every name by its text form: no control character, no forged line" {
	sp-correlate "$H" > "$T/c.sp"
	for args in "" --stable --no-collapse; do
		sp-tree $args "$T/c.sp" > "$T/t.txt"
		no_controls "$T/t.txt"
		utf8 "$T/t.txt"
		run grep -c "^$FORGED" "$T/t.txt"
		assert_output 0
	done
	run -0 sp-tree --stable "$T/c.sp"
	assert_output - <<-'EOF'
	# stackpulse recording
	[PROC comm=x\x1b[2J\x0d\x0aFILE path_open → /etc/ok]
	├─ [SPAN \xffKlass#\xc0\xafm\xed\xa0\x80 at=a\xe2\x80\xaerb.ppa:3] (raise Err\x1b[31m\x0aFILE\x00hidden)
	│  └─ [SPAN café#漢 at=a\xe2\x80\xaerb.ppa:4]
	│     └─ FILE path_open → /tmp/\x1b[2J\x1b]0;t\x07/"x\x0aFILE path_open → /etc/ok" (O_RDONLY) = fd
	└─ [SPAN <no-span>]
	EOF
}

@test "escaping: sp-tree's JSON is valid UTF-8 that jq reads, with the names sp-tree shows" {
	require_cmd jq
	sp-correlate "$H" | sp-tree --format=json > "$T/t.json"
	no_controls "$T/t.json"
	utf8 "$T/t.json"
	run -0 jq -r '.processes[0].comm' "$T/t.json"
	assert_output 'x\x1b[2J\x0d\x0aFILE path_open → /etc/ok'
	run -0 jq -r '.. | objects | select(.type=="span") | .name' "$T/t.json"
	assert_line '\xffKlass#\xc0\xafm\xed\xa0\x80'
	assert_line 'café#漢'
	run -0 jq -r '.. | objects | select(.type=="event") | .text, .fields.path, .fields.dir' "$T/t.json"
	assert_line '/tmp/\x1b[2J\x1b]0;t\x07/"x\x0aFILE path_open → /etc/ok" (O_RDONLY) = 3'
	assert_line 'x\x0aFILE path_open → /etc/ok'
	assert_line '/tmp/\x1b[2J\x1b]0;t\x07'
}

@test "escaping: folded stacks are one 'frames count' line a stack, and read back the same" {
	sp-correlate "$H" > "$T/c.sp"
	for by in "" process thread span process,thread,span; do
		sp-flame -q ${by:+--by=$by} "$T/c.sp" > "$T/f.folded"
		no_controls "$T/f.folded"
		utf8 "$T/f.folded"
		run grep -cvE '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$T/f.folded"
		assert_output 0
		run grep -c "^$FORGED" "$T/f.folded"
		assert_output 0
		# sp-flame reads its folded output back to the same stacks
		run -0 sp-flame -q "$T/f.folded"
		[ "$output" = "$(cat "$T/f.folded")" ] || fail "folded text did not read back the same (--by=$by)"
	done
	run -0 sp-flame -q "$T/c.sp"
	assert_output - <<-'EOF'
	漢字é;bad\xfe\xc2\x85\x7fname 1
	漢字é;café#漢 1
	漢字é;f\x0d\x0aFILE path_open → /etc/ok;semi\x3bcolon\x09and space\x5cx41 2
	EOF
	run -0 sp-flame -q --by=thread "$T/c.sp"
	assert_line --partial 'w\xc2\x85\x7f\xc2\x9b31m\xe2\x80\xaeevil-101;'
}

@test "escaping: the SVG parses, with names by their text form" {
	require_cmd xmllint "libxml2-utils"
	sp-correlate "$H" > "$T/c.sp"
	sp-flame -q --svg -o "$T/f.svg" "$T/c.sp"
	sp-flame -q --svg --by=process,thread,span -o "$T/p.svg" "$T/c.sp"
	for f in "$T/f.svg" "$T/p.svg"; do
		xmllint --noout "$f"
		no_controls "$f"
		utf8 "$f"
	done
	title() {
		xmllint --xpath "string(//*[local-name()='g'][*[local-name()='title'][starts-with(., '$1')]]/*[local-name()='title'])" "${2:-$T/f.svg}"
	}
	run -0 title 'f\x0d'
	assert_output 'f\x0d\x0aFILE path_open → /etc/ok (2 samples, 50.00%)'
	run -0 title 'bad'
	assert_output 'bad\xfe\xc2\x85\x7fname (1 samples, 25.00%)'
	run -0 title 'café'
	assert_output 'café#漢 (1 samples, 25.00%)'
	run -0 title 'x\x1b' "$T/p.svg"
	assert_output --partial 'x\x1b[2J\x0d\x0aFILE path_open → /etc/ok-100 ('
	# the subtitle names the command
	run -0 xmllint --xpath "string(//*[@id='subtitle'])" "$T/f.svg"
	assert_output --partial "sh -c '\\x1b[2J\\x0dhostile'"
}

@test "escaping: speedscope and Chrome trace files are valid UTF-8 JSON with the text forms" {
	require_cmd jq
	sp-correlate "$H" > "$T/c.sp"
	sp-flame -q --speedscope -o "$T/s.json" "$T/c.sp"
	sp-flame -q --chrome -o "$T/c.json" "$T/c.sp"
	for f in "$T/s.json" "$T/c.json"; do
		jq -e . "$f" > /dev/null
		no_controls "$f"
		utf8 "$f"
	done
	run -0 jq -r '.shared.frames[].name' "$T/s.json"
	assert_line '\xffKlass#\xc0\xafm\xed\xa0\x80'
	assert_line 'f\x0d\x0aFILE path_open → /etc/ok'
	assert_line 'café#漢'
	run -0 jq -r '.profiles[].name' "$T/s.json"
	assert_line --partial 'w\xc2\x85\x7f\xc2\x9b31m\xe2\x80\xaeevil-100/101'
	run -0 jq -r '.traceEvents[] | select(.ph=="M") | .args.name' "$T/c.json"
	assert_line 'x\x1b[2J\x0d\x0aFILE path_open → /etc/ok'
	assert_line 'w\xc2\x85\x7f\xc2\x9b31m\xe2\x80\xaeevil'
	run -0 jq -r '.traceEvents[] | select(.cat=="span") | .name, .args.error // empty' "$T/c.json"
	assert_line '\xffKlass#\xc0\xafm\xed\xa0\x80'
	assert_line 'café#漢'
	run -0 jq -r '.traceEvents[] | select(.cat=="event") | .args.path, .args.dir' "$T/c.json"
	assert_line 'x\x0aFILE path_open → /etc/ok'
	assert_line '/tmp/\x1b[2J\x1b]0;t\x07'
}

@test "escaping: pprof decodes with pprof-format to the folded stacks, names by their text form" {
	need_npm
	sp-correlate "$H" > "$T/c.sp"
	sp-flame -q --pprof -o "$T/p.pb.gz" "$T/c.sp"
	run -0 node "$BATS_TEST_DIRNAME/fixtures/sp-flame/pprof-folded.js" "$T/p.pb.gz"
	assert_line --partial '/tmp/\x1b[2J/lib\xe2\x80\xa8.so@'
	diff <(printf '%s\n' "${lines[@]}" | tail -n +4) <(sp-flame -q "$T/c.sp")
}

@test "escaping: a warning naming a hostile file shows it by its text form" {
	run --separate-stderr sp-symbolize -o "$T/s.sp" "$H"
	[[ "$stderr" == *"warning: '/tmp/\\x1b[2J/lib\\xe2\\x80\\xa8.so': file not found"* ]]
	printf '%s\n' "$stderr" > "$T/err"
	no_controls "$T/err"
	utf8 "$T/err"
}

@test "escaping: a real recording of a process named with ESC and CR opening a file named with LF in a directory named with ESC" {
	require_root
	[ -r /sys/kernel/btf/vmlinux ] || skip "needs kernel BTF (/sys/kernel/btf/vmlinux)"
	D=$(mktemp -d /tmp/sp-escape.XXXXXX)
	chmod 755 "$D"
	dir="$D/"$'\e[2J\e]0;t\a'd
	mkdir "$dir"
	chown 65534:65534 "$dir"
	# its comm is the name it was started by, then the one it writes to
	# /proc/self/comm, which a subshell (a fork without exec) keeps
	ln -s /bin/sh "$D/"$'\e[2J\rforged'
	# shellcheck disable=SC2016
	run --separate-stderr -0 timeout 60 sp-record --no-samples --spans=none --events=file,proc \
		-o "$T/r.sp" -- setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$D/"$'\e[2J\rforged' -c 'printf "\033[2J\r\nFILE x" > /proc/self/comm
			f="$1/x
'"$FORGED"'"; mkdir -p "${f%/ok}" && (: > "$f")' sh "$dir"
	[ -e "$dir/x"$'\n'"${FORGED%/ok}/ok" ] || fail "the hostile side did not create its file"
	sp-correlate "$T/r.sp" | sp-tree > "$T/r.txt"
	no_controls "$T/r.txt"
	utf8 "$T/r.txt"
	run grep -c "^FILE" "$T/r.txt"
	assert_output 0
	run -0 cat "$T/r.txt"
	assert_line --regexp '^\[PROC pid=[0-9]+ comm=\\x1b\[2J\\x0dforged '
	assert_output --partial ' comm=\x1b[2J\x0d\x0aFILE x '
	assert_output --partial 'FILE path_open → "/tmp/sp-escape.'
	assert_output --partial '/\x1b[2J\x1b]0;t\x07d/x\x0aFILE path_open → /etc/ok" (O_WRONLY|O_CREAT|O_TRUNC, 0666) = '
}

@test "escaping: fuzz-escape's corpus runs clean (the rule checked on any bytes)" {
	require_cmd clang "clang builds the fuzz targets"
	top=$BATS_TEST_DIRNAME/..
	echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
		clang -fsanitize=fuzzer -x c - -o "$T/probe" 2>/dev/null ||
		skip "clang has no libFuzzer runtime (Debian: libclang-rt-14-dev)"
	make -C "$top" --no-print-directory -s build/fuzz/fuzz-escape >&2 ||
		fail "make build/fuzz/fuzz-escape failed"
	[ "$(ls "$top/tests/fuzz/corpus/fuzz-escape" | wc -l)" -ge 10 ]
	run --separate-stderr "$top/build/fuzz/fuzz-escape" -runs=0 "$top/tests/fuzz/corpus/fuzz-escape"
	[ "$status" = 0 ] || fail "$(printf '%s\n' "$stderr" | tail -30)"
	[[ "$stderr" == *"Done "*" runs"* ]]
	[[ "$stderr" != *"runtime error"* ]]
}
