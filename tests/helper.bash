# SPDX-License-Identifier: MIT
# Loaded by every .bats file.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

SP_BIN=${SP_BIN:-$BATS_TEST_DIRNAME/../build/bin}
SP_EXAMPLES=${SP_EXAMPLES:-$BATS_TEST_DIRNAME/../build/examples}
PATH=$SP_BIN:$PATH
SP_TOOLS=$(cd "$SP_BIN" && echo sp-*)
export LC_ALL=C
# Caches (sp-symbolize's DWARF indexes, sp-record's kallsyms) go to this run's
# temporary directory, never to ~/.cache.
export SP_CACHE_DIR=${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/sp-cache
f=${BATS_TEST_FILENAME##*/}
FIXTURES=$BATS_TEST_DIRNAME/fixtures/${f%.bats}

# Skip unless root (recording needs perf_event_open with kernel stacks and BPF).
require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root: perf_event_open and BPF"
}

# Skip unless a command exists.
require_cmd() {
	command -v "$1" >/dev/null || skip "needs $1 (${2:-not installed})"
}

# A copy of the tools, their runtime directory and the example programs that
# user nobody can run: the checkout may be in a directory only root can enter
# (/root/..., mode 0700). Sets NOBODY_DIR (remove it at the end of the test),
# NOBODY_BIN and NOBODY_EXAMPLES.
nobody_tools() {
	NOBODY_DIR=$(mktemp -d /tmp/sp-nobody.XXXXXX)
	mkdir -p "$NOBODY_DIR/bin" "$NOBODY_DIR/examples"
	cp "$SP_BIN"/sp-* "$NOBODY_DIR/bin/"
	if [ -d "$SP_BIN/../runtime" ]; then
		cp -R "$SP_BIN/../runtime" "$NOBODY_DIR/runtime"
	fi
	cp -R "$SP_EXAMPLES"/. "$NOBODY_DIR/examples/"
	chmod -R a+rX "$NOBODY_DIR"
	NOBODY_BIN=$NOBODY_DIR/bin
	NOBODY_EXAMPLES=$NOBODY_DIR/examples
}
