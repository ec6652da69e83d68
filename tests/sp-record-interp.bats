#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Interpreted frames in samples (docs/interpreters.md): Debian's Python 3.11
# (static, no frame pointers, .dynsym only) runs a program with known call
# chains and known shares of CPU time (tests/fixtures/python/interp_hot.py);
# every sampled interpreted stack must be a call chain of the program and
# each phase's share within 5 points of its budget; the same under -p, in a
# forked child, and with the version's layout removed (one warning, native
# stacks). A forged interpreter run by nobody cannot make sp-record loop or
# print what it does not hold.
load helper

PY=/usr/bin/python3.11
FIX=$BATS_TEST_DIRNAME/fixtures/python/interp_hot.py

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
}

teardown() {
	[ -z "${BG:-}" ] || kill "$BG" 2>/dev/null || true
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
}

require_python() {
	require_root
	[ -x $PY ] || skip "needs Debian's $PY"
	require_cmd jq
}

# The program's frames (ih_*) of each folded stack, root first, with its count.
ih_stacks() {
	sp-flame --folded "$OUT" 2>/dev/null | awk '{
		n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); s = ""
		for (i = 1; i <= k; i++) if (f[i] ~ /^ih_/) s = s (s == "" ? "" : ";") f[i]
		if (s != "") print s, n }'
}

# Every stack of the program's frames is a chain its source can make: the
# caller -> callee pairs below, from ih_main or a pool thread's ih_pool_work.
assert_real_chains() {
	ih_stacks | awk '
	BEGIN {
		split("ih_main>ih_phase_rec ih_main>ih_phase_two ih_main>ih_phase_gen " \
		      "ih_main>ih_phase_pool ih_main>ih_phase_hash ih_main>ih_child " \
		      "ih_phase_rec>ih_rec ih_rec>ih_rec ih_rec>ih_spin ih_child>ih_spin " \
		      "ih_phase_two>ih_a ih_phase_two>ih_b ih_a>ih_shared ih_b>ih_shared " \
		      "ih_phase_gen>ih_squares ih_phase_hash>ih_hash ih_main>ih_before_exec " \
		      "ih_main>ih_after_exec ih_before_exec>ih_spin ih_after_exec>ih_spin", e, " ")
		for (i in e) ok[e[i]] = 1
	}
	{
		n = $NF; k = split($1, f, ";"); recs = 0
		if (f[1] != "ih_main" && f[1] != "ih_pool_work") { print "bad root: " $0; bad++ }
		for (i = 2; i <= k; i++) {
			if (!((f[i-1] ">" f[i]) in ok)) { print "bad edge " f[i-1] ">" f[i] ": " $0; bad++ }
		}
		for (i = 1; i <= k; i++) if (f[i] == "ih_rec") recs++
		if (recs > 6) { print "too deep: " $0; bad++ }
		total += n
	}
	END { if (bad || !total) { print "bad " bad+0 " of " total+0; exit 1 } }'
}

# Share (percent, one decimal) of the program's samples whose stack has $1.
share() {
	ih_stacks | awk -v pat="$1" '{ n = $NF; t += n; if ($1 ~ pat) m += n }
		END { printf "%.1f\n", t ? 100 * m / t : 0 }'
}

assert_share() {
	local got
	got=$(share "$1")
	awk -v g="$got" -v w="$2" 'BEGIN { exit !(g >= w - 5 && g <= w + 5) }' ||
		fail "share of $1: $got%, want $2% +- 5"
}

@test "a Python command: every interpreted stack is a real chain, shares within 5 points" {
	require_python
	run --separate-stderr sp-record --spans=none -o "$OUT" -- $PY "$FIX"
	[ "$status" = 0 ] || fail "$stderr"
	run assert_real_chains
	[ "$status" = 0 ] || fail "$output"
	assert_share 'ih_phase_rec' 20
	assert_share '(^|;)ih_a;ih_shared' 10
	assert_share '(^|;)ih_b;ih_shared' 10
	assert_share 'ih_phase_gen' 20	# the generator and the loop that drives it
	ih_stacks | grep -q 'ih_main;ih_phase_gen;ih_squares '
	assert_share '^ih_pool_work' 20
	assert_share 'ih_phase_hash;ih_hash' 20
	# the recursion shows all its levels: 6 ih_rec frames
	ih_stacks | grep -q 'ih_rec;ih_rec;ih_rec;ih_rec;ih_rec;ih_rec;ih_spin'
	# the runtime found is said, with its version
	sp-decode "$OUT" | jq -r 'select(.type == "runtime" and .runtime == "python")
		| "\(.mode) \(.version)"' | grep -q '^stacks 3\.11\.'
	# C code under ih_hash stays, as native frames above it
	sp-flame --folded "$OUT" 2>/dev/null | grep -q 'ih_hash;[^i ][^ ]* [0-9]*$'
}

@test "with a profile function on (--spans=python's hook): the eval loop's cold part is known, Python frames are spliced where they ran, not at the root of a whole C stack" {
	require_python
	# imports run the eval loop again for each module; with a profile
	# function on, the loop runs in the cold part GCC split off, which
	# python3.11's .dynsym does not name
	run -0 --separate-stderr sp-record -F 999 --spans=python -o "$OUT" -- $PY -c '
import json, email.mime.text, http.client, argparse, decimal, xml.dom.minidom, logging.handlers
for i in range(3000): json.dumps({"a": [i] * 10})'
	sp-symbolize "$OUT" 2>/dev/null | sp-flame --folded 2>/dev/null > "$BATS_TEST_TMPDIR/f"
	# samples with Python frames: enough to tell
	run -0 bash -c "grep -c '<module>' '$BATS_TEST_TMPDIR/f'"
	(( output >= 20 )) || skip "only $output samples of Python code"
	# Python frames go at the root only of a C stack cut short (a library
	# without CFI: libcrypto's): a few; spliced one loop off, half of them
	run -0 bash -c "awk '{ split(\$1, f, \";\"); n += \$NF; if (f[1] ~ /^(<module>|_find_and_load|_find_and_load_unlocked|_call_with_frames_removed|_load_unlocked|_handle_fromlist)\$/) bad += \$NF } END { print n, bad + 0 }' '$BATS_TEST_TMPDIR/f'"
	read -r all bad <<<"$output"
	(( bad * 20 <= all )) || fail "$bad of $all samples start with a Python frame: $(grep '^<module>' "$BATS_TEST_TMPDIR/f" | head -2)"
}

@test "a generator resumed from C: each eval loop call gets its own Python frames, one entering or leaving its frame a placeholder" {
	require_python
	# all() resumes the generator from C (a second _PyEval_EvalFrameDefault
	# call) 20,000 times a call: samples in that call's prologue, before
	# it pushes its frame, or after it popped it, read the caller's frames
	# only; they gave them all to the inner call, the outer one left a
	# native frame (8-16% of the samples, on Debian's python3.11)
	cat >"$BATS_TEST_TMPDIR/busy.py" <<'PY'
def leaf_hash(n):
    return all(i >= 0 for i in range(n))
def compute_primes():
    return leaf_hash(20000)
def middle():
    return compute_primes()
def outer_loop():
    while True:
        middle()
outer_loop()
PY
	$PY "$BATS_TEST_TMPDIR/busy.py" &
	BG=$!
	sleep 0.5
	run --separate-stderr sp-record --spans=none -p $BG -d 3 -o "$OUT"
	[ "$status" = 0 ] || fail "$stderr"
	sp-symbolize "$OUT" 2>/dev/null | sp-flame --folded 2>/dev/null > "$BATS_TEST_TMPDIR/f"
	# root first: a native eval frame over Python frames (its frames went
	# to another call), <module> twice, or Python frames out of the
	# program's one chain: <module> ... leaf_hash, then the generator or
	# the placeholder, nothing after them
	run -0 awk '{
		n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); total += n
		split("<module> outer_loop middle compute_primes leaf_hash", chain, " ")
		py = 0; eval = 0; last = ""; ok = 1
		for (i = 1; i <= k; i++) {
			if (f[i] == "_PyEval_EvalFrameDefault") { eval = 1; continue }
			if (f[i] == "leaf_hash.<locals>.<genexpr>" || f[i] == "[python: frame not pushed]") {
				if (py != 5 || last != "") ok = 0
				last = f[i]
				if (f[i] != "leaf_hash.<locals>.<genexpr>") hole += n
				else gen += n
				continue
			}
			if (f[i] == "<module>" || f[i] ~ /^(outer_loop|middle|compute_primes|leaf_hash)$/) {
				if (eval || last != "" || f[i] != chain[py + 1]) ok = 0
				py++
			}
		}
		if (!ok) { bad += n; if (shown++ < 3) print "bad: " $0 " " n }
	}
	END { print "total " total + 0 " gen " gen + 0 " hole " hole + 0 " bad " bad + 0 }' "$BATS_TEST_TMPDIR/f"
	read -r _ total _ gen _ hole _ bad <<<"${lines[-1]}"
	(( gen >= 50 )) || skip "only $gen samples in the generator: $output"
	(( bad == 0 )) || fail "$output"
	# each placeholder is a stack counted as not whole, by its kind
	if (( hole )); then
		grep -q "[ (]$hole frame-not-pushed" <<<"$stderr" || fail "$hole placeholders; $stderr"
	fi
}

@test "a frame's line is its current instruction's, not the function's first line" {
	require_python
	sp-record --spans=none -o "$OUT" -- $PY "$FIX" scale=0.3 2>/dev/null
	def=$(grep -n '^def ih_spin' "$FIX" | cut -d: -f1)
	run sh -c "sp-decode '$OUT' | jq -r 'select(.type == \"symbol\" and .func == \"ih_spin\") | .line' | sort -u"
	[ "$status" = 0 ]
	[ "${#lines[@]}" -ge 2 ] || fail "lines of ih_spin: $output"
	for l in "${lines[@]}"; do
		[ "$l" -gt "$def" ] && [ "$l" -le $((def + 5)) ] || fail "ih_spin at line $l (def at $def)"
	done
	sp-decode "$OUT" | jq -r 'select(.type == "symbol" and .func == "ih_spin") | .file' |
		sort -u | grep -qx "$FIX"
}

@test "sp-record -p: a Python program already running, its threads included" {
	require_python
	$PY "$FIX" loop scale=0.3 &
	BG=$!
	sleep 1
	run --separate-stderr sp-record --spans=none -p $BG -d 3 -o "$OUT"
	[ "$status" = 0 ] || fail "$stderr"
	run assert_real_chains
	[ "$status" = 0 ] || fail "$output"
	ih_stacks | grep -q '^ih_main;ih_phase_'
	# nearly every sample of the process has its interpreted stack
	total=$(sp-flame --folded "$OUT" 2>/dev/null | awk '{ t += $NF } END { print t }')
	ih=$(ih_stacks | awk '{ t += $NF } END { print t }')
	[ $((ih * 100)) -ge $((total * 90)) ] || fail "$ih of $total samples with Python frames"
	run sp-decode --stats "$OUT"
	! grep -q 'interp unread' <<<"$output" ||
		grep 'interp unread' <<<"$output" | awk '{ exit !($5 + 0 < 10) }' || fail "$output"
}

@test "a forked child's samples carry its interpreted stack" {
	require_python
	run --separate-stderr sp-record --spans=none -o "$OUT" -- $PY "$FIX" fork
	[ "$status" = 0 ] || fail "$stderr"
	run assert_real_chains
	[ "$status" = 0 ] || fail "$output"
	n=$(ih_stacks | awk '$1 ~ /ih_child;ih_spin/ { t += $NF } END { print t + 0 }')
	[ "$n" -ge 100 ] || fail "$n samples in the child's ih_child"
}

@test "a Python that execs itself: its stacks before and after the exec" {
	require_python
	run --separate-stderr sp-record --spans=none -o "$OUT" -- $PY "$FIX" exec
	[ "$status" = 0 ] || fail "$stderr"
	run assert_real_chains
	[ "$status" = 0 ] || fail "$output"
	b=$(ih_stacks | awk '$1 ~ /ih_before_exec;ih_spin/ { t += $NF } END { print t + 0 }')
	a=$(ih_stacks | awk '$1 ~ /ih_after_exec;ih_spin/ { t += $NF } END { print t + 0 }')
	[ "$b" -ge 100 ] && [ "$a" -ge 100 ] || fail "$b samples before the exec, $a after"
	[ "$(sp-decode "$OUT" | jq -r 'select(.type == "runtime") | .mode' | grep -c stacks)" = 2 ]
}

@test "an unsupported version (its layout removed) warns once and records native stacks" {
	require_python
	SP_INTERP_DROP=python3.11 run --separate-stderr sp-record --spans=none -o "$OUT" -- \
		$PY "$FIX" fork scale=0.3
	[ "$status" = 0 ] || fail "$stderr"
	[ "$(grep -c 'python 3\.11\..*no layout for this version; native stacks only' <<<"$stderr")" = 1 ] ||
		fail "$stderr"
	[ -z "$(ih_stacks)" ]
	[ "$(sp-flame --folded "$OUT" 2>/dev/null | wc -l)" -gt 10 ]
	sp-decode "$OUT" | jq -r 'select(.type == "runtime") | .mode' | grep -qx unsupported
}

@test "a Python older than 3.11 (no Py_Version) or 2.7 is named by its file's version and refused once" {
	require_root
	require_cmd jq
	local n=0 v py want
	for v in 2.7 3.8 3.10; do
		py=$(ls -d /root/.pyenv/versions/$v.*/bin/python$v 2>/dev/null | head -1)
		[ -n "$py" ] || continue
		n=$((n + 1))
		run --separate-stderr sp-record --spans=none -o "$OUT" -- "$py" -c 'sum(range(10**6))'
		[ "$status" = 0 ] || fail "$py: $stderr"
		want="python ${v//./\\.} (.*): no layout for this version; native stacks only"
		[ "$(grep -c "$want" <<<"$stderr")" = 1 ] || fail "$py: $stderr"
		[ "$(sp-decode "$OUT" | jq -r 'select(.type == "runtime") | "\(.version) \(.mode)"' |
			sort -u)" = "$v unsupported" ] || fail "$py: $(sp-decode "$OUT" | grep runtime)"
	done
	[ "$n" -gt 0 ] || skip "needs pyenv's Python 2.7, 3.8 or 3.10 in /root/.pyenv/versions"
}

@test "--interp=none: no interpreted frames, no runtime found" {
	require_python
	run --separate-stderr sp-record --spans=none --interp=none -o "$OUT" -- $PY "$FIX" scale=0.2
	[ "$status" = 0 ] || fail "$stderr"
	[ -z "$(ih_stacks)" ]
	! sp-decode "$OUT" | jq -r 'select(.type == "runtime") | .mode' | grep -qx stacks
	run sp-record --interp=perl -- true
	[ "$status" = 64 ]
}

@test "--interp=python (no Ruby walker loaded): a Python command's stacks are whole" {
	require_python
	run --separate-stderr sp-record --spans=none --interp=python -o "$OUT" -- $PY "$FIX" scale=0.3
	[ "$status" = 0 ] || fail "$stderr"
	run assert_real_chains
	[ "$status" = 0 ] || fail "$output"
	ih_stacks | grep -q 'ih_rec;ih_rec;ih_rec;ih_rec;ih_rec;ih_rec;ih_spin' ||
		fail "no full recursion: $(ih_stacks | head -5)"
	sp-decode "$OUT" | jq -r 'select(.type == "runtime") | .runtime' | grep -qx python
	[[ "$stderr" != *"interpreted frames: cannot"* ]] || fail "$stderr"
}

@test "--interp=ruby: a Python program keeps its native stacks only" {
	require_python
	run --separate-stderr sp-record --spans=none --interp=ruby -o "$OUT" -- $PY "$FIX" scale=0.2
	[ "$status" = 0 ] || fail "$stderr"
	[ -z "$(ih_stacks)" ]
	! sp-decode "$OUT" | jq -r 'select(.type == "runtime") | .runtime' | grep -qx python
}

@test "a forged interpreter run by nobody: cycles end truncated, names bounded, no loop" {
	require_root
	require_cmd gcc
	require_cmd setpriv
	NOBODY_DIR=$(mktemp -d /tmp/sp-forged.XXXXXX)
	gcc -O0 -o "$NOBODY_DIR/python3-forged" "$FIXTURES/forged.c"
	chmod -R a+rX "$NOBODY_DIR"
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$NOBODY_DIR/python3-forged" 1
	[ "$status" = 0 ] || fail "status $status: $stderr"
	run sh -c "sp-flame --folded '$OUT' 2>/dev/null | grep '^\[python: truncated\];'"
	[ "$status" = 0 ] || fail "no truncated stack"
	# the cycle is cut at the walk's limit (its frames), then the mark
	n=$(sed -n 1p <<<"$output" | awk '{ sub(/ [0-9]+$/, "") } 1' | tr ';' '\n' |
		grep -c '^AAAA\|^\[python: unreadable frame\]$\|^Z')
	[ "$n" = "$(walk_limit)" ] || fail "$n interpreted frames: ${output:0:300}"
	# the endless name is cut at its bound and says so
	name=$(sed -n 1p <<<"$output" | tr ';' '\n' | grep -m1 '^AAAA')
	[ "${#name}" -le 512 ] && [[ "$name" == *... ]] || fail "name of ${#name} bytes"
	# so is the one of 2^39 code points, copied by the BPF program: what
	# is no character is U+FFFD, control characters are escaped
	# (a byte of the 512 kept is at most 4 once escaped: \x1b)
	name=$(sed -n 1p <<<"$output" | tr ';' '\n' | grep -m1 '^Z')
	[ "${#name}" -le 2048 ] && [[ "$name" == *... ]] || fail "name of ${#name} bytes: $name"
	[[ "$name" == *$'\xef\xbf\xbd'* ]] || fail "no U+FFFD: $name"
	n=$(sp-flame --folded "$OUT" 2>/dev/null | LC_ALL=C grep -c $'[\x01-\x1f\x7f]' || true)
	[ "$n" = 0 ] || fail "$n folded lines with control characters"
	sp-decode "$OUT" | jq -r 'select(.type == "symbol") | .file // empty' | grep -q '^/x/' ||
		fail "the file with control characters is not there"
	# the incomplete stacks are said once on stderr, with the spool's count
	n=$(sp-decode "$OUT" | jq -r 'select(.type == "lost" and .what == "interp") | .count')
	[ "${n:-0}" -gt 0 ] || fail "no interp loss in the spool"
	[ "$(grep -c 'interpreted stacks:' <<<"$stderr")" = 1 ] || fail "$stderr"
	m=$(sed -n 's/^sp-record: interpreted stacks: [0-9.]*% complete (\([0-9]*\) of \([0-9]*\) samples of interpreter threads); the others ([^)]*) end in a frame that says why .*, e\.g\. pid [0-9]*$/\1 \2/p' <<<"$stderr")
	[ -n "$m" ] || fail "$stderr"
	[ $(( ${m#* } - ${m% *} )) = "$n" ] || fail "spool: $n incomplete; stderr: $m"
	# the kinds add up to them, and a forged cycle is cut by the walk's bound
	kinds=$(sed -n 's/^sp-record: interpreted stacks: .*; the others (\([^)]*\)) end in .*/\1/p' <<<"$stderr")
	[ "$(tr ',' '\n' <<<"$kinds" | awk '{ t += $1 } END { print t + 0 }')" = "$n" ] ||
		fail "kinds: $kinds; spool: $n"
	grep -q '[0-9] truncated' <<<"$kinds" || fail "kinds: $kinds"
}

@test "with the span hooks: the span path and the interpreted stack name the same function" {
	require_python
	run --separate-stderr sp-record --spans=auto -o "$OUT" -- $PY "$FIX" scale=0.3
	[ "$status" = 0 ] || fail "$stderr"
	# sp-flame --by=span: the span path, then the sample's stack. The
	# program's frames of both halves are the same chain for at least 90%
	# of its samples; the others are inside a generator (the hooks make no
	# span for it), in a new pool thread before its thread state exists
	# (sp-correlate puts it under the span that made it), or in the first
	# moments of the process, before its interpreter is followed. A span
	# is named with its module (__main__.ih_a), an interpreted frame by its
	# qualified name alone (ih_a).
	run sh -c "sp-correlate '$OUT' 2>/dev/null | sp-flame --by=span --folded 2>/dev/null | awk '
	{
		n = \$NF; sub(/ [0-9]+\$/, \"\"); k = split(\$0, f, \";\"); m = 0
		for (i = 1; i <= k; i++) { sub(/^__main__\\./, \"\", f[i]); if (f[i] ~ /^ih_/) g[++m] = f[i] }
		if (!m) next
		t += n; ok = m % 2 == 0
		for (i = 1; ok && i <= m / 2; i++) if (g[i] != g[i + m / 2]) ok = 0
		if (ok) a += n
	}
	END { print a + 0, \"of\", t + 0, \"samples agree\"; exit !t || a * 10 < t * 9 }'"
	[ "$status" = 0 ] || fail "$output"
}

@test "sp-record -a: a Python started after the recording began" {
	require_python
	(recording_began "$OUT" && exec $PY "$FIX" scale=0.3) &
	BG=$!
	run --separate-stderr sp-record -a --spans=none -d 8 -o "$OUT"
	[ "$status" = 0 ] || fail "$stderr"
	wait "$BG" || true
	BG=
	run assert_real_chains
	[ "$status" = 0 ] || fail "$output"
	n=$(ih_stacks | awk '{ t += $NF } END { print t + 0 }')
	[ "$n" -ge 100 ] || fail "$n samples with the program's frames"
}

# ---- Ruby 3.1 (Debian's /usr/bin/ruby, libruby-3.1.so, no symbol table) ----

RB=/usr/bin/ruby
RFIX=$BATS_TEST_DIRNAME/fixtures/ruby/interp_hot.rb

require_ruby() {
	require_root
	[ -x $RB ] || skip "needs Debian's $RB"
	$RB -e 'exit RUBY_VERSION.start_with?("3.1.") ? 0 : 1' || skip "needs Ruby 3.1"
	require_cmd jq
}

# The program's frames (rh_*, "block in rh_*" as block_in_rh_*) of each
# folded stack, root first, with its count. Its methods are defined at the
# top level: private methods of Object, named "Object#rh_*".
rh_stacks() {
	sp-flame --folded "$OUT" 2>/dev/null | awk '{
		n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); s = ""
		for (i = 1; i <= k; i++) {
			g = f[i]; gsub(/ /, "_", g)
			if (g ~ /^(block_in_)?Object#rh_/) {
				sub(/Object#/, "", g)
				s = s (s == "" ? "" : ";") g
			}
		}
		if (s != "") print s, n }'
}

# Every stack of the program's frames is a chain its source can make.
assert_rb_chains() {
	rh_stacks | awk '
	BEGIN {
		split("rh_main>rh_phase_rec rh_main>rh_phase_two rh_main>rh_phase_each " \
		      "rh_main>rh_phase_thread rh_main>rh_phase_zlib rh_main>rh_child " \
		      "rh_phase_rec>rh_rec rh_rec>rh_rec rh_rec>rh_spin rh_child>rh_spin " \
		      "rh_phase_two>rh_a rh_phase_two>rh_b rh_a>rh_shared rh_b>rh_shared " \
		      "rh_phase_each>block_in_rh_phase_each block_in_rh_phase_each>rh_item " \
		      "block_in_rh_phase_thread>rh_thread_work rh_thread_work>rh_spin " \
		      "rh_phase_zlib>rh_deflate rh_main>block_in_rh_main " \
		      "block_in_rh_main>rh_phase_rec block_in_rh_main>rh_phase_two " \
		      "block_in_rh_main>rh_phase_each block_in_rh_main>rh_phase_thread " \
		      "block_in_rh_main>rh_phase_zlib block_in_rh_main>rh_child", e, " ")
		for (i in e) ok[e[i]] = 1
	}
	{
		n = $NF; k = split($1, f, ";"); recs = 0
		if (f[1] != "rh_main" && f[1] != "block_in_rh_phase_thread") {
			print "bad root: " $0; bad++
		}
		for (i = 2; i <= k; i++)
			if (!((f[i-1] ">" f[i]) in ok)) { print "bad edge " f[i-1] ">" f[i] ": " $0; bad++ }
		for (i = 1; i <= k; i++) if (f[i] == "rh_rec") recs++
		if (recs > 6) { print "too deep: " $0; bad++ }
		total += n
	}
	END { if (bad || !total) { print "bad " bad+0 " of " total+0; exit 1 } }'
}

rb_share() {
	rh_stacks | awk -v pat="$1" '{ n = $NF; t += n; if ($1 ~ pat) m += n }
		END { printf "%.1f\n", t ? 100 * m / t : 0 }'
}

assert_rb_share() {
	local got
	got=$(rb_share "$1")
	awk -v g="$got" -v w="$2" 'BEGIN { exit !(g >= w - 5 && g <= w + 5) }' ||
		fail "share of $1: $got%, want $2% +- 5: $(rh_stacks | sort -k2 -nr | head -20)"
}

@test "a Ruby command: every interpreted stack is a real chain, shares within 5 points" {
	require_ruby
	run --separate-stderr sp-record --spans=none -o "$OUT" -- $RB "$RFIX"
	[ "$status" = 0 ] || fail "$stderr"
	run assert_rb_chains
	[ "$status" = 0 ] || fail "$output"
	assert_rb_share 'rh_phase_rec' 20
	assert_rb_share '(^|;)rh_a;rh_shared' 10
	assert_rb_share '(^|;)rh_b;rh_shared' 10
	assert_rb_share 'rh_phase_each;block_in_rh_phase_each' 20
	assert_rb_share '^block_in_rh_phase_thread;rh_thread_work' 20
	assert_rb_share 'rh_phase_zlib;rh_deflate' 20
	# the recursion shows all its levels: 6 rh_rec frames
	rh_stacks | grep -q 'rh_rec;rh_rec;rh_rec;rh_rec;rh_rec;rh_rec;rh_spin'
	sp-decode "$OUT" | jq -r 'select(.type == "runtime" and .runtime == "ruby")
		| "\(.mode) \(.version)"' | grep -q '^stacks 3\.1\.'
	# the C method rh_deflate calls is named, its C code stays as native frames above it
	sp-flame --folded "$OUT" 2>/dev/null | grep -q 'rh_deflate;Zlib\.deflate;[^ ]* [0-9]*$'
}

@test "a Ruby frame's line is its current instruction's, not the method's first line" {
	require_ruby
	sp-record --spans=none -o "$OUT" -- $RB "$RFIX" scale=0.3 2>/dev/null
	def=$(grep -n '^def rh_spin' "$RFIX" | cut -d: -f1)
	run sh -c "sp-decode '$OUT' | jq -r 'select(.type == \"symbol\" and .func == \"Object#rh_spin\") | .line' | sort -u"
	[ "$status" = 0 ]
	[ "${#lines[@]}" -ge 2 ] || fail "lines of rh_spin: $output"
	for l in "${lines[@]}"; do
		[ "$l" -gt "$def" ] && [ "$l" -le $((def + 8)) ] || fail "rh_spin at line $l (def at $def)"
	done
	sp-decode "$OUT" | jq -r 'select(.type == "symbol" and .func == "Object#rh_spin") | .file' |
		sort -u | grep -qx "$RFIX"
}

@test "sp-record -p: a Ruby program already running, its threads included" {
	require_ruby
	# short phases: every phase, the thread's included, comes round more
	# than once in the recording's 4 s, even on a loaded machine
	$RB "$RFIX" loop scale=0.1 &
	BG=$!
	sleep 1
	run --separate-stderr sp-record --spans=none -p $BG -d 4 -o "$OUT"
	[ "$status" = 0 ] || fail "$stderr"
	run assert_rb_chains
	[ "$status" = 0 ] || fail "$output"
	rh_stacks | grep -q '^rh_main;block_in_rh_main;rh_phase_'
	rh_stacks | grep -q '^block_in_rh_phase_thread;rh_thread_work'
	total=$(sp-flame --folded "$OUT" 2>/dev/null | awk '{ t += $NF } END { print t }')
	rh=$(rh_stacks | awk '{ t += $NF } END { print t }')
	[ $((rh * 100)) -ge $((total * 90)) ] || fail "$rh of $total samples with Ruby frames"
	# each new Thread runs on the last one's native thread (same pthread_t
	# and tid): its stacks are its own, not the finished thread's
	bad=$(sp-flame --folded "$OUT" 2>/dev/null |
		awk '/\[ruby: unreadable\]/ { t += $NF } END { print t + 0 }')
	[ $((bad * 100)) -le $((total * 2)) ] || fail "$bad of $total samples unreadable"
}

@test "a forked Ruby child's samples carry its interpreted stack" {
	require_ruby
	run --separate-stderr sp-record --spans=none -o "$OUT" -- $RB "$RFIX" fork
	[ "$status" = 0 ] || fail "$stderr"
	run assert_rb_chains
	[ "$status" = 0 ] || fail "$output"
	n=$(rh_stacks | awk '$1 ~ /rh_child;rh_spin/ { t += $NF } END { print t + 0 }')
	[ "$n" -ge 100 ] || fail "$n samples in the child's rh_child"
}

@test "sp-record -a: a Ruby started after the recording began" {
	require_ruby
	(recording_began "$OUT" && exec $RB "$RFIX" scale=0.3) &
	BG=$!
	run --separate-stderr sp-record -a --spans=none -d 8 -o "$OUT"
	[ "$status" = 0 ] || fail "$stderr"
	wait "$BG" || true
	BG=
	run assert_rb_chains
	[ "$status" = 0 ] || fail "$output"
	n=$(rh_stacks | awk '{ t += $NF } END { print t + 0 }')
	[ "$n" -ge 100 ] || fail "$n samples with the program's frames"
}

@test "a Ruby the command does not foresee (sh runs it): its walkers are in before the command runs: no sample goes without them" {
	require_ruby
	# sh is the command: no Ruby is foreseen, yet a shell may start one at
	# once; the exec'd Ruby is found from its mappings
	run --separate-stderr sp-record --spans=none -o "$OUT" -- sh -c "exec $RB '$RFIX' scale=0.3"
	[ "$status" = 0 ] || fail "$stderr"
	run assert_rb_chains
	[ "$status" = 0 ] || fail "$output"
	n=$(rh_stacks | awk '{ t += $NF } END { print t + 0 }')
	[ "$n" -ge 50 ] || fail "$n samples with the program's frames"
	# the walkers were in before the command ran: no sample waited for
	# them (before: loaded once the Ruby was found, 146-353 samples of a
	# loaded machine had none), and none is counted as such
	wait=$(sp-flame --folded "$OUT" 2>/dev/null |
		awk '/\[ruby: walker not loaded yet\]/ { t += $NF } END { print t + 0 }')
	[ "$wait" = 0 ] || fail "$wait samples before the walkers: $stderr"
	! echo "$stderr" | grep -q "walker-loading" || fail "counted: $stderr"
}

@test "Ruby: an unsupported version (its layout removed) warns once; --interp=none and python leave it native" {
	require_ruby
	SP_INTERP_DROP=ruby3.1 run --separate-stderr sp-record --spans=none -o "$OUT" -- \
		$RB "$RFIX" fork scale=0.3
	[ "$status" = 0 ] || fail "$stderr"
	[ "$(grep -c 'ruby 3\.1\..*no layout for this version; native stacks only' <<<"$stderr")" = 1 ] ||
		fail "$stderr"
	[ -z "$(rh_stacks)" ]
	[ "$(sp-flame --folded "$OUT" 2>/dev/null | wc -l)" -gt 10 ]
	sp-decode "$OUT" | jq -r 'select(.type == "runtime") | .mode' | grep -qx unsupported
	for mode in none python; do
		run --separate-stderr sp-record --spans=none --interp=$mode -o "$OUT" -- \
			$RB "$RFIX" scale=0.2
		[ "$status" = 0 ] || fail "$stderr"
		[ -z "$(rh_stacks)" ] || fail "--interp=$mode: $(rh_stacks | head)"
	done
}

# The distinct frames of the recording, one a line.
frames() {
	sp-flame --folded "$OUT" 2>/dev/null | awk '{ sub(/ [0-9]+$/, "") } 1' | tr ';' '\n' | sort -u
}

@test "Ruby frames carry their class (Foo#bar, Foo.baz), C methods are frames where they ran" {
	require_ruby
	run --separate-stderr sp-record --spans=none -o "$OUT" -- $RB \
		"$BATS_TEST_DIRNAME/fixtures/ruby/interp_class.rb" 2
	[ "$status" = 0 ] || fail "$stderr"
	f=$(frames)
	# the names the fixture's source defines, as Ruby's own docs write them
	for want in 'Foo#bar' 'block in Foo#bar' 'Foo.baz' 'block in Foo.baz' 'Util.helper' \
		'block in Util.helper' 'Util#mixed' 'Outer::Inner#work' 'Integer#times' \
		'Enumerable#sort_by' 'Zlib.deflate'; do
		grep -qxF "$want" <<<"$f" || fail "no frame '$want': $(grep -v '+0x' <<<"$f" | head -40)"
	done
	grep -qE '^#<Class:0x[0-9a-f]{16}>#run$' <<<"$f" || fail "no anonymous class's run"
	# no method of the fixture is left with its label alone
	for bare in bar baz helper mixed work run 'block in bar' 'block in baz'; do
		! grep -qxF "$bare" <<<"$f" || fail "a bare '$bare' frame"
	done
	# the C methods sit where they ran: under their caller, their C code above
	s=$(sp-flame --folded "$OUT" 2>/dev/null)
	grep -Eq ';Foo\.baz;Zlib\.deflate;[^ ]*(zlib|libz)\.so[^ ]* [0-9]+$' <<<"$s" ||
		fail "Zlib.deflate not between Foo.baz and zlib's code"
	grep -q ';Foo#bar;Integer#times;' <<<"$s" || fail "no Foo#bar;Integer#times"
	grep -q ';Foo\.baz;Enumerable#sort_by;' <<<"$s" || fail "no Foo.baz;Enumerable#sort_by"
}

@test "Ruby: a C method called from another's C code sits over its C function, in call order" {
	require_ruby
	run --separate-stderr sp-record --spans=none -o "$OUT" -- $RB \
		"$BATS_TEST_DIRNAME/fixtures/ruby/interp_cfuncs.rb" 2
	[ "$status" = 0 ] || fail "$stderr"
	# the fixture's methods and the C functions of Debian's libruby that
	# its symbol table names (.dynsym: rb_ary_sort, rb_ary_cmp, rb_ary_each)
	sp-symbolize "$OUT" 2>/dev/null | sp-flame --folded - 2>/dev/null | awk '{
		n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); s = ""
		for (i = 1; i <= k; i++)
			if (f[i] ~ /^(cf_|Object#cf_|block|Array#|Integer#<=>|Enumerable#|rb_ary_(sort|cmp|each)$)/)
				s = s (s == "" ? "" : ";") f[i]
		if (s ~ /cf_/) print s, n }' > "$BATS_TEST_TMPDIR/stacks"
	awk '{ t += $NF } END { exit t < 200 }' "$BATS_TEST_TMPDIR/stacks" ||
		fail "few samples: $(head "$BATS_TEST_TMPDIR/stacks")"
	# share (percent) of the samples of stacks matching $1 whose stack
	# matches $2 too
	within() {
		awk -v a="$1" -v b="$2" '{ s = $0; sub(/ [0-9]+$/, "", s) }
			s ~ a { t += $NF; if (s ~ b) m += $NF }
			END { printf "%d %d\n", t, t ? 100 * m / t : 0 }' "$BATS_TEST_TMPDIR/stacks"
	}
	# every Array#<=> is Array#sort's, from cf_pairs, and over rb_ary_cmp
	# (or, between its frame's push and its call, over rb_ary_sort's code)
	read -r t p <<<"$(within 'Array#<=>' '^Object#cf_pairs;Array#sort;rb_ary_sort;Array#<=>(;|$)')"
	[ "$t" -gt 0 ] && [ "$p" -ge 95 ] || fail "Array#<=>: $p% of $t in order: $(grep 'Array#<=>' "$BATS_TEST_TMPDIR/stacks" | head)"
	read -r t p <<<"$(within 'Array#<=>' 'Array#<=>;rb_ary_cmp(;|$)')"
	[ "$p" -ge 80 ] || fail "Array#<=> over rb_ary_cmp: $p% of $t"
	read -r t p <<<"$(within 'Integer#<=>' 'Array#<=>;rb_ary_cmp;Integer#<=>$')"
	[ "$p" -ge 80 ] || fail "Integer#<=> over Array#<=>'s code: $p% of $t"
	# each_slice's Array#each over rb_ary_each, its block's sort_by the same
	read -r t p <<<"$(within 'block \(2 levels\)' '^Object#cf_slices;Enumerable#each_slice;Array#each;rb_ary_each;block in Object#cf_slices;Enumerable#sort_by;Array#each;rb_ary_each;block \(2 levels\) in Object#cf_slices(;|$)')"
	[ "$t" -gt 0 ] && [ "$p" -ge 80 ] || fail "block (2 levels): $p% of $t in order: $(grep 'levels' "$BATS_TEST_TMPDIR/stacks" | head)"
	# no C method named out of its order: never under its own callee
	! grep -E 'Array#<=>.*Array#sort|Integer#<=>.*Array#<=>;|sort_by.*each_slice' \
		"$BATS_TEST_TMPDIR/stacks" || fail "out of order"
}

@test "a forged Ruby run by nobody: an endless stack ends truncated, names bounded, no loop" {
	# (its method entries too: cycles of classes and environments, endless paths)
	require_root
	require_cmd gcc
	require_cmd setpriv
	NOBODY_DIR=$(mktemp -d /tmp/sp-forged.XXXXXX)
	gcc -O0 -pthread -o "$NOBODY_DIR/ruby-forged" "$FIXTURES/forged_rb.c"
	chmod -R a+rX "$NOBODY_DIR"
	run --separate-stderr timeout 120 sp-record --spans=none -o "$OUT" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$NOBODY_DIR/ruby-forged" 1
	[ "$status" = 0 ] || fail "status $status: $stderr"
	sp-decode "$OUT" | jq -r 'select(.type == "runtime") | "\(.runtime) \(.mode)"' |
		grep -qx 'ruby stacks' || fail "not followed"
	run sh -c "sp-flame --folded '$OUT' 2>/dev/null | grep '^\[ruby: truncated\];'"
	[ "$status" = 0 ] || fail "no truncated stack"
	# the endless stack is cut at the walk's limit (its frames), then the mark;
	# its C methods' frames are among them
	n=$(sed -n 1p <<<"$output" | awk '{ sub(/ [0-9]+$/, "") } 1' | tr ';' '\n' |
		grep -c 'AAAA\|^BBBB\|^\[ruby: unreadable frame\]$')
	[ "$n" = "$(walk_limit)" ] || fail "$n interpreted frames: ${output:0:300}"
	# the endless label is cut at its bound and says so; the method entry's
	# singleton class, attached to itself, is shown by its address
	name=$(sed -n 1p <<<"$output" | tr ';' '\n' | grep -m1 'AAAA')
	[ "${#name}" -le 512 ] && [[ "$name" == *... ]] || fail "label of ${#name} bytes"
	[[ "$name" =~ ^#\<Class:0x[0-9a-f]{16}\>\.AAAA ]] || fail "method of ${name:0:40}"
	# the C method's class path without end is cut too
	name=$(sed -n 1p <<<"$output" | tr ';' '\n' | grep -m1 '^BBBB')
	[ "${#name}" -le 512 ] && [[ "$name" == *... ]] || fail "C method of ${#name} bytes"
}

# Off-CPU samples: a thread blocks in a method of the program (sleep, a
# pipe read) from a known chain (tests/fixtures/*/offcpu_wait.*). The named
# frames of each off-CPU stack, root first, with its count (native frames,
# module+0x..., and the kernel's left out).
OCPY=$BATS_TEST_DIRNAME/fixtures/python/offcpu_wait.py
OCRB=$BATS_TEST_DIRNAME/fixtures/ruby/offcpu_wait.rb

oc_stacks() {
	sp-flame --off-cpu --folded "$OUT" 2>/dev/null | awk '{
		n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); s = ""
		for (i = 1; i <= k; i++)
			if (f[i] !~ /(^|\+)0x[0-9a-f]+$/) s = s (s == "" ? "" : ";") f[i]
		if (s != "") print s "\t" n }'
}

# Off-CPU samples whose named frames match $1 (an awk pattern).
oc_count() {
	oc_stacks | awk -F'\t' -v pat="$1" '$1 ~ pat { t += $2 } END { print t + 0 }'
}

# Every off-CPU stack that holds $1 holds it under the chain $2 (a pattern
# ending just before it), and the stack's leaf is the kernel's: the
# interpreted frames stand among the native ones, not after them.
assert_oc_chain() {
	sp-flame --off-cpu --folded "$OUT" 2>/dev/null | awk -v m="$1" -v chain="$2" '
	index($0, m) {
		n++
		s = $0; sub(/ [0-9]+$/, "", s)
		if (s !~ /;(\[kernel\.kallsyms\]\+)?0xffff[0-9a-f]+$/) { print "leaf not the kernel: " s; bad++ }
		g = ";" s; gsub(/;([^;]*\+)?0x[0-9a-f]+/, "", g); sub(/^;/, "", g)
		if (g !~ chain) { print "bad chain: " g; bad++ }
	}
	END { if (bad || !n) { print "bad " bad+0 " of " n+0; exit 1 } }'
}

@test "off-CPU samples of a Python command carry the chain that blocked" {
	require_python
	run --separate-stderr sp-record --spans=none --off-cpu -o "$OUT" -- $PY "$OCPY"
	[ "$status" = 0 ] || fail "$stderr"
	# 40 sleeps and 40 pipe reads, each at least 1 ms
	n=$(oc_count '^<module>;oc_main;oc_serve;Waiter\.block$')
	[ "$n" -ge 40 ] || fail "$n waits in Waiter.block: $(oc_stacks)"
	run assert_oc_chain ';Waiter.block' '(^|;)<module>;oc_main;oc_serve;Waiter\.block(;|$)'
	[ "$status" = 0 ] || fail "$output"
	# the timer threads wait under their own chain
	[ "$(oc_count '^Thread\._bootstrap;Thread\._bootstrap_inner;Timer\.run;Event\.wait')" -ge 1 ]
}

@test "off-CPU samples of a running Python (-p) carry the chain that blocked" {
	require_python
	$PY "$OCPY" loop &
	BG=$!
	sleep 1
	run --separate-stderr sp-record --spans=none --off-cpu -p $BG -d 3 -o "$OUT"
	[ "$status" = 0 ] || fail "$stderr"
	n=$(oc_count '^<module>;oc_main;oc_serve;Waiter\.block$')
	[ "$n" -ge 20 ] || fail "$n waits in Waiter.block: $(oc_stacks)"
	run assert_oc_chain ';Waiter.block' '(^|;)<module>;oc_main;oc_serve;Waiter\.block(;|$)'
	[ "$status" = 0 ] || fail "$output"
}

RB_OC_CHAIN='^<main>;Object#oc_main;Object#oc_serve;Integer#times;block in Object#oc_serve;Waiter#block'

@test "off-CPU samples of a Ruby command carry the chain that blocked" {
	require_ruby
	run --separate-stderr sp-record --spans=none --off-cpu -o "$OUT" -- $RB "$OCRB"
	[ "$status" = 0 ] || fail "$stderr"
	n=$(oc_count "$RB_OC_CHAIN;Kernel#sleep\$")
	[ "$n" -ge 20 ] || fail "$n waits in Waiter#block's sleep: $(oc_stacks)"
	n=$(oc_count "$RB_OC_CHAIN;IO#read\$")
	[ "$n" -ge 20 ] || fail "$n waits in Waiter#block's read: $(oc_stacks)"
	run assert_oc_chain ';Waiter#block;' "$RB_OC_CHAIN;"
	[ "$status" = 0 ] || fail "$output"
	# the writer threads: the block made in Waiter#block
	[ "$(oc_count '^block in Waiter#block;Kernel#sleep$')" -ge 1 ]
}

@test "off-CPU samples of a running Ruby (-p) carry the chain that blocked" {
	require_ruby
	$RB "$OCRB" loop &
	BG=$!
	sleep 1
	run --separate-stderr sp-record --spans=none --off-cpu -p $BG -d 3 -o "$OUT"
	[ "$status" = 0 ] || fail "$stderr"
	n=$(oc_count "$RB_OC_CHAIN;(Kernel#sleep|IO#read)\$")
	[ "$n" -ge 20 ] || fail "$n waits in Waiter#block: $(oc_stacks)"
	run assert_oc_chain ';Waiter#block;' "$RB_OC_CHAIN;"
	[ "$status" = 0 ] || fail "$output"
}

@test "off-CPU samples of a forged interpreter run by nobody: the cycle ends truncated, no loop" {
	require_root
	require_cmd gcc
	require_cmd setpriv
	NOBODY_DIR=$(mktemp -d /tmp/sp-forged.XXXXXX)
	gcc -O0 -o "$NOBODY_DIR/python3-forged" "$FIXTURES/forged.c"
	chmod -R a+rX "$NOBODY_DIR"
	run --separate-stderr timeout 120 sp-record --spans=none --off-cpu -o "$OUT" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$NOBODY_DIR/python3-forged" 1 sleep
	[ "$status" = 0 ] || fail "status $status: $stderr"
	run sh -c "sp-flame --off-cpu --folded '$OUT' 2>/dev/null | grep '^\[python: truncated\];'"
	[ "$status" = 0 ] || fail "no truncated off-CPU stack"
	n=$(sed -n 1p <<<"$output" | awk '{ sub(/ [0-9]+$/, "") } 1' | tr ';' '\n' |
		grep -c '^AAAA\|^\[python: unreadable frame\]$\|^Z')
	[ "$n" = "$(walk_limit)" ] || fail "$n interpreted frames: ${output:0:300}"
	name=$(sed -n 1p <<<"$output" | tr ';' '\n' | grep -m1 '^AAAA')
	[ "${#name}" -le 512 ] && [[ "$name" == *... ]] || fail "name of ${#name} bytes"
	# the stack goes on to where it slept: the kernel's frames at the leaf
	sed -n 1p <<<"$output" | grep -Eq ';(\[kernel\.kallsyms\]\+)?0xffff[0-9a-f]+ [0-9]+$'
}

# The share of complete interpreted stacks, from the spool's own records
# (issue #18): a sample ran interpreted code when it has an interpreted
# frame or, in its native stack, the interpreter's eval loop; it is
# complete when it has interpreted frames and none of them is a
# placeholder ("[ruby: unreadable frame]", "[python: truncated]" ...). A
# sample with neither (ld.so, the VM's set-up, its teardown) ran none.
# Prints "complete counted".
complete_share() {
	sp-symbolize "$OUT" 2>/dev/null | sp-decode 2>/dev/null | jq -r --arg pid "$1" '
		select(.type == "sample" and (.pid | tostring) == $pid)
		| [.frames[]? | select(.mode == "interp") | .func] as $i
		| ([.frames[]? | select(.mode == "user") | .func // ""
		    | select(test("^(rb_vm_exec|vm_exec_core|_PyEval_EvalFrameDefault)$"))]
		   | length > 0) as $eval
		| if ($i | length) > 0 then
			(if any($i[]; startswith("[")) then "incomplete" else "complete" end)
		  elif $eval then "incomplete" else "none" end' |
		awk '{ c[$1]++ } END { print c["complete"] + 0, c["complete"] + c["incomplete"] }'
}

assert_complete_share() {
	local got complete counted
	got=$(complete_share "$1")
	read -r complete counted <<<"$got"
	[ "$counted" -ge 40 ] || fail "only $counted samples ran interpreted code"
	# 95%, not 99: a loaded machine delays reading the code a stack names
	[ $((complete * 100)) -ge $((counted * 95)) ] ||
		fail "$complete of $counted samples have a complete interpreted stack"
}

# Record interpreter $2 running script $3 and assert the share of its
# process's ($1's runtime record) complete stacks.
assert_spin_complete() {
	local pid
	run --separate-stderr sp-record --spans=none -o "$OUT" -- "$2" "$3"
	[ "$status" = 0 ] || fail "$stderr"
	pid=$(sp-decode "$OUT" 2>/dev/null | jq -r --arg rt "$1" \
		'select(.type == "runtime" and .runtime == $rt and .mode == "stacks") | .pid' |
		head -1)
	[ -n "$pid" ] || fail "no $1 followed"
	assert_complete_share "$pid"
}

@test "a CPU-bound Ruby command: at least 95% of its samples have a complete interpreted stack" {
	require_ruby
	cat >"$BATS_TEST_TMPDIR/spin.rb" <<'RUBY'
def rbc_leaf(n)
  s = 0
  i = 0
  while i < n
    s += i * i
    i += 1
  end
  s
end

def rbc_mid(n)
  rbc_leaf(n) + [1, 2, 3].map { |x| x * 2 }.sum
end

def rbc_main
  t0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  rbc_mid(20_000) while Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - t0 < 1.5
end

rbc_main
RUBY
	assert_spin_complete ruby $RB "$BATS_TEST_TMPDIR/spin.rb"
	# the program's own chain is there, whole
	sp-flame --folded "$OUT" 2>/dev/null | grep -q '<main>;Object#rbc_main;Object#rbc_mid;Object#rbc_leaf'
}

@test "a CPU-bound Python command: at least 95% of its samples have a complete interpreted stack" {
	require_python
	cat >"$BATS_TEST_TMPDIR/spin.py" <<'PY'
import time


def rbc_leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def rbc_mid(n):
    return rbc_leaf(n) + sum(x * 2 for x in (1, 2, 3))


def rbc_main():
    t0 = time.process_time()
    while time.process_time() - t0 < 1.5:
        rbc_mid(20000)


rbc_main()
PY
	assert_spin_complete python $PY "$BATS_TEST_TMPDIR/spin.py"
	sp-flame --folded "$OUT" 2>/dev/null | grep -q '<module>;rbc_main;rbc_mid;rbc_leaf'
}

# Per sample of pid $1 with a module's frames: "ok N LINE" for a frame
# pim_work_N whose caller is "<module>" of pim_N.py at LINE, "bad ..."
# for one whose caller is anything else (another module's file, an
# unreadable frame), "module N LINE" for each "<module>" frame of a
# pim_N.py.
pim_frames() {
	sp-symbolize "$OUT" 2>/dev/null | sp-decode 2>/dev/null | jq -r --arg pid "$1" '
		select(.type == "sample" and (.pid | tostring) == $pid)
		| [.frames[]? | select(.mode == "interp")] as $f
		| range(0; $f | length) as $i | $f[$i] as $x
		| if ($x.func | test("^pim_work_[0-9]+$")) then
			($x.func | ltrimstr("pim_work_")) as $n | ($f[$i + 1] // {}) as $up
			| if $up.func == "<module>" and (($up.file // "") | endswith("/pim_" + $n + ".py"))
			  then "ok \($n) \($up.line)"
			  else "bad \($x.func) under \($up.func) \($up.file)" end
		  elif $x.func == "<module>" and (($x.file // "") | test("/pim_[0-9]+\\.py$")) then
			"module \($x.file | capture("/pim_(?<n>[0-9]+)\\.py$").n) \($x.line)"
		  else empty end'
}

@test "modules imported one after another: their top-level code, freed at once, is <module> of its own file" {
	require_python
	run --separate-stderr sp-record --spans=none -o "$OUT" -- \
		$PY "$BATS_TEST_DIRNAME/fixtures/python/many_imports.py" "$BATS_TEST_TMPDIR/mods" 40
	[ "$status" = 0 ] || fail "$stderr"
	pid=$(sp-decode "$OUT" 2>/dev/null | jq -r \
		'select(.type == "runtime" and .runtime == "python" and .mode == "stacks") | .pid' |
		head -1)
	[ -n "$pid" ] || fail "no python followed"
	pim_frames "$pid" > "$BATS_TEST_TMPDIR/frames"
	# each module's function is called from its own module's top level
	bad=$(grep '^bad' "$BATS_TEST_TMPDIR/frames" | sort | uniq -c | sort -rn | head -3)
	[ -z "$bad" ] || fail "$(grep -c '^bad' "$BATS_TEST_TMPDIR/frames") frames are not under their module's: $bad"
	n=$(grep -c '^ok' "$BATS_TEST_TMPDIR/frames")
	[ "$n" -ge 40 ] || fail "only $n samples in a module's function"
	# the top-level frames of many modules, each at a line of its own
	# module's top-level code (the docstring, the def, the loop and the
	# lines after it: as Python's compiler lists them, not its function's
	# body), the caller of pim_work_N at its call (line 15)
	mods=$(awk '$1 == "module" { print $2 }' "$BATS_TEST_TMPDIR/frames" | sort -u | wc -l)
	[ "$mods" -ge 10 ] || fail "the top level of only $mods modules"
	$PY - "$BATS_TEST_TMPDIR/mods" >"$BATS_TEST_TMPDIR/lines" <<-'EOF'
	import dis, glob, os, sys
	for path in sorted(glob.glob(sys.argv[1] + "/pim_*.py")):
	    with open(path) as f:
	        code = compile(f.read(), path, "exec")
	    lines = {i.positions.lineno for i in dis.get_instructions(code)}
	    print(os.path.basename(path)[4:7], *sorted(x for x in lines if x))
	EOF
	grep -q '^000 1 4 11 12 13 14 15$' "$BATS_TEST_TMPDIR/lines" ||
		fail "top-level lines: $(grep '^000 ' "$BATS_TEST_TMPDIR/lines")"
	awk 'FILENAME == ARGV[1] { for (i = 2; i <= NF; i++) top[$1, $i] = 1; next }
		$1 == "module" && !(($2, $3) in top) { print; bad++ }
		$1 == "ok" && $3 != 15 { print; bad++ }
		END { exit bad > 0 }' "$BATS_TEST_TMPDIR/lines" "$BATS_TEST_TMPDIR/frames" ||
		fail "module frames at lines out of their top-level code"
	# no module's top level is left unnamed, and the stacks are whole
	n=$(sp-flame --folded "$OUT" 2>/dev/null |
		grep -c '_call_with_frames_removed;\[python: unreadable frame\]' || true)
	[ "$n" = 0 ] || fail "$n stacks with a module's top level unnamed"
	assert_complete_share "$pid"
}

@test "a Python run by nobody that makes fresh code without end: its copies are capped, its steady code's stacks stay whole" {
	require_python
	require_cmd setpriv
	NOBODY_DIR=$(mktemp -d /tmp/sp-fresh.XXXXXX)
	# each round execs 13 functions never seen before, each calling the
	# next (every sample in them meets up to 13 new code objects: copies),
	# then runs the same steady code
	cat >"$NOBODY_DIR/fresh.py" <<'PY'
import time


def steady_leaf(n):
    return sum(i * i for i in range(n))


def steady_main():
    return steady_leaf(20000)


def fresh_round(i):
    src = "".join(f"def fresh_{i}_{k}():\n    return fresh_{i}_{k + 1}()\n" for k in range(12))
    src += f"def fresh_{i}_12():\n    s = 0\n    for j in range(3000):\n        s += j\n    return s\n"
    src += f"fresh_{i}_0()\n"
    exec(compile(src, f"<fresh {i}>", "exec"), {})


t0 = time.process_time()
i = 0
while time.process_time() - t0 < 2.5:
    fresh_round(i)
    steady_main()
    i += 1
PY
	chmod -R a+rX "$NOBODY_DIR"
	run --separate-stderr timeout 120 sp-record -v --spans=none -o "$OUT" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups $PY "$NOBODY_DIR/fresh.py"
	[ "$status" = 0 ] || fail "status $status: $stderr"
	# the fresh code was copied, and then refused: counted in the spool
	# and on the end lines, the same number
	n=$(sp-decode "$OUT" | jq -r 'select(.type == "lost" and .what == "interp_copies") | .count')
	[ "${n:-0}" -gt 0 ] || fail "no copies refused in the spool: $(grep interp <<<"$stderr")"
	m=$(sed -n 's/^sp-record: interpreted frames: \([0-9]*\) copies of Python code objects refused .*/\1/p' <<<"$stderr")
	[ "$m" = "$n" ] || fail "spool: $n refused; stderr: $m"
	sp-decode --stats-json "$OUT" 2>/dev/null | jq -e --argjson n "$n" '.interp_copies_refused == $n' >/dev/null ||
		fail "stats: $(sp-decode --stats-json "$OUT" 2>&1 | head -c 300)"
	# the steady code's samples: whole interpreted stacks, all but a few.
	# A sample in an eval loop's first or last instructions (the
	# generator's, resumed by sum()) is marked "[python: frame not
	# pushed]" where its frame would be: whole otherwise, and no effect of
	# the cap on copies, which is what is looked at here
	sp-symbolize "$OUT" 2>/dev/null | sp-decode 2>/dev/null | jq -r '
		select(.type == "sample")
		| [.frames[]? | select(.mode == "interp") | .func] as $i
		| select(any($i[]; . == "steady_leaf"))
		| if any($i[]; startswith("[") and . != "[python: frame not pushed]") then "incomplete"
		  else "complete" end' |
		sort | uniq -c > "$BATS_TEST_TMPDIR/steady"
	read -r complete _ < <(grep -w complete "$BATS_TEST_TMPDIR/steady" || echo "0 complete")
	read -r incomplete _ < <(grep -w incomplete "$BATS_TEST_TMPDIR/steady" || echo "0 incomplete")
	[ "$complete" -ge 40 ] || fail "only $complete complete steady stacks: $(cat "$BATS_TEST_TMPDIR/steady")"
	[ $((complete * 100)) -ge $(((complete + incomplete) * 95)) ] ||
		fail "$complete of $((complete + incomplete)) steady stacks complete"
	sp-flame --folded "$OUT" 2>/dev/null | grep -q '<module>;steady_main;steady_leaf' ||
		fail "no <module>;steady_main;steady_leaf chain"
}

# A Python that forks 8 children making fresh code, run by the command
# given (a user's, or root's; SP_FORKS_USERNS set: the forks in a user
# namespace, each a host uid of its own): sp-record -v's copies taken fit
# one budget.
forks_share_one_budget() {
	NOBODY_DIR=$(mktemp -d /tmp/sp-forks.XXXXXX)
	# each child execs 13 functions never seen before a round, for 1.5 s
	# of its CPU: together they ask for many bursts of copies
	cat >"$NOBODY_DIR/forks.py" <<'PY'
import ctypes
import os
import sys
import time


def fresh_round(i):
    src = "".join(f"def fresh_{i}_{k}():\n    return fresh_{i}_{k + 1}()\n" for k in range(12))
    src += f"def fresh_{i}_12():\n    s = 0\n    for j in range(3000):\n        s += j\n    return s\n"
    src += f"fresh_{i}_0()\n"
    exec(compile(src, f"<fresh {os.getpid()} {i}>", "exec"), {})


def forks(own_uids):
    kids = []
    for k in range(1, 9):
        pid = os.fork()
        if pid == 0:
            if own_uids:
                os.setgroups([])
                os.setresgid(k, k, k)
                os.setresuid(k, k, k)
            t0 = time.process_time()
            i = 0
            while time.process_time() - t0 < 1.5:
                fresh_round(i)
                i += 1
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)


def in_user_namespace():
    """Root: the forks in a user namespace that 65534 owns, 65536 host
    uids mapped from 100000 (as newuidmap maps a user's /etc/subuid),
    each fork a host uid of its own."""
    ready_r, ready_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setresgid(65534, 65534, 0)
        os.setresuid(0, 65534, 0)  # the namespace's owner: the euid
        if ctypes.CDLL(None, use_errno=True).unshare(0x10000000):  # CLONE_NEWUSER
            sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
        os.write(ready_w, b"1")
        os.read(mapped_r, 1)
        os.setresgid(0, 0, 0)
        os.setresuid(0, 0, 0)
        forks(True)
        os._exit(0)
    os.read(ready_r, 1)
    for f in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{f}", "w") as m:
            m.write("0 100000 65536\n")
    os.write(mapped_w, b"1")
    _, st = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(st))


if os.environ.get("SP_FORKS_USERNS"):
    in_user_namespace()
forks(False)
PY
	chmod -R a+rX "$NOBODY_DIR"
	t0=$(date +%s%N)
	run --separate-stderr timeout 180 sp-record -v -F 999 --spans=none -o "$OUT" -- \
		"$@" $PY "$NOBODY_DIR/forks.py"
	t1=$(date +%s%N)
	[ "$status" = 0 ] || fail "status $status: $stderr"
	line=$(grep '^sp-record: interpreted frames: [0-9]* copies of Python code objects refused' <<<"$stderr") ||
		fail "no copies refused: $(grep interp <<<"$stderr")"
	taken=$(sed -n 's/.* refused (\([0-9]*\) taken;.*/\1/p' <<<"$line")
	[ -n "$taken" ] || fail "no count of copies taken: $line"
	# one budget for the 8: a burst, then the rate over the whole run at
	# most (rounded up), and a walk's copies per CPU for a refill racing
	# another (tokens are taken atomically); a budget per process gave
	# each fork a burst and a rate of its own (8 times as much)
	secs=$(((t1 - t0) / 1000000000 + 1))
	max=$((512 + 128 * secs + 16 * $(nproc)))
	[ "$taken" -le "$max" ] || fail "$taken copies taken in ${secs}s, at most $max for one budget: $line"
}

@test "a Python run by nobody that forks 8 children making fresh code: the forks share one budget of copies" {
	require_python
	require_cmd setpriv
	forks_share_one_budget setpriv --reuid=65534 --regid=65534 --clear-groups
}

@test "a Python run by root that forks 8 children making fresh code: the forks share their cgroup's budget of copies" {
	require_python
	require_root
	# root's budget is its cgroup's, as a rootful container's (host
	# root) is: a fork has none of its own
	forks_share_one_budget env
}

@test "a Python whose forks run as 8 host uids of a user namespace a user owns: they share the owner's budget of copies" {
	require_python
	require_root
	# a user with /etc/subuid runs processes as thousands of host uids
	# (newuidmap): its namespace's owner's budget, not one each
	forks_share_one_budget env SP_FORKS_USERNS=1
}
