#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# What a recording of a Ruby or Python command gets without --spans
# (docs/spans.md, "Why spans are off by default"): no per-call method
# spans and no activator in the program, yet each kernel event is filed
# under the method that made it, from its interpreted stack; and
# --spans-match: the spans of the matching Ruby methods and Python functions
# only.
load helper

PY=/usr/bin/python3.11

setup() {
	require_root
	require_cmd jq
	OUT=$BATS_TEST_TMPDIR/run.sp
	CONF=$BATS_TEST_TMPDIR/config.txt
	echo config > "$CONF"
}

# The value of the constant $2 in the program $1 ("LOADS = 5").
const_of() {
	sed -n "s/^$2 = \([0-9_]*\).*/\1/p" "$1" | tr -d _
}

# "method<TAB>count" of the opens of $CONF in $OUT: the method of the span
# sp-correlate filed each under ("frame:" before it when the span is an
# interpreted frame's, not a hook's).
open_owners() {
	sp-correlate --format=json "$OUT" | jq -r -s --arg p "$CONF" '
		(map(select(.type == "span")) | map({key: (.id | tostring),
			value: ((if .end == "synthetic" then "frame:" else "" end) +
				((if .klass and .end != "synthetic" then .klass + "#" else "" end) +
				 (.method // "-")))}) | from_entries) as $m
		| [.[] | select(.type == "event" and .event == "path_open" and .path == $p)
		   | $m[(.span // 0) | tostring] // "-"]
		| group_by(.) | .[] | "\(.[0])\t\(length)"'
}

# sp-correlate | sp-tree: every line with an open of $CONF is right under
# a frame or span of $1 ("FRAME Store#load_config ": the start of what is
# in its brackets; alternatives separated by "|").
assert_tree_under() {
	run --separate-stderr bash -o pipefail -c "sp-correlate '$OUT' | sp-tree --stable"
	[ "$status" = 0 ] || fail "sp-correlate | sp-tree: $stderr"
	awk -v want="$1" -v p="path_open → $CONF " '
		BEGIN { nw = split(want, w, "|") }
		/\[(FRAME|SPAN)/ { head = $0; next }
		index($0, p) {
			n++
			for (i = 1; i <= nw; i++)
				if (index(head, "[" w[i])) next
			print "under: " head; bad++
		}
		END { if (!n) print "no open of the file"; exit !n || bad }' <<<"$output" ||
		fail "$(grep -B3 -F "$CONF" <<<"$output" | head -20)"
}

# The program's per-call spans: starts of its own methods (the interpreter
# may have run none of ours; anything would be a hook's).
span_starts() {
	sp-decode "$OUT" | jq -r 'select(.type == "span_start") | "\(.klass // "")#\(.method)"' |
		sort | uniq -c | awk '{ print $2 "\t" $1 }'
}

@test "the default recording of a Ruby command: no activator, no spans, its opens under the method that made them" {
	require_ruby_probes
	prog=$BATS_TEST_TMPDIR/app.rb
	cat > "$prog" <<-'EOF'
	# Store#load_config opens the file ARGV[0] LOADS times; Calc#step is
	# called STEPS times and opens nothing.
	LOADS = 5
	STEPS = 20_000
	class Store
	  def load_config(path)
	    File.read(path)
	  end
	end
	class Calc
	  def step(x)
	    x + 1
	  end
	end
	puts "RUBYOPT=#{ENV['RUBYOPT']}"
	store = Store.new
	calc = Calc.new
	x = 0
	STEPS.times { x = calc.step(x) }
	LOADS.times { store.load_config(ARGV[0]); sleep 0.01 }
	sleep 0.5 # sp-record reads the code of the stacks while it runs
	EOF
	run --separate-stderr -0 timeout 120 sp-record -o "$OUT" -- ruby "$prog" "$CONF"
	# no activator was loaded, and nothing was said about spans
	[[ "$output" != *stackpulse* ]] || fail "$output"
	[[ "$stderr" != *warning* ]] || fail "$stderr"
	run -0 span_starts
	assert_output ""
	# every open of the file is Store#load_config's, from its stack
	run -0 open_owners
	assert_output "frame:Store#load_config	$(const_of "$prog" LOADS)"
	assert_tree_under "FRAME Store#load_config "
}

@test "the default recording of a Python command: no activator, no spans, audit events kept, its opens under the method that made them" {
	require_python_probes
	prog=$BATS_TEST_TMPDIR/app.py
	cat > "$prog" <<-'EOF'
	# Store.load_config opens the file argv[1] LOADS times; Calc.step is
	# called STEPS times and opens nothing.
	import os
	import sys
	import time

	LOADS = 5
	STEPS = 20_000


	class Store:
	    def load_config(self, path):
	        with open(path) as f:
	            return f.read()


	class Calc:
	    def step(self, x):
	        return x + 1


	print("PYTHONPATH=" + os.environ.get("PYTHONPATH", ""))
	store, calc, x = Store(), Calc(), 0
	for _ in range(STEPS):
	    x = calc.step(x)
	for _ in range(LOADS):
	    store.load_config(sys.argv[1])
	    time.sleep(0.01)
	time.sleep(0.5)  # sp-record reads the code of the stacks while it runs
	EOF
	run --separate-stderr -0 timeout 120 sp-record -o "$OUT" -- $PY "$prog" "$CONF"
	[[ "$output" != *runtime/python* ]] || fail "$output"
	[[ "$stderr" != *warning* ]] || fail "$stderr"
	run -0 span_starts
	assert_output ""
	loads=$(const_of "$prog" LOADS)
	run -0 open_owners
	assert_output "frame:Store.load_config	$loads"
	assert_tree_under "FRAME Store.load_config "
	# Python's audit events are still recorded: one open per load
	run -0 bash -c "sp-decode '$OUT' | jq -r --arg p '$CONF' 'select(.type == \"event\" and
		.event == \"audit\" and .name == \"open\" and .args == \$p) | .name' | wc -l"
	assert_output "$loads"
}

@test "sp-record --spans-match: spans of the matching Ruby methods only, defined before or after the hook; none of a hotter one" {
	require_ruby_probes
	prog=$BATS_TEST_TMPDIR/app.rb
	cat > "$prog" <<-'EOF'
	# Store.open_all (once) calls Store#load_config LOADS times, which
	# opens ARGV[0]; Calc#step runs STEPS times; Late#load_late, of a class
	# made at run time, once.
	LOADS = 4
	STEPS = 3000
	class Store
	  def self.open_all(path, n)
	    n.times { new.load_config(path) }
	  end

	  def load_config(path)
	    File.read(path)
	  end
	end
	class Calc
	  def step(x)
	    x + 1
	  end
	end
	calc = Calc.new
	x = 0
	STEPS.times { x = calc.step(x) }
	Store.open_all(ARGV[0], LOADS)
	eval("class Late; def load_late(path) = File.read(path); end")
	Late.new.load_late(ARGV[0])
	sleep 0.3
	EOF
	run --separate-stderr -0 timeout 120 sp-record --spans-match='Store#load_*' \
		--spans-match='Store.open_all' --spans-match='Late#*' -o "$OUT" -- ruby "$prog" "$CONF"
	[[ "$stderr" != *warning* ]] || fail "$stderr"
	run -0 span_starts
	# a singleton method's class: its singleton class, as Ruby names it
	assert_output "#<Class:Store>#open_all	1
Late#load_late	1
Store#load_config	$(const_of "$prog" LOADS)"
	# load_config's spans are inside open_all's
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and
		.method == \"load_config\") | .depth' | sort -u"
	assert_output 2
	# the opens are in the spans that made them
	run -0 open_owners
	assert_output "Late#load_late	1
Store#load_config	$(const_of "$prog" LOADS)"
	assert_tree_under "SPAN Store#load_config |SPAN Late#load_late "
}

@test "sp-record --spans-match: spans of the matching Python functions only, by qualified name or module.qualname; none of a hotter one" {
	require_python_probes
	ls "$SP_BIN"/../runtime/python/_stackpulse_hook*.so >/dev/null 2>&1 ||
		skip "the Python hook is not built (python3-dev)"
	prog=$BATS_TEST_TMPDIR/app.py
	cat > "$prog" <<-'EOF'
	# open_all (once) calls Store.load_config LOADS times, which opens
	# argv[1]; Calc.step runs STEPS times; load_late, made by exec once
	# the program runs, once.
	import sys

	LOADS = 4
	STEPS = 3000


	class Store:
	    def load_config(self, path):
	        with open(path) as f:
	            return f.read()


	def open_all(path, n):
	    s = Store()
	    for _ in range(n):
	        s.load_config(path)


	class Calc:
	    def step(self, x):
	        return x + 1


	calc, x = Calc(), 0
	for _ in range(STEPS):
	    x = calc.step(x)
	open_all(sys.argv[1], LOADS)
	exec("def load_late(path):\n    with open(path) as f:\n        return f.read()\n")
	load_late(sys.argv[1])
	EOF
	# by qualified name, by module and qualified name, a late one's
	run --separate-stderr -0 timeout 120 sp-record --spans-match='Store.load_*' \
		--spans-match='__main__.open_all' --spans-match='load_l?te' -o "$OUT" -- \
		$PY "$prog" "$CONF"
	[[ "$stderr" != *warning* ]] || fail "$stderr"
	run -0 span_starts
	assert_output "__main__#Store.load_config	$(const_of "$prog" LOADS)
__main__#load_late	1
__main__#open_all	1"
	# load_config's spans are inside open_all's
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and
		.method == \"Store.load_config\") | .depth' | sort -u"
	assert_output 2
	run -0 open_owners
	assert_output "__main__#Store.load_config	$(const_of "$prog" LOADS)
__main__#load_late	1"
	# a glob of a module alone matches no function of it
	run --separate-stderr -0 timeout 120 sp-record --spans-match='__main__' -o "$OUT" -- \
		$PY "$prog" "$CONF"
	run -0 span_starts
	assert_output ""
}

@test "sp-record --spans-match: a malformed glob is a usage error, -p is warned; --check says what the default records" {
	run -64 --separate-stderr sp-record --spans-match= -- true
	[[ "$stderr" == *"invalid --spans-match"* ]] || fail "$stderr"
	run -0 sp-record --check
	assert_line --partial "spans (default python-audit,usdt): no per-call method spans"
	# the globs reach only the commands sp-record starts: -p is told so
	sleep 5 &
	run --separate-stderr -0 sp-record --spans-match='Store#*' --no-samples --events=none \
		-p $! -d 0.1 -o "$OUT"
	kill $! 2>/dev/null || true
	[ "$(grep -c 'warning: --spans-match applies to the commands sp-record starts' <<<"$stderr")" = 1 ] ||
		fail "$stderr"
}

@test "sp-record -a: the default spans are no request, so no warning that -a lacks some; --span-func given is warned" {
	run --separate-stderr -0 timeout 120 sp-record -a -d 0.3 --no-samples --events=none -o "$OUT"
	[[ "$stderr" != *"recorded for commands and -p pids"* ]] || fail "$stderr"
	run --separate-stderr -0 timeout 120 sp-record -a -d 0.3 --no-samples --events=none \
		--span-func=/bin/true:main -o "$OUT"
	[[ "$stderr" == *"other spans are recorded for commands and -p pids"* ]] || fail "$stderr"
}

@test "sp-record --spans-match: a raise outside the matching methods is no sign of lost starts (no warning); one inside raises its span" {
	require_ruby_probes
	prog=$BATS_TEST_TMPDIR/raise.rb
	cat > "$prog" <<-'EOF'
	def outside = raise(ArgumentError, "outside")
	def inside = raise(KeyError, "inside")
	3.times { begin; outside; rescue ArgumentError; end }
	begin; inside; rescue KeyError; end
	EOF
	run --separate-stderr -0 sp-record --spans-match='Object#inside' -o "$OUT" -- ruby "$prog"
	run --separate-stderr -0 sp-correlate --stats -o "$BATS_TEST_TMPDIR/c.sp" "$OUT"
	[[ "$stderr" != *"raises came with no span open"* ]] || fail "$stderr"
	[[ "$stderr" == *"; 3 raises outside the methods --spans-match named"* ]] || fail "$stderr"
	run -0 sp-tree "$BATS_TEST_TMPDIR/c.sp"
	assert_line --regexp '\[SPAN tid=[0-9]+ Object#inside at=raise.rb:2 .*\] \(raise KeyError'
	# without --spans-match, a raise with no span open is still a warning
	printf '%s\n' '{"type":"header","version":1,"start_mono_ns":1,"clock":"monotonic"}' \
		'{"type":"process","time":1,"pid":7,"ppid":1,"comm":"ruby"}' \
		'{"type":"span_raise","time":2,"pid":7,"tid":7,"runtime":"ruby","klass":"E","file":"/a.rb","line":1}' \
		'{"type":"end","time":3}' > "$BATS_TEST_TMPDIR/raw.jsonl"
	run --separate-stderr -0 sp-correlate -o /dev/null "$BATS_TEST_TMPDIR/raw.jsonl"
	[[ "$stderr" == *"1 raises came with no span open"* ]]
}

@test "sp-record --spans=ruby: a singleton method is named Class.method, as Ruby's frames are, in the tree, the summary, --span and the exports" {
	require_ruby_probes
	require_cmd jq
	prog=$BATS_TEST_TMPDIR/single.rb
	cat > "$prog" <<-'EOF'
	class Foo
	  def self.build = new.work
	  class << self
	    def make = build
	  end
	  def work = 42
	end
	module Util
	  def self.helper = Foo.make
	end
	obj = Object.new
	def obj.own = Util.helper
	obj.own
	EOF
	run --separate-stderr -0 sp-record --spans=ruby -o "$OUT" -- ruby "$prog"
	run -0 sp-tree --stable "$OUT"
	assert_line --partial '[SPAN Object#own at=single.rb:12]'
	assert_line --partial '[SPAN Util.helper at=single.rb:9]'
	assert_line --partial '[SPAN Foo.make at=single.rb:4]'
	assert_line --partial '[SPAN Foo.build at=single.rb:2]'
	assert_line --partial '[SPAN Foo#work at=single.rb:6]'
	run -0 sp-tree --summary "$OUT"
	assert_line --regexp ' Foo\.build +single\.rb:2$'
	run -0 sp-tree --stable --span='Foo.b*' "$OUT"
	assert_line --partial '[SPAN Foo.build at=single.rb:2]'
	run -0 sp-tree --stable --span='Foo#b*' "$OUT"
	refute_line --partial 'Foo.build'
	run -0 bash -c "sp-export --json '$OUT' | jq -r '.resourceSpans[].scopeSpans[].spans[].name' | sort -u"
	assert_line 'Foo.build'
	assert_line 'Util.helper'
	# the records keep Ruby's own name of the class: its singleton class
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_start\" and .method == \"build\") | .klass'"
	assert_output '#<Class:Foo>'
}
