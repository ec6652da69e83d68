#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-symbolize: fixtures are built here with -g; expected names and lines come
# from nm, readelf and addr2line, never from sp-symbolize itself.

load helper

BASE=$((0x500000000000))

setup() {
	require_cmd gcc
	require_cmd jq
	T=$BATS_TEST_TMPDIR
	CLEANUP=
}

teardown() {
	[ -z "$CLEANUP" ] || rm -rf $CLEANUP
}

build_c() {	# build_c OUT [cc flags...]: the C fixture
	local out=$1; shift
	gcc -O2 -g "$@" -o "$out" "$FIXTURES/inl.c"
}

buildid() {
	readelf -n "$1" | awk '/Build ID/ { print $3 }'
}

fn_addr() {	# fn_addr BIN NAME -> 0x... (ELF address, from nm)
	nm "$1" | awk -v n="$2" '$3 == n { print "0x" $1; exit }' | sed 's/^0x0*/0x/'
}

fn_size() {	# fn_size BIN NAME -> decimal size from nm -S
	nm -S "$1" | awk -v n="$2" '$4 == n { print $2; exit }' | { read -r s; echo $((16#$s)); }
}

dyn_cover() {	# dyn_cover BIN ADDR -> the .dynsym function covering ADDR by its size, or ??
	local a=$(($2)) s z t n
	while read -r s z t n; do
		[ "$t" = T ] || [ "$t" = t ] || [ "$t" = W ] || continue
		if ((a >= 16#$s && a < 16#$s + 16#$z)); then
			echo "$n"
			return
		fi
	done < <(nm -D -S "$1" 2>/dev/null | awk 'NF == 4')
	echo "??"
}

# stream BIN BUILDID FLAGS ADDR...: JSON lines with one module mapping BIN and
# one frame per ELF address (FLAGS: 0x1 = leaf, 0x0 = return address).
stream() {
	local bin=$1 bid=$2 flags=$3 a
	shift 3
	printf '{"type":"header","version":1,"clock":"monotonic"}\n'
	printf '{"type":"module","time":1,"pid":100,"start":"0x%x","end":"0x%x","path":"%s"%s}\n' \
		"$BASE" $((BASE + 0x1000000)) "$bin" "${bid:+,\"build_id\":\"$bid\"}"
	for a in "$@"; do
		printf '{"type":"frame","module":1,"rel":"%s","addr":"0x%x","flags":"%s"}\n' \
			"$a" $((BASE + a)) "$flags"
	done
	printf '{"type":"process_end","time":2,"pid":100}\n'
}

# syms FILE: one line per symbol record: rel|index|func|basename:line|status|flags
syms() {
	jq -rs '(map(select(.type == "frame")) | map({key: (.id | tostring), value: .rel})
		| from_entries) as $f
		| .[] | select(.type == "symbol")
		| "\($f[.frame | tostring])|\(.index)|\(.func // "??")|\((.file // "??")
		  | split("/") | last):\(.line // 0)|\(.status // "ok")|\(.flags // "0x0")"' "$1"
}

@test "sp-symbolize: every address of the fixture's functions agrees with addr2line -f -i" {
	local bin=$T/inl addrs=() f a s n
	build_c "$bin"
	for f in walk exported_work main; do
		a=$(fn_addr "$bin" "$f")
		s=$(fn_size "$bin" "$f")
		[ -n "$a" ] && [ "$s" -gt 0 ]
		for ((n = 0; n < s; n++)); do
			addrs+=("$(printf '0x%x' $((a + n)))")
		done
	done
	stream "$bin" "$(buildid "$bin")" 0x1 "${addrs[@]}" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	syms "$T/out.jsonl" | cut -d'|' -f1-4 > "$T/ours"
	# addr2line: "0x<addr>" then (function, file:line) per inline level.
	addr2line -f -i -a -e "$bin" "${addrs[@]}" | awk '
		/^0x/ { sub(/^0x0*/, "0x"); if ($0 == "0x") $0 = "0x0"; a = $0; i = 0; next }
		{ f = $0; getline loc; sub(/ \(discriminator.*/, "", loc)
		  n = split(loc, p, "/"); loc = p[n]; sub(/:\?$/, ":0", loc)
		  print a "|" i++ "|" f "|" loc }' > "$T/ref"
	[ "$(wc -l < "$T/ref")" -ge "${#addrs[@]}" ]
	diff -u "$T/ref" "$T/ours"
	# The inlined function shows up as its own frame, inside walk().
	grep -q '|0|mix|inl.c:' "$T/ours"
	grep -q '|1|walk|inl.c:' "$T/ours"
}

@test "sp-symbolize: a split DWARF unit whose .dwo is a FIFO is not waited on: the unit is said unread, the symbol table names" {
	local bin=$T/split dwo a
	(cd "$T" && gcc -O2 -g -gsplit-dwarf -gdwarf-5 -o split "$FIXTURES/inl.c")
	dwo=$(readelf --debug-dump=info "$bin" 2>/dev/null | awk '/DW_AT_dwo_name/ { print $NF; exit }')
	[ -n "$dwo" ] || skip "gcc made no split DWARF unit"
	# the binary's author names the .dwo: here a FIFO no one writes to
	rm -f "$T/$dwo"
	mkfifo "$T/$dwo"
	a=$(fn_addr "$bin" main)
	stream "$bin" "$(buildid "$bin")" 0x1 "$a" > "$T/in.jsonl"
	run --separate-stderr timeout 60 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	[ "$status" = 0 ] || fail "status $status (124: it waited on the FIFO): $stderr"
	[[ "$stderr" == *"'$bin': 1 DWARF units could not be read"* ]] || fail "$stderr"
	run -0 syms "$T/out.jsonl"
	assert_output --partial "|0|main|"
}

@test "sp-symbolize: DWARF that dwz shared out is read through its shared file; that file made a FIFO or another one is refused at once, the symbol table names" {
	require_cmd dwz
	local a b want
	# (a.plain: the same binary before dwz, which addr2line reads)
	(cd "$T" && gcc -O1 -g -o a "$FIXTURES/inl.c" && gcc -O1 -g -DVARIANT=1 -o b "$FIXTURES/inl.c" &&
		cp a a.plain && dwz -m common.debug -M "$T/common.debug" a b) || skip "dwz made no shared file"
	# the layout this is about: units that refer to the shared file
	readelf -S "$T/a" | grep -q gnu_debugaltlink || skip "dwz left no .gnu_debugaltlink"
	readelf --debug-dump=info "$T/a" 2>/dev/null | grep -q "alt" || skip "no unit refers to the shared file"
	a=$(fn_addr "$T/a" main)
	want=$(addr2line -e "$T/a.plain" "$a" | sed 's|.*/||')
	[[ "$want" == inl.c:[1-9]* ]] || fail "addr2line: $want"
	stream "$T/a" "$(buildid "$T/a")" 0x1 "$a" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-cache --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	run -0 syms "$T/out.jsonl"
	assert_output --partial "|0|main|$want|"
	# the path the binary names is its author's: a FIFO there
	mv "$T/common.debug" "$T/common.real"
	mkfifo "$T/common.debug"
	run --separate-stderr timeout -k 10 60 sp-symbolize --no-cache --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	[ "$status" = 0 ] || fail "status $status (124: it waited on the FIFO): $stderr"
	assert_equal "$(grep -c "'$T/a': DWARF not used: the shared DWARF file .*: '$T/common.debug'" <<<"$stderr")" 1
	run -0 syms "$T/out.jsonl"
	assert_output --partial "|0|main|??:0|"
	# another shared file in its place (not the build-id the link names)
	rm "$T/common.debug"
	printf '%s\n' 'struct other { int a; long b; };' 'int use(struct other *o) { return o->a; }' \
		'int main(void) { struct other o = { 1, 2 }; return use(&o) - 1; }' > "$T/other.c"
	(cd "$T" && gcc -O1 -g -o c other.c && gcc -O1 -g -DX=1 -o d other.c &&
		dwz -m other.debug -M "$T/common.debug" c d && mv other.debug common.debug) ||
		skip "dwz made no shared file of other.c"
	run --separate-stderr -0 sp-symbolize --no-cache --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	[[ "$stderr" == *"'$T/a': DWARF not used: the shared DWARF file"* ]] || fail "$stderr"
	run -0 syms "$T/out.jsonl"
	assert_output --partial "|0|main|??:0|"
}

@test "sp-symbolize: an inline level is flagged inline and from DWARF, the function it sits in is not" {
	local bin=$T/inl
	build_c "$bin"
	# Every address of walk() that addr2line puts in mix() (first line of a chain).
	local a s n hit=
	a=$(fn_addr "$bin" walk)
	s=$(fn_size "$bin" walk)
	for ((n = 0; n < s; n++)); do
		if addr2line -f -i -e "$bin" "$(printf '0x%x' $((a + n)))" | head -1 | grep -qx mix; then
			hit=$(printf '0x%x' $((a + n)))
			break
		fi
	done
	[ -n "$hit" ]
	stream "$bin" "$(buildid "$bin")" 0x1 "$hit" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json "$T/in.jsonl"
	echo "$output" > "$T/out.jsonl"
	run syms "$T/out.jsonl"
	assert_line --partial "$hit|0|mix|inl.c:"
	assert_line --partial "$hit|1|walk|inl.c:"
	# flags: inline 0x1 | dwarf 0x4 on level 0, dwarf only on level 1.
	[[ "${lines[0]}" == *"|ok|0x5" ]]
	[[ "${lines[1]}" == *"|ok|0x4" ]]
}

@test "sp-symbolize: C++ templates are demangled as nm -C prints them, --no-demangle keeps them" {
	require_cmd g++
	local bin=$T/tmpl a name mangled
	g++ -O2 -g -o "$bin" "$FIXTURES/tmpl.cpp"
	mangled=$(nm "$bin" | awk '$3 ~ /^_ZN2fx5twiceIiEET_S1_$/ { print $3 }')
	[ -n "$mangled" ]
	a=$(fn_addr "$bin" "$mangled")
	name=$(nm -C "$bin" | awk -v a="$(printf '%016x' "$a")" '$1 == a { $1 = $2 = ""; sub(/^  /, ""); print; exit }')
	assert_equal "$name" "int fx::twice<int>(int)"
	stream "$bin" "$(buildid "$bin")" 0x1 "$a" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	run syms "$T/out.jsonl"
	assert_line --partial "$a|0|$name|tmpl.cpp:"
	run --separate-stderr -0 sp-symbolize --no-system-debug --no-demangle --format json -o "$T/out2.jsonl" "$T/in.jsonl"
	run syms "$T/out2.jsonl"
	assert_line --partial "$a|0|$mangled|tmpl.cpp:"
}

@test "sp-symbolize: a stripped binary finds its debug file by build-id in --debug-dir" {
	local bin=$T/inl bid a line
	build_c "$bin"
	bid=$(buildid "$bin")
	a=$(fn_addr "$bin" walk)
	line=$(addr2line -e "$bin" "$a" | sed 's/.*://; s/ .*//')
	mkdir -p "$T/dbg/.build-id/${bid:0:2}"
	objcopy --only-keep-debug "$bin" "$T/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
	strip --strip-all -o "$T/inl.stripped" "$bin"
	# The stripped file has no symbols of its own.
	run nm "$T/inl.stripped"
	assert_output --partial "no symbols"
	stream "$T/inl.stripped" "$bid" 0x1 "$a" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --debug-dir "$T/dbg" --format json -o "$T/out.jsonl" "$T/in.jsonl"
	run syms "$T/out.jsonl"
	assert_output "$a|0|walk|inl.c:$line|ok|0x4"
}

@test "sp-symbolize: a stripped binary finds its debug file through .gnu_debuglink" {
	local bin=$T/inl a line
	build_c "$bin"
	a=$(fn_addr "$bin" exported_work)
	line=$(addr2line -e "$bin" "$a" | sed 's/.*://; s/ .*//')
	mkdir -p "$T/app/.debug"
	objcopy --only-keep-debug "$bin" "$T/app/.debug/inl.dbg"
	strip --strip-all -o "$T/app/inl" "$bin"
	(cd "$T/app/.debug" && objcopy --add-gnu-debuglink=inl.dbg "$T/app/inl")
	readelf -S "$T/app/inl" | grep -q gnu_debuglink
	# A build-id-less lookup would also work; use the debuglink path only.
	stream "$T/app/inl" "$(buildid "$bin")" 0x1 "$a" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	run syms "$T/out.jsonl"
	assert_output "$a|0|exported_work|inl.c:$line|ok|0x4"
}

@test "sp-symbolize: a stripped binary without debug file falls back to .dynsym and says so" {
	local bin=$T/inl ex wk size after
	build_c "$bin" -rdynamic
	strip --strip-all -o "$T/inl.stripped" "$bin"
	ex=$(fn_addr "$bin" exported_work)
	wk=$(fn_addr "$bin" walk)
	size=$(fn_size "$bin" exported_work)
	after=$(printf '0x%x' $((ex + size)))
	# Independently: exported_work is in .dynsym, walk is not.
	nm -D "$T/inl.stripped" | grep -q ' T exported_work$'
	! nm -D "$T/inl.stripped" | grep -q ' walk$'
	stream "$T/inl.stripped" "$(buildid "$bin")" 0x1 "$ex" "$wk" "$after" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	run syms "$T/out.jsonl"
	# flags 0x2: from .dynsym
	assert_line "$ex|0|exported_work|??:0|stripped|0x2"
	# walk() is static: not named after a neighbouring exported symbol.
	assert_equal "$(dyn_cover "$T/inl.stripped" "$wk")" "??"
	assert_line "$wk|0|??|??:0|stripped|0x0"
	# The byte after exported_work: whatever .dynsym's sizes say covers it.
	local exp
	exp=$(dyn_cover "$T/inl.stripped" "$after")
	[ "$exp" != exported_work ]
	if [ "$exp" = "??" ]; then
		assert_line "$after|0|??|??:0|stripped|0x0"
	else
		assert_line "$after|0|$exp|??:0|stripped|0x2"
	fi
}

@test "sp-symbolize: a return address is looked up at pc - 1, a sampled pc at pc" {
	local bin=$T/inl c size ret before
	# Without hot/cold splitting, checked() itself ends in its call to abort().
	build_c "$bin" -fno-reorder-blocks-and-partition
	c=$(fn_addr "$bin" checked)
	size=$(fn_size "$bin" checked)
	ret=$(printf '0x%x' $((c + size)))
	before=$(printf '0x%x' $((c + size - 1)))
	# checked() ends with a call to abort(): its return address is the byte after it.
	objdump -d --start-address="$c" --stop-address="$ret" "$bin" | tail -1 | grep -q 'call.*abort'
	# What addr2line says about the last byte of checked() and about the byte after it.
	[ "$(addr2line -f -e "$bin" "$before" | head -1)" = checked ]
	[ "$(addr2line -f -e "$bin" "$ret" | head -1)" != checked ]
	stream "$bin" "$(buildid "$bin")" 0x0 "$ret" > "$T/ret.jsonl"
	stream "$bin" "$(buildid "$bin")" 0x1 "$ret" > "$T/leaf.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/ret.out" "$T/ret.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/leaf.out" "$T/leaf.jsonl"
	run syms "$T/ret.out"
	assert_output --partial "$ret|0|checked|inl.c:$(addr2line -e "$bin" "$before" | sed 's/.*://; s/ .*//')|ok"
	run syms "$T/leaf.out"
	refute_output --partial "$ret|0|checked|"
}

@test "sp-symbolize: a build-id mismatch leaves the frame unresolved and warns once" {
	local bin=$T/inl a
	build_c "$bin"
	a=$(fn_addr "$bin" walk)
	stream "$bin" 0123456789abcdef0123456789abcdef01234567 0x1 "$a" "$a" > "$T/in.jsonl"
	sed -i 's/"flags":"0x1"}$/"flags":"0x1"}/' "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	[ "$(grep -c 'build-id mismatch' <<< "$stderr")" -ge 1 ]
	[[ "$stderr" == *"'$bin': build-id mismatch; its frames stay unresolved"* ]]
	run syms "$T/out.jsonl"
	assert_output "$a|0|??|??:0|build_id_mismatch|0x0
$a|0|??|??:0|build_id_mismatch|0x0"
}

@test "sp-symbolize: bad files warn, leave their frames unresolved, and the stream goes on" {
	local bin=$T/inl a
	build_c "$bin"
	a=$(fn_addr "$bin" walk)
	mkdir "$T/dir"
	mkfifo "$T/fifo"
	head -c 3000 "$bin" > "$T/trunc"
	head -c 4096 /dev/urandom > "$T/garbage"
	{
		printf '{"type":"header","version":1,"clock":"monotonic"}\n'
		local i=1 p
		for p in "$T/dir" "$T/fifo" "$T/trunc" "$T/garbage" "$T/missing" "$bin"; do
			printf '{"type":"module","time":1,"pid":100,"start":"0x%x","end":"0x%x","path":"%s"}\n' \
				$((BASE + i * 0x1000000)) $((BASE + (i + 1) * 0x1000000)) "$p"
			printf '{"type":"frame","module":%d,"rel":"%s","addr":"0x1","flags":"0x1"}\n' "$i" "$a"
			i=$((i + 1))
		done
	} > "$T/in.jsonl"
	run --separate-stderr -0 timeout 20 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.jsonl"
	[[ "$stderr" == *"'$T/dir': not a regular file"* ]]
	[[ "$stderr" == *"'$T/fifo': not a regular file"* ]]
	[[ "$stderr" == *"'$T/garbage': not an ELF file"* ]]
	[[ "$stderr" == *"'$T/missing': file not found"* ]]
	run syms "$T/out.jsonl"
	assert_equal "${#lines[@]}" 6
	assert_line --index 0 "$a|0|??|??:0|bad_file|0x0"
	assert_line --index 1 "$a|0|??|??:0|bad_file|0x0"
	assert_line --index 4 "$a|0|??|??:0|file_missing|0x0"
	assert_line --index 5 --partial "$a|0|walk|inl.c:"
}

@test "sp-symbolize: kernel frames from ksym records, JIT frames from jitsym records" {
	cat > "$T/in.jsonl" <<'EOF'
{"type":"header","version":1,"clock":"monotonic"}
{"type":"ksym","addr":"0xffffffff81000000","size":256,"name":"do_syscall_64"}
{"type":"ksym","addr":"0xffffffff81000100","name":"entry_SYSCALL_64"}
{"type":"ksym","addr":"0xffffffff81000200","name":"zzz_end"}
{"type":"module","time":1,"pid":0,"start":"0xffffffff81000000","end":"0xffffffff82000000","path":"[kernel.kallsyms]","flags":"0x1"}
{"type":"frame","module":1,"rel":"0x10","addr":"0xffffffff81000010","mode":"kernel","flags":"0x1"}
{"type":"frame","module":1,"rel":"0x101","addr":"0xffffffff81000101","mode":"kernel"}
{"type":"jitsym","pid":7,"addr":"0x7000000","size":64,"name":"LazyCompile:foo"}
{"type":"module","time":1,"pid":7,"start":"0x7000000","end":"0x7100000","flags":"0x2"}
{"type":"frame","module":2,"rel":"0x8","addr":"0x7000008","flags":"0x1"}
{"type":"frame","module":2,"rel":"0x80","addr":"0x7000080","flags":"0x1"}
{"type":"frame","module":0,"rel":"0x80","addr":"0x9000080","pid":8,"flags":"0x1"}
EOF
	run --separate-stderr -0 sp-symbolize --format json -o "$T/out.jsonl" "$T/in.jsonl"
	run syms "$T/out.jsonl"
	assert_line "0x10|0|do_syscall_64|??:0|ok|0x0"
	assert_line "0x101|0|entry_SYSCALL_64|??:0|ok|0x0"
	assert_line "0x8|0|LazyCompile:foo|??:0|ok|0x0"
	assert_line "0x80|0|??|??:0|jit_no_map|0x0"
	assert_line "0x80|0|??|??:0|no_module|0x0"
	# The offsets: 0x10 into do_syscall_64.
	[ "$(jq -r 'select(.type == "symbol" and .frame == 1) | .offset' "$T/out.jsonl")" = 0x10 ]
}

@test "sp-symbolize: spool in, spool out, the header says symbolized, a second run adds nothing" {
	local bin=$T/inl a
	build_c "$bin"
	a=$(fn_addr "$bin" walk)
	stream "$bin" "$(buildid "$bin")" 0x1 "$a" | sp-decode --encode -o "$T/in.sp"
	run --separate-stderr -0 sp-symbolize --no-system-debug -o "$T/out.sp" "$T/in.sp"
	[ "$(head -c 4 "$T/in.sp" | od -An -c)" = "$(head -c 4 "$T/out.sp" | od -An -c)" ]
	sp-decode "$T/out.sp" > "$T/out.jsonl"
	[ $(( $(jq -r 'select(.type == "header") | .flags' "$T/out.jsonl") & 4 )) = 4 ]
	[ "$(syms "$T/out.jsonl" | cut -d'|' -f3)" = walk ]
	run --separate-stderr -0 sp-symbolize --no-system-debug -o "$T/again.sp" "$T/out.sp"
	sp-decode "$T/again.sp" > "$T/again.jsonl"
	[ "$(grep -c '"type":"symbol"' "$T/again.jsonl")" = 1 ]
	cmp "$T/out.jsonl" "$T/again.jsonl"
}

# An interpreted frame (a Python or Ruby method in a sample) is named by
# the recorder's own symbol record: there is nothing to look up, and
# --force, which drops the input's symbols, must keep it.
@test "sp-symbolize: an interpreted frame keeps the recorder's name, once, also with --force" {
	cat > "$T/py.jsonl" <<-'EOF'
	{"type":"header","version":1,"start_wall_ns":1764669600000000000,"start_mono_ns":1000000000,"clock":"monotonic","sample_freq":1000,"call_graph":"auto","event":"cpu-clock","command":"python3 app.py"}
	{"type":"process","time":1000000000,"pid":100,"ppid":1,"comm":"python3","exe":"/usr/bin/python3.11"}
	{"type":"module","id":1,"time":1000000000,"pid":100,"start":"0x0","end":"0x0","path":"[python]"}
	{"type":"frame","id":1,"module":1,"rel":"0x1","addr":"0x1","mode":"interp"}
	{"type":"symbol","frame":1,"index":0,"func":"load_config","file":"app.py","line":3}
	{"type":"stack","id":1,"parent":0,"frame":1}
	{"type":"sample","time":1001000000,"pid":100,"tid":100,"cpu":0,"stack":1,"weight":1}
	EOF
	for force in "" --force; do
		run --separate-stderr -0 sp-symbolize $force --format=json "$T/py.jsonl"
		# one symbol record, the recorder's; no lookup counted as failed
		[ "$(grep -c '"type":"symbol"' <<< "$output")" = 1 ] || fail "$force: $output"
		assert_line '{"type":"symbol","frame":1,"index":0,"func":"load_config","file":"app.py","line":3}'
		[[ "$stderr" != *"no symbols"* ]]
	done
	run --separate-stderr -0 bash -c "sp-symbolize --force '$T/py.jsonl' | sp-flame -q"
	assert_output "load_config 1"
}

@test "sp-symbolize: strings after an added one keep their meaning (ids are remapped)" {
	local bin=$T/inl a
	build_c "$bin"
	a=$(fn_addr "$bin" walk)
	{
		stream "$bin" "$(buildid "$bin")" 0x1 "$a" | head -n -1
		printf '{"type":"process","time":3,"pid":101,"ppid":1,"comm":"later-comm","exe":"/later/exe"}\n'
		printf '{"type":"thread","time":3,"tid":101,"pid":101,"name":"later-thread"}\n'
	} | sp-decode --encode -o "$T/in.sp"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/out.jsonl" "$T/in.sp"
	run jq -r 'select(.type == "process") | "\(.comm) \(.exe)"' "$T/out.jsonl"
	assert_output "later-comm /later/exe"
	run jq -r 'select(.type == "thread") | .name' "$T/out.jsonl"
	assert_output "later-thread"
}

@test "sp-symbolize: --stats prints resolved and unresolved frames per file" {
	local bin=$T/inl a
	build_c "$bin"
	a=$(fn_addr "$bin" walk)
	stream "$bin" "$(buildid "$bin")" 0x1 "$a" "0x1" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --stats -o /dev/null "$T/in.jsonl"
	[[ "$stderr" == *"sp-symbolize: 2 frames, 1 named, 1 with file:line; unresolved or partial: 1 no symbols"* ]]
	[[ "$stderr" == *"  $bin: 2 frames"* ]]
	run --separate-stderr -0 sp-symbolize --quiet --no-system-debug -o /dev/null "$T/in.jsonl"
	assert_equal "$stderr" ""
	# -q, as sp-flame's
	run --separate-stderr -0 sp-symbolize -q --no-system-debug -o /dev/null "$T/in.jsonl"
	assert_equal "$stderr" ""
}

@test "sp-symbolize: --stats gives a file mapped by one process after another one line" {
	local bin=$T/inl a
	build_c "$bin"
	a=$(fn_addr "$bin" walk)
	{
		stream "$bin" "$(buildid "$bin")" 0x1 "$a"
		# pid 100's mapping goes, pid 200 maps the file next (a shell's
		# every command), and pid 300 still has it at the end
		printf '{"type":"module_end","time":3,"module":1}\n'
		for pid in 200 300; do
			printf '{"type":"module","time":4,"pid":%s,"start":"0x%x","end":"0x%x","path":"%s","build_id":"%s"}\n' \
				"$pid" "$BASE" $((BASE + 0x1000000)) "$bin" "$(buildid "$bin")"
		done
		printf '{"type":"frame","module":2,"rel":"%s","addr":"0x%x","flags":"0x1"}\n' "$a" $((BASE + a))
		printf '{"type":"module_end","time":5,"module":2}\n'
		printf '{"type":"frame","module":3,"rel":"%s","addr":"0x%x","flags":"0x1"}\n' "$a" $((BASE + a))
	} > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --stats -o /dev/null "$T/in.jsonl"
	[[ "$stderr" == *"sp-symbolize: 3 frames, 3 named"* ]]
	[ "$(grep -c "^sp-symbolize:   $bin:" <<< "$stderr")" = 1 ] || fail "$stderr"
	[[ "$stderr" == *"  $bin: 3 frames, 3 named"* ]]
}

@test "sp-symbolize: sp-record -- prog | sp-symbolize | sp-decode shows names, files and lines" {
	require_root
	[ -x "$SP_BIN/sp-record" ] || skip "sp-record is not built"
	local bin=$T/inlfp
	gcc -O1 -g -fno-omit-frame-pointer -o "$bin" "$FIXTURES/inl.c"
	sp-record -F 1999 -o "$T/run.sp" -- "$bin" 200000000 2> "$T/rec.err" || {
		cat "$T/rec.err"
		skip "sp-record could not record here"
	}
	run --separate-stderr -0 sp-symbolize --no-system-debug -o "$T/sym.sp" "$T/run.sp"
	sp-decode "$T/sym.sp" > "$T/sym.jsonl"
	# The fixture's hot function, with its file and a line that addr2line gives for it.
	run jq -r 'select(.type == "symbol" and .func == "walk") | "\(.file):\(.line)"' "$T/sym.jsonl"
	assert_output --partial "$FIXTURES/inl.c:"
	local wk size line ok=
	wk=$(fn_addr "$bin" walk)
	size=$(fn_size "$bin" walk)
	for line in $(jq -r 'select(.type == "symbol" and .func == "walk" and .index == 0) | .line' "$T/sym.jsonl" | sort -u); do
		# Every line we give walk() is one addr2line gives for some address in it.
		addr2line -e "$bin" $(for ((n = 0; n < size; n++)); do printf '0x%x ' $((wk + n)); done) |
			sed 's/.*://; s/ .*//' | grep -qx "$line" || { echo "line $line not in walk"; false; }
		ok=1
	done
	[ -n "$ok" ]
	# Samples carry the symbolized frames; the header says so.
	[ $(( $(jq -r 'select(.type == "header") | .flags' "$T/sym.jsonl") & 4 )) = 4 ]
	# The same through pipes.
	sp-record -F 1999 -- "$bin" 100000000 2>/dev/null | sp-symbolize --quiet --no-system-debug |
		sp-decode > "$T/pipe.jsonl"
	grep -q '"func":"walk"' "$T/pipe.jsonl"
}

@test "sp-symbolize: a binary replaced on disk after it started resolves from sp-record's archive, never from the new file" {
	require_root
	[ -x "$SP_BIN/sp-record" ] || skip "sp-record is not built"
	local app=$T/app rec old_bid i
	mkdir -p "$app"
	gcc -O1 -g -fno-omit-frame-pointer -o "$app/sp-sym-victim" "$FIXTURES/inl.c"
	old_bid=$(buildid "$app/sp-sym-victim")
	# The program works, then sleeps 3 s; once it runs, its file is replaced.
	sp-record -F 1999 --archive "$T/arch" -o "$T/run.sp" -- "$app/sp-sym-victim" 150000000 3 \
		2> "$T/rec.err" &
	rec=$!
	for ((i = 0; i < 200; i++)); do
		pgrep -x sp-sym-victim > /dev/null && break
		sleep 0.1
	done
	cp /bin/true "$app/prog.new"
	mv "$app/prog.new" "$app/sp-sym-victim"
	wait "$rec" || { cat "$T/rec.err"; skip "sp-record could not record here"; }
	[ "$(buildid "$app/sp-sym-victim")" != "$old_bid" ]
	# The archive holds the old image under its build-id.
	[ "$(buildid "$T/arch/${old_bid:0:2}/${old_bid:2}")" = "$old_bid" ]
	sp-decode "$T/run.sp" | grep -q '"path":"'"$app/sp-sym-victim"'"'
	# Without the archive: the new file is refused, nothing is named after it.
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/noarch.jsonl" "$T/run.sp"
	[[ "$stderr" == *"'$app/sp-sym-victim': build-id mismatch; its frames stay unresolved"* ]]
	grep -q '"status":"build_id_mismatch"' "$T/noarch.jsonl"
	! grep -q '"func":"walk"' "$T/noarch.jsonl"
	# With it: the old image's names, flagged as from the archive (0x8) and DWARF (0x4).
	run --separate-stderr -0 sp-symbolize --no-system-debug --archive "$T/arch" --format json -o "$T/arch.jsonl" "$T/run.sp"
	run jq -r 'select(.type == "symbol" and .func == "walk") | .flags' "$T/arch.jsonl"
	assert_line "0xc"
	! grep -q '"status":"build_id_mismatch"' "$T/arch.jsonl"
}

@test "sp-symbolize: --follow symbolizes a spool while sp-record is still writing it" {
	require_root
	[ -x "$SP_BIN/sp-record" ] || skip "sp-record is not built"
	local bin=$T/inlfp rec
	gcc -O1 -g -fno-omit-frame-pointer -o "$bin" "$FIXTURES/inl.c"
	sp-record -F 999 -o "$T/live.sp" -- "$bin" 200000000 1 2> "$T/rec.err" &
	rec=$!
	for ((i = 0; i < 100; i++)); do
		[ -s "$T/live.sp" ] && break
		sleep 0.1
	done
	run --separate-stderr -0 timeout 120 sp-symbolize --follow --no-system-debug --format json -o "$T/live.jsonl" "$T/live.sp"
	wait "$rec" || skip "sp-record could not record here"
	# It stopped at the recording's end record, with the fixture's names.
	tail -1 "$T/live.jsonl" | grep -q '"type":"end"'
	grep -q '"func":"walk"' "$T/live.jsonl"
}

@test "sp-symbolize: --sysroot and --image-dir find a recording's files elsewhere, build-id checked" {
	local bin=$T/inl a line
	build_c "$bin"
	a=$(fn_addr "$bin" walk)
	line=$(addr2line -e "$bin" "$a" | sed 's/.*://; s/ .*//')
	# Recorded as /opt/app/inl on another machine; here under a copied root.
	mkdir -p "$T/root/opt/app" "$T/images"
	cp "$bin" "$T/root/opt/app/inl"
	cp "$bin" "$T/images/inl"
	stream /opt/app/inl "$(buildid "$bin")" 0x1 "$a" > "$T/in.jsonl"
	run --separate-stderr -0 sp-symbolize --no-system-debug --format json -o "$T/none.jsonl" "$T/in.jsonl"
	run syms "$T/none.jsonl"
	assert_output "$a|0|??|??:0|file_missing|0x0"
	run --separate-stderr -0 sp-symbolize --no-system-debug --sysroot "$T/root" --format json -o "$T/root.jsonl" "$T/in.jsonl"
	run syms "$T/root.jsonl"
	assert_output "$a|0|walk|inl.c:$line|ok|0x4"
	run --separate-stderr -0 sp-symbolize --no-system-debug --image-dir "$T/images" --format json -o "$T/img.jsonl" "$T/in.jsonl"
	run syms "$T/img.jsonl"
	assert_output "$a|0|walk|inl.c:$line|ok|0x4"
	# Another build under that name is refused.
	gcc -O1 -g -o "$T/images/inl" "$FIXTURES/inl.c"
	[ "$(buildid "$T/images/inl")" != "$(buildid "$bin")" ] || skip "the rebuild has the same build-id"
	run --separate-stderr -0 sp-symbolize --no-system-debug --image-dir "$T/images" --format json -o "$T/img2.jsonl" "$T/in.jsonl"
	run syms "$T/img2.jsonl"
	assert_output "$a|0|??|??:0|build_id_mismatch|0x0"
}

# cache_fixture: a stripped fixture with its debug file in $T/dbg, and a stream
# of every 7th address of walk and main in $T/in.jsonl.
cache_fixture() {
	local bin=$T/inl bid a s n addrs=() f
	build_c "$bin"
	bid=$(buildid "$bin")
	mkdir -p "$T/dbg/.build-id/${bid:0:2}"
	objcopy --only-keep-debug "$bin" "$T/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
	strip --strip-all -o "$T/inl.stripped" "$bin"
	for f in walk main; do
		a=$(fn_addr "$bin" "$f")
		s=$(fn_size "$bin" "$f")
		for ((n = 0; n < s; n += 7)); do
			addrs+=("$(printf '0x%x' $((a + n)))")
		done
	done
	stream "$T/inl.stripped" "$bid" 0x1 "${addrs[@]}" > "$T/in.jsonl"
	CACHE_FILE=$T/cache/$bid-*.idx
}

@test "sp-symbolize: a second run reads the DWARF index from the cache, even without the debug file" {
	cache_fixture
	run --separate-stderr -0 sp-symbolize -v --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out1.jsonl" "$T/in.jsonl"
	[[ "$stderr" != *"from the cache"* ]]
	ls $CACHE_FILE
	run --separate-stderr -0 sp-symbolize -v --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out2.jsonl" "$T/in.jsonl"
	[[ "$stderr" == *"'$T/inl.stripped': "*"DWARF index from the cache"* ]]
	cmp "$T/out1.jsonl" "$T/out2.jsonl"
	# The index alone gives the same functions, files and lines.
	rm -r "$T/dbg"
	run --separate-stderr -0 sp-symbolize --cache-dir "$T/cache" --no-system-debug \
		--format json -o "$T/out3.jsonl" "$T/in.jsonl"
	cmp "$T/out1.jsonl" "$T/out3.jsonl"
	run syms "$T/out3.jsonl"
	assert_line --partial "|walk|inl.c:"
	refute_output --partial "|??|"
}

@test "sp-symbolize: --no-cache and an empty SP_CACHE_DIR write no cache, and answer the same" {
	cache_fixture
	run --separate-stderr -0 sp-symbolize --no-cache --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out1.jsonl" "$T/in.jsonl"
	[ ! -e "$T/cache" ]
	SP_CACHE_DIR= run --separate-stderr -0 sp-symbolize --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out2.jsonl" "$T/in.jsonl"
	cmp "$T/out1.jsonl" "$T/out2.jsonl"
	# SP_CACHE_DIR set: its symbols/ directory.
	SP_CACHE_DIR=$T/c run --separate-stderr -0 sp-symbolize --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out3.jsonl" "$T/in.jsonl"
	ls "$T/c/symbols/"*.idx
	cmp "$T/out1.jsonl" "$T/out3.jsonl"
}

@test "sp-symbolize: a corrupt cache file warns once naming it, is rebuilt, and the output does not change" {
	local f
	cache_fixture
	run --separate-stderr -0 sp-symbolize --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out1.jsonl" "$T/in.jsonl"
	f=$(echo $CACHE_FILE)
	# Garbage in the middle, then a file cut short: both refused.
	printf 'garbage!' | dd of="$f" bs=1 seek=300 conv=notrunc status=none
	run --separate-stderr -0 sp-symbolize --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out2.jsonl" "$T/in.jsonl"
	assert_equal "${stderr%%$'\n'*}" "sp-symbolize: warning: cache '$f': checksum mismatch"
	assert_equal "$(grep -c warning <<< "$stderr")" 1
	cmp "$T/out1.jsonl" "$T/out2.jsonl"
	truncate -s 1000 "$f"
	run --separate-stderr -0 sp-symbolize --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out3.jsonl" "$T/in.jsonl"
	[[ "$stderr" == "sp-symbolize: warning: cache '$f': truncated"$'\n'* ]]
	cmp "$T/out1.jsonl" "$T/out3.jsonl"
	# Rebuilt: the next run reads it without a word.
	run --separate-stderr -0 sp-symbolize -v --cache-dir "$T/cache" --no-system-debug \
		--format json -o "$T/out4.jsonl" "$T/in.jsonl"
	[[ "$stderr" != *warning* ]]
	[[ "$stderr" == *"DWARF index from the cache"* ]]
	cmp "$T/out1.jsonl" "$T/out4.jsonl"
	# A FIFO in its place: refused at once, not waited on.
	rm "$f"
	mkfifo "$f"
	run --separate-stderr -0 timeout 20 sp-symbolize --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out5.jsonl" "$T/in.jsonl"
	[[ "$stderr" == "sp-symbolize: warning: cache '$f': not a regular file: a FIFO"$'\n'* ]]
	cmp "$T/out1.jsonl" "$T/out5.jsonl"
}

@test "sp-symbolize: a cache directory that cannot be written is a warning, not a failure" {
	local dir=$T/plain/sub
	cache_fixture
	: > "$T/plain"
	if [ "$(id -u)" != 0 ]; then
		mkdir "$T/ro" && chmod 555 "$T/ro"
		dir=$T/ro
	fi
	run --separate-stderr -0 sp-symbolize --cache-dir "$dir" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out.jsonl" "$T/in.jsonl"
	[[ "$stderr" == "sp-symbolize: warning: cache '$dir': cannot create files there: "* ]]
	run syms "$T/out.jsonl"
	assert_line --partial "|walk|inl.c:"
}

@test "sp-symbolize: a cluster the cache lacks is built from DWARF, and the cache then holds both" {
	local bin=$T/two bid w x
	printf 'int extra_fn(int x)\n{\n\treturn x * 7 + 1;\n}\n' > "$T/extra.c"
	gcc -O2 -g -o "$bin" "$FIXTURES/inl.c" "$T/extra.c"
	bid=$(buildid "$bin")
	mkdir -p "$T/dbg/.build-id/${bid:0:2}"
	objcopy --only-keep-debug "$bin" "$T/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
	strip --strip-all -o "$T/two.stripped" "$bin"
	w=$(fn_addr "$bin" walk)
	x=$(fn_addr "$bin" extra_fn)
	stream "$T/two.stripped" "$bid" 0x1 "$w" > "$T/one.jsonl"
	stream "$T/two.stripped" "$bid" 0x1 "$w" "$x" > "$T/both.jsonl"
	run --separate-stderr -0 sp-symbolize --no-cache --no-system-debug --debug-dir "$T/dbg" \
		--format json -o "$T/ref.jsonl" "$T/both.jsonl"
	run --separate-stderr -0 sp-symbolize --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o /dev/null "$T/one.jsonl"
	run --separate-stderr -0 sp-symbolize -v --cache-dir "$T/cache" --no-system-debug \
		--debug-dir "$T/dbg" --format json -o "$T/out1.jsonl" "$T/both.jsonl"
	[[ "$stderr" == *"DWARF index from the cache"* ]]
	[[ "$stderr" == *"DWARF from '$T/dbg/.build-id/"*"' for units not in the cache"* ]]
	cmp "$T/ref.jsonl" "$T/out1.jsonl"
	rm -r "$T/dbg"
	run --separate-stderr -0 sp-symbolize --cache-dir "$T/cache" --no-system-debug \
		--format json -o "$T/out2.jsonl" "$T/both.jsonl"
	cmp "$T/ref.jsonl" "$T/out2.jsonl"
	run syms "$T/out2.jsonl"
	assert_line --partial "$x|0|extra_fn|extra.c:"
}

@test "sp-symbolize: a device or a FIFO named as a module is refused without being opened" {
	require_cmd strace
	mkfifo "$T/fifo"
	{
		printf '{"type":"header","version":1,"clock":"monotonic"}\n'
		printf '{"type":"module","time":1,"pid":100,"start":"0x1000","end":"0x2000","path":"/dev/ptmx"}\n'
		printf '{"type":"module","time":1,"pid":100,"start":"0x3000","end":"0x4000","path":"%s"}\n' "$T/fifo"
		printf '{"type":"frame","module":1,"rel":"0x10","addr":"0x1010","flags":"0x1"}\n'
		printf '{"type":"frame","module":2,"rel":"0x10","addr":"0x3010","flags":"0x1"}\n'
		printf '{"type":"process_end","time":2,"pid":100}\n'
	} > "$T/dev.jsonl"
	sp-decode --encode -o "$T/dev.sp" "$T/dev.jsonl"
	run --separate-stderr -0 timeout -k 5 60 strace -f -qq -e trace=open,openat -o "$T/trace" \
		sp-symbolize --no-system-debug --no-cache --format json -o "$T/out.jsonl" "$T/dev.sp"
	echo "$stderr"
	# looked at (O_PATH), never opened
	grep -E "\"(/dev/ptmx|$T/fifo)\"" "$T/trace"
	assert_equal "$(grep -E "\"(/dev/ptmx|$T/fifo)\"" "$T/trace" | grep -vc O_PATH)" 0
	assert_equal "$(grep -c "'/dev/ptmx': not a regular file: a character device; its frames stay unresolved" <<< "$stderr")" 1
	assert_equal "$(grep -c "'$T/fifo': not a regular file: a FIFO; its frames stay unresolved" <<< "$stderr")" 1
}

# as_nobody CMD...: the hostile side of a test.
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

@test "sp-symbolize: a symbol cache others can write is not used: no forged names, nothing made through a link" {
	require_cmd setpriv util-linux
	[ "$(id -u)" = 0 ] || skip "needs root: files of user nobody"
	local bid S E R
	cache_fixture
	bid=$(buildid "$T/inl")
	# nobody builds the same code under the same build-id with walk() named
	# evil(), and lets sp-symbolize index it in a directory of its own
	E=$(mktemp -d /tmp/sp-evil.XXXXXX)
	CLEANUP="$E"
	cp "$FIXTURES/inl.c" "$E/"
	chown -R 65534:65534 "$E"
	as_nobody gcc -O2 -g -Dwalk=evil -Wl,--build-id=0x$bid -o "$E/fake" "$E/inl.c"
	stream "$E/fake" "$bid" 0x1 "$(fn_addr "$E/fake" evil)" > "$E/in.jsonl"
	as_nobody sp-symbolize --no-system-debug --cache-dir "$E/cache" --format json \
		-o "$E/out.jsonl" "$E/in.jsonl"
	grep -q '"evil"' "$E/out.jsonl"
	# ... and puts that index in a cache directory all can write
	S=$(mktemp -d /tmp/sp-shared.XXXXXX)
	CLEANUP="$CLEANUP $S"
	chmod 777 "$S"
	as_nobody mkdir "$S/symbols"
	as_nobody cp "$E"/cache/*.idx "$S/symbols/"
	SP_CACHE_DIR=$S run --separate-stderr -0 sp-symbolize --no-system-debug --format json \
		-o "$T/out.jsonl" "$T/in.jsonl"
	echo "$stderr"
	! grep -q evil "$T/out.jsonl"
	[[ "$stderr" == *"sp-symbolize: warning: cache directory '$S/symbols' not used: '$S' is writable by group or others (uid 0, mode 0777)"* ]]
	run syms "$T/out.jsonl"
	assert_line --partial "|??|"
	# Sticky, as /tmp, with a link of nobody's to a directory of root's:
	# not followed, nothing made there; the symbols come from the debug file.
	rm -rf "$S"
	S=$(mktemp -d /tmp/sp-shared.XXXXXX)
	CLEANUP="$CLEANUP $S"
	chmod 1777 "$S"
	R=$T/rootonly
	mkdir -m 700 "$R"
	as_nobody ln -s "$R" "$S/symbols"
	SP_CACHE_DIR=$S run --separate-stderr -0 sp-symbolize --no-system-debug --debug-dir "$T/dbg" \
		--format json -o "$T/out2.jsonl" "$T/in.jsonl"
	echo "$stderr"
	assert_equal "$(ls -A "$R")" ""
	[[ "$stderr" == *"cache directory '$S/symbols' not used: '$S/symbols' is a symbolic link owned by another user (uid 65534"* ]]
	run syms "$T/out2.jsonl"
	assert_line --partial "|walk|inl.c:"
}

@test "sp-symbolize: a 100000-frame stack's sample shows its 4096 innermost frames in JSON lines" {
	awk 'BEGIN {
		print "{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1000,\"clock\":\"monotonic\"}"
		print "{\"type\":\"frame\",\"module\":0,\"rel\":\"0x10\",\"addr\":\"0x10\",\"pid\":7}"
		for (i = 1; i <= 100000; i++)
			printf "{\"type\":\"stack\",\"parent\":%d,\"frame\":1}\n", i - 1
		print "{\"type\":\"sample\",\"time\":2000,\"pid\":7,\"tid\":7,\"stack\":100000}"
	}' | sp-decode --encode -o "$BATS_TEST_TMPDIR/deep.sp" 2>/dev/null
	run --separate-stderr -0 sp-symbolize --format=json -o "$BATS_TEST_TMPDIR/out.jsonl" \
		"$BATS_TEST_TMPDIR/deep.sp"
	[[ "$stderr" == *"warning: $BATS_TEST_TMPDIR/deep.sp@"*": stack 4097 is deeper than 4096 frames"* ]]
	grep '"type":"sample"' "$BATS_TEST_TMPDIR/out.jsonl" > "$BATS_TEST_TMPDIR/sample.jsonl"
	run -0 jq -c '[(.frames | length), .truncated]' "$BATS_TEST_TMPDIR/sample.jsonl"
	assert_output '[4096,95904]'
}
