#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what StackPulse needs to build, test and benchmark, from Debian's
# packages only. Idempotent: installs only what is missing.
#   --test  also what only the tests use: chromium, to render the SVG flame
#           graph in a headless browser; time (GNU time: a tool's largest
#           resident size); valgrind, which another user runs while
#           sp-record records (make check passes it; make demo not);
#           golang-go, whose `go tool pprof` reads sp-flame's pprof files;
#           debuginfod, the server sp-symbolize's debuginfod tests start;
#           podman and runc, the container runtime tests/containers.bats
#           runs images in (runc: crun refuses hybrid cgroup hierarchies);
#           docker.io beside it (its daemon is not started by the package
#           here: the Docker tests start dockerd themselves, without
#           iptables or a bridge);
#           faketime, with which the flight recorder test sets the clock back;
#           dwz, which makes the shared DWARF files sp-symbolize's tests read;
#           acl (setfacl), with which a test gives a library an ACL
set -e
PKGS="make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev libdw-dev
libjansson-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
systemtap-sdt-dev libclang-rt-14-dev bats bats-support bats-assert
elfutils binutils ruby python3 linux-perf strace hyperfine libiberty-dev jq g++
libxml2-utils ruby-dev python3-dev libdebuginfod-dev"
if [ "${1:-}" = --test ]; then
	PKGS="$PKGS chromium time valgrind golang-go debuginfod podman runc docker.io
faketime dwz acl"
fi
missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing:$missing; run as root (or: sudo $0)" >&2
	exit 2
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
