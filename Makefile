# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# arena-alloc: bpf -> linked object -> skeleton -> lib -> CLI -> tests.
# The rest is in mk/: test, asan, install, examples, fuzz, vmtest, stress, bench.
CLANG ?= clang-19
LLVM_STRIP ?= llvm-strip-19
BPFTOOL ?= bpftool
# BPF objects are per architecture (-D__TARGET_ARCH_$(ARCH) picks the memory
# ordering code of arena_alloc.bpf.h): the build host's unless given, as in
# `make ARCH=arm64` (uname -m names work too).
kernel_arch = $(shell echo '$(1)' | sed 's/x86_64/x86/' | sed 's/aarch64/arm64/' \
	| sed 's/ppc64le/powerpc/' | sed 's/mips.*/mips/' | sed 's/riscv64/riscv/')
HOST_ARCH := $(call kernel_arch,$(shell uname -m))
ARCH ?= $(HOST_ARCH)
override ARCH := $(call kernel_arch,$(ARCH))
ifeq ($(ARCH),$(HOST_ARCH))
OUTPUT := build
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
else
# A cross build (arm64 from x86, the one made here): everything in a build
# directory of its own, the cross compiler, the target's libraries from
# Debian multiarch (scripts/install-deps.sh --arm64), and vmlinux.h from
# the BTF of a Debian kernel of the target (scripts/get-kernel.sh,
# scripts/kernel-btf.sh).
OUTPUT := build/$(ARCH)
CROSS_COMPILE_arm64 := aarch64-linux-gnu-
CROSS_COMPILE ?= $(CROSS_COMPILE_$(ARCH))
TRIPLET := $(patsubst %-,%,$(CROSS_COMPILE))
export PKG_CONFIG_LIBDIR := /usr/lib/$(TRIPLET)/pkgconfig:/usr/share/pkgconfig
# The kernel's UAPI headers of linux-libc-dev (6.12, with the BPF arena):
# the cross compiler would find its own older copy first.
CROSS_CFLAGS := -isystem $(OUTPUT)/uapi
$(shell mkdir -p $(OUTPUT)/uapi && ln -sfn /usr/include/linux $(OUTPUT)/uapi/linux && \
	ln -sfn /usr/include/asm-generic $(OUTPUT)/uapi/asm-generic && \
	ln -sfn /usr/include/$(TRIPLET)/asm $(OUTPUT)/uapi/asm)
# Criterion and its libnanomsg, which bookworm cannot install for both
# architectures: unpacked by install-deps.sh --arm64, found through rpath
# (DT_RPATH, which serves libcriterion's own libnanomsg too; the guest sees
# the host's root).
CROSS_ROOT ?= $(HOME)/.cache/arena-alloc/$(ARCH)-root
CROSS_LDLIBS := -L$(CROSS_ROOT)/usr/lib/$(TRIPLET) -Wl,--disable-new-dtags \
	-Wl,-rpath,$(CROSS_ROOT)/usr/lib/$(TRIPLET)
DEPS_ARGS := --$(ARCH)
VMLINUX_BTF ?= $(OUTPUT)/vmlinux.btf
VMLINUX_KERNEL ?= 6.12
endif

# The allocator's page is the kernel's, a compile-time constant (the hit
# path's class lookups and object-start test fold it): PAGE_KB=16 builds
# for 16-KiB-page kernels (Debian's arm64-16k) in a build directory of its
# own; the loader refuses a kernel whose page differs (docs/DESIGN.md).
PAGE_KB ?= 4
PAGE_SHIFT_4 := 12
PAGE_SHIFT_16 := 14
PAGE_SHIFT := $(PAGE_SHIFT_$(PAGE_KB))
ifeq ($(PAGE_SHIFT),)
$(error PAGE_KB=$(PAGE_KB): give 4 or 16)
endif
ifneq ($(PAGE_KB),4)
OUTPUT := $(OUTPUT)-$(PAGE_KB)k
endif
PAGE_CFLAGS := -DAA_PAGE_SHIFT=$(PAGE_SHIFT)

LIBBPF_CFLAGS := $(shell pkg-config --cflags libbpf 2>/dev/null)
LIBBPF_LIBS := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf)
INCLUDES := -I$(OUTPUT) -Iinclude -Ibpf
CFLAGS ?= -g -O2
CFLAGS += -Wall -Werror -Wno-unused-function -fPIC $(CROSS_CFLAGS) $(LIBBPF_CFLAGS) $(PAGE_CFLAGS)
BPF_CFLAGS := -g -O2 -fno-builtin -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-Wno-unused-function $(PAGE_CFLAGS)

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
# Debian's cross toolchains have no $(CROSS_COMPILE)cc: gcc by name.
$(call allow-override,CC,$(if $(CROSS_COMPILE),$(CROSS_COMPILE)gcc,cc))
$(call allow-override,LD,$(CROSS_COMPILE)ld)
$(call allow-override,AR,$(CROSS_COMPILE)ar)

# The objects of LIB_BPF_SRCS are linked into $(LIB_BPF), which embedders
# link with. bpf/arena_alloc.bpf.c includes every tier file (one translation
# unit, its head says why): the library's objects depend on bpf/ as well as
# on what programs linked with the library include (BPF_API_HDRS).
LIB_BPF_SRCS := bpf/arena_alloc.bpf.c
LIB_BPF := $(OUTPUT)/libarena_alloc.bpf.o
BPF_API_HDRS := $(wildcard include/*.h) $(OUTPUT)/vmlinux.h $(OUTPUT)/.bpf-arch
LIB_BPF_HDRS := $(BPF_API_HDRS) $(wildcard bpf/*.h bpf/*.bpf.c)
# Every BPF object is rebuilt when ARCH changes: $(OUTPUT)/.bpf-arch holds
# the last one (rewritten at parse time only when it differs).
$(shell mkdir -p $(OUTPUT); [ "$$(cat $(OUTPUT)/.bpf-arch 2>/dev/null)" = '$(ARCH)' ] \
	|| echo '$(ARCH)' > $(OUTPUT)/.bpf-arch)

USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(wildcard user/*.c))
LIB_A := $(OUTPUT)/libarena_alloc.a
# The shared library: the real file, its soname link, the development link.
# Before 1.0 a minor release may change the ABI (the public structs, the
# shared layout: AA_LAYOUT_VERSION), so the soname names major.minor;
# user/libarena_alloc.map has a node per release.
VERSION := 0.3.0
SONAME := libarena_alloc.so.$(basename $(VERSION))
LIB_SO_REAL := $(OUTPUT)/libarena_alloc.so.$(VERSION)
LIB_SO := $(OUTPUT)/libarena_alloc.so
# The CLI: user/cli/, one file per command group, the table in main.c.
CLI := $(OUTPUT)/arena-alloc
CLI_SRCS := $(wildcard user/cli/*.c)
CLI_OBJS := $(patsubst user/cli/%.c,$(OUTPUT)/cli/%.o,$(CLI_SRCS))
# Tests: one BPF program per tests/bpf/<name>.bpf.c (and tests/<name>.h
# where it exists), loaded by the Criterion tests of tests/*.c.
TEST_PROGS := $(patsubst tests/bpf/%.bpf.c,%,$(wildcard tests/bpf/*.bpf.c))
TEST_SKELS := $(TEST_PROGS:%=$(OUTPUT)/tests/%.skel.h)
TEST_OBJS := $(patsubst tests/%.c,$(OUTPUT)/tests/%.o,$(wildcard tests/*.c))
TEST_BIN := $(OUTPUT)/aa_tests
DEPS_STAMP := $(OUTPUT)/.deps-ok

.PHONY: all deps lib cli run clean
all: lib cli $(TEST_BIN)
lib: $(LIB_BPF) $(LIB_A) $(LIB_SO)
cli: $(CLI)

# Install missing tools (scripts/install-deps.sh is idempotent and quick
# when everything is there); re-checked when the script changes.
deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps.sh
	$(call msg,DEPS,install-deps.sh)
	$(Q)mkdir -p $(OUTPUT)
	$(Q)bash scripts/install-deps.sh $(DEPS_ARGS)
	$(Q)touch $@

$(OUTPUT) $(addprefix $(OUTPUT)/,bpf user cli tests):
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(DEPS_STAMP) $(OUTPUT) $(filter $(OUTPUT)/%,$(VMLINUX_BTF))
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

# A cross build's kernel BTF: a Debian $(VMLINUX_KERNEL) kernel of the target's,
# its BTF cut out of the image (scripts/kernel-btf.sh).
$(OUTPUT)/vmlinux.btf: | $(DEPS_STAMP) $(OUTPUT)
	$(call msg,BTF,$@,(Debian $(VMLINUX_KERNEL) $(ARCH)))
	$(Q)btf=$$(bash scripts/kernel-btf.sh --arch $(ARCH) $(VMLINUX_KERNEL)) && cp "$$btf" $@

# --- BPF: compile -> link -> skeleton ----------------------------------------
# $(call bpf_prog,OUT,SRC,HDRS[,NAME[,LINK]]): the rules of one BPF program
# linked with the library, as an embedder builds theirs (docs/EMBEDDING.md):
#   SRC   -> clang, llvm-strip -g (keeps BTF)     -> OUT.bpf.o
#         -> bpftool gen object, with $(LIB_BPF)  -> OUT.linked.o
#         -> bpftool gen skeleton name NAME       -> OUT.skel.h
# HDRS: what SRC includes beyond BPF_API_HDRS. NAME: OUT's file name if
# empty. LINK: the objects linked, in order (OUT.bpf.o $(LIB_BPF) if empty).
define bpf_cc
$(call msg,BPF,$@)
$(Q)$(CLANG) $(BPF_CFLAGS) $(INCLUDES) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@
$(Q)$(LLVM_STRIP) -g $@
endef
define bpf_link
$(call msg,LINK,$@)
$(Q)$(BPFTOOL) gen object $@ $^
endef
define bpf_prog
$(1).bpf.o: $(2) $(3) $$(BPF_API_HDRS) | $(patsubst %/,%,$(dir $(1)))
	$$(bpf_cc)
$(1).linked.o: $(or $(5),$(1).bpf.o $$(LIB_BPF))
	$$(bpf_link)
$(1).skel.h: $(1).linked.o
	$$(call msg,GEN-SKEL,$$@)
	$$(Q)$$(BPFTOOL) gen skeleton $$< name $(or $(4),$(notdir $(1))) > $$@.tmp
	$$(Q)$$(SKEL_FIXUP) $$@.tmp > $$@ && rm -f $$@.tmp
endef
# bpftool 7.5 writes skeletons for libbpf >= 1.5, whose struct
# bpf_map_skeleton has a `link` (a struct_ops map's); with an older libbpf
# the line that sets it goes ("'struct bpf_map_skeleton' has no member
# named 'link'"), and the loader attaches struct_ops maps itself
# (bpf_map__attach_struct_ops()). Decided when the recipe runs: on a fresh
# machine libbpf-dev arrives with $(DEPS_STAMP), after make read this file.
SKEL_FIXUP = case "$$(pkg-config --modversion libbpf 2>/dev/null)" in \
	0.*|1.[0-4].*) sed '/^[[:space:]]*map->link = /d';; *) cat;; esac <

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(LIB_BPF_HDRS) | $(OUTPUT)/bpf
	$(bpf_cc)
$(LIB_BPF): $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(LIB_BPF_SRCS))
	$(bpf_link)
# The library's own program (aa_heap__open()): the library plus a license
# and the arena map, which the library leaves to its embedder; linked in
# that order, its skeleton lists the library's maps first.
$(eval $(call bpf_prog,$(OUTPUT)/arena_alloc,bpf/own.bpf.c,,,$(LIB_BPF) $(OUTPUT)/arena_alloc.bpf.o))
# The CLI's demo: a tc program, built as an embedder's would be.
$(eval $(call bpf_prog,$(OUTPUT)/cli/demo,user/cli/bpf/demo.bpf.c,user/cli/bpf/demo.h,demo_bpf))
$(foreach t,$(TEST_PROGS),$(eval $(call bpf_prog,$(OUTPUT)/tests/$(t),tests/bpf/$(t).bpf.c,\
	$(wildcard tests/$(t).h))))
# A program written for the kernel selftests' bpf_arena_alloc.h: include/
# compat's, and a stand-in for the selftests' bpf_arena_common.h.
$(OUTPUT)/tests/test_compat.bpf.o: INCLUDES += -Itests/bpf/compat

# --- Userspace: library, CLI, test binary ------------------------------------
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

$(OUTPUT)/cli/%.o: user/cli/%.c user/cli/cli.h $(wildcard include/*.h) | $(OUTPUT)/cli $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(OUTPUT)/cli -Iuser/cli/bpf -c $< -o $@
$(OUTPUT)/cli/demo.o: $(OUTPUT)/cli/demo.skel.h user/cli/bpf/demo.h

$(CLI): $(CLI_OBJS) $(LIB_A)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBBPF_LIBS) -lelf -lz -o $@

$(OUTPUT)/tests/%.o: tests/%.c $(wildcard tests/*.h) $(wildcard include/*.h) $(TEST_SKELS) $(OUTPUT)/arena_alloc.skel.h | $(OUTPUT)/tests $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -I$(OUTPUT)/tests -c $< -o $@

# The CLI is built next to it: tests/test_cli.c runs its demo.
$(TEST_BIN): $(TEST_OBJS) $(LIB_A) | $(CLI)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBBPF_LIBS) -lelf -lz $(CROSS_LDLIBS) -lcriterion -ljansson -o $@

# The demo, where BPF runs (RUN_BPF, mk/vmtest.mk).
run: $(CLI)
	$(Q)$(RUN_BPF) --name 'the demo' -- $(CLI) demo

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf $(OUTPUT)

include mk/test.mk mk/asan.mk mk/install.mk mk/examples.mk mk/fuzz.mk mk/vmtest.mk mk/stress.mk mk/bench.mk mk/compat.mk

.DELETE_ON_ERROR:
.SECONDARY:
