#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# sp-record --events: kernel events of the recorded process tree, recorded
# with BPF, of build/examples/evtest (tests/fixtures/src/evtest.c), whose
# child does each event once at a known point.

load helper

EV=$SP_EXAMPLES/evtest

setup() {
	require_cmd jq
	[ -x "$EV" ] || skip "build/examples/evtest is not built (make)"
	OUT=$BATS_TEST_TMPDIR
	D=$(mktemp -d /tmp/sp-evtest.XXXXXX)
}

teardown() {
	[ -n "${BGPIDS:-}" ] && kill $BGPIDS 2>/dev/null
	[ -n "${D:-}" ] && rm -rf "$D"
	true
}

# The header of JSON lines on stdin.
header() {
	jq -c 'select(.type=="header")'
}

need_bpf() {
	require_root
	[ -r /sys/kernel/btf/vmlinux ] || skip "needs kernel BTF (/sys/kernel/btf/vmlinux)"
}

# Our programs, by name (bpftool shows at most 15 characters).
OURS='on_(sys_enter|sys_exit|fork|exec|exit|capable)_(btf|raw|tp)|on_sys_enter_bt|on_sys_exit_btf|on_capable_btf|on_capable_raw|on_setid_tp'

# Ids of the BPF programs a process holds (its program and link fds).
prog_ids_of() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | sort -u
}

@test "sp-record-events: an unknown event name is a usage error" {
	run --separate-stderr -64 sp-record --events=path_open,bogus -o "$OUT/x.sp" -- true
	assert_equal "${stderr%%$'\n'*}" "sp-record: --events: unknown event or group 'bogus' (groups: all, none, default, proc, file, net, dns, priv, runtime; or an event name such as path_open)"
	run --separate-stderr -64 sp-record --event-buffer=100 -o "$OUT/x.sp" -- true
	assert_equal "${stderr%%$'\n'*}" "sp-record: invalid --event-buffer '100': KiB, a power of 2 from 4 to 2097152"
}

@test "sp-record-events: a named event the kernel cannot give stops before the command runs" {
	need_bpf
	run --separate-stderr -64 sp-record --events=proc,kernel_read_file -o "$OUT/x.sp" -- touch "$D/ran"
	assert_equal "$stderr" "sp-record: error: event kernel_read_file not available on this kernel (see docs/events.md)"
	[ ! -e "$D/ran" ]
}

@test "sp-record-events: without root, events are skipped with a warning unless named" {
	# (--spans=none: this is about kernel events only)
	require_root
	command -v setpriv >/dev/null || skip "needs setpriv"
	chmod 777 "$D"
	run --separate-stderr -0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$SP_BIN/sp-record" --spans=none -o "$D/x.sp" -- true
	assert_output ""
	[[ $stderr == *"sp-record: warning: kernel events unavailable: loading BPF programs needs root (CAP_BPF and CAP_PERFMON): Operation not permitted; recording without them"* ]]
	sp-decode "$D/x.sp" | header | jq -e '.unavailable | test("bpf-events")'
	run --separate-stderr -64 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$SP_BIN/sp-record" --spans=none --events=file -o "$D/y.sp" -- touch "$D/ran"
	[[ $stderr == *"sp-record: error: kernel events unavailable: loading BPF programs needs root"* ]]
	[ ! -e "$D/ran" ]
}

# The names of the BPF programs sp-record holds while it records with the
# given options, sorted, on one line.
held_progs() {
	sp-record --no-samples --spans=none "$@" -o "$OUT/held.sp" -- sh -c \
		'for id in $(sed -n "s/^prog_id:[[:space:]]*//p" /proc/$PPID/fdinfo/*); do
			bpftool prog show id "$id" --json | jq -r .name
		done
		for id in $(sed -n "s/^link_id:[[:space:]]*//p" /proc/$PPID/fdinfo/*); do
			bpftool link show id "$id" --json | jq -r "\"link:\" + (.tp_name // .type)"
		done' | sort -u > "$OUT/held"
	# The interpreters' entry program is loaded but not attached while no
	# Python or Ruby runs (the test of a Python below has one).
	grep -v '^link:' "$OUT/held" | grep -vx 'on_event\|on_event_rb\|on_event_tp\|on_event_rb_tp' | tr '\n' ' '
}

# Record evtest's "run" mode with the given extra options; sets CHILD, PARENT, PORT.
record_run() {
	run --separate-stderr -0 sp-record --no-samples "$@" -o "$OUT/run.sp" -- "$EV" run "$D"
	sp-decode "$OUT/run.sp" > "$OUT/run.json"
	read -r CHILD PORT < <(sed -E 's/child=([0-9]+) thread=[0-9]+ port=([0-9]+).*/\1 \2/' "$D/info")
	PARENT=$(jq -r --argjson c "$CHILD" 'select(.type=="event" and .event=="proc_fork" and .child_pid==$c and .pid!=$c) | .pid' "$OUT/run.json")
	[ -n "$PARENT" ]
}

# The child's events (capability checks apart), as "kind field..." lines.
child_events() {
	jq -r --argjson c "$CHILD" 'select(.type=="event" and .pid==$c and .event!="capable_check") |
		[.event, (.path // .old // .link // .name // .filename // .call // .source // "" | tostring)] | join(" ")' \
		"$OUT/run.json"
}

check_run() {
	local dir real uid gid
	dir=$D
	real=$(realpath "$D")
	uid=$(id -u)
	gid=$(id -g)

	# the exact sequence of the child, up to its exec, then the loader, then the exit
	child_events > "$OUT/seq"
	sed -n '1,/^proc_exec/p' "$OUT/seq" > "$OUT/before"
	cat > "$OUT/want" <<-EOF
	proc_fork 
	proc_exit 
	path_open $dir/a
	path_open b
	path_open $dir
	file_getdents $real
	file_rename $real/a
	file_hardlink $real/c
	file_symlink $real/e
	file_chmod $real/c
	file_chown $real/c
	file_unlink $real/d
	sock_bind 
	sock_listen 
	sock_connect 
	sock_accept 
	path_open info
	dns_req evtest.example.com
	sock_connect 
	dns_req second.example.org
	task_kill 
	ptrace_check 
	sb_mount evsrc
	setid_change setgid
	proc_exec /proc/self/exe
	EOF
	diff -u "$OUT/want" "$OUT/before"
	[ "$(tail -n 1 "$OUT/seq")" = "proc_exit " ]
	# everything between the exec and the exit is the dynamic loader opening libraries
	[ -z "$(sed -n '/^proc_exec/,$p' "$OUT/seq" | sed '1d;$d' | grep -v -E '^path_open /(etc/ld.so.cache|lib|usr/lib)/?')" ]

	q() { jq -c --argjson c "$CHILD" "select(.type==\"event\" and .pid==\$c and .event==\"$1\")${2:-}" "$OUT/run.json"; }
	# fields, against what the program did (tests/fixtures/src/evtest.c)
	[ "$(q proc_fork '|[.child_pid==$c, .child_tid!=$c, .flags]')" = "[true,true,1]" ]
	[ "$(q proc_exit '|select(.thread==1)|[.code,.signal,.tid!=$c]')" = "[0,0,true]" ]
	[ "$(q proc_exit '|select(.thread==0)|[.code,.signal,.tid==$c]')" = "[7,0,true]" ]
	[ "$(q path_open "|select(.path==\"$dir/a\")|[.flags,.mode,.result>=0,.dir]")" = '["0x41","0x1a0",true,null]' ]
	[ "$(q path_open '|select(.path=="b")|[.flags,.mode,.dir]')" = "[\"0x42\",\"0x180\",\"$real\"]" ]
	[ "$(q file_getdents '|[.result>0]')" = "[true]" ]
	# relative paths made absolute with the current directory, as path_open's
	# path and dir; a symlink's target is its content, as given
	[ "$(q file_rename '|[.old,.new,.result]')" = "[\"$real/a\",\"$real/c\",0]" ]
	[ "$(q file_hardlink '|[.old,.new,.result]')" = "[\"$real/c\",\"$real/d\",0]" ]
	[ "$(q file_symlink '|[.target,.link,.result]')" = "[\"c\",\"$real/e\",0]" ]
	[ "$(q file_chmod '|[.path,.mode,.result]')" = "[\"$real/c\",\"0x184\",0]" ]
	[ "$(q file_chown '|[.path,.uid,.gid,.result]')" = "[\"$real/c\",$uid,$gid,0]" ]
	[ "$(q file_unlink '|[.path,.result]')" = "[\"$real/d\",0]" ]
	[ "$(q sock_bind '|[.family,.addr,.port,.result]')" = '[2,"127.0.0.1",0,0]' ]
	[ "$(q sock_listen '|[.backlog,.result]')" = '[5,0]' ]
	[ "$(q sock_connect "|select(.port==$PORT)|[.family,.addr,.result]")" = '[2,"127.0.0.1",0]' ]
	[ "$(q sock_accept "|[.family,.addr,.result>=0,.port!=$PORT]")" = '[2,"127.0.0.1",true,true]' ]
	[ "$(q dns_req '|[.name,.qtype,.server,.port,.id]' | tr '\n' ' ')" = '["evtest.example.com",1,"127.0.0.1",53,4660] ["second.example.org",28,"127.0.0.1",53,4661] ' ]
	[ "$(q task_kill '|[.target==$c,.signal,.result]')" = "[true,0,0]" ]
	[ "$(q ptrace_check "|[.request,.target==$PARENT,.result]")" = "[2,true,-3]" ]
	[ "$(q sb_mount '|[.source,.target,.fstype,.flags,.result]')" = "[\"evsrc\",\"$dir\",\"spnofs\",\"0x2\",-19]" ]
	[ "$(q setid_change '|[.call,.old_gid,.new_gid,.result]')" = "[\"setgid\",$gid,$gid,0]" ]
	[ "$(q proc_exec '|[.filename,.argv,.truncated,.old_pid==$c]')" = "[\"/proc/self/exe\",\"/proc/self/exe done 'two words' x\",0,true]" ]
	# the parent: its exec (argv as given), the fork, its exit
	[ "$(jq -r --argjson p "$PARENT" 'select(.type=="event" and .pid==$p and .event=="proc_exec") | .argv' "$OUT/run.json")" = "$EV run $D" ]
	# no one else, no loss, and time order
	[ "$(jq -r --argjson p "$PARENT" --argjson c "$CHILD" 'select(.type=="event" and .pid!=$p and .pid!=$c)' "$OUT/run.json")" = "" ]
	[ "$(jq -r 'select(.type=="lost")' "$OUT/run.json")" = "" ]
	jq -s -e '[.[]|select(.type=="event")|.time] as $t | $t == ($t|sort)' "$OUT/run.json"
	[ "$(jq -r 'select(.type=="sample")' "$OUT/run.json")" = "" ]
}

@test "sp-record-events: each event of the child once, with its fields, in order (tp_btf)" {
	need_bpf
	record_run --events=all
	header < "$OUT/run.json" | jq -e '(.features | test("bpf-events=tp_btf")) and (.unavailable | test("kernel_read_file"))'
	check_run
	# mount(2) checked CAP_SYS_ADMIN
	[ -n "$(jq -c --argjson c "$CHILD" 'select(.type=="event" and .pid==$c and .event=="capable_check" and .cap==21)' "$OUT/run.json")" ]
}

@test "sp-record-events: the same with raw_tp programs" {
	need_bpf
	record_run --events=all --event-attach=raw_tp
	header < "$OUT/run.json" | jq -e '.features | test("bpf-events=raw_tp")'
	check_run
}

@test "sp-record-events: relative paths of the *at calls are made absolute with their dirfd's directory" {
	need_bpf
	require_cmd python3
	mkdir -p "$D/one" "$D/two" "$D/gone"
	touch "$D/one/x" "$D/one/y" "$D/one/z"
	local real
	real=$(realpath "$D")
	# renameat with one dirfd, then with two (the new path's directory is
	# not recorded then: as given), unlinkat and rmdir by dirfd and cwd
	run -0 --separate-stderr sp-record --no-samples --events=file -o "$OUT/at.sp" -- \
		python3 -c '
import os, sys
os.chdir(sys.argv[1])
one = os.open("one", os.O_RDONLY | os.O_DIRECTORY)
two = os.open("two", os.O_RDONLY | os.O_DIRECTORY)
os.rename("x", "x2", src_dir_fd=one, dst_dir_fd=one)
os.rename("y", "y2", src_dir_fd=one, dst_dir_fd=two)
os.rename("z", os.path.abspath("two/z2"), src_dir_fd=one)
os.unlink("x2", dir_fd=one)
os.rmdir("gone")' "$D"
	sp-decode "$OUT/at.sp" > "$OUT/at.json"
	run -0 jq -r 'select(.type=="event" and .event=="file_rename") | "\(.old) \(.new)"' "$OUT/at.json"
	assert_output "$real/one/x $real/one/x2
$real/one/y y2
$real/one/z $real/two/z2"
	run -0 jq -r 'select(.type=="event" and .event=="file_unlink") | "\(.path) \(.flags)"' "$OUT/at.json"
	assert_output "$real/one/x2 0x0
$real/gone 0x200"
}

@test "sp-record-events: the default set leaves out privilege events" {
	need_bpf
	record_run
	header < "$OUT/run.json" | jq -e '.features | test("events=proc_fork,proc_exec,proc_exit,path_open,.*dns_req( |$)")'
	[ "$(jq -r 'select(.type=="event" and (.event=="task_kill" or .event=="sb_mount" or .event=="capable_check"))' "$OUT/run.json")" = "" ]
	[ "$(jq -r --argjson c "$CHILD" 'select(.type=="event" and .pid==$c and .event=="dns_req") | .name' "$OUT/run.json" | tr '\n' ' ')" = "evtest.example.com second.example.org " ]
}

@test "sp-record-events: the default set runs no program at system call entry" {
	need_bpf
	command -v bpftool >/dev/null || skip "needs bpftool"
	# DNS payloads are read at exit, from each wanted call's own exit
	# tracepoint: the machine's other system calls pass no program, and
	# none runs at entry (ident_fork and ident_exec read a new
	# process's namespaces and cgroup at fork and exec, ident_exit its
	# user at its end, ident_attach a process moved to another cgroup,
	# not at a call)
	# (on_task_*: the interpreters' process map follows forks, execs, exits)
	assert_equal "$(held_progs)" "ident_attach ident_exec ident_exit ident_fork on_exec_btf on_exit_btf on_fork_btf on_sys_exit_call on_task_exec on_task_exit on_task_fork "
	! grep -x 'link:sys_enter' "$OUT/held"
	! grep -x 'link:sys_exit' "$OUT/held"
	sp-decode "$OUT/held.sp" | header | jq -e '(.features | test("entry=") | not) and
		(.features | split(" ") | index("exit=sys-exit-tracepoints"))'
	assert_equal "$(held_progs --events=file,dns --event-attach=raw_tp)" \
		"ident_attach ident_exec ident_exit ident_fork on_exit_raw on_fork_raw on_sys_exit_call on_task_exec on_task_exit on_task_fork "
	# sys_enter: the raw hooks at both ends, one program for every call
	assert_equal "$(held_progs --events=file,dns --event-attach=raw_tp,sys_enter)" \
		"ident_attach ident_exec ident_exit ident_fork on_exit_raw on_fork_raw on_sys_exit_raw on_task_exec on_task_exit on_task_fork "
	grep -x 'link:sys_exit' "$OUT/held"
}

# The sp-record-end processes still running (not zombies: who reaps them
# is init's business).
closers() {
	local pid
	for pid in $(pgrep -x sp-record-end); do
		[ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ] && echo "$pid"
	done
	return 0
}

@test "sp-record-events: the tracepoints' last links are closed by sp-record-end, which holds nothing else" {
	need_bpf
	# Each per-call exit link's close waits for the kernel's grace
	# periods: a child holding only them closes the last copies after
	# sp-record has gone. The reader of sp-record's pipe sees its end,
	# the child keeps no other descriptor (but the closers' lock, which
	# it takes around each close), and it does end.
	sp-record --no-samples --spans=none --events=file,dns -o - -- true | cat > "$OUT/end.sp"
	sp-decode --stats "$OUT/end.sp" > /dev/null
	local pid fd seen=0 i
	for pid in $(closers); do
		for fd in /proc/"$pid"/fd/*; do
			[ -e "$fd" ] || continue	# gone meanwhile
			case $(readlink "$fd") in
			anon_inode:bpf_link|anon_inode:bpf-link|'') ;;
			/run/sp-record-closers.lock) ;;	# taken around each close
			*) echo "sp-record-end $pid holds $fd: $(readlink "$fd")"; return 1 ;;
			esac
			seen=1
		done
		[ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ] || [ ! -e /proc/"$pid" ]
	done
	echo "sp-record-end seen holding links: $seen"
	for i in $(seq 200); do
		[ -n "$(closers)" ] || return 0
		sleep 0.1
	done
	echo "sp-record-end still there after 20 s: $(closers)"
	return 1
}

@test "sp-record-events: the interpreted-stack program joins system call entry once a Python is found" {
	need_bpf
	command -v bpftool >/dev/null || skip "needs bpftool"
	command -v python3 >/dev/null || skip "needs python3"
	# The Python waits until its recorder has a program at system call
	# entry (sp-record finds it from its mappings, a moment after it
	# starts), then opens a file from a function of its own.
	cat > "$OUT/entry.py" <<'PY'
import glob, os, subprocess, time
def links():
    ids = set()
    for f in glob.glob("/proc/%d/fdinfo/*" % os.getppid()):
        try:
            ids |= {l.split()[1] for l in open(f) if l.startswith("link_id:")}
        except OSError:
            pass
    return "".join(subprocess.run(["bpftool", "link", "show", "id", i],
                   capture_output=True, text=True).stdout for i in ids) + perf_progs()
def perf_progs():
    # the per-call tracepoints' links (perf links, which bpftool may not
    # show): their programs' names
    progs = set()
    for f in glob.glob("/proc/%d/fdinfo/*" % os.getppid()):
        try:
            t = open(f).read()
        except OSError:
            continue
        if "link_type:\tperf" in t:
            progs |= {l.split()[1] for l in t.splitlines() if l.startswith("prog_id:")}
    return "".join(subprocess.run(["bpftool", "prog", "show", "id", i],
                   capture_output=True, text=True).stdout for i in progs)
def wait_for_entry():
    for _ in range(100):
        l = links()
        if "sys_enter" in l or "on_event_tp" in l:
            return
        time.sleep(0.1)
    raise SystemExit("no program at system call entry")
def load():
    open("/etc/hostname").close()
wait_for_entry()
load()
# its code object is read as its stacks are drained: not by a gone process
# (docs/interpreters.md, limits)
time.sleep(0.3)
PY
	sp-record --spans=none -o "$OUT/py.sp" -- python3 "$OUT/entry.py"
	sp-decode "$OUT/py.sp" > "$OUT/py.json"
	# the open carries the function that made it
	run -0 jq -r 'select(.type=="event" and .event=="path_open" and .path=="/etc/hostname") | .stack' "$OUT/py.json"
	[ -n "$output" ] && [ "$output" != null ]
	sp-correlate "$OUT/py.sp" | sp-tree > "$OUT/py.tree"
	grep -A1 "FRAME tid=[0-9]* load at=entry.py:" "$OUT/py.tree" | grep -q "path_open → /etc/hostname" ||
		fail "$(cat "$OUT/py.tree")"
}

@test "sp-record-events: --event-attach=sys_enter puts the interpreted-stack program on the raw sys_enter" {
	need_bpf
	command -v bpftool >/dev/null || skip "needs bpftool"
	command -v python3 >/dev/null || skip "needs python3"
	# The Python waits until its recorder has a program at system call
	# entry, notes the programs of its recorder's links there, and opens
	# a file from a function of its own.
	cat > "$OUT/raw.py" <<'PY'
import glob, json, os, subprocess, sys, time
def bpftool(*a):
    r = subprocess.run(["bpftool", "--json", *a], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}
def entry_progs():
    # "tp:PROG" for raw tracepoint links on sys_enter, "perf:PROG" for
    # the per-call tracepoints' (perf) links
    out = set()
    for f in glob.glob("/proc/%d/fdinfo/*" % os.getppid()):
        try:
            t = open(f).read()
        except OSError:
            continue
        kv = dict(l.split(":", 1) for l in t.splitlines() if ":" in l)
        if "link_id" in kv:
            l = bpftool("link", "show", "id", kv["link_id"].strip())
            if l.get("tp_name") == "sys_enter":
                out.add("tp:" + bpftool("prog", "show", "id", str(l["prog_id"])).get("name", "?"))
            elif kv.get("link_type", "").strip() == "perf" and "prog_id" in kv:
                out.add("perf:" + bpftool("prog", "show", "id", kv["prog_id"].strip()).get("name", "?"))
    return out
def load():
    open("/etc/hostname").close()
for _ in range(100):
    p = entry_progs()
    if any(x.startswith("tp:on_event") or x.startswith("perf:on_event") for x in p):
        break
    time.sleep(0.1)
open(sys.argv[1], "w").write("\n".join(sorted(p)) + "\n")
load()
time.sleep(0.3)
PY
	sp-record --spans=none --event-attach=sys_enter -o "$OUT/raw.sp" -- python3 "$OUT/raw.py" "$OUT/entry"
	grep -qx 'tp:on_event' "$OUT/entry" || fail "no on_event on raw sys_enter: $(cat "$OUT/entry")"
	! grep -q '^perf:on_event' "$OUT/entry" || fail "per-call tracepoints too: $(cat "$OUT/entry")"
	# the open still carries the function that made it
	sp-correlate "$OUT/raw.sp" | sp-tree > "$OUT/raw.tree"
	grep -A1 "FRAME tid=[0-9]* load at=raw.py:" "$OUT/raw.tree" | grep -q "path_open → /etc/hostname" ||
		fail "$(cat "$OUT/raw.tree")"
}

@test "sp-record-events: setid_change's ids before come from the setid calls' own tracepoints, else sys_enter" {
	need_bpf
	command -v setpriv >/dev/null || skip "needs setpriv"
	command -v bpftool >/dev/null || skip "needs bpftool"
	mountpoint -q /sys/kernel/tracing && had_tracefs=1 || had_tracefs=0
	for how in tp_btf raw_tp tp_btf,sys_enter; do
		entry=setid-tracepoints
		[ "$how" != tp_btf,sys_enter ] || entry=sys_enter
		run --separate-stderr -0 sp-record --no-samples --spans=none --events=setid_change \
			--event-attach="$how" -o "$OUT/s.sp" -- \
			setpriv --regid=65534 --reuid=65534 --clear-groups true
		sp-decode "$OUT/s.sp" > "$OUT/s.json"
		header < "$OUT/s.json" | jq -e --arg e "entry=$entry" '.features | split(" ") | index($e)'
		# the ids change: the old ones were read before the call
		q() { jq -c "select(.type==\"event\" and .event==\"setid_change\" and .call==\"$1\") | $2" "$OUT/s.json"; }
		assert_equal "$(q setresuid '[.old_uid,.new_uid,.result]')" "[0,65534,0]"
		assert_equal "$(q setresgid '[.old_gid,.new_gid,.result]')" "[0,65534,0]"
		# tracefs, mounted to attach them when it was missing, is gone again
		if [ $had_tracefs = 0 ] && [ $entry = setid-tracepoints ]; then
			header < "$OUT/s.json" | jq -e '.features | split(" ") | index("tracefs=mounted")'
		fi
		mountpoint -q /sys/kernel/tracing && has_tracefs=1 || has_tracefs=0
		[ $has_tracefs = $had_tracefs ]
	done
	# and only the program that gives them is attached
	[[ "$(held_progs --events=all)" == *" on_setid_tp "* ]]
	[[ "$(held_progs --events=all)" != *on_sys_enter* ]]
	[[ "$(held_progs --events=all --event-attach=sys_enter)" == *" on_sys_enter_btf "* ]]
	[[ "$(held_progs --events=all --event-attach=sys_enter)" != *on_setid_tp* ]]
}

@test "sp-record-events: events of a process outside the tree are absent" {
	need_bpf
	"$EV" noise "$D" 5 &
	BGPIDS=$!
	sleep 0.2
	run --separate-stderr -0 sp-record --no-samples --events=all -o "$OUT/run.sp" -- "$EV" run "$D"
	sp-decode "$OUT/run.sp" > "$OUT/run.json"
	# the noise process opened $D/noise every millisecond all along
	[ "$(jq -r --argjson n "$BGPIDS" 'select(.pid==$n)' "$OUT/run.json")" = "" ]
	[ "$(jq -r 'select(.type=="event" and ((.path // "") | test("noise")))' "$OUT/run.json")" = "" ]
	[ "$(jq -r 'select(.type=="event" and .event=="file_rename") | .old' "$OUT/run.json")" = "$(realpath "$D")/a" ]
}

@test "sp-record-events: -a leaves the recorder's own system calls out, not others'" {
	need_bpf
	"$EV" noise "$D" 4 &
	BGPIDS=$!
	sp-record -a --events=all -d 3 -o "$OUT/all.sp" 2> "$OUT/err" &
	local rec=$!
	# new processes, whose mappings the recorder reads from /proc, once
	# it records (its header is written)
	wait_path "$OUT/all.sp" 30 && sleep 1
	( for i in $(seq 100); do /bin/true; done ) &
	BGPIDS="$BGPIDS $!"
	wait "$rec"
	sp-decode "$OUT/all.sp" > "$OUT/all.json"
	# the others' calls are there: the noise process's opens, the loop's execs
	[ "$(jq -c 'select(.type=="event" and ((.path // "") | test("noise")))' "$OUT/all.json" | wc -l)" -gt 10 ]
	[ "$(jq -c 'select(.event=="proc_exec" and .filename=="/bin/true")' "$OUT/all.json" | wc -l)" -gt 10 ]
	# the recorder is recorded (its process and CPU samples), but of its
	# events only its threads' fork and exit
	[ "$(jq -r --argjson p "$rec" 'select(.type=="process" and .pid==$p) | .comm' "$OUT/all.json")" = sp-record ]
	run jq -r --argjson p "$rec" 'select(.type=="event" and .pid==$p) | .event | select(. != "proc_fork" and . != "proc_exit")' "$OUT/all.json"
	[ "$output" = "" ]
}

@test "sp-record-events: a flood beyond the ring buffer: delivered plus lost add up" {
	need_bpf
	# the same program without the flood gives its baseline of events
	run --separate-stderr -0 sp-record --no-samples --events=all --event-buffer=16 -o "$OUT/base.sp" -- "$EV" flood 0
	sp-decode "$OUT/base.sp" > "$OUT/base.json"
	base=$(jq -s '[.[]|select(.type=="event")]|length' "$OUT/base.json")
	[ "$(jq -r 'select(.type=="lost")' "$OUT/base.json")" = "" ]
	[ "$base" -gt 0 ]
	run --separate-stderr -0 sp-record --no-samples --events=all --event-buffer=16 -o "$OUT/flood.sp" -- "$EV" flood 200000
	sp-decode "$OUT/flood.sp" > "$OUT/flood.json"
	got=$(jq -s '[.[]|select(.type=="event")]|length' "$OUT/flood.json")
	lost=$(jq -s '[.[]|select(.type=="lost" and .what=="events")|.count]|add // 0' "$OUT/flood.json")
	echo "delivered $got lost $lost baseline $base" >&3
	[ "$lost" -gt 0 ]
	[ $((got + lost)) -eq $((base + 200000)) ]
	# each lost record has a window and a cpu; the end record and the summary agree
	jq -s -e '[.[]|select(.type=="lost")|(.start <= .time and .cpu >= 1)]|all' "$OUT/flood.json"
	[ "$(jq -r 'select(.type=="end") | .lost_events' "$OUT/flood.json")" = "$lost" ]
	[[ $stderr == *"sp-record: warning: $lost kernel events lost ($got recorded)"* ]]
}

@test "sp-record-events: no program of ours stays attached, whatever the exit" {
	need_bpf
	command -v bpftool >/dev/null || skip "needs bpftool"
	# normal exit, SIGINT to sp-record, SIGKILL to sp-record
	for how in exit INT KILL; do
		secs=30
		[ "$how" = exit ] && secs=3
		rm -f "$OUT/pid"
		sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$OUT/pid" \
			sp-record --no-samples --events=all -o "$OUT/a.sp" -- sleep $secs &
		job=$!
		# loading takes a while on a busy machine: wait until the command runs
		ids=
		for i in $(seq 200); do
			rec=$(cat "$OUT/pid" 2>/dev/null || true)
			if [ -n "$rec" ]; then
				cmd=$(cat /proc/$rec/task/$rec/children 2>/dev/null || true)
				ids=$(prog_ids_of "$rec")
				[ -n "$cmd" ] && [ -n "$ids" ] && break
			fi
			sleep 0.1
		done
		# sp-record holds our programs (and maybe others: all must go)
		[ -n "$ids" ]
		for id in $ids; do bpftool prog show id "$id"; done | grep -q -E "name ($OURS) "
		[ "$how" = exit ] || kill -"$how" "$rec"
		wait "$job" || true
		[ "$how" != KILL ] || kill "$cmd" 2>/dev/null || true
		# the kernel frees a program after an RCU grace period: allow 10 s
		for id in $ids; do
			for i in $(seq 100); do
				bpftool prog show id "$id" >/dev/null 2>&1 || break
				sleep 0.1
			done
			if bpftool prog show id "$id" >/dev/null 2>&1; then
				echo "program $id still loaded after $how" >&2
				false
			fi
		done
	done
}

@test "sp-record-events: --no-samples keeps processes and mappings with the perf dummy event, no sample" {
	# the pid and the binary are checked against what the shell itself says
	run --separate-stderr -0 sp-record --no-samples --events=none --spans=none -o "$OUT/d.sp" -- \
		sh -c 'echo $$ > "$1"; exec /bin/sleep 0.01' sh "$D/pid"
	sp-decode "$OUT/d.sp" > "$OUT/d.json"
	pid=$(cat "$D/pid")
	assert_equal "$(header < "$OUT/d.json" | jq -r .event)" "dummy"
	header < "$OUT/d.json" | jq -e '.features | split(" ") | index("perf=dummy") and index("samples=none")'
	header < "$OUT/d.json" | jq -e '(.sample_freq // 0) == 0 and (.sample_period // 0) == 0'
	assert_equal "$(jq -s '[.[] | select(.type=="sample")] | length' "$OUT/d.json")" 0
	jq -e -s --argjson p "$pid" 'any(.[]; .type=="process" and .pid==$p)' "$OUT/d.json"
	# the exec'd sleep is mapped: its module record names the real file
	sleep_path=$(readlink -f /bin/sleep)
	jq -e -s --arg f "$sleep_path" 'any(.[]; .type=="module" and (.path==$f or .path=="/bin/sleep" or .path=="/usr/bin/sleep"))' "$OUT/d.json"
}
