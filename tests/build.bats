#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The build: what reads records (sp-decode, sp-symbolize, sp-correlate,
# sp-tree, sp-flame, their unit tests and fuzz targets) builds and passes on
# a machine without clang, bpftool or the kernel's BTF; only sp-record needs
# them (docs/hacking.md).

load helper

top=$BATS_TEST_DIRNAME/..

@test "build: the filters, their unit tests and fuzz targets build and pass without clang, bpftool or BTF" {
	local out=$BATS_TEST_TMPDIR/out shims=$BATS_TEST_TMPDIR/shims t n=0 f
	# Any use of the BPF toolchain leaves a trace and fails.
	mkdir -p "$shims"
	for t in clang clang-14 bpftool llvm-strip; do
		printf '#!/bin/sh\necho "%s $*" >> %s/used\nexit 127\n' "$t" "$shims" > "$shims/$t"
		chmod +x "$shims/$t"
	done
	run -0 env PATH="$shims:$PATH" make -C "$top" --no-print-directory -s -j2 \
		OUT="$out" VMLINUX_BTF=/nonexistent/vmlinux filters
	[ ! -e "$shims/used" ] || fail "used: $(cat "$shims/used")"
	[ ! -e "$out/vmlinux.h" ]
	[ ! -e "$out/lib/libsp-record.a" ]
	for t in sp-decode sp-symbolize sp-correlate sp-tree sp-flame; do
		[ -x "$out/bin/$t" ] || fail "$t was not built"
	done
	[ ! -e "$out/bin/sp-record" ]
	# The unit tests built that way pass.
	for t in "$out"/unit/test-* "$out"/asan/test-*; do
		[[ $t == *.d ]] && continue
		n=$((n + 1))
		run "$t"
		[ "$status" = 0 ] || fail "$t: $(grep '^not ok' <<< "$output" | head -5)"
		[[ $output != *"not ok"* ]]
	done
	[ "$n" -ge 40 ]
	# So do the fuzz targets, each over its corpus once.
	for f in "$out"/fuzz-standalone/fuzz-*; do
		[[ $f == *.d ]] && continue
		run --separate-stderr "$f" "$top/tests/fuzz/corpus/${f##*/}"
		[ "$status" = 0 ] || fail "${f##*/}: $(tail -5 <<< "$stderr")"
		[[ $stderr == *"Done "*" runs"* ]]
		[[ $stderr != *"runtime error"* ]]
	done
	# A filter built this way reads a spool.
	run -0 "$out/bin/sp-decode" --stats "$top/tests/fixtures/sp-decode/small.jsonl"
	[[ $output == *"samples"* ]]
}
