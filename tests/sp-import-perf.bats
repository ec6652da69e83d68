#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-decode --from=perf: perf.data files that `perf record` makes here (file
# and pipe mode, frame pointers and DWARF, several events, tracepoints, a
# program of several processes) become streams whose flame graph has the
# stacks and counts that `perf script` shows for the same file, collapsed by
# the small stackcollapse below; kernel frames named as perf script names
# them when the file's kernel is this one. Then what perf.data is not:
# unknown record types and features (counted, never fatal), malformed files
# (one message with file and offset, exit status 2), and the importer's
# fuzz target over files made here.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
	W=$SP_EXAMPLES/workload
	require_cmd perf "Debian: linux-perf"
	require_cmd python3
}

# perf record ARGS... -- CMD: skip when perf cannot record here.
perf_rec() {
	perf record -q "$@" >"$T/perf.out" 2>"$T/perf.err" ||
		skip "perf record cannot record here: $(tail -1 "$T/perf.err")"
}

# stackcollapse-perf, reimplemented: perf script's stacks (-F
# event,ip,sym,dso) as folded lines, root first, one count per sample.
# addr: each frame named as sp-flame names one without a symbol
# (module+0xREL: perf shows file-relative addresses too; 0xADDR outside
# any module; the kernel's part of a stack is one module, BPF programs'
# code included);
# sym: by function name. dwarf: perf's DWARF unwinder shows each return
# address minus one (the call instruction); that is undone. The last line
# counts the samples perf shows without a single frame: perf 6.1 drops a
# whole callchain when a frame-pointer walk of code without frame pointers
# read a value in the range of its context markers (say -304); sp-decode
# keeps the frames before it. Those samples are the only ones allowed to
# differ (same_stacks).
collapse() {
	cat > "$T/collapse.py" <<'EOF'
import collections, re, sys
mode, event, dwarf = sys.argv[1], sys.argv[2], sys.argv[3:] == ['dwarf']
counts = collections.Counter()
ev, frames, user, header, bare = None, [], 0, False, 0
def flush():
    global frames, user, header, bare
    if frames and (not event or ev == event):
        counts[';'.join(reversed(frames))] += 1
    elif header and (not event or ev == event):
        bare += 1
    frames, user, header = [], 0, False
for line in sys.stdin:
    line = line.rstrip('\n')
    if not line.strip():
        flush()
        continue
    if re.match(r'\s*\S+:\s*$', line):
        flush()
        ev = line.split()[0].rstrip(':')
        header = True
        continue
    m = re.match(r'\s*([0-9a-f]+) (.*) \(([^()]*)\)$', line)
    ip, sym, dso = int(m.group(1), 16), m.group(2), m.group(3)
    if not user and ip >= 0xffff800000000000:
        dso = '[kernel.kallsyms]'
    base = dso.rsplit('/', 1)[-1]
    if dso != '[kernel.kallsyms]':
        if dwarf and user:
            ip += 1
        user += 1
    if mode == 'sym':
        unnamed = sym == '[unknown]'
        name = '[%s]' % base if unnamed else sym
    elif dso == '[unknown]':
        name = '0x%x' % ip
    else:
        name = '%s+0x%x' % (base, ip)
    frames.append(name)
flush()
for s, c in sorted(counts.items()):
    print(s, c)
print('#bare', bare)
EOF
	local data=$1 mode=$2 event=$3
	shift 3
	perf script --no-inline -i "$data" -F event,ip,sym,dso 2>/dev/null |
		python3 "$T/collapse.py" "$mode" "$event" "$@" | sort
}

# same_stacks PERF.DATA SPOOL EVENT [dwarf]: the spool's flame graph is
# perf script's, stack for stack and count for count, but for the samples
# perf shows without a frame (see collapse), which may be extra stacks here.
same_stacks() {
	local data=$1 spool=$2 event=$3
	shift 3
	collapse "$data" addr "$event" "$@" > "$T/want"
	sp-flame --folded -q "$spool" | sort > "$T/got"
	grep -q -v '^#bare' "$T/want" || fail "perf script shows no stacks for '$event'"
	python3 - "$T/want" "$T/got" "$@" <<'EOF' >&2 || fail "the stacks of '$event' differ from perf script's"
import sys
def read(path):
    d = {}
    for line in open(path):
        s, c = line.rstrip('\n').rsplit(' ', 1)
        d[s] = int(c)
    return d
want, got = read(sys.argv[1]), read(sys.argv[2])
bare = want.pop('#bare')
# With DWARF, perf script may show a sample's kernel frames alone, or with
# just the user leaf, where its user part did not unwind further for perf;
# sp-record's unwinder can reach further. Such a sample is the same sample
# when its stack ends with perf's whole stack: it is matched, and said.
def user_frames(s):
    frames = s.split(';')
    k = next((i for i, f in enumerate(frames) if f.startswith('[kernel.kallsyms]')), len(frames))
    return k
if sys.argv[3:] == ['dwarf']:
    for s, c in list(want.items()):
        if got.get(s) == c or user_frames(s) > 1:
            continue
        for t, n in list(got.items()):
            if t not in want and t.endswith(';' + s) and n == c - got.get(s, 0):
                print('matched: perf unwound only the kernel part and leaf of: %s' % t)
                got[s] = c
                del got[t]
                break
bad = [(s, c, got.get(s)) for s, c in want.items() if got.get(s) != c]
extra = sum(c for s, c in got.items() if s not in want)
for s, c, g in bad:
    print('perf: %d, sp-flame: %s: %s' % (c, g, s))
print('%d stacks, %d the same; %d samples on stacks perf does not show, '
      'perf shows %d samples without a frame' % (len(want), len(want) - len(bad), extra, bare))
sys.exit(1 if bad or extra > bare else 0)
EOF
}

@test "software events: each one's stacks and counts are perf script's" {
	perf_rec -e cpu-clock -e page-faults -g -o "$T/sw.data" -- "$W" 0.3
	run -0 sp-decode --from=perf --stats "$T/sw.data"
	[[ "$output" == *"file mode"*"2 events"* ]]
	[[ "$output" == *"of event 'cpu-clock'"* ]]
	for ev in cpu-clock page-faults; do
		sp-decode --from=perf --perf-event=$ev -e -o "$T/$ev.sp" "$T/sw.data"
		same_stacks "$T/sw.data" "$T/$ev.sp" $ev
		run -0 sp-decode "$T/$ev.sp"
		[[ "${lines[0]}" == *'"event":"'$ev'"'* ]]
		[[ "${lines[0]}" == *'"call_graph":"fp"'* ]]
		[[ "${lines[0]}" == *'"features":"perf.data=file events=cpu-clock,page-faults"'* ]]
	done
}

@test "symbolized, the program's own stacks name perf's functions with perf's counts" {
	perf_rec -e cpu-clock -g -o "$T/fp.data" -- "$W" 0.3
	sp-decode --from=perf -e -o "$T/fp.sp" "$T/fp.data"
	# perf and sp-symbolize may pick different aliases of one address
	# (clock_gettime@@GLIBC_2.17, __clock_gettime): compared without them
	# (a version ends at the frame's ';', or at the count after a leaf).
	# sp-symbolize leaves a PLT stub unnamed ([workload]) where perf says
	# clock_gettime@plt: both become <plt>, and equal stacks are summed.
	norm() {
		grep 'main;run_\|backend_thread' |
			sed -E 's/@@[^; ]*//g; s/(^|;)_+/\1/g; s/;[^; ]*@plt( |;)/;<plt>\1/g; s/;\[workload\]( |;)/;<plt>\1/g' |
			awk '{ n = $NF; sub(/ [0-9]+$/, ""); c[$0] += n } END { for (k in c) print k, c[k] }' | sort
	}
	collapse "$T/fp.data" sym cpu-clock | grep -v '^#bare' | norm > "$T/want"
	sp-symbolize "$T/fp.sp" | sp-flame --folded -q --no-inline --no-addresses | norm > "$T/got"
	grep -q 'main;run_child;walk_tree;.*child_checksum' "$T/want"
	diff -u "$T/want" "$T/got" >&2
}

@test "a DWARF recording: user stacks unwound by sp-record's unwinder are perf's" {
	perf_rec -e cpu-clock --call-graph=dwarf -o "$T/dw.data" -- "$W" 0.3
	run -0 sp-decode --from=perf --stats "$T/dw.data"
	[[ "$output" == *"DWARF stacks unwound"* ]]
	sp-decode --from=perf -e -o "$T/dw.sp" "$T/dw.data"
	same_stacks "$T/dw.data" "$T/dw.sp" cpu-clock dwarf
	run -0 sp-decode "$T/dw.sp"
	[[ "${lines[0]}" == *'"call_graph":"dwarf"'* ]]
	# The unwinder went through the fixture's calls, not just its leaves.
	sp-decode --no-frames "$T/dw.sp" | grep -c '"unwind":"complete"' | { read -r n; [ "$n" -gt 10 ]; }
	# Without unwinding, only the kernel part stays.
	sp-decode --from=perf --no-unwind "$T/dw.data" | grep '"type":"sample"' |
		grep -c '"mode":"user"' | { read -r n; [ "$n" = 0 ]; }
}

@test "pipe mode: a file from perf record -o -, and a live pipe on standard input" {
	perf_rec -e cpu-clock -g -o - -- "$W" 0.3
	mv "$T/perf.out" "$T/pipe.data"
	run -0 sp-decode --from=perf --stats "$T/pipe.data"
	[[ "$output" == *"pipe mode"* ]]
	run -0 sp-decode --from=perf --stats-json "$T/pipe.data"
	[ "$(jq -r .samples <<<"$output")" -gt 0 ]
	sp-decode --from=perf -e -o "$T/pipe.sp" "$T/pipe.data"
	same_stacks "$T/pipe.data" "$T/pipe.sp" cpu-clock
	perf record -q -e cpu-clock -g -o - -- "$W" 0.2 2>/dev/null | tee "$T/live.data" |
		sp-decode --from=perf -e -o "$T/live.sp" -
	same_stacks "$T/live.data" "$T/live.sp" cpu-clock
}

@test "a program of several processes: its processes, exits and every stack" {
	perf_rec -e cpu-clock -g -o "$T/mp.data" -- sh -c \
		"$W 0.2 & $W 0.2 & ls -R /usr/share >/dev/null; sort /etc/services >/dev/null; wait"
	sp-decode --from=perf -e -o "$T/mp.sp" "$T/mp.data"
	same_stacks "$T/mp.data" "$T/mp.sp" cpu-clock
	run -0 sp-decode --no-frames "$T/mp.sp"
	# sh, two workloads and their children, ls, sort: each a process that ends.
	[ "$(printf '%s\n' "${lines[@]}" | grep -c '"type":"process_end"')" -ge 6 ]
	for c in sh workload wl-child ls sort; do
		printf '%s\n' "${lines[@]}" | grep -q '"comm":"'$c'"' || fail "no process '$c'"
	done
	# Samples of every process of the program, by its own pid.
	[ "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.type=="sample") | .pid' | sort -u | wc -l)" -ge 3 ]
}

teardown() {
	[ -z "${MOUNTED_TRACEFS:-}" ] || umount /sys/kernel/tracing
}

@test "a tracepoint's samples, chosen by name" {
	if [ ! -d /sys/kernel/tracing/events/sched ]; then
		require_root
		mount -t tracefs nodev /sys/kernel/tracing || skip "cannot mount tracefs"
		MOUNTED_TRACEFS=1
	fi
	perf_rec -e sched:sched_process_exec -e sched:sched_process_fork -g -o "$T/tp.data" -- \
		sh -c 'for i in 1 2 3 4 5; do /bin/true; done'
	sp-decode --from=perf --perf-event=sched:sched_process_exec -e -o "$T/tp.sp" "$T/tp.data"
	same_stacks "$T/tp.data" "$T/tp.sp" sched:sched_process_exec
	run -0 sp-decode --from=perf --stats --perf-event=sched:sched_process_fork "$T/tp.data"
	# sh forks /bin/true five times, and sh and each /bin/true exec.
	[[ "$output" == *"5 of event 'sched:sched_process_fork'"* ]]
	[[ "$output" == *"other events left out: 6"* ]]
	run -2 sp-decode --from=perf --perf-event=cycles "$T/tp.data"
	[[ "$output" == *"no event 'cycles' in it (its events: 'sched:sched_process_exec', 'sched:sched_process_fork')"* ]]
}

@test "perf record --off-cpu: off-CPU samples weighing their time" {
	perf record -q --off-cpu -o "$T/off.data" -- sleep 0.1 2>"$T/err" || true
	grep -q "off-cpu.*ignored\|unknown option" "$T/err" &&
		skip "this perf cannot record --off-cpu (built without BPF skeletons)"
	run -0 sp-decode --from=perf --stats "$T/off.data"
	[[ "$output" == *" off-CPU"* ]]
}

# perf's off-CPU event as a perf with BPF skeletons writes it (pipe mode):
# an event named offcpu-time whose samples' period is the time off the CPU.
@test "offcpu-time samples become off-CPU samples weighing their period" {
	python3 - "$T/off.data" <<'EOF'
import struct, sys
ST = 1 | 2 | 4 | 32 | 256                # IP TID TIME CALLCHAIN PERIOD
attr = struct.pack('<IIQQQQQ', 1, 128, 10, 1, ST, 0, 1 << 18).ljust(128, b'\0')
def rec(t, body):
    return struct.pack('<IHH', t, 0, 8 + len(body)) + body
def hstr(s):
    b = s.encode() + b'\0'
    b = b.ljust((len(b) + 7) // 8 * 8, b'\0')
    return struct.pack('<I', len(b)) + b
out = struct.pack('<8sQ', b'PERFILE2', 16)
out += rec(64, attr + struct.pack('<Q', 7))
desc = struct.pack('<II', 1, 128) + attr + struct.pack('<I', 1) + hstr('offcpu-time') + struct.pack('<Q', 7)
out += rec(80, struct.pack('<Q', 12) + desc)
out += rec(3, struct.pack('<II', 42, 42) + b'sleeper\0' + struct.pack('<QQ', 42 | 42 << 32, 1000))
for t, ns, chain in ((2000, 5000000, (0x4010, 0x4020)), (3000, 7000000, (0x4010, 0x4020)),
                     (4000, 1000000, (0x4030,))):
    cc = (2 ** 64 - 512,) + chain
    body = struct.pack('<QQQQ', chain[0], 42 | 42 << 32, t, ns)
    body += struct.pack('<Q', len(cc)) + struct.pack('<%dQ' % len(cc), *cc)
    out += rec(9, body)
open(sys.argv[1], 'wb').write(out)
EOF
	run -0 sp-decode --from=perf --stats "$T/off.data"
	[[ "$output" == *"samples imported: 0 of event '(none)', 3 off-CPU"* ]]
	sp-decode --from=perf -e -o "$T/off.sp" "$T/off.data"
	run -0 sp-flame --folded --off-cpu --weight=time -q "$T/off.sp"
	[ "$output" = "$(printf '0x4020;0x4010 12000000\n0x4030 1000000')" ]
	run -0 sp-decode --no-frames "$T/off.sp"
	[ "$(grep -c '"kind":"offcpu"' <<<"$output")" = 3 ]
}

# A pipe-mode file with a record of type 120 and a feature 200 after its
# header: neither is known; both are skipped and counted.
# kernel_names SPOOL: "ADDR NAME" per kernel frame of the symbolized spool
# (NAME "-" when it got none).
kernel_names() {
	sp-symbolize "$1" 2>/dev/null | sp-decode | jq -r '
		if .type == "frame" and .mode == "kernel" then "F \(.id) \(.addr)"
		elif .type == "symbol" and .index == 0 then "S \(.frame) \(.func // "-")"
		else empty end' |
		awk '$1 == "F" { a[$2] = $3 } $1 == "S" && ($2 in a) { print a[$2], $3 }' |
		sed -E 's/^0x0*//' | sort -u
}

@test "kernel frames of a file recorded on this kernel are named as perf script names them" {
	require_root
	perf_rec -g -e cpu-clock -o "$T/k.data" -- dd if=/dev/zero of=/dev/null bs=1 count=300000
	run -0 --separate-stderr sp-decode --from=perf --stats "$T/k.data"
	[ -z "$stderr" ]
	[[ "$output" == *"kernel symbols from this machine: "[1-9]*", kernel frames left unnamed: 0"* ]]
	sp-decode --from=perf -e -o "$T/k.sp" "$T/k.data"
	# every ksym comes before the first sample with a frame in it
	sp-decode "$T/k.sp" | python3 -c '
import json, sys
ksyms, bad = [], 0
for line in sys.stdin:
    r = json.loads(line)
    if r["type"] == "ksym":
        ksyms.append((int(r["addr"], 16), int(r["addr"], 16) + r.get("size", 1)))
    elif r["type"] == "sample":
        for f in r["frames"]:
            a = int(f["addr"], 16)
            if f["mode"] == "kernel" and not any(lo <= a < hi for lo, hi in ksyms):
                bad += 1
sys.exit(bad > 0)' || fail "a kernel frame came before its ksym"
	# perf script's names of the same kernel addresses
	perf script -i "$T/k.data" -F ip,sym,dso 2>/dev/null |
		awk '$NF == "([kernel.kallsyms])" && $2 != "[unknown]" { print $1, $2 }' |
		sed -E 's/^0*//' | sort -u > "$T/want"
	kernel_names "$T/k.sp" > "$T/got"
	[ "$(wc -l < "$T/want")" -ge 10 ] || fail "perf script names few kernel frames"
	grep -q ' entry_SYSCALL_64' "$T/want"
	# A frame that is not the leaf is looked up at its address minus one (a
	# return address belongs to its call): one at a function's first byte
	# is the only kind allowed to stay unnamed.
	sp-decode "$T/k.sp" | jq -r 'select(.type == "ksym") | .addr' |
		sed -E 's/^0x0*//' | sort -u > "$T/starts"
	awk '$2 == "-" { print $1 }' "$T/got" | sort -u | comm -23 - "$T/starts" > "$T/odd"
	[ ! -s "$T/odd" ] || fail "kernel frames without a name: $(cat "$T/odd")"
	grep -v ' -$' "$T/got" | comm -13 "$T/want" - > "$T/extra"
	[ ! -s "$T/extra" ] || fail "names perf script does not give: $(cat "$T/extra")"
	comm -23 "$T/want" <(grep -v ' -$' "$T/got") | cut -d' ' -f1 | comm -23 - "$T/starts" > "$T/missing"
	[ ! -s "$T/missing" ] || fail "kernel frames perf names, unnamed here: $(cat "$T/missing")"
}

@test "a file from another kernel: one message, counted, and its kernel frames unnamed" {
	require_root
	perf_rec -g -e cpu-clock -o "$T/k.data" -- dd if=/dev/zero of=/dev/null bs=1 count=100000
	bid=$(perf buildid-list -i "$T/k.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1 }')
	[ -n "$bid" ] || skip "perf wrote no build-id for the kernel"
	python3 - "$T/k.data" "$T/other.data" "$bid" <<'EOF'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
bid = bytes.fromhex(sys.argv[3])
i = d.find(bid)
assert i >= 0 and d.find(bid, i + 1) < 0
d[i] ^= 0xff
open(sys.argv[2], 'wb').write(d)
EOF
	run -0 --separate-stderr sp-decode --from=perf -e -o "$T/other.sp" "$T/other.data"
	[ "$(grep -c 'kernel frames stay unnamed' <<<"$stderr")" = 1 ]
	[[ "$stderr" == *"other.data: kernel frames stay unnamed: recorded on another kernel"* ]]
	run -0 --separate-stderr sp-decode --from=perf --stats "$T/other.data"
	[[ "$output" == *"kernel symbols from this machine: 0, kernel frames left unnamed: "[1-9]*": recorded on another kernel"* ]]
	[ "$(sp-decode "$T/other.sp" | jq -s 'map(select(.type == "ksym")) | length')" = 0 ]
	kernel_names "$T/other.sp" > "$T/got"
	[ -s "$T/got" ]
	[ -z "$(grep -v ' -$' "$T/got")" ]
}

@test "a pipe-mode file has no build-id: its kernel release decides" {
	require_root
	perf_rec -g -e cpu-clock -o - -- dd if=/dev/zero of=/dev/null bs=1 count=100000
	python3 - "$T/perf.out" "$T/other.data" <<'EOF'
import os, sys
d = bytearray(open(sys.argv[1], 'rb').read())
rel = os.uname().release.encode()
i = d.find(rel)
assert i >= 0 and d.find(rel, i + 1) < 0
d[i] = ord('X')
open(sys.argv[2], 'wb').write(d)
EOF
	run -0 --separate-stderr sp-decode --from=perf --stats "$T/perf.out"
	[ -z "$stderr" ]
	[[ "$output" == *"kernel symbols from this machine: "[1-9]*", kernel frames left unnamed: 0"* ]]
	run -0 --separate-stderr sp-decode --from=perf --stats "$T/other.data"
	[ "$(grep -c 'kernel frames stay unnamed' <<<"$stderr")" = 1 ]
	[[ "$stderr" == *"recorded on another kernel (no build-id; release 'X"* ]]
	[[ "$output" == *"kernel symbols from this machine: 0, kernel frames left unnamed: "[1-9]* ]]
}

@test "unknown record types and features are counted in --stats, never fatal" {
	perf_rec -e cpu-clock -g -o - -- "$W" 0.1
	python3 - "$T/perf.out" "$T/odd.data" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
odd = struct.pack('<IHH8s', 120, 0, 16, b'whatever')
feat = struct.pack('<IHHQ8s', 80, 0, 24, 200, b'12345678')
open(sys.argv[2], 'wb').write(d[:16] + odd + feat + d[16:])
EOF
	run -0 --separate-stderr sp-decode --from=perf --stats "$T/perf.out"
	before=$output
	run -0 --separate-stderr sp-decode --from=perf --stats "$T/odd.data"
	[ -z "$stderr" ]
	[[ "$output" == *"records skipped (type not read): 1"* ]]
	[[ "$before" == *"records skipped (type not read): 0"* ]]
	fb=$(grep -o 'skipped: [0-9]*' <<<"$before" | tail -1)
	fa=$(grep -o 'skipped: [0-9]*' <<<"$output" | tail -1)
	[ "${fa#skipped: }" = $((${fb#skipped: } + 1)) ]
	cmp <(sp-decode --from=perf "$T/perf.out") <(sp-decode --from=perf "$T/odd.data")
}

@test "bad perf.data: one message with file and offset, exit status 2, what came before written" {
	perf_rec -e cpu-clock -g -o - -- "$W" 0.1
	mv "$T/perf.out" "$T/ok.data"
	perf_rec -e cpu-clock -g -o "$T/file.data" -- "$W" 0.1
	printf 'not perf at all, just words\n' > "$T/words"
	run -2 sp-decode --from=perf "$T/words"
	[ "$output" = "sp-decode: error: $T/words@0: not a perf.data file (no PERFILE2 magic)" ]
	run -2 sp-decode --from=perf "$T/missing"
	[[ "$output" == *"cannot open '$T/missing'"* ]]
	# A pipe-mode file cut in the middle of a record.
	size=$(stat -c %s "$T/ok.data")
	head -c $((size - 5)) "$T/ok.data" > "$T/cut.data"
	run -2 --separate-stderr sp-decode --from=perf "$T/cut.data"
	[[ "$stderr" == *"$T/cut.data@"*": record cut short (the file ends "*" bytes into it)"* ]]
	[ "$(grep -c '"type":"sample"' <<<"$output")" -ge 1 ]
	# A file-mode file cut short: its data section lies outside the file.
	head -c 2000 "$T/file.data" > "$T/cut2.data"
	run -2 sp-decode --from=perf "$T/cut2.data"
	[ "$output" = "sp-decode: error: $T/cut2.data@40: the data section lies outside the file" ]
	# --stats of it: the one message, no summary of an "empty" file
	run -2 sp-decode --from=perf --stats "$T/cut2.data"
	[ "$output" = "sp-decode: error: $T/cut2.data@40: the data section lies outside the file" ]
	# perf killed before it wrote the sizes and the features (data size 0,
	# nothing after the records): the records to the end, said once.
	python3 - "$T/file.data" "$T/unfinished.data" <<'EOF'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
off, size = struct.unpack_from('<QQ', d, 40)
d[48:56] = bytes(8)
open(sys.argv[2], 'wb').write(d[:off + size])
EOF
	run -0 --separate-stderr sp-decode --from=perf "$T/unfinished.data"
	# (without the features, nothing says which kernel recorded it)
	[ "$stderr" = "sp-decode: warning: $T/unfinished.data: the header gives no data size (perf record did not finish?): reading records to the end of the file, without its features
sp-decode: warning: $T/unfinished.data: kernel frames stay unnamed: the file names no kernel build-id nor release" ]
	[ "$(grep -c '"type":"sample"' <<<"$output")" = "$(sp-decode --from=perf "$T/file.data" | grep -c '"type":"sample"')" ]
	# A record shorter than its own header.
	{ head -c 16 "$T/ok.data"; printf '\011\0\0\0\0\0\004\0'; } > "$T/short.data"
	run -2 sp-decode --from=perf "$T/short.data"
	[ "$output" = "sp-decode: error: $T/short.data@16: record of type 9 is 4 bytes long, shorter than its header" ]
	# A sample too short for its fields: skipped, said once, exit status 1.
	{ cat "$T/ok.data"; printf '\011\0\0\0\0\0\010\0'; printf '\011\0\0\0\0\0\010\0'; } > "$T/bad.data"
	run -1 --separate-stderr sp-decode --from=perf --stats "$T/bad.data"
	[ "$(grep -c 'does not parse' <<<"$stderr")" = 1 ]
	[[ "$output" == *"samples that did not parse: 2"* ]]
	# A big-endian file is refused by name.
	printf '2ELIFREP\0\0\0\0\0\0\0\020' > "$T/be.data"
	run -2 sp-decode --from=perf "$T/be.data"
	[[ "$output" == *"@0: perf.data of a big-endian machine is not supported" ]]
	# Usage.
	run -64 sp-decode --from=perf "$T/ok.data" "$T/ok.data"
	run -64 sp-decode --perf-event=cpu-clock "$T/ok.data"
	run -64 sp-decode --from=ctf "$T/ok.data"
}

# The fuzz target, built without libFuzzer, over recordings made here and
# every cut and flip of them the loop makes.
@test "fuzz-perfdata: recordings and their mutations import without a sanitizer report" {
	make -C "$BATS_TEST_DIRNAME/.." --no-print-directory -s build/fuzz-standalone/fuzz-perfdata >&2 ||
		fail "make build/fuzz-standalone/fuzz-perfdata failed"
	mkdir "$T/corpus"
	perf_rec -e cpu-clock -e page-faults -g -o "$T/corpus/file.data" -- "$W" 0.05
	perf_rec -e cpu-clock --call-graph=dwarf,4096 -o "$T/corpus/dwarf.data" -- "$W" 0.05
	perf_rec -e cpu-clock -g -o - -- "$W" 0.05
	mv "$T/perf.out" "$T/corpus/pipe.data"
	python3 - "$T/corpus" <<'EOF'
import os, random, sys
d = sys.argv[1]
random.seed(22)
for name in sorted(os.listdir(d)):
    b = open(os.path.join(d, name), 'rb').read()
    for i in range(12):
        m = bytearray(b[:random.randrange(16, len(b))] if i % 3 == 0 else b)
        for _ in range(1 + i):
            m[random.randrange(len(m))] = random.randrange(256)
        open(os.path.join(d, '%s.%d' % (name, i)), 'wb').write(m)
EOF
	run --separate-stderr "$BATS_TEST_DIRNAME/../build/fuzz-standalone/fuzz-perfdata" "$T/corpus"
	[ "$status" = 0 ] || fail "$(tail -30 <<<"$stderr")"
	[[ "$stderr" != *"runtime error"* ]]
	[[ "$stderr" != *"AddressSanitizer"* ]]
}
