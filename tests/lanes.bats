#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Lanes: asyncio tasks and Ruby fibers recorded from real programs
# (tests/fixtures/lanes), each shown once with its whole life by sp-tree,
# the Chrome trace and speedscope. The counts expected are read off the
# programs' own source (their TASKS, AWAITS, FIBERS, YIELDS).
load helper

PY=/usr/bin/python3.11

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
	CORR=$BATS_TEST_TMPDIR/run.corr.sp
}

require_python_hook() {
	require_root
	[ -x $PY ] || skip "needs Debian's $PY"
	compgen -G "$SP_BIN/../runtime/python/_stackpulse_hook*.so" >/dev/null ||
		skip "the Python hook is not built (python3-dev)"
}

require_ruby_hook() {
	require_root
	require_cmd ruby
	[ -e "$SP_BIN/../runtime/ruby/3.1/stackpulse_hook.so" ] ||
		skip "the Ruby hook is not built (ruby-dev)"
}

# The value of constant $2 in the program $1 ("NAME = 4").
const_of() {
	sed -n "s/^$2 = \([0-9]*\)\$/\1/p" "$1"
}

@test "lanes: each asyncio task is one lane with its resumes, awaits and events" {
	require_python_hook
	prog=$FIXTURES/tasks.py
	tasks=$(const_of "$prog" TASKS)
	awaits=$(const_of "$prog" AWAITS)
	[ "$tasks" -gt 1 ] && [ "$awaits" -gt 1 ]
	run -0 --separate-stderr sp-record --no-samples --spans=python -o "$OUT" -- $PY "$prog"
	# the marks of a coroutine's frame name it; those of work() suspend
	# AWAITS times per task, and end once
	run -0 bash -c "sp-decode '$OUT' | jq -c 'select(.type == \"span_stop\" and .method == \"work\")
		| (.flags // \"0x0\")' | sort | uniq -c | awk '{print \$1, \$2}' | paste -sd' '"
	assert_output "$tasks \"0x0\" $((tasks * awaits)) \"0x4\""
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	# sp-tree: one lane per task, with AWAITS + 1 resumes
	run -0 bash -c "sp-tree --stable --format=json '$CORR' | jq -c '[.lanes[] | select(.name == \"work\")
		| [(.resumes | length), .awaits, .done, ([.resumes[] | .suspended] | map(tostring) | join(\",\"))]]
		| group_by(.) | map([length] + .[0])'"
	susp=$(printf 'true,%.0s' $(seq "$awaits"))false
	assert_output "[[$tasks,$((awaits + 1)),$awaits,true,\"$susp\"]]"
	run -0 bash -c "sp-tree --stable '$CORR' | grep -c '^task __main__.work  .*tasks.py:[0-9]*  resumes=$((awaits + 1)) awaits=$awaits\$'"
	assert_output "$tasks"
	# the task's lifetime covers its resumes, and each open of the program
	# once it runs (AWAITS per task) lies inside a resume of a work task:
	# its span is under the resume's span
	sp-tree --format=json "$CORR" > "$BATS_TEST_TMPDIR/tree.json"
	sp-correlate --format=json "$CORR" > "$BATS_TEST_TMPDIR/corr.jsonl"
	run -0 python3 - "$BATS_TEST_TMPDIR/tree.json" "$BATS_TEST_TMPDIR/corr.jsonl" "$prog" <<'EOF'
import json, sys
tree = json.load(open(sys.argv[1]))
work = [l for l in tree["lanes"] if l["name"] == "work"]
for l in work:
    rs = l["resumes"]
    assert l["start"] == rs[0]["start"] and l["stop"] == rs[-1]["stop"], l
    assert all(a["stop"] <= b["start"] for a, b in zip(rs, rs[1:])), l
    assert l["running_ns"] == sum(r["stop"] - r["start"] for r in rs), l
resume_of = {r["span"]: l["id"] for l in work for r in l["resumes"]}
parent, n = {}, 0
opens = []
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r["type"] == "span":
        n += 1
        parent[n] = r.get("parent", 0)
    elif r["type"] == "event" and r["event"] == "path_open" and r.get("path") == sys.argv[3]:
        opens.append(r)
# the interpreter reads the program before it runs: not a task's
first = min(l["start"] for l in work)
per_lane = {}
for e in opens:
    if e["time"] < first:
        continue
    s = e["span"]
    while s and s not in resume_of:
        s = parent.get(s, 0)
    assert s, e
    per_lane[resume_of[s]] = per_lane.get(resume_of[s], 0) + 1
print(sorted(per_lane.values()))
EOF
	assert_output "[$(printf "$awaits, %.0s" $(seq $((tasks - 1))))$awaits]"
}

@test "lanes: the Chrome trace has an async slice per task, and speedscope a profile" {
	require_python_hook
	prog=$FIXTURES/tasks.py
	tasks=$(const_of "$prog" TASKS)
	awaits=$(const_of "$prog" AWAITS)
	run -0 --separate-stderr sp-record --no-samples --spans=python -o "$OUT" -- $PY "$prog"
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	sp-flame -q --chrome -o "$BATS_TEST_TMPDIR/t.json" "$CORR"
	# nestable async events: every "b" has its "e" (same id, name, later
	# or equal time), one outer slice per task with AWAITS + 1 running
	# slices and AWAITS suspended ones inside it
	run -0 python3 - "$BATS_TEST_TMPDIR/t.json" <<'EOF'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] in "be"]
lanes = {}
for e in sorted(ev, key=lambda e: (e["ts"], e["ph"] == "b")):
    l = lanes.setdefault(e["id"], {"open": [], "slices": []})
    if e["ph"] == "b":
        l["open"].append(e)
    else:
        b = l["open"].pop()
        assert b["name"] == e["name"] and b["ts"] <= e["ts"] and e["cat"] == b["cat"] == "task", (b, e)
        l["slices"].append((b["name"], len(l["open"])))
    assert all(x["pid"] == e["pid"] for x in l["open"])
rows = []
for l in lanes.values():
    assert not l["open"]
    outer = [n for n, d in l["slices"] if d == 0]
    assert len(outer) == 1, l
    if outer[0].startswith("__main__.work ("):
        rows.append((sum(n == "running" for n, d in l["slices"]),
                     sum(n == "suspended" for n, d in l["slices"])))
print(len(rows), sorted(set(rows)))
EOF
	assert_output "$tasks [($((awaits + 1)), $awaits)]"
	sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/s.json" "$CORR"
	run -0 bash -c "jq -r '.profiles[].name' '$BATS_TEST_TMPDIR/s.json' | grep -c '^task __main__.work '"
	assert_output "$tasks"
}

@test "lanes: speedscope's own reader takes the task profiles" {
	require_python_hook
	require_cmd npm "npm is needed to install speedscope"
	require_cmd node
	NPM_DIR=$BATS_FILE_TMPDIR/npm
	mkdir -p "$NPM_DIR"
	(cd "$NPM_DIR" && timeout 300 npm install --no-audit --no-fund --silent speedscope ajv \
		>/dev/null 2>&1) || skip "npm install speedscope ajv failed (no registry?)"
	export NODE_PATH=$NPM_DIR/node_modules
	run -0 --separate-stderr sp-record --no-samples --spans=python -o "$OUT" -- $PY "$FIXTURES/tasks.py"
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/s.json" "$CORR"
	run -0 node "$BATS_TEST_DIRNAME/fixtures/sp-flame/speedscope-check.js" "$BATS_TEST_TMPDIR/s.json"
}

@test "lanes: each Ruby fiber is one lane from its first resume to its end, with its owner" {
	require_ruby_hook
	prog=$FIXTURES/fibers.rb
	fibers=$(const_of "$prog" FIBERS)
	yields=$(const_of "$prog" YIELDS)
	run -0 --separate-stderr sp-record --no-samples --spans=ruby -o "$OUT" -- ruby "$prog"
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	run -0 bash -c "sp-tree --stable '$CORR' | sed -n '/^# lanes/,\$p' | grep -c '^fiber  owner root  resumes=$((yields + 1)) awaits=$yields\$'"
	assert_output "$fibers"
	# each read of the program lies inside a resume of a fiber (YIELDS per
	# fiber), and the fibers' lives overlap: they ran in turn
	sp-tree --format=json "$CORR" > "$BATS_TEST_TMPDIR/tree.json"
	sp-correlate --format=json "$CORR" > "$BATS_TEST_TMPDIR/corr.jsonl"
	run -0 python3 - "$BATS_TEST_TMPDIR/tree.json" "$BATS_TEST_TMPDIR/corr.jsonl" "$prog" <<'EOF'
import json, sys
lanes = [l for l in json.load(open(sys.argv[1]))["lanes"] if l["kind"] == "fiber"]
for l in lanes:
    rs = l["resumes"]
    assert l["start"] == rs[0]["start"] and l["stop"] == rs[-1]["stop"], l
    assert l["owner"] == "0x0", l
starts = sorted(l["start"] for l in lanes)
assert starts[-1] < min(l["stop"] for l in lanes)
count = {}
for line in open(sys.argv[2]):
    e = json.loads(line)
    if e["type"] != "event" or e["event"] != "path_open" or e.get("path") != sys.argv[3]:
        continue
    inside = [l["id"] for l in lanes for r in l["resumes"] if r["start"] <= e["time"] <= r["stop"]]
    if inside:
        count[inside[0]] = count.get(inside[0], 0) + 1
print(sorted(count.values()))
EOF
	assert_output "[$(printf "$yields, %.0s" $(seq $((fibers - 1))))$yields]"
}

@test "lanes: speedscope has a profile per Ruby fiber, the Chrome trace a track; each nested, no span cut short" {
	require_ruby_hook
	fibers=3 yields=4
	# a method that stays open across the fiber's yields, called from a
	# block of the fiber; the thread's own drive() resumes the fibers and
	# returns while they are suspended in it
	run -0 --separate-stderr sp-record --no-samples --spans=ruby -o "$OUT" -- ruby -e "
def work(n) = n.times.sum { |i| i * i }
def step = (File.read('/etc/hostname') rescue nil; work(20000))
def loop_in_fiber(i) = $yields.times { step; Fiber.yield i }
def drive(fs) = fs.each(&:resume)
fs = $fibers.times.map { |i| Fiber.new { loop_in_fiber(i); :done } }
$((yields + 1)).times { drive(fs) }"
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	sp-correlate --format=json "$CORR" > "$BATS_TEST_TMPDIR/corr.jsonl"
	sp-flame -q --speedscope -o "$BATS_TEST_TMPDIR/s.json" "$CORR"
	# the format's rules, and each method's span whole in some profile
	run -0 python3 "$BATS_TEST_DIRNAME/fixtures/sp-flame/speedscope-nesting.py" "$BATS_TEST_TMPDIR/s.json" "$BATS_TEST_TMPDIR/corr.jsonl"
	# and speedscope's own reader, when an earlier test installed it
	if [ -d "$BATS_FILE_TMPDIR/npm/node_modules/speedscope" ] && command -v node >/dev/null; then
		NODE_PATH=$BATS_FILE_TMPDIR/npm/node_modules run -0 node \
			"$BATS_TEST_DIRNAME/fixtures/sp-flame/speedscope-check.js" "$BATS_TEST_TMPDIR/s.json"
		[ "$(grep -c '^evented fiber 0x' <<< "$output")" -eq "$fibers" ]
	fi
	# one profile per fiber the runtime said was new
	new=$(jq -s '[.[] | select(.type == "fiber_switch" and .flags == "0x1")] | length' \
		"$BATS_TEST_TMPDIR/corr.jsonl")
	[ "$new" -eq "$fibers" ]
	run -0 jq -r '[.profiles[] | select(.name | startswith("fiber 0x"))] | length' "$BATS_TEST_TMPDIR/s.json"
	assert_output "$fibers"
	# each fiber has its loop_in_fiber and its steps (the yields), the
	# thread the drive()s and none of the fibers' spans
	run -0 python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
names = [f["name"] for f in d["shared"]["frames"]]
for p in d["profiles"]:
    if p["type"] != "evented":
        continue
    opened = [names[e["frame"]] for e in p["events"] if e["type"] == "O"]
    count = lambda m: sum(n.endswith("#" + m) for n in opened)
    print(p["name"].split()[0], count("drive"), count("loop_in_fiber"), count("step"))
' "$BATS_TEST_TMPDIR/s.json"
	assert_line "spans $((yields + 1)) 0 0"
	[ "$(grep -c "^fiber 0 1 $yields\$" <<< "$output")" -eq "$fibers" ]
	# the Chrome trace: each thread's and each fiber's track nested, each
	# fiber's loop_in_fiber whole on a track named for it
	sp-flame -q --chrome -o "$BATS_TEST_TMPDIR/c.json" "$CORR"
	run -0 python3 "$BATS_TEST_DIRNAME/fixtures/sp-flame/chrome-nesting.py" "$BATS_TEST_TMPDIR/c.json" \
		"$BATS_TEST_TMPDIR/corr.jsonl"
	run -0 jq -r '.traceEvents as $e | [$e[] | select(.ph == "M" and (.args.name | startswith("fiber 0x"))) | .tid] as $t
		| [$e[] | select(.ph == "X" and .name == "Object#loop_in_fiber") | .tid as $x | $t | index($x) != null]
		| map(tostring) | join(" ")' "$BATS_TEST_TMPDIR/c.json"
	assert_output "$(printf 'true %.0s' $(seq "$fibers") | sed 's/ $//')"
}

@test "lanes: sp-tree's filters choose the lanes too: --pid, --tid, --span, of two processes" {
	require_ruby_hook
	prog=$FIXTURES/fibers.rb
	fibers=$(const_of "$prog" FIBERS)
	run -0 --separate-stderr sp-record --no-samples --spans=ruby -o "$OUT" -- \
		sh -c "ruby '$prog' & ruby '$prog'; wait"
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	# the two ruby processes, and their fibers, from the raw fiber switches
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"fiber_switch\" and .flags == \"0x1\")
		| .pid' | sort | uniq -c | awk '{print \$2, \$1}'"
	[ "${#lines[@]}" -eq 2 ]
	read -r p1 n1 <<< "${lines[0]}"
	read -r p2 n2 <<< "${lines[1]}"
	[ "$n1" -eq "$fibers" ] && [ "$n2" -eq "$fibers" ]
	sh=$(sp-decode "$OUT" | jq -r 'select(.type == "process" and .comm == "sh") | .pid' | head -1)
	lane_pids() {
		sp-tree --format=json "$@" "$CORR" | jq -r '[(.lanes // [])[] | .pid] | sort | map(tostring) | join(" ")'
	}
	all=$(printf "$p1 %.0s" $(seq "$fibers"))$(printf "$p2 %.0s" $(seq "$fibers"))
	run -0 lane_pids
	assert_output "${all% }"
	# each process alone: its own fibers only, in the text form too
	for p in $p1 $p2; do
		run -0 lane_pids --pid "$p"
		assert_output "$(printf "$p %.0s" $(seq "$fibers") | sed 's/ $//')"
		run -0 lane_pids --tid "$p"
		assert_output "$(printf "$p %.0s" $(seq "$fibers") | sed 's/ $//')"
		run -0 bash -c "sp-tree --pid $p '$CORR' | sed -n '/^# lanes: /,\$p' | grep -c '^fiber .* pid $p tid $p '"
		assert_output "$fibers"
		run -0 bash -c "sp-tree --pid $p '$CORR' | grep -c '^fiber .* pid [0-9]'"
		assert_output "$fibers"
	done
	# the shell that started both: every fiber is under its forks
	run -0 lane_pids --pid "$sh"
	assert_output "${all% }"
	# --span: the fibers a matching span ran in (chunk runs in each), none
	# when nothing matches
	run -0 lane_pids --span chunk --pid "$p2"
	assert_output "$(printf "$p2 %.0s" $(seq "$fibers") | sed 's/ $//')"
	run -0 lane_pids --span 'no-such-method'
	assert_output ""
	run -0 bash -c "sp-tree --span 'no-such-method' '$CORR' | grep -c '^# lanes' || true"
	assert_output 0
}

@test "lanes: python3 -m asyncio (the asyncio REPL) fed a script: its top-level await and each task" {
	require_python_hook
	tasks=3 sleeps=2
	printf 'import asyncio\nasync def g(i):\n    for k in range(%d):\n        await asyncio.sleep(0.005)\n    return i\n\nawait asyncio.gather(*(g(i) for i in range(%d)))\n' \
		$sleeps $tasks > "$BATS_TEST_TMPDIR/repl.txt"
	run -0 --separate-stderr sp-record --no-samples --spans=python -o "$OUT" -- \
		$PY -m asyncio < "$BATS_TEST_TMPDIR/repl.txt"
	[[ "$output" == *"[0, 1, 2]"* ]]
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	# the REPL runs each input as a coroutine (<module>, top-level await)
	# in its own task: the gather awaits once, so two resumes
	run -0 bash -c "sp-tree --stable '$CORR' | grep -c '^task __main__.<module>  <console>:0  resumes=2 awaits=1\$'"
	assert_output 1
	run -0 bash -c "sp-tree --stable '$CORR' | grep -c '^task __main__.g  <console>:1  resumes=$((sleeps + 1)) awaits=$sleeps\$'"
	assert_output "$tasks"
}

@test "lanes: an asyncio.start_server echo server: one lane per connection, driven by clients" {
	require_python_hook
	clients=3 lines=4
	sp-record --no-samples --spans=python -o "$OUT" -- $PY "$FIXTURES/echo.py" $clients \
		> "$BATS_TEST_TMPDIR/port" 2> "$BATS_TEST_TMPDIR/err" &
	rec=$!
	for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.1; done
	port=$(cat "$BATS_TEST_TMPDIR/port")
	[ -n "$port" ] || fail "the server gave no port: $(cat "$BATS_TEST_TMPDIR/err")"
	run -0 python3 -c '
import socket, sys
port, n, lines = map(int, sys.argv[1:])
for c in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rwb")
    for i in range(lines):
        f.write(b"line %d\n" % i); f.flush()
        assert f.readline() == b"line %d\n" % i
    s.close()
' "$port" $clients $lines
	wait $rec
	sp-correlate -o "$CORR" "$OUT" 2>/dev/null
	# each connection's handler is a task that ended; the server's main()
	# is one lane over its whole life, not one per resume
	run -0 bash -c "sp-tree --stable --format=json '$CORR' | jq -c '[.lanes[] | select(.name == \"handle\")
		| [.done, (.resumes | length) > 1]] | group_by(.) | map([length] + .[0])'"
	assert_output "[[$clients,true,true]]"
	run -0 bash -c "sp-tree --stable --format=json '$CORR' | jq '[.lanes[] | select(.name == \"main\")] | length'"
	assert_output 1
}
