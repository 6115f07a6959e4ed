# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- header-check: the public headers compile on their own -------------------
# In C and C++: arena_alloc.h alone and after libbpf's, without the layout
# (tests/headers/api_only.h: neither aa_shared.h nor aa_syscall.h came
# in); arena_alloc_internal.h alone; aa_shared.h with arena_alloc.h (an
# embedder's skeleton). arena_alloc.bpf.h after just vmlinux.h and
# <bpf/bpf_helpers.h>. All with -Wall -Wextra -Werror (tests/headers/).
.PHONY: header-check test
HDR_CHECK_FLAGS := -Wall -Wextra -Werror -Iinclude $(LIBBPF_CFLAGS)
HDR_CHECK_USER := user_alone user_after_libbpf internal_alone user_with_layout
HDR_CHECKS := $(foreach c,$(HDR_CHECK_USER),$(OUTPUT)/headers/$(c).c.o $(OUTPUT)/headers/$(c).cpp.o) \
	$(OUTPUT)/headers/bpf_alone.bpf.o $(OUTPUT)/headers/so_check
header-check: $(HDR_CHECKS)

$(OUTPUT)/headers:
	$(Q)mkdir -p $@

$(OUTPUT)/headers/%.c.o: tests/headers/%.c tests/headers/api_only.h $(wildcard include/*.h) | $(OUTPUT)/headers $(DEPS_STAMP)
	$(call msg,HDR-C,$<)
	$(Q)$(CC) -std=c11 $(HDR_CHECK_FLAGS) -c $< -o $@
$(OUTPUT)/headers/%.cpp.o: tests/headers/%.c tests/headers/api_only.h $(wildcard include/*.h) | $(OUTPUT)/headers $(DEPS_STAMP)
	$(call msg,HDR-C++,$<)
	$(Q)$(CXX) -std=c++17 -x c++ $(HDR_CHECK_FLAGS) -c $< -o $@
$(OUTPUT)/headers/%.bpf.o: tests/headers/%.bpf.c $(BPF_API_HDRS) | $(OUTPUT)/headers
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

# --- layer-check: the BPF library's files call only down ------------------------
# Each file of bpf/ compiles alone with the headers of the files below it
# that it includes; none includes a header of a file above it
# (scripts/layer-check.sh; the order: bpf/arena_alloc.bpf.c).
.PHONY: layer-check
layer-check: $(OUTPUT)/vmlinux.h $(OUTPUT)/.bpf-arch | $(DEPS_STAMP)
	$(call msg,LAYERS,bpf/)
	$(Q)scripts/layer-check.sh "$(CLANG) $(BPF_CFLAGS) $(INCLUDES) $(CLANG_BPF_SYS_INCLUDES)"

# --- stack-check: the library's deepest call chain against the promise -------
# docs/EMBEDDING.md promises a user's frames 512 - AA_STACK_CHAIN_MAX bytes
# on the way to any library call; scripts/stack-check.py reads every public
# function's deepest chain (frames rounded to 16, as the JIT-ed verifier
# counts them) from the library object and fails past it.
.PHONY: stack-check
AA_STACK_CHAIN_MAX := 352
stack-check: $(LIB_BPF) scripts/stack-check.py
	$(call msg,STACK,$(LIB_BPF))
	$(Q)$(LLVM_OBJDUMP) -dr $(LIB_BPF) > $(OUTPUT)/stack-check.dr.txt
	$(Q)$(LLVM_OBJDUMP) -t $(LIB_BPF) > $(OUTPUT)/stack-check.sym.txt
	$(Q)python3 scripts/stack-check.py $(if $(Q),,--table) $(AA_STACK_CHAIN_MAX) \
		$(OUTPUT)/stack-check.dr.txt $(OUTPUT)/stack-check.sym.txt

# --- ordering-check: the userspace hit path's barriers, on arm64 --------------
# The hit path of include/aa_hit.h and user/user_cache.c, cross-compiled for
# aarch64 (weakly ordered) with -DAA_ORDERING_CHECK, which keeps each
# ordering primitive out of line under its own name; scripts/ordering-check.py
# then checks that the release is a store-release, the claims acquire, and
# that the hit path calls them. Three code generations: GCC's default
# (libgcc's outline atomics, -moutline-atomics), inline LL/SC and inline
# LSE. aarch64-linux-gnu-gcc: scripts/install-deps.sh.
# The BPF half: tests/ordering/hit_path.bpf.c built for a weakly ordered
# target (arm64) and for x86 (TSO), read as BPF instructions by
# scripts/ordering-check-bpf.py: the release an atomic exchange on arm64 and
# a plain store on x86, the claim a cmpxchg on both.
.PHONY: ordering-check
ORDER_CC ?= aarch64-linux-gnu-gcc
ORDER_DIR := $(OUTPUT)/ordering
ORDER_VARIANTS := outline llsc lse
ORDER_FLAGS_outline :=
ORDER_FLAGS_llsc := -mno-outline-atomics
ORDER_FLAGS_lse := -mno-outline-atomics -march=armv8.1-a
ORDER_CFLAGS := -O2 -S -DAA_ORDERING_CHECK -Wall -Werror -Wno-unused-function -Iinclude -Iuser
ORDER_HDRS := include/aa_hit.h include/aa_shared.h include/aa_types.h include/aa_size_classes.h \
	include/arena_alloc.h include/arena_alloc_internal.h include/aa_syscall.h user/internal.h
ORDER_CALLS_hit_path := --calls aa_oc_hit_alloc:__aa_cache_claim \
	--calls aa_oc_hit_alloc:__aa_store_release --calls aa_oc_hit_free:__aa_cache_claim \
	--calls aa_oc_hit_free:__aa_store_release --calls aa_oc_cache_release:__aa_store_release \
	--calls aa_oc_claim_object:__aa_cmpxchg64
ORDER_CALLS_user_cache := --calls aa_heap__malloc:__aa_cache_claim \
	--calls aa_heap__malloc:__aa_store_release --calls aa_heap__free:__aa_cache_claim \
	--calls aa_heap__free:__aa_store_release --calls aa_heap__free:__aa_cmpxchg64
ORDER_ASM := $(foreach v,$(ORDER_VARIANTS),$(ORDER_DIR)/$(v)/hit_path.s $(ORDER_DIR)/$(v)/user_cache.s)
LLVM_OBJDUMP ?= llvm-objdump-19
ORDER_BPF_ARCHS := arm64:weak x86:tso
ORDER_BPF := $(foreach a,$(ORDER_BPF_ARCHS),$(ORDER_DIR)/bpf-$(firstword $(subst :, ,$(a))).txt)

ordering-check: $(ORDER_ASM) $(ORDER_BPF) scripts/ordering-check.py scripts/ordering-check-bpf.py
	$(call msg,ORDER,$(ORDER_DIR))
	$(Q)python3 scripts/ordering-check.py $(foreach v,$(ORDER_VARIANTS), \
		$(ORDER_DIR)/$(v)/hit_path.s $(ORDER_CALLS_hit_path) \
		$(ORDER_DIR)/$(v)/user_cache.s $(ORDER_CALLS_user_cache)) $(if $(Q),>/dev/null)
	$(Q)$(foreach a,$(ORDER_BPF_ARCHS),python3 scripts/ordering-check-bpf.py $(lastword $(subst :, ,$(a))) \
		$(ORDER_DIR)/bpf-$(firstword $(subst :, ,$(a))).txt $(if $(Q),>/dev/null) &&) true

$(ORDER_DIR)/bpf-%.txt: tests/ordering/hit_path.bpf.c $(BPF_API_HDRS) | $(DEPS_STAMP)
	$(call msg,BPF-ORD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -fno-builtin -target bpf -mcpu=v3 -D__TARGET_ARCH_$* -Wall -Werror \
		$(INCLUDES) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $(@:.txt=.o)
	$(Q)$(LLVM_OBJDUMP) -d --mcpu=v3 --no-show-raw-insn $(@:.txt=.o) > $@

define order_asm
$(ORDER_DIR)/$(1)/%.s: $(2)/%.c $(ORDER_HDRS) | $(DEPS_STAMP)
	$$(call msg,CC-A64,$$@,$(1))
	$$(Q)mkdir -p $$(@D)
	$$(Q)command -v $$(ORDER_CC) >/dev/null || \
		{ echo "ordering-check: no $$(ORDER_CC): run scripts/install-deps.sh" >&2; exit 1; }
	$$(Q)$$(ORDER_CC) $$(ORDER_CFLAGS) $$(ORDER_FLAGS_$(1)) $$< -o $$@
endef
$(foreach v,$(ORDER_VARIANTS),$(eval $(call order_asm,$(v),tests/ordering)))
$(foreach v,$(ORDER_VARIANTS),$(eval $(call order_asm,$(v),user)))

# --- test: the header checks, the ordering check, the suite, the short fuzz run ------------------
# Criterion runs each test in its own process; -j2 matches this machine.
# Where the host refuses arena maps the suite runs in the guest
# (RUN_BPF), after the tests that need no arena ran here (HOST_TESTS: the
# probe's diagnosis on this very kernel, the size-class table, the
# tunables' parser); the last
# "Synthesis:" line is then the guest's. Then the short fuzz run
# (fuzz-short, mk/fuzz.mk; its lines come after Criterion's) and the ASan
# checks (mk/asan.mk, where BPF runs): any failing fails make test.
TEST_ARGS ?= -j2
HOST_TESTS := @(probe|size_classes|tunables)/*
test: $(TEST_BIN) header-check layer-check stack-check ordering-check fuzz-build asan-build
	$(Q)where=$$($(RUN_BPF) --name 'the test suite' --where) && \
	if [ "$$where" = guest ]; then \
		printf '  %-8s %s\n' TEST "$(TEST_BIN) --filter '$(HOST_TESTS)' (host)"; \
		$(TEST_BIN) $(TEST_ARGS) --filter '$(HOST_TESTS)' || exit; \
	fi && \
	printf '  %-8s %s\n' TEST "$(TEST_BIN) ($$where)" && \
	AA_TEST_WHERE=$$where AA_TEST_WHERE_SAID=1 $(RUN_BPF) --name 'the test suite' -- \
		$(TEST_BIN) $(TEST_ARGS)
	$(call fuzz_run,$(FUZZ_SHORT_SECONDS))
	$(asan_run)
