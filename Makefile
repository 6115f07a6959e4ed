# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# arena-alloc: bpf -> linked object -> skeleton -> lib -> CLI -> tests
OUTPUT := build
CLANG ?= clang-19
LLVM_STRIP ?= llvm-strip-19
BPFTOOL ?= bpftool
CC ?= gcc
# The BPF objects are per architecture: -D__TARGET_ARCH_$(ARCH) picks the
# memory-ordering code of arena_alloc.bpf.h (plain stores on x86, atomic
# exchanges elsewhere). ARCH is the build host's unless given: `make
# ARCH=arm64 build/libarena_alloc.bpf.o` (uname -m names work too).
ARCH ?= $(shell uname -m)
override ARCH := $(shell echo '$(ARCH)' | sed 's/x86_64/x86/' | sed 's/aarch64/arm64/' \
	| sed 's/ppc64le/powerpc/' | sed 's/mips.*/mips/' | sed 's/riscv64/riscv/')
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
# Install layout (make install / uninstall; DESTDIR for staging): Debian's
# multiarch libdir, one include directory, the BPF object beside the libs.
PREFIX ?= /usr/local
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man

LIBBPF_CFLAGS := $(shell pkg-config --cflags libbpf 2>/dev/null)
LIBBPF_LIBS := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf)
INCLUDES := -I$(OUTPUT) -Iinclude -Ibpf
CFLAGS ?= -g -O2
CFLAGS += -Wall -Werror -Wno-unused-function -fPIC $(LIBBPF_CFLAGS)
BPF_CFLAGS := -g -O2 -fno-builtin -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-Wno-unused-function

# clang's own system includes for -target bpf (libbpf-bootstrap)
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s%s\n' "$(1)" "$(patsubst $(abspath $(OUTPUT))/%,%,$(2))" \
		"$(if $(3), $(3))";
	MAKEFLAGS += --no-print-directory
endif

define allow-override
  $(if $(or $(findstring environment,$(origin $(1))),\
            $(findstring command line,$(origin $(1)))),,\
    $(eval $(1) = $(2)))
endef
$(call allow-override,CC,$(CROSS_COMPILE)cc)
$(call allow-override,LD,$(CROSS_COMPILE)ld)

# Library tiers, in the order a request passes through them.
# Library tiers (bpf/*.bpf.c), compiled as one unit by bpf/arena_alloc.bpf.c.
LIB_BPF_OBJS := $(OUTPUT)/bpf/arena_alloc.bpf.o
LIB_BPF := $(OUTPUT)/libarena_alloc.bpf.o
BPF_HDRS := $(wildcard bpf/*.h) $(wildcard bpf/*.bpf.c) $(wildcard include/*.h) $(wildcard tests/*.h) \
	$(OUTPUT)/.bpf-arch
# Every BPF object is rebuilt when ARCH changes: $(OUTPUT)/.bpf-arch holds
# the last one (rewritten at parse time only when it differs).
$(shell mkdir -p $(OUTPUT); [ "$$(cat $(OUTPUT)/.bpf-arch 2>/dev/null)" = '$(ARCH)' ] \
	|| echo '$(ARCH)' > $(OUTPUT)/.bpf-arch)

USER_SRCS := user/heap.c user/stats.c user/pin.c user/find.c user/refill.c user/defer.c user/debug.c \
	user/fault.c user/probe.c
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
LIB_A := $(OUTPUT)/libarena_alloc.a
# The shared library: the real file, its soname link, the development link.
VERSION := 0.1.0
SONAME := libarena_alloc.so.0
LIB_SO_REAL := $(OUTPUT)/libarena_alloc.so.$(VERSION)
LIB_SO := $(OUTPUT)/libarena_alloc.so
CLI := $(OUTPUT)/arena-alloc

TEST_BPF_SRCS := $(wildcard tests/bpf/*.bpf.c)
TEST_SKELS := $(patsubst tests/bpf/%.bpf.c,$(OUTPUT)/tests/%.skel.h,$(TEST_BPF_SRCS))
TEST_SRCS := $(wildcard tests/*.c)
TEST_OBJS := $(patsubst tests/%.c,$(OUTPUT)/tests/%.o,$(TEST_SRCS))
TEST_BIN := $(OUTPUT)/aa_tests

DEPS_STAMP := $(OUTPUT)/.deps-ok

# Everything that creates BPF arena maps (test, run, stress, examples,
# bench) runs through scripts/run-bpf.sh: on this host when its kernel
# creates them (`arena-alloc probe`), else in the $(VMTEST_KERNEL) guest of
# `make vmtest` after one line saying why. AA_TEST_WHERE=host|guest forces
# either (default auto). Needs the CLI built (it probes).
AA_TEST_WHERE ?= auto
export AA_TEST_WHERE
RUN_BPF = AA_CLI=$(CLI) bash scripts/run-bpf.sh -k '$(VMTEST_KERNEL)' -c '$(VMTEST_CPUS)' \
	-m '$(VMTEST_MEM)' -t '$(VMTEST_TIMEOUT)' -a '$(VMTEST_APPEND)'

.PHONY: all deps lib cli test run clean install uninstall header-check examples examples-build \
	examples-uninstall
all: lib cli $(TEST_BIN)

# Install missing tools (scripts/install-deps.sh is idempotent and quick
# when everything is there); re-checked when the script changes.
deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps.sh
	$(call msg,DEPS,install-deps.sh)
	$(Q)mkdir -p $(OUTPUT)
	$(Q)bash scripts/install-deps.sh
	$(Q)touch $@

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/user $(OUTPUT)/tests $(OUTPUT)/headers $(OUTPUT)/cli:
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(DEPS_STAMP) $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

# BPF objects: compile, strip DWARF (keeps BTF)
$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) $(OUTPUT)/vmlinux.h | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(INCLUDES) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUTPUT)/tests/%.bpf.o: tests/bpf/%.bpf.c $(BPF_HDRS) $(OUTPUT)/vmlinux.h | $(OUTPUT)/tests
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(INCLUDES) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

# One static BPF object for embedders (bpftool gen object).
$(LIB_BPF): $(LIB_BPF_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

# The library's own loadable object (aa_heap__open()): the embeddable one
# plus a license section and the arena map, which it leaves to its embedder.
LIB_OWN_BPF := $(OUTPUT)/arena_alloc.own.bpf.o
$(LIB_OWN_BPF): $(LIB_BPF) $(OUTPUT)/bpf/own.bpf.o
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUTPUT)/arena_alloc.skel.h: $(LIB_OWN_BPF)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name arena_alloc > $@

# Test programs are linked with the library, like an embedder would.
$(OUTPUT)/tests/%.linked.o: $(OUTPUT)/tests/%.bpf.o $(LIB_BPF)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUTPUT)/tests/%.skel.h: $(OUTPUT)/tests/%.linked.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

# Userspace library
$(OUTPUT)/user/%.o: user/%.c $(wildcard include/*.h) user/internal.h $(OUTPUT)/arena_alloc.skel.h | $(OUTPUT)/user $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -fvisibility=hidden -c $< -o $@

$(LIB_A): $(USER_OBJS)
	$(call msg,AR,$@)
	$(Q)$(AR) rcs $@ $^

$(LIB_SO_REAL): $(USER_OBJS) user/libarena_alloc.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,--version-script=user/libarena_alloc.map \
		-Wl,-soname,$(SONAME) -o $@ $(USER_OBJS) $(LIBBPF_LIBS) -lelf -lz

$(LIB_SO): $(LIB_SO_REAL)
	$(Q)ln -sf $(notdir $<) $(OUTPUT)/$(SONAME)
	$(Q)ln -sf $(SONAME) $@

lib: $(LIB_BPF) $(LIB_A) $(LIB_SO)

# The CLI: user/cli/, one file per command group, the table in main.c.
CLI_SRCS := $(wildcard user/cli/*.c)
CLI_OBJS := $(patsubst user/cli/%.c,$(OUTPUT)/cli/%.o,$(CLI_SRCS))
$(OUTPUT)/cli/%.o: user/cli/%.c user/cli/cli.h $(wildcard include/*.h) | $(OUTPUT)/cli $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(OUTPUT)/cli -Iuser/cli/bpf -c $< -o $@

# The demo's own BPF object: a tc program linked with the library, as an
# embedder's would be.
$(OUTPUT)/cli/demo.bpf.o: user/cli/bpf/demo.bpf.c user/cli/bpf/demo.h $(BPF_HDRS) $(OUTPUT)/vmlinux.h | $(OUTPUT)/cli
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(INCLUDES) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUTPUT)/cli/demo.linked.o: $(OUTPUT)/cli/demo.bpf.o $(LIB_BPF)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUTPUT)/cli/demo.skel.h: $(OUTPUT)/cli/demo.linked.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name demo_bpf > $@

$(OUTPUT)/cli/demo.o: $(OUTPUT)/cli/demo.skel.h user/cli/bpf/demo.h

$(CLI): $(CLI_OBJS) $(LIB_A)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBBPF_LIBS) -lelf -lz -o $@

cli: $(CLI)

# Tests
$(OUTPUT)/tests/%.o: tests/%.c $(wildcard tests/*.h) $(wildcard include/*.h) $(TEST_SKELS) $(OUTPUT)/arena_alloc.skel.h | $(OUTPUT)/tests $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(OUTPUT)/tests -c $< -o $@

# The CLI is built next to it: tests/test_cli.c runs its demo.
$(TEST_BIN): $(TEST_OBJS) $(LIB_A) | $(CLI)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBBPF_LIBS) -lelf -lz -lcriterion -ljansson -o $@

# The headers compile on their own: arena_alloc.h in C and C++ and in any
# order with libbpf's, arena_alloc.bpf.h after just vmlinux.h and
# <bpf/bpf_helpers.h>; all with -Wall -Wextra -Werror.
HDR_CHECK_FLAGS := -Wall -Wextra -Werror -Iinclude $(LIBBPF_CFLAGS)
HDR_CHECKS := $(OUTPUT)/headers/user_alone.c.o $(OUTPUT)/headers/user_alone.cpp.o \
	$(OUTPUT)/headers/user_after_libbpf.c.o $(OUTPUT)/headers/bpf_alone.bpf.o
$(OUTPUT)/headers/%.c.o: tests/headers/%.c $(wildcard include/*.h) | $(OUTPUT)/headers $(DEPS_STAMP)
	$(call msg,HDR-C,$<)
	$(Q)$(CC) -std=c11 $(HDR_CHECK_FLAGS) -c $< -o $@
$(OUTPUT)/headers/%.cpp.o: tests/headers/%.c $(wildcard include/*.h) | $(OUTPUT)/headers $(DEPS_STAMP)
	$(call msg,HDR-C++,$<)
	$(Q)$(CXX) -std=c++17 -x c++ $(HDR_CHECK_FLAGS) -c $< -o $@
$(OUTPUT)/headers/%.bpf.o: tests/headers/%.bpf.c $(wildcard include/*.h) $(OUTPUT)/.bpf-arch \
		$(OUTPUT)/vmlinux.h | $(OUTPUT)/headers
	$(call msg,HDR-BPF,$<)
	$(Q)$(CLANG) -g -O2 -fno-builtin -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
		$(HDR_CHECK_FLAGS) -I$(OUTPUT) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@
# A program linked with the shared library starts: the dynamic loader
# finds the soname (the check runs user_alone.c's main: a NULL heap is
# -EINVAL).
$(OUTPUT)/headers/so_check: tests/headers/user_alone.c $(LIB_SO) | $(OUTPUT)/headers
	$(call msg,SO-CHECK,$@)
	$(Q)$(CC) $(HDR_CHECK_FLAGS) $< -L$(OUTPUT) -larena_alloc $(LIBBPF_LIBS) -o $@
	$(Q)LD_LIBRARY_PATH=$(OUTPUT) $@ 2>/dev/null || \
		{ echo "so-check: $@ did not run against $(SONAME)" >&2; exit 1; }
HDR_CHECKS += $(OUTPUT)/headers/so_check
header-check: $(HDR_CHECKS)

# Criterion runs each test in its own process; -j2 matches this machine.
# Where the host refuses arena maps the suite runs in the guest
# (RUN_BPF), after the tests that need no arena ran here (HOST_TESTS: the
# probe's diagnosis on this very kernel, the size-class table); the last
# "Synthesis:" line is then the guest's. Then the short fuzz run
# (fuzz-short, below; its lines come after Criterion's): any failing
# fails make test.
TEST_ARGS ?= -j2
HOST_TESTS := @(probe|size_classes)/*
test: $(TEST_BIN) $(HDR_CHECKS) fuzz-build
	$(Q)where=$$($(RUN_BPF) --name 'the test suite' --where) && \
	if [ "$$where" = guest ]; then \
		printf '  %-8s %s\n' TEST "$(TEST_BIN) --filter '$(HOST_TESTS)' (host)"; \
		$(TEST_BIN) $(TEST_ARGS) --filter '$(HOST_TESTS)' || exit; \
	fi && \
	printf '  %-8s %s\n' TEST "$(TEST_BIN) ($$where)" && \
	AA_TEST_WHERE=$$where AA_TEST_WHERE_SAID=1 $(RUN_BPF) --name 'the test suite' -- \
		$(TEST_BIN) $(TEST_ARGS)
	$(call msg,FUZZ,$(words $(FUZZ_TARGETS)) targets,x $(FUZZ_SHORT_SECONDS) s)
	$(Q)bash scripts/fuzz.sh $(FUZZ_SHORT_SECONDS) $(FUZZ_DIR) $(FUZZ_TARGETS)

# --- fuzz: libFuzzer targets of the userspace parsers (tests/fuzz/) ---------
# Each tests/fuzz/<target>.c is one LLVMFuzzerTestOneInput(), linked with
# the sources of user/ and user/cli/ compiled again with the same sanitizer
# flags into $(FUZZ_DIR) (the normal objects stay as they are; the CLI's
# main() is renamed, libFuzzer brings its own). scripts/fuzz.sh runs each
# target for the given seconds on its seeds (tests/fuzz/corpus/<target>/,
# what it finds goes to $(FUZZ_DIR)/corpus/<target>/), prints one line of
# totals per target and fails on any crash, leak, timeout or oracle
# failure (the input is saved in $(FUZZ_DIR)/crashes/).
#   make fuzz                  FUZZ_SECONDS (60) per target
#   make fuzz-short            FUZZ_SHORT_SECONDS (1; libFuzzer takes ~2) per target; make test runs it
#   make fuzz FUZZ_TARGETS=cli_size FUZZ_SECONDS=600   one target, longer
FUZZ_DIR := $(OUTPUT)/fuzz
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1
# (user/ first: its internal.h, not bpf/'s)
FUZZ_CFLAGS := $(FUZZ_FLAGS) -Wall -Werror -Wno-unused-function $(LIBBPF_CFLAGS) -Iuser -Iuser/cli \
	$(INCLUDES) -I$(OUTPUT)/cli -Iuser/cli/bpf
FUZZ_ALL := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?= 60
FUZZ_SHORT_SECONDS ?= 1
FUZZ_OBJS := $(patsubst user/%.c,$(FUZZ_DIR)/user/%.o,$(USER_SRCS)) \
	$(patsubst user/cli/%.c,$(FUZZ_DIR)/cli/%.o,$(CLI_SRCS))
FUZZ_LIB := $(FUZZ_DIR)/libaa_fuzz.a

$(FUZZ_DIR)/user $(FUZZ_DIR)/cli:
	$(Q)mkdir -p $@

$(FUZZ_DIR)/user/%.o: user/%.c $(wildcard include/*.h) user/internal.h $(OUTPUT)/arena_alloc.skel.h | $(FUZZ_DIR)/user $(DEPS_STAMP)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/cli/%.o: user/cli/%.c user/cli/cli.h $(wildcard include/*.h) | $(FUZZ_DIR)/cli $(DEPS_STAMP)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Dmain=aa_cli_main -c $< -o $@

$(FUZZ_DIR)/cli/demo.o: $(OUTPUT)/cli/demo.skel.h user/cli/bpf/demo.h

$(FUZZ_LIB): $(FUZZ_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_DIR)/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_LIB)
	$(call msg,FUZZ-LD,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< $(FUZZ_LIB) $(LIBBPF_LIBS) -lelf -lz -ljansson -o $@

.PHONY: fuzz fuzz-short fuzz-build
fuzz-build: $(addprefix $(FUZZ_DIR)/,$(FUZZ_TARGETS))

fuzz: fuzz-build
	$(call msg,FUZZ,$(words $(FUZZ_TARGETS)) targets,x $(FUZZ_SECONDS) s)
	$(Q)bash scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_DIR) $(FUZZ_TARGETS)

fuzz-short: fuzz-build
	$(call msg,FUZZ,$(words $(FUZZ_TARGETS)) targets,x $(FUZZ_SHORT_SECONDS) s)
	$(Q)bash scripts/fuzz.sh $(FUZZ_SHORT_SECONDS) $(FUZZ_DIR) $(FUZZ_TARGETS)

# --- install ---------------------------------------------------------------
# Headers in $(INCLUDEDIR)/arena-alloc (C and BPF alike), the embeddable BPF
# object in $(LIBDIR)/bpf, the .a and the versioned .so with its soname and
# development links, arena-alloc.pc, the CLI and its man page (from its
# help text). INSTALLED lists every file: uninstall removes exactly those,
# then the two directories of ours if they are empty.
PC := $(OUTPUT)/arena-alloc.pc
MAN := $(OUTPUT)/arena-alloc.1
HDR_DIR := $(INCLUDEDIR)/arena-alloc
BPF_DIR := $(LIBDIR)/bpf
PUBLIC_HDRS := arena_alloc.h arena_alloc.bpf.h aa_shared.h aa_syscall.h aa_size_classes.h
INSTALLED := $(addprefix $(HDR_DIR)/,$(PUBLIC_HDRS)) $(BPF_DIR)/libarena_alloc.bpf.o \
	$(LIBDIR)/libarena_alloc.a $(LIBDIR)/libarena_alloc.so.$(VERSION) \
	$(LIBDIR)/$(SONAME) $(LIBDIR)/libarena_alloc.so $(LIBDIR)/pkgconfig/arena-alloc.pc \
	$(BINDIR)/arena-alloc $(MANDIR)/man1/arena-alloc.1

# Regenerated when the install paths change: $(OUTPUT)/.install-paths
# holds the last ones (rewritten at parse time only when they differ).
INSTALL_PATHS := $(PREFIX) $(LIBDIR) $(INCLUDEDIR)
$(shell mkdir -p $(OUTPUT); [ "$$(cat $(OUTPUT)/.install-paths 2>/dev/null)" = '$(INSTALL_PATHS)' ] \
	|| echo '$(INSTALL_PATHS)' > $(OUTPUT)/.install-paths)
$(PC): $(OUTPUT)/.install-paths Makefile
	$(call msg,GEN,$@)
	$(Q)printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' \
		'bpfincludedir=$${includedir}/arena-alloc' \
		'bpfobject=$${libdir}/bpf/libarena_alloc.bpf.o' '' \
		'Name: arena-alloc' \
		'Description: memory allocator in a BPF arena (BPF object + loader library)' \
		'Version: $(VERSION)' 'Requires: libbpf >= 1.4' \
		'Cflags: -I$${includedir}/arena-alloc' \
		'Libs: -L$${libdir} -larena_alloc' 'Libs.private: -lelf -lz' > $@

$(MAN): $(CLI)
	$(call msg,GEN,$@)
	$(Q){ echo '.TH ARENA-ALLOC 1 "" "arena-alloc $(VERSION)" "User Commands"'; \
	      echo '.SH NAME'; echo 'arena-alloc \- load and inspect an arena-alloc heap'; \
	      echo '.SH DESCRIPTION'; echo '.nf'; $(CLI) help | sed 's/\\/\\\\/g; s/^\./\\\&./'; \
	      echo '.fi'; echo '.SH SEE ALSO'; echo 'docs/EMBEDDING.md in the source tree'; } > $@

install: lib $(CLI) $(PC) $(MAN)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(HDR_DIR) $(DESTDIR)$(BPF_DIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	$(Q)install -m 644 $(addprefix include/,$(PUBLIC_HDRS)) $(DESTDIR)$(HDR_DIR)
	$(Q)install -m 644 $(LIB_BPF) $(DESTDIR)$(BPF_DIR)
	$(Q)install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)
	$(Q)install -m 755 $(LIB_SO_REAL) $(DESTDIR)$(LIBDIR)
	$(Q)ln -sf libarena_alloc.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libarena_alloc.so
	$(Q)install -m 644 $(PC) $(DESTDIR)$(LIBDIR)/pkgconfig
	$(Q)install -m 755 $(CLI) $(DESTDIR)$(BINDIR)
	$(Q)install -m 644 $(MAN) $(DESTDIR)$(MANDIR)/man1

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)rmdir $(DESTDIR)$(HDR_DIR) $(DESTDIR)$(BPF_DIR) 2>/dev/null || true

# --- examples: install -> build the examples -> run them -> uninstall -------
# The examples (examples/*/) are projects of their own that find the library
# through pkg-config only: here, the one `make install` staged in
# $(EX_STAGE) (DESTDIR, PREFIX=/usr). `make examples` does the round trip
# on this machine; .ci/run also runs $(EX_OUT)/run.sh in the 6.12 guest
# between examples-build and examples-uninstall. The last step runs the
# installed CLI against flowtab while it runs (examples/inspect.sh).
EXAMPLES := flowtab tracelist
EX_STAGE := $(abspath $(OUTPUT))/stage
EX_OUT := $(abspath $(OUTPUT))/examples
EX_LIBDIR := /usr/lib$(if $(MULTIARCH),/$(MULTIARCH))
EX_ENV := PKG_CONFIG_SYSROOT_DIR=$(EX_STAGE) PKG_CONFIG_PATH=$(EX_STAGE)$(EX_LIBDIR)/pkgconfig

examples-build: lib $(CLI)
	$(Q)rm -rf $(EX_STAGE) $(EX_OUT)
	$(Q)$(MAKE) install DESTDIR=$(EX_STAGE) PREFIX=/usr
	$(Q)for e in $(EXAMPLES); do \
		$(EX_ENV) $(MAKE) -s -C examples/$$e OUT=$(EX_OUT)/$$e || exit 1; done
	$(Q){ echo 'set -e'; echo 'export LD_LIBRARY_PATH=$(EX_STAGE)$(EX_LIBDIR)'; \
	      for e in $(EXAMPLES); do echo "echo '== $$e'; $(EX_OUT)/$$e/$$e"; done; \
	      echo "echo '== arena-alloc --pid (flowtab --hold)'"; \
	      echo "sh $(abspath examples/inspect.sh) $(EX_OUT) $(EX_STAGE)/usr/bin/arena-alloc"; \
	      echo 'echo "examples: all passed"'; } > $(EX_OUT)/run.sh

examples-uninstall:
	$(Q)$(MAKE) uninstall DESTDIR=$(EX_STAGE) PREFIX=/usr
	$(Q)left=$$(find $(EX_STAGE) -type f -o -type l); [ -z "$$left" ] || \
		{ echo "examples: uninstall left $$left" >&2; exit 1; }
	$(Q)echo "examples: uninstall removed everything install put in $(EX_STAGE)"

# (one vCPU in a guest: tracelist enables the sched_switch tracepoint,
# whose text patching once oopsed a 2-vCPU TCG guest; see .ci/run)
examples: examples-build
	$(Q)$(RUN_BPF) -c 1 --name 'the examples' -- sh $(EX_OUT)/run.sh
	$(Q)$(MAKE) examples-uninstall

run: $(CLI)
	$(Q)$(RUN_BPF) --name 'the demo' -- $(CLI) demo

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf $(OUTPUT)

# --- vmtest: the same test binary inside a QEMU guest kernel ----------------
# `make vmtest` builds $(TEST_BIN) on the host, installs QEMU & co.
# (install-deps.sh --vmtest, idempotent) and runs `$(TEST_BIN) $(TEST_ARGS)`
# in a guest booting Debian's $(VMTEST_KERNEL) kernel (fetched and cached by
# scripts/get-kernel.sh), the host's / read-only over 9p, this tree read-write
# at the same path, /tmp a tmpfs (Criterion's sockets live there). KVM when
# usable, TCG otherwise (minutes). Exits with the guest command's status.
#   make vmtest VMTEST_KERNEL=6.1   (or vmtest-6.1): bookworm's kernel, no BPF
#     arena: every test is skipped ("BPF arena needs Linux >= 6.9"), which
#     vmtest-6.1 allows explicitly (AA_TESTS_ALLOW_SKIP=1); exit 0
#   make vmtest VMTEST_CMD='build/arena-alloc demo'   any other command
#   make vmtest VMTEST_CPUS=4 VMTEST_APPEND='preempt=full'   guest vCPUs
#     (1..64, default 2) and extra kernel command-line arguments
#   make vmtest-preempt   the suite in the $(VMTEST_KERNEL) guest booted with
#     preempt=full (VMTEST_APPEND's default for this target), once per CPU
#     count in VMTEST_PREEMPT_CPUS (2 4), stopping at the first failure. Before
#     the command each guest prints `nproc` and the preemption model it runs
#     (/sys/kernel/debug/sched/preempt, or /proc/cmdline where that is
#     missing) and fails unless the model is full on the CPU count asked for:
#     `make vmtest-preempt VMTEST_APPEND=` must fail.
VMTEST_KERNEL ?= 6.12
VMTEST_CPUS ?= 2
VMTEST_MEM ?= 2G
VMTEST_APPEND ?=
VMTEST_TIMEOUT ?= 2400
VMTEST_CMD ?= $(TEST_BIN) $(TEST_ARGS)
VMTEST_PREEMPT_CPUS ?= 2 4
VMTEST_SH = bash scripts/vmtest.sh -k '$(VMTEST_KERNEL)' -m '$(VMTEST_MEM)' -t '$(VMTEST_TIMEOUT)'
# The guest-side check, written to $(VMTEST_PREEMPT_SH): `sh $(VMTEST_PREEMPT_SH) N`
# passes when N CPUs are online and the kernel's preemption model is full.
VMTEST_PREEMPT_SH := $(OUTPUT)/vmtest/preempt-check.sh
define VMTEST_PREEMPT_CHECK
# generated by `make vmtest-preempt` (Makefile), run inside the guest
f=/sys/kernel/debug/sched/preempt
n=$$(nproc)
echo "vmtest-preempt: nproc $$n"
[ "$$n" = "$$1" ] || { echo "vmtest-preempt: FAILED: $$n CPUs online, not $$1"; exit 1; }
if [ -r $$f ]; then
	m=$$(cat $$f)
	echo "vmtest-preempt: preempt model: $$m ($$f)"
	case "$$m" in *"(full)"*) exit 0 ;; esac
	echo "vmtest-preempt: FAILED: the preemption model is not full (boot with preempt=full)"
	exit 1
fi
echo "vmtest-preempt: no $$f, checking /proc/cmdline instead"
case " $$(cat /proc/cmdline) " in *" preempt=full "*)
	echo "vmtest-preempt: preempt model: (full) (preempt=full on /proc/cmdline)"
	exit 0 ;;
esac
echo "vmtest-preempt: FAILED: no preempt=full on /proc/cmdline: $$(cat /proc/cmdline)"
exit 1
endef

.PHONY: vmtest vmtest-6.1 vmtest-6.12 vmtest-preempt
vmtest: export VMTEST_CMD := $(VMTEST_CMD)
vmtest: $(TEST_BIN)
	$(Q)bash scripts/install-deps.sh --vmtest
	$(call msg,VMTEST,$(VMTEST_KERNEL))
	$(Q)$(VMTEST_SH) -c '$(VMTEST_CPUS)' -a '$(VMTEST_APPEND)' -- "$$VMTEST_CMD"

vmtest-6.1:
	$(Q)$(MAKE) vmtest VMTEST_KERNEL=6.1 VMTEST_CMD='env AA_TESTS_ALLOW_SKIP=1 $(TEST_BIN) $(TEST_ARGS)'

vmtest-6.12:
	$(Q)$(MAKE) vmtest VMTEST_KERNEL=6.12

vmtest-preempt: VMTEST_APPEND = preempt=full
vmtest-preempt: export VMTEST_CMD := $(VMTEST_CMD)
vmtest-preempt: export VMTEST_PREEMPT_CHECK := $(VMTEST_PREEMPT_CHECK)
vmtest-preempt: $(TEST_BIN)
	$(Q)bash scripts/install-deps.sh --vmtest
	$(Q)mkdir -p $(dir $(VMTEST_PREEMPT_SH)) && printf '%s\n' "$$VMTEST_PREEMPT_CHECK" >$(VMTEST_PREEMPT_SH)
	$(call msg,VMTEST,$(VMTEST_KERNEL) $(VMTEST_APPEND),(CPUs: $(VMTEST_PREEMPT_CPUS)))
	$(Q)for n in $(VMTEST_PREEMPT_CPUS); do \
		$(VMTEST_SH) -c "$$n" -a '$(VMTEST_APPEND)' \
			-- "sh $(VMTEST_PREEMPT_SH) $$n && $$VMTEST_CMD" || exit; \
	done

# --- stress: issue 14's long stress (tests/test_stress.c) ------------------
# `make stress` runs the stress test of build/aa_tests (pinned threads on
# every CPU, a hard-IRQ program and a control thread: drain, trim, grow,
# refill, reclaim, check; tests/test_stress.c) for STRESS_OPS allocator
# operations (allocations + frees of the task threads; 10^9 by default:
# 5 to 18 minutes on this shared 2-CPU machine), printing progress every
# STRESS_PROGRESS seconds and the totals; exit 1 on any violation (or when
# the test did not run). `make test` runs the same test with 10^7
# operations. On a host that refuses arena maps it runs in the guest
# (RUN_BPF, with the VM timeout of stress-vm).
# `make stress-vm` runs it in the 6.12 guest booted with preempt=full on
# STRESS_VM_CPUS vCPUs (through vmtest-preempt, which checks the model)
# for STRESS_VM_OPS operations (10^9 by default: 11 minutes there under
# TCG on a quiet machine, 0.4-1.6 M operations/s depending on the load).
STRESS_OPS ?= 1000000000
STRESS_PROGRESS ?= 30
STRESS_VM_OPS ?= 1000000000
STRESS_VM_CPUS ?= 2
STRESS_VM_TIMEOUT ?= 10800
stress_cmd = env AA_STRESS_ALL_OPS=$(1) AA_STRESS_PROGRESS=$(STRESS_PROGRESS) \
	$(TEST_BIN) --filter 'stress/*'

.PHONY: stress stress-vm
stress: $(TEST_BIN)
	$(call msg,STRESS,$(STRESS_OPS) operations)
	$(Q)$(RUN_BPF) -t '$(STRESS_VM_TIMEOUT)' --name 'the stress' -- $(call stress_cmd,$(STRESS_OPS))

stress-vm: $(TEST_BIN)
	$(Q)$(MAKE) vmtest-preempt VMTEST_PREEMPT_CPUS='$(STRESS_VM_CPUS)' \
		VMTEST_TIMEOUT='$(STRESS_VM_TIMEOUT)' VMTEST_CMD="$(call stress_cmd,$(STRESS_VM_OPS))"

# --- bench: build/aa_bench (bench/), issues 5, 9 and 10 ---------------------
# `make bench` builds and runs every table (about 7 minutes on two CPUs):
# the memory of size mixes (bench-mem), the latency and htab tables with
# the targets, and the fast path at 48 and 96 B (bench-sizes), each next to
# the release before size classes where it applies; it keeps the raw
# numbers in $(BENCH_JSON); `make bench-plot` turns them into
# docs/bench-latency.svg with gnuplot (installed if missing).
#   make bench BENCH_ARGS='--size 256'     any aa_bench option
BENCH_BIN := $(OUTPUT)/aa_bench
BENCH_JSON ?= $(OUTPUT)/bench/results.json
BENCH_ARGS ?=
BENCH_SVG ?= docs/bench-latency.svg

$(OUTPUT)/bench:
	$(Q)mkdir -p $@

$(OUTPUT)/bench/%.bpf.o: bench/bpf/%.bpf.c bench/bench.h $(BPF_HDRS) $(OUTPUT)/vmlinux.h | $(OUTPUT)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(INCLUDES) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUTPUT)/bench/%.linked.o: $(OUTPUT)/bench/%.bpf.o $(LIB_BPF)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUTPUT)/bench/%.skel.h: $(OUTPUT)/bench/%.linked.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

# The harness, split by role (bench/main.c lists the files).
BENCH_SRCS := $(filter-out bench/jit_dump.c bench/memory.c,$(wildcard bench/*.c))
BENCH_OBJS := $(patsubst bench/%.c,$(OUTPUT)/bench/%.o,$(BENCH_SRCS))

$(BENCH_OBJS): $(OUTPUT)/bench/%.o: bench/%.c bench/harness.h bench/bench.h bench/where.h $(wildcard include/*.h) $(OUTPUT)/bench/bench.skel.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(OUTPUT)/bench -c $< -o $@

$(BENCH_BIN): $(BENCH_OBJS) $(LIB_A)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBBPF_LIBS) -lelf -lz -lm -lpthread -o $@

# Disassembles the JIT-ed fast path (Debian's bpftool has no disassembler):
# loads the bench object into a scratch bpffs directory, dumps the named
# functions with their x86 instruction counts, removes the pins.
BENCH_JIT_FUNCS ?= bench_inline_alloc bench_inline_free aa_malloc_u64 aa_cpu_cache_alloc aa_free_u64 aa_cpu_cache_free bench_floor_
$(OUTPUT)/bench/jit_dump: bench/jit_dump.c | $(OUTPUT)/bench $(DEPS_STAMP)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $< $(LIBBPF_LIBS) -lelf -lz -o $@

# Memory of size mixes (bench/memory.c), and the "before" columns: the
# release before size classes (BENCH_BASE_REV) is taken from git into
# $(BENCH_BASE) and built there (its library, its aa_bench, and memory.c
# against its library); make bench runs it first and hands its numbers to
# this tree's benchmarks. Without git history the tables simply have no
# "before" columns.
BENCH_MEM := $(OUTPUT)/aa_bench_mem
BENCH_BASE_REV ?= a3bc7a6
BENCH_BASE := $(OUTPUT)/baseline
BENCH_MEM_ARGS ?=

$(BENCH_MEM): bench/memory.c bench/where.h $(LIB_A) $(wildcard include/*.h)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $< $(LIB_A) $(LIBBPF_LIBS) -lelf -lz -o $@

$(BENCH_BASE)/.built-$(BENCH_BASE_REV): bench/memory.c bench/where.h | $(DEPS_STAMP)
	$(call msg,BASELINE,$(BENCH_BASE_REV) in $(BENCH_BASE))
	$(Q)rm -rf $(BENCH_BASE)/src && mkdir -p $(BENCH_BASE)/src && \
	git archive $(BENCH_BASE_REV) | tar -x -C $(BENCH_BASE)/src && \
	$(MAKE) -s -C $(BENCH_BASE)/src OUTPUT=$(abspath $(BENCH_BASE))/build \
		$(abspath $(BENCH_BASE))/build/libarena_alloc.a $(abspath $(BENCH_BASE))/build/aa_bench && \
	$(CC) $(CFLAGS) -I$(BENCH_BASE)/src/include -I$(BENCH_BASE)/build $< \
		$(BENCH_BASE)/build/libarena_alloc.a $(LIBBPF_LIBS) -lelf -lz -o $(BENCH_BASE)/aa_bench_mem && \
	touch $@

# Each bench target builds here, then runs its *-run twin through RUN_BPF
# (in the guest where this host refuses arena maps: aa_bench prints where
# its tables were measured; under TCG only ratios between BPF code paths
# carry over, docs/BENCHMARKS.md). The *-run targets build nothing.
BENCH_TIMEOUT ?= 7200
BENCH_RUN = $(RUN_BPF) -t '$(BENCH_TIMEOUT)' --name 'the benchmarks' -- $(MAKE) -s
.PHONY: bench bench-mem bench-sizes bench-baseline bench-plot bench-jit \
	bench-run bench-mem-run bench-sizes-run bench-jit-run
bench-baseline:
	$(Q)$(MAKE) -s $(BENCH_BASE)/.built-$(BENCH_BASE_REV) || \
		echo "bench: no baseline: $(BENCH_BASE_REV) could not be built (no git history?)"

bench: $(BENCH_BIN) $(BENCH_MEM) bench-baseline | $(CLI)
	$(Q)$(BENCH_RUN) bench-run

bench-run: bench-mem-run
	$(Q)rm -f $(BENCH_BASE)/htab.json; if [ -f $(BENCH_BASE)/.built-$(BENCH_BASE_REV) ]; then \
		echo "  BENCH    baseline $(BENCH_BASE_REV): htab (its tables go to $(BENCH_BASE)/bench.txt)"; \
		$(BENCH_BASE)/build/aa_bench --only htab --json-out $(BENCH_BASE)/htab.json \
			$(BENCH_ARGS) > $(BENCH_BASE)/bench.txt 2>&1 || { rm -f $(BENCH_BASE)/htab.json; \
		echo "  BENCH    baseline $(BENCH_BASE_REV) did not run on $$(uname -r) (the end of" \
			"$(BENCH_BASE)/bench.txt says why): no 'before' column in table 4"; }; fi
	$(call msg,BENCH,$(BENCH_BIN) $(BENCH_ARGS))
	$(Q)$(BENCH_BIN) --json-out $(BENCH_JSON) --htab-before $(BENCH_BASE)/htab.json $(BENCH_ARGS)
	$(Q)$(MAKE) -s bench-sizes-run

# The fast path at sizes that power-of-two rounding served from bigger
# blocks: each size with this tree and with the baseline, back to back;
# prints table 3 (malloc-free: floor and arena-alloc, ns per op) of each
# (this tree's without the debug-mode columns, which table 3 does not show).
BENCH_SIZES ?= 48 64 96
bench-sizes: $(BENCH_BIN) bench-baseline | $(CLI)
	$(Q)$(BENCH_RUN) bench-sizes-run

bench-sizes-run:
	$(Q)for s in $(BENCH_SIZES); do \
		for v in baseline this; do \
			if [ $$v = baseline ]; then b=$(BENCH_BASE)/build/aa_bench; x=; \
			else b=$(BENCH_BIN); x=--no-debug; fi; \
			[ -x $$b ] || continue; \
			echo; echo "== $$s B, $$v ($$b) =="; \
			if out=$$($$b --only latency $(BENCH_ARGS) $$x --size $$s --cell-ms 300 2>&1); then \
				echo "$$out" | awk '/^3\. The floor/{f=1} /^malloc-xfree/{f=0} f'; \
			elif [ $$v = baseline ]; then \
				echo "(the baseline did not run on $$(uname -r): $$(echo "$$out" | tail -n1))"; \
			else echo "$$out" | tail -n20; exit 1; fi; \
		done; \
	done

bench-mem: $(BENCH_MEM) bench-baseline | $(CLI)
	$(Q)$(BENCH_RUN) bench-mem-run

bench-mem-run:
	$(Q)rm -f $(BENCH_BASE)/mem.txt; \
	if [ -f $(BENCH_BASE)/.built-$(BENCH_BASE_REV) ]; then \
		$(BENCH_BASE)/aa_bench_mem --out $(BENCH_BASE)/mem.txt $(BENCH_MEM_ARGS); fi; \
	$(BENCH_MEM) --before $(BENCH_BASE)/mem.txt $(BENCH_MEM_ARGS)

bench-plot:
	$(Q)bash bench/plot.sh $(BENCH_JSON) $(BENCH_SVG)

bench-jit: $(OUTPUT)/bench/jit_dump $(OUTPUT)/bench/bench.linked.o | $(CLI)
	$(Q)$(BENCH_RUN) bench-jit-run

bench-jit-run:
	$(Q)d=$$(mktemp -d /sys/fs/bpf/aa_bench_jit_XXXXXX) && \
	$(BPFTOOL) prog loadall $(OUTPUT)/bench/bench.linked.o $$d >/dev/null && \
	$(OUTPUT)/bench/jit_dump $$d/bench_jit $(BENCH_JIT_FUNCS) && \
	$(OUTPUT)/bench/jit_dump $$d/bench_lat $(BENCH_JIT_FUNCS); rc=$$?; rm -rf $$d; exit $$rc

.DELETE_ON_ERROR:
.SECONDARY:
