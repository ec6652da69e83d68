# SPDX-License-Identifier: MIT
# StackPulse: one non-recursive Makefile; every build output is under build/.

OUT ?= build
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
CLANG ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)

PKGS := libbpf libelf libdw jansson libprotobuf-c zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-MMD -MP -D_GNU_SOURCE -Ilib/include/stackpulse -Ilib -I$(OUT) -Ibpf $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS) -liberty -lm -lpthread

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

TOOLS := $(patsubst tools/%.c,%,$(wildcard tools/sp-*.c))
LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(patsubst %.c,$(OUT)/%.o,$(LIB_SRCS))
LIB := $(OUT)/libstackpulse.a
BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test-*.c)
UNITS := $(patsubst tests/unit/%.c,$(OUT)/unit/%,$(UNIT_SRCS))
ASAN_UNITS := $(patsubst tests/unit/%.c,$(OUT)/asan/%,$(UNIT_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz-*.c)
FUZZERS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))
EXAMPLE_SRCS := $(wildcard tests/fixtures/src/*.c)
EXAMPLES := $(patsubst tests/fixtures/src/%.c,$(OUT)/examples/%,$(EXAMPLE_SRCS))
BINS := $(addprefix $(OUT)/bin/,$(TOOLS))
MANPAGES := $(patsubst docs/%.md,$(OUT)/man/%.1,$(wildcard docs/sp-*.md))


.PHONY: all check test man unit bats fuzz fuzz-run demo install clean deps bench asan-record
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BINS) $(EXAMPLES) $(OUT)/examples/spans_cxx

deps:
	$(Q)scripts/install-deps.sh

$(OUT)/lib/%.o: lib/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/tools/%.o: tools/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Only the BPF loaders (lib/bpf_*.c) and sp-record need clang and BTF.
$(filter $(OUT)/lib/bpf_%.o,$(LIB_OBJS)): | $(SKELS)
$(OUT)/tools/sp-record.o: | $(SKELS)

# sp-flame's pprof export: pprof's profile.proto, compiled by protoc-c into
# $(OUT)/proto/; lib/pprof.c includes the generated code (so every build of
# the library, plain, sanitized and fuzzing, carries it).
PROTOC_C ?= protoc-c
$(OUT)/proto/profile.pb-c.h: lib/profile.proto
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(PROTOC_C) --proto_path=lib --c_out=$(@D) $<
$(OUT)/lib/pprof.o $(OUT)/asan/lib/pprof.o $(OUT)/fuzz/lib/pprof.o: $(OUT)/proto/profile.pb-c.h

$(OUT)/bin/%: $(OUT)/tools/%.o $(LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# BPF: only the programs in bpf/ need clang and the kernel's BTF.
$(OUT)/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(OUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(OUT)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -I$(OUT) -Ibpf \
		-I/usr/include/$(MULTIARCH) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sp_$* > $@

# Example and fixture programs: frame pointers and debug info for stable stacks.
$(OUT)/examples/%: tests/fixtures/src/%.c lib/include/stackpulse/span.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -fno-inline-functions-called-once -Ilib/include \
		-o $@ $< -lpthread -lm

# The span markers as a C++ program gets them (generic USDT operands, not
# the fixed registers of C on x86-64): the same call tree, the other BPF path.
CXX ?= c++
$(OUT)/examples/spans_cxx: tests/fixtures/src/spans_c.c lib/include/stackpulse/span.h
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -x c++ -O1 -g -fno-omit-frame-pointer -fno-inline-functions-called-once \
		-Ilib/include -o $@ $< -lpthread

# The runtime directory of the build tree, $(OUT)/runtime: the activators,
# and on x86-64 the runtime hooks, a Ruby 3.1 and a CPython 3.11 extension
# that mark spans with markers of their own (lib/runtime/hook/marker.h).
# Each hook is built when its headers are there (ruby-dev, python3-dev);
# without it sp-record uses the runtime's own probes.
RUNTIME := $(patsubst lib/%,$(OUT)/%,$(wildcard lib/runtime/ruby/*.rb lib/runtime/python/*.py))
HOOK_DEPS := $(wildcard lib/runtime/hook/*.[ch]) bpf/spans.h
HOOK_SRCS := lib/runtime/hook/names.c lib/runtime/hook/ring.c
HOOK_CFLAGS := -O2 -g -fPIC -shared -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
RUBY_HOOK_CFLAGS := $(shell pkg-config --cflags ruby-3.1 2>/dev/null)
PY_HOOK_CFLAGS := $(shell pkg-config --cflags python-3.11 2>/dev/null)
PY_EXT_SUFFIX := $(shell python3.11 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
ifeq ($(ARCH),x86)
ifneq ($(RUBY_HOOK_CFLAGS),)
RUNTIME += $(OUT)/runtime/ruby/3.1/stackpulse_hook.so
endif
ifneq ($(PY_HOOK_CFLAGS),)
ifneq ($(PY_EXT_SUFFIX),)
RUNTIME += $(OUT)/runtime/python/_stackpulse_hook$(PY_EXT_SUFFIX)
endif
endif
endif
all: $(RUNTIME)
$(OUT)/runtime/%: lib/runtime/%
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@
$(OUT)/runtime/ruby/3.1/stackpulse_hook.so: lib/runtime/ruby/stackpulse_hook.c $(HOOK_DEPS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(HOOK_CFLAGS) $(RUBY_HOOK_CFLAGS) -o $@ $< $(HOOK_SRCS) -lpthread
$(OUT)/runtime/python/_stackpulse_hook$(PY_EXT_SUFFIX): lib/runtime/python/stackpulse_hook.c $(HOOK_DEPS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(HOOK_CFLAGS) $(PY_HOOK_CFLAGS) -o $@ $< $(HOOK_SRCS) -lpthread

# A library with span markers, a program that needs it (rpath: beside it)
# and one that loads it with dlopen().
$(OUT)/examples/libspans_lib.so: tests/fixtures/lib/spans_lib.c lib/include/stackpulse/span.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -fPIC -shared -Ilib/include -o $@ $<
$(OUT)/examples/spans_uselib: tests/fixtures/lib/spans_uselib.c $(OUT)/examples/libspans_lib.so
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -Ilib/include -o $@ $< -L$(OUT)/examples -lspans_lib '-Wl,-rpath,$$ORIGIN'
$(OUT)/examples/spans_dlopen: tests/fixtures/lib/spans_dlopen.c $(OUT)/examples/libspans_lib.so
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -o $@ $< -ldl
all: $(OUT)/examples/spans_uselib $(OUT)/examples/spans_dlopen

# Unit tests: plain, and under AddressSanitizer + UndefinedBehaviorSanitizer.
$(OUT)/unit/%: tests/unit/%.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(LIB) $(LDLIBS)

ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_LIB := $(OUT)/asan/libstackpulse.a
ASAN_OBJS := $(patsubst %.c,$(OUT)/asan/%.o,$(LIB_SRCS))
$(OUT)/asan/lib/%.o: lib/%.c
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -O1 $(ASAN_FLAGS) -c $< -o $@
$(filter $(OUT)/asan/lib/bpf_%.o,$(ASAN_OBJS)): | $(SKELS)
$(ASAN_LIB): $(ASAN_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(OUT)/asan/%: tests/unit/%.c $(ASAN_LIB)
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -O1 $(ASAN_FLAGS) -Itests/unit -o $@ $< $(ASAN_LIB) $(LDLIBS)

# sp-record itself under the sanitizers (its threads and libbpf's USDT
# manager: tests/sp-record-safety.bats); its runtime directory is the build
# tree's (SP_RUNTIME_DIR).
$(OUT)/asan/bin/sp-record: tools/sp-record.c $(ASAN_LIB) | $(SKELS)
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -O1 $(ASAN_FLAGS) -o $@ $< $(ASAN_LIB) $(LDLIBS)
asan-record: $(OUT)/asan/bin/sp-record

unit: $(UNITS) $(ASAN_UNITS)

bats: all

# 'make check' and 'make demo' install what a fresh machine lacks first, then
# run again so that pkg-config sees the newly installed libraries.
check:
	$(Q)scripts/install-deps.sh --test
	$(Q)$(MAKE) --no-print-directory test

test: all unit asan-record
	$(Q)scripts/run-tests.sh $(OUT)

# Fuzz targets: clang's libFuzzer, with ASan and UBSan, over their own build
# of the library (in which lib/symcache.c skips its checksums, so that mutated
# cache files reach the checks behind them).
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_LIB := $(OUT)/fuzz/libstackpulse.a
FUZZ_OBJS := $(patsubst %.c,$(OUT)/fuzz/%.o,$(LIB_SRCS))
$(OUT)/fuzz/lib/%.o: lib/%.c
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) -O1 -g $(FUZZ_FLAGS) -c $< -o $@
$(filter $(OUT)/fuzz/lib/bpf_%.o,$(FUZZ_OBJS)): | $(SKELS)
$(FUZZ_LIB): $(FUZZ_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(OUT)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_LIB) $(LDLIBS)

fuzz: $(FUZZERS)

FUZZ_SECONDS ?= 60
fuzz-run: fuzz
	$(Q)for f in $(FUZZERS); do n=$${f##*/}; mkdir -p $(OUT)/corpus/$$n; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 $(OUT)/corpus/$$n tests/fuzz/corpus/$$n || exit 1; done

demo:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh $(OUT)

bench: all
	$(Q)for b in scripts/bench/*; do [ -x "$$b" ] && "$$b"; done

$(OUT)/man/%.1: docs/%.md scripts/md2man.sh
	$(Q)mkdir -p $(@D)
	$(Q)scripts/md2man.sh $< > $@

man: $(MANPAGES)

install: all $(MANPAGES)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/stackpulse \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 lib/include/stackpulse/*.h $(DESTDIR)$(PREFIX)/include/stackpulse/
	install -d $(DESTDIR)$(PREFIX)/share/stackpulse
	cp -R $(OUT)/runtime $(DESTDIR)$(PREFIX)/share/stackpulse/
	$(if $(MANPAGES),install -m 644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man1/)

clean:
	rm -rf $(OUT)

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
