#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Fuzz targets run once over their committed corpora: the record-stream
# decoders (tests/fuzz/fuzz-spool.c, fuzz-json.c: every seed still decodes,
# re-encodes and round-trips through JSON lines), the correlator and the
# tree (fuzz-correlate.c), the flame graph aggregation and every renderer
# (fuzz-flame.c), the ELF notes sp-record reads to attach span
# probes (fuzz-usdt.c), the hooks' span rings it reads (fuzz-span_rings.c) and
# the JIT perf maps it reads (fuzz-perfmap.c), the Python code objects,
# strings and line tables it reads out of a process (fuzz-interp.c),
# perf.data files (fuzz-perfdata.c), the cgroup paths it names
# containers from (fuzz-cgroup.c),
# all without a sanitizer report. The deep seeds (nestings and stacks deeper
# than any recursion may go, tests/fuzz/deep-seeds.sh) run with them. Longer
# runs: make fuzz-run FUZZ_SECONDS=600.

load helper

top=$BATS_TEST_DIRNAME/..

# Build a fuzz target (with clang's libFuzzer, ASan and UBSan) unless the
# toolchain lacks the fuzzer runtime.
need_fuzzer() {
	require_cmd clang "clang builds the fuzz targets"
	echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
		clang -fsanitize=fuzzer -x c - -o "$BATS_TEST_TMPDIR/probe" 2>/dev/null ||
		skip "clang has no libFuzzer runtime (Debian: libclang-rt-14-dev)"
	make -C "$top" --no-print-directory -s "build/fuzz/$1" >&2 ||
		fail "make build/fuzz/$1 failed"
}

run_corpus() {
	local corpus=$top/tests/fuzz/corpus/$1
	[ "$(ls "$corpus" | wc -l)" -ge 10 ]
	# -runs=0: each input once; stderr carries the decoders' own messages.
	run --separate-stderr "$top/build/fuzz/$1" -runs=0 "$corpus"
	[ "$status" = 0 ] || fail "$(printf '%s\n' "$stderr" | grep -v 'warning:\|error:' | tail -30)"
	[[ "$stderr" == *"Done "*" runs"* ]]
	[[ "$stderr" != *"runtime error"* ]]
}

@test "fuzz-spool: its corpus runs clean" {
	need_fuzzer fuzz-spool
	run_corpus fuzz-spool
}

@test "fuzz-json: its corpus runs clean" {
	need_fuzzer fuzz-json
	run_corpus fuzz-json
}

@test "fuzz-correlate: its corpus runs clean (the correlator and the tree)" {
	need_fuzzer fuzz-correlate
	run_corpus fuzz-correlate
}

@test "fuzz-flame: its corpus runs clean (folded stacks, SVG, diff, speedscope, pprof, Chrome)" {
	need_fuzzer fuzz-flame
	run_corpus fuzz-flame
}

@test "fuzz-usdt: its corpus runs clean (the ELF notes sp-record reads for spans)" {
	need_fuzzer fuzz-usdt
	run_corpus fuzz-usdt
}

@test "fuzz-span_rings: its corpus runs clean" {
	need_fuzzer fuzz-span_rings
	run_corpus fuzz-span_rings
}

@test "fuzz-perfmap: its corpus runs clean (the JIT perf maps sp-record reads as root)" {
	need_fuzzer fuzz-perfmap
	run_corpus fuzz-perfmap
}

@test "fuzz-perfdata: its corpus runs clean (perf.data files sp-decode --from=perf reads)" {
	need_fuzzer fuzz-perfdata
	run_corpus fuzz-perfdata
}

@test "fuzz-cgroup: its corpus runs clean (the cgroup paths containers are named from)" {
	need_fuzzer fuzz-cgroup
	run_corpus fuzz-cgroup
}

@test "fuzz-interp: its corpus runs clean (the Python code objects sp-record reads)" {
	need_fuzzer fuzz-interp
	run_corpus fuzz-interp
}
