# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --- header-check: the public headers compile on their own -------------------
# arena_alloc.h in C and C++ and in any order with libbpf's,
# arena_alloc.bpf.h after just vmlinux.h and <bpf/bpf_helpers.h>; all with
# -Wall -Wextra -Werror (tests/headers/). make test builds them first.
.PHONY: header-check
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
