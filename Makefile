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

PKGS := libbpf libelf libdw libdebuginfod jansson libprotobuf-c zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-MMD -MP -D_GNU_SOURCE -Ilib/include/stackpulse $(PKG_CFLAGS)
# The library's own files also reach the stages' private headers
# ("elf/symtab.h"); the tools see only lib/include/stackpulse; the recording
# stage also needs the BPF skeletons and the headers it shares with bpf/.
LIB_CFLAGS := -Ilib
RECORD_CFLAGS := -Ilib -I$(OUT) -Ibpf
LDLIBS += $(PKG_LIBS) -liberty -lm -lpthread

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

TOOLS := $(patsubst tools/%.c,%,$(wildcard tools/sp-*.c))
# The library, by stage: one folder and one archive each (docs/hacking.md).
# Listed so that a stage comes before every stage it uses (the link order);
# only 'record' needs BPF (clang, bpftool and the kernel's BTF).
STAGES := record import render correlate symbolize elf stream base
FILTER_STAGES := $(filter-out record,$(STAGES))
LIB_SRCS := $(wildcard $(patsubst %,lib/%/*.c,$(STAGES)))
stage_libs = $(patsubst %,$(1)/lib/libsp-%.a,$(2))
LIBS := $(call stage_libs,$(OUT),$(STAGES))
FILTER_LIBS := $(call stage_libs,$(OUT),$(FILTER_STAGES))
# sp-record records; the other tools only read records and build without BPF.
tool_libs = $(if $(filter sp-record,$(1)),$(LIBS),$(FILTER_LIBS))
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


.PHONY: FORCE all check test man unit bats fuzz fuzz-run fuzz-standalone filters demo install clean deps bench \
	asan-record
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BINS) $(EXAMPLES) $(OUT)/examples/spans_cxx

deps:
	$(Q)scripts/install-deps.sh

$(OUT)/lib/%.o: lib/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

# What every tool's --version says: the commit it was built from (and
# whether the checkout had changes); the stamp changes, and the one object
# that says it is built again, only when that does.
SP_VERSION := $(or $(shell git -C $(CURDIR) describe --always --dirty --abbrev=12 2>/dev/null),unknown)
$(OUT)/version.stamp: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)echo '$(SP_VERSION)' | cmp -s - $@ || echo '$(SP_VERSION)' > $@
FORCE:
$(foreach d,$(OUT) $(OUT)/asan $(OUT)/fuzz,$(d)/lib/base/opt.o): $(OUT)/version.stamp
$(foreach d,$(OUT) $(OUT)/asan $(OUT)/fuzz,$(d)/lib/base/opt.o): \
	LIB_CFLAGS += -DSP_VERSION='"$(SP_VERSION)"'

# One archive per stage and build flavour (plain, sanitized, fuzzing):
# $(1) is the flavour's output directory, $(2) the stage.
define stage_archive
$(1)/lib/libsp-$(2).a: $$(patsubst %.c,$(1)/%.o,$$(wildcard lib/$(2)/*.c))
	$$(call msg,AR,$$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach s,$(STAGES),$(eval $(call stage_archive,$(OUT),$(s))))
# The whole library in one archive, for programs outside the tree (it is
# what `make install` installs; the benchmarks' generators link it).
$(OUT)/libstackpulse.a: $(patsubst %.c,$(OUT)/%.o,$(LIB_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
all: $(OUT)/libstackpulse.a
$(foreach s,$(STAGES),$(eval $(call stage_archive,$(OUT)/asan,$(s))))
$(foreach s,$(STAGES),$(eval $(call stage_archive,$(OUT)/fuzz,$(s))))
$(OUT)/lib/record/%.o $(OUT)/asan/lib/record/%.o $(OUT)/fuzz/lib/record/%.o: \
	LIB_CFLAGS = $(RECORD_CFLAGS)

$(OUT)/tools/%.o: tools/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Only the BPF loaders (lib/record/bpf_*.c) need clang and BTF.
$(patsubst %,$(OUT)/%.o,$(basename $(wildcard lib/record/bpf_*.c))): | $(SKELS)

# sp-flame's pprof export: pprof's profile.proto, compiled by protoc-c into
# $(OUT)/proto/; lib/render/pprof.c includes the generated code (so every build of
# the library, plain, sanitized and fuzzing, carries it).
PROTOC_C ?= protoc-c
$(OUT)/proto/profile.pb-c.h: lib/render/profile.proto
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(PROTOC_C) --proto_path=lib/render --c_out=$(@D) $<
$(OUT)/lib/render/pprof.o $(OUT)/asan/lib/render/pprof.o $(OUT)/fuzz/lib/render/pprof.o: \
	$(OUT)/proto/profile.pb-c.h
$(OUT)/lib/render/pprof.o $(OUT)/asan/lib/render/pprof.o $(OUT)/fuzz/lib/render/pprof.o: \
	LIB_CFLAGS += -I$(OUT)

# OTLP export (sp-export): OpenTelemetry's own .proto files, release v1.11.0
# (third_party/opentelemetry-proto/README.md), compiled by protoc-c into
# $(OUT)/proto/opentelemetry/; lib/render/otlp_pb.c includes the generated
# code as pprof.c does.
OTLP_PROTO_DIR := third_party/opentelemetry-proto
OTLP_PROTOS := $(sort $(shell find $(OTLP_PROTO_DIR)/opentelemetry -name '*.proto' 2>/dev/null))
OTLP_PB_H := $(patsubst $(OTLP_PROTO_DIR)/%.proto,$(OUT)/proto/%.pb-c.h,$(OTLP_PROTOS))
$(OUT)/proto/opentelemetry/%.pb-c.h: $(OTLP_PROTO_DIR)/opentelemetry/%.proto
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(OUT)/proto
	$(Q)$(PROTOC_C) --proto_path=$(OTLP_PROTO_DIR) --c_out=$(OUT)/proto $<
OTLP_PB_OBJS := $(foreach d,$(OUT) $(OUT)/asan $(OUT)/fuzz,$(d)/lib/render/otlp_pb.o \
	$(d)/lib/render/otlp_json.o $(d)/lib/render/otlp_profiles.o)
$(OTLP_PB_OBJS) $(OUT)/unit/test-otlp $(OUT)/asan/test-otlp: $(OTLP_PB_H) $(OUT)/proto/profile.pb-c.h
$(OTLP_PB_OBJS): LIB_CFLAGS += -I$(OUT) -I$(OUT)/proto
$(OUT)/unit/test-otlp $(OUT)/asan/test-otlp: UNIT_CFLAGS += -I$(OUT)/proto

$(OUT)/bin/sp-record: $(LIBS)
$(addprefix $(OUT)/bin/,$(filter-out sp-record,$(TOOLS))): $(FILTER_LIBS)
$(OUT)/bin/%: $(OUT)/tools/%.o
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
# that mark spans with markers of their own (runtime/hook/marker.h).
# Each hook is built when its headers are there (ruby-dev, python3-dev);
# without it sp-record uses the runtime's own probes.
RUNTIME := $(addprefix $(OUT)/,$(wildcard runtime/ruby/*.rb runtime/python/*.py))
HOOK_DEPS := $(wildcard runtime/hook/*.[ch]) bpf/spans.h
HOOK_SRCS := runtime/hook/names.c runtime/hook/ring.c
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
$(OUT)/runtime/%: runtime/%
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@
$(OUT)/runtime/ruby/3.1/stackpulse_hook.so: runtime/ruby/stackpulse_hook.c $(HOOK_DEPS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(HOOK_CFLAGS) $(RUBY_HOOK_CFLAGS) -o $@ $< $(HOOK_SRCS) -lpthread
$(OUT)/runtime/python/_stackpulse_hook$(PY_EXT_SUFFIX): runtime/python/stackpulse_hook.c $(HOOK_DEPS)
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
# A test of a recording module (tests/unit/test-X.c for lib/record/X.c, and
# the hooks' tests) links every stage; the others only the filters' stages,
# so that they build without BPF. Tests reach the stages' private headers.
RECORD_TESTS := $(patsubst lib/record/%.c,test-%,$(wildcard lib/record/*.c)) test-rt_names
unit_libs = $(call stage_libs,$(1),$(if $(filter $(RECORD_TESTS),$(2)),$(STAGES),$(FILTER_STAGES)))
UNIT_CFLAGS := $(RECORD_CFLAGS) -Itests/unit
.SECONDEXPANSION:
$(OUT)/unit/%: tests/unit/%.c $$(call unit_libs,$(OUT),%)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(UNIT_CFLAGS) -o $@ $< $(call unit_libs,$(OUT),$*) $(LDLIBS)

ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
$(OUT)/asan/lib/%.o: lib/%.c
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -O1 $(ASAN_FLAGS) -c $< -o $@
$(patsubst %,$(OUT)/asan/%.o,$(basename $(wildcard lib/record/bpf_*.c))): | $(SKELS)
$(OUT)/asan/%: tests/unit/%.c $$(call unit_libs,$(OUT)/asan,%)
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(UNIT_CFLAGS) -O1 $(ASAN_FLAGS) -o $@ $< \
		$(call unit_libs,$(OUT)/asan,$*) $(LDLIBS)

# sp-record itself under the sanitizers (its threads and libbpf's USDT
# manager: tests/sp-record-safety.bats); its runtime directory is the build
# tree's (SP_RUNTIME_DIR).
$(OUT)/asan/bin/sp-record: tools/sp-record.c $(call stage_libs,$(OUT)/asan,$(STAGES))
	$(call msg,ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -O1 $(ASAN_FLAGS) -o $@ $< $(call stage_libs,$(OUT)/asan,$(STAGES)) \
		$(LDLIBS)
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
# of the library (in which lib/symbolize/symcache.c skips its checksums, so that mutated
# cache files reach the checks behind them).
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
$(OUT)/fuzz/lib/%.o: lib/%.c
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) $(LIB_CFLAGS) -O1 -g $(FUZZ_FLAGS) -c $< -o $@
$(patsubst %,$(OUT)/fuzz/%.o,$(basename $(wildcard lib/record/bpf_*.c))): | $(SKELS)
# A fuzz target of a recording input (the span rings, perf rings, JIT perf
# maps, a live interpreter's code objects) links every stage; the others
# only the filters'.
RECORD_FUZZERS := fuzz-span_rings fuzz-perf_ring fuzz-perfmap fuzz-interp
fuzz_libs = $(call stage_libs,$(OUT)/fuzz,$(if $(filter $(RECORD_FUZZERS),$(1)),$(STAGES),$(FILTER_STAGES)))
$(OUT)/fuzz/%: tests/fuzz/%.c $$(call fuzz_libs,%)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) $(UNIT_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined -o $@ $< \
		$(call fuzz_libs,$*) $(LDLIBS)

fuzz: $(FUZZERS)

# The filters' fuzz targets without libFuzzer: the C compiler, ASan and UBSan,
# and tests/fuzz/standalone.c's main() to run a corpus once (no clang needed).
FILTER_FUZZERS := $(filter-out $(RECORD_FUZZERS),$(patsubst tests/fuzz/%.c,%,$(FUZZ_SRCS)))
$(OUT)/fuzz-standalone/%: tests/fuzz/%.c tests/fuzz/standalone.c \
		$(call stage_libs,$(OUT)/asan,$(FILTER_STAGES))
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(UNIT_CFLAGS) -O1 $(ASAN_FLAGS) -o $@ $< tests/fuzz/standalone.c \
		$(call stage_libs,$(OUT)/asan,$(FILTER_STAGES)) $(LDLIBS)
fuzz-standalone: $(addprefix $(OUT)/fuzz-standalone/,$(FILTER_FUZZERS))

# What reads records, built alone: the filters, their unit tests and their
# fuzz targets need neither clang, nor bpftool, nor the kernel's BTF
# (tests/build.bats builds this with those taken away).
FILTER_BINS := $(addprefix $(OUT)/bin/,$(filter-out sp-record,$(TOOLS)))
filters: $(FILTER_BINS) $(filter-out $(foreach t,$(RECORD_TESTS),$(OUT)/unit/$(t) $(OUT)/asan/$(t)),$(UNITS) $(ASAN_UNITS)) fuzz-standalone

FUZZ_SECONDS ?= 60
fuzz-run: fuzz
	$(Q)for f in $(FUZZERS); do n=$${f##*/}; mkdir -p $(OUT)/corpus/$$n; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 $(OUT)/corpus/$$n tests/fuzz/corpus/$$n || exit 1; done

demo:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh $(OUT)

bench: all
	$(Q)for b in scripts/bench/*; do [ -x "$$b" ] && [ "$${b##*/}" != builds ] && "$$b"; done

$(OUT)/man/%.1: docs/%.md scripts/md2man.sh
	$(Q)mkdir -p $(@D)
	$(Q)scripts/md2man.sh $< > $@

man: $(MANPAGES)

install: all $(MANPAGES)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/stackpulse \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(OUT)/libstackpulse.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 lib/include/stackpulse/*.h $(DESTDIR)$(PREFIX)/include/stackpulse/
	install -d $(DESTDIR)$(PREFIX)/share/stackpulse
	cp -R $(OUT)/runtime $(DESTDIR)$(PREFIX)/share/stackpulse/
	$(if $(MANPAGES),install -m 644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man1/)

clean:
	rm -rf $(OUT)

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
