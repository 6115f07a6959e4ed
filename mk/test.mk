# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- header-check: the public headers compile on their own -------------------
# arena_alloc.h in C and C++ and in any order with libbpf's,
# arena_alloc.bpf.h after just vmlinux.h and <bpf/bpf_helpers.h>; all with
# -Wall -Wextra -Werror (tests/headers/).
.PHONY: header-check test
HDR_CHECK_FLAGS := -Wall -Wextra -Werror -Iinclude $(LIBBPF_CFLAGS)
HDR_CHECKS := $(OUTPUT)/headers/user_alone.c.o $(OUTPUT)/headers/user_alone.cpp.o \
	$(OUTPUT)/headers/user_after_libbpf.c.o $(OUTPUT)/headers/bpf_alone.bpf.o \
	$(OUTPUT)/headers/so_check
header-check: $(HDR_CHECKS)

$(OUTPUT)/headers:
	$(Q)mkdir -p $@

$(OUTPUT)/headers/%.c.o: tests/headers/%.c $(wildcard include/*.h) | $(OUTPUT)/headers $(DEPS_STAMP)
	$(call msg,HDR-C,$<)
	$(Q)$(CC) -std=c11 $(HDR_CHECK_FLAGS) -c $< -o $@
$(OUTPUT)/headers/%.cpp.o: tests/headers/%.c $(wildcard include/*.h) | $(OUTPUT)/headers $(DEPS_STAMP)
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

# --- test: the header checks, the suite, the short fuzz run ------------------
# Criterion runs each test in its own process; -j2 matches this machine.
# Where the host refuses arena maps the suite runs in the guest
# (RUN_BPF), after the tests that need no arena ran here (HOST_TESTS: the
# probe's diagnosis on this very kernel, the size-class table); the last
# "Synthesis:" line is then the guest's. Then the short fuzz run
# (fuzz-short, mk/fuzz.mk; its lines come after Criterion's) and the ASan
# checks (mk/asan.mk, where BPF runs): any failing fails make test.
TEST_ARGS ?= -j2
HOST_TESTS := @(probe|size_classes)/*
test: $(TEST_BIN) header-check fuzz-build asan-build
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
