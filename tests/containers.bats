#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Process identity across namespaces (docs/containers.md): real pid and mount
# namespaces made by unshare(1), recorded from the host with -- and with -p.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
	BGPIDS=
}

teardown() {
	local p
	for p in $BGPIDS; do
		kill "$p" 2>/dev/null || true
	done
	[ -z "${CONTAINERS:-}" ] || stop_containers
	# a test that failed midway: its cgroups, once their processes ended
	if [ -n "${CG:-}" ]; then
		sleep 0.2
		rmdir "$CG" ${OLD:+"$OLD"} 2>/dev/null || true
		rm_cgroup
	fi
}

needs_unshare() {
	require_root
	require_cmd unshare util-linux
	unshare --pid --mount --fork --mount-proc true 2>/dev/null ||
		skip "unshare cannot make pid and mount namespaces here"
}

# A script that writes the NSpid line of its own /proc/self/status (read by
# the shell itself, not by a child) to $1, then becomes "sleep $2".
nspid_script() {
	cat > "$T/self.sh" <<-EOS
	while read -r l; do case \$l in NSpid:*) echo "\$l" > "$1.tmp";; esac; done < /proc/self/status
	mv "$1.tmp" "$1"
	exec sleep $2
	EOS
}

# The inode of this shell's namespace of kind $1 (what a record's *_ns holds).
host_ns() {
	stat -L -c %i "/proc/self/ns/$1"
}

@test "containers: a process in a new pid namespace carries the pid it sees itself as (sp-record --)" {
	needs_unshare
	# The inner shell writes what /proc/self/status says inside, then
	# becomes a sleep long enough to be read from the host.
	nspid_script "$T/inside" 1
	run --separate-stderr -0 sp-record -o "$T/ns.sp" -- unshare --pid --mount --fork \
		--mount-proc sh -c "sh $T/self.sh"
	inside=$(awk '{ print $NF }' "$T/inside")
	[ -n "$inside" ] && [ "$inside" -gt 1 ]
	sp-decode "$T/ns.sp" > "$T/ns.jsonl"
	# The sleep: another pid outside than inside, in a namespace not the host's.
	run -0 jq -c 'select(.type=="process" and .comm=="sleep")' "$T/ns.jsonl"
	[ "${#lines[@]}" -eq 1 ]
	rec=$output
	assert_equal "$(jq .nspid <<<"$rec")" "$inside"
	[ "$(jq .pid <<<"$rec")" != "$inside" ]
	[ "$(jq .pid_ns <<<"$rec")" != "$(host_ns pid)" ]
	[ "$(jq .mnt_ns <<<"$rec")" != "$(host_ns mnt)" ]
	# not unshared: the network and cgroup namespaces are the host's
	assert_equal "$(jq .net_ns <<<"$rec")" "$(host_ns net)"
	assert_equal "$(jq .cgroup_ns <<<"$rec")" "$(host_ns cgroup)"
	# its cgroup as /proc says, and a start time
	want=$(sed -n 's/^0:://p' /proc/self/cgroup)
	assert_equal "$(jq -r .cgroup <<<"$rec")" "$want"
	[ "$(jq .start_boot_ns <<<"$rec")" -gt 0 ]
	# unshare itself stays in the host's pid namespace: pid and nspid agree
	run -0 jq -c 'select(.type=="process" and .comm=="unshare" and .pid_ns=='"$(host_ns pid)"')' \
		"$T/ns.jsonl"
	[ "$(jq .pid <<<"${lines[0]}")" = "$(jq .nspid <<<"${lines[0]}")" ]
	# sp-tree shows the namespace pid beside the host pid
	pid=$(jq .pid <<<"$rec")
	run -0 sp-tree "$T/ns.sp"
	assert_output --partial "[PROC pid=$pid nspid=$inside comm=sleep"
	run -0 sp-tree --format=json "$T/ns.sp"
	jq -e "[.. | objects | select(.type==\"process\" and .pid==$pid and .nspid==$inside)] | length == 1" \
		<<<"$output" >/dev/null
}

@test "containers: processes that live a millisecond carry their namespace pid, namespaces and cgroup" {
	needs_unshare
	# Three /bin/true (fork, exec, gone at once) and a subshell that forks,
	# never execs, and writes the NSpid it reads from its own status.
	cat > "$T/short.sh" <<-EOS
	for i in 1 2 3; do /bin/true; done
	( while read -r l; do case \$l in NSpid:*) echo "\$l" > "$T/sub";; esac; done < /proc/self/status )
	EOS
	run --separate-stderr -0 sp-record -o "$T/short.sp" -- unshare --pid --mount --fork \
		--mount-proc sh "$T/short.sh"
	sub=$(awk '{ print $NF }' "$T/sub")
	[ -n "$sub" ] && [ "$sub" -gt 1 ]
	sp-decode "$T/short.sp" > "$T/short.jsonl"
	# the namespace the shell made: every process in it has its identity
	run -0 jq -r 'select(.type=="process" and .comm=="sh" and .nspid==1) | .pid_ns' \
		"$T/short.jsonl"
	ns=$(sort -u <<<"$output")
	[ -n "$ns" ] && [ "$ns" != "$(host_ns pid)" ]
	want=$(sed -n 's/^0:://p' /proc/self/cgroup)
	run -0 jq -c "select(.type==\"process\" and .pid_ns==$ns)" "$T/short.jsonl"
	for rec in "${lines[@]}"; do
		[ "$(jq '.flags // "0x0"' <<<"$rec")" != '"0x4"' ] || fail "no identity: $rec"
		[ "$(jq .nspid <<<"$rec")" -ge 1 ] || fail "no nspid: $rec"
		[ "$(jq .start_boot_ns <<<"$rec")" -gt 0 ]
		assert_equal "$(jq -r .cgroup <<<"$rec")" "$want"
		[ "$(jq .mnt_ns <<<"$rec")" != "$(host_ns mnt)" ]
	done
	# each true: its own namespace pid, not its host pid
	run -0 jq -s -c "[.[] | select(.type==\"process\" and .comm==\"true\" and .pid_ns==$ns) |
		.nspid] | unique" "$T/short.jsonl"
	[ "$(jq length <<<"$output")" -eq 3 ] || fail "true records: $output"
	# the subshell that never exec'd: the pid it read inside
	run -0 jq -c "select(.type==\"process\" and .comm==\"sh\" and .nspid==$sub and .pid_ns==$ns)" \
		"$T/short.jsonl"
	[ "${#lines[@]}" -ge 1 ]
	pid=$(jq .pid <<<"${lines[0]}")
	[ "$pid" != "$sub" ]
	run -0 sp-tree "$T/short.sp"
	assert_output --partial "[PROC pid=$pid nspid=$sub comm=sh"
	assert_output --regexp "\[PROC pid=[0-9]+ nspid=[0-9]+ comm=true "
}

@test "containers: a running process in a pid namespace recorded with -p" {
	needs_unshare
	nspid_script "$T/inside" 30
	unshare --pid --mount --fork --mount-proc sh "$T/self.sh" &
	BGPIDS=$!
	for _ in $(seq 100); do
		[ -s "$T/inside" ] && break
		sleep 0.1
	done
	[ -s "$T/inside" ] || fail "the process in the namespace did not start"
	inner=$(pgrep -P "$BGPIDS")
	BGPIDS="$BGPIDS $inner"
	inside=$(awk '{ print $NF }' "$T/inside")
	assert_equal "$inside" 1	# the first process of its namespace
	run --separate-stderr -0 sp-record -o "$T/p.sp" -p "$inner" -d 0.3
	run -0 sp-decode "$T/p.sp"
	rec=$(printf '%s\n' "$output" | jq -c "select(.type==\"process\" and .pid==$inner)")
	assert_equal "$(jq .flags <<<"$rec")" '"0x1"'
	assert_equal "$(jq .nspid <<<"$rec")" 1
	[ "$(jq .pid_ns <<<"$rec")" != "$(host_ns pid)" ]
	[ "$(jq .mnt_ns <<<"$rec")" != "$(host_ns mnt)" ]
	want=$(stat -L -c %i "/proc/$inner/ns/pid")
	assert_equal "$(jq .pid_ns <<<"$rec")" "$want"
}

# The tids of the threads of process $2 (not its first) recorded in $1, in
# their namespace, sorted; the file $3 has what the threads saw.
check_nstids() {
	run -0 jq -r "select(.type==\"thread\" and .pid==$2 and .tid!=$2) | .nstid" "$1"
	[ "$(sort -n <<<"$output" | uniq | tr '\n' ' ')" = "$(sort -n "$3" | tr '\n' ' ')" ] ||
		fail "recorded nstids: $(tr '\n' ' ' <<<"$output"), seen inside: $(tr '\n' ' ' < "$3")"
	# each host tid differs from what the thread saw
	run -0 jq -r "select(.type==\"thread\" and .pid==$2 and .tid==.nstid) | .tid" "$1"
	assert_output ""
}

@test "containers: threads in a pid namespace carry the tid they see themselves as (sp-record --)" {
	needs_unshare
	require_cmd /usr/bin/python3 python3
	run --separate-stderr -0 sp-record -o "$T/th.sp" --events=proc -- unshare --pid --mount \
		--fork --mount-proc /usr/bin/python3 "$FIXTURES/threads.py" "$T/tids"
	[ "$(wc -l < "$T/tids")" -eq 3 ]
	sp-decode "$T/th.sp" > "$T/th.jsonl"
	run -0 jq -r 'select(.type=="process" and .nspid==1 and .comm=="python3") | .pid' "$T/th.jsonl"
	pid=$(sort -u <<<"$output")
	[ -n "$pid" ] && [ "$pid" -gt 1 ]
	check_nstids "$T/th.jsonl" "$pid" "$T/tids"
	# its first thread's is its process's namespace pid
	run -0 jq -r "select(.type==\"thread\" and .tid==$pid) | .nstid" "$T/th.jsonl"
	assert_equal "$(sort -u <<<"$output")" 1
	# sp-tree shows each beside the host tid
	run -0 sp-tree --no-collapse "$T/th.sp"
	for n in $(cat "$T/tids"); do
		assert_output --regexp "\[THREAD tid=[0-9]+ nstid=$n\]"
	done
	run -0 sp-tree --format=json --no-collapse "$T/th.sp"
	run -0 jq -r '.. | objects | select(.type=="thread") | .nstid' <<<"$output"
	assert_equal "$(sort -n <<<"$output" | tr '\n' ' ')" "$(sort -n "$T/tids" | tr '\n' ' ')"
}

@test "containers: threads started before sp-record -p carry the tid they see themselves as" {
	needs_unshare
	require_cmd /usr/bin/python3 python3
	unshare --pid --mount --fork --mount-proc /usr/bin/python3 "$FIXTURES/threads.py" \
		"$T/tids" "$T/stop" &
	BGPIDS=$!
	wait_file "$T/tids"
	inner=$(pgrep -P "$BGPIDS")
	BGPIDS="$BGPIDS $inner"
	[ "$(ls "/proc/$inner/task" | wc -l)" -eq 4 ]
	run --separate-stderr -0 sp-record -o "$T/p.sp" -p "$inner" -d 0.3
	touch "$T/stop"
	sp-decode "$T/p.sp" > "$T/p.jsonl"
	# read from /proc at attach, not seen made
	run -0 jq -r "select(.type==\"thread\" and .pid==$inner) | .tid" "$T/p.jsonl"
	[ "$(sort -u <<<"$output" | wc -l)" -eq 4 ]
	check_nstids "$T/p.jsonl" "$inner" "$T/tids"
}

@test "containers: a pid used again after its process exited carries another start time" {
	needs_unshare
	# sp-record in a pid namespace of its own, where nothing else makes
	# processes: ns_last_pid gives both sleeps the same pid, one after the
	# other has exited.
	run --separate-stderr -0 unshare --pid --mount --fork --mount-proc \
		sp-record -o "$T/reuse.sp" -- sh -c '
			echo 199 > /proc/sys/kernel/ns_last_pid; sleep 1 & wait
			echo 199 > /proc/sys/kernel/ns_last_pid; sleep 1 & wait'
	sp-decode "$T/reuse.sp" > "$T/reuse.jsonl"
	run -0 jq -c 'select(.type=="process" and .pid==200 and .comm=="sleep")' "$T/reuse.jsonl"
	[ "${#lines[@]}" -eq 2 ]
	a=$(jq .start_boot_ns <<<"${lines[0]}")
	b=$(jq .start_boot_ns <<<"${lines[1]}")
	[ "$a" -gt 0 ] && [ "$b" -gt "$a" ]
	# sp-tree keeps them apart
	run -0 sp-tree "$T/reuse.sp"
	[ "$(grep -c '\[PROC pid=200 .*comm=sleep' <<<"$output")" -eq 2 ]
}

@test "containers: a Ruby whose mount namespace has its own libruby at the host's path gets spans from that file" {
	needs_unshare
	require_cmd ruby
	lib=$(ldd "$(readlink -f "$(command -v ruby)")" | grep -o '/[^ ]*libruby[^ ]*')
	readelf -n "$lib" 2>/dev/null | grep -q cmethod__entry || skip "needs a libruby with USDT probes"
	# the same bytes, another inode: what a container's image has
	cp "$lib" "$T/libruby-copy.so"
	# Ruby's own C-method probes (no hook: C methods from the hook need
	# no probe in the file), which a Ruby 3.1 gets only when asked
	SP_RUBY_CMETHOD_PROBES=1 STACKPULSE_RUBY_HOOK=none \
		run --separate-stderr sp-record --no-samples --spans=ruby-c -o "$T/ns.sp" -- \
		unshare --mount sh -c "mount --bind '$T/libruby-copy.so' '$lib' &&
			exec ruby -e '200.times { [1].map { 2 } }'"
	# sp-record's status is the command's: say whose it was
	[ "$status" = 0 ] || fail "status $status: $stderr"
	run -0 sp-decode "$T/ns.sp"
	dec=$output
	run -0 jq -r 'select(.type == "span_start" and .klass == "Array") | .method' <<<"$dec"
	[ "$(grep -cx map <<<"$output")" -ge 200 ] || fail "Array#map spans: $(grep -cx map <<<"$output")"
}

needs_timens() {
	require_root
	require_cmd unshare util-linux
	[ -x /usr/bin/python3 ] || skip "needs Debian's python3"
	unshare --time --monotonic 1 --fork true 2>/dev/null ||
		skip "unshare cannot make time namespaces here (Linux 5.6, CONFIG_TIME_NS)"
}

# A Python of f calls around a 0.2 s sleep, in main(): its span ring marks
# (the hook's stamps, read from its own clock) in $T/tn.py.
timens_py() {
	cat > "$T/tn.py" <<-'EOF'
	import time
	def f(i): return i * 2
	def main():
	    for i in range(2000): f(i)
	    time.sleep(0.2)
	    for i in range(2000): f(i)
	main()
	EOF
}

# The spool $1 of tn.py: 4000 spans of f, all in main()'s, which lasts the
# sleep and a little more, within the lifetime of the python process, on
# the clock of the spool's own records (an offset left in would put them
# hours away, or drop them as from before the recording).
assert_timens_spans() {
	local py main n
	sp-decode "$1" > "$T/tn.jsonl"
	py=$(jq -r 'select(.type == "process" and .comm == "python3") | .time' "$T/tn.jsonl" | head -1)
	[ -n "$py" ] || fail "no python3 process in $1"
	main=$(jq -r 'select((.type == "span_start" or .type == "span_stop") and .method == "main") | .time' "$T/tn.jsonl" | tr '\n' ' ')
	read -r ms me <<<"$main"
	[ -n "$me" ] || fail "main's span: '$main'"
	[ "$ms" -gt "$py" ] && [ "$ms" -lt $((py + 20000000000)) ] && [ "$me" -gt $((ms + 200000000)) ] && [ "$me" -lt $((ms + 20000000000)) ] ||
		fail "main from $ms to $me, python3 recorded at $py"
	n=$(jq -r --argjson s "$ms" --argjson e "$me" 'select(.type == "span_start" and .method == "f" and .time > $s and .time < $e) | .time' "$T/tn.jsonl" | wc -l)
	[ "$n" = 4000 ] || fail "$n spans of f in main's"
}

@test "containers: a Python in a time namespace with shifted clocks: its span ring marks are placed at their times (sp-record --)" {
	needs_timens
	timens_py
	local off
	# a negative offset must leave the shifted clock above 0
	for off in 3600 -60; do
		sp-record -v --spans=python --no-samples -o "$T/tn.sp" -- unshare --time \
			--monotonic $off --fork /usr/bin/python3 "$T/tn.py" 2> "$T/err" ||
			fail "offset $off: $(cat "$T/err")"
		grep -q "span rings: 1 read;.* 0 given up" "$T/err" || fail "offset $off: $(cat "$T/err")"
		assert_timens_spans "$T/tn.sp"
	done
}

@test "containers: sp-record -p of a Python in a time namespace with shifted clocks: its span ring, announced before, is read at its times" {
	needs_timens
	local go=$T/go py n
	cat > "$T/late.py" <<-'EOF'
	import os, sys, time
	def f(): return 1
	def main():
	    open(sys.argv[1], "w").close()
	    while not os.path.exists(sys.argv[2]):
	        f()
	        time.sleep(0.001)
	main()
	EOF
	unshare --time --monotonic 3600 --boottime 3600 --fork --kill-child env \
		PYTHONPATH="$SP_BIN/../runtime/python" STACKPULSE_SPAN_RING=1 \
		/usr/bin/python3 "$T/late.py" "$T/ready" "$go" &
	BGPIDS=$!
	for n in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
	[ -e "$T/ready" ] || fail "late.py did not start"
	py=$(pgrep -P "$BGPIDS" -x python3)
	[ -n "$py" ] || fail "no python3 under unshare"
	BGPIDS="$BGPIDS $py"
	sp-record -v --spans=auto --no-samples -p "$py" -o "$T/tn.sp" 2> "$T/err" &
	rec=$!
	BGPIDS="$BGPIDS $rec"
	# its spans flow (the spool holds one of f), then a second more of them
	for n in $(seq 300); do
		sp-decode "$T/tn.sp" 2>/dev/null | jq -r 'select(.type == "span_start") | .method' 2>/dev/null |
			grep -qx f && break
		sleep 0.1
	done
	sleep 1
	touch "$go"
	wait "$rec" || fail "$(cat "$T/err")"
	grep -q "span rings: 1 read;.* 0 given up" "$T/err" || fail "$(cat "$T/err")"
	sp-decode "$T/tn.sp" > "$T/tn.jsonl"
	start=$(jq -r 'select(.type == "header") | .start_mono_ns' "$T/tn.jsonl")
	end=$(jq -r 'select(.type == "end") | .time' "$T/tn.jsonl")
	# f every millisecond or so for the 1.5 s, each within the recording
	n=$(jq -r --argjson s "$start" --argjson e "$end" 'select(.type == "span_start" and .method == "f" and .time >= $s and .time <= $e) | .time' "$T/tn.jsonl" | wc -l)
	[ "$n" -gt 200 ] || fail "$n spans of f within the recording: $(cat "$T/err")"
	run -0 jq -r 'select(.type == "span_start" and .method == "f") | .time' "$T/tn.jsonl"
	[ "${#lines[@]}" = "$n" ] || fail "$(( ${#lines[@]} - n )) spans of f outside the recording"
}

@test "containers: sp-record in a time namespace of its own: samples, events, process starts and span ring marks on the kernel's clocks" {
	needs_timens
	timens_py
	local up0 up1 start
	up0=$(awk '{ printf "%.0f", $1 * 1e9 }' /proc/uptime)
	unshare --time --monotonic 3600 --boottime 7200 --fork sp-record -v --spans=python \
		-o "$T/tn.sp" -- /usr/bin/python3 "$T/tn.py" 2> "$T/err" || fail "$(cat "$T/err")"
	up1=$(awk '{ printf "%.0f", $1 * 1e9 }' /proc/uptime)
	grep -q "span rings: 1 read;.* 0 given up" "$T/err" || fail "$(cat "$T/err")"
	! grep -q "warning" "$T/err" || fail "$(cat "$T/err")"
	assert_timens_spans "$T/tn.sp"
	# the samples within main's span too (perf's clock, and the header's)
	run -0 jq -r 'select(.type == "sample") | .time' "$T/tn.jsonl"
	[ "${#lines[@]}" -gt 10 ] || fail "${#lines[@]} samples"
	start=$(jq -r 'select(.type == "header") | .start_mono_ns' "$T/tn.jsonl")
	[ "$(jq -r --argjson s "$start" 'select(.type == "sample" and (.time < $s or .time > $s + 60000000000))' "$T/tn.jsonl" | wc -l)" = 0 ] ||
		fail "samples outside the recording, which began at $start"
	# python3's start on the host's boot clock (not 2 hours on), as the
	# kernel gave it
	start=$(jq -r 'select(.type == "process" and .comm == "python3") | .start_boot_ns' "$T/tn.jsonl" | head -1)
	[ "$start" -ge $((up0 - 1000000000)) ] && [ "$start" -le "$up1" ] ||
		fail "python3 started at $start ns after boot, between $up0 and $up1"
	# and as /proc gives it (a process running before the recording, -p):
	# on the host's boot clock too, its identity not taken for a reused pid's
	up0=$(awk '{ printf "%.0f", $1 * 1e9 }' /proc/uptime)
	sleep 30 &
	BGPIDS=$!
	sleep 0.1
	up1=$(awk '{ printf "%.0f", $1 * 1e9 }' /proc/uptime)
	unshare --time --monotonic 3600 --boottime 7200 --fork sp-record -v --no-samples \
		-p "$BGPIDS" -d 0.5 -o "$T/tn2.sp" 2> "$T/err" || fail "$(cat "$T/err")"
	! grep -q "warning" "$T/err" || fail "$(cat "$T/err")"
	start=$(sp-decode "$T/tn2.sp" | jq -r --argjson p "$BGPIDS" 'select(.type == "process" and .pid == $p) | .start_boot_ns' | head -1)
	[ "$start" -ge $((up0 - 10000000)) ] && [ "$start" -le "$up1" ] ||
		fail "sleep started at $start ns after boot, between $up0 and $up1"
}

@test "containers: a spool written before the identity fields decodes without them" {
	run --separate-stderr -1 sp-decode "$FIXTURES/before-identity.sp"
	rec=$(printf '%s\n' "$output" | jq -c 'select(.type=="process" and .pid==1200)')
	assert_equal "$(jq -c '[.nspid, .pid_ns, .cgroup, .container]' <<<"$rec")" '[null,null,null,null]'
	assert_equal "$(jq -r .comm <<<"$rec")" app
	# nor its threads their namespace tid
	rec=$(printf '%s\n' "$output" | jq -c 'select(.type=="thread" and .tid==1201)')
	assert_equal "$(jq -c '[.nstid, .name]' <<<"$rec")" '[null,"worker"]'
}

# A cgroup v2 directory named as a runtime names its containers: the layout
# is real (the kernel's /proc/PID/cgroup says it), the runtime is not.
make_cgroup() {
	require_root
	M=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	[ -n "$M" ] || skip "no cgroup v2 hierarchy mounted"
	CG=$M/sp-test-$$.slice/$1
	mkdir -p "$CG" || skip "cannot make a cgroup under $M"
	CGPATH=${CG#"$M"}
}

rm_cgroup() {
	[ -n "${CG:-}" ] || return 0
	rmdir "$CG" "${CG%/*}" 2>/dev/null || true
}

@test "containers: a process in a Docker-named cgroup is labelled with its container" {
	id=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
	make_cgroup "docker-$id.scope"
	run --separate-stderr -0 sp-record -o "$T/cg.sp" -- \
		sh -c "echo \$\$ > $CG/cgroup.procs && exec sleep 1"
	rm_cgroup
	run -0 sp-decode "$T/cg.sp"
	rec=$(printf '%s\n' "$output" | jq -c 'select(.type=="process" and .comm=="sleep")')
	assert_equal "$(jq -r .cgroup <<<"$rec")" "$CGPATH"
	assert_equal "$(jq -r .runtime <<<"$rec")" docker
	assert_equal "$(jq -r .container <<<"$rec")" "$id"
	run -0 sp-tree "$T/cg.sp"
	assert_output --partial "comm=sleep container=docker:${id:0:12} "
}

@test "containers: a process in a service's cgroup is labelled with the service" {
	make_cgroup "sp-test-$$.service"
	run --separate-stderr -0 sp-record -o "$T/svc.sp" -- \
		sh -c "echo \$\$ > $CG/cgroup.procs && exec sleep 1"
	rm_cgroup
	run -0 sp-decode "$T/svc.sp"
	rec=$(printf '%s\n' "$output" | jq -c 'select(.type=="process" and .comm=="sleep")')
	assert_equal "$(jq -r .runtime <<<"$rec")" systemd
	assert_equal "$(jq -r .container <<<"$rec")" "sp-test-$$.service"
	assert_equal "$(jq -r .pod <<<"$rec")" null
}

# ---- a real container runtime: podman ----
#
# Podman as this machine allows it (docs/containers.md): rootful, runc (crun
# refuses a hybrid cgroup hierarchy: "drop all controllers from cgroupv2"),
# limits no higher than ours (without CAP_SYS_RESOURCE crun and runc cannot
# raise them), no network. The image is imported from a root filesystem
# made here: sh, cat, sleep, ln, python3.11 and ruby with their standard
# libraries, their shared libraries, and spin (tests/fixtures/containers/spin.c), compiled into
# that root only.
needs_podman() {
	require_root
	require_cmd podman "apt-get install podman runc"
	require_cmd gcc
	PODMAN=(podman)
	if command -v runc >/dev/null; then
		PODMAN+=(--runtime runc)
	fi
	IMAGE=localhost/sp-test-$BATS_ROOT_PID:latest
	if [ ! -e "$BATS_FILE_TMPDIR/image.ok" ]; then
		[ -e "$BATS_FILE_TMPDIR/image.failed" ] && skip "$(cat "$BATS_FILE_TMPDIR/image.failed")"
		build_image
	fi
	mkdir -p "$T/out"
}

copy_with_libs() {
	local f l
	for f in "$@"; do
		mkdir -p "$R$(dirname "$f")"
		cp -L "$f" "$R$f"
		for l in $(ldd "$f" | grep -o '/[^ ]*'); do
			[ -e "$R$l" ] && continue
			mkdir -p "$R$(dirname "$l")"
			cp -L "$l" "$R$l"
		done
	done
}

build_image() {
	build_image_root
	podman_import
}

# The image's root filesystem, in $BATS_FILE_TMPDIR/root.
build_image_root() {
	local py rb d
	R=$BATS_FILE_TMPDIR/root
	mkdir -p "$R/app" "$R/tmp" "$R/out" "$R/etc"
	chmod 1777 "$R/tmp"
	copy_with_libs /bin/sh /bin/cat /bin/sleep /bin/ln
	py=$(readlink -f /usr/bin/python3)
	if [ -x "$py" ] && [ -d /usr/lib/python3.11 ]; then
		copy_with_libs "$py"
		ln -s "$py" "$R/usr/bin/python3"
		tar -C / --exclude='test' --exclude='__pycache__' --exclude='idlelib' \
			--exclude='tkinter' --exclude='ensurepip' -c usr/lib/python3.11 | tar -C "$R" -x
	fi
	rb=$(readlink -f /usr/bin/ruby)
	if [ -x "$rb" ]; then
		copy_with_libs "$rb"
		[ -e "$R/usr/bin/ruby" ] || ln -s "$rb" "$R/usr/bin/ruby"
		# its standard library, both halves, as `ruby -e 'puts $LOAD_PATH'` says
		for d in $(ruby -e 'puts RbConfig::CONFIG.values_at("rubylibdir", "archdir")'); do
			[ -d "$d" ] && tar -C / -c "${d#/}" | tar -C "$R" -x
		done
	fi
	cp "$FIXTURES/work.py" "$FIXTURES/work.rb" "$R/app/"
	gcc -O1 -g -fno-omit-frame-pointer -o "$R/app/spin" "$FIXTURES/spin.c"
}

podman_import() {
	R=$BATS_FILE_TMPDIR/root
	# podman's overlay storage; vfs where overlay cannot be mounted
	if ! tar -C "$R" -c . | podman import - "$IMAGE" >/dev/null 2>"$BATS_FILE_TMPDIR/import.err"; then
		PODMAN+=(--storage-driver vfs)
		tar -C "$R" -c . | "${PODMAN[@]}" import - "$IMAGE" >/dev/null 2>&1 || {
			echo "podman cannot import an image here: $(head -c 300 "$BATS_FILE_TMPDIR/import.err")" \
				> "$BATS_FILE_TMPDIR/image.failed"
			skip "$(cat "$BATS_FILE_TMPDIR/image.failed")"
		}
	fi
	printf '%s\n' "${PODMAN[@]}" > "$BATS_FILE_TMPDIR/image.ok"
}

teardown_file() {
	if [ -e "$BATS_FILE_TMPDIR/docker.ok" ]; then
		docker rmi -f "sp-test-$BATS_ROOT_PID:latest" >/dev/null 2>&1 || true
	fi
	# a dockerd the tests started: stopped (its pid, not by name)
	if [ -s "$BATS_FILE_TMPDIR/dockerd.pid" ]; then
		kill "$(cat "$BATS_FILE_TMPDIR/dockerd.pid")" 2>/dev/null || true
	fi
	[ -e "$BATS_FILE_TMPDIR/image.ok" ] || return 0
	mapfile -t PODMAN < "$BATS_FILE_TMPDIR/image.ok"
	"${PODMAN[@]}" rmi -f "localhost/sp-test-$BATS_ROOT_PID:latest" >/dev/null 2>&1 || true
}

# Start a container named $1 running the rest; sets CID (its full id) and
# CPID (its first process, as the host sees it). CONTAINER_ARGS: more
# options of podman run.
start_container() {
	local name=$1
	shift
	[ -e "$BATS_FILE_TMPDIR/image.ok" ] && mapfile -t PODMAN < "$BATS_FILE_TMPDIR/image.ok"
	CID=$("${PODMAN[@]}" run --rm -d --network none --ulimit nofile=1024:1024 \
		--ulimit nproc=4096:4096 -v "$T/out:/out" ${CONTAINER_ARGS[@]+"${CONTAINER_ARGS[@]}"} \
		--name "$name" "$IMAGE" "$@") ||
		fail "podman run failed: $CID"
	CONTAINERS="${CONTAINERS:-} $name"
	CPID=$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' "$name")
}

stop_containers() {
	local c
	for c in ${CONTAINERS:-}; do
		"${PODMAN[@]}" rm -f -t 0 "$c" >/dev/null 2>&1 || true
	done
}

wait_file() {
	for _ in $(seq 100); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 did not appear"
}

@test "containers: podman: --container records only the container while the host runs too" {
	needs_podman
	start_container "sp-test-$$-a" /app/spin /out/nspid
	wait_file "$T/out/nspid"
	sh -c 'while :; do :; done' &
	BGPIDS=$!
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-a" -d 1 -o "$T/c.sp"
	sp-decode "$T/c.sp" > "$T/c.jsonl"
	# samples of the container's process only, none of the host's loop
	run -0 jq -s -c '[.[] | select(.type=="sample") | .pid] | unique' "$T/c.jsonl"
	assert_output "[$CPID]"
	# its record: the container podman gave, the pid it sees itself as
	rec=$(jq -c "select(.type==\"process\" and .pid==$CPID)" "$T/c.jsonl")
	assert_equal "$(jq -r .container <<<"$rec")" "$CID"
	assert_equal "$(jq -r .runtime <<<"$rec")" podman
	assert_equal "$(jq .nspid <<<"$rec")" "$(awk '{ print $NF }' "$T/out/nspid")"
	assert_equal "$(jq .pid_ns <<<"$rec")" "$(stat -L -c %i /proc/$CPID/ns/pid)"
	run -0 jq -r "select(.type==\"process\" and .pid==$BGPIDS) | .pid" "$T/c.jsonl"
	assert_output ""
	# by a prefix of its id, as podman ps shows it
	run --separate-stderr -0 sp-record -a --container="${CID:0:12}" -d 0.5 -o "$T/p.sp"
	run -0 sp-decode "$T/p.sp"
	run -0 jq -s -c '[.[] | select(.type=="sample") | .pid] | unique' <<<"$output"
	assert_output "[$CPID]"
	stop_containers
}

@test "containers: podman: --container keeps the kernel events of other processes out" {
	needs_podman
	start_container "sp-test-$$-b" /bin/sleep 60
	# -a with a command: the machine until the command ends, which runs
	# a cat in the container and one on the host
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-b" --no-samples \
		--events=proc,file -o "$T/e.sp" -- sh -c \
		"${PODMAN[*]} exec sp-test-$$-b /bin/cat /etc/hostname > $T/out/inside &&
		 cat /etc/hostname > $T/out/host"
	sp-decode "$T/e.sp" > "$T/e.jsonl"
	# the cat run in the container: its exec and its open of /etc/hostname,
	# as the container names it
	run -0 jq -r 'select(.type=="event" and .event=="proc_exec") | .filename // .path' "$T/e.jsonl"
	assert_output --partial /bin/cat
	run -0 jq -r 'select(.type=="event" and .event=="path_open" and .path=="/etc/hostname") | .pid' \
		"$T/e.jsonl"
	[ -n "$output" ]
	# every event's process is in the container's cgroup
	run -0 jq -r 'select(.type=="process") | .cgroup // "none"' "$T/e.jsonl"
	for c in "${lines[@]}"; do
		[ "$c" = none ] || [[ $c == *"$CID"* ]] || fail "a process outside the container: $c"
	done
	# the host's cat is not there: no process record names it outside
	run -0 jq -r "select(.type==\"event\" and .event==\"proc_exec\") | .pid" "$T/e.jsonl"
	for p in "${lines[@]}"; do
		run -0 jq -r "select(.type==\"process\" and .pid==$p) | .cgroup // \"none\"" "$T/e.jsonl"
		[ "$output" = none ] || [[ $output == *"$CID"* ]] || fail "exec of pid $p outside"
	done
	stop_containers
}

@test "containers: --container and --cgroup wait for what does not exist yet and say so, --cgroup needs -a" {
	require_root
	run --separate-stderr -0 sp-record -a --container=sp-no-such-container-$$ \
		--cgroup=/sp-no-such-cgroup-$$ -d 0.5 -o "$T/n.sp"
	[[ $stderr == *"--container: no running process belongs to a container 'sp-no-such-container-$$' (an id prefix, a systemd unit, or a name podman or docker knows) yet: its processes are recorded once it starts"* ]]
	[[ $stderr == *"--cgroup: '/sp-no-such-cgroup-$$' does not exist (yet): its processes are recorded once it is made"* ]]
	[[ $stderr == *"--container 'sp-no-such-container-$$' never appeared while recording: nothing of it was recorded"* ]]
	[[ $stderr == *"--cgroup '/sp-no-such-cgroup-$$' never appeared while recording"* ]]
	# the rest of the machine is not recorded meanwhile
	run -0 sp-decode "$T/n.sp"
	run -0 jq -r 'select(.type=="sample" or .type=="process") | .type' <<<"$output"
	assert_output ""
	run --separate-stderr -64 sp-record --cgroup=/ -o "$T/n.sp" -- true
	assert_output ""
	[[ $stderr == *"--cgroup and --container go with -a"* ]]
}

@test "containers: a cgroup made after the recording began is followed by --cgroup" {
	make_cgroup "sp-test-late-$$"
	rmdir "$CG"
	# the cgroup is made, a shell moved in, after sp-record has started;
	# the same loop beside it on the host
	cat > "$T/late.sh" <<-EOS
	sleep 0.5
	mkdir $CG
	sh -c 'echo \$\$ > $CG/cgroup.procs; exec timeout 1.5 sh -c "while :; do :; done"' &
	timeout 1.5 sh -c 'while :; do :; done' &
	wait
	EOS
	run --separate-stderr -0 sp-record -a --cgroup="$CGPATH" -o "$T/late.sp" -- sh "$T/late.sh"
	rm_cgroup
	[[ $stderr == *"'$CGPATH' does not exist (yet)"* ]]
	sp-decode "$T/late.sp" > "$T/late.jsonl"
	# samples: of the processes in the cgroup only (the loop's, and its
	# timeout's), not of the loop on the host
	run -0 jq -s -r '[.[] | select(.type=="sample") | .pid] | unique | .[]' "$T/late.jsonl"
	[ "${#lines[@]}" -ge 1 ]
	for pid in "${lines[@]}"; do
		run -0 jq -r "select(.type==\"process\" and .pid==$pid) | .cgroup" "$T/late.jsonl"
		assert_equal "$(sort -u <<<"$output")" "$CGPATH"
	done
	run -0 jq -r 'select(.type=="process" and .comm=="sh") | .cgroup' "$T/late.jsonl"
	assert_equal "$(sort -u <<<"$output")" "$CGPATH"
}

@test "containers: --cgroup --off-cpu records the waits of the cgroup's processes, not the host's beside them" {
	make_cgroup "sp-test-offcpu-$$"
	# -a with a command: the same sleep in the cgroup and on the host
	cat > "$T/oc.sh" <<-EOS
	sh -c 'echo \$\$ > $CG/cgroup.procs; echo \$\$ > $T/inpid; exec sleep 1' &
	sh -c 'echo \$\$ > $T/hostpid; exec sleep 1' &
	wait
	EOS
	run --separate-stderr -0 sp-record -a --cgroup="$CGPATH" --off-cpu -o "$T/oc.sp" -- sh "$T/oc.sh"
	rm_cgroup
	[[ $stderr == *"switch-outs of threads outside the cgroups left out"* ]]
	sp-decode "$T/oc.sp" > "$T/oc.jsonl"
	grep -q 'off-cpu=context-switch.*cgroups=kernel' "$T/oc.jsonl"
	inpid=$(cat "$T/inpid")
	hostpid=$(cat "$T/hostpid")
	# the sleep in the cgroup blocked and was recorded, the host's was not
	run -0 jq -r "select(.type==\"sample\" and .kind==\"offcpu\" and .pid==$inpid) | .weight" \
		"$T/oc.jsonl"
	[ "${#lines[@]}" -ge 1 ] || fail "no wait of the sleep in the cgroup"
	run -0 jq -r "select(.type==\"sample\" and .kind==\"offcpu\" and .pid==$hostpid) | .pid" \
		"$T/oc.jsonl"
	assert_output ""
	# every wait recorded is of a process in the cgroup
	run -0 jq -s -r '[.[] | select(.type=="sample" and .kind=="offcpu") | .pid] | unique | .[]' \
		"$T/oc.jsonl"
	for pid in "${lines[@]}"; do
		run -0 jq -r "select(.type==\"process\" and .pid==$pid) | .cgroup" "$T/oc.jsonl"
		assert_equal "$(sort -u <<<"$output")" "$CGPATH"
	done
}

# A loop of short sleeps in the test's cgroup and the same loop outside it,
# recorded with -a --cgroup --off-cpu and the options given ($@); the
# spool decoded into $T/k.jsonl, sp-record's stderr in $stderr.
offcpu_loops() {
	make_cgroup "sp-test-kfilter-$$"
	sh -c "echo \$\$ > $CG/cgroup.procs; exec sh -c 'while :; do sleep 0.05; done'" &
	inpid=$!
	sh -c 'while :; do sleep 0.05; done' &
	hostpid=$!
	BGPIDS="$inpid $hostpid"
	run --separate-stderr -0 sp-record -a --cgroup="$CGPATH" --off-cpu -d 1.5 "$@" \
		-o "$T/k.sp"
	kill $BGPIDS
	wait $BGPIDS 2>/dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ -n "$(cat "$CG/cgroup.procs")" ] || break	# (its size is always 0)
		sleep 0.1	# the loop's last sleep
	done
	rm_cgroup
	sp-decode "$T/k.sp" > "$T/k.jsonl"
}

# Only the loop in the cgroup (its shell, its sleeps) has waits; the
# other's switch-outs were left out, by the kernel when $1 is "kernel".
check_offcpu_loops() {
	local pid left bykernel
	run -0 jq -r "select(.type==\"sample\" and .kind==\"offcpu\" and .pid==$inpid) | .weight" \
		"$T/k.jsonl"
	[ "${#lines[@]}" -ge 1 ] || fail "no wait of the loop in the cgroup"
	run -0 jq -s -r '[.[] | select(.type=="sample" and .kind=="offcpu") | .pid] | unique | .[]' \
		"$T/k.jsonl"
	for pid in "${lines[@]}"; do
		[ "$pid" != "$hostpid" ] || fail "a wait of the loop outside the cgroup"
		run -0 jq -r "select(.type==\"process\" and .pid==$pid) | .cgroup" "$T/k.jsonl"
		assert_equal "$(sort -u <<<"$output")" "$CGPATH"
	done
	[[ $stderr =~ ([0-9]+)\ switch-outs\ of\ threads\ outside\ the\ cgroups\ left\ out\ \(([0-9]+)\ by\ the\ kernel\) ]] ||
		fail "no count of what was left out: $stderr"
	left=${BASH_REMATCH[1]} bykernel=${BASH_REMATCH[2]}
	[ "$left" -ge 1 ] || fail "nothing left out, with a loop outside the cgroup"
	if [ "$1" = kernel ]; then
		[ "$bykernel" -ge 1 ] || fail "the kernel left nothing out"
	else
		assert_equal "$bykernel" 0
	fi
}

@test "containers: --cgroup --off-cpu leaves the other cgroups' switch-outs out in the kernel" {
	offcpu_loops
	grep -q 'off-cpu=context-switch.*cgroups=kernel' "$T/k.jsonl" ||
		fail "the header does not say cgroups=kernel"
	check_offcpu_loops kernel
}

@test "containers: --cgroup --off-cpu --interp=none filters in the kernel with its own program" {
	offcpu_loops --interp=none -v
	grep -q 'off-cpu=context-switch.*cgroups=kernel' "$T/k.jsonl" ||
		fail "the header does not say cgroups=kernel"
	[[ $stderr == *"left out in the kernel, by the cgroup filter's program"* ]] ||
		fail "not our own program: $stderr"
	check_offcpu_loops kernel
}

@test "containers: --cgroup --off-cpu falls back to the test in user space, and says so" {
	SP_OFFCPU_CGROUPS=sample offcpu_loops
	grep -q 'off-cpu=context-switch.*cgroups=sample' "$T/k.jsonl" ||
		fail "the header does not say cgroups=sample"
	check_offcpu_loops sample
}

@test "containers: --cgroup --off-cpu follows a cgroup made after the recording began" {
	make_cgroup "sp-test-offlate-$$"
	rmdir "$CG"
	cat > "$T/ol.sh" <<-EOS
	sleep 0.5
	mkdir $CG
	sh -c 'echo \$\$ > $CG/cgroup.procs; echo \$\$ > $T/inpid; exec sh -c "for i in 1 2 3 4 5 6 7 8; do sleep 0.2; done"' &
	sh -c 'echo \$\$ > $T/hostpid; exec sh -c "for i in 1 2 3 4 5 6 7 8; do sleep 0.2; done"' &
	wait
	EOS
	run --separate-stderr -0 sp-record -a --cgroup="$CGPATH" --off-cpu -o "$T/ol.sp" -- sh "$T/ol.sh"
	rm_cgroup
	sp-decode "$T/ol.sp" > "$T/ol.jsonl"
	# the loop in the cgroup waits for its sleeps: recorded once the
	# cgroup was found; the same loop on the host is not
	run -0 jq -r "select(.type==\"sample\" and .kind==\"offcpu\" and .pid==$(cat "$T/inpid")) | .pid" \
		"$T/ol.jsonl"
	[ "${#lines[@]}" -ge 1 ] || fail "no wait of the loop in the cgroup"
	run -0 jq -s -r '[.[] | select(.type=="sample" and .kind=="offcpu") | .pid] | unique | .[]' \
		"$T/ol.jsonl"
	for pid in "${lines[@]}"; do
		[ "$pid" != "$(cat "$T/hostpid")" ] || fail "a wait of the host's loop"
		run -0 jq -r "select(.type==\"process\" and .pid==$pid) | .cgroup" "$T/ol.jsonl"
		assert_equal "$(sort -u <<<"$output")" "$CGPATH"
	done
}

@test "containers: podman: --container --off-cpu records the waits of the container's processes only" {
	needs_podman
	start_container "sp-test-$$-o" /bin/sh -c 'while :; do /bin/sleep 0.2; done'
	# the same loop on the host
	sh -c 'while :; do sleep 0.2; done' &
	BGPIDS=$!
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-o" --off-cpu -d 1.5 \
		-o "$T/o.sp"
	sp-decode "$T/o.sp" > "$T/o.jsonl"
	run -0 jq -s -r '[.[] | select(.type=="sample" and .kind=="offcpu") | .pid] | unique | .[]' \
		"$T/o.jsonl"
	[ "${#lines[@]}" -ge 1 ] || fail "no wait recorded in the container"
	pids=("${lines[@]}")
	for pid in "${pids[@]}"; do
		run -0 jq -r "select(.type==\"process\" and .pid==$pid) | .container" "$T/o.jsonl"
		assert_equal "$(sort -u <<<"$output")" "$CID"
	done
	# the container's shell waits for its sleeps, as the host's would
	[[ " ${pids[*]} " == *" $CPID "* ]] || fail "no wait of the container's shell $CPID: ${pids[*]}"
	[[ " ${pids[*]} " != *" $BGPIDS "* ]] || fail "a wait of the host's shell $BGPIDS"
	stop_containers
}

@test "containers: podman: a container started after the recording began is followed by --container" {
	needs_podman
	# -a with a command: it starts the container once sp-record runs, and
	# runs a loop on the host beside it
	cat > "$T/later.sh" <<-EOS
	sleep 0.5
	${PODMAN[*]} run --rm -d --network none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
		-v $T/out:/out --name sp-test-$$-l $IMAGE /usr/bin/python3 /app/work.py /out/nspid > $T/cid
	while [ ! -s $T/out/nspid ]; do sleep 0.1; done
	timeout 1.5 sh -c 'while :; do :; done'
	${PODMAN[*]} exec sp-test-$$-l /bin/cat /etc/hostname > /dev/null
	EOS
	CONTAINERS="sp-test-$$-l"
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-l" --events=proc \
		-o "$T/l.sp" -- sh "$T/later.sh"
	[[ $stderr == *"no running process belongs to a container 'sp-test-$$-l'"*"yet"* ]]
	CPID=$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' "sp-test-$$-l")
	sp-decode "$T/l.sp" > "$T/l.jsonl"
	# samples of the container's Python only, with its functions
	run -0 jq -s -r '[.[] | select(.type=="sample") | .pid] | unique | .[]' "$T/l.jsonl"
	[[ " ${lines[*]} " == *" $CPID "* ]]
	for pid in "${lines[@]}"; do
		# every sampled pid has a process record: the runtime's helpers
		# too, one that lived a few ms and was gone before it was read
		# by what the kernel's identity map kept (docs/containers.md)
		run -0 jq -r "select(.type==\"process\" and .pid==$pid) | .container // \"none\"" \
			"$T/l.jsonl"
		[ -n "$output" ] || fail "sampled pid $pid has no process record"
		# one the map had lost is recorded by its pid alone, without
		# identity: no container to compare
		ids=$(grep -v '^none$' <<<"$output" || true)
		[ -z "$ids" ] || assert_equal "$(sort -u <<<"$ids")" "$(cat "$T/cid")"
	done
	# no process defined again by a sample read after its end (one taken
	# no later than the end is the ended process's)
	run -0 jq -s '[foreach .[] as $r ({}; if $r.type == "process_end" and $r.flags == null
		then .[$r.pid | tostring] = $r.time else . end;
		if $r.type == "process" and (.[$r.pid | tostring] // -1) >= $r.time then $r
		else empty end)] | length' "$T/l.jsonl"
	assert_output 0
	rec=$(jq -c "select(.type==\"process\" and .pid==$CPID)" "$T/l.jsonl" | tail -n 1)
	assert_equal "$(jq -r .container <<<"$rec")" "$(cat "$T/cid")"
	assert_equal "$(jq .nspid <<<"$rec")" "$(awk '{ print $NF }' "$T/out/nspid")"
	run --separate-stderr -0 sp-symbolize "$T/l.sp" -o "$T/l.sym"
	run -0 sp-flame --format=folded "$T/l.sym"
	assert_output --regexp "<module>;container_py_work"
	# the kernel events: the exec of cat in the container, none of the host's
	run -0 jq -r 'select(.type=="event" and .event=="proc_exec") | .filename // .path' "$T/l.jsonl"
	assert_output --partial /bin/cat
	refute_output --partial timeout
	stop_containers
}

@test "containers: podman: a container started later is recorded from its first exec, and so is the next one of its name" {
	needs_podman
	# Each container's first program is spin itself, exec'd by the
	# runtime: its exec is recorded only if the container's cgroup was
	# followed before it ran. The second container takes the name the
	# first one had, once the first is removed.
	local name=sp-test-$$-r
	cat > "$T/again.sh" <<-EOS
	run() {
		${PODMAN[*]} run --rm -d --network none --ulimit nofile=1024:1024 \
			--ulimit nproc=4096:4096 -v $T/out:/out --name $name $IMAGE /app/spin /out/\$1 > $T/cid\$1
		while [ ! -s $T/out/\$1 ]; do sleep 0.1; done
		${PODMAN[*]} inspect -f '{{.State.Pid}}' $name > $T/pid\$1
		sleep 0.5
		${PODMAN[*]} rm -f -t 0 $name > /dev/null
	}
	run 1
	run 2
	EOS
	CONTAINERS=$name
	run --separate-stderr -0 sp-record -a --container="$name" --events=proc -o "$T/r.sp" -- \
		sh "$T/again.sh"
	[[ $stderr != *"never appeared"* ]]
	sp-decode "$T/r.sp" > "$T/r.jsonl"
	[ "$(cat "$T/cid1")" != "$(cat "$T/cid2")" ]
	for cn in 1 2; do	# not i: bats' run uses it
		pid=$(cat "$T/pid$cn")
		# the exec that started the container's program, and its samples
		run -0 jq -r "select(.type==\"event\" and .event==\"proc_exec\" and .pid==$pid) | .filename" \
			"$T/r.jsonl"
		assert_output /app/spin
		run -0 jq -r "select(.type==\"process\" and .pid==$pid) | .container" "$T/r.jsonl"
		assert_equal "$(sort -u <<<"$output")" "$(cat "$T/cid$cn")"
		run -0 jq -s "[.[] | select(.type==\"sample\" and .pid==$pid)] | length" "$T/r.jsonl"
		(( output > 0 ))
	done
	# nothing of the host's beside them
	run -0 jq -r 'select(.type=="event" and .event=="proc_exec") | .filename' "$T/r.jsonl"
	refute_output --partial /bin/sleep
	refute_output --partial podman
}

@test "containers: podman: a binary only in the container symbolizes, from its root and from the archive" {
	needs_podman
	start_container "sp-test-$$-s" /app/spin /out/nspid
	wait_file "$T/out/nspid"
	[ ! -e /app/spin ] || skip "/app/spin exists on the host"
	mkdir -m 700 "$T/arch"
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-s" --archive="$T/arch" \
		-d 1 -o "$T/s.sp"
	# the module under the name the container gives it, with its build-id
	# (read through /proc/PID/map_files: the host has no /app/spin)
	bid=$(readelf -n "$BATS_FILE_TMPDIR/root/app/spin" | awk '/Build ID/ { print $3 }')
	run -0 sp-decode "$T/s.sp"
	run -0 jq -r 'select(.type=="module" and .path=="/app/spin") | .build_id' <<<"$output"
	assert_equal "$(sort -u <<<"$output")" "$bid"
	# while it runs: through /proc/PID/root
	run --separate-stderr -0 sp-symbolize "$T/s.sp" -o "$T/s.sym"
	run -0 sp-flame --format=folded "$T/s.sym"
	assert_output --partial "main;container_spin;container_leaf"
	stop_containers
	# once it is gone: from the archive only
	run --separate-stderr sp-symbolize "$T/s.sp" -o "$T/gone.sym"
	[[ $stderr == *"'/app/spin': file not found"* ]]
	run --separate-stderr -0 sp-symbolize --archive="$T/arch" "$T/s.sp" -o "$T/a.sym"
	run -0 sp-flame --format=folded "$T/a.sym"
	assert_output --partial "main;container_spin;container_leaf"
}

@test "containers: podman: the JIT perf map in the container's /tmp under its own pid is read" {
	needs_podman
	start_container "sp-test-$$-j" /app/spin /out/nspid
	wait_file "$T/out/nspid"
	nspid=$(awk '{ print $NF }' "$T/out/nspid")
	# the map is the container's: the host's /tmp has none under either pid
	[ ! -e "/tmp/perf-$nspid.map" ] || skip "/tmp/perf-$nspid.map exists on the host"
	[ ! -e "/tmp/perf-$CPID.map" ]
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-j" -d 1 -o "$T/j.sp"
	run -0 sp-decode "$T/j.sp"
	run -0 jq -r 'select(.type=="jitsym") | "\(.pid) \(.size) \(.name)"' <<<"$output"
	assert_output "$CPID 10 jit_busy_loop"
	# and a sampled frame in that code is named by it
	run --separate-stderr -0 sp-symbolize "$T/j.sp" -o "$T/j.sym"
	run -0 sp-decode "$T/j.sym"
	run -0 jq -r 'select(.type=="symbol" and .func=="jit_busy_loop") | .func' <<<"$output"
	[ -n "$output" ]
	stop_containers
}

@test "containers: podman: a JIT perf map that is a link inside the container is not followed" {
	needs_podman
	# the container's /tmp/perf-1.map points at a host file
	echo "7f0000001000 10 host_secret" > "$T/secret.map"
	# (a process that runs JIT code: the map of one that runs none is not read)
	start_container "sp-test-$$-l" /bin/sh -c \
		"ln -s $T/secret.map /tmp/perf-1.map; exec /app/spin /out/nspid nomap"
	wait_file "$T/out/nspid"
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-l" -d 0.5 -o "$T/l.sp"
	[[ $stderr == *"pid $CPID: JIT perf map '/proc/$CPID/root/tmp/perf-1.map' not read: "* ]]
	run -0 sp-decode "$T/l.sp"
	run -0 jq -r 'select(.type=="jitsym") | .name' <<<"$output"
	assert_output ""
	stop_containers
}

@test "containers: podman: a whole-machine recording by container: sp-flame, sp-tree, pprof and OTLP labels" {
	needs_podman
	start_container "sp-test-$$-f" /app/spin /out/nspid
	wait_file "$T/out/nspid"
	sh -c 'while :; do :; done' &
	BGPIDS=$!
	run --separate-stderr -0 sp-record -a -d 1 -o "$T/all.sp"
	sp-symbolize "$T/all.sp" -o "$T/all.sym" 2>/dev/null
	stop_containers
	# sp-flame: the container's stacks under its label, the host's loop under host
	run -0 sp-flame --by=container,process --format=folded "$T/all.sym"
	assert_output --regexp "(^|
)podman:${CID:0:12};spin-$CPID;[^ ]*container_spin;container_leaf [0-9]+"
	assert_output --regexp "(^|
)host;sh-$BGPIDS;"
	# sp-tree: the container's processes only
	run -0 sp-tree --container="${CID:0:8}" "$T/all.sp"
	assert_output --partial "[PROC pid=$CPID nspid=1 comm=spin container=podman:${CID:0:12} "
	refute_output --partial "pid=$BGPIDS "
	run -0 sp-tree --container="podman:${CID:0:8}" "$T/all.sp"
	assert_output --partial "[PROC pid=$CPID "
	run -0 sp-tree --container="docker:${CID:0:8}" "$T/all.sp"
	refute_output --partial "[PROC"
	# OTLP: the container's resource says which container
	sp-correlate "$T/all.sym" > "$T/all.cor"
	run --separate-stderr -0 sp-export --json --profiles -o "$T/all.json" "$T/all.cor"
	run -0 jq -r ".. | objects | select(has(\"attributes\")) | .attributes
		| select(any(.[]; .key==\"process.pid\" and .value.intValue==\"$CPID\"))
		| (.[] | select(.key==\"container.id\" or .key==\"container.runtime\")
		   | \"\(.key)=\(.value.stringValue)\")" "$T/all.json"
	assert_output --partial "container.id=$CID"
	assert_output --partial "container.runtime=podman"
	# pprof: a container label on the container's samples (Go's pprof reads it)
	command -v go >/dev/null || skip "needs go for go tool pprof"
	run --separate-stderr -0 sp-flame --pprof -o "$T/all.pb.gz" "$T/all.sym"
	run -0 go tool pprof -tags "$T/all.pb.gz"
	assert_output --partial "podman:$CID"
}

@test "containers: podman: a Python program in the container: its samples symbolize from the container's files" {
	needs_podman
	[ -x "$BATS_FILE_TMPDIR/root/usr/bin/python3" ] || skip "no python3.11 to put in the image"
	start_container "sp-test-$$-p" /usr/bin/python3 /app/work.py /out/nspid
	wait_file "$T/out/nspid"
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-p" -d 1 -o "$T/py.sp"
	sp-decode "$T/py.sp" > "$T/py.jsonl"
	rec=$(jq -c "select(.type==\"process\" and .pid==$CPID)" "$T/py.jsonl")
	assert_equal "$(jq .nspid <<<"$rec")" "$(awk '{ print $NF }' "$T/out/nspid")"
	assert_equal "$(jq -r .container <<<"$rec")" "$CID"
	# the interpreter's module: the container's file, its build-id read from it
	py=$(readlink -f /usr/bin/python3)
	bid=$(readelf -n "$BATS_FILE_TMPDIR/root$py" | awk '/Build ID/ { print $3 }')
	run -0 jq -r "select(.type==\"module\" and .pid==$CPID and .path==\"$py\") | .build_id" \
		"$T/py.jsonl"
	assert_equal "$(sort -u <<<"$output")" "$bid"
	run --separate-stderr -0 sp-symbolize "$T/py.sp" -o "$T/py.sym"
	run -0 sp-flame --format=folded "$T/py.sym"
	assert_output --regexp "Py_RunMain;[^ ]*PyEval_EvalCode;<module>;container_py_work"
	stop_containers
}

# The interpreter's thread state holds the thread's id in the container's
# pid namespace (gettid() there), not the host's.
@test "containers: podman: a Python program in the container: its functions in samples, with -a and with -p" {
	needs_podman
	[ -x "$BATS_FILE_TMPDIR/root/usr/bin/python3" ] || skip "no python3.11 to put in the image"
	start_container "sp-test-$$-q" /usr/bin/python3 /app/work.py /out/nspid
	wait_file "$T/out/nspid"
	[ "$(awk '{ print $NF }' "$T/out/nspid")" != "$CPID" ]
	for how in "-a --container=sp-test-$$-q" "-p $CPID"; do
		# shellcheck disable=SC2086
		run --separate-stderr -0 sp-record $how -d 1 -o "$T/q.sp"
		run -0 sp-decode "$T/q.sp"
		run -0 jq -r "select(.type==\"runtime\" and .pid==$CPID and .mode==\"stacks\") |
			.runtime" <<<"$output"
		assert_output python
		run --separate-stderr -0 sp-symbolize "$T/q.sp" -o "$T/q.sym"
		run -0 sp-flame --format=folded "$T/q.sym"
		assert_output --regexp "PyEval_EvalCode;<module>;container_py_work[; ]"
	done
	stop_containers
}

@test "containers: podman: a Ruby program in the container: its methods in samples, with -a and with -p" {
	needs_podman
	[ -e "$BATS_FILE_TMPDIR/root/usr/bin/ruby" ] || skip "no ruby to put in the image"
	start_container "sp-test-$$-r" /usr/bin/ruby /app/work.rb /out/rbnspid
	wait_file "$T/out/rbnspid"
	for how in "-a --container=sp-test-$$-r" "-p $CPID"; do
		# shellcheck disable=SC2086
		run --separate-stderr -0 sp-record $how -d 1 -o "$T/r.sp"
		run -0 sp-decode "$T/r.sp"
		run -0 jq -r "select(.type==\"runtime\" and .pid==$CPID and .mode==\"stacks\") |
			.runtime" <<<"$output"
		assert_output ruby
		run --separate-stderr -0 sp-symbolize "$T/r.sp" -o "$T/r.sym"
		run -0 sp-flame --format=folded "$T/r.sym"
		# the block of loop calls the method (defined at the top level: an
		# Object method), whose block, run by Integer#times, is running
		assert_output --regexp ";block in <main>;([^ ;]*;)*Object#container_rb_work;([^ ;]*;)*block in Object#container_rb_work"
	done
	stop_containers
}

@test "containers: podman: -p of a Ruby program in the container with --spans=ruby-c: its C methods are spans, probed in the container's libruby" {
	needs_podman
	[ -e "$BATS_FILE_TMPDIR/root/usr/bin/ruby" ] || skip "no ruby to put in the image"
	readelf -n "$BATS_FILE_TMPDIR/root$(ldd "$(readlink -f /usr/bin/ruby)" | grep -o '/[^ ]*libruby[^ ]*')" \
		2>/dev/null | grep -q cmethod__entry || skip "needs a libruby with USDT probes"
	start_container "sp-test-$$-s" /usr/bin/ruby /app/work.rb /out/rbspans
	wait_file "$T/out/rbspans"
	SP_RUBY_CMETHOD_PROBES=1 run --separate-stderr -0 sp-record --no-samples --spans=ruby-c \
		-p "$CPID" -d 1 -o "$T/s.sp"
	run -0 sp-decode "$T/s.sp"
	dec=$output
	# the container's libruby is another file than the host's: probes set
	# on the host's path never fire
	hits=$(jq -s '[.[] | select(.type == "probe" and .name == "ruby:cmethod__entry") | .hits] | max // 0' \
		<<<"$dec")
	(( hits > 10 )) || fail "ruby:cmethod__entry: $hits hits"
	# container_rb_work's n.times, each one a span of the container's process
	run -0 jq -r "select(.type == \"span_start\" and .pid == $CPID and .klass == \"Integer\") |
		.method" <<<"$dec"
	assert_line times
	# the runtime is named by the path the process sees
	run -0 jq -r "select(.type == \"runtime\" and .pid == $CPID and .runtime == \"ruby\") |
		.library" <<<"$dec"
	assert_output --regexp '^(/usr)?/lib/[^ ]*libruby[^ ]*$'
	stop_containers
}

@test "containers: podman: -p of a Python in the container with --spans=python: no function spans, said naming it, its frames recorded" {
	needs_podman
	[ -e "$BATS_FILE_TMPDIR/root/usr/lib/python3.11" ] || skip "no python3.11 to put in the image"
	start_container "sp-test-$$-q" /usr/bin/python3 /app/work.py /out/pyspans
	wait_file "$T/out/pyspans"
	run --separate-stderr -0 sp-record --spans=python -p "$CPID" -d 1 -o "$T/q.sp"
	# no activator in the image: said once, for that process, and why
	[[ "$stderr" == *"pid $CPID: Python without sp-record's activator"*"another mount namespace"*"in its image"* ]] ||
		fail "stderr: $stderr"
	run -0 sp-decode "$T/q.sp"
	dec=$output
	run -0 jq -r "select(.type == \"span_start\" and .pid == $CPID) | .method" <<<"$dec"
	assert_output ""
	run --separate-stderr -0 sp-symbolize "$T/q.sp" -o "$T/q.sym"
	run -0 sp-flame --format=folded "$T/q.sym"
	assert_output --regexp "PyEval_EvalCode;<module>;container_py_work[; ]"
	stop_containers
}

# podman, the image's python3.11 and the Python hook; CONTAINER_ARGS give
# the containers the activator's directory read-only, on PYTHONPATH.
needs_python_hook_container() {
	needs_podman
	[ -x "$BATS_FILE_TMPDIR/root/usr/bin/python3" ] || skip "no python3.11 to put in the image"
	compgen -G "$SP_BIN/../runtime/python/_stackpulse_hook.cpython-311-*.so" >/dev/null ||
		skip "no Python hook built (python3-dev)"
	CONTAINER_ARGS=(-v "$(readlink -f "$SP_BIN/../runtime"):/sp-runtime:ro"
		-e PYTHONPATH=/sp-runtime/python)
}

# The activator and its hook reach the container through a read-only bind
# mount and its environment, as a service's image or its run options would
# give them: nothing is installed in the image.
@test "containers: podman: -a --container --spans=python: Pythons in the container started with the activator have their function spans, before and after the start; the host's are left out" {
	needs_python_hook_container
	start_container "sp-test-$$-h" /usr/bin/python3 /app/work.py /out/h1
	wait_file "$T/out/h1"
	first=$CPID
	# a Python on the host with the hook: not of the container
	PYTHONPATH="$SP_BIN/../runtime/python" /usr/bin/python3.11 -c '
import time
def host_py_work(): return 1
while True:
    host_py_work(); time.sleep(0.01)' &
	hostpy=$!
	BGPIDS=$hostpy
	sp-record -v -a --container="sp-test-$$-h" --no-samples --spans=python -d 5 -o "$T/h.sp" \
		2> "$T/h.err" &
	rec=$!
	BGPIDS="$hostpy $rec"
	wait_lines "$T/h.err" 1 "carries a runtime hook" || fail "$(cat "$T/h.err")"
	# one more Python in the container, started while recording
	"${PODMAN[@]}" exec -d -e PYTHONPATH=/sp-runtime/python "sp-test-$$-h" \
		/usr/bin/python3 /app/work.py /out/h2
	wait_file "$T/out/h2"
	wait $rec || fail "sp-record: $(cat "$T/h.err")"
	BGPIDS=$hostpy
	grep -q "spans: pid $first carries a runtime hook" "$T/h.err" || fail "$(cat "$T/h.err")"
	! grep -q "spans: pid $hostpy carries" "$T/h.err"
	run -0 sp-decode "$T/h.sp"
	dec=$output
	# before: "spans are recorded for commands and -p pids, not system-wide", none
	run -0 jq -r 'select(.type == "span_start" and .method == "container_py_work") | .pid' <<<"$dec"
	pids=$(sort -u <<<"$output")
	assert_equal "$(wc -l <<<"$pids")" 2
	grep -qx "$first" <<<"$pids"
	# the second one's, as its own namespace pid says
	second=$(grep -vx "$first" <<<"$pids")
	run -0 jq -r "select(.type==\"process\" and .pid==$second) | .nspid" <<<"$dec"
	assert_equal "$(tail -n 1 <<<"$output")" "$(awk '{ print $NF }' "$T/out/h2")"
	run -0 jq -r 'select(.type == "span_start" and .method == "host_py_work") | .pid' <<<"$dec"
	assert_output ""
	stop_containers
}

# As the Python one above, for Ruby: the activator through a read-only
# mount and RUBYOPT, its hook (3.1/stackpulse_hook.so) found in the
# container's mappings; a host Ruby with the hook is not of the container.
@test "containers: podman: -a --container --spans=ruby: a Ruby in the container started with the activator has its method spans; the host's is left out" {
	needs_podman
	[ -e "$BATS_FILE_TMPDIR/root/usr/bin/ruby" ] || skip "no ruby to put in the image"
	compgen -G "$SP_BIN/../runtime/ruby/*/stackpulse_hook.so" >/dev/null ||
		skip "no Ruby hook built (ruby-dev)"
	CONTAINER_ARGS=(-v "$(readlink -f "$SP_BIN/../runtime"):/sp-runtime:ro"
		-e RUBYOPT=-r/sp-runtime/ruby/stackpulse_activate.rb)
	start_container "sp-test-$$-rh" /usr/bin/ruby /app/work.rb /out/rh1
	wait_file "$T/out/rh1"
	first=$CPID
	# a Ruby on the host with the hook: not of the container
	RUBYOPT="-r$SP_BIN/../runtime/ruby/stackpulse_activate.rb" \
		ruby -e 'def host_rb_work; 1; end; loop { host_rb_work; sleep 0.01 }' &
	hostrb=$!
	# and one without it: nothing to take
	ruby -e 'def plain_rb_work; 1; end; loop { plain_rb_work; sleep 0.01 }' &
	plainrb=$!
	BGPIDS="$hostrb $plainrb"
	sleep 1		# its hook loaded: found at the start if it were taken
	run --separate-stderr sp-record -v -a --container="sp-test-$$-rh" --no-samples --spans=ruby \
		-d 3 -o "$T/rh.sp"
	[ "$status" -eq 0 ] || fail "sp-record: $stderr"
	[[ "$stderr" == *"spans: pid $first carries a runtime hook"* ]] || fail "stderr: $stderr"
	[[ "$stderr" != *"spans: pid $hostrb carries"* && "$stderr" != *"spans: pid $plainrb carries"* ]] ||
		fail "stderr: $stderr"
	run -0 sp-decode "$T/rh.sp"
	dec=$output
	# the method, named as Ruby names it (an Object method: defined at the
	# top level), of the container's Ruby only
	run -0 jq -r 'select(.type == "span_start" and .method == "container_rb_work") |
		"\(.pid) \(.klass)"' <<<"$dec"
	[ -n "$output" ] || fail "no container_rb_work span"
	assert_equal "$(sort -u <<<"$output")" "$first Object"
	run -0 jq -r 'select(.type == "span_start" and (.method == "host_rb_work" or
		.method == "plain_rb_work")) | .pid' <<<"$dec"
	assert_output ""
	stop_containers
}

# The descriptors of $1 other than perf events (which follow cgroups),
# once their number has not changed for a second.
other_fds_settled() {
	local was=-1 n f same=0
	for _ in $(seq 60); do
		n=0
		for f in /proc/"$1"/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:[perf_event]" ] || n=$((n + 1))
		done
		if [ "$n" = "$was" ]; then
			same=$((same + 1))
			[ "$same" -ge 5 ] && break
		else
			same=0
		fi
		was=$n
		sleep 0.2
	done
	echo "$was"
}

# The files of python3.11 process $1 holds, once those it keeps unused
# (SP_BS_ROOT_IDLE_NS, 10 s) are closed: the bound is generous, the machine
# may be loaded.
python_held_settled() {
	local n
	for _ in $(seq 300); do
		n=$(find /proc/"$1"/fd -lname '*python3.11*' | wc -l)
		[ "$n" -eq 0 ] && break
		sleep 0.2
	done
	echo "$n"
}

# Each container run has its own overlay mount, so its python3.11 is
# another inode than the last one's: sp-record opens it in the
# container's root to probe it, and must close it once its process is
# gone (and a while unused), or a recording of containers coming and going
# fills up.
@test "containers: podman: -a --spans=python through containers coming and going: the files opened in their roots are closed, descriptors return to their level" {
	needs_python_hook_container
	name=sp-test-$$-churn
	sp-record -v -a --container="$name" --no-samples --spans=python -d 600s -o "$T/c.sp" \
		2> "$T/c.err" &
	rec=$!
	BGPIDS=$rec
	wait_lines "$T/c.err" 1 "kernel events attached" || fail "$(cat "$T/c.err")"
	run_one() {
		rm -f "$T/out/c$1"
		start_container "$name" /usr/bin/python3 /app/work.py "/out/c$1"
		wait_file "$T/out/c$1"
		wait_lines "$T/c.err" "$1" "carries a runtime hook" || fail "$(cat "$T/c.err")"
		stop_containers
		CONTAINERS=
	}
	# the first one loads what is loaded once (Python's stack walkers)
	run_one 1
	python_held_settled $rec > /dev/null
	fds1=$(other_fds_settled $rec)
	for i in 2 3 4 5; do
		run_one $i
	done
	held=$(python_held_settled $rec)
	fds=$(other_fds_settled $rec)
	kill -INT $rec
	wait $rec
	BGPIDS=
	echo "descriptors other than perf events: $fds1 after the first container, $fds after the fifth; python3.11 held: $held" >&3
	[ "$(grep -c "carries a runtime hook" "$T/c.err")" -eq 5 ]
	[ "$held" -eq 0 ]
	[ "$fds" -le "$fds1" ]
	# all five were recorded: their spans are there
	run -0 sp-decode "$T/c.sp"
	run -0 jq -r 'select(.type == "span_start" and .method == "container_py_work") | .pid' <<<"$output"
	[ "$(sort -u <<<"$output" | wc -l)" -eq 5 ]
}

@test "containers: podman: a short-lived process's exec event carries its identity, read in the kernel" {
	needs_podman
	start_container "sp-test-$$-e" /bin/sleep 60
	cat > "$T/exec.sh" <<-EOS
	${PODMAN[*]} exec sp-test-$$-e /bin/sh -c \
		'while read -r l; do case \$l in NSpid:*) echo "\$l" > /out/exec-nspid;; esac; done < /proc/self/status'
	EOS
	run --separate-stderr -0 sp-record -a --container="sp-test-$$-e" --no-samples --events=proc \
		-o "$T/x.sp" -- sh "$T/exec.sh"
	wait_file "$T/out/exec-nspid"
	# the shell that read its own status: long gone when its record was
	# written, its exec event says who it was
	run -0 sp-decode "$T/x.sp"
	ev=$(jq -c 'select(.type=="event" and .event=="proc_exec" and .argv != null
		and (.argv | test("NSpid")))' <<<"$output")
	[ -n "$ev" ] || fail "no exec of the shell: $output"
	assert_equal "$(jq .nspid <<<"$ev")" "$(awk '{ print $NF }' "$T/out/exec-nspid")"
	assert_equal "$(jq .pid_ns <<<"$ev")" "$(stat -L -c %i /proc/$CPID/ns/pid)"
	assert_equal "$(jq .mnt_ns <<<"$ev")" "$(stat -L -c %i /proc/$CPID/ns/mnt)"
	cg=$(sed -n 's/^0:://p' /proc/$CPID/cgroup)
	assert_equal "$(jq -r .cgroup <<<"$ev")" "$cg"
	M=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	assert_equal "$(jq .cgroup_id <<<"$ev")" "$(stat -c %i "$M$cg")"
	[ "$(jq .start_boot_ns <<<"$ev")" -gt 0 ]
	# and its process record says the same, with the container
	rec=$(jq -c "select(.type==\"process\" and .pid==$(jq .pid <<<"$ev") and .comm==\"sh\")" \
		<<<"$output" | tail -n 1)
	[ -n "$rec" ] || fail "no process record of the shell"
	assert_equal "$(jq .nspid <<<"$rec")" "$(jq .nspid <<<"$ev")"
	assert_equal "$(jq .pid_ns <<<"$rec")" "$(jq .pid_ns <<<"$ev")"
	assert_equal "$(jq -r .cgroup <<<"$rec")" "$cg"
	assert_equal "$(jq -r .container <<<"$rec")" "$CID"
	stop_containers
}

@test "containers: sp-record in a pid namespace of its own takes no identity from the kernel's maps, keyed by the host's pids" {
	needs_unshare
	run --separate-stderr -0 unshare --pid --mount --fork --mount-proc \
		sp-record -v -o "$T/own.sp" -- true
	[[ "$stderr" == *"process identity: not in the host's pid namespace; read from /proc only"* ]] ||
		fail "$stderr"
}

# Until $2 lines of $1 match $3 (grep -c); 1 after ~20 s without.
wait_lines() {
	local _
	for _ in $(seq 200); do
		[ "$(grep -c -- "$3" "$1" 2>/dev/null)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

@test "containers: cgroups made and removed while recording: each followed, its events closed at its removal, fds bounded" {
	make_cgroup "sp-test-storm-$$"
	rmdir "$CG"
	sp-record -v -a --cgroup="$CGPATH" -d 600s -o "$T/storm.sp" 2> "$T/storm.err" &
	RP=$!
	BGPIDS=$RP
	wait_lines "$T/storm.err" 1 "does not exist (yet)" || fail "sp-record did not start"
	# one cgroup after the other at the same path, more than the 64 a
	# recording can follow at once; each waited for until it is followed
	N=80
	for i in $(seq $N); do
		mkdir "$CG"
		if [ "$i" = "$N" ]; then	# the last one spins: its samples
			sh -c "echo \$\$ > $CG/cgroup.procs; exec timeout 1 sh -c 'while :; do :; done'" &
		else
			sh -c "echo \$\$ > $CG/cgroup.procs; exec sleep 0.3" &
		fi
		last=$!
		wait_lines "$T/storm.err" "$i" "'$CGPATH' appeared" || break
		# (the first may be taken while sp-record still starts)
		[ "$i" != 2 ] || fds1=$(perf_fds $RP)
		wait $last || true	# the spinner's timeout: 124
		rmdir "$CG"
	done
	rmdir "$CG" 2>/dev/null || true
	wait_lines "$T/storm.err" "$N" "'$CGPATH' removed" || true
	fds=$(perf_fds $RP)
	kill -INT $RP
	wait $RP
	BGPIDS=
	rm_cgroup
	followed=$(grep -c "'$CGPATH' appeared" "$T/storm.err")
	removed=$(grep -c "'$CGPATH' removed" "$T/storm.err")
	echo "followed $followed, removed $removed; perf events: $fds1 with the second, $fds at the end" >&3
	[ "$followed" -eq $N ]
	[ "$removed" -eq $N ]
	! grep -q "more than 64 cgroups" "$T/storm.err"
	# every followed directory's events were closed (the CPUs' rings are
	# owned by events of no cgroup): fewer descriptors than with the second
	[ "$fds" -lt "$fds1" ]
	# the last one's samples are there: the events of a removed cgroup
	# wrote to the rings, which stay
	sp-decode "$T/storm.sp" > "$T/storm.jsonl"
	run -0 jq -s "[.[] | select(.type==\"process\" and (.pid==$last or .ppid==$last)) | .pid] as \$p |
		[.[] | select(.type==\"sample\" and ([.pid] | inside(\$p)))] | length" "$T/storm.jsonl"
	[ "$output" -ge 1 ]
}

# The perf events sp-record holds open: all of them, and those that own
# a CPU's ring (perf_event fds, counted from /proc/PID/fd).
perf_fds() {
	local n=0 f
	for f in /proc/"$1"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:[perf_event]" ] && n=$((n + 1))
	done
	echo "$n"
}

# perf_fds of $1 once its events are open: the count no longer grows.
perf_fds_settled() {
	local was=0 n
	for _ in $(seq 100); do
		sleep 0.2
		n=$(perf_fds "$1")
		[ "$n" -gt 0 ] && [ "$n" = "$was" ] && break
		was=$n
	done
	echo "$was"
}

# How many samples spool $2 (decoded, JSON lines) has of process $1 and
# its children.
samples_of_tree() {
	jq -s "[.[] | select(.type==\"process\" and (.pid==$1 or .ppid==$1)) | .pid] as \$p |
		[.[] | select(.type==\"sample\" and ([.pid] | inside(\$p)))] | length" "$2"
}

@test "containers: without the kernel's word on cgroups (SP_CGROUPS_POLL=1) a removed cgroup's events are closed and one made again at its path is followed" {
	make_cgroup "sp-test-keep-$$"
	KEEP=$CG
	KEEPPATH=$CGPATH
	CG=${KEEP%/*}/sp-test-gone-$$
	CGPATH=${KEEPPATH%/*}/sp-test-gone-$$
	OLD=$KEEP
	mkdir "$CG"
	sh -c "echo \$\$ > $KEEP/cgroup.procs; exec sleep 60" &
	keep=$!
	sh -c "echo \$\$ > $CG/cgroup.procs; exec sleep 60" &
	gone=$!
	BGPIDS="$keep $gone"
	# the one kept first: its events own the CPUs' rings
	SP_CGROUPS_POLL=1 sp-record -v -a --cgroup="$KEEPPATH" --cgroup="$CGPATH" -d 600s \
		-o "$T/poll.sp" 2> "$T/poll.err" &
	RP=$!
	BGPIDS="$keep $gone $RP"
	wait_lines "$T/poll.err" 1 "looked for every 200 ms (SP_CGROUPS_POLL=1)" ||
		fail "$(cat "$T/poll.err")"
	# both cgroups' events open
	fds1=$(perf_fds_settled $RP)
	kill $gone
	wait $gone || true
	rmdir "$CG"
	# before: never said, its events open until the end
	wait_lines "$T/poll.err" 1 "'$CGPATH' removed: its events are closed" ||
		fail "$(cat "$T/poll.err")"
	fds2=$(perf_fds $RP)
	# made again: followed again, its process's samples recorded
	mkdir "$CG"
	sh -c "echo \$\$ > $CG/cgroup.procs; exec timeout 1 sh -c 'while :; do :; done'" &
	spin=$!
	wait_lines "$T/poll.err" 1 "'$CGPATH' appeared" || fail "$(cat "$T/poll.err")"
	wait $spin || true
	kill -INT $RP
	wait $RP
	kill $keep
	wait $keep || true
	BGPIDS=
	rmdir "$CG"
	echo "perf events: $fds1 with both cgroups, $fds2 once one was removed" >&3
	[ "$fds2" -lt "$fds1" ]
	sp-decode "$T/poll.sp" > "$T/poll.jsonl"
	run -0 samples_of_tree $spin "$T/poll.jsonl"
	[ "$output" -ge 1 ]
}

# The kernel frees a removed cgroup once nothing holds it: a perf event
# of it does (cgroup.stat's nr_dying_descendants of its parent counts it).
@test "containers: a removed cgroup is not held by sp-record: its events all close, none owns a CPU's ring" {
	make_cgroup "sp-test-only-$$"
	[ -e "${CG%/*}/cgroup.stat" ] || skip "no cgroup.stat"
	sh -c "echo \$\$ > $CG/cgroup.procs; exec sleep 60" &
	held=$!
	BGPIDS=$held
	sp-record -v -a --cgroup="$CGPATH" -d 600s -o "$T/only.sp" 2> "$T/only.err" &
	RP=$!
	BGPIDS="$held $RP"
	fds1=$(perf_fds_settled $RP)
	sh -c "echo \$\$ > $CG/cgroup.procs; exec timeout 1 sh -c 'while :; do :; done'" &
	spin=$!
	wait $spin || true
	kill $held
	wait $held || true
	rmdir "$CG"
	wait_lines "$T/only.err" 1 "'$CGPATH' removed: its events are closed" ||
		fail "$(cat "$T/only.err")"
	fds2=$(perf_fds $RP)
	# freed by the kernel once its last reference went (RCU: a moment)
	for _ in $(seq 50); do
		dying=$(sed -n 's/^nr_dying_descendants //p' "${CG%/*}/cgroup.stat")
		[ "$dying" = 0 ] && break
		sleep 0.1
	done
	kill -INT $RP
	wait $RP
	BGPIDS=
	echo "perf events: $fds1 with the cgroup, $fds2 once it was removed; dying cgroups: $dying" >&3
	# before: the events of the one cgroup owned the rings: none closed,
	# and the cgroup stayed dying until sp-record ended
	[ "$fds2" -lt "$fds1" ]
	assert_equal "$dying" 0
	# its samples are there: written to the rings it did not own
	sp-decode "$T/only.sp" > "$T/only.jsonl"
	run -0 samples_of_tree $spin "$T/only.jsonl"
	[ "$output" -ge 1 ]
}

@test "containers: a cgroup made while sp-record loads its programs is taken with those that existed, at the start" {
	make_cgroup "sp-test-early-$$"
	OLD=$CG
	OLDPATH=$CGPATH
	CG=${OLD%/*}/sp-test-new-$$
	CGPATH=${OLDPATH%/*}/sp-test-new-$$
	sh -c "echo \$\$ > $OLD/cgroup.procs; exec sleep 30" &
	old=$!
	BGPIDS=$old
	# sp-record shares one CPU with a busy loop, at the lowest priority:
	# its programs load slowly until the loop ends, so the cgroup below is
	# made while they load however fast this machine is
	taskset -c 0 sh -c 'while :; do :; done' &
	hog=$!
	BGPIDS="$old $hog"
	taskset -c 0 nice -n 19 sp-record -v -a --cgroup="$OLDPATH" --cgroup="$CGPATH" -d 3s \
		-o "$T/early.sp" 2> "$T/early.err" &
	RP=$!
	BGPIDS="$old $hog $RP"
	# made as soon as sp-record said it waits for it, while its programs
	# load: its process is read at the start with the other cgroup's, not
	# at the first pass over what the kernel told
	wait_lines "$T/early.err" 1 "does not exist (yet)" || fail "sp-record did not start"
	mkdir "$CG"
	sh -c "echo \$\$ > $CG/cgroup.procs; exec sleep 30" &
	new=$!
	# (in it before the loop ends)
	for _ in $(seq 100); do grep -qx "$new" "$CG/cgroup.procs" && break; sleep 0.05; done
	kill $hog
	wait $hog 2>/dev/null || true
	BGPIDS="$old $new $RP"
	wait $RP
	kill $old $new
	wait $old $new || true
	BGPIDS=
	rmdir "$CG" "$OLD" "${OLD%/*}"
	grep -q "'$CGPATH' appeared" "$T/early.err"
	sp-decode "$T/early.sp" > "$T/early.jsonl"
	run -0 jq -r "select(.type==\"process\" and .pid==$old) | .time" "$T/early.jsonl"
	t_old=$output
	run -0 jq -r "select(.type==\"process\" and .pid==$new) | .time" "$T/early.jsonl"
	t_new=$output
	echo "process records: the old cgroup's at $t_old, the new one's at $t_new"
	[ -n "$t_old" ] && [ -n "$t_new" ]
	assert_equal "$t_new" "$t_old"
}

# ---- Docker (docker.io), beside podman ----
#
# The daemon is started here when none runs (no systemd on the test
# machines), without iptables or a bridge (the containers have no
# network); the image is imported from the same root podman's is made of.
needs_docker() {
	require_root
	require_cmd dockerd "apt-get install docker.io"
	require_cmd docker "apt-get install docker.io"
	require_cmd gcc
	DIMAGE=sp-test-$BATS_ROOT_PID:latest
	if [ -e "$BATS_FILE_TMPDIR/docker.failed" ]; then
		skip "$(cat "$BATS_FILE_TMPDIR/docker.failed")"
	fi
	if [ ! -e "$BATS_FILE_TMPDIR/docker.ok" ]; then
		if ! docker info >/dev/null 2>&1; then
			dockerd --iptables=false --ip6tables=false --bridge=none \
				> "$BATS_FILE_TMPDIR/dockerd.log" 2>&1 &
			echo $! > "$BATS_FILE_TMPDIR/dockerd.pid"
			for _ in $(seq 300); do
				docker info >/dev/null 2>&1 && break
				sleep 0.1
			done
		fi
		if ! docker info >/dev/null 2>&1; then
			echo "dockerd does not run here: $(tail -c 300 "$BATS_FILE_TMPDIR/dockerd.log")" \
				> "$BATS_FILE_TMPDIR/docker.failed"
			skip "$(cat "$BATS_FILE_TMPDIR/docker.failed")"
		fi
		[ -d "$BATS_FILE_TMPDIR/root/app" ] || build_image_root
		tar -C "$BATS_FILE_TMPDIR/root" -c . | docker import - "$DIMAGE" >/dev/null 2>&1 || {
			echo "docker cannot import an image here" > "$BATS_FILE_TMPDIR/docker.failed"
			skip "$(cat "$BATS_FILE_TMPDIR/docker.failed")"
		}
		touch "$BATS_FILE_TMPDIR/docker.ok"
	fi
	mkdir -p "$T/out"
}

@test "containers: docker: a container started later is followed by its name from its first exec, until it is removed" {
	needs_docker
	name=sp-test-$$-d
	sp-record -v -a --container="$name" --events=proc -d 600s -o "$T/d.sp" 2> "$T/d.err" &
	RP=$!
	BGPIDS=$RP
	wait_lines "$T/d.err" 1 "'$name'.*yet" || fail "sp-record did not start"
	# after the start (a cgroup made while it loads is taken at its start)
	wait_lines "$T/d.err" 1 "spans are recorded" || true
	docker run -d --rm --network none -v "$T/out:/out" --name "$name" "$DIMAGE" \
		/app/spin /out/nspid > "$T/cid"
	cid=$(cat "$T/cid")
	wait_file "$T/out/nspid"
	docker rm -f "$name" >/dev/null
	wait_lines "$T/d.err" 1 "/docker/$cid' removed" || true
	kill -INT $RP
	wait $RP
	BGPIDS=
	grep -q "cgroup '/docker/$cid' appeared" "$T/d.err"
	grep -q "cgroup '/docker/$cid' removed: its events are closed" "$T/d.err"
	sp-decode "$T/d.sp" > "$T/d.jsonl"
	# its first program's exec, by the runtime, and its samples
	run -0 jq -r 'select(.type=="event" and .event=="proc_exec") | .filename' "$T/d.jsonl"
	assert_output --partial /app/spin
	run -0 jq -r "select(.type==\"process\" and .comm==\"spin\") | .runtime + \":\" + .container" \
		"$T/d.jsonl"
	assert_equal "$(sort -u <<<"$output")" "docker:$cid"
	pid=$(jq -r 'select(.type=="process" and .comm=="spin") | .pid' "$T/d.jsonl" | head -n 1)
	run -0 jq -s "[.[] | select(.type==\"sample\" and .pid==$pid)] | length" "$T/d.jsonl"
	[ "$output" -ge 1 ]
}
