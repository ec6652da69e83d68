#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record's default spans and fork-heavy programs: the fork child of a
# Ruby or Python with the runtime hook is not held (the hook file's links
# cover it), lives, and has its spans from its first method; a child that
# execs a new Ruby is held at that exec and has its spans from its first
# method too. What this costs is scripts/bench/forks's.
load helper

PY=/usr/bin/python3.11

setup() {
	OUT=$BATS_TEST_TMPDIR/run.sp
	require_root
}

# "pid method" of the spans of $OUT whose file ends with $1, unique.
spans_of() {
	sp-decode "$OUT" | jq -r --arg f "$1" '
		select(.type == "span_start" and (.file // "" | endswith($f)))
		| "\(.pid) \(.method)"' | sort -u
}

@test "sp-record: 20 system() of a Ruby: no child held, every one lives and runs true" {
	require_ruby_probes
	run --separate-stderr -0 sp-record -v --spans=auto -o "$OUT" -- ruby -e '20.times { system("true") or abort("child: #{$?.inspect}") }'
	[[ "$stderr" == *"forks: 20, 0 held for their parent's probes"* ]] || fail "$stderr"
	# each child lived to its exec (a dead one would have failed system())
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"event\" and .event == \"proc_exec\") | .filename' | grep -c '/true\$'"
	[ "$output" = 20 ] || fail "$output"
}

@test "sp-record: a forked Ruby child, not held, has its spans from its first method; a child that execs Ruby too" {
	require_ruby_probes
	cat >"$BATS_TEST_TMPDIR/forks.rb" <<-'EOF'
	def child_first; child_second; end
	def child_second; 1; end
	pid = fork { child_first; sleep 0.5; (raise IOError rescue nil); exit!(0) }
	Process.wait(pid)
	abort("fork child: #{$?.inspect}") unless $?.success?
	system("ruby", File.join(__dir__, "execd.rb")) or abort("exec child: #{$?.inspect}")
	EOF
	cat >"$BATS_TEST_TMPDIR/execd.rb" <<-'EOF'
	def execd_first; 1; end
	execd_first
	EOF
	run --separate-stderr -0 sp-record -v --spans=auto -o "$OUT" -- ruby "$BATS_TEST_TMPDIR/forks.rb"
	[[ "$stderr" == *"forks: 2, 0 held for their parent's probes"* ]] || fail "$stderr"
	run -0 spans_of forks.rb
	# the fork child's first method and its callee, in a pid of their own
	[ "$(echo "$output" | awk '{print $2}' | tr '\n' ' ')" = "child_first child_second " ] || fail "$output"
	# its raise probe came once it had lived a while
	run -0 bash -c "sp-decode '$OUT' | jq -r 'select(.type == \"span_raise\") | .klass'"
	[ "$output" = IOError ] || fail "$output"
	run -0 spans_of execd.rb
	[ "$output" != "" ] && [[ "$output" == *" execd_first" ]] || fail "$output"
}

@test "sp-record: Python's os.fork child and multiprocessing.Pool workers, not held, have their spans" {
	require_python_probes
	cat >"$BATS_TEST_TMPDIR/forks.py" <<-'EOF'
	import multiprocessing, os, sys

	def square(x):
	    return x * x

	def in_child():
	    return square(3)

	if __name__ == "__main__":
	    pid = os.fork()
	    if pid == 0:
	        in_child()
	        os._exit(0)
	    _, st = os.waitpid(pid, 0)
	    assert os.waitstatus_to_exitcode(st) == 0, st
	    multiprocessing.set_start_method("fork")
	    with multiprocessing.Pool(2) as pool:
	        assert sum(pool.map(square, range(10))) == 285
	EOF
	run --separate-stderr -0 sp-record -v --spans=auto -o "$OUT" -- $PY "$BATS_TEST_TMPDIR/forks.py"
	[[ "$stderr" =~ forks:\ [0-9]+,\ 0\ held\ for\ their\ parent\'s\ probes ]] || fail "$stderr"
	run -0 spans_of forks.py
	# in_child in the fork child; square in it and in the workers
	[[ "$output" == *" in_child"* ]] || fail "$output"
	(( $(echo "$output" | grep -c ' square$') >= 2 )) || fail "$output"
}
