#!/bin/bash
# SPDX-License-Identifier: MIT
# Make the deep seeds of the fuzz corpora: nestings and stacks deeper than
# any recursion of the code may go, and the inputs that once cost time or
# memory in proportion to their depth (docs/spool.md, "Limits"). Run from
# the top of the tree after 'make all': tests/fuzz/deep-seeds.sh
set -euo pipefail

bin=${1:-build/bin}
corpus=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# $1 copies of the bytes printf makes of $2, appended to $3.
rep() {
	local n=$1
	printf "$2" > "$tmp/one"
	while [ "$n" -gt 0 ]; do
		[ $((n & 1)) -eq 1 ] && cat "$tmp/one" >> "$3"
		cat "$tmp/one" "$tmp/one" > "$tmp/two" && mv "$tmp/two" "$tmp/one"
		n=$((n >> 1))
	done
}

# Span marks of method string 1 on thread 7 of process 7, 1 ns apart:
# kind 10 (start) or 11 (stop), time +1, pid 7, tid 7, runtime 0, class 0.
starts() { rep "$1" '\012\006\002\007\007\000\000\001' "$2"; }
stops() { rep "$1" "\\013\\006\\002\\007\\007\\000\\000\\00$3" "$2"; }

head_json() {
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1,"clock":"monotonic"}' \
		'{"type":"string","value":"f"}' \
		'{"type":"process","time":1,"pid":7,"ppid":1,"comm":"deep"}' \
		'{"type":"frame","module":0,"rel":"0x10","addr":"0x10","pid":7}' \
		'{"type":"symbol","frame":1,"index":0,"func":"work"}' \
		'{"type":"stack","parent":0,"frame":1}'
}

# 10000 nested spans, a sample in the innermost, their stops, the end.
head_json | "$bin/sp-decode" --encode -o "$tmp/deep-spans.sp"
starts 10000 "$tmp/deep-spans.sp"
printf '\010\006\002\007\007\000\001\001' >> "$tmp/deep-spans.sp"
stops 10000 "$tmp/deep-spans.sp" 1
printf '\022\001\002' >> "$tmp/deep-spans.sp"

# 10000 nested spans, 10000 stops that match none (method 2), 2000 lost
# records over them (kind 17: time +1, start 0, what 0, count 1), the end.
head_json | "$bin/sp-decode" --encode -o "$tmp/deep-unmatched.sp"
starts 10000 "$tmp/deep-unmatched.sp"
stops 10000 "$tmp/deep-unmatched.sp" 2
rep 2000 '\021\004\002\000\000\001' "$tmp/deep-unmatched.sp"
printf '\022\001\002' >> "$tmp/deep-unmatched.sp"

# The first, correlated: 10000 nested span records.
"$bin/sp-correlate" -o "$tmp/deep-spans-correlated.sp" "$tmp/deep-spans.sp"

# A 30000-frame stack (main, then rec), samples on every 1000th level
# from 2000 and 5 on the deepest; as a spool, and 20000 deep as JSON lines.
deep_stack() {
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1,"clock":"monotonic"}' \
		'{"type":"frame","module":0,"rel":"0x10","addr":"0x10","pid":7}' \
		'{"type":"symbol","frame":1,"index":0,"func":"main"}' \
		'{"type":"frame","module":0,"rel":"0x20","addr":"0x20","pid":7}' \
		'{"type":"symbol","frame":2,"index":0,"func":"rec"}'
	awk -v n="$1" 'BEGIN {
		for (i = 1; i <= n; i++)
			printf "{\"type\":\"stack\",\"parent\":%d,\"frame\":%d}\n", i - 1, i == 1 ? 1 : 2
		for (i = 2000; i <= n; i += 1000)
			printf "{\"type\":\"sample\",\"time\":%d,\"pid\":7,\"tid\":7,\"stack\":%d}\n", 10 + i, i
		for (i = 0; i < 5; i++)
			printf "{\"type\":\"sample\",\"time\":%d,\"pid\":7,\"tid\":7,\"stack\":%d}\n", 10 + n, n
	}'
}
deep_stack 30000 | "$bin/sp-decode" --encode -o "$tmp/deep-stack.sp" 2>/dev/null
deep_stack 20000 > "$tmp/deep-stack.jsonl"

# A frame with 1000 inline levels, sampled ten times.
{
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1,"clock":"monotonic"}' \
		'{"type":"string","value":"inl"}' \
		'{"type":"frame","module":0,"rel":"0x10","addr":"0x10","pid":7}'
	awk 'BEGIN {
		for (i = 0; i < 1000; i++)
			printf "{\"type\":\"symbol\",\"frame\":1,\"index\":%d,\"func\":1,\"line\":%d}\n", i, i + 1
		print "{\"type\":\"stack\",\"parent\":0,\"frame\":1}"
		for (i = 0; i < 10; i++)
			printf "{\"type\":\"sample\",\"time\":%d,\"pid\":7,\"tid\":7,\"stack\":1}\n", 10 + i
	}'
} | "$bin/sp-decode" --encode -o "$tmp/deep-inline.sp" 2>/dev/null

# 100 modules with build-ids, all defined before the first sample.
awk 'BEGIN {
	print "{\"type\":\"header\",\"version\":1,\"start_mono_ns\":1000,\"clock\":\"monotonic\"}"
	for (i = 1; i <= 100; i++)
		printf "{\"type\":\"module\",\"time\":1000,\"pid\":7,\"start\":\"0x%x\",\"end\":\"0x%x\",\"path\":\"/lib/m%d.so\",\"build_id\":\"%040x\"}\n",
			i * 65536, i * 65536 + 4096, i, 1000003 * i
	for (i = 1; i <= 100; i++) {
		printf "{\"type\":\"frame\",\"module\":%d,\"rel\":\"0x10\",\"addr\":\"0x%x\"}\n", i, i * 65536 + 16
		printf "{\"type\":\"stack\",\"parent\":0,\"frame\":%d}\n", i
	}
	for (i = 1; i <= 100; i++)
		printf "{\"type\":\"sample\",\"time\":%d,\"pid\":7,\"tid\":7,\"stack\":%d}\n", 2000 + i, i
}' | "$bin/sp-decode" --encode -o "$tmp/modules-100.sp"

# JSON nested 100000 levels inside records (the parser stops at 2048).
awk 'BEGIN {
	print "{\"type\":\"header\",\"version\":1}"
	printf "{\"type\":\"sample\",\"time\":1,\"x\":"
	for (i = 0; i < 100000; i++) printf "["
	for (i = 0; i < 100000; i++) printf "]"
	print "}"
	printf "{\"type\":\"sample\",\"time\":2,\"pid\":1,\"y\":"
	for (i = 0; i < 100000; i++) printf "{\"a\":"
	printf "1"
	for (i = 0; i < 100000; i++) printf "}"
	print "}"
	print "{\"type\":\"sample\",\"time\":3,\"pid\":1}"
}' > "$tmp/deep-nesting.jsonl"

# Folded text: a line of 100000 frames.
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "%sf%d", i ? ";" : "", i % 7; print " 3"; print "a;b 2" }' \
	> "$tmp/deep.folded"

put() {
	local target=$1
	shift
	for f in "$@"; do
		cp "$tmp/$f" "$corpus/$target/$f"
	done
}
put fuzz-correlate deep-spans.sp deep-unmatched.sp deep-spans-correlated.sp deep-nesting.jsonl
put fuzz-flame deep-spans.sp deep-spans-correlated.sp deep-stack.sp deep-stack.jsonl \
	deep-inline.sp modules-100.sp deep.folded
put fuzz-spool deep-spans.sp deep-stack.sp deep-inline.sp modules-100.sp
put fuzz-json deep-stack.jsonl deep-nesting.jsonl
